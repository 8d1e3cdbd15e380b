/*
 * arch_deci.c - DeciLM / NVIDIA Llama-Nemotron (general.architecture "deci":
 * Llama-3.1-Nemotron-51B, Llama-3.3-Nemotron-Super-49B), as llama.cpp's deci graph: the
 * llama block whose layers the neural architecture search reshaped, told apart by the
 * per-layer attention.head_count, head_count_kv and feed_forward_length arrays:
 *   heads and KV heads:   attention (rope with the Llama-3 factors when present)
 *   heads, no KV heads:   "linear attention", h + Wo rms_norm(h) * attn_norm
 *   no heads:             no attention (the layer starts with its FFN on h itself)
 *   feed_forward_length:  the SwiGLU MLP's width for this layer (optional biases)
 * Attention layers may have their own KV head count (the search's n_heads_in_group: the
 * cache keeps each layer's shape). Not supported (UNSUPPORTED, naming the layer):
 * attention layers with another head count than the model's largest, and layers with
 * attention but no FFN (Nemotron Ultra: llama.cpp drops such a layer's attention output,
 * which is not the model's computation).
 */
#include <math.h>
#include <stdio.h>

#include "arch.h"

loom_status llm_deci_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    const loom_gguf *g = loom_model_gguf(m);
    const int64_t E = hp->n_embd;
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        int64_t h, kv, ff;
        if ((st = llm_get_layer_int(g, hp->arch, "attention.head_count", il, hp->n_layer, hp->n_head, &h, err))) break;
        if ((st = llm_get_layer_int(g, hp->arch, "attention.head_count_kv", il, hp->n_layer, h, &kv, err))) break;
        if ((st = llm_get_layer_int(g, hp->arch, "feed_forward_length", il, hp->n_layer, hp->n_ff, &ff, err))) break;
        if ((h != 0 && h != hp->n_head) || kv < 0 || (kv > 0 && h % kv) || (h == 0 && kv != 0) || ff < 0)
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s layer %d: %lld heads, %lld KV heads (attention "
                                  "layers have %d heads and a divisor of them as KV heads; 0 for none)", hp->arch, il,
                                  (long long)h, (long long)kv, hp->n_head);
        if (h > 0 && ff == 0)
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s layer %d: attention without a feed-forward "
                                  "network is not supported", hp->arch, il);
        if (h > 0) L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        if (h > 0 && kv > 0) {
            const int64_t D = hp->head_dim_k;
            L->wq = llm_bind_tensor(be, true, E, h * D, 1, err, &st, "blk.%d.attn_q.weight", il);
            L->wk = llm_bind_tensor(be, true, E, kv * D, 1, err, &st, "blk.%d.attn_k.weight", il);
            L->wv = llm_bind_tensor(be, true, E, kv * hp->head_dim_v, 1, err, &st, "blk.%d.attn_v.weight", il);
            m->kv_types[il].hkv = (int32_t)kv; /* this layer's KV heads (the cache keeps its shape) */
            L->wo = llm_bind_tensor(be, true, (int64_t)hp->n_head * hp->head_dim_v, E, 1, err, &st,
                                    "blk.%d.attn_output.weight", il);
        } else if (h > 0) {
            L->wo = llm_bind_tensor(be, true, E, E, 1, err, &st, "blk.%d.attn_output.weight", il);
        }
        L->bo = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.attn_output.bias", il);
        if (ff > 0) {
            L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
            L->ffn_gate = llm_bind_tensor(be, true, E, ff, 1, err, &st, "blk.%d.ffn_gate.weight", il);
            L->ffn_up = llm_bind_tensor(be, true, E, ff, 1, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_down = llm_bind_tensor(be, true, ff, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
            L->ffn_gate_b = llm_bind_tensor(be, false, ff, 1, 1, err, &st, "blk.%d.ffn_gate.bias", il);
            L->ffn_up_b = llm_bind_tensor(be, false, ff, 1, 1, err, &st, "blk.%d.ffn_up.bias", il);
            L->ffn_down_b = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.ffn_down.bias", il);
        }
        L->n_ff = (int)ff;
        llm_bind_rope_freqs(be, hp, L, il, err, &st);
        if (!(h > 0 && kv > 0)) m->kv_types[il].nokv = 1; /* keeps nothing per token */
    }
    return st;
}

loom_tensor *llm_deci_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h, *x = h;
        if (ly->attn_norm) x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        if (ly->wq) {
            loom_tensor *q, *k, *v;
            llm_llama_qkv(ctx, hp, ly, x, T, il, &q, &k, &v);
            q = llm_named(llm_rope(m, ctx, q, in.pos, il, ly->rope_freqs), "q", il);
            k = llm_named(llm_rope(m, ctx, k, in.pos, il, ly->rope_freqs), "k", il);
            loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)hp->head_dim_k),
                                           0.0f, NULL);
            x = llm_linear(ctx, ly->wo, ly->bo, a);
        } else if (ly->wo) { /* linear attention (llama.cpp: without the bias) */
            x = loom_mul_mat(ctx, ly->wo, x);
        }
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        if (ly->n_ff == 0) { /* a layer with neither attention nor FFN */
            h = r;
            continue;
        }
        h = ly->attn_norm ? llm_named(loom_add(ctx, x, r), "ffn_inp", il) : x;
        x = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *gt = llm_linear(ctx, ly->ffn_gate, ly->ffn_gate_b, x), *u = llm_linear(ctx, ly->ffn_up, ly->ffn_up_b, x);
        h = llm_named(loom_add(ctx, llm_linear(ctx, ly->ffn_down, ly->ffn_down_b, loom_swiglu(ctx, gt, u)), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}
