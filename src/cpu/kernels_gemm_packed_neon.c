/*
 * kernels_gemm_packed_neon.c - baseline AArch64 Advanced SIMD F16 / BF16 prompt products
 * on packed activations (kernels.h gemm_float_pack / gemm_float_packed; references in
 * kernels_scalar.c, bit-identical). Compiled with -march=armv8-a: FCVTL widens F16 on
 * every AArch64 CPU, so one file serves the neon and neon_dotprod levels (both fills
 * call loom_kernels_fill_gemm_packed_neon).
 *
 * kernels_gemm_packed_avx512.c explains the design; the loops and the micro-kernel are
 * ISA-generic (kernels_gemm_packed_body.h). With 32 128-bit registers the micro-kernel is
 * 12 weight rows x 8 columns (two q registers) = 24 accumulators; per k-value 2 panel
 * loads, 12 broadcast loads (LD1R), 24 FMAs (FMLA, fused like the reference's fmaf).
 * Without it the NEON levels computed F16 / BF16 prompts one vec_dot per output (both
 * operands widened per product, a horizontal sum per output).
 */
#include "cpu/kernels_internal.h"

#include <arm_neon.h>

#define ALWAYS_INLINE LOOM_ALWAYS_INLINE

#define GP_VEC float32x4_t
#define GP_VW 4
#define GP_MR 12
#define GP_TB 120
#define GP_TC 128
#define GP_ZERO() vdupq_n_f32(0.0f)
#define GP_LOADU(p) vld1q_f32(p)
#define GP_LOAD(p) vld1q_f32(p)
#define GP_STORE(p, v) vst1q_f32(p, v)
#define GP_BCAST(p) vld1q_dup_f32(p)
#define GP_FMA(a, b, c) vfmaq_f32(c, a, b)
#define GP_ADD(a, b) vaddq_f32(a, b)
#define GP_PREFETCH_L2(p) __builtin_prefetch((p), 0, 2)
#define GP_LOCAL loom_gemm_float_local_neon
#define GP_FILL loom_kernels_fill_gemm_packed_neon

/* 4 floats from 4 halves (F16) or bfloat16s (BF16). */
static ALWAYS_INLINE float32x4_t cvt4(int bf, uint16x4_t v) {
    if (!bf) return vcvt_f32_f16(vreinterpret_f16_u16(v));
    return vreinterpretq_f32_u32(vshll_n_u16(v, 16));
}

/* 4 values at p, the first n (1..4) of them, as floats (zeros after). */
static ALWAYS_INLINE float32x4_t load4(int bf, const uint16_t *p, int64_t n) {
    if (n >= 4) return cvt4(bf, vld1_u16(p));
    uint16_t t[4] = {0};
    for (int64_t i = 0; i < n; i++) t[i] = p[i];
    return cvt4(bf, vld1_u16(t));
}

/* r[x] := column x of the 4 x 4 matrix whose rows are r[0..3]. */
static ALWAYS_INLINE void transpose4(float32x4_t r[4]) {
    const float32x4x2_t a = vtrnq_f32(r[0], r[1]), b = vtrnq_f32(r[2], r[3]);
    r[0] = vreinterpretq_f32_f64(vzip1q_f64(vreinterpretq_f64_f32(a.val[0]), vreinterpretq_f64_f32(b.val[0])));
    r[1] = vreinterpretq_f32_f64(vzip1q_f64(vreinterpretq_f64_f32(a.val[1]), vreinterpretq_f64_f32(b.val[1])));
    r[2] = vreinterpretq_f32_f64(vzip2q_f64(vreinterpretq_f64_f32(a.val[0]), vreinterpretq_f64_f32(b.val[0])));
    r[3] = vreinterpretq_f32_f64(vzip2q_f64(vreinterpretq_f64_f32(a.val[1]), vreinterpretq_f64_f32(b.val[1])));
}

/* kernels_gemm_packed_body.h's gp_pack_panel: 4 x 4 blocks converted and transposed. */
static ALWAYS_INLINE void gp_pack_panel(int bf, const uint8_t *a, size_t as, int64_t col0, int64_t nv, int64_t k0,
                                        int64_t kl, float *dst) {
    for (int64_t kb = 0; kb < kl; kb += 4) {
        const int64_t kn = kl - kb < 4 ? kl - kb : 4;
        for (int h = 0; h < LOOM_GEMM_PANEL / 4; h++) {
            float32x4_t r[4];
            LOOM_UNROLL_ALL for (int x = 0; x < 4; x++) {
                const int64_t col = col0 + 4 * h + x;
                r[x] = col < nv ? load4(bf, (const uint16_t *)(a + (size_t)col * as) + k0 + kb, kn) : vdupq_n_f32(0.0f);
            }
            transpose4(r);
            for (int64_t x = 0; x < kn; x++) vst1q_f32(dst + (size_t)(kb + x) * LOOM_GEMM_PANEL + 4 * h, r[x]);
        }
    }
}

/* gp_cvt_row: kl values as floats, zero-padded to a multiple of 4. */
static ALWAYS_INLINE void gp_cvt_row(int bf, const uint16_t *src, int64_t kl, float *dst) {
    int64_t kk = 0;
    for (; kk + 8 <= kl; kk += 8) {
        const uint16x8_t v = vld1q_u16(src + kk);
        vst1q_f32(dst + kk, cvt4(bf, vget_low_u16(v)));
        vst1q_f32(dst + kk + 4, cvt4(bf, vget_high_u16(v)));
    }
    for (; kk < kl; kk += 4) vst1q_f32(dst + kk, load4(bf, src + kk, kl - kk));
}

/* gp_store_t: 4 x 4 transposes (rows of T become columns of C), partial edges one by one. */
static ALWAYS_INLINE void gp_store_t(const float *T, float *c, size_t ldc, int64_t i0, int64_t nrow, int64_t j0,
                                     int64_t ncol) {
    for (int64_t rb = 0; rb < nrow; rb += 4) {
        const int64_t rn = nrow - rb < 4 ? nrow - rb : 4;
        for (int64_t cb = 0; cb < ncol; cb += 4) {
            const int64_t cn = ncol - cb < 4 ? ncol - cb : 4;
            if (rn == 4 && cn == 4) {
                float32x4_t v[4];
                LOOM_UNROLL_ALL for (int x = 0; x < 4; x++) v[x] = vld1q_f32(T + (size_t)(rb + x) * GP_TC + cb);
                transpose4(v);
                LOOM_UNROLL_ALL for (int x = 0; x < 4; x++) vst1q_f32(c + (size_t)(j0 + cb + x) * ldc + i0 + rb, v[x]);
            } else {
                for (int64_t x = 0; x < cn; x++)
                    for (int64_t r = 0; r < rn; r++)
                        c[(size_t)(j0 + cb + x) * ldc + (size_t)(i0 + rb + r)] = T[(size_t)(rb + r) * GP_TC + cb + x];
            }
        }
    }
}

#include "cpu/kernels_gemm_packed_body.h"
