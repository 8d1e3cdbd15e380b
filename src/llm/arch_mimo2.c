/*
 * arch_mimo2.c - Xiaomi MiMo-V2 (general.architecture "mimo2": MiMo-V2-Flash, MiMo-V2.5),
 * as llama.cpp's mimo2 graph: full-attention and sliding-window layers (one boolean per
 * layer in attention.sliding_window_pattern) with their own KV head counts
 * (attention.head_count_kv per layer), keys wider than values (key_length, value_length),
 * partial neox rope (rope.dimension_count; the window layers with rope.freq_base_swa,
 * else 10000, at scale 1), optional attention sinks, an optional value scale
 * (attention.value_scale multiplies the attention output), a dense SwiGLU MLP on the
 * layers without a router, elsewhere experts picked by a sigmoid router (+ the optional
 * selection bias exp_probs_b) with their weights normalised.
 *
 *   per layer il (H heads, K_il KV heads, key width DK, value width DV):
 *     x = rms_norm(h) * attn_norm
 *     q, k, v = Wq x, Wk x, Wv x (or a fused attn_qkv);  q, k = rope (first n_rot dims)
 *     h = h + vs * Wo attention(q, k, v; 1/sqrt(DK), sinks)
 *     n = rms_norm(h) * ffn_norm;  h = h + (router ? moe(n) : Wdown (silu(Wgate n) * Wup n))
 *   logits = Woutput (rms_norm(h) * output_norm)
 * The next-token-prediction layers past block_count - nextn_predict_layers are not run;
 * the per-layer arrays may cover them (the converter's) or not (older files).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

/* the per-layer arrays' length: block_count with the MTP layers, or without them */
static int layers_all(const loom_gguf *g, const loom_model_hparams *hp, const char *key) {
    char full[128];
    snprintf(full, sizeof full, "%s.%s", hp->arch, key);
    const int64_t ki = loom_gguf_find_key(g, full);
    if (ki < 0 || loom_gguf_kv_type(g, ki) != LOOM_GGUF_ARRAY) return hp->n_layer;
    const uint64_t n = loom_gguf_kv_array_len(g, ki);
    return n > (uint64_t)hp->n_layer && n <= (uint64_t)hp->n_layer + 64 ? (int)n : hp->n_layer;
}

loom_status llm_mimo2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
    int64_t w;
    if ((s = llm_get_int_key(g, a, "attention.sliding_window", true, 0, &w, err))) return s;
    if (w < 1 || w > ((int64_t)1 << 30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window = %lld is out of range", a,
                              (long long)w);
    hx->n_swa = (int)w;
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", a);
    memset(hx->swa_bits, 0, sizeof hx->swa_bits);
    hx->swa_listed = true;
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", a);
    const int64_t ki = loom_gguf_find_key(g, key);
    if (ki < 0) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s' is missing", key);
    if ((s = llm_arch_layer_flags(g, hp, ki, key, llm_arch_n_layer_all(g, hp), hx->swa_bits, err))) return s;
    double d;
    if ((s = llm_get_float_key(g, a, "rope.freq_base_swa", 10000.0, &d, NULL, err))) return s;
    if (!(d > 1 && d < 1e12))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.freq_base_swa = %g is out of range", a, d);
    hx->rope_base_swa = (float)d;
    hx->rope_scale_swa = 1.0f;
    bool has;
    if ((s = llm_get_float_key(g, a, "attention.value_scale", 1.0, &d, &has, err))) return s;
    if (!(isfinite(d) && fabs(d) < 1e6))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.value_scale = %g is out of range", a, d);
    hx->attn_value_scale = (float)d;
    /* the YaRN betas and log multiplier keep their defaults (32, 1, 0): llama.cpp reads
     * those keys for deepseek2, deepseek32, grok and mistral3 only */
    return LOOM_OK;
}

loom_status llm_mimo2_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const loom_gguf *g = loom_model_gguf(m);
    const int64_t E = hp->n_embd, F = hp->n_ff, NE = hx->n_expert, FE = hx->n_ff_exp;
    const int na = layers_all(g, hp, "attention.head_count_kv");
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        int64_t kv;
        if ((st = llm_get_layer_int(g, hp->arch, "attention.head_count_kv", il, na, hp->n_head_kv, &kv, err))) break;
        if (kv < 1 || hp->n_head % kv) {
            st = loom_error_set(err, LOOM_ERR_FORMAT, "model: %s layer %d: %lld KV heads for %d heads", hp->arch, il,
                                (long long)kv, hp->n_head);
            break;
        }
        loom_model_hparams lhp = *hp; /* this layer's KV heads */
        lhp.n_head_kv = (int)kv;
        L->n_head_kv = (int)kv;
        m->kv_types[il].hkv = (int32_t)kv; /* the cache keeps this layer's shape */
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        llm_bind_attn_any(be, &lhp, L, il, false, err, &st);
        L->sinks = llm_bind_tensor(be, false, hp->n_head, 1, 1, err, &st, "blk.%d.attn_sinks.weight", il);
        if (!st && L->sinks && loom_tensor_type(L->sinks) != LOOM_TYPE_F32)
            st = loom_error_set(err, LOOM_ERR_FORMAT, "model: tensor 'blk.%d.attn_sinks.weight' must be F32", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_gate_inp = llm_bind_tensor(be, false, E, NE, 1, err, &st, "blk.%d.ffn_gate_inp.weight", il);
        if (L->ffn_gate_inp) {
            llm_bind_experts(be, L, il, E, FE, NE, err, &st);
            L->ffn_exp_probs_b = llm_bind_tensor(be, false, NE, 1, 1, err, &st, "blk.%d.exp_probs_b.bias", il);
        } else {
            L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
            L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        }
    }
    return st;
}

loom_tensor *llm_mimo2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    const llm_moe_opts mo = {.gating = LLM_MOE_SIGMOID, .norm_w = true};
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_model_hparams lhp = *hp;
        lhp.n_head_kv = ly->n_head_kv;
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, &lhp, ly, x, T, &q, &k, &v);
        q = llm_named(llm_rope(m, ctx, q, in.pos, il, NULL), "q", il);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)hp->head_dim_k), 0.0f,
                                       ly->sinks);
        x = llm_linear(ctx, ly->wo, ly->bo, a);
        if (hx->attn_value_scale != 1.0f) x = loom_scale(ctx, x, hx->attn_value_scale);
        x = llm_named(x, "attn_out", il);
        llm_last_rows(ctx, m, &in, il, &x, &r);
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *f = ly->ffn_gate_inp ? llm_moe_ffn_opts(ctx, ly, n, hx->n_expert, hx->n_expert_used, &mo, il)
                                          : llm_swiglu_mlp(ctx, ly->ffn_gate, ly->ffn_up, ly->ffn_down, n);
        h = llm_named(loom_add(ctx, llm_named(f, "ffn_out", il), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
