/* BPE (tokenizer.ggml.model = "gpt2", "gemma4", "whitespace"), as llama.cpp's
 * llm_tokenizer_bpe: the fragment is decoded to code points (invalid UTF-8
 * becomes U+FFFD), split into words by the pre-tokenizer's regexes, each
 * word re-encoded as UTF-8 and (byte-level vocabularies) mapped to the GPT-2
 * byte alphabet, then merged by tokenizer.ggml.merges rank (lowest first,
 * ties: leftmost). A final symbol that is no token falls back to byte tokens
 * (the single mapped byte, or <0xNN> for raw-UTF-8 vocabularies like Gemma 4);
 * bytes without a token are dropped, as llama.cpp does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_internal.h"
#include "quant/alloc.h"

loom_status tok_bpe_init(loom_tokenizer *t, char *why, size_t why_size) {
    const tok_pre_def *d = t->pre;
    if (tok_build_pairs(t) != LOOM_OK) return LOOM_ERR_NOMEM;
    t->n_split = 0;
    for (int i = 0; i < TOK_PRE_MAX_REGEX && d->regex[i]; i++) {
        tok_split_kind k = tok_split_kind_of(d->regex[i]);
        t->split_kind[i] = k;
        t->split_rx[i] = NULL;
        if (k == TOK_SPLIT_REGEX) {
            char w[160] = "";
            loom_status st = tok_regex_compile(d->regex[i], &t->split_rx[i], w, sizeof w);
            if (st != LOOM_OK) {
                snprintf(why, why_size, "pre-tokenizer %s: regex %d: %s", d->id, i, w[0] ? w : loom_status_name(st));
                return st;
            }
            if (tok_regex_collapsed(t->split_rx[i])) t->need_collapsed = true;
            else t->need_wide = true;
        }
        t->n_split = i + 1;
    }
    return LOOM_OK;
}

typedef struct word_ctx {
    const loom_tokenizer *t;
    tok_out *out;
    tok_scratch *sc;
} word_ctx;

static void emit_fallback(const loom_tokenizer *t, const char *s, size_t n, tok_out *out) {
    for (size_t k = 0; k < n; k++) {
        int32_t id;
        if (t->byte_encode) id = tok_lookup(t, s + k, 1);
        else id = t->byte_token[(unsigned char)s[k]];
        if (id >= 0) tok_emit(out, id);
    }
}

/* bpe_word with closed merges: symbols carry their token id, merges are
 * looked up by id pair (same result as the text lookups, much cheaper). */
static loom_status bpe_word_ids(const word_ctx *c, const char *w, size_t wn) {
    const loom_tokenizer *t = c->t;
    tok_sym *s = c->sc->syms.p;
    int32_t ns = 0;
    for (size_t off = 0; off < wn;) {
        size_t cl = tok_utf8_lead_len((unsigned char)w[off]);
        if (cl > wn - off) cl = wn - off;
        int32_t id = -1;
        if (t->byte_encode && cl <= 2) {
            /* a mapped byte: one or two bytes of the GPT-2 alphabet */
            uint32_t cp = cl == 1 ? (unsigned char)w[off]
                                  : (((uint32_t)(unsigned char)w[off] & 0x1F) << 6) | ((unsigned char)w[off + 1] & 0x3F);
            id = (cp < 324 && t->bpe_dec[cp] >= 0) ? t->byte_sym[t->bpe_dec[cp]] : tok_lookup(t, w + off, cl);
        } else {
            id = tok_lookup(t, w + off, cl);
        }
        s[ns] = (tok_sym){ns - 1, -1, off, cl};
        ((int32_t *)c->sc->misc.p)[ns] = id;
        if (ns > 0) s[ns - 1].next = ns;
        ns++;
        off += cl;
    }
    int32_t *ids = c->sc->misc.p;
    tok_heap *h = &c->sc->heap;
    h->n = 0;
    loom_status st = LOOM_OK;
    int32_t m = -1;
    for (int32_t i = 1; i < ns && st == LOOM_OK; i++) {
        if (ids[i - 1] < 0 || ids[i] < 0) continue;
        int32_t r = tok_pair_rank(t, ids[i - 1], ids[i], &m);
        if (r >= 0) st = tok_heap_push(h, (tok_bigram){(uint32_t)r, i - 1, i, (uint32_t)(s[i - 1].n + s[i].n)});
    }
    tok_bigram g;
    while (st == LOOM_OK && tok_heap_pop(h, &g)) {
        tok_sym *L = &s[g.left], *R = &s[g.right];
        if (L->n == 0 || R->n == 0 || L->n + R->n != g.size) continue;
        tok_pair_rank(t, ids[g.left], ids[g.right], &m);
        ids[g.left] = m;
        L->n += R->n;
        R->n = 0;
        L->next = R->next;
        if (R->next >= 0) s[R->next].prev = g.left;
        if (L->prev >= 0 && ids[L->prev] >= 0) {
            int32_t r = tok_pair_rank(t, ids[L->prev], m, &m);
            if (r >= 0) st = tok_heap_push(h, (tok_bigram){(uint32_t)r, L->prev, g.left, (uint32_t)(s[L->prev].n + L->n)});
        }
        if (st == LOOM_OK && L->next >= 0 && ids[L->next] >= 0) {
            int32_t r = tok_pair_rank(t, ids[g.left], ids[L->next], &m);
            if (r >= 0) st = tok_heap_push(h, (tok_bigram){(uint32_t)r, g.left, L->next, (uint32_t)(L->n + s[L->next].n)});
        }
    }
    if (st != LOOM_OK) return st;
    for (int32_t i = 0; i >= 0; i = s[i].next) {
        if (ids[i] >= 0) tok_emit(c->out, ids[i]);
        else emit_fallback(t, w + s[i].off, s[i].n, c->out);
    }
    return LOOM_OK;
}

/* Merge one word (already in the vocabulary's alphabet). */
static loom_status bpe_word(const word_ctx *c, const char *w, size_t wn) {
    const loom_tokenizer *t = c->t;
    if (wn == 0) return LOOM_OK;
    if (t->ignore_merges) {
        int32_t id = tok_lookup(t, w, wn);
        if (id >= 0) { tok_emit(c->out, id); return LOOM_OK; }
    }
    if (t->pre->flags & TOK_PRE_F_GEMMA4) {
        size_t k = 0;
        while (k < wn && w[k] == '\n') k++;
        if (k == wn) {
            int32_t id = tok_lookup(t, w, wn);
            if (id >= 0) { tok_emit(c->out, id); return LOOM_OK; }
        }
    }
    if (wn > (size_t)INT32_MAX || tok_buf_reserve(&c->sc->syms, wn * sizeof(tok_sym)) ||
        tok_buf_reserve(&c->sc->misc, wn * sizeof(int32_t)))
        return LOOM_ERR_NOMEM;
    if (t->pair_slots) return bpe_word_ids(c, w, wn);
    tok_sym *s = c->sc->syms.p;
    int32_t ns = 0;
    for (size_t off = 0; off < wn;) {
        size_t cl = tok_utf8_lead_len((unsigned char)w[off]);
        if (cl > wn - off) cl = wn - off;
        s[ns] = (tok_sym){ns - 1, -1, off, cl};
        if (ns > 0) s[ns - 1].next = ns;
        ns++;
        off += cl;
    }
    tok_heap *h = &c->sc->heap;
    h->n = 0;
    loom_status st = LOOM_OK;
    for (int32_t i = 1; i < ns && st == LOOM_OK; i++) {
        int32_t r = tok_merge_rank(t, w + s[i - 1].off, s[i - 1].n, w + s[i].off, s[i].n);
        if (r >= 0) st = tok_heap_push(h, (tok_bigram){(uint32_t)r, i - 1, i, (uint32_t)(s[i - 1].n + s[i].n)});
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
            int32_t r = tok_merge_rank(t, w + P->off, P->n, w + L->off, L->n);
            if (r >= 0) st = tok_heap_push(h, (tok_bigram){(uint32_t)r, L->prev, g.left, (uint32_t)(P->n + L->n)});
        }
        if (st == LOOM_OK && L->next >= 0) {
            tok_sym *N = &s[L->next];
            int32_t r = tok_merge_rank(t, w + L->off, L->n, w + N->off, N->n);
            if (r >= 0) st = tok_heap_push(h, (tok_bigram){(uint32_t)r, g.left, L->next, (uint32_t)(L->n + N->n)});
        }
    }
    if (st != LOOM_OK) return st;
    for (int32_t i = 0; i >= 0; i = s[i].next) {
        int32_t id = tok_lookup(t, w + s[i].off, s[i].n);
        if (id >= 0) tok_emit(c->out, id);
        else emit_fallback(t, w + s[i].off, s[i].n, c->out);
    }
    return LOOM_OK;
}

/* Encode cps[0..n) as UTF-8 (and map to the GPT-2 alphabet when byte_encode)
 * into sc->text2, then merge. */
static loom_status do_word(const word_ctx *c, const uint32_t *cps, size_t n) {
    const loom_tokenizer *t = c->t;
    if (n == 0) return LOOM_OK;
    if (n > SIZE_MAX / 8 || tok_buf_reserve(&c->sc->text2, n * 8)) return LOOM_ERR_NOMEM;
    unsigned char *o = c->sc->text2.p;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char u[4];
        size_t k = loom_utf8_encode(cps[i], u);
        if (t->byte_encode) {
            for (size_t j = 0; j < k; j++) {
                memcpy(o + w, t->bpe_enc[u[j]], t->bpe_enc_len[u[j]]);
                w += t->bpe_enc_len[u[j]];
            }
        } else {
            memcpy(o + w, u, k);
            w += k;
        }
    }
    return bpe_word(c, (const char *)o, w);
}

static loom_status bpe_fragment(const loom_tokenizer *t, const char *text, size_t len, tok_out *out,
                                tok_scratch *sc);

/* HybriDNA: 6-mers of the upper-cased DNA text, looked up with the U+E000
 * marker the converter appends to k-mer tokens; the last one is padded with
 * 'A'; a k-mer that is no token is <oov>. */
static void dna_kmers(const loom_tokenizer *t, const char *s, size_t n, tok_out *out) {
    char k[9];
    for (size_t i = 0; i < n; i += 6) {
        size_t m = n - i < 6 ? n - i : 6;
        for (size_t j = 0; j < 6; j++) {
            char c = j < m ? s[i + j] : 'A';
            k[j] = (c >= 'a' && c <= 'z') ? (char)(c - 32) : c;
        }
        memcpy(k + 6, "\xEE\x80\x80", 3);
        int32_t id = tok_lookup(t, k, 9);
        tok_emit(out, id >= 0 ? id : t->dna_oov);
    }
}

static const char *find_str(const char *h, size_t hn, const char *nd) {
    size_t nn = strlen(nd);
    return nn <= hn ? memmem(h, hn, nd, nn) : NULL;
}

loom_status tok_bpe_fragment(const loom_tokenizer *t, const char *text, size_t len, tok_out *out, tok_scratch *sc) {
    if (!t->dna) return bpe_fragment(t, text, len, out, sc);
    int32_t open = tok_lookup(t, "<dna>", 5), close = tok_lookup(t, "</dna>", 6);
    if (open < 0 || close < 0 || t->dna_oov < 0) return bpe_fragment(t, text, len, out, sc);
    size_t pos = 0;
    while (pos < len) {
        const char *st = find_str(text + pos, len - pos, "<dna>");
        if (!st) return bpe_fragment(t, text + pos, len - pos, out, sc);
        size_t start = (size_t)(st - text);
        if (start > pos) {
            loom_status s = bpe_fragment(t, text + pos, start - pos, out, sc);
            if (s) return s;
        }
        tok_emit(out, open);
        size_t cs = start + 5;
        const char *en = find_str(text + cs, len - cs, "</dna>");
        size_t ce = en ? (size_t)(en - text) : len;
        dna_kmers(t, text + cs, ce - cs, out);
        if (!en) break;
        tok_emit(out, close);
        pos = ce + 6;
    }
    return LOOM_OK;
}

static loom_status bpe_fragment(const loom_tokenizer *t, const char *text, size_t len, tok_out *out,
                                tok_scratch *sc) {
    if (len == 0) return LOOM_OK;
    /* Gemma 4 / Sarvam: spaces become U+2581 before anything else */
    if (t->escape_ws) {
        size_t n_sp = 0;
        for (size_t i = 0; i < len; i++) n_sp += text[i] == ' ';
        if (n_sp) {
            if (len > SIZE_MAX / 4 || tok_buf_reserve(&sc->text, len + 2 * n_sp)) return LOOM_ERR_NOMEM;
            char *b = sc->text.p;
            size_t w = 0;
            for (size_t i = 0; i < len; i++) {
                if (text[i] == ' ') { memcpy(b + w, "\xE2\x96\x81", 3); w += 3; }
                else b[w++] = text[i];
            }
            text = b;
            len = w;
        }
    }
    if (len > SIZE_MAX / sizeof(uint32_t) || tok_buf_reserve(&sc->cps, len * sizeof(uint32_t))) return LOOM_ERR_NOMEM;
    uint32_t *cps = sc->cps.p;
    size_t n = tok_cps_from_utf8(text, len, cps);
    word_ctx c = {t, out, sc};

    if (t->pre->flags & TOK_PRE_F_WHITESPACE) {
        /* jina-v2-zh: whitespace separates words and is dropped; lower-casing per the normalizer */
        size_t i = 0;
        while (i < n) {
            while (i < n && (tok_cp_flags(cps[i]) & TOK_CP_WHITESPACE)) i++;
            size_t s = i;
            while (i < n && !(tok_cp_flags(cps[i]) & TOK_CP_WHITESPACE)) {
                if (t->lowercase) cps[i] = tok_cp_tolower(cps[i]);
                i++;
            }
            loom_status st = do_word(&c, cps + s, i - s);
            if (st) return st;
        }
        return LOOM_OK;
    }

    const uint32_t *sym_c = NULL, *sym_w = NULL;
    if (t->need_collapsed) {
        if (tok_buf_reserve(&sc->sym_c, n * sizeof(uint32_t) + 4)) return LOOM_ERR_NOMEM;
        uint32_t *sy = sc->sym_c.p;
        for (size_t i = 0; i < n; i++) sy[i] = tok_sym_collapsed(cps[i]);
        sym_c = sy;
    }
    if (t->need_wide) {
        if (tok_buf_reserve(&sc->sym_w, n * sizeof(uint32_t) + 4)) return LOOM_ERR_NOMEM;
        uint32_t *sy = sc->sym_w.p;
        for (size_t i = 0; i < n; i++) sy[i] = tok_sym_wide(cps[i]);
        sym_w = sy;
    }
    tok_offs *cur = &sc->offs[0], *nxt = &sc->offs[1];
    cur->n = 0;
    if (tok_offs_push(cur, (uint32_t)n)) return LOOM_ERR_NOMEM;
    for (int i = 0; i < t->n_split; i++) {
        nxt->n = 0;
        loom_status st;
        if (t->split_kind[i] != TOK_SPLIT_REGEX) {
            st = tok_split_custom(t->split_kind[i], cps, cur, nxt);
            /* llama.cpp falls back to std::regex when a splitter yields nothing:
             * only possible for an empty text, which never gets here */
        } else {
            const tok_regex *r = t->split_rx[i];
            st = tok_regex_split(r, tok_regex_collapsed(r) ? sym_c : sym_w, cur, nxt, sc);
        }
        if (st) return st;
        tok_offs *tmp = cur;
        cur = nxt;
        nxt = tmp;
    }
    size_t at = 0;
    for (size_t k = 0; k < cur->n; k++) {
        loom_status st = do_word(&c, cps + at, cur->a[k]);
        if (st) return st;
        at += cur->a[k];
    }
    return LOOM_OK;
}
