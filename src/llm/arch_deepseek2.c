/*
 * arch_deepseek2.c - DeepSeek-V2 / V2.5 / V3 and their kin (general.architecture
 * "deepseek2": DeepSeek-Coder-V2, DeepSeek-V2-Lite, Moonlight ...; "mistral4": Mistral's
 * models of this design, the same graph, llama.cpp's YaRN mscale special case aside;
 * "deepseek32" / "glm-dsa": DeepSeek sparse attention, arch_dsa.c, through this graph):
 * multi-head latent
 * attention and a mixture of experts with shared experts, as llama.cpp's deepseek2
 * graph.
 *
 *   per layer il:
 *     x = rms_norm(h) * attn_norm
 *     q = Wq_b (rms_norm(Wq_a x) * q_a_norm)   or   Wq x            [nope + rope, H, T]
 *     c | k_pe = Wkv_a_mqa x;  c = rms_norm(c) * kv_a_norm          c: [kv_lora, T]
 *     q_pe, k_pe = rope (normal) of the last `rope` dims of q, and of k_pe (one head)
 *     split files (attn_k_b / attn_v_b, key_length_mla): absorbed, as an MQA of one
 *       head: Q = [Wk_b^T q_nope ; q_pe], K = [c ; k_pe], V = c, then Wv_b per head;
 *     legacy files (attn_kv_b): k_nope | v = Wkv_b c per head, K = [k_nope ; k_pe],
 *       Q = [q_nope ; q_pe], an MHA;
 *     scores scaled by mscale^2 / sqrt(nope + rope) (YaRN's mscale, llama.cpp's rule)
 *     h = h + Wo a
 *     n = rms_norm(h) * ffn_norm
 *     h = h + (il < leading_dense_block_count ? SwiGLU(n)
 *              : MoE(n) (softmax or sigmoid router, selection bias, norm, scale)
 *                + shared experts' SwiGLU(n))
 *   logits = Woutput (rms_norm(h) * output_norm)
 * Grouped routing (expert_group_count > 1: DeepSeek V3) is llm_moe_ffn_ext's; the
 * next-token-prediction layers are not run.
 * MiniCPM3 (minicpm3): this attention in its legacy (attn_kv_b) form with a q LoRA, dense
 * SwiGLU MLPs, neox rope with LongRoPE factors when present, scores 1 / sqrt(key_length),
 * and llama.cpp's fixed MiniCPM multipliers: embeddings * 12, each residual branch *
 * 1.4 / sqrt(block_count), logits * 256 / n_embd.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

loom_status llm_deepseek2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s;
    int64_t v;
    if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
    if ((s = llm_arch_yarn_keys(g, hp, hx, err))) return s;
    /* llama.cpp: the converter wrote 0.1 * mscale_all_dim */
    hx->yarn_log_mul /= 0.1f;
    hx->yarn_mscale_all = !strcmp(hp->arch, "deepseek2"); /* llama.cpp's special case is deepseek2's only (not mistral4) */
    const char *a = hp->arch;
    /* files without a gating key (older DeepSeek V2/V2.5 conversions): softmax, except
     * GLM-4.7-Flash's (47 or 48 layers and a vocabulary of 154880 tokens): sigmoid, as
     * llama.cpp decides */
    int def_gating = 1;
    int64_t nv = -1; /* llama.cpp's n_vocab here: vocab_size, else the tokenizer's list */
    if ((s = llm_get_int_key(g, a, "vocab_size", false, -1, &nv, err))) return s;
    const int64_t kt = loom_gguf_find_key(g, "tokenizer.ggml.tokens");
    if (nv < 0 && kt >= 0 && loom_gguf_kv_type(g, kt) == LOOM_GGUF_ARRAY) nv = (int64_t)loom_gguf_kv_array_len(g, kt);
    if ((hp->n_layer == 47 || hp->n_layer == 48) && nv == 154880) def_gating = 2;
    if ((s = llm_ds_moe_keys(g, hp, hx, def_gating, err))) return s;
    /* the query temperature of llama 4 (Mistral Large 3, converted as deepseek2): 1 +
     * temperature_scale * log(floor(pos / temperature_length) + 1), as llama.cpp */
    double ts;
    bool has_ts;
    if ((s = llm_get_float_key(g, a, "attention.temperature_scale", 0.0, &ts, &has_ts, err))) return s;
    if (has_ts && ts != 0.0) {
        if (!isfinite(ts) || fabs(ts) > 1e3)
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.temperature_scale = %g is out of range", a, ts);
        if ((s = llm_get_int_key(g, a, "attention.temperature_length", false, 0, &v, err))) return s;
        if (v < 1 || v > ((int64_t)1 << 30))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.temperature_scale needs "
                                  "%s.attention.temperature_length >= 1 (it is %lld)", a, a, (long long)v);
        hx->attn_temp_scale = (float)ts;
        hx->attn_temp_floor = (int)v;
        hx->attn_temp_offset = 0.0f;
    }
    if ((s = llm_get_int_key(g, a, "attention.q_lora_rank", false, 0, &v, err))) return s;
    if (v < 0 || v > (1 << 20)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.q_lora_rank is out of range", a);
    hx->q_lora = (int)v;
    if ((s = llm_get_int_key(g, a, "attention.kv_lora_rank", true, 0, &v, err))) return s;
    if (v < 1 || v > (1 << 20)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.kv_lora_rank is out of range", a);
    hx->kv_lora = (int)v;
    /* split (absorbed) files give the real head sizes in *_mla and the cache's in
     * key/value_length (kv_lora + rope, kv_lora); legacy files only the real ones */
    bool has_mla;
    double d;
    if ((s = llm_get_float_key(g, a, "attention.key_length_mla", 0.0, &d, &has_mla, err))) return s;
    hx->mla = has_mla;
    if (has_mla) {
        int64_t k, vv;
        if ((s = llm_get_int_key(g, a, "attention.key_length_mla", true, 0, &k, err))) return s;
        if ((s = llm_get_int_key(g, a, "attention.value_length_mla", true, 0, &vv, err))) return s;
        if (k < 1 || vv < 1 || k > 65536 || vv > 65536)
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.key/value_length_mla out of range", a);
        if (hp->head_dim_k != hx->kv_lora + hp->n_rot || hp->head_dim_v != hx->kv_lora || hp->n_head_kv != 1)
            return loom_error_set(err, LOOM_ERR_FORMAT,
                                  "model: %s: key_length %d / value_length %d / head_count_kv %d do not describe the "
                                  "latent cache (kv_lora_rank %d + rope %d, kv_lora_rank, 1)", a, hp->head_dim_k,
                                  hp->head_dim_v, hp->n_head_kv, hx->kv_lora, hp->n_rot);
        hx->head_dim_k_mla = (int)k;
        hx->head_dim_v_mla = (int)vv;
    } else {
        hx->head_dim_k_mla = hp->head_dim_k;
        hx->head_dim_v_mla = hp->head_dim_v;
        if (hp->n_head_kv != hp->n_head)
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s without attn_k_b/attn_v_b needs head_count_kv = "
                                  "head_count", a);
    }
    if (hx->head_dim_k_mla <= hp->n_rot)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s: key length %d leaves no non-rope dims (rope %d)", a,
                              hx->head_dim_k_mla, hp->n_rot);
    return LOOM_OK;
}

loom_status llm_ds_moe_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, int def_gating,
                            loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    int64_t v;
    if ((s = llm_get_int_key(g, a, "leading_dense_block_count", false, 0, &v, err))) return s;
    if (v < 0 || v > hp->n_layer)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.leading_dense_block_count = %lld is out of range", a,
                              (long long)v);
    hx->n_dense_lead = (int)v;
    if ((s = llm_get_int_key(g, a, "expert_shared_count", false, 0, &v, err))) return s;
    if (v < 0 || v > 64)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_shared_count = %lld is out of range", a,
                              (long long)v);
    hx->n_expert_shared = (int)v;
    /* expert_group_count: read for every architecture (model.c, llm_moe_ffn_ext) */
    return llm_arch_router_keys(g, hp, hx, def_gating, err);
}

loom_status llm_arch_router_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, int def_gating,
                                 loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    int64_t v;
    double d;
    bool has;
    if ((s = llm_get_float_key(g, a, "expert_weights_scale", 0.0, &d, &has, err))) return s;
    if (has && !(d >= 0 && d < 1e6)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_weights_scale out of range", a);
    hx->expert_weights_scale = (float)d;
    char key[128];
    snprintf(key, sizeof key, "%s.expert_weights_norm", a);
    bool nw = false;
    if (loom_gguf_find_key(g, key) >= 0 && loom_gguf_get_bool(g, key, &nw))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' must be a boolean", key);
    hx->expert_weights_norm = nw;
    if ((s = llm_get_int_key(g, a, "expert_gating_func", false, def_gating, &v, err))) return s;
    if (v == 0) v = def_gating; /* llama.cpp: "none" means the architecture's default */
    if (v != 1 && v != 2)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s.expert_gating_func = %lld is not supported (1 softmax, "
                              "2 sigmoid)", a, (long long)v);
    hx->expert_gating = (int)v - 1;
    return LOOM_OK;
}

void llm_ds_bind_ffn(const loom_backend *be, const loom_model_hparams *hp, const llm_hparams_x *hx, llm_layer *L,
                     int il, loom_error *err, loom_status *st) {
    const int64_t E = hp->n_embd, NE = hx->n_expert, FE = hx->n_ff_exp;
    /* shared experts: n_expert_shared of the experts' width (bailingmoe2: of its own) */
    const int64_t FS = (hx->n_ff_shexp > 0 ? hx->n_ff_shexp : hx->n_ff_exp) * (int64_t)hx->n_expert_shared;
    if (il < hx->n_dense_lead) {
        L->ffn_gate = llm_bind_tensor(be, true, E, hp->n_ff, 1, err, st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, hp->n_ff, 1, err, st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, hp->n_ff, E, 1, err, st, "blk.%d.ffn_down.weight", il);
        return;
    }
    llm_bind_experts_fusable(be, L, il, E, FE, NE, err, st); /* Mistral 4's converter keeps gate|up fused */
    L->ffn_exp_probs_b = llm_bind_tensor(be, false, NE, 1, 1, err, st, "blk.%d.exp_probs_b.bias", il);
    if (FS > 0) llm_bind_shared_expert(be, L, il, E, FS, err, st);
}

loom_tensor *llm_ds_ffn(loom_ctx *ctx, const llm_hparams_x *hx, const llm_layer *ly, loom_tensor *n, int il) {
    if (il < hx->n_dense_lead) return llm_swiglu_mlp(ctx, ly->ffn_gate, ly->ffn_up, ly->ffn_down, n);
    loom_tensor *f = llm_moe_ffn_ext(ctx, ly, n, hx->n_expert, hx->n_expert_used,
                                     hx->expert_gating ? LLM_MOE_SIGMOID : LLM_MOE_SOFTMAX, hx->expert_weights_norm,
                                     hx->expert_weights_scale, 0.0f, il);
    if (ly->ffn_gate_shexp)
        f = loom_add(ctx, f, llm_swiglu_mlp(ctx, ly->ffn_gate_shexp, ly->ffn_up_shexp, ly->ffn_down_shexp, n));
    return f;
}

static bool is_minicpm3(const loom_model_hparams *hp) { return !strcmp(hp->arch, "minicpm3"); }

loom_status llm_minicpm3_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    int64_t v;
    if ((s = llm_get_int_key(g, a, "attention.q_lora_rank", true, 0, &v, err))) return s;
    if (v < 1 || v > (1 << 20)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.q_lora_rank is out of range", a);
    hx->q_lora = (int)v;
    if ((s = llm_get_int_key(g, a, "attention.kv_lora_rank", true, 0, &v, err))) return s;
    if (v < 1 || v > (1 << 20)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.kv_lora_rank is out of range", a);
    hx->kv_lora = (int)v;
    hx->head_dim_k_mla = hp->head_dim_k;
    hx->head_dim_v_mla = hp->head_dim_v;
    if (hp->n_head_kv != hp->n_head)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s needs head_count_kv = head_count", a);
    if (hp->head_dim_k <= hp->n_rot)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s: key length %d leaves no non-rope dims (rope %d)", a,
                              hp->head_dim_k, hp->n_rot);
    hx->n_dense_lead = hp->n_layer; /* every layer a SwiGLU MLP */
    hx->embd_scale = 12.0f;
    hx->residual_scale = 1.4f / sqrtf((float)hp->n_layer);
    hx->logit_scale = (float)hp->n_embd / 256.0f;
    return LOOM_OK;
}

loom_status llm_deepseek2_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, H = hp->n_head, DK = hx->head_dim_k_mla, DV = hx->head_dim_v_mla;
    const int64_t R = hp->n_rot, NOPE = DK - R, KVL = hx->kv_lora, QL = hx->q_lora;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        if (QL > 0) {
            L->wq_a = llm_bind_tensor(be, true, E, QL, 1, err, &st, "blk.%d.attn_q_a.weight", il);
            L->q_a_norm = llm_bind_tensor(be, true, QL, 1, 1, err, &st, "blk.%d.attn_q_a_norm.weight", il);
            L->wq_b = llm_bind_tensor(be, true, QL, H * DK, 1, err, &st, "blk.%d.attn_q_b.weight", il);
        } else {
            L->wq = llm_bind_tensor(be, true, E, H * DK, 1, err, &st, "blk.%d.attn_q.weight", il);
        }
        L->wkv_a_mqa = llm_bind_tensor(be, true, E, KVL + R, 1, err, &st, "blk.%d.attn_kv_a_mqa.weight", il);
        L->kv_a_norm = llm_bind_tensor(be, true, KVL, 1, 1, err, &st, "blk.%d.attn_kv_a_norm.weight", il);
        if (hx->mla) {
            L->wk_b = llm_bind_tensor(be, true, NOPE, KVL, H, err, &st, "blk.%d.attn_k_b.weight", il);
            L->wv_b = llm_bind_tensor(be, true, KVL, DV, H, err, &st, "blk.%d.attn_v_b.weight", il);
        } else {
            L->wkv_b = llm_bind_tensor(be, true, KVL, H * (NOPE + DV), 1, err, &st, "blk.%d.attn_kv_b.weight", il);
        }
        L->wo = llm_bind_tensor(be, true, H * DV, E, 1, err, &st, "blk.%d.attn_output.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        llm_ds_bind_ffn(be, hp, hx, L, il, err, &st);
        if (is_minicpm3(hp)) llm_bind_longrope(be, hp, L, il, err, &st);
    }
    return st;
}

loom_tensor *llm_deepseek2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens, H = hp->n_head, DK = hx->head_dim_k_mla, DV = hx->head_dim_v_mla;
    const int64_t R = hp->n_rot, NOPE = DK - R, KVL = hx->kv_lora;
    const float eps = hp->rms_eps;
    /* llama.cpp: undo the kernel's YaRN magnitude to get the original attn_factor, then
     * scale the scores by mscale^2 (mscale_all_dim's YaRN factor) */
    const float fs = 1.0f / hp->rope_freq_scale;
    const float af_org = llm_rope_attn_factor(m) * (1.0f + 0.1f * logf(fs));
    const float mscale = af_org * (1.0f + 0.1f * hx->yarn_log_mul * logf(fs));
    const float kq_scale = is_minicpm3(hp) ? 1.0f / sqrtf((float)DK) : mscale * mscale / sqrtf((float)DK);
    const float res = hx->residual_scale; /* minicpm3 (0 elsewhere) */
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = loom_get_rows(ctx, m->tok_embd, in.tok);
    if (hx->embd_scale > 0.0f) h = loom_scale(ctx, h, hx->embd_scale);
    h = llm_named(h, "inp_embd", -1);
    loom_tensor *dsa_sel = NULL; /* deepseek32 / glm-dsa: the last indexer layer's key mask */
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *ff = llm_layer_rope_factors(m, ctx, il); /* minicpm3's LongRoPE */
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        loom_tensor *qr = ly->wq_a ? loom_rms_norm(ctx, loom_mul_mat(ctx, ly->wq_a, x), ly->q_a_norm, eps) : NULL;
        loom_tensor *q = qr ? loom_mul_mat(ctx, ly->wq_b, qr) : loom_mul_mat(ctx, ly->wq, x);
        const int64_t ne_q[3] = {DK, H, T};
        q = loom_reshape(ctx, q, 3, ne_q);
        loom_tensor *kvp = loom_mul_mat(ctx, ly->wkv_a_mqa, x); /* [KVL + R, T] */
        const int64_t ne_kvp[3] = {KVL + R, 1, T};
        kvp = loom_reshape(ctx, kvp, 3, ne_kvp);
        loom_tensor *c = loom_rms_norm(ctx, loom_cont(ctx, llm_head_part(ctx, kvp, 0, KVL)), ly->kv_a_norm, eps);
        loom_tensor *k_pe = llm_rope(m, ctx, loom_cont(ctx, llm_head_part(ctx, kvp, KVL, R)), in.pos, il, ff);
        loom_tensor *q_nope = llm_head_part(ctx, q, 0, NOPE);
        loom_tensor *q_pe = llm_rope(m, ctx, loom_cont(ctx, llm_head_part(ctx, q, NOPE, R)), in.pos, il, ff);
        loom_tensor *a;
        if (hx->mla) {
            /* q_nope [NOPE, H, T] -> [NOPE, T, H]; Wk_b [NOPE, KVL, H] per head -> [KVL, T, H] */
            loom_tensor *qn = loom_cont(ctx, loom_permute(ctx, q_nope, 0, 2, 1, 3));
            loom_tensor *qa = loom_cont(ctx, loom_permute(ctx, loom_mul_mat(ctx, ly->wk_b, qn), 0, 2, 1, 3));
            loom_tensor *Q = llm_named(loom_concat(ctx, qa, q_pe, 0), "q", il);  /* [KVL + R, H, T] */
            if (in.attn_temp) Q = llm_named(loom_mul(ctx, Q, in.attn_temp), "q_temp", il);
            loom_tensor *K = llm_named(loom_concat(ctx, c, k_pe, 0), "k", il);   /* [KVL + R, 1, T] */
            a = hx->dsa_heads > 0 ? llm_dsa_attention(m, ctx, b, &in, il, x, qr, Q, K, c, kq_scale, &dsa_sel)
                                  : llm_attention(m, ctx, b, &in, il, Q, K, c, in.mask, kq_scale, 0.0f, NULL); /* [KVL * H, T] */
            const int64_t ne_a[3] = {KVL, H, T};
            loom_tensor *ap = loom_cont(ctx, loom_permute(ctx, loom_reshape(ctx, a, 3, ne_a), 0, 2, 1, 3));
            loom_tensor *o = loom_cont(ctx, loom_permute(ctx, loom_mul_mat(ctx, ly->wv_b, ap), 0, 2, 1, 3));
            const int64_t ne_o[2] = {DV * H, T};
            a = loom_reshape(ctx, o, 2, ne_o);
        } else {
            const int64_t ne_kv[3] = {NOPE + DV, H, T};
            loom_tensor *kv = loom_reshape(ctx, loom_mul_mat(ctx, ly->wkv_b, c), 3, ne_kv);
            loom_tensor *k_nope = loom_cont(ctx, llm_head_part(ctx, kv, 0, NOPE));
            loom_tensor *v = loom_cont(ctx, llm_head_part(ctx, kv, NOPE, DV));
            loom_tensor *Q = llm_named(loom_concat(ctx, loom_cont(ctx, q_nope), q_pe, 0), "q", il);
            if (in.attn_temp) Q = llm_named(loom_mul(ctx, Q, in.attn_temp), "q_temp", il);
            loom_tensor *K = llm_named(loom_concat(ctx, k_nope, loom_repeat(ctx, k_pe, 1, (int)H), 0), "k", il);
            a = llm_attention(m, ctx, b, &in, il, Q, K, v, in.mask, kq_scale, 0.0f, NULL); /* [DV * H, T] */
        }
        x = llm_named(loom_mul_mat(ctx, ly->wo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        if (res > 0.0f) x = loom_scale(ctx, x, res);
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *f = llm_ds_ffn(ctx, hx, ly, n, il);
        if (res > 0.0f) f = loom_scale(ctx, f, res);
        h = llm_named(loom_add(ctx, llm_named(f, "ffn_out", il), h), "l_out", il);
    }
    if (hx->logit_scale > 0.0f) { /* minicpm3: the normed state scaled before the head, as llama.cpp */
        h = loom_scale(ctx, loom_rms_norm(ctx, h, m->output_norm, eps), 1.0f / hx->logit_scale);
        return llm_named(loom_mul_mat(ctx, m->output, h), "result_output", -1);
    }
    return llm_llama_output(m, ctx, h);
}
