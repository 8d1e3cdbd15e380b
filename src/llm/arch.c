/*
 * arch.c - the architecture table: each entry names its rope mode, extra keys, weight
 * binding and graph (llama.c, arch_*.c).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "arch.h"

/* mistral3 (Mistral Small 3.x / Ministral 3): the llama graph plus YaRN keys and the
 * position-dependent query temperature (llama.cpp: the temperature's floor length is
 * the original context length). */
static loom_status mistral3_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx,
                                    loom_error *err) {
    double v;
    bool has;
    loom_status s;
    if ((s = llm_get_float_key(g, hp->arch, "attention.temperature_scale", 0.0, &v, &has, err))) return s;
    hx->attn_temp_scale = (float)v;
    if (has && v != 0.0) {
        hx->attn_temp_floor = hx->n_ctx_orig;
        if (hx->attn_temp_floor <= 0)
            return loom_error_set(err, LOOM_ERR_FORMAT,
                                  "model: %s.attention.temperature_scale needs rope.scaling.original_context_length "
                                  "(or context_length)", hp->arch);
    }
    return llm_arch_yarn_keys(g, hp, hx, err);
}

loom_status llm_arch_yarn_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx,
                               loom_error *err) {
    double v;
    loom_status s;
    if ((s = llm_get_float_key(g, hp->arch, "rope.scaling.yarn_beta_fast", 32.0, &v, NULL, err))) return s;
    hx->yarn_beta_fast = (float)v;
    if ((s = llm_get_float_key(g, hp->arch, "rope.scaling.yarn_beta_slow", 1.0, &v, NULL, err))) return s;
    hx->yarn_beta_slow = (float)v;
    if ((s = llm_get_float_key(g, hp->arch, "rope.scaling.yarn_log_multiplier", 0.0, &v, NULL, err))) return s;
    hx->yarn_log_mul = (float)v;
    return LOOM_OK;
}

/* llama: Mixtral-style experts when expert_count is there (llama.cpp's llama graph: the
 * experts are feed_forward_length wide, softmax router, weights renormalised, optional
 * expert_weights_scale). */
static loom_status llama_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    int64_t ne;
    double d;
    bool has;
    loom_status s;
    if ((s = llm_get_int_key(g, hp->arch, "expert_count", false, 0, &ne, err))) return s;
    if (ne == 0) return LOOM_OK;
    if ((s = llm_arch_moe_keys(g, hp, hx, err))) return s;
    hx->n_ff_exp = hp->n_ff;
    if ((s = llm_get_float_key(g, hp->arch, "expert_weights_scale", 0.0, &d, &has, err))) return s;
    if (has && !(d >= 0 && d < 1e6))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_weights_scale = %g is out of range", hp->arch, d);
    hx->expert_weights_scale = (float)d;
    return LOOM_OK;
}

/* Hunyuan (hunyuan-dense: Hunyuan 0.5B-7B; hunyuan-moe: Hunyuan-A13B): the llama block with
 * per-head q / k norms after rope; hunyuan-moe has experts feed_forward_length wide (as
 * llama.cpp builds them) beside a shared expert (expert_shared_feed_forward_length, default
 * feed_forward_length); hunyuan-dense ignores an expert_count of 1 and honours
 * rope.scaling.alpha (NTK: base * alpha^(D / (D - 2)); today's converter bakes it into
 * rope.freq_base instead). */
static loom_status hunyuan_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    const bool moe = !strcmp(hp->arch, "hunyuan-moe");
    loom_status s;
    if (!moe) {
        double alpha;
        bool has;
        if ((s = llm_get_float_key(g, hp->arch, "rope.scaling.alpha", 0.0, &alpha, &has, err))) return s;
        if (has && alpha > 0) {
            const double d = hp->head_dim_k;
            if (!(alpha < 1e6) || d <= 2)
                return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.rope.scaling.alpha = %g is out of range",
                                      hp->arch, alpha);
            hp->rope_base = (float)((double)hp->rope_base * pow(alpha, d / (d - 2)));
        }
        /* hunyuan_vl (HunyuanOCR): XD-RoPE, four sections of rotary pairs (a text token
         * turns the t/h/w ones at its position, the fourth not at all); llama.cpp uses them
         * when the t and h sections are both non-empty, else the plain neox rope */
        char key[96];
        snprintf(key, sizeof key, "%s.rope.dimension_sections", hp->arch);
        if (!strcmp(hp->arch, "hunyuan_vl") && loom_gguf_find_key(g, key) >= 0) {
            if ((s = llm_arch_mrope_keys(g, hp, hx, false, err))) return s;
            if (!(hx->rope_sections[0] > 0 && hx->rope_sections[1] > 0)) hx->mrope = 0;
        }
        int64_t ne;
        if ((s = llm_get_int_key(g, hp->arch, "expert_count", false, 0, &ne, err))) return s;
        return ne > 1 ? loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s with %lld experts", hp->arch, (long long)ne)
                      : LOOM_OK;
    }
    if ((s = llama_hparams(g, hp, hx, err))) return s;
    if (hx->n_expert < 1)
        return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s.expert_count' is missing", hp->arch);
    int64_t fs;
    if ((s = llm_get_int_key(g, hp->arch, "expert_shared_feed_forward_length", false, hp->n_ff, &fs, err))) return s;
    if (fs < 1 || fs > ((int64_t)1 << 24))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_shared_feed_forward_length = %lld is out of range",
                              hp->arch, (long long)fs);
    hx->n_ff_shexp = (int)fs;
    return LOOM_OK;
}

static loom_status hunyuan_bind(loom_model *m, loom_error *err) {
    loom_status s = llm_bind_llama(m, err);
    for (int il = 0; il < m->hp.n_layer && !s; il++) {
        llm_layer *L = &m->layers[il];
        /* llm_bind_llama took them as optional pre-rope norms: they are required, and post */
        llm_bind_qk_norm(m->be, &m->hp, L, il, true, err, &s);
        L->q_norm_post = L->q_norm;
        L->k_norm_post = L->k_norm;
        L->q_norm = L->k_norm = NULL;
        if (m->hx.n_expert > 0) llm_bind_shared_expert(m->be, L, il, m->hp.n_embd, m->hx.n_ff_shexp, err, &s);
        if (!s && m->hx.mrope && L->rope_freqs)
            s = loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: rope_freqs with rope.dimension_sections",
                               m->hp.arch);
    }
    return s;
}

/* PLaMo 1 (plamo): the llama block run in parallel (attention and MLP both on the
 * attention norm's output; no FFN norm), neox rope */
static loom_status plamo_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    (void)g, (void)hp, (void)err;
    hx->par_res = true;
    return LOOM_OK;
}

/* openPangu-Embedded (pangu-embedded): the llama block with the attention output's bias
 * required; llama.cpp loads rope_freqs but never applies them, nor does Loom. */
static loom_status pangu_bind(loom_model *m, loom_error *err) {
    loom_status s = llm_bind_llama(m, err);
    for (int il = 0; il < m->hp.n_layer && !s; il++) {
        llm_layer *L = &m->layers[il];
        L->bo = llm_bind_tensor(m->be, true, m->hp.n_embd, 1, 1, err, &s, "blk.%d.attn_output.bias", il);
        L->rope_freqs = NULL;
    }
    m->hp.has_rope_freqs = false;
    return s;
}

/* Nanbeige (nanbeige): the llama block. Looped files (num_loops = N > 1): the file's
 * block_count layers run N times with the same weights, each run with a cache of its own
 * (graph layer i + j * block_count runs block i), and output_norm is applied to the
 * hidden state between the runs unless skip_loop_final_norm is true (llama.cpp's
 * nanbeige graph). The caches of block i's runs live on block i's device.
 * (llama.cpp's nanbeige graph reads no attention.scale: 1/sqrt(head_dim), as here.) */
static loom_status nanbeige_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    int64_t loops;
    loom_status s = llm_get_int_key(g, hp->arch, "num_loops", false, 1, &loops, err);
    if (s) return s;
    if (loops < 1 || loops * hp->n_layer > 4096)
        return loom_error_set(err, LOOM_ERR_FORMAT,
                              "model: %s.num_loops = %lld is out of range (1 to %d for %d blocks: at most 4096 layers)",
                              hp->arch, (long long)loops, 4096 / hp->n_layer, hp->n_layer);
    char key[96];
    snprintf(key, sizeof key, "%s.skip_loop_final_norm", hp->arch);
    bool skip = false;
    if (loom_gguf_find_key(g, key) >= 0 && loom_gguf_get_bool(g, key, &skip))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' must be a boolean", key);
    if (loops == 1) return LOOM_OK;
    hx->loop_layers = hp->n_layer;
    hx->loop_norm = !skip;
    hp->n_layer = (int)(loops * hp->n_layer);
    return LOOM_OK;
}

/* the file's blocks bound once; the later runs share their weights and layer types */
static loom_status nanbeige_bind(loom_model *m, loom_error *err) {
    const int nb = m->hx.loop_layers, n = m->hp.n_layer;
    if (nb <= 0) return llm_bind_llama(m, err);
    m->hp.n_layer = nb;
    loom_status s = llm_bind_llama(m, err);
    m->hp.n_layer = n;
    for (int il = nb; il < n && !s; il++) {
        m->layers[il] = m->layers[il % nb];
        if (m->kv_types) m->kv_types[il] = m->kv_types[il % nb];
    }
    return s;
}

/* Snowflake Arctic (arctic): the llama block whose dense MLP (embedding_length wide) runs
 * beside experts (feed_forward_length wide, softmax router, weights renormalised) that
 * read the layer input through their own norm (ffn_norm_exps): h = h + a + mlp + moe */
static loom_status arctic_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_arch_moe_keys(g, hp, hx, err);
    hx->n_ff_exp = hp->n_ff;
    return s;
}

static loom_status arctic_bind(loom_model *m, loom_error *err) {
    loom_status s = llm_bind_llama(m, err); /* experts [E, n_ff, n_expert] */
    const int64_t E = m->hp.n_embd;
    for (int il = 0; il < m->hp.n_layer && !s; il++) {
        llm_layer *L = &m->layers[il];
        L->ffn_gate = llm_bind_tensor(m->be, true, E, E, 1, err, &s, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(m->be, true, E, E, 1, err, &s, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(m->be, true, E, E, 1, err, &s, "blk.%d.ffn_down.weight", il);
        L->ffn_norm_exps = llm_bind_tensor(m->be, true, E, 1, 1, err, &s, "blk.%d.ffn_norm_exps.weight", il);
    }
    return s;
}

/* Apertus (Swiss AI): the llama block with qwen3's per-head q/k norms before rope and an
 * MLP without gate whose activation is xIELU, its four parameters per layer in the
 * un-prefixed keys xielu.alpha_n / alpha_p / beta / eps (one value or one per layer, as
 * llama.cpp reads them). */
static loom_status apertus_bind(loom_model *m, loom_error *err) {
    loom_status s = llm_bind_llama(m, err);
    static const char *const keys[4] = {"xielu.alpha_n", "xielu.alpha_p", "xielu.beta", "xielu.eps"};
    const loom_gguf *g = loom_model_gguf(m);
    for (int i = 0; i < 4 && !s; i++) {
        const int64_t ki = loom_gguf_find_key(g, keys[i]);
        if (ki < 0) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: required key '%s' is missing", keys[i]);
        const bool arr = loom_gguf_kv_type(g, ki) == LOOM_GGUF_ARRAY;
        if (arr && loom_gguf_kv_array_len(g, ki) != (uint64_t)m->hp.n_layer)
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' has %llu values for %d layers", keys[i],
                                  (unsigned long long)loom_gguf_kv_array_len(g, ki), m->hp.n_layer);
        for (int il = 0; il < m->hp.n_layer; il++) {
            double v;
            if ((arr ? loom_gguf_kv_arr_float(g, ki, (uint64_t)il, &v) : loom_gguf_kv_float(g, ki, &v)) || !isfinite(v) ||
                fabs(v) > 1e6)
                return loom_error_set(err, LOOM_ERR_FORMAT, "model: key '%s' (layer %d) is not a finite number", keys[i],
                                      il);
            m->layers[il].xielu[i] = (float)v;
            m->layers[il].xielu_on = true;
        }
    }
    return s;
}

/* Baichuan 2 (baichuan): the llama block; llama.cpp decides by the layer count: 32 (the 7B)
 * rope, 40 (the 13B) ALiBi (max bias 8) in place of rope, any other count neither (its
 * graph's "unknown" type: no position information at all), as Loom does. */
static loom_status baichuan_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    if (hp->n_layer == 40) return llm_alibi_keys(g, hp, hx, 8.0, err);
    if (hp->n_layer != 32) hx->rope_off = true;
    return LOOM_OK;
}

/* Refact (refact): the llama block with ALiBi (max bias 8) in place of rope */
static loom_status refact_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    return llm_alibi_keys(g, hp, hx, 8.0, err);
}

/* Qwen 1 (qwen): fused q|k|v with its bias, feed_forward_length twice the MLP's width */
static loom_status qwen_bind(loom_model *m, loom_error *err) {
    const loom_backend *be = m->be;
    loom_model_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff / 2;
    if (hp->n_ff % 2 || hp->n_head_kv != hp->n_head)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: qwen: feed_forward_length %d must be even and "
                              "head_count_kv = head_count", hp->n_ff);
    loom_status st = llm_bind_embd_output(m, err);
    for (int il = 0; il < hp->n_layer && !st; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.attn_norm.weight", il);
        L->wqkv = llm_bind_tensor(be, true, E, 3 * E, 1, err, &st, "blk.%d.attn_qkv.weight", il);
        L->bqkv = llm_bind_tensor(be, true, 3 * E, 1, 1, err, &st, "blk.%d.attn_qkv.bias", il);
        L->wo = llm_bind_tensor(be, true, E, E, 1, err, &st, "blk.%d.attn_output.weight", il);
        L->ffn_norm = llm_bind_tensor(be, true, E, 1, 1, err, &st, "blk.%d.ffn_norm.weight", il);
        L->ffn_gate = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_gate.weight", il);
        L->ffn_up = llm_bind_tensor(be, true, E, F, 1, err, &st, "blk.%d.ffn_up.weight", il);
        L->ffn_down = llm_bind_tensor(be, true, F, E, 1, err, &st, "blk.%d.ffn_down.weight", il);
    }
    return st;
}

/* Orion (orion): the llama block with LayerNorms (weights and biases) */
static loom_status orion_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    hx->ln_norms = true;
    return llm_ln_hparams(g, hp, hx, err);
}

static loom_status orion_bind(loom_model *m, loom_error *err) {
    loom_status s = llm_bind_llama(m, err);
    const int64_t E = m->hp.n_embd;
    m->output_norm_b = llm_bind_tensor(m->be, true, E, 1, 1, err, &s, "output_norm.bias", 0);
    for (int il = 0; il < m->hp.n_layer && !s; il++) {
        llm_layer *L = &m->layers[il];
        L->attn_norm_b = llm_bind_tensor(m->be, true, E, 1, 1, err, &s, "blk.%d.attn_norm.bias", il);
        L->ffn_norm_b = llm_bind_tensor(m->be, true, E, 1, 1, err, &s, "blk.%d.ffn_norm.bias", il);
    }
    return s;
}

/* SmolLM3: the llama block; every fourth layer has no rope (llama.cpp fixes the step at
 * 4; no key states it). */
static loom_status smollm3_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    hx->no_rope_step = 4;
    return llama_hparams(g, hp, hx, err);
}

/* Qwen2-VL / Qwen2.5-VL (qwen2vl) and Qwen3-VL (qwen3vl) text: the qwen2 / qwen3 blocks
 * with rope.dimension_sections (4 counts of rotary pairs), sequential or interleaved. */
loom_status llm_arch_mrope_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, bool interleaved,
                                loom_error *err) {
    char key[96];
    snprintf(key, sizeof key, "%s.rope.dimension_sections", hp->arch);
    int64_t ki = loom_gguf_find_key(g, key);
    if (ki < 0) return loom_error_set(err, LOOM_ERR_NOT_FOUND, "model: key '%s' is missing", key);
    uint64_t n = 0;
    loom_gguf_vtype et;
    if (loom_gguf_kv_type(g, ki) != LOOM_GGUF_ARRAY || loom_gguf_kv_arr(g, ki, &et, NULL, &n) || n < 3 || n > 4)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s' must be an array of 3 or 4 integers", key);
    int64_t sum = 0;
    for (uint64_t i = 0; i < 4; i++) {
        int64_t v = 0;
        if (i < n && loom_gguf_kv_arr_int(g, ki, i, &v))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s' must be an array of integers", key);
        if (v < 0 || v > 65536)
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s'[%llu] = %lld is out of range", key,
                                  (unsigned long long)i, (long long)v);
        hx->rope_sections[i] = (int)v;
        sum += v;
    }
    /* ggml requires a t, h or w section and at most head_dim pairs in all */
    if (hx->rope_sections[0] + hx->rope_sections[1] + hx->rope_sections[2] == 0 || sum > hp->head_dim_k)
        return loom_error_set(err, LOOM_ERR_FORMAT,
                              "model: '%s' = [%d, %d, %d, %d]: needs a t, h or w section and at most %d pairs", key,
                              hx->rope_sections[0], hx->rope_sections[1], hx->rope_sections[2], hx->rope_sections[3],
                              hp->head_dim_k);
    hx->mrope = interleaved ? 2 : 1;
    return LOOM_OK;
}

static loom_status qwen2vl_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    return llm_arch_mrope_keys(g, hp, hx, false, err);
}

static loom_status qwen3vl_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    /* n_deepstack_layers only matters for image embeddings, which text never has */
    return llm_arch_mrope_keys(g, hp, hx, true, err);
}

static loom_status qwen3vlmoe_hparams(const loom_gguf *g, loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    loom_status s = llm_arch_moe_keys(g, hp, hx, err);
    return s ? s : llm_arch_mrope_keys(g, hp, hx, true, err);
}

static const llm_arch k_archs[] = {
    {"llama", LOOM_ROPE_NORMAL, llama_hparams, llm_bind_llama, llm_build_llama, false},
    {"mistral", LOOM_ROPE_NORMAL, llama_hparams, llm_bind_llama, llm_build_llama, false},
    {"qwen2", LOOM_ROPE_NEOX, NULL, llm_bind_llama, llm_build_llama, false},
    {"qwen3", LOOM_ROPE_NEOX, NULL, llm_bind_llama, llm_build_llama, false},
    {"xverse", LOOM_ROPE_NORMAL, NULL, llm_bind_llama, llm_build_llama, false},
    {"baichuan", LOOM_ROPE_NORMAL, baichuan_hparams, llm_bind_llama, llm_build_llama, false},
    {"qwen", LOOM_ROPE_NEOX, NULL, qwen_bind, llm_build_llama, false},
    {"refact", LOOM_ROPE_NORMAL, refact_hparams, llm_bind_llama, llm_build_llama, false},
    {"orion", LOOM_ROPE_NEOX, orion_hparams, orion_bind, llm_build_llama, false},
    {"exaone", LOOM_ROPE_NEOX, NULL, llm_bind_llama, llm_build_llama, false}, /* EXAONE 3.x: the llama block, neox rope */
    {"exaone4", LOOM_ROPE_NEOX, llm_exaone4_hparams, llm_exaone4_bind, llm_exaone4_build, false},
    {"smollm3", LOOM_ROPE_NORMAL, smollm3_hparams, llm_bind_llama, llm_build_llama, false},
    {"deci", LOOM_ROPE_NORMAL, NULL, llm_deci_bind, llm_deci_build, false},
    {"bitnet", LOOM_ROPE_NEOX, NULL, llm_bitnet_bind, llm_bitnet_build, false},
    {"apertus", LOOM_ROPE_NEOX, NULL, apertus_bind, llm_build_llama, false},
    {"arcee", LOOM_ROPE_NORMAL, NULL, llm_bind_llama, llm_build_llama, false}, /* AFM-4.5B: squared-ReLU MLP without a gate */
    {"internlm2", LOOM_ROPE_NORMAL, NULL, llm_bind_llama, llm_build_llama, false}, /* q/k/v split by the converter */
    {"ernie4_5", LOOM_ROPE_NORMAL, NULL, llm_bind_llama, llm_build_llama, false},  /* ERNIE 4.5 dense: optional wo bias */
    {"ernie4_5-moe", LOOM_ROPE_NORMAL, llm_ernie45moe_hparams, llm_ernie45moe_bind, llm_build_llama, false},
    {"hunyuan-dense", LOOM_ROPE_NEOX, hunyuan_hparams, hunyuan_bind, llm_build_llama, false},
    {"hunyuan-moe", LOOM_ROPE_NEOX, hunyuan_hparams, hunyuan_bind, llm_build_llama, false},
    {"hunyuan_vl", LOOM_ROPE_NEOX, hunyuan_hparams, hunyuan_bind, llm_build_llama, false}, /* + XD-RoPE sections */
    {"maincoder", LOOM_ROPE_NORMAL, NULL, hunyuan_bind, llm_build_llama, false}, /* post-rope q/k norms */
    {"pangu-embedded", LOOM_ROPE_NEOX, NULL, pangu_bind, llm_build_llama, false},
    {"nanbeige", LOOM_ROPE_NORMAL, nanbeige_hparams, nanbeige_bind, llm_build_llama, false},
    {"plamo", LOOM_ROPE_NEOX, plamo_hparams, llm_bind_llama, llm_build_llama, false},
    {"arctic", LOOM_ROPE_NORMAL, arctic_hparams, arctic_bind, llm_build_llama, false},
    {"openelm", LOOM_ROPE_NEOX, NULL, llm_openelm_bind, llm_openelm_build, false},
    {"muse-glimmer", LOOM_ROPE_NORMAL, llm_muse_hparams, llm_muse_bind, llm_muse_build, false},
    {"talkie", LOOM_ROPE_NEOX, llm_muse_hparams, llm_muse_bind, llm_muse_build, false},
    {"seed_oss", LOOM_ROPE_NEOX, NULL, llm_bind_llama, llm_build_llama, false},    /* FFN norm named post_attention_norm */
    {"qwen2vl", LOOM_ROPE_NEOX, qwen2vl_hparams, llm_bind_llama, llm_build_llama, false},
    /* PaddleOCR-VL text (ERNIE 4.5 0.3B): the qwen2vl block, its biases optional */
    {"paddleocr", LOOM_ROPE_NEOX, qwen2vl_hparams, llm_bind_llama, llm_build_llama, false},
    {"qwen3vl", LOOM_ROPE_NEOX, qwen3vl_hparams, llm_bind_llama, llm_build_llama, false},
    {"qwen35", LOOM_ROPE_NEOX, llm_qwen35_hparams, llm_qwen35_bind, llm_qwen35_build, false},
    {"qwen35moe", LOOM_ROPE_NEOX, llm_qwen35_hparams, llm_qwen35_bind, llm_qwen35_build, false},
    {"qwen3next", LOOM_ROPE_NEOX, llm_qwen35_hparams, llm_qwen35_bind, llm_qwen35_build, false},
    {"mistral3", LOOM_ROPE_NORMAL, mistral3_hparams, llm_bind_llama, llm_mistral3_build, false},
    {"glm4", LOOM_ROPE_NORMAL, llm_glm4_hparams, llm_glm4_bind, llm_glm4_build, false},
    {"chatglm", LOOM_ROPE_NORMAL, NULL, llm_glm4_bind, llm_glm4_build, false},
    {"llama4", LOOM_ROPE_NORMAL, llm_llama4_hparams, llm_llama4_bind, llm_llama4_build, false},
    {"bailingmoe2", LOOM_ROPE_NEOX, llm_glm4moe_hparams, llm_glm4moe_bind, llm_glm4moe_build, false},
    {"glm4moe", LOOM_ROPE_NEOX, llm_glm4moe_hparams, llm_glm4moe_bind, llm_glm4moe_build, false},
    {"dots1", LOOM_ROPE_NEOX, llm_glm4moe_hparams, llm_glm4moe_bind, llm_glm4moe_build, false},
    {"bailingmoe", LOOM_ROPE_NORMAL, llm_glm4moe_hparams, llm_glm4moe_bind, llm_glm4moe_build, false},
    {"exaone-moe", LOOM_ROPE_NEOX, llm_glm4moe_hparams, llm_glm4moe_bind, llm_glm4moe_build, false},
    {"deepseek", LOOM_ROPE_NORMAL, llm_glm4moe_hparams, llm_glm4moe_bind, llm_glm4moe_build, false},
    {"deepseek2-ocr", LOOM_ROPE_NEOX, llm_glm4moe_hparams, llm_glm4moe_bind, llm_glm4moe_build, false},
    {"plamo2", LOOM_ROPE_NEOX, llm_plamo2_hparams, llm_plamo2_bind, llm_plamo2_build, false},
    {"plamo3", LOOM_ROPE_NEOX, llm_plamo3_hparams, llm_plamo2_bind, llm_plamo2_build, false},
    {"dbrx", LOOM_ROPE_NEOX, llm_dbrx_hparams, llm_dbrx_bind, llm_dbrx_build, false},
    {"cogvlm", LOOM_ROPE_NEOX, llm_cogvlm_hparams, llm_cogvlm_bind, llm_build_llama, false},
    {"chameleon", LOOM_ROPE_NORMAL, llm_chameleon_hparams, llm_chameleon_bind, llm_chameleon_build, false},
    {"grovemoe", LOOM_ROPE_NEOX, llm_grovemoe_hparams, llm_qwen3moe_bind, llm_qwen3moe_build, false},
    {"grok", LOOM_ROPE_NEOX, llm_grok_hparams, llm_grok_bind, llm_grok_build, false},
    {"mimo2", LOOM_ROPE_NEOX, llm_mimo2_hparams, llm_mimo2_bind, llm_mimo2_build, false},
    {"step35", LOOM_ROPE_NEOX, llm_step35_hparams, llm_step35_bind, llm_step35_build, false},
    {"hy_v3", LOOM_ROPE_NEOX, llm_hyv3_hparams, llm_hyv3_bind, llm_step35_build, false},
    {"laguna", LOOM_ROPE_NEOX, llm_laguna_hparams, llm_laguna_bind, llm_step35_build, false},
    {"kimi-linear", LOOM_ROPE_NORMAL, llm_kimi_hparams, llm_kimi_bind, llm_kimi_build, false},
    {"bailingmoe3", LOOM_ROPE_NORMAL, llm_kimi_hparams, llm_kimi_bind, llm_kimi_build, false},
    {"kimi-k3", LOOM_ROPE_NORMAL, llm_kimi_hparams, llm_kimi_bind, llm_kimik3_build, false},
    {"afmoe", LOOM_ROPE_NEOX, llm_afmoe_hparams, llm_afmoe_bind, llm_afmoe_build, false},
    {"smallthinker", LOOM_ROPE_NEOX, llm_smallthinker_hparams, llm_smallthinker_bind, llm_smallthinker_build, false},
    {"olmoe", LOOM_ROPE_NEOX, llm_olmoe_hparams, llm_olmoe_bind, llm_olmoe_build, false},
    {"minimax-m2", LOOM_ROPE_NEOX, llm_olmoe_hparams, llm_olmoe_bind, llm_olmoe_build, false},
    {"minimax-01", LOOM_ROPE_NEOX, llm_minimax01_hparams, llm_minimax01_bind, llm_minimax01_build, false},
    {"qwen2moe", LOOM_ROPE_NEOX, llm_qwen2moe_hparams, llm_qwen2moe_bind, llm_qwen2moe_build, false},
    {"qwen3moe", LOOM_ROPE_NEOX, llm_qwen3moe_hparams, llm_qwen3moe_bind, llm_qwen3moe_build, false},
    {"mellum", LOOM_ROPE_NEOX, llm_mellum_hparams, llm_qwen3moe_bind, llm_qwen3moe_build, false},
    {"qwen3vlmoe", LOOM_ROPE_NEOX, qwen3vlmoe_hparams, llm_qwen3moe_bind, llm_qwen3moe_build, false},
    {"phi3", LOOM_ROPE_NEOX, llm_phi3_hparams, llm_phi3_bind, llm_phi3_build, false},
    {"phimoe", LOOM_ROPE_NEOX, llm_phi3_hparams, llm_phi3_bind, llm_phi3_build, false},
    {"phi2", LOOM_ROPE_NEOX, llm_ln_hparams, llm_phi2_bind, llm_phi2_build, false},
    {"falcon", LOOM_ROPE_NEOX, llm_ln_hparams, llm_falcon_bind, llm_phi2_build, false},
    {"gptneox", LOOM_ROPE_NEOX, llm_gptneox_hparams, llm_gptneox_bind, llm_gptneox_build, false},
    {"gpt2", LOOM_ROPE_NORMAL, llm_gpt2_hparams, llm_gpt2_bind, llm_gpt2_build, false},
    {"starcoder", LOOM_ROPE_NORMAL, llm_gpt2_hparams, llm_gpt2_bind, llm_gpt2_build, false},
    {"bloom", LOOM_ROPE_NORMAL, llm_bloom_hparams, llm_bloom_bind, llm_alibi_build, false},
    {"mpt", LOOM_ROPE_NORMAL, llm_mpt_hparams, llm_mpt_bind, llm_alibi_build, false},
    {"jais", LOOM_ROPE_NORMAL, llm_jais_hparams, llm_jais_bind, llm_alibi_build, false},
    {"stablelm", LOOM_ROPE_NEOX, llm_ln_hparams, llm_stablelm_bind, llm_stablelm_build, false},
    {"nemotron", LOOM_ROPE_NEOX, llm_ln_hparams, llm_stablelm_bind, llm_stablelm_build, false},
    {"starcoder2", LOOM_ROPE_NEOX, llm_ln_hparams, llm_starcoder2_bind, llm_starcoder2_build, false},
    {"jais2", LOOM_ROPE_NEOX, llm_ln_hparams, llm_starcoder2_bind, llm_starcoder2_build, false},
    {"codeshell", LOOM_ROPE_NEOX, llm_ln_hparams, llm_starcoder2_bind, llm_starcoder2_build, false},
    {"command-r", LOOM_ROPE_NORMAL, llm_cohere_hparams, llm_cohere_bind, llm_cohere_build, false},
    {"cohere2", LOOM_ROPE_NORMAL, llm_cohere_hparams, llm_cohere_bind, llm_cohere_build, false},
    {"cohere2moe", LOOM_ROPE_NORMAL, llm_cohere_hparams, llm_cohere_bind, llm_cohere_build, false},
    {"deepseek2", LOOM_ROPE_NORMAL, llm_deepseek2_hparams, llm_deepseek2_bind, llm_deepseek2_build, false},
    {"minicpm3", LOOM_ROPE_NEOX, llm_minicpm3_hparams, llm_deepseek2_bind, llm_deepseek2_build, false},
    {"mistral4", LOOM_ROPE_NORMAL, llm_deepseek2_hparams, llm_deepseek2_bind, llm_deepseek2_build, false},
    {"deepseek32", LOOM_ROPE_NORMAL, llm_dsa_hparams, llm_dsa_bind, llm_deepseek2_build, false},
    {"glm-dsa", LOOM_ROPE_NORMAL, llm_dsa_hparams, llm_dsa_bind, llm_deepseek2_build, false},
    {"dots3note", LOOM_ROPE_NORMAL, llm_dots3_hparams, llm_dots3_bind, llm_dots3_build, false},
    {"olmo", LOOM_ROPE_NORMAL, llm_olmo_hparams, llm_olmo_bind, llm_olmo_build, false},
    {"olmo2", LOOM_ROPE_NEOX, llm_olmo2_hparams, llm_olmo2_bind, llm_olmo2_build, false},
    {"granite", LOOM_ROPE_NORMAL, llm_granite_hparams, llm_granite_bind, llm_granite_build, false},
    {"minicpm", LOOM_ROPE_NORMAL, llm_minicpm_hparams, llm_minicpm_bind, llm_granite_build, false},
    {"granitemoe", LOOM_ROPE_NORMAL, llm_granitemoe_hparams, llm_granite_bind, llm_granite_build, false},
    {"granite_swa", LOOM_ROPE_NORMAL, llm_graniteswa_hparams, llm_graniteswa_bind, llm_granite_build, false},
    {"granitehybrid", LOOM_ROPE_NORMAL, llm_granitehybrid_hparams, llm_granitehybrid_bind, llm_granite_build, false},
    {"lfm2", LOOM_ROPE_NEOX, llm_lfm2_hparams, llm_lfm2_bind, llm_lfm2_build, false},
    {"lfm2moe", LOOM_ROPE_NEOX, llm_lfm2_hparams, llm_lfm2_bind, llm_lfm2_build, false},
    {"falcon-h1", LOOM_ROPE_NEOX, llm_falconh1_hparams, llm_falconh1_bind, llm_falconh1_build, false},
    {"mamba", LOOM_ROPE_NORMAL, llm_mamba_hparams, llm_mamba_bind, llm_mamba_build, true},
    {"mamba2", LOOM_ROPE_NORMAL, llm_mamba_hparams, llm_mamba_bind, llm_mamba_build, true},
    {"jamba", LOOM_ROPE_NORMAL, llm_mamba_hparams, llm_mamba_bind, llm_mamba_build, false},
    {"rwkv6", LOOM_ROPE_NORMAL, llm_rwkv6_hparams, llm_rwkv6_bind, llm_rwkv6_build, true},
    {"rwkv7", LOOM_ROPE_NORMAL, llm_rwkv7_hparams, llm_rwkv7_bind, llm_rwkv7_build, true},
    {"arwkv7", LOOM_ROPE_NORMAL, llm_rwkv7_hparams, llm_arwkv7_bind, llm_arwkv7_build, true},
    {"rwkv6qwen2", LOOM_ROPE_NORMAL, llm_rwkv6qwen2_hparams, llm_rwkv6qwen2_bind, llm_rwkv6qwen2_build, true},
    {"nemotron_h", LOOM_ROPE_NORMAL, llm_nemotronh_hparams, llm_nemotronh_bind, llm_nemotronh_build, false},
    {"nemotron_h_moe", LOOM_ROPE_NORMAL, llm_nemotronh_hparams, llm_nemotronh_bind, llm_nemotronh_build, false},
    {"gemma", LOOM_ROPE_NEOX, llm_gemma1_hparams, llm_gemma_bind, llm_gemma_build, false},
    {"gemma2", LOOM_ROPE_NEOX, llm_gemma2_hparams, llm_gemma_bind, llm_gemma_build, false},
    {"gemma3", LOOM_ROPE_NEOX, llm_gemma3_hparams, llm_gemma_bind, llm_gemma_build, false},
    {"gemma3n", LOOM_ROPE_NEOX, llm_gemma3n_hparams, llm_gemma3n_bind, llm_gemma3n_build, false},
    {"gemma4", LOOM_ROPE_NEOX, llm_gemma4_hparams, llm_gemma4_bind, llm_gemma4_build, false},
    {"gpt-oss", LOOM_ROPE_NEOX, llm_gptoss_hparams, llm_gptoss_bind, llm_gptoss_build, false},
};

const llm_arch *llm_arch_find(const char *name) {
    for (size_t i = 0; i < sizeof k_archs / sizeof k_archs[0]; i++)
        if (!strcmp(name, k_archs[i].name)) return &k_archs[i];
    return NULL;
}

/* room for every k_archs name: 75 take 684 bytes (test_llm_model_cli checks the list is whole) */
static char g_arch_names[2048];
static pthread_once_t g_arch_names_once = PTHREAD_ONCE_INIT;

static void arch_names_init(void) {
    size_t n = 0;
    for (size_t i = 0; i < sizeof k_archs / sizeof k_archs[0]; i++) {
        int w = snprintf(g_arch_names + n, sizeof g_arch_names - n, "%s%s", i ? ", " : "", k_archs[i].name);
        if (w < 0 || (size_t)w >= sizeof g_arch_names - n) break;
        n += (size_t)w;
    }
}

const char *llm_arch_names(void) {
    pthread_once(&g_arch_names_once, arch_names_init); /* k_archs' names, in order */
    return g_arch_names;
}

int llm_arch_count(void) { return (int)(sizeof k_archs / sizeof k_archs[0]); }

const char *loom_model_architectures(void) { return llm_arch_names(); }

loom_status llm_arch_layer_kv_heads(const loom_gguf *g, const loom_model_hparams *hp, int il, int64_t *hkv,
                                    loom_error *err) {
    loom_status s = llm_get_layer_int(g, hp->arch, "attention.head_count_kv", il, hp->n_layer, hp->n_head_kv, hkv, err);
    if (!s && *hkv != 0 && *hkv != hp->n_head_kv)
        s = loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                           "model: %s.attention.head_count_kv: layer %d has %lld KV heads, another %d (attention "
                           "layers of different KV head counts are not supported)",
                           hp->arch, il, (long long)*hkv, hp->n_head_kv);
    return s;
}

loom_status llm_arch_ssm_keys(const loom_gguf *g, const char *arch, int64_t v[5], loom_error *err) {
    static const char *const keys[5] = {"ssm.conv_kernel", "ssm.inner_size", "ssm.state_size", "ssm.time_step_rank",
                                        "ssm.group_count"};
    loom_status s = LOOM_OK;
    for (int i = 0; i < 5 && !s; i++) s = llm_get_int_key(g, arch, keys[i], true, 0, &v[i], err);
    return s;
}

loom_status llm_arch_moe_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx,
                              loom_error *err) {
    int64_t ne, nu, nf;
    loom_status s;
    if ((s = llm_get_int_key(g, hp->arch, "expert_count", true, 0, &ne, err))) return s;
    if (ne < 1 || ne > 4096)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_count = %lld is out of range [1, 4096]",
                              hp->arch, (long long)ne);
    if ((s = llm_get_int_key(g, hp->arch, "expert_used_count", true, 0, &nu, err))) return s;
    if (nu < 1 || nu > ne)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_used_count = %lld is out of range [1, %lld]",
                              hp->arch, (long long)nu, (long long)ne);
    if ((s = llm_get_int_key(g, hp->arch, "expert_feed_forward_length", false, hp->n_ff / nu, &nf, err))) return s;
    if (nf < 1 || nf > ((int64_t)1 << 24))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.expert_feed_forward_length = %lld is out of range",
                              hp->arch, (long long)nf);
    hx->n_expert = (int)ne;
    hx->n_expert_used = (int)nu;
    hx->n_ff_exp = (int)nf;
    return LOOM_OK;
}

loom_status llm_arch_layer_flags(const loom_gguf *g, const loom_model_hparams *hp, int64_t ki, const char *key,
                                 int n_alt, uint64_t *bits, loom_error *err) {
    loom_gguf_vtype et;
    const void *data;
    uint64_t n;
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", hp->arch);
    if (loom_gguf_kv_type(g, ki) != LOOM_GGUF_ARRAY || loom_gguf_kv_arr(g, ki, &et, &data, &n) ||
        (n != (uint64_t)hp->n_layer && (n_alt <= 0 || n != (uint64_t)n_alt)))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s' must be one value per layer (%d)", key, hp->n_layer);
    for (int il = 0; il < hp->n_layer; il++) {
        int64_t v = 0;
        if (et == LOOM_GGUF_BOOL) v = ((const uint8_t *)data)[il];
        else if (loom_gguf_kv_arr_int(g, ki, (uint64_t)il, &v))
            return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s' must hold booleans or integers", key);
        if (v) bits[il / 64] |= (uint64_t)1 << (il % 64);
    }
    return LOOM_OK;
}

/* attention.sliding_window_pattern: a period p (layer il slides iff p == 0 or
 * il % p < p - 1, as llama.cpp's set_swa_pattern: p = 1, none) or one boolean / integer
 * per layer; absent: no sliding layer */
loom_status llm_arch_swa_layers(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, loom_error *err) {
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", hp->arch);
    if (hp->n_layer > 4096) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "model: %s: more than 4096 layers", hp->arch);
    memset(hx->swa_bits, 0, sizeof hx->swa_bits);
    hx->swa_listed = true;
    const int64_t ki = loom_gguf_find_key(g, key);
    if (ki < 0) return LOOM_OK;
    int64_t p = 0;
    if (loom_gguf_kv_type(g, ki) == LOOM_GGUF_ARRAY) return llm_arch_layer_flags(g, hp, ki, key, 0, hx->swa_bits, err);
    if (loom_gguf_kv_int(g, ki, &p) || p < 0 || p > 4096)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: '%s' must be a period in [0, 4096] or one value per layer",
                              key);
    for (int il = 0; il < hp->n_layer; il++)
        if (p == 0 || il % p < p - 1) hx->swa_bits[il / 64] |= (uint64_t)1 << (il % 64);
    return LOOM_OK;
}

loom_status llm_arch_swa_period(const loom_gguf *g, const loom_model_hparams *hp, int def, int64_t *p,
                                loom_error *err) {
    /* one boolean per layer (exaone's converter writes that for EXAONE 4.0 32B and
     * K-EXAONE) is ignored, as llama.cpp's scalar get_key_or_arr ignores an array */
    char key[128];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", hp->arch);
    const int64_t ki = loom_gguf_find_key(g, key);
    loom_status s;
    *p = def;
    if (ki >= 0 && loom_gguf_kv_type(g, ki) != LOOM_GGUF_ARRAY &&
        (s = llm_get_int_key(g, hp->arch, "attention.sliding_window_pattern", false, def, p, err)))
        return s;
    if (*p < 0 || *p > 4096)
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window_pattern = %lld is out of range",
                              hp->arch, (long long)*p);
    return LOOM_OK;
}

loom_status llm_arch_swa_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, bool required,
                              int64_t def, int period, loom_error *err) {
    int64_t w, p;
    loom_status s;
    if ((s = llm_get_int_key(g, hp->arch, "attention.sliding_window", required, def, &w, err))) return s;
    if (w < (required ? 1 : 0) || w > ((int64_t)1 << 30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window = %lld is out of range",
                              hp->arch, (long long)w);
    if ((s = llm_arch_swa_period(g, hp, period, &p, err))) return s;
    /* a window past context_length is full attention (llama.cpp accepts it; the cache
     * keeps at most n_ctx cells per sequence either way) */
    hx->n_swa = (int)w;
    hx->swa_period = (int)p;
    return LOOM_OK;
}
