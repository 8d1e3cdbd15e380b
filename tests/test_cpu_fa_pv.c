/* loom_kernels.fa_pv (flash-attention p.V of one key tile) on every ISA level that
 * has one, against loom_fa_pv_ref, and the reference against a float64 sum over V
 * rows dequantized by loom_dequantize_row (an independent decoder): F32, F16, Q8_0
 * and Q4_0 rows; 1 to 11 heads (more than one register group of 8); Dv 32 to 256
 * and 80 (not a multiple of 32: quantized types are declined); tiles of 1 to 100
 * keys with keys whose probabilities are all 0 (masked: skipped) and single zeros;
 * p and acc strides wider than the rows. Levels must match the reference's key-order
 * arithmetic (one fma per key) bit for bit. */
#include "cpu/kernels.h"
#include "cpu/kernels_internal.h"
#include "test_util.h"

static uint64_t g_rng = 88172645463325252ull;
static double urand(void) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}

enum { MAXN = 100, MAXG = 11, MAXD = 256, PS = 104, AS = MAXD + 8 };

int main(void) {
    static const loom_type types[] = {LOOM_TYPE_F32, LOOM_TYPE_F16, LOOM_TYPE_Q8_0, LOOM_TYPE_Q4_0};
    static const int dvs[] = {32, 64, 80, 128, 256};
    static const int gs[] = {1, 3, 8, 11};
    static const int ns[] = {1, 17, 64, 100};
    static float vf[MAXN * MAXD], p[MAXG * PS], acc0[MAXG * AS], ref[MAXG * AS], got[MAXG * AS], row[MAXD];
    static uint8_t v[MAXN * (MAXD * 4 + 6)]; /* F32 rows of MAXD values at a stride of row bytes + 6 */
    const char *const *lv = loom_kernels_levels();
    int levels_with = 0;
    for (int li = 0; lv[li]; li++) {
        const loom_kernels *k = loom_kernels_for(lv[li]);
        if (k && k->fa_pv) levels_with++;
    }
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (size_t di = 0; di < sizeof dvs / sizeof dvs[0]; di++)
            for (size_t gi = 0; gi < sizeof gs / sizeof gs[0]; gi++)
                for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                    const loom_type t = types[ti];
                    const int Dv = dvs[di], G = gs[gi], n = ns[ni];
                    const bool quant = t == LOOM_TYPE_Q8_0 || t == LOOM_TYPE_Q4_0;
                    size_t rb = 0;
                    if (loom_type_row_bytes(t, Dv, &rb) != LOOM_OK) { /* Dv 80: not a whole number of blocks */
                        CHECK(quant && Dv % 32);
                        continue;
                    }
                    const size_t vs = rb + 6; /* rows not packed: the stride is honoured */
                    for (int j = 0; j < n; j++) {
                        for (int d = 0; d < Dv; d++) vf[j * MAXD + d] = (float)(4.0 * urand() - 2.0);
                        if (t == LOOM_TYPE_F32) memcpy(v + (size_t)j * vs, vf + j * MAXD, rb);
                        else CHECK(loom_quantize_row(t, vf + j * MAXD, v + (size_t)j * vs, Dv) == LOOM_OK);
                    }
                    for (int h = 0; h < G; h++)
                        for (int j = 0; j < n; j++) {
                            /* every 5th key masked for all heads, a few single zeros */
                            double u = urand();
                            p[h * PS + j] = j % 5 == 3 ? 0.0f : u < 0.1 ? 0.0f : (float)u;
                        }
                    for (int i = 0; i < MAXG * AS; i++) acc0[i] = (float)(urand() - 0.5);
                    memcpy(ref, acc0, sizeof ref);
                    bool ok = loom_fa_pv_ref(t, n, G, Dv, p, PS, v, vs, ref, AS);
                    CHECK_MSG(ok, "ref declined %s Dv %d", loom_type_name(t), Dv);
                    if (!ok) continue;
                    /* the reference against float64 over independently dequantized rows */
                    double worst = 0;
                    for (int h = 0; h < G; h++) {
                        double e[MAXD], mag[MAXD];
                        for (int d = 0; d < Dv; d++) e[d] = acc0[h * AS + d], mag[d] = fabs(e[d]);
                        for (int j = 0; j < n; j++) {
                            CHECK(loom_dequantize_row(t, v + (size_t)j * vs, row, Dv) == LOOM_OK);
                            for (int d = 0; d < Dv; d++)
                                e[d] += (double)p[h * PS + j] * row[d], mag[d] += fabs((double)p[h * PS + j] * row[d]);
                        }
                        for (int d = 0; d < Dv; d++) {
                            double err = fabs(ref[h * AS + d] - e[d]) / (mag[d] * (n + 1) * ldexp(1.0, -24));
                            if (err > worst) worst = err;
                        }
                        for (int d = Dv; d < AS; d++) /* beyond Dv: untouched */
                            CHECK(ref[h * AS + d] == acc0[h * AS + d]);
                    }
                    CHECK_MSG(worst <= 1.0, "ref %s Dv %d G %d n %d: error %.3g x bound", loom_type_name(t), Dv, G, n,
                              worst);
                    for (int li = 0; lv[li]; li++) {
                        const loom_kernels *k = loom_kernels_for(lv[li]);
                        if (!k || !k->fa_pv) continue;
                        memcpy(got, acc0, sizeof got);
                        if (!k->fa_pv(t, n, G, Dv, p, PS, v, vs, got, AS)) {
                            /* declining is allowed only for a Dv the vector width does not divide */
                            CHECK_MSG(Dv % 16, "%s declined %s Dv %d", lv[li], loom_type_name(t), Dv);
                            continue;
                        }
                        int bad = 0;
                        for (int h = 0; h < G; h++)
                            for (int d = 0; d < AS; d++) {
                                const float r = ref[h * AS + d], g = got[h * AS + d];
                                if (memcmp(&g, &r, sizeof g) != 0) bad++; /* same fma sequence */
                            }
                        CHECK_MSG(bad == 0, "%s %s Dv %d G %d n %d: %d mismatches", lv[li], loom_type_name(t), Dv, G,
                                  n, bad);
                    }
                }
    printf("test_cpu_fa_pv: %d level(s) with fa_pv\n", levels_with);
    return test_finish("test_cpu_fa_pv");
}
