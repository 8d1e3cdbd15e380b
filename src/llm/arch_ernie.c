/*
 * arch_ernie.c - ERNIE 4.5 MoE (general.architecture "ernie4_5-moe": 21B-A3B, 300B-A47B),
 * as llama.cpp's graph: the llama block (normal rope, optional q/k/v biases) where layers
 * il >= leading_dense_block_count with (il + 1) % interleave_moe_layer_step == 0 run
 * experts of expert_feed_forward_length (softmax router, selection bias exp_probs_b when
 * present, weights renormalised) plus shared experts of
 * expert_shared_feed_forward_length; the other layers a SwiGLU MLP. The graph is
 * llama.c's (llm_llama_ffn); this file reads the keys and binds the weights.
 */
#include <stdio.h>

#include "arch.h"

loom_status llm_ernie45moe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s;
    int64_t v;
    if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
    if ((s = llm_get_int_key(g, hp->arch, "interleave_moe_layer_step", true, 0, &v, err))) return s;
    if (v < 1 || v > hp->n_layer)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.interleave_moe_layer_step = %lld is out of range",
                              hp->arch, (long long)v);
    hx->moe_step = (int)v;
    if ((s = llm_get_int_key(g, hp->arch, "leading_dense_block_count", false, 0, &v, err))) return s;
    if (v < 0 || v > hp->n_layer)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.leading_dense_block_count = %lld is out of range",
                              hp->arch, (long long)v);
    hx->n_dense_lead = (int)v;
    if ((s = llm_get_int_key(g, hp->arch, "expert_shared_feed_forward_length", false, 0, &v, err))) return s;
    if (v < 0 || v > ((int64_t)1 << 24))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_shared_feed_forward_length = %lld is out of range",
                              hp->arch, (long long)v);
    hx->n_ff_shexp = (int)v;
    return LOOM_OK;
}

loom_status llm_ernie45moe_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, F = hp->n_ff, NE = hx->n_expert, FE = hx->n_ff_exp, FS = hx->n_ff_shexp;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        llm_bind_attn(be, hp, L, il, err, &st); /* norm, q/k/v (llama.c's graph: split), wo */
        const int64_t HQ = (int64_t)hp->n_head * hp->head_dim_k, HK = (int64_t)hp->n_head_kv * hp->head_dim_k;
        L->bq = llm_bind_tensor(be, false, HQ, 1, 1, err, &st, "blk.%d.attn_q.bias", il);
        L->bk = llm_bind_tensor(be, false, HK, 1, 1, err, &st, "blk.%d.attn_k.bias", il);
        L->bv = llm_bind_tensor(be, false, (int64_t)hp->n_head_kv * hp->head_dim_v, 1, 1, err, &st, "blk.%d.attn_v.bias", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        if (il >= hx->n_dense_lead && (il + 1) % hx->moe_step == 0) {
            llm_bind_experts(be, L, il, E, FE, NE, err, &st);
            L->ffn_exp_probs_b = llm_bind_tensor(be, false, NE, 1, 1, err, &st, "blk.%d.exp_probs_b.bias", il);
            if (FS > 0) llm_bind_shared_expert(be, L, il, E, FS, err, &st);
        } else {
            L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
            L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        }
    }
    return st;
}
