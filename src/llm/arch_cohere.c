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
 */
#include <math.h>
#include <string.h>

#include "arch.h"

static bool is_cohere2(const loom_model_hparams *hp) { return !strcmp(hp->arch, "cohere2"); }

loom_status llm_cohere_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_ln_hparams(g, hp, hx, err);
    if (s) return s;
    double v;
    bool has;
    if ((s = llm_get_float_key(g, hp->arch, "logit_scale", 0.0, &v, &has, err))) return s;
    if (!has && is_cohere2(hp))
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
        if (!is_cohere2(hp)) { /* per-head LayerNorm weights [D, heads] (Command R+) */
            L->q_norm = llm_bind_tensor(be, false, D, hp->n_head, 1, err, &st, "blk.%d.attn_q_norm.weight", il);
            L->k_norm = llm_bind_tensor(be, !!L->q_norm, D, hp->n_head_kv, 1, err, &st, "blk.%d.attn_k_norm.weight", il);
        }
        L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        L->rope_freqs = llm_bind_tensor(be, false, hp->n_rot / 2, 1, 1, err, &st, "blk.%d.rope_freqs.weight", il);
    }
    return st;
}

loom_tensor *llm_cohere_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    const bool c2 = is_cohere2(hp);
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *n = llm_named(loom_layer_norm(ctx, h, ly->attn_norm, NULL, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, n, T, &q, &k, &v);
        if (ly->q_norm) {
            q = loom_mul(ctx, loom_layer_norm(ctx, q, NULL, NULL, eps), ly->q_norm);
            k = loom_mul(ctx, loom_layer_norm(ctx, k, NULL, NULL, eps), ly->k_norm);
        }
        if (!c2 || llm_layer_is_swa(hx, il)) { /* cohere2's full layers have no rope */
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
        loom_tensor *g = loom_mul_mat(ctx, ly->ffn_gate, n), *u = loom_mul_mat(ctx, ly->ffn_up, n);
        loom_tensor *f = llm_named(loom_mul_mat(ctx, ly->ffn_down, loom_swiglu(ctx, g, u)), "ffn_out", il);
        h = llm_named(loom_add(ctx, loom_add(ctx, f, h), x), "l_out", il);
    }
    h = llm_named(loom_layer_norm(ctx, h, m->output_norm, NULL, eps), "result_norm", -1);
    loom_tensor *out = loom_mul_mat(ctx, m->output, h);
    if (hx->logit_scale > 0.0f) out = loom_scale(ctx, out, hx->logit_scale);
    return llm_named(out, "result_output", -1);
}
