/*
 * t5_embed.c - the graph of t5encoder files (a T5 / flan-T5 encoder stack, as llama.cpp's
 * t5encoder architecture), written only against the public engine API (loom.h). The
 * hidden states after the final norm are the token vectors.
 *
 *   h = token_embd[tok]                                                        [E, T]
 *   per layer il (pre-RMSNorm, no biases, no rope):
 *     x = rms_norm(h) * attn_norm
 *     q, k, v = Wq x, Wk x, Wv x                                  [D, H, T] each
 *     bias[k, q, h] = rel_b[h, bucket(pos_k - pos_q)]             (rel_b: the layer's, else
 *                                                                   layer 0's)
 *     a = softmax(q.k + bias + mask) v       (no 1/sqrt(D): T5 folds it into Wq)
 *     h = h + Wo a
 *     x = rms_norm(h) * ffn_norm
 *     h = h + Wdown (gelu(Wgate x) * Wup x)    (flan-T5; T5 without ffn_gate: relu(Wup x))
 *   result: rms_norm(h) * output_norm
 *
 * bucket(r), n buckets, bidirectional (T5's rule, max distance 128): n/2 buckets per
 * direction, r > 0 in the upper half; |r| < n/4 exact, larger distances logarithmic up to
 * 128, clamped to the half's last bucket. The GELU goes through llama.cpp's F16 table
 * (loom_gelu_f16), as its t5encoder graph computes it.
 */
#include <math.h>
#include <stdlib.h>

#include "embed_internal.h"

int32_t emb_t5_bucket(int32_t rel, int n_buckets) {
    const int64_t max_distance = 128;
    const int64_t half = n_buckets / 2, exact = half / 2;
    int32_t bucket = rel > 0 ? (int32_t)half : 0;
    const int64_t d = rel < 0 ? -(int64_t)rel : rel;
    if (d < exact) return bucket + (int32_t)d;
    /* llama.cpp's arithmetic, operation by operation: a float logarithm times the float
     * bucket span, divided in double, floored in float */
    const float lf = logf((float)((double)d / (double)exact)) * (float)(half - exact);
    const double v = (double)exact + (double)lf / log((double)max_distance / (double)exact);
    int64_t l = (int64_t)floorf((float)v);
    if (l > half - 1) l = half - 1;
    return bucket + (int32_t)l;
}

loom_tensor *emb_build_t5(loom_embedder *e, loom_ctx *ctx, const emb_batch *b) {
    const emb_hparams *hp = &e->hp;
    const int64_t T = b->n_tokens, H = hp->n_head, D = hp->head_dim, NB = hp->n_rel_buckets;
    const float eps = hp->norm_eps;
    loom_tensor *tok, *pos, *mask;
    emb_inputs(e, ctx, b, &tok, &pos, &mask, NULL);
    (void)pos;
    loom_tensor *outs = emb_out_ids(ctx, b);

    /* the buckets of every (key i, query j) pair: [T * T], key index fastest */
    loom_ctx *in = loom_ctx_input(ctx);
    const int64_t ne_b[1] = {T * T};
    loom_tensor *bucket;
    if (b->reserve) {
        bucket = loom_zeros(in, LOOM_TYPE_I32, 1, ne_b);
    } else {
        for (int64_t j = 0; j < T; j++)
            for (int64_t i = 0; i < T; i++)
                e->bucket[j * T + i] = emb_t5_bucket(b->pos[i] - b->pos[j], (int)NB);
        bucket = loom_from_i32(in, e->bucket, (size_t)(T * T), 1, ne_b);
    }
    loom_tensor_set_name(bucket, "inp_pos_bucket");

    loom_tensor *h = emb_named(loom_get_rows(ctx, e->tok_embd, tok), "inp_embd", -1);
    loom_tensor *bias = NULL;
    const loom_tensor *bias_of = NULL;
    for (int il = 0; il < hp->n_layer; il++) {
        const emb_layer *ly = &e->layers[il];
        loom_tensor *rel = ly->rel_b ? ly->rel_b : e->layers[0].rel_b;
        if (rel != bias_of) { /* [H, T*T] -> [T (key), T (query), H] */
            const int64_t ne3[3] = {H, T, T};
            loom_tensor *pb = loom_reshape(ctx, loom_get_rows(ctx, rel, bucket), 3, ne3);
            bias = emb_named(loom_cont(ctx, loom_permute(ctx, pb, 2, 0, 1, 3)), "pos_bias", il);
            bias_of = rel;
        }
        loom_tensor *x = emb_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        const int64_t ne_q[3] = {D, H, T};
        loom_tensor *q = loom_reshape(ctx, loom_mul_mat(ctx, ly->wq, x), 3, ne_q);
        loom_tensor *k = loom_reshape(ctx, loom_mul_mat(ctx, ly->wk, x), 3, ne_q);
        loom_tensor *v = loom_reshape(ctx, loom_mul_mat(ctx, ly->wv, x), 3, ne_q);
        /* scores [T (key), T (query), H] = k . q per head, + the position bias */
        loom_tensor *qp = loom_cont(ctx, loom_permute(ctx, q, 0, 2, 1, 3)); /* [D, T, H] */
        loom_tensor *kp = loom_cont(ctx, loom_permute(ctx, k, 0, 2, 1, 3));
        loom_tensor *kq = emb_named(loom_add(ctx, loom_mul_mat(ctx, kp, qp), bias), "kq", il);
        loom_tensor *p = loom_softmax_ext(ctx, kq, mask, 1.0f);
        loom_tensor *vp = loom_cont(ctx, loom_permute(ctx, v, 1, 2, 0, 3)); /* [T, D, H] */
        loom_tensor *o = loom_mul_mat(ctx, vp, p);                          /* [D, T (query), H] */
        const int64_t ne_a[2] = {D * H, T};
        loom_tensor *a = loom_reshape(ctx, loom_cont(ctx, loom_permute(ctx, o, 0, 2, 1, 3)), 2, ne_a);
        x = emb_named(loom_mul_mat(ctx, ly->wo, a), "attn_out", il);
        if (outs && il == hp->n_layer - 1) { /* only the pooled rows go on */
            x = loom_get_rows(ctx, x, outs);
            h = loom_get_rows(ctx, h, outs);
        }
        h = emb_named(loom_add(ctx, x, h), "ffn_inp", il);
        x = emb_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *u = loom_mul_mat(ctx, ly->ffn_up, x);
        loom_tensor *act = ly->ffn_gate ? loom_mul(ctx, loom_gelu_f16(ctx, loom_mul_mat(ctx, ly->ffn_gate, x)), u)
                                        : loom_relu(ctx, u);
        h = emb_named(loom_add(ctx, loom_mul_mat(ctx, ly->ffn_down, act), h), "l_out", il);
    }
    h = emb_named(loom_rms_norm(ctx, h, e->output_norm, eps), "result_norm", -1);
    return emb_named(h, "result_embd", -1);
}
