/* libFuzzer target: GBNF grammars. The input is a grammar, optionally followed
 * by "\n%%\n" and bytes to match. A rejected grammar must come with a message;
 * a compiled one is run: the bytes are fed in chunks of 1-3 bytes to a byte
 * matcher; over a small vocabulary (pieces of 1-3 bytes, UTF-8 fragments, an
 * empty piece and an EOG token) the token mask must equal allows() for every
 * token, and allows() must equal a brute-force replay of the accepted bytes
 * plus the piece; a few allowed tokens are accepted. Limits are lowered so a
 * step stays fast. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_grammar.h"

static const char *const PIECES[] = {"a", "b", "ab", " ", "\n", "\"", "{", "}", "[", "]", ",", ":", "0", "12", "-",
                                     "x", "(", ")", "\\", "\xc3", "\xa9", "\xc3\xa9", "\xe2\x82", "\xac", "ok", "",
                                     "<e>"};
#define N_PIECES ((int32_t)(sizeof PIECES / sizeof PIECES[0]))

static loom_grammar_vocab *g_vocab;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    size_t lens[N_PIECES];
    for (int i = 0; i < N_PIECES; i++) lens[i] = strlen(PIECES[i]);
    lens[N_PIECES - 1] = 0; /* the EOG token has no text */
    int32_t eog = N_PIECES - 1;
    if (loom_grammar_vocab_new_from_pieces(N_PIECES, PIECES, lens, &eog, 1, &g_vocab, NULL) != LOOM_OK) abort();
    return 0;
}

/* 1: history + piece accepted, 0: rejected, -1: a stack limit was hit (no verdict). */
static int replay(const loom_grammar *g, const loom_grammar_matcher_params *p, const uint8_t *hist, size_t hn,
                  const char *piece) {
    loom_grammar_matcher *m = NULL;
    if (loom_grammar_matcher_new(g, NULL, p, &m, NULL) != LOOM_OK) return -1;
    loom_status s = loom_grammar_matcher_accept_bytes(m, hist, hn, NULL);
    if (s == LOOM_OK) s = loom_grammar_matcher_accept_bytes(m, piece, strlen(piece), NULL);
    loom_grammar_matcher_free(m);
    return s == LOOM_OK ? 1 : s == LOOM_ERR_RANGE ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size > 1 << 14) return 0;
    const uint8_t *sep = NULL;
    for (size_t i = 0; i + 4 <= size; i++)
        if (!memcmp(data + i, "\n%%\n", 4)) {
            sep = data + i;
            break;
        }
    size_t glen = sep ? (size_t)(sep - data) : size;
    const uint8_t *bytes = sep ? sep + 4 : data + size;
    size_t blen = (size_t)(data + size - bytes);
    loom_grammar *g = NULL;
    loom_error err = {0};
    loom_status st = loom_grammar_new((const char *)data, glen, NULL, NULL, &g, &err);
    if (st != LOOM_OK) {
        if (g || !err.msg[0] || st == LOOM_ERR_INTERNAL) abort();
        return 0;
    }
    loom_grammar_matcher_params p = loom_grammar_matcher_default_params();
    p.max_stacks = 64;
    p.max_depth = 64;
    loom_grammar_matcher *m = NULL, *tm = NULL;
    if (loom_grammar_matcher_new(g, NULL, &p, &m, &err) != LOOM_OK) {
        if (!err.msg[0]) abort();
        loom_grammar_free(g);
        return 0;
    }
    /* bytes in chunks */
    uint8_t hist[256];
    size_t hn = 0;
    for (size_t i = 0; i < blen;) {
        size_t n = 1 + (bytes[i] % 3);
        if (n > blen - i) n = blen - i;
        loom_error e2 = {0};
        loom_status s = loom_grammar_matcher_accept_bytes(m, bytes + i, n, &e2);
        if (s == LOOM_OK) {
            if (hn + n <= sizeof hist) memcpy(hist + hn, bytes + i, n);
            hn += n;
        } else if (!e2.msg[0] || s == LOOM_ERR_INTERNAL) {
            abort();
        }
        i += n;
    }
    /* tokens (compared with byte replays unless the grammar matches tokens by id) */
    loom_grammar_info info;
    loom_grammar_get_info(g, &info);
    bool by_bytes = info.n_token_refs == 0;
    if (loom_grammar_matcher_new(g, g_vocab, &p, &tm, &err) == LOOM_OK) {
        uint64_t mask[1];
        hn = 0;
        for (int step = 0; step < 6; step++) {
            if (loom_grammar_matcher_fill_mask(tm, mask, N_PIECES) != LOOM_OK) break;
            int32_t pick = -1;
            for (int32_t t = 0; t < N_PIECES; t++) {
                bool in = (mask[0] >> t) & 1;
                if (in != loom_grammar_matcher_allows(tm, t)) abort();
                if (by_bytes && t < N_PIECES - 2 && hn + strlen(PIECES[t]) <= sizeof hist) {
                    int want = replay(g, &p, hist, hn, PIECES[t]);
                    if (want >= 0 && in != (want == 1)) abort();
                }
                if (by_bytes && t == N_PIECES - 1 && in != loom_grammar_matcher_is_accepting(tm)) abort();
                if (in && t < N_PIECES - 2 && (pick < 0 || (size + (size_t)step) % 3 == 0)) pick = t;
            }
            if (pick < 0) break;
            loom_error e3 = {0};
            loom_status s = loom_grammar_matcher_accept_token(tm, pick, &e3);
            if (s == LOOM_ERR_RANGE) break; /* stack limit: a documented error */
            if (s != LOOM_OK) abort();
            size_t pl = strlen(PIECES[pick]);
            if (hn + pl > sizeof hist) break;
            memcpy(hist + hn, PIECES[pick], pl);
            hn += pl;
        }
        loom_grammar_matcher_free(tm);
    }
    loom_grammar_matcher_free(m);
    loom_grammar_free(g);
    return 0;
}
