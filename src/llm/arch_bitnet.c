/*
 * arch_bitnet.c - BitNet b1.58 (general.architecture "bitnet"), as llama.cpp's bitnet
 * graph: the llama block with two more RMS norms ("sub norms") and the output tied to
 * the embeddings. The converter writes the ternary weights already scaled (F16/F32;
 * llama-quantize makes TQ1_0 / TQ2_0 of them); a file may instead carry one scale per
 * matrix (blk.N.<name>.scale, one float), which multiplies the product (model.c's
 * llm_bind_matmul_scales, for every architecture).
 *
 *   per layer: x = rms_norm(h) * attn_norm;  q, k, v = Wq x, Wk x, Wv x (rope neox)
 *     a = rms_norm(attention(q, k, v)) * attn_sub_norm;  h = h + Wo a
 *     x = rms_norm(h) * ffn_norm;  u = silu(Wgate x) * (Wup x)
 *     h = h + Wdown (rms_norm(u) * ffn_sub_norm)
 *   logits = token_embd (rms_norm(h) * output_norm)
 */
#include <math.h>
#include <stdio.h>

#include "arch.h"

loom_status llm_bitnet_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    loom_status st = llm_bind_embd_output_norm(m, "output_norm.weight", err);
    /* llama.cpp multiplies by token_embd even when the file has an output.weight; without
     * one, the backend's copy of token_embd placed with the output layer is the same */
    if (!hp->tied_output) m->output = m->tok_embd;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->attn_sub_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_sub_norm.weight", il);
        llm_bind_attn_qkv(be, hp, L, il, err, &st);
        L->wo = llm_bind_tensor(be, true, (int64_t)hp->n_head * hp->head_dim_v, E, 1, err, &st,
                                "blk.%d.attn_output.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_sub_norm = llm_bind_tensor(be, true, F, 1, 1, err, &st, "blk.%d.ffn_sub_norm.weight", il);
        L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
    }
    if (!st && !m->output) st = loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: tensor 'token_embd.weight' is missing");
    return st;
}

loom_tensor *llm_bitnet_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens, H = hp->n_head, HKV = hp->n_head_kv, DK = hp->head_dim_k, DV = hp->head_dim_v;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        const int64_t ne_q[3] = {DK, H, T}, ne_k[3] = {DK, HKV, T}, ne_v[3] = {DV, HKV, T};
        loom_tensor *q = loom_reshape(ctx, loom_mul_mat(ctx, ly->wq, x), 3, ne_q);
        loom_tensor *k = loom_reshape(ctx, loom_mul_mat(ctx, ly->wk, x), 3, ne_k);
        loom_tensor *v = loom_reshape(ctx, loom_mul_mat(ctx, ly->wv, x), 3, ne_v);
        q = llm_rope(m, ctx, q, in.pos, il, NULL);
        k = llm_rope(m, ctx, k, in.pos, il, NULL);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)DK), 0.0f, NULL);
        a = llm_named(loom_rms_norm(ctx, a, ly->attn_sub_norm, eps), "attn_sub_norm", il);
        x = loom_mul_mat(ctx, ly->wo, a);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        x = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *u = loom_swiglu(ctx, loom_mul_mat(ctx, ly->ffn_gate, x), loom_mul_mat(ctx, ly->ffn_up, x));
        u = llm_named(loom_rms_norm(ctx, u, ly->ffn_sub_norm, eps), "ffn_sub_norm", il);
        h = llm_named(loom_add(ctx, loom_mul_mat(ctx, ly->ffn_down, u), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
