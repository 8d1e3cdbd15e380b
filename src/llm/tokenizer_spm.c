/* SentencePiece-style tokenization (tokenizer.ggml.model = "llama"):
 * score-ordered merging of adjacent symbols, byte fallback. */
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_internal.h"
#include "quant/alloc.h"

/* Merged pieces must be ordinary vocabulary pieces. */
static bool spm_piece_ok(const loom_tokenizer *t, int32_t id) {
    uint8_t ty = t->types[id];
    return ty == LOOM_TOKEN_NORMAL || ty == LOOM_TOKEN_USER_DEFINED || ty == LOOM_TOKEN_UNDEFINED;
}

static loom_status try_bigram(const loom_tokenizer *t, const char *buf, const tok_sym *sym, int32_t l,
                              int32_t r, tok_heap *h) {
    if (l < 0 || r < 0) return LOOM_OK;
    size_t n = sym[l].n + sym[r].n;
    int32_t id = tok_lookup(t, buf + sym[l].off, n);
    if (id < 0 || !spm_piece_ok(t, id)) return LOOM_OK;
    tok_bigram b = {t->scores ? -(double)t->scores[id] : 0.0, l, r, n};
    return tok_heap_push(h, b);
}

static void emit_bytes(const loom_tokenizer *t, const unsigned char *s, size_t n, tok_out *out) {
    for (size_t i = 0; i < n; i++) {
        int32_t id = t->byte_token[s[i]];
        if (id < 0) id = t->unk;
        if (id >= 0) tok_emit(out, id);
    }
}

loom_status tok_spm_fragment(const loom_tokenizer *t, const char *text, size_t len, bool space_prefix,
                             tok_out *out) {
    /* escaped text: spaces -> U+2581 (3 bytes) */
    size_t n_sp = 0;
    for (size_t i = 0; i < len; i++) n_sp += text[i] == ' ';
    if (len > SIZE_MAX / 4) return LOOM_ERR_NOMEM;
    size_t blen = len + 2 * n_sp + (space_prefix ? 3 : 0);
    if (blen == 0) return LOOM_OK;
    char *buf = loom_malloc(blen);
    if (!buf) return LOOM_ERR_NOMEM;
    size_t w = 0;
    if (space_prefix) { memcpy(buf, "\xE2\x96\x81", 3); w = 3; }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') { memcpy(buf + w, "\xE2\x96\x81", 3); w += 3; }
        else buf[w++] = text[i];
    }

    if (blen > (size_t)INT32_MAX || blen > SIZE_MAX / sizeof(tok_sym)) { loom_free(buf); return LOOM_ERR_NOMEM; }
    tok_sym *sym = loom_malloc(blen * sizeof(tok_sym));
    if (!sym) { loom_free(buf); return LOOM_ERR_NOMEM; }
    int32_t ns = 0;
    for (size_t off = 0; off < blen;) {
        /* strict decoding: an invalid byte is its own symbol, so it can never
         * swallow the U+2581 of an escaped space (keeps detokenization exact) */
        uint32_t cp;
        size_t cl = tok_utf8_decode((const unsigned char *)buf + off, blen - off, &cp);
        sym[ns] = (tok_sym){ns - 1, -1, off, cl};
        if (ns > 0) sym[ns - 1].next = ns;
        ns++;
        off += cl;
    }

    tok_heap h = {0};
    loom_status st = LOOM_OK;
    for (int32_t i = 1; i < ns && st == LOOM_OK; i++) st = try_bigram(t, buf, sym, i - 1, i, &h);
    tok_bigram b;
    while (st == LOOM_OK && tok_heap_pop(&h, &b)) {
        tok_sym *L = &sym[b.left], *R = &sym[b.right];
        if (L->n == 0 || R->n == 0 || L->n + R->n != b.size) continue;
        L->n += R->n;
        R->n = 0;
        L->next = R->next;
        if (R->next >= 0) sym[R->next].prev = b.left;
        st = try_bigram(t, buf, sym, L->prev, b.left, &h);
        if (st == LOOM_OK) st = try_bigram(t, buf, sym, b.left, L->next, &h);
    }
    if (st == LOOM_OK) {
        for (int32_t i = 0; i >= 0 && ns > 0; i = sym[i].next) {
            int32_t id = tok_lookup(t, buf + sym[i].off, sym[i].n);
            if (id >= 0 && spm_piece_ok(t, id))
                tok_emit(out, id);
            else
                emit_bytes(t, (const unsigned char *)buf + sym[i].off, sym[i].n, out);
        }
    }
    loom_free(h.a);
    loom_free(sym);
    loom_free(buf);
    return st;
}
