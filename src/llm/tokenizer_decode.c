/* Detokenization: token -> bytes, whole sequences, and the streaming decoder
 * that holds back incomplete UTF-8 sequences. */
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

/* Writes the piece (when it fits in cap) and returns its length. *text says
 * whether it is an ordinary text piece (subject to leading-space stripping). */
static size_t piece(const loom_tokenizer *t, int32_t id, unsigned flags, char *buf, size_t cap, bool *text) {
    const char *s = t->arena + t->off[id];
    size_t n = t->len[id];
    uint8_t ty = t->types[id];
    size_t w = 0;
    *text = false;
    switch (ty) {
    case LOOM_TOKEN_CONTROL:
    case LOOM_TOKEN_UNKNOWN:
    case LOOM_TOKEN_UNUSED:
        if (!(flags & LOOM_DETOK_SPECIAL)) return 0;
        /* fall through */
    case LOOM_TOKEN_USER_DEFINED:
        if (n <= cap) memcpy(buf, s, n);
        return n;
    case LOOM_TOKEN_BYTE: {
        int b = byte_of(s, n);
        if (b >= 0) {
            if (cap >= 1) buf[0] = (char)b;
            return 1;
        }
        break; /* malformed byte token: treat as text */
    }
    default:
        break;
    }
    *text = true;
    if (t->type == LOOM_VOCAB_SPM) {
        for (size_t i = 0; i < n;) {
            char ch;
            if (i + 3 <= n && memcmp(s + i, "\xE2\x96\x81", 3) == 0) { ch = ' '; i += 3; }
            else ch = s[i++];
            if (w < cap) buf[w] = ch;
            w++;
        }
        return w;
    }
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t cl = tok_utf8_decode((const unsigned char *)s + i, n - i, &cp);
        if (cp < 324 && t->bpe_dec[cp] >= 0) {
            if (w < cap) buf[w] = (char)t->bpe_dec[cp];
            w++;
        } else {
            for (size_t k = 0; k < cl; k++, w++)
                if (w < cap) buf[w] = s[i + k];
        }
        i += cl;
    }
    return w;
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

loom_status loom_detokenize(const loom_tokenizer *t, const int32_t *ids, int64_t n, unsigned flags, char *buf,
                            size_t size, size_t *len) {
    if (len) *len = 0;
    if (!t || !len || (!ids && n > 0) || n < 0 || (!buf && size)) return LOOM_ERR_INVALID_ARG;
    size_t w = 0;
    bool started = false, strip = t->add_space_prefix && !(flags & LOOM_DETOK_NO_STRIP);
    char tmp[64];
    for (int64_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n_vocab) return LOOM_ERR_RANGE;
        bool text;
        size_t room = w < size ? size - w : 0;
        size_t pn = piece(t, id, flags, w < size ? buf + w : tmp, w < size ? room : 0, &text);
        if (pn == 0) continue;
        size_t skip = 0;
        if (!started && strip && text) {
            /* the first byte of the piece is a space exactly when its text starts with one */
            char first = 0;
            if (pn <= room) first = buf[w];
            else piece(t, id, flags, &first, 1, &text); /* text pieces are written byte by byte */
            if (first == ' ') {
                skip = 1;
                if (pn <= room) memmove(buf + w, buf + w + 1, pn - 1);
            }
        }
        started = true;
        if (w > SIZE_MAX - pn) return LOOM_ERR_RANGE;
        w += pn - skip;
    }
    *len = w;
    if (w < size) buf[w] = 0;
    return w > size ? LOOM_ERR_RANGE : LOOM_OK;
}

/* ---------------------------------------------------------------- streaming */

void loom_detok_stream_init(loom_detok_stream *s, const loom_tokenizer *tok, unsigned flags) {
    if (!s) return;
    memset(s, 0, sizeof *s);
    s->tok = tok;
    s->flags = flags;
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
    if (pn > 0 && !s->started && text && t->add_space_prefix && !(s->flags & LOOM_DETOK_NO_STRIP) &&
        out[np] == ' ') {
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
