/*
 * placement.h (internal) - splits, the layer->device map and tensor classification
 * (backend contract §3.2-§3.4). Pure functions; tests call them directly.
 * Device indices: 0 = CPU, 1 + j = accelerator j.
 */
#ifndef LOOM_BACKEND_PLACEMENT_H
#define LOOM_BACKEND_PLACEMENT_H

#include "loom_base.h"

/* §3.2: cumulative normalised splits. If tensor_split is NULL/empty/all zero the
 * proportions are free_mem[0..n_gpus); else tensor_split[0..n_split) as given (its
 * length may differ from n_gpus: extra entries map layers to the CPU).
 * out has max(n_gpus, n_split) entries; *n_out receives the count used. A negative
 * or non-finite proportion is LOOM_ERR_INVALID_ARG. When every proportion is zero
 * (e.g. devices with no free memory) all entries are 0 and no layer is offloaded. */
loom_status loom_place_splits(const float *tensor_split, int n_split, const uint64_t *free_mem,
                              int n_gpus, float *out, int *n_out);

/* §3.3: device of layer i (0 <= i <= blocks; i == blocks is the output layer).
 * n_gpu_layers < 0 counts as 0. */
int loom_place_layer(int i, int blocks, int n_gpu_layers, const float *splits, int n_splits,
                     int n_gpus);

/* §3.4 rules (first match wins). */
typedef enum loom_place_rule {
    LOOM_RULE_INPUT = 1,   /* token/position embeddings: CPU, input weights */
    LOOM_RULE_OUTPUT = 2,  /* output head / norms: output device, Weights[blocks] */
    LOOM_RULE_VISION = 3,  /* "v." / "mm." prefix: output device */
    LOOM_RULE_ROPE = 4,    /* rope_freqs / rope_factors_*: one copy per layer */
    LOOM_RULE_LAYER = 5,   /* first digit run = layer index */
    LOOM_RULE_NODIGIT = 6  /* CPU, input weights */
} loom_place_rule;

/* Classify a tensor name. For LOOM_RULE_LAYER *layer receives the index (INT64_MAX
 * if the digit run does not fit in int64); otherwise -1. */
loom_place_rule loom_place_classify(const char *name, int64_t *layer);
/* True if splitting name on '.' yields an element equal to part. */
bool loom_place_has_part(const char *name, const char *part);

#endif
