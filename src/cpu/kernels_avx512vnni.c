/* AVX-512 VNNI kernels (256-bit VL forms of vpdpbusd / vpdpwssd) and register-
 * blocked gemm tiles for Q4_0, Q8_0 and Q4_K. Per-block integer sums are exact;
 * each block is scaled once in float. Other types inherit the avx512/avx2 kernels. */
#include "cpu/kernels_internal.h"

#include <immintrin.h>

#define H2F(h) _cvtsh_ss(h)
#define ALWAYS_INLINE inline __attribute__((always_inline))

static ALWAYS_INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static ALWAYS_INLINE __m256i dot_s8(__m256i x, __m256i y) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

static ALWAYS_INLINE __m256i unpack_nibbles(const uint8_t *qs) {
    const __m128i t = _mm_loadu_si128((const __m128i *)qs);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(t, 4), t), _mm256_set1_epi8(0x0F));
}

static void vd_q4_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_0 *x = vx;
    const block_q8_0 *y = vy;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t nb = n / 32, i = 0;
    for (; i + 2 <= nb; i += 2) {
        __m256i q0 = _mm256_sub_epi8(unpack_nibbles(x[i].qs), _mm256_set1_epi8(8));
        __m256i q1 = _mm256_sub_epi8(unpack_nibbles(x[i + 1].qs), _mm256_set1_epi8(8));
        __m256i p0 = dot_s8(q0, _mm256_loadu_si256((const __m256i *)y[i].qs));
        __m256i p1 = dot_s8(q1, _mm256_loadu_si256((const __m256i *)y[i + 1].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(H2F(x[i].d) * H2F(y[i].d)), _mm256_cvtepi32_ps(p0), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(H2F(x[i + 1].d) * H2F(y[i + 1].d)), _mm256_cvtepi32_ps(p1), acc1);
    }
    for (; i < nb; i++) {
        __m256i q0 = _mm256_sub_epi8(unpack_nibbles(x[i].qs), _mm256_set1_epi8(8));
        __m256i p0 = dot_s8(q0, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(H2F(x[i].d) * H2F(y[i].d)), _mm256_cvtepi32_ps(p0), acc0);
    }
    *s = hsum8(_mm256_add_ps(acc0, acc1));
}

static void vd_q8_0(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q8_0 *x = vx;
    const block_q8_0 *y = vy;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t nb = n / 32, i = 0;
    for (; i + 2 <= nb; i += 2) {
        __m256i p0 = dot_s8(_mm256_loadu_si256((const __m256i *)x[i].qs), _mm256_loadu_si256((const __m256i *)y[i].qs));
        __m256i p1 = dot_s8(_mm256_loadu_si256((const __m256i *)x[i + 1].qs),
                            _mm256_loadu_si256((const __m256i *)y[i + 1].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(H2F(x[i].d) * H2F(y[i].d)), _mm256_cvtepi32_ps(p0), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(H2F(x[i + 1].d) * H2F(y[i + 1].d)), _mm256_cvtepi32_ps(p1), acc1);
    }
    for (; i < nb; i++) {
        __m256i p0 = dot_s8(_mm256_loadu_si256((const __m256i *)x[i].qs), _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(H2F(x[i].d) * H2F(y[i].d)), _mm256_cvtepi32_ps(p0), acc0);
    }
    *s = hsum8(_mm256_add_ps(acc0, acc1));
}

static void vd_mxfp4(int64_t n, float *s, const void *vx, const void *vy) {
    const block_mxfp4 *x = vx;
    const block_q8_0 *y = vy;
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)loom_mxfp4_kv));
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / 32; i++) {
        __m256i q = _mm256_shuffle_epi8(lut, unpack_nibbles(x[i].qs));
        __m256i p = dot_s8(q, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(loom_e8m0_half(x[i].e) * H2F(y[i].d)), _mm256_cvtepi32_ps(p), acc);
    }
    *s = hsum8(acc);
}

static void vd_q4_K(int64_t n, float *s, const void *vx, const void *vy) {
    const block_q4_K *x = vx;
    const block_q8_K *y = vy;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    float summf = 0.f;
    for (int64_t i = 0; i < n / QK_K; i++) {
        uint8_t sc[8], mn[8];
        for (int j = 0; j < 8; j++) loom_k4_scale_min(j, x[i].scales, &sc[j], &mn[j]);
        int summ = 0;
        for (int j = 0; j < 8; j++) summ += mn[j] * (y[i].bsums[2 * j] + y[i].bsums[2 * j + 1]);
        __m256i isum = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            __m256i q = _mm256_loadu_si256((const __m256i *)(x[i].qs + 32 * c));
            __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
            __m256i p0 = _mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c)));
            __m256i p1 = _mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(y[i].qs + 64 * c + 32)));
            isum = _mm256_dpwssd_epi32(isum, p0, _mm256_set1_epi16(sc[2 * c]));
            isum = _mm256_dpwssd_epi32(isum, p1, _mm256_set1_epi16(sc[2 * c + 1]));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(y[i].d * H2F(x[i].d)), _mm256_cvtepi32_ps(isum), acc);
        summf += (y[i].d * H2F(x[i].dmin)) * (float)summ;
    }
    *s = hsum8(acc) - summf;
}

/* ------------------------------------------------------------------ gemm tiles */

/* Q4_0 / Q8_0 weights x Q8_0 activations: RB rows x CB columns. Weights in
 * unsigned form u = q + off (off 8 for Q4_0, 128 for Q8_0): sum q*y = sum u*y - off*sum y. */
static ALWAYS_INLINE void tile_q8act(int RB, int CB, bool q4, int64_t nb, const uint8_t *w, size_t ws,
                                     const uint8_t *a, size_t as, float *c, size_t ldc, int64_t i, int64_t j) {
    __m256 acc[4][4];
    for (int r = 0; r < RB; r++)
        for (int cc = 0; cc < CB; cc++) acc[r][cc] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi8(1);
    for (int64_t b = 0; b < nb; b++) {
        __m256i xu[4];
        __m256 dx[4];
        for (int r = 0; r < RB; r++) {
            if (q4) {
                const block_q4_0 *xb = (const block_q4_0 *)(w + (size_t)(i + r) * ws) + b;
                xu[r] = unpack_nibbles(xb->qs);
                dx[r] = _mm256_set1_ps(H2F(xb->d));
            } else {
                const block_q8_0 *xb = (const block_q8_0 *)(w + (size_t)(i + r) * ws) + b;
                xu[r] = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)xb->qs), _mm256_set1_epi8((char)0x80));
                dx[r] = _mm256_set1_ps(H2F(xb->d));
            }
        }
        for (int cc = 0; cc < CB; cc++) {
            const block_q8_0 *yb = (const block_q8_0 *)(a + (size_t)(j + cc) * as) + b;
            const __m256i yv = _mm256_loadu_si256((const __m256i *)yb->qs);
            __m256i ys = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, yv);
            ys = q4 ? _mm256_slli_epi32(ys, 3) : _mm256_slli_epi32(ys, 7);
            const __m256 dy = _mm256_set1_ps(H2F(yb->d));
            for (int r = 0; r < RB; r++) {
                __m256i t = _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), xu[r], yv), ys);
                acc[r][cc] = _mm256_fmadd_ps(_mm256_mul_ps(dx[r], dy), _mm256_cvtepi32_ps(t), acc[r][cc]);
            }
        }
    }
    for (int r = 0; r < RB; r++)
        for (int cc = 0; cc < CB; cc++) c[(size_t)(j + cc) * ldc + (size_t)(i + r)] = hsum8(acc[r][cc]);
}

/* Q4_K x Q8_K: RB rows x CB columns. */
static ALWAYS_INLINE void tile_q4_K(int RB, int CB, int64_t nb, const uint8_t *w, size_t ws, const uint8_t *a,
                                    size_t as, float *c, size_t ldc, int64_t i, int64_t j) {
    __m256 acc[4][4];
    float summ[4][4];
    for (int r = 0; r < RB; r++)
        for (int cc = 0; cc < CB; cc++) {
            acc[r][cc] = _mm256_setzero_ps();
            summ[r][cc] = 0.f;
        }
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    for (int64_t b = 0; b < nb; b++) {
        const block_q4_K *xb[4];
        __m256i scv[4][8];
        uint8_t mn[4][8];
        for (int r = 0; r < RB; r++) {
            xb[r] = (const block_q4_K *)(w + (size_t)(i + r) * ws) + b;
            for (int jj = 0; jj < 8; jj++) {
                uint8_t sc;
                loom_k4_scale_min(jj, xb[r]->scales, &sc, &mn[r][jj]);
                scv[r][jj] = _mm256_set1_epi16(sc);
            }
        }
        __m256i isum[4][4];
        for (int r = 0; r < RB; r++)
            for (int cc = 0; cc < CB; cc++) isum[r][cc] = _mm256_setzero_si256();
        for (int q = 0; q < 4; q++) {
            __m256i lo[4], hi[4];
            for (int r = 0; r < RB; r++) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(xb[r]->qs + 32 * q));
                lo[r] = _mm256_and_si256(v, m4);
                hi[r] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            }
            for (int cc = 0; cc < CB; cc++) {
                const block_q8_K *yb = (const block_q8_K *)(a + (size_t)(j + cc) * as) + b;
                const __m256i a0 = _mm256_loadu_si256((const __m256i *)(yb->qs + 64 * q));
                const __m256i a1 = _mm256_loadu_si256((const __m256i *)(yb->qs + 64 * q + 32));
                for (int r = 0; r < RB; r++) {
                    isum[r][cc] = _mm256_dpwssd_epi32(isum[r][cc], _mm256_maddubs_epi16(lo[r], a0), scv[r][2 * q]);
                    isum[r][cc] = _mm256_dpwssd_epi32(isum[r][cc], _mm256_maddubs_epi16(hi[r], a1), scv[r][2 * q + 1]);
                }
            }
        }
        for (int cc = 0; cc < CB; cc++) {
            const block_q8_K *yb = (const block_q8_K *)(a + (size_t)(j + cc) * as) + b;
            int bs8[8];
            for (int jj = 0; jj < 8; jj++) bs8[jj] = yb->bsums[2 * jj] + yb->bsums[2 * jj + 1];
            for (int r = 0; r < RB; r++) {
                int sm = 0;
                for (int jj = 0; jj < 8; jj++) sm += mn[r][jj] * bs8[jj];
                acc[r][cc] = _mm256_fmadd_ps(_mm256_set1_ps(yb->d * H2F(xb[r]->d)), _mm256_cvtepi32_ps(isum[r][cc]),
                                             acc[r][cc]);
                summ[r][cc] += (yb->d * H2F(xb[r]->dmin)) * (float)sm;
            }
        }
    }
    for (int r = 0; r < RB; r++)
        for (int cc = 0; cc < CB; cc++) c[(size_t)(j + cc) * ldc + (size_t)(i + r)] = hsum8(acc[r][cc]) - summ[r][cc];
}

#define TILE_DISPATCH(CALL4x4, CALL)                                                                    \
    for (int64_t j = j0; j < j1; j += 4) {                                                              \
        int cb = (int)(j1 - j < 4 ? j1 - j : 4);                                                        \
        for (int64_t i = i0; i < i1; i += 4) {                                                          \
            int rb = (int)(i1 - i < 4 ? i1 - i : 4);                                                    \
            if (rb == 4 && cb == 4) CALL4x4;                                                            \
            else                                                                                        \
                for (int64_t ii = i; ii < i + rb; ii++)                                                 \
                    for (int64_t jj = j; jj < j + cb; jj++) CALL;                                       \
        }                                                                                               \
    }

static bool gemm_vnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                      size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const uint8_t *W = w, *A = a;
    switch (wt) {
    case LOOM_TYPE_Q4_0:
        TILE_DISPATCH(tile_q8act(4, 4, true, k / 32, W, ws, A, as, c, ldc, i, j),
                      tile_q8act(1, 1, true, k / 32, W, ws, A, as, c, ldc, ii, jj));
        return true;
    case LOOM_TYPE_Q8_0:
        TILE_DISPATCH(tile_q8act(4, 4, false, k / 32, W, ws, A, as, c, ldc, i, j),
                      tile_q8act(1, 1, false, k / 32, W, ws, A, as, c, ldc, ii, jj));
        return true;
    case LOOM_TYPE_Q4_K:
        for (int64_t j = j0; j < j1; j += 2) {
            int cb = (int)(j1 - j < 2 ? j1 - j : 2);
            for (int64_t i = i0; i < i1; i += 4) {
                int rb = (int)(i1 - i < 4 ? i1 - i : 4);
                if (rb == 4 && cb == 2) tile_q4_K(4, 2, k / QK_K, W, ws, A, as, c, ldc, i, j);
                else
                    for (int64_t ii = i; ii < i + rb; ii++)
                        for (int64_t jj = j; jj < j + cb; jj++) tile_q4_K(1, 1, k / QK_K, W, ws, A, as, c, ldc, ii, jj);
            }
        }
        return true;
    default: return false;
    }
}

void loom_kernels_fill_avx512vnni(loom_kernels *k) {
    k->dot[LOOM_TYPE_Q4_0].vec_dot = vd_q4_0;
    k->dot[LOOM_TYPE_Q8_0].vec_dot = vd_q8_0;
    k->dot[LOOM_TYPE_MXFP4].vec_dot = vd_mxfp4;
    k->dot[LOOM_TYPE_Q4_K].vec_dot = vd_q4_K;
    k->gemm = gemm_vnni;
}
