/*
 * arch_mamba2.c - the Mamba-2 mixer layer, as llama.cpp's build_mamba2_layer, for the
 * hybrid architectures that use it (granitehybrid):
 *
 *   p = Wssm_in x = [z (inner) | xBC (inner + 2 G N) | dt (H)]
 *   c = silu(conv(xBC) + conv_bias)   (causal depthwise, kernel ssm.conv_kernel, the
 *                                      last K-1 inputs per sequence in the cache)
 *   x, B, C = c's [inner | G N | G N]; x as H heads of Dh = inner / H
 *   y = scan(x, dt + dt_bias, A, B, C)  (loom_ssm_scan: the state per sequence in the cache)
 *   y = (y + x * D) * silu(z);  y = rms_norm per group of inner / G * ssm_norm
 *   out = Wssm_out y
 *
 * Keys: ssm.conv_kernel, ssm.inner_size, ssm.state_size (N), ssm.time_step_rank (H),
 * ssm.group_count (G).
 */
#include <stdio.h>
#include <string.h>

#include "arch.h"

loom_status llm_mamba2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    int64_t v[5];
    loom_status s = llm_arch_ssm_keys(g, a, v, err);
    if (s) return s;
    const int64_t K = v[0], inner = v[1], N = v[2], H = v[3], G = v[4];
    if (K < 2 || K > 16 || inner < 1 || inner > (1 << 20) || N < 1 || N > 4096 || H < 1 || H > inner || inner % H ||
        G < 1 || H % G || inner % G)
        return loom_error_set(err, LOOM_ERR_FORMAT,
                              "model: %s.ssm.* (conv_kernel %lld, inner_size %lld, state_size %lld, time_step_rank %lld, "
                              "group_count %lld) do not describe a Mamba-2 mixer (kernel 2..16, inner_size a multiple "
                              "of time_step_rank heads, heads a multiple of group_count)", a, (long long)K,
                              (long long)inner, (long long)N, (long long)H, (long long)G);
    /* one sequence's states (floats) must stay addressable as the cache's int32 sizes */
    if (N * inner > ((int64_t)1 << 28) || (K - 1) * (inner + 2 * G * N) > ((int64_t)1 << 28))
        return loom_error_set(err, LOOM_ERR_FORMAT,
                              "model: %s.ssm.*: a sequence's Mamba state of %lld x %lld floats is too large", a,
                              (long long)N, (long long)inner);
    hx->ssm_conv_k = (int)K;
    hx->ssm_inner = (int)inner;
    hx->ssm_n = (int)N;
    hx->ssm_hv = (int)H;
    hx->ssm_g = (int)G;
    return LOOM_OK;
}

void llm_mamba2_bind(loom_model *m, int il, loom_error *err, loom_status *st) {
    const loom_backend *be = m->be;
    const llm_hparams_x *hx = &m->hx;
    llm_layer *L = &m->layers[il];
    const int64_t E = m->hp.n_embd, K = hx->ssm_conv_k, I = hx->ssm_inner, N = hx->ssm_n, H = hx->ssm_hv, G = hx->ssm_g;
    const int64_t C = I + 2 * G * N;
    L->ssm_in = llm_bind_tensor(be, true, E, I + C + H, 1, err, st, "blk.%d.ssm_in.weight", il);
    L->ssm_conv = llm_bind_tensor(be, true, K, C, 1, err, st, "blk.%d.ssm_conv1d.weight", il);
    L->ssm_conv_b = llm_bind_tensor(be, false, C, 1, 1, err, st, "blk.%d.ssm_conv1d.bias", il);
    L->ssm_dt = llm_bind_tensor(be, true, H, 1, 1, err, st, "blk.%d.ssm_dt.bias", il);
    L->ssm_a = llm_bind_tensor(be, true, 1, H, 1, err, st, "blk.%d.ssm_a", il);
    L->ssm_d = llm_bind_tensor(be, true, 1, H, 1, err, st, "blk.%d.ssm_d", il);
    /* the grouped norm: optional in falcon-h1 only (its mamba_rms_norm setting) */
    L->ssm_norm = llm_bind_tensor(be, strcmp(m->hp.arch, "falcon-h1") != 0, I / G, G, 1, err, st,
                                  "blk.%d.ssm_norm.weight", il);
    L->ssm_out = llm_bind_tensor(be, true, I, E, 1, err, st, "blk.%d.ssm_out.weight", il);
    llm_kv_layer_type *t = &m->kv_types[il];
    t->rs_conv = (int32_t)((K - 1) * C);
    t->rs_ssm = (int32_t)(N * I);
}

loom_tensor *llm_mamba2_layer(loom_model *m, loom_ctx *ctx, const llm_inputs *in, int il, loom_tensor *x) {
    const llm_hparams_x *hx = &m->hx;
    const llm_layer *ly = &m->layers[il];
    llm_kv_cache *kv = &m->kv;
    const int64_t T = loom_tensor_ne(x, 1), K = hx->ssm_conv_k, I = hx->ssm_inner, N = hx->ssm_n, H = hx->ssm_hv;
    const int64_t G = hx->ssm_g, C = I + 2 * G * N, Dh = I / H, S = kv->n_seq, es = (int64_t)sizeof(float);
    /* the states (a dry run has no cache buffers: stand-ins of the same shape) */
    const bool real = kv->rs_conv && kv->rs_conv[il];
    const int64_t ne_rc[2] = {(K - 1) * C, S}, ne_rs[2] = {N * I, S};
    loom_tensor *rc = real ? kv->rs_conv[il] : loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne_rc);
    loom_tensor *rs = real ? kv->rs_ssm[il] : loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne_rs);
    loom_tensor *p = loom_mul_mat(ctx, ly->ssm_in, x); /* [I + C + H, T] */
    const int64_t nb = (int64_t)loom_tensor_nb(p, 1);
    const int64_t az[3] = {I, nb, T}, ax[3] = {C, nb, T}, adt[3] = {H, nb, T};
    loom_tensor *z = loom_cont(ctx, loom_view(ctx, p, 0, 3, az));
    loom_tensor *xbc = loom_view(ctx, p, (size_t)(I * es), 3, ax);
    loom_tensor *dt = loom_add(ctx, loom_cont(ctx, loom_view(ctx, p, (size_t)((I + C) * es), 3, adt)), ly->ssm_dt);
    /* convolution with the sequences' states; the new states go back to the cache */
    loom_tensor *cv = llm_named(loom_ssm_conv(ctx, xbc, ly->ssm_conv, rc, in->seq), "ssm_conv", il);
    const int64_t ncs = (K - 1) * C * S;
    if (real)
        loom_ctx_forward(ctx, loom_cpy(ctx, loom_view(ctx, cv, (size_t)C * (size_t)T * sizeof(float), 1, &ncs),
                                       loom_view(ctx, rc, 0, 1, &ncs)));
    const int64_t a2[3] = {C, (int64_t)loom_tensor_nb(cv, 1), T};
    loom_tensor *c = loom_cont(ctx, loom_view(ctx, cv, 0, 3, a2));
    if (ly->ssm_conv_b) c = loom_add(ctx, c, ly->ssm_conv_b);
    c = loom_silu(ctx, c);
    const int64_t nbc = (int64_t)loom_tensor_nb(c, 1);
    const int64_t axs[5] = {Dh, Dh * es, H, nbc, T}, abc[5] = {N, N * es, 2 * G, nbc, T};
    loom_tensor *xs = loom_view(ctx, c, 0, 5, axs);
    loom_tensor *bc = loom_view(ctx, c, (size_t)(I * es), 5, abc);
    const bool ip = llm_rs_in_place(m, il);
    loom_tensor *y = llm_named(ip ? loom_ssm_scan_inplace(ctx, xs, dt, ly->ssm_a, bc, rs, in->seq)
                                  : loom_ssm_scan(ctx, xs, dt, ly->ssm_a, bc, rs, in->seq),
                               "ssm_scan", il);
    const int64_t nss = N * I * S;
    if (real && !ip)
        loom_ctx_forward(ctx, loom_cpy(ctx, loom_view(ctx, y, (size_t)I * (size_t)T * sizeof(float), 1, &nss),
                                       loom_view(ctx, rs, 0, 1, &nss)));
    const int64_t ay[5] = {Dh, Dh * es, H, (int64_t)loom_tensor_nb(y, 1), T};
    loom_tensor *o = loom_add(ctx, loom_cont(ctx, loom_view(ctx, y, 0, 5, ay)), loom_mul(ctx, xs, ly->ssm_d));
    const int64_t ne_i[2] = {I, T}, ne_g[3] = {I / G, G, T};
    o = loom_swiglu(ctx, z, loom_reshape(ctx, o, 2, ne_i));
    if (ly->ssm_norm)
        o = loom_reshape(ctx, loom_rms_norm(ctx, loom_reshape(ctx, o, 3, ne_g), ly->ssm_norm, m->hp.rms_eps), 2, ne_i);
    return loom_mul_mat(ctx, ly->ssm_out, o);
}
