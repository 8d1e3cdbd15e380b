/* Detokenization: token -> bytes (llama.cpp's token_to_piece rules per
 * vocabulary type), whole sequences, and the streaming decoder that holds
 * back incomplete UTF-8 sequences. */
#include <string.h>

#include "llm/tokenizer_internal.h"

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    return -1;
}

/* Byte of a "<0xNN>" text, or -1. */
static int byte_of(const char *s, size_t n) {
    if (n != 6 || s[0] != '<' || s[1] != '0' || s[2] != 'x' || s[5] != '>') return -1;
    int a = hexval(s[3]), b = hexval(s[4]);
    return (a < 0 || b < 0) ? -1 : a * 16 + b;
}

static size_t put(char *buf, size_t cap, size_t w, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++, w++)
        if (w < cap) buf[w] = s[i];
    return w;
}

/* Writes the piece (as much as fits in cap) and returns its full length.
 * *text says whether it is an ordinary text piece (subject to the leading-space
 * strip). */
/* HybriDNA k-mer tokens (after <oov>) carry a U+E000 suffix that is not text. */
static size_t text_len(const loom_tokenizer *t, int32_t id) {
    size_t n = t->len[id];
    if (t->dna && t->dna_oov >= 0 && id > t->dna_oov && n > 3 &&
        memcmp(t->arena + t->off[id] + n - 3, "\xEE\x80\x80", 3) == 0)
        n -= 3;
    return n;
}

static size_t piece(const loom_tokenizer *t, int32_t id, unsigned flags, char *buf, size_t cap, bool *text) {
    const char *s = t->arena + t->off[id];
    size_t n = text_len(t, id);
    uint16_t a = t->attr[id];
    *text = false;
    if (!(flags & LOOM_DETOK_SPECIAL) && (a & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN))) return 0;
    if (t->type == LOOM_VOCAB_RWKV) { /* the unescaped bytes, whatever the type */
        *text = true;
        return put(buf, cap, 0, t->rwkv_arena + t->rwkv_off[id], t->rwkv_len[id]);
    }
    if (t->type == LOOM_VOCAB_PLAMO2) {
        int b = (a & TOK_ATTR_BYTE) ? byte_of(s, n) : -1;
        if (b >= 0) {
            if (cap >= 1) buf[0] = (char)b;
            return 1;
        }
        *text = true;
        return put(buf, cap, 0, s, n);
    }
    if (a & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN | TOK_ATTR_USER_DEFINED)) return put(buf, cap, 0, s, n);
    if (a & TOK_ATTR_NORMAL) {
        *text = true;
        size_t w = 0;
        bool gpt2 = t->type == LOOM_VOCAB_BPE && !t->escape_ws;
        for (size_t i = 0; i < n;) {
            if (!gpt2) {
                if (i + 3 <= n && memcmp(s + i, "\xE2\x96\x81", 3) == 0) {
                    w = put(buf, cap, w, " ", 1);
                    i += 3;
                } else {
                    w = put(buf, cap, w, s + i, 1);
                    i++;
                }
                continue;
            }
            uint32_t cp;
            size_t cl = tok_utf8_decode((const unsigned char *)s + i, n - i, &cp);
            if (cp < 324 && t->bpe_dec[cp] >= 0) {
                char ch = (char)t->bpe_dec[cp];
                w = put(buf, cap, w, &ch, 1);
            } else {
                w = put(buf, cap, w, s + i, cl); /* not in the byte alphabet: kept as is */
            }
            i += cl;
        }
        return w;
    }
    if (a & TOK_ATTR_BYTE) {
        int b = byte_of(s, n);
        if (b >= 0) {
            if (cap >= 1) buf[0] = (char)b;
            return 1;
        }
        if (t->type == LOOM_VOCAB_BPE && t->byte_encode) {
            /* a byte-level vocabulary typing its 256 byte symbols BYTE */
            uint32_t cp;
            size_t cl = tok_utf8_decode((const unsigned char *)s, n, &cp);
            if (cl == n && cp < 324 && t->bpe_dec[cp] >= 0) {
                if (cap >= 1) buf[0] = (char)t->bpe_dec[cp];
                return 1;
            }
        }
        return put(buf, cap, 0, s, n);
    }
    return 0; /* UNUSED / UNDEFINED */
}

loom_status loom_token_to_piece(const loom_tokenizer *t, int32_t id, char *buf, size_t size, size_t *len) {
    if (len) *len = 0;
    if (!t || !len || (!buf && size)) return LOOM_ERR_INVALID_ARG;
    if (id < 0 || id >= t->n_vocab) return LOOM_ERR_RANGE;
    bool text;
    size_t n = piece(t, id, 0, buf, size, &text);
    *len = n;
    return n > size ? LOOM_ERR_RANGE : LOOM_OK;
}

/* The leading space of the first text piece is removed for vocabularies that
 * add one when tokenizing (SentencePiece's add_space_prefix; WordPiece's
 * word-initial U+2581). */
static bool strips(const loom_tokenizer *t, unsigned flags) {
    return !(flags & LOOM_DETOK_NO_STRIP) && (t->add_space_prefix || t->type == LOOM_VOCAB_WPM);
}

/* llama.cpp's clean_up_tokenization_spaces, in place; returns the new length. */
static size_t clean_spaces(char *s, size_t n) {
    size_t w = n ? 1 : 0;
    for (size_t i = 1; i < n; i++) { /* " ?", " !", " .", " ," */
        char x = s[i];
        if (s[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) w--;
        s[w++] = x;
    }
    n = w;
    w = n ? 1 : 0;
    for (size_t i = 1; i < n; i++) { /* " ' " -> "'" */
        char x = s[i];
        if (x == '\'' && i + 1 < n && s[i - 1] == ' ' && s[i + 1] == ' ') {
            w--;
            s[++i] = 0;
        }
        s[w++] = x;
    }
    n = w;
    w = n ? 1 : 0;
    for (size_t i = 1; i < n; i++) { /* " 's", " 'm", " 're", " 've" */
        char x = s[i];
        if (s[i - 1] == ' ' && x == '\'' && i + 1 < n) {
            char x1 = s[i + 1];
            if (x1 == 's' || x1 == 'm') w--;
            else if (i + 2 < n && ((x1 == 'r' && s[i + 2] == 'e') || (x1 == 'v' && s[i + 2] == 'e'))) w--;
        }
        s[w++] = x;
    }
    return w;
}

loom_status loom_detokenize(const loom_tokenizer *t, const int32_t *ids, int32_t n, unsigned flags, char *buf,
                            size_t size, size_t *len) {
    if (len) *len = 0;
    if (!t || !len || (!ids && n > 0) || n < 0 || (!buf && size)) return LOOM_ERR_INVALID_ARG;
    size_t w = 0;
    bool started = false, strip = strips(t, flags);
    for (int32_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n_vocab) return LOOM_ERR_RANGE;
        bool text;
        size_t room = w < size ? size - w : 0;
        size_t pn = piece(t, id, flags, w < size ? buf + w : NULL, room, &text);
        if (pn == 0) continue;
        size_t skip = 0;
        if (!started && strip && text) {
            char first = 0;
            if (pn <= room) first = buf[w];
            else piece(t, id, flags, &first, 1, &text);
            if (first == ' ') {
                skip = 1;
                if (pn <= room) memmove(buf + w, buf + w + 1, pn - 1);
            }
        }
        started = true;
        if (w > SIZE_MAX - pn) return LOOM_ERR_RANGE;
        w += pn - skip;
    }
    if (w <= size && (flags & LOOM_DETOK_CLEAN_SPACES) && t->clean_spaces) w = clean_spaces(buf, w);
    *len = w;
    if (w < size) buf[w] = 0;
    return w > size ? LOOM_ERR_RANGE : LOOM_OK;
}

/* ---------------------------------------------------------------- streaming */

void loom_detok_stream_init(loom_detok_stream *s, const loom_tokenizer *tok, unsigned flags) {
    if (!s) return;
    memset(s, 0, sizeof *s);
    s->tok = tok;
    s->flags = flags & ~LOOM_DETOK_CLEAN_SPACES;
}

/* Bytes at the end of b[0..n) forming an incomplete (but so far well-formed)
 * UTF-8 sequence. */
static size_t incomplete_tail(const unsigned char *b, size_t n) {
    size_t k = 0;
    while (k < n && k < 3 && (b[n - 1 - k] & 0xC0) == 0x80) k++;
    if (k == n) return 0;
    unsigned char lead = b[n - 1 - k];
    size_t need;
    if (lead >= 0xC2 && lead <= 0xDF) need = 2;
    else if (lead >= 0xE0 && lead <= 0xEF) need = 3;
    else if (lead >= 0xF0 && lead <= 0xF4) need = 4;
    else return 0;
    return (k + 1 < need) ? k + 1 : 0;
}

loom_status loom_detok_stream_push(loom_detok_stream *s, int32_t id, char *out, size_t cap, size_t *n) {
    if (n) *n = 0;
    if (!s || !s->tok || !n || (!out && cap)) return LOOM_ERR_INVALID_ARG;
    const loom_tokenizer *t = s->tok;
    if (id < 0 || id >= t->n_vocab) return LOOM_ERR_RANGE;
    bool text;
    size_t np = s->n_pending;
    size_t pn = piece(t, id, s->flags, NULL, 0, &text);
    if (pn > SIZE_MAX - np) return LOOM_ERR_RANGE;
    if (np + pn > cap) {
        *n = np + pn;
        return LOOM_ERR_RANGE;
    }
    memcpy(out, s->pending, np);
    piece(t, id, s->flags, out + np, pn, &text);
    bool nonempty = pn > 0;
    if (pn > 0 && !s->started && text && strips(t, s->flags) && out[np] == ' ') {
        memmove(out + np, out + np + 1, pn - 1);
        pn--;
    }
    if (nonempty) s->started = true;
    size_t total = np + pn;
    size_t hold = incomplete_tail((const unsigned char *)out, total);
    memcpy(s->pending, out + total - hold, hold);
    s->n_pending = (uint8_t)hold;
    *n = total - hold;
    return LOOM_OK;
}

loom_status loom_detok_stream_flush(loom_detok_stream *s, char *out, size_t cap, size_t *n) {
    if (n) *n = 0;
    if (!s || !n || (!out && cap)) return LOOM_ERR_INVALID_ARG;
    if (s->n_pending > cap) {
        *n = s->n_pending;
        return LOOM_ERR_RANGE;
    }
    memcpy(out, s->pending, s->n_pending);
    *n = s->n_pending;
    s->n_pending = 0;
    return LOOM_OK;
}
