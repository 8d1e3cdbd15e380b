/* Token byte trie (loom_grammar_vocab): the pieces of all tokens sorted
 * bytewise; the trie's nodes are the distinct prefixes in preorder, so a
 * node's subtree is the contiguous range [node, node.end) and the tokens under
 * it are contiguous in sorted order. */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_internal.h"
#include "quant/alloc.h"

void loom_grammar_vocab_free(loom_grammar_vocab *v) {
    if (!v) return;
    loom_free(v->nodes);
    loom_free(v->sorted);
    loom_free(v->piece);
    loom_free(v->piece_off);
    loom_free(v->is_eog);
    loom_free(v->eog);
    loom_free(v->nonempty);
    loom_free(v);
}

int32_t loom_grammar_vocab_n_tokens(const loom_grammar_vocab *v) { return v ? v->n_tokens : 0; }

static int cmp_piece_v(const loom_grammar_vocab *v, int32_t a, int32_t b) {
    const uint8_t *pa = v->piece + v->piece_off[a], *pb = v->piece + v->piece_off[b];
    size_t la = (size_t)(v->piece_off[a + 1] - v->piece_off[a]), lb = (size_t)(v->piece_off[b + 1] - v->piece_off[b]);
    size_t n = la < lb ? la : lb;
    int c = memcmp(pa, pb, n);
    if (c) return c;
    if (la != lb) return la < lb ? -1 : 1;
    return a < b ? -1 : a > b ? 1 : 0;
}

/* Merge sort of ids by piece (no global state: vocab builds may run concurrently). */
static void sort_ids(const loom_grammar_vocab *v, int32_t *a, int32_t *tmp, size_t n) {
    if (n < 2) return;
    if (n <= 16) {
        for (size_t i = 1; i < n; i++) {
            int32_t x = a[i];
            size_t j = i;
            while (j > 0 && cmp_piece_v(v, a[j - 1], x) > 0) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = x;
        }
        return;
    }
    size_t h = n / 2;
    sort_ids(v, a, tmp, h);
    sort_ids(v, a + h, tmp, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = cmp_piece_v(v, a[i], a[j]) <= 0 ? a[i++] : a[j++];
    while (i < h) tmp[k++] = a[i++];
    while (j < n) tmp[k++] = a[j++];
    memcpy(a, tmp, n * sizeof *a);
}

loom_status loom_grammar_vocab_new_from_pieces(int32_t n_tokens, const char *const *pieces, const size_t *lens,
                                               const int32_t *eog, int32_t n_eog, loom_grammar_vocab **out,
                                               loom_error *err) {
    if (out) *out = NULL;
    if (!out || n_tokens <= 0 || (!pieces && n_tokens) || !lens || (n_eog > 0 && !eog) || n_eog < 0)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "grammar vocab: bad arguments");
    loom_grammar_vocab *v = loom_calloc(1, sizeof *v);
    if (!v) return loom_error_set(err, LOOM_ERR_NOMEM, "grammar vocab: out of memory");
    size_t nt = (size_t)n_tokens;
    v->n_tokens = n_tokens;
    uint64_t total = 0;
    for (size_t i = 0; i < nt; i++) {
        if (lens[i] && !pieces[i]) {
            loom_grammar_vocab_free(v);
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "grammar vocab: token %zu has a NULL piece", i);
        }
        total += lens[i];
    }
    v->piece_off = loom_malloc((nt + 1) * sizeof(uint64_t));
    v->piece = loom_malloc(total ? (size_t)total : 1);
    v->is_eog = loom_calloc(nt, 1);
    v->eog = loom_malloc(((size_t)n_eog + 1) * sizeof(int32_t));
    v->nonempty = loom_calloc((nt + 63) / 64, sizeof(uint64_t));
    v->sorted = loom_malloc(nt * sizeof(int32_t));
    int32_t *tmp = loom_malloc(nt * sizeof(int32_t));
    if (!v->piece_off || !v->piece || !v->is_eog || !v->eog || !v->nonempty || !v->sorted || !tmp) {
        loom_free(tmp);
        loom_grammar_vocab_free(v);
        return loom_error_set(err, LOOM_ERR_NOMEM, "grammar vocab: out of memory");
    }
    for (int32_t i = 0; i < n_eog; i++) {
        if (eog[i] < 0 || eog[i] >= n_tokens) {
            loom_free(tmp);
            loom_grammar_vocab_free(v);
            return loom_error_set(err, LOOM_ERR_RANGE, "grammar vocab: end-of-generation id %d out of range",
                                  (int)eog[i]);
        }
        if (!v->is_eog[eog[i]]) v->eog[v->n_eog++] = eog[i];
        v->is_eog[eog[i]] = 1;
    }
    uint64_t off = 0;
    size_t n_sorted = 0;
    for (size_t i = 0; i < nt; i++) {
        v->piece_off[i] = off;
        if (lens[i]) memcpy(v->piece + off, pieces[i], lens[i]);
        off += lens[i];
        if (lens[i] > v->max_piece) v->max_piece = lens[i];
        if (lens[i] && !v->is_eog[i]) {
            v->nonempty[i >> 6] |= 1ull << (i & 63);
            v->sorted[n_sorted++] = (int32_t)i;
        }
    }
    v->piece_off[nt] = off;
    sort_ids(v, v->sorted, tmp, n_sorted);
    loom_free(tmp);

    /* nodes: at most 1 + total bytes of the sorted pieces */
    uint64_t cap = 1;
    for (size_t i = 0; i < n_sorted; i++) cap += v->piece_off[v->sorted[i] + 1] - v->piece_off[v->sorted[i]];
    if (cap > UINT32_MAX / 2) {
        loom_grammar_vocab_free(v);
        return loom_error_set(err, LOOM_ERR_RANGE, "grammar vocab: pieces too large");
    }
    v->nodes = loom_malloc((size_t)cap * sizeof(v_node));
    uint32_t *path = loom_malloc((v->max_piece + 1) * sizeof(uint32_t));
    if (!v->nodes || !path) {
        loom_free(path);
        loom_grammar_vocab_free(v);
        return loom_error_set(err, LOOM_ERR_NOMEM, "grammar vocab: out of memory");
    }
    uint32_t nn = 0;
    v->nodes[nn].byte = 0, v->nodes[nn].tok0 = 0, v->nodes[nn].n_tok = 0;
    path[0] = nn++;
    size_t depth = 0; /* current path: path[0..depth] */
    const uint8_t *prev = NULL;
    size_t prev_len = 0;
    for (size_t k = 0; k < n_sorted; k++) {
        int32_t id = v->sorted[k];
        const uint8_t *pc = v->piece + v->piece_off[id];
        size_t len = (size_t)(v->piece_off[id + 1] - v->piece_off[id]);
        size_t common = 0;
        if (prev)
            while (common < len && common < prev_len && pc[common] == prev[common]) common++;
        while (depth > common) v->nodes[path[depth--]].end = nn; /* close subtrees */
        for (size_t d = common; d < len; d++) {
            v_node *nd = &v->nodes[nn];
            nd->byte = pc[d];
            nd->tok0 = (uint32_t)k;
            nd->n_tok = 0;
            path[++depth] = nn++;
        }
        v_node *last = &v->nodes[path[depth]];
        if (last->n_tok == 0) last->tok0 = (uint32_t)k;
        last->n_tok++;
        prev = pc;
        prev_len = len;
    }
    while (depth > 0) v->nodes[path[depth--]].end = nn;
    v->nodes[0].end = nn;
    v->n_nodes = nn;
    loom_free(path);
    v_node *shrunk = loom_realloc(v->nodes, (size_t)nn * sizeof(v_node));
    if (shrunk) v->nodes = shrunk;
    v->bytes = sizeof *v + nn * sizeof(v_node) + nt * (sizeof(int32_t) + sizeof(uint64_t) + 1) + (size_t)total +
               (nt + 63) / 64 * 8;
    *out = v;
    return LOOM_OK;
}

loom_status loom_grammar_vocab_new(const loom_tokenizer *tok, loom_grammar_vocab **out, loom_error *err) {
    if (out) *out = NULL;
    if (!tok || !out) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "grammar vocab: NULL argument");
    int32_t n = loom_tokenizer_n_vocab(tok);
    if (n <= 0) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "grammar vocab: empty vocabulary");
    size_t *lens = loom_malloc((size_t)n * sizeof(size_t));
    const char **pcs = loom_malloc((size_t)n * sizeof(char *));
    int32_t *eog = loom_malloc((size_t)n * sizeof(int32_t));
    char *buf = NULL;
    size_t cap = 0, used = 0;
    loom_status st = LOOM_OK;
    if (!lens || !pcs || !eog) {
        st = loom_error_set(err, LOOM_ERR_NOMEM, "grammar vocab: out of memory");
        goto done;
    }
    /* first pass: sizes */
    int32_t n_eog = 0;
    for (int32_t i = 0; i < n; i++) {
        size_t len = 0;
        char one[1];
        loom_status s = loom_token_to_piece(tok, i, one, 0, &len);
        if (s != LOOM_OK && s != LOOM_ERR_RANGE) {
            st = loom_error_set(err, s, "grammar vocab: piece of token %d", (int)i);
            goto done;
        }
        lens[i] = len;
        cap += len;
        if (loom_tokenizer_is_eog(tok, i)) eog[n_eog++] = i;
    }
    buf = loom_malloc(cap ? cap : 1);
    if (!buf) {
        st = loom_error_set(err, LOOM_ERR_NOMEM, "grammar vocab: out of memory");
        goto done;
    }
    for (int32_t i = 0; i < n; i++) {
        size_t len = 0;
        if (lens[i] && loom_token_to_piece(tok, i, buf + used, cap - used, &len) != LOOM_OK) {
            st = loom_error_set(err, LOOM_ERR_INTERNAL, "grammar vocab: piece of token %d", (int)i);
            goto done;
        }
        pcs[i] = buf + used;
        used += lens[i];
    }
    st = loom_grammar_vocab_new_from_pieces(n, pcs, lens, eog, n_eog, out, err);
done:
    loom_free(lens);
    loom_free(pcs);
    loom_free(eog);
    loom_free(buf);
    return st;
}
