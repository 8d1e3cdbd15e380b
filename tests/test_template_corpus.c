/* 68 real chat templates (tests/data/templates/shared and corpus, as collected by
 * llama.cpp) x 13 conversations (shared/conversations.json and
 * conversations_extra.json: list content, null content, reasoning, parallel tool
 * calls, string arguments, developer role, builtin tools, documents): each render
 * must have the length and FNV-1a 64 hash of Python jinja2's text, or fail with
 * exactly its "ExceptionType: message" (corpus_expected.json, gen_corpus.py). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_template.h"
#include "test_util.h"

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)sz + 1);
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) { free(b); b = NULL; }
    fclose(f);
    if (b) { b[sz] = 0; *n = (size_t)sz; }
    return b;
}

static uint64_t fnv64(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
    return h;
}

int main(void) {
    json_error_t je;
    char path[8192];
    json_t *exp = json_load_file(test_path("tests/data/templates/corpus_expected.json"), 0, &je);
    CHECK_MSG(exp != NULL, "corpus_expected.json: %s", je.text);
    json_t *convs = json_load_file(test_path("tests/data/templates/shared/conversations.json"), 0, &je);
    json_t *extra = json_load_file(test_path("tests/data/templates/conversations_extra.json"), 0, &je);
    CHECK(convs && extra);
    if (!exp || !convs || !extra) return test_finish("test_template_corpus");
    json_array_extend(convs, extra);
    loom_template_time now = {2024, 7, 26, 12, 0, 0};
    loom_template_params p = {"<s>", "</s>", &now};
    const char *tname;
    json_t *tcases;
    int total = 0, exact = 0, errors = 0;
    json_object_foreach(exp, tname, tcases) {
        snprintf(path, sizeof path, "%s/%s", test_path("tests/data/templates"), tname);
        size_t sl;
        char *src = slurp(path, &sl);
        CHECK_MSG(src != NULL, "%s missing", path);
        if (!src) continue;
        loom_template *t = NULL;
        loom_error err = {0};
        CHECK_MSG(loom_template_compile(src, sl, NULL, &t, &err) == LOOM_OK, "%s: %s", tname, err.msg);
        size_t ci;
        json_t *c;
        json_array_foreach(convs, ci, c) {
            const char *cn = json_string_value(json_object_get(c, "name"));
            json_t *want = json_object_get(tcases, cn);
            if (!t || !want) continue;
            char *js = json_dumps(c, JSON_COMPACT);
            loom_template_result r = {0};
            loom_status st = loom_template_render_json(t, js, strlen(js), &p, &r, &err);
            json_t *we = json_object_get(want, "err");
            total++;
            if (we) {
                bool ok = st != LOOM_OK && !strcmp(r.error, json_string_value(we));
                CHECK_MSG(ok, "%s / %s: got [%s], want error [%s]", tname, cn, st == LOOM_OK ? "success" : r.error,
                          json_string_value(we));
                errors += ok;
            } else {
                char hex[17];
                if (st == LOOM_OK) snprintf(hex, sizeof hex, "%016llx", (unsigned long long)fnv64(r.text, r.len));
                bool ok = st == LOOM_OK && (json_int_t)r.len == json_integer_value(json_object_get(want, "len")) &&
                          !strcmp(hex, json_string_value(json_object_get(want, "fnv64")));
                CHECK_MSG(ok, "%s / %s: %s", tname, cn, st == LOOM_OK ? "text differs from Python's" : r.error);
                exact += ok;
            }
            loom_template_result_free(&r);
            free(js);
        }
        loom_template_free(t);
        free(src);
    }
    printf("corpus: %d renders, %d exact texts, %d exact errors\n", total, exact, errors);
    CHECK(total >= 880);
    json_decref(exp);
    json_decref(convs);
    json_decref(extra);
    return test_finish("test_template_corpus");
}
