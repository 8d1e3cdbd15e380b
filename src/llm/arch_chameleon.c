/*
 * arch_chameleon.c - Meta's Chameleon (general.architecture "chameleon"), text tokens, as
 * llama.cpp's chameleon graph: the llama block with LayerNorms (eps 1e-5, torch's
 * default) over each head of q and of k whose weights (and optional biases) are per head
 * ([head_dim, heads]), normal rope, a SwiGLU MLP. swin_norm files (Chameleon 30B) move the
 * two RMS norms after the attention and the MLP, as llama.cpp's graph computes them: its
 * MLP reads the normed attention output a, not the residual sum h + a (transformers'
 * ChameleonSwinDecoderLayer, a Swin-V2 res-post-norm, would read h + a; Loom follows
 * llama.cpp, against which the files people run are checked).
 *
 *   per layer: x = swin ? h : rms_norm(h) * attn_norm
 *     q, k = Wq x, Wk x -> layer_norm per head * q_norm[:, head] (+ q_norm_b), same for k
 *     a = Wo attn(rope(q), rope(k), Wv x);  (swin: a = rms_norm(a) * attn_norm)
 *     f = mlp(swin ? a : rms_norm(h + a) * ffn_norm);  (swin: f = rms_norm(f) * ffn_norm)
 *     h = h + a + f
 *   logits = Woutput (rms_norm(h) * output_norm)
 *
 * As llama.cpp, the logits of the image tokens (ids 4..8195) of the first output row (the
 * row a generation step samples) are -FLT_MAX; the sampler also never picks those tokens,
 * in any row (the tokenizer lists them as suppressed, tokenizer_load.c), so batched
 * sequences (the server) get the same rule.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>

#include "arch.h"

loom_status llm_chameleon_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    char key[96];
    snprintf(key, sizeof key, "%s.swin_norm", hp->arch);
    bool swin = false;
    if (loom_gguf_find_key(g, key) >= 0 && loom_gguf_get_bool(g, key, &swin))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' must be a boolean", key);
    if (hp->n_rot != hp->head_dim_k || hp->head_dim_k != hp->head_dim_v)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s needs rope over the whole head (%d of %d, value %d)",
                              hp->arch, hp->n_rot, hp->head_dim_k, hp->head_dim_v);
    hx->swin_norm = swin;
    return LOOM_OK;
}

loom_status llm_chameleon_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff, D = hp->head_dim_k;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        llm_bind_attn(be, hp, L, il, err, &st); /* attn_norm, q, k, v, output */
        L->q_norm = llm_bind_tensor(be, true, D, hp->n_head, 1, err, &st, "blk.%d.attn_q_norm.weight", il);
        L->k_norm = llm_bind_tensor(be, true, D, hp->n_head_kv, 1, err, &st, "blk.%d.attn_k_norm.weight", il);
        L->q_norm_b = llm_bind_tensor(be, false, D, hp->n_head, 1, err, &st, "blk.%d.attn_q_norm.bias", il);
        L->k_norm_b = llm_bind_tensor(be, false, D, hp->n_head_kv, 1, err, &st, "blk.%d.attn_k_norm.bias", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
    }
    return st;
}

/* LayerNorm over each head (x [D, heads, T]) times the per-head weights [D, heads] (+ bias) */
static loom_tensor *head_norm(loom_ctx *ctx, loom_tensor *x, loom_tensor *w, loom_tensor *b) {
    loom_tensor *y = loom_mul(ctx, loom_layer_norm(ctx, x, NULL, NULL, 1e-5f), w);
    return b ? loom_add(ctx, y, b) : y;
}

loom_tensor *llm_chameleon_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const bool swin = m->hx.swin_norm;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = swin ? h : llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, x, T, &q, &k, &v);
        q = llm_named(head_norm(ctx, q, ly->q_norm, ly->q_norm_b), "q_norm", il);
        k = llm_named(head_norm(ctx, k, ly->k_norm, ly->k_norm_b), "k_norm", il);
        q = llm_named(llm_rope(m, ctx, q, in.pos, il, NULL), "q", il);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)hp->head_dim_k), 0.0f, NULL);
        a = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        llm_last_rows(ctx, m, &in, il, &a, &r);
        if (swin) a = loom_rms_norm(ctx, a, ly->attn_norm, eps);
        loom_tensor *f_in = llm_named(loom_add(ctx, a, r), "ffn_inp", il);
        loom_tensor *n = swin ? a : llm_named(loom_rms_norm(ctx, f_in, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *f = llm_swiglu_mlp(ctx, ly->ffn_gate, ly->ffn_up, ly->ffn_down, n);
        if (swin) f = loom_rms_norm(ctx, f, ly->ffn_norm, eps);
        h = llm_named(loom_add(ctx, llm_named(f, "ffn_out", il), f_in), "l_out", il);
    }
    loom_tensor *logits = llm_llama_output(m, ctx, h);
    /* llama.cpp's graph: -FLT_MAX over the image tokens (ids 4..8195) of the first output
     * row, the row a generation step samples (the sampler also never picks them, for every
     * row: tokenizer_load.c) */
    if (loom_tensor_ne(logits, 0) >= 8196) {
        const int64_t n = 8192;
        loom_tensor *img = loom_view(ctx, logits, 4 * sizeof(float), 1, &n);
        loom_tensor *fill = loom_clamp(ctx, img, -FLT_MAX, -FLT_MAX);
        logits = llm_named(loom_set(ctx, logits, fill, 4 * sizeof(float)), "result_output", -1);
    }
    return logits;
}
