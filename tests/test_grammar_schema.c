/* JSON Schema -> grammar on a corpus (tests/data/grammar/schemas: schemas from
 * llama.cpp's and Ollama's documentation and Loom's own), each with texts the
 * grammar must accept (valid), must not accept (invalid) and deliberately does
 * not accept although the schema does (narrowed); the labels are checked by an
 * independent validator (Python jsonschema, tests/grammar/validate_corpus.py).
 * Then regex patterns case by case, and the errors (status, keyword, JSON
 * pointer). */
#include <dirent.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_grammar.h"
#include "test_util.h"

/* 1: the whole text is a sentence; 0: not. */
static int accepts(const loom_grammar *g, const char *s, size_t n) {
    loom_grammar_matcher *m = NULL;
    if (loom_grammar_matcher_new(g, NULL, NULL, &m, NULL) != LOOM_OK) return -1;
    int r = loom_grammar_matcher_accept_bytes(m, s, n, NULL) == LOOM_OK && loom_grammar_matcher_is_accepting(m);
    loom_grammar_matcher_free(m);
    return r;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void corpus(void) {
    const char *dir = test_path("tests/data/grammar/schemas");
    char dirbuf[4096];
    snprintf(dirbuf, sizeof dirbuf, "%s", dir);
    DIR *d = opendir(dirbuf);
    CHECK(d != NULL);
    if (!d) return;
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256)
        if (strstr(e->d_name, ".json")) names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_name);
    CHECK(n >= 20);
    int n_texts = 0;
    for (int i = 0; i < n; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dirbuf, names[i]);
        json_error_t je;
        json_t *c = json_load_file(path, 0, &je);
        CHECK_MSG(c != NULL, "%s: %s", names[i], je.text);
        if (!c) continue;
        char *schema = json_dumps(json_object_get(c, "schema"), JSON_ENCODE_ANY);
        loom_grammar *g = NULL;
        loom_error err = {0};
        CHECK_MSG(loom_grammar_new_json_schema(schema, strlen(schema), &g, &err) == LOOM_OK, "%s: %s", names[i],
                  err.msg);
        if (g) {
            static const char *const labels[] = {"valid", "invalid", "narrowed"};
            for (int l = 0; l < 3; l++) {
                size_t k;
                json_t *t;
                json_array_foreach(json_object_get(c, labels[l]), k, t) {
                    int got = accepts(g, json_string_value(t), json_string_length(t));
                    CHECK_MSG(got == (l == 0), "%s: %s text %zu '%s' %s", names[i], labels[l], k, json_string_value(t),
                              got ? "accepted" : "rejected");
                    n_texts++;
                }
            }
            loom_grammar_free(g);
        }
        free(schema);
        json_decref(c);
        free(names[i]);
    }
    CHECK(n_texts >= 150);
    static char cmd[9000];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s", test_path("tests/grammar/validate_corpus.py"), dirbuf);
    int st = system(cmd);
    CHECK_MSG(st == 0, "corpus labels disagree with jsonschema (status %d); the check needs /usr/bin/python3 with "
                       "python3-jsonschema",
              st);
}

/* Patterns: strings (decoded, as JSON will carry them) in and out. */
static void pattern_case(const char *pattern, const char *const *in, const char *const *out, int line) {
    json_t *s = json_pack("{s:s,s:s}", "type", "string", "pattern", pattern);
    char *txt = json_dumps(s, 0);
    loom_grammar *g = NULL;
    loom_error err = {0};
    CHECK_MSG(loom_grammar_new_json_schema(txt, strlen(txt), &g, &err) == LOOM_OK, "line %d: %s", line, err.msg);
    for (int pass = 0; g && pass < 2; pass++)
        for (const char *const *p = pass ? out : in; *p; p++) {
            json_t *js = json_string(*p);
            char *enc = json_dumps(js, JSON_ENCODE_ANY);
            int got = accepts(g, enc, strlen(enc));
            CHECK_MSG(got == !pass, "line %d: pattern '%s' %s '%s'", line, pattern, got ? "accepts" : "rejects", enc);
            free(enc);
            json_decref(js);
        }
    loom_grammar_free(g);
    free(txt);
    json_decref(s);
}
#define PAT(p, ...)                                                      \
    do {                                                                 \
        static const char *const in_[] = {__VA_ARGS__};                  \
        pattern_case(p, in_, OUT_, __LINE__);                            \
    } while (0)

static void patterns(void) {
    {
        static const char *const OUT_[] = {"a", "12", "1234", "", NULL};
        PAT("^\\d{3}$", "123", "000", NULL);
    }
    {
        static const char *const OUT_[] = {"x", "xyz", "", NULL};
        PAT("^(?:ab|cd)+$", "ab", "cdab", "ababcd", NULL);
    }
    {
        static const char *const OUT_[] = {"ba", "xa", NULL};
        PAT("^a|b$", "a", "ab", "abc", "xb", "b", NULL); /* anchors per alternative */
    }
    {
        static const char *const OUT_[] = {"ac", "abbbbc", NULL};
        PAT("^ab{1,3}?c$", "abc", "abbbc", NULL); /* lazy quantifier: same language */
    }
    {
        static const char *const OUT_[] = {"a\"b", "a\\b", "\n", NULL};
        PAT("^[^\"\\\\\\n]*$", "", "abc", "\xc3\xa9", "\t", NULL); /* negated class; \t escaped in JSON */
    }
    {
        static const char *const OUT_[] = {"ab", "a\nb", "a\rb", NULL};
        PAT("^a.b$", "axb", "a\"b", "a\\b", "a\xe2\x82\xac\x62", "a\tb", NULL); /* . : not \n \r */
    }
    {
        static const char *const OUT_[] = {"a b", "a-b", NULL};
        PAT("^\\w+\\s?\\W?$", "a", "ab ", "a_1 ", "a ", "a!", NULL);
    }
    {
        static const char *const OUT_[] = {"x", NULL};
        PAT("(?<word>\\x41\\u00e9)\\.\\t", "A\xc3\xa9.\t", "zzA\xc3\xa9.\tzz", NULL); /* unanchored: search */
    }
    {
        static const char *const OUT_[] = {"\"", "ab", NULL};
        PAT("^[\\]\\-a]$", "]", "-", "a", NULL);
    }
    {
        static const char *const OUT_[] = {"12", "1a", NULL};
        PAT("^\\D\\S$", "ab", "a!", NULL);
    }
}

static void expect_error(const char *schema, loom_status want, const char *needle, int line) {
    loom_grammar *g = (loom_grammar *)1;
    loom_error err = {0};
    loom_status st = loom_grammar_new_json_schema(schema, strlen(schema), &g, &err);
    CHECK_MSG(st == want, "line %d: status %s, want %s (%s)", line, loom_status_name(st), loom_status_name(want),
              err.msg);
    CHECK_MSG(g == NULL, "line %d: grammar not NULL on failure", line);
    CHECK_MSG(strstr(err.msg, needle) != NULL, "line %d: '%s' lacks '%s'", line, err.msg, needle);
    if (st == LOOM_OK) loom_grammar_free(g);
    /* the text converter agrees */
    char *gb = (char *)1;
    loom_error e2 = {0};
    loom_status st2 = loom_json_schema_to_gbnf(schema, strlen(schema), &gb, NULL, &e2);
    if (strstr(err.msg, "converts to is invalid")) {
        CHECK(st2 == LOOM_OK);
        free(gb);
    } else {
        CHECK_MSG(st2 == want && gb == NULL, "line %d: to_gbnf status %s", line, loom_status_name(st2));
    }
}
#define ERR(s, st, needle) expect_error(s, st, needle, __LINE__)

static void errors(void) {
    ERR("{\"type\": \"object\",", LOOM_ERR_FORMAT, "JSON Schema: line 1, column 18:");
    ERR("{\"type\":\"object\",\"properties\":{\"tags\":{\"type\":\"array\",\"uniqueItems\":true}}}",
        LOOM_ERR_UNSUPPORTED, "unsupported keyword 'uniqueItems' at /properties/tags");
    ERR("{\"not\":{}}", LOOM_ERR_UNSUPPORTED, "unsupported keyword 'not' at (root)");
    ERR("{\"properties\":{\"a/b~c\":{\"if\":{}}}}", LOOM_ERR_UNSUPPORTED, "'if' at /properties/a~1b~0c");
    ERR("{\"type\":\"array\",\"items\":{\"type\":\"object\",\"patternProperties\":{}}}", LOOM_ERR_UNSUPPORTED,
        "'patternProperties' at /items");
    ERR("{\"type\":\"strin\"}", LOOM_ERR_FORMAT, "'type' must be one of");
    ERR("{\"$ref\":\"#/$defs/missing\"}", LOOM_ERR_FORMAT, "$ref '#/$defs/missing' does not resolve");
    ERR("{\"$ref\":\"http://example.com/s.json\"}", LOOM_ERR_UNSUPPORTED, "only local JSON pointers");
    ERR("{\"$ref\":\"#foo\"}", LOOM_ERR_UNSUPPORTED, "anchors are not supported");
    ERR("{\"type\":\"string\",\"format\":\"hostname\"}", LOOM_ERR_UNSUPPORTED, "unsupported format 'hostname'");
    ERR("{\"type\":\"string\",\"pattern\":\"(a)\\\\1\"}", LOOM_ERR_UNSUPPORTED, "backreference");
    ERR("{\"type\":\"string\",\"pattern\":\"(?=a)\"}", LOOM_ERR_UNSUPPORTED, "lookaround");
    ERR("{\"type\":\"string\",\"pattern\":\"\\\\bx\"}", LOOM_ERR_UNSUPPORTED, "word boundary");
    ERR("{\"type\":\"string\",\"pattern\":\"a^b\"}", LOOM_ERR_UNSUPPORTED, "anchor '^' inside");
    ERR("{\"type\":\"string\",\"pattern\":\"(ab\"}", LOOM_ERR_UNSUPPORTED, "missing ')'");
    ERR("{\"type\":\"string\",\"pattern\":\"a{2001}\"}", LOOM_ERR_UNSUPPORTED, "above 2000");
    ERR("false", LOOM_ERR_FORMAT, "the schema false accepts nothing");
    ERR("{\"properties\":{\"x\":false},\"required\":[\"x\"]}", LOOM_ERR_FORMAT,
        "required property 'x' is not allowed: the schema accepts nothing at /required");
    ERR("{\"type\":\"object\",\"required\":[\"a\"],\"additionalProperties\":false}", LOOM_ERR_FORMAT,
        "required property 'a' is forbidden by additionalProperties");
    ERR("{\"type\":\"integer\",\"minimum\":5,\"maximum\":1}", LOOM_ERR_FORMAT, "minimum > maximum");
    ERR("{\"type\":\"number\",\"minimum\":0.2,\"maximum\":0.8}", LOOM_ERR_FORMAT, "number range is empty");
    ERR("{\"type\":\"array\",\"minItems\":3,\"maxItems\":2}", LOOM_ERR_FORMAT, "maxItems < minItems");
    ERR("{\"type\":\"array\",\"minItems\":-1}", LOOM_ERR_FORMAT, "'minItems' must be a non-negative integer at (root)");
    ERR("{\"type\":\"string\",\"minLength\":3000}", LOOM_ERR_UNSUPPORTED, "above 2000");
    ERR("{\"type\":\"string\",\"pattern\":\"^a$\",\"maxLength\":3}", LOOM_ERR_UNSUPPORTED, "pattern with minLength");
    ERR("{\"enum\":[1,2],\"minimum\":0}", LOOM_ERR_UNSUPPORTED, "'minimum' together with enum/const");
    ERR("{\"type\":\"string\",\"enum\":[1,2]}", LOOM_ERR_FORMAT, "no value of the allowed types");
    ERR("{\"anyOf\":[]}", LOOM_ERR_FORMAT, "non-empty array");
    ERR("{\"type\":\"number\",\"multipleOf\":2}", LOOM_ERR_UNSUPPORTED, "'multipleOf'");
    ERR("{\"allOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", LOOM_ERR_FORMAT, "types do not intersect");
    ERR("{\"allOf\":[{\"pattern\":\"^a\"},{\"pattern\":\"b$\"}]}", LOOM_ERR_UNSUPPORTED,
        "two different 'pattern' cannot be combined");
    ERR("{\"allOf\":[{\"$ref\":\"#\"}]}", LOOM_ERR_RANGE, "nested too deeply");
    ERR("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}",
        LOOM_ERR_FORMAT, "derives no finite string"); /* a cycle of $refs that never consumes */
    ERR("{\"$defs\":{\"a\":{\"anyOf\":[{\"$ref\":\"#/$defs/a\"},{\"type\":\"null\"}]}},\"$ref\":\"#/$defs/a\"}",
        LOOM_ERR_FORMAT, "left recursion: a -> a-0 -> a");
    ERR("{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#\"}},\"required\":[\"a\"]}", LOOM_ERR_FORMAT,
        "derives no finite string");
    /* nesting beyond the limit */
    char deep[4096] = "";
    for (int i = 0; i < 300; i++) strcat(deep, "{\"items\":");
    strcat(deep, "{}");
    for (int i = 0; i < 300; i++) strcat(deep, "}");
    ERR(deep, LOOM_ERR_RANGE, "nested deeper than 256");
    /* arguments */
    loom_grammar *g;
    CHECK(loom_grammar_new_json_schema(NULL, 2, &g, NULL) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_json_schema_to_gbnf("{}", 2, NULL, NULL, NULL) == LOOM_ERR_INVALID_ARG);
}

/* Annotations and unknown keywords change nothing; the any-object grammar. */
static void misc(void) {
    const char *a = "{\"type\":\"integer\",\"title\":\"T\",\"description\":\"d\",\"default\":1,\"examples\":[2],"
                    "\"x-vendor\":{\"not\":1},\"$comment\":\"c\",\"uniqueItems\":false,\"minProperties\":0}";
    char *ga = NULL, *gb = NULL;
    CHECK(loom_json_schema_to_gbnf(a, strlen(a), &ga, NULL, NULL) == LOOM_OK);
    CHECK(loom_json_schema_to_gbnf("{\"type\":\"integer\"}", 18, &gb, NULL, NULL) == LOOM_OK);
    CHECK(ga && gb && !strcmp(ga, gb));
    free(ga);
    free(gb);
    loom_grammar *g = NULL;
    CHECK(loom_grammar_new_json_object(&g, NULL) == LOOM_OK);
    if (g) {
        CHECK(accepts(g, "{}", 2) == 1);
        const char *doc = "{\"a\": [1, {\"b\": null}]}";
        CHECK(accepts(g, doc, strlen(doc)) == 1);
        CHECK(accepts(g, "[]", 2) == 0);
        CHECK(accepts(g, "\"x\"", 3) == 0);
        CHECK(accepts(g, " {}", 3) == 0); /* no leading whitespace */
        CHECK(accepts(g, "{} ", 3) == 0); /* nor trailing: generation ends with the object */
        loom_grammar_free(g);
    }
}

int main(void) {
    corpus();
    patterns();
    errors();
    misc();
    return test_finish("test_grammar_schema");
}
