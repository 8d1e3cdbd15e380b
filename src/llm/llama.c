/*
 * llama.c - the llama-family forward graph (llama, mistral, qwen2, qwen3), written
 * only against the public engine API (loom.h).
 *
 *   h = token_embd[tokens]                                     [E, T]
 *   per layer il:
 *     x = rms_norm(h) * attn_norm
 *     q = Wq x (+bq) -> [Dk, H, T]   k = Wk x (+bk) -> [Dk, Hkv, T]   v = Wv x (+bv) -> [Dv, Hkv, T]
 *     (qwen3: q, k = rms_norm per head * q_norm / k_norm)
 *     q, k = rope(q, k, pos)                                   NORMAL (llama) / NEOX (qwen)
 *     cache[il] <- k, v;  K, V = the cells visible to the batch (kvcache.c)
 *     a = sdpa(q, K, V, mask, 1/sqrt(Dk)) -> [Dv*H, T]
 *     x = Wo a (+bo);  (last layer: keep only the output rows of x and h)
 *     h = h + x
 *     x = rms_norm(h) * ffn_norm;  h = h + Wdown (silu(Wgate x) * (Wup x))
 *   logits = Woutput (rms_norm(h) * output_norm)               [V, n_outputs]
 */
#include <math.h>
#include <stdio.h>

#include "model_internal.h"

static loom_tensor *named(loom_tensor *t, const char *what, int il) {
    /* "%s-%d" by hand: snprintf was a visible part of the per-token graph build */
    char name[LOOM_MAX_NAME];
    size_t n = 0;
    for (; n < 40 && what[n]; n++) name[n] = what[n];
    if (il >= 0) {
        char dig[12];
        int nd = 0;
        unsigned v = (unsigned)il;
        do dig[nd++] = (char)('0' + v % 10); while ((v /= 10) && nd < 11);
        name[n++] = '-';
        while (nd > 0) name[n++] = dig[--nd];
    }
    name[n] = '\0';
    return loom_tensor_set_name(t, name);
}

/* y = W x (+ b) */
static loom_tensor *linear(loom_ctx *ctx, loom_tensor *w, loom_tensor *b, loom_tensor *x) {
    loom_tensor *y = loom_mul_mat(ctx, w, x);
    return b ? loom_add(ctx, y, b) : y;
}

loom_tensor *llm_build_llama(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    llm_kv_cache *kv = &m->kv;
    const int64_t T = b->n_tokens, E = hp->n_embd;
    const int64_t H = hp->n_head, HKV = hp->n_head_kv, DK = hp->head_dim_k, DV = hp->head_dim_v;
    loom_ctx *in = loom_ctx_input(ctx);

    /* inputs: token ids, positions, output rows, causal mask */
    int64_t ne_t[1] = {T}, ne_o[1] = {b->n_outputs};
    loom_tensor *tok, *pos, *outs;
    if (b->reserve) {
        tok = loom_zeros(in, LOOM_TYPE_I32, 1, ne_t);
        pos = loom_zeros(in, LOOM_TYPE_I32, 1, ne_t);
        outs = loom_zeros(in, LOOM_TYPE_I32, 1, ne_o);
    } else {
        tok = loom_from_i32(in, b->rows->token, (size_t)T, 1, ne_t);
        pos = loom_from_i32(in, b->rows->pos, (size_t)T, 1, ne_t);
        outs = loom_from_i32(in, b->out_ids, (size_t)b->n_outputs, 1, ne_o);
    }
    if (b->io) {
        b->io->tok = tok;
        b->io->pos = pos;
        b->io->outs = outs;
    }
    loom_tensor_set_name(tok, "inp_tokens");
    loom_tensor_set_name(pos, "inp_pos");
    loom_tensor_set_name(outs, "inp_out_ids");
    loom_tensor *masks[LLM_KV_MAX_GROUPS];
    llm_kv_build_masks(ctx, kv, (int)T, b->reserve, masks, b->io);

    const float kq_scale = 1.0f / sqrtf((float)DK);
    loom_rope_opts ro = loom_rope_default_opts();
    ro.mode = hp->rope_mode;

    loom_tensor *h = named(loom_get_rows(ctx, m->tok_embd, tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = named(loom_rms_norm(ctx, h, ly->attn_norm, hp->rms_eps), "attn_norm", il);

        int64_t ne_q[3] = {DK, H, T}, ne_k[3] = {DK, HKV, T}, ne_v[3] = {DV, HKV, T};
        loom_tensor *q = loom_reshape(ctx, linear(ctx, ly->wq, ly->bq, x), 3, ne_q);
        loom_tensor *k = loom_reshape(ctx, linear(ctx, ly->wk, ly->bk, x), 3, ne_k);
        loom_tensor *v = loom_reshape(ctx, linear(ctx, ly->wv, ly->bv, x), 3, ne_v);
        if (ly->q_norm) q = named(loom_rms_norm(ctx, q, ly->q_norm, hp->rms_eps), "q_norm", il);
        if (ly->k_norm) k = named(loom_rms_norm(ctx, k, ly->k_norm, hp->rms_eps), "k_norm", il);
        ro.factors = ly->rope_freqs;
        q = named(loom_rope(ctx, q, pos, hp->n_rot, hp->rope_base, hp->rope_freq_scale, &ro), "q", il);
        k = named(loom_rope(ctx, k, pos, hp->n_rot, hp->rope_base, hp->rope_freq_scale, &ro), "k", il);
        named(v, "v", il);

        llm_kv_put(ctx, kv, il, k, v, b->io ? b->io->store + 4 * il : NULL);
        loom_tensor *kc, *vc;
        llm_kv_get(ctx, kv, il, &kc, &vc);
        loom_tensor *a = named(loom_sdpa(ctx, q, kc, vc, llm_kv_layer_mask(kv, masks, il), kq_scale), "kqv", il);
        int64_t ne_a[2] = {DV * H, T};
        a = loom_reshape(ctx, a, 2, ne_a);
        x = named(linear(ctx, ly->wo, ly->bo, a), "attn_out", il);

        if (il == hp->n_layer - 1) {
            /* only the requested rows continue past the last attention */
            x = loom_get_rows(ctx, x, outs);
            r = loom_get_rows(ctx, r, outs);
        }
        h = named(loom_add(ctx, x, r), "ffn_inp", il);
        x = named(loom_rms_norm(ctx, h, ly->ffn_norm, hp->rms_eps), "ffn_norm", il);
        loom_tensor *g = loom_mul_mat(ctx, ly->ffn_gate, x);
        loom_tensor *u = loom_mul_mat(ctx, ly->ffn_up, x);
        x = named(loom_mul_mat(ctx, ly->ffn_down, loom_swiglu(ctx, g, u)), "ffn_out", il);
        h = named(loom_add(ctx, x, h), "l_out", il);
    }
    (void)E;
    h = named(loom_rms_norm(ctx, h, m->output_norm, hp->rms_eps), "result_norm", -1);
    return named(loom_mul_mat(ctx, m->output, h), "result_output", -1);
}
