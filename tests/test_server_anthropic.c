/* Unit tests of the Anthropic Messages layer (src/server/anthropic.c): requests become
 * the chat messages, tools and options Anthropic's Messages reference and Ollama's
 * compatibility notes describe (expected values written out here: tool_result blocks
 * become tool messages before the user's text, tool_use blocks the assistant's calls,
 * thinking blocks its thinking, system blocks a system message), errors name their field,
 * and the answer's blocks and stream events follow the streaming reference (event order,
 * indexes, the same content streamed or whole). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/anthropic.h"
#include "server/request.h"
#include "server_test_json.h"
#include "test_util.h"



static void expect_err(srv_api api, const char *body, const char *needle) {
    srv_gen_req r;
    srv_err e;
    bool ok = test_decode(api, body, &r, &e);
    CHECK_MSG(!ok && e.status == 400 && strstr(e.msg, needle), "%s -> ok=%d %d '%s' (want 400 '%s')", body, ok, e.status,
              e.msg, needle);
    srv_gen_req_free(&r);
}

static void test_requests(void) {
    srv_gen_req r;
    srv_err e;
    const char *body =
        "{\"model\":\"m\",\"max_tokens\":64,\"stream\":true,\"temperature\":0.5,\"top_p\":0.9,\"top_k\":20,"
        "\"stop_sequences\":[\"END\",\"##\"],\"metadata\":{\"user_id\":\"u\"},"
        "\"system\":[{\"type\":\"text\",\"text\":\"Be \",\"cache_control\":{\"type\":\"ephemeral\"}},"
        "{\"type\":\"text\",\"text\":\"brief.\"}],"
        "\"messages\":["
        "{\"role\":\"user\",\"content\":\"weather?\"},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"hmm\",\"signature\":\"s\"},"
        "{\"type\":\"redacted_thinking\",\"data\":\"xx\"},{\"type\":\"text\",\"text\":\"Let me look.\"},"
        "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get\",\"input\":{\"city\":\"Paris\"}},"
        "{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"put\",\"input\":{}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"and?\"},"
        "{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\",\"content\":\"sunny\"},"
        "{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_2\",\"content\":[{\"type\":\"text\",\"text\":\"o\"},"
        "{\"type\":\"text\",\"text\":\"k\"}],\"is_error\":true}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_9\"}]}],"
        "\"tools\":[{\"name\":\"get\",\"description\":\"d\",\"input_schema\":{\"type\":\"object\"}},"
        "{\"type\":\"custom\",\"name\":\"put\",\"input_schema\":{\"type\":\"object\"}}],"
        "\"tool_choice\":{\"type\":\"tool\",\"name\":\"put\",\"disable_parallel_tool_use\":true},"
        "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2048},\"output_config\":{\"effort\":\"xhigh\"}}";
    CHECK(test_decode(SRV_API_ANTHROPIC, body, &r, &e));
    CHECK_MSG(r.messages, "%s", e.msg);
    CHECK(r.api == SRV_API_ANTHROPIC && r.stream);
    test_check_json(r.messages,
               "[{\"role\":\"system\",\"content\":\"Be brief.\"},"
               "{\"role\":\"user\",\"content\":\"weather?\"},"
               "{\"role\":\"assistant\",\"content\":\"Let me look.\",\"tool_calls\":["
               "{\"id\":\"toolu_1\",\"type\":\"function\",\"function\":{\"name\":\"get\",\"arguments\":{\"city\":\"Paris\"}}},"
               "{\"id\":\"toolu_2\",\"type\":\"function\",\"function\":{\"name\":\"put\",\"arguments\":{}}}],"
               "\"thinking\":\"hmm\"},"
               "{\"role\":\"tool\",\"content\":\"sunny\",\"tool_call_id\":\"toolu_1\",\"tool_name\":\"get\"},"
               "{\"role\":\"tool\",\"content\":\"ok\",\"tool_call_id\":\"toolu_2\",\"tool_name\":\"put\"},"
               "{\"role\":\"user\",\"content\":\"and?\"},"
               "{\"role\":\"tool\",\"content\":\"\",\"tool_call_id\":\"toolu_9\"}]",
               "messages");
    test_check_json(r.tools,
               "[{\"type\":\"function\",\"function\":{\"name\":\"get\",\"description\":\"d\",\"parameters\":{\"type\":\"object\"}}},"
               "{\"type\":\"function\",\"function\":{\"name\":\"put\",\"parameters\":{\"type\":\"object\"}}}]",
               "tools");
    CHECK(r.tool_choice == SRV_TOOL_CHOICE_FUNCTION && !strcmp(r.tool_choice_name, "put") && !r.parallel_tool_calls);
    CHECK(r.think == 1 && r.think_level && !strcmp(r.think_level, "high"));
    CHECK(r.opt.num_predict_set && r.opt.num_predict == 64 && r.opt.temperature_set && r.opt.temperature == 0.5f);
    CHECK(r.opt.top_p == 0.9f && r.opt.top_k_set && r.opt.top_k == 20);
    CHECK(r.opt.stop_set && r.opt.n_stop == 2 && !strcmp(r.opt.stop[0], "END") && !strcmp(r.opt.stop[1], "##"));
    srv_gen_req_free(&r);

    /* defaults: Ollama's sampling (not set here), stream off; count_tokens needs no max_tokens */
    CHECK(test_decode(SRV_API_ANTHROPIC_COUNT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                                          "\"stream\":true,\"thinking\":{\"type\":\"disabled\"},"
                                          "\"output_config\":{\"effort\":\"low\"},\"tool_choice\":{\"type\":\"any\"},"
                                          "\"tools\":[{\"name\":\"f\"}]}", &r, &e));
    CHECK(!r.stream && !r.opt.num_predict_set && !r.opt.temperature_set && !r.opt.top_p_set);
    CHECK(r.think == 0 && !r.think_level && r.tool_choice == SRV_TOOL_CHOICE_REQUIRED && r.parallel_tool_calls);
    srv_gen_req_free(&r);
    CHECK(test_decode(SRV_API_ANTHROPIC, "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":[]}],"
                                    "\"thinking\":{\"type\":\"adaptive\"},\"tool_choice\":{\"type\":\"none\"}}", &r, &e));
    test_check_json(r.messages, "[{\"role\":\"user\",\"content\":\"\"}]", "empty user turn");
    CHECK(r.think == -1 && r.tool_choice == SRV_TOOL_CHOICE_NONE);
    srv_gen_req_free(&r);
    /* no thinking field: no thinking (Anthropic's rule); an effort alone turns it on at that level */
    CHECK(test_decode(SRV_API_ANTHROPIC, "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
                 &r, &e));
    CHECK(r.think == 0 && r.think_soft);
    srv_gen_req_free(&r);
    CHECK(test_decode(SRV_API_ANTHROPIC, "{\"model\":\"m\",\"max_tokens\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                                    "\"output_config\":{\"effort\":\"medium\"}}", &r, &e));
    CHECK(r.think == 1 && !strcmp(r.think_level, "medium"));
    srv_gen_req_free(&r);

    const srv_api A = SRV_API_ANTHROPIC;
    expect_err(A, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "max_tokens: Field required");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":0,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", "positive integer");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4}", "\"messages\" must be a non-empty array");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[]}", "\"messages\" must be a non-empty array");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"system\",\"content\":\"x\"}]}",
               "messages[0].role");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\"}]}", "messages[0].content");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\"}]}]}",
               "messages[0].content[0]: images");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"document\"}]}]}",
               "documents");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":"
                  "\"server_tool_use\"}]}]}", "server tools");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_use\","
                  "\"id\":\"a\",\"name\":\"f\"}]}]}", "a \"tool_use\" block is not valid in a user message");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\","
                  "\"name\":\"f\"}]}]}", "needs \"id\" and \"name\"");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\","
                  "\"id\":\"a\",\"name\":\"f\",\"input\":\"{}\"}]}]}", "messages[0].content[0].input must be an object");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\","
                  "\"tool_use_id\":\"a\",\"content\":[{\"type\":\"image\"}]}]}]}", "messages[0].content[0].content[0]: images");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\"}]}]}",
               "tool_use_id");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"x\"}]}]}",
               "must be an object with a \"type\"");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"system\":[{\"type\":\"image\"}],\"messages\":[{\"role\":\"user\","
                  "\"content\":\"x\"}]}", "\"system\"[0]: images");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"system\":7,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
               "\"system\" must be a string");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":"
                  "[{\"type\":\"web_search_20250305\",\"name\":\"web_search\"}]}", "tool type \"web_search_20250305\"");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":"
                  "[{\"name\":\"f\",\"input_schema\":[]}]}", "tools[0].input_schema");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":"
                  "{\"type\":\"any\"}}", "needs \"tools\"");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tools\":"
                  "[{\"name\":\"f\"}],\"tool_choice\":{\"type\":\"tool\",\"name\":\"g\"}}", "no tool named \"g\"");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"tool_choice\":"
                  "\"auto\"}", "\"tool_choice\" must be an object");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"thinking\":"
                  "{\"type\":\"on\"}}", "thinking.type");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"output_config\":"
                  "{\"effort\":\"huge\"}}", "output_config.effort");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"temperature\":3}",
               "\"temperature\" must be a number from 0 to 2");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"top_k\":-1}",
               "top_k");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                  "\"stop_sequences\":[\"\"]}", "stop_sequences[0]");
    expect_err(A, "{\"model\":\"m\",\"max_tokens\":4,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
                  "\"stop_sequences\":\"x\"}", "\"stop_sequences\" must be an array");
}

/* ------------------------------------------------------------------ answers */


typedef struct piece {
    const char *thinking, *content, *call;
} piece;

/* The blocks a client accumulates from the events (the SDK's rule: start pushes the
 * block, deltas append, input_json_delta text is parsed at stop). */
static json_t *accumulate(const json_t *evs) {
    json_t *blocks = json_array();
    srv_buf js = {0};
    for (size_t i = 0; i < json_array_size(evs); i++) {
        const json_t *e = json_array_get(evs, i);
        const char *t = json_string_value(json_object_get(e, "type"));
        json_int_t idx = json_integer_value(json_object_get(e, "index"));
        if (!strcmp(t, "content_block_start")) {
            CHECK(idx == (json_int_t)json_array_size(blocks));
            json_array_append_new(blocks, json_deep_copy(json_object_get(e, "content_block")));
            srv_buf_clear(&js);
        } else if (!strcmp(t, "content_block_delta")) {
            CHECK(idx == (json_int_t)json_array_size(blocks) - 1);
            json_t *b = json_array_get(blocks, (size_t)idx);
            const json_t *d = json_object_get(e, "delta");
            const char *dt = json_string_value(json_object_get(d, "type"));
            const char *field = !strcmp(dt, "text_delta") ? "text" : !strcmp(dt, "thinking_delta") ? "thinking" : NULL;
            if (field) {
                srv_buf s = {0};
                srv_buf_puts(&s, json_string_value(json_object_get(b, field)));
                srv_buf_puts(&s, json_string_value(json_object_get(d, field)));
                json_object_set_new(b, field, json_string(s.data));
                srv_buf_free(&s);
            } else {
                CHECK(!strcmp(dt, "input_json_delta"));
                srv_buf_puts(&js, json_string_value(json_object_get(d, "partial_json")));
            }
        } else if (!strcmp(t, "content_block_stop")) {
            json_t *b = json_array_get(blocks, (size_t)idx);
            if (js.len) json_object_set_new(b, "input", json_loadb(js.data, js.len, 0, NULL));
            srv_buf_clear(&js);
        }
    }
    srv_buf_free(&js);
    return blocks;
}

static void run(const piece *ps, int n, const char *reason, const char *want_types, const char *want_content) {
    srv_anth c;
    srv_buf sse = {0};
    srv_anth_init(&c, "m", 5);
    srv_anth_start(&c, &sse, 12);
    srv_anth_start(&c, &sse, 12); /* once */
    srv_buf th = {0}, co = {0};
    json_t *calls = json_array();
    for (int i = 0; i < n; i++) {
        json_t *one = ps[i].call ? json_pack("[o]", json_loads(ps[i].call, 0, NULL)) : NULL;
        srv_delta d = {.thinking = ps[i].thinking, .thinking_len = ps[i].thinking ? strlen(ps[i].thinking) : 0,
                       .content = ps[i].content, .content_len = ps[i].content ? strlen(ps[i].content) : 0,
                       .tool_calls = one};
        srv_anth_delta(&c, &sse, &d);
        if (ps[i].thinking) srv_buf_puts(&th, ps[i].thinking);
        if (ps[i].content) srv_buf_puts(&co, ps[i].content);
        if (one) json_array_extend(calls, one);
        json_decref(one);
    }
    srv_anth_end(&c, &sse, true, reason, !strcmp(reason, "stop_sequence") ? "##" : NULL, 12, 7);
    json_t *evs = test_parse_sse_events(&sse);
    srv_buf types = {0};
    for (size_t i = 0; i < json_array_size(evs); i++) {
        const char *t = json_string_value(json_object_get(json_array_get(evs, i), "type"));
        if (i && !strcmp(t, "content_block_delta") &&
            !strcmp(t, json_string_value(json_object_get(json_array_get(evs, i - 1), "type"))))
            continue;
        if (types.len) srv_buf_puts(&types, " ");
        srv_buf_puts(&types, t);
    }
    CHECK_MSG(types.data && !strcmp(types.data, want_types), "events:\n got  %s\n want %s", types.data, want_types);
    srv_buf_free(&types);
    const json_t *start = json_object_get(json_array_get(evs, 0), "message");
    test_check_json(json_object_get(start, "usage"), "{\"input_tokens\":12,\"output_tokens\":0}", "message_start usage");
    CHECK(json_array_size(json_object_get(start, "content")) == 0 && json_is_null(json_object_get(start, "stop_reason")));
    const json_t *md = json_object_get(json_array_get(evs, json_array_size(evs) - 2), "delta");
    CHECK(!strcmp(json_string_value(json_object_get(md, "stop_reason")), reason));
    json_t *acc = accumulate(evs);
    /* ids aside (random), the accumulated blocks are the expected ones */
    for (size_t i = 0; i < json_array_size(acc); i++) {
        json_t *b = json_array_get(acc, i);
        if (json_object_get(b, "id")) {
            CHECK(!strncmp(json_string_value(json_object_get(b, "id")), "toolu_", 6));
            json_object_set_new(b, "id", json_string("ID"));
        }
    }
    test_check_json(acc, want_content, "streamed content");
    srv_anth_free(&c);
    /* not streamed: one delta with everything (no interleaving here), the same blocks */
    srv_anth_init(&c, "m", 5);
    srv_buf body = {0};
    srv_delta w = {.thinking = th.len ? th.data : NULL, .thinking_len = th.len, .content = co.data, .content_len = co.len,
                   .tool_calls = json_array_size(calls) ? calls : NULL};
    srv_anth_delta(&c, NULL, &w);
    srv_anth_end(&c, &body, false, reason, !strcmp(reason, "stop_sequence") ? "##" : NULL, 12, 7);
    json_t *m = json_loadb(body.data, body.len, 0, NULL);
    CHECK(m);
    json_t *content = json_deep_copy(json_object_get(m, "content"));
    for (size_t i = 0; i < json_array_size(content); i++)
        if (json_object_get(json_array_get(content, i), "id"))
            json_object_set_new(json_array_get(content, i), "id", json_string("ID"));
    test_check_json(content, want_content, "whole content");
    CHECK(!strcmp(json_string_value(json_object_get(m, "type")), "message") &&
          !strcmp(json_string_value(json_object_get(m, "role")), "assistant") &&
          !strncmp(json_string_value(json_object_get(m, "id")), "msg_", 4));
    CHECK(!strcmp(json_string_value(json_object_get(m, "stop_reason")), reason));
    if (!strcmp(reason, "stop_sequence")) CHECK(!strcmp(json_string_value(json_object_get(m, "stop_sequence")), "##"));
    else CHECK(json_is_null(json_object_get(m, "stop_sequence")));
    test_check_json(json_object_get(m, "usage"), "{\"input_tokens\":12,\"output_tokens\":7}", "usage");
    json_decref(content);
    json_decref(m);
    json_decref(acc);
    json_decref(evs);
    json_decref(calls);
    srv_buf_free(&body);
    srv_buf_free(&sse);
    srv_buf_free(&th);
    srv_buf_free(&co);
    srv_anth_free(&c);
}

static void test_answers(void) {
    piece a[] = {{"Let me ", NULL, NULL}, {"think.", NULL, NULL}, {NULL, "\n\n", NULL}, {NULL, "Hi", NULL}, {NULL, " there", NULL}};
    run(a, 5, "end_turn",
        "message_start ping content_block_start content_block_delta content_block_stop content_block_start "
        "content_block_delta content_block_stop message_delta message_stop",
        "[{\"type\":\"thinking\",\"thinking\":\"Let me think.\",\"signature\":\"\"},{\"type\":\"text\",\"text\":\"\\n\\nHi there\"}]");
    piece b[] = {{"hmm", NULL, NULL}, {NULL, "\n", NULL},
                 {NULL, NULL, "{\"id\":\"call_1\",\"function\":{\"name\":\"get\",\"arguments\":{\"city\":\"Paris\"}}}"},
                 {NULL, NULL, "{\"function\":{\"name\":\"put\",\"arguments\":{}}}"}};
    run(b, 4, "tool_use",
        "message_start ping content_block_start content_block_delta content_block_stop content_block_start "
        "content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta "
        "message_stop",
        "[{\"type\":\"thinking\",\"thinking\":\"hmm\",\"signature\":\"\"},"
        "{\"type\":\"tool_use\",\"id\":\"ID\",\"name\":\"get\",\"input\":{\"city\":\"Paris\"}},"
        "{\"type\":\"tool_use\",\"id\":\"ID\",\"name\":\"put\",\"input\":{}}]");
    piece c[] = {{NULL, "Once", NULL}, {NULL, " upon", NULL}};
    run(c, 2, "max_tokens", "message_start ping content_block_start content_block_delta content_block_stop message_delta message_stop",
        "[{\"type\":\"text\",\"text\":\"Once upon\"}]");
    run(c, 2, "stop_sequence", "message_start ping content_block_start content_block_delta content_block_stop message_delta message_stop",
        "[{\"type\":\"text\",\"text\":\"Once upon\"}]");
    run(NULL, 0, "end_turn", "message_start ping content_block_start content_block_stop message_delta message_stop",
        "[{\"type\":\"text\",\"text\":\"\"}]");
    piece d[] = {{NULL, "  ", NULL}};
    run(d, 1, "end_turn", "message_start ping content_block_start content_block_delta content_block_stop message_delta message_stop",
        "[{\"type\":\"text\",\"text\":\"  \"}]");

    /* errors: the body and the stream event */
    srv_buf b1 = {0};
    srv_anth_error(&b1, 404, "model \"x\" not found");
    json_t *j = json_loadb(b1.data, b1.len, 0, NULL);
    test_check_json(j, "{\"type\":\"error\",\"error\":{\"type\":\"not_found_error\",\"message\":\"model \\\"x\\\" not found\"}}",
               "error body");
    json_decref(j);
    srv_buf_clear(&b1);
    srv_anth_stream_error(&b1, 503, "busy");
    json_t *evs = test_parse_sse_events(&b1);
    test_check_json(json_array_get(evs, 0), "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}",
               "error event");
    json_decref(evs);
    srv_buf_free(&b1);
}

int main(void) {
    test_requests();
    test_answers();
    return test_finish("test_server_anthropic");
}
