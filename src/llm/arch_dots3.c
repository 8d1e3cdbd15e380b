/*
 * arch_dots3.c - dots3note (general.architecture "dots3note": rednote's dots.llm3 / Dots3
 * Note text model), as llama.cpp's dots3note graph: latent attention in two geometries,
 * full layers with DeepSeek sparse attention (arch_dsa.c's indexer, neox rope) and window
 * layers with a latent of their own, a sigmoid gate per head, DeepSeek-style experts:
 *
 *   per layer il (head count per layer; window layers: kv_lora_rank_swa,
 *   key/value_length_mla_swa, rope.freq_base_swa, the window):
 *     x = rms_norm(h) * attn_norm
 *     qr = rms_norm(Wq_a x) * q_a_norm;  q = Wq_b qr          [nope + rope, H_l, T]
 *     c | k_pe = Wkv_a_mqa x;  c = rms_norm(c) * kv_a_norm;  k_pe = rms_norm(k_pe) * k_norm
 *     q_pe, k_pe = rope (normal) of the rope dims
 *     absorbed: Q = [Wk_b^T q_nope ; q_pe], K = [c ; k_pe], V = c, scores / sqrt(nope + rope)
 *       (no YaRN magnitude), full layers over the indexer's top_k keys
 *     a = Wv_b (attention) per head, times sigmoid(Wgate x) [H_l, T] per head
 *     h = h + Wo a
 *     n = rms_norm(h) * ffn_norm
 *     h = h + (il < leading_dense_block_count ? SwiGLU(n) : experts (router with the
 *         required selection bias) + shared experts)
 *   logits = Woutput (rms_norm(h) * output_norm)
 * attention.indexer.types must name the full layers (llama.cpp binds the indexers by it
 * and runs them on the full layers); the next-token-prediction layers are not run.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

static bool is_swa(const llm_hparams_x *hx, int il) { return llm_layer_is_swa(hx, il); }

loom_status llm_dots3_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    int64_t v;
    if ((s = llm_arch_moe_keys(g, hp, hx, err)) || (s = llm_ds_moe_keys(g, hp, hx, 1, err))) return s;
    static const char *const req[3] = {"expert_gating_func", "leading_dense_block_count", "expert_shared_count"};
    for (int i = 0; i < 3; i++)
        if ((s = llm_get_int_key(g, a, req[i], true, 0, &v, err))) return s;
    /* the two latent geometries */
    static const char *const mla[7] = {"attention.q_lora_rank", "attention.kv_lora_rank", "attention.key_length_mla",
                                       "attention.value_length_mla", "attention.kv_lora_rank_swa",
                                       "attention.key_length_mla_swa", "attention.value_length_mla_swa"};
    int64_t d[7];
    for (int i = 0; i < 7; i++) {
        if ((s = llm_get_int_key(g, a, mla[i], true, 0, &d[i], err))) return s;
        if (d[i] < 1 || d[i] > 65536)
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.%s = %lld is out of range", a, mla[i], (long long)d[i]);
    }
    if (hp->head_dim_k != d[1] + hp->n_rot || hp->head_dim_v != d[1] || hp->n_head_kv != 1)
        return loom_error_set(err, LOOM_ERR_FORMAT,
                              "model: %s: key_length %d / value_length %d / head_count_kv %d do not describe the latent "
                              "cache (kv_lora_rank %lld + rope %d, kv_lora_rank, 1)", a, hp->head_dim_k, hp->head_dim_v,
                              hp->n_head_kv, (long long)d[1], hp->n_rot);
    if (d[2] <= hp->n_rot || d[5] <= hp->n_rot)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s: key_length_mla %lld / key_length_mla_swa %lld leave no "
                              "non-rope dims (rope %d)", a, (long long)d[2], (long long)d[5], hp->n_rot);
    hx->q_lora = (int)d[0];
    hx->kv_lora = (int)d[1];
    hx->head_dim_k_mla = (int)d[2];
    hx->head_dim_v_mla = (int)d[3];
    hx->kv_lora_swa = (int)d[4];
    hx->head_dim_k_mla_swa = (int)d[5];
    hx->head_dim_v_mla_swa = (int)d[6];
    hx->mla = true;
    /* the window layers: window, which layers, their rope base (the global scale) */
    if ((s = llm_get_int_key(g, a, "attention.sliding_window", true, 0, &v, err))) return s;
    if (v < 1 || v > ((int64_t)1 << 30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window = %lld is out of range", a,
                              (long long)v);
    hx->n_swa = (int)v;
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", a);
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", a);
    if (loom_gguf_find_key(g, key) < 0) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s' is missing", key);
    if ((s = llm_arch_swa_layers(g, hp, hx, err))) return s;
    snprintf(key, sizeof key, "%s.rope.freq_base_swa", a);
    if (loom_gguf_find_key(g, key) < 0) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s' is missing", key);
    double base;
    if ((s = llm_get_float_key(g, a, "rope.freq_base_swa", 0.0, &base, NULL, err))) return s;
    if (!(base > 1)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.freq_base_swa = %g is out of range", a, base);
    hx->rope_base_swa = (float)base;
    hx->rope_scale_swa = hp->rope_freq_scale;
    /* the indexer: its keys, on the full layers */
    if ((s = llm_dsa_indexer_keys(g, hp, hx, err))) return s;
    hx->dsa_rope_mode = LOOM_ROPE_NEOX;
    snprintf(key, sizeof key, "%s.attention.indexer.types", a);
    const int64_t ki = loom_gguf_find_key(g, key);
    if (ki < 0) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s' is missing", key);
    uint64_t full[64] = {0};
    if ((s = llm_arch_layer_flags(g, hp, ki, key, 0, full, err))) return s;
    for (int il = 0; il < hp->n_layer; il++) {
        const bool f = full[il / 64] >> (il % 64) & 1;
        if (f == is_swa(hx, il))
            return loom_error_set(err, LOOM_ERR_FORMAT,
                                  "model: '%s': layer %d is %s but %s an indexer (the full layers have one)", key, il,
                                  is_swa(hx, il) ? "a window layer" : "a full layer", f ? "has" : "lacks");
    }
    return LOOM_OK;
}

loom_status llm_dots3_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_gguf *g = loom_model_gguf(m);
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, R = hp->n_rot, QL = hx->q_lora, HI = hx->dsa_heads, DI = hx->dsa_dim;
    loom_status st = llm_bind_embd_output(m, err);
    /* head_count: one per layer (the trunk's or the trunk's and the MTP layers') or one */
    char key[128];
    snprintf(key, sizeof key, "%s.attention.head_count", hp->arch);
    const int64_t ki = loom_gguf_find_key(g, key);
    int nh_len = hp->n_layer;
    if (ki >= 0 && loom_gguf_kv_type(g, ki) == LOOM_GGUF_ARRAY &&
        loom_gguf_kv_array_len(g, ki) == (uint64_t)llm_arch_n_layer_all(g, hp))
        nh_len = llm_arch_n_layer_all(g, hp);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        const bool swa = is_swa(hx, il);
        int64_t H;
        if ((st = llm_get_layer_int(g, hp->arch, "attention.head_count", il, nh_len, hp->n_head, &H, err))) break;
        if (H < 1 || H > hp->n_head) {
            st = loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.head_count of layer %d = %lld is out of range",
                                hp->arch, il, (long long)H);
            break;
        }
        L->n_head = (int)H;
        const int64_t KVL = swa ? hx->kv_lora_swa : hx->kv_lora, DK = swa ? hx->head_dim_k_mla_swa : hx->head_dim_k_mla;
        const int64_t DV = swa ? hx->head_dim_v_mla_swa : hx->head_dim_v_mla, NOPE = DK - R;
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->wq_a = llm_bind_tensor(be, true, E, QL, 1, err, &st, "blk.%d.attn_q_a.weight", il);
        L->q_a_norm = llm_bind_tensor(be, true, QL, 1, 1, err, &st, "blk.%d.attn_q_a_norm.weight", il);
        L->wq_b = llm_bind_tensor(be, true, QL, H * DK, 1, err, &st, "blk.%d.attn_q_b.weight", il);
        L->wkv_a_mqa = llm_bind_tensor(be, true, E, KVL + R, 1, err, &st, "blk.%d.attn_kv_a_mqa.weight", il);
        L->kv_a_norm = llm_bind_tensor(be, true, KVL, 1, 1, err, &st, "blk.%d.attn_kv_a_norm.weight", il);
        L->k_norm = llm_bind_tensor(be, true, R, 1, 1, err, &st, "blk.%d.attn_k_norm.weight", il);
        L->wk_b = llm_bind_tensor(be, true, NOPE, KVL, H, err, &st, "blk.%d.attn_k_b.weight", il);
        L->wv_b = llm_bind_tensor(be, true, KVL, DV, H, err, &st, "blk.%d.attn_v_b.weight", il);
        L->wo = llm_bind_tensor(be, true, H * DV, E, 1, err, &st, "blk.%d.attn_output.weight", il);
        L->attn_gate = llm_bind_tensor(be, true, E, H, 1, err, &st, "blk.%d.attn_gate.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        llm_ds_bind_ffn(be, hp, hx, L, il, err, &st);
        if (il >= hx->n_dense_lead && !L->ffn_exp_probs_b && !st)
            st = loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: tensor 'blk.%d.exp_probs_b.bias' is missing", il);
        llm_kv_layer_type *t = &m->kv_types[il];
        t->dk = (int32_t)(KVL + R);
        t->dv = (int32_t)KVL;
        t->hkv = 1;
        if (swa) continue;
        L->idx_wq_b = llm_bind_tensor(be, true, QL, HI * DI, 1, err, &st, "blk.%d.indexer.attn_q_b.weight", il);
        L->idx_wk = llm_bind_tensor(be, true, E, DI, 1, err, &st, "blk.%d.indexer.attn_k.weight", il);
        L->idx_k_norm = llm_bind_tensor(be, true, DI, 1, 1, err, &st, "blk.%d.indexer.k_norm.weight", il);
        L->idx_k_norm_b = llm_bind_tensor(be, true, DI, 1, 1, err, &st, "blk.%d.indexer.k_norm.bias", il);
        L->idx_proj = llm_bind_tensor(be, true, E, HI, 1, err, &st, "blk.%d.indexer.proj.weight", il);
        t->dk += (int32_t)DI;
        t->kdsa = (int32_t)DI;
    }
    return st;
}

loom_tensor *llm_dots3_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens, R = hp->n_rot;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    loom_tensor *dsa_sel = NULL;
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        const bool swa = is_swa(hx, il);
        const int64_t H = ly->n_head, KVL = swa ? hx->kv_lora_swa : hx->kv_lora;
        const int64_t DK = swa ? hx->head_dim_k_mla_swa : hx->head_dim_k_mla;
        const int64_t DV = swa ? hx->head_dim_v_mla_swa : hx->head_dim_v_mla, NOPE = DK - R;
        const float kq_scale = 1.0f / sqrtf((float)DK);
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        loom_tensor *qr = loom_rms_norm(ctx, loom_mul_mat(ctx, ly->wq_a, x), ly->q_a_norm, eps);
        const int64_t ne_q[3] = {DK, H, T}, ne_kvp[3] = {KVL + R, 1, T};
        loom_tensor *q = loom_reshape(ctx, loom_mul_mat(ctx, ly->wq_b, qr), 3, ne_q);
        loom_tensor *kvp = loom_reshape(ctx, loom_mul_mat(ctx, ly->wkv_a_mqa, x), 3, ne_kvp);
        loom_tensor *c = loom_rms_norm(ctx, loom_cont(ctx, llm_head_part(ctx, kvp, 0, KVL)), ly->kv_a_norm, eps);
        loom_tensor *k_pe = loom_rms_norm(ctx, loom_cont(ctx, llm_head_part(ctx, kvp, KVL, R)), ly->k_norm, eps);
        k_pe = llm_rope(m, ctx, k_pe, in.pos, il, NULL);
        loom_tensor *q_pe = llm_rope(m, ctx, loom_cont(ctx, llm_head_part(ctx, q, NOPE, R)), in.pos, il, NULL);
        /* absorbed: q_nope [NOPE, H, T] -> [NOPE, T, H]; Wk_b [NOPE, KVL, H] per head */
        loom_tensor *qn = loom_cont(ctx, loom_permute(ctx, llm_head_part(ctx, q, 0, NOPE), 0, 2, 1, 3));
        loom_tensor *qa = loom_cont(ctx, loom_permute(ctx, loom_mul_mat(ctx, ly->wk_b, qn), 0, 2, 1, 3));
        loom_tensor *Q = llm_named(loom_concat(ctx, qa, q_pe, 0), "q", il);  /* [KVL + R, H, T] */
        loom_tensor *K = llm_named(loom_concat(ctx, c, k_pe, 0), "k", il);   /* [KVL + R, 1, T] */
        loom_tensor *a = swa ? llm_attention(m, ctx, b, &in, il, Q, K, c, in.mask, kq_scale, 0.0f, NULL)
                             : llm_dsa_attention(m, ctx, b, &in, il, x, qr, Q, K, c, kq_scale, &dsa_sel);
        const int64_t ne_a[3] = {KVL, H, T}, ne_g[3] = {1, H, T}, ne_o[2] = {DV * H, T};
        loom_tensor *ap = loom_cont(ctx, loom_permute(ctx, loom_reshape(ctx, a, 3, ne_a), 0, 2, 1, 3));
        loom_tensor *o = loom_cont(ctx, loom_permute(ctx, loom_mul_mat(ctx, ly->wv_b, ap), 0, 2, 1, 3)); /* [DV, H, T] */
        loom_tensor *gate = loom_reshape(ctx, loom_sigmoid(ctx, loom_mul_mat(ctx, ly->attn_gate, x)), 3, ne_g);
        o = loom_reshape(ctx, loom_mul(ctx, o, gate), 2, ne_o);
        x = llm_named(loom_mul_mat(ctx, ly->wo, o), "attn_out", il);
        llm_last_rows(ctx, m, &in, il, &x, &r);
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        h = llm_named(loom_add(ctx, llm_named(llm_ds_ffn(ctx, hx, ly, n, il), "ffn_out", il), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
