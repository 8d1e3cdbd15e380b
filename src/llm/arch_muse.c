/*
 * arch_muse.c - Muse Glimmer (general.architecture "muse-glimmer") and Talkie ("talkie"),
 * as llama.cpp's graphs of those names.
 *
 * muse-glimmer:
 *   h = rms_norm(token_embd[tokens])                            (no weight)
 *   per layer il:
 *     x = rms_norm(h) * attn_norm
 *     q, k, v = W x; q, k = rms_norm per head * q/k_norm; rope (normal) on sliding
 *     layers only, with rope.freq_base_swa (default rope.freq_base); full layers NoPE
 *     a = attention(q, k, v) * sigmoid(Wgate x);  h = h + rms_norm(Wo a) * post_attention_norm
 *     n = rms_norm(h) * ffn_norm;  h = h + rms_norm(mlp(n)) * post_ffw_norm
 *   (the two post norms with eps 1e-8, as llama.cpp)
 *   logits = softcap(Woutput (rms_norm(h) * output_norm) * logit_scale)
 *   Sliding layers: attention.sliding_window_pattern, one boolean per layer (the
 *   converter's) or a period; without the key no layer slides (llama.cpp's reading).
 *
 * talkie (no norm weights; the converter writes F32's epsilon):
 *   e = rms_norm(token_embd[tokens]);  h = e
 *   per layer il:
 *     x = rms_norm(h);  q, k, v = W x;  rope (neox)
 *     q = rms_norm per head * attn_q_norm [1, heads] (one gain per head);  k = rms_norm per head
 *     h = h + Wo attention(q, k, v)
 *     h = h + mlp(rms_norm(h)) + e * layer_output_scale        (one value per layer)
 *   logits = Woutput rms_norm(h) * logit_scale
 *   The attention output's and the MLP down projection's gains are their ".scale"
 *   tensors (model.c's generic weight scales).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

static loom_status logit_scale_key(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx,
                                   loom_error *err) {
    double v;
    bool has;
    loom_status s = llm_get_float_key(g, hp->arch, "logit_scale", 0.0, &v, &has, err);
    if (!s && !has) s = loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s.logit_scale' is missing", hp->arch);
    if (!s && !(isfinite(v) && fabs(v) < 1e6))
        s = loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.logit_scale = %g is out of range", hp->arch, v);
    hx->logit_scale = (float)v;
    return s;
}

loom_status llm_muse_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = logit_scale_key(g, hp, hx, err);
    if (s || !strcmp(hp->arch, "talkie")) return s;
    int64_t w;
    double d;
    if ((s = llm_get_int_key(g, hp->arch, "attention.sliding_window", true, 0, &w, err))) return s;
    if (w < 1 || w > ((int64_t)1 << 30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window = %lld is out of range",
                              hp->arch, (long long)w);
    hx->n_swa = (int)w;
    if ((s = llm_arch_swa_layers(g, hp, hx, err))) return s;
    if ((s = llm_get_float_key(g, hp->arch, "final_logit_softcapping", 0.0, &d, NULL, err))) return s;
    if (!(d >= 0 && d < 1e6))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.final_logit_softcapping = %g is out of range", hp->arch, d);
    hx->final_softcap = (float)d;
    if ((s = llm_get_float_key(g, hp->arch, "rope.freq_base_swa", hp->rope_base, &d, NULL, err))) return s;
    if (!(d > 1 && d < 1e12))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.freq_base_swa = %g is out of range", hp->arch, d);
    hx->rope_base_swa = (float)d;
    hx->rope_scale_swa = hp->rope_freq_scale;
    return LOOM_OK;
}

loom_status llm_muse_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff, HQ = (int64_t)hp->n_head * hp->head_dim_k;
    const bool talkie = !strcmp(hp->arch, "talkie");
    loom_status st = llm_bind_embd_output_norm(m, talkie ? NULL : "output_norm.weight", err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        llm_bind_attn_any(be, hp, L, il, false, err, &st);
        L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        if (talkie) {
            L->q_norm = llm_bind_tensor(be, true, 1, hp->n_head, 1, err, &st, "blk.%d.attn_q_norm.weight", il);
            L->out_scale = llm_bind_tensor(be, true, 1, 1, 1, err, &st, "blk.%d.layer_output_scale.weight", il);
            continue;
        }
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->attn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_attention_norm.weight", il);
        llm_bind_qk_norm(be, hp, L, il, true, err, &st);
        L->attn_gate = llm_bind_tensor(be, true, E, HQ, 1, err, &st, "blk.%d.attn_gate.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_ffw_norm.weight", il);
    }
    return st;
}

loom_tensor *llm_muse_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens, H = hp->n_head;
    const float eps = hp->rms_eps, post_eps = 1e-8f;
    const bool talkie = !strcmp(hp->arch, "talkie");
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_rms_norm(ctx, loom_get_rows(ctx, m->tok_embd, in.tok), NULL, eps), "inp_embd", -1);
    loom_tensor *e = h; /* talkie's skip from the embeddings */
    const int64_t ne_g[3] = {1, H, 1};
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, x, T, &q, &k, &v);
        if (talkie) {
            q = llm_rope(m, ctx, q, in.pos, il, NULL);
            k = llm_rope(m, ctx, k, in.pos, il, NULL);
            q = loom_mul(ctx, loom_rms_norm(ctx, q, NULL, eps), loom_reshape(ctx, ly->q_norm, 3, ne_g));
            k = loom_rms_norm(ctx, k, NULL, eps);
        } else {
            q = loom_rms_norm(ctx, q, ly->q_norm, eps);
            k = loom_rms_norm(ctx, k, ly->k_norm, eps);
            if (llm_layer_has_rope(m, il)) {
                q = llm_rope(m, ctx, q, in.pos, il, NULL);
                k = llm_rope(m, ctx, k, in.pos, il, NULL);
            }
        }
        llm_named(q, "q", il);
        llm_named(k, "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)hp->head_dim_k), 0.0f,
                                       NULL);
        if (!talkie) a = loom_mul(ctx, a, loom_sigmoid(ctx, loom_mul_mat(ctx, ly->attn_gate, x)));
        x = loom_mul_mat(ctx, ly->wo, a);
        if (!talkie) x = loom_rms_norm(ctx, x, ly->attn_post_norm, post_eps);
        x = llm_named(x, "attn_out", il);
        llm_last_rows(ctx, m, &in, il, &x, &r);
        if (talkie && il == hp->n_layer - 1) e = loom_get_rows(ctx, e, in.outs);
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *f = llm_swiglu_mlp(ctx, ly->ffn_gate, ly->ffn_up, ly->ffn_down, llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il));
        if (!talkie) f = loom_rms_norm(ctx, f, ly->ffn_post_norm, post_eps);
        h = loom_add(ctx, llm_named(f, "ffn_out", il), h);
        if (talkie) h = loom_add(ctx, h, loom_mul(ctx, e, ly->out_scale));
        h = llm_named(h, "l_out", il);
    }
    h = llm_named(loom_rms_norm(ctx, h, m->output_norm, eps), "result_norm", -1);
    loom_tensor *out = loom_scale(ctx, loom_mul_mat(ctx, m->output, h), m->hx.logit_scale);
    if (m->hx.final_softcap > 0.0f) out = llm_softcap(ctx, out, m->hx.final_softcap);
    return llm_named(out, "result_output", -1);
}
