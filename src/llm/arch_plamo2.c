/*
 * arch_plamo2.c - PLaMo 2 (general.architecture "plamo2": pfnet PLaMo-2 1B / 2B / 8B,
 * plamo-2-translate), as llama.cpp's plamo2 graph: Mamba layers (attention.head_count_kv
 * 0) and attention layers, each in sandwich norms, each followed by a SwiGLU MLP.
 *
 *   per layer il:
 *     x = rms_norm(h) * attn_norm
 *     Mamba layer (H heads of Dh, inner I = H Dh, state N, conv kernel K; ssm.group_count 0):
 *       [z_h | x_h] per head = Wssm_in x            (the pairs interleaved head by head)
 *       c = silu(conv(x))                          (causal, the last K-1 inputs per sequence)
 *       B | C | dt = Wssm_x c                       (N, N, dt_dim = max(64, n_embd / 16) rows)
 *       B, C, dt = rms_norm each * ssm_b_norm / ssm_c_norm / ssm_dt_norm
 *       y = scan(c as [Dh, H], Wssm_dt dt + ssm_dt_b, A = ssm_a, B, C) + c * ssm_d (per head)
 *       x = Wssm_out (silu(z) * y)
 *     attention layer: q | k | v = Wqkv x; q, k = rms_norm per head * q/k_norm [D, heads];
 *       rope (neox); x = Wo attention(q, k, v; 1/sqrt(value_length))
 *     h = h + rms_norm(x) * post_attention_norm
 *     h = h + rms_norm(Wdown (silu(u1) * u2)) * post_ffw_norm,  u1 | u2 = Wup (rms_norm(h) * ffn_norm)
 *   logits = Woutput (rms_norm(h) * output_norm)     (tied without output.weight)
 * The norms and A / D have no ".weight" in their names (llama.cpp's tensor names).
 *
 * PLaMo 3 (general.architecture "plamo3": pfnet PLaMo-3 2B / 8B / 31B), llama.cpp's
 * plamo3 graph: the attention layer above on every layer (q/k norm weights [D], shared
 * by the heads; scale 1/sqrt(key_length)), the same sandwich norms and fused SwiGLU MLP.
 * With attention.sliding_window > 0, sliding-window layers by
 * attention.sliding_window_pattern (a period, default 8: layer il slides iff
 * il % p < p - 1; Loom also takes one boolean per layer, which llama.cpp ignores), and
 * those rotate with rope.freq_base_swa, else 10000, at scale 1 (llama.cpp's defaults).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

static bool recurrent(const llm_hparams_x *hx, int il) { return hx->recr_bits[il / 64] >> (il % 64) & 1; }

static int64_t dt_dim(const loom_model_hparams *hp) { return hp->n_embd / 16 > 64 ? hp->n_embd / 16 : 64; }

loom_status llm_plamo2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    int64_t v[5];
    loom_status s = llm_arch_ssm_keys(g, a, v, err);
    if (s) return s;
    const int64_t K = v[0], I = v[1], N = v[2], H = v[3], G = v[4];
    if (K < 2 || K > 16 || I < 1 || I > (1 << 20) || N < 1 || N > 4096 || H < 1 || I % H || G != 0)
        return loom_error_set(err, LOOM_ERR_FORMAT,
                              "model: %s.ssm.* (conv_kernel %lld, inner_size %lld, state_size %lld, time_step_rank "
                              "%lld, group_count %lld) do not describe PLaMo 2's Mamba (kernel 2..16, inner_size a "
                              "multiple of the heads, group_count 0)", a, (long long)K, (long long)I, (long long)N,
                              (long long)H, (long long)G);
    if (N * I > ((int64_t)1 << 28) || (K - 1) * I > ((int64_t)1 << 28))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.ssm.*: a sequence's Mamba state is too large", a);
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", a);
    hx->ssm_conv_k = (int)K;
    hx->ssm_inner = (int)I;
    hx->ssm_n = (int)N;
    hx->ssm_hv = (int)H;
    hx->ssm_g = 1;
    memset(hx->recr_bits, 0, sizeof hx->recr_bits);
    for (int il = 0; il < hp->n_layer; il++) {
        int64_t kv;
        if ((s = llm_arch_layer_kv_heads(g, hp, il, &kv, err))) return s;
        if (kv == 0) hx->recr_bits[il / 64] |= (uint64_t)1 << (il % 64);
    }
    return LOOM_OK;
}

loom_status llm_plamo3_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    int64_t w;
    double d;
    loom_status s;
    if ((s = llm_get_int_key(g, a, "attention.sliding_window", false, 0, &w, err))) return s;
    if (w < 0 || w > ((int64_t)1 << 30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window = %lld is out of range", a,
                              (long long)w);
    if (w == 0) return LOOM_OK; /* every layer full, with the global rope */
    hx->n_swa = (int)w;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", a);
    if (loom_gguf_find_key(g, key) >= 0) {
        if ((s = llm_arch_swa_layers(g, hp, hx, err))) return s;
    } else {
        if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", a);
        memset(hx->swa_bits, 0, sizeof hx->swa_bits);
        hx->swa_listed = true;
        for (int il = 0; il < hp->n_layer; il++)
            if (il % 8 < 7) hx->swa_bits[il / 64] |= (uint64_t)1 << (il % 64);
    }
    if ((s = llm_get_float_key(g, a, "rope.freq_base_swa", 10000.0, &d, NULL, err))) return s;
    if (!(d > 1 && d < 1e12))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.freq_base_swa = %g is out of range", a, d);
    hx->rope_base_swa = (float)d;
    hx->rope_scale_swa = 1.0f;
    return LOOM_OK;
}

loom_status llm_plamo2_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, F = hp->n_ff, K = hx->ssm_conv_k, I = hx->ssm_inner, N = hx->ssm_n, H = hx->ssm_hv;
    const int64_t D = hp->head_dim_k, DV = hp->head_dim_v, DT = dt_dim(hp);
    const int64_t QKV = (int64_t)hp->n_head * D + (int64_t)hp->n_head_kv * (D + DV);
    const bool p3 = !strcmp(hp->arch, "plamo3"); /* q/k norm weights shared by the heads */
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        if (recurrent(hx, il)) {
            L->ssm_in = llm_bind_tensor(be, true, E, 2 * I, 1, err, &st, "blk.%d.ssm_in.weight", il);
            L->ssm_conv = llm_bind_tensor(be, true, K, I, 1, err, &st, "blk.%d.ssm_conv1d.weight", il);
            L->ssm_x = llm_bind_tensor(be, true, I, DT + 2 * N, 1, err, &st, "blk.%d.ssm_x.weight", il);
            L->ssm_dt = llm_bind_tensor(be, true, DT, H, 1, err, &st, "blk.%d.ssm_dt.weight", il);
            L->ssm_dt_b = llm_bind_tensor(be, true, H, 1, 1, err, &st, "blk.%d.ssm_dt.bias", il);
            L->ssm_a = llm_bind_tensor(be, true, H, 1, 1, err, &st, "blk.%d.ssm_a", il);
            L->ssm_d = llm_bind_tensor(be, true, H, 1, 1, err, &st, "blk.%d.ssm_d", il);
            L->ssm_out = llm_bind_tensor(be, true, I, E, 1, err, &st, "blk.%d.ssm_out.weight", il);
            L->ssm_dt_norm = llm_bind_tensor(be, true, DT, 1, 1, err, &st, "blk.%d.ssm_dt_norm", il);
            L->ssm_b_norm = llm_bind_tensor(be, true, N, 1, 1, err, &st, "blk.%d.ssm_b_norm", il);
            L->ssm_c_norm = llm_bind_tensor(be, true, N, 1, 1, err, &st, "blk.%d.ssm_c_norm", il);
            llm_kv_layer_type *t = &m->kv_types[il];
            t->rs_conv = (int32_t)((K - 1) * I);
            t->rs_ssm = (int32_t)(N * I);
        } else {
            L->wqkv = llm_bind_tensor(be, true, E, QKV, 1, err, &st, "blk.%d.attn_qkv.weight", il);
            L->q_norm = llm_bind_tensor(be, true, D, p3 ? 1 : hp->n_head, 1, err, &st, "blk.%d.attn_q_norm.weight", il);
            L->k_norm = llm_bind_tensor(be, true, D, p3 ? 1 : hp->n_head_kv, 1, err, &st, "blk.%d.attn_k_norm.weight", il);
            L->wo = llm_bind_tensor(be, true, (int64_t)hp->n_head * DV, E, 1, err, &st, "blk.%d.attn_output.weight", il);
        }
        L->attn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_attention_norm", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, 2 * F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        L->ffn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_ffw_norm", il);
    }
    return st;
}

/* rows [off, off + n) of the first T columns of y, contiguous */
static loom_tensor *rows(loom_ctx *ctx, loom_tensor *y, int64_t off, int64_t n, int64_t T) {
    const int64_t a[3] = {n, (int64_t)loom_tensor_nb(y, 1), T};
    return loom_cont(ctx, loom_view(ctx, y, (size_t)off * sizeof(float), 3, a));
}

static loom_tensor *mamba_layer(loom_model *m, loom_ctx *ctx, const llm_inputs *in, int il, loom_tensor *x) {
    const llm_hparams_x *hx = &m->hx;
    const llm_layer *ly = &m->layers[il];
    llm_kv_cache *kv = &m->kv;
    const float eps = m->hp.rms_eps;
    const int64_t T = loom_tensor_ne(x, 1), K = hx->ssm_conv_k, I = hx->ssm_inner, N = hx->ssm_n, H = hx->ssm_hv;
    const int64_t Dh = I / H, S = kv->n_seq, DT = dt_dim(&m->hp), es = (int64_t)sizeof(float);
    const bool real = kv->rs_conv && kv->rs_conv[il];
    const int64_t ne_rc[2] = {(K - 1) * I, S}, ne_rs[2] = {N * I, S};
    loom_tensor *rc = real ? kv->rs_conv[il] : loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne_rc);
    loom_tensor *rs = real ? kv->rs_ssm[il] : loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne_rs);
    loom_tensor *p = loom_mul_mat(ctx, ly->ssm_in, x); /* [2 I, T]: per head z_h | x_h */
    const int64_t ah[5] = {Dh, 2 * Dh * es, H, (int64_t)loom_tensor_nb(p, 1), T}, ne_i[2] = {I, T};
    loom_tensor *z = loom_cont_nd(ctx, loom_view(ctx, p, 0, 5, ah), 2, ne_i);
    loom_tensor *xi = loom_cont_nd(ctx, loom_view(ctx, p, (size_t)(Dh * es), 5, ah), 2, ne_i);
    loom_tensor *cv = llm_named(loom_ssm_conv(ctx, xi, ly->ssm_conv, rc, in->seq), "ssm_conv", il);
    const int64_t ncs = (K - 1) * I * S;
    if (real)
        loom_ctx_forward(ctx, loom_cpy(ctx, loom_view(ctx, cv, (size_t)I * (size_t)T * sizeof(float), 1, &ncs),
                                       loom_view(ctx, rc, 0, 1, &ncs)));
    loom_tensor *c = loom_silu(ctx, rows(ctx, cv, 0, I, T)); /* [I, T] */
    loom_tensor *bcd = loom_mul_mat(ctx, ly->ssm_x, c);    /* [2 N + DT, T] */
    loom_tensor *B = loom_rms_norm(ctx, rows(ctx, bcd, 0, N, T), ly->ssm_b_norm, eps);
    loom_tensor *C = loom_rms_norm(ctx, rows(ctx, bcd, N, N, T), ly->ssm_c_norm, eps);
    loom_tensor *dt = loom_rms_norm(ctx, rows(ctx, bcd, 2 * N, DT, T), ly->ssm_dt_norm, eps);
    dt = loom_add(ctx, loom_mul_mat(ctx, ly->ssm_dt, dt), ly->ssm_dt_b); /* [H, T] */
    const int64_t ne_b[3] = {N, 1, T}, ne_x[3] = {Dh, H, T}, ne_d[2] = {1, H};
    loom_tensor *bc = loom_concat(ctx, loom_reshape(ctx, B, 3, ne_b), loom_reshape(ctx, C, 3, ne_b), 1); /* [N, 2, T] */
    loom_tensor *xs = loom_reshape(ctx, c, 3, ne_x);
    const bool ip = llm_rs_in_place(m, il);
    loom_tensor *y = llm_named(ip ? loom_ssm_scan_inplace(ctx, xs, dt, ly->ssm_a, bc, rs, in->seq)
                                  : loom_ssm_scan(ctx, xs, dt, ly->ssm_a, bc, rs, in->seq),
                               "ssm_scan", il);
    const int64_t nss = N * I * S;
    if (real && !ip)
        loom_ctx_forward(ctx, loom_cpy(ctx, loom_view(ctx, y, (size_t)I * (size_t)T * sizeof(float), 1, &nss),
                                       loom_view(ctx, rs, 0, 1, &nss)));
    loom_tensor *o = loom_add(ctx, loom_reshape(ctx, rows(ctx, y, 0, I, T), 3, ne_x),
                              loom_mul(ctx, xs, loom_reshape(ctx, ly->ssm_d, 2, ne_d)));
    o = loom_swiglu(ctx, z, loom_reshape(ctx, o, 2, ne_i));
    return loom_mul_mat(ctx, ly->ssm_out, o);
}

static loom_tensor *attn_layer(loom_model *m, loom_ctx *ctx, const llm_batch *b, const llm_inputs *in, int il,
                               loom_tensor *x) {
    const loom_model_hparams *hp = &m->hp;
    const llm_layer *ly = &m->layers[il];
    loom_tensor *q, *k, *v;
    llm_qkv_any(ctx, hp, ly, x, b->n_tokens, &q, &k, &v);
    q = loom_mul(ctx, loom_rms_norm(ctx, q, NULL, hp->rms_eps), ly->q_norm); /* a norm weight per head */
    k = loom_mul(ctx, loom_rms_norm(ctx, k, NULL, hp->rms_eps), ly->k_norm);
    q = llm_named(llm_rope(m, ctx, q, in->pos, il, NULL), "q", il);
    k = llm_named(llm_rope(m, ctx, k, in->pos, il, NULL), "k", il);
    const int64_t ds = strcmp(hp->arch, "plamo3") ? hp->head_dim_v : hp->head_dim_k;
    loom_tensor *a = llm_attention(m, ctx, b, in, il, q, k, v, in->mask, 1.0f / sqrtf((float)ds), 0.0f, NULL);
    return loom_mul_mat(ctx, ly->wo, a);
}

loom_tensor *llm_plamo2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const float eps = hp->rms_eps;
    const int64_t F = hp->n_ff;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        x = recurrent(&m->hx, il) ? mamba_layer(m, ctx, &in, il, x) : attn_layer(m, ctx, b, &in, il, x);
        x = llm_named(loom_rms_norm(ctx, x, ly->attn_post_norm, eps), "attn_out", il);
        llm_last_rows(ctx, m, &in, il, &x, &r);
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *u = loom_mul_mat(ctx, ly->ffn_up, loom_rms_norm(ctx, h, ly->ffn_norm, eps)); /* [2 F, T] */
        loom_tensor *f = loom_mul_mat(ctx, ly->ffn_down, loom_swiglu(ctx, rows(ctx, u, 0, F, loom_tensor_ne(u, 1)), rows(ctx, u, F, F, loom_tensor_ne(u, 1))));
        f = llm_named(loom_rms_norm(ctx, f, ly->ffn_post_norm, eps), "ffn_out", il);
        h = llm_named(loom_add(ctx, f, h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
