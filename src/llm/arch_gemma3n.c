/*
 * arch_gemma3n.c - Gemma 3n (E2B, E4B; general.architecture "gemma3n"), as llama.cpp's
 * gemma3n graph, which fixes several sizes in code rather than keys (and so does this
 * file): 4 AltUp streams with stream 0 active, LAuReL, per-layer inputs, activation
 * sparsity on the first 10 layers (a gaussian top-k: relu(x - mean - 1.6448533535 std)
 * before the GELU), the sliding pattern's period (5 unless the key is a number: the
 * converter's per-layer list is not read), a cache shared from layer 20 on (layers
 * >= 20 read layer 18's (sliding) or 19's (full) keys), unscaled scores, V rms-normed,
 * final soft-cap 30.
 *
 *   X = [e, P1 e, P2 e, P3 e] (each projection rescaled to e's magnitude), e the scaled
 *       embedding; per-layer inputs pl (arch_gemma4.c)
 *   per layer: pred = X + X Cp(router(X0)) (AltUp predict); a = pred0
 *     x = rms_norm(a) * attn_norm; lau = x + rms_norm(Wr Wl x) * laurel_post_norm
 *     y = rms_norm(attn(x)) * attn_post_norm + a; y = (y + lau) / sqrt 2
 *     z = y + rms_norm(Wdown (gelu(sparse(Wgate n)) * Wup n)) * ffn_post_norm, n = rms_norm(y) * ffn_norm
 *     X = pred + (z - pred0) (Cc(router(z)) + 1) (AltUp correct)
 *     X1..3 += rms_norm(Wproj (gelu(Wgate' (X0 * correct_scale)) * pl[il])) * post_norm
 *   h = (X0 + sum_i U_i X_i rescaled to X0's magnitude) / 4; logits = cap(Wout rms_norm(h))
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

#define G3N_ALTUP 4
#define G3N_KV_FROM 20
#define G3N_SPARSE_LAYERS 10
#define G3N_SPARSITY_STD 1.6448533535003662f /* llama.cpp: normal icdf(0.95) */

loom_status llm_gemma3n_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s;
    int64_t v;
    double d;
    if ((s = llm_get_int_key(g, a, "attention.sliding_window", true, 0, &v, err))) return s;
    if (v < 1 || v > ((int64_t)1 << 30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window = %lld is out of range", a,
                              (long long)v);
    hx->n_swa = (int)v;
    int64_t p;
    if ((s = llm_arch_swa_period(g, hp, 5, &p, err))) return s;
    hx->swa_period = (int)p;
    if ((s = llm_get_float_key(g, a, "rope.freq_base_swa", 10000.0, &d, NULL, err))) return s;
    if (!(d > 1)) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.freq_base_swa = %g is out of range", a, d);
    hx->rope_base_swa = (float)d;
    hx->rope_scale_swa = 1.0f;
    if ((s = llm_get_int_key(g, a, "embedding_length_per_layer_input", true, 0, &v, err))) return s;
    if (v < 1 || v > 65536)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.embedding_length_per_layer_input = %lld is out of range",
                              a, (long long)v);
    hx->n_embd_pl = (int)v;
    hx->n_kv_from_start = hp->n_layer > G3N_KV_FROM ? G3N_KV_FROM : hp->n_layer;
    hx->final_softcap = 30.0f; /* llama.cpp: always (its default; the key is not read) */
    hx->embd_scale = sqrtf((float)hp->n_embd);
    return LOOM_OK;
}

loom_status llm_gemma3n_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, NL = hp->n_layer, NPL = hx->n_embd_pl, A = G3N_ALTUP;
    loom_status st = LOOM_OK;
    if ((st = llm_bind_embd_output(m, err))) return st;
    m->altup_proj = llm_bind_tensor(be, true, E, E, A - 1, err, &st, "altup_proj.weight", 0);
    m->altup_unembd_proj = llm_bind_tensor(be, true, E, E, A - 1, err, &st, "altup_unembd_proj.weight", 0);
    m->pl_tok_embd = llm_bind_tensor(be, true, NPL * NL, hp->n_vocab, 1, err, &st, "per_layer_token_embd.weight", 0);
    m->pl_model_proj = llm_bind_tensor(be, true, E, NPL * NL, 1, err, &st, "per_layer_model_proj.weight", 0);
    m->pl_proj_norm = llm_bind_tensor(be, true, NPL, 1, 1, err, &st, "per_layer_proj_norm.weight", 0);
    loom_tensor *ll = st ? NULL : loom_backend_get_tensor(be, "blk.0.laurel_l.weight");
    const int64_t LR = ll ? loom_tensor_ne(ll, 1) : 1;
    if (!st && (!ll || LR < 1 || LR > 65536))
        return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: tensor 'blk.0.laurel_l.weight' is missing or empty");
    for (int il = 0; il < NL && !st; il++) {
        llm_layer *L = &m->layers[il];
        const bool own_kv = il < hx->n_kv_from_start;
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        llm_bind_attn_any(be, hp, L, il, false, err, &st);
        L->q_norm = llm_bind_tensor(be, true, hp->head_dim_k, 1, 1, err, &st, "blk.%d.attn_q_norm.weight", il);
        L->k_norm = llm_bind_tensor(be, own_kv, hp->head_dim_k, 1, 1, err, &st, "blk.%d.attn_k_norm.weight", il);
        L->attn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_attention_norm.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_gate = llm_bind_tensor(be, true, E, hp->n_ff, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, hp->n_ff, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, hp->n_ff, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
        L->ffn_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_ffw_norm.weight", il);
        L->pl_inp_gate = llm_bind_tensor(be, true, E, NPL, 1, err, &st, "blk.%d.inp_gate.weight", il);
        L->pl_proj = llm_bind_tensor(be, true, NPL, E, 1, err, &st, "blk.%d.proj.weight", il);
        L->pl_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.post_norm.weight", il);
        L->altup_correct_coef = llm_bind_tensor(be, true, A, A, 1, err, &st, "blk.%d.altup_correct_coef.weight", il);
        L->altup_correct_scale = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.altup_correct_scale.weight", il);
        L->altup_predict_coef = llm_bind_tensor(be, true, A, A * A, 1, err, &st, "blk.%d.altup_predict_coef.weight", il);
        L->altup_router = llm_bind_tensor(be, true, E, A, 1, err, &st, "blk.%d.altup_router.weight", il);
        L->altup_router_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.altup_router_norm.weight", il);
        L->laurel_l = llm_bind_tensor(be, true, E, LR, 1, err, &st, "blk.%d.laurel_l.weight", il);
        L->laurel_r = llm_bind_tensor(be, true, LR, E, 1, err, &st, "blk.%d.laurel_r.weight", il);
        L->laurel_post_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.laurel_post_norm.weight", il);
        /* llama.cpp's reuse: sliding layers read layer 18's cache, full ones layer 19's */
        if (!own_kv) m->kv_types[il].share = hx->n_kv_from_start - (llm_layer_is_swa(hx, il) ? 2 : 1) + 1;
    }
    return st;
}

/* the sqrt of each row's sum of squares: [1, ...] */
static loom_tensor *magnitude(loom_ctx *ctx, loom_tensor *x) { return loom_sqrt(ctx, loom_sum_rows(ctx, loom_sqr(ctx, x))); }

/* slice i of x [E, T, A] as [E, T] */
static loom_tensor *slice(loom_ctx *ctx, loom_tensor *x, int64_t i) {
    const int64_t args[3] = {loom_tensor_ne(x, 0), (int64_t)loom_tensor_nb(x, 1), loom_tensor_ne(x, 1)};
    return loom_view(ctx, x, (size_t)i * loom_tensor_nb(x, 2), 3, args);
}

/* slices 1..A-1 of x [E, T, A] */
static loom_tensor *rest(loom_ctx *ctx, loom_tensor *x) {
    const int64_t args[5] = {loom_tensor_ne(x, 0), (int64_t)loom_tensor_nb(x, 1), loom_tensor_ne(x, 1),
                             (int64_t)loom_tensor_nb(x, 2), loom_tensor_ne(x, 2) - 1};
    return loom_view(ctx, x, loom_tensor_nb(x, 2), 5, args);
}

/* tanh(router (rms_norm(x) * router_norm / E)): [A, T] */
static loom_tensor *modalities(const loom_model *m, loom_ctx *ctx, const llm_layer *ly, loom_tensor *x) {
    loom_tensor *r = loom_rms_norm(ctx, x, ly->altup_router_norm, m->hp.rms_eps);
    r = loom_scale(ctx, r, 1.0f / (float)m->hp.n_embd);
    return loom_tanh(ctx, loom_mul_mat(ctx, ly->altup_router, r));
}

loom_tensor *llm_gemma3n_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t T = b->n_tokens, E = hp->n_embd, H = hp->n_head, D = hp->head_dim_k;
    const int64_t A = G3N_ALTUP, NPL = hx->n_embd_pl;
    const float eps = hp->rms_eps;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *e = llm_named(loom_scale(ctx, loom_get_rows(ctx, m->tok_embd, in.tok), hx->embd_scale), "inp_scaled", -1);
    loom_tensor *pls = llm_gemma_per_layer_inputs(m, ctx, in.tok, e);
    /* the AltUp streams */
    const int64_t ne_e1[3] = {E, T, 1};
    loom_tensor *added = loom_mul_mat(ctx, m->altup_proj, loom_repeat(ctx, loom_reshape(ctx, e, 3, ne_e1), 2, (int)(A - 1)));
    added = loom_div(ctx, loom_mul(ctx, added, magnitude(ctx, e)), magnitude(ctx, added));
    loom_tensor *X = loom_concat(ctx, loom_reshape(ctx, e, 3, ne_e1), added, 2); /* [E, T, A] */
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        /* predict */
        const int64_t ne_c[3] = {A, A, T};
        loom_tensor *coefs = loom_reshape(ctx, loom_mul_mat(ctx, ly->altup_predict_coef, modalities(m, ctx, ly, slice(ctx, X, 0))), 3, ne_c);
        loom_tensor *pred = loom_mul_mat(ctx, loom_cont(ctx, loom_permute(ctx, X, 1, 2, 0, 3)), coefs); /* [E, A, T] */
        pred = loom_add(ctx, loom_cont(ctx, loom_permute(ctx, pred, 0, 2, 1, 3)), X);                  /* [E, T, A] */
        loom_tensor *act = slice(ctx, pred, 0);
        loom_tensor *x = llm_named(loom_rms_norm(ctx, act, ly->attn_norm, eps), "attn_norm", il);
        loom_tensor *lau = loom_mul_mat(ctx, ly->laurel_r, loom_mul_mat(ctx, ly->laurel_l, x));
        lau = loom_add(ctx, loom_rms_norm(ctx, lau, ly->laurel_post_norm, eps), x);
        /* attention */
        const int64_t ne_q[3] = {D, H, T};
        loom_tensor *q, *k = NULL, *v = NULL;
        if (m->kv.share[il] == il) {
            llm_qkv_any(ctx, hp, ly, x, T, &q, &k, &v);
            k = llm_named(llm_rope(m, ctx, loom_rms_norm(ctx, k, ly->k_norm, eps), in.pos, il, NULL), "k", il);
            v = llm_named(loom_rms_norm(ctx, v, NULL, eps), "v", il);
        } else {
            q = loom_reshape(ctx, loom_mul_mat(ctx, ly->wq, x), 3, ne_q);
        }
        q = llm_named(llm_rope(m, ctx, loom_rms_norm(ctx, q, ly->q_norm, eps), in.pos, il, NULL), "q", il);
        loom_tensor *a = llm_attention(m, ctx, b, &in, il, q, k, v, in.mask, 1.0f, 0.0f, NULL);
        loom_tensor *y = loom_add(ctx, loom_rms_norm(ctx, loom_mul_mat(ctx, ly->wo, a), ly->attn_post_norm, eps), act);
        y = llm_named(loom_scale(ctx, loom_add(ctx, y, lau), 1.0f / sqrtf(2.0f)), "attn_laurel", il);
        /* MLP, sparse on the first layers */
        loom_tensor *n = llm_named(loom_rms_norm(ctx, y, ly->ffn_norm, eps), "ffn_norm", il);
        loom_tensor *gate = loom_mul_mat(ctx, ly->ffn_gate, n);
        if (il < G3N_SPARSE_LAYERS) {
            const int64_t F = hp->n_ff;
            loom_tensor *mean = loom_mean(ctx, gate);
            loom_tensor *sd = loom_sqrt(ctx, loom_scale(ctx, loom_sum_rows(ctx, loom_sqr(ctx, loom_sub(ctx, gate, mean))),
                                                       1.0f / (float)(F - 1)));
            gate = loom_relu(ctx, loom_sub(ctx, gate, loom_add(ctx, mean, loom_scale(ctx, sd, G3N_SPARSITY_STD))));
        }
        loom_tensor *f = loom_mul_mat(ctx, ly->ffn_down, loom_mul(ctx, loom_mul_mat(ctx, ly->ffn_up, n), loom_gelu_f16(ctx, gate)));
        loom_tensor *z = llm_named(loom_add(ctx, loom_rms_norm(ctx, f, ly->ffn_post_norm, eps), y), "ffn_out", il);
        /* correct */
        const float one = 1.0f;
        const int64_t ne1[1] = {1}, ne_c3[3] = {1, T, A};
        loom_tensor *c1 = loom_from_f32(loom_ctx_input(ctx), &one, 1, 1, ne1);
        loom_tensor *cf = loom_add(ctx, loom_mul_mat(ctx, ly->altup_correct_coef, modalities(m, ctx, ly, z)), c1); /* [A, T] */
        cf = loom_cont_nd(ctx, loom_transpose(ctx, cf), 3, ne_c3);                                                  /* [1, T, A] */
        loom_tensor *innov = loom_sub(ctx, z, act);                                                                 /* [E, T] */
        const int64_t ne_i3[3] = {E, T, 1};
        loom_tensor *corr = loom_add(ctx, loom_mul(ctx, loom_repeat(ctx, loom_reshape(ctx, innov, 3, ne_i3), 2, (int)A), cf), pred);
        /* per-layer input into streams 1..A-1 */
        loom_tensor *fp = loom_mul(ctx, slice(ctx, corr, 0), ly->altup_correct_scale);
        const int64_t args[3] = {NPL, (int64_t)loom_tensor_nb(pls, 1), T};
        loom_tensor *pi = loom_view(ctx, pls, (size_t)il * loom_tensor_nb(pls, 2), 3, args);
        fp = loom_mul(ctx, loom_gelu_f16(ctx, loom_mul_mat(ctx, ly->pl_inp_gate, fp)), pi);
        fp = loom_rms_norm(ctx, loom_mul_mat(ctx, ly->pl_proj, fp), ly->pl_post_norm, eps); /* [E, T] */
        X = loom_concat(ctx, loom_reshape(ctx, loom_cont(ctx, slice(ctx, corr, 0)), 3, ne_i3), loom_add(ctx, rest(ctx, corr), fp), 2);
        X = llm_named(X, "l_out", il);
    }
    /* unembed the streams */
    loom_tensor *x0 = slice(ctx, X, 0);
    loom_tensor *un = loom_mul_mat(ctx, m->altup_unembd_proj, loom_cont(ctx, rest(ctx, X)));
    un = loom_div(ctx, loom_mul(ctx, un, magnitude(ctx, x0)), magnitude(ctx, un));
    loom_tensor *h = x0;
    for (int64_t i = 0; i < A - 1; i++) h = loom_add(ctx, h, slice(ctx, un, i));
    h = loom_get_rows(ctx, loom_scale(ctx, h, 1.0f / (float)A), in.outs);
    h = llm_named(loom_rms_norm(ctx, h, m->output_norm, eps), "result_norm", -1);
    loom_tensor *out = llm_softcap(ctx, loom_mul_mat(ctx, m->output, h), hx->final_softcap);
    return llm_named(out, "result_output", -1);
}
