/*
 * arch_nemotronh.c - NVIDIA Nemotron-H (general.architecture "nemotron_h": Nemotron-H,
 * Nemotron Nano 2) and its MoE form ("nemotron_h_moe": Nemotron 3 Nano), as llama.cpp's
 * nemotron_h graph. Every layer is one of three kinds, told apart by the per-layer
 * attention.head_count_kv and feed_forward_length arrays:
 *   both 0:            a Mamba-2 mixer (arch_mamba2.c)
 *   KV heads, no FFN:   attention without rope (attention.scale or 1/sqrt(head_dim))
 *   an FFN width:       an MLP Wdown relu(Wup x)^2 (optional biases), or in
 *                       nemotron_h_moe experts of that kind (sigmoid router with the
 *                       selection bias, weight norm and scale) plus a shared expert
 *   h += layer(rms_norm(h) * attn_norm);  logits = Woutput (rms_norm(h) * output_norm)
 * Not supported: the latent experts of Nemotron 3 Super (moe_latent_size) and per-layer
 * expert widths (Puzzle models).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

static bool is_moe(const loom_model_hparams *hp) { return !strcmp(hp->arch, "nemotron_h_moe"); }

loom_status llm_nemotronh_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    int64_t v;
    if (is_moe(hp)) {
        if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
        if ((s = llm_ds_moe_keys(g, hp, hx, 2, err))) return s; /* llama.cpp: sigmoid routing */
        if ((s = llm_get_int_key(g, a, "expert_shared_feed_forward_length", true, 0, &v, err))) return s;
        if (v < 1 || v > ((int64_t)1 << 24))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_shared_feed_forward_length = %lld is out of "
                                  "range", a, (long long)v);
        hx->n_ff_shexp = (int)v;
        if ((s = llm_get_int_key(g, a, "moe_latent_size", false, 0, &v, err))) return s;
        if (v != 0)
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s.moe_latent_size = %lld: latent experts "
                                  "(Nemotron 3 Super) are not supported", a, (long long)v);
    }
    if ((s = llm_mamba2_hparams(g, hp, hx, err))) return s;
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", a);
    hx->rope_off = true; /* llama.cpp: LLAMA_ROPE_TYPE_NONE */
    memset(hx->recr_bits, 0, sizeof hx->recr_bits);
    for (int il = 0; il < hp->n_layer; il++) {
        int64_t hkv, ff;
        if ((s = llm_arch_layer_kv_heads(g, hp, il, &hkv, err))) return s;
        if ((s = llm_get_layer_int(g, a, "feed_forward_length", il, hp->n_layer, hp->n_ff, &ff, err))) return s;
        if (hkv == 0 && ff == 0) hx->recr_bits[il / 64] |= (uint64_t)1 << (il % 64);
    }
    return LOOM_OK;
}

static bool recurrent(const llm_hparams_x *hx, int il) { return hx->recr_bits[il / 64] >> (il % 64) & 1; }

loom_status llm_nemotronh_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        int64_t ff = 0;
        if (!st) st = llm_get_layer_int(loom_model_gguf(m), hp->arch, "feed_forward_length", il, hp->n_layer, hp->n_ff,
                                        &ff, err);
        if (st) break;
        if (recurrent(hx, il)) {
            llm_mamba2_bind(m, il, err, &st);
        } else if (ff == 0) {
            llm_bind_attn_qkv(be, hp, L, il, err, &st);
            L->wo = llm_bind_tensor(be, true, (int64_t)hp->n_head * hp->head_dim_v, E, 1, err, &st,
                                    "blk.%d.attn_output.weight", il);
            L->bo = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.attn_output.bias", il);
        } else if (is_moe(hp)) {
            const int64_t NE = hx->n_expert, FE = hx->n_ff_exp, FS = hx->n_ff_shexp;
            L->ffn_gate_inp = llm_bind_tensor(be, true, E, NE, 1, err, &st, "blk.%d.ffn_gate_inp.weight", il);
            L->ffn_exp_probs_b = llm_bind_tensor(be, true, NE, 1, 1, err, &st, "blk.%d.exp_probs_b.bias", il);
            L->ffn_up_exps = llm_bind_tensor(be, true, E, FE, NE, err, &st, "blk.%d.ffn_up_exps.weight", il);
            L->ffn_down_exps = llm_bind_tensor(be, true, FE, E, NE, err, &st, "blk.%d.ffn_down_exps.weight", il);
            L->ffn_up_shexp = llm_bind_tensor(be, true, E, FS, 1, err, &st, "blk.%d.ffn_up_shexp.weight", il);
            L->ffn_down_shexp = llm_bind_tensor(be, true, FS, E, 1, err, &st, "blk.%d.ffn_down_shexp.weight", il);
            L->n_ff = (int)ff;
        } else {
            L->ffn_up = llm_bind_tensor(be, true, E, ff, 1, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_down = llm_bind_tensor(be, true, ff, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
            L->ffn_up_b = llm_bind_tensor(be, false, ff, 1, 1, err, &st, "blk.%d.ffn_up.bias", il);
            L->ffn_down_b = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.ffn_down.bias", il);
            L->n_ff = (int)ff;
        }
        /* MLP-only layers keep nothing per token */
        if (!recurrent(hx, il) && ff > 0) m->kv_types[il].nokv = 1;
    }
    return st;
}

loom_tensor *llm_nemotronh_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    const float kq_scale = hx->kq_scale > 0.0f ? hx->kq_scale : 1.0f / sqrtf((float)hp->head_dim_k);
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        if (recurrent(hx, il)) {
            x = llm_mamba2_layer(m, ctx, &in, il, x);
        } else if (ly->wq || ly->wqkv) {
            loom_tensor *q, *k, *v;
            llm_llama_qkv(ctx, hp, ly, x, T, il, &q, &k, &v);
            loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, kq_scale, 0.0f, NULL);
            x = llm_linear(ctx, ly->wo, ly->bo, a);
        } else if (ly->ffn_gate_inp) {
            loom_tensor *e = llm_moe_ffn_ext(ctx, ly, x, hx->n_expert, hx->n_expert_used, LLM_MOE_SIGMOID,
                                             hx->expert_weights_norm, hx->expert_weights_scale, 0.0f, il);
            loom_tensor *sh = loom_mul_mat(ctx, ly->ffn_down_shexp,
                                           loom_sqr(ctx, loom_relu(ctx, loom_mul_mat(ctx, ly->ffn_up_shexp, x))));
            x = loom_add(ctx, e, sh);
        } else {
            loom_tensor *u = loom_sqr(ctx, loom_relu(ctx, llm_linear(ctx, ly->ffn_up, ly->ffn_up_b, x)));
            x = llm_linear(ctx, ly->ffn_down, ly->ffn_down_b, u);
        }
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
