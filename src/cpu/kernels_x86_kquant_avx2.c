/* AVX2 + FMA + F16C kernels for the low-bit K-quants (Q2_K, Q3_K against Q8_K
 * activations) and the int8 activation quantizers (Q8_0, Q8_1, Q8_K from_float).
 *
 * vec_dot: exact int32 sums inside each block (unsigned 2/3-bit codes times signed int8
 * activations through maddubs, then the per-16 scales through madd), one float FMA per
 * block. Every intermediate is exact for any activation bytes (-128 included): maddubs
 * pair sums are at most 2*7*128 = 1792, far from int16 saturation. Like the scalar Q2_K
 * reference (and the Q6_K kernels), the offset terms use the Q8_K bsums, so Q3_K equals
 * the scalar result when bsums match qs (always true for rows made by from_float).
 *
 * from_float: byte-identical to the scalar reference (src/quant/quantize.c) for every
 * input, NaN and +-Inf included. The scalar code takes amax with fmaxf (NaN ignored)
 * and maps each x*id through fmaxf(.,-127)/fminf(.,127)/lrintf (NaN -> -127); here
 * _mm256_max_ps(v, m) returns its second operand when v is NaN, so the same NaN-free
 * maximum and the same clamp come out, and cvtps_epi32 rounds like lrintf (MXCSR). */
#include "cpu/kernels_internal.h"

#include <immintrin.h>

#include "cpu/kernels_x86_q3k.h"
#include <math.h>

static inline float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline int hsum8_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtsi128_si32(s);
}

/* max of 8 lanes (none NaN) */
static inline float hmax8(__m256 m) {
    __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    return _mm_cvtss_f32(m4);
}

#define H2F(h) _cvtsh_ss(h)

/* ------------------------------------------------------- Q2_K and Q3_K */

/* Both formats: half h (128 elements) uses qs[32h..32h+31]; shift 2j (j = 0..3) gives
 * the codes of elements 128h+32j..+31, whose low 16 take scale 8h+2j and high 16 scale
 * 8h+2j+1. The loops are written out so every shift count is an immediate. */

#define AI static inline __attribute__((always_inline))

/* Scale pairs: sc16 holds the 8 int16 scales of one half in both lanes; shuffle control
 * j puts int16 element 2j in lane 0 and 2j+1 in lane 1 (bytes 4j,4j+1 / 4j+2,4j+3). */
AI __m256i pair_ctl(int j) {
    return _mm256_set_m128i(_mm_set1_epi16((short)(((4 * j + 3) << 8) | (4 * j + 2))),
                            _mm_set1_epi16((short)(((4 * j + 1) << 8) | (4 * j))));
}

/* int32 partial sums of sc * sum(u*a) for one 32-element run (u unsigned 0..7) */
AI __m256i step(__m256i u, const int8_t *a, __m256i sc16, __m256i ctl) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *)a)),
                             _mm256_shuffle_epi8(sc16, ctl));
}

AI __m256i bcast16(__m128i v8x8) { return _mm256_broadcastsi128_si256(v8x8); }

static void vd_q2_K(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q2_K *x = vx;
    const block_q8_K *y = vy;
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m256i c0 = pair_ctl(0), c1 = pair_ctl(1), c2 = pair_ctl(2), c3 = pair_ctl(3);
    __m256 acc = _mm256_setzero_ps(), accm = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        const __m128i sc = _mm_loadu_si128((const __m128i *)x[i].scales);
        /* min term: sum_g (scales[g] >> 4) * bsums[g], 8 exact int32 partial sums */
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), m4));
        const __m256i summ = _mm256_madd_epi16(mins, _mm256_loadu_si256((const __m256i *)y[i].bsums));
        const __m128i sl = _mm_and_si128(sc, m4);
        const __m256i s0 = bcast16(_mm_cvtepu8_epi16(sl)), s1 = bcast16(_mm_cvtepu8_epi16(_mm_srli_si128(sl, 8)));
        const __m256i q0 = _mm256_loadu_si256((const __m256i *)x[i].qs);
        const __m256i q1 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32));
        const int8_t *a = y[i].qs;
        __m256i t0 = step(_mm256_and_si256(q0, m3), a, s0, c0);
        __m256i t1 = step(_mm256_and_si256(_mm256_srli_epi16(q0, 2), m3), a + 32, s0, c1);
        t0 = _mm256_add_epi32(t0, step(_mm256_and_si256(_mm256_srli_epi16(q0, 4), m3), a + 64, s0, c2));
        t1 = _mm256_add_epi32(t1, step(_mm256_and_si256(_mm256_srli_epi16(q0, 6), m3), a + 96, s0, c3));
        t0 = _mm256_add_epi32(t0, step(_mm256_and_si256(q1, m3), a + 128, s1, c0));
        t1 = _mm256_add_epi32(t1, step(_mm256_and_si256(_mm256_srli_epi16(q1, 2), m3), a + 160, s1, c1));
        t0 = _mm256_add_epi32(t0, step(_mm256_and_si256(_mm256_srli_epi16(q1, 4), m3), a + 192, s1, c2));
        t1 = _mm256_add_epi32(t1, step(_mm256_and_si256(_mm256_srli_epi16(q1, 6), m3), a + 224, s1, c3));
        const __m256i isum = _mm256_add_epi32(t0, t1);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * H2F(x[i].d)), _mm256_cvtepi32_ps(isum), acc);
        accm = _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * H2F(x[i].dmin)), _mm256_cvtepi32_ps(summ), accm);
    }
    *s = hsum8(acc) - hsum8(accm);
}

/* u = low | hbit<<2 for hmask bit HB = 4h+j */
#define Q3U(q, SH, hm, HB)                                                                   \
    _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, SH), m3),                               \
                    _mm256_and_si256((HB) >= 2 ? _mm256_srli_epi16(hm, (HB) - 2) : _mm256_slli_epi16(hm, 2 - (HB)), m4b))

/* v = low - (hbit ? 0 : 4) = u - 4 with u = low | hbit<<2 in 0..7 (unsigned), so
 * sum_g sc_g * sum v*a = sum_g sc_g * sum u*a - 4 * sum_g sc_g * bsums[g]; the
 * correction uses the Q8_K block sums (blocks.h: bsums[g] = sum of qs[16g..16g+15]). */
static void vd_q3_K(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q3_K *x = vx;
    const block_q8_K *y = vy;
    const __m256i m3 = _mm256_set1_epi8(3), m4b = _mm256_set1_epi8(4);
    const __m256i c0 = pair_ctl(0), c1 = pair_ctl(1), c2 = pair_ctl(2), c3 = pair_ctl(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++) {
        LOOM_PF0((const char *)(x + i) + LOOM_VD_PF);
        const __m128i sc8 = loom_q3k_scales(x[i].scales);
        /* 8 int32 partial sums of sc_g * bsums[g], times 4 */
        const __m256i corr = _mm256_slli_epi32(
            _mm256_madd_epi16(_mm256_cvtepi8_epi16(sc8), _mm256_loadu_si256((const __m256i *)y[i].bsums)), 2);
        const __m256i s0 = bcast16(_mm_cvtepi8_epi16(sc8)), s1 = bcast16(_mm_cvtepi8_epi16(_mm_srli_si128(sc8, 8)));
        const __m256i hm = _mm256_loadu_si256((const __m256i *)x[i].hmask);
        const __m256i q0 = _mm256_loadu_si256((const __m256i *)x[i].qs);
        const __m256i q1 = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32));
        const int8_t *a = y[i].qs;
        __m256i t0 = step(Q3U(q0, 0, hm, 0), a, s0, c0);
        __m256i t1 = step(Q3U(q0, 2, hm, 1), a + 32, s0, c1);
        t0 = _mm256_add_epi32(t0, step(Q3U(q0, 4, hm, 2), a + 64, s0, c2));
        t1 = _mm256_add_epi32(t1, step(Q3U(q0, 6, hm, 3), a + 96, s0, c3));
        t0 = _mm256_add_epi32(t0, step(Q3U(q1, 0, hm, 4), a + 128, s1, c0));
        t1 = _mm256_add_epi32(t1, step(Q3U(q1, 2, hm, 5), a + 160, s1, c1));
        t0 = _mm256_add_epi32(t0, step(Q3U(q1, 4, hm, 6), a + 192, s1, c2));
        t1 = _mm256_add_epi32(t1, step(Q3U(q1, 6, hm, 7), a + 224, s1, c3));
        const __m256i isum = _mm256_sub_epi32(_mm256_add_epi32(t0, t1), corr);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * H2F(x[i].d)), _mm256_cvtepi32_ps(isum), acc);
    }
    *s = hsum8(acc);
}
#undef Q3U
#undef AI

/* ------------------------------------------------------------ activations */

/* |v| without touching NaN-ness */
static inline __m256 vabs(__m256 v) { return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF))); }

/* round(clamp(v * scale, -127, 127)) as int32, NaN -> -127 (fmaxf/fminf/lrintf) */
static inline __m256i q8_lane(__m256 v, __m256 scale) {
    __m256 t = _mm256_max_ps(_mm256_mul_ps(v, scale), _mm256_set1_ps(-127.f)); /* NaN -> -127 */
    t = _mm256_min_ps(t, _mm256_set1_ps(127.f));
    return _mm256_cvtps_epi32(t);
}

/* 4 x 8 int32 in [-127,127] -> 32 int8 in element order */
static inline __m256i pack32(const __m256i q[4]) {
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

/* One 32-element absmax block (scalar absmax8): qs out, returns the unrounded d and the
 * int32 partial sums of the codes in *qsum. */
static inline float q8_block32(const float *x, int8_t *qs, __m256i *qsum) {
    __m256 v[4], m = _mm256_setzero_ps();
    for (int k = 0; k < 4; k++) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        m = _mm256_max_ps(vabs(v[k]), m); /* NaN lane: keeps m */
    }
    const float amax = hmax8(m);
    const float d = amax / 127.f, id = d != 0.f ? 1.f / d : 0.f;
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int k = 0; k < 4; k++) q[k] = q8_lane(v[k], vid);
    _mm256_storeu_si256((__m256i *)qs, pack32(q));
    *qsum = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    return d;
}

static void ff_q8_0(const float *x, void *vy, int64_t n) {
    block_q8_0 *y = vy;
    for (int64_t i = 0; i < n / QK8_0; i++, x += QK8_0) {
        __m256i qsum;
        y[i].d = _cvtss_sh(q8_block32(x, y[i].qs, &qsum), _MM_FROUND_TO_NEAREST_INT);
    }
}

static void ff_q8_1(const float *x, void *vy, int64_t n) {
    block_q8_1 *y = vy;
    for (int64_t i = 0; i < n / QK8_1; i++, x += QK8_1) {
        __m256i qsum;
        const float d = q8_block32(x, y[i].qs, &qsum);
        y[i].d = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
        y[i].s = _cvtss_sh(d * (float)hsum8_i32(qsum), _MM_FROUND_TO_NEAREST_INT);
    }
}

/* Q8_K (scalar q_q8_K): vmax is the FIRST element of largest magnitude (NaN ignored),
 * iscale = -127/vmax, q = clamp(iscale*x); blocks with amax 0, NaN-only or infinite
 * are all zero (d = 0, bsums 0). */
static void ff_q8_K(const float *x, void *vy, int64_t n) {
    block_q8_K *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K) {
        __m256 m0 = _mm256_setzero_ps(), m1 = _mm256_setzero_ps();
        for (int k = 0; k < 32; k += 2) {
            m0 = _mm256_max_ps(vabs(_mm256_loadu_ps(x + 8 * k)), m0);
            m1 = _mm256_max_ps(vabs(_mm256_loadu_ps(x + 8 * k + 8)), m1);
        }
        const float amax = hmax8(_mm256_max_ps(m0, m1));
        if (!(amax > 0.f) || !isfinite(amax)) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const __m256 va = _mm256_set1_ps(amax);
        int idx = 0;
        for (int k = 0; k < 32; k++) {
            const int mk = _mm256_movemask_ps(_mm256_cmp_ps(vabs(_mm256_loadu_ps(x + 8 * k)), va, _CMP_EQ_OQ));
            if (mk) {
                idx = 8 * k + __builtin_ctz((unsigned)mk);
                break;
            }
        }
        const float iscale = -127.f / x[idx];
        const __m256 vs = _mm256_set1_ps(iscale);
        const __m256i ones = _mm256_set1_epi8(1);
        __m256i gs[8];
        for (int c = 0; c < 8; c++) {
            __m256i q[4];
            for (int k = 0; k < 4; k++) q[k] = q8_lane(_mm256_loadu_ps(x + 32 * c + 8 * k), vs);
            const __m256i p = pack32(q);
            _mm256_storeu_si256((__m256i *)(y[i].qs + 32 * c), p);
            /* 4-byte partial sums: int32 lanes 0..3 belong to group 2c, 4..7 to 2c+1 */
            gs[c] = _mm256_madd_epi16(_mm256_maddubs_epi16(ones, p), _mm256_set1_epi16(1));
        }
        /* hadd tree: lane 0 gets groups 2c (c = 0..3), lane 1 groups 2c+1 */
        const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
        __m256i r0 = _mm256_hadd_epi32(_mm256_hadd_epi32(gs[0], gs[1]), _mm256_hadd_epi32(gs[2], gs[3]));
        __m256i r1 = _mm256_hadd_epi32(_mm256_hadd_epi32(gs[4], gs[5]), _mm256_hadd_epi32(gs[6], gs[7]));
        r0 = _mm256_permutevar8x32_epi32(r0, perm); /* groups 0..7 */
        r1 = _mm256_permutevar8x32_epi32(r1, perm); /* groups 8..15 */
        const __m256i b16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(r0, r1), _MM_SHUFFLE(3, 1, 2, 0));
        _mm256_storeu_si256((__m256i *)y[i].bsums, b16);
        y[i].d = 1.f / iscale;
    }
}

void loom_kernels_fill_x86_kquant_avx2(loom_kernels *k) {
    k->dot[LOOM_TYPE_Q2_K].vec_dot = vd_q2_K;
    k->dot[LOOM_TYPE_Q3_K].vec_dot = vd_q3_K;
    k->from_float[LOOM_TYPE_Q8_0] = ff_q8_0;
    k->from_float[LOOM_TYPE_Q8_1] = ff_q8_1;
    k->from_float[LOOM_TYPE_Q8_K] = ff_q8_K;
}
