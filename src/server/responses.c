/* responses.c - OpenAI's Responses API: request decoding and the answer's items and
 * stream events (see responses.h). */
#include "server/responses.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/alloc.h"

static bool oom(srv_err *e) {
    srv_err_set(e, 500, "out of memory");
    return false;
}

static bool absent(const json_t *v) { return !v || json_is_null(v); }

static bool str_is(const json_t *v, const char *s) { return json_is_string(v) && !strcmp(json_string_value(v), s); }

/* ------------------------------------------------------------------ request */

/* The text of a content value: a string, or parts of the text kinds (input_text,
 * output_text, refusal) joined as they are (Ollama's rule). where: "input[3].content". */
static json_t *parts_text(const json_t *c, const char *where, srv_err *e) {
    if (absent(c)) return json_string("");
    if (json_is_string(c)) return json_incref((json_t *)c);
    if (!json_is_array(c)) {
        srv_err_set(e, 400, "%s must be a string or an array of content parts (got %s)", where, srv_json_kind(c));
        return NULL;
    }
    srv_buf b = {0};
    srv_buf_reserve(&b, 0);
    for (size_t i = 0; i < json_array_size(c); i++) {
        const json_t *p = json_array_get(c, i);
        const json_t *t = json_is_object(p) ? json_object_get(p, "type") : NULL;
        const char *ts = json_is_string(t) ? json_string_value(t) : NULL;
        if (!ts) {
            srv_buf_free(&b);
            srv_err_set(e, 400, "%s[%zu] must be an object with a \"type\"", where, i);
            return NULL;
        }
        const char *field = !strcmp(ts, "input_text") || !strcmp(ts, "output_text") || !strcmp(ts, "text") ? "text"
                            : !strcmp(ts, "refusal")                                                       ? "refusal"
                                                                                                           : NULL;
        if (!field) {
            srv_buf_free(&b);
            if (!strcmp(ts, "input_image"))
                srv_err_set(e, 400, "%s[%zu]: images are not supported (no vision models yet)", where, i);
            else if (!strcmp(ts, "input_file"))
                srv_err_set(e, 400, "%s[%zu]: file inputs are not supported", where, i);
            else if (!strcmp(ts, "input_audio"))
                srv_err_set(e, 400, "%s[%zu]: audio inputs are not supported", where, i);
            else
                srv_err_set(e, 400, "%s[%zu]: unknown content type \"%.64s\"", where, i, ts);
            return NULL;
        }
        const json_t *text = json_object_get(p, field);
        if (!json_is_string(text)) {
            srv_buf_free(&b);
            srv_err_set(e, 400, "%s[%zu].%s must be a string", where, i, field);
            return NULL;
        }
        srv_buf_append(&b, json_string_value(text), json_string_length(text));
    }
    json_t *s = b.oom ? NULL : json_stringn_nocheck(b.data ? b.data : "", b.len);
    srv_buf_free(&b);
    if (!s) oom(e);
    return s;
}


/* A reasoning item's text: its reasoning_text content, else its summary texts. */
static bool reasoning_text(const json_t *it, size_t i, srv_buf *b, srv_err *e) {
    const json_t *content = json_object_get(it, "content");
    const json_t *summary = json_object_get(it, "summary");
    const json_t *src = json_array_size(content) ? content : summary;
    const char *what = src == content ? "content" : "summary";
    if (!absent(src) && !json_is_array(src)) {
        srv_err_set(e, 400, "input[%zu].%s must be an array (got %s)", i, what, srv_json_kind(src));
        return false;
    }
    for (size_t k = 0; k < json_array_size(src); k++) {
        const json_t *p = json_array_get(src, k);
        const json_t *text = json_is_object(p) ? json_object_get(p, "text") : NULL;
        if (!json_is_string(text)) {
            srv_err_set(e, 400, "input[%zu].%s[%zu].text must be a string", i, what, k);
            return false;
        }
        if (k && src == summary) srv_buf_puts(b, "\n\n");
        srv_buf_append(b, json_string_value(text), json_string_length(text));
    }
    return !b->oom || oom(e);
}

/* Attach pending reasoning text to an assistant message. */
static bool take_thinking(json_t *msg, srv_buf *think, bool *have, srv_err *e) {
    if (!*have) return true;
    json_t *s = json_stringn_nocheck(think->data ? think->data : "", think->len);
    if (!s || json_object_set_new(msg, "thinking", s)) return oom(e);
    srv_buf_clear(think);
    *have = false;
    return true;
}

static bool decode_item(const json_t *it, size_t i, json_t *msgs, srv_buf *think, bool *have_think,
                        const srv_limits *lim, srv_err *e) {
    char where[64];
    if (!json_is_object(it)) {
        srv_err_set(e, 400, "input[%zu] must be an object (got %s)", i, srv_json_kind(it));
        return false;
    }
    const json_t *t = json_object_get(it, "type");
    const json_t *role = json_object_get(it, "role");
    if (!absent(t) && !json_is_string(t)) {
        srv_err_set(e, 400, "input[%zu].type must be a string (got %s)", i, srv_json_kind(t));
        return false;
    }
    const char *type = json_is_string(t) ? json_string_value(t) : json_is_string(role) ? "message" : NULL;
    if (!type) {
        srv_err_set(e, 400, "input[%zu]: an item needs a \"type\" (or a \"role\" for a message)", i);
        return false;
    }
    if (!strcmp(type, "message")) {
        const char *r = json_is_string(role) ? json_string_value(role) : "";
        if (strcmp(r, "user") && strcmp(r, "assistant") && strcmp(r, "system") && strcmp(r, "developer")) {
            srv_err_set(e, 400, "input[%zu].role: expected \"user\", \"assistant\", \"system\" or \"developer\"", i);
            return false;
        }
        snprintf(where, sizeof where, "input[%zu].content", i);
        json_t *text = parts_text(json_object_get(it, "content"), where, e);
        if (!text) return false;
        json_t *m = json_pack("{s:s,s:o}", "role", strcmp(r, "developer") ? r : "system", "content", text);
        if (!m || json_array_append_new(msgs, m)) return oom(e);
        return strcmp(r, "assistant") || take_thinking(m, think, have_think, e);
    }
    bool custom = !strcmp(type, "custom_tool_call");
    if (!strcmp(type, "function_call") || custom) {
        const json_t *name = json_object_get(it, "name");
        const json_t *args = json_object_get(it, custom ? "input" : "arguments");
        const json_t *id = json_object_get(it, "call_id");
        const json_t *ns = json_object_get(it, "namespace");
        if (!json_is_string(name) || !json_string_length(name)) {
            srv_err_set(e, 400, "input[%zu].name must be a non-empty string", i);
            return false;
        }
        if (custom ? !json_is_string(args) : !absent(args) && !json_is_string(args)) {
            srv_err_set(e, 400, "input[%zu].%s must be a string%s (got %s)", i, custom ? "input" : "arguments",
                        custom ? "" : " of JSON", srv_json_kind(args));
            return false;
        }
        if (!absent(id) && !json_is_string(id)) {
            srv_err_set(e, 400, "input[%zu].call_id must be a string (got %s)", i, srv_json_kind(id));
            return false;
        }
        if (!absent(ns) && !json_is_string(ns)) {
            srv_err_set(e, 400, "input[%zu].namespace must be a string (got %s)", i, srv_json_kind(ns));
            return false;
        }
        json_t *a;
        if (custom) { /* a custom (freeform) tool is a function of one string, "input" */
            if (!(a = json_pack("{s:O}", "input", args))) return oom(e);
        } else if (json_string_length(args)) {
            srv_err ie = {0};
            if (!(a = srv_json_parse(json_string_value(args), json_string_length(args), lim, &ie))) {
                srv_err_set(e, ie.status == 500 ? 500 : 400, "input[%zu].arguments: invalid function call arguments (%s)",
                            i, ie.msg);
                return false;
            }
        } else if (!(a = json_object())) {
            return oom(e);
        }
        json_t *call = json_object();
        if (!call) {
            json_decref(a);
            return oom(e);
        }
        if (json_is_string(id)) json_object_set(call, "id", (json_t *)id);
        json_object_set_new(call, "type", json_string("function"));
        if (json_string_length(ns)) /* a namespaced tool's name as the model saw it: "namespace.name" */
            json_object_set_new(call, "function", json_pack("{s:s++,s:o}", "name", json_string_value(ns), ".",
                                                            json_string_value(name), "arguments", a));
        else
            json_object_set_new(call, "function", json_pack("{s:O,s:o}", "name", name, "arguments", a));
        if (!json_object_get(call, "function")) {
            json_decref(call);
            return oom(e);
        }
        /* consecutive calls (and a call after the assistant's text) are one assistant turn */
        json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);
        if (!str_is(json_object_get(last, "role"), "assistant")) {
            last = json_pack("{s:s,s:s}", "role", "assistant", "content", "");
            if (!last || json_array_append_new(msgs, last)) {
                json_decref(call);
                return oom(e);
            }
        }
        json_t *tc = json_object_get(last, "tool_calls");
        if (!tc) {
            tc = json_array();
            if (!tc || json_object_set_new(last, "tool_calls", tc)) {
                json_decref(call);
                return oom(e);
            }
        }
        if (json_array_append_new(tc, call)) return oom(e);
        return take_thinking(last, think, have_think, e);
    }
    if (!strcmp(type, "function_call_output") || !strcmp(type, "custom_tool_call_output")) {
        const json_t *id = json_object_get(it, "call_id");
        if (!json_is_string(id)) {
            srv_err_set(e, 400, "input[%zu].call_id must be a string", i);
            return false;
        }
        snprintf(where, sizeof where, "input[%zu].output", i);
        json_t *text = parts_text(json_object_get(it, "output"), where, e);
        if (!text) return false;
        json_t *m = json_pack("{s:s,s:o,s:O}", "role", "tool", "content", text, "tool_call_id", id);
        if (!m) return oom(e);
        const char *name = srv_call_name(msgs, json_array_size(msgs), json_string_value(id));
        if (name) json_object_set_new(m, "tool_name", json_string(name));
        if (json_array_append_new(msgs, m)) return oom(e);
        return true;
    }
    if (!strcmp(type, "reasoning")) {
        if (*have_think && think->len) srv_buf_puts(think, "\n\n");
        *have_think = true;
        return reasoning_text(it, i, think, e);
    }
    if (!strcmp(type, "item_reference")) {
        srv_err_set(e, 400, "input[%zu]: item references need stored responses, which Loom does not keep; send the "
                    "item itself", i);
        return false;
    }
    srv_err_set(e, 400, "input[%zu]: unsupported input item type \"%.64s\" (supported: message, function_call, "
                "function_call_output, custom_tool_call, custom_tool_call_output, reasoning)", i, type);
    return false;
}

static bool decode_input(const json_t *body, const srv_limits *lim, srv_gen_req *r, srv_err *e) {
    json_t *msgs = json_array();
    if (!msgs) return oom(e);
    r->messages = msgs;
    const json_t *ins = json_object_get(body, "instructions");
    if (!absent(ins) && !json_is_string(ins)) {
        srv_err_set(e, 400, "\"instructions\" must be a string (got %s)", srv_json_kind(ins));
        return false;
    }
    if (json_string_length(ins) && json_array_append_new(msgs, json_pack("{s:s,s:O}", "role", "system", "content", ins)))
        return oom(e);
    const json_t *in = json_object_get(body, "input");
    if (absent(in)) {
        srv_err_set(e, 400, "\"input\" is required (a string or an array of items)");
        e->param = "input";
        return false;
    }
    if (json_is_string(in)) {
        if (json_array_append_new(msgs, json_pack("{s:s,s:O}", "role", "user", "content", in))) return oom(e);
        return true;
    }
    if (!json_is_array(in)) {
        srv_err_set(e, 400, "\"input\" must be a string or an array of items (got %s)", srv_json_kind(in));
        e->param = "input";
        return false;
    }
    size_t n = json_array_size(in);
    if (!n) {
        srv_err_set(e, 400, "\"input\" must not be empty");
        e->param = "input";
        return false;
    }
    if (n > (size_t)lim->max_messages) {
        srv_err_set(e, 400, "\"input\": more than %d items", lim->max_messages);
        return false;
    }
    srv_buf think = {0};
    bool have_think = false, ok = true;
    for (size_t i = 0; ok && i < n; i++) ok = decode_item(json_array_get(in, i), i, msgs, &think, &have_think, lim, e);
    if (ok && have_think) { /* reasoning with no turn after it: a turn of its own (Ollama's rule) */
        json_t *m = json_pack("{s:s,s:s}", "role", "assistant", "content", "");
        ok = m && !json_array_append_new(msgs, m) ? take_thinking(m, &think, &have_think, e) : oom(e);
    }
    srv_buf_free(&think);
    return ok;
}

/* Responses tools {type: "function", name, description, parameters, strict} into the
 * chat form {type: "function", function: {name, description, parameters}}. */
static bool decode_tools(const json_t *body, srv_gen_req *r, srv_err *e) {
    const json_t *tools = json_object_get(body, "tools");
    if (absent(tools)) return true;
    if (!json_is_array(tools)) {
        srv_err_set(e, 400, "\"tools\" must be an array (got %s)", srv_json_kind(tools));
        return false;
    }
    if (!(r->tools = json_array())) return oom(e);
    for (size_t i = 0; i < json_array_size(tools); i++) {
        const json_t *t = json_array_get(tools, i);
        const json_t *type = json_is_object(t) ? json_object_get(t, "type") : NULL;
        if (!json_is_string(type)) {
            srv_err_set(e, 400, "tools[%zu] must be an object with a \"type\"", i);
            return false;
        }
        bool custom = !strcmp(json_string_value(type), "custom");
        if (strcmp(json_string_value(type), "function") && !custom) {
            srv_err_set(e, 400, "tools[%zu]: tool type \"%.64s\" is not supported (only \"function\" and \"custom\" tools)",
                        i, json_string_value(type));
            return false;
        }
        json_t *own = NULL;
        if (custom) { /* freeform text input: a function of one string (its format, a grammar, is not enforced) */
            own = json_pack("{s:s,s:{s:{s:s}},s:[s]}", "type", "object", "properties", "input", "type", "string", "required",
                            "input");
            if (!own) return oom(e);
        }
        bool ok = srv_tool_flat_append(r->tools, t, i, "parameters", own, e);
        json_decref(own);
        if (!ok) return false;
    }
    return true;
}

static bool decode_tool_choice(const json_t *body, srv_gen_req *r, srv_err *e) {
    const json_t *pt = json_object_get(body, "parallel_tool_calls");
    if (!absent(pt)) {
        if (!json_is_boolean(pt)) {
            srv_err_set(e, 400, "\"parallel_tool_calls\" must be a boolean (got %s)", srv_json_kind(pt));
            return false;
        }
        r->parallel_tool_calls = json_is_true(pt);
    }
    const json_t *tc = json_object_get(body, "tool_choice");
    if (absent(tc)) return true;
    if (json_is_string(tc)) {
        const char *s = json_string_value(tc);
        if (!srv_tool_choice_word(s, &r->tool_choice)) {
            srv_err_set(e, 400, "\"tool_choice\": expected \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                        "\"name\": ...} (got \"%.64s\")", s);
            return false;
        }
    } else {
        const json_t *type = json_is_object(tc) ? json_object_get(tc, "type") : NULL;
        const json_t *name = json_is_object(tc) ? json_object_get(tc, "name") : NULL;
        if ((!str_is(type, "function") && !str_is(type, "custom")) || !json_is_string(name) || !json_string_length(name)) {
            srv_err_set(e, 400, "\"tool_choice\" must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", "
                        "\"name\": ...}%s", json_is_string(type) ? " (only function and custom tools are supported)" : "");
            return false;
        }
        r->tool_choice = SRV_TOOL_CHOICE_FUNCTION;
        if (!(r->tool_choice_name = srv_json_strdup(name, NULL))) return oom(e);
    }
    return srv_tool_choice_check(r, r->tool_choice_name ? r->tool_choice_name : "required", e);
}

static bool decode_text_format(const json_t *body, srv_gen_req *r, srv_err *e) {
    const json_t *text = json_object_get(body, "text");
    if (absent(text)) return true;
    if (!json_is_object(text)) {
        srv_err_set(e, 400, "\"text\" must be an object (got %s)", srv_json_kind(text));
        return false;
    }
    const json_t *f = json_object_get(text, "format");
    if (absent(f)) return true;
    const json_t *t = json_is_object(f) ? json_object_get(f, "type") : NULL;
    if (!json_is_string(t)) {
        srv_err_set(e, 400, "\"text.format\" must be an object with a \"type\"");
        return false;
    }
    const char *ts = json_string_value(t);
    if (!strcmp(ts, "json_object")) {
        if (!(r->format = json_string("json"))) return oom(e);
    } else if (!strcmp(ts, "json_schema")) {
        const json_t *schema = json_object_get(f, "schema");
        if (!json_is_object(schema)) {
            srv_err_set(e, 400, "\"text.format\": json_schema needs \"schema\" (an object)");
            return false;
        }
        r->format = json_incref((json_t *)schema);
    } else if (strcmp(ts, "text")) {
        srv_err_set(e, 400, "\"text.format\": unknown type \"%.64s\" (text, json_object or json_schema)", ts);
        return false;
    }
    return true;
}

static bool decode_reasoning(const json_t *body, srv_gen_req *r, srv_err *e) {
    const json_t *re = json_object_get(body, "reasoning");
    if (absent(re)) return true;
    if (!json_is_object(re)) {
        srv_err_set(e, 400, "\"reasoning\" must be an object (got %s)", srv_json_kind(re));
        return false;
    }
    const json_t *eff = json_object_get(re, "effort");
    if (absent(eff)) return true;
    static const char *const names[][2] = {{"none", NULL},    {"minimal", "low"}, {"low", "low"},  {"medium", "medium"},
                                           {"high", "high"}, {"xhigh", "high"},  {"max", "high"}};
    for (size_t i = 0; json_is_string(eff) && i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(json_string_value(eff), names[i][0])) continue;
        r->think = names[i][1] != NULL;
        r->think_soft = true; /* a model that cannot think answers without (clients send an effort by default) */
        if (names[i][1] && !(r->think_level = loom_strdup(names[i][1]))) return oom(e);
        return true;
    }
    srv_err_set(e, 400, "\"reasoning.effort\": expected \"none\", \"minimal\", \"low\", \"medium\", \"high\" or \"xhigh\"");
    return false;
}

static bool number(const json_t *body, const char *key, double lo, double hi, float *out, bool *set, srv_err *e) {
    const json_t *v = json_object_get(body, key);
    if (absent(v)) return true;
    double d = json_is_number(v) ? json_number_value(v) : NAN;
    if (!(d >= lo && d <= hi)) {
        srv_err_set(e, 400, "\"%s\" must be a number from %g to %g", key, lo, hi);
        e->param = key;
        return false;
    }
    *out = (float)d;
    *set = true;
    return true;
}

/* Stateful and server-side features: a 400 rather than an answer that ignores them.
 * Also reads the logprobs settings (include "message.output_text.logprobs", top_logprobs). */
static bool refuse_unsupported(const json_t *body, srv_gen_req *r, srv_err *e) {
    static const char *const stateful[] = {"previous_response_id", "conversation"};
    for (int i = 0; i < 2; i++) {
        if (!absent(json_object_get(body, stateful[i]))) {
            srv_err_set(e, 400, "\"%s\": stateful responses are not supported; send the whole conversation in \"input\"",
                        stateful[i]);
            e->param = stateful[i];
            return false;
        }
    }
    if (json_is_true(json_object_get(body, "background"))) {
        srv_err_set(e, 400, "\"background\": background responses are not supported");
        return false;
    }
    const json_t *top = json_object_get(body, "top_logprobs");
    if (!absent(top) && !(json_is_integer(top) && json_integer_value(top) >= 0 &&
                          json_integer_value(top) <= SRV_TOP_LOGPROBS_MAX)) {
        srv_err_set(e, 400, "\"top_logprobs\" must be an integer from 0 to %d", SRV_TOP_LOGPROBS_MAX);
        return false;
    }
    int n_top = json_is_integer(top) ? (int)json_integer_value(top) : 0;
    if (n_top > 0) r->logprobs = n_top;
    const json_t *inc = json_object_get(body, "include");
    if (!absent(inc) && !json_is_array(inc)) {
        srv_err_set(e, 400, "\"include\" must be an array of strings (got %s)", srv_json_kind(inc));
        return false;
    }
    for (size_t i = 0; i < json_array_size(inc); i++) {
        const json_t *s = json_array_get(inc, i);
        if (!json_is_string(s)) {
            srv_err_set(e, 400, "include[%zu] must be a string", i);
            return false;
        }
        if (!strcmp(json_string_value(s), "message.output_text.logprobs")) r->logprobs = n_top;
    }
    return true;
}

/* The settings the response object repeats. */
static bool make_echo(const json_t *body, srv_gen_req *r, srv_err *e) {
    json_t *x = json_object();
    if (!x) return oom(e);
    r->resp_echo = x;
    const json_t *v;
    v = json_object_get(body, "instructions");
    json_object_set_new(x, "instructions", json_is_string(v) ? json_incref((json_t *)v) : json_null());
    v = json_object_get(body, "max_output_tokens");
    json_object_set_new(x, "max_output_tokens", json_is_integer(v) ? json_incref((json_t *)v) : json_null());
    v = json_object_get(body, "max_tool_calls");
    json_object_set_new(x, "max_tool_calls", json_is_integer(v) ? json_incref((json_t *)v) : json_null());
    json_object_set_new(x, "parallel_tool_calls", json_boolean(r->parallel_tool_calls));
    json_object_set_new(x, "previous_response_id", json_null());
    json_object_set_new(x, "prompt_cache_key", json_null());
    v = json_object_get(body, "reasoning");
    const json_t *eff = json_is_object(v) ? json_object_get(v, "effort") : NULL;
    const json_t *sum = json_is_object(v) ? json_object_get(v, "summary") : NULL;
    json_object_set_new(x, "reasoning", json_pack("{s:O,s:O}", "effort", json_is_string(eff) ? eff : json_null(),
                                                  "summary", json_is_string(sum) ? sum : json_null()));
    json_object_set_new(x, "safety_identifier", json_null());
    json_object_set_new(x, "service_tier", json_string("default"));
    json_object_set_new(x, "store", json_false());
    json_object_set_new(x, "temperature", json_real(r->opt.temperature_set ? r->opt.temperature : 1.0));
    v = json_object_get(body, "text");
    const json_t *f = json_is_object(v) ? json_object_get(v, "format") : NULL;
    json_object_set_new(x, "text", json_is_object(f) ? json_pack("{s:O}", "format", f)
                                                     : json_pack("{s:{s:s}}", "format", "type", "text"));
    v = json_object_get(body, "tool_choice");
    json_object_set_new(x, "tool_choice", absent(v) ? json_string("auto") : json_incref((json_t *)v));
    v = json_object_get(body, "tools");
    json_object_set_new(x, "tools", json_is_array(v) ? json_incref((json_t *)v) : json_array());
    json_object_set_new(x, "top_logprobs", json_integer(r->logprobs > 0 ? r->logprobs : 0));
    json_object_set_new(x, "top_p", json_real(r->opt.top_p_set ? r->opt.top_p : 1.0));
    json_object_set_new(x, "truncation", json_string(r->truncate ? "auto" : "disabled"));
    v = json_object_get(body, "user");
    json_object_set_new(x, "user", json_is_string(v) ? json_incref((json_t *)v) : json_null());
    v = json_object_get(body, "metadata");
    json_object_set_new(x, "metadata", json_is_object(v) ? json_incref((json_t *)v) : json_object());
    json_object_set_new(x, "presence_penalty", json_real(0));
    json_object_set_new(x, "frequency_penalty", json_real(0));
    return json_object_size(x) == 21 || oom(e); /* a failed set leaves a key out */
}

bool srv_responses_decode(const json_t *body, const srv_limits *lim, srv_gen_req *r, srv_err *e) {
    r->api = SRV_API_OAI_RESPONSES;
    r->stream = false;
    if (!refuse_unsupported(body, r, e)) return false;
    const json_t *st = json_object_get(body, "stream");
    if (!absent(st)) {
        if (!json_is_boolean(st)) {
            srv_err_set(e, 400, "\"stream\" must be a boolean (got %s)", srv_json_kind(st));
            return false;
        }
        r->stream = json_is_true(st);
    }
    if (!decode_input(body, lim, r, e) || !decode_tools(body, r, e) || !decode_tool_choice(body, r, e) ||
        !decode_text_format(body, r, e) || !decode_reasoning(body, r, e))
        return false;
    srv_options *o = &r->opt;
    o->temperature = 1.0f, o->temperature_set = true; /* OpenAI's defaults, as Ollama maps them */
    o->top_p = 1.0f, o->top_p_set = true;
    if (!number(body, "temperature", 0, 2e6, &o->temperature, &o->temperature_set, e) ||
        !number(body, "top_p", 0, 1, &o->top_p, &o->top_p_set, e))
        return false;
    const json_t *mt = json_object_get(body, "max_output_tokens");
    if (!absent(mt)) {
        if (!json_is_integer(mt) || json_integer_value(mt) < 0 || json_integer_value(mt) > (1 << 30)) {
            srv_err_set(e, 400, "\"max_output_tokens\" must be a non-negative integer");
            e->param = "max_output_tokens";
            return false;
        }
        o->num_predict = (int)json_integer_value(mt);
        o->num_predict_set = true;
    }
    if (!srv_decode_seed(body, o, e)) return false; /* not OpenAI's; as the chat endpoint */
    const json_t *tr = json_object_get(body, "truncation");
    if (!absent(tr)) {
        if (!str_is(tr, "auto") && !str_is(tr, "disabled")) {
            srv_err_set(e, 400, "\"truncation\": expected \"auto\" or \"disabled\"");
            return false;
        }
        r->truncate = r->truncate_set = str_is(tr, "auto");
    }
    const json_t *md = json_object_get(body, "metadata");
    if (!absent(md) && !json_is_object(md)) {
        srv_err_set(e, 400, "\"metadata\" must be an object (got %s)", srv_json_kind(md));
        return false;
    }
    return make_echo(body, r, e);
}

/* ------------------------------------------------------------------ answer */

static void new_id(srv_resp *c, const char *prefix, char *out, size_t n) { srv_make_id(&c->rng, prefix, out, n); }

void srv_resp_init(srv_resp *c, const char *model, json_t *echo, uint64_t seed) {
    memset(c, 0, sizeof *c);
    c->model = model;
    c->echo = json_incref(echo);
    c->rng = seed;
    c->created = srv_now_ns() / 1000000000;
    new_id(c, "resp", c->id, sizeof c->id);
    c->output = json_array();
}

void srv_resp_free(srv_resp *c) {
    json_decref(c->echo);
    json_decref(c->output);
    json_decref(c->msg_lp);
    srv_buf_free(&c->text);
    srv_buf_free(&c->pend);
    memset(c, 0, sizeof *c);
}

/* An event object {type, sequence_number} for the caller to fill; NULL when not streaming. */
static json_t *ev(srv_resp *c, const srv_buf *out, const char *type) {
    if (!out) return NULL;
    return json_pack("{s:s,s:i}", "type", type, "sequence_number", c->seq++);
}

static void send(srv_buf *out, json_t *j) {
    if (!out) return;
    if (!j) {
        out->oom = true;
        return;
    }
    const char *type = json_string_value(json_object_get(j, "type"));
    srv_buf_printf(out, "event: %s\ndata: ", type ? type : "message");
    srv_json_append(out, j);
    srv_buf_append(out, "\n\n", 2);
    json_decref(j);
}

static json_t *text_json(const srv_buf *b) { return srv_json_text(b->data ? b->data : "", b->len); }

static json_t *response_obj(srv_resp *c, const char *status, bool incomplete, json_t *usage) {
    json_t *j = json_object();
    json_object_set_new(j, "id", json_string(c->id));
    json_object_set_new(j, "object", json_string("response"));
    json_object_set_new(j, "created_at", json_integer(c->created));
    json_object_set_new(j, "status", json_string(status));
    json_object_set_new(j, "background", json_false());
    bool done = strcmp(status, "in_progress") != 0;
    json_object_set_new(j, "completed_at", done && !incomplete ? json_integer(srv_now_ns() / 1000000000) : json_null());
    json_object_set_new(j, "error", json_null());
    json_object_set_new(j, "incomplete_details",
                        incomplete ? json_pack("{s:s}", "reason", "max_output_tokens") : json_null());
    json_object_set_new(j, "model", json_string(c->model ? c->model : ""));
    json_object_set_new(j, "output", done ? json_deep_copy(c->output) : json_array());
    if (c->echo) json_object_update_missing(j, c->echo);
    json_object_set_new(j, "usage", usage ? usage : json_null());
    return j;
}

void srv_resp_start(srv_resp *c, srv_buf *out) {
    if (c->started) return;
    c->started = true;
    json_t *j = ev(c, out, "response.created");
    json_object_set_new(j, "response", response_obj(c, "in_progress", false, NULL));
    send(out, j);
    j = ev(c, out, "response.in_progress");
    json_object_set_new(j, "response", response_obj(c, "in_progress", false, NULL));
    send(out, j);
}

static int out_index(const srv_resp *c) { return (int)json_array_size(c->output) - 1; }

/* Close the open item (its final form replaces the in-progress one in c->output). */
static void close_open(srv_resp *c, srv_buf *out, bool incomplete) {
    if (!c->open) return;
    int idx = out_index(c);
    json_t *item = json_array_get(c->output, (size_t)idx);
    json_t *j;
    if (c->open == 1) {
        j = ev(c, out, "response.reasoning_summary_text.done");
        json_object_set_new(j, "item_id", json_string(c->open_id));
        json_object_set_new(j, "output_index", json_integer(idx));
        json_object_set_new(j, "summary_index", json_integer(0));
        json_object_set_new(j, "text", text_json(&c->text));
        send(out, j);
        json_t *part = json_pack("{s:s,s:o}", "type", "summary_text", "text", text_json(&c->text));
        j = ev(c, out, "response.reasoning_summary_part.done");
        json_object_set_new(j, "item_id", json_string(c->open_id));
        json_object_set_new(j, "output_index", json_integer(idx));
        json_object_set_new(j, "summary_index", json_integer(0));
        json_object_set(j, "part", part);
        send(out, j);
        json_t *summary = json_array();
        json_array_append_new(summary, part);
        json_object_set_new(item, "summary", summary);
    } else {
        j = ev(c, out, "response.output_text.done");
        json_object_set_new(j, "item_id", json_string(c->open_id));
        json_object_set_new(j, "output_index", json_integer(idx));
        json_object_set_new(j, "content_index", json_integer(0));
        json_object_set_new(j, "text", text_json(&c->text));
        json_object_set_new(j, "logprobs", c->msg_lp ? json_deep_copy(c->msg_lp) : json_array());
        send(out, j);
        json_t *part = json_pack("{s:s,s:[],s:o,s:o}", "type", "output_text", "annotations", "logprobs",
                                 c->msg_lp ? json_deep_copy(c->msg_lp) : json_array(), "text", text_json(&c->text));
        if (c->msg_lp) json_array_clear(c->msg_lp);
        j = ev(c, out, "response.content_part.done");
        json_object_set_new(j, "item_id", json_string(c->open_id));
        json_object_set_new(j, "output_index", json_integer(idx));
        json_object_set_new(j, "content_index", json_integer(0));
        json_object_set(j, "part", part);
        send(out, j);
        json_t *content = json_array();
        json_array_append_new(content, part);
        json_object_set_new(item, "content", content);
        json_object_set_new(item, "status", json_string(incomplete ? "incomplete" : "completed"));
    }
    j = ev(c, out, "response.output_item.done");
    json_object_set_new(j, "output_index", json_integer(idx));
    json_object_set_new(j, "item", json_deep_copy(item));
    send(out, j);
    c->open = 0;
    srv_buf_clear(&c->text);
}

static void open_item(srv_resp *c, srv_buf *out, int what) {
    close_open(c, out, false);
    c->open = what;
    srv_buf_clear(&c->text);
    new_id(c, what == 1 ? "rs" : "msg", c->open_id, sizeof c->open_id);
    json_t *item = what == 1 ? json_pack("{s:s,s:s,s:[]}", "id", c->open_id, "type", "reasoning", "summary")
                             : json_pack("{s:s,s:s,s:s,s:[],s:s}", "id", c->open_id, "type", "message", "status",
                                         "in_progress", "content", "role", "assistant");
    json_array_append_new(c->output, item);
    int idx = out_index(c);
    json_t *j = ev(c, out, "response.output_item.added");
    json_object_set_new(j, "output_index", json_integer(idx));
    json_object_set_new(j, "item", json_deep_copy(item));
    send(out, j);
    j = ev(c, out, what == 1 ? "response.reasoning_summary_part.added" : "response.content_part.added");
    json_object_set_new(j, "item_id", json_string(c->open_id));
    json_object_set_new(j, "output_index", json_integer(idx));
    json_object_set_new(j, what == 1 ? "summary_index" : "content_index", json_integer(0));
    json_object_set_new(j, "part", what == 1 ? json_pack("{s:s,s:s}", "type", "summary_text", "text", "")
                                             : json_pack("{s:s,s:[],s:[],s:s}", "type", "output_text", "annotations",
                                                         "logprobs", "text", ""));
    send(out, j);
}

static void add_text(srv_resp *c, srv_buf *out, int what, const char *s, size_t n) {
    if (!n) return;
    if (c->open != what) open_item(c, out, what);
    srv_buf_append(&c->text, s, n);
    json_t *j = ev(c, out, what == 1 ? "response.reasoning_summary_text.delta" : "response.output_text.delta");
    json_object_set_new(j, "item_id", json_string(c->open_id));
    json_object_set_new(j, "output_index", json_integer(out_index(c)));
    json_object_set_new(j, what == 1 ? "summary_index" : "content_index", json_integer(0));
    json_object_set_new(j, "delta", srv_json_text(s, n));
    if (what == 2) { /* the logprobs of the tokens that came with this text (each with top_logprobs) */
        json_t *lp = json_array();
        for (size_t i = 0; lp && i < json_array_size(c->cur_lp); i++) {
            json_t *e = json_deep_copy(json_array_get(c->cur_lp, i));
            if (e && !json_object_get(e, "top_logprobs")) json_object_set_new(e, "top_logprobs", json_array());
            json_array_append_new(lp, e);
        }
        if (json_array_size(lp) && (c->msg_lp || (c->msg_lp = json_array()))) json_array_extend(c->msg_lp, lp);
        c->cur_lp = NULL;
        json_object_set_new(j, "logprobs", lp);
    }
    send(out, j);
}

/* Whether the request declared a custom (freeform) tool of this name. */
static bool is_custom_tool(const srv_resp *c, const json_t *name) {
    const json_t *tools = json_object_get(c->echo, "tools");
    for (size_t i = 0; json_is_string(name) && i < json_array_size(tools); i++) {
        const json_t *t = json_array_get(tools, i);
        if (str_is(json_object_get(t, "type"), "custom") && json_equal(json_object_get(t, "name"), (json_t *)name))
            return true;
    }
    return false;
}

static void add_call(srv_resp *c, srv_buf *out, const json_t *call) {
    close_open(c, out, false);
    const json_t *f = json_object_get(call, "function");
    const json_t *id = json_object_get(call, "id");
    const json_t *name = json_object_get(f, "name");
    const json_t *av = json_object_get(f, "arguments");
    /* a custom tool's call carries its text input (the one string argument) */
    bool custom = is_custom_tool(c, name);
    const json_t *input = json_object_get(av, "input");
    bool text_input = custom && json_is_string(input);
    char *args = !text_input && av ? json_dumps(av, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    const char *kind = custom ? "custom_tool_call" : "function_call", *field = custom ? "input" : "arguments";
    char fc[32], cid[32];
    new_id(c, custom ? "ctc" : "fc", fc, sizeof fc);
    if (!json_is_string(id)) snprintf(cid, sizeof cid, "call_%d", c->n_calls);
    c->n_calls++;
    json_t *item = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "id", fc, "type", kind, "status", "in_progress", field, "",
                             "call_id", json_is_string(id) ? json_string_value(id) : cid, "name",
                             json_is_string(name) ? json_string_value(name) : "");
    if (!item) {
        free(args);
        if (out) out->oom = true;
        return;
    }
    json_array_append_new(c->output, item);
    int idx = out_index(c);
    json_t *j = ev(c, out, "response.output_item.added");
    json_object_set_new(j, "output_index", json_integer(idx));
    json_object_set_new(j, "item", json_deep_copy(item));
    send(out, j);
    json_t *a = text_input ? json_incref((json_t *)input) : json_string(args ? args : "{}");
    j = ev(c, out, custom ? "response.custom_tool_call_input.delta" : "response.function_call_arguments.delta");
    json_object_set_new(j, "item_id", json_string(fc));
    json_object_set_new(j, "output_index", json_integer(idx));
    json_object_set(j, "delta", a);
    send(out, j);
    j = ev(c, out, custom ? "response.custom_tool_call_input.done" : "response.function_call_arguments.done");
    json_object_set_new(j, "item_id", json_string(fc));
    json_object_set_new(j, "output_index", json_integer(idx));
    json_object_set(j, field, a);
    if (!custom) json_object_set(j, "name", json_object_get(item, "name"));
    send(out, j);
    json_object_set_new(item, field, a);
    json_object_set_new(item, "status", json_string("completed"));
    j = ev(c, out, "response.output_item.done");
    json_object_set_new(j, "output_index", json_integer(idx));
    json_object_set_new(j, "item", json_deep_copy(item));
    send(out, j);
    free(args);
}

void srv_resp_delta(srv_resp *c, srv_buf *out, const srv_delta *d) {
    c->cur_lp = d->logprobs;
    if (d->thinking) add_text(c, out, 1, d->thinking, d->thinking_len);
    if (d->content && d->content_len) {
        /* white space between thinking and calls does not open a message of its own: it
         * waits for text (and is dropped before a call) */
        if (c->open != 2 && srv_all_space(d->content, d->content_len)) {
            if (c->open == 1) close_open(c, out, false);
            srv_buf_append(&c->pend, d->content, d->content_len);
        } else {
            if (c->pend.len) {
                add_text(c, out, 2, c->pend.data, c->pend.len);
                srv_buf_clear(&c->pend);
            }
            add_text(c, out, 2, d->content, d->content_len);
        }
    }
    if (json_array_size(d->tool_calls)) srv_buf_clear(&c->pend);
    for (size_t i = 0; i < json_array_size(d->tool_calls); i++) add_call(c, out, json_array_get(d->tool_calls, i));
    c->cur_lp = NULL; /* logprobs with no text of their own (thinking, calls) are not output_text's */
}

void srv_resp_end(srv_resp *c, srv_buf *out, bool stream, bool incomplete, int input_tokens, int cached_tokens,
                  int output_tokens) {
    srv_buf *ev_out = stream ? out : NULL;
    if (!json_array_size(c->output)) { /* an answer with nothing in it still has its (empty) message */
        open_item(c, ev_out, 2);
        if (c->pend.len) add_text(c, ev_out, 2, c->pend.data, c->pend.len);
    }
    close_open(c, ev_out, incomplete);
    json_t *usage = json_pack("{s:i,s:{s:i},s:i,s:{s:i},s:i}", "input_tokens", input_tokens, "input_tokens_details",
                              "cached_tokens", cached_tokens, "output_tokens", output_tokens, "output_tokens_details",
                              "reasoning_tokens", 0, "total_tokens", input_tokens + output_tokens);
    json_t *resp = response_obj(c, incomplete ? "incomplete" : "completed", incomplete, usage);
    if (stream) {
        json_t *j = ev(c, out, incomplete ? "response.incomplete" : "response.completed");
        json_object_set_new(j, "response", resp);
        send(out, j);
    } else {
        srv_json_append(out, resp);
        srv_buf_append(out, "\n", 1);
        json_decref(resp);
    }
}

void srv_resp_stream_error(srv_resp *c, srv_buf *out, int status, const char *msg) {
    json_t *j = ev(c, out, "error");
    json_object_set_new(j, "code", json_string(status == 400 ? "invalid_request_error" : "server_error"));
    json_object_set_new(j, "message", srv_json_text(msg, strlen(msg)));
    json_object_set_new(j, "param", json_null());
    send(out, j);
}
