/*
 * arch_mistral3.c - Mistral Small 3.x / Ministral 3 (text): the llama graph (llama.c)
 * with llm_graph.h's blocks, so that YaRN (rope.scaling.*) and the position-dependent
 * query temperature apply. It shares llama.c's q/k/v, FFN and output blocks (llm_graph.h).
 *
 *   h = token_embd[tokens]                                     [E, T]
 *   per layer il:
 *     x = rms_norm(h) * attn_norm
 *     q = Wq x (+bq) -> [Dk, H, T]   k = Wk x (+bk) -> [Dk, Hkv, T]   v = Wv x (+bv) -> [Dv, Hkv, T]
 *     (qwen3: q, k = rms_norm per head * q_norm / k_norm)
 *     q, k = rope(q, k, pos)                                   NORMAL (llama) / NEOX (qwen)
 *     (mistral3: YaRN; q *= 1 + temperature_scale * log(floor(pos / original_ctx) + 1))
 *     cache[il] <- k, v;  K, V = cache[il][0 .. L)
 *     a = sdpa(q, K, V, mask, 1/sqrt(Dk)) -> [Dv*H, T]
 *     x = Wo a (+bo);  (last layer: keep only the output rows of x and h)
 *     h = h + x
 *     x = rms_norm(h) * ffn_norm;  h = h + Wdown (silu(Wgate x) * (Wup x))
 *   logits = Woutput (rms_norm(h) * output_norm)               [V, n_outputs]
 */
#include <math.h>
#include <stdio.h>

#include "arch.h"

#define named llm_named
#define linear llm_linear

loom_tensor *llm_mistral3_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const int64_t T = b->n_tokens, E = hp->n_embd;
    const int64_t DK = hp->head_dim_k;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *pos = in.pos, *outs = in.outs, *mask = in.mask;

    const float kq_scale = 1.0f / sqrtf((float)DK);
    loom_tensor *h = named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = named(loom_rms_norm(ctx, h, ly->attn_norm, hp->rms_eps), "attn_norm", il);

        loom_tensor *q, *k, *v;
        llm_llama_qkv(ctx, hp, ly, x, T, il, &q, &k, &v);
        q = named(llm_rope(m, ctx, q, pos, il, ly->rope_freqs), "q", il);
        k = named(llm_rope(m, ctx, k, pos, il, ly->rope_freqs), "k", il);
        named(v, "v", il);
        /* mistral3 / llama4: position-dependent query temperature */
        if (in.attn_temp) q = named(loom_mul(ctx, q, in.attn_temp), "q_temp", il);

        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, mask, kq_scale, 0.0f, NULL);
        x = named(linear(ctx, ly->wo, ly->bo, a), "attn_out", il);

        h = llm_llama_ffn(ctx, m, ly, x, r, outs, il);
    }
    (void)E;
    return llm_llama_output(m, ctx, h);
}
