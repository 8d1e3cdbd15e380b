/*
 * arch_afmoe.c - AFMoE (general.architecture "afmoe": Arcee Trinity Nano / Mini / Large),
 * as llama.cpp's afmoe graph:
 *
 *   h = token_embd[tokens] * sqrt(n_embd)                    (muP)
 *   per layer il:
 *     x = rms_norm(h) * attn_norm
 *     q, k, v = W x; q, k = rms_norm per head * q/k_norm; rope(q, k) unless (il + 1) % 4 == 0
 *     a = attention(q, k, v) * sigmoid(Wgate x)             (gated before the output projection)
 *     h = h + rms_norm(Wo a) * post_attention_norm
 *     n = rms_norm(h) * ffn_norm
 *     h = h + rms_norm(ffn(n)) * post_ffw_norm
 *   logits = Woutput (rms_norm(h) * output_norm)              (tied without output.weight)
 * ffn: a SwiGLU MLP on the leading_dense_block_count first layers, else DeepSeek-style
 * experts (arch_deepseek2.c: a sigmoid router unless expert_gating_func says otherwise,
 * the selection bias exp_probs_b required, expert_weights_norm, expert_weights_scale,
 * shared experts). With attention.sliding_window: the window on all but every
 * sliding_window_pattern-th layer (4; llama.cpp's rule il % p < p - 1), rotating with
 * rope.freq_base_swa (default rope.freq_base); every fourth layer (il + 1) % 4 == 0 is
 * NoPE with or without a window (llama.cpp's n_no_rope_layer_step).
 */
#include <math.h>

#include "arch.h"

loom_status llm_afmoe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s;
    int64_t v;
    double d;
    if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
    if ((s = llm_get_int_key(g, hp->arch, "expert_shared_count", true, 0, &v, err))) return s;
    if ((s = llm_ds_moe_keys(g, hp, hx, 2, err))) return s; /* sigmoid unless stated */
    if ((s = llm_get_int_key(g, hp->arch, "attention.sliding_window", false, 0, &v, err))) return s;
    if (v > 0) {
        if ((s = llm_arch_swa_keys(g, hp, hx, true, 0, 4, err))) return s;
        if ((s = llm_get_float_key(g, hp->arch, "rope.freq_base_swa", hp->rope_base, &d, NULL, err))) return s;
        if (!(d > 1))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.freq_base_swa = %g is out of range", hp->arch, d);
        hx->rope_base_swa = (float)d;
        hx->rope_scale_swa = hp->rope_freq_scale;
    }
    hx->no_rope_step = 4;
    return LOOM_OK;
}

loom_status llm_afmoe_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, HQ = (int64_t)hp->n_head * hp->head_dim_k;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->attn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_attention_norm.weight", il);
        llm_bind_attn_any(be, hp, L, il, false, err, &st);
        llm_bind_qk_norm(be, hp, L, il, true, err, &st);
        L->attn_gate = llm_bind_tensor(be, true, E, HQ, 1, err, &st, "blk.%d.attn_gate.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_ffw_norm.weight", il);
        llm_ds_bind_ffn(be, hp, &m->hx, L, il, err, &st);
        if (!st && il >= m->hx.n_dense_lead && !L->ffn_exp_probs_b) /* llama.cpp requires the selection bias */
            st = loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: tensor 'blk.%d.exp_probs_b.bias' is missing", il);
    }
    return st;
}

loom_tensor *llm_afmoe_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = loom_scale(ctx, loom_get_rows(ctx, m->tok_embd, in.tok), sqrtf((float)hp->n_embd));
    h = llm_named(h, "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, x, T, &q, &k, &v);
        q = loom_rms_norm(ctx, q, ly->q_norm, eps);
        k = loom_rms_norm(ctx, k, ly->k_norm, eps);
        if (llm_layer_has_rope(m, il)) {
            q = llm_rope(m, ctx, q, in.pos, il, NULL);
            k = llm_rope(m, ctx, k, in.pos, il, NULL);
        }
        llm_named(q, "q", il);
        llm_named(k, "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)hp->head_dim_k), 0.0f,
                                       NULL);
        a = loom_mul(ctx, a, loom_sigmoid(ctx, loom_mul_mat(ctx, ly->attn_gate, x)));
        x = llm_named(loom_rms_norm(ctx, loom_mul_mat(ctx, ly->wo, a), ly->attn_post_norm, eps), "attn_out", il);
        llm_last_rows(ctx, m, &in, il, &x, &r);
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *f = loom_rms_norm(ctx, llm_ds_ffn(ctx, &m->hx, ly, n, il), ly->ffn_post_norm, eps);
        h = llm_named(loom_add(ctx, llm_named(f, "ffn_out", il), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
