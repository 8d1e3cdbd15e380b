/*
 * kvcache.c - the KV cache of many sequences (backend contract §7): tensors, batch
 * placement, masks, cell copies and compaction.
 *
 * Storage: per layer, K [dk, hkv, cells] and V ([cells, dv, hkv] when the backend
 * wants PermutedV, i.e. flash attention off; else [dv, hkv, cells]) created through
 * loom_ctx_layer(cache_ctx, i) so the bytes count as Cache[i] on layer i's device.
 * Layers are grouped by attention type (model_internal.h): a full group has
 * round_up(n_seq * n_ctx, padding) cells, a sliding-window group
 * round_up(n_seq * (window + n_batch), padding) when that is smaller (not in a model with
 * recurrent layers: there window groups keep every cell, their masks slide). Each group has its
 * own cell metadata (kvcells.c): a batch writes T contiguous free cells of every group
 * and sees the range min..max of the cells of its sequences (rounded to padding).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "quant/alloc.h"

static int64_t round_up64(int64_t x, int64_t m) { return m <= 1 ? x : (x + m - 1) / m * m; }

static bool same_type(llm_kv_layer_type a, llm_kv_layer_type b) { return a.window == b.window && a.chunk == b.chunk; }

/* layer il's K/V shape (types[il] or the model's) */
static void layer_dims(const llm_kv_layer_type *t, const loom_model_hparams *hp, int64_t *dk, int64_t *dv,
                       int64_t *hkv) {
    *dk = t && t->dk > 0 ? t->dk : hp->head_dim_k;
    *dv = t && t->dv > 0 ? t->dv : hp->head_dim_v;
    *hkv = t && t->hkv > 0 ? t->hkv : hp->n_head_kv;
}

loom_status llm_kv_init(llm_kv_cache *kv, loom_backend *be, const loom_model_hparams *hp,
                        const llm_kv_layer_type *types, int n_ctx, int n_seq, int n_batch, loom_type type,
                        loom_error *err) {
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
        for (int il = 0; il < hp->n_layer; il++) {
            int64_t dk, dv, hkv;
            layer_dims(types ? &types[il] : NULL, hp, &dk, &dv, &hkv);
            if (dk % 32 || dv % 32)
                return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                                      "KV cache type %s needs head dims that are multiples of 32 "
                                      "(layer %d has %lld/%lld)", loom_type_name(type), il, (long long)dk,
                                      (long long)dv);
        }
        break;
    default:
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "unsupported KV cache type %s",
                              loom_type_name(type));
    }
    if (n_seq < 1 || n_seq > LOOM_SEQ_MAX)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "n_seq_max %d is outside [1, %d]", n_seq, LOOM_SEQ_MAX);
    if ((int64_t)n_seq * n_ctx > ((int64_t)1 << 26))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "KV cache: n_seq_max %d x n_ctx %d is too large", n_seq,
                              n_ctx);
    kv->n_layer = hp->n_layer;
    kv->n_seq = n_seq;
    kv->n_ctx = n_ctx;
    kv->n_batch = n_batch;
    kv->type = type;
    kv->dk = hp->head_dim_k;
    kv->dv = hp->head_dim_v;
    kv->hkv = hp->n_head_kv;
    kv->layer_group = loom_calloc((size_t)kv->n_layer, sizeof *kv->layer_group);
    kv->share = loom_calloc((size_t)kv->n_layer, sizeof *kv->share);
    kv->ldk = loom_calloc((size_t)kv->n_layer, sizeof *kv->ldk);
    kv->ldv = loom_calloc((size_t)kv->n_layer, sizeof *kv->ldv);
    kv->lhkv = loom_calloc((size_t)kv->n_layer, sizeof *kv->lhkv);
    if (!kv->layer_group || !kv->share || !kv->ldk || !kv->ldv || !kv->lhkv) {
        llm_kv_free(kv);
        return loom_error_set(err, LOOM_ERR_NOMEM, "KV cache: out of host memory");
    }

    /* groups: one per distinct layer type, in order of first appearance; each layer keeps
     * its own K/V shape (grp[].dk/dv/hkv: the largest); a sharing layer reads an earlier
     * layer of its group with the same shape */
    llm_kv_layer_type gt[LLM_KV_MAX_GROUPS];
    for (int il = 0; il < kv->n_layer; il++) {
        llm_kv_layer_type t = types ? types[il] : (llm_kv_layer_type){0};
        if (t.window < 0 || t.chunk < 0 || t.rs_conv < 0 || t.rs_ssm < 0) {
            llm_kv_free(kv);
            return loom_error_set(err, LOOM_ERR_FORMAT, "layer %d: negative sliding window / chunk / state", il);
        }
        if (t.rs_conv > 0 || t.rs_ssm > 0) kv->n_recurrent++;
        if (t.nokv || ((t.rs_conv > 0 || t.rs_ssm > 0) && !t.attn)) { /* states only, or nothing: no cell group */
            kv->layer_group[il] = -1;
            kv->share[il] = il;
            continue;
        }
        int g = 0;
        while (g < kv->n_groups && !same_type(gt[g], t)) g++;
        int64_t dk, dv, hkv;
        layer_dims(&t, hp, &dk, &dv, &hkv);
        if (g == kv->n_groups) {
            if (g == LLM_KV_MAX_GROUPS) {
                llm_kv_free(kv);
                return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "layer %d: more than %d attention types", il,
                                      LLM_KV_MAX_GROUPS);
            }
            gt[kv->n_groups++] = t;
        }
        if (dk < 1 || dv < 1 || hkv < 1 || dk > (1 << 20) || dv > (1 << 20) || hkv > (1 << 20)) {
            llm_kv_free(kv);
            return loom_error_set(err, LOOM_ERR_FORMAT, "layer %d: bad K/V shape %lld/%lld x %lld", il, (long long)dk,
                                  (long long)dv, (long long)hkv);
        }
        if (dk > kv->grp[g].dk) kv->grp[g].dk = dk;
        if (dv > kv->grp[g].dv) kv->grp[g].dv = dv;
        if (hkv > kv->grp[g].hkv) kv->grp[g].hkv = hkv;
        kv->ldk[il] = (int32_t)dk;
        kv->ldv[il] = (int32_t)dv;
        kv->lhkv[il] = (int32_t)hkv;
        kv->layer_group[il] = g;
        kv->share[il] = il;
        if (t.share > 0) {
            int src = t.share - 1;
            if (src >= il || kv->share[src] != src || kv->layer_group[src] != g || kv->ldk[src] != dk ||
                kv->ldv[src] != dv || kv->lhkv[src] != hkv) {
                llm_kv_free(kv);
                return loom_error_set(err, LOOM_ERR_FORMAT,
                                      "layer %d: cannot share layer %d's cache (an earlier layer of its type with "
                                      "a cache of its own)", il, src);
            }
            kv->share[il] = src;
        } else {
            kv->grp[g].n_layers++;
        }
    }
    if (kv->n_groups == 0) {
        if (kv->n_recurrent == 0) {
            llm_kv_free(kv);
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "KV cache: a model without attention or recurrent layers");
        }
        /* recurrent layers only (Mamba): one group of cells without K/V keeps each
         * sequence's positions, which the sequence operations reason from */
        memset(&gt[0], 0, sizeof gt[0]);
        kv->n_groups = 1;
    }
    const int64_t pad = kv->cfg.cache_padding;
    for (int g = 0; g < kv->n_groups; g++) {
        int64_t full = (int64_t)n_seq * n_ctx;
        int64_t n = full;
        /* with recurrent layers a sequence's cells must keep every position its states
         * saw (the sequence operations reason from them): window layers keep them all
         * and only their masks slide */
        if (gt[g].window > 0 && (int64_t)gt[g].window + n_batch < n_ctx && kv->n_recurrent == 0)
            n = (int64_t)n_seq * (gt[g].window + n_batch);
        n = round_up64(n, pad);
        loom_status s = llm_kv_cells_init(&kv->grp[g].cells, n, n_seq, pad, gt[g].window, gt[g].chunk, err);
        if (s) {
            llm_kv_free(kv);
            return s;
        }
        if (n > kv->cells) kv->cells = n;
    }

    if (loom_backend_is_dry_run(be)) {
        /* no buffers: account the bytes the layer(i) allocations would take */
        for (int il = 0; il < kv->n_layer; il++) {
            const llm_kv_layer_type *t = types ? &types[il] : NULL;
            if (t && !t->nokv && (t->rs_conv > 0 || t->rs_ssm > 0)) /* recurrent states */
                loom_backend_account_cache(be, llm_dev_layer(be, il), ((uint64_t)t->rs_conv + (uint64_t)t->rs_ssm) * 4u * (uint64_t)n_seq);
            if (kv->layer_group[il] < 0 || kv->share[il] != il) continue;
            const llm_kv_group *gr = &kv->grp[kv->layer_group[il]];
            int64_t cells = gr->cells.n, dk, dv, hkv;
            llm_kv_layer_dims(kv, il, &dk, &dv, &hkv);
            size_t krow = 0, vrow = 0;
            if (loom_type_row_bytes(type, dk, &krow) || loom_type_row_bytes(type, kv->cfg.permuted_v ? cells : dv, &vrow)) {
                llm_kv_free(kv);
                return loom_error_set(err, LOOM_ERR_INTERNAL, "KV cache: bad row size");
            }
            uint64_t kb = (uint64_t)krow * (uint64_t)hkv * (uint64_t)cells;
            uint64_t vb = (uint64_t)vrow * (uint64_t)hkv * (uint64_t)(kv->cfg.permuted_v ? dv : cells);
            kb = (kb + 31) / 32 * 32;
            vb = (vb + 31) / 32 * 32;
            loom_backend_account_cache(be, llm_dev_layer(be, il), kb + vb);
        }
        return LOOM_OK;
    }
    kv->k = loom_calloc((size_t)kv->n_layer, sizeof *kv->k);
    kv->v = loom_calloc((size_t)kv->n_layer, sizeof *kv->v);
    kv->rs_conv = loom_calloc((size_t)kv->n_layer, sizeof *kv->rs_conv);
    kv->rs_ssm = loom_calloc((size_t)kv->n_layer, sizeof *kv->rs_ssm);
    bool masks_ok = true;
    for (int g = 0; g < kv->n_groups; g++) {
        /* decode steps (one token per sequence) never grow the host masks */
        llm_kv_group *gr = &kv->grp[g];
        if (gr->n_layers == 0) continue; /* positions only (no attention): no mask */
        gr->mask_cap = (size_t)gr->cells.n * (size_t)round_up64(n_seq, kv->cfg.mask_batch_padding);
        gr->mask = loom_malloc(gr->mask_cap * sizeof *gr->mask);
        masks_ok = masks_ok && gr->mask;
    }
    if (!kv->k || !kv->v || !kv->rs_conv || !kv->rs_ssm || !masks_ok) {
        llm_kv_free(kv);
        return loom_error_set(err, LOOM_ERR_NOMEM, "KV cache: out of host memory");
    }
    loom_status s = loom_backend_ctx_new(be, 4 * (int64_t)kv->n_layer + 16, &kv->ctx, err);
    if (s) {
        llm_kv_free(kv);
        return s;
    }
    for (int il = 0; il < kv->n_layer; il++) {
        if (types && !types[il].nokv) { /* recurrent states, zero at first (lfm2: a convolution only) */
            loom_ctx *lc = loom_ctx_layer(kv->ctx, llm_dev_layer(be, il));
            int64_t nc[2] = {types[il].rs_conv, n_seq}, ns[2] = {types[il].rs_ssm, n_seq};
            if (nc[0] > 0) kv->rs_conv[il] = loom_zeros(lc, LOOM_TYPE_F32, 2, nc);
            if (ns[0] > 0) kv->rs_ssm[il] = loom_zeros(lc, LOOM_TYPE_F32, 2, ns);
            if (loom_ctx_status(kv->ctx)) break;
        }
        if (kv->layer_group[il] < 0) continue;
        if (kv->share[il] != il) { /* sources come first */
            kv->k[il] = kv->k[kv->share[il]];
            kv->v[il] = kv->v[kv->share[il]];
            continue;
        }
        const llm_kv_group *gr = &kv->grp[kv->layer_group[il]];
        int64_t cells = gr->cells.n, dk, dv, hkv;
        llm_kv_layer_dims(kv, il, &dk, &dv, &hkv);
        loom_ctx *lc = loom_ctx_layer(kv->ctx, llm_dev_layer(be, il));
        int64_t kne[3] = {dk, hkv, cells};
        int64_t vne_p[3] = {cells, dv, hkv};
        int64_t vne[3] = {dv, hkv, cells};
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

/* Hadamard rotation of quantized caches, per group (model_internal.h) */
void llm_kv_choose_rotation(llm_kv_cache *kv, const llm_kv_layer_type *types, int mode) {
    for (int g = 0; g < LLM_KV_MAX_GROUPS; g++) kv->rot_k[g] = kv->rot_v[g] = 0;
    const bool rot_on = mode > 0 || (mode == 0 && (kv->type == LOOM_TYPE_Q8_0 || kv->type == LOOM_TYPE_Q4_0));
    /* the group types (window, chunk, kdsa) of each group's first layer */
    for (int g = 0; g < kv->n_groups && rot_on; g++) {
        int64_t dk = 0, dv = 0, kdsa = 0;
        bool same = true, vlat = false;
        for (int il = 0; il < kv->n_layer && same; il++) {
            if (kv->layer_group[il] != g || kv->share[il] != il) continue;
            if (!dk) dk = kv->ldk[il], dv = kv->ldv[il], kdsa = types ? types[il].kdsa : 0;
            same = kv->ldk[il] == dk && kv->ldv[il] == dv && (types ? types[il].kdsa : 0) == kdsa;
            vlat = vlat || (types && types[il].vlat);
        }
        if (!same || !dk) continue;
        /* forced (tests): blocks from 4, so that narrow heads are turned too */
        const int64_t lo = mode > 0 ? LLM_KV_ROT_MIN : 64;
        /* DSA rows (kdsa > 0: the latent key, then the indexer key): blocks that divide both
         * parts, so turning the row turns each part alone (arch_dsa.c turns the two
         * queries with the same blocks) */
        const int64_t dr = dk - kdsa;
        if (dk % lo == 0 && dr % lo == 0) {
            int64_t n = lo;
            while (2 * n <= LLM_KV_ROT_MAX && dk % (2 * n) == 0 && dr % (2 * n) == 0) n *= 2;
            kv->rot_k[g] = (int)n;
        }
        if (vlat) { /* MLA: V turned as the K row's first dv dims are */
            kv->rot_v[g] = kv->rot_k[g] > 0 && dv % kv->rot_k[g] == 0 ? kv->rot_k[g] : 0;
        } else if (dv % lo == 0) {
            int64_t n = lo;
            while (2 * n <= 64 && dv % (2 * n) == 0) n *= 2;
            kv->rot_v[g] = (int)n;
        }
    }
}

void llm_kv_free(llm_kv_cache *kv) {
    if (!kv) return;
    loom_ctx_free(kv->ctx);
    loom_free(kv->k);
    loom_free(kv->v);
    loom_free(kv->layer_group);
    loom_free(kv->share);
    loom_free(kv->ldk);
    loom_free(kv->ldv);
    loom_free(kv->lhkv);
    loom_free(kv->rs_conv);
    loom_free(kv->rs_ssm);
    for (int g = 0; g < LLM_KV_MAX_GROUPS; g++) {
        llm_kv_cells_free(&kv->grp[g].cells);
        loom_free(kv->grp[g].mask);
    }
    memset(kv, 0, sizeof *kv);
}

void llm_kv_clear(llm_kv_cache *kv) {
    for (int g = 0; g < kv->n_groups; g++) llm_kv_cells_clear(&kv->grp[g].cells);
}

size_t llm_kv_mask_floats(const llm_kv_cache *kv, int g, int T) {
    return (size_t)kv->grp[g].cells.L * (size_t)round_up64(T, kv->cfg.mask_batch_padding);
}

/* Holes inside the used span make masks wider than needed: compact when over a quarter
 * of the span (and at least two paddings) is empty. */
static bool fragmented(const llm_kv_cells *c) {
    int64_t hi = c->n - 1;
    while (hi >= 0 && c->pos[hi] < 0) hi--;
    int64_t holes = hi + 1 - c->used;
    return holes >= 2 * c->pad && holes * 4 > hi + 1;
}

loom_status llm_kv_prepare(llm_kv_cache *kv, loom_backend *be, const loom_batch *b, loom_error *err) {
    const int64_t T = b->n_tokens;
    int64_t loc[LLM_KV_MAX_GROUPS];
    for (int g = 0; g < kv->n_groups; g++) {
        llm_kv_cells *c = &kv->grp[g].cells;
        loc[g] = llm_kv_cells_find(c, T);
        if ((loc[g] < 0 || fragmented(c)) && c->used > 0 && !loom_backend_is_dry_run(be)) {
            loom_status s = llm_kv_defrag(kv, be, g, err);
            if (s) return s;
            loc[g] = llm_kv_cells_find(c, T);
        }
        if (loc[g] < 0)
            return loom_error_set(err, LOOM_ERR_CONTEXT_FULL,
                                  "KV cache full: no room for %lld tokens (%lld of %lld cells used%s)", (long long)T,
                                  (long long)c->used, (long long)c->n, c->window > 0 ? ", sliding-window layers" : "");
    }
    /* host masks before any change (the only allocation) */
    size_t tpad = (size_t)round_up64(T, kv->cfg.mask_batch_padding);
    for (int g = 0; g < kv->n_groups; g++) {
        llm_kv_group *gr = &kv->grp[g];
        int64_t start, L;
        llm_kv_cells_range(&gr->cells, b, loc[g], &start, &L);
        size_t need = gr->n_layers > 0 ? (size_t)L * tpad : 0;
        if (need > gr->mask_cap) {
            float *nm = loom_realloc(gr->mask, need * sizeof *nm);
            if (!nm) return loom_error_set(err, LOOM_ERR_NOMEM, "decode: out of host memory for the mask");
            gr->mask = nm;
            gr->mask_cap = need;
        }
        gr->cells.loc = loc[g];
        gr->cells.start = start;
        gr->cells.L = L;
    }
    for (int g = 0; g < kv->n_groups; g++) {
        llm_kv_group *gr = &kv->grp[g];
        llm_kv_cells_apply(&gr->cells, b, gr->cells.loc);
        if (gr->n_layers > 0) llm_kv_cells_mask(&gr->cells, b, gr->cells.start, gr->cells.L, (int64_t)tpad, gr->mask);
    }
    return LOOM_OK;
}

void llm_kv_unprepare(llm_kv_cache *kv, const loom_batch *b) {
    for (int g = 0; g < kv->n_groups; g++) llm_kv_cells_unapply(&kv->grp[g].cells, kv->grp[g].cells.loc, b->n_tokens);
}

void llm_kv_commit(llm_kv_cache *kv, const loom_batch *b) {
    for (int g = 0; g < kv->n_groups && kv->n_recurrent == 0; g++) { /* (see llm_kv_init) */
        llm_kv_cells *c = &kv->grp[g].cells;
        if (c->window <= 0) continue;
        for (int32_t r = 0; r < b->n_tokens; r++) {
            const int32_t *ids = b->seq_id + (size_t)r * (size_t)b->seq_capacity;
            for (int32_t k = 0; k < b->n_seq[r]; k++) llm_kv_cells_seq_evict(c, ids[k]);
        }
    }
}

void llm_kv_prepare_reserve(llm_kv_cache *kv, int T) {
    for (int g = 0; g < kv->n_groups; g++) {
        llm_kv_cells *c = &kv->grp[g].cells;
        c->loc = c->n - T;
        c->start = 0;
        c->L = c->n;
    }
}

void llm_kv_store_offsets(const llm_kv_cache *kv, int il, int64_t loc, size_t *k_off, size_t *v_off) {
    const loom_tensor *K = kv->k[il], *V = kv->v[il];
    *k_off = loom_tensor_nb(K, 2) * (size_t)loc; /* a cell is nb2 bytes */
    *v_off = (kv->cfg.permuted_v ? loom_tensor_nb(V, 0) : loom_tensor_nb(V, 2)) * (size_t)loc;
}

void llm_kv_put(loom_ctx *ctx, llm_kv_cache *kv, int il, loom_tensor *k_cur, loom_tensor *v_cur,
                loom_tensor **store) {
    loom_tensor *K = kv->k[il], *V = kv->v[il];
    const llm_kv_group *gr = &kv->grp[kv->layer_group[il]];
    int64_t T = loom_tensor_ne(k_cur, 2), dk, dv, hkv;
    llm_kv_layer_dims(kv, il, &dk, &dv, &hkv);
    size_t k_off, v_off;
    llm_kv_store_offsets(kv, il, gr->cells.loc, &k_off, &v_off);
    /* K: 1-D view of T cells starting at cell loc. */
    int64_t kn = dk * hkv * T;
    loom_tensor *kview = loom_view(ctx, K, k_off, 1, &kn);
    loom_tensor *kcpy = loom_cpy(ctx, k_cur, kview);
    loom_ctx_forward(ctx, kcpy);
    loom_tensor *vview, *vcpy;
    if (kv->cfg.permuted_v) {
        /* value [dv,hkv,T] -> [T,dv,hkv]; target 2-D view [T, dv*hkv] with row stride cells. */
        int64_t args[3] = {T, (int64_t)loom_tensor_nb(V, 1), dv * hkv};
        vview = loom_view(ctx, V, v_off, 3, args);
        loom_tensor *vp = loom_permute(ctx, v_cur, 1, 2, 0, 3);
        vcpy = loom_cpy(ctx, vp, vview);
    } else {
        int64_t vn = dv * hkv * T;
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

void llm_kv_get(loom_ctx *ctx, llm_kv_cache *kv, int il, loom_tensor **k, loom_tensor **v) {
    loom_tensor *K = kv->k[il], *V = kv->v[il];
    const llm_kv_group *gr = &kv->grp[kv->layer_group[il]];
    const llm_kv_cells *c = &gr->cells;
    const int64_t L = c->L;
    int64_t dk, dv, hkv;
    llm_kv_layer_dims(kv, il, &dk, &dv, &hkv);
    size_t k_off, v_off;
    llm_kv_store_offsets(kv, il, c->start, &k_off, &v_off);
    int64_t kargs[5] = {dk, (int64_t)loom_tensor_nb(K, 1), hkv, (int64_t)loom_tensor_nb(K, 2), L};
    *k = loom_view(ctx, K, k_off, 5, kargs);
    if (kv->cfg.permuted_v) {
        int64_t vargs[5] = {L, (int64_t)loom_tensor_nb(V, 1), dv, (int64_t)loom_tensor_nb(V, 2), hkv};
        *v = loom_view(ctx, V, v_off, 5, vargs);
    } else {
        int64_t vargs[5] = {dv, (int64_t)loom_tensor_nb(V, 1), hkv, (int64_t)loom_tensor_nb(V, 2), L};
        *v = loom_view(ctx, V, v_off, 5, vargs);
    }
}

void llm_kv_build_masks(loom_ctx *ctx, llm_kv_cache *kv, int T, bool reserve, loom_tensor **masks,
                        llm_graph_io *io) {
    int64_t tpad = round_up64(T, kv->cfg.mask_batch_padding);
    loom_ctx *in = loom_ctx_input(ctx);
    for (int g = 0; g < LLM_KV_MAX_GROUPS; g++) {
        masks[g] = NULL;
        if (io) io->mask[g] = NULL;
    }
    for (int g = 0; g < kv->n_groups; g++) {
        int64_t ne[2] = {kv->grp[g].cells.L, tpad};
        if (kv->grp[g].n_layers == 0) continue; /* no attention: no mask */
        if (reserve) {
            masks[g] = loom_tensor_set_name(loom_empty(in, kv->cfg.mask_type, 2, ne), "kq_mask");
            continue;
        }
        loom_tensor *m = loom_from_f32(in, kv->grp[g].mask, (size_t)(ne[0] * tpad), 2, ne);
        if (io) io->mask[g] = m;
        if (kv->cfg.mask_type != LOOM_TYPE_F32) {
            loom_tensor *m16 = loom_empty(in, kv->cfg.mask_type, 2, ne);
            m = loom_cpy(ctx, m, m16);
        }
        masks[g] = loom_tensor_set_name(m, g ? "kq_mask_swa" : "kq_mask");
    }
}

/* ------------------------------------------------------------------ rotation */

loom_tensor *llm_kv_rotate(loom_ctx *ctx, int n, loom_tensor *x) {
    if (n <= 0 || !x) return x;
    if (loom_tensor_nb(x, 0) != sizeof(float)) x = loom_cont(ctx, x); /* a strided view of F32 rows */
    return loom_hadamard(ctx, x, n);
}

/* ------------------------------------------------------------------ cell copies */

static bool quantized(loom_type t) { return t != LOOM_TYPE_F16 && t != LOOM_TYPE_F32; }

/* Copy cell a -> cell d of one tensor laid out as [d0, hkv, cells] (K, or V unpermuted). */
static void copy_rows_cell(loom_ctx *ctx, loom_tensor *X, int64_t d0, int64_t hkv, loom_type type, int64_t a,
                           int64_t d, loom_tensor *ids_all, int64_t ids_off) {
    size_t cb = loom_tensor_nb(X, 2);
    int64_t n = d0 * hkv;
    loom_tensor *dst = loom_view(ctx, X, cb * (size_t)d, 1, &n);
    loom_tensor *src;
    if (quantized(type)) {
        /* no quantized->quantized copy: dequantise the rows and quantise them again */
        int64_t ne2[2] = {d0, hkv * (loom_tensor_ne(X, 2))};
        loom_tensor *X2 = loom_reshape(ctx, X, 2, ne2);
        loom_tensor *ids = loom_view(ctx, ids_all, (size_t)ids_off * sizeof(int32_t), 1, &hkv);
        src = loom_get_rows(ctx, X2, ids);
    } else {
        src = loom_view(ctx, X, cb * (size_t)a, 1, &n);
    }
    loom_ctx_forward(ctx, loom_cpy(ctx, src, dst));
}

loom_status llm_kv_copy_cells(llm_kv_cache *kv, loom_backend *be, int g, const int64_t *src, const int64_t *dst,
                              int64_t n, loom_error *err) {
    if (n <= 0 || !kv->ctx) return LOOM_OK;
    int nl = kv->grp[g].n_layers;
    if (nl == 0) return LOOM_OK;
    int64_t per = 8 * (int64_t)nl; /* nodes per moved cell, with margin */
    int64_t max_nodes = loom_backend_max_nodes(be);
    int64_t batch = (max_nodes - 64) / per;
    if (batch < 1) batch = 1;
    if (batch > 4096) batch = 4096;
    bool q = quantized(kv->type);
    int32_t *ids = NULL;
    const int64_t hkv_max = kv->grp[g].hkv; /* the layers' shapes may differ: each its own */
    if (q) {
        ids = loom_malloc((size_t)batch * (size_t)hkv_max * sizeof *ids);
        if (!ids) return loom_error_set(err, LOOM_ERR_NOMEM, "KV cache: out of host memory (cell copies)");
    }
    loom_status s = LOOM_OK;
    kv->epoch++;
    for (int64_t off = 0; off < n && !s; off += batch) {
        int64_t cnt = n - off < batch ? n - off : batch;
        loom_ctx *ctx;
        s = loom_backend_ctx_new(be, 0, &ctx, err);
        if (s) break;
        loom_tensor *ids_t = NULL;
        int64_t ids_h = 0; /* the KV head count ids_t was made for */
        for (int il = 0; il < kv->n_layer; il++) {
            if (kv->layer_group[il] != g || kv->share[il] != il) continue;
            int64_t dk, dv, hkv;
            llm_kv_layer_dims(kv, il, &dk, &dv, &hkv);
            if (q && hkv != ids_h) { /* rows of [d0, hkv * cells]: cell * hkv + h */
                for (int64_t i = 0; i < cnt; i++)
                    for (int64_t h = 0; h < hkv; h++) ids[i * hkv + h] = (int32_t)(src[off + i] * hkv + h);
                int64_t ne = cnt * hkv;
                ids_t = loom_from_i32(loom_ctx_input(ctx), ids, (size_t)ne, 1, &ne);
                ids_h = hkv;
            }
            loom_tensor *K = kv->k[il], *V = kv->v[il];
            for (int64_t i = 0; i < cnt; i++) {
                int64_t a = src[off + i], d = dst[off + i];
                copy_rows_cell(ctx, K, dk, hkv, kv->type, a, d, ids_t, i * hkv);
                if (kv->cfg.permuted_v) {
                    size_t eb = loom_tensor_nb(V, 0);
                    int64_t args[3] = {1, (int64_t)loom_tensor_nb(V, 1), dv * hkv};
                    loom_tensor *vs = loom_view(ctx, V, eb * (size_t)a, 3, args);
                    loom_tensor *vd = loom_view(ctx, V, eb * (size_t)d, 3, args);
                    loom_ctx_forward(ctx, loom_cpy(ctx, vs, vd));
                } else {
                    copy_rows_cell(ctx, V, dv, hkv, kv->type, a, d, ids_t, i * hkv);
                }
            }
        }
        s = loom_ctx_status(ctx);
        if (!s) s = loom_ctx_compute(ctx, 0, NULL);
        if (s) loom_error_set(err, s, "KV cache: copying cells: %s", *loom_ctx_error(ctx) ? loom_ctx_error(ctx) : loom_status_name(s));
        loom_ctx_free(ctx);
    }
    loom_free(ids);
    return s;
}

loom_status llm_kv_defrag(llm_kv_cache *kv, loom_backend *be, int g, loom_error *err) {
    llm_kv_cells *c = &kv->grp[g].cells;
    int64_t *src = loom_malloc((size_t)c->n * 2 * sizeof *src);
    if (!src) return loom_error_set(err, LOOM_ERR_NOMEM, "KV cache: out of host memory (defrag)");
    int64_t *dst = src + c->n, n = 0;
    llm_kv_cells_compact_plan(c, src, dst, &n);
    loom_status s = llm_kv_copy_cells(kv, be, g, src, dst, n, err);
    if (!s) llm_kv_cells_move(c, src, dst, n);
    loom_free(src);
    return s;
}
