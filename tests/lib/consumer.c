/* A program as a user of the installed library writes it: it sees only include/ and
 * links libloom.a or libloom.so (cmake/library.cmake builds it four ways: C and C++,
 * against each). It opens a model, round-trips text through the tokenizer, decodes a
 * few tokens greedily, and, where Loom has jansson, renders a chat template and
 * matches a JSON-Schema grammar (both read JSON through jansson, which the static
 * variants link as an archive). Usage: test_lib_static MODEL.gguf; exit status 0 ok. */
#include <stdio.h>
#include <string.h>

#include "loom_grammar.h"
#include "loom_model.h"
#include "loom_template.h"
#include "loom_tokenizer.h"

static int fails = 0;

static void check(bool ok, const char *what, const loom_error *err) {
    if (ok) return;
    fprintf(stderr, "FAIL: %s: %s %s\n", what, err ? loom_status_name(err->status) : "", err ? err->msg : "");
    fails++;
}

#ifdef LOOM_TEST_TEMPLATE
/* A template with Python escapes and %c (Loom's UTF-8 encoder) over message text
 * with a JSON \u escape (jansson's). */
static void check_template(void) {
    static const char src[] = "{% for m in messages %}{{ m.content }}{% endfor %}|{{ '\\u00e9' }}{{ '%c' % 233 }}";
    static const char conv[] = "{\"messages\": [{\"role\": \"user\", \"content\": \"caf\\u00e8\"}]}";
    loom_error err;
    memset(&err, 0, sizeof err);
    loom_template *t = NULL;
    loom_status st = loom_template_compile(src, sizeof src - 1, NULL, &t, &err);
    check(st == LOOM_OK, "loom_template_compile", &err);
    if (st != LOOM_OK) return;
    loom_template_result r;
    memset(&r, 0, sizeof r);
    st = loom_template_render_json(t, conv, sizeof conv - 1, NULL, &r, &err);
    check(st == LOOM_OK, "loom_template_render_json", &err);
    if (st == LOOM_OK) {
        static const char want[] = "caf\xc3\xa8|\xc3\xa9\xc3\xa9";
        check(r.len == sizeof want - 1 && memcmp(r.text, want, r.len) == 0, "rendered text", NULL);
        printf("template: %s\n", r.text);
    }
    loom_template_result_free(&r);
    loom_template_free(t);
}

static void check_grammar(void) {
    static const char schema[] = "{\"type\": \"object\", \"properties\": {\"name\": {\"enum\": [\"\\u00e9t\\u00e9\"]}},"
                                 " \"required\": [\"name\"], \"additionalProperties\": false}";
    static const char good[] = "{\"name\": \"\xc3\xa9t\xc3\xa9\"}";
    loom_error err;
    memset(&err, 0, sizeof err);
    loom_grammar *g = NULL;
    loom_grammar_matcher *m = NULL;
    loom_status st = loom_grammar_new_json_schema(schema, sizeof schema - 1, &g, &err);
    check(st == LOOM_OK, "loom_grammar_new_json_schema", &err);
    if (st == LOOM_OK) st = loom_grammar_matcher_new(g, NULL, NULL, &m, &err);
    check(st == LOOM_OK, "loom_grammar_matcher_new", &err);
    if (st == LOOM_OK) {
        st = loom_grammar_matcher_accept_bytes(m, good, sizeof good - 1, &err);
        check(st == LOOM_OK && loom_grammar_matcher_is_accepting(m), "grammar accepts the object", &err);
        loom_grammar_matcher_reset(m);
        loom_error e2;
        memset(&e2, 0, sizeof e2);
        check(loom_grammar_matcher_accept_bytes(m, "{\"name\": \"x", 11, &e2) == LOOM_ERR_INVALID_ARG,
              "grammar refuses another name", NULL);
    }
    loom_grammar_matcher_free(m);
    loom_grammar_free(g);
    printf("grammar: ok\n");
}
#endif

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]);
        return 2;
    }
    loom_error err;
    memset(&err, 0, sizeof err);
    printf("%s %s %s\n", loom_status_name(LOOM_OK), loom_type_name(LOOM_TYPE_Q4_0), loom_type_name(LOOM_TYPE_F16));

    loom_model_params p = loom_model_default_params();
    p.path = argv[1];
    p.n_ctx = 64;
    p.n_threads = 2;
    loom_model *m = NULL;
    loom_status st = loom_model_open(&p, &m, &err);
    check(st == LOOM_OK, "loom_model_open", &err);
    if (st != LOOM_OK) return 1;

    const loom_tokenizer *tok = NULL;
    st = loom_model_tokenizer(m, &tok, &err);
    check(st == LOOM_OK, "loom_model_tokenizer", &err);
    if (st == LOOM_OK) {
        static const char text[] = "Once upon a time";
        int32_t ids[64];
        int32_t n = 0;
        st = loom_tokenize(tok, text, sizeof text - 1, true, false, ids, 64, &n, &err);
        check(st == LOOM_OK && n > 1, "loom_tokenize", &err);
        char back[256];
        size_t len = 0;
        if (st == LOOM_OK) {
            bool bos = ids[0] == loom_tokenizer_bos(tok);
            st = loom_detokenize(tok, ids + bos, n - bos, 0, back, sizeof back, &len);
            check(st == LOOM_OK && len == sizeof text - 1 && memcmp(back, text, len) == 0, "round trip", NULL);
        }
        if (st == LOOM_OK) st = loom_model_eval(m, ids, n, false, &err);
        check(st == LOOM_OK, "loom_model_eval (prompt)", &err);
        int32_t gen[8];
        int32_t n_gen = 0;
        while (st == LOOM_OK && n_gen < 8) {
            gen[n_gen] = loom_model_argmax(m, -1);
            st = loom_model_eval(m, &gen[n_gen++], 1, false, &err);
        }
        check(st == LOOM_OK, "loom_model_eval (generate)", &err);
        if (st == LOOM_OK) st = loom_detokenize(tok, gen, n_gen, LOOM_DETOK_NO_STRIP, back, sizeof back, &len);
        check(st == LOOM_OK && len > 0, "loom_detokenize", NULL);
        if (st == LOOM_OK) printf("%s%s\n", text, back);
    }
    loom_model_close(m);

#ifdef LOOM_TEST_TEMPLATE
    check_template();
    check_grammar();
#endif
    if (fails) fprintf(stderr, "%d check(s) failed\n", fails);
    else printf("consumer: all checks passed\n");
    return fails ? 1 : 0;
}
