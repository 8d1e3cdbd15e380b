/* Kernel tables: every weight type x every ISA level available here x shapes, against
 * the scalar reference and against a float64 dot of the dequantized operands. */
#include "cpu/kernels.h"
#include "cpu/kernels_internal.h"
#include "quant/blocks.h"
#include "test_util.h"

#include <float.h>
#include <stdint.h>
#include <unistd.h>

static uint64_t g_rng = 0x1234567887654321ull;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}
static double urand(void) { return (rnd() + 0.5) / 4294967296.0; }
static double gauss(void) { return sqrt(-2.0 * log(urand())) * cos(6.283185307179586 * urand()); }

static const loom_type k_wtypes[] = {LOOM_TYPE_F32,  LOOM_TYPE_F16,  LOOM_TYPE_BF16, LOOM_TYPE_Q4_0, LOOM_TYPE_Q4_1,
                                     LOOM_TYPE_Q5_0, LOOM_TYPE_Q5_1, LOOM_TYPE_Q8_0, LOOM_TYPE_Q2_K, LOOM_TYPE_Q3_K,
                                     LOOM_TYPE_Q4_K, LOOM_TYPE_Q5_K, LOOM_TYPE_Q6_K, LOOM_TYPE_MXFP4,
                                     LOOM_TYPE_IQ4_NL, LOOM_TYPE_IQ4_XS,
                                     LOOM_TYPE_IQ2_XXS, LOOM_TYPE_IQ2_XS, LOOM_TYPE_IQ2_S, LOOM_TYPE_IQ3_XXS,
                                     LOOM_TYPE_IQ3_S, LOOM_TYPE_IQ1_S, LOOM_TYPE_IQ1_M, LOOM_TYPE_TQ1_0,
                                     LOOM_TYPE_TQ2_0, LOOM_TYPE_NVFP4, LOOM_TYPE_Q1_0, LOOM_TYPE_Q2_0};
#define NWT (int)(sizeof k_wtypes / sizeof k_wtypes[0])
static const loom_type k_atypes[] = {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q8_1, LOOM_TYPE_Q8_K};

static loom_type expected_vdt(loom_type t) {
    switch (t) {
    case LOOM_TYPE_F32: case LOOM_TYPE_F16: case LOOM_TYPE_BF16: return t;
    case LOOM_TYPE_Q4_1: case LOOM_TYPE_Q5_1: return LOOM_TYPE_Q8_1;
    case LOOM_TYPE_Q4_0: case LOOM_TYPE_Q5_0: case LOOM_TYPE_Q8_0: case LOOM_TYPE_MXFP4: return LOOM_TYPE_Q8_0;
    case LOOM_TYPE_IQ4_NL: case LOOM_TYPE_NVFP4: case LOOM_TYPE_Q1_0: case LOOM_TYPE_Q2_0: return LOOM_TYPE_Q8_0;
    default: return LOOM_TYPE_Q8_K;
    }
}

static size_t row_bytes(loom_type t, int64_t k) {
    size_t b = 0;
    CHECK_EQ_INT(loom_type_row_bytes(t, k, &b), LOOM_OK);
    return b;
}

static void u16put(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/* the f16 block scale h of a type without a Loom quantizer (and of Q3_K's random
 * blocks): at byte 0, except TQ1_0 / TQ2_0 / Q3_K (after the codes) and IQ1_M (nibble j
 * in the top nibble of scale word j) */
static void put_block_d(loom_type t, uint8_t *blk, uint16_t h) {
    switch (t) {
    case LOOM_TYPE_TQ1_0: u16put(blk + 52, h); break;
    case LOOM_TYPE_TQ2_0: u16put(blk + 64, h); break;
    case LOOM_TYPE_Q3_K: u16put(blk + 108, h); break;
    case LOOM_TYPE_IQ1_M:
        for (int j = 0; j < 4; j++) blk[49 + 2 * j] = (uint8_t)((blk[49 + 2 * j] & 0x0F) | (((h >> (4 * j)) & 0xF) << 4));
        break;
    default: u16put(blk, h); break;
    }
}

/* Independent float64 expectation for one (weight row, activation row) pair and a
 * magnitude scale for the rounding bound. */
static void reference_dot(loom_type wt, loom_type at, const uint8_t *w, const uint8_t *a, int64_t k,
                          double *dot, double *mag) {
    float *wf = malloc((size_t)k * sizeof *wf), *af = malloc((size_t)k * sizeof *af);
    float *mins = malloc((size_t)k * sizeof *mins);
    if (!wf || !af || !mins) { CHECK(0); free(wf); free(af); free(mins); *dot = 0; *mag = 1; return; }
    CHECK_EQ_INT(loom_dequantize_row(wt, w, wf, k), LOOM_OK);
    CHECK_EQ_INT(loom_dequantize_row(at, a, af, k), LOOM_OK);
    double d = 0, m = 0;
    for (int64_t i = 0; i < k; i++) {
        d += (double)wf[i] * af[i];
        m += fabs((double)wf[i] * af[i]);
    }
    /* Q4_1/Q5_1 x Q8_1: the min term uses the activation block's stored s = f16(d*sum(qs)),
     * which is the documented meaning of s; correct the exact dot accordingly. */
    if (wt == LOOM_TYPE_Q4_1 || wt == LOOM_TYPE_Q5_1) {
        size_t wb = loom_type_get(wt)->block_bytes;
        for (int64_t b = 0; b < k / 32; b++) {
            uint16_t mh, sh;
            memcpy(&mh, w + b * wb + 2, 2);
            memcpy(&sh, a + b * 36 + 2, 2);
            double asum = 0;
            for (int i = 0; i < 32; i++) asum += af[b * 32 + i];
            double mm = loom_fp16_to_fp32(mh), ss = loom_fp16_to_fp32(sh);
            d += mm * (ss - asum);
            m += fabs(mm * ss);
        }
    }
    /* Q2_K/Q4_K/Q5_K: scale and min terms are rounded separately; add the min magnitude
     * (dequantizing a copy with all quants zeroed yields -dmin*m per element). */
    if (wt == LOOM_TYPE_Q2_K || wt == LOOM_TYPE_Q4_K || wt == LOOM_TYPE_Q5_K) {
        size_t rb = row_bytes(wt, k), wb = loom_type_get(wt)->block_bytes;
        uint8_t *z = malloc(rb);
        if (z) {
            memcpy(z, w, rb);
            for (int64_t b = 0; b < k / 256; b++) {
                uint8_t *blk = z + b * wb;
                if (wt == LOOM_TYPE_Q2_K) memset(blk + 16, 0, 64);
                else if (wt == LOOM_TYPE_Q4_K) memset(blk + 16, 0, 128);
                else memset(blk + 16, 0, 160);
            }
            CHECK_EQ_INT(loom_dequantize_row(wt, z, mins, k), LOOM_OK);
            for (int64_t i = 0; i < k; i++) m += 2 * fabs((double)mins[i] * af[i]);
            free(z);
        }
    }
    free(wf);
    free(af);
    free(mins);
    *dot = d;
    *mag = m;
}

static int64_t block_of(loom_type t) { return loom_type_get(t)->block_size; }

/* float rounding bound: per-block products plus a running float sum over the blocks
 * (or elements for the float types): gamma_{nb+4} * mag, with 2x slack. */
static double bound(loom_type wt, int64_t k, double mag) {
    int64_t steps = block_of(wt) > 1 ? k / block_of(wt) : k;
    return 2.0 * (double)(steps + 4) * ldexp(1.0, -24) * mag + 1e-30;
}

static void test_tables_complete(void) {
    const loom_kernels *s = loom_kernels_scalar();
    CHECK(s != NULL && strcmp(s->name, "scalar") == 0);
    CHECK(loom_kernels_get() != NULL);
    CHECK(loom_kernels_for("scalar") == s);
    CHECK(loom_kernels_for("bogus") == NULL);
    CHECK(loom_kernels_for(NULL) == NULL);
    const char *const *lv = loom_kernels_levels();
    CHECK(lv && lv[0] && strcmp(lv[0], "scalar") == 0);
    for (int li = 0; lv[li]; li++) {
        const loom_kernels *k = loom_kernels_for(lv[li]);
        printf("  level %-10s %s\n", lv[li], k ? "available" : "not available on this CPU/OS");
        if (!k) continue;
        CHECK(strcmp(k->name, lv[li]) == 0);
        for (int i = 0; i < NWT; i++) {
            CHECK_MSG(k->dot[k_wtypes[i]].vec_dot != NULL, "%s %s", lv[li], loom_type_name(k_wtypes[i]));
            CHECK(k->dot[k_wtypes[i]].vec_dot_type == expected_vdt(k_wtypes[i]));
        }
        for (size_t i = 0; i < sizeof k_atypes / sizeof k_atypes[0]; i++) CHECK(k->from_float[k_atypes[i]] != NULL);
        CHECK(k->dot_f32 && k->axpy_f32);
    }
    char buf[512];
    loom_kernels_describe(buf, sizeof buf);
    printf("  %s\n", buf);
    CHECK(strstr(buf, "chosen:") != NULL);
    loom_kernels_describe(buf, 8); /* truncation is safe */
    CHECK(strlen(buf) == 7);
}

/* from_float of every level produces the same bytes as the scalar table. */
static void test_from_float(void) {
    const loom_kernels *s = loom_kernels_scalar();
    const char *const *lv = loom_kernels_levels();
    enum { K = 1024 };
    float x[K];
    uint8_t r[K * 4 + 64], g[K * 4 + 64];
    for (int rep = 0; rep < 4; rep++) {
        for (int i = 0; i < K; i++) x[i] = (float)(gauss() * (rep == 3 ? 1e-6 : 3.0));
        if (rep == 2) { x[5] = 0; for (int i = 32; i < 64; i++) x[i] = 0; x[7] = 1e-40f; }
        for (size_t ai = 0; ai < sizeof k_atypes / sizeof k_atypes[0]; ai++) {
            loom_type at = k_atypes[ai];
            size_t rb = row_bytes(at, K);
            memset(r, 0, sizeof r);
            s->from_float[at](x, r, K);
            for (int li = 1; lv[li]; li++) {
                const loom_kernels *k = loom_kernels_for(lv[li]);
                if (!k) continue;
                memset(g, 0, sizeof g);
                k->from_float[at](x, g, K);
                CHECK_MSG(memcmp(r, g, rb) == 0, "from_float %s differs at level %s", loom_type_name(at), lv[li]);
            }
        }
    }
}

static void test_vec_dot(void) {
    const loom_kernels *s = loom_kernels_scalar();
    const char *const *lv = loom_kernels_levels();
    static const int64_t ks[] = {0 /* one block */, 256, 4096};
    enum { NROWS = 7, NCOLS = 5 };
    for (int ti = 0; ti < NWT; ti++) {
        loom_type wt = k_wtypes[ti];
        loom_type at = s->dot[wt].vec_dot_type;
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            int64_t k = ks[ki] ? ks[ki] : (block_of(wt) > 1 ? block_of(wt) : 1);
            if (k % block_of(at) != 0) k = block_of(at); /* Q8_K needs 256 */
            size_t wrb = row_bytes(wt, k), arb = row_bytes(at, k);
            uint8_t *w = malloc(wrb * NROWS), *a = malloc(arb * NCOLS);
            float *xf = malloc((size_t)k * sizeof *xf);
            if (!w || !a || !xf) { CHECK(0); free(w); free(a); free(xf); return; }
            for (int r = 0; r < NROWS; r++) {
                double scale = r == 3 ? 100.0 : 0.05;
                for (int64_t i = 0; i < k; i++) xf[i] = (float)(gauss() * scale);
                if (loom_type_get(wt)->can_quantize) {
                    CHECK_EQ_INT(loom_quantize_row(wt, xf, w + r * wrb, k), LOOM_OK);
                } else { /* no Loom quantizer: random codes and scales, block scale by row */
                    size_t bb = loom_type_get(wt)->block_bytes;
                    for (size_t b = 0; b < wrb / bb; b++) {
                        uint8_t *blk = w + r * wrb + b * bb;
                        for (size_t i = 0; i < bb; i++) blk[i] = (uint8_t)rnd();
                        put_block_d(wt, blk, r == 3 ? 0x4800 : (uint16_t)(0x1C00 + (rnd() & 0x3FF)));
                    }
                }
            }
            for (int c = 0; c < NCOLS; c++) {
                for (int64_t i = 0; i < k; i++) xf[i] = (float)(gauss() * (c == 1 ? 0.001 : 2.0));
                if (c == 2) for (int64_t i = 0; i < k && i < 32; i++) xf[i] = 0; /* an all-zero block */
                s->from_float[at](xf, a + c * arb, k);
            }
            /* row 5: extreme codes (all quant bits set) to exercise saturation-prone paths */
            if (block_of(wt) > 1) {
                uint8_t *row = w + 5 * wrb;
                size_t bb = loom_type_get(wt)->block_bytes;
                for (size_t b = 0; b < wrb / bb; b++) {
                    uint8_t *blk = row + b * bb;
                    for (size_t i = 0; i < bb; i++) blk[i] = (uint8_t)(rnd() | 0x88);
                    switch (wt) { /* keep scales finite */
                    case LOOM_TYPE_Q4_0: case LOOM_TYPE_Q5_0: case LOOM_TYPE_Q8_0: u16put(blk, 0x2C00); break;
                    case LOOM_TYPE_Q4_1: case LOOM_TYPE_Q5_1: u16put(blk, 0x2C00); u16put(blk + 2, 0xAC00); break;
                    case LOOM_TYPE_Q2_K: u16put(blk + 80, 0x2000); u16put(blk + 82, 0x2000); break;
                    case LOOM_TYPE_Q3_K: u16put(blk + 108, 0x2000); break;
                    case LOOM_TYPE_Q4_K: case LOOM_TYPE_Q5_K: u16put(blk, 0x2000); u16put(blk + 2, 0x2000); break;
                    case LOOM_TYPE_Q6_K: u16put(blk + 208, 0x2000); break;
                    case LOOM_TYPE_MXFP4: blk[0] = 120; break;
                    case LOOM_TYPE_NVFP4: blk[0] = blk[1] = blk[2] = blk[3] = 0x3F; break; /* 1.875 * 0.5 */
                    case LOOM_TYPE_Q1_0: case LOOM_TYPE_Q2_0: u16put(blk, 0x2C00); break;
                    case LOOM_TYPE_IQ4_NL: u16put(blk, 0x2C00); break;
                    case LOOM_TYPE_IQ4_XS: u16put(blk, 0x2000); break;
                    case LOOM_TYPE_IQ2_XXS: case LOOM_TYPE_IQ2_XS: case LOOM_TYPE_IQ2_S: u16put(blk, 0x2000); break;
                    case LOOM_TYPE_IQ3_XXS: case LOOM_TYPE_IQ3_S: u16put(blk, 0x2000); break;
                    case LOOM_TYPE_IQ1_S: case LOOM_TYPE_IQ1_M: case LOOM_TYPE_TQ1_0: case LOOM_TYPE_TQ2_0:
                        put_block_d(wt, blk, 0x2000);
                        break;
                    default: break;
                    }
                }
            }
            float ref[NROWS][NCOLS];
            double dd[NROWS][NCOLS], mag[NROWS][NCOLS];
            int bad_ref = 0;
            for (int r = 0; r < NROWS; r++)
                for (int c = 0; c < NCOLS; c++) {
                    s->dot[wt].vec_dot(k, &ref[r][c], w + r * wrb, a + c * arb);
                    reference_dot(wt, at, w + r * wrb, a + c * arb, k, &dd[r][c], &mag[r][c]);
                    if (!(fabs(ref[r][c] - dd[r][c]) <= bound(wt, k, mag[r][c]))) {
                        if (bad_ref++ < 3)
                            fprintf(stderr, "  scalar %s k=%lld r%d c%d: %.9g vs f64 %.9g (bound %.3g)\n",
                                    loom_type_name(wt), (long long)k, r, c, ref[r][c], dd[r][c],
                                    bound(wt, k, mag[r][c]));
                    }
                }
            CHECK_MSG(bad_ref == 0, "scalar %s k=%lld vs float64", loom_type_name(wt), (long long)k);
            for (int li = 1; lv[li]; li++) {
                const loom_kernels *kt = loom_kernels_for(lv[li]);
                if (!kt) continue;
                int bad = 0;
                for (int r = 0; r < NROWS; r++)
                    for (int c = 0; c < NCOLS; c++) {
                        float v = NAN;
                        kt->dot[wt].vec_dot(k, &v, w + r * wrb, a + c * arb);
                        double tol = bound(wt, k, mag[r][c]);
                        if (!(fabs(v - ref[r][c]) <= 2 * tol && fabs(v - dd[r][c]) <= tol)) {
                            if (bad++ < 3)
                                fprintf(stderr, "  %s %s k=%lld r%d c%d: %.9g vs scalar %.9g f64 %.9g (tol %.3g)\n",
                                        lv[li], loom_type_name(wt), (long long)k, r, c, v, ref[r][c], dd[r][c], tol);
                        }
                    }
                CHECK_MSG(bad == 0, "%s %s k=%lld", lv[li], loom_type_name(wt), (long long)k);
                /* tiled gemm (optional): sub-ranges with odd sizes */
                if (kt->gemm) {
                    float cbuf[NCOLS * NROWS];
                    for (int i = 0; i < NCOLS * NROWS; i++) cbuf[i] = -12345.f;
                    bool ok = kt->gemm(wt, k, w, wrb, a, arb, cbuf, NROWS, 1, NROWS, 0, NCOLS);
                    if (ok) {
                        int gbad = 0;
                        for (int c = 0; c < NCOLS; c++)
                            for (int r = 0; r < NROWS; r++) {
                                float v = cbuf[c * NROWS + r];
                                if (r == 0) {
                                    if (v != -12345.f) gbad++;
                                    continue;
                                }
                                double tol = bound(wt, k, mag[r][c]);
                                if (!(fabs(v - ref[r][c]) <= 2 * tol && fabs(v - dd[r][c]) <= tol)) {
                                    if (gbad++ < 3)
                                        fprintf(stderr, "  gemm %s %s k=%lld r%d c%d: %.9g vs %.9g\n", lv[li],
                                                loom_type_name(wt), (long long)k, r, c, v, dd[r][c]);
                                }
                            }
                        CHECK_MSG(gbad == 0, "gemm %s %s k=%lld", lv[li], loom_type_name(wt), (long long)k);
                    }
                }
            }
            free(w);
            free(a);
            free(xf);
        }
    }
}

/* Shared by the gemm shape tests: M weight rows w (row bytes wrb) of type wt and nmax
 * activation rows a of the scalar table's vec_dot_type (row bytes arb), K = k. Every
 * level's gemm over rows [i0, M) and columns [j0, n) for each n of ns (j0 = 1 when
 * n > 2) must leave the other outputs at their sentinel and match the scalar vec_dot
 * (2x the bound) and the float64 dot (the bound) elsewhere. */
static void check_gemm_levels(const char *tag, loom_type wt, int64_t k, const uint8_t *w, size_t wrb, const uint8_t *a,
                              size_t arb, int M, int i0, int nmax, const int64_t *ns, size_t n_ns) {
    const loom_kernels *s = loom_kernels_scalar();
    const char *const *lv = loom_kernels_levels();
    const loom_type at = s->dot[wt].vec_dot_type;
    float *ref = malloc(sizeof(float) * (size_t)M * (size_t)nmax), *cbuf = malloc(sizeof(float) * (size_t)M * (size_t)nmax);
    double *tol = malloc(sizeof(double) * (size_t)M * (size_t)nmax), *dd = malloc(sizeof(double) * (size_t)M * (size_t)nmax);
    if (!ref || !cbuf || !tol || !dd) {
        CHECK(0);
        free(ref); free(cbuf); free(tol); free(dd);
        return;
    }
    for (int c = 0; c < nmax; c++)
        for (int r = 0; r < M; r++) {
            double mg;
            s->dot[wt].vec_dot(k, &ref[c * M + r], w + r * wrb, a + c * arb);
            reference_dot(wt, at, w + r * wrb, a + c * arb, k, &dd[c * M + r], &mg);
            tol[c * M + r] = bound(wt, k, mg);
        }
    for (int li = 1; lv[li]; li++) {
        const loom_kernels *kt = loom_kernels_for(lv[li]);
        if (!kt || !kt->gemm) continue;
        for (size_t ni = 0; ni < n_ns; ni++) {
            const int64_t n = ns[ni], j0 = n > 2 ? 1 : 0;
            for (int i = 0; i < M * n; i++) cbuf[i] = -12345.f;
            if (!kt->gemm(wt, k, w, wrb, a, arb, cbuf, (size_t)M, i0, M, j0, n)) continue;
            int bad = 0;
            for (int64_t c = 0; c < n; c++)
                for (int r = 0; r < M; r++) {
                    float v = cbuf[c * M + r];
                    size_t e = (size_t)c * M + (size_t)r;
                    if (r < i0 || c < j0) {
                        if (v != -12345.f && bad++ < 3) fprintf(stderr, "  %s gemm wrote r%d c%lld\n", tag, r, (long long)c);
                        continue;
                    }
                    if (!(fabs(v - ref[e]) <= 2 * tol[e] && fabs(v - dd[e]) <= tol[e]) && bad++ < 3)
                        fprintf(stderr, "  %s gemm %s k=%lld n=%lld r%d c%lld: %.9g vs %.9g f64 %.9g\n", tag, lv[li],
                                (long long)k, (long long)n, r, (long long)c, v, ref[e], dd[e]);
                }
            CHECK_MSG(bad == 0, "%s gemm %s k=%lld n=%lld", tag, lv[li], (long long)k, (long long)n);
        }
    }
    free(ref); free(cbuf); free(tol); free(dd);
}

/* n activation rows of type at (row bytes arb) for the gemm shape tests: gaussians of
 * scale 2 (every 7th column 0.001) and every 13th column alternating +-4 (codes +-127);
 * xf: k floats of scratch */
static void gemm_acts(loom_type at, int64_t k, int n, uint8_t *a, size_t arb, float *xf) {
    const loom_kernels *s = loom_kernels_scalar();
    for (int c = 0; c < n; c++) {
        for (int64_t i = 0; i < k; i++) xf[i] = (float)(gauss() * (c % 7 == 3 ? 0.001 : 2.0));
        if (c % 13 == 5) for (int64_t i = 0; i < k; i++) xf[i] = i % 2 ? -4.f : 4.f; /* codes +-127 */
        s->from_float[at](xf, a + c * arb, k);
    }
}

/* The gemm shape tests' driver: for each K of ks, M weight rows of type wt made by fill
 * (xf: k floats of scratch), nmax activation rows (gemm_acts), then check_gemm_levels
 * over rows [i0, M) and the column counts of ns. */
typedef void (*gemm_fill_fn)(loom_type wt, uint8_t *w, size_t wrb, int M, int64_t k, float *xf);
static void gemm_shapes(const char *tag, loom_type wt, int M, int i0, int nmax, const int64_t *ks, size_t nk,
                        const int64_t *ns, size_t nn, gemm_fill_fn fill) {
    const loom_type at = loom_kernels_scalar()->dot[wt].vec_dot_type;
    for (size_t ki = 0; ki < nk; ki++) {
        const int64_t k = ks[ki];
        const size_t wrb = row_bytes(wt, k), arb = row_bytes(at, k);
        uint8_t *w = malloc(wrb * (size_t)M), *a = malloc(arb * (size_t)nmax);
        float *xf = malloc((size_t)k * sizeof *xf);
        if (!w || !a || !xf) {
            CHECK(0);
            free(w); free(a); free(xf);
            return;
        }
        fill(wt, w, wrb, M, k, xf);
        gemm_acts(at, k, nmax, a, arb, xf);
        check_gemm_levels(tag, wt, k, w, wrb, a, arb, M, i0, nmax, ns, nn);
        free(w); free(a); free(xf);
    }
}

/* rows of quantized gaussians at several scales (every 11th large, every 5th offset) */
static void fill_quantized(loom_type wt, uint8_t *w, size_t wrb, int M, int64_t k, float *xf) {
    for (int r = 0; r < M; r++) {
        const double scale = r % 11 == 4 ? 50.0 : 0.05 * (1 + r % 3);
        for (int64_t i = 0; i < k; i++) xf[i] = (float)(gauss() * scale + (r % 5 == 1 ? 0.03 : 0.0));
        CHECK_EQ_INT(loom_quantize_row(wt, xf, w + r * wrb, k), LOOM_OK);
    }
}

static void fill_kq(loom_type wt, uint8_t *w, size_t wrb, int M, int64_t k, float *xf) {
    fill_quantized(wt, w, wrb, M, k, xf);
    /* Q4_K row 20: all codes 15 with large scales and mins (int16 lane-sum limits) */
    for (int64_t b = 0; wt == LOOM_TYPE_Q4_K && b < k / QK_K; b++) {
        uint8_t *blk = w + 20 * wrb + (size_t)b * sizeof(block_q4_K);
        memset(blk + 4, 0xFF, 140);
        u16put(blk, 0x2000);
        u16put(blk + 2, 0x2000);
    }
}

/* K-quant gemm tiles at prompt-like shapes (Q4_K's rows-in-lanes path, the 4 x 2 and
 * 4 x 4 register tiles of the others): every level's gemm over rows [3, 37) of a
 * 37-row matrix and columns [j0, N) for N in {1, 2, 7, 64, 300} (register tile and
 * row-group remainders), K of 1, 6 and 16 blocks; untouched outputs keep their
 * sentinels, the others match the scalar vec_dot and the float64 dot. */
static void test_gemm_kq_shapes(loom_type wt) {
    static const int64_t ks[] = {256, 1536, 4096};
    static const int64_t ns[] = {1, 2, 7, 64, 300};
    /* the other types: K of 1 and 6 blocks, N up to 64 (the run time under qemu and the
     * sanitizers; 4-column tiles and their remainders are all reached by then) */
    const bool full = wt == LOOM_TYPE_Q4_K;
    gemm_shapes(loom_type_name(wt), wt, 37, 3, full ? 300 : 64, ks, full ? 3 : 2, ns, full ? 5 : 4, fill_kq);
}

static void fill_mxfp4(loom_type wt, uint8_t *w, size_t wrb, int M, int64_t k, float *xf) {
    for (int r = 0; r < M; r++) {
        double scale = r % 11 == 4 ? 50.0 : 0.05 * (1 + r % 3);
        for (int64_t i = 0; i < k; i++) xf[i] = (float)(gauss() * scale);
        CHECK_EQ_INT(loom_quantize_row(wt, xf, w + r * wrb, k), LOOM_OK);
    }
    for (int64_t b = 0; b < k / 32; b++) {
        uint8_t *blk = w + 20 * wrb + (size_t)b * sizeof(block_mxfp4); /* codes 7 / 15: +-12 */
        blk[0] = 135;
        for (int i = 1; i < 17; i++) blk[i] = (uint8_t)((b + i) % 3 ? 0x77 : 0xFF);
        w[21 * wrb + (size_t)b * sizeof(block_mxfp4)] = (uint8_t)(b % 2); /* e 0 / 1: subnormal */
        w[22 * wrb + (size_t)b * sizeof(block_mxfp4)] = (uint8_t)(2 + b % 3); /* e 2..4 */
    }
}

/* MXFP4 gemm tiles at prompt-like shapes (gpt-oss experts): every level's gemm over
 * rows [3, 37) of a 37-row matrix and columns [j0, N) for N in {1, 2, 5, 64, 130}
 * (4x4 register tiles, single-row and column remainders), K of 1, 3 (odd: the
 * one-block tail) and 90 blocks; rows with every code at the largest E2M1 magnitude,
 * a large and a subnormal (e < 2) scale. Untouched outputs keep their sentinels, the
 * others match the scalar vec_dot and the float64 dot. */
static void test_gemm_mxfp4_shapes(void) {
    static const int64_t ks[] = {32, 96, 2880};
    static const int64_t ns[] = {1, 2, 5, 64, 130};
    gemm_shapes("mxfp4", LOOM_TYPE_MXFP4, 37, 3, 130, ks, 3, ns, 5, fill_mxfp4);
}

/* Random F16 / BF16 gemm operands: M weight rows of type wt (row `big` scaled by 300,
 * row big + 1 by 1e-3) and their floats wf, n activation rows of type at (every fifth
 * from the second scaled small) and their floats af; xf: k floats of scratch. */
static void gemm_operands(loom_type wt, loom_type at, int64_t k, int M, int big, int64_t n, uint8_t *w, float *wf,
                          uint8_t *a, float *af, float *xf) {
    const loom_kernels *s = loom_kernels_scalar();
    const size_t wrb = row_bytes(wt, k), arb = row_bytes(at, k);
    for (int r = 0; r < M; r++) {
        const double scale = r == big ? 300.0 : r == big + 1 ? 1e-3 : 1.0;
        for (int64_t i = 0; i < k; i++) xf[i] = (float)(gauss() * scale);
        CHECK_EQ_INT(loom_quantize_row(wt, xf, w + r * wrb, k), LOOM_OK);
        CHECK_EQ_INT(loom_dequantize_row(wt, w + r * wrb, wf + r * k, k), LOOM_OK);
    }
    for (int64_t j = 0; j < n; j++) {
        for (int64_t i = 0; i < k; i++) xf[i] = (float)(gauss() * (j % 5 == 1 ? 0.01 : 2.0));
        s->from_float[at](xf, a + (size_t)j * arb, k);
        CHECK_EQ_INT(loom_dequantize_row(at, a + (size_t)j * arb, af + j * k, k), LOOM_OK);
    }
}

/* random codes and scales: every grid index and sign pattern is a valid block */
static void fill_iq(loom_type wt, uint8_t *w, size_t wrb, int M, int64_t k, float *xf) {
    (void)k;
    (void)xf;
    const size_t bb = loom_type_get(wt)->block_bytes;
    for (int r = 0; r < M; r++)
        for (size_t b = 0; b < wrb / bb; b++) {
            uint8_t *blk = w + r * wrb + b * bb;
            for (size_t i = 0; i < bb; i++) blk[i] = (uint8_t)(r == 7 ? rnd() | 0x88 : rnd());
            put_block_d(wt, blk, r % 11 == 4 ? 0x4800 : (uint16_t)(0x1C00 + (rnd() & 0x3FF)));
        }
}

/* The grid / ternary IQ and TQ types and Q3_K, which shares their tiles (random codes and
 * scales: every grid index and sign pattern is a valid block) through every level's gemm:
 * rows [3, 37) of a 37-row matrix (a 16-row group remainder), columns [1, N) for N in
 * {18, 41, 64} (16-column tiles with remainders of 1, 8 and 15 columns) and 1, 2, 7, K of
 * 1 and 9 super-blocks (more than one 8-super-block k chunk of the amx tile); activations
 * with +-127 runs. */
static void test_gemm_iq_shapes(loom_type wt) {
    static const int64_t ks[] = {256, 2304};
    static const int64_t ns[] = {1, 2, 7, 18, 41, 64};
    gemm_shapes(loom_type_name(wt), wt, 37, 3, 64, ks, 2, ns, 6, fill_iq);
}

/* quantized gaussians; every 4th row random code bytes (every fifth-bit pattern) with
 * d > 0 and negative mins; rows 9 / 10 every code 0 / the largest */
static void fill_legacy(loom_type wt, uint8_t *w, size_t wrb, int M, int64_t k, float *xf) {
    const size_t bb = loom_type_get(wt)->block_bytes;
    const size_t hdr = wt == LOOM_TYPE_Q5_0 ? 2 : 4; /* d (and m) before the codes */
    fill_quantized(wt, w, wrb, M, k, xf);
    for (int r = 0; r < M; r++) {
        for (size_t b = 0; r % 4 == 2 && b < wrb / bb; b++) {
            uint8_t *blk = w + r * wrb + b * bb;
            for (size_t i = hdr; i < bb; i++) blk[i] = (uint8_t)rnd();
            u16put(blk, (uint16_t)(0x2000 + (rnd() & 0x3FF)));
            if (hdr == 4) u16put(blk + 2, (uint16_t)(0xA400 + (rnd() & 0x3FF)));
        }
        for (size_t b = 0; (r == 9 || r == 10) && b < wrb / bb; b++)
            memset(w + r * wrb + b * bb + hdr, r == 9 ? 0x00 : 0xFF, bb - hdr);
    }
}

/* Q5_0 / Q4_1 / Q5_1 through every level's gemm (16- and 8-row tiles decoding per call):
 * rows [3, 86) (a 64-row set, then 16 + 3 rows), columns [1, N) for N in {18, 41, 100}
 * (16-column tiles, a second 64-column block, remainders) and 1, 7; K of 3 and 37 blocks
 * (an odd block count, a 32-block k chunk plus 5); activations with +-127 runs. */
static void test_gemm_legacy_shapes(loom_type wt) {
    static const int64_t ks[] = {96, 1184};
    static const int64_t ns[] = {1, 7, 18, 41, 100};
    gemm_shapes(loom_type_name(wt), wt, 86, 3, 100, ks, 2, ns, 5, fill_legacy);
}

/* gemm tiles for the float weight types (F16, BF16) on every level whose gemm accepts
 * them: M rows, odd k (masked tails) and column counts (decode, remainder and full
 * micro-tiles), rows [3, M) only, C with padding rows; against a float64 dot of the
 * converted operands; rows outside the range must stay untouched. */
static void test_gemm_float(void) {
    const loom_kernels *s = loom_kernels_scalar();
    const char *const *lv = loom_kernels_levels();
    static const loom_type types[] = {LOOM_TYPE_F16, LOOM_TYPE_BF16};
    /* 8200: a row longer than the 8192 k-values the one / two-column rows converted per
     * pass until the twenty-third session (now widened in the loop; 8200 also ends in a masked tail) */
    static const int64_t ks[] = {1, 15, 16, 33, 1000, 4096, 8200};
    /* 16, 17, 40, 64, 300: the amx level's AMX path (BF16 from 16 columns, F16 from 64)
     * with full column tiles, a remainder tile alone, a full + remainder pair and more
     * than one column block */
    static const int64_t ns[] = {1, 2, 7, 16, 17, 40, 64, 300};
    enum { M = 37, R0 = 3, LDC = 40 };
    const float sentinel = -12345.f;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const loom_type wt = types[ti], at = s->dot[wt].vec_dot_type;
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            const int64_t k = ks[ki];
            const size_t wrb = row_bytes(wt, k), arb = row_bytes(at, k);
            const int64_t nmax = ns[sizeof ns / sizeof ns[0] - 1];
            uint8_t *w = malloc(wrb * M), *a = malloc(arb * (size_t)nmax);
            float *wf = malloc(sizeof(float) * (size_t)k * M), *af = malloc(sizeof(float) * (size_t)k * (size_t)nmax);
            float *xf = malloc(sizeof(float) * (size_t)k), *c = malloc(sizeof(float) * LDC * (size_t)nmax);
            double *dd = malloc(sizeof(double) * M * (size_t)nmax), *mag = malloc(sizeof(double) * M * (size_t)nmax);
            if (!w || !a || !wf || !af || !xf || !c || !dd || !mag) {
                CHECK(0);
                free(w); free(a); free(wf); free(af); free(xf); free(c); free(dd); free(mag);
                return;
            }
            gemm_operands(wt, at, k, M, 5, nmax, w, wf, a, af, xf);
            for (int64_t j = 0; j < nmax; j++)
                for (int r = R0; r < M; r++) {
                    double d = 0, m = 0;
                    for (int64_t i = 0; i < k; i++) {
                        const double p = (double)wf[r * k + i] * af[j * k + i];
                        d += p;
                        m += fabs(p);
                    }
                    dd[j * M + r] = d;
                    mag[j * M + r] = m;
                }
            for (int li = 1; lv[li]; li++) {
                const loom_kernels *kt = loom_kernels_for(lv[li]);
                if (!kt || !kt->gemm) continue;
                double worst = 0, worst_rel = 0;
                for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                    const int64_t n = ns[ni];
                    for (size_t i = 0; i < LDC * (size_t)n; i++) c[i] = sentinel;
                    if (!kt->gemm(wt, k, w, wrb, a, arb, c, LDC, R0, M, 0, n)) continue; /* declined */
                    int bad = 0;
                    for (int64_t j = 0; j < n; j++)
                        for (int r = 0; r < LDC; r++) {
                            const float v = c[j * LDC + r];
                            bool ok;
                            if (r < R0 || r >= M) {
                                ok = v == sentinel;
                            } else {
                                const double e = fabs(v - dd[j * M + r]), b = bound(wt, k, mag[j * M + r]);
                                ok = e <= b;
                                if (e / b > worst) worst = e / b;
                                if (e > worst_rel * mag[j * M + r]) worst_rel = e / mag[j * M + r];
                            }
                            if (!ok && bad++ < 3)
                                fprintf(stderr, "  gemm %s %s k=%lld n=%lld r%d c%lld: %.9g vs f64 %.9g\n", lv[li],
                                        loom_type_name(wt), (long long)k, (long long)n, r, (long long)j, v,
                                        r < R0 || r >= M ? sentinel : dd[j * M + r]);
                        }
                    CHECK_MSG(bad == 0, "gemm %s %s k=%lld n=%lld", lv[li], loom_type_name(wt), (long long)k,
                              (long long)n);
                }
                /* the measured error: largest fraction of the bound 2 (k + 4) 2^-24 sum|w a|
                 * and largest |err| / sum|w a| over the shapes */
                if (k == 33 || k == 4096)
                    printf("  gemm %-10s %-4s k=%-4lld max |err| %.3f of the bound, %.2e sum|w a|\n", lv[li],
                           loom_type_name(wt), (long long)k, worst, worst_rel);
            }
            free(w); free(a); free(wf); free(af); free(xf); free(c); free(dd); free(mag);
        }
    }
}

/* F16 / BF16 gemm results do not depend on the tiling (the engine's tiles depend on
 * the shape and the level; a row's sum is chunked the same whatever the call): every
 * level's gemm over the whole 70 x 150 output and over 2 x 2 pieces (rows cut at a
 * multiple of 4, column pieces of >= 64 so the same path is taken) give the same bits.
 * K = 2100: several k chunks on every path, a k tail. */
static void test_gemm_float_tiling(void) {
    const loom_kernels *s = loom_kernels_scalar();
    const char *const *lv = loom_kernels_levels();
    static const loom_type types[] = {LOOM_TYPE_F16, LOOM_TYPE_BF16};
    enum { M = 70, N = 150, K = 2100 };
    static const int64_t rcut[] = {0, 36, M}, ccut[] = {0, 64, N};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const loom_type wt = types[ti], at = s->dot[wt].vec_dot_type;
        const size_t wrb = row_bytes(wt, K), arb = row_bytes(at, K);
        uint8_t *w = malloc(wrb * M), *a = malloc(arb * N);
        float *xf = malloc(sizeof(float) * K), *c1 = malloc(sizeof(float) * M * N), *c2 = malloc(sizeof(float) * M * N);
        if (!w || !a || !xf || !c1 || !c2) {
            CHECK(0);
            free(w); free(a); free(xf); free(c1); free(c2);
            return;
        }
        for (int r = 0; r < M; r++) {
            for (int i = 0; i < K; i++) xf[i] = (float)gauss();
            CHECK_EQ_INT(loom_quantize_row(wt, xf, w + r * wrb, K), LOOM_OK);
        }
        for (int j = 0; j < N; j++) {
            for (int i = 0; i < K; i++) xf[i] = (float)(gauss() * 3.0);
            s->from_float[at](xf, a + (size_t)j * arb, K);
        }
        for (int li = 1; lv[li]; li++) {
            const loom_kernels *kt = loom_kernels_for(lv[li]);
            if (!kt || !kt->gemm) continue;
            for (int i = 0; i < M * N; i++) c1[i] = c2[i] = -1.0f;
            if (!kt->gemm(wt, K, w, wrb, a, arb, c1, M, 0, M, 0, N)) continue;
            for (int ri = 0; ri < 2; ri++)
                for (int ci = 0; ci < 2; ci++)
                    CHECK(kt->gemm(wt, K, w, wrb, a, arb, c2, M, rcut[ri], rcut[ri + 1], ccut[ci], ccut[ci + 1]));
            CHECK_MSG(memcmp(c1, c2, sizeof(float) * M * N) == 0, "gemm %s %s: pieces differ from one call", lv[li],
                      loom_type_name(wt));
        }
        free(w); free(a); free(xf); free(c1); free(c2);
    }
}

/* Outputs c[j*ldc + r] of a packed product over rows [r0, m) and columns [0, n): each
 * within bound() of the float64 dot product of wf row r and af row j (k values), every
 * other row of the ldc still the sentinel. Returns the failures; *worst (if given) keeps
 * the largest |error| / bound. */
static int check_packed_f64(loom_type wt, int64_t k, const float *c, int ldc, int r0, int m, int64_t n,
                            const float *wf, const float *af, float sentinel, double *worst) {
    int bad = 0;
    for (int64_t j = 0; j < n; j++)
        for (int r = 0; r < ldc; r++) {
            const float v = c[j * ldc + r];
            if (r < r0 || r >= m) {
                bad += v != sentinel;
                continue;
            }
            double d = 0, mg = 0;
            for (int64_t i = 0; i < k; i++) {
                const double pp = (double)wf[r * k + i] * af[j * k + i];
                d += pp;
                mg += fabs(pp);
            }
            const double b = bound(wt, k, mg);
            bad += !(fabs(v - d) <= b);
            if (worst && fabs(v - d) / b > *worst) *worst = fabs(v - d) / b;
        }
    return bad;
}

/* Packed-activation F16 / BF16 products (kernels.h gemm_float_pack / _packed): the
 * references against float64 (the packed values are the rows' exact floats, the
 * products within the rounding bound), then every level that has the path against
 * the references bit for bit: packing any panel range, and products over row ranges
 * [R0, M) and column ranges starting at multiples of the panel width (k chunk edges
 * 255/256/257, panel edges 31/32/33, the 16-column half panel), with untouched
 * outputs outside them. */
static void test_gemm_float_packed(void) {
    const loom_kernels *s = loom_kernels_scalar();
    const char *const *lv = loom_kernels_levels();
    static const loom_type types[] = {LOOM_TYPE_F16, LOOM_TYPE_BF16};
    static const int64_t ks[] = {1, 15, 33, 255, 256, 257, 1000, 2100};
    static const int64_t ns[] = {1, 16, 17, 31, 32, 33, 40, 64, 100, 300};
    enum { M = 150, R0 = 5, LDC = 152, P = LOOM_GEMM_PANEL };
    const float sentinel = -12345.f;
    int levels_run = 0;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const loom_type wt = types[ti], at = s->dot[wt].vec_dot_type;
        for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
            const int64_t k = ks[ki], nmax = ns[sizeof ns / sizeof ns[0] - 1], qmax = (nmax + P - 1) / P;
            const size_t wrb = row_bytes(wt, k), arb = row_bytes(at, k), pf = (size_t)(qmax * P * k);
            uint8_t *w = malloc(wrb * M), *a = malloc(arb * (size_t)nmax);
            float *wf = malloc(sizeof(float) * (size_t)k * M), *af = malloc(sizeof(float) * (size_t)k * (size_t)nmax);
            float *xf = malloc(sizeof(float) * (size_t)k), *pr = malloc(sizeof(float) * pf), *pl = malloc(sizeof(float) * pf);
            float *cr = malloc(sizeof(float) * LDC * (size_t)nmax), *cl = malloc(sizeof(float) * LDC * (size_t)nmax);
            if (!w || !a || !wf || !af || !xf || !pr || !pl || !cr || !cl) {
                CHECK(0);
                free(w); free(a); free(wf); free(af); free(xf); free(pr); free(pl); free(cr); free(cl);
                return;
            }
            gemm_operands(wt, at, k, M, 7, nmax, w, wf, a, af, xf);
            for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                const int64_t n = ns[ni], nq = (n + P - 1) / P;
                /* the reference pack: each row's floats at their k-major places, zero past n */
                for (size_t i = 0; i < pf; i++) pr[i] = sentinel;
                CHECK(loom_gemm_float_pack_ref(at, k, a, arb, n, pr, 0, nq));
                int bad = 0;
                for (int64_t q = 0; q < nq; q++)
                    for (int64_t kk = 0; kk < k; kk++)
                        for (int c = 0; c < P; c++) {
                            const int64_t j = q * P + c;
                            const float want = j < n ? af[j * k + kk] : 0.0f;
                            if (memcmp(&pr[(q * k + kk) * P + c], &want, sizeof want) != 0) bad++;
                        }
                CHECK_MSG(bad == 0, "pack ref %s k=%lld n=%lld: %d values", loom_type_name(wt), (long long)k,
                          (long long)n, bad);
                /* the reference product against float64 */
                for (size_t i = 0; i < LDC * (size_t)n; i++) cr[i] = sentinel;
                CHECK(loom_gemm_float_packed_ref(wt, k, w, wrb, pr, cr, LDC, R0, M, 0, n));
                bad = check_packed_f64(wt, k, cr, LDC, R0, M, n, wf, af, sentinel, NULL);
                CHECK_MSG(bad == 0, "packed ref %s k=%lld n=%lld: %d outputs", loom_type_name(wt), (long long)k,
                          (long long)n, bad);
                for (int li = 1; lv[li]; li++) {
                    const loom_kernels *kt = loom_kernels_for(lv[li]);
                    if (!kt || !kt->gemm_float_pack || !kt->gemm_float_packed) continue;
                    levels_run++;
                    /* pack in two ranges of panels: the same bytes */
                    for (size_t i = 0; i < pf; i++) pl[i] = sentinel;
                    CHECK(kt->gemm_float_pack(at, k, a, arb, n, pl, 0, nq / 2));
                    CHECK(kt->gemm_float_pack(at, k, a, arb, n, pl, nq / 2, nq));
                    CHECK_MSG(memcmp(pl, pr, sizeof(float) * (size_t)(nq * P * k)) == 0, "pack %s %s k=%lld n=%lld",
                              lv[li], loom_type_name(wt), (long long)k, (long long)n);
                    /* whole range, then [R0, 77) x [0, 32) and [77, M) x [32, n) over a fresh C */
                    for (int pass = 0; pass < 2; pass++) {
                        for (size_t i = 0; i < LDC * (size_t)n; i++) cl[i] = sentinel;
                        if (pass == 0) {
                            CHECK(kt->gemm_float_packed(wt, k, w, wrb, pl, cl, LDC, R0, M, 0, n));
                        } else {
                            const int64_t jc = n < P ? n : P;
                            CHECK(kt->gemm_float_packed(wt, k, w, wrb, pl, cl, LDC, R0, 77, 0, jc));
                            CHECK(kt->gemm_float_packed(wt, k, w, wrb, pl, cl, LDC, 77, M, 0, jc));
                            if (n > P) {
                                CHECK(kt->gemm_float_packed(wt, k, w, wrb, pl, cl, LDC, R0, 77, P, n));
                                CHECK(kt->gemm_float_packed(wt, k, w, wrb, pl, cl, LDC, 77, M, P, n));
                            }
                        }
                        CHECK_MSG(memcmp(cl, cr, sizeof(float) * LDC * (size_t)n) == 0,
                                  "packed %s %s k=%lld n=%lld pass %d: differs from the reference", lv[li],
                                  loom_type_name(wt), (long long)k, (long long)n, pass);
                    }
                    /* the level's gemm packs tiles of >= LOOM_GEMM_PACKED_MIN_COLS columns itself:
                     * the same bits, from any first column */
                    if (kt->gemm && n >= LOOM_GEMM_PACKED_MIN_COLS) {
                        for (int64_t j0 = 0; j0 <= 5 && n - j0 >= LOOM_GEMM_PACKED_MIN_COLS; j0 += 5) {
                            for (size_t i = 0; i < LDC * (size_t)n; i++) cl[i] = sentinel;
                            CHECK(kt->gemm(wt, k, w, wrb, a, arb, cl, LDC, R0, M, j0, n));
                            CHECK_MSG(memcmp(cl + j0 * LDC, cr + j0 * LDC, sizeof(float) * LDC * (size_t)(n - j0)) == 0,
                                      "gemm %s %s k=%lld n=%lld from column %lld: differs from the packed reference",
                                      lv[li], loom_type_name(wt), (long long)k, (long long)n, (long long)j0);
                            for (int64_t i = 0; i < j0 * LDC; i++) bad += cl[i] != sentinel;
                        }
                        CHECK(bad == 0);
                    }
                    CHECK(!kt->gemm_float_packed(wt, k, w, wrb, pl, cl, LDC, R0, M, 16, n)); /* unaligned j0 */
                    CHECK(!kt->gemm_float_packed(LOOM_TYPE_Q8_0, k, w, wrb, pl, cl, LDC, R0, M, 0, n));
                }
            }
            free(w); free(a); free(wf); free(af); free(xf); free(pr); free(pl); free(cr); free(cl);
        }
    }
    printf("  gemm_float_packed: %d level x shape runs\n", levels_run);
}

/* BF16 pair panels (kernels.h gemm_bf16_pack / _packed, the avx512bf16 level): the
 * reference pack against the layout's definition (the activation rows' own halves, zero
 * past k and n), every level's pack against it bit for bit (any panel ranges), and the
 * level's products against float64 within the rounding bound (the products are exact,
 * the sums FP32 in pairs), the same bits for row and column pieces as for one call,
 * untouched outputs outside the range, and declines for other types / unaligned j0. */
static void test_gemm_bf16_packed(void) {
    const char *const *lv = loom_kernels_levels();
    static const int64_t ks[] = {1, 2, 15, 33, 255, 256, 257, 511, 1000, 2100};
    static const int64_t ns[] = {1, 16, 17, 31, 32, 33, 64, 100, 300};
    enum { M = 150, R0 = 5, LDC = 152, P = LOOM_GEMM_PANEL };
    const float sentinel = -12345.f;
    const loom_type wt = LOOM_TYPE_BF16, at = LOOM_TYPE_BF16;
    int levels_run = 0;
    double worst = 0; /* the largest |error| / bound seen */
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        const int64_t k = ks[ki], kp = (k + 1) / 2, nmax = ns[sizeof ns / sizeof ns[0] - 1], qmax = (nmax + P - 1) / P;
        const size_t wrb = row_bytes(wt, k), arb = row_bytes(at, k), pw = (size_t)(qmax * P * kp);
        uint8_t *w = malloc(wrb * M), *a = malloc(arb * (size_t)nmax);
        float *wf = malloc(sizeof(float) * (size_t)k * M), *af = malloc(sizeof(float) * (size_t)k * (size_t)nmax);
        float *xf = malloc(sizeof(float) * (size_t)k);
        uint32_t *pr = malloc(sizeof(uint32_t) * pw), *pl = malloc(sizeof(uint32_t) * pw);
        float *c1 = malloc(sizeof(float) * LDC * (size_t)nmax), *c2 = malloc(sizeof(float) * LDC * (size_t)nmax);
        if (!w || !a || !wf || !af || !xf || !pr || !pl || !c1 || !c2) {
            CHECK(0);
            free(w); free(a); free(wf); free(af); free(xf); free(pr); free(pl); free(c1); free(c2);
            return;
        }
        gemm_operands(wt, at, k, M, 7, nmax, w, wf, a, af, xf);
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
            const int64_t n = ns[ni], nq = (n + P - 1) / P;
            memset(pr, 0xA5, sizeof(uint32_t) * pw);
            CHECK(loom_gemm_bf16_pack_ref(at, k, a, arb, n, pr, 0, nq));
            CHECK(!loom_gemm_bf16_pack_ref(LOOM_TYPE_F16, k, a, arb, n, pr, 0, nq));
            int bad = 0;
            for (int64_t q = 0; q < nq; q++)
                for (int64_t t = 0; t < kp; t++)
                    for (int c = 0; c < P; c++) {
                        const int64_t j = q * P + c;
                        const uint16_t *row = (const uint16_t *)(a + (size_t)j * arb);
                        const uint32_t lo = j < n ? row[2 * t] : 0, hi = j < n && 2 * t + 1 < k ? row[2 * t + 1] : 0;
                        bad += pr[(q * kp + t) * P + c] != (lo | hi << 16);
                    }
            CHECK_MSG(bad == 0, "bf16 pack ref k=%lld n=%lld: %d words", (long long)k, (long long)n, bad);
            for (int li = 1; lv[li]; li++) {
                const loom_kernels *kt = loom_kernels_for(lv[li]);
                if (!kt || !kt->gemm_bf16_pack || !kt->gemm_bf16_packed) continue;
                levels_run++;
                memset(pl, 0x5A, sizeof(uint32_t) * pw);
                CHECK(kt->gemm_bf16_pack(at, k, a, arb, n, pl, 0, nq / 2));
                CHECK(kt->gemm_bf16_pack(at, k, a, arb, n, pl, nq / 2, nq));
                CHECK_MSG(memcmp(pl, pr, sizeof(uint32_t) * (size_t)(nq * P * kp)) == 0, "bf16 pack %s k=%lld n=%lld",
                          lv[li], (long long)k, (long long)n);
                CHECK(!kt->gemm_bf16_pack(LOOM_TYPE_F16, k, a, arb, n, pl, 0, nq));
                /* one call against float64 */
                for (size_t i = 0; i < LDC * (size_t)n; i++) c1[i] = sentinel;
                CHECK(kt->gemm_bf16_packed(wt, k, w, wrb, pl, c1, LDC, R0, M, 0, n));
                bad = check_packed_f64(wt, k, c1, LDC, R0, M, n, wf, af, sentinel, &worst);
                CHECK_MSG(bad == 0, "bf16 packed %s k=%lld n=%lld: %d outputs", lv[li], (long long)k, (long long)n, bad);
                /* pieces: [R0, 77) and [77, M) x [0, 32) and [32, n): the same bits */
                for (size_t i = 0; i < LDC * (size_t)n; i++) c2[i] = sentinel;
                const int64_t jc = n < P ? n : P;
                CHECK(kt->gemm_bf16_packed(wt, k, w, wrb, pl, c2, LDC, R0, 77, 0, jc));
                CHECK(kt->gemm_bf16_packed(wt, k, w, wrb, pl, c2, LDC, 77, M, 0, jc));
                if (n > P) {
                    CHECK(kt->gemm_bf16_packed(wt, k, w, wrb, pl, c2, LDC, R0, 77, P, n));
                    CHECK(kt->gemm_bf16_packed(wt, k, w, wrb, pl, c2, LDC, 77, M, P, n));
                }
                CHECK_MSG(memcmp(c1, c2, sizeof(float) * LDC * (size_t)n) == 0, "bf16 packed %s k=%lld n=%lld: pieces differ",
                          lv[li], (long long)k, (long long)n);
                CHECK(!kt->gemm_bf16_packed(wt, k, w, wrb, pl, c2, LDC, R0, M, 16, n)); /* unaligned j0 */
                CHECK(!kt->gemm_bf16_packed(LOOM_TYPE_F16, k, w, wrb, pl, c2, LDC, R0, M, 0, n));
            }
        }
        free(w); free(a); free(wf); free(af); free(xf); free(pr); free(pl); free(c1); free(c2);
    }
    printf("  gemm_bf16_packed: %d level x shape runs, max |err| %.3f of the bound\n", levels_run, worst);
}

/* from_float with NaN / +-Inf / extreme magnitudes: every level gives the scalar bytes
 * (the scalar quantizers ignore NaN in amax and map NaN codes to -127). */
static void test_from_float_special(void) {
    const loom_kernels *s = loom_kernels_scalar();
    const char *const *lv = loom_kernels_levels();
    enum { K = 2048 }; /* 8 Q8_K blocks, 64 blocks of 32 */
    static float x[K];
    static uint8_t r[K * 4 + 64], g[K * 4 + 64];
    const float inf = INFINITY, qnan = NAN;
    for (int rep = 0; rep < 6; rep++) {
        for (int i = 0; i < K; i++) x[i] = (float)(gauss() * 2.0);
        /* 32-blocks: NaN, +Inf, -Inf, NaN+Inf, all NaN, NaN among zeros, lone NaN with tiny values */
        x[3 + 32 * 0] = qnan;
        x[31 + 32 * 1] = inf;
        x[0 + 32 * 2] = -inf;
        x[5 + 32 * 3] = -qnan; x[6 + 32 * 3] = inf;
        for (int i = 0; i < 32; i++) x[i + 32 * 4] = qnan;
        for (int i = 0; i < 32; i++) x[i + 32 * 5] = 0.f;
        x[9 + 32 * 5] = qnan;
        for (int i = 0; i < 32; i++) x[i + 32 * 6] = (float)(gauss() * 1e-39); /* d subnormal: 1/d = inf */
        x[4 + 32 * 6] = 0.f;
        x[7 + 32 * 6] = qnan;
        for (int i = 0; i < 32; i++) x[i + 32 * 7] = (float)(gauss() * 1e-44); /* d flushes to 0 */
        x[0 + 32 * 7] = qnan;
        /* Q8_K blocks from element 256 on: NaN first, -Inf, +-amax ties (first wins), all NaN,
         * NaN + max at the end, huge (iscale overflow path not taken) and tiny values */
        x[256 + 0] = qnan;
        x[512 + 100] = -inf;
        x[768 + 17] = -1000.f; x[768 + 200] = 1000.f;
        x[1024 + 40] = 50.f; x[1024 + 41] = -50.f;
        for (int i = 1280; i < 1536; i++) x[i] = qnan;
        x[1536 + 255] = 9.f; x[1536 + 254] = qnan; x[1536 + 0] = -qnan;
        for (int i = 1792; i < 2048; i++) x[i] = (float)(gauss() * (rep & 1 ? 1e-39 : 3e38));
        x[1792 + 33] = qnan;
        x[1792 + 34] = 0.f;
        if (rep >= 3) /* scatter specials everywhere */
            for (int t = 0; t < 24; t++) {
                int at = (int)(rnd() % K);
                uint32_t c = rnd() % 3;
                x[at] = c == 0 ? qnan : c == 1 ? inf : -inf;
            }
        for (size_t ai = 0; ai < sizeof k_atypes / sizeof k_atypes[0]; ai++) {
            loom_type at = k_atypes[ai];
            size_t rb = row_bytes(at, K);
            memset(r, 0, sizeof r);
            s->from_float[at](x, r, K);
            for (int li = 1; lv[li]; li++) {
                const loom_kernels *k = loom_kernels_for(lv[li]);
                if (!k) continue;
                memset(g, 0xA5, sizeof g);
                k->from_float[at](x, g, K);
                size_t off = 0;
                while (off < rb && r[off] == g[off]) off++;
                CHECK_MSG(off == rb, "from_float %s rep %d differs at level %s (byte %zu: %02x vs %02x)",
                          loom_type_name(at), rep, lv[li], off, off < rb ? r[off] : 0, off < rb ? g[off] : 0);
            }
        }
        if (rep == 0) { /* documented scalar semantics, checked by hand on the Q8_0 bytes */
            s->from_float[LOOM_TYPE_Q8_0](x, r, K);
            const int8_t *b0 = (const int8_t *)r + 2, *b1 = (const int8_t *)r + 34 + 2;
            CHECK_EQ_INT(b0[3], -127); /* NaN code */
            CHECK(b0[0] != -128 && b0[1] != -128);
            uint16_t d1;
            memcpy(&d1, r + 34, 2);
            CHECK_EQ_INT(d1, 0x7C00); /* amax = inf: d = inf, finite codes 0, the inf itself -127 */
            CHECK_EQ_INT(b1[0], 0);
            CHECK_EQ_INT(b1[31], -127);
        }
    }
}

/* Q2_K/Q3_K x Q8_K with arbitrary bytes (activations include -128, bsums as stored) and
 * unit scales: every partial sum is an integer below 2^24, so every level must give the
 * scalar result exactly. */
static void test_kquant_low_exact(void) {
    const loom_kernels *s = loom_kernels_scalar();
    const char *const *lv = loom_kernels_levels();
    static const loom_type wts[] = {LOOM_TYPE_Q2_K, LOOM_TYPE_Q3_K};
    enum { NB = 3 };
    static block_q8_K a[NB];
    static uint8_t w[NB * 110];
    for (size_t ti = 0; ti < sizeof wts / sizeof wts[0]; ti++) {
        loom_type wt = wts[ti];
        size_t bb = loom_type_get(wt)->block_bytes;
        for (int rep = 0; rep < 20; rep++) {
            for (int b = 0; b < NB; b++) {
                uint8_t *blk = w + b * bb;
                for (size_t i = 0; i < bb; i++) blk[i] = (uint8_t)rnd();
                if (rep == 1) memset(blk, 0xFF, bb); /* all codes and scales at their maximum */
                if (rep == 2) memset(blk, 0x00, bb);
                if (wt == LOOM_TYPE_Q2_K) { u16put(blk + 80, 0x3C00); u16put(blk + 82, 0x3C00); }
                else u16put(blk + 108, 0x3C00);
                a[b].d = 1.0f;
                for (int i = 0; i < 256; i++) a[b].qs[i] = (int8_t)(rep == 1 ? -128 : (int)(rnd() & 0xFF) - 128);
                for (int gi = 0; gi < 16; gi++) {
                    int sum = 0;
                    for (int l = 0; l < 16; l++) sum += a[b].qs[16 * gi + l];
                    a[b].bsums[gi] = (int16_t)sum;
                }
            }
            float ref = NAN;
            s->dot[wt].vec_dot(NB * 256, &ref, w, a);
            for (int li = 1; lv[li]; li++) {
                const loom_kernels *kt = loom_kernels_for(lv[li]);
                if (!kt) continue;
                float v = NAN;
                kt->dot[wt].vec_dot(NB * 256, &v, w, a);
                CHECK_MSG(v == ref, "%s %s exact rep %d: %.9g vs scalar %.9g", lv[li], loom_type_name(wt), rep, v, ref);
            }
        }
    }
}

static void test_f32_helpers(void) {
    const char *const *lv = loom_kernels_levels();
    enum { N = 1000 };
    float x[N], y[N], y2[N];
    for (int i = 0; i < N; i++) { x[i] = (float)gauss(); y[i] = (float)gauss(); }
    for (int li = 0; lv[li]; li++) {
        const loom_kernels *k = loom_kernels_for(lv[li]);
        if (!k) continue;
        for (int n = 0; n <= N; n += (n < 40 ? 1 : 137)) {
            double d = 0, m = 0;
            for (int i = 0; i < n; i++) { d += (double)x[i] * y[i]; m += fabs((double)x[i] * y[i]); }
            float v = k->dot_f32(n, x, y);
            CHECK_MSG(fabs(v - d) <= 2.0 * (n + 2) * ldexp(1.0, -24) * m + 1e-30, "%s dot_f32 n=%d", lv[li], n);
            memcpy(y2, y, sizeof y);
            k->axpy_f32(n, 0.75f, x, y2);
            int bad = 0;
            for (int i = 0; i < N; i++) {
                double e = i < n ? (double)y[i] + 0.75 * x[i] : y[i];
                if (fabs(y2[i] - e) > ldexp(fabs(y[i]) + fabs(0.75 * x[i]), -23) + 1e-30) bad++;
            }
            CHECK_MSG(bad == 0, "%s axpy n=%d", lv[li], n);
        }
    }
}

/* LOOM_CPU_ISA: run this binary as a child with the variable set. Under user-mode
 * emulation without binfmt_misc, LOOM_TEST_EXEC_WRAPPER (e.g. "qemu-aarch64 -L
 * /usr/aarch64-linux-gnu") is put in front of the child's command line. */
static void test_env_override(const char *self) {
    const char *const *lv = loom_kernels_levels();
    const char *wrap = getenv("LOOM_TEST_EXEC_WRAPPER");
    if (!wrap) wrap = "";
    char cmd[8600];
    for (int li = 0; lv[li]; li++) {
        snprintf(cmd, sizeof cmd, "LOOM_CPU_ISA=%s %s '%s' --print-isa 2>/dev/null", lv[li], wrap, self);
        FILE *p = popen(cmd, "r");
        if (!p) continue;
        char out[64] = "";
        if (!fgets(out, sizeof out, p)) out[0] = 0;
        pclose(p);
        out[strcspn(out, "\n")] = 0;
        if (loom_kernels_for(lv[li])) CHECK_MSG(strcmp(out, lv[li]) == 0, "forced %s got %s", lv[li], out);
        else CHECK_MSG(out[0] && loom_kernels_for(out) != NULL, "forced unavailable %s got '%s'", lv[li], out);
    }
    snprintf(cmd, sizeof cmd, "LOOM_CPU_ISA=neon %s '%s' --print-isa 2>&1 >/dev/null", wrap, self);
    FILE *p = popen(cmd, "r");
    if (p) {
        char out[256] = "";
        if (!fgets(out, sizeof out, p)) out[0] = 0;
        pclose(p);
        if (!loom_kernels_for("neon")) CHECK_MSG(strstr(out, "not available") != NULL, "no warning: %s", out);
    }
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--print-isa") == 0) {
        printf("%s\n", loom_kernels_get()->name);
        return 0;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) self[n] = 0;
    else snprintf(self, sizeof self, "%s", argv[0]);
    test_tables_complete();
    test_from_float();
    test_vec_dot();
    test_gemm_float();
    test_gemm_float_tiling();
    test_gemm_float_packed();
    test_gemm_bf16_packed();
    test_gemm_kq_shapes(LOOM_TYPE_Q4_K);
    test_gemm_kq_shapes(LOOM_TYPE_Q2_K);
    test_gemm_kq_shapes(LOOM_TYPE_Q3_K);
    test_gemm_kq_shapes(LOOM_TYPE_Q5_K);
    test_gemm_kq_shapes(LOOM_TYPE_Q6_K);
    test_gemm_legacy_shapes(LOOM_TYPE_Q5_0);
    test_gemm_legacy_shapes(LOOM_TYPE_Q4_1);
    test_gemm_legacy_shapes(LOOM_TYPE_Q5_1);
    {
        static const loom_type iq[] = {LOOM_TYPE_IQ2_XXS, LOOM_TYPE_IQ2_XS, LOOM_TYPE_IQ2_S,
                                       LOOM_TYPE_IQ3_XXS, LOOM_TYPE_IQ3_S,  LOOM_TYPE_IQ1_S,
                                       LOOM_TYPE_IQ1_M,  LOOM_TYPE_TQ1_0,  LOOM_TYPE_TQ2_0, LOOM_TYPE_Q3_K};
        for (size_t i = 0; i < sizeof iq / sizeof iq[0]; i++) test_gemm_iq_shapes(iq[i]);
    }
    test_gemm_mxfp4_shapes();
    test_from_float_special();
    test_kquant_low_exact();
    test_f32_helpers();
    test_env_override(self);
    return test_finish("test_cpu_kernels");
}
