/* Options shared by `loom run` and `loom eval`. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "model_opts.h"

void model_opts_init(model_opts *o) {
    memset(o, 0, sizeof *o);
    o->p = loom_model_default_params();
    /* flash attention on unless -fa off / --no-flash-attn, as llama.cpp's default (auto)
     * resolves on every Loom backend: faster prompts (pp2048 +12-17% on a 1.1B Q4_0,
     * docs/performance.md), no [kv x tokens] score matrices, quantized caches allowed */
    o->p.flash_attn = true;
    cli_vk_env(&o->p.vk_devices, &o->p.vk_flags);
    o->p.vk_loader = cli_vk_loader();
}

static bool parse_int(const char *s, long lo, long hi, int *out) {
    long long v;
    if (!cli_parse_ll(s, lo, hi, &v)) return false;
    *out = (int)v;
    return true;
}

int parse_int_list(const char *s, int32_t **out) {
    *out = NULL;
    if (!s) return -1;
    size_t cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    int32_t *v = malloc(cap * sizeof *v);
    if (!v) return -1;
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long x = strtol(p, &end, 10);
        if (end == p || errno || x < INT32_MIN || x > INT32_MAX) { free(v); return -1; }
        v[n++] = (int32_t)x;
        while (*end == ' ') end++;
        if (*end == ',') end++;
        else if (*end) { free(v); return -1; }
        p = end;
        while (*p == ' ') p++;
    }
    *out = v;
    return n;
}

const char *model_opts_help(void) {
    return "  -t, --threads N        CPU threads (default: physical cores)\n"
           "  -c, --ctx-size N       context length (default: model's, at most 4096)\n"
           "  -b, --batch-size N     tokens per graph (default 512)\n"
           "  --gpu-layers N         trailing layers on accelerators (N > layers: output too)\n"
           "  --sim-devices SPEC     simulated accelerators, e.g. gpu0=1GiB,gpu1=512MiB\n"
           "  --vk-devices LIST      Vulkan devices: all, none or indices (default: GPUs;\n"
           "                         also LOOM_VK_DEVICES)\n"
           "  --tensor-split a,b     proportions per accelerator\n"
           "  -fa, --flash-attn [on|off|auto]  fused attention (default: on; auto = on)\n"
           "  --no-flash-attn        plain attention (matmul, softmax, matmul): -fa off\n"
           "  --cache-type T         KV cache type: f16 (default), f32, q8_0, q4_0 (q*: flash attention)\n"
           "  --no-mmap              read weights instead of mapping the file\n"
           "  --no-repack            keep CPU weights in the GGUF layout (no load-time repacking)\n";
}

int model_opts_parse(model_opts *o, int argc, char **argv, int *i, const char *prog) {
    const char *a = argv[*i];
    const char *val = *i + 1 < argc ? argv[*i + 1] : NULL;
#define NEED_VAL()                                                                   \
    do {                                                                             \
        if (!val) {                                                                  \
            fprintf(stderr, "%s: %s needs a value\n", prog, a);                      \
            return -1;                                                               \
        }                                                                            \
        (*i)++;                                                                      \
    } while (0)
#define INT_OPT(lo, hi, dst)                                                                     \
    do {                                                                                         \
        NEED_VAL();                                                                              \
        if (!parse_int(val, lo, hi, dst)) {                                                      \
            fprintf(stderr, "%s: %s needs an integer in [%ld, %ld], got '%s'\n", prog, a, (long)(lo), \
                    (long)(hi), val);                                                            \
            return -1;                                                                           \
        }                                                                                        \
    } while (0)
    if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
        INT_OPT(0, 1024, &o->p.n_threads);
        return 1;
    }
    if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size") || !strcmp(a, "--ctx")) {
        INT_OPT(1, 1 << 24, &o->p.n_ctx);
        o->ctx_set = true;
        return 1;
    }
    if (!strcmp(a, "-b") || !strcmp(a, "--batch-size") || !strcmp(a, "--batch")) {
        INT_OPT(1, 1 << 20, &o->p.n_batch);
        o->batch_set = true;
        return 1;
    }
    if (!strcmp(a, "--gpu-layers") || !strcmp(a, "-ngl") || !strcmp(a, "--n-gpu-layers")) {
        INT_OPT(-1, 1 << 20, &o->p.n_gpu_layers);
        return 1;
    }
#undef INT_OPT
    if (!strcmp(a, "--sim-devices")) {
        NEED_VAL();
        loom_error err = {0};
        int n = 0;
        if (loom_sim_devices_parse(val, o->sim, MODEL_OPTS_MAX_SIM, &n, &err)) {
            fprintf(stderr, "%s: --sim-devices: %s\n", prog, err.msg);
            return -1;
        }
        o->p.sim_devices = n ? o->sim : NULL;
        o->p.n_sim_devices = n;
        o->sim_set = true;
        return 1;
    }
    if (!strcmp(a, "--vk-devices")) {
        NEED_VAL();
        o->p.vk_devices = val;
        return 1;
    }
    if (!strcmp(a, "--tensor-split") || !strcmp(a, "-ts")) {
        NEED_VAL();
        loom_error err = {0};
        int n = 0;
        if (loom_tensor_split_parse(val, o->split, MODEL_OPTS_MAX_SPLIT, &n, &err)) {
            fprintf(stderr, "%s: %s\n", prog, err.msg);
            return -1;
        }
        o->p.tensor_split = o->split;
        o->p.n_tensor_split = n;
        return 1;
    }
    if (!strcmp(a, "--flash-attn") || !strcmp(a, "-fa")) {
        o->p.flash_attn = true;
        if (cli_parse_flash_attn(val, &o->p.flash_attn)) (*i)++;
        return 1;
    }
    if (!strcmp(a, "--no-flash-attn")) {
        o->p.flash_attn = false;
        return 1;
    }
    if (!strcmp(a, "--no-mmap")) {
        o->p.no_mmap = true;
        return 1;
    }
    if (!strcmp(a, "--no-repack")) {
        o->p.no_repack = true;
        return 1;
    }
    if (!strcmp(a, "--cache-type") || !strcmp(a, "-ctk")) {
        NEED_VAL();
        loom_type t;
        if (!loom_type_from_name(val, &t) ||
            (t != LOOM_TYPE_F16 && t != LOOM_TYPE_F32 && t != LOOM_TYPE_Q8_0 && t != LOOM_TYPE_Q4_0)) {
            fprintf(stderr, "%s: --cache-type must be f16, f32, q8_0 or q4_0 (got '%s')\n", prog, val);
            return -1;
        }
        o->p.cache_type = t;
        return 1;
    }
    return 0;
#undef NEED_VAL
}

int cli_env_sim_devices(loom_sim_device *sims, int max, int *n, const char *prog) {
    *n = 0;
    const char *env = getenv("LOOM_SIM_DEVICES");
    if (!env || !*env) return 0;
    loom_error err = {0};
    if (loom_sim_devices_parse(env, sims, max, n, &err)) {
        fprintf(stderr, "%s: LOOM_SIM_DEVICES: %s\n", prog, err.msg);
        return -1;
    }
    return 0;
}

/* LOOM_KV_ROTATE=0: quantized caches not turned; =1: every cache turned (tests) */
int cli_env_kv_rotate(void) {
    const char *env = getenv("LOOM_KV_ROTATE");
    return !env ? 0 : !strcmp(env, "0") ? -1 : !strcmp(env, "1") ? 1 : 0;
}

bool cli_env_no_repack(void) {
    const char *env = getenv("LOOM_REPACK");
    return env && !strcmp(env, "0");
}

int model_opts_finish(model_opts *o, const char *prog) {
    /* a quantized cache is read only by the flash-attention kernel: say so now, not when
     * a model is loaded (for `loom serve`, at the first request) */
    if ((o->p.cache_type == LOOM_TYPE_Q8_0 || o->p.cache_type == LOOM_TYPE_Q4_0) && !o->p.flash_attn) {
        fprintf(stderr, "%s: --cache-type %s needs flash attention, which -fa off / --no-flash-attn turned off\n", prog,
                o->p.cache_type == LOOM_TYPE_Q8_0 ? "q8_0" : "q4_0");
        return -1;
    }
    if (!o->sim_set) {
        int n = 0;
        if (cli_env_sim_devices(o->sim, MODEL_OPTS_MAX_SIM, &n, prog)) return -1;
        o->p.sim_devices = n ? o->sim : NULL;
        o->p.n_sim_devices = n;
    }
    if (cli_env_no_repack()) o->p.no_repack = true;
    o->p.kv_rotate = cli_env_kv_rotate();
    return 0;
}
