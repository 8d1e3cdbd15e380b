/* AVX-512 VNNI kernels (256-bit VL forms of vpdpbusd / vpdpwssd) and register-
 * blocked gemm tiles for Q4_0, Q8_0, MXFP4, Q4_K and Q6_K. Per-block integer sums are exact;
 * each block is scaled once in float. Other types inherit the avx512/avx2 kernels. */
#include "cpu/kernels_internal.h"

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#include "cpu/kernels_x86_q3k.h"

#define H2F(h) _cvtsh_ss(h)
#define ALWAYS_INLINE LOOM_ALWAYS_INLINE

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
    /* two blocks per step into two accumulators (one FMA chain per block was latency-bound) */
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    const int64_t nb = n / 32;
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2) {
        __m256i q0 = _mm256_shuffle_epi8(lut, unpack_nibbles(x[i].qs));
        __m256i q1 = _mm256_shuffle_epi8(lut, unpack_nibbles(x[i + 1].qs));
        __m256i p0 = dot_s8(q0, _mm256_loadu_si256((const __m256i *)y[i].qs));
        __m256i p1 = dot_s8(q1, _mm256_loadu_si256((const __m256i *)y[i + 1].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(loom_e8m0_half(x[i].e) * H2F(y[i].d)), _mm256_cvtepi32_ps(p0), acc0);
        acc1 = _mm256_fmadd_ps(_mm256_set1_ps(loom_e8m0_half(x[i + 1].e) * H2F(y[i + 1].d)), _mm256_cvtepi32_ps(p1),
                               acc1);
    }
    for (; i < nb; i++) {
        __m256i q = _mm256_shuffle_epi8(lut, unpack_nibbles(x[i].qs));
        __m256i p = dot_s8(q, _mm256_loadu_si256((const __m256i *)y[i].qs));
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(loom_e8m0_half(x[i].e) * H2F(y[i].d)), _mm256_cvtepi32_ps(p), acc0);
    }
    *s = hsum8(_mm256_add_ps(acc0, acc1));
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

/* Q4_0 / Q8_0 / MXFP4 weights x Q8_0 activations with 512-bit vectors: RB rows x CB
 * columns, two blocks per step (lanes 0-7 block b, 8-15 block b+1). Weights in unsigned
 * form u = q + off (off 8 for Q4_0, 128 for Q8_0, 12 for MXFP4, whose codes map through
 * the E2M1 table to the integers -12..12 in units of half the block scale; 16 for Q5_0,
 * whose fifth bits add 16 to the nibbles under a byte mask; 0 for Q4_1 / Q5_1, whose
 * block mins add m * s with the Q8_1 activation's s = dy * sum y): sum q*y =
 * sum u*y - off*sum y, where the -off*sum y term (per column and block) seeds the
 * vpdpbusd accumulator. The same arithmetic per element for every RB/CB, so decode
 * (CB 1) and prompt tiles agree. */
enum { TZ_Q8_0, TZ_Q4_0, TZ_MXFP4, TZ_Q5_0, TZ_Q4_1, TZ_Q5_1 };
/* the E2M1 codes plus 12 (0..24), for vpshufb */
static const int8_t k_mx_lut12[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};
/* 8 E8M0 bytes -> their scales 2^(e-128) (loom_e8m0_half, subnormals for e < 2) */
static ALWAYS_INLINE __m256 e8m0_half8(__m128i e8) {
    const __m256i e = _mm256_cvtepu8_epi32(e8);
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
    const __m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, sub, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e)));
}
/* Decode (1-column) tiles prefetch the weight rows PF_ROWS below the current ones
 * (the next 4-row tile) at the same column: rows are only a few KiB long, too short
 * for the hardware prefetcher to ramp up on each of the tile's row streams, so the
 * tile after this one is requested while this one computes (single thread, DRAM-
 * resident Q4_0 2048x5632: 7.7 -> 13 GB/s). Prefetching past the last row is harmless. */
#define PF_ROWS 4
static ALWAYS_INLINE void tile_zmm(int RB, int CB, int kind, int64_t nb, const uint8_t *w, size_t ws,
                                   const uint8_t *a, size_t as, float *c, size_t ldc, int64_t i, int64_t j) {
    __m512 acc[4][4];
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) acc[r][cc] = _mm512_setzero_ps();
    /* mn: Q4_1 / Q5_1 (a min per block, Q8_1 activations); hb: fifth bits; q4: nibbles */
    const bool mn = kind == TZ_Q4_1 || kind == TZ_Q5_1, hb = kind == TZ_Q5_0 || kind == TZ_Q5_1;
    const bool q4 = kind == TZ_Q4_0 || hb || mn, mx = kind == TZ_MXFP4;
    const size_t bsz = kind == TZ_Q4_0   ? sizeof(block_q4_0)
                       : kind == TZ_Q5_0 ? sizeof(block_q5_0)
                       : kind == TZ_Q4_1 ? sizeof(block_q4_1)
                       : kind == TZ_Q5_1 ? sizeof(block_q5_1)
                       : mx              ? sizeof(block_mxfp4)
                                         : sizeof(block_q8_0);
    /* byte offsets in a block: the nibbles, the fifth bits, the min */
    const size_t qo = kind == TZ_Q4_0 ? offsetof(block_q4_0, qs) : kind == TZ_Q5_0 ? offsetof(block_q5_0, qs)
                    : kind == TZ_Q4_1 ? offsetof(block_q4_1, qs) : offsetof(block_q5_1, qs);
    const size_t ho = kind == TZ_Q5_0 ? offsetof(block_q5_0, qh) : offsetof(block_q5_1, qh);
    const size_t mo = offsetof(block_q4_1, m);
    _Static_assert(offsetof(block_q4_1, m) == offsetof(block_q5_1, m), "min offset");
    /* activation blocks: Q8_1 (d, s, qs) for mn, else Q8_0 (d, qs) */
    const size_t absz = mn ? sizeof(block_q8_1) : sizeof(block_q8_0);
    const size_t aqo = mn ? offsetof(block_q8_1, qs) : offsetof(block_q8_0, qs);
    const char off = kind == TZ_Q4_0 ? 8 : kind == TZ_Q5_0 ? 16 : mn ? 0 : mx ? 12 : (char)0x80;
    const __m512i offv = _mm512_set1_epi8(off), m4 = _mm512_set1_epi8(0x0F);
    const __m512i dup = _mm512_set_epi64(3, 2, 3, 2, 1, 0, 1, 0);
    const __m512i lut12 = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)k_mx_lut12));
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        __m512i xu[4];
        __m512 dx[4];
        if (CB == 1) { /* decode: fetch the next tile's rows */
            LOOM_UNROLL
            for (int r = 0; r < RB; r++)
                _mm_prefetch((const char *)(w + (size_t)(i + r + PF_ROWS) * ws + (size_t)b * bsz), _MM_HINT_T0);
        }
        /* the RB x 2 block scales converted at once: [r0b0 r0b1 r1b0 r1b1 ...], then the
         * mins (Q4_1 / Q5_1) in lanes 8-15 */
        __m512 dxa;
        if (mx) {
            /* the exponent bytes gathered in a general register, not a stack array: 8
             * byte stores read back by one 16-byte load miss store forwarding, a stall per
             * step that held 1-column decode to ~55 % of the read bandwidth */
            uint64_t he = 0;
            LOOM_UNROLL
            for (int r = 0; r < RB; r++) {
                const uint8_t *rowb = w + (size_t)(i + r) * ws + (size_t)b * bsz;
                he |= (uint64_t)rowb[0] << (16 * r) | (uint64_t)rowb[bsz] << (16 * r + 8);
            }
            dxa = _mm512_castps256_ps512(e8m0_half8(_mm_cvtsi64_si128((long long)he)));
        } else {
            /* built in registers (vpinsrw), not through a stack array (store forwarding) */
            uint16_t hd[8] = {0}, hm[8] = {0};
            LOOM_UNROLL
            for (int r = 0; r < RB; r++) {
                const uint8_t *rowb = w + (size_t)(i + r) * ws + (size_t)b * bsz;
                memcpy(&hd[2 * r], rowb, 2);
                memcpy(&hd[2 * r + 1], rowb + bsz, 2);
                if (mn) {
                    memcpy(&hm[2 * r], rowb + mo, 2);
                    memcpy(&hm[2 * r + 1], rowb + bsz + mo, 2);
                }
            }
            const __m128i vd = _mm_set_epi16((short)hd[7], (short)hd[6], (short)hd[5], (short)hd[4], (short)hd[3],
                                             (short)hd[2], (short)hd[1], (short)hd[0]);
            const __m128i vm = mn ? _mm_set_epi16((short)hm[7], (short)hm[6], (short)hm[5], (short)hm[4],
                                                  (short)hm[3], (short)hm[2], (short)hm[1], (short)hm[0])
                                  : _mm_setzero_si128();
            dxa = _mm512_cvtph_ps(_mm256_set_m128i(vm, vd));
        }
        LOOM_UNROLL
        for (int r = 0; r < RB; r++) {
            const uint8_t *rowb = w + (size_t)(i + r) * ws + (size_t)b * bsz;
            if (mx) {
                const block_mxfp4 *xb = (const block_mxfp4 *)rowb;
                const __m256i t = _mm256_loadu2_m128i((const __m128i *)xb[1].qs, (const __m128i *)xb[0].qs);
                __m512i u = _mm512_permutexvar_epi64(dup, _mm512_castsi256_si512(t));
                u = _mm512_mask_srli_epi16(u, (__mmask32)0xFF00FF00u, u, 4);
                xu[r] = _mm512_shuffle_epi8(lut12, _mm512_and_si512(u, m4));
            } else if (q4) {
                const __m256i t = _mm256_loadu2_m128i((const __m128i *)(rowb + bsz + qo), (const __m128i *)(rowb + qo));
                __m512i u = _mm512_permutexvar_epi64(dup, _mm512_castsi256_si512(t));
                u = _mm512_and_si512(_mm512_mask_srli_epi16(u, (__mmask32)0xFF00FF00u, u, 4), m4);
                if (hb) { /* + 16 where the fifth bit is set */
                    uint32_t h0, h1;
                    memcpy(&h0, rowb + ho, 4);
                    memcpy(&h1, rowb + bsz + ho, 4);
                    u = _mm512_mask_add_epi8(u, (__mmask64)h0 | (__mmask64)h1 << 32, u, _mm512_set1_epi8(16));
                }
                xu[r] = u;
            } else {
                const block_q8_0 *xb = (const block_q8_0 *)rowb;
                __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)xb[0].qs)),
                                               _mm256_loadu_si256((const __m256i *)xb[1].qs), 1);
                xu[r] = _mm512_xor_si512(u, offv);
            }
            dx[r] = _mm512_permutexvar_ps(_mm512_set_epi32(2 * r + 1, 2 * r + 1, 2 * r + 1, 2 * r + 1, 2 * r + 1,
                                                           2 * r + 1, 2 * r + 1, 2 * r + 1, 2 * r, 2 * r, 2 * r,
                                                           2 * r, 2 * r, 2 * r, 2 * r, 2 * r),
                                          dxa);
        }
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            const uint8_t *yb = a + (size_t)(j + cc) * as + (size_t)b * absz;
            const __m512i yv = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(yb + aqo))),
                                                  _mm256_loadu_si256((const __m256i *)(yb + absz + aqo)), 1);
            const __m512i nys = mn ? _mm512_setzero_si512()
                                   : _mm512_sub_epi32(_mm512_setzero_si512(),
                                                      _mm512_dpbusd_epi32(_mm512_setzero_si512(), offv, yv));
            uint16_t yd0, yd1;
            memcpy(&yd0, yb, 2);
            memcpy(&yd1, yb + absz, 2);
            const __m512 dy = _mm512_mask_broadcastss_ps(_mm512_set1_ps(H2F(yd0)), 0xFF00, _mm_set_ss(H2F(yd1)));
            __m512 sy = _mm512_setzero_ps();
            if (mn) { /* s / 8 per lane: the 8 lanes of a block add up to m * s */
                uint16_t s0, s1;
                memcpy(&s0, yb + offsetof(block_q8_1, s), 2);
                memcpy(&s1, yb + absz + offsetof(block_q8_1, s), 2);
                sy = _mm512_mask_broadcastss_ps(_mm512_set1_ps(0.125f * H2F(s0)), 0xFF00, _mm_set_ss(0.125f * H2F(s1)));
            }
            LOOM_UNROLL
            for (int r = 0; r < RB; r++) {
                const __m512i t = _mm512_dpbusd_epi32(nys, xu[r], yv);
                acc[r][cc] = _mm512_fmadd_ps(_mm512_mul_ps(dx[r], dy), _mm512_cvtepi32_ps(t), acc[r][cc]);
                if (mn) {
                    const __m512 mr = _mm512_permutexvar_ps(
                        _mm512_set_epi32(9 + 2 * r, 9 + 2 * r, 9 + 2 * r, 9 + 2 * r, 9 + 2 * r, 9 + 2 * r, 9 + 2 * r,
                                         9 + 2 * r, 8 + 2 * r, 8 + 2 * r, 8 + 2 * r, 8 + 2 * r, 8 + 2 * r, 8 + 2 * r,
                                         8 + 2 * r, 8 + 2 * r),
                        dxa);
                    acc[r][cc] = _mm512_fmadd_ps(mr, sy, acc[r][cc]);
                }
            }
        }
    }
    float tail[4][4];
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) tail[r][cc] = 0.f;
    if (b < nb) { /* odd block count: the last block with 256-bit vectors */
        const __m256i offh = _mm256_set1_epi8(off);
        LOOM_UNROLL
        for (int r = 0; r < RB; r++) {
            const uint8_t *rowb = w + (size_t)(i + r) * ws + (size_t)b * bsz;
            __m256i xu;
            float dxs, mns = 0.f;
            if (mx) {
                const block_mxfp4 *xb = (const block_mxfp4 *)rowb;
                xu = _mm256_shuffle_epi8(_mm512_castsi512_si256(lut12), unpack_nibbles(xb->qs));
                dxs = loom_e8m0_half(xb->e);
            } else {
                uint16_t hd;
                memcpy(&hd, rowb, 2);
                dxs = H2F(hd);
                if (q4) {
                    xu = unpack_nibbles(rowb + qo);
                    if (hb) {
                        uint32_t h;
                        memcpy(&h, rowb + ho, 4);
                        xu = _mm256_mask_add_epi8(xu, (__mmask32)h, xu, _mm256_set1_epi8(16));
                    }
                    if (mn) {
                        memcpy(&hd, rowb + mo, 2);
                        mns = H2F(hd);
                    }
                } else {
                    xu = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)((const block_q8_0 *)rowb)->qs), offh);
                }
            }
            LOOM_UNROLL
            for (int cc = 0; cc < CB; cc++) {
                const uint8_t *yb = a + (size_t)(j + cc) * as + (size_t)b * absz;
                const __m256i yv = _mm256_loadu_si256((const __m256i *)(yb + aqo));
                const __m256i nys = _mm256_sub_epi32(_mm256_setzero_si256(),
                                                     _mm256_dpbusd_epi32(_mm256_setzero_si256(), offh, yv));
                const __m256i t = _mm256_dpbusd_epi32(nys, xu, yv);
                uint16_t yd;
                memcpy(&yd, yb, 2);
                tail[r][cc] = dxs * H2F(yd) * hsum8(_mm256_cvtepi32_ps(t));
                if (mn) {
                    memcpy(&yd, yb + offsetof(block_q8_1, s), 2);
                    tail[r][cc] += mns * H2F(yd);
                }
            }
        }
    }
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++)
            c[(size_t)(j + cc) * ldc + (size_t)(i + r)] = _mm512_reduce_add_ps(acc[r][cc]) + tail[r][cc];
}

/* The 8 scales (bytes 0-7) and 8 mins (bytes 8-15) of a Q4_K block from its 12 packed
 * bytes, all at once (same values as loom_k4_scale_min for j = 0..7). */
static ALWAYS_INLINE void k4_unpack(const uint8_t *q, uint32_t out[4]) {
    uint32_t v[3];
    memcpy(v, q, 12);
    const uint32_t m6 = 0x3f3f3f3fu, m4 = 0x0f0f0f0fu, m2 = 0x03030303u;
    out[0] = v[0] & m6;                                          /* sc 0-3: q[0-3] & 63 */
    out[1] = (v[2] & m4) | (((v[0] >> 6) & m2) << 4);            /* sc 4-7 */
    out[2] = v[1] & m6;                                          /* m 0-3: q[4-7] & 63 */
    out[3] = ((v[2] >> 4) & m4) | (((v[1] >> 6) & m2) << 4);     /* m 4-7 */
}

/* Q4_K / Q5_K x Q8_K: RB rows x CB columns. Sub-block j of 32 values uses scale sc_j
 * (vpdpwssd on the vpmaddubsw pairs) and min m_j (subtracted as d_y * dmin * sum_j m_j *
 * bsum_j). Q5_K (q5) adds bit j of qh[l] as bit 4 of element l of sub-block j (codes
 * 0..31: vpmaddubsw pairs <= 2 * 31 * 128, exact); its d, dmin, scales come first in
 * the block as in Q4_K, then qh[32], then qs. Used by the GGUF layout (MoE experts, and
 * any matrix the engine does not repack): Q5_K had only vec_dot per element here. */
static ALWAYS_INLINE void tile_q45_K(int RB, int CB, bool q5, int64_t nb, const uint8_t *w, size_t ws,
                                     const uint8_t *a, size_t as, float *c, size_t ldc, int64_t i, int64_t j) {
    __m256 acc[4][4];
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) acc[r][cc] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones16 = _mm256_set1_epi16(1), b16 = _mm256_set1_epi8(0x10);
    const size_t bsz = q5 ? sizeof(block_q5_K) : sizeof(block_q4_K);
    for (int64_t b = 0; b < nb; b++) {
        const block_q4_K *xb[4]; /* d, dmin, scales only: the same offsets in block_q5_K */
        const uint8_t *xq[4];    /* qs */
        __m256i qh[4];
        __m256i sc16[4], mn32[4];
        if (CB == 1) {
            LOOM_UNROLL
            for (int r = 0; r < RB; r++) {
                const char *pf = (const char *)(w + (size_t)(i + r + PF_ROWS) * ws + (size_t)b * bsz);
                _mm_prefetch(pf, _MM_HINT_T0);
                _mm_prefetch(pf + 64, _MM_HINT_T0);
                _mm_prefetch(pf + 128, _MM_HINT_T0);
                if (q5) _mm_prefetch(pf + 175, _MM_HINT_T0);
            }
        }
        LOOM_UNROLL
        for (int r = 0; r < RB; r++) {
            const uint8_t *blk = w + (size_t)(i + r) * ws + (size_t)b * bsz;
            xb[r] = (const block_q4_K *)blk;
            xq[r] = q5 ? ((const block_q5_K *)blk)->qs : xb[r]->qs;
            if (q5) qh[r] = _mm256_loadu_si256((const __m256i *)((const block_q5_K *)blk)->qh);
            uint32_t u[4];
            k4_unpack(xb[r]->scales, u);
            const __m128i v = _mm_loadu_si128((const __m128i *)u);
            sc16[r] = _mm256_cvtepu8_epi16(v);                        /* lanes 0-7: scales */
            mn32[r] = _mm256_cvtepu8_epi32(_mm_srli_si128(v, 8));     /* 8 mins */
        }
        __m256i isum[4][4];
        LOOM_UNROLL
        for (int r = 0; r < RB; r++)
            LOOM_UNROLL
            for (int cc = 0; cc < CB; cc++) isum[r][cc] = _mm256_setzero_si256();
        LOOM_UNROLL
        for (int q = 0; q < 4; q++) {
            __m256i lo[4], hi[4], s0[4], s1[4];
            LOOM_UNROLL
            for (int r = 0; r < RB; r++) {
                __m256i v = _mm256_loadu_si256((const __m256i *)(xq[r] + 32 * q));
                lo[r] = _mm256_and_si256(v, m4);
                hi[r] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
                if (q5) { /* bits 2q and 2q + 1 of qh[l] -> 0x10 */
                    lo[r] = _mm256_or_si256(lo[r], _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh[r], 2 * q), 4), b16));
                    hi[r] = _mm256_or_si256(hi[r],
                                            _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(qh[r], 2 * q + 1), 4), b16));
                }
                s0[r] = _mm256_permutexvar_epi16(_mm256_set1_epi16((short)(2 * q)), sc16[r]);
                s1[r] = _mm256_permutexvar_epi16(_mm256_set1_epi16((short)(2 * q + 1)), sc16[r]);
            }
            LOOM_UNROLL
            for (int cc = 0; cc < CB; cc++) {
                const block_q8_K *yb = (const block_q8_K *)(a + (size_t)(j + cc) * as) + b;
                const __m256i a0 = _mm256_loadu_si256((const __m256i *)(yb->qs + 64 * q));
                const __m256i a1 = _mm256_loadu_si256((const __m256i *)(yb->qs + 64 * q + 32));
                LOOM_UNROLL
                for (int r = 0; r < RB; r++) {
                    isum[r][cc] = _mm256_dpwssd_epi32(isum[r][cc], _mm256_maddubs_epi16(lo[r], a0), s0[r]);
                    isum[r][cc] = _mm256_dpwssd_epi32(isum[r][cc], _mm256_maddubs_epi16(hi[r], a1), s1[r]);
                }
            }
        }
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            const block_q8_K *yb = (const block_q8_K *)(a + (size_t)(j + cc) * as) + b;
            /* sums of the 8 sub-blocks of 32 activations */
            const __m256i bs8 = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)yb->bsums), ones16);
            LOOM_UNROLL
            for (int r = 0; r < RB; r++) {
                const __m256i msum = _mm256_mullo_epi32(mn32[r], bs8);
                acc[r][cc] = _mm256_fmadd_ps(_mm256_set1_ps(yb->d * H2F(xb[r]->d)), _mm256_cvtepi32_ps(isum[r][cc]),
                                             acc[r][cc]);
                acc[r][cc] = _mm256_fnmadd_ps(_mm256_set1_ps(yb->d * H2F(xb[r]->dmin)), _mm256_cvtepi32_ps(msum),
                                              acc[r][cc]);
            }
        }
    }
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) c[(size_t)(j + cc) * ldc + (size_t)(i + r)] = hsum8(acc[r][cc]);
}

/* ------------------------------------------------ Q4_K prompt path: rows in lanes
 *
 * tile_q45_K keeps the 256 values of a block in the vector lanes, so every 32-value
 * sub-block needs its own scale multiply per 64 products (vpmaddubsw + vpdpwssd) and
 * every (row, column) pair its own float epilogue and final horizontal sum. For many
 * columns the weights are instead transposed once per call into "rows in lanes" form
 * and multiplied column by column with broadcast activations (outer product):
 *   - 8 rows per zmm, lane (r, h) = 4 unsigned codes of row r (positions 8k+4h..+3 of
 *     sub-block j); the activation operand is the 8 bytes y[32j+8k..+7] broadcast, so
 *     one vpdpbusd does 64 exact u8 x s8 products for 8 rows of one sub-block;
 *   - 4 vpdpbusd cover a sub-block (16 products per lane, |sum| <= 16*15*128 < 2^15),
 *     so the lane sum fits an int16 and one vpdpwssd with the scale (int32 lane = sc,
 *     high half 0) scales and accumulates it exactly: 5 instructions per 256 products;
 *   - mins: lane (r, h) holds the int16 pair m_j, m_j+1 (j = 4k+2h) and the broadcast
 *     qword of 4 int16 sub-block activation sums bsum32 (exact: |.| <= 32*128), so two
 *     vpdpwssd give sum_j m_j * bsum32_j per block;
 *   - per block and (8 rows, column): (S*d - Mn*dmin) * d_y in float, 16 lanes at once;
 *     rows are summed over h and stored 16 (8) consecutive floats at a time at the end.
 * The transposed weights (q4k_pack, 3.5 KiB per block for 16 rows; nibbles are split
 * in the tile, with and/shift off the multiply ports, which halves the pack stores) are
 * built for Q4K_KC blocks at a time, stay in L1 and are reused by every column tile of
 * the call; the partial sums of each chunk are added to c. Every output element gets
 * the same arithmetic whatever its position in the row / column tiling (so results do
 * not depend on how the caller splits the work). Measured on Zen 5 (1 thread, 4096 x
 * 4096 x 512): ~50% of the vpdpbusd peak vs ~13% for tile_q45_K; 2 to 4 columns per
 * call are faster here too when compute-bound, but with 2 DRAM-bound columns
 * tile_q45_K streams the weights faster (fewer concurrent row streams), hence
 * Q4K_MIN_COLS. */
#define Q4K_KC 4       /* blocks per transposed chunk */
#define Q4K_CB 6       /* columns per register tile (2 row vectors x 6 x 2 accumulators) */
#define Q4K_MIN_COLS 3 /* fewer columns per call: tile_q45_K (see gemm_vnni) */

typedef struct {
    __m512i w[4][4][2]; /* [chunk q][k][row vector]: code pairs (sub-blocks 2q, 2q+1) */
    __m512i sc[8][2];   /* [j][rv]: lane (r, h) = scale of sub-block j */
    __m512i mn[2][2];   /* [k][rv]: lane (r, h) = m_{4k+2h} | m_{4k+2h+1} << 16 */
    __m512 d[2], dmin[2];
} q4k_pack;

static const block_q4_K q4k_zero_block; /* stands in for rows past the range */

/* Transposes one block of 8 rows (xb) into row vector rv of p. Per 32-byte chunk q:
 * rows paired in 256-bit halves ([R0|R2], [R1|R3], [R4|R6], [R5|R7]), unpacked by
 * qword and regrouped by 128-bit lane, giving V_k = qword k of rows 0..7 in order;
 * low nibbles are sub-block 2q, high nibbles sub-block 2q+1. */
static ALWAYS_INLINE void q4k_pack_rows(q4k_pack *p, int rv, const block_q4_K *const xb[8]) {
    LOOM_UNROLL
    for (int q = 0; q < 4; q++) {
#define Q4K_LD2(x, y)                                                                                    \
    _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(xb[x]->qs + 32 * q))), \
                       _mm256_loadu_si256((const __m256i *)(xb[y]->qs + 32 * q)), 1)
        const __m512i z0 = Q4K_LD2(0, 2), z1 = Q4K_LD2(1, 3), z2 = Q4K_LD2(4, 6), z3 = Q4K_LD2(5, 7);
#undef Q4K_LD2
        const __m512i lo0 = _mm512_unpacklo_epi64(z0, z1), lo1 = _mm512_unpacklo_epi64(z2, z3);
        const __m512i hi0 = _mm512_unpackhi_epi64(z0, z1), hi1 = _mm512_unpackhi_epi64(z2, z3);
        __m512i v[4];
        v[0] = _mm512_shuffle_i64x2(lo0, lo1, 0x88);
        v[1] = _mm512_shuffle_i64x2(hi0, hi1, 0x88);
        v[2] = _mm512_shuffle_i64x2(lo0, lo1, 0xDD);
        v[3] = _mm512_shuffle_i64x2(hi0, hi1, 0xDD);
        LOOM_UNROLL
        for (int k = 0; k < 4; k++) p->w[q][k][rv] = v[k];
    }
    /* scales and mins (k4_unpack in vector form): the first 16 bytes of each block,
     * [d|dmin, v0, v1, v2] as dwords, one row per 128-bit lane (rows 0-3 in ha, 4-7 in hb):
     *   sc0-3 = v0 & 0x3f..           sc4-7 = (v2 & 0x0f..) | ((v0 >> 6) & 0x03..) << 4
     *   m0-3  = v1 & 0x3f..           m4-7  = ((v2 >> 4) & 0x0f..) | ((v1 >> 6) & 0x03..) << 4 */
#define Q4K_LD4(x0, x1, x2, x3)                                                                          \
    _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu2_m128i((const __m128i *)xb[x1], (const __m128i *)xb[x0])), \
                       _mm256_loadu2_m128i((const __m128i *)xb[x3], (const __m128i *)xb[x2]), 1)
    const __m512i ha = Q4K_LD4(0, 1, 2, 3), hb = Q4K_LD4(4, 5, 6, 7);
#undef Q4K_LD4
    const __m512i shv = _mm512_set_epi32(4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0);
    const __m512i mlo = _mm512_set4_epi32(0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f);
    const __m512i mhi = _mm512_set4_epi32(0x03030303, 0, 0x03030303, 0);
    __m512i o[2];
    LOOM_UNROLL
    for (int x = 0; x < 2; x++) {
        const __m512i h = x ? hb : ha;
        const __m512i lo = _mm512_and_si512(_mm512_srlv_epi32(_mm512_shuffle_epi32(h, (_MM_PERM_ENUM)0xED), shv), mlo);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi32(_mm512_shuffle_epi32(h, (_MM_PERM_ENUM)0xA5), 6), mhi);
        o[x] = _mm512_or_si512(lo, _mm512_slli_epi32(hi, 4)); /* per row: sc0..7, m0..7 */
    }
    /* word tables [t][j], t = table slot of row r: 0 2 4 6 1 3 5 7 (unpack order) */
    const __m512i sct = _mm512_unpacklo_epi64(o[0], o[1]), mnt = _mm512_unpackhi_epi64(o[0], o[1]);
    const __m512i s0 = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(sct));
    const __m512i s1 = _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(sct, 1));
    const __m512i n0 = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(mnt));
    const __m512i n1 = _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(mnt, 1));
    /* dword lane L = (r, h): low word <- word 8t(r) (+ j); words <- 8t(r) + 2h, +1 (+ 4k) */
    const __m512i bsc = _mm512_set_epi32(56, 56, 40, 40, 24, 24, 8, 8, 48, 48, 32, 32, 16, 16, 0, 0);
    const __m512i bmn = _mm512_set_epi32(0x3b003a, 0x390038, 0x2b002a, 0x290028, 0x1b001a, 0x190018, 0x0b000a,
                                         0x090008, 0x330032, 0x310030, 0x230022, 0x210020, 0x130012, 0x110010,
                                         0x030002, 0x010000);
    LOOM_UNROLL
    for (int j = 0; j < 8; j++)
        p->sc[j][rv] = _mm512_maskz_permutex2var_epi16((__mmask32)0x55555555u, s0,
                                                       _mm512_add_epi16(bsc, _mm512_set1_epi16((short)j)), s1);
    LOOM_UNROLL
    for (int k = 0; k < 2; k++)
        p->mn[k][rv] = _mm512_permutex2var_epi16(n0, _mm512_add_epi16(bmn, _mm512_set1_epi16((short)(4 * k))), n1);
    /* d, dmin: dword 0 of every lane, [d0 dmin0 d1 dmin1 ..] after vcvtph2ps */
    const __m512i dmi = _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 28, 24, 20, 16, 12, 8, 4, 0);
    const __m512 dv = _mm512_cvtph_ps(_mm512_castsi512_si256(_mm512_permutex2var_epi32(ha, dmi, hb)));
    const __m512i ev = _mm512_set_epi32(14, 14, 12, 12, 10, 10, 8, 8, 6, 6, 4, 4, 2, 2, 0, 0);
    p->d[rv] = _mm512_permutexvar_ps(ev, dv);
    p->dmin[rv] = _mm512_permutexvar_ps(_mm512_add_epi32(ev, _mm512_set1_epi32(1)), dv);
}

/* RV row vectors (8 rows each) x CB columns over the nbk packed blocks P, activation
 * blocks b0.. of columns j..j+CB-1; adds (or stores, when first) rows i..i+nr-1. */
static ALWAYS_INLINE void q4k_tile(int RV, int CB, const q4k_pack *P, int nbk, const uint8_t *a, size_t as,
                                   int64_t b0, int64_t j, float *c, size_t ldc, int64_t i, int nr, bool first) {
    __m512 F[2][Q4K_CB];
    const block_q8_K *y[Q4K_CB];
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    LOOM_UNROLL
    for (int cc = 0; cc < CB; cc++) {
        y[cc] = (const block_q8_K *)(a + (size_t)(j + cc) * as) + b0;
        LOOM_UNROLL
        for (int rv = 0; rv < RV; rv++) F[rv][cc] = _mm512_setzero_ps();
    }
    for (int bb = 0; bb < nbk; bb++) {
        const q4k_pack *p = P + bb;
        __m512i S[2][Q4K_CB], T[2][Q4K_CB];
        LOOM_UNROLL
        for (int rv = 0; rv < RV; rv++)
            LOOM_UNROLL
            for (int cc = 0; cc < CB; cc++) S[rv][cc] = _mm512_setzero_si512();
        for (int sb = 0; sb < 8; sb++) {
            const int sh = 4 * (sb & 1);
            LOOM_UNROLL
            for (int rv = 0; rv < RV; rv++)
                LOOM_UNROLL
                for (int cc = 0; cc < CB; cc++) T[rv][cc] = _mm512_setzero_si512();
            LOOM_UNROLL
            for (int k = 0; k < 4; k++) {
                __m512i W[2];
                LOOM_UNROLL
                for (int rv = 0; rv < RV; rv++)
                    W[rv] = _mm512_and_si512(_mm512_srli_epi16(_mm512_load_si512((const void *)&p->w[sb >> 1][k][rv]), sh), m4);
                LOOM_UNROLL
                for (int cc = 0; cc < CB; cc++) {
                    long long q;
                    memcpy(&q, y[cc][bb].qs + 32 * sb + 8 * k, 8);
                    const __m512i yv = _mm512_set1_epi64(q);
                    LOOM_UNROLL
                    for (int rv = 0; rv < RV; rv++) T[rv][cc] = _mm512_dpbusd_epi32(T[rv][cc], W[rv], yv);
                }
            }
            LOOM_UNROLL
            for (int rv = 0; rv < RV; rv++) {
                const __m512i sv = _mm512_load_si512((const void *)&p->sc[sb][rv]);
                LOOM_UNROLL
                for (int cc = 0; cc < CB; cc++) S[rv][cc] = _mm512_dpwssd_epi32(S[rv][cc], T[rv][cc], sv);
            }
        }
        /* mins: T[rv][cc] lanes (r, h) = sum_k m_j * bsum32_j + m_j+1 * bsum32_j+1, j = 4k+2h
         * (bsum32 = sums of 32 activations, exact in int16: |.| <= 32 * 128) */
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            const __m256i s32 = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)y[cc][bb].bsums),
                                                  _mm256_set1_epi16(1));
            const __m256i pk = _mm256_packs_epi32(s32, s32); /* qword 0: bsum32 0-3, qword 2: 4-7 */
            const __m512i bv0 = _mm512_broadcastq_epi64(_mm256_castsi256_si128(pk));
            const __m512i bv1 = _mm512_broadcastq_epi64(_mm256_extracti128_si256(pk, 1));
            LOOM_UNROLL
            for (int rv = 0; rv < RV; rv++)
                T[rv][cc] = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(_mm512_setzero_si512(), p->mn[0][rv], bv0),
                                                p->mn[1][rv], bv1);
        }
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            const __m512 dy = _mm512_set1_ps(y[cc][bb].d);
            LOOM_UNROLL
            for (int rv = 0; rv < RV; rv++) {
                __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(S[rv][cc]), p->d[rv]);
                t = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(T[rv][cc]), p->dmin[rv], t);
                F[rv][cc] = _mm512_fmadd_ps(t, dy, F[rv][cc]);
            }
        }
    }
    /* lanes (r, 0) + (r, 1) -> row r; 16 (or 8) consecutive outputs per column */
    const __m512i ev = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i od = _mm512_add_epi32(ev, _mm512_set1_epi32(1));
    const __mmask16 msk = (__mmask16)(nr >= 16 ? 0xFFFFu : (1u << nr) - 1u);
    LOOM_UNROLL
    for (int cc = 0; cc < CB; cc++) {
        __m512 o;
        if (RV == 2)
            o = _mm512_add_ps(_mm512_permutex2var_ps(F[0][cc], ev, F[1][cc]),
                              _mm512_permutex2var_ps(F[0][cc], od, F[1][cc]));
        else
            o = _mm512_add_ps(_mm512_permutexvar_ps(ev, F[0][cc]), _mm512_permutexvar_ps(od, F[0][cc]));
        float *dst = c + (size_t)(j + cc) * ldc + (size_t)i;
        if (!first) o = _mm512_add_ps(o, _mm512_maskz_loadu_ps(msk, dst));
        _mm512_mask_storeu_ps(dst, msk, o);
    }
}

/* Rows [i0, i1) x columns [j0, j1): groups of 16 rows (the last one 1..16 rows, with
 * zero rows standing in), Q4K_KC blocks transposed at a time, column tiles of Q4K_CB. */
static void gemm_q4k_lanes(int64_t nb, const uint8_t *w, size_t ws, const uint8_t *a, size_t as, float *c,
                           size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    q4k_pack P[Q4K_KC];
    for (int64_t i = i0; i < i1; i += 16) {
        const int nr = i1 - i < 16 ? (int)(i1 - i) : 16;
        const int nrv = nr > 8 ? 2 : 1;
        for (int64_t kc = 0; kc < nb; kc += Q4K_KC) {
            const int nbk = nb - kc < Q4K_KC ? (int)(nb - kc) : Q4K_KC;
            for (int bb = 0; bb < nbk; bb++)
                for (int rv = 0; rv < nrv; rv++) {
                    const block_q4_K *xb[8];
                    for (int r = 0; r < 8; r++) {
                        const int row = 8 * rv + r;
                        if (row >= nr) {
                            xb[r] = &q4k_zero_block;
                            continue;
                        }
                        xb[r] = (const block_q4_K *)(w + (size_t)(i + row) * ws) + kc + bb;
                        /* the same row in the next chunk (16 row streams are too many for
                         * the hardware prefetcher when few columns make this DRAM-bound);
                         * past the row end this is a harmless prefetch */
                        const char *pf = (const char *)(w + (size_t)(i + row) * ws) +
                                         (size_t)(kc + bb + Q4K_KC) * sizeof(block_q4_K);
                        _mm_prefetch(pf, _MM_HINT_T0);
                        _mm_prefetch(pf + 64, _MM_HINT_T0);
                        _mm_prefetch(pf + 128, _MM_HINT_T0);
                    }
                    q4k_pack_rows(&P[bb], rv, xb);
                }
            for (int64_t j = j0; j < j1; j += Q4K_CB) {
                const int cb = j1 - j < Q4K_CB ? (int)(j1 - j) : Q4K_CB;
#define Q4K_T(RV, CB) q4k_tile(RV, CB, P, nbk, a, as, kc, j, c, ldc, i, nr, kc == 0)
#define Q4K_CASES(RV)                                                                                   \
    switch (cb) {                                                                                       \
    case 1: Q4K_T(RV, 1); break;                                                                        \
    case 2: Q4K_T(RV, 2); break;                                                                        \
    case 3: Q4K_T(RV, 3); break;                                                                        \
    case 4: Q4K_T(RV, 4); break;                                                                        \
    case 5: Q4K_T(RV, 5); break;                                                                        \
    default: Q4K_T(RV, 6); break;                                                                       \
    }
                if (nrv == 2) Q4K_CASES(2)
                else Q4K_CASES(1)
#undef Q4K_CASES
#undef Q4K_T
            }
        }
    }
}

/* Q2_K / Q3_K x Q8_K: RB rows x CB columns, in the shape of tile_q6_K. Chunk q = 4n + k
 * (32 values, groups 2q and 2q + 1 of 16) has codes u = (qs[32n + l] >> 2k) & 3, and for
 * Q3_K (q3) | (bit 4n + k of hmask[l]) << 2; vpmaddubsw(u, y) pairs are exact and
 * vpdpwssd applies the group scales. Q3_K: value u - 4 with signed 6-bit scales, so -4 *
 * sum_g sc_g * bsum_g seeds the integer sum. Q2_K: value d * sc_g * u - dmin * m_g with
 * 4-bit sc_g = scales[g] & 15, m_g = scales[g] >> 4, the mins an exact int32 sum scaled by
 * dmin. The same integer sums as vd_q2_K / vd_q3_K. */
static ALWAYS_INLINE void tile_q23_K(int RB, int CB, bool q3, int64_t nb, const uint8_t *w, size_t ws,
                                     const uint8_t *a, size_t as, float *c, size_t ldc, int64_t i, int64_t j) {
    __m256 acc[4][4];
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) acc[r][cc] = _mm256_setzero_ps();
    const __m256i m3 = _mm256_set1_epi8(0x03), m4b = _mm256_set1_epi8(0x04);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const size_t bsz = q3 ? sizeof(block_q3_K) : sizeof(block_q2_K);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *qs[4];
        float dx[4], dmx[4];
        __m256i sc16[4], hm[4], mn16[4];
        __m256i isum[4][4];
        if (CB == 1) {
            LOOM_UNROLL
            for (int r = 0; r < RB; r++) {
                const char *pf = (const char *)(w + (size_t)(i + r + PF_ROWS) * ws + (size_t)b * bsz);
                _mm_prefetch(pf, _MM_HINT_T0);
                _mm_prefetch(pf + 64, _MM_HINT_T0);
                _mm_prefetch(pf + bsz - 1, _MM_HINT_T0);
            }
        }
        LOOM_UNROLL
        for (int r = 0; r < RB; r++) {
            const uint8_t *blk = w + (size_t)(i + r) * ws + (size_t)b * bsz;
            if (q3) {
                const block_q3_K *x = (const block_q3_K *)blk;
                qs[r] = x->qs;
                dx[r] = H2F(x->d);
                sc16[r] = _mm256_cvtepi8_epi16(loom_q3k_scales(x->scales));
                hm[r] = _mm256_loadu_si256((const __m256i *)x->hmask);
            } else {
                const block_q2_K *x = (const block_q2_K *)blk;
                qs[r] = x->qs;
                dx[r] = H2F(x->d);
                dmx[r] = H2F(x->dmin);
                const __m128i sc = _mm_loadu_si128((const __m128i *)x->scales);
                sc16[r] = _mm256_cvtepu8_epi16(_mm_and_si128(sc, m4));
                mn16[r] = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sc, 4), m4));
            }
        }
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            const block_q8_K *yb = (const block_q8_K *)(a + (size_t)(j + cc) * as) + b;
            const __m256i bs = _mm256_loadu_si256((const __m256i *)yb->bsums);
            LOOM_UNROLL
            for (int r = 0; r < RB; r++)
                isum[r][cc] = q3 ? _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(sc16[r], bs), 2))
                                 : _mm256_setzero_si256();
        }
        LOOM_UNROLL
        for (int n = 0; n < 2; n++) {
            LOOM_UNROLL
            for (int k = 0; k < 4; k++) {
                const int q = 4 * n + k;
                const __m256i sidx = _mm256_set_m128i(_mm_set1_epi16((short)(2 * q + 1)), _mm_set1_epi16((short)(2 * q)));
                __m256i u[4], scv[4];
                LOOM_UNROLL
                for (int r = 0; r < RB; r++) {
                    const __m256i l = _mm256_loadu_si256((const __m256i *)(qs[r] + 32 * n));
                    u[r] = _mm256_and_si256(_mm256_srli_epi16(l, 2 * k), m3);
                    if (q3) /* hmask bit q to bit 2 */
                        u[r] = _mm256_or_si256(
                            u[r], _mm256_and_si256(q >= 2 ? _mm256_srli_epi16(hm[r], q - 2) : _mm256_slli_epi16(hm[r], 2 - q),
                                                   m4b));
                    scv[r] = _mm256_permutexvar_epi16(sidx, sc16[r]);
                }
                LOOM_UNROLL
                for (int cc = 0; cc < CB; cc++) {
                    const block_q8_K *yb = (const block_q8_K *)(a + (size_t)(j + cc) * as) + b;
                    const __m256i yv = _mm256_loadu_si256((const __m256i *)(yb->qs + 32 * q));
                    LOOM_UNROLL
                    for (int r = 0; r < RB; r++)
                        isum[r][cc] = _mm256_dpwssd_epi32(isum[r][cc], _mm256_maddubs_epi16(u[r], yv), scv[r]);
                }
            }
        }
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            const block_q8_K *yb = (const block_q8_K *)(a + (size_t)(j + cc) * as) + b;
            const __m256i bs = _mm256_loadu_si256((const __m256i *)yb->bsums);
            LOOM_UNROLL
            for (int r = 0; r < RB; r++) {
                acc[r][cc] = _mm256_fmadd_ps(_mm256_set1_ps(yb->d * dx[r]), _mm256_cvtepi32_ps(isum[r][cc]), acc[r][cc]);
                if (!q3)
                    acc[r][cc] = _mm256_fnmadd_ps(_mm256_set1_ps(yb->d * dmx[r]),
                                                  _mm256_cvtepi32_ps(_mm256_madd_epi16(mn16[r], bs)), acc[r][cc]);
            }
        }
    }
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) c[(size_t)(j + cc) * ldc + (size_t)(i + r)] = hsum8(acc[r][cc]);
}

/* Q6_K x Q8_K: RB rows x CB columns (256-bit). Per 32-value chunk q (0..7) the 6-bit
 * unsigned codes u (q + 32) are rebuilt from ql/qh, multiplied with the activations
 * (vpmaddubsw, exact: 63 * 127 * 2 < 2^15) and accumulated with the two 16-value group
 * scales (vpdpwssd); the -32 offset is sum_g scale_g * bsum_g per block. */
static ALWAYS_INLINE void tile_q6_K(int RB, int CB, int64_t nb, const uint8_t *w, size_t ws, const uint8_t *a,
                                    size_t as, float *c, size_t ldc, int64_t i, int64_t j) {
    __m256 acc[4][4];
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) acc[r][cc] = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(0x03);
    for (int64_t b = 0; b < nb; b++) {
        const block_q6_K *xb[4];
        __m256i sc16[4];
        __m256i isum[4][4];
        if (CB == 1) {
            LOOM_UNROLL
            for (int r = 0; r < RB; r++) {
                const char *pf = (const char *)((const block_q6_K *)(w + (size_t)(i + r + PF_ROWS) * ws) + b);
                _mm_prefetch(pf, _MM_HINT_T0);
                _mm_prefetch(pf + 64, _MM_HINT_T0);
                _mm_prefetch(pf + 128, _MM_HINT_T0);
                _mm_prefetch(pf + 192, _MM_HINT_T0);
            }
        }
        LOOM_UNROLL
        for (int r = 0; r < RB; r++) {
            xb[r] = (const block_q6_K *)(w + (size_t)(i + r) * ws) + b;
            sc16[r] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)xb[r]->scales));
        }
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            const block_q8_K *yb = (const block_q8_K *)(a + (size_t)(j + cc) * as) + b;
            const __m256i bs = _mm256_loadu_si256((const __m256i *)yb->bsums);
            LOOM_UNROLL
            for (int r = 0; r < RB; r++)
                isum[r][cc] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(_mm256_madd_epi16(sc16[r], bs), 5));
        }
        LOOM_UNROLL
        for (int h = 0; h < 2; h++) {
            LOOM_UNROLL
            for (int k = 0; k < 4; k++) {
                const int q = 4 * h + k;
                const __m256i sidx = _mm256_set_m128i(_mm_set1_epi16((short)(2 * q + 1)), _mm_set1_epi16((short)(2 * q)));
                __m256i u[4], scv[4];
                LOOM_UNROLL
                for (int r = 0; r < RB; r++) {
                    const __m256i l = _mm256_loadu_si256((const __m256i *)(xb[r]->ql + 64 * h + 32 * (k & 1)));
                    const __m256i qh = _mm256_loadu_si256((const __m256i *)(xb[r]->qh + 32 * h));
                    const __m256i lo = (k & 2) ? _mm256_and_si256(_mm256_srli_epi16(l, 4), m4) : _mm256_and_si256(l, m4);
                    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), m3);
                    u[r] = _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4));
                    scv[r] = _mm256_permutexvar_epi16(sidx, sc16[r]);
                }
                LOOM_UNROLL
                for (int cc = 0; cc < CB; cc++) {
                    const block_q8_K *yb = (const block_q8_K *)(a + (size_t)(j + cc) * as) + b;
                    const __m256i yv = _mm256_loadu_si256((const __m256i *)(yb->qs + 32 * q));
                    LOOM_UNROLL
                    for (int r = 0; r < RB; r++)
                        isum[r][cc] = _mm256_dpwssd_epi32(isum[r][cc], _mm256_maddubs_epi16(u[r], yv), scv[r]);
                }
            }
        }
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            const block_q8_K *yb = (const block_q8_K *)(a + (size_t)(j + cc) * as) + b;
            LOOM_UNROLL
            for (int r = 0; r < RB; r++)
                acc[r][cc] = _mm256_fmadd_ps(_mm256_set1_ps(yb->d * H2F(xb[r]->d)), _mm256_cvtepi32_ps(isum[r][cc]),
                                             acc[r][cc]);
        }
    }
    LOOM_UNROLL
    for (int r = 0; r < RB; r++)
        LOOM_UNROLL
        for (int cc = 0; cc < CB; cc++) c[(size_t)(j + cc) * ldc + (size_t)(i + r)] = hsum8(acc[r][cc]);
}

/* Tiles of 4 rows x CB (1..4) columns; leftover rows one at a time with the same CB. */
#define TILE_DISPATCH(T)                                                                                \
    for (int64_t j = j0; j < j1; j += 4) {                                                              \
        int cb = (int)(j1 - j < 4 ? j1 - j : 4);                                                        \
        int64_t i = i0;                                                                                 \
        for (; i + 4 <= i1; i += 4) switch (cb) {                                                       \
            case 1: T(4, 1, i, j); break;                                                               \
            case 2: T(4, 2, i, j); break;                                                               \
            case 3: T(4, 3, i, j); break;                                                               \
            default: T(4, 4, i, j); break;                                                              \
            }                                                                                           \
        for (; i < i1; i++) switch (cb) {                                                               \
            case 1: T(1, 1, i, j); break;                                                               \
            case 2: T(1, 2, i, j); break;                                                               \
            case 3: T(1, 3, i, j); break;                                                               \
            default: T(1, 4, i, j); break;                                                              \
            }                                                                                           \
    }

/* K-quant tiles: 4 rows x 2 or 1 columns; leftovers one element at a time. */
#define TILE_DISPATCH_K(T)                                                                              \
    for (int64_t j = j0; j < j1; j += 2) {                                                              \
        int cb = (int)(j1 - j < 2 ? j1 - j : 2);                                                        \
        int64_t i = i0;                                                                                 \
        for (; i + 4 <= i1; i += 4) {                                                                   \
            if (cb == 2) T(4, 2, i, j);                                                                 \
            else T(4, 1, i, j);                                                                         \
        }                                                                                               \
        for (; i < i1; i++)                                                                             \
            for (int64_t jj = j; jj < j + cb; jj++) T(1, 1, i, jj);                                     \
    }

/* TILE_DISPATCH_K with 4-column tiles where at least 4 columns are left (Q2_K, Q3_K: their
 * weight decoding per chunk costs as much as two columns' products, so a 4 x 4 tile
 * amortises it better; 1.1B Q2_K pp128 at -t 2 +15-20 %) */
#define TILE_DISPATCH_K4(T)                                                                             \
    for (int64_t j = j0; j < j1;) {                                                                     \
        const int64_t left = j1 - j;                                                                    \
        const int cb = left >= 4 ? 4 : left >= 2 ? 2 : 1;                                               \
        int64_t i = i0;                                                                                 \
        for (; i + 4 <= i1; i += 4) {                                                                   \
            if (cb == 4) T(4, 4, i, j);                                                                 \
            else if (cb == 2) T(4, 2, i, j);                                                            \
            else T(4, 1, i, j);                                                                         \
        }                                                                                               \
        for (; i < i1; i++)                                                                             \
            for (int64_t jj = j; jj < j + cb; jj++) T(1, 1, i, jj);                                     \
        j += cb;                                                                                        \
    }

static bool gemm_vnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                      size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const uint8_t *W = w, *A = a;
    /* Q5_0 / Q4_1 / Q5_1 prompts: the 16-row tile (kernels_legacy_avx512vnni.c) */
    if (loom_gemm_lg16_avx512vnni(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1)) return true;
    switch (wt) {
    /* the 512-bit tile's types; tzk is a constant per case once tile_zmm is inlined */
#define T_TZ(RB, CB, ii, jj) tile_zmm(RB, CB, tzk, k / 32, W, ws, A, as, c, ldc, ii, jj)
#define TZ_CASE(TYPE, KIND)                                                                             \
    case TYPE: {                                                                                        \
        const int tzk = KIND;                                                                           \
        TILE_DISPATCH(T_TZ)                                                                             \
        return true;                                                                                    \
    }
        TZ_CASE(LOOM_TYPE_Q4_0, TZ_Q4_0)
        TZ_CASE(LOOM_TYPE_Q8_0, TZ_Q8_0)
        TZ_CASE(LOOM_TYPE_Q5_0, TZ_Q5_0)
        TZ_CASE(LOOM_TYPE_Q4_1, TZ_Q4_1)
        TZ_CASE(LOOM_TYPE_Q5_1, TZ_Q5_1)
        TZ_CASE(LOOM_TYPE_MXFP4, TZ_MXFP4)
#undef TZ_CASE
#undef T_TZ
    case LOOM_TYPE_Q4_K:
        if (j1 - j0 >= Q4K_MIN_COLS) {
            gemm_q4k_lanes(k / QK_K, W, ws, A, as, c, ldc, i0, i1, j0, j1);
            return true;
        }
#define T_Q4K(RB, CB, ii, jj) tile_q45_K(RB, CB, false, k / QK_K, W, ws, A, as, c, ldc, ii, jj)
        TILE_DISPATCH_K(T_Q4K)
#undef T_Q4K
        return true;
    case LOOM_TYPE_Q5_K:
#define T_Q5K(RB, CB, ii, jj) tile_q45_K(RB, CB, true, k / QK_K, W, ws, A, as, c, ldc, ii, jj)
        TILE_DISPATCH_K(T_Q5K)
#undef T_Q5K
        return true;
    case LOOM_TYPE_Q2_K:
#define T_Q2K(RB, CB, ii, jj) tile_q23_K(RB, CB, false, k / QK_K, W, ws, A, as, c, ldc, ii, jj)
        TILE_DISPATCH_K4(T_Q2K)
#undef T_Q2K
        return true;
    case LOOM_TYPE_Q3_K: /* prompts: the 16-row IQ tile (kernels_iq16_avx512vnni.c) */
        if (loom_gemm_iq16_avx512vnni(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1)) return true;
#define T_Q3K(RB, CB, ii, jj) tile_q23_K(RB, CB, true, k / QK_K, W, ws, A, as, c, ldc, ii, jj)
        TILE_DISPATCH_K4(T_Q3K)
#undef T_Q3K
        return true;
    case LOOM_TYPE_Q6_K:
#define T_Q6K(RB, CB, ii, jj) tile_q6_K(RB, CB, k / QK_K, W, ws, A, as, c, ldc, ii, jj)
        TILE_DISPATCH_K(T_Q6K)
#undef T_Q6K
        return true;
    /* BF16 decode: the avx512 level's rows (kernels_gemm_avx512.c row_bf16; until the
     * twenty-third session a VDPBF16PS loop here, which measured slower on a Zen 4: a
     * stand-alone stream of the 1.1B BF16 matrices, one thread, 22.7-23.7 GB/s against
     * 25.4-27.4) */
    default: /* F16 / BF16 tiles of the avx512 level (kernels_gemm_avx512.c), the IQ / TQ
              * 16-row tiles (kernels_iq16_avx512vnni.c), the TQ tiles
              * (kernels_iq_gemm_avx512vnni.c), NVFP4's tiles (kernels_nvfp4_avx512vnni.c);
              * false otherwise */
        return loom_gemm_float_avx512(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1) ||
               loom_gemm_iq16_avx512vnni(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1) ||
               loom_gemm_iq_avx512vnni(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1) ||
               loom_gemm_nvfp4_avx512vnni(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
    }
}

void loom_kernels_fill_avx512vnni(loom_kernels *k) {
    k->dot[LOOM_TYPE_Q4_0].vec_dot = vd_q4_0;
    k->dot[LOOM_TYPE_Q8_0].vec_dot = vd_q8_0;
    k->dot[LOOM_TYPE_MXFP4].vec_dot = vd_mxfp4;
    k->dot[LOOM_TYPE_Q4_K].vec_dot = vd_q4_K;
    k->gemm = gemm_vnni;
    loom_iqg_wide_tiles(k, false, 64, 256); /* the 16-row IQ tile (kernels_iq16_avx512vnni.c) */
    loom_kernels_fill_repack_avx512vnni(k);
    loom_kernels_fill_iq4_avx512vnni(k); /* IQ4_NL / IQ4_XS (kernels_iq4_avx512vnni.c) */
    loom_kernels_fill_tq_avx512vnni(k);  /* TQ2_0 decode (kernels_tq_avx512vnni.c) */
}
