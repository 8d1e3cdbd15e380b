/* Unit tests of the Responses API layer (src/server/responses.c): requests become the
 * chat messages, tools and options OpenAI's and Ollama's documentation describe (the
 * expected values are written out here from those documents: input items -> messages,
 * function_call items joining one assistant turn, function_call_output -> a tool
 * message named after its call, reasoning -> the next assistant turn's thinking), the
 * errors name their field, and the answer's items and stream events follow the
 * Responses streaming reference: every event's type, sequence number and output index,
 * the same final output whether streamed or not, for several ways of splitting the
 * same answer into deltas. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/request.h"
#include "server/responses.h"
#include "server_test_json.h"
#include "test_util.h"



static void expect_err(const char *body, const char *needle) {
    srv_gen_req r;
    srv_err e;
    bool ok = test_decode(SRV_API_OAI_RESPONSES, body, &r, &e);
    CHECK_MSG(!ok && e.status == 400 && strstr(e.msg, needle), "%s -> ok=%d %d '%s' (want 400 '%s')", body, ok,
              e.status, e.msg, needle);
    srv_gen_req_free(&r);
}

static void test_input(void) {
    srv_gen_req r;
    srv_err e;
    /* a plain string, with instructions first */
    CHECK(test_decode(SRV_API_OAI_RESPONSES, "{\"model\":\"m\",\"instructions\":\"Be brief.\",\"input\":\"hi\"}", &r, &e));
    CHECK(r.api == SRV_API_OAI_RESPONSES && !r.stream && r.think == -1);
    test_check_json(r.messages, "[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"hi\"}]",
               "string input");
    CHECK(r.opt.temperature_set && r.opt.temperature == 1.0f && r.opt.top_p_set && r.opt.top_p == 1.0f);
    CHECK(!r.opt.num_predict_set && !r.tools && !r.format);
    srv_gen_req_free(&r);

    /* every item kind */
    const char *items =
        "{\"model\":\"m\",\"stream\":true,\"input\":["
        "{\"role\":\"developer\",\"content\":\"rules\"},"
        "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"wea\"},"
        "{\"type\":\"input_text\",\"text\":\"ther?\"}]},"
        "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"a\"},"
        "{\"type\":\"summary_text\",\"text\":\"b\"}]},"
        "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Let me look.\"}]},"
        "{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_a\",\"name\":\"get\",\"arguments\":"
        "\"{\\\"city\\\":\\\"Paris\\\"}\",\"status\":\"completed\"},"
        "{\"type\":\"function_call\",\"call_id\":\"call_b\",\"name\":\"put\",\"arguments\":\"\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"call_a\",\"output\":\"sunny\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"call_b\",\"output\":[{\"type\":\"input_text\",\"text\":\"o\"},"
        "{\"type\":\"output_text\",\"text\":\"k\"}]},"
        "{\"type\":\"reasoning\",\"summary\":[],\"content\":[{\"type\":\"reasoning_text\",\"text\":\"think\"}]},"
        "{\"type\":\"function_call\",\"call_id\":\"call_c\",\"name\":\"get\",\"arguments\":\"{}\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"call_zz\",\"output\":\"orphan\"},"
        "{\"role\":\"user\",\"content\":\"thanks\"},"
        "{\"type\":\"reasoning\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"tail\"}]}]}";
    CHECK(test_decode(SRV_API_OAI_RESPONSES, items, &r, &e));
    CHECK_MSG(r.messages, "%s", e.msg);
    CHECK(r.stream);
    test_check_json(r.messages,
               "[{\"role\":\"system\",\"content\":\"rules\"},"
               "{\"role\":\"user\",\"content\":\"weather?\"},"
               "{\"role\":\"assistant\",\"content\":\"Let me look.\",\"thinking\":\"a\\n\\nb\",\"tool_calls\":["
               "{\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"get\",\"arguments\":{\"city\":\"Paris\"}}},"
               "{\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"put\",\"arguments\":{}}}]},"
               "{\"role\":\"tool\",\"content\":\"sunny\",\"tool_call_id\":\"call_a\",\"tool_name\":\"get\"},"
               "{\"role\":\"tool\",\"content\":\"ok\",\"tool_call_id\":\"call_b\",\"tool_name\":\"put\"},"
               "{\"role\":\"assistant\",\"content\":\"\",\"thinking\":\"think\",\"tool_calls\":["
               "{\"id\":\"call_c\",\"type\":\"function\",\"function\":{\"name\":\"get\",\"arguments\":{}}}]},"
               "{\"role\":\"tool\",\"content\":\"orphan\",\"tool_call_id\":\"call_zz\"},"
               "{\"role\":\"user\",\"content\":\"thanks\"},"
               "{\"role\":\"assistant\",\"content\":\"\",\"thinking\":\"tail\"}]",
               "item input");
    srv_gen_req_free(&r);
}

static void test_fields(void) {
    srv_gen_req r;
    srv_err e;
    CHECK(test_decode(SRV_API_OAI_RESPONSES, "{\"model\":\"m\",\"input\":\"x\",\"temperature\":0.25,\"top_p\":0.5,\"max_output_tokens\":40,"
                 "\"truncation\":\"auto\",\"seed\":7,\"store\":true,\"metadata\":{\"k\":\"v\"},\"user\":\"u\","
                 "\"include\":[\"reasoning.encrypted_content\"],\"reasoning\":{\"effort\":\"minimal\",\"summary\":\"auto\"},"
                 "\"text\":{\"format\":{\"type\":\"json_object\"}},"
                 "\"tools\":[{\"type\":\"function\",\"name\":\"get\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"},"
                 "\"strict\":true},{\"type\":\"function\",\"name\":\"bare\"}],"
                 "\"tool_choice\":{\"type\":\"function\",\"name\":\"bare\"},\"parallel_tool_calls\":false}",
                 &r, &e));
    CHECK_MSG(r.messages, "%s", e.msg);
    CHECK(r.opt.temperature == 0.25f && r.opt.top_p == 0.5f && r.opt.num_predict_set && r.opt.num_predict == 40);
    CHECK(r.truncate && r.opt.seed_set && r.opt.seed == 7);
    CHECK(r.think == 1 && r.think_level && !strcmp(r.think_level, "low"));
    CHECK(json_is_string(r.format) && !strcmp(json_string_value(r.format), "json"));
    test_check_json(r.tools,
               "[{\"type\":\"function\",\"function\":{\"name\":\"get\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"}}},"
               "{\"type\":\"function\",\"function\":{\"name\":\"bare\"}}]",
               "tools");
    CHECK(r.tool_choice == SRV_TOOL_CHOICE_FUNCTION && r.tool_choice_name && !strcmp(r.tool_choice_name, "bare"));
    CHECK(!r.parallel_tool_calls);
    srv_gen_req_free(&r);
    /* custom (freeform) tools: a function of one string, "input"; their calls and outputs in the history */
    CHECK(test_decode(SRV_API_OAI_RESPONSES,
                      "{\"model\":\"m\",\"tools\":[{\"type\":\"custom\",\"name\":\"apply_patch\",\"description\":\"p\","
                      "\"format\":{\"type\":\"grammar\",\"syntax\":\"lark\",\"definition\":\"start: /.+/\"}}],"
                      "\"tool_choice\":{\"type\":\"custom\",\"name\":\"apply_patch\"},\"input\":["
                      "{\"role\":\"user\",\"content\":\"fix\"},"
                      "{\"type\":\"custom_tool_call\",\"call_id\":\"c1\",\"name\":\"apply_patch\",\"input\":\" a\\nb \"},"
                      "{\"type\":\"custom_tool_call\",\"call_id\":\"c2\",\"namespace\":\"ws\",\"name\":\"note\",\"input\":\"\"},"
                      "{\"type\":\"custom_tool_call_output\",\"call_id\":\"c1\",\"output\":[{\"type\":\"input_text\",\"text\":\"ok\"}]},"
                      "{\"type\":\"custom_tool_call_output\",\"call_id\":\"c2\",\"output\":\"noted\"}]}",
                      &r, &e));
    CHECK_MSG(r.messages, "%s", e.msg);
    test_check_json(r.tools, "[{\"type\":\"function\",\"function\":{\"name\":\"apply_patch\",\"description\":\"p\","
                             "\"parameters\":{\"type\":\"object\",\"properties\":{\"input\":{\"type\":\"string\"}},"
                             "\"required\":[\"input\"]}}}]", "custom tool");
    CHECK(r.tool_choice == SRV_TOOL_CHOICE_FUNCTION && !strcmp(r.tool_choice_name, "apply_patch"));
    test_check_json(r.messages,
                    "[{\"role\":\"user\",\"content\":\"fix\"},"
                    "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":["
                    "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"apply_patch\",\"arguments\":{\"input\":\" a\\nb \"}}},"
                    "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"ws.note\",\"arguments\":{\"input\":\"\"}}}]},"
                    "{\"role\":\"tool\",\"content\":\"ok\",\"tool_call_id\":\"c1\",\"tool_name\":\"apply_patch\"},"
                    "{\"role\":\"tool\",\"content\":\"noted\",\"tool_call_id\":\"c2\",\"tool_name\":\"ws.note\"}]",
                    "custom tool history");
    srv_gen_req_free(&r);
    CHECK(test_decode(SRV_API_OAI_RESPONSES, "{\"model\":\"m\",\"input\":\"x\",\"include\":[\"reasoning.encrypted_content\"],"
                      "\"reasoning\":{\"effort\":\"minimal\",\"summary\":\"auto\"},\"metadata\":{\"k\":\"v\"},"
                      "\"text\":{\"format\":{\"type\":\"json_object\"}},\"max_output_tokens\":40,\"truncation\":\"auto\","
                      "\"parallel_tool_calls\":false,\"tools\":[{\"type\":\"function\",\"name\":\"get\"},"
                      "{\"type\":\"function\",\"name\":\"bare\"}],\"tool_choice\":{\"type\":\"function\",\"name\":\"bare\"}}",
                      &r, &e));
    /* the echo: the request's settings as given, store false (nothing is stored) */
    const json_t *x = r.resp_echo;
    CHECK(json_is_object(x));
    test_check_json(json_object_get(x, "reasoning"), "{\"effort\":\"minimal\",\"summary\":\"auto\"}", "echo reasoning");
    test_check_json(json_object_get(x, "text"), "{\"format\":{\"type\":\"json_object\"}}", "echo text");
    test_check_json(json_object_get(x, "tool_choice"), "{\"type\":\"function\",\"name\":\"bare\"}", "echo tool_choice");
    test_check_json(json_object_get(x, "metadata"), "{\"k\":\"v\"}", "echo metadata");
    CHECK(json_is_false(json_object_get(x, "store")) && json_is_false(json_object_get(x, "parallel_tool_calls")));
    CHECK(json_integer_value(json_object_get(x, "max_output_tokens")) == 40);
    CHECK(!strcmp(json_string_value(json_object_get(x, "truncation")), "auto"));
    CHECK(json_array_size(json_object_get(x, "tools")) == 2);
    srv_gen_req_free(&r);

    /* effort mapping: none turns thinking off; xhigh is high; a schema format */
    CHECK(test_decode(SRV_API_OAI_RESPONSES, "{\"model\":\"m\",\"input\":\"x\",\"reasoning\":{\"effort\":\"none\"},\"text\":{\"format\":{\"type\":"
                 "\"json_schema\",\"name\":\"n\",\"schema\":{\"type\":\"object\"},\"strict\":true}}}", &r, &e));
    CHECK(r.think == 0 && !r.think_level);
    test_check_json(r.format, "{\"type\":\"object\"}", "json_schema format");
    srv_gen_req_free(&r);
    CHECK(test_decode(SRV_API_OAI_RESPONSES, "{\"model\":\"m\",\"input\":\"x\",\"reasoning\":{\"effort\":\"xhigh\"},\"text\":{\"format\":{\"type\":"
                 "\"text\"}},\"tool_choice\":\"none\",\"tools\":[]}", &r, &e));
    CHECK(r.think == 1 && !strcmp(r.think_level, "high") && !r.format && r.tool_choice == SRV_TOOL_CHOICE_NONE);
    CHECK(r.logprobs == -1);
    srv_gen_req_free(&r);
    /* logprobs: include message.output_text.logprobs (+ top_logprobs alternatives), or top_logprobs > 0 */
    static const struct {
        const char *extra;
        int want;
    } lpc[] = {{",\"include\":[\"message.output_text.logprobs\"]", 0},
               {",\"include\":[\"reasoning.encrypted_content\",\"message.output_text.logprobs\"],\"top_logprobs\":4", 4},
               {",\"top_logprobs\":3", 3}, {",\"top_logprobs\":0", -1}, {",\"include\":[]", -1}};
    for (size_t i = 0; i < sizeof lpc / sizeof lpc[0]; i++) {
        char body[256];
        snprintf(body, sizeof body, "{\"model\":\"m\",\"input\":\"x\"%s}", lpc[i].extra);
        CHECK_MSG(test_decode(SRV_API_OAI_RESPONSES, body, &r, &e) && r.logprobs == lpc[i].want, "%s -> %d, want %d", body,
                  r.logprobs, lpc[i].want);
        CHECK(json_integer_value(json_object_get(r.resp_echo, "top_logprobs")) == (lpc[i].want > 0 ? lpc[i].want : 0));
        srv_gen_req_free(&r);
    }
}

static void test_errors(void) {
    expect_err("{\"model\":\"m\"}", "\"input\" is required");
    expect_err("{\"model\":\"m\",\"input\":[]}", "\"input\" must not be empty");
    expect_err("{\"model\":\"m\",\"input\":5}", "\"input\" must be a string or an array");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"previous_response_id\":\"resp_1\"}", "\"previous_response_id\": stateful");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"conversation\":\"c\"}", "\"conversation\": stateful");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"background\":true}", "background");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"top_logprobs\":21}", "\"top_logprobs\" must be an integer from 0 to 20");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"include\":[7]}", "include[0] must be a string");
    expect_err("{\"model\":\"m\",\"input\":[\"x\"]}", "input[0] must be an object");
    expect_err("{\"model\":\"m\",\"input\":[{\"content\":\"x\"}]}", "input[0]: an item needs a \"type\"");
    expect_err("{\"model\":\"m\",\"input\":[{\"role\":\"tool\",\"content\":\"x\"}]}", "input[0].role");
    expect_err("{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":\"a\"},{\"role\":\"user\",\"content\":"
               "[{\"type\":\"input_image\",\"image_url\":\"data:\"}]}]}", "input[1].content[0]: images");
    expect_err("{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_file\"}]}]}", "file inputs");
    expect_err("{\"model\":\"m\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\"}]}]}",
               "input[0].content[0].text must be a string");
    expect_err("{\"model\":\"m\",\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":"
               "\"{oops\"}]}", "input[0].arguments: invalid function call arguments");
    expect_err("{\"model\":\"m\",\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\",\"arguments\":\"{}\"}]}",
               "input[0].name");
    expect_err("{\"model\":\"m\",\"input\":[{\"type\":\"function_call_output\",\"output\":\"x\"}]}", "input[0].call_id");
    expect_err("{\"model\":\"m\",\"input\":[{\"type\":\"item_reference\",\"id\":\"x\"}]}", "item references");
    expect_err("{\"model\":\"m\",\"input\":[{\"type\":\"custom_tool_call\",\"call_id\":\"c\",\"name\":\"f\"}]}",
               "input[0].input must be a string");
    expect_err("{\"model\":\"m\",\"input\":[{\"type\":\"custom_tool_call\",\"call_id\":\"c\",\"name\":\"f\",\"input\":{}}]}",
               "input[0].input must be a string");
    expect_err("{\"model\":\"m\",\"input\":[{\"type\":\"custom_tool_call_output\",\"output\":\"x\"}]}", "input[0].call_id");
    expect_err("{\"model\":\"m\",\"input\":[{\"type\":\"web_search_call\"}]}", "unsupported input item type \"web_search_call\"");
    expect_err("{\"model\":\"m\",\"input\":[{\"type\":\"reasoning\",\"summary\":[{\"type\":\"summary_text\"}]}]}",
               "input[0].summary[0].text");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"tools\":[{\"type\":\"web_search\"}]}", "tools[0]: tool type \"web_search\"");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"tools\":[{\"type\":\"function\"}]}", "tools[0].name");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\":1}]}",
               "tools[0].parameters");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"tool_choice\":\"required\"}", "needs \"tools\"");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"tools\":[{\"type\":\"function\",\"name\":\"f\"}],\"tool_choice\":"
               "{\"type\":\"function\",\"name\":\"g\"}}", "no tool named \"g\"");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"tool_choice\":{\"type\":\"web_search\"}}", "only function and custom tools");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"text\":{\"format\":{\"type\":\"json_schema\"}}}", "needs \"schema\"");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"text\":{\"format\":{\"type\":\"xml\"}}}", "unknown type \"xml\"");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"reasoning\":{\"effort\":\"huge\"}}", "reasoning.effort");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"temperature\":\"hot\"}", "\"temperature\" must be a number");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"top_p\":1.5}", "\"top_p\" must be a number from 0 to 1");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"max_output_tokens\":-1}", "max_output_tokens");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"truncation\":\"half\"}", "truncation");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"stream\":1}", "\"stream\" must be a boolean");
    expect_err("{\"model\":\"m\",\"input\":\"x\",\"instructions\":[]}", "\"instructions\" must be a string");
}

/* ------------------------------------------------------------------ answers */

/* Split SSE text into events; checks the framing (event: TYPE, data: one JSON whose type
 * is TYPE). Returns a new array. */

typedef struct piece {
    const char *thinking, *content;
    const char *call; /* an Ollama-form call as JSON text, or NULL */
} piece;

/* Feed the pieces streamed (one delta each) and whole (one delta with everything),
 * and return the streamed events; *whole_resp gets the non-streamed response. */
static json_t *run(const piece *ps, int n, bool incomplete, json_t **whole_resp) {
    /* the request declared one custom (freeform) tool, "apply_patch" */
    json_t *echo = json_pack("{s:s,s:[{s:s,s:s}]}", "truncation", "disabled", "tools", "type", "custom", "name", "apply_patch");
    srv_resp c;
    srv_buf sse = {0};
    srv_resp_init(&c, "m", echo, 1);
    srv_resp_start(&c, &sse);
    srv_resp_start(&c, &sse); /* once */
    srv_buf th = {0}, co = {0};
    json_t *calls = json_array();
    for (int i = 0; i < n; i++) {
        json_t *one = ps[i].call ? json_pack("[o]", json_loads(ps[i].call, 0, NULL)) : NULL;
        srv_delta d = {.thinking = ps[i].thinking, .thinking_len = ps[i].thinking ? strlen(ps[i].thinking) : 0,
                       .content = ps[i].content, .content_len = ps[i].content ? strlen(ps[i].content) : 0,
                       .tool_calls = one};
        srv_resp_delta(&c, &sse, &d);
        if (ps[i].thinking) srv_buf_puts(&th, ps[i].thinking);
        if (ps[i].content) srv_buf_puts(&co, ps[i].content);
        if (one) json_array_extend(calls, one);
        json_decref(one);
    }
    srv_resp_end(&c, &sse, true, incomplete, 10, 4, 7);
    CHECK(!sse.oom);
    json_t *evs = test_parse_sse_events(&sse);
    srv_resp_free(&c);
    /* the same answer, not streamed: one delta */
    srv_resp_init(&c, "m", echo, 1);
    srv_buf body = {0};
    srv_delta w = {.thinking = th.len ? th.data : NULL, .thinking_len = th.len, .content = co.data,
                   .content_len = co.len, .tool_calls = json_array_size(calls) ? calls : NULL};
    srv_resp_delta(&c, NULL, &w);
    srv_resp_end(&c, &body, false, incomplete, 10, 4, 7);
    *whole_resp = json_loadb(body.data, body.len, 0, NULL);
    CHECK(*whole_resp);
    srv_resp_free(&c);
    srv_buf_free(&sse);
    srv_buf_free(&body);
    srv_buf_free(&th);
    srv_buf_free(&co);
    json_decref(calls);
    json_decref(echo);
    return evs;
}

static const char *ev_type(const json_t *evs, size_t i) { return json_string_value(json_object_get(json_array_get(evs, i), "type")); }

/* The event types in order, joined by spaces, with runs of the same delta type as one. */
static void check_types(const json_t *evs, const char *want) {
    srv_buf b = {0};
    for (size_t i = 0; i < json_array_size(evs); i++) {
        const char *t = ev_type(evs, i);
        if (i && strstr(t, ".delta") && !strcmp(t, ev_type(evs, i - 1))) continue;
        if (b.len) srv_buf_puts(&b, " ");
        srv_buf_puts(&b, t + (strncmp(t, "response.", 9) ? 0 : 9));
    }
    CHECK_MSG(b.data && !strcmp(b.data, want), "events:\n got  %s\n want %s", b.data ? b.data : "", want);
    srv_buf_free(&b);
}

/* Invariants of any stream: sequence numbers 0..n-1; every item added is done at the
 * same index, in order; deltas name the open item; the last event's response has the
 * items the stream closed, equal to the non-streamed response's (ids aside). */
static void check_stream(const json_t *evs, const json_t *whole, bool compare_whole) {
    size_t n = json_array_size(evs);
    json_t *closed = json_array();
    const char *open_id = NULL;
    json_int_t open_idx = -1;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(evs, i);
        CHECK_MSG(json_integer_value(json_object_get(e, "sequence_number")) == (json_int_t)i, "sequence_number at %zu", i);
        const char *t = ev_type(evs, i);
        const json_t *idx = json_object_get(e, "output_index");
        if (!strcmp(t, "response.output_item.added")) {
            CHECK(!open_id && json_integer_value(idx) == (json_int_t)json_array_size(closed));
            open_id = json_string_value(json_object_get(json_object_get(e, "item"), "id"));
            open_idx = json_integer_value(idx);
        } else if (!strcmp(t, "response.output_item.done")) {
            const json_t *item = json_object_get(e, "item");
            CHECK(open_id && !strcmp(open_id, json_string_value(json_object_get(item, "id"))) &&
                  json_integer_value(idx) == open_idx);
            json_array_append(closed, (json_t *)item);
            open_id = NULL;
        } else if (idx) {
            CHECK_MSG(open_id && json_integer_value(idx) == open_idx, "%s outside its item", t);
            const json_t *iid = json_object_get(e, "item_id");
            CHECK(iid && open_id && !strcmp(json_string_value(iid), open_id));
        }
    }
    CHECK(!open_id);
    const json_t *last = json_object_get(json_array_get(evs, n - 1), "response");
    CHECK(json_equal(json_object_get(last, "output"), closed));
    CHECK(json_equal(json_object_get(last, "usage"), json_object_get(whole, "usage")));
    CHECK(json_equal(json_object_get(last, "status"), json_object_get(whole, "status")));
    if (!compare_whole) {
        json_decref(closed);
        return;
    }
    /* streamed and whole: the same items but for their ids */
    const json_t *wo = json_object_get(whole, "output");
    CHECK_MSG(json_array_size(wo) == json_array_size(closed), "%zu items whole, %zu streamed", json_array_size(wo),
              json_array_size(closed));
    for (size_t i = 0; i < json_array_size(wo) && i < json_array_size(closed); i++) {
        json_t *a = json_deep_copy(json_array_get(wo, i)), *b = json_deep_copy(json_array_get(closed, i));
        json_object_del(a, "id");
        json_object_del(b, "id");
        char *as = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS), *bs = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
        CHECK_MSG(json_equal(a, b), "item %zu: whole %s, streamed %s", i, as, bs);
        free(as), free(bs);
        json_decref(a), json_decref(b);
    }
    json_decref(closed);
}

static void test_answers(void) {
    json_t *whole, *evs;
    /* reasoning, white space, text in two pieces */
    piece a[] = {{"Let me ", NULL, NULL}, {"think.", NULL, NULL}, {NULL, "\n\n", NULL}, {NULL, "Hello", NULL},
                 {NULL, " world", NULL}};
    evs = run(a, 5, false, &whole);
    check_types(evs, "created in_progress output_item.added reasoning_summary_part.added reasoning_summary_text.delta "
                     "reasoning_summary_text.done reasoning_summary_part.done output_item.done output_item.added "
                     "content_part.added output_text.delta output_text.done content_part.done output_item.done completed");
    check_stream(evs, whole, true);
    const json_t *out = json_object_get(whole, "output");
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(out, 0), "type")), "reasoning"));
    test_check_json(json_object_get(json_array_get(out, 0), "summary"), "[{\"type\":\"summary_text\",\"text\":\"Let me think.\"}]",
               "reasoning summary");
    test_check_json(json_object_get(json_array_get(out, 1), "content"),
               "[{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],\"text\":\"\\n\\nHello world\"}]", "message");
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(out, 1), "status")), "completed"));
    CHECK(!strcmp(json_string_value(json_object_get(whole, "status")), "completed"));
    CHECK(json_is_null(json_object_get(whole, "incomplete_details")) && json_is_integer(json_object_get(whole, "completed_at")));
    test_check_json(json_object_get(whole, "usage"),
               "{\"input_tokens\":10,\"input_tokens_details\":{\"cached_tokens\":4},\"output_tokens\":7,"
               "\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":17}", "usage");
    CHECK(!strcmp(json_string_value(json_object_get(whole, "object")), "response") &&
          !strncmp(json_string_value(json_object_get(whole, "id")), "resp_", 5));
    CHECK(!strcmp(json_string_value(json_object_get(whole, "truncation")), "disabled")); /* the echo */
    const json_t *created = json_object_get(json_array_get(evs, 0), "response");
    CHECK(!strcmp(json_string_value(json_object_get(created, "status")), "in_progress") &&
          json_array_size(json_object_get(created, "output")) == 0 && json_is_null(json_object_get(created, "usage")));
    json_decref(evs), json_decref(whole);

    /* reasoning, white space, then two calls: no message; arguments as JSON text */
    piece b[] = {{"hmm", NULL, NULL}, {NULL, "\n", NULL},
                 {NULL, NULL, "{\"id\":\"call_x\",\"function\":{\"index\":0,\"name\":\"get\",\"arguments\":{\"city\":\"Paris\"}}}"},
                 {NULL, NULL, "{\"function\":{\"index\":1,\"name\":\"put\",\"arguments\":{}}}"}};
    evs = run(b, 4, false, &whole);
    check_types(evs, "created in_progress output_item.added reasoning_summary_part.added reasoning_summary_text.delta "
                     "reasoning_summary_text.done reasoning_summary_part.done output_item.done output_item.added "
                     "function_call_arguments.delta function_call_arguments.done output_item.done output_item.added "
                     "function_call_arguments.delta function_call_arguments.done output_item.done completed");
    check_stream(evs, whole, true);
    out = json_object_get(whole, "output");
    CHECK(json_array_size(out) == 3);
    json_t *fc = json_deep_copy(json_array_get(out, 1));
    CHECK(!strncmp(json_string_value(json_object_get(fc, "id")), "fc_", 3));
    json_object_del(fc, "id");
    test_check_json(fc, "{\"type\":\"function_call\",\"status\":\"completed\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\","
                   "\"call_id\":\"call_x\",\"name\":\"get\"}", "function call");
    json_decref(fc);
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(out, 2), "call_id")), "call_1"));
    json_decref(evs), json_decref(whole);

    /* a custom tool's call: a custom_tool_call item whose input is the text */
    piece g[] = {{NULL, NULL, "{\"id\":\"call_p\",\"function\":{\"name\":\"apply_patch\",\"arguments\":{\"input\":\"*** Begin\\n\"}}}"}};
    evs = run(g, 1, false, &whole);
    check_types(evs, "created in_progress output_item.added custom_tool_call_input.delta custom_tool_call_input.done "
                     "output_item.done completed");
    check_stream(evs, whole, true);
    fc = json_deep_copy(json_array_get(json_object_get(whole, "output"), 0));
    CHECK(!strncmp(json_string_value(json_object_get(fc, "id")), "ctc_", 4));
    json_object_del(fc, "id");
    test_check_json(fc, "{\"type\":\"custom_tool_call\",\"status\":\"completed\",\"input\":\"*** Begin\\n\","
                        "\"call_id\":\"call_p\",\"name\":\"apply_patch\"}", "custom tool call");
    json_decref(fc);
    CHECK(!strcmp(ev_type(evs, 4), "response.custom_tool_call_input.done") &&
          !strcmp(json_string_value(json_object_get(json_array_get(evs, 4), "input")), "*** Begin\n"));
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(evs, 3), "delta")), "*** Begin\n"));
    json_decref(evs), json_decref(whole);

    /* text cut at max_output_tokens: incomplete, the message incomplete too */
    piece c[] = {{NULL, "Once", NULL}, {NULL, " upon", NULL}};
    evs = run(c, 2, true, &whole);
    check_types(evs, "created in_progress output_item.added content_part.added output_text.delta output_text.done "
                     "content_part.done output_item.done incomplete");
    check_stream(evs, whole, true);
    CHECK(!strcmp(json_string_value(json_object_get(whole, "status")), "incomplete"));
    test_check_json(json_object_get(whole, "incomplete_details"), "{\"reason\":\"max_output_tokens\"}", "incomplete_details");
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(json_object_get(whole, "output"), 0), "status")),
                  "incomplete"));
    json_decref(evs), json_decref(whole);

    /* nothing at all (or only white space): one message with that text */
    piece d[] = {{NULL, " ", NULL}};
    evs = run(d, 1, false, &whole);
    check_types(evs, "created in_progress output_item.added content_part.added output_text.delta output_text.done "
                     "content_part.done output_item.done completed");
    check_stream(evs, whole, true);
    json_decref(evs), json_decref(whole);
    evs = run(NULL, 0, false, &whole);
    check_types(evs, "created in_progress output_item.added content_part.added output_text.done content_part.done "
                     "output_item.done completed");
    check_stream(evs, whole, true);
    json_decref(evs), json_decref(whole);

    /* text, thinking, text (streamed: three items in order; whole, the parser's one delta
     * has them merged); invalid UTF-8 replaced */
    piece f[] = {{NULL, "a", NULL}, {"b", NULL, NULL}, {NULL, "c\xff", NULL}};
    evs = run(f, 3, false, &whole);
    check_stream(evs, whole, false);
    out = json_object_get(json_object_get(json_array_get(evs, json_array_size(evs) - 1), "response"), "output");
    CHECK(json_array_size(out) == 3);
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(json_object_get(json_array_get(out, 2), "content"), 0),
                                                    "text")), "c\xEF\xBF\xBD"));
    json_decref(evs), json_decref(whole);

    /* an error after the stream began */
    srv_resp r;
    srv_buf b2 = {0};
    srv_resp_init(&r, "m", NULL, 2);
    srv_resp_start(&r, &b2);
    srv_resp_stream_error(&r, &b2, 500, "engine failed");
    evs = test_parse_sse_events(&b2);
    CHECK(json_array_size(evs) == 3);
    test_check_json(json_array_get(evs, 2), "{\"type\":\"error\",\"sequence_number\":2,\"code\":\"server_error\","
                                       "\"message\":\"engine failed\",\"param\":null}", "error event");
    json_decref(evs);
    srv_buf_free(&b2);
    srv_resp_free(&r);
}

int main(void) {
    test_input();
    test_fields();
    test_errors();
    test_answers();
    return test_finish("test_server_responses");
}
