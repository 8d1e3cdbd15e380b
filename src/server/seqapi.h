/*
 * seqapi.h (internal) - the engine loop's view of a model: numbered sequences
 * (one per slot) in one cache, a batch of tokens across sequences decoded in one
 * call, and per-sequence cache edits. Everything here runs on the engine thread,
 * except srv_llm_cancel.
 *
 * It sits on the multi-sequence batch API of loom_model.h (loom_model_decode, the
 * loom_model_seq_* calls). When the model library does not implement it (the calls
 * answer LOOM_ERR_UNSUPPORTED), srv_llm_open falls back to ONE sequence decoded with
 * loom_model_eval, where the only cache edits are "keep it all" and "forget it all".
 */
#ifndef LOOM_SERVER_SEQAPI_H
#define LOOM_SERVER_SEQAPI_H

#include "loom_model.h"

typedef struct srv_llm srv_llm;

typedef struct srv_llm_params {
    loom_model_params model;    /* path, threads, devices, n_batch ... (n_ctx ignored) */
    int n_seq;                  /* sequences wanted (slots) */
    int n_ctx_seq;              /* context per sequence */
} srv_llm_params;

/* Open the model for n_seq sequences of n_ctx_seq tokens. The implementation may
 * support fewer sequences (srv_llm_n_seq says how many). */
loom_status srv_llm_open(const srv_llm_params *p, srv_llm **out, loom_error *err);
#define SRV_PLAN_MAX_DEV 16
/* What the model would take (weights + cache + graph), from a dry run, per device. */
typedef struct srv_plan {
    uint64_t total;                         /* all devices */
    uint64_t accel;                         /* accelerators only */
    int n_dev;                              /* devices[0] is the CPU */
    char dev_name[SRV_PLAN_MAX_DEV][32];
    uint64_t dev_bytes[SRV_PLAN_MAX_DEV];   /* planned on the device */
    uint64_t dev_capacity[SRV_PLAN_MAX_DEV];/* the device's memory */
} srv_plan;
loom_status srv_llm_plan(const srv_llm_params *p, srv_plan *plan, loom_error *err);
void srv_llm_free(srv_llm *l);

loom_model *srv_llm_model(srv_llm *l);
int srv_llm_n_seq(const srv_llm *l);
int srv_llm_n_ctx_seq(const srv_llm *l);
int srv_llm_n_batch(const srv_llm *l);
/* Whether srv_llm_seq_shift works (context shift). */
bool srv_llm_can_shift(const srv_llm *l);

/* Decode n tokens: token i at position pos[i] of sequence seq[i]; logits kept for
 * rows with want[i]. Positions of one sequence must continue its cache. */
loom_status srv_llm_decode(srv_llm *l, const int32_t *tok, const int32_t *pos, const int32_t *seq,
                           const bool *want, int n, loom_error *err);
/* Logits of batch row i of the last decode (want[i] was true), or NULL. */
const float *srv_llm_logits(srv_llm *l, int i);
/* Prefix reuse for a new request on sequence seq: tokens[0..n) is its prompt and
 * mirror[0..n_mirror) what the caller knows seq holds now. Keeps the longest cached
 * prefix (at most n - 1 tokens; with the batch API also one found in another
 * sequence), forgets the rest of seq, and returns the count kept in *n_cached:
 * seq then holds tokens[0..*n_cached). */
loom_status srv_llm_reuse(srv_llm *l, int seq, const int32_t *mirror, int n_mirror, const int32_t *tokens, int n,
                          int *n_cached, loom_error *err);
/* Forget all of sequence seq. */
void srv_llm_seq_clear(srv_llm *l, int seq);
/* Context shift (Ollama's rule, see loom_model_seq_context_shift): positions
 * [n_keep, n_keep + *n_discarded) of seq are dropped and the rest moved down. */
loom_status srv_llm_context_shift(srv_llm *l, int seq, int n_keep, int *n_discarded, loom_error *err);
/* Whether the batch API is in use (several sequences); false: the fallback. */
bool srv_llm_batched(const srv_llm *l);
/* Stop a running decode (any thread). */
void srv_llm_cancel(srv_llm *l);

#endif
