/*
 * arch_minimax01.c - MiniMax-Text-01 / MiniMax-M1 (general.architecture "minimax-01"), as
 * llama.cpp's minimax-01 graph: lightning-attention layers (linear attention with a fixed
 * decay per head) and, every full_attention_interval-th layer, softmax attention with a
 * partial neox rope; a mixture of experts after each; residuals of the normed stream
 * scaled by residual_scale:
 *
 *   per layer il:
 *     x = rms_norm(h) * attn_norm
 *     attention layer: a = Wo attention(rope(q), rope(k), v)   (q | k | v apart or fused)
 *     lightning layer (H heads of D):
 *       q | k | v = silu(Wqkv x) per head [3 D]
 *       S_t = l_h S_{t-1} + k_t^T v_t,  o_t = q_t S_t   (per sequence; l_h = exp(-s_h),
 *         s_h = slope_h (1 - il / (n_layer - 1) + 1e-5), slope_h = b^(h + 1),
 *         b = 2^(-2^(-(log2 H - 3))), ALiBi's slopes)
 *       a = Wo (rms_norm(o) * attn_norm_2 * sigmoid(Wgate x))
 *     f = a + residual_scale * x
 *     n = rms_norm(f) * ffn_norm
 *     h = moe(n) + residual_scale * n       (softmax router, top-k weights normalised)
 *   logits = Woutput (rms_norm(h) * output_norm)
 * Lightning layers are attention.recurrent_layers (one flag per layer) or, absent, every
 * layer il with (il + 1) % full_attention_interval != 0 (default 8). The recurrence runs
 * through loom_rwkv_wkv6: with r = l q and the bonus u = 1 / l its output r (u k v + S) is
 * l q S_{t-1} + (q.k) v = q S_t. llama.cpp computes the same sums in chunks (its ubatch).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

static bool recurrent(const llm_hparams_x *hx, int il) { return hx->recr_bits[il / 64] >> (il % 64) & 1; }

loom_status llm_minimax01_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s = llm_arch_moe_keys(g, hp, hx, err);
    if (s) return s;
    hx->n_ff_exp = hp->n_ff; /* llama.cpp: the experts are feed_forward_length wide */
    double d;
    bool has;
    if ((s = llm_get_float_key(g, a, "residual_scale", 0.0, &d, &has, err))) return s;
    if (!has) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s.residual_scale' is missing", a);
    if (!(d > 0 && d < 1e6)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.residual_scale = %g is out of range", a, d);
    hx->residual_scale = (float)d;
    if (hp->head_dim_k != hp->head_dim_v)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s needs key_length == value_length (%d, %d)", a,
                              hp->head_dim_k, hp->head_dim_v);
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", a);
    if (hp->n_head > 1024) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 1024 heads", a);
    if ((int64_t)hp->head_dim_k * hp->head_dim_k * hp->n_head > ((int64_t)1 << 28))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s: a lightning state of %d heads of %d is too large", a,
                              hp->n_head, hp->head_dim_k);
    memset(hx->recr_bits, 0, sizeof hx->recr_bits);
    char key[128];
    snprintf(key, sizeof key, "%s.attention.recurrent_layers", a);
    const int64_t ki = loom_gguf_find_key(g, key);
    if (ki >= 0) return llm_arch_layer_flags(g, hp, ki, key, llm_arch_n_layer_all(g, hp), hx->recr_bits, err);
    int64_t iv;
    if ((s = llm_get_int_key(g, a, "full_attention_interval", false, 8, &iv, err))) return s;
    if (iv < 1 || iv > 4096)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.full_attention_interval = %lld is out of range", a,
                              (long long)iv);
    for (int il = 0; il < hp->n_layer; il++)
        if ((il + 1) % iv != 0) hx->recr_bits[il / 64] |= (uint64_t)1 << (il % 64);
    return LOOM_OK;
}

loom_status llm_minimax01_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, H = hp->n_head, D = hp->head_dim_k, C = H * D;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        if (recurrent(hx, il)) {
            L->attn_post_norm = llm_bind_tensor(be, true, C, 1, 1, err, &st, "blk.%d.attn_norm_2.weight", il);
            L->wqkv = llm_bind_tensor(be, true, E, 3 * C, 1, err, &st, "blk.%d.attn_qkv.weight", il);
            L->attn_gate = llm_bind_tensor(be, true, E, C, 1, err, &st, "blk.%d.attn_gate.weight", il);
            L->wo = llm_bind_tensor(be, true, C, E, 1, err, &st, "blk.%d.attn_output.weight", il);
            llm_kv_layer_type *t = &m->kv_types[il];
            t->rs_ssm = (int32_t)(D * D * H);
        } else {
            llm_bind_attn_any(be, hp, L, il, false, err, &st);
        }
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        llm_bind_experts(be, L, il, E, hx->n_ff_exp, hx->n_expert, err, &st);
    }
    return st;
}

/* the lightning attention of layer il on x [E, T] -> [H D, T] before the norm */
static loom_tensor *lightning(loom_model *m, loom_ctx *ctx, const llm_inputs *in, int il, loom_tensor *x) {
    const loom_model_hparams *hp = &m->hp;
    const llm_layer *ly = &m->layers[il];
    llm_kv_cache *kv = &m->kv;
    const int64_t T = loom_tensor_ne(x, 1), H = hp->n_head, D = hp->head_dim_k, C = H * D, S = kv->n_seq;
    /* the per-head decays, as llama.cpp's inputs: slopes in float, times the layer's scale */
    float lw[1024], lr[1024], lu[1024]; /* H <= 1024 (llm_minimax01_hparams) */
    const float start = powf(2.0f, -powf(2.0f, -(log2f((float)H) - 3.0f)));
    const float scale = (float)(1.0 - 1.0 * il / (hp->n_layer > 1 ? hp->n_layer - 1 : 1) + 1e-5);
    for (int64_t h = 0; h < H; h++) {
        const float sh = start * powf(start, (float)h) * scale; /* s_h: l_h = exp(-s_h) */
        lr[h] = expf(-sh);
        lw[h] = logf(sh); /* wkv6's decay exp(-exp(w)) = l */
        lu[h] = 1.0f / lr[h];
    }
    const int64_t n1[3] = {1, H, 1}, nu[2] = {1, H};
    loom_ctx *ic = loom_ctx_input(ctx);
    loom_tensor *qkv = loom_silu(ctx, loom_mul_mat(ctx, ly->wqkv, x)); /* [3 D H, T]: per head q | k | v */
    const int64_t es = (int64_t)sizeof(float), a3[5] = {D, 3 * D * es, H, (int64_t)loom_tensor_nb(qkv, 1), T};
    loom_tensor *q = loom_cont(ctx, loom_view(ctx, qkv, 0, 5, a3));
    loom_tensor *k = loom_cont(ctx, loom_view(ctx, qkv, (size_t)D * sizeof(float), 5, a3));
    loom_tensor *v = loom_cont(ctx, loom_view(ctx, qkv, (size_t)(2 * D) * sizeof(float), 5, a3));
    loom_tensor *r = loom_mul(ctx, q, loom_from_f32(ic, lr, (size_t)H, 3, n1));
    loom_tensor *w = loom_repeat(ctx, loom_repeat(ctx, loom_from_f32(ic, lw, (size_t)H, 3, n1), 0, (int)D), 2, (int)T);
    loom_tensor *u = loom_cont(ctx, loom_repeat(ctx, loom_from_f32(ic, lu, (size_t)H, 2, nu), 0, (int)D));
    const bool real = kv->rs_ssm && kv->rs_ssm[il];
    const int64_t ne_s[2] = {D * D * H, S};
    loom_tensor *rs = real ? kv->rs_ssm[il] : loom_zeros(ic, LOOM_TYPE_F32, 2, ne_s);
    const bool ip = llm_rs_in_place(m, il);
    loom_tensor *y = llm_named(ip ? loom_rwkv_wkv6_inplace(ctx, k, v, r, u, w, rs, in->seq)
                                  : loom_rwkv_wkv6(ctx, k, v, r, u, w, rs, in->seq),
                               "lightning", il);
    const int64_t nss = D * D * H * S;
    if (real && !ip)
        loom_ctx_forward(ctx, loom_cpy(ctx, loom_view(ctx, y, (size_t)C * (size_t)T * sizeof(float), 1, &nss),
                                       loom_view(ctx, rs, 0, 1, &nss)));
    const int64_t vy[3] = {C, C * es, T};
    return loom_cont(ctx, loom_view(ctx, y, 0, 3, vy)); /* [C, T] */
}

loom_tensor *llm_minimax01_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps, rsc = hx->residual_scale;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        loom_tensor *r = x, *a;
        if (recurrent(hx, il)) {
            loom_tensor *o = loom_rms_norm(ctx, lightning(m, ctx, &in, il, x), ly->attn_post_norm, eps);
            a = loom_mul_mat(ctx, ly->wo, loom_mul(ctx, loom_sigmoid(ctx, loom_mul_mat(ctx, ly->attn_gate, x)), o));
        } else {
            loom_tensor *q, *k, *v;
            llm_qkv_any(ctx, hp, ly, x, T, &q, &k, &v);
            q = llm_named(llm_rope(m, ctx, q, in.pos, il, NULL), "q", il);
            k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
            a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)hp->head_dim_k), 0.0f, NULL);
            a = llm_linear(ctx, ly->wo, ly->bo, a);
        }
        a = llm_named(a, "attn_out", il);
        llm_last_rows(ctx, m, &in, il, &a, &r);
        loom_tensor *f = llm_named(loom_add(ctx, a, loom_scale(ctx, r, rsc)), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, f, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *e = llm_moe_ffn(ctx, ly, n, hx->n_expert, hx->n_expert_used, LLM_MOE_SOFTMAX, true, 0.0f, il);
        h = llm_named(loom_add(ctx, llm_named(e, "ffn_out", il), loom_scale(ctx, n, rsc)), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
