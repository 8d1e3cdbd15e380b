/* toolgram.c - grammars that force tool calls in a family's syntax (see toolgram.h). */
#include "server/toolgram.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_grammar.h"

#define DS_CALLS_BEGIN "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_CALLS_END "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DS_CALL_BEGIN "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_CALL_END "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DS_SEP "<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>"

bool srv_prompt_in_thinking(const loom_chat_syntax *syn, const char *prompt, size_t n) {
    const char *open = NULL, *close = NULL;
    loom_chat_thinking_tags(syn->thinking, &open, &close);
    if (!open || !close || !prompt || !n) return false;
    size_t lo = strlen(open), lc = strlen(close);
    const char *last_open = NULL, *last_close = NULL;
    for (size_t i = 0; i < n; i++) {
        if (i + lo <= n && !memcmp(prompt + i, open, lo)) last_open = prompt + i;
        if (i + lc <= n && !memcmp(prompt + i, close, lc)) last_close = prompt + i;
    }
    return last_open && (!last_close || last_close < last_open);
}

/* A GBNF string literal of s. */
static void put_lit(srv_buf *b, const char *s, size_t n) {
    srv_buf_puts(b, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') srv_buf_printf(b, "\\%c", c);
        else if (c == '\n') srv_buf_puts(b, "\\n");
        else if (c == '\r') srv_buf_puts(b, "\\r");
        else if (c == '\t') srv_buf_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7f) srv_buf_printf(b, "\\x%02X", c);
        else srv_buf_append(b, &c, 1);
    }
    srv_buf_puts(b, "\" ");
}

/* A marker: its token when the vocabulary has it as one special token, else text. */
static void put_marker(srv_buf *b, const loom_tokenizer *tok, const char *m) {
    size_t n = strlen(m);
    if (tok) {
        int32_t ids[2];
        int32_t k = 0;
        loom_status st = loom_tokenize(tok, m, n, false, true, ids, 2, &k, NULL);
        if (st == LOOM_OK && k == 1) {
            loom_token_type ty = loom_token_get_type(tok, ids[0]);
            const char *t;
            size_t tl;
            if ((ty == LOOM_TOKEN_CONTROL || ty == LOOM_TOKEN_USER_DEFINED) &&
                loom_token_text(tok, ids[0], &t, &tl) == LOOM_OK && tl == n && !memcmp(t, m, n)) {
                srv_buf_printf(b, "<[%d]> ", (int)ids[0]);
                return;
            }
        }
    }
    put_lit(b, m, n);
}

static bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

/* Copy GBNF text g with every rule name prefixed (literals, classes, token references,
 * repetition bounds and comments copied as they are). */
static void put_prefixed(srv_buf *b, const char *g, size_t n, const char *prefix) {
    size_t i = 0;
    while (i < n) {
        char c = g[i];
        if (c == '"' || c == '[') {
            char end = c == '"' ? '"' : ']';
            size_t j = i + 1;
            while (j < n && g[j] != end) j += g[j] == '\\' && j + 1 < n ? 2 : 1;
            j = j < n ? j + 1 : n;
            srv_buf_append(b, g + i, j - i);
            i = j;
        } else if (c == '<' || c == '{' || c == '#') {
            char end = c == '<' ? '>' : c == '{' ? '}' : '\n';
            size_t j = i + 1;
            while (j < n && g[j] != end) j++;
            j = j < n ? j + 1 : n;
            srv_buf_append(b, g + i, j - i);
            i = j;
        } else if (is_name_char(c)) {
            size_t j = i;
            while (j < n && is_name_char(g[j])) j++;
            srv_buf_puts(b, prefix);
            srv_buf_append(b, g + i, j - i);
            i = j;
        } else {
            srv_buf_append(b, &c, 1);
            i++;
        }
    }
    srv_buf_puts(b, "\n");
}

/* How a family writes one call. */
typedef enum {
    W_JSON_NAME_ARGS,   /* {"name": N, "arguments": A} */
    W_JSON_NAME_PARAMS, /* {"name": N, "parameters": A} (Llama 3) */
    W_JSON_TOOL_NAME,   /* {"tool_name": N, "parameters": A} (Command-R7B) */
    W_ARGS,             /* the arguments only; the name is written by the wrapper */
    W_XML               /* one parameter per element (xml-function, glm, minimax) */
} what;

/* The schema rule of tool i (prefix "t<i>-"): a call object or the arguments. */
static bool put_tool_rules(srv_buf *b, int i, const char *name, const json_t *params, what w, srv_err *e) {
    json_t *schema;
    if (w == W_ARGS) {
        schema = json_incref((json_t *)params);
    } else {
        const char *nk = w == W_JSON_TOOL_NAME ? "tool_name" : "name";
        const char *ak = w == W_JSON_NAME_ARGS ? "arguments" : "parameters";
        schema = json_pack("{s:s,s:{s:{s:s},s:O},s:[s,s]}", "type", "object", "properties", nk, "const", name, ak,
                           params, "required", nk, ak);
    }
    char *text = schema ? json_dumps(schema, JSON_COMPACT) : NULL;
    json_decref(schema);
    if (!text) {
        srv_err_set(e, 500, "out of memory");
        return false;
    }
    char *g = NULL;
    size_t gl = 0;
    loom_error err = {0};
    loom_status st = loom_json_schema_to_gbnf(text, strlen(text), &g, &gl, &err);
    free(text);
    if (st) {
        srv_err_set(e, st == LOOM_ERR_NOMEM ? 500 : 400, "tools: the parameters of \"%.128s\" cannot be enforced: %s",
                    name, err.msg);
        return false;
    }
    char prefix[24];
    snprintf(prefix, sizeof prefix, "t%d-", i);
    put_prefixed(b, g, gl, prefix);
    free(g);
    return true;
}

/* Whether a property's value is written as raw text in the XML styles (the parser
 * keeps it a string): type "string", or an enum of strings only. */
static bool raw_text_value(const json_t *ps) {
    const json_t *ty = json_object_get(ps, "type");
    if (json_is_string(ty)) return !strcmp(json_string_value(ty), "string");
    const json_t *en = json_object_get(ps, "enum");
    if (!json_is_array(en) || !json_array_size(en) || ty) return false;
    for (size_t i = 0; i < json_array_size(en); i++)
        if (!json_is_string(json_array_get(en, i))) return false;
    return true;
}

/* One call in an XML style: loom-tool-call-<n> (and the rules of its values). Values
 * of string parameters are raw text without '<' (an enum: its values; maxLength and
 * minLength bound it); others follow the property's schema as JSON. Properties come in
 * the order of "properties", the required ones mandatory, the others optional. */
static bool put_xml_call(srv_buf *b, const loom_chat_syntax *syn, const char *tmpl, const loom_tokenizer *tok, int i,
                         int n, const char *name, const json_t *params, srv_err *e) {
    const json_t *props = json_object_get(params, "properties");
    const json_t *req = json_object_get(params, "required");
    const char *key;
    const json_t *ps;
    int j = 0;
    /* the value rules */
    json_object_foreach((json_t *)props, key, ps) {
        srv_buf_printf(b, "t%d-v%d ::= ", i, j);
        if (raw_text_value(ps)) {
            const json_t *en = json_object_get(ps, "enum");
            if (json_is_array(en) && json_array_size(en)) {
                for (size_t k = 0; k < json_array_size(en); k++) {
                    if (k) srv_buf_puts(b, "| ");
                    const char *v = json_string_value(json_array_get(en, k));
                    put_lit(b, v, strlen(v));
                }
            } else {
                const json_t *mx = json_object_get(ps, "maxLength"), *mn = json_object_get(ps, "minLength");
                long lo = json_is_integer(mn) && json_integer_value(mn) > 0 ? (long)json_integer_value(mn) : 0;
                long hi = json_is_integer(mx) && json_integer_value(mx) >= 0 ? (long)json_integer_value(mx) : -1;
                if (lo > 2000) lo = 2000;
                if (hi > 2000) hi = -1;
                if (hi >= 0 && hi < lo) hi = lo;
                if (hi >= 0) srv_buf_printf(b, "[^<]{%ld,%ld}", lo, hi);
                else if (lo) srv_buf_printf(b, "[^<]{%ld,}", lo);
                else srv_buf_puts(b, "[^<]*");
            }
            srv_buf_puts(b, "\n");
        } else {
            char pre[40];
            snprintf(pre, sizeof pre, "t%d-p%d-", i, j);
            srv_buf_printf(b, "%sroot\n", pre);
            char *text = json_dumps(ps, JSON_COMPACT | JSON_ENCODE_ANY);
            char *g = NULL;
            size_t gl = 0;
            loom_error err = {0};
            loom_status st = text ? loom_json_schema_to_gbnf(text, strlen(text), &g, &gl, &err) : LOOM_ERR_NOMEM;
            free(text);
            if (st) {
                srv_err_set(e, st == LOOM_ERR_NOMEM ? 500 : 400,
                            "tools: the parameters of \"%.128s\" cannot be enforced: %s", name, err.msg);
                return false;
            }
            put_prefixed(b, g, gl, pre);
            free(g);
        }
        j++;
    }
    /* the call */
    size_t nl = strlen(name);
    srv_buf_printf(b, "loom-tool-call-%d ::= ", n);
    const char *tag = tmpl && strstr(tmpl, "<seed:tool_call>") ? "seed:tool_call" : "tool_call";
    char t1[40], t2[40];
    snprintf(t1, sizeof t1, "<%s>", tag);
    snprintf(t2, sizeof t2, "</%s>", tag);
    if (syn->format == LOOM_CHAT_FORMAT_XML_FUNCTION) {
        put_marker(b, tok, t1);
        put_lit(b, "\n<function=", 11);
        put_lit(b, name, nl);
        put_lit(b, ">\n", 2);
    } else if (syn->format == LOOM_CHAT_FORMAT_GLM) {
        put_marker(b, tok, "<tool_call>");
        put_lit(b, name, nl);
        put_lit(b, "\n", 1);
    } else {
        put_marker(b, tok, "<minimax:tool_call>");
        put_lit(b, "\n<invoke name=\"", 15);
        put_lit(b, name, nl);
        put_lit(b, "\">\n", 3);
    }
    j = 0;
    json_object_foreach((json_t *)props, key, ps) {
        bool required = false;
        for (size_t k = 0; k < json_array_size(req); k++)
            if (json_is_string(json_array_get(req, k)) && !strcmp(json_string_value(json_array_get(req, k)), key))
                required = true;
        size_t kl = strlen(key);
        if (!required) srv_buf_puts(b, "( ");
        if (syn->format == LOOM_CHAT_FORMAT_XML_FUNCTION) {
            put_lit(b, "<parameter=", 11);
            put_lit(b, key, kl);
            put_lit(b, ">\n", 2);
            srv_buf_printf(b, "t%d-v%d ", i, j);
            put_lit(b, "\n</parameter>\n", 14);
        } else if (syn->format == LOOM_CHAT_FORMAT_GLM) {
            put_lit(b, "<arg_key>", 9);
            put_lit(b, key, kl);
            put_lit(b, "</arg_key>\n<arg_value>", 22);
            srv_buf_printf(b, "t%d-v%d ", i, j);
            put_lit(b, "</arg_value>\n", 13);
        } else {
            put_lit(b, "<parameter name=\"", 17);
            put_lit(b, key, kl);
            put_lit(b, "\">", 2);
            srv_buf_printf(b, "t%d-v%d ", i, j);
            put_lit(b, "</parameter>\n", 13);
        }
        if (!required) srv_buf_puts(b, ")? ");
        j++;
    }
    if (syn->format == LOOM_CHAT_FORMAT_XML_FUNCTION) {
        put_lit(b, "</function>\n", 12);
        put_marker(b, tok, t2);
    } else if (syn->format == LOOM_CHAT_FORMAT_GLM) {
        put_marker(b, tok, "</tool_call>");
    } else {
        put_lit(b, "</invoke>\n", 10);
        put_marker(b, tok, "</minimax:tool_call>");
    }
    srv_buf_puts(b, "\n");
    return true;
}

bool srv_tool_gbnf(const loom_chat_syntax *syn, const char *tmpl, const json_t *tools, const char *only,
                   bool parallel, bool close_think, const loom_tokenizer *tok, srv_buf *b, srv_err *e) {
    what w;
    switch (syn->format) {
    case LOOM_CHAT_FORMAT_HERMES:
    case LOOM_CHAT_FORMAT_GRANITE:
    case LOOM_CHAT_FORMAT_JSON_ARRAY_TAG: w = W_JSON_NAME_ARGS; break;
    case LOOM_CHAT_FORMAT_MISTRAL: w = tmpl && strstr(tmpl, "[ARGS]") ? W_ARGS : W_JSON_NAME_ARGS; break;
    case LOOM_CHAT_FORMAT_LLAMA3: w = W_JSON_NAME_PARAMS; break;
    case LOOM_CHAT_FORMAT_COMMAND_R7B: w = W_JSON_TOOL_NAME; break;
    case LOOM_CHAT_FORMAT_DEEPSEEK_R1:
    case LOOM_CHAT_FORMAT_DEEPSEEK_V3_1:
    case LOOM_CHAT_FORMAT_FUNCTIONARY_V3_1:
    case LOOM_CHAT_FORMAT_FUNCTIONARY_V3_2:
    case LOOM_CHAT_FORMAT_KIMI_K2:
    case LOOM_CHAT_FORMAT_HARMONY: w = W_ARGS; break;
    case LOOM_CHAT_FORMAT_XML_FUNCTION:
    case LOOM_CHAT_FORMAT_GLM:
    case LOOM_CHAT_FORMAT_MINIMAX: w = W_XML; break;
    default: e->status = 0; return false; /* plain: not forced */
    }
    if (syn->format == LOOM_CHAT_FORMAT_HARMONY) parallel = false; /* one call per message */
    if (syn->format == LOOM_CHAT_FORMAT_JSON_ARRAY_TAG && (!syn->open_tag || !syn->close_tag)) {
        e->status = 0;
        return false;
    }
    srv_buf_clear(b);
    /* one rule per tool: loom-tool-call-<i> */
    int n_used = 0;
    for (size_t i = 0; i < json_array_size(tools); i++) {
        const json_t *f = json_object_get(json_array_get(tools, i), "function");
        const json_t *nm = json_object_get(f, "name");
        if (!json_is_string(nm) || !json_string_length(nm)) continue;
        const char *name = json_string_value(nm);
        if (only && strcmp(only, name)) continue;
        const json_t *params = json_object_get(f, "parameters");
        json_t *dflt = NULL;
        if (!json_is_object(params)) params = dflt = json_pack("{s:s}", "type", "object");
        if (w == W_XML) {
            bool ok = params && put_xml_call(b, syn, tmpl, tok, (int)i, n_used, name, params, e);
            json_decref(dflt);
            if (!ok) {
                if (!params) srv_err_set(e, 500, "out of memory");
                return false;
            }
            n_used++;
            continue;
        }
        bool ok = params && put_tool_rules(b, (int)i, name, params, w, e);
        json_decref(dflt);
        if (!ok) {
            if (!params) srv_err_set(e, 500, "out of memory");
            return false;
        }
        srv_buf_printf(b, "loom-tool-call-%d ::= ", n_used);
        size_t nl = strlen(name);
        char r[32];
        snprintf(r, sizeof r, "t%d-root ", (int)i);
        switch (syn->format) {
        case LOOM_CHAT_FORMAT_HERMES:
            put_marker(b, tok, "<tool_call>");
            put_lit(b, "\n", 1);
            srv_buf_puts(b, r);
            put_lit(b, "\n", 1);
            put_marker(b, tok, "</tool_call>");
            break;
        case LOOM_CHAT_FORMAT_MISTRAL:
            if (w == W_ARGS) {
                put_marker(b, tok, "[TOOL_CALLS]");
                put_lit(b, name, nl);
                put_marker(b, tok, "[ARGS]");
            }
            srv_buf_puts(b, r);
            break;
        case LOOM_CHAT_FORMAT_DEEPSEEK_R1:
            put_marker(b, tok, DS_CALL_BEGIN);
            put_lit(b, "function", 8);
            put_marker(b, tok, DS_SEP);
            put_lit(b, name, nl);
            put_lit(b, "\n```json\n", 9);
            srv_buf_puts(b, r);
            put_lit(b, "\n```", 4);
            put_marker(b, tok, DS_CALL_END);
            break;
        case LOOM_CHAT_FORMAT_DEEPSEEK_V3_1:
            put_marker(b, tok, DS_CALL_BEGIN);
            put_lit(b, name, nl);
            put_marker(b, tok, DS_SEP);
            srv_buf_puts(b, r);
            put_marker(b, tok, DS_CALL_END);
            break;
        case LOOM_CHAT_FORMAT_FUNCTIONARY_V3_1:
            put_lit(b, "<function=", 10);
            put_lit(b, name, nl);
            put_lit(b, ">", 1);
            srv_buf_puts(b, r);
            put_lit(b, "</function>", 11);
            break;
        case LOOM_CHAT_FORMAT_FUNCTIONARY_V3_2:
            put_lit(b, name, nl);
            put_lit(b, "\n", 1);
            srv_buf_puts(b, r);
            break;
        case LOOM_CHAT_FORMAT_KIMI_K2:
            put_marker(b, tok, "<|tool_call_begin|>");
            put_lit(b, "functions.", 10);
            put_lit(b, name, nl);
            srv_buf_puts(b, "\":\" [0-9] ");
            put_marker(b, tok, "<|tool_call_argument_begin|>");
            srv_buf_puts(b, r);
            put_marker(b, tok, "<|tool_call_end|>");
            break;
        case LOOM_CHAT_FORMAT_HARMONY:
            put_marker(b, tok, "<|channel|>");
            put_lit(b, "commentary to=functions.", 24);
            put_lit(b, name, nl);
            put_lit(b, " ", 1);
            put_marker(b, tok, "<|constrain|>");
            put_lit(b, "json", 4);
            put_marker(b, tok, "<|message|>");
            srv_buf_puts(b, r);
            break;
        default: /* the JSON forms: granite, llama3, command-r7b, json-array-tag */
            srv_buf_puts(b, r);
            break;
        }
        srv_buf_puts(b, "\n");
        n_used++;
    }
    if (!n_used) {
        srv_err_set(e, 400, "\"tool_choice\": no usable tool%s%s", only ? " named " : "", only ? only : "");
        return false;
    }
    srv_buf_puts(b, "loom-tool-one ::= ");
    for (int i = 0; i < n_used; i++) srv_buf_printf(b, "%sloom-tool-call-%d", i ? " | " : "", i);
    srv_buf_puts(b, "\n");
    /* the list: opener, calls with separators, closer */
    const char *sep_lit = "\n";
    bool array = false;
    const char *open = NULL, *close = NULL;
    switch (syn->format) {
    case LOOM_CHAT_FORMAT_MISTRAL:
        if (w != W_ARGS) open = "[TOOL_CALLS]", array = true;
        else sep_lit = "";
        break;
    case LOOM_CHAT_FORMAT_GRANITE: open = "<|tool_call|>", array = true; break;
    case LOOM_CHAT_FORMAT_JSON_ARRAY_TAG: open = syn->open_tag, close = syn->close_tag, array = true; break;
    case LOOM_CHAT_FORMAT_COMMAND_R7B: open = "<|START_ACTION|>", close = "<|END_ACTION|>", array = true; break;
    case LOOM_CHAT_FORMAT_DEEPSEEK_R1:
    case LOOM_CHAT_FORMAT_DEEPSEEK_V3_1: open = DS_CALLS_BEGIN, close = DS_CALLS_END, sep_lit = ""; break;
    case LOOM_CHAT_FORMAT_KIMI_K2:
        open = "<|tool_calls_section_begin|>", close = "<|tool_calls_section_end|>", sep_lit = "";
        break;
    case LOOM_CHAT_FORMAT_FUNCTIONARY_V3_1: sep_lit = ""; break;
    case LOOM_CHAT_FORMAT_FUNCTIONARY_V3_2: sep_lit = ">>>"; break;
    case LOOM_CHAT_FORMAT_LLAMA3: parallel = false; break; /* a bare JSON call: one */
    default: break;
    }
    srv_buf_puts(b, SRV_TOOL_ROOT " ::= ");
    if (close_think) {
        const char *to = NULL, *tc = NULL;
        loom_chat_thinking_tags(syn->thinking, &to, &tc);
        if (tc) {
            put_marker(b, tok, tc);
            put_lit(b, "\n\n", 2);
        }
    }
    if (open) put_marker(b, tok, open);
    if (array) put_lit(b, "[", 1);
    srv_buf_puts(b, "loom-tool-one ");
    if (parallel) {
        srv_buf_puts(b, "( ");
        if (array) put_lit(b, ", ", 2);
        else if (*sep_lit) put_marker(b, tok, sep_lit);
        srv_buf_puts(b, "loom-tool-one )* ");
    }
    if (array) put_lit(b, "]", 1);
    if (close) put_marker(b, tok, close);
    srv_buf_puts(b, "\n");
    if (b->oom) {
        srv_err_set(e, 500, "out of memory");
        return false;
    }
    return true;
}
