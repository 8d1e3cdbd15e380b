/* AVX-512 VNNI matmul for weights in the row-interleaved layout (quant/repack.h):
 * one 512-bit vector = one 4-byte chunk of 16 rows, so vpdpbusd with a broadcast
 * activation dword accumulates 16 row sums at once (lane = row) and the 16 block
 * scales of a group convert with one vcvtph2ps. Per lane the arithmetic is the
 * scalar reference's (loom_gemm_repacked_ref): an exact integer block sum, then
 * acc = fma(d_w * d_y, isum, acc) in block order, so results match it bit for bit.
 *
 * Activations (Q8_0 rows) are read per slab of RP_SLAB blocks: their scales and
 * the weight-offset corrections (-8 * sum y for Q4_0 nibbles, -128 * sum y for
 * Q8_0 stored as q + 128 and for IQ4_NL, whose nibbles are looked up (vpshufb) as
 * table value + 128) are computed once per column and slab and reused by
 * every row group; partial row sums between slabs stay in c (the fma chain simply
 * continues from the stored float). */
#include "cpu/kernels_internal.h"
#include "quant/iq_tables.h"
#include "quant/repack.h"

#include <immintrin.h>
#include <string.h>

#define ALWAYS_INLINE inline __attribute__((always_inline))
/* Activation blocks per slab: 512 (16384 values) keeps common rows in one slab, so
 * a row group is streamed in one contiguous run (measured: 64-block slabs, which
 * revisit each group's memory per slab, read 17.9 GB/s on one thread against 22+
 * with whole rows). The weight stream is sequential per group; the decode tiles
 * (rp_tile_q4_dec, rp_tile_q8_dec) add software prefetch in eight-block steps. */
#define RP_SLAB 512
#define RP_MAXCB 8 /* columns per tile */
/* the tile loops have constant trip counts: unrolled, the accumulators stay in registers */
#define RP_UNROLL _Pragma("GCC unroll 8")

static ALWAYS_INLINE int32_t ld32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Scales and offset corrections of activation blocks [s0, s1) of columns j0..j0+n-1
 * into dy/nc[col * stride + (b - s0)]. */
/* Weight kinds of the 32-value block layout: Q8_0 (q + 128), Q4_0 (nibble u, q = u - 8),
 * IQ4_NL (nibble u, q = table[u]: looked up as table[u] + 128, a byte in [1, 241]). */
enum { RK_Q8, RK_Q4, RK_IQ4 };

static ALWAYS_INLINE __m512i iq4_lut128(void) {
    return _mm512_broadcast_i32x4(_mm_add_epi8(_mm_loadu_si128((const __m128i *)loom_iq4nl_kv), _mm_set1_epi8(-128)));
}

static void rp_prepare(int kind, const uint8_t *a, size_t as, int64_t j0, int64_t n, int64_t s0, int64_t s1,
                       int64_t stride, float *dy, int32_t *nc) {
    const int32_t off = kind == RK_Q4 ? 8 : 128;
    for (int64_t cc = 0; cc < n; cc++) {
        const block_q8_0 *y = (const block_q8_0 *)(a + (size_t)(j0 + cc) * as);
        for (int64_t b = s0; b < s1; b++) {
            const __m256i v = _mm256_loadu_si256((const __m256i *)y[b].qs);
            const __m256i sm = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), v);
            __m128i t = _mm_add_epi32(_mm256_castsi256_si128(sm), _mm256_extracti128_si256(sm, 1));
            t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0x4E));
            t = _mm_add_epi32(t, _mm_shuffle_epi32(t, 0xB1));
            nc[cc * stride + (b - s0)] = -off * _mm_cvtsi128_si32(t);
            dy[cc * stride + (b - s0)] = _cvtsh_ss(y[b].d);
        }
    }
}

/* One 16-row group g x CB columns (j..j+CB-1) over blocks [s0, s1): the fma chain
 * starts at 0 (s0 == 0) or continues from the partial sums stored in c. */
static ALWAYS_INLINE void rp_tile(int CB, int kind, const uint8_t *w, size_t ws, const uint8_t *a, size_t as,
                                  float *c, size_t ldc, int64_t g, int64_t j, int64_t s0, int64_t s1,
                                  const float *dy, const int32_t *nc, int64_t stride) {
    const bool q4 = kind != RK_Q8;
    const size_t bb = q4 ? sizeof(block_q4_0) : sizeof(block_q8_0);
    const size_t gbytes = ws * LOOM_REPACK_ROWS, bstep = bb * LOOM_REPACK_ROWS;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i lut = iq4_lut128();
    __m512 acc[RP_MAXCB];
    RP_UNROLL
    for (int cc = 0; cc < CB; cc++)
        acc[cc] = s0 == 0 ? _mm512_setzero_ps()
                          : _mm512_loadu_ps(c + (size_t)(j + cc) * ldc + (size_t)g * LOOM_REPACK_ROWS);
    const uint8_t *p = w + (size_t)g * gbytes + (size_t)s0 * bstep;
    for (int64_t b = s0; b < s1; b++, p += bstep) {
        const __m512 dx = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
        /* decode (CB <= 2): two independent dpbusd chains per column (low and high
         * nibbles / even and odd chunks) halve a block's latency; wider tiles
         * have enough independent columns and need the registers. Exact either way. */
        const bool two = CB <= 2;
        __m512i isum[RP_MAXCB], isum2[RP_MAXCB];
        RP_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            isum[cc] = _mm512_set1_epi32(nc[cc * stride + (b - s0)]);
            isum2[cc] = _mm512_setzero_si512();
        }
        if (q4) {
            RP_UNROLL
            for (int ch = 0; ch < 4; ch++) {
                const __m512i v = _mm512_loadu_si512((const void *)(p + 32 + 64 * ch));
                __m512i lo = _mm512_and_si512(v, m4);
                __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                if (kind == RK_IQ4) {
                    lo = _mm512_shuffle_epi8(lut, lo);
                    hi = _mm512_shuffle_epi8(lut, hi);
                }
                RP_UNROLL
                for (int cc = 0; cc < CB; cc++) {
                    const int8_t *yq = ((const block_q8_0 *)(a + (size_t)(j + cc) * as))[b].qs;
                    isum[cc] = _mm512_dpbusd_epi32(isum[cc], lo, _mm512_set1_epi32(ld32(yq + 4 * ch)));
                    if (two) isum2[cc] = _mm512_dpbusd_epi32(isum2[cc], hi, _mm512_set1_epi32(ld32(yq + 16 + 4 * ch)));
                    else isum[cc] = _mm512_dpbusd_epi32(isum[cc], hi, _mm512_set1_epi32(ld32(yq + 16 + 4 * ch)));
                }
            }
        } else {
            RP_UNROLL
            for (int ch = 0; ch < 8; ch += 2) {
                const __m512i v = _mm512_loadu_si512((const void *)(p + 32 + 64 * ch));
                const __m512i v2 = _mm512_loadu_si512((const void *)(p + 32 + 64 * (ch + 1)));
                RP_UNROLL
                for (int cc = 0; cc < CB; cc++) {
                    const int8_t *yq = ((const block_q8_0 *)(a + (size_t)(j + cc) * as))[b].qs;
                    isum[cc] = _mm512_dpbusd_epi32(isum[cc], v, _mm512_set1_epi32(ld32(yq + 4 * ch)));
                    if (two) isum2[cc] = _mm512_dpbusd_epi32(isum2[cc], v2, _mm512_set1_epi32(ld32(yq + 4 * ch + 4)));
                    else isum[cc] = _mm512_dpbusd_epi32(isum[cc], v2, _mm512_set1_epi32(ld32(yq + 4 * ch + 4)));
                }
            }
        }
        if (two) {
            RP_UNROLL
            for (int cc = 0; cc < CB; cc++) isum[cc] = _mm512_add_epi32(isum[cc], isum2[cc]);
        }
        RP_UNROLL
        for (int cc = 0; cc < CB; cc++)
            acc[cc] = _mm512_fmadd_ps(_mm512_mul_ps(dx, _mm512_set1_ps(dy[cc * stride + (b - s0)])),
                                      _mm512_cvtepi32_ps(isum[cc]), acc[cc]);
    }
    RP_UNROLL
    for (int cc = 0; cc < CB; cc++)
        _mm512_storeu_ps(c + (size_t)(j + cc) * ldc + (size_t)g * LOOM_REPACK_ROWS, acc[cc]);
}

/* Decode (one column) on Q4_0: eight blocks (2304 bytes of a group, as one Q4_K
 * super-block) per iteration, with the Q4_K tile's software prefetch: every line two
 * such steps ahead, one prefetch next to each 64-byte load. Same per-lane arithmetic as
 * rp_tile (bit-identical). Measured on the 2-vCPU VM, interleaved with the old tile:
 * `loom bench kernels` Q4_0 decode 96-121% of the read probe (old: mostly 80-92%; five
 * line prefetches at the start of each 288-byte block, 2.3-32 KiB ahead, had not
 * helped), 1.1B Q4_0 tg64 +12-22% in four of five pairs (the fifth even). */
#define RP8_PF 4608
/* nibble vector -> dpbusd operand: as it is (Q4_0) or table[u] + 128 (IQ4_NL) */
#define RP_NIB(iq, x) ((iq) ? _mm512_shuffle_epi8(lut, (x)) : (x))
static ALWAYS_INLINE void rp_tile_q4_dec_body(bool iq, const uint8_t *w, size_t ws, const uint8_t *a, float *c,
                                              size_t ldc, int64_t g, int64_t j, int64_t s0, int64_t s1,
                                              const float *dy, const int32_t *nc) {
    const size_t bstep = sizeof(block_q4_0) * LOOM_REPACK_ROWS, gbytes = ws * LOOM_REPACK_ROWS;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const __m512i lut = iq4_lut128();
    float *cp = c + (size_t)j * ldc + (size_t)g * LOOM_REPACK_ROWS;
    __m512 acc = s0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(cp);
    const uint8_t *p = w + (size_t)g * gbytes + (size_t)s0 * bstep;
    const block_q8_0 *y = (const block_q8_0 *)(a + 0);
    int64_t b = s0;
    for (; b + 8 <= s1; b += 8, p += 8 * bstep) {
        RP_UNROLL
        for (int u = 0; u < 8; u++) {
            const uint8_t *q = p + u * bstep;
            const int8_t *yq = y[b + u].qs;
            __m512i e = _mm512_set1_epi32(nc[b + u - s0]), o = _mm512_setzero_si512();
            RP_UNROLL
            for (int ch = 0; ch < 4; ch++) {
                const __m512i v = _mm512_loadu_si512((const void *)(q + 32 + 64 * ch));
                LOOM_PFS0(p + RP8_PF + 64 * (4 * u + ch));
                LOOM_PFS1(p + LOOM_PF_L2 + 64 * (4 * u + ch));
                e = _mm512_dpbusd_epi32(e, RP_NIB(iq, _mm512_and_si512(v, m4)), _mm512_set1_epi32(ld32(yq + 4 * ch)));
                o = _mm512_dpbusd_epi32(o, RP_NIB(iq, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4)),
                                        _mm512_set1_epi32(ld32(yq + 16 + 4 * ch)));
            }
            if (u < 4) {
                LOOM_PFS0(p + RP8_PF + 2048 + 64 * u);
                LOOM_PFS1(p + LOOM_PF_L2 + 2048 + 64 * u);
            }
            const __m512 dx = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)q));
            acc = _mm512_fmadd_ps(_mm512_mul_ps(dx, _mm512_set1_ps(dy[b + u - s0])),
                                  _mm512_cvtepi32_ps(_mm512_add_epi32(e, o)), acc);
        }
    }
    for (; b < s1; b++, p += bstep) {
        const int8_t *yq = y[b].qs;
        __m512i e = _mm512_set1_epi32(nc[b - s0]), o = _mm512_setzero_si512();
        RP_UNROLL
        for (int ch = 0; ch < 4; ch++) {
            const __m512i v = _mm512_loadu_si512((const void *)(p + 32 + 64 * ch));
            e = _mm512_dpbusd_epi32(e, RP_NIB(iq, _mm512_and_si512(v, m4)), _mm512_set1_epi32(ld32(yq + 4 * ch)));
            o = _mm512_dpbusd_epi32(o, RP_NIB(iq, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4)),
                                    _mm512_set1_epi32(ld32(yq + 16 + 4 * ch)));
        }
        const __m512 dx = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
        acc = _mm512_fmadd_ps(_mm512_mul_ps(dx, _mm512_set1_ps(dy[b - s0])), _mm512_cvtepi32_ps(_mm512_add_epi32(e, o)),
                              acc);
    }
    _mm512_storeu_ps(cp, acc);
}

#undef RP_NIB
static void rp_tile_q4_dec(const uint8_t *w, size_t ws, const uint8_t *a, float *c, size_t ldc, int64_t g, int64_t j,
                           int64_t s0, int64_t s1, const float *dy, const int32_t *nc) {
    rp_tile_q4_dec_body(false, w, ws, a, c, ldc, g, j, s0, s1, dy, nc);
}
static void rp_tile_iq4_dec(const uint8_t *w, size_t ws, const uint8_t *a, float *c, size_t ldc, int64_t g, int64_t j,
                            int64_t s0, int64_t s1, const float *dy, const int32_t *nc) {
    rp_tile_q4_dec_body(true, w, ws, a, c, ldc, g, j, s0, s1, dy, nc);
}

/* The same for Q8_0 (stored as q + 128): the first block of every eight (4352 bytes)
 * prefetches all lines of the eight two steps ahead. Interleaved with the old tile:
 * bench kernels Q8_0 decode 90-107% of the probe (old 87-96%; one prefetch next to each
 * load instead: 85-91%), 1.1B Q8_0 tg64 +6-11% in five of five pairs. Stream
 * prefetches (loom_cpu_prefetch, off on AMD): on Zen 4 the model runs faster without,
 * 1.1B Q8_0 tg64 one thread 19.7-20.0 -> 25.8-29.0 t/s, two threads 28-34 -> 30-42. */
#define RQ8_STEP (8 * 34 * LOOM_REPACK_ROWS)
static void rp_tile_q8_dec(const uint8_t *w, size_t ws, const uint8_t *a, float *c, size_t ldc, int64_t g, int64_t j,
                           int64_t s0, int64_t s1, const float *dy, const int32_t *nc) {
    const size_t bstep = sizeof(block_q8_0) * LOOM_REPACK_ROWS, gbytes = ws * LOOM_REPACK_ROWS;
    float *cp = c + (size_t)j * ldc + (size_t)g * LOOM_REPACK_ROWS;
    __m512 acc = s0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(cp);
    const uint8_t *p = w + (size_t)g * gbytes + (size_t)s0 * bstep;
    const block_q8_0 *y = (const block_q8_0 *)a;
    int64_t b = s0;
    for (; b < s1; b++, p += bstep) {
        const bool pf = ((b - s0) & 7) == 0; /* the first block of a step prefetches the step two ahead */
        const int8_t *yq = y[b].qs;
        __m512i e = _mm512_set1_epi32(nc[b - s0]), o = _mm512_setzero_si512();
        RP_UNROLL
        for (int ch = 0; ch < 8; ch += 2) {
            e = _mm512_dpbusd_epi32(e, _mm512_loadu_si512((const void *)(p + 32 + 64 * ch)),
                                    _mm512_set1_epi32(ld32(yq + 4 * ch)));
            o = _mm512_dpbusd_epi32(o, _mm512_loadu_si512((const void *)(p + 32 + 64 * (ch + 1))),
                                    _mm512_set1_epi32(ld32(yq + 4 * ch + 4)));
        }
        if (pf && loom_cpu_prefetch)
            for (int k = 0; k < RQ8_STEP / 64 + 1; k++) {
                LOOM_PF0((const char *)(p + 2 * RQ8_STEP + 64 * k));
                LOOM_PF1((const char *)(p + LOOM_PF_L2 + 64 * k));
            }
        const __m512 dx = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
        acc = _mm512_fmadd_ps(_mm512_mul_ps(dx, _mm512_set1_ps(dy[b - s0])), _mm512_cvtepi32_ps(_mm512_add_epi32(e, o)),
                              acc);
    }
    _mm512_storeu_ps(cp, acc);
}

/* Columns are taken RP_COLS at a time; their activation scales and corrections are
 * prepared once per slab for every row group of the call (so a call should cover many
 * rows: ops_matmul.c gives repacked prompt tiles LOOM_MM_REPACKED_ROWS rows). Row
 * groups are the outer loop: a group's slab of weights stays in L1 while every
 * column tile of the call uses it. */
#define RP_COLS 64
#define RP_PRE 8192 /* prepared (column, block) entries: 64 KiB of stack */
static void gemm_repacked_q4k(int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c, size_t ldc,
                              int64_t i0, int64_t i1, int64_t j0, int64_t j1);
static void gemm_repacked_q5k(int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c, size_t ldc,
                              int64_t i0, int64_t i1, int64_t j0, int64_t j1);
static void gemm_repacked_q6k(int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c, size_t ldc,
                              int64_t i0, int64_t i1, int64_t j0, int64_t j1);
static void gemm_repacked_q2k(int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c, size_t ldc,
                              int64_t i0, int64_t i1, int64_t j0, int64_t j1);
static void gemm_repacked_iq4xs(int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c, size_t ldc,
                                int64_t i0, int64_t i1, int64_t j0, int64_t j1);
static bool gemm_repacked_vnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                               size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    if (!loom_repack_type_ok(wt)) return false;
    if (wt == LOOM_TYPE_Q4_K) {
        gemm_repacked_q4k(k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
        return true;
    }
    if (wt == LOOM_TYPE_Q5_K) {
        gemm_repacked_q5k(k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
        return true;
    }
    if (wt == LOOM_TYPE_Q6_K) {
        gemm_repacked_q6k(k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
        return true;
    }
    if (wt == LOOM_TYPE_Q2_K) {
        gemm_repacked_q2k(k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
        return true;
    }
    if (wt == LOOM_TYPE_IQ4_XS) {
        gemm_repacked_iq4xs(k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
        return true;
    }
    if (wt == LOOM_TYPE_Q4_1 || wt == LOOM_TYPE_Q5_0 || wt == LOOM_TYPE_Q5_1) /* kernels_legacy_avx512vnni.c */
        return loom_gemm_repacked_lg_avx512vnni(wt, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
    const int kind = wt == LOOM_TYPE_Q4_0 ? RK_Q4 : wt == LOOM_TYPE_IQ4_NL ? RK_IQ4 : RK_Q8;
    const int64_t nb = k / 32;
    float dy[RP_PRE];
    int32_t nc[RP_PRE];
    for (int64_t jc = j0; jc < j1; jc += RP_COLS) {
        const int64_t jn = j1 - jc < RP_COLS ? j1 - jc : RP_COLS;
        int64_t slab = RP_PRE / jn;
        if (slab > RP_SLAB) slab = RP_SLAB;
        for (int64_t s0 = 0; s0 < nb; s0 += slab) {
            const int64_t s1 = s0 + slab < nb ? s0 + slab : nb;
            rp_prepare(kind, a, as, jc, jn, s0, s1, slab, dy, nc);
            for (int64_t g = i0 / LOOM_REPACK_ROWS; g < i1 / LOOM_REPACK_ROWS; g++) {
                if (jn == 1) { /* decode */
                    const uint8_t *ya = (const uint8_t *)a + (size_t)jc * as;
                    if (kind == RK_Q4) rp_tile_q4_dec(w, ws, ya, c, ldc, g, jc, s0, s1, dy, nc);
                    else if (kind == RK_IQ4) rp_tile_iq4_dec(w, ws, ya, c, ldc, g, jc, s0, s1, dy, nc);
                    else rp_tile_q8_dec(w, ws, ya, c, ldc, g, jc, s0, s1, dy, nc);
                    continue;
                }
                for (int64_t jj = 0; jj < jn;) {
                    const int64_t left = jn - jj;
                    const int cb = left >= 8 ? 8 : left >= 4 ? 4 : left >= 2 ? 2 : 1;
                    const float *d = dy + jj * slab;
                    const int32_t *n = nc + jj * slab;
#define RP(CB)                                                                                          \
    do {                                                                                                \
        if (kind == RK_Q4) rp_tile(CB, RK_Q4, w, ws, a, as, c, ldc, g, jc + jj, s0, s1, d, n, slab);    \
        else if (kind == RK_IQ4) rp_tile(CB, RK_IQ4, w, ws, a, as, c, ldc, g, jc + jj, s0, s1, d, n, slab); \
        else rp_tile(CB, RK_Q8, w, ws, a, as, c, ldc, g, jc + jj, s0, s1, d, n, slab);                  \
    } while (0)
                    switch (cb) {
                    case 8: RP(8); break;
                    case 4: RP(4); break;
                    case 2: RP(2); break;
                    default: RP(1); break;
                    }
#undef RP
                    jj += cb;
                }
            }
        }
    }
    return true;
}

/* ------------------------------------------------------------------ Q4_K */
/* Q4_K (layout in quant/repack.h) times Q8_K: per 64-value piece, 8 vectors of 16
 * rows x 4 quant bytes give the two sub-blocks' sums (low nibbles: even sub-block,
 * high: odd) in two dpbusd chains; each is scaled by its 6-bit scale (vpmulld)
 * into the super-block's integer sum. The mins term sum_s m[s] * bsum_s is four
 * vpdpwssd of (m[2t], m[2t+1]) word pairs with the activation's sub-block sums.
 * Then two fmas per super-block, as in the scalar reference (bit for bit).
 * Q5_K (q5) is the same tile with each nibble vector ORed with its fifth bits (bit s
 * of the qh vector of the same 4-value chunk, moved to bit 4): codes 0..31. */
#define RPK_MAXCB 4
#define RPK_SLAB 64   /* super-blocks per activation slab (16384 values) */
#define RPK_PRE 2048  /* prepared (column, super-block) entries */
#define RPK_PF 4608   /* prefetch distance: two super-blocks of a 16-row group */

/* Per column and super-block of [s0, s1): the scale and the four sub-block-sum word
 * pairs (bsum_2t | bsum_2t+1 << 16) of the activation. */
static void rpk_prepare(const uint8_t *a, size_t as, int64_t j0, int64_t n, int64_t s0, int64_t s1, int64_t stride,
                        float *dy, int32_t *bs) {
    for (int64_t cc = 0; cc < n; cc++) {
        const block_q8_K *y = (const block_q8_K *)(a + (size_t)(j0 + cc) * as);
        for (int64_t b = s0; b < s1; b++) {
            const int64_t e = cc * stride + (b - s0);
            dy[e] = y[b].d;
            for (int t = 0; t < 4; t++) {
                const int lo = y[b].bsums[4 * t] + y[b].bsums[4 * t + 1];
                const int hi = y[b].bsums[4 * t + 2] + y[b].bsums[4 * t + 3];
                bs[4 * e + t] = (int32_t)(((uint32_t)hi << 16) | ((uint32_t)lo & 0xFFFFu));
            }
        }
    }
}

static ALWAYS_INLINE __m512i rpk_bytes(const uint8_t *p) {
    return _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p));
}

/* bit b of every byte of v moved to bit 4 (the other bits garbage) */
static ALWAYS_INLINE __m512i rpk_bit4(__m512i v, int b) {
    return b < 4 ? _mm512_slli_epi16(v, (unsigned)(4 - b)) : b > 4 ? _mm512_srli_epi16(v, (unsigned)(b - 4)) : v;
}

static ALWAYS_INLINE void rpk_tile(int CB, bool q5, const uint8_t *w, size_t ws, const uint8_t *a, size_t as,
                                   float *c, size_t ldc, int64_t g, int64_t j, int64_t s0, int64_t s1, const float *dy,
                                   const int32_t *bs, int64_t stride) {
    const size_t bstep = (q5 ? sizeof(block_q5_K) : sizeof(block_q4_K)) * LOOM_REPACK_ROWS;
    const size_t pf = q5 ? 2 * bstep : RPK_PF;
    const __m512i m16 = _mm512_set1_epi8(0x10);
    const __m512i m4 = _mm512_set1_epi8(0x0F), m3 = _mm512_set1_epi8(0x03);
    __m512 acc[RPK_MAXCB];
    RP_UNROLL
    for (int cc = 0; cc < CB; cc++)
        acc[cc] = s0 == 0 ? _mm512_setzero_ps()
                          : _mm512_loadu_ps(c + (size_t)(j + cc) * ldc + (size_t)g * LOOM_REPACK_ROWS);
    const uint8_t *p = w + (size_t)g * ws * LOOM_REPACK_ROWS + (size_t)s0 * bstep;
    _Alignas(64) uint8_t scm[256]; /* sc of sub-blocks 0..7 (16 rows each), then m */
    for (int64_t b = s0; b < s1; b++, p += bstep) {
        const __m512i lo0 = _mm512_loadu_si512((const void *)(p + 64)), lo1 = _mm512_loadu_si512((const void *)(p + 128));
        const __m512i hi = _mm512_loadu_si512((const void *)(p + 192));
        const __m512i h1 = _mm512_srli_epi16(hi, 2), h2 = _mm512_srli_epi16(hi, 4), h3 = _mm512_srli_epi16(hi, 6);
        _mm512_store_si512((void *)scm, _mm512_or_si512(_mm512_and_si512(lo0, m4),
                                                        _mm512_slli_epi16(_mm512_and_si512(hi, m3), 4)));
        _mm512_store_si512((void *)(scm + 64), _mm512_or_si512(_mm512_and_si512(lo1, m4),
                                                               _mm512_slli_epi16(_mm512_and_si512(h1, m3), 4)));
        _mm512_store_si512((void *)(scm + 128),
                           _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(lo0, 4), m4),
                                           _mm512_slli_epi16(_mm512_and_si512(h2, m3), 4)));
        _mm512_store_si512((void *)(scm + 192),
                           _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(lo1, 4), m4),
                                           _mm512_slli_epi16(_mm512_and_si512(h3, m3), 4)));
        __m512i isum[RPK_MAXCB];
        RP_UNROLL
        for (int cc = 0; cc < CB; cc++) isum[cc] = _mm512_setzero_si512();
        RP_UNROLL
        for (int jj = 0; jj < 4; jj++) {
            __m512i de[RPK_MAXCB], dod[RPK_MAXCB];
            RP_UNROLL
            for (int cc = 0; cc < CB; cc++) de[cc] = dod[cc] = _mm512_setzero_si512();
            RP_UNROLL
            for (int ch = 0; ch < 8; ch++) {
                const uint8_t *pq = p + loom_repack_kq_qs(q5, (size_t)(8 * jj + ch));
                const __m512i v = _mm512_loadu_si512((const void *)pq);
                /* software prefetch two super-blocks ahead: measured 27-30 GB/s on one
                 * thread streaming from DRAM against 18-25 with the hardware prefetcher
                 * alone on the Xeon; stream prefetches, off on AMD, where the hardware
                 * alone measured faster (kernels_internal.h LOOM_PFS0) */
                LOOM_PFS0((const char *)(pq + pf));
                if (jj == 0 && ch < 4) LOOM_PFS0((const char *)(p + 64 * ch + pf));
                if (q5 && jj == 1) LOOM_PFS0((const char *)(p + loom_repack_q5k_qh((size_t)ch) + pf));
                if (CB == 1) { /* decode: the same lines LOOM_PF_L2 ahead into L2 */
                    LOOM_PFS1((const char *)(pq + LOOM_PF_L2));
                    if (jj == 0 && ch < 4) LOOM_PFS1((const char *)(p + 64 * ch + LOOM_PF_L2));
                    if (q5 && jj == 1) LOOM_PFS1((const char *)(p + loom_repack_q5k_qh((size_t)ch) + LOOM_PF_L2));
                }
                __m512i lo = _mm512_and_si512(v, m4);
                __m512i hn = _mm512_and_si512(_mm512_srli_epi16(v, 4), m4);
                if (q5) {
                    const __m512i qh = _mm512_loadu_si512((const void *)(p + loom_repack_q5k_qh((size_t)ch)));
                    lo = _mm512_or_si512(lo, _mm512_and_si512(rpk_bit4(qh, 2 * jj), m16));
                    hn = _mm512_or_si512(hn, _mm512_and_si512(rpk_bit4(qh, 2 * jj + 1), m16));
                }
                RP_UNROLL
                for (int cc = 0; cc < CB; cc++) {
                    const int8_t *yq = ((const block_q8_K *)(a + (size_t)(j + cc) * as))[b].qs + 64 * jj + 4 * ch;
                    de[cc] = _mm512_dpbusd_epi32(de[cc], lo, _mm512_set1_epi32(ld32(yq)));
                    dod[cc] = _mm512_dpbusd_epi32(dod[cc], hn, _mm512_set1_epi32(ld32(yq + 32)));
                }
            }
            const __m512i se = rpk_bytes(scm + 32 * jj), so = rpk_bytes(scm + 32 * jj + 16);
            RP_UNROLL
            for (int cc = 0; cc < CB; cc++)
                isum[cc] = _mm512_add_epi32(isum[cc], _mm512_add_epi32(_mm512_mullo_epi32(de[cc], se),
                                                                       _mm512_mullo_epi32(dod[cc], so)));
        }
        /* (m[2t], m[2t+1]) word pairs per lane */
        __m512i mp[4];
        RP_UNROLL
        for (int t = 0; t < 4; t++)
            mp[t] = _mm512_or_si512(rpk_bytes(scm + 128 + 32 * t),
                                    _mm512_slli_epi32(rpk_bytes(scm + 128 + 32 * t + 16), 16));
        const __m512 dx = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
        const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + 32)));
        RP_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            const int64_t e = cc * stride + (b - s0);
            __m512i ms = _mm512_dpwssd_epi32(_mm512_setzero_si512(), mp[0], _mm512_set1_epi32(bs[4 * e]));
            ms = _mm512_dpwssd_epi32(ms, mp[1], _mm512_set1_epi32(bs[4 * e + 1]));
            ms = _mm512_dpwssd_epi32(ms, mp[2], _mm512_set1_epi32(bs[4 * e + 2]));
            ms = _mm512_dpwssd_epi32(ms, mp[3], _mm512_set1_epi32(bs[4 * e + 3]));
            const __m512 dyv = _mm512_set1_ps(dy[e]);
            acc[cc] = _mm512_fmadd_ps(_mm512_mul_ps(dx, dyv), _mm512_cvtepi32_ps(isum[cc]), acc[cc]);
            acc[cc] = _mm512_fnmadd_ps(_mm512_mul_ps(dm, dyv), _mm512_cvtepi32_ps(ms), acc[cc]);
        }
    }
    RP_UNROLL
    for (int cc = 0; cc < CB; cc++)
        _mm512_storeu_ps(c + (size_t)(j + cc) * ldc + (size_t)g * LOOM_REPACK_ROWS, acc[cc]);
}

/* ------------------------------------------------------------------ Q2_K */
/* Q2_K (layout in quant/repack.h) times Q8_K: per half (128 values) the 8 vectors of
 * 16 rows x 4 quant bytes are loaded once; shift 2j of them gives the codes (0..3) of
 * values 32j + 0..31 of the half, i.e. groups 8h + 2j (chunks 0..3) and 8h + 2j + 1
 * (chunks 4..7). Each group's dpbusd chain is scaled by its 4-bit scale (vpmulld) into
 * the super-block's integer sum; the mins term sum_s m[s] * bsum_s is 8 vpdpwssd of
 * (m[2t], m[2t+1]) word pairs with the activation's group sums. Then two fmas per
 * super-block, as in the scalar reference (bit for bit). */
#define RP2_MAXCB 4
#define RP2_SLAB 64  /* super-blocks per activation slab */
#define RP2_PRE 1024 /* prepared (column, super-block) entries */

/* Per column and super-block of [s0, s1): the scale and the 8 group-sum word pairs
 * (bsum_2t | bsum_2t+1 << 16) of the activation. */
static void rp2_prepare(const uint8_t *a, size_t as, int64_t j0, int64_t n, int64_t s0, int64_t s1, int64_t stride,
                        float *dy, int32_t *bs) {
    for (int64_t cc = 0; cc < n; cc++) {
        const block_q8_K *y = (const block_q8_K *)(a + (size_t)(j0 + cc) * as);
        for (int64_t b = s0; b < s1; b++) {
            const int64_t e = cc * stride + (b - s0);
            dy[e] = y[b].d;
            for (int t = 0; t < 8; t++)
                bs[8 * e + t] = (int32_t)(((uint32_t)(uint16_t)y[b].bsums[2 * t + 1] << 16) |
                                          (uint32_t)(uint16_t)y[b].bsums[2 * t]);
        }
    }
}

static ALWAYS_INLINE void rp2_tile(int CB, const uint8_t *w, size_t ws, const uint8_t *a, size_t as, float *c,
                                   size_t ldc, int64_t g, int64_t j, int64_t s0, int64_t s1, const float *dy,
                                   const int32_t *bs, int64_t stride) {
    const size_t bstep = sizeof(block_q2_K) * LOOM_REPACK_ROWS, pf = 2 * bstep;
    const __m512i m3 = _mm512_set1_epi8(0x03), m15 = _mm512_set1_epi32(15);
    __m512 acc[RP2_MAXCB];
    RP_UNROLL
    for (int cc = 0; cc < CB; cc++)
        acc[cc] = s0 == 0 ? _mm512_setzero_ps()
                          : _mm512_loadu_ps(c + (size_t)(j + cc) * ldc + (size_t)g * LOOM_REPACK_ROWS);
    const uint8_t *p = w + (size_t)g * ws * LOOM_REPACK_ROWS + (size_t)s0 * bstep;
    for (int64_t b = s0; b < s1; b++, p += bstep) {
        __m512i isum[RP2_MAXCB];
        RP_UNROLL
        for (int cc = 0; cc < CB; cc++) isum[cc] = _mm512_setzero_si512();
        RP_UNROLL
        for (int h = 0; h < 2; h++) {
            __m512i v[8];
            RP_UNROLL
            for (int ch = 0; ch < 8; ch++) {
                v[ch] = _mm512_loadu_si512((const void *)(p + 320 + 64 * (8 * h + ch)));
                LOOM_PF0((const char *)(p + 320 + 64 * (8 * h + ch) + pf));
                if (CB == 1) LOOM_PF1((const char *)(p + 320 + 64 * (8 * h + ch) + LOOM_PF_L2));
            }
            if (h == 0)
                for (int t = 0; t < 5; t++) {
                    LOOM_PF0((const char *)(p + 64 * t + pf));
                    if (CB == 1) LOOM_PF1((const char *)(p + 64 * t + LOOM_PF_L2));
                }
            RP_UNROLL
            for (int jj = 0; jj < 4; jj++) {
                __m512i de[RP2_MAXCB], dod[RP2_MAXCB];
                RP_UNROLL
                for (int cc = 0; cc < CB; cc++) de[cc] = dod[cc] = _mm512_setzero_si512();
                RP_UNROLL
                for (int ch = 0; ch < 8; ch++) {
                    const __m512i q = _mm512_and_si512(_mm512_srli_epi16(v[ch], (unsigned)(2 * jj)), m3);
                    RP_UNROLL
                    for (int cc = 0; cc < CB; cc++) {
                        const int8_t *yq = ((const block_q8_K *)(a + (size_t)(j + cc) * as))[b].qs + 128 * h +
                                           32 * jj + 4 * ch;
                        if (ch < 4) de[cc] = _mm512_dpbusd_epi32(de[cc], q, _mm512_set1_epi32(ld32(yq)));
                        else dod[cc] = _mm512_dpbusd_epi32(dod[cc], q, _mm512_set1_epi32(ld32(yq)));
                    }
                }
                const int s = 8 * h + 2 * jj;
                const __m512i se = _mm512_and_si512(rpk_bytes(p + 64 + 16 * s), m15);
                const __m512i so = _mm512_and_si512(rpk_bytes(p + 64 + 16 * (s + 1)), m15);
                RP_UNROLL
                for (int cc = 0; cc < CB; cc++)
                    isum[cc] = _mm512_add_epi32(isum[cc], _mm512_add_epi32(_mm512_mullo_epi32(de[cc], se),
                                                                           _mm512_mullo_epi32(dod[cc], so)));
            }
        }
        /* (m[2t], m[2t+1]) word pairs per lane */
        __m512i mp[8];
        RP_UNROLL
        for (int t = 0; t < 8; t++)
            mp[t] = _mm512_or_si512(_mm512_srli_epi32(rpk_bytes(p + 64 + 32 * t), 4),
                                    _mm512_slli_epi32(_mm512_srli_epi32(rpk_bytes(p + 64 + 32 * t + 16), 4), 16));
        const __m512 dx = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
        const __m512 dm = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(p + 32)));
        RP_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            const int64_t e = cc * stride + (b - s0);
            __m512i ms = _mm512_dpwssd_epi32(_mm512_setzero_si512(), mp[0], _mm512_set1_epi32(bs[8 * e]));
            RP_UNROLL
            for (int t = 1; t < 8; t++) ms = _mm512_dpwssd_epi32(ms, mp[t], _mm512_set1_epi32(bs[8 * e + t]));
            const __m512 dyv = _mm512_set1_ps(dy[e]);
            acc[cc] = _mm512_fmadd_ps(_mm512_mul_ps(dx, dyv), _mm512_cvtepi32_ps(isum[cc]), acc[cc]);
            acc[cc] = _mm512_fnmadd_ps(_mm512_mul_ps(dm, dyv), _mm512_cvtepi32_ps(ms), acc[cc]);
        }
    }
    RP_UNROLL
    for (int cc = 0; cc < CB; cc++)
        _mm512_storeu_ps(c + (size_t)(j + cc) * ldc + (size_t)g * LOOM_REPACK_ROWS, acc[cc]);
}

/* The slab driver of the Q4_K, Q5_K and Q2_K tiles: per column block and slab of
 * super-blocks, the activation's scales and group-sum pairs are prepared once (4 pairs
 * per super-block for Q4_K / Q5_K, 8 for Q2_K) and reused by every 16-row group. */
enum { RPK_Q4, RPK_Q5, RPK_Q2 };
static ALWAYS_INLINE void gemm_repacked_kq(int kind, int64_t k, const void *w, size_t ws, const void *a, size_t as,
                                           float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    _Static_assert(4 * RPK_PRE == 8 * RP2_PRE, "one group-sum buffer for both");
    const int64_t nb = k / 256, npair = kind == RPK_Q2 ? 8 : 4, pre = kind == RPK_Q2 ? RP2_PRE : RPK_PRE;
    const int64_t maxslab = kind == RPK_Q2 ? RP2_SLAB : RPK_SLAB;
    float dy[RPK_PRE];
    int32_t bs[4 * RPK_PRE];
    for (int64_t jc = j0; jc < j1; jc += RP_COLS) {
        const int64_t jn = j1 - jc < RP_COLS ? j1 - jc : RP_COLS;
        int64_t slab = pre / jn;
        if (slab > maxslab) slab = maxslab;
        for (int64_t s0 = 0; s0 < nb; s0 += slab) {
            const int64_t s1 = s0 + slab < nb ? s0 + slab : nb;
            if (kind == RPK_Q2) rp2_prepare(a, as, jc, jn, s0, s1, slab, dy, bs);
            else rpk_prepare(a, as, jc, jn, s0, s1, slab, dy, bs);
            for (int64_t g = i0 / LOOM_REPACK_ROWS; g < i1 / LOOM_REPACK_ROWS; g++) {
                for (int64_t jj = 0; jj < jn;) {
                    const int64_t left = jn - jj;
                    const int cb = left >= 4 ? 4 : left >= 2 ? 2 : 1;
                    const float *d = dy + jj * slab;
                    const int32_t *q = bs + npair * jj * slab;
#define RPK(CB)                                                                                        \
    do {                                                                                               \
        if (kind == RPK_Q2) rp2_tile(CB, w, ws, a, as, c, ldc, g, jc + jj, s0, s1, d, q, slab);        \
        else rpk_tile(CB, kind == RPK_Q5, w, ws, a, as, c, ldc, g, jc + jj, s0, s1, d, q, slab);       \
    } while (0)
                    if (cb == 4) RPK(4);
                    else if (cb == 2) RPK(2);
                    else RPK(1);
#undef RPK
                    jj += cb;
                }
            }
        }
    }
}

static void gemm_repacked_q4k(int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c, size_t ldc,
                              int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    gemm_repacked_kq(RPK_Q4, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
}

static void gemm_repacked_q5k(int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c, size_t ldc,
                              int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    gemm_repacked_kq(RPK_Q5, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
}

static void gemm_repacked_q2k(int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c, size_t ldc,
                              int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    gemm_repacked_kq(RPK_Q2, k, w, ws, a, as, c, ldc, i0, i1, j0, j1);
}

/* ------------------------------------------------------------------ Q6_K */
/* Q6_K (layout in quant/repack.h) times Q8_K: per half (128 values) and 4-value piece
 * c, two ql vectors and one qh vector of 16 rows rebuild the unsigned 6-bit codes of
 * four groups (values +0, +32, +64, +96); each group's dpbusd chain starts at
 * -32 * bsum_g (the code offset), is scaled by its int8 scale (vpmulld) into the
 * super-block sum, then one fma per super-block, as in the scalar reference. */
#define RP6_MAXCB 2
#define RP6_PF 6720 /* prefetch distance: two super-blocks of a 16-row group */

static ALWAYS_INLINE void rp6_tile(int CB, const uint8_t *w, size_t ws, const uint8_t *a, size_t as, float *c,
                                   size_t ldc, int64_t g, int64_t j, int64_t nb) {
    const size_t bstep = sizeof(block_q6_K) * LOOM_REPACK_ROWS;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    __m512 acc[RP6_MAXCB];
    RP_UNROLL
    for (int cc = 0; cc < CB; cc++) acc[cc] = _mm512_setzero_ps();
    const uint8_t *p = w + (size_t)g * ws * LOOM_REPACK_ROWS;
    for (int64_t b = 0; b < nb; b++, p += bstep) {
        const block_q8_K *yb[RP6_MAXCB];
        __m512i isum[RP6_MAXCB];
        RP_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            yb[cc] = (const block_q8_K *)(a + (size_t)(j + cc) * as) + b;
            isum[cc] = _mm512_setzero_si512();
        }
        RP_UNROLL
        for (int h = 0; h < 2; h++) {
            __m512i gs[8][RP6_MAXCB]; /* group 8h + q: q = 2 * (value offset / 32) + (c >= 4) */
            RP_UNROLL
            for (int q = 0; q < 8; q++)
                RP_UNROLL
                for (int cc = 0; cc < CB; cc++) gs[q][cc] = _mm512_set1_epi32(-32 * yb[cc]->bsums[8 * h + q]);
            RP_UNROLL
            for (int ci = 0; ci < 8; ci++) {
                const uint8_t *pa = p + loom_repack_q6k_ql((size_t)(16 * h + ci));
                const uint8_t *pb = p + loom_repack_q6k_ql((size_t)(16 * h + 8 + ci));
                const uint8_t *ph = p + loom_repack_q6k_qh((size_t)(8 * h + ci));
                /* stream prefetches (kernels_internal.h LOOM_PFS0), near (L1) and, for one
                 * column, far (L2). With ql, ql and qh of a step adjacent (repack.h) a row
                 * group is one forward stream that Zen 4's hardware prefetchers follow
                 * alone: 1.1B Q6_K tg64, one thread, 31.5-32.6 t/s without any, 23.7-25.3
                 * with both, 25.3-26.1 with the L2 ones only. (In the former layout, three
                 * interleaved sub-streams, the L2 ones were needed there too: none gave
                 * 11.6-11.9 t/s, both 21.0-23.2.) */
                if (loom_cpu_prefetch) {
                    _mm_prefetch((const char *)(pa + RP6_PF), _MM_HINT_T0);
                    _mm_prefetch((const char *)(pb + RP6_PF), _MM_HINT_T0);
                    _mm_prefetch((const char *)(ph + RP6_PF), _MM_HINT_T0);
                    if (h == 0 && ci < 5) _mm_prefetch((const char *)(p + 64 * ci + RP6_PF), _MM_HINT_T0);
                    if (CB == 1) {
                        _mm_prefetch((const char *)(pa + LOOM_PF_L2), _MM_HINT_T1);
                        _mm_prefetch((const char *)(pb + LOOM_PF_L2), _MM_HINT_T1);
                        _mm_prefetch((const char *)(ph + LOOM_PF_L2), _MM_HINT_T1);
                        if (h == 0 && ci < 5) _mm_prefetch((const char *)(p + 64 * ci + LOOM_PF_L2), _MM_HINT_T1);
                    }
                }
                const __m512i qa = _mm512_loadu_si512((const void *)pa), qb = _mm512_loadu_si512((const void *)pb);
                const __m512i qv = _mm512_loadu_si512((const void *)ph);
                const __m512i u1 = _mm512_or_si512(_mm512_and_si512(qa, m4),
                                                   _mm512_and_si512(_mm512_slli_epi16(qv, 4), m30));
                const __m512i u2 = _mm512_or_si512(_mm512_and_si512(qb, m4),
                                                   _mm512_and_si512(_mm512_slli_epi16(qv, 2), m30));
                const __m512i u3 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(qa, 4), m4),
                                                   _mm512_and_si512(qv, m30));
                const __m512i u4 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(qb, 4), m4),
                                                   _mm512_and_si512(_mm512_srli_epi16(qv, 2), m30));
                const int hl = ci >= 4;
                RP_UNROLL
                for (int cc = 0; cc < CB; cc++) {
                    const int8_t *ya = yb[cc]->qs + 128 * h + 4 * ci;
                    gs[0 + hl][cc] = _mm512_dpbusd_epi32(gs[0 + hl][cc], u1, _mm512_set1_epi32(ld32(ya)));
                    gs[2 + hl][cc] = _mm512_dpbusd_epi32(gs[2 + hl][cc], u2, _mm512_set1_epi32(ld32(ya + 32)));
                    gs[4 + hl][cc] = _mm512_dpbusd_epi32(gs[4 + hl][cc], u3, _mm512_set1_epi32(ld32(ya + 64)));
                    gs[6 + hl][cc] = _mm512_dpbusd_epi32(gs[6 + hl][cc], u4, _mm512_set1_epi32(ld32(ya + 96)));
                }
            }
            RP_UNROLL
            for (int q = 0; q < 8; q++) {
                const __m512i sc = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(p + 32 + 16 * (8 * h + q))));
                RP_UNROLL
                for (int cc = 0; cc < CB; cc++) isum[cc] = _mm512_add_epi32(isum[cc], _mm512_mullo_epi32(gs[q][cc], sc));
            }
        }
        const __m512 dx = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
        RP_UNROLL
        for (int cc = 0; cc < CB; cc++)
            acc[cc] = _mm512_fmadd_ps(_mm512_mul_ps(dx, _mm512_set1_ps(yb[cc]->d)), _mm512_cvtepi32_ps(isum[cc]),
                                      acc[cc]);
    }
    RP_UNROLL
    for (int cc = 0; cc < CB; cc++)
        _mm512_storeu_ps(c + (size_t)(j + cc) * ldc + (size_t)g * LOOM_REPACK_ROWS, acc[cc]);
}

/* ------------------------------------------------------------------ IQ4_XS */
/* IQ4_XS (layout in quant/repack.h) times Q8_K: per super-block, the 16 rows' 6-bit
 * scales are decoded in lanes from the raw scales_l / scales_h words; per sub-block,
 * four 64-byte vectors of 16 rows x 4 quant bytes, nibbles looked up (vpshufb) as
 * table + 128, two dpbusd per vector and column starting from -128 * the activation's
 * sub-block sum: the exact sub-block dot, times the scale (vpmulld) into the
 * super-block's integer sum; one fma per super-block as in the scalar reference (bit
 * for bit). Stream prefetches (off on AMD: 1.1B IQ4_XS tg64 one thread on Zen 4, 22-24
 * t/s with them, 49.5-51.9 without). */
#define RPX_MAXCB 4
static ALWAYS_INLINE void rpx_tile(int CB, const uint8_t *w, size_t ws, const uint8_t *a, size_t as, float *c,
                                   size_t ldc, int64_t g, int64_t j, int64_t nb) {
    const size_t bstep = sizeof(block_iq4_xs) * LOOM_REPACK_ROWS;
    const __m512i m4 = _mm512_set1_epi8(0x0F), lut = iq4_lut128();
    __m512 acc[RPX_MAXCB];
    RP_UNROLL
    for (int cc = 0; cc < CB; cc++) acc[cc] = _mm512_setzero_ps();
    const uint8_t *p = w + (size_t)g * ws * LOOM_REPACK_ROWS;
    for (int64_t b = 0; b < nb; b++, p += bstep) {
        const block_q8_K *yb[RPX_MAXCB];
        __m512i isum[RPX_MAXCB];
        RP_UNROLL
        for (int cc = 0; cc < CB; cc++) {
            yb[cc] = (const block_q8_K *)(a + (size_t)(j + cc) * as) + b;
            isum[cc] = _mm512_setzero_si512();
        }
        LOOM_PFS0((const char *)(p + 2 * bstep));
        if (CB == 1) LOOM_PFS1((const char *)(p + LOOM_PF_L2));
        const __m512i sl = _mm512_loadu_si512((const void *)(p + 64));
        const __m512i sh = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(p + 32)));
        RP_UNROLL
        for (int s = 0; s < 8; s++) {
            const __m512i sc = _mm512_sub_epi32(
                _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(sl, 8 * (s / 2) + 4 * (s % 2)), _mm512_set1_epi32(15)),
                                _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(sh, 2 * s), _mm512_set1_epi32(3)), 4)),
                _mm512_set1_epi32(32));
            __m512i dot[RPX_MAXCB];
            RP_UNROLL
            for (int cc = 0; cc < CB; cc++)
                dot[cc] = _mm512_set1_epi32(-128 * (yb[cc]->bsums[2 * s] + yb[cc]->bsums[2 * s + 1]));
            RP_UNROLL
            for (int ch = 0; ch < 4; ch++) {
                const uint8_t *q = p + 128 + 64 * (4 * s + ch);
                if (ch == 0) LOOM_PFS0((const char *)(q + 2 * bstep));
                if (CB == 1) LOOM_PFS1((const char *)(q + LOOM_PF_L2));
                const __m512i v = _mm512_loadu_si512((const void *)q);
                const __m512i lo = _mm512_shuffle_epi8(lut, _mm512_and_si512(v, m4));
                const __m512i hi = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(v, 4), m4));
                RP_UNROLL
                for (int cc = 0; cc < CB; cc++) {
                    const int8_t *ya = yb[cc]->qs + 32 * s + 4 * ch;
                    dot[cc] = _mm512_dpbusd_epi32(dot[cc], lo, _mm512_set1_epi32(ld32(ya)));
                    dot[cc] = _mm512_dpbusd_epi32(dot[cc], hi, _mm512_set1_epi32(ld32(ya + 16)));
                }
            }
            RP_UNROLL
            for (int cc = 0; cc < CB; cc++) isum[cc] = _mm512_add_epi32(isum[cc], _mm512_mullo_epi32(dot[cc], sc));
        }
        const __m512 dx = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
        RP_UNROLL
        for (int cc = 0; cc < CB; cc++)
            acc[cc] = _mm512_fmadd_ps(_mm512_mul_ps(dx, _mm512_set1_ps(yb[cc]->d)), _mm512_cvtepi32_ps(isum[cc]),
                                      acc[cc]);
    }
    RP_UNROLL
    for (int cc = 0; cc < CB; cc++)
        _mm512_storeu_ps(c + (size_t)(j + cc) * ldc + (size_t)g * LOOM_REPACK_ROWS, acc[cc]);
}

static void gemm_repacked_iq4xs(int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c, size_t ldc,
                                int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const int64_t nb = k / 256;
    for (int64_t g = i0 / LOOM_REPACK_ROWS; g < i1 / LOOM_REPACK_ROWS; g++) {
        int64_t j = j0;
        for (; j + 4 <= j1; j += 4) rpx_tile(4, w, ws, a, as, c, ldc, g, j, nb);
        if (j + 2 <= j1) {
            rpx_tile(2, w, ws, a, as, c, ldc, g, j, nb);
            j += 2;
        }
        if (j < j1) rpx_tile(1, w, ws, a, as, c, ldc, g, j, nb);
    }
}

static void gemm_repacked_q6k(int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c, size_t ldc,
                              int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const int64_t nb = k / 256;
    for (int64_t g = i0 / LOOM_REPACK_ROWS; g < i1 / LOOM_REPACK_ROWS; g++) {
        int64_t j = j0;
        for (; j + 2 <= j1; j += 2) rp6_tile(2, w, ws, a, as, c, ldc, g, j, nb);
        if (j < j1) rp6_tile(1, w, ws, a, as, c, ldc, g, j, nb);
    }
}

void loom_kernels_fill_repack_avx512vnni(loom_kernels *k) {
    k->gemm_repacked = gemm_repacked_vnni;
    k->repack[LOOM_TYPE_Q4_0] = true;
    k->repack[LOOM_TYPE_IQ4_NL] = true;
    k->repack[LOOM_TYPE_Q8_0] = true;
    k->repack[LOOM_TYPE_Q4_K] = true;
    k->repack[LOOM_TYPE_Q6_K] = true;
    k->repack[LOOM_TYPE_IQ4_XS] = true;
    k->repack[LOOM_TYPE_Q5_K] = true;
    k->repack[LOOM_TYPE_Q2_K] = true;
    k->repack[LOOM_TYPE_Q4_1] = true;
    k->repack[LOOM_TYPE_Q5_0] = true;
    k->repack[LOOM_TYPE_Q5_1] = true;
}
