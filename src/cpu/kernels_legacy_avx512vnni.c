/*
 * kernels_legacy_avx512vnni.c - 16-row tiles for Q5_0, Q4_1 and Q5_1 times Q8_0 / Q8_1:
 * the preparation the avx512vnni and amx levels share (loom_lg16_prep from plain rows,
 * loom_lg16_prep_rp from the repacked layout of quant/repack.h) and the avx512vnni
 * level's gemm (kernels.h gemm contract) and gemm_repacked for these types. Repacked,
 * one 64-byte load already holds 4 bytes of each of 16 rows: the prompt preparation
 * needs no transpose, and decode streams each row group with vpdpbusd straight from it
 * (lg_rp_dec_body; the fifth bits are spread to their bytes by vpshufb and a byte test).
 *
 * These types are what llama-quantize falls back to for rows that are not a multiple of
 * 256, and the decode-shape tile (kernels_avx512vnni.c tile_zmm) unpacks every block once
 * per 4 columns. Here, per call, 16-row group and k chunk, each block is decoded once to
 * bytes (the codes 0..15 / 0..31 with the fifth bits added under the byte mask qh; Q5_0
 * either signed q - 16 or its unsigned code) and 16 rows are transposed by dwords, so one
 * 64-byte vector holds 4 consecutive values of each of the 16 rows (an AMX B tile's order).
 * The engine gives these types 64 x 256 tiles (kernels.h gemm_tile_rows / _cols), so a
 * block is decoded once per 256 columns.
 *
 * Product (this level): per column and block, 8 vpdpbusd of the 16 rows' codes with the
 * column's 4 activation bytes broadcast, in two chains of 4 (Q5_0's starts at -16 x the
 * activation block's sum), then acc += (d_w d_a) x isum and, for Q4_1 / Q5_1,
 * acc += m_w s_a (s_a the activation block's stored d x sum): the scalar reference's
 * terms. Four columns at a time (8 independent chains).
 */
#include "cpu/x86_transpose.h"
#include "cpu/kernels_internal.h"
#include "quant/repack.h"

#include <immintrin.h>
#include <stddef.h>
#include <string.h>

#define LG_KC 32  /* blocks per k chunk */
#define LG_JC 256 /* columns per column chunk (their activation scales and sums: stack) */
#define LG_CB 4   /* columns per pass */
#define LG_PF 4   /* block pairs prefetched ahead per row (rows ws apart: the hardware does not follow) */

/* the 32 values of the block at p: codes (+ fifth bits); Q5_0 minus 16 when sgn */
static LOOM_ALWAYS_INLINE __m256i lg_values(loom_type wt, bool sgn, const uint8_t *p) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), k16 = _mm256_set1_epi8(16);
    const size_t oq = wt == LOOM_TYPE_Q4_1 ? 4 : wt == LOOM_TYPE_Q5_0 ? 6 : 8;
    const __m128i q = _mm_loadu_si128((const __m128i *)(p + oq));
    __m256i v = _mm256_inserti128_si256(_mm256_castsi128_si256(q), _mm_srli_epi16(q, 4), 1);
    v = _mm256_and_si256(v, m4); /* values 0..15: the low nibbles, 16..31: the high */
    if (wt == LOOM_TYPE_Q4_1) return v;
    uint32_t qh;
    memcpy(&qh, p + (wt == LOOM_TYPE_Q5_0 ? 2 : 4), 4);
    if (wt == LOOM_TYPE_Q5_0 && sgn) return _mm256_mask_sub_epi8(v, (__mmask32)~qh, v, k16); /* q - 16 */
    return _mm256_mask_add_epi8(v, (__mmask32)qh, v, k16);
}

static LOOM_ALWAYS_INLINE void lg_prep_body(loom_type wt, bool sgn, const uint8_t *w, size_t ws, int64_t i, int nr,
                                            int64_t s0, int64_t s1, int8_t *bq, float *dw, float *mw) {
    const size_t bb = wt == LOOM_TYPE_Q4_1 ? sizeof(block_q4_1) : wt == LOOM_TYPE_Q5_0 ? sizeof(block_q5_0)
                                                                                       : sizeof(block_q5_1);
    const size_t hb = wt == LOOM_TYPE_Q5_0 ? 2 : 4; /* d (and m) */
    for (int64_t b = s0; b < s1; b += 2, bq += 1024, dw += 32, mw += 32) {
        const bool two = b + 1 < s1;
        __m512i v[16];
        LOOM_UNROLL_ALL
        for (int r = 0; r < 16; r++) {
            if (r >= nr) {
                v[r] = _mm512_setzero_si512();
                dw[r] = dw[16 + r] = mw[r] = mw[16 + r] = 0.f;
                continue;
            }
            const uint8_t *p = w + (size_t)(i + r) * ws + (size_t)b * bb;
            if (b + 2 * LG_PF < s1) LOOM_PF0((const char *)(p + 2 * LG_PF * bb));
            const __m256i x0 = lg_values(wt, sgn, p), x1 = two ? lg_values(wt, sgn, p + bb) : _mm256_setzero_si256();
            v[r] = _mm512_inserti64x4(_mm512_castsi256_si512(x0), x1, 1);
            uint16_t h[4] = {0, 0, 0, 0};
            memcpy(h, p, hb);
            if (two) memcpy(h + 2, p + bb, hb);
            dw[r] = _cvtsh_ss(h[0]);
            dw[16 + r] = _cvtsh_ss(h[2]);
            mw[r] = _cvtsh_ss(h[1]);
            mw[16 + r] = _cvtsh_ss(h[3]);
        }
        loom_transpose16_epi32(v);
        LOOM_UNROLL_ALL
        for (int d = 0; d < 16; d++)
            if (d < 8 || two) _mm512_store_si512((void *)(bq + 64 * d), v[d]);
    }
}

void loom_lg16_prep(loom_type wt, bool sgn, const uint8_t *w, size_t ws, int64_t i, int nr, int64_t s0, int64_t s1,
                    int8_t *bq, float *dw, float *mw) {
    if (wt == LOOM_TYPE_Q5_0 && sgn) lg_prep_body(LOOM_TYPE_Q5_0, true, w, ws, i, nr, s0, s1, bq, dw, mw);
    else if (wt == LOOM_TYPE_Q5_0) lg_prep_body(LOOM_TYPE_Q5_0, false, w, ws, i, nr, s0, s1, bq, dw, mw);
    else if (wt == LOOM_TYPE_Q4_1) lg_prep_body(LOOM_TYPE_Q4_1, false, w, ws, i, nr, s0, s1, bq, dw, mw);
    else lg_prep_body(LOOM_TYPE_Q5_1, false, w, ws, i, nr, s0, s1, bq, dw, mw);
}

static LOOM_ALWAYS_INLINE __m512i bc32(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* CB columns [j, j + CB) x rows [row0, row0 + 16) (rm: the real ones) over the prepared
 * blocks [s0, s1) (bq, dw, mw: block s0 first); da / sa / nc: the columns' activation
 * scales, d x sums and Q5_0 corrections (column cc, block b: [cc * LG_KC + b - s0]) */
static LOOM_ALWAYS_INLINE void lg_tile(int CB, bool mins, bool q50, const uint8_t *a, size_t as, size_t ab,
                                       size_t oq, const int8_t *bq, const float *dw, const float *mw,
                                       const float *da, const float *sa, const int32_t *nc, float *c, size_t ldc,
                                       int64_t row0, __mmask16 rm, int64_t j, int64_t s0, int64_t s1) {
    __m512 acc[LG_CB];
    float *cp = c + (size_t)j * ldc + (size_t)row0;
    LOOM_UNROLL_ALL
    for (int cc = 0; cc < CB; cc++) acc[cc] = s0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(rm, cp + (size_t)cc * ldc);
    for (int64_t b = s0; b < s1; b++) {
        const int64_t l = b - s0;
        const int8_t *wb = bq + 512 * l;
        const uint8_t *y[LG_CB];
        __m512i d0[LG_CB], d1[LG_CB];
        LOOM_UNROLL_ALL
        for (int cc = 0; cc < CB; cc++) {
            y[cc] = a + (size_t)(j + cc) * as + (size_t)b * ab + oq;
            d0[cc] = q50 ? _mm512_set1_epi32(nc[cc * LG_KC + l]) : _mm512_setzero_si512();
            d1[cc] = _mm512_setzero_si512();
        }
        LOOM_UNROLL_ALL
        for (int kk = 0; kk < 4; kk++) {
            const __m512i w0 = _mm512_load_si512((const void *)(wb + 64 * kk));
            const __m512i w1 = _mm512_load_si512((const void *)(wb + 64 * (kk + 4)));
            LOOM_UNROLL_ALL
            for (int cc = 0; cc < CB; cc++) {
                d0[cc] = _mm512_dpbusd_epi32(d0[cc], w0, bc32(y[cc] + 4 * kk));
                d1[cc] = _mm512_dpbusd_epi32(d1[cc], w1, bc32(y[cc] + 16 + 4 * kk));
            }
        }
        const __m512 d = _mm512_load_ps(dw + 16 * l);
        LOOM_UNROLL_ALL
        for (int cc = 0; cc < CB; cc++) {
            acc[cc] = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(da[cc * LG_KC + l])),
                                      _mm512_cvtepi32_ps(_mm512_add_epi32(d0[cc], d1[cc])), acc[cc]);
            if (mins) acc[cc] = _mm512_fmadd_ps(_mm512_load_ps(mw + 16 * l), _mm512_set1_ps(sa[cc * LG_KC + l]), acc[cc]);
        }
    }
    LOOM_UNROLL_ALL
    for (int cc = 0; cc < CB; cc++) _mm512_mask_storeu_ps(cp + (size_t)cc * ldc, rm, acc[cc]);
}

#define LG_TILES(MINS, Q50)                                                                                     \
    do {                                                                                                        \
        int64_t jj = 0;                                                                                         \
        for (; jj + LG_CB <= jn; jj += LG_CB)                                                                   \
            lg_tile(LG_CB, MINS, Q50, A, as, ab, oq, bq, dw, mw, da + jj * LG_KC, sa + jj * LG_KC,             \
                    nc + jj * LG_KC, c, ldc, i, rm, jc + jj, s0, s1);                                           \
        for (; jj < jn; jj++)                                                                                   \
            lg_tile(1, MINS, Q50, A, as, ab, oq, bq, dw, mw, da + jj * LG_KC, sa + jj * LG_KC, nc + jj * LG_KC, \
                    c, ldc, i, rm, jc + jj, s0, s1);                                                            \
    } while (0)

/* The fifth bits of nibble chunk ch of the repacked layout (quant/repack.h): hv holds the
 * 16 rows' qh dwords (lane r = row r); byte i of lane r of lo (hi) takes bit 4ch + i
 * (16 + 4ch + i) of its qh: + 16 where it is set or, with neg (Q5_0 signed), - 16 where
 * it is not. */
static LOOM_ALWAYS_INLINE void rp_fifth(__m512i hv, int ch, bool neg, __m512i *lo, __m512i *hi) {
    const __m512i base = _mm512_broadcast_i32x4(_mm_setr_epi32(0, 0x04040404, 0x08080808, 0x0C0C0C0C));
    const __m512i bm = _mm512_set1_epi32(ch % 2 ? (int32_t)0x80402010u : 0x08040201);
    const __m512i k16 = _mm512_set1_epi8(16);
    const __mmask64 ml = _mm512_test_epi8_mask(_mm512_shuffle_epi8(hv, _mm512_add_epi8(base, _mm512_set1_epi8((char)(ch / 2)))), bm);
    const __mmask64 mh = _mm512_test_epi8_mask(_mm512_shuffle_epi8(hv, _mm512_add_epi8(base, _mm512_set1_epi8((char)(2 + ch / 2)))), bm);
    if (neg) {
        *lo = _mm512_mask_sub_epi8(*lo, ~ml, *lo, k16);
        *hi = _mm512_mask_sub_epi8(*hi, ~mh, *hi, k16);
    } else {
        *lo = _mm512_mask_add_epi8(*lo, ml, *lo, k16);
        *hi = _mm512_mask_add_epi8(*hi, mh, *hi, k16);
    }
}

/* Field offsets of the repacked block group (quant/repack.h): qh, the nibble chunks; its bytes */
#define RP_MN(wt) ((wt) != LOOM_TYPE_Q5_0)
#define RP_HB(wt) ((wt) != LOOM_TYPE_Q4_1)
#define RP_PH(wt) loom_repack_lg_qh(wt)
#define RP_PQ(wt) loom_repack_lg_qs(wt)
#define RP_STEP(wt) (16u * ((wt) == LOOM_TYPE_Q4_1 ? sizeof(block_q4_1) : (wt) == LOOM_TYPE_Q5_0 ? sizeof(block_q5_0) \
                                                                                            : sizeof(block_q5_1)))

static LOOM_ALWAYS_INLINE void lg_rp_prep_body(loom_type wt, bool sgn, const uint8_t *w, size_t ws, int64_t g,
                                               int64_t s0, int64_t s1, int8_t *bq, float *dw, float *mw) {
    const bool mn = RP_MN(wt), hb = RP_HB(wt), neg = sgn && !mn;
    const size_t bstep = RP_STEP(wt);
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const uint8_t *p = w + (size_t)g * ws * 16 + (size_t)s0 * bstep;
    for (int64_t b = s0; b < s1; b++, p += bstep, bq += 512, dw += 16, mw += 16) {
        _mm512_store_ps(dw, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p)));
        if (mn) _mm512_store_ps(mw, _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + 32))));
        const __m512i hv = hb ? _mm512_loadu_si512((const void *)(p + RP_PH(wt))) : _mm512_setzero_si512();
        LOOM_UNROLL_ALL
        for (int ch = 0; ch < 4; ch++) {
            const __m512i v = _mm512_loadu_si512((const void *)(p + RP_PQ(wt) + 64 * ch));
            __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
            if (hb) rp_fifth(hv, ch, neg, &lo, &hi);
            _mm512_store_si512((void *)(bq + 64 * ch), lo);
            _mm512_store_si512((void *)(bq + 64 * (ch + 4)), hi);
        }
    }
}

void loom_lg16_prep_rp(loom_type wt, bool sgn, const uint8_t *w, size_t ws, int64_t g, int64_t s0, int64_t s1,
                       int8_t *bq, float *dw, float *mw) {
    if (wt == LOOM_TYPE_Q5_0 && sgn) lg_rp_prep_body(LOOM_TYPE_Q5_0, true, w, ws, g, s0, s1, bq, dw, mw);
    else if (wt == LOOM_TYPE_Q5_0) lg_rp_prep_body(LOOM_TYPE_Q5_0, false, w, ws, g, s0, s1, bq, dw, mw);
    else if (wt == LOOM_TYPE_Q4_1) lg_rp_prep_body(LOOM_TYPE_Q4_1, false, w, ws, g, s0, s1, bq, dw, mw);
    else lg_rp_prep_body(LOOM_TYPE_Q5_1, false, w, ws, g, s0, s1, bq, dw, mw);
}

/* Decode: one column (y: its activation row) x row group g over blocks [s0, s1) of the
 * repacked layout, streamed with the repacked Q4_0 tile's prefetch (every line LG_RP_PF
 * ahead into L1 and LOOM_PF_L2 ahead into L2, one of each per 64 bytes); the fma chain
 * starts at 0 (s0 == 0) or continues from the partial sums in cp. Per lane the
 * arithmetic of lg_tile (and of the scalar reference): two dpbusd chains of unsigned
 * codes (Q5_0's starting at -16 x the block's activation sum), then the fmas. Stream
 * prefetches (off on AMD: 1.1B Q5_0 tg64 one thread on Zen 4, 30.3-31.9 t/s with them,
 * 38.6-42.1 without). */
#define LG_RP_PF 4608
static LOOM_ALWAYS_INLINE void lg_rp_dec_body(loom_type wt, const uint8_t *w, size_t ws, const uint8_t *y, float *cp,
                                              int64_t g, int64_t s0, int64_t s1, const float *da, const float *sa,
                                              const int32_t *nc) {
    const bool mn = RP_MN(wt), hb = RP_HB(wt);
    const size_t bstep = RP_STEP(wt), ab = mn ? sizeof(block_q8_1) : sizeof(block_q8_0), aq = mn ? 4 : 2;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc = s0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(cp);
    const uint8_t *p = w + (size_t)g * ws * 16 + (size_t)s0 * bstep;
    for (int64_t b = s0; b < s1; b++, p += bstep) {
        const uint8_t *yq = y + (size_t)b * ab + aq;
        __m512i e = mn ? _mm512_setzero_si512() : _mm512_set1_epi32(nc[b - s0]), o = _mm512_setzero_si512();
        const __m512i hv = hb ? _mm512_loadu_si512((const void *)(p + RP_PH(wt))) : _mm512_setzero_si512();
        LOOM_UNROLL_ALL
        for (int ch = 0; ch < 4; ch++) {
            const __m512i v = _mm512_loadu_si512((const void *)(p + RP_PQ(wt) + 64 * ch));
            LOOM_PFS0(p + LG_RP_PF + 64 * ch); /* the block's lines, one per load */
            LOOM_PFS1(p + LOOM_PF_L2 + 64 * ch);
            __m512i lo = _mm512_and_si512(v, m4), hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
            if (hb) rp_fifth(hv, ch, false, &lo, &hi);
            e = _mm512_dpbusd_epi32(e, lo, bc32(yq + 4 * ch));
            o = _mm512_dpbusd_epi32(o, hi, bc32(yq + 16 + 4 * ch));
        }
        LOOM_UNROLL_ALL
        for (size_t l = 4; l < (bstep + 63) / 64; l++) {
            LOOM_PFS0(p + LG_RP_PF + 64 * l);
            LOOM_PFS1(p + LOOM_PF_L2 + 64 * l);
        }
        const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
        acc = _mm512_fmadd_ps(_mm512_mul_ps(d, _mm512_set1_ps(da[b - s0])), _mm512_cvtepi32_ps(_mm512_add_epi32(e, o)),
                              acc);
        if (mn)
            acc = _mm512_fmadd_ps(_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + 32))),
                                  _mm512_set1_ps(sa[b - s0]), acc);
    }
    _mm512_storeu_ps(cp, acc);
}

#define LG_DEC_SLAB 512 /* activation blocks per decode slab (their scales: stack) */
static void lg_rp_decode(loom_type wt, int64_t nb, const uint8_t *w, size_t ws, const uint8_t *y, float *c,
                         int64_t i0, int64_t i1) {
    float da[LG_DEC_SLAB], sa[LG_DEC_SLAB];
    int32_t nc[LG_DEC_SLAB];
    for (int64_t s0 = 0; s0 < nb; s0 += LG_DEC_SLAB) {
        const int64_t s1 = s0 + LG_DEC_SLAB < nb ? s0 + LG_DEC_SLAB : nb;
        loom_lg_act_prep(wt == LOOM_TYPE_Q5_0, y, 0, 0, 1, s0, s1, LG_DEC_SLAB, da, sa, nc);
        for (int64_t g = i0 / 16; g < i1 / 16; g++) {
            if (wt == LOOM_TYPE_Q4_1) lg_rp_dec_body(LOOM_TYPE_Q4_1, w, ws, y, c + 16 * g, g, s0, s1, da, sa, nc);
            else if (wt == LOOM_TYPE_Q5_0) lg_rp_dec_body(LOOM_TYPE_Q5_0, w, ws, y, c + 16 * g, g, s0, s1, da, sa, nc);
            else lg_rp_dec_body(LOOM_TYPE_Q5_1, w, ws, y, c + 16 * g, g, s0, s1, da, sa, nc);
        }
    }
}

/* rp: weights in the repacked layout (rows i0, i1 multiples of 16) */
static bool lg16_gemm(bool rp, loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                      size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const bool q50 = wt == LOOM_TYPE_Q5_0;
    const size_t oq = q50 ? offsetof(block_q8_0, qs) : offsetof(block_q8_1, qs), ab = oq + 32;
    const uint8_t *A = (const uint8_t *)a;
    const int64_t nb = k / 32;
    _Alignas(64) int8_t bq[LG_KC * 512];
    _Alignas(64) float dw[LG_KC * 16], mw[LG_KC * 16];
    float da[LG_JC * LG_KC], sa[LG_JC * LG_KC];
    int32_t nc[LG_JC * LG_KC];
    for (int64_t jc = j0; jc < j1; jc += LG_JC) {
        const int64_t jn = j1 - jc < LG_JC ? j1 - jc : LG_JC;
        for (int64_t s0 = 0; s0 < nb; s0 += LG_KC) {
            const int64_t s1 = s0 + LG_KC < nb ? s0 + LG_KC : nb;
            loom_lg_act_prep(q50, A, as, jc, jn, s0, s1, LG_KC, da, sa, nc);
            for (int64_t i = i0; i < i1; i += 16) {
                const int nr = i1 - i < 16 ? (int)(i1 - i) : 16;
                const __mmask16 rm = (__mmask16)((1u << nr) - 1);
                if (rp) loom_lg16_prep_rp(wt, false, (const uint8_t *)w, ws, i / 16, s0, s1, bq, dw, mw);
                else loom_lg16_prep(wt, false, (const uint8_t *)w, ws, i, nr, s0, s1, bq, dw, mw);
                if (q50) LG_TILES(false, true);
                else LG_TILES(true, false);
            }
        }
    }
    return true;
}

bool loom_gemm_lg16_avx512vnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                               size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if ((wt != LOOM_TYPE_Q5_0 && wt != LOOM_TYPE_Q4_1 && wt != LOOM_TYPE_Q5_1) || k <= 0 || k % 32 != 0 ||
        j1 - j0 < LG_MIN_COLS || i0 >= i1)
        return false;
    return lg16_gemm(false, wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
}

bool loom_gemm_repacked_lg_avx512vnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as,
                                      float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if ((wt != LOOM_TYPE_Q5_0 && wt != LOOM_TYPE_Q4_1 && wt != LOOM_TYPE_Q5_1) || k <= 0 || k % 32 != 0 ||
        i0 % 16 != 0 || i1 % 16 != 0)
        return false;
    if (i0 >= i1 || j0 >= j1) return true;
    if (j1 - j0 == 1) {
        lg_rp_decode(wt, k / 32, (const uint8_t *)w, ws, (const uint8_t *)a + (size_t)j0 * as, c + (size_t)j0 * ldc, i0, i1);
        return true;
    }
    return lg16_gemm(true, wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
}
