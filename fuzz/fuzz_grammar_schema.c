/* libFuzzer target: JSON Schema -> grammar. The input is a schema. A rejected
 * schema must come with a message (LOOM_ERR_INTERNAL never); an accepted one
 * must compile (or say why the grammar it converts to is invalid), and its
 * matcher is run over a few JSON texts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loom_grammar.h"

static const char *const TEXTS[] = {"{}", "[]", "1", "-0.5e3", "\"a\"", "null", "true", "{\"a\": [1, \"x\"]}",
                                    "[\"\\u00e9\", {}]", "\"2024-01-31\""};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 14) return 0;
    char *gbnf = NULL;
    loom_error err = {0};
    loom_status st = loom_json_schema_to_gbnf((const char *)data, size, &gbnf, NULL, &err);
    if (st != LOOM_OK) {
        if (gbnf || !err.msg[0] || st == LOOM_ERR_INTERNAL) abort();
        return 0;
    }
    free(gbnf);
    loom_grammar *g = NULL;
    loom_error e2 = {0};
    st = loom_grammar_new_json_schema((const char *)data, size, &g, &e2);
    if (st != LOOM_OK) {
        if (g || !e2.msg[0] || st == LOOM_ERR_INTERNAL) abort();
        return 0;
    }
    loom_grammar_matcher_params p = loom_grammar_matcher_default_params();
    p.max_stacks = 256;
    p.max_depth = 256;
    for (size_t i = 0; i < sizeof TEXTS / sizeof TEXTS[0]; i++) {
        loom_grammar_matcher *m = NULL;
        if (loom_grammar_matcher_new(g, NULL, &p, &m, NULL) != LOOM_OK) break;
        loom_grammar_matcher_accept_bytes(m, TEXTS[i], strlen(TEXTS[i]), NULL);
        (void)loom_grammar_matcher_is_accepting(m);
        loom_grammar_matcher_free(m);
    }
    loom_grammar_free(g);
    return 0;
}
