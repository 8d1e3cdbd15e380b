/* Tool calls and thinking in the server's responses (issue #24), without a model:
 *   - the answer of every family the chat parser knows (real-format outputs written
 *     from the families' templates and published examples) run through the server's
 *     response building (server/chatout.c + response.c), whole and streamed (split at
 *     every byte, and byte by byte): Ollama message.tool_calls with arguments as JSON
 *     objects, OpenAI tool_calls with ids, type "function" and arguments as JSON text,
 *     finish_reason "tool_calls", thinking in its own field or hidden (think: false),
 *     and no partial call syntax in any streamed text;
 *   - the grammars that force calls (server/toolgram.c): for each family, the call the
 *     family's parser reads back is a sentence of the grammar, and calls with a wrong
 *     name or arguments outside the schema are not; with Qwen 2's vocabulary a marker
 *     that is a control token is forced as that token and a call's token sequence is
 *     accepted;
 *   - request decoding of tool_choice / parallel_tool_calls / chat_template_kwargs. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_gguf.h"
#include "loom_grammar.h"
#include "loom_tokenizer.h"
#include "server/chatout.h"
#include "server/request.h"
#include "server/response.h"
#include "server/toolgram.h"
#include "test_util.h"

#define DS_CALLS_BEGIN "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_CALLS_END "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DS_CALL_BEGIN "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_CALL_END "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DS_SEP "<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>"

#define TOOLS                                                                                                   \
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather of a city\","   \
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{\"type\":"  \
    "\"integer\",\"minimum\":1,\"maximum\":7}},\"required\":[\"city\"]}}},"                                    \
    "{\"type\":\"function\",\"function\":{\"name\":\"get_time\",\"parameters\":{\"type\":\"object\","          \
    "\"properties\":{}}}}]"

typedef struct fcase {
    const char *label;
    loom_chat_syntax syn;
    const char *tmpl;       /* for the grammar (Mistral's two forms) */
    const char *prompt;     /* the rendered prompt's end */
    const char *out;        /* the model's output (a forced-call sentence when forced) */
    const char *content, *thinking;
    int n_calls;
    const char *names[2], *args[2]; /* args: compact JSON */
    bool forced;            /* out must be a sentence of the family's forcing grammar */
    bool parallel;
} fcase;

#define SYN(f, t) {LOOM_CHAT_FORMAT_##f, LOOM_CHAT_THINKING_##t, NULL, NULL}
#define W1 "get_weather"
#define A1 "{\"city\":\"Paris\"}"

static const fcase CASES[] = {
    {"hermes", SYN(HERMES, NONE), NULL, NULL,
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "", "", 1,
     {W1}, {A1}, true, false},
    {"hermes: two calls", SYN(HERMES, NONE), NULL, NULL,
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}\n</tool_call>\n"
     "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n</tool_call>",
     "", "", 2, {W1, "get_time"}, {"{\"city\":\"Paris\",\"days\":3}", "{}"}, true, true},
    {"qwen3: thinking, text, call", SYN(HERMES, THINK_TAGS), NULL, "<|im_start|>assistant\n",
     "<think>\nThe user wants the weather.\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"get_weather\", "
     "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
     "Let me check.\n", "The user wants the weather.", 1, {W1}, {A1}, false, false},
    {"qwen3: forced after an opened think block", SYN(HERMES, THINK_TAGS), NULL, "<|im_start|>assistant\n<think>\n",
     "</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>", "", "",
     1, {W1}, {A1}, true, false},
    {"llama3", SYN(LLAMA3, NONE), NULL, NULL, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "",
     "", 1, {W1}, {A1}, true, false},
    {"llama3: python_tag builtin", SYN(LLAMA3, NONE), NULL, NULL,
     "<|python_tag|>brave_search.call(query=\"weather in Paris\")", "", "", 1, {"brave_search"},
     {"{\"query\":\"weather in Paris\"}"}, false, false},
    {"ministral 3: [THINK] then a call", SYN(MISTRAL, MISTRAL), NULL, NULL,
     "[THINK]Need the tool.[/THINK][TOOL_CALLS]get_weather[ARGS]{\"city\":\"Paris\"}", "", "Need the tool.", 1, {W1},
     {A1}, false, false},
    {"seed-oss: thinking and an xml call", SYN(XML_FUNCTION, SEED), NULL, NULL,
     "<seed:think>plan</seed:think><seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n"
     "</function>\n</seed:tool_call>",
     "", "plan", 1, {W1}, {A1}, false, false},
    {"mistral nemo", SYN(MISTRAL, NONE), NULL, NULL,
     "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]", "", "", 1, {W1}, {A1}, true,
     true},
    {"mistral [ARGS]", SYN(MISTRAL, NONE), "[TOOL_CALLS]{{ n }}[ARGS]", NULL,
     "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_time[ARGS]{}", "", "", 2, {W1, "get_time"},
     {A1, "{}"}, true, true},
    {"deepseek-r1", SYN(DEEPSEEK_R1, THINK_TAGS), NULL, NULL,
     DS_CALLS_BEGIN DS_CALL_BEGIN "function" DS_SEP "get_weather\n```json\n{\"city\": \"Paris\"}\n```" DS_CALL_END
         DS_CALLS_END,
     "", "", 1, {W1}, {A1}, true, true},
    {"deepseek-r1: thinking opened by the template", SYN(DEEPSEEK_R1, THINK_TAGS), NULL,
     "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c><think>\n", "Let me think.\n</think>\n\nIt is 4.", "It is 4.",
     "Let me think.", 0, {0}, {0}, false, false},
    {"deepseek-v3.1", SYN(DEEPSEEK_V3_1, THINK_TAGS), NULL, NULL,
     DS_CALLS_BEGIN DS_CALL_BEGIN "get_weather" DS_SEP "{\"city\": \"Paris\"}" DS_CALL_END DS_CALL_BEGIN "get_time" DS_SEP
     "{}" DS_CALL_END DS_CALLS_END,
     "", "", 2, {W1, "get_time"}, {A1, "{}"}, true, true},
    {"granite", SYN(GRANITE, THINK_TAGS), NULL, NULL,
     "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]", "", "", 1, {W1}, {A1}, true,
     true},
    {"functionary v3.1", SYN(FUNCTIONARY_V3_1, NONE), NULL, NULL, "<function=get_weather>{\"city\": \"Paris\"}</function>",
     "", "", 1, {W1}, {A1}, true, true},
    {"functionary v3.2", SYN(FUNCTIONARY_V3_2, NONE), NULL, "<|start_header_id|>assistant<|end_header_id|>\n\n>>>",
     "get_weather\n{\"city\": \"Paris\"}", "", "", 1, {W1}, {A1}, true, true},
    {"command-r7b", SYN(COMMAND_R7B, COMMAND_R7B), NULL, NULL,
     "<|START_ACTION|>[{\"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}]<|END_ACTION|>", "", "",
     1, {W1}, {A1}, true, true},
    {"command-r7b: thinking", SYN(COMMAND_R7B, COMMAND_R7B), NULL, NULL,
     "<|START_THINKING|>x<|END_THINKING|><|START_RESPONSE|>Sunny.<|END_RESPONSE|>", "Sunny.", "x", 0, {0}, {0}, false,
     false},
    {"json array tag", {LOOM_CHAT_FORMAT_JSON_ARRAY_TAG, LOOM_CHAT_THINKING_NONE, "<tool_calls>", "</tool_calls>"}, NULL,
     NULL, "<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]</tool_calls>", "", "", 1,
     {W1}, {A1}, true, true},
    {"kimi k2", SYN(KIMI_K2, NONE), NULL, NULL,
     "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
     "{\"city\": \"Paris\"}<|tool_call_end|><|tool_calls_section_end|>",
     "", "", 1, {W1}, {A1}, true, true},
    {"harmony: call (the <|call|> end token is not passed)", SYN(HARMONY, HARMONY), NULL, "<|start|>assistant",
     "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}", "", "", 1, {W1},
     {A1}, true, false},
    {"harmony: analysis then final", SYN(HARMONY, HARMONY), NULL, "<|start|>assistant",
     "<|channel|>analysis<|message|>User asks 2+2.<|end|><|start|>assistant<|channel|>final<|message|>4.", "4.",
     "User asks 2+2.", 0, {0}, {0}, false, false},
    {"xml function (Qwen3-Coder)", SYN(XML_FUNCTION, NONE), NULL, NULL,
     "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>", "", "", 1,
     {W1}, {A1}, true, false},
    {"xml function: two calls, typed values", SYN(XML_FUNCTION, NONE), NULL, NULL,
     "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
     "</function>\n</tool_call>\n<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
     "", "", 2, {W1, "get_time"}, {"{\"city\":\"Paris\",\"days\":3}", "{}"}, true, true},
    {"glm", SYN(GLM, THINK_TAGS), NULL, NULL,
     "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>", "", "", 1, {W1},
     {A1}, true, true},
    {"minimax", SYN(MINIMAX, THINK_TAGS), NULL, NULL,
     "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n</invoke>\n"
     "</minimax:tool_call>",
     "", "", 1, {W1}, {A1}, true, true},
    {"bad output: truncated JSON stays text", SYN(HERMES, NONE), NULL, NULL,
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>",
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>", "", 0, {0}, {0}, false,
     false},
    {"bad output: unfinished call stays text", SYN(HERMES, NONE), NULL, NULL, "Sure. <tool_call>\n{\"name\": \"get_w",
     "Sure. <tool_call>\n{\"name\": \"get_w", "", 0, {0}, {0}, false, false},
};

static json_t *g_tools;

/* ------------------------------------------------------------------ response building */

typedef struct collected {
    srv_buf content, thinking;
    json_t *calls; /* Ollama form, from the chunks */
    int oai_next_index;
    bool bad_chunk;
} collected;

/* Frame one streamed delta in both APIs, parse the frames back and collect them. */
static void frame_delta(const fcase *c, const srv_delta *d, int first_index, collected *col) {
    srv_buf nd = {0}, sse = {0};
    srv_ollama_chunk_d(&nd, SRV_API_CHAT, "m", 0, d);
    srv_oai_ctx oc;
    srv_oai_ctx_init(&oc, SRV_API_OAI_CHAT, "m", false);
    srv_oai_chunk_d(&sse, &oc, d, false, first_index);
    json_t *o = json_loadb(nd.data, nd.len, 0, NULL);
    CHECK_MSG(o != NULL, "%s: NDJSON chunk does not parse", c->label);
    CHECK(nd.len && nd.data[nd.len - 1] == '\n');
    CHECK(sse.len > 8 && !memcmp(sse.data, "data: ", 6) && !memcmp(sse.data + sse.len - 2, "\n\n", 2));
    json_t *s = json_loadb(sse.data + 6, sse.len - 8, 0, NULL);
    CHECK_MSG(s != NULL, "%s: SSE chunk does not parse", c->label);
    if (o && s) {
        json_t *m = json_object_get(o, "message");
        const char *ct = json_string_value(json_object_get(m, "content"));
        CHECK(ct != NULL);
        if (ct) srv_buf_puts(&col->content, ct);
        const char *th = json_string_value(json_object_get(m, "thinking"));
        if (th) srv_buf_puts(&col->thinking, th);
        /* no partial call syntax ever reaches the client as text (content of a call case) */
        if (ct && c->n_calls && (strstr(ct, "<tool_call") || strstr(ct, "[TOOL_CALLS") || strstr(ct, "<function=") ||
                                 strstr(ct, "<|tool_call") || strstr(ct, "functions.")))
            col->bad_chunk = true;
        json_t *tc = json_object_get(m, "tool_calls");
        json_t *delta = json_object_get(json_array_get(json_object_get(s, "choices"), 0), "delta");
        json_t *otc = json_object_get(delta, "tool_calls");
        CHECK_EQ_INT((int)json_array_size(tc), (int)json_array_size(otc));
        for (size_t i = 0; i < json_array_size(tc); i++) {
            json_array_append(col->calls, json_array_get(tc, i));
            json_t *oc1 = json_array_get(otc, i);
            CHECK_EQ_INT((int)json_integer_value(json_object_get(oc1, "index")), col->oai_next_index);
            col->oai_next_index++;
            CHECK(!strcmp(json_string_value(json_object_get(oc1, "type")), "function"));
            CHECK(json_is_string(json_object_get(json_object_get(oc1, "function"), "arguments")));
            CHECK(json_equal(json_object_get(oc1, "id"), json_object_get(json_array_get(tc, i), "id")));
        }
        /* OpenAI: thinking as reasoning_content, never inside content */
        if (d->thinking_len) CHECK(json_is_string(json_object_get(delta, "reasoning_content")));
    }
    json_decref(o);
    json_decref(s);
    srv_buf_free(&nd);
    srv_buf_free(&sse);
}

static void check_calls(const fcase *c, const json_t *calls, const char *how) {
    CHECK_MSG((int)json_array_size(calls) == c->n_calls, "%s (%s): %d calls, want %d", c->label, how,
              (int)json_array_size(calls), c->n_calls);
    for (int i = 0; i < c->n_calls && i < (int)json_array_size(calls); i++) {
        const json_t *call = json_array_get(calls, (size_t)i);
        const json_t *f = json_object_get(call, "function");
        CHECK_MSG(!strcmp(json_string_value(json_object_get(f, "name")), c->names[i]), "%s: name", c->label);
        json_t *want = json_loads(c->args[i], 0, NULL);
        CHECK_MSG(json_is_object(json_object_get(f, "arguments")) && json_equal(json_object_get(f, "arguments"), want),
                  "%s (%s): arguments of call %d", c->label, how, i);
        json_decref(want);
        CHECK_EQ_INT((int)json_integer_value(json_object_get(f, "index")), i);
        const char *id = json_string_value(json_object_get(call, "id"));
        CHECK(id && *id);
        for (int k = 0; k < i; k++)
            CHECK(strcmp(id, json_string_value(json_object_get(json_array_get(calls, (size_t)k), "id"))));
    }
}

static srv_chatout_params params_of(const fcase *c, bool hide) {
    srv_chatout_params p = {.syntax = c->syn, .prompt = c->prompt, .prompt_len = c->prompt ? strlen(c->prompt) : 0,
                            .parse_tools = true, .hide_thinking = hide, .tools = g_tools, .id_seed = 7};
    return p;
}

/* Whole (non-streaming) responses in both APIs. */
static void test_whole(const fcase *c, bool hide) {
    srv_chatout co;
    srv_err e = {0};
    srv_chatout_params p = params_of(c, hide);
    CHECK(srv_chatout_init(&co, &p, &e));
    srv_delta d;
    CHECK(srv_chatout_push(&co, c->out, strlen(c->out), &d, &e));
    CHECK(srv_chatout_finish(&co, &d, &e));
    srv_delta whole;
    srv_chatout_whole(&co, &whole);
    srv_buf b = {0};
    srv_final f = {.done_reason = "stop"};
    srv_ollama_final_d(&b, SRV_API_CHAT, "m", 0, &whole, &f, false);
    json_t *o = json_loadb(b.data, b.len, 0, NULL);
    CHECK(o != NULL);
    json_t *m = json_object_get(o, "message");
    CHECK_MSG(!strcmp(json_string_value(json_object_get(m, "content")), c->content), "%s: content '%s'", c->label,
              json_string_value(json_object_get(m, "content")));
    const char *th = json_string_value(json_object_get(m, "thinking"));
    if (hide || !*c->thinking) CHECK_MSG(th == NULL, "%s: thinking shown", c->label);
    else CHECK_MSG(th && !strcmp(th, c->thinking), "%s: thinking '%s'", c->label, th ? th : "(none)");
    CHECK(!strcmp(json_string_value(json_object_get(o, "done_reason")), "stop"));
    if (c->n_calls) check_calls(c, json_object_get(m, "tool_calls"), "ollama");
    else CHECK(json_object_get(m, "tool_calls") == NULL);
    /* OpenAI */
    srv_buf_clear(&b);
    srv_oai_ctx oc;
    srv_oai_ctx_init(&oc, SRV_API_OAI_CHAT, "m", false);
    srv_oai_final_d(&b, &oc, &whole, co.n_calls ? "tool_calls" : "stop", 1, 2);
    json_t *a = json_loadb(b.data, b.len, 0, NULL);
    CHECK(a != NULL);
    json_t *ch = json_array_get(json_object_get(a, "choices"), 0);
    json_t *am = json_object_get(ch, "message");
    CHECK(!strcmp(json_string_value(json_object_get(ch, "finish_reason")), c->n_calls ? "tool_calls" : "stop"));
    json_t *tc = json_object_get(am, "tool_calls");
    CHECK_EQ_INT((int)json_array_size(tc), c->n_calls);
    if (c->n_calls && !*c->content) CHECK(json_is_null(json_object_get(am, "content")));
    else CHECK(!strcmp(json_string_value(json_object_get(am, "content")), c->content));
    const char *rc = json_string_value(json_object_get(am, "reasoning_content"));
    if (hide || !*c->thinking) CHECK(rc == NULL);
    else CHECK(rc && !strcmp(rc, c->thinking));
    json_t *ocalls = json_object_get(m, "tool_calls");
    for (size_t i = 0; i < json_array_size(tc); i++) {
        json_t *t = json_array_get(tc, i);
        CHECK(!strcmp(json_string_value(json_object_get(t, "type")), "function"));
        json_t *fn = json_object_get(t, "function");
        CHECK(!strcmp(json_string_value(json_object_get(fn, "name")), c->names[i]));
        const char *args = json_string_value(json_object_get(fn, "arguments"));
        json_t *pa = args ? json_loads(args, 0, NULL) : NULL;
        json_t *want = json_loads(c->args[i], 0, NULL);
        CHECK_MSG(pa && json_equal(pa, want), "%s: OpenAI arguments '%s'", c->label, args ? args : "(none)");
        json_decref(pa);
        json_decref(want);
        CHECK(json_equal(json_object_get(t, "id"), json_object_get(json_array_get(ocalls, i), "id")));
    }
    json_decref(a);
    json_decref(o);
    srv_buf_free(&b);
    srv_chatout_free(&co);
}

/* Streamed: pushes at the given split points; the framed chunks add up to the answer. */
static void stream_run(const fcase *c, bool hide, const size_t *cuts, int n_cuts, const char *how) {
    srv_chatout co;
    srv_err e = {0};
    srv_chatout_params p = params_of(c, hide);
    CHECK(srv_chatout_init(&co, &p, &e));
    collected col = {0};
    col.calls = json_array();
    size_t prev = 0, n = strlen(c->out);
    for (int i = 0; i <= n_cuts; i++) {
        size_t end = i < n_cuts ? cuts[i] : n;
        srv_delta d;
        CHECK(srv_chatout_push(&co, c->out + prev, end - prev, &d, &e));
        if (!srv_delta_empty(&d)) frame_delta(c, &d, co.n_calls - (int)json_array_size(d.tool_calls), &col);
        prev = end;
    }
    srv_delta d;
    CHECK(srv_chatout_finish(&co, &d, &e));
    if (!srv_delta_empty(&d)) frame_delta(c, &d, co.n_calls - (int)json_array_size(d.tool_calls), &col);
    srv_buf_puts(&col.content, "");
    srv_buf_puts(&col.thinking, "");
    CHECK_MSG(!strcmp(col.content.data, c->content), "%s (%s): content '%s'", c->label, how, col.content.data);
    CHECK_MSG(!strcmp(col.thinking.data, hide ? "" : c->thinking), "%s (%s): thinking '%s'", c->label, how,
              col.thinking.data);
    CHECK_MSG(!col.bad_chunk, "%s (%s): call syntax streamed as text", c->label, how);
    check_calls(c, col.calls, how);
    json_decref(col.calls);
    srv_buf_free(&col.content);
    srv_buf_free(&col.thinking);
    srv_chatout_free(&co);
}

static void test_streamed(const fcase *c, bool hide) {
    size_t n = strlen(c->out);
    for (size_t k = 1; k < n; k++) stream_run(c, hide, &k, 1, "two pieces");
    size_t *all = malloc(n * sizeof *all);
    for (size_t k = 0; k + 1 < n; k++) all[k] = k + 1;
    stream_run(c, hide, all, n > 1 ? (int)n - 1 : 0, "byte by byte");
    free(all);
}

/* Without tools in the request, call syntax is plain content. */
static void test_no_tools(void) {
    const fcase *c = &CASES[0];
    srv_chatout co;
    srv_err e = {0};
    srv_chatout_params p = params_of(c, false);
    p.parse_tools = false;
    CHECK(srv_chatout_init(&co, &p, &e));
    srv_delta d;
    CHECK(srv_chatout_push(&co, c->out, strlen(c->out), &d, &e));
    CHECK(srv_chatout_finish(&co, &d, &e));
    srv_chatout_whole(&co, &d);
    CHECK(d.content_len == strlen(c->out) && !memcmp(d.content, c->out, d.content_len));
    CHECK(d.tool_calls == NULL);
    srv_chatout_free(&co);
    loom_chat_syntax plain = SYN(PLAIN, NONE), hermes = SYN(HERMES, NONE), think = SYN(PLAIN, THINK_TAGS);
    CHECK(!srv_chatout_wanted(&plain, true));
    CHECK(!srv_chatout_wanted(&hermes, false));
    CHECK(srv_chatout_wanted(&hermes, true));
    CHECK(srv_chatout_wanted(&think, false));
}

/* ------------------------------------------------------------------ forcing grammars */

static bool accepts(const loom_grammar *g, const char *s, size_t n) {
    loom_grammar_matcher *m = NULL;
    if (loom_grammar_matcher_new(g, NULL, NULL, &m, NULL)) return false;
    bool ok = loom_grammar_matcher_accept_bytes(m, s, n, NULL) == LOOM_OK && loom_grammar_matcher_is_accepting(m);
    loom_grammar_matcher_free(m);
    return ok;
}

static char *replace(const char *s, const char *from, const char *to) {
    const char *p = strstr(s, from);
    if (!p) return NULL;
    size_t a = (size_t)(p - s), fl = strlen(from), tl = strlen(to), n = strlen(s);
    char *r = malloc(n - fl + tl + 1);
    memcpy(r, s, a);
    memcpy(r + a, to, tl);
    memcpy(r + a + tl, p + fl, n - a - fl + 1);
    return r;
}

static void test_grammar(const fcase *c) {
    bool in_think = srv_prompt_in_thinking(&c->syn, c->prompt, c->prompt ? strlen(c->prompt) : 0);
    srv_buf b = {0};
    srv_err e = {0};
    bool ok = srv_tool_gbnf(&c->syn, c->tmpl, g_tools, NULL, c->parallel, in_think, NULL, &b, &e);
    if (c->syn.format == LOOM_CHAT_FORMAT_PLAIN) {
        CHECK_MSG(!ok && e.status == 0, "%s: expected 'not forced'", c->label);
        srv_buf_free(&b);
        return;
    }
    CHECK_MSG(ok, "%s: %s", c->label, e.msg);
    loom_grammar *g = NULL;
    loom_error err = {0};
    CHECK_MSG(ok && loom_grammar_new(b.data, b.len, SRV_TOOL_ROOT, NULL, &g, &err) == LOOM_OK, "%s: %s\n%s", c->label,
              err.msg, b.data ? b.data : "");
    if (g && c->forced) {
        CHECK_MSG(accepts(g, c->out, strlen(c->out)), "%s: the call is not a sentence of\n%.*s", c->label, (int)b.len,
                  b.data);
        char *bad = replace(c->out, "get_weather", "get_weathr"); /* unknown name */
        if (bad) CHECK_MSG(!accepts(g, bad, strlen(bad)), "%s: unknown name accepted", c->label);
        free(bad);
        bad = replace(c->out, "\"Paris\"", "12"); /* city must be a string */
        if (bad) CHECK_MSG(!accepts(g, bad, strlen(bad)), "%s: a number for a string accepted", c->label);
        free(bad);
        bad = replace(c->out, "\"city\"", "\"town\""); /* not a property */
        if (bad) CHECK_MSG(!accepts(g, bad, strlen(bad)), "%s: unknown property accepted", c->label);
        free(bad);
        bad = replace(c->out, "\n3\n", "\nthree\n"); /* days must be an integer (XML styles) */
        if (bad) CHECK_MSG(!accepts(g, bad, strlen(bad)), "%s: a word for an integer accepted", c->label);
        free(bad);
        bad = replace(c->out, ": 3", ": 9"); /* days is at most 7 */
        if (bad) CHECK_MSG(!accepts(g, bad, strlen(bad)), "%s: days 9 accepted", c->label);
        free(bad);
        CHECK_MSG(!accepts(g, "Hello", 5), "%s: text accepted", c->label);
    }
    /* a named function: only that one */
    if (g && c->forced && c->n_calls == 1) {
        srv_buf b2 = {0};
        CHECK(srv_tool_gbnf(&c->syn, c->tmpl, g_tools, "get_time", false, in_think, NULL, &b2, &e));
        loom_grammar *g2 = NULL;
        CHECK(loom_grammar_new(b2.data, b2.len, SRV_TOOL_ROOT, NULL, &g2, &err) == LOOM_OK);
        if (g2) CHECK_MSG(!accepts(g2, c->out, strlen(c->out)), "%s: named get_time accepts get_weather", c->label);
        loom_grammar_free(g2);
        srv_buf_free(&b2);
        CHECK(!srv_tool_gbnf(&c->syn, c->tmpl, g_tools, "nope", false, in_think, NULL, &b2, &e) && e.status == 400);
        srv_buf_free(&b2);
    }
    loom_grammar_free(g);
    srv_buf_free(&b);
}

/* A tool schema the structured-output subset cannot express is a 400 naming the tool. */
static void test_grammar_errors(void) {
    json_t *tools = json_loads("[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\","
                               "\"properties\":{\"a\":{\"type\":\"array\",\"uniqueItems\":true}}}}}]",
                               0, NULL);
    loom_chat_syntax syn = SYN(HERMES, NONE);
    srv_buf b = {0};
    srv_err e = {0};
    CHECK(!srv_tool_gbnf(&syn, NULL, tools, NULL, true, false, NULL, &b, &e));
    CHECK_MSG(e.status == 400 && strstr(e.msg, "\"f\""), "%d %s", e.status, e.msg);
    srv_buf_free(&b);
    json_decref(tools);
}

/* With a real vocabulary (Qwen 2's): a marker that is a single control token (empty
 * piece: only reachable as that token) is forced as the token (<[id]>) - here the
 * json-array-tag syntax with the tags "<|im_start|>" (a control token of this
 * vocabulary) and "</calls>" (text) -, the token sequence of a well-formed call
 * (tokenized with special tokens, as the model writes it) is accepted token by token
 * up to an accepting state, the marker spelled as text is not, and the detokenized text
 * (special tokens rendered, as the server does) parses back into the call. */
static void test_grammar_vocab(void) {
    char path[4096];
    snprintf(path, sizeof path, "%s", test_path("tests/data/vocab/ggml-vocab-qwen2.gguf"));
    loom_gguf *g = NULL;
    loom_tokenizer *tok = NULL;
    loom_error err = {0};
    CHECK_MSG(loom_gguf_open(path, NULL, &g, &err) == LOOM_OK && loom_tokenizer_new_from_gguf(g, &tok, &err) == LOOM_OK,
              "%s: %s", path, err.msg);
    loom_gguf_close(g);
    if (!tok) return;
    loom_chat_syntax syn = {LOOM_CHAT_FORMAT_JSON_ARRAY_TAG, LOOM_CHAT_THINKING_NONE, "<|im_start|>", "</calls>"};
    srv_buf b = {0};
    srv_err e = {0};
    CHECK(srv_tool_gbnf(&syn, NULL, g_tools, NULL, true, false, tok, &b, &e));
    int32_t ids[4];
    int32_t k = 0;
    CHECK(loom_tokenize(tok, "<|im_start|>", 12, false, true, ids, 4, &k, NULL) == LOOM_OK && k == 1);
    CHECK(loom_token_get_type(tok, ids[0]) == LOOM_TOKEN_CONTROL);
    char ref[32];
    snprintf(ref, sizeof ref, "<[%d]>", (int)ids[0]);
    CHECK_MSG(b.data && strstr(b.data, ref), "the grammar does not use the marker's token %s", ref);
    loom_grammar *gr = NULL;
    loom_grammar_vocab *gv = NULL;
    loom_grammar_matcher *m = NULL;
    CHECK(loom_grammar_new(b.data, b.len, SRV_TOOL_ROOT, tok, &gr, &err) == LOOM_OK);
    CHECK(loom_grammar_vocab_new(tok, &gv, &err) == LOOM_OK);
    CHECK(gr && gv && loom_grammar_matcher_new(gr, gv, NULL, &m, &err) == LOOM_OK);
    const char *out = "<|im_start|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, "
                      "{\"name\": \"get_time\", \"arguments\": {}}]</calls>";
    int32_t toks[512];
    int32_t nt = 0;
    CHECK(loom_tokenize(tok, out, strlen(out), false, true, toks, 512, &nt, NULL) == LOOM_OK);
    bool ok = m != NULL;
    for (int i = 0; ok && i < nt; i++) {
        ok = loom_grammar_matcher_allows(m, toks[i]) && loom_grammar_matcher_accept_token(m, toks[i], &err) == LOOM_OK;
        CHECK_MSG(ok, "token %d (%d) of the call refused", i, (int)toks[i]);
    }
    CHECK(ok && loom_grammar_matcher_is_accepting(m));
    if (m) { /* the marker spelled as text (no special tokens) is not the token */
        loom_grammar_matcher_reset(m);
        CHECK(loom_tokenize(tok, out, strlen(out), false, false, toks, 512, &nt, NULL) == LOOM_OK);
        CHECK(nt > 1 && !loom_grammar_matcher_allows(m, toks[0]));
    }
    /* detokenized with special tokens, the text parses into the calls */
    CHECK(loom_tokenize(tok, out, strlen(out), false, true, toks, 512, &nt, NULL) == LOOM_OK);
    char text[2048];
    size_t tl = 0;
    CHECK(loom_detokenize(tok, toks, nt, LOOM_DETOK_SPECIAL | LOOM_DETOK_NO_STRIP, text, sizeof text, &tl) == LOOM_OK);
    CHECK(tl == strlen(out) && !memcmp(text, out, tl));
    srv_chatout co;
    srv_chatout_params p = {.syntax = syn, .parse_tools = true, .tools = g_tools};
    CHECK(srv_chatout_init(&co, &p, &e));
    srv_delta d;
    CHECK(srv_chatout_push(&co, text, tl, &d, &e) && srv_chatout_finish(&co, &d, &e));
    srv_chatout_whole(&co, &d);
    CHECK_EQ_INT((int)json_array_size(d.tool_calls), 2);
    CHECK(d.content_len == 0);
    srv_chatout_free(&co);
    loom_grammar_matcher_free(m);
    loom_grammar_vocab_free(gv);
    loom_grammar_free(gr);
    srv_buf_free(&b);
    loom_tokenizer_free(tok);
}

/* ------------------------------------------------------------------ request decoding */

static bool decode(srv_api api, const char *body, srv_gen_req *r, srv_err *e) {
    srv_limits lim = srv_limits_default();
    json_t *j = json_loads(body, 0, NULL);
    bool ok = srv_gen_req_decode(api, j, &lim, r, e);
    json_decref(j);
    return ok;
}

static void test_decode(void) {
    srv_gen_req r;
    srv_err e = {0};
    char body[2048];
    snprintf(body, sizeof body, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":%s}", TOOLS);
    CHECK(decode(SRV_API_OAI_CHAT, body, &r, &e));
    CHECK(r.tool_choice == SRV_TOOL_CHOICE_AUTO && r.parallel_tool_calls && r.think == -1);
    srv_gen_req_free(&r);
    snprintf(body, sizeof body, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":%s,"
             "\"tool_choice\":\"required\",\"parallel_tool_calls\":false,\"chat_template_kwargs\":{\"enable_thinking\":false}}",
             TOOLS);
    CHECK(decode(SRV_API_OAI_CHAT, body, &r, &e));
    CHECK(r.tool_choice == SRV_TOOL_CHOICE_REQUIRED && !r.parallel_tool_calls && r.think == 0);
    srv_gen_req_free(&r);
    snprintf(body, sizeof body, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":%s,"
             "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_time\"}}}", TOOLS);
    CHECK(decode(SRV_API_OAI_CHAT, body, &r, &e));
    CHECK(r.tool_choice == SRV_TOOL_CHOICE_FUNCTION && !strcmp(r.tool_choice_name, "get_time"));
    srv_gen_req_free(&r);
    snprintf(body, sizeof body, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":%s,"
             "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"nope\"}}}", TOOLS);
    CHECK(!decode(SRV_API_OAI_CHAT, body, &r, &e) && e.status == 400 && strstr(e.msg, "nope"));
    srv_gen_req_free(&r);
    CHECK(!decode(SRV_API_OAI_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                  "\"tool_choice\":\"required\"}", &r, &e) && e.status == 400);
    srv_gen_req_free(&r);
    CHECK(!decode(SRV_API_OAI_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                  "\"tool_choice\":\"sometimes\"}", &r, &e) && e.status == 400);
    srv_gen_req_free(&r);
    CHECK(decode(SRV_API_OAI_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                 "\"tool_choice\":\"none\"}", &r, &e) && r.tool_choice == SRV_TOOL_CHOICE_NONE);
    srv_gen_req_free(&r);
    /* round trip: OpenAI assistant tool_calls (arguments as JSON text) become objects,
     * tool messages get the function's name from tool_call_id */
    CHECK(decode(SRV_API_OAI_CHAT,
                 "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"},{\"role\":\"assistant\","
                 "\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":"
                 "\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}]},{\"role\":\"tool\","
                 "\"tool_call_id\":\"call_1\",\"content\":\"sunny\"}]}",
                 &r, &e));
    json_t *args = json_object_get(json_object_get(json_array_get(json_object_get(json_array_get(r.messages, 1),
                                                                                  "tool_calls"), 0), "function"),
                                   "arguments");
    CHECK(json_is_object(args) && !strcmp(json_string_value(json_object_get(args, "city")), "Paris"));
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(r.messages, 2), "tool_name")), "get_weather"));
    srv_gen_req_free(&r);
}

int main(void) {
    g_tools = json_loads(TOOLS, 0, NULL);
    CHECK(g_tools != NULL);
    for (size_t i = 0; i < sizeof CASES / sizeof *CASES; i++) {
        const fcase *c = &CASES[i];
        test_whole(c, false);
        test_whole(c, true);
        test_streamed(c, false);
        if (*c->thinking) test_streamed(c, true);
        test_grammar(c);
    }
    test_no_tools();
    test_grammar_errors();
    test_grammar_vocab();
    test_decode();
    json_decref(g_tools);
    return test_finish("test_server_tools");
}
