/*
 * arch_gemma4.c - Gemma 4 (general.architecture "gemma4"; dense models, with or without
 * per-layer inputs), as llama.cpp's gemma4 graph:
 *   - sliding and full layers listed one by one (sliding_window_pattern: a boolean per
 *     layer), each kind with its own head size (key_length_swa / key_length), KV head
 *     count (head_count_kv per layer) and rotary dims (rope.dimension_count_swa /
 *     rope.dimension_count); full layers rope with rope_freqs (the converter's
 *     "proportional" rope: factors of 1e30 keep the unrotated pairs still), sliding
 *     layers with rope.freq_base_swa (default 10000);
 *   - q = rms_norm per head * q_norm, k = rms_norm * k_norm, v = weightless rms_norm of
 *     Wv x (of Wk x when the layer has no attn_v), all before rope; scores not scaled;
 *   - the last shared_kv_layers layers have no K/V of their own: they attend over the
 *     cache of the last earlier layer of their kind (llama.cpp's rule: layer
 *     n_kv_from_start - 2 for sliding, - 1 for full ones);
 *   - post-attention and post-MLP norms, GELU (tanh, llama.cpp's F16 table) MLP of each
 *     layer's feed_forward_length;
 *   - per-layer inputs (embedding_length_per_layer_input > 0: E2B / E4B): per token a
 *     vector per layer from per_layer_token_embd (* sqrt(n_pl)) plus the projection of
 *     the scaled embedding (per_layer_model_proj / sqrt(n_embd), rms-normed), times
 *     1/sqrt(2); after each layer h += rms_norm(Wproj (gelu(Wgate h) * pl[il])) * post_norm;
 *   - an optional per-layer output scale, embeddings * sqrt(n_embd), tied output,
 *     final soft-cap (30 when the key is absent, as llama.cpp).
 *   - 26B-A4B: layers with a router run experts beside the MLP: the MLP's output
 *     normed by post_ffw_norm_1, plus the experts (GELU, softmax top-k renormalised,
 *     router on rms_norm(h) / sqrt(n_embd) * ffn_gate_inp.scale, optional per-expert
 *     output scales) on rms_norm(h) * pre_ffw_norm_2, normed by post_ffw_norm_2; then
 *     post_ffw_norm over the sum.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

loom_status llm_gemma4_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    char key[128];
    int64_t v;
    double d;
    bool has;
    /* sliding layers: one boolean per layer */
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", a);
    int64_t ki = loom_gguf_find_key(g, key);
    if (ki < 0) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s' is missing", key);
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", a);
    memset(hx->swa_bits, 0, sizeof hx->swa_bits);
    if (loom_gguf_kv_type(g, ki) == LOOM_GGUF_ARRAY) {
        loom_gguf_vtype et;
        const void *data;
        uint64_t n;
        if (loom_gguf_kv_arr(g, ki, &et, &data, &n) || et != LOOM_GGUF_BOOL || n != (uint64_t)hp->n_layer)
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s' must be one boolean per layer (%d)", key,
                                  hp->n_layer);
        const uint8_t *b = data;
        for (int il = 0; il < hp->n_layer; il++)
            if (b[il]) hx->swa_bits[il / 64] |= (uint64_t)1 << (il % 64);
    } else {
        bool all;
        if (loom_gguf_get_bool(g, key, &all))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s' must be one boolean per layer (%d)", key,
                                  hp->n_layer);
        for (int il = 0; all && il < hp->n_layer; il++) hx->swa_bits[il / 64] |= (uint64_t)1 << (il % 64);
    }
    hx->swa_listed = true;
    if ((s = llm_get_int_key(g, a, "attention.sliding_window", true, 0, &v, err))) return s;
    if (v < 1 || v > ((int64_t)1 << 30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window = %lld is out of range", a,
                              (long long)v);
    hx->n_swa = (int)v;
    hx->swa_period = 0;
    if ((s = llm_get_float_key(g, a, "rope.freq_base_swa", 10000.0, &d, NULL, err))) return s;
    if (!(d > 1)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.freq_base_swa = %g is out of range", a, d);
    hx->rope_base_swa = (float)d;
    hx->rope_scale_swa = 1.0f;
    /* sliding layers' shapes */
    int64_t dks, dvs, nrs;
    if ((s = llm_get_int_key(g, a, "attention.key_length_swa", true, 0, &dks, err))) return s;
    if ((s = llm_get_int_key(g, a, "attention.value_length_swa", true, 0, &dvs, err))) return s;
    if (dks < 2 || dks > 65536 || dvs != dks)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.key_length_swa / value_length_swa = %lld / %lld "
                              "(must be equal, in [2, 65536])", a, (long long)dks, (long long)dvs);
    if (hp->head_dim_k != hp->head_dim_v)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.key_length %d != value_length %d", a,
                              hp->head_dim_k, hp->head_dim_v);
    if ((s = llm_get_int_key(g, a, "rope.dimension_count_swa", false, hp->n_rot, &nrs, err))) return s;
    if (nrs < 0 || nrs > dks || nrs % 2)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.dimension_count_swa = %lld is out of range", a,
                              (long long)nrs);
    hx->head_dim_swa = (int)dks;
    hx->n_rot_swa = (int)nrs;
    /* layers without K/V of their own */
    if ((s = llm_get_int_key(g, a, "attention.shared_kv_layers", false, 0, &v, err))) return s;
    if (v < 0 || (v > 0 && hp->n_layer - v < 2))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.shared_kv_layers = %lld leaves fewer than 2 "
                              "layers with a cache of their own", a, (long long)v);
    hx->n_kv_from_start = hp->n_layer - (int)v;
    if ((s = llm_get_int_key(g, a, "embedding_length_per_layer_input", true, 0, &v, err))) return s;
    if (v < 0 || v > 65536)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.embedding_length_per_layer_input = %lld is out of range",
                              a, (long long)v);
    hx->n_embd_pl = (int)v;
    /* llama.cpp caps at 30 when the key is absent (its default) */
    if ((s = llm_get_float_key(g, a, "final_logit_softcapping", 30.0, &d, &has, err))) return s;
    if (has && !(d >= 0)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.final_logit_softcapping = %g is out of range", a, d);
    hx->final_softcap = (float)d;
    hx->embd_scale = sqrtf((float)hp->n_embd);
    /* 26B-A4B: experts beside the MLP on the layers that have a router */
    if ((s = llm_get_int_key(g, a, "expert_count", false, 0, &v, err))) return s;
    if (v > 0 && (s = llm_arch_moe_keys(g, hp, hx, err))) return s;
    return LOOM_OK;
}

loom_status llm_gemma4_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_gguf *g = loom_backend_gguf(be);
    loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, H = hp->n_head, NL = hp->n_layer, NPL = hx->n_embd_pl;
    loom_status st = LOOM_OK;
    if ((st = llm_bind_embd_output(m, err))) return st;
    if (NPL > 0) {
        m->pl_tok_embd = llm_bind_tensor(be, true, NPL * NL, hp->n_vocab, 1, err, &st, "per_layer_token_embd.weight", 0);
        m->pl_model_proj = llm_bind_tensor(be, true, E, NPL * NL, 1, err, &st, "per_layer_model_proj.weight", 0);
        m->pl_proj_norm = llm_bind_tensor(be, true, NPL, 1, 1, err, &st, "per_layer_proj_norm.weight", 0);
    }
    for (int il = 0; il < NL && !st; il++) {
        llm_layer *L = &m->layers[il];
        const bool swa = llm_layer_is_swa(hx, il);
        const int64_t D = swa ? hx->head_dim_swa : hp->head_dim_k;
        int64_t hkv, ff;
        if ((st = llm_get_layer_int(g, hp->arch, "attention.head_count_kv", il, (int)NL, H, &hkv, err))) break;
        if ((st = llm_get_layer_int(g, hp->arch, "feed_forward_length", il, (int)NL, hp->n_ff, &ff, err))) break;
        if (hkv < 1 || hkv > H || H % hkv || ff < 1 || ff > hp->n_ff) {
            st = loom_error_set(err, LOOM_ERR_FORMAT, "model: layer %d: head_count_kv %lld / feed_forward_length %lld "
                                "out of range", il, (long long)hkv, (long long)ff);
            break;
        }
        L->n_head_kv = (int)hkv;
        L->n_ff = (int)ff;
        L->head_dim = (int)D;
        L->n_rot = swa ? hx->n_rot_swa : hp->n_rot;
        const bool own_kv = il < hx->n_kv_from_start;
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->wq = llm_bind_tensor(be, true, E, D * H, 1, err, &st, "blk.%d.attn_q.weight", il);
        L->wk = llm_bind_tensor(be, own_kv, E, D * hkv, 1, err, &st, "blk.%d.attn_k.weight", il);
        L->wv = llm_bind_tensor(be, false, E, D * hkv, 1, err, &st, "blk.%d.attn_v.weight", il);
        L->wo = llm_bind_tensor(be, true, D * H, E, 1, err, &st, "blk.%d.attn_output.weight", il);
        L->q_norm = llm_bind_tensor(be, true, D, 1, 1, err, &st, "blk.%d.attn_q_norm.weight", il);
        L->k_norm = llm_bind_tensor(be, own_kv, D, 1, 1, err, &st, "blk.%d.attn_k_norm.weight", il);
        L->attn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_attention_norm.weight", il);
        L->out_scale = llm_bind_tensor(be, false, 1, 1, 1, err, &st, "blk.%d.layer_output_scale.weight", il);
        if (!swa) L->rope_freqs = llm_bind_tensor(be, false, L->n_rot / 2, 1, 1, err, &st, "blk.%d.rope_freqs.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_gate = llm_bind_tensor(be, true, E, ff, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, ff, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, ff, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        L->ffn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_ffw_norm.weight", il);
        if (NPL > 0) {
            L->pl_inp_gate = llm_bind_tensor(be, true, E, NPL, 1, err, &st, "blk.%d.inp_gate.weight", il);
            L->pl_proj = llm_bind_tensor(be, true, NPL, E, 1, err, &st, "blk.%d.proj.weight", il);
            L->pl_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_norm.weight", il);
        }
        const int64_t NE = hx->n_expert, FE = hx->n_ff_exp;
        char rn[64];
        snprintf(rn, sizeof rn, "blk.%d.ffn_gate_inp.weight", il);
        if (NE == 0 && !st && loom_backend_get_tensor(be, rn))
            st = loom_error_set(err, LOOM_ERR_FORMAT, "model: %s (a router) without %s.expert_count", rn, hp->arch);
        if (NE > 0) L->ffn_gate_inp = llm_bind_tensor(be, false, E, NE, 1, err, &st, "blk.%d.ffn_gate_inp.weight", il);
        if (L->ffn_gate_inp) {
            L->ffn_gate_inp_s = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_gate_inp.scale", il);
            L->ffn_pre_norm_2 = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.pre_ffw_norm_2.weight", il);
            L->ffn_post_norm_1 = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_ffw_norm_1.weight", il);
            L->ffn_post_norm_2 = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_ffw_norm_2.weight", il);
            L->ffn_gate_up_exps = llm_bind_tensor(be, false, E, 2 * FE, NE, err, &st, "blk.%d.ffn_gate_up_exps.weight", il);
            if (!L->ffn_gate_up_exps) {
                L->ffn_gate_exps = llm_bind_tensor(be, true, E, FE, NE, err, &st, "blk.%d.ffn_gate_exps.weight", il);
                L->ffn_up_exps = llm_bind_tensor(be, true, E, FE, NE, err, &st, "blk.%d.ffn_up_exps.weight", il);
            }
            L->ffn_down_exps = llm_bind_tensor(be, true, FE, E, NE, err, &st, "blk.%d.ffn_down_exps.weight", il);
            /* blk.N.ffn_down_exps.scale (per expert): model.c's llm_bind_matmul_scales */
        }
        if (st) break;
        /* the cache: this layer's shape; shared layers read their source's */
        llm_kv_layer_type *t = &m->kv_types[il];
        t->dk = t->dv = (int32_t)D;
        t->hkv = (int32_t)hkv;
        if (!own_kv) t->share = hx->n_kv_from_start - (swa ? 2 : 1) + 1;
    }
    return st;
}

static loom_tensor *rope_l(const loom_model *m, loom_ctx *ctx, loom_tensor *x, loom_tensor *pos, int il) {
    const llm_layer *ly = &m->layers[il];
    loom_rope_opts ro;
    float base, scale;
    llm_rope_layer(m, il, ly->rope_freqs, &ro, &base, &scale);
    return loom_rope(ctx, x, pos, ly->n_rot, base, scale, &ro);
}

/* The experts of a gemma4 layer on n [E, T] (llama.cpp's build_moe_ffn with the router
 * logits of rms_norm(a) / sqrt(E) * ffn_gate_inp.scale, a: the attention output):
 * softmax, top-k, weights renormalised, GELU experts (F16 table), optional per-expert
 * output scales. */
static loom_tensor *gemma4_moe(const loom_model *m, loom_ctx *ctx, const llm_layer *ly, loom_tensor *n, loom_tensor *a,
                               int il) {
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = m->hp.n_embd, T = loom_tensor_ne(n, 1), NE = hx->n_expert, K = hx->n_expert_used;
    const int64_t FE = hx->n_ff_exp;
    loom_tensor *t = loom_scale(ctx, loom_rms_norm(ctx, a, NULL, m->hp.rms_eps), 1.0f / sqrtf((float)E));
    t = loom_mul(ctx, t, ly->ffn_gate_inp_s);
    loom_tensor *probs = loom_softmax(ctx, llm_named(loom_mul_mat(ctx, ly->ffn_gate_inp, t), "ffn_moe_logits", il));
    loom_tensor *sel = loom_cont(ctx, loom_top_k(ctx, probs, (int)K)); /* [K, T] */
    const int64_t ne_p[3] = {1, NE, T}, ne_kt[2] = {K, T}, ne_1kt[3] = {1, K, T}, ne_x[3] = {E, 1, T};
    loom_tensor *w = loom_reshape(ctx, loom_get_rows(ctx, loom_reshape(ctx, probs, 3, ne_p), sel), 2, ne_kt);
    w = loom_div(ctx, w, loom_clamp(ctx, loom_sum_rows(ctx, w), 6.103515625e-5f, INFINITY));
    w = llm_named(loom_reshape(ctx, w, 3, ne_1kt), "ffn_moe_weights", il);
    loom_tensor *xr = loom_reshape(ctx, n, 3, ne_x);
    loom_tensor *g, *u;
    if (ly->ffn_gate_up_exps) {
        loom_tensor *gu = loom_mul_mat_id(ctx, ly->ffn_gate_up_exps, xr, sel); /* [2 FE, K, T] */
        const int64_t args[5] = {FE, (int64_t)loom_tensor_nb(gu, 1), K, (int64_t)loom_tensor_nb(gu, 2), T};
        g = loom_cont(ctx, loom_view(ctx, gu, 0, 5, args));
        u = loom_cont(ctx, loom_view(ctx, gu, (size_t)FE * loom_tensor_nb(gu, 0), 5, args));
    } else {
        g = loom_mul_mat_id(ctx, ly->ffn_gate_exps, xr, sel);
        u = loom_mul_mat_id(ctx, ly->ffn_up_exps, xr, sel);
    }
    loom_tensor *y = loom_mul_mat_id(ctx, ly->ffn_down_exps, loom_mul(ctx, loom_gelu_f16(ctx, g), u), sel); /* [E, K, T] */
    y = loom_mul(ctx, y, w);
    loom_tensor *out = NULL;
    for (int64_t e = 0; e < K; e++) {
        const int64_t args[3] = {E, (int64_t)loom_tensor_nb(y, 2), T};
        loom_tensor *ve = loom_view(ctx, y, (size_t)e * loom_tensor_nb(y, 1), 3, args);
        out = out ? loom_add(ctx, out, ve) : (K == 1 ? loom_cont(ctx, ve) : ve);
    }
    return llm_named(out, "ffn_moe_out", il);
}

loom_tensor *llm_gemma_per_layer_inputs(const loom_model *m, loom_ctx *ctx, loom_tensor *tok, loom_tensor *h0) {
    const int64_t NPL = m->hx.n_embd_pl, NL = m->hp.n_layer, T = loom_tensor_ne(h0, 1);
    const int64_t ne3[3] = {NPL, NL, T};
    loom_tensor *pl = loom_reshape(ctx, loom_get_rows(ctx, m->pl_tok_embd, tok), 3, ne3);
    pl = loom_scale(ctx, pl, sqrtf((float)NPL));
    loom_tensor *pr = loom_scale(ctx, loom_mul_mat(ctx, m->pl_model_proj, h0), 1.0f / sqrtf((float)m->hp.n_embd));
    pr = loom_rms_norm(ctx, loom_reshape(ctx, pr, 3, ne3), m->pl_proj_norm, m->hp.rms_eps);
    pl = loom_scale(ctx, loom_add(ctx, pr, pl), 1.0f / sqrtf(2.0f));
    return llm_named(loom_cont(ctx, loom_permute(ctx, pl, 0, 2, 1, 3)), "per_layer_inputs", -1);
}

loom_tensor *llm_gemma4_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens, H = hp->n_head, NPL = hx->n_embd_pl;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_scale(ctx, loom_get_rows(ctx, m->tok_embd, in.tok), hx->embd_scale), "inp_scaled", -1);
    loom_tensor *pls = NPL > 0 ? llm_gemma_per_layer_inputs(m, ctx, in.tok, h) : NULL;
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        const int64_t D = ly->head_dim, HKV = ly->n_head_kv;
        const bool last = il == hp->n_layer - 1;
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        const int64_t ne_q[3] = {D, H, T}, ne_k[3] = {D, HKV, T};
        loom_tensor *q = loom_rms_norm(ctx, loom_reshape(ctx, loom_mul_mat(ctx, ly->wq, x), 3, ne_q), ly->q_norm, eps);
        q = llm_named(rope_l(m, ctx, q, in.pos, il), "q", il);
        loom_tensor *k = NULL, *v = NULL;
        if (m->kv.share[il] == il) {
            loom_tensor *kp = loom_reshape(ctx, loom_mul_mat(ctx, ly->wk, x), 3, ne_k);
            v = ly->wv ? loom_reshape(ctx, loom_mul_mat(ctx, ly->wv, x), 3, ne_k) : kp;
            v = llm_named(loom_rms_norm(ctx, v, NULL, eps), "v", il);
            k = llm_named(rope_l(m, ctx, loom_rms_norm(ctx, kp, ly->k_norm, eps), in.pos, il), "k", il);
        }
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f, 0.0f, NULL);
        x = loom_mul_mat(ctx, ly->wo, a);
        if (last) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        x = llm_named(loom_rms_norm(ctx, x, ly->attn_post_norm, eps), "attn_post_norm", il);
        h = llm_named(loom_add(ctx, x, r), "attn_out", il);
        x = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *gt = loom_gelu_f16(ctx, loom_mul_mat(ctx, ly->ffn_gate, x)); /* as llama.cpp */
        x = loom_mul_mat(ctx, ly->ffn_down, loom_mul(ctx, gt, loom_mul_mat(ctx, ly->ffn_up, x)));
        if (ly->ffn_gate_inp) { /* experts beside the MLP, each branch normed */
            x = loom_rms_norm(ctx, x, ly->ffn_post_norm_1, eps);
            loom_tensor *n2 = loom_rms_norm(ctx, h, ly->ffn_pre_norm_2, eps);
            x = loom_add(ctx, x, loom_rms_norm(ctx, gemma4_moe(m, ctx, ly, n2, h, il), ly->ffn_post_norm_2, eps));
        }
        x = llm_named(loom_rms_norm(ctx, x, ly->ffn_post_norm, eps), "ffn_post_norm", il);
        h = llm_named(loom_add(ctx, x, h), "ffn_out", il);
        if (pls) {
            const int64_t args[3] = {NPL, (int64_t)loom_tensor_nb(pls, 1), T};
            loom_tensor *pi = loom_view(ctx, pls, (size_t)il * loom_tensor_nb(pls, 2), 3, args); /* [NPL, T] */
            if (last) pi = loom_get_rows(ctx, pi, in.outs);
            loom_tensor *gx = loom_gelu_f16(ctx, loom_mul_mat(ctx, ly->pl_inp_gate, h));
            loom_tensor *p = loom_mul_mat(ctx, ly->pl_proj, loom_mul(ctx, gx, pi));
            h = loom_add(ctx, h, loom_rms_norm(ctx, p, ly->pl_post_norm, eps));
        }
        if (ly->out_scale) h = loom_mul(ctx, h, ly->out_scale);
        h = llm_named(h, "l_out", il);
    }
    h = llm_named(loom_rms_norm(ctx, h, m->output_norm, eps), "result_norm", -1);
    loom_tensor *out = loom_mul_mat(ctx, m->output, h);
    if (hx->final_softcap > 0.0f) out = llm_softcap(ctx, out, hx->final_softcap);
    return llm_named(out, "result_output", -1);
}
