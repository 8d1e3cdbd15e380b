/* The mask hint of MUL_MAT (core/tensor.h loom_mm_mask_role) changes no bit.
 *
 * loom_sdpa_ext without flash attention gives its two products the attention mask as a
 * hint for prompts: the CPU skips the scores of keys a tile's tokens cannot see and the
 * p.V products of their zero probabilities. The same three nodes built here from the
 * public API (loom_mul_mat_full_prec, loom_softmax_ext_sinks, loom_mul_mat: no hint)
 * compute every product; the outputs must be bit-identical (NaN where both are NaN):
 *  - masks: causal; a sliding window (keys skipped at the front, past one 256-key
 *    chunk); two sequences in one batch (block-diagonal, the second's keys behind the
 *    first's); causal with a token that sees no key (Loom's softmax gives such a row
 *    zeros; all-sink with sinks);
 *  - F32 (read in place) and F16 (converted activations) caches, grouped heads, several
 *    column tiles, soft cap and sinks;
 *  - 1, 2 and 3 threads, and every kernel level this CPU has (the binary runs itself as
 *    a child with LOOM_CPU_ISA set to each; TSan builds run the default level only).
 * And the hinted output is attention: against a float64 reference of the stored values
 * (nmse measured <= 1e-13 (F32) and 3e-8 (F16) here; bounds 1e-11 and 2e-6 as in
 * test_cpu_ops_nn_attn). */
#include "cpu/kernels.h"
#include "level_test_util.h"
#include "nn_test_common.h"


typedef struct hint_case {
    int Dk, Dv, H, Hkv, T, L;
    loom_type kv; /* F32 or F16 */
    int mask;     /* 0 causal, 1 window of 300 keys, 2 two sequences, 3 causal + a blind token */
    float softcap;
    bool sinks;
} hint_case;

static float g_sink[64];

static void make_mask(const hint_case *c, float *m, int64_t tpad) {
    const int64_t L = c->L, T = c->T;
    for (int64_t t = 0; t < tpad; t++)
        for (int64_t j = 0; j < L; j++) {
            const int64_t pos = L - T + t; /* the token's own cell: the batch at the end */
            bool see = t < T && j <= pos;
            if (c->mask == 1) see = see && j > pos - 300;
            if (c->mask == 2) { /* sequence A: cells [0, L/2) and tokens [0, T/2); B: the rest */
                const int64_t half = L / 2, th = T / 2;
                see = t < T && (t < th ? j < half - th + t + 1 && j < half : j >= half && j <= pos);
            }
            if (c->mask == 3 && t == 1) see = false;
            m[t * L + j] = see ? 0.0f : -INFINITY;
        }
}

static loom_tensor *cache(loom_ctx *ctx, loom_type t, const float *x, int64_t ne0, int64_t ne1, int64_t ne2) {
    return t == LOOM_TYPE_F16 ? nn_f16(ctx, x, ne0, ne1, ne2, 1) : nn_f32(ctx, x, ne0, ne1, ne2, 1);
}

/* hinted: loom_sdpa_ext (no flash); else the explicit nodes. q [Dk,H,T], k [Dk,Hkv,L],
 * vp the PermutedV cache [L,Dv,Hkv]. Returns the output [Dv,H,T] or NULL. */
static float *run(const hint_case *c, bool hinted, int nth, const float *q, const float *k, const float *vp,
                  const float *mask, int64_t tpad, float scale) {
    loom_ctx *ctx = nn_ctx(nth, false);
    const size_t no = (size_t)c->Dv * c->H * c->T;
    float *out = fmalloc(no);
    loom_tensor *qt = nn_f32(ctx, q, c->Dk, c->H, c->T, 1), *kt = cache(ctx, c->kv, k, c->Dk, c->Hkv, c->L);
    loom_tensor *vt = cache(ctx, c->kv, vp, c->L, c->Dv, c->Hkv), *mt = nn_f32(ctx, mask, c->L, tpad, 1, 1);
    loom_tensor *sk = c->sinks ? nn_f32(ctx, g_sink, c->H, 1, 1, 1) : NULL, *y;
    if (hinted) {
        y = loom_sdpa_ext(ctx, qt, kt, vt, mt, scale, c->softcap, sk);
    } else {
        loom_tensor *kq = loom_mul_mat_full_prec(ctx, loom_permute(ctx, kt, 0, 2, 1, 3), loom_permute(ctx, qt, 0, 2, 1, 3));
        float sc = scale;
        if (c->softcap > 0) {
            kq = loom_scale(ctx, loom_tanh(ctx, loom_scale(ctx, kq, scale / c->softcap)), c->softcap);
            sc = 1.0f;
        }
        kq = loom_softmax_ext_sinks(ctx, kq, mt, sc, sk);
        y = loom_cont(ctx, loom_permute(ctx, loom_mul_mat(ctx, vt, kq), 0, 2, 1, 3));
    }
    loom_status s = nn_run(ctx, y, out, no);
    CHECK_MSG(s == LOOM_OK, "%s nth=%d: %s", hinted ? "sdpa" : "explicit", nth, loom_ctx_error(ctx));
    loom_ctx_free(ctx);
    if (s != LOOM_OK) {
        free(out);
        return NULL;
    }
    return out;
}

static bool same_bits(const float *a, const float *b, size_t n, size_t *first) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], 4) != 0 && !(isnan(a[i]) && isnan(b[i]))) {
            *first = i;
            return false;
        }
    return true;
}

static void check_case(const hint_case *c) {
    const size_t nq = (size_t)c->Dk * c->H * c->T, nk = (size_t)c->Dk * c->Hkv * c->L,
                 nv = (size_t)c->Dv * c->Hkv * c->L, no = (size_t)c->Dv * c->H * c->T;
    const int64_t tpad = ((c->T + 63) / 64) * 64;
    float *q = fmalloc(nq), *k = fmalloc(nk), *v = fmalloc(nv), *vp = fmalloc(nv), *mask = fmalloc((size_t)c->L * tpad);
    fill_rnd(q, nq, 1.0f);
    fill_rnd(k, nk, 1.0f);
    fill_rnd(v, nv, 1.0f);
    if (c->kv == LOOM_TYPE_F16) { /* the reference sees the stored values */
        round_f16(k, nk);
        round_f16(v, nv);
    }
    for (int j = 0; j < c->L; j++)
        for (int g = 0; g < c->Hkv; g++)
            for (int d = 0; d < c->Dv; d++) vp[((size_t)g * c->Dv + d) * c->L + j] = v[((size_t)j * c->Hkv + g) * c->Dv + d];
    for (int h = 0; h < c->H; h++) g_sink[h] = (float)(h % 5) - 1.5f;
    make_mask(c, mask, tpad);
    const float scale = 1.0f / sqrtf((float)c->Dk);
    float *base = run(c, false, 1, q, k, vp, mask, tpad, scale);
    for (int nth = 1; nth <= 3 && base; nth++) {
        float *h = run(c, true, nth, q, k, vp, mask, tpad, scale);
        size_t i = 0;
        CHECK_MSG(h && same_bits(h, base, no, &i),
                  "%s %s mask %d T=%d L=%d H=%d/%d cap %.1f sinks %d nth %d: element %zu hinted %a, explicit %a",
                  loom_kernels_get()->name, loom_type_name(c->kv), c->mask, c->T, c->L, c->H, c->Hkv, c->softcap,
                  c->sinks, nth, i, h ? h[i] : 0.0f, base[i]);
        free(h);
    }
    if (base) { /* attention: rows with a visible key (or a sink) against float64 */
        double *ref = dmalloc(no);
        nn_ref_attn(c->Dk, c->Dv, c->H, c->Hkv, c->T, c->L, c->softcap, c->sinks ? g_sink : NULL, q, k, v, mask, c->L,
                    scale, ref);
        size_t nan_rows = 0, m = 0;
        for (size_t i = 0; i < no; i++) {
            if (isnan(ref[i])) { /* a blind token without sinks: the softmax's zero row */
                CHECK_MSG(base[i] == 0.0f, "element %zu: 0 expected (no visible key), got %g", i, base[i]);
                nan_rows++;
                continue;
            }
            base[m] = base[i];
            ref[m++] = ref[i];
        }
        const double e = nmse(base, ref, m), tol = c->kv == LOOM_TYPE_F32 ? 1e-11 : 2e-6;
        CHECK_MSG(e <= tol, "%s mask %d: nmse %g > %g", loom_type_name(c->kv), c->mask, e, tol);
        CHECK(c->mask != 3 || c->sinks || nan_rows == (size_t)c->Dv * c->H);
        free(ref);
    }
    free(base);
    free(q), free(k), free(v), free(vp), free(mask);
}

static void run_level(void) {
    const hint_case cases[] = {
        {64, 64, 4, 2, 37, 520, LOOM_TYPE_F16, 0, 0.0f, false},  {64, 64, 4, 2, 37, 900, LOOM_TYPE_F16, 1, 0.0f, false},
        {64, 48, 4, 4, 70, 600, LOOM_TYPE_F32, 1, 0.0f, false},  {32, 32, 2, 1, 130, 1030, LOOM_TYPE_F16, 0, 0.0f, false},
        {64, 64, 4, 2, 40, 700, LOOM_TYPE_F16, 2, 0.0f, false},  {64, 64, 2, 2, 24, 300, LOOM_TYPE_F32, 2, 0.0f, false},
        {64, 64, 4, 2, 20, 520, LOOM_TYPE_F16, 3, 0.0f, false},  {64, 64, 4, 2, 20, 520, LOOM_TYPE_F32, 3, 0.5f, true},
        {64, 64, 8, 2, 66, 830, LOOM_TYPE_F16, 1, 0.4f, true},   {128, 128, 2, 1, 5, 400, LOOM_TYPE_F32, 0, 0.0f, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
}

int main(int argc, char **argv) { return test_levels_main(argc, argv, "test_cpu_attn_mask_hint", run_level); }
