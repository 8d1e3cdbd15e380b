/*
 * embed_load.c - hyperparameters and weights of the embedding models (loom_embed.h):
 * the BERT encoders (bert, nomic-bert) and the decoder-style ones (llama, mistral,
 * qwen2, qwen3 files with a `<arch>.pooling_type`; gemma-embedding; llama-embed). Every key and
 * shape is checked; errors name the key or tensor.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed_internal.h"
#include "model_internal.h"
#include "quant/alloc.h"

/* ------------------------------------------------------------------ hyperparameters */

static loom_status key_int(const loom_gguf *g, const char *arch, const char *key, bool required, int64_t def,
                           int64_t lo, int64_t hi, int64_t *out, loom_error *err) {
    char full[160];
    snprintf(full, sizeof full, "%s.%s", arch, key);
    int64_t ki = loom_gguf_find_key(g, full);
    if (ki < 0) {
        if (required) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "embed: required key '%s' is missing", full);
        *out = def;
        return LOOM_OK;
    }
    int64_t v;
    if (loom_gguf_kv_int(g, ki, &v))
        return loom_error_set(err, LOOM_ERR_FORMAT, "embed: key '%s' must be an integer (is %s)", full,
                              loom_gguf_vtype_name(loom_gguf_kv_type(g, ki)));
    if (v < lo || v > hi)
        return loom_error_set(err, LOOM_ERR_FORMAT, "embed: %s = %lld is out of range [%lld, %lld]", full,
                              (long long)v, (long long)lo, (long long)hi);
    *out = v;
    return LOOM_OK;
}

static loom_status key_float(const loom_gguf *g, const char *arch, const char *key, double def, double *out,
                             loom_error *err) {
    char full[160];
    snprintf(full, sizeof full, "%s.%s", arch, key);
    int64_t ki = loom_gguf_find_key(g, full);
    if (ki < 0) {
        *out = def;
        return LOOM_OK;
    }
    double v;
    if (loom_gguf_kv_float(g, ki, &v)) {
        int64_t iv;
        if (loom_gguf_kv_int(g, ki, &iv))
            return loom_error_set(err, LOOM_ERR_FORMAT, "embed: key '%s' must be a number", full);
        v = (double)iv;
    }
    if (!isfinite(v)) return loom_error_set(err, LOOM_ERR_FORMAT, "embed: key '%s' is not finite", full);
    *out = v;
    return LOOM_OK;
}

static bool has_key(const loom_gguf *g, const char *arch, const char *key) {
    char full[160];
    snprintf(full, sizeof full, "%s.%s", arch, key);
    return loom_gguf_find_key(g, full) >= 0;
}

bool emb_arch_of(const loom_gguf *g, const char *arch, bool any_decoder, emb_arch *out) {
    static const char *const dec[] = {"llama", "mistral", "qwen2", "qwen3"};
    emb_arch a;
    if (!arch) return false;
    if (!strcmp(arch, "bert") || !strcmp(arch, "jina-bert-v2")) a = EMB_BERT;
    else if (!strcmp(arch, "nomic-bert") || !strcmp(arch, "nomic-bert-moe") || !strcmp(arch, "jina-bert-v3"))
        a = EMB_NOMIC_BERT; /* jina-bert-v3 (jina-embeddings-v3): nomic-bert's rope with a GELU MLP */
    else if (!strcmp(arch, "gemma-embedding")) a = EMB_GEMMA;
    else if (!strcmp(arch, "llama-embed")) a = EMB_DECODER; /* llama-embed-nemotron: always an embedding model */
    else if (!strcmp(arch, "modern-bert")) a = EMB_MODERN;
    else if (!strcmp(arch, "t5encoder")) a = EMB_T5;
    else {
        size_t i = 0;
        while (i < sizeof dec / sizeof dec[0] && strcmp(arch, dec[i])) i++;
        /* a decoder is an embedding model when its converter wrote a pooling type
         * (sentence-transformers' Pooling module), as Ollama decides */
        if (i == sizeof dec / sizeof dec[0] || !g || (!any_decoder && !has_key(g, arch, "pooling_type"))) return false;
        a = EMB_DECODER;
    }
    if (out) *out = a;
    return true;
}

/* The keys every family has: embedding_length, block_count (= the backend's),
 * attention.head_count, pooling_type (mean when absent, 0-3). */
static loom_status base_keys(loom_embedder *e, const loom_gguf *g, const char *arch, int64_t *E, int64_t *L,
                             int64_t *H, int64_t *pool, loom_error *err) {
    loom_status s;
    if ((s = key_int(g, arch, "embedding_length", true, 0, 1, EMB_MAX_DIM, E, err))) return s;
    if ((s = key_int(g, arch, "block_count", true, 0, 1, 4096, L, err))) return s;
    if (*L != loom_backend_block_count(e->be))
        return loom_error_set(err, LOOM_ERR_FORMAT, "embed: block_count %lld disagrees with the backend (%d)",
                              (long long)*L, loom_backend_block_count(e->be));
    if ((s = key_int(g, arch, "attention.head_count", true, 0, 1, 65536, H, err))) return s;
    if ((s = key_int(g, arch, "pooling_type", false, LOOM_POOLING_MEAN, 0, 1000, pool, err))) return s;
    if (*pool > LOOM_POOLING_LAST)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "embed: %s.pooling_type %lld is not supported (0-3)", arch,
                              (long long)*pool);
    return LOOM_OK;
}

/* nomic-bert-moe: the expert layers' keys (llama.cpp's names) */
static loom_status moe_keys(emb_hparams *hp, const loom_gguf *g, const char *arch, loom_error *err) {
    int64_t every, ne = 0, nu = 0;
    double scale;
    loom_status s;
    hp->gelu_ffn = true;
    if ((s = key_int(g, arch, "moe_every_n_layers", false, 0, 0, 4096, &every, err))) return s;
    if (every > 0) {
        if ((s = key_int(g, arch, "expert_count", true, 0, 1, 4096, &ne, err))) return s;
        if ((s = key_int(g, arch, "expert_used_count", true, 0, 1, ne, &nu, err))) return s;
    }
    if ((s = key_float(g, arch, "expert_weights_scale", 0.0, &scale, err))) return s;
    if (!(scale >= 0 && scale < 1e6))
        return loom_error_set(err, LOOM_ERR_FORMAT, "embed: %s.expert_weights_scale = %g is out of range", arch, scale);
    hp->moe_every = (int)every;
    hp->n_expert = (int)ne;
    hp->n_expert_used = (int)nu;
    hp->expert_weights_scale = (float)scale;
    return LOOM_OK;
}

/* modern-bert: a symmetric window on all but every sliding_window_pattern-th layer (the
 * first of each period global), rope.freq_base_swa on those (llama.cpp's default 10000),
 * hidden_activation naming the MLP's gate (llama.cpp's table: gelu / geglu, silu / swish /
 * swiglu, reglu; absent or another name: GELU). */
static loom_status modern_keys(emb_hparams *hp, const loom_gguf *g, const char *arch, loom_error *err) {
    int64_t n_swa, period;
    double base_swa;
    loom_status s;
    if ((s = key_int(g, arch, "attention.sliding_window", false, 0, 0, 1 << 24, &n_swa, err))) return s;
    if ((s = key_int(g, arch, "attention.sliding_window_pattern", false, 3, 0, 1 << 16, &period, err))) return s;
    if ((s = key_float(g, arch, "rope.freq_base_swa", 10000.0, &base_swa, err))) return s;
    if (!(base_swa > 1))
        return loom_error_set(err, LOOM_ERR_FORMAT, "embed: %s.rope.freq_base_swa = %g is out of range", arch, base_swa);
    hp->n_swa = (int)n_swa;
    hp->swa_period = n_swa > 0 ? (int)period : -1;
    hp->swa_dense_first = true;
    hp->rope_base_swa = (float)base_swa;
    hp->glu = EMB_GLU_GELU;
    char key[160];
    snprintf(key, sizeof key, "%s.hidden_activation", arch);
    loom_gguf_str act;
    if (loom_gguf_get_str(g, key, &act) == LOOM_OK) {
        static const struct { const char *name; emb_glu glu; } acts[] = {
            {"gelu", EMB_GLU_GELU}, {"geglu", EMB_GLU_GELU}, {"silu", EMB_GLU_SILU}, {"swish", EMB_GLU_SILU},
            {"swiglu", EMB_GLU_SILU}, {"reglu", EMB_GLU_RELU}};
        for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
            if (act.len == strlen(acts[i].name) && !memcmp(act.ptr, acts[i].name, act.len)) hp->glu = acts[i].glu;
        if (act.len == 4 && !memcmp(act.ptr, "relu", 4)) /* llama.cpp: an ungated ReLU on a gated ffn_up */
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "embed: %s hidden_activation 'relu' (ungated) is not "
                                  "supported", arch);
    }
    return LOOM_OK;
}

/* bert / nomic-bert / nomic-bert-moe / jina-bert-v2 / jina-bert-v3 / modern-bert */
static loom_status encoder_hparams(loom_embedder *e, const loom_gguf *g, const char *arch, loom_error *err) {
    emb_hparams *hp = &e->hp;
    int64_t E, L, H, F, ctx_train, pool, rot;
    loom_status s;
    if ((s = base_keys(e, g, arch, &E, &L, &H, &pool, err))) return s;
    if (E % H)
        return loom_error_set(err, LOOM_ERR_FORMAT, "embed: embedding_length %lld is not a multiple of head_count %lld",
                              (long long)E, (long long)H);
    if ((!strcmp(arch, "nomic-bert-moe") || !strcmp(arch, "jina-bert-v3")) && (s = moe_keys(hp, g, arch, err)))
        return s;
    int64_t hkv;
    if ((s = key_int(g, arch, "attention.head_count_kv", false, H, 1, 65536, &hkv, err))) return s;
    if (hkv != H)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "embed: head_count_kv %lld != head_count %lld",
                              (long long)hkv, (long long)H);
    if ((s = key_int(g, arch, "feed_forward_length", true, 0, 1, EMB_MAX_DIM * 4, &F, err))) return s;
    if ((s = key_int(g, arch, "context_length", hp->arch == EMB_BERT, 512, 1, 1 << 24, &ctx_train, err)))
        return s;
    if ((s = key_int(g, arch, "rope.dimension_count", false, E / H, 0, E / H, &rot, err))) return s;
    if (rot % 2) return loom_error_set(err, LOOM_ERR_FORMAT, "embed: %s.rope.dimension_count %lld is odd", arch, (long long)rot);
    char key[160];
    snprintf(key, sizeof key, "%s.attention.causal", arch);
    bool causal = false;
    if (loom_gguf_find_key(g, key) >= 0) {
        if (loom_gguf_get_bool(g, key, &causal))
            return loom_error_set(err, LOOM_ERR_FORMAT, "embed: key '%s' must be a boolean", key);
        if (causal)
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "embed: %s with causal attention is not supported", arch);
    }
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    loom_gguf_str st;
    if (loom_gguf_get_str(g, key, &st) == LOOM_OK && !(st.len == 4 && !memcmp(st.ptr, "none", 4)))
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "embed: rope scaling '%.*s' is not supported",
                              (int)(st.len > 32 ? 32 : st.len), st.ptr);
    double eps, base;
    if ((s = key_float(g, arch, "attention.layer_norm_epsilon", 1e-12, &eps, err))) return s;
    if (!(eps > 0 && eps < 1))
        return loom_error_set(err, LOOM_ERR_FORMAT, "embed: %s.attention.layer_norm_epsilon = %g is out of range", arch,
                              eps);
    if ((s = key_float(g, arch, "rope.freq_base", 10000.0, &base, err))) return s;
    if (!(base > 1)) return loom_error_set(err, LOOM_ERR_FORMAT, "embed: %s.rope.freq_base = %g is out of range", arch, base);
    if (!strcmp(arch, "jina-bert-v2")) { /* ALiBi; llama.cpp fixes the max bias at 8 */
        double mb;
        if ((s = key_float(g, arch, "attention.max_alibi_bias", 8.0, &mb, err))) return s;
        if (!(mb > 0 && mb <= 64))
            return loom_error_set(err, LOOM_ERR_FORMAT, "embed: %s.attention.max_alibi_bias = %g is out of range (0, 64]",
                                  arch, mb);
        hp->alibi_bias = (float)mb;
    }
    if (hp->arch == EMB_MODERN && (s = modern_keys(hp, g, arch, err))) return s;
    hp->n_embd = (int)E;
    hp->n_layer = (int)L;
    hp->n_head = (int)H;
    hp->n_head_kv = (int)H;
    hp->head_dim = (int)(E / H);
    hp->n_ff = (int)F;
    hp->n_rot = (int)rot;
    hp->n_ctx_train = (int32_t)ctx_train;
    hp->norm_eps = (float)eps;
    hp->rope_base = (float)base;
    hp->rope_freq_scale = 1.0f;
    e->pooling = (loom_pooling)pool;
    return LOOM_OK;
}

/* The head width: attention.key_length (default embedding_length / head_count, which
 * must then divide), value_length equal to it, head_count x width bounded. */
static loom_status head_width(const loom_gguf *g, const char *arch, int64_t E, int64_t H, int64_t *DK, loom_error *err) {
    int64_t DV;
    loom_status s;
    if (E % H && !has_key(g, arch, "attention.key_length"))
        return loom_error_set(err, LOOM_ERR_FORMAT, "embed: embedding_length %lld is not a multiple of head_count %lld",
                              (long long)E, (long long)H);
    if ((s = key_int(g, arch, "attention.key_length", false, E / H, 1, 65536, DK, err))) return s;
    if ((s = key_int(g, arch, "attention.value_length", false, *DK, 1, 65536, &DV, err))) return s;
    if (DV != *DK)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "embed: %s.attention.value_length %lld != key_length %lld",
                              arch, (long long)DV, (long long)*DK);
    if (H * *DK > EMB_MAX_DIM)
        return loom_error_set(err, LOOM_ERR_FORMAT, "embed: %s: head_count x key_length is too large", arch);
    return LOOM_OK;
}

/* t5encoder: llama.cpp's keys (no defaults for the epsilon and the buckets; a head width
 * of key_length, else embedding_length / head_count; no pooling_type: none, as
 * llama.cpp). */
static loom_status t5_hparams(loom_embedder *e, const loom_gguf *g, const char *arch, loom_error *err) {
    emb_hparams *hp = &e->hp;
    int64_t E, L, H, HKV, F, DK, NB, ctx_train, pool;
    loom_status s;
    if ((s = base_keys(e, g, arch, &E, &L, &H, &pool, err))) return s;
    if (!has_key(g, arch, "pooling_type")) pool = LOOM_POOLING_NONE;
    if ((s = key_int(g, arch, "attention.head_count_kv", false, H, 1, H, &HKV, err))) return s;
    if (HKV != H)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "embed: %s.attention.head_count_kv %lld != head_count %lld",
                              arch, (long long)HKV, (long long)H);
    if ((s = head_width(g, arch, E, H, &DK, err))) return s;
    if ((s = key_int(g, arch, "feed_forward_length", true, 0, 1, EMB_MAX_DIM * 4, &F, err))) return s;
    if ((s = key_int(g, arch, "context_length", false, 512, 1, 1 << 24, &ctx_train, err))) return s;
    if ((s = key_int(g, arch, "attention.relative_buckets_count", true, 0, 4, 65536, &NB, err))) return s;
    double eps;
    if (!has_key(g, arch, "attention.layer_norm_rms_epsilon")) /* required, as llama.cpp */
        return loom_error_set(err, LOOM_ERR_NOT_FOUND, "embed: key '%s.attention.layer_norm_rms_epsilon' is missing", arch);
    if ((s = key_float(g, arch, "attention.layer_norm_rms_epsilon", 0.0, &eps, err))) return s;
    if (!(eps > 0 && eps < 1))
        return loom_error_set(err, LOOM_ERR_FORMAT, "embed: %s.attention.layer_norm_rms_epsilon = %g is out of range",
                              arch, eps);
    hp->n_embd = (int)E;
    hp->n_layer = (int)L;
    hp->n_head = hp->n_head_kv = (int)H;
    hp->head_dim = (int)DK;
    hp->n_ff = (int)F;
    hp->n_rot = 0;
    hp->n_ctx_train = (int32_t)ctx_train;
    hp->norm_eps = (float)eps;
    hp->rope_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    hp->causal = false;
    hp->n_rel_buckets = (int)NB;
    e->pooling = (loom_pooling)pool;
    return LOOM_OK;
}

/* llama / mistral / qwen2 / qwen3 (with a pooling_type) and gemma-embedding: llama.cpp's
 * keys and defaults for those architectures. */
static loom_status decoder_hparams(loom_embedder *e, const loom_gguf *g, const char *arch, loom_error *err) {
    emb_hparams *hp = &e->hp;
    const bool gemma = hp->arch == EMB_GEMMA;
    int64_t E, L, H, HKV, F, ctx_train, pool, DK, rot;
    loom_status s;
    if ((s = base_keys(e, g, arch, &E, &L, &H, &pool, err))) return s;
    if ((s = key_int(g, arch, "attention.head_count_kv", false, H, 1, H, &HKV, err))) return s;
    if (H % HKV)
        return loom_error_set(err, LOOM_ERR_FORMAT, "embed: %s.attention.head_count %lld is not a multiple of "
                              "head_count_kv %lld", arch, (long long)H, (long long)HKV);
    if ((s = head_width(g, arch, E, H, &DK, err))) return s;
    if ((s = key_int(g, arch, "feed_forward_length", true, 0, 1, EMB_MAX_DIM * 4, &F, err))) return s;
    if ((s = key_int(g, arch, "context_length", true, 0, 1, 1 << 24, &ctx_train, err))) return s;
    if ((s = key_int(g, arch, "rope.dimension_count", false, DK, 0, DK, &rot, err))) return s;
    if (rot % 2) return loom_error_set(err, LOOM_ERR_FORMAT, "embed: %s.rope.dimension_count %lld is odd", arch, (long long)rot);
    /* causal unless the file says otherwise; gemma-embedding is bidirectional (as llama.cpp) */
    char key[160];
    snprintf(key, sizeof key, "%s.attention.causal", arch);
    bool causal = !gemma;
    if (!gemma && loom_gguf_find_key(g, key) >= 0 && loom_gguf_get_bool(g, key, &causal))
        return loom_error_set(err, LOOM_ERR_FORMAT, "embed: key '%s' must be a boolean", key);
    double eps, base, base_swa = 10000.0, scale = 1.0;
    if ((s = key_float(g, arch, "attention.layer_norm_rms_epsilon", gemma ? 1e-6 : 1e-5, &eps, err))) return s;
    if (!(eps > 0 && eps < 1))
        return loom_error_set(err, LOOM_ERR_FORMAT, "embed: %s.attention.layer_norm_rms_epsilon = %g is out of range",
                              arch, eps);
    if ((s = key_float(g, arch, "rope.freq_base", 10000.0, &base, err))) return s;
    if (!(base > 1)) return loom_error_set(err, LOOM_ERR_FORMAT, "embed: %s.rope.freq_base = %g is out of range", arch, base);
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    loom_gguf_str st;
    if (loom_gguf_get_str(g, key, &st) == LOOM_OK && !(st.len == 4 && !memcmp(st.ptr, "none", 4))) {
        if (!(st.len == 6 && !memcmp(st.ptr, "linear", 6)))
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "embed: rope scaling '%.*s' is not supported",
                                  (int)(st.len > 32 ? 32 : st.len), st.ptr);
        if ((s = key_float(g, arch, "rope.scaling.factor", 1.0, &scale, err))) return s;
        if (!(scale >= 1 && scale < 1e6))
            return loom_error_set(err, LOOM_ERR_FORMAT, "embed: %s.rope.scaling.factor = %g is out of range", arch, scale);
    }
    int64_t n_swa = 0, period = 6;
    if (gemma) {
        /* llama.cpp's default pattern 6: five window layers, then a full one; a
         * window sees |i - j| <= n_swa / 2 both ways */
        if ((s = key_int(g, arch, "attention.sliding_window", true, 0, 1, 1 << 24, &n_swa, err))) return s;
        snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", arch);
        int64_t ki = loom_gguf_find_key(g, key);
        if (ki >= 0 && loom_gguf_kv_type(g, ki) != LOOM_GGUF_ARRAY &&
            (s = key_int(g, arch, "attention.sliding_window_pattern", false, 6, 0, 1 << 20, &period, err)))
            return s;
        if ((s = key_float(g, arch, "rope.freq_base_swa", 10000.0, &base_swa, err))) return s;
        if (!(base_swa > 1))
            return loom_error_set(err, LOOM_ERR_FORMAT, "embed: %s.rope.freq_base_swa = %g is out of range", arch,
                                  base_swa);
        int64_t d2i, d2o, d3i, d3o;
        if ((s = key_int(g, arch, "dense_2_feat_in", false, E, 1, EMB_MAX_DIM, &d2i, err))) return s;
        if ((s = key_int(g, arch, "dense_2_feat_out", false, 0, 0, EMB_MAX_DIM, &d2o, err))) return s;
        if ((s = key_int(g, arch, "dense_3_feat_in", false, d2o, 0, EMB_MAX_DIM, &d3i, err))) return s;
        if ((s = key_int(g, arch, "dense_3_feat_out", false, E, 1, EMB_MAX_DIM, &d3o, err))) return s;
        if (d2i != E || d3o != E || d3i != d2o)
            return loom_error_set(err, LOOM_ERR_FORMAT,
                                  "embed: %s dense layers %lld -> %lld -> %lld -> %lld do not chain from and to "
                                  "embedding_length %lld", arch, (long long)d2i, (long long)d2o, (long long)d3i,
                                  (long long)d3o, (long long)E);
        hp->dense_ff = (int)d2o;
    }
    hp->n_embd = (int)E;
    hp->n_layer = (int)L;
    hp->n_head = (int)H;
    hp->n_head_kv = (int)HKV;
    hp->head_dim = (int)DK;
    hp->n_ff = (int)F;
    hp->n_rot = (int)rot;
    hp->n_ctx_train = (int32_t)ctx_train;
    hp->norm_eps = (float)eps;
    hp->rope_base = (float)base;
    hp->rope_base_swa = (float)base_swa;
    hp->rope_freq_scale = (float)(1.0 / scale);
    hp->rope_mode = !strcmp(arch, "llama") || !strcmp(arch, "mistral") || !strcmp(arch, "llama-embed") ? LOOM_ROPE_NORMAL
                                                                                                       : LOOM_ROPE_NEOX;
    hp->causal = causal;
    hp->n_swa = (int)n_swa;
    hp->swa_period = gemma ? (int)period : -1;
    e->pooling = (loom_pooling)pool;
    return LOOM_OK;
}

loom_status emb_load_hparams(loom_embedder *e, loom_error *err) {
    const loom_gguf *g = loom_backend_gguf(e->be);
    const char *arch = loom_backend_arch(e->be);
    emb_hparams *hp = &e->hp;
    if (!arch || !*arch)
        return loom_error_set(err, LOOM_ERR_NOT_FOUND, "embed: key 'general.architecture' is missing");
    /* a pooling asked for explicitly embeds with any decoder of those families (as
     * llama.cpp's llama-embedding --pooling) */
    if (!emb_arch_of(g, arch, e->pooling != LOOM_POOLING_UNSPECIFIED, &hp->arch))
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                              "embed: architecture '%s' is not an embedding model (bert, jina-bert-v2/v3, modern-bert, nomic-bert(-moe), t5encoder, "
                              "gemma-embedding, llama-embed, or llama/mistral/qwen2/qwen3 with a %s.pooling_type or a "
                              "pooling asked for)", arch, arch);
    snprintf(hp->name, sizeof hp->name, "%s", arch);
    hp->swa_period = -1;
    hp->swa_dense_first = false;
    const bool dec = hp->arch == EMB_DECODER || hp->arch == EMB_GEMMA;
    const loom_pooling asked = e->pooling;
    loom_status s = dec                     ? decoder_hparams(e, g, arch, err)
                    : hp->arch == EMB_T5 ? t5_hparams(e, g, arch, err)
                                         : encoder_hparams(e, g, arch, err);
    if (s) return s;
    if (asked != LOOM_POOLING_UNSPECIFIED) e->pooling = asked;
    e->layers = loom_calloc((size_t)hp->n_layer, sizeof *e->layers);
    if (!e->layers) return loom_error_set(err, LOOM_ERR_NOMEM, "loom_embed_open: out of memory");
    /* window layers: il % period < period - 1 (llama.cpp's set_swa_pattern) */
    for (int il = 0; il < hp->n_layer && hp->swa_period >= 0; il++) {
        e->layers[il].swa = hp->swa_period == 0 ||
                            (hp->swa_dense_first ? il % hp->swa_period != 0 : il % hp->swa_period < hp->swa_period - 1);
        if (e->layers[il].swa) e->any_swa = true;
    }
    return LOOM_OK;
}

/* ------------------------------------------------------------------ weights */

/* model.c's binder (name, shape, sticky status) for 2-D / 3-D weights */
static loom_tensor *bind(const loom_backend *be, bool required, int64_t ne0, int64_t ne1, loom_error *err,
                         loom_status *st, const char *fmt, int il) {
    return llm_bind_tensor(be, required, ne0, ne1, 1, err, st, fmt, il);
}

static loom_tensor *bind3(const loom_backend *be, int64_t ne0, int64_t ne1, int64_t ne2, loom_error *err,
                          loom_status *st, const char *fmt, int il) {
    return llm_bind_tensor(be, true, ne0, ne1, ne2, err, st, fmt, il);
}

/* token_embd.weight [n_embd, V]: the vocabulary size from its rows */
static loom_status bind_tok_embd(loom_embedder *e, loom_error *err) {
    loom_tensor *te = loom_backend_get_tensor(e->be, "token_embd.weight");
    if (!te) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "embed: tensor 'token_embd.weight' is missing");
    const int64_t V = loom_tensor_ne(te, 1);
    if (V < 1 || V > INT32_MAX) return loom_error_set(err, LOOM_ERR_FORMAT, "embed: bad vocabulary size %lld", (long long)V);
    e->hp.n_vocab = (int32_t)V;
    loom_status st = LOOM_OK;
    e->tok_embd = bind(e->be, true, e->hp.n_embd, V, err, &st, "token_embd.weight", 0);
    return st;
}

static loom_status encoder_weights(loom_embedder *e, loom_error *err) {
    const loom_backend *be = e->be;
    emb_hparams *hp = &e->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    const bool bert = hp->arch == EMB_BERT;
    loom_status st = LOOM_OK;
    if ((st = bind_tok_embd(e, err))) return st;
    loom_tensor *tt = loom_backend_get_tensor(be, "token_types.weight");
    int64_t n_types = tt ? loom_tensor_ne(tt, 1) : 1;
    if (n_types < 1) n_types = 1;
    e->type_embd = bind(be, false, E, n_types, err, &st, "token_types.weight", 0);
    const bool jina = hp->alibi_bias > 0.0f; /* jina-bert-v2: no positions (ALiBi) */
    if (bert && !jina) e->pos_embd = bind(be, true, E, hp->n_ctx_train, err, &st, "position_embd.weight", 0);
    e->tok_norm = bind(be, true, E, 1, err, &st, "token_embd_norm.weight", 0);
    e->tok_norm_b = bind(be, true, E, 1, err, &st, "token_embd_norm.bias", 0);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        emb_layer *L = &e->layers[il];
        if ((bert && !jina) || !loom_backend_get_tensor(be, "blk.0.attn_qkv.weight")) {
            L->wq = bind(be, true, E, E, err, &st, "blk.%d.attn_q.weight", il);
            L->wk = bind(be, true, E, E, err, &st, "blk.%d.attn_k.weight", il);
            L->wv = bind(be, true, E, E, err, &st, "blk.%d.attn_v.weight", il);
            L->bq = bind(be, false, E, 1, err, &st, "blk.%d.attn_q.bias", il);
            L->bk = bind(be, false, E, 1, err, &st, "blk.%d.attn_k.bias", il);
            L->bv = bind(be, false, E, 1, err, &st, "blk.%d.attn_v.bias", il);
        } else {
            L->wqkv = bind(be, true, E, 3 * E, err, &st, "blk.%d.attn_qkv.weight", il);
            L->bqkv = bind(be, false, 3 * E, 1, err, &st, "blk.%d.attn_qkv.bias", il);
        }
        L->wo = bind(be, true, E, E, err, &st, "blk.%d.attn_output.weight", il);
        L->bo = bind(be, false, E, 1, err, &st, "blk.%d.attn_output.bias", il);
        L->attn_out_norm = bind(be, true, E, 1, err, &st, "blk.%d.attn_output_norm.weight", il);
        L->attn_out_norm_b = bind(be, true, E, 1, err, &st, "blk.%d.attn_output_norm.bias", il);
        if (jina) {
            L->q_norm = bind(be, false, E, 1, err, &st, "blk.%d.attn_q_norm.weight", il);
            if (L->q_norm) L->q_norm_b = bind(be, false, E, 1, err, &st, "blk.%d.attn_q_norm.bias", il);
            L->k_norm = bind(be, false, E, 1, err, &st, "blk.%d.attn_k_norm.weight", il);
            if (L->k_norm) L->k_norm_b = bind(be, false, E, 1, err, &st, "blk.%d.attn_k_norm.bias", il);
            L->attn_norm_2 = bind(be, false, E, 1, err, &st, "blk.%d.attn_norm_2.weight", il);
            if (L->attn_norm_2) L->attn_norm_2_b = bind(be, false, E, 1, err, &st, "blk.%d.attn_norm_2.bias", il);
            L->ffn_gate = bind(be, false, E, F, err, &st, "blk.%d.ffn_gate.weight", il);
            /* without a gate, ffn_up may hold both halves of a GEGLU (llama.cpp's rule) */
            char nm[64];
            snprintf(nm, sizeof nm, "blk.%d.ffn_up.weight", il);
            const loom_tensor *up = loom_backend_get_tensor(be, nm);
            L->geglu = !L->ffn_gate && up && loom_tensor_ne(up, 1) == 2 * F;
            const int64_t UF = L->geglu ? 2 * F : F;
            L->ffn_up = bind(be, true, E, UF, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_up_b = bind(be, false, UF, 1, err, &st, "blk.%d.ffn_up.bias", il);
            L->ffn_down = bind(be, true, F, E, err, &st, "blk.%d.ffn_down.weight", il);
            L->ffn_down_b = bind(be, true, E, 1, err, &st, "blk.%d.ffn_down.bias", il);
        } else if (hp->moe_every > 0 && il % hp->moe_every == 1) { /* nomic-bert-moe expert layer */
            L->ffn_gate_inp = bind(be, true, E, hp->n_expert, err, &st, "blk.%d.ffn_gate_inp.weight", il);
            L->ffn_up_exps = bind3(be, E, F, hp->n_expert, err, &st, "blk.%d.ffn_up_exps.weight", il);
            L->ffn_down_exps = bind3(be, F, E, hp->n_expert, err, &st, "blk.%d.ffn_down_exps.weight", il);
        } else {
            L->ffn_up = bind(be, true, E, F, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_down = bind(be, true, F, E, err, &st, "blk.%d.ffn_down.weight", il);
        }
        if (L->ffn_gate_inp || jina) {
            /* experts: no biases, no gate; jina: bound above */
        } else if (bert || hp->gelu_ffn) {
            L->ffn_up_b = bind(be, false, F, 1, err, &st, "blk.%d.ffn_up.bias", il);
            L->ffn_down_b = bind(be, false, E, 1, err, &st, "blk.%d.ffn_down.bias", il);
        } else {
            L->ffn_gate = bind(be, true, E, F, err, &st, "blk.%d.ffn_gate.weight", il);
        }
        L->out_norm = bind(be, true, E, 1, err, &st, "blk.%d.layer_output_norm.weight", il);
        L->out_norm_b = bind(be, true, E, 1, err, &st, "blk.%d.layer_output_norm.bias", il);
    }
    if (!st && hp->moe_every == 0 && loom_backend_get_tensor(be, "blk.1.ffn_gate_inp.weight"))
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                              "embed: %s has expert tensors but no moe_every_n_layers (nomic-bert-moe)", hp->name);
    if (!st && !bert && !e->layers[0].wqkv)
        return loom_error_set(err, LOOM_ERR_NOT_FOUND, "embed: tensor 'blk.0.attn_qkv.weight' is missing");
    return st;
}


/* llama.cpp's tensor names for llama / qwen2 / qwen3 / gemma-embedding layers. */
static loom_status decoder_weights(loom_embedder *e, loom_error *err) {
    const loom_backend *be = e->be;
    emb_hparams *hp = &e->hp;
    const bool gemma = hp->arch == EMB_GEMMA;
    const int64_t E = hp->n_embd, F = hp->n_ff, D = hp->head_dim;
    const int64_t QD = (int64_t)hp->n_head * D, KD = (int64_t)hp->n_head_kv * D;
    loom_status st = LOOM_OK;
    if ((st = bind_tok_embd(e, err))) return st;
    e->output_norm = bind(be, true, E, 1, err, &st, "output_norm.weight", 0);
    if (hp->dense_ff > 0) {
        e->dense_2 = bind(be, true, E, hp->dense_ff, err, &st, "dense_2.weight", 0);
        e->dense_2_b = bind(be, false, hp->dense_ff, 1, err, &st, "dense_2.bias", 0);
        e->dense_3 = bind(be, true, hp->dense_ff, E, err, &st, "dense_3.weight", 0);
    } else if (!st && (loom_backend_get_tensor(be, "dense_2.weight") || loom_backend_get_tensor(be, "dense_3.weight"))) {
        return loom_error_set(err, LOOM_ERR_NOT_FOUND,
                              "embed: the file has dense_2/dense_3 weights but no %s.dense_2_feat_out key", hp->name);
    }
    for (int il = 0; il < hp->n_layer && !st; il++) {
        emb_layer *L = &e->layers[il];
        L->attn_norm = bind(be, true, E, 1, err, &st, "blk.%d.attn_norm.weight", il);
        /* rope_freqs.weight (Llama 3 scaling): the backend gives each layer its copy */
        L->rope_freqs = bind(be, false, hp->n_rot / 2, 1, err, &st, "blk.%d.rope_freqs.weight", il);
        L->wq = bind(be, true, E, QD, err, &st, "blk.%d.attn_q.weight", il);
        L->wk = bind(be, true, E, KD, err, &st, "blk.%d.attn_k.weight", il);
        L->wv = bind(be, true, E, KD, err, &st, "blk.%d.attn_v.weight", il);
        L->bq = bind(be, false, QD, 1, err, &st, "blk.%d.attn_q.bias", il);
        L->bk = bind(be, false, KD, 1, err, &st, "blk.%d.attn_k.bias", il);
        L->bv = bind(be, false, KD, 1, err, &st, "blk.%d.attn_v.bias", il);
        L->q_norm = bind(be, gemma, D, 1, err, &st, "blk.%d.attn_q_norm.weight", il);
        L->k_norm = bind(be, gemma, D, 1, err, &st, "blk.%d.attn_k_norm.weight", il);
        L->wo = bind(be, true, QD, E, err, &st, "blk.%d.attn_output.weight", il);
        L->bo = bind(be, false, E, 1, err, &st, "blk.%d.attn_output.bias", il);
        L->attn_post_norm = bind(be, gemma, E, 1, err, &st, "blk.%d.post_attention_norm.weight", il);
        L->ffn_norm = bind(be, true, E, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_gate = bind(be, true, E, F, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = bind(be, true, E, F, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = bind(be, true, F, E, err, &st, "blk.%d.ffn_down.weight", il);
        L->ffn_post_norm = bind(be, gemma, E, 1, err, &st, "blk.%d.post_ffw_norm.weight", il);
        if (!st && (!L->q_norm) != (!L->k_norm))
            return loom_error_set(err, LOOM_ERR_NOT_FOUND, "embed: blk.%d has only one of attn_q_norm / attn_k_norm", il);
    }
    if (!st && loom_backend_get_tensor(be, "blk.0.ffn_gate_inp.weight"))
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "embed: mixture-of-experts models are not supported");
    return st;
}

/* modern-bert: LayerNorm weights only (none before layer 0's attention), fused q|k|v,
 * no biases, ffn_up twice ffn wide (the gated pair), a final output_norm. */
static loom_status modern_weights(loom_embedder *e, loom_error *err) {
    const loom_backend *be = e->be;
    emb_hparams *hp = &e->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    loom_status st = LOOM_OK;
    if ((st = bind_tok_embd(e, err))) return st;
    e->tok_norm = bind(be, true, E, 1, err, &st, "token_embd_norm.weight", 0);
    e->output_norm = bind(be, true, E, 1, err, &st, "output_norm.weight", 0);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        emb_layer *L = &e->layers[il];
        L->attn_norm = bind(be, il > 0, E, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->wqkv = bind(be, true, E, 3 * E, err, &st, "blk.%d.attn_qkv.weight", il);
        L->wo = bind(be, true, E, E, err, &st, "blk.%d.attn_output.weight", il);
        L->ffn_norm = bind(be, true, E, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_up = bind(be, true, E, 2 * F, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = bind(be, true, F, E, err, &st, "blk.%d.ffn_down.weight", il);
    }
    return st;
}

/* t5encoder: llama.cpp's enc.* names; the relative position bias on layer 0 (the others
 * may have their own), ffn_gate optional (flan-T5's gated GELU; without it T5's ReLU). */
static loom_status t5_weights(loom_embedder *e, loom_error *err) {
    const loom_backend *be = e->be;
    emb_hparams *hp = &e->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff, QD = (int64_t)hp->n_head * hp->head_dim;
    loom_status st = LOOM_OK;
    if ((st = bind_tok_embd(e, err))) return st;
    e->output_norm = bind(be, true, E, 1, err, &st, "enc.output_norm.weight", 0);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        emb_layer *L = &e->layers[il];
        L->attn_norm = bind(be, true, E, 1, err, &st, "enc.blk.%d.attn_norm.weight", il);
        L->rel_b = bind(be, il == 0, hp->n_head, hp->n_rel_buckets, err, &st, "enc.blk.%d.attn_rel_b.weight", il);
        L->wq = bind(be, true, E, QD, err, &st, "enc.blk.%d.attn_q.weight", il);
        L->wk = bind(be, true, E, QD, err, &st, "enc.blk.%d.attn_k.weight", il);
        L->wv = bind(be, true, E, QD, err, &st, "enc.blk.%d.attn_v.weight", il);
        L->wo = bind(be, true, QD, E, err, &st, "enc.blk.%d.attn_o.weight", il);
        L->ffn_norm = bind(be, true, E, 1, err, &st, "enc.blk.%d.ffn_norm.weight", il);
        L->ffn_gate = bind(be, false, E, F, err, &st, "enc.blk.%d.ffn_gate.weight", il);
        L->ffn_up = bind(be, true, E, F, err, &st, "enc.blk.%d.ffn_up.weight", il);
        L->ffn_down = bind(be, true, F, E, err, &st, "enc.blk.%d.ffn_down.weight", il);
    }
    return st;
}

loom_status emb_bind_weights(loom_embedder *e, loom_error *err) {
    if (e->hp.arch == EMB_MODERN) return modern_weights(e, err);
    if (e->hp.arch == EMB_T5) return t5_weights(e, err);
    return e->hp.arch == EMB_DECODER || e->hp.arch == EMB_GEMMA ? decoder_weights(e, err) : encoder_weights(e, err);
}
