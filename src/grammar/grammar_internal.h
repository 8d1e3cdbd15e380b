/* Internal structures of the grammar module (see include/loom_grammar.h).
 *
 * Pipeline: GBNF text --gbnf.c--> IR rules (desugared: no ?,*,+,{m,n}, groups
 * are rules) --compile.c--> automaton (positions, byte-dispatch terminals,
 * closures) --matcher.c--> stacks advanced byte by byte; vocab.c builds the
 * token trie the matcher walks.
 *
 * The automaton. Every alternative of every rule is a run of positions ending
 * in an END position. A position is
 *   EL_END        end of an alternative: return to the caller;
 *   EL_RULE r     call rule r, then continue at the next position;
 *   EL_TERM t     consume one byte b: arm a of terminal t with b in a.bits leads
 *                 to position a.next (the following position, or a state of a
 *                 UTF-8 decoding automaton, whose last byte leads back);
 *   EL_TOKEN id / EL_TOKEN_NOT id   consume a whole token (by id).
 * A parse stack is (pos, rest): pos is a TERM/TOKEN position (or 0 = the
 * grammar has accepted), rest a node of return positions, hash-consed in the
 * matcher's arena (node 0 = empty). A call in tail position pushes nothing.
 * For every EL_RULE position the compiler precomputes its closure: the stacks
 * reached before consuming anything, as (terminal position, positions to push)
 * items, plus whether the rest of the alternative can be empty ("nullable").
 */
#ifndef LOOM_GRAMMAR_INTERNAL_H
#define LOOM_GRAMMAR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loom_grammar.h"

/* ---------------------------------------------------------------- IR */

enum { SYM_CHARS = 1, SYM_RULE, SYM_TOKEN, SYM_TOKEN_NOT, SYM_ALT, SYM_END };

typedef struct ir_sym {
    uint8_t kind;
    uint32_t arg; /* CHARS: charset index; RULE: rule id; TOKEN*: token id (or text index, see gbnf.c) */
} ir_sym;

typedef struct ir_charset {
    uint32_t off, n; /* ranges[off .. off+n) of (lo, hi) pairs, sorted, disjoint, non-adjacent */
} ir_charset;

typedef struct ir_rule {
    char *name;
    int line, col;      /* of the definition (0 for generated rules) */
    int ref_line, ref_col; /* first reference (for "undefined rule") */
    bool defined, generated;
    ir_sym *syms;       /* alternatives separated by SYM_ALT, terminated by SYM_END */
    uint32_t n, cap;
} ir_rule;

typedef struct ir_grammar {
    ir_rule *rules;
    uint32_t n_rules, cap_rules;
    ir_charset *sets;
    uint32_t n_sets, cap_sets;
    uint32_t *ranges; /* (lo, hi) pairs */
    uint32_t n_ranges, cap_ranges;
    uint32_t root;
} ir_grammar;

void ir_free(ir_grammar *ir);

/* gbnf.c: parse text into ir (root resolved). */
loom_status gbnf_parse(const char *text, size_t len, const char *root, const loom_tokenizer *tok, ir_grammar *ir,
                       loom_error *err);

/* compile.c: check (undefined/unproductive rules, left recursion) and compile. */
loom_status grammar_compile(ir_grammar *ir, loom_grammar **out, loom_error *err);

/* ---------------------------------------------------------------- automaton */

enum { EL_END = 0, EL_RULE = 1, EL_TERM = 2, EL_TOKEN = 3, EL_TOKEN_NOT = 4 };

typedef struct g_arm {
    uint64_t bits[4];
    uint32_t next;
} g_arm;

typedef struct g_term {
    uint32_t arm0, n_arms;
} g_term;

typedef struct g_item {
    uint32_t pos;   /* TERM / TOKEN position */
    uint32_t push0; /* pushes[push0 .. push0+n_push): return positions, deepest first */
    uint32_t n_push;
} g_item;

typedef struct g_closure {
    uint32_t item0, n_items;
    bool nullable;
} g_closure;

struct loom_grammar {
    uint32_t n_pos;
    uint8_t *kind;   /* per position */
    uint32_t *arg;   /* per position: rule / term / token id; for EL_RULE the closure index */
    uint32_t n_terms;
    g_term *terms;
    uint32_t n_arms;
    g_arm *arms;
    uint32_t n_closures;
    g_closure *closures;
    uint32_t n_items;
    g_item *items;
    uint32_t n_pushes;
    uint32_t *pushes;
    uint32_t start;  /* an EL_RULE position calling the root, followed by EL_END */
    uint32_t n_rules;
    int32_t max_token_id; /* largest id in a TOKEN element, -1 if none */
    int32_t n_token_refs;
    size_t bytes;
};

/* ---------------------------------------------------------------- vocab trie */

typedef struct v_node {
    uint32_t end;     /* index past this node's subtree (preorder) */
    uint32_t tok0;    /* first index into sorted[] of the tokens whose piece is this prefix */
    uint32_t n_tok;   /* how many */
    uint8_t byte;     /* label of the edge into this node */
} v_node;

struct loom_grammar_vocab {
    int32_t n_tokens;
    uint32_t n_nodes;
    v_node *nodes;     /* preorder; node 0 = empty prefix */
    int32_t *sorted;   /* token ids in piece order */
    uint8_t *piece;    /* all pieces */
    uint64_t *piece_off; /* n_tokens + 1 offsets */
    uint8_t *is_eog;   /* per token */
    int32_t *eog;
    int32_t n_eog;
    uint64_t *nonempty; /* bitmap: non-EOG tokens with a non-empty piece */
    size_t max_piece;
    size_t bytes;
};

/* ---------------------------------------------------------------- helpers */

/* Byte-string builder (json_schema.c, regex.c). */
typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;
void sb_putn(sbuf *b, const char *s, size_t n);
void sb_puts(sbuf *b, const char *s);
void sb_putc(sbuf *b, char c);
void sb_printf(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void sb_free(sbuf *b);

/* regex.c: a GBNF expression for one JSON-encoded character of the code point
 * set r[0..n) (sorted (lo, hi) pairs); a pattern as a GBNF expression for the
 * content of a JSON string (uses the rule `char` when *uses_any). */
void json_charset_expr(sbuf *o, const uint32_t *r, uint32_t n);
bool regex_to_gbnf(const char *pat, size_t len, sbuf *out, bool *uses_any, char *msg, size_t cap);

/* numrange.c: decimal ranges. uint_range: [a, b] (unbounded: [a, inf) cut at 16
 * digits or the digits of a); int_range: [lo, hi] with optional sides, false if
 * empty; magnitude_range: numbers without exponent whose magnitude lies between
 * lm and hm (exclusive flags), false if empty. All append alternatives to o. */
void uint_range(sbuf *o, uint64_t a, uint64_t b, bool unbounded);
bool int_range(sbuf *o, int64_t lo, int64_t hi, bool has_lo, bool has_hi);
bool magnitude_range(sbuf *o, uint64_t lm, bool lex, uint64_t hm, bool hex, bool unbounded);

#endif
