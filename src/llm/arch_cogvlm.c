/*
 * arch_cogvlm.c - CogVLM's language model (general.architecture "cogvlm": CogVLM /
 * CogAgent GGUFs), as llama.cpp's cogvlm graph for text tokens: the llama block with a
 * fused q | k | v (multi-head attention) and neox rope with ggml_rope's defaults (base
 * 10000, no scaling: rope.freq_base and rope_freqs are not applied, as llama.cpp), a SwiGLU
 * MLP. The visual expert weights (visexp_*), which image tokens use, are required and
 * bound, as llama.cpp loads them; text input never reads them (images are not supported).
 *
 *   per layer: x = rms_norm(h) * attn_norm; q | k | v = Wqkv x; h += Wo attn(rope(q),
 *     rope(k), v); h += Wdown (silu(Wgate n) * Wup n), n = rms_norm(h) * ffn_norm
 *   logits = Woutput (rms_norm(h) * output_norm)
 */
#include <math.h>

#include "arch.h"

loom_status llm_cogvlm_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    (void)g;
    if (hp->n_head_kv != hp->n_head || hp->head_dim_k != hp->head_dim_v || hp->n_rot != hp->head_dim_k)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                              "model: %s needs head_count_kv == head_count and rope over the whole head (%d, %d; %d, %d)",
                              hp->arch, hp->n_head_kv, hp->n_head, hp->n_rot, hp->head_dim_k);
    /* ggml_rope: base 10000, scale 1, no YaRN, whatever the file says */
    hp->rope_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    hx->yarn = false;
    hx->rope_attn_factor = 1.0f;
    return LOOM_OK;
}

loom_status llm_cogvlm_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, C = (int64_t)hp->n_head * hp->head_dim_k, F = hp->n_ff;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->wqkv = llm_bind_tensor(be, true, E, 3 * C, 1, err, &st, "blk.%d.attn_qkv.weight", il);
        L->wo = llm_bind_tensor(be, true, C, E, 1, err, &st, "blk.%d.attn_output.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        /* the visual expert (image tokens only): checked, not used */
        llm_bind_tensor(be, true, E, 3 * C, 1, err, &st, "blk.%d.vis_attn_qkv.weight", il);
        llm_bind_tensor(be, true, C, E, 1, err, &st, "blk.%d.vis_attn_output.weight", il);
        llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.vis_gate.weight", il);
        llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.vis_down.weight", il);
        llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.vis_up.weight", il);
    }
    return st;
}

loom_tensor *llm_cogvlm_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
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
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)hp->head_dim_k), 0.0f, NULL);
        x = llm_named(loom_mul_mat(ctx, ly->wo, a), "attn_out", il);
        llm_last_rows(ctx, m, &in, il, &x, &r);
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        h = llm_named(loom_add(ctx, llm_swiglu_mlp(ctx, ly->ffn_gate, ly->ffn_up, ly->ffn_down, n), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
