/* Tool calls and thinking over HTTP (issue #24) with the tiny test model (stories260K)
 * carrying real chat templates (tests/data/templates/shared): Qwen3's (Hermes-style
 * <tool_call>, <think>, enable_thinking) and DeepSeek-R1's (its generation prompt opens
 * <think>).
 *   - tool_choice "required" / a named function / parallel_tool_calls false force a
 *     call in Qwen's syntax: the returned calls' arguments validate against the tool's
 *     JSON schema (checked by Python's jsonschema, tests/grammar/validate_json.py), in
 *     the OpenAI API (finish_reason "tool_calls", arguments as JSON text, streamed as
 *     tool_calls deltas with index and id, no call syntax in the text) and in the
 *     Ollama API (message.tool_calls with arguments as objects; tool_choice is Loom's
 *     extension there);
 *   - tool_choice "none" hides the tools from the template (the prompt is the one
 *     without tools);
 *   - a follow-up turn with the assistant's tool_calls and the tool's result renders
 *     (the same prompt from both APIs, longer with a longer result) and runs; with
 *     Mistral Nemo's template (its syntax forced too) the returned call's id passes the
 *     template's 9-character check on the next turn; R1's reads tool_call.type;
 *   - Llama 3.1's and gpt-oss's (Harmony) syntaxes forced too;
 *   - think: false renders Qwen3's empty think block and returns no thinking; with
 *     R1's template the answer starts inside <think>: think true/unset returns it as
 *     message.thinking / reasoning_content / generate's thinking (equal streamed and
 *     whole), false renders the template's closed block and returns none.
 * Runs under ASan in the sanitizer build. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "server_test_common.h"

#define SCHEMA                                                                                             \
    "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":12},\"unit\":{\"enum\":" \
    "[\"celsius\",\"fahrenheit\"]},\"days\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":7}},"               \
    "\"required\":[\"city\",\"unit\"],\"additionalProperties\":false}"
#define SCHEMA_TIME                                                                                         \
    "{\"type\":\"object\",\"properties\":{\"zone\":{\"type\":\"string\",\"enum\":[\"UTC\",\"CET\",\"PST\"]}}," \
    "\"required\":[\"zone\"],\"additionalProperties\":false}"
#define TOOLS                                                                                                 \
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather\",\"parameters\":" \
    SCHEMA "}},{\"type\":\"function\",\"function\":{\"name\":\"get_time\",\"description\":\"Time\",\"parameters\":" SCHEMA_TIME "}}]"
#define USER "[{\"role\":\"user\",\"content\":\"What is the weather in Paris?\"}]"

static int g_port;
static char g_models[512];
static FILE *g_jsonl; /* arguments to validate */
static int g_n_validated;

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    s[n] = 0;
    fclose(f);
    return s;
}

static json_t *post(const char *path, const char *body, int *status) {
    test_http r;
    *status = 0;
    if (!test_http_do(g_port, "POST", path, body, NULL, &r)) return NULL;
    *status = r.status;
    json_t *j = json_loads(r.body, 0, NULL);
    if (!j && r.status == 200) fprintf(stderr, "not JSON: %s\n", r.body);
    if (r.status != 200) fprintf(stderr, "%s -> %d %s\n", path, r.status, r.body);
    test_http_free(&r);
    return j;
}

/* A streamed body as its lines (NDJSON) or its SSE data payloads, parsed. */
static json_t *post_stream(const char *path, const char *body, bool sse, bool *done_marker) {
    test_http r;
    json_t *a = json_array();
    *done_marker = false;
    if (!test_http_do(g_port, "POST", path, body, NULL, &r)) return a;
    CHECK_EQ_INT(r.status, 200);
    char *save = NULL;
    for (char *line = strtok_r(r.body, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (sse) {
            if (strncmp(line, "data: ", 6)) continue;
            line += 6;
            if (!strcmp(line, "[DONE]")) {
                *done_marker = true;
                continue;
            }
        }
        json_t *j = json_loads(line, 0, NULL);
        CHECK_MSG(j != NULL, "bad stream line: %s", line);
        if (j) json_array_append_new(a, j);
    }
    test_http_free(&r);
    return a;
}

static const char *schema_of(const char *name) { return !strcmp(name, "get_weather") ? SCHEMA : SCHEMA_TIME; }

/* Record a call's arguments (JSON text) for the jsonschema check. */
static void record_args(const char *label, const char *name, const char *args) {
    json_t *schema = json_loads(schema_of(name), 0, NULL);
    size_t n = strlen(args);
    char *hex = malloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) snprintf(hex + 2 * i, 3, "%02x", (unsigned char)args[i]);
    json_t *rec = json_pack("{s:s,s:i,s:o,s:s,s:b}", "name", label, "seed", g_n_validated, "schema", schema, "hex",
                            hex, "complete", 1);
    char *line = json_dumps(rec, JSON_COMPACT);
    fprintf(g_jsonl, "%s\n", line);
    free(line);
    free(hex);
    json_decref(rec);
    g_n_validated++;
}

static char *oai_body(const char *extra, const char *messages, bool stream) {
    char *b = malloc(8192);
    snprintf(b, 8192, "{\"model\":\"qwen3\",\"messages\":%s,\"tools\":" TOOLS ",\"max_tokens\":160,\"stream\":%s%s%s}",
             messages, stream ? "true" : "false", extra ? "," : "", extra ? extra : "");
    return b;
}

/* OpenAI: forced calls, whole. Returns the number of calls. */
static int oai_forced(const char *label, const char *extra, const char *only_name, bool may_cut) {
    char *body = oai_body(extra, USER, false);
    int st;
    json_t *j = post("/v1/chat/completions", body, &st);
    free(body);
    CHECK_EQ_INT(st, 200);
    json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
    const char *fr = json_string_value(json_object_get(ch, "finish_reason"));
    bool cut = may_cut && fr && !strcmp(fr, "length");
    CHECK_MSG(fr && (!strcmp(fr, "tool_calls") || cut), "%s: finish_reason %s", label, fr ? fr : "(none)");
    json_t *m = json_object_get(ch, "message");
    json_t *tc = json_object_get(m, "tool_calls");
    int n = (int)json_array_size(tc);
    CHECK_MSG(n >= 1, "%s: no tool_calls: %s", label, json_dumps(m, 0));
    const json_t *content = json_object_get(m, "content");
    if (cut) { /* the cut-off call comes back as text, verbatim */
        const char *t = json_is_string(content) ? json_string_value(content) : "";
        while (*t == '\n') t++;
        size_t tl = strlen(t);
        CHECK_MSG(tl && !strncmp(t, "<tool_call>", tl < 11 ? tl : 11), "cut: content '%s'", t);
    }
    else CHECK_MSG(json_is_null(content) || (json_is_string(content) && !strstr(json_string_value(content), "<tool_call")),
                   "%s: call syntax in the content", label);
    for (int i = 0; i < n; i++) {
        json_t *c = json_array_get(tc, (size_t)i);
        CHECK(!strcmp(json_string_value(json_object_get(c, "type")), "function"));
        const char *id = json_string_value(json_object_get(c, "id"));
        CHECK(id && !strncmp(id, "call_", 5));
        json_t *f = json_object_get(c, "function");
        const char *name = json_string_value(json_object_get(f, "name"));
        const char *args = json_string_value(json_object_get(f, "arguments"));
        CHECK(name && args);
        if (!name || !args) continue;
        CHECK_MSG(!strcmp(name, "get_weather") || !strcmp(name, "get_time"), "%s: name %s", label, name);
        if (only_name) CHECK(!strcmp(name, only_name));
        record_args(label, name, args);
    }
    json_decref(j);
    return n;
}

static void test_forced_openai(void) {
    int total = 0;
    for (int seed = 1; seed <= 2; seed++) {
        char extra[256];
        snprintf(extra, sizeof extra, "\"tool_choice\":\"required\",\"parallel_tool_calls\":false,\"seed\":%d,"
                 "\"temperature\":0.9", seed);
        CHECK_EQ_INT(oai_forced("required, one call", extra, NULL, false), 1);
        if (seed > 1) continue; /* (each request evaluates a ~800-token prompt: keep the count small) */
        snprintf(extra, sizeof extra, "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_time\"}},"
                 "\"parallel_tool_calls\":false,\"seed\":%d,\"temperature\":0.9", seed);
        CHECK_EQ_INT(oai_forced("named get_time", extra, "get_time", false), 1);
        /* parallel calls: the weak model may go on writing calls until max_tokens, so
         * the last one can be cut off ("length", the cut call returned as text) */
        snprintf(extra, sizeof extra, "\"tool_choice\":\"required\",\"seed\":%d,\"temperature\":0.5,\"max_tokens\":200",
                 seed);
        total += oai_forced("required, parallel", extra, NULL, true);
    }
    printf("parallel: %d calls in one request\n", total);
    CHECK(total >= 2);
}

/* OpenAI streaming: role first, tool_calls deltas with index/id/name/arguments, no
 * call syntax as text, finish_reason "tool_calls", usage, [DONE]. */
static void test_forced_openai_stream(void) {
    char *body = oai_body("\"tool_choice\":\"required\",\"parallel_tool_calls\":false,\"seed\":3,\"temperature\":0.9,"
                          "\"stream_options\":{\"include_usage\":true}",
                          USER, true);
    bool done = false;
    json_t *chunks = post_stream("/v1/chat/completions", body, true, &done);
    free(body);
    CHECK(done);
    int n_calls = 0;
    const char *finish = NULL;
    bool usage = false;
    for (size_t i = 0; i < json_array_size(chunks); i++) {
        json_t *c = json_array_get(chunks, i);
        if (json_object_get(c, "usage")) usage = true;
        json_t *ch = json_array_get(json_object_get(c, "choices"), 0);
        if (!ch) continue;
        json_t *d = json_object_get(ch, "delta");
        if (i == 0) CHECK(!strcmp(json_string_value(json_object_get(d, "role")), "assistant"));
        const char *t = json_string_value(json_object_get(d, "content"));
        CHECK_MSG(!t || (!strstr(t, "<tool") && !strchr(t, '{')), "call syntax streamed as text: %s", t);
        if (json_is_string(json_object_get(ch, "finish_reason"))) finish = json_string_value(json_object_get(ch, "finish_reason"));
        json_t *tc = json_object_get(d, "tool_calls");
        for (size_t k = 0; k < json_array_size(tc); k++) {
            json_t *x = json_array_get(tc, k);
            CHECK_EQ_INT((int)json_integer_value(json_object_get(x, "index")), n_calls);
            CHECK(json_is_string(json_object_get(x, "id")));
            json_t *f = json_object_get(x, "function");
            const char *name = json_string_value(json_object_get(f, "name"));
            const char *args = json_string_value(json_object_get(f, "arguments"));
            CHECK(name && args);
            if (name && args) record_args("stream", name, args);
            n_calls++;
        }
    }
    CHECK_EQ_INT(n_calls, 1);
    CHECK(finish && !strcmp(finish, "tool_calls"));
    CHECK(usage);
    json_decref(chunks);
}

/* Ollama: tool_choice (Loom's extension) forces a call; message.tool_calls has
 * arguments as an object; streaming sends the call in one chunk; done_reason "stop". */
static void test_forced_ollama(void) {
    for (int stream = 0; stream < 2; stream++) {
        char body[8192];
        snprintf(body, sizeof body, "{\"model\":\"qwen3\",\"messages\":" USER ",\"tools\":" TOOLS ",\"tool_choice\":"
                 "\"required\",\"parallel_tool_calls\":false,\"stream\":%s,\"options\":{\"seed\":5,\"temperature\":0.9,"
                 "\"num_predict\":160}}", stream ? "true" : "false");
        json_t *calls = json_array();
        const char *reason = NULL;
        json_t *keep = NULL;
        if (stream) {
            bool dm;
            keep = post_stream("/api/chat", body, false, &dm);
            for (size_t i = 0; i < json_array_size(keep); i++) {
                json_t *m = json_object_get(json_array_get(keep, i), "message");
                const char *t = json_string_value(json_object_get(m, "content"));
                CHECK(!t || !strstr(t, "<tool"));
                if (json_object_get(m, "tool_calls")) json_array_extend(calls, json_object_get(m, "tool_calls"));
                if (json_is_true(json_object_get(json_array_get(keep, i), "done")))
                    reason = json_string_value(json_object_get(json_array_get(keep, i), "done_reason"));
            }
        } else {
            int st;
            keep = post("/api/chat", body, &st);
            CHECK_EQ_INT(st, 200);
            json_t *m = json_object_get(keep, "message");
            if (json_object_get(m, "tool_calls")) json_array_extend(calls, json_object_get(m, "tool_calls"));
            reason = json_string_value(json_object_get(keep, "done_reason"));
        }
        CHECK_EQ_INT((int)json_array_size(calls), 1);
        CHECK(reason && !strcmp(reason, "stop"));
        json_t *f = json_object_get(json_array_get(calls, 0), "function");
        json_t *args = json_object_get(f, "arguments");
        const char *name = json_string_value(json_object_get(f, "name"));
        CHECK(json_is_object(args) && name);
        if (json_is_object(args) && name) {
            char *t = json_dumps(args, JSON_COMPACT);
            record_args("ollama", name, t);
            free(t);
        }
        json_decref(calls);
        json_decref(keep);
    }
}

/* Mistral Nemo's syntax ([TOOL_CALLS][{...}]) forced, then the next turn with the
 * returned call: the template checks that ids are 9 letters and digits. */
static void test_mistral_round_trip(void) {
    char body[12000];
    snprintf(body, sizeof body, "{\"model\":\"nemo\",\"messages\":" USER ",\"tools\":" TOOLS ",\"tool_choice\":"
             "\"required\",\"parallel_tool_calls\":false,\"seed\":2,\"temperature\":0.9,\"max_tokens\":160}");
    int st;
    json_t *j = post("/v1/chat/completions", body, &st);
    CHECK_EQ_INT(st, 200);
    json_t *m = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "message");
    json_t *tc = json_object_get(m, "tool_calls");
    CHECK_EQ_INT((int)json_array_size(tc), 1);
    json_t *c = json_array_get(tc, 0);
    const char *id = json_string_value(json_object_get(c, "id"));
    CHECK(id && strlen(id) == 9);
    json_t *f = json_object_get(c, "function");
    const char *name = json_string_value(json_object_get(f, "name"));
    const char *args = json_string_value(json_object_get(f, "arguments"));
    if (name && args) record_args("nemo", name, args);
    if (id && name && args) {
        json_t *msgs = json_pack("[{s:s,s:s},{s:s,s:n,s:O},{s:s,s:s,s:s}]", "role", "user", "content",
                                 "What is the weather in Paris?", "role", "assistant", "content", "tool_calls", tc,
                                 "role", "tool", "tool_call_id", id, "content", "sunny");
        char *ms = json_dumps(msgs, JSON_COMPACT);
        snprintf(body, sizeof body, "{\"model\":\"nemo\",\"messages\":%s,\"tools\":" TOOLS ",\"max_tokens\":8}", ms);
        json_t *j2 = post("/v1/chat/completions", body, &st);
        CHECK_EQ_INT(st, 200);
        json_decref(j2);
        free(ms);
        json_decref(msgs);
    }
    json_decref(j);
}

/* Other families' syntaxes forced end to end (one call each, arguments validated):
 * Llama 3.1 (a bare JSON call) and gpt-oss (Harmony: <|channel|>commentary
 * to=functions.X ... <|message|>{args}). (Granite's JSON-array form is Nemo's; its
 * 1900-token tools prompt costs too much under ASan.) */
static void test_forced_families(void) {
    static const char *const models[] = {"llama31", "gptoss"};
    for (int i = 0; i < 2; i++) {
        char body[8192];
        snprintf(body, sizeof body, "{\"model\":\"%s\",\"messages\":" USER ",\"tools\":" TOOLS ",\"tool_choice\":"
                 "\"required\",\"parallel_tool_calls\":false,\"seed\":1,\"temperature\":0.9,\"max_tokens\":160}",
                 models[i]);
        int st;
        json_t *j = post("/v1/chat/completions", body, &st);
        CHECK_EQ_INT(st, 200);
        json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
        const char *fr = json_string_value(json_object_get(ch, "finish_reason"));
        CHECK_MSG(fr && !strcmp(fr, "tool_calls"), "%s: finish_reason %s: %s", models[i], fr ? fr : "(none)",
                  json_string_value(json_object_get(json_object_get(ch, "message"), "content")));
        json_t *tc = json_object_get(json_object_get(ch, "message"), "tool_calls");
        CHECK_EQ_INT((int)json_array_size(tc), 1);
        json_t *f = json_object_get(json_array_get(tc, 0), "function");
        const char *name = json_string_value(json_object_get(f, "name"));
        const char *args = json_string_value(json_object_get(f, "arguments"));
        if (name && args) record_args(models[i], name, args);
        json_decref(j);
    }
}

static int prompt_tokens_oai(const char *body) {
    int st;
    json_t *j = post("/v1/chat/completions", body, &st);
    CHECK_EQ_INT(st, 200);
    int n = (int)json_integer_value(json_object_get(json_object_get(j, "usage"), "prompt_tokens"));
    json_decref(j);
    return n;
}

static int prompt_tokens_ollama(const char *body, json_t **out) {
    int st;
    json_t *j = post("/api/chat", body, &st);
    CHECK_EQ_INT(st, 200);
    int n = (int)json_integer_value(json_object_get(j, "prompt_eval_count"));
    if (out) *out = j;
    else json_decref(j);
    return n;
}

/* tool_choice "none": the template renders no tools. */
static void test_choice_none(void) {
    char b1[8192], b2[8192], b3[8192];
    snprintf(b1, sizeof b1, "{\"model\":\"qwen3\",\"messages\":" USER ",\"max_tokens\":4}");
    snprintf(b2, sizeof b2, "{\"model\":\"qwen3\",\"messages\":" USER ",\"tools\":" TOOLS ",\"max_tokens\":4}");
    snprintf(b3, sizeof b3, "{\"model\":\"qwen3\",\"messages\":" USER ",\"tools\":" TOOLS ",\"tool_choice\":\"none\","
             "\"max_tokens\":4}");
    int n1 = prompt_tokens_oai(b1), n2 = prompt_tokens_oai(b2), n3 = prompt_tokens_oai(b3);
    CHECK_MSG(n2 > n1 + 50 && n3 == n1, "prompt tokens: no tools %d, tools %d, tool_choice none %d", n1, n2, n3);
}

/* The next turn: the assistant's call and the tool's result, in both APIs. */
static void test_round_trip(void) {
    const char *oai_msgs =
        "[{\"role\":\"user\",\"content\":\"What is the weather in Paris?\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_abc\",\"type\":\"function\","
        "\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\",\\\"unit\\\":\\\"celsius\\\"}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_abc\",\"content\":\"%s\"}]";
    const char *oll_msgs =
        "[{\"role\":\"user\",\"content\":\"What is the weather in Paris?\"},"
        "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"get_weather\","
        "\"arguments\":{\"city\":\"Paris\",\"unit\":\"celsius\"}}}]},"
        "{\"role\":\"tool\",\"tool_name\":\"get_weather\",\"content\":\"%s\"}]";
    char msgs[2048], body[12000];
    int n_oai[2], n_oll[2];
    const char *results[2] = {"sunny", "sunny and warm, 24 degrees, light wind from the west"};
    for (int k = 0; k < 2; k++) {
        snprintf(msgs, sizeof msgs, oai_msgs, results[k]);
        char *b = oai_body("\"temperature\":0", msgs, false);
        n_oai[k] = prompt_tokens_oai(b);
        free(b);
        snprintf(msgs, sizeof msgs, oll_msgs, results[k]);
        snprintf(body, sizeof body, "{\"model\":\"qwen3\",\"messages\":%s,\"tools\":" TOOLS ",\"stream\":false,"
                 "\"options\":{\"temperature\":0,\"num_predict\":8}}", msgs);
        json_t *j = NULL;
        n_oll[k] = prompt_tokens_ollama(body, &j);
        CHECK(json_integer_value(json_object_get(j, "eval_count")) > 0);
        json_decref(j);
    }
    /* R1's template writes tool['type'] + ...: calls get "type": "function" when they
     * come without one (Ollama's form) */
    snprintf(msgs, sizeof msgs, oll_msgs, results[0]);
    snprintf(body, sizeof body, "{\"model\":\"r1\",\"messages\":%s,\"stream\":false,\"options\":{\"temperature\":0,"
             "\"num_predict\":4}}", msgs);
    int st;
    json_t *jr = post("/api/chat", body, &st);
    CHECK_EQ_INT(st, 200);
    json_decref(jr);
    char b0[8192];
    snprintf(b0, sizeof b0, "{\"model\":\"qwen3\",\"messages\":" USER ",\"tools\":" TOOLS ",\"max_tokens\":4}");
    int n0 = prompt_tokens_oai(b0);
    CHECK_MSG(n_oai[0] == n_oll[0] && n_oai[1] == n_oll[1], "OpenAI %d/%d vs Ollama %d/%d prompt tokens", n_oai[0],
              n_oai[1], n_oll[0], n_oll[1]);
    CHECK_MSG(n_oai[0] > n0 + 20 && n_oai[1] > n_oai[0] + 20, "prompt tokens: first turn %d, with the result %d / %d",
              n0, n_oai[0], n_oai[1]);
}

/* The text of an Ollama /api/chat answer: content and thinking, whole or streamed. */
static void ollama_answer(const char *model, const char *think, bool stream, char *content, char *thinking, size_t cap,
                          int *prompt_n) {
    char body[2048];
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"Tell me a story.\"}],"
             "%s%s%s\"stream\":%s,\"options\":{\"temperature\":0,\"num_predict\":24}}",
             model, think ? "\"think\":" : "", think ? think : "", think ? "," : "", stream ? "true" : "false");
    content[0] = thinking[0] = 0;
    *prompt_n = 0;
    bool has_thinking_field = false;
    if (stream) {
        bool dm;
        json_t *a = post_stream("/api/chat", body, false, &dm);
        for (size_t i = 0; i < json_array_size(a); i++) {
            json_t *o = json_array_get(a, i), *m = json_object_get(o, "message");
            const char *c = json_string_value(json_object_get(m, "content"));
            const char *t = json_string_value(json_object_get(m, "thinking"));
            if (c) strncat(content, c, cap - strlen(content) - 1);
            if (t) strncat(thinking, t, cap - strlen(thinking) - 1), has_thinking_field = true;
            if (json_is_true(json_object_get(o, "done"))) *prompt_n = (int)json_integer_value(json_object_get(o, "prompt_eval_count"));
        }
        json_decref(a);
    } else {
        int st;
        json_t *o = post("/api/chat", body, &st);
        CHECK_EQ_INT(st, 200);
        json_t *m = json_object_get(o, "message");
        const char *c = json_string_value(json_object_get(m, "content"));
        const char *t = json_string_value(json_object_get(m, "thinking"));
        snprintf(content, cap, "%s", c ? c : "");
        if (t) snprintf(thinking, cap, "%s", t), has_thinking_field = true;
        *prompt_n = (int)json_integer_value(json_object_get(o, "prompt_eval_count"));
        json_decref(o);
    }
    if (!has_thinking_field) snprintf(thinking, cap, "(none)");
}

static void test_think(void) {
    char c1[2048], t1[2048], c2[2048], t2[2048], c3[2048], t3[2048];
    int p1, p2, p3;
    /* Qwen3: think false renders "<think>\n\n</think>\n\n" after the generation prompt */
    ollama_answer("qwen3", "true", false, c1, t1, sizeof c1, &p1);
    ollama_answer("qwen3", "false", false, c2, t2, sizeof c2, &p2);
    CHECK_MSG(p2 > p1, "qwen3 prompt tokens: think true %d, false %d", p1, p2);
    CHECK(!strcmp(t2, "(none)"));
    CHECK(strlen(c2) > 0);
    ollama_answer("qwen3", "false", true, c3, t3, sizeof c3, &p3);
    CHECK(!strcmp(c2, c3) && !strcmp(t3, "(none)"));
    /* R1: the answer starts inside <think>: it is thinking */
    ollama_answer("r1", "true", false, c1, t1, sizeof c1, &p1);
    CHECK_MSG(strlen(t1) > 0 && strcmp(t1, "(none)"), "r1 think true: thinking '%s' content '%s'", t1, c1);
    ollama_answer("r1", NULL, true, c2, t2, sizeof c2, &p2);
    CHECK_MSG(!strcmp(t1, t2) && !strcmp(c1, c2), "r1: streamed '%s'/'%s' vs whole '%s'/'%s'", t2, c2, t1, c1);
    /* think false: this template closes the block itself ("</think>" after the
     * generation prompt; enable_thinking false): the answer is content */
    ollama_answer("r1", "false", false, c3, t3, sizeof c3, &p3);
    CHECK_MSG(!strcmp(t3, "(none)") && strlen(c3) > 0, "r1 think false: thinking '%s' content '%s'", t3, c3);
    CHECK_MSG(p3 > p1, "r1 prompt tokens: think true %d, false %d", p1, p3);
    /* /api/generate: "thinking" too (the prompt goes through the template) */
    json_t *g = post("/api/generate", "{\"model\":\"r1\",\"prompt\":\"Tell me a story.\",\"stream\":false,\"think\":"
                     "true,\"options\":{\"temperature\":0,\"num_predict\":24}}", &p3);
    CHECK_MSG(json_is_string(json_object_get(g, "thinking")) && !strcmp(json_string_value(json_object_get(g, "thinking")), t1),
              "generate thinking vs chat thinking");
    json_decref(g);
    /* `loom chat` shows the thinking as `ollama run` does (not as answer text) */
    const char *cli = test_cli();
    CHECK_MSG(cli != NULL, TEST_NO_CLI);
    if (cli) {
        char cmd[8192], out[8192], want[4096];
        snprintf(cmd, sizeof cmd, "echo 'Tell me a story.' | '%s' chat '%s/r1.gguf' --temp 0 -n 24 -t 1 2>&1", cli,
                 g_models);
        int rc = test_run(cmd, out, sizeof out);
        snprintf(want, sizeof want, "Thinking...\n%s\n...done thinking.\n", t1);
        CHECK_MSG(rc == 0 && strstr(out, want), "loom chat printed (rc %d):\n%s\nwant:\n%s", rc, out, want);
    }
    /* OpenAI: reasoning_content, hidden by reasoning_effort "none" */
    int st;
    json_t *j = post("/v1/chat/completions", "{\"model\":\"r1\",\"messages\":[{\"role\":\"user\",\"content\":\"Tell me a "
                     "story.\"}],\"temperature\":0,\"max_tokens\":24}", &st);
    json_t *m = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "message");
    const char *rc = json_string_value(json_object_get(m, "reasoning_content"));
    CHECK_MSG(rc && !strcmp(rc, t1), "OpenAI reasoning_content '%s' vs '%s'", rc ? rc : "(none)", t1);
    json_decref(j);
    j = post("/v1/chat/completions", "{\"model\":\"r1\",\"messages\":[{\"role\":\"user\",\"content\":\"Tell me a "
             "story.\"}],\"temperature\":0,\"max_tokens\":24,\"reasoning_effort\":\"none\"}", &st);
    m = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "message");
    CHECK(json_object_get(m, "reasoning_content") == NULL);
    json_decref(j);
}

int main(void) {
    char dir[256];
    CHECK(test_make_models(dir, sizeof dir));
    char *qwen3 = read_text(test_path("tests/data/templates/shared/Qwen-Qwen3-0.6B.jinja"));
    char *r1 = read_text(test_path("tests/data/templates/shared/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja"));
    char *nemo = read_text(test_path("tests/data/templates/shared/mistralai-Mistral-Nemo-Instruct-2407.jinja"));
    CHECK(qwen3 && r1 && nemo);
    if (!qwen3 || !r1 || !nemo) return test_finish("test_server_toolcalls");
    char p[512];
    snprintf(g_models, sizeof g_models, "%s/models", dir);
    snprintf(p, sizeof p, "%s/models/qwen3.gguf", dir);
    CHECK(test_make_chat_model(test_path("models/stories260K.gguf"), p, qwen3));
    snprintf(p, sizeof p, "%s/models/r1.gguf", dir);
    CHECK(test_make_chat_model(test_path("models/stories260K.gguf"), p, r1));
    snprintf(p, sizeof p, "%s/models/nemo.gguf", dir);
    CHECK(test_make_chat_model(test_path("models/stories260K.gguf"), p, nemo));
    static const char *const more[][2] = {{"llama31", "meta-llama-Llama-3.1-8B-Instruct.jinja"},
                                          {"gptoss", "openai-gpt-oss-120b.jinja"}};
    for (int i = 0; i < 2; i++) {
        char tp[4200];
        snprintf(tp, sizeof tp, "%s/%s", test_path("tests/data/templates/shared"), more[i][1]);
        char *t = read_text(tp);
        CHECK_MSG(t != NULL, "cannot read %s", tp);
        snprintf(p, sizeof p, "%s/models/%s.gguf", dir, more[i][0]);
        CHECK(t && test_make_chat_model(test_path("models/stories260K.gguf"), p, t));
        free(t);
    }
    char jl[512];
    snprintf(jl, sizeof jl, "%s/args.jsonl", dir);
    g_jsonl = fopen(jl, "w");
    CHECK(g_jsonl != NULL);
    loom_server_params sp = test_server_params(dir, 2, 64);
    sp.n_ctx = 2048; /* the prompts are 800-1600 tokens: a smaller cache is cheaper (ASan) */
    loom_server *s = test_server_start_p(&sp);
    CHECK(s != NULL);
    if (s && g_jsonl) {
        g_port = loom_server_port(s);
        test_forced_openai();
        test_forced_openai_stream();
        test_forced_ollama();
        test_choice_none();
        test_round_trip();
        test_mistral_round_trip();
        test_forced_families();
        test_think();
        loom_server_free(s);
    }
    if (g_jsonl) fclose(g_jsonl);
    /* every returned call's arguments against its schema, by an independent validator */
    char cmd[9000];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s", test_path("tests/grammar/validate_json.py"), jl);
    int rc = system(cmd);
    CHECK_MSG(rc == 0, "jsonschema rejected returned arguments (status %d); needs /usr/bin/python3 with "
                       "python3-jsonschema", rc);
    CHECK(g_n_validated >= 8);
    free(qwen3);
    free(r1);
    free(nemo);
    test_rm_rf(dir);
    return test_finish("test_server_toolcalls");
}
