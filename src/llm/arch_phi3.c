/*
 * arch_phi3.c - Phi-3 / Phi-3.5 (dense).
 *
 *   per layer: x = rms_norm(h) * attn_norm
 *     q|k|v = Wqkv x (fused rows q, k, v; or separate attn_q/k/v)
 *     q, k = rope NEOX with LongRoPE factors: rope_factors_long when the context is
 *            longer than rope.scaling.original_context_length, else rope_factors_short
 *            (llama.cpp's rule), magnitude rope.scaling.attn_factor
 *     h = h + Wo attention(q / sqrt(head_dim), k, v, scale 1)
 *     x = rms_norm(h) * ffn_norm;  g|u = Wup x (fused, gate first);  h = h + Wdown (silu(g) * u)
 *   logits = Woutput (rms_norm(h) * output_norm)
 * The sliding_window key is ignored, as llama.cpp does (its Phi SWA is disabled).
 * Phi-3.5-MoE (phimoe): the same graph with biases on every norm, attn_output and the
 * output (the norms stay RMS norms plus the bias, as llama.cpp computes them), separate
 * q/k/v, and experts of feed_forward_length in place of the MLP (softmax router, top-k
 * renormalised, expert_weights_scale when present).
 */
#include <math.h>
#include <string.h>

#include "arch.h"

static bool is_moe(const loom_model_hparams *hp) { return !strcmp(hp->arch, "phimoe"); }

loom_status llm_phi3_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    hx->n_swa = 0;
    if (!is_moe(hp)) return LOOM_OK;
    loom_status s = llm_arch_moe_keys(g, hp, hx, err);
    if (s) return s;
    hx->n_ff_exp = hp->n_ff;
    double d;
    bool has;
    if ((s = llm_get_float_key(g, hp->arch, "expert_weights_scale", 0.0, &d, &has, err))) return s;
    if (has && !(d >= 0 && d < 1e6))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_weights_scale = %g is out of range", hp->arch, d);
    hx->expert_weights_scale = (float)d;
    return LOOM_OK;
}

loom_status llm_phi3_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    loom_status st = LOOM_OK;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    const int64_t HO = (int64_t)hp->n_head * hp->head_dim_v;
    const bool moe = is_moe(hp);
    if ((st = llm_bind_embd_output(m, err))) return st;
    if (moe) {
        m->output_norm_b = llm_bind_tensor(be, true, E, 1, 1, err, &st, "output_norm.bias", 0);
        m->output_b = llm_bind_tensor(be, true, hp->n_vocab, 1, 1, err, &st, "output.bias", 0);
    }
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        if (moe) {
            L->attn_norm_b = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.bias", il);
            L->ffn_norm_b = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.bias", il);
            L->bo = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_output.bias", il);
        }
        llm_bind_qkv_any(be, hp, L, il, err, &st); /* Phi-3.5-MoE has q/k/v biases */
        L->wo = llm_bind_tensor(be, true, HO, E, 1, err, &st, "blk.%d.attn_output.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        if (moe) {
            llm_bind_experts(be, L, il, E, F, m->hx.n_expert, err, &st);
        } else {
            L->ffn_up = llm_bind_tensor(be, true, E, 2 * F, 1, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        }
        llm_bind_longrope(be, hp, L, il, err, &st);
    }
    return st;
}

/* x + b when the norm has a bias (phimoe) */
static loom_tensor *biased(loom_ctx *ctx, loom_tensor *x, loom_tensor *b) { return b ? loom_add(ctx, x, b) : x; }

loom_tensor *llm_phi3_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens, DK = hp->head_dim_k;
    const int64_t F = hp->n_ff;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(biased(ctx, loom_rms_norm(ctx, h, ly->attn_norm, eps), ly->attn_norm_b), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, x, T, &q, &k, &v);
        loom_tensor *fac = llm_layer_rope_factors(m, ctx, il);
        q = llm_rope(m, ctx, q, in.pos, il, fac);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, fac), "k", il);
        q = llm_named(loom_scale(ctx, q, 1.0f / sqrtf((float)DK)), "q", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f, 0.0f, NULL);
        x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        x = llm_named(biased(ctx, loom_rms_norm(ctx, h, ly->ffn_norm, eps), ly->ffn_norm_b), "ffn_norm", il);
        if (ly->ffn_gate_inp) { /* phimoe */
            x = llm_moe_ffn_ext(ctx, ly, x, m->hx.n_expert, m->hx.n_expert_used, LLM_MOE_SOFTMAX, true,
                                m->hx.expert_weights_scale, 0.0f, il);
            h = llm_named(loom_add(ctx, llm_named(x, "ffn_out", il), h), "l_out", il);
            continue;
        }
        loom_tensor *gu = loom_mul_mat(ctx, ly->ffn_up, x); /* [2F, T] */
        const int64_t args[3] = {F, (int64_t)loom_tensor_nb(gu, 1), loom_tensor_ne(gu, 1)};
        loom_tensor *g = loom_cont(ctx, loom_view(ctx, gu, 0, 3, args));
        loom_tensor *u = loom_cont(ctx, loom_view(ctx, gu, (size_t)F * 4, 3, args));
        x = llm_named(loom_mul_mat(ctx, ly->ffn_down, loom_swiglu(ctx, g, u)), "ffn_out", il);
        h = llm_named(loom_add(ctx, x, h), "l_out", il);
    }
    h = llm_named(biased(ctx, loom_rms_norm(ctx, h, m->output_norm, eps), m->output_norm_b), "result_norm", -1);
    return llm_named(llm_linear(ctx, m->output, m->output_b, h), "result_output", -1);
}
