/*
 * loom_tokenizer.h - text <-> token ids from a GGUF vocabulary.
 *
 * Every tokenizer the llama.cpp converter writes is supported, with llama.cpp's
 * behaviour (the reference the published ggml-vocab-*.gguf vectors and the
 * models' prompts are checked against):
 *   - "llama" (LOOM_VOCAB_SPM): SentencePiece BPE. The text (with a space
 *     prepended when add_space_prefix, the default) has its spaces replaced by
 *     U+2581 and is cut into UTF-8 characters; the adjacent pair whose
 *     concatenation is a vocabulary piece with the highest score is merged
 *     repeatedly (ties: the leftmost). Pieces that are no token become <0xNN>
 *     byte tokens (or the unknown token).
 *   - "gpt2" (LOOM_VOCAB_BPE): byte-level BPE. The text is split by the
 *     pre-tokenizer named by tokenizer.ggml.pre (every name llama.cpp knows:
 *     gpt-2, llama-bpe, qwen2, qwen35, deepseek-llm, deepseek-coder,
 *     deepseek-v3, falcon, starcoder, command-r, gpt-4o, tekken, smollm,
 *     refact, mpt, olmo, dbrx, chatglm-bpe, bloom, poro-chat, viking, jais,
 *     exaone, minerva-7b, chameleon, ...; a missing key means "default"; an
 *     unknown name is refused with LOOM_ERR_UNSUPPORTED), each word's bytes are
 *     mapped to the GPT-2 byte alphabet and merged by tokenizer.ggml.merges
 *     rank (lowest first, ties: leftmost). Invalid UTF-8 becomes U+FFFD first.
 *   - "gemma4" (LOOM_VOCAB_BPE): Gemma 4's BPE over raw UTF-8 with spaces
 *     escaped to U+2581, split only at newline runs, <0xNN> byte fallback.
 *   - "whitespace" (LOOM_VOCAB_BPE): words between whitespace, each merged.
 *   - "hybriddna" (LOOM_VOCAB_BPE): byte-level BPE, except that the text of
 *     <dna>...</dna> spans becomes 6-mer tokens (upper-cased; the last one
 *     padded with 'A'; unknown k-mers are <oov>).
 *   - "bert" (LOOM_VOCAB_WPM): WordPiece with BERT's normaliser (lower-casing
 *     and accent stripping unless tokenizer.ggml.normalizer.* say otherwise;
 *     punctuation, ASCII symbols and CJK ideographs split off; control
 *     characters dropped), greedy longest match per word with "##"
 *     continuations (stored without "##"; word starts carry U+2581), a word
 *     that cannot be covered becomes [UNK]. With add_bos ("add special") the
 *     ids are framed as [CLS] ... [SEP] for embedding models.
 *   - "t5" (LOOM_VOCAB_UGM): SentencePiece unigram (T5, XLM-RoBERTa,
 *     nomic-bert-moe): precompiled-charsmap normalisation, best-score path.
 *   - "rwkv" (LOOM_VOCAB_RWKV): greedy longest match over escaped byte tokens.
 *   - "plamo2" (LOOM_VOCAB_PLAMO2): PLaMo-2's unigram-style best path.
 * Unknown models fail with LOOM_ERR_UNSUPPORTED and a message naming the file
 * and tokenizer.ggml.model / tokenizer.ggml.pre; there is no fallback.
 *
 * Keys read: tokenizer.ggml.{model, pre, tokens, scores, token_type, merges,
 * precompiled_charsmap, bos/eos/eot/eom/unknown/seperator/padding/cls/mask
 * _token_id, fim_{pre,suf,mid,pad,rep,sep}_token_id, add_bos_token,
 * add_eos_token, add_sep_token, add_space_prefix, remove_extra_whitespaces,
 * normalizer.lowercase, normalizer.strip_accents}, general.name and
 * general.architecture (for llama.cpp's per-model token attributes).
 * Validation: tokens must be a non-empty string array (at most 2^31-1
 * entries); scores (float or integer) and token_type (integer, values 0..6)
 * must have at least one entry per token; merges must be strings "A B". Any
 * violation gives LOOM_ERR_FORMAT naming the file and the key, never an abort.
 * A BOS/EOS id outside the vocabulary is an error (-1 / 0xFFFFFFFF mean none);
 * any other special id outside it keeps the model type's default (as
 * llama.cpp does).
 *
 * Defaults (the keys override them): SPM adds BOS; BPE adds BOS for the
 * Llama 3 / Tekken / Chameleon pre-tokenizers and Gemma 4 (always); WPM frames
 * with [CLS]/[SEP]; UGM appends EOS.
 *
 * Special tokens (llama.cpp's rules): tokens typed CONTROL, USER_DEFINED or
 * UNKNOWN are matched literally in the input before the normal algorithm runs,
 * longest text first. Tokens whose text looks like a control token (<|eot_id|>,
 * <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, </s>, <eos>, FIM tokens
 * ...) but are typed NORMAL/USER_DEFINED in the file are treated as CONTROL;
 * gpt-oss's <|channel|>, <|message|>, <|start|>, <|constrain|> are always
 * USER_DEFINED. With parse_special false only USER_DEFINED tokens (not also
 * CONTROL) are matched; with it true all are. Tokens with the LSTRIP / RSTRIP
 * attribute (Phi-3's special tokens rstrip; <mask> of XLM-R-style models
 * lstrips) swallow the ASCII whitespace before / after them. After a matched
 * token SPM prepends the space again (add_space_prefix), as SentencePiece does
 * per segment.
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
    LOOM_VOCAB_SPM = 1,   /* tokenizer.ggml.model = "llama" */
    LOOM_VOCAB_BPE = 2,   /* "gpt2", "gemma4", "whitespace", "hybriddna" */
    LOOM_VOCAB_WPM = 3,   /* "bert" (WordPiece) */
    LOOM_VOCAB_UGM = 4,   /* "t5" (unigram) */
    LOOM_VOCAB_RWKV = 5,  /* "rwkv" */
    LOOM_VOCAB_PLAMO2 = 6 /* "plamo2" */
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

/* Token attributes (llama_token_attr values), after llama.cpp's overrides. */
#define LOOM_TOKEN_ATTR_UNKNOWN 0x001u
#define LOOM_TOKEN_ATTR_UNUSED 0x002u
#define LOOM_TOKEN_ATTR_NORMAL 0x004u
#define LOOM_TOKEN_ATTR_CONTROL 0x008u
#define LOOM_TOKEN_ATTR_USER_DEFINED 0x010u
#define LOOM_TOKEN_ATTR_BYTE 0x020u
#define LOOM_TOKEN_ATTR_LSTRIP 0x080u
#define LOOM_TOKEN_ATTR_RSTRIP 0x100u

/* Build a tokenizer from the vocabulary keys of an open GGUF. On success *out
 * must be freed with loom_tokenizer_free; on failure *out is NULL and err names
 * the file and the offending key. Errors: LOOM_ERR_NOT_FOUND (no
 * tokenizer.ggml.model or tokens), LOOM_ERR_FORMAT (malformed keys),
 * LOOM_ERR_UNSUPPORTED (unknown tokenizer.ggml.model or tokenizer.ggml.pre),
 * LOOM_ERR_NOMEM. */
loom_status loom_tokenizer_new_from_gguf(const loom_gguf *g, loom_tokenizer **out, loom_error *err);
/* NULL is a no-op. */
void loom_tokenizer_free(loom_tokenizer *tok);

/* Tokenize len bytes of text (any bytes; need not be NUL-terminated or valid
 * UTF-8: invalid sequences are handled as llama.cpp does: byte tokens for SPM,
 * U+FFFD for the others). add_bos is llama.cpp's add_special: prepend BOS when
 * the vocabulary's add_bos_token is set and append EOS when add_eos_token is
 * set (WordPiece: [CLS] ... [SEP]); false adds neither. parse_special: also
 * match CONTROL / UNKNOWN token texts in the input (USER_DEFINED ones are
 * always matched). Callers: `loom tokenize` parses special tokens unless
 * --no-special; prompts from users (loom run/eval, the server's raw prompts)
 * are tokenized with parse_special false, chat templates with true for the
 * template's own text only.
 * Writes at most max ids to ids (ids may be NULL when max is 0) and the total
 * count to *n_out. Returns LOOM_ERR_RANGE when max is too small (the first max
 * ids are written and *n_out holds the count needed) or the count would exceed
 * INT32_MAX (*n_out = 0), LOOM_ERR_NOMEM, LOOM_ERR_INVALID_ARG for NULL arguments
 * or a negative max; err (may be NULL) gets the message. */
loom_status loom_tokenize(const loom_tokenizer *tok, const char *text, size_t len, bool add_bos,
                          bool parse_special, int32_t *ids, int32_t max, int32_t *n_out, loom_error *err);

/* A piece of text for loom_tokenize_segments. */
typedef struct loom_tok_segment {
    const char *text;   /* len bytes (need not be NUL-terminated) */
    size_t len;
    bool parse_special; /* CONTROL / UNKNOWN token texts inside it become their tokens */
} loom_tok_segment;

/* Tokenize the concatenation of n_segs segments exactly as loom_tokenize would
 * tokenize the whole text with parse_special true, except that CONTROL and
 * UNKNOWN tokens are only matched where every byte of their text lies in a
 * segment with parse_special (USER_DEFINED tokens match anywhere, as always).
 * For chat templates: the template's own text with parse_special, the
 * messages without, so that a user cannot inject <|im_end|> etc., while
 * spaces, merges and lstrip/rstrip across segment boundaries behave as in one
 * prompt (SentencePiece adds its space prefix only at the start and after a
 * matched token, not at segment boundaries). Same outputs and errors as
 * loom_tokenize (LOOM_ERR_INVALID_ARG also for a NULL text with len > 0 or a
 * negative n_segs); allocates a copy of the text. */
loom_status loom_tokenize_segments(const loom_tokenizer *tok, const loom_tok_segment *segs, int32_t n_segs,
                                   bool add_bos, int32_t *ids, int32_t max, int32_t *n_out, loom_error *err);

/* The bytes one token stands for: NORMAL pieces decoded (SPM/UGM/WPM/Gemma 4:
 * U+2581 -> ' '; byte-level BPE: GPT-2 alphabet -> bytes; RWKV: unescaped),
 * BYTE tokens `<0xNN>` -> that byte, USER_DEFINED verbatim,
 * CONTROL/UNKNOWN/UNUSED -> empty. No NUL terminator is written.
 * *len receives the piece length; LOOM_ERR_RANGE if it exceeds size (nothing
 * is guaranteed about buf then), LOOM_ERR_RANGE also for an id out of range. */
loom_status loom_token_to_piece(const loom_tokenizer *tok, int32_t id, char *buf, size_t size,
                                size_t *len);

/* Flags for loom_detokenize / the stream decoder. */
#define LOOM_DETOK_SPECIAL 1u  /* render CONTROL/UNKNOWN tokens as their text */
#define LOOM_DETOK_NO_STRIP 2u /* keep the leading space of the first text piece */
#define LOOM_DETOK_CLEAN_SPACES 4u /* loom_detokenize only: remove the spaces before . , ! ? 's 'm 're 've
                                     * like llama.cpp's clean_up_tokenization_spaces, for vocabularies
                                     * that ask for it (not a round trip) */

/* Concatenate the pieces of n ids. With add_space_prefix (SPM, UGM) and for
 * WordPiece the leading space of the first text piece is removed unless
 * LOOM_DETOK_NO_STRIP. Round trip: detokenize(tokenize(s)) == s for valid
 * UTF-8 text without special-token texts with the lossless vocabularies (SPM,
 * byte-level BPE, Gemma 4, RWKV, PLaMo-2), except characters they cannot
 * represent (U+2581 itself where spaces are escaped to it; a byte without a
 * fallback token, which llama.cpp drops too); WordPiece and unigram
 * vocabularies normalise, and there tokenize(detokenize(tokenize(s))) ==
 * tokenize(s) (without unknown tokens). Writes at most size bytes and then a
 * NUL if there is room (not counted); *len = bytes of the full text.
 * LOOM_ERR_RANGE if the text does not fit (size < *len) or an id is out of
 * range. Pieces differ from llama.cpp's in one place: NORMAL tokens of a
 * byte-level vocabulary whose text is outside the GPT-2 byte alphabet come out
 * as their UTF-8 text (llama.cpp writes "[UNK_BYTE_0x...]"). */
loom_status loom_detokenize(const loom_tokenizer *tok, const int32_t *ids, int32_t n,
                            unsigned flags, char *buf, size_t size, size_t *len);

/* Raw vocabulary text of a token (not NUL-terminated; owned by tok), or
 * LOOM_ERR_RANGE. */
loom_status loom_token_text(const loom_tokenizer *tok, int32_t id, const char **text, size_t *len);
/* Effective type: CONTROL for control tokens and the ones llama.cpp treats as
 * control, else USER_DEFINED, UNKNOWN, BYTE, UNUSED, NORMAL; UNDEFINED if out
 * of range. */
loom_token_type loom_token_get_type(const loom_tokenizer *tok, int32_t id);
/* LOOM_TOKEN_ATTR_* bits of a token (0 if out of range). */
unsigned loom_token_get_attr(const loom_tokenizer *tok, int32_t id);
float loom_token_score(const loom_tokenizer *tok, int32_t id);              /* 0 if none/out of range */

int32_t loom_tokenizer_n_vocab(const loom_tokenizer *tok);
loom_vocab_type loom_tokenizer_type(const loom_tokenizer *tok);
/* tokenizer.ggml.model and the pre-tokenizer name ("" if none); owned by tok. */
const char *loom_tokenizer_model_name(const loom_tokenizer *tok);
const char *loom_tokenizer_pre_name(const loom_tokenizer *tok);
/* Special ids; -1 when the vocabulary has none. */
int32_t loom_tokenizer_bos(const loom_tokenizer *tok);
int32_t loom_tokenizer_eos(const loom_tokenizer *tok);
/* End of turn: tokenizer.ggml.eot_token_id, else the first token present of
 * <|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>,
 * <|end_of_text|>, <EOT>, _<EOT>, [EOT], <end of sentence> (DeepSeek),
 * <end_of_utterance>. */
int32_t loom_tokenizer_eot(const loom_tokenizer *tok);
int32_t loom_tokenizer_eom(const loom_tokenizer *tok);
int32_t loom_tokenizer_unk(const loom_tokenizer *tok);
int32_t loom_tokenizer_pad(const loom_tokenizer *tok);
int32_t loom_tokenizer_sep(const loom_tokenizer *tok);  /* [SEP] / tokenizer.ggml.seperator_token_id */
int32_t loom_tokenizer_cls(const loom_tokenizer *tok);  /* cls_token_id; WordPiece: BOS ([CLS]) */
int32_t loom_tokenizer_mask(const loom_tokenizer *tok);
bool loom_tokenizer_add_bos(const loom_tokenizer *tok);
bool loom_tokenizer_add_eos(const loom_tokenizer *tok);
/* Embedding models that want SEP appended (tokenizer.ggml.add_sep_token; BERT). */
bool loom_tokenizer_add_sep(const loom_tokenizer *tok);
/* End of generation: llama.cpp's set (EOS, EOT, EOM, the FIM pad/repo/separator
 * tokens and every token named like an end token: <|eot_id|>, <|im_end|>,
 * <|end|> (unless <|return|>/<|call|> exist), <end_of_turn>, <|endoftext|>,
 * <eos>, <turn|>, ...). */
bool loom_tokenizer_is_eog(const loom_tokenizer *tok, int32_t id);
/* Tokens never to sample (tokenizer.ggml.suppress_tokens, out-of-range ids dropped as
 * llama.cpp does; MiniMax's added tokens without embeddings): their count, and *ids
 * (may be NULL) set to them, owned by tok. Hand them to loom_sampler_suppress. */
int32_t loom_tokenizer_suppressed(const loom_tokenizer *tok, const int32_t **ids);
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
