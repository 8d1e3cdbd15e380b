/* Tokenizer: lookup tables, the byte trie, special-token partitioning (with
 * llama.cpp's lstrip/rstrip rules), the public tokenize entry point and the
 * accessors. Loading is in tokenizer_load.c. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "llm/tokenizer_internal.h"
#include "quant/alloc.h"

/* ------------------------------------------------------------------ buffers */

loom_status tok_buf_reserve(tok_buf *b, size_t n) {
    if (n <= b->cap) return LOOM_OK;
    size_t nc = b->cap ? b->cap : 256;
    while (nc < n) {
        if (nc > SIZE_MAX / 2) return LOOM_ERR_NOMEM;
        nc *= 2;
    }
    void *p = loom_realloc(b->p, nc);
    if (!p) return LOOM_ERR_NOMEM;
    b->p = p;
    b->cap = nc;
    return LOOM_OK;
}

void tok_buf_free(tok_buf *b) {
    loom_free(b->p);
    b->p = NULL;
    b->cap = 0;
}

void tok_scratch_free(tok_scratch *s) {
    tok_buf_free(&s->text);
    tok_buf_free(&s->text2);
    tok_buf_free(&s->cps);
    tok_buf_free(&s->sym_c);
    tok_buf_free(&s->sym_w);
    tok_buf_free(&s->syms);
    tok_buf_free(&s->bt);
    tok_buf_free(&s->misc);
    tok_buf_free(&s->misc2);
    loom_free(s->offs[0].a);
    loom_free(s->offs[1].a);
    loom_free(s->heap.a);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------------ hashing */

uint64_t tok_hash_bytes(uint64_t h, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t hash_final(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

loom_status tok_strmap_init(tok_strmap *m, size_t n) {
    size_t cap = 16;
    while (cap < n * 2) {
        if (cap > SIZE_MAX / 4 / sizeof(tok_slot)) return LOOM_ERR_NOMEM;
        cap *= 2;
    }
    m->slots = loom_malloc(cap * sizeof(tok_slot));
    if (!m->slots) return LOOM_ERR_NOMEM;
    for (size_t i = 0; i < cap; i++) m->slots[i] = (tok_slot){-1, 0};
    m->mask = cap - 1;
    return LOOM_OK;
}

int32_t tok_lookup(const loom_tokenizer *t, const char *s, size_t n) {
    uint64_t h = hash_final(tok_hash_bytes(TOK_HASH_SEED, s, n));
    uint32_t tag = (uint32_t)(h >> 32);
    size_t i = (size_t)h & t->map.mask;
    for (;;) {
        tok_slot sl = t->map.slots[i];
        if (sl.id < 0) return -1;
        if (sl.tag == tag && t->len[sl.id] == n && memcmp(t->arena + t->off[sl.id], s, n) == 0) return sl.id;
        i = (i + 1) & t->map.mask;
    }
}

void tok_map_insert_token(loom_tokenizer *t, int32_t id) {
    const char *s = t->arena + t->off[id];
    size_t n = t->len[id];
    uint64_t h = hash_final(tok_hash_bytes(TOK_HASH_SEED, s, n));
    uint32_t tag = (uint32_t)(h >> 32);
    size_t i = (size_t)h & t->map.mask;
    for (;;) {
        tok_slot *sl = &t->map.slots[i];
        if (sl->id < 0 || (sl->tag == tag && t->len[sl->id] == n && memcmp(t->arena + t->off[sl->id], s, n) == 0)) {
            *sl = (tok_slot){id, tag};
            return;
        }
        i = (i + 1) & t->map.mask;
    }
}

void tok_map_insert_merge(loom_tokenizer *t, int32_t r) {
    const char *s = t->merge_arena + t->merge_off[r];
    size_t n = t->merge_len[r];
    uint64_t h = hash_final(tok_hash_bytes(TOK_HASH_SEED, s, n));
    uint32_t tag = (uint32_t)(h >> 32);
    size_t i = (size_t)h & t->merge_map.mask;
    for (;;) {
        tok_slot *sl = &t->merge_map.slots[i];
        if (sl->id < 0) {
            *sl = (tok_slot){r, tag};
            return;
        }
        if (sl->tag == tag && t->merge_len[sl->id] == n && memcmp(t->merge_arena + t->merge_off[sl->id], s, n) == 0)
            return;
        i = (i + 1) & t->merge_map.mask;
    }
}

int32_t tok_merge_rank(const loom_tokenizer *t, const char *a, size_t na, const char *b, size_t nb) {
    if (!t->merge_map.slots) return -1;
    uint64_t h = tok_hash_bytes(TOK_HASH_SEED, a, na);
    h = tok_hash_bytes(h, " ", 1);
    h = hash_final(tok_hash_bytes(h, b, nb));
    uint32_t tag = (uint32_t)(h >> 32);
    size_t i = (size_t)h & t->merge_map.mask;
    for (;;) {
        tok_slot sl = t->merge_map.slots[i];
        if (sl.id < 0) return -1;
        if (sl.tag == tag) {
            int32_t r = sl.id;
            const char *m = t->merge_arena + t->merge_off[r];
            if (t->merge_split[r] == na && t->merge_len[r] == na + 1 + nb && memcmp(m, a, na) == 0 &&
                memcmp(m + na + 1, b, nb) == 0)
                return r;
        }
        i = (i + 1) & t->merge_map.mask;
    }
}

/* Text-keyed merge index (merges whose parts or result are not tokens). */
static loom_status build_merge_map(loom_tokenizer *t) {
    if (tok_strmap_init(&t->merge_map, (size_t)t->n_merges) != LOOM_OK) return LOOM_ERR_NOMEM;
    for (int32_t j = 0; j < t->n_merges; j++) tok_map_insert_merge(t, j); /* the lowest rank of duplicates wins */
    return LOOM_OK;
}

loom_status tok_build_pairs(loom_tokenizer *t) {
    int32_t n = t->n_merges;
    for (int b = 0; b < 256; b++)
        t->byte_sym[b] = t->byte_encode ? tok_lookup(t, (const char *)t->bpe_enc[b], t->bpe_enc_len[b]) : -1;
    /* LOOM_TOKENIZER_TEXT_MERGES=1 forces the reference (text-keyed) merge path */
    const char *force = getenv("LOOM_TOKENIZER_TEXT_MERGES");
    if (n == 0 || (force && force[0] == '1')) return build_merge_map(t);
    size_t cap = 16;
    while (cap < (size_t)n * 2) {
        if (cap > SIZE_MAX / 4 / sizeof(tok_pair_slot)) return LOOM_ERR_NOMEM;
        cap *= 2;
    }
    tok_pair_slot *sl = loom_malloc(cap * sizeof(tok_pair_slot));
    if (!sl) return LOOM_ERR_NOMEM;
    for (size_t i = 0; i < cap; i++) sl[i] = (tok_pair_slot){UINT64_MAX, -1, -1};
    for (int32_t r = 0; r < n; r++) {
        const char *m = t->merge_arena + t->merge_off[r];
        uint32_t na = t->merge_split[r], nb = t->merge_len[r] - na - 1;
        int32_t a = tok_lookup(t, m, na), b = tok_lookup(t, m + na + 1, nb);
        /* the merged text: "A B" without the space, built in place of a copy */
        char stackbuf[256];
        char *ab = na + nb <= sizeof stackbuf ? stackbuf : loom_malloc(na + nb);
        if (!ab) { loom_free(sl); return LOOM_ERR_NOMEM; }
        memcpy(ab, m, na);
        memcpy(ab + na, m + na + 1, nb);
        int32_t id = tok_lookup(t, ab, na + nb);
        if (ab != stackbuf) loom_free(ab);
        if (a < 0 || b < 0 || id < 0) { /* not closed: merge by text */
            loom_free(sl);
            return build_merge_map(t);
        }
        uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
        size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & (cap - 1);
        while (sl[i].key != UINT64_MAX && sl[i].key != key) i = (i + 1) & (cap - 1);
        if (sl[i].key == UINT64_MAX) sl[i] = (tok_pair_slot){key, r, id}; /* first (lowest rank) wins */
    }
    t->pair_slots = sl;
    t->pair_mask = cap - 1;
    /* the merge strings are no longer needed (tens of MB for large vocabularies) */
    loom_free(t->merge_arena);
    loom_free(t->merge_off);
    loom_free(t->merge_len);
    loom_free(t->merge_split);
    loom_free(t->merge_map.slots);
    t->merge_arena = NULL;
    t->merge_off = NULL;
    t->merge_len = NULL;
    t->merge_split = NULL;
    t->merge_map.slots = NULL;
    return LOOM_OK;
}

/* ------------------------------------------------------------------ heap */

static bool bigram_less(const tok_bigram *x, const tok_bigram *y) {
    return x->key < y->key || (x->key == y->key && x->left < y->left);
}

loom_status tok_heap_push(tok_heap *h, tok_bigram b) {
    if (h->n == h->cap) {
        size_t nc = h->cap ? h->cap * 2 : 64;
        if (nc > SIZE_MAX / sizeof(tok_bigram)) return LOOM_ERR_NOMEM;
        tok_bigram *na = loom_realloc(h->a, nc * sizeof(tok_bigram));
        if (!na) return LOOM_ERR_NOMEM;
        h->a = na;
        h->cap = nc;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!bigram_less(&b, &h->a[p])) break;
        h->a[i] = h->a[p];
        i = p;
    }
    h->a[i] = b;
    return LOOM_OK;
}

bool tok_heap_pop(tok_heap *h, tok_bigram *out) {
    if (h->n == 0) return false;
    *out = h->a[0];
    tok_bigram last = h->a[--h->n];
    size_t i = 0, n = h->n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && bigram_less(&h->a[c + 1], &h->a[c])) c++;
        if (!bigram_less(&h->a[c], &last)) break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (n) h->a[i] = last;
    return true;
}

/* ------------------------------------------------------------------ trie */

typedef struct sort_ctx {
    const char *const *keys;
    const uint32_t *lens;
} sort_ctx;

static int key_cmp(const sort_ctx *c, int32_t a, int32_t b) {
    size_t la = c->lens[a], lb = c->lens[b];
    int r = memcmp(c->keys[a], c->keys[b], la < lb ? la : lb);
    if (r) return r;
    if (la != lb) return la < lb ? -1 : 1;
    return (a > b) - (a < b); /* stable: input order among equal keys */
}

/* bottom-up merge sort of idx by key (no global state, O(n log n)) */
static bool sort_keys(const sort_ctx *c, int32_t *idx, int32_t n) {
    int32_t *tmp = loom_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    if (!tmp) return false;
    for (int32_t w = 1; w < n; w *= 2) {
        for (int32_t lo = 0; lo < n; lo += 2 * w) {
            int32_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = key_cmp(c, idx[i], idx[j]) <= 0 ? idx[i++] : idx[j++];
            while (i < mid) tmp[k++] = idx[i++];
            while (j < hi) tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof(int32_t));
        if (w > INT32_MAX / 2) break;
    }
    loom_free(tmp);
    return true;
}

void tok_trie_free(tok_trie *t) {
    loom_free(t->first);
    loom_free(t->nchild);
    loom_free(t->value);
    loom_free(t->label);
    memset(t, 0, sizeof *t);
}

loom_status tok_trie_build(tok_trie *t, const char *const *keys, const uint32_t *lens, const int32_t *vals,
                           int32_t n) {
    memset(t, 0, sizeof *t);
    for (int i = 0; i < 256; i++) t->root_child[i] = -1;
    int32_t *idx = loom_malloc((size_t)(n ? n : 1) * sizeof(int32_t));
    if (!idx) return LOOM_ERR_NOMEM;
    int32_t m = 0;
    size_t total = 1;
    for (int32_t i = 0; i < n; i++)
        if (lens[i] > 0) {
            idx[m++] = i;
            total += lens[i];
        }
    sort_ctx c = {keys, lens};
    if (total > INT32_MAX || !sort_keys(&c, idx, m)) { loom_free(idx); return LOOM_ERR_NOMEM; }
    /* count nodes: 1 + sum over sorted keys of (len - lcp with the previous key) */
    size_t nodes = 1;
    for (int32_t i = 0; i < m; i++) {
        size_t l = lens[idx[i]], p = 0;
        if (i > 0) {
            size_t lp = lens[idx[i - 1]];
            while (p < l && p < lp && keys[idx[i]][p] == keys[idx[i - 1]][p]) p++;
        }
        nodes += l - p;
    }
    t->first = loom_malloc(nodes * sizeof(int32_t));
    t->nchild = loom_calloc(nodes, sizeof(uint16_t));
    t->value = loom_malloc(nodes * sizeof(int32_t));
    t->label = loom_calloc(nodes, 1);
    /* BFS queue of (node, key range, depth) */
    typedef struct qe { int32_t node, lo, hi, depth; } qe;
    qe *q = loom_malloc(nodes * sizeof(qe));
    if (!t->first || !t->nchild || !t->value || !t->label || !q) {
        loom_free(q);
        loom_free(idx);
        tok_trie_free(t);
        return LOOM_ERR_NOMEM;
    }
    for (size_t i = 0; i < nodes; i++) { t->value[i] = -1; t->first[i] = 0; }
    int32_t nn = 1;
    size_t qh = 0, qt = 0;
    q[qt++] = (qe){0, 0, m, 0};
    while (qh < qt) {
        qe e = q[qh++];
        int32_t lo = e.lo;
        /* a key ending exactly here: the first one in sorted (= input among equals) order wins */
        while (lo < e.hi && (int32_t)lens[idx[lo]] == e.depth) {
            if (t->value[e.node] < 0) t->value[e.node] = vals[idx[lo]];
            lo++;
        }
        t->first[e.node] = nn;
        int32_t k = lo;
        while (k < e.hi) {
            unsigned char ch = (unsigned char)keys[idx[k]][e.depth];
            int32_t j = k + 1;
            while (j < e.hi && (unsigned char)keys[idx[j]][e.depth] == ch) j++;
            int32_t child = nn++;
            t->label[child] = ch;
            t->nchild[e.node]++;
            if (e.node == 0) t->root_child[ch] = child;
            q[qt++] = (qe){child, k, j, e.depth + 1};
            k = j;
        }
    }
    t->n_nodes = nn;
    loom_free(q);
    loom_free(idx);
    return LOOM_OK;
}

/* ------------------------------------------------------------------ special tokens */

static int special_less(const loom_tokenizer *t, int32_t x, int32_t y) {
    if (t->len[x] != t->len[y]) return t->len[x] > t->len[y];
    return x < y;
}

loom_status tok_build_special(loom_tokenizer *t) {
    loom_free(t->special);
    loom_free(t->special_rank);
    tok_trie_free(&t->special_trie);
    t->special = NULL;
    t->n_special = 0;
    const unsigned want = TOK_ATTR_CONTROL | TOK_ATTR_USER_DEFINED | TOK_ATTR_UNKNOWN;
    int32_t ns = 0;
    for (int32_t i = 0; i < t->n_vocab; i++) ns += (t->attr[i] & want) != 0;
    t->special = loom_malloc(((size_t)ns + 1) * sizeof(int32_t));
    t->special_rank = loom_malloc((size_t)t->n_vocab * sizeof(int32_t));
    if (!t->special || !t->special_rank) return LOOM_ERR_NOMEM;
    for (int32_t i = 0; i < t->n_vocab; i++) {
        t->special_rank[i] = -1;
        if (t->attr[i] & want) t->special[t->n_special++] = i;
    }
    /* longest text first, then lowest id (insertion sort on a mostly short list
     * would be quadratic for vocabularies with many added tokens: merge sort) */
    int32_t *tmp = loom_malloc(((size_t)ns + 1) * sizeof(int32_t));
    if (!tmp) return LOOM_ERR_NOMEM;
    int32_t *a = t->special;
    for (int32_t w = 1; w < ns; w *= 2) {
        for (int32_t lo = 0; lo < ns; lo += 2 * w) {
            int32_t mid = lo + w < ns ? lo + w : ns, hi = lo + 2 * w < ns ? lo + 2 * w : ns;
            int32_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = special_less(t, a[j], a[i]) ? a[j++] : a[i++];
            while (i < mid) tmp[k++] = a[i++];
            while (j < hi) tmp[k++] = a[j++];
        }
        memcpy(a, tmp, (size_t)ns * sizeof(int32_t));
    }
    loom_free(tmp);
    for (int32_t r = 0; r < ns; r++) t->special_rank[a[r]] = r;
    /* trie over the special texts; a text shared by several ids maps to the first in rank order */
    const char **keys = loom_malloc(((size_t)ns + 1) * sizeof(char *));
    uint32_t *lens = loom_malloc(((size_t)ns + 1) * sizeof(uint32_t));
    if (!keys || !lens) { loom_free(keys); loom_free(lens); return LOOM_ERR_NOMEM; }
    for (int32_t r = 0; r < ns; r++) {
        keys[r] = t->arena + t->off[a[r]];
        lens[r] = t->len[a[r]];
    }
    loom_status st = tok_trie_build(&t->special_trie, keys, lens, a, ns);
    loom_free(keys);
    loom_free(lens);
    return st;
}

/* ------------------------------------------------------------------ loading */

void loom_tokenizer_free(loom_tokenizer *t) {
    if (!t) return;
    loom_free(t->arena);
    loom_free(t->off);
    loom_free(t->len);
    loom_free(t->scores);
    loom_free(t->types);
    loom_free(t->attr);
    loom_free(t->map.slots);
    loom_free(t->merge_arena);
    loom_free(t->merge_off);
    loom_free(t->merge_len);
    loom_free(t->merge_split);
    loom_free(t->merge_map.slots);
    loom_free(t->pair_slots);
    for (int i = 0; i < t->n_split; i++) tok_regex_free(t->split_rx[i]);
    loom_free(t->special);
    loom_free(t->special_rank);
    tok_trie_free(&t->special_trie);
    loom_free(t->eog);
    loom_free(t->suppress);
    loom_free(t->charsmap);
    tok_trie_free(&t->ugm_trie);
    tok_trie_free(&t->ugm_user);
    tok_trie_free(&t->piece_trie);
    loom_free(t->rwkv_arena);
    loom_free(t->rwkv_off);
    loom_free(t->rwkv_len);
    loom_free(t->plamo_score);
    loom_free(t);
}

loom_status loom_tokenizer_new_from_gguf(const loom_gguf *g, loom_tokenizer **out, loom_error *err) {
    if (!out) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "tokenizer: out is NULL");
    *out = NULL;
    if (!g) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "tokenizer: gguf is NULL");
    loom_tokenizer *t = loom_calloc(1, sizeof *t);
    if (!t) return loom_error_set(err, LOOM_ERR_NOMEM, "tokenizer: out of memory");
    loom_status st = tok_load(t, g, err);
    if (st != LOOM_OK) {
        loom_tokenizer_free(t);
        return st;
    }
    t->max_piece = t->max_token_len ? t->max_token_len : 1;
    *out = t;
    return LOOM_OK;
}

/* ------------------------------------------------------------------ partition */

typedef struct frag {
    int32_t id; /* -1: raw text */
    size_t off, len;
} frag;

typedef struct frag_list {
    frag *a;
    size_t n, cap;
} frag_list;

static loom_status frag_push(frag_list *l, frag f) {
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        if (nc > SIZE_MAX / sizeof(frag)) return LOOM_ERR_NOMEM;
        frag *na = loom_realloc(l->a, nc * sizeof(frag));
        if (!na) return LOOM_ERR_NOMEM;
        l->a = na;
        l->cap = nc;
    }
    l->a[l->n++] = f;
    return LOOM_OK;
}

typedef struct occ {
    int32_t id;
    size_t pos;
} occ;

static int occ_pos_cmp(const void *a, const void *b) {
    const occ *x = a, *y = b;
    return (x->pos > y->pos) - (x->pos < y->pos);
}

static bool c_isspace(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static const char *find_bytes(const char *h, size_t hn, const char *nd, size_t nn) {
    if (nn == 0 || nn > hn) return NULL;
    return memmem(h, hn, nd, nn);
}

/* Split the text at special-token occurrences exactly as llama.cpp's
 * tokenizer_st_partition: tokens are taken in priority order (longest text
 * first); each claims its leftmost non-overlapping occurrences inside the
 * text not yet claimed; LSTRIP / RSTRIP tokens also swallow the ASCII
 * whitespace next to them. Without parse_special only USER_DEFINED tokens
 * (those not also CONTROL/UNKNOWN) take part. One pass over the text with the
 * special-token trie finds which tokens occur at all; only those are searched
 * for, each once over the text (linear per occurring token). */
static loom_status partition(const loom_tokenizer *t, const char *text, size_t len, bool parse_special,
                             const uint8_t *allow, frag_list *l, tok_scratch *sc) {
    l->n = 0;
    if (len == 0) return LOOM_OK;
    const tok_trie *tr = &t->special_trie;
    const unsigned char *u = (const unsigned char *)text;
    int32_t ns = t->n_special, first = ns, n_present = 0;
    uint8_t *present = NULL;
    if (tr->n_nodes > 1) {
        for (size_t p = 0; p < len; p++) {
            int32_t node = tr->root_child[u[p]];
            for (size_t k = p; node >= 0;) {
                int32_t id = tr->value[node];
                if (id >= 0 && (parse_special || !(t->attr[id] & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN)))) {
                    if (!present) {
                        if (tok_buf_reserve(&sc->misc, (size_t)ns)) return LOOM_ERR_NOMEM;
                        present = sc->misc.p;
                        memset(present, 0, (size_t)ns);
                    }
                    int32_t r = t->special_rank[id];
                    if (!present[r]) {
                        present[r] = 1;
                        n_present++;
                        if (r < first) first = r;
                    }
                }
                if (++k >= len) break;
                node = tok_trie_child(tr, node, u[k]);
            }
        }
    }
    if (n_present == 0) return frag_push(l, (frag){-1, 0, len});
    if (tok_buf_reserve(&sc->misc2, len)) return LOOM_ERR_NOMEM;
    uint8_t *claimed = sc->misc2.p; /* 0 free, 1 token, 2 stripped */
    memset(claimed, 0, len);
    occ *oc = NULL;
    size_t n_acc = 0, cap = 0;
    for (int32_t r = first; r < ns; r++) {
        if (!present[r]) continue;
        int32_t id = t->special[r];
        const char *tx = t->arena + t->off[id];
        size_t tl = t->len[id];
        uint16_t a = t->attr[id];
        bool masked = allow && (a & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN));
        for (size_t from = 0; from + tl <= len;) {
            const char *hit = find_bytes(text + from, len - from, tx, tl);
            if (!hit) break;
            size_t pos = (size_t)(hit - text);
            bool free_ = true;
            for (size_t k = pos; k < pos + tl; k++)
                if (claimed[k] || (masked && !allow[k])) { free_ = false; break; }
            if (!free_) { from = pos + 1; continue; }
            memset(claimed + pos, 1, tl);
            if (a & TOK_ATTR_LSTRIP)
                for (size_t k = pos; k > 0 && !claimed[k - 1] && c_isspace(u[k - 1]); k--) claimed[k - 1] = 2;
            size_t end = pos + tl;
            if (a & TOK_ATTR_RSTRIP)
                for (; end < len && !claimed[end] && c_isspace(u[end]); end++) claimed[end] = 2;
            if (n_acc == cap) {
                size_t nc = cap ? cap * 2 : 32;
                occ *na = nc <= SIZE_MAX / sizeof(occ) ? loom_realloc(oc, nc * sizeof(occ)) : NULL;
                if (!na) { loom_free(oc); return LOOM_ERR_NOMEM; }
                oc = na;
                cap = nc;
            }
            oc[n_acc++] = (occ){id, pos};
            from = end;
        }
    }
    if (n_acc > 1) qsort(oc, n_acc, sizeof(occ), occ_pos_cmp); /* oc is NULL when nothing matched */
    loom_status st = LOOM_OK;
    size_t cur = 0;
    for (size_t i = 0; i <= n_acc && st == LOOM_OK; i++) {
        size_t end = i < n_acc ? oc[i].pos : len;
        size_t a = cur, b = end;
        while (a < b && claimed[a]) a++;
        while (b > a && claimed[b - 1]) b--;
        if (b > a) st = frag_push(l, (frag){-1, a, b - a});
        if (i < n_acc && st == LOOM_OK) {
            st = frag_push(l, (frag){oc[i].id, oc[i].pos, t->len[oc[i].id]});
            cur = oc[i].pos + t->len[oc[i].id];
        }
    }
    loom_free(oc);
    return st;
}

/* ------------------------------------------------------------------ tokenize */

/* allow (optional): per byte, whether CONTROL/UNKNOWN tokens may be matched there
 * (parse_special is then "anywhere allowed"). */
static loom_status tokenize_impl(const loom_tokenizer *t, const char *text, size_t len, bool add_bos,
                                 bool parse_special, const uint8_t *allow, int32_t *ids, int32_t max,
                                 int32_t *n_out, loom_error *err) {
    tok_scratch sc;
    memset(&sc, 0, sizeof sc);
    frag_list l = {0};
    loom_status st = partition(t, text, len, parse_special, allow, &l, &sc);
    tok_out out = {ids, max, 0};
    if (st == LOOM_OK) {
        bool special = add_bos; /* llama.cpp's add_special */
        switch (t->type) {
        case LOOM_VOCAB_SPM:
        case LOOM_VOCAB_UGM:
        case LOOM_VOCAB_BPE:
            if (special && t->add_bos && t->bos >= 0) tok_emit(&out, t->bos);
            break;
        case LOOM_VOCAB_WPM:
            if (special && t->bos >= 0) tok_emit(&out, t->bos); /* [CLS] */
            break;
        default:
            break;
        }
        bool prev_special = true;
        for (size_t i = 0; i < l.n && st == LOOM_OK; i++) {
            const frag *f = &l.a[i];
            if (f->id >= 0) {
                tok_emit(&out, f->id);
                prev_special = true;
                continue;
            }
            const char *s = text + f->off;
            switch (t->type) {
            case LOOM_VOCAB_SPM:
                st = tok_spm_fragment(t, s, f->len, t->add_space_prefix && prev_special, &out, &sc);
                break;
            case LOOM_VOCAB_BPE: st = tok_bpe_fragment(t, s, f->len, &out, &sc); break;
            case LOOM_VOCAB_WPM: st = tok_wpm_fragment(t, s, f->len, &out, &sc); break;
            case LOOM_VOCAB_UGM: st = tok_ugm_fragment(t, s, f->len, &out, &sc); break;
            case LOOM_VOCAB_RWKV: st = tok_rwkv_fragment(t, s, f->len, &out); break;
            case LOOM_VOCAB_PLAMO2: st = tok_plamo2_fragment(t, s, f->len, &out, &sc); break;
            }
            prev_special = false;
        }
        if (st == LOOM_OK && special) {
            if (t->type == LOOM_VOCAB_WPM) {
                if (t->sep >= 0) tok_emit(&out, t->sep); /* [SEP] */
            } else if (t->type == LOOM_VOCAB_SPM || t->type == LOOM_VOCAB_UGM || t->type == LOOM_VOCAB_BPE) {
                if (t->add_eos && t->eos >= 0) tok_emit(&out, t->eos);
            }
        }
    }
    loom_free(l.a);
    tok_scratch_free(&sc);
    if (st == LOOM_ERR_FORMAT && t->type == LOOM_VOCAB_UGM)
        return loom_error_set(err, st, "loom_tokenize: the vocabulary's tokenizer.ggml.precompiled_charsmap is malformed");
    if (st == LOOM_ERR_NOMEM) return loom_error_set(err, st, "loom_tokenize: out of memory (%zu bytes of text)", len);
    if (st == LOOM_ERR_RANGE)
        return loom_error_set(err, st, "loom_tokenize: the %s pre-tokenizer needs too many regex steps on this text "
                              "(%zu bytes; pathological input)", t->pre ? t->pre->id : "?", len);
    if (st != LOOM_OK) return loom_error_set(err, st, "loom_tokenize: %s", loom_status_name(st));
    if (out.n > INT32_MAX)
        return loom_error_set(err, LOOM_ERR_RANGE, "loom_tokenize: %lld tokens exceed the int32_t token count",
                              (long long)out.n);
    *n_out = (int32_t)out.n;
    if (out.n > max)
        return loom_error_set(err, LOOM_ERR_RANGE, "loom_tokenize: %lld tokens do not fit in max = %d",
                              (long long)out.n, (int)max);
    return LOOM_OK;
}

loom_status loom_tokenize(const loom_tokenizer *t, const char *text, size_t len, bool add_bos,
                          bool parse_special, int32_t *ids, int32_t max, int32_t *n_out, loom_error *err) {
    if (n_out) *n_out = 0;
    if (!t || !n_out || (!text && len) || (!ids && max > 0))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_tokenize: NULL argument");
    if (max < 0) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_tokenize: max = %d is negative", (int)max);
    if (len > (size_t)INT32_MAX)
        return loom_error_set(err, LOOM_ERR_RANGE, "loom_tokenize: %zu bytes of text exceed 2^31-1", len);
    return tokenize_impl(t, text, len, add_bos, parse_special, NULL, ids, max, n_out, err);
}

loom_status loom_tokenize_segments(const loom_tokenizer *t, const loom_tok_segment *segs, int32_t n_segs,
                                   bool add_bos, int32_t *ids, int32_t max, int32_t *n_out, loom_error *err) {
    if (n_out) *n_out = 0;
    if (!t || !n_out || (!segs && n_segs > 0) || (!ids && max > 0))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_tokenize_segments: NULL argument");
    if (max < 0 || n_segs < 0)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_tokenize_segments: max = %d, n_segs = %d", (int)max,
                              (int)n_segs);
    size_t len = 0;
    bool any = false;
    for (int32_t i = 0; i < n_segs; i++) {
        if (!segs[i].text && segs[i].len)
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_tokenize_segments: segment %d has no text", (int)i);
        if (segs[i].len > (size_t)INT32_MAX - len)
            return loom_error_set(err, LOOM_ERR_RANGE, "loom_tokenize_segments: text exceeds 2^31-1 bytes");
        len += segs[i].len;
        any = any || segs[i].parse_special;
    }
    char *text = loom_malloc(len ? len : 1);
    uint8_t *allow = loom_malloc(len ? len : 1);
    if (!text || !allow) {
        loom_free(text);
        loom_free(allow);
        return loom_error_set(err, LOOM_ERR_NOMEM, "loom_tokenize_segments: out of memory (%zu bytes)", len);
    }
    size_t at = 0;
    for (int32_t i = 0; i < n_segs; i++) {
        if (segs[i].len) memcpy(text + at, segs[i].text, segs[i].len);
        memset(allow + at, segs[i].parse_special ? 1 : 0, segs[i].len);
        at += segs[i].len;
    }
    loom_status st = tokenize_impl(t, text, len, add_bos, any, allow, ids, max, n_out, err);
    loom_free(text);
    loom_free(allow);
    return st;
}

/* ------------------------------------------------------------------ accessors */

int32_t loom_tokenizer_n_vocab(const loom_tokenizer *t) { return t ? t->n_vocab : 0; }
loom_vocab_type loom_tokenizer_type(const loom_tokenizer *t) { return t ? t->type : LOOM_VOCAB_SPM; }
const char *loom_tokenizer_model_name(const loom_tokenizer *t) { return t ? t->model_name : ""; }
const char *loom_tokenizer_pre_name(const loom_tokenizer *t) { return t ? t->pre_name : ""; }
int32_t loom_tokenizer_bos(const loom_tokenizer *t) { return t ? t->bos : -1; }
int32_t loom_tokenizer_eos(const loom_tokenizer *t) { return t ? t->eos : -1; }
int32_t loom_tokenizer_eot(const loom_tokenizer *t) { return t ? t->eot : -1; }
int32_t loom_tokenizer_eom(const loom_tokenizer *t) { return t ? t->eom : -1; }
int32_t loom_tokenizer_unk(const loom_tokenizer *t) { return t ? t->unk : -1; }
int32_t loom_tokenizer_pad(const loom_tokenizer *t) { return t ? t->pad : -1; }
int32_t loom_tokenizer_sep(const loom_tokenizer *t) { return t ? t->sep : -1; }
int32_t loom_tokenizer_cls(const loom_tokenizer *t) {
    if (!t) return -1;
    return t->cls >= 0 ? t->cls : (t->type == LOOM_VOCAB_WPM ? t->bos : -1);
}
int32_t loom_tokenizer_mask(const loom_tokenizer *t) { return t ? t->mask : -1; }
bool loom_tokenizer_add_bos(const loom_tokenizer *t) { return t && t->add_bos; }
bool loom_tokenizer_add_eos(const loom_tokenizer *t) { return t && t->add_eos; }
bool loom_tokenizer_add_sep(const loom_tokenizer *t) { return t && t->add_sep; }
size_t loom_tokenizer_max_piece_len(const loom_tokenizer *t) { return t ? t->max_piece : 0; }

int32_t loom_tokenizer_suppressed(const loom_tokenizer *t, const int32_t **ids) {
    if (ids) *ids = t ? t->suppress : NULL;
    return t ? t->n_suppress : 0;
}

bool loom_tokenizer_is_eog(const loom_tokenizer *t, int32_t id) {
    if (!t || id < 0) return false;
    int32_t lo = 0, hi = t->n_eog;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (t->eog[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < t->n_eog && t->eog[lo] == id;
}

loom_status loom_token_text(const loom_tokenizer *t, int32_t id, const char **text, size_t *len) {
    if (!t || !text || !len) return LOOM_ERR_INVALID_ARG;
    if (id < 0 || id >= t->n_vocab) return LOOM_ERR_RANGE;
    *text = t->arena + t->off[id];
    *len = t->len[id];
    return LOOM_OK;
}

loom_token_type loom_token_get_type(const loom_tokenizer *t, int32_t id) {
    if (!t || id < 0 || id >= t->n_vocab) return LOOM_TOKEN_UNDEFINED;
    uint16_t a = t->attr[id];
    if (a & TOK_ATTR_CONTROL) return LOOM_TOKEN_CONTROL;
    if (a & TOK_ATTR_USER_DEFINED) return LOOM_TOKEN_USER_DEFINED;
    if (a & TOK_ATTR_UNKNOWN) return LOOM_TOKEN_UNKNOWN;
    if (a & TOK_ATTR_BYTE) return LOOM_TOKEN_BYTE;
    if (a & TOK_ATTR_UNUSED) return LOOM_TOKEN_UNUSED;
    if (a & TOK_ATTR_NORMAL) return LOOM_TOKEN_NORMAL;
    return LOOM_TOKEN_UNDEFINED;
}

unsigned loom_token_get_attr(const loom_tokenizer *t, int32_t id) {
    if (!t || id < 0 || id >= t->n_vocab) return 0;
    return t->attr[id];
}

float loom_token_score(const loom_tokenizer *t, int32_t id) {
    if (!t || !t->scores || id < 0 || id >= t->n_vocab) return 0.0f;
    return t->scores[id];
}
