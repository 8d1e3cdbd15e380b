/*
 * loom_tokenizer.h - text <-> token ids from a GGUF vocabulary.
 *
 * Supported vocabularies (GGUF key `tokenizer.ggml.model`):
 *   - "llama": SentencePiece-style. The text (with a space prepended when
 *     add_space_prefix, the default) has its spaces replaced by U+2581; it is
 *     split into UTF-8 characters and the adjacent pair whose concatenation is a
 *     vocabulary piece with the highest score is merged repeatedly (ties: the
 *     leftmost pair). Characters that are no piece fall back to `<0xNN>` byte
 *     tokens (or the unknown token when a byte token is missing).
 *   - "gpt2": byte-level BPE. The text is split by the pre-tokenizer named by
 *     `tokenizer.ggml.pre` ("default"/"gpt2"/"gpt-2": the GPT-2 regex;
 *     "llama-bpe"/"llama3"/"llama-v3"/"falcon3"/"pixtral"/"smaug-bpe": the Llama 3
 *     regex; "qwen2"/"deepseek-r1-qwen"/"stablelm2"/"megrez": the Qwen2 regex;
 *     an unknown name is refused with LOOM_ERR_UNSUPPORTED). Each word's bytes
 *     are mapped to the GPT-2 byte->unicode alphabet and merged by
 *     `tokenizer.ggml.merges` rank (lowest rank first, ties: leftmost).
 *
 * Keys read: tokenizer.ggml.{model, tokens, scores, token_type, merges, pre,
 * bos_token_id, eos_token_id, eot_token_id, eom_token_id, unknown_token_id,
 * padding_token_id, add_bos_token, add_eos_token, add_space_prefix}.
 * Validation: tokens must be a non-empty string array (at most 2^31-1 entries);
 * scores (float array) and token_type (integer array, values 0..6) must have the
 * same length; merges must be strings "A B"; special ids must be in range (an id
 * of 0xFFFFFFFF or -1 means "none"). Any violation gives LOOM_ERR_FORMAT naming
 * the key, never an abort.
 *
 * Defaults: SPM adds BOS (add_bos_token true), add_space_prefix true; BPE adds
 * no BOS, except the Llama 3 pre-tokenizer family which adds BOS. The keys, when
 * present, override these defaults.
 *
 * Special tokens: tokens of type CONTROL, USER_DEFINED or UNKNOWN are matched
 * literally in the input (longest text first) before the normal algorithm runs.
 * USER_DEFINED tokens are always matched; CONTROL/UNKNOWN only when
 * parse_special is true. After a matched special token SPM prepends a space
 * again (when add_space_prefix), as the SentencePiece reference does per segment.
 *
 * Memory and threading: a tokenizer copies everything it needs from the GGUF
 * (the file may be closed afterwards). It is immutable after creation: every
 * function taking a `const loom_tokenizer *` may be called concurrently.
 * loom_tokenize allocates scratch memory per call.
 */
#ifndef LOOM_TOKENIZER_H
#define LOOM_TOKENIZER_H

#include "loom_base.h"
#include "loom_gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_tokenizer loom_tokenizer;

typedef enum loom_vocab_type {
    LOOM_VOCAB_SPM = 1, /* tokenizer.ggml.model = "llama" */
    LOOM_VOCAB_BPE = 2  /* tokenizer.ggml.model = "gpt2" */
} loom_vocab_type;

/* GGUF token types (values of tokenizer.ggml.token_type). */
typedef enum loom_token_type {
    LOOM_TOKEN_UNDEFINED = 0,
    LOOM_TOKEN_NORMAL = 1,
    LOOM_TOKEN_UNKNOWN = 2,
    LOOM_TOKEN_CONTROL = 3,
    LOOM_TOKEN_USER_DEFINED = 4,
    LOOM_TOKEN_UNUSED = 5,
    LOOM_TOKEN_BYTE = 6
} loom_token_type;

/* Build a tokenizer from the vocabulary keys of an open GGUF. On success *out
 * must be freed with loom_tokenizer_free; on failure *out is NULL and err names
 * the offending key. Errors: LOOM_ERR_NOT_FOUND (no tokenizer.ggml.model or
 * tokens), LOOM_ERR_FORMAT (malformed keys), LOOM_ERR_UNSUPPORTED (unknown
 * model or pre-tokenizer), LOOM_ERR_NOMEM. */
loom_status loom_tokenizer_new_from_gguf(const loom_gguf *g, loom_tokenizer **out, loom_error *err);
/* NULL is a no-op. */
void loom_tokenizer_free(loom_tokenizer *tok);

/* Tokenize len bytes of text (any bytes; need not be NUL-terminated or valid
 * UTF-8: invalid bytes become byte tokens / byte-level symbols). add_bos: prepend
 * BOS when the vocabulary's add_bos_token is set (and append EOS when
 * add_eos_token is set); false adds neither. parse_special: match CONTROL /
 * UNKNOWN token texts in the input.
 * Writes at most max ids to ids (ids may be NULL when max is 0) and the total
 * count to *n_out. Returns LOOM_ERR_RANGE when max is too small (the first max
 * ids are written and *n_out holds the count needed), LOOM_ERR_NOMEM,
 * LOOM_ERR_INVALID_ARG for NULL arguments. */
loom_status loom_tokenize(const loom_tokenizer *tok, const char *text, size_t len, bool add_bos,
                          bool parse_special, int32_t *ids, int64_t max, int64_t *n_out);

/* The bytes one token stands for: NORMAL pieces decoded (SPM: U+2581 -> ' ';
 * BPE: GPT-2 unicode -> byte), BYTE tokens `<0xNN>` -> that byte, USER_DEFINED
 * verbatim, CONTROL/UNKNOWN/UNUSED -> empty. No NUL terminator is written.
 * *len receives the piece length; LOOM_ERR_RANGE if it exceeds size (nothing
 * is guaranteed about buf then), LOOM_ERR_RANGE also for an id out of range. */
loom_status loom_token_to_piece(const loom_tokenizer *tok, int32_t id, char *buf, size_t size,
                                size_t *len);

/* Flags for loom_detokenize / the stream decoder. */
#define LOOM_DETOK_SPECIAL 1u  /* render CONTROL/UNKNOWN tokens as their text */
#define LOOM_DETOK_NO_STRIP 2u /* keep the leading space of the first text piece */

/* Concatenate the pieces of n ids. With add_space_prefix (SPM) the leading space
 * of the first text piece is removed unless LOOM_DETOK_NO_STRIP, so
 * detokenize(tokenize(s)) == s for ordinary text. Writes at most size bytes and
 * then a NUL if there is room (not counted); *len = bytes of the full text.
 * LOOM_ERR_RANGE if the text does not fit (size < *len) or an id is out of range. */
loom_status loom_detokenize(const loom_tokenizer *tok, const int32_t *ids, int64_t n,
                            unsigned flags, char *buf, size_t size, size_t *len);

/* Raw vocabulary text of a token (not NUL-terminated; owned by tok), or
 * LOOM_ERR_RANGE. */
loom_status loom_token_text(const loom_tokenizer *tok, int32_t id, const char **text, size_t *len);
loom_token_type loom_token_get_type(const loom_tokenizer *tok, int32_t id); /* UNDEFINED if out of range */
float loom_token_score(const loom_tokenizer *tok, int32_t id);              /* 0 if none/out of range */

int32_t loom_tokenizer_n_vocab(const loom_tokenizer *tok);
loom_vocab_type loom_tokenizer_type(const loom_tokenizer *tok);
/* Special ids; -1 when the vocabulary has none. */
int32_t loom_tokenizer_bos(const loom_tokenizer *tok);
int32_t loom_tokenizer_eos(const loom_tokenizer *tok);
/* End of turn: tokenizer.ggml.eot_token_id, else a CONTROL token named
 * <|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|> or <EOT>. */
int32_t loom_tokenizer_eot(const loom_tokenizer *tok);
int32_t loom_tokenizer_unk(const loom_tokenizer *tok);
int32_t loom_tokenizer_pad(const loom_tokenizer *tok);
bool loom_tokenizer_add_bos(const loom_tokenizer *tok);
bool loom_tokenizer_add_eos(const loom_tokenizer *tok);
/* End of generation: EOS, EOT or EOM. */
bool loom_tokenizer_is_eog(const loom_tokenizer *tok, int32_t id);
/* Longest token piece in bytes (an upper bound on loom_token_to_piece's *len). */
size_t loom_tokenizer_max_piece_len(const loom_tokenizer *tok);

/* ---- streaming detokenizer: turns a token stream into text, holding back an
 * incomplete UTF-8 sequence at the end of a piece until a later token completes
 * it (so every chunk handed out is valid UTF-8 when the token bytes are).
 * Plain data; one stream per generation; not thread-safe; the tokenizer must
 * outlive it. */
typedef struct loom_detok_stream {
    const loom_tokenizer *tok;
    unsigned flags;       /* LOOM_DETOK_* */
    bool started;         /* a text piece has been emitted (leading-space strip done) */
    uint8_t n_pending;    /* held-back bytes (at most 3) */
    unsigned char pending[4];
} loom_detok_stream;

void loom_detok_stream_init(loom_detok_stream *s, const loom_tokenizer *tok, unsigned flags);
/* Append token id: writes the bytes now complete into out (cap bytes, no NUL)
 * and their count to *n. LOOM_ERR_RANGE if cap is too small (*n = bytes needed,
 * the stream is unchanged; cap >= loom_tokenizer_max_piece_len + 4 always
 * suffices) or the id is out of range. */
loom_status loom_detok_stream_push(loom_detok_stream *s, int32_t id, char *out, size_t cap, size_t *n);
/* Emit the held-back bytes (an unfinished sequence) verbatim; cap >= 4 suffices. */
loom_status loom_detok_stream_flush(loom_detok_stream *s, char *out, size_t cap, size_t *n);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_TOKENIZER_H */
