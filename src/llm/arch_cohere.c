/*
 * arch_cohere.c - Cohere's Command R family: command-r (Command R, Aya Expanse, Aya
 * 23) and cohere2 (Command R7B, Command A: sliding-window layers with rope, full
 * layers without), as llama.cpp's command-r and cohere2 graphs.
 *
 *   h = token_embd[tokens]
 *   per layer il (a parallel block):
 *     n = layer_norm(h) * attn_norm                       (no bias)
 *     q, k, v = W n (+ biases when present)
 *     command-r with q_norm/k_norm (Command R+): q, k = layer_norm per head * norm [D, heads]
 *     q, k = rope (normal; cohere2: sliding layers only, with the global rope.freq_base
 *                  as llama.cpp's graph uses it; rope_freqs when present)
 *     h = h + Wdown (silu(Wgate n) * Wup n) + Wo attention(q, k, v)
 *   logits = token_embd (layer_norm(h) * output_norm) * logit_scale   (output always tied)
 *
 * cohere2moe (Cohere's North models, as llama.cpp's cohere2moe graph): the cohere2 parallel
 * block with LayerNorms (RMS norms when the file gives attention.layer_norm_rms_epsilon),
 * window layers by attention.sliding_window_pattern (one boolean per layer, or a period
 * whose multiples are the full layers; absent: none), rope on the window layers and on the
 * leading dense layers, all with the global base; the FFN is a SwiGLU MLP on the
 * leading_dense_block_count first layers, elsewhere experts (sigmoid unless
 * expert_gating_func says softmax; expert_weights_norm / _scale) and, with
 * expert_shared_count, shared experts averaged with them: (moe + shared) / 2; an output
 * matrix of its own when the file has one.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

static bool is_cohere2(const loom_model_hparams *hp) { return !strcmp(hp->arch, "cohere2"); }
static bool is_c2moe(const loom_model_hparams *hp) { return !strcmp(hp->arch, "cohere2moe"); }

static loom_status c2moe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    double d;
    bool has_ln, has_rms;
    int64_t v;
    if ((s = llm_get_float_key(g, a, "attention.layer_norm_epsilon", 0.0, &d, &has_ln, err))) return s;
    double rd;
    if ((s = llm_get_float_key(g, a, "attention.layer_norm_rms_epsilon", 0.0, &rd, &has_rms, err))) return s;
    if (!has_ln && !has_rms)
        return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: %s has neither attention.layer_norm_epsilon nor "
                              "attention.layer_norm_rms_epsilon", a);
    if (has_rms) d = rd; /* llama.cpp: RMS norms whenever the RMS epsilon is given */
    if (!(d > 0 && d < 1))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s: norm epsilon %g is out of range", a, d);
    hp->rms_eps = (float)d;
    hx->ln_norms = !has_rms;
    if ((s = llm_get_int_key(g, a, "attention.sliding_window", true, 0, &v, err))) return s;
    if (v < 1 || v > ((int64_t)1 << 30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window = %lld is out of range", a,
                              (long long)v);
    hx->n_swa = (int)v;
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", a);
    memset(hx->swa_bits, 0, sizeof hx->swa_bits);
    hx->swa_listed = true;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", a);
    const int64_t ki = loom_gguf_find_key(g, key);
    if (ki >= 0 && loom_gguf_kv_type(g, ki) != LOOM_GGUF_ARRAY) { /* a period: its multiples are full */
        if (loom_gguf_kv_int(g, ki, &v) || v < 0 || v > 4096)
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s' must be a period in [0, 4096] or one boolean per "
                                  "layer", key);
        for (int il = 0; il < hp->n_layer; il++)
            if (v == 0 || il % v != 0) hx->swa_bits[il / 64] |= (uint64_t)1 << (il % 64);
    } else if (ki >= 0 && (s = llm_arch_swa_layers(g, hp, hx, err))) {
        return s;
    }
    hx->rope_base_swa = hp->rope_base; /* llama.cpp's graph rotates every layer with the global base */
    hx->rope_scale_swa = hp->rope_freq_scale;
    if ((s = llm_get_int_key(g, a, "leading_dense_block_count", true, 0, &v, err))) return s;
    if (v < 0 || v > hp->n_layer)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.leading_dense_block_count = %lld is out of range", a,
                              (long long)v);
    hx->n_dense_lead = (int)v;
    if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
    if ((s = llm_get_int_key(g, a, "expert_shared_count", false, 0, &v, err))) return s;
    if (v < 0 || v > 64)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_shared_count = %lld is out of range", a,
                              (long long)v);
    hx->n_expert_shared = (int)v;
    int64_t fs;
    if ((s = llm_get_int_key(g, a, "expert_shared_feed_forward_length", false, (int64_t)hx->n_ff_exp * v, &fs, err)))
        return s;
    if (v > 0 && (fs < 1 || fs > ((int64_t)1 << 24)))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_shared_feed_forward_length = %lld is out of range",
                              a, (long long)fs);
    hx->n_ff_shexp = (int)fs;
    if ((s = llm_arch_router_keys(g, hp, hx, 2, err))) return s; /* sigmoid unless the file says softmax */
    return LOOM_OK;
}

loom_status llm_cohere_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = is_c2moe(hp) ? c2moe_hparams(g, hp, hx, err) : llm_ln_hparams(g, hp, hx, err);
    if (s) return s;
    double v;
    bool has;
    if ((s = llm_get_float_key(g, hp->arch, "logit_scale", 0.0, &v, &has, err))) return s;
    if (!has && (is_cohere2(hp) || is_c2moe(hp)))
        return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s.logit_scale' is missing", hp->arch);
    if (has && !(v > 0 && isfinite(v)))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.logit_scale = %g must be > 0", hp->arch, v);
    hx->logit_scale = has ? (float)v : 0.0f;
    if (is_cohere2(hp)) {
        /* window required, period 4 (three sliding layers, then a full one) by default */
        if ((s = llm_arch_swa_keys(g, hp, hx, true, 0, 4, err))) return s;
        hx->rope_base_swa = hp->rope_base; /* llama.cpp's graph: the global base and scale */
        hx->rope_scale_swa = hp->rope_freq_scale;
    }
    return LOOM_OK;
}

loom_status llm_cohere_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff, D = hp->head_dim_k;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        llm_bind_attn_any(be, hp, L, il, false, err, &st);
        if (!is_cohere2(hp) && !is_c2moe(hp)) { /* per-head LayerNorm weights [D, heads] (Command R+) */
            L->q_norm = llm_bind_tensor(be, false, D, hp->n_head, 1, err, &st, "blk.%d.attn_q_norm.weight", il);
            L->k_norm = llm_bind_tensor(be, !!L->q_norm, D, hp->n_head_kv, 1, err, &st, "blk.%d.attn_k_norm.weight", il);
        }
        if (is_c2moe(hp) && il >= m->hx.n_dense_lead) { /* experts (+ shared); llama.cpp loads no rope_freqs */
            const llm_hparams_x *hx = &m->hx;
            const int64_t NE = hx->n_expert, FE = hx->n_ff_exp;
            L->ffn_gate_inp = llm_bind_tensor(be, true, E, NE, 1, err, &st, "blk.%d.ffn_gate_inp.weight", il);
            L->ffn_gate_up_exps = llm_bind_tensor(be, false, E, 2 * FE, NE, err, &st, "blk.%d.ffn_gate_up_exps.weight", il);
            if (!L->ffn_gate_up_exps) {
                L->ffn_gate_exps = llm_bind_tensor(be, true, E, FE, NE, err, &st, "blk.%d.ffn_gate_exps.weight", il);
                L->ffn_up_exps = llm_bind_tensor(be, true, E, FE, NE, err, &st, "blk.%d.ffn_up_exps.weight", il);
            }
            L->ffn_down_exps = llm_bind_tensor(be, true, FE, E, NE, err, &st, "blk.%d.ffn_down_exps.weight", il);
            if (hx->n_expert_shared > 0) llm_bind_shared_expert(be, L, il, E, hx->n_ff_shexp, err, &st);
            continue;
        }
        L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        if (!is_c2moe(hp))
            L->rope_freqs = llm_bind_tensor(be, false, hp->n_rot / 2, 1, 1, err, &st, "blk.%d.rope_freqs.weight", il);
    }
    return st;
}

loom_tensor *llm_cohere_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    const bool c2 = is_cohere2(hp), moe = is_c2moe(hp);
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *n = llm_named(hx->ln_norms || !moe ? loom_layer_norm(ctx, h, ly->attn_norm, NULL, eps)
                                                        : loom_rms_norm(ctx, h, ly->attn_norm, eps),
                                   "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, n, T, &q, &k, &v);
        if (ly->q_norm) {
            q = loom_mul(ctx, loom_layer_norm(ctx, q, NULL, NULL, eps), ly->q_norm);
            k = loom_mul(ctx, loom_layer_norm(ctx, k, NULL, NULL, eps), ly->k_norm);
        }
        /* cohere2's full layers have no rope, cohere2moe's none but the leading dense ones */
        if (moe ? llm_layer_has_rope(m, il) : !c2 || llm_layer_is_swa(hx, il)) {
            q = llm_rope(m, ctx, q, in.pos, il, ly->rope_freqs);
            k = llm_rope(m, ctx, k, in.pos, il, ly->rope_freqs);
        }
        q = llm_named(q, "q", il);
        k = llm_named(k, "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)hp->head_dim_k),
                                       0.0f, NULL);
        loom_tensor *x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            h = loom_get_rows(ctx, h, in.outs);
            n = loom_get_rows(ctx, n, in.outs);
        }
        loom_tensor *f;
        if (ly->ffn_gate_inp) {
            const llm_moe_opts mo = {.gating = hx->expert_gating ? LLM_MOE_SIGMOID : LLM_MOE_SOFTMAX,
                                     .norm_w = hx->expert_weights_norm,
                                     .w_scale = hx->expert_weights_scale};
            f = llm_moe_ffn_opts(ctx, ly, n, hx->n_expert, hx->n_expert_used, &mo, il);
            if (ly->ffn_up_shexp) /* the shared experts averaged with the routed ones */
                f = loom_scale(ctx, loom_add(ctx, f, llm_swiglu_mlp(ctx, ly->ffn_gate_shexp, ly->ffn_up_shexp,
                                                                     ly->ffn_down_shexp, n)),
                               0.5f);
        } else {
            f = llm_swiglu_mlp(ctx, ly->ffn_gate, ly->ffn_up, ly->ffn_down, n);
        }
        f = llm_named(f, "ffn_out", il);
        h = llm_named(loom_add(ctx, loom_add(ctx, f, h), x), "l_out", il);
    }
    h = llm_named(hx->ln_norms || !moe ? loom_layer_norm(ctx, h, m->output_norm, NULL, eps)
                                       : loom_rms_norm(ctx, h, m->output_norm, eps),
                  "result_norm", -1);
    loom_tensor *out = loom_mul_mat(ctx, m->output, h);
    if (hx->logit_scale > 0.0f) out = loom_scale(ctx, out, hx->logit_scale);
    return llm_named(out, "result_output", -1);
}
