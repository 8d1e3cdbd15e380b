/* Row-interleaved weight layout (quant/repack.h) and its matmul kernels:
 *  - repack/unpack round trip and the documented byte layout, bad arguments;
 *  - the scalar reference gemm_repacked against a float64 dot of the dequantized
 *    rows, and every ISA level's gemm_repacked against the scalar reference bit for
 *    bit (per lane the same exact integer sums and fma chain), over K = one block,
 *    several activation slabs, N = 1, 2, 3, 7, 64, 300 and a row range that skips a
 *    group (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS; a level may decline a type it does
 *    not repack); Q4_K / Q5_K / Q6_K also with blocks of random bytes (every scale value);
 *  - MUL_MAT on a repacked weight through the engine with 1/2/3 threads (identical
 *    results, within the float64 bound), and the graph refusing any other use. */
#include "cpu/kernels_internal.h"
#include "nn_test_common.h"
#include "quant/blocks.h"
#include "quant/repack.h"

static double gauss(void) { return sqrt(-2.0 * log(rnd_u() + 1e-300)) * cos(6.283185307179586 * rnd_u()); }

static size_t rowb(loom_type t, int64_t k) {
    size_t b = 0;
    CHECK_EQ_INT(loom_type_row_bytes(t, k, &b), LOOM_OK);
    return b;
}

/* m rows of k quantized gaussian values (row 5 with scale 100, others 0.05..1). */
static uint8_t *make_rows(loom_type t, int64_t k, int64_t m) {
    size_t rb = rowb(t, k);
    uint8_t *w = malloc(rb * (size_t)m);
    float *x = fmalloc((size_t)k);
    if (!w || !x) { free(w); free(x); return NULL; }
    for (int64_t r = 0; r < m; r++) {
        double s = r == 5 ? 100.0 : 0.05 + 0.02 * (double)r;
        for (int64_t i = 0; i < k; i++) x[i] = (float)(gauss() * s);
        if (r == 7) for (int64_t i = 0; i < k && i < 32; i++) x[i] = 0.f; /* an all-zero block */
        CHECK_EQ_INT(loom_quantize_row(t, x, w + (size_t)r * rb, k), LOOM_OK);
    }
    free(x);
    return w;
}

/* Q4_K: 6-bit scale and min of sub-block s from the GGUF 12-byte form (the format's
 * published packing, written out independently of quant/). */
static void k4_scale_min(const uint8_t *q, int s, int *sc, int *m) {
    if (s < 4) {
        *sc = q[s] & 63;
        *m = q[s + 4] & 63;
    } else {
        *sc = (q[s + 4] & 0xF) | ((q[s - 4] >> 6) << 4);
        *m = (q[s + 4] >> 4) | ((q[s] >> 6) << 4);
    }
}

/* The documented byte layout of one (row, block) pair; returns differing bytes. */
static int layout_diff(loom_type t, const uint8_t *src, const uint8_t *grp, int64_t rr) {
    int bad = 0;
    if (t == LOOM_TYPE_Q6_K) { /* GGUF block: ql[128] qh[64] scales[16] d */
        if (memcmp(grp + 2 * rr, src + 208, 2) != 0) bad++;
        for (int s = 0; s < 16; s++)
            if (grp[32 + 16 * s + rr] != src[192 + s]) bad++;
        /* 16 pieces of 192 bytes from 288: piece 8h + c holds ql chunks 16h + c and
         * 16h + 8 + c, then qh chunk 8h + c (chunk u: bytes 4u..4u+3, row rr at 4rr) */
        for (int e = 0; e < 128; e++) {
            const int u = e / 4, h = u / 16, c = u % 16;
            if (grp[288 + 192 * (8 * h + c % 8) + 64 * (c / 8) + 4 * rr + e % 4] != src[e]) bad++;
        }
        for (int e = 0; e < 64; e++)
            if (grp[288 + 192 * (e / 4) + 128 + 4 * rr + e % 4] != src[128 + e]) bad++;
        return bad;
    }
    if (t == LOOM_TYPE_Q2_K) { /* GGUF block: scales[16] qs[64] d dmin */
        if (memcmp(grp + 2 * rr, src + 80, 2) != 0 || memcmp(grp + 32 + 2 * rr, src + 82, 2) != 0) bad++;
        for (int s = 0; s < 16; s++)
            if (grp[64 + 16 * s + rr] != src[s]) bad++;
        for (int e = 0; e < 64; e++)
            if (grp[320 + 64 * (e / 4) + 4 * rr + e % 4] != src[16 + e]) bad++;
        return bad;
    }
    if (t == LOOM_TYPE_IQ4_XS) { /* GGUF block: d, scales_h, scales_l[4], qs[128] */
        if (memcmp(grp + 2 * rr, src, 2) != 0 || memcmp(grp + 32 + 2 * rr, src + 2, 2) != 0 ||
            memcmp(grp + 64 + 4 * rr, src + 4, 4) != 0)
            bad++;
        for (int e = 0; e < 128; e++)
            if (grp[128 + 64 * (e / 4) + 4 * rr + e % 4] != src[8 + e]) bad++;
        return bad;
    }
    if (t == LOOM_TYPE_Q4_K || t == LOOM_TYPE_Q5_K) { /* Q5_K block: d, dmin, scales[12], qh[32], qs[128] */
        const bool k5 = t == LOOM_TYPE_Q5_K;
        if (k5)
            for (int e = 0; e < 32; e++)
                if (grp[320 + 128 * (e / 4) + 4 * rr + e % 4] != src[16 + e]) bad++; /* after chunk e / 4 */
        if (memcmp(grp + 2 * rr, src, 2) != 0 || memcmp(grp + 32 + 2 * rr, src + 2, 2) != 0) bad++;
        for (int s = 0; s < 8; s++) {
            int sc, m;
            k4_scale_min(src + 4, s, &sc, &m);
            const uint8_t lo = grp[64 + 16 * s + rr], hi = grp[192 + 16 * (s % 4) + rr];
            const int sh = s < 4 ? 0 : 2;
            if ((lo & 15) != (sc & 15) || (lo >> 4) != (m & 15) || ((hi >> sh) & 3) != sc >> 4 ||
                ((hi >> (4 + sh)) & 3) != m >> 4)
                bad++;
        }
        for (int e = 0; e < 128; e++) { /* Q5_K: chunks 0..7 each followed by its qh chunk */
            const int u = e / 4, off = !k5 ? 256 + 64 * u : u < 8 ? 256 + 128 * u : 768 + 64 * u;
            if (grp[off + 4 * rr + e % 4] != src[(k5 ? 48 : 16) + e]) bad++;
        }
        return bad;
    }
    if (t == LOOM_TYPE_Q4_1 || t == LOOM_TYPE_Q5_0 || t == LOOM_TYPE_Q5_1) {
        /* GGUF blocks: Q4_1 d m qs[16]; Q5_0 d qh[4] qs[16]; Q5_1 d m qh[4] qs[16] */
        const int mn = t != LOOM_TYPE_Q5_0, hb = t != LOOM_TYPE_Q4_1;
        const int sq = 2 + 2 * mn + 4 * hb, pq = 32 + 32 * mn + 64 * hb;
        if (memcmp(grp + 2 * rr, src, 2) != 0) bad++;
        if (mn && memcmp(grp + 32 + 2 * rr, src + 2, 2) != 0) bad++;
        if (hb && memcmp(grp + 32 + 32 * mn + 4 * rr, src + 2 + 2 * mn, 4) != 0) bad++;
        for (int e = 0; e < 16; e++)
            if (grp[pq + 64 * (e / 4) + 4 * rr + e % 4] != src[sq + e]) bad++;
        return bad;
    }
    const bool q4 = t == LOOM_TYPE_Q4_0 || t == LOOM_TYPE_IQ4_NL;
    if (memcmp(grp + 2 * rr, src, 2) != 0) bad++;
    for (int e = 0; e < (q4 ? 16 : 32); e++) {
        uint8_t want = (uint8_t)(src[2 + e] ^ (q4 ? 0 : 0x80));
        if (grp[32 + 64 * (e / 4) + 4 * rr + e % 4] != want) bad++;
    }
    return bad;
}

static void test_layout(void) {
    static const loom_type ts[11] = {LOOM_TYPE_Q4_0,   LOOM_TYPE_Q8_0,   LOOM_TYPE_Q4_K, LOOM_TYPE_Q6_K,
                                     LOOM_TYPE_IQ4_NL, LOOM_TYPE_IQ4_XS, LOOM_TYPE_Q5_K, LOOM_TYPE_Q2_K,
                                     LOOM_TYPE_Q4_1,   LOOM_TYPE_Q5_0,   LOOM_TYPE_Q5_1};
    static const int64_t ks[3] = {32, 96, 4192}, kks[3] = {256, 768, 4352};
    for (int ti = 0; ti < 11; ti++)
        for (int ki = 0; ki < 3; ki++) {
            loom_type t = ts[ti];
            const bool kq = loom_type_get(t)->block_size == 256;
            int64_t k = kq ? kks[ki] : ks[ki], m = 48, qk = kq ? 256 : 32;
            size_t rb = rowb(t, k), n = rb * (size_t)m;
            uint8_t *w = make_rows(t, k, m), *p = malloc(n), *u = malloc(n);
            if (!w || !p || !u) { CHECK(0); free(w); free(p); free(u); return; }
            CHECK_EQ_INT(loom_repack_rows(t, k, m, w, p), LOOM_OK);
            CHECK_EQ_INT(loom_unpack_rows(t, k, m, p, u), LOOM_OK);
            CHECK_MSG(memcmp(w, u, n) == 0, "%s k=%lld round trip", loom_type_name(t), (long long)k);
            /* the documented layout, byte by byte, for a few (row, block) pairs */
            const size_t bb = rb / (size_t)(k / qk);
            int bad = 0;
            for (int64_t r = 0; r < m; r += 7)
                for (int64_t b = 0; b < k / qk; b += kq ? 1 : 5)
                    bad += layout_diff(t, w + (size_t)r * rb + (size_t)b * bb,
                                       p + (size_t)(r / 16) * 16 * rb + (size_t)b * 16 * bb, r % 16);
            CHECK_MSG(bad == 0, "%s k=%lld layout: %d bytes differ", loom_type_name(t), (long long)k, bad);
            free(w);
            free(p);
            free(u);
        }
    uint8_t a[4096] = {0}, b[4096];
    CHECK_EQ_INT(loom_repack_rows(LOOM_TYPE_Q4_0, 32, 15, a, b), LOOM_ERR_INVALID_ARG); /* rows not 16x */
    CHECK_EQ_INT(loom_repack_rows(LOOM_TYPE_Q4_0, 48, 16, a, b), LOOM_ERR_INVALID_ARG); /* k not 32x */
    CHECK_EQ_INT(loom_repack_rows(LOOM_TYPE_MXFP4, 32, 16, a, b), LOOM_ERR_INVALID_ARG); /* no layout */
    CHECK_EQ_INT(loom_unpack_rows(LOOM_TYPE_Q8_0, 0, 16, a, b), LOOM_ERR_INVALID_ARG);
    CHECK_EQ_INT(loom_repack_rows(LOOM_TYPE_Q8_0, 32, 16, NULL, b), LOOM_ERR_INVALID_ARG);
    const int64_t ok[4] = {64, 32, 1, 1}, odd[4] = {64, 40, 1, 1}, b3[4] = {64, 32, 2, 1}, b3odd[4] = {64, 24, 2, 1},
                  b4[4] = {64, 32, 1, 2};
    CHECK(loom_repack_shape_ok(LOOM_TYPE_Q8_0, ok));
    CHECK(!loom_repack_shape_ok(LOOM_TYPE_Q8_0, odd));
    CHECK(loom_repack_shape_ok(LOOM_TYPE_Q4_0, b3));     /* a stack of experts, each 32 rows */
    CHECK(!loom_repack_shape_ok(LOOM_TYPE_Q4_0, b3odd)); /* 24 rows per expert: a group would straddle two */
    CHECK(!loom_repack_shape_ok(LOOM_TYPE_Q4_0, b4));
    CHECK(!loom_repack_shape_ok(LOOM_TYPE_Q4_K, ok)); /* k not a multiple of 256 */
    const int64_t kok[4] = {512, 32, 1, 1};
    CHECK(loom_repack_shape_ok(LOOM_TYPE_Q4_K, kok));
    CHECK_EQ_INT(loom_repack_rows(LOOM_TYPE_Q4_K, 224, 16, a, b), LOOM_ERR_INVALID_ARG);
    CHECK(loom_repack_type_ok(LOOM_TYPE_Q4_0) && loom_repack_type_ok(LOOM_TYPE_Q8_0) &&
          loom_repack_type_ok(LOOM_TYPE_Q4_K) && loom_repack_type_ok(LOOM_TYPE_Q6_K) &&
          loom_repack_type_ok(LOOM_TYPE_IQ4_NL) && loom_repack_type_ok(LOOM_TYPE_IQ4_XS) &&
          loom_repack_type_ok(LOOM_TYPE_Q5_K) && loom_repack_type_ok(LOOM_TYPE_Q2_K) &&
          loom_repack_type_ok(LOOM_TYPE_Q4_1) && loom_repack_type_ok(LOOM_TYPE_Q5_0) &&
          loom_repack_type_ok(LOOM_TYPE_Q5_1) && !loom_repack_type_ok(LOOM_TYPE_Q3_K) &&
          !loom_repack_type_ok(LOOM_TYPE_MXFP4));
    CHECK_EQ_INT(loom_repack_act_type(LOOM_TYPE_Q4_1), LOOM_TYPE_Q8_1);
    CHECK_EQ_INT(loom_repack_act_type(LOOM_TYPE_Q5_1), LOOM_TYPE_Q8_1);
    CHECK_EQ_INT(loom_repack_act_type(LOOM_TYPE_Q5_0), LOOM_TYPE_Q8_0);
    CHECK_EQ_INT(loom_repack_act_type(LOOM_TYPE_Q2_K), LOOM_TYPE_Q8_K);
    CHECK_EQ_INT(loom_repack_act_type(LOOM_TYPE_IQ4_NL), LOOM_TYPE_Q8_0);
    CHECK_EQ_INT(loom_repack_act_type(LOOM_TYPE_IQ4_XS), LOOM_TYPE_Q8_K);
    CHECK_EQ_INT(loom_repack_act_type(LOOM_TYPE_Q6_K), LOOM_TYPE_Q8_K);
    CHECK_EQ_INT(loom_repack_act_type(LOOM_TYPE_Q4_K), LOOM_TYPE_Q8_K);
    CHECK_EQ_INT(loom_repack_act_type(LOOM_TYPE_Q8_0), LOOM_TYPE_Q8_0);
    CHECK_EQ_INT(loom_repack_act_type(LOOM_TYPE_Q5_K), LOOM_TYPE_Q8_K);
    CHECK_EQ_INT(loom_repack_act_type(LOOM_TYPE_Q3_K), LOOM_TYPE_COUNT);
}

/* |v - exact| within a float rounding bound for a block-wise fma chain (Q4_K: two
 * fmas per super-block, each rounding its product of scales and a sum that may
 * exceed 2^24, so the same per-32 count bounds it) */
static double chain_bound(int64_t k, double mag) { return 2.0 * (double)(k / 32 + 4) * ldexp(1.0, -24) * mag + 1e-30; }

/* Set by test_gemm: Q8_K activation rows get extreme bytes (-128 and +127 runs, which
 * the quantizer never writes) with their bsums recomputed, to check that every level's
 * integer sums stay exact (int16 lanes must not saturate) for any activation bytes;
 * odd Q8_0 columns get such runs too (the AVX2 sign-trick tiles hand a column with a
 * -128 byte to the reference). */
static bool g_extreme;

/* Set by test_gemm: Q4_K / Q5_K / Q6_K weight blocks of random bytes (every code, scale
 * and min value, Q6_K's scales -128..127 included, which the quantizer may not write) with
 * a small positive f16 d (and dmin), for the tiles that split the scales into parts. */
static bool g_raw;

static void randomize_kq(loom_type t, uint8_t *w, size_t bytes) {
    const size_t bb = t == LOOM_TYPE_Q4_K ? 144 : t == LOOM_TYPE_Q5_K ? 176 : 210;
    for (size_t i = 0; i < bytes; i++) w[i] = (uint8_t)(rnd_u() * 256.0);
    for (size_t b = 0; b + bb <= bytes; b += bb) {
        const uint16_t d = (uint16_t)(0x2000 + (int)(rnd_u() * 1024.0)), dm = (uint16_t)(0x1C00 + (int)(rnd_u() * 1024.0));
        if (t == LOOM_TYPE_Q6_K) {
            memcpy(w + b + 208, &d, 2);
        } else {
            memcpy(w + b, &d, 2);
            memcpy(w + b + 2, &dm, 2);
        }
    }
}

static void check_gemm(loom_type t, int64_t k, int64_t n) {
    const int64_t m = 48;
    const loom_kernels *s = loom_kernels_scalar();
    const loom_type at = loom_repack_act_type(t);
    size_t rb = rowb(t, k), arb = rowb(at, k);
    uint8_t *w = make_rows(t, k, m), *p = malloc(rb * (size_t)m), *a = malloc(arb * (size_t)n);
    float *x = fmalloc((size_t)k), *wf = fmalloc((size_t)k), *af = fmalloc((size_t)k);
    float *ref = fmalloc((size_t)(m * n)), *got = fmalloc((size_t)(m * n));
    if (!w || !p || !a || !x || !wf || !af || !ref || !got) { CHECK(0); goto done; }
    if (g_raw) randomize_kq(t, w, rb * (size_t)m);
    for (int64_t j = 0; j < n; j++) {
        for (int64_t i = 0; i < k; i++) x[i] = (float)(gauss() * (j % 3 == 1 ? 0.001 : 2.0));
        s->from_float[at](x, a + (size_t)j * arb, k);
        if (g_extreme && at == LOOM_TYPE_Q8_0 && j % 2) { /* odd columns: -128 / +127 runs */
            block_q8_0 *yb = (block_q8_0 *)(a + (size_t)j * arb);
            for (int64_t b = 0; b < k / 32; b++)
                for (int e = 0; e < 32; e++) yb[b].qs[e] = (int8_t)((e + b) % 3 ? -128 : 127);
        }
        if (g_extreme && at == LOOM_TYPE_Q8_1 && j % 2) { /* the same; s = d x the new sum */
            block_q8_1 *yb = (block_q8_1 *)(a + (size_t)j * arb);
            for (int64_t b = 0; b < k / 32; b++) {
                int sum = 0;
                for (int e = 0; e < 32; e++) sum += yb[b].qs[e] = (int8_t)((e + b) % 3 ? -128 : 127);
                yb[b].s = loom_fp32_to_fp16(loom_fp16_to_fp32(yb[b].d) * (float)sum);
            }
        }
        if (g_extreme && at == LOOM_TYPE_Q8_K) {
            block_q8_K *yb = (block_q8_K *)(a + (size_t)j * arb);
            for (int64_t b = 0; b < k / 256; b++) {
                for (int e = 0; e < 256; e++)
                    yb[b].qs[e] = (int8_t)((j + b) % 2 ? -128 : e % 64 < 48 ? 127 : -128);
                for (int g = 0; g < 16; g++) {
                    int sum = 0;
                    for (int e = 0; e < 16; e++) sum += yb[b].qs[16 * g + e];
                    yb[b].bsums[g] = (int16_t)sum;
                }
            }
        }
    }
    CHECK_EQ_INT(loom_repack_rows(t, k, m, w, p), LOOM_OK);
    for (int64_t i = 0; i < m * n; i++) ref[i] = -777.f;
    CHECK(s->gemm_repacked(t, k, p, rb, a, arb, ref, (size_t)m, 16, m, 0, n));
    /* scalar reference vs float64 of the dequantized operands */
    int bad = 0;
    for (int64_t j = 0; j < n; j++) {
        CHECK_EQ_INT(loom_dequantize_row(at, a + (size_t)j * arb, af, k), LOOM_OK);
        for (int64_t i = 0; i < m; i++) {
            float v = ref[j * m + i];
            if (i < 16) {
                if (v != -777.f) bad++; /* outside [i0, i1): untouched */
                continue;
            }
            CHECK_EQ_INT(loom_dequantize_row(t, w + (size_t)i * rb, wf, k), LOOM_OK);
            double d = 0, mag = 0;
            if (at == LOOM_TYPE_Q8_1) {
                /* Q4_1 / Q5_1: the min term with the activation block's stored s (f16 of d x
                 * sum, the format's definition), the rest from the dequantized values */
                const size_t wbb = rb / (size_t)(k / 32);
                for (int64_t b = 0; b < k / 32; b++) {
                    const double mb = loom_fp16_to_fp32(((const block_q4_1 *)(w + (size_t)i * rb + (size_t)b * wbb))->m);
                    const double sb = loom_fp16_to_fp32(((const block_q8_1 *)(a + (size_t)j * arb))[b].s);
                    for (int64_t e = 32 * b; e < 32 * b + 32; e++) {
                        d += ((double)wf[e] - mb) * af[e];
                        mag += fabs(((double)wf[e] - mb) * af[e]);
                    }
                    d += mb * sb;
                    mag += fabs(mb * sb);
                }
            } else {
                for (int64_t e = 0; e < k; e++) {
                    d += (double)wf[e] * af[e];
                    mag += fabs((double)wf[e] * af[e]);
                }
            }
            if (!(fabs(v - d) <= chain_bound(k, mag)) && bad++ < 3)
                fprintf(stderr, "  ref %s k=%lld r%lld c%lld: %.9g vs f64 %.9g\n", loom_type_name(t), (long long)k,
                        (long long)i, (long long)j, v, d);
        }
    }
    CHECK_MSG(bad == 0, "scalar repacked %s k=%lld n=%lld vs float64", loom_type_name(t), (long long)k, (long long)n);
    /* every level: bit for bit with the scalar reference */
    const char *const *lv = loom_kernels_levels();
    for (int li = 0; lv[li]; li++) {
        const loom_kernels *kt = loom_kernels_for(lv[li]);
        if (!kt) continue;
        CHECK(kt->gemm_repacked != NULL);
        for (int64_t i = 0; i < m * n; i++) got[i] = -777.f;
        const bool done = kt->gemm_repacked(t, k, p, rb, a, arb, got, (size_t)m, 16, m, 0, n);
        /* a level may decline a layout it never asks for (the engine then uses the
         * reference); one that asks for it must compute it */
        if (!done && !kt->repack[t]) continue;
        CHECK_MSG(done, "%s declined %s", lv[li], loom_type_name(t));
        CHECK_MSG(memcmp(got, ref, sizeof(float) * (size_t)(m * n)) == 0, "%s gemm_repacked %s k=%lld n=%lld",
                  lv[li], loom_type_name(t), (long long)k, (long long)n);
        if (kt->repack[t]) CHECK(kt->gemm_repacked != s->gemm_repacked); /* a level asking for it has its own */
    }
    CHECK(!s->gemm_repacked(LOOM_TYPE_Q3_K, 256, p, rb, a, arb, got, (size_t)m, 0, 16, 0, 1));
done:
    free(w); free(p); free(a); free(x); free(wf); free(af); free(ref); free(got);
}

static void test_gemm(void) {
    static const int64_t ns[5] = {1, 2, 3, 7, 64};
    static const loom_type b32[6] = {LOOM_TYPE_Q4_0, LOOM_TYPE_Q8_0, LOOM_TYPE_IQ4_NL,
                                     LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0, LOOM_TYPE_Q5_1};
    for (int ti = 0; ti < 6; ti++) {
        loom_type t = b32[ti];
        for (int ni = 0; ni < 5; ni++) {
            check_gemm(t, 32, ns[ni]);
            check_gemm(t, 4192, ns[ni]); /* 131 blocks: three activation slabs, the last partial */
        }
        check_gemm(t, 2080, 300);
        check_gemm(t, 16640, 1); /* 520 blocks: a decode row over two activation slabs */
    }
    for (int ni = 0; ni < 5; ni++) {
        check_gemm(LOOM_TYPE_Q4_K, 256, ns[ni]);
        check_gemm(LOOM_TYPE_Q4_K, 5632, ns[ni]); /* 22 super-blocks */
    }
    check_gemm(LOOM_TYPE_Q4_K, 16640, 5);  /* 65 super-blocks: more than one activation slab */
    check_gemm(LOOM_TYPE_Q4_K, 2048, 300);
    for (int ni = 0; ni < 5; ni++) {
        check_gemm(LOOM_TYPE_Q6_K, 256, ns[ni]);
        check_gemm(LOOM_TYPE_Q6_K, 5632, ns[ni]);
    }
    check_gemm(LOOM_TYPE_Q6_K, 2048, 300);
    for (int ni = 0; ni < 5; ni++) {
        check_gemm(LOOM_TYPE_IQ4_XS, 256, ns[ni]);
        check_gemm(LOOM_TYPE_IQ4_XS, 5632, ns[ni]);
    }
    for (int ni = 0; ni < 5; ni++) {
        check_gemm(LOOM_TYPE_Q5_K, 256, ns[ni]);
        check_gemm(LOOM_TYPE_Q5_K, 5632, ns[ni]);
    }
    check_gemm(LOOM_TYPE_Q5_K, 2048, 300);
    for (int ni = 0; ni < 5; ni++) {
        check_gemm(LOOM_TYPE_Q2_K, 256, ns[ni]);
        check_gemm(LOOM_TYPE_Q2_K, 5632, ns[ni]);
    }
    check_gemm(LOOM_TYPE_Q2_K, 2048, 300);
    /* decode rows over several activation slabs (the one-column paths keep partial sums
     * in c between slabs) */
    check_gemm(LOOM_TYPE_Q4_K, 16640, 1);
    check_gemm(LOOM_TYPE_Q5_K, 16640, 1);
    check_gemm(LOOM_TYPE_Q6_K, 16640, 1);
    check_gemm(LOOM_TYPE_Q6_K, 16640, 5);
    check_gemm(LOOM_TYPE_Q5_K, 16640, 5);
    check_gemm(LOOM_TYPE_Q2_K, 16640, 1);
    check_gemm(LOOM_TYPE_Q2_K, 16640, 5);
    g_extreme = true;
    static const loom_type kq[11] = {LOOM_TYPE_Q4_K, LOOM_TYPE_Q5_K, LOOM_TYPE_Q6_K, LOOM_TYPE_IQ4_XS,
                                     LOOM_TYPE_Q4_0, LOOM_TYPE_Q8_0, LOOM_TYPE_IQ4_NL, LOOM_TYPE_Q2_K,
                                     LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0, LOOM_TYPE_Q5_1};
    for (int ti = 0; ti < 11; ti++)
        for (int ni = 0; ni < 5; ni++) check_gemm(kq[ti], 512, ns[ni]);
    g_extreme = false;
    g_raw = true; /* random K-quant blocks: 1 column (decode), 64 and 300 (AMX tiles + remainder) */
    for (int ti = 0; ti < 3; ti++) {
        check_gemm(kq[ti], 2048, 1);
        check_gemm(kq[ti], 2048, 64);
        check_gemm(kq[ti], 5632, 300);
    }
    g_extreme = true;
    for (int ti = 0; ti < 3; ti++) check_gemm(kq[ti], 512, 64);
    g_extreme = g_raw = false;
}

/* MUL_MAT through the engine: the same weights as GGUF rows and repacked. */
static loom_status engine_mm(loom_type t, const uint8_t *wbytes, bool repack, int64_t k, int64_t m, int64_t n,
                             const float *x, int nth, float *out) {
    loom_ctx *ctx = nn_ctx(nth, false);
    size_t bytes = rowb(t, k) * (size_t)m;
    int64_t ne[4] = {k, m, 1, 1};
    loom_tensor *w = loom_from_bytes(loom_ctx_input(ctx), t, wbytes, bytes, 4, ne);
    loom_status s = LOOM_ERR_INTERNAL;
    if (w && !(w->flags & LOOM_TF_POISON)) {
        if (repack) {
            uint8_t *tmp = malloc(bytes);
            if (tmp && loom_repack_rows(t, k, m, wbytes, tmp) == LOOM_OK) {
                memcpy(w->data, tmp, bytes);
                w->flags |= LOOM_TF_REPACKED;
            }
            free(tmp);
        }
        s = nn_run(ctx, loom_mul_mat(ctx, w, nn_f32(ctx, x, k, n, 1, 1)), out, (size_t)(m * n));
    }
    loom_ctx_free(ctx);
    return s;
}

static void test_engine(void) {
    static const loom_type et[11] = {LOOM_TYPE_Q4_0,   LOOM_TYPE_Q8_0,   LOOM_TYPE_Q4_K, LOOM_TYPE_Q6_K,
                                     LOOM_TYPE_IQ4_NL, LOOM_TYPE_IQ4_XS, LOOM_TYPE_Q5_K, LOOM_TYPE_Q2_K,
                                     LOOM_TYPE_Q4_1,   LOOM_TYPE_Q5_0,   LOOM_TYPE_Q5_1};
    for (int ti = 0; ti < 11; ti++) {
        loom_type t = et[ti];
        const int64_t k = loom_type_get(t)->block_size == 256 ? 4352 : 4192, m = 80;
        static const int64_t ns[3] = {1, 5, 70};
        uint8_t *w = make_rows(t, k, m);
        for (int ni = 0; ni < 3 && w; ni++) {
            const int64_t n = ns[ni];
            float *x = fmalloc((size_t)(k * n)), *plain = fmalloc((size_t)(m * n)), *o[3];
            fill_rnd(x, (size_t)(k * n), 1.0f);
            CHECK_EQ_INT(engine_mm(t, w, false, k, m, n, x, 2, plain), LOOM_OK);
            for (int th = 0; th < 3; th++) {
                o[th] = fmalloc((size_t)(m * n));
                CHECK_EQ_INT(engine_mm(t, w, true, k, m, n, x, th + 1, o[th]), LOOM_OK);
            }
            CHECK_MSG(memcmp(o[0], o[1], sizeof(float) * (size_t)(m * n)) == 0 &&
                          memcmp(o[0], o[2], sizeof(float) * (size_t)(m * n)) == 0,
                      "%s n=%lld: thread counts differ", loom_type_name(t), (long long)n);
            /* repacked vs GGUF layout: two float orders over the same exact block sums */
            double e = 0, r = 0;
            for (int64_t i = 0; i < m * n; i++) {
                e += ((double)o[0][i] - plain[i]) * ((double)o[0][i] - plain[i]);
                r += (double)plain[i] * plain[i];
            }
            CHECK_MSG(e <= 1e-10 * r, "%s n=%lld: repacked vs plain nmse %g", loom_type_name(t), (long long)n,
                      r > 0 ? e / r : e);
            for (int th = 0; th < 3; th++) free(o[th]);
            free(x);
            free(plain);
        }
        free(w);
    }
    /* any other use of a repacked tensor is refused when the graph is built */
    loom_ctx *ctx = nn_ctx(1, false);
    int64_t ne[4] = {32, 16, 1, 1};
    uint8_t zero[34 * 16] = {0};
    loom_tensor *w = loom_from_bytes(loom_ctx_input(ctx), LOOM_TYPE_Q8_0, zero, sizeof zero, 4, ne);
    w->flags |= LOOM_TF_REPACKED;
    int32_t idx = 3;
    int64_t ne1[1] = {1};
    loom_tensor *ids = loom_from_bytes(loom_ctx_input(ctx), LOOM_TYPE_I32, &idx, 4, 1, ne1);
    (void)loom_get_rows(ctx, w, ids);
    CHECK_EQ_INT(loom_ctx_status(ctx), LOOM_ERR_UNSUPPORTED);
    CHECK(strstr(loom_ctx_error(ctx), "repacked") != NULL);
    loom_ctx_free(ctx);
    ctx = nn_ctx(1, false);
    w = loom_from_bytes(loom_ctx_input(ctx), LOOM_TYPE_Q8_0, zero, sizeof zero, 4, ne);
    w->flags |= LOOM_TF_REPACKED;
    const int64_t vargs[3] = {32, (int64_t)w->nb[1], 8};
    (void)loom_view(ctx, w, 0, 3, vargs);
    CHECK_EQ_INT(loom_ctx_status(ctx), LOOM_ERR_UNSUPPORTED);
    loom_ctx_free(ctx);
    ctx = nn_ctx(1, false);
    w = loom_from_bytes(loom_ctx_input(ctx), LOOM_TYPE_Q8_0, zero, sizeof zero, 4, ne);
    w->flags |= LOOM_TF_REPACKED;
    const int64_t rs[3] = {32, 8, 2};
    (void)loom_reshape(ctx, w, 3, rs);
    CHECK_EQ_INT(loom_ctx_status(ctx), LOOM_ERR_UNSUPPORTED);
    loom_ctx_free(ctx);
}

int main(void) {
    test_layout();
    test_gemm();
    test_engine();
    return test_finish("test_cpu_repack");
}
