/*
 * arch_olmo2.c - OLMo 1 (olmo, at the end) and OLMo 2 / Olmo 3 (general.architecture
 * "olmo2"): post-norm blocks
 * with q/k norms over the whole projection, as llama.cpp's olmo2 graph.
 *
 *   h = token_embd[tokens]
 *   per layer il (no pre-norms):
 *     q = rms_norm(Wq h) * q_norm, k = rms_norm(Wk h) * k_norm   (over H*D, not per head)
 *     q, k = rope (neox; a sliding layer: rope.freq_base_swa (default rope.freq_base),
 *                  no scaling)
 *     h = h + rms_norm(Wo attention(q, k, Wv h)) * post_attention_norm
 *     h = h + rms_norm(Wdown (silu(Wgate h) * Wup h)) * post_ffw_norm
 *   logits = Woutput (rms_norm(h) * output_norm)
 * Sliding window (Olmo 3): attention.sliding_window with the period of
 * sliding_window_pattern (default 4: three sliding layers, then a full one). The
 * converter writes the pattern as one boolean per layer; llama.cpp reads only a number
 * there and falls back to 4. Loom reads the list and takes it when it is a period
 * pattern (the converter's default list is exactly period 4); another list is refused.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

/* The period p of a per-layer list of "sliding" flags (il % p < p - 1), 0 when no
 * layer slides, or -1. */
static int period_of(const uint8_t *flags, int n) {
    bool any = false;
    for (int il = 0; il < n; il++) any = any || flags[il] != 0;
    if (!any) return 0;
    for (int p = 1; p <= n + 1; p++) {
        bool ok = true;
        for (int il = 0; il < n && ok; il++) ok = (flags[il] != 0) == (p <= 1 || il % p < p - 1);
        if (ok) return p;
    }
    return -1;
}

loom_status llm_olmo2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    char key[96];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", hp->arch);
    int64_t ki = loom_gguf_find_key(g, key);
    int period = 4;
    if (ki >= 0 && loom_gguf_kv_type(g, ki) == LOOM_GGUF_ARRAY) {
        loom_gguf_vtype et;
        uint64_t n;
        const void *data;
        if (loom_gguf_kv_arr(g, ki, &et, &data, &n) || et != LOOM_GGUF_BOOL || n != (uint64_t)hp->n_layer)
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s' must be a number or one boolean per layer (%d)",
                                  key, hp->n_layer);
        period = period_of(data, hp->n_layer);
        if (period < 0)
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                                  "model: '%s': sliding layers that do not repeat with a period are not supported", key);
    }
    loom_status s;
    if (ki < 0 || loom_gguf_kv_type(g, ki) != LOOM_GGUF_ARRAY) {
        if ((s = llm_arch_swa_keys(g, hp, hx, false, 0, 4, err))) return s;
    } else { /* the list's period with the window key, checked as llm_arch_swa_keys does */
        int64_t w;
        if ((s = llm_get_int_key(g, hp->arch, "attention.sliding_window", false, 0, &w, err))) return s;
        if (w < 0 || w > ((int64_t)1 << 30))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window = %lld is out of range",
                                  hp->arch, (long long)w);
        hx->n_swa = period == 0 ? 0 : (int)w; /* every layer full: no window */
        hx->swa_period = period == 1 ? 0 : period; /* every layer sliding: llm_layer_is_swa's period 0 */
    }
    double v;
    if ((s = llm_get_float_key(g, hp->arch, "rope.freq_base_swa", hp->rope_base, &v, NULL, err))) return s;
    if (!(v > 1)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.freq_base_swa = %g is out of range", hp->arch, v);
    hx->rope_base_swa = (float)v;
    hx->rope_scale_swa = 1.0f;
    return LOOM_OK;
}

loom_status llm_olmo2_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    loom_status st = LOOM_OK;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    const int64_t HQ = (int64_t)hp->n_head * hp->head_dim_k, HK = (int64_t)hp->n_head_kv * hp->head_dim_k;
    if ((st = llm_bind_embd_output(m, err))) return st;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        llm_bind_attn_qkv(be, hp, L, il, err, &st);
        L->wo = llm_bind_tensor(be, true, (int64_t)hp->n_head * hp->head_dim_v, E, 1, err, &st,
                                "blk.%d.attn_output.weight", il);
        L->q_norm = llm_bind_tensor(be, true, HQ, 1, 1, err, &st, "blk.%d.attn_q_norm.weight", il);
        L->k_norm = llm_bind_tensor(be, true, HK, 1, 1, err, &st, "blk.%d.attn_k_norm.weight", il);
        L->attn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_attention_norm.weight", il);
        L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        L->ffn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_ffw_norm.weight", il);
    }
    return st;
}

loom_tensor *llm_olmo2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens, H = hp->n_head, HKV = hp->n_head_kv, DK = hp->head_dim_k, DV = hp->head_dim_v;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        int64_t ne_q[3] = {DK, H, T}, ne_k[3] = {DK, HKV, T}, ne_v[3] = {DV, HKV, T};
        loom_tensor *q = loom_rms_norm(ctx, loom_mul_mat(ctx, ly->wq, h), ly->q_norm, eps);
        loom_tensor *k = loom_rms_norm(ctx, loom_mul_mat(ctx, ly->wk, h), ly->k_norm, eps);
        loom_tensor *v = loom_reshape(ctx, loom_mul_mat(ctx, ly->wv, h), 3, ne_v);
        q = llm_named(llm_rope(m, ctx, loom_reshape(ctx, q, 3, ne_q), in.pos, il, NULL), "q", il);
        k = llm_named(llm_rope(m, ctx, loom_reshape(ctx, k, 3, ne_k), in.pos, il, NULL), "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)DK), 0.0f, NULL);
        loom_tensor *x = llm_named(loom_mul_mat(ctx, ly->wo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        x = llm_named(loom_rms_norm(ctx, x, ly->attn_post_norm, eps), "attn_post_norm", il);
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *g = loom_mul_mat(ctx, ly->ffn_gate, h), *u = loom_mul_mat(ctx, ly->ffn_up, h);
        x = loom_mul_mat(ctx, ly->ffn_down, loom_swiglu(ctx, g, u));
        x = llm_named(loom_rms_norm(ctx, x, ly->ffn_post_norm, eps), "ffn_post_norm", il);
        h = llm_named(loom_add(ctx, x, h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}

/*
 * OLMo 1 (general.architecture "olmo"), as llama.cpp's olmo graph: the llama block with
 * LayerNorms that have no weights (attention.layer_norm_epsilon), q/k/v clamped to
 * [-attention.clamp_kqv, clamp_kqv] when the key is there (clip_qkv), normal rope, no
 * output norm weights either.
 */
loom_status llm_olmo_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_ln_hparams(g, hp, hx, err);
    if (s) return s;
    double c;
    bool has;
    if ((s = llm_get_float_key(g, hp->arch, "attention.clamp_kqv", 0.0, &c, &has, err))) return s;
    if (has && !(c > 0 && c < 1e30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.clamp_kqv = %g must be > 0", hp->arch, c);
    hx->clamp_kqv = has ? (float)c : 0.0f;
    return LOOM_OK;
}

loom_status llm_olmo_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    loom_status st = llm_bind_embd_output_norm(m, NULL, err); /* no output norm weights */
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        llm_bind_attn_qkv(be, hp, L, il, err, &st);
        L->wo = llm_bind_tensor(be, true, (int64_t)hp->n_head * hp->head_dim_v, E, 1, err, &st,
                                "blk.%d.attn_output.weight", il);
        L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
    }
    return st;
}

static loom_tensor *clamped(loom_ctx *ctx, loom_tensor *x, float c) { return c > 0.0f ? loom_clamp(ctx, x, -c, c) : x; }

loom_tensor *llm_olmo_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens, H = hp->n_head, HKV = hp->n_head_kv, DK = hp->head_dim_k, DV = hp->head_dim_v;
    const float eps = hp->rms_eps, c = m->hx.clamp_kqv;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_layer_norm(ctx, h, NULL, NULL, eps), "attn_norm", il);
        const int64_t ne_q[3] = {DK, H, T}, ne_k[3] = {DK, HKV, T}, ne_v[3] = {DV, HKV, T};
        loom_tensor *q = loom_reshape(ctx, clamped(ctx, loom_mul_mat(ctx, ly->wq, x), c), 3, ne_q);
        loom_tensor *k = loom_reshape(ctx, clamped(ctx, loom_mul_mat(ctx, ly->wk, x), c), 3, ne_k);
        loom_tensor *v = loom_reshape(ctx, clamped(ctx, loom_mul_mat(ctx, ly->wv, x), c), 3, ne_v);
        q = llm_rope(m, ctx, q, in.pos, il, NULL);
        k = llm_rope(m, ctx, k, in.pos, il, NULL);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)DK), 0.0f, NULL);
        x = loom_mul_mat(ctx, ly->wo, a);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        x = llm_named(loom_layer_norm(ctx, h, NULL, NULL, eps), "ffn_norm", il);
        loom_tensor *g = loom_mul_mat(ctx, ly->ffn_gate, x), *u = loom_mul_mat(ctx, ly->ffn_up, x);
        h = llm_named(loom_add(ctx, loom_mul_mat(ctx, ly->ffn_down, loom_swiglu(ctx, g, u)), h), "l_out", il);
    }
    h = llm_named(loom_layer_norm(ctx, h, NULL, NULL, eps), "result_norm", -1);
    return llm_named(loom_mul_mat(ctx, m->output, h), "result_output", -1);
}
