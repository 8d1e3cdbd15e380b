/*
 * loom_embed.h - text embedding models: one vector per input.
 *
 * Architectures:
 *   bert        absolute position and token-type embeddings, separate Q/K/V with
 *               biases, GELU feed-forward (all-MiniLM, bge, mxbai, snowflake ...);
 *   nomic-bert  rotary positions, fused QKV, SwiGLU feed-forward (nomic-embed-text);
 *   nomic-bert-moe  nomic-bert with GELU MLPs and every moe_every_n_layers-th layer a
 *               mixture of GELU experts (nomic-embed-text-v2-moe);
 *               all post-LayerNorm encoders with non-causal attention;
 *   gemma-embedding  Gemma 3 layers with bidirectional attention, every
 *               sliding_window_pattern-th layer full and the others a symmetric
 *               window, and the sentence-transformers dense layers (dense_2,
 *               dense_3) after the final norm (EmbeddingGemma);
 *   t5encoder   a T5 / flan-T5 encoder stack: pre-RMSNorm layers without biases, a
 *               learned bias per head and relative-position bucket instead of
 *               positions, unscaled scores, gated GELU (flan-T5) or ReLU (T5) MLPs
 *               (pooling none unless the file says; llama.cpp's t5encoder);
 *   llama, mistral, qwen2, qwen3 files that carry `<arch>.pooling_type` (what
 *               llama.cpp's converter writes for sentence-transformers models:
 *               Qwen3-Embedding with last-token pooling, e5-mistral ...): the
 *               decoder's layers with its causal attention, the hidden states after
 *               the final norm (no output head). Without that key such a file is a
 *               generative model (loom_model.h).
 * Every token of a sequence sees the tokens of it its attention allows, and nothing
 * of the other sequences. There is no KV cache: each call evaluates its inputs from
 * scratch.
 *
 * loom_embed_compute takes many sequences at once, packs them into graphs of up to
 * n_batch tokens (sequences separated by the attention mask, never split), and
 * returns one pooled vector per sequence (pooling from `<arch>.pooling_type`, or
 * the one asked for: mean, first token ([CLS]), last token; none = every token's
 * hidden state), L2-normalized unless asked not to (llama.cpp's default).
 *
 * Example:
 *     loom_embed_params p = loom_embed_default_params();
 *     p.path = "nomic-embed-text.gguf";
 *     loom_embedder *e; loom_error err = {0};
 *     if (loom_embed_open(&p, &e, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
 *     int32_t n_ctx = loom_embed_n_ctx(e), n;
 *     int32_t *ids = malloc(n_ctx * sizeof *ids);
 *     if (loom_embed_tokenize(e, "hello", 5, false, ids, n_ctx, &n, &err)) ...;
 *     float *v = malloc(loom_embed_n_embd(e) * sizeof *v);
 *     const int32_t *seqs[1] = {ids};
 *     if (loom_embed_compute(e, seqs, &n, 1, true, v, loom_embed_n_embd(e), &err)) ...;
 *     loom_embed_close(e);
 *
 * Threading: an embedder is used by one thread at a time, except
 * loom_embed_cancel (any thread).
 */
#ifndef LOOM_EMBED_H
#define LOOM_EMBED_H

#include "loom_backend.h"
#include "loom_tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_embedder loom_embedder;

/* llama.cpp's llama_pooling_type numbering (the value of `<arch>.pooling_type`). */
typedef enum loom_pooling {
    LOOM_POOLING_UNSPECIFIED = -1, /* params: take the file's (mean when absent) */
    LOOM_POOLING_NONE = 0,         /* every token's hidden state */
    LOOM_POOLING_MEAN = 1,
    LOOM_POOLING_CLS = 2,          /* the first token ([CLS]) */
    LOOM_POOLING_LAST = 3          /* the last token */
} loom_pooling;

/* "none", "mean", "cls", "last" ("unspecified" for -1, "?" otherwise). Static. */
const char *loom_pooling_name(loom_pooling p);
/* Parse one of those names; false when unknown. */
bool loom_pooling_from_name(const char *s, loom_pooling *out);

typedef struct loom_embed_params {
    const char *path;         /* GGUF file (required) */
    int32_t n_ctx;            /* longest input in tokens; 0 = the training context
                                 (context_length), at most 8192. At most 8192; bert:
                                 at most context_length (its position table) */
    int32_t n_batch;          /* tokens per graph (several sequences share one);
                                 0 = n_ctx; raised to n_ctx when smaller; at most 8192.
                                 The graph holds the attention scores of n_batch x
                                 n_batch tokens per head */
    int n_threads;            /* CPU threads; 0 = physical cores available */
    loom_pooling pooling;     /* UNSPECIFIED (default) = the file's pooling_type. Set,
                                 it also opens a llama/mistral/qwen2/qwen3 file without
                                 a pooling_type (as llama.cpp's llama-embedding) */
    bool no_mmap;             /* see loom_backend_params */
    bool flash_attn;          /* attention as one fused node per layer (loom_flash_attn)
                                 instead of scores, softmax and the V product */
    loom_progress_cb progress;/* load progress (may be NULL); false cancels */
    void *progress_user;
} loom_embed_params;

loom_embed_params loom_embed_default_params(void);

/* Whether general.architecture `arch` is always an embedding architecture this
 * header serves ("bert", "nomic-bert", "nomic-bert-moe", "gemma-embedding", "t5encoder", ...). NULL: false. The decoder
 * architectures depend on the file: use loom_embed_gguf_supported. */
bool loom_embed_arch_supported(const char *arch);
/* Whether the open GGUF g is an embedding model this header serves: one of those
 * architectures, or llama / mistral / qwen2 / qwen3 with `<arch>.pooling_type` (as
 * Ollama gives such a file the "embedding" capability instead of "completion").
 * Reads keys only; NULL: false. Thread-safe on a g no one writes. */
bool loom_embed_gguf_supported(const loom_gguf *g);

/* Open, check every weight's shape, reserve the worst-case graph (n_batch tokens)
 * and load. On failure *out is NULL and err says why: LOOM_ERR_NOT_FOUND (a key or
 * tensor), LOOM_ERR_FORMAT (a shape or value), LOOM_ERR_UNSUPPORTED (another
 * architecture, causal attention), LOOM_ERR_INVALID_ARG (params), LOOM_ERR_NOMEM,
 * LOOM_ERR_IO, LOOM_ERR_CANCELLED (progress callback). */
loom_status loom_embed_open(const loom_embed_params *params, loom_embedder **out, loom_error *err);
/* Free everything. NULL is a no-op. */
void loom_embed_close(loom_embedder *e);

int32_t loom_embed_n_embd(const loom_embedder *e);   /* vector length */
int32_t loom_embed_n_ctx(const loom_embedder *e);    /* longest input */
int32_t loom_embed_n_batch(const loom_embedder *e);
int32_t loom_embed_n_vocab(const loom_embedder *e);
loom_pooling loom_embed_pooling(const loom_embedder *e); /* the pooling in use */
const char *loom_embed_arch(const loom_embedder *e);     /* general.architecture ("bert" ...) */
loom_backend *loom_embed_backend(const loom_embedder *e);

/* The model's tokenizer (built on first use, owned by the embedder). */
loom_status loom_embed_tokenizer(loom_embedder *e, const loom_tokenizer **out, loom_error *err);

/* Tokenize len bytes of text as an input: [CLS] ... [SEP] or BOS ... EOS as the
 * vocabulary says (its add_bos / add_eos / add_sep), special-token texts in the
 * input not matched. Writes at most max ids and the count to *n_out. An input longer
 * than n_ctx is LOOM_ERR_CONTEXT_FULL (the message gives both counts) unless
 * truncate: then the first n_ctx tokens are kept, the last of them replaced by
 * [SEP] (or EOS) when the vocabulary appends one. LOOM_ERR_RANGE when max is smaller than the result,
 * LOOM_ERR_INVALID_ARG for NULL arguments or an empty result (n_ctx 0 never
 * happens: a model has n_ctx >= 1). */
loom_status loom_embed_tokenize(loom_embedder *e, const char *text, size_t len, bool truncate,
                                int32_t *ids, int32_t max, int32_t *n_out, loom_error *err);

/* Embed n_seq token sequences (tokens[i][0..n_tokens[i])), each 1..n_ctx tokens of
 * ids in [0, n_vocab). Writes into out (out_floats floats):
 *   pooling MEAN / CLS / LAST: n_seq vectors of n_embd floats, in input order;
 *   pooling NONE: the hidden state of every token, sequence after sequence
 *   (sum(n_tokens) vectors).
 * normalize: each vector scaled to unit L2 norm (a zero vector stays zero).
 * Errors (out unspecified): LOOM_ERR_INVALID_ARG (NULL arguments, n_seq < 1, an
 * empty sequence, out_floats too small: the message says how many are needed),
 * LOOM_ERR_CONTEXT_FULL (a sequence longer than n_ctx), LOOM_ERR_RANGE (a token id,
 * naming the sequence and index), LOOM_ERR_CANCELLED (loom_embed_cancel), compute
 * errors (LOOM_ERR_NOMEM ...). */
loom_status loom_embed_compute(loom_embedder *e, const int32_t *const *tokens, const int32_t *n_tokens,
                               int32_t n_seq, bool normalize, float *out, size_t out_floats,
                               loom_error *err);

/* Stop the running (or next) loom_embed_compute with LOOM_ERR_CANCELLED; consumed by
 * that call. Thread-safe. */
void loom_embed_cancel(loom_embedder *e);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_EMBED_H */
