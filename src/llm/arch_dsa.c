/*
 * arch_dsa.c - DeepSeek sparse attention (general.architecture "deepseek32": DeepSeek-V3.2,
 * V3.2-Exp / Speciale), as llama.cpp's deepseek32 graph: deepseek2's latent attention
 * (split attn_k_b / attn_v_b only) and experts (llm_deepseek2_build), where each query
 * attends only to the top_k keys its lightning indexer scores highest:
 *
 *   qr = rms_norm(Wq_a x) * q_a_norm                       (the q LoRA's normed latent)
 *   iq = rope_neox(Wiq_b qr)       [Di, Hi, T]            (first n_rot dims of each head)
 *   ik = rope_idx(layer_norm(Wik x) * k_norm + k_norm_b)  [Di, 1, T] (eps 1e-6)
 *   iw = Wiproj x / sqrt(Di Hi)     [Hi, T]
 *   score(t, j) = sum_h iw[h, t] relu(iq[:, h, t] . ik[:, j]) + mask(t, j)
 *   keys kept for query t: the top_k scores (loom_top_k_mask; all of them when fewer)
 *
 * Quantized caches store the row [latent key | indexer key] turned by a Walsh-Hadamard
 * transform whose blocks divide both parts (kvcache.c), and both queries are turned by
 * it: the products, hence the scores, are the same (llama.cpp turns its indexer cache
 * too). The scores read the cached indexer keys as F32 rows, so the queries stay F32 (as
 * llama.cpp's fused indexer dequantizes the keys). The indexer key of each token is
 * cached in the layer's K row after the latent key: [c (kv_lora) | k_pe (n_rot) | ik
 * (Di)], so cell copies, defragmentation and shifts carry it (a shift rotates its first
 * n_rot dims with neox rope, seq.c); the attention reads the first kv_lora + n_rot dims.
 * Ties among the scores keep the lower cell first (llama.cpp's partial sort leaves their
 * order unspecified).
 *
 * glm-dsa (GLM-5 / 5.1 / 5.2, as llama.cpp's glm-dsa graph): the same with the indexer's
 * rope normal (not neox), a sigmoid router by default, no YaRN log multiplier (llama.cpp
 * reads none), and attention.indexer.types: per layer "full" (an indexer of its own) or
 * "shared" (the keys the previous full layer picked, no indexer weights or cached
 * indexer key); absent: every layer full below a context of 2^20, GLM-5.2's pattern
 * (layers 0, 1 and every fourth from 2 full) from there, as llama.cpp.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"

/* glm-dsa: the indexer's rope, router default, YaRN and indexer types (see the top) */
static loom_status glm_dsa_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    char key[128];
    int64_t v;
    hx->dsa_rope_mode = LOOM_ROPE_NORMAL;
    hx->yarn_log_mul = 0.0f;
    snprintf(key, sizeof key, "%s.expert_gating_func", a);
    if (loom_gguf_find_key(g, key) < 0) hx->expert_gating = 1;
    else if (!loom_gguf_kv_int(g, loom_gguf_find_key(g, key), &v) && v == 0) hx->expert_gating = 1;
    snprintf(key, sizeof key, "%s.attention.indexer.types", a);
    const int64_t ki = loom_gguf_find_key(g, key);
    uint64_t full[64] = {0};
    int64_t one = -1; /* a single value for every layer */
    loom_status s;
    if (ki >= 0 && loom_gguf_kv_type(g, ki) == LOOM_GGUF_ARRAY) {
        if ((s = llm_arch_layer_flags(g, hp, ki, key, 0, full, err))) return s;
    } else if (ki >= 0) {
        bool b;
        if (loom_gguf_kv_type(g, ki) == LOOM_GGUF_BOOL && !loom_gguf_get_bool(g, key, &b)) one = b;
        else if (loom_gguf_kv_int(g, ki, &one))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s' must be booleans or integers", key);
    }
    for (int il = 0; il < hp->n_layer; il++) {
        bool f = hp->n_ctx_train < 1048576 || il < 2 || (il - 2) % 4 == 0;
        if (ki >= 0) f = one >= 0 ? one != 0 : (full[il / 64] >> (il % 64) & 1);
        if (!f && il == 0)
            return loom_error_set(err, LOOM_ERR_FORMAT,
                                  "model: '%s': layer 0 shares the indexer of no earlier layer", key);
        if (!f) hx->dsa_shared[il / 64] |= (uint64_t)1 << (il % 64);
    }
    return LOOM_OK;
}

loom_status llm_dsa_indexer_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    static const char *const names[3] = {"attention.indexer.head_count", "attention.indexer.key_length",
                                         "attention.indexer.top_k"};
    static const int64_t hi[3] = {1024, 65536, (int64_t)1 << 30};
    int64_t v[3];
    for (int i = 0; i < 3; i++) {
        if ((s = llm_get_int_key(g, a, names[i], true, 0, &v[i], err))) return s;
        if (v[i] < 1 || v[i] > hi[i])
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.%s = %lld is out of range [1, %lld]", a, names[i],
                                  (long long)v[i], (long long)hi[i]);
    }
    if (v[1] < hp->n_rot || v[1] % 2)
        return loom_error_set(err, LOOM_ERR_FORMAT,
                              "model: %s.attention.indexer.key_length = %lld must be even and hold the %d rope dims", a,
                              (long long)v[1], hp->n_rot);
    hx->dsa_heads = (int)v[0];
    hx->dsa_dim = (int)v[1];
    hx->dsa_top_k = (int)v[2];
    return LOOM_OK;
}

loom_status llm_dsa_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_deepseek2_hparams(g, hp, hx, err);
    if (s) return s;
    const char *a = hp->arch;
    if (!hx->mla)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                              "model: %s needs the split latent attention (attention.key_length_mla, attn_k_b / "
                              "attn_v_b)", a);
    if (hx->q_lora < 1)
        return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s.attention.q_lora_rank' is missing", a);
    char key[128];
    snprintf(key, sizeof key, "%s.expert_gating_func", a);
    if (strcmp(a, "glm-dsa") && loom_gguf_find_key(g, key) < 0)
        return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s' is missing", key);
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", a);
    if ((s = llm_dsa_indexer_keys(g, hp, hx, err))) return s;
    hx->dsa_rope_mode = LOOM_ROPE_NEOX;
    memset(hx->dsa_shared, 0, sizeof hx->dsa_shared);
    if (strcmp(a, "glm-dsa")) return LOOM_OK;
    return glm_dsa_keys(g, hp, hx, err);
}

loom_status llm_dsa_bind(loom_model *m, loom_error *err) {
    loom_status st = llm_deepseek2_bind(m, err);
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, HI = hx->dsa_heads, DI = hx->dsa_dim;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        if (llm_dsa_shared(hx, il)) continue; /* glm-dsa: the previous indexer's keys */
        L->idx_wq_b = llm_bind_tensor(be, true, hx->q_lora, HI * DI, 1, err, &st, "blk.%d.indexer.attn_q_b.weight", il);
        L->idx_wk = llm_bind_tensor(be, true, E, DI, 1, err, &st, "blk.%d.indexer.attn_k.weight", il);
        L->idx_k_norm = llm_bind_tensor(be, true, DI, 1, 1, err, &st, "blk.%d.indexer.k_norm.weight", il);
        L->idx_k_norm_b = llm_bind_tensor(be, true, DI, 1, 1, err, &st, "blk.%d.indexer.k_norm.bias", il);
        L->idx_proj = llm_bind_tensor(be, true, E, HI, 1, err, &st, "blk.%d.indexer.proj.weight", il);
        /* the cached K row: the latent key, then the indexer key */
        m->kv_types[il].dk = hp->head_dim_k + (int32_t)DI;
        m->kv_types[il].kdsa = (int32_t)DI;
    }
    return st;
}

/* The most floats one chunk of the indexer's per-head products [L, heads, queries] should
 * take (64 MiB; LOOM_DSA_SCORE_FLOATS overrides it, for tests of the chunked path): a
 * prompt batch of T queries over L keys runs in up to four chunks, which keeps the compute
 * plan a quarter of the unchunked one at long contexts. */
static int64_t dsa_score_floats(void) {
    const char *e = getenv("LOOM_DSA_SCORE_FLOATS");
    long long v = e ? atoll(e) : 0;
    return v > 0 ? (int64_t)v : (int64_t)1 << 24;
}

int64_t llm_dsa_chunk(int64_t L, int64_t heads, int64_t T) {
    int64_t tc = dsa_score_floats() / (L * heads > 0 ? L * heads : 1);
    if (tc < (T + 3) / 4) tc = (T + 3) / 4;
    return tc > T ? T : tc < 1 ? 1 : tc;
}

/* the indexer's rope (neox or normal) of the first n_rot dims of each head of x, with the
 * layer's rope options */
static loom_tensor *rope_idx(const loom_model *m, loom_ctx *ctx, loom_tensor *x, loom_tensor *pos, int il) {
    loom_rope_opts ro;
    float base, scale;
    llm_rope_layer(m, il, NULL, &ro, &base, &scale);
    ro.mode = (loom_rope_mode)m->hx.dsa_rope_mode;
    return loom_rope(ctx, x, pos, m->hp.n_rot, base, scale, &ro);
}

loom_tensor *llm_dsa_attention(loom_model *m, loom_ctx *ctx, const llm_batch *b, const llm_inputs *in, int il,
                               loom_tensor *x, loom_tensor *qr, loom_tensor *q, loom_tensor *k, loom_tensor *v,
                               float kq_scale, loom_tensor **sel_prev) {
    const llm_layer *ly = &m->layers[il];
    const llm_hparams_x *hx = &m->hx;
    llm_kv_cache *kv = &m->kv;
    const int64_t T = loom_tensor_ne(q, 2), H = loom_tensor_ne(q, 1), DA = loom_tensor_ne(k, 0);
    const int64_t HI = hx->dsa_heads, DI = hx->dsa_dim, DV = loom_tensor_ne(v, 0);
    const bool shared = llm_dsa_shared(hx, il);
    loom_tensor *iq = NULL, *iw = NULL;
    if (!shared) {
        /* the indexer's query, key and head weights; the key cached after the latent one */
        const int64_t ne_iq[3] = {DI, HI, T}, ne_ik[3] = {DI, 1, T};
        iq = rope_idx(m, ctx, loom_reshape(ctx, loom_mul_mat(ctx, ly->idx_wq_b, qr), 3, ne_iq), in->pos, il);
        loom_tensor *ik = loom_layer_norm(ctx, loom_mul_mat(ctx, ly->idx_wk, x), ly->idx_k_norm, ly->idx_k_norm_b, 1e-6f);
        ik = rope_idx(m, ctx, loom_reshape(ctx, ik, 3, ne_ik), in->pos, il);
        iw = loom_scale(ctx, loom_mul_mat(ctx, ly->idx_proj, x), 1.0f / sqrtf((float)(DI * HI))); /* [HI, T] */
        /* quantized caches: the row [latent key | indexer key] is turned by blocks that
         * divide both parts (kvcache.c), so both queries are turned by them too */
        iq = llm_kv_rot_k(ctx, kv, il, iq);
        llm_named(iq, "indexer_q", il);
        k = llm_named(loom_concat(ctx, k, llm_named(ik, "indexer_k", il), 0), "k_dsa", il);
    }
    q = llm_kv_rot_k(ctx, kv, il, q);
    llm_kv_put(ctx, kv, il, llm_kv_rot_k(ctx, kv, il, k), llm_kv_rot_v(ctx, kv, il, v),
               b->io ? b->io->store + 4 * il : NULL);
    loom_tensor *kc, *vc;
    llm_kv_get(ctx, kv, il, &kc, &vc); /* kc [DA (+ DI), 1, L] */
    const int64_t L = loom_tensor_ne(kc, 2);
    const int64_t nb1 = (int64_t)loom_tensor_nb(kc, 1), nb2 = (int64_t)loom_tensor_nb(kc, 2);
    const int64_t a_args[5] = {DA, nb1, 1, nb2, L};
    loom_tensor *ka = loom_view(ctx, kc, 0, 5, a_args);
    loom_tensor *sel = shared ? *sel_prev : NULL;
    if (!shared) {
        /* a quantized cache holds whole blocks of DA + DI (llm_kv_init) and DI is a
         * multiple of 32 or refused there, so the indexer part starts on a block; else the
         * view below fails (out of bounds) and the graph carries the error */
        size_t off = 0;
        if (loom_type_row_bytes(loom_tensor_type(kc), DA, &off)) off = SIZE_MAX / 2;
        const int64_t i_args[3] = {DI, nb2, L};
        loom_tensor *ki = loom_view(ctx, kc, off, 3, i_args); /* [DI, L] */
        /* the keys as F32 rows, so that the products below keep the queries in F32 (a
         * product with F16 / Q8_0 / Q4_0 rows would round the queries to that dot type
         * first: more selection flips; llama.cpp's fused indexer dequantizes the keys) */
        if (loom_tensor_type(ki) != LOOM_TYPE_F32) {
            const int64_t ne_k[2] = {DI, L};
            ki = loom_cpy(ctx, ki, loom_empty(ctx, LOOM_TYPE_F32, 2, ne_k));
        }
        /* scores [L, T]: the heads' relu(q.k) weighted and summed, in chunks of queries
         * whose per-head products [L, HI, tc] stay within dsa_score_floats(), at most
         * four chunks (each adds a dozen nodes to a graph of bounded size) */
        const int64_t tc = llm_dsa_chunk(L, HI, T);
        loom_tensor *s = NULL;
        for (int64_t t0 = 0; t0 < T; t0 += tc) {
            const int64_t n = T - t0 < tc ? T - t0 : tc;
            const int64_t q_args[3] = {DI, (int64_t)loom_tensor_nb(iq, 1), HI * n}, w_args[3] = {HI, (int64_t)loom_tensor_nb(iw, 1), n};
            const int64_t ne_s[3] = {L, HI, n}, ne_w[3] = {1, HI, n}, ne_st[2] = {L, n};
            loom_tensor *qc = loom_view(ctx, iq, (size_t)t0 * loom_tensor_nb(iq, 2), 3, q_args);
            loom_tensor *wc = loom_reshape(ctx, loom_cont(ctx, loom_view(ctx, iw, (size_t)t0 * loom_tensor_nb(iw, 1), 3, w_args)), 3, ne_w);
            loom_tensor *sc = loom_relu(ctx, loom_reshape(ctx, loom_mul_mat(ctx, ki, qc), 3, ne_s));
            sc = loom_sum_rows(ctx, loom_cont(ctx, loom_permute(ctx, loom_mul(ctx, sc, wc), 1, 0, 2, 3))); /* [1, L, n] */
            sc = loom_reshape(ctx, sc, 2, ne_st);
            s = s ? loom_concat(ctx, s, sc, 1) : sc;
        }
        s = llm_named(s, "indexer_score", il);
        loom_tensor *mask = llm_kv_layer_mask(kv, in->masks, il);
        sel = llm_named(loom_top_k_mask(ctx, s, mask, hx->dsa_top_k), "kq_mask_top_k", il);
        *sel_prev = sel;
    }
    const loom_attn_opts o = {0};
    loom_tensor *a = llm_kv_rot_v(ctx, kv, il, loom_sdpa_opts(ctx, q, ka, vc, sel, kq_scale, &o));
    const int64_t ne_a[2] = {DV * H, T};
    return loom_reshape(ctx, llm_named(a, "kqv", il), 2, ne_a);
}
