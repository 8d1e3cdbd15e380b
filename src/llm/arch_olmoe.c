/*
 * arch_olmoe.c - OLMoE (general.architecture "olmoe"), as llama.cpp's olmoe graph: the
 * llama block with RMS norms of the whole q and k projections (before the per-head
 * split) and a mixture of experts: softmax over all experts, top-k, weights not
 * renormalised.
 *
 * minimax-m2 (MiniMax-M2): the same block with GQA, partial neox rope, and a sigmoid (or
 * softmax, expert_gating_func) router with the selection bias exp_probs_b, weights
 * renormalised.
 *
 *   per layer: x = rms_norm(h) * attn_norm; q = rms_norm(Wq x) * q_norm;
 *     k = rms_norm(Wk x) * k_norm; v = Wv x; rope(q, k) (neox); h += Wo attn(q, k, v)
 *     x = rms_norm(h) * ffn_norm; h += moe(x)
 */
#include <math.h>
#include <string.h>

#include "arch.h"

static bool is_m2(const loom_model_hparams *hp) { return !strcmp(hp->arch, "minimax-m2"); }

loom_status llm_olmoe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_arch_moe_keys(g, hp, hx, err);
    if (s) return s;
    hx->n_ff_exp = hp->n_ff; /* llama.cpp: the experts are feed_forward_length wide */
    if (!is_m2(hp)) return LOOM_OK;
    /* minimax-m2: the router's function (1 softmax, 2 sigmoid; the converter writes 2) */
    int64_t v;
    if ((s = llm_get_int_key(g, hp->arch, "expert_gating_func", false, 2, &v, err))) return s;
    if (v != 1 && v != 2)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s.expert_gating_func = %lld is not supported (1 softmax, "
                              "2 sigmoid)", hp->arch, (long long)v);
    hx->expert_gating = (int)v - 1;
    return LOOM_OK;
}

loom_status llm_olmoe_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    loom_status st = LOOM_OK;
    const int64_t E = hp->n_embd, NE = hx->n_expert, FE = hx->n_ff_exp;
    const int64_t HQ = (int64_t)hp->n_head * hp->head_dim_k, HK = (int64_t)hp->n_head_kv * hp->head_dim_k;
    if ((st = llm_bind_embd_output(m, err))) return st;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        llm_bind_attn(be, hp, L, il, err, &st);
        L->q_norm = llm_bind_tensor(be, true, HQ, 1, 1, err, &st, "blk.%d.attn_q_norm.weight", il);
        L->k_norm = llm_bind_tensor(be, true, HK, 1, 1, err, &st, "blk.%d.attn_k_norm.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        llm_bind_experts(be, L, il, E, FE, NE, err, &st);
        if (is_m2(hp)) L->ffn_exp_probs_b = llm_bind_tensor(be, true, NE, 1, 1, err, &st, "blk.%d.exp_probs_b.bias", il);
    }
    return st;
}

loom_tensor *llm_olmoe_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens, H = hp->n_head, HKV = hp->n_head_kv, DK = hp->head_dim_k, DV = hp->head_dim_v;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    const float kq_scale = 1.0f / sqrtf((float)DK);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        int64_t ne_q[3] = {DK, H, T}, ne_k[3] = {DK, HKV, T}, ne_v[3] = {DV, HKV, T};
        loom_tensor *q = loom_rms_norm(ctx, loom_mul_mat(ctx, ly->wq, x), ly->q_norm, eps);
        loom_tensor *k = loom_rms_norm(ctx, loom_mul_mat(ctx, ly->wk, x), ly->k_norm, eps);
        loom_tensor *v = loom_reshape(ctx, loom_mul_mat(ctx, ly->wv, x), 3, ne_v);
        q = llm_named(llm_rope(m, ctx, loom_reshape(ctx, q, 3, ne_q), in.pos, il, NULL), "q", il);
        k = llm_named(llm_rope(m, ctx, loom_reshape(ctx, k, 3, ne_k), in.pos, il, NULL), "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, kq_scale, 0.0f, NULL);
        x = llm_named(loom_mul_mat(ctx, ly->wo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        x = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        x = is_m2(hp) ? llm_moe_ffn(ctx, ly, x, m->hx.n_expert, m->hx.n_expert_used,
                                    m->hx.expert_gating ? LLM_MOE_SIGMOID : LLM_MOE_SOFTMAX, true, 0.0f, il)
                      : llm_moe_ffn(ctx, ly, x, m->hx.n_expert, m->hx.n_expert_used, LLM_MOE_SOFTMAX, false, 0.0f, il);
        h = llm_named(loom_add(ctx, x, h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
