/* End to end: the bundled stories260K model (which has never seen JSON) at
 * temperature 1, many seeds, constrained by grammars.
 *   - JSON Schemas whose documents are at most ~450 bytes (so every run ends
 *     inside the context): every output must be complete, and an independent
 *     validator (Python's json + jsonschema, tests/grammar/validate_json.py)
 *     must accept every one;
 *   - unbounded schemas (any object, free strings): complete outputs are
 *     validated the same way, outputs cut by the token budget are counted;
 *   - GBNF grammars (arithmetic, a list, UTF-8 classes spelled by byte tokens):
 *     every output is in the language or, when the budget ran out, a prefix of
 *     it, decided by a recogniser written by hand for each grammar here.
 * Half the seeds sample from the whole allowed distribution (top-k/top-p/min-p
 * off), half with the default filters. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom.h"
#include "loom_grammar.h"
#include "loom_model.h"
#include "test_util.h"

/* Seeds per bounded case (a third of them for unbounded ones, which run to the
 * end of the context). Sanitizer builds (-O0, ~50x slower) run fewer. */
#if defined(LOOM_SANITIZE) || defined(LOOM_TSAN)
#define SEEDS 3
#else
#define SEEDS 24
#endif

enum { ENDED_GRAMMAR = 1, ENDED_BUDGET = 2 };

typedef struct run_ctx {
    loom_model *m;
    const loom_tokenizer *tk;
    loom_grammar_vocab *v;
} run_ctx;

/* Generate from a short prompt until the grammar is complete (EOG sampled or
 * nothing can follow) or the context is full. Returns ENDED_*, 0 on error. */
static int generate(run_ctx *rc, const loom_grammar *g, uint64_t seed, bool filters, char *out, size_t cap,
                    size_t *len) {
    *len = 0;
    loom_sampler_params sp = loom_sampler_default_params();
    sp.temperature = 1.0f;
    sp.seed = seed;
    if (!filters) sp.top_k = 0, sp.top_p = 1.0f, sp.min_p = 0.0f;
    loom_sampler *s = NULL;
    loom_grammar_matcher *gm = NULL;
    int why = 0;
    loom_error err = {0};
    if (loom_sampler_new(&sp, loom_model_n_vocab(rc->m), &s, NULL) || loom_grammar_matcher_new(g, rc->v, NULL, &gm, &err) ||
        loom_sampler_set_grammar(s, gm)) {
        fprintf(stderr, "setup: %s\n", err.msg);
        goto out;
    }
    loom_model_reset(rc->m);
    int32_t prompt[8];
    int32_t np = 0;
    if (loom_tokenize(rc->tk, "Once upon a time", 16, true, false, prompt, 8, &np, NULL) != LOOM_OK) goto out;
    for (int32_t i = 0; i < np; i++) loom_sampler_accept_prompt(s, prompt[i]);
    if (loom_model_eval(rc->m, prompt, np, false, &err)) goto out;
    for (;;) {
        if (!loom_grammar_matcher_can_continue(gm)) {
            why = ENDED_GRAMMAR;
            break;
        }
        int32_t t;
        loom_status st = loom_sampler_sample(s, loom_model_logits(rc->m, -1), &t);
        if (st) {
            fprintf(stderr, "sample: %s\n", loom_status_name(st));
            break;
        }
        if (loom_tokenizer_is_eog(rc->tk, t)) {
            why = loom_grammar_matcher_is_accepting(gm) ? ENDED_GRAMMAR : 0;
            break;
        }
        if ((st = loom_sampler_accept(s, t))) {
            fprintf(stderr, "accept: %s\n", loom_grammar_matcher_last_error(gm));
            break;
        }
        size_t pl = 0;
        if (loom_token_to_piece(rc->tk, t, out + *len, cap - *len, &pl) != LOOM_OK) break;
        *len += pl;
        st = loom_model_eval(rc->m, &t, 1, false, &err);
        if (st == LOOM_ERR_CONTEXT_FULL) {
            why = ENDED_BUDGET;
            break;
        }
        if (st) break;
    }
out:
    loom_sampler_free(s);
    loom_grammar_matcher_free(gm);
    return why;
}

/* ---------------------------------------------------------------- JSON */

typedef struct schema_case {
    const char *name;
    const char *schema;
    bool bounded; /* every document fits the context: all runs must complete */
} schema_case;

static const schema_case SCHEMAS[] = {
    {"person",
     "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":8},"
     "\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":120}},\"required\":[\"name\",\"age\"]}",
     true},
    {"enum-const-bool-null",
     "{\"type\":\"object\",\"properties\":{\"color\":{\"enum\":[\"red\",\"green\",\"blue\"]},\"ok\":{\"type\":"
     "\"boolean\"},\"nothing\":{\"type\":\"null\"},\"version\":{\"const\":2}},\"required\":[\"color\",\"ok\","
     "\"version\"]}",
     true},
    {"int-array",
     "{\"type\":\"array\",\"items\":{\"type\":\"integer\",\"minimum\":-50,\"maximum\":50},\"minItems\":1,"
     "\"maxItems\":4}",
     true},
    {"ref-anyof",
     "{\"$defs\":{\"pt\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"integer\",\"minimum\":-99,"
     "\"maximum\":99},\"y\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":9}},\"required\":[\"x\",\"y\"]}},"
     "\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/$defs/pt\"},\"b\":{\"anyOf\":[{\"type\":\"string\","
     "\"maxLength\":4},{\"type\":\"integer\",\"minimum\":0,\"maximum\":9},{\"type\":\"null\"}]}},\"required\":"
     "[\"a\",\"b\"]}",
     true},
    {"formats",
     "{\"type\":\"object\",\"properties\":{\"d\":{\"type\":\"string\",\"format\":\"date\"},\"t\":{\"type\":"
     "\"string\",\"format\":\"time\"},\"u\":{\"type\":\"string\",\"format\":\"uuid\"},\"dt\":{\"type\":\"string\","
     "\"format\":\"date-time\"}},\"required\":[\"d\",\"t\",\"u\",\"dt\"]}",
     true},
    {"pattern", "{\"type\":\"string\",\"pattern\":\"^[A-Z]{2}-[0-9]{3}(x|yz)?$\"}", true},
    {"tuple",
     "{\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\",\"maxLength\":3},{\"type\":\"boolean\"},"
     "{\"enum\":[1,2.5,\"three\",null,[4],{\"five\":5}]}]}",
     true},
    {"allof",
     "{\"allOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":5}},"
     "\"required\":[\"a\"]},{\"properties\":{\"b\":{\"type\":\"boolean\"}},\"required\":[\"b\"]}]}",
     true},
    {"oneof-optional",
     "{\"type\":\"object\",\"properties\":{\"kind\":{\"oneOf\":[{\"const\":\"circle\"},{\"const\":\"square\"}]},"
     "\"r\":{\"type\":\"integer\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":10},\"note\":{\"type\":\"string\","
     "\"maxLength\":5}},\"required\":[\"kind\"]}",
     true},
    {"utf8-string", "{\"type\":\"string\",\"minLength\":2,\"maxLength\":6}", true},
    /* unbounded */
    {"any-object", "{\"type\":\"object\"}", false},
    {"extra-props",
     "{\"type\":\"object\",\"properties\":{\"k\":{\"type\":\"boolean\"}},\"additionalProperties\":{\"type\":"
     "\"integer\",\"minimum\":0,\"maximum\":9}}",
     false},
    {"free-string", "{\"type\":\"string\"}", false},
};

static void hex(FILE *f, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) fprintf(f, "%02x", (unsigned char)s[i]);
}

static void json_schemas(run_ctx *rc) {
    char path[128];
    snprintf(path, sizeof path, "/tmp/loom_grammar_gen_%d.jsonl", (int)getpid());
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    static char out[1 << 16];
    int n_docs = 0;
    for (size_t k = 0; k < sizeof SCHEMAS / sizeof SCHEMAS[0]; k++) {
        const schema_case *sc = &SCHEMAS[k];
        loom_grammar *g = NULL;
        loom_error err = {0};
        CHECK_MSG(loom_grammar_new_json_schema(sc->schema, strlen(sc->schema), &g, &err) == LOOM_OK, "%s: %s",
                  sc->name, err.msg);
        if (!g) continue;
        int complete = 0, cut = 0;
        for (int seed = 1; seed <= (sc->bounded ? SEEDS : (SEEDS + 2) / 3); seed++) {
            size_t len = 0;
            int why = generate(rc, g, (uint64_t)seed * 7919, seed % 2 == 0, out, sizeof out, &len);
            CHECK_MSG(why != 0, "%s seed %d: generation failed", sc->name, seed);
            if (why == ENDED_BUDGET) {
                cut++;
                CHECK_MSG(!sc->bounded, "%s seed %d: a bounded schema ran out of context", sc->name, seed);
                continue;
            }
            if (why != ENDED_GRAMMAR) continue;
            complete++;
            fprintf(f, "{\"name\":\"%s\",\"seed\":%d,\"schema\":%s,\"hex\":\"", sc->name, seed, sc->schema);
            hex(f, out, len);
            fprintf(f, "\"}\n");
            n_docs++;
            if (seed <= 2) printf("%s seed %d: %.*s\n", sc->name, seed, len > 300 ? 300 : (int)len, out);
        }
        printf("%s: %d complete, %d cut by the context\n", sc->name, complete, cut);
        loom_grammar_free(g);
    }
    fclose(f);
    CHECK(n_docs >= 8 * SEEDS);
    static char cmd[8192];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s %s", test_path("tests/grammar/validate_json.py"), path);
    int st = system(cmd);
    CHECK_MSG(st == 0, "the independent validator rejected outputs (status %d): see above; it needs /usr/bin/python3 "
                       "with python3-jsonschema", st);
    unlink(path);
}

/* ---------------------------------------------------------------- GBNF */

enum { R_FULL = 1, R_PREFIX = 2, R_REJECT = 3 };

/* Hand-written recogniser of
 *   root ::= expr "="  ;  expr ::= term ([-+*] term)*  ;  term ::= [0-9]{1,3} | "(" expr ")"
 * with at most max_terms terms per expression and parentheses nested at most
 * max_paren deep (0: unlimited), returning FULL, PREFIX (the input ends inside a
 * sentence) or REJECT. */
typedef struct rd {
    const char *s;
    size_t n, i;
    bool eof; /* ran out of input */
    int max_terms, max_paren;
} rd;
static bool rd_term(rd *r, int depth);
static bool rd_expr(rd *r, int depth) {
    if (!rd_term(r, depth)) return false;
    int terms = 1;
    while (r->i < r->n && r->s[r->i] && strchr("+-*", r->s[r->i])) {
        if (r->max_terms && ++terms > r->max_terms) return false;
        r->i++;
        if (!rd_term(r, depth)) return false;
    }
    if (r->i >= r->n) r->eof = true;
    return true;
}
static bool rd_term(rd *r, int depth) {
    if (depth > 1000) return false;
    if (r->i >= r->n) {
        r->eof = true;
        return false;
    }
    char c = r->s[r->i];
    if (c >= '0' && c <= '9') {
        int k = 0;
        while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9' && k < 3) r->i++, k++;
        if (r->i >= r->n) r->eof = true;
        return true;
    }
    if (c == '(' && (!r->max_paren || depth < r->max_paren)) {
        r->i++;
        if (!rd_expr(r, depth + 1)) return false;
        if (r->i >= r->n) {
            r->eof = true;
            return false;
        }
        if (r->s[r->i] != ')') return false;
        r->i++;
        return true;
    }
    return false;
}
static int check_arith_limits(const char *s, size_t n, int max_terms, int max_paren) {
    rd r = {s, n, 0, false, max_terms, max_paren};
    bool ok = rd_expr(&r, 0);
    if (!ok) return r.eof && r.i >= n ? R_PREFIX : R_REJECT;
    if (r.i >= n) return R_PREFIX; /* "=" missing */
    if (s[r.i] == '=' && r.i + 1 == n) return R_FULL;
    return R_REJECT;
}
static int check_arith(const char *s, size_t n) { return check_arith_limits(s, n, 4, 2); }
static int check_arith_deep(const char *s, size_t n) { return check_arith_limits(s, n, 0, 0); }

/* root ::= ("- " [a-z ]{1,12} "\n"){1,3} */
static int check_list(const char *s, size_t n) {
    size_t i = 0;
    int items = 0;
    while (i < n) {
        if (items == 3) return R_REJECT;
        if (s[i] != '-') return R_REJECT;
        if (++i == n) return R_PREFIX;
        if (s[i] != ' ') return R_REJECT;
        i++;
        int k = 0;
        while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || s[i] == ' ')) i++, k++;
        if (k > 12) return R_REJECT;
        if (i == n) return R_PREFIX;
        if (s[i] != '\n' || k == 0) return R_REJECT;
        i++;
        items++;
    }
    return items >= 1 ? R_FULL : R_PREFIX;
}

/* root ::= [α-ω]{1,4} " " [ぁ-ゟ]{1,3} "!" : code points decoded here. */
static int check_utf8(const char *s, size_t n) {
    size_t i = 0;
    int phase = 0, count = 0;
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        uint32_t cp;
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (!len) return R_REJECT;
        if (i + len > n) { /* a character cut by the end: must be able to become a wanted one */
            for (size_t k = 1; i + k < n; k++)
                if (((unsigned char)s[i + k] & 0xC0) != 0x80) return R_REJECT;
            if (phase == 0 && count < 4 && (c == 0xCE || c == 0xCF)) return R_PREFIX;
            if (phase == 2 && count < 3 && c == 0xE3 &&
                (i + 1 == n || (unsigned char)s[i + 1] == 0x81 || (unsigned char)s[i + 1] == 0x82))
                return R_PREFIX;
            return R_REJECT;
        }
        cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
        for (size_t k = 1; k < len; k++) {
            if (((unsigned char)s[i + k] & 0xC0) != 0x80) return R_REJECT;
            cp = cp << 6 | ((unsigned char)s[i + k] & 0x3F);
        }
        i += len;
        if (phase == 0) {
            if (cp >= 0x3B1 && cp <= 0x3C9 && count < 4) count++;
            else if (cp == ' ' && count >= 1) phase = 2, count = 0;
            else return R_REJECT;
        } else if (phase == 2) {
            if (cp >= 0x3041 && cp <= 0x309F && count < 3) count++;
            else if (cp == '!' && count >= 1) phase = 3;
            else return R_REJECT;
        } else {
            return R_REJECT;
        }
    }
    return phase == 3 ? R_FULL : R_PREFIX;
}

static void gbnf_grammars(run_ctx *rc) {
    struct {
        const char *name, *text;
        int (*check)(const char *, size_t);
        bool bounded; /* its sentences fit the context: every run must complete */
    } gs[] = {
        /* parentheses nest at most twice, at most 4 terms each: bounded */
        {"arithmetic",
         "root ::= expr \"=\"\nexpr ::= term ([-+*] term){0,3}\nterm ::= [0-9]{1,3} | \"(\" expr1 \")\"\n"
         "expr1 ::= term1 ([-+*] term1){0,3}\nterm1 ::= [0-9]{1,3} | \"(\" expr2 \")\"\n"
         "expr2 ::= [0-9]{1,3} ([-+*] [0-9]{1,3}){0,3}",
         check_arith, true},
        /* unbounded nesting: runs may be cut by the context */
        {"arithmetic-deep", "root ::= expr \"=\"\nexpr ::= term ([-+*] term)*\nterm ::= [0-9]{1,3} | \"(\" expr \")\"",
         check_arith_deep, false},
        {"list", "root ::= (\"- \" [a-z ]{1,12} \"\\n\"){1,3}", check_list, true},
        {"utf8", "root ::= [\xce\xb1-\xcf\x89]{1,4} \" \" [\xe3\x81\x81-\xe3\x82\x9f]{1,3} \"!\"", check_utf8, true},
    };
    static char out[1 << 16];
    for (size_t k = 0; k < sizeof gs / sizeof gs[0]; k++) {
        loom_grammar *g = NULL;
        loom_error err = {0};
        CHECK_MSG(loom_grammar_new(gs[k].text, strlen(gs[k].text), NULL, rc->tk, &g, &err) == LOOM_OK, "%s: %s",
                  gs[k].name, err.msg);
        if (!g) continue;
        int full = 0, prefix = 0;
        for (int seed = 1; seed <= (gs[k].bounded ? SEEDS : (SEEDS + 2) / 3); seed++) {
            size_t len = 0;
            int why = generate(rc, g, (uint64_t)seed * 104729, seed % 2 == 1, out, sizeof out, &len);
            CHECK_MSG(why != 0, "%s seed %d: generation failed", gs[k].name, seed);
            int got = gs[k].check(out, len);
            if (why == ENDED_GRAMMAR) {
                CHECK_MSG(got == R_FULL, "%s seed %d: complete output not in the language: '%.*s'", gs[k].name, seed,
                          (int)len, out);
                full++;
            } else if (why == ENDED_BUDGET) {
                CHECK_MSG(got == R_PREFIX || got == R_FULL, "%s seed %d: cut output not a prefix: '%.*s'",
                          gs[k].name, seed, (int)len, out);
                CHECK_MSG(!gs[k].bounded, "%s seed %d: a bounded grammar ran out of context", gs[k].name, seed);
                prefix++;
            }
            if (seed <= 2) printf("%s seed %d: %.*s\n", gs[k].name, seed, len > 300 ? 300 : (int)len, out);
        }
        printf("%s: %d complete, %d cut by the context\n", gs[k].name, full, prefix);
        loom_grammar_free(g);
    }
}

int main(void) {
    loom_model_params p = loom_model_default_params();
    p.path = test_path("models/stories260K.gguf");
    p.n_threads = 1;
    run_ctx rc = {0};
    loom_error err = {0};
    CHECK_MSG(loom_model_open(&p, &rc.m, &err) == LOOM_OK, "%s", err.msg);
    if (!rc.m) return test_finish("test_grammar_generate");
    CHECK(loom_model_tokenizer(rc.m, &rc.tk, &err) == LOOM_OK);
    CHECK(rc.tk && loom_grammar_vocab_new(rc.tk, &rc.v, &err) == LOOM_OK);
    if (rc.v) {
        json_schemas(&rc);
        gbnf_grammars(&rc);
    }
    loom_grammar_vocab_free(rc.v);
    loom_model_close(rc.m);
    return test_finish("test_grammar_generate");
}
