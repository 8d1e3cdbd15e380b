/* Unigram tokenizers.
 *
 * UGM (tokenizer.ggml.model = "t5": T5, XLM-RoBERTa, nomic-bert-moe ...), as
 * llama.cpp's llm_tokenizer_ugm: the fragment is normalised with the
 * SentencePiece precompiled charsmap (an XOR-compressed double array of
 * replacement prefixes; user-defined tokens pass through unchanged, invalid
 * UTF-8 becomes U+FFFD), spaces are escaped to U+2581 (one prepended with
 * add_space_prefix; runs merged with remove_extra_whitespaces), and the
 * Viterbi path of highest total score over the vocabulary pieces is taken
 * (user-defined pieces score 0; an uncovered code point is the unknown token
 * with score min - 10, consecutive unknowns merged).
 *
 * RWKV (tokenizer.ggml.model = "rwkv"): greedy longest match over the
 * unescaped token bytes.
 *
 * PLaMo-2 (tokenizer.ggml.model = "plamo2"): minimum-cost path over code
 * points, cost = -round(score * 1e4) per piece, a code point without a piece
 * costs 10^7 and becomes its UTF-8 byte tokens; ties go to the longest piece. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_internal.h"
#include "quant/alloc.h"

/* ------------------------------------------------------------------ UGM */

loom_status tok_ugm_init(loom_tokenizer *t, char *why, size_t why_size) {
    (void)why;
    (void)why_size;
    int32_t n = t->n_vocab;
    const char **keys = loom_malloc((size_t)n * sizeof(char *));
    uint32_t *lens = loom_malloc((size_t)n * sizeof(uint32_t));
    int32_t *vals = loom_malloc((size_t)n * sizeof(int32_t));
    if (!keys || !lens || !vals) {
        loom_free(keys); loom_free(lens); loom_free(vals);
        return LOOM_ERR_NOMEM;
    }
    float min_score = FLT_MAX;
    int32_t m = 0, mu = 0;
    /* later ids win on duplicate texts (llama.cpp's trie overwrites): feed in reverse */
    for (int32_t i = n - 1; i >= 0; i--) {
        uint16_t a = t->attr[i];
        if ((a & TOK_ATTR_NORMAL) && t->scores && t->scores[i] < min_score) min_score = t->scores[i];
        if (a & (TOK_ATTR_NORMAL | TOK_ATTR_USER_DEFINED | TOK_ATTR_UNUSED)) {
            keys[m] = t->arena + t->off[i];
            lens[m] = t->len[i];
            vals[m] = i;
            m++;
        }
    }
    if (!t->scores) min_score = 0.0f;
    t->ugm_unk_score = (double)(float)(min_score - 10.0f);
    loom_status st = tok_trie_build(&t->ugm_trie, keys, lens, vals, m);
    if (st == LOOM_OK) {
        for (int32_t i = n - 1; i >= 0; i--)
            if (t->attr[i] & TOK_ATTR_USER_DEFINED) {
                keys[mu] = t->arena + t->off[i];
                lens[mu] = t->len[i];
                vals[mu] = i;
                mu++;
            }
        st = tok_trie_build(&t->ugm_user, keys, lens, vals, mu);
    }
    loom_free(keys);
    loom_free(lens);
    loom_free(vals);
    return st;
}

/* XCDA node accessors; false when the index is out of bounds. */
static bool xnode(const loom_tokenizer *t, size_t i, uint32_t *v) {
    if (i >= t->xcda_size) return false;
    *v = t->xcda[i];
    return true;
}
static uint32_t x_base(uint32_t v) { return (v >> 10) << ((v & (1u << 9)) >> 6); }
static uint32_t x_lcheck(uint32_t v) { return v & ((1u << 31) | 0xffu); }
static bool x_leaf(uint32_t v) { return (v >> 8) & 1u; }
static uint32_t x_value(uint32_t v) { return v & ((1u << 31) - 1); }

/* Normalise the prefix at in[off]: replacement in (rep, rep_len), bytes consumed in used. */
static loom_status norm_prefix(const loom_tokenizer *t, const char *in, size_t len, size_t off, const char **rep,
                               size_t *rep_len, size_t *used) {
    /* user-defined tokens: the trie path as far as it goes (llama.cpp's naive_trie::get_longest_prefix) */
    const tok_trie *ut = &t->ugm_user;
    if (ut->n_nodes > 1) {
        size_t k = off;
        int32_t node = 0;
        while (k < len) {
            int32_t c = tok_trie_child(ut, node, (unsigned char)in[k]);
            if (c < 0) break;
            node = c;
            k++;
        }
        if (k > off) {
            *rep = in + off;
            *rep_len = *used = k - off;
            return LOOM_OK;
        }
    }
    size_t best_len = 0, best_off = 0;
    if (t->xcda_size > 0) {
        uint32_t v;
        if (!xnode(t, 0, &v)) return LOOM_ERR_FORMAT;
        size_t node = x_base(v);
        for (size_t p = off; p < len; p++) {
            unsigned char c = (unsigned char)in[p];
            if (c == 0) break;
            node ^= c;
            if (!xnode(t, node, &v)) return LOOM_ERR_FORMAT;
            if (x_lcheck(v) != c) break;
            bool leaf = x_leaf(v);
            node ^= x_base(v);
            if (leaf) {
                if (!xnode(t, node, &v)) return LOOM_ERR_FORMAT;
                best_len = p - off + 1;
                best_off = x_value(v);
            }
        }
    }
    if (best_len > 0) {
        if (best_off >= t->repl_size) return LOOM_ERR_FORMAT;
        const char *r = t->repl + best_off;
        size_t maxl = t->repl_size - best_off, rl = 0;
        while (rl < maxl && r[rl] != 0) rl++;
        if (rl == maxl) return LOOM_ERR_FORMAT;
        *rep = r;
        *rep_len = rl;
        *used = best_len;
        return LOOM_OK;
    }
    uint32_t cp;
    size_t cl = tok_utf8_decode_lax((const unsigned char *)in + off, len - off, &cp);
    if (cp == TOK_CP_INVALID) {
        *rep = "\xEF\xBF\xBD";
        *rep_len = 3;
        *used = 1;
    } else {
        *rep = in + off;
        *rep_len = *used = cl;
    }
    return LOOM_OK;
}

typedef struct best {
    int32_t id;
    size_t from;
    double score;
} best;

loom_status tok_ugm_fragment(const loom_tokenizer *t, const char *text, size_t len, tok_out *out, tok_scratch *sc) {
    /* normalise; the output is at most 3 bytes per input byte plus the spaces */
    const char *space = t->escape_ws ? "\xE2\x96\x81" : " ";
    size_t sl = t->escape_ws ? 3 : 1;
    bool prepend = t->add_space_prefix, merge = t->remove_extra_ws;
    tok_buf *nb = &sc->text;
    size_t cap = 0, w = 0;
    bool prepended = false, in_word = false;
#define NEED(k)                                                                        \
    do {                                                                               \
        if (w + (k) > cap) {                                                           \
            size_t nc_ = (w + (k)) * 2 + 64;                                           \
            if (tok_buf_reserve(nb, nc_)) return LOOM_ERR_NOMEM;                       \
            cap = nc_;                                                                 \
        }                                                                              \
    } while (0)
    for (size_t off = 0; off < len;) {
        const char *rep;
        size_t rl, used;
        loom_status st = norm_prefix(t, text, len, off, &rep, &rl, &used);
        if (st) return st;
        for (size_t i = 0; i < rl; i++) {
            char c = rep[i];
            if (c != ' ') {
                if (!in_word) {
                    in_word = true;
                    if ((prepend && !prepended) || merge) {
                        NEED(sl);
                        memcpy((char *)nb->p + w, space, sl);
                        w += sl;
                        prepended = true;
                    }
                }
                NEED(1);
                ((char *)nb->p)[w++] = c;
            } else {
                in_word = false;
                if (!merge) {
                    NEED(sl);
                    memcpy((char *)nb->p + w, space, sl);
                    w += sl;
                }
            }
        }
        off += used;
    }
#undef NEED
    size_t L = w;
    if (L == 0) return LOOM_OK;
    const char *s = nb->p;
    if (L + 1 > SIZE_MAX / sizeof(best) || tok_buf_reserve(&sc->misc, (L + 1) * sizeof(best))) return LOOM_ERR_NOMEM;
    best *r = sc->misc.p;
    for (size_t i = 0; i <= L; i++) r[i] = (best){t->unk, 0, -DBL_MAX};
    r[0].score = 0;
    const tok_trie *tr = &t->ugm_trie;
    for (size_t off = 0; off < L;) {
        size_t nu = tok_utf8_lead_len((unsigned char)s[off]);
        if (nu > L - off) nu = L - off;
        bool single = false;
        const best cur = r[off];
        int32_t node = tok_trie_child(tr, 0, (unsigned char)s[off]);
        size_t pos = off + 1;
        while (node >= 0) {
            int32_t id = tr->value[node];
            if (id >= 0) {
                if (pos - off == nu) single = true;
                double sc_ = (t->attr[id] & TOK_ATTR_USER_DEFINED) ? 0.0 : (t->scores ? (double)t->scores[id] : 0.0);
                double ch = cur.score + sc_;
                if (ch > r[pos].score) r[pos] = (best){id, off, ch};
            }
            if (pos >= L) break;
            node = tok_trie_child(tr, node, (unsigned char)s[pos++]);
        }
        if (!single) {
            double ch = cur.score + t->ugm_unk_score;
            size_t p = off + nu;
            if (ch > r[p].score) r[p] = (best){t->unk, off, ch};
        }
        off += nu;
    }
    /* backtrack (merging runs of unknown tokens) into scratch, then emit in order */
    size_t cnt = 0;
    bool prev_unk = false;
    for (size_t at = L;;) {
        const best *b = &r[at];
        bool is_unk = b->id == t->unk;
        if (!(prev_unk && is_unk) && b->id >= 0) {
            if (tok_buf_reserve(&sc->syms, (cnt + 1) * sizeof(int32_t))) return LOOM_ERR_NOMEM;
            ((int32_t *)sc->syms.p)[cnt++] = b->id;
        }
        if (b->from == 0) break;
        prev_unk = is_unk;
        at = b->from;
    }
    const int32_t *rev = sc->syms.p;
    while (cnt > 0) tok_emit(out, rev[--cnt]);
    return LOOM_OK;
}

/* ------------------------------------------------------------------ RWKV */

size_t tok_rwkv_unescape(const char *s, size_t n, char *out) {
    size_t w = 0;
    bool esc = false;
    int hex = 0;
    unsigned acc = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (hex) {
            acc = (acc << 4) + (unsigned)((c >= 'a') ? (c - 'a' + 10) : (c - '0'));
            if (--hex == 0) {
                out[w++] = (char)(acc & 0xFF);
                acc = 0;
            }
            continue;
        }
        if (esc) {
            esc = false;
            if (c == 't') out[w++] = '\t';
            else if (c == 'n') out[w++] = '\n';
            else if (c == 'r') out[w++] = '\r';
            else if (c == 'x') hex = 2;
            else out[w++] = c;
            continue;
        }
        if (c == '\\') { esc = true; continue; }
        out[w++] = c;
    }
    return w;
}

loom_status tok_rwkv_init(loom_tokenizer *t, char *why, size_t why_size) {
    (void)why;
    (void)why_size;
    int32_t n = t->n_vocab;
    size_t total = 0;
    for (int32_t i = 0; i < n; i++) total += t->len[i] + 1;
    t->rwkv_arena = loom_malloc(total ? total : 1);
    t->rwkv_off = loom_malloc((size_t)n * sizeof(size_t));
    t->rwkv_len = loom_malloc((size_t)n * sizeof(uint32_t));
    const char **keys = loom_malloc((size_t)n * sizeof(char *));
    int32_t *vals = loom_malloc((size_t)n * sizeof(int32_t));
    if (!t->rwkv_arena || !t->rwkv_off || !t->rwkv_len || !keys || !vals) {
        loom_free(keys); loom_free(vals);
        return LOOM_ERR_NOMEM;
    }
    size_t pos = 0;
    /* the trie keeps the highest id of duplicate byte strings (later inserts win in llama.cpp) */
    for (int32_t i = 0; i < n; i++) {
        size_t l = tok_rwkv_unescape(t->arena + t->off[i], t->len[i], t->rwkv_arena + pos);
        t->rwkv_off[i] = pos;
        t->rwkv_len[i] = (uint32_t)l;
        pos += l + 1;
    }
    for (int32_t k = 0; k < n; k++) {
        int32_t i = n - 1 - k;
        keys[k] = t->rwkv_arena + t->rwkv_off[i];
        vals[k] = i;
    }
    uint32_t *lens = loom_malloc((size_t)n * sizeof(uint32_t));
    loom_status st = LOOM_ERR_NOMEM;
    if (lens) {
        for (int32_t k = 0; k < n; k++) lens[k] = t->rwkv_len[n - 1 - k];
        st = tok_trie_build(&t->piece_trie, keys, lens, vals, n);
    }
    loom_free(lens);
    loom_free(keys);
    loom_free(vals);
    return st;
}

loom_status tok_rwkv_fragment(const loom_tokenizer *t, const char *text, size_t len, tok_out *out) {
    const tok_trie *tr = &t->piece_trie;
    size_t pos = 0;
    while (pos < len) {
        int32_t node = tok_trie_child(tr, 0, (unsigned char)text[pos]);
        if (node < 0) {
            if (t->unk >= 0) tok_emit(out, t->unk);
            pos++;
            continue;
        }
        int32_t id = -1;
        size_t end = pos, p = pos;
        while (node >= 0) {
            if (tr->value[node] >= 0) {
                id = tr->value[node];
                end = p + 1;
            }
            if (p + 1 >= len) break;
            node = tok_trie_child(tr, node, (unsigned char)text[++p]);
        }
        if (id < 0) { /* no piece on the path (llama.cpp would loop forever here) */
            if (t->unk >= 0) tok_emit(out, t->unk);
            pos++;
            continue;
        }
        tok_emit(out, id);
        pos = end;
    }
    return LOOM_OK;
}

/* ------------------------------------------------------------------ PLaMo-2 */

#define PLAMO_UNKNOWN_SCORE (-10000000)

loom_status tok_plamo2_init(loom_tokenizer *t, char *why, size_t why_size) {
    int32_t n = t->n_vocab;
    for (int b = 0; b < 256; b++) {
        if (t->byte_token[b] < 0) {
            snprintf(why, why_size, "PLaMo-2 vocabulary without the byte token <0x%02X>", b);
            return LOOM_ERR_FORMAT;
        }
    }
    t->plamo_score = loom_malloc((size_t)n * sizeof(int32_t));
    const char **keys = loom_malloc((size_t)n * sizeof(char *));
    uint32_t *lens = loom_malloc((size_t)n * sizeof(uint32_t));
    int32_t *vals = loom_malloc((size_t)n * sizeof(int32_t));
    if (!t->plamo_score || !keys || !lens || !vals) {
        loom_free(keys); loom_free(lens); loom_free(vals);
        return LOOM_ERR_NOMEM;
    }
    int32_t m = 0;
    for (int32_t i = n - 1; i >= 0; i--) { /* later ids win on duplicate texts */
        float s = t->scores ? t->scores[i] : 0.0f;
        t->plamo_score[i] = isfinite(s) ? (int32_t)lround((double)s * 1e4) : INT32_MIN;
        if (t->attr[i] & TOK_ATTR_BYTE) continue;
        keys[m] = t->arena + t->off[i];
        lens[m] = t->len[i];
        vals[m] = i;
        m++;
    }
    loom_status st = tok_trie_build(&t->piece_trie, keys, lens, vals, m);
    loom_free(keys);
    loom_free(lens);
    loom_free(vals);
    return st;
}

typedef struct plamo_path {
    int64_t cost;
    int32_t len; /* code points */
    int32_t id;  /* -1: byte fallback */
} plamo_path;

loom_status tok_plamo2_fragment(const loom_tokenizer *t, const char *text, size_t len, tok_out *out,
                                tok_scratch *sc) {
    if (len == 0) return LOOM_OK;
    if (len > SIZE_MAX / 16 || tok_buf_reserve(&sc->cps, len * sizeof(uint32_t)) ||
        tok_buf_reserve(&sc->text, len * 4 + 4) || tok_buf_reserve(&sc->misc, (len + 1) * sizeof(plamo_path)) ||
        tok_buf_reserve(&sc->misc2, (len + 1) * sizeof(size_t)))
        return LOOM_ERR_NOMEM;
    uint32_t *cps = sc->cps.p;
    size_t n = tok_cps_from_utf8(text, len, cps);
    size_t s0 = (n > 0 && cps[0] == 0xFEFF) ? 1 : 0; /* a leading BOM is skipped */
    cps += s0;
    n -= s0;
    if (n == 0) return LOOM_OK;
    /* UTF-8 of the code points, with the byte offset of each */
    unsigned char *u = sc->text.p;
    size_t *bo = sc->misc2.p;
    size_t w = 0;
    for (size_t i = 0; i < n; i++) {
        bo[i] = w;
        w += loom_utf8_encode(cps[i], u + w);
    }
    bo[n] = w;
    plamo_path *p = sc->misc.p;
    p[n] = (plamo_path){0, 0, -1};
    const tok_trie *tr = &t->piece_trie;
    for (size_t i = n; i-- > 0;) {
        /* pieces that are prefixes of cps[i..] (ending on a code point), kept in sc->sym_c */
        size_t nm = 0, cpi = i;
        int32_t node = 0;
        for (size_t b = bo[i]; b < w; b++) {
            node = tok_trie_child(tr, node, u[b]);
            if (node < 0) break;
            bool boundary = b + 1 == bo[cpi + 1];
            if (boundary) cpi++;
            if (boundary && tr->value[node] >= 0) {
                if (tok_buf_reserve(&sc->sym_c, (nm + 1) * 2 * sizeof(uint32_t))) return LOOM_ERR_NOMEM;
                uint32_t *mt = sc->sym_c.p;
                mt[2 * nm] = (uint32_t)(cpi - i);
                mt[2 * nm + 1] = (uint32_t)tr->value[node];
                nm++;
            }
        }
        /* longest first, then the unknown code point; the first of equal costs wins */
        p[i] = (plamo_path){(int64_t)1 << 60, 1, -1};
        const uint32_t *mt = sc->sym_c.p;
        for (size_t k = nm; k-- > 0;) {
            int32_t id = (int32_t)mt[2 * k + 1], sc_ = t->plamo_score[id];
            if (sc_ == INT32_MIN) continue;
            int64_t c = p[i + mt[2 * k]].cost - sc_;
            if (c < p[i].cost) p[i] = (plamo_path){c, (int32_t)mt[2 * k], id};
        }
        int64_t c = p[i + 1].cost - PLAMO_UNKNOWN_SCORE;
        if (c < p[i].cost) p[i] = (plamo_path){c, 1, -1};
    }
    for (size_t i = 0; i < n;) {
        if (p[i].id >= 0) {
            tok_emit(out, p[i].id);
        } else {
            for (size_t b = bo[i]; b < bo[i + 1]; b++) tok_emit(out, t->byte_token[u[b]]);
        }
        i += (size_t)p[i].len;
    }
    return LOOM_OK;
}
