/* Constrained sampling is exactly "remove the disallowed tokens, then sample":
 * on qwen2's vocabulary with a JSON grammar, for several parameter sets
 * (greedy, default top-k/top-p/min-p, top-k off, penalties), every pick and
 * every candidate list equals that of an unconstrained sampler (same seed)
 * given the logits with the disallowed tokens set to -inf (computed from a
 * separate matcher's mask). Logits are random, or random with a boost on some
 * allowed tokens so that both the "best candidates first" path and the mask
 * path run. Also: prompt tokens do not advance the grammar, reset does, no
 * allowed token is LOOM_ERR_NOT_FOUND. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_gguf.h"
#include "loom_grammar.h"
#include "test_util.h"

static const char *JSON_G =
    "root ::= object\n"
    "value ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "object ::= \"{\" ws ( string \":\" ws value (\",\" ws string \":\" ws value)* )? \"}\" ws\n"
    "array ::= \"[\" ws ( value (\",\" ws value)* )? \"]\" ws\n"
    "string ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) )* \"\\\"\" ws\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9]+)? ws\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

static uint64_t rng(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}
static double unif(uint64_t *x) { return (double)(rng(x) >> 11) * 0x1.0p-53; }

static void run_config(const loom_tokenizer *tok, const loom_grammar *g, const loom_grammar_vocab *v,
                       loom_sampler_params sp, const char *name, int steps) {
    int32_t n = loom_tokenizer_n_vocab(tok);
    loom_sampler *s = NULL, *ref = NULL;
    loom_grammar_matcher *m = NULL, *mref = NULL;
    CHECK(loom_sampler_new(&sp, n, &s, NULL) == LOOM_OK);
    CHECK(loom_sampler_new(&sp, n, &ref, NULL) == LOOM_OK);
    CHECK(loom_grammar_matcher_new(g, v, NULL, &m, NULL) == LOOM_OK);
    CHECK(loom_grammar_matcher_new(g, v, NULL, &mref, NULL) == LOOM_OK);
    float *logits = malloc((size_t)n * sizeof(float)), *masked = malloc((size_t)n * sizeof(float));
    uint64_t *mask = calloc((size_t)(n + 63) / 64, sizeof(uint64_t));
    if (!s || !ref || !m || !mref || !logits || !masked || !mask) goto out;
    CHECK(loom_sampler_set_grammar(s, m) == LOOM_OK);
    /* prompt tokens: penalties only, the grammar does not move */
    for (int32_t t = 100; t < 110; t++) {
        CHECK(loom_sampler_accept_prompt(s, t) == LOOM_OK);
        CHECK(loom_sampler_accept_prompt(ref, t) == LOOM_OK);
    }
    uint64_t x = 0xC0FFEE ^ (uint64_t)sp.top_k;
    int diffs = 0, cand_diffs = 0, restarts = 0;
    long window_hits = 0;
    for (int step = 0; step < steps; step++) {
        for (int32_t t = 0; t < n; t++) {
            double u1 = unif(&x) + 1e-12, u2 = unif(&x);
            logits[t] = (float)(2.0 * sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2));
        }
        CHECK(loom_grammar_matcher_fill_mask(mref, mask, n) == LOOM_OK);
        int32_t n_allowed = 0;
        for (int32_t t = 0; t < n; t++) n_allowed += (int32_t)((mask[t >> 6] >> (t & 63)) & 1);
        if (step % 2 == 0) /* boost a third of the allowed tokens: the best few are then allowed */
            for (int32_t t = 0; t < n; t++)
                if (((mask[t >> 6] >> (t & 63)) & 1) && rng(&x) % 3 == 0) logits[t] += 8.0f;
        for (int32_t t = 0; t < n; t++) masked[t] = ((mask[t >> 6] >> (t & 63)) & 1) ? logits[t] : -INFINITY;
        int32_t a = -1, b = -1;
        CHECK(loom_sampler_sample(s, logits, &a) == LOOM_OK);
        bool ref_valid = sp.top_k <= 0 || n_allowed >= sp.top_k || !(sp.temperature > 0) || sp.top_k == 1;
        CHECK(loom_sampler_sample(ref, masked, &b) == LOOM_OK);
        if (ref_valid) {
            if (a != b) diffs++;
            const int32_t *ia, *ib;
            const float *pa, *pb;
            int32_t na = loom_sampler_last_candidates(s, &ia, &pa);
            int32_t nb = loom_sampler_last_candidates(ref, &ib, &pb);
            /* the reference may list zero-probability (-inf) entries last */
            while (nb > 0 && pb[nb - 1] == 0.0f && isinf(masked[ib[nb - 1]])) nb--;
            if (na != nb) {
                cand_diffs++;
            } else {
                for (int32_t i = 0; i < na; i++)
                    if (ia[i] != ib[i] || pa[i] != pb[i]) {
                        cand_diffs++;
                        break;
                    }
            }
        }
        CHECK_MSG(((mask[a >> 6] >> (a & 63)) & 1), "%s: step %d picked disallowed token %d", name, step, a);
        loom_grammar_matcher_stats st;
        loom_grammar_matcher_get_stats(m, &st);
        window_hits = st.token_checks;
        if (loom_tokenizer_is_eog(tok, a)) { /* sentence done: start again */
            loom_sampler_reset(s);
            loom_sampler_reset(ref);
            loom_grammar_matcher_reset(mref);
            CHECK(loom_grammar_matcher_is_accepting(m) == false);
            restarts++;
            continue;
        }
        CHECK(loom_sampler_accept(s, a) == LOOM_OK);
        CHECK(loom_sampler_accept(ref, a) == LOOM_OK);
        CHECK(loom_grammar_matcher_accept_token(mref, a, NULL) == LOOM_OK);
    }
    CHECK_MSG(diffs == 0, "%s: %d picks differ", name, diffs);
    CHECK_MSG(cand_diffs == 0, "%s: %d candidate lists differ", name, cand_diffs);
    printf("%s: %d steps, %d sentences completed, %ld single-token checks\n", name, steps, restarts, window_hits);
    /* a token the grammar refuses: accept fails and is not recorded */
    loom_sampler_reset(s);
    int32_t x_tok = -1;
    int32_t nt = 0;
    CHECK(loom_tokenize(tok, "x", 1, false, false, &x_tok, 1, &nt, NULL) == LOOM_OK && nt == 1);
    CHECK(loom_sampler_accept(s, x_tok) == LOOM_ERR_INVALID_ARG);
    CHECK(strstr(loom_grammar_matcher_last_error(m), "not allowed") != NULL);
out:
    loom_sampler_free(s);
    loom_sampler_free(ref);
    loom_grammar_matcher_free(m);
    loom_grammar_matcher_free(mref);
    free(logits);
    free(masked);
    free(mask);
}

static void no_token(void) {
    const char *pieces[] = {"a", "b", ""};
    size_t lens[] = {1, 1, 0};
    int32_t eog = 2;
    loom_grammar_vocab *v = NULL;
    loom_grammar *g = NULL;
    loom_grammar_matcher *m = NULL;
    loom_sampler *s = NULL;
    CHECK(loom_grammar_vocab_new_from_pieces(3, pieces, lens, &eog, 1, &v, NULL) == LOOM_OK);
    CHECK(loom_grammar_new("root ::= \"a\" \"z\"", 16, NULL, NULL, &g, NULL) == LOOM_OK);
    CHECK(g && v && loom_grammar_matcher_new(g, v, NULL, &m, NULL) == LOOM_OK);
    loom_sampler_params sp = loom_sampler_default_params();
    CHECK(loom_sampler_new(&sp, 3, &s, NULL) == LOOM_OK);
    if (s && m) {
        CHECK(loom_sampler_set_grammar(s, m) == LOOM_OK);
        float l[3] = {0.0f, 5.0f, 1.0f};
        int32_t t = -1;
        CHECK(loom_sampler_sample(s, l, &t) == LOOM_OK);
        CHECK_EQ_INT(t, 0); /* the only allowed token */
        CHECK(loom_sampler_accept(s, 0) == LOOM_OK);
        CHECK(loom_sampler_sample(s, l, &t) == LOOM_ERR_NOT_FOUND); /* "z" cannot be spelled */
        /* detached: back to unconstrained */
        CHECK(loom_sampler_set_grammar(s, NULL) == LOOM_OK);
        CHECK(loom_sampler_sample(s, l, &t) == LOOM_OK);
    }
    /* a byte-only matcher cannot constrain a sampler */
    loom_grammar_matcher *mb = NULL;
    CHECK(g && loom_grammar_matcher_new(g, NULL, NULL, &mb, NULL) == LOOM_OK);
    if (s && mb) CHECK(loom_sampler_set_grammar(s, mb) == LOOM_ERR_INVALID_ARG);
    loom_grammar_matcher_free(mb);
    loom_sampler_free(s);
    loom_grammar_matcher_free(m);
    loom_grammar_free(g);
    loom_grammar_vocab_free(v);
}

int main(void) {
    loom_gguf *gg = NULL;
    loom_tokenizer *tok = NULL;
    loom_error err = {0};
    CHECK(loom_gguf_open(test_path("tests/data/vocab/ggml-vocab-qwen2.gguf"), NULL, &gg, &err) == LOOM_OK);
    CHECK(gg && loom_tokenizer_new_from_gguf(gg, &tok, &err) == LOOM_OK);
    loom_gguf_close(gg);
    loom_grammar_vocab *v = NULL;
    loom_grammar *g = NULL;
    CHECK(tok && loom_grammar_vocab_new(tok, &v, NULL) == LOOM_OK);
    CHECK(loom_grammar_new(JSON_G, strlen(JSON_G), NULL, NULL, &g, &err) == LOOM_OK);
    if (tok && v && g) {
        loom_sampler_params sp = loom_sampler_default_params();
        sp.seed = 7;
        run_config(tok, g, v, sp, "defaults (top-k 40, top-p 0.95, min-p 0.05)", 120);
        sp.temperature = 0;
        run_config(tok, g, v, sp, "greedy", 120);
        sp = loom_sampler_default_params();
        sp.top_k = 0;
        sp.top_p = 0.9f;
        sp.min_p = 0.01f;
        sp.seed = 11;
        run_config(tok, g, v, sp, "top-k off, top-p 0.9", 60);
        sp = loom_sampler_default_params();
        sp.top_k = 5;
        sp.top_p = 1.0f;
        sp.min_p = 0.0f;
        sp.temperature = 1.5f;
        sp.repeat_penalty = 1.3f;
        sp.presence_penalty = 0.5f;
        sp.seed = 3;
        run_config(tok, g, v, sp, "top-k 5, penalties", 120);
    }
    no_token();
    loom_grammar_free(g);
    loom_grammar_vocab_free(v);
    loom_tokenizer_free(tok);
    return test_finish("test_grammar_sampler");
}
