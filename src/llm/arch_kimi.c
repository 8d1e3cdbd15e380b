/*
 * arch_kimi.c - Kimi Linear (general.architecture "kimi-linear": Kimi-Linear-48B-A3B), as
 * llama.cpp's kimi-linear graph: Kimi Delta Attention layers (attention.head_count_kv 0)
 * and multi-head latent attention layers without any rope, each followed by a SwiGLU MLP
 * (the leading_dense_block_count first layers) or DeepSeek-style experts plus shared
 * experts.
 *
 *   KDA layer (H heads of D = kda.head_dim, conv kernel K = ssm.conv_kernel):
 *     q, k, v = silu(conv(Wq x)), silu(conv(Wk x)), silu(conv(Wv x))  (causal, per-sequence
 *       states; kernels ssm_conv1d_q / _k / _v [K, 1, H D])
 *     g = softplus(Wf_b Wf_a x + dt_bias) * ssm_a (ssm_a = -exp(A_log) per head, as the
 *       converter stores it): a log decay per key dim [D, H, T]
 *     beta = sigmoid(Wbeta x) [H, T]
 *     o = delta rule (q, k L2-normalised with the RMS epsilon; per-sequence state)
 *     out = Wo (rms_norm(o per head) * ssm_norm * sigmoid(Wg_b Wg_a x))
 *   MLA layer: the DeepSeek absorbed form (attn_k_b / attn_v_b) of arch_deepseek2.c with
 *     q_pe and k_pe left unrotated: Q = [Wk_b^T q_nope ; q_pe], K = [c ; k_pe], V = c,
 *     scores 1 / sqrt(key_length_mla), then Wv_b per head and Wo
 *   FFN: n = rms_norm(h) * ffn_norm; SwiGLU(n), or experts (expert_gating_func, the
 *     selection bias, weights normalised and times expert_weights_scale) + shared SwiGLU(n)
 *   logits = Woutput (rms_norm(h) * output_norm)
 * Files with the legacy attn_kv_b only are refused: llama.cpp's graph for them puts k_pe
 * before k_nope in the keys, q_pe after q_nope in the queries.
 *
 * bailingmoe3 (inclusionAI's Ling / Ring linear models, as llama.cpp's bailingmoe3 graph):
 * the same hybrid with its own KDA gates: log decay = kda.gate_lower_bound *
 * sigmoid((Wf_a x + dt_bias) * ssm_a) per channel (ssm_a = exp(A_log) per head, the
 * converter's), the output gate sigmoid(Wg_a x) without a second projection; the latent
 * attention rotates q_pe and k_pe (normal rope) and gates each head's output by
 * sigmoid(Wgate x) before Wo; the experts' and the other MLPs' SwiGLU limited per layer
 * (swiglu_clamp_exp / _shexp, llm_swiglu_limited); shared experts
 * expert_shared_feed_forward_length wide in all.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

static bool recurrent(const llm_hparams_x *hx, int il) { return hx->recr_bits[il / 64] >> (il % 64) & 1; }
static bool is_b3(const loom_model_hparams *hp) { return !strcmp(hp->arch, "bailingmoe3"); }
static bool is_k3(const loom_model_hparams *hp) { return !strcmp(hp->arch, "kimi-k3"); }

/* kimi-k3: the optional KDA gate bound, the latent experts' width, the cross-layer
 * residual block size and the situ activation's betas (see the top) */
static loom_status k3_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    double d;
    bool has;
    int64_t v;
    if ((s = llm_get_float_key(g, a, "kda.gate_lower_bound", 0.0, &d, &has, err))) return s;
    if (has && !(d < 0 && d > -1e4))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.kda.gate_lower_bound = %g must be negative", a, d);
    hx->kda_lower = has ? (float)d : 0.0f;
    if ((s = llm_get_int_key(g, a, "expert_latent_length", false, 0, &v, err))) return s;
    if (v < 0 || v > ((int64_t)1 << 24))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_latent_length = %lld is out of range", a, (long long)v);
    hx->n_expert_latent = (int)v;
    if ((s = llm_get_int_key(g, a, "attn_res.block_size", true, 0, &v, err))) return s;
    if (v < 0 || v > 4096)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attn_res.block_size = %lld is out of range", a, (long long)v);
    hx->attn_res_bs = (int)v;
    static const char *const situ[2] = {"activation.situ_beta", "activation.situ_linear_beta"};
    float *dst[2] = {&hx->situ_beta, &hx->situ_lb};
    for (int i = 0; i < 2; i++) {
        if ((s = llm_get_float_key(g, a, situ[i], 0.0, &d, &has, err))) return s;
        if (!has) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s.%s' is missing", a, situ[i]);
        if (!(d >= (i ? 0.0 : 1e-6) && d < 1e6))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.%s = %g is out of range", a, situ[i], d);
        *dst[i] = (float)d;
    }
    return LOOM_OK;
}

loom_status llm_kimi_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    int64_t v, k, vv, dh;
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", a);
    memset(hx->recr_bits, 0, sizeof hx->recr_bits);
    for (int il = 0; il < hp->n_layer; il++) {
        if ((s = llm_arch_layer_kv_heads(g, hp, il, &v, err))) return s;
        if (v == 0) hx->recr_bits[il / 64] |= (uint64_t)1 << (il % 64);
    }
    /* KDA */
    if ((s = llm_get_int_key(g, a, "kda.head_dim", true, 0, &dh, err))) return s;
    if ((s = llm_get_int_key(g, a, "ssm.conv_kernel", true, 0, &k, err))) return s;
    if (dh < 1 || dh > 1024 || k < 2 || k > 16 || dh * dh * hp->n_head > ((int64_t)1 << 28))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.kda.head_dim = %lld / ssm.conv_kernel = %lld are out of "
                              "range (head_dim 1..1024, kernel 2..16)", a, (long long)dh, (long long)k);
    hx->ssm_dk = (int)dh;
    hx->ssm_conv_k = (int)k;
    /* MLA (the absorbed form) */
    if ((s = llm_get_int_key(g, a, "attention.kv_lora_rank", true, 0, &v, err))) return s;
    if (v < 1 || v > (1 << 20)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.kv_lora_rank is out of range", a);
    hx->kv_lora = (int)v;
    if ((s = llm_get_int_key(g, a, "attention.q_lora_rank", false, 0, &v, err))) return s;
    if (v < 0 || v > (1 << 20)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.q_lora_rank is out of range", a);
    hx->q_lora = (int)v;
    if ((s = llm_get_int_key(g, a, "attention.key_length_mla", true, 0, &k, err))) return s;
    if ((s = llm_get_int_key(g, a, "attention.value_length_mla", true, 0, &vv, err))) return s;
    if (k <= hp->n_rot || vv < 1 || k > 65536 || vv > 65536 || hp->head_dim_k != hx->kv_lora + hp->n_rot)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s: key_length_mla %lld / value_length_mla %lld / key_length "
                              "%d do not describe the latent cache (kv_lora_rank %d + rope %d)", a, (long long)k,
                              (long long)vv, hp->head_dim_k, hx->kv_lora, hp->n_rot);
    hx->mla = true;
    hx->head_dim_k_mla = (int)k;
    hx->head_dim_v_mla = (int)vv;
    hx->rope_off = !is_b3(hp); /* kimi-linear: no rope anywhere (llama.cpp's graph) */
    /* experts: the gating function is required (no default in llama.cpp) */
    if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
    if ((s = llm_get_int_key(g, a, "expert_gating_func", true, 0, &v, err))) return s;
    if ((s = llm_ds_moe_keys(g, hp, hx, 2, err))) return s;
    if (hx->n_expert_shared < 1) hx->n_expert_shared = 1;
    if (is_k3(hp)) return k3_keys(g, hp, hx, err);
    if (!is_b3(hp)) {
        hx->expert_weights_norm = true; /* llama.cpp's kimi graph always normalises */
        return LOOM_OK;
    }
    /* bailingmoe3: safe KDA gates with a lower bound, shared experts of their own width */
    char key[128];
    snprintf(key, sizeof key, "%s.kda.safe_gate", a);
    bool safe = true;
    if (loom_gguf_find_key(g, key) >= 0 && loom_gguf_get_bool(g, key, &safe))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s' must be a boolean", key);
    if (!safe) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s.kda.safe_gate = false is not supported", a);
    double lb;
    bool has;
    if ((s = llm_get_float_key(g, a, "kda.gate_lower_bound", 0.0, &lb, &has, err))) return s;
    if (!has) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s.kda.gate_lower_bound' is missing", a);
    if (!(lb < 0 && lb > -1e4))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.kda.gate_lower_bound = %g must be negative", a, lb);
    hx->kda_lower = (float)lb;
    if ((s = llm_get_int_key(g, a, "expert_shared_feed_forward_length", false, 0, &v, err))) return s;
    if (v == 0) v = (int64_t)hx->n_ff_exp * hx->n_expert_shared;
    if (v < 1 || v > ((int64_t)1 << 24))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_shared_feed_forward_length = %lld is out of range",
                              a, (long long)v);
    hx->n_ff_shexp = (int)v;
    return llm_arch_yarn_keys(g, hp, hx, err);
}

/* kimi-k3's FFN weights: a dense situ MLP on the leading layers; else the router (with its
 * selection bias), experts in the latent width with the projections in and out of it (and
 * the optional norm of their sum), and optional shared experts */
static void k3_bind_ffn(const loom_backend *be, const loom_model_hparams *hp, const llm_hparams_x *hx, llm_layer *L,
                        int il, loom_error *err, loom_status *st) {
    const int64_t E = hp->n_embd, NE = hx->n_expert, FE = hx->n_ff_exp;
    const int64_t EL = hx->n_expert_latent > 0 ? hx->n_expert_latent : E;
    if (il < hx->n_dense_lead) {
        L->ffn_gate = llm_bind_tensor(be, true, E, hp->n_ff, 1, err, st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, hp->n_ff, 1, err, st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, hp->n_ff, E, 1, err, st, "blk.%d.ffn_down.weight", il);
        return;
    }
    L->ffn_gate_inp = llm_bind_tensor(be, true, E, NE, 1, err, st, "blk.%d.ffn_gate_inp.weight", il);
    L->ffn_exp_probs_b = llm_bind_tensor(be, true, NE, 1, 1, err, st, "blk.%d.exp_probs_b.bias", il);
    L->ffn_gate_exps = llm_bind_tensor(be, true, EL, FE, NE, err, st, "blk.%d.ffn_gate_exps.weight", il);
    L->ffn_up_exps = llm_bind_tensor(be, true, EL, FE, NE, err, st, "blk.%d.ffn_up_exps.weight", il);
    L->ffn_down_exps = llm_bind_tensor(be, true, FE, EL, NE, err, st, "blk.%d.ffn_down_exps.weight", il);
    if (hx->n_expert_latent > 0) {
        L->ffn_routed_down = llm_bind_tensor(be, true, E, EL, 1, err, st, "blk.%d.ffn_routed_down.weight", il);
        L->ffn_routed_up = llm_bind_tensor(be, true, EL, E, 1, err, st, "blk.%d.ffn_routed_up.weight", il);
        L->ffn_routed_norm = llm_bind_tensor(be, false, EL, 1, 1, err, st, "blk.%d.ffn_routed_norm.weight", il);
    }
    const int64_t FS = FE * (hx->n_expert_shared > 0 ? hx->n_expert_shared : 1);
    L->ffn_gate_shexp = llm_bind_tensor(be, false, E, FS, 1, err, st, "blk.%d.ffn_gate_shexp.weight", il);
    if (L->ffn_gate_shexp) {
        L->ffn_up_shexp = llm_bind_tensor(be, true, E, FS, 1, err, st, "blk.%d.ffn_up_shexp.weight", il);
        L->ffn_down_shexp = llm_bind_tensor(be, true, FS, E, 1, err, st, "blk.%d.ffn_down_shexp.weight", il);
    }
}

loom_status llm_kimi_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, H = hp->n_head, D = hx->ssm_dk, C = D * H, K = hx->ssm_conv_k;
    const int64_t DK = hx->head_dim_k_mla, DV = hx->head_dim_v_mla, R = hp->n_rot, NOPE = DK - R, KVL = hx->kv_lora;
    const int64_t QL = hx->q_lora;
    const bool b3 = is_b3(hp), k3 = is_k3(hp);
    loom_status st = llm_bind_embd_output(m, err);
    if (k3 && hx->attn_res_bs > 0)
        m->output_res_score = llm_bind_tensor(be, true, E, 1, 1, err, &st, "output_res_score.weight", 0);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        llm_kv_layer_type *t = &m->kv_types[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        if (k3 && hx->attn_res_bs > 0) {
            L->attn_res_score = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_res_score.weight", il);
            L->ffn_res_score = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_res_score.weight", il);
        }
        if (recurrent(hx, il)) {
            static const char *const conv[3] = {"blk.%d.ssm_conv1d_q.weight", "blk.%d.ssm_conv1d_k.weight",
                                                "blk.%d.ssm_conv1d_v.weight"};
            loom_tensor **cw[3] = {&L->ssm_conv, &L->ssm_conv_k, &L->ssm_conv_v};
            for (int i = 0; i < 3; i++) *cw[i] = llm_bind_tensor(be, true, K, 1, C, err, &st, conv[i], il);
            L->wq = llm_bind_tensor(be, true, E, C, 1, err, &st, "blk.%d.attn_q.weight", il);
            L->wk = llm_bind_tensor(be, true, E, C, 1, err, &st, "blk.%d.attn_k.weight", il);
            L->wv = llm_bind_tensor(be, true, E, C, 1, err, &st, "blk.%d.attn_v.weight", il);
            /* the decay and output-gate projections: LoRAs (kimi) or full (bailingmoe3) */
            L->ssm_f_a = llm_bind_tensor(be, true, E, b3 ? C : D, 1, err, &st, "blk.%d.ssm_f_a.weight", il);
            if (!b3) L->ssm_f_b = llm_bind_tensor(be, true, D, C, 1, err, &st, "blk.%d.ssm_f_b.weight", il);
            L->ssm_beta = llm_bind_tensor(be, true, E, H, 1, err, &st, "blk.%d.ssm_beta.weight", il);
            /* ssm_a: [1, H] (kimi-linear, bailingmoe3) or plain [H] (kimi-k3) */
            L->ssm_a = llm_bind_tensor(be, true, k3 ? H : 1, k3 ? 1 : H, 1, err, &st, "blk.%d.ssm_a", il);
            L->ssm_dt = llm_bind_tensor(be, true, C, 1, 1, err, &st, "blk.%d.ssm_dt.bias", il);
            if (k3) { /* one full-rank output gate */
                L->ssm_g_a = llm_bind_tensor(be, true, E, C, 1, err, &st, "blk.%d.ssm_g.weight", il);
            } else {
                L->ssm_g_a = llm_bind_tensor(be, true, E, b3 ? C : D, 1, err, &st, "blk.%d.ssm_g_a.weight", il);
                if (!b3) L->ssm_g_b = llm_bind_tensor(be, true, D, C, 1, err, &st, "blk.%d.ssm_g_b.weight", il);
            }
            L->ssm_norm = llm_bind_tensor(be, true, D, 1, 1, err, &st, "blk.%d.ssm_norm.weight", il);
            L->wo = llm_bind_tensor(be, true, C, E, 1, err, &st, "blk.%d.attn_output.weight", il);
            t->rs_conv = (int32_t)((K - 1) * 3 * C);
            t->rs_ssm = (int32_t)(D * D * H);
        } else {
            if (QL > 0) {
                L->wq_a = llm_bind_tensor(be, true, E, QL, 1, err, &st, "blk.%d.attn_q_a.weight", il);
                L->q_a_norm = llm_bind_tensor(be, true, QL, 1, 1, err, &st, "blk.%d.attn_q_a_norm.weight", il);
                L->wq_b = llm_bind_tensor(be, true, QL, H * DK, 1, err, &st, "blk.%d.attn_q_b.weight", il);
            } else {
                L->wq = llm_bind_tensor(be, true, E, H * DK, 1, err, &st, "blk.%d.attn_q.weight", il);
            }
            L->wkv_a_mqa = llm_bind_tensor(be, true, E, KVL + R, 1, err, &st, "blk.%d.attn_kv_a_mqa.weight", il);
            L->kv_a_norm = llm_bind_tensor(be, true, KVL, 1, 1, err, &st, "blk.%d.attn_kv_a_norm.weight", il);
            char name[64];
            snprintf(name, sizeof name, "blk.%d.attn_k_b.weight", il);
            if (!st && !loom_backend_get_tensor(be, name)) {
                st = loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                                    "model: %s: tensor 'blk.%d.attn_k_b.weight' is missing (files with the legacy "
                                    "attn_kv_b only are not supported: convert with a current converter)", hp->arch, il);
                break;
            }
            L->wk_b = llm_bind_tensor(be, true, NOPE, KVL, H, err, &st, "blk.%d.attn_k_b.weight", il);
            L->wv_b = llm_bind_tensor(be, true, KVL, DV, H, err, &st, "blk.%d.attn_v_b.weight", il);
            L->wo = llm_bind_tensor(be, true, H * DV, E, 1, err, &st, "blk.%d.attn_output.weight", il);
            if (b3) L->attn_gate = llm_bind_tensor(be, true, E, H, 1, err, &st, "blk.%d.attn_gate.weight", il);
            if (k3) L->attn_gate = llm_bind_tensor(be, false, E, H * DV, 1, err, &st, "blk.%d.attn_gate.weight", il);
            t->dk = (int32_t)(KVL + R); /* the latent cache: [c ; k_pe], and c as the values */
            t->dv = (int32_t)KVL;
            t->hkv = 1;
        }
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        if (b3) {
            const int na = llm_arch_n_layer_all(loom_model_gguf(m), hp);
            if (!st && ((st = llm_arch_layer_float(loom_model_gguf(m), hp, na, "swiglu_clamp_exp", il, &L->clamp_exp, err)) ||
                        (st = llm_arch_layer_float(loom_model_gguf(m), hp, na, "swiglu_clamp_shexp", il, &L->clamp_shexp, err))))
                break;
            if (il < hx->n_dense_lead) {
                llm_ds_bind_ffn(be, hp, hx, L, il, err, &st);
            } else {
                llm_bind_experts(be, L, il, E, hx->n_ff_exp, hx->n_expert, err, &st);
                L->ffn_exp_probs_b = llm_bind_tensor(be, true, hx->n_expert, 1, 1, err, &st, "blk.%d.exp_probs_b.bias", il);
                llm_bind_shared_expert(be, L, il, E, hx->n_ff_shexp, err, &st);
            }
            continue;
        }
        if (k3) {
            k3_bind_ffn(be, hp, hx, L, il, err, &st);
            continue;
        }
        llm_ds_bind_ffn(be, hp, hx, L, il, err, &st);
        if (!st && il >= hx->n_dense_lead && (!L->ffn_gate_shexp || !L->ffn_exp_probs_b))
            st = loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: %s layer %d: the shared expert and the selection bias "
                                "(blk.%d.exp_probs_b.bias) are required", hp->arch, il, il);
    }
    return st;
}

static loom_tensor *mla_layer(loom_model *m, loom_ctx *ctx, const llm_batch *b, const llm_inputs *in, int il,
                              loom_tensor *x) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const llm_layer *ly = &m->layers[il];
    const int64_t T = loom_tensor_ne(x, 1), H = hp->n_head, DK = hx->head_dim_k_mla, DV = hx->head_dim_v_mla;
    const int64_t R = hp->n_rot, NOPE = DK - R, KVL = hx->kv_lora;
    const float eps = hp->rms_eps;
    loom_tensor *q = ly->wq_a ? loom_mul_mat(ctx, ly->wq_b, loom_rms_norm(ctx, loom_mul_mat(ctx, ly->wq_a, x), ly->q_a_norm, eps))
                              : loom_mul_mat(ctx, ly->wq, x);
    const int64_t ne_q[3] = {DK, H, T}, ne_kvp[3] = {KVL + R, 1, T};
    q = loom_reshape(ctx, q, 3, ne_q);
    loom_tensor *kvp = loom_reshape(ctx, loom_mul_mat(ctx, ly->wkv_a_mqa, x), 3, ne_kvp);
    loom_tensor *c = loom_rms_norm(ctx, loom_cont(ctx, llm_head_part(ctx, kvp, 0, KVL)), ly->kv_a_norm, eps);
    loom_tensor *k_pe = loom_cont(ctx, llm_head_part(ctx, kvp, KVL, R)); /* kimi: no rope */
    loom_tensor *q_pe = loom_cont(ctx, llm_head_part(ctx, q, NOPE, R));
    if (llm_layer_has_rope(m, il)) { /* bailingmoe3 */
        k_pe = llm_rope(m, ctx, k_pe, in->pos, il, NULL);
        q_pe = llm_rope(m, ctx, q_pe, in->pos, il, NULL);
    }
    loom_tensor *qn = loom_cont(ctx, loom_permute(ctx, llm_head_part(ctx, q, 0, NOPE), 0, 2, 1, 3)); /* [NOPE, T, H] */
    loom_tensor *qa = loom_cont(ctx, loom_permute(ctx, loom_mul_mat(ctx, ly->wk_b, qn), 0, 2, 1, 3)); /* [KVL, H, T] */
    loom_tensor *Q = llm_named(loom_concat(ctx, qa, q_pe, 0), "q", il);
    loom_tensor *K = llm_named(loom_concat(ctx, c, k_pe, 0), "k", il);
    loom_tensor *a = llm_attention(m, ctx, b, in, il, Q, K, c, in->mask, 1.0f / sqrtf((float)DK), 0.0f, NULL);
    const int64_t ne_a[3] = {KVL, H, T}, ne_o[2] = {DV * H, T};
    loom_tensor *ap = loom_cont(ctx, loom_permute(ctx, loom_reshape(ctx, a, 3, ne_a), 0, 2, 1, 3));
    loom_tensor *o = loom_cont(ctx, loom_permute(ctx, loom_mul_mat(ctx, ly->wv_b, ap), 0, 2, 1, 3)); /* [DV, H, T] */
    if (ly->attn_gate) { /* sigmoid(Wgate x): bailingmoe3 per head [H], kimi-k3 per element [DV H] */
        const int64_t ne_g[3] = {loom_tensor_ne(ly->attn_gate, 1) == H ? 1 : DV, H, T};
        o = loom_mul(ctx, o, loom_reshape(ctx, loom_sigmoid(ctx, loom_mul_mat(ctx, ly->attn_gate, x)), 3, ne_g));
    }
    return loom_mul_mat(ctx, ly->wo, loom_reshape(ctx, o, 2, ne_o));
}

static loom_tensor *kda_layer(loom_model *m, loom_ctx *ctx, const llm_inputs *in, int il, loom_tensor *x) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const llm_layer *ly = &m->layers[il];
    llm_kv_cache *kv = &m->kv;
    const int64_t T = loom_tensor_ne(x, 1), H = hp->n_head, D = hx->ssm_dk, C = D * H, K = hx->ssm_conv_k;
    const int64_t S = kv->n_seq;
    const float eps = hp->rms_eps;
    const bool real = kv->rs_conv && kv->rs_conv[il];
    const int64_t ne_rc[2] = {(K - 1) * 3 * C, S}, ne_rs[2] = {D * D * H, S};
    loom_tensor *rc = real ? kv->rs_conv[il] : loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne_rc);
    loom_tensor *rs = real ? kv->rs_ssm[il] : loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne_rs);
    /* q | k | v through one convolution: their kernels side by side [K, 3 C] */
    loom_tensor *qkv = loom_concat(ctx, loom_concat(ctx, loom_mul_mat(ctx, ly->wq, x), loom_mul_mat(ctx, ly->wk, x), 0),
                                   loom_mul_mat(ctx, ly->wv, x), 0); /* [3 C, T] */
    const int64_t ne_w[2] = {K, C};
    loom_tensor *w = loom_concat(ctx, loom_concat(ctx, loom_reshape(ctx, ly->ssm_conv, 2, ne_w),
                                                  loom_reshape(ctx, ly->ssm_conv_k, 2, ne_w), 1),
                                 loom_reshape(ctx, ly->ssm_conv_v, 2, ne_w), 1);
    loom_tensor *cv = llm_named(loom_ssm_conv(ctx, qkv, w, rc, in->seq), "ssm_conv", il);
    const int64_t ncs = (K - 1) * 3 * C * S;
    if (real)
        loom_ctx_forward(ctx, loom_cpy(ctx, loom_view(ctx, cv, (size_t)(3 * C) * (size_t)T * sizeof(float), 1, &ncs),
                                       loom_view(ctx, rc, 0, 1, &ncs)));
    const int64_t a2[3] = {3 * C, (int64_t)loom_tensor_nb(cv, 1), T};
    loom_tensor *cc = loom_silu(ctx, loom_cont(ctx, loom_view(ctx, cv, 0, 3, a2))); /* [3 C, T] */
    const int64_t es = (int64_t)sizeof(float), nb = (int64_t)loom_tensor_nb(cc, 1);
    const int64_t aqk[5] = {D, D * es, 2 * H, nb, T}, av[5] = {D, D * es, H, nb, T};
    loom_tensor *qk = loom_view(ctx, cc, 0, 5, aqk);
    loom_tensor *v = loom_view(ctx, cc, (size_t)(2 * C) * sizeof(float), 5, av);
    /* the log decay per key dim and the mixing coefficient */
    const int64_t ne_g[3] = {D, H, T}, ne_a[3] = {1, H, 1};
    loom_tensor *gl;
    if (ly->ssm_f_b && hx->kda_lower < 0.0f) { /* kimi-k3 with a bound: lower * sigmoid(-(Wf_b Wf_a x + dt) * ssm_a) */
        gl = loom_add(ctx, loom_mul_mat(ctx, ly->ssm_f_b, loom_mul_mat(ctx, ly->ssm_f_a, x)), ly->ssm_dt);
        gl = loom_mul(ctx, loom_reshape(ctx, gl, 3, ne_g), loom_reshape(ctx, ly->ssm_a, 3, ne_a));
        gl = loom_scale(ctx, loom_sigmoid(ctx, loom_scale(ctx, gl, -1.0f)), hx->kda_lower);
    } else if (ly->ssm_f_b) { /* kimi: softplus(Wf_b Wf_a x + dt) * ssm_a */
        gl = loom_add(ctx, loom_mul_mat(ctx, ly->ssm_f_b, loom_mul_mat(ctx, ly->ssm_f_a, x)), ly->ssm_dt);
        gl = loom_mul(ctx, loom_reshape(ctx, loom_softplus(ctx, gl), 3, ne_g), loom_reshape(ctx, ly->ssm_a, 3, ne_a));
    } else { /* bailingmoe3: lower * sigmoid((Wf_a x + dt) * ssm_a) */
        gl = loom_reshape(ctx, loom_add(ctx, loom_mul_mat(ctx, ly->ssm_f_a, x), ly->ssm_dt), 3, ne_g);
        gl = loom_scale(ctx, loom_sigmoid(ctx, loom_mul(ctx, gl, loom_reshape(ctx, ly->ssm_a, 3, ne_a))), hx->kda_lower);
    }
    gl = loom_cont(ctx, gl);
    loom_tensor *beta = loom_sigmoid(ctx, loom_mul_mat(ctx, ly->ssm_beta, x)); /* [H, T] */
    const bool ip = llm_rs_in_place(m, il);
    loom_tensor *gd = llm_named(ip ? loom_gated_delta_inplace(ctx, qk, v, gl, beta, rs, in->seq, eps)
                                   : loom_gated_delta(ctx, qk, v, gl, beta, rs, in->seq, eps),
                                "ssm_delta", il);
    const int64_t nss = D * D * H * S;
    if (real && !ip)
        loom_ctx_forward(ctx, loom_cpy(ctx, loom_view(ctx, gd, (size_t)C * (size_t)T * sizeof(float), 1, &nss),
                                       loom_view(ctx, rs, 0, 1, &nss)));
    const int64_t ao[5] = {D, D * es, H, (int64_t)loom_tensor_nb(gd, 1), T}, ne_o[2] = {C, T};
    loom_tensor *o = loom_rms_norm(ctx, loom_cont(ctx, loom_view(ctx, gd, 0, 5, ao)), ly->ssm_norm, eps);
    loom_tensor *g2 = loom_mul_mat(ctx, ly->ssm_g_a, x); /* [C, T] (kimi: through its second projection) */
    if (ly->ssm_g_b) g2 = loom_mul_mat(ctx, ly->ssm_g_b, g2);
    o = loom_mul(ctx, o, loom_sigmoid(ctx, loom_reshape(ctx, g2, 3, ne_g)));
    return loom_mul_mat(ctx, ly->wo, loom_reshape(ctx, o, 2, ne_o));
}

loom_tensor *llm_kimi_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        x = llm_named(recurrent(hx, il) ? kda_layer(m, ctx, &in, il, x) : mla_layer(m, ctx, b, &in, il, x), "attn_out", il);
        llm_last_rows(ctx, m, &in, il, &x, &r);
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *f;
        if (!is_b3(hp)) {
            f = llm_ds_ffn(ctx, hx, ly, n, il);
        } else if (il < hx->n_dense_lead) { /* bailingmoe3: the SwiGLUs limited per layer */
            f = loom_mul_mat(ctx, ly->ffn_down, llm_swiglu_limited(ctx, loom_mul_mat(ctx, ly->ffn_gate, n),
                                                                  loom_mul_mat(ctx, ly->ffn_up, n), ly->clamp_shexp));
        } else {
            const llm_moe_opts mo = {.gating = hx->expert_gating ? LLM_MOE_SIGMOID : LLM_MOE_SOFTMAX,
                                     .norm_w = hx->expert_weights_norm,
                                     .w_scale = hx->expert_weights_scale,
                                     .silu_limit = ly->clamp_exp};
            f = llm_moe_ffn_opts(ctx, ly, n, hx->n_expert, hx->n_expert_used, &mo, il);
            f = loom_add(ctx, f, loom_mul_mat(ctx, ly->ffn_down_shexp,
                                              llm_swiglu_limited(ctx, loom_mul_mat(ctx, ly->ffn_gate_shexp, n),
                                                                 loom_mul_mat(ctx, ly->ffn_up_shexp, n), ly->clamp_shexp)));
        }
        h = llm_named(loom_add(ctx, llm_named(f, "ffn_out", il), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}

/* kimi-k3's cross-layer residual mix of x [E, T] with the banked checkpoints stack
 * [E, n, T]: softmax over the n + 1 scores sum(rms_norm(.) * w) of each checkpoint and of
 * x, then the weighted sum (llama.cpp's res_mix) */
static loom_tensor *k3_res_mix(loom_ctx *ctx, loom_tensor *stack, loom_tensor *x, loom_tensor *w, float eps) {
    if (!stack) return x;
    const int64_t E = loom_tensor_ne(x, 0), T = loom_tensor_ne(x, 1), n = loom_tensor_ne(stack, 1);
    const int64_t ne_s[2] = {n, T}, ne_p[3] = {1, n, T}, ne_o[2] = {E, T};
    loom_tensor *ss = loom_reshape(ctx, loom_sum_rows(ctx, loom_rms_norm(ctx, stack, w, eps)), 2, ne_s); /* [n, T] */
    loom_tensor *sx = loom_sum_rows(ctx, loom_rms_norm(ctx, x, w, eps));                                 /* [1, T] */
    loom_tensor *p = loom_softmax(ctx, loom_concat(ctx, ss, sx, 0));                                    /* [n + 1, T] */
    const int64_t a_s[3] = {n, (int64_t)loom_tensor_nb(p, 1), T}, a_x[3] = {1, (int64_t)loom_tensor_nb(p, 1), T};
    loom_tensor *ps = loom_reshape(ctx, loom_cont(ctx, loom_view(ctx, p, 0, 3, a_s)), 3, ne_p);
    loom_tensor *px = loom_cont(ctx, loom_view(ctx, p, (size_t)n * loom_tensor_nb(p, 0), 3, a_x));
    loom_tensor *mix = loom_sum_rows(ctx, loom_cont(ctx, loom_permute(ctx, loom_mul(ctx, stack, ps), 1, 0, 2, 3)));
    return loom_add(ctx, loom_reshape(ctx, mix, 2, ne_o), loom_mul(ctx, x, px));
}

/* kimi-k3's FFN of n [E, T] (k3_bind_ffn): situ everywhere */
static loom_tensor *k3_ffn(loom_ctx *ctx, const loom_model *m, const llm_layer *ly, loom_tensor *n, int il) {
    const llm_hparams_x *hx = &m->hx;
    const float b = hx->situ_beta, lb = hx->situ_lb;
    if (il < hx->n_dense_lead)
        return loom_mul_mat(ctx, ly->ffn_down, llm_situ(ctx, loom_mul_mat(ctx, ly->ffn_gate, n), loom_mul_mat(ctx, ly->ffn_up, n), b, lb));
    const llm_moe_opts mo = {.gating = hx->expert_gating ? LLM_MOE_SIGMOID : LLM_MOE_SOFTMAX,
                             .norm_w = hx->expert_weights_norm,
                             .w_scale = hx->expert_weights_scale,
                             .router_in = n,
                             .situ = true,
                             .situ_beta = b,
                             .situ_lb = lb};
    loom_tensor *xin = ly->ffn_routed_down ? loom_mul_mat(ctx, ly->ffn_routed_down, n) : n; /* the experts' latent */
    loom_tensor *f = llm_moe_ffn_opts(ctx, ly, xin, hx->n_expert, hx->n_expert_used, &mo, il);
    if (ly->ffn_routed_norm) f = loom_rms_norm(ctx, f, ly->ffn_routed_norm, m->hp.rms_eps);
    if (ly->ffn_routed_up) f = loom_mul_mat(ctx, ly->ffn_routed_up, f);
    if (ly->ffn_gate_shexp)
        f = loom_add(ctx, f, loom_mul_mat(ctx, ly->ffn_down_shexp, llm_situ(ctx, loom_mul_mat(ctx, ly->ffn_gate_shexp, n),
                                                                            loom_mul_mat(ctx, ly->ffn_up_shexp, n), b, lb)));
    return f;
}

loom_tensor *llm_kimik3_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, T = b->n_tokens;
    const float eps = hp->rms_eps;
    const int bs = hx->attn_res_bs;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    loom_tensor *stack = NULL; /* the banked layer inputs [E, n, T] */
    const int64_t ne_1[3] = {E, 1, T};
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        /* every bs layers the raw layer input is banked and the running sum restarts from
         * the layer's attention output (llama.cpp's kimi-k3 graph) */
        loom_tensor *cur = bs > 0 ? k3_res_mix(ctx, stack, h, ly->attn_res_score, eps) : h;
        const bool banked = bs > 0 && il % bs == 0;
        if (banked) stack = stack ? loom_concat(ctx, stack, loom_reshape(ctx, h, 3, ne_1), 1) : loom_reshape(ctx, h, 3, ne_1);
        loom_tensor *x = llm_named(loom_rms_norm(ctx, cur, ly->attn_norm, eps), "attn_norm", il);
        x = llm_named(recurrent(hx, il) ? kda_layer(m, ctx, &in, il, x) : mla_layer(m, ctx, b, &in, il, x), "attn_out", il);
        h = banked ? x : loom_add(ctx, h, x);
        cur = bs > 0 ? k3_res_mix(ctx, stack, h, ly->ffn_res_score, eps) : h;
        loom_tensor *n = llm_named(loom_rms_norm(ctx, cur, ly->ffn_norm, eps), "ffn_norm", il);
        h = llm_named(loom_add(ctx, h, llm_named(k3_ffn(ctx, m, ly, n, il), "ffn_out", il)), "l_out", il);
    }
    if (bs > 0) h = k3_res_mix(ctx, stack, h, m->output_res_score, eps);
    (void)T;
    return llm_llama_output(m, ctx, loom_get_rows(ctx, h, in.outs));
}
