/*
 * chatout.h (internal) - a chat answer as the APIs return it: the model's text run
 * through the chat output parser (loom_chat.h), giving content, thinking and tool
 * calls in Ollama's form [{"id", "function": {"index", "name", "arguments": {...}}}]
 * (response.c turns them into OpenAI's). Pure (no model, no I/O); one per request;
 * not thread-safe.
 *
 * Thinking: parsed whenever the syntax has thinking markers; hide_thinking (think:
 * false) drops it instead of returning it. Tool calls: parsed only when the request
 * has tools (and tool_choice is not "none"); otherwise call syntax is content text.
 * A malformed call comes back as content text (the parser's rule).
 */
#ifndef LOOM_SERVER_CHATOUT_H
#define LOOM_SERVER_CHATOUT_H

#include <jansson.h>

#include "loom_chat.h"
#include "server/request.h"
#include "server/response.h"

typedef struct srv_chatout {
    loom_chat_parser *p;
    bool hide_thinking;
    json_t *calls;      /* this delta's calls (Ollama form) or NULL */
    json_t *all_calls;  /* every call so far */
    int n_calls;        /* calls handed out so far (the next call's index) */
} srv_chatout;

typedef struct srv_chatout_params {
    loom_chat_syntax syntax;
    const char *prompt;     /* the end of the rendered prompt (text), may be NULL */
    size_t prompt_len;
    bool parse_tools;
    bool hide_thinking;
    const json_t *tools;    /* the request's tools (types XML parameter values), may be NULL */
    uint64_t id_seed;       /* call ids */
} srv_chatout_params;

/* Whether a template's syntax needs the parser at all (tools or thinking markers). */
bool srv_chatout_wanted(const loom_chat_syntax *syn, bool has_tools);

/* false with e set (500 out of memory). */
bool srv_chatout_init(srv_chatout *c, const srv_chatout_params *p, srv_err *e);
void srv_chatout_free(srv_chatout *c);
/* Feed generated text (special tokens rendered); *d receives what may be sent now
 * (pointers valid until the next call). false with e set on error (OOM, 64 MiB). */
bool srv_chatout_push(srv_chatout *c, const char *text, size_t n, srv_delta *d, srv_err *e);
/* The end of generation: what was held back. */
bool srv_chatout_finish(srv_chatout *c, srv_delta *d, srv_err *e);
/* The whole answer so far (after finish: all of it). */
void srv_chatout_whole(srv_chatout *c, srv_delta *d);
/* Whether *d has anything to send. */
bool srv_delta_empty(const srv_delta *d);

/* Calls in Ollama's form from the parser's (index counted from first_index); NULL on OOM. */
json_t *srv_tool_calls_json(const loom_chat_tool_call *calls, int n, int first_index);

#endif
