/*
 * loom_model.h - a llama-family language model with its KV cache.
 *
 * loom_model_open opens the GGUF file onto devices (loom_backend_open), reads the
 * hyperparameters, binds and shape-checks every weight, creates the KV cache,
 * reserves a worst-case graph (n_batch tokens against a full context) so cache and
 * graph memory are committed and accounted, and only then loads the weights.
 * loom_model_eval appends tokens to the cache (a prompt in chunks of n_batch, or
 * one token at a time) and keeps the logits of the requested rows.
 *
 * Example (greedy decoding):
 *     loom_model_params p = loom_model_default_params();
 *     p.path = "models/stories260K.gguf";
 *     loom_model *m; loom_error err = {0};
 *     if (loom_model_open(&p, &m, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
 *     int32_t tok = 1;  // BOS
 *     for (int i = 0; i < 32; i++) {
 *         if (loom_model_eval(m, &tok, 1, false, &err)) break;  // CONTEXT_FULL ends it
 *         tok = loom_model_argmax(m, -1);
 *     }
 *     loom_model_close(m);
 *
 * Architectures: llama (Llama 1/2/3.x, Mistral, TinyLlama, SmolLM ...), qwen2
 * (q/k/v biases, NEOX rope), qwen3 (per-head q/k RMSNorm, NEOX rope).
 *
 * Threading: a model is used by one thread at a time, except loom_model_cancel,
 * which may be called from any thread.
 */
#ifndef LOOM_MODEL_H
#define LOOM_MODEL_H

#include "loom_backend.h"
#include "loom_tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_model loom_model;

typedef struct loom_model_params {
    const char *path;           /* GGUF file (required) */
    int n_ctx;                  /* context length in tokens; 0 = min(training context, 4096) */
    int n_batch;                /* max tokens per graph; 0 = 512 (clamped to n_ctx) */
    int n_threads;              /* CPU threads; 0 = physical cores available */
    int n_gpu_layers;           /* see loom_backend_params */
    const float *tensor_split;  /* per-accelerator proportions or NULL */
    int n_tensor_split;
    const loom_sim_device *sim_devices; /* simulated accelerators or NULL */
    int n_sim_devices;
    bool flash_attn;            /* attention through loom_flash_attn */
    loom_type cache_type;       /* K/V type: F16 (default), F32; Q8_0/Q4_0 need flash_attn */
    bool dry_run;               /* open, create the cache, reserve; no buffers, no load, no eval */
    bool no_mmap;
    bool no_repack;             /* keep every CPU weight in the GGUF layout. Default (false):
                                   the attention/FFN/output matrices are repacked at load where
                                   the CPU kernels have a faster layout for their type
                                   (loom_backend_params.repack_filter); no effect on results
                                   beyond float summation order, none on memory */
    loom_progress_cb progress;  /* load progress (may be NULL); return false to cancel */
    void *progress_user;
} loom_model_params;

loom_model_params loom_model_default_params(void);

/* Hyperparameters as read from the file (plain data). */
typedef struct loom_model_hparams {
    char arch[32];              /* general.architecture */
    int n_vocab;                /* rows of token_embd.weight */
    int n_embd;
    int n_layer;
    int n_head, n_head_kv;
    int head_dim_k, head_dim_v; /* attention.key_length / value_length (default n_embd/n_head) */
    int n_ff;
    int n_rot;                  /* rope.dimension_count (default head_dim_k) */
    int n_ctx_train;            /* context_length (0 if absent) */
    float rms_eps;              /* attention.layer_norm_rms_epsilon (default 1e-5) */
    float rope_base;            /* rope.freq_base (default 10000) */
    float rope_freq_scale;      /* 1 / rope.scaling.factor for linear scaling, else 1 */
    loom_rope_mode rope_mode;   /* NORMAL for llama, NEOX for qwen2/qwen3 */
    bool has_rope_freqs;        /* blk.N.rope_freqs.weight present (Llama 3.1 scaling) */
    bool tied_output;           /* the file has no output.weight (token_embd reused) */
} loom_model_hparams;

/* Open, reserve and load. On failure *out is NULL and err says why (LOOM_ERR_NOT_FOUND
 * for a missing key/tensor, LOOM_ERR_FORMAT for a wrong shape or value,
 * LOOM_ERR_UNSUPPORTED for an unknown architecture or cache type, LOOM_ERR_NOMEM when
 * weights/cache/graph do not fit (the backend's memory report is in the message),
 * LOOM_ERR_CANCELLED when the progress callback stopped the load). With dry_run the
 * model is opened for accounting only: read loom_backend_memory_get(loom_model_backend(m)). */
loom_status loom_model_open(const loom_model_params *params, loom_model **out, loom_error *err);
/* Planning hook for `loom plan`: on an open backend (normally a dry run), check the
 * model's hyperparameters and weight shapes, then account what loom_model_open would
 * add: the KV cache of n_ctx tokens (cache_type) as Cache[i] of each layer's device and
 * the worst-case graph (n_batch tokens against the full context) as graph memory.
 * On a dry-run backend the graph is an analytic estimate of the peak intermediates
 * per device; on a real backend the graph is reserved (cache buffers are freed again
 * but stay accounted). n_ctx/n_batch 0 = the loom_model_open defaults. The backend
 * stays owned by the caller. Errors as loom_model_open. */
loom_status loom_model_plan(loom_backend *be, int n_ctx, int n_batch, loom_type cache_type,
                            loom_error *err);
/* Free everything (cache, backend, tokenizer). NULL is a no-op. */
void loom_model_close(loom_model *m);

/* Evaluate n tokens at positions n_past..n_past+n-1, appending them to the KV cache.
 * Prompts longer than n_batch run in chunks. Keeps the logits of every token when
 * all_logits, else of the last token only. Errors (nothing is evaluated and the cache
 * is unchanged): LOOM_ERR_INVALID_ARG (n <= 0, NULL tokens, dry-run model),
 * LOOM_ERR_RANGE (a token id < 0 or >= n_vocab; the message names the index),
 * LOOM_ERR_CONTEXT_FULL (n_past + n > n_ctx). A compute failure mid-way
 * (LOOM_ERR_CANCELLED, LOOM_ERR_NOMEM ...) leaves n_past at the last completed chunk. */
loom_status loom_model_eval(loom_model *m, const int32_t *tokens, int n, bool all_logits,
                            loom_error *err);
/* Logits (n_vocab floats) of row `row` of the last eval: 0..loom_model_n_logits()-1,
 * or -1 for the last row. NULL if out of range or nothing evaluated yet. The pointer
 * stays valid until the next eval/reset/close. */
const float *loom_model_logits(const loom_model *m, int row);
int loom_model_n_logits(const loom_model *m);
/* Index of the largest logit of a row (first on ties); -1 if the row does not exist. */
int32_t loom_model_argmax(const loom_model *m, int row);

int loom_model_n_vocab(const loom_model *m);
int loom_model_n_past(const loom_model *m);   /* tokens in the KV cache */
int loom_model_n_ctx(const loom_model *m);    /* context length (tokens) */
int loom_model_n_batch(const loom_model *m);
/* Forget the cache contents (n_past = 0); memory is kept. */
void loom_model_reset(loom_model *m);

const loom_model_hparams *loom_model_get_hparams(const loom_model *m);
/* The backend (for memory reports, placement, the GGUF metadata). Owned by the model. */
loom_backend *loom_model_backend(const loom_model *m);
const loom_gguf *loom_model_gguf(const loom_model *m);
/* The model's tokenizer (built from the file's tokenizer.* keys on first use and
 * owned by the model; valid until close). Errors as loom_tokenizer_new_from_gguf. */
loom_status loom_model_tokenizer(loom_model *m, const loom_tokenizer **out, loom_error *err);

/* Called after each node of every eval graph (see loom_ctx_set_eval_callback);
 * intermediates are named "<what>-<layer>" (attn_norm-3, q-3, k-3, v-3, kq-3,
 * attn_out-3, ffn_inp-3, ffn_norm-3, ffn_out-3, l_out-3), then "result_norm",
 * "result_output". NULL removes it. */
void loom_model_set_eval_callback(loom_model *m, loom_eval_cb cb, void *user);
/* Ask a running load or eval to stop (LOOM_ERR_CANCELLED). Thread-safe. */
void loom_model_cancel(loom_model *m);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_MODEL_H */
