/* request.c - JSON bodies -> srv_gen_req, with limits (see request.h). */
#include "server/request.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/alloc.h"
#include "server/anthropic.h"
#include "server/responses.h"
#include "server/util.h"

srv_limits srv_limits_default(void) {
    srv_limits l;
    l.max_depth = 64;
    l.max_string = 16u << 20;
    l.max_messages = 16384;
    l.max_stop = 16;
    l.max_stop_len = 1024;
    l.max_context = 1 << 20;
    return l;
}

void srv_err_set(srv_err *e, int status, const char *fmt, ...) {
    if (!e || e->status) return;
    e->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
}

/* One pass over the raw text: nesting depth and string lengths, outside jansson. */
static bool prescan(const char *s, size_t n, const srv_limits *lim, srv_err *e) {
    int depth = 0;
    bool in_str = false, esc = false;
    size_t str_len = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (++str_len > lim->max_string + 2) { /* raw bytes incl. escapes: a cheap upper bound */
                srv_err_set(e, 413, "a JSON string at byte %zu is longer than the limit of %zu bytes", i,
                            lim->max_string);
                return false;
            }
            if (esc) esc = false;
            else if (c == '\\') esc = true;
            else if (c == '"') in_str = false;
            continue;
        }
        if (c == '"') {
            in_str = true;
            str_len = 0;
        } else if (c == '[' || c == '{') {
            if (++depth > lim->max_depth) {
                srv_err_set(e, 400, "JSON nesting deeper than %d at byte %zu", lim->max_depth, i);
                return false;
            }
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return true;
}

json_t *srv_json_parse(const char *body, size_t len, const srv_limits *lim, srv_err *e) {
    size_t i = 0;
    while (i < len && (body[i] == ' ' || body[i] == '\t' || body[i] == '\r' || body[i] == '\n')) i++;
    if (i == len) {
        srv_err_set(e, 400, "missing request body");
        return NULL;
    }
    if (!prescan(body, len, lim, e)) return NULL;
    json_error_t je;
    json_t *j = json_loadb(body, len, JSON_ALLOW_NUL, &je);
    if (!j) {
        srv_err_set(e, 400, "invalid JSON at line %d, column %d: %s", je.line, je.column, je.text);
        return NULL;
    }
    if (!json_is_object(j)) {
        json_decref(j);
        srv_err_set(e, 400, "the request body must be a JSON object");
        return NULL;
    }
    return j;
}

char *srv_json_strdup(const json_t *s, size_t *len) {
    size_t n = json_string_length(s);
    char *p = loom_malloc(n + 1);
    if (!p) return NULL;
    memcpy(p, json_string_value(s), n);
    p[n] = 0;
    if (len) *len = n;
    return p;
}

const char *srv_json_kind(const json_t *v) {
    if (!v) return "nothing";
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: case JSON_REAL: return "number";
    case JSON_TRUE: case JSON_FALSE: return "boolean";
    default: return "null";
    }
}

/* ------------------------------------------------------------------ options */

void srv_options_defaults(srv_options *o) {
    memset(o, 0, sizeof *o);
    o->num_ctx = 4096;
    o->num_batch = 512;
    o->num_gpu = -1;
    o->num_thread = 0;
    o->use_mmap = true;
    o->num_predict = -1;
    o->num_keep = 4;
    o->seed = -1;
    o->temperature = 0.8f;
    o->top_k = 40;
    o->top_p = 0.9f;
    o->min_p = 0.0f;
    o->repeat_penalty = 1.0f;
    o->repeat_last_n = 64;
    o->presence_penalty = 0;
    o->frequency_penalty = 0;
}

void srv_options_free(srv_options *o) {
    for (int i = 0; i < o->n_stop; i++) loom_free(o->stop[i]);
    loom_free(o->stop);
    o->stop = NULL;
    o->n_stop = 0;
}

static bool set_stop(srv_options *o, char **v, int n) {
    srv_options_free(o);
    o->stop = v;
    o->n_stop = n;
    o->stop_set = true;
    return true;
}

static char **dup_strings(char *const *src, int n) {
    char **v = loom_calloc((size_t)(n ? n : 1), sizeof *v);
    if (!v) return NULL;
    for (int i = 0; i < n; i++) {
        v[i] = loom_strdup(src[i]);
        if (!v[i]) {
            for (int k = 0; k < i; k++) loom_free(v[k]);
            loom_free(v);
            return NULL;
        }
    }
    return v;
}

bool srv_options_merge(srv_options *d, const srv_options *s) {
#define M(f)                                                                             \
    if (s->f##_set) d->f = s->f, d->f##_set = true
    M(num_ctx); M(num_batch); M(num_gpu); M(num_thread); M(use_mmap); M(num_predict); M(num_keep);
    M(seed); M(temperature); M(top_p); M(min_p); M(repeat_penalty); M(presence_penalty);
    M(frequency_penalty); M(top_k); M(repeat_last_n);
#undef M
    if (s->stop_set) {
        char **v = dup_strings(s->stop, s->n_stop);
        if (!v) return false;
        set_stop(d, v, s->n_stop);
    }
    return true;
}

static bool get_int(const char *key, const json_t *v, long long lo, long long hi, long long *out, srv_err *e) {
    double d;
    if (json_is_integer(v)) d = (double)json_integer_value(v);
    else if (json_is_real(v)) d = json_real_value(v);
    else {
        srv_err_set(e, 400, "option \"%s\" must be of type integer (got %s)", key, srv_json_kind(v));
        return false;
    }
    if (!isfinite(d) || d < (double)lo || d > (double)hi) {
        srv_err_set(e, 400, "option \"%s\" is out of range [%lld, %lld]", key, lo, hi);
        return false;
    }
    *out = json_is_integer(v) ? json_integer_value(v) : (long long)d;
    return true;
}

static bool get_float(const char *key, const json_t *v, double lo, double hi, float *out, srv_err *e) {
    if (!json_is_number(v)) {
        srv_err_set(e, 400, "option \"%s\" must be of type float (got %s)", key, srv_json_kind(v));
        return false;
    }
    double d = json_number_value(v);
    if (!isfinite(d) || d < lo || d > hi) {
        srv_err_set(e, 400, "option \"%s\" is out of range [%g, %g]", key, lo, hi);
        return false;
    }
    *out = (float)d;
    return true;
}

static bool parse_stop(const char *key, const json_t *v, const srv_limits *lim, bool allow_string,
                       srv_options *o, srv_err *e) {
    if (json_is_null(v)) return true;
    if (allow_string && json_is_string(v)) {
        if (json_string_length(v) == 0) return true;
        if (json_string_length(v) > lim->max_stop_len) {
            srv_err_set(e, 400, "\"%s\": a stop string is longer than %zu bytes", key, lim->max_stop_len);
            return false;
        }
        char **s = loom_calloc(1, sizeof *s);
        if (!s || !(s[0] = srv_json_strdup(v, NULL))) {
            loom_free(s);
            srv_err_set(e, 500, "out of memory");
            return false;
        }
        return set_stop(o, s, 1);
    }
    if (!json_is_array(v)) {
        srv_err_set(e, 400, "option \"%s\" must be of type array (got %s)", key, srv_json_kind(v));
        return false;
    }
    size_t n = json_array_size(v);
    if (n > (size_t)lim->max_stop) {
        srv_err_set(e, 400, "\"%s\": at most %d stop strings", key, lim->max_stop);
        return false;
    }
    char **s = loom_calloc(n ? n : 1, sizeof *s);
    if (!s) {
        srv_err_set(e, 500, "out of memory");
        return false;
    }
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(v, i);
        if (!json_is_string(x)) {
            srv_err_set(e, 400, "option \"%s\" must be an array of strings (element %zu is %s)", key, i,
                        srv_json_kind(x));
            goto fail;
        }
        if (json_string_length(x) > lim->max_stop_len) {
            srv_err_set(e, 400, "\"%s\": stop string %zu is longer than %zu bytes", key, i, lim->max_stop_len);
            goto fail;
        }
        if (json_string_length(x) == 0) continue; /* an empty stop string would stop at once */
        if (!(s[k] = srv_json_strdup(x, NULL))) {
            srv_err_set(e, 500, "out of memory");
            goto fail;
        }
        k++;
    }
    return set_stop(o, s, k);
fail:
    for (int i = 0; i < k; i++) loom_free(s[i]);
    loom_free(s);
    return false;
}

bool srv_options_parse(const json_t *obj, const srv_limits *lim, srv_options *o, srv_err *e) {
    if (!obj || json_is_null(obj)) return true;
    if (!json_is_object(obj)) {
        srv_err_set(e, 400, "\"options\" must be an object (got %s)", srv_json_kind(obj));
        return false;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v) {
        if (json_is_null(v)) continue;
        long long iv;
        bool ok = true;
#define INT_OPT(name, lo, hi, field)                                                     \
    if (!strcmp(key, name)) {                                                            \
        ok = get_int(key, v, lo, hi, &iv, e);                                            \
        if (ok) o->field = (int)iv, o->field##_set = true;                               \
        if (!ok) return false;                                                           \
        continue;                                                                        \
    }
#define FLOAT_OPT(name, lo, hi, field)                                                   \
    if (!strcmp(key, name)) {                                                            \
        ok = get_float(key, v, lo, hi, &o->field, e);                                    \
        if (!ok) return false;                                                           \
        o->field##_set = true;                                                           \
        continue;                                                                        \
    }
        INT_OPT("num_ctx", 1, 1 << 24, num_ctx);
        INT_OPT("num_batch", 1, 1 << 20, num_batch);
        INT_OPT("num_gpu", -1, 1 << 20, num_gpu);
        INT_OPT("num_thread", 0, 1024, num_thread);
        INT_OPT("num_predict", -2, 1 << 30, num_predict);
        INT_OPT("num_keep", -1, 1 << 24, num_keep);
        INT_OPT("top_k", -1, 1 << 30, top_k);
        INT_OPT("repeat_last_n", -1, 1 << 20, repeat_last_n);
        FLOAT_OPT("temperature", -1e9, 1e9, temperature);
        FLOAT_OPT("top_p", 0, 1e9, top_p);
        FLOAT_OPT("min_p", 0, 1, min_p);
        FLOAT_OPT("repeat_penalty", 1e-6, 1e9, repeat_penalty);
        FLOAT_OPT("presence_penalty", -1e9, 1e9, presence_penalty);
        FLOAT_OPT("frequency_penalty", -1e9, 1e9, frequency_penalty);
#undef INT_OPT
#undef FLOAT_OPT
        if (!strcmp(key, "seed")) {
            long long s;
            if (!get_int(key, v, INT64_MIN / 2, INT64_MAX / 2, &s, e)) return false;
            o->seed = s;
            o->seed_set = true;
            continue;
        }
        if (!strcmp(key, "use_mmap")) {
            if (!json_is_boolean(v)) {
                srv_err_set(e, 400, "option \"%s\" must be of type boolean (got %s)", key, srv_json_kind(v));
                return false;
            }
            o->use_mmap = json_is_true(v);
            o->use_mmap_set = true;
            continue;
        }
        if (!strcmp(key, "stop")) { /* a string or an array of strings (Ollama's OpenAPI reference) */
            if (!parse_stop(key, v, lim, true, o, e)) return false;
            continue;
        }
        /* Known Ollama options Loom accepts and ignores (documented), and unknown
         * keys: ignored, as Ollama does. Type-check the known ones. */
        static const char *const ign_num[] = {"main_gpu", "typical_p", "tfs_z", "mirostat", "mirostat_tau",
                                             "mirostat_eta", NULL};
        static const char *const ign_bool[] = {"numa", "low_vram", "f16_kv", "logits_all", "vocab_only",
                                              "use_mlock", "penalize_newline", NULL};
        for (int i = 0; ign_num[i]; i++)
            if (!strcmp(key, ign_num[i]) && !json_is_number(v)) {
                srv_err_set(e, 400, "option \"%s\" must be a number (got %s)", key, srv_json_kind(v));
                return false;
            }
        for (int i = 0; ign_bool[i]; i++)
            if (!strcmp(key, ign_bool[i]) && !json_is_boolean(v)) {
                srv_err_set(e, 400, "option \"%s\" must be of type boolean (got %s)", key, srv_json_kind(v));
                return false;
            }
    }
    return true;
}

/* ------------------------------------------------------------------ fields */

bool srv_keep_alive_parse(const json_t *v, int64_t *ns, srv_err *e) {
    if (json_is_number(v)) {
        double s = json_number_value(v);
        if (!isfinite(s)) goto bad;
        if (s < 0) *ns = -1;
        else if (s > 9.2e9) *ns = -1; /* beyond int64 nanoseconds: forever */
        else *ns = (int64_t)(s * 1e9);
        return true;
    }
    if (json_is_string(v)) {
        int64_t d;
        if (!srv_parse_duration(json_string_value(v), &d)) goto bad;
        *ns = d < 0 ? -1 : d;
        return true;
    }
bad:
    srv_err_set(e, 400, "\"keep_alive\": expected a number of seconds or a duration like \"5m\" (got %s%s%s)",
                srv_json_kind(v), json_is_string(v) ? " " : "", json_is_string(v) ? json_string_value(v) : "");
    return false;
}

static bool opt_string(const json_t *body, const char *key, char **out, size_t *len, srv_err *e) {
    const json_t *v = json_object_get(body, key);
    if (!v || json_is_null(v)) return true;
    if (!json_is_string(v)) {
        srv_err_set(e, 400, "\"%s\" must be a string (got %s)", key, srv_json_kind(v));
        return false;
    }
    if (!(*out = srv_json_strdup(v, len))) {
        srv_err_set(e, 500, "out of memory");
        return false;
    }
    return true;
}

static bool opt_bool(const json_t *body, const char *key, bool *out, bool *set, srv_err *e) {
    const json_t *v = json_object_get(body, key);
    if (!v || json_is_null(v)) return true;
    if (!json_is_boolean(v)) {
        srv_err_set(e, 400, "\"%s\" must be a boolean (got %s)", key, srv_json_kind(v));
        return false;
    }
    *out = json_is_true(v);
    if (set) *set = true;
    return true;
}

/* Token log probabilities (r->logprobs: -1 none, else the alternatives per token).
 * OpenAI chat and Ollama: logprobs a boolean and top_logprobs 0..20 (OpenAI: only with
 * logprobs true); completions: logprobs an integer 0..20 (the alternatives). */
static bool decode_logprobs(const json_t *body, bool int_form, bool strict, srv_gen_req *r, srv_err *e) {
    r->logprobs = -1;
    const json_t *lp = json_object_get(body, "logprobs");
    const json_t *top = json_object_get(body, "top_logprobs");
    bool on = false;
    long long n = 0;
    if (lp && !json_is_null(lp)) {
        if (int_form ? !json_is_integer(lp) : !json_is_boolean(lp)) {
            srv_err_set(e, 400, "\"logprobs\" must be %s (got %s)", int_form ? "an integer" : "a boolean",
                        srv_json_kind(lp));
            return false;
        }
        on = int_form || json_is_true(lp);
        if (int_form) n = json_integer_value(lp);
    }
    if (!int_form && top && !json_is_null(top)) {
        if (!json_is_integer(top)) {
            srv_err_set(e, 400, "\"top_logprobs\" must be an integer (got %s)", srv_json_kind(top));
            return false;
        }
        n = json_integer_value(top);
        if (strict && n > 0 && !on) {
            srv_err_set(e, 400, "\"top_logprobs\" needs \"logprobs\": true");
            return false;
        }
    }
    if (n < 0 || n > SRV_TOP_LOGPROBS_MAX) {
        srv_err_set(e, 400, "\"%s\" must be from 0 to %d", int_form ? "logprobs" : "top_logprobs", SRV_TOP_LOGPROBS_MAX);
        return false;
    }
    if (on) r->logprobs = (int)n;
    return true;
}

/* A text-only content value: a string, or OpenAI parts [{type: "text", text}] joined
 * with "\n". Images (parts of type image_url, or Ollama "images") are refused. */
static json_t *content_text(const json_t *c, size_t idx, srv_err *e) {
    if (!c || json_is_null(c)) return json_string("");
    if (json_is_string(c)) return json_incref((json_t *)c);
    if (!json_is_array(c)) {
        srv_err_set(e, 400, "messages[%zu].content must be a string or an array of parts (got %s)", idx,
                    srv_json_kind(c));
        return NULL;
    }
    srv_buf b = {0};
    srv_buf_reserve(&b, 0);
    size_t n = json_array_size(c);
    for (size_t i = 0; i < n; i++) {
        const json_t *p = json_array_get(c, i);
        const json_t *t = json_is_object(p) ? json_object_get(p, "type") : NULL;
        const char *ts = json_is_string(t) ? json_string_value(t) : NULL;
        if (ts && (!strcmp(ts, "image_url") || !strcmp(ts, "image") || !strcmp(ts, "input_image"))) {
            srv_buf_free(&b);
            srv_err_set(e, 400, "messages[%zu].content[%zu]: images are not supported (no vision models yet)",
                        idx, i);
            return NULL;
        }
        const json_t *text = json_is_object(p) ? json_object_get(p, "text") : NULL;
        if (!ts || strcmp(ts, "text") || !json_is_string(text)) {
            srv_buf_free(&b);
            srv_err_set(e, 400, "messages[%zu].content[%zu]: invalid message format (expected {\"type\": \"text\", "
                        "\"text\": \"...\"})", idx, i);
            return NULL;
        }
        if (i) srv_buf_append(&b, "\n", 1);
        srv_buf_append(&b, json_string_value(text), json_string_length(text));
    }
    json_t *s = b.oom ? NULL : json_stringn_nocheck(b.data ? b.data : "", b.len);
    srv_buf_free(&b);
    if (!s) srv_err_set(e, 500, "out of memory");
    return s;
}

/* tool_calls of a message into Ollama's form [{id?, type, function: {name, arguments: {...}}}];
 * OpenAI's arguments are JSON text and are parsed (Ollama: "invalid tool call arguments"). */
static json_t *norm_tool_calls(const json_t *tc, size_t idx, const srv_limits *lim, srv_err *e) {
    if (!json_is_array(tc)) {
        srv_err_set(e, 400, "messages[%zu].tool_calls must be an array (got %s)", idx, srv_json_kind(tc));
        return NULL;
    }
    json_t *out = json_array();
    if (!out) goto oom;
    for (size_t i = 0; i < json_array_size(tc); i++) {
        const json_t *c = json_array_get(tc, i);
        const json_t *f = json_is_object(c) ? json_object_get(c, "function") : NULL;
        const json_t *name = json_is_object(f) ? json_object_get(f, "name") : NULL;
        if (!json_is_string(name)) {
            srv_err_set(e, 400, "messages[%zu].tool_calls[%zu].function.name must be a string", idx, i);
            json_decref(out);
            return NULL;
        }
        const json_t *args = json_object_get(f, "arguments");
        json_t *a;
        if (!args || json_is_null(args)) {
            a = json_object();
        } else if (json_is_object(args)) {
            a = json_incref((json_t *)args);
        } else if (json_is_string(args)) {
            srv_err ie = {0};
            a = json_string_length(args) ? srv_json_parse(json_string_value(args), json_string_length(args), lim, &ie)
                                         : json_object();
            if (!a) {
                srv_err_set(e, 400, "messages[%zu].tool_calls[%zu]: invalid tool call arguments (%s)", idx, i, ie.msg);
                json_decref(out);
                return NULL;
            }
        } else {
            srv_err_set(e, 400, "messages[%zu].tool_calls[%zu].function.arguments must be an object or a JSON "
                        "string", idx, i);
            json_decref(out);
            return NULL;
        }
        json_t *fn = json_pack("{s:O,s:o}", "name", name, "arguments", a);
        /* {"id"?, "type", "function"}: templates read tool_call.type (DeepSeek R1 writes
         * tool['type'] + ...), which Ollama's form lacks: "function" when absent */
        json_t *call = json_object();
        const json_t *id = json_object_get(c, "id");
        const json_t *type = json_object_get(c, "type");
        if (call && json_is_string(id)) json_object_set(call, "id", (json_t *)id);
        if (call) json_object_set_new(call, "type", json_is_string(type) ? json_incref((json_t *)type) : json_string("function"));
        if (!call || !fn || json_object_set_new(call, "function", fn)) {
            if (!call) json_decref(fn);
            json_decref(call);
            json_decref(out);
            goto oom;
        }
        const json_t *index = json_object_get(f, "index");
        if (json_is_integer(index)) json_object_set(fn, "index", (json_t *)index);
        json_array_append_new(out, call);
    }
    return out;
oom:
    srv_err_set(e, 500, "out of memory");
    return NULL;
}

/* Find the function name of an earlier assistant tool call with this id (OpenAI
 * tool messages carry tool_call_id; Ollama templates want tool_name). */
const char *srv_call_name(const json_t *msgs, size_t upto, const char *id) {
    for (size_t i = upto; i-- > 0;) {
        const json_t *tc = json_object_get(json_array_get(msgs, i), "tool_calls");
        for (size_t k = 0; json_is_array(tc) && k < json_array_size(tc); k++) {
            const json_t *c = json_array_get(tc, k);
            const json_t *cid = json_object_get(c, "id");
            if (json_is_string(cid) && !strcmp(json_string_value(cid), id)) {
                const json_t *n = json_object_get(json_object_get(c, "function"), "name");
                return json_is_string(n) ? json_string_value(n) : NULL;
            }
        }
    }
    return NULL;
}

/* Validate and normalise messages into Ollama's shape:
 * {role, content: string, tool_calls?, tool_name?, thinking?}. */
static json_t *norm_messages(const json_t *msgs, bool openai, const srv_limits *lim, srv_err *e) {
    if (!json_is_array(msgs)) {
        srv_err_set(e, 400, "\"messages\" must be an array (got %s)", srv_json_kind(msgs));
        return NULL;
    }
    size_t n = json_array_size(msgs);
    if (n > (size_t)lim->max_messages) {
        srv_err_set(e, 400, "\"messages\": more than %d messages", lim->max_messages);
        return NULL;
    }
    json_t *out = json_array();
    if (!out) {
        srv_err_set(e, 500, "out of memory");
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        const json_t *m = json_array_get(msgs, i);
        if (!json_is_object(m)) {
            srv_err_set(e, 400, "messages[%zu] must be an object (got %s)", i, srv_json_kind(m));
            goto fail;
        }
        const json_t *role = json_object_get(m, "role");
        if (!json_is_string(role) || json_string_length(role) == 0) {
            srv_err_set(e, 400, "messages[%zu].role must be a non-empty string", i);
            goto fail;
        }
        const json_t *images = json_object_get(m, "images");
        if (images && !json_is_null(images) && !(json_is_array(images) && json_array_size(images) == 0)) {
            srv_err_set(e, 400, "messages[%zu].images: images are not supported (no vision models yet)", i);
            goto fail;
        }
        const json_t *content = json_object_get(m, "content");
        const json_t *tc = json_object_get(m, "tool_calls");
        bool has_tc = tc && !json_is_null(tc);
        if (content && !json_is_null(content) && !json_is_string(content) && !openai) {
            srv_err_set(e, 400, "messages[%zu].content must be a string (got %s)", i, srv_json_kind(content));
            goto fail;
        }
        if (openai && (!content || json_is_null(content)) && !has_tc && strcmp(json_string_value(role), "assistant")) {
            srv_err_set(e, 400, "messages[%zu]: invalid message content type: <nil>", i);
            goto fail;
        }
        json_t *text = content_text(content, i, e);
        if (!text) goto fail;
        const char *r = json_string_value(role);
        json_t *nm = json_pack("{s:s,s:o}", "role", openai && !strcmp(r, "developer") ? "system" : r, "content", text);
        if (!nm) {
            srv_err_set(e, 500, "out of memory");
            goto fail;
        }
        json_array_append_new(out, nm);
        if (has_tc) {
            json_t *t = norm_tool_calls(tc, i, lim, e);
            if (!t) goto fail;
            json_object_set_new(nm, "tool_calls", t);
        }
        const json_t *thinking = json_object_get(m, openai ? "reasoning" : "thinking");
        if (openai && !thinking) thinking = json_object_get(m, "reasoning_content");
        if (json_is_string(thinking)) json_object_set(nm, "thinking", (json_t *)thinking);
        else if (thinking && !json_is_null(thinking)) {
            srv_err_set(e, 400, "messages[%zu].thinking must be a string", i);
            goto fail;
        }
        const json_t *tn = json_object_get(m, openai ? "name" : "tool_name");
        if (!strcmp(r, "tool")) {
            if (json_is_string(tn)) {
                json_object_set(nm, "tool_name", (json_t *)tn);
            } else if (openai) {
                const json_t *id = json_object_get(m, "tool_call_id");
                const char *name = json_is_string(id) ? srv_call_name(msgs, i, json_string_value(id)) : NULL;
                if (name) json_object_set_new(nm, "tool_name", json_string(name));
                if (json_is_string(id)) json_object_set(nm, "tool_call_id", (json_t *)id);
            }
        }
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

static bool decode_think(const json_t *body, srv_gen_req *r, srv_err *e) {
    const json_t *t = json_object_get(body, "think");
    if (t && !json_is_null(t)) {
        if (json_is_boolean(t)) {
            r->think = json_is_true(t);
        } else if (json_is_string(t)) {
            const char *s = json_string_value(t);
            if (strcmp(s, "high") && strcmp(s, "medium") && strcmp(s, "low")) {
                srv_err_set(e, 400, "\"think\": expected true, false, \"high\", \"medium\" or \"low\" (got \"%s\")", s);
                return false;
            }
            r->think = 1;
            r->think_level = loom_strdup(s);
        } else {
            srv_err_set(e, 400, "\"think\" must be a boolean or a string (got %s)", srv_json_kind(t));
            return false;
        }
    }
    return true;
}

/* OpenAI tool_choice ("none" | "auto" | "required" | {"type": "function", "function":
 * {"name": X}}) and parallel_tool_calls; a named function must be one of the tools. */
static bool decode_tool_choice(const json_t *body, srv_gen_req *r, srv_err *e) {
    r->parallel_tool_calls = true;
    if (!opt_bool(body, "parallel_tool_calls", &r->parallel_tool_calls, NULL, e)) return false;
    const json_t *tc = json_object_get(body, "tool_choice");
    if (!tc || json_is_null(tc)) return true;
    if (json_is_string(tc)) {
        const char *s = json_string_value(tc);
        if (!srv_tool_choice_word(s, &r->tool_choice)) {
            srv_err_set(e, 400, "\"tool_choice\": expected \"none\", \"auto\", \"required\" or a function (got \"%.64s\")", s);
            return false;
        }
    } else {
        const json_t *f = json_is_object(tc) ? json_object_get(tc, "function") : NULL;
        const json_t *name = json_is_object(f) ? json_object_get(f, "name") : NULL;
        if (!json_is_string(name) || !json_string_length(name)) {
            srv_err_set(e, 400, "\"tool_choice\" must be a string or {\"type\": \"function\", \"function\": {\"name\": ...}}");
            return false;
        }
        r->tool_choice = SRV_TOOL_CHOICE_FUNCTION;
        if (!(r->tool_choice_name = srv_json_strdup(name, NULL))) {
            srv_err_set(e, 500, "out of memory");
            return false;
        }
    }
    return srv_tool_choice_check(r, r->tool_choice_name ? r->tool_choice_name : "required", e);
}

bool srv_tool_choice_word(const char *s, int *choice) {
    if (!strcmp(s, "auto")) *choice = SRV_TOOL_CHOICE_AUTO;
    else if (!strcmp(s, "none")) *choice = SRV_TOOL_CHOICE_NONE;
    else if (!strcmp(s, "required")) *choice = SRV_TOOL_CHOICE_REQUIRED;
    else return false;
    return true;
}

bool srv_tool_choice_check(const srv_gen_req *r, const char *label, srv_err *e) {
    if (r->tool_choice != SRV_TOOL_CHOICE_REQUIRED && r->tool_choice != SRV_TOOL_CHOICE_FUNCTION) return true;
    size_t nt = json_array_size(r->tools);
    if (!nt) {
        srv_err_set(e, 400, "\"tool_choice\": \"%.128s\" needs \"tools\"", label);
        return false;
    }
    for (size_t i = 0; i < nt; i++) {
        const json_t *t = json_array_get(r->tools, i);
        const json_t *f = json_is_object(t) ? json_object_get(t, "function") : NULL;
        const json_t *n = json_is_object(f) ? json_object_get(f, "name") : NULL;
        if (!json_is_string(n)) {
            srv_err_set(e, 400, "\"tools\"[%zu].function.name must be a string", i);
            return false;
        }
        if (r->tool_choice_name && !strcmp(json_string_value(n), r->tool_choice_name)) return true;
    }
    if (r->tool_choice_name) {
        srv_err_set(e, 400, "\"tool_choice\": no tool named \"%.128s\" in \"tools\"", r->tool_choice_name);
        return false;
    }
    return true;
}

bool srv_tool_flat_append(json_t *tools, const json_t *t, size_t i, const char *schema_key, const json_t *schema,
                          srv_err *e) {
    const json_t *name = json_object_get(t, "name"), *desc = json_object_get(t, "description");
    if (!schema) schema = json_object_get(t, schema_key);
    if (!json_is_string(name) || !json_string_length(name)) {
        srv_err_set(e, 400, "tools[%zu].name must be a non-empty string", i);
        return false;
    }
    if (desc && !json_is_null(desc) && !json_is_string(desc)) {
        srv_err_set(e, 400, "tools[%zu].description must be a string (got %s)", i, srv_json_kind(desc));
        return false;
    }
    if (schema && !json_is_null(schema) && !json_is_object(schema)) {
        srv_err_set(e, 400, "tools[%zu].%s must be an object (got %s)", i, schema_key, srv_json_kind(schema));
        return false;
    }
    json_t *f = json_pack("{s:O}", "name", name);
    if (f && json_is_string(desc)) json_object_set(f, "description", (json_t *)desc);
    if (f && json_is_object(schema)) json_object_set(f, "parameters", (json_t *)schema);
    json_t *ct = f ? json_pack("{s:s,s:o}", "type", "function", "function", f) : NULL;
    if (!ct || json_array_append_new(tools, ct)) {
        srv_err_set(e, 500, "out of memory");
        return false;
    }
    return true;
}

bool srv_decode_seed(const json_t *body, srv_options *o, srv_err *e) {
    const json_t *seed = json_object_get(body, "seed");
    if (!seed || json_is_null(seed)) return true;
    if (!json_is_integer(seed)) {
        srv_err_set(e, 400, "\"seed\" must be an integer");
        return false;
    }
    o->seed = json_integer_value(seed);
    o->seed_set = true;
    return true;
}

static bool decode_ollama(const json_t *body, const srv_limits *lim, srv_gen_req *r, srv_err *e) {
    bool chat = r->api == SRV_API_CHAT;
    r->stream = true;
    if (!opt_bool(body, "stream", &r->stream, NULL, e)) return false;
    if (chat) {
        const json_t *m = json_object_get(body, "messages");
        if (m && !json_is_null(m) && !(r->messages = norm_messages(m, false, lim, e))) return false;
    } else {
        if (!opt_string(body, "prompt", &r->prompt, &r->prompt_len, e)) return false;
        if (!opt_string(body, "suffix", &r->suffix, &r->suffix_len, e)) return false;
        if (!opt_string(body, "system", &r->system, &r->system_len, e)) return false;
        if (!opt_bool(body, "raw", &r->raw, NULL, e)) return false;
        const json_t *images = json_object_get(body, "images");
        if (images && !json_is_null(images) && !(json_is_array(images) && json_array_size(images) == 0)) {
            srv_err_set(e, 400, "\"images\": images are not supported (no vision models yet)");
            return false;
        }
        const json_t *ctx = json_object_get(body, "context");
        if (ctx && !json_is_null(ctx)) {
            if (!json_is_array(ctx) || json_array_size(ctx) > (size_t)lim->max_context) {
                srv_err_set(e, 400, "\"context\" must be an array of at most %d token ids", lim->max_context);
                return false;
            }
            size_t n = json_array_size(ctx);
            r->context = loom_malloc((n ? n : 1) * sizeof *r->context);
            if (!r->context) {
                srv_err_set(e, 500, "out of memory");
                return false;
            }
            for (size_t i = 0; i < n; i++) {
                const json_t *t = json_array_get(ctx, i);
                if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) > INT32_MAX) {
                    srv_err_set(e, 400, "\"context\"[%zu] must be a token id (a non-negative integer)", i);
                    return false;
                }
                r->context[i] = (int32_t)json_integer_value(t);
            }
            r->n_context = (int)n;
        }
    }
    size_t tl = 0;
    if (!opt_string(body, "template", &r->template_text, &tl, e)) return false;
    if (r->template_text && !*r->template_text) {
        loom_free(r->template_text);
        r->template_text = NULL;
    }
    const json_t *ka = json_object_get(body, "keep_alive");
    if (ka && !json_is_null(ka)) {
        if (!srv_keep_alive_parse(ka, &r->keep_alive_ns, e)) return false;
        r->keep_alive_set = true;
    }
    const json_t *fmt = json_object_get(body, "format");
    if (fmt && !json_is_null(fmt) && !(json_is_string(fmt) && json_string_length(fmt) == 0)) {
        if (!(json_is_string(fmt) && !strcmp(json_string_value(fmt), "json")) && !json_is_object(fmt)) {
            srv_err_set(e, 400, "\"format\" must be \"json\" or a JSON schema object");
            return false;
        }
        r->format = json_incref((json_t *)fmt);
    }
    const json_t *tools = json_object_get(body, "tools");
    if (tools && !json_is_null(tools)) {
        if (!json_is_array(tools)) {
            srv_err_set(e, 400, "\"tools\" must be an array (got %s)", srv_json_kind(tools));
            return false;
        }
        r->tools = json_incref((json_t *)tools);
    }
    /* Ollama has no tool_choice: Loom reads OpenAI's tool_choice / parallel_tool_calls
     * here too (an extension; absent = "auto", Ollama's behaviour) */
    if (chat && !decode_tool_choice(body, r, e)) return false;
    if (!decode_think(body, r, e)) return false;
    if (!opt_bool(body, "truncate", &r->truncate, &r->truncate_set, e)) return false;
    if (!decode_logprobs(body, false, false, r, e)) return false;
    return srv_options_parse(json_object_get(body, "options"), lim, &r->opt, e);
}

static bool oai_number(const json_t *body, const char *key, float *out, bool *set, srv_err *e) {
    const json_t *v = json_object_get(body, key);
    if (!v || json_is_null(v)) return true;
    if (!json_is_number(v) || !isfinite(json_number_value(v))) {
        srv_err_set(e, 400, "\"%s\" must be a number (got %s)", key, srv_json_kind(v));
        return false;
    }
    *out = (float)json_number_value(v);
    *set = true;
    return true;
}

/* OpenAI logit_bias: {"token id": bias}, ids as decimal strings, biases in [-100, 100]
 * (added to the logits: -100 in effect bans a token, 100 makes it the only choice). */
static bool decode_logit_bias(const json_t *lb, srv_gen_req *r, srv_err *e) {
    if (!lb || json_is_null(lb)) return true;
    if (!json_is_object(lb)) {
        srv_err_set(e, 400, "\"logit_bias\" must be an object mapping token ids to numbers (got %s)", srv_json_kind(lb));
        return false;
    }
    size_t n = json_object_size(lb);
    if (!n) return true;
    r->bias_ids = loom_malloc(n * sizeof *r->bias_ids);
    r->bias_vals = loom_malloc(n * sizeof *r->bias_vals);
    if (!r->bias_ids || !r->bias_vals) {
        srv_err_set(e, 500, "out of memory");
        return false;
    }
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)lb, k, v) {
        char *end = NULL;
        errno = 0;
        long id = k[0] >= '0' && k[0] <= '9' ? strtol(k, &end, 10) : -1;
        if (id < 0 || errno || !end || *end || id > INT32_MAX) {
            srv_err_set(e, 400, "\"logit_bias\": invalid token id \"%.64s\" (a non-negative integer)", k);
            return false;
        }
        double b = json_is_number(v) ? json_number_value(v) : NAN;
        if (!(b >= -100.0 && b <= 100.0)) {
            srv_err_set(e, 400, "\"logit_bias\".%.64s must be a number from -100 to 100", k);
            return false;
        }
        r->bias_ids[r->n_bias] = (int32_t)id;
        r->bias_vals[r->n_bias] = (float)b;
        r->n_bias++;
    }
    return true;
}

static bool decode_openai(const json_t *body, const srv_limits *lim, srv_gen_req *r, srv_err *e) {
    bool chat = r->api == SRV_API_OAI_CHAT;
    r->stream = false;
    if (!opt_bool(body, "stream", &r->stream, NULL, e)) return false;
    const json_t *so = json_object_get(body, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so)) {
            srv_err_set(e, 400, "\"stream_options\" must be an object");
            return false;
        }
        if (!opt_bool(so, "include_usage", &r->include_usage, NULL, e)) return false;
    }
    if (!decode_logprobs(body, !chat, true, r, e)) return false;
    const json_t *n = json_object_get(body, "n");
    if (n && !json_is_null(n) && !(json_is_integer(n) && json_integer_value(n) == 1)) {
        srv_err_set(e, 400, "\"n\": only one choice per request is supported");
        return false;
    }
    if (chat) {
        const json_t *m = json_object_get(body, "messages");
        if (!m || json_is_null(m) || (json_is_array(m) && json_array_size(m) == 0)) {
            srv_err_set(e, 400, "[] is too short - 'messages'");
            return false;
        }
        if (!(r->messages = norm_messages(m, true, lim, e))) return false;
        const json_t *tools = json_object_get(body, "tools");
        if (tools && !json_is_null(tools)) {
            if (!json_is_array(tools)) {
                srv_err_set(e, 400, "\"tools\" must be an array (got %s)", srv_json_kind(tools));
                return false;
            }
            r->tools = json_incref((json_t *)tools);
        }
        if (!decode_tool_choice(body, r, e)) return false;
        /* output modalities: text only (a request for audio gets a 400, not a text answer) */
        const json_t *mod = json_object_get(body, "modalities");
        if (mod && !json_is_null(mod)) {
            if (!json_is_array(mod)) {
                srv_err_set(e, 400, "\"modalities\" must be an array (got %s)", srv_json_kind(mod));
                return false;
            }
            for (size_t i = 0; i < json_array_size(mod); i++) {
                const json_t *m = json_array_get(mod, i);
                if (!json_is_string(m) || strcmp(json_string_value(m), "text")) {
                    srv_err_set(e, 400, "\"modalities\"[%zu]: only \"text\" output is supported", i);
                    return false;
                }
            }
        }
        const json_t *audio = json_object_get(body, "audio");
        if (audio && !json_is_null(audio)) {
            srv_err_set(e, 400, "\"audio\": audio output is not supported");
            return false;
        }
        /* llama.cpp's chat_template_kwargs: enable_thinking maps to think */
        const json_t *kw = json_object_get(body, "chat_template_kwargs");
        if (kw && !json_is_null(kw)) {
            if (!json_is_object(kw)) {
                srv_err_set(e, 400, "\"chat_template_kwargs\" must be an object (got %s)", srv_json_kind(kw));
                return false;
            }
            const json_t *et = json_object_get(kw, "enable_thinking");
            if (et && !json_is_null(et)) {
                if (!json_is_boolean(et)) {
                    srv_err_set(e, 400, "\"chat_template_kwargs.enable_thinking\" must be a boolean");
                    return false;
                }
                r->think = json_is_true(et);
            }
        }
        const json_t *re = json_object_get(body, "reasoning");
        const json_t *eff = json_is_object(re) ? json_object_get(re, "effort") : json_object_get(body, "reasoning_effort");
        if (eff && !json_is_null(eff)) {
            const char *s = json_is_string(eff) ? json_string_value(eff) : "";
            if (strcmp(s, "high") && strcmp(s, "medium") && strcmp(s, "low") && strcmp(s, "none")) {
                srv_err_set(e, 400, "invalid reasoning value: '%s' (must be \"high\", \"medium\", \"low\", or \"none\")", s);
                return false;
            }
            r->think = strcmp(s, "none") != 0;
            if (r->think) r->think_level = loom_strdup(s);
        }
    } else {
        const json_t *p = json_object_get(body, "prompt");
        if (json_is_array(p) && json_array_size(p) == 1 && json_is_string(json_array_get(p, 0)))
            p = json_array_get(p, 0);
        if (p && !json_is_null(p)) {
            if (!json_is_string(p)) {
                srv_err_set(e, 400, "\"prompt\" must be a string (arrays of several prompts or token ids are not "
                            "supported)");
                return false;
            }
            if (!(r->prompt = srv_json_strdup(p, &r->prompt_len))) {
                srv_err_set(e, 500, "out of memory");
                return false;
            }
        } else {
            r->prompt = loom_strdup("");
            if (!r->prompt) {
                srv_err_set(e, 500, "out of memory");
                return false;
            }
        }
        if (!opt_string(body, "suffix", &r->suffix, &r->suffix_len, e)) return false;
        const json_t *bo = json_object_get(body, "best_of");
        if (bo && !json_is_null(bo) && !(json_is_integer(bo) && json_integer_value(bo) == 1)) {
            srv_err_set(e, 400, "\"best_of\": only one candidate per request is supported");
            return false;
        }
        const json_t *echo = json_object_get(body, "echo");
        if (json_is_true(echo)) {
            srv_err_set(e, 400, "\"echo\" is not supported");
            return false;
        }
    }
    srv_options *o = &r->opt;
    const json_t *mt = json_object_get(body, "max_tokens");
    if (!mt || json_is_null(mt)) mt = json_object_get(body, "max_completion_tokens");
    if (mt && !json_is_null(mt)) {
        if (!json_is_integer(mt) || json_integer_value(mt) < 0 || json_integer_value(mt) > (1 << 30)) {
            srv_err_set(e, 400, "\"max_tokens\" must be a non-negative integer");
            return false;
        }
        o->num_predict = (int)json_integer_value(mt);
        o->num_predict_set = true;
    }
    if (!srv_decode_seed(body, o, e)) return false;
    const json_t *stop = json_object_get(body, "stop");
    if (stop && !parse_stop("stop", stop, lim, true, o, e)) return false;
    o->temperature = 1.0f, o->temperature_set = true;
    o->top_p = 1.0f, o->top_p_set = true;
    if (!oai_number(body, "temperature", &o->temperature, &o->temperature_set, e)) return false;
    if (!oai_number(body, "top_p", &o->top_p, &o->top_p_set, e)) return false;
    if (!oai_number(body, "frequency_penalty", &o->frequency_penalty, &o->frequency_penalty_set, e)) return false;
    if (!oai_number(body, "presence_penalty", &o->presence_penalty, &o->presence_penalty_set, e)) return false;
    if (o->top_p < 0 || o->temperature < 0 || o->temperature > 2.0f * 1e6f) {
        srv_err_set(e, 400, "\"temperature\" and \"top_p\" must be non-negative");
        return false;
    }
    if (!decode_logit_bias(json_object_get(body, "logit_bias"), r, e)) return false;
    const json_t *rf = json_object_get(body, "response_format");
    if (rf && !json_is_null(rf)) {
        const json_t *t = json_is_object(rf) ? json_object_get(rf, "type") : NULL;
        const char *ts = json_is_string(t) ? json_string_value(t) : NULL;
        if (!ts) {
            srv_err_set(e, 400, "\"response_format\" must be an object with a \"type\"");
            return false;
        }
        if (!strcmp(ts, "json_object")) {
            r->format = json_string("json");
        } else if (!strcmp(ts, "json_schema")) {
            const json_t *js = json_object_get(rf, "json_schema");
            const json_t *schema = json_is_object(js) ? json_object_get(js, "schema") : NULL;
            r->format = schema ? json_incref((json_t *)schema) : NULL;
            if (!json_is_object(r->format)) {
                json_decref(r->format);
                r->format = NULL;
                srv_err_set(e, 400, "\"response_format\": json_schema needs json_schema.schema (an object)");
                return false;
            }
        } else if (strcmp(ts, "text")) {
            srv_err_set(e, 400, "\"response_format\": unknown type \"%s\"", ts);
            return false;
        }
    }
    return true;
}

bool srv_gen_req_decode(srv_api api, const json_t *body, const srv_limits *lim, srv_gen_req *r, srv_err *e) {
    memset(r, 0, sizeof *r);
    r->api = api;
    r->think = -1;
    r->logprobs = -1;
    r->parallel_tool_calls = true;
    if (!json_is_object(body)) {
        srv_err_set(e, 400, "the request body must be a JSON object");
        return false;
    }
    const json_t *m = json_object_get(body, "model");
    if (!m || json_is_null(m) || (json_is_string(m) && json_string_length(m) == 0)) {
        srv_err_set(e, 400, "model is required");
        return false;
    }
    if (!json_is_string(m)) {
        srv_err_set(e, 400, "\"model\" must be a string (got %s)", srv_json_kind(m));
        return false;
    }
    if (!(r->model = srv_json_strdup(m, NULL))) {
        srv_err_set(e, 500, "out of memory");
        return false;
    }
    if (strlen(r->model) != json_string_length(m)) {
        srv_err_set(e, 400, "\"model\" contains a NUL byte");
        return false;
    }
    if (api == SRV_API_GENERATE || api == SRV_API_CHAT) return decode_ollama(body, lim, r, e);
    const json_t *ka = json_object_get(body, "keep_alive");
    if (ka && !json_is_null(ka)) {
        if (!srv_keep_alive_parse(ka, &r->keep_alive_ns, e)) return false;
        r->keep_alive_set = true;
    }
    if (api == SRV_API_OAI_RESPONSES) return srv_responses_decode(body, lim, r, e);
    if (srv_api_is_anthropic(api)) return srv_anthropic_decode(body, lim, api == SRV_API_ANTHROPIC_COUNT, r, e);
    return decode_openai(body, lim, r, e);
}

void srv_gen_req_free(srv_gen_req *r) {
    loom_free(r->model);
    loom_free(r->prompt);
    loom_free(r->suffix);
    loom_free(r->system);
    loom_free(r->template_text);
    loom_free(r->context);
    loom_free(r->think_level);
    loom_free(r->tool_choice_name);
    loom_free(r->bias_ids);
    loom_free(r->bias_vals);
    json_decref(r->messages);
    json_decref(r->tools);
    json_decref(r->format);
    json_decref(r->resp_echo);
    srv_options_free(&r->opt);
    memset(r, 0, sizeof *r);
}
