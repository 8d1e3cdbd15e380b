/*
 * chat_internal.h (internal) - pieces shared by the chat output parser's files.
 */
#ifndef LOOM_CHAT_INTERNAL_H
#define LOOM_CHAT_INTERNAL_H

#include <stddef.h>

#include "loom_chat.h"

/* A growable byte string. */
typedef struct chat_str {
    char *p;
    size_t n, cap;
} chat_str;

bool chat_str_add(chat_str *s, const char *x, size_t n);
void chat_str_free(chat_str *s);

/* One parsed call before it is published (owned strings, NUL-terminated). */
typedef struct chat_call {
    char *id;        /* NULL: generate one */
    char *name;
    char *arguments; /* compact JSON object */
} chat_call;

/* A list of parsed calls. */
typedef struct chat_calls {
    chat_call *v;
    int n, cap;
} chat_calls;

void chat_calls_free(chat_calls *c);

/* Context for body parsers: the tools (to type XML parameter values), may be NULL. */
struct json_t;
typedef struct chat_body_ctx {
    const struct json_t *tools;
} chat_body_ctx;

/* Body parsers (calls.c). Each parses one complete tool section body and appends the
 * calls to out; false when the text is not a well-formed call list (nothing appended). */
bool chat_parse_json_calls(const chat_body_ctx *bc, const char *s, size_t n, chat_calls *out);
bool chat_parse_mistral(const chat_body_ctx *bc, const char *s, size_t n, chat_calls *out);
bool chat_parse_deepseek(const chat_body_ctx *bc, const char *s, size_t n, chat_calls *out);
bool chat_parse_name_json(const chat_body_ctx *bc, const char *name, size_t name_len, const char *args,
                          size_t args_len, chat_calls *out);
bool chat_parse_xml_function(const chat_body_ctx *bc, const char *s, size_t n, chat_calls *out);
bool chat_parse_glm(const chat_body_ctx *bc, const char *s, size_t n, chat_calls *out);
bool chat_parse_minimax(const chat_body_ctx *bc, const char *s, size_t n, chat_calls *out);
bool chat_parse_kimi(const chat_body_ctx *bc, const char *s, size_t n, chat_calls *out);
bool chat_parse_python_tag(const chat_body_ctx *bc, const char *s, size_t n, chat_calls *out);

/* End of the JSON value starting at s[0] (after leading whitespace): the index one past
 * its last byte, 0 when it is not complete within n bytes, (size_t)-1 when s cannot start
 * a JSON object/array/string/number/literal. */
size_t chat_json_value_end(const char *s, size_t n);

/* Find needle in hay (memmem); NULL if absent. */
const char *chat_find(const char *hay, size_t n, const char *needle);
/* Length of the longest suffix of s (of n bytes) that is a proper prefix of needle. */
size_t chat_partial_suffix(const char *s, size_t n, const char *needle);

#endif
