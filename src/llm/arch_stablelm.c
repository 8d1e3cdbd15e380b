/*
 * arch_stablelm.c - StableLM (general.architecture "stablelm": StableLM 2 1.6B / 12B,
 * Stable Code 3B, StableLM-3B-4E1T), as llama.cpp's stablelm graph: LayerNorm (with bias,
 * attention.layer_norm_epsilon) before attention and the MLP, q/k/v with optional biases,
 * optional per-head LayerNorms of q and k (no bias; a weight row per head: the 12B),
 * partial neox rope (rope.dimension_count), a SwiGLU MLP, LayerNorm output head. Without
 * an ffn_norm the block is parallel (the 12B's use_parallel_residual): the MLP reads the
 * attention's input norm.
 *
 *   per layer: n = layer_norm(h) * attn_norm + b; q, k, v = W n (+ b)
 *     (q, k = layer_norm per head * q/k_norm[head]); rope(q, k)
 *     f = h + Wo attn(q, k, v); m = ffn_norm ? layer_norm(f) * ffn_norm + b : n
 *     h = f + Wdown (silu(Wgate m) * Wup m)
 *   logits = Woutput (layer_norm(h) * output_norm + b)
 *
 * nemotron (Nemotron-4, Minitron, Nemotron-Mini; llama.cpp's nemotron graph): the same
 * sequential block (the converter adds LayerNorm1p's +1 to the norm weights) with no q/k
 * norms and an MLP Wdown relu(Wup m + bu)^2 + bd (optional biases) in place of SwiGLU.
 */
#include <math.h>
#include <string.h>

#include "arch.h"

loom_status llm_stablelm_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff, D = hp->head_dim_k;
    loom_status st = llm_ln_bind_io(m, false, err);
    const bool nemotron = !strcmp(hp->arch, "nemotron");
    const bool parallel = !st && !nemotron && !loom_backend_get_tensor(be, "blk.0.ffn_norm.weight");
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->attn_norm_b = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.bias", il);
        llm_bind_attn_any(be, hp, L, il, false, err, &st);
        L->q_norm = llm_bind_tensor(be, false, D, hp->n_head, 1, err, &st, "blk.%d.attn_q_norm.weight", il);
        L->k_norm = llm_bind_tensor(be, false, D, hp->n_head_kv, 1, err, &st, "blk.%d.attn_k_norm.weight", il);
        if (!parallel) {
            L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
            /* optional for stablelm (llama.cpp: TENSOR_NOT_REQUIRED), required for nemotron */
            L->ffn_norm_b = llm_bind_tensor(be, nemotron, E, 1, 1, err, &st, "blk.%d.ffn_norm.bias", il);
        }
        L->ffn_gate = llm_bind_tensor(be, !nemotron, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        if (nemotron) {
            L->ffn_up_b = llm_bind_tensor(be, false, F, 1, 1, err, &st, "blk.%d.ffn_up.bias", il);
            L->ffn_down_b = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.ffn_down.bias", il);
            if (L->ffn_gate && !st)
                st = loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: nemotron: tensor 'blk.%d.ffn_gate.weight' (a "
                                    "gated MLP) is not supported", il);
        }
    }
    return st;
}

loom_tensor *llm_stablelm_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps; /* the LayerNorm epsilon (llm_ln_hparams) */
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    const float kq_scale = 1.0f / sqrtf((float)hp->head_dim_k);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *n = llm_named(loom_layer_norm(ctx, h, ly->attn_norm, ly->attn_norm_b, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, n, T, &q, &k, &v);
        if (ly->q_norm) q = loom_layer_norm(ctx, q, ly->q_norm, NULL, eps);
        if (ly->k_norm) k = loom_layer_norm(ctx, k, ly->k_norm, NULL, eps);
        q = llm_named(llm_rope(m, ctx, q, in.pos, il, NULL), "q", il);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, kq_scale, 0.0f, NULL);
        loom_tensor *x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            h = loom_get_rows(ctx, h, in.outs);
            n = loom_get_rows(ctx, n, in.outs);
        }
        loom_tensor *f = llm_named(loom_add(ctx, x, h), "ffn_inp", il);
        loom_tensor *mi = ly->ffn_norm ? loom_layer_norm(ctx, f, ly->ffn_norm, ly->ffn_norm_b, eps) : n;
        if (ly->ffn_gate) {
            loom_tensor *g = loom_mul_mat(ctx, ly->ffn_gate, mi), *u = loom_mul_mat(ctx, ly->ffn_up, mi);
            x = loom_mul_mat(ctx, ly->ffn_down, loom_swiglu(ctx, g, u));
        } else { /* nemotron */
            x = llm_linear(ctx, ly->ffn_down, ly->ffn_down_b,
                           loom_sqr(ctx, loom_relu(ctx, llm_linear(ctx, ly->ffn_up, ly->ffn_up_b, mi))));
        }
        x = llm_named(x, "ffn_out", il);
        h = llm_named(loom_add(ctx, x, f), "l_out", il);
    }
    return llm_ln_output(m, ctx, h);
}
