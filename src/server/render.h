/*
 * render.h (internal) - a request's prompt as token ids: the chat template applied
 * to the conversation, then tokenized so that special tokens are recognised only
 * in the template's own text, never inside message content (a user who types
 * "<|im_end|>" gets those characters, not a control token).
 *
 * The conversation is rendered by the Jinja engine (loom_template.h) exactly as
 * transformers' apply_chat_template would, with the model's chat template (compiled
 * once per loaded model), a manifest's, or the request's; a chat with a model that
 * has none uses the engine's fallback (the contents joined by "\n"), and a generate
 * request without a template is its prompt as it is (Ollama's "{{ .Prompt }}").
 * A conversation ending with a non-empty assistant message is continued: the text is
 * cut after that message's content.
 */
#ifndef LOOM_SERVER_RENDER_H
#define LOOM_SERVER_RENDER_H

#include "loom_model.h"
#include "server/request.h"

typedef struct srv_render srv_render;

/* Per loaded model (immutable after creation; thread-safe to use). Reads
 * tokenizer.chat_template and the FIM token ids from the GGUF. NULL on OOM. */
srv_render *srv_render_new(const loom_gguf *g, const loom_tokenizer *tok);
void srv_render_free(srv_render *rd);
/* The GGUF's chat template (NULL if none). */
const char *srv_render_template(const srv_render *rd);
/* Whether the model has FIM tokens (generate's "suffix"). */
bool srv_render_can_insert(const srv_render *rd);

/* Prompt tokens for r (generate, chat, or their OpenAI forms).
 *   template_text: the template to use (request > model manifest > GGUF), NULL = none;
 *   default_system: the model's system message (Ollama SYSTEM layer), NULL = none;
 *   drop: number of oldest non-system messages left out (truncation).
 * *toks is malloc'ed (free with free()). False with e set (400 for a template the
 * fallback cannot render, a Go template, FIM without FIM tokens; 500 on OOM).
 * *n_messages receives the number of messages rendered (chat). */
bool srv_render_prompt(const srv_render *rd, const srv_gen_req *r, const char *template_text,
                       const char *default_system, int drop, int32_t **toks, int *n, int *n_messages,
                       srv_err *e);

/* True if text looks like a Go template ({{ .Prompt }}, {{- if .System }} ...). */
bool srv_is_go_template(const char *text);
/* Whether a chat template renders thinking (enable_thinking, <think>, ...). */
bool srv_template_thinks(const char *text);

#endif
