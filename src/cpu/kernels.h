/*
 * kernels.h (internal) - per-ISA kernel table for matmul inner loops.
 *
 * Design: a weight row of type T is multiplied with an activation row that was
 * converted ONCE per matmul into T's "vec_dot_type" (Q8_0 for Q4_0/Q5_0/Q8_0/MXFP4,
 * Q8_1 for Q4_1/Q5_1, Q8_K for the K-quants, F16 for F16, BF16 for BF16, F32 for F32).
 * The table is chosen once per process from CPUID/XGETBV (or LOOM_CPU_ISA) and is
 * immutable afterwards, so it may be used from any thread.
 *
 * Every ISA table is complete: entries an ISA does not accelerate point at the
 * scalar reference. Tests compare each table against the scalar one.
 */
#ifndef LOOM_CPU_KERNELS_H
#define LOOM_CPU_KERNELS_H

#include "loom_base.h"

/* s[0] = dot(x[0..n), y[0..n)); x is a weight row of the entry's type, y an
 * activation row in vec_dot_type; n is a multiple of both block sizes. */
typedef void (*loom_vec_dot_fn)(int64_t n, float *s, const void *x, const void *y);
/* Convert n floats into a row of an activation type (n multiple of its block). */
typedef void (*loom_from_float_fn)(const float *x, void *y, int64_t n);

/* Optional tiled matmul: C[j*ldc + i] = dot(W row i, A row j) for i in [i0,i1),
 * j in [j0,j1). W rows are w_stride bytes apart, activation rows (already in
 * vec_dot_type) a_stride bytes apart. Returns false to decline (caller falls back
 * to vec_dot). */
typedef bool (*loom_gemm_fn)(loom_type wtype, int64_t k, const void *w, size_t w_stride,
                             const void *a, size_t a_stride, float *c, size_t ldc,
                             int64_t i0, int64_t i1, int64_t j0, int64_t j1);

typedef struct loom_kernel_entry {
    loom_type vec_dot_type;   /* activation format for weights of this type */
    loom_vec_dot_fn vec_dot;  /* NULL: this weight type has no matmul kernel */
} loom_kernel_entry;

typedef struct loom_kernels {
    const char *name; /* "scalar", "avx2", "avxvnni", "avx512", "avx512vnni", "avx512bf16", "amx", "neon", "neon_dotprod" */
    loom_kernel_entry dot[LOOM_TYPE_COUNT];         /* indexed by weight type */
    loom_from_float_fn from_float[LOOM_TYPE_COUNT]; /* indexed by activation type */
    loom_gemm_fn gemm;                              /* may be NULL */
    /* Prompt-shape tiles the engine gives gemm for F16 / BF16 weights (ops_matmul.c):
     * rows and columns per call once the product has at least 16 columns; 0: the
     * defaults (32 rows, 64 columns). Set by levels whose per-call operand packing
     * wants larger tiles (amx; the packed-activation levels, for gemm_float_packed). */
    int gemm_float_rows, gemm_float_cols;
    /* The same per weight type for other (not repacked) types whose gemm decodes each
     * weight super-block once per call and reuses it for every column (the grid IQ / TQ
     * tiles of amx, avx512vnni and avxvnni; Q4_1 / Q5_0 / Q5_1): 0 for the defaults.
     * Repacked weights keep their tall row chunks and take only the column width
     * (ops_matmul.c mm_prepare). */
    int16_t gemm_tile_rows[LOOM_TYPE_COUNT], gemm_tile_cols[LOOM_TYPE_COUNT];
    /* F16 / BF16 prompt products on activations packed once per product (optional:
     * NULL on levels without; ops_matmul.c uses them from LOOM_GEMM_PACKED_MIN_COLS
     * columns on, before gemm). Layout: panel q holds columns [32q, 32q + 32) of the
     * n activation rows as floats, k-major: p[(q*k + kk)*LOOM_GEMM_PANEL + c] =
     * element kk of row 32q + c, 0 for rows >= n.
     *  gemm_float_pack:   writes panels [q0, q1) from n rows of the activation type at
     *                     (a_stride bytes apart, F16 or BF16: the weights'
     *                     vec_dot_type); false for another type.
     *  gemm_float_packed: C[j*ldc + i] = dot(W row i, column j) for i in [i0, i1), j in
     *                     [j0, j1), j0 a multiple of LOOM_GEMM_PANEL; each output is
     *                     the sum of its LOOM_GEMM_PACKED_KC-chunks in chunk order,
     *                     a chunk's sum being one fused multiply-add per k-value in order
     *                     from 0.0f (bit-identical to loom_gemm_float_packed_ref, so the
     *                     results never depend on the tiling); false for weights other
     *                     than F16 / BF16 or an unaligned j0. */
    bool (*gemm_float_pack)(loom_type atype, int64_t k, const void *a, size_t a_stride, int64_t n, float *p,
                            int64_t q0, int64_t q1);
    bool (*gemm_float_packed)(loom_type wtype, int64_t k, const void *w, size_t w_stride, const float *p, float *c,
                              size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
    /* BF16 prompt products on pair panels (optional: set by the avx512bf16 level, NULL
     * elsewhere; where set, ops_matmul.c uses them instead of gemm_float_pack /
     * gemm_float_packed for BF16 weights). Layout: panel q holds columns [32q, 32q + 32)
     * of the n BF16 activation rows as k-pairs: 32-bit word ((q*kp + t)*32 + c), kp =
     * (k + 1) / 2, holds element 2t (low half) and element 2t + 1 (high half) of row
     * 32q + c; zero halves past k and for rows >= n. A panel is half the bytes of a
     * float panel (the engine plans the float size).
     *  gemm_bf16_pack:   writes panels [q0, q1) from n BF16 rows (a_stride bytes apart);
     *                    false for another activation type. Bit-identical to
     *                    loom_gemm_bf16_pack_ref.
     *  gemm_bf16_packed: C[j*ldc + i] = dot(W row i, column j) as gemm_float_packed, for
     *                    BF16 weights (false for others or an unaligned j0): each
     *                    output the sum of its LOOM_GEMM_PACKED_KC-chunk sums in chunk
     *                    order, a chunk's sum one VDPBF16PS lane over its pairs in
     *                    order (the products exact; denormals flushed), so results do
     *                    not depend on the tiling; within the rounding bound of the
     *                    float64 dot product, not bit-identical to the float path. */
    bool (*gemm_bf16_pack)(loom_type atype, int64_t k, const void *a, size_t a_stride, int64_t n, uint32_t *p,
                           int64_t q0, int64_t q1);
    bool (*gemm_bf16_packed)(loom_type wtype, int64_t k, const void *w, size_t w_stride, const uint32_t *p, float *c,
                             size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
    /* The same contract as gemm for weights in the row-interleaved layout of
     * quant/repack.h (w points at the matrix, w_stride is its GGUF row size,
     * i0 and i1 are multiples of LOOM_REPACK_ROWS). Never NULL: the scalar table
     * holds the reference. Returns false for a type without that layout. */
    loom_gemm_fn gemm_repacked;
/* The packed-activation layout of gemm_float_pack / gemm_float_packed. */
#define LOOM_GEMM_PANEL 32
#define LOOM_GEMM_PACKED_KC 256
/* Products with fewer columns take gemm (a panel is 32 columns wide). */
#define LOOM_GEMM_PACKED_MIN_COLS 16
/* Rows per prompt-shape tile the engine gives gemm_repacked (activation preparation
 * is per call, so calls cover many rows); fewer when that would leave too few tiles. */
#define LOOM_MM_REPACKED_ROWS 256
    /* Weight types this level wants repacked at load (it has a fast
     * gemm_repacked for them); all false on levels without one. */
    bool repack[LOOM_TYPE_COUNT];
    /* f32 helpers for the ops (never NULL) */
    float (*dot_f32)(int64_t n, const float *x, const float *y);
    void (*axpy_f32)(int64_t n, float a, const float *x, float *y); /* y += a*x */
    /* x[i] *= a for n floats (one rounding each: every level gives the same bits) */
    void (*scale_f32)(int64_t n, float *x, float a);
    /* The largest of init and the x[i] that are not NaN (a NaN x[i] is skipped; of
     * equal zeros either may be returned) */
    float (*max_f32)(int64_t n, const float *x, float init);
    /* y[i] = x[i] as float for n IEEE halves (never NULL) */
    void (*f16_to_f32)(int64_t n, const uint16_t *x, float *y);
    /* Softmax numerator in place: x[i] = exp(x[i] - max) (0 where x[i] is -inf);
     * returns the sum of the results. SIMD levels use a polynomial exp (relative error
     * about 2e-7; results below ~1e-38 flush to 0). Never NULL. */
    float (*exp_sum_f32)(int64_t n, float *x, float max);
    /* y[i] = x[i] / (1 + exp(-x[i])) (SiLU) for n floats; x == y allowed. SIMD levels
     * use the polynomial exp above (relative error about 3e-7). Never NULL. */
    void (*silu_f32)(int64_t n, const float *x, float *y);
    /* GELU, tanh form: y[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) for n
     * floats; x == y allowed. The reference evaluates that expression with tanhf; SIMD
     * levels the equal x / (1 + exp(-2 sqrt(2/pi) (x + 0.044715 x^3))) with the
     * polynomial exp (relative error about 3e-7). Never NULL. */
    void (*gelu_f32)(int64_t n, const float *x, float *y);
    /* y[i] = b * tanh(a * x[i]) for n floats; x == y allowed (TANH, flash attention's
     * soft cap). The reference calls tanhf; SIMD levels compute tanh|u| = (1 - e) /
     * (1 + e), e = exp(-2|u|) with the polynomial exp, and the odd Taylor series to u^11
     * below |u| = 0.25 (relative error about 2e-7); +-inf give +-b, NaN stays NaN.
     * Never NULL. */
    void (*tanh_f32)(int64_t n, const float *x, float *y, float a, float b);
    /* Flash attention over one key tile for a block of R query rows (ops_attn.c), in
     * three steps. Row r of a block is query head r % G of the block's token r / G; Rp
     * is R rounded up to a multiple of 16; every buffer is floats.
     *  fa_qk:      sT[j*Rp + r] = sum over d of kf[j*ks + d] * qT[d*Rp + r], one fused
     *              multiply-add per d in order from 0.0f, for keys j < nk and r < R
     *              (qT: the block's queries transposed, zero past R; kf: the tile's key
     *              rows as floats); rows R <= r < Rp are padding: 0.0f (the reference),
     *              or that sum over the zero rows (also 0.0f for finite keys).
     *  fa_softmax: per r < Rp with t = r / G: x_j = sT[j*Rp + r] * scale (rounded) +
     *              mT[j*ms + t] (-inf where that mask value is -inf); M' = max(M[r],
     *              max_j x_j); f[r] = 1 if M' == M[r], else exp(M[r] - M'); p_j =
     *              exp(x_j - M') (0 where x_j is -inf) written over sT; S[r] = S[r] * f[r]
     *              + p_0 + p_1 + ... (key order); M[r] = M'. mT rows must have 16
     *              readable floats from every token index (ms >= Rp / G + 16).
     *  fa_pv:      acc[r*as + d] *= f[r], then acc += p_j * vf[j*vs + d] as one fused
     *              multiply-add per key in key order, p_j = sT[j*Rp + r], for r < R,
     *              d < Dv; keys whose p is 0 for every row are skipped.
     * Every level's fa_qk and fa_pv are bit-identical to the references
     * (kernels_fa_scalar.c); fa_softmax differs by the level's exp (exp_sum_f32's).
     * Results of a row never depend on the other rows of the block.
     * fa_rows converts the tile's K or V rows: dst[i*ds + d] = element d of row i (at
     * src + i*ss) as float for i < n, d < D, with loom_dequantize_row's values (F32,
     * F16, BF16 exact; Q8_0 / Q4_0 d * q rounded once); false for a type it does not
     * convert or D not a whole number of blocks. Never NULL. */
    void (*fa_qk)(int64_t Dk, int64_t R, int64_t Rp, int64_t nk, const float *qT, const float *kf, size_t ks,
                  float *sT);
    void (*fa_softmax)(int64_t nk, int64_t Rp, int64_t G, float scale, const float *mT, size_t ms, float *sT,
                       float *M, float *S, float *f);
    void (*fa_pv)(int64_t nk, int64_t R, int64_t Rp, int64_t Dv, const float *sT, const float *f, const float *vf,
                  size_t vs, float *acc, size_t as);
    bool (*fa_rows)(loom_type t, int64_t n, int64_t D, const void *src, size_t ss, float *dst, size_t ds);
} loom_kernels;

/* The process-wide table: chosen on first call (thread-safe), honouring
 * LOOM_CPU_ISA=scalar|avx2|avxvnni|avx512|avx512vnni|amx|neon|neon_dotprod (an unavailable
 * level falls back to the best available one below it in its family, else scalar,
 * with a warning on stderr once). */
const loom_kernels *loom_kernels_get(void);
/* The scalar reference table (always available). */
const loom_kernels *loom_kernels_scalar(void);
/* The table for a named level if this CPU and OS support it, else NULL. */
const loom_kernels *loom_kernels_for(const char *isa);
/* Names of all levels compiled in (NULL-terminated static list). */
const char *const *loom_kernels_levels(void);
/* One-line description of CPU features detected and the level chosen. */
void loom_kernels_describe(char *buf, size_t size);

#endif
