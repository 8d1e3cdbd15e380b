/*
 * arch.c - the architecture table: each entry names its rope mode, extra keys, weight
 * binding and graph (llama.c, arch_*.c).
 */
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

static const llm_arch k_archs[] = {
    {"llama", LOOM_ROPE_NORMAL, NULL, llm_bind_llama, llm_build_llama},
    {"mistral", LOOM_ROPE_NORMAL, NULL, llm_bind_llama, llm_build_llama},
    {"qwen2", LOOM_ROPE_NEOX, NULL, llm_bind_llama, llm_build_llama},
    {"qwen3", LOOM_ROPE_NEOX, NULL, llm_bind_llama, llm_build_llama},
    {"exaone", LOOM_ROPE_NEOX, NULL, llm_bind_llama, llm_build_llama}, /* EXAONE 3.x: the llama block, neox rope */
    {"mistral3", LOOM_ROPE_NORMAL, mistral3_hparams, llm_bind_llama, llm_mistral3_build},
    {"qwen2moe", LOOM_ROPE_NEOX, llm_qwen2moe_hparams, llm_qwen2moe_bind, llm_qwen2moe_build},
    {"qwen3moe", LOOM_ROPE_NEOX, llm_qwen3moe_hparams, llm_qwen3moe_bind, llm_qwen3moe_build},
    {"phi3", LOOM_ROPE_NEOX, llm_phi3_hparams, llm_phi3_bind, llm_phi3_build},
    {"phi2", LOOM_ROPE_NEOX, llm_ln_hparams, llm_phi2_bind, llm_phi2_build},
    {"starcoder2", LOOM_ROPE_NEOX, llm_ln_hparams, llm_starcoder2_bind, llm_starcoder2_build},
    {"command-r", LOOM_ROPE_NORMAL, llm_cohere_hparams, llm_cohere_bind, llm_cohere_build},
    {"cohere2", LOOM_ROPE_NORMAL, llm_cohere_hparams, llm_cohere_bind, llm_cohere_build},
    {"deepseek2", LOOM_ROPE_NORMAL, llm_deepseek2_hparams, llm_deepseek2_bind, llm_deepseek2_build},
    {"olmo2", LOOM_ROPE_NEOX, llm_olmo2_hparams, llm_olmo2_bind, llm_olmo2_build},
    {"granite", LOOM_ROPE_NORMAL, llm_granite_hparams, llm_granite_bind, llm_granite_build},
    {"gemma", LOOM_ROPE_NEOX, llm_gemma1_hparams, llm_gemma_bind, llm_gemma_build},
    {"gemma2", LOOM_ROPE_NEOX, llm_gemma2_hparams, llm_gemma_bind, llm_gemma_build},
    {"gemma3", LOOM_ROPE_NEOX, llm_gemma3_hparams, llm_gemma_bind, llm_gemma_build},
    {"gpt-oss", LOOM_ROPE_NEOX, llm_gptoss_hparams, llm_gptoss_bind, llm_gptoss_build},
};

const llm_arch *llm_arch_find(const char *name) {
    for (size_t i = 0; i < sizeof k_archs / sizeof k_archs[0]; i++)
        if (!strcmp(name, k_archs[i].name)) return &k_archs[i];
    return NULL;
}

static char g_arch_names[512];
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

loom_status llm_arch_swa_keys(const loom_gguf *g, const loom_model_hparams *hp, llm_hparams_x *hx, bool required,
                              int64_t def, int period, loom_error *err) {
    int64_t w, p;
    loom_status s;
    if ((s = llm_get_int_key(g, hp->arch, "attention.sliding_window", required, def, &w, err))) return s;
    if (w < (required ? 1 : 0) || w > ((int64_t)1 << 30))
        return loom_error_set(err, LOOM_ERR_FORMAT, "model: %s.attention.sliding_window = %lld is out of range",
                              hp->arch, (long long)w);
    if ((s = llm_get_int_key(g, hp->arch, "attention.sliding_window_pattern", false, period, &p, err))) return s;
    if (p < 0 || p > 4096)
        return loom_error_set(err, LOOM_ERR_FORMAT,
                              "model: %s.attention.sliding_window_pattern = %lld is out of range", hp->arch,
                              (long long)p);
    if (hp->n_ctx_train > 0 && w > hp->n_ctx_train)
        return loom_error_set(err, LOOM_ERR_FORMAT,
                              "model: %s.attention.sliding_window = %lld exceeds %s.context_length = %d",
                              hp->arch, (long long)w, hp->arch, hp->n_ctx_train);
    hx->n_swa = (int)w;
    hx->swa_period = (int)p;
    return LOOM_OK;
}
