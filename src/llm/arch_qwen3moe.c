/*
 * arch_qwen3moe.c - Qwen3-MoE: the qwen3 attention (q/k RMS norms per head, NEOX rope)
 * and a mixture-of-experts FFN: softmax over all experts, top-k, weights renormalised
 * to sum 1 (llama.cpp passes norm_w = true for this architecture; no key states it).
 *
 *   h = token_embd[tokens]
 *   per layer: x = rms_norm(h) * attn_norm; q, k, v; q, k = rms_norm per head * q/k_norm;
 *     rope; h += Wo attn(q, k, v)
 *     x = rms_norm(h) * ffn_norm; h += moe(x)
 *   logits = Woutput (rms_norm(h) * output_norm)
 * Mellum (mellum): the same, with sliding-window layers when attention.sliding_window is
 * there (llm_mellum_hparams).
 *
 * GroveMoE (grovemoe, inclusionAI), as llama.cpp's grovemoe graph: the same attention;
 * the experts come in groups of experts_per_group, each group sharing an adjugate
 * ("chunk") expert of expert_chunk_feed_forward_length (default: the head width) in
 * ffn_{gate,up,down}_chexps:
 *     n = rms_norm(h) * ffn_norm; l = W_router n [n_expert]; p = softmax(l)
 *     sel = top-k of sigmoid(l); w = p[sel] / sum (clamped as llama.cpp's build_moe_ffn);
 *     e = sum_sel w silu-GLU experts(n)
 *     the chunk branch, as llama.cpp computes it: the same top-k ids divided by
 *       experts_per_group in float ((int)(id * (1 / g))), weights p[that quotient] over
 *       their sum, the chunk experts reading e (the experts' output, not n)
 *     h += e + expert_group_scale * chunk(e)
 * llama.cpp's graph sums the chunk branch over expert_used_count views even where it
 * picks fewer chunk experts, so it cannot run files with more experts used than chunk
 * experts: Loom refuses them too. The real model's expert_bias is not in GGUF files (the
 * converter drops it, as does llama.cpp's graph).
 */
#include <math.h>
#include <stdio.h>

#include "arch.h"
#include "quant/alloc.h"

loom_status llm_qwen3moe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    return llm_arch_moe_keys(g, hp, hx, err);
}

/* Mellum (JetBrains Mellum 2): Qwen3-MoE with optional sliding-window layers (the
 * converter's one boolean per layer); llama.cpp rotates them with the global base, scale
 * 1 and no YaRN, whatever rope.freq_base_swa says */
loom_status llm_mellum_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    int64_t w;
    loom_status s = llm_arch_moe_keys(g, hp, hx, err);
    if (s || (s = llm_get_int_key(g, hp->arch, "attention.sliding_window", false, 0, &w, err))) return s;
    if (w < 0 || w > ((int64_t)1 << 30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window = %lld is out of range",
                              hp->arch, (long long)w);
    if (w == 0) return LOOM_OK;
    hx->n_swa = (int)w;
    hx->rope_base_swa = hp->rope_base;
    hx->rope_scale_swa = 1.0f;
    hx->swa_rope_plain = true;
    return llm_arch_swa_layers(g, hp, hx, err);
}

loom_status llm_grovemoe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_arch_moe_keys(g, hp, hx, err);
    int64_t per, fc;
    double scale;
    bool have_scale = false;
    if (s || (s = llm_get_int_key(g, hp->arch, "experts_per_group", true, 0, &per, err)) ||
        (s = llm_get_int_key(g, hp->arch, "expert_chunk_feed_forward_length", false, hp->head_dim_k, &fc, err)) ||
        (s = llm_get_float_key(g, hp->arch, "expert_group_scale", 0.0, &scale, &have_scale, err)))
        return s;
    if (!have_scale)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: required key '%s.expert_group_scale' is missing", hp->arch);
    if (!isfinite(scale))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_group_scale is not finite", hp->arch);
    if (per < 1 || per > hx->n_expert || hx->n_expert % per != 0)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.experts_per_group = %lld does not divide the %d experts",
                              hp->arch, (long long)per, hx->n_expert);
    if (fc < 1 || fc > ((int64_t)1 << 24))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_chunk_feed_forward_length = %lld is out of range",
                              hp->arch, (long long)fc);
    const int64_t n_chunk = hx->n_expert / per;
    if (hx->n_expert_used > n_chunk)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                              "model: %s uses %d experts per token but has %lld chunk experts (llama.cpp's graph "
                              "cannot run that either)",
                              hp->arch, hx->n_expert_used, (long long)n_chunk);
    if (hp->n_rot != hp->head_dim_k || hp->head_dim_k != hp->head_dim_v)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s needs rope over the whole head (%d of %d, value %d)",
                              hp->arch, hp->n_rot, hp->head_dim_k, hp->head_dim_v);
    hx->n_group_experts = (int)per;
    hx->n_ff_chexp = (int)fc;
    hx->expert_group_scale = (float)scale;
    return LOOM_OK;
}

/* grovemoe: each expert's chunk expert, as llama.cpp's quotient: the id times 1/g in
 * float, truncated (its F32 -> I32 cast) */
static loom_status grove_map(loom_model *m, loom_error *err) {
    const int64_t NE = m->hx.n_expert, NC = NE / m->hx.n_group_experts;
    m->chunk_map = loom_calloc((size_t)NE, sizeof *m->chunk_map);
    if (!m->chunk_map) return loom_error_set(err, LOOM_ERR_NOMEM, "model: out of host memory");
    const float inv = 1.0f / (float)m->hx.n_group_experts;
    for (int64_t e = 0; e < NE; e++) {
        const int32_t c = (int32_t)((float)e * inv);
        m->chunk_map[e] = c < NC ? c : (int32_t)NC - 1;
    }
    return LOOM_OK;
}

loom_status llm_qwen3moe_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    loom_status st = LOOM_OK;
    const int64_t E = hp->n_embd, NE = hx->n_expert, FE = hx->n_ff_exp, FC = hx->n_ff_chexp;
    const int64_t NC = hx->n_group_experts ? NE / hx->n_group_experts : 0;
    if ((st = llm_bind_embd_output(m, err))) return st;
    if (NC && (st = grove_map(m, err))) return st;
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        llm_bind_attn_any(be, hp, L, il, false, err, &st); /* q|k|v fused or not, optional biases */
        llm_bind_qk_norm(be, hp, L, il, true, err, &st);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        llm_bind_experts(be, L, il, E, FE, NE, err, &st);
        if (NC) {
            L->ffn_gate_chexps = llm_bind_tensor(be, true, E, FC, NC, err, &st, "blk.%d.ffn_gate_chexps.weight", il);
            L->ffn_up_chexps = llm_bind_tensor(be, true, E, FC, NC, err, &st, "blk.%d.ffn_up_chexps.weight", il);
            L->ffn_down_chexps = llm_bind_tensor(be, true, FC, E, NC, err, &st, "blk.%d.ffn_down_chexps.weight", il);
        }
    }
    return st;
}

/* grovemoe's FFN (header): the experts on n, then the chunk experts on their output */
static loom_tensor *grove_ffn(loom_model *m, loom_ctx *ctx, const llm_layer *ly, loom_tensor *n, int il) {
    const llm_hparams_x *hx = &m->hx;
    llm_moe_opts o = {.gating = LLM_MOE_SOFTMAX, .norm_w = true, .choose_sigmoid = true}; /* no weights scale */
    loom_tensor *e = llm_moe_ffn_opts(ctx, ly, n, hx->n_expert, hx->n_expert_used, &o, il);
    llm_layer c = *ly; /* the same router (on n), the chunk experts' matrices */
    c.ffn_gate_exps = ly->ffn_gate_chexps;
    c.ffn_up_exps = ly->ffn_up_chexps;
    c.ffn_down_exps = ly->ffn_down_chexps;
    o.router_in = n;
    o.sel_map = m->chunk_map;
    loom_tensor *ce = llm_moe_ffn_opts(ctx, &c, e, hx->n_expert, hx->n_expert_used, &o, il);
    return loom_add(ctx, e, loom_scale(ctx, ce, hx->expert_group_scale));
}

loom_tensor *llm_qwen3moe_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens, DK = hp->head_dim_k;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    const float kq_scale = 1.0f / sqrtf((float)DK);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, hp->rms_eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, x, T, &q, &k, &v);
        q = loom_rms_norm(ctx, q, ly->q_norm, hp->rms_eps);
        k = loom_rms_norm(ctx, k, ly->k_norm, hp->rms_eps);
        q = llm_named(llm_rope(m, ctx, q, in.pos, il, NULL), "q", il);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, kq_scale, 0.0f, NULL);
        x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        x = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, hp->rms_eps), "ffn_norm", il);
        x = m->hx.n_group_experts ? grove_ffn(m, ctx, ly, x, il)
                                  : llm_moe_ffn(ctx, ly, x, m->hx.n_expert, m->hx.n_expert_used, LLM_MOE_SOFTMAX, true, 0.0f, il);
        h = llm_named(loom_add(ctx, x, h), "l_out", il);
    }
    h = llm_named(loom_rms_norm(ctx, h, m->output_norm, hp->rms_eps), "result_norm", -1);
    return llm_named(loom_mul_mat(ctx, m->output, h), "result_output", -1);
}
