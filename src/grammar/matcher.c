/* Grammar matcher: parse stacks advanced byte by byte, token checks, token
 * masks through a walk of the vocabulary trie, and a cache of masks per stack.
 *
 * A stack is (pos, rest): pos a TERM/TOKEN position of the automaton (0: the
 * grammar has accepted), rest a node of the arena: (return position, next
 * node), hash-consed so that equal stacks built in one step share one node and
 * a set of stacks is deduplicated by (pos, rest). Nodes [0, base) belong to
 * the current state; a check or a trie walk allocates above and drops its
 * nodes afterwards; after every accepted token the live nodes are compacted.
 *
 * Masks: the tokens a stack allows depend only on the stack's content, so
 * they are cached per content (pos and the chain of return positions). A miss
 * walks the vocabulary trie depth first with the set of stacks reached by each
 * prefix: a subtree is skipped as soon as no stack survives its prefix, and
 * sets of stacks are shared by all tokens below a node instead of being
 * recomputed per token. */
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_internal.h"
#include "quant/alloc.h"

typedef struct gnode {
    uint32_t ret, next, depth, pad;
    uint64_t h; /* hash of the content (ret chain) */
} gnode;

typedef struct gstk {
    uint32_t pos, rest;
} gstk;

typedef struct centry {
    uint64_t h;
    uint32_t pos, depth;
    uint32_t *chain;   /* depth return positions, top first */
    uint32_t n;        /* dense: words; sparse: ids */
    bool dense;
    void *data;        /* uint64_t words or int32_t ids */
    size_t bytes;
} centry;

typedef struct wframe {
    uint32_t u, c;           /* trie node, next child to try */
    uint32_t set0, set_n;    /* its set of stacks in the set buffer (plain walk) */
    uint32_t top_after, nodes_after;
    uint32_t q;              /* its DFA state (memoised walk) */
} wframe;

struct loom_grammar_matcher {
    const loom_grammar *g;
    const loom_grammar_vocab *v;
    loom_grammar_matcher_params p;
    /* arena */
    gnode *nodes;
    uint32_t n_nodes, cap_nodes, base;
    uint32_t *hc_id, *hc_gen;
    uint32_t hc_cap, hc_gen_cur, hc_inserts;
    uint32_t *remap;
    /* current state */
    gstk *cur;
    uint32_t n_cur, cap_cur;
    centry **cur_entry;
    uint8_t *cur_looked;
    bool accepting, can_continue;
    /* set buffer: sets of stacks stored one after the other */
    gstk *sets;
    uint32_t set_top, cap_sets;
    /* dedup of large sets */
    uint64_t *sd_key;
    uint32_t *sd_gen;
    uint32_t sd_cap, sd_gen_cur;
    bool over_stacks; /* a set exceeded max_stacks during the operation */
    bool oom;
    /* trie walk */
    wframe *frames;
    uint32_t cap_frames;
    /* the walk's sets of stacks, interned as DFA states with memoised byte transitions */
    struct wstate {
        uint32_t off, n; /* in the set buffer */
        uint64_t h;
        bool term;       /* has a stack that can consume a byte */
    } *ws;
    uint32_t n_ws, cap_ws;
    int32_t *delta;  /* cap_ws * 256: next state, WS_UNKNOWN or WS_DEAD */
    uint32_t *wtab;  /* intern table: state + 1 */
    uint32_t wtab_cap;
    uint64_t *scratch_mask; /* n_tokens bits */
    uint32_t mask_words;
    /* cache */
    centry **ctab;
    uint32_t ctab_cap, n_entries;
    size_t cache_used;
    /* stats */
    int64_t walks, hits, checks;
    loom_error last; /* the last accept error through the sampler */
};

#define SD_LINEAR 24 /* sets up to this size are deduplicated by a linear scan */
#define WS_MAX 4096   /* DFA states of one trie walk (then it falls back to plain set advances) */
#define WS_UNKNOWN (-1)
#define WS_DEAD (-2)

loom_grammar_matcher_params loom_grammar_matcher_default_params(void) {
    loom_grammar_matcher_params p;
    p.max_stacks = 4096;
    p.max_depth = 8192;
    p.cache_bytes = (size_t)64 << 20;
    return p;
}

static uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* ---------------------------------------------------------------- arena */

static bool arena_grow(loom_grammar_matcher *m) {
    uint32_t nc = m->cap_nodes * 2;
    if (nc < m->cap_nodes || nc > (1u << 28)) return false;
    gnode *n = loom_realloc(m->nodes, (size_t)nc * sizeof(gnode));
    if (!n) return false;
    m->nodes = n;
    uint32_t *r = loom_realloc(m->remap, (size_t)nc * sizeof(uint32_t));
    if (!r) return false;
    m->remap = r;
    m->cap_nodes = nc;
    /* hash-cons table: twice the node capacity (entries are rebuilt lazily) */
    uint32_t hc = nc * 2;
    uint32_t *id = loom_malloc((size_t)hc * sizeof(uint32_t)), *gen = loom_calloc(hc, sizeof(uint32_t));
    if (!id || !gen) {
        loom_free(id);
        loom_free(gen);
        return false;
    }
    loom_free(m->hc_id);
    loom_free(m->hc_gen);
    m->hc_id = id;
    m->hc_gen = gen;
    m->hc_cap = hc;
    m->hc_gen_cur = 1;
    m->hc_inserts = 0;
    return true;
}

/* The node (ret, next), shared when it exists; 0 (with m->oom or a dropped
 * path) when it cannot be made. depth beyond max_depth: 0 and *dropped. */
static uint32_t cons(loom_grammar_matcher *m, uint32_t ret, uint32_t next, bool *dropped) {
    uint32_t depth = m->nodes[next].depth + 1;
    if (depth > (uint32_t)m->p.max_depth) {
        *dropped = true;
        return 0;
    }
    uint64_t h = mix64(((uint64_t)ret << 32 | next) + 0x9E37);
    uint32_t mask = m->hc_cap - 1;
    uint32_t s = (uint32_t)h & mask;
    for (;;) {
        if (m->hc_gen[s] != m->hc_gen_cur || m->hc_id[s] >= m->n_nodes) break;
        const gnode *nd = &m->nodes[m->hc_id[s]];
        if (nd->ret == ret && nd->next == next && m->hc_id[s] != 0) return m->hc_id[s];
        s = (s + 1) & mask;
    }
    if (m->n_nodes >= m->cap_nodes) {
        if (!arena_grow(m)) {
            m->oom = true;
            *dropped = true;
            return 0;
        }
        /* new table: probe again */
        mask = m->hc_cap - 1;
        s = (uint32_t)h & mask;
        while (m->hc_gen[s] == m->hc_gen_cur && m->hc_id[s] < m->n_nodes) s = (s + 1) & mask;
    }
    if (++m->hc_inserts > m->hc_cap / 2) { /* keep the table at most half full */
        m->hc_gen_cur++;
        m->hc_inserts = 1;
    }
    uint32_t id = m->n_nodes++;
    gnode *nd = &m->nodes[id];
    nd->ret = ret;
    nd->next = next;
    nd->depth = depth;
    nd->pad = 0;
    nd->h = mix64(m->nodes[next].h ^ ((uint64_t)ret * 0x9E3779B97F4A7C15ull));
    m->hc_id[s] = id;
    m->hc_gen[s] = m->hc_gen_cur;
    return id;
}

/* ---------------------------------------------------------------- sets */

static bool sets_reserve(loom_grammar_matcher *m, uint32_t need) {
    if (m->set_top + need <= m->cap_sets) return true;
    uint32_t nc = m->cap_sets ? m->cap_sets : 256;
    while (nc < m->set_top + need) {
        if (nc > (1u << 28)) return false;
        nc *= 2;
    }
    gstk *s = loom_realloc(m->sets, (size_t)nc * sizeof(gstk));
    if (!s) return false;
    m->sets = s;
    m->cap_sets = nc;
    return true;
}

/* Append (pos, rest) to the set being built at [set0, set_top) unless present.
 * Beyond max_stacks the stack is dropped and over_stacks set. */
static void set_add(loom_grammar_matcher *m, uint32_t set0, uint32_t pos, uint32_t rest) {
    uint32_t n = m->set_top - set0;
    uint64_t k = (uint64_t)pos << 32 | rest;
    uint32_t slot = 0;
    if (n < SD_LINEAR) {
        for (uint32_t i = set0; i < m->set_top; i++)
            if (m->sets[i].pos == pos && m->sets[i].rest == rest) return;
    } else {
        if (n == SD_LINEAR) { /* switch to hashing: enter what is there */
            if (++m->sd_gen_cur == 0) {
                memset(m->sd_gen, 0, (size_t)m->sd_cap * sizeof(uint32_t));
                m->sd_gen_cur = 1;
            }
            for (uint32_t i = set0; i < m->set_top; i++) {
                uint64_t ki = (uint64_t)m->sets[i].pos << 32 | m->sets[i].rest;
                uint32_t s = (uint32_t)mix64(ki) & (m->sd_cap - 1);
                while (m->sd_gen[s] == m->sd_gen_cur) s = (s + 1) & (m->sd_cap - 1);
                m->sd_gen[s] = m->sd_gen_cur;
                m->sd_key[s] = ki;
            }
        }
        slot = (uint32_t)mix64(k) & (m->sd_cap - 1);
        while (m->sd_gen[slot] == m->sd_gen_cur) {
            if (m->sd_key[slot] == k) return;
            slot = (slot + 1) & (m->sd_cap - 1);
        }
    }
    if (n >= (uint32_t)m->p.max_stacks) {
        m->over_stacks = true;
        return;
    }
    if (!sets_reserve(m, 1)) {
        m->oom = true;
        return;
    }
    if (n >= SD_LINEAR) {
        m->sd_gen[slot] = m->sd_gen_cur;
        m->sd_key[slot] = k;
    }
    m->sets[m->set_top].pos = pos;
    m->sets[m->set_top].rest = rest;
    m->set_top++;
}

/* Add the stacks reached from position q with return stack rest, before any input. */
static void expand(loom_grammar_matcher *m, uint32_t set0, uint32_t q, uint32_t rest) {
    const loom_grammar *g = m->g;
    for (;;) {
        uint8_t k = g->kind[q];
        if (k == EL_TERM || k == EL_TOKEN || k == EL_TOKEN_NOT) {
            set_add(m, set0, q, rest);
            return;
        }
        if (k == EL_RULE) {
            const g_closure *cl = &g->closures[g->arg[q]];
            for (uint32_t i = 0; i < cl->n_items; i++) {
                const g_item *it = &g->items[cl->item0 + i];
                uint32_t r = rest;
                bool dropped = false;
                for (uint32_t j = 0; j < it->n_push && !dropped; j++) r = cons(m, g->pushes[it->push0 + j], r, &dropped);
                if (!dropped) set_add(m, set0, it->pos, r);
            }
            if (!cl->nullable) return;
        }
        /* END (or a nullable call): return to the caller */
        if (rest == 0) {
            set_add(m, set0, 0, 0);
            return;
        }
        q = m->nodes[rest].ret;
        rest = m->nodes[rest].next;
    }
}

/* Advance the set [s0, s0+n) over byte b into a new set at set_top; returns its size. */
static uint32_t advance(loom_grammar_matcher *m, uint32_t s0, uint32_t n, uint8_t b) {
    const loom_grammar *g = m->g;
    uint32_t d0 = m->set_top;
    for (uint32_t i = 0; i < n; i++) {
        gstk st = m->sets[s0 + i];
        if (g->kind[st.pos] != EL_TERM || st.pos == 0) continue;
        const g_term *t = &g->terms[g->arg[st.pos]];
        for (uint32_t a = 0; a < t->n_arms; a++) {
            const g_arm *arm = &g->arms[t->arm0 + a];
            if ((arm->bits[b >> 6] >> (b & 63)) & 1) {
                expand(m, d0, arm->next, st.rest);
                break; /* arms are disjoint */
            }
        }
    }
    return m->set_top - d0;
}

static bool has_term(const loom_grammar_matcher *m, uint32_t s0, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        if (m->sets[s0 + i].pos && m->g->kind[m->sets[s0 + i].pos] == EL_TERM) return true;
    return false;
}

/* ---------------------------------------------------------------- state */

static void drop_scratch(loom_grammar_matcher *m) {
    m->n_nodes = m->base;
    m->set_top = 0;
}

/* Make the set [s0, s0+n) the current state and compact the arena to its nodes. */
static bool commit(loom_grammar_matcher *m, uint32_t s0, uint32_t n) {
    if (n > m->cap_cur) {
        uint32_t nc = m->cap_cur ? m->cap_cur : 16;
        while (nc < n) nc *= 2;
        gstk *c = loom_realloc(m->cur, (size_t)nc * sizeof(gstk));
        if (!c) return false;
        m->cur = c;
        centry **e = loom_realloc(m->cur_entry, (size_t)nc * sizeof(centry *));
        if (!e) return false;
        m->cur_entry = e;
        uint8_t *l = loom_realloc(m->cur_looked, nc);
        if (!l) return false;
        m->cur_looked = l;
        m->cap_cur = nc;
    }
    if (n) memcpy(m->cur, m->sets + s0, (size_t)n * sizeof(gstk));
    m->n_cur = n;
    /* compaction: mark the live nodes, renumber them in order (next < id) */
    uint32_t *rm = m->remap;
    for (uint32_t i = 0; i < m->n_nodes; i++) rm[i] = UINT32_MAX;
    rm[0] = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t r = m->cur[i].rest; r && rm[r] == UINT32_MAX; r = m->nodes[r].next) rm[r] = 1;
    uint32_t nn = 1;
    for (uint32_t i = 1; i < m->n_nodes; i++) {
        if (rm[i] == UINT32_MAX) continue;
        gnode nd = m->nodes[i];
        nd.next = rm[nd.next];
        rm[i] = nn;
        m->nodes[nn++] = nd;
    }
    for (uint32_t i = 0; i < n; i++) m->cur[i].rest = rm[m->cur[i].rest];
    m->n_nodes = m->base = nn;
    /* the hash-cons table now indexes stale ids: start a new generation with the live nodes */
    m->hc_gen_cur++;
    m->hc_inserts = 0;
    for (uint32_t i = 1; i < nn; i++) {
        uint64_t h = mix64(((uint64_t)m->nodes[i].ret << 32 | m->nodes[i].next) + 0x9E37);
        uint32_t s = (uint32_t)h & (m->hc_cap - 1);
        while (m->hc_gen[s] == m->hc_gen_cur) s = (s + 1) & (m->hc_cap - 1);
        m->hc_id[s] = i;
        m->hc_gen[s] = m->hc_gen_cur;
        m->hc_inserts++;
    }
    m->accepting = m->can_continue = false;
    for (uint32_t i = 0; i < n; i++) {
        if (m->cur[i].pos == 0) m->accepting = true;
        else m->can_continue = true;
        m->cur_entry[i] = NULL;
        m->cur_looked[i] = 0;
    }
    m->set_top = 0;
    return true;
}

void loom_grammar_matcher_reset(loom_grammar_matcher *m) {
    if (!m) return;
    m->n_nodes = m->base = 1;
    m->hc_gen_cur++;
    m->hc_inserts = 0;
    m->set_top = 0;
    m->over_stacks = m->oom = false;
    expand(m, 0, m->g->start, 0);
    uint32_t n = m->set_top;
    if (!commit(m, 0, n)) m->oom = true;
}

bool loom_grammar_matcher_is_accepting(const loom_grammar_matcher *m) { return m && m->accepting; }
bool loom_grammar_matcher_can_continue(const loom_grammar_matcher *m) { return m && m->can_continue; }

/* ---------------------------------------------------------------- cache */

static void centry_free(centry *e) {
    if (!e) return;
    loom_free(e->chain);
    loom_free(e->data);
    loom_free(e);
}

static uint64_t stack_key(const loom_grammar_matcher *m, gstk s) {
    return mix64(m->nodes[s.rest].h ^ ((uint64_t)s.pos * 0xD6E8FEB86659FD93ull) ^ m->nodes[s.rest].depth);
}

static bool centry_matches(const loom_grammar_matcher *m, const centry *e, gstk s, uint64_t h) {
    if (e->h != h || e->pos != s.pos || e->depth != m->nodes[s.rest].depth) return false;
    uint32_t r = s.rest;
    for (uint32_t i = 0; i < e->depth; i++, r = m->nodes[r].next)
        if (e->chain[i] != m->nodes[r].ret) return false;
    return true;
}

static centry *cache_find(loom_grammar_matcher *m, gstk s) {
    if (!m->ctab_cap) return NULL;
    uint64_t h = stack_key(m, s);
    uint32_t i = (uint32_t)h & (m->ctab_cap - 1);
    while (m->ctab[i]) {
        if (centry_matches(m, m->ctab[i], s, h)) return m->ctab[i];
        i = (i + 1) & (m->ctab_cap - 1);
    }
    return NULL;
}

/* Store the walk's mask for stack s (copied, sparse when that is smaller). */
static centry *cache_store(loom_grammar_matcher *m, gstk s, const uint64_t *mask) {
    uint32_t words = m->mask_words, count = 0;
    for (uint32_t w = 0; w < words; w++) count += (uint32_t)__builtin_popcountll(mask[w]);
    bool dense = (size_t)count * sizeof(int32_t) > (size_t)words * sizeof(uint64_t);
    uint32_t depth = m->nodes[s.rest].depth;
    size_t bytes = sizeof(centry) + (size_t)depth * sizeof(uint32_t) +
                   (dense ? (size_t)words * sizeof(uint64_t) : (size_t)count * sizeof(int32_t)) + 2 * sizeof(void *);
    if (m->cache_used + bytes > m->p.cache_bytes) return NULL;
    if ((m->n_entries + 1) * 2 > m->ctab_cap) {
        uint32_t nc = m->ctab_cap ? m->ctab_cap * 2 : 256;
        centry **t = loom_calloc(nc, sizeof(centry *));
        if (!t) return NULL;
        for (uint32_t i = 0; i < m->ctab_cap; i++) {
            centry *e = m->ctab[i];
            if (!e) continue;
            uint32_t j = (uint32_t)e->h & (nc - 1);
            while (t[j]) j = (j + 1) & (nc - 1);
            t[j] = e;
        }
        loom_free(m->ctab);
        m->ctab = t;
        m->ctab_cap = nc;
    }
    centry *e = loom_calloc(1, sizeof *e);
    if (!e) return NULL;
    e->h = stack_key(m, s);
    e->pos = s.pos;
    e->depth = depth;
    e->dense = dense;
    e->chain = loom_malloc((size_t)(depth ? depth : 1) * sizeof(uint32_t));
    e->data = loom_malloc(dense ? (size_t)words * sizeof(uint64_t) : (size_t)(count ? count : 1) * sizeof(int32_t));
    if (!e->chain || !e->data) {
        centry_free(e);
        return NULL;
    }
    uint32_t r = s.rest;
    for (uint32_t i = 0; i < depth; i++, r = m->nodes[r].next) e->chain[i] = m->nodes[r].ret;
    if (dense) {
        memcpy(e->data, mask, (size_t)words * sizeof(uint64_t));
        e->n = words;
    } else {
        int32_t *ids = e->data;
        uint32_t k = 0;
        for (uint32_t w = 0; w < words; w++)
            for (uint64_t x = mask[w]; x; x &= x - 1) ids[k++] = (int32_t)(w * 64 + (uint32_t)__builtin_ctzll(x));
        e->n = k;
    }
    e->bytes = bytes;
    uint32_t j = (uint32_t)e->h & (m->ctab_cap - 1);
    while (m->ctab[j]) j = (j + 1) & (m->ctab_cap - 1);
    m->ctab[j] = e;
    m->n_entries++;
    m->cache_used += bytes;
    return e;
}

static bool centry_has(const centry *e, int32_t tok) {
    if (e->dense) return (((const uint64_t *)e->data)[(uint32_t)tok >> 6] >> (tok & 63)) & 1;
    const int32_t *ids = e->data;
    uint32_t lo = 0, hi = e->n; /* ids are ascending */
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (ids[mid] < tok) lo = mid + 1;
        else hi = mid;
    }
    return lo < e->n && ids[lo] == tok;
}

static void centry_or(const centry *e, uint64_t *mask, uint32_t words) {
    if (e->dense) {
        const uint64_t *d = e->data;
        uint32_t w = e->n < words ? e->n : words;
        for (uint32_t i = 0; i < w; i++) mask[i] |= d[i];
    } else {
        const int32_t *ids = e->data;
        for (uint32_t i = 0; i < e->n; i++)
            if ((uint32_t)ids[i] >> 6 < words) mask[(uint32_t)ids[i] >> 6] |= 1ull << (ids[i] & 63);
    }
}

static centry *lookup_cur(loom_grammar_matcher *m, uint32_t i) {
    if (!m->cur_looked[i]) {
        m->cur_looked[i] = 1;
        m->cur_entry[i] = cache_find(m, m->cur[i]);
    }
    if (m->cur_entry[i]) m->hits++;
    return m->cur_entry[i];
}

/* ---------------------------------------------------------------- trie walk */

static void mark_tokens(const loom_grammar_vocab *v, const v_node *nd, uint64_t *mask) {
    for (uint32_t k = 0; k < nd->n_tok; k++) {
        uint32_t id = (uint32_t)v->sorted[nd->tok0 + k];
        mask[id >> 6] |= 1ull << (id & 63);
    }
}

static bool frames_reserve(loom_grammar_matcher *m) {
    uint32_t need = (uint32_t)m->v->max_piece + 2;
    if (need <= m->cap_frames) return true;
    wframe *f = loom_realloc(m->frames, (size_t)need * sizeof(wframe));
    if (!f) return false;
    m->frames = f;
    m->cap_frames = need;
    return true;
}

/* The plain walk: every node advances its parent's set. Used when the memoised
 * walk runs out of states. */
static bool walk_plain(loom_grammar_matcher *m, uint32_t s0, uint32_t n, uint64_t *mask) {
    const loom_grammar_vocab *v = m->v;
    if (!frames_reserve(m)) return false;
    uint32_t keep_nodes = m->n_nodes, keep_top = m->set_top;
    wframe *fr = m->frames;
    int d = 0;
    fr[0].u = 0;
    fr[0].c = 1;
    fr[0].set0 = s0;
    fr[0].set_n = n;
    fr[0].top_after = m->set_top;
    fr[0].nodes_after = m->n_nodes;
    while (d >= 0) {
        wframe *f = &fr[d];
        const v_node *u = &v->nodes[f->u];
        if (f->c >= u->end) {
            d--;
            continue;
        }
        uint32_t c = f->c;
        const v_node *cn = &v->nodes[c];
        f->c = cn->end;
        m->set_top = f->top_after;
        m->n_nodes = f->nodes_after;
        uint32_t n2 = advance(m, f->set0, f->set_n, cn->byte);
        if (m->oom) break;
        if (!n2) continue;
        mark_tokens(v, cn, mask);
        if (cn->end > c + 1 && has_term(m, f->top_after, n2)) {
            wframe *g = &fr[d + 1];
            g->u = c;
            g->c = c + 1;
            g->set0 = f->top_after;
            g->set_n = n2;
            g->top_after = m->set_top;
            g->nodes_after = m->n_nodes;
            d++;
        }
    }
    m->set_top = keep_top;
    m->n_nodes = keep_nodes;
    return !m->oom;
}

static int cmp_gstk(const void *a, const void *b) {
    const gstk *x = a, *y = b;
    if (x->pos != y->pos) return x->pos < y->pos ? -1 : 1;
    return x->rest < y->rest ? -1 : x->rest > y->rest;
}

/* Intern the set [s0, s0+n) (at the top of the set buffer) as a DFA state:
 * sorted, and dropped again when an equal set exists. Returns the state or -1
 * (no room: the caller falls back to the plain walk). */
static int32_t ws_intern(loom_grammar_matcher *m, uint32_t s0, uint32_t n) {
    gstk *st = m->sets + s0;
    if (n > 1) {
        if (n <= 16) {
            for (uint32_t i = 1; i < n; i++) {
                gstk x = st[i];
                uint32_t j = i;
                while (j > 0 && cmp_gstk(&st[j - 1], &x) > 0) st[j] = st[j - 1], j--;
                st[j] = x;
            }
        } else {
            qsort(st, n, sizeof(gstk), cmp_gstk);
        }
    }
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    for (uint32_t i = 0; i < n; i++) h = mix64(h ^ ((uint64_t)st[i].pos << 32 | st[i].rest));
    uint32_t mask = m->wtab_cap - 1, slot = (uint32_t)h & mask;
    while (m->wtab[slot]) {
        const struct wstate *w = &m->ws[m->wtab[slot] - 1];
        if (w->h == h && w->n == n && !memcmp(m->sets + w->off, st, (size_t)n * sizeof(gstk))) {
            m->set_top = s0; /* drop the copy */
            return (int32_t)(m->wtab[slot] - 1);
        }
        slot = (slot + 1) & mask;
    }
    if (m->n_ws >= WS_MAX) return -1;
    if (m->n_ws >= m->cap_ws) {
        uint32_t nc = m->cap_ws ? m->cap_ws * 2 : 64;
        struct wstate *w = loom_realloc(m->ws, (size_t)nc * sizeof *w);
        if (!w) return m->oom = true, -1;
        m->ws = w;
        int32_t *dl = loom_realloc(m->delta, (size_t)nc * 256 * sizeof(int32_t));
        if (!dl) return m->oom = true, -1;
        m->delta = dl;
        m->cap_ws = nc;
    }
    uint32_t q = m->n_ws++;
    m->ws[q].off = s0;
    m->ws[q].n = n;
    m->ws[q].h = h;
    m->ws[q].term = has_term(m, s0, n);
    for (int b = 0; b < 256; b++) m->delta[(size_t)q * 256 + b] = WS_UNKNOWN;
    m->wtab[slot] = q + 1;
    return (int32_t)q;
}

/* Every non-EOG token with a non-empty piece that the set [s0, s0+n) can
 * consume, ORed into mask. The sets of stacks met during the walk are
 * interned as states of a DFA whose byte transitions are computed once and
 * memoised, so most trie nodes cost one table lookup (inside a string, say,
 * the same few sets recur under every prefix). Scratch is dropped afterwards. */
static bool walk(loom_grammar_matcher *m, uint32_t s0, uint32_t n, uint64_t *mask) {
    const loom_grammar_vocab *v = m->v;
    m->walks++;
    if (!frames_reserve(m)) return false;
    if (!m->wtab) {
        m->wtab_cap = 2 * WS_MAX;
        m->wtab = loom_malloc((size_t)m->wtab_cap * sizeof(uint32_t));
        if (!m->wtab) return false;
    }
    memset(m->wtab, 0, (size_t)m->wtab_cap * sizeof(uint32_t));
    m->n_ws = 0;
    uint32_t keep_nodes = m->n_nodes, keep_top = m->set_top;
    /* the start set, copied to the top so that interning may reorder it */
    if (!sets_reserve(m, n)) return false;
    memmove(m->sets + m->set_top, m->sets + s0, (size_t)n * sizeof(gstk));
    uint32_t t0 = m->set_top;
    m->set_top += n;
    int32_t q0 = ws_intern(m, t0, n);
    bool ok = true;
    if (q0 < 0) {
        m->set_top = keep_top;
        return m->oom ? false : walk_plain(m, s0, n, mask);
    }
    wframe *fr = m->frames;
    int d = 0;
    fr[0].u = 0;
    fr[0].c = 1;
    fr[0].q = (uint32_t)q0;
    while (d >= 0) {
        wframe *f = &fr[d];
        const v_node *u = &v->nodes[f->u];
        if (f->c >= u->end) {
            d--;
            continue;
        }
        uint32_t c = f->c;
        const v_node *cn = &v->nodes[c];
        f->c = cn->end;
        int32_t *slot = &m->delta[(size_t)f->q * 256 + cn->byte];
        int32_t q2 = *slot;
        if (q2 == WS_UNKNOWN) {
            const struct wstate w = m->ws[f->q];
            uint32_t d0 = m->set_top;
            uint32_t n2 = advance(m, w.off, w.n, cn->byte);
            if (m->oom) {
                ok = false;
                break;
            }
            if (!n2) {
                q2 = WS_DEAD;
            } else {
                q2 = ws_intern(m, d0, n2);
                if (q2 < 0) { /* too many states: start over without the memo */
                    ok = !m->oom;
                    m->set_top = keep_top;
                    m->n_nodes = keep_nodes;
                    m->over_stacks = false;
                    return ok && walk_plain(m, s0, n, mask);
                }
            }
            m->delta[(size_t)f->q * 256 + cn->byte] = q2; /* delta may have moved */
        }
        if (q2 == WS_DEAD) continue;
        mark_tokens(v, cn, mask);
        if (cn->end > c + 1 && m->ws[q2].term) {
            wframe *g = &fr[d + 1];
            g->u = c;
            g->c = c + 1;
            g->q = (uint32_t)q2;
            d++;
        }
    }
    m->set_top = keep_top;
    m->n_nodes = keep_nodes;
    return ok && !m->oom;
}

/* ---------------------------------------------------------------- tokens */

static const uint8_t *piece_of(const loom_grammar_vocab *v, int32_t tok, size_t *len) {
    *len = (size_t)(v->piece_off[tok + 1] - v->piece_off[tok]);
    return v->piece + v->piece_off[tok];
}

static bool token_matches(uint8_t kind, uint32_t arg, int32_t tok) {
    return kind == EL_TOKEN ? arg == (uint32_t)tok : arg != (uint32_t)tok;
}

/* Advance [s0, s0+n) over the bytes; returns the final set's size (0: dead);
 * the final set starts at *out0. */
static uint32_t advance_bytes(loom_grammar_matcher *m, uint32_t s0, uint32_t n, const uint8_t *b, size_t len,
                              uint32_t *out0, size_t *fail_at) {
    for (size_t i = 0; i < len && n; i++) {
        uint32_t d0 = m->set_top;
        n = advance(m, s0, n, b[i]);
        s0 = d0;
        if (!n && fail_at) *fail_at = i;
    }
    *out0 = s0;
    return n;
}

bool loom_grammar_matcher_allows(loom_grammar_matcher *m, int32_t tok) {
    if (!m || !m->v || tok < 0 || tok >= m->v->n_tokens) return false;
    const loom_grammar_vocab *v = m->v;
    const loom_grammar *g = m->g;
    m->checks++;
    if (v->is_eog[tok] || !((v->nonempty[tok >> 6] >> (tok & 63)) & 1)) {
        /* no text to match: only an explicit <[id]> (or, for EOG, a complete sentence) */
        if (v->is_eog[tok] && m->accepting) return true;
        for (uint32_t i = 0; i < m->n_cur; i++)
            if (m->cur[i].pos && g->kind[m->cur[i].pos] == EL_TOKEN && g->arg[m->cur[i].pos] == (uint32_t)tok)
                return true;
        return false;
    }
    uint32_t s0 = m->set_top;
    for (uint32_t i = 0; i < m->n_cur; i++) {
        gstk st = m->cur[i];
        if (st.pos == 0) continue;
        uint8_t k = g->kind[st.pos];
        if (k != EL_TERM) {
            if (token_matches(k, g->arg[st.pos], tok)) {
                m->set_top = s0;
                return true;
            }
            continue;
        }
        centry *e = lookup_cur(m, i);
        if (e) {
            if (centry_has(e, tok)) {
                m->set_top = s0;
                return true;
            }
            continue;
        }
        if (!sets_reserve(m, 1)) {
            m->set_top = s0;
            return false;
        }
        m->sets[m->set_top++] = st;
    }
    uint32_t n = m->set_top - s0;
    bool ok = false;
    if (n) {
        size_t len;
        const uint8_t *b = piece_of(v, tok, &len);
        uint32_t o0;
        ok = advance_bytes(m, s0, n, b, len, &o0, NULL) > 0 && !m->oom;
    }
    m->set_top = s0;
    m->n_nodes = m->base;
    m->oom = false;
    m->over_stacks = false;
    return ok;
}

loom_status loom_grammar_matcher_fill_mask(loom_grammar_matcher *m, uint64_t *mask, int32_t n_bits) {
    if (!m || !mask || n_bits < 0) return LOOM_ERR_INVALID_ARG;
    if (!m->v) return LOOM_ERR_INVALID_ARG;
    const loom_grammar_vocab *v = m->v;
    const loom_grammar *g = m->g;
    uint32_t out_words = (uint32_t)(((uint64_t)n_bits + 63) / 64);
    memset(mask, 0, (size_t)out_words * sizeof(uint64_t));
    uint32_t words = m->mask_words < out_words ? m->mask_words : out_words;
    if (m->accepting)
        for (int32_t i = 0; i < v->n_eog; i++)
            if (v->eog[i] < n_bits) mask[v->eog[i] >> 6] |= 1ull << (v->eog[i] & 63);
    for (uint32_t i = 0; i < m->n_cur; i++) {
        gstk st = m->cur[i];
        if (st.pos == 0) continue;
        uint8_t k = g->kind[st.pos];
        if (k == EL_TOKEN) { /* by id, whatever its text (control and EOG tokens too) */
            uint32_t id = g->arg[st.pos];
            if ((int64_t)id < n_bits && id < (uint32_t)v->n_tokens) mask[id >> 6] |= 1ull << (id & 63);
            continue;
        }
        if (k == EL_TOKEN_NOT) {
            uint32_t id = g->arg[st.pos];
            for (uint32_t w = 0; w < words; w++) {
                uint64_t x = v->nonempty[w];
                if (id >> 6 == w) x &= ~(1ull << (id & 63));
                mask[w] |= x;
            }
            continue;
        }
        centry *e = lookup_cur(m, i);
        if (!e) {
            memset(m->scratch_mask, 0, (size_t)m->mask_words * sizeof(uint64_t));
            uint32_t s0 = m->set_top;
            if (!sets_reserve(m, 1)) return LOOM_ERR_NOMEM;
            m->sets[m->set_top++] = st;
            bool ok = walk(m, s0, 1, m->scratch_mask);
            m->set_top = s0;
            m->over_stacks = false;
            if (!ok) {
                m->oom = false;
                return LOOM_ERR_NOMEM;
            }
            e = cache_store(m, st, m->scratch_mask);
            if (e) {
                m->cur_entry[i] = e;
            } else {
                for (uint32_t w = 0; w < words; w++) mask[w] |= m->scratch_mask[w];
                continue;
            }
        }
        centry_or(e, mask, words);
    }
    /* bits beyond n_bits in the last word */
    if (n_bits & 63) mask[out_words - 1] &= (1ull << (n_bits & 63)) - 1;
    return LOOM_OK;
}

/* Advance the current state over one token or raw bytes (tok < 0). */
static loom_status do_accept(loom_grammar_matcher *m, int32_t tok, const uint8_t *b, size_t len, loom_error *err) {
    const loom_grammar *g = m->g;
    m->set_top = 0;
    m->over_stacks = m->oom = false;
    /* the stacks waiting for a whole token */
    uint32_t t0 = 0;
    if (tok >= 0)
        for (uint32_t i = 0; i < m->n_cur; i++) {
            gstk st = m->cur[i];
            if (st.pos == 0) continue;
            uint8_t k = g->kind[st.pos];
            if ((k == EL_TOKEN || k == EL_TOKEN_NOT) && token_matches(k, g->arg[st.pos], tok))
                expand(m, t0, st.pos + 1, st.rest);
        }
    uint32_t n_tok = m->set_top - t0;
    /* the byte stacks */
    uint32_t s0 = m->set_top;
    for (uint32_t i = 0; i < m->n_cur; i++)
        if (m->cur[i].pos && g->kind[m->cur[i].pos] == EL_TERM) {
            if (!sets_reserve(m, 1)) {
                m->oom = true;
                break;
            }
            m->sets[m->set_top++] = m->cur[i];
        }
    uint32_t n = m->set_top - s0, o0 = s0;
    size_t fail_at = 0;
    if (!m->oom && len) n = advance_bytes(m, s0, n, b, len, &o0, &fail_at);
    else if (!len) n = 0;
    if (m->oom) {
        drop_scratch(m);
        return loom_error_set(err, LOOM_ERR_NOMEM, "grammar: out of memory");
    }
    if (m->over_stacks) {
        drop_scratch(m);
        return loom_error_set(err, LOOM_ERR_RANGE,
                              "grammar: more than %d parse stacks at once (grammar too ambiguous)", m->p.max_stacks);
    }
    if (n_tok + n == 0) {
        drop_scratch(m);
        if (tok >= 0) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "grammar: token %d is not allowed here", (int)tok);
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "grammar: byte %zu (0x%02X) is not allowed here", fail_at,
                              len ? b[fail_at] : 0);
    }
    /* union: token stacks [t0, t0+n_tok) and byte stacks [o0, o0+n) */
    uint32_t u0 = m->set_top;
    if (!sets_reserve(m, n_tok + n)) {
        drop_scratch(m);
        return loom_error_set(err, LOOM_ERR_NOMEM, "grammar: out of memory");
    }
    for (uint32_t i = 0; i < n_tok; i++) set_add(m, u0, m->sets[t0 + i].pos, m->sets[t0 + i].rest);
    for (uint32_t i = 0; i < n; i++) set_add(m, u0, m->sets[o0 + i].pos, m->sets[o0 + i].rest);
    if (!commit(m, u0, m->set_top - u0)) {
        drop_scratch(m);
        return loom_error_set(err, LOOM_ERR_NOMEM, "grammar: out of memory");
    }
    return LOOM_OK;
}

loom_status loom_grammar_matcher_accept_token(loom_grammar_matcher *m, int32_t tok, loom_error *err) {
    if (!m || !m->v) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "grammar: matcher without a vocabulary");
    const loom_grammar_vocab *v = m->v;
    if (tok < 0 || tok >= v->n_tokens)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "grammar: token %d outside the vocabulary", (int)tok);
    bool text = !v->is_eog[tok] && ((v->nonempty[tok >> 6] >> (tok & 63)) & 1);
    if (!text) {
        /* an explicit <[id]> advances; otherwise EOG is accepted as the end */
        for (uint32_t i = 0; i < m->n_cur; i++)
            if (m->cur[i].pos && m->g->kind[m->cur[i].pos] == EL_TOKEN && m->g->arg[m->cur[i].pos] == (uint32_t)tok)
                return do_accept(m, tok, NULL, 0, err);
        if (v->is_eog[tok] && m->accepting) return LOOM_OK;
        if (v->is_eog[tok])
            return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                                  "grammar: end of generation (token %d) before the grammar is complete", (int)tok);
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "grammar: token %d has no text", (int)tok);
    }
    size_t len;
    const uint8_t *b = piece_of(v, tok, &len);
    return do_accept(m, tok, b, len, err);
}

loom_status loom_grammar_matcher_accept_bytes(loom_grammar_matcher *m, const void *bytes, size_t len,
                                              loom_error *err) {
    if (!m || (!bytes && len)) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "grammar: NULL argument");
    if (!len) return LOOM_OK;
    return do_accept(m, -1, bytes, len, err);
}

/* ---------------------------------------------------------------- lifecycle */

void loom_grammar_matcher_free(loom_grammar_matcher *m) {
    if (!m) return;
    for (uint32_t i = 0; i < m->ctab_cap; i++) centry_free(m->ctab[i]);
    loom_free(m->ctab);
    loom_free(m->nodes);
    loom_free(m->hc_id);
    loom_free(m->hc_gen);
    loom_free(m->remap);
    loom_free(m->cur);
    loom_free(m->cur_entry);
    loom_free(m->cur_looked);
    loom_free(m->sets);
    loom_free(m->sd_key);
    loom_free(m->sd_gen);
    loom_free(m->frames);
    loom_free(m->scratch_mask);
    loom_free(m->ws);
    loom_free(m->delta);
    loom_free(m->wtab);
    loom_free(m);
}

loom_status loom_grammar_matcher_new(const loom_grammar *g, const loom_grammar_vocab *v,
                                     const loom_grammar_matcher_params *params, loom_grammar_matcher **out,
                                     loom_error *err) {
    if (out) *out = NULL;
    if (!g || !out) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "grammar matcher: NULL argument");
    loom_grammar_matcher_params p = params ? *params : loom_grammar_matcher_default_params();
    if (p.max_stacks < 1 || p.max_stacks > (1 << 20) || p.max_depth < 1 || p.max_depth > (1 << 24))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                              "grammar matcher: max_stacks must be in [1, 2^20], max_depth in [1, 2^24]");
    if (v && g->max_token_id >= v->n_tokens)
        return loom_error_set(err, LOOM_ERR_RANGE, "grammar: token <[%d]> is outside the vocabulary of %d tokens",
                              (int)g->max_token_id, (int)v->n_tokens);
    loom_grammar_matcher *m = loom_calloc(1, sizeof *m);
    if (!m) return loom_error_set(err, LOOM_ERR_NOMEM, "grammar matcher: out of memory");
    m->g = g;
    m->v = v;
    m->p = p;
    m->cap_nodes = 2048;
    m->nodes = loom_malloc((size_t)m->cap_nodes * sizeof(gnode));
    m->remap = loom_malloc((size_t)m->cap_nodes * sizeof(uint32_t));
    m->hc_cap = m->cap_nodes * 2;
    m->hc_id = loom_malloc((size_t)m->hc_cap * sizeof(uint32_t));
    m->hc_gen = loom_calloc(m->hc_cap, sizeof(uint32_t));
    m->sd_cap = 64;
    while (m->sd_cap < (uint32_t)p.max_stacks * 2) m->sd_cap *= 2;
    m->sd_key = loom_malloc((size_t)m->sd_cap * sizeof(uint64_t));
    m->sd_gen = loom_calloc(m->sd_cap, sizeof(uint32_t));
    if (v) {
        m->mask_words = (uint32_t)(((uint64_t)v->n_tokens + 63) / 64);
        m->scratch_mask = loom_malloc((size_t)m->mask_words * sizeof(uint64_t));
    }
    if (!m->nodes || !m->remap || !m->hc_id || !m->hc_gen || !m->sd_key || !m->sd_gen || (v && !m->scratch_mask)) {
        loom_grammar_matcher_free(m);
        return loom_error_set(err, LOOM_ERR_NOMEM, "grammar matcher: out of memory");
    }
    memset(&m->nodes[0], 0, sizeof(gnode));
    m->nodes[0].h = 0x5EEDull;
    m->hc_gen_cur = 1;
    loom_grammar_matcher_reset(m);
    if (m->oom) {
        loom_grammar_matcher_free(m);
        return loom_error_set(err, LOOM_ERR_NOMEM, "grammar matcher: out of memory");
    }
    if (m->over_stacks || m->n_cur == 0) {
        loom_grammar_matcher_free(m);
        return loom_error_set(err, LOOM_ERR_RANGE, "grammar: the start state exceeds the limits (%d stacks, depth %d)",
                              p.max_stacks, p.max_depth);
    }
    *out = m;
    return LOOM_OK;
}

void loom_grammar_matcher_get_stats(const loom_grammar_matcher *m, loom_grammar_matcher_stats *st) {
    if (!st) return;
    memset(st, 0, sizeof *st);
    if (!m) return;
    st->n_stacks = (int32_t)m->n_cur;
    st->mask_walks = m->walks;
    st->cache_hits = m->hits;
    st->token_checks = m->checks;
    st->cache_entries = m->n_entries;
    st->cache_bytes = m->cache_used;
}

/* ---------------------------------------------------------------- sampler */

static int con_allowed(void *u, int32_t tok) { return loom_grammar_matcher_allows(u, tok) ? 1 : 0; }

static loom_status con_mask(void *u, uint64_t *mask, int32_t n_bits) {
    return loom_grammar_matcher_fill_mask(u, mask, n_bits);
}

static loom_status con_accept(void *u, int32_t tok) {
    loom_grammar_matcher *m = u;
    loom_error_clear(&m->last);
    return loom_grammar_matcher_accept_token(m, tok, &m->last);
}

static void con_reset(void *u) { loom_grammar_matcher_reset(u); }

loom_status loom_sampler_set_grammar(loom_sampler *s, loom_grammar_matcher *m) {
    if (!s) return LOOM_ERR_INVALID_ARG;
    if (!m) return loom_sampler_set_constraint(s, NULL);
    if (!m->v) return LOOM_ERR_INVALID_ARG;
    loom_sampler_constraint c;
    c.user = m;
    c.allowed = con_allowed;
    c.fill_mask = con_mask;
    c.accept = con_accept;
    c.reset = con_reset;
    return loom_sampler_set_constraint(s, &c);
}

const char *loom_grammar_matcher_last_error(const loom_grammar_matcher *m) {
    return m && m->last.status != LOOM_OK ? m->last.msg : "";
}
