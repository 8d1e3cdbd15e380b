/*
 * loom_synth.h - synthetic llama-architecture GGUF files (random weights, real
 * tokenizer) for benchmarks and tests.
 *
 * The file is streamed: the header, KVs and tensor infos are written first (all
 * sizes are known up front), then each tensor is generated and quantized in
 * chunks of rows by n_threads threads and appended. Peak memory is a few chunk
 * buffers (tens of MiB), independent of the model size.
 *
 * Weights: every element is a sum of four uniform variables scaled to mean 0 and
 * standard deviation 1/sqrt(ne0) (bounded "Gaussian-ish", |x| <= 2*sqrt(3)*std);
 * norm weights (1-D) are 1 + 0.02*z with z of that same unit-variance law.
 * Quantized matrices of 2^18 elements or more are, by default, assembled from a
 * pool of 2^20 elements quantized once per (type, ne0): every block of every row
 * is drawn uniformly from that pool, so the blocks follow exactly the law of
 * quantized random data while writing costs a memcpy per block (the reference
 * quantizers are slow). `exact` quantizes every row instead.
 * The bytes depend only on (seed, tensor index, row), not on threading.
 *
 * Example:
 *     loom_synth_params p = loom_synth_default_params();
 *     p.vocab_path = "tests/data/vocab/ggml-vocab-llama-spm.gguf";
 *     p.dim = 256; p.n_layers = 2; p.n_heads = 4; p.n_kv_heads = 2; p.ffn = 512;
 *     p.type_name = "Q4_K_M";
 *     loom_error err = {0};
 *     if (loom_synth_write(&p, "/tmp/tiny.gguf", NULL, &err)) puts(err.msg);
 *
 * Threading: loom_synth_write may be called from any thread; it starts and joins
 * its own worker threads. Everything else here is pure.
 */
#ifndef LOOM_SYNTH_H
#define LOOM_SYNTH_H

#include "loom_base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_synth_params {
    const char *vocab_path; /* GGUF with tokenizer.* KVs (required); all are copied */
    int64_t dim;            /* embedding_length */
    int64_t n_layers;       /* block_count */
    int64_t n_heads;        /* attention.head_count (dim % n_heads == 0) */
    int64_t n_kv_heads;     /* attention.head_count_kv (n_heads % n_kv_heads == 0) */
    int64_t ffn;            /* feed_forward_length */
    int64_t n_ctx;          /* context_length (default 4096) */
    const char *type_name;  /* "F32" "F16" "BF16" "Q4_0" "Q8_0" "Q4_K" "Q6_K" ... or "Q4_K_M" */
    uint64_t seed;          /* default 1 */
    bool tied;              /* no output.weight (token_embd is reused) */
    float rope_base;        /* default 10000 */
    float rms_eps;          /* default 1e-5 */
    int n_threads;          /* quantizing threads; 0 = online CPUs (max 64) */
    bool exact;             /* quantize every row (slow) instead of drawing pooled blocks */
    /* Embedding encoders (loom_embed.h), with the keys and tensor names llama.cpp's
     * converter writes: arch NULL or "llama" (default), "bert" (position_embd of n_ctx
     * rows, token_types, separate q/k/v with biases, GELU FFN with biases) or
     * "nomic-bert" (fused attn_qkv, SwiGLU FFN, rope.freq_base); both with
     * token_embd_norm, attn_output_norm, layer_output_norm (weight + bias),
     * attention.causal false and attention.layer_norm_epsilon (norm_eps). n_kv_heads
     * must equal n_heads. Biases are 0.02 * z; biases, position_embd and token_types
     * are F32 in every scheme (as the converter writes them). The vocab should be a
     * WordPiece one. */
    const char *arch;
    int pooling_type;       /* <arch>.pooling_type for bert/nomic-bert (default 1 = mean;
                               -1 = not written) */
    float norm_eps;         /* LayerNorm epsilon (default 1e-12) */
} loom_synth_params;

loom_synth_params loom_synth_default_params(void);

/* What was written (plain data). */
typedef struct loom_synth_result {
    int64_t n_vocab;
    int64_t n_tensors;
    uint64_t n_params;      /* elements of all tensors */
    uint64_t data_bytes;    /* tensor data section, padding included */
    uint64_t file_bytes;
    uint32_t file_type;     /* general.file_type written (llama_ftype numbering) */
} loom_synth_result;

/* Type of the tensor `name` (llama.cpp names: "blk.3.attn_v.weight", "output.weight",
 * ...) with row length ne0 in a model of n_layers layers, for the scheme type_name.
 * Plain type names give that type to every matrix (a "pure" file) and F32 to 1-D
 * tensors. "Q4_K_M" ("Q5_K_M"): Q4_K (Q5_K) bulk; Q6_K for output.weight and for
 * attn_v/ffn_down in layers i with i < n/8, i >= 7n/8 or (i - n/8) % 3 == 2. In every
 * scheme a row that is not a multiple of the chosen type's block falls back as
 * llama.cpp's quantizer does, when ne0 % 32 == 0: Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K ->
 * Q8_0, Q2_K / Q3_K -> Q4_0, IQ4_XS -> IQ4_NL (other 256-block types -> Q5_0); else,
 * and for 32-block types, F16. Returns LOOM_ERR_TYPE for an unknown or unquantizable
 * scheme. */
loom_status loom_synth_tensor_type(const char *type_name, const char *name, int64_t ne0,
                                   int64_t n_layers, loom_type *out);

/* Write the model to path atomically: into a temporary file in path's directory,
 * renamed over path only when complete. result may be NULL. On failure only the
 * temporary file is removed (an existing file at path is left untouched) and err
 * names the culprit (argument, vocab key, tensor, write offset). A path that exists
 * and is not a regular file (device, FIFO, directory, symbolic link) is refused with
 * LOOM_ERR_INVALID_ARG. Errors: LOOM_ERR_INVALID_ARG (shapes, path), LOOM_ERR_TYPE
 * (type name), LOOM_ERR_NOT_FOUND (vocab without tokenizer.ggml.tokens),
 * LOOM_ERR_IO, LOOM_ERR_NOMEM, and anything loom_gguf_open returns for the vocab. */
loom_status loom_synth_write(const loom_synth_params *params, const char *path,
                             loom_synth_result *result, loom_error *err);

/* Tiny F32 models of other architectures, with the keys and tensor names llama.cpp's
 * converter writes (for reference tests against llama.cpp): 64 wide, 4 heads of 16, 2 KV
 * heads, sliding window 8, 2 blocks (gemma3: 6, so that its 5:1 pattern has a global
 * layer). arch: "gemma2" "gemma3" "phi3" (original context 4096: short LongRoPE factors
 * at n_ctx <= 4096) "phi3-long" (original context 128: long factors above it)
 * "mistral3" (YaRN, query temperature) "qwen3moe" (8 experts, top 2) "gpt-oss" (4
 * experts, top 2, sinks, biases, YaRN). The bytes depend only on (arch, seed, the vocab
 * file). drop / expert_count / sliding_window make deliberately bad files for tests. */
typedef struct loom_synth_arch_params {
    const char *arch;
    const char *vocab_path;  /* GGUF whose tokenizer.* keys are copied */
    uint64_t seed;           /* default 1 */
    const char *drop;        /* a key ("gemma2.attention.sliding_window") or tensor name left out */
    int64_t expert_count;    /* written instead of the true expert count when > 0 */
    int64_t sliding_window;  /* written instead of 8 when > 0 */
    /* shape overrides for benchmarks (0: the tiny defaults): width (a multiple of 64;
     * heads of 16), blocks, FFN (dense) or expert FFN length, experts, experts used */
    int64_t dim, n_layers, ffn, n_experts, n_experts_used;
} loom_synth_arch_params;

loom_synth_arch_params loom_synth_arch_default_params(void);
/* "gemma2 gemma3 ..." (static) */
const char *loom_synth_arch_names(void);
/* Write the model to path (atomically). Errors: LOOM_ERR_INVALID_ARG (unknown arch, NULL
 * arguments), what loom_gguf_open returns for the vocab, LOOM_ERR_IO, LOOM_ERR_NOMEM. */
loom_status loom_synth_arch_write(const loom_synth_arch_params *params, const char *path, loom_error *err);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_SYNTH_H */
