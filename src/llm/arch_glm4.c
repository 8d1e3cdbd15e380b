/*
 * arch_glm4.c - GLM-4 (GLM-4-0414, GLM-Z1; general.architecture "glm4"), as llama.cpp's
 * glm4 graph: a post-attention and a post-MLP RMS norm inside each residual branch, q/k/v
 * fused or split with biases, partial rotary (rope.dimension_count), a fused gate|up
 * projection, tied or separate output. rope.dimension_sections (GLM-4V files) turns the
 * rope into the multi-section one, of which text tokens see the neox rope with factors.
 * chatglm (ChatGLM3, GLM-4-9B-chat): the same block without the post norms.
 *
 *   h = token_embd[tokens]
 *   per layer: x = rms_norm(h) * attn_norm; q, k, v = W x (+ b); rope(q, k)
 *     h = h + rms_norm(Wo attn(q, k, v)) * post_attention_norm
 *     x = rms_norm(h) * ffn_norm; [g | u] = Wup x
 *     h = h + rms_norm(Wdown (silu(g) * u)) * post_ffw_norm
 *   logits = Woutput (rms_norm(h) * output_norm)
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

loom_status llm_glm4_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    char key[96];
    snprintf(key, sizeof key, "%s.rope.dimension_sections", hp->arch);
    if (loom_gguf_find_key(g, key) < 0) return LOOM_OK; /* llama.cpp: normal rope */
    hp->rope_mode = LOOM_ROPE_NEOX;                     /* ggml's multi-section rope pairs as neox */
    return llm_arch_mrope_keys(g, hp, hx, false, err);
}

loom_status llm_glm4_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    loom_status st = LOOM_OK;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    const bool glm4 = strcmp(hp->arch, "chatglm") != 0; /* chatglm: no post norms */
    if ((st = llm_bind_embd_output(m, err))) return st;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        llm_bind_attn_any(be, hp, L, il, false, err, &st);
        L->attn_post_norm = llm_bind_tensor(be, glm4, E, 1, 1, err, &st, "blk.%d.post_attention_norm.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, 2 * F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        L->ffn_post_norm = llm_bind_tensor(be, glm4, E, 1, 1, err, &st, "blk.%d.post_ffw_norm.weight", il);
    }
    return st;
}

loom_tensor *llm_glm4_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens, F = hp->n_ff;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    const float kq_scale = 1.0f / sqrtf((float)hp->head_dim_k);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, x, T, &q, &k, &v);
        q = llm_named(llm_rope(m, ctx, q, in.pos, il, NULL), "q", il);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, kq_scale, 0.0f, NULL);
        x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        if (ly->attn_post_norm) x = llm_named(loom_rms_norm(ctx, x, ly->attn_post_norm, eps), "attn_post_norm", il);
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        x = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *gu = loom_mul_mat(ctx, ly->ffn_up, x); /* [2F, T] F32 */
        const int64_t args[3] = {F, (int64_t)loom_tensor_nb(gu, 1), loom_tensor_ne(gu, 1)};
        loom_tensor *g = loom_cont(ctx, loom_view(ctx, gu, 0, 3, args));
        loom_tensor *u = loom_cont(ctx, loom_view(ctx, gu, (size_t)F * loom_tensor_nb(gu, 0), 3, args));
        x = loom_mul_mat(ctx, ly->ffn_down, loom_swiglu(ctx, g, u));
        if (ly->ffn_post_norm) x = llm_named(loom_rms_norm(ctx, x, ly->ffn_post_norm, eps), "ffn_post_norm", il);
        h = llm_named(loom_add(ctx, x, h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
