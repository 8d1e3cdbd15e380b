/*
 * calls.c - tool-call bodies of each syntax -> (name, JSON arguments, id).
 *
 * Every parser gets one complete section (the text between the family's markers) and
 * either appends all of its calls or nothing (a malformed section is the caller's
 * content text). Arguments are normalised to a compact JSON object through jansson;
 * key order is kept.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "chat_internal.h"

/* ------------------------------------------------------------------ strings */

bool chat_str_add(chat_str *s, const char *x, size_t n) {
    if (s->n + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 64;
        while (cap < s->n + n + 1) cap *= 2;
        char *p = realloc(s->p, cap);
        if (!p) return false;
        s->p = p;
        s->cap = cap;
    }
    if (n) memcpy(s->p + s->n, x, n);
    s->n += n;
    s->p[s->n] = '\0';
    return true;
}

void chat_str_free(chat_str *s) {
    free(s->p);
    memset(s, 0, sizeof *s);
}

const char *chat_find(const char *hay, size_t n, const char *needle) {
    size_t m = strlen(needle);
    if (!m || m > n) return NULL;
    const char *end = hay + n - m;
    for (const char *p = hay; p <= end; p++) {
        p = memchr(p, needle[0], (size_t)(end - p) + 1);
        if (!p) return NULL;
        if (!memcmp(p, needle, m)) return p;
    }
    return NULL;
}

size_t chat_partial_suffix(const char *s, size_t n, const char *needle) {
    size_t m = strlen(needle);
    size_t k = m > 0 ? m - 1 : 0;
    if (k > n) k = n;
    for (; k > 0; k--)
        if (!memcmp(s + n - k, needle, k)) return k;
    return 0;
}

static char *dup_n(const char *s, size_t n) {
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static void trim(const char **s, size_t *n) {
    while (*n && isspace((unsigned char)**s)) (*s)++, (*n)--;
    while (*n && isspace((unsigned char)(*s)[*n - 1])) (*n)--;
}

static bool starts(const char *s, size_t n, const char *pre) {
    size_t m = strlen(pre);
    return n >= m && !memcmp(s, pre, m);
}

/* ------------------------------------------------------------------ JSON */

size_t chat_json_value_end(const char *s, size_t n) {
    size_t i = 0;
    while (i < n && isspace((unsigned char)s[i])) i++;
    if (i == n) return 0;
    char c = s[i];
    if (c == '{' || c == '[') {
        int depth = 0;
        bool in_str = false, esc = false;
        for (; i < n; i++) {
            char ch = s[i];
            if (in_str) {
                if (esc) esc = false;
                else if (ch == '\\') esc = true;
                else if (ch == '"') in_str = false;
                continue;
            }
            if (ch == '"') in_str = true;
            else if (ch == '{' || ch == '[') {
                if (++depth > 512) return (size_t)-1;
            } else if (ch == '}' || ch == ']') {
                if (--depth == 0) return i + 1;
            }
        }
        return 0;
    }
    if (c == '"') {
        bool esc = false;
        for (i++; i < n; i++) {
            if (esc) esc = false;
            else if (s[i] == '\\') esc = true;
            else if (s[i] == '"') return i + 1;
        }
        return 0;
    }
    if (c == '-' || isdigit((unsigned char)c) || c == 't' || c == 'f' || c == 'n') {
        size_t j = i;
        while (j < n && (isalnum((unsigned char)s[j]) || strchr("+-.", s[j]))) j++;
        return j < n ? j : 0; /* a number or literal ends where something else starts */
    }
    return (size_t)-1;
}

/* Parse text as JSON (any value); NULL if it is not exactly one value. */
static json_t *json_parse(const char *s, size_t n) {
    json_error_t e;
    return json_loadb(s, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
}

/* Compact text of a JSON object (arguments); NULL on failure. */
static char *json_text(const json_t *v) {
    char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!t) return NULL;
    char *d = dup_n(t, strlen(t));
    free(t);
    return d;
}

/* A function name: 1..1024 bytes, no control characters or spaces. */
static bool name_ok(const char *name) {
    size_t n = 0;
    for (; name[n]; n++)
        if ((unsigned char)name[n] <= 0x20 || n >= 1024) return false;
    return n > 0;
}

static bool calls_push(chat_calls *c, char *id, char *name, char *args) {
    if (!name || !args || !name_ok(name)) goto fail;
    if (id && !name_ok(id)) {
        free(id);
        id = NULL; /* a malformed id is replaced by a generated one */
    }
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 4;
        chat_call *v = realloc(c->v, (size_t)cap * sizeof *v);
        if (!v) goto fail;
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n].id = id;
    c->v[c->n].name = name;
    c->v[c->n].arguments = args;
    c->n++;
    return true;
fail:
    free(id), free(name), free(args);
    return false;
}

void chat_calls_free(chat_calls *c) {
    for (int i = 0; i < c->n; i++) free(c->v[i].id), free(c->v[i].name), free(c->v[i].arguments);
    free(c->v);
    memset(c, 0, sizeof *c);
}

/* Roll back c to n0 entries (a section that failed half-way appends nothing). */
static bool calls_rollback(chat_calls *c, int n0) {
    while (c->n > n0) {
        c->n--;
        free(c->v[c->n].id), free(c->v[c->n].name), free(c->v[c->n].arguments);
    }
    return false;
}

/* Arguments value -> compact object text. A string holding a JSON object is accepted
 * (OpenAI-style stringified arguments); anything but an object is refused. */
static char *args_text(const json_t *a) {
    if (!a) return dup_n("{}", 2);
    if (json_is_object(a)) return json_text(a);
    if (json_is_string(a)) {
        json_t *v = json_parse(json_string_value(a), json_string_length(a));
        char *t = json_is_object(v) ? json_text(v) : NULL;
        json_decref(v);
        return t;
    }
    return NULL;
}

static char *id_text(const json_t *v) {
    if (json_is_string(v) && json_string_length(v) > 0 && json_string_length(v) < 256)
        return dup_n(json_string_value(v), json_string_length(v));
    if (json_is_integer(v)) {
        char b[32];
        snprintf(b, sizeof b, "%lld", (long long)json_integer_value(v));
        return dup_n(b, strlen(b));
    }
    return NULL;
}

/* One call object: {"name", "arguments"|"parameters", "id"?}, Command-R's
 * {"tool_name", "parameters", "tool_call_id"}, OpenAI's {"function": {"name",
 * "arguments"}, "id"}, or Apertus' {"name": {args}} (a single key naming the function). */
static bool push_call_object(const json_t *o, chat_calls *out) {
    if (!json_is_object(o)) return false;
    const json_t *fn = json_object_get(o, "function");
    const json_t *name = json_object_get(o, "name");
    if (!json_is_string(name)) name = json_object_get(o, "tool_name");
    const json_t *args = json_object_get(o, "arguments");
    if (!args) args = json_object_get(o, "parameters");
    const json_t *id = json_object_get(o, "id");
    if (!id) id = json_object_get(o, "tool_call_id");
    if (!json_is_string(name) && json_is_object(fn)) {
        name = json_object_get(fn, "name");
        if (!args) args = json_object_get(fn, "arguments");
        if (!args) args = json_object_get(fn, "parameters");
    }
    if (!json_is_string(name) && json_object_size(o) == 1) {
        const char *k = json_object_iter_key(json_object_iter((json_t *)o));
        const json_t *v = json_object_iter_value(json_object_iter((json_t *)o));
        if (json_is_object(v) && k && *k)
            return calls_push(out, NULL, dup_n(k, strlen(k)), json_text(v));
    }
    if (!json_is_string(name) || json_string_length(name) == 0) return false;
    char *a = args_text(args);
    if (!a) return false;
    return calls_push(out, id_text(id), dup_n(json_string_value(name), json_string_length(name)), a);
}

bool chat_parse_json_calls(const chat_body_ctx *bc, const char *s, size_t n, chat_calls *out) {
    (void)bc;
    trim(&s, &n);
    /* tolerate a ```json fence */
    if (starts(s, n, "```")) {
        const char *nl = memchr(s, '\n', n);
        if (!nl) return false;
        n -= (size_t)(nl + 1 - s);
        s = nl + 1;
        trim(&s, &n);
        if (n >= 3 && !memcmp(s + n - 3, "```", 3)) n -= 3;
        trim(&s, &n);
    }
    if (!n) return false;
    int n0 = out->n;
    /* one value, or several objects separated by whitespace / ';' / ',' (Llama 3.2) */
    size_t i = 0;
    while (i < n) {
        size_t e = chat_json_value_end(s + i, n - i);
        if (e == 0 || e == (size_t)-1) {
            /* a number/literal at the very end has no terminator: try the rest whole */
            e = n - i;
        }
        json_t *v = json_parse(s + i, e);
        if (!v) return calls_rollback(out, n0);
        bool ok;
        if (json_is_array(v)) {
            ok = json_array_size(v) > 0;
            for (size_t k = 0; ok && k < json_array_size(v); k++) ok = push_call_object(json_array_get(v, k), out);
        } else {
            ok = push_call_object(v, out);
        }
        json_decref(v);
        if (!ok) return calls_rollback(out, n0);
        i += e;
        while (i < n && (isspace((unsigned char)s[i]) || s[i] == ';' || s[i] == ',')) i++;
    }
    return out->n > n0;
}

bool chat_parse_name_json(const chat_body_ctx *bc, const char *name, size_t name_len, const char *args,
                          size_t args_len, chat_calls *out) {
    (void)bc;
    trim(&name, &name_len);
    trim(&args, &args_len);
    if (!name_len || name_len > 1024) return false;
    for (size_t i = 0; i < name_len; i++)
        if (isspace((unsigned char)name[i]) || name[i] == '"' || name[i] == '<') return false;
    char *a;
    if (!args_len) {
        a = dup_n("{}", 2);
    } else {
        json_t *v = json_parse(args, args_len);
        a = v ? args_text(v) : NULL;
        json_decref(v);
    }
    if (!a) return false;
    return calls_push(out, NULL, dup_n(name, name_len), a);
}

/* Mistral after [TOOL_CALLS]: a JSON array of calls (Nemo), or name[ARGS]{json}, or
 * name[CALL_ID]id[ARGS]{json} (v11 tokenizers). */
bool chat_parse_mistral(const chat_body_ctx *bc, const char *s, size_t n, chat_calls *out) {
    const char *t = s;
    size_t m = n;
    trim(&t, &m);
    if (m && (t[0] == '[' || t[0] == '{')) return chat_parse_json_calls(bc, t, m, out);
    const char *args = chat_find(s, n, "[ARGS]");
    if (!args) return false;
    const char *name_end = args;
    char *id = NULL;
    const char *cid = chat_find(s, (size_t)(args - s), "[CALL_ID]");
    if (cid) {
        name_end = cid;
        const char *i0 = cid + strlen("[CALL_ID]");
        const char *it = i0;
        size_t il = (size_t)(args - i0);
        trim(&it, &il);
        if (il) id = dup_n(it, il);
    }
    int n0 = out->n;
    const char *a = args + strlen("[ARGS]");
    if (!chat_parse_name_json(bc, s, (size_t)(name_end - s), a, (size_t)(s + n - a), out)) {
        free(id);
        return false;
    }
    if (id && out->n > n0) out->v[out->n - 1].id = id;
    else free(id);
    return true;
}

/* DeepSeek: a run of <｜tool▁call▁begin｜>BODY<｜tool▁call▁end｜> where BODY is
 * "function<｜tool▁sep｜>NAME\n```json\nARGS\n```" (R1) or "NAME<｜tool▁sep｜>ARGS" (V3.1). */
#define DS_CALL_BEGIN "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_CALL_END "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DS_SEP "<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>"
bool chat_parse_deepseek(const chat_body_ctx *bc, const char *s, size_t n, chat_calls *out) {
    int n0 = out->n;
    const char *p = s, *end = s + n;
    for (;;) {
        const char *b = chat_find(p, (size_t)(end - p), DS_CALL_BEGIN);
        if (!b) break;
        const char *body = b + strlen(DS_CALL_BEGIN);
        const char *e = chat_find(body, (size_t)(end - body), DS_CALL_END);
        const char *bend = e ? e : end;
        const char *sep = chat_find(body, (size_t)(bend - body), DS_SEP);
        if (!sep) return calls_rollback(out, n0);
        const char *after = sep + strlen(DS_SEP);
        const char *name, *args;
        size_t name_len, args_len;
        if ((size_t)(sep - body) == 8 && !memcmp(body, "function", 8)) {
            /* R1: NAME up to the newline, then a fenced JSON block */
            const char *nl = memchr(after, '\n', (size_t)(bend - after));
            if (!nl) return calls_rollback(out, n0);
            name = after;
            name_len = (size_t)(nl - after);
            args = nl + 1;
            args_len = (size_t)(bend - args);
            trim(&args, &args_len);
            if (starts(args, args_len, "```")) {
                const char *nl2 = memchr(args, '\n', args_len);
                if (!nl2) return calls_rollback(out, n0);
                args_len -= (size_t)(nl2 + 1 - args);
                args = nl2 + 1;
                trim(&args, &args_len);
                if (args_len >= 3 && !memcmp(args + args_len - 3, "```", 3)) args_len -= 3;
            }
        } else {
            name = body;
            name_len = (size_t)(sep - body);
            args = after;
            args_len = (size_t)(bend - after);
        }
        if (!chat_parse_name_json(bc, name, name_len, args, args_len, out)) return calls_rollback(out, n0);
        if (!e) break;
        p = e + strlen(DS_CALL_END);
    }
    return out->n > n0;
}

/* ------------------------------------------------------------------ XML styles */

/* The JSON type a tool's parameter declares ("string", "integer"...), or NULL. */
static const char *param_type(const chat_body_ctx *bc, const char *fn, const char *param) {
    if (!bc || !json_is_array(bc->tools)) return NULL;
    size_t i;
    json_t *t;
    json_array_foreach((json_t *)bc->tools, i, t) {
        json_t *f = json_object_get(t, "function");
        if (!f) f = t;
        const char *name = json_string_value(json_object_get(f, "name"));
        if (!name || strcmp(name, fn)) continue;
        json_t *props = json_object_get(json_object_get(f, "parameters"), "properties");
        json_t *ty = json_object_get(json_object_get(props, param), "type");
        if (json_is_string(ty)) return json_string_value(ty);
        if (json_is_array(ty) && json_array_size(ty) && json_is_string(json_array_get(ty, 0)))
            return json_string_value(json_array_get(ty, 0));
        return NULL;
    }
    return NULL;
}

/* Add key = value (text) to obj: a string when the schema says string; otherwise the
 * value's JSON reading when it has one (numbers, true/false/null, objects, arrays), else
 * the text as a string. One newline around the value is the syntax's, not the value's. */
static bool add_param(const chat_body_ctx *bc, json_t *obj, const char *fn, const char *k, size_t kn,
                      const char *v, size_t vn) {
    while (kn && isspace((unsigned char)*k)) k++, kn--;
    while (kn && isspace((unsigned char)k[kn - 1])) kn--;
    if (!kn) return false;
    if (vn && v[0] == '\n') v++, vn--;
    if (vn && v[vn - 1] == '\n') vn--;
    char *key = dup_n(k, kn);
    if (!key) return false;
    const char *ty = param_type(bc, fn, key);
    json_t *val = NULL;
    if (!ty || strcmp(ty, "string")) {
        const char *t = v;
        size_t tn = vn;
        trim(&t, &tn);
        if (tn) val = json_parse(t, tn);
        if (val && json_is_string(val) && !ty) {
            json_decref(val); /* "quoted" text stays the text the model wrote */
            val = NULL;
        }
    }
    if (!val) val = json_stringn(v, vn);
    bool ok = val && json_object_set_new(obj, key, val) == 0;
    free(key);
    return ok;
}

static bool push_obj(const char *name, size_t name_len, json_t *obj, chat_calls *out) {
    char *a = json_text(obj);
    json_decref(obj);
    const char *nm = name;
    size_t nl = name_len;
    trim(&nm, &nl);
    if (!nl) {
        free(a);
        return false;
    }
    return calls_push(out, NULL, dup_n(nm, nl), a);
}

/* <function=NAME> <parameter=K>V</parameter>... </function>, one or more. */
bool chat_parse_xml_function(const chat_body_ctx *bc, const char *s, size_t n, chat_calls *out) {
    int n0 = out->n;
    const char *p = s, *end = s + n;
    for (;;) {
        const char *f = chat_find(p, (size_t)(end - p), "<function=");
        if (!f) break;
        const char *nm = f + strlen("<function=");
        const char *gt = memchr(nm, '>', (size_t)(end - nm));
        if (!gt) return calls_rollback(out, n0);
        const char *fe = chat_find(gt, (size_t)(end - gt), "</function>");
        const char *body_end = fe ? fe : end;
        char *fname = dup_n(nm, (size_t)(gt - nm));
        json_t *obj = json_object();
        bool ok = fname && obj;
        const char *q = gt + 1;
        while (ok) {
            const char *pp = chat_find(q, (size_t)(body_end - q), "<parameter=");
            if (!pp) break;
            const char *k = pp + strlen("<parameter=");
            const char *kg = memchr(k, '>', (size_t)(body_end - k));
            if (!kg) { ok = false; break; }
            const char *v = kg + 1;
            const char *ve = chat_find(v, (size_t)(body_end - v), "</parameter>");
            if (!ve) { ok = false; break; }
            ok = add_param(bc, obj, fname, k, (size_t)(kg - k), v, (size_t)(ve - v));
            q = ve + strlen("</parameter>");
        }
        if (ok) ok = push_obj(nm, (size_t)(gt - nm), obj, out);
        else json_decref(obj);
        free(fname);
        if (!ok) return calls_rollback(out, n0);
        if (!fe) break;
        p = fe + strlen("</function>");
    }
    return out->n > n0;
}

/* GLM: NAME <arg_key>K</arg_key><arg_value>V</arg_value>... */
bool chat_parse_glm(const chat_body_ctx *bc, const char *s, size_t n, chat_calls *out) {
    const char *end = s + n;
    const char *first = chat_find(s, n, "<arg_key>");
    const char *name_end = first ? first : end;
    const char *nm = s;
    size_t nl = (size_t)(name_end - s);
    trim(&nm, &nl);
    if (!nl) return false;
    char *fname = dup_n(nm, nl);
    json_t *obj = json_object();
    bool ok = fname && obj;
    const char *q = name_end;
    while (ok && q < end) {
        const char *k = chat_find(q, (size_t)(end - q), "<arg_key>");
        if (!k) break;
        k += strlen("<arg_key>");
        const char *ke = chat_find(k, (size_t)(end - k), "</arg_key>");
        const char *v = ke ? chat_find(ke, (size_t)(end - ke), "<arg_value>") : NULL;
        if (!v) { ok = false; break; }
        v += strlen("<arg_value>");
        const char *ve = chat_find(v, (size_t)(end - v), "</arg_value>");
        if (!ve) { ok = false; break; }
        ok = add_param(bc, obj, fname, k, (size_t)(ke - k), v, (size_t)(ve - v));
        q = ve + strlen("</arg_value>");
    }
    if (ok) ok = push_obj(nm, nl, obj, out);
    else json_decref(obj);
    free(fname);
    return ok;
}

/* MiniMax: <invoke name="NAME"><parameter name="K">V</parameter>...</invoke>, one or more. */
bool chat_parse_minimax(const chat_body_ctx *bc, const char *s, size_t n, chat_calls *out) {
    int n0 = out->n;
    const char *p = s, *end = s + n;
    for (;;) {
        const char *f = chat_find(p, (size_t)(end - p), "<invoke name=\"");
        if (!f) break;
        const char *nm = f + strlen("<invoke name=\"");
        const char *q0 = chat_find(nm, (size_t)(end - nm), "\">");
        if (!q0) return calls_rollback(out, n0);
        const char *fe = chat_find(q0, (size_t)(end - q0), "</invoke>");
        const char *body_end = fe ? fe : end;
        char *fname = dup_n(nm, (size_t)(q0 - nm));
        json_t *obj = json_object();
        bool ok = fname && obj;
        const char *q = q0 + 2;
        while (ok) {
            const char *pp = chat_find(q, (size_t)(body_end - q), "<parameter name=\"");
            if (!pp) break;
            const char *k = pp + strlen("<parameter name=\"");
            const char *kg = chat_find(k, (size_t)(body_end - k), "\">");
            if (!kg) { ok = false; break; }
            const char *v = kg + 2;
            const char *ve = chat_find(v, (size_t)(body_end - v), "</parameter>");
            if (!ve) { ok = false; break; }
            ok = add_param(bc, obj, fname, k, (size_t)(kg - k), v, (size_t)(ve - v));
            q = ve + strlen("</parameter>");
        }
        if (ok) ok = push_obj(nm, (size_t)(q0 - nm), obj, out);
        else json_decref(obj);
        free(fname);
        if (!ok) return calls_rollback(out, n0);
        if (!fe) break;
        p = fe + strlen("</invoke>");
    }
    return out->n > n0;
}

/* Kimi K2: <|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{...}<|tool_call_end|>;
 * the id is the whole "functions.NAME:IDX" (Kimi's own convention). */
bool chat_parse_kimi(const chat_body_ctx *bc, const char *s, size_t n, chat_calls *out) {
    int n0 = out->n;
    const char *p = s, *end = s + n;
    for (;;) {
        const char *b = chat_find(p, (size_t)(end - p), "<|tool_call_begin|>");
        if (!b) break;
        const char *id0 = b + strlen("<|tool_call_begin|>");
        const char *ab = chat_find(id0, (size_t)(end - id0), "<|tool_call_argument_begin|>");
        if (!ab) return calls_rollback(out, n0);
        const char *a = ab + strlen("<|tool_call_argument_begin|>");
        const char *e = chat_find(a, (size_t)(end - a), "<|tool_call_end|>");
        const char *aend = e ? e : end;
        const char *it = id0;
        size_t il = (size_t)(ab - id0);
        trim(&it, &il);
        const char *nm = it;
        size_t nl = il;
        if (starts(nm, nl, "functions.")) nm += 10, nl -= 10;
        const char *colon = memchr(nm, ':', nl);
        if (colon) nl = (size_t)(colon - nm);
        if (!chat_parse_name_json(bc, nm, nl, a, (size_t)(aend - a), out)) return calls_rollback(out, n0);
        out->v[out->n - 1].id = dup_n(it, il);
        if (!e) break;
        p = e + strlen("<|tool_call_end|>");
    }
    return out->n > n0;
}

/* Llama 3.1 <|python_tag|>: a JSON call, or a built-in tool call
 * `name.call(key="value", ...)`, or plain code (the code interpreter: name "python",
 * arguments {"code": ...}). */
bool chat_parse_python_tag(const chat_body_ctx *bc, const char *s, size_t n, chat_calls *out) {
    trim(&s, &n);
    if (!n) return false;
    if (s[0] == '{' && chat_parse_json_calls(bc, s, n, out)) return true;
    const char *call = chat_find(s, n, ".call(");
    if (call && s[n - 1] == ')') {
        const char *nm = s;
        size_t nl = (size_t)(call - s);
        bool ident = nl > 0;
        for (size_t i = 0; i < nl; i++)
            if (!(isalnum((unsigned char)nm[i]) || nm[i] == '_')) ident = false;
        if (ident) {
            json_t *obj = json_object();
            const char *q = call + strlen(".call("), *end = s + n - 1;
            bool ok = obj != NULL;
            while (ok && q < end) {
                while (q < end && (isspace((unsigned char)*q) || *q == ',')) q++;
                if (q >= end) break;
                const char *eq = memchr(q, '=', (size_t)(end - q));
                if (!eq) { ok = false; break; }
                const char *v = eq + 1;
                size_t vl;
                json_t *val = NULL;
                if (v < end && (*v == '"' || *v == '\'')) {
                    char qc = *v;
                    const char *ve = memchr(v + 1, qc, (size_t)(end - v - 1));
                    if (!ve) { ok = false; break; }
                    val = json_stringn(v + 1, (size_t)(ve - v - 1));
                    vl = (size_t)(ve + 1 - v);
                } else {
                    const char *ve = v;
                    while (ve < end && *ve != ',') ve++;
                    vl = (size_t)(ve - v);
                    const char *t = v;
                    size_t tn = vl;
                    trim(&t, &tn);
                    val = json_parse(t, tn);
                    if (!val) val = json_stringn(t, tn);
                }
                const char *kt = q;
                size_t kl = (size_t)(eq - q);
                trim(&kt, &kl);
                char *key = kl ? dup_n(kt, kl) : NULL;
                ok = key && val && json_object_set_new(obj, key, val) == 0;
                if (!ok && !key) json_decref(val);
                free(key);
                q = v + vl;
            }
            if (ok) return push_obj(nm, nl, obj, out);
            json_decref(obj);
        }
    }
    /* code interpreter */
    json_t *obj = json_object();
    if (!obj || json_object_set_new(obj, "code", json_stringn(s, n))) {
        json_decref(obj);
        return false;
    }
    return push_obj("python", 6, obj, out);
}
