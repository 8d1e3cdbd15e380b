/* Every BPE pre-tokenizer against llama.cpp: for each tokenizer.ggml.pre name
 * llama.cpp knows, a vocabulary with gpt-2's tokens and merges (gemma-4's for
 * the raw-UTF-8 ones) and that pre-tokenizer tokenizes the 178 strings of
 * tests/data/vocab/extra/extra.inp to llama.cpp's ids (extra/pre.out). Also:
 * every name in Loom's table has a section there, and every pre-tokenizer's
 * regexes compile. */
#include "llm/tokenizer_internal.h"
#include "tok_test_util.h"

static bool has_section(const char *text, size_t n, const char *name) {
    char hdr[128];
    int hl = snprintf(hdr, sizeof hdr, "# pre %s", name);
    for (size_t at = 0; at < n;) {
        const char *nl = memchr(text + at, '\n', n - at);
        size_t e = nl ? (size_t)(nl - text) : n;
        if (e - at >= (size_t)hl && memcmp(text + at, hdr, (size_t)hl) == 0 && (e - at == (size_t)hl || text[at + hl] == ' '))
            return true;
        at = e + 1;
    }
    return false;
}

int main(void) {
    char p[4096];
    snprintf(p, sizeof p, "%s/tests/data/vocab/extra/extra.inp", LOOM_SOURCE_DIR);
    tt_strings in;
    CHECK(tt_read_inp(p, &in));
    snprintf(p, sizeof p, "%s/tests/data/vocab/extra/pre.out", LOOM_SOURCE_DIR);
    size_t pn = 0;
    char *pre = tt_read_file(p, &pn);
    CHECK(pre != NULL);
    if (!pre) return test_finish("test_llm_tokenizer_pre");

    /* every pre-tokenizer of the table is covered by the reference data */
    size_t ntab = 0;
    const tok_pre_def *tab = tok_pre_table(&ntab);
    CHECK(ntab >= 50);
    for (size_t i = 0; i < ntab; i++) {
        bool found = !strcmp(tab[i].id, "gemma4"); /* covered by the real gemma-4 vocabulary (vectors test) */
        for (const char *const *nm = tab[i].names; *nm && !found; nm++) found = has_section(pre, pn, *nm);
        CHECK_MSG(found, "pre-tokenizer %s has no reference section", tab[i].id);
        for (int k = 0; k < TOK_PRE_MAX_REGEX && tab[i].regex[k]; k++) {
            if (tok_split_kind_of(tab[i].regex[k]) != TOK_SPLIT_REGEX) continue;
            tok_regex *r = NULL;
            char why[160];
            loom_status st = tok_regex_compile(tab[i].regex[k], &r, why, sizeof why);
            CHECK_MSG(st == LOOM_OK, "%s regex %d: %s", tab[i].id, k, why);
            tok_regex_free(r);
        }
    }

    const char *gpt2 = tt_vocab_path("ggml-vocab-gpt-2.gguf");
    char gpt2_path[4096], gemma_path[4096] = "";
    CHECK(gpt2 != NULL);
    if (!gpt2) return test_finish("test_llm_tokenizer_pre");
    snprintf(gpt2_path, sizeof gpt2_path, "%s", gpt2);
    const char *gm = tt_vocab_path("ggml-vocab-gemma-4.gguf");
    if (gm) snprintf(gemma_path, sizeof gemma_path, "%s", gm);
    CHECK(gm != NULL);

    int n_pre = 0, n_ok = 0;
    for (size_t at = 0; at < pn;) {
        const char *nl = memchr(pre + at, '\n', pn - at);
        size_t e = nl ? (size_t)(nl - pre) : pn;
        if (e - at < 6 || memcmp(pre + at, "# pre ", 6) != 0) { at = e + 1; continue; }
        char name[64];
        size_t nlen = 0;
        for (size_t k = at + 6; k < e && pre[k] != ' ' && nlen < sizeof name - 1; k++) name[nlen++] = pre[k];
        name[nlen] = 0;
        const char *eq = memchr(pre + at, '=', e - at);
        /* the section's lines: its own, or those of the section it equals */
        size_t body;
        if (eq) {
            char other[64];
            size_t ol = 0;
            for (const char *q = eq + 2; q < pre + e && ol < sizeof other - 1; q++) other[ol++] = *q;
            other[ol] = 0;
            char hdr[128];
            int hl = snprintf(hdr, sizeof hdr, "# pre %s\n", other);
            const char *h = NULL;
            for (size_t s = 0; s + (size_t)hl <= pn; s++)
                if ((s == 0 || pre[s - 1] == '\n') && memcmp(pre + s, hdr, (size_t)hl) == 0) { h = pre + s; break; }
            CHECK_MSG(h != NULL, "pre.out: %s refers to a missing section %s", name, other);
            if (!h) { at = e + 1; continue; }
            body = (size_t)(h - pre) + (size_t)hl;
        } else {
            body = e + 1;
        }
        /* in.n lines from body */
        size_t b_end = body;
        for (size_t k = 0; k < in.n && b_end < pn; k++) {
            const char *q = memchr(pre + b_end, '\n', pn - b_end);
            b_end = q ? (size_t)(q - pre) + 1 : pn;
        }
        tt_ids exp;
        tt_read_out_text(pre + body, b_end - body, &exp);
        bool raw = !strcmp(name, "sarvam-moe") || !strcmp(name, "whitespace");
        void *img = NULL;
        size_t sz = 0;
        loom_status st = tt_derive(raw ? gemma_path : gpt2_path, !strcmp(name, "whitespace") ? "whitespace" : "gpt2",
                                   name, &img, &sz);
        loom_gguf *g = NULL;
        loom_tokenizer *t = NULL;
        loom_error err = {0};
        if (st == LOOM_OK) st = loom_gguf_open_memory(img, sz, &g, &err);
        if (st == LOOM_OK) st = loom_tokenizer_new_from_gguf(g, &t, &err);
        CHECK_MSG(st == LOOM_OK, "pre %s: %s %s", name, loom_status_name(st), err.msg);
        CHECK_MSG(exp.n == in.n, "pre %s: %zu lines", name, exp.n);
        int pass = 0;
        for (size_t i = 0; t && i < in.n && i < exp.n; i++) {
            int32_t n = 0;
            int32_t *ids = tt_tokenize(t, in.data + in.off[i], in.len[i], false, false, &n);
            bool ok = ids && tt_same(ids, (size_t)n, exp.ids[i], exp.cnt[i]);
            if (!ok)
                fprintf(stderr, "pre %s: string %zu (\"%.*s\") differs\n", name, i, (int)(in.len[i] > 60 ? 60 : in.len[i]),
                        in.data + in.off[i]);
            CHECK_MSG(ok, "pre %s string %zu", name, i);
            pass += ok;
            free(ids);
        }
        n_pre++;
        n_ok += pass == (int)in.n;
        tt_free_ids(&exp);
        loom_tokenizer_free(t);
        loom_gguf_close(g);
        free(img);
        at = e + 1;
    }
    printf("pre-tokenizers: %d of %d exact on %zu strings each\n", n_ok, n_pre, in.n);
    CHECK(n_pre >= 50);
    free(pre);
    tt_free_strings(&in);
    return test_finish("test_llm_tokenizer_pre");
}
