/* chatout.c - the chat output parser's results in the APIs' shapes (see chatout.h). */
#include "server/chatout.h"

#include <string.h>

bool srv_chatout_wanted(const loom_chat_syntax *syn, bool has_tools) {
    return syn->thinking != LOOM_CHAT_THINKING_NONE || (has_tools && syn->format != LOOM_CHAT_FORMAT_PLAIN);
}

json_t *srv_tool_calls_json(const loom_chat_tool_call *calls, int n, int first_index) {
    json_t *a = json_array();
    if (!a) return NULL;
    for (int i = 0; i < n; i++) {
        json_error_t je;
        json_t *args = json_loads(calls[i].arguments, JSON_DECODE_ANY, &je);
        if (!args) args = json_loads(calls[i].arguments, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &je);
        if (!json_is_object(args)) { /* the parser hands out objects; be safe anyway */
            json_decref(args);
            args = json_object();
        }
        json_t *fn = json_object();
        json_t *call = json_object();
        if (!fn || !call || !args) {
            json_decref(fn), json_decref(call), json_decref(args), json_decref(a);
            return NULL;
        }
        json_object_set_new(call, "id", json_string(calls[i].id));
        json_object_set_new(fn, "index", json_integer(first_index + i));
        json_object_set_new(fn, "name", json_string(calls[i].name));
        json_object_set_new(fn, "arguments", args);
        json_object_set_new(call, "function", fn);
        if (json_array_append_new(a, call)) {
            json_decref(a);
            return NULL;
        }
    }
    return a;
}

bool srv_chatout_init(srv_chatout *c, const srv_chatout_params *p, srv_err *e) {
    memset(c, 0, sizeof *c);
    c->hide_thinking = p->hide_thinking;
    loom_chat_parser_params pp = loom_chat_parser_default_params();
    pp.syntax = p->syntax;
    pp.prompt = p->prompt;
    pp.prompt_len = p->prompt ? p->prompt_len : 0;
    pp.parse_thinking = true;
    pp.parse_tools = p->parse_tools;
    pp.id_seed = p->id_seed;
    char *tools = NULL;
    if (p->parse_tools && json_is_array(p->tools) && json_array_size(p->tools)) {
        tools = json_dumps(p->tools, JSON_COMPACT);
        if (!tools) goto oom;
        pp.tools_json = tools;
    }
    loom_error err = {0};
    loom_status st = loom_chat_parser_new(&pp, &c->p, &err);
    free(tools);
    if (st) {
        srv_err_set(e, st == LOOM_ERR_NOMEM ? 500 : 400, "tool calls: %s", err.msg);
        return false;
    }
    if (!(c->all_calls = json_array())) goto oom;
    return true;
oom:
    srv_chatout_free(c);
    srv_err_set(e, 500, "out of memory");
    return false;
}

void srv_chatout_free(srv_chatout *c) {
    loom_chat_parser_free(c->p);
    json_decref(c->calls);
    json_decref(c->all_calls);
    memset(c, 0, sizeof *c);
}

static bool convert(srv_chatout *c, const loom_chat_delta *cd, srv_delta *d, srv_err *e) {
    memset(d, 0, sizeof *d);
    json_decref(c->calls);
    c->calls = NULL;
    if (cd->content_len) d->content = cd->content, d->content_len = cd->content_len;
    if (cd->thinking_len && !c->hide_thinking) d->thinking = cd->thinking, d->thinking_len = cd->thinking_len;
    if (cd->n_calls > 0) {
        c->calls = srv_tool_calls_json(cd->calls, cd->n_calls, c->n_calls);
        if (!c->calls || json_array_extend(c->all_calls, c->calls)) {
            srv_err_set(e, 500, "out of memory");
            return false;
        }
        c->n_calls += cd->n_calls;
        d->tool_calls = c->calls;
    }
    return true;
}

bool srv_chatout_push(srv_chatout *c, const char *text, size_t n, srv_delta *d, srv_err *e) {
    loom_chat_delta cd;
    loom_error err = {0};
    if (loom_chat_parser_push(c->p, text, n, &cd, &err)) {
        memset(d, 0, sizeof *d);
        srv_err_set(e, err.status == LOOM_ERR_NOMEM ? 500 : 400, "the answer: %s", err.msg);
        return false;
    }
    return convert(c, &cd, d, e);
}

bool srv_chatout_finish(srv_chatout *c, srv_delta *d, srv_err *e) {
    loom_chat_delta cd;
    loom_error err = {0};
    if (loom_chat_parser_finish(c->p, &cd, &err)) {
        memset(d, 0, sizeof *d);
        srv_err_set(e, 500, "the answer: %s", err.msg);
        return false;
    }
    return convert(c, &cd, d, e);
}

void srv_chatout_whole(srv_chatout *c, srv_delta *d) {
    loom_chat_delta all;
    loom_chat_parser_result(c->p, &all);
    memset(d, 0, sizeof *d);
    d->content = all.content ? all.content : "";
    d->content_len = all.content ? all.content_len : 0;
    if (!c->hide_thinking && all.thinking_len) d->thinking = all.thinking, d->thinking_len = all.thinking_len;
    if (json_array_size(c->all_calls)) d->tool_calls = c->all_calls;
}

bool srv_delta_empty(const srv_delta *d) {
    return !d->content_len && !d->thinking_len && !json_array_size(d->tool_calls);
}
