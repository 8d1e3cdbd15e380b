/*
 * arch_lfm2.c - Liquid AI LFM2 (general.architecture "lfm2": LFM2 350M-2.6B) and LFM2-MoE
 * ("lfm2moe": LFM2-8B-A1B, 24B-A2B), as llama.cpp's lfm2 graph. Layers whose
 * attention.head_count_kv entry is 0 are short gated convolutions, the others attention:
 *
 *   x = rms_norm(h) * attn_norm
 *   convolution layer: b | c | v = Win x (in_proj, 3 E rows);
 *       y = c * conv(b * v) (causal depthwise, shortconv.l_cache taps, the last
 *       l_cache - 1 inputs per sequence in the cache); Wout y
 *   attention layer: q, k = rms_norm per head * q/k_norm; neox rope; attention; Wo
 *       (attention.sliding_window > 0: every attention layer slides)
 *   h += that;  h += ffn(rms_norm(h) * ffn_norm)
 *   ffn: silu(Wgate n) * Wup n -> Wdown; lfm2moe after leading_dense_block_count layers:
 *       experts (router softmax or sigmoid per expert_gating_func, the selection bias,
 *       weights renormalised, expert_weights_scale)
 *   logits = Woutput (rms_norm(h) * token_embd_norm)   (the converter's name for the
 *       final norm)
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

static bool is_moe(const loom_model_hparams *hp) { return !strcmp(hp->arch, "lfm2moe"); }

loom_status llm_lfm2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    int64_t v;
    if ((s = llm_get_int_key(g, a, "shortconv.l_cache", true, 0, &v, err))) return s;
    if (v < 2 || v > 16)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.shortconv.l_cache = %lld is out of range [2, 16]", a,
                              (long long)v);
    hx->ssm_conv_k = (int)v;
    if (is_moe(hp)) {
        if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
        if ((s = llm_ds_moe_keys(g, hp, hx, 2, err))) return s; /* dense lead, gating, weight scale */
    }
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", a);
    memset(hx->recr_bits, 0, sizeof hx->recr_bits);
    memset(hx->swa_bits, 0, sizeof hx->swa_bits);
    for (int il = 0; il < hp->n_layer; il++) {
        if ((s = llm_arch_layer_kv_heads(g, hp, il, &v, err))) return s;
        if (v == 0)
            hx->recr_bits[il / 64] |= (uint64_t)1 << (il % 64);
        else
            hx->swa_bits[il / 64] |= (uint64_t)1 << (il % 64);
    }
    /* a window, when given, applies to every attention layer */
    if ((s = llm_get_int_key(g, a, "attention.sliding_window", false, 0, &v, err))) return s;
    if (v < 0 || v > ((int64_t)1 << 30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window = %lld is out of range", a,
                              (long long)v);
    hx->n_swa = (int)v;
    hx->swa_listed = v > 0;
    if (v == 0) memset(hx->swa_bits, 0, sizeof hx->swa_bits);
    return LOOM_OK;
}

static bool recurrent(const llm_hparams_x *hx, int il) { return hx->recr_bits[il / 64] >> (il % 64) & 1; }

loom_status llm_lfm2_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, F = hp->n_ff, K = hx->ssm_conv_k;
    /* the final norm: the converter names it token_embd_norm */
    loom_status st = llm_bind_embd_output_norm(
        m, loom_backend_get_tensor(be, "output_norm.weight") ? "output_norm.weight" : "token_embd_norm.weight", err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        if (recurrent(hx, il)) {
            L->ssm_in = llm_bind_tensor(be, true, E, 3 * E, 1, err, &st, "blk.%d.shortconv.in_proj.weight", il);
            L->ssm_conv = llm_bind_tensor(be, true, K, E, 1, err, &st, "blk.%d.shortconv.conv.weight", il);
            L->ssm_out = llm_bind_tensor(be, true, E, E, 1, err, &st, "blk.%d.shortconv.out_proj.weight", il);
            m->kv_types[il].rs_conv = (int32_t)((K - 1) * E);
        } else {
            llm_bind_attn_qkv(be, hp, L, il, err, &st);
            L->wo = llm_bind_tensor(be, true, (int64_t)hp->n_head * hp->head_dim_v, E, 1, err, &st,
                                    "blk.%d.attn_output.weight", il);
            llm_bind_qk_norm(be, hp, L, il, true, err, &st);
        }
        if (is_moe(hp) && il >= hx->n_dense_lead) {
            llm_bind_experts(be, L, il, E, hx->n_ff_exp, hx->n_expert, err, &st);
            L->ffn_exp_probs_b = llm_bind_tensor(be, true, hx->n_expert, 1, 1, err, &st, "blk.%d.exp_probs_b.bias", il);
        } else {
            L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
            L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        }
    }
    return st;
}

/* the short gated convolution of layer il on x [E, T] */
static loom_tensor *conv_layer(loom_model *m, loom_ctx *ctx, const llm_inputs *in, int il, loom_tensor *x) {
    const llm_layer *ly = &m->layers[il];
    llm_kv_cache *kv = &m->kv;
    const int64_t T = loom_tensor_ne(x, 1), E = m->hp.n_embd, K = m->hx.ssm_conv_k, S = kv->n_seq;
    const bool real = kv->rs_conv && kv->rs_conv[il];
    const int64_t ne_rc[2] = {(K - 1) * E, S};
    loom_tensor *rc = real ? kv->rs_conv[il] : loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne_rc);
    loom_tensor *p = loom_mul_mat(ctx, ly->ssm_in, x); /* [3E, T]: b | c | v */
    const int64_t av[3] = {E, (int64_t)loom_tensor_nb(p, 1), T};
    const size_t es = sizeof(float);
    loom_tensor *bv = loom_mul(ctx, loom_view(ctx, p, 0, 3, av), loom_view(ctx, p, 2 * (size_t)E * es, 3, av));
    loom_tensor *cv = llm_named(loom_ssm_conv(ctx, bv, ly->ssm_conv, rc, in->seq), "shortconv", il);
    const int64_t ncs = (K - 1) * E * S;
    if (real)
        loom_ctx_forward(ctx, loom_cpy(ctx, loom_view(ctx, cv, (size_t)E * (size_t)T * es, 1, &ncs),
                                       loom_view(ctx, rc, 0, 1, &ncs)));
    const int64_t ay[3] = {E, (int64_t)loom_tensor_nb(cv, 1), T};
    loom_tensor *y = loom_mul(ctx, loom_view(ctx, p, (size_t)E * es, 3, av), loom_view(ctx, cv, 0, 3, ay));
    return loom_mul_mat(ctx, ly->ssm_out, y);
}

loom_tensor *llm_lfm2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        if (recurrent(hx, il)) {
            x = conv_layer(m, ctx, &in, il, x);
        } else {
            loom_tensor *q, *k, *v;
            llm_llama_qkv(ctx, hp, ly, x, T, il, &q, &k, &v);
            q = llm_named(llm_rope(m, ctx, q, in.pos, il, NULL), "q", il);
            k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
            loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, llm_layer_is_swa(hx, il) ? in.mask_swa : in.mask,
                                           1.0f / sqrtf((float)hp->head_dim_k), 0.0f, NULL);
            x = loom_mul_mat(ctx, ly->wo, a);
        }
        x = llm_named(x, "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        loom_tensor *n = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il), *f;
        if (ly->ffn_gate_inp)
            f = llm_moe_ffn_ext(ctx, ly, n, hx->n_expert, hx->n_expert_used,
                                hx->expert_gating ? LLM_MOE_SIGMOID : LLM_MOE_SOFTMAX, true, hx->expert_weights_scale,
                                0.0f, il);
        else
            f = loom_mul_mat(ctx, ly->ffn_down,
                             loom_swiglu(ctx, loom_mul_mat(ctx, ly->ffn_gate, n), loom_mul_mat(ctx, ly->ffn_up, n)));
        h = llm_named(loom_add(ctx, llm_named(f, "ffn_out", il), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
