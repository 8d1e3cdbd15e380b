/*
 * llama.c - the llama-family forward graph (llama, mistral, qwen2, qwen3), written
 * against the public engine API (loom.h) and the shared blocks of llm_graph.h. The same
 * graph runs the files that differ from llama only in keys or names (arch.c): Mixtral-
 * style experts, smollm3's layers without rope, the text positions of qwen2vl / qwen3vl's
 * multi-section rope (as frequency factors), internlm2, ernie4_5, seed_oss, arcee,
 * hunyuan-dense / hunyuan-moe (q/k norms after rope; experts beside a shared expert),
 * xverse, baichuan (7B: rope), qwen (Qwen 1: fused q|k|v with bias, an MLP half of
 * feed_forward_length), orion (LayerNorms with biases), maincoder (hunyuan's post-rope
 * q/k norms, normal rope), pangu-embedded (attention output bias), nanbeige, arctic (a
 * dense MLP beside experts that read the layer input) and plamo (PLaMo 1: a parallel block, attention and MLP both on the
 * attention norm's output: h = h + Wo a + mlp(x)).
 * Nanbeige's looped files run the blocks num_loops times (hx.loop_layers), output_norm
 * between the runs.
 *
 *   h = token_embd[tokens]                                     [E, T]
 *   per layer il:
 *     x = rms_norm(h) * attn_norm
 *     q = Wq x (+bq) -> [Dk, H, T]   k = Wk x (+bk) -> [Dk, Hkv, T]   v = Wv x (+bv) -> [Dv, Hkv, T]
 *     (qwen3: q, k = rms_norm per head * q_norm / k_norm)
 *     q, k = rope(q, k, pos)                                   NORMAL (llama) / NEOX (qwen); not on no-rope layers
 *     (hunyuan: the per-head q / k norms here, after rope)
 *     cache[il] <- k, v;  K, V = the cells visible to the batch (kvcache.c)
 *     a = sdpa(q, K, V, mask, 1/sqrt(Dk)) -> [Dv*H, T]
 *     x = Wo a (+bo);  (last layer: keep only the output rows of x and h)
 *     h = h + x
 *     x = rms_norm(h) * ffn_norm;  h = h + Wdown (silu(Wgate x) * (Wup x))   (or experts)
 *   logits = Woutput (rms_norm(h) * output_norm)               [V, n_outputs]
 */
#include <math.h>
#include <stdio.h>

#include "llm_graph.h"

#define named llm_named
#define linear llm_linear

loom_tensor *llm_build_llama(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    llm_kv_cache *kv = &m->kv;
    const int64_t T = b->n_tokens, E = hp->n_embd;
    const int64_t H = hp->n_head, DK = hp->head_dim_k, DV = hp->head_dim_v;
    loom_ctx *in = loom_ctx_input(ctx);

    /* inputs: token ids, positions, output rows, causal mask */
    int64_t ne_t[1] = {T}, ne_o[1] = {b->n_outputs};
    loom_tensor *tok, *pos, *outs;
    if (b->reserve) {
        tok = loom_zeros(in, LOOM_TYPE_I32, 1, ne_t);
        pos = loom_zeros(in, LOOM_TYPE_I32, 1, ne_t);
        outs = loom_zeros(in, LOOM_TYPE_I32, 1, ne_o);
    } else {
        tok = loom_from_i32(in, b->rows->token, (size_t)T, 1, ne_t);
        pos = loom_from_i32(in, b->rows->pos, (size_t)T, 1, ne_t);
        outs = loom_from_i32(in, b->out_ids, (size_t)b->n_outputs, 1, ne_o);
    }
    if (b->io) {
        b->io->tok = tok;
        b->io->pos = pos;
        b->io->outs = outs;
    }
    loom_tensor_set_name(tok, "inp_tokens");
    loom_tensor_set_name(pos, "inp_pos");
    loom_tensor_set_name(outs, "inp_out_ids");
    loom_tensor *masks[LLM_KV_MAX_GROUPS];
    llm_kv_build_masks(ctx, kv, (int)T, b->reserve, masks, b->io);

    const float kq_scale = 1.0f / sqrtf((float)DK);
    loom_rope_opts ro;

    loom_tensor *mrope = llm_mrope_factors(m, ctx); /* qwen2vl / qwen3vl text positions */
    loom_tensor *h = named(loom_get_rows(ctx, m->tok_embd, tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        loom_tensor *r = h;
        loom_tensor *x = named(llm_llama_norm(m, ctx, h, ly->attn_norm, ly->attn_norm_b), "attn_norm", il);
        loom_tensor *n = x;

        loom_tensor *q, *k, *v;
        if (ly->wqkv) { /* fused q|k|v (qwen 1; any llama-family file, as llama.cpp loads them) */
            llm_qkv_any(ctx, hp, ly, x, T, &q, &k, &v);
            if (ly->q_norm) q = named(loom_rms_norm(ctx, q, ly->q_norm, hp->rms_eps), "q_norm", il);
            if (ly->k_norm) k = named(loom_rms_norm(ctx, k, ly->k_norm, hp->rms_eps), "k_norm", il);
        } else {
            llm_llama_qkv(ctx, hp, ly, x, T, il, &q, &k, &v);
        }
        if (llm_layer_has_rope(m, il)) { /* YaRN (Qwen 2.5 / 3 long-context files) as llm_rope_layer says */
            float base, scale;
            llm_rope_layer(m, il, mrope ? mrope : ly->rope_freqs, &ro, &base, &scale);
            q = loom_rope(ctx, q, pos, hp->n_rot, base, scale, &ro);
            k = loom_rope(ctx, k, pos, hp->n_rot, base, scale, &ro);
        }
        if (ly->q_norm_post) { /* hunyuan */
            q = named(loom_rms_norm(ctx, q, ly->q_norm_post, hp->rms_eps), "q_norm", il);
            k = named(loom_rms_norm(ctx, k, ly->k_norm_post, hp->rms_eps), "k_norm", il);
        }
        named(q, "q", il);
        named(k, "k", il);
        named(v, "v", il);

        /* quantized caches: q, k, v turned by the cache's Hadamard matrices, the output
         * turned back (model_internal.h) */
        q = llm_kv_rot_k(ctx, kv, il, q);
        llm_kv_put(ctx, kv, il, llm_kv_rot_k(ctx, kv, il, k), llm_kv_rot_v(ctx, kv, il, v),
                   b->io ? b->io->store + 4 * il : NULL);
        loom_tensor *kc, *vc;
        llm_kv_get(ctx, kv, il, &kc, &vc);
        const loom_attn_opts ao = {.max_bias = m->hx.alibi_bias}; /* refact, Baichuan 13B: ALiBi */
        loom_tensor *a = named(loom_sdpa_opts(ctx, q, kc, vc, llm_kv_layer_mask(kv, masks, il), kq_scale, &ao), "kqv", il);
        a = llm_kv_rot_v(ctx, kv, il, a);
        int64_t ne_a[2] = {DV * H, T};
        a = loom_reshape(ctx, a, 2, ne_a);
        x = named(linear(ctx, ly->wo, ly->bo, a), "attn_out", il);

        if (m->hx.par_res) { /* plamo: h + attention(n) + mlp(n), n the one attention norm */
            if (il == hp->n_layer - 1) {
                x = loom_get_rows(ctx, x, outs);
                r = loom_get_rows(ctx, r, outs);
                n = loom_get_rows(ctx, n, outs);
            }
            loom_tensor *f = named(llm_swiglu_mlp(ctx, ly->ffn_gate, ly->ffn_up, ly->ffn_down, n), "ffn_out", il);
            h = named(loom_add(ctx, loom_add(ctx, f, x), r), "l_out", il);
        } else if (ly->ffn_norm_exps) { /* arctic: h + a + mlp(ffn_norm(h + a)) + moe(ffn_norm_exps(h)) */
            if (il == hp->n_layer - 1) {
                x = loom_get_rows(ctx, x, outs);
                r = loom_get_rows(ctx, r, outs);
            }
            loom_tensor *hi = named(loom_add(ctx, x, r), "ffn_inp", il);
            loom_tensor *fn = loom_rms_norm(ctx, hi, ly->ffn_norm, hp->rms_eps);
            loom_tensor *f = llm_swiglu_mlp(ctx, ly->ffn_gate, ly->ffn_up, ly->ffn_down, fn);
            loom_tensor *e = llm_moe_ffn(ctx, ly, loom_rms_norm(ctx, r, ly->ffn_norm_exps, hp->rms_eps), m->hx.n_expert,
                                         m->hx.n_expert_used, LLM_MOE_SOFTMAX, true, 0.0f, il);
            h = named(loom_add(ctx, loom_add(ctx, f, hi), e), "l_out", il);
        } else {
            h = llm_llama_ffn(ctx, m, ly, x, r, outs, il);
        }
        /* nanbeige's looped files: output_norm between the runs of the blocks */
        if (m->hx.loop_norm && (il + 1) % m->hx.loop_layers == 0 && il + 1 < hp->n_layer)
            h = named(loom_rms_norm(ctx, h, m->output_norm, hp->rms_eps), "loop_norm", il);
    }
    (void)E;
    return llm_llama_output(m, ctx, h);
}
