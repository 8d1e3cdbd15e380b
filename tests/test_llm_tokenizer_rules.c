/* llama.cpp's vocabulary rules: for every test vocabulary, the special ids,
 * the add_bos/eos/sep flags, the end-of-generation set and the attribute of
 * every token (control-looking tokens overridden to CONTROL, lstrip/rstrip,
 * unused) equal llama.cpp's (tests/data/vocab/extra/NAME.facts, written by
 * llama.cpp). Then the rules on small synthetic vocabularies: overrides,
 * gpt-oss's always-USER_DEFINED tokens, <|end|> with <|return|>/<|call|>,
 * parse_special on and off, lstrip/rstrip, [CLS]/[SEP] framing, and the
 * errors for unsupported tokenizers (naming the file and the keys). */
#include "llm/tokenizer_internal.h"
#include "tok_test_util.h"

static void check_facts(const tt_vocab *v) {
    char p[4096];
    snprintf(p, sizeof p, "%s/tests/data/vocab/extra/%s.facts", LOOM_SOURCE_DIR, v->name);
    size_t n = 0;
    char *f = tt_read_file(p, &n);
    CHECK_MSG(f != NULL, "%s.facts", v->name);
    loom_tokenizer *t = tt_open(v);
    if (!f || !t) { free(f); loom_tokenizer_free(t); return; }
    int32_t nv = loom_tokenizer_n_vocab(t);
    int *attr = malloc((size_t)nv * sizeof(int));
    bool *eog = calloc((size_t)nv, 1);
    for (int32_t i = 0; i < nv; i++) attr[i] = LOOM_TOKEN_ATTR_NORMAL;
    int bad_attr = 0, bad_eog = 0;
    for (char *line = f; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) *nl = 0;
        int a, b, c, d, e, g;
        if (sscanf(line, "bos %d", &a) == 1) CHECK_MSG(loom_tokenizer_bos(t) == a, "%s bos %d vs %d", v->name, loom_tokenizer_bos(t), a);
        else if (sscanf(line, "eos %d", &a) == 1) CHECK_MSG(loom_tokenizer_eos(t) == a, "%s eos", v->name);
        else if (sscanf(line, "eot %d", &a) == 1) CHECK_MSG(loom_tokenizer_eot(t) == a, "%s eot %d vs %d", v->name, loom_tokenizer_eot(t), a);
        else if (sscanf(line, "sep %d", &a) == 1) CHECK_MSG(loom_tokenizer_sep(t) == a, "%s sep", v->name);
        else if (sscanf(line, "pad %d", &a) == 1) CHECK_MSG(loom_tokenizer_pad(t) == a, "%s pad", v->name);
        else if (sscanf(line, "mask %d", &a) == 1) CHECK_MSG(loom_tokenizer_mask(t) == a, "%s mask", v->name);
        else if (sscanf(line, "fim %d %d %d %d %d %d", &a, &b, &c, &d, &e, &g) == 6)
            CHECK_MSG(t->fim_pre == a && t->fim_suf == b && t->fim_mid == c && t->fim_pad == d && t->fim_rep == e &&
                          t->fim_sep == g, "%s fim ids", v->name);
        else if (sscanf(line, "add %d %d %d", &a, &b, &c) == 3)
            CHECK_MSG(loom_tokenizer_add_bos(t) == (a != 0) && loom_tokenizer_add_eos(t) == (b != 0) &&
                          loom_tokenizer_add_sep(t) == (c != 0), "%s add flags", v->name);
        else if (sscanf(line, "attr %d %d", &a, &b) == 2 && a >= 0 && a < nv) attr[a] = b;
        else if (!strncmp(line, "eog", 3)) {
            for (char *q = line + 3; *q;) {
                char *end;
                long id = strtol(q, &end, 10);
                if (end == q) break;
                if (id >= 0 && id < nv) eog[id] = true;
                q = end;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    for (int32_t i = 0; i < nv; i++) {
        if ((int)loom_token_get_attr(t, i) != attr[i]) {
            if (bad_attr++ < 5)
                fprintf(stderr, "%s: token %d attr %u, llama.cpp %d\n", v->name, i, loom_token_get_attr(t, i), attr[i]);
        }
        if (loom_tokenizer_is_eog(t, i) != eog[i]) {
            if (bad_eog++ < 5) fprintf(stderr, "%s: token %d eog %d\n", v->name, i, (int)eog[i]);
        }
    }
    CHECK_MSG(bad_attr == 0, "%s: %d token attributes differ", v->name, bad_attr);
    CHECK_MSG(bad_eog == 0, "%s: %d end-of-generation flags differ", v->name, bad_eog);
    free(attr);
    free(eog);
    free(f);
    loom_tokenizer_free(t);
}

/* ---- synthetic vocabularies */

typedef struct syn {
    const char *model, *pre, *name;
    const char **toks;
    const int32_t *types;
    int n;
    const char **merges;
    int n_merges;
    int32_t bos, eos;
    const int32_t *suppress; /* tokenizer.ggml.suppress_tokens (NULL: none) */
    int n_suppress;
    bool suppress_u32;       /* write it as a UINT32 array (llama.cpp refuses that type) */
} syn;

static loom_tokenizer *syn_open(const syn *s, loom_error *err, loom_status *st_out) {
    loom_gguf_writer *w = NULL;
    loom_status st = loom_gguf_writer_new(&w);
    if (s->name) loom_gguf_writer_add_str(w, "general.name", s->name, strlen(s->name));
    loom_gguf_writer_add_str(w, "tokenizer.ggml.model", s->model, strlen(s->model));
    if (s->pre) loom_gguf_writer_add_str(w, "tokenizer.ggml.pre", s->pre, strlen(s->pre));
    loom_gguf_writer_add_arr_str(w, "tokenizer.ggml.tokens", s->toks, NULL, (uint64_t)s->n);
    if (s->types) loom_gguf_writer_add_arr(w, "tokenizer.ggml.token_type", LOOM_GGUF_I32, s->types, (uint64_t)s->n);
    if (s->merges) loom_gguf_writer_add_arr_str(w, "tokenizer.ggml.merges", s->merges, NULL, (uint64_t)s->n_merges);
    if (s->bos >= 0) loom_gguf_writer_add_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)s->bos);
    if (s->eos >= 0) loom_gguf_writer_add_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)s->eos);
    if (s->suppress)
        loom_gguf_writer_add_arr(w, "tokenizer.ggml.suppress_tokens", s->suppress_u32 ? LOOM_GGUF_U32 : LOOM_GGUF_I32,
                                 s->suppress, (uint64_t)s->n_suppress);
    void *data = NULL;
    size_t size = 0;
    if (st == LOOM_OK) st = loom_gguf_writer_write_memory(w, &data, &size, err);
    loom_gguf_writer_free(w);
    loom_gguf *g = NULL;
    loom_tokenizer *t = NULL;
    if (st == LOOM_OK) st = loom_gguf_open_memory(data, size, &g, err);
    if (st == LOOM_OK) st = loom_tokenizer_new_from_gguf(g, &t, err);
    loom_gguf_close(g);
    free(data);
    if (st_out) *st_out = st;
    return t;
}

static bool ids_eq(const loom_tokenizer *t, const char *s, bool add, bool sp, const int32_t *exp, int ne) {
    int32_t n = 0;
    int32_t *ids = tt_tokenize(t, s, strlen(s), add, sp, &n);
    bool ok = ids && tt_same(ids, (size_t)n, exp, (size_t)ne);
    if (!ok) {
        fprintf(stderr, "\"%s\" ->", s);
        for (int32_t i = 0; ids && i < n; i++) fprintf(stderr, " %d", ids[i]);
        fputc('\n', stderr);
    }
    free(ids);
    return ok;
}

/* Byte-level BPE vocabulary: the 256 byte symbols, then added tokens. */
static void check_bpe_rules(void) {
    static char bytes[256][3];
    const char *toks[270];
    int32_t types[270];
    int n = 0;
    for (int b = 0; b < 256; b++) {
        /* GPT-2 byte alphabet */
        static int extra = 0;
        unsigned cp = ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) ? (unsigned)b
                                                                                                   : 256u + (unsigned)extra++;
        if (cp < 0x80) { bytes[b][0] = (char)cp; bytes[b][1] = 0; }
        else { bytes[b][0] = (char)(0xC0 | (cp >> 6)); bytes[b][1] = (char)(0x80 | (cp & 0x3F)); bytes[b][2] = 0; }
        toks[n] = bytes[b];
        types[n++] = LOOM_TOKEN_NORMAL;
    }
    const char *added[] = {"<|im_end|>", "<|channel|>", "<|return|>", "<|call|>", "<|end|>", "<tool>", "<|endoftext|>"};
    const int32_t added_type[] = {LOOM_TOKEN_NORMAL, LOOM_TOKEN_CONTROL, LOOM_TOKEN_CONTROL, LOOM_TOKEN_CONTROL,
                                  LOOM_TOKEN_CONTROL, LOOM_TOKEN_USER_DEFINED, LOOM_TOKEN_CONTROL};
    for (int i = 0; i < 7; i++) { toks[n] = added[i]; types[n++] = added_type[i]; }
    const char *merges[] = {"a b"};
    syn s = {.model = "gpt2", .pre = "gpt-2", .toks = toks, .types = types, .n = n, .merges = merges, .n_merges = 1, .bos = 262, .eos = 262};
    loom_error err = {0};
    loom_tokenizer *t = syn_open(&s, &err, NULL);
    CHECK_MSG(t != NULL, "%s", err.msg);
    if (!t) return;
    int32_t im_end = 256, channel = 257, ret = 258, call = 259, end = 260, tool = 261;
    /* <|im_end|> typed NORMAL looks like a control token: it becomes one (and ends generation) */
    CHECK_EQ_INT(loom_token_get_type(t, im_end), LOOM_TOKEN_CONTROL);
    CHECK(loom_token_get_attr(t, im_end) & LOOM_TOKEN_ATTR_CONTROL);
    CHECK(loom_tokenizer_is_eog(t, im_end));
    CHECK_EQ_INT(loom_tokenizer_eot(t), im_end);
    /* as a control token it is parsed only with parse_special */
    int32_t e1[] = {im_end};
    CHECK(ids_eq(t, "<|im_end|>", false, true, e1, 1));
    int32_t n1 = 0;
    int32_t *ids = tt_tokenize(t, "<|im_end|>", 10, false, false, &n1);
    CHECK(ids && n1 == 10); /* ten byte symbols (no merges apply) */
    free(ids);
    /* gpt-oss: <|channel|> is always USER_DEFINED: parsed without parse_special, rendered without LOOM_DETOK_SPECIAL */
    CHECK_EQ_INT(loom_token_get_type(t, channel), LOOM_TOKEN_USER_DEFINED);
    int32_t e2[] = {channel};
    CHECK(ids_eq(t, "<|channel|>", false, false, e2, 1));
    char buf[64];
    size_t len = 0;
    CHECK(loom_detokenize(t, e2, 1, 0, buf, sizeof buf, &len) == LOOM_OK && len == 11 && !memcmp(buf, "<|channel|>", 11));
    /* <|return|> and <|call|> present: <|end|> ends a message, not the generation, and is USER_DEFINED */
    CHECK(loom_tokenizer_is_eog(t, ret) && loom_tokenizer_is_eog(t, call));
    CHECK(!loom_tokenizer_is_eog(t, end));
    CHECK_EQ_INT(loom_token_get_type(t, end), LOOM_TOKEN_USER_DEFINED);
    /* a USER_DEFINED token splits the text even without parse_special */
    int32_t e3[] = {'a', tool, 'b'}; /* byte symbol i is token i */
    CHECK(ids_eq(t, "a<tool>b", false, false, e3, 3));
    /* control tokens render only on request */
    int32_t ctl[] = {ret};
    CHECK(loom_detokenize(t, ctl, 1, 0, buf, sizeof buf, &len) == LOOM_OK && len == 0);
    CHECK(loom_detokenize(t, ctl, 1, LOOM_DETOK_SPECIAL, buf, sizeof buf, &len) == LOOM_OK && len == 10);
    loom_tokenizer_free(t);
    /* an unknown pre-tokenizer or model is refused with a message naming the keys */
    s.pre = "no-such-pre";
    loom_error_clear(&err);
    loom_status st;
    t = syn_open(&s, &err, &st);
    CHECK(t == NULL && st == LOOM_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "tokenizer.ggml.pre") && strstr(err.msg, "no-such-pre") && strstr(err.msg, "gpt2"),
              "message: %s", err.msg);
    s.pre = "gpt-2";
    s.model = "sentencepiece-v9";
    loom_error_clear(&err);
    t = syn_open(&s, &err, &st);
    CHECK(t == NULL && st == LOOM_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "tokenizer.ggml.model") && strstr(err.msg, "sentencepiece-v9"), "message: %s", err.msg);
    s.model = "none";
    loom_error_clear(&err);
    t = syn_open(&s, &err, &st);
    CHECK(t == NULL && st == LOOM_ERR_UNSUPPORTED && strstr(err.msg, "no vocabulary"));
}

/* Phi-3 rules on the real vocabulary: special tokens rstrip, </s> is control. */
static void check_phi3(void) {
    tt_vocab v = {"phi-3", "ggml-vocab-phi-3.gguf", NULL};
    loom_tokenizer *t = tt_open(&v);
    if (!t) return;
    int32_t end = 32007, s_end = 2;
    CHECK(loom_token_get_attr(t, end) & LOOM_TOKEN_ATTR_RSTRIP);
    CHECK(loom_token_get_attr(t, s_end) & LOOM_TOKEN_ATTR_CONTROL);
    CHECK(!(loom_token_get_attr(t, 1) & LOOM_TOKEN_ATTR_RSTRIP)); /* <s> */
    int32_t n1 = 0, n2 = 0;
    int32_t *a = tt_tokenize(t, "<|end|>   \n\tx", 13, false, true, &n1);
    int32_t *b = tt_tokenize(t, "<|end|>x", 8, false, true, &n2);
    CHECK_MSG(a && b && tt_same(a, (size_t)n1, b, (size_t)n2), "rstrip swallows the whitespace after <|end|>");
    free(a);
    free(b);
    /* without parse_special </s> is text (it is a control token) */
    a = tt_tokenize(t, "</s>", 4, false, false, &n1);
    CHECK(a && n1 > 1);
    free(a);
    a = tt_tokenize(t, "</s>", 4, false, true, &n1);
    CHECK(a && n1 == 1 && a[0] == s_end);
    free(a);
    loom_tokenizer_free(t);
}

/* <mask> of XLM-R-style models lstrips; BERT frames with [CLS] ... [SEP]. */
static void check_embedding_models(void) {
    tt_vocab v = {"nomic-bert-moe", "ggml-vocab-nomic-bert-moe.gguf", NULL};
    loom_tokenizer *t = tt_open(&v);
    if (t) {
        int32_t mask = loom_tokenizer_mask(t);
        CHECK(mask >= 0 && (loom_token_get_attr(t, mask) & LOOM_TOKEN_ATTR_LSTRIP));
        int32_t n1 = 0, n2 = 0;
        int32_t *a = tt_tokenize(t, "hello   <mask>", 14, false, true, &n1);
        int32_t *b = tt_tokenize(t, "hello<mask>", 11, false, true, &n2);
        CHECK_MSG(a && b && tt_same(a, (size_t)n1, b, (size_t)n2), "lstrip swallows the whitespace before <mask>");
        free(a);
        free(b);
        loom_tokenizer_free(t);
    }
    tt_vocab vb = {"bert-bge", "ggml-vocab-bert-bge.gguf", NULL};
    t = tt_open(&vb);
    if (t) {
        CHECK_EQ_INT(loom_tokenizer_type(t), LOOM_VOCAB_WPM);
        CHECK_EQ_INT(loom_tokenizer_cls(t), 101);
        CHECK_EQ_INT(loom_tokenizer_sep(t), 102);
        /* "Hello, World!" -> [CLS] hello , world ! [SEP] (uncased BERT ids) */
        int32_t e[] = {101, 7592, 1010, 2088, 999, 102};
        CHECK(ids_eq(t, "Hello, World!", true, false, e, 6));
        int32_t e2[] = {7592, 1010, 2088, 999};
        CHECK(ids_eq(t, "Hello, World!", false, false, e2, 4));
        /* accents stripped, CJK split, unknown word -> [UNK] */
        int32_t e3[] = {7668};
        CHECK(ids_eq(t, "Caf\xc3\xa9", false, false, e3, 1)); /* "cafe" */
        char buf[128];
        size_t len = 0;
        CHECK(loom_detokenize(t, e2, 4, LOOM_DETOK_CLEAN_SPACES, buf, sizeof buf, &len) == LOOM_OK);
        CHECK_MSG(len == 13 && !memcmp(buf, "hello, world!", 13), "bert detokenize: %.*s", (int)len, buf);
        loom_tokenizer_free(t);
    }
}

static int32_t *seg_tok(const loom_tokenizer *t, const loom_tok_segment *sg, int n, bool add, int32_t *cnt) {
    *cnt = 0;
    loom_status st = loom_tokenize_segments(t, sg, n, add, NULL, 0, cnt, NULL);
    if (st != LOOM_OK && st != LOOM_ERR_RANGE) return NULL;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(*cnt ? *cnt : 1));
    if (ids && *cnt && loom_tokenize_segments(t, sg, n, add, ids, *cnt, cnt, NULL) != LOOM_OK) { free(ids); return NULL; }
    return ids;
}

/* loom_tokenize_segments: one prompt, special tokens only in the marked segments. */
static void check_segments(void) {
    tt_vocab vq = {"qwen2", "ggml-vocab-qwen2.gguf", NULL};
    loom_tokenizer *t = tt_open(&vq);
    if (t) {
        const char *a = "<|im_start|>user\n", *b = "Hi <|im_end|> there", *c = "<|im_end|>\n<|im_start|>assistant\n";
        char all[256];
        snprintf(all, sizeof all, "%s%s%s", a, b, c);
        loom_tok_segment sg[3] = {{a, strlen(a), true}, {b, strlen(b), true}, {c, strlen(c), true}};
        int32_t n1 = 0, n2 = 0;
        int32_t *x = seg_tok(t, sg, 3, false, &n1), *y = tt_tokenize(t, all, strlen(all), false, true, &n2);
        CHECK_MSG(x && y && tt_same(x, (size_t)n1, y, (size_t)n2), "all-special segments == one call with parse_special");
        free(x);
        free(y);
        for (int i = 0; i < 3; i++) sg[i].parse_special = false;
        x = seg_tok(t, sg, 3, false, &n1);
        y = tt_tokenize(t, all, strlen(all), false, false, &n2);
        CHECK_MSG(x && y && tt_same(x, (size_t)n1, y, (size_t)n2), "plain segments == one call without parse_special");
        free(x);
        free(y);
        /* template special, message plain: the message's <|im_end|> stays text */
        sg[0].parse_special = sg[2].parse_special = true;
        x = seg_tok(t, sg, 3, false, &n1);
        int n_end = 0, n_start = 0;
        for (int32_t i = 0; x && i < n1; i++) {
            n_end += x[i] == 151645;
            n_start += x[i] == 151644;
        }
        CHECK_MSG(n_end == 1 && n_start == 2, "im_end %d im_start %d", n_end, n_start);
        int32_t *ya = tt_tokenize(t, a, strlen(a), false, true, &n2);
        CHECK(x && ya && n1 > n2 && !memcmp(x, ya, sizeof(int32_t) * (size_t)n2)); /* same start */
        free(ya);
        free(x);
        loom_tok_segment bad = {NULL, 3, true};
        int32_t cnt;
        loom_error err = {0};
        CHECK(loom_tokenize_segments(t, &bad, 1, false, NULL, 0, &cnt, &err) == LOOM_ERR_INVALID_ARG && err.msg[0]);
        CHECK(loom_tokenize_segments(t, NULL, 0, false, NULL, 0, &cnt, NULL) == LOOM_OK && cnt == 0);
        loom_tokenizer_free(t);
    }
    /* SentencePiece: the space prefix comes once, not per segment */
    tt_vocab vs = {"llama-spm", "ggml-vocab-llama-spm.gguf", NULL};
    t = tt_open(&vs);
    if (t) {
        loom_tok_segment sg[2] = {{"Hello", 5, false}, {" world", 6, false}};
        int32_t n1 = 0, n2 = 0;
        int32_t *x = seg_tok(t, sg, 2, true, &n1), *y = tt_tokenize(t, "Hello world", 11, true, false, &n2);
        CHECK_MSG(x && y && tt_same(x, (size_t)n1, y, (size_t)n2), "SPM segments == one prompt");
        free(x);
        free(y);
        loom_tokenizer_free(t);
    }
    /* Phi-3: rstrip of a template token reaches into the next segment, as in one prompt */
    tt_vocab vp = {"phi-3", "ggml-vocab-phi-3.gguf", NULL};
    t = tt_open(&vp);
    if (t) {
        loom_tok_segment sg[2] = {{"<|user|>", 8, true}, {"  hi <|end|>", 12, false}};
        loom_tok_segment sg2[2] = {{"<|user|>", 8, true}, {"hi <|end|>", 10, false}};
        int32_t n1 = 0, n2 = 0;
        int32_t *x = seg_tok(t, sg, 2, true, &n1), *y = seg_tok(t, sg2, 2, true, &n2);
        CHECK_MSG(x && y && tt_same(x, (size_t)n1, y, (size_t)n2), "phi-3 rstrip across segments");
        CHECK(x && n1 > 3 && x[1] == 32010); /* <|user|> parsed, the message's <|end|> is text */
        for (int32_t i = 0; x && i < n1; i++) CHECK(x[i] != 32007);
        free(x);
        free(y);
        loom_tokenizer_free(t);
    }
}

/* tokenizer.ggml.suppress_tokens: read in file order with out-of-range ids dropped
 * (llama.cpp's rule: MiniMax's converter lists added tokens without embeddings), any
 * other type than an INT32 array refused with the key named; none: an empty list */
static void check_suppress_tokens(void) {
    static const char *toks[6] = {"a", "b", "c", "d", "<s>", "</s>"};
    static const int32_t sup[5] = {3, 9, -1, 1, 5};
    syn s = {.model = "llama", .toks = toks, .n = 6, .bos = 4, .eos = 5, .suppress = sup, .n_suppress = 5};
    loom_error err = {0};
    loom_status st;
    loom_tokenizer *t = syn_open(&s, &err, &st);
    CHECK_MSG(t != NULL, "suppress_tokens vocabulary: %s", err.msg);
    const int32_t *ids = NULL;
    CHECK_EQ_INT(loom_tokenizer_suppressed(t, &ids), 3);
    CHECK(ids && ids[0] == 3 && ids[1] == 1 && ids[2] == 5);
    loom_tokenizer_free(t);
    s.suppress_u32 = true;
    t = syn_open(&s, &err, &st);
    CHECK(t == NULL && st == LOOM_ERR_FORMAT && strstr(err.msg, "tokenizer.ggml.suppress_tokens"));
    loom_tokenizer_free(t);
    s.suppress = NULL;
    t = syn_open(&s, &err, &st);
    CHECK(t != NULL && loom_tokenizer_suppressed(t, &ids) == 0);
    loom_tokenizer_free(t);
}

/* Chameleon: its image tokens (ids 4..8195) are suppressed (llama.cpp's chameleon graph
 * overwrites their logits; Loom leaves them out when sampling), after the file's own list;
 * tests/data/arch/indep-chameleon.gguf has 8200 tokens */
static void check_chameleon_suppress(void) {
    loom_gguf *g = NULL;
    loom_tokenizer *t = NULL;
    loom_error err = {0};
    CHECK(loom_gguf_open(test_path("tests/data/arch/indep-chameleon.gguf"), NULL, &g, &err) == LOOM_OK);
    CHECK_MSG(g && loom_tokenizer_new_from_gguf(g, &t, &err) == LOOM_OK, "chameleon tokenizer: %s", err.msg);
    const int32_t *ids = NULL;
    const int32_t n = t ? loom_tokenizer_suppressed(t, &ids) : 0;
    CHECK_EQ_INT(n, 8192);
    bool ok = ids != NULL;
    for (int32_t i = 0; ok && i < n; i++) ok = ids[i] == 4 + i;
    CHECK_MSG(ok, "chameleon: the suppressed ids are not 4..8195");
    loom_tokenizer_free(t);
    loom_gguf_close(g);
}

int main(void) {
    for (size_t i = 0; i < TT_N_VOCABS; i++) check_facts(&TT_VOCABS[i]);
    check_chameleon_suppress();
    check_segments();
    check_bpe_rules();
    check_phi3();
    check_embedding_models();
    check_suppress_tokens();
    return test_finish("test_llm_tokenizer_rules");
}
