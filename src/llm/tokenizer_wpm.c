/* WordPiece (tokenizer.ggml.model = "bert"), as llama.cpp's llm_tokenizer_wpm.
 *
 * Normalisation (BertNormalizer): the text is decoded to code points (invalid
 * UTF-8 -> U+FFFD); with strip_accents every code point is replaced by the
 * first code point of its NFD decomposition and combining marks are dropped;
 * NUL, U+FFFD and control characters are dropped; whitespace separates words;
 * lowercase applies the simple lowercase mapping; punctuation, ASCII symbols
 * and CJK ideographs become words of their own.
 *
 * Each word is prefixed with U+2581 (the converter stores word-initial pieces
 * as "\u2581piece" and "##piece" continuations as "piece") and split greedily
 * into the longest vocabulary entries from the left; a word with any
 * unmatchable position becomes the unknown token ([UNK]). */
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_internal.h"
#include "quant/alloc.h"

static bool is_chinese(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) ||
           (c >= 0x2B920 && c <= 0x2CEAF) || /* 0x2B820 in the standard; HF's Rust code (and llama.cpp) say 0x2B920 */
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* Greedy longest-match of one word (bytes w[0..n), starting with U+2581). */
static void wpm_word(const loom_tokenizer *t, const char *w, size_t n, tok_out *out) {
    int64_t start = out->n;
    for (size_t i = 0; i < n; i++) {
        bool match = false;
        size_t jmax = i + t->max_token_len + 1 < n ? i + t->max_token_len + 1 : n;
        for (size_t j = jmax; j > i; j--) {
            int32_t id = tok_lookup(t, w + i, j - i);
            if (id >= 0) {
                tok_emit(out, id);
                match = true;
                i = j - 1;
                break;
            }
        }
        if (!match) {
            out->n = start; /* discard the word's pieces */
            break;
        }
    }
    if (out->n == start && t->unk >= 0) tok_emit(out, t->unk);
}

loom_status tok_wpm_fragment(const loom_tokenizer *t, const char *text, size_t len, tok_out *out, tok_scratch *sc) {
    if (len == 0) return LOOM_OK;
    if (len > SIZE_MAX / 8 || tok_buf_reserve(&sc->cps, len * sizeof(uint32_t)) ||
        tok_buf_reserve(&sc->text, 3 + len * 4))
        return LOOM_ERR_NOMEM;
    uint32_t *cps = sc->cps.p;
    size_t n = tok_cps_from_utf8(text, len, cps);
    char *w = sc->text.p; /* current word, with the U+2581 prefix */
    size_t wl = 3;
    memcpy(w, "\xE2\x96\x81", 3);
    for (size_t i = 0; i <= n; i++) {
        uint32_t cp = i < n ? cps[i] : ' ';
        if (t->strip_accents) cp = tok_cp_nfd_first(cp);
        unsigned f = tok_cp_flags(cp);
        if (f & TOK_CP_WHITESPACE) {
            if (wl > 3) wpm_word(t, w, wl, out);
            wl = 3;
            continue;
        }
        if (cp == 0 || cp == 0xFFFD || (f & TOK_CP_CONTROL)) continue;
        if (t->strip_accents && (f & TOK_CP_MARK)) continue;
        unsigned char u[4];
        size_t k = loom_utf8_encode(t->lowercase ? tok_cp_tolower(cp) : cp, u);
        if ((f & TOK_CP_PUNCT) || (cp < 0x7F && (f & TOK_CP_SYMBOL)) || is_chinese(cp)) {
            if (wl > 3) wpm_word(t, w, wl, out);
            memcpy(w + 3, u, k);
            wpm_word(t, w, 3 + k, out);
            wl = 3;
        } else {
            memcpy(w + wl, u, k);
            wl += k;
        }
    }
    return LOOM_OK;
}
