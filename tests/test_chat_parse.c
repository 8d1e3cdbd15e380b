/*
 * test_chat_parse.c - the chat-output parser on real-format model outputs of each
 * family (written from the families' published formats and chat templates), parsed
 * whole, split at every byte into two pushes, and byte by byte: the concatenated deltas
 * must equal the expected thinking / content / calls every time.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "loom_chat.h"
#include "test_util.h"

typedef struct exp_call {
    const char *name, *args, *id; /* id NULL: generated ("call_" + 8; Mistral: 9 alphanumerics) */
} exp_call;

typedef struct tcase {
    const char *label;
    loom_chat_syntax syn;
    const char *prompt;   /* rendered prompt tail (thinking opened by the template...) */
    const char *tools;    /* tools JSON or NULL */
    const char *out;      /* model output */
    const char *content;  /* expected */
    const char *thinking;
    exp_call calls[4];
    int n_calls;
} tcase;

#define SYN(f, t) {LOOM_CHAT_FORMAT_##f, LOOM_CHAT_THINKING_##t, NULL, NULL}

/* DeepSeek's full-width markers */
#define DS_CALLS_BEGIN "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_CALLS_END "<\xef\xbd\x9ctool\xe2\x96\x81" "calls\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DS_CALL_BEGIN "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "begin\xef\xbd\x9c>"
#define DS_CALL_END "<\xef\xbd\x9ctool\xe2\x96\x81" "call\xe2\x96\x81" "end\xef\xbd\x9c>"
#define DS_SEP "<\xef\xbd\x9ctool\xe2\x96\x81sep\xef\xbd\x9c>"

#define WEATHER_TOOLS \
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\"," \
    "\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{\"type\":\"integer\"},\"zip\":{\"type\":\"string\"}}}}}]"

static const tcase CASES[] = {
    {"hermes: one call", SYN(HERMES, NONE), NULL, NULL,
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
     "", "", {{"get_weather", "{\"city\":\"Paris\"}", NULL}}, 1},
    {"hermes: text then two calls", SYN(HERMES, NONE), NULL, NULL,
     "Let me check both.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lyon\", \"days\": 3}}\n</tool_call>",
     "Let me check both.\n", "",
     {{"get_weather", "{\"city\":\"Paris\"}", NULL}, {"get_weather", "{\"city\":\"Lyon\",\"days\":3}", NULL}}, 2},
    {"qwen3: thinking, then a call", SYN(HERMES, THINK_TAGS), "<|im_start|>assistant\n", NULL,
     "<think>\nThe user wants the weather.\nI should call the tool.\n</think>\n\n<tool_call>\n"
     "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
     "", "The user wants the weather.\nI should call the tool.", {{"get_weather", "{\"city\":\"Paris\"}", NULL}}, 1},
    {"qwen3: thinking then answer", SYN(HERMES, THINK_TAGS), NULL, NULL,
     "<think>\nshort\n</think>\n\nThe answer is 4.", "The answer is 4.", "short", {{0}}, 0},
    {"qwen3: thinking disabled by the template", SYN(HERMES, THINK_TAGS),
     "<|im_start|>assistant\n<think>\n\n</think>\n\n", NULL, "Hello there!", "Hello there!", "", {{0}}, 0},
    {"deepseek-r1: template opened <think>", SYN(DEEPSEEK_R1, THINK_TAGS), "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c><think>\n", NULL,
     "Okay, 2+2.\n</think>\n\n2 + 2 = 4", "2 + 2 = 4", "Okay, 2+2.", {{0}}, 0},
    {"hermes: malformed JSON is content", SYN(HERMES, NONE), NULL, NULL,
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>",
     "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>", "", {{0}}, 0},
    {"hermes: unterminated call at the end still parses", SYN(HERMES, NONE), NULL, NULL,
     "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}", "", "", {{"f", "{}", NULL}}, 1},
    {"hermes: truncated call is content", SYN(HERMES, NONE), NULL, NULL,
     "<tool_call>\n{\"name\": \"f\", \"argu", "<tool_call>\n{\"name\": \"f\", \"argu", "", {{0}}, 0},
    {"hermes: tag-like text stays text", SYN(HERMES, NONE), NULL, NULL, "a <tool> b <tool_cal c", "a <tool> b <tool_cal c",
     "", {{0}}, 0},
    {"llama3: JSON call", SYN(LLAMA3, NONE), NULL, NULL,
     "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", "", "",
     {{"get_weather", "{\"city\":\"Paris\"}", NULL}}, 1},
    {"llama3: two calls separated by ;", SYN(LLAMA3, NONE), NULL, NULL,
     "{\"type\": \"function\", \"name\": \"a\", \"parameters\": {\"x\": 1}}; {\"name\": \"b\", \"parameters\": {}}",
     "", "", {{"a", "{\"x\":1}", NULL}, {"b", "{}", NULL}}, 2},
    {"llama3: python_tag builtin", SYN(LLAMA3, NONE), NULL, NULL,
     "<|python_tag|>brave_search.call(query=\"weather in Paris\")", "", "",
     {{"brave_search", "{\"query\":\"weather in Paris\"}", NULL}}, 1},
    {"llama3: python_tag code", SYN(LLAMA3, NONE), NULL, NULL, "<|python_tag|>print(1+1)", "", "",
     {{"python", "{\"code\":\"print(1+1)\"}", NULL}}, 1},
    {"llama3: plain answer with braces later", SYN(LLAMA3, NONE), NULL, NULL, "Use {x} here.", "Use {x} here.", "", {{0}}, 0},
    {"llama3: JSON that is not a call", SYN(LLAMA3, NONE), NULL, NULL, "{\"answer\": 42}", "{\"answer\": 42}", "", {{0}}, 0},
    {"mistral nemo: array", SYN(MISTRAL, NONE), NULL, NULL,
     "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"a1b2c3d4e\"}]", "", "",
     {{"get_weather", "{\"city\":\"Paris\"}", "a1b2c3d4e"}}, 1},
    {"mistral v11: name[ARGS]", SYN(MISTRAL, NONE), NULL, NULL,
     "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Rome\"}", "", "",
     {{"get_weather", "{\"city\":\"Paris\"}", NULL}, {"get_weather", "{\"city\":\"Rome\"}", NULL}}, 2},
    {"mistral v11: call id", SYN(MISTRAL, NONE), NULL, NULL,
     "[TOOL_CALLS]get_weather[CALL_ID]abc123xyz[ARGS]{\"city\":\"Paris\"}", "", "",
     {{"get_weather", "{\"city\":\"Paris\"}", "abc123xyz"}}, 1},
    {"ministral 3: [THINK]", SYN(MISTRAL, MISTRAL), NULL, NULL,
     "[THINK]Need the tool.[/THINK][TOOL_CALLS]get_weather[ARGS]{\"city\":\"Paris\"}", "", "Need the tool.",
     {{"get_weather", "{\"city\":\"Paris\"}", NULL}}, 1},
    {"deepseek-r1: call", SYN(DEEPSEEK_R1, THINK_TAGS), NULL, NULL,
     "<think>\nI need the weather.\n</think>\n\n" DS_CALLS_BEGIN DS_CALL_BEGIN "function" DS_SEP
     "get_weather\n```json\n{\"city\": \"Paris\"}\n```" DS_CALL_END DS_CALLS_END,
     "", "I need the weather.", {{"get_weather", "{\"city\":\"Paris\"}", NULL}}, 1},
    {"deepseek-v3.1: two calls", SYN(DEEPSEEK_V3_1, THINK_TAGS), NULL, NULL,
     DS_CALLS_BEGIN DS_CALL_BEGIN "get_weather" DS_SEP "{\"city\": \"Paris\"}" DS_CALL_END DS_CALL_BEGIN "get_time" DS_SEP
     "{}" DS_CALL_END DS_CALLS_END,
     "", "", {{"get_weather", "{\"city\":\"Paris\"}", NULL}, {"get_time", "{}", NULL}}, 2},
    {"granite: call list", SYN(GRANITE, THINK_TAGS), NULL, NULL,
     "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]", "", "",
     {{"get_weather", "{\"city\":\"Paris\"}", NULL}}, 1},
    {"granite: thinking and response tags", SYN(GRANITE, THINK_TAGS), NULL, NULL,
     "<think>Hmm.</think><response>It is sunny.</response>", "It is sunny.", "Hmm.", {{0}}, 0},
    {"functionary v3.1", SYN(FUNCTIONARY_V3_1, NONE), NULL, NULL,
     "<function=get_weather>{\"city\": \"Paris\"}</function>", "", "", {{"get_weather", "{\"city\":\"Paris\"}", NULL}}, 1},
    {"functionary v3.2: text then call", SYN(FUNCTIONARY_V3_2, NONE), "<|start_header_id|>assistant<|end_header_id|>\n\n>>>",
     NULL, "all\nChecking.>>>get_weather\n{\"city\": \"Paris\"}", "Checking.", "",
     {{"get_weather", "{\"city\":\"Paris\"}", NULL}}, 1},
    {"command-r7b", SYN(COMMAND_R7B, COMMAND_R7B), NULL, NULL,
     "<|START_THINKING|>I will look it up.<|END_THINKING|><|START_ACTION|>[\n    {\"tool_call_id\": \"0\", "
     "\"tool_name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n]<|END_ACTION|>",
     "", "I will look it up.", {{"get_weather", "{\"city\":\"Paris\"}", "0"}}, 1},
    {"command-r7b: response", SYN(COMMAND_R7B, COMMAND_R7B), NULL, NULL,
     "<|START_THINKING|>x<|END_THINKING|><|START_RESPONSE|>Sunny.<|END_RESPONSE|>", "Sunny.", "x", {{0}}, 0},
    {"harmony: analysis then final", SYN(HARMONY, HARMONY), "<|start|>assistant", NULL,
     "<|channel|>analysis<|message|>User asks 2+2.<|end|><|start|>assistant<|channel|>final<|message|>4.", "4.",
     "User asks 2+2.", {{0}}, 0},
    {"harmony: tool call", SYN(HARMONY, HARMONY), "<|start|>assistant", NULL,
     "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
     "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>",
     "", "Need weather.", {{"get_weather", "{\"city\":\"Paris\"}", NULL}}, 1},
    {"harmony: recipient before channel", SYN(HARMONY, HARMONY), "<|start|>assistant", NULL,
     " to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}", "", "",
     {{"get_weather", "{\"city\":\"Paris\"}", NULL}}, 1},
    {"harmony: plain text", SYN(HARMONY, HARMONY), "<|start|>assistant", NULL, "Just text.", "Just text.", "", {{0}}, 0},
    {"qwen3-coder xml", SYN(XML_FUNCTION, NONE), NULL, WEATHER_TOOLS,
     "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
     "<parameter=zip>\n75001\n</parameter>\n</function>\n</tool_call>",
     "", "", {{"get_weather", "{\"city\":\"Paris\",\"days\":3,\"zip\":\"75001\"}", NULL}}, 1},
    {"seed-oss xml", SYN(XML_FUNCTION, SEED), NULL, NULL,
     "<seed:think>plan</seed:think><seed:tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n"
     "</function>\n</seed:tool_call>",
     "", "plan", {{"get_weather", "{\"city\":\"Paris\"}", NULL}}, 1},
    {"glm", SYN(GLM, THINK_TAGS), NULL, NULL,
     "<think></think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>", "", "",
     {{"get_weather", "{\"city\":\"Paris\"}", NULL}}, 1},
    {"minimax", SYN(MINIMAX, THINK_TAGS), NULL, NULL,
     "<think>ok</think>\n<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">Paris</parameter>\n"
     "</invoke>\n</minimax:tool_call>",
     "", "ok", {{"get_weather", "{\"city\":\"Paris\"}", NULL}}, 1},
    {"kimi k2", SYN(KIMI_K2, NONE), NULL, NULL,
     "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>"
     "{\"city\": \"Paris\"}<|tool_call_end|><|tool_calls_section_end|>",
     "", "", {{"get_weather", "{\"city\":\"Paris\"}", "functions.get_weather:0"}}, 1},
    {"json array tag (apriel)", {LOOM_CHAT_FORMAT_JSON_ARRAY_TAG, LOOM_CHAT_THINKING_NONE, "<tool_calls>", "</tool_calls>"},
     NULL, NULL, "<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]</tool_calls>", "", "",
     {{"get_weather", "{\"city\":\"Paris\"}", NULL}}, 1},
    {"plain: markup is text", SYN(PLAIN, NONE), NULL, NULL, "<tool_call>{}</tool_call> <think>x</think>",
     "<tool_call>{}</tool_call> <think>x</think>", "", {{0}}, 0},
    {"unicode content and arguments", SYN(HERMES, THINK_TAGS), NULL, NULL,
     "<think>\xe4\xb8\x96\xe7\x95\x8c</think>h\xc3\xa9llo <tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"\xf0\x9f\xa6\x99\"}}</tool_call>",
     "h\xc3\xa9llo ", "\xe4\xb8\x96\xe7\x95\x8c", {{"f", "{\"s\":\"\xf0\x9f\xa6\x99\"}", NULL}}, 1},
};

typedef struct acc {
    char content[4096], thinking[4096];
    size_t nc, nt;
    char names[8][64], args[8][256], ids[8][64];
    int n_calls;
    bool bad_index;
} acc;

static void add(acc *a, const loom_chat_delta *d) {
    if (a->nc + d->content_len < sizeof a->content) memcpy(a->content + a->nc, d->content, d->content_len), a->nc += d->content_len;
    if (a->nt + d->thinking_len < sizeof a->thinking) memcpy(a->thinking + a->nt, d->thinking, d->thinking_len), a->nt += d->thinking_len;
    for (int i = 0; i < d->n_calls && a->n_calls < 8; i++) {
        if (d->calls[i].index != a->n_calls) a->bad_index = true;
        snprintf(a->names[a->n_calls], 64, "%s", d->calls[i].name);
        snprintf(a->args[a->n_calls], 256, "%s", d->calls[i].arguments);
        snprintf(a->ids[a->n_calls], 64, "%s", d->calls[i].id);
        a->n_calls++;
    }
}

/* Feed the output in pieces cut at cuts[0..n_cuts) and compare with the case. */
static bool run_case(const tcase *c, const size_t *cuts, int n_cuts, const char *how) {
    loom_chat_parser_params pp = loom_chat_parser_default_params();
    pp.syntax = c->syn;
    pp.prompt = c->prompt;
    pp.prompt_len = c->prompt ? strlen(c->prompt) : 0;
    pp.tools_json = c->tools;
    loom_chat_parser *p;
    loom_error err = {0};
    if (loom_chat_parser_new(&pp, &p, &err)) {
        CHECK_MSG(0, "%s: new: %s", c->label, err.msg);
        return false;
    }
    acc a;
    memset(&a, 0, sizeof a);
    size_t n = strlen(c->out), prev = 0;
    bool ok = true;
    for (int k = 0; k <= n_cuts; k++) {
        size_t to = k < n_cuts ? cuts[k] : n;
        loom_chat_delta d;
        if (loom_chat_parser_push(p, c->out + prev, to - prev, &d, &err)) ok = false;
        else add(&a, &d);
        prev = to;
    }
    loom_chat_delta d;
    if (loom_chat_parser_finish(p, &d, &err)) ok = false;
    else add(&a, &d);
    ok = ok && a.nc == strlen(c->content) && !memcmp(a.content, c->content, a.nc);
    ok = ok && a.nt == strlen(c->thinking) && !memcmp(a.thinking, c->thinking, a.nt);
    ok = ok && a.n_calls == c->n_calls && !a.bad_index;
    for (int i = 0; ok && i < c->n_calls; i++) {
        ok = !strcmp(a.names[i], c->calls[i].name) && !strcmp(a.args[i], c->calls[i].args);
        if (c->calls[i].id) ok = ok && !strcmp(a.ids[i], c->calls[i].id);
        else if (c->syn.format == LOOM_CHAT_FORMAT_MISTRAL) { /* Mistral: 9 letters and digits */
            ok = ok && strlen(a.ids[i]) == 9;
            for (int k = 0; ok && k < 9; k++) ok = isalnum((unsigned char)a.ids[i][k]) != 0;
        } else ok = ok && strlen(a.ids[i]) == 13 && !strncmp(a.ids[i], "call_", 5);
    }
    /* the totals agree with the deltas */
    loom_chat_delta all;
    loom_chat_parser_result(p, &all);
    ok = ok && all.content_len == a.nc && all.thinking_len == a.nt && all.n_calls == a.n_calls;
    if (!ok) {
        CHECK_MSG(0, "%s (%s): content [%.*s] thinking [%.*s] calls %d%s%s%s", c->label, how, (int)a.nc, a.content,
                  (int)a.nt, a.thinking, a.n_calls, a.n_calls ? " first " : "", a.n_calls ? a.names[0] : "",
                  a.n_calls ? a.args[0] : "");
    } else {
        CHECK(ok);
    }
    loom_chat_parser_free(p);
    return ok;
}

static void test_cases(void) {
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        const tcase *c = &CASES[i];
        size_t n = strlen(c->out);
        if (!run_case(c, NULL, 0, "whole")) continue;
        bool ok = true;
        for (size_t k = 1; k < n && ok; k++) ok = run_case(c, &k, 1, "split in two");
        if (!ok) continue;
        size_t cuts[2048];
        size_t m = n - 1 < 2048 ? n - 1 : 2048;
        for (size_t k = 0; k < m; k++) cuts[k] = k + 1;
        run_case(c, cuts, (int)m, "byte by byte");
    }
}

/* A partial marker is never shown as text: every prefix of the output yields content
 * that is a prefix of the final content and contains no part of a tool call. */
static void test_no_partial_markup(void) {
    const char *out = "Sure.<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>";
    loom_chat_parser_params pp = loom_chat_parser_default_params();
    pp.syntax = (loom_chat_syntax)SYN(HERMES, NONE);
    loom_chat_parser *p;
    CHECK(loom_chat_parser_new(&pp, &p, NULL) == LOOM_OK);
    char seen[256] = "";
    size_t ns = 0;
    for (size_t i = 0; out[i]; i++) {
        loom_chat_delta d;
        CHECK(loom_chat_parser_push(p, out + i, 1, &d, NULL) == LOOM_OK);
        memcpy(seen + ns, d.content, d.content_len);
        ns += d.content_len;
        seen[ns] = '\0';
        CHECK_MSG(!strchr(seen, '<'), "partial markup leaked after %zu bytes: [%s]", i + 1, seen);
    }
    loom_chat_delta d;
    CHECK(loom_chat_parser_finish(p, &d, NULL) == LOOM_OK);
    CHECK(!strcmp(seen, "Sure."));
    /* push after finish is an error; finish twice is empty */
    CHECK(loom_chat_parser_push(p, "x", 1, &d, NULL) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_chat_parser_finish(p, &d, NULL) == LOOM_OK && d.content_len == 0 && d.n_calls == 0);
    loom_chat_parser_free(p);
}

static void test_options(void) {
    /* parse_tools off: the call is text; parse_thinking off: think tags are text */
    loom_chat_parser_params pp = loom_chat_parser_default_params();
    pp.syntax = (loom_chat_syntax)SYN(HERMES, THINK_TAGS);
    pp.parse_tools = false;
    pp.parse_thinking = false;
    loom_chat_parser *p;
    CHECK(loom_chat_parser_new(&pp, &p, NULL) == LOOM_OK);
    const char *out = "<think>a</think><tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>";
    loom_chat_delta d;
    CHECK(loom_chat_parser_push(p, out, strlen(out), &d, NULL) == LOOM_OK);
    CHECK(loom_chat_parser_finish(p, &d, NULL) == LOOM_OK);
    loom_chat_parser_result(p, &d);
    CHECK(d.content_len == strlen(out) && !memcmp(d.content, out, d.content_len));
    CHECK(d.n_calls == 0 && d.thinking_len == 0);
    loom_chat_parser_free(p);

    /* bad arguments */
    loom_error err = {0};
    pp = loom_chat_parser_default_params();
    pp.tools_json = "{not json";
    p = (loom_chat_parser *)&err;
    CHECK(loom_chat_parser_new(&pp, &p, &err) == LOOM_ERR_FORMAT && p == NULL);
    pp.tools_json = NULL;
    pp.syntax.format = LOOM_CHAT_FORMAT_COUNT;
    CHECK(loom_chat_parser_new(&pp, &p, NULL) == LOOM_ERR_INVALID_ARG && p == NULL);
    CHECK(loom_chat_parser_new(NULL, &p, NULL) == LOOM_ERR_INVALID_ARG);

    /* ids are distinct and reproducible from the seed */
    pp = loom_chat_parser_default_params();
    pp.syntax = (loom_chat_syntax)SYN(HERMES, NONE);
    pp.id_seed = 42;
    char ids[2][3][16];
    for (int r = 0; r < 2; r++) {
        CHECK(loom_chat_parser_new(&pp, &p, NULL) == LOOM_OK);
        const char *o = "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call><tool_call>{\"name\":\"b\",\"arguments\":{}}"
                        "</tool_call><tool_call>{\"name\":\"c\",\"arguments\":{}}</tool_call>";
        CHECK(loom_chat_parser_push(p, o, strlen(o), &d, NULL) == LOOM_OK);
        CHECK(loom_chat_parser_finish(p, &d, NULL) == LOOM_OK);
        loom_chat_parser_result(p, &d);
        CHECK_EQ_INT(d.n_calls, 3);
        for (int i = 0; i < 3 && i < d.n_calls; i++) snprintf(ids[r][i], 16, "%s", d.calls[i].id);
        loom_chat_parser_free(p);
    }
    CHECK(strcmp(ids[0][0], ids[0][1]) && strcmp(ids[0][1], ids[0][2]) && strcmp(ids[0][0], ids[0][2]));
    CHECK(!strcmp(ids[0][0], ids[1][0]) && !strcmp(ids[0][2], ids[1][2]));
}

/* Detection from template text (snippets in each family's style). */
static void test_detect(void) {
    struct { const char *tmpl; loom_chat_format f; loom_chat_thinking t; } D[] = {
        {"{{ '<|start|>assistant<|channel|>final<|message|>' }}", LOOM_CHAT_FORMAT_HARMONY, LOOM_CHAT_THINKING_HARMONY},
        {"{{ '[TOOL_CALLS]' + tool_calls|tojson }}", LOOM_CHAT_FORMAT_MISTRAL, LOOM_CHAT_THINKING_NONE},
        {"[THINK]{{ t }}[/THINK][TOOL_CALLS]{{ n }}[ARGS]", LOOM_CHAT_FORMAT_MISTRAL, LOOM_CHAT_THINKING_MISTRAL},
        {"<think>\\n{{ '<tool_call>\\n' }}", LOOM_CHAT_FORMAT_HERMES, LOOM_CHAT_THINKING_THINK_TAGS},
        {"<tool_call>\\n{\"name\": ", LOOM_CHAT_FORMAT_HERMES, LOOM_CHAT_THINKING_NONE},
        {"{{'" DS_CALLS_BEGIN DS_CALL_BEGIN "' + tool['type'] + '" DS_SEP "' + name + '\\n```json\\n'}}",
         LOOM_CHAT_FORMAT_DEEPSEEK_R1, LOOM_CHAT_THINKING_NONE},
        {"<think>{{'" DS_CALLS_BEGIN DS_CALL_BEGIN "' + name + '" DS_SEP "' + args}}", LOOM_CHAT_FORMAT_DEEPSEEK_V3_1,
         LOOM_CHAT_THINKING_THINK_TAGS},
        {"<|tool_call|>{{ tool_calls | tojson }}<think>", LOOM_CHAT_FORMAT_GRANITE, LOOM_CHAT_THINKING_THINK_TAGS},
        {"{{ '<|START_THINKING|>' }}<|START_ACTION|>", LOOM_CHAT_FORMAT_COMMAND_R7B, LOOM_CHAT_THINKING_COMMAND_R7B},
        {">>>all\\n", LOOM_CHAT_FORMAT_FUNCTIONARY_V3_2, LOOM_CHAT_THINKING_NONE},
        {"<function={{ name }}>{{ args }}</function><|python_tag|>", LOOM_CHAT_FORMAT_FUNCTIONARY_V3_1,
         LOOM_CHAT_THINKING_NONE},
        {"<tool_call>\\n<function={{ n }}>\\n<parameter={{ k }}>", LOOM_CHAT_FORMAT_XML_FUNCTION, LOOM_CHAT_THINKING_NONE},
        {"<tool_call>{{ n }}<arg_key>{{ k }}</arg_key>", LOOM_CHAT_FORMAT_GLM, LOOM_CHAT_THINKING_NONE},
        {"<minimax:tool_call>", LOOM_CHAT_FORMAT_MINIMAX, LOOM_CHAT_THINKING_NONE},
        {"<|tool_calls_section_begin|>", LOOM_CHAT_FORMAT_KIMI_K2, LOOM_CHAT_THINKING_NONE},
        {"<|python_tag|>{{ x }}", LOOM_CHAT_FORMAT_LLAMA3, LOOM_CHAT_THINKING_NONE},
        {"<|start_header_id|>user<|end_header_id|> {\"name\": function name, \"parameters\": dictionary}",
         LOOM_CHAT_FORMAT_LLAMA3, LOOM_CHAT_THINKING_NONE},
        {"{% for m in messages %}<start_of_turn>{{ m.content }}{% endfor %}", LOOM_CHAT_FORMAT_PLAIN,
         LOOM_CHAT_THINKING_NONE},
        {"", LOOM_CHAT_FORMAT_PLAIN, LOOM_CHAT_THINKING_NONE},
    };
    for (size_t i = 0; i < sizeof D / sizeof D[0]; i++) {
        loom_chat_syntax s = loom_chat_detect(D[i].tmpl, strlen(D[i].tmpl));
        CHECK_MSG(s.format == D[i].f && s.thinking == D[i].t, "template %zu: got %s/%s, want %s/%s", i,
                  loom_chat_format_name(s.format), loom_chat_thinking_name(s.thinking), loom_chat_format_name(D[i].f),
                  loom_chat_thinking_name(D[i].t));
    }
    loom_chat_syntax s = loom_chat_detect(NULL, 0);
    CHECK(s.format == LOOM_CHAT_FORMAT_PLAIN);
    CHECK(!strcmp(loom_chat_format_name(LOOM_CHAT_FORMAT_COUNT), "?"));
}


/* Detection on the real templates in tests/data/templates (shared + llama.cpp corpus). */
static void test_detect_real(void) {
    static const struct { const char *file, *format, *thinking; } R[] = {
        {"shared/NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "hermes", "none"},
        {"shared/Qwen-Qwen2.5-7B-Instruct", "hermes", "none"},
        {"shared/Qwen-Qwen3-0.6B", "hermes", "think"},
        {"shared/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", "deepseek-r1", "think"},
        {"shared/ibm-granite-granite-3.3-2B-Instruct", "granite", "think"},
        {"shared/meta-llama-Llama-3.1-8B-Instruct", "llama3", "none"},
        {"shared/meta-llama-Llama-3.2-3B-Instruct", "llama3", "none"},
        {"shared/mistralai-Mistral-Nemo-Instruct-2407", "mistral", "none"},
        {"shared/openai-gpt-oss-120b", "harmony", "harmony"},
        {"shared/HuggingFaceTB-SmolLM3-3B", "plain", "think"},
        {"shared/google-gemma-2-2b-it", "plain", "none"},
        {"shared/microsoft-Phi-3.5-mini-instruct", "plain", "none"},
        {"corpus/Qwen-QwQ-32B", "hermes", "think"},
        {"corpus/Qwen3-Coder", "xml-function", "none"},
        {"corpus/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "xml-function", "think"},
        {"corpus/ByteDance-Seed-OSS", "xml-function", "seed"},
        {"corpus/GLM-4.6", "glm", "think"},
        {"corpus/MiniMax-M2", "minimax", "think"},
        {"corpus/Kimi-K2-Instruct", "kimi-k2", "none"},
        {"corpus/CohereForAI-c4ai-command-r7b-12-2024-tool_use", "command-r7b", "command-r7b"},
        {"corpus/meetkai-functionary-medium-v3.1", "functionary-v3.1", "none"},
        {"corpus/meetkai-functionary-medium-v3.2", "functionary-v3.2", "none"},
        {"corpus/deepseek-ai-DeepSeek-V3.1", "deepseek-v3.1", "think"},
        {"corpus/Mistral-Small-3.2-24B-Instruct-2506", "mistral", "none"},
        {"corpus/mistralai-Ministral-3-14B-Reasoning-2512", "mistral", "mistral"},
        {"corpus/unsloth-mistral-Devstral-Small-2507", "mistral", "none"},
        {"corpus/Apriel-1.6-15b-Thinker-fixed", "json-array-tag", "none"},
        {"corpus/NVIDIA-Nemotron-Nano-v2", "json-array-tag", "think"},
        {"corpus/meta-llama-Llama-3.3-70B-Instruct", "llama3", "none"},
        {"corpus/NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "hermes", "none"},
    };
    for (size_t i = 0; i < sizeof R / sizeof R[0]; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "tests/data/templates/%s.jinja", R[i].file);
        FILE *f = fopen(test_path(rel), "rb");
        CHECK_MSG(f != NULL, "cannot open %s", rel);
        if (!f) continue;
        static char buf[1 << 18];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        loom_chat_syntax s = loom_chat_detect(buf, n);
        CHECK_MSG(!strcmp(loom_chat_format_name(s.format), R[i].format) &&
                      !strcmp(loom_chat_thinking_name(s.thinking), R[i].thinking),
                  "%s: got %s/%s, want %s/%s", R[i].file, loom_chat_format_name(s.format),
                  loom_chat_thinking_name(s.thinking), R[i].format, R[i].thinking);
    }
}

int main(void) {
    test_cases();
    test_no_partial_markup();
    test_options();
    test_detect();
    test_detect_real();
    return test_finish("test_chat_parse");
}
