/*
 * arch_gptoss.c - gpt-oss (contract §8.4).
 *
 *   per layer il (sliding window on alternate layers: period 2, even layers slide):
 *     x = rms_norm(h) * attn_norm
 *     q, k, v = W x + b;  q, k = rope NEOX (YaRN from rope.scaling.*)
 *     a = attention(q, k, v, 1/sqrt(head_dim), sinks: blk.N.attn_sinks one logit per head)
 *     h = h + Wo a + bo
 *     x = rms_norm(h) * post_attention_norm
 *     h = h + moe(x): router logits (+bias), top-k of the logits, softmax over the k,
 *         experts (MXFP4 or any type) with biases and the clamped SwiGLU (limit 7,
 *         alpha 1.702: hard-coded in llama.cpp, no key states them)
 *   logits = Woutput (rms_norm(h) * output_norm)
 */
#include <math.h>

#include "arch.h"

loom_status llm_gptoss_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s;
    if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
    if ((s = llm_arch_swa_keys(g, hp, hx, true, 0, 2, err))) return s;
    double v;
    if ((s = llm_get_float_key(g, hp->arch, "rope.freq_base_swa", hp->rope_base, &v, NULL, err))) return s;
    hx->rope_base_swa = (float)v;
    hx->rope_scale_swa = hp->rope_freq_scale;
    hx->swiglu_limit = 7.0f;
    return llm_arch_yarn_keys(g, hp, hx, err);
}

loom_status llm_gptoss_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    loom_status st = LOOM_OK;
    const int64_t E = hp->n_embd, DK = hp->head_dim_k, NE = hx->n_expert, FE = hx->n_ff_exp;
    const int64_t HQ = hp->n_head * DK, HK = hp->n_head_kv * DK, HV = (int64_t)hp->n_head_kv * hp->head_dim_v;
    const int64_t HO = (int64_t)hp->n_head * hp->head_dim_v;
    if ((st = llm_bind_embd_output(m, err))) return st;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->attn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_attention_norm.weight", il);
        llm_bind_attn_qkv(be, hp, L, il, err, &st);
        L->bq = llm_bind_tensor(be, false, HQ, 1, 1, err, &st, "blk.%d.attn_q.bias", il);
        L->bk = llm_bind_tensor(be, false, HK, 1, 1, err, &st, "blk.%d.attn_k.bias", il);
        L->bv = llm_bind_tensor(be, false, HV, 1, 1, err, &st, "blk.%d.attn_v.bias", il);
        L->wo = llm_bind_tensor(be, true, HO, E, 1, err, &st, "blk.%d.attn_output.weight", il);
        L->bo = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_output.bias", il);
        L->sinks = llm_bind_tensor(be, true, hp->n_head, 1, 1, err, &st, "blk.%d.attn_sinks.weight", il);
        L->ffn_gate_inp = llm_bind_tensor(be, true, E, NE, 1, err, &st, "blk.%d.ffn_gate_inp.weight", il);
        L->ffn_gate_inp_b = llm_bind_tensor(be, true, NE, 1, 1, err, &st, "blk.%d.ffn_gate_inp.bias", il);
        L->ffn_gate_exps = llm_bind_tensor(be, true, E, FE, NE, err, &st, "blk.%d.ffn_gate_exps.weight", il);
        L->ffn_up_exps = llm_bind_tensor(be, true, E, FE, NE, err, &st, "blk.%d.ffn_up_exps.weight", il);
        L->ffn_down_exps = llm_bind_tensor(be, true, FE, E, NE, err, &st, "blk.%d.ffn_down_exps.weight", il);
        L->ffn_gate_exps_b = llm_bind_tensor(be, true, FE, NE, 1, err, &st, "blk.%d.ffn_gate_exps.bias", il);
        L->ffn_up_exps_b = llm_bind_tensor(be, true, FE, NE, 1, err, &st, "blk.%d.ffn_up_exps.bias", il);
        L->ffn_down_exps_b = llm_bind_tensor(be, true, E, NE, 1, err, &st, "blk.%d.ffn_down_exps.bias", il);
        if (!st && loom_tensor_type(L->sinks) != LOOM_TYPE_F32)
            st = loom_error_set(err, LOOM_ERR_FORMAT, "model: tensor 'blk.%d.attn_sinks.weight' must be F32", il);
    }
    return st;
}

loom_tensor *llm_gptoss_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens, H = hp->n_head, HKV = hp->n_head_kv, DK = hp->head_dim_k, DV = hp->head_dim_v;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        const bool swa = llm_layer_is_swa(hx, il);
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        int64_t ne_q[3] = {DK, H, T}, ne_k[3] = {DK, HKV, T}, ne_v[3] = {DV, HKV, T};
        loom_tensor *q = loom_reshape(ctx, llm_linear(ctx, ly->wq, ly->bq, x), 3, ne_q);
        loom_tensor *k = loom_reshape(ctx, llm_linear(ctx, ly->wk, ly->bk, x), 3, ne_k);
        loom_tensor *v = loom_reshape(ctx, llm_linear(ctx, ly->wv, ly->bv, x), 3, ne_v);
        q = llm_named(llm_rope(m, ctx, q, in.pos, il, NULL), "q", il);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, swa ? in.mask_swa : in.mask,
                                       1.0f / sqrtf((float)DK), 0.0f, ly->sinks);
        x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        x = llm_named(loom_rms_norm(ctx, h, ly->attn_post_norm, eps), "attn_post_norm", il);
        x = llm_moe_ffn(ctx, ly, x, hx->n_expert, hx->n_expert_used, LLM_MOE_TOPK_SOFTMAX, false, hx->swiglu_limit, il);
        h = llm_named(loom_add(ctx, x, h), "l_out", il);
    }
    h = llm_named(loom_rms_norm(ctx, h, m->output_norm, eps), "result_norm", -1);
    return llm_named(loom_mul_mat(ctx, m->output, h), "result_output", -1);
}
