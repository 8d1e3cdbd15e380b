/*
 * anthropic.h (internal) - Anthropic's Messages API (POST /v1/messages and
 * /v1/messages/count_tokens), as Ollama serves it for clients such as Claude Code:
 * the request becomes a chat request, the answer comes back as content blocks whole or
 * as the Messages stream's events. Pure functions (no model, no I/O); unit-tested and
 * fuzzed.
 *
 * Request (srv_anthropic_decode): model, max_tokens (required, except for
 * count_tokens), messages [{role: "user" | "assistant", content: a string or blocks}]
 * with blocks text, tool_use {id, name, input} (assistant: its tool calls), tool_result
 * {tool_use_id, content: a string or text blocks, is_error} (user: tool messages, before
 * the user's own text), thinking {thinking} (assistant: its thinking) and
 * redacted_thinking (ignored: opaque); system (a string or text blocks, joined as they
 * are); tools [{name, description, input_schema}] (type absent or "custom"); tool_choice
 * {type: "auto" | "any" | "tool" (name) | "none", disable_parallel_tool_use}; thinking
 * {type: "enabled" | "disabled" | "adaptive"; absent = disabled, Anthropic's rule};
 * output_config.effort (low, medium, high; xhigh/max = high; alone it enables thinking);
 * thinking asked of a model that cannot think is ignored (r->think_soft); temperature, top_p, top_k, stop_sequences, stream, metadata
 * (ignored). 400 naming the field for the rest: images, documents, server tools, unknown
 * block types.
 *
 * Answer: {id: "msg_...", type: "message", role: "assistant", model, content: [thinking
 * {thinking, signature: ""}, text {text}, tool_use {id: "toolu_...", name, input}],
 * stop_reason: "end_turn" | "max_tokens" | "stop_sequence" | "tool_use", stop_sequence,
 * usage {input_tokens, output_tokens}}. Stream: "event: TYPE\ndata: {type, ...}\n\n" -
 * message_start (the message with empty content and the input tokens), ping, per block
 * content_block_start, content_block_delta (text_delta | thinking_delta |
 * input_json_delta with the whole input), content_block_stop, then message_delta
 * (stop_reason, stop_sequence, usage.output_tokens) and message_stop. Errors: {type:
 * "error", error: {type, message}} (HTTP status, or an "error" event once streaming).
 */
#ifndef LOOM_SERVER_ANTHROPIC_H
#define LOOM_SERVER_ANTHROPIC_H

#include <jansson.h>

#include "server/request.h"
#include "server/response.h"

/* Decode a /v1/messages (count_tokens: /v1/messages/count_tokens) body, model and
 * keep_alive already read, into r (messages and tools in the chat form, options).
 * false with e set (400 naming the field). */
bool srv_anthropic_decode(const json_t *body, const srv_limits *lim, bool count_tokens, srv_gen_req *r,
                          srv_err *e);

/* One message being produced. Not thread-safe; one per request. */
typedef struct srv_anth {
    char id[32];            /* "msg_<hex>" */
    const char *model;      /* borrowed */
    uint64_t rng;           /* tool_use ids */
    bool started;
    json_t *content;        /* blocks so far (the open one as it stands) */
    int open;               /* the open block: 0 none, 1 thinking, 2 text */
    srv_buf text;           /* the open block's text so far */
    srv_buf pend;           /* white space not yet in a text block */
    int n_calls;
} srv_anth;

void srv_anth_init(srv_anth *c, const char *model, uint64_t seed);
void srv_anth_free(srv_anth *c);
/* Streaming: message_start and a ping (once). */
void srv_anth_start(srv_anth *c, srv_buf *out, int input_tokens);
/* A piece of the answer: events into out when not NULL (streaming); blocks kept either way. */
void srv_anth_delta(srv_anth *c, srv_buf *out, const srv_delta *d);
/* The end. stop_reason: "end_turn", "max_tokens", "stop_sequence" (stop_sequence then
 * names it) or "tool_use". Streaming: the closing events; otherwise the message (one
 * JSON line). */
void srv_anth_end(srv_anth *c, srv_buf *out, bool stream, const char *stop_reason, const char *stop_sequence,
                  int input_tokens, int output_tokens);
/* Errors: the body {type: "error", error: {type, message}} (type from the status), and
 * the same as a stream's "error" event. */
void srv_anth_error(srv_buf *out, int status, const char *msg);
void srv_anth_stream_error(srv_buf *out, int status, const char *msg);

#endif
