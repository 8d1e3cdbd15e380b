/* AVX2 matmul for Q4_K, Q5_K, Q6_K and IQ4_XS weights in the row-interleaved layout
 * (quant/repack.h) times Q8_K activations: prompt tiles and decode.
 *
 * Unit of work: 8 rows (one half of a 16-row group: in every 64-byte chunk of the
 * layout rows 0..7 are the first 32 bytes, rows 8..15 the next), so one ymm holds a
 * 4-byte chunk of 8 rows and a broadcast activation dword gives 8 row sums in its dword
 * lanes. Per lane the arithmetic is the scalar reference's (loom_gemm_repacked_ref):
 * the exact int32 super-block sums, then the same fma chain, so results match it bit
 * for bit.
 *
 * Exact integer sums without vpdpbusd (vpmaddubsw saturates at int16), for any
 * activation byte (-128 included):
 *  - Q4_K: codes 0..15; the 8 chunks of one sub-block add in int16 lanes (16 products
 *    of at most 15 * 128: <= 30720), then one vpmaddwd with the word pair
 *    (sc, sc) of the lane's row scales and widens them exactly.
 *  - Q5_K: codes 0..31; 4 chunks per int16 sum (8 products: <= 31744), two vpmaddwd
 *    per sub-block.
 *  - Q6_K: codes 0..63; 2 chunks per int16 sum (4 products: <= 32256), vpmaddwd with
 *    the signed 8-bit group scale as a word pair; the code offset is removed once per
 *    super-block as -32 * sum_g sc_g * bsum_g (vpmaddwd of scale pairs with the
 *    activation's group-sum pairs), as the reference does in exact integers.
 *  - Q4_K / Q5_K mins: sum_s m[s] * (bsum_2s + bsum_2s+1) as four vpmaddwd of
 *    (m[2t], m[2t+1]) word pairs with the activation's sub-block-sum pairs.
 *  - IQ4_XS: signed table codes (vpshufb), the sign trick (|code| <= 127), each chunk
 *    widened by vpmaddwd with its (ls - 32) scale pair; exact when no activation byte is
 *    -128, so columns holding one (the Q8_K quantizer never writes it) go to the
 *    scalar reference.
 *
 * Weight-side scale decoding is vectorized per super-block and 16-row group (the
 * 6-bit Q4_K scales and mins from the layout's low-nibble and high-bit bytes), and
 * shared by every column of the tile. Columns are taken up to KQ_MAXCB at a time
 * (register tile); activation scales and sum pairs are prepared once per slab of
 * super-blocks and column block, and reused by every row unit of the call.
 *
 * Decode (one column) takes both halves of a group per pass, so each 64-byte line is
 * read once and each activation broadcast serves 16 rows, and prefetches the
 * super-block two ahead in software: 1.1B Q4_K_M at -t 2, tg32 12 -> 19.5 t/s
 * (medians of 4 interleaved runs), Q6_K 11.9 -> 16.9 t/s. */
#include "cpu/kernels_internal.h"
#include "quant/iq_tables.h"
#include "quant/repack.h"

#include <immintrin.h>
#include <string.h>

#define AI static inline __attribute__((always_inline))
#define KQ_UNROLL _Pragma("GCC unroll 8")
#define KQ_MAXCB 4
#define KQ_COLS 64   /* columns whose activation data is prepared together */
#define KQ_SLAB 32   /* super-blocks per activation slab */
#define KQ_PRE 2048  /* prepared (column, super-block) entries */

enum { KQ_Q4, KQ_Q5, KQ_Q6, KQ_IX };

/* The avxvnni level compiles this file once more (kernels_repack_kq_avxvnni.c defines
 * LOOM_RP_VNNI, CMake adds -mavxvnni). There a sub-block's (Q6_K: a group's) products
 * add in int32 lanes with VEX vpdpbusd (no int16 bound, no flush), and the scale is
 * applied once per sub-block by vpmulld with the lane's scale as an int32 instead of
 * vpmaddwd with a word pair. The integer sums are the same exact values. */
#ifdef LOOM_RP_VNNI
#define KQ_FN(name) name##_avxvnni
#define KQ_VNNI 1
#else
#define KQ_FN(name) name##_avx2
#define KQ_VNNI 0
#endif

/* s + the products of unsigned bytes u and signed bytes y (AVX2: int16 pair sums, the
 * caller bounds how many; VNNI: int32 quad sums) */
AI __m256i kq_acc_us(__m256i s, __m256i u, __m256i y) {
#ifdef LOOM_RP_VNNI
    return _mm256_dpbusd_avx_epi32(s, u, y);
#else
    return _mm256_add_epi16(s, _mm256_maddubs_epi16(u, y));
#endif
}

/* isum + s times the lane's scale: sc is the word pair (sc, sc) for AVX2 (vpmaddwd of
 * the int16 sums), the int32 scale for VNNI (vpmulld of the int32 sums) */
AI __m256i kq_scale_add(__m256i isum, __m256i s, __m256i sc) {
#ifdef LOOM_RP_VNNI
    return _mm256_add_epi32(isum, _mm256_mullo_epi32(s, sc));
#else
    return _mm256_add_epi32(isum, _mm256_madd_epi16(s, sc));
#endif
}

AI __m256i bcast32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* Per column and super-block of [s0, s1): the activation scale and the word pairs
 * (bsum_2t | bsum_2t+1 << 16) of its 16-value group sums: for Q4_K / Q5_K the four
 * pairs of 32-value sub-block sums, for Q6_K the eight pairs of group sums. */
static void kq_prepare(int kind, const uint8_t *a, size_t as, int64_t j0, int64_t n, int64_t s0, int64_t s1,
                       int64_t stride, float *dy, int32_t *bs) {
    for (int64_t cc = 0; cc < n; cc++) {
        const block_q8_K *y = (const block_q8_K *)(a + (size_t)(j0 + cc) * as);
        for (int64_t b = s0; b < s1; b++) {
            const int64_t e = cc * stride + (b - s0);
            dy[e] = y[b].d;
            for (int t = 0; t < 8; t++) {
                int lo, hi;
                if (kind == KQ_Q6) {
                    lo = y[b].bsums[2 * t];
                    hi = y[b].bsums[2 * t + 1];
                } else {
                    if (t >= 4) break;
                    lo = y[b].bsums[4 * t] + y[b].bsums[4 * t + 1];
                    hi = y[b].bsums[4 * t + 2] + y[b].bsums[4 * t + 3];
                }
                bs[8 * e + t] = (int32_t)(((uint32_t)hi << 16) | ((uint32_t)lo & 0xFFFFu));
            }
        }
    }
}

/* Q4_K / Q5_K scales and mins of one super-block of a 16-row group: scm[16 s + r] =
 * sc[s] of row r, scm[128 + 16 s + r] = m[s] (the layout's [64, 256) decoded). */
AI void k4_scales(const uint8_t *p, uint8_t *scm) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m3 = _mm256_set1_epi8(0x03);
    const __m256i lo0 = _mm256_loadu_si256((const __m256i *)(p + 64)), lo1 = _mm256_loadu_si256((const __m256i *)(p + 96));
    const __m256i lo2 = _mm256_loadu_si256((const __m256i *)(p + 128));
    const __m256i lo3 = _mm256_loadu_si256((const __m256i *)(p + 160));
    const __m256i h0 = _mm256_loadu_si256((const __m256i *)(p + 192)), h1 = _mm256_loadu_si256((const __m256i *)(p + 224));
#define K4_HB(h, sh) _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, sh), m3), 4)
#define K4_LO(v) _mm256_and_si256(v, m4)
#define K4_HI(v) _mm256_and_si256(_mm256_srli_epi16(v, 4), m4)
    _mm256_store_si256((__m256i *)scm, _mm256_or_si256(K4_LO(lo0), K4_HB(h0, 0)));
    _mm256_store_si256((__m256i *)(scm + 32), _mm256_or_si256(K4_LO(lo1), K4_HB(h1, 0)));
    _mm256_store_si256((__m256i *)(scm + 64), _mm256_or_si256(K4_LO(lo2), K4_HB(h0, 2)));
    _mm256_store_si256((__m256i *)(scm + 96), _mm256_or_si256(K4_LO(lo3), K4_HB(h1, 2)));
    _mm256_store_si256((__m256i *)(scm + 128), _mm256_or_si256(K4_HI(lo0), K4_HB(h0, 4)));
    _mm256_store_si256((__m256i *)(scm + 160), _mm256_or_si256(K4_HI(lo1), K4_HB(h1, 4)));
    _mm256_store_si256((__m256i *)(scm + 192), _mm256_or_si256(K4_HI(lo2), K4_HB(h0, 6)));
    _mm256_store_si256((__m256i *)(scm + 224), _mm256_or_si256(K4_HI(lo3), K4_HB(h1, 6)));
#undef K4_HB
#undef K4_LO
#undef K4_HI
}

/* dword lane r = (u[r], u[r]) as two words, from 8 unsigned bytes u */
AI __m256i upair(const uint8_t *u) {
    int64_t v;
    memcpy(&v, u, 8);
    const __m256i ctl = _mm256_setr_epi8(0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1, 4, -1, 4, -1, 5, -1,
                                         5, -1, 6, -1, 6, -1, 7, -1, 7, -1);
    return _mm256_shuffle_epi8(_mm256_set1_epi64x(v), ctl);
}

/* dword lane r = (s[r], s[r]) as two words, from 8 signed bytes s */
AI __m256i spair(const uint8_t *s) {
    const __m256i x = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)s));
    return _mm256_blend_epi16(x, _mm256_slli_epi32(x, 16), 0xAA);
}

/* dword lane r = (a[r], b[r]) as two words (zero- or sign-extended bytes) */
AI __m256i pair2(const uint8_t *a, const uint8_t *b, bool sgn) {
    const __m128i v = _mm_unpacklo_epi8(_mm_loadl_epi64((const __m128i *)a), _mm_loadl_epi64((const __m128i *)b));
    return sgn ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
}

/* bit b of every byte of v moved to bit 4 (other bits garbage) */
AI __m256i bit4(__m256i v, int b) {
    return b < 4 ? _mm256_slli_epi16(v, 4 - b) : b > 4 ? _mm256_srli_epi16(v, b - 4) : v;
}

/* Software prefetch of one super-block of a 16-row group (bstep bytes at p). This file's
 * decode prefetches are stream prefetches (kernels_internal.h LOOM_PFS0, off on AMD): at
 * this level on a Zen 4 (LOOM_CPU_ISA=avx2), 1.1B tg64 one thread, with / without them,
 * Q4_K_M 29.4-30.6 / 31.7-34.4 t/s, Q6_K 13.7-14.2 / 18.1-18.7. */
AI void prefetch_sb(const uint8_t *p, size_t bstep) {
    for (size_t o = 0; o < bstep; o += 64) LOOM_PFS0((const char *)(p + o));
}

/* The float accumulators of a tile (NH halves x CB columns, output rows from ro):
 * zero on the first slab, else the partial sums stored in c by the previous one. */
AI void acc_load(int CB, int NH, __m256 acc[2][KQ_MAXCB], const float *c, size_t ldc, int64_t j, size_t ro,
                 int64_t s0) {
    KQ_UNROLL
    for (int hx = 0; hx < NH; hx++)
        KQ_UNROLL
        for (int cc = 0; cc < CB; cc++)
            acc[hx][cc] = s0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(c + (size_t)(j + cc) * ldc + ro + 8u * (size_t)hx);
}

AI void acc_store(int CB, int NH, __m256 acc[2][KQ_MAXCB], float *c, size_t ldc, int64_t j, size_t ro) {
    KQ_UNROLL
    for (int hx = 0; hx < NH; hx++)
        KQ_UNROLL
        for (int cc = 0; cc < CB; cc++) _mm256_storeu_ps(c + (size_t)(j + cc) * ldc + ro + 8u * (size_t)hx, acc[hx][cc]);
}

/* Per super-block b: the columns' activation quants and zeroed integer sums. */
AI void sb_begin(int CB, int NH, const uint8_t *a, size_t as, int64_t j, int64_t b, const int8_t *yq[KQ_MAXCB],
                 __m256i isum[2][KQ_MAXCB]) {
    KQ_UNROLL
    for (int cc = 0; cc < CB; cc++) {
        yq[cc] = ((const block_q8_K *)(a + (size_t)(j + cc) * as))[b].qs;
        KQ_UNROLL
        for (int hx = 0; hx < NH; hx++) isum[hx][cc] = _mm256_setzero_si256();
    }
}

/* Q4_K / Q5_K: rows of unit (g, h) (8 rows) x columns [j, j + CB), super-blocks [s0, s1) */
AI void k45_tile(int CB, int NH, bool q5, const uint8_t *w, size_t ws, const uint8_t *a, size_t as, float *c,
                 size_t ldc, int64_t g, int h0, int64_t j, int64_t s0, int64_t s1, const float *dy, const int32_t *bs,
                 int64_t stride) {
    const size_t bstep = (q5 ? sizeof(block_q5_K) : sizeof(block_q4_K)) * LOOM_REPACK_ROWS;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m16 = _mm256_set1_epi8(0x10);
    const size_t ro = (size_t)g * LOOM_REPACK_ROWS + 8u * (size_t)h0;
    __m256 acc[2][KQ_MAXCB];
    acc_load(CB, NH, acc, c, ldc, j, ro, s0);
    const uint8_t *p = w + (size_t)g * ws * LOOM_REPACK_ROWS + (size_t)s0 * bstep;
    _Alignas(32) uint8_t scm[256];
    for (int64_t b = s0; b < s1; b++, p += bstep) {
        k4_scales(p, scm);
        const int8_t *yq[KQ_MAXCB];
        __m256i isum[2][KQ_MAXCB];
        sb_begin(CB, NH, a, as, j, b, yq, isum);
        KQ_UNROLL
        for (int s = 0; s < 8; s++) { /* sub-block s: piece s / 2, low (even) or high (odd) nibbles */
            __m256i sc[2], s16[2][KQ_MAXCB];
            KQ_UNROLL
            for (int hx = 0; hx < NH; hx++) {
                sc[hx] = KQ_VNNI ? _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(scm + 16 * s + 8 * (h0 + hx))))
                                 : upair(scm + 16 * s + 8 * (h0 + hx));
                KQ_UNROLL
                for (int cc = 0; cc < CB; cc++) s16[hx][cc] = _mm256_setzero_si256();
            }
            KQ_UNROLL
            for (int ch = 0; ch < 8; ch++) {
                if (!KQ_VNNI && q5 && ch == 4) /* Q5_K: at most 4 chunks per int16 sum */
                    KQ_UNROLL
                    for (int hx = 0; hx < NH; hx++)
                        KQ_UNROLL
                        for (int cc = 0; cc < CB; cc++) {
                            isum[hx][cc] = kq_scale_add(isum[hx][cc], s16[hx][cc], sc[hx]);
                            s16[hx][cc] = _mm256_setzero_si256();
                        }
                /* one half: broadcast per use (fewer live registers at CB 4); two halves
                 * (decode): each broadcast serves both */
                __m256i yv[KQ_MAXCB];
                if (NH == 2 && s % 2 == 0) { /* decode: the super-block two ahead */
                    LOOM_PFS0((const char *)(p + loom_repack_kq_qs(q5, (size_t)(8 * (s / 2) + ch)) + 2 * bstep));
                    if (s == 0 && ch < 4) LOOM_PFS0((const char *)(p + 64 * ch + 2 * bstep));
                    if (q5 && s == 2) LOOM_PFS0((const char *)(p + loom_repack_q5k_qh((size_t)ch) + 2 * bstep));
                }
                if (NH == 2)
                    KQ_UNROLL
                    for (int cc = 0; cc < CB; cc++) yv[cc] = bcast32(yq[cc] + 32 * s + 4 * ch);
                KQ_UNROLL
                for (int hx = 0; hx < NH; hx++) {
                    const int h = h0 + hx;
                    const uint8_t *pq = p + loom_repack_kq_qs(q5, (size_t)(8 * (s / 2) + ch));
                    const __m256i v = _mm256_loadu_si256((const __m256i *)(pq + 32 * h));
                    __m256i u = s % 2 ? _mm256_and_si256(_mm256_srli_epi16(v, 4), m4) : _mm256_and_si256(v, m4);
                    if (q5) {
                        const __m256i qh =
                            _mm256_loadu_si256((const __m256i *)(p + loom_repack_q5k_qh((size_t)ch) + 32 * h));
                        u = _mm256_or_si256(u, _mm256_and_si256(bit4(qh, s), m16));
                    }
                    KQ_UNROLL
                    for (int cc = 0; cc < CB; cc++)
                        s16[hx][cc] = kq_acc_us(s16[hx][cc], u, NH == 2 ? yv[cc] : bcast32(yq[cc] + 32 * s + 4 * ch));
                }
            }
            KQ_UNROLL
            for (int hx = 0; hx < NH; hx++)
                KQ_UNROLL
                for (int cc = 0; cc < CB; cc++) isum[hx][cc] = kq_scale_add(isum[hx][cc], s16[hx][cc], sc[hx]);
        }
        KQ_UNROLL
        for (int hx = 0; hx < NH; hx++) {
            const int h = h0 + hx;
            __m256i mp[4];
            KQ_UNROLL
            for (int t = 0; t < 4; t++) mp[t] = pair2(scm + 128 + 32 * t + 8 * h, scm + 144 + 32 * t + 8 * h, false);
            const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 16 * h)));
            const __m256 dm = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 32 + 16 * h)));
            KQ_UNROLL
            for (int cc = 0; cc < CB; cc++) {
                const int64_t e = cc * stride + (b - s0);
                const int32_t *q = bs + 8 * e;
                __m256i ms = _mm256_madd_epi16(mp[0], _mm256_set1_epi32(q[0]));
                ms = _mm256_add_epi32(ms, _mm256_madd_epi16(mp[1], _mm256_set1_epi32(q[1])));
                ms = _mm256_add_epi32(ms, _mm256_madd_epi16(mp[2], _mm256_set1_epi32(q[2])));
                ms = _mm256_add_epi32(ms, _mm256_madd_epi16(mp[3], _mm256_set1_epi32(q[3])));
                const __m256 dyv = _mm256_set1_ps(dy[e]);
                acc[hx][cc] = _mm256_fmadd_ps(_mm256_mul_ps(dyv, dx), _mm256_cvtepi32_ps(isum[hx][cc]), acc[hx][cc]);
                acc[hx][cc] = _mm256_fnmadd_ps(_mm256_mul_ps(dyv, dm), _mm256_cvtepi32_ps(ms), acc[hx][cc]);
            }
        }
    }
    acc_store(CB, NH, acc, c, ldc, j, ro);
}

/* Q6_K: rows of unit (g, h) x columns [j, j + CB), super-blocks [s0, s1). Value
 * 128 hh + 32 q + l (q = 0..3, l = 0..31) has its low 4 bits in ql byte 64 hh + l
 * (q = 0, 2) or 64 hh + 32 + l (q = 1, 3), low nibble for q < 2, and its high 2 bits
 * at bit 2 q of qh byte 32 hh + l; its group is 8 hh + 2 q + l / 16. */
AI void k6_tile(int CB, int NH, const uint8_t *w, size_t ws, const uint8_t *a, size_t as, float *c, size_t ldc,
                int64_t g, int h0, int64_t j, int64_t s0, int64_t s1, const float *dy, const int32_t *bs,
                int64_t stride) {
    const size_t bstep = sizeof(block_q6_K) * LOOM_REPACK_ROWS;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
    const size_t ro = (size_t)g * LOOM_REPACK_ROWS + 8u * (size_t)h0;
    __m256 acc[2][KQ_MAXCB];
    acc_load(CB, NH, acc, c, ldc, j, ro, s0);
    const uint8_t *p = w + (size_t)g * ws * LOOM_REPACK_ROWS + (size_t)s0 * bstep;
    for (int64_t b = s0; b < s1; b++, p += bstep) {
        if (NH == 2) prefetch_sb(p + 2 * bstep, bstep); /* decode: the super-block two ahead */
        const int8_t *yq[KQ_MAXCB];
        __m256i isum[2][KQ_MAXCB];
        sb_begin(CB, NH, a, as, j, b, yq, isum);
        KQ_UNROLL
        for (int hh = 0; hh < 2; hh++)
            KQ_UNROLL
            for (int q = 0; q < 4; q++)
                KQ_UNROLL
                for (int lh = 0; lh < 2; lh++) { /* group 8 hh + 2 q + lh: chunks 4 lh .. 4 lh + 3 */
                    __m256i s16[2][KQ_MAXCB];
                    KQ_UNROLL
                    for (int pr = 0; pr < 2; pr++) {
                        if (pr == 0 || !KQ_VNNI) /* AVX2: 2 chunks per int16 sum; VNNI: the group */
                            KQ_UNROLL
                            for (int hx = 0; hx < NH; hx++)
                                KQ_UNROLL
                                for (int cc = 0; cc < CB; cc++) s16[hx][cc] = _mm256_setzero_si256();
                        KQ_UNROLL
                        for (int ci = 4 * lh + 2 * pr; ci < 4 * lh + 2 * pr + 2; ci++) {
                            __m256i yv[KQ_MAXCB];
                            if (NH == 2)
                                KQ_UNROLL
                                for (int cc = 0; cc < CB; cc++) yv[cc] = bcast32(yq[cc] + 128 * hh + 32 * q + 4 * ci);
                            KQ_UNROLL
                            for (int hx = 0; hx < NH; hx++) {
                                const int h = h0 + hx;
                                const __m256i ql = _mm256_loadu_si256(
                                    (const __m256i *)(p + loom_repack_q6k_ql((size_t)(16 * hh + 8 * (q & 1) + ci)) +
                                                      32 * h));
                                const __m256i qh = _mm256_loadu_si256(
                                    (const __m256i *)(p + loom_repack_q6k_qh((size_t)(8 * hh + ci)) + 32 * h));
                                const __m256i lo4 =
                                    q < 2 ? _mm256_and_si256(ql, m4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), m4);
                                const __m256i hi2 = _mm256_and_si256(
                                    2 * q < 4 ? _mm256_slli_epi16(qh, 4 - 2 * q) : _mm256_srli_epi16(qh, 2 * q - 4),
                                    m30);
                                const __m256i u = _mm256_or_si256(lo4, hi2);
                                KQ_UNROLL
                                for (int cc = 0; cc < CB; cc++)
                                    s16[hx][cc] = kq_acc_us(
                                        s16[hx][cc], u,
                                        NH == 2 ? yv[cc] : bcast32(yq[cc] + 128 * hh + 32 * q + 4 * ci));
                            }
                        }
                        if (pr == 1 || !KQ_VNNI)
                            KQ_UNROLL
                            for (int hx = 0; hx < NH; hx++) {
                                const uint8_t *sp8 = p + 32 + 8 * (h0 + hx) + 16 * (8 * hh + 2 * q + lh);
                                const __m256i sc =
                                    KQ_VNNI ? _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)sp8)) : spair(sp8);
                                KQ_UNROLL
                                for (int cc = 0; cc < CB; cc++) isum[hx][cc] = kq_scale_add(isum[hx][cc], s16[hx][cc], sc);
                            }
                    }
                }
        KQ_UNROLL
        for (int hx = 0; hx < NH; hx++) {
            const uint8_t *sc8 = p + 32 + 8 * (h0 + hx); /* + 16 g: the group's 8 row scales */
            __m256i sp[8];
            KQ_UNROLL
            for (int t = 0; t < 8; t++) sp[t] = pair2(sc8 + 32 * t, sc8 + 32 * t + 16, true);
            const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 16 * (h0 + hx))));
            KQ_UNROLL
            for (int cc = 0; cc < CB; cc++) {
                const int32_t *q = bs + 8 * (cc * stride + (b - s0));
                __m256i corr = _mm256_madd_epi16(sp[0], _mm256_set1_epi32(q[0]));
                KQ_UNROLL
                for (int t = 1; t < 8; t++)
                    corr = _mm256_add_epi32(corr, _mm256_madd_epi16(sp[t], _mm256_set1_epi32(q[t])));
                isum[hx][cc] = _mm256_sub_epi32(isum[hx][cc], _mm256_slli_epi32(corr, 5));
                acc[hx][cc] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(dy[cc * stride + (b - s0)]), dx),
                                              _mm256_cvtepi32_ps(isum[hx][cc]), acc[hx][cc]);
            }
        }
    }
    acc_store(CB, NH, acc, c, ldc, j, ro);
}

/* IQ4_XS: rows of unit (g, h) x columns [j, j + CB), super-blocks [s0, s1). Sub-block s
 * (32 values) is chunks 4 s .. 4 s + 3 (low nibbles: its values 0..15, high: 16..31);
 * codes come from the table by vpshufb, the sign trick gives exact pair sums (|code| <=
 * 127, activations != -128: the caller hands other columns to the reference), and
 * vpmaddwd with the word pair (ls - 32, ls - 32) scales and widens each chunk. The 6-bit
 * scales are decoded in lanes: row r's scales_l dword and scales_h word. */
AI void kx_tile(int CB, int NH, const uint8_t *w, size_t ws, const uint8_t *a, size_t as, float *c, size_t ldc,
                int64_t g, int h0, int64_t j, int64_t s0, int64_t s1, const float *dy, int64_t stride) {
    const size_t bstep = sizeof(block_iq4_xs) * LOOM_REPACK_ROWS;
    const __m256i m4 = _mm256_set1_epi8(0x0F), m4d = _mm256_set1_epi32(0x0F), m3d = _mm256_set1_epi32(0x03);
    /* VNNI: codes looked up as value + 128 (1..241), unsigned operands of vpdpbusd; the
     * offset comes off per sub-block as 128 * its activation sum (Q8_K bsums) */
    const __m256i lut = _mm256_broadcastsi128_si256(
        _mm_add_epi8(_mm_loadu_si128((const __m128i *)loom_iq4nl_kv), _mm_set1_epi8(KQ_VNNI ? -128 : 0)));
    const __m256i c32 = _mm256_set1_epi32(32);
    const size_t ro = (size_t)g * LOOM_REPACK_ROWS + 8u * (size_t)h0;
    __m256 acc[2][KQ_MAXCB];
    acc_load(CB, NH, acc, c, ldc, j, ro, s0);
    const uint8_t *p = w + (size_t)g * ws * LOOM_REPACK_ROWS + (size_t)s0 * bstep;
    for (int64_t b = s0; b < s1; b++, p += bstep) {
        if (NH == 2) prefetch_sb(p + 2 * bstep, bstep); /* decode: the super-block two ahead */
        const int8_t *yq[KQ_MAXCB];
        const int16_t *ybs[KQ_MAXCB];
        __m256i isum[2][KQ_MAXCB];
        __m256i sl[2], sh[2];
        KQ_UNROLL
        for (int hx = 0; hx < NH; hx++) {
            sl[hx] = _mm256_loadu_si256((const __m256i *)(p + 64 + 32 * (h0 + hx)));
            sh[hx] = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(p + 32 + 16 * (h0 + hx))));
        }
        KQ_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            yq[cc] = ((const block_q8_K *)(a + (size_t)(j + cc) * as))[b].qs;
            ybs[cc] = ((const block_q8_K *)(a + (size_t)(j + cc) * as))[b].bsums;
            KQ_UNROLL
            for (int hx = 0; hx < NH; hx++) isum[hx][cc] = _mm256_setzero_si256();
        }
        (void)ybs;
        KQ_UNROLL
        for (int s = 0; s < 8; s++) {
            __m256i sc[2];
            KQ_UNROLL
            for (int hx = 0; hx < NH; hx++) {
                const __m256i ls = _mm256_or_si256(
                    _mm256_and_si256(_mm256_srli_epi32(sl[hx], 4 * s), m4d),
                    _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(sh[hx], 2 * s), m3d), 4));
                const __m256i x = _mm256_sub_epi32(ls, c32);
                sc[hx] = KQ_VNNI ? x : _mm256_blend_epi16(x, _mm256_slli_epi32(x, 16), 0xAA);
            }
#ifdef LOOM_RP_VNNI
            __m256i s32[2][KQ_MAXCB]; /* the sub-block's products, scaled once at its end */
            KQ_UNROLL
            for (int hx = 0; hx < NH; hx++)
                KQ_UNROLL
                for (int cc = 0; cc < CB; cc++) s32[hx][cc] = _mm256_setzero_si256();
#endif
            KQ_UNROLL
            for (int ch = 0; ch < 4; ch++) {
                KQ_UNROLL
                for (int hx = 0; hx < NH; hx++) {
                    const __m256i v = _mm256_loadu_si256((const __m256i *)(p + 128 + 32 * (h0 + hx) + 64 * (4 * s + ch)));
                    const __m256i ql = _mm256_shuffle_epi8(lut, _mm256_and_si256(v, m4));
                    const __m256i qh = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
                    const __m256i al = _mm256_abs_epi8(ql), ah = _mm256_abs_epi8(qh);
                    KQ_UNROLL
                    for (int cc = 0; cc < CB; cc++) {
                        const __m256i yl = bcast32(yq[cc] + 32 * s + 4 * ch), yh = bcast32(yq[cc] + 32 * s + 16 + 4 * ch);
#ifdef LOOM_RP_VNNI
                        (void)al, (void)ah;
                        s32[hx][cc] = _mm256_dpbusd_avx_epi32(s32[hx][cc], ql, yl);
                        s32[hx][cc] = _mm256_dpbusd_avx_epi32(s32[hx][cc], qh, yh);
#else
                        const __m256i pl = _mm256_maddubs_epi16(al, _mm256_sign_epi8(yl, ql));
                        const __m256i ph = _mm256_maddubs_epi16(ah, _mm256_sign_epi8(yh, qh));
                        /* pair sums <= 2 * 127 * 127 each: their sum may overflow int16, so
                         * widen both (the scale pair does it) */
                        isum[hx][cc] = _mm256_add_epi32(isum[hx][cc], _mm256_add_epi32(_mm256_madd_epi16(pl, sc[hx]),
                                                                                        _mm256_madd_epi16(ph, sc[hx])));
#endif
                    }
                }
            }
#ifdef LOOM_RP_VNNI
            KQ_UNROLL
            for (int hx = 0; hx < NH; hx++)
                KQ_UNROLL
                for (int cc = 0; cc < CB; cc++) {
                    const __m256i off = _mm256_set1_epi32(128 * (ybs[cc][2 * s] + ybs[cc][2 * s + 1]));
                    isum[hx][cc] = kq_scale_add(isum[hx][cc], _mm256_sub_epi32(s32[hx][cc], off), sc[hx]);
                }
#endif
        }
        KQ_UNROLL
        for (int hx = 0; hx < NH; hx++) {
            const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 16 * (h0 + hx))));
            KQ_UNROLL
            for (int cc = 0; cc < CB; cc++)
                acc[hx][cc] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(dy[cc * stride + (b - s0)]), dx),
                                              _mm256_cvtepi32_ps(isum[hx][cc]), acc[hx][cc]);
        }
    }
    acc_store(CB, NH, acc, c, ldc, j, ro);
}

AI void kq_tile(int CB, int NH, int kind, const uint8_t *w, size_t ws, const uint8_t *a, size_t as, float *c,
                size_t ldc, int64_t g, int h, int64_t j, int64_t s0, int64_t s1, const float *dy, const int32_t *bs,
                int64_t stride) {
    if (kind == KQ_Q6) k6_tile(CB, NH, w, ws, a, as, c, ldc, g, h, j, s0, s1, dy, bs, stride);
    else if (kind == KQ_IX) kx_tile(CB, NH, w, ws, a, as, c, ldc, g, h, j, s0, s1, dy, stride);
    else k45_tile(CB, NH, kind == KQ_Q5, w, ws, a, as, c, ldc, g, h, j, s0, s1, dy, bs, stride);
}

static void kq_gemm(int kind, int64_t k, const uint8_t *w, size_t ws, const uint8_t *a, size_t as, float *c,
                    size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const int64_t nb = k / 256;
    float dy[KQ_PRE];
    int32_t bs[8 * KQ_PRE];
    for (int64_t jc = j0; jc < j1; jc += KQ_COLS) {
        const int64_t jn = j1 - jc < KQ_COLS ? j1 - jc : KQ_COLS;
        int64_t slab = KQ_PRE / jn;
        if (slab > KQ_SLAB) slab = KQ_SLAB;
        for (int64_t s0 = 0; s0 < nb; s0 += slab) {
            const int64_t s1 = s0 + slab < nb ? s0 + slab : nb;
            kq_prepare(kind, a, as, jc, jn, s0, s1, slab, dy, bs);
            if (jn == 1) { /* decode: both halves of a group per pass (each 64-byte line read once) */
                for (int64_t g = i0 / LOOM_REPACK_ROWS; g < i1 / LOOM_REPACK_ROWS; g++) {
                    if (kind == KQ_Q4) kq_tile(1, 2, KQ_Q4, w, ws, a, as, c, ldc, g, 0, jc, s0, s1, dy, bs, slab);
                    else if (kind == KQ_Q5) kq_tile(1, 2, KQ_Q5, w, ws, a, as, c, ldc, g, 0, jc, s0, s1, dy, bs, slab);
                    else if (kind == KQ_IX) kq_tile(1, 2, KQ_IX, w, ws, a, as, c, ldc, g, 0, jc, s0, s1, dy, bs, slab);
                    else kq_tile(1, 2, KQ_Q6, w, ws, a, as, c, ldc, g, 0, jc, s0, s1, dy, bs, slab);
                }
                continue;
            }
            for (int64_t u = i0 / 8; u < i1 / 8; u++) {
                const int64_t g = u / 2;
                const int h = (int)(u % 2);
                for (int64_t jj = 0; jj < jn;) {
                    const int64_t left = jn - jj;
                    const int cb = left >= 4 ? 4 : left >= 2 ? 2 : 1;
                    const float *d = dy + jj * slab;
                    const int32_t *q = bs + 8 * jj * slab;
#define KQ(CB)                                                                                                     \
    do {                                                                                                           \
        if (kind == KQ_Q4) kq_tile(CB, 1, KQ_Q4, w, ws, a, as, c, ldc, g, h, jc + jj, s0, s1, d, q, slab);         \
        else if (kind == KQ_Q5) kq_tile(CB, 1, KQ_Q5, w, ws, a, as, c, ldc, g, h, jc + jj, s0, s1, d, q, slab);    \
        else if (kind == KQ_IX) kq_tile(CB, 1, KQ_IX, w, ws, a, as, c, ldc, g, h, jc + jj, s0, s1, d, q, slab);    \
        else kq_tile(CB, 1, KQ_Q6, w, ws, a, as, c, ldc, g, h, jc + jj, s0, s1, d, q, slab);                       \
    } while (0)
                    if (cb == 4) KQ(4);
                    else if (cb == 2) KQ(2);
                    else KQ(1);
#undef KQ
                    jj += cb;
                }
            }
        }
    }
}

/* True when no quant of the nb Q8_K blocks is -128 (the sign trick's precondition). */
static bool q8k_clean(const block_q8_K *y, int64_t nb) {
    const __m256i m128 = _mm256_set1_epi8((char)0x80);
    __m256i any = _mm256_setzero_si256();
    for (int64_t b = 0; b < nb; b++)
        for (int o = 0; o < 256; o += 32)
            any = _mm256_or_si256(any, _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)(y[b].qs + o)), m128));
    return _mm256_testz_si256(any, any) != 0;
}

bool KQ_FN(loom_gemm_repacked_kq)(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                                size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const int kind = wt == LOOM_TYPE_Q4_K    ? KQ_Q4
                     : wt == LOOM_TYPE_Q5_K  ? KQ_Q5
                     : wt == LOOM_TYPE_Q6_K  ? KQ_Q6
                     : wt == LOOM_TYPE_IQ4_XS ? KQ_IX
                                              : -1;
    if (kind < 0) return false;
    if (kind != KQ_IX || KQ_VNNI) { /* VNNI's IQ4_XS is exact for any activation byte */
        kq_gemm(kind, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
        return true;
    }
    /* IQ4_XS: runs of columns without a -128 activation byte; the rest by the reference */
    const uint8_t *ab = a;
    const int64_t nb = k / 256;
    for (int64_t j = j0; j < j1;) {
        if (!q8k_clean((const block_q8_K *)(ab + (size_t)j * as), nb)) {
            (void)loom_gemm_repacked_ref(wt, k, w, ws, a, as, c, ldc, i0, i1, j, j + 1);
            j++;
            continue;
        }
        int64_t e = j + 1;
        while (e < j1 && q8k_clean((const block_q8_K *)(ab + (size_t)e * as), nb)) e++;
        kq_gemm(KQ_IX, k, w, ws, a, as, c, ldc, i0, i1, j, e);
        j = e;
    }
    return true;
}
