/* Builtin callables: the globals (range, dict, namespace, raise_exception,
 * strftime_now, cycler, joiner) and the Python methods templates call on str,
 * dict, list/tuple, loop and cycler values. Substring results keep their content
 * spans; case conversions mark the whole result as content when the input had any. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tpl.h"

int tpl_strftime(tpl_ctx *c, const tstr *fmt, tval *out); /* tpl_format.c */

enum {
    /* globals */
    G_RANGE, G_DICT, G_NAMESPACE, G_RAISE, G_STRFTIME, G_CYCLER, G_JOINER, G_LIPSUM,
    /* str */
    M_S_FIRST,
    S_CAPITALIZE = M_S_FIRST, S_CASEFOLD, S_CENTER, S_COUNT, S_ENDSWITH, S_FIND, S_FORMAT, S_INDEX, S_ISALNUM,
    S_ISALPHA, S_ISASCII, S_ISDECIMAL, S_ISDIGIT, S_ISIDENTIFIER, S_ISLOWER, S_ISNUMERIC, S_ISSPACE, S_ISTITLE,
    S_ISUPPER, S_JOIN, S_LJUST, S_LOWER, S_LSTRIP, S_PARTITION, S_REMOVEPREFIX, S_REMOVESUFFIX, S_REPLACE, S_RFIND,
    S_RINDEX, S_RJUST, S_RPARTITION, S_RSPLIT, S_RSTRIP, S_SPLIT, S_SPLITLINES, S_STARTSWITH, S_STRIP, S_SWAPCASE,
    S_TITLE, S_UPPER, S_ZFILL, S_FORMAT_MAP, S_EXPANDTABS, S_ISPRINTABLE,
    M_S_LAST,
    /* dict */
    D_ITEMS = M_S_LAST, D_KEYS, D_VALUES, D_GET, D_COPY,
    /* list / tuple */
    L_INDEX, L_COUNT, L_COPY,
    /* loop, cycler */
    LP_CYCLE, LP_CHANGED, CY_NEXT, CY_RESET
};

static const char *const global_names[] = {"range", "dict", "namespace", "raise_exception", "strftime_now", "cycler", "joiner", "lipsum"};

static const char *const str_names[] = {
    "capitalize", "casefold", "center", "count", "endswith", "find", "format", "index", "isalnum", "isalpha",
    "isascii", "isdecimal", "isdigit", "isidentifier", "islower", "isnumeric", "isspace", "istitle", "isupper", "join",
    "ljust", "lower", "lstrip", "partition", "removeprefix", "removesuffix", "replace", "rfind", "rindex", "rjust",
    "rpartition", "rsplit", "rstrip", "split", "splitlines", "startswith", "strip", "swapcase", "title", "upper",
    "zfill", "format_map", "expandtabs", "isprintable"};

static const char *const dict_unsafe[] = {"clear", "pop", "popitem", "setdefault", "update", NULL};
static const char *const list_unsafe[] = {"append", "clear", "pop", "reverse", "insert", "sort", "extend", "remove", NULL};

int tpl_global_id(const char *name, size_t n) {
    for (size_t i = 0; i < sizeof global_names / sizeof global_names[0]; i++)
        if (strlen(global_names[i]) == n && !memcmp(global_names[i], name, n)) return (int)i;
    return -1;
}

static bool in_list(const char *const *l, const tstr *name) {
    for (; *l; l++)
        if (tstr_eq(name, *l)) return true;
    return false;
}

int tpl_method_id(tval obj, const tstr *name, bool *unsafe) {
    *unsafe = false;
    switch (obj.k) {
    case TV_STR:
        for (int i = 0; i < M_S_LAST - M_S_FIRST; i++)
            if (tstr_eq(name, str_names[i])) return M_S_FIRST + i;
        return -1;
    case TV_DICT:
        if (tstr_eq(name, "items")) return D_ITEMS;
        if (tstr_eq(name, "keys")) return D_KEYS;
        if (tstr_eq(name, "values")) return D_VALUES;
        if (tstr_eq(name, "get")) return D_GET;
        if (tstr_eq(name, "copy")) return D_COPY;
        if (in_list(dict_unsafe, name)) *unsafe = true;
        return -1;
    case TV_LIST:
        if (obj.sub == LK_LIST || obj.sub == LK_TUPLE || obj.sub == LK_RANGE || obj.sub == LK_GROUP) {
            if (tstr_eq(name, "index")) return L_INDEX;
            if (tstr_eq(name, "count")) return L_COUNT;
            if (obj.sub == LK_LIST) {
                if (tstr_eq(name, "copy")) return L_COPY;
                if (in_list(list_unsafe, name)) *unsafe = true;
            }
        }
        return -1;
    case TV_LOOP:
        if (tstr_eq(name, "cycle")) return LP_CYCLE;
        if (tstr_eq(name, "changed")) return LP_CHANGED;
        return -1;
    case TV_CYCLER:
        if (tstr_eq(name, "next")) return CY_NEXT;
        if (tstr_eq(name, "reset")) return CY_RESET;
        return -1;
    default: return -1;
    }
}

/* ------------------------------------------------------------------ helpers */

static int need_str(tpl_ctx *c, tval v, const char *what, tstr **out) {
    if (v.k == TV_STR) { *out = v.u.s; return 0; }
    if (v.k == TV_UNDEF && !tv_is_missing(v)) return tpl_undef_fail(c, v);
    /* what == "" for CPython's bare "must be str, not int" (find, count, partition...) */
    return tpl_fail(c, X_TYPE, "%s%smust be str, not %s", what, *what ? " " : "", tv_type_name(v));
}

static int int_arg(tpl_ctx *c, tval v, int64_t dflt, int64_t *out) {
    if (tv_is_missing(v) || v.k == TV_NONE) { *out = dflt; return 0; }
    if (v.k == TV_INT) { *out = v.u.i; return 0; }
    if (v.k == TV_BOOL) { *out = v.u.b; return 0; }
    if (v.k == TV_UNDEF) return tpl_undef_fail(c, v);
    return tpl_fail(c, X_TYPE, "'%s' object cannot be interpreted as an integer", tv_type_name(v));
}

static bool is_space_byte_or_cp(const tstr *s, size_t i, size_t *adv) {
    unsigned char ch = (unsigned char)s->data[i];
    if (ch < 0x80) { *adv = 1; return ch == ' ' || (ch >= 9 && ch <= 13) || (ch >= 0x1C && ch <= 0x1F); }
    uint32_t cp = tpl_utf8_decode(s->data + i, s->len - i, adv);
    return tpl_is_space(cp);
}

/* does code point at s[i] occur in chars? */
static bool in_chars(const tstr *chars, const tstr *s, size_t i, size_t *adv) {
    tpl_utf8_decode(s->data + i, s->len - i, adv);
    for (size_t j = 0; j < chars->len;) {
        size_t a2;
        tpl_utf8_decode(chars->data + j, chars->len - j, &a2);
        if (a2 == *adv && !memcmp(chars->data + j, s->data + i, a2)) return true;
        j += a2;
    }
    return false;
}

int tpl_strip(tpl_ctx *c, const tstr *s, tval chars, int which, tval *out) {
    const tstr *cs = NULL;
    if (!tv_is_missing(chars) && chars.k != TV_NONE) {
        if (chars.k != TV_STR) return tpl_fail(c, X_TYPE, "strip arg must be None or str");
        cs = chars.u.s;
    }
    size_t a = 0, e = s->len, adv;
    if (tpl_charge(c, s->len / TPL_BYTES_PER_STEP) < 0) return -1;
    if (which & 1) {
        while (a < e) {
            bool hit = cs ? in_chars(cs, s, a, &adv) : is_space_byte_or_cp(s, a, &adv);
            if (!hit) break;
            a += adv;
        }
    }
    if (which & 2) {
        /* scan forward, remember the end of the last kept character */
        size_t last = a, p = a;
        while (p < e) {
            bool hit = cs ? in_chars(cs, s, p, &adv) : is_space_byte_or_cp(s, p, &adv);
            p += adv;
            if (!hit) last = p;
        }
        e = last;
    }
    tstr *r = tstr_sub(c, s, a, e);
    if (!r) return -1;
    *out = tv_str(r);
    return 0;
}

static int list_push(tpl_ctx *c, tval **v, uint32_t *n, uint32_t *cap, tval x) {
    if (*n == *cap) {
        uint32_t nc = *cap ? *cap * 2 : 8;
        tval *nv = tpl_alloc(c, nc * sizeof(tval));
        if (!nv) return -1;
        if (*n) memcpy(nv, *v, *n * sizeof(tval));
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = x;
    return 0;
}

static int make_list(tpl_ctx *c, tval *v, uint32_t n, int kind, tval *out) {
    tlist *l = tl_new(c, n);
    if (!l) return -1;
    if (n) memcpy(l->v, v, n * sizeof(tval));
    if (tl_finish_depth(c, l) < 0) return -1;
    *out = tv_list(l, kind);
    return 0;
}

static int push_sub(tpl_ctx *c, const tstr *s, size_t a, size_t e, tval **v, uint32_t *n, uint32_t *cap) {
    tstr *p = tstr_sub(c, s, a, e);
    if (!p) return -1;
    return list_push(c, v, n, cap, tv_str(p));
}

int tpl_split(tpl_ctx *c, const tstr *s, tval sepv, int64_t maxsplit, bool right, tval *out) {
    if (tpl_charge(c, s->len / TPL_BYTES_PER_STEP) < 0) return -1;
    tval *v = NULL;
    uint32_t n = 0, cap = 0;
    if (tv_is_missing(sepv) || sepv.k == TV_NONE) {
        /* runs of whitespace, ignoring leading/trailing */
        size_t adv;
        if (!right) {
            size_t i = 0;
            while (i < s->len) {
                while (i < s->len && is_space_byte_or_cp(s, i, &adv)) i += adv;
                if (i >= s->len) break;
                if (maxsplit >= 0 && (int64_t)n >= maxsplit) {
                    /* the remainder keeps its trailing whitespace */
                    if (push_sub(c, s, i, s->len, &v, &n, &cap) < 0) return -1;
                    break;
                }
                size_t j = i;
                while (j < s->len && !is_space_byte_or_cp(s, j, &adv)) j += adv;
                if (push_sub(c, s, i, j, &v, &n, &cap) < 0) return -1;
                i = j;
            }
        } else {
            /* rsplit: collect word boundaries then take from the right */
            size_t *starts = tpl_alloc(c, (s->len + 1) * 2 * sizeof(size_t));
            if (!starts) return -1;
            size_t nw = 0, i = 0;
            while (i < s->len) {
                while (i < s->len && is_space_byte_or_cp(s, i, &adv)) i += adv;
                if (i >= s->len) break;
                size_t j = i;
                while (j < s->len && !is_space_byte_or_cp(s, j, &adv)) j += adv;
                starts[2 * nw] = i;
                starts[2 * nw + 1] = j;
                nw++;
                i = j;
            }
            size_t first = 0;
            if (maxsplit >= 0 && nw > (size_t)maxsplit + 0) first = nw - (size_t)maxsplit - 1;
            if (maxsplit >= 0 && (int64_t)nw > maxsplit) {
                /* the remainder keeps its leading whitespace */
                if (push_sub(c, s, 0, starts[2 * first + 1], &v, &n, &cap) < 0) return -1;
                for (size_t w = first + 1; w < nw; w++)
                    if (push_sub(c, s, starts[2 * w], starts[2 * w + 1], &v, &n, &cap) < 0) return -1;
            } else {
                for (size_t w = 0; w < nw; w++)
                    if (push_sub(c, s, starts[2 * w], starts[2 * w + 1], &v, &n, &cap) < 0) return -1;
            }
        }
        return make_list(c, v, n, LK_LIST, out);
    }
    if (sepv.k != TV_STR) return tpl_fail(c, X_TYPE, "must be str or None, not %s", tv_type_name(sepv));
    const tstr *sep = sepv.u.s;
    if (sep->len == 0) return tpl_fail(c, X_VALUE, "empty separator");
    if (!right) {
        size_t i = 0;
        int64_t splits = 0;
        for (;;) {
            const char *hit = (maxsplit < 0 || splits < maxsplit) && i <= s->len
                                  ? memmem(s->data + i, s->len - i, sep->data, sep->len) : NULL;
            if (!hit) {
                if (push_sub(c, s, i, s->len, &v, &n, &cap) < 0) return -1;
                break;
            }
            size_t h = (size_t)(hit - s->data);
            if (push_sub(c, s, i, h, &v, &n, &cap) < 0) return -1;
            i = h + sep->len;
            splits++;
        }
        return make_list(c, v, n, LK_LIST, out);
    }
    /* rsplit with a separator: find matches from the right */
    size_t e = s->len;
    int64_t splits = 0;
    for (;;) {
        size_t h = SIZE_MAX;
        if ((maxsplit < 0 || splits < maxsplit) && e >= sep->len) {
            for (size_t p = e - sep->len + 1; p-- > 0;)
                if (!memcmp(s->data + p, sep->data, sep->len)) { h = p; break; }
        }
        if (h == SIZE_MAX) {
            if (push_sub(c, s, 0, e, &v, &n, &cap) < 0) return -1;
            break;
        }
        if (push_sub(c, s, h + sep->len, e, &v, &n, &cap) < 0) return -1;
        e = h;
        splits++;
    }
    for (uint32_t i = 0; i < n / 2; i++) { tval t = v[i]; v[i] = v[n - 1 - i]; v[n - 1 - i] = t; }
    return make_list(c, v, n, LK_LIST, out);
}

int tpl_replace(tpl_ctx *c, const tstr *s, const tstr *old, const tstr *nw, int64_t count, tval *out) {
    if (tpl_charge(c, s->len / TPL_BYTES_PER_STEP) < 0) return -1;
    tbuf b = {0};
    size_t i = 0;
    int64_t done = 0;
    if (old->len == 0) {
        /* insert between every character (and at both ends) */
        if (count < 0 || done < count) { if (tb_put_str(c, &b, nw) < 0) goto fail; done++; }
        while (i < s->len) {
            size_t adv;
            tpl_utf8_decode(s->data + i, s->len - i, &adv);
            if (tb_put_sub(c, &b, s, i, i + adv) < 0) goto fail;
            i += adv;
            if (count < 0 || done < count) { if (tb_put_str(c, &b, nw) < 0) goto fail; done++; }
        }
    } else {
        while (i <= s->len) {
            const char *hit = (count < 0 || done < count) ? memmem(s->data + i, s->len - i, old->data, old->len) : NULL;
            if (!hit) { if (tb_put_sub(c, &b, s, i, s->len) < 0) goto fail; break; }
            size_t h = (size_t)(hit - s->data);
            if (tb_put_sub(c, &b, s, i, h) < 0 || tb_put_str(c, &b, nw) < 0) goto fail;
            i = h + old->len;
            done++;
        }
    }
    {
        tstr *r = tb_finish(c, &b);
        if (!r) return -1;
        *out = tv_str(r);
        return 0;
    }
fail:
    tb_free(c, &b);
    return -1;
}

/* code point index -> byte offset with Python's start/end clamping */
static void norm_range(tpl_ctx *c, tstr *s, tval st, tval en, size_t *a, size_t *e, int64_t *ca) {
    tpl_charge(c, s->len / TPL_BYTES_PER_STEP); /* checked by the caller through c->failed */
    int64_t n = tstr_nchars(s);
    int64_t x = 0, y = n;
    if (st.k == TV_INT || st.k == TV_BOOL) x = st.k == TV_BOOL ? st.u.b : st.u.i;
    if (en.k == TV_INT || en.k == TV_BOOL) y = en.k == TV_BOOL ? en.u.b : en.u.i;
    if (x < 0) { x += n; if (x < 0) x = 0; }
    if (y < 0) { y += n; if (y < 0) y = 0; }
    if (x > n) x = n;
    if (y > n) y = n;
    if (y < x) y = x;
    *a = tstr_byte_at(s, x);
    *e = tstr_byte_at(s, y);
    *ca = x;
}

static int64_t cp_index(const tstr *s, size_t byte) {
    if (s->ascii) return (int64_t)byte;
    int64_t k = 0;
    for (size_t i = 0; i < byte; i++)
        if (((unsigned char)s->data[i] & 0xC0) != 0x80) k++;
    return k;
}

static int affix_test(tpl_ctx *c, tstr *s, const targs *a, bool ends, tval *out) {
    tval args[3];
    static const char *const names[] = {"prefix", "start", "end"};
    if (tpl_bind(c, ends ? "endswith" : "startswith", a, names, 3, args) < 0) return -1;
    if (tv_is_missing(args[0])) return tpl_fail(c, X_TYPE, "%s() takes at least 1 argument (0 given)", ends ? "endswith" : "startswith");
    size_t x, y;
    int64_t ca;
    norm_range(c, s, args[1], args[2], &x, &y, &ca);
    if (c->failed) return -1;
    const tval *cands = &args[0];
    int64_t nc = 1;
    if (args[0].k == TV_LIST && args[0].sub == LK_TUPLE) { cands = args[0].u.l->v; nc = args[0].u.l->n; }
    else if (args[0].k != TV_STR)
        return tpl_fail(c, X_TYPE, "%s first arg must be str or a tuple of str, not %s", ends ? "endswith" : "startswith",
                        tv_type_name(args[0]));
    for (int64_t i = 0; i < nc; i++) {
        if (cands[i].k != TV_STR) return tpl_fail(c, X_TYPE, "tuple for %s must only contain str, not %s", ends ? "endswith" : "startswith", tv_type_name(cands[i]));
        const tstr *p = cands[i].u.s;
        if (p->len > y - x) continue;
        if (!memcmp(s->data + (ends ? y - p->len : x), p->data, p->len)) { *out = tv_bool(true); return 0; }
    }
    *out = tv_bool(false);
    return 0;
}

static int find_like(tpl_ctx *c, tstr *s, const targs *a, int id, tval *out) {
    tval args[3];
    static const char *const names[] = {"sub", "start", "end"};
    const char *fname = id == S_FIND ? "find" : id == S_RFIND ? "rfind" : id == S_INDEX ? "index" : id == S_RINDEX ? "rindex" : "count";
    if (tpl_bind(c, fname, a, names, 3, args) < 0) return -1;
    tstr *sub;
    if (need_str(c, args[0], "", &sub) < 0) return -1;
    size_t x, y;
    int64_t ca;
    norm_range(c, s, args[1], args[2], &x, &y, &ca);
    if (c->failed) return -1;
    if (id == S_COUNT) {
        int64_t k = 0;
        if (sub->len == 0) { k = cp_index(s, y) - ca + 1; *out = tv_int(k); return 0; }
        for (size_t i = x; i + sub->len <= y;) {
            const char *h = memmem(s->data + i, y - i, sub->data, sub->len);
            if (!h) break;
            k++;
            i = (size_t)(h - s->data) + sub->len;
        }
        *out = tv_int(k);
        return 0;
    }
    int64_t pos = -1;
    if (id == S_FIND || id == S_INDEX) {
        if (sub->len <= y - x) {
            const char *h = sub->len ? memmem(s->data + x, y - x, sub->data, sub->len) : s->data + x;
            if (h) pos = cp_index(s, (size_t)(h - s->data));
        }
    } else if (sub->len <= y - x) {
        for (size_t p = y - sub->len + 1; p-- > x;)
            if (!memcmp(s->data + p, sub->data, sub->len)) { pos = cp_index(s, p); break; }
    }
    if (pos < 0 && (id == S_INDEX || id == S_RINDEX)) return tpl_fail(c, X_VALUE, "substring not found");
    *out = tv_int(pos);
    return 0;
}

/* str.expandtabs(tabsize=8): a tab advances to the next multiple of tabsize code
 * points, counted from the last \n or \r; tabsize <= 0 drops tabs */
static int expandtabs(tpl_ctx *c, tstr *s, const targs *a, tval *out) {
    tval args[1];
    static const char *const names[] = {"tabsize"};
    if (tpl_bind(c, "expandtabs", a, names, 1, args) < 0) return -1;
    int64_t ts = 8;
    if (!tv_is_missing(args[0]) && int_arg(c, args[0], 0, &ts) < 0) return -1;
    if (!memchr(s->data, '\t', s->len)) { *out = tv_str(s); return 0; }
    tbuf b = {0};
    int64_t col = 0;
    int rc = 0;
    for (size_t i = 0; i < s->len && !rc; i++) {
        unsigned char ch = (unsigned char)s->data[i];
        if (ch == '\t') {
            if (ts <= 0) continue;
            int64_t nsp = ts - col % ts;
            if ((uint64_t)nsp > c->lim.max_output) return tb_free(c, &b), tpl_fail(c, X_LIMIT, "a string exceeds max_output (%zu bytes)", c->lim.max_output);
            for (int64_t k = 0; k < nsp && !rc; k++) rc |= tb_putc(c, &b, ' ');
            col += nsp;
            continue;
        }
        rc |= tb_putc(c, &b, (char)ch);
        if (ch == '\n' || ch == '\r') col = 0;
        else if ((ch & 0xC0) != 0x80) col++;
    }
    if (rc) { tb_free(c, &b); return -1; }
    tstr *r = tstr_taint_like(c, &b, s);
    if (!r) return -1;
    *out = tv_str(r);
    return 0;
}

static int pad(tpl_ctx *c, tstr *s, const targs *a, int id, tval *out) {
    tval args[2];
    static const char *const names[] = {"width", "fillchar"};
    const char *fname = id == S_CENTER ? "center" : id == S_LJUST ? "ljust" : id == S_RJUST ? "rjust" : "zfill";
    if (tpl_bind(c, fname, a, names, id == S_ZFILL ? 1 : 2, args) < 0) return -1;
    int64_t w;
    if (tv_is_missing(args[0])) return tpl_fail(c, X_TYPE, "%s() takes at least 1 argument (0 given)", fname);
    if (int_arg(c, args[0], 0, &w) < 0) return -1;
    const char *fill = " ";
    size_t fl = 1;
    if (id != S_ZFILL && !tv_is_missing(args[1])) {
        if (args[1].k != TV_STR || tstr_nchars(args[1].u.s) != 1)
            return tpl_fail(c, X_TYPE, "The fill character must be exactly one character long");
        fill = args[1].u.s->data;
        fl = args[1].u.s->len;
    }
    int64_t n = tstr_nchars(s);
    if (w <= n) { *out = tv_str(s); return 0; }
    if ((uint64_t)w > c->lim.max_output) return tpl_fail(c, X_LIMIT, "a string exceeds max_output (%zu bytes)", c->lim.max_output);
    int64_t total = w - n, left = 0;
    if (id == S_CENTER) left = total / 2 + ((total & w & 1) ? 1 : 0);
    else if (id == S_RJUST) left = total;
    tbuf b = {0};
    int rc = 0;
    if (id == S_ZFILL) {
        size_t start = 0;
        if (s->len && (s->data[0] == '+' || s->data[0] == '-')) { rc |= tb_put_sub(c, &b, s, 0, 1); start = 1; }
        for (int64_t i = 0; i < total && !rc; i++) rc |= tb_putc(c, &b, '0');
        if (!rc) rc |= tb_put_sub(c, &b, s, start, s->len);
    } else {
        for (int64_t i = 0; i < left && !rc; i++) rc |= tb_put(c, &b, fill, fl);
        if (!rc) rc |= tb_put_str(c, &b, s);
        for (int64_t i = left; i < total && !rc; i++) rc |= tb_put(c, &b, fill, fl);
    }
    if (rc) { tb_free(c, &b); return -1; }
    tstr *r = tb_finish(c, &b);
    if (!r) return -1;
    *out = tv_str(r);
    return 0;
}

static int str_pred(tstr *s, int id) {
    if (s->len == 0) return 0;
    bool any_cased = false, ok = true;
    bool prev_cased = false, title_ok = true, any_title = false;
    for (size_t i = 0; i < s->len && ok;) {
        size_t adv;
        uint32_t cp = tpl_utf8_decode(s->data + i, s->len - i, &adv);
        i += adv;
        switch (id) {
        case S_ISALNUM: ok = tpl_is_alpha(cp) || tpl_is_numeric(cp); break;
        case S_ISALPHA: ok = tpl_is_alpha(cp); break;
        case S_ISASCII: ok = cp < 0x80; break;
        case S_ISDECIMAL: ok = tpl_is_decimal(cp); break;
        case S_ISDIGIT: ok = tpl_is_digit(cp); break;
        case S_ISNUMERIC: ok = tpl_is_numeric(cp); break;
        case S_ISSPACE: ok = tpl_is_space(cp); break;
        case S_ISIDENTIFIER:
            ok = cp == '_' || tpl_is_alpha(cp) || (i - adv > 0 && tpl_is_numeric(cp));
            break;
        case S_ISLOWER:
            if (tpl_is_upper(cp)) ok = false;
            else if (tpl_is_lower(cp)) any_cased = true;
            break;
        case S_ISUPPER:
            if (tpl_is_lower(cp)) ok = false;
            else if (tpl_is_upper(cp)) any_cased = true;
            break;
        case S_ISTITLE: /* an upper or titlecase (Lt) letter starts a word */
            if (tpl_is_upper(cp) || (tpl_is_cased(cp) && !tpl_is_lower(cp))) {
                if (prev_cased) title_ok = false;
                prev_cased = true;
                any_title = true;
            } else if (tpl_is_lower(cp)) {
                if (!prev_cased) title_ok = false;
                prev_cased = true;
            } else prev_cased = tpl_is_cased(cp);
            break;
        default: break;
        }
    }
    if (id == S_ISASCII && s->len == 0) return 1;
    if (id == S_ISLOWER || id == S_ISUPPER) return ok && any_cased;
    if (id == S_ISTITLE) return title_ok && any_title;
    return ok;
}

static int no_args(tpl_ctx *c, const targs *a, const char *fname) {
    if (a->npos || a->nkw) return tpl_fail(c, X_TYPE, "%s() takes no arguments (%u given)", fname, a->npos + a->nkw);
    return 0;
}

static int partition(tpl_ctx *c, tstr *s, const targs *a, bool right, tval *out) {
    tval args[1];
    static const char *const names[] = {"sep"};
    if (tpl_bind(c, right ? "rpartition" : "partition", a, names, 1, args) < 0) return -1;
    tstr *sep;
    if (need_str(c, args[0], "", &sep) < 0) return -1;
    if (sep->len == 0) return tpl_fail(c, X_VALUE, "empty separator");
    size_t h = SIZE_MAX;
    if (!right) {
        const char *p = memmem(s->data, s->len, sep->data, sep->len);
        if (p) h = (size_t)(p - s->data);
    } else if (sep->len <= s->len) {
        for (size_t p = s->len - sep->len + 1; p-- > 0;)
            if (!memcmp(s->data + p, sep->data, sep->len)) { h = p; break; }
    }
    tval parts[3];
    if (h == SIZE_MAX) {
        parts[0] = parts[1] = parts[2] = tv_str((tstr *)&tpl_empty_str);
        parts[right ? 2 : 0] = tv_str(s);
    } else {
        tstr *x = tstr_sub(c, s, 0, h), *y = tstr_sub(c, s, h, h + sep->len), *z = tstr_sub(c, s, h + sep->len, s->len);
        if (!x || !y || !z) return -1;
        parts[0] = tv_str(x);
        parts[1] = tv_str(y);
        parts[2] = tv_str(z);
    }
    return make_list(c, parts, 3, LK_TUPLE, out);
}

static int splitlines(tpl_ctx *c, tstr *s, const targs *a, tval *out) {
    tval args[1];
    static const char *const names[] = {"keepends"};
    if (tpl_bind(c, "splitlines", a, names, 1, args) < 0) return -1;
    bool keep = !tv_is_missing(args[0]) && tv_truthy(args[0]);
    tval *v = NULL;
    uint32_t n = 0, cap = 0;
    size_t i = 0, start = 0;
    while (i < s->len) {
        size_t adv;
        uint32_t cp = tpl_utf8_decode(s->data + i, s->len - i, &adv);
        bool br = cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D || cp == 0x1E ||
                  cp == 0x85 || cp == 0x2028 || cp == 0x2029;
        if (!br) { i += adv; continue; }
        size_t eol = i + adv;
        if (cp == '\r' && eol < s->len && s->data[eol] == '\n') eol++;
        if (push_sub(c, s, start, keep ? eol : i, &v, &n, &cap) < 0) return -1;
        i = start = eol;
    }
    if (start < s->len && push_sub(c, s, start, s->len, &v, &n, &cap) < 0) return -1;
    return make_list(c, v, n, LK_LIST, out);
}

/* ------------------------------------------------------------------ dispatch */

static int str_method(tpl_ctx *c, int id, tstr *s, const targs *a, tval *out) {
    tval args[3];
    switch (id) {
    case S_UPPER: case S_LOWER: case S_CASEFOLD: case S_TITLE: case S_CAPITALIZE: case S_SWAPCASE: {
        static const char *const fnames[] = {"upper", "lower", "casefold", "title", "capitalize", "swapcase"};
        int k = id == S_UPPER ? 0 : id == S_LOWER ? 1 : id == S_CASEFOLD ? 2 : id == S_TITLE ? 3 : id == S_CAPITALIZE ? 4 : 5;
        if (no_args(c, a, fnames[k]) < 0) return -1;
        int mode = id == S_UPPER ? CASE_UPPER : id == S_LOWER ? CASE_LOWER : id == S_CASEFOLD ? CASE_FOLD
                 : id == S_TITLE ? CASE_TITLE_WORDS : id == S_CAPITALIZE ? CASE_CAPITALIZE : CASE_SWAP;
        tstr *r;
        if (tpl_case_convert(c, s, mode, &r) < 0) return -1;
        *out = tv_str(r);
        return 0;
    }
    case S_STRIP: case S_LSTRIP: case S_RSTRIP: {
        static const char *const names[] = {"chars"};
        if (tpl_bind(c, id == S_STRIP ? "strip" : id == S_LSTRIP ? "lstrip" : "rstrip", a, names, 1, args) < 0) return -1;
        return tpl_strip(c, s, args[0], id == S_STRIP ? 3 : id == S_LSTRIP ? 1 : 2, out);
    }
    case S_SPLIT: case S_RSPLIT: {
        static const char *const names[] = {"sep", "maxsplit"};
        if (tpl_bind(c, id == S_SPLIT ? "split" : "rsplit", a, names, 2, args) < 0) return -1;
        int64_t maxsplit;
        if (int_arg(c, args[1], -1, &maxsplit) < 0) return -1;
        return tpl_split(c, s, args[0], maxsplit, id == S_RSPLIT, out);
    }
    case S_SPLITLINES: return splitlines(c, s, a, out);
    case S_STARTSWITH: case S_ENDSWITH: return affix_test(c, s, a, id == S_ENDSWITH, out);
    case S_FIND: case S_RFIND: case S_INDEX: case S_RINDEX: case S_COUNT: return find_like(c, s, a, id, out);
    case S_REPLACE: {
        static const char *const names[] = {"old", "new", "count"};
        if (tpl_bind(c, "replace", a, names, 3, args) < 0) return -1;
        tstr *o, *nw;
        if (need_str(c, args[0], "replace() argument 1", &o) < 0 || need_str(c, args[1], "replace() argument 2", &nw) < 0) return -1;
        int64_t cnt;
        if (int_arg(c, args[2], -1, &cnt) < 0) return -1;
        return tpl_replace(c, s, o, nw, cnt, out);
    }
    case S_JOIN: {
        static const char *const names[] = {"iterable"};
        if (tpl_bind(c, "join", a, names, 1, args) < 0) return -1;
        const tval *items;
        int64_t n;
        if (tv_iter(c, args[0], &items, &n) < 0) return -1;
        tbuf b = {0};
        for (int64_t i = 0; i < n; i++) {
            if (items[i].k != TV_STR) {
                tb_free(c, &b);
                return tpl_fail(c, X_TYPE, "sequence item %" PRId64 ": expected str instance, %s found", i, tv_type_name(items[i]));
            }
            if ((i && tb_put_str(c, &b, s) < 0) || tb_put_str(c, &b, items[i].u.s) < 0) { tb_free(c, &b); return -1; }
        }
        tstr *r = tb_finish(c, &b);
        if (!r) return -1;
        *out = tv_str(r);
        return 0;
    }
    case S_CENTER: case S_LJUST: case S_RJUST: case S_ZFILL: return pad(c, s, a, id, out);
    case S_EXPANDTABS: return expandtabs(c, s, a, out);
    case S_ISPRINTABLE: { /* true for the empty string */
        if (no_args(c, a, "isprintable") < 0 || tpl_charge(c, s->len / TPL_BYTES_PER_STEP) < 0) return -1;
        bool ok = true;
        for (size_t i = 0; i < s->len && ok;) {
            size_t adv;
            ok = tpl_is_printable(tpl_utf8_decode(s->data + i, s->len - i, &adv));
            i += adv;
        }
        *out = tv_bool(ok);
        return 0;
    }
    case S_PARTITION: case S_RPARTITION: return partition(c, s, a, id == S_RPARTITION, out);
    case S_REMOVEPREFIX: case S_REMOVESUFFIX: {
        static const char *const names[] = {"affix"};
        if (tpl_bind(c, id == S_REMOVEPREFIX ? "removeprefix" : "removesuffix", a, names, 1, args) < 0) return -1;
        tstr *p;
        if (need_str(c, args[0], id == S_REMOVEPREFIX ? "removeprefix() argument" : "removesuffix() argument", &p) < 0) return -1;
        tstr *r = s;
        if (p->len <= s->len) {
            if (id == S_REMOVEPREFIX && !memcmp(s->data, p->data, p->len)) r = tstr_sub(c, s, p->len, s->len);
            if (id == S_REMOVESUFFIX && p->len && !memcmp(s->data + s->len - p->len, p->data, p->len)) r = tstr_sub(c, s, 0, s->len - p->len);
        }
        if (!r) return -1;
        *out = tv_str(r);
        return 0;
    }
    case S_FORMAT: return tpl_str_format(c, s, false, a, out);
    case S_FORMAT_MAP: {
        if (a->npos != 1 || a->nkw) return tpl_fail(c, X_TYPE, "format_map() takes exactly one argument (%u given)", a->npos);
        if (a->pos[0].k != TV_DICT) return tpl_fail(c, X_TYPE, "format_map() argument must be a mapping");
        targs b = {0};
        tdict *d = a->pos[0].u.d;
        b.nkw = d->n;
        b.kwn = tpl_alloc(c, (d->n + 1) * sizeof(tstr *));
        b.kwv = d->vals;
        if (!b.kwn) return -1;
        for (uint32_t i = 0; i < d->n; i++) {
            if (d->keys[i].k != TV_STR) return tpl_fail(c, X_TYPE, "format_map() keys must be str");
            b.kwn[i] = d->keys[i].u.s;
        }
        return tpl_str_format(c, s, false, &b, out);
    }
    default:
        if (id >= S_ISALNUM && id <= S_ISUPPER) {
            if (no_args(c, a, str_names[id - M_S_FIRST]) < 0 || tpl_charge(c, s->len / TPL_BYTES_PER_STEP) < 0) return -1;
            *out = tv_bool(str_pred(s, id));
            return 0;
        }
        return tpl_fail(c, X_RUNTIME, "internal: unknown str method");
    }
}

static int dict_view(tpl_ctx *c, tdict *d, int kind, tval *out) {
    tlist *l = tl_new(c, d->n);
    if (!l) return -1;
    for (uint32_t i = 0; i < d->n; i++) {
        if (kind == LK_KEYS) l->v[i] = d->keys[i];
        else if (kind == LK_VALUES) l->v[i] = d->vals[i];
        else {
            tlist *p = tl_new(c, 2);
            if (!p) return -1;
            p->v[0] = d->keys[i];
            p->v[1] = d->vals[i];
            if (tl_finish_depth(c, p) < 0) return -1;
            l->v[i] = tv_list(p, LK_TUPLE);
        }
    }
    if (tl_finish_depth(c, l) < 0) return -1;
    *out = tv_list(l, kind);
    return 0;
}

static int make_range(tpl_ctx *c, const targs *a, tval *out) {
    if (a->nkw) return tpl_fail(c, X_TYPE, "range() takes no keyword arguments");
    if (a->npos < 1 || a->npos > 3) return tpl_fail(c, X_TYPE, "range expected at most 3 arguments, got %u", a->npos);
    int64_t v[3] = {0, 0, 1};
    for (uint32_t i = 0; i < a->npos; i++) {
        tval x = a->pos[i];
        if (x.k == TV_UNDEF) return tpl_undef_fail(c, x);
        if (x.k != TV_INT && x.k != TV_BOOL)
            return tpl_fail(c, X_TYPE, "'%s' object cannot be interpreted as an integer", tv_type_name(x));
        v[a->npos == 1 ? 1 : i] = x.k == TV_BOOL ? x.u.b : x.u.i;
    }
    if (v[2] == 0) return tpl_fail(c, X_VALUE, "range() arg 3 must not be zero");
    /* number of items, overflow-safe */
    uint64_t cnt = 0;
    if (v[2] > 0 && v[1] > v[0]) {
        uint64_t diff = (uint64_t)v[1] - (uint64_t)v[0], st = (uint64_t)v[2];
        cnt = diff / st + (diff % st != 0);
    } else if (v[2] < 0 && v[0] > v[1]) {
        uint64_t diff = (uint64_t)v[0] - (uint64_t)v[1], st = v[2] == INT64_MIN ? (uint64_t)1 << 63 : (uint64_t)(-v[2]);
        cnt = diff / st + (diff % st != 0);
    }
    if (cnt > 100000)
        return tpl_fail(c, X_OVERFLOW, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    tlist *l = tl_new(c, (uint32_t)cnt);
    if (!l) return -1;
    for (int64_t i = 0; i < (int64_t)cnt; i++) l->v[i] = tv_int(v[0] + i * v[2]);
    l->r0 = v[0];
    l->r1 = v[1];
    l->r2 = v[2];
    *out = tv_list(l, LK_RANGE);
    return 0;
}

/* dict(mapping_or_pairs, **kw) */
static int build_dict(tpl_ctx *c, const targs *a, tdict **out, const char *fname) {
    if (a->npos > 1) return tpl_fail(c, X_TYPE, "%s expected at most 1 argument, got %u", fname, a->npos);
    tdict *d = td_new(c, 4 + a->nkw);
    if (!d) return -1;
    if (a->npos == 1) {
        tval src = a->pos[0];
        if (src.k == TV_DICT) {
            for (uint32_t i = 0; i < src.u.d->n; i++)
                if (td_set(c, d, src.u.d->keys[i], src.u.d->vals[i]) < 0) return -1;
        } else {
            const tval *items;
            int64_t n;
            if (tv_iter(c, src, &items, &n) < 0) return -1;
            for (int64_t i = 0; i < n; i++) {
                const tval *pair;
                int64_t pn;
                if (items[i].k != TV_LIST && items[i].k != TV_STR && items[i].k != TV_DICT)
                    return tpl_fail(c, X_TYPE, "cannot convert dictionary update sequence element #%" PRId64 " to a sequence", i);
                if (tv_iter(c, items[i], &pair, &pn) < 0) return -1;
                if (pn != 2)
                    return tpl_fail(c, X_VALUE, "dictionary update sequence element #%" PRId64 " has length %" PRId64 "; 2 is required", i, pn);
                if (!tv_hashable(pair[0])) return tpl_fail(c, X_TYPE, "unhashable type: '%s'", tv_type_name(pair[0]));
                if (td_set(c, d, pair[0], pair[1]) < 0) return -1;
            }
        }
    }
    for (uint32_t k = 0; k < a->nkw; k++)
        if (td_set(c, d, tv_str((tstr *)a->kwn[k]), a->kwv[k]) < 0) return -1;
    *out = d;
    return 0;
}

static int escape_arg(tpl_ctx *c, tval v, tval *out) {
    if (v.k != TV_STR) { *out = v; return 0; }
    return tpl_escape_val(c, v, false, out);
}

static void mark_items(tval *v) {
    if (v->k == TV_STR) { v->sub = 1; return; }
    if (v->k == TV_LIST)
        for (uint32_t i = 0; i < v->u.l->n; i++)
            if (v->u.l->v[i].k == TV_STR) v->u.l->v[i].sub = 1;
}

/* markupsafe (3.0) Markup's methods: the results stay Markup; of the arguments only
 * replace's `new` and the fill character of ljust / rjust / center are escaped */
static int markup_method(tpl_ctx *c, int id, tstr *s, const targs *a, tval *out) {
    targs e = *a;
    switch (id) {
    case S_REPLACE: case S_LJUST: case S_RJUST: case S_CENTER:
        e.pos = tpl_alloc(c, (a->npos + 1) * sizeof(tval));
        e.kwv = tpl_alloc(c, (a->nkw + 1) * sizeof(tval));
        if (!e.pos || !e.kwv) return -1;
        for (uint32_t i = 0; i < a->npos; i++) {
            e.pos[i] = a->pos[i];
            if (i == 1 && escape_arg(c, a->pos[i], &e.pos[i]) < 0) return -1;
        }
        for (uint32_t i = 0; i < a->nkw; i++) {
            e.kwv[i] = a->kwv[i];
            if ((tstr_eq(a->kwn[i], "new") || tstr_eq(a->kwn[i], "fillchar")) && escape_arg(c, a->kwv[i], &e.kwv[i]) < 0)
                return -1;
        }
        if (str_method(c, id, s, &e, out) < 0) return -1;
        mark_items(out);
        return 0;
    case S_CAPITALIZE: case S_TITLE: case S_LOWER: case S_UPPER: case S_LSTRIP: case S_RSTRIP: case S_STRIP:
    case S_SWAPCASE: case S_ZFILL: case S_PARTITION: case S_RPARTITION: case S_EXPANDTABS: case S_CASEFOLD:
    case S_REMOVEPREFIX: case S_REMOVESUFFIX:
    case S_SPLIT: case S_RSPLIT: case S_SPLITLINES:
        if (str_method(c, id, s, a, out) < 0) return -1;
        mark_items(out);
        return 0;
    case S_JOIN: {
        if (a->npos != 1 || a->nkw) return str_method(c, id, s, a, out);
        const tval *items;
        int64_t n;
        if (tv_iter(c, a->pos[0], &items, &n) < 0) return -1;
        tval *esc = tpl_alloc(c, ((size_t)n + 1) * sizeof(tval));
        if (!esc) return -1;
        for (int64_t i = 0; i < n; i++)
            if (escape_arg(c, items[i], &esc[i]) < 0) return -1;
        tval lst;
        if (make_list(c, esc, (uint32_t)n, LK_LIST, &lst) < 0) return -1;
        e.pos = &lst;
        if (str_method(c, id, s, &e, out) < 0) return -1;
        mark_items(out);
        return 0;
    }
    case S_FORMAT: return tpl_str_format(c, s, true, a, out);
    default: return str_method(c, id, s, a, out);
    }
}

int tpl_call_builtin(tpl_ctx *c, int id, tval self, const targs *a, tval *out) {
    tval args[3];
    if (id >= M_S_FIRST && id < M_S_LAST)
        return self.sub == 1 ? markup_method(c, id, self.u.s, a, out) : str_method(c, id, self.u.s, a, out);
    switch (id) {
    case G_RANGE: return make_range(c, a, out);
    case G_DICT: {
        tdict *d;
        if (build_dict(c, a, &d, "dict") < 0) return -1;
        *out = (tval){0};
        out->k = TV_DICT;
        out->u.d = d;
        return 0;
    }
    case G_NAMESPACE: {
        tdict *d;
        tns *ns = tpl_alloc(c, sizeof(tns));
        if (!ns || build_dict(c, a, &d, "namespace") < 0) return -1;
        ns->attrs = d;
        *out = (tval){0};
        out->k = TV_NS;
        out->u.ns = ns;
        return 0;
    }
    case G_RAISE: {
        if (a->npos + a->nkw != 1) return tpl_fail(c, X_TYPE, "raise_exception() takes exactly 1 argument (%u given)", a->npos + a->nkw);
        tstr *msg;
        if (tv_str_of(c, a->npos ? a->pos[0] : a->kwv[0], &msg) < 0) return -1;
        return tpl_fail(c, X_TEMPLATE, "%s", msg->data);
    }
    case G_STRFTIME: {
        static const char *const names[] = {"format"};
        if (tpl_bind(c, "strftime_now", a, names, 1, args) < 0) return -1;
        tstr *fmt;
        if (tv_is_missing(args[0])) return tpl_fail(c, X_TYPE, "strftime_now() missing 1 required positional argument: 'format'");
        if (need_str(c, args[0], "strftime() argument 1", &fmt) < 0) return -1;
        return tpl_strftime(c, fmt, out);
    }
    case G_CYCLER: case G_JOINER: {
        if (id == G_CYCLER && a->npos == 0) return tpl_fail(c, X_RUNTIME, "at least one item has to be provided");
        tobj *o = tpl_alloc(c, sizeof(tobj));
        if (!o) return -1;
        if (id == G_CYCLER) {
            o->items = a->pos;
            o->n = a->npos;
        } else {
            static const char *const names[] = {"sep"};
            if (tpl_bind(c, "joiner", a, names, 1, args) < 0) return -1;
            if (tv_is_missing(args[0])) o->sep = tstr_new(c, ", ", 2);
            else if (tv_str_of(c, args[0], &o->sep) < 0) return -1;
            if (!o->sep) return -1;
        }
        *out = (tval){0};
        out->k = (uint8_t)(id == G_CYCLER ? TV_CYCLER : TV_JOINER);
        out->u.o = o;
        return 0;
    }
    case G_LIPSUM: return tpl_fail(c, X_RUNTIME, "lipsum() is not supported (it is random)");
    case D_ITEMS: case D_KEYS: case D_VALUES:
        if (no_args(c, a, id == D_ITEMS ? "items" : id == D_KEYS ? "keys" : "values") < 0) return -1;
        return dict_view(c, self.u.d, id == D_ITEMS ? LK_ITEMS : id == D_KEYS ? LK_KEYS : LK_VALUES, out);
    case D_GET: {
        if (a->nkw) return tpl_fail(c, X_TYPE, "get() takes no keyword arguments");
        if (a->npos < 1 || a->npos > 2) return tpl_fail(c, X_TYPE, "get expected at most 2 arguments, got %u", a->npos);
        if (!tv_hashable(a->pos[0])) return tpl_fail(c, X_TYPE, "unhashable type: '%s'", tv_type_name(a->pos[0]));
        uint32_t idx;
        int f = td_find(c, self.u.d, a->pos[0], &idx);
        if (f < 0) return -1;
        *out = f ? self.u.d->vals[idx] : (a->npos == 2 ? a->pos[1] : tv_none());
        return 0;
    }
    case D_COPY: {
        if (no_args(c, a, "copy") < 0) return -1;
        tdict *d = td_new(c, self.u.d->n + 1);
        if (!d) return -1;
        for (uint32_t i = 0; i < self.u.d->n; i++)
            if (td_set(c, d, self.u.d->keys[i], self.u.d->vals[i]) < 0) return -1;
        *out = (tval){0};
        out->k = TV_DICT;
        out->u.d = d;
        return 0;
    }
    case L_INDEX: case L_COUNT: {
        if (a->npos < 1 || a->nkw) return tpl_fail(c, X_TYPE, "%s() takes at least 1 argument", id == L_INDEX ? "index" : "count");
        tlist *l = self.u.l;
        int64_t k = 0;
        if (tpl_charge(c, l->n / 2) < 0) return -1;
        for (uint32_t i = 0; i < l->n; i++) {
            bool eq;
            if (tv_eq(c, l->v[i], a->pos[0], &eq) < 0) return -1;
            if (!eq) continue;
            if (id == L_INDEX) { *out = tv_int(i); return 0; }
            k++;
        }
        if (id == L_INDEX) {
            tbuf b = {0};
            if (tv_write_repr(c, &b, a->pos[0], 0) < 0) { tb_free(c, &b); return -1; }
            tstr *r = tb_finish(c, &b);
            return tpl_fail(c, X_VALUE, "%s is not in %s", r ? r->data : "value", self.sub == LK_TUPLE ? "tuple" : "list");
        }
        *out = tv_int(k);
        return 0;
    }
    case L_COPY: {
        if (no_args(c, a, "copy") < 0) return -1;
        return make_list(c, self.u.l->v, self.u.l->n, LK_LIST, out);
    }
    case LP_CYCLE: {
        if (a->npos == 0) return tpl_fail(c, X_TYPE, "no items for cycling given");
        *out = a->pos[self.u.lp->i % a->npos];
        return 0;
    }
    case LP_CHANGED: {
        tval cur;
        if (make_list(c, a->pos, a->npos, LK_TUPLE, &cur) < 0) return -1;
        tloop *lp = self.u.lp;
        bool same = false;
        if (lp->has_changed && tv_eq(c, lp->changed_last, cur, &same) < 0) return -1;
        if (lp->has_changed && same) { *out = tv_bool(false); return 0; }
        lp->changed_last = cur;
        lp->has_changed = true;
        *out = tv_bool(true);
        return 0;
    }
    case CY_NEXT: {
        tobj *o = self.u.o;
        *out = o->items[o->pos];
        o->pos = (o->pos + 1) % o->n;
        return 0;
    }
    case CY_RESET: self.u.o->pos = 0; *out = tv_none(); return 0;
    default: return tpl_fail(c, X_RUNTIME, "internal: unknown builtin %d", id);
    }
}
