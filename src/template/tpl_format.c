/* Python string formatting for templates: str.format (format-spec mini-language,
 * field names with .attr / [key], !r !s !a), printf-style `str % args`, and
 * strftime_now (datetime.strftime: %f %z %Z handled here, the rest by the C
 * library in the "C" locale, like CPython on glibc). */
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tpl.h"

typedef struct fspec {
    char fill[5];
    size_t fill_len;
    char align;   /* 0, '<', '>', '=', '^' */
    char sign;    /* 0, '+', '-', ' ' */
    bool alt, zero;
    bool zero_align;  /* align '=' came from the '0' flag (numbers' default), not the spec */
    int64_t width;
    char group;   /* 0, ',', '_' */
    bool has_prec;
    int64_t prec;
    char type;
} fspec;

static int parse_spec(tpl_ctx *c, const char *s, size_t n, fspec *f) {
    memset(f, 0, sizeof *f);
    f->prec = -1;
    size_t i = 0;
    if (n) {
        size_t adv;
        tpl_utf8_decode(s, n, &adv);
        if (adv < n && strchr("<>=^", s[adv]) && s[adv]) {
            memcpy(f->fill, s, adv);
            f->fill_len = adv;
            f->align = s[adv];
            i = adv + 1;
        } else if (strchr("<>=^", s[0]) && s[0]) {
            f->align = s[0];
            i = 1;
        }
    }
    if (i < n && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) f->sign = s[i++];
    if (i < n && s[i] == 'z') i++;
    if (i < n && s[i] == '#') { f->alt = true; i++; }
    if (i < n && s[i] == '0') { f->zero = true; i++; }
    while (i < n && s[i] >= '0' && s[i] <= '9') {
        f->width = f->width * 10 + (s[i++] - '0');
        if (f->width > 1000000) return tpl_fail(c, X_VALUE, "Too many decimal digits in format string");
    }
    if (i < n && (s[i] == ',' || s[i] == '_')) f->group = s[i++];
    if (i < n && s[i] == '.') {
        i++;
        if (i >= n || s[i] < '0' || s[i] > '9') return tpl_fail(c, X_VALUE, "Format specifier missing precision");
        f->has_prec = true;
        f->prec = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            f->prec = f->prec * 10 + (s[i++] - '0');
            if (f->prec > 1000) return tpl_fail(c, X_VALUE, "Too many decimal digits in format string");
        }
    }
    if (i < n) f->type = s[i++];
    if (i < n) return tpl_fail(c, X_VALUE, "Invalid format specifier");
    if (f->zero && !f->fill_len) { /* CPython: '0' sets the fill unless one was given */
        f->fill[0] = '0';
        f->fill_len = 1;
        if (!f->align) { f->align = '='; f->zero_align = true; }
    }
    if (!f->fill_len) {
        f->fill[0] = ' ';
        f->fill_len = 1;
    }
    return 0;
}

static size_t nchars_of(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) k++;
    return k;
}

/* pad body (sign prefix kept apart for '=') to the width */
static int emit_padded(tpl_ctx *c, tbuf *b, const fspec *f, const char *prefix, const char *body, size_t blen,
                       char default_align) {
    size_t plen = strlen(prefix);
    size_t len = nchars_of(prefix, plen) + nchars_of(body, blen);
    int64_t padn = f->width > (int64_t)len ? f->width - (int64_t)len : 0;
    char al = f->align ? f->align : default_align;
    int64_t left = al == '>' ? padn : al == '^' ? padn / 2 : 0, right = al == '<' ? padn : al == '^' ? padn - padn / 2 : 0;
    int64_t mid = al == '=' ? padn : 0;
    for (int64_t i = 0; i < left; i++)
        if (tb_put(c, b, f->fill, f->fill_len) < 0) return -1;
    if (tb_put(c, b, prefix, plen) < 0) return -1;
    for (int64_t i = 0; i < mid; i++)
        if (tb_put(c, b, f->fill, f->fill_len) < 0) return -1;
    if (tb_put(c, b, body, blen) < 0) return -1;
    for (int64_t i = 0; i < right; i++)
        if (tb_put(c, b, f->fill, f->fill_len) < 0) return -1;
    return 0;
}

/* insert grouping separators into the integer digits of s (in place, buffer big enough) */
static void group_digits(char *s, char sep, int every) {
    char *dot = s;
    while (*dot && *dot >= '0' && *dot <= '9') dot++;
    size_t nd = (size_t)(dot - s);
    if (nd <= (size_t)every) return;
    size_t extra = (nd - 1) / (size_t)every;
    size_t tail = strlen(dot);
    memmove(s + nd + extra, dot, tail + 1);
    char *o = s + nd + extra;
    size_t k = 0;
    for (size_t i = nd; i-- > 0;) {
        *--o = s[i];
        if (++k % (size_t)every == 0 && i > 0) *--o = sep;
    }
}

static int fmt_float(tpl_ctx *c, tbuf *b, double x, const fspec *f, char type) {
    char body[1600];
    bool neg = signbit(x) && !isnan(x);
    double ax = fabs(x);
    int64_t prec = f->has_prec ? f->prec : 6;
    bool upper = type == 'E' || type == 'F' || type == 'G';
    if (isinf(ax) || isnan(ax)) {
        snprintf(body, sizeof body, "%s%s", isnan(ax) ? (upper ? "NAN" : "nan") : (upper ? "INF" : "inf"), type == '%' ? "%" : "");
    } else if (type == 0) {
        if (!f->has_prec) {
            tpl_format_float(ax, body, sizeof body);
        } else {
            int p = prec == 0 ? 1 : (int)prec;
            snprintf(body, sizeof body, f->alt ? "%#.*g" : "%.*g", p, ax);
            if (!strchr(body, '.') && !strchr(body, 'e') && !strchr(body, 'n') && !strchr(body, 'i')) strcat(body, ".0");
        }
    } else {
        char cf[8] = "%.*f";
        int p = (int)prec;
        switch (type) {
        case 'e': case 'E': strcpy(cf, f->alt ? "%#.*e" : "%.*e"); cf[f->alt ? 4 : 3] = type; break;
        case 'f': case 'F': strcpy(cf, f->alt ? "%#.*f" : "%.*f"); break;
        case 'g': case 'G': case 'n':
            strcpy(cf, f->alt ? "%#.*g" : "%.*g");
            if (type == 'G') cf[f->alt ? 4 : 3] = 'G';
            if (p == 0) p = 1;
            break;
        case '%': strcpy(cf, f->alt ? "%#.*f" : "%.*f"); ax *= 100; break;
        default: return tpl_fail(c, X_VALUE, "Unknown format code '%c' for object of type 'float'", type);
        }
        snprintf(body, sizeof body - 2, cf, p, ax);
        if (type == '%') strcat(body, "%");
    }
    if (f->group && (isfinite(ax))) group_digits(body, f->group, 3);
    const char *prefix = neg ? "-" : f->sign == '+' ? "+" : f->sign == ' ' ? " " : "";
    return emit_padded(c, b, f, prefix, body, strlen(body), '>');
}

static int fmt_int(tpl_ctx *c, tbuf *b, int64_t v, const fspec *f) {
    char type = f->type;
    if (strchr("eEfFgG%", type) && type) return fmt_float(c, b, (double)v, f, type);
    if (f->has_prec) return tpl_fail(c, X_VALUE, "Precision not allowed in integer format specifier");
    char body[200];
    uint64_t av = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    const char *pfx = "";
    switch (type) {
    case 0: case 'd': case 'n': snprintf(body, sizeof body, "%" PRIu64, av); break;
    case 'x': snprintf(body, sizeof body, "%" PRIx64, av); pfx = "0x"; break;
    case 'X': snprintf(body, sizeof body, "%" PRIX64, av); pfx = "0X"; break;
    case 'o': snprintf(body, sizeof body, "%" PRIo64, av); pfx = "0o"; break;
    case 'b': {
        char tmp[70];
        int k = 0;
        do { tmp[k++] = (char)('0' + (av & 1)); av >>= 1; } while (av);
        for (int i = 0; i < k; i++) body[i] = tmp[k - 1 - i];
        body[k] = 0;
        pfx = "0b";
        break;
    }
    case 'c': {
        if (v < 0 || v > 0x10FFFF) return tpl_fail(c, X_OVERFLOW, "%%c arg not in range(0x110000)");
        size_t k = loom_utf8_encode((uint32_t)v, (unsigned char *)body);
        body[k] = 0;
        return emit_padded(c, b, f, "", body, k, '<');
    }
    default: return tpl_fail(c, X_VALUE, "Unknown format code '%c' for object of type 'int'", type);
    }
    if (f->group) group_digits(body, f->group, (type == 'x' || type == 'X' || type == 'o' || type == 'b') ? 4 : 3);
    char prefix[8];
    snprintf(prefix, sizeof prefix, "%s%s", v < 0 ? "-" : f->sign == '+' ? "+" : f->sign == ' ' ? " " : "", f->alt ? pfx : "");
    return emit_padded(c, b, f, prefix, body, strlen(body), '>');
}

/* format(value, spec) appended to b */
static int format_value(tpl_ctx *c, tbuf *b, tval v, const char *spec, size_t slen) {
    if (slen == 0) return tv_write_str(c, b, v);
    fspec f;
    if (parse_spec(c, spec, slen, &f) < 0) return -1;
    switch (v.k) {
    case TV_STR: {
        /* CPython's order: the separator check of the spec parser (type defaults to
         * 's'), then the type, then sign, '#', '=' */
        if (f.group && !(f.group == '_' && f.type && strchr("bxXo", f.type)) && !(f.type && strchr("deEfFgG%", f.type)))
            return tpl_fail(c, X_VALUE, "Cannot specify '%c' with '%c'.", f.group, f.type ? f.type : 's');
        if (f.type && f.type != 's') return tpl_fail(c, X_VALUE, "Unknown format code '%c' for object of type 'str'", f.type);
        if (f.zero_align) f.align = 0; /* a string's default alignment is '<' */
        if (f.sign == ' ') return tpl_fail(c, X_VALUE, "Space not allowed in string format specifier");
        if (f.sign) return tpl_fail(c, X_VALUE, "Sign not allowed in string format specifier");
        if (f.alt) return tpl_fail(c, X_VALUE, "Alternate form (#) not allowed in string format specifier");
        if (f.align == '=') return tpl_fail(c, X_VALUE, "'=' alignment not allowed in string format specifier");
        size_t e = v.u.s->len;
        if (f.has_prec) e = tstr_byte_at(v.u.s, f.prec);
        size_t start = b->n;
        if (emit_padded(c, b, &f, "", v.u.s->data, e, '<') < 0) return -1;
        return v.u.s->nspan ? tb_mark(c, b, start, b->n) : 0;
    }
    case TV_BOOL:
    case TV_INT: return fmt_int(c, b, v.k == TV_BOOL ? v.u.b : v.u.i, &f);
    case TV_FLOAT: return fmt_float(c, b, v.u.f, &f, f.type);
    case TV_UNDEF: return tpl_undef_fail(c, v);
    default:
        return tpl_fail(c, X_TYPE, "unsupported format string passed to %s.__format__", tv_type_name(v));
    }
}

static int write_ascii_repr(tpl_ctx *c, tbuf *b, tval v) {
    tbuf t = {0};
    if (tv_write_repr(c, &t, v, 0) < 0) { tb_free(c, &t); return -1; }
    size_t start = b->n;
    bool taint = t.nsp > 0;
    for (size_t i = 0; i < t.n;) {
        unsigned char ch = (unsigned char)t.d[i];
        if (ch < 0x80) { if (tb_putc(c, b, (char)ch) < 0) goto fail; i++; continue; }
        size_t adv;
        uint32_t cp = tpl_utf8_decode(t.d + i, t.n - i, &adv);
        char esc[16];
        if (cp < 0x100) snprintf(esc, sizeof esc, "\\x%02x", cp);
        else if (cp < 0x10000) snprintf(esc, sizeof esc, "\\u%04x", cp);
        else snprintf(esc, sizeof esc, "\\U%08x", cp);
        if (tb_puts(c, b, esc) < 0) goto fail;
        i += adv;
    }
    tb_free(c, &t);
    return taint ? tb_mark(c, b, start, b->n) : 0;
fail:
    tb_free(c, &t);
    return -1;
}

/* ------------------------------------------------------------------ str.format */

static int field_value(tpl_ctx *c, const char *name, size_t n, const targs *a, int *autoidx, tval *out) {
    size_t i = 0;
    while (i < n && name[i] != '.' && name[i] != '[') i++;
    tval v;
    if (i == 0) {
        if (*autoidx < 0) return tpl_fail(c, X_VALUE, "cannot switch from manual field specification to automatic field numbering");
        int64_t k = (*autoidx)++;
        if (k >= (int64_t)a->npos) return tpl_fail(c, X_INDEX, "tuple index out of range");
        v = a->pos[k];
    } else {
        bool digits = true;
        for (size_t j = 0; j < i; j++)
            if (name[j] < '0' || name[j] > '9') digits = false;
        if (digits) {
            if (*autoidx > 0) return tpl_fail(c, X_VALUE, "cannot switch from automatic field numbering to manual field specification");
            *autoidx = -1;
            int64_t k = strtoll(name, NULL, 10);
            if (k >= (int64_t)a->npos) return tpl_fail(c, X_INDEX, "tuple index out of range");
            v = a->pos[k];
        } else {
            uint32_t k;
            for (k = 0; k < a->nkw; k++)
                if (a->kwn[k]->len == i && !memcmp(a->kwn[k]->data, name, i)) break;
            if (k == a->nkw) return tpl_fail(c, X_KEY, "'%.*s'", (int)(i > 60 ? 60 : i), name);
            v = a->kwv[k];
        }
    }
    while (i < n) {
        if (name[i] == '.') {
            size_t j = ++i;
            while (i < n && name[i] != '.' && name[i] != '[') i++;
            if (i == j) return tpl_fail(c, X_VALUE, "Empty attribute in format string");
            tstr *an = tstr_new(c, name + j, i - j);
            if (!an || tpl_getattr(c, v, an, &v) < 0) return -1;
        } else {
            size_t j = ++i;
            while (i < n && name[i] != ']') i++;
            if (i >= n) return tpl_fail(c, X_VALUE, "Missing ']' in format string");
            bool digits = i > j;
            for (size_t q = j; q < i; q++)
                if (name[q] < '0' || name[q] > '9') digits = false;
            tval key;
            if (digits) key = tv_int(strtoll(name + j, NULL, 10));
            else {
                tstr *ks = tstr_new(c, name + j, i - j);
                if (!ks) return -1;
                key = tv_str(ks);
            }
            if (tpl_getitem(c, v, key, &v) < 0) return -1;
            i++;
            if (i < n && name[i] != '.' && name[i] != '[') return tpl_fail(c, X_VALUE, "Only '.' or '[' may follow ']' in format field specifier");
        }
    }
    *out = v;
    return 0;
}

static int format_into(tpl_ctx *c, tbuf *b, const char *s, size_t n, const targs *a, int *autoidx, int depth, bool markup) {
    if (depth > 2) return tpl_fail(c, X_VALUE, "Max string recursion exceeded");
    size_t i = 0;
    while (i < n) {
        char ch = s[i];
        if (ch == '}') {
            if (i + 1 < n && s[i + 1] == '}') { if (tb_putc(c, b, '}') < 0) return -1; i += 2; continue; }
            return tpl_fail(c, X_VALUE, "Single '}' encountered in format string");
        }
        if (ch != '{') {
            size_t j = i;
            while (j < n && s[j] != '{' && s[j] != '}') j++;
            if (tb_put(c, b, s + i, j - i) < 0) return -1;
            i = j;
            continue;
        }
        if (i + 1 < n && s[i + 1] == '{') { if (tb_putc(c, b, '{') < 0) return -1; i += 2; continue; }
        /* a field: find its end, honouring nested braces and [..] */
        size_t j = i + 1;
        int nest = 1;
        bool in_bracket = false;
        while (j < n) {
            if (in_bracket) { if (s[j] == ']') in_bracket = false; j++; continue; }
            if (s[j] == '[') in_bracket = true;
            else if (s[j] == '{') nest++;
            else if (s[j] == '}' && --nest == 0) break;
            j++;
        }
        if (j >= n) return tpl_fail(c, X_VALUE, "expected '}' before end of string");
        const char *f = s + i + 1;
        size_t fl = j - i - 1, k = 0;
        bool br = false;
        while (k < fl) {
            if (br) { if (f[k] == ']') br = false; k++; continue; }
            if (f[k] == '[') br = true;
            else if (f[k] == '!' || f[k] == ':') break;
            k++;
        }
        size_t name_len = k;
        char conv = 0;
        if (k < fl && f[k] == '!') {
            if (k + 1 >= fl) return tpl_fail(c, X_VALUE, "end of string while looking for conversion specifier");
            conv = f[k + 1];
            k += 2;
            if (k < fl && f[k] != ':') return tpl_fail(c, X_VALUE, "expected ':' after conversion specifier");
        }
        const char *spec = "";
        size_t slen = 0;
        tbuf sb = {0};
        if (k < fl && f[k] == ':') {
            spec = f + k + 1;
            slen = fl - k - 1;
            if (memchr(spec, '{', slen)) { /* nested fields in the spec */
                if (format_into(c, &sb, spec, slen, a, autoidx, depth + 1, false) < 0) { tb_free(c, &sb); return -1; }
                spec = sb.d ? sb.d : "";
                slen = sb.n;
            }
        }
        tval v;
        if (field_value(c, f, name_len, a, autoidx, &v) < 0) { tb_free(c, &sb); return -1; }
        int rc = 0;
        tbuf fb = {0};
        tbuf *dst = markup ? &fb : b;
        if (conv == 'r' || conv == 's' || conv == 'a') {
            tbuf t = {0};
            if (conv == 'r') rc = tv_write_repr(c, &t, v, 0);
            else if (conv == 's') rc = tv_write_str(c, &t, v);
            else rc = write_ascii_repr(c, &t, v);
            if (rc == 0) {
                tstr *ts = tb_finish(c, &t);
                rc = ts ? format_value(c, dst, tv_str(ts), spec, slen) : -1;
            } else tb_free(c, &t);
        } else if (conv) {
            rc = tpl_fail(c, X_VALUE, "Unknown conversion specifier %c", conv);
        } else {
            rc = format_value(c, dst, v, spec, slen);
        }
        tb_free(c, &sb);
        if (rc == 0 && markup) { /* Markup.format escapes each field unless it is Markup */
            tstr *fs = tb_finish(c, &fb);
            if (!fs) return -1;
            rc = (tv_is_markup(v) && !conv) ? tb_put_str(c, b, fs) : tpl_escape(c, b, fs);
        } else {
            tb_free(c, &fb);
        }
        if (rc < 0) return -1;
        i = j + 1;
    }
    return 0;
}

int tpl_str_format(tpl_ctx *c, const tstr *fmt, bool markup, const targs *a, tval *out) {
    tbuf b = {0};
    int autoidx = 0;
    if (format_into(c, &b, fmt->data, fmt->len, a, &autoidx, 0, markup) < 0) { tb_free(c, &b); return -1; }
    tstr *r = tb_finish(c, &b);
    if (!r) return -1;
    if (fmt->nspan) { /* the format string itself came from content: keep it conservative */
        tbuf t = {0};
        if (tb_put(c, &t, r->data, r->len) < 0) return -1;
        r = tstr_taint_like(c, &t, fmt);
        if (!r) return -1;
    }
    *out = tv_str(r);
    out->sub = markup;
    return 0;
}

/* ------------------------------------------------------------------ printf-style % */

int tpl_percent_format(tpl_ctx *c, const tstr *fmt, bool markup, tval args, tval *out) {
    const tval *av = &args;
    int64_t an = 1, ai = 0;
    bool is_map = args.k == TV_DICT;
    if (args.k == TV_LIST && args.sub == LK_TUPLE) { av = args.u.l->v; an = args.u.l->n; }
    tbuf b = {0};
    const char *s = fmt->data;
    size_t n = fmt->len, i = 0;
    while (i < n) {
        if (s[i] != '%') {
            size_t j = i;
            while (j < n && s[j] != '%') j++;
            if (tb_put(c, &b, s + i, j - i) < 0) goto fail;
            i = j;
            continue;
        }
        i++;
        if (i >= n) { tpl_fail(c, X_VALUE, "incomplete format"); goto fail; }
        tval v = {0};
        bool have_v = false;
        if (s[i] == '(') {
            size_t j = ++i;
            int nest = 1;
            while (i < n && nest) { if (s[i] == '(') nest++; else if (s[i] == ')') nest--; if (nest) i++; }
            if (i >= n) { tpl_fail(c, X_VALUE, "incomplete format key"); goto fail; }
            if (!is_map) { tpl_fail(c, X_TYPE, "format requires a mapping"); goto fail; }
            tstr *key = tstr_new(c, s + j, i - j);
            if (!key) goto fail;
            i++;
            uint32_t idx;
            int f = td_find(c, args.u.d, tv_str(key), &idx);
            if (f < 0) goto fail;
            if (!f) { tpl_fail(c, X_KEY, "'%s'", key->data); goto fail; }
            v = args.u.d->vals[idx];
            have_v = true;
        }
        fspec f;
        memset(&f, 0, sizeof f);
        f.fill[0] = ' ';
        f.fill_len = 1;
        bool left = false, zero = false;
        for (; i < n && strchr("-+ #0", s[i]) && s[i]; i++) {
            if (s[i] == '-') left = true;
            else if (s[i] == '+') f.sign = '+';
            else if (s[i] == ' ' && f.sign != '+') f.sign = ' ';
            else if (s[i] == '#') f.alt = true;
            else zero = true;
        }
        if (i < n && s[i] == '*') {
            if (ai >= an || av[ai].k != TV_INT) { tpl_fail(c, X_TYPE, "* wants int"); goto fail; }
            f.width = av[ai++].u.i;
            if (f.width < 0) { left = true; f.width = f.width < -1000001 ? 1000001 : -f.width; }
            i++;
        } else {
            /* saturate past the limit: the digits come from the template */
            while (i < n && s[i] >= '0' && s[i] <= '9') {
                f.width = f.width > 1000000 ? f.width : f.width * 10 + (s[i] - '0');
                i++;
            }
        }
        if (f.width > 1000000) { tpl_fail(c, X_LIMIT, "format width too large"); goto fail; }
        if (i < n && s[i] == '.') {
            i++;
            f.has_prec = true;
            f.prec = 0;
            if (i < n && s[i] == '*') {
                if (ai >= an || av[ai].k != TV_INT) { tpl_fail(c, X_TYPE, "* wants int"); goto fail; }
                f.prec = av[ai++].u.i;
                if (f.prec < 0) f.prec = 0; /* Python: a negative '*' precision is 0 */
                i++;
            } else {
                while (i < n && s[i] >= '0' && s[i] <= '9') {
                    f.prec = f.prec > 1000 ? f.prec : f.prec * 10 + (s[i] - '0');
                    i++;
                }
            }
            if (f.prec > 1000) f.prec = 1000;
        }
        while (i < n && (s[i] == 'h' || s[i] == 'l' || s[i] == 'L')) i++;
        if (i >= n) { tpl_fail(c, X_VALUE, "incomplete format"); goto fail; }
        char conv = s[i++];
        if (conv == '%') { if (tb_putc(c, &b, '%') < 0) goto fail; continue; }
        if (!have_v) {
            if (ai >= an) { tpl_fail(c, X_TYPE, "not enough arguments for format string"); goto fail; }
            v = av[ai++];
        }
        f.align = left ? '<' : '>';
        if (zero && !left && strchr("diouxXeEfFgG", conv)) { f.fill[0] = '0'; f.align = '='; }
        int rc;
        switch (conv) {
        case 's': case 'r': case 'a': {
            tbuf t = {0};
            rc = conv == 's' ? tv_write_str(c, &t, v) : conv == 'r' ? tv_write_repr(c, &t, v, 0) : write_ascii_repr(c, &t, v);
            if (rc == 0 && markup && !(tv_is_markup(v) && conv == 's')) { /* Markup % args escapes them */
                tbuf t2 = {0};
                tstr *ts = tb_finish(c, &t);
                if (!ts || tpl_escape(c, &t2, ts) < 0) { tb_free(c, &t2); rc = -1; }
                else t = t2;
            }
            if (rc == 0) {
                size_t e = t.n;
                if (f.has_prec) {
                    size_t k = 0, ch = 0;
                    while (k < t.n && (int64_t)ch < f.prec) { k++; while (k < t.n && ((unsigned char)t.d[k] & 0xC0) == 0x80) k++; ch++; }
                    e = k;
                }
                size_t st = b.n;
                f.align = left ? '<' : '>';
                rc = emit_padded(c, &b, &f, "", t.d ? t.d : "", e, '>');
                if (rc == 0 && t.nsp) rc = tb_mark(c, &b, st, b.n);
            }
            tb_free(c, &t);
            break;
        }
        case 'd': case 'i': case 'u':
            if (v.k == TV_FLOAT) {
                if (!isfinite(v.u.f)) { rc = isnan(v.u.f) ? tpl_fail(c, X_VALUE, "cannot convert float NaN to integer") : tpl_fail(c, X_OVERFLOW, "cannot convert float infinity to integer"); break; }
                if (fabs(v.u.f) >= 9223372036854775808.0) {
                    /* past int64: the float is an integer, its digits printed exactly */
                    f.has_prec = true;
                    f.prec = 0;
                    f.alt = false;
                    rc = fmt_float(c, &b, trunc(v.u.f), &f, 'f');
                    break;
                }
                v = tv_int((int64_t)v.u.f);
            }
            if (v.k != TV_INT && v.k != TV_BOOL) { rc = tpl_fail(c, X_TYPE, "%%%c format: a real number is required, not %s", conv, tv_type_name(v)); break; }
            f.has_prec = false;
            f.type = 'd';
            rc = fmt_int(c, &b, v.k == TV_BOOL ? v.u.b : v.u.i, &f);
            break;
        case 'o': case 'x': case 'X':
            if (v.k != TV_INT && v.k != TV_BOOL) { rc = tpl_fail(c, X_TYPE, "%%%c format: an integer is required, not %s", conv, tv_type_name(v)); break; }
            f.has_prec = false;
            f.type = conv;
            rc = fmt_int(c, &b, v.k == TV_BOOL ? v.u.b : v.u.i, &f);
            break;
        case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': {
            double x;
            if (v.k == TV_FLOAT) x = v.u.f;
            else if (v.k == TV_INT) x = (double)v.u.i;
            else if (v.k == TV_BOOL) x = v.u.b;
            else { rc = tpl_fail(c, X_TYPE, "must be real number, not %s", tv_type_name(v)); break; }
            if (!f.has_prec) { f.has_prec = true; f.prec = 6; }
            rc = fmt_float(c, &b, x, &f, conv);
            break;
        }
        case 'c': {
            char tmp[8];
            size_t k;
            if (v.k == TV_INT) {
                if (v.u.i < 0 || v.u.i > 0x10FFFF) { rc = tpl_fail(c, X_OVERFLOW, "%%c arg not in range(0x110000)"); break; }
                k = loom_utf8_encode((uint32_t)v.u.i, (unsigned char *)tmp);
            } else if (v.k == TV_STR && tstr_nchars(v.u.s) == 1) {
                k = v.u.s->len;
                memcpy(tmp, v.u.s->data, k);
            } else { rc = tpl_fail(c, X_TYPE, "%%c requires int or char"); break; }
            rc = emit_padded(c, &b, &f, "", tmp, k, '>');
            break;
        }
        default:
            rc = tpl_fail(c, X_VALUE, "unsupported format character '%c' (0x%x) at index %zu", conv, (unsigned char)conv, i - 1);
            break;
        }
        if (rc < 0) goto fail;
    }
    if (!is_map && ai < an && !(an == 1 && args.k == TV_LIST && args.sub != LK_TUPLE)) {
        tpl_fail(c, X_TYPE, "not all arguments converted during string formatting");
        goto fail;
    }
    {
        tstr *r = tb_finish(c, &b);
        if (!r) return -1;
        *out = tv_str(r);
        out->sub = markup;
        return 0;
    }
fail:
    tb_free(c, &b);
    return -1;
}

/* ------------------------------------------------------------------ strftime */

static int64_t days_from_civil(int64_t y, int m, int d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int tpl_strftime(tpl_ctx *c, const tstr *fmt, tval *out) {
    if (fmt->len > 4096) return tpl_fail(c, X_LIMIT, "strftime format longer than 4096 bytes");
    if (memchr(fmt->data, 0, fmt->len)) return tpl_fail(c, X_VALUE, "embedded null character");
    /* %f %z %Z are Python's; the rest goes to the C library */
    char pre[4096 * 6 + 8];
    size_t k = 0;
    for (size_t i = 0; i < fmt->len; i++) {
        char ch = fmt->data[i];
        if (ch == '%' && i + 1 < fmt->len) {
            char nx = fmt->data[++i];
            if (nx == 'f') { memcpy(pre + k, "000000", 6); k += 6; }
            else if (nx == 'z' || nx == 'Z') { /* naive datetime: empty */ }
            else { pre[k++] = '%'; pre[k++] = nx; }
        } else pre[k++] = ch;
    }
    pre[k] = 0;
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    tm.tm_year = c->now.year - 1900;
    tm.tm_mon = c->now.month - 1;
    tm.tm_mday = c->now.day;
    tm.tm_hour = c->now.hour;
    tm.tm_min = c->now.minute;
    tm.tm_sec = c->now.second;
    tm.tm_isdst = -1;
    int64_t days = days_from_civil(c->now.year, c->now.month, c->now.day);
    tm.tm_wday = (int)(((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday */
    tm.tm_yday = (int)(days - days_from_civil(c->now.year, 1, 1));
    if (k == 0) { *out = tv_str((tstr *)&tpl_empty_str); return 0; }
    locale_t loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    size_t cap = 256 + k * 8;
    char *buf = malloc(cap);
    size_t n = 0;
    if (buf) n = loc ? strftime_l(buf, cap, pre, &tm, loc) : strftime(buf, cap, pre, &tm);
    if (loc) freelocale(loc);
    if (!buf) return tpl_fail(c, X_MEMORY, "out of memory");
    tstr *r = tstr_new(c, buf, n);
    free(buf);
    if (!r) return -1;
    *out = tv_str(r);
    return 0;
}
