/* Splits, layer placement and tensor classification (contract §3.2-§3.4). */
#include "backend/placement.h"
#include "loom_backend.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

loom_status loom_place_splits(const float *tensor_split, int n_split, const uint64_t *free_mem,
                              int n_gpus, float *out, int *n_out) {
    *n_out = 0;
    bool use_default = true;
    if (tensor_split && n_split > 0)
        for (int i = 0; i < n_split; i++) {
            if (!isfinite(tensor_split[i]) || tensor_split[i] < 0) return LOOM_ERR_INVALID_ARG;
            if (tensor_split[i] != 0) use_default = false;
        }
    int n = use_default ? n_gpus : n_split;
    for (int i = 0; i < n; i++) out[i] = use_default ? (float)free_mem[i] : tensor_split[i];
    /* float32 prefix sums, then normalise, exactly as the contract does it */
    float sum = 0;
    for (int i = 0; i < n; i++) {
        sum += out[i];
        out[i] = sum;
    }
    for (int i = 0; i < n; i++) out[i] = sum > 0 ? out[i] / sum : 0.0f;
    *n_out = n;
    return LOOM_OK;
}

int loom_place_layer(int i, int blocks, int n_gpu_layers, const float *splits, int n_splits,
                     int n_gpus) {
    if (n_gpu_layers < 0) n_gpu_layers = 0;
    if (blocks < 0) blocks = 0;
    int start = blocks - n_gpu_layers;
    if (start < 0) start = 0;
    /* start + n_gpu_layers may overflow int: compute in int64 */
    int64_t stop64 = (int64_t)start + n_gpu_layers;
    if (stop64 > (int64_t)blocks + 1) stop64 = (int64_t)blocks + 1;
    int stop = (int)stop64;
    if (i < start || i >= stop) return 0;
    float f = (float)(i - start) / (float)(stop - start);
    for (int j = 0; j < n_splits; j++)
        if (f < splits[j]) return j < n_gpus ? 1 + j : 0;
    return 0;
}

bool loom_place_has_part(const char *name, const char *part) {
    size_t pl = strlen(part);
    const char *p = name;
    for (;;) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (len == pl && !memcmp(p, part, pl)) return true;
        if (!dot) return false;
        p = dot + 1;
    }
}

static bool has_any(const char *name, const char *const *parts) {
    for (; *parts; parts++)
        if (loom_place_has_part(name, *parts)) return true;
    return false;
}

loom_place_rule loom_place_classify(const char *name, int64_t *layer) {
    static const char *const input[] = {"position_embd", "token_embd", "token_norm_embd",
                                        "token_types", NULL};
    /* the contract's output group, plus dense_2 / dense_3 (the sentence-transformers
     * projections after the final norm of gemma-embedding: llama.cpp's output-layer
     * tensors; by the digit rule they would belong to layers 2 and 3, and a file with
     * fewer blocks would be rejected) */
    static const char *const output[] = {"cls", "output", "output_norm", "altup_proj",
                                         "altup_unembd_proj", "per_layer_token_embd",
                                         "per_layer_model_proj", "per_layer_proj_norm",
                                         "dense_2", "dense_3", NULL};
    static const char *const rope[] = {"rope_freqs", "rope_factors_long", "rope_factors_short",
                                       NULL};
    *layer = -1;
    if (has_any(name, input)) return LOOM_RULE_INPUT;
    if (has_any(name, output)) return LOOM_RULE_OUTPUT;
    if (!strncmp(name, "v.", 2) || !strncmp(name, "mm.", 3)) return LOOM_RULE_VISION;
    if (has_any(name, rope)) return LOOM_RULE_ROPE;
    const char *p = name;
    while (*p && !(*p >= '0' && *p <= '9')) p++;
    if (!*p) return LOOM_RULE_NODIGIT;
    int64_t v = 0;
    for (; *p >= '0' && *p <= '9'; p++) {
        int d = *p - '0';
        if (v > (INT64_MAX - d) / 10) {
            v = INT64_MAX;
            while (*p >= '0' && *p <= '9') p++;
            break;
        }
        v = v * 10 + d;
    }
    *layer = v;
    return LOOM_RULE_LAYER;
}

/* ------------------------------------------------------------ tensor split values */

loom_status loom_tensor_split_check(const float *split, int n, loom_error *err) {
    if (n <= 0 || !split) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "tensor split: no proportions given");
    if (n > LOOM_TENSOR_SPLIT_MAX)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "tensor split: %d proportions (at most %d)", n,
                              LOOM_TENSOR_SPLIT_MAX);
    bool any = false;
    float sum = 0;
    for (int i = 0; i < n; i++) {
        float v = split[i];
        if (!isfinite(v))
            return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                                  "tensor split: proportion %d is %s (must be a finite number >= 0)", i + 1,
                                  isnan(v) ? "NaN" : "infinite");
        if (v < 0)
            return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                                  "tensor split: proportion %d is %g (must be a finite number >= 0)", i + 1,
                                  (double)v);
        if (v > 0) any = true;
        sum += v; /* the float32 prefix sum of contract section 3.2 */
        if (!isfinite(sum))
            return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                                  "tensor split: the proportions overflow (their float32 sum is infinite at "
                                  "proportion %d); use smaller numbers, only the ratios matter",
                                  i + 1);
    }
    if (!any)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                              "tensor split: all %d proportions are zero (give none to split by free memory)", n);
    return LOOM_OK;
}

loom_status loom_tensor_split_parse(const char *spec, float *out, int max, int *n_out, loom_error *err) {
    if (n_out) *n_out = 0;
    if (!spec || !out || !n_out || max <= 0)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "tensor split: NULL argument");
    int n = 0;
    const char *p = spec;
    if (!*p) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "tensor split: empty list");
    for (;;) {
        const char *start = p;
        while (*p && *p != ',' && *p != '/') p++;
        size_t len = (size_t)(p - start);
        char tok[64];
        if (len == 0 || len >= sizeof tok)
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "tensor split '%s': proportion %d is %s", spec,
                                  n + 1, len ? "too long" : "empty");
        memcpy(tok, start, len);
        tok[len] = 0;
        char *end = NULL;
        double v = strtod(tok, &end);
        if (end == tok || *end)
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "tensor split '%s': '%s' is not a number", spec, tok);
        if (n >= max)
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "tensor split '%s': more than %d proportions", spec,
                                  max);
        /* a value beyond float's range becomes infinite and is refused by the check */
        out[n++] = v > FLT_MAX ? INFINITY : v < -FLT_MAX ? -INFINITY : (float)v;
        if (!*p) break;
        p++;
    }
    loom_status s = loom_tensor_split_check(out, n, err);
    if (s) return s;
    *n_out = n;
    return LOOM_OK;
}
