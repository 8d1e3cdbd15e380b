/* SentencePiece-style tokenization (tokenizer.ggml.model = "llama"), as
 * llama.cpp's llm_tokenizer_spm: the fragment (with a space prepended when
 * asked) has its spaces replaced by U+2581 and is cut into UTF-8 characters by
 * their lead byte (an invalid sequence is not re-synchronised); the adjacent
 * pair whose concatenation is a vocabulary entry of the highest score is
 * merged repeatedly (ties: the leftmost pair; any token type may be formed);
 * symbols that are not entries become byte tokens (<0xNN>, else the byte as a
 * one-character token, else the unknown token). */
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_internal.h"
#include "quant/alloc.h"

static loom_status try_bigram(const loom_tokenizer *t, const char *buf, const tok_sym *sym, int32_t l,
                              int32_t r, tok_heap *h) {
    if (l < 0 || r < 0) return LOOM_OK;
    size_t n = sym[l].n + sym[r].n;
    int32_t id = tok_lookup(t, buf + sym[l].off, n);
    if (id < 0) return LOOM_OK;
    tok_bigram b = {tok_score_key(t->scores ? t->scores[id] : 0.0f), l, r, (uint32_t)n};
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
                             tok_out *out, tok_scratch *sc) {
    size_t n_sp = 0;
    for (size_t i = 0; i < len; i++) n_sp += text[i] == ' ';
    if (len > SIZE_MAX / 4) return LOOM_ERR_NOMEM;
    size_t blen = len + 2 * n_sp + (space_prefix ? 3 : 0);
    if (blen == 0) return LOOM_OK;
    if (blen > (size_t)INT32_MAX || tok_buf_reserve(&sc->text, blen) ||
        tok_buf_reserve(&sc->syms, blen * sizeof(tok_sym)))
        return LOOM_ERR_NOMEM;
    char *buf = sc->text.p;
    size_t w = 0;
    if (space_prefix) { memcpy(buf, "\xE2\x96\x81", 3); w = 3; }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') { memcpy(buf + w, "\xE2\x96\x81", 3); w += 3; }
        else buf[w++] = text[i];
    }

    tok_sym *sym = sc->syms.p;
    int32_t ns = 0;
    for (size_t off = 0; off < blen;) {
        size_t cl = tok_utf8_lead_len((unsigned char)buf[off]);
        if (cl > blen - off) cl = blen - off;
        sym[ns] = (tok_sym){ns - 1, -1, off, cl};
        if (ns > 0) sym[ns - 1].next = ns;
        ns++;
        off += cl;
    }

    /* A symbol made of a byte that occurs in no multi-byte token never merges,
     * so the chains between such symbols (newlines, typically) are merged
     * independently: same result as one global queue, with a small heap. */
    tok_heap *h = &sc->heap;
    loom_status st = LOOM_OK;
    for (int32_t a = 0; a < ns && st == LOOM_OK;) {
        int32_t b = a;
        while (b < ns && !(sym[b].n == 1 && t->solo[(unsigned char)buf[sym[b].off]])) b++;
        h->n = 0;
        for (int32_t i = a + 1; i < b && st == LOOM_OK; i++) st = try_bigram(t, buf, sym, i - 1, i, h);
        tok_bigram bg;
        while (st == LOOM_OK && tok_heap_pop(h, &bg)) {
            tok_sym *L = &sym[bg.left], *R = &sym[bg.right];
            if (L->n == 0 || R->n == 0 || L->n + R->n != bg.size) continue;
            L->n += R->n;
            R->n = 0;
            L->next = R->next;
            if (R->next >= 0) sym[R->next].prev = bg.left;
            st = try_bigram(t, buf, sym, L->prev, bg.left, h);
            if (st == LOOM_OK) st = try_bigram(t, buf, sym, bg.left, L->next, h);
        }
        a = b + 1;
    }
    if (st != LOOM_OK) return st;
    for (int32_t i = 0; i >= 0; i = sym[i].next) {
        int32_t id = tok_lookup(t, buf + sym[i].off, sym[i].n);
        if (id >= 0) tok_emit(out, id);
        else emit_bytes(t, (const unsigned char *)buf + sym[i].off, sym[i].n, out);
    }
    return LOOM_OK;
}
