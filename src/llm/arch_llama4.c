/*
 * arch_llama4.c - Llama 4 (Scout, Maverick; general.architecture "llama4"), as llama.cpp's
 * llama4 graph:
 *   - chunked attention: unless attention.sliding_window is 0, layers il with
 *     il % p < p - 1 (p = sliding_window_pattern, default 4) see only their own chunk of
 *     8192 positions (llama.cpp fixes the size); every (il + 1) % 4 == 0 layer has no rope
 *     and scales its queries by the temperature 1 + 0.1 ln(floor((pos + 1) / 8192) + 1);
 *     with sliding_window 0 no layer is chunked and every layer has rope;
 *   - rope layers: normal rope with rope_freqs (Llama 3 factors), then weightless RMS norms
 *     of q and k, except for 128-expert files (Maverick), which llama.cpp leaves unnormed;
 *   - every interleave_moe_layer_step-th layer a mixture of experts: top-k of the router
 *     logits, each chosen expert's input scaled by the sigmoid of its logit, outputs
 *     summed, plus a shared expert (expert_feed_forward_length wide); the others a SwiGLU
 *     MLP of feed_forward_length.
 */
#include <math.h>
#include <stdio.h>

#include "arch.h"

#define LLAMA4_CHUNK 8192

loom_status llm_llama4_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s;
    int64_t v, w;
    bool has_w = false;
    double d;
    bool has;
    if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
    if ((s = llm_get_int_key(g, hp->arch, "interleave_moe_layer_step", true, 0, &v, err))) return s;
    if (v < 0 || v > hp->n_layer)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.interleave_moe_layer_step = %lld is out of range", hp->arch,
                              (long long)v);
    hx->moe_step = (int)v;
    if ((s = llm_get_float_key(g, hp->arch, "expert_weights_scale", 0.0, &d, &has, err))) return s;
    if (has && !(d >= 0 && d < 1e6))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_weights_scale = %g is out of range", hp->arch, d);
    hx->expert_weights_scale = (float)d;
    if ((s = llm_get_float_key(g, hp->arch, "attention.scale", 0.0, &d, &has, err))) return s;
    if (has && !(d > 0 && d < 1e3))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.scale = %g is out of range", hp->arch, d);
    hx->kq_scale = (float)d;
    char key[96];
    snprintf(key, sizeof key, "%s.attention.sliding_window", hp->arch);
    has_w = loom_gguf_find_key(g, key) >= 0;
    if ((s = llm_get_int_key(g, hp->arch, "attention.sliding_window", false, 0, &w, err))) return s;
    if (has_w && w == 0) {
        /* all layers full (MobileLLM-style files): llama.cpp means "always rope" (its step
         * of n_layer would leave the last layer without, but it cannot run such files:
         * it asserts on their zero temperature scale); Loom ropes every layer */
        hx->no_rope_step = 0;
    } else {
        int64_t p;
        if ((s = llm_arch_swa_period(g, hp, 4, &p, err))) return s;
        hx->n_chunk = LLAMA4_CHUNK;
        hx->swa_period = (int)p;
        hx->no_rope_step = 4;
        hx->attn_temp_scale = 0.1f;
        hx->attn_temp_floor = LLAMA4_CHUNK;
        hx->attn_temp_offset = 1.0f;
    }
    hx->qk_l2 = hx->n_expert != 128; /* llama.cpp: not for the 128-expert model */
    return LOOM_OK;
}

static bool moe_layer(const llm_hparams_x *hx, int il) { return hx->moe_step > 0 && (il + 1) % hx->moe_step == 0; }

loom_status llm_llama4_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    loom_status st = LOOM_OK;
    const int64_t E = hp->n_embd, F = hp->n_ff, NE = hx->n_expert, FE = hx->n_ff_exp;
    if ((st = llm_bind_embd_output(m, err))) return st;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        llm_bind_attn_any(be, hp, L, il, false, err, &st);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->rope_freqs = llm_bind_tensor(be, false, hp->n_rot / 2, 1, 1, err, &st, "blk.%d.rope_freqs.weight", il);
        if (moe_layer(hx, il)) {
            llm_bind_experts(be, L, il, E, FE, NE, err, &st);
            llm_bind_shared_expert(be, L, il, E, FE, err, &st);
        } else {
            L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
            L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        }
        if (L->rope_freqs) hp->has_rope_freqs = true;
    }
    return st;
}

static loom_tensor *swiglu(loom_ctx *ctx, loom_tensor *g, loom_tensor *u, loom_tensor *d, loom_tensor *x) {
    return loom_mul_mat(ctx, d, loom_swiglu(ctx, loom_mul_mat(ctx, g, x), loom_mul_mat(ctx, u, x)));
}

loom_tensor *llm_llama4_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    const float kq_scale = hx->kq_scale != 0 ? hx->kq_scale : 1.0f / sqrtf((float)hp->head_dim_k);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, x, T, &q, &k, &v);
        if (llm_layer_has_rope(m, il)) {
            q = llm_rope(m, ctx, q, in.pos, il, ly->rope_freqs);
            k = llm_rope(m, ctx, k, in.pos, il, ly->rope_freqs);
            if (hx->qk_l2) {
                q = loom_rms_norm(ctx, q, NULL, eps);
                k = loom_rms_norm(ctx, k, NULL, eps);
            }
        } else if (in.attn_temp) {
            q = loom_mul(ctx, q, in.attn_temp);
        }
        llm_named(q, "q", il);
        llm_named(k, "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, kq_scale, 0.0f, NULL);
        x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *f;
        if (ly->ffn_gate_inp) {
            f = llm_moe_ffn_ext(ctx, ly, n, hx->n_expert, hx->n_expert_used, LLM_MOE_LLAMA4, false,
                                hx->expert_weights_scale, 0.0f, il);
            f = loom_add(ctx, f, swiglu(ctx, ly->ffn_gate_shexp, ly->ffn_up_shexp, ly->ffn_down_shexp, n));
        } else {
            f = swiglu(ctx, ly->ffn_gate, ly->ffn_up, ly->ffn_down, n);
        }
        h = llm_named(loom_add(ctx, llm_named(f, "ffn_out", il), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
