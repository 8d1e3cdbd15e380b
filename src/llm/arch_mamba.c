/*
 * arch_mamba.c - the recurrent-only architectures and Jamba, as llama.cpp's graphs:
 *
 *   mamba  (Mamba, Falcon-Mamba): every layer a Mamba-1 mixer (below)
 *   mamba2 (Mamba-2, Mamba-Codestral): every layer a Mamba-2 mixer (arch_mamba2.c)
 *     h += mixer(rms_norm(h) * attn_norm);  logits = Woutput (rms_norm(h) * output_norm)
 *   jamba  (Jamba, Jamba Reasoning): layers whose attention.head_count_kv entry is 0 are
 *     Mamba-1 mixers with dt/B/C norms, the others attention without rope; every layer
 *     then an FFN: a SwiGLU MLP, or where the layer has ffn_gate_inp experts of
 *     feed_forward_length (softmax router, top expert_used_count, weights as they come)
 *
 * The Mamba-1 mixer (ssm.conv_kernel K, inner_size I, state_size N, time_step_rank R):
 *   [x | z] = Wssm_in h                         (2 I)
 *   c = silu(conv(x) + conv_bias)               (causal depthwise, states per sequence)
 *   [dt | B | C] = Wssm_x c                     (R + 2 N)
 *   dt, B, C = rms_norm of each (* ssm_dt_norm / ssm_b_norm / ssm_c_norm when the file
 *              has them; without weights when ssm.dt_b_c_rms is true: Falcon-Mamba)
 *   dt = Wssm_dt dt + dt_bias                   (I)
 *   y = scan(c, dt, A [N, I], B, C)             (loom_ssm_scan as I heads of 1 channel)
 *   out = Wssm_out ((y + c * D) * silu(z))
 *
 * Models without attention keep one group of cells for the sequences' positions (no
 * K/V; kvcache.c), so the sequence operations work as for the hybrid models.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

static bool is_jamba(const loom_model_hparams *hp) { return !strcmp(hp->arch, "jamba"); }
static bool recurrent(const loom_model *m, int il) {
    return !is_jamba(&m->hp) || (m->hx.recr_bits[il / 64] >> (il % 64) & 1);
}

/* The Mamba-1 keys (ssm.conv_kernel, inner_size, state_size, time_step_rank, and
 * dt_b_c_rms when present) */
static loom_status mamba1_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    static const char *const keys[4] = {"ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank"};
    int64_t v[4];
    loom_status s = LOOM_OK;
    for (int i = 0; i < 4 && !s; i++) s = llm_get_int_key(g, a, keys[i], true, 0, &v[i], err);
    if (s) return s;
    const int64_t K = v[0], I = v[1], N = v[2], R = v[3];
    if (K < 2 || K > 16 || I < 1 || I > (1 << 20) || N < 1 || N > 4096 || R < 1 || R > I)
        return loom_error_set(err, LOOM_ERR_FORMAT,
                              "model: %s.ssm.* (conv_kernel %lld, inner_size %lld, state_size %lld, time_step_rank "
                              "%lld) do not describe a Mamba mixer (kernel 2..16, rank 1..inner_size)", a,
                              (long long)K, (long long)I, (long long)N, (long long)R);
    /* one sequence's states (floats) must stay addressable as the cache's int32 sizes */
    if (N * I > ((int64_t)1 << 28) || (K - 1) * I > ((int64_t)1 << 28))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.ssm.*: a sequence's Mamba state of %lld x %lld floats "
                              "is too large", a, (long long)N, (long long)I);
    char key[96];
    snprintf(key, sizeof key, "%s.ssm.dt_b_c_rms", a);
    bool rms = false;
    if (loom_gguf_find_key(g, key) >= 0 && loom_gguf_get_bool(g, key, &rms))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' must be a boolean", key);
    hx->ssm_conv_k = (int)K;
    hx->ssm_inner = (int)I;
    hx->ssm_n = (int)N;
    hx->ssm_dt_rank = (int)R;
    hx->ssm_dt_b_c_rms = rms;
    return LOOM_OK;
}

loom_status llm_mamba_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    hx->rope_off = true;
    if (!strcmp(hp->arch, "mamba2")) return llm_mamba2_hparams(g, hp, hx, err);
    loom_status s = mamba1_keys(g, hp, hx, err);
    if (s || !is_jamba(hp)) return s;
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: jamba: more than 4096 layers");
    memset(hx->recr_bits, 0, sizeof hx->recr_bits);
    for (int il = 0; il < hp->n_layer; il++) {
        int64_t hkv;
        if ((s = llm_arch_layer_kv_heads(g, hp, il, &hkv, err))) return s;
        if (hkv == 0) hx->recr_bits[il / 64] |= (uint64_t)1 << (il % 64);
    }
    /* experts (where a layer has a router): feed_forward_length wide */
    int64_t ne;
    if ((s = llm_get_int_key(g, hp->arch, "expert_count", false, 0, &ne, err))) return s;
    if (ne > 1) {
        if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
        hx->n_ff_exp = hp->n_ff;
    }
    return LOOM_OK;
}

static void mamba1_bind(loom_model *m, int il, loom_error *err, loom_status *st) {
    const loom_backend *be = m->be;
    const llm_hparams_x *hx = &m->hx;
    llm_layer *L = &m->layers[il];
    const int64_t E = m->hp.n_embd, K = hx->ssm_conv_k, I = hx->ssm_inner, N = hx->ssm_n, R = hx->ssm_dt_rank;
    L->ssm_in = llm_bind_tensor(be, true, E, 2 * I, 1, err, st, "blk.%d.ssm_in.weight", il);
    L->ssm_conv = llm_bind_tensor(be, true, K, I, 1, err, st, "blk.%d.ssm_conv1d.weight", il);
    L->ssm_conv_b = llm_bind_tensor(be, true, I, 1, 1, err, st, "blk.%d.ssm_conv1d.bias", il);
    L->ssm_x = llm_bind_tensor(be, true, I, R + 2 * N, 1, err, st, "blk.%d.ssm_x.weight", il);
    L->ssm_dt = llm_bind_tensor(be, true, R, I, 1, err, st, "blk.%d.ssm_dt.weight", il);
    L->ssm_dt_b = llm_bind_tensor(be, true, I, 1, 1, err, st, "blk.%d.ssm_dt.bias", il);
    L->ssm_a = llm_bind_tensor(be, true, N, I, 1, err, st, "blk.%d.ssm_a", il);
    L->ssm_d = llm_bind_tensor(be, true, I, 1, 1, err, st, "blk.%d.ssm_d", il);
    L->ssm_out = llm_bind_tensor(be, true, I, E, 1, err, st, "blk.%d.ssm_out.weight", il);
    /* Jamba's norms: all three or none (llama.cpp applies them only together) */
    const bool jamba = is_jamba(&m->hp);
    L->ssm_dt_norm = llm_bind_tensor(be, jamba, R, 1, 1, err, st, "blk.%d.ssm_dt_norm.weight", il);
    L->ssm_b_norm = llm_bind_tensor(be, jamba, N, 1, 1, err, st, "blk.%d.ssm_b_norm.weight", il);
    L->ssm_c_norm = llm_bind_tensor(be, jamba, N, 1, 1, err, st, "blk.%d.ssm_c_norm.weight", il);
    if (!*st && (!L->ssm_dt_norm || !L->ssm_b_norm || !L->ssm_c_norm) &&
        (L->ssm_dt_norm || L->ssm_b_norm || L->ssm_c_norm))
        *st = loom_error_set(err, LOOM_ERR_FORMAT,
                             "model: layer %d has some of ssm_dt_norm / ssm_b_norm / ssm_c_norm but not all three", il);
    llm_kv_layer_type *t = &m->kv_types[il];
    t->rs_conv = (int32_t)((K - 1) * I);
    t->rs_ssm = (int32_t)(N * I);
}

loom_status llm_mamba_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    const bool m2 = !strcmp(hp->arch, "mamba2"), jamba = is_jamba(hp);
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        if (m2) llm_mamba2_bind(m, il, err, &st);
        else if (recurrent(m, il)) mamba1_bind(m, il, err, &st);
        else {
            llm_bind_attn_qkv(be, hp, L, il, err, &st);
            L->wo = llm_bind_tensor(be, true, (int64_t)hp->n_head * hp->head_dim_v, E, 1, err, &st,
                                    "blk.%d.attn_output.weight", il);
        }
        if (!jamba || st) continue;
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_gate_inp = hx->n_expert > 1 ? llm_bind_tensor(be, false, E, hx->n_expert, 1, err, &st,
                                                             "blk.%d.ffn_gate_inp.weight", il)
                                           : NULL;
        if (L->ffn_gate_inp) {
            llm_bind_experts(be, L, il, E, F, hx->n_expert, err, &st);
        } else {
            L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
            L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        }
    }
    return st;
}

/* rms_norm of a [n, ...] view's rows (contiguous copy first), times w when w */
static loom_tensor *norm_rows(loom_ctx *ctx, loom_tensor *v, loom_tensor *w, float eps) {
    return loom_rms_norm(ctx, loom_cont(ctx, v), w, eps);
}

static loom_tensor *mamba1_layer(loom_model *m, loom_ctx *ctx, const llm_inputs *in, int il, loom_tensor *h) {
    const llm_hparams_x *hx = &m->hx;
    const llm_layer *ly = &m->layers[il];
    llm_kv_cache *kv = &m->kv;
    const int64_t T = loom_tensor_ne(h, 1), K = hx->ssm_conv_k, I = hx->ssm_inner, N = hx->ssm_n, R = hx->ssm_dt_rank;
    const int64_t S = kv->n_seq, es = (int64_t)sizeof(float);
    const float eps = m->hp.rms_eps;
    /* the states (a dry run has no cache buffers: stand-ins of the same shape) */
    const bool real = kv->rs_conv && kv->rs_conv[il];
    const int64_t ne_rc[2] = {(K - 1) * I, S}, ne_rs[2] = {N * I, S};
    loom_tensor *rc = real ? kv->rs_conv[il] : loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne_rc);
    loom_tensor *rs = real ? kv->rs_ssm[il] : loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne_rs);
    loom_tensor *xz = loom_mul_mat(ctx, ly->ssm_in, h); /* [2 I, T] */
    const int64_t nb = (int64_t)loom_tensor_nb(xz, 1), ax[3] = {I, nb, T};
    loom_tensor *z = loom_cont(ctx, loom_view(ctx, xz, (size_t)(I * es), 3, ax));
    loom_tensor *cv = llm_named(loom_ssm_conv(ctx, loom_view(ctx, xz, 0, 3, ax), ly->ssm_conv, rc, in->seq),
                                "ssm_conv", il);
    const int64_t ncs = (K - 1) * I * S;
    if (real)
        loom_ctx_forward(ctx, loom_cpy(ctx, loom_view(ctx, cv, (size_t)I * (size_t)T * sizeof(float), 1, &ncs),
                                       loom_view(ctx, rc, 0, 1, &ncs)));
    const int64_t a2[3] = {I, (int64_t)loom_tensor_nb(cv, 1), T};
    loom_tensor *c = loom_silu(ctx, loom_add(ctx, loom_cont(ctx, loom_view(ctx, cv, 0, 3, a2)), ly->ssm_conv_b));
    loom_tensor *xdb = loom_mul_mat(ctx, ly->ssm_x, c); /* [R + 2 N, T] */
    const int64_t nbd = (int64_t)loom_tensor_nb(xdb, 1);
    const int64_t adt[3] = {R, nbd, T}, abc[5] = {N, N * es, 2, nbd, T}, a1[5] = {N, N * es, 1, nbd, T};
    loom_tensor *dt = loom_view(ctx, xdb, 0, 3, adt);
    loom_tensor *bc = loom_view(ctx, xdb, (size_t)(R * es), 5, abc);
    if (ly->ssm_dt_norm) {
        dt = norm_rows(ctx, dt, ly->ssm_dt_norm, eps);
        loom_tensor *B = norm_rows(ctx, loom_view(ctx, xdb, (size_t)(R * es), 5, a1), ly->ssm_b_norm, eps);
        loom_tensor *C = norm_rows(ctx, loom_view(ctx, xdb, (size_t)((R + N) * es), 5, a1), ly->ssm_c_norm, eps);
        bc = loom_concat(ctx, B, C, 1);
    } else if (hx->ssm_dt_b_c_rms) {
        dt = norm_rows(ctx, dt, NULL, eps);
        bc = norm_rows(ctx, bc, NULL, eps); /* B and C rows each */
    }
    dt = loom_add(ctx, loom_mul_mat(ctx, ly->ssm_dt, dt), ly->ssm_dt_b); /* [I, T] */
    const int64_t ne_x[3] = {1, I, T};
    const bool ip = llm_rs_in_place(m, il);
    loom_tensor *cx = loom_reshape(ctx, c, 3, ne_x);
    loom_tensor *y = llm_named(ip ? loom_ssm_scan_inplace(ctx, cx, dt, ly->ssm_a, bc, rs, in->seq)
                                  : loom_ssm_scan(ctx, cx, dt, ly->ssm_a, bc, rs, in->seq),
                               "ssm_scan", il);
    const int64_t nss = N * I * S;
    if (real && !ip)
        loom_ctx_forward(ctx, loom_cpy(ctx, loom_view(ctx, y, (size_t)I * (size_t)T * sizeof(float), 1, &nss),
                                       loom_view(ctx, rs, 0, 1, &nss)));
    const int64_t ay[3] = {I, (int64_t)loom_tensor_nb(y, 1), T};
    loom_tensor *o = loom_add(ctx, loom_cont(ctx, loom_view(ctx, y, 0, 3, ay)), loom_mul(ctx, c, ly->ssm_d));
    return loom_mul_mat(ctx, ly->ssm_out, loom_swiglu(ctx, z, o));
}

loom_tensor *llm_mamba_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    const bool m2 = !strcmp(hp->arch, "mamba2");
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        if (m2) {
            x = llm_mamba2_layer(m, ctx, &in, il, x);
        } else if (recurrent(m, il)) {
            x = mamba1_layer(m, ctx, &in, il, x);
        } else { /* jamba's attention: no rope */
            loom_tensor *q, *k, *v;
            llm_llama_qkv(ctx, hp, ly, x, T, il, &q, &k, &v);
            loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask,
                                           1.0f / sqrtf((float)hp->head_dim_k), 0.0f, NULL);
            x = loom_mul_mat(ctx, ly->wo, a);
        }
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), is_jamba(hp) ? "ffn_inp" : "l_out", il);
        if (!is_jamba(hp)) continue;
        x = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        if (ly->ffn_gate_inp) {
            x = llm_moe_ffn_ext(ctx, ly, x, hx->n_expert, hx->n_expert_used, LLM_MOE_SOFTMAX, false, 0.0f, 0.0f, il);
        } else {
            loom_tensor *g = loom_mul_mat(ctx, ly->ffn_gate, x), *u = loom_mul_mat(ctx, ly->ffn_up, x);
            x = loom_mul_mat(ctx, ly->ffn_down, loom_swiglu(ctx, g, u));
        }
        h = llm_named(loom_add(ctx, x, h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
