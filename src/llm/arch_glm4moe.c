/*
 * arch_glm4moe.c - GLM-4.5 / 4.6 / 4.5-Air (general.architecture "glm4moe"), as llama.cpp's
 * glm4moe graph: attention with Q/K/V biases, optional per-head q/k RMS norms, partial neox
 * rope (rope.dimension_count; rope.dimension_sections: the multi-section rope of GLM-4.5V,
 * whose text positions are the neox rope with factors), and DeepSeek-style experts
 * (arch_deepseek2.c: leading dense layers, sigmoid router by default with the selection
 * bias, weight norm and scale, shared experts). The FFN's norm is post_attention_norm.
 * The next-token-prediction block (nextn_predict_layers) is not run (model.c).
 * dots1 (rednote dots.llm1): the same graph with the FFN norm named ffn_norm, q/k norms
 * and shared experts required, and the router function key required (llama.cpp has no
 * default for it).
 * bailingmoe2 (inclusionAI Ling 2.0 / Ring 2.0, as llama.cpp's bailingmoe2 graph): the dots1
 * form (ffn_norm, per-head q/k norms required, the router function key required) with a
 * fused q|k|v and shared experts expert_shared_feed_forward_length wide when given.
 * deepseek (DeepSeek-LLM / DeepSeek-MoE 16B, DeepSeek v1, as llama.cpp's deepseek graph):
 * the llama attention (normal rope, no biases, no q/k norms) with the FFN norm named
 * ffn_norm and DeepSeek-MoE experts: leading dense layers, a softmax router (unless
 * expert_gating_func says otherwise), weights as routed (times expert_weights_scale),
 * expert_shared_count shared experts (the key required).
 * bailingmoe (Ling-lite / Ling-plus 1.x, as llama.cpp's bailingmoe graph): deepseek's form
 * with every layer routed (leading_dense_block_count is not used by llama.cpp's graph),
 * expert_weights_norm honoured, heads rope.dimension_count wide.
 * exaone-moe (K-EXAONE, as llama.cpp's exaone-moe graph): the dots1 form (ffn_norm,
 * per-head q/k norms required, the router function key required, the selection bias
 * optional) with one shared expert expert_shared_feed_forward_length wide (default the
 * experts') in every MoE layer, optional rope_freqs, and attention.sliding_window
 * (required) on all but every sliding_window_pattern-th layer (4): only the window layers
 * rotate, with the global rope base (llama.cpp's graph passes freq_base to them).
 * deepseek2-ocr (the text model of DeepSeek-OCR / -OCR-2, as llama.cpp's deepseek2 graph
 * for it): deepseek's form without latent attention: multi-head attention (as many KV heads
 * as heads; llama.cpp's graph supports no other), neox rope over the whole head whatever
 * rope.dimension_count says (the converter writes qk_rope_head_dim, 0), no rope scaling;
 * expert_weights_norm honoured.
 *
 *   per layer: x = rms_norm(h) * attn_norm; q, k, v = W x + b; (q, k = rms_norm per head
 *     * q/k_norm); rope(q, k); h += Wo attn(q, k, v)
 *     n = rms_norm(h) * post_attention_norm; h += ffn(n)
 *   logits = Woutput (rms_norm(h) * output_norm)
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

/* dots1 and bailingmoe2: ffn_norm, q/k norms and the router function key required */
static bool is_dots1(const loom_model_hparams *hp) {
    return !strcmp(hp->arch, "dots1") || !strcmp(hp->arch, "bailingmoe2");
}
static bool is_deepseek(const loom_model_hparams *hp) { return !strcmp(hp->arch, "deepseek"); }
static bool is_bailing1(const loom_model_hparams *hp) { return !strcmp(hp->arch, "bailingmoe"); }
static bool is_exaone_moe(const loom_model_hparams *hp) { return !strcmp(hp->arch, "exaone-moe"); }
static bool is_ds_ocr(const loom_model_hparams *hp) { return !strcmp(hp->arch, "deepseek2-ocr"); }

loom_status llm_glm4moe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s;
    if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
    if (is_dots1(hp) || is_exaone_moe(hp)) { /* llama.cpp has no default router function for these */
        int64_t v;
        if ((s = llm_get_int_key(g, hp->arch, "expert_gating_func", true, 0, &v, err))) return s;
        if (!is_exaone_moe(hp) && (s = llm_get_int_key(g, hp->arch, "expert_shared_count", true, 0, &v, err))) return s;
    }
    if (is_deepseek(hp) || is_bailing1(hp) || is_ds_ocr(hp)) {
        int64_t v;
        if ((s = llm_get_int_key(g, hp->arch, "expert_shared_count", true, 0, &v, err))) return s;
    }
    if (is_ds_ocr(hp)) {
        if (hp->n_head_kv != hp->n_head || hp->head_dim_v != hp->head_dim_k)
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                                  "model: deepseek2-ocr with %d KV heads for %d heads (value width %d, key %d): "
                                  "llama.cpp's graph is multi-head", hp->n_head_kv, hp->n_head, hp->head_dim_v,
                                  hp->head_dim_k);
        hp->n_rot = hp->head_dim_k; /* llama.cpp rotates the whole head, at scale 1, without YaRN */
        hp->rope_freq_scale = 1.0f;
        hx->yarn = false;
    }
    /* llama.cpp: sigmoid unless stated (deepseek v1, bailingmoe, deepseek2-ocr: softmax) */
    if ((s = llm_ds_moe_keys(g, hp, hx, is_deepseek(hp) || is_bailing1(hp) || is_ds_ocr(hp) ? 1 : 2, err))) return s;
    if (is_deepseek(hp)) hx->expert_weights_norm = false; /* llama.cpp's deepseek graph never normalises */
    if (is_bailing1(hp)) {
        hx->n_dense_lead = 0; /* every layer routed */
        hx->expert_gating = 0; /* softmax, whatever the file says */
        if (hp->n_rot != hp->head_dim_k || hp->head_dim_v != hp->head_dim_k)
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: bailingmoe with rope.dimension_count %d other than "
                                  "the head width %d", hp->n_rot, hp->head_dim_k);
    }
    if (is_exaone_moe(hp)) {
        if ((s = llm_arch_swa_keys(g, hp, hx, true, 0, 4, err))) return s;
        hx->rope_base_swa = hp->rope_base; /* the window layers rotate with the global base */
        hx->rope_scale_swa = hp->rope_freq_scale;
        hx->n_expert_shared = 1; /* one shared FFN expert_shared_feed_forward_length wide */
    }
    if (!strcmp(hp->arch, "bailingmoe2") || is_exaone_moe(hp)) { /* shared experts' width (default: the experts') */
        int64_t v;
        if ((s = llm_get_int_key(g, hp->arch, "expert_shared_feed_forward_length", false, 0, &v, err))) return s;
        if (v < 0 || v > ((int64_t)1 << 24))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_shared_feed_forward_length = %lld is out of "
                                  "range", hp->arch, (long long)v);
        hx->n_ff_shexp = (int)v;
    }
    char key[96];
    snprintf(key, sizeof key, "%s.rope.dimension_sections", hp->arch);
    return loom_gguf_find_key(g, key) < 0 ? LOOM_OK : llm_arch_mrope_keys(g, hp, hx, false, err);
}

loom_status llm_glm4moe_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    loom_status st = LOOM_OK;
    const int64_t E = hp->n_embd;
    if ((st = llm_bind_embd_output(m, err))) return st;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        llm_bind_attn_any(be, hp, L, il, false, err, &st);
        llm_bind_qk_norm(be, hp, L, il, is_dots1(hp) || is_exaone_moe(hp), err, &st);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st,
                                      is_dots1(hp) || is_deepseek(hp) || is_exaone_moe(hp) || is_bailing1(hp) ||
                                              is_ds_ocr(hp)
                                          ? "blk.%d.ffn_norm.weight"
                                          : "blk.%d.post_attention_norm.weight",
                                      il);
        if (is_exaone_moe(hp)) llm_bind_rope_freqs(be, &m->hp, L, il, err, &st);
        llm_ds_bind_ffn(be, hp, &m->hx, L, il, err, &st);
    }
    return st;
}

loom_tensor *llm_glm4moe_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    const float kq_scale = 1.0f / sqrtf((float)hp->head_dim_k);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, x, T, &q, &k, &v);
        if (ly->q_norm) q = loom_rms_norm(ctx, q, ly->q_norm, eps);
        if (ly->k_norm) k = loom_rms_norm(ctx, k, ly->k_norm, eps);
        if (llm_layer_has_rope(m, il)) { /* exaone-moe: the window layers only */
            loom_tensor *ff = llm_layer_rope_factors(m, ctx, il);
            q = llm_rope(m, ctx, q, in.pos, il, ff);
            k = llm_rope(m, ctx, k, in.pos, il, ff);
        }
        llm_named(q, "q", il);
        llm_named(k, "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, kq_scale, 0.0f, NULL);
        x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        h = llm_named(loom_add(ctx, llm_named(llm_ds_ffn(ctx, &m->hx, ly, n, il), "ffn_out", il), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
