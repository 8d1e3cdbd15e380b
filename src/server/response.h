/*
 * response.h (internal) - response bodies exactly as the official servers frame
 * them (pure functions; unit-tested).
 *
 * Ollama (docs/api.md, api/types.go): NDJSON (application/x-ndjson), one object per
 * line: {"model", "created_at" (RFC 3339 UTC, nanoseconds), "response" | "message":
 * {"role": "assistant", "content"}, "done": false}; the final line has done: true,
 * done_reason, and the metrics total_duration, load_duration, prompt_eval_count,
 * prompt_eval_duration, eval_count, eval_duration (nanoseconds), and "context"
 * (token ids) for /api/generate. Non-streaming: the final object with the whole text.
 * An error after streaming began is a last line {"error": "..."}.
 *
 * OpenAI (Ollama's openai/openai.go + middleware/openai.go, and OpenAI's own
 * framing): SSE "data: {json}\n\n" chunks of object "chat.completion.chunk" (or
 * "text_completion"), the first delta carrying the role, a last chunk with
 * finish_reason and an empty delta, a usage chunk with "choices": [] when
 * stream_options.include_usage, then "data: [DONE]\n\n". Errors:
 * {"error": {"message", "type", "param": null, "code": null}}.
 */
#ifndef LOOM_SERVER_RESPONSE_H
#define LOOM_SERVER_RESPONSE_H

#include <jansson.h>

#include "server/request.h"
#include "server/util.h"

typedef struct srv_final {
    const char *done_reason;    /* "stop", "length", "load", "unload" */
    int64_t total_ns, load_ns, prompt_ns, eval_ns;
    int prompt_count, eval_count;
    const int32_t *context;     /* generate: prompt + answer tokens (NULL: no "context") */
    int n_context;
} srv_final;

/* One piece of an answer: content, and (the tool-calls-and-thinking issue) thinking
 * text and tool calls in Ollama's form [{"id"?, "function": {"name", "arguments":
 * {...}}}]. NULL / 0 = absent. */
typedef struct srv_delta {
    const char *content;
    size_t content_len;
    const char *thinking;
    size_t thinking_len;
    const json_t *tool_calls;
    /* token log probabilities of the tokens generated since the previous piece, in
     * Ollama's form [{token, logprob, bytes, top_logprobs: [{token, logprob, bytes}]}]
     * (NULL: none or not asked) */
    const json_t *logprobs;
} srv_delta;

/* Serialise j compactly (insertion order kept) and append it; false on OOM. */
bool srv_json_append(srv_buf *out, const json_t *j);
/* A JSON string from bytes that may hold invalid UTF-8 (replaced by U+FFFD). */
json_t *srv_json_text(const char *s, size_t n);

/* ---- Ollama: message {role, content, thinking?, tool_calls?} (chat) or response +
 * thinking? (generate) */
void srv_ollama_chunk_d(srv_buf *out, srv_api api, const char *model, int64_t created_ns, const srv_delta *d);
void srv_ollama_chunk(srv_buf *out, srv_api api, const char *model, int64_t created_ns, const char *text,
                      size_t n);
/* The final object (+ "\n" when stream). whole/text: the whole answer when not
 * streaming (an empty message when streaming). */
void srv_ollama_final_d(srv_buf *out, srv_api api, const char *model, int64_t created_ns, const srv_delta *whole,
                        const srv_final *f, bool stream);
void srv_ollama_final(srv_buf *out, srv_api api, const char *model, int64_t created_ns, const char *text,
                      size_t n, const srv_final *f, bool stream);
void srv_ollama_error(srv_buf *out, const char *msg, bool ndjson_line);

/* ---- OpenAI */
typedef struct srv_oai_ctx {
    srv_api api;                /* SRV_API_OAI_CHAT or SRV_API_OAI_COMPLETE */
    char id[40];                /* "chatcmpl-123" / "cmpl-123" */
    int64_t created;            /* seconds */
    const char *model;
    bool include_usage;
    size_t text_offset;         /* completions' logprobs: characters of the tokens so far */
} srv_oai_ctx;

void srv_oai_ctx_init(srv_oai_ctx *c, srv_api api, const char *model, bool include_usage);
/* A chunk (first: the chat delta also carries "role": "assistant"). Thinking goes
 * out as "reasoning_content", tool calls as OpenAI's [{index, id, type: "function",
 * function: {name, arguments: JSON text}}] (index counts from first_tool_index). */
void srv_oai_chunk_d(srv_buf *out, srv_oai_ctx *c, const srv_delta *d, bool first, int first_tool_index);
void srv_oai_chunk(srv_buf *out, srv_oai_ctx *c, const char *text, size_t n, bool first);
/* The end of a stream: the finish_reason chunk, the usage chunk when asked, [DONE]. */
void srv_oai_stream_end(srv_buf *out, srv_oai_ctx *c, const char *finish, int prompt_tokens,
                        int completion_tokens);
/* The whole (non-streaming) response. finish "tool_calls" when the answer has any. */
void srv_oai_final_d(srv_buf *out, srv_oai_ctx *c, const srv_delta *whole, const char *finish,
                     int prompt_tokens, int completion_tokens);
void srv_oai_final(srv_buf *out, srv_oai_ctx *c, const char *text, size_t n, const char *finish,
                   int prompt_tokens, int completion_tokens);
void srv_oai_error(srv_buf *out, int status, const char *msg);
/* The same with OpenAI's "param" and "code" (NULL = null). */
void srv_oai_error_ex(srv_buf *out, int status, const char *msg, const char *param, const char *code);
/* An error inside an SSE stream: data: {"error": {...}}\n\n */
void srv_oai_stream_error(srv_buf *out, int status, const char *msg);

#endif
