/*
 * arch_step35.c - StepFun Step-3.5 / 3.7 Flash (general.architecture "step35"), as
 * llama.cpp's step35 graph: sliding-window and full-attention layers (one boolean per layer
 * in attention.sliding_window_pattern), each with its own query and KV head counts
 * (head_count / head_count_kv per layer), optional per-head q/k RMS norms, neox rope over
 * the whole head on the window layers (rope.dimension_count_swa, default
 * rope.dimension_count) and over half of rope.dimension_count on the full ones, which
 * alone take the rope_freqs factors and rope.freq_base (the window layers
 * rope.freq_base_swa, else 10000, at scale 1), an optional head-wise output gate
 * sigmoid(Wgate x) per head, then a dense SwiGLU MLP on the layers without a router,
 * elsewhere routed experts (expert_gating_func: sigmoid unless it says softmax; the
 * selection bias exp_probs_b; expert_weights_norm / _scale) plus a shared expert
 * expert_shared_feed_forward_length wide. swiglu_clamp_exp / swiglu_clamp_shexp (one
 * limit per layer, 0: none) clamp the experts' / the other MLPs' SwiGLU:
 * min(silu(gate), L) * clamp(up, -L, L).
 *
 *   per layer il (H_il heads, K_il KV heads, head width D, n_rot_il):
 *     x = rms_norm(h) * attn_norm
 *     q, k, v = Wq x, Wk x, Wv x;  q, k = rms_norm per head * q/k_norm;  rope(q, k)
 *     a = attention(q, k, v; 1/sqrt(D)) (* sigmoid(Wgate x) per head);  h = h + Wo a
 *     n = rms_norm(h) * ffn_norm;  h = h + (router ? moe(n) + shared(n) : mlp(n))
 *   logits = Woutput (rms_norm(h) * output_norm)
 * The MTP layers past block_count - nextn_predict_layers are not run; the per-layer
 * arrays may cover them (the converter's) or not.
 *
 * hy_v3 (Tencent Hy3, as llama.cpp's hy_v3 graph): the same block without windows or
 * gate: every layer full, its heads and rope the model's (llama.cpp loads no rope_freqs),
 * q/k norms required, q|k|v separate or fused, an optional attention output bias, and on
 * the layers with a router experts (separate or fused gate|up) plus a shared expert
 * (expert_shared_feed_forward_length, default the experts' width), the selection bias
 * named exp_probs_b (".bias" also taken), no SwiGLU limits.
 *
 * laguna (poolside Laguna XS.2 / M.1, as llama.cpp's laguna graph): the step35 block with
 * its head counts per layer, q/k norms required, an output gate softplus(Wgate x) that is
 * one value per head ([E, heads]) or per element ([E, heads x D]), the leading
 * leading_dense_block_count layers dense and the others routed (sigmoid unless stated, the
 * selection bias exp_probs_b.bias required, weights normalised / scaled as the keys say)
 * plus a shared expert. With attention.sliding_window > 0 the window layers are all but
 * every sliding_window_pattern-th from the first (a period, default 4; llama.cpp reads
 * no per-layer array here) and they rotate rope.dimension_count_swa dims with
 * rope.freq_base_swa (default the global base) without YaRN, the full layers
 * rope.dimension_count dims with the file's rope scaling.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

/* key's per-layer array length: the trunk's layers, or with the MTP layers */
static bool array_len_ok(const loom_model_hparams *hp, uint64_t n, int n_all) {
    return n == (uint64_t)hp->n_layer || n == (uint64_t)n_all;
}

loom_status llm_arch_layer_float(const loom_gguf *g, const loom_model_hparams *hp, int n_all, const char *key, int il,
                                 float *out, loom_error *err) {
    char full[128];
    snprintf(full, sizeof full, "%s.%s", hp->arch, key);
    const int64_t ki = loom_gguf_find_key(g, full);
    *out = 0.0f;
    if (ki < 0) return LOOM_OK;
    double d;
    if (loom_gguf_kv_type(g, ki) != LOOM_GGUF_ARRAY) {
        if (loom_gguf_kv_float(g, ki, &d))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' must be a number or one per layer", full);
    } else {
        loom_gguf_vtype et;
        const void *data;
        uint64_t n;
        if (loom_gguf_kv_arr(g, ki, &et, &data, &n) || et != LOOM_GGUF_F32 || !array_len_ok(hp, n, n_all))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' must be F32 values, one per layer (%d or %d)",
                                  full, hp->n_layer, n_all);
        float f;
        memcpy(&f, (const char *)data + (size_t)il * sizeof f, sizeof f);
        d = f;
    }
    if (!(d >= 0 && d < 1e6))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' layer %d = %g is out of range", full, il, d);
    *out = (float)d;
    return LOOM_OK;
}

/* the length llm_get_layer_int checks key's array against: its own when it covers the
 * trunk or the trunk and the MTP layers (so that other lengths fail there, named) */
static int arr_len(const loom_gguf *g, const loom_model_hparams *hp, const char *key, int n_all) {
    char full[128];
    snprintf(full, sizeof full, "%s.%s", hp->arch, key);
    const int64_t ki = loom_gguf_find_key(g, full);
    if (ki < 0 || loom_gguf_kv_type(g, ki) != LOOM_GGUF_ARRAY) return n_all;
    const uint64_t n = loom_gguf_kv_array_len(g, ki);
    return array_len_ok(hp, n, n_all) ? (int)n : n_all;
}

int llm_arch_n_layer_all(const loom_gguf *g, const loom_model_hparams *hp) {
    int64_t nextn = 0;
    loom_error e = {0};
    if (llm_get_int_key(g, hp->arch, "nextn_predict_layers", false, 0, &nextn, &e) || nextn < 0 || nextn > 64) nextn = 0;
    return hp->n_layer + (int)nextn;
}

loom_status llm_step35_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    const int na = llm_arch_n_layer_all(g, hp);
    loom_status s;
    int64_t v;
    double d;
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", a);
    /* window layers: one boolean per layer */
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", a);
    const int64_t ki = loom_gguf_find_key(g, key);
    if (ki < 0) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s' is missing", key);
    memset(hx->swa_bits, 0, sizeof hx->swa_bits);
    if ((s = llm_arch_layer_flags(g, hp, ki, key, na, hx->swa_bits, err))) return s;
    hx->swa_listed = true;
    if ((s = llm_get_int_key(g, a, "attention.sliding_window", true, 0, &v, err))) return s;
    if (v < 1 || v > ((int64_t)1 << 30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window = %lld is out of range", a,
                              (long long)v);
    hx->n_swa = (int)v;
    if ((s = llm_get_float_key(g, a, "rope.freq_base_swa", 10000.0, &d, NULL, err))) return s;
    if (!(d > 1 && d < 1e12))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.freq_base_swa = %g is out of range", a, d);
    hx->rope_base_swa = (float)d;
    hx->rope_scale_swa = 1.0f;
    /* rope widths: the window layers' key (default the file's rope width), half of it on
     * the full layers (llama.cpp's n_rot_full / 2) */
    if ((s = llm_get_int_key(g, a, "rope.dimension_count_swa", false, hp->n_rot, &v, err))) return s;
    if (v < 2 || v > hp->head_dim_k || v % 2 || hp->n_rot % 4)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s: rope widths %lld (window layers) and %d / 2 (full "
                              "layers) must be even and at most key_length %d", a, (long long)v, hp->n_rot,
                              hp->head_dim_k);
    hx->n_rot_swa = (int)v;
    hp->n_rot /= 2;
    /* experts */
    if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
    if ((s = llm_get_int_key(g, a, "expert_shared_feed_forward_length", true, 0, &v, err))) return s;
    if (v < 1 || v > ((int64_t)1 << 24))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_shared_feed_forward_length = %lld is out of range",
                              a, (long long)v);
    hx->n_ff_shexp = (int)v;
    if ((s = llm_arch_router_keys(g, hp, hx, 2, err))) return s; /* sigmoid unless the file says softmax */
    return LOOM_OK; /* YaRN betas / log multiplier: defaults, as llama.cpp (mimo2's note) */
}

loom_status llm_step35_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const loom_gguf *g = loom_model_gguf(m);
    const int64_t E = hp->n_embd, F = hp->n_ff, NE = hx->n_expert, FE = hx->n_ff_exp, FS = hx->n_ff_shexp;
    const int64_t DK = hp->head_dim_k, DV = hp->head_dim_v;
    const int na = llm_arch_n_layer_all(g, hp);
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        const bool swa = llm_layer_is_swa(hx, il);
        int64_t h, kv;
        if ((st = llm_get_layer_int(g, hp->arch, "attention.head_count", il, arr_len(g, hp, "attention.head_count", na),
                                    hp->n_head, &h, err)) ||
            (st = llm_get_layer_int(g, hp->arch, "attention.head_count_kv", il,
                                    arr_len(g, hp, "attention.head_count_kv", na), h, &kv, err)))
            break;
        if (h < 1 || kv < 1 || h % kv) {
            st = loom_error_set(err, LOOM_ERR_FORMAT, "model: %s layer %d: %lld heads, %lld KV heads (heads must be a "
                                "multiple of KV heads)", hp->arch, il, (long long)h, (long long)kv);
            break;
        }
        L->n_head = (int)h;
        L->n_head_kv = (int)kv;
        L->n_rot = swa ? hx->n_rot_swa : hp->n_rot;
        m->kv_types[il].hkv = (int32_t)kv; /* the cache keeps this layer's shape */
        if ((st = llm_arch_layer_float(g, hp, na, "swiglu_clamp_exp", il, &L->clamp_exp, err)) ||
            (st = llm_arch_layer_float(g, hp, na, "swiglu_clamp_shexp", il, &L->clamp_shexp, err)))
            break;
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->wq = llm_bind_tensor(be, true, E, h * DK, 1, err, &st, "blk.%d.attn_q.weight", il);
        L->wk = llm_bind_tensor(be, true, E, kv * DK, 1, err, &st, "blk.%d.attn_k.weight", il);
        L->wv = llm_bind_tensor(be, true, E, kv * DV, 1, err, &st, "blk.%d.attn_v.weight", il);
        L->wo = llm_bind_tensor(be, true, h * DV, E, 1, err, &st, "blk.%d.attn_output.weight", il);
        L->q_norm = llm_bind_tensor(be, false, DK, 1, 1, err, &st, "blk.%d.attn_q_norm.weight", il);
        L->k_norm = llm_bind_tensor(be, false, DK, 1, 1, err, &st, "blk.%d.attn_k_norm.weight", il);
        L->attn_gate = llm_bind_tensor(be, false, E, h, 1, err, &st, "blk.%d.attn_gate.weight", il);
        if (!swa) llm_bind_rope_freqs(be, hp, L, il, err, &st); /* the full layers only */
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_gate_inp = llm_bind_tensor(be, false, E, NE, 1, err, &st, "blk.%d.ffn_gate_inp.weight", il);
        if (L->ffn_gate_inp) {
            llm_bind_experts(be, L, il, E, FE, NE, err, &st);
            L->ffn_exp_probs_b = llm_bind_tensor(be, false, NE, 1, 1, err, &st, "blk.%d.exp_probs_b.bias", il);
            llm_bind_shared_expert(be, L, il, E, FS, err, &st);
        } else {
            L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
            L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        }
    }
    return st;
}

loom_status llm_hyv3_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    int64_t v;
    if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
    if ((s = llm_get_int_key(g, a, "expert_shared_feed_forward_length", false, hx->n_ff_exp, &v, err))) return s;
    if (v < 1 || v > ((int64_t)1 << 24))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_shared_feed_forward_length = %lld is out of range",
                              a, (long long)v);
    hx->n_ff_shexp = (int)v;
    if ((s = llm_arch_router_keys(g, hp, hx, 2, err))) return s; /* sigmoid unless the file says softmax */
    return LOOM_OK; /* YaRN betas / log multiplier: defaults, as llama.cpp (mimo2's note) */
}

loom_status llm_hyv3_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, F = hp->n_ff, NE = hx->n_expert, FE = hx->n_ff_exp, FS = hx->n_ff_shexp;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->n_head = hp->n_head;
        L->n_head_kv = hp->n_head_kv;
        L->n_rot = hp->n_rot;
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        llm_bind_attn_any(be, hp, L, il, false, err, &st);
        llm_bind_qk_norm(be, hp, L, il, true, err, &st);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_gate_inp = llm_bind_tensor(be, false, E, NE, 1, err, &st, "blk.%d.ffn_gate_inp.weight", il);
        if (L->ffn_gate_inp) {
            L->ffn_gate_up_exps = llm_bind_tensor(be, false, E, 2 * FE, NE, err, &st, "blk.%d.ffn_gate_up_exps.weight", il);
            if (L->ffn_gate_up_exps) {
                L->ffn_down_exps = llm_bind_tensor(be, true, FE, E, NE, err, &st, "blk.%d.ffn_down_exps.weight", il);
            } else {
                llm_bind_experts(be, L, il, E, FE, NE, err, &st);
            }
            /* llama.cpp's name has no suffix; a ".bias" one is taken too */
            L->ffn_exp_probs_b = llm_bind_tensor(be, false, NE, 1, 1, err, &st, "blk.%d.exp_probs_b", il);
            if (!L->ffn_exp_probs_b)
                L->ffn_exp_probs_b = llm_bind_tensor(be, false, NE, 1, 1, err, &st, "blk.%d.exp_probs_b.bias", il);
            llm_bind_shared_expert(be, L, il, E, FS, err, &st);
        } else {
            L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
            L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        }
    }
    return st;
}

static bool is_laguna(const loom_model_hparams *hp) { return !strcmp(hp->arch, "laguna"); }

loom_status llm_laguna_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    int64_t v, shared;
    double d;
    if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
    if ((s = llm_get_int_key(g, a, "leading_dense_block_count", true, 0, &v, err))) return s;
    if (v < 0 || v > hp->n_layer)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.leading_dense_block_count = %lld is out of range", a,
                              (long long)v);
    hx->n_dense_lead = (int)v;
    if ((s = llm_get_int_key(g, a, "expert_shared_count", false, 1, &shared, err))) return s;
    if (shared < 0 || shared > 64)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_shared_count = %lld is out of range", a,
                              (long long)shared);
    if ((s = llm_get_int_key(g, a, "expert_shared_feed_forward_length", false, 0, &v, err))) return s;
    if (v == 0) v = (int64_t)hx->n_ff_exp * shared; /* llama.cpp's default */
    if (v < 1 || v > ((int64_t)1 << 24))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_shared_feed_forward_length = %lld is out of range",
                              a, (long long)v);
    hx->n_ff_shexp = (int)v;
    if ((s = llm_arch_router_keys(g, hp, hx, 2, err))) return s; /* sigmoid unless the file says softmax */
    if ((s = llm_get_int_key(g, a, "attention.sliding_window", false, 0, &v, err))) return s;
    if (v < 0 || v > ((int64_t)1 << 30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window = %lld is out of range", a,
                              (long long)v);
    hx->n_swa = (int)v;
    if (v > 0) {
        if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", a);
        int64_t p = 4;
        char key[128];
        snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", a);
        const int64_t ki = loom_gguf_find_key(g, key);
        if (ki >= 0 && loom_gguf_kv_type(g, ki) != LOOM_GGUF_ARRAY && (loom_gguf_kv_int(g, ki, &p) || p < 0 || p > 4096))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s' must be a period in [0, 4096]", key);
        memset(hx->swa_bits, 0, sizeof hx->swa_bits);
        hx->swa_listed = true;
        for (int il = 0; il < hp->n_layer; il++) /* the full layer first in each period */
            if (p == 0 || il % p != 0) hx->swa_bits[il / 64] |= (uint64_t)1 << (il % 64);
        if ((s = llm_get_float_key(g, a, "rope.freq_base_swa", hp->rope_base, &d, NULL, err))) return s;
        if (!(d > 1 && d < 1e12))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.freq_base_swa = %g is out of range", a, d);
        hx->rope_base_swa = (float)d;
        hx->rope_scale_swa = 1.0f;
        hx->swa_rope_plain = true; /* no YaRN on the window layers */
        if ((s = llm_get_int_key(g, a, "rope.dimension_count_swa", false, hp->n_rot, &v, err))) return s;
        if (v < 2 || v > hp->head_dim_k || v % 2)
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.dimension_count_swa = %lld is out of range", a,
                                  (long long)v);
        hx->n_rot_swa = (int)v;
    }
    return LOOM_OK; /* YaRN betas / log multiplier: defaults, as llama.cpp (mimo2's note) */
}

loom_status llm_laguna_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const loom_gguf *g = loom_model_gguf(m);
    const int64_t E = hp->n_embd, F = hp->n_ff, NE = hx->n_expert, FE = hx->n_ff_exp, FS = hx->n_ff_shexp;
    const int64_t DV = hp->head_dim_v;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        int64_t h, kv;
        if ((st = llm_get_layer_int(g, hp->arch, "attention.head_count", il, hp->n_layer, hp->n_head, &h, err)) ||
            (st = llm_get_layer_int(g, hp->arch, "attention.head_count_kv", il, hp->n_layer, hp->n_head_kv, &kv, err)))
            break;
        if (h < 1 || kv < 1 || h % kv) {
            st = loom_error_set(err, LOOM_ERR_FORMAT, "model: %s layer %d: %lld heads, %lld KV heads (heads must be a "
                                "multiple of KV heads)", hp->arch, il, (long long)h, (long long)kv);
            break;
        }
        L->n_head = (int)h;
        L->n_head_kv = (int)kv;
        L->n_rot = llm_layer_is_swa(hx, il) ? hx->n_rot_swa : hp->n_rot;
        m->kv_types[il].hkv = (int32_t)kv;
        loom_model_hparams lhp = *hp;
        lhp.n_head = (int)h;
        lhp.n_head_kv = (int)kv;
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        llm_bind_attn_any(be, &lhp, L, il, false, err, &st);
        llm_bind_qk_norm(be, hp, L, il, true, err, &st);
        /* the output gate: one per head or one per element (by its width) */
        char name[64];
        snprintf(name, sizeof name, "blk.%d.attn_gate.weight", il);
        const loom_tensor *gt = loom_backend_get_tensor(be, name);
        const int64_t gw = gt && loom_tensor_ne(gt, 1) == h * DV ? h * DV : h;
        L->attn_gate = llm_bind_tensor(be, true, E, gw, 1, err, &st, "blk.%d.attn_gate.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        if (il >= hx->n_dense_lead) {
            llm_bind_experts(be, L, il, E, FE, NE, err, &st);
            L->ffn_exp_probs_b = llm_bind_tensor(be, true, NE, 1, 1, err, &st, "blk.%d.exp_probs_b.bias", il);
            llm_bind_shared_expert(be, L, il, E, FS, err, &st);
        } else {
            L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
            L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        }
    }
    return st;
}

static loom_tensor *mlp(loom_ctx *ctx, loom_tensor *gate, loom_tensor *up, loom_tensor *down, loom_tensor *x, float limit) {
    return loom_mul_mat(ctx, down, llm_swiglu_limited(ctx, loom_mul_mat(ctx, gate, x), loom_mul_mat(ctx, up, x), limit));
}

loom_tensor *llm_step35_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens, DK = hp->head_dim_k, DV = hp->head_dim_v;
    const float eps = hp->rms_eps;
    const bool laguna = is_laguna(hp);
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        const int64_t H = ly->n_head, HKV = ly->n_head_kv;
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        loom_model_hparams lhp = *hp; /* this layer's heads */
        lhp.n_head = (int)H;
        lhp.n_head_kv = (int)HKV;
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, &lhp, ly, x, T, &q, &k, &v);
        if (ly->q_norm) q = loom_rms_norm(ctx, q, ly->q_norm, eps);
        if (ly->k_norm) k = loom_rms_norm(ctx, k, ly->k_norm, eps);
        loom_rope_opts ro;
        float base, scale;
        llm_rope_layer(m, il, ly->rope_freqs, &ro, &base, &scale);
        q = llm_named(loom_rope(ctx, q, in.pos, ly->n_rot, base, scale, &ro), "q", il);
        k = llm_named(loom_rope(ctx, k, in.pos, ly->n_rot, base, scale, &ro), "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)DK), 0.0f, NULL);
        if (ly->attn_gate) { /* step35: sigmoid per head; laguna: softplus per head or per element */
            loom_tensor *gl = loom_mul_mat(ctx, ly->attn_gate, x);
            gl = laguna ? loom_softplus(ctx, gl) : loom_sigmoid(ctx, gl);
            if (loom_tensor_ne(ly->attn_gate, 1) == H) {
                const int64_t ne_a[3] = {DV, H, T}, ne_g[3] = {1, H, T}, ne_f[2] = {DV * H, T};
                a = loom_reshape(ctx, loom_mul(ctx, loom_reshape(ctx, a, 3, ne_a), loom_reshape(ctx, gl, 3, ne_g)), 2,
                                 ne_f);
            } else {
                a = loom_mul(ctx, a, gl);
            }
        }
        x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        llm_last_rows(ctx, m, &in, il, &x, &r);
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *f;
        if (ly->ffn_gate_inp) {
            const llm_moe_opts mo = {.gating = hx->expert_gating ? LLM_MOE_SIGMOID : LLM_MOE_SOFTMAX,
                                     .norm_w = hx->expert_weights_norm,
                                     .w_scale = hx->expert_weights_scale,
                                     .silu_limit = ly->clamp_exp};
            f = llm_moe_ffn_opts(ctx, ly, n, hx->n_expert, hx->n_expert_used, &mo, il);
            f = loom_add(ctx, f, mlp(ctx, ly->ffn_gate_shexp, ly->ffn_up_shexp, ly->ffn_down_shexp, n, ly->clamp_shexp));
        } else {
            f = mlp(ctx, ly->ffn_gate, ly->ffn_up, ly->ffn_down, n, ly->clamp_shexp);
        }
        h = llm_named(loom_add(ctx, llm_named(f, "ffn_out", il), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
