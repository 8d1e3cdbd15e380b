/*
 * arch_rwkv.c - RWKV-6 "Finch" (rwkv6) and RWKV-7 "Goose" (rwkv7: RWKV-7 World, G1), as
 * llama.cpp's graphs. No attention: every layer is a time mix and a channel mix, each
 * reading the previous token's normed input (the token shift, per sequence in the
 * cache: two [n_embd] states per slot), and the time mix keeps a D x D state per head
 * (wkv.head_size D). h = LayerNorm(embedding) (token_embd_norm) first; logits =
 * Woutput LN(h) (output_norm with bias) last.
 *
 * RWKV-7, per layer:  x = LN(h) (attn_norm);  sx = x_prev - x;  x_i = x + sx * lerp_i for
 *               i = r, w, k, v, a, g (time_mix_lerp_fused [E, 1, 1, 6])
 *     r = Wr x_r;  k = Wk x_k;  v = Wv x_v
 *     log decay  w = -0.606531 sigmoid(w0 + W2 tanh(W1 x_w))
 *     v += (v_first - v) sigmoid(v0 + V2 V1 x_v) (layers after the first; v_first is
 *          layer 0's v)
 *     a = sigmoid(a0 + A2 A1 x_a);  g = G2 sigmoid(G1 x_g)
 *     kk = l2norm per head of k * k_k;  k = k + (a - 1) (k * k_a)
 *     y = wkv7(r, w, k, v, -kk, kk * a) (loom_rwkv_wkv7, the state per sequence)
 *     y = GroupNorm(y, heads, eps 64e-5) * ln + ln_b + v * sum_head(k * r * r_k)
 *     h += Wo (y * g)
 *     x = LN(h) (attn_norm_2);  x_k = x + (x_prev - x) * cm_lerp_k
 *     h += Wvalue relu(Wkey x_k)^2
 *   Keys: wkv.head_size, attention.{decay,iclr,value_residual_mix,gate}_lora_rank,
 *   attention.layer_norm_epsilon, feed_forward_length; token_shift_count must be 2.
 * RWKV-6, per layer: sx as above; m_i = W2_i tanh(W1 (x + sx lerp_x)) for i = w, k, v,
 *     r, g (time_mix_extra_dim wide); x_i = x + sx (m_i + lerp_i) (fused lerps or the
 *     older separate ones); r, k, v as above, g = silu(Wg x_g);
 *     y = wkv6(k, v, r, time_mix_first, decay + Wd2 tanh(Wd1 x_w)) (the decay exp(-exp))
 *     h += Wo (GroupNorm(y) * ln + ln_b) * g
 *     x = LN(h);  h += sigmoid(Wr (x + sx lerp_r)) * Wvalue relu(Wkey (x + sx lerp_k))^2
 *     and h halves after every rescale_every_n_layers-th layer.
 *   Keys: wkv.head_size, time_mix_extra_dim, time_decay_extra_dim,
 *   rescale_every_n_layers (optional), attention.layer_norm_epsilon.
 * ARWKV-7 (arwkv7: RWKV-7 time mixes distilled into a Qwen 2.5 body, ARWKV-7B), as
 * llama.cpp's arwkv7 graph: RMS norms (attention.layer_norm_rms_epsilon; no embedding
 * norm, no biases), the RWKV-7 time mix with its gate only when the file has
 * gate_lora_rank > 0 (then six fused lerps, else five: r, w, k, v, a) and its group norm
 * only when time_mix_ln is there, then a SwiGLU MLP (ffn_norm, ffn_gate / up / down)
 * instead of the channel mix; token_shift_count 1 (one shift state per sequence).
 * QRWKV-6 (rwkv6qwen2: RWKV-6 time mixes in a Qwen 2.5 body, QRWKV6 / Qwerky), as
 * llama.cpp's rwkv6qwen2 graph: RMS norms, one token shift, the RWKV-6 data-dependent
 * lerps and decay LoRA, key / value heads grouped as attention.head_count_kv says (each
 * repeated over its group), k *= 1 - decay, then gated linear attention (M = M decay +
 * k v^T, y = M^T r / sqrt(D): loom_rwkv_wkv6 with r decay / sqrt(D) as the receptance and
 * a unit bonus, corrected by v sum(r k (1 - decay)) / sqrt(D)), y * sigmoid(Wg x_g), Wo;
 * no group norm, no bonus; a SwiGLU MLP.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"
#include "quant/alloc.h"

static bool is_arwkv(const loom_model_hparams *hp) {
    return !strcmp(hp->arch, "arwkv7") || !strcmp(hp->arch, "rwkv6qwen2"); /* RMS norms, one token shift */
}

/* wkv.head_size, token_shift_count (2; arwkv7: 1), feed_forward_length and the LayerNorm
 * epsilon (arwkv7: the RMS one, read with the common keys) */
static loom_status rwkv_common_keys(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s = is_arwkv(hp) ? LOOM_OK : llm_ln_hparams(g, hp, hx, err);
    if (s) return s;
    int64_t D, shift;
    if ((s = llm_get_int_key(g, a, "wkv.head_size", true, 0, &D, err))) return s;
    if (D < 1 || D > 1024 || hp->n_embd % D)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.wkv.head_size = %lld does not divide embedding_length "
                              "%d into heads", a, (long long)D, hp->n_embd);
    if ((int64_t)hp->n_embd * D > ((int64_t)1 << 28))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s: a sequence's state of %d x %lld floats is too large", a,
                              hp->n_embd, (long long)D);
    const int64_t want = is_arwkv(hp) ? 1 : 2; /* arwkv7 shifts only into its time mix */
    if ((s = llm_get_int_key(g, a, "token_shift_count", false, want, &shift, err))) return s;
    if (shift != want)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s.token_shift_count = %lld (%s shifts %lld)", a,
                              (long long)shift, a, (long long)want);
    if (hp->n_ff < 1) return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.feed_forward_length must be > 0", a);
    hx->rwkv_head = (int)D;
    hx->rope_off = true;
    return LOOM_OK;
}

/* RWKV-6: time_mix_extra_dim, time_decay_extra_dim, rescale_every_n_layers (optional) */
loom_status llm_rwkv6_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = rwkv_common_keys(g, hp, hx, err);
    if (s) return s;
    static const char *const dims[2] = {"time_mix_extra_dim", "time_decay_extra_dim"};
    for (int i = 0; i < 2; i++) {
        int64_t v;
        if ((s = llm_get_int_key(g, hp->arch, dims[i], true, 0, &v, err))) return s;
        if (v < 1 || v > 65536)
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.%s = %lld is out of range", hp->arch, dims[i],
                                  (long long)v);
        hx->rwkv_lora[i] = (int)v;
    }
    int64_t re;
    if ((s = llm_get_int_key(g, hp->arch, "rescale_every_n_layers", false, 0, &re, err))) return s;
    if (re < 0 || re > 4096)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rescale_every_n_layers = %lld is out of range", hp->arch,
                              (long long)re);
    hx->rwkv_rescale = (int)re;
    return LOOM_OK;
}

/* rwkv6qwen2: RWKV-6's keys, one token shift, the key / value heads */
loom_status llm_rwkv6qwen2_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_rwkv6_hparams(g, hp, hx, err);
    if (s) return s;
    int64_t kv;
    if ((s = llm_get_int_key(g, hp->arch, "attention.head_count_kv", false, 0, &kv, err))) return s;
    const int64_t H = hp->n_embd / hx->rwkv_head;
    if (kv < 0 || (kv > 0 && (kv > H || H % kv)))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.head_count_kv = %lld does not divide the %lld "
                              "heads", hp->arch, (long long)kv, (long long)H);
    hx->rwkv_kv_heads = kv == 0 ? (int)H : (int)kv;
    return LOOM_OK;
}

loom_status llm_rwkv7_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const char *a = hp->arch;
    loom_status s = rwkv_common_keys(g, hp, hx, err);
    if (s) return s;
    int64_t r[4];
    static const char *const lora[4] = {"attention.decay_lora_rank", "attention.iclr_lora_rank",
                                        "attention.value_residual_mix_lora_rank", "attention.gate_lora_rank"};
    for (int i = 0; i < 4; i++) {
        /* arwkv7's gate rank is optional (llama.cpp: 0, no gate) */
        if ((s = llm_get_int_key(g, a, lora[i], !(i == 3 && is_arwkv(hp)), 0, &r[i], err))) return s;
        if (r[i] < (i == 3 && is_arwkv(hp) ? 0 : 1) || r[i] > 65536) /* arwkv7: gate rank 0, no gate */
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.%s = %lld is out of range", a, lora[i],
                                  (long long)r[i]);
        hx->rwkv_lora[i] = (int)r[i];
    }
    return LOOM_OK;
}

/* a [ne0, 1, 1, ne3] tensor (the fused lerps) */
static loom_tensor *bind4(const loom_backend *be, int64_t ne0, int64_t ne3, loom_error *err, loom_status *st,
                          const char *fmt, int il) {
    char name[LOOM_GGUF_MAX_NAME];
    snprintf(name, sizeof name, fmt, il);
    if (*st) return NULL;
    loom_tensor *t = loom_backend_get_tensor(be, name);
    if (!t) {
        *st = loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: tensor '%s' is missing", name);
        return NULL;
    }
    if (loom_tensor_ne(t, 0) != ne0 || loom_tensor_ne(t, 1) != 1 || loom_tensor_ne(t, 2) != 1 ||
        loom_tensor_ne(t, 3) != ne3) {
        *st = loom_error_set(err, LOOM_ERR_FORMAT, "model: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected "
                             "[%lld, 1, 1, %lld]", name, (long long)loom_tensor_ne(t, 0), (long long)loom_tensor_ne(t, 1),
                             (long long)loom_tensor_ne(t, 2), (long long)loom_tensor_ne(t, 3), (long long)ne0,
                             (long long)ne3);
        return NULL;
    }
    return t;
}

/* the layers' parts both versions share, their cache states, the shift taps */
static void bind_common(loom_model *m, int il, loom_error *err, loom_status *st) {
    const loom_backend *be = m->be;
    const int64_t E = m->hp.n_embd, F = m->hp.n_ff;
    llm_layer *L = &m->layers[il];
#define T1(field, n, name) L->field = llm_bind_tensor(be, true, n, 1, 1, err, st, "blk.%d." name, il)
#define T2(field, n0, n1, name) L->field = llm_bind_tensor(be, true, n0, n1, 1, err, st, "blk.%d." name, il)
    T1(attn_norm, E, "attn_norm.weight");
    T1(attn_norm_b, E, "attn_norm.bias");
    T1(attn_norm_2, E, "attn_norm_2.weight");
    T1(attn_norm_2_b, E, "attn_norm_2.bias");
    T2(rwkv.key, E, E, "time_mix_key.weight");
    T2(rwkv.value, E, E, "time_mix_value.weight");
    T2(rwkv.recept, E, E, "time_mix_receptance.weight");
    T1(rwkv.ln, E, "time_mix_ln.weight");
    T1(rwkv.ln_b, E, "time_mix_ln.bias");
    T2(rwkv.out, E, E, "time_mix_output.weight");
    T1(rwkv.cm_lerp_k, E, "channel_mix_lerp_k.weight");
    T2(rwkv.cm_key, E, F, "channel_mix_key.weight");
    T2(rwkv.cm_value, F, E, "channel_mix_value.weight");
#undef T1
#undef T2
    llm_kv_layer_type *t = &m->kv_types[il];
    t->rs_conv = (int32_t)(2 * E);                /* the two token shifts */
    t->rs_ssm = (int32_t)(E * m->hx.rwkv_head);   /* H heads of D x D */
}

static loom_status bind_io(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const int64_t E = m->hp.n_embd;
    loom_status st = llm_bind_embd_output(m, err);
    m->output_norm_b = llm_bind_tensor(be, true, E, 1, 1, err, &st, "output_norm.bias", 0);
    m->tok_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "token_embd_norm.weight", 0);
    m->tok_norm_b = llm_bind_tensor(be, true, E, 1, 1, err, &st, "token_embd_norm.bias", 0);
    return st;
}

static loom_status init_shift(loom_model *m, loom_error *err) {
    const int64_t E = m->hp.n_embd;
    m->shift_kernel = loom_malloc((size_t)(2 * E) * sizeof *m->shift_kernel);
    if (!m->shift_kernel) return loom_error_set(err, LOOM_ERR_NOMEM, "model: out of host memory");
    for (int64_t c = 0; c < E; c++) {
        m->shift_kernel[2 * c] = 1.0f; /* the previous input */
        m->shift_kernel[2 * c + 1] = 0.0f;
    }
    return LOOM_OK;
}

loom_status llm_rwkv7_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, RD = hx->rwkv_lora[0], RA = hx->rwkv_lora[1];
    const int64_t RV = hx->rwkv_lora[2], RG = hx->rwkv_lora[3];
    loom_status st = bind_io(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        bind_common(m, il, err, &st);
#define T1(field, n, name) L->field = llm_bind_tensor(be, true, n, 1, 1, err, &st, "blk.%d." name, il)
#define T2(field, n0, n1, name) L->field = llm_bind_tensor(be, true, n0, n1, 1, err, &st, "blk.%d." name, il)
        T1(rwkv.w0, E, "time_mix_w0.weight");
        T2(rwkv.w1, E, RD, "time_mix_w1.weight");
        T2(rwkv.w2, RD, E, "time_mix_w2.weight");
        T1(rwkv.a0, E, "time_mix_a0.weight");
        T2(rwkv.a1, E, RA, "time_mix_a1.weight");
        T2(rwkv.a2, RA, E, "time_mix_a2.weight");
        if (il > 0) { /* layer 0's v LoRA (the converter's copies of a's) is never used */
            T1(rwkv.v0, E, "time_mix_v0.weight");
            T2(rwkv.v1, E, RV, "time_mix_v1.weight");
            T2(rwkv.v2, RV, E, "time_mix_v2.weight");
        }
        T2(rwkv.g1, E, RG, "time_mix_g1.weight");
        T2(rwkv.g2, RG, E, "time_mix_g2.weight");
        L->rwkv.lerp = bind4(be, E, 6, err, &st, "blk.%d.time_mix_lerp_fused.weight", il);
        T1(rwkv.k_k, E, "time_mix_k_k.weight");
        T1(rwkv.k_a, E, "time_mix_k_a.weight");
        T1(rwkv.r_k, E, "time_mix_r_k.weight");
#undef T1
#undef T2
    }
    return st ? st : init_shift(m, err);
}

/* arwkv7 / rwkv6qwen2: layer il's Qwen SwiGLU MLP and its state sizes (one token shift,
 * H heads of D x D) */
static void qwen_mlp_bind(loom_model *m, int il, loom_error *err, loom_status *st) {
    const loom_backend *be = m->be;
    const int64_t E = m->hp.n_embd, F = m->hp.n_ff;
    llm_layer *L = &m->layers[il];
    L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, st, "blk.%d.ffn_norm.weight", il);
    L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, st, "blk.%d.ffn_gate.weight", il);
    L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, st, "blk.%d.ffn_up.weight", il);
    L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, st, "blk.%d.ffn_down.weight", il);
    llm_kv_layer_type *t = &m->kv_types[il];
    t->rs_conv = (int32_t)E;
    t->rs_ssm = (int32_t)(E * m->hx.rwkv_head);
}

loom_status llm_arwkv7_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, RD = hx->rwkv_lora[0], RA = hx->rwkv_lora[1];
    const int64_t RV = hx->rwkv_lora[2], RG = hx->rwkv_lora[3];
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
#define T1(field, n, name) L->field = llm_bind_tensor(be, true, n, 1, 1, err, &st, "blk.%d." name, il)
#define T2(field, n0, n1, name) L->field = llm_bind_tensor(be, true, n0, n1, 1, err, &st, "blk.%d." name, il)
        T1(attn_norm, E, "attn_norm.weight");
        T2(rwkv.key, E, E, "time_mix_key.weight");
        T2(rwkv.value, E, E, "time_mix_value.weight");
        T2(rwkv.recept, E, E, "time_mix_receptance.weight");
        T2(rwkv.out, E, E, "time_mix_output.weight");
        T1(rwkv.w0, E, "time_mix_w0.weight");
        T2(rwkv.w1, E, RD, "time_mix_w1.weight");
        T2(rwkv.w2, RD, E, "time_mix_w2.weight");
        T1(rwkv.a0, E, "time_mix_a0.weight");
        T2(rwkv.a1, E, RA, "time_mix_a1.weight");
        T2(rwkv.a2, RA, E, "time_mix_a2.weight");
        if (il > 0) {
            T1(rwkv.v0, E, "time_mix_v0.weight");
            T2(rwkv.v1, E, RV, "time_mix_v1.weight");
            T2(rwkv.v2, RV, E, "time_mix_v2.weight");
        }
        if (RG > 0) {
            T2(rwkv.g1, E, RG, "time_mix_g1.weight");
            T2(rwkv.g2, RG, E, "time_mix_g2.weight");
        }
        L->rwkv.lerp = bind4(be, E, RG > 0 ? 6 : 5, err, &st, "blk.%d.time_mix_lerp_fused.weight", il);
        T1(rwkv.k_k, E, "time_mix_k_k.weight");
        T1(rwkv.k_a, E, "time_mix_k_a.weight");
        T1(rwkv.r_k, E, "time_mix_r_k.weight");
        /* the group norm only with both of its tensors (llama.cpp's test) */
        L->rwkv.ln = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.time_mix_ln.weight", il);
        L->rwkv.ln_b = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.time_mix_ln.bias", il);
        if (!L->rwkv.ln || !L->rwkv.ln_b) L->rwkv.ln = L->rwkv.ln_b = NULL;
#undef T1
#undef T2
        qwen_mlp_bind(m, il, err, &st);
    }
    return st ? st : init_shift(m, err);
}

loom_status llm_rwkv6qwen2_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, D = hx->rwkv_head, D5 = hx->rwkv_lora[0], DD = hx->rwkv_lora[1];
    const int64_t KV = (int64_t)hx->rwkv_kv_heads * D;
    loom_status st = llm_bind_embd_output(m, err);
    m->output_norm_b = llm_bind_tensor(be, false, E, 1, 1, err, &st, "output_norm.bias", 0);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
#define T1(field, n, name) L->field = llm_bind_tensor(be, true, n, 1, 1, err, &st, "blk.%d." name, il)
#define T2(field, n0, n1, name) L->field = llm_bind_tensor(be, true, n0, n1, 1, err, &st, "blk.%d." name, il)
        T1(attn_norm, E, "attn_norm.weight");
        T1(rwkv.lerp_x, E, "time_mix_lerp_x.weight");
        T2(rwkv.w1, E, 5 * D5, "time_mix_w1.weight");
        L->rwkv.w2 = llm_bind_tensor(be, true, D5, E, 5, err, &st, "blk.%d.time_mix_w2.weight", il);
        L->rwkv.lerp = bind4(be, E, 5, err, &st, "blk.%d.time_mix_lerp_fused.weight", il);
        T1(rwkv.decay, E, "time_mix_decay.weight");
        T2(rwkv.decay_w1, E, DD, "time_mix_decay_w1.weight");
        T2(rwkv.decay_w2, DD, E, "time_mix_decay_w2.weight");
        T2(rwkv.key, E, KV, "time_mix_key.weight");
        T2(rwkv.value, E, KV, "time_mix_value.weight");
        T2(rwkv.recept, E, E, "time_mix_receptance.weight");
        T2(rwkv.gate, E, E, "time_mix_gate.weight");
        T2(rwkv.out, E, E, "time_mix_output.weight");
        L->bk = llm_bind_tensor(be, false, KV, 1, 1, err, &st, "blk.%d.time_mix_key.bias", il);
        L->bv = llm_bind_tensor(be, false, KV, 1, 1, err, &st, "blk.%d.time_mix_value.bias", il);
        L->bq = llm_bind_tensor(be, false, E, 1, 1, err, &st, "blk.%d.time_mix_receptance.bias", il);
#undef T1
#undef T2
        qwen_mlp_bind(m, il, err, &st);
    }
    return st ? st : init_shift(m, err);
}

loom_status llm_rwkv6_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    const loom_model_hparams *hp = &m->hp;
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = hp->n_embd, D = hx->rwkv_head, D5 = hx->rwkv_lora[0], DD = hx->rwkv_lora[1];
    loom_status st = bind_io(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        bind_common(m, il, err, &st);
#define T1(field, n, name) L->field = llm_bind_tensor(be, true, n, 1, 1, err, &st, "blk.%d." name, il)
#define T2(field, n0, n1, name) L->field = llm_bind_tensor(be, true, n0, n1, 1, err, &st, "blk.%d." name, il)
        T1(rwkv.lerp_x, E, "time_mix_lerp_x.weight");
        T2(rwkv.w1, E, 5 * D5, "time_mix_w1.weight");
        L->rwkv.w2 = llm_bind_tensor(be, true, D5, E, 5, err, &st, "blk.%d.time_mix_w2.weight", il);
        /* the five lerps fused [E, 1, 1, 5] (today's converter) or one tensor each */
        char name[64];
        snprintf(name, sizeof name, "blk.%d.time_mix_lerp_fused.weight", il);
        if (loom_backend_get_tensor(be, name)) {
            L->rwkv.lerp = bind4(be, E, 5, err, &st, "blk.%d.time_mix_lerp_fused.weight", il);
        } else {
            static const char *const five[5] = {"w", "k", "v", "r", "g"};
            for (int i = 0; i < 5; i++) {
                char fmt[64];
                snprintf(fmt, sizeof fmt, "blk.%%d.time_mix_lerp_%s.weight", five[i]);
                L->rwkv.lerp5[i] = llm_bind_tensor(be, true, E, 1, 1, err, &st, fmt, il);
            }
        }
        T2(rwkv.first, D, E / D, "time_mix_first.weight");
        T1(rwkv.decay, E, "time_mix_decay.weight");
        T2(rwkv.decay_w1, E, DD, "time_mix_decay_w1.weight");
        T2(rwkv.decay_w2, DD, E, "time_mix_decay_w2.weight");
        T2(rwkv.gate, E, E, "time_mix_gate.weight");
        T1(rwkv.cm_lerp_r, E, "channel_mix_lerp_r.weight");
        T2(rwkv.cm_recept, E, E, "channel_mix_receptance.weight");
#undef T1
#undef T2
    }
    return st ? st : init_shift(m, err);
}

/* x [E, T]'s previous token per sequence, from the state half `half` (0 time mix, 1
 * channel mix) of layer il's shift state rc [2E, S]; the new state goes back */
static loom_tensor *token_shift(loom_model *m, loom_ctx *ctx, const llm_inputs *in, loom_tensor *rc, bool real,
                                int half, loom_tensor *x, int il) {
    const int64_t E = m->hp.n_embd, T = loom_tensor_ne(x, 1), S = loom_tensor_ne(rc, 1);
    const int64_t nk[2] = {2, E}, vs[3] = {E, (int64_t)loom_tensor_nb(rc, 1), S};
    loom_tensor *kern = loom_from_f32(loom_ctx_input(ctx), m->shift_kernel, (size_t)(2 * E), 2, nk);
    loom_tensor *sv = loom_view(ctx, rc, (size_t)half * (size_t)E * sizeof(float), 3, vs);
    loom_tensor *cv = llm_named(loom_ssm_conv(ctx, x, kern, sv, in->seq), half ? "ffn_shift" : "att_shift", il);
    const int64_t ns[3] = {E, E * (int64_t)sizeof(float), S};
    if (real)
        loom_ctx_forward(ctx, loom_cpy(ctx, loom_view(ctx, cv, (size_t)E * (size_t)T * sizeof(float), 3, ns), sv));
    const int64_t pv[3] = {E, E * (int64_t)sizeof(float), T};
    return loom_view(ctx, cv, 0, 3, pv);
}

/* the i-th lerp row of lerp_fused [E, 1, 1, 6] */
static loom_tensor *lerp_row(loom_ctx *ctx, loom_tensor *lerp, int i) {
    const int64_t E = loom_tensor_ne(lerp, 0);
    return loom_view(ctx, lerp, (size_t)i * (size_t)E * sizeof(float), 1, &E);
}

/* layer il's wkv state [E D, S] (a dry run has no cache buffers: a stand-in of the same
 * shape; *real false) */
static loom_tensor *wkv_state(loom_model *m, loom_ctx *ctx, int il, bool *real) {
    llm_kv_cache *kv = &m->kv;
    *real = kv->rs_ssm && kv->rs_ssm[il];
    const int64_t ne_s[2] = {(int64_t)m->hp.n_embd * m->hx.rwkv_head, kv->n_seq};
    return *real ? kv->rs_ssm[il] : loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne_s);
}

/* the wkv result y [E, T + D S] (in place, ip: [E, T]): its new states back to rs, the
 * outputs [E, T] through the group norm (one group per head, eps 64e-5) * ln + ln_b */
static loom_tensor *wkv_out(loom_model *m, loom_ctx *ctx, int il, loom_tensor *y, loom_tensor *rs, bool real, bool ip) {
    const llm_layer *ly = &m->layers[il];
    const int64_t E = m->hp.n_embd, D = m->hx.rwkv_head, H = E / D, S = m->kv.n_seq;
    const int64_t T = loom_tensor_ne(y, 1) - (ip ? 0 : D * S);
    const int64_t nss = E * D * S;
    if (real && !ip)
        loom_ctx_forward(ctx, loom_cpy(ctx, loom_view(ctx, y, (size_t)E * (size_t)T * sizeof(float), 1, &nss),
                                       loom_view(ctx, rs, 0, 1, &nss)));
    const int64_t ne_y[2] = {E, T}, vy[3] = {E, E * (int64_t)sizeof(float), T}, n3[3] = {D, H, T};
    loom_tensor *o = loom_cont(ctx, loom_view(ctx, y, 0, 3, vy));
    if (!ly->rwkv.ln) return o; /* arwkv7 without the group norm */
    o = loom_reshape(ctx, loom_layer_norm(ctx, loom_reshape(ctx, o, 3, n3), NULL, NULL, 64e-5f), 2, ne_y);
    return loom_add(ctx, loom_mul(ctx, o, ly->rwkv.ln), ly->rwkv.ln_b);
}

static loom_tensor *time_mix(loom_model *m, loom_ctx *ctx, const llm_inputs *in, int il, loom_tensor *x,
                             loom_tensor *prev, loom_tensor **v_first) {
    const llm_layer *ly = &m->layers[il];
    const int64_t E = m->hp.n_embd, T = loom_tensor_ne(x, 1), D = m->hx.rwkv_head, H = E / D;
    loom_tensor *sx = loom_sub(ctx, prev, x);
    loom_tensor *xs[6] = {NULL};
    const int nl = (int)loom_tensor_ne(ly->rwkv.lerp, 3); /* 6, or 5 without the gate (arwkv7) */
    for (int i = 0; i < nl; i++) xs[i] = loom_add(ctx, loom_mul(ctx, sx, lerp_row(ctx, ly->rwkv.lerp, i)), x);
    loom_tensor *r = loom_mul_mat(ctx, ly->rwkv.recept, xs[0]);
    loom_tensor *w = loom_add(ctx, loom_mul_mat(ctx, ly->rwkv.w2, loom_tanh(ctx, loom_mul_mat(ctx, ly->rwkv.w1, xs[1]))),
                              ly->rwkv.w0);
    w = loom_scale(ctx, loom_sigmoid(ctx, w), -0.606531f); /* the log of the decay */
    loom_tensor *k = loom_mul_mat(ctx, ly->rwkv.key, xs[2]);
    loom_tensor *v = loom_mul_mat(ctx, ly->rwkv.value, xs[3]);
    if (!*v_first) {
        *v_first = v;
    } else {
        loom_tensor *mix = loom_sigmoid(
            ctx, loom_add(ctx, loom_mul_mat(ctx, ly->rwkv.v2, loom_mul_mat(ctx, ly->rwkv.v1, xs[3])), ly->rwkv.v0));
        v = loom_add(ctx, v, loom_mul(ctx, loom_sub(ctx, *v_first, v), mix));
    }
    loom_tensor *g = ly->rwkv.g1 ? loom_mul_mat(ctx, ly->rwkv.g2, loom_sigmoid(ctx, loom_mul_mat(ctx, ly->rwkv.g1, xs[5])))
                                 : NULL;
    loom_tensor *a = loom_sigmoid(
        ctx, loom_add(ctx, loom_mul_mat(ctx, ly->rwkv.a2, loom_mul_mat(ctx, ly->rwkv.a1, xs[4])), ly->rwkv.a0));
    const int64_t n3[3] = {D, H, T};
    /* kk = l2norm per head of k * k_k (llama.cpp's ggml_l2_norm, eps 1e-12) */
    loom_tensor *kk = loom_reshape(ctx, loom_mul(ctx, k, ly->rwkv.k_k), 3, n3);
    loom_tensor *nrm = loom_clamp(ctx, loom_sqrt(ctx, loom_sum_rows(ctx, loom_sqr(ctx, kk))), 1e-12f, FLT_MAX);
    kk = loom_div(ctx, kk, nrm);
    loom_tensor *ka = loom_mul(ctx, k, ly->rwkv.k_a);
    k = loom_add(ctx, k, loom_sub(ctx, loom_mul(ctx, a, ka), ka));
    bool real;
    loom_tensor *rs = wkv_state(m, ctx, il, &real);
    loom_tensor *r3 = loom_reshape(ctx, r, 3, n3), *k3 = loom_reshape(ctx, k, 3, n3);
    loom_tensor *v3 = loom_reshape(ctx, v, 3, n3), *a3 = loom_reshape(ctx, a, 3, n3);
    const bool ip = llm_rs_in_place(m, il);
    loom_tensor *w3 = loom_reshape(ctx, w, 3, n3), *na = loom_neg(ctx, kk), *kka = loom_mul(ctx, kk, a3);
    loom_tensor *y = llm_named(ip ? loom_rwkv_wkv7_inplace(ctx, r3, w3, k3, v3, na, kka, rs, in->seq)
                                  : loom_rwkv_wkv7(ctx, r3, w3, k3, v3, na, kka, rs, in->seq),
                               "wkv7", il);
    loom_tensor *o = wkv_out(m, ctx, il, y, rs, real, ip);
    const int64_t ne_y[2] = {E, T}, nrk[2] = {D, H};
    loom_tensor *rk = loom_sum_rows(ctx, loom_mul(ctx, loom_mul(ctx, k3, r3), loom_reshape(ctx, ly->rwkv.r_k, 2, nrk)));
    o = loom_add(ctx, o, loom_reshape(ctx, loom_mul(ctx, v3, rk), 2, ne_y));
    return loom_mul_mat(ctx, ly->rwkv.out, g ? loom_mul(ctx, o, g) : o);
}

/* RWKV-6's time mix: the data-dependent lerps, decay LoRA, wkv6 with the bonus, the gate */
static loom_tensor *time_mix6(loom_model *m, loom_ctx *ctx, const llm_inputs *in, int il, loom_tensor *x,
                              loom_tensor *prev) {
    const llm_layer *ly = &m->layers[il];
    const int64_t E = m->hp.n_embd, T = loom_tensor_ne(x, 1), D = m->hx.rwkv_head, H = E / D, D5 = m->hx.rwkv_lora[0];
    loom_tensor *sx = loom_sub(ctx, prev, x);
    loom_tensor *t5 = loom_tanh(ctx, loom_mul_mat(ctx, ly->rwkv.w1, loom_add(ctx, loom_mul(ctx, sx, ly->rwkv.lerp_x), x)));
    loom_tensor *xs[5]; /* w, k, v, r, g */
    for (int i = 0; i < 5; i++) {
        const int64_t va[3] = {D5, (int64_t)loom_tensor_nb(t5, 1), T};
        const int64_t wa[3] = {D5, (int64_t)loom_tensor_nb(ly->rwkv.w2, 1), E};
        loom_tensor *w2i = loom_view(ctx, ly->rwkv.w2, (size_t)i * loom_tensor_nb(ly->rwkv.w2, 2), 3, wa);
        loom_tensor *mi = loom_mul_mat(ctx, w2i, loom_cont(ctx, loom_view(ctx, t5, (size_t)(i * D5) * sizeof(float), 3, va)));
        loom_tensor *li = ly->rwkv.lerp ? lerp_row(ctx, ly->rwkv.lerp, i) : ly->rwkv.lerp5[i];
        xs[i] = loom_add(ctx, loom_mul(ctx, loom_add(ctx, mi, li), sx), x);
    }
    const int64_t n3[3] = {D, H, T};
    loom_tensor *r = loom_reshape(ctx, loom_mul_mat(ctx, ly->rwkv.recept, xs[3]), 3, n3);
    loom_tensor *k = loom_reshape(ctx, loom_mul_mat(ctx, ly->rwkv.key, xs[1]), 3, n3);
    loom_tensor *v = loom_reshape(ctx, loom_mul_mat(ctx, ly->rwkv.value, xs[2]), 3, n3);
    loom_tensor *g = loom_silu(ctx, loom_mul_mat(ctx, ly->rwkv.gate, xs[4]));
    loom_tensor *w = loom_add(ctx, loom_mul_mat(ctx, ly->rwkv.decay_w2, loom_tanh(ctx, loom_mul_mat(ctx, ly->rwkv.decay_w1, xs[0]))),
                              ly->rwkv.decay); /* the decay is exp(-exp(w)), in the op */
    bool real;
    loom_tensor *rs = wkv_state(m, ctx, il, &real);
    const bool ip = llm_rs_in_place(m, il);
    loom_tensor *w3 = loom_reshape(ctx, w, 3, n3);
    loom_tensor *y = llm_named(ip ? loom_rwkv_wkv6_inplace(ctx, k, v, r, ly->rwkv.first, w3, rs, in->seq)
                                  : loom_rwkv_wkv6(ctx, k, v, r, ly->rwkv.first, w3, rs, in->seq),
                               "wkv6", il);
    return loom_mul_mat(ctx, ly->rwkv.out, loom_mul(ctx, wkv_out(m, ctx, il, y, rs, real, ip), g));
}

/* QRWKV-6's time mix: RWKV-6's lerps and decay, grouped k / v, gated linear attention */
static loom_tensor *time_mix_q(loom_model *m, loom_ctx *ctx, const llm_inputs *in, int il, loom_tensor *x,
                               loom_tensor *prev) {
    const llm_layer *ly = &m->layers[il];
    const llm_hparams_x *hx = &m->hx;
    const int64_t E = m->hp.n_embd, T = loom_tensor_ne(x, 1), D = hx->rwkv_head, H = E / D, D5 = hx->rwkv_lora[0];
    const int64_t KVH = hx->rwkv_kv_heads;
    loom_tensor *sx = loom_sub(ctx, prev, x);
    loom_tensor *t5 = loom_tanh(ctx, loom_mul_mat(ctx, ly->rwkv.w1, loom_add(ctx, loom_mul(ctx, sx, ly->rwkv.lerp_x), x)));
    loom_tensor *xs[5]; /* w, k, v, r, g */
    for (int i = 0; i < 5; i++) {
        const int64_t va[3] = {D5, (int64_t)loom_tensor_nb(t5, 1), T};
        const int64_t wa[3] = {D5, (int64_t)loom_tensor_nb(ly->rwkv.w2, 1), E};
        loom_tensor *w2i = loom_view(ctx, ly->rwkv.w2, (size_t)i * loom_tensor_nb(ly->rwkv.w2, 2), 3, wa);
        loom_tensor *mi = loom_mul_mat(ctx, w2i, loom_cont(ctx, loom_view(ctx, t5, (size_t)(i * D5) * sizeof(float), 3, va)));
        xs[i] = loom_add(ctx, loom_mul(ctx, loom_add(ctx, mi, lerp_row(ctx, ly->rwkv.lerp, i)), sx), x);
    }
    const int64_t n3[3] = {D, H, T}, nkv[4] = {D, 1, KVH, T};
    loom_tensor *r = llm_linear(ctx, ly->rwkv.recept, ly->bq, xs[3]);
    loom_tensor *k = llm_linear(ctx, ly->rwkv.key, ly->bk, xs[1]);
    loom_tensor *v = llm_linear(ctx, ly->rwkv.value, ly->bv, xs[2]);
    loom_tensor *g = loom_sigmoid(ctx, loom_mul_mat(ctx, ly->rwkv.gate, xs[4]));
    if (KVH != H) { /* each key / value head repeated over its group of H / KVH heads */
        k = loom_repeat(ctx, loom_reshape(ctx, k, 4, nkv), 1, (int)(H / KVH));
        v = loom_repeat(ctx, loom_reshape(ctx, v, 4, nkv), 1, (int)(H / KVH));
    }
    k = loom_reshape(ctx, loom_cont(ctx, k), 3, n3);
    v = loom_reshape(ctx, loom_cont(ctx, v), 3, n3);
    r = loom_reshape(ctx, r, 3, n3);
    loom_tensor *wr = loom_add(ctx, loom_mul_mat(ctx, ly->rwkv.decay_w2, loom_tanh(ctx, loom_mul_mat(ctx, ly->rwkv.decay_w1, xs[0]))),
                               ly->rwkv.decay); /* the decay is exp(-exp(wr)) */
    loom_tensor *w3 = loom_reshape(ctx, wr, 3, n3);
    loom_tensor *dec = loom_exp(ctx, loom_neg(ctx, loom_exp(ctx, w3))); /* [D, H, T] */
    const float one = 1.0f, scale = 1.0f / sqrtf((float)D);
    const int64_t ne1[1] = {1};
    loom_tensor *c1 = loom_from_f32(loom_ctx_input(ctx), &one, 1, 1, ne1);
    loom_tensor *omd = loom_add(ctx, loom_neg(ctx, dec), c1); /* 1 - decay */
    k = loom_mul(ctx, k, omd);                   /* k (1 - decay) */
    /* gated linear attention through wkv6: the receptance r decay / sqrt(D), a unit bonus,
     * and the bonus's excess r k decay v removed: + v sum(r k (1 - decay)) / sqrt(D) */
    loom_tensor *rq = loom_scale(ctx, loom_mul(ctx, r, dec), scale);
    const int64_t nu[2] = {D, H};
    loom_tensor *u = loom_add(ctx, loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, nu), c1);
    bool real;
    loom_tensor *rs = wkv_state(m, ctx, il, &real);
    const bool ip = llm_rs_in_place(m, il);
    loom_tensor *y = llm_named(ip ? loom_rwkv_wkv6_inplace(ctx, k, v, loom_cont(ctx, rq), u, w3, rs, in->seq)
                                  : loom_rwkv_wkv6(ctx, k, v, loom_cont(ctx, rq), u, w3, rs, in->seq),
                               "gla", il);
    const int64_t S = m->kv.n_seq, nss = E * D * S;
    if (real && !ip)
        loom_ctx_forward(ctx, loom_cpy(ctx, loom_view(ctx, y, (size_t)E * (size_t)T * sizeof(float), 1, &nss),
                                       loom_view(ctx, rs, 0, 1, &nss)));
    const int64_t vy[3] = {E, E * (int64_t)sizeof(float), T}, ne_y[2] = {E, T};
    loom_tensor *o = loom_reshape(ctx, loom_cont(ctx, loom_view(ctx, y, 0, 3, vy)), 3, n3);
    loom_tensor *corr = loom_scale(ctx, loom_sum_rows(ctx, loom_mul(ctx, loom_mul(ctx, r, k), omd)), scale); /* [1, H, T] */
    o = loom_reshape(ctx, loom_add(ctx, o, loom_mul(ctx, v, corr)), 2, ne_y);
    return loom_mul_mat(ctx, ly->rwkv.out, loom_mul(ctx, o, g));
}

/* QRWKV-6: RMS norms, the time mix above, a SwiGLU MLP */
loom_tensor *llm_rwkv6qwen2_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    llm_kv_cache *kv = &m->kv;
    const float eps = hp->rms_eps;
    const int64_t E = hp->n_embd, S = kv->n_seq;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        const bool real = kv->rs_conv && kv->rs_conv[il];
        const int64_t ne_rc[2] = {E, S};
        loom_tensor *rc = real ? kv->rs_conv[il] : loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne_rc);
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        loom_tensor *prev = token_shift(m, ctx, &in, rc, real, 0, x, il);
        h = llm_named(loom_add(ctx, time_mix_q(m, ctx, &in, il, x, prev), h), "ffn_inp", il);
        if (il == hp->n_layer - 1) h = loom_get_rows(ctx, h, in.outs);
        x = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        h = llm_named(loom_add(ctx, llm_swiglu_mlp(ctx, ly->ffn_gate, ly->ffn_up, ly->ffn_down, x), h), "l_out", il);
    }
    h = loom_rms_norm(ctx, h, m->output_norm, eps);
    if (m->output_norm_b) h = loom_add(ctx, h, m->output_norm_b);
    return llm_named(loom_mul_mat(ctx, m->output, llm_named(h, "result_norm", -1)), "result_output", -1);
}

/* both versions' graphs: v6 (RWKV-6) or 7 */
static loom_tensor *rwkv_build(loom_model *m, loom_ctx *ctx, const llm_batch *b, int version) {
    const loom_model_hparams *hp = &m->hp;
    llm_kv_cache *kv = &m->kv;
    const float eps = hp->rms_eps;
    const int64_t E = hp->n_embd, S = kv->n_seq;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    h = loom_layer_norm(ctx, h, m->tok_norm, m->tok_norm_b, eps);
    loom_tensor *v_first = NULL;
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        const bool real = kv->rs_conv && kv->rs_conv[il];
        const int64_t ne_rc[2] = {2 * E, S};
        loom_tensor *rc = real ? kv->rs_conv[il] : loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne_rc);
        loom_tensor *x = llm_named(loom_layer_norm(ctx, h, ly->attn_norm, ly->attn_norm_b, eps), "attn_norm", il);
        loom_tensor *prev = token_shift(m, ctx, &in, rc, real, 0, x, il);
        loom_tensor *tm = version == 6 ? time_mix6(m, ctx, &in, il, x, prev) : time_mix(m, ctx, &in, il, x, prev, &v_first);
        h = llm_named(loom_add(ctx, tm, h), "ffn_inp", il);
        x = llm_named(loom_layer_norm(ctx, h, ly->attn_norm_2, ly->attn_norm_2_b, eps), "ffn_norm", il);
        prev = token_shift(m, ctx, &in, rc, real, 1, x, il);
        if (il == hp->n_layer - 1) {
            h = loom_get_rows(ctx, h, in.outs);
            x = loom_get_rows(ctx, x, in.outs);
            prev = loom_get_rows(ctx, prev, in.outs);
        }
        loom_tensor *sx = loom_sub(ctx, prev, x);
        loom_tensor *xk = loom_add(ctx, loom_mul(ctx, sx, ly->rwkv.cm_lerp_k), x);
        loom_tensor *ck = loom_sqr(ctx, loom_relu(ctx, loom_mul_mat(ctx, ly->rwkv.cm_key, xk)));
        loom_tensor *cm = loom_mul_mat(ctx, ly->rwkv.cm_value, ck);
        if (version == 6) { /* RWKV-6: gated by sigmoid(Wr (x + sx lerp_r)) */
            loom_tensor *xr = loom_add(ctx, loom_mul(ctx, sx, ly->rwkv.cm_lerp_r), x);
            cm = loom_mul(ctx, loom_sigmoid(ctx, loom_mul_mat(ctx, ly->rwkv.cm_recept, xr)), cm);
        }
        h = llm_named(loom_add(ctx, cm, h), "l_out", il);
        if (version == 6 && m->hx.rwkv_rescale > 0 && (il + 1) % m->hx.rwkv_rescale == 0) h = loom_scale(ctx, h, 0.5f);
    }
    return llm_ln_output(m, ctx, h);
}

/* ARWKV-7: RMS norms, the RWKV-7 time mix, a SwiGLU MLP */
loom_tensor *llm_arwkv7_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) {
    const loom_model_hparams *hp = &m->hp;
    llm_kv_cache *kv = &m->kv;
    const float eps = hp->rms_eps;
    const int64_t E = hp->n_embd, S = kv->n_seq;
    llm_inputs in;
    llm_graph_inputs(m, ctx, b, &in);
    loom_tensor *h = llm_named(loom_get_rows(ctx, m->tok_embd, in.tok), "inp_embd", -1);
    loom_tensor *v_first = NULL;
    for (int il = 0; il < hp->n_layer; il++) {
        const llm_layer *ly = &m->layers[il];
        const bool real = kv->rs_conv && kv->rs_conv[il];
        const int64_t ne_rc[2] = {E, S};
        loom_tensor *rc = real ? kv->rs_conv[il] : loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne_rc);
        loom_tensor *x = llm_named(loom_rms_norm(ctx, h, ly->attn_norm, eps), "attn_norm", il);
        loom_tensor *prev = token_shift(m, ctx, &in, rc, real, 0, x, il);
        h = llm_named(loom_add(ctx, time_mix(m, ctx, &in, il, x, prev, &v_first), h), "ffn_inp", il);
        if (il == hp->n_layer - 1) h = loom_get_rows(ctx, h, in.outs);
        x = llm_named(loom_rms_norm(ctx, h, ly->ffn_norm, eps), "ffn_norm", il);
        h = llm_named(loom_add(ctx, llm_swiglu_mlp(ctx, ly->ffn_gate, ly->ffn_up, ly->ffn_down, x), h), "l_out", il);
    }
    return llm_llama_output(m, ctx, h);
}

loom_tensor *llm_rwkv7_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) { return rwkv_build(m, ctx, b, 7); }
loom_tensor *llm_rwkv6_build(loom_model *m, loom_ctx *ctx, const llm_batch *b) { return rwkv_build(m, ctx, b, 6); }
