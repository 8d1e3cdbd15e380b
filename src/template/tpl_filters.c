/* jinja2's builtin filters and tests (jinja2/filters.py, tests.py) with Python
 * semantics: generators where jinja2 returns generators (map, select, reject,
 * selectattr, rejectattr, unique, items, batch, slice), stable sorts comparing with
 * `<`, case-insensitive keys by default, attribute paths "a.b.0", and the
 * transformers tojson(x, ensure_ascii=False, indent=None, separators=None,
 * sort_keys=False). wordwrap, urlize and random are refused (not deterministic or
 * not worth their weight in a chat template); the rest is implemented. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpl.h"

enum {
    F_ABS, F_ATTR, F_BATCH, F_CAPITALIZE, F_CENTER, F_COUNT, F_D, F_DEFAULT, F_DICTSORT, F_E, F_ESCAPE,
    F_FILESIZEFORMAT, F_FIRST, F_FLOAT, F_FORCEESCAPE, F_FORMAT, F_GROUPBY, F_INDENT, F_INT, F_ITEMS, F_JOIN,
    F_LAST, F_LENGTH, F_LIST, F_LOWER, F_MAP, F_MAX, F_MIN, F_PPRINT, F_RANDOM, F_REJECT, F_REJECTATTR, F_REPLACE,
    F_REVERSE, F_ROUND, F_SAFE, F_SELECT, F_SELECTATTR, F_SLICE, F_SORT, F_STRING, F_STRIPTAGS, F_SUM, F_TITLE,
    F_TOJSON, F_TRIM, F_TRUNCATE, F_UNIQUE, F_UPPER, F_URLENCODE, F_URLIZE, F_WORDCOUNT, F_WORDWRAP, F_XMLATTR,
    F_COUNT_
};
static const char *const filter_names[F_COUNT_] = {
    "abs", "attr", "batch", "capitalize", "center", "count", "d", "default", "dictsort", "e", "escape",
    "filesizeformat", "first", "float", "forceescape", "format", "groupby", "indent", "int", "items", "join",
    "last", "length", "list", "lower", "map", "max", "min", "pprint", "random", "reject", "rejectattr", "replace",
    "reverse", "round", "safe", "select", "selectattr", "slice", "sort", "string", "striptags", "sum", "title",
    "tojson", "trim", "truncate", "unique", "upper", "urlencode", "urlize", "wordcount", "wordwrap", "xmlattr"};

enum {
    T_BOOLEAN, T_CALLABLE, T_DEFINED, T_DIVISIBLEBY, T_EQ, T_EQUALTO, T_EQ2, T_ESCAPED, T_EVEN, T_FALSE, T_FILTER,
    T_FLOAT, T_GE, T_GE2, T_GT, T_GREATERTHAN, T_GT2, T_IN, T_INTEGER, T_ITERABLE, T_LE, T_LE2, T_LOWER, T_LT,
    T_LESSTHAN, T_LT2, T_MAPPING, T_NE, T_NE2, T_NONE, T_NUMBER, T_ODD, T_SAMEAS, T_SEQUENCE, T_STRING, T_TEST,
    T_TRUE, T_UNDEFINED, T_UPPER, T_COUNT_
};
static const char *const test_names[T_COUNT_] = {
    "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "==", "escaped", "even", "false", "filter",
    "float", "ge", ">=", "gt", "greaterthan", ">", "in", "integer", "iterable", "le", "<=", "lower", "lt",
    "lessthan", "<", "mapping", "ne", "!=", "none", "number", "odd", "sameas", "sequence", "string", "test",
    "true", "undefined", "upper"};

static int find_name(const char *const *tab, int n, const char *name, size_t len) {
    for (int i = 0; i < n; i++)
        if (strlen(tab[i]) == len && !memcmp(tab[i], name, len)) return i;
    return -1;
}
int tpl_filter_id(const char *name, size_t n) { return find_name(filter_names, F_COUNT_, name, n); }
int tpl_test_id(const char *name, size_t n) { return find_name(test_names, T_COUNT_, name, n); }

/* ------------------------------------------------------------------ helpers */

static int soft_str(tpl_ctx *c, tval v, tstr **out) { return tv_str_of(c, v, out); }

static int mk_list(tpl_ctx *c, const tval *v, uint32_t n, int kind, tval *out) {
    tlist *l = tl_new(c, n);
    if (!l) return -1;
    if (n) memcpy(l->v, v, n * sizeof(tval));
    if (tl_finish_depth(c, l) < 0) return -1;
    *out = tv_list(l, kind);
    return 0;
}

static tval lower_if_str(tpl_ctx *c, tval v, bool *err) {
    if (v.k != TV_STR) return v;
    tstr *r;
    if (tpl_case_convert(c, v.u.s, CASE_LOWER, &r) < 0) { *err = true; return v; }
    return tv_str(r);
}

/* environment.getitem over an attribute path "a.b.0" */
static int attr_path(tpl_ctx *c, tval item, tval attribute, tval dflt, tval *out) {
    if (tv_is_missing(attribute) || attribute.k == TV_NONE) { *out = item; return 0; }
    if (attribute.k != TV_STR) {
        if (tpl_getitem(c, item, attribute, out) < 0) return -1;
        if (!tv_is_missing(dflt) && dflt.k != TV_NONE && out->k == TV_UNDEF) *out = dflt;
        return 0;
    }
    const tstr *a = attribute.u.s;
    size_t i = 0;
    tval cur = item;
    for (;;) {
        size_t j = i;
        while (j < a->len && a->data[j] != '.') j++;
        bool digits = j > i;
        for (size_t k = i; k < j; k++)
            if (a->data[k] < '0' || a->data[k] > '9') digits = false;
        tval key;
        if (digits) key = tv_int(strtoll(a->data + i, NULL, 10));
        else {
            tstr *ks = tstr_new(c, a->data + i, j - i);
            if (!ks) return -1;
            key = tv_str(ks);
        }
        if (tpl_getitem(c, cur, key, &cur) < 0) return -1;
        if (!tv_is_missing(dflt) && dflt.k != TV_NONE && cur.k == TV_UNDEF) cur = dflt;
        if (j >= a->len) break;
        i = j + 1;
    }
    *out = cur;
    return 0;
}

/* stable merge sort of idx[] by keys[] with Python's `<` (reverse: comparisons reversed) */
static int msort(tpl_ctx *c, uint32_t *idx, uint32_t *tmp, uint32_t n, const tval *keys, bool reverse) {
    if (n < 2) return 0;
    if (tpl_charge(c, n / 2) < 0) return -1; /* ~n comparisons per level: n log n over the recursion */
    uint32_t m = n / 2;
    if (msort(c, idx, tmp, m, keys, reverse) < 0 || msort(c, idx + m, tmp, n - m, keys, reverse) < 0) return -1;
    uint32_t i = 0, j = m, k = 0;
    while (i < m && j < n) {
        bool lt;
        /* take the right element first only when right < left (reverse: left < right) */
        if (reverse ? tv_lt(c, keys[idx[i]], keys[idx[j]], &lt) < 0 : tv_lt(c, keys[idx[j]], keys[idx[i]], &lt) < 0) return -1;
        tmp[k++] = lt ? idx[j++] : idx[i++];
    }
    while (i < m) tmp[k++] = idx[i++];
    while (j < n) tmp[k++] = idx[j++];
    memcpy(idx, tmp, n * sizeof(uint32_t));
    return 0;
}

static int sorted_by(tpl_ctx *c, const tval *items, int64_t n, const tval *keys, bool reverse, tval *out) {
    uint32_t *idx = tpl_alloc(c, ((size_t)n + 1) * sizeof(uint32_t)), *tmp = tpl_alloc(c, ((size_t)n + 1) * sizeof(uint32_t));
    tlist *l = tl_new(c, (uint32_t)n);
    if (!idx || !tmp || !l) return -1;
    for (uint32_t i = 0; i < n; i++) idx[i] = i;
    if (msort(c, idx, tmp, (uint32_t)n, keys, reverse) < 0) return -1;
    for (uint32_t i = 0; i < n; i++) l->v[i] = items[idx[i]];
    if (tl_finish_depth(c, l) < 0) return -1;
    *out = tv_list(l, LK_LIST);
    return 0;
}

/* key for sort/unique/min/max/groupby: attribute path(s), lower-cased unless case_sensitive */
static int make_key(tpl_ctx *c, tval item, tval attribute, bool multi, bool case_sensitive, tval dflt, tval *out) {
    bool err = false;
    if (multi && attribute.k == TV_STR && memchr(attribute.u.s->data, ',', attribute.u.s->len)) {
        tval parts[32];
        uint32_t np = 0;
        const tstr *a = attribute.u.s;
        size_t i = 0;
        while (i <= a->len && np < 32) {
            size_t j = i;
            while (j < a->len && a->data[j] != ',') j++;
            tstr *ps = tstr_new(c, a->data + i, j - i);
            if (!ps || attr_path(c, item, tv_str(ps), tv_missing(), &parts[np]) < 0) return -1;
            if (!case_sensitive) parts[np] = lower_if_str(c, parts[np], &err);
            np++;
            i = j + 1;
        }
        if (err) return -1;
        return mk_list(c, parts, np, LK_LIST, out);
    }
    if (attr_path(c, item, attribute, dflt, out) < 0) return -1;
    if (!case_sensitive) *out = lower_if_str(c, *out, &err);
    if (multi && !tv_is_missing(attribute) && attribute.k != TV_NONE) return mk_list(c, out, 1, LK_LIST, out) < 0 || err ? -1 : 0;
    return err ? -1 : 0;
}

static int need_iter(tpl_ctx *c, tval v, const tval **items, int64_t *n) { return tv_iter(c, v, items, n); }

static int html_escape(tpl_ctx *c, tval v, tval *out) {
    tstr *s;
    if (soft_str(c, v, &s) < 0) return -1;
    tbuf b = {0};
    for (uint32_t i = 0; i < s->len; i++) {
        char ch = s->data[i];
        int rc;
        switch (ch) {
        case '&': rc = tb_puts(c, &b, "&amp;"); break;
        case '<': rc = tb_puts(c, &b, "&lt;"); break;
        case '>': rc = tb_puts(c, &b, "&gt;"); break;
        case '"': rc = tb_puts(c, &b, "&#34;"); break;
        case '\'': rc = tb_puts(c, &b, "&#39;"); break;
        default: rc = tb_putc(c, &b, ch); break;
        }
        if (rc < 0) { tb_free(c, &b); return -1; }
    }
    tstr *r = tstr_taint_like(c, &b, s);
    if (!r) return -1;
    *out = tv_str(r);
    return 0;
}

int tpl_html_escape(tpl_ctx *c, tval v, tval *out) {
    if (tv_is_markup(v)) { *out = v; return 0; }
    if (html_escape(c, v, out) < 0) return -1;
    out->sub = 1;
    return 0;
}

/* Python's _PyUnicode_TransformDecimalAndSpaceToASCII, which int(str) and float(str)
 * apply first: Unicode white space becomes ' ', decimal digits (any script) become
 * '0'..'9', any other non-ASCII character makes the literal invalid (NULL). A run of
 * white space is written as one ' ' (it is stripped at the ends and invalid inside
 * either way), so only the digits and signs count against cap. */
static const char *number_ascii(const tstr *s, char *buf, size_t cap, size_t *n) {
    if (s->ascii) { *n = s->len; return s->data; }
    size_t k = 0;
    for (size_t i = 0; i < s->len;) {
        size_t adv;
        uint32_t cp = tpl_utf8_decode(s->data + i, s->len - i, &adv);
        i += adv;
        int dv;
        bool sp = cp < 0x80 ? (cp == ' ' || (cp >= 9 && cp <= 13)) : tpl_is_space(cp);
        if (sp && k && buf[k - 1] == ' ') continue;
        if (k + 1 >= cap) return NULL;
        if (sp) buf[k++] = ' ';
        else if (cp < 0x80) buf[k++] = (char)cp;
        else if ((dv = tpl_decimal_value(cp)) >= 0) buf[k++] = (char)('0' + dv);
        else return NULL;
    }
    buf[k] = 0;
    *n = k;
    return buf;
}

/* Py_ISSPACE: what int() / float() strip after the transformation above */
static bool py_num_space(char ch) { return ch == ' ' || (ch >= 9 && ch <= 13); }

/* The literal int() / float() parse: transformed, then stripped to d[*a, *e). */
static const char *number_text(const tstr *str, char *nb, size_t cap, size_t *a, size_t *e) {
    const char *d = number_ascii(str, nb, cap, e);
    if (!d) return NULL;
    *a = 0;
    while (*a < *e && py_num_space(d[*a])) (*a)++;
    while (*e > *a && py_num_space(d[*e - 1])) (*e)--;
    return d;
}

/* Python float(str) */
static bool parse_py_float(const tstr *str, double *out) {
    char nb[320];
    size_t a, e;
    const char *d = number_text(str, nb, sizeof nb, &a, &e);
    if (!d) return false;
    if (a == e || e - a > 300) return false;
    char buf[320];
    size_t k = 0;
    for (size_t i = a; i < e; i++) {
        char ch = d[i];
        if (ch == '_') {
            if (i == a || i + 1 == e || !(d[i - 1] >= '0' && d[i - 1] <= '9') ||
                !(d[i + 1] >= '0' && d[i + 1] <= '9'))
                return false;
            continue;
        }
        buf[k++] = ch;
    }
    buf[k] = 0;
    const char *p = buf;
    if (*p == '+' || *p == '-') p++;
    /* strtod accepts hex floats and "infinity"/"nan(...)"; Python accepts inf/infinity/nan only */
    if ((p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) || strchr(buf, '(')) return false;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (*end) return false;
    *out = v;
    return true;
}

/* Python int(str, base) */
static bool parse_py_int(const tstr *str, int base, int64_t *out) {
    char nb[320];
    size_t a, e;
    const char *d = number_text(str, nb, sizeof nb, &a, &e);
    if (!d) return false;
    bool neg = false;
    if (a < e && (d[a] == '+' || d[a] == '-')) neg = d[a++] == '-';
    if (base == 0 || base == 16 || base == 8 || base == 2) {
        if (e - a > 2 && d[a] == '0') {
            char p = (char)(d[a + 1] | 0x20);
            int pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
            if (pb && (base == 0 || base == pb)) { base = pb; a += 2; if (a < e && d[a] == '_') a++; }
        }
        if (base == 0) base = 10;
    }
    if (a == e) return false;
    uint64_t v = 0;
    bool prev_us = true;
    for (size_t i = a; i < e; i++) {
        char ch = d[i];
        if (ch == '_') { if (prev_us) return false; prev_us = true; continue; }
        int d = ch >= '0' && ch <= '9' ? ch - '0' : (ch | 0x20) >= 'a' && (ch | 0x20) <= 'z' ? (ch | 0x20) - 'a' + 10 : 99;
        if (d >= base) return false;
        if (v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base) return false;
        v = v * (uint64_t)base + (uint64_t)d;
        prev_us = false;
    }
    if (prev_us) return false;
    if (v > (uint64_t)INT64_MAX + (neg ? 1u : 0u)) return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

static int do_indent(tpl_ctx *c, tval v, tval width, tval first, tval blank, tval *out) {
    if (v.k != TV_STR) {
        if (v.k == TV_UNDEF) return tpl_undef_fail(c, v);
        return tpl_fail(c, X_TYPE, "unsupported operand type(s) for +=: '%s' and 'str'", tv_type_name(v));
    }
    const tstr *s = v.u.s;
    char ind_buf[256];
    const char *ind = "    ";
    size_t il = 4;
    if (width.k == TV_STR) { ind = width.u.s->data; il = width.u.s->len; }
    else if (!tv_is_missing(width)) {
        int64_t w = width.k == TV_BOOL ? width.u.b : width.k == TV_INT ? width.u.i : -1;
        if (width.k != TV_INT && width.k != TV_BOOL) return tpl_fail(c, X_TYPE, "can't multiply sequence by non-int of type '%s'", tv_type_name(width));
        if (w < 0) w = 0;
        if (w > (int64_t)sizeof ind_buf) return tpl_fail(c, X_LIMIT, "indent width too large");
        memset(ind_buf, ' ', (size_t)w);
        ind = ind_buf;
        il = (size_t)w;
    }
    bool is_first = !tv_is_missing(first) && tv_truthy(first), is_blank = !tv_is_missing(blank) && tv_truthy(blank);
    tbuf b = {0};
    int rc = 0;
    if (is_first) rc |= tb_put(c, &b, ind, il);
    /* walk the lines of s + "\n" as str.splitlines() */
    size_t i = 0, start = 0;
    int line = 0;
    while (i <= s->len && !rc) {
        bool at_end = i == s->len;
        size_t adv = 1;
        uint32_t cp = at_end ? '\n' : tpl_utf8_decode(s->data + i, s->len - i, &adv);
        bool br = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D || cp == 0x1E ||
                  cp == 0x85 || cp == 0x2028 || cp == 0x2029;
        if (!br) { i += adv; continue; }
        size_t eol = i + adv;
        if (!at_end && cp == '\r' && eol < s->len && s->data[eol] == '\n') eol++;
        /* line = s[start, i) */
        if (line > 0) {
            rc |= tb_putc(c, &b, '\n');
            if (is_blank || i > start) rc |= tb_put(c, &b, ind, il);
        }
        if (!rc) rc |= tb_put_sub(c, &b, s, start, i);
        line++;
        if (at_end) break;
        i = start = eol;
    }
    if (rc) { tb_free(c, &b); return -1; }
    tstr *r = tb_finish(c, &b);
    if (!r) return -1;
    *out = tv_str(r);
    return 0;
}

/* truncate on a value that is not a string: jinja2 applies len() and slicing to
 * the value itself (a short list comes back as the list) */
static int truncate_other(tpl_ctx *c, tval v, int64_t length, int64_t leeway, bool killwords, tval *out) {
    bool sized = v.k == TV_DICT || (v.k == TV_LIST && v.sub != LK_GEN && v.sub != LK_REVITER);
    if (!sized) return tpl_fail(c, X_TYPE, "object of type '%s' has no len()", tv_type_name(v));
    uint32_t n = v.k == TV_DICT ? v.u.d->n : v.u.l->n;
    if ((int64_t)n <= length + leeway) { *out = v; return 0; }
    if (v.k == TV_DICT) return tpl_fail(c, X_TYPE, "unhashable type: 'slice'");
    bool sliceable = v.sub == LK_LIST || v.sub == LK_TUPLE || v.sub == LK_RANGE || v.sub == LK_GROUP;
    if (!sliceable) return tpl_fail(c, X_TYPE, "'%s' object is not subscriptable", tv_type_name(v));
    const char *t = v.sub == LK_LIST ? "list" : v.sub == LK_RANGE ? "range" : "tuple";
    if (!killwords) return tpl_fail(c, X_ATTRIBUTE, "'%s' object has no attribute 'rsplit'", t);
    if (v.sub == LK_RANGE) return tpl_fail(c, X_TYPE, "unsupported operand type(s) for +: 'range' and 'str'");
    return tpl_fail(c, X_TYPE, "can only concatenate %s (not \"str\") to %s", t, t);
}

static int do_truncate(tpl_ctx *c, tval v, tval *args, tval *out) {
    tstr *s = NULL;
    if (v.k == TV_STR && soft_str(c, v, &s) < 0) return -1;
    int64_t length = 255, leeway = 5;
    if (!tv_is_missing(args[0])) length = args[0].k == TV_INT ? args[0].u.i : 255;
    bool killwords = !tv_is_missing(args[1]) && tv_truthy(args[1]);
    tstr *end = NULL;
    if (!tv_is_missing(args[2])) { if (soft_str(c, args[2], &end) < 0) return -1; }
    else if (!(end = tstr_new(c, "...", 3))) return -1;
    if (!tv_is_missing(args[3]) && args[3].k == TV_INT) leeway = args[3].u.i;
    int64_t el = tstr_nchars(end);
    if (length < el) return tpl_fail(c, X_VALUE, "expected length >= %" PRId64 ", got %" PRId64, el, length);
    if (leeway < 0) return tpl_fail(c, X_VALUE, "expected leeway >= 0, got %" PRId64, leeway);
    if (v.k == TV_UNDEF) { *out = v; return 0; } /* len(Undefined) == 0 */
    if (!s) return truncate_other(c, v, length, leeway, killwords, out);
    int64_t n = tstr_nchars(s);
    if (n <= length + leeway) { *out = tv_str(s); return 0; }
    size_t cut = tstr_byte_at(s, length - el);
    if (!killwords) {
        size_t k = cut;
        while (k > 0 && s->data[k - 1] != ' ') k--;
        if (k > 0) cut = k - 1;
    }
    tbuf b = {0};
    if (tb_put_sub(c, &b, s, 0, cut) < 0 || tb_put_str(c, &b, end) < 0) { tb_free(c, &b); return -1; }
    tstr *r = tb_finish(c, &b);
    if (!r) return -1;
    *out = tv_str(r);
    return 0;
}

static int url_quote(tpl_ctx *c, tbuf *b, tval v, bool for_qs) {
    tstr *s;
    if (soft_str(c, v, &s) < 0) return -1;
    for (uint32_t i = 0; i < s->len; i++) {
        unsigned char ch = (unsigned char)s->data[i];
        bool safe = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
                    ch == '.' || ch == '-' || ch == '~' || (!for_qs && ch == '/');
        int rc;
        if (safe) rc = tb_putc(c, b, (char)ch);
        else if (for_qs && ch == ' ') rc = tb_putc(c, b, '+');
        else rc = tb_printf(c, b, "%%%02X", ch);
        if (rc < 0) return -1;
    }
    return 0;
}

static int striptags(tpl_ctx *c, tval v, tval *out) {
    tstr *s;
    if (soft_str(c, v, &s) < 0) return -1;
    tbuf t = {0}, b = {0};
    size_t i = 0;
    while (i < s->len) {
        if (!strncmp(s->data + i, "<!--", 4)) {
            const char *e = strstr(s->data + i + 4, "-->");
            if (e) { i = (size_t)(e - s->data) + 3; continue; }
        }
        if (s->data[i] == '<') {
            const char *e = memchr(s->data + i, '>', s->len - i);
            if (e && e > s->data + i + 1) { i = (size_t)(e - s->data) + 1; continue; }
        }
        if (tb_putc(c, &t, s->data[i]) < 0) goto fail;
        i++;
    }
    /* collapse whitespace, unescape the common entities */
    bool pend = false, any = false;
    for (size_t k = 0; k < t.n;) {
        size_t adv = 1;
        unsigned char ch = (unsigned char)t.d[k];
        bool sp = ch < 0x80 ? (py_num_space((char)ch) || (ch >= 0x1C && ch <= 0x1F)) : tpl_is_space(tpl_utf8_decode(t.d + k, t.n - k, &adv));
        if (sp) { pend = any; k += adv; continue; }
        if (pend && tb_putc(c, &b, ' ') < 0) goto fail;
        pend = false;
        any = true;
        static const struct { const char *e, *r; } ents[] = {{"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&#34;", "\""},
                                                             {"&#39;", "'"}, {"&quot;", "\""}, {"&nbsp;", "\xc2\xa0"}};
        bool done = false;
        for (size_t q = 0; q < sizeof ents / sizeof ents[0] && ch == '&'; q++) {
            size_t el = strlen(ents[q].e);
            if (k + el <= t.n && !memcmp(t.d + k, ents[q].e, el)) {
                if (tb_puts(c, &b, ents[q].r) < 0) goto fail;
                k += el;
                done = true;
                break;
            }
        }
        if (done) continue;
        if (tb_put(c, &b, t.d + k, adv) < 0) goto fail;
        k += adv;
    }
    tb_free(c, &t);
    {
        tstr *r = tstr_taint_like(c, &b, s);
        if (!r) return -1;
        *out = tv_str(r);
        return 0;
    }
fail:
    tb_free(c, &t);
    tb_free(c, &b);
    return -1;
}

/* select/reject/selectattr/rejectattr */
static int select_like(tpl_ctx *c, tval v, const targs *a, bool want, bool attr, tval *out) {
    if (!tv_truthy(v)) return mk_list(c, NULL, 0, LK_GEN, out);
    const tval *items;
    int64_t n;
    if (need_iter(c, v, &items, &n) < 0) return -1;
    uint32_t off = 0;
    tval attribute = tv_missing();
    if (attr) {
        if (a->npos < 1) return tpl_fail(c, X_FILTERARG, "Missing parameter for attribute name");
        attribute = a->pos[0];
        off = 1;
    }
    bool has_test = a->npos > off;
    targs ta = {0};
    if (has_test) {
        ta.pos = a->pos + off + 1;
        ta.npos = a->npos - off - 1;
        ta.kwn = a->kwn;
        ta.kwv = a->kwv;
        ta.nkw = a->nkw;
    }
    tval *keep = tpl_alloc(c, ((size_t)n + 1) * sizeof(tval));
    if (!keep || tpl_charge(c, (uint64_t)n) < 0) return -1;
    uint32_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        tval x = items[i];
        if (attr && attr_path(c, items[i], attribute, tv_missing(), &x) < 0) return -1;
        bool r;
        if (has_test) {
            if (tpl_test_by_name(c, a->pos[off], x, &ta, &r) < 0) return -1;
        } else r = tv_truthy(x);
        if (r == want) keep[k++] = items[i];
    }
    return mk_list(c, keep, k, LK_GEN, out);
}

static int do_map(tpl_ctx *c, tval v, const targs *a, tval *out) {
    if (!tv_truthy(v)) return mk_list(c, NULL, 0, LK_GEN, out);
    bool by_attr = a->npos == 0;
    tval attribute = tv_missing(), dflt = tv_missing();
    if (by_attr) {
        for (uint32_t k = 0; k < a->nkw; k++) {
            if (tstr_eq(a->kwn[k], "attribute")) attribute = a->kwv[k];
            else if (tstr_eq(a->kwn[k], "default")) dflt = a->kwv[k];
            else return tpl_fail(c, X_FILTERARG, "Unexpected keyword argument '%s'", a->kwn[k]->data);
        }
        if (tv_is_missing(attribute)) return tpl_fail(c, X_FILTERARG, "map requires a filter argument");
    }
    const tval *items;
    int64_t n;
    if (need_iter(c, v, &items, &n) < 0) return -1;
    tval *res = tpl_alloc(c, ((size_t)n + 1) * sizeof(tval));
    if (!res || tpl_charge(c, (uint64_t)n) < 0) return -1;
    targs fa = {0};
    if (!by_attr) {
        fa.pos = a->pos + 1;
        fa.npos = a->npos - 1;
        fa.kwn = a->kwn;
        fa.kwv = a->kwv;
        fa.nkw = a->nkw;
    }
    for (int64_t i = 0; i < n; i++) {
        if (by_attr) { if (attr_path(c, items[i], attribute, dflt, &res[i]) < 0) return -1; }
        else if (tpl_filter_by_name(c, a->pos[0], items[i], &fa, &res[i]) < 0) return -1;
    }
    return mk_list(c, res, (uint32_t)n, LK_GEN, out);
}

static int do_tojson(tpl_ctx *c, tval v, const targs *a, tval *out) {
    tval args[4];
    static const char *const names[] = {"ensure_ascii", "indent", "separators", "sort_keys"};
    if (tpl_bind(c, "tojson", a, names, 4, args) < 0) return -1;
    tjson_opts o;
    memset(&o, 0, sizeof o);
    o.ensure_ascii = !tv_is_missing(args[0]) && tv_truthy(args[0]);
    o.sort_keys = !tv_is_missing(args[3]) && tv_truthy(args[3]);
    char spaces[256];
    tval ind = args[1];
    if (!tv_is_missing(ind) && ind.k != TV_NONE) {
        o.has_indent = true;
        if (ind.k == TV_STR) { o.indent = ind.u.s->data; o.indent_len = ind.u.s->len; }
        else if (ind.k == TV_INT || ind.k == TV_BOOL) {
            int64_t w = ind.k == TV_BOOL ? ind.u.b : ind.u.i;
            if (w < 0) w = 0;
            if (w > (int64_t)sizeof spaces) return tpl_fail(c, X_LIMIT, "tojson indent larger than %zu", sizeof spaces);
            memset(spaces, ' ', (size_t)w);
            o.indent = spaces;
            o.indent_len = (size_t)w;
        } else return tpl_fail(c, X_TYPE, "can't multiply sequence by non-int of type '%s'", tv_type_name(ind));
    }
    o.item_sep = o.has_indent ? "," : ", ";
    o.item_sep_len = o.has_indent ? 1 : 2;
    o.key_sep = ": ";
    o.key_sep_len = 2;
    tval sep = args[2];
    if (!tv_is_missing(sep) && sep.k != TV_NONE) {
        const tval *it;
        int64_t n;
        if (sep.k != TV_LIST || tv_iter(c, sep, &it, &n) < 0 || n != 2 || it[0].k != TV_STR || it[1].k != TV_STR) {
            if (c->failed) return -1;
            return tpl_fail(c, X_VALUE, "separators must be a pair of strings");
        }
        o.item_sep = it[0].u.s->data;
        o.item_sep_len = it[0].u.s->len;
        o.key_sep = it[1].u.s->data;
        o.key_sep_len = it[1].u.s->len;
    }
    tbuf b = {0};
    if (tpl_tojson(c, &b, v, &o, 0) < 0) { tb_free(c, &b); return -1; }
    tstr *r = tb_finish(c, &b);
    if (!r) return -1;
    *out = tv_str(r);
    return 0;
}

static int do_round(tpl_ctx *c, tval v, tval *args, tval *out) {
    int64_t prec = 0;
    if (!tv_is_missing(args[0])) {
        if (args[0].k != TV_INT && args[0].k != TV_BOOL)
            return tpl_fail(c, X_TYPE, "'%s' object cannot be interpreted as an integer", tv_type_name(args[0]));
        prec = args[0].k == TV_BOOL ? args[0].u.b : args[0].u.i;
    }
    const char *method = "common";
    if (!tv_is_missing(args[1])) {
        if (args[1].k != TV_STR) return tpl_fail(c, X_FILTERARG, "method must be common, ceil or floor");
        method = args[1].u.s->data;
    }
    if (strcmp(method, "common") && strcmp(method, "ceil") && strcmp(method, "floor"))
        return tpl_fail(c, X_FILTERARG, "method must be common, ceil or floor");
    if (v.k != TV_INT && v.k != TV_BOOL && v.k != TV_FLOAT) {
        /* common: round(value, precision); ceil / floor: math.ceil(value * 10 ** precision) */
        if (!strcmp(method, "common")) return tpl_fail(c, X_TYPE, "type %s doesn't define __round__ method", tv_type_name(v));
        if (v.k == TV_UNDEF) return tpl_undef_fail(c, v);
        if (v.k == TV_STR || (v.k == TV_LIST && (v.sub == LK_LIST || v.sub == LK_TUPLE)))
            return tpl_fail(c, X_TYPE, "must be real number, not %s", tv_type_name(v));
        return tpl_fail(c, X_TYPE, "unsupported operand type(s) for *: '%s' and 'int'", tv_type_name(v));
    }
    if (!strcmp(method, "common")) {
        if (v.k != TV_FLOAT) { /* round(int, n) stays an int */
            int64_t x = v.k == TV_BOOL ? v.u.b : v.u.i;
            if (prec < 0) {
                int64_t p = 1;
                for (int64_t i = 0; i < -prec && p <= INT64_MAX / 10; i++) p *= 10;
                int64_t q = x / p, r = x % p;
                if (r < 0) { r += p; q--; }
                if (2 * r > p || (2 * r == p && (q & 1))) q++;
                x = q * p;
            }
            *out = tv_int(x);
            return 0;
        }
        double x = v.u.f, r;
        if (!isfinite(x)) { *out = v; return 0; }
        if (prec == 0) r = nearbyint(x);
        else if (prec > 0) {
            if (prec > 300) { *out = v; return 0; }
            char buf[400];
            snprintf(buf, sizeof buf, "%.*f", (int)prec, x);
            r = strtod(buf, NULL);
        } else {
            double p = pow(10.0, (double)-prec);
            r = nearbyint(x / p) * p;
        }
        *out = tv_float(r);
        return 0;
    }
    double x = v.k == TV_FLOAT ? v.u.f : (double)(v.k == TV_BOOL ? v.u.b : v.u.i);
    double p = pow(10.0, (double)prec);
    double r = (!strcmp(method, "ceil") ? ceil(x * p) : floor(x * p)) / p;
    *out = tv_float(r);
    return 0;
}

static int do_minmax(tpl_ctx *c, tval v, tval *args, bool is_max, tval *out) {
    const tval *items;
    int64_t n;
    if (need_iter(c, v, &items, &n) < 0 || tpl_charge(c, (uint64_t)n) < 0) return -1;
    if (n == 0) { *out = tv_undef_hint(c, "No aggregated item, sequence was empty."); return 0; }
    bool cs = !tv_is_missing(args[0]) && tv_truthy(args[0]);
    tval best = items[0], bk;
    if (make_key(c, items[0], args[1], false, cs, tv_missing(), &bk) < 0) return -1;
    for (int64_t i = 1; i < n; i++) {
        tval k;
        bool lt;
        if (make_key(c, items[i], args[1], false, cs, tv_missing(), &k) < 0) return -1;
        if ((is_max ? tv_lt(c, bk, k, &lt) : tv_lt(c, k, bk, &lt)) < 0) return -1;
        if (lt) { best = items[i]; bk = k; }
    }
    *out = best;
    return 0;
}

static int do_groupby(tpl_ctx *c, tval v, tval *args, tval *out) {
    const tval *items;
    int64_t n;
    if (tv_is_missing(args[0])) return tpl_fail(c, X_TYPE, "do_groupby() missing 1 required positional argument: 'attribute'");
    if (need_iter(c, v, &items, &n) < 0) return -1;
    bool cs = !tv_is_missing(args[2]) && tv_truthy(args[2]);
    tval *keys = tpl_alloc(c, ((size_t)n + 1) * sizeof(tval));
    if (!keys) return -1;
    for (int64_t i = 0; i < n; i++)
        if (make_key(c, items[i], args[0], false, cs, args[1], &keys[i]) < 0) return -1;
    uint32_t *idx = tpl_alloc(c, ((size_t)n + 1) * sizeof(uint32_t)), *tmp = tpl_alloc(c, ((size_t)n + 1) * sizeof(uint32_t));
    tval *groups = tpl_alloc(c, ((size_t)n + 1) * sizeof(tval)), *members = tpl_alloc(c, ((size_t)n + 1) * sizeof(tval));
    if (!idx || !tmp || !groups || !members) return -1;
    for (uint32_t i = 0; i < n; i++) idx[i] = i;
    if (msort(c, idx, tmp, (uint32_t)n, keys, false) < 0) return -1;
    uint32_t ng = 0;
    for (int64_t i = 0; i < n;) {
        int64_t j = i;
        uint32_t nm = 0;
        for (; j < n; j++) {
            bool eq;
            if (tv_eq(c, keys[idx[j]], keys[idx[i]], &eq) < 0) return -1;
            if (!eq) break;
            members[nm++] = items[idx[j]];
        }
        tval grouper = keys[idx[i]], lst;
        if (!cs && attr_path(c, items[idx[i]], args[0], args[1], &grouper) < 0) return -1;
        if (mk_list(c, members, nm, LK_LIST, &lst) < 0) return -1;
        tval pair[2] = {grouper, lst};
        if (mk_list(c, pair, 2, LK_GROUP, &groups[ng++]) < 0) return -1;
        i = j;
    }
    return mk_list(c, groups, ng, LK_LIST, out);
}

static int filesizeformat(tpl_ctx *c, tval v, tval binary, tval *out) {
    double bytes;
    if (v.k == TV_INT || v.k == TV_BOOL) bytes = (double)(v.k == TV_BOOL ? v.u.b : v.u.i);
    else if (v.k == TV_FLOAT) bytes = v.u.f;
    else if (v.k == TV_STR) {
        if (!parse_py_float(v.u.s, &bytes)) {
            tbuf rb = {0};
            if (tv_write_repr(c, &rb, v, 0) < 0) { tb_free(c, &rb); return -1; }
            int rc = tpl_fail(c, X_VALUE, "could not convert string to float: %.*s", (int)(rb.n > 400 ? 400 : rb.n), rb.d);
            tb_free(c, &rb);
            return rc;
        }
    }
    else return tpl_fail(c, X_TYPE, "float() argument must be a string or a real number, not '%s'", tv_type_name(v));
    bool bin = !tv_is_missing(binary) && tv_truthy(binary);
    double base = bin ? 1024 : 1000;
    static const char *const dec[] = {"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
    static const char *const bi[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
    char buf[128];
    if (bytes == 1) snprintf(buf, sizeof buf, "1 Byte");
    else if (bytes < base) snprintf(buf, sizeof buf, "%" PRId64 " Bytes", (int64_t)bytes);
    else {
        int i;
        double unit = base;
        for (i = 0; i < 8; i++) {
            unit = pow(base, i + 2);
            if (bytes < unit) break;
        }
        if (i == 8) i = 7;
        snprintf(buf, sizeof buf, "%.1f %s", base * bytes / unit, bin ? bi[i] : dec[i]);
    }
    tstr *r = tstr_new(c, buf, strlen(buf));
    if (!r) return -1;
    *out = tv_str(r);
    return 0;
}

/* ------------------------------------------------------------------ filters */

int tpl_apply_filter(tpl_ctx *c, int fid, const tstr *name, tval v, const targs *a, tval *out) {
    tval args[6];
    tstr *s;
    const tval *items;
    int64_t n;
    if (fid < 0) return tpl_fail(c, X_RUNTIME, "No filter named '%.*s' found.", (int)(name->len > 60 ? 60 : name->len), name->data);
    const char *fname = filter_names[fid];
    switch (fid) {
    case F_ABS:
        if (tpl_bind(c, fname, a, NULL, 0, args) < 0) return -1;
        if (v.k == TV_UNDEF) return tpl_fail(c, X_TYPE, "bad operand type for abs(): 'Undefined'");
        if (v.k == TV_BOOL) v = tv_int(v.u.b);
        if (v.k == TV_INT) {
            if (v.u.i == INT64_MIN) return tpl_fail(c, X_OVERFLOW, "integer overflow (64-bit integers)");
            *out = tv_int(v.u.i < 0 ? -v.u.i : v.u.i);
            return 0;
        }
        if (v.k == TV_FLOAT) { *out = tv_float(fabs(v.u.f)); return 0; }
        return tpl_fail(c, X_TYPE, "bad operand type for abs(): '%s'", tv_type_name(v));
    case F_ATTR: {
        static const char *const nm[] = {"name"};
        if (tpl_bind(c, fname, a, nm, 1, args) < 0) return -1;
        if (args[0].k != TV_STR) return tpl_fail(c, X_TYPE, "attribute name must be string");
        if (v.k == TV_DICT) { /* attr() does not fall back to items */
            bool unsafe;
            if (tpl_method_id(v, args[0].u.s, &unsafe) < 0 && !unsafe) { *out = tv_undef_attr(c, v, args[0].u.s); return 0; }
        }
        return tpl_getattr(c, v, args[0].u.s, out);
    }
    case F_BATCH: case F_SLICE: {
        static const char *const nm[] = {"linecount", "fill_with"};
        if (tpl_bind(c, fname, a, nm, 2, args) < 0) return -1;
        if (args[0].k != TV_INT) return tpl_fail(c, X_TYPE, "'%s' object cannot be interpreted as an integer", tv_type_name(args[0]));
        int64_t k = args[0].u.i;
        bool fill = !tv_is_missing(args[1]) && args[1].k != TV_NONE;
        if (need_iter(c, v, &items, &n) < 0) return -1;
        tval *groups = tpl_alloc(c, ((size_t)n + 2) * sizeof(tval));
        if (!groups) return -1;
        uint32_t ng = 0;
        if (fid == F_BATCH) {
            if (k <= 0) return tpl_fail(c, X_VALUE, "batch size must be positive");
            for (int64_t i = 0; i < n; i += k) {
                int64_t m = n - i < k ? n - i : k;
                tval *row = tpl_alloc(c, ((size_t)k + 1) * sizeof(tval));
                if (!row) return -1;
                memcpy(row, items + i, (size_t)m * sizeof(tval));
                int64_t rn = m;
                if (fill) while (rn < k) row[rn++] = args[1];
                if (mk_list(c, row, (uint32_t)rn, LK_LIST, &groups[ng++]) < 0) return -1;
            }
        } else {
            if (k <= 0) return tpl_fail(c, X_ZERODIV, "integer division or modulo by zero");
            if (k > 100000) return tpl_fail(c, X_LIMIT, "too many slices");
            groups = tpl_alloc(c, ((size_t)k + 1) * sizeof(tval));
            if (!groups) return -1;
            int64_t per = n / k, extra = n % k, off = 0;
            for (int64_t sn = 0; sn < k; sn++) {
                int64_t st = off + sn * per;
                if (sn < extra) off++;
                int64_t en = off + (sn + 1) * per;
                tval *row = tpl_alloc(c, ((size_t)(en - st) + 2) * sizeof(tval));
                if (!row) return -1;
                memcpy(row, items + st, (size_t)(en - st) * sizeof(tval));
                int64_t rn = en - st;
                if (fill && sn >= extra) row[rn++] = args[1];
                if (mk_list(c, row, (uint32_t)rn, LK_LIST, &groups[ng++]) < 0) return -1;
            }
        }
        return mk_list(c, groups, ng, LK_GEN, out);
    }
    case F_CAPITALIZE: case F_LOWER: case F_UPPER: case F_TITLE: {
        if (tpl_bind(c, fname, a, NULL, 0, args) < 0 || soft_str(c, v, &s) < 0) return -1;
        int mode = fid == F_CAPITALIZE ? CASE_CAPITALIZE : fid == F_LOWER ? CASE_LOWER : fid == F_UPPER ? CASE_UPPER : CASE_JTITLE;
        tstr *r;
        if (tpl_case_convert(c, s, mode, &r) < 0) return -1;
        *out = tv_str(r);
        if (fid != F_TITLE && tv_is_markup(v)) out->sub = 1;
        return 0;
    }
    case F_CENTER: {
        static const char *const nm[] = {"width"};
        if (tpl_bind(c, fname, a, nm, 1, args) < 0 || soft_str(c, v, &s) < 0) return -1;
        targs ca = {0};
        tval w = tv_is_missing(args[0]) ? tv_int(80) : args[0];
        ca.pos = &w;
        ca.npos = 1;
        tval sv = tv_is_markup(v) ? v : tv_str(s);
        tstr *nm2 = tstr_new(c, "center", 6);
        if (!nm2) return -1;
        bool unsafe;
        return tpl_call_builtin(c, tpl_method_id(sv, nm2, &unsafe), sv, &ca, out);
    }
    case F_COUNT: case F_LENGTH:
        if (tpl_bind(c, fname, a, NULL, 0, args) < 0 || tv_len(c, v, &n) < 0) return -1;
        *out = tv_int(n);
        return 0;
    case F_D: case F_DEFAULT: {
        static const char *const nm[] = {"default_value", "boolean"};
        if (tpl_bind(c, fname, a, nm, 2, args) < 0) return -1;
        bool boolean = !tv_is_missing(args[1]) && tv_truthy(args[1]);
        if (v.k == TV_UNDEF || (boolean && !tv_truthy(v)))
            *out = tv_is_missing(args[0]) ? tv_str((tstr *)&tpl_empty_str) : args[0];
        else *out = v;
        return 0;
    }
    case F_DICTSORT: {
        static const char *const nm[] = {"case_sensitive", "by", "reverse"};
        if (tpl_bind(c, fname, a, nm, 3, args) < 0) return -1;
        int pos = 0;
        if (!tv_is_missing(args[1])) {
            if (args[1].k == TV_STR && tstr_eq(args[1].u.s, "value")) pos = 1;
            else if (!(args[1].k == TV_STR && tstr_eq(args[1].u.s, "key")))
                return tpl_fail(c, X_FILTERARG, "You can only sort by either \"key\" or \"value\"");
        }
        if (v.k == TV_UNDEF) return tpl_undef_fail(c, v);
        if (v.k != TV_DICT) return tpl_fail(c, X_ATTRIBUTE, "'%s' object has no attribute 'items'", tv_type_name(v));
        tdict *d = v.u.d;
        tval *pairs = tpl_alloc(c, (d->n + 1) * sizeof(tval)), *keys = tpl_alloc(c, (d->n + 1) * sizeof(tval));
        if (!pairs || !keys) return -1;
        bool cs = !tv_is_missing(args[0]) && tv_truthy(args[0]), err = false;
        for (uint32_t i = 0; i < d->n; i++) {
            tval pr[2] = {d->keys[i], d->vals[i]};
            if (mk_list(c, pr, 2, LK_TUPLE, &pairs[i]) < 0) return -1;
            keys[i] = cs ? pr[pos] : lower_if_str(c, pr[pos], &err);
        }
        if (err) return -1;
        return sorted_by(c, pairs, d->n, keys, !tv_is_missing(args[2]) && tv_truthy(args[2]), out);
    }
    case F_E: case F_ESCAPE: case F_FORCEESCAPE:
        if (tpl_bind(c, fname, a, NULL, 0, args) < 0) return -1;
        return tpl_escape_val(c, v, fid == F_FORCEESCAPE, out);
    case F_FILESIZEFORMAT: {
        static const char *const nm[] = {"binary"};
        if (tpl_bind(c, fname, a, nm, 1, args) < 0) return -1;
        return filesizeformat(c, v, args[0], out);
    }
    case F_FIRST:
        if (tpl_bind(c, fname, a, NULL, 0, args) < 0) return -1;
        if (v.k == TV_LIST && (v.sub == LK_GEN || v.sub == LK_REVITER)) {
            tlist *l = v.u.l;
            if (l->pos < l->n) { *out = l->v[l->pos++]; return 0; }
            *out = tv_undef_hint(c, "No first item, sequence was empty.");
            return 0;
        }
        if (need_iter(c, v, &items, &n) < 0) return -1;
        *out = n ? items[0] : tv_undef_hint(c, "No first item, sequence was empty.");
        return 0;
    case F_LAST:
        if (tpl_bind(c, fname, a, NULL, 0, args) < 0) return -1;
        if (v.k == TV_LIST && (v.sub == LK_GEN || v.sub == LK_REVITER || v.sub == LK_KEYS || v.sub == LK_VALUES || v.sub == LK_ITEMS)) {
            if (v.sub == LK_GEN) return tpl_fail(c, X_TYPE, "'generator' object is not reversible");
            if (v.sub == LK_REVITER) return tpl_fail(c, X_TYPE, "'list_reverseiterator' object is not reversible");
        }
        if (v.k != TV_LIST && v.k != TV_DICT && v.k != TV_STR && v.k != TV_UNDEF)
            return tpl_fail(c, X_TYPE, "'%s' object is not reversible", tv_type_name(v));
        if (need_iter(c, v, &items, &n) < 0) return -1;
        *out = n ? items[n - 1] : tv_undef_hint(c, "No last item, sequence was empty.");
        return 0;
    case F_FLOAT: {
        static const char *const nm[] = {"default"};
        if (tpl_bind(c, fname, a, nm, 1, args) < 0) return -1;
        tval dflt = tv_is_missing(args[0]) ? tv_float(0.0) : args[0];
        double d;
        switch (v.k) {
        case TV_FLOAT: *out = v; return 0;
        case TV_INT: *out = tv_float((double)v.u.i); return 0;
        case TV_BOOL: *out = tv_float(v.u.b); return 0;
        case TV_STR: *out = parse_py_float(v.u.s, &d) ? tv_float(d) : dflt; return 0;
        case TV_UNDEF: return tpl_undef_fail(c, v);
        default: *out = dflt; return 0;
        }
    }
    case F_INT: {
        static const char *const nm[] = {"default", "base"};
        if (tpl_bind(c, fname, a, nm, 2, args) < 0) return -1;
        tval dflt = tv_is_missing(args[0]) ? tv_int(0) : args[0];
        int64_t base = 10, iv;
        if (!tv_is_missing(args[1])) base = args[1].k == TV_INT ? args[1].u.i : 10;
        double d;
        switch (v.k) {
        case TV_INT: *out = v; return 0;
        case TV_BOOL: *out = tv_int(v.u.b); return 0;
        case TV_FLOAT:
            if (!isfinite(v.u.f)) return tpl_fail(c, isnan(v.u.f) ? X_VALUE : X_OVERFLOW, isnan(v.u.f) ? "cannot convert float NaN to integer" : "cannot convert float infinity to integer");
            if (fabs(v.u.f) >= 9.2e18) return tpl_fail(c, X_OVERFLOW, "integer overflow (64-bit integers)");
            *out = tv_int((int64_t)v.u.f);
            return 0;
        case TV_STR:
            if ((base == 0 || (base >= 2 && base <= 36)) && parse_py_int(v.u.s, (int)base, &iv)) { *out = tv_int(iv); return 0; }
            if (parse_py_float(v.u.s, &d) && isfinite(d) && fabs(d) < 9.2e18) { *out = tv_int((int64_t)d); return 0; }
            *out = dflt;
            return 0;
        case TV_UNDEF: return tpl_undef_fail(c, v);
        default: *out = dflt; return 0;
        }
    }
    case F_FORMAT: {
        if (a->npos && a->nkw) return tpl_fail(c, X_FILTERARG, "can't handle positional and keyword arguments at the same time");
        if (soft_str(c, v, &s) < 0) return -1;
        tval fa;
        if (a->nkw) {
            tdict *d = td_new(c, a->nkw);
            if (!d) return -1;
            for (uint32_t k = 0; k < a->nkw; k++)
                if (td_set(c, d, tv_str((tstr *)a->kwn[k]), a->kwv[k]) < 0) return -1;
            fa = (tval){0};
            fa.k = TV_DICT;
            fa.u.d = d;
        } else if (mk_list(c, a->pos, a->npos, LK_TUPLE, &fa) < 0) return -1;
        return tpl_percent_format(c, s, tv_is_markup(v), fa, out);
    }
    case F_GROUPBY: {
        static const char *const nm[] = {"attribute", "default", "case_sensitive"};
        if (tpl_bind(c, fname, a, nm, 3, args) < 0) return -1;
        return do_groupby(c, v, args, out);
    }
    case F_INDENT: {
        static const char *const nm[] = {"width", "first", "blank"};
        if (tpl_bind(c, fname, a, nm, 3, args) < 0) return -1;
        if (do_indent(c, v, args[0], args[1], args[2], out) < 0) return -1;
        out->sub = tv_is_markup(v);
        return 0;
    }
    case F_ITEMS:
        if (tpl_bind(c, fname, a, NULL, 0, args) < 0) return -1;
        if (v.k == TV_UNDEF) return mk_list(c, NULL, 0, LK_GEN, out);
        if (v.k != TV_DICT) return tpl_fail(c, X_TYPE, "Can only get item pairs from a mapping.");
        {
            tdict *d = v.u.d;
            tval *pairs = tpl_alloc(c, (d->n + 1) * sizeof(tval));
            if (!pairs) return -1;
            for (uint32_t i = 0; i < d->n; i++) {
                tval pr[2] = {d->keys[i], d->vals[i]};
                if (mk_list(c, pr, 2, LK_TUPLE, &pairs[i]) < 0) return -1;
            }
            return mk_list(c, pairs, d->n, LK_GEN, out);
        }
    case F_JOIN: {
        static const char *const nm[] = {"d", "attribute"};
        if (tpl_bind(c, fname, a, nm, 2, args) < 0) return -1;
        tstr *sep = (tstr *)&tpl_empty_str;
        if (!tv_is_missing(args[0]) && soft_str(c, args[0], &sep) < 0) return -1;
        if (need_iter(c, v, &items, &n) < 0 || tpl_charge(c, (uint64_t)n / 8) < 0) return -1;
        tval *xs = tpl_alloc(c, ((size_t)n + 1) * sizeof(tval));
        if (!xs) return -1;
        /* autoescape: a Markup separator or item makes the join Markup.join (the rest escaped) */
        bool mk = c->autoescape && !tv_is_missing(args[0]) && tv_is_markup(args[0]);
        for (int64_t i = 0; i < n; i++) {
            xs[i] = items[i];
            if (!tv_is_missing(args[1]) && attr_path(c, xs[i], args[1], tv_missing(), &xs[i]) < 0) return -1;
            mk |= c->autoescape && tv_is_markup(xs[i]);
        }
        tval sv = tv_str(sep);
        if (mk && tpl_html_escape(c, tv_is_missing(args[0]) ? sv : args[0], &sv) < 0) return -1;
        tbuf b = {0};
        for (int64_t i = 0; i < n; i++) {
            tval x = xs[i];
            if (mk && tpl_html_escape(c, x, &x) < 0) { tb_free(c, &b); return -1; }
            if ((i && tb_put_str(c, &b, sv.u.s) < 0) || tv_write_str(c, &b, x) < 0) { tb_free(c, &b); return -1; }
        }
        tstr *r = tb_finish(c, &b);
        if (!r) return -1;
        *out = tv_str(r);
        out->sub = mk;
        return 0;
    }
    case F_LIST:
        if (tpl_bind(c, fname, a, NULL, 0, args) < 0) return -1;
        return tv_to_list(c, v, out);
    case F_MAP: return do_map(c, v, a, out);
    case F_MAX: case F_MIN: {
        static const char *const nm[] = {"case_sensitive", "attribute"};
        if (tpl_bind(c, fname, a, nm, 2, args) < 0) return -1;
        return do_minmax(c, v, args, fid == F_MAX, out);
    }
    case F_PPRINT: {
        if (tpl_bind(c, fname, a, NULL, 0, args) < 0) return -1;
        tbuf b = {0};
        if (tv_write_repr(c, &b, v, 0) < 0) { tb_free(c, &b); return -1; }
        tstr *r = tb_finish(c, &b);
        if (!r) return -1;
        *out = tv_str(r);
        return 0;
    }
    case F_RANDOM: case F_URLIZE: case F_WORDWRAP:
        return tpl_fail(c, X_RUNTIME, "the '%s' filter is not supported by Loom", fname);
    case F_REJECT: case F_SELECT: return select_like(c, v, a, fid == F_SELECT, false, out);
    case F_REJECTATTR: case F_SELECTATTR: return select_like(c, v, a, fid == F_SELECTATTR, true, out);
    case F_REPLACE: {
        static const char *const nm[] = {"old", "new", "count"};
        if (tpl_bind(c, fname, a, nm, 3, args) < 0) return -1;
        tstr *o, *nw;
        if (tv_is_missing(args[0]) || tv_is_missing(args[1]))
            return tpl_fail(c, X_TYPE, "do_replace() missing required positional arguments: 'old' and 'new'");
        int64_t cnt = -1;
        if (!tv_is_missing(args[2]) && args[2].k != TV_NONE) {
            if (args[2].k != TV_INT) return tpl_fail(c, X_TYPE, "'%s' object cannot be interpreted as an integer", tv_type_name(args[2]));
            cnt = args[2].u.i;
        }
        /* autoescape: a Markup old/new escapes a plain s; then Markup.replace, which
         * escapes `new` only, and the result stays Markup */
        bool mk = c->autoescape && (tv_is_markup(v) || tv_is_markup(args[0]) || tv_is_markup(args[1]));
        tval sv = v, ov = args[0], nv = args[1];
        if (mk && (tpl_html_escape(c, sv, &sv) < 0 || tpl_html_escape(c, nv, &nv) < 0)) return -1;
        if (soft_str(c, sv, &s) < 0 || soft_str(c, ov, &o) < 0 || soft_str(c, nv, &nw) < 0) return -1;
        if (tpl_replace(c, s, o, nw, cnt, out) < 0) return -1;
        if (mk) out->sub = 1;
        return 0;
    }
    case F_REVERSE:
        if (tpl_bind(c, fname, a, NULL, 0, args) < 0) return -1;
        if (v.k == TV_STR) {
            if (tv_iter(c, v, &items, &n) < 0) return -1;
            tbuf b = {0};
            for (int64_t i = n; i-- > 0;)
                if (tb_put_str(c, &b, items[i].u.s) < 0) { tb_free(c, &b); return -1; }
            tstr *r = tb_finish(c, &b);
            if (!r) return -1;
            *out = tv_str(r);
            return 0;
        }
        if (v.k == TV_LIST || v.k == TV_DICT || v.k == TV_UNDEF) {
            bool gen = v.k == TV_LIST && (v.sub == LK_GEN || v.sub == LK_REVITER);
            if (need_iter(c, v, &items, &n) < 0) return -1;
            tval *r = tpl_alloc(c, ((size_t)n + 1) * sizeof(tval));
            if (!r) return -1;
            for (int64_t i = 0; i < n; i++) r[i] = items[n - 1 - i];
            return mk_list(c, r, (uint32_t)n, gen ? LK_LIST : LK_REVITER, out);
        }
        return tpl_fail(c, X_FILTERARG, "argument must be iterable");
    case F_ROUND: {
        static const char *const nm[] = {"precision", "method"};
        if (tpl_bind(c, fname, a, nm, 2, args) < 0) return -1;
        return do_round(c, v, args, out);
    }
    case F_SAFE: case F_STRING:
        if (tpl_bind(c, fname, a, NULL, 0, args) < 0 || soft_str(c, v, &s) < 0) return -1;
        *out = tv_str(s);
        if (fid == F_SAFE || tv_is_markup(v)) out->sub = 1;
        return 0;
    case F_SORT: {
        static const char *const nm[] = {"reverse", "case_sensitive", "attribute"};
        if (tpl_bind(c, fname, a, nm, 3, args) < 0) return -1;
        if (need_iter(c, v, &items, &n) < 0) return -1;
        bool cs = !tv_is_missing(args[1]) && tv_truthy(args[1]);
        tval *keys = tpl_alloc(c, ((size_t)n + 1) * sizeof(tval));
        if (!keys) return -1;
        for (int64_t i = 0; i < n; i++)
            if (make_key(c, items[i], args[2], true, cs, tv_missing(), &keys[i]) < 0) return -1;
        return sorted_by(c, items, n, keys, !tv_is_missing(args[0]) && tv_truthy(args[0]), out);
    }
    case F_STRIPTAGS:
        if (tpl_bind(c, fname, a, NULL, 0, args) < 0) return -1;
        return striptags(c, v, out);
    case F_SUM: {
        static const char *const nm[] = {"attribute", "start"};
        if (tpl_bind(c, fname, a, nm, 2, args) < 0) return -1;
        if (need_iter(c, v, &items, &n) < 0 || tpl_charge(c, (uint64_t)n) < 0) return -1;
        tval acc = tv_is_missing(args[1]) ? tv_int(0) : args[1];
        for (int64_t i = 0; i < n; i++) {
            tval x = items[i];
            if (!tv_is_missing(args[0]) && attr_path(c, x, args[0], tv_missing(), &x) < 0) return -1;
            if (acc.k == TV_STR) return tpl_fail(c, X_TYPE, "sum() can't sum strings [use ''.join(seq) instead]");
            if (tpl_arith(c, OP_ADD, acc, x, &acc) < 0) return -1;
        }
        *out = acc;
        return 0;
    }
    case F_TOJSON: return do_tojson(c, v, a, out);
    case F_TRIM: {
        static const char *const nm[] = {"chars"};
        if (tpl_bind(c, fname, a, nm, 1, args) < 0 || soft_str(c, v, &s) < 0) return -1;
        if (tpl_strip(c, s, args[0], 3, out) < 0) return -1;
        out->sub = tv_is_markup(v);
        return 0;
    }
    case F_TRUNCATE: {
        static const char *const nm[] = {"length", "killwords", "end", "leeway"};
        if (tpl_bind(c, fname, a, nm, 4, args) < 0) return -1;
        if (do_truncate(c, v, args, out) < 0) return -1;
        if (out->k == TV_STR) out->sub = tv_is_markup(v);
        return 0;
    }
    case F_UNIQUE: {
        static const char *const nm[] = {"case_sensitive", "attribute"};
        if (tpl_bind(c, fname, a, nm, 2, args) < 0) return -1;
        if (need_iter(c, v, &items, &n) < 0) return -1;
        bool cs = !tv_is_missing(args[0]) && tv_truthy(args[0]);
        tdict *seen = td_new(c, 8);
        tval *keep = tpl_alloc(c, ((size_t)n + 1) * sizeof(tval));
        if (!seen || !keep || tpl_charge(c, (uint64_t)n) < 0) return -1;
        uint32_t k = 0;
        for (int64_t i = 0; i < n; i++) {
            tval key;
            uint32_t idx;
            if (make_key(c, items[i], args[1], false, cs, tv_missing(), &key) < 0) return -1;
            if (!tv_hashable(key)) return tpl_fail(c, X_TYPE, "unhashable type: '%s'", tv_type_name(key));
            int f = td_find(c, seen, key, &idx);
            if (f < 0) return -1;
            if (f) continue;
            if (td_set(c, seen, key, tv_none()) < 0) return -1;
            keep[k++] = items[i];
        }
        return mk_list(c, keep, k, LK_GEN, out);
    }
    case F_URLENCODE: {
        if (tpl_bind(c, fname, a, NULL, 0, args) < 0) return -1;
        tbuf b = {0};
        int rc = 0;
        if (v.k == TV_DICT) {
            for (uint32_t i = 0; i < v.u.d->n && !rc; i++) {
                if (i) rc = tb_putc(c, &b, '&');
                if (!rc) rc = url_quote(c, &b, v.u.d->keys[i], true);
                if (!rc) rc = tb_putc(c, &b, '=');
                if (!rc) rc = url_quote(c, &b, v.u.d->vals[i], true);
            }
        } else if (v.k == TV_LIST) {
            if (need_iter(c, v, &items, &n) < 0) { tb_free(c, &b); return -1; }
            for (int64_t i = 0; i < n && !rc; i++) {
                const tval *pr;
                int64_t pn;
                if (tv_iter(c, items[i], &pr, &pn) < 0 || pn != 2) {
                    rc = -1;
                    if (c->failed) break;
                    if (pn < 2) tpl_fail(c, X_VALUE, "not enough values to unpack (expected 2, got %" PRId64 ")", pn);
                    else tpl_fail(c, X_VALUE, "too many values to unpack (expected 2)");
                    break;
                }
                if (i) rc = tb_putc(c, &b, '&');
                if (!rc) rc = url_quote(c, &b, pr[0], true);
                if (!rc) rc = tb_putc(c, &b, '=');
                if (!rc) rc = url_quote(c, &b, pr[1], true);
            }
        } else {
            rc = url_quote(c, &b, v, false);
        }
        if (rc) { tb_free(c, &b); return -1; }
        tstr *r = tb_finish(c, &b);
        if (!r) return -1;
        *out = tv_str(r);
        return 0;
    }
    case F_WORDCOUNT: {
        if (tpl_bind(c, fname, a, NULL, 0, args) < 0 || soft_str(c, v, &s) < 0 || tpl_charge(c, s->len / TPL_BYTES_PER_STEP) < 0) return -1;
        int64_t words = 0;
        bool in = false;
        for (size_t i = 0; i < s->len;) {
            size_t adv;
            uint32_t cp = tpl_utf8_decode(s->data + i, s->len - i, &adv);
            bool w = tpl_is_word(cp);
            if (w && !in) words++;
            in = w;
            i += adv;
        }
        *out = tv_int(words);
        return 0;
    }
    case F_XMLATTR: {
        static const char *const nm[] = {"autospace"};
        if (tpl_bind(c, fname, a, nm, 1, args) < 0) return -1;
        if (v.k != TV_DICT) return tpl_fail(c, X_ATTRIBUTE, "'%s' object has no attribute 'items'", tv_type_name(v));
        tbuf b = {0};
        bool first = true;
        for (uint32_t i = 0; i < v.u.d->n; i++) {
            tval val = v.u.d->vals[i];
            if (val.k == TV_NONE || val.k == TV_UNDEF) continue;
            tstr *k;
            tval ek, ev;
            if (v.u.d->keys[i].k != TV_STR) {
                tb_free(c, &b);
                return tpl_fail(c, X_TYPE, "expected string or bytes-like object, got '%s'", tv_type_name(v.u.d->keys[i]));
            }
            k = v.u.d->keys[i].u.s;
            for (uint32_t q = 0; q < k->len; q++) /* re.search(r"[\s/>=]", key, flags=re.ASCII) */
                if (memchr(" \t\n\r\f\v/>=", k->data[q], 9)) {
                    tb_free(c, &b);
                    tbuf rb = {0};
                    if (tv_write_repr(c, &rb, v.u.d->keys[i], 0) < 0) { tb_free(c, &rb); return -1; }
                    int rc = tpl_fail(c, X_VALUE, "Invalid character in attribute name: %.*s", (int)(rb.n > 200 ? 200 : rb.n), rb.d);
                    tb_free(c, &rb);
                    return rc;
                }
            if (html_escape(c, tv_str(k), &ek) < 0 || html_escape(c, val, &ev) < 0) { tb_free(c, &b); return -1; }
            if ((!first && tb_putc(c, &b, ' ') < 0) || tb_put_str(c, &b, ek.u.s) < 0 || tb_put(c, &b, "=\"", 2) < 0 ||
                tb_put_str(c, &b, ev.u.s) < 0 || tb_putc(c, &b, '"') < 0) { tb_free(c, &b); return -1; }
            first = false;
        }
        tstr *r = tb_finish(c, &b);
        if (!r) return -1;
        bool autospace = tv_is_missing(args[0]) || tv_truthy(args[0]);
        if (autospace && r->len) {
            tbuf b2 = {0};
            if (tb_putc(c, &b2, ' ') < 0 || tb_put_str(c, &b2, r) < 0) { tb_free(c, &b2); return -1; }
            r = tb_finish(c, &b2);
            if (!r) return -1;
        }
        *out = tv_str(r);
        out->sub = c->autoescape; /* Markup under autoescape */
        return 0;
    }
    default: return tpl_fail(c, X_RUNTIME, "internal: filter %d", fid);
    }
}

int tpl_filter_by_name(tpl_ctx *c, tval name, tval v, const targs *a, tval *out) {
    if (name.k != TV_STR) return tpl_fail(c, X_RUNTIME, "No filter named %s.", name.k == TV_UNDEF ? "Undefined" : "non-string");
    int fid = tpl_filter_id(name.u.s->data, name.u.s->len);
    if (fid < 0) return tpl_fail(c, X_RUNTIME, "No filter named '%.*s'.", (int)(name.u.s->len > 60 ? 60 : name.u.s->len), name.u.s->data);
    return tpl_apply_filter(c, fid, name.u.s, v, a, out);
}

/* ------------------------------------------------------------------ tests */

static int mod_eq(tpl_ctx *c, tval v, tval d, int64_t want, bool *out) {
    tval r;
    if (tpl_arith(c, OP_MOD, v, d, &r) < 0) return -1;
    return tv_eq(c, r, tv_int(want), out);
}

int tpl_apply_test(tpl_ctx *c, int tid, const tstr *name, tval v, const targs *a, bool *out) {
    tval args[1];
    static const char *const one[] = {"other"};
    if (tid < 0) return tpl_fail(c, X_RUNTIME, "No test named '%.*s' found.", (int)(name->len > 60 ? 60 : name->len), name->data);
    const char *tname = test_names[tid];
    switch (tid) {
    case T_DIVISIBLEBY: case T_EQ: case T_EQUALTO: case T_EQ2: case T_GE: case T_GE2: case T_GT: case T_GREATERTHAN:
    case T_GT2: case T_IN: case T_LE: case T_LE2: case T_LT: case T_LESSTHAN: case T_LT2: case T_NE: case T_NE2:
    case T_SAMEAS:
        if (tpl_bind(c, tname, a, one, 1, args) < 0) return -1;
        if (tv_is_missing(args[0])) return tpl_fail(c, X_TYPE, "test_%s() missing 1 required positional argument", tname);
        break;
    default:
        if (tpl_bind(c, tname, a, NULL, 0, args) < 0) return -1;
        break;
    }
    tval o = args[0];
    switch (tid) {
    case T_BOOLEAN: *out = v.k == TV_BOOL; return 0;
    case T_CALLABLE: /* Undefined defines __call__ (to raise) */
        *out = v.k == TV_MACRO || v.k == TV_FUNC || v.k == TV_LOOP || v.k == TV_JOINER || v.k == TV_UNDEF;
        return 0;
    case T_DEFINED: *out = v.k != TV_UNDEF; return 0;
    case T_UNDEFINED: *out = v.k == TV_UNDEF; return 0;
    case T_DIVISIBLEBY: return mod_eq(c, v, o, 0, out);
    case T_EVEN: return mod_eq(c, v, tv_int(2), 0, out);
    case T_ODD: return mod_eq(c, v, tv_int(2), 1, out);
    case T_EQ: case T_EQUALTO: case T_EQ2: return tv_cmp_op(c, CMP_EQ, v, o, out);
    case T_NE: case T_NE2: return tv_cmp_op(c, CMP_NE, v, o, out);
    case T_GE: case T_GE2: return tv_cmp_op(c, CMP_GE, v, o, out);
    case T_GT: case T_GREATERTHAN: case T_GT2: return tv_cmp_op(c, CMP_GT, v, o, out);
    case T_LE: case T_LE2: return tv_cmp_op(c, CMP_LE, v, o, out);
    case T_LT: case T_LESSTHAN: case T_LT2: return tv_cmp_op(c, CMP_LT, v, o, out);
    case T_IN: return tv_contains(c, o, v, out);
    case T_ESCAPED: *out = tv_is_markup(v); return 0;
    case T_FALSE: *out = v.k == TV_BOOL && !v.u.b; return 0;
    case T_TRUE: *out = v.k == TV_BOOL && v.u.b; return 0;
    case T_NONE: *out = v.k == TV_NONE; return 0;
    case T_FILTER: case T_TEST: /* Python's `value in env.filters` / `env.tests` */
        if (!tv_hashable(v)) return tpl_fail(c, X_TYPE, "unhashable type: '%s'", tv_type_name(v));
        *out = v.k == TV_STR && (tid == T_FILTER ? tpl_filter_id(v.u.s->data, v.u.s->len) : tpl_test_id(v.u.s->data, v.u.s->len)) >= 0;
        return 0;
    case T_FLOAT: *out = v.k == TV_FLOAT; return 0;
    case T_INTEGER: *out = v.k == TV_INT; return 0;
    case T_NUMBER: *out = v.k == TV_INT || v.k == TV_FLOAT || v.k == TV_BOOL; return 0;
    case T_STRING: *out = v.k == TV_STR; return 0;
    case T_MAPPING: *out = v.k == TV_DICT; return 0;
    case T_ITERABLE:
        *out = v.k == TV_UNDEF || v.k == TV_STR || v.k == TV_LIST || v.k == TV_DICT || v.k == TV_LOOP;
        return 0;
    case T_SEQUENCE: /* len() and __getitem__: Undefined has both */
        *out = v.k == TV_STR || v.k == TV_DICT || v.k == TV_UNDEF ||
               (v.k == TV_LIST && (v.sub == LK_LIST || v.sub == LK_TUPLE || v.sub == LK_RANGE || v.sub == LK_GROUP));
        return 0;
    case T_LOWER: case T_UPPER: {
        tstr *s;
        if (tv_str_of(c, v, &s) < 0 || tpl_charge(c, s->len / TPL_BYTES_PER_STEP) < 0) return -1;
        bool any = false, ok = true;
        for (size_t i = 0; i < s->len;) {
            size_t adv;
            uint32_t cp = tpl_utf8_decode(s->data + i, s->len - i, &adv);
            i += adv;
            if (tid == T_LOWER ? tpl_is_upper(cp) : tpl_is_lower(cp)) ok = false;
            if (tid == T_LOWER ? tpl_is_lower(cp) : tpl_is_upper(cp)) any = true;
        }
        *out = ok && any;
        return 0;
    }
    case T_SAMEAS:
        if (v.k != o.k) { *out = false; return 0; }
        switch (v.k) {
        case TV_NONE: case TV_UNDEF: *out = v.k == TV_NONE; return 0;
        case TV_BOOL: *out = v.u.b == o.u.b; return 0;
        case TV_INT: *out = v.u.i == o.u.i && v.u.i >= -5 && v.u.i <= 256; return 0;
        case TV_FLOAT: *out = false; return 0;
        default: *out = v.u.p == o.u.p; return 0;
        }
    default: return tpl_fail(c, X_RUNTIME, "internal: test %d", tid);
    }
}

int tpl_test_by_name(tpl_ctx *c, tval name, tval v, const targs *a, bool *out) {
    if (name.k != TV_STR) return tpl_fail(c, X_RUNTIME, "No test named %s.", name.k == TV_UNDEF ? "Undefined" : "non-string");
    int tid = tpl_test_id(name.u.s->data, name.u.s->len);
    if (tid < 0) return tpl_fail(c, X_RUNTIME, "No test named '%.*s'.", (int)(name.u.s->len > 60 ? 60 : name.u.s->len), name.u.s->data);
    return tpl_apply_test(c, tid, name.u.s, v, a, out);
}
