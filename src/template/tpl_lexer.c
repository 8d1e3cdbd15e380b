/* Template lexer: the rules of jinja2's lexer with trim_blocks and lstrip_blocks on.
 * - newlines are normalised to "\n" and one trailing newline is dropped
 *   (keep_trailing_newline=False);
 * - `{%- {{- {#-` strip all whitespace before the tag, `-%} -}} -#}` all after;
 * - lstrip_blocks: a block or comment tag alone after the start of its line
 *   removes the spaces before it on that line (unless `{%+`);
 * - trim_blocks: one newline after `%}` / `#}` is removed (unless `+%}`);
 * - `{% raw %}...{% endraw %}` is literal text;
 * - inside tags: names, strings (Python escapes), integers (0b/0o/0x, `_`),
 *   floats, operators; `%}` / `}}` only end a tag when brackets are balanced. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpl.h"

typedef struct lexer {
    loom_template *t;
    const char *s;
    size_t n;
    size_t pos;
    /* line tracking */
    size_t lpos;          /* position line/col describe */
    uint32_t line, col;
    bool line_starting;   /* the previous match ended with "\n" */
    ttoken *toks;
    size_t ntoks, cap;
    tpl_err *e;
    char stack[512];      /* bracket balancing */
    int sp;
} lexer;

/* line and column (1-based, in code points) of pos; incremental for increasing positions */
static void locate(lexer *L, size_t pos, uint32_t *line, uint32_t *col) {
    if (pos < L->lpos) { L->lpos = 0; L->line = 1; L->col = 1; }
    for (size_t i = L->lpos; i < pos && i < L->n; i++) {
        if (L->s[i] == '\n') { L->line++; L->col = 1; }
        else if (((unsigned char)L->s[i] & 0xC0) != 0x80) L->col++;
    }
    if (pos > L->lpos) L->lpos = pos;
    *line = L->line;
    *col = L->col;
}

static int lex_fail(lexer *L, size_t pos, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int lex_fail(lexer *L, size_t pos, const char *fmt, ...) {
    locate(L, pos, &L->e->line, &L->e->col);
    L->e->st = LOOM_ERR_FORMAT;
    int k = snprintf(L->e->msg, sizeof L->e->msg, "TemplateSyntaxError: ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(L->e->msg + k, sizeof L->e->msg - (size_t)k, fmt, ap);
    va_end(ap);
    return -1;
}

static ttoken *push(lexer *L, int kind, size_t pos) {
    if (L->ntoks == L->cap) {
        size_t nc = L->cap ? L->cap * 2 : 256;
        ttoken *nt = tpl_arena_alloc(&L->t->arena, nc * sizeof(ttoken));
        if (!nt) { L->e->st = LOOM_ERR_NOMEM; snprintf(L->e->msg, sizeof L->e->msg, "out of memory"); return NULL; }
        if (L->ntoks) memcpy(nt, L->toks, L->ntoks * sizeof(ttoken));
        L->toks = nt;
        L->cap = nc;
    }
    ttoken *t = &L->toks[L->ntoks++];
    memset(t, 0, sizeof *t);
    t->kind = (uint8_t)kind;
    locate(L, pos, &t->line, &t->col);
    return t;
}

static size_t space_len(const char *s, size_t n) { /* length of the Unicode whitespace char at s, 0 if none */
    unsigned char c = (unsigned char)s[0];
    if (c < 0x80) return (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) ? 1 : 0;
    size_t adv;
    uint32_t cp = tpl_utf8_decode(s, n, &adv);
    return tpl_is_space(cp) ? adv : 0;
}

static size_t skip_space(const char *s, size_t n, size_t p) {
    while (p < n) {
        size_t k = space_len(s + p, n - p);
        if (!k) break;
        p += k;
    }
    return p;
}

/* end of s[a, b) after Python's rstrip() */
static size_t rstrip_end(const char *s, size_t a, size_t b) {
    size_t last = a, p = a;
    while (p < b) {
        size_t k = space_len(s + p, b - p);
        if (k) { p += k; continue; }
        size_t adv;
        tpl_utf8_decode(s + p, b - p, &adv);
        p += adv;
        last = p;
    }
    return last;
}

static bool all_space(const char *s, size_t a, size_t b) {
    if (a >= b) return false; /* \s+ needs one character */
    while (a < b) {
        size_t k = space_len(s + a, b - a);
        if (!k) return false;
        a += k;
    }
    return true;
}

/* Emit template data s[a,b) processed for the tag that follows (sign: '-', '+' or 0; lstrip: tag is a
 * block/comment/raw tag). */
static int emit_data(lexer *L, size_t a, size_t b, char sign, bool lstrip_ok) {
    if (sign == '-') {
        b = rstrip_end(L->s, a, b);
    } else if (sign != '+' && lstrip_ok) {
        size_t lp = a;
        for (size_t i = b; i > a; i--)
            if (L->s[i - 1] == '\n') { lp = i; break; }
        if ((lp > a || L->line_starting) && all_space(L->s, lp, b)) b = lp;
    }
    if (b <= a) return 0;
    ttoken *t = push(L, TK_DATA, a);
    if (!t) return -1;
    t->str = tstr_static(&L->t->arena, L->s + a, b - a);
    return t->str ? 0 : -1;
}

static bool starts(const lexer *L, size_t p, const char *lit) {
    size_t k = strlen(lit);
    return p + k <= L->n && memcmp(L->s + p, lit, k) == 0;
}

/* {%[-+]?\s*WORD\s*(?:-%}\s*|%}) at p; returns the end or 0 */
static size_t match_raw_tag(const lexer *L, size_t p, const char *word, bool trim_nl, char *sign_out, char *end_sign) {
    if (!starts(L, p, "{%")) return 0;
    size_t q = p + 2;
    char sign = 0;
    if (q < L->n && (L->s[q] == '-' || L->s[q] == '+')) sign = L->s[q++];
    q = skip_space(L->s, L->n, q);
    if (!starts(L, q, word)) return 0;
    q += strlen(word);
    q = skip_space(L->s, L->n, q);
    if (trim_nl && starts(L, q, "+%}")) { *end_sign = '+'; q += 3; }
    else if (starts(L, q, "-%}")) { *end_sign = '-'; q = skip_space(L->s, L->n, q + 3); }
    else if (starts(L, q, "%}")) {
        *end_sign = 0;
        q += 2;
        if (trim_nl && q < L->n && L->s[q] == '\n') q++;
    } else return 0;
    *sign_out = sign;
    return q;
}

static bool is_ident_start(const lexer *L, size_t p, size_t *adv) {
    unsigned char c = (unsigned char)L->s[p];
    if (c < 0x80) { *adv = 1; return c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }
    uint32_t cp = tpl_utf8_decode(L->s + p, L->n - p, adv);
    return tpl_is_alpha(cp);
}

static bool is_ident_cont(const lexer *L, size_t p, size_t *adv) {
    unsigned char c = (unsigned char)L->s[p];
    if (c < 0x80) { *adv = 1; return c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || (c >= '0' && c <= '9'); }
    uint32_t cp = tpl_utf8_decode(L->s + p, L->n - p, adv);
    return tpl_is_alpha(cp) || tpl_is_numeric(cp);
}

static bool isd(char c) { return c >= '0' && c <= '9'; }

/* (\d+_)*\d+ at p: returns end or p */
static size_t digits_us(const lexer *L, size_t p) {
    size_t q = p;
    if (q >= L->n || !isd(L->s[q])) return p;
    while (q < L->n && isd(L->s[q])) {
        q++;
        if (q + 1 < L->n && L->s[q] == '_' && isd(L->s[q + 1])) q++;
    }
    return q;
}

static size_t match_float(const lexer *L, size_t p) {
    if (p > 0 && L->s[p - 1] == '.') return 0;
    size_t q = digits_us(L, p);
    if (q == p) return 0;
    size_t r = q;
    bool frac = false;
    if (r < L->n && L->s[r] == '.') {
        size_t f = digits_us(L, r + 1);
        if (f > r + 1) { r = f; frac = true; }
    }
    if (r < L->n && (L->s[r] == 'e' || L->s[r] == 'E')) {
        size_t e = r + 1;
        if (e < L->n && (L->s[e] == '+' || L->s[e] == '-')) e++;
        size_t f = digits_us(L, e);
        if (f > e) return f;
    }
    return frac ? r : 0;
}

static size_t match_int(const lexer *L, size_t p, int *base) {
    const char *s = L->s;
    size_t n = L->n;
    if (s[p] == '0' && p + 1 < n && strchr("bBoOxX", s[p + 1]) && s[p + 1]) {
        char k = (char)(s[p + 1] | 0x20);
        *base = k == 'b' ? 2 : k == 'o' ? 8 : 16;
        size_t q = p + 2, last = 0;
        for (;;) {
            size_t r = q;
            if (r < n && s[r] == '_') r++;
            if (r >= n) break;
            char ch = s[r];
            bool ok = *base == 2 ? (ch == '0' || ch == '1') : *base == 8 ? (ch >= '0' && ch <= '7')
                                                                          : (isd(ch) || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f'));
            if (!ok) break;
            q = r + 1;
            last = q;
        }
        if (last) return last;
    }
    *base = 10;
    if (s[p] >= '1' && s[p] <= '9') {
        size_t q = p + 1;
        for (;;) {
            size_t r = q;
            if (r < n && s[r] == '_') r++;
            if (r < n && isd(s[r])) q = r + 1;
            else break;
        }
        return q;
    }
    if (s[p] == '0') {
        size_t q = p + 1;
        for (;;) {
            size_t r = q;
            if (r < n && s[r] == '_') r++;
            if (r < n && s[r] == '0') q = r + 1;
            else break;
        }
        return q;
    }
    return 0;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = (char)(c | 0x20);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Python's "unicode-escape" of the literal body (after backslashreplace) */
static int unescape(lexer *L, size_t a, size_t b, size_t at, tstr **out) {
    char *buf = malloc(b - a + 8);
    if (!buf) { L->e->st = LOOM_ERR_NOMEM; snprintf(L->e->msg, sizeof L->e->msg, "out of memory"); return -1; }
    size_t k = 0;
    const char *s = L->s;
    uint32_t pending_hi = 0;
    for (size_t i = a; i < b;) {
        if (s[i] != '\\' || i + 1 >= b) {
            buf[k++] = s[i++];
            continue;
        }
        char e = s[i + 1];
        uint32_t cp = 0;
        int need = 0;
        i += 2;
        switch (e) {
        case '\n': continue;
        case '\\': buf[k++] = '\\'; continue;
        case '\'': buf[k++] = '\''; continue;
        case '"': buf[k++] = '"'; continue;
        case 'a': buf[k++] = 7; continue;
        case 'b': buf[k++] = 8; continue;
        case 'f': buf[k++] = 12; continue;
        case 'n': buf[k++] = '\n'; continue;
        case 'r': buf[k++] = '\r'; continue;
        case 't': buf[k++] = '\t'; continue;
        case 'v': buf[k++] = 11; continue;
        case 'x': need = 2; break;
        case 'u': need = 4; break;
        case 'U': need = 8; break;
        case 'N':
            free(buf);
            return lex_fail(L, at, "(unicode error) 'unicodeescape' codec can't decode bytes: \\N escapes are not supported");
        default:
            if (e >= '0' && e <= '7') {
                cp = (uint32_t)(e - '0');
                for (int j = 0; j < 2 && i < b && s[i] >= '0' && s[i] <= '7'; j++) cp = cp * 8 + (uint32_t)(s[i++] - '0');
                k += loom_utf8_encode(cp, (unsigned char *)buf + k);
                continue;
            }
            if ((unsigned char)e >= 0x80) {
                /* backslashreplace turned the character into its escape: keep it as text */
                size_t adv;
                uint32_t c2 = tpl_utf8_decode(s + i - 1, b - (i - 1), &adv);
                char tmp[16];
                int m = c2 < 0x100 ? snprintf(tmp, sizeof tmp, "\\x%02x", c2)
                        : c2 < 0x10000 ? snprintf(tmp, sizeof tmp, "\\u%04x", c2) : snprintf(tmp, sizeof tmp, "\\U%08x", c2);
                char *nb = realloc(buf, (b - a) + 8 + k + (size_t)m + 16);
                if (!nb) { free(buf); L->e->st = LOOM_ERR_NOMEM; return -1; }
                buf = nb;
                memcpy(buf + k, tmp, (size_t)m);
                k += (size_t)m;
                i += adv - 1;
                continue;
            }
            buf[k++] = '\\';
            buf[k++] = e;
            continue;
        }
        for (int j = 0; j < need; j++) {
            int h = i < b ? hexval(s[i]) : -1;
            if (h < 0) {
                free(buf);
                return lex_fail(L, at, "(unicode error) 'unicodeescape' codec can't decode bytes: truncated \\%cXXXX escape", e);
            }
            cp = cp * 16 + (uint32_t)h;
            i++;
        }
        if (cp > 0x10FFFF) {
            free(buf);
            return lex_fail(L, at, "(unicode error) 'unicodeescape' codec can't decode bytes: illegal Unicode character");
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) { pending_hi = cp; continue; }
        if (cp >= 0xDC00 && cp <= 0xDFFF && pending_hi) {
            cp = 0x10000 + ((pending_hi - 0xD800) << 10) + (cp - 0xDC00);
            pending_hi = 0;
        } else if (cp >= 0xD800 && cp <= 0xDFFF) {
            cp = 0xFFFD;
        }
        k += loom_utf8_encode(cp, (unsigned char *)buf + k);
    }
    *out = tstr_static(&L->t->arena, buf, k);
    free(buf);
    return *out ? 0 : -1;
}

static const char single_ops[] = "+-/*%~[](){}<>=.:|,;";

/* Tokens inside {{ }} or {% %} until the end marker. block: true for {% %}. */
static int lex_tag(lexer *L, bool block) {
    const char *s = L->s;
    size_t n = L->n;
    L->sp = 0;
    for (;;) {
        size_t p = L->pos;
        if (p >= n) return 0; /* the parser reports the unexpected end */
        if (L->sp == 0) {
            size_t e = 0;
            bool nl_trim = false;
            if (block) {
                if (starts(L, p, "+%}")) e = p + 3;
                else if (starts(L, p, "-%}")) e = skip_space(s, n, p + 3);
                else if (starts(L, p, "%}")) { e = p + 2; nl_trim = true; }
            } else {
                if (starts(L, p, "-}}")) e = skip_space(s, n, p + 3);
                else if (starts(L, p, "}}")) e = p + 2;
            }
            if (e) {
                if (nl_trim && e < n && s[e] == '\n') e++;
                if (!push(L, block ? TK_BLOCK_END : TK_VAR_END, p)) return -1;
                L->line_starting = s[e - 1] == '\n';
                L->pos = e;
                return 0;
            }
        }
        size_t ws = skip_space(s, n, p);
        if (ws > p) {
            L->line_starting = s[ws - 1] == '\n';
            L->pos = ws;
            continue;
        }
        L->line_starting = false;
        char ch = s[p];
        size_t adv;
        if (isd(ch)) {
            size_t e = match_float(L, p);
            if (e) {
                ttoken *t = push(L, TK_FLOAT, p);
                if (!t) return -1;
                char tmp[128];
                size_t k = 0;
                for (size_t i = p; i < e && k < sizeof tmp - 1; i++)
                    if (s[i] != '_') tmp[k++] = s[i];
                tmp[k] = 0;
                t->fval = strtod(tmp, NULL);
                t->s = s + p;
                t->n = (uint32_t)(e - p);
                L->pos = e;
                continue;
            }
            int base;
            e = match_int(L, p, &base);
            if (e) {
                ttoken *t = push(L, TK_INT, p);
                if (!t) return -1;
                uint64_t v = 0;
                bool big = false;
                size_t i = p + (base != 10 ? 2 : 0);
                for (; i < e; i++) {
                    if (s[i] == '_') continue;
                    int h = hexval(s[i]);
                    if (v > (UINT64_MAX - (uint64_t)h) / (uint64_t)base) big = true;
                    v = v * (uint64_t)base + (uint64_t)h;
                }
                if (v > (uint64_t)INT64_MAX) big = true;
                t->ival = (int64_t)v;
                t->big = big;
                t->s = s + p;
                t->n = (uint32_t)(e - p);
                L->pos = e;
                continue;
            }
        }
        if (is_ident_start(L, p, &adv)) {
            size_t e = p + adv;
            while (e < n && is_ident_cont(L, e, &adv)) e += adv;
            ttoken *t = push(L, TK_NAME, p);
            if (!t) return -1;
            t->s = s + p;
            t->n = (uint32_t)(e - p);
            L->pos = e;
            continue;
        }
        if (ch == '\'' || ch == '"') {
            size_t e = p + 1;
            while (e < n && s[e] != ch) e += (s[e] == '\\' && e + 1 < n) ? 2 : 1;
            if (e < n) {
                ttoken *t = push(L, TK_STRING, p);
                if (!t) return -1;
                if (unescape(L, p + 1, e, p, &t->str) < 0) return -1;
                t->s = s + p;
                t->n = (uint32_t)(e + 1 - p);
                L->pos = e + 1;
                continue;
            }
        }
        int op = 0;
        size_t olen = 2;
        if (starts(L, p, "//")) op = OPC_FLOORDIV;
        else if (starts(L, p, "**")) op = OPC_POW;
        else if (starts(L, p, "==")) op = OPC_EQ;
        else if (starts(L, p, "!=")) op = OPC_NE;
        else if (starts(L, p, ">=")) op = OPC_GE;
        else if (starts(L, p, "<=")) op = OPC_LE;
        else if (ch && strchr(single_ops, ch)) { op = (unsigned char)ch; olen = 1; }
        if (op) {
            if (op == '{' || op == '(' || op == '[') {
                if (L->sp >= (int)sizeof L->stack) return lex_fail(L, p, "brackets nested too deep");
                L->stack[L->sp++] = op == '{' ? '}' : op == '(' ? ')' : ']';
            } else if (op == '}' || op == ')' || op == ']') {
                if (L->sp == 0) return lex_fail(L, p, "unexpected '%c'", op);
                char want = L->stack[--L->sp];
                if (want != op) return lex_fail(L, p, "unexpected '%c', expected '%c'", op, want);
            }
            ttoken *t = push(L, TK_OP, p);
            if (!t) return -1;
            t->op = (uint8_t)op;
            t->s = s + p;
            t->n = (uint32_t)olen;
            L->pos = p + olen;
            continue;
        }
        if ((unsigned char)ch < 0x80) {
            if (ch == '\'') return lex_fail(L, p, "unexpected char \"'\" at %zu", p);
            if ((unsigned char)ch < 0x20 || ch == 0x7F) return lex_fail(L, p, "unexpected char '\\x%02x' at %zu", (unsigned char)ch, p);
            return lex_fail(L, p, "unexpected char '%c' at %zu", ch, p);
        }
        size_t a2;
        tpl_utf8_decode(s + p, n - p, &a2);
        return lex_fail(L, p, "unexpected char '%.*s' at %zu", (int)a2, s + p, p);
    }
}

int tpl_lex(loom_template *t, const char *src, size_t n, ttoken **toks, size_t *ntoks, tpl_err *e) {
    /* normalise newlines; drop one trailing newline */
    char *s = tpl_arena_alloc(&t->arena, n + 1);
    if (!s) { e->st = LOOM_ERR_NOMEM; snprintf(e->msg, sizeof e->msg, "out of memory"); return -1; }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (src[i] == '\r') {
            s[k++] = '\n';
            if (i + 1 < n && src[i + 1] == '\n') i++;
        } else s[k++] = src[i];
    }
    if (k && s[k - 1] == '\n') k--;
    s[k] = 0;
    lexer L = {0};
    L.t = t;
    L.s = s;
    L.n = k;
    L.e = e;
    L.line = 1;
    L.col = 1;
    L.line_starting = true;
    while (L.pos < L.n) {
        /* next tag opener */
        size_t p = L.pos, tag = L.n;
        int kind = 0;
        for (size_t i = p; i + 1 < L.n; i++) {
            const char *hit = memchr(s + i, '{', L.n - 1 - i);
            if (!hit) break;
            i = (size_t)(hit - s);
            char nx = s[i + 1];
            if (nx == '{' || nx == '%' || nx == '#') { tag = i; kind = nx; break; }
        }
        if (kind == 0) { /* the rest is data */
            if (emit_data(&L, p, L.n, 0, false) < 0) return -1;
            L.pos = L.n;
            break;
        }
        size_t q = tag + 2;
        char sign = 0;
        if (q < L.n && (s[q] == '-' || s[q] == '+')) sign = s[q++];
        if (kind == '%') {
            char rsign, rend;
            size_t rb = match_raw_tag(&L, tag, "raw", false, &rsign, &rend);
            if (rb) {
                if (emit_data(&L, p, tag, rsign, true) < 0) return -1;
                L.line_starting = s[rb - 1] == '\n';
                /* find {% endraw %} */
                size_t body = rb, er = 0, ee = 0;
                char esign = 0, eend = 0;
                for (size_t i = body; i + 1 < L.n; i++) {
                    if (s[i] == '{' && s[i + 1] == '%') {
                        ee = match_raw_tag(&L, i, "endraw", true, &esign, &eend);
                        if (ee) { er = i; break; }
                    }
                }
                if (!ee) return lex_fail(&L, tag, "Missing end of raw directive");
                if (emit_data(&L, body, er, esign, true) < 0) return -1;
                L.line_starting = s[ee - 1] == '\n';
                L.pos = ee;
                continue;
            }
        }
        if (emit_data(&L, p, tag, sign, kind != '{') < 0) return -1;
        L.line_starting = false;
        if (kind == '#') {
            size_t h = 0;
            for (size_t i = q; i + 1 < L.n; i++)
                if (s[i] == '#' && s[i + 1] == '}') { h = i; break; }
            if (!h && !(q + 1 < L.n && s[q] == '#' && s[q + 1] == '}')) return lex_fail(&L, tag, "Missing end of comment tag");
            size_t e2;
            if (h > q && s[h - 1] == '-') e2 = skip_space(s, L.n, h + 2);
            else if (h > q && s[h - 1] == '+') e2 = h + 2;
            else {
                e2 = h + 2;
                if (e2 < L.n && s[e2] == '\n') e2++;
            }
            L.line_starting = s[e2 - 1] == '\n';
            L.pos = e2;
            continue;
        }
        if (!push(&L, kind == '{' ? TK_VAR_BEGIN : TK_BLOCK_BEGIN, tag)) return -1;
        L.pos = q;
        if (lex_tag(&L, kind == '%') < 0) return -1;
    }
    if (!push(&L, TK_EOF, L.n)) return -1;
    *toks = L.toks;
    *ntoks = L.ntoks;
    return 0;
}
