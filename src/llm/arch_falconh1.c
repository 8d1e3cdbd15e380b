/*
 * arch_falconh1.c - TII Falcon-H1 (general.architecture "falcon-h1"), as llama.cpp's
 * falcon_h1 graph: every layer runs attention and a Mamba-2 mixer side by side on the
 * same normalised input (the converter folds the model's multipliers into the weights):
 *
 *   x = rms_norm(h) * attn_norm
 *   h += Wo attention(rope(Wq x), rope(Wk x), Wv x) + mamba2(x)   (neox rope; arch_mamba2.c)
 *   h += Wdown (silu(Wgate n + bg) * (Wup n + bu)) + bd,  n = rms_norm(h) * ffn_norm
 *   logits = Woutput (rms_norm(h) * output_norm)
 * Each layer keeps K/V cells and its Mamba states per sequence.
 */
#include <math.h>

#include "arch.h"

loom_status llm_falconh1_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_mamba2_hparams(g, hp, hx, err);
    if (s) return s;
    if (hp->n_layer > 4096)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", hp->arch);
    for (int il = 0; il < hp->n_layer; il++) hx->recr_bits[il / 64] |= (uint64_t)1 << (il % 64);
    return LOOM_OK;
}

loom_status llm_falconh1_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        llm_bind_attn_qkv(be, hp, L, il, err, &st);
        L->wo = llm_bind_tensor(be, true, (int64_t)hp->n_head * hp->head_dim_v, E, 1, err, &st,
                                "blk.%d.attn_output.weight", il);
        llm_mamba2_bind(m, il, err, &st);
        m->kv_types[il].attn = 1; /* K/V beside the states */
        /* the converter's name has no ".weight" (gguf-py maps pre_ff_layernorm.weight whole) */
        L->ffn_norm = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.ffn_norm", il);
        if (!L->ffn_norm) L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        L->ffn_gate_b = llm_bind_tensor(be, false, F, 1, 1, err, &st, "blk.%d.ffn_gate.bias", il);
        L->ffn_up_b = llm_bind_tensor(be, false, F, 1, 1, err, &st, "blk.%d.ffn_up.bias", il);
        L->ffn_down_b = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.ffn_down.bias", il);
    }
    return st;
}

loom_tensor *llm_falconh1_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    const float kq_scale = 1.0f / sqrtf((float)hp->head_dim_k);
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_llama_qkv(ctx, hp, ly, x, T, il, &q, &k, &v);
        q = llm_named(llm_rope(m, ctx, q, in.pos, il, NULL), "q", il);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
        loom_tensor *a = loom_mul_mat(ctx, ly->wo, llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, kq_scale, 0.0f, NULL));
        x = llm_named(loom_add(ctx, a, llm_mamba2_layer(m, ctx, &in, il, x)), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *f = llm_linear(ctx, ly->ffn_down, ly->ffn_down_b,
                                    loom_swiglu(ctx, llm_linear(ctx, ly->ffn_gate, ly->ffn_gate_b, n),
                                                llm_linear(ctx, ly->ffn_up, ly->ffn_up_b, n)));
        h = llm_named(loom_add(ctx, llm_named(f, "ffn_out", il), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
