/*
 * arch_qwen35.c - Qwen3.5 text models (general.architecture "qwen35"), as llama.cpp's
 * qwen35 graph: a hybrid of gated attention and gated delta-net (linear attention)
 * layers; every full_attention_interval-th layer (default 4; or the
 * attention.recurrent_layers list) is attention, the others recurrent.
 *
 *   attention layer: x = rms_norm(h) * attn_norm; [q | gate] per head = Wq x;
 *     q, k = rms_norm per head * q/k_norm; rope (interleaved sections: text positions,
 *     llm_mrope_fill); a = attn(q, k, v) * sigmoid(gate); Wo a
 *   recurrent layer: qkv = Wqkv x; z = Wgate x; beta = sigmoid(Wbeta x);
 *     g = softplus(Walpha x + dt) * ssm_a; c = silu(conv(qkv)) (causal, kernel
 *     ssm.conv_kernel, per-sequence state); o = delta rule (c's q, k, v, g, beta;
 *     per-sequence state); Wout (rms_norm(o per head) * ssm_norm * silu(z))
 *   then h += that; h += Wdown (silu(Wgate n) * Wup n), n = rms_norm(h) * post_attention_norm
 *
 * qwen35moe: the same layers with a mixture of experts in place of the MLP (softmax
 * router, top-k renormalised, gate|up fused or not) plus a shared expert scaled by the
 * sigmoid of its own gate (ffn_gate_inp_shexp), as llama.cpp's qwen35moe.
 *
 * qwen3next (Qwen3-Next): qwen35moe's layers with plain neox rope (partial rotary, no
 * sections), beta | alpha from one projection laid out per key head (ssm_ba: R = Hv / Hk
 * betas then R alphas), value head h reading key head h / R (Qwen3.5 reads h % Hk), and
 * in files of older converters one ssm_in projection laid out per key head (q, k, R value
 * heads, R z heads) in place of attn_qkv + attn_gate, as llama.cpp's qwen3next.
 *
 * The recurrent states live in the cache (kvcache.c: rs_conv / rs_ssm per layer, a slot
 * per sequence); the sequence operations keep them consistent (seq.c) and refuse what a
 * state cannot do (drop part of a sequence). On the CPU the delta rule updates the states
 * of the batch's sequences in place (loom_gated_delta_inplace, llm_rs_in_place); a layer on
 * a device keeps the copy form (every slot's state through the result and back).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

static bool is_next(const loom_model_hparams *hp) { return !strcmp(hp->arch, "qwen3next"); }
static bool is_moe(const loom_model_hparams *hp) { return !strcmp(hp->arch, "qwen35moe") || is_next(hp); }

loom_status llm_qwen35_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    int64_t K, din, dk, hv, hk, iv;
    if (is_moe(hp)) { /* experts (expert_feed_forward_length, default n_ff / used) and a shared one */
        if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
        if ((s = llm_get_int_key(g, a, "expert_shared_feed_forward_length", false, hp->n_ff, &iv, err))) return s;
        if (iv < 1 || iv > ((int64_t)1 << 24))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_shared_feed_forward_length = %lld is out of "
                                  "range", a, (long long)iv);
        hx->n_ff_shexp = (int)iv;
    }
    int64_t ssm[5];
    if ((s = llm_arch_ssm_keys(g, a, ssm, err))) return s;
    K = ssm[0], din = ssm[1], dk = ssm[2], hv = ssm[3], hk = ssm[4];
    const bool in_range = K >= 2 && K <= 16 && dk >= 1 && dk <= 4096 && hv >= 1 && hv <= 4096 && hk >= 1;
    /* one sequence's states (floats) must stay addressable as the cache's int32 sizes */
    if (in_range && dk * dk * hv > ((int64_t)1 << 28))
        return loom_error_set(err, LOOM_ERR_FORMAT,
                              "model: %s.ssm.*: a sequence's delta-rule state of %lld x %lld x %lld floats is too large",
                              a, (long long)dk, (long long)dk, (long long)hv);
    if (!in_range || hv % hk || din != dk * hv)
        return loom_error_set(err, LOOM_ERR_FORMAT,
                              "model: %s.ssm.* (conv_kernel %lld, inner_size %lld, state_size %lld, time_step_rank %lld, "
                              "group_count %lld) do not describe a delta net (kernel 2..16, inner_size = state_size x "
                              "time_step_rank, time_step_rank a multiple of group_count)", a, (long long)K,
                              (long long)din, (long long)dk, (long long)hv, (long long)hk);
    hx->ssm_conv_k = (int)K;
    hx->ssm_dk = (int)dk;
    hx->ssm_hv = (int)hv;
    hx->ssm_hk = (int)hk;
    /* which layers recur: the list, else every interval-th layer is attention */
    char key[128];
    snprintf(key, sizeof key, "%s.attention.recurrent_layers", a);
    int64_t ki = loom_gguf_find_key(g, key);
    memset(hx->recr_bits, 0, sizeof hx->recr_bits);
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", a);
    if (ki >= 0) {
        loom_gguf_vtype et;
        const void *data;
        uint64_t n;
        if (loom_gguf_kv_type(g, ki) != LOOM_GGUF_ARRAY || loom_gguf_kv_arr(g, ki, &et, &data, &n) ||
            et != LOOM_GGUF_BOOL || n != (uint64_t)hp->n_layer)
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s' must be one boolean per layer (%d)", key, hp->n_layer);
        const uint8_t *b = data;
        for (int il = 0; il < hp->n_layer; il++)
            if (b[il]) hx->recr_bits[il / 64] |= (uint64_t)1 << (il % 64);
    } else {
        if ((s = llm_get_int_key(g, a, "full_attention_interval", false, 4, &iv, err))) return s;
        if (iv < 1 || iv > 4096)
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.full_attention_interval = %lld is out of range", a,
                                  (long long)iv);
        for (int il = 0; il < hp->n_layer; il++)
            if ((il + 1) % iv != 0) hx->recr_bits[il / 64] |= (uint64_t)1 << (il % 64);
    }
    /* qwen35*: llama.cpp's IMROPE, sections required; qwen3next: plain neox rope */
    return is_next(hp) ? LOOM_OK : llm_arch_mrope_keys(g, hp, hx, true, err);
}

static bool recurrent(const llm_hparams_x *hx, int il) { return hx->recr_bits[il / 64] >> (il % 64) & 1; }

loom_status llm_qwen35_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, F = hp->n_ff, D = hp->head_dim_k, H = hp->n_head, HKV = hp->n_head_kv;
    const int64_t K = hx->ssm_conv_k, Dk = hx->ssm_dk, Hv = hx->ssm_hv, Hk = hx->ssm_hk;
    const int64_t CD = 2 * Dk * Hk + Dk * Hv; /* the convolution's channels: q | k | v */
    loom_status st = llm_bind_embd_output(m, err);
    if (!st && hp->head_dim_k != hp->head_dim_v)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s: key_length %d != value_length %d", hp->arch,
                              hp->head_dim_k, hp->head_dim_v);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_attention_norm.weight", il);
        if (is_moe(hp)) { /* experts (gate | up fused or not) and the sigmoid-gated shared expert */
            const int64_t NE = hx->n_expert, FE = hx->n_ff_exp;
            L->ffn_gate_up_exps = llm_bind_tensor(be, false, E, 2 * FE, NE, err, &st, "blk.%d.ffn_gate_up_exps.weight", il);
            if (L->ffn_gate_up_exps) {
                L->ffn_gate_inp = llm_bind_tensor(be, true, E, NE, 1, err, &st, "blk.%d.ffn_gate_inp.weight", il);
                L->ffn_down_exps = llm_bind_tensor(be, true, FE, E, NE, err, &st, "blk.%d.ffn_down_exps.weight", il);
            } else {
                llm_bind_experts(be, L, il, E, FE, NE, err, &st);
            }
            llm_bind_shared_expert(be, L, il, E, hx->n_ff_shexp, err, &st);
            L->ffn_gate_inp_shexp = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_gate_inp_shexp.weight", il);
        } else {
            L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
            L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        }
        if (recurrent(hx, il)) {
            /* qwen3next files from older converters carry ssm_in instead of attn_qkv + attn_gate */
            L->wqkv = llm_bind_tensor(be, !is_next(hp), E, CD, 1, err, &st, "blk.%d.attn_qkv.weight", il);
            if (L->wqkv || !is_next(hp))
                L->ssm_z = llm_bind_tensor(be, true, E, Dk * Hv, 1, err, &st, "blk.%d.attn_gate.weight", il);
            else
                L->ssm_in = llm_bind_tensor(be, true, E, CD + Dk * Hv, 1, err, &st, "blk.%d.ssm_in.weight", il);
            L->ssm_conv = llm_bind_tensor(be, true, K, CD, 1, err, &st, "blk.%d.ssm_conv1d.weight", il);
            L->ssm_dt = llm_bind_tensor(be, true, Hv, 1, 1, err, &st, "blk.%d.ssm_dt.bias", il);
            L->ssm_a = llm_bind_tensor(be, true, Hv, 1, 1, err, &st, "blk.%d.ssm_a", il);
            if (is_next(hp)) {
                L->ssm_ba = llm_bind_tensor(be, true, E, 2 * Hv, 1, err, &st, "blk.%d.ssm_ba.weight", il);
            } else {
                L->ssm_beta = llm_bind_tensor(be, true, E, Hv, 1, err, &st, "blk.%d.ssm_beta.weight", il);
                L->ssm_alpha = llm_bind_tensor(be, true, E, Hv, 1, err, &st, "blk.%d.ssm_alpha.weight", il);
            }
            L->ssm_norm = llm_bind_tensor(be, true, Dk, 1, 1, err, &st, "blk.%d.ssm_norm.weight", il);
            L->ssm_out = llm_bind_tensor(be, true, Dk * Hv, E, 1, err, &st, "blk.%d.ssm_out.weight", il);
            llm_kv_layer_type *t = &m->kv_types[il];
            t->rs_conv = (int32_t)((K - 1) * CD);
            t->rs_ssm = (int32_t)(Dk * Dk * Hv);
        } else {
            L->wq = llm_bind_tensor(be, true, E, 2 * D * H, 1, err, &st, "blk.%d.attn_q.weight", il);
            L->wk = llm_bind_tensor(be, true, E, D * HKV, 1, err, &st, "blk.%d.attn_k.weight", il);
            L->wv = llm_bind_tensor(be, true, E, D * HKV, 1, err, &st, "blk.%d.attn_v.weight", il);
            L->wo = llm_bind_tensor(be, true, D * H, E, 1, err, &st, "blk.%d.attn_output.weight", il);
            llm_bind_qk_norm(be, hp, L, il, true, err, &st);
        }
    }
    return st;
}

/* the gated attention of layer il on x [E, T] */
static loom_tensor *attn_layer(loom_model *m, loom_ctx *ctx, const llm_batch *b, const llm_inputs *in, int il,
                               loom_tensor *x) {
    const loom_model_hparams *hp = &m->hp;
    const llm_layer *ly = &m->layers[il];
    const int64_t T = loom_tensor_ne(x, 1), D = hp->head_dim_k, H = hp->n_head, HKV = hp->n_head_kv;
    const float eps = hp->rms_eps;
    loom_tensor *qg = loom_mul_mat(ctx, ly->wq, x); /* [2 D H, T]: per head q then gate */
    const int64_t a3[5] = {D, (int64_t)(2 * D) * (int64_t)sizeof(float), H, (int64_t)loom_tensor_nb(qg, 1), T};
    loom_tensor *q = loom_view(ctx, qg, 0, 5, a3);
    loom_tensor *gate = loom_cont(ctx, loom_view(ctx, qg, (size_t)D * sizeof(float), 5, a3));
    const int64_t ne_k[3] = {D, HKV, T}, ne_g[2] = {D * H, T};
    q = loom_rms_norm(ctx, loom_cont(ctx, q), ly->q_norm, eps);
    loom_tensor *k = loom_rms_norm(ctx, loom_reshape(ctx, loom_mul_mat(ctx, ly->wk, x), 3, ne_k), ly->k_norm, eps);
    loom_tensor *v = loom_reshape(ctx, loom_mul_mat(ctx, ly->wv, x), 3, ne_k);
    q = llm_named(llm_rope(m, ctx, q, in->pos, il, NULL), "q", il);
    k = llm_named(llm_rope(m, ctx, k, in->pos, il, NULL), "k", il);
    loom_tensor *a = llm_attention(m, ctx, b, in, il, q, k, v, in->mask, 1.0f / sqrtf((float)D), 0.0f, NULL);
    a = loom_mul(ctx, a, loom_sigmoid(ctx, loom_reshape(ctx, gate, 2, ne_g)));
    return loom_mul_mat(ctx, ly->wo, a);
}

/* the gated delta net of layer il on x [E, T] */
static loom_tensor *delta_layer(loom_model *m, loom_ctx *ctx, const llm_inputs *in, int il, loom_tensor *x) {
    const llm_hparams_x *hx = &m->hx;
    const llm_layer *ly = &m->layers[il];
    llm_kv_cache *kv = &m->kv;
    const int64_t T = loom_tensor_ne(x, 1), K = hx->ssm_conv_k, Dk = hx->ssm_dk, Hv = hx->ssm_hv, Hk = hx->ssm_hk;
    const int64_t CD = 2 * Dk * Hk + Dk * Hv, S = kv->n_seq;
    const float eps = m->hp.rms_eps;
    /* the states (a dry run has no cache buffers: stand-ins of the same shape) */
    const bool real = kv->rs_conv && kv->rs_conv[il];
    const int64_t ne_rc[2] = {(K - 1) * CD, S}, ne_rs[2] = {Dk * Dk * Hv, S};
    loom_tensor *rc = real ? kv->rs_conv[il] : loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne_rc);
    loom_tensor *rs = real ? kv->rs_ssm[il] : loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne_rs);
    const int64_t R = Hv / Hk; /* value heads per key head */
    loom_tensor *qkv, *z, *braw, *araw;
    if (ly->ssm_in) { /* per key head g: q_g [Dk], k_g [Dk], v_g [Dk R], z_g [Dk R] -> q | k | v, z */
        loom_tensor *p = loom_mul_mat(ctx, ly->ssm_in, x);
        const int64_t G = 2 * Dk + 2 * Dk * R, es = (int64_t)sizeof(float), nb = (int64_t)loom_tensor_nb(p, 1);
        const int64_t aqk[5] = {Dk, G * es, Hk, nb, T}, avz[5] = {Dk * R, G * es, Hk, nb, T};
        const int64_t n_qk[2] = {Dk * Hk, T}, n_vz[2] = {Dk * Hv, T};
        loom_tensor *q = loom_cont_nd(ctx, loom_view(ctx, p, 0, 5, aqk), 2, n_qk);
        loom_tensor *k = loom_cont_nd(ctx, loom_view(ctx, p, (size_t)(Dk * es), 5, aqk), 2, n_qk);
        loom_tensor *v = loom_cont_nd(ctx, loom_view(ctx, p, (size_t)(2 * Dk * es), 5, avz), 2, n_vz);
        z = loom_cont_nd(ctx, loom_view(ctx, p, (size_t)((2 * Dk + Dk * R) * es), 5, avz), 2, n_vz);
        qkv = loom_concat(ctx, loom_concat(ctx, q, k, 0), v, 0);
    } else {
        qkv = loom_mul_mat(ctx, ly->wqkv, x); /* [CD, T] */
        z = loom_mul_mat(ctx, ly->ssm_z, x);  /* [Dk Hv, T] */
    }
    if (ly->ssm_ba) { /* per key head g: beta_g [R], alpha_g [R] */
        loom_tensor *ba = loom_mul_mat(ctx, ly->ssm_ba, x);
        const int64_t es = (int64_t)sizeof(float);
        const int64_t a3[5] = {R, 2 * R * es, Hk, (int64_t)loom_tensor_nb(ba, 1), T}, n2[2] = {Hv, T};
        braw = loom_cont_nd(ctx, loom_view(ctx, ba, 0, 5, a3), 2, n2);
        araw = loom_cont_nd(ctx, loom_view(ctx, ba, (size_t)(R * es), 5, a3), 2, n2);
    } else {
        braw = loom_mul_mat(ctx, ly->ssm_beta, x);
        araw = loom_mul_mat(ctx, ly->ssm_alpha, x);
    }
    loom_tensor *beta = loom_sigmoid(ctx, braw);
    loom_tensor *gdec = loom_mul(ctx, loom_softplus(ctx, loom_add(ctx, araw, ly->ssm_dt)), ly->ssm_a); /* [Hv, T] */
    /* convolution with the sequences' states; the new states go back to the cache */
    loom_tensor *cv = llm_named(loom_ssm_conv(ctx, qkv, ly->ssm_conv, rc, in->seq), "ssm_conv", il);
    const int64_t ncs = (K - 1) * CD * S;
    if (real)
        loom_ctx_forward(ctx, loom_cpy(ctx, loom_view(ctx, cv, (size_t)CD * (size_t)T * sizeof(float), 1, &ncs),
                                       loom_view(ctx, rc, 0, 1, &ncs)));
    const int64_t a2[3] = {CD, (int64_t)loom_tensor_nb(cv, 1), T};
    loom_tensor *c = loom_silu(ctx, loom_cont(ctx, loom_view(ctx, cv, 0, 3, a2)));
    /* q | k as [Dk, 2 Hk, T], v as [Dk, Hv, T] (views of the rows) */
    const int64_t aqk[5] = {Dk, (int64_t)(Dk * sizeof(float)), 2 * Hk, (int64_t)loom_tensor_nb(c, 1), T};
    const int64_t av[5] = {Dk, (int64_t)(Dk * sizeof(float)), Hv, (int64_t)loom_tensor_nb(c, 1), T};
    loom_tensor *qk = loom_view(ctx, c, 0, 5, aqk);
    if (is_next(&m->hp) && R > 1) { /* value head h reads key head h / R (the op: h % Hk): expand */
        const int64_t a4[7] = {Dk, Dk * (int64_t)sizeof(float), 1, Dk * (int64_t)sizeof(float), 2 * Hk,
                               (int64_t)loom_tensor_nb(c, 1), T};
        const int64_t ne_e[3] = {Dk, 2 * Hv, T};
        qk = loom_reshape(ctx, loom_repeat(ctx, loom_cont(ctx, loom_view(ctx, c, 0, 7, a4)), 1, (int)R), 3, ne_e);
    }
    loom_tensor *v = loom_view(ctx, c, (size_t)(2 * Dk * Hk) * sizeof(float), 5, av);
    const bool ip = llm_rs_in_place(m, il);
    loom_tensor *gd = llm_named(ip ? loom_gated_delta_inplace(ctx, qk, v, gdec, beta, rs, in->seq, eps)
                                   : loom_gated_delta(ctx, qk, v, gdec, beta, rs, in->seq, eps),
                                "ssm_delta", il);
    const int64_t nss = Dk * Dk * Hv * S;
    if (real && !ip)
        loom_ctx_forward(ctx, loom_cpy(ctx, loom_view(ctx, gd, (size_t)(Dk * Hv) * (size_t)T * sizeof(float), 1, &nss),
                                       loom_view(ctx, rs, 0, 1, &nss)));
    const int64_t ao[5] = {Dk, (int64_t)(Dk * sizeof(float)), Hv, (int64_t)loom_tensor_nb(gd, 1), T};
    loom_tensor *o = loom_rms_norm(ctx, loom_cont(ctx, loom_view(ctx, gd, 0, 5, ao)), ly->ssm_norm, eps);
    const int64_t ne_z[3] = {Dk, Hv, T}, ne_o[2] = {Dk * Hv, T};
    o = loom_mul(ctx, o, loom_silu(ctx, loom_reshape(ctx, z, 3, ne_z)));
    return loom_mul_mat(ctx, ly->ssm_out, loom_reshape(ctx, o, 2, ne_o));
}

loom_tensor *llm_qwen35_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        x = recurrent(&m->hx, il) ? delta_layer(m, ctx, &in, il, x) : attn_layer(m, ctx, b, &in, il, x);
        llm_named(x, "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il), *f;
        if (ly->ffn_gate_inp) { /* qwen35moe: softmax top-k renormalised, plus sigmoid(gate) * shared */
            f = llm_moe_ffn_ext(ctx, ly, n, m->hx.n_expert, m->hx.n_expert_used, LLM_MOE_SOFTMAX, true,
                                m->hx.expert_weights_scale, 0.0f, il);
            loom_tensor *sg = loom_sigmoid(ctx, loom_mul_mat(ctx, ly->ffn_gate_inp_shexp, n)); /* [1, T] */
            loom_tensor *sh = loom_mul_mat(ctx, ly->ffn_down_shexp, loom_swiglu(ctx, loom_mul_mat(ctx, ly->ffn_gate_shexp, n),
                                                                                   loom_mul_mat(ctx, ly->ffn_up_shexp, n)));
            f = loom_add(ctx, f, loom_mul(ctx, sh, sg));
        } else {
            loom_tensor *g = loom_mul_mat(ctx, ly->ffn_gate, n), *u = loom_mul_mat(ctx, ly->ffn_up, n);
            f = loom_mul_mat(ctx, ly->ffn_down, loom_swiglu(ctx, g, u));
        }
        h = llm_named(loom_add(ctx, llm_named(f, "ffn_out", il), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
