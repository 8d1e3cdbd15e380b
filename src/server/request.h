/*
 * request.h (internal) - decoding API request bodies (JSON text) into plain
 * structs, with limits. This is the layer the fuzzer drives: every function here
 * is pure (no model, no I/O), never aborts, and reports the offending field.
 *
 * Ollama: POST /api/generate, /api/chat (docs/api.md); OpenAI: POST
 * /v1/chat/completions, /v1/completions (Ollama's openai/openai.go mapping:
 * max_tokens -> num_predict, temperature and top_p default 1.0, stop string or
 * array, seed, frequency/presence penalties, response_format, stream_options).
 */
#ifndef LOOM_SERVER_REQUEST_H
#define LOOM_SERVER_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "loom_sampler.h"

/* Most alternatives per token a request may ask for (OpenAI's and Ollama's limit). */
#define SRV_TOP_LOGPROBS_MAX 20

/* Limits applied while decoding (srv_limits_default()). */
typedef struct srv_limits {
    int max_depth;          /* JSON nesting (arrays + objects), default 64 */
    size_t max_string;      /* bytes of any one JSON string, default 16 MiB */
    int max_messages;       /* chat messages, default 16384 */
    int max_stop;           /* stop strings, default 16 */
    size_t max_stop_len;    /* bytes per stop string, default 1024 */
    int max_context;        /* /api/generate "context" ids, default 1 << 20 */
} srv_limits;

srv_limits srv_limits_default(void);

/* A decoding error: the HTTP status to answer (400, 413) and a message. */
typedef struct srv_err {
    int status;
    char msg[512];
    /* OpenAI's error "code" and "param" where one applies (static strings; NULL = null):
     * "model_not_found", "context_length_exceeded" (which clients test to trim a history) */
    const char *code, *param;
} srv_err;

void srv_err_set(srv_err *e, int status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Parse a request body: checks the nesting depth and string sizes on the raw text
 * before jansson parses it (so a hostile body costs O(n) and bounded memory),
 * allows embedded NUL (\u0000) in strings, and requires a top-level object.
 * Empty body: 400 "missing request body". Returns a new reference or NULL (e set). */
json_t *srv_json_parse(const char *body, size_t len, const srv_limits *lim, srv_err *e);

typedef enum srv_api {
    SRV_API_GENERATE = 0,   /* /api/generate */
    SRV_API_CHAT = 1,       /* /api/chat */
    SRV_API_OAI_CHAT = 2,   /* /v1/chat/completions */
    SRV_API_OAI_COMPLETE = 3, /* /v1/completions */
    SRV_API_OAI_RESPONSES = 4, /* /v1/responses (stateless; responses.h) */
    SRV_API_ANTHROPIC = 5,   /* /v1/messages (anthropic.h) */
    SRV_API_ANTHROPIC_COUNT = 6 /* /v1/messages/count_tokens */
} srv_api;

/* Whether an API takes a conversation (messages) rather than a prompt. */
static inline bool srv_api_is_chat(srv_api a) {
    return a == SRV_API_CHAT || a == SRV_API_OAI_CHAT || a == SRV_API_OAI_RESPONSES || a == SRV_API_ANTHROPIC ||
           a == SRV_API_ANTHROPIC_COUNT;
}
/* Whether errors and answers take Anthropic's shapes. */
static inline bool srv_api_is_anthropic(srv_api a) { return a == SRV_API_ANTHROPIC || a == SRV_API_ANTHROPIC_COUNT; }
/* Whether errors and answers take OpenAI's shapes. */
static inline bool srv_api_is_openai(srv_api a) {
    return a == SRV_API_OAI_CHAT || a == SRV_API_OAI_COMPLETE || a == SRV_API_OAI_RESPONSES;
}

/* Options (Ollama's "options" object, or mapped from OpenAI fields). Every field
 * has a *_set flag so model defaults (the Ollama params layer) and request values
 * can be merged: request > model params > server defaults. */
typedef struct srv_options {
    /* load-time: a change reloads the model */
    int num_ctx, num_batch, num_gpu, num_thread;
    bool use_mmap;
    bool num_ctx_set, num_batch_set, num_gpu_set, num_thread_set, use_mmap_set;
    /* per request */
    int num_predict;        /* -1 = until EOG or context; -2 = fill the context */
    int num_keep;
    int64_t seed;           /* -1 = random */
    float temperature, top_p, min_p, repeat_penalty, presence_penalty, frequency_penalty;
    int top_k, repeat_last_n;
    bool num_predict_set, num_keep_set, seed_set, temperature_set, top_p_set, min_p_set;
    bool repeat_penalty_set, presence_penalty_set, frequency_penalty_set, top_k_set;
    bool repeat_last_n_set;
    char **stop;            /* stop strings (owned) */
    int n_stop;
    bool stop_set;
} srv_options;

/* Server defaults (Ollama's DefaultOptions, except repeat_penalty 1.0 = off, which
 * is what Ollama's own Go sampler applies and keeps greedy output equal to
 * `loom run --temp 0`). */
void srv_options_defaults(srv_options *o);
/* Parse an Ollama "options" object into o (only the keys present are set).
 * Unknown keys are ignored; a known key of the wrong type is 400
 * `option "x" must be of type integer`. */
bool srv_options_parse(const json_t *obj, const srv_limits *lim, srv_options *o, srv_err *e);
/* Copy the fields set in src over dst (stop strings copied). false on OOM. */
bool srv_options_merge(srv_options *dst, const srv_options *src);
void srv_options_free(srv_options *o);

/* OpenAI tool_choice. */
enum {
    SRV_TOOL_CHOICE_AUTO = 0,   /* "auto" (and Ollama requests): the model decides */
    SRV_TOOL_CHOICE_NONE,       /* "none": the tools are hidden from the template */
    SRV_TOOL_CHOICE_REQUIRED,   /* "required": at least one call (grammar-constrained) */
    SRV_TOOL_CHOICE_FUNCTION    /* {"type":"function","function":{"name":X}}: a call of X */
};

typedef struct srv_gen_req {
    srv_api api;
    char *model;            /* as given (not canonicalised) */
    /* generate / completions */
    char *prompt;
    size_t prompt_len;
    char *suffix;
    size_t suffix_len;
    char *system;           /* generate: replaces the model's system message */
    size_t system_len;
    char *template_text;    /* request template override (NULL = the model's) */
    bool raw;
    int32_t *context;       /* generate: tokens of an earlier answer */
    int n_context;
    /* chat: the messages array, validated (role strings; content a string, or OpenAI
     * parts of type "text" flattened into a string; images refused). Owned. */
    json_t *messages;
    json_t *tools;          /* NULL or an array (owned) */
    int tool_choice;        /* SRV_TOOL_CHOICE_*: OpenAI tool_choice (Ollama: always auto) */
    char *tool_choice_name; /* SRV_TOOL_CHOICE_FUNCTION: the function (owned) */
    bool parallel_tool_calls; /* OpenAI parallel_tool_calls (default true) */
    json_t *format;         /* NULL, "json" or a schema object (owned) */
    int think;              /* -1 unset, 0 false, 1 true */
    bool think_soft;        /* think: true means "if the model can" (Anthropic, Responses) */
    int logprobs;           /* -1: none; else return token logprobs with this many alternatives (<= 20) */
    char *think_level;      /* "high" | "medium" | "low" (think given as a string) */
    bool stream;            /* default true for Ollama, false for OpenAI */
    bool include_usage;     /* OpenAI stream_options.include_usage */
    bool keep_alive_set;
    int64_t keep_alive_ns;  /* < 0 = forever */
    bool truncate;          /* drop the oldest messages when the prompt is too long */
    bool truncate_set;
    /* OpenAI logit_bias: added to the logits of these token ids before sampling (owned;
     * ids checked against the vocabulary when the model is known) */
    int32_t *bias_ids;
    float *bias_vals;
    int n_bias;
    /* /v1/responses: the request's settings as the response object echoes them
     * (instructions, tools, tool_choice, text, reasoning, temperature, ...; owned) */
    json_t *resp_echo;
    srv_options opt;
} srv_gen_req;

/* Decode a generate/chat/OpenAI body (already parsed) into r (zeroed first).
 * Returns false with e set (400 and a message naming the field). */
bool srv_gen_req_decode(srv_api api, const json_t *body, const srv_limits *lim, srv_gen_req *r,
                        srv_err *e);
void srv_gen_req_free(srv_gen_req *r);

/* OpenAI's tool_choice words "auto", "none", "required" into *choice
 * (SRV_TOOL_CHOICE_*); false for any other word. */
bool srv_tool_choice_word(const char *s, int *choice);
/* tool_choice "required" or a named function: r->tools must have it (label names the
 * choice in the message). true when the choice needs nothing. */
bool srv_tool_choice_check(const srv_gen_req *r, const char *label, srv_err *e);
/* The function name of the latest call with this id among msgs[0..upto) (messages with
 * tool_calls [{id, function: {name}}]), or NULL. Tool messages carry tool_name for the
 * templates that want it. */
const char *srv_call_name(const json_t *msgs, size_t upto, const char *id);
/* Append a tool given flat ({name, description, <schema_key>}: Responses' and
 * Anthropic's) to tools in the chat form {type: "function", function: {name,
 * description, parameters}}; schema, when not NULL, replaces t's. false with e set (400
 * naming tools[i].field). */
bool srv_tool_flat_append(json_t *tools, const json_t *t, size_t i, const char *schema_key, const json_t *schema,
                          srv_err *e);
/* "seed": an integer (o->seed, o->seed_set); absent or null leaves o as it is. */
bool srv_decode_seed(const json_t *body, srv_options *o, srv_err *e);

/* keep_alive: a number of seconds or a Go duration string; negative = forever. */
bool srv_keep_alive_parse(const json_t *v, int64_t *ns, srv_err *e);

/* The JSON kind of v for messages: "object", "array", "string", "number", "boolean",
 * "null"; "nothing" for NULL (an absent field). */
const char *srv_json_kind(const json_t *v);

/* Duplicate a JSON string value (length-aware; embedded NUL kept). */
char *srv_json_strdup(const json_t *s, size_t *len);

#endif
