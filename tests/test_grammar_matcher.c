/* Token-level matching: hand-computed allowed sets over a small vocabulary
 * (tokens that split UTF-8 characters, a token that spans the end of one rule
 * and the start of the next, empty pieces, end-of-generation), token
 * references <[id]> / !<[id]> / <text>, and on qwen2's 151k vocabulary random
 * walks through a JSON grammar where every mask (trie walk + cache) equals the
 * token-by-token check and a brute-force replay of the bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_gguf.h"
#include "loom_grammar.h"
#include "test_util.h"

static loom_grammar *compile(const char *gt, const loom_tokenizer *tok) {
    loom_grammar *g = NULL;
    loom_error err = {0};
    if (loom_grammar_new(gt, strlen(gt), NULL, tok, &g, &err) != LOOM_OK) {
        fprintf(stderr, "grammar: %s\n", err.msg);
        return NULL;
    }
    return g;
}

/* The set of allowed tokens as a string of ids "1,4,7" (from the mask), and
 * check that allows() agrees with the mask for every token. */
static void mask_string(loom_grammar_matcher *m, int32_t n, char *out, size_t cap) {
    uint64_t mask[8] = {0};
    CHECK(loom_grammar_matcher_fill_mask(m, mask, n) == LOOM_OK);
    size_t k = 0;
    out[0] = 0;
    for (int32_t t = 0; t < n; t++) {
        bool in = (mask[t >> 6] >> (t & 63)) & 1;
        CHECK_MSG(in == loom_grammar_matcher_allows(m, t), "token %d: mask %d allows %d", t, in,
                  loom_grammar_matcher_allows(m, t));
        if (in) k += (size_t)snprintf(out + k, cap - k, "%s%d", k ? "," : "", t);
    }
}

static void small_vocab(void) {
    /*                      0     1    2     3       4       5           6    7     8   9 (EOG)  10     11 */
    const char *pieces[] = {"a", "b", "ab", "\xc3", "\xa9", "\xc3\xa9", "{", "\"", "", "", "\xa9\x62", "b\"{"};
    size_t lens[12];
    for (int i = 0; i < 12; i++) lens[i] = strlen(pieces[i]);
    int32_t eog = 9;
    loom_grammar_vocab *v = NULL;
    CHECK(loom_grammar_vocab_new_from_pieces(12, pieces, lens, &eog, 1, &v, NULL) == LOOM_OK);
    if (!v) return;
    CHECK_EQ_INT(loom_grammar_vocab_n_tokens(v), 12);

    /* root ::= "a" "é"+ "b" x ; x ::= "\"" "{"  */
    loom_grammar *g = compile("root ::= \"a\" \"\xc3\xa9\"+ \"b\" x\nx ::= \"\\\"\" \"{\"", NULL);
    loom_grammar_matcher *m = NULL;
    CHECK(g && loom_grammar_matcher_new(g, v, NULL, &m, NULL) == LOOM_OK);
    if (!m) return;
    char s[256];
    mask_string(m, 12, s, sizeof s);
    CHECK_MSG(!strcmp(s, "0"), "start: %s", s); /* only "a" ("ab" would need b next) */
    CHECK(loom_grammar_matcher_accept_token(m, 0, NULL) == LOOM_OK);
    mask_string(m, 12, s, sizeof s);
    CHECK_MSG(!strcmp(s, "3,5"), "after a: %s", s); /* \xc3 alone (split char) or the whole é */
    CHECK(loom_grammar_matcher_accept_token(m, 3, NULL) == LOOM_OK);
    mask_string(m, 12, s, sizeof s);
    /* the continuation byte, or \xa9b: it completes the é and starts the "b" */
    CHECK_MSG(!strcmp(s, "4,10"), "mid-character: %s", s);
    CHECK(loom_grammar_matcher_accept_token(m, 4, NULL) == LOOM_OK);
    mask_string(m, 12, s, sizeof s);
    CHECK_MSG(!strcmp(s, "1,3,5,11"), "after a\xc3\xa9: %s", s); /* b, b"{ (ends the sentence), more é */
    CHECK(!loom_grammar_matcher_is_accepting(m));
    CHECK(loom_grammar_matcher_allows(m, 9) == false); /* EOG before the end */
    loom_error err = {0};
    CHECK(loom_grammar_matcher_accept_token(m, 9, &err) == LOOM_ERR_INVALID_ARG);
    CHECK(strstr(err.msg, "end of generation") != NULL);
    loom_error_clear(&err);
    CHECK(loom_grammar_matcher_accept_token(m, 6, &err) == LOOM_ERR_INVALID_ARG); /* "{" not allowed */
    CHECK(strstr(err.msg, "token 6 is not allowed") != NULL);
    CHECK(loom_grammar_matcher_accept_token(m, 8, NULL) == LOOM_ERR_INVALID_ARG); /* empty piece */
    CHECK(loom_grammar_matcher_accept_token(m, 12, NULL) == LOOM_ERR_INVALID_ARG); /* out of range */
    CHECK(loom_grammar_matcher_accept_token(m, 11, NULL) == LOOM_OK);            /* b"{ crosses into rule x */
    CHECK(loom_grammar_matcher_is_accepting(m));
    CHECK(!loom_grammar_matcher_can_continue(m));
    mask_string(m, 12, s, sizeof s);
    CHECK_MSG(!strcmp(s, "9"), "end: %s", s);
    CHECK(loom_grammar_matcher_accept_token(m, 9, NULL) == LOOM_OK);
    /* reset: back to the start (the cache of masks is kept) */
    loom_grammar_matcher_reset(m);
    mask_string(m, 12, s, sizeof s);
    CHECK_MSG(!strcmp(s, "0"), "after reset: %s", s);
    /* the same sentence split differently: a, é (whole), \xc3, \xa9b, ", { */
    CHECK(loom_grammar_matcher_accept_token(m, 0, NULL) == LOOM_OK);
    CHECK(loom_grammar_matcher_accept_token(m, 5, NULL) == LOOM_OK);
    CHECK(loom_grammar_matcher_accept_token(m, 3, NULL) == LOOM_OK);
    CHECK(loom_grammar_matcher_allows(m, 10));
    CHECK(loom_grammar_matcher_accept_token(m, 10, NULL) == LOOM_OK);
    mask_string(m, 12, s, sizeof s);
    CHECK_MSG(!strcmp(s, "7"), "after b: %s", s);
    CHECK(loom_grammar_matcher_accept_token(m, 7, NULL) == LOOM_OK);
    CHECK(loom_grammar_matcher_accept_token(m, 6, NULL) == LOOM_OK);
    CHECK(loom_grammar_matcher_is_accepting(m));
    loom_grammar_matcher_stats st;
    loom_grammar_matcher_get_stats(m, &st);
    CHECK(st.cache_entries > 0 && st.mask_walks >= st.cache_entries);
    loom_grammar_matcher_free(m);
    loom_grammar_free(g);

    /* token references: <[6]> then any token but "b", then end */
    g = compile("root ::= <[6]> !<[1]> \"a\"?", NULL);
    m = NULL;
    CHECK(g && loom_grammar_matcher_new(g, v, NULL, &m, NULL) == LOOM_OK);
    if (m) {
        mask_string(m, 12, s, sizeof s);
        CHECK_MSG(!strcmp(s, "6"), "<[6]>: %s", s);
        CHECK(loom_grammar_matcher_accept_token(m, 6, NULL) == LOOM_OK);
        mask_string(m, 12, s, sizeof s);
        /* every token with a piece except 1 (EOG 9 and empty 8 excluded) */
        CHECK_MSG(!strcmp(s, "0,2,3,4,5,6,7,10,11"), "!<[1]>: %s", s);
        CHECK(loom_grammar_matcher_accept_token(m, 3, NULL) == LOOM_OK);
        mask_string(m, 12, s, sizeof s);
        CHECK_MSG(!strcmp(s, "0,9"), "then: %s", s);
        loom_grammar_matcher_free(m);
    }
    loom_grammar_free(g);
    /* a token id beyond the vocabulary */
    g = compile("root ::= <[12]>", NULL);
    m = (loom_grammar_matcher *)1;
    CHECK(g && loom_grammar_matcher_new(g, v, NULL, &m, NULL) == LOOM_ERR_RANGE);
    CHECK(m == NULL);
    loom_grammar_free(g);
    loom_grammar_vocab_free(v);
}

/* ---------------------------------------------------------------- qwen2 */

static loom_tokenizer *load_tok(const char *name) {
    char rel[256];
    snprintf(rel, sizeof rel, "tests/data/vocab/ggml-vocab-%s.gguf", name);
    loom_gguf *gg = NULL;
    loom_tokenizer *t = NULL;
    loom_error err = {0};
    if (loom_gguf_open(test_path(rel), NULL, &gg, &err) != LOOM_OK ||
        loom_tokenizer_new_from_gguf(gg, &t, &err) != LOOM_OK)
        fprintf(stderr, "%s: %s\n", rel, err.msg);
    loom_gguf_close(gg);
    return t;
}

static const char *JSON_G =
    "root ::= object\n"
    "value ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "object ::= \"{\" ws ( string \":\" ws value (\",\" ws string \":\" ws value)* )? \"}\" ws\n"
    "array ::= \"[\" ws ( value (\",\" ws value)* )? \"]\" ws\n"
    "string ::= \"\\\"\" ( [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) )* \"\\\"\" ws\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9]+)? ws\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

static uint64_t rng_next(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Replay: is history + piece(t) accepted by a fresh byte-only matcher? */
static bool brute_allows(const loom_grammar *g, const char *hist, size_t hlen, const char *pc, size_t plen) {
    loom_grammar_matcher *m = NULL;
    if (loom_grammar_matcher_new(g, NULL, NULL, &m, NULL) != LOOM_OK) return false;
    bool ok = loom_grammar_matcher_accept_bytes(m, hist, hlen, NULL) == LOOM_OK &&
              loom_grammar_matcher_accept_bytes(m, pc, plen, NULL) == LOOM_OK;
    loom_grammar_matcher_free(m);
    return ok;
}

static void qwen2_walks(void) {
    loom_tokenizer *tok = load_tok("qwen2");
    CHECK(tok != NULL);
    if (!tok) return;
    loom_grammar_vocab *v = NULL;
    CHECK(loom_grammar_vocab_new(tok, &v, NULL) == LOOM_OK);
    loom_grammar *g = compile(JSON_G, tok);
    CHECK(g != NULL);
    int32_t n = loom_tokenizer_n_vocab(tok);
    uint32_t words = (uint32_t)((n + 63) / 64);
    uint64_t *mask = calloc(words, sizeof(uint64_t));
    int32_t *allowed = malloc((size_t)n * sizeof(int32_t));
    char *hist = malloc(1 << 16);
    char piece[512];
    loom_grammar_matcher *m = NULL;
    CHECK(v && g && mask && allowed && hist && loom_grammar_matcher_new(g, v, NULL, &m, NULL) == LOOM_OK);
    if (!m) goto out;
    uint64_t x = 0x1234567;
    int steps_checked = 0, mismatches = 0, ended = 0;
    for (int walk = 0; walk < 10; walk++) {
        loom_grammar_matcher_reset(m);
        size_t hlen = 0;
        for (int step = 0; step < 60; step++) {
            CHECK(loom_grammar_matcher_fill_mask(m, mask, n) == LOOM_OK);
            int32_t na = 0;
            for (int32_t t = 0; t < n; t++)
                if ((mask[t >> 6] >> (t & 63)) & 1) allowed[na++] = t;
            CHECK(na > 0);
            if (!na) break;
            /* every 5th step: the whole vocabulary token by token, and 300 random
             * tokens replayed from scratch */
            if (step % 5 == 0) {
                for (int32_t t = 0; t < n; t++) {
                    bool in = (mask[t >> 6] >> (t & 63)) & 1;
                    if (in != loom_grammar_matcher_allows(m, t)) mismatches++;
                }
                for (int k = 0; k < 300; k++) {
                    int32_t t = (int32_t)(rng_next(&x) % (uint64_t)n);
                    size_t pl = 0;
                    if (loom_token_to_piece(tok, t, piece, sizeof piece, &pl) != LOOM_OK) continue;
                    bool in = (mask[t >> 6] >> (t & 63)) & 1;
                    bool want = pl > 0 && !loom_tokenizer_is_eog(tok, t) && brute_allows(g, hist, hlen, piece, pl);
                    if (loom_tokenizer_is_eog(tok, t)) want = loom_grammar_matcher_is_accepting(m);
                    if (in != want) mismatches++;
                }
                steps_checked++;
            }
            /* end of generation only one time in eight when something else is allowed */
            int32_t t = allowed[rng_next(&x) % (uint64_t)na];
            for (int retry = 0; retry < 7 && na > 1 && loom_tokenizer_is_eog(tok, t); retry++)
                t = allowed[rng_next(&x) % (uint64_t)na];
            if (loom_tokenizer_is_eog(tok, t)) {
                ended++;
                break;
            }
            size_t pl = 0;
            CHECK(loom_token_to_piece(tok, t, piece, sizeof piece, &pl) == LOOM_OK);
            loom_error err = {0};
            CHECK_MSG(loom_grammar_matcher_accept_token(m, t, &err) == LOOM_OK, "%s", err.msg);
            if (hlen + pl < (1 << 16)) {
                memcpy(hist + hlen, piece, pl);
                hlen += pl;
            }
        }
    }
    CHECK_EQ_INT(mismatches, 0);
    CHECK(steps_checked >= 60);
    loom_grammar_matcher_stats st;
    loom_grammar_matcher_get_stats(m, &st);
    printf("qwen2 walks: %d checked steps, %d ended, %lld trie walks, %lld cache hits, %lld entries, %zu bytes\n",
           steps_checked, ended, (long long)st.mask_walks, (long long)st.cache_hits, (long long)st.cache_entries,
           st.cache_bytes);
    loom_grammar_matcher_free(m);
out:
    free(mask);
    free(allowed);
    free(hist);
    loom_grammar_free(g);
    loom_grammar_vocab_free(v);
    loom_tokenizer_free(tok);
}

/* <text> token references resolved with a tokenizer. */
static void token_text(void) {
    loom_tokenizer *tok = load_tok("qwen2");
    if (!tok) return;
    int32_t ids[4];
    int32_t nt = 0;
    CHECK(loom_tokenize(tok, "<|im_end|>", 10, false, true, ids, 4, &nt, NULL) == LOOM_OK && nt == 1);
    loom_grammar *g = compile("root ::= \"x\" <|im_end|>", tok);
    CHECK(g != NULL);
    loom_grammar_vocab *v = NULL;
    CHECK(loom_grammar_vocab_new(tok, &v, NULL) == LOOM_OK);
    loom_grammar_matcher *m = NULL;
    if (g && v && loom_grammar_matcher_new(g, v, NULL, &m, NULL) == LOOM_OK) {
        int32_t x = -1;
        int32_t n1 = 0;
        CHECK(loom_tokenize(tok, "x", 1, false, false, &x, 1, &n1, NULL) == LOOM_OK && n1 == 1);
        CHECK(loom_grammar_matcher_accept_token(m, x, NULL) == LOOM_OK);
        /* <|im_end|> is a control token with no text (and EOG) in qwen2: the
         * explicit reference allows it by id although the sentence is not complete */
        CHECK(!loom_grammar_matcher_is_accepting(m));
        CHECK(loom_grammar_matcher_allows(m, ids[0]));
        uint64_t *mask = calloc((size_t)(loom_tokenizer_n_vocab(tok) + 63) / 64, 8);
        CHECK(mask && loom_grammar_matcher_fill_mask(m, mask, loom_tokenizer_n_vocab(tok)) == LOOM_OK);
        int cnt = 0;
        for (int32_t t = 0; mask && t < loom_tokenizer_n_vocab(tok); t++) cnt += (int)((mask[t >> 6] >> (t & 63)) & 1);
        CHECK_EQ_INT(cnt, 1);
        CHECK(mask && ((mask[ids[0] >> 6] >> (ids[0] & 63)) & 1));
        free(mask);
        CHECK(loom_grammar_matcher_accept_token(m, ids[0], NULL) == LOOM_OK);
        CHECK(loom_grammar_matcher_is_accepting(m));
        CHECK(!loom_grammar_matcher_can_continue(m));
        loom_grammar_matcher_free(m);
    }
    loom_error err = {0};
    loom_grammar *g2 = NULL;
    CHECK(loom_grammar_new("root ::= <not one token>", 24, NULL, tok, &g2, &err) == LOOM_ERR_FORMAT);
    CHECK(strstr(err.msg, "is not a single token") != NULL);
    loom_grammar_vocab_free(v);
    loom_grammar_free(g);
    loom_tokenizer_free(tok);
}

/* Limits: nesting beyond max_depth is cut (consistently in checks, masks and
 * accepts); more parse stacks than max_stacks is an error on accept. */
static void limits(void) {
    loom_grammar *g = compile("root ::= \"[\" root \"]\" | \"x\"", NULL);
    const char *pieces[] = {"[", "]", "x", "[["};
    size_t lens[] = {1, 1, 1, 2};
    loom_grammar_vocab *v = NULL;
    CHECK(loom_grammar_vocab_new_from_pieces(4, pieces, lens, NULL, 0, &v, NULL) == LOOM_OK);
    loom_grammar_matcher_params p = loom_grammar_matcher_default_params();
    p.max_depth = 3;
    loom_grammar_matcher *m = NULL;
    CHECK(g && v && loom_grammar_matcher_new(g, v, &p, &m, NULL) == LOOM_OK);
    if (m) {
        /* each "[" pushes one return position ("]" after root) */
        CHECK(loom_grammar_matcher_accept_bytes(m, "[[[", 3, NULL) == LOOM_OK);
        CHECK(!loom_grammar_matcher_allows(m, 0)); /* a 4th level would exceed the depth */
        CHECK(!loom_grammar_matcher_allows(m, 3));
        CHECK(loom_grammar_matcher_allows(m, 2));
        uint64_t mask[1];
        CHECK(loom_grammar_matcher_fill_mask(m, mask, 4) == LOOM_OK);
        CHECK_EQ_INT(mask[0], 1u << 2);
        loom_error err = {0};
        CHECK(loom_grammar_matcher_accept_token(m, 0, &err) == LOOM_ERR_INVALID_ARG);
        CHECK(loom_grammar_matcher_accept_bytes(m, "x]]]", 4, NULL) == LOOM_OK);
        CHECK(loom_grammar_matcher_is_accepting(m));
        loom_grammar_matcher_free(m);
    }
    loom_grammar_free(g);
    /* ambiguity: (a | a a)* over "aaaa..." keeps two stacks per split point */
    g = compile("root ::= x* \"b\"\nx ::= y | y y\ny ::= \"a\" | \"a\" z\nz ::= \"\" | \"c\"", NULL);
    p = loom_grammar_matcher_default_params();
    p.max_stacks = 2;
    m = NULL;
    loom_error err = {0};
    loom_status st = g ? loom_grammar_matcher_new(g, NULL, &p, &m, &err) : LOOM_ERR_INVALID_ARG;
    if (st == LOOM_OK) {
        loom_error e2 = {0};
        st = loom_grammar_matcher_accept_bytes(m, "aaaa", 4, &e2);
        CHECK_MSG(st == LOOM_ERR_RANGE, "status %s: %s", loom_status_name(st), e2.msg);
        CHECK(strstr(e2.msg, "parse stacks") != NULL);
        loom_grammar_matcher_free(m);
    } else {
        CHECK(st == LOOM_ERR_RANGE && strstr(err.msg, "start state exceeds"));
    }
    p.max_stacks = 0;
    CHECK(g && loom_grammar_matcher_new(g, NULL, &p, &m, NULL) == LOOM_ERR_INVALID_ARG);
    loom_grammar_free(g);
    loom_grammar_vocab_free(v);
}

int main(void) {
    limits();
    small_vocab();
    qwen2_walks();
    token_text();
    return test_finish("test_grammar_matcher");
}
