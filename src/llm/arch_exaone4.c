/*
 * arch_exaone4.c - EXAONE 4.0 (general.architecture "exaone4": 1.2B, 32B), as llama.cpp's
 * exaone4 graph: post-norm blocks (no norm before attention or the MLP, RMS norms after
 * each), per-head q/k RMS norms before rope, normal rope with optional rope_freqs. The
 * 64-layer model (32B) has sliding-window layers (window 4096 unless
 * attention.sliding_window says otherwise, period 4 unless a scalar
 * sliding_window_pattern says otherwise: the converter's one boolean per layer is ignored
 * as llama.cpp ignores it) and rotates only those, with the global rope base (llama.cpp's
 * graph; its rope.freq_base_swa serves only its cache shift); llama.cpp decides that by
 * the layer count, and so does this file.
 *
 *   per layer: q, k, v = W h (+ b); q, k = rms_norm per head * q/k_norm; rope(q, k)
 *     h = h + rms_norm(Wo attn(q, k, v)) * post_attention_norm
 *     h = h + rms_norm(Wdown (silu(Wgate h) * Wup h)) * post_ffw_norm
 *   logits = Woutput (rms_norm(h) * output_norm)
 */
#include <math.h>

#include "arch.h"

loom_status llm_exaone4_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    if (hp->n_layer != 64) return LOOM_OK; /* llama.cpp: no sliding layers (the window key is not used) */
    loom_status s;
    if ((s = llm_arch_swa_keys(g, hp, hx, false, 4096, 4, err))) return s;
    /* llama.cpp's graph rotates every layer with the global base and scale (it reads
     * rope.freq_base_swa only for its cache shift) */
    hx->rope_base_swa = hp->rope_base;
    hx->rope_scale_swa = hp->rope_freq_scale;
    return LOOM_OK;
}

loom_status llm_exaone4_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    loom_status st = LOOM_OK;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    if ((st = llm_bind_embd_output(m, err))) return st;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        llm_bind_attn_any(be, hp, L, il, false, err, &st);
        llm_bind_qk_norm(be, hp, L, il, true, err, &st);
        L->rope_freqs = llm_bind_tensor(be, false, hp->n_rot / 2, 1, 1, err, &st, "blk.%d.rope_freqs.weight", il);
        L->attn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_attention_norm.weight", il);
        L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        L->ffn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_ffw_norm.weight", il);
        if (L->rope_freqs) hp->has_rope_freqs = true;
    }
    return st;
}

loom_tensor *llm_exaone4_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    const float kq_scale = 1.0f / sqrtf((float)hp->head_dim_k);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, h, T, &q, &k, &v);
        q = loom_rms_norm(ctx, q, ly->q_norm, eps);
        k = loom_rms_norm(ctx, k, ly->k_norm, eps);
        if (llm_layer_has_rope(m, il)) {
            q = llm_rope(m, ctx, q, in.pos, il, ly->rope_freqs);
            k = llm_rope(m, ctx, k, in.pos, il, ly->rope_freqs);
        }
        llm_named(q, "q", il);
        llm_named(k, "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, kq_scale, 0.0f, NULL);
        loom_tensor *x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, loom_rms_norm(ctx, x, ly->attn_post_norm, eps), r), "ffn_inp", il);
        loom_tensor *g = loom_mul_mat(ctx, ly->ffn_gate, h), *u = loom_mul_mat(ctx, ly->ffn_up, h);
        x = loom_mul_mat(ctx, ly->ffn_down, loom_swiglu(ctx, g, u));
        x = llm_named(loom_rms_norm(ctx, x, ly->ffn_post_norm, eps), "ffn_post_norm", il);
        h = llm_named(loom_add(ctx, x, h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
