/*
 * loom_grammar.h - structured output: GBNF grammars, JSON Schema, and
 * grammar-constrained sampling.
 *
 * Three objects:
 *   loom_grammar          a compiled grammar (from GBNF text, a JSON Schema, or
 *                         "any JSON object"). Immutable after creation: share one
 *                         between threads and requests freely.
 *   loom_grammar_vocab    the bytes of every token of a vocabulary arranged as a
 *                         prefix trie (built once per tokenizer, immutable,
 *                         shareable like the grammar).
 *   loom_grammar_matcher  the state of one generation: the grammar's stacks after
 *                         the bytes accepted so far, plus a cache of token masks.
 *                         One matcher per request / sequence; used by one thread
 *                         at a time. It borrows the grammar and the vocab, which
 *                         must outlive it.
 *
 * Typical use (library, or a server request):
 *     loom_grammar *g; loom_grammar_vocab *v; loom_grammar_matcher *m;
 *     loom_grammar_new_json_schema(schema, strlen(schema), &g, &err);
 *     loom_grammar_vocab_new(tokenizer, &v, &err);        // once per model
 *     loom_grammar_matcher_new(g, v, NULL, &m, &err);      // once per request
 *     loom_sampler_set_grammar(sampler, m);                // sampler borrows m
 *     ... accept the prompt with loom_sampler_accept_prompt (penalties only) ...
 *     loop: loom_sampler_sample -> stop on EOG -> loom_sampler_accept (advances m)
 *     loom_sampler_set_grammar(sampler, NULL); loom_grammar_matcher_free(m);
 * A finished request may instead call loom_grammar_matcher_reset (or
 * loom_sampler_reset, which resets an attached matcher) and reuse the matcher
 * for the next request with the same grammar: its mask cache stays warm.
 *
 * GBNF (llama.cpp's grammar format). A grammar is a list of rules
 * `name ::= alternatives`; names are [a-zA-Z0-9_-]+ (llama.cpp: no '_'); the start rule is `root`
 * (or the name given). Alternatives are separated by `|`; a sequence is made of
 *   "literal"        a string (escapes below), "" is the empty string
 *   [abc] [a-z] [^"\\]   a character class over Unicode code points (ranges,
 *                    negation with a leading ^; the complement is taken within
 *                    U+0000..U+10FFFF without the surrogates U+D800..U+DFFF)
 *   .                any code point (newline included)
 *   name             a rule reference
 *   ( ... )          a group (may contain alternatives and newlines)
 *   <[123]>          the token with id 123; !<[123]> any token except it
 *   <text>           the token whose text is exactly `text` (needs a
 *                    tokenizer at parse time); !<text> any token except it
 * each optionally followed by `*`, `+`, `?`, `{m}`, `{m,}` or `{m,n}`
 * (m, n <= 2000). Escapes in literals and classes: \n \r \t \\ \" \[ \] \-
 * \xHH \uHHHH \UHHHHHHHH (hex escapes denote code points, encoded as UTF-8).
 * `#` starts a comment to the end of the line. A rule ends at a newline, except
 * inside parentheses and after `|`.
 *
 * The language is over bytes: every code point is matched as its UTF-8 bytes,
 * so a token may end (or start) in the middle of a character. Token pieces
 * (loom_token_to_piece) are matched byte by byte; tokens with an empty piece
 * (control tokens) are never allowed, except end-of-generation tokens, which are
 * allowed exactly where the grammar accepts (the bytes so far form a sentence).
 *
 * Checks at creation (LOOM_ERR_FORMAT with "line L, column C" or the rule name):
 * syntax, undefined rules (even unreachable ones), a rule defined twice, left
 * recursion (a rule that can reach itself without consuming input: "left
 * recursion: a -> b -> a"), rules reachable from the root that derive no finite
 * string (so also a grammar that accepts nothing), empty ranges and classes,
 * invalid UTF-8; the limits LOOM_GRAMMAR_MAX_* below are LOOM_ERR_RANGE.
 *
 * JSON Schema (loom_grammar_new_json_schema, loom_json_schema_to_gbnf): see
 * docs/structured-output.md for the supported subset and the exact language.
 * In short: type (incl. arrays of types), properties / required /
 * additionalProperties (default false, as llama.cpp; properties appear in the
 * order of `properties`), enum, const, items / prefixItems, minItems /
 * maxItems, minLength / maxLength, pattern (ECMA regex subset), minimum /
 * maximum / exclusiveMinimum / exclusiveMaximum (integers and numbers), oneOf /
 * anyOf / allOf, $ref to local JSON pointers ($defs, definitions, "#"), format
 * date / time / date-time / uuid / email / ipv4; {} and true are any JSON value.
 * The grammar's language is a subset of the schema's (property order fixed,
 * bounded whitespace and digits, ...: see the document). Annotations (title,
 * description, default, examples, $schema, $id, $comment, ...) are ignored.
 * A keyword that would change the language but is not supported is an error
 * (LOOM_ERR_UNSUPPORTED) naming it and its JSON pointer, e.g.
 * "unsupported keyword 'uniqueItems' at /properties/tags".
 */
#ifndef LOOM_GRAMMAR_H
#define LOOM_GRAMMAR_H

#include "loom_base.h"
#include "loom_sampler.h"
#include "loom_tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits on untrusted grammars (exceeding one is LOOM_ERR_RANGE). */
#define LOOM_GRAMMAR_MAX_TEXT (16u << 20)    /* bytes of GBNF / JSON Schema text */
#define LOOM_GRAMMAR_MAX_RULES 65536         /* rules, generated ones included */
#define LOOM_GRAMMAR_MAX_ELEMENTS (1u << 22) /* compiled automaton elements */
#define LOOM_GRAMMAR_MAX_REPEAT 2000         /* m and n of {m,n} */
#define LOOM_GRAMMAR_MAX_NESTING 256         /* parentheses / schema depth */

typedef struct loom_grammar loom_grammar;
typedef struct loom_grammar_vocab loom_grammar_vocab;
typedef struct loom_grammar_matcher loom_grammar_matcher;

/* ---------------------------------------------------------------- grammars */

/* Compile GBNF text (len bytes, need not be NUL-terminated). root: the start
 * rule's name (NULL = "root"). tok: resolves `<text>` token references (may be
 * NULL; then such a reference is an error; `<[id]>` needs no tokenizer).
 * Errors: LOOM_ERR_FORMAT (message has line and column or the rule), 
 * LOOM_ERR_RANGE (a limit), LOOM_ERR_NOMEM, LOOM_ERR_INVALID_ARG (NULL
 * text/out). *out is NULL on failure. */
loom_status loom_grammar_new(const char *text, size_t len, const char *root, const loom_tokenizer *tok,
                             loom_grammar **out, loom_error *err);

/* Compile a JSON Schema (JSON text of len bytes). Errors: LOOM_ERR_FORMAT (the
 * text is not JSON: line/column; or a keyword has a wrong type: JSON pointer),
 * LOOM_ERR_UNSUPPORTED (a keyword or value Loom cannot express: named, with
 * its JSON pointer), LOOM_ERR_RANGE, LOOM_ERR_NOMEM. */
loom_status loom_grammar_new_json_schema(const char *schema, size_t len, loom_grammar **out, loom_error *err);

/* Any JSON object (what `--json`, Ollama's format:"json" and OpenAI's
 * json_object ask for): the grammar of loom_json_schema_to_gbnf({"type":"object"}). */
loom_status loom_grammar_new_json_object(loom_grammar **out, loom_error *err);

/* The GBNF text loom_grammar_new_json_schema compiles (for inspection, or to edit).
 * *gbnf is malloc'ed and NUL-terminated (free() it); *gbnf_len (may be NULL)
 * its length. Errors as loom_grammar_new_json_schema. */
loom_status loom_json_schema_to_gbnf(const char *schema, size_t len, char **gbnf, size_t *gbnf_len,
                                     loom_error *err);

/* NULL is a no-op. The grammar must outlive its matchers. */
void loom_grammar_free(loom_grammar *g);

typedef struct loom_grammar_info {
    int32_t n_rules;     /* rules after desugaring (reachable from the root) */
    int32_t n_elements;  /* automaton positions */
    int32_t n_terminals; /* byte-dispatch states */
    int32_t n_token_refs; /* <[id]> / !<[id]> elements */
    size_t bytes;        /* memory held by the compiled grammar */
} loom_grammar_info;
void loom_grammar_get_info(const loom_grammar *g, loom_grammar_info *info);

/* ---------------------------------------------------------------- vocabularies */

/* Index the pieces (loom_token_to_piece) of every token of tok; tokens for which
 * loom_tokenizer_is_eog holds are the end-of-generation tokens. The tokenizer may
 * be freed afterwards. Errors: LOOM_ERR_NOMEM, LOOM_ERR_INVALID_ARG. */
loom_status loom_grammar_vocab_new(const loom_tokenizer *tok, loom_grammar_vocab **out, loom_error *err);

/* The same from raw pieces: token i is lens[i] bytes at pieces[i] (an empty piece
 * is never allowed); eog[0..n_eog) are the end-of-generation ids (ids outside
 * [0, n_tokens) are LOOM_ERR_RANGE). The arrays are copied. */
loom_status loom_grammar_vocab_new_from_pieces(int32_t n_tokens, const char *const *pieces, const size_t *lens,
                                               const int32_t *eog, int32_t n_eog, loom_grammar_vocab **out,
                                               loom_error *err);
void loom_grammar_vocab_free(loom_grammar_vocab *v); /* NULL is a no-op */
int32_t loom_grammar_vocab_n_tokens(const loom_grammar_vocab *v);

/* ---------------------------------------------------------------- matchers */

typedef struct loom_grammar_matcher_params {
    int32_t max_stacks;  /* parse stacks alive at once (ambiguity); default 4096 */
    int32_t max_depth;   /* pushed return positions per stack (nesting); default 8192 */
    size_t cache_bytes;  /* budget of the per-state token-mask cache; default 64 MiB; 0 = no cache */
} loom_grammar_matcher_params;

loom_grammar_matcher_params loom_grammar_matcher_default_params(void);

/* A matcher at the start of g. v may be NULL for a byte-only matcher (the token
 * functions then return LOOM_ERR_INVALID_ARG / false). A `<[id]>` reference
 * outside v's vocabulary is LOOM_ERR_RANGE. Errors: LOOM_ERR_NOMEM, LOOM_ERR_RANGE
 * (the start state exceeds a limit). */
loom_status loom_grammar_matcher_new(const loom_grammar *g, const loom_grammar_vocab *v,
                                     const loom_grammar_matcher_params *params, loom_grammar_matcher **out,
                                     loom_error *err);
void loom_grammar_matcher_free(loom_grammar_matcher *m); /* NULL is a no-op */

/* Back to the start state (a new request); the mask cache is kept. */
void loom_grammar_matcher_reset(loom_grammar_matcher *m);

/* Advance over one token. An end-of-generation token is accepted (the state is
 * unchanged) when the matcher accepts. Errors (the state is unchanged):
 * LOOM_ERR_INVALID_ARG when the grammar does not allow the token (message names
 * it), LOOM_ERR_RANGE when a stack limit is exceeded, LOOM_ERR_NOMEM. */
loom_status loom_grammar_matcher_accept_token(loom_grammar_matcher *m, int32_t token, loom_error *err);

/* Advance over raw bytes (they need not end on a character boundary). Errors as
 * accept_token; LOOM_ERR_INVALID_ARG names the first byte offset that failed. */
loom_status loom_grammar_matcher_accept_bytes(loom_grammar_matcher *m, const void *bytes, size_t len,
                                              loom_error *err);

/* Whether accept_token(token) would succeed. */
bool loom_grammar_matcher_allows(loom_grammar_matcher *m, int32_t token);

/* The allowed tokens as a bitmap: bit (t & 63) of mask[t >> 6] for token t, for
 * t < n_bits (bits for ids beyond the vocabulary are 0). mask holds
 * (n_bits + 63) / 64 words. LOOM_ERR_NOMEM, LOOM_ERR_INVALID_ARG (no vocab). */
loom_status loom_grammar_matcher_fill_mask(loom_grammar_matcher *m, uint64_t *mask, int32_t n_bits);

/* The bytes accepted so far form a complete sentence (end of generation is allowed). */
bool loom_grammar_matcher_is_accepting(const loom_grammar_matcher *m);
/* Some non-empty byte string can still be accepted. */
bool loom_grammar_matcher_can_continue(const loom_grammar_matcher *m);

typedef struct loom_grammar_matcher_stats {
    int32_t n_stacks;        /* stacks of the current state */
    int64_t mask_walks;      /* trie walks (cache misses) since creation */
    int64_t cache_hits;      /* stack masks found in the cache */
    int64_t token_checks;    /* single-token checks */
    int64_t cache_entries;
    size_t cache_bytes;
} loom_grammar_matcher_stats;
void loom_grammar_matcher_get_stats(const loom_grammar_matcher *m, loom_grammar_matcher_stats *st);

/* ---------------------------------------------------------------- sampling */

/* Constrain s with m (NULL detaches): from now on loom_sampler_sample picks only
 * tokens m allows (the grammar mask is applied before top-k/top-p/min-p, with the
 * same result as removing every disallowed token first), loom_sampler_accept
 * advances m, loom_sampler_reset resets it. s borrows m: keep m alive while
 * attached. When no token is allowed (e.g. a vocabulary that cannot spell what
 * the grammar needs) loom_sampler_sample returns LOOM_ERR_NOT_FOUND.
 * LOOM_ERR_INVALID_ARG if m has no vocabulary; LOOM_ERR_NOMEM. */
loom_status loom_sampler_set_grammar(loom_sampler *s, loom_grammar_matcher *m);

/* The message of the last failed accept made through an attached sampler
 * (loom_sampler_accept returns only the status); "" when it succeeded. Owned
 * by m, valid until its next accept. */
const char *loom_grammar_matcher_last_error(const loom_grammar_matcher *m);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_GRAMMAR_H */
