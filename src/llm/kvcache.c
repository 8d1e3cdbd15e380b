/*
 * kvcache.c - causal KV cache for one sequence (backend contract §7).
 *
 * Storage: per layer, K [dk, hkv, cells] and V ([cells, dv, hkv] when the backend
 * wants PermutedV, i.e. flash attention off; else [dv, hkv, cells]) created through
 * loom_ctx_layer(cache_ctx, i) so the bytes count as Cache[i] on layer i's device.
 * cells = round_up(n_ctx, cache_padding). The sequence always starts at cell 0, so
 * the cell of position p is p and the history visible to a batch ending at token n
 * is round_up(n, cache_padding) cells (never more than cells).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "quant/alloc.h"

static int64_t round_up64(int64_t x, int64_t m) { return m <= 1 ? x : (x + m - 1) / m * m; }

loom_status llm_kv_init(llm_kv_cache *kv, loom_backend *be, const loom_model_hparams *hp,
                        int n_ctx, loom_type type, loom_error *err) {
    memset(kv, 0, sizeof *kv);
    kv->cfg = loom_backend_cache_config(be);
    if (kv->cfg.cache_padding < 1) kv->cfg.cache_padding = 1;
    if (kv->cfg.mask_batch_padding < 1) kv->cfg.mask_batch_padding = 1;
    if (kv->cfg.mask_type != LOOM_TYPE_F16) kv->cfg.mask_type = LOOM_TYPE_F32;
    bool fa = loom_backend_flash_attn(be);
    switch (type) {
    case LOOM_TYPE_F16: case LOOM_TYPE_F32: break;
    case LOOM_TYPE_Q8_0: case LOOM_TYPE_Q4_0:
        if (!fa)
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                                  "KV cache type %s needs flash attention", loom_type_name(type));
        if (hp->head_dim_k % 32 || hp->head_dim_v % 32)
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                                  "KV cache type %s needs head dims that are multiples of 32 "
                                  "(model has %d/%d)", loom_type_name(type), hp->head_dim_k,
                                  hp->head_dim_v);
        break;
    default:
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "unsupported KV cache type %s",
                              loom_type_name(type));
    }
    kv->n_layer = hp->n_layer;
    kv->type = type;
    kv->dk = hp->head_dim_k;
    kv->dv = hp->head_dim_v;
    kv->hkv = hp->n_head_kv;
    kv->cells = round_up64(n_ctx, kv->cfg.cache_padding);

    if (loom_backend_is_dry_run(be)) {
        /* no buffers: account the bytes the layer(i) allocations would take */
        size_t krow = 0, vrow = 0;
        if (loom_type_row_bytes(type, kv->dk, &krow) ||
            loom_type_row_bytes(type, kv->cfg.permuted_v ? kv->cells : kv->dv, &vrow))
            return loom_error_set(err, LOOM_ERR_INTERNAL, "KV cache: bad row size");
        uint64_t kb = (uint64_t)krow * (uint64_t)kv->hkv * (uint64_t)kv->cells;
        uint64_t vb = (uint64_t)vrow * (uint64_t)kv->hkv *
                      (uint64_t)(kv->cfg.permuted_v ? kv->dv : kv->cells);
        kb = (kb + 31) / 32 * 32;
        vb = (vb + 31) / 32 * 32;
        for (int il = 0; il < kv->n_layer; il++) loom_backend_account_cache(be, il, kb + vb);
        return LOOM_OK;
    }
    kv->k = loom_calloc((size_t)kv->n_layer, sizeof *kv->k);
    kv->v = loom_calloc((size_t)kv->n_layer, sizeof *kv->v);
    if (!kv->k || !kv->v) {
        llm_kv_free(kv);
        return loom_error_set(err, LOOM_ERR_NOMEM, "KV cache: out of host memory");
    }
    loom_status s = loom_backend_ctx_new(be, 4 * (int64_t)kv->n_layer + 16, &kv->ctx, err);
    if (s) {
        llm_kv_free(kv);
        return s;
    }
    for (int il = 0; il < kv->n_layer; il++) {
        loom_ctx *lc = loom_ctx_layer(kv->ctx, il);
        int64_t kne[3] = {kv->dk, kv->hkv, kv->cells};
        int64_t vne_p[3] = {kv->cells, kv->dv, kv->hkv};
        int64_t vne[3] = {kv->dv, kv->hkv, kv->cells};
        kv->k[il] = loom_zeros(lc, type, 3, kne);
        kv->v[il] = loom_zeros(lc, type, 3, kv->cfg.permuted_v ? vne_p : vne);
        char name[LOOM_MAX_NAME];
        snprintf(name, sizeof name, "cache_k_l%d", il);
        loom_tensor_set_name(kv->k[il], name);
        snprintf(name, sizeof name, "cache_v_l%d", il);
        loom_tensor_set_name(kv->v[il], name);
        if (loom_ctx_status(kv->ctx)) break;
    }
    s = loom_ctx_status(kv->ctx);
    if (s) {
        loom_error_set(err, s, "KV cache (%lld cells, %s, %d layers): %s", (long long)kv->cells,
                       loom_type_name(type), kv->n_layer, loom_ctx_error(kv->ctx));
        llm_kv_free(kv);
        return s;
    }
    return LOOM_OK;
}

void llm_kv_free(llm_kv_cache *kv) {
    if (!kv) return;
    loom_ctx_free(kv->ctx);
    loom_free(kv->k);
    loom_free(kv->v);
    memset(kv, 0, sizeof *kv);
}

int64_t llm_kv_n_visible(const llm_kv_cache *kv, int64_t n_end) {
    int64_t L = round_up64(n_end, kv->cfg.cache_padding);
    return L > kv->cells ? kv->cells : L;
}

void llm_kv_store_offsets(const llm_kv_cache *kv, int il, int64_t loc, size_t *k_off, size_t *v_off) {
    const loom_tensor *K = kv->k[il], *V = kv->v[il];
    *k_off = loom_tensor_nb(K, 2) * (size_t)loc; /* a cell is nb2 bytes */
    *v_off = (kv->cfg.permuted_v ? loom_tensor_nb(V, 0) : loom_tensor_nb(V, 2)) * (size_t)loc;
}

void llm_kv_put(loom_ctx *ctx, llm_kv_cache *kv, int il, loom_tensor *k_cur, loom_tensor *v_cur,
                int64_t loc, loom_tensor **store) {
    loom_tensor *K = kv->k[il], *V = kv->v[il];
    int64_t T = loom_tensor_ne(k_cur, 2);
    size_t k_off, v_off;
    llm_kv_store_offsets(kv, il, loc, &k_off, &v_off);
    /* K: 1-D view of T cells starting at cell loc. */
    int64_t kn = kv->dk * kv->hkv * T;
    loom_tensor *kview = loom_view(ctx, K, k_off, 1, &kn);
    loom_tensor *kcpy = loom_cpy(ctx, k_cur, kview);
    loom_ctx_forward(ctx, kcpy);
    loom_tensor *vview, *vcpy;
    if (kv->cfg.permuted_v) {
        /* value [dv,hkv,T] -> [T,dv,hkv]; target 2-D view [T, dv*hkv] with row stride cells. */
        int64_t args[3] = {T, (int64_t)loom_tensor_nb(V, 1), kv->dv * kv->hkv};
        vview = loom_view(ctx, V, v_off, 3, args);
        loom_tensor *vp = loom_permute(ctx, v_cur, 1, 2, 0, 3);
        vcpy = loom_cpy(ctx, vp, vview);
    } else {
        int64_t vn = kv->dv * kv->hkv * T;
        vview = loom_view(ctx, V, v_off, 1, &vn);
        vcpy = loom_cpy(ctx, v_cur, vview);
    }
    loom_ctx_forward(ctx, vcpy);
    if (store) {
        store[0] = kview;
        store[1] = kcpy;
        store[2] = vview;
        store[3] = vcpy;
    }
}

void llm_kv_get(loom_ctx *ctx, llm_kv_cache *kv, int il, int64_t L, loom_tensor **k,
                loom_tensor **v) {
    loom_tensor *K = kv->k[il], *V = kv->v[il];
    int64_t kargs[5] = {kv->dk, (int64_t)loom_tensor_nb(K, 1), kv->hkv,
                        (int64_t)loom_tensor_nb(K, 2), L};
    *k = loom_view(ctx, K, 0, 5, kargs);
    if (kv->cfg.permuted_v) {
        int64_t vargs[5] = {L, (int64_t)loom_tensor_nb(V, 1), kv->dv,
                            (int64_t)loom_tensor_nb(V, 2), kv->hkv};
        *v = loom_view(ctx, V, 0, 5, vargs);
    } else {
        int64_t vargs[5] = {kv->dv, (int64_t)loom_tensor_nb(V, 1), kv->hkv,
                            (int64_t)loom_tensor_nb(V, 2), L};
        *v = loom_view(ctx, V, 0, 5, vargs);
    }
}

size_t llm_kv_mask_floats(const llm_kv_cache *kv, int64_t L, int T) {
    return (size_t)L * (size_t)round_up64(T, kv->cfg.mask_batch_padding);
}

void llm_kv_mask_fill(const llm_kv_cache *kv, int64_t L, int n_past, int T, float *host) {
    int64_t tpad = round_up64(T, kv->cfg.mask_batch_padding);
    for (int64_t i = 0; i < tpad; i++) {
        float *row = host + i * L;
        /* token i sits at position n_past + i and sees cells 0..n_past+i */
        int64_t vis = i < T ? n_past + i + 1 : 0;
        if (vis > L) vis = L;
        for (int64_t j = 0; j < vis; j++) row[j] = 0.0f;
        for (int64_t j = vis; j < L; j++) row[j] = -INFINITY;
    }
}

loom_tensor *llm_kv_mask(loom_ctx *ctx, const llm_kv_cache *kv, int64_t L, int n_past, int T,
                         bool reserve, float *host, loom_tensor **leaf) {
    int64_t tpad = round_up64(T, kv->cfg.mask_batch_padding);
    int64_t ne[2] = {L, tpad};
    loom_ctx *in = loom_ctx_input(ctx);
    if (reserve) return loom_tensor_set_name(loom_empty(in, kv->cfg.mask_type, 2, ne), "kq_mask");
    llm_kv_mask_fill(kv, L, n_past, T, host);
    loom_tensor *m = loom_from_f32(in, host, (size_t)(L * tpad), 2, ne);
    if (leaf) *leaf = m;
    if (kv->cfg.mask_type != LOOM_TYPE_F32) {
        loom_tensor *m16 = loom_empty(in, kv->cfg.mask_type, 2, ne);
        m = loom_cpy(ctx, m, m16);
    }
    return loom_tensor_set_name(m, "kq_mask");
}
