/*
 * kernels_iq16_avx512vnni.c - 16-row tiles for the grid / ternary IQ and TQ types
 * (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, TQ1_0, TQ2_0) times Q8_K: the
 * preparation the avx512vnni and amx levels share (loom_iq16_prep) and the avx512vnni
 * level's prompt-shape gemm (kernels.h gemm contract).
 *
 * Preparation: each super-block of a weight row is decoded by the AVX2 tile's decoders
 * (loom_iqg_prep: signed int8 values, an integer scale per 16 values, the f16 scale) and
 * 16 rows are transposed by dwords, so one 64-byte vector holds 4 consecutive values of
 * each of the 16 rows (the order of an AMX B tile and of the repacked K-quant tiles).
 * It happens once per call, 16-row group and k chunk, and serves every column of the call
 * (the engine gives these types 64 x 256 tiles: kernels.h gemm_tile_rows / _cols).
 *
 * Product (this level): the prepared values are stored + 128 (unsigned bytes). Per
 * column, group s of 256 / NS values and 4-value chunk d, one vpdpbusd of the 16 rows'
 * bytes with the column's 4 activation bytes broadcast; the chain starts at -128 x the
 * activation's sum over the group (Q8_K bsums), so it ends at the exact group dot (per
 * lane <= 4 x 190 x 127 per instruction, 16 at most per group: no overflow). Two
 * groups' chains run interleaved for 4 columns (8 independent chains). Then
 * sum_s sc[s] x dot_s (vpmulld; for IQ1_M and Q3_K, whose group dots fit int16
 * (loom_iq16_narrow), one vpdpwssd per two groups on the word pairs (dot_s, dot_s+1)) is
 * the scalar reference's integer super-block sum, and
 * acc += (d x dy) x sum per super-block, the type's power-of-two factor at the end
 * (results identical to the amx level's tile). TQ1_0 / TQ2_0 (every scale 1) stay on
 * kernels_iq_gemm_avx512vnni.c, measured faster for them.
 */
#include "cpu/x86_transpose.h"
#include "cpu/kernels_internal.h"

#include <immintrin.h>
#include <string.h>

#define IQ16_KC 8 /* super-blocks per k chunk (prepared: IQ16_KC x sizeof(loom_sb16)) */
#define IQ16_CB 4 /* columns per pass */


void loom_iq16_prep(loom_iqg_prep_fn prep, size_t bb, int NS, bool u8, const uint8_t *w, size_t ws, int64_t i,
                    int nr, int64_t s0, int64_t s1, loom_sb16 *o) {
    loom_iqg_prep pr[16];
    for (int r = nr; r < 16; r++) {
        memset(pr[r].w, 0, sizeof pr[r].w);
        memset(pr[r].scv, 0, sizeof pr[r].scv);
        pr[r].dw = 0.f;
    }
    const int sstep = 128 / NS; /* scv entries per group */
    const __m512i off = _mm512_set1_epi8((char)0x80);
    for (int64_t b = s0; b < s1; b++, o++) {
        for (int r = 0; r < nr; r++) prep(w + (size_t)(i + r) * ws + (size_t)b * bb, &pr[r]);
        for (int r = 0; r < 16; r++) {
            o->dx[r] = pr[r].dw;
            for (int s = 0; s < NS; s++) o->sc[s][r] = pr[r].scv[sstep * s];
        }
        for (int blk = 0; blk < 4; blk++) {
            __m512i v[16];
            LOOM_UNROLL_ALL
            for (int r = 0; r < 16; r++) v[r] = _mm512_load_si512((const void *)(pr[r].w + 64 * blk));
            loom_transpose16_epi32(v);
            LOOM_UNROLL_ALL
            for (int d = 0; d < 16; d++)
                _mm512_store_si512((void *)(o->q + 64 * (16 * blk + d)), u8 ? _mm512_xor_si512(v[d], off) : v[d]);
        }
    }
}

static LOOM_ALWAYS_INLINE int32_t ld32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* CB columns [j, j + CB) x rows [row0, row0 + 16) (rm: the real ones) over the prepared
 * super-blocks [s0, s1) (o[0] is s0); two groups' chains at a time */
static LOOM_ALWAYS_INLINE void tile(int CB, int NS, bool narrow, const uint8_t *a, size_t as, const loom_sb16 *o, float *c,
                                    size_t ldc, int64_t row0, __mmask16 rm, int64_t j, int64_t s0, int64_t s1) {
    const int dpg = 64 / NS;
    __m512 acc[IQ16_CB];
    float *cp = c + (size_t)j * ldc + (size_t)row0;
    LOOM_UNROLL_ALL
    for (int cc = 0; cc < CB; cc++) acc[cc] = s0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(rm, cp + (size_t)cc * ldc);
    for (int64_t b = s0; b < s1; b++, o++) {
        const block_q8_K *y[IQ16_CB];
        __m512i isum[IQ16_CB];
        LOOM_UNROLL_ALL
        for (int cc = 0; cc < CB; cc++) {
            y[cc] = (const block_q8_K *)(a + (size_t)(j + cc) * as) + b;
            isum[cc] = _mm512_setzero_si512();
        }
        LOOM_UNROLL_ALL
        for (int s = 0; s < NS; s += 2) {
            __m512i d0[IQ16_CB], d1[IQ16_CB];
            LOOM_UNROLL_ALL
            for (int cc = 0; cc < CB; cc++) {
                const int16_t *bs = y[cc]->bsums;
                d0[cc] = _mm512_set1_epi32(-128 * (NS == 16 ? bs[s] : bs[2 * s] + bs[2 * s + 1]));
                d1[cc] = _mm512_set1_epi32(-128 * (NS == 16 ? bs[s + 1] : bs[2 * s + 2] + bs[2 * s + 3]));
            }
            LOOM_UNROLL_ALL
            for (int dd = 0; dd < dpg; dd++) {
                const int e0 = dpg * s + dd, e1 = e0 + dpg;
                const __m512i w0 = _mm512_load_si512((const void *)(o->q + 64 * e0));
                const __m512i w1 = _mm512_load_si512((const void *)(o->q + 64 * e1));
                LOOM_UNROLL_ALL
                for (int cc = 0; cc < CB; cc++) {
                    d0[cc] = _mm512_dpbusd_epi32(d0[cc], w0, _mm512_set1_epi32(ld32(y[cc]->qs + 4 * e0)));
                    d1[cc] = _mm512_dpbusd_epi32(d1[cc], w1, _mm512_set1_epi32(ld32(y[cc]->qs + 4 * e1)));
                }
            }
            const __m512i sc0 = _mm512_loadu_si512((const void *)o->sc[s]), sc1 = _mm512_loadu_si512((const void *)o->sc[s + 1]);
            if (narrow) { /* both group dots fit int16: (d0, d1) word pairs x (sc0, sc1), one vpdpwssd */
                const __m512i scp = _mm512_or_si512(_mm512_and_si512(sc0, _mm512_set1_epi32(0xFFFF)),
                                                    _mm512_slli_epi32(sc1, 16));
                LOOM_UNROLL_ALL
                for (int cc = 0; cc < CB; cc++)
                    isum[cc] = _mm512_dpwssd_epi32(
                        isum[cc], _mm512_mask_blend_epi16(0xAAAAAAAAu, d0[cc], _mm512_bslli_epi128(d1[cc], 2)), scp);
            } else {
                LOOM_UNROLL_ALL
                for (int cc = 0; cc < CB; cc++)
                    isum[cc] = _mm512_add_epi32(isum[cc], _mm512_add_epi32(_mm512_mullo_epi32(d0[cc], sc0),
                                                                           _mm512_mullo_epi32(d1[cc], sc1)));
            }
        }
        const __m512 dx = _mm512_loadu_ps(o->dx);
        LOOM_UNROLL_ALL
        for (int cc = 0; cc < CB; cc++)
            acc[cc] = _mm512_fmadd_ps(_mm512_mul_ps(dx, _mm512_set1_ps(y[cc]->d)), _mm512_cvtepi32_ps(isum[cc]), acc[cc]);
    }
    LOOM_UNROLL_ALL
    for (int cc = 0; cc < CB; cc++) _mm512_mask_storeu_ps(cp + (size_t)cc * ldc, rm, acc[cc]);
}

static void tiles(int NS, bool narrow, const uint8_t *a, size_t as, const loom_sb16 *o, float *c, size_t ldc, int64_t row0,
                  __mmask16 rm, int64_t j0, int64_t j1, int64_t s0, int64_t s1) {
    int64_t j = j0;
    if (NS == 16 && narrow) {
        for (; j + 4 <= j1; j += 4) tile(4, 16, true, a, as, o, c, ldc, row0, rm, j, s0, s1);
        for (; j < j1; j++) tile(1, 16, true, a, as, o, c, ldc, row0, rm, j, s0, s1);
    } else if (NS == 16) {
        for (; j + 4 <= j1; j += 4) tile(4, 16, false, a, as, o, c, ldc, row0, rm, j, s0, s1);
        for (; j < j1; j++) tile(1, 16, false, a, as, o, c, ldc, row0, rm, j, s0, s1);
    } else {
        for (; j + 4 <= j1; j += 4) tile(4, 8, false, a, as, o, c, ldc, row0, rm, j, s0, s1);
        for (; j < j1; j++) tile(1, 8, false, a, as, o, c, ldc, row0, rm, j, s0, s1);
    }
}

bool loom_gemm_iq16_avx512vnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                               size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    loom_iqg_prep_fn prep;
    size_t bb;
    float post;
    if (wt == LOOM_TYPE_TQ1_0 || wt == LOOM_TYPE_TQ2_0 || !loom_iqg_type(wt, &prep, &bb, &post) || j1 - j0 < IQ16_CB ||
        k <= 0 || k % 256 != 0)
        return false;
    const int NS = loom_iq16_groups(wt);
    const bool narrow = loom_iq16_narrow(wt);
    const int64_t nb = k / 256;
    loom_sb16 o[IQ16_KC];
    for (int64_t s0 = 0; s0 < nb; s0 += IQ16_KC) {
        const int64_t s1 = s0 + IQ16_KC < nb ? s0 + IQ16_KC : nb;
        for (int64_t i = i0; i < i1; i += 16) {
            const int nr = i1 - i < 16 ? (int)(i1 - i) : 16;
            loom_iq16_prep(prep, bb, NS, true, (const uint8_t *)w, ws, i, nr, s0, s1, o);
            tiles(NS, narrow, (const uint8_t *)a, as, o, c, ldc, i, (__mmask16)((1u << nr) - 1), j0, j1, s0, s1);
        }
    }
    if (post != 1.f)
        for (int64_t j = j0; j < j1; j++)
            for (int64_t i = i0; i < i1; i++) c[(size_t)j * ldc + (size_t)i] *= post;
    return true;
}
