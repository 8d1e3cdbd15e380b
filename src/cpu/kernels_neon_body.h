/*
 * kernels_neon_body.h (internal to kernels_neon.c and kernels_neon_dotprod.c) - the
 * AArch64 Advanced SIMD kernels, written once and compiled twice:
 *   kernels_neon.c          baseline ASIMD (-march=armv8-a), int8 dots via SMULL/SADALP;
 *   kernels_neon_dotprod.c  armv8.2-a+dotprod+fp16, int8 dots via SDOT (vdotq_s32).
 * The including file defines, before including this one:
 *   static inline int32x4_t ndot(int32x4_t acc, int8x16_t a, int8x16_t b)
 *       acc + per-lane sums of 4 signed byte products (exact for all int8 inputs);
 *   NEON_FILL    the name of the table filler to define.
 * Integer formats: exact int32 dot per block (or sub-block), then one float scaling per
 * block, as in the scalar reference. Float formats accumulate in f32 lanes.
 */
#ifndef NEON_FILL
#error "define NEON_FILL and ndot() before including kernels_neon_body.h"
#endif

#include <arm_neon.h>
#include <math.h>
#include <string.h>

/* IEEE half bits -> float (FCVT is in the base AArch64 FP unit). */
static inline float h2f(uint16_t h) {
    return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

/* 16 packed nibbles -> low nibbles (elements 0..15) and high nibbles (16..31) */
static inline void unpack_nibbles(const uint8_t *qs, uint8x16_t *lo, uint8x16_t *hi) {
    const uint8x16_t v = vld1q_u8(qs);
    *lo = vandq_u8(v, vdupq_n_u8(0x0F));
    *hi = vshrq_n_u8(v, 4);
}

/* 32 bits -> two vectors of 16 bytes, 0xFF where the bit (element index) is set */
static inline void bits_to_bytes(uint32_t h, uint8x16_t *m0, uint8x16_t *m1) {
    static const uint8_t bitsel[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t sel = vld1q_u8(bitsel);
    uint8x16_t b0 = vcombine_u8(vdup_n_u8((uint8_t)h), vdup_n_u8((uint8_t)(h >> 8)));
    uint8x16_t b1 = vcombine_u8(vdup_n_u8((uint8_t)(h >> 16)), vdup_n_u8((uint8_t)(h >> 24)));
    *m0 = vtstq_u8(b0, sel);
    *m1 = vtstq_u8(b1, sel);
}

/* ------------------------------------------------------------ 32-element blocks */

static void vd_q4_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    const int8x16_t off = vdupq_n_s8(8);
    float32x4_t acc0 = vdupq_n_f32(0.f), acc1 = vdupq_n_f32(0.f);
    const int64_t nb = n / 32;
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2) {
        uint8x16_t l0, h0, l1, h1;
        unpack_nibbles(x[i].qs, &l0, &h0);
        unpack_nibbles(x[i + 1].qs, &l1, &h1);
        int32x4_t p0 = ndot(vdupq_n_s32(0), vsubq_s8(vreinterpretq_s8_u8(l0), off), vld1q_s8(y[i].qs));
        p0 = ndot(p0, vsubq_s8(vreinterpretq_s8_u8(h0), off), vld1q_s8(y[i].qs + 16));
        int32x4_t p1 = ndot(vdupq_n_s32(0), vsubq_s8(vreinterpretq_s8_u8(l1), off), vld1q_s8(y[i + 1].qs));
        p1 = ndot(p1, vsubq_s8(vreinterpretq_s8_u8(h1), off), vld1q_s8(y[i + 1].qs + 16));
        acc0 = vfmaq_n_f32(acc0, vcvtq_f32_s32(p0), h2f(x[i].d) * h2f(y[i].d));
        acc1 = vfmaq_n_f32(acc1, vcvtq_f32_s32(p1), h2f(x[i + 1].d) * h2f(y[i + 1].d));
    }
    for (; i < nb; i++) {
        uint8x16_t l0, h0;
        unpack_nibbles(x[i].qs, &l0, &h0);
        int32x4_t p0 = ndot(vdupq_n_s32(0), vsubq_s8(vreinterpretq_s8_u8(l0), off), vld1q_s8(y[i].qs));
        p0 = ndot(p0, vsubq_s8(vreinterpretq_s8_u8(h0), off), vld1q_s8(y[i].qs + 16));
        acc0 = vfmaq_n_f32(acc0, vcvtq_f32_s32(p0), h2f(x[i].d) * h2f(y[i].d));
    }
    *s = vaddvq_f32(vaddq_f32(acc0, acc1));
}

static void vd_q8_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q8_0 *x = vx;
    const block_q8_0 *y = vy;
    float32x4_t acc0 = vdupq_n_f32(0.f), acc1 = vdupq_n_f32(0.f);
    const int64_t nb = n / 32;
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2) {
        int32x4_t p0 = ndot(vdupq_n_s32(0), vld1q_s8(x[i].qs), vld1q_s8(y[i].qs));
        p0 = ndot(p0, vld1q_s8(x[i].qs + 16), vld1q_s8(y[i].qs + 16));
        int32x4_t p1 = ndot(vdupq_n_s32(0), vld1q_s8(x[i + 1].qs), vld1q_s8(y[i + 1].qs));
        p1 = ndot(p1, vld1q_s8(x[i + 1].qs + 16), vld1q_s8(y[i + 1].qs + 16));
        acc0 = vfmaq_n_f32(acc0, vcvtq_f32_s32(p0), h2f(x[i].d) * h2f(y[i].d));
        acc1 = vfmaq_n_f32(acc1, vcvtq_f32_s32(p1), h2f(x[i + 1].d) * h2f(y[i + 1].d));
    }
    for (; i < nb; i++) {
        int32x4_t p0 = ndot(vdupq_n_s32(0), vld1q_s8(x[i].qs), vld1q_s8(y[i].qs));
        p0 = ndot(p0, vld1q_s8(x[i].qs + 16), vld1q_s8(y[i].qs + 16));
        acc0 = vfmaq_n_f32(acc0, vcvtq_f32_s32(p0), h2f(x[i].d) * h2f(y[i].d));
    }
    *s = vaddvq_f32(vaddq_f32(acc0, acc1));
}

static void vd_mxfp4(int64_t n, float *s, const void *vx, const void *vy) {
    const block_mxfp4 *x = vx;
    const block_q8_0 *y = vy;
    const int8x16_t lut = vld1q_s8(loom_mxfp4_kv);
    float32x4_t acc = vdupq_n_f32(0.f);
    for (int64_t i = 0; i < n / 32; i++) {
        uint8x16_t lo, hi;
        unpack_nibbles(x[i].qs, &lo, &hi);
        int32x4_t p = ndot(vdupq_n_s32(0), vqtbl1q_s8(lut, lo), vld1q_s8(y[i].qs));
        p = ndot(p, vqtbl1q_s8(lut, hi), vld1q_s8(y[i].qs + 16));
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(p), loom_e8m0_half(x[i].e) * h2f(y[i].d));
    }
    *s = vaddvq_f32(acc);
}

/* NVFP4 sub-blocks 2h and 2h+1 of a block (bytes 16h..16h+15: low nibbles values 0-7,
 * high 8-15 of each 8-byte sub-block) through lut, in value order */
static inline void nvfp4_half(const uint8_t *qs, int h, int8x16_t lut, int8x16_t *qa, int8x16_t *qb) {
    uint8x16_t lo, hi;
    unpack_nibbles(qs + 16 * h, &lo, &hi);
    *qa = vqtbl1q_s8(lut, vcombine_u8(vget_low_u8(lo), vget_low_u8(hi)));
    *qb = vqtbl1q_s8(lut, vcombine_u8(vget_high_u8(lo), vget_high_u8(hi)));
}

/* NVFP4 x Q8_0: each 16-value sub-block's exact int32 sum scaled by its UE4M3 scale
 * times the Q8_0 block's (two sub-blocks per Q8_0 block) */
static void vd_nvfp4(int64_t n, float *s, const void *vx, const void *vy) {
    const block_nvfp4 *x = vx;
    const block_q8_0 *y = vy;
    const int8x16_t lut = vld1q_s8(loom_mxfp4_kv);
    float32x4_t acc0 = vdupq_n_f32(0.f), acc1 = vdupq_n_f32(0.f);
    for (int64_t i = 0; i < n / QK_NVFP4; i++) {
        for (int h = 0; h < 2; h++) {
            const block_q8_0 *yb = &y[2 * i + h];
            int8x16_t qa, qb;
            nvfp4_half(x[i].qs, h, lut, &qa, &qb);
            const float dy = h2f(yb->d);
            acc0 = vfmaq_n_f32(acc0, vcvtq_f32_s32(ndot(vdupq_n_s32(0), qa, vld1q_s8(yb->qs))),
                               loom_ue4m3_half(x[i].d[2 * h]) * dy);
            acc1 = vfmaq_n_f32(acc1, vcvtq_f32_s32(ndot(vdupq_n_s32(0), qb, vld1q_s8(yb->qs + 16))),
                               loom_ue4m3_half(x[i].d[2 * h + 1]) * dy);
        }
    }
    *s = vaddvq_f32(vaddq_f32(acc0, acc1));
}

static void vd_q5_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q5_0 *x = vx;
    const block_q8_0 *y = vy;
    const uint8x16_t sixteen = vdupq_n_u8(16);
    float32x4_t acc = vdupq_n_f32(0.f);
    for (int64_t i = 0; i < n / 32; i++) {
        uint32_t h;
        memcpy(&h, x[i].qh, 4);
        uint8x16_t lo, hi, m0, m1;
        unpack_nibbles(x[i].qs, &lo, &hi);
        bits_to_bytes(h, &m0, &m1);
        /* q - 16 = nibble - (bit ? 0 : 16) */
        int8x16_t q0 = vreinterpretq_s8_u8(vsubq_u8(lo, vbicq_u8(sixteen, m0)));
        int8x16_t q1 = vreinterpretq_s8_u8(vsubq_u8(hi, vbicq_u8(sixteen, m1)));
        int32x4_t p = ndot(vdupq_n_s32(0), q0, vld1q_s8(y[i].qs));
        p = ndot(p, q1, vld1q_s8(y[i].qs + 16));
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(p), h2f(x[i].d) * h2f(y[i].d));
    }
    *s = vaddvq_f32(acc);
}

static void vd_q4_1(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_1 *x = vx;
    const block_q8_1 *y = vy;
    float32x4_t acc = vdupq_n_f32(0.f);
    float summ = 0.f;
    for (int64_t i = 0; i < n / 32; i++) {
        uint8x16_t lo, hi;
        unpack_nibbles(x[i].qs, &lo, &hi);
        int32x4_t p = ndot(vdupq_n_s32(0), vreinterpretq_s8_u8(lo), vld1q_s8(y[i].qs));
        p = ndot(p, vreinterpretq_s8_u8(hi), vld1q_s8(y[i].qs + 16));
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(p), h2f(x[i].d) * h2f(y[i].d));
        summ += h2f(x[i].m) * h2f(y[i].s);
    }
    *s = vaddvq_f32(acc) + summ;
}

static void vd_q5_1(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q5_1 *x = vx;
    const block_q8_1 *y = vy;
    const uint8x16_t sixteen = vdupq_n_u8(16);
    float32x4_t acc = vdupq_n_f32(0.f);
    float summ = 0.f;
    for (int64_t i = 0; i < n / 32; i++) {
        uint32_t h;
        memcpy(&h, x[i].qh, 4);
        uint8x16_t lo, hi, m0, m1;
        unpack_nibbles(x[i].qs, &lo, &hi);
        bits_to_bytes(h, &m0, &m1);
        int8x16_t q0 = vreinterpretq_s8_u8(vorrq_u8(lo, vandq_u8(sixteen, m0)));
        int8x16_t q1 = vreinterpretq_s8_u8(vorrq_u8(hi, vandq_u8(sixteen, m1)));
        int32x4_t p = ndot(vdupq_n_s32(0), q0, vld1q_s8(y[i].qs));
        p = ndot(p, q1, vld1q_s8(y[i].qs + 16));
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(p), h2f(x[i].d) * h2f(y[i].d));
        summ += h2f(x[i].m) * h2f(y[i].s);
    }
    *s = vaddvq_f32(acc) + summ;
}

/* ------------------------------------------------------------------ K-quants */

/* sum over the 8 sub-blocks of min[j] * (bsums[2j] + bsums[2j+1]) */
static inline int k4_min_sum(const uint8_t *mn, const int16_t *bsums) {
    const int16x8_t pair = vpaddq_s16(vld1q_s16(bsums), vld1q_s16(bsums + 8)); /* |.| <= 4064 */
    const int16x8_t m = vreinterpretq_s16_u16(vmovl_u8(vld1_u8(mn)));
    int32x4_t t = vmull_s16(vget_low_s16(pair), vget_low_s16(m));
    t = vmlal_s16(t, vget_high_s16(pair), vget_high_s16(m));
    return vaddvq_s32(t);
}

static void vd_q4_K(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_K *x = vx;
    const block_q8_K *y = vy;
    const uint8x16_t m4 = vdupq_n_u8(0x0F);
    float32x4_t acc = vdupq_n_f32(0.f);
    float summf = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; j++) loom_k4_scale_min(j, x[i].scales, &sc[j], &mn[j]);
        const int summ = k4_min_sum(mn, y[i].bsums);
        const int8_t *a = y[i].qs;
        int32x4_t isum = vdupq_n_s32(0);
        for (int c = 0; c < 4; c++) {
            const uint8x16_t q0 = vld1q_u8(x[i].qs + 32 * c), q1 = vld1q_u8(x[i].qs + 32 * c + 16);
            int32x4_t t0 = ndot(vdupq_n_s32(0), vreinterpretq_s8_u8(vandq_u8(q0, m4)), vld1q_s8(a + 64 * c));
            t0 = ndot(t0, vreinterpretq_s8_u8(vandq_u8(q1, m4)), vld1q_s8(a + 64 * c + 16));
            int32x4_t t1 = ndot(vdupq_n_s32(0), vreinterpretq_s8_u8(vshrq_n_u8(q0, 4)), vld1q_s8(a + 64 * c + 32));
            t1 = ndot(t1, vreinterpretq_s8_u8(vshrq_n_u8(q1, 4)), vld1q_s8(a + 64 * c + 48));
            isum = vmlaq_n_s32(isum, t0, sc[2 * c]);
            isum = vmlaq_n_s32(isum, t1, sc[2 * c + 1]);
        }
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(isum), y[i].d * h2f(x[i].d));
        summf += (y[i].d * h2f(x[i].dmin)) * (float)summ;
    }
    *s = vaddvq_f32(acc) - summf;
}

static void vd_q5_K(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q5_K *x = vx;
    const block_q8_K *y = vy;
    const uint8x16_t m4 = vdupq_n_u8(0x0F), one = vdupq_n_u8(1), two = vdupq_n_u8(2);
    float32x4_t acc = vdupq_n_f32(0.f);
    float summf = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; j++) loom_k4_scale_min(j, x[i].scales, &sc[j], &mn[j]);
        const int summ = k4_min_sum(mn, y[i].bsums);
        const int8_t *a = y[i].qs;
        uint8x16_t qh0 = vld1q_u8(x[i].qh), qh1 = vld1q_u8(x[i].qh + 16); /* shifted right 2 per chunk */
        int32x4_t isum = vdupq_n_s32(0);
        for (int c = 0; c < 4; c++) {
            const uint8x16_t q0 = vld1q_u8(x[i].qs + 32 * c), q1 = vld1q_u8(x[i].qs + 32 * c + 16);
            /* bit 2c -> 0x10 for the low nibbles, bit 2c+1 -> 0x10 for the high ones */
            uint8x16_t l0 = vorrq_u8(vandq_u8(q0, m4), vshlq_n_u8(vandq_u8(qh0, one), 4));
            uint8x16_t l1 = vorrq_u8(vandq_u8(q1, m4), vshlq_n_u8(vandq_u8(qh1, one), 4));
            uint8x16_t u0 = vorrq_u8(vshrq_n_u8(q0, 4), vshlq_n_u8(vandq_u8(qh0, two), 3));
            uint8x16_t u1 = vorrq_u8(vshrq_n_u8(q1, 4), vshlq_n_u8(vandq_u8(qh1, two), 3));
            qh0 = vshrq_n_u8(qh0, 2);
            qh1 = vshrq_n_u8(qh1, 2);
            int32x4_t t0 = ndot(vdupq_n_s32(0), vreinterpretq_s8_u8(l0), vld1q_s8(a + 64 * c));
            t0 = ndot(t0, vreinterpretq_s8_u8(l1), vld1q_s8(a + 64 * c + 16));
            int32x4_t t1 = ndot(vdupq_n_s32(0), vreinterpretq_s8_u8(u0), vld1q_s8(a + 64 * c + 32));
            t1 = ndot(t1, vreinterpretq_s8_u8(u1), vld1q_s8(a + 64 * c + 48));
            isum = vmlaq_n_s32(isum, t0, sc[2 * c]);
            isum = vmlaq_n_s32(isum, t1, sc[2 * c + 1]);
        }
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(isum), y[i].d * h2f(x[i].d));
        summf += (y[i].d * h2f(x[i].dmin)) * (float)summ;
    }
    *s = vaddvq_f32(acc) - summf;
}

static void vd_q6_K(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q6_K *x = vx;
    const block_q8_K *y = vy;
    const uint8x16_t m4 = vdupq_n_u8(0x0F), m3 = vdupq_n_u8(0x03);
    const int8x16_t off = vdupq_n_s8(32);
    float32x4_t acc = vdupq_n_f32(0.f);
    for (int64_t i = 0; i < n / QK_K; i++) {
        int32x4_t isum = vdupq_n_s32(0);
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[i].ql + 64 * h, *qhp = x[i].qh + 32 * h;
            const int8_t *sc = x[i].scales + 8 * h;
            const int8_t *a = y[i].qs + 128 * h;
            for (int half = 0; half < 2; half++) { /* elements l in [16*half, 16*half+16) */
                const uint8x16_t l0 = vld1q_u8(ql + 16 * half), l1 = vld1q_u8(ql + 32 + 16 * half);
                const uint8x16_t qh = vld1q_u8(qhp + 16 * half);
                uint8x16_t u1 = vorrq_u8(vandq_u8(l0, m4), vshlq_n_u8(vandq_u8(qh, m3), 4));
                uint8x16_t u2 = vorrq_u8(vandq_u8(l1, m4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 2), m3), 4));
                uint8x16_t u3 = vorrq_u8(vshrq_n_u8(l0, 4), vshlq_n_u8(vandq_u8(vshrq_n_u8(qh, 4), m3), 4));
                uint8x16_t u4 = vorrq_u8(vshrq_n_u8(l1, 4), vshlq_n_u8(vshrq_n_u8(qh, 6), 4));
                const int8_t *aa = a + 16 * half;
                int32x4_t t1 = ndot(vdupq_n_s32(0), vsubq_s8(vreinterpretq_s8_u8(u1), off), vld1q_s8(aa));
                int32x4_t t2 = ndot(vdupq_n_s32(0), vsubq_s8(vreinterpretq_s8_u8(u2), off), vld1q_s8(aa + 32));
                int32x4_t t3 = ndot(vdupq_n_s32(0), vsubq_s8(vreinterpretq_s8_u8(u3), off), vld1q_s8(aa + 64));
                int32x4_t t4 = ndot(vdupq_n_s32(0), vsubq_s8(vreinterpretq_s8_u8(u4), off), vld1q_s8(aa + 96));
                isum = vmlaq_n_s32(isum, t1, sc[half]);
                isum = vmlaq_n_s32(isum, t2, sc[half + 2]);
                isum = vmlaq_n_s32(isum, t3, sc[half + 4]);
                isum = vmlaq_n_s32(isum, t4, sc[half + 6]);
            }
        }
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(isum), y[i].d * h2f(x[i].d));
    }
    *s = vaddvq_f32(acc);
}

static void vd_q2_K(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q2_K *x = vx;
    const block_q8_K *y = vy;
    const uint8x16_t m3 = vdupq_n_u8(3);
    float32x4_t acc = vdupq_n_f32(0.f);
    float summf = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        /* mins: sum_g (scales[g] >> 4) * bsums[g] */
        const uint8x16_t scv = vld1q_u8(x[i].scales);
        const uint8x16_t mnv = vshrq_n_u8(scv, 4);
        const int16x8_t mlo = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mnv)));
        const int16x8_t mhi = vreinterpretq_s16_u16(vmovl_u8(vget_high_u8(mnv)));
        const int16x8_t b0 = vld1q_s16(y[i].bsums), b1 = vld1q_s16(y[i].bsums + 8);
        int32x4_t mm = vmull_s16(vget_low_s16(mlo), vget_low_s16(b0));
        mm = vmlal_s16(mm, vget_high_s16(mlo), vget_high_s16(b0));
        mm = vmlal_s16(mm, vget_low_s16(mhi), vget_low_s16(b1));
        mm = vmlal_s16(mm, vget_high_s16(mhi), vget_high_s16(b1));
        const int summ = vaddvq_s32(mm);
        const int8_t *a = y[i].qs;
        int32x4_t isum = vdupq_n_s32(0);
        for (int h = 0; h < 2; h++) {
            uint8x16_t q0 = vld1q_u8(x[i].qs + 32 * h), q1 = vld1q_u8(x[i].qs + 32 * h + 16);
            for (int j = 0; j < 4; j++) {
                const int g = 8 * h + 2 * j;
                int32x4_t t0 = ndot(vdupq_n_s32(0), vreinterpretq_s8_u8(vandq_u8(q0, m3)), vld1q_s8(a + 16 * g));
                int32x4_t t1 = ndot(vdupq_n_s32(0), vreinterpretq_s8_u8(vandq_u8(q1, m3)), vld1q_s8(a + 16 * g + 16));
                isum = vmlaq_n_s32(isum, t0, x[i].scales[g] & 0xF);
                isum = vmlaq_n_s32(isum, t1, x[i].scales[g + 1] & 0xF);
                q0 = vshrq_n_u8(q0, 2);
                q1 = vshrq_n_u8(q1, 2);
            }
        }
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(isum), y[i].d * h2f(x[i].d));
        summf += (y[i].d * h2f(x[i].dmin)) * (float)summ;
    }
    *s = vaddvq_f32(acc) - summf;
}

static void vd_q3_K(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q3_K *x = vx;
    const block_q8_K *y = vy;
    const uint8x16_t m3 = vdupq_n_u8(3), four = vdupq_n_u8(4);
    float32x4_t acc = vdupq_n_f32(0.f);
    for (int64_t i = 0; i < n / QK_K; i++) {
        int sc[16];
        for (int g = 0; g < 16; g++) sc[g] = loom_k3_scale(g, x[i].scales);
        const uint8x16_t hm0 = vld1q_u8(x[i].hmask), hm1 = vld1q_u8(x[i].hmask + 16);
        const int8_t *a = y[i].qs;
        int32x4_t isum = vdupq_n_s32(0);
        for (int h = 0; h < 2; h++) {
            uint8x16_t q0 = vld1q_u8(x[i].qs + 32 * h), q1 = vld1q_u8(x[i].qs + 32 * h + 16);
            for (int j = 0; j < 4; j++) {
                const int g = 8 * h + 2 * j;
                const uint8x16_t bit = vdupq_n_u8((uint8_t)(1u << (4 * h + j)));
                /* value = 2-bit code - (high bit set ? 0 : 4), in -4..3 */
                int8x16_t v0 = vreinterpretq_s8_u8(vsubq_u8(vandq_u8(q0, m3), vbicq_u8(four, vtstq_u8(hm0, bit))));
                int8x16_t v1 = vreinterpretq_s8_u8(vsubq_u8(vandq_u8(q1, m3), vbicq_u8(four, vtstq_u8(hm1, bit))));
                int32x4_t t0 = ndot(vdupq_n_s32(0), v0, vld1q_s8(a + 16 * g));
                int32x4_t t1 = ndot(vdupq_n_s32(0), v1, vld1q_s8(a + 16 * g + 16));
                isum = vmlaq_n_s32(isum, t0, sc[g]);
                isum = vmlaq_n_s32(isum, t1, sc[g + 1]);
                q0 = vshrq_n_u8(q0, 2);
                q1 = vshrq_n_u8(q1, 2);
            }
        }
        acc = vfmaq_n_f32(acc, vcvtq_f32_s32(isum), y[i].d * h2f(x[i].d));
    }
    *s = vaddvq_f32(acc);
}

/* ----------------------------------------------------------------- floats */

static void vd_f32(int64_t n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    float32x4_t a0 = vdupq_n_f32(0.f), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = vfmaq_f32(a0, vld1q_f32(x + i), vld1q_f32(y + i));
        a1 = vfmaq_f32(a1, vld1q_f32(x + i + 4), vld1q_f32(y + i + 4));
        a2 = vfmaq_f32(a2, vld1q_f32(x + i + 8), vld1q_f32(y + i + 8));
        a3 = vfmaq_f32(a3, vld1q_f32(x + i + 12), vld1q_f32(y + i + 12));
    }
    for (; i + 4 <= n; i += 4) a0 = vfmaq_f32(a0, vld1q_f32(x + i), vld1q_f32(y + i));
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
    for (; i < n; i++) sum += x[i] * y[i];
    *s = sum;
}

static inline float32x4_t f16x4(const uint16_t *p) { return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(p))); }

static void vd_f16(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    float32x4_t a0 = vdupq_n_f32(0.f), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = vfmaq_f32(a0, f16x4(x + i), f16x4(y + i));
        a1 = vfmaq_f32(a1, f16x4(x + i + 4), f16x4(y + i + 4));
        a2 = vfmaq_f32(a2, f16x4(x + i + 8), f16x4(y + i + 8));
        a3 = vfmaq_f32(a3, f16x4(x + i + 12), f16x4(y + i + 12));
    }
    for (; i + 4 <= n; i += 4) a0 = vfmaq_f32(a0, f16x4(x + i), f16x4(y + i));
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
    for (; i < n; i++) sum += h2f(x[i]) * h2f(y[i]);
    *s = sum;
}

static inline float32x4_t bf16x4(const uint16_t *p) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(p), 16));
}

static void vd_bf16(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    float32x4_t a0 = vdupq_n_f32(0.f), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = vfmaq_f32(a0, bf16x4(x + i), bf16x4(y + i));
        a1 = vfmaq_f32(a1, bf16x4(x + i + 4), bf16x4(y + i + 4));
        a2 = vfmaq_f32(a2, bf16x4(x + i + 8), bf16x4(y + i + 8));
        a3 = vfmaq_f32(a3, bf16x4(x + i + 12), bf16x4(y + i + 12));
    }
    for (; i + 4 <= n; i += 4) a0 = vfmaq_f32(a0, bf16x4(x + i), bf16x4(y + i));
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
    for (; i < n; i++) sum += loom_bf16_to_fp32(x[i]) * loom_bf16_to_fp32(y[i]);
    *s = sum;
}

static float dot_f32(int64_t n, const float *x, const float *y) {
    float s;
    vd_f32(n, &s, x, y);
    return s;
}

static void axpy_f32(int64_t n, float a, const float *x, float *y) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        /* multiply then add (no fusion), like the scalar reference */
        vst1q_f32(y + i, vaddq_f32(vld1q_f32(y + i), vmulq_n_f32(vld1q_f32(x + i), a)));
        vst1q_f32(y + i + 4, vaddq_f32(vld1q_f32(y + i + 4), vmulq_n_f32(vld1q_f32(x + i + 4), a)));
    }
    for (; i < n; i++) y[i] += a * x[i];
}

static void scale_f32(int64_t n, float *x, float a) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), a));
    for (; i < n; i++) x[i] *= a;
}

/* the reference's select (x > m ? x : m) per lane: NaN values are skipped */
static float max_f32(int64_t n, const float *x, float init) {
    float32x4_t m0 = vdupq_n_f32(init), m1 = m0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const float32x4_t a = vld1q_f32(x + i), b = vld1q_f32(x + i + 4);
        m0 = vbslq_f32(vcgtq_f32(a, m0), a, m0);
        m1 = vbslq_f32(vcgtq_f32(b, m1), b, m1);
    }
    float t[8], m = init;
    vst1q_f32(t, m0);
    vst1q_f32(t + 4, m1);
    for (int l = 0; l < 8; l++) m = t[l] > m ? t[l] : m;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

static void f16_to_f32(int64_t n, const uint16_t *x, float *y) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        vst1q_f32(y + i, f16x4(x + i));
        vst1q_f32(y + i + 4, f16x4(x + i + 4));
    }
    for (; i < n; i++) y[i] = loom_fp16_to_fp32(x[i]);
}

/* exp(x) for softmax arguments (x <= 0): x = k ln2 + r with |r| <= ln2/2 (two-part ln2),
 * exp(r) by its degree-6 Taylor polynomial (relative error < 2e-7), times 2^k built in
 * the exponent field. x < -87.3 (and -inf) gives 0; NaN stays NaN. */
static inline float32x4_t exp_neg(float32x4_t x) {
    const uint32x4_t tiny = vcltq_f32(x, vdupq_n_f32(-87.3f));
    x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.3f)), vdupq_n_f32(88.0f)); /* NaN propagates */
    const float32x4_t k = vrndnq_f32(vmulq_n_f32(x, 1.44269504f));
    float32x4_t r = vfmsq_f32(x, k, vdupq_n_f32(0.693145752f));
    r = vfmsq_f32(r, k, vdupq_n_f32(1.42860677e-6f));
    float32x4_t p = vdupq_n_f32(1.0f / 720.0f);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 120.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 24.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f / 6.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
    /* k in [-126, 127]: 2^k is a normal float */
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(k), vdupq_n_s32(127)), 23);
    p = vmulq_f32(p, vreinterpretq_f32_s32(e));
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(p), tiny));
}

/* exp(x - max), 0 where x is -inf (even when max is -inf too) */
static inline float32x4_t exp_shifted(float32x4_t x, float32x4_t vm) {
    const uint32x4_t ninf = vceqq_f32(x, vdupq_n_f32(-INFINITY));
    const float32x4_t e = exp_neg(vsubq_f32(x, vm));
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(e), ninf));
}

/* tanh: see kernels.h (as the AVX-512 level: exp_neg(-2|u|), the series below 0.25,
 * u's sign put back; NaN stays NaN). Tail through a zero-padded vector. */
static inline float32x4_t tanh4(float32x4_t u) {
    const float32x4_t one = vdupq_n_f32(1.0f), t = vabsq_f32(u);
    const float32x4_t e = exp_neg(vmulq_n_f32(t, -2.0f));
    float32x4_t r = vdivq_f32(vsubq_f32(one, e), vaddq_f32(one, e));
    const float32x4_t z = vmulq_f32(t, t);
    float32x4_t p = vdupq_n_f32(-1382.0f / 155925);
    p = vfmaq_f32(vdupq_n_f32(62.0f / 2835), p, z);
    p = vfmaq_f32(vdupq_n_f32(-17.0f / 315), p, z);
    p = vfmaq_f32(vdupq_n_f32(2.0f / 15), p, z);
    p = vfmaq_f32(vdupq_n_f32(-1.0f / 3), p, z);
    p = vfmaq_f32(one, p, z);
    p = vmulq_f32(p, t);
    r = vbslq_f32(vcltq_f32(t, vdupq_n_f32(0.25f)), p, r);
    const uint32x4_t sign = vandq_u32(vreinterpretq_u32_f32(u), vdupq_n_u32(0x80000000u));
    r = vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(r), sign));
    return vbslq_f32(vceqq_f32(u, u), r, u); /* NaN */
}

static void tanh_f32(int64_t n, const float *x, float *y, float a, float b) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vmulq_n_f32(tanh4(vmulq_n_f32(vld1q_f32(x + i), a)), b));
    if (i < n) {
        float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int64_t j = i; j < n; j++) t[j - i] = x[j];
        vst1q_f32(t, vmulq_n_f32(tanh4(vmulq_n_f32(vld1q_f32(t), a)), b));
        for (int64_t j = i; j < n; j++) y[j] = t[j - i];
    }
}

static float exp_sum_f32(int64_t n, float *x, float max) {
    const float32x4_t vm = vdupq_n_f32(max);
    float32x4_t acc = vdupq_n_f32(0.f);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t e = exp_shifted(vld1q_f32(x + i), vm);
        vst1q_f32(x + i, e);
        acc = vaddq_f32(acc, e);
    }
    if (i < n) { /* tail through a vector padded with -inf (gives 0) */
        float t[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
        for (int64_t j = i; j < n; j++) t[j - i] = x[j];
        const float32x4_t e = exp_shifted(vld1q_f32(t), vm);
        vst1q_f32(t, e);
        for (int64_t j = i; j < n; j++) x[j] = t[j - i];
        acc = vaddq_f32(acc, e);
    }
    return vaddvq_f32(acc);
}

/* ------------------------------------------------------------ activations */

/* Q8_0 activation quantization, bit-identical to the scalar reference: amax = max |x|
 * (NaN ignored, like fmaxf), d = amax/127, id = 1/d, q = rint(clamp(x*id, -127, 127))
 * with round-half-even (NaN -> -127, like fmaxf/fminf + lrintf). */
static void ff_q8_0(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;
    const float32x4_t lo = vdupq_n_f32(-127.f), hi = vdupq_n_f32(127.f);
    for (int64_t i = 0; i < n / 32; i++, x += 32) {
        float32x4_t v[8], m = vdupq_n_f32(0.f);
        for (int k = 0; k < 8; k++) {
            v[k] = vld1q_f32(x + 4 * k);
            m = vmaxnmq_f32(m, vabsq_f32(v[k]));
        }
        const float amax = vmaxnmvq_f32(m);
        const float d = amax / 127.f, id = d != 0.f ? 1.f / d : 0.f;
        y[i].d = loom_fp32_to_fp16(d);
        int16x8_t q16[4];
        for (int k = 0; k < 4; k++) {
            int32x4_t q0 = vcvtnq_s32_f32(vminnmq_f32(vmaxnmq_f32(vmulq_n_f32(v[2 * k], id), lo), hi));
            int32x4_t q1 = vcvtnq_s32_f32(vminnmq_f32(vmaxnmq_f32(vmulq_n_f32(v[2 * k + 1], id), lo), hi));
            q16[k] = vcombine_s16(vmovn_s32(q0), vmovn_s32(q1));
        }
        vst1q_s8(y[i].qs, vcombine_s8(vmovn_s16(q16[0]), vmovn_s16(q16[1])));
        vst1q_s8(y[i].qs + 16, vcombine_s8(vmovn_s16(q16[2]), vmovn_s16(q16[3])));
    }
}

/* Q8_K activation quantization, bit-identical to the scalar reference: vmax is the
 * first element of largest magnitude (NaN ignored), iscale = -127/vmax, q = rint(clamp(
 * iscale*x, -127, 127)) with round-half-even, d = 1/iscale; zero block when max |x| is
 * 0, NaN-only or infinite. */
static void ff_q8_K(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;
    const float32x4_t lo = vdupq_n_f32(-127.f), hi = vdupq_n_f32(127.f);
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        block_q8_K b;
        float32x4_t m = vdupq_n_f32(0.f);
        for (int l = 0; l < QK_K; l += 4) m = vmaxnmq_f32(m, vabsq_f32(vld1q_f32(x + l)));
        const float amax = vmaxnmvq_f32(m);
        if (!(amax > 0.f) || !(amax < INFINITY)) {
            memset(&b, 0, sizeof b);
        } else {
            float vmax = 0.f;
            for (int l = 0; l < QK_K; l++)
                if (fabsf(x[l]) == amax) {
                    vmax = x[l];
                    break;
                }
            const float iscale = -127.f / vmax;
            for (int g = 0; g < 16; g++) {
                int32x4_t q[4];
                for (int k = 0; k < 4; k++)
                    q[k] = vcvtnq_s32_f32(vminnmq_f32(vmaxnmq_f32(vmulq_n_f32(vld1q_f32(x + 16 * g + 4 * k), iscale), lo), hi));
                const int8x16_t q8 = vcombine_s8(vmovn_s16(vcombine_s16(vmovn_s32(q[0]), vmovn_s32(q[1]))),
                                                 vmovn_s16(vcombine_s16(vmovn_s32(q[2]), vmovn_s32(q[3]))));
                vst1q_s8(b.qs + 16 * g, q8);
                b.bsums[g] = vaddlvq_s8(q8);
            }
            b.d = 1.f / iscale;
        }
        memcpy(&y[i], &b, sizeof b);
    }
}

#include "cpu/kernels_neon_iq4.h"
#include "cpu/kernels_neon_mxfp4.h"

void NEON_FILL(loom_kernels *k) {
    neon_fill_iq4(k);
    loom_kernels_fill_fa_neon(k); /* flash-attention tiles (kernels_fa_neon.c) */
    loom_kernels_fill_gemm_packed_neon(k); /* F16/BF16 prompt products (kernels_gemm_packed_neon.c) */
    k->dot[LOOM_TYPE_F32].vec_dot = vd_f32;
    k->dot[LOOM_TYPE_F16].vec_dot = vd_f16;
    k->dot[LOOM_TYPE_BF16].vec_dot = vd_bf16;
    k->dot[LOOM_TYPE_Q4_0].vec_dot = vd_q4_0;
    k->dot[LOOM_TYPE_Q4_1].vec_dot = vd_q4_1;
    k->dot[LOOM_TYPE_Q5_0].vec_dot = vd_q5_0;
    k->dot[LOOM_TYPE_Q5_1].vec_dot = vd_q5_1;
    k->dot[LOOM_TYPE_Q8_0].vec_dot = vd_q8_0;
    k->dot[LOOM_TYPE_MXFP4].vec_dot = vd_mxfp4;
    k->dot[LOOM_TYPE_NVFP4].vec_dot = vd_nvfp4;
    k->dot[LOOM_TYPE_Q2_K].vec_dot = vd_q2_K;
    k->dot[LOOM_TYPE_Q3_K].vec_dot = vd_q3_K;
    k->dot[LOOM_TYPE_Q4_K].vec_dot = vd_q4_K;
    k->dot[LOOM_TYPE_Q5_K].vec_dot = vd_q5_K;
    k->dot[LOOM_TYPE_Q6_K].vec_dot = vd_q6_K;
    k->from_float[LOOM_TYPE_Q8_0] = ff_q8_0;
    k->from_float[LOOM_TYPE_Q8_K] = ff_q8_K;
    k->dot_f32 = dot_f32;
    k->axpy_f32 = axpy_f32;
    k->scale_f32 = scale_f32;
    k->max_f32 = max_f32;
    k->f16_to_f32 = f16_to_f32;
    k->exp_sum_f32 = exp_sum_f32;
    k->tanh_f32 = tanh_f32;
    k->gemm = neon_gemm; /* MXFP4 / NVFP4 tiles (kernels_neon_mxfp4.h), F16/BF16 tiles of 16+ columns; declines the rest */
}
