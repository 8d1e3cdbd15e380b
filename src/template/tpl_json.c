/* JSON for templates: tojson = Python's json.dumps (ensure_ascii, indent,
 * separators, sort_keys; floats as repr, NaN/Infinity, keys coerced like Python),
 * and conversion of jansson values (the conversation) into template values. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "tpl.h"

static int json_str(tpl_ctx *c, tbuf *b, const tstr *s, bool ensure_ascii) {
    if (tb_putc(c, b, '"') < 0) return -1;
    size_t start = b->n;
    for (size_t i = 0; i < s->len;) {
        unsigned char ch = (unsigned char)s->data[i];
        char esc[16];
        const char *e = NULL;
        if (ch < 0x80) {
            i++;
            switch (ch) {
            case '"': e = "\\\""; break;
            case '\\': e = "\\\\"; break;
            case '\n': e = "\\n"; break;
            case '\r': e = "\\r"; break;
            case '\t': e = "\\t"; break;
            case '\b': e = "\\b"; break;
            case '\f': e = "\\f"; break;
            default:
                if (ch < 0x20 || (ensure_ascii && ch == 0x7F)) {
                    snprintf(esc, sizeof esc, "\\u%04x", ch);
                    e = esc;
                }
            }
            if (e) { if (tb_puts(c, b, e) < 0) return -1; }
            else if (tb_putc(c, b, (char)ch) < 0) return -1;
            continue;
        }
        size_t adv;
        uint32_t cp = tpl_utf8_decode(s->data + i, s->len - i, &adv);
        if (!ensure_ascii) {
            if (tb_put(c, b, s->data + i, adv) < 0) return -1;
        } else if (cp < 0x10000) {
            snprintf(esc, sizeof esc, "\\u%04x", cp);
            if (tb_puts(c, b, esc) < 0) return -1;
        } else {
            uint32_t v = cp - 0x10000;
            snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            if (tb_puts(c, b, esc) < 0) return -1;
        }
        i += adv;
    }
    if (s->nspan && tb_mark(c, b, start, b->n) < 0) return -1;
    return tb_putc(c, b, '"');
}

static int json_float(tpl_ctx *c, tbuf *b, double f) {
    if (isnan(f)) return tb_puts(c, b, "NaN");
    if (isinf(f)) return tb_puts(c, b, f < 0 ? "-Infinity" : "Infinity");
    char tmp[64];
    tpl_format_float(f, tmp, sizeof tmp);
    return tb_puts(c, b, tmp);
}

static int newline_indent(tpl_ctx *c, tbuf *b, const tjson_opts *o, int level) {
    if (tb_putc(c, b, '\n') < 0) return -1;
    for (int i = 0; i < level; i++)
        if (tb_put(c, b, o->indent, o->indent_len) < 0) return -1;
    return 0;
}

static const char *not_serializable(tval v) {
    switch (v.k) {
    case TV_UNDEF: return "Undefined";
    case TV_LIST: return tv_type_name(v);
    default: return tv_type_name(v);
    }
}

static int json_key(tpl_ctx *c, tbuf *b, tval k, const tjson_opts *o) {
    char tmp[64];
    switch (k.k) {
    case TV_STR: return json_str(c, b, k.u.s, o->ensure_ascii);
    case TV_INT: snprintf(tmp, sizeof tmp, "\"%" PRId64 "\"", k.u.i); return tb_puts(c, b, tmp);
    case TV_BOOL: return tb_puts(c, b, k.u.b ? "\"true\"" : "\"false\"");
    case TV_NONE: return tb_puts(c, b, "\"null\"");
    case TV_FLOAT:
        if (tb_putc(c, b, '"') < 0 || json_float(c, b, k.u.f) < 0) return -1;
        return tb_putc(c, b, '"');
    default:
        return tpl_fail(c, X_TYPE, "keys must be str, int, float, bool or None, not %s", tv_type_name(k));
    }
}

int tpl_tojson(tpl_ctx *c, tbuf *b, tval v, const tjson_opts *o, int depth) {
    if (depth > TPL_MAX_CONTAINER_DEPTH + 8) return tpl_fail(c, X_VALUE, "Circular reference detected");
    char tmp[64];
    switch (v.k) {
    case TV_NONE: return tb_puts(c, b, "null");
    case TV_BOOL: return tb_puts(c, b, v.u.b ? "true" : "false");
    case TV_INT: snprintf(tmp, sizeof tmp, "%" PRId64, v.u.i); return tb_puts(c, b, tmp);
    case TV_FLOAT: return json_float(c, b, v.u.f);
    case TV_STR: return json_str(c, b, v.u.s, o->ensure_ascii);
    case TV_LIST: {
        if (v.sub != LK_LIST && v.sub != LK_TUPLE && v.sub != LK_GROUP)
            return tpl_fail(c, X_TYPE, "Object of type %s is not JSON serializable", not_serializable(v));
        tlist *l = v.u.l;
        if (l->n == 0) return tb_puts(c, b, "[]");
        if (tb_putc(c, b, '[') < 0) return -1;
        for (uint32_t i = 0; i < l->n; i++) {
            if (i && tb_put(c, b, o->item_sep, o->item_sep_len) < 0) return -1;
            if (o->has_indent && newline_indent(c, b, o, depth + 1) < 0) return -1;
            if (tpl_tojson(c, b, l->v[i], o, depth + 1) < 0) return -1;
        }
        if (o->has_indent && newline_indent(c, b, o, depth) < 0) return -1;
        return tb_putc(c, b, ']');
    }
    case TV_DICT: {
        tdict *d = v.u.d;
        if (d->n == 0) return tb_puts(c, b, "{}");
        uint32_t *order = tpl_alloc(c, (d->n + 1) * sizeof(uint32_t));
        if (!order) return -1;
        for (uint32_t i = 0; i < d->n; i++) order[i] = i;
        if (o->sort_keys) { /* insertion sort by key with Python's < (stable, small dicts) */
            for (uint32_t i = 1; i < d->n; i++) {
                uint32_t x = order[i], j = i;
                while (j > 0) {
                    bool lt;
                    if (tv_lt(c, d->keys[x], d->keys[order[j - 1]], &lt) < 0) return -1;
                    if (!lt) break;
                    order[j] = order[j - 1];
                    j--;
                }
                order[j] = x;
            }
        }
        if (tb_putc(c, b, '{') < 0) return -1;
        for (uint32_t k = 0; k < d->n; k++) {
            uint32_t i = order[k];
            if (k && tb_put(c, b, o->item_sep, o->item_sep_len) < 0) return -1;
            if (o->has_indent && newline_indent(c, b, o, depth + 1) < 0) return -1;
            if (json_key(c, b, d->keys[i], o) < 0 || tb_put(c, b, o->key_sep, o->key_sep_len) < 0 ||
                tpl_tojson(c, b, d->vals[i], o, depth + 1) < 0)
                return -1;
        }
        if (o->has_indent && newline_indent(c, b, o, depth) < 0) return -1;
        return tb_putc(c, b, '}');
    }
    default:
        return tpl_fail(c, X_TYPE, "Object of type %s is not JSON serializable", not_serializable(v));
    }
}

int tpl_from_json(tpl_ctx *c, json_t *j, int taint, int depth, tval *out) {
    if (depth > TPL_MAX_CONTAINER_DEPTH - 2) return tpl_fail(c, X_LIMIT, "the conversation JSON nests deeper than %d", TPL_MAX_CONTAINER_DEPTH - 2);
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        size_t n = json_object_size(j);
        tdict *d = td_new(c, (uint32_t)n + 1);
        if (!d) return -1;
        const char *key;
        json_t *val;
        json_object_foreach(j, key, val) {
            tval kv, vv;
            tstr *ks = tstr_new_taint(c, key, strlen(key), taint != 0);
            if (!ks) return -1;
            kv = tv_str(ks);
            if (tpl_from_json(c, val, taint, depth + 1, &vv) < 0) return -1;
            if (td_set(c, d, kv, vv) < 0) return -1;
        }
        *out = (tval){0};
        out->k = TV_DICT;
        out->u.d = d;
        return 0;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(j);
        if (n > UINT32_MAX / 2) return tpl_fail(c, X_LIMIT, "array too long");
        tlist *l = tl_new(c, (uint32_t)n);
        if (!l) return -1;
        for (size_t i = 0; i < n; i++)
            if (tpl_from_json(c, json_array_get(j, i), taint, depth + 1, &l->v[i]) < 0) return -1;
        if (tl_finish_depth(c, l) < 0) return -1;
        *out = tv_list(l, LK_LIST);
        return 0;
    }
    case JSON_STRING: {
        tstr *s = tstr_new_taint(c, json_string_value(j), json_string_length(j), taint != 0);
        if (!s) return -1;
        *out = tv_str(s);
        return 0;
    }
    case JSON_INTEGER: *out = tv_int((int64_t)json_integer_value(j)); return 0;
    case JSON_REAL: *out = tv_float(json_real_value(j)); return 0;
    case JSON_TRUE: *out = tv_bool(true); return 0;
    case JSON_FALSE: *out = tv_bool(false); return 0;
    default: *out = tv_none(); return 0;
    }
}
