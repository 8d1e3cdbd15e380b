/* AVX2 matmul for weights in the row-interleaved layout (quant/repack.h).
 *
 * A 16-row group is two ymm halves: in every 64-byte chunk (and in the 32-byte
 * scale header) rows 0..7 are the first 32 bytes and rows 8..15 the next 32, so one
 * ymm holds one 4-byte chunk of 8 rows and a broadcast activation dword gives 8 row
 * partial sums in its dword lanes (lane = row, no horizontal reductions); the 8
 * block scales of a half convert with one vcvtph2ps. Per lane the arithmetic is the
 * scalar reference's (loom_gemm_repacked_ref): an exact int32 block sum, then
 * acc = fma(d_w * d_y, isum, acc) in block order, so results match it bit for bit.
 *
 * Exact integer sums without vpdpbusd (vpmaddubsw saturates to int16):
 *  - Q4_0: unsigned nibbles u (0..15) times signed activations: every vpmaddubsw
 *    pair is at most 2*15*128 = 3840 in magnitude, so the 8 products of a block
 *    (4 chunks x low/high nibbles) are added in int16 (<= 30720) and widened once
 *    with vpmaddwd; the offset is removed with -8 * sum(y) per block.
 *  - IQ4_NL: nibbles index the code table (vpshufb), then Q8_0's sign trick below on
 *    the int8 codes (|code| <= 127), with the same -128 fallback.
 *  - Q8_0: stored bytes are q ^ 0x80; q is recovered and the sign trick
 *    vpmaddubsw(|q|, sign(y, q)) gives pairs <= 2*128*127 < 32768, widened per
 *    chunk with vpmaddwd. This is exact whenever no activation byte is -128 (the
 *    Q8_0 quantizer clamps to [-127, 127]); a column that has one anyway is
 *    computed by the scalar reference, so results stay exact for any input.
 *
 * Both halves are processed per chunk, so each activation dword is broadcast once
 * for the group's 16 rows. Activations are read per slab of RP_SLAB blocks: their
 * scales (and for Q4_0 the -8 * sum(y) corrections) are computed once per column
 * tile and slab and reused by every row group; partial sums between slabs stay in c
 * (the fma chain continues from the stored float). Decode (one column) streams each
 * group sequentially with a software prefetch RP_PF bytes ahead (tinyllama-shape 1.1B
 * at -t 2, tg32 medians of 4 interleaved runs: Q4_0 18.8 -> 22.4 t/s, Q8_0 13.5 ->
 * 15.7; the hardware prefetcher alone left DRAM bandwidth unused).
 * Prompt shapes register-tile up to RP_MAXCB columns per pass: a weight chunk is
 * loaded and decoded once and used for every column of the tile; one column has
 * its own loop (rp_col1). The tile loops are unrolled explicitly (GCC left them
 * rolled, with the accumulators in memory: decode ran about 1.5x slower). */
#include "cpu/kernels_internal.h"
#include "quant/iq_tables.h"
#include "quant/repack.h"

#include <immintrin.h>
#include <string.h>

#define ALWAYS_INLINE inline __attribute__((always_inline))

/* The avxvnni level compiles this file once more (kernels_repack_avxvnni.c defines
 * LOOM_RP_VNNI, CMake adds -mavxvnni): the u8 x s8 products then go through VEX
 * vpdpbusd, which adds 4 products per int32 lane without saturating, in place of
 * vpmaddubsw + int16 adds + vpmaddwd. The integer sums are the same exact values, so
 * both levels match the scalar reference bit for bit. */
#ifdef LOOM_RP_VNNI
#define RP_FN(name) name##_avxvnni
#else
#define RP_FN(name) name##_avx2
#endif

/* acc + the products of unsigned bytes u and signed bytes y: AVX2 adds int16 pair sums
 * (the caller bounds how many: vpmaddubsw saturates), VNNI int32 quad sums. */
static ALWAYS_INLINE __m256i rp_acc_us(__m256i acc, __m256i u, __m256i y) {
#ifdef LOOM_RP_VNNI
    return _mm256_dpbusd_avx_epi32(acc, u, y);
#else
    return _mm256_add_epi16(acc, _mm256_maddubs_epi16(u, y));
#endif
}

/* An rp_acc_us accumulator as int32 lane sums (AVX2: vpmaddwd with ones) */
static ALWAYS_INLINE __m256i rp_widen(__m256i acc) {
#ifdef LOOM_RP_VNNI
    return acc;
#else
    return _mm256_madd_epi16(acc, _mm256_set1_epi16(1));
#endif
}

/* int32 acc + the products of u (unsigned) and s (signed) whose pair sums fit int16
 * (the sign trick: |q| and sign(y, q)) */
static ALWAYS_INLINE __m256i rp_acc_us32(__m256i acc, __m256i u, __m256i s) {
#ifdef LOOM_RP_VNNI
    return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
#endif
}
/* the tile loops have constant trip counts; unrolled, the accumulators are registers */
#define RP_UNROLL _Pragma("GCC unroll 8")
#define RP_SLAB 512 /* activation blocks per slab (whole common rows: one run per group) */
#define RP_MAXCB 4  /* columns per tile (measured: 3 is no faster) */
#define RP_PF 4608   /* decode software prefetch distance, bytes (16 Q4_0 / 8 Q8_0 blocks of a group) */

static ALWAYS_INLINE __m256i bcast32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* True when no quant of the nb activation blocks is -128 (the Q8_0 sign trick's
 * precondition). */
static bool col_clean(const block_q8_0 *y, int64_t nb) {
    const __m256i m128 = _mm256_set1_epi8((char)0x80);
    __m256i any = _mm256_setzero_si256();
    for (int64_t b = 0; b < nb; b++)
        any = _mm256_or_si256(any, _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)y[b].qs), m128));
    return _mm256_testz_si256(any, any) != 0;
}

/* Activation blocks [s0, s1) of one column: scales as float into dy and, when off is
 * not 0, the weight-offset corrections -off * sum(y) into ncorr (both indexed from s0):
 * 8 for Q4_0's nibbles; at the VNNI level also 128 for Q8_0 (stored q + 128) and IQ4_NL
 * (codes looked up as table value + 128), unsigned operands of vpdpbusd. */
static void prep_slab(int off, const block_q8_0 *y, int64_t s0, int64_t s1, float *dy, int32_t *ncorr) {
    const __m256i ones16 = _mm256_set1_epi16(1), ones8 = _mm256_set1_epi8(1);
    for (int64_t b = s0; b < s1; b++) {
        dy[b - s0] = _cvtsh_ss(y[b].d);
        if (off) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)y[b].qs);
            const __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, v), ones16); /* exact */
            __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
            t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
            t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
            ncorr[b - s0] = -off * _mm_cvtsi128_si32(t);
        }
    }
}

/* acc + 8 row sums of one Q8_0 chunk (32 stored bytes q ^ 0x80 at p) with the
 * activation dword yv: |q| times sign(y, q), exact when y != -128. */
static ALWAYS_INLINE __m256i q8_chunk(__m256i acc, const uint8_t *p, __m256i yv, __m256i flip) {
#ifdef LOOM_RP_VNNI
    (void)flip; /* VNNI: the stored q + 128 is the unsigned operand (-128 * sum y per block) */
    return _mm256_dpbusd_avx_epi32(acc, _mm256_loadu_si256((const __m256i *)p), yv);
#else
    const __m256i q = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)p), flip);
    return rp_acc_us32(acc, _mm256_abs_epi8(q), _mm256_sign_epi8(yv, q));
#endif
}

/* acc + 8 row sums of q8 codes q (= stored ^ 0x80, aq = |q|) with yv, as q8_chunk */
static ALWAYS_INLINE __m256i q8_acc(__m256i acc, __m256i q, __m256i aq, __m256i yv, __m256i flip) {
#ifdef LOOM_RP_VNNI
    (void)aq;
    return _mm256_dpbusd_avx_epi32(acc, _mm256_xor_si256(q, flip), yv);
#else
    (void)flip;
    return rp_acc_us32(acc, aq, _mm256_sign_epi8(yv, q));
#endif
}

enum { RK_Q4, RK_Q8, RK_IQ4 };

/* The weight offset whose correction prep_slab computes for a kind */
static ALWAYS_INLINE int rp_off(int kind) {
#ifdef LOOM_RP_VNNI
    return kind == RK_Q4 ? 8 : 128;
#else
    return kind == RK_Q4 ? 8 : 0;
#endif
}

/* the IQ4_NL code table in both 128-bit lanes (vpshufb by nibble) */
static ALWAYS_INLINE __m256i iq4_lut(void) {
    const __m128i t = _mm_loadu_si128((const __m128i *)loom_iq4nl_kv);
#ifdef LOOM_RP_VNNI
    return _mm256_broadcastsi128_si256(_mm_add_epi8(t, _mm_set1_epi8(-128))); /* code + 128: 1..241 */
#else
    return _mm256_broadcastsi128_si256(t);
#endif
}

/* The int8 codes of one IQ4_NL chunk (64 bytes at p: rows 0..7 then 8..15): low
 * nibbles of each half (l0, l1) and high nibbles (h0, h1). */
static ALWAYS_INLINE void iq4_codes4(const uint8_t *p, __m256i lut, __m256i *l0, __m256i *l1, __m256i *h0,
                                     __m256i *h1) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i v0 = _mm256_loadu_si256((const __m256i *)p), v1 = _mm256_loadu_si256((const __m256i *)(p + 32));
    *l0 = _mm256_shuffle_epi8(lut, _mm256_and_si256(v0, m4));
    *l1 = _mm256_shuffle_epi8(lut, _mm256_and_si256(v1, m4));
    *h0 = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v0, 4), m4));
    *h1 = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(v1, 4), m4));
}

/* acc + 8 row sums of one IQ4_NL half-chunk: codes q (int8, |q| <= 127, aq = |q|)
 * times the activation dword yv, sign trick as q8_chunk (exact when y != -128) */
static ALWAYS_INLINE __m256i iq4_chunk(__m256i acc, __m256i q, __m256i aq, __m256i yv) {
#ifdef LOOM_RP_VNNI
    (void)aq; /* VNNI: q is code + 128 (iq4_lut), -128 * sum y per block */
    return _mm256_dpbusd_avx_epi32(acc, q, yv);
#else
    return rp_acc_us32(acc, aq, _mm256_sign_epi8(yv, q));
#endif
}

/* VNNI: the -128 * sum(y) block correction of the Q8_0 / IQ4_NL sums (AVX2: none) */
static ALWAYS_INLINE __m256i rp_corr128(__m256i isum, int32_t nc) {
#ifdef LOOM_RP_VNNI
    return _mm256_add_epi32(isum, _mm256_set1_epi32(nc));
#else
    (void)nc;
    return isum;
#endif
}

static ALWAYS_INLINE void rp_tile(int CB, int kind, int64_t nb, const uint8_t *w, size_t ws, const uint8_t *a,
                                  size_t as, float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j) {
    const bool q4 = kind == RK_Q4;
    const size_t bb = kind == RK_Q8 ? sizeof(block_q8_0) : sizeof(block_q4_0);
    const size_t gbytes = ws * LOOM_REPACK_ROWS, bstep = bb * LOOM_REPACK_ROWS;
    const __m256i m4 = _mm256_set1_epi8(0x0F), flip = _mm256_set1_epi8((char)0x80);
    const block_q8_0 *y[RP_MAXCB];
    RP_UNROLL
    for (int cc = 0; cc < CB; cc++) y[cc] = (const block_q8_0 *)(a + (size_t)(j + cc) * as);
    float dy[RP_MAXCB][RP_SLAB];
    int32_t ncorr[RP_MAXCB][RP_SLAB];
    for (int64_t s0 = 0; s0 < nb; s0 += RP_SLAB) {
        const int64_t s1 = s0 + RP_SLAB < nb ? s0 + RP_SLAB : nb;
        for (int cc = 0; cc < CB; cc++) prep_slab(rp_off(kind), y[cc], s0, s1, dy[cc], ncorr[cc]);
        for (int64_t g = i0 / LOOM_REPACK_ROWS; g < i1 / LOOM_REPACK_ROWS; g++) {
            __m256 acc[RP_MAXCB][2];
            RP_UNROLL
            for (int cc = 0; cc < CB; cc++)
                RP_UNROLL
                for (int h = 0; h < 2; h++)
                    acc[cc][h] = s0 == 0 ? _mm256_setzero_ps()
                                         : _mm256_loadu_ps(c + (size_t)(j + cc) * ldc +
                                                           (size_t)g * LOOM_REPACK_ROWS + 8u * (size_t)h);
            const uint8_t *p = w + (size_t)g * gbytes + (size_t)s0 * bstep;
            for (int64_t b = s0; b < s1; b++, p += bstep) {
                /* both halves per chunk: each activation dword is broadcast once and
                 * used for the 16 rows; chunk c of half h is at p + 32 + 64 * c + 32 * h */
                __m256i isum[RP_MAXCB][2];
                if (q4) {
                    /* int16 lane sums: 16 products |u*y| <= 1920 each, <= 30720: exact */
                    RP_UNROLL
                    for (int cc = 0; cc < CB; cc++) isum[cc][0] = isum[cc][1] = _mm256_setzero_si256();
                    RP_UNROLL
                    for (int ch = 0; ch < 4; ch++) {
                        const __m256i v0 = _mm256_loadu_si256((const __m256i *)(p + 32 + 64 * ch));
                        const __m256i v1 = _mm256_loadu_si256((const __m256i *)(p + 64 + 64 * ch));
                        const __m256i lo0 = _mm256_and_si256(v0, m4), lo1 = _mm256_and_si256(v1, m4);
                        const __m256i hi0 = _mm256_and_si256(_mm256_srli_epi16(v0, 4), m4);
                        const __m256i hi1 = _mm256_and_si256(_mm256_srli_epi16(v1, 4), m4);
                        RP_UNROLL
                        for (int cc = 0; cc < CB; cc++) {
                            const int8_t *yq = y[cc][b].qs;
                            const __m256i yl = bcast32(yq + 4 * ch), yh = bcast32(yq + 16 + 4 * ch);
                            isum[cc][0] = rp_acc_us(isum[cc][0], lo0, yl);
                            isum[cc][1] = rp_acc_us(isum[cc][1], lo1, yl);
                            isum[cc][0] = rp_acc_us(isum[cc][0], hi0, yh);
                            isum[cc][1] = rp_acc_us(isum[cc][1], hi1, yh);
                        }
                    }
                    RP_UNROLL
                    for (int cc = 0; cc < CB; cc++) {
                        const __m256i corr = _mm256_set1_epi32(ncorr[cc][b - s0]);
                        isum[cc][0] = _mm256_add_epi32(rp_widen(isum[cc][0]), corr);
                        isum[cc][1] = _mm256_add_epi32(rp_widen(isum[cc][1]), corr);
                    }
                } else if (kind == RK_IQ4) {
                    const __m256i lut = iq4_lut();
                    RP_UNROLL
                    for (int cc = 0; cc < CB; cc++) isum[cc][0] = isum[cc][1] = _mm256_setzero_si256();
                    RP_UNROLL
                    for (int ch = 0; ch < 4; ch++) {
                        __m256i l0, l1, h0, h1;
                        iq4_codes4(p + 32 + 64 * ch, lut, &l0, &l1, &h0, &h1);
                        const __m256i al0 = _mm256_abs_epi8(l0), al1 = _mm256_abs_epi8(l1);
                        const __m256i ah0 = _mm256_abs_epi8(h0), ah1 = _mm256_abs_epi8(h1);
                        RP_UNROLL
                        for (int cc = 0; cc < CB; cc++) {
                            const int8_t *yq = y[cc][b].qs;
                            const __m256i yl = bcast32(yq + 4 * ch), yh = bcast32(yq + 16 + 4 * ch);
                            isum[cc][0] = iq4_chunk(isum[cc][0], l0, al0, yl);
                            isum[cc][1] = iq4_chunk(isum[cc][1], l1, al1, yl);
                            isum[cc][0] = iq4_chunk(isum[cc][0], h0, ah0, yh);
                            isum[cc][1] = iq4_chunk(isum[cc][1], h1, ah1, yh);
                        }
                    }
                    RP_UNROLL
                    for (int cc = 0; cc < CB; cc++) {
                        isum[cc][0] = rp_corr128(isum[cc][0], ncorr[cc][b - s0]);
                        isum[cc][1] = rp_corr128(isum[cc][1], ncorr[cc][b - s0]);
                    }
                } else {
                    RP_UNROLL
                    for (int cc = 0; cc < CB; cc++) isum[cc][0] = isum[cc][1] = _mm256_setzero_si256();
                    RP_UNROLL
                    for (int ch = 0; ch < 8; ch++) {
                        /* |q| of q = -128 is 0x80 = 128 as an unsigned operand: still exact */
                        const __m256i q0 =
                            _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(p + 32 + 64 * ch)), flip);
                        const __m256i q1 =
                            _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(p + 64 + 64 * ch)), flip);
                        const __m256i aq0 = _mm256_abs_epi8(q0), aq1 = _mm256_abs_epi8(q1);
                        RP_UNROLL
                        for (int cc = 0; cc < CB; cc++) {
                            const __m256i yv = bcast32(y[cc][b].qs + 4 * ch);
                            isum[cc][0] = q8_acc(isum[cc][0], q0, aq0, yv, flip);
                            isum[cc][1] = q8_acc(isum[cc][1], q1, aq1, yv, flip);
                        }
                    }
                    RP_UNROLL
                    for (int cc = 0; cc < CB; cc++) {
                        isum[cc][0] = rp_corr128(isum[cc][0], ncorr[cc][b - s0]);
                        isum[cc][1] = rp_corr128(isum[cc][1], ncorr[cc][b - s0]);
                    }
                }
                const __m256 dx0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
                const __m256 dx1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 16)));
                RP_UNROLL
                for (int cc = 0; cc < CB; cc++) {
                    const __m256 vdy = _mm256_set1_ps(dy[cc][b - s0]);
                    acc[cc][0] = _mm256_fmadd_ps(_mm256_mul_ps(dx0, vdy), _mm256_cvtepi32_ps(isum[cc][0]), acc[cc][0]);
                    acc[cc][1] = _mm256_fmadd_ps(_mm256_mul_ps(dx1, vdy), _mm256_cvtepi32_ps(isum[cc][1]), acc[cc][1]);
                }
            }
            RP_UNROLL
            for (int cc = 0; cc < CB; cc++)
                RP_UNROLL
                for (int h = 0; h < 2; h++)
                    _mm256_storeu_ps(c + (size_t)(j + cc) * ldc + (size_t)g * LOOM_REPACK_ROWS + 8u * (size_t)h,
                                     acc[cc][h]);
        }
    }
}

/* One column (decode): rp_tile's arithmetic with named accumulators and two
 * independent integer chains per half (even/odd chunks, low/high nibbles). */
static ALWAYS_INLINE void rp_col1(int kind, int64_t nb, const uint8_t *w, size_t ws, const uint8_t *a, float *c,
                                  int64_t i0, int64_t i1) {
    const bool q4 = kind == RK_Q4;
    const size_t bb = kind == RK_Q8 ? sizeof(block_q8_0) : sizeof(block_q4_0);
    const size_t gbytes = ws * LOOM_REPACK_ROWS, bstep = bb * LOOM_REPACK_ROWS;
    const __m256i m4 = _mm256_set1_epi8(0x0F), flip = _mm256_set1_epi8((char)0x80);
    const block_q8_0 *y = (const block_q8_0 *)a;
    float dy[RP_SLAB];
    int32_t ncorr[RP_SLAB];
    for (int64_t s0 = 0; s0 < nb; s0 += RP_SLAB) {
        const int64_t s1 = s0 + RP_SLAB < nb ? s0 + RP_SLAB : nb;
        prep_slab(rp_off(kind), y, s0, s1, dy, ncorr);
        for (int64_t g = i0 / LOOM_REPACK_ROWS; g < i1 / LOOM_REPACK_ROWS; g++) {
            float *cg = c + (size_t)g * LOOM_REPACK_ROWS;
            __m256 acc0 = s0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(cg);
            __m256 acc1 = s0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(cg + 8);
            const uint8_t *p = w + (size_t)g * gbytes + (size_t)s0 * bstep;
            for (int64_t b = s0; b < s1; b++, p += bstep) {
                const int8_t *yq = y[b].qs;
                __m256i is0, is1;
                if (loom_cpu_prefetch) /* stream prefetches (kernels_internal.h LOOM_PFS0) */
                    for (size_t o = 0; o < bstep; o += 64) _mm_prefetch((const char *)(p + RP_PF + o), _MM_HINT_T0);
                if (q4) {
                    __m256i s0a = _mm256_setzero_si256(), s1a = s0a, s0b = s0a, s1b = s0a;
                    RP_UNROLL
                    for (int ch = 0; ch < 4; ch++) {
                        const __m256i v0 = _mm256_loadu_si256((const __m256i *)(p + 32 + 64 * ch));
                        const __m256i v1 = _mm256_loadu_si256((const __m256i *)(p + 64 + 64 * ch));
                        const __m256i yl = bcast32(yq + 4 * ch), yh = bcast32(yq + 16 + 4 * ch);
                        s0a = rp_acc_us(s0a, _mm256_and_si256(v0, m4), yl);
                        s1a = rp_acc_us(s1a, _mm256_and_si256(v1, m4), yl);
                        s0b = rp_acc_us(s0b, _mm256_and_si256(_mm256_srli_epi16(v0, 4), m4), yh);
                        s1b = rp_acc_us(s1b, _mm256_and_si256(_mm256_srli_epi16(v1, 4), m4), yh);
                    }
                    /* (AVX2: a + b adds two int16 sums of 8 products, <= 30720: exact) */
                    const __m256i corr = _mm256_set1_epi32(ncorr[b - s0]);
#ifdef LOOM_RP_VNNI
                    is0 = _mm256_add_epi32(_mm256_add_epi32(s0a, s0b), corr);
                    is1 = _mm256_add_epi32(_mm256_add_epi32(s1a, s1b), corr);
#else
                    is0 = _mm256_add_epi32(rp_widen(_mm256_add_epi16(s0a, s0b)), corr);
                    is1 = _mm256_add_epi32(rp_widen(_mm256_add_epi16(s1a, s1b)), corr);
#endif
                } else if (kind == RK_IQ4) {
                    const __m256i lut = iq4_lut();
                    __m256i is0b = _mm256_setzero_si256(), is1b = is0b;
                    is0 = is1 = is0b;
                    RP_UNROLL
                    for (int ch = 0; ch < 4; ch++) {
                        const __m256i yl = bcast32(yq + 4 * ch), yh = bcast32(yq + 16 + 4 * ch);
                        __m256i l0, l1, h0, h1;
                        iq4_codes4(p + 32 + 64 * ch, lut, &l0, &l1, &h0, &h1);
                        is0 = iq4_chunk(is0, l0, _mm256_abs_epi8(l0), yl);
                        is1 = iq4_chunk(is1, l1, _mm256_abs_epi8(l1), yl);
                        is0b = iq4_chunk(is0b, h0, _mm256_abs_epi8(h0), yh);
                        is1b = iq4_chunk(is1b, h1, _mm256_abs_epi8(h1), yh);
                    }
                    is0 = rp_corr128(_mm256_add_epi32(is0, is0b), ncorr[b - s0]);
                    is1 = rp_corr128(_mm256_add_epi32(is1, is1b), ncorr[b - s0]);
                } else {
                    __m256i is0b = _mm256_setzero_si256(), is1b = is0b;
                    is0 = is1 = is0b;
                    RP_UNROLL
                    for (int ch = 0; ch < 8; ch += 2) {
                        const __m256i ya = bcast32(yq + 4 * ch), yb = bcast32(yq + 4 * ch + 4);
                        is0 = q8_chunk(is0, p + 32 + 64 * ch, ya, flip);
                        is1 = q8_chunk(is1, p + 64 + 64 * ch, ya, flip);
                        is0b = q8_chunk(is0b, p + 96 + 64 * ch, yb, flip);
                        is1b = q8_chunk(is1b, p + 128 + 64 * ch, yb, flip);
                    }
                    is0 = rp_corr128(_mm256_add_epi32(is0, is0b), ncorr[b - s0]);
                    is1 = rp_corr128(_mm256_add_epi32(is1, is1b), ncorr[b - s0]);
                }
                const __m256 vdy = _mm256_set1_ps(dy[b - s0]);
                const __m256 dx0 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
                const __m256 dx1 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(p + 16)));
                acc0 = _mm256_fmadd_ps(_mm256_mul_ps(dx0, vdy), _mm256_cvtepi32_ps(is0), acc0);
                acc1 = _mm256_fmadd_ps(_mm256_mul_ps(dx1, vdy), _mm256_cvtepi32_ps(is1), acc1);
            }
            _mm256_storeu_ps(cg, acc0);
            _mm256_storeu_ps(cg + 8, acc1);
        }
    }
}

/* Columns [j, j1) of one type, in tiles of at most RP_MAXCB. */
static void rp_cols(int kind, int64_t nb, const uint8_t *w, size_t ws, const uint8_t *a, size_t as, float *c,
                    size_t ldc, int64_t i0, int64_t i1, int64_t j, int64_t j1) {
    while (j < j1) {
        const int64_t left = j1 - j;
        const int cb = left >= 4 ? 4 : (int)left;
#define RP(CB)                                                                                          \
    do {                                                                                                \
        if (kind == RK_Q4) rp_tile(CB, RK_Q4, nb, w, ws, a, as, c, ldc, i0, i1, j);                     \
        else if (kind == RK_IQ4) rp_tile(CB, RK_IQ4, nb, w, ws, a, as, c, ldc, i0, i1, j);              \
        else rp_tile(CB, RK_Q8, nb, w, ws, a, as, c, ldc, i0, i1, j);                                   \
    } while (0)
        switch (cb) {
        case 4: RP(4); break;
        case 3: RP(3); break;
        case 2: RP(2); break;
        default:
            if (kind == RK_Q4) rp_col1(RK_Q4, nb, w, ws, a + (size_t)j * as, c + (size_t)j * ldc, i0, i1);
            else if (kind == RK_IQ4) rp_col1(RK_IQ4, nb, w, ws, a + (size_t)j * as, c + (size_t)j * ldc, i0, i1);
            else rp_col1(RK_Q8, nb, w, ws, a + (size_t)j * as, c + (size_t)j * ldc, i0, i1);
            break;
        }
#undef RP
        j += cb;
    }
}

static bool RP_FN(gemm_repacked)(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                               size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (wt == LOOM_TYPE_Q4_K || wt == LOOM_TYPE_Q5_K || wt == LOOM_TYPE_Q6_K || wt == LOOM_TYPE_IQ4_XS)
        /* kernels_repack_kq_avx2.c (kernels_repack_kq_avxvnni.c) */
        return RP_FN(loom_gemm_repacked_kq)(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
    if (wt != LOOM_TYPE_Q4_0 && wt != LOOM_TYPE_Q8_0 && wt != LOOM_TYPE_IQ4_NL) return false;
    const int kind = wt == LOOM_TYPE_Q4_0 ? RK_Q4 : wt == LOOM_TYPE_IQ4_NL ? RK_IQ4 : RK_Q8;
    const int64_t nb = k / 32;
    const uint8_t *ab = a;
    if (kind == RK_Q4) {
        rp_cols(RK_Q4, nb, w, ws, ab, as, c, ldc, i0, i1, j0, j1);
        return true;
    }
#ifdef LOOM_RP_VNNI
    /* VNNI: Q8_0 and IQ4_NL as unsigned (value + 128) operands: exact for any activation */
    rp_cols(kind, nb, w, ws, ab, as, c, ldc, i0, i1, j0, j1);
    return true;
#endif
    /* Q8_0 and IQ4_NL (sign trick): runs of columns without a -128 activation byte; the
     * rest by the reference */
    for (int64_t j = j0; j < j1;) {
        if (!col_clean((const block_q8_0 *)(ab + (size_t)j * as), nb)) {
            (void)loom_gemm_repacked_ref(wt, k, w, ws, a, as, c, ldc, i0, i1, j, j + 1);
            j++;
            continue;
        }
        int64_t e = j + 1;
        while (e < j1 && col_clean((const block_q8_0 *)(ab + (size_t)e * as), nb)) e++;
        rp_cols(kind, nb, w, ws, ab, as, c, ldc, i0, i1, j, e);
        j = e;
    }
    return true;
}

void RP_FN(loom_kernels_fill_repack)(loom_kernels *k) {
    k->gemm_repacked = RP_FN(gemm_repacked);
    k->repack[LOOM_TYPE_Q4_0] = true;
    k->repack[LOOM_TYPE_Q8_0] = true;
    k->repack[LOOM_TYPE_IQ4_NL] = true;
    k->repack[LOOM_TYPE_Q4_K] = true;
    k->repack[LOOM_TYPE_Q5_K] = true;
    k->repack[LOOM_TYPE_Q6_K] = true;
    k->repack[LOOM_TYPE_IQ4_XS] = true;
}
