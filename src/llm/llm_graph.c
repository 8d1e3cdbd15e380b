/*
 * llm_graph.c - graph building blocks shared by the architectures (llm_graph.h).
 * Facts about what llama.cpp computes are cited where a rule is not stated by a key.
 */
#include <math.h>
#include <string.h>

#include "llm_graph.h"

loom_tensor *llm_named(loom_tensor *t, const char *what, int il) {
    /* "%s-%d" by hand: snprintf was a visible part of the per-token graph build */
    char name[LOOM_MAX_NAME];
    size_t n = 0;
    for (; n < 40 && what[n]; n++) name[n] = what[n];
    if (il >= 0) {
        char dig[12];
        int nd = 0;
        unsigned v = (unsigned)il;
        do dig[nd++] = (char)('0' + v % 10); while ((v /= 10) && nd < 11);
        name[n++] = '-';
        while (nd > 0) name[n++] = dig[--nd];
    }
    name[n] = '\0';
    return loom_tensor_set_name(t, name);
}

loom_tensor *llm_linear(loom_ctx *ctx, loom_tensor *w, loom_tensor *b, loom_tensor *x) {
    loom_tensor *y = loom_mul_mat(ctx, w, x);
    return b ? loom_add(ctx, y, b) : y;
}

void llm_llama_qkv(loom_ctx *ctx, const loom_model_hparams *hp, const llm_layer *ly, loom_tensor *x, int64_t T, int il,
                   loom_tensor **q, loom_tensor **k, loom_tensor **v) {
    const int64_t H = hp->n_head, DK = hp->head_dim_k, DV = hp->head_dim_v;
    const int64_t HKV = ly->wk ? loom_tensor_ne(ly->wk, 1) / DK : hp->n_head_kv; /* the layer's (deci: per layer) */
    int64_t ne_q[3] = {DK, H, T}, ne_k[3] = {DK, HKV, T}, ne_v[3] = {DV, HKV, T};
    if (ly->wqkv) { /* q|k|v fused (llama.cpp's create_tensor_qkv loads either) */
        llm_qkv_clamped(ctx, hp, ly, x, T, 0.0f, q, k, v);
    } else {
        *q = loom_reshape(ctx, llm_linear(ctx, ly->wq, ly->bq, x), 3, ne_q);
        *k = loom_reshape(ctx, llm_linear(ctx, ly->wk, ly->bk, x), 3, ne_k);
        *v = loom_reshape(ctx, llm_linear(ctx, ly->wv, ly->bv, x), 3, ne_v);
    }
    if (ly->q_norm) *q = llm_named(loom_rms_norm(ctx, *q, ly->q_norm, hp->rms_eps), "q_norm", il);
    if (ly->k_norm) *k = llm_named(loom_rms_norm(ctx, *k, ly->k_norm, hp->rms_eps), "k_norm", il);
}

/* rows [off, off + n*d) of y [rows, T] as [d, n, T] */
static loom_tensor *split_heads(loom_ctx *ctx, loom_tensor *y, int64_t off, int64_t d, int64_t n) {
    const int64_t T = loom_tensor_ne(y, 1);
    const int64_t args[5] = {d, d * 4, n, (int64_t)loom_tensor_nb(y, 1), T};
    return loom_cont(ctx, loom_view(ctx, y, (size_t)off * 4, 5, args));
}

void llm_qkv_any(loom_ctx *ctx, const loom_model_hparams *hp, const llm_layer *ly, loom_tensor *x, int64_t T,
                 loom_tensor **q, loom_tensor **k, loom_tensor **v) {
    llm_qkv_clamped(ctx, hp, ly, x, T, 0.0f, q, k, v);
}

static loom_tensor *clamp_kqv(loom_ctx *ctx, loom_tensor *x, float c) { return c > 0.0f ? loom_clamp(ctx, x, -c, c) : x; }

void llm_qkv_clamped(loom_ctx *ctx, const loom_model_hparams *hp, const llm_layer *ly, loom_tensor *x, int64_t T,
                     float clamp, loom_tensor **q, loom_tensor **k, loom_tensor **v) {
    const int64_t H = hp->n_head, HKV = hp->n_head_kv, DK = hp->head_dim_k, DV = hp->head_dim_v;
    if (!ly->wqkv) {
        int64_t ne_q[3] = {DK, H, T}, ne_k[3] = {DK, HKV, T}, ne_v[3] = {DV, HKV, T};
        *q = loom_reshape(ctx, clamp_kqv(ctx, llm_linear(ctx, ly->wq, ly->bq, x), clamp), 3, ne_q);
        *k = loom_reshape(ctx, clamp_kqv(ctx, llm_linear(ctx, ly->wk, ly->bk, x), clamp), 3, ne_k);
        *v = loom_reshape(ctx, clamp_kqv(ctx, llm_linear(ctx, ly->wv, ly->bv, x), clamp), 3, ne_v);
        return;
    }
    loom_tensor *y = clamp_kqv(ctx, llm_linear(ctx, ly->wqkv, ly->bqkv, x), clamp);
    *q = split_heads(ctx, y, 0, DK, H);
    *k = split_heads(ctx, y, H * DK, DK, HKV);
    *v = split_heads(ctx, y, H * DK + HKV * DK, DV, HKV);
}

loom_tensor *llm_swiglu_limited(loom_ctx *ctx, loom_tensor *gate, loom_tensor *up, float limit) {
    if (!(limit > 0.0f)) return loom_swiglu(ctx, gate, up);
    loom_tensor *g = loom_clamp(ctx, loom_silu(ctx, gate), -INFINITY, limit);
    return loom_mul(ctx, g, loom_clamp(ctx, up, -limit, limit));
}

loom_tensor *llm_head_part(loom_ctx *ctx, loom_tensor *x, int64_t off, int64_t n) {
    const int64_t args[5] = {n, (int64_t)loom_tensor_nb(x, 1), loom_tensor_ne(x, 1), (int64_t)loom_tensor_nb(x, 2),
                             loom_tensor_ne(x, 2)};
    return loom_view(ctx, x, (size_t)off * loom_tensor_nb(x, 0), 5, args);
}

loom_tensor *llm_situ(loom_ctx *ctx, loom_tensor *gate, loom_tensor *up, float b, float lb) {
    loom_tensor *a = loom_mul(ctx, loom_scale(ctx, loom_tanh(ctx, loom_scale(ctx, gate, 1.0f / b)), b), loom_sigmoid(ctx, gate));
    if (lb > 0.0f) up = loom_scale(ctx, loom_tanh(ctx, loom_scale(ctx, up, 1.0f / lb)), lb);
    return loom_mul(ctx, a, up);
}

loom_tensor *llm_swiglu_mlp(loom_ctx *ctx, loom_tensor *gate, loom_tensor *up, loom_tensor *down, loom_tensor *x) {
    return loom_mul_mat(ctx, down, loom_swiglu(ctx, loom_mul_mat(ctx, gate, x), loom_mul_mat(ctx, up, x)));
}

loom_tensor *llm_llama_ffn(loom_ctx *ctx, const loom_model *m, const llm_layer *ly, loom_tensor *x, loom_tensor *r,
                           loom_tensor *outs, int il) {
    const loom_model_hparams *hp = &m->hp;
    if (il == hp->n_layer - 1) {
        /* only the requested rows continue past the last attention */
        x = loom_get_rows(ctx, x, outs);
        r = loom_get_rows(ctx, r, outs);
    }
    loom_tensor *h = llm_named(loom_add(ctx, x, r), "ffn_inp", il);
    x = llm_named(llm_llama_norm(m, ctx, h, ly->ffn_norm, ly->ffn_norm_b), "ffn_norm", il);
    if (ly->ffn_gate_inp) {
        /* Mixtral-style llama: softmax router (+ ernie's selection bias), top-k, weights
         * renormalised (llama.cpp's llama graph), optional expert_weights_scale */
        loom_tensor *n = x;
        x = llm_moe_ffn_ext(ctx, ly, n, m->hx.n_expert, m->hx.n_expert_used, LLM_MOE_SOFTMAX, true,
                            m->hx.expert_weights_scale, 0.0f, il);
        if (ly->ffn_gate_shexp) { /* ernie4_5-moe's shared experts */
            loom_tensor *g = loom_mul_mat(ctx, ly->ffn_gate_shexp, n), *u = loom_mul_mat(ctx, ly->ffn_up_shexp, n);
            x = loom_add(ctx, x, loom_mul_mat(ctx, ly->ffn_down_shexp, loom_swiglu(ctx, g, u)));
        }
    } else if (ly->xielu_on) { /* apertus: Wdown xielu(Wup x) */
        x = loom_mul_mat(ctx, ly->ffn_down, loom_xielu(ctx, loom_mul_mat(ctx, ly->ffn_up, x), ly->xielu[0], ly->xielu[1],
                                                       ly->xielu[2], ly->xielu[3]));
    } else if (!ly->ffn_gate) { /* arcee: Wdown relu(Wup x)^2 */
        x = loom_mul_mat(ctx, ly->ffn_down, loom_sqr(ctx, loom_relu(ctx, loom_mul_mat(ctx, ly->ffn_up, x))));
    } else { /* SwiGLU, with llama's optional MLP biases (NULL: none) */
        loom_tensor *g = llm_linear(ctx, ly->ffn_gate, ly->ffn_gate_b, x), *u = llm_linear(ctx, ly->ffn_up, ly->ffn_up_b, x);
        x = llm_linear(ctx, ly->ffn_down, ly->ffn_down_b, loom_swiglu(ctx, g, u));
    }
    x = llm_named(x, "ffn_out", il);
    return llm_named(loom_add(ctx, x, h), "l_out", il);
}

loom_tensor *llm_llama_norm(const loom_model *m, loom_ctx *ctx, loom_tensor *x, loom_tensor *w, loom_tensor *b) {
    return m->hx.ln_norms ? loom_layer_norm(ctx, x, w, b, m->hp.rms_eps) : loom_rms_norm(ctx, x, w, m->hp.rms_eps);
}

loom_tensor *llm_llama_output(const loom_model *m, loom_ctx *ctx, loom_tensor *h) {
    h = llm_named(llm_llama_norm(m, ctx, h, m->output_norm, m->output_norm_b), "result_norm", -1);
    return llm_named(llm_linear(ctx, m->output, m->output_b, h), "result_output", -1);
}

loom_tensor *llm_softcap(loom_ctx *ctx, loom_tensor *x, float cap) {
    return loom_scale(ctx, loom_tanh(ctx, loom_scale(ctx, x, 1.0f / cap)), cap);
}

/* period p, as llama.cpp's set_swa_pattern: 0 every layer, 1 none, else il % p < p - 1 */
bool llm_layer_is_chunked(const llm_hparams_x *hx, int il) {
    if (hx->n_chunk <= 0) return false;
    int p = hx->swa_period;
    return p <= 0 || il % p < p - 1;
}

bool llm_layer_is_swa(const llm_hparams_x *hx, int il) {
    if (hx->n_swa <= 0) return false;
    if (hx->swa_listed) return il >= 0 && il < 4096 && (hx->swa_bits[il / 64] >> (il % 64) & 1);
    int p = hx->swa_period;
    return p <= 0 || il % p < p - 1;
}

/* ------------------------------------------------------------------ inputs */

void llm_attn_temp_fill(const loom_model *m, const int32_t *pos, int T, float *host) {
    /* llama.cpp (llm_graph_input_attn_temp): 1 + scale * log(floor((pos + offset) / floor_len) + 1) */
    for (int i = 0; i < T; i++)
        host[i] = (float)(log(floor(((double)pos[i] + m->hx.attn_temp_offset) / (double)m->hx.attn_temp_floor) + 1.0) *
                              m->hx.attn_temp_scale +
                          1.0);
}

void llm_seq_fill(const loom_model *m, const loom_batch *rows, int32_t *host) {
    (void)m;
    for (int32_t r = 0; r < rows->n_tokens; r++) host[r] = rows->seq_id[(size_t)r * (size_t)rows->seq_capacity];
}

void llm_graph_inputs(loom_model *m, loom_ctx *ctx, const llm_batch *b, llm_inputs *in) {
    const int64_t T = b->n_tokens;
    loom_ctx *ic = loom_ctx_input(ctx);
    memset(in, 0, sizeof *in);
    int64_t ne_t[1] = {T}, ne_o[1] = {b->n_outputs}, ne_s[3] = {1, 1, T};
    if (b->reserve) {
        in->tok = loom_zeros(ic, LOOM_TYPE_I32, 1, ne_t);
        in->pos = loom_zeros(ic, LOOM_TYPE_I32, 1, ne_t);
        in->outs = loom_zeros(ic, LOOM_TYPE_I32, 1, ne_o);
        if (m->hx.attn_temp_scale != 0) in->attn_temp = loom_zeros(ic, LOOM_TYPE_F32, 3, ne_s);
    } else {
        in->tok = loom_from_i32(ic, b->rows->token, (size_t)T, 1, ne_t);
        in->pos = loom_from_i32(ic, b->rows->pos, (size_t)T, 1, ne_t);
        in->outs = loom_from_i32(ic, b->out_ids, (size_t)b->n_outputs, 1, ne_o);
        if (m->hx.attn_temp_scale != 0) {
            llm_attn_temp_fill(m, b->rows->pos, (int)T, m->attn_temp);
            in->attn_temp = loom_from_f32(ic, m->attn_temp, (size_t)T, 3, ne_s);
        }
    }
    if (m->kv.n_recurrent > 0) { /* the state slot of each token: its (only) sequence */
        if (b->reserve) {
            in->seq = loom_zeros(ic, LOOM_TYPE_I32, 1, ne_t);
        } else {
            llm_seq_fill(m, b->rows, m->seq_host);
            in->seq = loom_from_i32(ic, m->seq_host, (size_t)T, 1, ne_t);
        }
        loom_tensor_set_name(in->seq, "inp_seq");
    }
    loom_tensor_set_name(in->tok, "inp_tokens");
    loom_tensor_set_name(in->pos, "inp_pos");
    loom_tensor_set_name(in->outs, "inp_out_ids");
    if (in->attn_temp) loom_tensor_set_name(in->attn_temp, "attn_temp");
    if (b->io) {
        b->io->tok = in->tok;
        b->io->pos = in->pos;
        b->io->outs = in->outs;
        b->io->attn_temp = b->reserve ? NULL : in->attn_temp;
        b->io->seq = b->reserve ? NULL : in->seq;
    }
    llm_kv_build_masks(ctx, &m->kv, (int)T, b->reserve, in->masks, b->io);
}

/* ------------------------------------------------------------------ rope */

static float yarn_mscale(float scale, float mscale) {
    return scale <= 1.0f ? 1.0f : 0.1f * mscale * logf(scale) + 1.0f;
}

float llm_rope_attn_factor(const loom_model *m) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    float attn_factor = 1.0f;
    /* llama.cpp: the ext factor (the file's when grok gives one, else 1 with YaRN scaling);
     * when it is not 0 the magnitude factor is derived from the scaling factor, else the
     * file's yarn_attn_factor (grok) or 1 stays */
    const bool ext = hx->yarn_ext_set ? hx->yarn_ext != 0.0f : hx->yarn;
    if (hx->yarn_ext_set && !ext) attn_factor = hx->yarn_attn_key;
    if (ext) {
        /* llama.cpp (llama_context): ext_factor 1; the magnitude factor of the context's
         * (global) scale, divided by the 1 + 0.1 ln(factor) the rope kernel applies */
        const float factor = 1.0f / hp->rope_freq_scale;
        /* deepseek2 (llama.cpp's special case): mscale = mscale_all_dim when that is not 1 */
        const float ms = hx->yarn_mscale_all && hx->yarn_log_mul != 1.0f ? hx->yarn_log_mul : 1.0f;
        if (hx->yarn_log_mul != 0.0f) attn_factor = yarn_mscale(factor, ms) / yarn_mscale(factor, hx->yarn_log_mul);
        else attn_factor = yarn_mscale(factor, 1.0f);
        attn_factor *= 1.0f / (1.0f + 0.1f * logf(factor));
    }
    return attn_factor * hx->rope_attn_factor;
}

void llm_rope_layer(const loom_model *m, int il, loom_tensor *factors, loom_rope_opts *ro, float *base, float *scale) {
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const bool swa = llm_layer_is_swa(hx, il);
    *ro = loom_rope_default_opts();
    ro->mode = hp->rope_mode;
    ro->factors = factors;
    ro->orig_ctx = hx->n_ctx_orig > 0 ? hx->n_ctx_orig : hp->n_ctx_train;
    ro->beta_fast = hx->yarn_beta_fast;
    ro->beta_slow = hx->yarn_beta_slow;
    if (hx->yarn) ro->ext_factor = 1.0f;
    if (hx->yarn_ext_set) ro->ext_factor = hx->yarn_ext;
    ro->attn_factor = llm_rope_attn_factor(m);
    *base = swa ? hx->rope_base_swa : hp->rope_base;
    *scale = swa ? hx->rope_scale_swa : hp->rope_freq_scale;
    if (swa && hx->swa_rope_plain) {
        ro->ext_factor = 0.0f;
        ro->attn_factor = 1.0f;
    }
}

bool llm_layer_has_rope(const loom_model *m, int il) {
    if (m->hx.rope_off) return false;
    /* smollm3 (llama.cpp's n_no_rope_layer_step): every step-th layer has none */
    if (m->hx.no_rope_step > 0 && (il + 1) % m->hx.no_rope_step == 0) return false;
    /* granite_swa: attention.rope_pattern, one boolean per layer */
    if (il >= 0 && il < 4096 && (m->hx.nope_bits[il / 64] >> (il % 64) & 1)) return false;
    /* cohere2, exaone4 with a window, muse-glimmer: only the sliding-window layers rotate */
    /* smallthinker with a window: every fourth layer (il % 4 == 0) is NoPE, unless the
     * model has exactly 4 layers (llama.cpp's n_no_rope_layer_step == n_layer test) */
    if (!strcmp(m->hp.arch, "smallthinker")) return m->hx.n_swa <= 0 || m->hp.n_layer == 4 || il % 4 != 0;
    /* cohere2moe: the window layers and the leading dense ones */
    if (!strcmp(m->hp.arch, "cohere2moe")) return llm_layer_is_swa(&m->hx, il) || il < m->hx.n_dense_lead;
    const bool swa_only = !strcmp(m->hp.arch, "cohere2") || !strcmp(m->hp.arch, "exaone-moe") ||
                          !strcmp(m->hp.arch, "muse-glimmer") ||
                          (!strcmp(m->hp.arch, "exaone4") && m->hx.n_swa > 0);
    return !swa_only || llm_layer_is_swa(&m->hx, il);
}

void llm_mrope_fill(const llm_hparams_x *hx, int n_rot, float *ff) {
    /* ggml's multi-section rope gives pair i the position of its section: sector
     * s = i % (sum of sections); sections t, h, w in order (mrope) or interleaved
     * t h w t h w ... while each lasts (imrope); the rest is section e. A text token
     * has positions (p, p, p, 0): the t/h/w pairs turn as the plain neox rope at p,
     * the e pairs not at all, which a frequency factor of infinity gives exactly. */
    const int *sec = hx->rope_sections;
    const int sum = sec[0] + sec[1] + sec[2] + sec[3];
    for (int i = 0; i < n_rot / 2; i++) {
        const int s = i % sum;
        bool e;
        if (hx->mrope == 2)
            e = !((s % 3 == 1 && s < 3 * sec[1]) || (s % 3 == 2 && s < 3 * sec[2]) || (s % 3 == 0 && s < 3 * sec[0]));
        else
            e = s >= sec[0] + sec[1] + sec[2];
        ff[i] = e ? INFINITY : 1.0f;
    }
}

loom_tensor *llm_mrope_factors(const loom_model *m, loom_ctx *ctx) {
    if (!m->mrope_ff) return NULL;
    int64_t ne[1] = {m->hp.n_rot / 2};
    loom_tensor *t = loom_from_f32(loom_ctx_input(ctx), m->mrope_ff, (size_t)ne[0], 1, ne);
    loom_tensor_set_name(t, "mrope_factors");
    return t;
}

loom_tensor *llm_layer_rope_factors(const loom_model *m, loom_ctx *ctx, int il) {
    const llm_layer *ly = &m->layers[il];
    if (m->mrope_ff) return llm_mrope_factors(m, ctx);
    /* phi3 LongRoPE: the long factors when the context passes the original one */
    if (ly->rope_long) return m->n_ctx > m->hx.n_ctx_orig ? ly->rope_long : ly->rope_short;
    return ly->rope_freqs;
}

int llm_layer_n_rot(const loom_model *m, int il) {
    return m->layers && m->layers[il].n_rot > 0 ? m->layers[il].n_rot : m->hp.n_rot;
}

int llm_rope_key_offset(const loom_model *m, int il) {
    /* deepseek2 keys end with their rope dims ([c ; k_pe] or [k_nope ; k_pe]), before a
     * DSA indexer key when the layer caches one; each layer's own width (dots3note's
     * window layers have a latent of their own) */
    if (m->hx.kv_lora <= 0) return 0;
    const int64_t dk = m->kv.ldk && m->kv.ldk[il] > 0 ? m->kv.ldk[il] : m->hp.head_dim_k;
    return (int)(dk - (m->kv_types ? m->kv_types[il].kdsa : 0) - m->hp.n_rot);
}

loom_tensor *llm_rope(const loom_model *m, loom_ctx *ctx, loom_tensor *x, loom_tensor *pos, int il,
                      loom_tensor *factors) {
    loom_rope_opts ro;
    float base, scale;
    if (!factors) factors = llm_mrope_factors(m, ctx); /* NULL unless multi-section */
    llm_rope_layer(m, il, factors, &ro, &base, &scale);
    return loom_rope(ctx, x, pos, m->hp.n_rot, base, scale, &ro);
}

/* ------------------------------------------------------------------ recurrent states */

void llm_last_rows(loom_ctx *ctx, const loom_model *m, const llm_inputs *in, int il, loom_tensor **x, loom_tensor **r) {
    if (il != m->hp.n_layer - 1) return;
    *x = loom_get_rows(ctx, *x, in->outs);
    *r = loom_get_rows(ctx, *r, in->outs);
}

bool llm_rs_in_place(const loom_model *m, int il) {
    return m->kv.rs_ssm && m->kv.rs_ssm[il] && loom_backend_layer_device(m->be, llm_dev_layer(m->be, il)) == 0;
}

/* ------------------------------------------------------------------ attention */

loom_tensor *llm_attention(loom_model *m, loom_ctx *ctx, const llm_batch *b, const llm_inputs *in, int il,
                           loom_tensor *q, loom_tensor *k, loom_tensor *v, loom_tensor *mask, float kq_scale,
                           float softcap, loom_tensor *sinks) {
    llm_kv_cache *kv = &m->kv;
    const int64_t H = loom_tensor_ne(q, 1), T = loom_tensor_ne(q, 2), DV = kv->ldv[il];
    (void)mask; /* the cache gives each layer the mask of its type (full or window) */
    mask = llm_kv_layer_mask(kv, in->masks, il);
    /* a layer sharing an earlier layer's cache (k, v NULL) only reads it */
    /* quantized caches: q, k, v turned by the cache's Hadamard matrices, the output
     * turned back (model_internal.h) */
    q = llm_kv_rot_k(ctx, kv, il, q);
    if (kv->share[il] == il)
        llm_kv_put(ctx, kv, il, llm_kv_rot_k(ctx, kv, il, k), llm_kv_rot_v(ctx, kv, il, v),
                   b->io ? b->io->store + 4 * il : NULL);
    loom_tensor *kc, *vc, *a;
    llm_kv_get(ctx, kv, il, &kc, &vc);
    /* soft-capped scores (gemma2) and sinks (gpt-oss) are parameters of the fused kernel,
     * or of the explicit nodes without flash attention (loom_sdpa_ext) */
    const loom_attn_opts o = {.softcap = softcap > 0.0f ? softcap : 0.0f, .sinks = sinks, .max_bias = m->hx.alibi_bias};
    a = llm_kv_rot_v(ctx, kv, il, loom_sdpa_opts(ctx, q, kc, vc, mask, kq_scale, &o));
    int64_t ne_a[2] = {DV * H, T};
    return loom_reshape(ctx, llm_named(a, "kqv", il), 2, ne_a);
}

/* ------------------------------------------------------------------ mixture of experts */

/* b [n, n_expert] rows picked per (slot, token) of sel [k, T] -> [n, k, T] */
static loom_tensor *expert_bias(loom_ctx *ctx, loom_tensor *y, loom_tensor *bias, loom_tensor *sel_flat) {
    if (!bias) return y;
    loom_tensor *rows = loom_get_rows(ctx, bias, sel_flat); /* [n, k*T] */
    return loom_add(ctx, y, loom_reshape(ctx, rows, 3, (const int64_t[3]){loom_tensor_ne(y, 0), loom_tensor_ne(y, 1), loom_tensor_ne(y, 2)}));
}

loom_tensor *llm_moe_ffn(loom_ctx *ctx, const llm_layer *ly, loom_tensor *x, int n_expert, int n_used,
                         llm_moe_gating gating, bool norm_w, float swiglu_limit, int il) {
    return llm_moe_ffn_ext(ctx, ly, x, n_expert, n_used, gating, norm_w, 0.0f, swiglu_limit, il);
}

loom_tensor *llm_moe_ffn_ext(loom_ctx *ctx, const llm_layer *ly, loom_tensor *x, int n_expert, int n_used,
                             llm_moe_gating gating, bool norm_w, float w_scale, float swiglu_limit, int il) {
    const llm_moe_opts o = {.gating = gating, .norm_w = norm_w, .w_scale = w_scale, .swiglu_limit = swiglu_limit};
    return llm_moe_ffn_opts(ctx, ly, x, n_expert, n_used, &o, il);
}

loom_tensor *llm_moe_ffn_opts(loom_ctx *ctx, const llm_layer *ly, loom_tensor *x, int n_expert, int n_used,
                              const llm_moe_opts *o, int il) {
    const llm_moe_gating gating = o->gating;
    const bool norm_w = o->norm_w;
    const float w_scale = o->w_scale, swiglu_limit = o->swiglu_limit;
    const int64_t E = loom_tensor_ne(x, 0), T = loom_tensor_ne(x, 1), K = n_used;
    loom_tensor *logits = llm_named(llm_linear(ctx, ly->ffn_gate_inp, ly->ffn_gate_inp_b, o->router_in ? o->router_in : x),
                                    "ffn_moe_logits", il);
    const bool before = gating == LLM_MOE_LLAMA4;
    loom_tensor *probs = gating == LLM_MOE_SOFTMAX                       ? loom_softmax(ctx, logits)
                         : gating == LLM_MOE_SIGMOID || before ? loom_sigmoid(ctx, logits)
                                                                         : logits; /* [n_expert, T] */
    loom_tensor *chooser = before ? logits : ly->ffn_exp_probs_b ? loom_add(ctx, probs, ly->ffn_exp_probs_b) : probs;
    if (o->choose_sigmoid) chooser = loom_sigmoid(ctx, logits);
    if (ly->n_groups > 1) {
        /* llama.cpp's grouped routing (DeepSeek V3): a group's score is the sum of its two
         * best selection scores; experts outside the n_groups_used best groups are out */
        const int64_t G = ly->n_groups, EPG = n_expert / G, GU = ly->n_groups_used;
        const int64_t ne_g[3] = {EPG, G, T}, ne_r[3] = {1, EPG, G * T}, ne_i[2] = {2, G * T}, ne_2[3] = {2, G, T};
        const int64_t ne_gt[2] = {G, T}, ne_1[3] = {1, G, T}, ne_e[2] = {G, G};
        loom_tensor *grp = loom_reshape(ctx, loom_cont(ctx, chooser), 3, ne_g);
        loom_tensor *top2 = loom_reshape(ctx, loom_cont(ctx, loom_top_k(ctx, grp, 2)), 2, ne_i);
        loom_tensor *best = loom_get_rows(ctx, loom_reshape(ctx, grp, 3, ne_r), top2); /* [1, 2, G*T] */
        loom_tensor *score = loom_reshape(ctx, loom_sum_rows(ctx, loom_reshape(ctx, best, 3, ne_2)), 2, ne_gt);
        loom_tensor *keep = loom_cont(ctx, loom_top_k(ctx, score, (int)GU)); /* [GU, T] */
        loom_tensor *eye = loom_from_f32(loom_ctx_input(ctx), ly->group_eye, (size_t)(G * G), 2, ne_e);
        const int64_t ne_kf[1] = {GU * T}, ne_h[3] = {G, GU, T};
        loom_tensor *hot = loom_reshape(ctx, loom_get_rows(ctx, eye, loom_reshape(ctx, keep, 1, ne_kf)), 3, ne_h); /* one-hot */
        loom_tensor *on = loom_sum_rows(ctx, loom_cont(ctx, loom_permute(ctx, hot, 1, 0, 2, 3))); /* [1, G, T]: 1 kept */
        /* (on - 1) * 1e30: 0 for the kept groups, -1e30 for the others (scores are O(1)) */
        const float minus_one = -1.0f;
        const int64_t ne1[1] = {1}, ne_c[2] = {n_expert, T};
        loom_tensor *m1 = loom_from_f32(loom_ctx_input(ctx), &minus_one, 1, 1, ne1);
        loom_tensor *pen = loom_reshape(ctx, loom_scale(ctx, loom_add(ctx, on, m1), 1e30f), 3, ne_1);
        chooser = loom_reshape(ctx, loom_add(ctx, grp, pen), 2, ne_c);
        llm_named(chooser, "ffn_moe_group_select", il);
    }
    loom_tensor *sel = loom_cont(ctx, loom_top_k(ctx, chooser, n_used)); /* [K, T] */
    llm_named(sel, "ffn_moe_topk", il);
    const int64_t ne_p[3] = {1, n_expert, T}, ne_kt[2] = {K, T}, ne_1kt[3] = {1, K, T}, ne_flat[1] = {K * T};
    if (o->sel_map) { /* sel[k, t] = sel_map[sel[k, t]]: rows of the map [1, n_expert] (I32) */
        const int64_t ne_m[2] = {1, n_expert};
        loom_tensor *map = loom_from_i32(loom_ctx_input(ctx), o->sel_map, (size_t)n_expert, 2, ne_m);
        sel = loom_reshape(ctx, loom_get_rows(ctx, map, loom_reshape(ctx, sel, 1, ne_flat)), 2, ne_kt);
    }
    loom_tensor *w = loom_get_rows(ctx, loom_reshape(ctx, probs, 3, ne_p), sel); /* [1, K, T] */
    if (gating == LLM_MOE_TOPK_SOFTMAX)
        w = loom_reshape(ctx, loom_softmax(ctx, loom_reshape(ctx, w, 2, ne_kt)), 3, ne_1kt);
    if (norm_w) {
        /* llama.cpp: the sum clamped to the smallest F16 normal before dividing */
        loom_tensor *w2 = loom_reshape(ctx, w, 2, ne_kt);
        loom_tensor *sum = loom_clamp(ctx, loom_sum_rows(ctx, w2), 6.103515625e-5f, INFINITY);
        w = loom_reshape(ctx, loom_div(ctx, w2, sum), 3, ne_1kt);
    }
    if (w_scale != 0.0f && w_scale != 1.0f) w = loom_scale(ctx, w, w_scale);
    llm_named(w, "ffn_moe_weights", il);
    loom_tensor *sel_flat = (ly->ffn_up_exps_b || ly->ffn_gate_exps_b || ly->ffn_down_exps_b)
                                ? loom_reshape(ctx, sel, 1, ne_flat) : NULL;
    const int64_t ne_x[3] = {E, 1, T};
    loom_tensor *xr = loom_reshape(ctx, x, 3, ne_x);
    if (before) xr = loom_mul(ctx, loom_repeat(ctx, xr, 1, (int)K), w); /* [E, K, T]: each expert's weighted input */
    loom_tensor *up, *gate;
    if (ly->ffn_gate_up_exps) { /* gate | up fused per expert: [2 FE, K, T] */
        loom_tensor *gu = loom_mul_mat_id(ctx, ly->ffn_gate_up_exps, xr, sel);
        const int64_t FE = loom_tensor_ne(gu, 0) / 2;
        const int64_t args[5] = {FE, (int64_t)loom_tensor_nb(gu, 1), K, (int64_t)loom_tensor_nb(gu, 2), T};
        gate = loom_cont(ctx, loom_view(ctx, gu, 0, 5, args));
        up = loom_cont(ctx, loom_view(ctx, gu, (size_t)FE * loom_tensor_nb(gu, 0), 5, args));
    } else {
        up = expert_bias(ctx, loom_mul_mat_id(ctx, ly->ffn_up_exps, xr, sel), ly->ffn_up_exps_b, sel_flat);
        gate = ly->ffn_gate_exps
                   ? expert_bias(ctx, loom_mul_mat_id(ctx, ly->ffn_gate_exps, xr, sel), ly->ffn_gate_exps_b, sel_flat)
                   : NULL;
    }
    loom_tensor *act;
    if (swiglu_limit > 0.0f) {
        /* gpt-oss (llama.cpp's swiglu_oai, alpha 1.702 and limit hard-coded there):
         * g = min(gate, limit); u = clamp(up, -limit, limit); g * sigmoid(alpha g) * (u + 1) */
        loom_tensor *g = loom_clamp(ctx, gate, -INFINITY, swiglu_limit);
        loom_tensor *u = loom_clamp(ctx, up, -swiglu_limit, swiglu_limit);
        loom_tensor *glu = loom_mul(ctx, g, loom_sigmoid(ctx, loom_scale(ctx, g, 1.702f)));
        const float one = 1.0f;
        const int64_t ne1[1] = {1};
        loom_tensor *c1 = loom_from_f32(loom_ctx_input(ctx), &one, 1, 1, ne1);
        act = loom_mul(ctx, glu, loom_add(ctx, u, c1));
    } else if (o->situ && gate) { /* kimi-k3 */
        act = llm_situ(ctx, gate, up, o->situ_beta, o->situ_lb);
    } else if (o->geglu) { /* grok */
        act = gate ? loom_mul(ctx, loom_gelu_f16(ctx, gate), up) : loom_gelu_f16(ctx, up);
    } else if (!gate) { /* experts without a gate (nemotron_h_moe): relu(up)^2 */
        act = loom_sqr(ctx, loom_relu(ctx, up));
    } else if (o->silu_limit > 0.0f) { /* step35 (llama.cpp's swiglu_clamp_exp) */
        act = llm_swiglu_limited(ctx, gate, up, o->silu_limit);
    } else if (o->reglu) { /* smallthinker: relu(gate) * up */
        act = loom_mul(ctx, loom_relu(ctx, gate), up);
    } else {
        act = loom_swiglu(ctx, gate, up);
    }
    loom_tensor *down = expert_bias(ctx, loom_mul_mat_id(ctx, ly->ffn_down_exps, act, sel), ly->ffn_down_exps_b, sel_flat);
    if (!before) down = loom_mul(ctx, down, w); /* [E, K, T] */
    loom_tensor *out = NULL;
    for (int64_t e = 0; e < K; e++) {
        const int64_t args[3] = {E, (int64_t)loom_tensor_nb(down, 2), T};
        loom_tensor *ve = loom_view(ctx, down, (size_t)e * loom_tensor_nb(down, 1), 3, args);
        out = out ? loom_add(ctx, out, ve) : (K == 1 ? loom_cont(ctx, ve) : ve);
    }
    return llm_named(out, "ffn_moe_out", il);
}
