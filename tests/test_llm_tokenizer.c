/* Tokenizer against the published llama.cpp vocabulary vectors
 * (tests/data/vocab/ggml-vocab-NAME.gguf.inp/.out), the stories260K golden tokenizations, round
 * trips, the streaming decoder and malformed vocabularies. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_gguf.h"
#include "loom_tokenizer.h"
#include "test_util.h"

static char *read_file(const char *path, size_t *n) {
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

static loom_tokenizer *open_tok(const char *rel, loom_gguf **gout) {
    loom_gguf *g = NULL;
    loom_error err = {0};
    if (loom_gguf_open(test_path(rel), NULL, &g, &err) != LOOM_OK) {
        fprintf(stderr, "open %s: %s\n", rel, err.msg);
        return NULL;
    }
    loom_tokenizer *t = NULL;
    if (loom_tokenizer_new_from_gguf(g, &t, &err) != LOOM_OK) fprintf(stderr, "tokenizer %s: %s\n", rel, err.msg);
    if (gout) *gout = g;
    else loom_gguf_close(g);
    return t;
}

static bool valid_utf8(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t need = u[i] < 0x80 ? 1 : (u[i] >> 5) == 6 ? 2 : (u[i] >> 4) == 14 ? 3 : (u[i] >> 3) == 30 ? 4 : 0;
        if (!need || i + need > n) return false;
        for (size_t k = 1; k < need; k++) if ((u[i + k] & 0xC0) != 0x80) return false;
        i += need;
    }
    return true;
}

static const char SEP[] = "\n__ggml_vocab_test__\n";

static void check_vectors(const char *name) {
    char rel[200], inp[256], outp[256];
    snprintf(rel, sizeof rel, "tests/data/vocab/ggml-vocab-%s.gguf", name);
    snprintf(inp, sizeof inp, "%s.inp", rel);
    snprintf(outp, sizeof outp, "%s.out", rel);
    loom_tokenizer *t = open_tok(rel, NULL);
    CHECK_MSG(t != NULL, "%s", name);
    if (!t) return;
    size_t in_n = 0, out_n = 0;
    char *in = read_file(test_path(inp), &in_n), *out = read_file(test_path(outp), &out_n);
    CHECK(in && out);
    if (!in || !out) { free(in); free(out); loom_tokenizer_free(t); return; }
    int n_str = 0, n_pass = 0, n_rt = 0;
    char *p = in, *line = out;
    int32_t *ids = malloc(sizeof(int32_t) * 65536);
    char *det = malloc(1 << 20);
    for (;;) {
        char *e = strstr(p, SEP);
        if (!e) break;
        size_t len = (size_t)(e - p);
        char *nl = strchr(line, '\n');
        if (!nl) { CHECK_MSG(0, "%s: .out has fewer lines than .inp", name); break; }
        *nl = 0;
        /* expected ids */
        int32_t exp[4096];
        int ne = 0;
        for (char *q = line; *q;) {
            char *end;
            long v = strtol(q, &end, 10);
            if (end == q) break;
            exp[ne++] = (int32_t)v;
            q = end;
        }
        int64_t n = 0;
        loom_status st = loom_tokenize(t, p, len, false, false, ids, 65536, &n);
        bool ok = st == LOOM_OK && n == ne;
        for (int64_t k = 0; ok && k < n; k++) ok = ids[k] == exp[k];
        n_str++;
        n_pass += ok;
        if (!ok) {
            fprintf(stderr, "%s: string %d (\"%.*s\") mismatch\n  got:", name, n_str, (int)len, p);
            for (int64_t k = 0; k < n; k++) fprintf(stderr, " %d", ids[k]);
            fprintf(stderr, "\n  exp: %s\n", line);
        }
        CHECK_MSG(ok, "%s string %d", name, n_str);
        /* round trip + streaming decoder */
        size_t dl = 0;
        st = loom_detokenize(t, ids, n, 0, det, 1 << 20, &dl);
        bool rt = st == LOOM_OK && dl == len && memcmp(det, p, len) == 0;
        n_rt += rt;
        CHECK_MSG(rt, "%s round trip of string %d", name, n_str);
        loom_detok_stream ds;
        loom_detok_stream_init(&ds, t, 0);
        char chunk[1024], acc[65536];
        size_t an = 0;
        bool chunks_ok = true;
        for (int64_t k = 0; k < n; k++) {
            size_t cn = 0;
            if (loom_detok_stream_push(&ds, ids[k], chunk, sizeof chunk, &cn) != LOOM_OK) { chunks_ok = false; break; }
            if (!valid_utf8(chunk, cn)) chunks_ok = false;
            memcpy(acc + an, chunk, cn);
            an += cn;
        }
        size_t fn = 0;
        CHECK(loom_detok_stream_flush(&ds, chunk, sizeof chunk, &fn) == LOOM_OK);
        CHECK_MSG(fn == 0, "%s string %d: %zu bytes held back at the end", name, n_str, fn);
        CHECK_MSG(chunks_ok && an == dl && memcmp(acc, det, dl) == 0, "%s stream decode of string %d", name, n_str);
        p = e + strlen(SEP);
        line = nl + 1;
    }
    CHECK_MSG(n_str == 46, "%s: %d strings", name, n_str);
    printf("vocab %-10s: %d/%d strings match, %d/%d round trip\n", name, n_pass, n_str, n_rt, n_str);
    /* RANGE when the buffer is too small */
    int64_t n = 0;
    CHECK(loom_tokenize(t, "Hello world", 11, false, false, ids, 1, &n) == LOOM_ERR_RANGE);
    CHECK(n >= 2);
    CHECK(loom_tokenize(t, "Hello world", 11, false, false, NULL, 0, &n) == LOOM_ERR_RANGE);
    free(ids);
    free(det);
    free(in);
    free(out);
    loom_tokenizer_free(t);
}

static void check_stories(void) {
    loom_tokenizer *t = open_tok("models/stories260K.gguf", NULL);
    CHECK(t != NULL);
    if (!t) return;
    CHECK_EQ_INT(loom_tokenizer_n_vocab(t), 512);
    CHECK_EQ_INT(loom_tokenizer_bos(t), 1);
    CHECK_EQ_INT(loom_tokenizer_eos(t), 2);
    CHECK(loom_tokenizer_is_eog(t, 2));
    CHECK(!loom_tokenizer_is_eog(t, 1));
    /* golden values copied from tests/data/stories260K.json ("tokenize") */
    static const struct { const char *s; int n; int32_t ids[8]; } g[] = {
        {"hello, world", 8, {1, 281, 306, 414, 432, 263, 304, 341}},
        {"tiktok", 7, {1, 259, 417, 433, 413, 414, 433}},
        {"Lily", 2, {1, 317}},
        {"Hello world", 7, {1, 346, 306, 414, 263, 304, 341}},
    };
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) {
        int32_t ids[64];
        int64_t n = 0;
        CHECK(loom_tokenize(t, g[i].s, strlen(g[i].s), true, true, ids, 64, &n) == LOOM_OK);
        bool ok = n == g[i].n;
        for (int k = 0; ok && k < n; k++) ok = ids[k] == g[i].ids[k];
        CHECK_MSG(ok, "stories260K tokenize \"%s\"", g[i].s);
        char buf[256];
        size_t len;
        CHECK(loom_detokenize(t, ids, n, 0, buf, sizeof buf, &len) == LOOM_OK);
        CHECK_MSG(len == strlen(g[i].s) && !memcmp(buf, g[i].s, len), "stories detok \"%s\"", g[i].s);
    }
    /* parse_special: "<s>" is BOS only when asked */
    int32_t ids[64];
    int64_t n = 0;
    CHECK(loom_tokenize(t, "<s>Lily", 7, false, true, ids, 64, &n) == LOOM_OK);
    CHECK(n >= 2 && ids[0] == 1);
    CHECK(loom_tokenize(t, "<s>Lily", 7, false, false, ids, 64, &n) == LOOM_OK);
    CHECK(n >= 2 && ids[0] != 1);
    /* byte fallback and piece rendering */
    char buf[16];
    size_t len = 0;
    CHECK(loom_token_to_piece(t, 3 + 'A', buf, sizeof buf, &len) == LOOM_OK); /* <0x41> */
    CHECK(len == 1 && buf[0] == 'A');
    CHECK(loom_token_to_piece(t, 1, buf, sizeof buf, &len) == LOOM_OK && len == 0); /* control */
    CHECK(loom_token_to_piece(t, 512, buf, sizeof buf, &len) == LOOM_ERR_RANGE);
    CHECK(loom_token_to_piece(t, -1, buf, sizeof buf, &len) == LOOM_ERR_RANGE);
    /* byte fallback round trip of arbitrary bytes */
    const char raw[] = "\x01\xff\xc3 z\xe2\x82";
    CHECK(loom_tokenize(t, raw, sizeof raw - 1, false, false, ids, 64, &n) == LOOM_OK);
    char det[64];
    CHECK(loom_detokenize(t, ids, n, 0, det, sizeof det, &len) == LOOM_OK);
    CHECK(len == sizeof raw - 1 && !memcmp(det, raw, len));
    CHECK(loom_detokenize(t, ids, n, 0, det, 2, &len) == LOOM_ERR_RANGE && len == sizeof raw - 1);
    /* streaming: a 3-byte character split over byte tokens is held back */
    loom_detok_stream ds;
    loom_detok_stream_init(&ds, t, 0);
    int32_t euro[3] = {3 + 0xE2, 3 + 0x82, 3 + 0xAC};
    char out[32];
    size_t on = 0;
    CHECK(loom_detok_stream_push(&ds, euro[0], out, sizeof out, &on) == LOOM_OK && on == 0);
    CHECK(loom_detok_stream_push(&ds, euro[1], out, sizeof out, &on) == LOOM_OK && on == 0);
    CHECK(loom_detok_stream_push(&ds, euro[2], out, sizeof out, &on) == LOOM_OK && on == 3);
    CHECK(on == 3 && !memcmp(out, "\xE2\x82\xAC", 3));
    CHECK(loom_detok_stream_push(&ds, euro[0], out, sizeof out, &on) == LOOM_OK && on == 0);
    CHECK(loom_detok_stream_flush(&ds, out, sizeof out, &on) == LOOM_OK && on == 1 && (unsigned char)out[0] == 0xE2);
    loom_tokenizer_free(t);
}

/* ---- malformed vocabularies built with the GGUF writer */
typedef enum { BAD_NONE, BAD_SCORES_LEN, BAD_TYPES_LEN, BAD_BOS, BAD_TYPE_VAL, BAD_TOKENS_TYPE, BAD_MODEL,
               BAD_MERGE, BAD_NO_MERGES, BAD_BOS_TYPE, BAD_PRE } bad_kind;

static loom_status make_vocab(bad_kind bad, bool bpe, loom_error *err) {
    static const char *toks[] = {"<unk>", "<s>", "</s>", "a", "b", "ab", "\xE2\x96\x81", "\xC4\xA0"};
    const int nt = 8;
    float scores[8] = {0, 0, 0, -1, -2, -0.5f, -3, -4};
    int32_t types[9] = {2, 3, 3, 1, 1, 1, 1, 1, 1}; /* 9: room for the too-long case */
    loom_gguf_writer *w = NULL;
    if (loom_gguf_writer_new(&w) != LOOM_OK) return LOOM_ERR_NOMEM;
    const char *model = bad == BAD_MODEL ? "wordpiece" : bpe ? "gpt2" : "llama";
    loom_gguf_writer_add_str(w, "tokenizer.ggml.model", model, strlen(model));
    if (bad == BAD_TOKENS_TYPE) loom_gguf_writer_add_arr(w, "tokenizer.ggml.tokens", LOOM_GGUF_F32, scores, 8);
    else loom_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, nt);
    loom_gguf_writer_add_arr(w, "tokenizer.ggml.scores", LOOM_GGUF_F32, scores, bad == BAD_SCORES_LEN ? 7 : 8);
    if (bad == BAD_TYPE_VAL) types[4] = 9;
    loom_gguf_writer_add_arr(w, "tokenizer.ggml.token_type", LOOM_GGUF_I32, types, bad == BAD_TYPES_LEN ? 9 : 8);
    if (bad == BAD_BOS_TYPE) loom_gguf_writer_add_str(w, "tokenizer.ggml.bos_token_id", "1", 1);
    else loom_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", bad == BAD_BOS ? 8 : 1);
    loom_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", 2);
    if (bpe) {
        const char *pre = bad == BAD_PRE ? "no-such-pre" : "gpt-2";
        loom_gguf_writer_add_str(w, "tokenizer.ggml.pre", pre, strlen(pre));
        const char *merges[] = {"a b", bad == BAD_MERGE ? "ab" : "b a"};
        if (bad != BAD_NO_MERGES) loom_gguf_writer_add_arr_str(w, "tokenizer.ggml.merges", merges, NULL, 2);
    }
    void *data = NULL;
    size_t size = 0;
    loom_status st = loom_gguf_writer_write_memory(w, &data, &size, err);
    loom_gguf_writer_free(w);
    if (st != LOOM_OK) return st;
    loom_gguf *g = NULL;
    st = loom_gguf_open_memory(data, size, &g, err);
    if (st == LOOM_OK) {
        loom_tokenizer *t = NULL;
        loom_error_clear(err);
        st = loom_tokenizer_new_from_gguf(g, &t, err);
        if (st == LOOM_OK) {
            /* the good vocab works: "ab" is one merge away */
            int32_t ids[8];
            int64_t n = 0;
            CHECK(loom_tokenize(t, "ab", 2, false, false, ids, 8, &n) == LOOM_OK);
            CHECK_MSG(n == (bpe ? 1 : 2) && ids[n - 1] == 5, "tiny vocab n=%lld", (long long)n);
        } else {
            CHECK(t == NULL);
        }
        loom_tokenizer_free(t);
        loom_gguf_close(g);
    }
    free(data);
    return st;
}

static void check_malformed(void) {
    loom_error err = {0};
    CHECK_EQ_INT(make_vocab(BAD_NONE, false, &err), LOOM_OK);
    CHECK_EQ_INT(make_vocab(BAD_NONE, true, &err), LOOM_OK);
    struct { bad_kind k; bool bpe; loom_status want; } cases[] = {
        {BAD_SCORES_LEN, false, LOOM_ERR_FORMAT}, {BAD_TYPES_LEN, false, LOOM_ERR_FORMAT},
        {BAD_BOS, false, LOOM_ERR_FORMAT},        {BAD_TYPE_VAL, false, LOOM_ERR_FORMAT},
        {BAD_TOKENS_TYPE, false, LOOM_ERR_FORMAT}, {BAD_MODEL, false, LOOM_ERR_UNSUPPORTED},
        {BAD_MERGE, true, LOOM_ERR_FORMAT},       {BAD_NO_MERGES, true, LOOM_ERR_FORMAT},
        {BAD_BOS_TYPE, true, LOOM_ERR_FORMAT},    {BAD_PRE, true, LOOM_ERR_UNSUPPORTED},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        loom_error_clear(&err);
        loom_status st = make_vocab(cases[i].k, cases[i].bpe, &err);
        CHECK_MSG(st == cases[i].want, "malformed case %zu: got %s (%s)", i, loom_status_name(st), err.msg);
        CHECK_MSG(err.msg[0] != 0, "malformed case %zu has a message", i);
    }
    loom_tokenizer *t = (loom_tokenizer *)1;
    CHECK(loom_tokenizer_new_from_gguf(NULL, &t, &err) == LOOM_ERR_INVALID_ARG && t == NULL);
}

int main(void) {
    check_stories();
    const char *names[] = {"llama-spm", "phi-3", "gpt-2", "llama-bpe", "qwen2"};
    for (int i = 0; i < 5; i++) check_vectors(names[i]);
    check_malformed();
    return test_finish("test_llm_tokenizer");
}
