/*
 * arch_phi2.c - Phi-2 (general.architecture "phi2"): a parallel block with LayerNorm
 * (weight and bias), partial rotary embeddings and biases everywhere, as llama.cpp's
 * phi2 graph.
 *
 *   h = token_embd[tokens]
 *   per layer il:
 *     n = layer_norm(h) * attn_norm + attn_norm_b
 *     q, k, v = Wqkv n + bqkv (fused) or Wq n + bq, ... (separate)
 *     q, k = rope (neox over the first rope.dimension_count dims of each head)
 *     a = Wo attention(q / sqrt(D), k, v; scale 1) + bo
 *     h = h + a + Wdown gelu(Wup n + bup) + bdown          (attention and MLP both read n)
 *   logits = Woutput (layer_norm(h) * output_norm + output_norm_b) + output_b
 *
 * falcon (Falcon 7B / 40B, as llama.cpp's falcon graph; llm_phi2_build): the same parallel block without
 * biases or partial rotary: fused q|k|v (MQA or GQA), the score scale 1/sqrt(D) in the
 * attention, a GELU MLP reading n; Falcon-40B's attention reads its own LayerNorm
 * (attn_norm_2) while the MLP reads attn_norm's; tied or separate output.
 *
 * gpt2 and starcoder (StarCoder 1, SantaCoder, GPT-BigCode), as llama.cpp's graphs:
 * learned absolute positions added to the token embeddings (position_embd, its rows
 * bound n_ctx and every position), no rope, the sequential LayerNorm block with biases
 * everywhere, fused q|k|v (multi-query for starcoder), a GELU MLP.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

/* LayerNorm models: attention.layer_norm_epsilon (required, as llama.cpp) is their norm
 * epsilon, kept in hp->rms_eps. */
loom_status llm_ln_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    (void)hx;
    double eps;
    bool has;
    loom_status s = llm_get_float_key(g, hp->arch, "attention.layer_norm_epsilon", 0.0, &eps, &has, err);
    if (s) return s;
    if (!has)
        return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s.attention.layer_norm_epsilon' is missing",
                              hp->arch);
    if (!(eps > 0 && eps < 1))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.layer_norm_epsilon = %g is out of range", hp->arch,
                              eps);
    hp->rms_eps = (float)eps;
    return LOOM_OK;
}

loom_status llm_ln_bind_io(loom_model *m, bool output_bias, loom_error *err) {
    const loom_backend *be = m->be;
    loom_status st = llm_bind_embd_output(m, err);
    if (st) return st;
    const int64_t E = m->hp.n_embd, V = m->hp.n_vocab;
    m->output_norm_b = llm_bind_tensor(be, true, E, 1, 1, err, &st, "output_norm.bias", 0);
    if (output_bias) m->output_b = llm_bind_tensor(be, true, V, 1, 1, err, &st, "output.bias", 0);
    return st;
}

loom_status llm_ln_bind(loom_model *m, bool output_bias, bool ffn_norm, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    loom_status st = llm_ln_bind_io(m, output_bias, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->attn_norm_b = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.bias", il);
        llm_bind_attn_any(be, hp, L, il, true, err, &st);
        if (ffn_norm) {
            L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
            L->ffn_norm_b = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.bias", il);
        }
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_up_b = llm_bind_tensor(be, true, F, 1, 1, err, &st, "blk.%d.ffn_up.bias", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        L->ffn_down_b = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_down.bias", il);
    }
    return st;
}

/* phi2: an output bias, no FFN norm (the block is parallel) */
loom_status llm_phi2_bind(loom_model *m, loom_error *err) { return llm_ln_bind(m, true, false, err); }

loom_tensor *llm_ln_gelu_mlp(loom_ctx *ctx, const llm_layer *ly, loom_tensor *n) {
    /* GELU through llama.cpp's F16 table (loom_gelu_f16), as its CPU ggml_gelu */
    loom_tensor *u = loom_gelu_f16(ctx, llm_linear(ctx, ly->ffn_up, ly->ffn_up_b, n));
    return llm_linear(ctx, ly->ffn_down, ly->ffn_down_b, u);
}

loom_tensor *llm_ln_output(const loom_model *m, loom_ctx *ctx, loom_tensor *h) {
    h = llm_named(loom_layer_norm(ctx, h, m->output_norm, m->output_norm_b, m->hp.rms_eps), "result_norm", -1);
    return llm_named(llm_linear(ctx, m->output, m->output_b, h), "result_output", -1);
}

loom_tensor *llm_phi2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const bool prescale = !strcmp(hp->arch, "phi2");
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *n = llm_named(loom_layer_norm(ctx, h, ly->attn_norm, ly->attn_norm_b, eps), "attn_norm", il);
        /* Falcon-40B: the attention reads its own LayerNorm, the MLP attn_norm's */
        loom_tensor *na = ly->attn_norm_2 ? loom_layer_norm(ctx, h, ly->attn_norm_2, ly->attn_norm_2_b, eps) : n;
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, na, T, &q, &k, &v);
        q = llm_rope(m, ctx, q, in.pos, il, NULL);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
        /* phi2 scales q before the product (as llama.cpp's phi2), falcon the scores */
        const float qs = 1.0f / sqrtf((float)hp->head_dim_k);
        if (prescale) q = loom_scale(ctx, q, qs);
        llm_named(q, "q", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, prescale ? 1.0f : qs, 0.0f, NULL);
        loom_tensor *x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            h = loom_get_rows(ctx, h, in.outs);
            n = loom_get_rows(ctx, n, in.outs);
        }
        loom_tensor *f = llm_named(llm_ln_gelu_mlp(ctx, ly, n), "ffn_out", il);
        h = llm_named(loom_add(ctx, loom_add(ctx, x, f), h), "l_out", il);
    }
    return llm_ln_output(m, ctx, h);
}

loom_status llm_falcon_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    const int64_t QKV = (int64_t)hp->n_head * hp->head_dim_k + 2 * (int64_t)hp->n_head_kv * hp->head_dim_k;
    loom_status st = llm_ln_bind_io(m, false, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->attn_norm_b = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.bias", il);
        L->attn_norm_2 = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.attn_norm_2.weight", il);
        if (L->attn_norm_2)
            L->attn_norm_2_b = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm_2.bias", il);
        L->wqkv = llm_bind_tensor(be, true, E, QKV, 1, err, &st, "blk.%d.attn_qkv.weight", il);
        L->wo = llm_bind_tensor(be, true, (int64_t)hp->n_head * hp->head_dim_v, E, 1, err, &st,
                                "blk.%d.attn_output.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
    }
    return st;
}

/* gpt2 / starcoder: LayerNorm keys; no rope (a shift only moves positions, as llama.cpp) */
loom_status llm_gpt2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_ln_hparams(g, hp, hx, err);
    hx->rope_off = true;
    return s;
}

loom_status llm_gpt2_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    const int64_t QKV = (int64_t)hp->n_head * hp->head_dim_k + 2 * (int64_t)hp->n_head_kv * hp->head_dim_k;
    loom_status st = llm_ln_bind_io(m, false, err);
    if (st) return st;
    loom_tensor *pe = loom_backend_get_tensor(be, "position_embd.weight");
    if (!pe) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: tensor 'position_embd.weight' is missing");
    const int64_t rows = loom_tensor_ne(pe, 1);
    if (rows < 1 || rows > (1 << 24))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: tensor 'position_embd.weight' has %lld rows", (long long)rows);
    m->pos_embd = llm_bind_tensor(be, true, E, rows, 1, err, &st, "position_embd.weight", 0);
    m->hx.max_pos = (int)rows;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->attn_norm_b = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.bias", il);
        L->wqkv = llm_bind_tensor(be, true, E, QKV, 1, err, &st, "blk.%d.attn_qkv.weight", il);
        L->bqkv = llm_bind_tensor(be, true, QKV, 1, 1, err, &st, "blk.%d.attn_qkv.bias", il);
        L->wo = llm_bind_tensor(be, true, (int64_t)hp->n_head * hp->head_dim_v, E, 1, err, &st,
                                "blk.%d.attn_output.weight", il);
        L->bo = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_output.bias", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_norm_b = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.bias", il);
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_up_b = llm_bind_tensor(be, true, F, 1, 1, err, &st, "blk.%d.ffn_up.bias", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        L->ffn_down_b = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_down.bias", il);
    }
    return st;
}

loom_tensor *llm_gpt2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = loom_add(ctx, loom_get_rows(ctx, m->tok_embd, in.tok), loom_get_rows(ctx, m->pos_embd, in.pos));
    h = llm_named(h, "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *n = llm_named(loom_layer_norm(ctx, h, ly->attn_norm, ly->attn_norm_b, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, n, T, &q, &k, &v);
        llm_named(q, "q", il);
        llm_named(k, "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)hp->head_dim_k), 0.0f,
                                       NULL);
        loom_tensor *x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            h = loom_get_rows(ctx, h, in.outs);
        }
        loom_tensor *f = llm_named(loom_add(ctx, x, h), "ffn_inp", il);
        loom_tensor *mi = llm_named(loom_layer_norm(ctx, f, ly->ffn_norm, ly->ffn_norm_b, eps), "ffn_norm", il);
        h = llm_named(loom_add(ctx, llm_named(llm_ln_gelu_mlp(ctx, ly, mi), "ffn_out", il), f), "l_out", il);
    }
    return llm_ln_output(m, ctx, h);
}

/* GPT-NeoX (gptneox: Pythia, GPT-NeoX-20B, Dolly v2, RedPajama-INCITE), as llama.cpp's
 * gptneox graph: LayerNorms with biases, fused q|k|v with bias, partial neox rope, a GELU
 * MLP with biases, a separate output; use_parallel_residual (required) picks
 * h + attn(ln1(h)) + mlp(ln2(h)) or the sequential block. */
loom_status llm_gptneox_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_ln_hparams(g, hp, hx, err);
    if (s) return s;
    char key[96];
    snprintf(key, sizeof key, "%s.use_parallel_residual", hp->arch);
    bool par = false;
    if (loom_gguf_find_key(g, key) < 0)
        return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s' is missing", key);
    if (loom_gguf_get_bool(g, key, &par))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' must be a boolean", key);
    hx->par_res = par;
    return LOOM_OK;
}

loom_status llm_gptneox_bind(loom_model *m, loom_error *err) {
    loom_status s = llm_ln_bind(m, false, true, err);
    /* llama.cpp requires the fused q|k|v with its bias */
    for (int il = 0; il < m->hp.n_layer && !s; il++) {
        const llm_layer *L = &m->layers[il];
        const char *miss = !L->wqkv ? "weight" : !L->bqkv ? "bias" : NULL;
        if (miss) s = loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: tensor 'blk.%d.attn_qkv.%s' is missing", il, miss);
    }
    return s;
}

loom_tensor *llm_gptneox_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *n = llm_named(loom_layer_norm(ctx, h, ly->attn_norm, ly->attn_norm_b, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, n, T, &q, &k, &v);
        q = llm_named(llm_rope(m, ctx, q, in.pos, il, NULL), "q", il);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)hp->head_dim_k), 0.0f,
                                       NULL);
        loom_tensor *x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            h = loom_get_rows(ctx, h, in.outs);
        }
        if (m->hx.par_res) {
            loom_tensor *f = llm_ln_gelu_mlp(ctx, ly, loom_layer_norm(ctx, h, ly->ffn_norm, ly->ffn_norm_b, eps));
            h = llm_named(loom_add(ctx, loom_add(ctx, llm_named(f, "ffn_out", il), h), x), "l_out", il);
        } else {
            h = llm_named(loom_add(ctx, x, h), "ffn_inp", il);
            loom_tensor *f = llm_ln_gelu_mlp(ctx, ly, loom_layer_norm(ctx, h, ly->ffn_norm, ly->ffn_norm_b, eps));
            h = llm_named(loom_add(ctx, llm_named(f, "ffn_out", il), h), "l_out", il);
        }
    }
    return llm_ln_output(m, ctx, h);
}
