/*
 * arch_qwen2moe.c - Qwen1.5-MoE / Qwen2-MoE (general.architecture "qwen2moe"): the
 * qwen2 attention block (Q/K/V biases, neox rope) and a mixture of experts with a
 * sigmoid-gated shared expert, as llama.cpp's qwen2moe graph.
 *
 *   n = rms_norm(h) * ffn_norm
 *   h = h + MoE(n) (softmax router, top-k, weights not renormalized)
 *         + sigmoid(w_shexp_gate . n) * Wdown_s (silu(Wgate_s n) * Wup_s n)
 */
#include <math.h>

#include "arch.h"

loom_status llm_qwen2moe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_arch_moe_keys(g, hp, hx, err);
    if (s) return s;
    int64_t v;
    /* the shared expert's width: expert_shared_feed_forward_length, else feed_forward_length */
    if ((s = llm_get_int_key(g, hp->arch, "expert_shared_feed_forward_length", false, hp->n_ff, &v, err))) return s;
    if (v < 1 || v > ((int64_t)1 << 24))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_shared_feed_forward_length is out of range",
                              hp->arch);
    hx->n_ff_shexp = (int)v;
    return LOOM_OK;
}

loom_status llm_qwen2moe_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, NE = hx->n_expert, FE = hx->n_ff_exp, FS = hx->n_ff_shexp;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        llm_bind_attn_any(be, hp, L, il, false, err, &st);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_gate_inp = llm_bind_tensor(be, true, E, NE, 1, err, &st, "blk.%d.ffn_gate_inp.weight", il);
        L->ffn_gate_exps = llm_bind_tensor(be, true, E, FE, NE, err, &st, "blk.%d.ffn_gate_exps.weight", il);
        L->ffn_up_exps = llm_bind_tensor(be, true, E, FE, NE, err, &st, "blk.%d.ffn_up_exps.weight", il);
        L->ffn_down_exps = llm_bind_tensor(be, true, FE, E, NE, err, &st, "blk.%d.ffn_down_exps.weight", il);
        L->ffn_gate_inp_shexp = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_gate_inp_shexp.weight", il);
        L->ffn_gate_shexp = llm_bind_tensor(be, true, E, FS, 1, err, &st, "blk.%d.ffn_gate_shexp.weight", il);
        L->ffn_up_shexp = llm_bind_tensor(be, true, E, FS, 1, err, &st, "blk.%d.ffn_up_shexp.weight", il);
        L->ffn_down_shexp = llm_bind_tensor(be, true, FS, E, 1, err, &st, "blk.%d.ffn_down_shexp.weight", il);
    }
    return st;
}

loom_tensor *llm_qwen2moe_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, x, T, &q, &k, &v);
        q = llm_named(llm_rope(m, ctx, q, in.pos, il, NULL), "q", il);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)hp->head_dim_k),
                                       0.0f, NULL);
        x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *f = llm_moe_ffn(ctx, ly, n, hx->n_expert, hx->n_expert_used, LLM_MOE_SOFTMAX, false, 0.0f, il);
        loom_tensor *gate = loom_sigmoid(ctx, loom_mul_mat(ctx, ly->ffn_gate_inp_shexp, n)); /* [1, T] */
        loom_tensor *sh = loom_mul_mat(ctx, ly->ffn_down_shexp, loom_swiglu(ctx, loom_mul_mat(ctx, ly->ffn_gate_shexp, n),
                                                                               loom_mul_mat(ctx, ly->ffn_up_shexp, n)));
        f = loom_add(ctx, f, loom_mul(ctx, sh, gate));
        h = llm_named(loom_add(ctx, llm_named(f, "ffn_out", il), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
