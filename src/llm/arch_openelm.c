/*
 * arch_openelm.c - Apple OpenELM (general.architecture "openelm"), as llama.cpp's openelm
 * graph: the llama block with layer-wise scaling, each layer its own query and KV head
 * counts (head_count / head_count_kv arrays) and MLP width (feed_forward_length array).
 *
 *   per layer il (heads H_il, KV heads K_il, head_dim D):
 *     x = rms_norm(h) * attn_norm
 *     q | k | v = Wqkv x  ->  [D, H_il + 2 K_il, T];  q, k = rms_norm per head * q/k_norm
 *     q, k = rope (neox);  h = h + Wo attention(q, k, v)
 *     h = h + Wdown (silu(Wgate n) * Wup n),  n = rms_norm(h) * ffn_norm
 *   logits = token_embd (rms_norm(h) * output_norm)   (llama.cpp reads no output.weight)
 * The cache keeps each layer's K/V shape (kvcache.c's per-layer dims).
 */
#include <math.h>

#include "arch.h"

loom_status llm_openelm_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const loom_gguf *g = loom_model_gguf(m);
    const int64_t E = hp->n_embd, D = hp->head_dim_k;
    if (hp->head_dim_v != hp->head_dim_k)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: openelm needs key_length = value_length (%d, %d)",
                              hp->head_dim_k, hp->head_dim_v);
    loom_status st = llm_bind_embd_output(m, err);
    m->output = m->tok_embd;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        int64_t h, kv, ff;
        if ((st = llm_get_layer_int(g, hp->arch, "attention.head_count", il, hp->n_layer, hp->n_head, &h, err)) ||
            (st = llm_get_layer_int(g, hp->arch, "attention.head_count_kv", il, hp->n_layer, hp->n_head_kv, &kv, err)) ||
            (st = llm_get_layer_int(g, hp->arch, "feed_forward_length", il, hp->n_layer, hp->n_ff, &ff, err)))
            break;
        if (h < 1 || kv < 1 || h % kv || ff < 1 || h > hp->n_head || ff > hp->n_ff) {
            st = loom_error_set(err, LOOM_ERR_FORMAT,
                                "model: openelm layer %d: %lld heads, %lld KV heads, MLP %lld (heads must be a "
                                "multiple of KV heads)", il, (long long)h, (long long)kv, (long long)ff);
            break;
        }
        L->n_head = (int)h;
        L->n_head_kv = (int)kv;
        L->n_ff = (int)ff;
        m->kv_types[il].hkv = (int32_t)kv; /* the cache keeps this layer's shape */
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->wqkv = llm_bind_tensor(be, true, E, (h + 2 * kv) * D, 1, err, &st, "blk.%d.attn_qkv.weight", il);
        llm_bind_qk_norm(be, hp, L, il, true, err, &st);
        L->wo = llm_bind_tensor(be, true, h * D, E, 1, err, &st, "blk.%d.attn_output.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_gate = llm_bind_tensor(be, true, E, ff, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, ff, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, ff, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
    }
    return st;
}

/* heads [first, first + n) of y [D, heads, T], contiguous */
static loom_tensor *heads(loom_ctx *ctx, loom_tensor *y, int64_t first, int64_t n) {
    const int64_t args[5] = {loom_tensor_ne(y, 0), (int64_t)loom_tensor_nb(y, 1), n, (int64_t)loom_tensor_nb(y, 2),
                             loom_tensor_ne(y, 2)};
    return loom_cont(ctx, loom_view(ctx, y, (size_t)first * loom_tensor_nb(y, 1), 5, args));
}

loom_tensor *llm_openelm_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens, D = hp->head_dim_k;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        const int64_t H = ly->n_head, HKV = ly->n_head_kv;
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        const int64_t ne_y[3] = {D, H + 2 * HKV, T};
        loom_tensor *y = loom_reshape(ctx, loom_mul_mat(ctx, ly->wqkv, x), 3, ne_y);
        loom_tensor *q = loom_rms_norm(ctx, heads(ctx, y, 0, H), ly->q_norm, eps);
        loom_tensor *k = loom_rms_norm(ctx, heads(ctx, y, H, HKV), ly->k_norm, eps);
        loom_tensor *v = heads(ctx, y, H + HKV, HKV);
        q = llm_named(llm_rope(m, ctx, q, in.pos, il, NULL), "q", il);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)D), 0.0f, NULL);
        x = llm_named(loom_mul_mat(ctx, ly->wo, a), "attn_out", il);
        llm_last_rows(ctx, m, &in, il, &x, &r);
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *f = llm_swiglu_mlp(ctx, ly->ffn_gate, ly->ffn_up, ly->ffn_down, n);
        h = llm_named(loom_add(ctx, llm_named(f, "ffn_out", il), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
