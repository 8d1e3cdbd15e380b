/*
 * arch_dbrx.c - DBRX (general.architecture "dbrx": Databricks DBRX Base / Instruct), as
 * llama.cpp's dbrx graph:
 *
 *   per layer il:
 *     x = layer_norm(h) * attn_norm                        (LayerNorms without biases)
 *     q | k | v = clamp(Wqkv x, -attention.clamp_kqv, clamp_kqv) (fused, grouped KV heads)
 *     h = h + Wo attention(rope_neox(q), rope_neox(k), v)
 *     n = layer_norm(h) * attn_output_norm
 *     h = h + sum over the top-k experts e of w_e Wdown_e (silu(Wgate_e n) * Wup_e n)
 *         (softmax router, weights normalised, times expert_weights_scale; the experts
 *          feed_forward_length wide)
 *   logits = Woutput (layer_norm(h) * output_norm)
 */
#include <math.h>

#include "arch.h"

loom_status llm_dbrx_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_ln_hparams(g, hp, hx, err);
    if (s || (s = llm_arch_moe_keys(g, hp, hx, err))) return s;
    hx->n_ff_exp = hp->n_ff; /* the experts are feed_forward_length wide */
    double c, d;
    bool has;
    if ((s = llm_get_float_key(g, hp->arch, "attention.clamp_kqv", 0.0, &c, &has, err))) return s;
    if (!has) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s.attention.clamp_kqv' is missing", hp->arch);
    if (!(c >= 0 && c < 1e30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.clamp_kqv = %g is out of range", hp->arch, c);
    hx->clamp_kqv = (float)c;
    if ((s = llm_get_float_key(g, hp->arch, "expert_weights_scale", 0.0, &d, &has, err))) return s;
    if (has && !(d >= 0 && d < 1e6))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_weights_scale = %g is out of range", hp->arch, d);
    hx->expert_weights_scale = (float)d;
    return LOOM_OK;
}

loom_status llm_dbrx_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd;
    const int64_t QKV = (int64_t)hp->n_head * hp->head_dim_k + 2 * (int64_t)hp->n_head_kv * hp->head_dim_k;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->wqkv = llm_bind_tensor(be, true, E, QKV, 1, err, &st, "blk.%d.attn_qkv.weight", il);
        L->wo = llm_bind_tensor(be, true, (int64_t)hp->n_head * hp->head_dim_v, E, 1, err, &st, "blk.%d.attn_output.weight",
                                il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_output_norm.weight", il);
        llm_bind_experts(be, L, il, E, m->hx.n_ff_exp, m->hx.n_expert, err, &st);
    }
    return st;
}

loom_tensor *llm_dbrx_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_layer_norm(ctx, h, ly->attn_norm, NULL, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_clamped(ctx, hp, ly, x, T, m->hx.clamp_kqv, &q, &k, &v);
        q = llm_named(llm_rope(m, ctx, q, in.pos, il, NULL), "q", il);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)hp->head_dim_k), 0.0f,
                                       NULL);
        x = llm_named(loom_mul_mat(ctx, ly->wo, a), "attn_out", il);
        llm_last_rows(ctx, m, &in, il, &x, &r);
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_layer_norm(ctx, h, ly->ffn_norm, NULL, eps), "ffn_norm", il);
        loom_tensor *f = llm_moe_ffn_ext(ctx, ly, n, m->hx.n_expert, m->hx.n_expert_used, LLM_MOE_SOFTMAX, true,
                                         m->hx.expert_weights_scale, 0.0f, il);
        h = llm_named(loom_add(ctx, llm_named(f, "ffn_out", il), h), "l_out", il);
    }
    h = llm_named(loom_layer_norm(ctx, h, m->output_norm, NULL, eps), "result_norm", -1);
    return llm_named(loom_mul_mat(ctx, m->output, h), "result_output", -1);
}
