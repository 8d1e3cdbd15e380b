/* JSON Schema -> GBNF. The generated language is a subset of the instances
 * the schema accepts (never a superset): where the schema leaves a choice the
 * grammar may narrow it (see docs/structured-output.md):
 *   - whitespace: none before the value; after { [ , : and after each member
 *     or item, `space` = nothing, one space, or 1-2 newlines and up to 20
 *     blanks; nothing after the top-level value (so generation ends there);
 *   - objects: properties in the order of `properties`, each at most once;
 *     additionalProperties defaults to false when `properties` is given (as
 *     llama.cpp), extra keys come after the declared ones, are never equal to
 *     a declared name and use no backslash escapes;
 *   - numbers: at most 16 integer digits, 16 fraction digits, 3 exponent
 *     digits; strings: no \u escapes of surrogates;
 *   - arrays with prefixItems and no `items`: exactly the tuple (unless
 *     minItems asks for more);
 *   - oneOf is treated as anyOf (exact when the alternatives are disjoint).
 * Keywords that would change the language and are not supported are errors
 * naming the keyword and its JSON pointer. */
#include "grammar/grammar_internal.h"
#include "quant/alloc.h"

#ifndef LOOM_HAVE_JANSSON
/* Built without jansson (a cross build without the target's library). */
loom_status loom_json_schema_to_gbnf(const char *schema, size_t len, char **gbnf, size_t *gbnf_len, loom_error *err) {
    (void)schema, (void)len;
    if (gbnf) *gbnf = NULL;
    if (gbnf_len) *gbnf_len = 0;
    return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "JSON Schema: this build of Loom has no JSON library (jansson)");
}
loom_status loom_grammar_new_json_schema(const char *schema, size_t len, loom_grammar **out, loom_error *err) {
    if (out) *out = NULL;
    char *g = NULL;
    return loom_json_schema_to_gbnf(schema, len, &g, NULL, err);
}
loom_status loom_grammar_new_json_object(loom_grammar **out, loom_error *err) {
    if (out) *out = NULL;
    return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "JSON Schema: this build of Loom has no JSON library (jansson)");
}
#else

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    P_SPACE, P_VALUE, P_OBJECT, P_ARRAY, P_STRING, P_CHAR, P_NUMBER, P_INTEGER, P_BOOLEAN, P_NULL, P_KEYCHAR,
    P_DATE, P_TIME, P_UUID, P_EMAIL, P_IPV4, P_COUNT
};

static const char *const PRIM_NAME[P_COUNT] = {"space", "value", "object", "array", "string", "char", "number",
                                               "integer", "boolean", "null", "key-char", "date", "time", "uuid",
                                               "email", "ipv4"};

static const char *const PRIM_BODY[P_COUNT] = {
    "| \" \" | \"\\n\"{1,2} [ \\t]{0,20}",
    "object | array | string | number | boolean | null",
    "\"{\" space ( string space \":\" space value space ( \",\" space string space \":\" space value space )* )? \"}\"",
    "\"[\" space ( value space ( \",\" space value space )* )? \"]\"",
    "\"\\\"\" char* \"\\\"\"",
    "[^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" ( [0-9a-cA-C] [0-9a-fA-F]{3} | [dD] [0-7] "
    "[0-9a-fA-F]{2} | [eEfF] [0-9a-fA-F]{3} ) )",
    "integer ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?",
    "\"-\"? ( \"0\" | [1-9] [0-9]{0,15} )",
    "\"true\" | \"false\"",
    "\"null\"",
    "[^\"\\\\\\x7F\\x00-\\x1F]",
    /* a calendar date: years 1000-9999, February has 28 days (always valid) */
    "[1-9] [0-9]{3} \"-\" ( ( \"0\" [13578] | \"1\" [02] ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"3\" [01] ) | ( \"0\" [469] "
    "| \"11\" ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"30\" ) | \"02-\" ( \"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8] ) )",
    "( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,6} )? ( \"Z\" | [+-] ( [01] "
    "[0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )",
    "[0-9a-fA-F]{8} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{4} \"-\" [0-9a-fA-F]{12}",
    "[a-zA-Z0-9_+-]{1,32} ( \".\" [a-zA-Z0-9_+-]{1,32} ){0,3} \"@\" ( [a-zA-Z0-9] ( [a-zA-Z0-9-]{0,61} "
    "[a-zA-Z0-9] )? \".\" ){1,4} [a-zA-Z]{2,24}",
    "( \"25\" [0-5] | \"2\" [0-4] [0-9] | \"1\" [0-9] [0-9] | [1-9]? [0-9] ) ( \".\" ( \"25\" [0-5] | \"2\" [0-4] "
    "[0-9] | \"1\" [0-9] [0-9] | [1-9]? [0-9] ) ){3}",
};

/* Dependencies between primitives. */
static void prim_deps(int p, bool *need) {
    if (need[p]) return;
    need[p] = true;
    switch (p) {
    case P_VALUE:
        prim_deps(P_OBJECT, need), prim_deps(P_ARRAY, need), prim_deps(P_STRING, need);
        prim_deps(P_NUMBER, need), prim_deps(P_BOOLEAN, need), prim_deps(P_NULL, need);
        break;
    case P_OBJECT: prim_deps(P_STRING, need), prim_deps(P_VALUE, need), prim_deps(P_SPACE, need); break;
    case P_ARRAY: prim_deps(P_VALUE, need), prim_deps(P_SPACE, need); break;
    case P_STRING: prim_deps(P_CHAR, need); break;
    case P_NUMBER: prim_deps(P_INTEGER, need); break;
    default: break;
    }
}

typedef struct rule {
    char *name;
    char *body; /* NULL while being generated */
} rule;

typedef struct memo {
    const json_t *node;
    uint32_t rule;
} memo;

typedef struct conv {
    json_t *root;
    rule *rules;
    uint32_t n_rules, cap_rules;
    memo *memos;
    uint32_t n_memos, cap_memos;
    json_t **owned; /* synthetic schemas (merges) */
    uint32_t n_owned, cap_owned;
    bool need[P_COUNT];
    loom_error *err;
    loom_status st;
    int depth;
    char ptr[1024]; /* JSON pointer of the schema being converted */
} conv;

static bool cfail(conv *c, loom_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static bool cfail(conv *c, loom_status st, const char *fmt, ...) {
    if (c->st != LOOM_OK) return false;
    c->st = st;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    loom_error_set(c->err, st, "JSON Schema: %s at %s", msg, c->ptr[0] ? c->ptr : "(root)");
    return false;
}

static bool oom(conv *c) { return cfail(c, LOOM_ERR_NOMEM, "out of memory"); }

static bool grow(void **p, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap) return true;
    uint32_t nc = *cap ? *cap * 2 : 32;
    while (nc < need) nc *= 2;
    void *q = loom_realloc(*p, (size_t)nc * elem);
    if (!q) return false;
    *p = q;
    *cap = nc;
    return true;
}

/* ---------------------------------------------------------------- pointer */

/* Append "/key" (RFC 6901 escaped) to c->ptr; returns the previous length. */
static size_t ptr_push(conv *c, const char *key) {
    size_t n = strlen(c->ptr);
    size_t k = n;
    if (k + 1 < sizeof c->ptr) c->ptr[k++] = '/';
    for (const char *q = key; *q && k + 3 < sizeof c->ptr; q++) {
        if (*q == '~') c->ptr[k++] = '~', c->ptr[k++] = '0';
        else if (*q == '/') c->ptr[k++] = '~', c->ptr[k++] = '1';
        else c->ptr[k++] = *q;
    }
    c->ptr[k] = 0;
    return n;
}
static size_t ptr_push_i(conv *c, size_t i) {
    char b[32];
    snprintf(b, sizeof b, "%zu", i);
    return ptr_push(c, b);
}
static void ptr_pop(conv *c, size_t n) { c->ptr[n] = 0; }

/* ---------------------------------------------------------------- rules */

static bool name_taken(const conv *c, const char *name) {
    for (int p = 0; p < P_COUNT; p++)
        if (!strcmp(PRIM_NAME[p], name)) return true;
    for (uint32_t i = 0; i < c->n_rules; i++)
        if (!strcmp(c->rules[i].name, name)) return true;
    return false;
}

/* A new rule named after base (sanitised to [a-zA-Z0-9-], made unique). */
static int64_t new_rule(conv *c, const char *base) {
    char name[200];
    size_t k = 0;
    bool dash = false;
    for (const char *q = base; *q && k < 120; q++) {
        unsigned char ch = (unsigned char)*q;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')) {
            name[k++] = (char)ch;
            dash = false;
        } else if (!dash && k > 0) {
            name[k++] = '-';
            dash = true;
        }
    }
    while (k > 0 && name[k - 1] == '-') k--;
    if (k == 0) name[k++] = 'r';
    name[k] = 0;
    char cand[220];
    snprintf(cand, sizeof cand, "%s", name);
    for (int i = 2; name_taken(c, cand); i++) snprintf(cand, sizeof cand, "%s-%d", name, i);
    if (c->n_rules >= LOOM_GRAMMAR_MAX_RULES) {
        cfail(c, LOOM_ERR_RANGE, "more than %d rules", LOOM_GRAMMAR_MAX_RULES);
        return -1;
    }
    if (!grow((void **)&c->rules, &c->cap_rules, c->n_rules + 1, sizeof(rule))) return oom(c), -1;
    c->rules[c->n_rules].name = loom_strdup(cand);
    c->rules[c->n_rules].body = NULL;
    if (!c->rules[c->n_rules].name) return oom(c), -1;
    return c->n_rules++;
}

static void set_body(conv *c, uint32_t r, sbuf *b) {
    if (b->oom) {
        oom(c);
        sb_free(b);
        return;
    }
    c->rules[r].body = b->p ? b->p : loom_strdup("\"\"");
    if (!c->rules[r].body) oom(c);
    memset(b, 0, sizeof *b);
}

static const char *prim(conv *c, int p) {
    prim_deps(p, c->need);
    return PRIM_NAME[p];
}

/* GBNF literal for the bytes s[0..n). */
static void gbnf_literal(sbuf *o, const char *s, size_t n) {
    sb_putc(o, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\') sb_putc(o, '\\'), sb_putc(o, (char)ch);
        else if (ch == '\n') sb_puts(o, "\\n");
        else if (ch == '\r') sb_puts(o, "\\r");
        else if (ch == '\t') sb_puts(o, "\\t");
        else if (ch < 0x20 || ch == 0x7F) sb_printf(o, "\\x%02X", ch);
        else sb_putc(o, (char)ch);
    }
    sb_putc(o, '"');
}

/* GBNF literal for the compact JSON text of v. */
static bool json_literal(conv *c, sbuf *o, const json_t *v) {
    char *txt = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (!txt) return oom(c);
    gbnf_literal(o, txt, strlen(txt));
    free(txt);
    return true;
}

/* ---------------------------------------------------------------- keywords */

enum { K_IGNORE, K_SUPPORTED, K_UNSUPPORTED };

static int keyword_class(const char *k, const json_t *v) {
    static const char *const ann[] = {"title", "description", "default", "examples", "$schema", "$id", "$comment",
                                      "deprecated", "readOnly", "writeOnly", "contentEncoding", "contentMediaType",
                                      "contentSchema", "$vocabulary", "$anchor", "$dynamicAnchor", "$defs",
                                      "definitions", "id", NULL};
    static const char *const sup[] = {"type", "properties", "required", "additionalProperties", "enum", "const",
                                      "items", "prefixItems", "additionalItems", "minItems", "maxItems", "minLength",
                                      "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum",
                                      "exclusiveMaximum", "oneOf", "anyOf", "allOf", "$ref", "format", NULL};
    static const char *const uns[] = {"not", "if", "then", "else", "dependentSchemas", "dependentRequired",
                                      "dependencies", "patternProperties", "propertyNames", "unevaluatedProperties",
                                      "unevaluatedItems", "contains", "minContains", "maxContains", "maxProperties",
                                      "multipleOf", "$dynamicRef", "$recursiveRef", "$recursiveAnchor", NULL};
    for (int i = 0; ann[i]; i++)
        if (!strcmp(k, ann[i])) return K_IGNORE;
    for (int i = 0; sup[i]; i++)
        if (!strcmp(k, sup[i])) return K_SUPPORTED;
    /* keywords that are harmless with these values */
    if (!strcmp(k, "uniqueItems")) return json_is_true(v) ? K_UNSUPPORTED : K_IGNORE;
    if (!strcmp(k, "minProperties")) return json_is_integer(v) && json_integer_value(v) == 0 ? K_IGNORE : K_UNSUPPORTED;
    for (int i = 0; uns[i]; i++)
        if (!strcmp(k, uns[i])) return K_UNSUPPORTED;
    return K_IGNORE; /* unknown keywords are annotations (JSON Schema 2020-12, section 6.5) */
}

/* Whether the schema object has keywords other than annotations and the listed ones. */
static bool has_assertions_except(const json_t *s, const char *const *except) {
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        if (keyword_class(k, v) == K_IGNORE) continue;
        bool skip = false;
        for (int i = 0; except[i]; i++)
            if (!strcmp(k, except[i])) skip = true;
        if (!skip) return true;
    }
    return false;
}

static bool get_count(conv *c, const json_t *s, const char *key, uint64_t *out, bool *present) {
    json_t *v = json_object_get(s, key);
    *present = v != NULL;
    if (!v) return true;
    double d;
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return true;
    }
    if (json_is_real(v) && (d = json_real_value(v)) >= 0 && d == floor(d) && d < 9e15) {
        *out = (uint64_t)d;
        return true;
    }
    return cfail(c, LOOM_ERR_FORMAT, "'%s' must be a non-negative integer", key);
}

/* ---------------------------------------------------------------- refs */

static json_t *resolve_ref(conv *c, const char *ref) {
    if (ref[0] != '#')
        return cfail(c, LOOM_ERR_UNSUPPORTED, "unsupported $ref '%.100s' (only local JSON pointers \"#/...\")", ref),
               NULL;
    json_t *cur = c->root;
    const char *p = ref + 1;
    if (*p && *p != '/')
        return cfail(c, LOOM_ERR_UNSUPPORTED, "unsupported $ref '%.100s' (anchors are not supported)", ref), NULL;
    while (*p == '/') {
        p++;
        char seg[256];
        size_t k = 0;
        while (*p && *p != '/' && k + 1 < sizeof seg) {
            if (p[0] == '~' && p[1] == '0') seg[k++] = '~', p += 2;
            else if (p[0] == '~' && p[1] == '1') seg[k++] = '/', p += 2;
            else if (p[0] == '%' && p[1] && p[2]) {
                char h[3] = {p[1], p[2], 0};
                char *e;
                long v = strtol(h, &e, 16);
                if (*e) return cfail(c, LOOM_ERR_FORMAT, "bad escape in $ref '%.100s'", ref), NULL;
                seg[k++] = (char)v, p += 3;
            } else {
                seg[k++] = *p++;
            }
        }
        seg[k] = 0;
        if (json_is_object(cur)) {
            cur = json_object_get(cur, seg);
        } else if (json_is_array(cur)) {
            char *e;
            unsigned long i = strtoul(seg, &e, 10);
            cur = (*e || !seg[0]) ? NULL : json_array_get(cur, i);
        } else {
            cur = NULL;
        }
        if (!cur) return cfail(c, LOOM_ERR_FORMAT, "$ref '%.100s' does not resolve", ref), NULL;
    }
    return cur;
}

/* ---------------------------------------------------------------- merging (allOf) */

static json_t *own(conv *c, json_t *j) {
    if (!j) return oom(c), NULL;
    if (!grow((void **)&c->owned, &c->cap_owned, c->n_owned + 1, sizeof(json_t *))) {
        json_decref(j);
        return oom(c), NULL;
    }
    c->owned[c->n_owned++] = j;
    return j;
}

static bool merge_into(conv *c, json_t *acc, const json_t *s, int depth);

static const char *const TYPES[] = {"null", "boolean", "object", "array", "number", "string", "integer", NULL};

static unsigned type_bits(const json_t *t) {
    unsigned b = 0;
    if (json_is_string(t)) {
        for (int i = 0; TYPES[i]; i++)
            if (!strcmp(json_string_value(t), TYPES[i])) b |= 1u << i;
    } else if (json_is_array(t)) {
        size_t i;
        json_t *e;
        json_array_foreach(t, i, e) b |= type_bits(e);
    }
    return b;
}

static json_t *types_json(unsigned b) {
    json_t *a = json_array();
    for (int i = 0; TYPES[i] && a; i++)
        if (b & (1u << i)) json_array_append_new(a, json_string(TYPES[i]));
    return a;
}

static bool merge_number(conv *c, json_t *acc, const char *k, json_t *v, bool take_max) {
    json_t *old = json_object_get(acc, k);
    if (!json_is_number(v)) return cfail(c, LOOM_ERR_FORMAT, "'%s' must be a number", k);
    if (old && json_is_number(old)) {
        double a = json_number_value(old), b = json_number_value(v);
        if (take_max ? b <= a : b >= a) return true;
    }
    return json_object_set(acc, k, v) == 0 || oom(c);
}

static bool merge_into(conv *c, json_t *acc, const json_t *s, int depth) {
    if (depth > LOOM_GRAMMAR_MAX_NESTING) return cfail(c, LOOM_ERR_RANGE, "allOf / $ref nested too deeply");
    if (json_is_true(s)) return true;
    if (json_is_false(s)) return cfail(c, LOOM_ERR_FORMAT, "allOf contains the schema false: it accepts nothing");
    if (!json_is_object(s)) return cfail(c, LOOM_ERR_FORMAT, "a schema must be an object or a boolean");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) {
        int cls = keyword_class(k, v);
        if (cls == K_UNSUPPORTED) return cfail(c, LOOM_ERR_UNSUPPORTED, "unsupported keyword '%s'", k);
        if (cls == K_IGNORE) continue;
        json_t *old = json_object_get(acc, k);
        if (!strcmp(k, "$ref")) {
            if (!json_is_string(v)) return cfail(c, LOOM_ERR_FORMAT, "$ref must be a string");
            json_t *t = resolve_ref(c, json_string_value(v));
            if (!t || !merge_into(c, acc, t, depth + 1)) return false;
        } else if (!strcmp(k, "allOf")) {
            size_t i;
            json_t *e;
            if (!json_is_array(v)) return cfail(c, LOOM_ERR_FORMAT, "allOf must be an array");
            json_array_foreach(v, i, e) if (!merge_into(c, acc, e, depth + 1)) return false;
        } else if (!strcmp(k, "type")) {
            unsigned b = type_bits(v);
            if (old) {
                unsigned a = type_bits(old), r = a & b;
                if ((a & (1u << 4)) && (b & (1u << 6))) r |= 1u << 6; /* number & integer = integer */
                if ((b & (1u << 4)) && (a & (1u << 6))) r |= 1u << 6;
                b = r;
                if (!b) return cfail(c, LOOM_ERR_FORMAT, "allOf: the types do not intersect (accepts nothing)");
            }
            if (json_object_set_new(acc, k, types_json(b))) return oom(c);
        } else if (!strcmp(k, "properties")) {
            if (!json_is_object(v)) return cfail(c, LOOM_ERR_FORMAT, "properties must be an object");
            if (!old) {
                old = json_object();
                if (!old || json_object_set_new(acc, k, old)) return oom(c);
            }
            const char *pk;
            json_t *pv;
            json_object_foreach(v, pk, pv) {
                json_t *prev = json_object_get(old, pk);
                if (!prev) {
                    if (json_object_set(old, pk, pv)) return oom(c);
                } else {
                    json_t *both = json_pack("{s:[OO]}", "allOf", prev, pv);
                    if (!both || json_object_set_new(old, pk, both)) return oom(c);
                }
            }
            /* additionalProperties false in this component: only its own names */
            json_t *ap = json_object_get(s, "additionalProperties");
            if (ap && !json_is_true(ap)) {
                if (!json_is_false(ap))
                    return cfail(c, LOOM_ERR_UNSUPPORTED, "allOf with an additionalProperties schema");
                json_t *closed = json_object_get(acc, "$loom-closed");
                if (!closed) {
                    closed = json_array();
                    if (!closed || json_object_set_new(acc, "$loom-closed", closed)) return oom(c);
                }
                json_t *names = json_array();
                if (!names) return oom(c);
                json_object_foreach(v, pk, pv) json_array_append_new(names, json_string(pk));
                json_array_append_new(closed, names);
            }
        } else if (!strcmp(k, "additionalProperties")) {
            if (json_is_false(v)) {
                if (!json_object_get(s, "properties")) { /* closed with no names */
                    json_t *closed = json_object_get(acc, "$loom-closed");
                    if (!closed) {
                        closed = json_array();
                        if (!closed || json_object_set_new(acc, "$loom-closed", closed)) return oom(c);
                    }
                    json_array_append_new(closed, json_array());
                }
            } else if (!json_is_true(v)) {
                return cfail(c, LOOM_ERR_UNSUPPORTED, "allOf with an additionalProperties schema");
            } else if (!old && json_object_set(acc, k, v)) {
                return oom(c);
            }
        } else if (!strcmp(k, "required")) {
            if (!json_is_array(v)) return cfail(c, LOOM_ERR_FORMAT, "required must be an array");
            if (!old) {
                old = json_array();
                if (!old || json_object_set_new(acc, k, old)) return oom(c);
            }
            size_t i;
            json_t *e;
            json_array_foreach(v, i, e) if (json_array_append(old, e)) return oom(c);
        } else if (!strcmp(k, "enum") || !strcmp(k, "const")) {
            json_t *vals = !strcmp(k, "const") ? json_pack("[O]", v) : json_incref(v);
            if (!vals) return oom(c);
            if (!json_is_array(vals)) {
                json_decref(vals);
                return cfail(c, LOOM_ERR_FORMAT, "enum must be an array");
            }
            json_t *prev = json_object_get(acc, "enum");
            if (prev) {
                json_t *inter = json_array();
                size_t i, j;
                json_t *a, *b;
                json_array_foreach(prev, i, a) json_array_foreach(vals, j, b) if (json_equal(a, b)) {
                    json_array_append(inter, a);
                    break;
                }
                json_decref(vals);
                vals = inter;
            }
            if (json_object_set_new(acc, "enum", vals)) return oom(c);
        } else if (!strcmp(k, "items") && json_is_object(v) && old && json_is_object(old)) {
            json_t *both = json_pack("{s:[OO]}", "allOf", old, v);
            if (!both || json_object_set_new(acc, k, both)) return oom(c);
        } else if (!strcmp(k, "minItems") || !strcmp(k, "minLength") || !strcmp(k, "minimum") ||
                   !strcmp(k, "exclusiveMinimum")) {
            if (json_is_boolean(v)) { /* draft 4 exclusiveMinimum: true */
                if (old && !json_equal(old, v)) return cfail(c, LOOM_ERR_UNSUPPORTED, "allOf: conflicting '%s'", k);
                if (json_object_set(acc, k, v)) return oom(c);
            } else if (!merge_number(c, acc, k, v, true)) {
                return false;
            }
        } else if (!strcmp(k, "maxItems") || !strcmp(k, "maxLength") || !strcmp(k, "maximum") ||
                   !strcmp(k, "exclusiveMaximum")) {
            if (json_is_boolean(v)) {
                if (old && !json_equal(old, v)) return cfail(c, LOOM_ERR_UNSUPPORTED, "allOf: conflicting '%s'", k);
                if (json_object_set(acc, k, v)) return oom(c);
            } else if (!merge_number(c, acc, k, v, false)) {
                return false;
            }
        } else if (old && !json_equal(old, v)) {
            /* pattern, format, anyOf, oneOf, prefixItems, items: only one may be given */
            return cfail(c, LOOM_ERR_UNSUPPORTED, "allOf: two different '%s' cannot be combined", k);
        } else if (!old && json_object_set(acc, k, v)) {
            return oom(c);
        }
        if (c->st) return false;
    }
    return true;
}

/* An integer bound from minimum / exclusiveMinimum (draft 4 boolean form too). */
static bool int_bound(conv *c, const json_t *s, bool upper, int64_t *out, bool *has) {
    const char *kin = upper ? "maximum" : "minimum", *kex = upper ? "exclusiveMaximum" : "exclusiveMinimum";
    json_t *in = json_object_get(s, kin), *ex = json_object_get(s, kex);
    *has = false;
    double best = 0;
    bool have = false;
    if (in) {
        if (!json_is_number(in)) return cfail(c, LOOM_ERR_FORMAT, "'%s' must be a number", kin);
        double d = json_number_value(in);
        if (json_is_true(ex)) d = upper ? ceil(d) - 1 : floor(d) + 1; /* draft 4 */
        else d = upper ? floor(d) : ceil(d);
        best = d, have = true;
    }
    if (ex && !json_is_boolean(ex)) {
        if (!json_is_number(ex)) return cfail(c, LOOM_ERR_FORMAT, "'%s' must be a number", kex);
        double d = json_number_value(ex);
        d = upper ? ceil(d) - 1 : floor(d) + 1;
        if (!have || (upper ? d < best : d > best)) best = d;
        have = true;
    }
    if (!have) return true;
    if (json_is_integer(in) && !json_is_true(ex) && !(ex && !json_is_boolean(ex))) {
        *out = json_integer_value(in); /* exact for large values */
        *has = true;
        return true;
    }
    if (best >= 9.2e18 || best <= -9.2e18) {
        /* beyond int64: a bound that does not restrict, or one that excludes everything */
        if ((upper && best > 0) || (!upper && best < 0)) return true;
        return cfail(c, LOOM_ERR_FORMAT, "integer bound '%s' beyond 64 bits: accepts nothing", in ? kin : kex);
    }
    *out = (int64_t)best;
    *has = true;
    return true;
}

/* ---------------------------------------------------------------- visiting */

static int64_t visit(conv *c, const json_t *s, const char *name);

static const char *rule_name_of(conv *c, int64_t r) { return r < 0 ? "" : c->rules[r].name; }

/* Body for "one of the values" (enum/const), filtered by the allowed types. */
static bool enum_body(conv *c, sbuf *o, const json_t *vals, unsigned types) {
    size_t i;
    json_t *v;
    int n = 0;
    sb_putc(o, '(');
    json_array_foreach(vals, i, v) {
        if (types) {
            unsigned t = 0;
            switch (json_typeof(v)) {
            case JSON_NULL: t = 1u << 0; break;
            case JSON_TRUE:
            case JSON_FALSE: t = 1u << 1; break;
            case JSON_OBJECT: t = 1u << 2; break;
            case JSON_ARRAY: t = 1u << 3; break;
            case JSON_INTEGER: t = 1u << 4 | 1u << 6; break;
            case JSON_REAL: t = 1u << 4 | (json_real_value(v) == floor(json_real_value(v)) ? 1u << 6 : 0); break;
            case JSON_STRING: t = 1u << 5; break;
            }
            if (!(t & types)) continue;
        }
        if (n++) sb_puts(o, " | ");
        if (!json_literal(c, o, v)) return false;
    }
    sb_putc(o, ')');
    if (!n) return cfail(c, LOOM_ERR_FORMAT, "enum/const has no value of the allowed types: it accepts nothing");
    return true;
}

static bool string_body(conv *c, sbuf *o, const json_t *s) {
    json_t *pat = json_object_get(s, "pattern"), *fmt = json_object_get(s, "format");
    uint64_t mn = 0, mx = 0;
    bool has_mn, has_mx;
    if (!get_count(c, s, "minLength", &mn, &has_mn) || !get_count(c, s, "maxLength", &mx, &has_mx)) return false;
    if (pat && !json_is_string(pat)) return cfail(c, LOOM_ERR_FORMAT, "'pattern' must be a string");
    if (fmt && !json_is_string(fmt)) return cfail(c, LOOM_ERR_FORMAT, "'format' must be a string");
    int fp = -1;
    if (fmt) {
        const char *f = json_string_value(fmt);
        if (!strcmp(f, "date")) fp = P_DATE;
        else if (!strcmp(f, "time")) fp = P_TIME;
        else if (!strcmp(f, "date-time")) fp = -2;
        else if (!strncmp(f, "uuid", 4) && (!f[4] || (f[4] >= '1' && f[4] <= '5' && !f[5]))) fp = P_UUID;
        else if (!strcmp(f, "email")) fp = P_EMAIL;
        else if (!strcmp(f, "ipv4")) fp = P_IPV4;
        else
            return cfail(c, LOOM_ERR_UNSUPPORTED,
                         "unsupported format '%.60s' (supported: date, time, date-time, uuid, email, ipv4)", f);
    }
    if ((pat != NULL) + (fmt != NULL) + (has_mn || has_mx) > 1)
        return cfail(c, LOOM_ERR_UNSUPPORTED, "unsupported combination: %s with %s", pat ? "pattern" : "format",
                     pat && fmt ? "format" : "minLength/maxLength");
    if (pat) {
        sbuf rx = {0};
        bool any = false;
        char msg[200];
        const char *pv = json_string_value(pat);
        if (!regex_to_gbnf(pv, json_string_length(pat), &rx, &any, msg, sizeof msg)) {
            sb_free(&rx);
            return cfail(c, LOOM_ERR_UNSUPPORTED, "pattern '%.80s': %s", pv, msg);
        }
        if (any) prim(c, P_CHAR);
        sb_puts(o, "\"\\\"\" ");
        sb_putn(o, rx.p, rx.n);
        sb_puts(o, " \"\\\"\"");
        if (rx.oom) o->oom = true;
        sb_free(&rx);
        return true;
    }
    if (fmt) {
        sb_puts(o, "\"\\\"\" ");
        if (fp == -2) sb_printf(o, "%s \"T\" %s", prim(c, P_DATE), prim(c, P_TIME));
        else sb_puts(o, prim(c, fp));
        sb_puts(o, " \"\\\"\"");
        return true;
    }
    if (has_mn || has_mx) {
        if (has_mx && mx < mn) return cfail(c, LOOM_ERR_FORMAT, "maxLength < minLength: accepts nothing");
        if (mn > LOOM_GRAMMAR_MAX_REPEAT || (has_mx && mx > LOOM_GRAMMAR_MAX_REPEAT))
            return cfail(c, LOOM_ERR_UNSUPPORTED, "minLength/maxLength above %d", LOOM_GRAMMAR_MAX_REPEAT);
        sb_printf(o, "\"\\\"\" %s", prim(c, P_CHAR));
        if (has_mx) sb_printf(o, "{%llu,%llu}", (unsigned long long)mn, (unsigned long long)mx);
        else sb_printf(o, "{%llu,}", (unsigned long long)mn);
        sb_puts(o, " \"\\\"\"");
        return true;
    }
    sb_puts(o, prim(c, P_STRING));
    return true;
}

/* A bound of a number: the tightest of minimum / exclusiveMinimum (maximum /
 * exclusiveMaximum), rounded inward to an integer when it is not one (a
 * narrowing: the grammar keeps only numbers the schema accepts). */
static bool num_bound(conv *c, const json_t *s, bool upper, int64_t *out, bool *excl, bool *has) {
    const char *kin = upper ? "maximum" : "minimum", *kex = upper ? "exclusiveMaximum" : "exclusiveMinimum";
    json_t *in = json_object_get(s, kin), *ex = json_object_get(s, kex);
    *has = false;
    double best = 0;
    bool bex = false, have = false;
    if (in) {
        if (!json_is_number(in)) return cfail(c, LOOM_ERR_FORMAT, "'%s' must be a number", kin);
        best = json_number_value(in), bex = json_is_true(ex), have = true;
    }
    if (ex && !json_is_boolean(ex)) {
        if (!json_is_number(ex)) return cfail(c, LOOM_ERR_FORMAT, "'%s' must be a number", kex);
        double d = json_number_value(ex);
        if (!have || (upper ? d <= best : d >= best)) best = d, bex = true;
        have = true;
    }
    if (!have) return true;
    if (best != floor(best)) { /* round inward; the rounded bound is inclusive */
        best = upper ? floor(best) : ceil(best);
        bex = false;
    }
    if (best >= 9.2e18 || best <= -9.2e18) {
        if ((upper && best > 0) || (!upper && best < 0)) return true; /* does not restrict */
        return cfail(c, LOOM_ERR_FORMAT, "number bound '%s' beyond 64 bits: accepts nothing", in ? kin : kex);
    }
    *out = json_is_integer(in) && !(ex && !json_is_boolean(ex)) ? json_integer_value(in) : (int64_t)best;
    *excl = bex;
    *has = true;
    return true;
}

static bool number_range(conv *c, sbuf *o, const json_t *s) {
    int64_t lo = 0, hi = 0;
    bool lex = false, hex = false, has_lo, has_hi;
    if (!num_bound(c, s, false, &lo, &lex, &has_lo) || !num_bound(c, s, true, &hi, &hex, &has_hi)) return false;
    bool any = false;
    sb_putc(o, '(');
    /* v >= 0 */
    if (!has_hi || hi > 0 || (hi == 0 && !hex)) {
        uint64_t lm = 0;
        bool lmx = false;
        if (has_lo && lo > 0) lm = (uint64_t)lo, lmx = lex;
        else if (has_lo && lo == 0) lmx = lex;
        size_t mark = o->n;
        sb_putc(o, '(');
        if (magnitude_range(o, lm, lmx, has_hi ? (uint64_t)hi : 0, hex, !has_hi)) {
            sb_putc(o, ')');
            any = true;
        } else {
            o->n = mark;
        }
    }
    /* v < 0: m = -v > 0 */
    if (!has_lo || lo < 0) {
        uint64_t lm = 0;
        bool lmx = true;
        if (has_hi && hi < 0) lm = (uint64_t)(-(hi + 1)) + 1, lmx = hex;
        uint64_t hm = has_lo ? (uint64_t)(-(lo + 1)) + 1 : 0;
        size_t mark = o->n;
        if (any) sb_puts(o, " | ");
        sb_puts(o, "\"-\" (");
        if (magnitude_range(o, lm, lmx, hm, lex, !has_lo)) {
            sb_putc(o, ')');
            any = true;
        } else {
            o->n = mark;
        }
    }
    sb_putc(o, ')');
    if (o->p) o->p[o->n] = 0;
    if (!any) return cfail(c, LOOM_ERR_FORMAT, "the number range is empty: accepts nothing");
    return true;
}

static bool number_body(conv *c, sbuf *o, const json_t *s, bool integer) {
    bool bounded = json_object_get(s, "minimum") || json_object_get(s, "maximum") ||
                   json_object_get(s, "exclusiveMinimum") || json_object_get(s, "exclusiveMaximum");
    json_t *fmt = json_object_get(s, "format");
    int64_t lo = 0, hi = 0;
    bool has_lo = false, has_hi = false;
    if (integer && json_is_string(fmt) && !strcmp(json_string_value(fmt), "int32")) {
        lo = INT32_MIN, hi = INT32_MAX, has_lo = has_hi = true;
    }
    if (!bounded && !has_lo) {
        sb_puts(o, prim(c, integer ? P_INTEGER : P_NUMBER));
        return true;
    }
    if (!integer) return number_range(c, o, s);
    int64_t b;
    bool h;
    if (!int_bound(c, s, false, &b, &h)) return false;
    if (h && (!has_lo || b > lo)) lo = b, has_lo = true;
    if (!int_bound(c, s, true, &b, &h)) return false;
    if (h && (!has_hi || b < hi)) hi = b, has_hi = true;
    if (has_lo && has_hi && lo > hi) return cfail(c, LOOM_ERR_FORMAT, "minimum > maximum: accepts nothing");
    sb_putc(o, '(');
    if (!int_range(o, lo, hi, has_lo, has_hi)) return cfail(c, LOOM_ERR_FORMAT, "empty integer range");
    sb_putc(o, ')');
    return true;
}

/* Items i.. of an array: item i (prefix or rest) then the continuation. */
static bool items_seq(conv *c, sbuf *o, const char *const *pre, size_t n_pre, const char *rest, size_t i, uint64_t lo,
                      uint64_t hi, bool unbounded) {
    const char *sp = prim(c, P_SPACE);
    if (i >= n_pre) { /* rest items: c in [max(lo - i, 1), hi - i] */
        uint64_t cmin = lo > i + 1 ? lo - i - 1 : 0;
        sb_printf(o, "%s %s ( \",\" %s %s %s )", rest, sp, sp, rest, sp);
        if (unbounded) sb_printf(o, "{%llu,}", (unsigned long long)cmin);
        else sb_printf(o, "{%llu,%llu}", (unsigned long long)cmin, (unsigned long long)(hi - i - 1));
        return true;
    }
    sb_printf(o, "%s %s", pre[i], sp);
    if (unbounded || i + 1 < hi) {
        if (i + 1 >= n_pre && !rest) return true;
        bool req = i + 1 < lo;
        sb_printf(o, " %s\",\" %s ", req ? "" : "( ", sp);
        if (!items_seq(c, o, pre, n_pre, rest, i + 1, lo, hi, unbounded)) return false;
        if (!req) sb_puts(o, " )?");
    }
    return true;
}

static bool array_body(conv *c, sbuf *o, const json_t *s, const char *name) {
    json_t *items = json_object_get(s, "items"), *prefix = json_object_get(s, "prefixItems");
    json_t *addl = json_object_get(s, "additionalItems");
    uint64_t lo = 0, hi = 0;
    bool has_lo, has_hi;
    if (!get_count(c, s, "minItems", &lo, &has_lo) || !get_count(c, s, "maxItems", &hi, &has_hi)) return false;
    const json_t *tuple = NULL, *rest_schema = NULL;
    bool rest_allowed = true;
    if (prefix) {
        if (!json_is_array(prefix)) return cfail(c, LOOM_ERR_FORMAT, "'prefixItems' must be an array");
        tuple = prefix;
        if (items) rest_schema = items;
        else rest_allowed = false; /* narrowed: exactly the tuple unless minItems wants more */
    } else if (json_is_array(items)) { /* draft 2019 and before: items as a tuple */
        tuple = items;
        if (addl) rest_schema = addl;
        else rest_allowed = false;
    } else {
        rest_schema = items;
        if (addl) {
            /* additionalItems without a tuple has no effect */
        }
    }
    if (rest_schema && json_is_false(rest_schema)) rest_allowed = false, rest_schema = NULL;
    if (rest_schema && !json_is_true(rest_schema) && !json_is_object(rest_schema))
        return cfail(c, LOOM_ERR_FORMAT, "'items' must be a schema");
    size_t n_pre = tuple ? json_array_size(tuple) : 0;
    if (!rest_allowed && (!has_hi || hi > n_pre)) {
        if (lo > n_pre) rest_allowed = true; /* the schema allows any further items: use values */
        else hi = n_pre, has_hi = true;
    }
    if (has_hi && hi < lo) return cfail(c, LOOM_ERR_FORMAT, "maxItems < minItems (or too few items allowed): accepts nothing");
    if (lo > LOOM_GRAMMAR_MAX_REPEAT || (has_hi && hi > LOOM_GRAMMAR_MAX_REPEAT))
        return cfail(c, LOOM_ERR_UNSUPPORTED, "minItems/maxItems above %d", LOOM_GRAMMAR_MAX_REPEAT);
    /* the item rules */
    const char **pre = NULL;
    if (n_pre) {
        pre = loom_calloc(n_pre, sizeof(char *));
        if (!pre) return oom(c);
    }
    bool ok = true;
    char sub[256];
    size_t save = strlen(c->ptr);
    for (size_t i = 0; i < n_pre && ok; i++) {
        ptr_push(c, json_is_array(items) && tuple == items ? "items" : "prefixItems");
        ptr_push_i(c, i);
        snprintf(sub, sizeof sub, "%s-%zu", name, i);
        int64_t r = visit(c, json_array_get(tuple, i), sub);
        ptr_pop(c, save);
        if (r < 0) ok = false;
        else pre[i] = rule_name_of(c, r);
    }
    const char *rest = NULL;
    if (ok && rest_allowed) {
        if (rest_schema && !json_is_true(rest_schema)) {
            ptr_push(c, addl && rest_schema == addl ? "additionalItems" : "items");
            snprintf(sub, sizeof sub, "%s-item", name);
            int64_t r = visit(c, rest_schema, sub);
            ptr_pop(c, save);
            if (r < 0) ok = false;
            else rest = rule_name_of(c, r);
        } else {
            rest = prim(c, P_VALUE);
        }
    }
    if (ok) {
        const char *sp = prim(c, P_SPACE);
        sb_printf(o, "\"[\" %s ", sp);
        if (!has_hi || hi > 0) {
            if (lo == 0) sb_puts(o, "( ");
            ok = items_seq(c, o, pre, n_pre, rest, 0, lo, hi, !has_hi);
            if (lo == 0) sb_puts(o, " )?");
        }
        sb_puts(o, " \"]\"");
    }
    loom_free(pre);
    return ok;
}

/* ---- objects */

typedef struct prop {
    const char *name;
    const json_t *schema;
    bool required;
    const char *kv; /* rule name */
} prop;

/* Rule for "a key that is none of the names": a trie of the names (encoded
 * without escapes; names that need escapes cannot collide with such keys). */
static void not_names(conv *c, sbuf *o, const char *const *names, size_t n, size_t depth, const char *kc) {
    /* names sharing the prefix of length depth; group by their next character (a UTF-8 sequence) */
    bool terminal = false;
    size_t i = 0;
    int alts = 0;
    sbuf excl = {0};
    sb_putc(o, '(');
    while (i < n) {
        if (strlen(names[i]) == depth) {
            terminal = true;
            i++;
            continue;
        }
        const unsigned char *ch = (const unsigned char *)names[i] + depth;
        size_t clen = ch[0] < 0x80 ? 1 : ch[0] < 0xE0 ? 2 : ch[0] < 0xF0 ? 3 : 4;
        size_t j = i + 1;
        while (j < n && strlen(names[j]) > depth && !memcmp(names[j] + depth, ch, clen)) j++;
        if (alts++) sb_puts(o, " | ");
        gbnf_literal(o, (const char *)ch, clen);
        sb_putc(o, ' ');
        not_names(c, o, names + i, j - i, depth + clen, kc);
        /* the class of excluded first characters */
        uint32_t cp = 0;
        if (clen == 1) cp = ch[0];
        else if (clen == 2) cp = (uint32_t)(ch[0] & 0x1F) << 6 | (ch[1] & 0x3F);
        else if (clen == 3) cp = (uint32_t)(ch[0] & 0x0F) << 12 | (uint32_t)(ch[1] & 0x3F) << 6 | (ch[2] & 0x3F);
        else cp = (uint32_t)(ch[0] & 0x07) << 18 | (uint32_t)(ch[1] & 0x3F) << 12 | (uint32_t)(ch[2] & 0x3F) << 6 | (ch[3] & 0x3F);
        if (cp < 0x100) sb_printf(&excl, "\\x%02X", cp);
        else if (cp < 0x10000) sb_printf(&excl, "\\u%04X", cp);
        else sb_printf(&excl, "\\U%08X", cp);
        i = j;
    }
    /* any other next character, then anything */
    if (alts++) sb_puts(o, " | ");
    sb_printf(o, "[^\"\\\\\\x7F\\x00-\\x1F%s] %s*", excl.p ? excl.p : "", kc);
    /* the prefix itself is a key unless it is one of the names */
    if (!terminal) sb_puts(o, " | \"\"");
    sb_putc(o, ')');
    if (excl.oom) o->oom = true;
    sb_free(&excl);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

static bool object_body(conv *c, sbuf *o, const json_t *s, const char *name) {
    json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    json_t *ap = json_object_get(s, "additionalProperties"), *closed = json_object_get(s, "$loom-closed");
    if (props && !json_is_object(props)) return cfail(c, LOOM_ERR_FORMAT, "'properties' must be an object");
    if (req && !json_is_array(req)) return cfail(c, LOOM_ERR_FORMAT, "'required' must be an array");
    if (ap && !json_is_boolean(ap) && !json_is_object(ap))
        return cfail(c, LOOM_ERR_FORMAT, "'additionalProperties' must be a schema");
    /* additional keys: schema given, else allowed only without `properties` (llama.cpp's default) */
    const json_t *addl = NULL;
    bool addl_ok = ap ? !json_is_false(ap) : !props;
    if (closed) addl_ok = false;
    if (ap && json_is_object(ap)) addl = ap;
    size_t n_req = req ? json_array_size(req) : 0;
    size_t cap = (props ? json_object_size(props) : 0) + n_req;
    prop *pl = loom_calloc(cap + 1, sizeof(prop));
    if (!pl) return oom(c);
    size_t n = 0;
    bool ok = true;
    for (size_t i = 0; i < n_req; i++)
        if (!json_is_string(json_array_get(req, i))) {
            loom_free(pl);
            return cfail(c, LOOM_ERR_FORMAT, "'required' must list strings");
        }
    const char *k;
    json_t *v;
    if (props) json_object_foreach(props, k, v) {
        bool r = false;
        for (size_t i = 0; i < n_req; i++)
            if (!strcmp(json_string_value(json_array_get(req, i)), k)) r = true;
        /* closed by an allOf component that does not declare it */
        bool allowed = true;
        size_t ci;
        json_t *names;
        if (closed) json_array_foreach(closed, ci, names) {
            bool in = false;
            size_t ni;
            json_t *nm;
            json_array_foreach(names, ni, nm) if (!strcmp(json_string_value(nm), k)) in = true;
            if (!in) allowed = false;
        }
        if (json_is_false(v) || !allowed) {
            if (r) {
                size_t sv = ptr_push(c, "required");
                cfail(c, LOOM_ERR_FORMAT, "required property '%.60s' is not allowed: the schema accepts nothing", k);
                ptr_pop(c, sv);
                loom_free(pl);
                return false;
            }
            continue;
        }
        pl[n].name = k, pl[n].schema = v, pl[n].required = r, n++;
    }
    /* required names without a property schema */
    for (size_t i = 0; i < n_req; i++) {
        const char *rn = json_string_value(json_array_get(req, i));
        bool found = false;
        for (size_t j = 0; j < n; j++)
            if (!strcmp(pl[j].name, rn)) found = true;
        if (found || (props && json_object_get(props, rn))) continue;
        if (!addl_ok && ap) {
            size_t sv = ptr_push(c, "required");
            cfail(c, LOOM_ERR_FORMAT, "required property '%.60s' is forbidden by additionalProperties: the schema "
                                      "accepts nothing", rn);
            ptr_pop(c, sv);
            loom_free(pl);
            return false;
        }
        pl[n].name = rn, pl[n].schema = addl, pl[n].required = true, n++;
    }
    const char *sp = prim(c, P_SPACE);
    size_t save = strlen(c->ptr);
    char sub[300];
    for (size_t i = 0; i < n && ok; i++) {
        const char *vrule;
        if (pl[i].schema) {
            if (props && pl[i].schema == json_object_get(props, pl[i].name)) {
                ptr_push(c, "properties");
                ptr_push(c, pl[i].name);
            } else {
                ptr_push(c, "additionalProperties");
            }
            snprintf(sub, sizeof sub, "%s-%s", name, pl[i].name);
            int64_t r = visit(c, pl[i].schema, sub);
            ptr_pop(c, save);
            if (r < 0) {
                ok = false;
                break;
            }
            vrule = rule_name_of(c, r);
        } else {
            vrule = prim(c, P_VALUE);
        }
        snprintf(sub, sizeof sub, "%s-%s-kv", name, pl[i].name);
        int64_t kv = new_rule(c, sub);
        if (kv < 0) {
            ok = false;
            break;
        }
        sbuf b = {0};
        json_t *js = json_string(pl[i].name);
        char *key = js ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
        json_decref(js);
        if (!key) {
            sb_free(&b);
            ok = oom(c);
            break;
        }
        gbnf_literal(&b, key, strlen(key));
        free(key);
        sb_printf(&b, " %s \":\" %s %s %s", sp, sp, vrule, sp);
        set_body(c, (uint32_t)kv, &b);
        pl[i].kv = rule_name_of(c, kv);
    }
    /* additional members */
    const char *add_kv = NULL;
    if (ok && addl_ok) {
        const char *vrule = prim(c, P_VALUE);
        if (addl) {
            ptr_push(c, "additionalProperties");
            snprintf(sub, sizeof sub, "%s-additional", name);
            int64_t r = visit(c, addl, sub);
            ptr_pop(c, save);
            if (r < 0) ok = false;
            else vrule = rule_name_of(c, r);
        }
        if (ok) {
            snprintf(sub, sizeof sub, "%s-additional-kv", name);
            int64_t kv = new_rule(c, sub);
            if (kv < 0) ok = false;
            if (ok) {
                sbuf b = {0};
                if (n == 0) {
                    sb_puts(&b, prim(c, P_STRING));
                } else {
                    /* names that need no escapes, sorted, unique */
                    const char **nm = loom_malloc(n * sizeof(char *));
                    size_t m = 0;
                    if (!nm) {
                        ok = oom(c);
                    } else {
                        for (size_t i = 0; i < n; i++) {
                            bool plain = true;
                            for (const unsigned char *q = (const unsigned char *)pl[i].name; *q; q++)
                                if (*q < 0x20 || *q == '"' || *q == '\\' || *q == 0x7F) plain = false;
                            if (plain) nm[m++] = pl[i].name;
                        }
                        qsort(nm, m, sizeof *nm, cmp_str);
                        size_t u = 0;
                        for (size_t i = 0; i < m; i++)
                            if (!u || strcmp(nm[u - 1], nm[i])) nm[u++] = nm[i];
                        sb_puts(&b, "\"\\\"\" ");
                        not_names(c, &b, nm, u, 0, prim(c, P_KEYCHAR));
                        sb_puts(&b, " \"\\\"\"");
                        loom_free(nm);
                    }
                }
                sb_printf(&b, " %s \":\" %s %s %s", sp, sp, vrule, sp);
                set_body(c, (uint32_t)kv, &b);
                add_kv = rule_name_of(c, kv);
            }
        }
    }
    if (ok) {
        /* After(i): what may follow once something was written, from property i on */
        int64_t *after = loom_calloc(n + 2, sizeof(int64_t));
        if (!after) ok = oom(c);
        for (size_t i = n; ok; i--) {
            if (i == 0 && n > 0) break; /* After(0) is never used: First() starts */
            sbuf b = {0};
            if (i == n) {
                if (add_kv) sb_printf(&b, "( \",\" %s %s )*", sp, add_kv);
            } else {
                if (pl[i].required) sb_printf(&b, "\",\" %s %s", sp, pl[i].kv);
                else sb_printf(&b, "( \",\" %s %s )?", sp, pl[i].kv);
                if (after[i + 1] > 0) sb_printf(&b, " %s", rule_name_of(c, after[i + 1]));
            }
            if (!b.n) {
                after[i] = 0;
                sb_free(&b);
                if (i == 0) break;
                continue;
            }
            snprintf(sub, sizeof sub, "%s-after-%zu", name, i);
            int64_t r = new_rule(c, sub);
            if (r < 0) {
                sb_free(&b);
                ok = false;
                break;
            }
            set_body(c, (uint32_t)r, &b);
            after[i] = r;
            if (i == 0) break;
        }
        if (ok) {
            /* First(i): nothing written yet */
            sb_printf(o, "\"{\" %s ", sp);
            size_t open = 0;
            bool closed_seq = false;
            for (size_t i = 0; i < n; i++) {
                const char *aft = after[i + 1] > 0 ? rule_name_of(c, after[i + 1]) : "";
                if (pl[i].required) {
                    sb_printf(o, "%s %s", pl[i].kv, aft);
                    closed_seq = true;
                    break;
                }
                sb_printf(o, "( %s %s | ", pl[i].kv, aft);
                open++;
            }
            if (!closed_seq) {
                if (add_kv) sb_printf(o, "( %s %s )?", add_kv, after[n] > 0 ? rule_name_of(c, after[n]) : "");
                else sb_puts(o, "\"\"");
            }
            for (size_t i = 0; i < open; i++) sb_puts(o, " )");
            sb_puts(o, " \"}\"");
        }
        loom_free(after);
    }
    loom_free(pl);
    return ok;
}

/* The rule for schema s (memoised for schemas of the document). */
static int64_t visit(conv *c, const json_t *s, const char *name) {
    for (uint32_t i = 0; i < c->n_memos; i++)
        if (c->memos[i].node == s) return c->memos[i].rule;
    if (++c->depth > LOOM_GRAMMAR_MAX_NESTING) {
        cfail(c, LOOM_ERR_RANGE, "schema nested deeper than %d", LOOM_GRAMMAR_MAX_NESTING);
        return -1;
    }
    int64_t r = new_rule(c, name);
    if (r < 0) return -1;
    if (!grow((void **)&c->memos, &c->cap_memos, c->n_memos + 1, sizeof(memo))) return oom(c), -1;
    c->memos[c->n_memos].node = s;
    c->memos[c->n_memos].rule = (uint32_t)r;
    c->n_memos++;
    const char *rn = rule_name_of(c, r);
    char rname[220];
    snprintf(rname, sizeof rname, "%s", rn);
    sbuf b = {0};
    bool ok = true;
    if (json_is_true(s)) {
        sb_puts(&b, prim(c, P_VALUE));
    } else if (json_is_false(s)) {
        ok = cfail(c, LOOM_ERR_FORMAT, "the schema false accepts nothing");
    } else if (!json_is_object(s)) {
        ok = cfail(c, LOOM_ERR_FORMAT, "a schema must be an object or a boolean");
    } else {
        /* reject what cannot be expressed, check types of the main keywords */
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)s, k, v) {
            if (keyword_class(k, v) == K_UNSUPPORTED) {
                ok = cfail(c, LOOM_ERR_UNSUPPORTED, "unsupported keyword '%s'", k);
                break;
            }
        }
        json_t *ref = json_object_get(s, "$ref"), *all = json_object_get(s, "allOf");
        json_t *any = json_object_get(s, "anyOf");
        if (!any) any = json_object_get(s, "oneOf");
        static const char *const only_ref[] = {"$ref", NULL};
        if (!ok) {
        } else if (json_object_get(s, "anyOf") && json_object_get(s, "oneOf")) {
            ok = cfail(c, LOOM_ERR_UNSUPPORTED, "anyOf together with oneOf");
        } else if (ref && !has_assertions_except(s, only_ref)) {
            if (!json_is_string(ref)) {
                ok = cfail(c, LOOM_ERR_FORMAT, "$ref must be a string");
            } else {
                json_t *t = resolve_ref(c, json_string_value(ref));
                int64_t tr = -1;
                if (t) {
                    char saved[sizeof c->ptr];
                    memcpy(saved, c->ptr, sizeof saved);
                    snprintf(c->ptr, sizeof c->ptr, "%s", json_string_value(ref) + 1);
                    char tname[220];
                    snprintf(tname, sizeof tname, "%s", json_string_value(ref) + 1);
                    if (!strncmp(tname, "/$defs/", 7)) memmove(tname, tname + 7, strlen(tname + 7) + 1);
                    else if (!strncmp(tname, "/definitions/", 13)) memmove(tname, tname + 13, strlen(tname + 13) + 1);
                    if (!tname[0]) snprintf(tname, sizeof tname, "root");
                    tr = visit(c, t, tname);
                    memcpy(c->ptr, saved, sizeof saved);
                }
                if (tr < 0) ok = false;
                else sb_puts(&b, rule_name_of(c, tr));
            }
        } else if (ref || all) {
            json_t *m = own(c, json_object());
            ok = m != NULL;
            /* everything except anyOf/oneOf, which are applied to the merged base */
            if (ok) {
                json_t *base = json_deep_copy(s);
                ok = own(c, base) != NULL;
                if (ok) {
                    json_object_del(base, "anyOf");
                    json_object_del(base, "oneOf");
                    ok = merge_into(c, m, base, 0);
                }
                if (ok && any && json_object_set(m, json_object_get(s, "anyOf") ? "anyOf" : "oneOf", any)) ok = oom(c);
            }
            if (ok) {
                c->depth--;
                int64_t tr = visit(c, m, rname);
                c->depth++;
                if (tr < 0) ok = false;
                else sb_puts(&b, rule_name_of(c, tr));
            }
        } else if (any) {
            if (!json_is_array(any) || json_array_size(any) == 0) {
                ok = cfail(c, LOOM_ERR_FORMAT, "anyOf/oneOf must be a non-empty array");
            } else {
                static const char *const alts_kw[] = {"anyOf", "oneOf", NULL};
                bool base = has_assertions_except(s, alts_kw);
                const char *kw = json_object_get(s, "anyOf") ? "anyOf" : "oneOf";
                size_t i;
                json_t *alt;
                size_t save = strlen(c->ptr);
                json_array_foreach(any, i, alt) {
                    const json_t *a = alt;
                    ptr_push(c, kw);
                    ptr_push_i(c, i);
                    if (base) { /* the keywords beside anyOf apply to every alternative */
                        json_t *m = own(c, json_object());
                        json_t *bs = m ? own(c, json_deep_copy(s)) : NULL;
                        if (!bs) {
                            ok = false;
                        } else {
                            json_object_del(bs, "anyOf");
                            json_object_del(bs, "oneOf");
                            ok = merge_into(c, m, bs, 0) && merge_into(c, m, alt, 0);
                        }
                        a = m;
                    }
                    char sub[260];
                    snprintf(sub, sizeof sub, "%s-%zu", rname, i);
                    int64_t ar = ok ? visit(c, a, sub) : -1;
                    ptr_pop(c, save);
                    if (ar < 0) {
                        ok = false;
                        break;
                    }
                    if (i) sb_puts(&b, " | ");
                    sb_puts(&b, rule_name_of(c, ar));
                }
            }
        } else {
            /* the allowed types */
            json_t *type = json_object_get(s, "type");
            unsigned types = 0;
            if (type) {
                types = type_bits(type);
                if (!types || (json_is_array(type) && json_array_size(type) == 0) ||
                    (!json_is_string(type) && !json_is_array(type)))
                    ok = cfail(c, LOOM_ERR_FORMAT, "'type' must be one of null, boolean, object, array, number, "
                                                   "string, integer (or an array of them)");
                if ((types & (1u << 4)) && (types & (1u << 6))) types &= ~(1u << 6); /* number covers integer */
            }
            json_t *en = json_object_get(s, "enum"), *cn = json_object_get(s, "const");
            if (!ok) {
            } else if (en || cn) {
                json_t *vals = cn ? json_pack("[O]", cn) : json_incref(en);
                if (!vals) {
                    ok = oom(c);
                } else if (!json_is_array(vals)) {
                    ok = cfail(c, LOOM_ERR_FORMAT, "'enum' must be an array");
                } else {
                    static const char *const kw[] = {"enum", "const", "type", NULL};
                    if (has_assertions_except(s, kw)) {
                        const char *other = "";
                        json_object_foreach((json_t *)s, k, v) if (keyword_class(k, v) == K_SUPPORTED &&
                                                                   strcmp(k, "enum") && strcmp(k, "const") &&
                                                                   strcmp(k, "type")) other = k;
                        ok = cfail(c, LOOM_ERR_UNSUPPORTED, "'%s' together with enum/const", other);
                    } else if (en && cn) {
                        ok = cfail(c, LOOM_ERR_UNSUPPORTED, "enum together with const");
                    } else {
                        if (types & (1u << 4)) types |= 1u << 6;
                        ok = enum_body(c, &b, vals, types);
                    }
                }
                json_decref(vals);
            } else {
                if (!type) { /* infer from the keywords; none: any value */
                    static const char *const okw[] = {"properties", "required", "additionalProperties",
                                                      "$loom-closed", NULL};
                    static const char *const akw[] = {"items", "prefixItems", "minItems", "maxItems",
                                                      "additionalItems", NULL};
                    static const char *const skw[] = {"minLength", "maxLength", "pattern", "format", NULL};
                    static const char *const nkw[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                                                      NULL};
                    for (int i = 0; okw[i]; i++)
                        if (json_object_get(s, okw[i])) types |= 1u << 2;
                    for (int i = 0; akw[i]; i++)
                        if (json_object_get(s, akw[i])) types |= 1u << 3;
                    for (int i = 0; skw[i]; i++)
                        if (json_object_get(s, skw[i])) types |= 1u << 5;
                    for (int i = 0; nkw[i]; i++)
                        if (json_object_get(s, nkw[i])) types |= 1u << 4;
                }
                if (!types) {
                    sb_puts(&b, prim(c, P_VALUE));
                } else {
                    int n_t = 0;
                    for (int t = 0; t < 7 && ok; t++) {
                        if (!(types & (1u << t))) continue;
                        if (n_t++) sb_puts(&b, " | ");
                        switch (t) {
                        case 0: sb_puts(&b, prim(c, P_NULL)); break;
                        case 1: sb_puts(&b, prim(c, P_BOOLEAN)); break;
                        case 2: ok = object_body(c, &b, s, rname); break;
                        case 3: ok = array_body(c, &b, s, rname); break;
                        case 4: ok = number_body(c, &b, s, false); break;
                        case 5: ok = string_body(c, &b, s); break;
                        case 6: ok = number_body(c, &b, s, true); break;
                        }
                    }
                }
            }
        }
    }
    c->depth--;
    if (!ok || c->st) {
        sb_free(&b);
        return -1;
    }
    set_body(c, (uint32_t)r, &b);
    return c->st ? -1 : r;
}

/* ---------------------------------------------------------------- entry points */

static void conv_free(conv *c) {
    for (uint32_t i = 0; i < c->n_rules; i++) {
        loom_free(c->rules[i].name);
        loom_free(c->rules[i].body);
    }
    loom_free(c->rules);
    loom_free(c->memos);
    for (uint32_t i = 0; i < c->n_owned; i++) json_decref(c->owned[i]);
    loom_free(c->owned);
    json_decref(c->root);
}

loom_status loom_json_schema_to_gbnf(const char *schema, size_t len, char **gbnf, size_t *gbnf_len, loom_error *err) {
    if (gbnf) *gbnf = NULL;
    if (gbnf_len) *gbnf_len = 0;
    if (!gbnf || (!schema && len)) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "JSON Schema: NULL argument");
    if (len > LOOM_GRAMMAR_MAX_TEXT)
        return loom_error_set(err, LOOM_ERR_RANGE, "JSON Schema: %zu bytes exceed the limit of %u", len,
                              LOOM_GRAMMAR_MAX_TEXT);
    conv c;
    memset(&c, 0, sizeof c);
    c.err = err;
    json_error_t je;
    c.root = json_loadb(schema ? schema : "", len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &je);
    if (!c.root)
        return loom_error_set(err, LOOM_ERR_FORMAT, "JSON Schema: line %d, column %d: %s", je.line, je.column, je.text);
    int64_t r = visit(&c, c.root, "root");
    loom_status st = c.st;
    if (r >= 0 && st == LOOM_OK) {
        /* root first (it is rule 0), then the others in order, then the primitives */
        sbuf o = {0};
        for (uint32_t i = 0; i < c.n_rules; i++) sb_printf(&o, "%s ::= %s\n", c.rules[i].name, c.rules[i].body);
        for (int p = 0; p < P_COUNT; p++)
            if (c.need[p]) sb_printf(&o, "%s ::= %s\n", PRIM_NAME[p], PRIM_BODY[p]);
        if (o.oom) {
            sb_free(&o);
            st = loom_error_set(err, LOOM_ERR_NOMEM, "JSON Schema: out of memory");
        } else {
            *gbnf = o.p;
            if (gbnf_len) *gbnf_len = o.n;
        }
    } else if (st == LOOM_OK) {
        st = loom_error_set(err, LOOM_ERR_INTERNAL, "JSON Schema: conversion failed");
    }
    conv_free(&c);
    return st;
}

loom_status loom_grammar_new_json_schema(const char *schema, size_t len, loom_grammar **out, loom_error *err) {
    if (out) *out = NULL;
    if (!out) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "JSON Schema: NULL argument");
    char *g = NULL;
    size_t glen = 0;
    loom_status st = loom_json_schema_to_gbnf(schema, len, &g, &glen, err);
    if (st != LOOM_OK) return st;
    loom_error gerr = {0};
    st = loom_grammar_new(g, glen, "root", NULL, out, &gerr);
    if (st != LOOM_OK)
        loom_error_set(err, st, "JSON Schema: the grammar it converts to is invalid (%s)", gerr.msg);
    loom_free(g);
    return st;
}

loom_status loom_grammar_new_json_object(loom_grammar **out, loom_error *err) {
    static const char schema[] = "{\"type\": \"object\"}";
    return loom_grammar_new_json_schema(schema, sizeof schema - 1, out, err);
}

#endif /* LOOM_HAVE_JANSSON */
