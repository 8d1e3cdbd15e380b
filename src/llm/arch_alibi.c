/*
 * arch_alibi.c - the ALiBi families: attention with linear biases in place of rope. Head
 * h adds slope(h) * -(distance) to its scores (loom_alibi_slope; the KV cache's masks
 * carry the distances, llm_attention the model's max bias), as llama.cpp's graphs:
 *
 * bloom (BLOOM, BLOOMZ):
 *   h = layer_norm(token_embd[tokens]) * token_embd_norm + token_embd_norm_b
 *   per layer il:
 *     n = layer_norm(h) * attn_norm + attn_norm_b
 *     q | k | v = Wqkv n + bqkv (fused, or separate projections)
 *     h = h + Wo attention(q, k, v; 1/sqrt(D), ALiBi) + bo
 *     h = h + Wdown gelu(Wup (layer_norm(h) * ffn_norm + ffn_norm_b) + bup) + bdown
 *   logits = Woutput (layer_norm(h) * output_norm + output_norm_b)   (tied without output.weight)
 * mpt (MPT-7B / 30B): the same block with every bias optional, no embedding norm,
 *   optional learned positions (position_embd), q/k/v clamped to attention.clamp_kqv,
 *   optional LayerNorms over all of q and of k (attn_q_norm / attn_k_norm, weights and
 *   optional biases) and AWQ activation scales (gelu(..) / ffn_act).
 * jais (Jais 13B / 30B): bloom's block without the embedding norm, a SwiGLU MLP with
 *   biases (silu(Wgate n + bgate) * (Wup n + bup)), scores scaled by 1/D (not 1/sqrt(D)).
 * The max bias: attention.max_alibi_bias; absent, 8 for bloom (llama.cpp's fixed value)
 * and none for mpt and jais (llama.cpp reads the key there). refact and Baichuan 13B
 * (llama blocks with ALiBi) are in arch.c.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

loom_status llm_alibi_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, double def,
                           loom_error *err) {
    double v;
    loom_status s = llm_get_float_key(g, hp->arch, "attention.max_alibi_bias", def, &v, NULL, err);
    if (s) return s;
    if (!(v >= 0.0 && v <= 64.0))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.max_alibi_bias = %g is out of range [0, 64]",
                              hp->arch, v);
    hx->alibi_bias = (float)v;
    hx->rope_off = true; /* no layer rotates: a shift only moves positions (the masks' distances) */
    return LOOM_OK;
}

loom_status llm_bloom_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_ln_hparams(g, hp, hx, err);
    return s ? s : llm_alibi_keys(g, hp, hx, 8.0, err);
}

loom_status llm_mpt_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_ln_hparams(g, hp, hx, err);
    if (s || (s = llm_alibi_keys(g, hp, hx, 0.0, err))) return s;
    double c;
    bool has;
    if ((s = llm_get_float_key(g, hp->arch, "attention.clamp_kqv", 0.0, &c, &has, err))) return s;
    if (has && !(c >= 0 && c < 1e30)) /* llama.cpp: 0 = no clamp */
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.clamp_kqv = %g is out of range", hp->arch, c);
    hx->clamp_kqv = (float)c;
    return LOOM_OK;
}

loom_status llm_jais_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_ln_hparams(g, hp, hx, err);
    return s ? s : llm_alibi_keys(g, hp, hx, 0.0, err);
}

loom_status llm_bloom_bind(loom_model *m, loom_error *err) {
    const int64_t E = m->hp.n_embd;
    loom_status st = llm_ln_bind(m, false, true, err);
    m->tok_norm = llm_bind_tensor(m->be, true, E, 1, 1, err, &st, "token_embd_norm.weight", 0);
    m->tok_norm_b = llm_bind_tensor(m->be, true, E, 1, 1, err, &st, "token_embd_norm.bias", 0);
    return st;
}

loom_status llm_mpt_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    const int64_t HQ = (int64_t)hp->n_head * hp->head_dim_k, HK = (int64_t)hp->n_head_kv * hp->head_dim_k;
    loom_status st = llm_bind_embd_output(m, err);
    if (st) return st;
    m->output_norm_b = llm_bind_tensor(be, false, E, 1, 1, err, &st, "output_norm.bias", 0);
    loom_tensor *pe = loom_backend_get_tensor(be, "position_embd.weight");
    if (pe) { /* learned positions: they bound the context */
        const int64_t rows = loom_tensor_ne(pe, 1);
        if (rows < 1 || rows > (1 << 24))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: tensor 'position_embd.weight' has %lld rows",
                                  (long long)rows);
        m->pos_embd = llm_bind_tensor(be, true, E, rows, 1, err, &st, "position_embd.weight", 0);
        m->hx.max_pos = (int)rows;
    }
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->attn_norm_b = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.attn_norm.bias", il);
        llm_bind_attn_any(be, hp, L, il, false, err, &st);
        L->q_norm = llm_bind_tensor(be, false, HQ, 1, 1, err, &st, "blk.%d.attn_q_norm.weight", il);
        if (L->q_norm) { /* llama.cpp norms both when q has one */
            L->q_norm_b = llm_bind_tensor(be, false, HQ, 1, 1, err, &st, "blk.%d.attn_q_norm.bias", il);
            L->k_norm = llm_bind_tensor(be, true, HK, 1, 1, err, &st, "blk.%d.attn_k_norm.weight", il);
            L->k_norm_b = llm_bind_tensor(be, false, HK, 1, 1, err, &st, "blk.%d.attn_k_norm.bias", il);
        }
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_norm_b = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.ffn_norm.bias", il);
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_up_b = llm_bind_tensor(be, false, F, 1, 1, err, &st, "blk.%d.ffn_up.bias", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        L->ffn_down_b = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.ffn_down.bias", il);
        L->ffn_act = llm_bind_tensor(be, false, F, 1, 1, err, &st, "blk.%d.ffn.act.scales", il);
    }
    return st;
}

loom_status llm_jais_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const int64_t E = m->hp.n_embd, F = m->hp.n_ff;
    loom_status st = llm_ln_bind(m, false, true, err);
    for (int il = 0; il < m->hp.n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_gate_b = llm_bind_tensor(be, true, F, 1, 1, err, &st, "blk.%d.ffn_gate.bias", il);
    }
    return st;
}

/* LayerNorm over all of x [D, n, T] (mpt's q / k norms) */
static loom_tensor *norm_all(loom_ctx *ctx, loom_tensor *x, loom_tensor *w, loom_tensor *b, float eps) {
    const int64_t ne3[3] = {loom_tensor_ne(x, 0), loom_tensor_ne(x, 1), loom_tensor_ne(x, 2)};
    const int64_t ne2[2] = {ne3[0] * ne3[1], ne3[2]};
    return loom_reshape(ctx, loom_layer_norm(ctx, loom_reshape(ctx, loom_cont(ctx, x), 2, ne2), w, b, eps), 3, ne3);
}

loom_tensor *llm_alibi_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    const bool jais = !strcmp(hp->arch, "jais");
    const float kq_scale = jais ? 1.0f / (float)hp->head_dim_k : 1.0f / sqrtf((float)hp->head_dim_k);
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = loom_get_rows(ctx, m->tok_embd, in.tok);
    if (m->pos_embd) h = loom_add(ctx, h, loom_get_rows(ctx, m->pos_embd, in.pos));
    h = llm_named(h, "inp_embd", -1);
    if (m->tok_norm) h = llm_named(loom_layer_norm(ctx, h, m->tok_norm, m->tok_norm_b, eps), "inp_norm", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *n = llm_named(loom_layer_norm(ctx, h, ly->attn_norm, ly->attn_norm_b, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_clamped(ctx, hp, ly, n, T, m->hx.clamp_kqv, &q, &k, &v);
        if (ly->q_norm) {
            q = norm_all(ctx, q, ly->q_norm, ly->q_norm_b, eps);
            k = norm_all(ctx, k, ly->k_norm, ly->k_norm_b, eps);
        }
        llm_named(q, "q", il);
        llm_named(k, "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, kq_scale, 0.0f, NULL);
        loom_tensor *x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        llm_last_rows(ctx, m, &in, il, &x, &h);
        loom_tensor *f = llm_named(loom_add(ctx, x, h), "ffn_inp", il);
        loom_tensor *mi = llm_named(loom_layer_norm(ctx, f, ly->ffn_norm, ly->ffn_norm_b, eps), "ffn_norm", il), *y;
        if (ly->ffn_gate) { /* jais: SwiGLU with biases */
            y = loom_swiglu(ctx, llm_linear(ctx, ly->ffn_gate, ly->ffn_gate_b, mi), llm_linear(ctx, ly->ffn_up, ly->ffn_up_b, mi));
        } else { /* GELU through llama.cpp's F16 table, as its CPU ggml_gelu */
            y = loom_gelu_f16(ctx, llm_linear(ctx, ly->ffn_up, ly->ffn_up_b, mi));
            if (ly->ffn_act) y = loom_div(ctx, y, ly->ffn_act);
        }
        y = llm_named(llm_linear(ctx, ly->ffn_down, ly->ffn_down_b, y), "ffn_out", il);
        h = llm_named(loom_add(ctx, y, f), "l_out", il);
    }
    return llm_ln_output(m, ctx, h);
}
