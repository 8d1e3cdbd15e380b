/*
 * toolgram.h (internal) - forcing tool calls: a GBNF grammar, built from the model
 * family's call syntax (loom_chat.h) and the tools' JSON schemas, whose sentences are
 * exactly well-formed calls (OpenAI tool_choice "required" or a named function).
 *
 * The arguments of each tool follow its `function.parameters` schema (the structured-
 * output subset, loom_grammar.h; {"type": "object"} when absent); the markers of the
 * syntax are single tokens when the vocabulary has them as one token (so the model
 * writes the control token it was trained on), literal text otherwise. parallel: one
 * or more calls, else exactly one. close_think: the prompt opened a thinking block
 * that the answer must close first (it is closed at once).
 *
 * Families: hermes (Qwen 2.5/3, Hermes, SmolLM3...), llama3 (JSON), mistral (both
 * forms), deepseek-r1, deepseek-v3.1, granite, functionary v3.1 / v3.2, command-r7b,
 * json-array-tag, kimi-k2, harmony (one call), and the XML styles xml-function
 * (Qwen3-Coder, Seed-OSS), glm and minimax (string parameters as raw text without
 * '<', bounded by maxLength; other values as JSON by their schema). plain is not
 * forced: srv_tool_gbnf returns false with e->status 0, and the caller falls back to
 * "auto". Pure; thread-safe.
 */
#ifndef LOOM_SERVER_TOOLGRAM_H
#define LOOM_SERVER_TOOLGRAM_H

#include <jansson.h>

#include "loom_chat.h"
#include "loom_tokenizer.h"
#include "server/request.h"
#include "server/util.h"

/* The grammar's start rule. */
#define SRV_TOOL_ROOT "loom-tool-root"

/* tmpl: the chat template (tells Mistral's two forms apart), may be NULL; tools: the
 * request's array; only: a function name or NULL (any tool); tok: resolves markers to
 * tokens (may be NULL: literal text). *gbnf receives the grammar text (start rule
 * SRV_TOOL_ROOT). false with e set: 400 (a tool's schema is not supported: names the
 * tool), 500 (OOM), or e->status 0 (the syntax cannot be forced). */
bool srv_tool_gbnf(const loom_chat_syntax *syn, const char *tmpl, const json_t *tools, const char *only,
                   bool parallel, bool close_think, const loom_tokenizer *tok, srv_buf *gbnf, srv_err *e);

/* Whether the prompt's end leaves a thinking block open (its opener after its last closer). */
bool srv_prompt_in_thinking(const loom_chat_syntax *syn, const char *prompt, size_t n);

#endif
