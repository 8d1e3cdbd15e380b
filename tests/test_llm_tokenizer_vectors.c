/* Every vocabulary against llama.cpp: the published vectors
 * (tests/data/vocab/NAME.gguf.inp/.out, made from the Hugging Face tokenizers),
 * and llama.cpp's own outputs for 178 more strings with and without special
 * tokens (tests/data/vocab/extra); plus, per vocabulary, the round trip
 * (detokenize(tokenize(s)) == s for SPM/BPE, re-tokenization stable for the
 * normalising WordPiece/unigram), the streaming decoder (same bytes, chunks
 * valid UTF-8), a long input and invalid UTF-8. */
#include "tok_test_util.h"

static char g_path[4096];

static const char *src_path(const char *fmt, const char *name) {
    char rel[512];
    snprintf(rel, sizeof rel, fmt, name);
    snprintf(g_path, sizeof g_path, "%s/%s", LOOM_SOURCE_DIR, rel);
    return g_path;
}

/* Compare tokenize(strings) with the expected lines. */
static int check_set(const loom_tokenizer *t, const char *vname, const char *what, const tt_strings *in,
                     const tt_ids *exp, bool add, bool special) {
    CHECK_MSG(in->n == exp->n, "%s %s: %zu strings, %zu lines", vname, what, in->n, exp->n);
    int pass = 0;
    for (size_t i = 0; i < in->n && i < exp->n; i++) {
        int32_t n = 0;
        int32_t *ids = tt_tokenize(t, in->data + in->off[i], in->len[i], add, special, &n);
        bool ok = ids && tt_same(ids, (size_t)n, exp->ids[i], exp->cnt[i]);
        if (!ok) {
            fprintf(stderr, "%s %s string %zu (\"%.*s\"):\n  got:", vname, what, i, (int)(in->len[i] > 80 ? 80 : in->len[i]),
                    in->data + in->off[i]);
            for (int32_t k = 0; k < n && k < 40; k++) fprintf(stderr, " %d", ids[k]);
            fprintf(stderr, "\n  exp:");
            for (size_t k = 0; k < exp->cnt[i] && k < 40; k++) fprintf(stderr, " %d", exp->ids[i][k]);
            fputc('\n', stderr);
        }
        CHECK_MSG(ok, "%s %s string %zu", vname, what, i);
        pass += ok;
        free(ids);
    }
    return pass;
}

static bool has_special(const loom_tokenizer *t, const int32_t *ids, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        unsigned a = loom_token_get_attr(t, ids[i]);
        if (a & (LOOM_TOKEN_ATTR_CONTROL | LOOM_TOKEN_ATTR_USER_DEFINED | LOOM_TOKEN_ATTR_UNKNOWN)) return true;
        if (ids[i] == loom_tokenizer_unk(t)) return true;
    }
    return false;
}

/* Whether every character of s comes back from tokenize + detokenize on its
 * own: vocabularies that escape spaces cannot represent U+2581 itself, and
 * some byte-level vocabularies lack tokens for a few control bytes (llama.cpp
 * drops those bytes too). */
#define REP_CACHE 8192
static const loom_tokenizer *g_rep_tok;
static uint32_t g_rep_key[REP_CACHE]; /* UTF-8 bytes of the character + 1 (0 = empty) */
static bool g_rep_ok[REP_CACHE];

static bool representable(const loom_tokenizer *t, const char *s, size_t len) {
    if (g_rep_tok != t) { /* check_vocab resets g_rep_tok: tokenizers may reuse an address */
        memset(g_rep_key, 0, sizeof g_rep_key);
        g_rep_tok = t;
    }
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)s[i];
        size_t cl = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
        if (cl > len - i) return false;
        uint32_t key = 0;
        memcpy(&key, s + i, cl);
        key += 1;
        size_t h = (key * 2654435761u) % REP_CACHE;
        while (g_rep_key[h] && g_rep_key[h] != key) h = (h + 1) % REP_CACHE;
        if (g_rep_key[h] == key) {
            if (!g_rep_ok[h]) return false;
            i += cl;
            continue;
        }
        int32_t n = 0;
        int32_t *ids = tt_tokenize(t, s + i, cl, false, false, &n);
        char buf[64];
        size_t dl = 0;
        bool ok = ids && loom_detokenize(t, ids, n, 0, buf, sizeof buf, &dl) == LOOM_OK && dl == cl &&
                  memcmp(buf, s + i, cl) == 0;
        free(ids);
        g_rep_key[h] = key;
        g_rep_ok[h] = ok;
        if (!ok) return false;
        i += cl;
    }
    return true;
}

/* Vocabularies that keep every byte (no normalisation). */
static bool lossless(loom_vocab_type ty) {
    return ty == LOOM_VOCAB_SPM || ty == LOOM_VOCAB_BPE || ty == LOOM_VOCAB_RWKV || ty == LOOM_VOCAB_PLAMO2;
}

/* Round trip and stream decoding of one string. Returns true if checked exactly. */
static bool round_trip(const loom_tokenizer *t, const char *vname, const char *s, size_t len, int *n_exact,
                       int *n_stable) {
    int32_t n = 0;
    int32_t *ids = tt_tokenize(t, s, len, false, false, &n);
    CHECK_MSG(ids != NULL, "%s: tokenize failed", vname);
    if (!ids) return false;
    for (int32_t i = 0; i < n; i++) CHECK(ids[i] >= 0 && ids[i] < loom_tokenizer_n_vocab(t));
    if (n >= 2) {
        /* too small a buffer: LOOM_ERR_RANGE, the count needed, and the first ids written */
        int32_t half = n / 2, m = 0;
        int32_t *part = malloc(sizeof(int32_t) * (size_t)half);
        CHECK(part && loom_tokenize(t, s, len, false, false, part, half, &m, NULL) == LOOM_ERR_RANGE && m == n);
        CHECK_MSG(part && memcmp(part, ids, sizeof(int32_t) * (size_t)half) == 0, "%s: prefix of a RANGE result", vname);
        free(part);
    }
    size_t dl = 0;
    CHECK(loom_detokenize(t, ids, n, 0, NULL, 0, &dl) == (dl ? LOOM_ERR_RANGE : LOOM_OK));
    char *det = malloc(dl + 1);
    size_t dl2 = 0;
    CHECK(det && loom_detokenize(t, ids, n, 0, det, dl + 1, &dl2) == LOOM_OK && dl2 == dl);
    /* stream decoding gives the same bytes, in valid UTF-8 chunks when the text is valid */
    loom_detok_stream ds;
    loom_detok_stream_init(&ds, t, 0);
    size_t cap = loom_tokenizer_max_piece_len(t) + 4;
    char *chunk = malloc(cap), *acc = malloc(dl + 8);
    size_t an = 0;
    bool chunks_ok = true, valid = tt_valid_utf8(det, dl);
    for (int32_t k = 0; k < n && chunk && acc; k++) {
        size_t cn = 0;
        if (loom_detok_stream_push(&ds, ids[k], chunk, cap, &cn) != LOOM_OK || an + cn > dl) { chunks_ok = false; break; }
        if (valid && !tt_valid_utf8(chunk, cn)) chunks_ok = false;
        memcpy(acc + an, chunk, cn);
        an += cn;
    }
    size_t fn = 0;
    if (chunk && acc && loom_detok_stream_flush(&ds, chunk, cap, &fn) == LOOM_OK && an + fn <= dl) {
        memcpy(acc + an, chunk, fn);
        an += fn;
    } else {
        chunks_ok = false;
    }
    CHECK_MSG(chunks_ok && an == dl && memcmp(acc, det, dl) == 0, "%s: stream decode of \"%.*s\"", vname,
              (int)(len > 60 ? 60 : len), s);
    free(chunk);
    free(acc);
    loom_vocab_type ty = loom_tokenizer_type(t);
    bool checked = false;
    if (tt_valid_utf8(s, len) && !has_special(t, ids, n)) {
        /* HybriDNA upper-cases and pads the k-mers of <dna> spans */
        bool dna = !strcmp(loom_tokenizer_model_name(t), "hybriddna") && memmem(s, len, "<dna>", 5);
        if (lossless(ty) && !dna && representable(t, s, len)) {
            /* lossless vocabularies: the exact text comes back */
            bool ok = dl == len && memcmp(det, s, len) == 0;
            CHECK_MSG(ok, "%s: round trip of \"%.*s\" gave \"%.*s\"", vname, (int)(len > 60 ? 60 : len), s,
                      (int)(dl > 60 ? 60 : dl), det);
            *n_exact += ok;
            checked = true;
        } else if (!lossless(ty) && !dna) {
            /* normalising vocabularies: tokenizing the decoded text gives the same ids */
            int32_t n2 = 0;
            int32_t *ids2 = tt_tokenize(t, det, dl, false, false, &n2);
            bool ok = ids2 && tt_same(ids, (size_t)n, ids2, (size_t)n2);
            CHECK_MSG(ok, "%s: re-tokenizing \"%.*s\" (decoded \"%.*s\") changed the ids", vname,
                      (int)(len > 60 ? 60 : len), s, (int)(dl > 60 ? 60 : dl), det);
            *n_stable += ok;
            free(ids2);
            checked = true;
        }
    }
    free(det);
    free(ids);
    return checked;
}

static void check_vocab(const tt_vocab *v, const tt_strings *extra, const tt_ids *pre_unused) {
    (void)pre_unused;
    loom_tokenizer *t = tt_open(v);
    g_rep_tok = NULL;
    if (!t) return;
    int pub = -1, pub_n = 0, ex_plain = 0, ex_special = 0, n_exact = 0, n_stable = 0, n_rt = 0;
    tt_strings in;
    tt_ids exp;
    if (tt_read_inp(src_path("tests/data/vocab/ggml-vocab-%s.gguf.inp", v->name), &in)) {
        CHECK_MSG(tt_read_out(src_path("tests/data/vocab/ggml-vocab-%s.gguf.out", v->name), &exp), "%s .out", v->name);
        pub = check_set(t, v->name, "published", &in, &exp, false, false);
        pub_n = (int)in.n;
        for (size_t i = 0; i < in.n; i++) n_rt += round_trip(t, v->name, in.data + in.off[i], in.len[i], &n_exact, &n_stable);
        tt_free_ids(&exp);
        tt_free_strings(&in);
    }
    if (tt_read_out(src_path("tests/data/vocab/extra/%s.plain.out", v->name), &exp)) {
        ex_plain = check_set(t, v->name, "extra", extra, &exp, false, false);
        tt_free_ids(&exp);
    } else {
        CHECK_MSG(0, "%s: no extra/%s.plain.out", v->name, v->name);
    }
    if (tt_read_out(src_path("tests/data/vocab/extra/%s.special.out", v->name), &exp)) {
        ex_special = check_set(t, v->name, "extra+special", extra, &exp, true, true);
        tt_free_ids(&exp);
    } else {
        CHECK_MSG(0, "%s: no extra/%s.special.out", v->name, v->name);
    }
    for (size_t i = 0; i < extra->n; i++)
        n_rt += round_trip(t, v->name, extra->data + extra->off[i], extra->len[i], &n_exact, &n_stable);

    /* a long input (256 KiB of mixed text) tokenizes, detokenizes back for lossless vocabularies */
    size_t big_n = 1 << 18, at = 0;
    char *big = malloc(big_n);
    for (size_t i = 0; big && at < big_n; i = (i + 1) % extra->n) {
        size_t l = extra->len[i];
        if (!tt_valid_utf8(extra->data + extra->off[i], l) || !representable(t, extra->data + extra->off[i], l)) continue;
        if (at + l + 1 > big_n) break;
        memcpy(big + at, extra->data + extra->off[i], l);
        at += l;
        big[at++] = '\n';
    }
    int32_t n = 0;
    int32_t *ids = tt_tokenize(t, big, at, false, false, &n);
    CHECK_MSG(ids != NULL && n > 0, "%s: long input", v->name);
    loom_vocab_type ty = loom_tokenizer_type(t);
    if (ids && lossless(ty) && !has_special(t, ids, n)) {
        char *det = malloc(at + 16);
        size_t dl = 0;
        CHECK(det && loom_detokenize(t, ids, n, 0, det, at + 16, &dl) == LOOM_OK);
        CHECK_MSG(det && dl == at && memcmp(det, big, at) == 0, "%s: long input round trip", v->name);
        free(det);
    }
    free(ids);
    free(big);

    /* invalid UTF-8 and odd bytes never fail */
    static const char *const bad[] = {"\xf5\x80\x80\x80", "\xf7\xbf\xbf\xbf x", "a\xc0\xa0 b", "\xff\xfe\xfd",
                                      "\xe2\x96", "\xed\xbf\xbf", "\x00\x00", "<s\xff>", "\xc3"};
    static const size_t bad_len[] = {4, 6, 5, 3, 2, 3, 2, 4, 1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (int sp = 0; sp < 2; sp++) {
            int32_t *b = tt_tokenize(t, bad[i], bad_len[i], sp, sp, &n);
            CHECK_MSG(b != NULL, "%s: invalid input %zu", v->name, i);
            for (int32_t k = 0; b && k < n; k++) CHECK(b[k] >= 0 && b[k] < loom_tokenizer_n_vocab(t));
            free(b);
        }
    }
    printf("%-15s published %d/%d, extra %d/%zu, extra+special %d/%zu, round trips %d exact %d stable (of %d)\n",
           v->name, pub < 0 ? 0 : pub, pub_n, ex_plain, extra->n, ex_special, extra->n, n_exact, n_stable, n_rt);
    loom_tokenizer_free(t);
}

int main(int argc, char **argv) {
    tt_strings extra;
    CHECK(tt_read_inp(src_path("%s", "tests/data/vocab/extra/extra.inp"), &extra));
    for (size_t i = 0; i < TT_N_VOCABS; i++) {
        if (argc > 1 && strcmp(argv[1], TT_VOCABS[i].name) != 0) continue;
        check_vocab(&TT_VOCABS[i], &extra, NULL);
    }
    /* BPE merges by token-id pair are an optimisation of merges by text: the reference
     * path (forced by LOOM_TOKENIZER_TEXT_MERGES) gives the same ids */
    if (argc == 1) {
        setenv("LOOM_TOKENIZER_TEXT_MERGES", "1", 1);
        static const char *const ref[] = {"gpt-2", "llama-bpe", "gemma-4", "command-r"};
        for (size_t i = 0; i < TT_N_VOCABS; i++)
            for (size_t k = 0; k < sizeof ref / sizeof ref[0]; k++)
                if (!strcmp(TT_VOCABS[i].name, ref[k])) {
                    printf("(text merges) ");
                    check_vocab(&TT_VOCABS[i], &extra, NULL);
                }
        unsetenv("LOOM_TOKENIZER_TEXT_MERGES");
    }
    tt_free_strings(&extra);
    return test_finish("test_llm_tokenizer_vectors");
}
