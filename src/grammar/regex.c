/* JSON Schema `pattern` (an ECMA-262 regular expression) -> GBNF expression
 * for the content of a JSON string, and the JSON encoding of character sets.
 *
 * The pattern describes the decoded string; the grammar produces its JSON
 * encoding: a character that JSON must escape (", \, controls) is produced as
 * its escape (\" \\ \n \t \b \f \r or \u00XX), every other one raw. Supported:
 * literals, escapes (\t \n \r \f \v \0 \xHH \uHHHH \cX and escaped
 * punctuation), . \d \w \s \D \W \S, classes with ranges and negation,
 * groups ( ), (?: ), (?<name> ), alternation, quantifiers * + ? {n} {n,}
 * {n,m} (a lazy ? suffix is accepted: same language), ^ at the start and $ at
 * the end of a top-level alternative. A pattern is a search (not anchored): an
 * alternative without ^ may be preceded by any characters, one without $
 * followed by any. Unsupported (an error naming it): backreferences,
 * lookaround, \b \B, anchors elsewhere, flags groups.
 *
 * The language produced is a subset of what both ECMA-262 and Python's re
 * (the usual validators) accept: `.` excludes \n \r U+2028 U+2029; \d \w are
 * ASCII; \s is the whitespace both agree on; the complements \D \W \S (and
 * negated classes containing \d \w \s) are restricted to ASCII. */
#include <stdio.h>
#include <string.h>

#include "grammar/grammar_internal.h"
#include "quant/alloc.h"

#define MAX_CP 0x10FFFFu

/* ---------------------------------------------------------------- sets */

typedef struct cset {
    uint32_t r[2 * 64]; /* (lo, hi) pairs */
    uint32_t n;
    bool overflow;
} cset;

static void cs_add(cset *s, uint32_t lo, uint32_t hi) {
    if (s->n >= 64) {
        s->overflow = true;
        return;
    }
    s->r[2 * s->n] = lo;
    s->r[2 * s->n + 1] = hi;
    s->n++;
}

static void cs_norm(cset *s) {
    for (uint32_t i = 1; i < s->n; i++) { /* insertion sort by lo */
        uint32_t lo = s->r[2 * i], hi = s->r[2 * i + 1], j = i;
        while (j > 0 && s->r[2 * (j - 1)] > lo) {
            s->r[2 * j] = s->r[2 * (j - 1)];
            s->r[2 * j + 1] = s->r[2 * (j - 1) + 1];
            j--;
        }
        s->r[2 * j] = lo;
        s->r[2 * j + 1] = hi;
    }
    uint32_t m = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        uint32_t lo = s->r[2 * i], hi = s->r[2 * i + 1];
        if (m && lo <= s->r[2 * (m - 1) + 1] + 1) {
            if (hi > s->r[2 * (m - 1) + 1]) s->r[2 * (m - 1) + 1] = hi;
        } else {
            s->r[2 * m] = lo;
            s->r[2 * m + 1] = hi;
            m++;
        }
    }
    s->n = m;
}

/* Complement within the scalar values (or within ASCII). */
static void cs_complement(cset *s, bool ascii_only) {
    cs_norm(s);
    cset out = {{0}, 0, false};
    uint32_t pieces[2][2] = {{0, 0xD7FF}, {0xE000, MAX_CP}};
    int n_pieces = 2;
    if (ascii_only) pieces[0][1] = 0x7F, n_pieces = 1;
    for (int u = 0; u < n_pieces; u++) {
        uint32_t cur = pieces[u][0], top = pieces[u][1];
        bool done = false;
        for (uint32_t i = 0; i < s->n && !done; i++) {
            uint32_t lo = s->r[2 * i], hi = s->r[2 * i + 1];
            if (hi < cur) continue;
            if (lo > top) break;
            if (lo > cur) cs_add(&out, cur, lo - 1);
            if (hi >= top) done = true;
            else cur = hi + 1;
        }
        if (!done) cs_add(&out, cur, top);
    }
    out.overflow |= s->overflow;
    *s = out;
}

static void class_char(sbuf *o, uint32_t c) {
    if (c >= 0x20 && c < 0x7F && !strchr("[]\\-^\"", (int)c)) sb_putc(o, (char)c);
    else if (c < 0x100) sb_printf(o, "\\x%02X", c);
    else if (c < 0x10000) sb_printf(o, "\\u%04X", c);
    else sb_printf(o, "\\U%08X", c);
}

void json_charset_expr(sbuf *o, const uint32_t *r, uint32_t n) {
    /* raw part: the set minus " \ controls and DEL */
    sbuf raw = {0};
    uint32_t n_raw = 0;
    static const uint32_t rawable[5][2] = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x7E}, {0x80, 0xD7FF}, {0xE000, MAX_CP}};
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; k < 5; k++) {
            uint32_t a = r[2 * i] > rawable[k][0] ? r[2 * i] : rawable[k][0];
            uint32_t b = r[2 * i + 1] < rawable[k][1] ? r[2 * i + 1] : rawable[k][1];
            if (a > b) continue;
            class_char(&raw, a);
            if (b > a) {
                sb_putc(&raw, '-');
                class_char(&raw, b);
            }
            n_raw++;
        }
    /* escaped part */
    const char *esc[128] = {0};
    char uesc[32][8];
    int n_alt = n_raw ? 1 : 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t c = r[2 * i]; c <= r[2 * i + 1] && c < 0x80; c++) {
            if (c == '"') esc[c] = "\\\\\\\"";
            else if (c == '\\') esc[c] = "\\\\\\\\";
            else if (c == '\b') esc[c] = "\\\\b";
            else if (c == '\f') esc[c] = "\\\\f";
            else if (c == '\n') esc[c] = "\\\\n";
            else if (c == '\r') esc[c] = "\\\\r";
            else if (c == '\t') esc[c] = "\\\\t";
            else if (c < 0x20) {
                snprintf(uesc[c], sizeof uesc[c], "\\\\u%04x", c);
                esc[c] = uesc[c];
            } else if (c == 0x7F) {
                esc[c] = "\\\\u007f";
            }
            if (esc[c]) n_alt++;
            if (c == 0x7F) break;
        }
    if (n_alt > 1) sb_putc(o, '(');
    bool first = true;
    if (n_raw) {
        sb_putc(o, '[');
        sb_putn(o, raw.p, raw.n);
        sb_putc(o, ']');
        first = false;
    }
    for (int c = 0; c < 128; c++) {
        if (!esc[c]) continue;
        sb_puts(o, first ? "\"" : " | \"");
        sb_puts(o, esc[c]);
        sb_putc(o, '"');
        first = false;
    }
    if (n_alt > 1) sb_putc(o, ')');
    if (n_alt == 0) sb_puts(o, "[^\\x00-\\U0010FFFF]"); /* empty: the compiler reports it */
    if (raw.oom) o->oom = true;
    sb_free(&raw);
}

/* ---------------------------------------------------------------- parser */

typedef struct rx {
    const char *s, *end, *cur;
    sbuf *o;
    char *msg;
    size_t cap;
    bool failed;
    int depth;
    bool uses_any;
} rx;

static bool rfail(rx *x, const char *what) {
    if (!x->failed) snprintf(x->msg, x->cap, "%s at offset %d", what, (int)(x->cur - x->s));
    x->failed = true;
    return false;
}

static int rpeek(const rx *x, size_t k) { return x->cur + k < x->end ? (unsigned char)x->cur[k] : -1; }

static bool decode(rx *x, uint32_t *cp) {
    const unsigned char *p = (const unsigned char *)x->cur;
    size_t av = (size_t)(x->end - x->cur);
    unsigned c = p[0];
    size_t n;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        x->cur++;
        return true;
    }
    if (c >= 0xC2 && c <= 0xDF) n = 2, v = c & 0x1F, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) n = 3, v = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) n = 4, v = c & 0x07, min = 0x10000;
    else return rfail(x, "invalid UTF-8");
    if (av < n) return rfail(x, "invalid UTF-8");
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return rfail(x, "invalid UTF-8");
        v = (v << 6) | (p[i] & 0x3F);
    }
    if (v < min || v > MAX_CP || (v >= 0xD800 && v <= 0xDFFF)) return rfail(x, "invalid UTF-8");
    *cp = v;
    x->cur += n;
    return true;
}

static int hexv(int c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Shorthand classes. ascii_cut: the class diverges between ECMA and Python
 * outside ASCII (complements are cut to ASCII). */
static bool shorthand(int c, cset *s, bool *neg, bool *ascii_cut) {
    *neg = false;
    *ascii_cut = false;
    switch (c) {
    case 'D': *neg = true; /* fall through */
    case 'd': cs_add(s, '0', '9'); *ascii_cut = true; return true;
    case 'W': *neg = true; /* fall through */
    case 'w':
        cs_add(s, 'a', 'z'), cs_add(s, 'A', 'Z'), cs_add(s, '0', '9'), cs_add(s, '_', '_');
        *ascii_cut = true;
        return true;
    case 'S': *neg = true; /* fall through */
    case 's':
        cs_add(s, '\t', '\r'), cs_add(s, ' ', ' '), cs_add(s, 0xA0, 0xA0), cs_add(s, 0x1680, 0x1680);
        cs_add(s, 0x2000, 0x200A), cs_add(s, 0x2028, 0x2029), cs_add(s, 0x202F, 0x202F);
        cs_add(s, 0x205F, 0x205F), cs_add(s, 0x3000, 0x3000);
        *ascii_cut = true;
        return true;
    default: return false;
    }
}

/* A single-character escape after the backslash (x->cur at the letter). */
static bool escape_char(rx *x, uint32_t *cp) {
    int c = rpeek(x, 0);
    x->cur++;
    switch (c) {
    case 't': *cp = '\t'; return true;
    case 'n': *cp = '\n'; return true;
    case 'r': *cp = '\r'; return true;
    case 'f': *cp = '\f'; return true;
    case 'v': *cp = '\v'; return true;
    case '0':
        if (rpeek(x, 0) >= '0' && rpeek(x, 0) <= '9') return rfail(x, "unsupported octal escape");
        *cp = 0;
        return true;
    case 'x':
    case 'u': {
        int nh = c == 'x' ? 2 : 4;
        uint32_t v = 0;
        if (c == 'u' && rpeek(x, 0) == '{') return rfail(x, "unsupported \\u{...} escape");
        for (int i = 0; i < nh; i++) {
            int h = hexv(rpeek(x, (size_t)i));
            if (h < 0) return rfail(x, "bad hex escape");
            v = v << 4 | (uint32_t)h;
        }
        x->cur += nh;
        if (v >= 0xD800 && v <= 0xDFFF) return rfail(x, "unsupported surrogate escape");
        *cp = v;
        return true;
    }
    case 'c': {
        int l = rpeek(x, 0);
        if (!((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z'))) return rfail(x, "bad \\c escape");
        x->cur++;
        *cp = (uint32_t)(l % 32);
        return true;
    }
    default:
        if (c >= '1' && c <= '9') return rfail(x, "unsupported backreference");
        if (c == 'b' || c == 'B') return rfail(x, "unsupported word boundary \\b");
        if (c == 'k') return rfail(x, "unsupported named backreference");
        if (c == 'p' || c == 'P') return rfail(x, "unsupported Unicode property escape");
        if (c >= 0x21 && c < 0x7F && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) {
            *cp = (uint32_t)c; /* escaped punctuation */
            return true;
        }
        if (c < 0) return rfail(x, "trailing backslash");
        return rfail(x, "unsupported escape");
    }
}

static void emit_set(rx *x, cset *s) {
    cs_norm(s);
    if (s->overflow) {
        rfail(x, "character class too large");
        return;
    }
    json_charset_expr(x->o, s->r, s->n);
}

static bool parse_class(rx *x) {
    x->cur++; /* [ */
    bool neg = false, cut = false;
    if (rpeek(x, 0) == '^') neg = true, x->cur++;
    cset s = {{0}, 0, false};
    bool first = true;
    for (;;) {
        int c = rpeek(x, 0);
        if (c < 0) return rfail(x, "unterminated character class");
        if (c == ']' && !first) break;
        if (c == ']' && first) { /* ECMA: [] is an empty class, [^] any: unsupported */
            return rfail(x, "unsupported empty class []");
        }
        first = false;
        uint32_t lo;
        if (c == '\\') {
            x->cur++;
            cset sh = {{0}, 0, false};
            bool sneg, scut;
            if (shorthand(rpeek(x, 0), &sh, &sneg, &scut)) {
                x->cur++;
                if (sneg) cs_complement(&sh, true);
                for (uint32_t i = 0; i < sh.n; i++) cs_add(&s, sh.r[2 * i], sh.r[2 * i + 1]);
                cut |= scut;
                continue;
            }
            if (rpeek(x, 0) == 'b') { /* \b is backspace inside a class */
                x->cur++;
                lo = 8;
            } else if (rpeek(x, 0) == '-') {
                x->cur++;
                lo = '-';
            } else if (!escape_char(x, &lo)) {
                return false;
            }
        } else if (!decode(x, &lo)) {
            return false;
        }
        uint32_t hi = lo;
        if (rpeek(x, 0) == '-' && rpeek(x, 1) != ']' && rpeek(x, 1) >= 0) {
            x->cur++;
            if (rpeek(x, 0) == '\\') {
                x->cur++;
                cset tmp = {{0}, 0, false};
                bool a, b;
                if (shorthand(rpeek(x, 0), &tmp, &a, &b)) return rfail(x, "unsupported class range to a shorthand");
                if (rpeek(x, 0) == 'b') x->cur++, hi = 8;
                else if (!escape_char(x, &hi)) return false;
            } else if (!decode(x, &hi)) {
                return false;
            }
            if (hi < lo) return rfail(x, "range out of order in character class");
        }
        cs_add(&s, lo, hi);
    }
    x->cur++; /* ] */
    if (neg) cs_complement(&s, cut);
    emit_set(x, &s);
    return !x->failed;
}

static bool parse_alts(rx *x, bool top);

static bool parse_quant(rx *x, size_t atom_start) {
    int c = rpeek(x, 0);
    if (c != '*' && c != '+' && c != '?' && c != '{') return true;
    char q[48];
    if (c == '{') {
        const char *save = x->cur;
        x->cur++;
        unsigned long mn = 0, mx = 0;
        bool has_max = true, digits = false;
        while (rpeek(x, 0) >= '0' && rpeek(x, 0) <= '9') {
            mn = mn * 10 + (unsigned long)(rpeek(x, 0) - '0');
            if (mn > 100000) mn = 100000;
            x->cur++, digits = true;
        }
        if (!digits) {
            x->cur = save;
            return rfail(x, "unsupported '{' (not a quantifier)");
        }
        mx = mn;
        if (rpeek(x, 0) == ',') {
            x->cur++;
            if (rpeek(x, 0) == '}') {
                has_max = false;
            } else {
                mx = 0;
                digits = false;
                while (rpeek(x, 0) >= '0' && rpeek(x, 0) <= '9') {
                    mx = mx * 10 + (unsigned long)(rpeek(x, 0) - '0');
                    if (mx > 100000) mx = 100000;
                    x->cur++, digits = true;
                }
                if (!digits) return rfail(x, "bad quantifier");
            }
        }
        if (rpeek(x, 0) != '}') return rfail(x, "bad quantifier");
        x->cur++;
        if (mn > LOOM_GRAMMAR_MAX_REPEAT || (has_max && mx > LOOM_GRAMMAR_MAX_REPEAT))
            return rfail(x, "repetition count above 2000");
        if (has_max && mx < mn) return rfail(x, "quantifier {n,m} with m < n");
        if (has_max) snprintf(q, sizeof q, "{%lu,%lu}", mn, mx);
        else snprintf(q, sizeof q, "{%lu,}", mn);
    } else {
        x->cur++;
        q[0] = (char)c, q[1] = 0;
    }
    if (rpeek(x, 0) == '?') x->cur++; /* lazy: same language */
    if (rpeek(x, 0) == '*' || rpeek(x, 0) == '+' || rpeek(x, 0) == '?' ||
        (rpeek(x, 0) == '{' && rpeek(x, 1) >= '0' && rpeek(x, 1) <= '9'))
        return rfail(x, "nothing to repeat");
    /* wrap the atom: "( atom )q" */
    sbuf *o = x->o;
    size_t alen = o->n - atom_start;
    sb_putn(o, "  ", 2);
    if (o->oom) return rfail(x, "out of memory");
    memmove(o->p + atom_start + 1, o->p + atom_start, alen);
    o->p[atom_start] = '(';
    o->p[atom_start + 1 + alen] = ')';
    o->n = atom_start + alen + 2;
    sb_puts(o, q);
    return true;
}

/* One alternative: atoms with quantifiers. top: at depth 0 (anchors allowed at the ends). */
static bool parse_seq(rx *x, bool top, bool *anch_start, bool *anch_end) {
    sbuf *o = x->o;
    bool empty = true;
    bool at_start = true;
    for (;;) {
        int c = rpeek(x, 0);
        if (c < 0 || c == '|' || c == ')') break;
        if (c == '^') {
            if (!(top && at_start)) return rfail(x, "unsupported anchor '^' inside the pattern");
            x->cur++;
            *anch_start = true;
            at_start = false;
            continue;
        }
        if (c == '$') {
            x->cur++;
            int n = rpeek(x, 0);
            if (!(top && (n < 0 || n == '|'))) return rfail(x, "unsupported anchor '$' inside the pattern");
            *anch_end = true;
            break;
        }
        at_start = false;
        if (!empty) sb_putc(o, ' ');
        empty = false;
        size_t atom = o->n;
        if (c == '(') {
            x->cur++;
            if (rpeek(x, 0) == '?') {
                if (rpeek(x, 1) == ':') {
                    x->cur += 2;
                } else if (rpeek(x, 1) == '<' && rpeek(x, 2) != '=' && rpeek(x, 2) != '!') {
                    while (rpeek(x, 0) >= 0 && rpeek(x, 0) != '>') x->cur++;
                    if (rpeek(x, 0) != '>') return rfail(x, "bad group name");
                    x->cur++;
                } else if (rpeek(x, 1) == 'P' && rpeek(x, 2) == '<') {
                    return rfail(x, "unsupported group syntax (?P<");
                } else {
                    return rfail(x, "unsupported lookaround or flags group");
                }
            }
            if (++x->depth > 100) return rfail(x, "groups nested too deeply");
            sb_putc(o, '(');
            if (!parse_alts(x, false)) return false;
            if (rpeek(x, 0) != ')') return rfail(x, "missing ')'");
            x->cur++;
            x->depth--;
            sb_putc(o, ')');
        } else if (c == '[') {
            if (!parse_class(x)) return false;
        } else if (c == '.') {
            x->cur++;
            cset s = {{0}, 0, false};
            cs_add(&s, '\n', '\n'), cs_add(&s, '\r', '\r'), cs_add(&s, 0x2028, 0x2029);
            cs_complement(&s, false);
            emit_set(x, &s);
        } else if (c == '\\') {
            x->cur++;
            cset s = {{0}, 0, false};
            bool neg, cut;
            if (shorthand(rpeek(x, 0), &s, &neg, &cut)) {
                x->cur++;
                if (neg) cs_complement(&s, cut);
                emit_set(x, &s);
            } else {
                uint32_t cp;
                if (!escape_char(x, &cp)) return false;
                cs_add(&s, cp, cp);
                emit_set(x, &s);
            }
        } else if (c == '*' || c == '+' || c == '?') {
            return rfail(x, "nothing to repeat");
        } else if (c == '{' && rpeek(x, 1) >= '0' && rpeek(x, 1) <= '9') {
            return rfail(x, "nothing to repeat");
        } else if (c == ']' || c == '}' || c == '{') {
            return rfail(x, "unsupported unescaped bracket");
        } else {
            uint32_t cp;
            if (!decode(x, &cp)) return false;
            cset s = {{0}, 0, false};
            cs_add(&s, cp, cp);
            emit_set(x, &s);
        }
        if (x->failed || !parse_quant(x, atom)) return false;
    }
    if (empty) sb_puts(o, "\"\"");
    return !x->failed;
}

static bool parse_alts(rx *x, bool top) {
    sbuf *o = x->o;
    for (bool first = true;; first = false) {
        if (!first) sb_puts(o, " | ");
        bool as = false, ae = false;
        if (!top) {
            if (!parse_seq(x, false, &as, &ae)) return false;
        } else {
            /* an alternative of the whole pattern: "char*" where it is not anchored */
            sbuf alt = {0};
            x->o = &alt;
            bool ok = parse_seq(x, true, &as, &ae);
            x->o = o;
            if (ok) {
                if (!as) sb_puts(o, "char* ");
                sb_putn(o, alt.p, alt.n);
                if (!ae) sb_puts(o, " char*");
                x->uses_any |= !as || !ae;
                if (alt.oom) o->oom = true;
            }
            sb_free(&alt);
            if (!ok) return false;
        }
        if (rpeek(x, 0) != '|') break;
        x->cur++;
    }
    return !x->failed;
}

bool regex_to_gbnf(const char *pat, size_t len, sbuf *out, bool *uses_any, char *msg, size_t cap) {
    rx x;
    memset(&x, 0, sizeof x);
    x.s = x.cur = pat;
    x.end = pat + len;
    x.o = out;
    x.msg = msg;
    x.cap = cap;
    sb_putc(out, '(');
    if (!parse_alts(&x, true)) return false;
    if (rpeek(&x, 0) == ')') return rfail(&x, "unbalanced ')'");
    if (x.cur != x.end) return rfail(&x, "unexpected character");
    sb_putc(out, ')');
    if (out->oom) return rfail(&x, "out of memory");
    *uses_any = x.uses_any;
    return true;
}
