/*
 * arch_phi3.c - Phi-3 / Phi-3.5 (dense).
 *
 *   per layer: x = rms_norm(h) * attn_norm
 *     q|k|v = Wqkv x (fused rows q, k, v; or separate attn_q/k/v)
 *     q, k = rope NEOX with LongRoPE factors: rope_factors_long when the context is
 *            longer than rope.scaling.original_context_length, else rope_factors_short
 *            (llama.cpp's rule), magnitude rope.scaling.attn_factor
 *     h = h + Wo attention(q / sqrt(head_dim), k, v, scale 1)
 *     x = rms_norm(h) * ffn_norm;  g|u = Wup x (fused, gate first);  h = h + Wdown (silu(g) * u)
 *   logits = Woutput (rms_norm(h) * output_norm)
 * The sliding_window key is ignored, as llama.cpp does (its Phi SWA is disabled).
 */
#include <math.h>

#include "arch.h"

loom_status llm_phi3_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    (void)g;
    (void)hp;
    (void)err;
    hx->n_swa = 0;
    return LOOM_OK;
}

loom_status llm_phi3_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    loom_status st = LOOM_OK;
    const int64_t E = hp->n_embd, F = hp->n_ff, DK = hp->head_dim_k;
    const int64_t HQ = hp->n_head * DK, HK = hp->n_head_kv * DK, HV = (int64_t)hp->n_head_kv * hp->head_dim_v;
    const int64_t HO = (int64_t)hp->n_head * hp->head_dim_v;
    if ((st = llm_bind_embd_output(m, err))) return st;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->wqkv = llm_bind_tensor(be, false, E, HQ + HK + HV, 1, err, &st, "blk.%d.attn_qkv.weight", il);
        if (L->wqkv) {
            L->bqkv = llm_bind_tensor(be, false, HQ + HK + HV, 1, 1, err, &st, "blk.%d.attn_qkv.bias", il);
        } else {
            llm_bind_attn_qkv(be, hp, L, il, err, &st);
        }
        L->wo = llm_bind_tensor(be, true, HO, E, 1, err, &st, "blk.%d.attn_output.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, 2 * F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        llm_bind_longrope(be, hp, L, il, err, &st);
    }
    return st;
}

loom_tensor *llm_phi3_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens, DK = hp->head_dim_k;
    const int64_t F = hp->n_ff;
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
        loom_tensor *fac = llm_layer_rope_factors(m, ctx, il);
        q = llm_rope(m, ctx, q, in.pos, il, fac);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, fac), "k", il);
        q = llm_named(loom_scale(ctx, q, 1.0f / sqrtf((float)DK)), "q", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f, 0.0f, NULL);
        x = llm_named(loom_mul_mat(ctx, ly->wo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        x = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *gu = loom_mul_mat(ctx, ly->ffn_up, x); /* [2F, T] */
        const int64_t args[3] = {F, (int64_t)loom_tensor_nb(gu, 1), loom_tensor_ne(gu, 1)};
        loom_tensor *g = loom_cont(ctx, loom_view(ctx, gu, 0, 3, args));
        loom_tensor *u = loom_cont(ctx, loom_view(ctx, gu, (size_t)F * 4, 3, args));
        x = llm_named(loom_mul_mat(ctx, ly->ffn_down, loom_swiglu(ctx, g, u)), "ffn_out", il);
        h = llm_named(loom_add(ctx, x, h), "l_out", il);
    }
    h = llm_named(loom_rms_norm(ctx, h, m->output_norm, eps), "result_norm", -1);
    return llm_named(loom_mul_mat(ctx, m->output, h), "result_output", -1);
}
