/* GBNF parser: text -> IR rules (grammar_internal.h). Follows llama.cpp's
 * grammar syntax (see include/loom_grammar.h); repetition operators and groups
 * are desugared into generated rules here:
 *   x?      -> R ::= x |
 *   x*      -> R ::= x R |
 *   x+      -> x R,  R ::= x R |
 *   x{m,n}  -> x ... x (m copies) R_(n-m),  R_1 ::= x | ,  R_i ::= x R_(i-1) |
 *   x{m,}   -> x ... x (m copies) R,  R ::= x R |
 * Errors carry the line and column (1-based, bytes) of the offending input. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_internal.h"
#include "quant/alloc.h"

#define MAX_CP 0x10FFFFu

typedef struct parser {
    const char *s, *end, *cur;
    ir_grammar *ir;
    const loom_tokenizer *tok;
    loom_error *err;
    loom_status st;
    int depth;
    uint32_t n_syms; /* all symbols so far (limit) */
    /* scratch ranges for the class being parsed */
    uint32_t *tmp;
    uint32_t n_tmp, cap_tmp;
} parser;

/* ---------------------------------------------------------------- IR helpers */

void ir_free(ir_grammar *ir) {
    if (!ir) return;
    for (uint32_t i = 0; i < ir->n_rules; i++) {
        loom_free(ir->rules[i].name);
        loom_free(ir->rules[i].syms);
    }
    loom_free(ir->rules);
    loom_free(ir->sets);
    loom_free(ir->ranges);
    memset(ir, 0, sizeof *ir);
}

static bool grow(void **p, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap) return true;
    uint32_t nc = *cap ? *cap : 16;
    while (nc < need) {
        if (nc > UINT32_MAX / 2) return false;
        nc *= 2;
    }
    void *q = loom_realloc(*p, (size_t)nc * elem);
    if (!q) return false;
    *p = q;
    *cap = nc;
    return true;
}

static void line_col(const parser *p, const char *at, int *line, int *col) {
    int l = 1, c = 1;
    for (const char *q = p->s; q < at && q < p->end; q++) {
        if (*q == '\n') {
            l++;
            c = 1;
        } else {
            c++;
        }
    }
    *line = l;
    *col = c;
}

static bool fail(parser *p, const char *at, loom_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static bool fail(parser *p, const char *at, loom_status st, const char *fmt, ...) {
    if (p->st != LOOM_OK) return false;
    p->st = st;
    char msg[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (at) {
        int l, c;
        line_col(p, at, &l, &c);
        loom_error_set(p->err, st, "grammar: line %d, column %d: %s", l, c, msg);
    } else {
        loom_error_set(p->err, st, "grammar: %s", msg);
    }
    return false;
}

static bool oom(parser *p) { return fail(p, NULL, LOOM_ERR_NOMEM, "out of memory"); }

static int32_t add_rule(parser *p, const char *name, size_t nlen, bool generated) {
    ir_grammar *ir = p->ir;
    if (ir->n_rules >= LOOM_GRAMMAR_MAX_RULES) {
        fail(p, p->cur, LOOM_ERR_RANGE, "more than %d rules", LOOM_GRAMMAR_MAX_RULES);
        return -1;
    }
    if (!grow((void **)&ir->rules, &ir->cap_rules, ir->n_rules + 1, sizeof(ir_rule))) {
        oom(p);
        return -1;
    }
    ir_rule *r = &ir->rules[ir->n_rules];
    memset(r, 0, sizeof *r);
    r->name = loom_malloc(nlen + 1);
    if (!r->name) {
        oom(p);
        return -1;
    }
    memcpy(r->name, name, nlen);
    r->name[nlen] = 0;
    r->generated = generated;
    return (int32_t)ir->n_rules++;
}

static int32_t find_rule(parser *p, const char *name, size_t nlen) {
    for (uint32_t i = 0; i < p->ir->n_rules; i++) {
        const ir_rule *r = &p->ir->rules[i];
        if (!r->generated && strlen(r->name) == nlen && !memcmp(r->name, name, nlen)) return (int32_t)i;
    }
    return -1;
}

/* A generated rule named "<base>_<k>". */
static int32_t gen_rule(parser *p, uint32_t base) {
    char name[160];
    snprintf(name, sizeof name, "%.120s_%u", p->ir->rules[base].name, p->ir->n_rules);
    int32_t id = add_rule(p, name, strlen(name), true);
    if (id >= 0) p->ir->rules[id].defined = true;
    return id;
}

static bool push_sym(parser *p, uint32_t rule, uint8_t kind, uint32_t arg) {
    if (p->n_syms >= LOOM_GRAMMAR_MAX_ELEMENTS)
        return fail(p, p->cur, LOOM_ERR_RANGE, "grammar too large (more than %u symbols)",
                    LOOM_GRAMMAR_MAX_ELEMENTS);
    ir_rule *r = &p->ir->rules[rule];
    if (!grow((void **)&r->syms, &r->cap, r->n + 1, sizeof(ir_sym))) return oom(p);
    r->syms[r->n].kind = kind;
    r->syms[r->n].arg = arg;
    r->n++;
    p->n_syms++;
    return true;
}

static int cmp_range(const void *a, const void *b) {
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0;
}

/* Sort and merge p->tmp (n_tmp/2 pairs), optionally complement (within the
 * scalar values: surrogates excluded), store as a charset. Returns its index or -1. */
static int64_t finish_set(parser *p, bool negate, const char *at) {
    uint32_t n = p->n_tmp / 2;
    if (n > 1) qsort(p->tmp, n, 2 * sizeof(uint32_t), cmp_range);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t lo = p->tmp[2 * i], hi = p->tmp[2 * i + 1];
        if (m && lo <= p->tmp[2 * (m - 1) + 1] + 1) {
            if (hi > p->tmp[2 * (m - 1) + 1]) p->tmp[2 * (m - 1) + 1] = hi;
        } else {
            p->tmp[2 * m] = lo;
            p->tmp[2 * m + 1] = hi;
            m++;
        }
    }
    ir_grammar *ir = p->ir;
    /* complement of [0, MAX_CP] minus surrogates, or the set itself */
    uint32_t need = negate ? m + 2 : m;
    if (!grow((void **)&ir->ranges, &ir->cap_ranges, ir->n_ranges + 2 * need + 4, sizeof(uint32_t))) {
        oom(p);
        return -1;
    }
    uint32_t off = ir->n_ranges, cnt = 0;
    if (!negate) {
        for (uint32_t i = 0; i < m; i++) {
            ir->ranges[off + 2 * cnt] = p->tmp[2 * i];
            ir->ranges[off + 2 * cnt + 1] = p->tmp[2 * i + 1];
            cnt++;
        }
    } else {
        /* universe pieces: [0, D7FF], [E000, 10FFFF] */
        static const uint32_t uni[2][2] = {{0, 0xD7FF}, {0xE000, MAX_CP}};
        for (int u = 0; u < 2; u++) {
            uint32_t cur = uni[u][0], top = uni[u][1];
            bool done = false;
            for (uint32_t i = 0; i < m && !done; i++) {
                uint32_t lo = p->tmp[2 * i], hi = p->tmp[2 * i + 1];
                if (hi < cur) continue;
                if (lo > top) break;
                if (lo > cur) {
                    ir->ranges[off + 2 * cnt] = cur;
                    ir->ranges[off + 2 * cnt + 1] = lo - 1;
                    cnt++;
                }
                if (hi >= top) done = true;
                else cur = hi + 1;
            }
            if (!done) {
                ir->ranges[off + 2 * cnt] = cur;
                ir->ranges[off + 2 * cnt + 1] = top;
                cnt++;
            }
        }
    }
    if (cnt == 0) {
        fail(p, at, LOOM_ERR_FORMAT, "character class matches nothing");
        return -1;
    }
    if (!grow((void **)&ir->sets, &ir->cap_sets, ir->n_sets + 1, sizeof(ir_charset))) {
        oom(p);
        return -1;
    }
    ir->n_ranges += 2 * cnt;
    ir->sets[ir->n_sets].off = off;
    ir->sets[ir->n_sets].n = cnt;
    return ir->n_sets++;
}

static bool tmp_add(parser *p, uint32_t lo, uint32_t hi) {
    if (!grow((void **)&p->tmp, &p->cap_tmp, p->n_tmp + 2, sizeof(uint32_t))) return oom(p);
    p->tmp[p->n_tmp++] = lo;
    p->tmp[p->n_tmp++] = hi;
    return true;
}

/* ---------------------------------------------------------------- lexing */

static bool at_end(const parser *p) { return p->cur >= p->end; }
static int peek(const parser *p, size_t k) {
    return p->cur + k < p->end ? (unsigned char)p->cur[k] : -1;
}

/* Rule name characters: llama.cpp's [a-zA-Z0-9-], plus '_' (common in grammars
 * written for other tools; it is no operator, so accepting it changes nothing else). */
static bool is_word(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Skip blanks and comments; newlines too when nl. */
static void skip_space(parser *p, bool nl) {
    while (!at_end(p)) {
        int c = peek(p, 0);
        if (c == ' ' || c == '\t' || (nl && (c == '\r' || c == '\n'))) {
            p->cur++;
        } else if (c == '#') {
            while (!at_end(p) && *p->cur != '\r' && *p->cur != '\n') p->cur++;
        } else {
            break;
        }
    }
}

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decode one UTF-8 character at p->cur (strict). */
static bool decode_utf8(parser *p, uint32_t *cp) {
    const unsigned char *s = (const unsigned char *)p->cur;
    size_t avail = (size_t)(p->end - p->cur);
    unsigned c = s[0];
    uint32_t v, min;
    size_t n;
    if (c < 0x80) {
        *cp = c;
        p->cur++;
        return true;
    } else if (c >= 0xC2 && c <= 0xDF) {
        n = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4, v = c & 0x07, min = 0x10000;
    } else {
        return fail(p, p->cur, LOOM_ERR_FORMAT, "invalid UTF-8 byte 0x%02X", c);
    }
    if (avail < n) return fail(p, p->cur, LOOM_ERR_FORMAT, "truncated UTF-8 sequence");
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return fail(p, p->cur, LOOM_ERR_FORMAT, "invalid UTF-8 sequence");
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > MAX_CP || (v >= 0xD800 && v <= 0xDFFF))
        return fail(p, p->cur, LOOM_ERR_FORMAT, "invalid UTF-8 sequence");
    *cp = v;
    p->cur += n;
    return true;
}

/* One character of a literal or class: an escape or a UTF-8 character. */
static bool parse_char(parser *p, uint32_t *cp) {
    if (at_end(p)) return fail(p, p->cur, LOOM_ERR_FORMAT, "unexpected end of input");
    if (*p->cur != '\\') return decode_utf8(p, cp);
    const char *at = p->cur;
    int e = peek(p, 1);
    int nhex = 0;
    switch (e) {
    case 'x': nhex = 2; break;
    case 'u': nhex = 4; break;
    case 'U': nhex = 8; break;
    case 't': *cp = '\t'; p->cur += 2; return true;
    case 'r': *cp = '\r'; p->cur += 2; return true;
    case 'n': *cp = '\n'; p->cur += 2; return true;
    case '\\': case '"': case '[': case ']': case '-':
        *cp = (uint32_t)e;
        p->cur += 2;
        return true;
    case -1: return fail(p, at, LOOM_ERR_FORMAT, "unexpected end of input after '\\'");
    default:
        if (e >= 0x20 && e < 0x7F) return fail(p, at, LOOM_ERR_FORMAT, "unknown escape '\\%c'", e);
        return fail(p, at, LOOM_ERR_FORMAT, "unknown escape");
    }
    uint32_t v = 0;
    for (int i = 0; i < nhex; i++) {
        int h = hexval(peek(p, 2 + (size_t)i));
        if (h < 0) return fail(p, at, LOOM_ERR_FORMAT, "expecting %d hex digits after '\\%c'", nhex, e);
        v = (v << 4) | (uint32_t)h;
    }
    if (v > MAX_CP) return fail(p, at, LOOM_ERR_FORMAT, "code point U+%X is beyond U+10FFFF", v);
    *cp = v;
    p->cur += 2 + nhex;
    return true;
}

static bool parse_uint(parser *p, uint64_t *v) {
    if (at_end(p) || *p->cur < '0' || *p->cur > '9') return fail(p, p->cur, LOOM_ERR_FORMAT, "expecting an integer");
    uint64_t x = 0;
    while (!at_end(p) && *p->cur >= '0' && *p->cur <= '9') {
        if (x > 1000000000ull) x = 1000000001ull; /* saturate: checked against the limit */
        else x = x * 10 + (uint64_t)(*p->cur - '0');
        p->cur++;
    }
    *v = x;
    return true;
}

/* ---------------------------------------------------------------- sequences */

static bool parse_alternates(parser *p, uint32_t rule, bool nested);

/* Append syms[from, to) of rule src to rule dst (src may equal dst). */
static bool copy_syms(parser *p, uint32_t dst, uint32_t src, uint32_t from, uint32_t to) {
    for (uint32_t i = from; i < to; i++) {
        ir_sym s = p->ir->rules[src].syms[i]; /* re-read: push may move the array */
        if (!push_sym(p, dst, s.kind, s.arg)) return false;
    }
    return true;
}

/* Rewrite rule->syms[start, n) (the last item) as item{min,max}; max UINT64_MAX = unbounded. */
static bool repeat(parser *p, uint32_t rule, uint32_t start, uint64_t min, uint64_t max, const char *at) {
    ir_rule *r = &p->ir->rules[rule];
    if (start >= r->n) return fail(p, at, LOOM_ERR_FORMAT, "nothing to repeat before '%c'", *at);
    bool unbounded = max == UINT64_MAX;
    if (min > LOOM_GRAMMAR_MAX_REPEAT || (!unbounded && max > LOOM_GRAMMAR_MAX_REPEAT))
        return fail(p, at, LOOM_ERR_RANGE, "repetition count above %d", LOOM_GRAMMAR_MAX_REPEAT);
    if (!unbounded && max < min) return fail(p, at, LOOM_ERR_FORMAT, "repetition {%llu,%llu} has max < min",
                                             (unsigned long long)min, (unsigned long long)max);
    uint32_t len = r->n - start;
    /* keep the item in its own rule when it is more than one symbol */
    uint32_t item_rule = 0;
    bool single = len == 1;
    ir_sym one = r->syms[start];
    if (!single) {
        int32_t ir_ = gen_rule(p, rule);
        if (ir_ < 0) return false;
        item_rule = (uint32_t)ir_;
        if (!copy_syms(p, item_rule, rule, start, start + len) || !push_sym(p, item_rule, SYM_END, 0)) return false;
        one.kind = SYM_RULE;
        one.arg = item_rule;
    }
    p->ir->rules[rule].n = start;
    for (uint64_t i = 0; i < min; i++)
        if (!push_sym(p, rule, one.kind, one.arg)) return false;
    if (unbounded) {
        int32_t rr = gen_rule(p, rule);
        if (rr < 0) return false;
        if (!push_sym(p, (uint32_t)rr, one.kind, one.arg) || !push_sym(p, (uint32_t)rr, SYM_RULE, (uint32_t)rr) ||
            !push_sym(p, (uint32_t)rr, SYM_ALT, 0) || !push_sym(p, (uint32_t)rr, SYM_END, 0))
            return false;
        return push_sym(p, rule, SYM_RULE, (uint32_t)rr);
    }
    int32_t last = -1;
    for (uint64_t i = 0; i < max - min; i++) {
        int32_t rr = gen_rule(p, rule);
        if (rr < 0) return false;
        if (!push_sym(p, (uint32_t)rr, one.kind, one.arg)) return false;
        if (last >= 0 && !push_sym(p, (uint32_t)rr, SYM_RULE, (uint32_t)last)) return false;
        if (!push_sym(p, (uint32_t)rr, SYM_ALT, 0) || !push_sym(p, (uint32_t)rr, SYM_END, 0)) return false;
        last = rr;
    }
    if (last >= 0) return push_sym(p, rule, SYM_RULE, (uint32_t)last);
    return true;
}

static int32_t ref_rule(parser *p, const char *name, size_t nlen, const char *at) {
    int32_t id = find_rule(p, name, nlen);
    if (id < 0) {
        id = add_rule(p, name, nlen, false);
        if (id < 0) return -1;
        int l, c;
        line_col(p, at, &l, &c);
        p->ir->rules[id].ref_line = l;
        p->ir->rules[id].ref_col = c;
    }
    return id;
}

static bool parse_token_ref(parser *p, uint32_t rule, bool negate) {
    const char *at = p->cur;
    p->cur++; /* '<' */
    uint8_t kind = negate ? SYM_TOKEN_NOT : SYM_TOKEN;
    if (peek(p, 0) == '[') {
        p->cur++;
        uint64_t id;
        if (!parse_uint(p, &id)) return false;
        if (peek(p, 0) != ']' || peek(p, 1) != '>') return fail(p, p->cur, LOOM_ERR_FORMAT, "expecting ']>'");
        p->cur += 2;
        if (id > INT32_MAX) return fail(p, at, LOOM_ERR_RANGE, "token id out of range");
        return push_sym(p, rule, kind, (uint32_t)id);
    }
    const char *q = p->cur;
    while (q < p->end && *q != '>' && *q != '\n') q++;
    if (q >= p->end || *q != '>') return fail(p, at, LOOM_ERR_FORMAT, "expecting '>' to close the token");
    if (!p->tok) return fail(p, at, LOOM_ERR_FORMAT, "token reference needs a tokenizer (use <[id]>)");
    /* the text includes the angle brackets, as in llama.cpp: <think> is the token "<think>" */
    int32_t ids[2];
    int32_t n = 0;
    loom_status st = loom_tokenize(p->tok, at, (size_t)(q + 1 - at), false, true, ids, 2, &n, NULL);
    if ((st != LOOM_OK && st != LOOM_ERR_RANGE) || n != 1)
        return fail(p, at, LOOM_ERR_FORMAT, "'%.*s' is not a single token", (int)(q + 1 - at), at);
    p->cur = q + 1;
    return push_sym(p, rule, kind, (uint32_t)ids[0]);
}

static bool parse_sequence(parser *p, uint32_t rule, bool nested) {
    uint32_t last_start = p->ir->rules[rule].n; /* start of the last item; == n: none */
    while (!at_end(p) && p->st == LOOM_OK) {
        int c = peek(p, 0);
        const char *at = p->cur;
        if (c == '"') {
            p->cur++;
            last_start = p->ir->rules[rule].n;
            for (;;) {
                if (at_end(p)) return fail(p, at, LOOM_ERR_FORMAT, "unterminated string literal");
                if (*p->cur == '"') break;
                uint32_t cp;
                if (!parse_char(p, &cp)) return false;
                p->n_tmp = 0;
                if (!tmp_add(p, cp, cp)) return false;
                int64_t set = finish_set(p, false, at);
                if (set < 0 || !push_sym(p, rule, SYM_CHARS, (uint32_t)set)) return false;
            }
            p->cur++;
            skip_space(p, nested);
        } else if (c == '[') {
            p->cur++;
            bool neg = false;
            if (peek(p, 0) == '^') {
                neg = true;
                p->cur++;
            }
            p->n_tmp = 0;
            for (;;) {
                if (at_end(p)) return fail(p, at, LOOM_ERR_FORMAT, "unterminated character class");
                if (*p->cur == ']') break;
                uint32_t lo, hi;
                if (!parse_char(p, &lo)) return false;
                hi = lo;
                if (peek(p, 0) == '-' && peek(p, 1) != ']' && peek(p, 1) != -1) {
                    const char *rat = p->cur;
                    p->cur++;
                    if (!parse_char(p, &hi)) return false;
                    if (hi < lo) return fail(p, rat, LOOM_ERR_FORMAT, "empty range U+%04X-U+%04X", lo, hi);
                }
                if (!tmp_add(p, lo, hi)) return false;
            }
            p->cur++;
            int64_t set = finish_set(p, neg, at);
            last_start = p->ir->rules[rule].n;
            if (set < 0 || !push_sym(p, rule, SYM_CHARS, (uint32_t)set)) return false;
            skip_space(p, nested);
        } else if (c == '<' || (c == '!' && peek(p, 1) == '<')) {
            bool neg = c == '!';
            if (neg) p->cur++;
            last_start = p->ir->rules[rule].n;
            if (!parse_token_ref(p, rule, neg)) return false;
            skip_space(p, nested);
        } else if (is_word(c)) {
            const char *q = p->cur;
            while (q < p->end && is_word((unsigned char)*q)) q++;
            int32_t id = ref_rule(p, p->cur, (size_t)(q - p->cur), at);
            if (id < 0) return false;
            p->cur = q;
            last_start = p->ir->rules[rule].n;
            if (!push_sym(p, rule, SYM_RULE, (uint32_t)id)) return false;
            skip_space(p, nested);
        } else if (c == '(') {
            if (++p->depth > LOOM_GRAMMAR_MAX_NESTING)
                return fail(p, at, LOOM_ERR_RANGE, "parentheses nested deeper than %d", LOOM_GRAMMAR_MAX_NESTING);
            p->cur++;
            skip_space(p, true);
            int32_t sub = gen_rule(p, rule);
            if (sub < 0) return false;
            if (!parse_alternates(p, (uint32_t)sub, true)) return false;
            if (peek(p, 0) != ')') {
                int ol, oc;
                line_col(p, at, &ol, &oc);
                return fail(p, p->cur, LOOM_ERR_FORMAT, "expecting ')' to close the '(' at line %d, column %d", ol, oc);
            }
            p->cur++;
            p->depth--;
            last_start = p->ir->rules[rule].n;
            if (!push_sym(p, rule, SYM_RULE, (uint32_t)sub)) return false;
            skip_space(p, nested);
        } else if (c == '.') {
            p->cur++;
            p->n_tmp = 0;
            if (!tmp_add(p, 0, 0xD7FF) || !tmp_add(p, 0xE000, MAX_CP)) return false;
            int64_t set = finish_set(p, false, at);
            last_start = p->ir->rules[rule].n;
            if (set < 0 || !push_sym(p, rule, SYM_CHARS, (uint32_t)set)) return false;
            skip_space(p, nested);
        } else if (c == '*' || c == '+' || c == '?') {
            p->cur++;
            skip_space(p, nested);
            uint64_t mn = c == '+' ? 1 : 0, mx = c == '?' ? 1 : UINT64_MAX;
            if (!repeat(p, rule, last_start, mn, mx, at)) return false;
            /* last_start unchanged: a further operator applies to the repeated item (x*? = (x*)?) */
        } else if (c == '{') {
            p->cur++;
            skip_space(p, nested);
            uint64_t mn, mx;
            if (!parse_uint(p, &mn)) return false;
            skip_space(p, nested);
            if (peek(p, 0) == '}') {
                mx = mn;
                p->cur++;
            } else if (peek(p, 0) == ',') {
                p->cur++;
                skip_space(p, nested);
                mx = UINT64_MAX;
                if (peek(p, 0) >= '0' && peek(p, 0) <= '9') {
                    if (!parse_uint(p, &mx)) return false;
                    skip_space(p, nested);
                }
                if (peek(p, 0) != '}') return fail(p, p->cur, LOOM_ERR_FORMAT, "expecting '}'");
                p->cur++;
            } else {
                return fail(p, p->cur, LOOM_ERR_FORMAT, "expecting ',' or '}'");
            }
            skip_space(p, nested);
            if (!repeat(p, rule, last_start, mn, mx, at)) return false;
        } else {
            break;
        }
    }
    return p->st == LOOM_OK;
}

static bool parse_alternates(parser *p, uint32_t rule, bool nested) {
    if (!parse_sequence(p, rule, nested)) return false;
    while (peek(p, 0) == '|') {
        if (!push_sym(p, rule, SYM_ALT, 0)) return false;
        p->cur++;
        skip_space(p, true);
        if (!parse_sequence(p, rule, nested)) return false;
    }
    return push_sym(p, rule, SYM_END, 0);
}

static bool parse_rule(parser *p) {
    const char *at = p->cur;
    const char *q = p->cur;
    while (q < p->end && is_word((unsigned char)*q)) q++;
    if (q == p->cur) {
        int c = peek(p, 0);
        if (c >= 0x21 && c < 0x7F) return fail(p, at, LOOM_ERR_FORMAT, "expecting a rule name, got '%c'", c);
        return fail(p, at, LOOM_ERR_FORMAT, "expecting a rule name");
    }
    size_t nlen = (size_t)(q - p->cur);
    int32_t id = find_rule(p, p->cur, nlen);
    if (id >= 0 && p->ir->rules[id].defined) {
        const ir_rule *r = &p->ir->rules[id];
        return fail(p, at, LOOM_ERR_FORMAT, "rule '%s' is already defined at line %d", r->name, r->line);
    }
    if (id < 0) id = add_rule(p, p->cur, nlen, false);
    if (id < 0) return false;
    ir_rule *r = &p->ir->rules[id];
    r->defined = true;
    line_col(p, at, &r->line, &r->col);
    p->cur = q;
    skip_space(p, false);
    if (!(peek(p, 0) == ':' && peek(p, 1) == ':' && peek(p, 2) == '='))
        return fail(p, p->cur, LOOM_ERR_FORMAT, "expecting '::=' after the rule name");
    p->cur += 3;
    skip_space(p, true);
    if (!parse_alternates(p, (uint32_t)id, false)) return false;
    if (peek(p, 0) == '\r') {
        p->cur += peek(p, 1) == '\n' ? 2 : 1;
    } else if (peek(p, 0) == '\n') {
        p->cur++;
    } else if (!at_end(p)) {
        int c = peek(p, 0);
        if (c == ')') return fail(p, p->cur, LOOM_ERR_FORMAT, "unbalanced ')'");
        if (c >= 0x21 && c < 0x7F) return fail(p, p->cur, LOOM_ERR_FORMAT, "unexpected '%c'", c);
        return fail(p, p->cur, LOOM_ERR_FORMAT, "expecting a newline or the end");
    }
    skip_space(p, true);
    return true;
}

loom_status gbnf_parse(const char *text, size_t len, const char *root, const loom_tokenizer *tok, ir_grammar *ir,
                       loom_error *err) {
    memset(ir, 0, sizeof *ir);
    parser p;
    memset(&p, 0, sizeof p);
    p.s = p.cur = text;
    p.end = text + len;
    p.ir = ir;
    p.tok = tok;
    p.err = err;
    if (len > LOOM_GRAMMAR_MAX_TEXT) {
        fail(&p, NULL, LOOM_ERR_RANGE, "text of %zu bytes exceeds the limit of %u", len, LOOM_GRAMMAR_MAX_TEXT);
        return p.st;
    }
    skip_space(&p, true);
    while (!at_end(&p) && p.st == LOOM_OK) parse_rule(&p);
    if (p.st == LOOM_OK) {
        for (uint32_t i = 0; i < ir->n_rules; i++) {
            const ir_rule *r = &ir->rules[i];
            if (!r->defined) {
                p.st = LOOM_ERR_FORMAT;
                loom_error_set(err, p.st, "grammar: line %d, column %d: undefined rule '%s'", r->ref_line, r->ref_col,
                               r->name);
                break;
            }
        }
    }
    if (p.st == LOOM_OK) {
        const char *rn = root ? root : "root";
        int32_t id = find_rule(&p, rn, strlen(rn));
        if (id < 0) {
            p.st = LOOM_ERR_FORMAT;
            loom_error_set(err, p.st, "grammar: no rule named '%s' (the start rule)", rn);
        } else {
            ir->root = (uint32_t)id;
        }
    }
    loom_free(p.tmp);
    if (p.st != LOOM_OK) ir_free(ir);
    return p.st;
}
