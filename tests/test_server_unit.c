/* Unit tests of the server's pure layers: utilities (SHA-256 against the FIPS 180-2
 * vectors, RFC 3339 timestamps against Go's formatting, Go duration strings against
 * Go's own test table, model names, globs, UTF-8), request decoding (field mapping,
 * OpenAI defaults, limits, error messages), response framing (NDJSON, SSE, errors)
 * and stop strings with hold-back (every split of the text against a brute-force
 * reference). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/request.h"
#include "server/response.h"
#include "server/textout.h"
#include "server/util.h"
#include "test_util.h"

/* ------------------------------------------------------------------ util */

static void sha_hex(const void *p, size_t n, char out[65]) {
    srv_sha256 c;
    unsigned char d[32];
    srv_sha256_init(&c);
    srv_sha256_update(&c, p, n);
    srv_sha256_final(&c, d);
    srv_hex(d, 32, out);
}

static void test_sha256(void) {
    char h[65];
    sha_hex("abc", 3, h);
    CHECK(!strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    sha_hex("", 0, h);
    CHECK(!strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha_hex(m448, strlen(m448), h);
    CHECK(!strcmp(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    /* one million 'a', fed in odd-sized pieces */
    srv_sha256 c;
    srv_sha256_init(&c);
    char a[997];
    memset(a, 'a', sizeof a);
    size_t left = 1000000;
    while (left) {
        size_t n = left < sizeof a ? left : sizeof a;
        srv_sha256_update(&c, a, n);
        left -= n;
    }
    unsigned char d[32];
    srv_sha256_final(&c, d);
    srv_hex(d, 32, h);
    CHECK(!strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
    /* the bundled model, against the sha256 published in ../shared/README.md */
    CHECK(srv_sha256_file(test_path("models/stories260K.gguf"), h));
    CHECK(!strcmp(h, "270cba1bd5109f42d03350f60406024560464db173c0e387d91f0426d3bd256d"));
    CHECK(!srv_sha256_file("/nonexistent/file", h));
}

static void test_time(void) {
    char b[40];
    /* Go: time.Unix(s, ns).UTC().Format(time.RFC3339Nano) */
    CHECK(!strcmp(srv_rfc3339nano(0, true, b), "1970-01-01T00:00:00Z"));
    CHECK(!strcmp(srv_rfc3339nano(1500000000LL * 1000000000 + 123456789, true, b), "2017-07-14T02:40:00.123456789Z"));
    CHECK(!strcmp(srv_rfc3339nano(1500000000LL * 1000000000 + 100000000, true, b), "2017-07-14T02:40:00.1Z"));
    CHECK(!strcmp(srv_rfc3339nano(1500000000LL * 1000000000 + 120, true, b), "2017-07-14T02:40:00.00000012Z"));
    CHECK(!strcmp(srv_rfc3339nano(951782400LL * 1000000000, true, b), "2000-02-29T00:00:00Z"));
    /* local time: same instant, an explicit offset */
    srv_rfc3339nano(1500000000LL * 1000000000, false, b);
    size_t n = strlen(b);
    CHECK(n >= 25 && (b[n - 6] == '+' || b[n - 6] == '-') && b[n - 3] == ':');
}

static void test_duration(void) {
    /* Go's time.ParseDuration test table (a selection) */
    static const struct {
        const char *s;
        int64_t ns;
    } ok[] = {{"0", 0},
              {"5s", 5000000000LL},
              {"30s", 30000000000LL},
              {"1478s", 1478000000000LL},
              {"-5s", -5000000000LL},
              {"+5s", 5000000000LL},
              {"-0", 0},
              {"5.0s", 5000000000LL},
              {"5.6s", 5600000000LL},
              {"5.s", 5000000000LL},
              {".5s", 500000000LL},
              {"1.004s", 1004000000LL},
              {"100.00100s", 100001000000LL},
              {"10ns", 10},
              {"11us", 11000},
              {"12\xc2\xb5s", 12000},
              {"12\xce\xbcs", 12000},
              {"13ms", 13000000},
              {"15m", 900000000000LL},
              {"16h", 57600000000000LL},
              {"3h30m", 12600000000000LL},
              {"10.5s4m", 250500000000LL},
              {"-2m3.4s", -123400000000LL},
              {"1h2m3s4ms5us6ns", 3723004005006LL},
              {"39h9m14.425s", 140954425000000LL},
              {"52763797000ns", 52763797000LL},
              /* Loom's extension: a bare number is seconds (OLLAMA_KEEP_ALIVE style) */
              {"300", 300000000000LL},
              {"1.5", 1500000000LL}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t v = -42;
        bool r = srv_parse_duration(ok[i].s, &v);
        CHECK_MSG(r && (v == ok[i].ns || (v - ok[i].ns < 2 && ok[i].ns - v < 2)), "%s -> %d %lld", ok[i].s, r,
                  (long long)v);
    }
    static const char *const bad[] = {"", "-", "s", ".", "-.", ".s", "+.s", "3000000h", "1d", "5 s", "x5s", "5sx", NULL};
    for (int i = 0; bad[i]; i++) {
        int64_t v;
        CHECK_MSG(!srv_parse_duration(bad[i], &v), "'%s' accepted", bad[i]);
    }
}

static void test_names(void) {
    static const char *const good[] = {"llama3", "llama3:8b", "library/llama3:latest",
                                       "registry.ollama.ai/library/llama3:8b", "hf.co/user/Model-GGUF:Q4_K_M",
                                       "a_b-c.d", "x:y", NULL};
    for (int i = 0; good[i]; i++) CHECK_MSG(srv_name_valid(good[i], NULL, 0), "%s", good[i]);
    static const char *const bad[] = {"", "../x", "/abs", "a/../b", "a//b", "a:b:c", ".hidden", "a:b/c", "x y",
                                      "a\\b", "a/./b", "-x", "a/", "a:", ":a", "a\nb", NULL};
    for (int i = 0; bad[i]; i++) CHECK_MSG(!srv_name_valid(bad[i], NULL, 0), "'%s' accepted", bad[i]);
    char longname[300];
    memset(longname, 'a', 299);
    longname[299] = 0;
    CHECK(!srv_name_valid(longname, NULL, 0));
    char c[300];
    CHECK(srv_name_canonical("llama3", c, sizeof c) && !strcmp(c, "llama3:latest"));
    CHECK(srv_name_canonical("llama3:8b", c, sizeof c) && !strcmp(c, "llama3:8b"));
    CHECK(!srv_name_canonical("../x", c, sizeof c));
}

static void test_glob_utf8_numbers(void) {
    CHECK(srv_glob_match("http://localhost:*", "http://localhost:3000"));
    CHECK(!srv_glob_match("http://localhost:*", "http://localhost.evil.com"));
    CHECK(!srv_glob_match("http://localhost", "http://localhost:1"));
    CHECK(srv_glob_match("*", "anything"));
    CHECK(srv_glob_match("app://*", "app://x/y"));
    CHECK(srv_glob_match("https://*.example.com", "https://a.b.example.com"));
    CHECK(!srv_glob_match("https://*.example.com", "https://example.org"));
    CHECK_EQ_INT(srv_utf8_complete_prefix("ab\xc3", 3), 2);
    CHECK_EQ_INT(srv_utf8_complete_prefix("ab\xc3\xa9", 4), 4);
    CHECK_EQ_INT(srv_utf8_complete_prefix("\xe2\x82", 2), 0);
    CHECK_EQ_INT(srv_utf8_complete_prefix("\xe2\x82\xac", 3), 3);
    CHECK_EQ_INT(srv_utf8_complete_prefix("a\xf0\x9f\x98", 4), 1);
    CHECK_EQ_INT(srv_utf8_complete_prefix("a\xf0\x9f\x98\x80", 5), 5);
    CHECK_EQ_INT(srv_utf8_complete_prefix("", 0), 0);
    /* Ollama's format.HumanNumber: B one decimal, M two, K none; whole numbers bare */
    static const struct {
        uint64_t n;
        const char *s;
    } hn[] = {{292928, "293K"}, {1100048384, "1.1B"}, {8000000000ULL, "8B"}, {7241732096ULL, "7.2B"},
              {494032768, "494.03M"}, {1000000, "1M"}, {999, "999"}, {1000, "1K"}};
    for (size_t i = 0; i < sizeof hn / sizeof hn[0]; i++) {
        char b[32];
        srv_human_number(hn[i].n, b, sizeof b);
        CHECK_MSG(!strcmp(b, hn[i].s), "%llu -> %s (want %s)", (unsigned long long)hn[i].n, b, hn[i].s);
    }
}

/* ------------------------------------------------------------------ requests */

static bool decode(srv_api api, const char *body, srv_gen_req *r, srv_err *e) {
    srv_limits lim = srv_limits_default();
    memset(e, 0, sizeof *e);
    json_t *j = srv_json_parse(body, strlen(body), &lim, e);
    if (!j) {
        memset(r, 0, sizeof *r);
        return false;
    }
    bool ok = srv_gen_req_decode(api, j, &lim, r, e);
    json_decref(j);
    return ok;
}

static void expect_err(srv_api api, const char *body, int status, const char *needle) {
    srv_gen_req r;
    srv_err e;
    bool ok = decode(api, body, &r, &e);
    CHECK_MSG(!ok && e.status == status && strstr(e.msg, needle), "%s -> %d %d '%s' (want %d '%s')", body, ok, e.status,
              e.msg, status, needle);
    srv_gen_req_free(&r);
}

static void test_requests(void) {
    srv_gen_req r;
    srv_err e;
    /* Ollama generate: options mapped, unknown keys ignored, stream default true */
    CHECK(decode(SRV_API_GENERATE,
                 "{\"model\":\"m\",\"prompt\":\"a\\u0000b\",\"options\":{\"num_ctx\":1024,\"num_predict\":7,\"temperature\":0,"
                 "\"top_k\":5,\"top_p\":0.5,\"min_p\":0.1,\"seed\":42,\"stop\":[\"x\",\"yz\"],\"repeat_penalty\":1.1,"
                 "\"unknown_key\":[1,2],\"mirostat\":0},\"keep_alive\":\"10m\",\"raw\":true}",
                 &r, &e));
    CHECK(r.stream && r.raw && r.prompt_len == 3 && r.prompt[1] == 0 && r.prompt[2] == 'b');
    CHECK(r.opt.num_ctx_set && r.opt.num_ctx == 1024 && r.opt.num_predict == 7 && r.opt.temperature == 0.0f);
    CHECK(r.opt.top_k == 5 && r.opt.top_p == 0.5f && r.opt.min_p == 0.1f && r.opt.seed == 42 && r.opt.seed_set);
    CHECK(r.opt.n_stop == 2 && !strcmp(r.opt.stop[1], "yz") && r.opt.repeat_penalty == 1.1f);
    CHECK(r.keep_alive_set && r.keep_alive_ns == 600000000000LL);
    CHECK(!r.opt.num_batch_set && !r.opt.min_p_set == false);
    srv_gen_req_free(&r);
    /* integer options accept whole floats (Go's JSON numbers), seconds for keep_alive */
    CHECK(decode(SRV_API_GENERATE, "{\"model\":\"m\",\"options\":{\"num_predict\":5.0},\"keep_alive\":-1}", &r, &e));
    CHECK(r.opt.num_predict == 5 && r.keep_alive_ns < 0);
    srv_gen_req_free(&r);
    CHECK(decode(SRV_API_GENERATE, "{\"model\":\"m\",\"keep_alive\":0,\"stream\":false}", &r, &e));
    CHECK(r.keep_alive_set && r.keep_alive_ns == 0 && !r.stream);
    srv_gen_req_free(&r);

    expect_err(SRV_API_GENERATE, "{\"prompt\":\"x\"}", 400, "model is required");
    expect_err(SRV_API_GENERATE, "{\"model\":7}", 400, "\"model\" must be a string");
    expect_err(SRV_API_GENERATE, "{\"model\":\"m\",\"options\":{\"num_predict\":\"many\"}}", 400,
               "option \"num_predict\" must be of type integer");
    expect_err(SRV_API_GENERATE, "{\"model\":\"m\",\"options\":{\"temperature\":\"hot\"}}", 400, "\"temperature\"");
    /* options.stop: a string or an array of strings (docs.ollama.com/openapi.yaml ModelOptions) */
    CHECK(decode(SRV_API_GENERATE, "{\"model\":\"m\",\"options\":{\"stop\":\"x\\n\"}}", &r, &e));
    CHECK(r.opt.n_stop == 1 && !strcmp(r.opt.stop[0], "x\n"));
    srv_gen_req_free(&r);
    expect_err(SRV_API_GENERATE, "{\"model\":\"m\",\"options\":{\"stop\":7}}", 400, "must be of type array");
    expect_err(SRV_API_GENERATE, "{\"model\":\"m\",\"options\":{\"stop\":[1]}}", 400, "array of strings");
    expect_err(SRV_API_GENERATE, "{\"model\":\"m\",\"options\":{\"use_mmap\":1}}", 400, "boolean");
    expect_err(SRV_API_GENERATE, "{\"model\":\"m\",\"options\":{\"min_p\":2}}", 400, "out of range");
    expect_err(SRV_API_GENERATE, "{\"model\":\"m\",\"options\":7}", 400, "\"options\" must be an object");
    expect_err(SRV_API_GENERATE, "{\"model\":\"m\",\"keep_alive\":\"soon\"}", 400, "keep_alive");
    expect_err(SRV_API_GENERATE, "{\"model\":\"m\",\"images\":[\"aGk=\"]}", 400, "images are not supported");
    expect_err(SRV_API_GENERATE, "{\"model\":\"m\",\"context\":[1,-2]}", 400, "\"context\"[1]");
    expect_err(SRV_API_GENERATE, "{\"model\":\"m\",\"format\":\"xml\"}", 400, "\"format\"");
    expect_err(SRV_API_GENERATE, "{\"model\":\"m\",\"think\":\"very\"}", 400, "\"think\"");
    expect_err(SRV_API_CHAT, "{\"model\":\"m\",\"messages\":\"hi\"}", 400, "\"messages\" must be an array");
    expect_err(SRV_API_CHAT, "{\"model\":\"m\",\"messages\":[{\"content\":\"x\"}]}", 400, "messages[0].role");
    expect_err(SRV_API_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":5}]}", 400,
               "messages[0].content must be a string");
    expect_err(SRV_API_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"images\":[\"aGk=\"]}]}",
               400, "images are not supported");

    /* Ollama chat: tool calls kept as objects, think */
    CHECK(decode(SRV_API_CHAT,
                 "{\"model\":\"m\",\"think\":\"high\",\"messages\":[{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":"
                 "[{\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}}]},{\"role\":\"tool\",\"content\":\"3\","
                 "\"tool_name\":\"f\"}]}",
                 &r, &e));
    CHECK(r.think == 1 && r.think_level && !strcmp(r.think_level, "high"));
    CHECK(json_array_size(r.messages) == 2);
    json_t *tc = json_object_get(json_array_get(r.messages, 0), "tool_calls");
    CHECK(json_integer_value(json_object_get(json_object_get(json_object_get(json_array_get(tc, 0), "function"),
                                                             "arguments"), "a")) == 1);
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(r.messages, 1), "tool_name")), "f"));
    srv_gen_req_free(&r);

    /* OpenAI chat: defaults (temperature, top_p 1.0), max_tokens -> num_predict, stop
     * as a string, parts flattened, developer -> system, tool-call arguments parsed,
     * tool_call_id -> tool_name, stream off by default */
    CHECK(decode(SRV_API_OAI_CHAT,
                 "{\"model\":\"m\",\"max_tokens\":9,\"stop\":\"END\",\"seed\":3,\"stream_options\":{\"include_usage\":true},"
                 "\"messages\":[{\"role\":\"developer\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":[{\"type\":"
                 "\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},{\"role\":\"assistant\",\"content\":null,"
                 "\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get\",\"arguments\":"
                 "\"{\\\"city\\\":\\\"Paris\\\"}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"sunny\"}]}",
                 &r, &e));
    CHECK(!r.stream && r.include_usage);
    CHECK(r.opt.temperature == 1.0f && r.opt.top_p == 1.0f && r.opt.num_predict == 9 && r.opt.seed == 3);
    CHECK(r.opt.n_stop == 1 && !strcmp(r.opt.stop[0], "END"));
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(r.messages, 0), "role")), "system"));
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(r.messages, 1), "content")), "a\nb"));
    json_t *args = json_object_get(json_object_get(json_array_get(json_object_get(json_array_get(r.messages, 2),
                                                                                  "tool_calls"), 0), "function"),
                                   "arguments");
    CHECK(json_is_object(args) && !strcmp(json_string_value(json_object_get(args, "city")), "Paris"));
    CHECK(!strcmp(json_string_value(json_object_get(json_array_get(r.messages, 3), "tool_name")), "get"));
    srv_gen_req_free(&r);
    CHECK(decode(SRV_API_OAI_CHAT, "{\"model\":\"m\",\"temperature\":0.2,\"top_p\":0.7,\"stop\":[\"a\",\"b\"],"
                                   "\"response_format\":{\"type\":\"json_object\"},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
                 &r, &e));
    CHECK(r.opt.temperature == 0.2f && r.opt.top_p == 0.7f && r.opt.n_stop == 2);
    CHECK(json_is_string(r.format) && !strcmp(json_string_value(r.format), "json"));
    srv_gen_req_free(&r);
    expect_err(SRV_API_OAI_CHAT, "{\"model\":\"m\",\"messages\":[]}", 400, "[] is too short - 'messages'");
    expect_err(SRV_API_OAI_CHAT, "{\"model\":\"m\",\"n\":2,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", 400,
               "one choice");
    expect_err(SRV_API_OAI_CHAT,
               "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":"
               "{\"url\":\"data:image/png;base64,aGk=\"}}]}]}",
               400, "images are not supported");
    expect_err(SRV_API_OAI_CHAT,
               "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":\"f\","
               "\"arguments\":\"{oops\"}}]}]}",
               400, "invalid tool call arguments");
    expect_err(SRV_API_OAI_CHAT, "{\"model\":\"m\",\"reasoning_effort\":\"max\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
               400, "invalid reasoning value");
    /* log probabilities: OpenAI chat logprobs (boolean) + top_logprobs 0..20 (only with
     * logprobs true), completions logprobs an integer 0..20, Ollama logprobs + top_logprobs */
    static const struct {
        srv_api api;
        const char *body;
        int want;
    } lpc[] = {
        {SRV_API_OAI_CHAT, "{\"model\":\"m\",\"logprobs\":true,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", 0},
        {SRV_API_OAI_CHAT, "{\"model\":\"m\",\"logprobs\":true,\"top_logprobs\":20,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", 20},
        {SRV_API_OAI_CHAT, "{\"model\":\"m\",\"logprobs\":false,\"top_logprobs\":0,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", -1},
        {SRV_API_OAI_COMPLETE, "{\"model\":\"m\",\"prompt\":\"x\",\"logprobs\":0}", 0},
        {SRV_API_OAI_COMPLETE, "{\"model\":\"m\",\"prompt\":\"x\",\"logprobs\":5}", 5},
        {SRV_API_OAI_COMPLETE, "{\"model\":\"m\",\"prompt\":\"x\",\"logprobs\":null,\"best_of\":1}", -1},
        {SRV_API_GENERATE, "{\"model\":\"m\",\"logprobs\":true,\"top_logprobs\":3}", 3},
        {SRV_API_GENERATE, "{\"model\":\"m\",\"logprobs\":false,\"top_logprobs\":3}", -1},
        {SRV_API_CHAT, "{\"model\":\"m\",\"logprobs\":true,\"messages\":[]}", 0},
    };
    for (size_t i = 0; i < sizeof lpc / sizeof lpc[0]; i++) {
        CHECK_MSG(decode(lpc[i].api, lpc[i].body, &r, &e) && r.logprobs == lpc[i].want, "%s -> %d (%s), want %d",
                  lpc[i].body, r.logprobs, e.msg, lpc[i].want);
        srv_gen_req_free(&r);
    }
    expect_err(SRV_API_OAI_CHAT, "{\"model\":\"m\",\"top_logprobs\":2,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
               400, "\"top_logprobs\" needs \"logprobs\": true");
    expect_err(SRV_API_OAI_CHAT, "{\"model\":\"m\",\"logprobs\":true,\"top_logprobs\":21,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
               400, "\"top_logprobs\" must be from 0 to 20");
    expect_err(SRV_API_OAI_CHAT, "{\"model\":\"m\",\"logprobs\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
               400, "\"logprobs\" must be a boolean");
    expect_err(SRV_API_OAI_COMPLETE, "{\"model\":\"m\",\"prompt\":\"x\",\"logprobs\":-1}", 400, "\"logprobs\" must be from 0 to 20");
    expect_err(SRV_API_OAI_COMPLETE, "{\"model\":\"m\",\"prompt\":\"x\",\"logprobs\":true}", 400, "must be an integer");
    expect_err(SRV_API_OAI_COMPLETE, "{\"model\":\"m\",\"prompt\":\"x\",\"best_of\":3}", 400, "\"best_of\"");
    expect_err(SRV_API_GENERATE, "{\"model\":\"m\",\"logprobs\":true,\"top_logprobs\":\"5\"}", 400, "\"top_logprobs\" must be an integer");

    /* OpenAI output modalities: text only */
    CHECK(decode(SRV_API_OAI_CHAT, "{\"model\":\"m\",\"modalities\":[\"text\"],\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
                 &r, &e));
    srv_gen_req_free(&r);
    expect_err(SRV_API_OAI_CHAT,
               "{\"model\":\"m\",\"modalities\":[\"text\",\"audio\"],\"audio\":{\"voice\":\"alloy\",\"format\":\"wav\"},"
               "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
               400, "\"modalities\"[1]: only \"text\"");
    expect_err(SRV_API_OAI_CHAT, "{\"model\":\"m\",\"audio\":{\"voice\":\"alloy\"},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
               400, "audio output is not supported");

    /* OpenAI logit_bias: {"id": bias in [-100, 100]} */
    CHECK(decode(SRV_API_OAI_COMPLETE, "{\"model\":\"m\",\"logit_bias\":{\"7\":-100,\"300\":2.5}}", &r, &e));
    CHECK(r.n_bias == 2 && r.bias_ids[0] == 7 && r.bias_vals[0] == -100.0f && r.bias_ids[1] == 300 && r.bias_vals[1] == 2.5f);
    srv_gen_req_free(&r);
    CHECK(decode(SRV_API_OAI_CHAT, "{\"model\":\"m\",\"logit_bias\":null,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
                 &r, &e));
    CHECK(r.n_bias == 0);
    srv_gen_req_free(&r);
    expect_err(SRV_API_OAI_COMPLETE, "{\"model\":\"m\",\"logit_bias\":{\"7\":101}}", 400, "from -100 to 100");
    expect_err(SRV_API_OAI_COMPLETE, "{\"model\":\"m\",\"logit_bias\":{\"7\":\"1\"}}", 400, "from -100 to 100");
    expect_err(SRV_API_OAI_COMPLETE, "{\"model\":\"m\",\"logit_bias\":{\"x\":1}}", 400, "invalid token id");
    expect_err(SRV_API_OAI_COMPLETE, "{\"model\":\"m\",\"logit_bias\":{\"-3\":1}}", 400, "invalid token id");
    expect_err(SRV_API_OAI_COMPLETE, "{\"model\":\"m\",\"logit_bias\":{\"99999999999\":1}}", 400, "invalid token id");
    expect_err(SRV_API_OAI_COMPLETE, "{\"model\":\"m\",\"logit_bias\":[[1,2]]}", 400, "\"logit_bias\" must be an object");

    /* OpenAI completions: a one-element prompt array, token arrays refused */
    CHECK(decode(SRV_API_OAI_COMPLETE, "{\"model\":\"m\",\"prompt\":[\"hello\"],\"max_tokens\":2}", &r, &e));
    CHECK(r.prompt && !strcmp(r.prompt, "hello") && r.opt.num_predict == 2);
    srv_gen_req_free(&r);
    expect_err(SRV_API_OAI_COMPLETE, "{\"model\":\"m\",\"prompt\":[1,2]}", 400, "\"prompt\" must be a string");

    /* limits and malformed bodies */
    srv_limits lim = srv_limits_default();
    srv_err pe = {0};
    CHECK(!srv_json_parse("  \n", 3, &lim, &pe) && pe.status == 400 && strstr(pe.msg, "missing request body"));
    memset(&pe, 0, sizeof pe);
    CHECK(!srv_json_parse("[1]", 3, &lim, &pe) && pe.status == 400 && strstr(pe.msg, "JSON object"));
    memset(&pe, 0, sizeof pe);
    CHECK(!srv_json_parse("{\"a\":", 5, &lim, &pe) && pe.status == 400 && strstr(pe.msg, "line 1"));
    char deep[300];
    int d = 0;
    deep[d++] = '{';
    for (int i = 0; i < 70; i++) deep[d++] = '[';
    deep[d] = 0;
    memset(&pe, 0, sizeof pe);
    CHECK(!srv_json_parse(deep, strlen(deep), &lim, &pe) && pe.status == 400 && strstr(pe.msg, "nesting"));
    lim.max_string = 8;
    memset(&pe, 0, sizeof pe);
    const char *longs = "{\"model\":\"0123456789abcdef\"}";
    CHECK(!srv_json_parse(longs, strlen(longs), &lim, &pe) && pe.status == 413);
    lim = srv_limits_default();
    memset(&pe, 0, sizeof pe);
    const char *bad_utf8 = "{\"model\":\"\xff\"}";
    CHECK(!srv_json_parse(bad_utf8, strlen(bad_utf8), &lim, &pe) && pe.status == 400);
}

/* ------------------------------------------------------------------ responses */

static json_t *parse_line(const char *s, size_t n) { return json_loadb(s, n, JSON_ALLOW_NUL, NULL); }

static bool is_rfc3339_utc(const char *s) {
    size_t n = strlen(s);
    return n >= 20 && s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' && s[16] == ':' && s[n - 1] == 'Z';
}

static void test_responses(void) {
    srv_buf b = {0};
    srv_ollama_chunk(&b, SRV_API_GENERATE, "m", 1500000000LL * 1000000000 + 5, "Hi \"x\"", 6);
    CHECK(b.len && b.data[b.len - 1] == '\n' && !memchr(b.data, '\n', b.len - 1));
    json_t *j = parse_line(b.data, b.len);
    CHECK(j && !strcmp(json_string_value(json_object_get(j, "response")), "Hi \"x\""));
    CHECK(json_is_false(json_object_get(j, "done")));
    CHECK(!strcmp(json_string_value(json_object_get(j, "created_at")), "2017-07-14T02:40:00.000000005Z"));
    CHECK(strstr(b.data, "{\"model\":\"m\",\"created_at\"") == b.data); /* Ollama's field order */
    json_decref(j);
    srv_buf_clear(&b);
    srv_ollama_chunk(&b, SRV_API_CHAT, "m", srv_now_ns(), "a\xff", 2); /* invalid UTF-8 -> U+FFFD */
    j = parse_line(b.data, b.len);
    json_t *msg = json_object_get(j, "message");
    CHECK(!strcmp(json_string_value(json_object_get(msg, "role")), "assistant"));
    CHECK(!strcmp(json_string_value(json_object_get(msg, "content")), "a\xEF\xBF\xBD"));
    CHECK(is_rfc3339_utc(json_string_value(json_object_get(j, "created_at"))));
    json_decref(j);

    int32_t ctx[3] = {1, 2, 3};
    srv_final f = {.done_reason = "stop", .total_ns = 5000000000LL, .load_ns = 0, .prompt_ns = 7, .eval_ns = 9,
                   .prompt_count = 3, .eval_count = 4, .context = ctx, .n_context = 3};
    srv_buf_clear(&b);
    srv_ollama_final(&b, SRV_API_GENERATE, "m", srv_now_ns(), "", 0, &f, true);
    j = parse_line(b.data, b.len);
    CHECK(json_is_true(json_object_get(j, "done")) && !strcmp(json_string_value(json_object_get(j, "done_reason")), "stop"));
    CHECK(json_integer_value(json_object_get(j, "total_duration")) == 5000000000LL);
    CHECK(!json_object_get(j, "load_duration")); /* omitempty, as Ollama's Metrics */
    CHECK(json_integer_value(json_object_get(j, "prompt_eval_count")) == 3);
    CHECK(json_integer_value(json_object_get(j, "eval_duration")) == 9);
    CHECK(json_array_size(json_object_get(j, "context")) == 3);
    json_decref(j);
    srv_buf_clear(&b);
    srv_ollama_final(&b, SRV_API_CHAT, "m", srv_now_ns(), "whole", 5, &f, false);
    CHECK(b.data[b.len - 1] == '}');
    CHECK(strstr(b.data, "\"done_reason\":\"stop\",\"done\":true")); /* chat: done_reason before done */
    j = parse_line(b.data, b.len);
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(j, "message"), "content")), "whole"));
    CHECK(!json_object_get(j, "context"));
    json_decref(j);
    srv_buf_clear(&b);
    srv_ollama_error(&b, "boom", true);
    CHECK(!strcmp(b.data, "{\"error\":\"boom\"}\n"));

    /* OpenAI SSE: role only in the first delta, finish chunk with an empty delta,
     * usage chunk with no choices, then [DONE]; every event "data: ...\n\n" */
    srv_oai_ctx c;
    srv_oai_ctx_init(&c, SRV_API_OAI_CHAT, "m", true);
    CHECK(!strncmp(c.id, "chatcmpl-", 9));
    srv_buf_clear(&b);
    srv_oai_chunk(&b, &c, "He", 2, true);
    srv_oai_chunk(&b, &c, "llo", 3, false);
    srv_oai_stream_end(&b, &c, "stop", 5, 2);
    const char *p = b.data;
    int ev = 0;
    bool done_seen = false;
    while (*p) {
        CHECK(!strncmp(p, "data: ", 6));
        const char *end = strstr(p, "\n\n");
        CHECK(end != NULL);
        if (!end) break;
        if (!strncmp(p + 6, "[DONE]", 6)) {
            done_seen = true;
            CHECK(end[2] == 0);
            break;
        }
        json_t *x = parse_line(p + 6, (size_t)(end - p - 6));
        CHECK(x && !strcmp(json_string_value(json_object_get(x, "object")), "chat.completion.chunk"));
        CHECK(!strcmp(json_string_value(json_object_get(x, "id")), c.id));
        json_t *ch = json_object_get(x, "choices");
        json_t *delta = json_object_get(json_array_get(ch, 0), "delta");
        if (ev == 0) CHECK(!strcmp(json_string_value(json_object_get(delta, "role")), "assistant"));
        if (ev == 1) CHECK(!json_object_get(delta, "role") && !strcmp(json_string_value(json_object_get(delta, "content")), "llo"));
        if (ev <= 1) CHECK(json_is_null(json_object_get(json_array_get(ch, 0), "finish_reason")));
        /* OpenAI's choice objects always carry logprobs (null when not asked) */
        if (ev <= 2) CHECK(json_is_null(json_object_get(json_array_get(ch, 0), "logprobs")));
        /* include_usage: every chunk before the usage chunk has "usage": null (OpenAI's reference) */
        if (ev <= 2) CHECK(json_object_get(x, "usage") && json_is_null(json_object_get(x, "usage")));
        if (ev == 2) {
            CHECK(json_object_size(delta) == 0);
            CHECK(!strcmp(json_string_value(json_object_get(json_array_get(ch, 0), "finish_reason")), "stop"));
        }
        if (ev == 3) {
            CHECK(json_array_size(ch) == 0);
            json_t *u = json_object_get(x, "usage");
            CHECK(json_integer_value(json_object_get(u, "prompt_tokens")) == 5 &&
                  json_integer_value(json_object_get(u, "completion_tokens")) == 2 &&
                  json_integer_value(json_object_get(u, "total_tokens")) == 7);
        }
        json_decref(x);
        ev++;
        p = end + 2;
    }
    CHECK(ev == 4 && done_seen);
    srv_oai_ctx_init(&c, SRV_API_OAI_COMPLETE, "m", false);
    CHECK(!strncmp(c.id, "cmpl-", 5));
    srv_buf_clear(&b);
    srv_oai_final(&b, &c, "txt", 3, "length", 1, 2);
    j = parse_line(b.data, b.len);
    CHECK(!strcmp(json_string_value(json_object_get(j, "object")), "text_completion"));
    json_t *ch0 = json_array_get(json_object_get(j, "choices"), 0);
    CHECK(!strcmp(json_string_value(json_object_get(ch0, "text")), "txt") &&
          !strcmp(json_string_value(json_object_get(ch0, "finish_reason")), "length"));
    json_decref(j);
    /* thinking and tool calls (the encoders the tool-call parsers will feed) */
    json_t *calls = json_pack("[{s:s,s:{s:s,s:{s:s}}}]", "id", "call_7", "function", "name", "get_weather", "arguments",
                              "city", "Paris");
    srv_delta dl = {.content = "", .content_len = 0, .thinking = "hmm", .thinking_len = 3, .tool_calls = calls};
    srv_buf_clear(&b);
    srv_ollama_chunk_d(&b, SRV_API_CHAT, "m", srv_now_ns(), &dl);
    j = parse_line(b.data, b.len);
    msg = json_object_get(j, "message");
    CHECK(!strcmp(json_string_value(json_object_get(msg, "thinking")), "hmm"));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(json_object_get(json_array_get(
                      json_object_get(msg, "tool_calls"), 0), "function"), "arguments"), "city")), "Paris"));
    json_decref(j);
    srv_oai_ctx_init(&c, SRV_API_OAI_CHAT, "m", false);
    srv_buf_clear(&b);
    srv_oai_chunk_d(&b, &c, &dl, true, 0);
    j = parse_line(b.data + 6, b.len - 8);
    json_t *delta = json_object_get(json_array_get(json_object_get(j, "choices"), 0), "delta");
    CHECK(!strcmp(json_string_value(json_object_get(delta, "reasoning_content")), "hmm"));
    json_t *tc0 = json_array_get(json_object_get(delta, "tool_calls"), 0);
    CHECK(json_integer_value(json_object_get(tc0, "index")) == 0 && !strcmp(json_string_value(json_object_get(tc0, "id")), "call_7"));
    CHECK(!strcmp(json_string_value(json_object_get(tc0, "type")), "function"));
    CHECK(!strcmp(json_string_value(json_object_get(json_object_get(tc0, "function"), "arguments")), "{\"city\":\"Paris\"}"));
    json_decref(j);
    srv_buf_clear(&b);
    srv_oai_final_d(&b, &c, &dl, "tool_calls", 1, 1);
    j = parse_line(b.data, b.len);
    json_t *c0 = json_array_get(json_object_get(j, "choices"), 0);
    CHECK(!strcmp(json_string_value(json_object_get(c0, "finish_reason")), "tool_calls"));
    CHECK(json_is_null(json_object_get(c0, "logprobs")) && json_object_get(c0, "logprobs"));
    CHECK(json_array_size(json_object_get(json_object_get(c0, "message"), "tool_calls")) == 1);
    json_decref(j);
    json_decref(calls);
    srv_buf_clear(&b);
    srv_oai_error(&b, 404, "model 'x' not found");
    j = parse_line(b.data, b.len);
    json_t *eo = json_object_get(j, "error");
    CHECK(!strcmp(json_string_value(json_object_get(eo, "type")), "not_found_error"));
    CHECK(json_is_null(json_object_get(eo, "param")) && json_is_null(json_object_get(eo, "code")));
    json_decref(j);
    srv_buf_clear(&b);
    srv_oai_error(&b, 400, "bad");
    CHECK(strstr(b.data, "invalid_request_error"));
    srv_buf_free(&b);
}

/* ------------------------------------------------------------------ stop strings */

/* Reference: the text up to the earliest occurrence of any stop string. */
static size_t ref_cut(const char *t, size_t n, char *const *stop, int ns, bool *hit, int *which) {
    *hit = false;
    *which = -1;
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < ns; k++) {
            size_t sl = strlen(stop[k]);
            if (sl <= n - i && !memcmp(t + i, stop[k], sl)) {
                *hit = true;
                *which = k;
                return i;
            }
        }
    return n;
}

/* Feed text in pieces cut at the given boundaries; check every emitted prefix. */
static bool run_split(const char *t, size_t n, char *const *stop, int ns, const size_t *cuts, int nc) {
    bool hit;
    int which;
    size_t want = ref_cut(t, n, stop, ns, &hit, &which);
    srv_textout to;
    srv_textout_init(&to, stop, ns);
    srv_buf out = {0};
    srv_buf_append(&out, "", 0);
    size_t prev = 0;
    bool stopped = false, ok = true;
    for (int i = 0; i <= nc && !stopped; i++) {
        size_t end = i < nc ? cuts[i] : n;
        stopped = srv_textout_push(&to, t + prev, end - prev, &out);
        prev = end;
        /* what was shown is always a prefix of the final answer, on a UTF-8 boundary */
        if (out.len > want || memcmp(out.data, t, out.len)) ok = false;
        if (srv_utf8_complete_prefix(out.data, out.len) != out.len) ok = false;
    }
    if (!stopped) srv_textout_flush(&to, &out);
    ok = ok && stopped == hit && out.len == want && !memcmp(out.data, t, want) && to.hit == which;
    srv_textout_free(&to);
    srv_buf_free(&out);
    return ok;
}

static void test_stop_strings(void) {
    static char s1[] = "</s>", s2[] = "\n\nUser:", s3[] = "ab", s4[] = "aab", s5[] = "\xc3\xa9t\xc3\xa9";
    char *stops[] = {s1, s2, s3, s4, s5};
    static const char *const texts[] = {
        "Hello world, no stop here at all.",
        "The answer is 42.\n\nUser: next question",
        "xxaaab tail",
        "partial </s",
        "caf\xc3\xa9 en \xc3\xa9t\xc3\xa9 \xc3\xa0 Paris",
        "a",
        "</s></s>",
        "\xe2\x82\xac\xe2\x82\xac and a",
        "",
    };
    int failures = 0, runs = 0;
    for (size_t ti = 0; ti < sizeof texts / sizeof texts[0]; ti++) {
        const char *t = texts[ti];
        size_t n = strlen(t);
        for (int ns = 0; ns <= 5; ns++) {
            /* one piece; every single cut; byte by byte */
            runs++, failures += !run_split(t, n, stops, ns, NULL, 0);
            for (size_t c = 1; c < n; c++) {
                size_t cut[1] = {c};
                runs++, failures += !run_split(t, n, stops, ns, cut, 1);
                for (size_t c2 = c + 1; c2 < n && n < 24; c2++) {
                    size_t cuts2[2] = {c, c2};
                    runs++, failures += !run_split(t, n, stops, ns, cuts2, 2);
                }
            }
            size_t *all = malloc((n ? n : 1) * sizeof *all);
            for (size_t c = 1; c < n; c++) all[c - 1] = c;
            runs++, failures += !run_split(t, n, stops, ns, all, n ? (int)n - 1 : 0);
            free(all);
        }
    }
    CHECK_MSG(failures == 0, "%d of %d splits differ from the reference", failures, runs);
}

int main(void) {
    json_set_alloc_funcs(malloc, free);
    test_sha256();
    test_time();
    test_duration();
    test_names();
    test_glob_utf8_numbers();
    test_requests();
    test_responses();
    test_stop_strings();
    return test_finish("test_server_unit");
}
