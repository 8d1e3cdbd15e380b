/* AVX2 + FMA + F16C kernels. Integer formats: signed int8 products through the
 * abs/sign trick (maddubs), exact int32 per block, then one float FMA per block. */
#include "cpu/kernels_internal.h"
#include "cpu/x86_fp4.h"

#include <immintrin.h>
#include <math.h>

#include "cpu/kernels_avx2_exp.h"

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* sum of signed x[i]*y[i] over 32 bytes, as 8 int32 lanes */
static inline __m256i dot_s8(__m256i x, __m256i y) {
    const __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* 16 packed nibbles -> 32 bytes: low nibbles (elements 0..15) then high (16..31) */
static inline __m256i unpack_nibbles(const uint8_t *qs) {
    const __m128i t = _mm_loadu_si128((const __m128i *)qs);
    const __m256i v = _mm256_set_m128i(_mm_srli_epi16(t, 4), t);
    return _mm256_and_si256(v, _mm256_set1_epi8(0x0F));
}

/* 32 bits -> 32 bytes of 0xFF where the bit is set */
static inline __m256i bits_to_bytes(uint32_t bits) {
    const __m256i shuf = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                          3, 3, 3, 3, 3, 3);
    __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), shuf);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    v = _mm256_and_si256(v, bit);
    return _mm256_cmpeq_epi8(v, bit);
}

#define H2F(h) _cvtsh_ss(h)

static void vd_q4_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 32; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        __m256i q = _mm256_sub_epi8(unpack_nibbles(x[i].qs), _mm256_set1_epi8(8));
        __m256i a = _mm256_loadu_si256((const __m256i *)y[i].qs);
        __m256 d = _mm256_set1_ps(H2F(x[i].d) * H2F(y[i].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_s8(q, a)), acc);
    }
    *s = hsum8(acc);
}

static void vd_q8_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q8_0 *x = vx;
    const block_q8_0 *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 32; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        __m256i q = _mm256_loadu_si256((const __m256i *)x[i].qs);
        __m256i a = _mm256_loadu_si256((const __m256i *)y[i].qs);
        __m256 d = _mm256_set1_ps(H2F(x[i].d) * H2F(y[i].d));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_s8(q, a)), acc);
    }
    *s = hsum8(acc);
}

static void vd_mxfp4(int64_t n, float *s, const void *vx, const void *vy) {
    const block_mxfp4 *x = vx;
    const block_q8_0 *y = vy;
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)loom_mxfp4_kv));
    /* two blocks per step into two accumulators (one FMA chain per block was latency-bound) */
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    const int64_t nb = n / 32;
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2) {
        __m256i q0 = _mm256_shuffle_epi8(lut, unpack_nibbles(x[i].qs));
        __m256i q1 = _mm256_shuffle_epi8(lut, unpack_nibbles(x[i + 1].qs));
        __m256i a0 = _mm256_loadu_si256((const __m256i *)y[i].qs);
        __m256i a1 = _mm256_loadu_si256((const __m256i *)y[i + 1].qs);
        __m256 d0 = _mm256_set1_ps(loom_e8m0_half(x[i].e) * H2F(y[i].d));
        __m256 d1 = _mm256_set1_ps(loom_e8m0_half(x[i + 1].e) * H2F(y[i + 1].d));
        acc0 = _mm256_fmadd_ps(d0, _mm256_cvtepi32_ps(dot_s8(q0, a0)), acc0);
        acc1 = _mm256_fmadd_ps(d1, _mm256_cvtepi32_ps(dot_s8(q1, a1)), acc1);
    }
    for (; i < nb; i++) {
        __m256i q = _mm256_shuffle_epi8(lut, unpack_nibbles(x[i].qs));
        __m256i a = _mm256_loadu_si256((const __m256i *)y[i].qs);
        __m256 d = _mm256_set1_ps(loom_e8m0_half(x[i].e) * H2F(y[i].d));
        acc0 = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(dot_s8(q, a)), acc0);
    }
    *s = hsum8(_mm256_add_ps(acc0, acc1));
}

/* NVFP4 x Q8_0: an NVFP4 block (64 values) spans two Q8_0 blocks. Each 16 bytes of
 * nibbles hold two 16-value sub-blocks (sub-block s: bytes 8s..8s+7, values 0-7 the low
 * nibbles, 8-15 the high ones), reordered to the Q8_0 block's value order; dot_s8 sums
 * sub-block 2h+0 into lanes 0-3 and 2h+1 into lanes 4-7, each lane group with its scale. */
static void vd_nvfp4(int64_t n, float *s, const void *vx, const void *vy) {
    const block_nvfp4 *x = vx;
    const block_q8_0 *y = vy;
    const __m128i lut = _mm_loadu_si128((const __m128i *)loom_mxfp4_kv);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_NVFP4; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        const block_q8_0 *yb = y + 2 * i;
        /* the four sub-block scales times their Q8_0 block's scale */
        const __m128 dy = _mm_set_ps(H2F(yb[1].d), H2F(yb[1].d), H2F(yb[0].d), H2F(yb[0].d));
        const __m128 sc = _mm_mul_ps(loom_ue4m3_half_x4(x[i].d), dy);
        const __m256i p0 = dot_s8(loom_nvfp4_half(x[i].qs, 0, lut), _mm256_loadu_si256((const __m256i *)yb[0].qs));
        const __m256i p1 = dot_s8(loom_nvfp4_half(x[i].qs, 1, lut), _mm256_loadu_si256((const __m256i *)yb[1].qs));
        acc0 = _mm256_fmadd_ps(loom_nvfp4_half_scales(sc, 0), _mm256_cvtepi32_ps(p0), acc0);
        acc1 = _mm256_fmadd_ps(loom_nvfp4_half_scales(sc, 1), _mm256_cvtepi32_ps(p1), acc1);
    }
    *s = hsum8(_mm256_add_ps(acc0, acc1));
}

/* Q1_0 x Q8_0: per 32-element Q8_0 block, the 32 sign bits as +1 / -1 bytes */
static void vd_q1_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q1_0 *x = vx;
    const block_q8_0 *y = vy;
    const __m256i two = _mm256_set1_epi8(2), one = _mm256_set1_epi8(1);
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK1_0; i++) {
        __m256 acc = _mm256_setzero_ps();
        for (int k = 0; k < 4; k++) {
            uint32_t bits;
            memcpy(&bits, x[i].qs + 4 * k, 4);
            const __m256i v = _mm256_sub_epi8(_mm256_and_si256(bits_to_bytes(bits), two), one); /* +1 / -1 */
            const __m256i a = _mm256_loadu_si256((const __m256i *)y[4 * i + k].qs);
            acc = _mm256_fmadd_ps(_mm256_set1_ps(H2F(y[4 * i + k].d)), _mm256_cvtepi32_ps(dot_s8(v, a)), acc);
        }
        sum += H2F(x[i].d) * hsum8(acc);
    }
    *s = sum;
}

/* Q2_0 x Q8_0: 8 code bytes per Q8_0 block; code c of element l (bits 2(l%4) of byte
 * l/4) through two bit-plane compares: c - 1 = -m0 - 2 m1 - 1 with m = 0 / -1 */
static void vd_q2_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q2_0 *x = vx;
    const block_q8_0 *y = vy;
    const __m256i rep = _mm256_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 6, 6,
                                         6, 6, 7, 7, 7, 7);
    const __m256i m0 = _mm256_set1_epi32(0x40100401), m1 = _mm256_set1_epi32((int)0x80200802u);
    const __m256i one = _mm256_set1_epi8(1);
    float sum = 0.f;
    for (int64_t i = 0; i < n / QK2_0; i++) {
        __m256 acc = _mm256_setzero_ps();
        for (int k = 0; k < 2; k++) {
            uint64_t q8;
            memcpy(&q8, x[i].qs + 8 * k, 8);
            const __m256i b = _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)q8), rep);
            const __m256i b0 = _mm256_cmpeq_epi8(_mm256_and_si256(b, m0), m0);
            const __m256i b1 = _mm256_cmpeq_epi8(_mm256_and_si256(b, m1), m1);
            const __m256i v = _mm256_sub_epi8(_mm256_sub_epi8(_mm256_sub_epi8(_mm256_setzero_si256(), b0),
                                                              _mm256_add_epi8(b1, b1)), one);
            const __m256i a = _mm256_loadu_si256((const __m256i *)y[2 * i + k].qs);
            acc = _mm256_fmadd_ps(_mm256_set1_ps(H2F(y[2 * i + k].d)), _mm256_cvtepi32_ps(dot_s8(v, a)), acc);
        }
        sum += H2F(x[i].d) * hsum8(acc);
    }
    *s = sum;
}

/* Q5_0: q - 16 = nibble + (fifth bit ? 0 : -16), signed; two blocks per step into two
 * accumulators with the weights prefetched a few blocks ahead (one chain per block
 * and no prefetch: 7 t/s on the 1.1B file against 13 at 2 threads). */
static inline __m256i q5_0_codes(const block_q5_0 *b) {
    uint32_t h;
    memcpy(&h, b->qh, 4);
    return _mm256_or_si256(unpack_nibbles(b->qs), _mm256_andnot_si256(bits_to_bytes(h), _mm256_set1_epi8((char)0xF0)));
}

static void vd_q5_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q5_0 *x = vx;
    const block_q8_0 *y = vy;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    const int64_t nb = n / 32;
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        const __m256i p0 = dot_s8(q5_0_codes(x + i), _mm256_loadu_si256((const __m256i *)y[i].qs));
        const __m256i p1 = dot_s8(q5_0_codes(x + i + 1), _mm256_loadu_si256((const __m256i *)y[i + 1].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(H2F(x[i].d) * H2F(y[i].d)), _mm256_cvtepi32_ps(p0), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(H2F(x[i + 1].d) * H2F(y[i + 1].d)), _mm256_cvtepi32_ps(p1), acc1);
    }
    for (; i < nb; i++)
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(H2F(x[i].d) * H2F(y[i].d)),
                               _mm256_cvtepi32_ps(dot_s8(q5_0_codes(x + i), _mm256_loadu_si256((const __m256i *)y[i].qs))),
                               acc0);
    *s = hsum8(_mm256_add_ps(acc0, acc1));
}

/* Q4_1 / Q5_1: codes 0..15 (0..31) unsigned against the signed activations in one
 * vpmaddubsw (pair sums <= 2 x 31 x 128), the mins through the Q8_1 block sums s.
 * Two blocks per step into two accumulators, the mins in a vector, the weights
 * prefetched a few blocks ahead: one chain per block, a scalar min sum per block and no
 * prefetch ran the 1.1B Q4_1 file at 7.2 t/s against 13.4 at 2 threads. */
static inline __m256i q5_hbits(const uint8_t *qh) {
    uint32_t h;
    memcpy(&h, qh, 4);
    return _mm256_and_si256(bits_to_bytes(h), _mm256_set1_epi8(0x10));
}

#define VD_X1_BODY(CODES)                                                                                           \
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), mn = _mm256_setzero_ps();                      \
    const int64_t nb = n / 32;                                                                                      \
    int64_t i = 0;                                                                                                  \
    for (; i + 2 <= nb; i += 2) {                                                                                   \
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);                                                    \
        const __m256i q0 = CODES(i), q1 = CODES(i + 1);                                                             \
        const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(q0, _mm256_loadu_si256((const __m256i *)y[i].qs)), \
                                             _mm256_set1_epi16(1));                                                 \
        const __m256i p1 = _mm256_madd_epi16(                                                                       \
            _mm256_maddubs_epi16(q1, _mm256_loadu_si256((const __m256i *)y[i + 1].qs)), _mm256_set1_epi16(1));      \
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(H2F(x[i].d) * H2F(y[i].d)), _mm256_cvtepi32_ps(p0), acc0);            \
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(H2F(x[i + 1].d) * H2F(y[i + 1].d)), _mm256_cvtepi32_ps(p1), acc1);    \
        mn = _mm256_add_ps(mn, _mm256_setr_ps(H2F(x[i].m) * H2F(y[i].s), H2F(x[i + 1].m) * H2F(y[i + 1].s), 0, 0, 0, \
                                              0, 0, 0));                                                            \
    }                                                                                                               \
    float summ = 0.f;                                                                                               \
    for (; i < nb; i++) {                                                                                           \
        const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(CODES(i), _mm256_loadu_si256((const __m256i *)y[i].qs)), \
                                             _mm256_set1_epi16(1));                                                 \
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(H2F(x[i].d) * H2F(y[i].d)), _mm256_cvtepi32_ps(p0), acc0);            \
        summ += H2F(x[i].m) * H2F(y[i].s);                                                                          \
    }                                                                                                               \
    *s = hsum8(_mm256_add_ps(acc0, acc1)) + (hsum8(mn) + summ)

static void vd_q4_1(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_1 *x = vx;
    const block_q8_1 *y = vy;
#define CODES(b) unpack_nibbles(x[b].qs)
    VD_X1_BODY(CODES);
#undef CODES
}

static void vd_q5_1(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q5_1 *x = vx;
    const block_q8_1 *y = vy;
#define CODES(b) _mm256_or_si256(unpack_nibbles(x[b].qs), q5_hbits(x[b].qh))
    VD_X1_BODY(CODES);
#undef CODES
}
#undef VD_X1_BODY

/* ------------------------------------------------------------------ K-quants */

static void vd_q4_K(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_K *x = vx;
    const block_q8_K *y = vy;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    float summf = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; j++) loom_k4_scale_min(j, x[i].scales, &sc[j], &mn[j]);
        int summ = 0;
        for (int j = 0; j < 8; j++) summ += mn[j] * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
        __m256i isum = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            __m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            __m256i a0 = _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c));
            __m256i a1 = _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c + 32));
            __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, a0), _mm256_set1_epi16(sc[2 * c]));
            __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, a1), _mm256_set1_epi16(sc[2 * c + 1]));
            isum = _mm256_add_epi32(isum, _mm256_add_epi32(p0, p1));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * H2F(x[i].d)), _mm256_cvtepi32_ps(isum), acc);
        summf += (y[i].d * H2F(x[i].dmin)) * (float)summ;
    }
    *s = hsum8(acc) - summf;
}

static void vd_q5_K(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q5_K *x = vx;
    const block_q8_K *y = vy;
    const __m256i m4 = _mm256_set1_epi8(0x0F), b16 = _mm256_set1_epi8(0x10);
    __m256 acc = _mm256_setzero_ps();
    float summf = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; j++) loom_k4_scale_min(j, x[i].scales, &sc[j], &mn[j]);
        int summ = 0;
        for (int j = 0; j < 8; j++) summ += mn[j] * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
        const __m256i qh = _mm256_loadu_si256((const __m256i *)x[i].qh);
        __m256i isum = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            __m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            /* bit 2c of qh[l] -> 0x10 */
            __m256i h0 = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * c), 4), b16);
            __m256i h1 = _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh, 2 * c + 1), 4), b16);
            __m256i lo = _mm256_or_si256(_mm256_and_si256(q, m4), h0);
            __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), h1);
            __m256i a0 = _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c));
            __m256i a1 = _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c + 32));
            __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, a0), _mm256_set1_epi16(sc[2 * c]));
            __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, a1), _mm256_set1_epi16(sc[2 * c + 1]));
            isum = _mm256_add_epi32(isum, _mm256_add_epi32(p0, p1));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * H2F(x[i].d)), _mm256_cvtepi32_ps(isum), acc);
        summf += (y[i].d * H2F(x[i].dmin)) * (float)summ;
    }
    *s = hsum8(acc) - summf;
}

/* int16 lanes 0..7 get scale a, 8..15 scale b (two groups of 16 elements) */
static inline __m256i scale_pair(int a, int b) {
    return _mm256_set_m128i(_mm_set1_epi16((short)b), _mm_set1_epi16((short)a));
}

static void vd_q6_K(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q6_K *x = vx;
    const block_q8_K *y = vy;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(0x03);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        int corr = 0; /* sum_g sc_g * bsum_g: the -32 offset */
        for (int g = 0; g < 16; g++) corr += x[i].scales[g] * y[i].bsums[g];
        __m256i isum = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = x[i].ql + 64 * h;
            const int8_t *sc = x[i].scales + 8 * h;
            const int8_t *a = y[i].qs + 128 * h;
            __m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
            __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            __m256i qh = _mm256_loadu_si256((const __m256i *)(x[i].qh + 32 * h));
            __m256i q1 = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(qh, m3), 4));
            __m256i q2 = _mm256_or_si256(_mm256_and_si256(l1, m4),
                                         _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2), m3), 4));
            __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                                         _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 4), m3), 4));
            __m256i q4 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                         _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 6), m3), 4));
            __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(q1, _mm256_loadu_si256((const __m256i *)a)),
                                           scale_pair(sc[0], sc[1]));
            __m256i p2 = _mm256_madd_epi16(_mm256_maddubs_epi16(q2, _mm256_loadu_si256((const __m256i *)(a + 32))),
                                           scale_pair(sc[2], sc[3]));
            __m256i p3 = _mm256_madd_epi16(_mm256_maddubs_epi16(q3, _mm256_loadu_si256((const __m256i *)(a + 64))),
                                           scale_pair(sc[4], sc[5]));
            __m256i p4 = _mm256_madd_epi16(_mm256_maddubs_epi16(q4, _mm256_loadu_si256((const __m256i *)(a + 96))),
                                           scale_pair(sc[6], sc[7]));
            isum = _mm256_add_epi32(isum, _mm256_add_epi32(_mm256_add_epi32(p1, p2), _mm256_add_epi32(p3, p4)));
        }
        isum = _mm256_sub_epi32(isum, _mm256_setr_epi32(32 * corr, 0, 0, 0, 0, 0, 0, 0));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * H2F(x[i].d)), _mm256_cvtepi32_ps(isum), acc);
    }
    *s = hsum8(acc);
}

/* ----------------------------------------------------------------- floats */

static void vd_f32(int64_t n, float *s, const void *vx, const void *vy) {
    const float *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
        a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);
    }
    float sum = hsum8(_mm256_add_ps(a0, a1));
    for (; i < n; i++) sum += x[i] * y[i];
    *s = sum;
}

static void vd_f16(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i))),
                             _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(y + i))), a0);
        a1 = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(x + i + 8))),
                             _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(y + i + 8))), a1);
    }
    float sum = hsum8(_mm256_add_ps(a0, a1));
    for (; i < n; i++) sum += H2F(x[i]) * H2F(y[i]);
    *s = sum;
}

static inline __m256 bf16x8(const uint16_t *p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)), 16));
}

static void vd_bf16(int64_t n, float *s, const void *vx, const void *vy) {
    const uint16_t *x = vx, *y = vy;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = _mm256_fmadd_ps(bf16x8(x + i), bf16x8(y + i), a0);
        a1 = _mm256_fmadd_ps(bf16x8(x + i + 8), bf16x8(y + i + 8), a1);
    }
    float sum = hsum8(_mm256_add_ps(a0, a1));
    for (; i < n; i++) sum += loom_bf16_to_fp32(x[i]) * loom_bf16_to_fp32(y[i]);
    *s = sum;
}

static float dot_f32(int64_t n, const float *x, const float *y) {
    float s;
    vd_f32(n, &s, x, y);
    return s;
}

static void axpy_f32(int64_t n, float a, const float *x, float *y) {
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i), _mm256_mul_ps(va, _mm256_loadu_ps(x + i))));
    for (; i < n; i++) y[i] += a * x[i];
}

static void scale_f32(int64_t n, float *x, float a) {
    const __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), va));
    for (; i < n; i++) x[i] *= a;
}

/* MAXPS(x, m) gives m where x is NaN: NaN values are skipped as in the reference */
static float max_f32(int64_t n, const float *x, float init) {
    __m256 m0 = _mm256_set1_ps(init), m1 = m0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
        m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
    }
    for (; i + 8 <= n; i += 8) m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
    float t[16], m = init;
    _mm256_storeu_ps(t, m0);
    _mm256_storeu_ps(t + 8, m1);
    for (int l = 0; l < 16; l++) m = t[l] > m ? t[l] : m;
    for (; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}

static bool gemm_avx2(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                      size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    return loom_gemm_float_local_avx2(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1) ||
           loom_gemm_mxfp4_avx2(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1) ||
           loom_gemm_iq_avx2(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1) ||
           loom_gemm_lg8_avx2(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
}

/* ---- vector exp users (kernels_avx2_exp.h); tails through an 8-float buffer */

/* x[i] = exp(x[i] - max), 0 where x[i] is -inf (even when max is -inf too) */
static inline __m256 exp8_shifted(__m256 x, __m256 vm) {
    const __m256 ninf = _mm256_cmp_ps(x, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ);
    return _mm256_andnot_ps(ninf, exp8_neg(_mm256_sub_ps(x, vm)));
}

static float exp_sum_f32(int64_t n, float *x, float max) {
    const __m256 vm = _mm256_set1_ps(max);
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 e = exp8_shifted(_mm256_loadu_ps(x + i), vm);
        _mm256_storeu_ps(x + i, e);
        acc = _mm256_add_ps(acc, e);
    }
    if (i < n) { /* padded with -inf: 0 */
        float t[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
        for (int64_t j = i; j < n; j++) t[j - i] = x[j];
        const __m256 e = exp8_shifted(_mm256_loadu_ps(t), vm);
        _mm256_storeu_ps(t, e);
        for (int64_t j = i; j < n; j++) x[j] = t[j - i];
        acc = _mm256_add_ps(acc, e);
    }
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* x / (1 + exp(a)) with a clamped to [EXP8_LO, EXP8_HI]; a above EXP8_HI gives exp = inf
 * (x / inf = -0 for very negative x, the limit); NaN x stays NaN. silu: a = -x; gelu:
 * a = -2k (x + 0.044715 x^3). */
static inline __m256 x_over_1_exp(__m256 xv, __m256 a) {
    const __m256 big = _mm256_cmp_ps(a, _mm256_set1_ps(EXP8_HI), _CMP_GT_OQ);
    a = _mm256_min_ps(_mm256_max_ps(a, _mm256_set1_ps(EXP8_LO)), _mm256_set1_ps(EXP8_HI));
    const __m256 e = _mm256_blendv_ps(exp8_clamped(a), _mm256_set1_ps(INFINITY), big);
    const __m256 v = _mm256_div_ps(xv, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    return _mm256_blendv_ps(v, xv, _mm256_cmp_ps(xv, xv, _CMP_UNORD_Q));
}

static inline __m256 silu8(__m256 xv) { return x_over_1_exp(xv, _mm256_sub_ps(_mm256_setzero_ps(), xv)); }

static inline __m256 gelu8(__m256 xv) {
    const __m256 c1 = _mm256_set1_ps(-2.0f * 0.7978845608028654f), c3 = _mm256_set1_ps(0.044715f);
    const __m256 x2 = _mm256_mul_ps(xv, xv);
    return x_over_1_exp(xv, _mm256_mul_ps(_mm256_mul_ps(c1, xv), _mm256_fmadd_ps(c3, x2, _mm256_set1_ps(1.0f))));
}

/* tanh: see kernels.h (as the AVX-512 level) */
static inline __m256 tanh8(__m256 u) {
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    const __m256 t = _mm256_andnot_ps(sign, u);
    const __m256 e = exp8_neg(_mm256_mul_ps(_mm256_set1_ps(-2.0f), t));
    __m256 r = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
    const __m256 z = _mm256_mul_ps(t, t);
    __m256 p = _mm256_set1_ps(-1382.0f / 155925);
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(62.0f / 2835));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-17.0f / 315));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(2.0f / 15));
    p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(-1.0f / 3));
    p = _mm256_fmadd_ps(p, z, one);
    p = _mm256_mul_ps(p, t);
    r = _mm256_blendv_ps(r, p, _mm256_cmp_ps(t, _mm256_set1_ps(0.25f), _CMP_LT_OQ));
    r = _mm256_or_ps(r, _mm256_and_ps(u, sign));
    return _mm256_blendv_ps(r, u, _mm256_cmp_ps(u, u, _CMP_UNORD_Q)); /* NaN */
}

#define ROW8(name, expr)                                                                  \
    static void name(int64_t n, const float *x, float *y) {                               \
        int64_t i = 0;                                                                    \
        for (; i + 8 <= n; i += 8) {                                                      \
            const __m256 v = _mm256_loadu_ps(x + i);                                      \
            _mm256_storeu_ps(y + i, expr);                                                \
        }                                                                                 \
        if (i < n) {                                                                      \
            float t[8] = {0};                                                             \
            for (int64_t j = i; j < n; j++) t[j - i] = x[j];                              \
            const __m256 v = _mm256_loadu_ps(t);                                          \
            _mm256_storeu_ps(t, expr);                                                    \
            for (int64_t j = i; j < n; j++) y[j] = t[j - i];                              \
        }                                                                                 \
    }
ROW8(silu_f32, silu8(v))
ROW8(gelu_f32, gelu8(v))

static void tanh_f32(int64_t n, const float *x, float *y, float a, float b) {
    const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(vb, tanh8(_mm256_mul_ps(va, _mm256_loadu_ps(x + i)))));
    if (i < n) {
        float t[8] = {0};
        for (int64_t j = i; j < n; j++) t[j - i] = x[j];
        _mm256_storeu_ps(t, _mm256_mul_ps(vb, tanh8(_mm256_mul_ps(va, _mm256_loadu_ps(t)))));
        for (int64_t j = i; j < n; j++) y[j] = t[j - i];
    }
}

void loom_kernels_fill_avx2(loom_kernels *k) {
    loom_kernels_fill_fa_avx2(k); /* flash-attention p.V (kernels_fa_avx2.c) */
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
    k->dot[LOOM_TYPE_Q1_0].vec_dot = vd_q1_0;
    k->dot[LOOM_TYPE_Q2_0].vec_dot = vd_q2_0;
    k->dot[LOOM_TYPE_Q4_K].vec_dot = vd_q4_K;
    k->dot[LOOM_TYPE_Q5_K].vec_dot = vd_q5_K;
    k->dot[LOOM_TYPE_Q6_K].vec_dot = vd_q6_K;
    k->dot_f32 = dot_f32;
    k->axpy_f32 = axpy_f32;
    k->scale_f32 = scale_f32;
    k->max_f32 = max_f32;
    k->exp_sum_f32 = exp_sum_f32;
    k->silu_f32 = silu_f32;
    k->gelu_f32 = gelu_f32;
    k->tanh_f32 = tanh_f32;
    /* Q2_K/Q3_K vec_dot and the Q8_0/Q8_1/Q8_K activation quantizers
     * (kernels_x86_kquant_avx2.c); the avx512 levels inherit them */
    loom_kernels_fill_x86_kquant_avx2(k);
    /* gemm_repacked for Q4_0/Q8_0 (kernels_repack_avx2.c); avx512 inherits it, the
     * VNNI level installs its own */
    loom_kernels_fill_repack_avx2(k);
    /* the IQ / TQ types x Q8_K (Q8_0 for IQ4_NL): kernels_iq4_avx2.c (IQ4_NL, IQ4_XS),
     * kernels_iq2_avx2.c (IQ2_XXS, IQ2_XS, IQ2_S), kernels_iq3_avx2.c (IQ3_XXS, IQ3_S),
     * kernels_iq1tq_avx2.c (IQ1_S, IQ1_M, TQ1_0, TQ2_0) */
    loom_kernels_fill_iq4_avx2(k);
    loom_kernels_fill_iq2_avx2(k);
    loom_kernels_fill_iq3_avx2(k);
    loom_kernels_fill_iq1tq_avx2(k);
    /* F16 / BF16 prompt tiles (kernels_gemm_packed_avx2.c), then MXFP4 gemm tiles
     * (kernels_mxfp4_avx2.c); the avx512 level chains the MXFP4 ones after its float
     * tiles, the VNNI level has its own */
    k->gemm = gemm_avx2;
    loom_kernels_fill_gemm_packed_avx2(k);
    /* Q5_0 / Q4_1 / Q5_1 prompts decode their blocks once per call (kernels_legacy8_avx2.c
     * and, from avx512vnni on, kernels_legacy_avx512vnni.c): 64 x 256 tiles (the levels
     * built from this table inherit it) */
    static const loom_type lg[] = {LOOM_TYPE_Q5_0, LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_1};
    for (int t = 0; t < 3; t++) {
        k->gemm_tile_rows[lg[t]] = 64;
        k->gemm_tile_cols[lg[t]] = 256;
    }
}
