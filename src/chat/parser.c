/*
 * parser.c - the streaming chat-output parser (see loom_chat.h).
 *
 * The unconsumed input sits in p->in. A state machine moves text from it into the
 * delta's content / thinking strings or into tool-call sections:
 *   CONTENT  text until a trigger (thinking opener, tool-section opener, a marker to strip);
 *            a suffix that may begin a trigger is held back.
 *   THINK    thinking text until the closer (partial closers held back, trailing
 *            whitespace dropped).
 *   SECTION  a tool section, kept verbatim (opener included) until it is complete: its
 *            closing marker, or for syntaxes without one the end of its JSON value, the
 *            next `>>>` (Functionary) or the end of the output. Then it is parsed; a section
 *            that does not parse goes out as content, verbatim.
 *   H_HEADER / H_BODY  gpt-oss Harmony messages: header up to <|message|>, then a body of
 *            the channel's kind (analysis = thinking, final / commentary = content,
 *            to=functions.X = a call) up to <|end|>, <|call|> or <|return|>.
 */
#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "chat_internal.h"

#define MAX_OUTPUT ((size_t)64 << 20)

typedef enum { ST_CONTENT, ST_THINK, ST_SECTION, ST_H_HEADER, ST_H_BODY } state;

typedef enum {
    SEC_JSON,        /* JSON call(s) between markers, or the JSON value after the opener */
    SEC_MISTRAL,
    SEC_DEEPSEEK,
    SEC_FUNC_V31,    /* <function=NAME>{args}</function> */
    SEC_FUNC_V32,    /* NAME\n{args} up to the next >>> */
    SEC_XML,
    SEC_GLM,
    SEC_MINIMAX,
    SEC_KIMI,
    SEC_PYTHON_TAG
} sec_kind;

typedef enum { TR_THINK, TR_STRIP, TR_SECTION } trig_kind;

typedef struct trigger {
    const char *text;
    trig_kind kind;
    sec_kind sec;
    const char *close; /* SECTION: closing marker, NULL = by JSON end / output end */
} trigger;

#define MAX_TRIG 8

struct loom_chat_parser {
    loom_chat_parser_params pp;
    json_t *tools;
    const char *think_open, *think_close;
    trigger trig[MAX_TRIG];
    int n_trig;

    chat_str in;
    chat_str content, thinking;         /* this delta */
    chat_str all_content, all_thinking; /* totals */
    chat_calls calls;
    loom_chat_tool_call *pub;
    int pub_cap;
    int delta_first;

    state st;
    bool skip_ws;        /* drop leading whitespace of the next content */
    bool think_started;  /* non-whitespace thinking emitted in this block */
    chat_str think_ws;   /* trailing whitespace of thinking, held */
    bool content_seen;   /* non-whitespace content emitted (Llama 3 calls only at the start) */

    /* SECTION */
    const trigger *sec;
    size_t sec_open_len;

    /* Harmony */
    int h_kind;          /* 0 content, 1 thinking, 2 call */
    chat_str h_name, h_body;

    bool finished;
    size_t total;
};

static const char *const H_ENDS[] = {"<|end|>", "<|call|>", "<|return|>", "<|start|>", "<|channel|>"};

loom_chat_parser_params loom_chat_parser_default_params(void) {
    loom_chat_parser_params p;
    memset(&p, 0, sizeof p);
    p.parse_thinking = true;
    p.parse_tools = true;
    return p;
}

static void add_trigger(loom_chat_parser *p, const char *text, trig_kind k, sec_kind s, const char *close) {
    if (p->n_trig < MAX_TRIG) p->trig[p->n_trig++] = (trigger){text, k, s, close};
}

#define DS_CALLS_BEGIN "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_CALLS_END "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DS_CALL_BEGIN "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_CALL_END "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>"

static void setup_triggers(loom_chat_parser *p) {
    if (p->pp.parse_thinking && p->think_open) add_trigger(p, p->think_open, TR_THINK, SEC_JSON, NULL);
    if (!p->pp.parse_tools) return;
    const loom_chat_syntax *s = &p->pp.syntax;
    switch (s->format) {
    case LOOM_CHAT_FORMAT_HERMES:
        add_trigger(p, "<tool_call>", TR_SECTION, SEC_JSON, "</tool_call>");
        break;
    case LOOM_CHAT_FORMAT_LLAMA3:
    case LOOM_CHAT_FORMAT_FUNCTIONARY_V3_1:
        add_trigger(p, "<|python_tag|>", TR_SECTION, SEC_PYTHON_TAG, NULL);
        if (s->format == LOOM_CHAT_FORMAT_FUNCTIONARY_V3_1)
            add_trigger(p, "<function=", TR_SECTION, SEC_FUNC_V31, "</function>");
        break;
    case LOOM_CHAT_FORMAT_MISTRAL:
        add_trigger(p, "[TOOL_CALLS]", TR_SECTION, SEC_MISTRAL, NULL);
        break;
    case LOOM_CHAT_FORMAT_DEEPSEEK_R1:
    case LOOM_CHAT_FORMAT_DEEPSEEK_V3_1:
        add_trigger(p, DS_CALLS_BEGIN, TR_SECTION, SEC_DEEPSEEK, DS_CALLS_END);
        add_trigger(p, DS_CALL_BEGIN, TR_SECTION, SEC_DEEPSEEK, DS_CALL_END);
        break;
    case LOOM_CHAT_FORMAT_GRANITE:
        add_trigger(p, "<|tool_call|>", TR_SECTION, SEC_JSON, NULL);
        add_trigger(p, "<response>", TR_STRIP, SEC_JSON, NULL);
        add_trigger(p, "</response>", TR_STRIP, SEC_JSON, NULL);
        break;
    case LOOM_CHAT_FORMAT_FUNCTIONARY_V3_2:
        add_trigger(p, ">>>", TR_SECTION, SEC_FUNC_V32, NULL);
        break;
    case LOOM_CHAT_FORMAT_COMMAND_R7B:
        add_trigger(p, "<|START_ACTION|>", TR_SECTION, SEC_JSON, "<|END_ACTION|>");
        add_trigger(p, "<|START_RESPONSE|>", TR_STRIP, SEC_JSON, NULL);
        add_trigger(p, "<|END_RESPONSE|>", TR_STRIP, SEC_JSON, NULL);
        break;
    case LOOM_CHAT_FORMAT_XML_FUNCTION:
        add_trigger(p, "<tool_call>", TR_SECTION, SEC_XML, "</tool_call>");
        add_trigger(p, "<seed:tool_call>", TR_SECTION, SEC_XML, "</seed:tool_call>");
        break;
    case LOOM_CHAT_FORMAT_GLM:
        add_trigger(p, "<tool_call>", TR_SECTION, SEC_GLM, "</tool_call>");
        break;
    case LOOM_CHAT_FORMAT_MINIMAX:
        add_trigger(p, "<minimax:tool_call>", TR_SECTION, SEC_MINIMAX, "</minimax:tool_call>");
        break;
    case LOOM_CHAT_FORMAT_KIMI_K2:
        add_trigger(p, "<|tool_calls_section_begin|>", TR_SECTION, SEC_KIMI, "<|tool_calls_section_end|>");
        break;
    case LOOM_CHAT_FORMAT_JSON_ARRAY_TAG:
        if (s->open_tag && s->close_tag) add_trigger(p, s->open_tag, TR_SECTION, SEC_JSON, s->close_tag);
        break;
    default:
        break;
    }
}

/* Does the prompt leave a thinking block open (opener after the last closer)? */
static bool prompt_opens(const char *prompt, size_t n, const char *open, const char *close) {
    if (!prompt || !open) return false;
    const char *last_open = NULL, *last_close = NULL;
    for (const char *q = prompt; (q = chat_find(q, (size_t)(prompt + n - q), open)); q++) last_open = q;
    if (close)
        for (const char *q = prompt; (q = chat_find(q, (size_t)(prompt + n - q), close)); q++) last_close = q;
    return last_open && (!last_close || last_close < last_open);
}

static const trigger FUNC_V32_START = {">>>", TR_SECTION, SEC_FUNC_V32, NULL};

loom_status loom_chat_parser_new(const loom_chat_parser_params *params, loom_chat_parser **out,
                                 loom_error *err) {
    if (out) *out = NULL;
    if (!params || !out) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_chat_parser_new: NULL argument");
    if ((unsigned)params->syntax.format >= LOOM_CHAT_FORMAT_COUNT)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_chat_parser_new: format %d out of range",
                              (int)params->syntax.format);
    loom_chat_parser *p = calloc(1, sizeof *p);
    if (!p) return loom_error_set(err, LOOM_ERR_NOMEM, "loom_chat_parser_new: out of memory");
    p->pp = *params;
    p->pp.prompt = NULL;
    if (params->tools_json) {
        json_error_t je;
        p->tools = json_loads(params->tools_json, 0, &je);
        if (!json_is_array(p->tools)) {
            json_decref(p->tools);
            free(p);
            return loom_error_set(err, LOOM_ERR_FORMAT, "loom_chat_parser_new: tools is not a JSON array (%s)",
                                  je.text[0] ? je.text : "wrong type");
        }
    }
    if (!chat_str_add(&p->in, "", 0)) { /* p->in.p is never NULL */
        loom_chat_parser_free(p);
        return loom_error_set(err, LOOM_ERR_NOMEM, "loom_chat_parser_new: out of memory");
    }
    loom_chat_thinking_tags(params->syntax.thinking, &p->think_open, &p->think_close);
    setup_triggers(p);
    if (params->syntax.format == LOOM_CHAT_FORMAT_HARMONY && params->parse_tools) {
        p->st = ST_H_HEADER;
    } else if (p->pp.parse_thinking && p->think_open &&
               prompt_opens(params->prompt, params->prompt_len, p->think_open, p->think_close)) {
        p->st = ST_THINK;
    } else if (params->syntax.format == LOOM_CHAT_FORMAT_FUNCTIONARY_V3_2 && params->parse_tools &&
               params->prompt && params->prompt_len >= 3 &&
               !memcmp(params->prompt + params->prompt_len - 3, ">>>", 3)) {
        p->st = ST_SECTION;
        p->sec = &FUNC_V32_START;
        p->sec_open_len = 0;
    }
    *out = p;
    return LOOM_OK;
}

void loom_chat_parser_free(loom_chat_parser *p) {
    if (!p) return;
    json_decref(p->tools);
    chat_str_free(&p->in);
    chat_str_free(&p->content);
    chat_str_free(&p->thinking);
    chat_str_free(&p->all_content);
    chat_str_free(&p->all_thinking);
    chat_str_free(&p->think_ws);
    chat_str_free(&p->h_name);
    chat_str_free(&p->h_body);
    chat_calls_free(&p->calls);
    free(p->pub);
    free(p);
}

/* ------------------------------------------------------------------ emitting */

static bool is_ws(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

static bool emit_content(loom_chat_parser *p, const char *s, size_t n) {
    if (p->skip_ws) {
        while (n && (is_ws(*s) || (*s == ';' && p->pp.syntax.format == LOOM_CHAT_FORMAT_LLAMA3))) s++, n--;
        if (!n) return true;
        p->skip_ws = false;
    }
    if (!n) return true;
    for (size_t i = 0; i < n && !p->content_seen; i++)
        if (!is_ws(s[i])) p->content_seen = true;
    return chat_str_add(&p->content, s, n) && chat_str_add(&p->all_content, s, n);
}

static bool emit_thinking(loom_chat_parser *p, const char *s, size_t n) {
    if (!p->think_started) {
        while (n && is_ws(*s)) s++, n--;
        if (!n) return true;
        p->think_started = true;
    }
    /* trailing whitespace is held until more thinking follows */
    size_t k = n;
    while (k && is_ws(s[k - 1])) k--;
    if (k) {
        if (p->think_ws.n &&
            (!chat_str_add(&p->thinking, p->think_ws.p, p->think_ws.n) ||
             !chat_str_add(&p->all_thinking, p->think_ws.p, p->think_ws.n)))
            return false;
        p->think_ws.n = 0;
        if (!chat_str_add(&p->thinking, s, k) || !chat_str_add(&p->all_thinking, s, k)) return false;
    }
    return chat_str_add(&p->think_ws, s + k, n - k);
}

static void end_thinking(loom_chat_parser *p) {
    p->think_ws.n = 0;
    p->think_started = false;
    p->skip_ws = true;
}

static void consume(loom_chat_parser *p, size_t k) {
    memmove(p->in.p, p->in.p + k, p->in.n - k);
    p->in.n -= k;
    if (p->in.p) p->in.p[p->in.n] = '\0';
}

/* Publish the calls parsed into tmp (ids generated where the model wrote none). */
static bool publish(loom_chat_parser *p, chat_calls *tmp) {
    for (int i = 0; i < tmp->n; i++) {
        chat_call c = tmp->v[i];
        if (!c.id) {
            /* splitmix64 over (seed, index): "call_" + 8 of [a-z0-9] */
            uint64_t z = p->pp.id_seed + 0x9E3779B97F4A7C15ull * (uint64_t)(p->calls.n + 1);
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            z ^= z >> 31;
            /* Mistral's templates require ids of exactly 9 letters and digits (the round
             * trip renders them back): those get 9 of [a-zA-Z0-9] */
            bool mistral = p->pp.syntax.format == LOOM_CHAT_FORMAT_MISTRAL;
            char id[16] = "call_";
            int at = mistral ? 0 : 5, len = mistral ? 9 : 8;
            const char *alpha = mistral ? "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                        : "abcdefghijklmnopqrstuvwxyz0123456789";
            uint64_t base = mistral ? 62 : 36;
            for (int k = 0; k < len; k++, z /= base) id[at + k] = alpha[z % base];
            id[at + len] = '\0';
            size_t idn = (size_t)(at + len) + 1;
            c.id = malloc(idn);
            if (!c.id) return false;
            memcpy(c.id, id, idn);
        }
        if (p->calls.n == p->calls.cap) {
            int cap = p->calls.cap ? 2 * p->calls.cap : 4;
            chat_call *v = realloc(p->calls.v, (size_t)cap * sizeof *v);
            if (!v) { free(c.id); return false; }
            p->calls.v = v;
            p->calls.cap = cap;
        }
        p->calls.v[p->calls.n++] = c;
        tmp->v[i].id = tmp->v[i].name = tmp->v[i].arguments = NULL;
    }
    tmp->n = 0;
    p->skip_ws = true;
    return true;
}

static bool parse_section(loom_chat_parser *p, const trigger *t, const char *body, size_t n, chat_calls *out) {
    chat_body_ctx bc = {p->tools};
    switch (t->sec) {
    case SEC_JSON: return chat_parse_json_calls(&bc, body, n, out);
    case SEC_MISTRAL: return chat_parse_mistral(&bc, body, n, out);
    case SEC_DEEPSEEK: {
        /* a section opened by a single call's marker: put the marker back */
        if (!strcmp(t->text, DS_CALL_BEGIN)) {
            chat_str tmp = {0};
            bool ok = chat_str_add(&tmp, DS_CALL_BEGIN, strlen(DS_CALL_BEGIN)) && chat_str_add(&tmp, body, n) &&
                      chat_str_add(&tmp, DS_CALL_END, strlen(DS_CALL_END)) &&
                      chat_parse_deepseek(&bc, tmp.p, tmp.n, out);
            chat_str_free(&tmp);
            return ok;
        }
        return chat_parse_deepseek(&bc, body, n, out);
    }
    case SEC_FUNC_V31: {
        const char *gt = memchr(body, '>', n);
        if (!gt) return false;
        return chat_parse_name_json(&bc, body, (size_t)(gt - body), gt + 1, (size_t)(body + n - gt - 1), out);
    }
    case SEC_FUNC_V32: {
        const char *nl = memchr(body, '\n', n);
        if (!nl) return false;
        return chat_parse_name_json(&bc, body, (size_t)(nl - body), nl + 1, (size_t)(body + n - nl - 1), out);
    }
    case SEC_XML: return chat_parse_xml_function(&bc, body, n, out);
    case SEC_GLM: return chat_parse_glm(&bc, body, n, out);
    case SEC_MINIMAX: return chat_parse_minimax(&bc, body, n, out);
    case SEC_KIMI: return chat_parse_kimi(&bc, body, n, out);
    case SEC_PYTHON_TAG: return chat_parse_python_tag(&bc, body, n, out);
    }
    return false;
}

/* ------------------------------------------------------------------ states */

/* CONTENT: returns true when it made progress. */
static int step_content(loom_chat_parser *p, bool final) {
    const char *s = p->in.p;
    size_t n = p->in.n;
    if (!n) return 0;
    /* Llama 3: a call is a JSON object at the very start of the answer */
    if (p->pp.parse_tools && p->pp.syntax.format == LOOM_CHAT_FORMAT_LLAMA3 && !p->content_seen) {
        size_t i = 0;
        while (i < n && (is_ws(s[i]) || (s[i] == ';' && p->calls.n))) i++;
        if (i == n && !final) return 0; /* only whitespace yet: wait */
        if (i < n && s[i] == '{') {
            static const trigger LLAMA_JSON = {"{", TR_SECTION, SEC_JSON, NULL};
            consume(p, i);
            p->st = ST_SECTION;
            p->sec = &LLAMA_JSON;
            p->sec_open_len = 0;
            return 1;
        }
    }
    size_t best = n;
    const trigger *bt = NULL;
    for (int k = 0; k < p->n_trig; k++) {
        const char *f = chat_find(s, n, p->trig[k].text);
        if (f && (size_t)(f - s) < best) best = (size_t)(f - s), bt = &p->trig[k];
    }
    if (bt) {
        if (!emit_content(p, s, best)) return -1;
        consume(p, best);
        size_t tl = strlen(bt->text);
        if (bt->kind == TR_THINK) {
            consume(p, tl);
            p->st = ST_THINK;
            p->think_started = false;
        } else if (bt->kind == TR_STRIP) {
            consume(p, tl);
        } else {
            p->st = ST_SECTION;
            p->sec = bt;
            p->sec_open_len = tl;
        }
        return 1;
    }
    size_t hold = 0;
    if (!final)
        for (int k = 0; k < p->n_trig; k++) {
            size_t h = chat_partial_suffix(s, n, p->trig[k].text);
            if (h > hold) hold = h;
        }
    if (n - hold == 0) return 0;
    if (!emit_content(p, s, n - hold)) return -1;
    consume(p, n - hold);
    return 1;
}

static int step_think(loom_chat_parser *p, bool final) {
    const char *s = p->in.p;
    size_t n = p->in.n;
    const char *close = p->think_close;
    const char *f = close ? chat_find(s, n, close) : NULL;
    if (f) {
        if (!emit_thinking(p, s, (size_t)(f - s))) return -1;
        consume(p, (size_t)(f - s) + strlen(close));
        end_thinking(p);
        p->st = p->pp.syntax.format == LOOM_CHAT_FORMAT_HARMONY ? ST_H_HEADER : ST_CONTENT;
        return 1;
    }
    size_t hold = final || !close ? 0 : chat_partial_suffix(s, n, close);
    if (n - hold == 0) return 0;
    if (!emit_thinking(p, s, n - hold)) return -1;
    consume(p, n - hold);
    return 1;
}

/* Where does the section that starts at in[0] end? Sets *body_n (body bytes after the
 * opener) and *total (bytes to consume); false when not complete yet. */
static bool section_end(loom_chat_parser *p, bool final, size_t *body_n, size_t *total) {
    const trigger *t = p->sec;
    const char *body = p->in.p + p->sec_open_len;
    size_t n = p->in.n - p->sec_open_len;
    if (t->close) {
        const char *c = chat_find(body, n, t->close);
        if (c) {
            *body_n = (size_t)(c - body);
            *total = p->sec_open_len + *body_n + strlen(t->close);
            return true;
        }
        if (final) {
            *body_n = n;
            *total = p->in.n;
            return true;
        }
        return false;
    }
    switch (t->sec) {
    case SEC_MISTRAL: {
        size_t i = 0;
        while (i < n && is_ws(body[i])) i++;
        const char *json = NULL;
        if (i < n && (body[i] == '[' || body[i] == '{')) json = body + i;
        else {
            const char *a = chat_find(body, n, "[ARGS]");
            if (a) json = a + strlen("[ARGS]");
        }
        if (json) {
            size_t e = chat_json_value_end(json, (size_t)(body + n - json));
            if (e && e != (size_t)-1) {
                *body_n = (size_t)(json - body) + e;
                *total = p->sec_open_len + *body_n;
                return true;
            }
        }
        break;
    }
    case SEC_JSON: {
        size_t e = chat_json_value_end(body, n);
        if (e == (size_t)-1) { /* not JSON at all: let it fail now */
            *body_n = n;
            *total = p->in.n;
            return true;
        }
        if (e) {
            *body_n = e;
            *total = p->sec_open_len + e;
            return true;
        }
        break;
    }
    case SEC_FUNC_V32: {
        const char *nx = chat_find(body, n, ">>>");
        if (nx) {
            *body_n = (size_t)(nx - body);
            *total = p->sec_open_len + *body_n;
            return true;
        }
        break;
    }
    default:
        break;
    }
    if (final) {
        *body_n = n;
        *total = p->in.n;
        return true;
    }
    return false;
}

static int step_section(loom_chat_parser *p, bool final) {
    size_t body_n, total;
    if (!section_end(p, final, &body_n, &total)) return 0;
    const trigger *t = p->sec;
    const char *body = p->in.p + p->sec_open_len;
    chat_calls tmp = {0};
    bool ok;
    if (t->sec == SEC_FUNC_V32 && body_n >= 3 && !memcmp(body, "all", 3) &&
        (body_n == 3 || body[3] == '\n')) {
        /* >>>all\n is the answer text */
        size_t skip = body_n > 3 ? 4 : 3;
        ok = emit_content(p, body + skip, body_n - skip);
        p->st = ST_CONTENT;
        consume(p, total);
        return ok ? 1 : -1;
    }
    ok = parse_section(p, t, body, body_n, &tmp);
    if (ok) {
        ok = publish(p, &tmp);
        chat_calls_free(&tmp);
        if (!ok) return -1;
    } else {
        chat_calls_free(&tmp);
        /* not a call: the text goes out verbatim (not skipping whitespace) */
        p->skip_ws = false;
        if (!emit_content(p, p->in.p, total)) return -1;
    }
    consume(p, total);
    p->st = ST_CONTENT;
    return 1;
}

/* ------------------------------------------------------------------ Harmony */

static int step_h_header(loom_chat_parser *p, bool final) {
    const char *s = p->in.p;
    size_t n = p->in.n;
    const char *m = chat_find(s, n, "<|message|>");
    if (!m) {
        /* plain text without Harmony markup: fall back to content */
        size_t i = 0;
        while (i < n && is_ws(s[i])) i++;
        /* a header starts with "<|" or with a recipient " to=" */
        size_t r = n - i < 3 ? n - i : 3;
        bool header = i == n || s[i] == '<' || !memcmp(s + i, "to=", r);
        if (!header || final) {
            p->st = ST_CONTENT;
            if (final && n) {
                if (!emit_content(p, s, n)) return -1;
                consume(p, n);
            }
            return 1;
        }
        if (n > 4096) { /* a header this long is not one */
            p->st = ST_CONTENT;
            return 1;
        }
        return 0;
    }
    size_t hn = (size_t)(m - s);
    /* channel name */
    char channel[32] = "";
    const char *c = chat_find(s, hn, "<|channel|>");
    if (c) {
        const char *q = c + strlen("<|channel|>");
        size_t k = 0;
        while (q < m && !is_ws(*q) && *q != '<' && k < sizeof channel - 1) channel[k++] = *q++;
        channel[k] = '\0';
    }
    /* recipient: " to=NAME" anywhere in the header */
    p->h_name.n = 0;
    const char *to = chat_find(s, hn, "to=");
    if (to) {
        const char *q = to + 3;
        const char *q0 = q;
        while (q < m && !is_ws(*q) && *q != '<') q++;
        if (q > q0 && !chat_str_add(&p->h_name, q0, (size_t)(q - q0))) return -1;
    }
    if (p->h_name.n) p->h_kind = 2;
    else if (!strcmp(channel, "analysis")) p->h_kind = 1;
    else p->h_kind = 0; /* final, commentary (preamble) or none */
    if (p->h_kind == 1 && !p->pp.parse_thinking) p->h_kind = 0;
    p->h_body.n = 0;
    p->think_started = false;
    consume(p, hn + strlen("<|message|>"));
    p->st = ST_H_BODY;
    return 1;
}

static bool h_emit(loom_chat_parser *p, const char *s, size_t n) {
    if (p->h_kind == 1) return emit_thinking(p, s, n);
    if (p->h_kind == 2) return chat_str_add(&p->h_body, s, n);
    return emit_content(p, s, n);
}

static bool h_finish_body(loom_chat_parser *p) {
    if (p->h_kind == 1) {
        end_thinking(p);
    } else if (p->h_kind == 2) {
        const char *nm = p->h_name.p;
        size_t nl = p->h_name.n;
        if (nl > 10 && !memcmp(nm, "functions.", 10)) nm += 10, nl -= 10;
        chat_body_ctx bc = {p->tools};
        chat_calls tmp = {0};
        bool ok = chat_parse_name_json(&bc, nm, nl, p->h_body.p ? p->h_body.p : "", p->h_body.n, &tmp);
        if (ok) ok = publish(p, &tmp);
        chat_calls_free(&tmp);
        if (!ok && !emit_content(p, p->h_body.p ? p->h_body.p : "", p->h_body.n)) return false;
        p->h_body.n = 0;
    }
    return true;
}

static int step_h_body(loom_chat_parser *p, bool final) {
    const char *s = p->in.p;
    size_t n = p->in.n;
    size_t best = n;
    const char *bend = NULL;
    for (size_t k = 0; k < sizeof H_ENDS / sizeof H_ENDS[0]; k++) {
        const char *f = chat_find(s, n, H_ENDS[k]);
        if (f && (size_t)(f - s) < best) best = (size_t)(f - s), bend = H_ENDS[k];
    }
    if (bend) {
        if (!h_emit(p, s, best) || !h_finish_body(p)) return -1;
        /* <|start|> / <|channel|> begin the next header: keep them */
        bool keep = !strcmp(bend, "<|start|>") || !strcmp(bend, "<|channel|>");
        consume(p, best + (keep ? 0 : strlen(bend)));
        p->st = ST_H_HEADER;
        return 1;
    }
    size_t hold = 0;
    if (!final)
        for (size_t k = 0; k < sizeof H_ENDS / sizeof H_ENDS[0]; k++) {
            size_t h = chat_partial_suffix(s, n, H_ENDS[k]);
            if (h > hold) hold = h;
        }
    if (n - hold) {
        if (!h_emit(p, s, n - hold)) return -1;
        consume(p, n - hold);
    }
    if (final) {
        if (!h_finish_body(p)) return -1;
        p->st = ST_H_HEADER;
        return n - hold ? 1 : 0;
    }
    return n - hold ? 1 : 0;
}

/* ------------------------------------------------------------------ driver */

static loom_status run(loom_chat_parser *p, bool final, loom_error *err) {
    for (int guard = 0; guard < 1 << 24; guard++) {
        int r;
        switch (p->st) {
        case ST_CONTENT: r = step_content(p, final); break;
        case ST_THINK: r = step_think(p, final); break;
        case ST_SECTION: r = step_section(p, final); break;
        case ST_H_HEADER: r = step_h_header(p, final); break;
        default: r = step_h_body(p, final); break;
        }
        if (r < 0) return loom_error_set(err, LOOM_ERR_NOMEM, "chat parser: out of memory");
        if (r == 0 && (!final || p->in.n == 0)) break;
        if (r == 0 && final) {
            /* final with input left that no state consumes: flush it as content */
            if (!emit_content(p, p->in.p, p->in.n)) return loom_error_set(err, LOOM_ERR_NOMEM, "chat parser: out of memory");
            consume(p, p->in.n);
            break;
        }
    }
    return LOOM_OK;
}

static void fill_delta(loom_chat_parser *p, loom_chat_delta *d, int first) {
    memset(d, 0, sizeof *d);
    d->content = p->content.p ? p->content.p : "";
    d->content_len = p->content.n;
    d->thinking = p->thinking.p ? p->thinking.p : "";
    d->thinking_len = p->thinking.n;
    d->n_calls = p->calls.n - first;
    d->calls = d->n_calls ? p->pub + first : NULL;
}

static bool sync_pub(loom_chat_parser *p) {
    if (p->calls.n > p->pub_cap) {
        int cap = p->calls.n * 2;
        loom_chat_tool_call *v = realloc(p->pub, (size_t)cap * sizeof *v);
        if (!v) return false;
        p->pub = v;
        p->pub_cap = cap;
    }
    for (int i = 0; i < p->calls.n; i++) {
        p->pub[i].index = i;
        p->pub[i].id = p->calls.v[i].id;
        p->pub[i].name = p->calls.v[i].name;
        p->pub[i].arguments = p->calls.v[i].arguments;
    }
    return true;
}

static loom_status do_push(loom_chat_parser *p, const char *text, size_t n, bool final, loom_chat_delta *d,
                           loom_error *err) {
    p->content.n = 0;
    p->thinking.n = 0;
    int first = p->calls.n;
    if (n) {
        if (p->total + n > MAX_OUTPUT)
            return loom_error_set(err, LOOM_ERR_RANGE, "chat parser: output exceeds %zu bytes", MAX_OUTPUT);
        p->total += n;
        if (!chat_str_add(&p->in, text, n)) return loom_error_set(err, LOOM_ERR_NOMEM, "chat parser: out of memory");
    }
    loom_status s = run(p, final, err);
    if (s) return s;
    if (!sync_pub(p)) return loom_error_set(err, LOOM_ERR_NOMEM, "chat parser: out of memory");
    fill_delta(p, d, first);
    return LOOM_OK;
}

loom_status loom_chat_parser_push(loom_chat_parser *p, const char *text, size_t n, loom_chat_delta *d,
                                  loom_error *err) {
    if (!p || !d || (!text && n)) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_chat_parser_push: NULL argument");
    if (p->finished) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_chat_parser_push: after finish");
    return do_push(p, text, n, false, d, err);
}

loom_status loom_chat_parser_finish(loom_chat_parser *p, loom_chat_delta *d, loom_error *err) {
    if (!p || !d) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_chat_parser_finish: NULL argument");
    if (p->finished) {
        p->content.n = p->thinking.n = 0;
        fill_delta(p, d, p->calls.n);
        return LOOM_OK;
    }
    p->finished = true;
    return do_push(p, NULL, 0, true, d, err);
}

void loom_chat_parser_result(const loom_chat_parser *p, loom_chat_delta *all) {
    memset(all, 0, sizeof *all);
    if (!p) return;
    all->content = p->all_content.p ? p->all_content.p : "";
    all->content_len = p->all_content.n;
    all->thinking = p->all_thinking.p ? p->all_thinking.p : "";
    all->thinking_len = p->all_thinking.n;
    all->n_calls = p->calls.n;
    all->calls = p->calls.n ? p->pub : NULL;
}
