/* Jinja features one by one: every case of tests/data/templates/features.json
 * (made by gen_features.py with Python's jinja2 in transformers' environment) must
 * render to exactly Python's text, or fail with exactly Python's
 * "ExceptionType: message". Variables travel as the conversation's kwargs
 * ("messages" as messages). */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "loom_template.h"
#include "test_util.h"

static int run_case(json_t *c, const loom_template_time *now) {
    const char *name = json_string_value(json_object_get(c, "name"));
    const char *src = json_string_value(json_object_get(c, "template"));
    json_t *vars = json_object_get(c, "vars");
    json_t *want_out = json_object_get(c, "out"), *want_err = json_object_get(c, "err");
    json_t *conv = json_object();
    json_t *kw = json_deep_copy(vars);
    json_t *msgs = json_object_get(kw, "messages");
    json_object_set(conv, "messages", msgs ? msgs : json_array());
    if (msgs) json_object_del(kw, "messages");
    json_object_set_new(conv, "kwargs", kw);
    if (!msgs) json_decref(json_object_get(conv, "messages"));
    char *js = json_dumps(conv, JSON_COMPACT);
    json_decref(conv);
    loom_template *t = NULL;
    loom_error err = {0};
    loom_template_result r = {0};
    loom_template_params p = {0};
    p.now = now;
    int ok = 0;
    loom_status st = loom_template_compile(src, strlen(src), NULL, &t, &err);
    if (st == LOOM_OK) {
        st = loom_template_render_json(t, js, strlen(js), &p, &r, &err);
        if (want_out) {
            size_t wl = json_string_length(want_out);
            ok = st == LOOM_OK && r.len == wl && memcmp(r.text, json_string_value(want_out), wl) == 0;
            CHECK_MSG(ok, "%s: got %s [%s], want [%s]", name, loom_status_name(st), st == LOOM_OK ? r.text : r.error,
                      json_string_value(want_out));
        } else {
            ok = st != LOOM_OK && strcmp(r.error, json_string_value(want_err)) == 0;
            CHECK_MSG(ok, "%s: got %s [%s], want error [%s]", name, loom_status_name(st), st == LOOM_OK ? r.text : r.error,
                      json_string_value(want_err));
        }
    } else {
        /* compile error: "template:L:C: Kind: message" */
        unsigned line, col;
        int off = 0;
        const char *m = sscanf(err.msg, "template:%u:%u: %n", &line, &col, &off) == 2 && off ? err.msg + off : NULL;
        ok = want_err && m && strcmp(m, json_string_value(want_err)) == 0;
        CHECK_MSG(ok, "%s: compile failed [%s], want %s", name, err.msg,
                  want_err ? json_string_value(want_err) : "success");
    }
    loom_template_result_free(&r);
    loom_template_free(t);
    free(js);
    return ok;
}

int main(void) {
    json_error_t je;
    json_t *cases = json_load_file(test_path("tests/data/templates/features.json"), JSON_ALLOW_NUL, &je);
    CHECK_MSG(cases != NULL, "features.json: %s", je.text);
    if (!cases) return test_finish("test_template_features");
    loom_template_time now = {2024, 7, 26, 12, 0, 0};
    size_t i, passed = 0;
    json_t *c;
    json_array_foreach(cases, i, c) passed += (size_t)run_case(c, &now);
    printf("features: %zu/%zu cases exact\n", passed, json_array_size(cases));
    CHECK(json_array_size(cases) >= 150);
    json_decref(cases);
    return test_finish("test_template_features");
}
