/* Tokenizer unit tests: the stories260K golden tokenizations, byte fallback,
 * the streaming decoder, malformed vocabularies, the Unicode tables and the
 * pre-tokenizer regex engine. The vocabularies against llama.cpp are in
 * test_llm_tokenizer_vectors.c / _pre.c / _rules.c. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_internal.h"
#include "loom_gguf.h"
#include "loom_tokenizer.h"
#include "test_util.h"

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
        int32_t n = 0;
        CHECK(loom_tokenize(t, g[i].s, strlen(g[i].s), true, true, ids, 64, &n, NULL) == LOOM_OK);
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
    int32_t n = 0;
    CHECK(loom_tokenize(t, "<s>Lily", 7, false, true, ids, 64, &n, NULL) == LOOM_OK);
    CHECK(n >= 2 && ids[0] == 1);
    CHECK(loom_tokenize(t, "<s>Lily", 7, false, false, ids, 64, &n, NULL) == LOOM_OK);
    CHECK(n >= 2 && ids[0] != 1);
    /* byte fallback and piece rendering */
    char buf[16];
    size_t len = 0;
    CHECK(loom_token_to_piece(t, 3 + 'A', buf, sizeof buf, &len) == LOOM_OK); /* <0x41> */
    CHECK(len == 1 && buf[0] == 'A');
    CHECK(loom_token_to_piece(t, 1, buf, sizeof buf, &len) == LOOM_OK && len == 0); /* control */
    CHECK(loom_token_to_piece(t, 512, buf, sizeof buf, &len) == LOOM_ERR_RANGE);
    CHECK(loom_token_to_piece(t, -1, buf, sizeof buf, &len) == LOOM_ERR_RANGE);
    /* byte fallback round trip of characters without a piece (valid UTF-8) */
    const char raw[] = "\x01 z\xe2\x82\xac\xf0\x9f\xa6\x99";
    CHECK(loom_tokenize(t, raw, sizeof raw - 1, false, false, ids, 64, &n, NULL) == LOOM_OK);
    char det[64];
    CHECK(loom_detokenize(t, ids, n, 0, det, sizeof det, &len) == LOOM_OK);
    CHECK(len == sizeof raw - 1 && !memcmp(det, raw, len));
    CHECK(loom_detokenize(t, ids, n, 0, det, 2, &len) == LOOM_ERR_RANGE && len == sizeof raw - 1);
    /* invalid UTF-8 is cut by lead bytes as llama.cpp does ("\xff" takes four bytes, the
     * escaped space included), then falls back to bytes: nothing is lost but the space */
    const char bad[] = "\x01\xff\xc3 z\xe2\x82";
    CHECK(loom_tokenize(t, bad, sizeof bad - 1, false, false, ids, 64, &n, NULL) == LOOM_OK);
    CHECK(loom_detokenize(t, ids, n, 0, det, sizeof det, &len) == LOOM_OK);
    CHECK(len == 9 && !memcmp(det, "\x01\xff\xc3\xe2\x96\x81z\xe2\x82", 9));
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
    int32_t types[8] = {2, 3, 3, 1, 1, 1, 1, 1};
    loom_gguf_writer *w = NULL;
    if (loom_gguf_writer_new(&w) != LOOM_OK) return LOOM_ERR_NOMEM;
    const char *model = bad == BAD_MODEL ? "wordpiece" : bpe ? "gpt2" : "llama";
    loom_gguf_writer_add_str(w, "tokenizer.ggml.model", model, strlen(model));
    if (bad == BAD_TOKENS_TYPE) loom_gguf_writer_add_arr(w, "tokenizer.ggml.tokens", LOOM_GGUF_F32, scores, 8);
    else loom_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", toks, NULL, nt);
    loom_gguf_writer_add_arr(w, "tokenizer.ggml.scores", LOOM_GGUF_F32, scores, bad == BAD_SCORES_LEN ? 7 : 8);
    if (bad == BAD_TYPE_VAL) types[4] = 9;
    loom_gguf_writer_add_arr(w, "tokenizer.ggml.token_type", LOOM_GGUF_I32, types, bad == BAD_TYPES_LEN ? 7 : 8);
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
            int32_t n = 0;
            CHECK(loom_tokenize(t, "ab", 2, false, false, ids, 8, &n, NULL) == LOOM_OK);
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
        {BAD_BOS, false, LOOM_ERR_FORMAT},
        {BAD_TYPE_VAL, false, LOOM_ERR_FORMAT},
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

/* ---- Unicode tables (Unicode 15.1, the version llama.cpp's tables use) */
extern const char loom_unicode_version[];

static void check_unicode(void) {
    CHECK(!strcmp(loom_unicode_version, "15.1.0"));
    struct { uint32_t cp; unsigned flags; } k[] = {
        {'A', TOK_CP_LETTER}, {'7', TOK_CP_NUMBER}, {' ', TOK_CP_SEPARATOR | TOK_CP_WHITESPACE},
        {'\n', TOK_CP_CONTROL | TOK_CP_WHITESPACE}, {'$', TOK_CP_SYMBOL}, {'_', TOK_CP_PUNCT},
        {0xE9, TOK_CP_LETTER}, {0x0301, TOK_CP_MARK}, {0x0663, TOK_CP_NUMBER}, {0x00A0, TOK_CP_SEPARATOR | TOK_CP_WHITESPACE},
        {0x0085, TOK_CP_CONTROL | TOK_CP_WHITESPACE}, {0x200B, TOK_CP_CONTROL}, {0x3000, TOK_CP_SEPARATOR | TOK_CP_WHITESPACE},
        {0x4E2D, TOK_CP_LETTER}, {0x1F999, TOK_CP_SYMBOL}, {0x0378, TOK_CP_UNDEFINED}, {0xE000, TOK_CP_CONTROL},
        {0x2FFC, TOK_CP_SYMBOL /* new in 15.1 */}, {0x31EF, TOK_CP_SYMBOL /* new in 15.1 */},
        {0x2EBF0, TOK_CP_LETTER /* CJK extension I, 15.1 */}, {0x10FFFF, TOK_CP_UNDEFINED}, {0x110000, 0},
        {0x2028, TOK_CP_SEPARATOR | TOK_CP_WHITESPACE}, {0x1680, TOK_CP_SEPARATOR | TOK_CP_WHITESPACE},
        {0x16EE, TOK_CP_NUMBER /* runic letter number */}, {0x00B2, TOK_CP_NUMBER}, {0x02C2, TOK_CP_SYMBOL},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        CHECK_MSG(tok_cp_flags(k[i].cp) == k[i].flags, "flags of U+%04X: %#x, want %#x", k[i].cp,
                  tok_cp_flags(k[i].cp), k[i].flags);
    /* every code point has exactly one category */
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        unsigned f = tok_cp_flags(cp) & 0xFF;
        if (f == 0 || (f & (f - 1))) { CHECK_MSG(0, "U+%04X has category bits %#x", cp, f); break; }
    }
    CHECK_EQ_INT(tok_cp_tolower('Q'), 'q');
    CHECK_EQ_INT(tok_cp_tolower(0x0130), 'i');   /* I with dot above: simple mapping */
    CHECK_EQ_INT(tok_cp_tolower(0x03A3), 0x03C3); /* Sigma */
    CHECK_EQ_INT(tok_cp_tolower(0x212A), 'k');   /* Kelvin sign */
    CHECK_EQ_INT(tok_cp_tolower(0x1E9E), 0xDF);  /* capital sharp s */
    CHECK_EQ_INT(tok_cp_tolower(0x00DF), 0xDF);
    CHECK_EQ_INT(tok_cp_nfd_first(0xE9), 'e');
    CHECK_EQ_INT(tok_cp_nfd_first(0x1E09), 'c'); /* c with cedilla and acute */
    CHECK_EQ_INT(tok_cp_nfd_first(0xAC00), 0x1100); /* Hangul syllable -> leading jamo */
    CHECK_EQ_INT(tok_cp_nfd_first('e'), 'e');
    CHECK(tok_cp_is_han(0x4E2D) && !tok_cp_is_han(0x3042));
    /* lax decoding (llama.cpp): overlong and surrogate forms pass, bad continuations do not */
    uint32_t cp;
    CHECK(tok_utf8_decode_lax((const unsigned char *)"\xc0\x80", 2, &cp) == 2 && cp == 0);
    CHECK(tok_utf8_decode_lax((const unsigned char *)"\xed\xa0\x80", 3, &cp) == 3 && cp == 0xD800);
    CHECK(tok_utf8_decode_lax((const unsigned char *)"\xe2\x28\xa1", 3, &cp) == 1 && cp == TOK_CP_INVALID);
    CHECK(tok_utf8_decode_lax((const unsigned char *)"\xf8\x88", 2, &cp) == 1 && cp == TOK_CP_INVALID);
    CHECK(tok_utf8_decode((const unsigned char *)"\xc0\x80", 2, &cp) == 1 && cp == TOK_CP_INVALID);
}

/* ---- regex engine: std::regex (ECMAScript) semantics on hand-checked cases */
static void split_case(const char *pattern, const char *text, const char *want) {
    tok_regex *r = NULL;
    char why[128];
    CHECK_MSG(tok_regex_compile(pattern, &r, why, sizeof why) == LOOM_OK, "%s: %s", pattern, why);
    if (!r) return;
    uint32_t cps[256], sym[256];
    size_t n = tok_cps_from_utf8(text, strlen(text), cps);
    for (size_t i = 0; i < n; i++) sym[i] = tok_regex_collapsed(r) ? tok_sym_collapsed(cps[i]) : tok_sym_wide(cps[i]);
    tok_offs in = {0}, out = {0};
    tok_scratch sc;
    memset(&sc, 0, sizeof sc);
    tok_offs_push(&in, (uint32_t)n);
    CHECK(tok_regex_split(r, sym, &in, &out, &sc) == LOOM_OK);
    char got[512] = "";
    size_t at = 0, w = 0;
    for (size_t k = 0; k < out.n; k++) {
        /* pieces as "|"-separated code point strings */
        for (uint32_t j = 0; j < out.a[k]; j++) {
            unsigned char u[4];
            size_t l = loom_utf8_encode(cps[at + j], u);
            memcpy(got + w, u, l);
            w += l;
        }
        at += out.a[k];
        got[w++] = '|';
    }
    got[w] = 0;
    CHECK_MSG(!strcmp(got, want), "/%s/ on \"%s\": got \"%s\", want \"%s\"", pattern, text, got, want);
    free(in.a);
    free(out.a);
    tok_scratch_free(&sc);
    tok_regex_free(r);
}

static void check_regex(void) {
    split_case("a|ab", "abab", "a|b|a|b|");                     /* first alternative wins, not the longest */
    split_case("\\s+$", "a  b  ", "a  b|  |");                  /* $ only at the end of the piece */
    split_case("\\s+(?!\\S)", "a   b", "a|  | b|");             /* lookahead leaves one space */
    split_case("\\p{N}{1,3}", "12345x6", "123|45|x|6|");
    split_case("(?=(\\d{3})+(?!\\d))", "1234567", "1||234||567|"); /* empty matches before groups of 3 */
    split_case("[\\p{L}]+", "ab\xc3\xa9 \xe4\xb8\xad" "1", "ab\xc3\xa9| |\xe4\xb8\xad|1|"); /* collapsed letters */
    split_case("[^\\s\\p{L}]+", "a..\xe3\x80\x80" "b", "a|..|\xe3\x80\x80" "b|"); /* U+3000 is \\s; text between matches is one piece */
    split_case("[\xe4\xb8\x80-\xe9\xbe\xa5]+", "x\xe4\xb8\xad\xe6\x96\x87y", "x|\xe4\xb8\xad\xe6\x96\x87|y|"); /* code points */
    split_case("((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*", "HTTPServer", "HTTPServer|");
    split_case("(IMGIMG)((A|B|C){1,4})Z", "xIMGIMGABZy", "x|IMGIMGABZ|y|");
    tok_regex *r = NULL;
    char why[128];
    CHECK(tok_regex_compile("(a*)*", &r, why, sizeof why) == LOOM_ERR_FORMAT && r == NULL); /* empty loop refused */
    CHECK(tok_regex_compile("\\p{L}\xc3\xa9", &r, why, sizeof why) == LOOM_ERR_FORMAT && r == NULL);
    CHECK(tok_regex_compile("a+?", &r, why, sizeof why) == LOOM_ERR_FORMAT && r == NULL);
}

int main(void) {
    check_stories();
    check_malformed();
    check_unicode();
    check_regex();
    return test_finish("test_llm_tokenizer");
}
