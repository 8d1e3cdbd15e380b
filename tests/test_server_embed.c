/* The embedding endpoints of `loom serve` over real sockets, on synthetic bert and
 * nomic-bert models (tests/embed_test_common.h): /api/embed (string, list,
 * dimensions, truncate), /api/embeddings (legacy, raw vector), /v1/embeddings
 * (string, list, token arrays, base64, usage), vectors checked against the float64
 * reference forward pass, a list equal to its items one by one, and the 400s: a
 * generative request to an embedding model, an embed request to a generative model,
 * bad fields, an input over the context without truncation. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed_test_common.h"
#include "test_util.h"
#include "server_test_common.h"

static int g_port;

static json_t *post(const char *path, const char *body, int want_status) {
    test_http r;
    if (!test_http_do(g_port, "POST", path, body, NULL, &r)) {
        CHECK_MSG(false, "POST %s failed", path);
        return NULL;
    }
    CHECK_MSG(r.status == want_status, "POST %s %s: status %d (want %d): %s", path, body, r.status, want_status,
              r.body ? r.body : "");
    json_t *j = r.body ? json_loads(r.body, 0, NULL) : NULL;
    CHECK_MSG(j != NULL, "POST %s: body is not JSON", path);
    test_http_free(&r);
    return j;
}

/* Floats of a JSON array into v (at most cap); the count. */
static int vec_of(const json_t *a, float *v, int cap) {
    int n = 0;
    for (size_t i = 0; json_is_array(a) && i < json_array_size(a) && n < cap; i++)
        v[n++] = (float)json_number_value(json_array_get(a, i));
    return json_is_array(a) ? (int)json_array_size(a) : -1;
}

static double norm2(const float *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += (double)v[i] * v[i];
    return sqrt(s);
}

static double maxdiff(const float *a, const float *b, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

static bool has_error(const json_t *j, const char *needle) {
    const json_t *e = json_object_get(j, "error");
    if (json_is_object(e)) e = json_object_get(e, "message"); /* OpenAI form */
    return json_is_string(e) && strstr(json_string_value(e), needle);
}

static int b64val(char c) {
    const char *t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *p = c ? strchr(t, c) : NULL;
    return p ? (int)(p - t) : -1;
}

static int b64_floats(const char *s, float *out, int cap) {
    unsigned char buf[4096];
    size_t n = 0, len = strlen(s);
    for (size_t i = 0; i + 3 < len + 3 && i < len; i += 4) {
        int a = b64val(s[i]), b = b64val(s[i + 1]), c = s[i + 2] == '=' ? 0 : b64val(s[i + 2]),
            d = s[i + 3] == '=' ? 0 : b64val(s[i + 3]);
        if (a < 0 || b < 0 || c < 0 || d < 0 || n + 3 > sizeof buf) return -1;
        uint32_t v = (uint32_t)a << 18 | (uint32_t)b << 12 | (uint32_t)c << 6 | (uint32_t)d;
        buf[n++] = (unsigned char)(v >> 16);
        if (s[i + 2] != '=') buf[n++] = (unsigned char)(v >> 8);
        if (s[i + 3] != '=') buf[n++] = (unsigned char)v;
    }
    int m = (int)(n / 4);
    if (m > cap) m = cap;
    memcpy(out, buf, (size_t)m * 4);
    return (int)(n / 4);
}

static void test_model(const char *dir, const char *name) {
    char path[600], body[1024];
    snprintf(path, sizeof path, "%s/models/%s.gguf", dir, name);
    /* the reference: mean pooling of "hello world" = [CLS] hello world [SEP] */
    const int32_t ids[4] = {101, 7592, 2088, 102};
    et_ref r;
    double hid[4 * 64], want[64] = {0};
    CHECK(et_ref_open(&r, path) && et_ref_forward(&r, ids, 4, hid));
    et_ref_close(&r);
    for (int c = 0; c < 64; c++)
        for (int t = 0; t < 4; t++) want[c] += hid[t * 64 + c] / 4;

    float v[64], w[64], x[64];
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"input\":\"hello world\"}", name);
    json_t *j = post("/api/embed", body, 200);
    const json_t *embs = json_object_get(j, "embeddings");
    CHECK(json_array_size(embs) == 1);
    CHECK_EQ_INT(vec_of(json_array_get(embs, 0), v, 64), 64);
    double cs = et_cosine(v, want, 64);
    printf("%s /api/embed cosine vs float64 %.9f\n", name, cs);
    CHECK_MSG(cs >= 0.99999, "%s cosine %.9f", name, cs);
    CHECK_NEAR(norm2(v, 64), 1.0, 1e-5);
    CHECK(json_integer_value(json_object_get(j, "prompt_eval_count")) == 4);
    CHECK(json_is_integer(json_object_get(j, "total_duration")) && json_is_string(json_object_get(j, "model")));
    json_decref(j);
    /* the model is loaded now: no load, and zero values are left out (Ollama's omitempty) */
    j = post("/api/embed", body, 200);
    CHECK(!json_object_get(j, "load_duration") && json_integer_value(json_object_get(j, "prompt_eval_count")) == 4);
    json_decref(j);
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"input\":[]}", name);
    j = post("/api/embed", body, 200);
    CHECK(json_array_size(json_object_get(j, "embeddings")) == 0 && !json_object_get(j, "prompt_eval_count"));
    json_decref(j);
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"input\":\"hello world\"}", name);

    /* a list: each item as alone */
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"input\":[\"a much longer second input, with punctuation!\",\"hello world\"]}", name);
    j = post("/api/embed", body, 200);
    embs = json_object_get(j, "embeddings");
    CHECK(json_array_size(embs) == 2);
    CHECK_EQ_INT(vec_of(json_array_get(embs, 1), w, 64), 64);
    CHECK_MSG(maxdiff(v, w, 64) <= 1e-6, "%g", maxdiff(v, w, 64));
    json_decref(j);

    /* dimensions: the first 8 components, normalized again */
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"input\":\"hello world\",\"dimensions\":8}", name);
    j = post("/api/embed", body, 200);
    CHECK_EQ_INT(vec_of(json_array_get(json_object_get(j, "embeddings"), 0), w, 64), 8);
    double n8 = norm2(v, 8);
    for (int i = 0; i < 8; i++) CHECK_NEAR(w[i], v[i] / n8, 1e-6);
    json_decref(j);

    /* legacy: the raw pooled vector */
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"prompt\":\"hello world\"}", name);
    j = post("/api/embeddings", body, 200);
    CHECK_EQ_INT(vec_of(json_object_get(j, "embedding"), w, 64), 64);
    double nw = norm2(w, 64);
    for (int c = 0; c < 64; c++) CHECK_NEAR(w[c], want[c], 1e-4 * nw);
    json_decref(j);

    /* OpenAI: token ids equal the text; base64 equals float; usage */
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"input\":[101,7592,2088,102]}", name);
    j = post("/v1/embeddings", body, 200);
    const json_t *d0 = json_array_get(json_object_get(j, "data"), 0);
    CHECK_EQ_INT(vec_of(json_object_get(d0, "embedding"), w, 64), 64);
    CHECK_MSG(maxdiff(v, w, 64) <= 1e-6, "%g", maxdiff(v, w, 64));
    CHECK(json_integer_value(json_object_get(d0, "index")) == 0);
    CHECK(!strcmp(json_string_value(json_object_get(d0, "object")), "embedding"));
    CHECK(!strcmp(json_string_value(json_object_get(j, "object")), "list"));
    CHECK(json_integer_value(json_object_get(json_object_get(j, "usage"), "prompt_tokens")) == 4);
    json_decref(j);
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"input\":[\"x\",\"hello world\"],\"encoding_format\":\"base64\"}", name);
    j = post("/v1/embeddings", body, 200);
    const json_t *d1 = json_array_get(json_object_get(j, "data"), 1);
    CHECK(json_integer_value(json_object_get(d1, "index")) == 1);
    const char *s64 = json_string_value(json_object_get(d1, "embedding"));
    CHECK(s64 && b64_floats(s64, x, 64) == 64 && maxdiff(v, x, 64) == 0);
    json_decref(j);
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"input\":[[101,7592,102],[101,2088,102]]}", name);
    j = post("/v1/embeddings", body, 200);
    CHECK(json_array_size(json_object_get(j, "data")) == 2);
    CHECK(json_integer_value(json_object_get(json_object_get(j, "usage"), "total_tokens")) == 6);
    json_decref(j);

    /* truncation: the default cuts, truncate false refuses */
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"input\":\"one two three four\",\"options\":{\"num_ctx\":3}}", name);
    j = post("/api/embed", body, 200);
    CHECK(json_integer_value(json_object_get(j, "prompt_eval_count")) == 3);
    json_decref(j);
    snprintf(body, sizeof body,
             "{\"model\":\"%s\",\"input\":\"one two three four\",\"truncate\":false,\"options\":{\"num_ctx\":3}}", name);
    j = post("/api/embed", body, 400);
    CHECK(has_error(j, "more than the context"));
    json_decref(j);

    /* /api/show says what it is */
    snprintf(body, sizeof body, "{\"model\":\"%s\"}", name);
    j = post("/api/show", body, 200);
    const json_t *caps = json_object_get(j, "capabilities");
    CHECK(json_array_size(caps) == 1 && !strcmp(json_string_value(json_array_get(caps, 0)), "embedding"));
    json_decref(j);

    /* an empty input loads the model and answers no vectors */
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"input\":[]}", name);
    j = post("/api/embed", body, 200);
    CHECK(json_array_size(json_object_get(j, "embeddings")) == 0);
    json_decref(j);

    /* generation on an embedding model: 400 in both API forms */
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"prompt\":\"hi\",\"stream\":false}", name);
    j = post("/api/generate", body, 400);
    CHECK(has_error(j, "embedding model"));
    json_decref(j);
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", name);
    j = post("/v1/chat/completions", body, 400);
    CHECK(has_error(j, "embedding model"));
    json_decref(j);

    /* bad fields */
    static const char *const bad[][2] = {
        {"/api/embed", "{\"input\":\"x\"}"},
        {"/api/embed", "{\"model\":\"%s\",\"input\":5}"},
        {"/api/embed", "{\"model\":\"%s\",\"input\":[\"x\",7]}"},
        {"/api/embed", "{\"model\":\"%s\",\"input\":\"x\",\"dimensions\":0}"},
        {"/api/embed", "{\"model\":\"%s\",\"input\":\"x\",\"truncate\":\"yes\"}"},
        {"/api/embed", "{\"model\":\"%s\",\"input\":\"x\",\"options\":{\"num_ctx\":-1}}"},
        {"/api/embeddings", "{\"model\":\"%s\",\"prompt\":[\"x\"]}"},
        {"/v1/embeddings", "{\"model\":\"%s\"}"},
        {"/v1/embeddings", "{\"model\":\"%s\",\"input\":\"\"}"},
        {"/v1/embeddings", "{\"model\":\"%s\",\"input\":[101,99999999]}"},
        {"/v1/embeddings", "{\"model\":\"%s\",\"input\":\"x\",\"encoding_format\":\"hex\"}"},
        {"/api/embed", "not json"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(body, sizeof body, bad[i][1], name);
        j = post(bad[i][0], body, 400);
        CHECK_MSG(json_object_get(j, "error") != NULL, "%s %s", bad[i][0], body);
        json_decref(j);
    }
}

/* A decoder embedding model (tests/data/embed/indep-<name>.gguf): /v1/embeddings of
 * the first token list of tokens-indep.txt equals llama.cpp's pooled vector (the
 * model's own pooling: qwen3 last, gemma-embedding mean), normalized; the model is
 * an embedding model everywhere (show, generate, chat). */
static void test_decoder_model(const char *name, const char *pool) {
    char rel[128], body[512];
    snprintf(rel, sizeof rel, "tests/data/embed/indep-%s.%s.bin", name, pool);
    FILE *f = fopen(test_path(rel), "rb");
    int32_t h[2] = {0, 0};
    float want[64] = {0}, v[64];
    CHECK(f && fread(h, 4, 2, f) == 2 && h[1] == 32 && fread(want, 4, 32, f) == 32);
    if (f) fclose(f);
    snprintf(body, sizeof body, "{\"model\":\"indep-%s\",\"input\":[101,1996,1997,102]}", name);
    json_t *j = post("/v1/embeddings", body, 200);
    CHECK_EQ_INT(vec_of(json_object_get(json_array_get(json_object_get(j, "data"), 0), "embedding"), v, 64), 32);
    double wn = norm2(want, 32), worst = 0;
    for (int c = 0; c < 32; c++)
        if (fabs(v[c] - want[c] / wn) > worst) worst = fabs(v[c] - want[c] / wn);
    printf("indep-%s /v1/embeddings vs llama.cpp: max |diff| %.3g\n", name, worst);
    CHECK_MSG(worst <= 2e-6, "indep-%s %g", name, worst);
    json_decref(j);
    snprintf(body, sizeof body, "{\"model\":\"indep-%s\"}", name);
    j = post("/api/show", body, 200);
    const json_t *caps = json_object_get(j, "capabilities");
    CHECK(json_array_size(caps) == 1 && !strcmp(json_string_value(json_array_get(caps, 0)), "embedding"));
    json_decref(j);
    snprintf(body, sizeof body, "{\"model\":\"indep-%s\",\"prompt\":\"hi\",\"stream\":false}", name);
    j = post("/api/generate", body, 400);
    CHECK(has_error(j, "embedding model"));
    json_decref(j);
    snprintf(body, sizeof body, "{\"model\":\"indep-%s\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
             name);
    j = post("/v1/chat/completions", body, 400);
    CHECK(has_error(j, "embedding model"));
    json_decref(j);
}

int main(void) {
    if (!et_vocab()) return test_skip("test_server_embed", "bert-bge vocab missing (tests/data/vocab)");
    char dir[256], path[600];
    CHECK(test_make_models(dir, sizeof dir));
    loom_error err = {0};
    snprintf(path, sizeof path, "%s/models/eb.gguf", dir);
    CHECK_MSG(et_make_model("bert", "F32", path, &err) == LOOM_OK, "%s", err.msg);
    snprintf(path, sizeof path, "%s/models/en.gguf", dir);
    CHECK_MSG(et_make_model("nomic-bert", "F32", path, &err) == LOOM_OK, "%s", err.msg);
    static const char *const dec[] = {"qwen3", "gemma-embedding"};
    for (int i = 0; i < 2; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "tests/data/embed/indep-%s.gguf", dec[i]);
        snprintf(path, sizeof path, "%s/models/indep-%s.gguf", dir, dec[i]);
        CHECK(test_copy_file(test_path(rel), path));
    }
    loom_server *s = test_server_start(dir, 1, 8);
    CHECK(s != NULL);
    if (!s) {
        test_rm_rf(dir);
        return test_finish("test_server_embed");
    }
    g_port = loom_server_port(s);
    test_model(dir, "eb");
    test_model(dir, "en");
    test_decoder_model("qwen3", "last");
    test_decoder_model("gemma-embedding", "mean");

    /* an embed request to a generative model; unknown model; method */
    json_t *j = post("/api/embed", "{\"model\":\"tiny\",\"input\":\"x\"}", 400);
    CHECK(has_error(j, "does not support embeddings"));
    json_decref(j);
    j = post("/v1/embeddings", "{\"model\":\"tiny\",\"input\":\"x\"}", 400);
    CHECK(has_error(j, "does not support embeddings"));
    json_decref(j);
    j = post("/api/embed", "{\"model\":\"nope\",\"input\":\"x\"}", 404);
    json_decref(j);
    test_http r;
    CHECK(test_http_do(g_port, "GET", "/api/embed", NULL, NULL, &r) && r.status == 405);
    test_http_free(&r);
    /* generation still works next to the embedding models */
    j = post("/api/generate", "{\"model\":\"tiny\",\"prompt\":\"Once\",\"stream\":false,\"options\":{\"num_predict\":3}}",
             200);
    CHECK(json_is_string(json_object_get(j, "response")));
    json_decref(j);

    loom_server_free(s);
    test_rm_rf(dir);
    return test_finish("test_server_embed");
}
