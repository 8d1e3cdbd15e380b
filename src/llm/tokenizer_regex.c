/* A small backtracking regex engine for the pre-tokenizer patterns (data in
 * tokenizer_pretok.c), with the semantics llama.cpp gets from std::regex
 * (ECMAScript, C locale, regex_iterator) over the "collapsed" or code-point
 * symbol strings described in tokenizer_internal.h.
 *
 * Supported: alternation, groups ( ) (?: ), lookahead (?= ) (?! ), classes
 * [...] [^...] with ranges and \s \S \d \D \w \W \p{..} inside, escapes
 * \s \S \d \D \w \W \b \B \r \n \t \v \f \0 \xHH \uHHHH and escaped
 * punctuation, ^ $ . and greedy quantifiers ? * + {n} {n,} {n,m}. The
 * patterns are compile-time data, but compilation still validates everything
 * (a loop whose body can match empty is refused, so matching always ends).
 *
 * Matching: a program of instructions run by a backtracking VM with an
 * explicit stack; a quantified single-symbol item is one RUN instruction that
 * consumes the longest run and backs off one symbol at a time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_internal.h"
#include "quant/alloc.h"

/* ------------------------------------------------------------------ symbols */

uint32_t tok_sym_collapsed(uint32_t cp) {
    if (cp < 128) return cp;
    unsigned f = tok_cp_flags(cp);
    if (f & TOK_CP_WHITESPACE) return 0x0B;
    switch (f & 0xFF) {
    case TOK_CP_NUMBER: return 0xD1;
    case TOK_CP_LETTER: return 0xD2;
    case TOK_CP_PUNCT: return 0xD3;
    case TOK_CP_MARK: return 0xD4;
    case TOK_CP_SYMBOL: return 0xD5;
    default: return 0xD0;
    }
}

/* ------------------------------------------------------------------ classes */

typedef struct rx_class {
    uint32_t bits[8];   /* symbols 0..255 */
    uint32_t (*r)[2];   /* ranges above 255, sorted, disjoint */
    size_t nr, cap;
    bool neg;
} rx_class;

static bool class_has(const rx_class *c, uint32_t s) {
    bool in;
    if (s < 256) {
        in = (c->bits[s >> 5] >> (s & 31)) & 1u;
    } else {
        size_t lo = 0, hi = c->nr;
        in = false;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (s < c->r[mid][0]) hi = mid;
            else if (s > c->r[mid][1]) lo = mid + 1;
            else { in = true; break; }
        }
    }
    return in != c->neg;
}

static bool class_add(rx_class *c, uint32_t a, uint32_t b) {
    if (a > b) return false;
    for (; a <= b && a < 256; a++) c->bits[a >> 5] |= 1u << (a & 31);
    if (a > b) return true;
    if (c->nr == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 8;
        uint32_t(*nr)[2] = loom_realloc(c->r, nc * sizeof *nr);
        if (!nr) return false;
        c->r = nr;
        c->cap = nc;
    }
    c->r[c->nr][0] = a;
    c->r[c->nr][1] = b;
    c->nr++;
    return true;
}

static void class_finish(rx_class *c) {
    /* sort and merge ranges above 255 */
    for (size_t i = 1; i < c->nr; i++) {
        uint32_t a = c->r[i][0], b = c->r[i][1];
        size_t j = i;
        while (j > 0 && c->r[j - 1][0] > a) {
            c->r[j][0] = c->r[j - 1][0];
            c->r[j][1] = c->r[j - 1][1];
            j--;
        }
        c->r[j][0] = a;
        c->r[j][1] = b;
    }
    size_t w = 0;
    for (size_t i = 0; i < c->nr; i++) {
        if (w > 0 && c->r[i][0] <= c->r[w - 1][1] + 1) {
            if (c->r[i][1] > c->r[w - 1][1]) c->r[w - 1][1] = c->r[i][1];
        } else {
            c->r[w][0] = c->r[i][0];
            c->r[w][1] = c->r[i][1];
            w++;
        }
    }
    c->nr = w;
}

/* ------------------------------------------------------------------ AST */

typedef enum { N_CHAR, N_CLASS, N_CAT, N_ALT, N_REP, N_LOOK, N_BOL, N_EOL, N_WORDB, N_NWORDB, N_EMPTY } ntype;

typedef struct rx_node {
    ntype type;
    uint32_t ch;       /* N_CHAR */
    int cls;           /* N_CLASS: class index */
    int min, max;      /* N_REP (max -1 = inf) */
    bool neg;          /* N_LOOK */
    struct rx_node **kids;
    int nk, capk;
} rx_node;

/* ------------------------------------------------------------------ program */

typedef enum { OP_CHAR, OP_CLASS, OP_RUN, OP_SPLIT, OP_JMP, OP_MATCH, OP_BOL, OP_EOL, OP_WORDB, OP_NWORDB,
               OP_LOOK, OP_LOOKEND } opcode;

typedef struct rx_inst {
    uint8_t op;
    bool neg;       /* OP_LOOK */
    int32_t x, y;   /* SPLIT targets; JMP x; LOOK: x = continuation; RUN: x = class (-1: char y) */
    uint32_t a;     /* CHAR symbol; RUN: min */
    uint32_t b;     /* RUN: max (UINT32_MAX = inf); RUN on a char: the char */
} rx_inst;

struct tok_regex {
    bool collapsed;
    rx_class *cls;
    int ncls, capcls;
    rx_inst *prog;
    int nprog, capprog;
    /* first-symbol filter for searches: a match can only start at a symbol
     * s < 256 with first[s] set, or any symbol >= 256 when first_high */
    bool can_start_anywhere;
    uint32_t first[8];
    bool first_high;
    bool run_eol; /* the whole program is X+$ / X*$ (deepseek's \s+$): matched in linear time */
};

/* ------------------------------------------------------------------ parser */

typedef struct parser {
    const uint32_t *p;
    size_t n, i;
    tok_regex *r;
    bool collapsed;
    char *why;
    size_t why_size;
    bool oom;
} parser;

static rx_node *node_new(parser *ps, ntype t) {
    rx_node *n = loom_calloc(1, sizeof *n);
    if (!n) ps->oom = true;
    else n->type = t;
    return n;
}

static void node_free(rx_node *n) {
    if (!n) return;
    for (int i = 0; i < n->nk; i++) node_free(n->kids[i]);
    loom_free(n->kids);
    loom_free(n);
}

static bool node_add(parser *ps, rx_node *n, rx_node *k) {
    if (!k) return false;
    if (n->nk == n->capk) {
        int nc = n->capk ? n->capk * 2 : 4;
        rx_node **nk = loom_realloc(n->kids, (size_t)nc * sizeof *nk);
        if (!nk) { ps->oom = true; node_free(k); return false; }
        n->kids = nk;
        n->capk = nc;
    }
    n->kids[n->nk++] = k;
    return true;
}

static bool fail(parser *ps, const char *msg) {
    if (ps->why && ps->why[0] == 0) snprintf(ps->why, ps->why_size, "%s at pattern position %zu", msg, ps->i);
    return false;
}

static int class_new(parser *ps) {
    tok_regex *r = ps->r;
    if (r->ncls == r->capcls) {
        int nc = r->capcls ? r->capcls * 2 : 8;
        rx_class *n = loom_realloc(r->cls, (size_t)nc * sizeof *n);
        if (!n) { ps->oom = true; return -1; }
        r->cls = n;
        r->capcls = nc;
    }
    memset(&r->cls[r->ncls], 0, sizeof(rx_class));
    return r->ncls++;
}

/* Add a class escape (\s \d \w \p{..}) to c; upper-case forms are only
 * accepted outside brackets (handled by the caller via neg). Returns false
 * on a bad escape. */
static bool class_escape(parser *ps, rx_class *c, uint32_t e) {
    switch (e) {
    case 's': return class_add(c, 9, 13) && class_add(c, 32, 32);
    case 'd': return class_add(c, '0', '9');
    case 'w': return class_add(c, '0', '9') && class_add(c, 'A', 'Z') && class_add(c, 'a', 'z') && class_add(c, '_', '_');
    case 'p': {
        /* \p{X}: llama.cpp's collapsed categories */
        if (ps->i >= ps->n || ps->p[ps->i] != '{') return fail(ps, "\\p without {");
        size_t j = ps->i + 1;
        char name[8];
        size_t k = 0;
        while (j < ps->n && ps->p[j] != '}' && k < sizeof name - 1) name[k++] = (char)ps->p[j++];
        name[k] = 0;
        if (j >= ps->n || ps->p[j] != '}') return fail(ps, "unterminated \\p{");
        ps->i = j + 1;
        if (!ps->collapsed) return fail(ps, "\\p{} in a code-point pattern");
        if (!strcmp(name, "N")) return class_add(c, 0xD1, 0xD1) && class_add(c, '0', '9');
        if (!strcmp(name, "L") || !strcmp(name, "Lu") || !strcmp(name, "Ll") || !strcmp(name, "Lt") ||
            !strcmp(name, "Lm") || !strcmp(name, "Lo"))
            return class_add(c, 0xD2, 0xD2) && class_add(c, 'A', 'Z') && class_add(c, 'a', 'z');
        if (!strcmp(name, "P"))
            return class_add(c, 0xD3, 0xD3) && class_add(c, 0x21, 0x23) && class_add(c, 0x25, 0x2A) &&
                   class_add(c, 0x2C, 0x2F) && class_add(c, 0x3A, 0x3B) && class_add(c, 0x3F, 0x40) &&
                   class_add(c, 0x5B, 0x5D) && class_add(c, 0x5F, 0x5F) && class_add(c, 0x7B, 0x7B) &&
                   class_add(c, 0x7D, 0x7D);
        if (!strcmp(name, "M")) return class_add(c, 0xD4, 0xD4);
        if (!strcmp(name, "S"))
            return class_add(c, 0xD5, 0xD5) && class_add(c, 0x24, 0x24) && class_add(c, 0x2B, 0x2B) &&
                   class_add(c, 0x3C, 0x3E) && class_add(c, 0x5E, 0x5E) && class_add(c, 0x60, 0x60) &&
                   class_add(c, 0x7C, 0x7C) && class_add(c, 0x7E, 0x7E);
        return fail(ps, "unknown \\p{} category");
    }
    default: return fail(ps, "bad class escape");
    }
}

static int hexv(uint32_t c) {
    if (c >= '0' && c <= '9') return (int)(c - '0');
    if (c >= 'a' && c <= 'f') return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return (int)(c - 'A' + 10);
    return -1;
}

/* Character escape (after '\'): returns the literal code point, or
 * TOK_CP_INVALID for class escapes (left for the caller). */
static uint32_t char_escape(parser *ps, uint32_t e) {
    switch (e) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'v': return '\v';
    case 'f': return '\f';
    case '0': return 0;
    case 'x':
    case 'u': {
        int nd = e == 'x' ? 2 : 4;
        uint32_t v = 0;
        for (int k = 0; k < nd; k++) {
            int h = ps->i < ps->n ? hexv(ps->p[ps->i]) : -1;
            if (h < 0) { fail(ps, "bad hex escape"); return TOK_CP_INVALID - 1; }
            v = v * 16 + (uint32_t)h;
            ps->i++;
        }
        return v;
    }
    case 's': case 'S': case 'd': case 'D': case 'w': case 'W': case 'p': case 'b': case 'B':
        return TOK_CP_INVALID;
    default:
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '1' && e <= '9')) {
            fail(ps, "unsupported escape");
            return TOK_CP_INVALID - 1;
        }
        return e; /* escaped punctuation / any other literal */
    }
}

static rx_node *parse_bracket(parser *ps) {
    int ci = class_new(ps);
    if (ci < 0) return NULL;
    rx_class *c = &ps->r->cls[ci];
    if (ps->i < ps->n && ps->p[ps->i] == '^') { c->neg = true; ps->i++; }
    bool first = true;
    for (;;) {
        if (ps->i >= ps->n) { fail(ps, "unterminated ["); return NULL; }
        uint32_t ch = ps->p[ps->i];
        if (ch == ']' && !first) { ps->i++; break; }
        first = false;
        ps->i++;
        uint32_t lo;
        if (ch == '\\') {
            if (ps->i >= ps->n) { fail(ps, "trailing \\"); return NULL; }
            uint32_t e = ps->p[ps->i++];
            lo = char_escape(ps, e);
            if (lo == TOK_CP_INVALID - 1) return NULL;
            if (lo == TOK_CP_INVALID) {
                c = &ps->r->cls[ci];
                if (e == 'S' || e == 'D' || e == 'W' || e == 'b' || e == 'B') { fail(ps, "unsupported class escape"); return NULL; }
                if (!class_escape(ps, c, e)) { if (!ps->why || !ps->why[0]) ps->oom = true; return NULL; }
                continue;
            }
        } else {
            lo = ch;
        }
        uint32_t hi = lo;
        if (ps->i + 1 < ps->n && ps->p[ps->i] == '-' && ps->p[ps->i + 1] != ']') {
            ps->i++;
            uint32_t h = ps->p[ps->i++];
            if (h == '\\') {
                if (ps->i >= ps->n) { fail(ps, "trailing \\"); return NULL; }
                h = char_escape(ps, ps->p[ps->i++]);
                if (h >= TOK_CP_INVALID - 1) { fail(ps, "class escape as a range end"); return NULL; }
            }
            hi = h;
            if (hi < lo) { fail(ps, "reversed range"); return NULL; }
        }
        c = &ps->r->cls[ci];
        if (!class_add(c, lo, hi)) { ps->oom = true; return NULL; }
    }
    class_finish(&ps->r->cls[ci]);
    rx_node *n = node_new(ps, N_CLASS);
    if (n) n->cls = ci;
    return n;
}

static rx_node *parse_alt(parser *ps);

static rx_node *parse_atom(parser *ps) {
    uint32_t ch = ps->p[ps->i++];
    switch (ch) {
    case '(': {
        bool look = false, neg = false;
        if (ps->i + 1 < ps->n && ps->p[ps->i] == '?') {
            uint32_t k = ps->p[ps->i + 1];
            if (k == ':') ps->i += 2;
            else if (k == '=' || k == '!') { look = true; neg = k == '!'; ps->i += 2; }
            else { fail(ps, "unsupported group"); return NULL; }
        }
        rx_node *inner = parse_alt(ps);
        if (!inner) return NULL;
        if (ps->i >= ps->n || ps->p[ps->i] != ')') { node_free(inner); fail(ps, "missing )"); return NULL; }
        ps->i++;
        if (!look) return inner;
        rx_node *n = node_new(ps, N_LOOK);
        if (!n) { node_free(inner); return NULL; }
        n->neg = neg;
        if (!node_add(ps, n, inner)) { node_free(n); return NULL; }
        return n;
    }
    case '[': return parse_bracket(ps);
    case '^': return node_new(ps, N_BOL);
    case '$': return node_new(ps, N_EOL);
    case '.': {
        int ci = class_new(ps);
        if (ci < 0) return NULL;
        rx_class *c = &ps->r->cls[ci];
        c->neg = true; /* everything except line terminators */
        if (!class_add(c, '\n', '\n') || !class_add(c, '\r', '\r') || !class_add(c, 0x2028, 0x2029)) {
            ps->oom = true;
            return NULL;
        }
        class_finish(c);
        rx_node *n = node_new(ps, N_CLASS);
        if (n) n->cls = ci;
        return n;
    }
    case '\\': {
        if (ps->i >= ps->n) { fail(ps, "trailing \\"); return NULL; }
        uint32_t e = ps->p[ps->i++];
        if (e == 'b') return node_new(ps, N_WORDB);
        if (e == 'B') return node_new(ps, N_NWORDB);
        uint32_t lit = char_escape(ps, e);
        if (lit == TOK_CP_INVALID - 1) return NULL;
        if (lit != TOK_CP_INVALID) {
            rx_node *n = node_new(ps, N_CHAR);
            if (n) n->ch = lit;
            return n;
        }
        int ci = class_new(ps);
        if (ci < 0) return NULL;
        rx_class *c = &ps->r->cls[ci];
        uint32_t base = e;
        if (e == 'S' || e == 'D' || e == 'W') { c->neg = true; base = e + 32; }
        if (!class_escape(ps, &ps->r->cls[ci], base)) { if (!ps->why || !ps->why[0]) ps->oom = true; return NULL; }
        class_finish(&ps->r->cls[ci]);
        rx_node *n = node_new(ps, N_CLASS);
        if (n) n->cls = ci;
        return n;
    }
    case ')': case '|': case '*': case '+': case '?': case '{':
        ps->i--;
        fail(ps, "unexpected metacharacter");
        return NULL;
    default: {
        rx_node *n = node_new(ps, N_CHAR);
        if (n) n->ch = ch;
        return n;
    }
    }
}

static bool parse_int(parser *ps, int *v) {
    size_t s = ps->i;
    long x = 0;
    while (ps->i < ps->n && ps->p[ps->i] >= '0' && ps->p[ps->i] <= '9' && x < 100000) x = x * 10 + (ps->p[ps->i++] - '0');
    *v = (int)x;
    return ps->i > s && x <= 4096;
}

static rx_node *parse_seq(parser *ps) {
    rx_node *cat = node_new(ps, N_CAT);
    if (!cat) return NULL;
    while (ps->i < ps->n && ps->p[ps->i] != '|' && ps->p[ps->i] != ')') {
        rx_node *a = parse_atom(ps);
        if (!a) { node_free(cat); return NULL; }
        for (;;) {
            if (ps->i >= ps->n) break;
            uint32_t q = ps->p[ps->i];
            int mn, mx;
            if (q == '?') { mn = 0; mx = 1; ps->i++; }
            else if (q == '*') { mn = 0; mx = -1; ps->i++; }
            else if (q == '+') { mn = 1; mx = -1; ps->i++; }
            else if (q == '{') {
                ps->i++;
                if (!parse_int(ps, &mn)) { node_free(a); node_free(cat); fail(ps, "bad {n}"); return NULL; }
                mx = mn;
                if (ps->i < ps->n && ps->p[ps->i] == ',') {
                    ps->i++;
                    if (ps->i < ps->n && ps->p[ps->i] == '}') mx = -1;
                    else if (!parse_int(ps, &mx) || mx < mn) { node_free(a); node_free(cat); fail(ps, "bad {n,m}"); return NULL; }
                }
                if (ps->i >= ps->n || ps->p[ps->i] != '}') { node_free(a); node_free(cat); fail(ps, "missing }"); return NULL; }
                ps->i++;
            } else {
                break;
            }
            if (ps->i < ps->n && (ps->p[ps->i] == '?' || ps->p[ps->i] == '+')) {
                node_free(a); node_free(cat);
                fail(ps, "lazy/possessive quantifiers are not supported");
                return NULL;
            }
            if (a->type == N_BOL || a->type == N_EOL || a->type == N_LOOK || a->type == N_WORDB || a->type == N_NWORDB) {
                node_free(a); node_free(cat);
                fail(ps, "quantified assertion");
                return NULL;
            }
            rx_node *rep = node_new(ps, N_REP);
            if (!rep) { node_free(a); node_free(cat); return NULL; }
            rep->min = mn;
            rep->max = mx;
            if (!node_add(ps, rep, a)) { node_free(rep); node_free(cat); return NULL; }
            a = rep;
        }
        if (!node_add(ps, cat, a)) { node_free(cat); return NULL; }
    }
    return cat;
}

static rx_node *parse_alt(parser *ps) {
    rx_node *first = parse_seq(ps);
    if (!first) return NULL;
    if (ps->i >= ps->n || ps->p[ps->i] != '|') return first;
    rx_node *alt = node_new(ps, N_ALT);
    if (!alt || !node_add(ps, alt, first)) { node_free(alt); if (!alt) node_free(first); return NULL; }
    while (ps->i < ps->n && ps->p[ps->i] == '|') {
        ps->i++;
        rx_node *s = parse_seq(ps);
        if (!s || !node_add(ps, alt, s)) { node_free(alt); return NULL; }
    }
    return alt;
}

/* ------------------------------------------------------------------ analysis */

static bool nullable(const rx_node *n) {
    switch (n->type) {
    case N_CHAR: case N_CLASS: return false;
    case N_CAT:
        for (int i = 0; i < n->nk; i++) if (!nullable(n->kids[i])) return false;
        return true;
    case N_ALT:
        for (int i = 0; i < n->nk; i++) if (nullable(n->kids[i])) return true;
        return false;
    case N_REP: return n->min == 0 || nullable(n->kids[0]);
    default: return true; /* assertions consume nothing */
    }
}

static bool loops_ok(const rx_node *n) {
    if (n->type == N_REP && n->max != n->min && nullable(n->kids[0])) return false;
    for (int i = 0; i < n->nk; i++) if (!loops_ok(n->kids[i])) return false;
    return true;
}

/* Add the symbols that can start a match of n to r->first; returns false if
 * that set cannot be bounded (assertions at the start, etc.). */
static bool first_set(tok_regex *r, const rx_node *n) {
    switch (n->type) {
    case N_CHAR:
        if (n->ch < 256) r->first[n->ch >> 5] |= 1u << (n->ch & 31);
        else r->first_high = true;
        return true;
    case N_CLASS: {
        const rx_class *c = &r->cls[n->cls];
        for (uint32_t s = 0; s < 256; s++)
            if (class_has(c, s)) r->first[s >> 5] |= 1u << (s & 31);
        if (c->neg || c->nr) r->first_high = true;
        return true;
    }
    case N_CAT:
        for (int i = 0; i < n->nk; i++) {
            if (!first_set(r, n->kids[i])) return false;
            if (!nullable(n->kids[i])) return true;
        }
        return false;
    case N_ALT:
        for (int i = 0; i < n->nk; i++) if (!first_set(r, n->kids[i])) return false;
        return true;
    case N_REP:
        if (!first_set(r, n->kids[0])) return false;
        return n->min > 0;
    default: return false;
    }
}

/* ------------------------------------------------------------------ code generation */

static int emit(tok_regex *r, rx_inst in) {
    if (r->nprog == r->capprog) {
        int nc = r->capprog ? r->capprog * 2 : 64;
        if (nc > (1 << 20)) return -1;
        rx_inst *np = loom_realloc(r->prog, (size_t)nc * sizeof *np);
        if (!np) return -1;
        r->prog = np;
        r->capprog = nc;
    }
    r->prog[r->nprog] = in;
    return r->nprog++;
}

static bool gen(tok_regex *r, const rx_node *n);

static bool gen_rep(tok_regex *r, const rx_node *n) {
    const rx_node *k = n->kids[0];
    if (k->type == N_CHAR || k->type == N_CLASS) {
        rx_inst in = {OP_RUN, false, k->type == N_CLASS ? k->cls : -1, 0, (uint32_t)n->min,
                      n->max < 0 ? UINT32_MAX : (uint32_t)n->max};
        if (k->type == N_CHAR) in.y = (int32_t)k->ch;
        return emit(r, in) >= 0;
    }
    for (int i = 0; i < n->min; i++) if (!gen(r, k)) return false;
    if (n->max < 0) {
        int split = emit(r, (rx_inst){OP_SPLIT, false, 0, 0, 0, 0});
        if (split < 0) return false;
        r->prog[split].x = r->nprog;
        if (!gen(r, k)) return false;
        if (emit(r, (rx_inst){OP_JMP, false, split, 0, 0, 0}) < 0) return false;
        r->prog[split].y = r->nprog;
        return true;
    }
    int opt = n->max - n->min;
    int *splits = opt ? loom_malloc((size_t)opt * sizeof(int)) : NULL;
    if (opt && !splits) return false;
    for (int i = 0; i < opt; i++) {
        splits[i] = emit(r, (rx_inst){OP_SPLIT, false, 0, 0, 0, 0});
        if (splits[i] < 0) { loom_free(splits); return false; }
        r->prog[splits[i]].x = r->nprog;
        if (!gen(r, k)) { loom_free(splits); return false; }
    }
    for (int i = 0; i < opt; i++) r->prog[splits[i]].y = r->nprog;
    loom_free(splits);
    return true;
}

static bool gen(tok_regex *r, const rx_node *n) {
    switch (n->type) {
    case N_CHAR: return emit(r, (rx_inst){OP_CHAR, false, 0, 0, n->ch, 0}) >= 0;
    case N_CLASS: return emit(r, (rx_inst){OP_CLASS, false, n->cls, 0, 0, 0}) >= 0;
    case N_CAT:
        for (int i = 0; i < n->nk; i++) if (!gen(r, n->kids[i])) return false;
        return true;
    case N_ALT: {
        int *jumps = loom_malloc((size_t)n->nk * sizeof(int));
        if (!jumps) return false;
        for (int i = 0; i < n->nk; i++) {
            int split = -1;
            if (i + 1 < n->nk) {
                split = emit(r, (rx_inst){OP_SPLIT, false, 0, 0, 0, 0});
                if (split < 0) { loom_free(jumps); return false; }
                r->prog[split].x = r->nprog;
            }
            if (!gen(r, n->kids[i])) { loom_free(jumps); return false; }
            jumps[i] = -1;
            if (i + 1 < n->nk) {
                jumps[i] = emit(r, (rx_inst){OP_JMP, false, 0, 0, 0, 0});
                if (jumps[i] < 0) { loom_free(jumps); return false; }
                r->prog[split].y = r->nprog;
            }
        }
        for (int i = 0; i < n->nk; i++) if (jumps[i] >= 0) r->prog[jumps[i]].x = r->nprog;
        loom_free(jumps);
        return true;
    }
    case N_REP: return gen_rep(r, n);
    case N_LOOK: {
        int look = emit(r, (rx_inst){OP_LOOK, n->neg, 0, 0, 0, 0});
        if (look < 0 || !gen(r, n->kids[0])) return false;
        if (emit(r, (rx_inst){OP_LOOKEND, false, 0, 0, 0, 0}) < 0) return false;
        r->prog[look].x = r->nprog;
        return true;
    }
    case N_BOL: return emit(r, (rx_inst){OP_BOL, false, 0, 0, 0, 0}) >= 0;
    case N_EOL: return emit(r, (rx_inst){OP_EOL, false, 0, 0, 0, 0}) >= 0;
    case N_WORDB: return emit(r, (rx_inst){OP_WORDB, false, 0, 0, 0, 0}) >= 0;
    case N_NWORDB: return emit(r, (rx_inst){OP_NWORDB, false, 0, 0, 0, 0}) >= 0;
    default: return true;
    }
}

void tok_regex_free(tok_regex *r) {
    if (!r) return;
    for (int i = 0; i < r->ncls; i++) loom_free(r->cls[i].r);
    loom_free(r->cls);
    loom_free(r->prog);
    loom_free(r);
}

bool tok_regex_collapsed(const tok_regex *r) { return r->collapsed; }

loom_status tok_regex_compile(const char *pattern, tok_regex **out, char *why, size_t why_size) {
    *out = NULL;
    if (why && why_size) why[0] = 0;
    size_t len = strlen(pattern);
    uint32_t *cps = loom_malloc((len + 1) * sizeof(uint32_t));
    tok_regex *r = loom_calloc(1, sizeof *r);
    if (!cps || !r) { loom_free(cps); loom_free(r); return LOOM_ERR_NOMEM; }
    size_t n = 0;
    for (size_t off = 0; off < len;) {
        uint32_t cp;
        size_t cl = tok_utf8_decode((const unsigned char *)pattern + off, len - off, &cp);
        if (cp == TOK_CP_INVALID) {
            loom_free(cps); loom_free(r);
            if (why) snprintf(why, why_size, "pattern is not valid UTF-8");
            return LOOM_ERR_FORMAT;
        }
        cps[n++] = cp;
        off += cl;
    }
    /* llama.cpp: any of these category names selects the collapsed mode */
    static const char *ucat[] = {"\\p{N}", "\\p{L}", "\\p{P}", "\\p{M}", "\\p{S}", "\\p{Lu}", "\\p{Ll}",
                                 "\\p{Lt}", "\\p{Lm}", "\\p{Lo}"};
    for (size_t i = 0; i < sizeof ucat / sizeof ucat[0]; i++)
        if (strstr(pattern, ucat[i])) r->collapsed = true;
    if (r->collapsed)
        for (size_t i = 0; i < n; i++)
            if (cps[i] >= 128) {
                loom_free(cps); loom_free(r);
                if (why) snprintf(why, why_size, "pattern mixes \\p{} categories with non-ASCII characters");
                return LOOM_ERR_FORMAT;
            }
    parser ps = {cps, n, 0, r, r->collapsed, why, why_size, false};
    rx_node *root = parse_alt(&ps);
    loom_status st = LOOM_OK;
    if (root && ps.i < ps.n) { fail(&ps, "unbalanced )"); node_free(root); root = NULL; }
    if (!root) st = ps.oom ? LOOM_ERR_NOMEM : LOOM_ERR_FORMAT;
    if (st == LOOM_OK && !loops_ok(root)) {
        if (why) snprintf(why, why_size, "a repeated group can match the empty string");
        st = LOOM_ERR_FORMAT;
    }
    if (st == LOOM_OK && (!gen(r, root) || emit(r, (rx_inst){OP_MATCH, false, 0, 0, 0, 0}) < 0)) st = LOOM_ERR_NOMEM;
    if (st == LOOM_OK) {
        r->can_start_anywhere = nullable(root) || !first_set(r, root);
        r->run_eol = r->nprog == 3 && r->prog[0].op == OP_RUN && r->prog[1].op == OP_EOL && r->prog[2].op == OP_MATCH &&
                     r->prog[0].b == UINT32_MAX;
    }
    node_free(root);
    loom_free(cps);
    if (st != LOOM_OK) {
        if (st == LOOM_ERR_NOMEM && why && !why[0]) snprintf(why, why_size, "out of memory");
        tok_regex_free(r);
        return st;
    }
    *out = r;
    return LOOM_OK;
}

/* ------------------------------------------------------------------ matching */

enum { M_NOT_NULL = 1, M_CONTINUOUS = 2, M_PREV_AVAIL = 4 };

typedef struct bt_entry {
    int32_t pc;
    uint32_t pos;
    uint32_t lo; /* RUN entries: smallest end still to try; BT_PLAIN otherwise */
} bt_entry;
#define BT_PLAIN UINT32_MAX

typedef struct vm {
    const tok_regex *r;
    const uint32_t *s;
    size_t begin, end; /* subject range */
    bool prev_avail;
    tok_buf *stack;
    size_t sp, cap; /* entries */
    bool oom;
    uint64_t steps, budget; /* instructions run / allowed for the current piece */
    bool over;
} vm;

static bool push(vm *m, int32_t pc, size_t pos, size_t lo) {
    if (m->sp == m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 256;
        if (tok_buf_reserve(m->stack, nc * sizeof(bt_entry)) != LOOM_OK) { m->oom = true; return false; }
        m->cap = nc;
    }
    ((bt_entry *)m->stack->p)[m->sp++] = (bt_entry){pc, (uint32_t)pos, (uint32_t)lo};
    return true;
}

static bool is_word(uint32_t s) {
    return (s >= '0' && s <= '9') || (s >= 'A' && s <= 'Z') || (s >= 'a' && s <= 'z') || s == '_';
}

/* Run from pc at pos; on success *endp = end of the match. Lookahead bodies
 * are run by a nested call that stops at OP_LOOKEND. */
static bool run(vm *m, int32_t pc, size_t pos, size_t start, unsigned flags, size_t *endp) {
    const rx_inst *P = m->r->prog;
    const size_t base = m->sp;
    for (;;) {
        const rx_inst *in = &P[pc];
        bool ok = true;
        if (++m->steps > m->budget) { /* pathological backtracking: give up rather than hang */
            m->over = true;
            return false;
        }
        switch (in->op) {
        case OP_CHAR:
            ok = pos < m->end && m->s[pos] == in->a;
            if (ok) { pos++; pc++; }
            break;
        case OP_CLASS:
            ok = pos < m->end && class_has(&m->r->cls[in->x], m->s[pos]);
            if (ok) { pos++; pc++; }
            break;
        case OP_RUN: {
            size_t e = pos, lim = in->b == UINT32_MAX ? m->end : (pos + in->b < m->end ? pos + in->b : m->end);
            if (in->x >= 0) {
                const rx_class *c = &m->r->cls[in->x];
                while (e < lim && class_has(c, m->s[e])) e++;
            } else {
                while (e < lim && m->s[e] == (uint32_t)in->y) e++;
            }
            m->steps += e - pos; /* scanning counts towards the budget */
            if (e - pos < in->a) { ok = false; break; }
            /* shorter runs are retried on failure, except before $ (they cannot end at the end) */
            if (e > pos + in->a && P[pc + 1].op != OP_EOL && !push(m, pc + 1, e - 1, pos + in->a))
                return false; /* lo < BT_PLAIN */
            pos = e;
            pc++;
            break;
        }
        case OP_SPLIT:
            if (!push(m, in->y, pos, BT_PLAIN)) return false;
            pc = in->x;
            break;
        case OP_JMP: pc = in->x; break;
        case OP_BOL:
            ok = pos == m->begin && !m->prev_avail;
            pc++;
            break;
        case OP_EOL:
            ok = pos == m->end;
            pc++;
            break;
        case OP_WORDB:
        case OP_NWORDB: {
            bool a = (pos > m->begin || m->prev_avail) && pos > 0 && is_word(m->s[pos - 1]);
            bool b = pos < m->end && is_word(m->s[pos]);
            ok = (a != b) == (in->op == OP_WORDB);
            pc++;
            break;
        }
        case OP_LOOK: {
            size_t e;
            bool found = run(m, pc + 1, pos, pos, 0, &e);
            if (m->oom || m->over) return false;
            ok = found != in->neg;
            pc = in->x;
            break;
        }
        case OP_LOOKEND:
            m->sp = base;
            *endp = pos;
            return true;
        case OP_MATCH:
            if ((flags & M_NOT_NULL) && pos == start) { ok = false; break; }
            m->sp = base;
            *endp = pos;
            return true;
        }
        if (ok) continue;
        /* backtrack */
        if (m->sp == base) return false;
        bt_entry *b = &((bt_entry *)m->stack->p)[m->sp - 1];
        pc = b->pc;
        pos = b->pos;
        if (b->lo != BT_PLAIN && b->pos > b->lo) b->pos--; /* RUN: next retry one symbol shorter */
        else m->sp--;
    }
}

static bool can_start(const tok_regex *r, uint32_t s) {
    if (s < 256) return (r->first[s >> 5] >> (s & 31)) & 1u;
    return r->first_high;
}

/* X+$ (unbounded run of one class or symbol, then the end): a match starts
 * at the first position whose run reaches the end; the runs that stop short
 * are skipped whole (every start inside them stops at the same place). */
static bool search_run_eol(vm *m, size_t from, unsigned flags, size_t *ms, size_t *me) {
    const rx_inst *in = &m->r->prog[0];
    for (size_t p = from; p <= m->end;) {
        size_t e = p;
        if (in->x >= 0) {
            const rx_class *c = &m->r->cls[in->x];
            while (e < m->end && class_has(c, m->s[e])) e++;
        } else {
            while (e < m->end && m->s[e] == (uint32_t)in->y) e++;
        }
        if (e == m->end && e - p >= in->a && !((flags & M_NOT_NULL) && e == p)) {
            *ms = p;
            *me = e;
            return true;
        }
        if (flags & M_CONTINUOUS) return false;
        p = e > p ? e : p + 1;
    }
    return false;
}

/* regex_search in [from, end): leftmost match. */
static bool search(vm *m, size_t from, unsigned flags, size_t *ms, size_t *me) {
    if (m->r->run_eol) return search_run_eol(m, from, flags, ms, me);
    m->prev_avail = (flags & M_PREV_AVAIL) != 0;
    m->begin = from; /* std::regex_search starts a new target sequence here */
    for (size_t p = from; p <= m->end; p++) {
        if (!m->r->can_start_anywhere && (p == m->end || !can_start(m->r, m->s[p]))) {
            if (flags & M_CONTINUOUS) return false;
            continue;
        }
        m->sp = 0;
        size_t e;
        if (run(m, 0, p, p, flags, &e)) {
            *ms = p;
            *me = e;
            return true;
        }
        if (m->oom || m->over || (flags & M_CONTINUOUS)) return false;
    }
    return false;
}

loom_status tok_offs_push(tok_offs *o, uint32_t len) {
    if (o->n == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 64;
        uint32_t *na = loom_realloc(o->a, nc * sizeof(uint32_t));
        if (!na) return LOOM_ERR_NOMEM;
        o->a = na;
        o->cap = nc;
    }
    o->a[o->n++] = len;
    return LOOM_OK;
}

loom_status tok_regex_split(const tok_regex *r, const uint32_t *sym, const tok_offs *in, tok_offs *out,
                            tok_scratch *sc) {
    vm m = {r, sym, 0, 0, false, &sc->bt, 0, sc->bt.cap / sizeof(bt_entry), false, 0, 0, false};
    size_t start = 0;
    for (size_t k = 0; k < in->n; k++) {
        size_t fb = start, fe = start + in->a[k];
        start = fe;
        /* every table pattern runs in linear time on real text (a few steps per
         * symbol); quadratic cases (e.g. superbpe's lookahead over a digit run of
         * a million digits) stop here with LOOM_ERR_RANGE instead of hanging */
        m.steps = 0;
        m.budget = (uint64_t)(fe - fb) * 2000u + 1000000u;
        m.end = fe;
        size_t last = fb; /* end of the previous piece */
        size_t ms, me;
        unsigned flags = 0;
        bool found = search(&m, fb, flags, &ms, &me);
        while (found) {
            if (ms > last && tok_offs_push(out, (uint32_t)(ms - last))) return LOOM_ERR_NOMEM;
            if (tok_offs_push(out, (uint32_t)(me - ms))) return LOOM_ERR_NOMEM;
            last = me;
            size_t from = me;
            if (me == ms) {
                if (from == fe) break;
                if (search(&m, from, M_NOT_NULL | M_CONTINUOUS | M_PREV_AVAIL, &ms, &me)) continue;
                if (m.oom) return LOOM_ERR_NOMEM;
                if (m.over) return LOOM_ERR_RANGE;
                from++;
            }
            flags |= M_PREV_AVAIL;
            found = search(&m, from, flags, &ms, &me);
        }
        if (m.oom) return LOOM_ERR_NOMEM;
        if (m.over) return LOOM_ERR_RANGE;
        if (last < fe && tok_offs_push(out, (uint32_t)(fe - last))) return LOOM_ERR_NOMEM;
    }
    return LOOM_OK;
}
