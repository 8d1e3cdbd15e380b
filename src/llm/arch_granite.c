/*
 * arch_granite.c - IBM Granite 3.x dense (general.architecture "granite"): the llama
 * block with Granite's four multipliers, as llama.cpp reads them.
 *
 *   h = token_embd[tokens] * embedding_scale                (1 when absent)
 *   per layer il:
 *     x = rms_norm(h) * attn_norm
 *     q, k, v = Wq x, Wk x, Wv x;  q, k = rope (normal; rope_freqs when present)
 *     a = attention(q, k, v, scale attention.scale, or 1/sqrt(head_dim) when absent)
 *     h = h + (Wo a (+ bo)) * residual_scale                  (1 when absent)
 *     x = rms_norm(h) * ffn_norm
 *     h = h + (Wdown (silu(Wgate x) * Wup x)) * residual_scale
 *   logits = Woutput (rms_norm(h) * output_norm) / logit_scale   (logit_scale required)
 * granitemoe (Granite 3.x MoE, 1B-A400M / 3B-A800M): the same block with experts of
 * feed_forward_length in place of the MLP (softmax, top-k renormalised) and an optional
 * shared expert.
 * granitehybrid (Granite 4.0-H): layers whose attention.head_count_kv entry is 0 are
 * Mamba-2 mixers (arch_mamba2.c) in place of attention; the MLP dense or experts (with
 * an optional shared expert); logit_scale optional; rope.scaling.finetuned false turns
 * rope off (NoPE), as llama.cpp's granite-hybrid.
 * granite_swa (IBM GraniteSWA / GraniteMoeSWA, Granite 4 Vision's text model, as llama.cpp's
 * granite_swa graph): the granite block with window layers (attention.sliding_window and
 * one boolean per layer in attention.sliding_window_pattern, both required), an attention
 * sink per head on every layer, rope where attention.rope_pattern says (absent: everywhere),
 * a dense MLP (optional biases) or, with expert_count, experts (gate|up fused or not;
 * softmax, renormalised) plus an optional shared expert whose gate|up is one fused
 * ffn_up_shexp [E, 2 F_shexp] (silu of the first half times the second). The deepstack
 * mapping only routes image features: text tokens carry none.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

loom_status llm_granite_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    double v;
    bool has;
    loom_status s;
    const bool hybrid = !strcmp(hp->arch, "granitehybrid");
    if ((s = llm_get_float_key(g, hp->arch, "logit_scale", 0.0, &v, &has, err))) return s;
    if (!has && !hybrid)
        return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s.logit_scale' is missing", hp->arch);
    if (has && !(v > 0 && isfinite(v)))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.logit_scale = %g must be > 0", hp->arch, v);
    hx->logit_scale = has ? (float)v : 0.0f;
    static const char *const opt[3] = {"residual_scale", "embedding_scale", "attention.scale"};
    float *dst[3] = {&hx->residual_scale, &hx->embd_scale, &hx->kq_scale};
    for (int i = 0; i < 3; i++) {
        if ((s = llm_get_float_key(g, hp->arch, opt[i], 0.0, &v, &has, err))) return s;
        if (has && !(v > 0 && isfinite(v)))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.%s = %g must be > 0", hp->arch, opt[i], v);
        *dst[i] = has ? (float)v : 0.0f;
    }
    /* rope.scaling.finetuned = false switches rope off (Granite 4's NoPE layers) */
    char key[96];
    snprintf(key, sizeof key, "%s.rope.scaling.finetuned", hp->arch);
    bool rope_on = true;
    if (loom_gguf_find_key(g, key) >= 0 && loom_gguf_get_bool(g, key, &rope_on))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' must be a boolean", key);
    hx->rope_off = !rope_on;
    return LOOM_OK;
}

/* Granite 3.x MoE (granitemoe): the granite keys plus experts feed_forward_length wide
 * (softmax router, weights renormalised, as llama.cpp's granite graph) and an optional
 * shared expert (expert_shared_feed_forward_length). */
loom_status llm_granitemoe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_granite_hparams(g, hp, hx, err);
    if (!s) s = llm_arch_moe_keys(g, hp, hx, err);
    if (s) return s;
    hx->n_ff_exp = hp->n_ff;
    int64_t v;
    if ((s = llm_get_int_key(g, hp->arch, "expert_shared_feed_forward_length", false, 0, &v, err))) return s;
    if (v < 0 || v > ((int64_t)1 << 24))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_shared_feed_forward_length = %lld is out of range",
                              hp->arch, (long long)v);
    hx->n_ff_shexp = (int)v;
    return LOOM_OK;
}

/* granitehybrid: granite's keys, experts when expert_count is present, the Mamba-2 keys,
 * and the recurrent layers: those whose head_count_kv entry is 0 */
loom_status llm_granitehybrid_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    char key[96];
    snprintf(key, sizeof key, "%s.expert_count", hp->arch);
    loom_status s = loom_gguf_find_key(g, key) >= 0 ? llm_granitemoe_hparams(g, hp, hx, err)
                                                   : llm_granite_hparams(g, hp, hx, err);
    if (!s) s = llm_mamba2_hparams(g, hp, hx, err);
    if (s) return s;
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", hp->arch);
    memset(hx->recr_bits, 0, sizeof hx->recr_bits);
    for (int il = 0; il < hp->n_layer; il++) {
        int64_t v;
        if ((s = llm_arch_layer_kv_heads(g, hp, il, &v, err))) return s;
        if (v == 0) hx->recr_bits[il / 64] |= (uint64_t)1 << (il % 64);
    }
    return LOOM_OK;
}

static loom_status no_mlp_bias(const loom_model *m, loom_error *err);

loom_status llm_graniteswa_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s = llm_granite_hparams(g, hp, hx, err);
    if (s) return s;
    hx->rope_off = false; /* the rope pattern decides */
    int64_t v;
    if ((s = llm_get_int_key(g, a, "expert_count", false, 0, &v, err))) return s;
    if (v > 0) {
        if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
        hx->n_ff_exp = hp->n_ff;
        if ((s = llm_get_int_key(g, a, "expert_shared_feed_forward_length", false, 0, &v, err))) return s;
        if (v < 0 || v > ((int64_t)1 << 24))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_shared_feed_forward_length = %lld is out of "
                                  "range", a, (long long)v);
        hx->n_ff_shexp = (int)v;
    }
    if ((s = llm_get_int_key(g, a, "attention.sliding_window", true, 0, &v, err))) return s;
    if (v < 1 || v > ((int64_t)1 << 30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window = %lld is out of range", a,
                              (long long)v);
    hx->n_swa = (int)v;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", a);
    const int64_t ki = loom_gguf_find_key(g, key);
    if (ki < 0) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s' is missing", key);
    if (loom_gguf_kv_type(g, ki) != LOOM_GGUF_ARRAY)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s' must be one boolean per layer", key);
    if ((s = llm_arch_swa_layers(g, hp, hx, err))) return s;
    hx->rope_base_swa = hp->rope_base; /* llama.cpp's graph: the global base and scale on every layer */
    hx->rope_scale_swa = hp->rope_freq_scale;
    /* layers without rope: a 0 in attention.rope_pattern (one value per layer) */
    memset(hx->nope_bits, 0, sizeof hx->nope_bits);
    snprintf(key, sizeof key, "%s.attention.rope_pattern", a);
    const int64_t kr = loom_gguf_find_key(g, key);
    if (kr >= 0) {
        loom_gguf_vtype et;
        const void *data;
        uint64_t n;
        if (loom_gguf_kv_type(g, kr) != LOOM_GGUF_ARRAY || loom_gguf_kv_arr(g, kr, &et, &data, &n) ||
            n != (uint64_t)hp->n_layer)
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s' must be one value per layer (%d)", key,
                                  hp->n_layer);
        for (int il = 0; il < hp->n_layer; il++) {
            int64_t r = 0;
            if (et == LOOM_GGUF_BOOL) r = ((const uint8_t *)data)[il];
            else if (loom_gguf_kv_arr_int(g, kr, (uint64_t)il, &r))
                return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s' must hold booleans or integers", key);
            if (!r) hx->nope_bits[il / 64] |= (uint64_t)1 << (il % 64);
        }
    }
    return LOOM_OK;
}

loom_status llm_graniteswa_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, F = hp->n_ff, NE = hx->n_expert, FS = hx->n_ff_shexp;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        llm_bind_attn_any(be, hp, L, il, false, err, &st);
        L->sinks = llm_bind_tensor(be, true, hp->n_head, 1, 1, err, &st, "blk.%d.attn_sinks.weight", il);
        if (!st && loom_tensor_type(L->sinks) != LOOM_TYPE_F32)
            st = loom_error_set(err, LOOM_ERR_FORMAT, "model: tensor 'blk.%d.attn_sinks.weight' must be F32", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        llm_bind_rope_freqs(be, hp, L, il, err, &st);
        llm_bind_longrope(be, hp, L, il, err, &st);
        if (NE > 0) {
            L->ffn_gate_inp = llm_bind_tensor(be, true, E, NE, 1, err, &st, "blk.%d.ffn_gate_inp.weight", il);
            L->ffn_gate_up_exps = llm_bind_tensor(be, false, E, 2 * F, NE, err, &st, "blk.%d.ffn_gate_up_exps.weight", il);
            if (!L->ffn_gate_up_exps) {
                L->ffn_gate_exps = llm_bind_tensor(be, true, E, F, NE, err, &st, "blk.%d.ffn_gate_exps.weight", il);
                L->ffn_up_exps = llm_bind_tensor(be, true, E, F, NE, err, &st, "blk.%d.ffn_up_exps.weight", il);
            }
            L->ffn_down_exps = llm_bind_tensor(be, true, F, E, NE, err, &st, "blk.%d.ffn_down_exps.weight", il);
            if (FS > 0) { /* gate | up fused */
                L->ffn_up_shexp = llm_bind_tensor(be, true, E, 2 * FS, 1, err, &st, "blk.%d.ffn_up_shexp.weight", il);
                L->ffn_down_shexp = llm_bind_tensor(be, true, FS, E, 1, err, &st, "blk.%d.ffn_down_shexp.weight", il);
            }
        } else {
            L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
            L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
            L->ffn_gate_b = llm_bind_tensor(be, false, F, 1, 1, err, &st, "blk.%d.ffn_gate.bias", il);
            L->ffn_up_b = llm_bind_tensor(be, false, F, 1, 1, err, &st, "blk.%d.ffn_up.bias", il);
            L->ffn_down_b = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.ffn_down.bias", il);
        }
    }
    return st;
}

/* MiniCPM 1/2/4 (minicpm): the granite graph with its multipliers defaulting to MiniCPM's
 * (embedding 12, residual 1.4 / sqrt(block_count), logit 256 / n_embd: llama.cpp's
 * defaults for older files; the converter writes n_embd / dim_model_base), no attention.scale, rope always on, LongRoPE factors when the
 * file has them, experts (softmax, renormalised) when expert_count is there. */
loom_status llm_minicpm_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    static const char *const keys[3] = {"embedding_scale", "residual_scale", "logit_scale"};
    const double def[3] = {12.0, 1.4 / sqrt((double)hp->n_layer), 256.0 / (double)hp->n_embd};
    float *dst[3] = {&hx->embd_scale, &hx->residual_scale, &hx->logit_scale};
    loom_status s;
    for (int i = 0; i < 3; i++) {
        double v;
        bool has;
        if ((s = llm_get_float_key(g, hp->arch, keys[i], def[i], &v, &has, err))) return s;
        if (!(v > 0 && isfinite(v)))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.%s = %g must be > 0", hp->arch, keys[i], v);
        *dst[i] = (float)v;
    }
    int64_t ne;
    if ((s = llm_get_int_key(g, hp->arch, "expert_count", false, 0, &ne, err))) return s;
    if (ne > 0) {
        if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
        hx->n_ff_exp = hp->n_ff;
    }
    return LOOM_OK;
}

loom_status llm_minicpm_bind(loom_model *m, loom_error *err) {
    loom_status s = llm_granite_bind(m, err);
    for (int il = 0; il < m->hp.n_layer && !s; il++) llm_bind_longrope(m->be, &m->hp, &m->layers[il], il, err, &s);
    return s;
}

static bool recurrent(const llm_hparams_x *hx, int il) { return hx->recr_bits[il / 64] >> (il % 64) & 1; }

loom_status llm_granitehybrid_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        if (recurrent(hx, il)) {
            llm_mamba2_bind(m, il, err, &st);
        } else {
            llm_bind_attn_qkv(be, hp, L, il, err, &st);
            L->wo = llm_bind_tensor(be, true, (int64_t)hp->n_head * hp->head_dim_v, E, 1, err, &st,
                                    "blk.%d.attn_output.weight", il);
            L->bo = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.attn_output.bias", il);
        }
        if (hx->n_expert > 0) {
            llm_bind_experts(be, L, il, E, F, hx->n_expert, err, &st);
            if (hx->n_ff_shexp > 0) llm_bind_shared_expert(be, L, il, E, hx->n_ff_shexp, err, &st);
        } else {
            L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
            L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        }
    }
    return st ? st : no_mlp_bias(m, err);
}

loom_status llm_granite_bind(loom_model *m, loom_error *err) {
    loom_status s = llm_bind_llama(m, err);
    if (s) return s;
    const int64_t E = m->hp.n_embd, FS = m->hx.n_ff_shexp;
    for (int il = 0; il < m->hp.n_layer && FS > 0 && !s; il++) {
        llm_layer *L = &m->layers[il];
        llm_bind_shared_expert(m->be, L, il, E, FS, err, &s);
    }
    return s ? s : no_mlp_bias(m, err);
}

/* Granite has no MLP biases; a file with them would compute something else */
static loom_status no_mlp_bias(const loom_model *m, loom_error *err) {
    static const char *const bias[3] = {"ffn_gate", "ffn_up", "ffn_down"};
    for (int il = 0; il < m->hp.n_layer; il++)
        for (int i = 0; i < 3; i++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%d.%s.bias", il, bias[i]);
            if (loom_backend_get_tensor(m->be, name))
                return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: granite: tensor '%s' (MLP biases) is not supported",
                                      name);
        }
    return LOOM_OK;
}

static loom_tensor *residual(loom_ctx *ctx, const llm_hparams_x *hx, loom_tensor *x) {
    return hx->residual_scale > 0.0f ? loom_scale(ctx, x, hx->residual_scale) : x;
}

loom_tensor *llm_granite_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    const float kq_scale = hx->kq_scale > 0.0f ? hx->kq_scale : 1.0f / sqrtf((float)hp->head_dim_k);
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = loom_get_rows(ctx, m->tok_embd, in.tok);
    if (hx->embd_scale > 0.0f) h = loom_scale(ctx, h, hx->embd_scale);
    h = llm_named(h, "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        if (recurrent(hx, il)) { /* granitehybrid's Mamba-2 layers */
            x = llm_mamba2_layer(m, ctx, &in, il, x);
        } else {
            loom_tensor *q, *k, *v;
            llm_llama_qkv(ctx, hp, ly, x, T, il, &q, &k, &v);
            if (llm_layer_has_rope(m, il)) {
                loom_tensor *ff = llm_layer_rope_factors(m, ctx, il); /* minicpm: LongRoPE's */
                q = llm_rope(m, ctx, q, in.pos, il, ff);
                k = llm_rope(m, ctx, k, in.pos, il, ff);
            }
            llm_named(q, "q", il);
            llm_named(k, "k", il);
            loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, kq_scale, 0.0f, ly->sinks);
            x = llm_linear(ctx, ly->wo, ly->bo, a);
        }
        x = llm_named(x, "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, residual(ctx, hx, x), r), "ffn_inp", il);
        x = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        if (ly->ffn_gate_inp) {
            loom_tensor *n = x;
            x = llm_moe_ffn_ext(ctx, ly, n, hx->n_expert, hx->n_expert_used, LLM_MOE_SOFTMAX, true, 0.0f, 0.0f, il);
            if (ly->ffn_gate_shexp) {
                loom_tensor *g = loom_mul_mat(ctx, ly->ffn_gate_shexp, n), *u = loom_mul_mat(ctx, ly->ffn_up_shexp, n);
                x = loom_add(ctx, x, loom_mul_mat(ctx, ly->ffn_down_shexp, loom_swiglu(ctx, g, u)));
            } else if (ly->ffn_up_shexp) { /* granite_swa: gate | up in one matrix */
                loom_tensor *gu = loom_mul_mat(ctx, ly->ffn_up_shexp, n); /* [2 FS, T] */
                const int64_t FS = loom_tensor_ne(gu, 0) / 2, T2 = loom_tensor_ne(gu, 1);
                const int64_t va[3] = {FS, (int64_t)loom_tensor_nb(gu, 1), T2};
                loom_tensor *g = loom_cont(ctx, loom_view(ctx, gu, 0, 3, va));
                loom_tensor *u = loom_cont(ctx, loom_view(ctx, gu, (size_t)FS * sizeof(float), 3, va));
                x = loom_add(ctx, x, loom_mul_mat(ctx, ly->ffn_down_shexp, loom_swiglu(ctx, g, u)));
            }
        } else {
            loom_tensor *g = llm_linear(ctx, ly->ffn_gate, ly->ffn_gate_b, x), *u = llm_linear(ctx, ly->ffn_up, ly->ffn_up_b, x);
            x = llm_linear(ctx, ly->ffn_down, ly->ffn_down_b, loom_swiglu(ctx, g, u));
        }
        x = llm_named(x, "ffn_out", il);
        h = llm_named(loom_add(ctx, residual(ctx, hx, x), h), "l_out", il);
    }
    h = llm_named(loom_rms_norm(ctx, h, m->output_norm, eps), "result_norm", -1);
    loom_tensor *out = loom_mul_mat(ctx, m->output, h);
    if (hx->logit_scale > 0.0f) out = loom_scale(ctx, out, 1.0f / hx->logit_scale);
    return llm_named(out, "result_output", -1);
}
