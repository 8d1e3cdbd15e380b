/* The flash-attention tile kernels (kernels.h fa_qk, fa_softmax, fa_pv, fa_rows) on
 * every ISA level compiled in and available here, against the references
 * (kernels_fa_scalar.c), and the references against float64:
 *  - fa_qk and fa_pv bit for bit with the reference (each row the same fma chain),
 *    for Dk / Dv from 1 to 256 (not multiples of the vector width included), 16 to 80
 *    rows, 1 to 64 keys, keys whose p is 0 in every row (skipped) and single zeros;
 *  - fa_softmax within the level's exp error (M exactly; p, S, f relatively), with
 *    G from 1 to 20 (rows of one vector spanning several tokens), masked keys (-inf),
 *    finite mask values, a token that sees no key of the tile, an empty state;
 *  - fa_rows bit for bit with loom_dequantize_row for F32, F16, BF16, Q8_0, Q4_0. */
#include "cpu/kernels.h"
#include "cpu/kernels_internal.h"
#include "test_util.h"

#include <math.h>
#include <string.h>

static uint64_t g_rng = 88172645463325252ull;
static double urand(void) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}

enum { MAXD = 256, MAXR = 80, NK = 64 };
static float qT[MAXD * MAXR], kf[NK * (MAXD + 3)], sref[NK * MAXR], sgot[NK * MAXR];

static bool same_bits(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

static void test_qk(const loom_kernels *const *lv, const char *const *names, int nlv) {
    static const int dks[] = {1, 5, 16, 64, 80, 128, 256};
    static const int rps[] = {16, 32, 48, 64, 80};
    static const int nks[] = {1, 5, 6, 7, 9, 17, 19, 33, 64}; /* register blocks (6, 8, 16 keys) with tails */
    for (size_t a = 0; a < sizeof dks / sizeof *dks; a++)
        for (size_t b = 0; b < sizeof rps / sizeof *rps; b++)
            for (size_t c = 0; c < sizeof nks / sizeof *nks; c++)
                for (int ri = 0; ri < 5; ri++) { /* R from Rp - 15 to Rp; 1, 5, 8, 9 rows: decode groups */
                    const int Dk = dks[a], Rp = rps[b], nk = nks[c];
                    const int R = Rp == 16 ? (int[]){1, 5, 8, 9, 16}[ri] : Rp - (int[]){15, 8, 7, 1, 0}[ri];
                    const size_t ks = (size_t)Dk + 3; /* rows not packed */
                    for (int i = 0; i < Dk * Rp; i++) qT[i] = i % Rp < R ? (float)(2.0 * urand() - 1.0) : 0.0f;
                    for (int i = 0; i < nk * (int)ks; i++) kf[i] = (float)(2.0 * urand() - 1.0);
                    loom_fa_qk_ref(Dk, R, Rp, nk, qT, kf, ks, sref);
                    double worst = 0; /* reference vs float64, in units of the bound Dk u sum|terms| */
                    for (int j = 0; j < nk; j++)
                        for (int r = 0; r < Rp; r++) {
                            double e = 0, m = 0;
                            for (int d = 0; d < Dk; d++) {
                                e += (double)kf[j * ks + d] * qT[d * Rp + r];
                                m += fabs((double)kf[j * ks + d] * qT[d * Rp + r]);
                            }
                            double err = fabs(sref[j * Rp + r] - e) / (m * Dk * ldexp(1.0, -24) + 1e-300);
                            if (err > worst) worst = err;
                        }
                    CHECK_MSG(worst <= 1.0, "qk ref Dk %d R %d Rp %d nk %d: %.3g x bound", Dk, R, Rp, nk, worst);
                    for (int l = 0; l < nlv; l++) { /* padding rows: 0 at every level for finite keys */
                        memset(sgot, 0xFF, sizeof sgot);
                        lv[l]->fa_qk(Dk, R, Rp, nk, qT, kf, ks, sgot);
                        CHECK_MSG(same_bits(sref, sgot, (size_t)nk * Rp), "%s fa_qk Dk %d R %d Rp %d nk %d", names[l],
                                  Dk, R, Rp, nk);
                    }
                }
}

static void test_pv(const loom_kernels *const *lv, const char *const *names, int nlv) {
    enum { AS = MAXD + 5, VS = MAXD + 7 };
    static float p[NK * MAXR], f[MAXR], vf[NK * VS], acc0[MAXR * AS], ref[MAXR * AS], got[MAXR * AS];
    static const int dvs[] = {1, 8, 16, 64, 80, 128, 256};
    static const int rs[] = {1, 8, 15, 16, 33, 64, 80};
    static const int nks[] = {1, 7, 64};
    for (size_t a = 0; a < sizeof dvs / sizeof *dvs; a++)
        for (size_t b = 0; b < sizeof rs / sizeof *rs; b++)
            for (size_t c = 0; c < sizeof nks / sizeof *nks; c++) {
                const int Dv = dvs[a], R = rs[b], Rp = (R + 15) / 16 * 16, nk = nks[c];
                for (int j = 0; j < nk; j++) {
                    for (int d = 0; d < VS; d++) vf[j * VS + d] = (float)(4.0 * urand() - 2.0);
                    for (int r = 0; r < Rp; r++) {
                        double u = urand(); /* every 5th key 0 in every row, a few single zeros */
                        p[j * Rp + r] = r >= R || j % 5 == 3 || u < 0.1 ? 0.0f : (float)u;
                    }
                }
                for (int r = 0; r < Rp; r++) f[r] = r % 3 == 0 ? 1.0f : r % 3 == 1 ? (float)urand() : 0.0f;
                for (int i = 0; i < MAXR * AS; i++) acc0[i] = (float)(urand() - 0.5);
                memcpy(ref, acc0, sizeof ref);
                loom_fa_pv_ref(nk, R, Rp, Dv, p, f, vf, VS, ref, AS);
                double worst = 0;
                for (int r = 0; r < R; r++)
                    for (int d = 0; d < Dv; d++) {
                        double e = (double)acc0[r * AS + d] * f[r], m = fabs(e);
                        for (int j = 0; j < nk; j++) {
                            e += (double)p[j * Rp + r] * vf[j * VS + d];
                            m += fabs((double)p[j * Rp + r] * vf[j * VS + d]);
                        }
                        double err = fabs(ref[r * AS + d] - e) / (m * (nk + 2) * ldexp(1.0, -24) + 1e-300);
                        if (err > worst) worst = err;
                    }
                CHECK_MSG(worst <= 1.0, "pv ref Dv %d R %d nk %d: %.3g x bound", Dv, R, nk, worst);
                for (int i = 0; i < MAXR * AS; i++) /* beyond row R or column Dv: untouched */
                    if (i / AS >= R || i % AS >= Dv) CHECK(ref[i] == acc0[i]);
                for (int l = 0; l < nlv; l++) {
                    memcpy(got, acc0, sizeof got);
                    lv[l]->fa_pv(nk, R, Rp, Dv, p, f, vf, VS, got, AS);
                    CHECK_MSG(same_bits(ref, got, MAXR * AS), "%s fa_pv Dv %d R %d nk %d", names[l], Dv, R, nk);
                }
            }
}

static void test_softmax(const loom_kernels *const *lv, const char *const *names, int nlv) {
    enum { MS = MAXR + 16 };
    static float s0[NK * MAXR], mT[NK * MS], M0[MAXR], S0[MAXR];
    static float Mr[MAXR], Sr[MAXR], fr[MAXR], Mg[MAXR], Sg[MAXR], fg[MAXR];
    static const int gs[] = {1, 3, 8, 16, 20};
    static const int rps[] = {16, 48, 80};
    static const int nks[] = {1, 13, 64};
    const float scale = 0.125f;
    for (size_t a = 0; a < sizeof gs / sizeof *gs; a++)
        for (size_t b = 0; b < sizeof rps / sizeof *rps; b++)
            for (size_t c = 0; c < sizeof nks / sizeof *nks; c++) {
                const int G = gs[a], Rp = rps[b], nk = nks[c], ntok = (Rp + G - 1) / G;
                for (int i = 0; i < nk * Rp; i++) s0[i] = (float)(40.0 * urand() - 20.0);
                for (int j = 0; j < nk; j++)
                    for (int t = 0; t < MS; t++) { /* token 1 sees nothing; others: holes and biases */
                        double u = urand();
                        mT[j * MS + t] = t == 1 || t >= ntok || u < 0.3 ? -INFINITY : u < 0.5 ? (float)(-3.0 * u) : 0.0f;
                    }
                for (int r = 0; r < Rp; r++) { /* empty states, and running ones below and above the tile's max */
                    M0[r] = r % 4 == 0 ? -INFINITY : (float)(r % 4 == 1 ? -50.0 : 5.0 * urand());
                    S0[r] = M0[r] == -INFINITY ? 0.0f : (float)(1.0 + 10.0 * urand());
                }
                memcpy(sref, s0, sizeof s0);
                memcpy(Mr, M0, sizeof Mr);
                memcpy(Sr, S0, sizeof Sr);
                loom_fa_softmax_ref(nk, Rp, G, scale, mT, MS, sref, Mr, Sr, fr);
                /* the reference against float64 */
                double worst = 0;
                for (int r = 0; r < Rp; r++) {
                    const int t = r / G;
                    double mx = M0[r], sum;
                    for (int j = 0; j < nk; j++) {
                        const float m = mT[j * MS + t];
                        if (m != -INFINITY && (double)(float)(s0[j * Rp + r] * scale) + m > mx)
                            mx = (double)(float)((float)(s0[j * Rp + r] * scale) + m);
                    }
                    CHECK_MSG(Mr[r] == (float)mx, "softmax ref M row %d", r);
                    const double fe = mx == M0[r] ? 1.0 : exp((double)M0[r] - mx);
                    sum = S0[r] * fe;
                    for (int j = 0; j < nk; j++) {
                        const float m = mT[j * MS + t];
                        const double pe = m == -INFINITY ? 0.0 : exp((double)((float)(s0[j * Rp + r] * scale) + m) - mx);
                        if (pe == 0.0) CHECK(sref[j * Rp + r] == 0.0f);
                        else if (fabs(sref[j * Rp + r] - pe) / pe > worst) worst = fabs(sref[j * Rp + r] - pe) / pe;
                        sum += pe;
                    }
                    if (fe > 0 && fabs(fr[r] - fe) / fe > worst) worst = fabs(fr[r] - fe) / fe;
                    if (sum > 0 && fabs(Sr[r] - sum) / sum > worst) worst = fabs(Sr[r] - sum) / sum;
                    if (t == 1) CHECK(Mr[r] == M0[r] && fr[r] == 1.0f && Sr[r] == S0[r]); /* sees nothing */
                }
                CHECK_MSG(worst < 2e-6, "softmax ref G %d Rp %d nk %d: relative error %.3g", G, Rp, nk, worst);
                for (int l = 0; l < nlv; l++) {
                    memcpy(sgot, s0, sizeof s0);
                    memcpy(Mg, M0, sizeof Mg);
                    memcpy(Sg, S0, sizeof Sg);
                    lv[l]->fa_softmax(nk, Rp, G, scale, mT, MS, sgot, Mg, Sg, fg);
                    double w = 0;
                    int bad = 0;
                    for (int r = 0; r < Rp; r++) {
                        bad += Mg[r] != Mr[r];
                        bad += (fr[r] == 0.0f) != (fg[r] == 0.0f) || (fr[r] == 1.0f) != (fg[r] == 1.0f);
                        if (fr[r] > 0) w = fmax(w, fabs(fg[r] - fr[r]) / fr[r]);
                        if (Sr[r] > 0) w = fmax(w, fabs(Sg[r] - Sr[r]) / Sr[r]);
                        for (int j = 0; j < nk; j++) {
                            const float e = sref[j * Rp + r], g = sgot[j * Rp + r];
                            if (e == 0.0f) bad += g != 0.0f;
                            else w = fmax(w, fabs(g - e) / e);
                        }
                    }
                    /* the levels' polynomial exp: relative error about 2e-7 per value */
                    CHECK_MSG(bad == 0 && w < 1e-6, "%s fa_softmax G %d Rp %d nk %d: %d mismatches, rel %.3g", names[l],
                              G, Rp, nk, bad, w);
                }
            }
}

static void test_rows(const loom_kernels *const *lv, const char *const *names, int nlv) {
    static const loom_type types[] = {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_BF16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0};
    static const int ds[] = {8, 16, 32, 64, 80, 128, 256};
    static float x[7 * MAXD], ref[7 * (MAXD + 4)], got[7 * (MAXD + 4)];
    static uint8_t raw[7 * (MAXD * 4 + 8)];
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
        for (size_t di = 0; di < sizeof ds / sizeof *ds; di++) {
            const loom_type t = types[ti];
            const int D = ds[di], n = 7;
            size_t rb;
            if (loom_type_row_bytes(t, D, &rb) != LOOM_OK) continue; /* not whole blocks */
            const size_t ss = rb + 8, dst = (size_t)D + 4;
            for (int i = 0; i < n * D; i++) x[i] = (float)(6.0 * urand() - 3.0);
            for (int i = 0; i < n; i++) CHECK(loom_quantize_row(t, x + i * D, raw + i * ss, D) == LOOM_OK);
            memset(ref, 0, sizeof ref);
            CHECK(loom_fa_rows_ref(t, n, D, raw, ss, ref, dst));
            for (int i = 0; i < n; i++) {
                float row[MAXD];
                CHECK(loom_dequantize_row(t, raw + i * ss, row, D) == LOOM_OK);
                CHECK(same_bits(row, ref + i * dst, (size_t)D));
            }
            for (int l = 0; l < nlv; l++) {
                memset(got, 0, sizeof got);
                CHECK_MSG(lv[l]->fa_rows(t, n, D, raw, ss, got, dst), "%s fa_rows declined %s", names[l], loom_type_name(t));
                CHECK_MSG(same_bits(ref, got, (size_t)n * dst), "%s fa_rows %s D %d", names[l], loom_type_name(t), D);
            }
        }
    CHECK(!loom_fa_rows_ref(LOOM_TYPE_Q4_K, 1, 256, raw, 256, ref, 256)); /* not a cache type */
}

int main(void) {
    const char *const *names = loom_kernels_levels();
    const loom_kernels *lv[16];
    const char *nm[16];
    int n = 0;
    for (int i = 0; names[i] && n < 16; i++) {
        const loom_kernels *k = loom_kernels_for(names[i]);
        if (k) lv[n] = k, nm[n++] = names[i];
    }
    test_qk(lv, nm, n);
    test_pv(lv, nm, n);
    test_softmax(lv, nm, n);
    test_rows(lv, nm, n);
    printf("test_cpu_fa_tile: %d level(s)\n", n);
    return test_finish("test_cpu_fa_tile");
}
