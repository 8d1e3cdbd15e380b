/* Byte-level BPE (tokenizer.ggml.model = "gpt2"): hand-written matchers for
 * the published pre-tokenizer regexes, GPT-2 byte->unicode mapping, merges by
 * rank.
 *
 * GPT-2:  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * Llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *         ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * Qwen2:  as Llama3 with \p{N} instead of \p{N}{1,3}.
 * Alternatives are tried in order at each position (regex semantics); every
 * position matches some alternative, so the words tile the fragment. */
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_internal.h"
#include "quant/alloc.h"

typedef struct cpinfo {
    uint32_t cp;
    uint8_t flags;
    uint8_t nbytes;
} cpinfo;

#define IS_L(i) ((i) < n && (c[i].flags & TOK_CP_LETTER))
#define IS_N(i) ((i) < n && (c[i].flags & TOK_CP_NUMBER))
#define IS_S(i) ((i) < n && (c[i].flags & TOK_CP_SPACE))
#define IS_O(i) ((i) < n && !(c[i].flags & (TOK_CP_LETTER | TOK_CP_NUMBER | TOK_CP_SPACE)))
#define CP(i) ((i) < n ? c[i].cp : 0xFFFFFFFFu)

static uint32_t lower_ascii(uint32_t x) { return (x >= 'A' && x <= 'Z') ? x + 32 : x; }

/* 's 't 're 've 'm 'll 'd at i; returns length or 0. */
static size_t contraction(const cpinfo *c, size_t n, size_t i, bool ci) {
    if (CP(i) != '\'') return 0;
    uint32_t a = CP(i + 1), b = CP(i + 2);
    if (ci) { a = lower_ascii(a); b = lower_ascii(b); }
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
}

/* \s+(?!\S)|\s+ at a whitespace position i. */
static size_t ws_tail(const cpinfo *c, size_t n, size_t i) {
    size_t j = i;
    while (IS_S(j)) j++;
    if (j == n || j - i == 1) return j - i;
    return j - i - 1;
}

static size_t match_gpt2(const cpinfo *c, size_t n, size_t i) {
    size_t k = contraction(c, n, i, false);
    if (k) return k;
    size_t o = CP(i) == ' ' ? 1 : 0;
    size_t j = i + o;
    if (IS_L(j)) { while (IS_L(j)) j++; return j - i; }
    if (IS_N(j)) { while (IS_N(j)) j++; return j - i; }
    if (IS_O(j)) { while (IS_O(j)) j++; return j - i; }
    if (IS_S(i)) return ws_tail(c, n, i);
    return 1; /* unreachable: every code point is L, N, S or other */
}

static size_t match_llama3(const cpinfo *c, size_t n, size_t i, int max_digits) {
    size_t k = contraction(c, n, i, true);
    if (k) return k;
    size_t j = i;
    /* [^\r\n\p{L}\p{N}]?\p{L}+ */
    if (IS_L(j)) { while (IS_L(j)) j++; return j - i; }
    if (CP(i) != '\r' && CP(i) != '\n' && !IS_N(i) && IS_L(i + 1)) {
        j = i + 1;
        while (IS_L(j)) j++;
        return j - i;
    }
    /* \p{N}{1,max} */
    if (IS_N(i)) {
        j = i;
        while (IS_N(j) && (int)(j - i) < max_digits) j++;
        return j - i;
    }
    /*  ?[^\s\p{L}\p{N}]+[\r\n]* */
    j = i + (CP(i) == ' ' ? 1 : 0);
    if (IS_O(j)) {
        while (IS_O(j)) j++;
        while (CP(j) == '\r' || CP(j) == '\n') j++;
        return j - i;
    }
    if (IS_S(i)) {
        /* \s*[\r\n]+ : up to the last newline of the whitespace run */
        size_t e = i, last = n;
        while (IS_S(e)) {
            if (c[e].cp == '\r' || c[e].cp == '\n') last = e;
            e++;
        }
        if (last != n) return last + 1 - i;
        return ws_tail(c, n, i);
    }
    return 1;
}

static loom_status bpe_word(const loom_tokenizer *t, const unsigned char *w, size_t wn, tok_out *out,
                            char **buf, size_t *buf_cap, tok_sym **sym, size_t *sym_cap, tok_heap *h) {
    /* map bytes to the GPT-2 alphabet; symbol links are int32 */
    if (wn > (size_t)INT32_MAX) return LOOM_ERR_NOMEM;
    if (*buf_cap < wn * 2) {
        char *nb = loom_realloc(*buf, wn * 2);
        if (!nb) return LOOM_ERR_NOMEM;
        *buf = nb;
        *buf_cap = wn * 2;
    }
    if (*sym_cap < wn) {
        if (wn > SIZE_MAX / sizeof(tok_sym)) return LOOM_ERR_NOMEM;
        tok_sym *ns = loom_realloc(*sym, wn * sizeof(tok_sym));
        if (!ns) return LOOM_ERR_NOMEM;
        *sym = ns;
        *sym_cap = wn;
    }
    char *b = *buf;
    tok_sym *s = *sym;
    size_t bl = 0;
    for (size_t i = 0; i < wn; i++) {
        s[i] = (tok_sym){(int32_t)i - 1, i + 1 < wn ? (int32_t)i + 1 : -1, bl, t->bpe_enc_len[w[i]]};
        memcpy(b + bl, t->bpe_enc[w[i]], t->bpe_enc_len[w[i]]);
        bl += t->bpe_enc_len[w[i]];
    }
    if (t->ignore_merges) {
        int32_t id = tok_lookup(t, b, bl);
        if (id >= 0) { tok_emit(out, id); return LOOM_OK; }
    }
    h->n = 0;
    loom_status st = LOOM_OK;
    for (size_t i = 1; i < wn && st == LOOM_OK; i++) {
        int32_t r = tok_merge_rank(t, b + s[i - 1].off, s[i - 1].n, b + s[i].off, s[i].n);
        if (r >= 0) st = tok_heap_push(h, (tok_bigram){(double)r, (int32_t)i - 1, (int32_t)i, s[i - 1].n + s[i].n});
    }
    tok_bigram g;
    while (st == LOOM_OK && tok_heap_pop(h, &g)) {
        tok_sym *L = &s[g.left], *R = &s[g.right];
        if (L->n == 0 || R->n == 0 || L->n + R->n != g.size) continue;
        L->n += R->n;
        R->n = 0;
        L->next = R->next;
        if (R->next >= 0) s[R->next].prev = g.left;
        if (L->prev >= 0) {
            tok_sym *P = &s[L->prev];
            int32_t r = tok_merge_rank(t, b + P->off, P->n, b + L->off, L->n);
            if (r >= 0) st = tok_heap_push(h, (tok_bigram){(double)r, L->prev, g.left, P->n + L->n});
        }
        if (st == LOOM_OK && L->next >= 0) {
            tok_sym *N = &s[L->next];
            int32_t r = tok_merge_rank(t, b + L->off, L->n, b + N->off, N->n);
            if (r >= 0) st = tok_heap_push(h, (tok_bigram){(double)r, g.left, L->next, L->n + N->n});
        }
    }
    if (st != LOOM_OK) return st;
    for (int32_t i = 0; i >= 0; i = s[i].next) {
        int32_t id = tok_lookup(t, b + s[i].off, s[i].n);
        if (id >= 0) { tok_emit(out, id); continue; }
        /* not a token: one token per mapped byte (or unknown) */
        for (size_t k = s[i].off; k < s[i].off + s[i].n;) {
            uint32_t cp;
            size_t cl = tok_utf8_decode((const unsigned char *)b + k, s[i].off + s[i].n - k, &cp);
            int32_t bid = (cp < 324 && t->bpe_dec[cp] >= 0) ? t->byte_token[t->bpe_dec[cp]] : -1;
            if (bid < 0) bid = t->unk;
            if (bid >= 0) tok_emit(out, bid);
            k += cl;
        }
    }
    return LOOM_OK;
}

loom_status tok_bpe_fragment(const loom_tokenizer *t, const char *text, size_t len, tok_out *out) {
    if (len == 0) return LOOM_OK;
    if (len > SIZE_MAX / sizeof(cpinfo)) return LOOM_ERR_NOMEM;
    cpinfo *c = loom_malloc(len * sizeof(cpinfo));
    if (!c) return LOOM_ERR_NOMEM;
    size_t n = 0;
    const unsigned char *u = (const unsigned char *)text;
    for (size_t off = 0; off < len;) {
        uint32_t cp;
        size_t cl = tok_utf8_decode(u + off, len - off, &cp);
        c[n].cp = cp;
        c[n].flags = (uint8_t)tok_cp_flags(cp);
        c[n].nbytes = (uint8_t)cl;
        n++;
        off += cl;
    }
    char *buf = NULL;
    size_t buf_cap = 0, sym_cap = 0;
    tok_sym *sym = NULL;
    tok_heap h = {0};
    loom_status st = LOOM_OK;
    size_t byte_off = 0;
    for (size_t i = 0; i < n && st == LOOM_OK;) {
        size_t m;
        switch (t->pre) {
        case TOK_PRE_LLAMA3: m = match_llama3(c, n, i, 3); break;
        case TOK_PRE_QWEN2: m = match_llama3(c, n, i, 1); break;
        default: m = match_gpt2(c, n, i); break;
        }
        if (m == 0) m = 1;
        size_t wb = 0;
        for (size_t k = i; k < i + m; k++) wb += c[k].nbytes;
        st = bpe_word(t, u + byte_off, wb, out, &buf, &buf_cap, &sym, &sym_cap, &h);
        byte_off += wb;
        i += m;
    }
    loom_free(h.a);
    loom_free(sym);
    loom_free(buf);
    loom_free(c);
    return st;
}
