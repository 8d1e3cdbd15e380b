/* RoPE (normal, neox, partial, factors, YaRN, F16, strided rows) and attention
 * (sdpa with and without flash, masks, GQA, T = 1 and T > 1, L not a multiple of
 * the tile, F32/F16/Q8_0 K/V, soft-capped scores and sinks) against float64
 * references written here. */
#include "nn_test_common.h"

/* ---------------------------------------------------------------- rope */

typedef struct rope_case {
    const char *name;
    int mode, n_dims, hd, heads, T;
    float base, freq_scale, ext_factor, attn_factor;
    int orig_ctx;
    bool factors, f16, strided;
} rope_case;

static void ref_rope(const rope_case *c, const float *x, const int32_t *pos, const float *ff, double *ref) {
    const int n = c->n_dims, half = n / 2;
    double lo = 0, hi = 0, ms = c->attn_factor;
    if (c->ext_factor != 0.0f) {
        double cdf = n * log(c->orig_ctx / (32.0 * 2 * M_PI)) / (2 * log((double)c->base));
        double cds = n * log(c->orig_ctx / (1.0 * 2 * M_PI)) / (2 * log((double)c->base));
        lo = fmax(0.0, floor(cdf));
        hi = fmin(n - 1.0, ceil(cds));
        ms *= 1 + 0.1 * log(1.0 / c->freq_scale);
    }
    for (int t = 0; t < c->T; t++)
        for (int h = 0; h < c->heads; h++) {
            const float *xr = x + ((size_t)t * c->heads + h) * c->hd;
            double *o = ref + ((size_t)t * c->heads + h) * c->hd;
            for (int i = 0; i < c->hd; i++) o[i] = xr[i];
            for (int p = 0; p < half; p++) {
                double ex = pos[t] * pow((double)c->base, -2.0 * p / n) / (ff ? ff[p] : 1.0);
                double in = c->freq_scale * ex, th = in;
                if (c->ext_factor != 0.0f) {
                    double y = (p - lo) / fmax(0.001, hi - lo);
                    double ramp = 1 - fmin(1.0, fmax(0.0, y));
                    double mix = ramp * c->ext_factor;
                    th = in * (1 - mix) + ex * mix;
                }
                double cs = cos(th) * ms, sn = sin(th) * ms;
                int i0 = c->mode == LOOM_ROPE_NEOX ? p : 2 * p, i1 = c->mode == LOOM_ROPE_NEOX ? p + half : 2 * p + 1;
                double x0 = xr[i0], x1 = xr[i1];
                o[i0] = x0 * cs - x1 * sn;
                o[i1] = x0 * sn + x1 * cs;
            }
        }
}

static void run_rope(const rope_case *c) {
    size_t n = (size_t)c->hd * c->heads * c->T;
    float *x = fmalloc(n), *out[3] = {fmalloc(n), fmalloc(n), fmalloc(n)}, ff[64];
    double *ref = dmalloc(n);
    int32_t pos[16];
    fill_rnd(x, n, 2.0f);
    if (c->f16) round_f16(x, n);
    for (int t = 0; t < c->T; t++) pos[t] = t == 0 ? 0 : (int32_t)(rnd_u() * 9000);
    for (int i = 0; i < 64; i++) ff[i] = (float)(1.0 + 7.0 * rnd_u());
    for (int ti = 0; ti < 2; ti++) {
        int nth = ti == 0 ? 1 : 3;
        loom_ctx *ctx = nn_ctx(nth, false);
        loom_tensor *a;
        if (c->strided) { /* stored as [hd, T, heads], viewed as [hd, heads, T] */
            float *xs = fmalloc(n);
            for (int t = 0; t < c->T; t++)
                for (int h = 0; h < c->heads; h++)
                    memcpy(xs + ((size_t)h * c->T + t) * c->hd, x + ((size_t)t * c->heads + h) * c->hd,
                           (size_t)c->hd * 4);
            a = c->f16 ? nn_f16(ctx, xs, c->hd, c->T, c->heads, 1) : nn_f32(ctx, xs, c->hd, c->T, c->heads, 1);
            a = loom_permute(ctx, a, 0, 2, 1, 3);
            free(xs);
        } else {
            a = c->f16 ? nn_f16(ctx, x, c->hd, c->heads, c->T, 1) : nn_f32(ctx, x, c->hd, c->heads, c->T, 1);
        }
        int64_t pne[1] = {c->T};
        loom_tensor *pt = loom_from_i32(loom_ctx_input(ctx), pos, (size_t)c->T, 1, pne);
        loom_rope_opts o = loom_rope_default_opts();
        o.mode = (loom_rope_mode)c->mode;
        o.ext_factor = c->ext_factor;
        o.attn_factor = c->attn_factor;
        o.orig_ctx = c->orig_ctx;
        if (c->factors) {
            int64_t fne[1] = {c->n_dims / 2};
            o.factors = loom_from_f32(loom_ctx_input(ctx), ff, (size_t)(c->n_dims / 2), 1, fne);
        }
        loom_tensor *y = loom_rope(ctx, a, pt, c->n_dims, c->base, c->freq_scale, &o);
        CHECK_MSG(loom_tensor_type(y) == (c->f16 ? LOOM_TYPE_F16 : LOOM_TYPE_F32), "%s type", c->name);
        CHECK(loom_tensor_is_contiguous(y));
        if (c->f16) {
            int64_t ne[4] = {c->hd, c->heads, c->T, 1};
            loom_tensor *yf = loom_cpy(ctx, y, loom_empty(ctx, LOOM_TYPE_F32, 4, ne));
            y = yf;
        }
        loom_status s = nn_run(ctx, y, out[ti], n);
        CHECK_MSG(s == LOOM_OK, "%s: %s", c->name, loom_ctx_error(ctx));
        loom_ctx_free(ctx);
    }
    ref_rope(c, x, pos, c->factors ? ff : NULL, ref);
    double e = max_rel(out[0], ref, n);
    double tol = c->f16 ? 1e-3 : 2e-6;
    CHECK_MSG(e <= tol, "rope %s: max rel err %g > %g", c->name, e, tol);
    CHECK_MSG(memcmp(out[0], out[1], n * 4) == 0, "rope %s: 1 vs 3 threads differ", c->name);
    free(x);
    for (int i = 0; i < 3; i++) free(out[i]);
    free(ref);
}

static void test_rope(void) {
    const rope_case cases[] = {
        {"normal", LOOM_ROPE_NORMAL, 16, 16, 3, 5, 10000.0f, 1.0f, 0.0f, 1.0f, 131072, false, false, false},
        {"neox", LOOM_ROPE_NEOX, 32, 32, 2, 4, 500000.0f, 1.0f, 0.0f, 1.0f, 131072, false, false, false},
        {"neox-partial", LOOM_ROPE_NEOX, 8, 24, 2, 3, 10000.0f, 1.0f, 0.0f, 1.0f, 131072, false, false, false},
        {"normal-partial-strided", LOOM_ROPE_NORMAL, 12, 20, 3, 4, 10000.0f, 1.0f, 0.0f, 1.0f, 131072, false,
         false, true},
        {"factors", LOOM_ROPE_NEOX, 16, 16, 2, 3, 10000.0f, 0.5f, 0.0f, 1.0f, 131072, true, false, false},
        {"yarn", LOOM_ROPE_NEOX, 64, 64, 2, 3, 150000.0f, 0.03125f, 1.0f, 1.0f, 4096, false, false, false},
        {"yarn-normal-attn", LOOM_ROPE_NORMAL, 32, 32, 1, 3, 10000.0f, 0.25f, 1.0f, 0.9f, 2048, false, false,
         false},
        {"f16", LOOM_ROPE_NEOX, 16, 16, 2, 3, 10000.0f, 1.0f, 0.0f, 1.0f, 131072, false, true, false},
        {"f16-strided", LOOM_ROPE_NORMAL, 8, 16, 2, 3, 10000.0f, 1.0f, 0.0f, 1.0f, 131072, false, true, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_rope(&cases[i]);
}

/* ---------------------------------------------------------------- attention */

typedef struct attn_case {
    int Dk, Dv, H, Hkv, T, L;
    loom_type kv; /* F32, F16, Q8_0 */
    bool mask;
    float softcap; /* > 0: scores soft-capped (loom_sdpa_ext) */
    bool sinks;    /* one sink logit per head, from g_sinks */
} attn_case;

static float g_sinks[64];

/* The float64 reference of nn_test_common.h for a case. */
static void ref_attn(const attn_case *c, const float *q, const float *k, const float *v, const float *mask,
                     int64_t mrow, float scale, double *out) {
    nn_ref_attn(c->Dk, c->Dv, c->H, c->Hkv, c->T, c->L, c->softcap, c->sinks ? g_sinks : NULL, q, k, v, mask, mrow,
                scale, out);
}

static loom_tensor *kv_tensor(loom_ctx *ctx, loom_type t, float *data, int64_t ne0, int64_t ne1, int64_t ne2) {
    if (t == LOOM_TYPE_F32) return nn_f32(ctx, data, ne0, ne1, ne2, 1);
    if (t == LOOM_TYPE_F16) {
        round_f16(data, (size_t)(ne0 * ne1 * ne2));
        return nn_f16(ctx, data, ne0, ne1, ne2, 1);
    }
    size_t rb = 0;
    loom_type_row_bytes(t, ne0, &rb);
    size_t rows = (size_t)(ne1 * ne2);
    unsigned char *qb = (unsigned char *)malloc(rb * rows);
    for (size_t r = 0; r < rows; r++) {
        loom_quantize_row(t, data + r * ne0, qb + r * rb, ne0);
        loom_dequantize_row(t, qb + r * rb, data + r * ne0, ne0); /* reference sees the stored values */
    }
    int64_t ne[3] = {ne0, ne1, ne2};
    loom_tensor *x = loom_from_bytes(loom_ctx_input(ctx), t, qb, rb * rows, 3, ne);
    free(qb);
    return x;
}

/* Runs sdpa with flash on/off; returns the output (caller frees) or NULL. */
static float *run_sdpa(const attn_case *c, bool flash, int nth, const float *q, float *k, float *v,
                       const float *maskf, int64_t mrow, float scale) {
    loom_ctx *ctx = nn_ctx(nth, flash);
    size_t no = (size_t)c->Dv * c->H * c->T;
    float *out = fmalloc(no);
    loom_tensor *qt = nn_f32(ctx, q, c->Dk, c->H, c->T, 1);
    loom_tensor *kt = kv_tensor(ctx, c->kv, k, c->Dk, c->Hkv, c->L);
    loom_tensor *vt;
    if (flash) {
        vt = kv_tensor(ctx, c->kv, v, c->Dv, c->Hkv, c->L);
    } else { /* PermutedV [L, Dv, Hkv] */
        float *vp = fmalloc((size_t)c->L * c->Dv * c->Hkv);
        for (int j = 0; j < c->L; j++)
            for (int g = 0; g < c->Hkv; g++)
                for (int d = 0; d < c->Dv; d++)
                    vp[((size_t)g * c->Dv + d) * c->L + j] = v[((size_t)j * c->Hkv + g) * c->Dv + d];
        vt = kv_tensor(ctx, c->kv, vp, c->L, c->Dv, c->Hkv);
        free(vp);
    }
    loom_tensor *mt = NULL;
    const int64_t tpad = ((c->T + 63) / 64) * 64;
    (void)mrow;
    if (maskf) mt = flash ? nn_f16(ctx, maskf, c->L, tpad, 1, 1) : nn_f32(ctx, maskf, c->L, tpad, 1, 1);
    loom_tensor *sk = c->sinks ? nn_f32(ctx, g_sinks, c->H, 1, 1, 1) : NULL;
    loom_tensor *y = loom_sdpa_ext(ctx, qt, kt, vt, mt, scale, c->softcap, sk);
    CHECK_EQ_INT(loom_tensor_ne(y, 0), c->Dv);
    CHECK_EQ_INT(loom_tensor_ne(y, 1), c->H);
    CHECK_EQ_INT(loom_tensor_ne(y, 2), c->T);
    loom_status s = nn_run(ctx, y, out, no);
    CHECK_MSG(s == LOOM_OK, "sdpa flash=%d: %s", flash, loom_ctx_error(ctx));
    loom_ctx_free(ctx);
    if (s) {
        free(out);
        return NULL;
    }
    return out;
}

/* loom_flash_attn called directly with v TRANSPOSED: the PermutedV layout [L, Dv, Hkv]
 * seen as [Dv, L, Hkv] (what loom_sdpa does for one query without flash attention);
 * any T. Returns the output or NULL. */
static float *run_fa_transposed(const attn_case *c, int nth, const float *q, float *k, float *v, const float *maskf,
                                float scale) {
    loom_ctx *ctx = nn_ctx(nth, false);
    size_t no = (size_t)c->Dv * c->H * c->T;
    float *out = fmalloc(no);
    loom_tensor *qt = nn_f32(ctx, q, c->Dk, c->H, c->T, 1);
    loom_tensor *kt = kv_tensor(ctx, c->kv, k, c->Dk, c->Hkv, c->L);
    float *vp = fmalloc((size_t)c->L * c->Dv * c->Hkv);
    for (int j = 0; j < c->L; j++)
        for (int g = 0; g < c->Hkv; g++)
            for (int d = 0; d < c->Dv; d++)
                vp[((size_t)g * c->Dv + d) * c->L + j] = v[((size_t)j * c->Hkv + g) * c->Dv + d];
    loom_tensor *vt = kv_tensor(ctx, c->kv, vp, c->L, c->Dv, c->Hkv);
    /* the rounded values back into v's order for the reference */
    for (int j = 0; j < c->L; j++)
        for (int g = 0; g < c->Hkv; g++)
            for (int d = 0; d < c->Dv; d++)
                v[((size_t)j * c->Hkv + g) * c->Dv + d] = vp[((size_t)g * c->Dv + d) * c->L + j];
    free(vp);
    const int64_t tpad = ((c->T + 63) / 64) * 64;
    loom_tensor *mt = maskf ? nn_f32(ctx, maskf, c->L, tpad, 1, 1) : NULL;
    loom_tensor *sk = c->sinks ? nn_f32(ctx, g_sinks, c->H, 1, 1, 1) : NULL;
    loom_tensor *y = loom_flash_attn_ext(ctx, loom_permute(ctx, qt, 0, 2, 1, 3), loom_permute(ctx, kt, 0, 2, 1, 3),
                                         loom_transpose(ctx, vt), mt, scale, c->softcap, sk);
    loom_status s = nn_run(ctx, y, out, no);
    CHECK_MSG(s == LOOM_OK, "flash (transposed v) %s T=%d L=%d: %s", loom_type_name(c->kv), c->T, c->L,
              loom_ctx_error(ctx));
    loom_ctx_free(ctx);
    if (s) {
        free(out);
        return NULL;
    }
    return out;
}

static void test_attn_case(const attn_case *c) {
    size_t nq = (size_t)c->Dk * c->H * c->T, nk = (size_t)c->Dk * c->Hkv * c->L,
           nv = (size_t)c->Dv * c->Hkv * c->L, no = (size_t)c->Dv * c->H * c->T;
    float *q = fmalloc(nq), *k = fmalloc(nk), *v = fmalloc(nv);
    fill_rnd(q, nq, 1.0f);
    fill_rnd(k, nk, 1.0f);
    fill_rnd(v, nv, 1.0f);
    /* rows padded to a multiple of 64 (flash requirement); causal with the batch at the end */
    int64_t tpad = ((c->T + 63) / 64) * 64, mrow = c->L;
    float *mask = NULL;
    if (c->mask) {
        mask = fmalloc((size_t)(c->L * tpad));
        for (int64_t t = 0; t < tpad; t++)
            for (int64_t j = 0; j < c->L; j++)
                mask[t * c->L + j] = (t < c->T && j <= c->L - c->T + t) ? 0.0f : -INFINITY;
        /* a few extra holes (e.g. another sequence's cells) */
        if (c->L > 3) mask[1] = -INFINITY;
        /* long caches: a whole leading range masked (a fully masked L chunk when split) */
        if (c->L >= 600)
            for (int64_t t = 0; t < tpad; t++)
                for (int64_t j = 0; j < 300; j++) mask[t * c->L + j] = -INFINITY;
        /* with sinks, a token that sees no key at all: its rows are 0 (all sink) */
        if (c->sinks && c->T >= 2)
            for (int64_t j = 0; j < c->L; j++) mask[j] = -INFINITY;
    }
    /* sink logits around the scores' range: some dominate a row, some hardly count */
    for (int h = 0; h < c->H && c->sinks; h++) g_sinks[h] = (float)(h % 5) - 1.5f;
    const float scale = 1.0f / sqrtf((float)c->Dk);
    /* the kv tensors round/dequantise k and v in place, so the reference sees stored values */
    float *kk = fmalloc(nk), *vv = fmalloc(nv);
    memcpy(kk, k, nk * 4);
    memcpy(vv, v, nv * 4);
    float *of = run_sdpa(c, true, 2, q, kk, vv, mask, mrow, scale);
    memcpy(kk, k, nk * 4);
    memcpy(vv, v, nv * 4);
    float *of3 = run_sdpa(c, true, 3, q, kk, vv, mask, mrow, scale);
    /* quantized K/V: no non-flash run, so kk / vv keep the stored values for the reference */
    const bool quant = c->kv == LOOM_TYPE_Q8_0 || c->kv == LOOM_TYPE_Q4_0;
    float *on = NULL;
    if (!quant) {
        memcpy(kk, k, nk * 4);
        memcpy(vv, v, nv * 4);
        on = run_sdpa(c, false, 3, q, kk, vv, mask, mrow, scale);
    }
    /* transposed v (F32 / F16 only: a block type cannot be transposed) */
    float *ot = NULL, *ot3 = NULL;
    if (!quant) {
        memcpy(kk, k, nk * 4);
        memcpy(vv, v, nv * 4);
        ot3 = run_fa_transposed(c, 3, q, kk, vv, mask, scale);
        memcpy(kk, k, nk * 4);
        memcpy(vv, v, nv * 4);
        ot = run_fa_transposed(c, 2, q, kk, vv, mask, scale);
    }
    double *ref = dmalloc(no);
    ref_attn(c, q, kk, vv, mask, mrow, scale, ref); /* kk/vv hold the stored (rounded) values */
    /* flash rounds q through k's vec_dot_type (F16; Q8_0 for Q8_0 / Q4_0 keys) and then
     * computes in float on the stored values: its reference takes that q */
    double *refq = dmalloc(no);
    float *qr = fmalloc(nq);
    memcpy(qr, q, nq * 4);
    if (c->kv == LOOM_TYPE_F16) round_f16(qr, nq);
    if (quant) {
        size_t rb = 0;
        loom_type_row_bytes(LOOM_TYPE_Q8_0, c->Dk, &rb);
        unsigned char *qb = (unsigned char *)malloc(rb);
        for (size_t r = 0; r < nq / (size_t)c->Dk; r++) {
            loom_quantize_row(LOOM_TYPE_Q8_0, qr + r * c->Dk, qb, c->Dk);
            loom_dequantize_row(LOOM_TYPE_Q8_0, qb, qr + r * c->Dk, c->Dk);
        }
        free(qb);
    }
    ref_attn(c, qr, kk, vv, mask, mrow, scale, refq);
    free(qr);
    const double tol_t = c->kv == LOOM_TYPE_F32 ? 1e-11 : 2e-6;
    if (ot) {
        double e = nmse(ot, ref, no);
        CHECK_MSG(e <= tol_t, "flash (transposed v) %s T=%d L=%d H=%d/%d: nmse %g > %g", loom_type_name(c->kv), c->T,
                  c->L, c->H, c->Hkv, e, tol_t);
    }
    if (ot && ot3) CHECK_MSG(memcmp(ot, ot3, no * 4) == 0, "flash (transposed v): 2 vs 3 threads differ");
    free(ot);
    free(ot3);
    /* flash against refq: float arithmetic on the stored K/V values and the rounded q
     * (measured nmse 3e-14 to 1.3e-13 for every type) */
    const double tol_f = 1e-11, tol = c->kv == LOOM_TYPE_F32 ? 1e-11 : 2e-6;
    if (of) {
        double e = nmse(of, refq, no);
        CHECK_MSG(e <= tol_f, "flash %s T=%d L=%d H=%d/%d: nmse %g > %g", loom_type_name(c->kv), c->T, c->L, c->H,
                  c->Hkv, e, tol_f);
    }
    if (of && of3) CHECK_MSG(memcmp(of, of3, no * 4) == 0, "flash: 2 vs 3 threads differ");
    if (on) {
        double e = nmse(on, ref, no);
        CHECK_MSG(e <= tol, "sdpa %s T=%d L=%d: nmse %g > %g", loom_type_name(c->kv), c->T, c->L, e, tol);
        if (of && c->kv == LOOM_TYPE_F32) {
            double m = 0;
            for (size_t i = 0; i < no; i++) m = fmax(m, fabs((double)of[i] - on[i]));
            CHECK_MSG(m <= 1e-5, "flash vs non-flash max diff %g", m);
        }
    }
    free(q);
    free(k);
    free(v);
    free(kk);
    free(vv);
    free(mask);
    free(of);
    free(of3);
    free(on);
    free(ref);
    free(refq);
}

static void test_attention(void) {
    const attn_case cases[] = {
        {64, 48, 4, 2, 1, 70, LOOM_TYPE_F32, true, 0.0f, false},   {64, 48, 4, 2, 5, 133, LOOM_TYPE_F32, true, 0.0f, false},
        {32, 32, 2, 2, 3, 10, LOOM_TYPE_F32, false, 0.0f, false},  {64, 64, 4, 1, 7, 65, LOOM_TYPE_F16, true, 0.0f, false},
        {64, 64, 6, 2, 1, 200, LOOM_TYPE_F16, true, 0.0f, false},  {64, 64, 2, 1, 4, 90, LOOM_TYPE_Q8_0, true, 0.0f, false},
        {128, 128, 2, 2, 2, 64, LOOM_TYPE_F32, true, 0.0f, false},
        /* decode with long L: the flash kernel splits L into chunks */
        {64, 64, 4, 2, 1, 700, LOOM_TYPE_F16, true, 0.0f, false},  {64, 48, 4, 4, 2, 1030, LOOM_TYPE_F32, true, 0.0f, false},
        {64, 64, 2, 1, 1, 300, LOOM_TYPE_F32, false, 0.0f, false},
        /* quantized rows share cache lines across kv heads: items take several heads
         * (4 with 2 threads, 2 with 3 here; the outputs must not differ) */
        {64, 64, 8, 4, 1, 1030, LOOM_TYPE_Q8_0, true, 0.0f, false}, {64, 64, 8, 4, 1, 1030, LOOM_TYPE_Q4_0, true, 0.0f, true},
        {64, 64, 8, 4, 3, 1030, LOOM_TYPE_Q8_0, false, 0.0f, false},
        /* prompt blocks: several blocks of TB tokens and a partial one; G 8, 1 and 3;
         * Dk / Dv not multiples of 16; Q4_0 K/V */
        {64, 64, 16, 2, 70, 150, LOOM_TYPE_F16, true, 0.0f, false}, {72, 40, 2, 2, 67, 90, LOOM_TYPE_F32, true, 0.0f, false},
        {64, 64, 6, 2, 30, 96, LOOM_TYPE_Q8_0, true, 0.0f, false},   {64, 64, 6, 2, 30, 96, LOOM_TYPE_Q4_0, true, 0.0f, false},
        /* soft-capped scores and sinks: decode (transposed v, L chunks), prompt blocks,
         * a quantized cache, no mask */
        {64, 64, 4, 2, 1, 70, LOOM_TYPE_F32, true, 0.5f, true},
        {64, 64, 8, 2, 1, 700, LOOM_TYPE_F16, true, 0.0f, true},
        {64, 48, 4, 2, 5, 133, LOOM_TYPE_F32, true, 0.3f, false},
        {64, 64, 16, 2, 70, 150, LOOM_TYPE_F16, true, 0.4f, true},
        {64, 64, 6, 2, 30, 96, LOOM_TYPE_Q8_0, true, 0.0f, true},
        {64, 48, 4, 4, 2, 1030, LOOM_TYPE_F32, true, 0.5f, true},
        {32, 32, 2, 2, 3, 10, LOOM_TYPE_F32, false, 0.4f, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) test_attn_case(&cases[i]);
}

/* Flash attention computes each query row on its own: the rows of a T-token call are
 * bit-identical to calls with that token alone (its mask row), whatever TB blocks the
 * tokens fall in; what serving many sequences relies on (a token's attention must
 * not depend on what its batch holds). L <= 256, so neither call splits L. */
static void test_attention_rows_independent(void) {
    const attn_case cases[] = {
        {64, 64, 16, 2, 20, 120, LOOM_TYPE_F16, true, 0.0f, false}, {64, 64, 2, 2, 70, 200, LOOM_TYPE_F32, true, 0.0f, false},
        {64, 64, 6, 2, 11, 64, LOOM_TYPE_Q8_0, true, 0.0f, false},  {32, 32, 8, 1, 9, 40, LOOM_TYPE_Q4_0, true, 0.0f, false},
    };
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const attn_case *c = &cases[ci];
        size_t nq = (size_t)c->Dk * c->H * c->T, nk = (size_t)c->Dk * c->Hkv * c->L,
               nv = (size_t)c->Dv * c->Hkv * c->L, no1 = (size_t)c->Dv * c->H;
        float *q = fmalloc(nq), *k = fmalloc(nk), *v = fmalloc(nv), *kk = fmalloc(nk), *vv = fmalloc(nv);
        float *mask = fmalloc((size_t)c->L * 64 * ((c->T + 63) / 64)), *m1 = fmalloc((size_t)c->L * 64);
        fill_rnd(q, nq, 1.0f);
        fill_rnd(k, nk, 1.0f);
        fill_rnd(v, nv, 1.0f);
        const int64_t tpad = ((c->T + 63) / 64) * 64;
        for (int64_t t = 0; t < tpad; t++) /* causal, with another "sequence's" cells in between */
            for (int64_t j = 0; j < c->L; j++)
                mask[t * c->L + j] = (t < c->T && j <= c->L - c->T + t && (j + t) % 7 != 3) ? 0.0f : -INFINITY;
        memcpy(kk, k, nk * 4);
        memcpy(vv, v, nv * 4);
        float *all = run_sdpa(c, true, 2, q, kk, vv, mask, c->L, 0.125f);
        int bad = 0;
        for (int t = 0; t < c->T && all; t++) {
            attn_case one = *c;
            one.T = 1;
            for (int64_t i = 0; i < c->L * 64; i++) m1[i] = i < c->L ? mask[(size_t)t * c->L + i] : -INFINITY;
            memcpy(kk, k, nk * 4);
            memcpy(vv, v, nv * 4);
            float *o = run_sdpa(&one, true, 1, q + (size_t)t * c->H * c->Dk, kk, vv, m1, c->L, 0.125f);
            if (o && memcmp(o, all + (size_t)t * no1, no1 * 4) != 0) bad++;
            free(o);
        }
        CHECK_MSG(all && bad == 0, "flash %s T=%d G=%d: %d token(s) differ from the token alone", loom_type_name(c->kv),
                  c->T, c->H / c->Hkv, bad);
        free(all);
        free(q), free(k), free(v), free(kk), free(vv), free(mask), free(m1);
    }
}

/* loom_sdpa_ext / loom_flash_attn_ext reject bad extras with the documented status and a
 * poisoned result: a negative, NaN or infinite soft cap (INVALID_ARG); sinks of the wrong
 * length, type or layout (SHAPE). A valid call beside them still builds. */
static void test_attention_extras_errors(void) {
    static float qd[16 * 4 * 2], kd[16 * 2 * 8], vd[16 * 2 * 8], sd[8];
    const float bad_cap[] = {-1.0f, NAN, INFINITY};
    for (int c = 0; c < 5; c++)
        for (int flash = 0; flash < 2; flash++) {
            loom_ctx *ctx = nn_ctx(1, flash);
            loom_tensor *q = nn_f32(ctx, qd, 16, 4, 2, 1), *k = nn_f32(ctx, kd, 16, 2, 8, 1);
            loom_tensor *v = flash ? nn_f32(ctx, vd, 16, 2, 8, 1) : nn_f32(ctx, vd, 8, 16, 2, 1);
            float cap = 0.0f;
            loom_tensor *sk = NULL;
            loom_status want = LOOM_ERR_SHAPE;
            if (c < 3) {
                cap = bad_cap[c];
                want = LOOM_ERR_INVALID_ARG;
            } else if (c == 3) {
                sk = nn_f32(ctx, sd, 3, 1, 1, 1); /* 3 values for 4 heads */
            } else {
                sk = loom_transpose(ctx, nn_f32(ctx, sd, 2, 2, 1, 1)); /* 4 values, not contiguous */
            }
            loom_tensor *y = loom_sdpa_ext(ctx, q, k, v, NULL, 0.25f, cap, sk);
            CHECK_MSG(loom_tensor_is_poison(y) && loom_ctx_status(ctx) == want,
                      "sdpa_ext case %d flash %d: status %s (%s)", c, flash, loom_status_name(loom_ctx_status(ctx)),
                      loom_ctx_error(ctx));
            loom_ctx_free(ctx);
            ctx = nn_ctx(1, true);
            q = nn_f32(ctx, qd, 16, 2, 4, 1); /* [Dk, T, H] */
            k = nn_f32(ctx, kd, 16, 8, 2, 1);
            v = nn_f32(ctx, vd, 16, 8, 2, 1);
            if (c == 3) sk = nn_f32(ctx, sd, 3, 1, 1, 1);
            else if (c == 4) sk = loom_transpose(ctx, nn_f32(ctx, sd, 2, 2, 1, 1));
            y = loom_flash_attn_ext(ctx, q, k, v, NULL, 0.25f, cap, sk);
            CHECK_MSG(loom_tensor_is_poison(y) && loom_ctx_status(ctx) == want, "flash_attn_ext case %d: status %s (%s)",
                      c, loom_status_name(loom_ctx_status(ctx)), loom_ctx_error(ctx));
            loom_ctx_free(ctx);
        }
    loom_ctx *ctx = nn_ctx(1, true);
    loom_tensor *y = loom_sdpa_ext(ctx, nn_f32(ctx, qd, 16, 4, 2, 1), nn_f32(ctx, kd, 16, 2, 8, 1),
                                   nn_f32(ctx, vd, 16, 2, 8, 1), NULL, 0.25f, 0.5f, nn_f32(ctx, sd, 4, 1, 1, 1));
    CHECK_MSG(!loom_tensor_is_poison(y) && loom_ctx_status(ctx) == LOOM_OK, "valid sdpa_ext: %s", loom_ctx_error(ctx));
    loom_ctx_free(ctx);
}

int main(void) {
    test_rope();
    test_attention();
    test_attention_rows_independent();
    test_attention_extras_errors();
    return test_finish("test_cpu_ops_nn_attn");
}
