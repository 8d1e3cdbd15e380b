/*
 * responses.h (internal) - OpenAI's Responses API (POST /v1/responses), stateless as
 * Ollama serves it (docs/api/openai-compatibility: no previous_response_id or
 * conversation): the request becomes a chat request, the answer comes back as
 * output items (reasoning, message, function_call) whole or as the typed SSE events
 * of the Responses stream. Pure functions (no model, no I/O); unit-tested and fuzzed.
 *
 * Request (srv_responses_decode): input (a string = one user message, or items:
 * messages {role, content: string | [input_text | output_text parts]},
 * function_call {call_id, name, arguments: JSON text}, function_call_output
 * {call_id, output: string | parts}, reasoning {summary | content} whose text becomes
 * the next assistant turn's thinking; custom_tool_call {call_id, name, namespace?,
 * input} and custom_tool_call_output as a function of one string "input"), instructions
 * (a system message first), tools ({type: "function", name, description, parameters};
 * {type: "custom", name, description}: a function of one string "input", its calls
 * answered as custom_tool_call items; other tool types are a 400), tool_choice ("auto" |
 * "none" | "required" | {type: "function" | "custom", name}),
 * parallel_tool_calls, text.format (text | json_object | json_schema {schema}),
 * reasoning.effort (none -> think off; minimal/low -> low; medium; high/xhigh -> high),
 * temperature and top_p (default 1), max_output_tokens, truncation ("auto" drops the
 * oldest messages when the prompt is too long), stream, seed, metadata, include
 * "message.output_text.logprobs" and top_logprobs. Refused with a 400 naming the field:
 * previous_response_id, conversation, background, images, files, unknown item or part
 * types.
 *
 * Answer: the response object {id: "resp_...", object: "response", created_at, status:
 * "completed" | "incomplete" (incomplete_details.reason "max_output_tokens"), output,
 * usage {input_tokens, input_tokens_details.cached_tokens, output_tokens,
 * output_tokens_details.reasoning_tokens, total_tokens}, and the request's settings}.
 * Output items in the order the model produced them: reasoning {id: "rs_...", summary:
 * [{type: "summary_text", text}]}, message {id: "msg_...", role: "assistant", content:
 * [{type: "output_text", text, annotations: [], logprobs: []}]} (absent when the answer
 * has no text; white space between items is dropped; an empty answer has one empty
 * message), function_call {id: "fc_...", call_id, name, arguments: JSON text}.
 * Stream: "event: TYPE\ndata: {type, sequence_number, ...}\n\n" - response.created,
 * response.in_progress, then per item output_item.added, (content_part.added,
 * output_text.delta..., output_text.done, content_part.done | reasoning_summary_part.added,
 * reasoning_summary_text.delta..., reasoning_summary_text.done, reasoning_summary_part.done
 * | function_call_arguments.delta, function_call_arguments.done), output_item.done, and
 * last response.completed or response.incomplete with the whole response. An error
 * after the stream began: an "error" event. Token logprobs (include
 * "message.output_text.logprobs", top_logprobs 0..20): on output_text deltas, the done
 * event and the part, [{token, logprob, bytes, top_logprobs}]: streamed, the tokens that
 * arrived with the message's text; whole, every generated token.
 */
#ifndef LOOM_SERVER_RESPONSES_H
#define LOOM_SERVER_RESPONSES_H

#include <jansson.h>

#include "server/request.h"
#include "server/response.h"

/* Decode a /v1/responses body (model and keep_alive already read by
 * srv_gen_req_decode, which calls this) into r: messages in the chat form, tools in
 * the chat form, options, and r->resp_echo. false with e set (400 naming the field). */
bool srv_responses_decode(const json_t *body, const srv_limits *lim, srv_gen_req *r, srv_err *e);

/* One response being produced. Not thread-safe; one per request. */
typedef struct srv_resp {
    char id[32];            /* "resp_<hex>" */
    int64_t created;        /* seconds */
    const char *model;      /* borrowed */
    json_t *echo;           /* the request's settings (a reference) */
    uint64_t rng;           /* item ids */
    int seq;                /* the next sequence_number */
    bool started;           /* response.created sent */
    json_t *output;         /* items so far (done ones complete; the open one as it stands) */
    int open;               /* the open item: 0 none, 1 reasoning, 2 message */
    char open_id[32];
    srv_buf text;           /* the open item's text so far */
    srv_buf pend;           /* white space not yet in a message */
    int n_calls;            /* function calls so far */
    json_t *msg_lp;         /* the open message's token logprobs (when asked) */
    const json_t *cur_lp;   /* the delta being added: its logprobs, for its text */
} srv_resp;

/* echo: r->resp_echo (a reference is taken; may be NULL); seed: item ids. */
void srv_resp_init(srv_resp *c, const char *model, json_t *echo, uint64_t seed);
void srv_resp_free(srv_resp *c);
/* Streaming: response.created and response.in_progress (once). */
void srv_resp_start(srv_resp *c, srv_buf *out);
/* A piece of the answer (thinking, content, calls in Ollama's form): events into out
 * when out is not NULL (streaming); the output items are kept either way. */
void srv_resp_delta(srv_resp *c, srv_buf *out, const srv_delta *d);
/* The end: incomplete = the answer was cut at max_output_tokens. Streaming: the closing
 * events and response.completed / response.incomplete; otherwise the response object
 * (one JSON line). */
void srv_resp_end(srv_resp *c, srv_buf *out, bool stream, bool incomplete, int input_tokens, int cached_tokens,
                  int output_tokens);
/* An error after the stream began: an "error" event. */
void srv_resp_stream_error(srv_resp *c, srv_buf *out, int status, const char *msg);

#endif
