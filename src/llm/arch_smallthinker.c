/*
 * arch_smallthinker.c - SmallThinker (general.architecture "smallthinker": PowerInfer's
 * SmallThinker-4B-A0.6B / 21B-A3B), as llama.cpp's smallthinker graph:
 *
 *   per layer il:
 *     p = Wrouter h                         (the router reads the layer's input, before its norm)
 *     x = rms_norm(h) * attn_norm; q, k, v = W x; rope(q, k) unless the layer is global;
 *     h = h + Wo attention(q, k, v)
 *     n = rms_norm(h) * ffn_norm
 *     h = h + sum over the top-k experts e of w_e Wdown_e (relu(Wgate_e n) * Wup_e n)
 *         (p through softmax or sigmoid: expert_gating_func, required as llama.cpp aborts
 *          without it; weights normalised, times expert_weights_scale)
 *   logits = Woutput (rms_norm(h) * output_norm)   (tied without output.weight)
 * With attention.sliding_window: llama.cpp's window of 4096 (the key's value unused) on
 * all but the first layer of every sliding_window_pattern (4), rotating with
 * rope.freq_base_swa (default rope.freq_base); every fourth layer (il % 4 == 0, whatever
 * the pattern) rotates nothing (NoPE), except in a model of exactly 4 layers (llama.cpp
 * tests n_no_rope_layer_step == n_layer). Without it every layer is global with rope.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

loom_status llm_smallthinker_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    int64_t v;
    double d;
    bool has;
    if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
    if ((s = llm_get_int_key(g, a, "expert_gating_func", true, 0, &v, err))) return s;
    if (v != 1 && v != 2)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s.expert_gating_func = %lld is not supported (1 "
                              "softmax, 2 sigmoid)", a, (long long)v);
    hx->expert_gating = (int)v - 1;
    if ((s = llm_get_float_key(g, a, "expert_weights_scale", 0.0, &d, &has, err))) return s;
    if (has && !(d >= 0 && d < 1e6))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_weights_scale = %g is out of range", a, d);
    hx->expert_weights_scale = (float)d;
    if ((s = llm_get_int_key(g, a, "attention.sliding_window", false, 0, &v, err))) return s;
    if (v <= 0) return LOOM_OK;
    char key[96];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", a);
    int64_t ki = loom_gguf_find_key(g, key), period = 4;
    if (ki >= 0 && loom_gguf_kv_int(g, ki, &period))
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: key '%s' must be one integer", key);
    if (period < 0 || period > 4096)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s = %lld is out of range", key, (long long)period);
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s with %d layers", a, hp->n_layer);
    hx->n_swa = 4096; /* llama.cpp's fixed window */
    hx->swa_listed = true;
    for (int il = 0; il < hp->n_layer; il++)
        if (period == 0 || il % period != 0) hx->swa_bits[il / 64] |= (uint64_t)1 << (il % 64);
    if ((s = llm_get_float_key(g, a, "rope.freq_base_swa", hp->rope_base, &d, NULL, err))) return s;
    if (!(d > 1)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.freq_base_swa = %g is out of range", a, d);
    hx->rope_base_swa = (float)d;
    hx->rope_scale_swa = hp->rope_freq_scale;
    return LOOM_OK;
}

loom_status llm_smallthinker_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        llm_bind_attn_any(be, hp, L, il, false, err, &st);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        llm_bind_experts(be, L, il, E, m->hx.n_ff_exp, m->hx.n_expert, err, &st);
    }
    return st;
}

loom_tensor *llm_smallthinker_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
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
        if (llm_layer_has_rope(m, il)) {
            q = llm_rope(m, ctx, q, in.pos, il, NULL);
            k = llm_rope(m, ctx, k, in.pos, il, NULL);
        }
        llm_named(q, "q", il);
        llm_named(k, "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)hp->head_dim_k), 0.0f,
                                       NULL);
        x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        llm_last_rows(ctx, m, &in, il, &x, &r);
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        const llm_moe_opts o = {.gating = m->hx.expert_gating ? LLM_MOE_SIGMOID : LLM_MOE_SOFTMAX,
                                .norm_w = true,
                                .w_scale = m->hx.expert_weights_scale,
                                .router_in = r,
                                .reglu = true};
        loom_tensor *f = llm_moe_ffn_opts(ctx, ly, n, m->hx.n_expert, m->hx.n_expert_used, &o, il);
        h = llm_named(loom_add(ctx, llm_named(f, "ffn_out", il), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
