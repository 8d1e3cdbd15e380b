/* AVX-512 VNNI prompt-shape gemm for the grid and ternary IQ / TQ types (IQ2_XXS, IQ2_XS,
 * IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, TQ1_0, TQ2_0) times Q8_K activations (kernels.h
 * gemm contract): the tile of kernels_iq_gemm_avx2.c (read its comment first) on 512-bit
 * vectors, with the same super-block preparation (loom_iqg_prep, AVX2 code).
 *
 * IQG_R rows x IQG_C columns per pass; a 512-bit step covers 64 weights (two of the AVX2
 * tile's 32-value steps, in the low and the high 256 bits). Per step and column the
 * activation is offset once (a ^ 0x80 = a + 128, unsigned); per row and column:
 * vpmaddubsw (pair sums exact, as in the AVX2 tile) and vpdpwssd with the scale pairs,
 * or for TQ1_0 / TQ2_0 (every scale 1) one vpdpbusd, whose 4-product lane sums are the
 * same integers. The low 256 bits start at the row's offset correction (ncorr). After a
 * super-block, low + high 256 bits are the AVX2 tile's 8 int32 lane sums exactly; they
 * take the same float FMA with (dw * dy) per lane (two columns per 512-bit FMA), and the
 * same final 8-lane sum, so the float results are identical to the AVX2 tile's.
 * kernels_iq_gemm_avx512.c includes this file with LOOM_IQG_NO_VNNI for the avx512 level
 * (dp_scaled / dp_unit without VNNI instructions). */
#include "cpu/kernels_internal.h"

#include <immintrin.h>

#define IQG_MIN_COLS 4
#define IQG_CHUNK 64
#define IQG_R 4
#define IQG_C 4

#ifdef LOOM_IQG_NO_VNNI /* kernels_iq_gemm_avx512.c: vpmaddwd + vpaddd, int16 sums for TQ */
#define IQG_FN(name) name##_avx512
static inline __m512i dp_scaled(__m512i acc, __m512i p, __m512i s) {
    return _mm512_add_epi32(acc, _mm512_madd_epi16(p, s));
}
static inline __m512i dp_unit(__m512i acc16, __m512i u, __m512i w) { /* <= 4 * 2 * 255 per int16 */
    return _mm512_add_epi16(acc16, _mm512_maddubs_epi16(u, w));
}
static inline __m512i unit_widen(__m512i acc16, __m512i n) {
    return _mm512_add_epi32(n, _mm512_madd_epi16(acc16, _mm512_set1_epi16(1)));
}
#define IQG_UNIT_START(n) _mm512_setzero_si512()
#else
#define IQG_FN(name) name##_avx512vnni
static inline __m512i dp_scaled(__m512i acc, __m512i p, __m512i s) { return _mm512_dpwssd_epi32(acc, p, s); }
static inline __m512i dp_unit(__m512i acc, __m512i u, __m512i w) { return _mm512_dpbusd_epi32(acc, u, w); }
static inline __m512i unit_widen(__m512i acc, __m512i n) { (void)n; return acc; }
#define IQG_UNIT_START(n) (n)
#endif

typedef struct {
    _Alignas(64) float v[IQG_CHUNK][8];
} iqg_acc;

/* R rows x C columns from j of super-block b into acc[r].v[jj..jj + C) */
static LOOM_ALWAYS_INLINE void tile(int R, int C, bool unit, const loom_iqg_prep *pr, const void *a, size_t as,
                                    int64_t j, int64_t b, iqg_acc *acc, int64_t jj) {
    const bool first = b == 0; /* accumulators start at 0: not read */
    const block_q8_K *y[IQG_C];
    __m512i isum[IQG_R][IQG_C];
    const __m512i off = _mm512_set1_epi8((char)0x80);
    LOOM_UNROLL
    for (int c = 0; c < C; c++) y[c] = (const block_q8_K *)((const uint8_t *)a + (size_t)(j + c) * as) + b;
    LOOM_UNROLL
    for (int r = 0; r < R; r++) {
        const __m512i n = _mm512_zextsi256_si512(_mm256_load_si256((const __m256i *)pr[r].ncorr));
        LOOM_UNROLL
        for (int c = 0; c < C; c++) isum[r][c] = unit ? IQG_UNIT_START(n) : n;
    }
    LOOM_UNROLL
    for (int p = 0; p < 4; p++) {
        __m512i ax[IQG_C];
        LOOM_UNROLL
        for (int c = 0; c < C; c++) ax[c] = _mm512_xor_si512(_mm512_loadu_si512(y[c]->qs + 64 * p), off);
        LOOM_UNROLL
        for (int r = 0; r < R; r++) {
            const __m512i wv = _mm512_load_si512(pr[r].w + 64 * p);
            if (unit) {
                LOOM_UNROLL
                for (int c = 0; c < C; c++) isum[r][c] = dp_unit(isum[r][c], ax[c], wv);
            } else {
                const __m512i sv = _mm512_load_si512(pr[r].scv + 32 * p);
                LOOM_UNROLL
                for (int c = 0; c < C; c++)
                    isum[r][c] = dp_scaled(isum[r][c], _mm512_maddubs_epi16(ax[c], wv), sv);
            }
        }
    }
    if (unit) {
        LOOM_UNROLL
        for (int r = 0; r < R; r++) {
            const __m512i n = _mm512_zextsi256_si512(_mm256_load_si256((const __m256i *)pr[r].ncorr));
            LOOM_UNROLL
            for (int c = 0; c < C; c++) isum[r][c] = unit_widen(isum[r][c], n);
        }
    }
    /* fold and scale: two columns per 512-bit vector, [col c | col c + 1] */
    LOOM_UNROLL
    for (int c = 0; c + 1 < C; c += 2) {
        const __m512 dy = _mm512_insertf32x8(_mm512_set1_ps(y[c]->d), _mm256_set1_ps(y[c + 1]->d), 1);
        LOOM_UNROLL
        for (int r = 0; r < R; r++) {
            const __m512i lo = _mm512_shuffle_i64x2(isum[r][c], isum[r][c + 1], 0x44);
            const __m512i hi = _mm512_shuffle_i64x2(isum[r][c], isum[r][c + 1], 0xEE);
            const __m512 s = _mm512_mul_ps(_mm512_set1_ps(pr[r].dw), dy);
            float *ap = acc[r].v[jj + c];
            _mm512_store_ps(ap, _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(_mm512_add_epi32(lo, hi)),
                                                first ? _mm512_setzero_ps() : _mm512_load_ps(ap)));
        }
    }
    if (C & 1) {
        const int c = C - 1;
        LOOM_UNROLL
        for (int r = 0; r < R; r++) {
            const __m256i t = _mm256_add_epi32(_mm512_castsi512_si256(isum[r][c]), _mm512_extracti64x4_epi64(isum[r][c], 1));
            float *ap = acc[r].v[jj + c];
            _mm256_store_ps(ap, _mm256_fmadd_ps(_mm256_set1_ps(pr[r].dw * y[c]->d), _mm256_cvtepi32_ps(t),
                                                first ? _mm256_setzero_ps() : _mm256_load_ps(ap)));
        }
    }
}

static inline float hsum8(const float *v) {
    const __m256 x = _mm256_load_ps(v);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static LOOM_ALWAYS_INLINE void rows(int R, bool unit, loom_iqg_prep_fn prep, size_t bb, float post, int64_t nb,
                                    const uint8_t *row, size_t ws, const void *a, size_t as, float *c, size_t ldc,
                                    int64_t i, int64_t jc, int64_t jn) {
    loom_iqg_prep pr[IQG_R];
    iqg_acc acc[IQG_R];
    for (int64_t b = 0; b < nb; b++) {
        for (int r = 0; r < R; r++) prep(row + (size_t)r * ws + (size_t)b * bb, &pr[r]);
        int64_t jj = 0;
        for (; jj + IQG_C <= jn; jj += IQG_C) tile(R, IQG_C, unit, pr, a, as, jc + jj, b, acc, jj);
        switch (jn - jj) {
        case 3: tile(R, 3, unit, pr, a, as, jc + jj, b, acc, jj); break;
        case 2: tile(R, 2, unit, pr, a, as, jc + jj, b, acc, jj); break;
        case 1: tile(R, 1, unit, pr, a, as, jc + jj, b, acc, jj); break;
        default: break;
        }
    }
    for (int r = 0; r < R; r++)
        for (int64_t jj = 0; jj < jn; jj++) c[(size_t)(jc + jj) * ldc + (size_t)(i + r)] = nb ? post * hsum8(acc[r].v[jj]) : 0.f;
}

#define IQG_ROWS rows
#include "cpu/kernels_iq_gemm_driver.h"
