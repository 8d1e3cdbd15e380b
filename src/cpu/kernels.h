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
    const char *name; /* "scalar", "avx2", "avx512", "avx512vnni", "amx", "neon", "neon_dotprod" */
    loom_kernel_entry dot[LOOM_TYPE_COUNT];         /* indexed by weight type */
    loom_from_float_fn from_float[LOOM_TYPE_COUNT]; /* indexed by activation type */
    loom_gemm_fn gemm;                              /* may be NULL */
    /* Prompt-shape tiles the engine gives gemm for F16 / BF16 weights (ops_matmul.c):
     * rows and columns per call once the product has at least 16 columns; 0: the
     * defaults (32 rows, 64 columns). Set by levels whose per-call operand packing
     * wants larger tiles (amx). */
    int gemm_float_rows, gemm_float_cols;
    /* The same contract as gemm for weights in the row-interleaved layout of
     * quant/repack.h (w points at the matrix, w_stride is its GGUF row size,
     * i0 and i1 are multiples of LOOM_REPACK_ROWS). Never NULL: the scalar table
     * holds the reference. Returns false for a type without that layout. */
    loom_gemm_fn gemm_repacked;
/* Rows per prompt-shape tile the engine gives gemm_repacked (activation preparation
 * is per call, so calls cover many rows); fewer when that would leave too few tiles. */
#define LOOM_MM_REPACKED_ROWS 256
    /* Weight types this level wants repacked at load (it has a fast
     * gemm_repacked for them); all false on levels without one. */
    bool repack[LOOM_TYPE_COUNT];
    /* f32 helpers for the ops (never NULL) */
    float (*dot_f32)(int64_t n, const float *x, const float *y);
    void (*axpy_f32)(int64_t n, float a, const float *x, float *y); /* y += a*x */
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
    /* Flash attention p.V of one key tile, all G query heads of a KV head at once:
     * acc[h*acc_stride + d] += p[h*p_stride + j] * V_j[d] for h < G, d < Dv, keys j =
     * 0..n-1 in that order, V_j row j of v (v_stride bytes apart) of type vt as float
     * (F32; F16; Q8_0 / Q4_0 as d * q, rounded), each key one fused multiply-add
     * acc = fma(p, v, acc) as loom_fa_pv_ref spells out (axpy_f32 rounds the product
     * first: results differ from that fallback in the last bits). Keys whose
     * p is 0 for every head are skipped. Returns false to decline (type, Dv not a
     * multiple of the vector width): the caller then uses axpy_f32 per key and head.
     * May be NULL (scalar, NEON). */
    bool (*fa_pv)(loom_type vt, int64_t n, int64_t G, int64_t Dv, const float *p, size_t p_stride,
                  const void *v, size_t v_stride, float *acc, size_t acc_stride);
} loom_kernels;

/* The process-wide table: chosen on first call (thread-safe), honouring
 * LOOM_CPU_ISA=scalar|avx2|avx512|avx512vnni|amx|neon|neon_dotprod (an unavailable
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
