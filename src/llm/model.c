/*
 * model.c - model lifecycle: hyperparameters from GGUF keys, weight binding with
 * shape checks, KV cache + worst-case reserve before the weights are loaded.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_graph.h"
#include "loom_embed.h"
#include "quant/alloc.h"

#define LLM_MAX_DIM ((int64_t)1 << 24) /* sanity bound on every hyperparameter */

loom_model_params loom_model_default_params(void) {
    loom_model_params p;
    memset(&p, 0, sizeof p);
    p.cache_type = LOOM_TYPE_F16;
    return p;
}

/* ------------------------------------------------------------------ hyperparameters */

/* Integer key "<arch>.<key>"; an array of equal integers (per-layer values) is
 * accepted too. Absent: *out = def, or NOT_FOUND when required. */
/* An integer key, or an array of them: one value for all layers, or (varying) the
 * largest when varying is true, else LOOM_ERR_UNSUPPORTED. */
static loom_status get_int_key(const loom_gguf *g, const char *arch, const char *key, bool required, int64_t def,
                               bool varying, int64_t *out, loom_error *err) {
    char full[256];
    snprintf(full, sizeof full, "%s.%s", arch, key);
    int64_t ki = loom_gguf_find_key(g, full);
    if (ki < 0) {
        if (required)
            return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s' is missing",
                                  full);
        *out = def;
        return LOOM_OK;
    }
    int64_t v = 0;
    if (loom_gguf_kv_type(g, ki) == LOOM_GGUF_ARRAY) {
        uint64_t n = loom_gguf_kv_array_len(g, ki);
        if (n == 0) return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' is an empty array", full);
        for (uint64_t j = 0; j < n; j++) {
            int64_t e;
            if (loom_gguf_kv_arr_int(g, ki, j, &e))
                return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' is not an integer array",
                                      full);
            if (j == 0) v = e;
            else if (e != v && !varying)
                return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                                      "model: key '%s' varies per layer (%lld vs %lld)", full,
                                      (long long)v, (long long)e);
            else if (e > v) v = e;
        }
    } else if (loom_gguf_kv_int(g, ki, &v)) {
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' must be an integer (is %s)", full,
                              loom_gguf_vtype_name(loom_gguf_kv_type(g, ki)));
    }
    *out = v;
    return LOOM_OK;
}

loom_status llm_get_int_key(const loom_gguf *g, const char *arch, const char *key, bool required, int64_t def,
                            int64_t *out, loom_error *err) {
    return get_int_key(g, arch, key, required, def, false, out, err);
}

loom_status llm_get_layer_int(const loom_gguf *g, const char *arch, const char *key, int il, int n_layer, int64_t def,
                              int64_t *out, loom_error *err) {
    char full[256];
    snprintf(full, sizeof full, "%s.%s", arch, key);
    int64_t ki = loom_gguf_find_key(g, full);
    if (ki < 0) {
        *out = def;
        return LOOM_OK;
    }
    if (loom_gguf_kv_type(g, ki) != LOOM_GGUF_ARRAY) return get_int_key(g, arch, key, false, def, false, out, err);
    if (loom_gguf_kv_array_len(g, ki) != (uint64_t)n_layer)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' has %llu values for %d layers", full,
                              (unsigned long long)loom_gguf_kv_array_len(g, ki), n_layer);
    if (loom_gguf_kv_arr_int(g, ki, (uint64_t)il, out))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' is not an integer array", full);
    return LOOM_OK;
}

loom_status llm_get_float_key(const loom_gguf *g, const char *arch, const char *key, double def,
                                 double *out, bool *present, loom_error *err) {
    char full[256];
    snprintf(full, sizeof full, "%s.%s", arch, key);
    int64_t ki = loom_gguf_find_key(g, full);
    if (present) *present = ki >= 0;
    if (ki < 0) {
        *out = def;
        return LOOM_OK;
    }
    double v;
    if (loom_gguf_kv_float(g, ki, &v)) {
        int64_t iv;
        if (loom_gguf_kv_int(g, ki, &iv))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' must be a number (is %s)",
                                  full, loom_gguf_vtype_name(loom_gguf_kv_type(g, ki)));
        v = (double)iv;
    }
    if (!isfinite(v))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' is not finite", full);
    *out = v;
    return LOOM_OK;
}

static loom_status check_range(const char *what, int64_t v, int64_t lo, int64_t hi, loom_error *err) {
    if (v < lo || v > hi)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s = %lld is out of range [%lld, %lld]",
                              what, (long long)v, (long long)lo, (long long)hi);
    return LOOM_OK;
}

loom_status llm_load_hparams(const loom_backend *be, loom_model_hparams *hp, llm_hparams_x *hx,
                             const llm_arch **arch_out, loom_error *err) {
    const loom_gguf *g = loom_backend_gguf(be);
    memset(hp, 0, sizeof *hp);
    memset(hx, 0, sizeof *hx);
    const char *arch = loom_backend_arch(be);
    if (!arch || !*arch)
        return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: key 'general.architecture' is missing");
    const llm_arch *ad = llm_arch_find(arch);
    if (!ad && loom_embed_arch_supported(arch))
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: architecture '%.64s' is an embedding model: it makes "
                              "vectors, not text (`loom embed`, the server's /api/embed and /v1/embeddings)", arch);
    if (!ad)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: architecture '%.64s' is not supported (`loom info "
                              "--archs` lists the %d that are)", arch, llm_arch_count());
    *arch_out = ad;
    snprintf(hp->arch, sizeof hp->arch, "%s", arch);
    hp->rope_mode = ad->rope_mode;

    int64_t n_embd, n_layer, n_head, n_head_kv, n_ff, dk, dv, n_rot, n_ctx_train;
    loom_status s;
    if ((s = llm_get_int_key(g, arch, "embedding_length", true, 0, &n_embd, err))) return s;
    if ((s = check_range("embedding_length", n_embd, 1, LLM_MAX_DIM, err))) return s;
    if ((s = llm_get_int_key(g, arch, "block_count", true, 0, &n_layer, err))) return s;
    if ((s = check_range("block_count", n_layer, 1, 4096, err))) return s;
    if (n_layer != loom_backend_block_count(be))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: block_count %lld disagrees with backend (%d)",
                              (long long)n_layer, loom_backend_block_count(be));
    /* next-token-prediction blocks (GLM-4.5, MTP) come last and are not part of the
     * forward pass: llama.cpp's n_layer = block_count - nextn_predict_layers. Their
     * weights stay in the file's accounting and are loaded but never read. */
    int64_t nextn, groups, groups_used;
    /* grouped expert routing (llama.cpp reads it for every architecture) */
    if ((s = llm_get_int_key(g, arch, "expert_group_count", false, 0, &groups, err))) return s;
    if ((s = llm_get_int_key(g, arch, "expert_group_used_count", false, 0, &groups_used, err))) return s;
    if ((s = check_range("expert_group_count", groups, 0, 256, err))) return s;
    if (groups > 1) {
        int64_t ne;
        if ((s = llm_get_int_key(g, arch, "expert_count", true, 0, &ne, err))) return s;
        if (ne <= groups || ne % groups)
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_group_count = %lld does not divide %s.expert_count "
                                  "= %lld into groups", arch, (long long)groups, arch, (long long)ne);
        if ((s = check_range("expert_group_used_count", groups_used, 1, groups - 1, err))) return s;
        hx->n_expert_groups = (int)groups;
        hx->n_group_used = (int)groups_used;
    }
    if ((s = llm_get_int_key(g, arch, "nextn_predict_layers", false, 0, &nextn, err))) return s;
    if ((s = check_range("nextn_predict_layers", nextn, 0, n_layer - 1, err))) return s;
    n_layer -= nextn;
    /* deci and openelm give head_count per layer (deci: 0, no attention): the largest here */
    if ((s = get_int_key(g, arch, "attention.head_count", !ad->no_attn, 1,
                         !strcmp(arch, "deci") || !strcmp(arch, "plamo2") || !strcmp(arch, "openelm") ||
                             !strcmp(arch, "step35") || !strcmp(arch, "laguna") || !strcmp(arch, "dots3note"),
                         &n_head, err)))
        return s;
    if (ad->no_attn) n_head = 1; /* the converters write 0 */
    if ((s = check_range("attention.head_count", n_head, 1, 65536, err))) return s;
    /* gemma4 gives head_count_kv and feed_forward_length per layer: the largest here,
     * each layer's in its binding */
    const bool per_layer = !strcmp(arch, "gemma4") || !strcmp(arch, "granitehybrid") || !strncmp(arch, "nemotron_h", 10) ||
                           !strncmp(arch, "lfm2", 4) || !strcmp(arch, "jamba") || !strcmp(arch, "deci") ||
                           !strcmp(arch, "plamo2") || !strcmp(arch, "openelm") || !strcmp(arch, "mimo2") ||
                           !strcmp(arch, "step35") || !strcmp(arch, "laguna") || !strcmp(arch, "kimi-linear") ||
                           !strcmp(arch, "bailingmoe3") || !strcmp(arch, "dots3note") || !strcmp(arch, "kimi-k3");
    if ((s = get_int_key(g, arch, "attention.head_count_kv", false, n_head, per_layer, &n_head_kv, err))) return s;
    if (ad->no_attn) n_head_kv = 1;
    if ((s = check_range("attention.head_count_kv", n_head_kv, 1, n_head, err))) return s;
    if (n_head % n_head_kv)
        return loom_error_set(err, LOOM_ERR_FORMAT,
                              "model: head_count %lld is not a multiple of head_count_kv %lld",
                              (long long)n_head, (long long)n_head_kv);
    if ((s = get_int_key(g, arch, "feed_forward_length", !ad->no_attn, 0, per_layer, &n_ff, err))) return s;
    if ((s = check_range("feed_forward_length", n_ff, ad->no_attn ? 0 : 1, LLM_MAX_DIM, err))) return s;
    int64_t def_dk = ad->no_attn ? 1 : n_embd / n_head;
    if ((s = llm_get_int_key(g, arch, "attention.key_length", false, def_dk, &dk, err))) return s;
    /* llama.cpp: value_length defaults to n_embd / n_head, not to key_length */
    if ((s = llm_get_int_key(g, arch, "attention.value_length", false, def_dk, &dv, err))) return s;
    if ((s = check_range("attention.key_length", dk, 1, 65536, err))) return s;
    if ((s = check_range("attention.value_length", dv, 1, 65536, err))) return s;
    if (ad->no_attn) dk = dv = 1;
    if (!ad->no_attn && dk == def_dk && def_dk * n_head != n_embd)
        return loom_error_set(err, LOOM_ERR_FORMAT,
                              "model: embedding_length %lld is not a multiple of head_count %lld "
                              "and attention.key_length is absent",
                              (long long)n_embd, (long long)n_head);
    if ((s = llm_get_int_key(g, arch, "rope.dimension_count", false, ad->no_attn ? 0 : dk, &n_rot, err))) return s;
    if ((s = check_range("rope.dimension_count", n_rot, 0, dk, err))) return s;
    if (n_rot % 2)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: rope.dimension_count %lld is odd",
                              (long long)n_rot);
    if ((s = llm_get_int_key(g, arch, "context_length", false, 0, &n_ctx_train, err))) return s;
    if (n_ctx_train < 0 || n_ctx_train > ((int64_t)1 << 30)) n_ctx_train = 0;

    double eps, base, scale_factor = 1.0, scale_linear = 1.0;
    bool has_factor = false, has_linear = false;
    if ((s = llm_get_float_key(g, arch, "attention.layer_norm_rms_epsilon", 1e-5, &eps, NULL, err))) return s;
    if (!(eps > 0 && eps < 1))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.layer_norm_rms_epsilon = %g is out of range",
                              arch, eps);
    if ((s = llm_get_float_key(g, arch, "rope.freq_base", 10000.0, &base, NULL, err))) return s;
    if (!(base > 1))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.freq_base = %g is out of range", arch, base);
    double freq_scale = 1.0;
    char key[256];
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    loom_gguf_str st;
    bool none = false; /* llama.cpp: no type means "linear"; "none" never scales */
    if (loom_gguf_get_str(g, key, &st) == LOOM_OK) {
        if (st.len == 4 && !memcmp(st.ptr, "yarn", 4)) hx->yarn = true;
        else if (st.len == 8 && !memcmp(st.ptr, "longrope", 8)) hx->longrope = true;
        else if (st.len == 4 && !memcmp(st.ptr, "none", 4)) none = true;
        else if (!(st.len == 6 && !memcmp(st.ptr, "linear", 6)))
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: rope scaling type '%.*s' is not supported",
                                  (int)(st.len > 32 ? 32 : st.len), st.ptr);
    }
    if ((s = llm_get_float_key(g, arch, "rope.scaling.factor", 1.0, &scale_factor, &has_factor, err))) return s;
    if ((s = llm_get_float_key(g, arch, "rope.scale_linear", 1.0, &scale_linear, &has_linear, err))) return s;
    if (has_linear && !(scale_linear >= 0 && isfinite(scale_linear)))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.scale_linear = %g is out of range", arch, scale_linear);
    if (has_factor && !(scale_factor >= 0 && isfinite(scale_factor)))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.scaling.factor = %g is out of range", arch, scale_factor);

    /* llama.cpp: the factor (rope.scaling.factor if the key is there, else the old
     * rope.scale_linear) divides the frequencies whatever the type, but "none" */
    const double ropescale = has_factor ? scale_factor : has_linear ? scale_linear : 0.0;
    if (ropescale > 0 && !none) freq_scale = 1.0 / ropescale; /* 0: no scaling */

    hp->n_embd = (int)n_embd;
    hp->n_layer = (int)n_layer;
    hp->n_head = (int)n_head;
    hp->n_head_kv = (int)n_head_kv;
    hp->head_dim_k = (int)dk;
    hp->head_dim_v = (int)dv;
    hp->n_ff = (int)n_ff;
    hp->n_rot = (int)n_rot;
    hp->n_ctx_train = (int)n_ctx_train;
    hp->rms_eps = (float)eps;
    hp->rope_base = (float)base;
    hp->rope_freq_scale = (float)freq_scale;
    hp->tied_output = loom_gguf_find_tensor(g, "output.weight") < 0;
    hx->rope_attn_factor = 1.0f;
    hx->rope_scale_swa = 1.0f;
    hx->rope_base_swa = hp->rope_base;
    hx->n_ctx_orig = hp->n_ctx_train;
    hx->yarn_beta_fast = 32.0f;
    hx->yarn_beta_slow = 1.0f;
    int64_t orig;
    if ((s = llm_get_int_key(g, arch, "rope.scaling.original_context_length", false, 0, &orig, err))) return s;
    if ((s = check_range("rope.scaling.original_context_length", orig, 0, (int64_t)1 << 30, err))) return s;
    if (orig > 0) hx->n_ctx_orig = (int)orig;
    double af;
    bool has_af;
    if ((s = llm_get_float_key(g, arch, "rope.scaling.attn_factor", 1.0, &af, &has_af, err))) return s;
    if (!(af > 0 && af < 1e3))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.scaling.attn_factor = %g is out of range", arch, af);
    hx->rope_attn_factor = (float)af;
    if (hx->longrope && ad->build == llm_build_llama)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s.rope.scaling.type 'longrope' is not supported for %s",
                              arch, arch);
    return ad->hparams ? ad->hparams(g, hp, hx, err) : LOOM_OK;
}

/* ------------------------------------------------------------------ weights */

bool llm_blk_tensor_in(const char *name, const char *const *names, size_t n) {
    if (strncmp(name, "blk.", 4) != 0) return false;
    const char *p = name + 4;
    while (*p >= '0' && *p <= '9') p++;
    if (p == name + 4 || *p != '.') return false;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(p + 1, names[i])) return true;
    return false;
}

loom_tensor *llm_bind_tensor(const loom_backend *be, bool required, int64_t ne0, int64_t ne1, int64_t ne2,
                             loom_error *err, loom_status *st, const char *fmt, int il) {
    char name[LOOM_GGUF_MAX_NAME];
    snprintf(name, sizeof name, fmt, il);
    if (*st) return NULL;
    loom_tensor *t = loom_backend_get_tensor(be, name);
    if (!t) {
        if (required) *st = loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: tensor '%s' is missing", name);
        return NULL;
    }
    int64_t want[4] = {ne0, ne1, ne2, 1};
    for (int i = 0; i < 4; i++) {
        if (loom_tensor_ne(t, i) != want[i]) {
            *st = loom_error_set(err, LOOM_ERR_FORMAT,
                                 "model: tensor '%s' has shape [%lld, %lld, %lld, %lld], expected "
                                 "[%lld, %lld, %lld]",
                                 name, (long long)loom_tensor_ne(t, 0), (long long)loom_tensor_ne(t, 1),
                                 (long long)loom_tensor_ne(t, 2), (long long)loom_tensor_ne(t, 3),
                                 (long long)ne0, (long long)ne1, (long long)ne2);
            return NULL;
        }
    }
    return t;
}

loom_status llm_bind_embd_output(loom_model *m, loom_error *err) {
    return llm_bind_embd_output_norm(m, "output_norm.weight", err);
}

loom_status llm_bind_embd_output_norm(loom_model *m, const char *norm_name, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd;
    loom_status st = LOOM_OK;
    loom_tensor *te = loom_backend_get_tensor(be, "token_embd.weight");
    if (!te) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: tensor 'token_embd.weight' is missing");
    int64_t V = loom_tensor_ne(te, 1);
    if (V < 1 || V > INT32_MAX) return loom_error_set(err, LOOM_ERR_FORMAT, "model: bad vocabulary size %lld", (long long)V);
    hp->n_vocab = (int)V;
    m->tok_embd = llm_bind_tensor(be, true, E, V, 1, err, &st, "token_embd.weight", 0);
    if (norm_name) m->output_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, norm_name, 0);
    m->output = llm_bind_tensor(be, true, E, V, 1, err, &st, "output.weight", 0);
    return st;
}

void llm_bind_attn_qkv(const loom_backend *be, const loom_model_hparams *hp, llm_layer *L, int il, loom_error *err,
                       loom_status *st) {
    const int64_t E = hp->n_embd;
    const int64_t HQ = (int64_t)hp->n_head * hp->head_dim_k, HK = (int64_t)hp->n_head_kv * hp->head_dim_k;
    const int64_t HV = (int64_t)hp->n_head_kv * hp->head_dim_v;
    L->wq = llm_bind_tensor(be, true, E, HQ, 1, err, st, "blk.%d.attn_q.weight", il);
    L->wk = llm_bind_tensor(be, true, E, HK, 1, err, st, "blk.%d.attn_k.weight", il);
    L->wv = llm_bind_tensor(be, true, E, HV, 1, err, st, "blk.%d.attn_v.weight", il);
}

void llm_bind_attn_any(const loom_backend *be, const loom_model_hparams *hp, llm_layer *L, int il, bool bo_required,
                       loom_error *err, loom_status *st) {
    const int64_t E = hp->n_embd;
    L->wo = llm_bind_tensor(be, true, (int64_t)hp->n_head * hp->head_dim_v, E, 1, err, st, "blk.%d.attn_output.weight",
                            il);
    L->bo = llm_bind_tensor(be, bo_required, E, 1, 1, err, st, "blk.%d.attn_output.bias", il);
    llm_bind_qkv_any(be, hp, L, il, err, st);
}

void llm_bind_qkv_any(const loom_backend *be, const loom_model_hparams *hp, llm_layer *L, int il, loom_error *err,
                      loom_status *st) {
    const int64_t E = hp->n_embd;
    const int64_t HQ = (int64_t)hp->n_head * hp->head_dim_k, HK = (int64_t)hp->n_head_kv * hp->head_dim_k;
    const int64_t HV = (int64_t)hp->n_head_kv * hp->head_dim_v;
    L->wqkv = llm_bind_tensor(be, false, E, HQ + HK + HV, 1, err, st, "blk.%d.attn_qkv.weight", il);
    if (L->wqkv) {
        L->bqkv = llm_bind_tensor(be, false, HQ + HK + HV, 1, 1, err, st, "blk.%d.attn_qkv.bias", il);
        return;
    }
    llm_bind_attn_qkv(be, hp, L, il, err, st);
    L->bq = llm_bind_tensor(be, false, HQ, 1, 1, err, st, "blk.%d.attn_q.bias", il);
    L->bk = llm_bind_tensor(be, false, HK, 1, 1, err, st, "blk.%d.attn_k.bias", il);
    L->bv = llm_bind_tensor(be, false, HV, 1, 1, err, st, "blk.%d.attn_v.bias", il);
}

void llm_bind_attn(const loom_backend *be, const loom_model_hparams *hp, llm_layer *L, int il, loom_error *err,
                   loom_status *st) {
    const int64_t E = hp->n_embd, HO = (int64_t)hp->n_head * hp->head_dim_v;
    L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, st, "blk.%d.attn_norm.weight", il);
    llm_bind_attn_qkv(be, hp, L, il, err, st);
    L->wo = llm_bind_tensor(be, true, HO, E, 1, err, st, "blk.%d.attn_output.weight", il);
}

void llm_bind_experts(const loom_backend *be, llm_layer *L, int il, int64_t E, int64_t FE, int64_t NE, loom_error *err,
                      loom_status *st) {
    L->ffn_gate_inp = llm_bind_tensor(be, true, E, NE, 1, err, st, "blk.%d.ffn_gate_inp.weight", il);
    L->ffn_gate_exps = llm_bind_tensor(be, true, E, FE, NE, err, st, "blk.%d.ffn_gate_exps.weight", il);
    L->ffn_up_exps = llm_bind_tensor(be, true, E, FE, NE, err, st, "blk.%d.ffn_up_exps.weight", il);
    L->ffn_down_exps = llm_bind_tensor(be, true, FE, E, NE, err, st, "blk.%d.ffn_down_exps.weight", il);
}

void llm_bind_experts_fusable(const loom_backend *be, llm_layer *L, int il, int64_t E, int64_t FE, int64_t NE,
                              loom_error *err, loom_status *st) {
    L->ffn_gate_up_exps = llm_bind_tensor(be, false, E, 2 * FE, NE, err, st, "blk.%d.ffn_gate_up_exps.weight", il);
    if (!L->ffn_gate_up_exps) {
        llm_bind_experts(be, L, il, E, FE, NE, err, st);
        return;
    }
    L->ffn_gate_inp = llm_bind_tensor(be, true, E, NE, 1, err, st, "blk.%d.ffn_gate_inp.weight", il);
    L->ffn_down_exps = llm_bind_tensor(be, true, FE, E, NE, err, st, "blk.%d.ffn_down_exps.weight", il);
}

void llm_bind_shared_expert(const loom_backend *be, llm_layer *L, int il, int64_t E, int64_t FS, loom_error *err,
                            loom_status *st) {
    L->ffn_gate_shexp = llm_bind_tensor(be, true, E, FS, 1, err, st, "blk.%d.ffn_gate_shexp.weight", il);
    L->ffn_up_shexp = llm_bind_tensor(be, true, E, FS, 1, err, st, "blk.%d.ffn_up_shexp.weight", il);
    L->ffn_down_shexp = llm_bind_tensor(be, true, FS, E, 1, err, st, "blk.%d.ffn_down_shexp.weight", il);
}

void llm_bind_longrope(const loom_backend *be, const loom_model_hparams *hp, llm_layer *L, int il, loom_error *err,
                       loom_status *st) {
    /* the backend gives each layer its copy of the global factors (contract §3.4) */
    L->rope_long = llm_bind_tensor(be, false, hp->n_rot / 2, 1, 1, err, st, "blk.%d.rope_factors_long.weight", il);
    L->rope_short = llm_bind_tensor(be, false, hp->n_rot / 2, 1, 1, err, st, "blk.%d.rope_factors_short.weight", il);
    if (!*st && (!L->rope_long) != (!L->rope_short))
        *st = loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: tensor '%s' is missing (LongRoPE needs both factor sets)",
                             L->rope_long ? "rope_factors_short.weight" : "rope_factors_long.weight");
    if (!*st && L->rope_long &&
        (loom_tensor_type(L->rope_long) != LOOM_TYPE_F32 || loom_tensor_type(L->rope_short) != LOOM_TYPE_F32))
        *st = loom_error_set(err, LOOM_ERR_FORMAT, "model: tensors 'rope_factors_long/short.weight' must be F32");
}

void llm_bind_qk_norm(const loom_backend *be, const loom_model_hparams *hp, llm_layer *L, int il, bool required,
                      loom_error *err, loom_status *st) {
    L->q_norm = llm_bind_tensor(be, required, hp->head_dim_k, 1, 1, err, st, "blk.%d.attn_q_norm.weight", il);
    L->k_norm = llm_bind_tensor(be, required, hp->head_dim_k, 1, 1, err, st, "blk.%d.attn_k_norm.weight", il);
}

/* Every "<name>.scale" beside a "<name>.weight" of one value, or of one per expert of a
 * 3-D weight, scales that weight's products (loom_tensor_set_matmul_scale): NVFP4 files
 * (the converter keeps ModelOpt's per-tensor scale2 apart), BitNet's per-matrix scales,
 * gemma4's per-expert down scales; llama.cpp applies them through its generic ".scale"
 * pass. Other ".scale" tensors (gemma4's router input scale [n_embd]) are the
 * architecture's. */
static loom_status llm_bind_matmul_scales(loom_model *m, loom_error *err) {
    const loom_gguf *g = loom_model_gguf(m);
    const int64_t n = loom_gguf_tensor_count(g);
    for (int64_t i = 0; i < n; i++) {
        const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, i);
        const size_t len = ti ? strlen(ti->name) : 0;
        if (len < 7 || strcmp(ti->name + len - 6, ".scale")) continue;
        char wname[LOOM_GGUF_MAX_NAME + 8];
        snprintf(wname, sizeof wname, "%.*s.weight", (int)(len - 6), ti->name);
        loom_tensor *w = loom_backend_get_tensor(m->be, wname), *sc = loom_backend_get_tensor(m->be, ti->name);
        if (!w || !sc) continue;
        const int64_t ne = loom_tensor_nelements(sc);
        if (ne != 1 && (loom_tensor_n_dims(w) != 3 || ne != loom_tensor_ne(w, 2))) continue;
        if (loom_tensor_type(sc) != LOOM_TYPE_F32 || loom_tensor_set_matmul_scale(w, sc))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: tensor '%s' (the scale of '%s') must be F32 (is %s)",
                                  ti->name, wname, loom_type_name(loom_tensor_type(sc)));
    }
    return LOOM_OK;
}

loom_status llm_bind_weights(loom_model *m, loom_error *err) {
    loom_status s = m->arch->bind(m, err);
    if (!s) s = llm_bind_matmul_scales(m, err);
    /* grouped routing on every layer with a router */
    const int G = m->hx.n_expert_groups;
    if (!s && G > 1) {
        m->group_eye = loom_calloc((size_t)G * (size_t)G, sizeof *m->group_eye);
        if (!m->group_eye) return loom_error_set(err, LOOM_ERR_NOMEM, "model: out of host memory");
        for (int i = 0; i < G; i++) m->group_eye[(size_t)i * (size_t)G + (size_t)i] = 1.0f;
        for (int il = 0; il < m->hp.n_layer; il++) {
            llm_layer *L = &m->layers[il];
            if (!L->ffn_gate_inp) continue;
            L->n_groups = G;
            L->n_groups_used = m->hx.n_group_used;
            L->group_eye = m->group_eye;
        }
    }
    /* absorbed MLA (deepseek2's family): V is the latent, the first kv_lora dims of K */
    for (int il = 0; !s && m->kv_types && m->hx.mla && il < m->hp.n_layer; il++) m->kv_types[il].vlat = 1;
    /* sliding-window layers: the cache's window W counts the positions before the
     * token (masked iff q < p - W), llama.cpp's n_swa the token too (masked iff
     * p - q >= n_swa): W = n_swa - 1 */
    for (int il = 0; !s && m->kv_types && il < m->hp.n_layer; il++)
        if (llm_layer_is_swa(&m->hx, il)) m->kv_types[il].window = m->hx.n_swa - 1;
        else if (llm_layer_is_chunked(&m->hx, il)) m->kv_types[il].chunk = m->hx.n_chunk;
    return s;
}

#define bind(be, req, a, b, err, st, fmt, il) llm_bind_tensor(be, req, a, b, 1, err, st, fmt, il)

loom_status llm_bind_llama(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    loom_status st = LOOM_OK;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    const int64_t HQ = (int64_t)hp->n_head * hp->head_dim_k;
    const int64_t HK = (int64_t)hp->n_head_kv * hp->head_dim_k;
    const int64_t HV = (int64_t)hp->n_head_kv * hp->head_dim_v;

    if ((st = llm_bind_embd_output(m, err))) return st;
    bool qwen3 = !strcmp(hp->arch, "qwen3") || !strcmp(hp->arch, "qwen3vl") || !strcmp(hp->arch, "apertus");
    /* ernie4_5 and refact: llama.cpp loads an attn_output.bias but its graphs never add it */
    const bool bo_unused = !strcmp(hp->arch, "ernie4_5") || !strcmp(hp->arch, "refact");
    const bool mlp_bias = !strcmp(hp->arch, "llama") || !strcmp(hp->arch, "mistral3");
    /* seed_oss names its FFN norm post_attention_norm */
    const char *ffn_norm = !strcmp(hp->arch, "seed_oss") ? "blk.%d.post_attention_norm.weight" : "blk.%d.ffn_norm.weight";
    const int64_t NE = m->hx.n_expert;
    if (NE > 0 && !loom_backend_get_tensor(be, "blk.0.ffn_gate_exps.weight") &&
        loom_backend_get_tensor(be, "blk.0.ffn_gate.0.weight"))
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                              "model: experts stored one tensor each (blk.0.ffn_gate.0.weight: an old Mixtral "
                              "conversion) are not supported; convert the model again");
    if (NE == 0 && loom_backend_get_tensor(be, "blk.0.ffn_gate_inp.weight"))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: blk.0.ffn_gate_inp.weight (a router) without %s.expert_count",
                              hp->arch);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        /* q, k, v apart or fused into attn_qkv (llama.cpp loads either for these graphs);
         * their biases optional (qwen2's too: llama.cpp's create_tensor_qkv) */
        L->wqkv = bind(be, false, E, HQ + HK + HV, err, &st, "blk.%d.attn_qkv.weight", il);
        if (L->wqkv) {
            L->attn_norm = bind(be, true, E, 1, err, &st, "blk.%d.attn_norm.weight", il);
            L->wo = bind(be, true, (int64_t)hp->n_head * hp->head_dim_v, E, err, &st, "blk.%d.attn_output.weight", il);
            L->bqkv = bind(be, false, HQ + HK + HV, 1, err, &st, "blk.%d.attn_qkv.bias", il);
        } else {
            llm_bind_attn(be, hp, L, il, err, &st);
            L->bq = bind(be, false, HQ, 1, err, &st, "blk.%d.attn_q.bias", il);
            L->bk = bind(be, false, HK, 1, err, &st, "blk.%d.attn_k.bias", il);
            L->bv = bind(be, false, HV, 1, err, &st, "blk.%d.attn_v.bias", il);
        }
        if (!bo_unused) L->bo = bind(be, false, E, 1, err, &st, "blk.%d.attn_output.bias", il);
        llm_bind_qk_norm(be, hp, L, il, qwen3, err, &st);
        /* plamo's parallel block has one norm (m->hx.par_res) */
        if (!m->hx.par_res) L->ffn_norm = bind(be, true, E, 1, err, &st, ffn_norm, il);
        if (NE > 0) {
            llm_bind_experts(be, L, il, E, F, NE, err, &st);
        } else {
            /* arcee (AFM-4.5B): no gate, a squared-ReLU MLP; apertus: no gate, xIELU (llm_llama_ffn) */
            L->ffn_gate = bind(be, strcmp(hp->arch, "arcee") != 0 && strcmp(hp->arch, "apertus") != 0, E, F, err, &st,
                               "blk.%d.ffn_gate.weight", il);
            L->ffn_up = bind(be, true, E, F, err, &st, "blk.%d.ffn_up.weight", il);
            L->ffn_down = bind(be, true, F, E, err, &st, "blk.%d.ffn_down.weight", il);
            if (mlp_bias) { /* llama, mistral3: optional MLP biases (llama.cpp's graphs add them) */
                L->ffn_gate_b = bind(be, false, F, 1, err, &st, "blk.%d.ffn_gate.bias", il);
                L->ffn_up_b = bind(be, false, F, 1, err, &st, "blk.%d.ffn_up.bias", il);
                L->ffn_down_b = bind(be, false, E, 1, err, &st, "blk.%d.ffn_down.bias", il);
            }
        }
        llm_bind_rope_freqs(be, hp, L, il, err, &st);
    }
    return st;
}

void llm_bind_rope_freqs(const loom_backend *be, loom_model_hparams *hp, llm_layer *L, int il, loom_error *err,
                         loom_status *st) {
    if (*st) return;
    /* Llama 3.1 frequency factors: the backend makes a copy per layer. */
    char rn[64];
    snprintf(rn, sizeof rn, "blk.%d.rope_freqs.weight", il);
    loom_tensor *rf = loom_backend_get_tensor(be, rn);
    if (!rf) return;
    if (loom_tensor_type(rf) != LOOM_TYPE_F32 || loom_tensor_ne(rf, 0) < hp->n_rot / 2 ||
        loom_tensor_nelements(rf) != loom_tensor_ne(rf, 0)) {
        *st = loom_error_set(err, LOOM_ERR_FORMAT, "model: tensor '%s' must be F32 [>= %d] (is %s [%lld])", rn,
                             hp->n_rot / 2, loom_type_name(loom_tensor_type(rf)), (long long)loom_tensor_ne(rf, 0));
        return;
    }
    L->rope_freqs = rf;
    hp->has_rope_freqs = true;
}

/* ------------------------------------------------------------------ lifecycle */

static void fmt_memory(const loom_backend *be, char *buf, size_t size) {
    loom_backend_memory mem;
    buf[0] = 0;
    if (loom_backend_memory_get(be, &mem)) return;
    size_t off = 0;
    for (int d = 0; d < mem.n_devices && off < size; d++) {
        const loom_device_memory *dm = &mem.devices[d];
        uint64_t w = 0, c = 0;
        for (int i = 0; i < dm->n_layers; i++) {
            w += dm->weights[i].size;
            c += dm->cache[i].size;
        }
        int n = snprintf(buf + off, size - off, "%s%s: weights %.1f MiB, cache %.1f MiB, graph %.1f MiB",
                         d ? "; " : "", dm->name, w / 1048576.0, c / 1048576.0,
                         dm->graph.size / 1048576.0);
        if (n < 0) break;
        off += (size_t)n;
    }
    loom_backend_memory_free(&mem);
}

/* ALiBi models: their masks carry -|distance| where a key is visible */
static void kv_alibi(loom_model *m) {
    for (int g = 0; g < m->kv.n_groups; g++) m->kv.grp[g].cells.alibi = m->hx.alibi_bias > 0.0f;
}

static loom_status set_sizes(loom_model *m, int n_ctx, int n_batch, int n_seq, loom_error *err) {
    if (n_ctx < 0 || n_batch < 0 || n_seq < 0)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "model: negative n_ctx/n_batch/n_seq_max");
    if (n_seq == 0) n_seq = 1;
    if (n_seq > LOOM_SEQ_MAX)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "model: n_seq_max %d is too large (max %d)", n_seq,
                              LOOM_SEQ_MAX);
    const bool asked = n_ctx != 0;
    if (n_ctx == 0) n_ctx = m->hp.n_ctx_train > 0 && m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096;
    if (m->hx.max_pos > 0 && n_ctx > m->hx.max_pos) { /* learned positions: none past the table */
        if (asked)
            return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                                  "model: n_ctx %d exceeds the %d learned positions of 'position_embd.weight'", n_ctx,
                                  m->hx.max_pos);
        n_ctx = m->hx.max_pos;
    }
    if (n_ctx > (1 << 24))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "model: n_ctx %d is too large (max %d)", n_ctx,
                              1 << 24);
    if (n_batch == 0) n_batch = 512;
    if ((int64_t)n_batch > (int64_t)n_ctx * n_seq) n_batch = (int)((int64_t)n_ctx * n_seq);
    m->n_ctx = n_ctx;
    m->n_batch = n_batch;
    m->n_seq_max = n_seq;
    return LOOM_OK;
}

loom_status loom_model_plan(loom_backend *be, int32_t n_ctx, int32_t n_batch, int32_t n_seq_max,
                            loom_type cache_type, loom_error *err) {
    if (!be) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_model_plan: backend is NULL");
    loom_model *m = loom_calloc(1, sizeof *m);
    if (!m) return loom_error_set(err, LOOM_ERR_NOMEM, "loom_model_plan: out of memory");
    m->be = be;
    loom_status s = llm_load_hparams(be, &m->hp, &m->hx, &m->arch, err);
    if (!s) {
        m->layers = loom_calloc((size_t)m->hp.n_layer, sizeof *m->layers);
        m->kv_types = loom_calloc((size_t)m->hp.n_layer, sizeof *m->kv_types);
        if (!m->layers || !m->kv_types) s = loom_error_set(err, LOOM_ERR_NOMEM, "loom_model_plan: out of memory");
    }
    if (!s) s = llm_bind_weights(m, err);
    if (!s) s = set_sizes(m, n_ctx, n_batch, n_seq_max, err);
    if (!s) s = llm_kv_init(&m->kv, be, &m->hp, m->kv_types, m->n_ctx, m->n_seq_max, m->n_batch, cache_type, err);
    if (!s) llm_kv_choose_rotation(&m->kv, m->kv_types, 0);
    if (!s) kv_alibi(m);
    if (!s && !loom_backend_is_dry_run(be)) {
        m->out_ids = loom_malloc((size_t)m->n_batch * sizeof *m->out_ids);
        if (!m->out_ids) s = loom_error_set(err, LOOM_ERR_NOMEM, "loom_model_plan: out of memory");
    }
    if (!s) s = llm_reserve(m, err);
    m->be = NULL; /* borrowed */
    loom_model_close(m);
    return s;
}

/* The weights the llama-family graphs (llama.c) use only as loom_mul_mat weights, and
 * the MoE experts (llm_graph.c) only as loom_mul_mat_id weights: candidates for the
 * backend's CPU repacking (loom_backend_params.repack_filter). */
static bool llm_repack_filter(const char *name, void *user) {
    (void)user;
    static const char *const mm[] = {"attn_q.weight",        "attn_k.weight",      "attn_v.weight",
                                     "attn_output.weight",   "ffn_gate.weight",    "ffn_up.weight",
                                     "ffn_down.weight",      "ffn_gate_exps.weight", "ffn_up_exps.weight",
                                     "ffn_down_exps.weight"};
    if (!strcmp(name, "output.weight")) return true;
    return llm_blk_tensor_in(name, mm, sizeof mm / sizeof mm[0]);
}

loom_status loom_model_open(const loom_model_params *params, loom_model **out, loom_error *err) {
    if (!out) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_model_open: out is NULL");
    *out = NULL;
    if (!params || !params->path)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_model_open: no model path");
    if (params->n_ctx < 0 || params->n_batch < 0 || params->n_threads < 0)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                              "loom_model_open: negative n_ctx/n_batch/n_threads");

    loom_model *m = loom_calloc(1, sizeof *m);
    if (!m) return loom_error_set(err, LOOM_ERR_NOMEM, "loom_model_open: out of memory");
    atomic_init(&m->cancel, false);
    m->dry_run = params->dry_run;

    loom_backend_params bp = loom_backend_default_params();
    bp.n_threads = params->n_threads;
    bp.n_gpu_layers = params->n_gpu_layers;
    bp.tensor_split = params->tensor_split;
    bp.n_tensor_split = params->n_tensor_split;
    bp.flash_attn = params->flash_attn;
    bp.dry_run = params->dry_run;
    bp.no_mmap = params->no_mmap;
    bp.sim_devices = params->sim_devices;
    bp.n_sim_devices = params->n_sim_devices;
    bp.repack_filter = params->no_repack ? NULL : llm_repack_filter;
    bp.vk_devices = params->vk_devices;
    bp.vk_flags = params->vk_flags;
    bp.vk_loader = params->vk_loader;
    loom_status s = loom_backend_open(params->path, &bp, &m->be, err);
    if (s) goto fail;

    if ((s = llm_load_hparams(m->be, &m->hp, &m->hx, &m->arch, err))) goto fail;
    m->layers = loom_calloc((size_t)m->hp.n_layer, sizeof *m->layers);
    m->kv_types = loom_calloc((size_t)m->hp.n_layer, sizeof *m->kv_types);
    if (!m->layers || !m->kv_types) {
        s = loom_error_set(err, LOOM_ERR_NOMEM, "loom_model_open: out of memory");
        goto fail;
    }
    if ((s = llm_bind_weights(m, err))) goto fail;
    if (m->hx.mrope) {
        m->mrope_ff = loom_malloc((size_t)(m->hp.n_rot / 2 > 0 ? m->hp.n_rot / 2 : 1) * sizeof *m->mrope_ff);
        if (!m->mrope_ff) {
            s = loom_error_set(err, LOOM_ERR_NOMEM, "loom_model_open: out of host memory");
            goto fail;
        }
        llm_mrope_fill(&m->hx, m->hp.n_rot, m->mrope_ff);
    }

    if ((s = set_sizes(m, params->n_ctx, params->n_batch, params->n_seq_max, err))) goto fail;
    if ((s = llm_kv_init(&m->kv, m->be, &m->hp, m->kv_types, m->n_ctx, m->n_seq_max, m->n_batch,
                         params->cache_type, err)))
        goto fail;
    llm_kv_choose_rotation(&m->kv, m->kv_types, params->kv_rotate);
    kv_alibi(m);
    m->ctx_shift = params->ctx_shift;
    m->n_keep = params->n_keep < 0 ? 0 : params->n_keep;

    m->out_ids = loom_malloc((size_t)m->n_batch * sizeof *m->out_ids);
    m->row_out = loom_malloc((size_t)m->n_batch * sizeof *m->row_out);
    m->attn_temp = loom_malloc((size_t)m->n_batch * sizeof *m->attn_temp);
    m->seq_host = loom_malloc((size_t)m->n_batch * sizeof *m->seq_host);
    m->logits_cap = (size_t)m->hp.n_vocab;
    m->logits = loom_malloc(m->logits_cap * sizeof *m->logits);
    m->dec.io.store = loom_calloc(4 * (size_t)m->hp.n_layer, sizeof *m->dec.io.store);
    if (!m->out_ids || !m->row_out || !m->attn_temp || !m->seq_host || !m->logits || !m->dec.io.store ||
        loom_batch_init(&m->eb, m->n_batch, 1, NULL)) {
        s = loom_error_set(err, LOOM_ERR_NOMEM, "loom_model_open: out of host memory");
        goto fail;
    }

    /* Cache is committed; now plan the worst-case graph before reading any weight. */
    if ((s = llm_reserve(m, err))) {
        if (s == LOOM_ERR_NOMEM) {
            char mb[400];
            fmt_memory(m->be, mb, sizeof mb);
            loom_error_clear(err);
            loom_error_set(err, s, "not enough memory for the compute graph (%s)", mb);
        }
        goto fail;
    }
    if (!params->dry_run) {
        s = loom_backend_load(m->be, params->progress, params->progress_user, err);
        if (s) goto fail;
    }
    *out = m;
    return LOOM_OK;
fail:
    loom_model_close(m);
    return s;
}

void loom_model_close(loom_model *m) {
    if (!m) return;
    llm_decode_drop(m); /* its context belongs to the backend */
    loom_free(m->dec.io.store);
    llm_kv_free(&m->kv);
    loom_tokenizer_free(m->tok);
    loom_backend_close(m->be);
    loom_free(m->layers);
    loom_free(m->kv_types);
    loom_free(m->out_ids);
    loom_free(m->row_out);
    loom_free(m->attn_temp);
    loom_free(m->seq_host);
    loom_free(m->mrope_ff);
    loom_free(m->group_eye);
    loom_free(m->chunk_map);
    loom_free(m->shift_kernel);
    loom_batch_free(&m->eb);
    loom_free(m->logits);
    loom_free(m);
}

const float *loom_model_logits(const loom_model *m, int32_t row) {
    if (!m || m->n_logits <= 0) return NULL;
    if (row == -1) row = m->n_logits - 1;
    if (row < 0 || row >= m->n_logits) return NULL;
    return m->logits + (size_t)row * (size_t)m->hp.n_vocab;
}

int32_t loom_model_n_logits(const loom_model *m) { return m ? m->n_logits : 0; }

int32_t llm_argmax_f32(const float *l, int32_t n) {
    /* The first index of the largest non-NaN value (NaN never wins; -inf counts);
     * -1 when every value is NaN. Eight independent lanes, each keeping its best value in a register:
     * comparing against l[best] made every step wait for a load through the previous
     * compare (measured 138 us for 32000 logits on the bench VM, 12 us like this). */
    if (n <= 0) return -1;
    float bv[8];
    int32_t bi[8];
    for (int k = 0; k < 8; k++) {
        bv[k] = -INFINITY;
        bi[k] = -1;
    }
    int32_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            if (l[i + k] > bv[k]) {
                bv[k] = l[i + k];
                bi[k] = i + k;
            }
    for (; i < n; i++)
        if (l[i] > bv[0]) { /* the tail's indices exceed every lane's: order kept */
            bv[0] = l[i];
            bi[0] = i;
        }
    float v = bv[0];
    int32_t best = bi[0];
    for (int k = 1; k < 8; k++)
        if (bi[k] >= 0 && (best < 0 || bv[k] > v || (bv[k] == v && bi[k] < best))) {
            v = bv[k];
            best = bi[k];
        }
    if (best >= 0) return best;
    /* nothing above -inf: the first value that is not NaN (-inf), if any */
    for (int32_t j = 0; j < n; j++)
        if (l[j] == l[j]) return j;
    return -1;
}

int32_t loom_model_argmax(const loom_model *m, int32_t row) {
    const float *l = loom_model_logits(m, row);
    if (!l) return -1;
    return llm_argmax_f32(l, m->hp.n_vocab);
}

int32_t loom_model_n_vocab(const loom_model *m) { return m ? m->hp.n_vocab : 0; }
int32_t loom_model_n_seq_max(const loom_model *m) { return m ? m->n_seq_max : 0; }
int32_t loom_model_n_ctx(const loom_model *m) { return m ? m->n_ctx : 0; }
int32_t loom_model_n_batch(const loom_model *m) { return m ? m->n_batch : 0; }

void loom_model_reset(loom_model *m) {
    if (!m) return;
    llm_kv_clear(&m->kv);
    if (m->kv.n_recurrent > 0) { /* states back to zero (a failure leaves them for the next reset) */
        loom_error e = {0};
        (void)llm_rs_copy(m, -1, -1, &e);
    }
    m->n_logits = 0;
    m->n_rows = 0;
    atomic_store(&m->cancel, false); /* a pending cancel belonged to what is forgotten */
}

const loom_model_hparams *loom_model_get_hparams(const loom_model *m) { return m ? &m->hp : NULL; }
loom_backend *loom_model_backend(const loom_model *m) { return m ? m->be : NULL; }
const loom_gguf *loom_model_gguf(const loom_model *m) { return m ? loom_backend_gguf(m->be) : NULL; }

loom_status loom_model_tokenizer(loom_model *m, const loom_tokenizer **out, loom_error *err) {
    if (!m || !out) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_model_tokenizer: NULL argument");
    *out = NULL;
    if (!m->tok) {
        loom_status s = loom_tokenizer_new_from_gguf(loom_backend_gguf(m->be), &m->tok, err);
        if (s) return s;
    }
    *out = m->tok;
    return LOOM_OK;
}

void loom_model_set_eval_callback(loom_model *m, loom_eval_cb cb, void *user) {
    if (!m) return;
    m->eval_cb = cb;
    m->eval_user = user;
}

void loom_model_cancel(loom_model *m) {
    if (!m) return;
    /* One flag: every eval graph polls it through its abort callback (generate.c), and
     * the eval that returns LOOM_ERR_CANCELLED consumes it. It must not also set the
     * backend's own cancel flag: that second store, landing after an eval had already
     * consumed this cancel and the next compute had cleared the backend flag, cancelled
     * that next eval too (one cancel observed twice; test_llm_cancel_race, ~2% of runs). */
    atomic_store(&m->cancel, true);
}
