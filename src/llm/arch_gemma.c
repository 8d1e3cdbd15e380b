/*
 * arch_gemma.c - Gemma (1), Gemma 2 and Gemma 3 (text).
 *
 *   h = token_embd[tokens] * sqrt(n_embd)
 *   per layer il (sliding-window layers by llama.cpp's pattern rule, llm_layer_is_swa):
 *     x = rms_norm(h) * attn_norm          (GGUF norm weights already include Gemma's +1)
 *     q, k, v; gemma3: q, k = rms_norm per head * q_norm / k_norm
 *     q, k = rope (NEOX; gemma3 sliding layers: rope.freq_base_swa, no scaling)
 *     q *= query scale: 1/sqrt(head_dim), or 1/sqrt(n_embd/n_head) for the 27B models
 *          (llama.cpp picks it by the layer count: 46 for gemma2, 62 for gemma3)
 *     a = attention(q, k, v, scale 1; gemma2: scores soft-capped at attn_logit_softcapping)
 *     h = h + rms_norm(Wo a) * attn_post_norm          (gemma 1: h + Wo a)
 *     x = rms_norm(h) * ffn_norm;  h = h + rms_norm(Wdown (gelu_tanh(Wgate x) * Wup x)) * ffn_post_norm
 *          (gemma 1: no post norms, no sliding window, no soft-caps)
 *   logits = Woutput (rms_norm(h) * output_norm)   (output tied to token_embd)
 *   gemma2 (and gemma3 when its key exists): logits = cap * tanh(logits / cap)
 */
#include <math.h>

#include "arch.h"

static float query_scale(const loom_model_hparams *hp, bool is_27b) {
    return is_27b ? 1.0f / sqrtf((float)(hp->n_embd / hp->n_head)) : 1.0f / sqrtf((float)hp->head_dim_k);
}

loom_status llm_gemma1_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    (void)g;
    (void)err;
    hx->q_scale = query_scale(hp, false); /* llama.cpp: 1/sqrt(head_dim) */
    hx->embd_scale = sqrtf((float)hp->n_embd);
    return LOOM_OK;
}

loom_status llm_gemma2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s;
    /* llama.cpp: window 4096 and period 2 when the keys are absent */
    if ((s = llm_arch_swa_keys(g, hp, hx, false, 4096, 2, err))) return s;
    double v;
    if ((s = llm_get_float_key(g, hp->arch, "rope.freq_base_swa", hp->rope_base, &v, NULL, err))) return s;
    hx->rope_base_swa = (float)v;
    hx->rope_scale_swa = hp->rope_freq_scale;
    if ((s = llm_get_float_key(g, hp->arch, "attn_logit_softcapping", 50.0, &v, NULL, err))) return s;
    if (!(v > 0)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attn_logit_softcapping = %g must be > 0", hp->arch, v);
    hx->attn_softcap = (float)v;
    if ((s = llm_get_float_key(g, hp->arch, "final_logit_softcapping", 30.0, &v, NULL, err))) return s;
    if (!(v > 0)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.final_logit_softcapping = %g must be > 0", hp->arch, v);
    hx->final_softcap = (float)v;
    hx->q_scale = query_scale(hp, hp->n_layer == 46);
    hx->embd_scale = sqrtf((float)hp->n_embd);
    return LOOM_OK;
}

loom_status llm_gemma3_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s;
    /* llama.cpp: sliding layers only when the window key exists, period 6 by default */
    if ((s = llm_arch_swa_keys(g, hp, hx, false, 0, 6, err))) return s;
    double v;
    if ((s = llm_get_float_key(g, hp->arch, "rope.freq_base_swa", 10000.0, &v, NULL, err))) return s;
    if (!(v > 1)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.freq_base_swa = %g is out of range", hp->arch, v);
    hx->rope_base_swa = (float)v;
    hx->rope_scale_swa = 1.0f;
    bool has;
    if ((s = llm_get_float_key(g, hp->arch, "final_logit_softcapping", 0.0, &v, &has, err))) return s;
    if (has && !(v >= 0)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.final_logit_softcapping = %g is out of range", hp->arch, v);
    hx->final_softcap = (float)v;
    hx->q_scale = query_scale(hp, hp->n_layer == 62);
    hx->embd_scale = sqrtf((float)hp->n_embd);
    return LOOM_OK;
}

loom_status llm_gemma_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    loom_status st = LOOM_OK;
    const bool g3 = hp->arch[5] == '3', g1 = hp->arch[5] == 0; /* "gemma": no post norms */
    const int64_t E = hp->n_embd, F = hp->n_ff;
    if ((st = llm_bind_embd_output(m, err))) return st;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        llm_bind_attn(be, hp, L, il, err, &st);
        if (!g1) L->attn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_attention_norm.weight", il);
        if (g3) llm_bind_qk_norm(be, hp, L, il, true, err, &st);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        if (!g1) L->ffn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_ffw_norm.weight", il);
    }
    return st;
}

loom_tensor *llm_gemma_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens, H = hp->n_head, HKV = hp->n_head_kv, DK = hp->head_dim_k, DV = hp->head_dim_v;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = loom_scale(ctx, loom_get_rows(ctx, m->tok_embd, in.tok), hx->embd_scale);
    llm_named(h, "inp_scaled", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        const bool swa = llm_layer_is_swa(hx, il);
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        int64_t ne_q[3] = {DK, H, T}, ne_k[3] = {DK, HKV, T}, ne_v[3] = {DV, HKV, T};
        loom_tensor *q = loom_reshape(ctx, loom_mul_mat(ctx, ly->wq, x), 3, ne_q);
        loom_tensor *k = loom_reshape(ctx, loom_mul_mat(ctx, ly->wk, x), 3, ne_k);
        loom_tensor *v = loom_reshape(ctx, loom_mul_mat(ctx, ly->wv, x), 3, ne_v);
        if (ly->q_norm) q = loom_rms_norm(ctx, q, ly->q_norm, eps);
        if (ly->k_norm) k = loom_rms_norm(ctx, k, ly->k_norm, eps);
        q = llm_rope(m, ctx, q, in.pos, il, NULL);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
        q = llm_named(loom_scale(ctx, q, hx->q_scale), "q", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, swa ? in.mask_swa : in.mask, 1.0f,
                                       hx->attn_softcap, NULL);
        x = loom_mul_mat(ctx, ly->wo, a);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        if (ly->attn_post_norm) x = llm_named(loom_rms_norm(ctx, x, ly->attn_post_norm, eps), "attn_post_norm", il);
        h = llm_named(loom_add(ctx, x, r), "sa_out", il);
        x = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *gt = loom_gelu_f16(ctx, loom_mul_mat(ctx, ly->ffn_gate, x)); /* as llama.cpp */
        x = loom_mul_mat(ctx, ly->ffn_down, loom_mul(ctx, gt, loom_mul_mat(ctx, ly->ffn_up, x)));
        if (ly->ffn_post_norm) x = llm_named(loom_rms_norm(ctx, x, ly->ffn_post_norm, eps), "ffn_post_norm", il);
        h = llm_named(loom_add(ctx, x, h), "l_out", il);
    }
    h = llm_named(loom_rms_norm(ctx, h, m->output_norm, eps), "result_norm", -1);
    loom_tensor *out = loom_mul_mat(ctx, m->output, h);
    if (hx->final_softcap > 0.0f) out = llm_softcap(ctx, out, hx->final_softcap);
    return llm_named(out, "result_output", -1);
}
