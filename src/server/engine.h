/*
 * engine.h (internal) - the loop that owns one loaded model.
 *
 * One thread per loaded model decodes every active slot in one batch per step:
 * each generating slot contributes its last sampled token, and prompt chunks of
 * slots still reading their prompt fill the rest of the batch (capped while other
 * slots are generating, so a long prompt does not freeze running streams).
 * Requests beyond the slots wait in a bounded FIFO queue. A task's cancel flag
 * (client gone) frees its slot at the next step. Each slot keeps the tokens of its
 * sequence in the cache, and a new task goes to the free slot with the longest
 * common prefix (chat history is not recomputed every turn).
 *
 * Threading: HTTP threads create tasks, submit them and read their output under
 * the task's mutex (woken through the task's eventfd); only the engine thread
 * touches the model, the samplers and the slots.
 */
#ifndef LOOM_SERVER_ENGINE_H
#define LOOM_SERVER_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>

#include "loom_grammar.h"
#include "loom_sampler.h"
#include "server/request.h"
#include "server/seqapi.h"
#include "server/util.h"

typedef enum srv_done {
    SRV_DONE_NONE = 0,
    SRV_DONE_STOP,      /* end of generation token or a stop string */
    SRV_DONE_LENGTH,    /* num_predict reached, or the context is full */
    SRV_DONE_CANCEL,    /* the client went away */
    SRV_DONE_ERROR      /* err_status / err */
} srv_done;

/* A generated token's log probability under the model (log-softmax of its logits,
 * before temperature, penalties, bias and grammar) and the most likely alternatives. */
typedef struct srv_logprob {
    int32_t id;
    float logprob;
    int n_top;
    int32_t top_id[SRV_TOP_LOGPROBS_MAX];
    float top_logprob[SRV_TOP_LOGPROBS_MAX]; /* most likely first */
} srv_logprob;

typedef struct srv_task srv_task;
struct srv_task {
    /* ---- input: set before srv_engine_submit, read-only afterwards */
    int32_t *prompt;
    int n_prompt;
    loom_sampler_params sp;
    int num_predict;        /* < 0: until EOG (bounded by max_gen) */
    int num_keep;           /* tokens kept at the front by a context shift */
    bool shift;             /* allow context shift (else "length" at the context end) */
    char **stop;            /* owned */
    int n_stop;
    bool keep_tokens;       /* record generated token ids (generate's "context") */
    loom_grammar *grammar;  /* structured output (owned; NULL = none) */
    const loom_grammar_vocab *gvocab; /* the model's (borrowed: the model outlives its tasks) */
    bool render_special;    /* output control tokens as their text (chat syntaxes made of them) */
    int logprobs;           /* -1: none; else record each token's logprob and this many alternatives */
    int32_t *bias_ids;      /* OpenAI logit_bias: added to these logits before sampling (owned; */
    float *bias_vals;       /* ids < the model's vocabulary, checked before submit) */
    int n_bias;

    /* ---- shared with the reader (under mu) */
    pthread_mutex_t mu;
    int efd;                /* eventfd: signalled on new output and when done */
    srv_buf text;           /* output not yet taken by the reader */
    size_t *seg;            /* end offsets in text of each token's text (one chunk each) */
    int n_seg, cap_seg;
    srv_logprob *lps;       /* logprobs not yet taken by the reader (task->logprobs >= 0) */
    int n_lps, cap_lps;
    bool started;           /* admitted to a slot */
    bool done;
    srv_done reason;
    int err_status;
    char err[256];
    /* statistics (valid when done) */
    int64_t t_queued, t_admit, t_first, t_end; /* CLOCK_MONOTONIC ns */
    int n_cached;           /* prompt tokens reused from the slot's cache */
    int stop_hit;           /* the stop string that ended the answer (index into stop), -1: none */
    int n_eval;             /* generated tokens */
    int32_t *gen;           /* generated token ids (keep_tokens) */
    int n_gen, cap_gen;

    atomic_bool cancel;     /* set by the reader: stop and free the slot */
    atomic_int refs;
    srv_task *next;         /* queue link (engine) */
};

/* A new task (refs = 1) with an eventfd; NULL on failure. */
srv_task *srv_task_new(void);
void srv_task_ref(srv_task *t);
void srv_task_unref(srv_task *t);
/* Block until the task has output, is done, or timeout_ms passes (< 0 = forever). */
void srv_task_wait(srv_task *t, int timeout_ms);

typedef struct srv_engine_params {
    int max_queue;          /* waiting tasks (default 512) */
    int prompt_chunk;       /* prompt tokens per step while others generate (0 = n_batch / 4) */
    int max_gen;            /* cap on generated tokens for num_predict < 0 (0 = 10 * n_ctx) */
} srv_engine_params;

typedef struct srv_engine srv_engine;

/* Start the loop over an open model (the engine owns l from now on). */
loom_status srv_engine_new(srv_llm *l, const loom_tokenizer *tok, const srv_engine_params *p,
                           srv_engine **out, loom_error *err);
/* Stop the loop (finishing running and queued tasks with an error) and free the
 * model. */
void srv_engine_free(srv_engine *e);

/* Queue a task (the engine takes a reference). Returns 0, or -1 when the queue is
 * full (answer 503), or -2 when the engine is stopping. */
int srv_engine_submit(srv_engine *e, srv_task *t);
/* The client went away: set the task's cancel flag; a queued task is removed (and
 * finished) at once, a running one frees its slot at the next step. */
void srv_engine_cancel(srv_engine *e, srv_task *t);
/* A seed from the OS (for requests without one). */
uint64_t srv_engine_random_seed(void);

typedef struct srv_engine_stats {
    int n_slots, active, queued;
    int64_t last_used_ns;   /* CLOCK_MONOTONIC of the last task end (or start) */
    uint64_t tokens_prompt, tokens_gen, steps;
    uint64_t batch_rows;    /* tokens decoded over all steps (rows / steps = mean batch) */
    uint64_t gen_steps;     /* steps that decoded at least one generating slot */
    uint64_t gen_rows;      /* generating slots over those steps (mean streams per step) */
    int max_mixed_prompt;   /* most prompt tokens in one step that also decoded generating slots */
    int prompt_chunk;       /* the cap on those (n_batch / 4 by default) */
    double gen_tps;         /* generated tokens/s over the last few seconds */
} srv_engine_stats;
void srv_engine_get_stats(srv_engine *e, srv_engine_stats *s);
int srv_engine_n_slots(const srv_engine *e);
int srv_engine_n_ctx(const srv_engine *e);
int srv_engine_n_vocab(const srv_engine *e);
srv_llm *srv_engine_llm(srv_engine *e);

#endif
