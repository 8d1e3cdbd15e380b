/* anthropic.c - Anthropic's Messages API: request decoding and the answer's content
 * blocks and stream events (see anthropic.h). */
#include "server/anthropic.h"

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

static const char *block_type(const json_t *b) {
    const json_t *t = json_is_object(b) ? json_object_get(b, "type") : NULL;
    return json_is_string(t) ? json_string_value(t) : NULL;
}

/* The refusal for a block kind Loom does not take, or NULL when it is unknown. */
static const char *unsupported(const char *type) {
    if (!strcmp(type, "image")) return "images are not supported (no vision models yet)";
    if (!strcmp(type, "document") || !strcmp(type, "search_result") || !strcmp(type, "container_upload"))
        return "documents are not supported";
    if (!strcmp(type, "server_tool_use") || strstr(type, "_tool_result") || !strcmp(type, "mcp_tool_use"))
        return "server tools are not supported";
    return NULL;
}

/* Text blocks (a string, or [{type: "text", text}]) joined as they are. */
static bool text_blocks(const json_t *c, const char *where, srv_buf *out, srv_err *e) {
    if (absent(c)) return true;
    if (json_is_string(c)) return srv_buf_append(out, json_string_value(c), json_string_length(c)) || oom(e);
    if (!json_is_array(c)) {
        srv_err_set(e, 400, "%s must be a string or an array of content blocks (got %s)", where, srv_json_kind(c));
        return false;
    }
    for (size_t k = 0; k < json_array_size(c); k++) {
        const json_t *b = json_array_get(c, k);
        const char *t = block_type(b);
        if (!t) {
            srv_err_set(e, 400, "%s[%zu] must be an object with a \"type\"", where, k);
            return false;
        }
        if (strcmp(t, "text")) {
            const char *why = unsupported(t);
            if (why) srv_err_set(e, 400, "%s[%zu]: %s", where, k, why);
            else srv_err_set(e, 400, "%s[%zu]: expected a text block (got \"%.64s\")", where, k, t);
            return false;
        }
        const json_t *text = json_object_get(b, "text");
        if (!json_is_string(text)) {
            srv_err_set(e, 400, "%s[%zu].text must be a string", where, k);
            return false;
        }
        if (!srv_buf_append(out, json_string_value(text), json_string_length(text))) return oom(e);
    }
    return true;
}


static bool append(json_t *arr, json_t *v, srv_err *e) { return (v && !json_array_append_new(arr, v)) || oom(e); }

/* One message: tool results first (user), then the turn itself. */
static bool decode_message(const json_t *m, size_t i, json_t *msgs, srv_err *e) {
    char where[96];
    if (!json_is_object(m)) {
        srv_err_set(e, 400, "messages[%zu] must be an object (got %s)", i, srv_json_kind(m));
        return false;
    }
    const json_t *role = json_object_get(m, "role");
    bool user = str_is(role, "user");
    if (!user && !str_is(role, "assistant")) {
        srv_err_set(e, 400, "messages[%zu].role: expected \"user\" or \"assistant\"", i);
        return false;
    }
    const json_t *c = json_object_get(m, "content");
    if (json_is_string(c)) return append(msgs, json_pack("{s:O,s:O}", "role", role, "content", c), e);
    if (!json_is_array(c)) {
        srv_err_set(e, 400, "messages[%zu].content must be a string or an array of content blocks (got %s)", i,
                    srv_json_kind(c));
        return false;
    }
    srv_buf text = {0}, think = {0};
    srv_buf_reserve(&text, 0);
    json_t *calls = json_array(), *results = json_array();
    bool ok = calls && results, have_think = false;
    if (!ok) oom(e);
    for (size_t k = 0; ok && k < json_array_size(c); k++) {
        const json_t *b = json_array_get(c, k);
        const char *t = block_type(b);
        if (!t) {
            srv_err_set(e, 400, "messages[%zu].content[%zu] must be an object with a \"type\"", i, k);
            ok = false;
        } else if (!strcmp(t, "text")) {
            const json_t *s = json_object_get(b, "text");
            if (!json_is_string(s)) {
                srv_err_set(e, 400, "messages[%zu].content[%zu].text must be a string", i, k);
                ok = false;
            } else {
                ok = srv_buf_append(&text, json_string_value(s), json_string_length(s)) || oom(e);
            }
        } else if (!strcmp(t, "tool_use") && !user) {
            const json_t *id = json_object_get(b, "id"), *name = json_object_get(b, "name");
            const json_t *input = json_object_get(b, "input");
            if (!json_is_string(id) || !json_string_length(id) || !json_is_string(name) || !json_string_length(name)) {
                srv_err_set(e, 400, "messages[%zu].content[%zu]: a tool_use block needs \"id\" and \"name\" strings", i, k);
                ok = false;
            } else if (!absent(input) && !json_is_object(input)) {
                srv_err_set(e, 400, "messages[%zu].content[%zu].input must be an object (got %s)", i, k,
                            srv_json_kind(input));
                ok = false;
            } else {
                json_t *args = json_is_object(input) ? json_incref((json_t *)input) : json_object();
                json_t *fn = args ? json_pack("{s:O,s:o}", "name", name, "arguments", args) : NULL;
                ok = append(calls, fn ? json_pack("{s:O,s:s,s:o}", "id", id, "type", "function", "function", fn) : NULL,
                            e);
            }
        } else if (!strcmp(t, "tool_result") && user) {
            const json_t *id = json_object_get(b, "tool_use_id");
            if (!json_is_string(id)) {
                srv_err_set(e, 400, "messages[%zu].content[%zu].tool_use_id must be a string", i, k);
                ok = false;
                break;
            }
            srv_buf rt = {0};
            srv_buf_reserve(&rt, 0);
            snprintf(where, sizeof where, "messages[%zu].content[%zu].content", i, k);
            ok = text_blocks(json_object_get(b, "content"), where, &rt, e);
            json_t *tm = ok ? json_pack("{s:s,s:s%,s:O}", "role", "tool", "content", rt.data ? rt.data : "", rt.len,
                                        "tool_call_id", id)
                            : NULL;
            srv_buf_free(&rt);
            if (ok && tm) {
                const char *name = srv_call_name(msgs, json_array_size(msgs), json_string_value(id));
                if (name) json_object_set_new(tm, "tool_name", json_string(name));
            }
            if (ok) ok = append(results, tm, e);
        } else if (!strcmp(t, "thinking") && !user) {
            const json_t *s = json_object_get(b, "thinking");
            if (!json_is_string(s)) {
                srv_err_set(e, 400, "messages[%zu].content[%zu].thinking must be a string", i, k);
                ok = false;
            } else {
                have_think = true;
                ok = srv_buf_append(&think, json_string_value(s), json_string_length(s)) || oom(e);
            }
        } else if (!strcmp(t, "redacted_thinking") && !user) {
            /* opaque (encrypted by its provider): nothing to render */
        } else {
            const char *why = unsupported(t);
            if (why) srv_err_set(e, 400, "messages[%zu].content[%zu]: %s", i, k, why);
            else srv_err_set(e, 400, "messages[%zu].content[%zu]: a \"%.64s\" block is not valid in a %s message", i, k,
                             t, user ? "user" : "assistant");
            ok = false;
        }
    }
    /* a user turn's tool results come first, as separate tool messages */
    for (size_t k = 0; ok && k < json_array_size(results); k++) ok = append(msgs, json_incref(json_array_get(results, k)), e);
    if (ok && (text.len || json_array_size(calls) || have_think || !json_array_size(results))) {
        json_t *tm = json_pack("{s:O,s:s%}", "role", role, "content", text.data ? text.data : "", text.len);
        if (tm && json_array_size(calls)) json_object_set(tm, "tool_calls", calls);
        if (tm && have_think) json_object_set_new(tm, "thinking", json_stringn_nocheck(think.data ? think.data : "", think.len));
        ok = append(msgs, tm, e);
    }
    srv_buf_free(&text);
    srv_buf_free(&think);
    json_decref(calls);
    json_decref(results);
    return ok;
}

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
        if (!json_is_object(t)) {
            srv_err_set(e, 400, "tools[%zu] must be an object", i);
            return false;
        }
        const json_t *type = json_object_get(t, "type");
        if (!absent(type) && !str_is(type, "custom")) {
            srv_err_set(e, 400, "tools[%zu]: tool type \"%.64s\" is not supported (only custom tools: name, "
                        "description, input_schema)", i, json_is_string(type) ? json_string_value(type) : "?");
            return false;
        }
        if (!srv_tool_flat_append(r->tools, t, i, "input_schema", NULL, e)) return false;
    }
    return true;
}

static bool decode_tool_choice(const json_t *body, srv_gen_req *r, srv_err *e) {
    const json_t *tc = json_object_get(body, "tool_choice");
    if (absent(tc)) return true;
    const json_t *type = json_is_object(tc) ? json_object_get(tc, "type") : NULL;
    if (!json_is_string(type)) {
        srv_err_set(e, 400, "\"tool_choice\" must be an object {\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"}");
        return false;
    }
    const json_t *dp = json_object_get(tc, "disable_parallel_tool_use");
    if (!absent(dp) && !json_is_boolean(dp)) {
        srv_err_set(e, 400, "\"tool_choice.disable_parallel_tool_use\" must be a boolean");
        return false;
    }
    if (json_is_true(dp)) r->parallel_tool_calls = false;
    const char *t = json_string_value(type);
    if (!strcmp(t, "auto")) r->tool_choice = SRV_TOOL_CHOICE_AUTO;
    else if (!strcmp(t, "none")) r->tool_choice = SRV_TOOL_CHOICE_NONE;
    else if (!strcmp(t, "any")) r->tool_choice = SRV_TOOL_CHOICE_REQUIRED;
    else if (!strcmp(t, "tool")) {
        const json_t *name = json_object_get(tc, "name");
        if (!json_is_string(name) || !json_string_length(name)) {
            srv_err_set(e, 400, "\"tool_choice\": type \"tool\" needs a \"name\"");
            return false;
        }
        r->tool_choice = SRV_TOOL_CHOICE_FUNCTION;
        if (!(r->tool_choice_name = srv_json_strdup(name, NULL))) return oom(e);
    } else {
        srv_err_set(e, 400, "\"tool_choice.type\": expected \"auto\", \"any\", \"tool\" or \"none\" (got \"%.64s\")", t);
        return false;
    }
    return srv_tool_choice_check(r, t, e);
}

static bool decode_thinking(const json_t *body, srv_gen_req *r, srv_err *e) {
    /* Anthropic's rule: no "thinking" field, no extended thinking; and thinking asked of a
     * model that cannot think is ignored (Ollama's rule, for Claude Code) */
    r->think = 0;
    r->think_soft = true;
    const json_t *th = json_object_get(body, "thinking");
    if (!absent(th)) {
        const json_t *type = json_is_object(th) ? json_object_get(th, "type") : NULL;
        if (str_is(type, "enabled")) r->think = 1;
        else if (str_is(type, "disabled")) r->think = 0;
        else if (str_is(type, "adaptive")) r->think = -1; /* the model's own default */
        else {
            srv_err_set(e, 400, "\"thinking.type\": expected \"enabled\", \"disabled\" or \"adaptive\"");
            return false;
        }
        const json_t *budget = json_object_get(th, "budget_tokens"); /* accepted, not enforced (as Ollama) */
        if (!absent(budget) && !json_is_integer(budget)) {
            srv_err_set(e, 400, "\"thinking.budget_tokens\" must be an integer");
            return false;
        }
    }
    const json_t *oc = json_object_get(body, "output_config");
    const json_t *eff = json_is_object(oc) ? json_object_get(oc, "effort") : NULL;
    if (absent(eff)) return true;
    static const char *const names[][2] = {{"low", "low"}, {"medium", "medium"}, {"high", "high"},
                                           {"xhigh", "high"}, {"max", "high"}};
    for (size_t i = 0; json_is_string(eff) && i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(json_string_value(eff), names[i][0])) continue;
        if (r->think == 0 && !absent(th)) return true; /* thinking disabled outright wins */
        r->think = 1;
        return (r->think_level = loom_strdup(names[i][1])) != NULL || oom(e);
    }
    srv_err_set(e, 400, "\"output_config.effort\": expected \"low\", \"medium\", \"high\", \"xhigh\" or \"max\"");
    return false;
}

static bool decode_sampling(const json_t *body, const srv_limits *lim, srv_gen_req *r, srv_err *e) {
    srv_options *o = &r->opt;
    static const struct {
        const char *key;
        double hi;
    } nums[] = {{"temperature", 2.0}, {"top_p", 1.0}};
    for (int i = 0; i < 2; i++) {
        const json_t *v = json_object_get(body, nums[i].key);
        if (absent(v)) continue;
        double d = json_is_number(v) ? json_number_value(v) : NAN;
        if (!(d >= 0 && d <= nums[i].hi)) {
            srv_err_set(e, 400, "\"%s\" must be a number from 0 to %g", nums[i].key, nums[i].hi);
            return false;
        }
        if (i == 0) o->temperature = (float)d, o->temperature_set = true;
        else o->top_p = (float)d, o->top_p_set = true;
    }
    const json_t *tk = json_object_get(body, "top_k");
    if (!absent(tk)) {
        if (!json_is_integer(tk) || json_integer_value(tk) < 0 || json_integer_value(tk) > (1 << 30)) {
            srv_err_set(e, 400, "\"top_k\" must be a non-negative integer");
            return false;
        }
        o->top_k = (int)json_integer_value(tk);
        o->top_k_set = true;
    }
    if (!srv_decode_seed(body, o, e)) return false; /* not Anthropic's; as the other endpoints */
    const json_t *ss = json_object_get(body, "stop_sequences");
    if (absent(ss)) return true;
    if (!json_is_array(ss)) {
        srv_err_set(e, 400, "\"stop_sequences\" must be an array of strings (got %s)", srv_json_kind(ss));
        return false;
    }
    size_t n = json_array_size(ss);
    if (n > (size_t)lim->max_stop) {
        srv_err_set(e, 400, "\"stop_sequences\": more than %d strings", lim->max_stop);
        return false;
    }
    if (!n) return true;
    if (!(o->stop = loom_calloc(n, sizeof *o->stop))) return oom(e);
    o->stop_set = true;
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_array_get(ss, i);
        if (!json_is_string(s) || !json_string_length(s) || json_string_length(s) > lim->max_stop_len ||
            strlen(json_string_value(s)) != json_string_length(s)) {
            srv_err_set(e, 400, "stop_sequences[%zu] must be a non-empty string of at most %zu bytes (no NUL)", i,
                        lim->max_stop_len);
            return false;
        }
        if (!(o->stop[i] = loom_strdup(json_string_value(s)))) return oom(e);
        o->n_stop = (int)i + 1;
    }
    return true;
}

bool srv_anthropic_decode(const json_t *body, const srv_limits *lim, bool count_tokens, srv_gen_req *r,
                          srv_err *e) {
    r->api = count_tokens ? SRV_API_ANTHROPIC_COUNT : SRV_API_ANTHROPIC;
    r->stream = false;
    const json_t *st = json_object_get(body, "stream");
    if (!absent(st)) {
        if (!json_is_boolean(st)) {
            srv_err_set(e, 400, "\"stream\" must be a boolean (got %s)", srv_json_kind(st));
            return false;
        }
        r->stream = json_is_true(st) && !count_tokens;
    }
    const json_t *mt = json_object_get(body, "max_tokens");
    if (absent(mt) && !count_tokens) {
        srv_err_set(e, 400, "max_tokens: Field required");
        return false;
    }
    if (!absent(mt)) {
        if (!json_is_integer(mt) || json_integer_value(mt) < 1 || json_integer_value(mt) > (1 << 30)) {
            srv_err_set(e, 400, "\"max_tokens\" must be a positive integer");
            return false;
        }
        r->opt.num_predict = (int)json_integer_value(mt);
        r->opt.num_predict_set = true;
    }
    if (!(r->messages = json_array())) return oom(e);
    srv_buf sys = {0};
    srv_buf_reserve(&sys, 0);
    bool ok = text_blocks(json_object_get(body, "system"), "\"system\"", &sys, e);
    if (ok && sys.len)
        ok = append(r->messages, json_pack("{s:s,s:s%}", "role", "system", "content", sys.data, sys.len), e);
    srv_buf_free(&sys);
    if (!ok) return false;
    const json_t *msgs = json_object_get(body, "messages");
    if (!json_is_array(msgs) || !json_array_size(msgs)) {
        srv_err_set(e, 400, "\"messages\" must be a non-empty array (got %s)", srv_json_kind(msgs));
        return false;
    }
    if (json_array_size(msgs) > (size_t)lim->max_messages) {
        srv_err_set(e, 400, "\"messages\": more than %d messages", lim->max_messages);
        return false;
    }
    for (size_t i = 0; i < json_array_size(msgs); i++)
        if (!decode_message(json_array_get(msgs, i), i, r->messages, e)) return false;
    const json_t *md = json_object_get(body, "metadata");
    if (!absent(md) && !json_is_object(md)) {
        srv_err_set(e, 400, "\"metadata\" must be an object (got %s)", srv_json_kind(md));
        return false;
    }
    return decode_tools(body, r, e) && decode_tool_choice(body, r, e) && decode_thinking(body, r, e) &&
           decode_sampling(body, lim, r, e);
}

/* ------------------------------------------------------------------ answer */

void srv_anth_init(srv_anth *c, const char *model, uint64_t seed) {
    memset(c, 0, sizeof *c);
    c->model = model;
    c->rng = seed;
    srv_make_id(&c->rng, "msg", c->id, sizeof c->id);
    c->content = json_array();
}

void srv_anth_free(srv_anth *c) {
    json_decref(c->content);
    srv_buf_free(&c->text);
    srv_buf_free(&c->pend);
    memset(c, 0, sizeof *c);
}

static void send(srv_buf *out, const char *type, json_t *j) {
    if (!out) {
        json_decref(j);
        return;
    }
    if (!j) {
        out->oom = true;
        return;
    }
    srv_buf_printf(out, "event: %s\ndata: ", type);
    srv_json_append(out, j);
    srv_buf_append(out, "\n\n", 2);
    json_decref(j);
}

static json_t *message_obj(const srv_anth *c, json_t *content, const char *stop_reason, const char *stop_sequence,
                           int in, int outn) {
    json_t *j = json_pack("{s:s,s:s,s:s,s:s}", "id", c->id, "type", "message", "role", "assistant", "model",
                          c->model ? c->model : "");
    if (!j) {
        json_decref(content);
        return NULL;
    }
    json_object_set_new(j, "content", content);
    json_object_set_new(j, "stop_reason", stop_reason ? json_string(stop_reason) : json_null());
    json_object_set_new(j, "stop_sequence", stop_sequence ? srv_json_text(stop_sequence, strlen(stop_sequence)) : json_null());
    json_object_set_new(j, "usage", json_pack("{s:i,s:i}", "input_tokens", in, "output_tokens", outn));
    return j;
}

void srv_anth_start(srv_anth *c, srv_buf *out, int input_tokens) {
    if (c->started) return;
    c->started = true;
    send(out, "message_start", json_pack("{s:s,s:o}", "type", "message_start", "message",
                                         message_obj(c, json_array(), NULL, NULL, input_tokens, 0)));
    send(out, "ping", json_pack("{s:s}", "type", "ping"));
}

static int cur_index(const srv_anth *c) { return (int)json_array_size(c->content) - 1; }

static void close_open(srv_anth *c, srv_buf *out) {
    if (!c->open) return;
    json_t *b = json_array_get(c->content, json_array_size(c->content) - 1);
    json_object_set_new(b, c->open == 1 ? "thinking" : "text", srv_json_text(c->text.data ? c->text.data : "", c->text.len));
    send(out, "content_block_stop", json_pack("{s:s,s:i}", "type", "content_block_stop", "index", cur_index(c)));
    c->open = 0;
    srv_buf_clear(&c->text);
}

static void open_block(srv_anth *c, srv_buf *out, int what) {
    close_open(c, out);
    json_t *b = what == 1 ? json_pack("{s:s,s:s,s:s}", "type", "thinking", "thinking", "", "signature", "")
                          : json_pack("{s:s,s:s}", "type", "text", "text", "");
    if (!b || json_array_append_new(c->content, b)) {
        if (out) out->oom = true;
        return;
    }
    c->open = what;
    send(out, "content_block_start", json_pack("{s:s,s:i,s:O}", "type", "content_block_start", "index",
                                               cur_index(c), "content_block", b));
}

static void add_text(srv_anth *c, srv_buf *out, int what, const char *s, size_t n) {
    if (!n) return;
    if (c->open != what) open_block(c, out, what);
    if (c->open != what) return;
    srv_buf_append(&c->text, s, n);
    send(out, "content_block_delta",
         json_pack("{s:s,s:i,s:{s:s,s:o}}", "type", "content_block_delta", "index", cur_index(c), "delta", "type",
                   what == 1 ? "thinking_delta" : "text_delta", what == 1 ? "thinking" : "text", srv_json_text(s, n)));
}

static void add_call(srv_anth *c, srv_buf *out, const json_t *call) {
    close_open(c, out);
    const json_t *f = json_object_get(call, "function");
    const json_t *name = json_object_get(f, "name");
    const json_t *args = json_object_get(f, "arguments");
    char id[32];
    srv_make_id(&c->rng, "toolu", id, sizeof id);
    c->n_calls++;
    json_t *input = json_is_object(args) ? json_deep_copy(args) : json_object();
    json_t *b = json_pack("{s:s,s:s,s:s,s:o}", "type", "tool_use", "id", id, "name",
                          json_is_string(name) ? json_string_value(name) : "", "input", json_object());
    if (!b || !input || json_array_append_new(c->content, b)) {
        json_decref(input);
        if (out) out->oom = true;
        return;
    }
    int idx = cur_index(c);
    send(out, "content_block_start", json_pack("{s:s,s:i,s:O}", "type", "content_block_start", "index", idx,
                                               "content_block", b));
    char *text = json_dumps(input, JSON_COMPACT);
    send(out, "content_block_delta", json_pack("{s:s,s:i,s:{s:s,s:s}}", "type", "content_block_delta", "index", idx,
                                               "delta", "type", "input_json_delta", "partial_json", text ? text : "{}"));
    free(text);
    send(out, "content_block_stop", json_pack("{s:s,s:i}", "type", "content_block_stop", "index", idx));
    json_object_set_new(b, "input", input);
}

void srv_anth_delta(srv_anth *c, srv_buf *out, const srv_delta *d) {
    if (d->thinking) add_text(c, out, 1, d->thinking, d->thinking_len);
    if (d->content && d->content_len) {
        /* white space between thinking and calls opens no text block: it waits for text */
        if (c->open != 2 && srv_all_space(d->content, d->content_len)) {
            if (c->open == 1) close_open(c, out);
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
}

void srv_anth_end(srv_anth *c, srv_buf *out, bool stream, const char *stop_reason, const char *stop_sequence,
                  int input_tokens, int output_tokens) {
    srv_buf *ev = stream ? out : NULL;
    if (!json_array_size(c->content)) { /* an empty answer is one empty text block */
        open_block(c, ev, 2);
        if (c->pend.len) add_text(c, ev, 2, c->pend.data, c->pend.len);
    }
    close_open(c, ev);
    if (stream) {
        json_t *delta = json_pack("{s:s,s:o}", "stop_reason", stop_reason, "stop_sequence",
                                  stop_sequence ? srv_json_text(stop_sequence, strlen(stop_sequence)) : json_null());
        send(out, "message_delta", json_pack("{s:s,s:o,s:{s:i,s:i}}", "type", "message_delta", "delta", delta, "usage",
                                             "input_tokens", input_tokens, "output_tokens", output_tokens));
        send(out, "message_stop", json_pack("{s:s}", "type", "message_stop"));
    } else {
        json_t *m = message_obj(c, json_deep_copy(c->content), stop_reason, stop_sequence, input_tokens, output_tokens);
        if (!srv_json_append(out, m)) out->oom = true;
        srv_buf_append(out, "\n", 1);
        json_decref(m);
    }
}

static json_t *error_obj(int status, const char *msg) {
    const char *type = status == 400 ? "invalid_request_error"
                       : status == 401 ? "authentication_error"
                       : status == 403 ? "permission_error"
                       : status == 404 ? "not_found_error"
                       : status == 413 ? "request_too_large"
                       : status == 429 ? "rate_limit_error"
                       : status == 503 || status == 529 ? "overloaded_error"
                                                         : "api_error";
    return json_pack("{s:s,s:{s:s,s:o}}", "type", "error", "error", "type", type, "message", srv_json_text(msg, strlen(msg)));
}

void srv_anth_error(srv_buf *out, int status, const char *msg) {
    json_t *j = error_obj(status, msg);
    if (!srv_json_append(out, j)) out->oom = true;
    srv_buf_append(out, "\n", 1);
    json_decref(j);
}

void srv_anth_stream_error(srv_buf *out, int status, const char *msg) { send(out, "error", error_obj(status, msg)); }
