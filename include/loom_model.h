/*
 * loom_model.h - a llama-family language model with its KV cache.
 *
 * loom_model_open opens the GGUF file onto devices (loom_backend_open), reads the
 * hyperparameters, binds and shape-checks every weight, creates the KV cache,
 * reserves a worst-case graph (n_batch tokens against a full context) so cache and
 * graph memory are committed and accounted, and only then loads the weights.
 * loom_model_eval appends tokens to sequence 0 of the cache (a prompt in chunks of
 * n_batch, or one token at a time) and keeps the logits of the requested rows.
 *
 * Many sequences at once: open with n_seq_max > 1, fill a loom_batch with tokens of
 * several sequences (each row: token, position, sequence ids, logits wanted) and
 * call loom_model_decode: the whole batch is one pass over the weights, and each
 * sequence only sees its own history. The loom_model_seq_* calls edit the cache per
 * sequence (remove a range, copy, keep one, shift positions, context shift, prefix
 * reuse).
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
 * Example (two sequences decoded together; prompts p0[n0], p1[n1] already tokenized):
 *     p.n_seq_max = 2;
 *     ... loom_model_open ...
 *     loom_batch b;
 *     if (loom_batch_init(&b, loom_model_n_batch(m), 1, &err)) ...;
 *     for (int32_t s = 0; s < 2; s++) {              // prompts (each <= n_batch here)
 *         loom_batch_clear(&b);
 *         const int32_t *pr = s ? p1 : p0; int32_t n = s ? n1 : n0;
 *         for (int32_t i = 0; i < n; i++) loom_batch_add(&b, pr[i], i, &s, 1, i == n - 1, &err);
 *         if (loom_model_decode(m, &b, &err)) ...;
 *         next[s] = loom_model_batch_argmax(m, n - 1); pos[s] = n;
 *     }
 *     for (int step = 0; step < 32; step++) {        // one batch row per sequence
 *         loom_batch_clear(&b);
 *         for (int32_t s = 0; s < 2; s++) loom_batch_add(&b, next[s], pos[s]++, &s, 1, true, &err);
 *         if (loom_model_decode(m, &b, &err)) break;
 *         for (int32_t s = 0; s < 2; s++) next[s] = loom_model_batch_argmax(m, s);
 *     }
 *     loom_batch_free(&b);
 *
 * Architectures: llama (Llama 1/2/3.x, Mistral, TinyLlama, SmolLM ...), qwen2
 * (q/k/v biases, NEOX rope), qwen3 (per-head q/k RMSNorm, NEOX rope).
 *
 * Threading: a model is used by one thread at a time, except loom_model_cancel,
 * which may be called from any thread. The thread that evaluates (decode, eval,
 * generate) also computes as the CPU pool's thread 0: give it a stack of at least
 * 1 MiB (the main thread's and glibc's default 8 MiB are fine; Loom's own worker and
 * server threads get 4 MiB).
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
    int32_t n_ctx;              /* context length in tokens of EACH sequence; 0 = min(training
                                   context, 4096). The cache holds n_seq_max * n_ctx tokens
                                   (contract §7.1: round_up(n_seq_max * n_ctx, padding) cells;
                                   sliding-window layers keep window cells per sequence + n_batch) */
    int32_t n_batch;            /* max tokens per graph (and per loom_model_decode batch);
                                   0 = 512 (clamped to n_seq_max * n_ctx) */
    int32_t n_seq_max;          /* sequences the cache holds at once, ids 0..n_seq_max-1;
                                   0 = 1; at most LOOM_SEQ_MAX */
    int n_threads;              /* CPU threads; 0 = physical cores available */
    int n_gpu_layers;           /* see loom_backend_params */
    const float *tensor_split;  /* per-accelerator proportions or NULL */
    int n_tensor_split;
    const loom_sim_device *sim_devices; /* simulated accelerators or NULL */
    int n_sim_devices;
    bool flash_attn;            /* attention through loom_flash_attn (default params: false,
                                   the plain matmul-softmax-matmul graph; every `loom`
                                   command and the server turn it on unless -fa off) */
    loom_type cache_type;       /* K/V type: F16 (default), F32; Q8_0/Q4_0 need flash_attn */
    bool dry_run;               /* open, create the cache, reserve; no buffers, no load, no eval */
    bool no_mmap;
    bool no_repack;             /* keep every CPU weight in the GGUF layout. Default (false):
                                   the attention/FFN/output matrices are repacked at load where
                                   the CPU kernels have a faster layout for their type
                                   (loom_backend_params.repack_filter); no effect on results
                                   beyond float summation order, none on memory */
    bool ctx_shift;             /* loom_model_eval: when sequence 0 would exceed n_ctx, make room
                                   with loom_model_seq_context_shift(m, 0, n_keep) and go on
                                   instead of failing with LOOM_ERR_CONTEXT_FULL */
    int32_t n_keep;             /* tokens kept at the start by that context shift (e.g. the
                                   system prompt); clamped to n_ctx - 1 */
    loom_progress_cb progress;  /* load progress (may be NULL); return false to cancel */
    void *progress_user;
    const char *vk_devices;     /* Vulkan device filter (loom_backend_params.vk_devices) */
    unsigned vk_flags;          /* LOOM_VK_* (loom_backend.h) */
    const char *vk_loader;      /* Vulkan loader library (loom_backend_params.vk_loader) */
    int kv_rotate;              /* quantized caches store K and V turned by a Walsh-Hadamard
                                   transform, as llama.cpp's do (same scores, smaller
                                   quantization error where keys have outlier channels):
                                   0 (default) on for Q8_0 / Q4_0 caches, -1 off, 1 on for
                                   every cache type, blocks from 4 (tests: logits must not
                                   move). The CLI reads LOOM_KV_ROTATE=0|1. */
} loom_model_params;

loom_model_params loom_model_default_params(void);

/* Hyperparameters as read from the file (plain data). */
typedef struct loom_model_hparams {
    char arch[32];              /* general.architecture */
    int32_t n_vocab;            /* rows of token_embd.weight */
    int n_embd;
    int n_layer;
    int n_head, n_head_kv;
    int head_dim_k, head_dim_v; /* attention.key_length / value_length (default n_embd/n_head) */
    int n_ff;
    int n_rot;                  /* rope.dimension_count (default head_dim_k) */
    int32_t n_ctx_train;        /* context_length (0 if absent) */
    float rms_eps;              /* attention.layer_norm_rms_epsilon (default 1e-5) */
    float rope_base;            /* rope.freq_base (default 10000) */
    float rope_freq_scale;      /* 1 / rope.scaling.factor for linear scaling, else 1 */
    loom_rope_mode rope_mode;   /* NORMAL for llama, NEOX for qwen2/qwen3 */
    bool has_rope_freqs;        /* blk.N.rope_freqs.weight present (Llama 3.1 scaling) */
    bool tied_output;           /* the file has no output.weight (token_embd reused) */
} loom_model_hparams;

/* The general.architecture values loom_model_open runs, comma-separated ("llama,
 * mistral, ..."). Static storage, never NULL; thread-safe. */
const char *loom_model_architectures(void);

/* Open, reserve and load. On failure *out is NULL and err says why (LOOM_ERR_NOT_FOUND
 * for a missing key/tensor, LOOM_ERR_FORMAT for a wrong shape or value,
 * LOOM_ERR_UNSUPPORTED for an unknown architecture or cache type, LOOM_ERR_NOMEM when
 * weights/cache/graph do not fit (the backend's memory report is in the message),
 * LOOM_ERR_CANCELLED when the progress callback stopped the load). With dry_run the
 * model is opened for accounting only: read loom_backend_memory_get(loom_model_backend(m)). */
loom_status loom_model_open(const loom_model_params *params, loom_model **out, loom_error *err);
/* Planning hook for `loom plan`: on an open backend (normally a dry run), check the
 * model's hyperparameters and weight shapes, then account what loom_model_open would
 * add: the KV cache of n_seq_max sequences of n_ctx tokens (cache_type; sized as
 * loom_model_open does) as Cache[i] of each layer's device and the worst-case graph (n_batch tokens against the full context) as graph memory.
 * On a dry-run backend the graph is an analytic estimate of the peak intermediates
 * per device; on a real backend the graph is reserved (cache buffers are freed again
 * but stay accounted). n_ctx/n_batch/n_seq_max 0 = the loom_model_open defaults. The backend
 * stays owned by the caller. Errors as loom_model_open. */
loom_status loom_model_plan(loom_backend *be, int32_t n_ctx, int32_t n_batch, int32_t n_seq_max,
                            loom_type cache_type, loom_error *err);
/* Free everything (cache, backend, tokenizer). NULL is a no-op. */
void loom_model_close(loom_model *m);

/* Evaluate n tokens of sequence 0 at positions n_past..n_past+n-1 (n_past = the
 * sequence's largest position + 1), appending them to the KV cache: the
 * single-sequence convenience over loom_model_decode. Prompts longer than n_batch run
 * in chunks. Keeps the logits of every token when all_logits, else of the last token
 * only (rows 0.. of loom_model_logits). Errors (nothing is evaluated and the cache is
 * unchanged): LOOM_ERR_INVALID_ARG (n <= 0, NULL tokens, dry-run model),
 * LOOM_ERR_RANGE (a token id < 0 or >= n_vocab; the message names the index),
 * LOOM_ERR_CONTEXT_FULL (n_past + n > n_ctx, unless params.ctx_shift made room),
 * LOOM_ERR_CANCELLED (a cancel was pending when the call began; see
 * loom_model_cancel). A compute failure mid-way (LOOM_ERR_CANCELLED, LOOM_ERR_NOMEM ...)
 * leaves n_past at the last completed chunk. */
loom_status loom_model_eval(loom_model *m, const int32_t *tokens, int32_t n, bool all_logits,
                            loom_error *err);
/* Logits (n_vocab floats) of output row `row` of the last eval/decode:
 * 0..loom_model_n_logits()-1 in batch order (after loom_model_decode: the batch rows
 * that asked for logits, in order), or -1 for the last one. NULL if out of range or
 * nothing evaluated yet. The pointer stays valid until the next eval/decode/reset/close. */
const float *loom_model_logits(const loom_model *m, int32_t row);
int32_t loom_model_n_logits(const loom_model *m);
/* Index of the largest logit of a row (first on ties). NaN never wins (the rule of
 * loom_sampler too): NaN logits are skipped, -inf ones count. -1 if the row does not
 * exist or every logit of it is NaN. */
int32_t loom_model_argmax(const loom_model *m, int32_t row);

int32_t loom_model_n_vocab(const loom_model *m);
int32_t loom_model_n_past(const loom_model *m);   /* sequence 0: largest position + 1 (0 if empty) */
int32_t loom_model_n_ctx(const loom_model *m);    /* context length of each sequence (tokens) */
int32_t loom_model_n_batch(const loom_model *m);
int32_t loom_model_n_seq_max(const loom_model *m);
/* Forget the cache contents of every sequence; memory is kept. Also discards a
 * pending cancel (see loom_model_cancel). */
void loom_model_reset(loom_model *m);

/* ------------------------------------------------------------------ batches */

#define LOOM_SEQ_MAX 256          /* largest n_seq_max */
#define LOOM_POS_MAX 0x3FFFFFFF   /* largest token position */

/* A batch of tokens for loom_model_decode (llama.cpp's llama_batch is the model).
 * Row i is token[i] at position pos[i], belonging to the n_seq[i] sequences
 * seq_id[i * seq_capacity + 0 .. n_seq[i]-1], and logits[i] says whether its logits
 * are kept. Plain data: fill the arrays directly or with loom_batch_add. The arrays
 * are owned by the batch (loom_batch_init allocates them, loom_batch_free frees them);
 * a batch may be reused for any number of decodes. A row in several sequences is a
 * token those sequences share (a common prompt): its K/V is computed once, and it
 * attends to the cells of any of its sequences, so give a row several ids only when
 * those sequences have the same history (e.g. right after loom_model_seq_copy).
 * Not thread-safe: one thread fills and decodes a batch at a time. */
typedef struct loom_batch {
    int32_t n_tokens;     /* rows in use, 0..capacity */
    int32_t capacity;     /* rows allocated */
    int32_t seq_capacity; /* sequence ids one row can hold */
    int32_t *token;       /* [capacity] token ids */
    int32_t *pos;         /* [capacity] positions (0..LOOM_POS_MAX) */
    int32_t *n_seq;       /* [capacity] ids used in row i (1..seq_capacity) */
    int32_t *seq_id;      /* [capacity * seq_capacity] */
    bool *logits;         /* [capacity] keep the logits of row i */
} loom_batch;

/* Allocate a batch of `capacity` rows (1..1<<24), each holding up to `seq_capacity`
 * sequence ids (1..LOOM_SEQ_MAX), with n_tokens = 0. On error (LOOM_ERR_INVALID_ARG,
 * LOOM_ERR_NOMEM) *b is zeroed and holds nothing. */
loom_status loom_batch_init(loom_batch *b, int32_t capacity, int32_t seq_capacity, loom_error *err);
/* Free the arrays and zero *b. NULL or a zeroed batch is a no-op. */
void loom_batch_free(loom_batch *b);
/* n_tokens = 0 (the arrays are kept). */
void loom_batch_clear(loom_batch *b);
/* Append one row: token at pos in the n_seq sequences seq_ids[0..n_seq-1], logits
 * kept when `logits`. Only copies: values are checked by loom_model_decode.
 * LOOM_ERR_RANGE when the batch is full; LOOM_ERR_INVALID_ARG for a NULL batch or
 * seq_ids, or n_seq outside 1..seq_capacity (the batch is then unchanged). */
loom_status loom_batch_add(loom_batch *b, int32_t token, int32_t pos, const int32_t *seq_ids,
                           int32_t n_seq, bool logits, loom_error *err);

/* Decode a batch as one graph (one pass over the weights for all its rows), writing
 * each row's K/V into the cache cells of its sequence(s), and keep the logits of the
 * rows that asked for them (loom_model_batch_logits; loom_model_logits in row order).
 * Within a sequence, positions must increase strictly, in batch order and past the
 * sequence's largest cached position (loom_model_seq_pos_max); they need not be
 * contiguous. Each row attends to the cells of its own sequence(s) with positions <=
 * its own (causal; and within the window / chunk of a layer's attention type).
 * Errors, each leaving the cache and the previous logits unchanged:
 *   LOOM_ERR_INVALID_ARG  NULL model/batch/arrays, dry-run model, n_tokens <= 0 or >
 *                         n_batch, a row in no sequence (n_seq < 1) or listing an id
 *                         twice, a position not after the sequence's previous one;
 *   LOOM_ERR_RANGE        a token id outside [0, n_vocab), a sequence id outside
 *                         [0, n_seq_max), a position outside [0, LOOM_POS_MAX];
 *   LOOM_ERR_CONTEXT_FULL a sequence would hold more than n_ctx tokens (or, with cells
 *                         shared unusually, the cache has no room even after
 *                         defragmenting).
 * The message names the row and the sequence. A compute failure (LOOM_ERR_CANCELLED
 * from loom_model_cancel, LOOM_ERR_NOMEM ...) adds nothing to the cache and clears the
 * logits; the cache may have been defragmented (same contents, other cells). */
loom_status loom_model_decode(loom_model *m, const loom_batch *b, loom_error *err);
/* Logits (n_vocab floats) of batch row i of the last loom_model_decode (i = -1: the
 * last row that asked for logits). NULL when row i did not ask for logits, i is out
 * of range, or the last call was not a successful decode. Valid until the next
 * eval/decode/reset/close. */
const float *loom_model_batch_logits(const loom_model *m, int32_t i);
/* loom_model_argmax of batch row i; -1 if it has no logits. */
int32_t loom_model_batch_argmax(const loom_model *m, int32_t i);

/* ------------------------------------------------------------------ sequences
 * Edit the cache per sequence (llama.cpp's llama_memory_seq_* are the model). A
 * position range [p0, p1) takes p0 < 0 as 0 and p1 < 0 as "to the end". Every call
 * either succeeds or returns an error with the cache unchanged. Sequence ids are
 * 0..n_seq_max-1 (LOOM_ERR_RANGE otherwise). Not during a decode (one thread uses a
 * model at a time).
 * Models with recurrent layers (qwen35, qwen35moe, qwen3next: gated delta nets;
 * granitehybrid, nemotron_h*, falcon-h1, mamba2: Mamba-2; mamba, jamba: Mamba-1; lfm2,
 * lfm2moe: short convolutions; rwkv6, rwkv7: token shifts and a wkv state) keep a
 * convolution state (and a recurrent one) per sequence beside the K/V cells (mamba,
 * mamba2, rwkv6 and rwkv7 have no K/V, only positions), and
 * their sliding-window layers keep every cell (only the masks slide). Such a state
 * describes all of a sequence's tokens and cannot be cut, so for these models: a
 * remove (or a shift pushing tokens below position 0) must take all of a sequence's
 * tokens (the state is reset) or none of them, a copy takes all of src into an empty
 * dst (the state is copied), a context shift is LOOM_ERR_UNSUPPORTED, prefix reuse
 * keeps a cached prefix only when the new request extends everything cached (else it
 * starts over), and each batch row belongs to exactly one sequence. Refusals leave the cache unchanged. */

/* Remove the tokens of sequence seq (seq = -1: of every sequence) with positions in
 * [p0, p1): rollback (p1 = -1), truncation, or a gap in the middle (positions after it
 * are not moved: use loom_model_seq_shift). A cell shared with other sequences stays
 * theirs. */
loom_status loom_model_seq_remove(loom_model *m, int32_t seq, int32_t p0, int32_t p1, loom_error *err);
/* Make the tokens of src with positions in [p0, p1) tokens of dst as well, sharing the
 * cells (a prompt forked into several continuations; nothing is recomputed). dst's
 * own tokens in [p0, p1) are removed first. src == dst is a no-op.
 * LOOM_ERR_CONTEXT_FULL if dst would hold more than n_ctx tokens. */
loom_status loom_model_seq_copy(loom_model *m, int32_t src, int32_t dst, int32_t p0, int32_t p1,
                                loom_error *err);
/* Remove every sequence but seq. */
loom_status loom_model_seq_keep(loom_model *m, int32_t seq, loom_error *err);
/* Add delta to the positions of seq's tokens in [p0, p1), re-rotating their cached
 * keys (RoPE by delta, contract §7.6 Shift: each layer's own rope - window layers'
 * base, YaRN angles and frequency factors - as a pure rotation; layers without rope
 * are left alone, as are all keys of models without rope (gpt2 and starcoder's learned
 * positions, nemotron_h: as llama.cpp, only the positions move); deepseek2's keys
 * rotate in their trailing rope dims. A model whose
 * attention depends on absolute positions otherwise, such as mistral3's and llama4's
 * query temperature or llama4's chunks, continues as llama.cpp's does, not as a fresh
 * decode at the new positions); tokens whose position would become
 * negative are removed. A cell shared with another sequence is first copied so the
 * other sequence keeps its positions. Errors: LOOM_ERR_INVALID_ARG if a shifted token
 * would land on or past a token of seq outside the range (order must be kept),
 * LOOM_ERR_UNSUPPORTED when a model with recurrent layers would keep part of seq (see
 * above), LOOM_ERR_CONTEXT_FULL when
 * copying shared cells finds no room, compute errors (LOOM_ERR_CANCELLED ...) with
 * the cache unchanged. With a quantized cache type the keys are re-quantized. */
loom_status loom_model_seq_shift(loom_model *m, int32_t seq, int32_t p0, int32_t p1, int32_t delta,
                                 loom_error *err);
/* Largest / smallest position of seq in the cache; -1 when it is empty or seq is out
 * of range. With sliding-window layers the smallest position still cached for every
 * layer can be larger: loom_model_seq_reuse_prefix accounts for it. */
int32_t loom_model_seq_pos_max(const loom_model *m, int32_t seq);
int32_t loom_model_seq_pos_min(const loom_model *m, int32_t seq);
/* Tokens of seq in the cache (0 when empty or out of range). */
int32_t loom_model_seq_n_tokens(const loom_model *m, int32_t seq);
/* Context shift (Ollama's rule) for a sequence that is about to outgrow n_ctx: keep
 * its first n_keep tokens (clamped to n_ctx - 1), then discard
 * max((n_ctx - n_keep) / 2 - (n_ctx - n_tokens), 0) (at least 1 when full) tokens
 * after them and shift the rest down by that many positions. *n_discarded (may be
 * NULL) receives the count; the sequence's next position is then
 * loom_model_seq_pos_max(m, seq) + 1. Errors as loom_model_seq_shift. */
loom_status loom_model_seq_context_shift(loom_model *m, int32_t seq, int32_t n_keep, int32_t *n_discarded,
                                         loom_error *err);
/* Prefix reuse: tokens[0..n) is the full token list of a new request for sequence seq
 * (positions 0..n-1). Finds the longest prefix of it already in the cache - in seq
 * itself or, when longer, in another sequence (whose cells are then shared into seq
 * as loom_model_seq_copy does) - keeps at most n - 1 of it (so the last token is
 * evaluated and yields logits), removes everything else of seq, and stores the number
 * kept in *n_cached: evaluate tokens[*n_cached..n) at positions *n_cached.. next.
 * A cached prefix counts only where the cached positions are 0, 1, 2, ... (after a
 * context shift only the kept start matches) and, with sliding-window layers, where
 * the window before the next position is still cached (else *n_cached is 0).
 * Errors: LOOM_ERR_INVALID_ARG (NULL arguments, n <= 0), LOOM_ERR_RANGE (seq). */
loom_status loom_model_seq_reuse_prefix(loom_model *m, int32_t seq, const int32_t *tokens, int32_t n,
                                        int32_t *n_cached, loom_error *err);

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
/* Ask the model to stop (LOOM_ERR_CANCELLED). Thread-safe; any thread, any time.
 * A cancel is never lost: it stays pending until an eval observes it. The eval
 * running when it is issued stops at its next node boundary; if none is running (it
 * comes before an eval or between two), the next loom_model_eval returns
 * LOOM_ERR_CANCELLED at once without evaluating anything. The eval that returns
 * LOOM_ERR_CANCELLED consumes the cancel (several cancels issued before that coalesce
 * into one), so the eval after it runs normally. A cancel arriving after an eval's
 * last check is left for the next eval. loom_model_reset discards a pending cancel.
 * During loom_model_open there is no model handle: use the progress callback. */
void loom_model_cancel(loom_model *m);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_MODEL_H */
