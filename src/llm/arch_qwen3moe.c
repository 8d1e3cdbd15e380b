/*
 * arch_qwen3moe.c - Qwen3-MoE: the qwen3 attention (q/k RMS norms per head, NEOX rope)
 * and a mixture-of-experts FFN: softmax over all experts, top-k, weights renormalised
 * to sum 1 (llama.cpp passes norm_w = true for this architecture; no key states it).
 *
 *   h = token_embd[tokens]
 *   per layer: x = rms_norm(h) * attn_norm; q, k, v; q, k = rms_norm per head * q/k_norm;
 *     rope; h += Wo attn(q, k, v)
 *     x = rms_norm(h) * ffn_norm; h += moe(x)
 *   logits = Woutput (rms_norm(h) * output_norm)
 * Mellum (mellum): the same, with sliding-window layers when attention.sliding_window is
 * there (llm_mellum_hparams).
 */
#include <math.h>

#include "arch.h"

loom_status llm_qwen3moe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    return llm_arch_moe_keys(g, hp, hx, err);
}

/* Mellum (JetBrains Mellum 2): Qwen3-MoE with optional sliding-window layers (the
 * converter's one boolean per layer); llama.cpp rotates them with the global base, scale
 * 1 and no YaRN, whatever rope.freq_base_swa says */
loom_status llm_mellum_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    int64_t w;
    loom_status s = llm_arch_moe_keys(g, hp, hx, err);
    if (s || (s = llm_get_int_key(g, hp->arch, "attention.sliding_window", false, 0, &w, err))) return s;
    if (w < 0 || w > ((int64_t)1 << 30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window = %lld is out of range",
                              hp->arch, (long long)w);
    if (w == 0) return LOOM_OK;
    hx->n_swa = (int)w;
    hx->rope_base_swa = hp->rope_base;
    hx->rope_scale_swa = 1.0f;
    hx->swa_rope_plain = true;
    return llm_arch_swa_layers(g, hp, hx, err);
}

loom_status llm_qwen3moe_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    loom_status st = LOOM_OK;
    const int64_t E = hp->n_embd, NE = hx->n_expert, FE = hx->n_ff_exp;
    if ((st = llm_bind_embd_output(m, err))) return st;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        llm_bind_attn_any(be, hp, L, il, false, err, &st); /* q|k|v fused or not, optional biases */
        llm_bind_qk_norm(be, hp, L, il, true, err, &st);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        llm_bind_experts(be, L, il, E, FE, NE, err, &st);
    }
    return st;
}

loom_tensor *llm_qwen3moe_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens, DK = hp->head_dim_k;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    const float kq_scale = 1.0f / sqrtf((float)DK);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, hp->rms_eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, x, T, &q, &k, &v);
        q = loom_rms_norm(ctx, q, ly->q_norm, hp->rms_eps);
        k = loom_rms_norm(ctx, k, ly->k_norm, hp->rms_eps);
        q = llm_named(llm_rope(m, ctx, q, in.pos, il, NULL), "q", il);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, kq_scale, 0.0f, NULL);
        x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        x = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, hp->rms_eps), "ffn_norm", il);
        x = llm_moe_ffn(ctx, ly, x, m->hx.n_expert, m->hx.n_expert_used, LLM_MOE_SOFTMAX, true, 0.0f, il);
        h = llm_named(loom_add(ctx, x, h), "l_out", il);
    }
    h = llm_named(loom_rms_norm(ctx, h, m->output_norm, hp->rms_eps), "result_norm", -1);
    return llm_named(loom_mul_mat(ctx, m->output, h), "result_output", -1);
}
