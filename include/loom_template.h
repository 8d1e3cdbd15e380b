/*
 * loom_template.h - chat templates: a Jinja2 interpreter that renders a model's
 * `tokenizer.chat_template` exactly as Hugging Face transformers does, and turns a
 * conversation into token ids without letting message content smuggle in control
 * tokens.
 *
 * Semantics: Python jinja2 3.1 in the environment transformers' apply_chat_template
 * uses - ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
 * extensions=[loopcontrols]), `{% generation %}` blocks rendered as their body,
 * keep_trailing_newline=False, the default (non-strict) Undefined, and the globals
 * raise_exception(msg), strftime_now(fmt), range (sandboxed: at most 100000 items),
 * dict, namespace, cycler, joiner; the filter tojson(x, ensure_ascii=False,
 * indent=None, separators=None, sort_keys=False) is Python's json.dumps. Values
 * follow Python: None prints as "None", floats print like repr(), str/list/dict
 * methods (strip, split, startswith, items, get, ...), insertion-ordered dicts; lists
 * and dicts are immutable (append/update/pop... raise SecurityError).
 *
 * Untrusted templates: compile and render are bounded by loom_template_limits
 * (source nesting depth, macro/recursive-loop depth, loop iterations, evaluation
 * steps, output bytes, memory). Every failure - syntax error, unknown filter or test,
 * undefined value used wrongly, type error, limit hit, raise_exception() - is a
 * status plus a message naming the template line and column; nothing aborts.
 *
 * Content spans: the renderer returns, with the text, the byte ranges that came
 * from the conversation (message contents and every other string inside messages
 * and tools - except a message's role when it is a plain word [A-Za-z0-9_-]{1,64} -
 * tracked through concatenation, slicing, strip, split, join, format, tojson...; a
 * string transformed in a way that loses positions, e.g. upper or replace, is
 * content as a whole). loom_template_tokenize parses special (CONTROL/UNKNOWN)
 * tokens only outside those spans, so a user who types "<|im_end|>" gets those
 * characters, not the control token.
 *
 * Ownership and threading: a compiled loom_template is immutable; any number of
 * threads may render it at once. Every render allocates its own memory and frees
 * it before returning (the caller frees the returned text with
 * loom_template_result_free). No function keeps a pointer to its arguments.
 */
#ifndef LOOM_TEMPLATE_H
#define LOOM_TEMPLATE_H

#include "loom_base.h"
#include "loom_gguf.h"
#include "loom_tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct loom_template loom_template;

/* Bounds for untrusted templates. A zero field means the default given here. */
typedef struct loom_template_limits {
    int max_depth;           /* nesting of blocks and expressions in the source (256) */
    int max_recursion;       /* macro calls / recursive loops in flight (100) */
    int64_t max_iterations;  /* loop iterations per render, all loops together (1000000) */
    int64_t max_steps;       /* evaluation steps per render (20000000) */
    size_t max_output;       /* bytes of rendered text, also the longest string (32 MiB) */
    size_t max_memory;       /* bytes a render may allocate (128 MiB) */
} loom_template_limits;

/* Compile Jinja source (len bytes, must be valid UTF-8; may contain NUL bytes only
 * inside text). limits may be NULL (defaults); they are copied into the template
 * and bound every later render. On success *out must be freed with
 * loom_template_free. Errors: LOOM_ERR_FORMAT for a syntax error or an unknown
 * filter/test outside a conditional branch ("LINE:COL: TemplateSyntaxError: ..."),
 * LOOM_ERR_RANGE when the source nests deeper than max_depth, LOOM_ERR_NOMEM,
 * LOOM_ERR_INVALID_ARG for NULL arguments. */
loom_status loom_template_compile(const char *src, size_t len, const loom_template_limits *limits,
                                  loom_template **out, loom_error *err);
/* NULL is a no-op. */
void loom_template_free(loom_template *t);

/* The template used for a model that has none: the message contents in order,
 * separated by one "\n" (like Ollama's `{{ .Prompt }}`, the raw prompt); nothing
 * is added for add_generation_prompt. Static string. */
const char *loom_template_fallback_source(void);

/* The chat template stored in a GGUF: tokenizer.chat_template, or
 * tokenizer.chat_template.NAME when name is non-NULL (e.g. "tool_use"). *src
 * points into the open file (valid until loom_gguf_close). LOOM_ERR_NOT_FOUND
 * when the key is absent, LOOM_ERR_FORMAT when it is not a string. */
loom_status loom_template_source_from_gguf(const loom_gguf *g, const char *name, const char **src,
                                           size_t *len, loom_error *err);

/* Wall-clock time for strftime_now (a naive local time, as Python's datetime.now()). */
typedef struct loom_template_time {
    int year, month, day;      /* e.g. 2024, 7, 26 */
    int hour, minute, second;  /* 0-23, 0-59, 0-60 */
} loom_template_time;

typedef struct loom_template_params {
    const char *bos_token;          /* value of `bos_token` (NULL: "") */
    const char *eos_token;          /* value of `eos_token` (NULL: "") */
    const loom_template_time *now;  /* clock for strftime_now; NULL: the local time now */
} loom_template_params;

/* A byte range [start, end) of the rendered text. */
typedef struct loom_template_span {
    size_t start, end;
} loom_template_span;

/* What a render returns. Zero-initialise; free with loom_template_result_free. */
typedef struct loom_template_result {
    char *text;                 /* rendered text, NUL-terminated (may contain NUL bytes) */
    size_t len;                 /* bytes of text, excluding the terminator */
    loom_template_span *spans;  /* content spans, sorted, disjoint, non-adjacent */
    size_t n_spans;
    /* On failure: where and what, without the location prefix of err->msg, e.g.
     * line 1, column 95, "TemplateError: System role not supported". line is 0
     * when the error is not in the template (bad conversation JSON, out of memory). */
    int error_line, error_column;
    char error[LOOM_ERROR_MSG_MAX];
} loom_template_result;

/* Render a conversation given as JSON text: an object with
 *   "messages": [ {"role": ..., "content": string | [ {"type": "text", "text": ...}, ... ] | null,
 *                  "tool_calls": [...], ...any other keys... }, ... ]   (required)
 *   "tools": [...]                  (optional; `tools` is undefined when absent)
 *   "add_generation_prompt": bool   (optional, default true)
 *   "kwargs": { "NAME": value, ... } (optional extra variables: enable_thinking,
 *                                     reasoning_effort, ...; they override bos/eos)
 * Other top-level keys are ignored. Values reach the template unchanged (a
 * tool_call's "arguments" object stays an object). On success result->text holds
 * the text and its content spans. Errors: LOOM_ERR_INVALID_ARG for bad JSON (err
 * names line/column of the JSON) or a render error raised by the template or the
 * conversation (raise_exception, undefined value, type error), LOOM_ERR_FORMAT
 * for unknown filters/tests reached at run time, LOOM_ERR_RANGE for a limit,
 * LOOM_ERR_NOMEM. result->error / error_line / error_column describe the failure;
 * result->text is NULL then. */
loom_status loom_template_render_json(const loom_template *t, const char *conversation_json, size_t len,
                                      const loom_template_params *params, loom_template_result *result,
                                      loom_error *err);
/* The same with the conversation already parsed by jansson (a json_t object, as
 * from json_loadb; borrowed, not modified): saves a server that parsed the request
 * itself a second parse. The header does not include <jansson.h>. */
struct json_t;
loom_status loom_template_render_jansson(const loom_template *t, const struct json_t *conversation,
                                         const loom_template_params *params, loom_template_result *result,
                                         loom_error *err);

/* Frees text and spans and zeroes the struct. NULL is a no-op. */
void loom_template_result_free(loom_template_result *r);

/* Tokenize rendered text: special tokens (CONTROL / UNKNOWN vocabulary entries,
 * longest match first) are recognised only where they lie wholly outside every
 * span; the text between them is tokenized with parse_special = false (so content
 * and template text merge exactly as in a plain tokenization). With add_bos and
 * a vocabulary whose add_bos_token is set, BOS is prepended unless the text
 * already starts with the BOS token; EOS is never appended. *ids is malloc'd
 * (free()), *n_ids its length. Errors: LOOM_ERR_INVALID_ARG (NULL arguments,
 * spans out of order or out of range), LOOM_ERR_NOMEM, tokenizer errors. */
loom_status loom_template_tokenize(const loom_tokenizer *tok, const char *text, size_t len,
                                   const loom_template_span *spans, size_t n_spans, bool add_bos,
                                   int32_t **ids, int32_t *n_ids, loom_error *err);

/* Render a conversation for a model straight to token ids: bos_token/eos_token
 * default to the vocabulary's BOS/EOS token texts (params may override them),
 * then loom_template_render_json + loom_template_tokenize with add_bos = true.
 * result (may be NULL) receives the text and spans as well. Errors as the two. */
loom_status loom_template_render_tokens(const loom_template *t, const loom_tokenizer *tok,
                                        const char *conversation_json, size_t len,
                                        const loom_template_params *params, int32_t **ids,
                                        int32_t *n_ids, loom_template_result *result, loom_error *err);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_TEMPLATE_H */
