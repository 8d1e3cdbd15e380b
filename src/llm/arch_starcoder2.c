/*
 * arch_starcoder2.c - StarCoder2 (general.architecture "starcoder2"): the pre-norm
 * block with LayerNorm (weight and bias), biases on every projection and a GELU MLP,
 * as llama.cpp's starcoder2 graph.
 *
 *   h = token_embd[tokens]
 *   per layer il:
 *     n = layer_norm(h) * attn_norm + attn_norm_b
 *     q, k, v = Wq n (+ bq), Wk n (+ bk), Wv n (+ bv)   (or a fused Wqkv)
 *     q, k = rope (neox);  h = h + Wo attention(q, k, v) + bo
 *     n = layer_norm(h) * ffn_norm + ffn_norm_b
 *     h = h + Wdown gelu(Wup n + bup) + bdown
 *   logits = Woutput (layer_norm(h) * output_norm + output_norm_b)   (output may be tied)
 * jais2 (Jais 2, as llama.cpp's jais2 graph): the same block with a squared-ReLU MLP,
 * h = h + Wdown relu(Wup n + bup)^2 + bdown. codeshell (CodeShell 7B, as llama.cpp's
 * codeshell graph): the starcoder2 block with a fused q|k|v (grouped KV heads).
 */
#include <math.h>
#include <string.h>

#include "arch.h"

/* starcoder2: an FFN norm, no output bias */
loom_status llm_starcoder2_bind(loom_model *m, loom_error *err) { return llm_ln_bind(m, false, true, err); }

loom_tensor *llm_starcoder2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const bool jais2 = !strcmp(hp->arch, "jais2");
    const int64_t T = b->n_tokens;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *n = llm_named(loom_layer_norm(ctx, h, ly->attn_norm, ly->attn_norm_b, eps), "attn_norm", il);
        loom_tensor *q, *k, *v;
        llm_qkv_any(ctx, hp, ly, n, T, &q, &k, &v);
        q = llm_named(llm_rope(m, ctx, q, in.pos, il, NULL), "q", il);
        k = llm_named(llm_rope(m, ctx, k, in.pos, il, NULL), "k", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f / sqrtf((float)hp->head_dim_k),
                                       0.0f, NULL);
        loom_tensor *x = llm_named(llm_linear(ctx, ly->wo, ly->bo, a), "attn_out", il);
        if (il == hp->n_layer - 1) {
            x = loom_get_rows(ctx, x, in.outs);
            r = loom_get_rows(ctx, r, in.outs);
        }
        h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
        n = llm_named(loom_layer_norm(ctx, h, ly->ffn_norm, ly->ffn_norm_b, eps), "ffn_norm", il);
        loom_tensor *f;
        if (jais2) { /* relu(Wup n + bup)^2, then Wdown + bdown */
            f = loom_sqr(ctx, loom_relu(ctx, llm_linear(ctx, ly->ffn_up, ly->ffn_up_b, n)));
            f = llm_linear(ctx, ly->ffn_down, ly->ffn_down_b, f);
        } else {
            f = llm_ln_gelu_mlp(ctx, ly, n);
        }
        h = llm_named(loom_add(ctx, llm_named(f, "ffn_out", il), h), "l_out", il);
    }
    return llm_ln_output(m, ctx, h);
}
