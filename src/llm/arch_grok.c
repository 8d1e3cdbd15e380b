/*
 * arch_grok.c - Grok (general.architecture "grok": xAI's Grok-1 and Grok-2 / 2.5), as
 * llama.cpp's grok graph (which runs it without flash attention):
 *
 *   h = token_embd[tokens] * embedding_scale
 *   per layer il:
 *     x = rms_norm(h) * attn_norm
 *     q | k | v = W x (apart or fused attn_qkv); neox rope of q, k (YaRN when the file says)
 *     scores = c tanh(q.k * attention.output_scale / c), c = attn_logit_softcapping
 *     a = rms_norm(Wo softmax(scores) v) * attn_output_norm
 *     h = h + a
 *     n = rms_norm(h) * ffn_norm
 *     f = sum over the top-k experts e of w_e Wdown_e (gelu(Wgate_e n) * Wup_e n)
 *         (softmax router, top-k weights renormalised; experts without ffn_gate_exps:
 *          gelu(Wup_e n); expert_feed_forward_length wide, default feed_forward_length)
 *     with a dense FFN (Grok-2): f = (f + Wdown (gelu(Wgate n) * Wup n)) * sqrt(2) / 2
 *     h = h + rms_norm(f) * layer_output_norm (or post_ffw_norm)
 *   logits = Woutput (rms_norm(h) * output_norm) * logit_scale, then
 *            c' tanh(logits / c') when final_logit_softcapping c' > 0
 *
 * Defaults of the keys (llama.cpp's for old files): logit_scale 1/sqrt(3), embedding_scale
 * 78.38367, attention.output_scale 1/sqrt(128), attn_logit_softcapping 30,
 * final_logit_softcapping 0, rope.scaling.yarn_beta_fast 8. rope.scaling.yarn_ext_factor
 * and yarn_attn_factor are read as llama.cpp reads them (an ext factor of 0 keeps the
 * file's attn factor; any other recomputes it from the scaling factor).
 * router_logit_softcapping and attention.temperature_length are range-checked and not
 * used, as in llama.cpp. GELU through the F16 table (loom_gelu_f16), as llama.cpp's CPU
 * geglu.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

static loom_status grok_float(const loom_gguf *g, const loom_model_hparams *hp, const char *key, double def, double lo,
                              double hi, float *out, loom_error *err) {
    double v;
    loom_status s = llm_get_float_key(g, hp->arch, key, def, &v, NULL, err);
    if (s) return s;
    if (!(v >= lo && v <= hi))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.%s = %g is out of range [%g, %g]", hp->arch, key, v, lo, hi);
    *out = (float)v;
    return LOOM_OK;
}

loom_status llm_grok_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_arch_moe_keys(g, hp, hx, err);
    if (s) return s;
    char key[128];
    snprintf(key, sizeof key, "%s.expert_feed_forward_length", hp->arch);
    if (loom_gguf_find_key(g, key) < 0) hx->n_ff_exp = hp->n_ff; /* Grok-1: the experts are n_ff wide */
    if (hp->head_dim_k != hp->head_dim_v || hp->n_rot != hp->head_dim_k)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                              "model: %s needs key_length == value_length == rope.dimension_count (%d, %d, %d)", hp->arch,
                              hp->head_dim_k, hp->head_dim_v, hp->n_rot);
    float unused;
    if ((s = grok_float(g, hp, "logit_scale", 0.5773502691896257, -1e6, 1e6, &hx->logit_scale, err)) ||
        (s = grok_float(g, hp, "embedding_scale", 78.38367176906169, -1e6, 1e6, &hx->embd_scale, err)) ||
        (s = grok_float(g, hp, "attention.output_scale", 0.08838834764831845, -1e6, 1e6, &hx->kq_scale, err)) ||
        (s = grok_float(g, hp, "attn_logit_softcapping", 30.0, 1e-6, 1e6, &hx->attn_softcap, err)) ||
        (s = grok_float(g, hp, "final_logit_softcapping", 0.0, 0.0, 1e6, &hx->final_softcap, err)) ||
        (s = grok_float(g, hp, "router_logit_softcapping", 30.0, 0.0, 1e6, &unused, err)) ||
        (s = grok_float(g, hp, "rope.scaling.yarn_beta_fast", 8.0, -1e6, 1e6, &hx->yarn_beta_fast, err)) ||
        (s = grok_float(g, hp, "rope.scaling.yarn_beta_slow", 1.0, -1e6, 1e6, &hx->yarn_beta_slow, err)) ||
        (s = grok_float(g, hp, "rope.scaling.yarn_attn_factor", 1.0, 0.0, 1e6, &hx->yarn_attn_key, err)))
        return s;
    double ext;
    bool has_ext;
    if ((s = llm_get_float_key(g, hp->arch, "rope.scaling.yarn_ext_factor", 0.0, &ext, &has_ext, err))) return s;
    /* llama.cpp: a negative ext factor means "not set" (1 with YaRN scaling, else 0) */
    if (has_ext && ext >= 0) {
        if (!(ext <= 1e6))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.scaling.yarn_ext_factor = %g is out of range",
                                  hp->arch, ext);
        hx->yarn_ext_set = true;
        hx->yarn_ext = (float)ext;
    }
    int64_t tl;
    return llm_get_int_key(g, hp->arch, "attention.temperature_length", false, 0, &tl, err);
}

loom_status llm_grok_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, F = hp->n_ff, FE = hx->n_ff_exp, NE = hx->n_expert;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        llm_bind_attn_any(be, hp, L, il, false, err, &st);
        L->attn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_output_norm.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        /* Grok-2's dense FFN beside the experts (its gate optional, as llama.cpp's) */
        L->ffn_up = llm_bind_tensor(be, false, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        if (L->ffn_up) {
            L->ffn_gate = llm_bind_tensor(be, false, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
            L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        }
        L->ffn_gate_inp = llm_bind_tensor(be, true, E, NE, 1, err, &st, "blk.%d.ffn_gate_inp.weight", il);
        L->ffn_gate_exps = llm_bind_tensor(be, false, E, FE, NE, err, &st, "blk.%d.ffn_gate_exps.weight", il);
        L->ffn_up_exps = llm_bind_tensor(be, true, E, FE, NE, err, &st, "blk.%d.ffn_up_exps.weight", il);
        L->ffn_down_exps = llm_bind_tensor(be, true, FE, E, NE, err, &st, "blk.%d.ffn_down_exps.weight", il);
        L->ffn_post_norm = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.layer_output_norm.weight", il);
        if (!L->ffn_post_norm)
            L->ffn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_ffw_norm.weight", il);
    }
    return st;
}

loom_tensor *llm_grok_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    if (hx->embd_scale != 0.0f) h = loom_scale(ctx, h, hx->embd_scale);
    const llm_moe_opts mo = {.gating = LLM_MOE_SOFTMAX, .norm_w = true, .geglu = true};
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, x, T, &q, &k, &v);
        q = llm_named(llm_rope(m, ctx, q, in.pos, il, NULL), "q", il);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, hx->kq_scale, hx->attn_softcap, NULL);
        x = llm_linear(ctx, ly->wo, ly->bo, a);
        llm_last_rows(ctx, m, &in, il, &x, &r);
        x = llm_named(loom_rms_norm(ctx, x, ly->attn_post_norm, eps), "attn_out_norm", il);
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *f = llm_moe_ffn_opts(ctx, ly, n, hx->n_expert, hx->n_expert_used, &mo, il);
        if (ly->ffn_up) {
            loom_tensor *u = loom_mul_mat(ctx, ly->ffn_up, n);
            loom_tensor *act = ly->ffn_gate ? loom_mul(ctx, loom_gelu_f16(ctx, loom_mul_mat(ctx, ly->ffn_gate, n)), u)
                                            : loom_gelu_f16(ctx, u);
            f = loom_scale(ctx, loom_add(ctx, loom_mul_mat(ctx, ly->ffn_down, act), f), (float)(sqrt(2.0) / 2.0));
        }
        f = llm_named(loom_rms_norm(ctx, f, ly->ffn_post_norm, eps), "ffn_post_norm", il);
        h = llm_named(loom_add(ctx, f, h), "l_out", il);
    }
    h = llm_named(loom_rms_norm(ctx, h, m->output_norm, eps), "result_norm", -1);
    loom_tensor *out = loom_scale(ctx, loom_mul_mat(ctx, m->output, h), hx->logit_scale);
    if (hx->final_softcap > 0.0f) out = llm_softcap(ctx, out, hx->final_softcap);
    return llm_named(out, "result_output", -1);
}
