/*
 * loom_chat.h - what a chat model's output means: thinking, answer text and tool calls.
 *
 * Chat models write their reasoning and their tool calls in their family's own syntax
 * (Hermes/Qwen `<tool_call>{json}</tool_call>`, Mistral `[TOOL_CALLS]...`, gpt-oss
 * Harmony channels, DeepSeek's tool-call blocks, `<think>...</think>`...). A server must
 * return them as structured fields, never as raw text. This module
 *   1. detects the output syntax of a model from its chat template (and vocabulary), and
 *   2. parses the generated text, streamed in arbitrary pieces, into three streams:
 *      thinking text, answer text (content) and complete tool calls.
 *
 * Example (a server's generation loop):
 *     loom_chat_syntax syn = loom_chat_detect(template_text, strlen(template_text));
 *     loom_chat_parser_params pp = loom_chat_parser_default_params();
 *     pp.syntax = syn;
 *     pp.prompt = rendered_prompt; pp.prompt_len = strlen(rendered_prompt);
 *     loom_chat_parser *p;
 *     if (loom_chat_parser_new(&pp, &p, &err)) ...;
 *     for each generated piece (detokenized WITH special tokens, see below):
 *         loom_chat_delta d;
 *         loom_chat_parser_push(p, piece, n, &d, &err);
 *         send d.thinking / d.content / d.calls[0..d.n_calls) to the client
 *     loom_chat_parser_finish(p, &d, &err);   // end of generation: flush what was held
 *     loom_chat_parser_free(p);
 *
 * Input text: the parser expects the generated tokens' text with special tokens rendered
 * (LOOM_DETOK_SPECIAL), because several syntaxes are made of control tokens
 * (`<|channel|>`, `[TOOL_CALLS]`, `<|tool_call|>`...). End-of-generation tokens need not be
 * passed; if they are (`<|return|>`, `<|call|>`, `<|im_end|>`...), markers the syntax does not
 * know are passed through as content, so callers normally stop before them.
 *
 * Streaming rules: text that may be the beginning of a marker is held back until it is
 * known not to be one (so no partial tool-call syntax ever reaches the client as text);
 * a tool call is reported once, when it is complete; thinking streams in its own field.
 * Whitespace between the end of the thinking and the answer, and between tool calls, is
 * not reported as content.
 *
 * Bad output: a malformed call (JSON that does not parse, a missing name, a section that
 * never closes before the end of generation) is returned as content text, verbatim,
 * markers included; nothing is lost and no error is raised. Callers keep their
 * finish/done reason unchanged.
 *
 * Threading: a parser belongs to one thread at a time; loom_chat_detect and the
 * family functions are pure and may be called from any thread.
 */
#ifndef LOOM_CHAT_H
#define LOOM_CHAT_H

#include "loom_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Output syntaxes (tool calls; each also implies its thinking markers, see below). */
typedef enum loom_chat_format {
    LOOM_CHAT_FORMAT_PLAIN = 0,      /* no tool-call syntax known: all text is content */
    LOOM_CHAT_FORMAT_HERMES,         /* <tool_call>{"name","arguments"}</tool_call>: Hermes 2/3,
                                        Qwen 2.5/3, QwQ, SmolLM3, MiMo, Bielik... */
    LOOM_CHAT_FORMAT_LLAMA3,         /* bare {"name","parameters"} JSON or <|python_tag|>:
                                        Llama 3.1-3.3 */
    LOOM_CHAT_FORMAT_MISTRAL,        /* [TOOL_CALLS][{...}] (Nemo) and [TOOL_CALLS]name[ARGS]{...}
                                        (Small 3.2, Devstral, Ministral 3, Magistral) */
    LOOM_CHAT_FORMAT_DEEPSEEK_R1,    /* <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>name
                                        ```json ...``` <｜tool▁call▁end｜>... */
    LOOM_CHAT_FORMAT_DEEPSEEK_V3_1,  /* <｜tool▁call▁begin｜>name<｜tool▁sep｜>{args}<｜tool▁call▁end｜> */
    LOOM_CHAT_FORMAT_GRANITE,        /* <|tool_call|>[{...}] (Granite 3.x) */
    LOOM_CHAT_FORMAT_FUNCTIONARY_V3_1, /* <function=name>{args}</function> (Llama 3.1 based) */
    LOOM_CHAT_FORMAT_FUNCTIONARY_V3_2, /* >>>name\n{args} ... (>>>all = text) */
    LOOM_CHAT_FORMAT_COMMAND_R7B,    /* <|START_ACTION|>[{"tool_name","parameters"}]<|END_ACTION|> */
    LOOM_CHAT_FORMAT_HARMONY,        /* gpt-oss: <|channel|>analysis|commentary|final,
                                        to=functions.name recipients */
    LOOM_CHAT_FORMAT_XML_FUNCTION,   /* <tool_call><function=name><parameter=k>v</parameter>...
                                        (Qwen3-Coder, Nemotron 3, Seed-OSS) */
    LOOM_CHAT_FORMAT_GLM,            /* <tool_call>name<arg_key>k</arg_key><arg_value>v</arg_value> */
    LOOM_CHAT_FORMAT_MINIMAX,        /* <minimax:tool_call><invoke name="x"><parameter name="k">v... */
    LOOM_CHAT_FORMAT_KIMI_K2,        /* <|tool_calls_section_begin|><|tool_call_begin|>functions.x:0
                                        <|tool_call_argument_begin|>{args}<|tool_call_end|>... */
    LOOM_CHAT_FORMAT_JSON_ARRAY_TAG, /* a JSON array of calls between tags: <tool_calls>[...]</tool_calls>
                                        (Apriel), <TOOLCALL>[...]</TOOLCALL> (Nemotron Nano 2),
                                        <|tool_call_start|>[...]<|tool_call_end|> (LFM2) */
    LOOM_CHAT_FORMAT_COUNT
} loom_chat_format;

/* Thinking markers. */
typedef enum loom_chat_thinking {
    LOOM_CHAT_THINKING_NONE = 0,     /* the model does not think in text (or we do not know) */
    LOOM_CHAT_THINKING_THINK_TAGS,   /* <think> ... </think> */
    LOOM_CHAT_THINKING_MISTRAL,      /* [THINK] ... [/THINK] */
    LOOM_CHAT_THINKING_COMMAND_R7B,  /* <|START_THINKING|> ... <|END_THINKING|> */
    LOOM_CHAT_THINKING_SEED,         /* <seed:think> ... </seed:think> */
    LOOM_CHAT_THINKING_HARMONY       /* gpt-oss analysis channel (implied by the Harmony format) */
} loom_chat_thinking;

/* A model's output syntax (plain data). */
typedef struct loom_chat_syntax {
    loom_chat_format format;
    loom_chat_thinking thinking;
    /* For LOOM_CHAT_FORMAT_JSON_ARRAY_TAG: the tags (static strings; NULL otherwise). */
    const char *open_tag, *close_tag;
} loom_chat_syntax;

/* Detect the syntax from a chat template's text (the GGUF's tokenizer.chat_template).
 * The rules (documented in docs/chat.md) look for the markers each family's template
 * writes when it renders an assistant message with tool calls or reasoning, most specific
 * first (e.g. Harmony's `<|channel|>`, Mistral's `[TOOL_CALLS]`, DeepSeek's
 * `<｜tool▁calls▁begin｜>`, Granite's `<|tool_call|>`, then the generic `<tool_call>`).
 * Unknown or NULL templates give {PLAIN, NONE}. Pure function. */
loom_chat_syntax loom_chat_detect(const char *template_text, size_t len);

/* Static names ("hermes", "llama3", ...; "think", "harmony", ...); "?" when out of range. */
const char *loom_chat_format_name(loom_chat_format f);
const char *loom_chat_thinking_name(loom_chat_thinking t);
/* The thinking markers of t (static strings; NULL/NULL for NONE and HARMONY). */
void loom_chat_thinking_tags(loom_chat_thinking t, const char **open, const char **close);

/* One complete tool call. Strings are NUL-terminated and owned by the parser; they stay
 * valid until the parser is freed. */
typedef struct loom_chat_tool_call {
    int32_t index;          /* 0, 1, ... in order of appearance in this generation */
    const char *id;         /* the model's own id when it wrote one (Mistral, Command-R),
                               else "call_" + 8 characters from the parser's id generator
                               (Mistral: 9 letters and digits, as its templates require) */
    const char *name;       /* function name */
    const char *arguments;  /* a JSON object, compact ({"city":"Paris"}); "{}" when none */
} loom_chat_tool_call;

/* What one push / finish produced. Pointers are owned by the parser and valid until the
 * next push/finish/free. Lengths are in bytes; texts are not NUL-terminated. */
typedef struct loom_chat_delta {
    const char *content;
    size_t content_len;
    const char *thinking;
    size_t thinking_len;
    const loom_chat_tool_call *calls; /* the calls completed by this push */
    int32_t n_calls;
} loom_chat_delta;

typedef struct loom_chat_parser_params {
    loom_chat_syntax syntax;
    /* The rendered prompt the generation continues (may be NULL). Used to tell whether
     * the output starts inside a thinking block (the template opened <think> itself, as
     * DeepSeek-R1 and some Qwen3 / SmolLM3 renderings do) or after `>>>` (Functionary). */
    const char *prompt;
    size_t prompt_len;
    bool parse_thinking;    /* default true; false: thinking markers are content text */
    bool parse_tools;       /* default true; false: tool-call syntax is content text
                               (e.g. a request without tools) */
    /* Tool definitions as JSON text (the request's `tools` array) or NULL. Used only to
     * type XML-style parameter values (a string parameter stays a string even when it
     * looks like a number). */
    const char *tools_json;
    uint64_t id_seed;       /* seed of the call-id generator (default 0) */
} loom_chat_parser_params;

loom_chat_parser_params loom_chat_parser_default_params(void);

typedef struct loom_chat_parser loom_chat_parser;

/* Create a parser. On failure *out is NULL. Errors: LOOM_ERR_INVALID_ARG (NULL
 * arguments, format out of range), LOOM_ERR_FORMAT (tools_json is not a JSON array),
 * LOOM_ERR_NOMEM. */
loom_status loom_chat_parser_new(const loom_chat_parser_params *params, loom_chat_parser **out,
                                 loom_error *err);
void loom_chat_parser_free(loom_chat_parser *p); /* NULL is a no-op */

/* Feed n more bytes of generated text; *d receives what is now certain. Errors:
 * LOOM_ERR_INVALID_ARG (NULL arguments, push after finish), LOOM_ERR_RANGE (the output
 * exceeds 64 MiB), LOOM_ERR_NOMEM. After an error the parser must be freed. */
loom_status loom_chat_parser_push(loom_chat_parser *p, const char *text, size_t n, loom_chat_delta *d,
                                  loom_error *err);
/* End of generation: everything still held back is resolved (an unfinished call becomes
 * content text). Calling it twice gives an empty delta. */
loom_status loom_chat_parser_finish(loom_chat_parser *p, loom_chat_delta *d, loom_error *err);

/* Totals so far (after finish: of the whole output), owned by the parser, valid until the
 * next push/finish/free: all content, all thinking, all calls. */
void loom_chat_parser_result(const loom_chat_parser *p, loom_chat_delta *all);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_CHAT_H */
