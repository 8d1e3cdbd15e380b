/*
 * kernels_iq8_avxvnni.c - the avxvnni level's prompt-shape gemm for the grid IQ types
 * (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M) times Q8_K (kernels.h gemm
 * contract): the 16-row tile of kernels_iq16_avx512vnni.c on 8-row groups and 256-bit
 * VEX vpdpbusd (Alder Lake and later client cores have AVX-VNNI but no AVX-512).
 *
 * Preparation: each super-block of a weight row is decoded by the AVX2 tile's decoders
 * (loom_iqg_type / loom_iqg_prep: signed int8 values in [-62, 62], an integer scale per
 * 16 values, the f16 scale) and 8 rows are transposed by dwords, so one 32-byte vector
 * holds 4 consecutive values of each of the 8 rows. It happens once per call, 8-row group
 * and k chunk, and serves every column of the call (the engine gives these types
 * 64 x 256 tiles at this level: kernels.h gemm_tile_rows / _cols), where the AVX2 tile
 * decodes once per column chunk and spends a vpmaddubsw + vpdpwssd per 32 products.
 *
 * Product: the prepared values are stored + 128 (unsigned bytes, the unsigned operand of
 * vpdpbusd). Per column, group s of 256 / NS values and 4-value chunk d, one vpdpbusd of
 * the 8 rows' bytes with the column's 4 activation bytes broadcast; the chain starts at
 * -128 x the activation's sum over the group (Q8_K bsums), so it ends at the exact group
 * dot (per lane <= 4 x 190 x 127 per instruction, 8 at most per group: no overflow).
 * Two groups' chains run interleaved for 4 columns (8 independent chains). Then
 * sum_s sc[s] x dot_s (vpmulld; one vpdpwssd per two groups where the dots fit int16,
 * loom_iq16_narrow) is the scalar reference's integer super-block sum, and
 * acc += (d x dy) x sum per super-block, accumulated through c across k chunks, the
 * type's power-of-two factor at the end. TQ1_0 / TQ2_0 (every scale 1) stay on the
 * AVX2 tile (kernels_iq_gemm_avxvnni.c), as at the avx512vnni level.
 */
#include "cpu/kernels_internal.h"
#include "cpu/x86_transpose.h"

#include <immintrin.h>
#include <string.h>

#define IQ8_KC 8 /* super-blocks per k chunk (prepared: IQ8_KC x sizeof(sb8)) */
#define IQ8_CB 4 /* columns per pass */

/* 8 weight rows of one super-block: q the values + 128 (bytes 32 d + 4 r .. + 3 = values
 * 4 d .. 4 d + 3 of row r), sc[s][r] the integer scale of group s (256 / NS values) of
 * row r, dx[r] the block scale */
typedef struct {
    _Alignas(32) uint8_t q[2048];
    _Alignas(32) int32_t sc[16][8];
    _Alignas(32) float dx[8];
} sb8;

/* rows [i, i + nr) (nr <= 8; the others zero) of super-blocks [s0, s1) into o[0 .. s1 - s0) */
static void prep8(loom_iqg_prep_fn prep, size_t bb, int NS, const uint8_t *w, size_t ws, int64_t i, int nr,
                  int64_t s0, int64_t s1, sb8 *o) {
    loom_iqg_prep pr[8];
    for (int r = nr; r < 8; r++) {
        memset(pr[r].w, 0, sizeof pr[r].w);
        memset(pr[r].scv, 0, sizeof pr[r].scv);
        pr[r].dw = 0.f;
    }
    const int sstep = 128 / NS; /* scv entries per group (scv[8 t]: the scale of values 16 t..) */
    const __m256i off = _mm256_set1_epi8((char)0x80);
    for (int64_t b = s0; b < s1; b++, o++) {
        for (int r = 0; r < nr; r++) prep(w + (size_t)(i + r) * ws + (size_t)b * bb, &pr[r]);
        for (int r = 0; r < 8; r++) {
            o->dx[r] = pr[r].dw;
            for (int s = 0; s < NS; s++) o->sc[s][r] = pr[r].scv[sstep * s];
        }
        for (int blk = 0; blk < 8; blk++) {
            __m256i v[8];
            LOOM_UNROLL_ALL
            for (int r = 0; r < 8; r++) v[r] = _mm256_load_si256((const __m256i *)(pr[r].w + 32 * blk));
            loom_transpose8_epi32(v);
            LOOM_UNROLL_ALL
            for (int d = 0; d < 8; d++)
                _mm256_store_si256((__m256i *)(o->q + 32 * (8 * blk + d)), _mm256_xor_si256(v[d], off));
        }
    }
}

static LOOM_ALWAYS_INLINE int32_t ld32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* CB columns [j, j + CB) x rows [row0, row0 + 8) (rm: all-ones lanes for the real ones,
 * full: all 8 real) over the prepared super-blocks [s0, s1) (o[0] is s0); two groups'
 * chains at a time */
static LOOM_ALWAYS_INLINE void tile(int CB, int NS, bool narrow, const uint8_t *a, size_t as, const sb8 *o, float *c, size_t ldc,
                                    int64_t row0, bool full, __m256i rm, int64_t j, int64_t s0, int64_t s1) {
    const int dpg = 64 / NS; /* dwords per group */
    __m256 acc[IQ8_CB];
    float *cp = c + (size_t)j * ldc + (size_t)row0;
    LOOM_UNROLL_ALL
    for (int cc = 0; cc < CB; cc++)
        acc[cc] = s0 == 0 ? _mm256_setzero_ps()
                  : full  ? _mm256_loadu_ps(cp + (size_t)cc * ldc)
                          : _mm256_maskload_ps(cp + (size_t)cc * ldc, rm);
    for (int64_t b = s0; b < s1; b++, o++) {
        const block_q8_K *y[IQ8_CB];
        __m256i isum[IQ8_CB];
        LOOM_UNROLL_ALL
        for (int cc = 0; cc < CB; cc++) {
            y[cc] = (const block_q8_K *)(a + (size_t)(j + cc) * as) + b;
            isum[cc] = _mm256_setzero_si256();
        }
        LOOM_UNROLL_ALL
        for (int s = 0; s < NS; s += 2) {
            __m256i d0[IQ8_CB], d1[IQ8_CB];
            LOOM_UNROLL_ALL
            for (int cc = 0; cc < CB; cc++) { /* bsums: int16 sums of 16 activation values */
                const int16_t *bs = y[cc]->bsums;
                d0[cc] = _mm256_set1_epi32(-128 * (NS == 16 ? bs[s] : bs[2 * s] + bs[2 * s + 1]));
                d1[cc] = _mm256_set1_epi32(-128 * (NS == 16 ? bs[s + 1] : bs[2 * s + 2] + bs[2 * s + 3]));
            }
            LOOM_UNROLL_ALL
            for (int dd = 0; dd < dpg; dd++) {
                const int e0 = dpg * s + dd, e1 = e0 + dpg;
                const __m256i w0 = _mm256_load_si256((const __m256i *)(o->q + 32 * e0));
                const __m256i w1 = _mm256_load_si256((const __m256i *)(o->q + 32 * e1));
                LOOM_UNROLL_ALL
                for (int cc = 0; cc < CB; cc++) {
                    d0[cc] = _mm256_dpbusd_avx_epi32(d0[cc], w0, _mm256_set1_epi32(ld32(y[cc]->qs + 4 * e0)));
                    d1[cc] = _mm256_dpbusd_avx_epi32(d1[cc], w1, _mm256_set1_epi32(ld32(y[cc]->qs + 4 * e1)));
                }
            }
            const __m256i sc0 = _mm256_load_si256((const __m256i *)o->sc[s]);
            const __m256i sc1 = _mm256_load_si256((const __m256i *)o->sc[s + 1]);
            if (narrow) { /* both group dots fit int16: (d0, d1) word pairs x (sc0, sc1), one vpdpwssd */
                const __m256i scp = _mm256_blend_epi16(sc0, _mm256_slli_epi32(sc1, 16), 0xAA);
                LOOM_UNROLL_ALL
                for (int cc = 0; cc < CB; cc++)
                    isum[cc] = _mm256_dpwssd_avx_epi32(
                        isum[cc], _mm256_blend_epi16(d0[cc], _mm256_bslli_epi128(d1[cc], 2), 0xAA), scp);
            } else {
                LOOM_UNROLL_ALL
                for (int cc = 0; cc < CB; cc++)
                    isum[cc] = _mm256_add_epi32(isum[cc], _mm256_add_epi32(_mm256_mullo_epi32(d0[cc], sc0),
                                                                           _mm256_mullo_epi32(d1[cc], sc1)));
            }
        }
        const __m256 dx = _mm256_load_ps(o->dx);
        LOOM_UNROLL_ALL
        for (int cc = 0; cc < CB; cc++)
            acc[cc] = _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_set1_ps(y[cc]->d)), _mm256_cvtepi32_ps(isum[cc]), acc[cc]);
    }
    LOOM_UNROLL_ALL
    for (int cc = 0; cc < CB; cc++) {
        if (full)
            _mm256_storeu_ps(cp + (size_t)cc * ldc, acc[cc]);
        else
            _mm256_maskstore_ps(cp + (size_t)cc * ldc, rm, acc[cc]);
    }
}

static void tiles(int NS, bool narrow, const uint8_t *a, size_t as, const sb8 *o, float *c, size_t ldc, int64_t row0, int nr,
                  int64_t j0, int64_t j1, int64_t s0, int64_t s1) {
    const bool full = nr == 8;
    const __m256i rm = _mm256_cmpgt_epi32(_mm256_set1_epi32(nr), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    int64_t j = j0;
    if (NS == 16 && narrow) {
        for (; j + 4 <= j1; j += 4) tile(4, 16, true, a, as, o, c, ldc, row0, full, rm, j, s0, s1);
        for (; j < j1; j++) tile(1, 16, true, a, as, o, c, ldc, row0, full, rm, j, s0, s1);
    } else if (NS == 16) {
        for (; j + 4 <= j1; j += 4) tile(4, 16, false, a, as, o, c, ldc, row0, full, rm, j, s0, s1);
        for (; j < j1; j++) tile(1, 16, false, a, as, o, c, ldc, row0, full, rm, j, s0, s1);
    } else {
        for (; j + 4 <= j1; j += 4) tile(4, 8, false, a, as, o, c, ldc, row0, full, rm, j, s0, s1);
        for (; j < j1; j++) tile(1, 8, false, a, as, o, c, ldc, row0, full, rm, j, s0, s1);
    }
}

bool loom_gemm_iq8_avxvnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                           size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    loom_iqg_prep_fn prep;
    size_t bb;
    float post;
    if (wt == LOOM_TYPE_TQ1_0 || wt == LOOM_TYPE_TQ2_0 || !loom_iqg_type(wt, &prep, &bb, &post) || j1 - j0 < IQ8_CB ||
        k <= 0 || k % 256 != 0)
        return false;
    const int NS = loom_iq16_groups(wt);
    const bool narrow = loom_iq16_narrow(wt);
    const int64_t nb = k / 256;
    sb8 o[IQ8_KC];
    for (int64_t s0 = 0; s0 < nb; s0 += IQ8_KC) {
        const int64_t s1 = s0 + IQ8_KC < nb ? s0 + IQ8_KC : nb;
        for (int64_t i = i0; i < i1; i += 8) {
            const int nr = i1 - i < 8 ? (int)(i1 - i) : 8;
            prep8(prep, bb, NS, (const uint8_t *)w, ws, i, nr, s0, s1, o);
            tiles(NS, narrow, (const uint8_t *)a, as, o, c, ldc, i, nr, j0, j1, s0, s1);
        }
    }
    if (post != 1.f)
        for (int64_t j = j0; j < j1; j++)
            for (int64_t i = i0; i < i1; i++) c[(size_t)j * ldc + (size_t)i] *= post;
    return true;
}
