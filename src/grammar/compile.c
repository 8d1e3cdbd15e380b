/* Grammar compiler: IR rules -> automaton (grammar_internal.h).
 *
 * Checks, on the rules reachable from the root: every rule derives some finite
 * string (else the grammar, or that rule, accepts nothing), and no rule can
 * reach itself without consuming input (left recursion, through nullable
 * prefixes too). Character classes become byte-dispatch terminals: a class of
 * code points is compiled into the UTF-8 automaton of its encodings (one state
 * per distinct (remaining continuation bytes, remaining code points) pair), so
 * the matcher consumes token bytes one at a time and a token may end in the
 * middle of a character. Every EL_RULE position gets its closure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_internal.h"
#include "quant/alloc.h"

#define MAX_PUSH_DEPTH 1024          /* return positions pushed before the first byte */
#define MAX_CLOSURE_STEPS (1u << 20) /* DFS steps for one closure */
#define MAX_ITEMS (1u << 22)
#define MAX_PUSHES (1u << 24)
#define MAX_TOTAL_STEPS (1u << 26) /* DFS steps for all closures of a grammar */

typedef struct cc {
    ir_grammar *ir;
    loom_grammar *g;
    loom_error *err;
    loom_status st;
    uint32_t cap_pos, cap_terms, cap_arms, cap_items, cap_pushes, cap_clo;
    uint32_t *rule_alt0;  /* per rule: index into alt_pos */
    uint32_t *rule_nalt;
    uint32_t *alt_pos;    /* start position of each alternative */
    uint32_t n_alt;
    /* UTF-8 state memo (per class) */
    struct dstate { uint32_t k, n, off, pos; } *ds;
    uint32_t n_ds, cap_ds;
    uint32_t *dsr; /* ranges of memoised states */
    uint32_t n_dsr, cap_dsr;
    uint64_t total_steps;
} cc;

static bool grow(void **p, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap) return true;
    uint32_t nc = *cap ? *cap : 64;
    while (nc < need) {
        if (nc > UINT32_MAX / 2) return false;
        nc *= 2;
    }
    void *q = loom_realloc(*p, (size_t)nc * elem);
    if (!q) return false;
    *p = q;
    *cap = nc;
    return true;
}

static bool cfail(cc *c, loom_status st, const char *fmt, const char *a, const char *b) {
    if (c->st != LOOM_OK) return false;
    c->st = st;
    char msg[400];
    snprintf(msg, sizeof msg, fmt, a, b);
    loom_error_set(c->err, st, "grammar: %s", msg);
    return false;
}

static bool c_oom(cc *c) { return cfail(c, LOOM_ERR_NOMEM, "out of memory%s%s", "", ""); }

/* ---------------------------------------------------------------- analysis */

/* Rules reachable from the root (iterative DFS). */
static bool reach(cc *c, uint8_t *reach_) {
    ir_grammar *ir = c->ir;
    uint32_t *st = loom_malloc((size_t)ir->n_rules * sizeof(uint32_t));
    if (!st) return c_oom(c);
    uint32_t n = 0;
    st[n++] = ir->root;
    reach_[ir->root] = 1;
    while (n) {
        const ir_rule *r = &ir->rules[st[--n]];
        for (uint32_t i = 0; i < r->n; i++)
            if (r->syms[i].kind == SYM_RULE && !reach_[r->syms[i].arg]) {
                reach_[r->syms[i].arg] = 1;
                st[n++] = r->syms[i].arg;
            }
    }
    loom_free(st);
    return true;
}

/* Fixpoints: productive (derives a finite string) and nullable (derives ""). */
static void fixpoints(const ir_grammar *ir, const uint8_t *reach_, uint8_t *prod, uint8_t *null) {
    bool changed = true;
    while (changed) {
        changed = false;
        for (uint32_t ri = 0; ri < ir->n_rules; ri++) {
            if (!reach_[ri] || (prod[ri] && null[ri])) continue;
            const ir_rule *r = &ir->rules[ri];
            bool alt_prod = true, alt_null = true;
            for (uint32_t i = 0; i < r->n; i++) {
                const ir_sym *s = &r->syms[i];
                if (s->kind == SYM_ALT || s->kind == SYM_END) {
                    if (alt_prod && !prod[ri]) prod[ri] = 1, changed = true;
                    if (alt_null && !null[ri]) null[ri] = 1, changed = true;
                    alt_prod = alt_null = true;
                } else if (s->kind == SYM_RULE) {
                    if (!prod[s->arg]) alt_prod = false;
                    if (!null[s->arg]) alt_null = false;
                } else {
                    alt_null = false; /* a character or a token: productive, not nullable */
                }
            }
        }
    }
}

static const char *rule_name(const ir_grammar *ir, uint32_t r) { return ir->rules[r].name; }

/* Left recursion: edges r -> s where s can be the first thing r derives. */
static bool left_recursion(cc *c, const uint8_t *reach_, const uint8_t *null) {
    ir_grammar *ir = c->ir;
    uint32_t n = ir->n_rules;
    uint8_t *color = loom_calloc(n, 1); /* 0 new, 1 on stack, 2 done */
    uint32_t *stk_r = loom_malloc((size_t)n * sizeof(uint32_t));
    uint32_t *stk_i = loom_malloc((size_t)n * sizeof(uint32_t));
    if (!color || !stk_r || !stk_i) {
        loom_free(color), loom_free(stk_r), loom_free(stk_i);
        return c_oom(c);
    }
    bool ok = true;
    for (uint32_t s0 = 0; s0 < n && ok; s0++) {
        if (!reach_[s0] || color[s0]) continue;
        uint32_t sp = 0;
        stk_r[sp] = s0, stk_i[sp] = 0, sp++;
        color[s0] = 1;
        while (sp && ok) {
            uint32_t r = stk_r[sp - 1];
            const ir_rule *rr = &ir->rules[r];
            /* find the next leftmost rule reference from position stk_i */
            uint32_t i = stk_i[sp - 1];
            int64_t next = -1;
            while (i < rr->n) {
                /* at the start of an alternative or after nullable rules only */
                bool leftmost = true;
                uint32_t j = i;
                while (j > 0) {
                    const ir_sym *q = &rr->syms[j - 1];
                    if (q->kind == SYM_ALT) break;
                    if (q->kind != SYM_RULE || !null[q->arg]) {
                        leftmost = false;
                        break;
                    }
                    j--;
                }
                const ir_sym *s = &rr->syms[i];
                i++;
                if (leftmost && s->kind == SYM_RULE) {
                    next = s->arg;
                    break;
                }
            }
            stk_i[sp - 1] = i;
            if (next < 0) {
                color[r] = 2;
                sp--;
                continue;
            }
            uint32_t t = (uint32_t)next;
            if (color[t] == 1) {
                /* cycle: t ... r -> t */
                char msg[300];
                size_t mlen = 0;
                uint32_t k = 0;
                while (k < sp && stk_r[k] != t) k++;
                for (uint32_t q = k; q < sp && mlen + 2 < sizeof msg; q++)
                    mlen += (size_t)snprintf(msg + mlen, sizeof msg - mlen, "%s -> ", rule_name(ir, stk_r[q]));
                if (mlen < sizeof msg) snprintf(msg + mlen, sizeof msg - mlen, "%s", rule_name(ir, t));
                cfail(c, LOOM_ERR_FORMAT, "left recursion: %s%s", msg, "");
                ok = false;
            } else if (color[t] == 0) {
                color[t] = 1;
                stk_r[sp] = t, stk_i[sp] = 0, sp++;
            }
        }
    }
    loom_free(color), loom_free(stk_r), loom_free(stk_i);
    return ok;
}

/* ---------------------------------------------------------------- positions */

static int32_t new_pos(cc *c, uint8_t kind, uint32_t arg) {
    loom_grammar *g = c->g;
    if (g->n_pos >= LOOM_GRAMMAR_MAX_ELEMENTS) {
        cfail(c, LOOM_ERR_RANGE, "grammar too large (more than %s automaton positions)%s", "4194304", "");
        return -1;
    }
    uint32_t cap = c->cap_pos;
    if (!grow((void **)&g->kind, &cap, g->n_pos + 1, 1)) return c_oom(c), -1;
    cap = c->cap_pos;
    if (!grow((void **)&g->arg, &cap, g->n_pos + 1, sizeof(uint32_t))) return c_oom(c), -1;
    c->cap_pos = cap;
    g->kind[g->n_pos] = kind;
    g->arg[g->n_pos] = arg;
    return (int32_t)g->n_pos++;
}

/* A terminal with arms (bitmap, target) built from a byte -> target table
 * (0 = no transition). Returns the term index or -1. */
static int64_t make_term(cc *c, const uint32_t *target) {
    loom_grammar *g = c->g;
    uint32_t tg[256], n_t = 0;
    for (int b = 0; b < 256; b++) {
        if (!target[b]) continue;
        uint32_t k = 0;
        while (k < n_t && tg[k] != target[b]) k++;
        if (k == n_t) tg[n_t++] = target[b];
    }
    if (!grow((void **)&g->terms, &c->cap_terms, g->n_terms + 1, sizeof(g_term)) ||
        !grow((void **)&g->arms, &c->cap_arms, g->n_arms + n_t, sizeof(g_arm)))
        return c_oom(c), -1;
    g_term *t = &g->terms[g->n_terms];
    t->arm0 = g->n_arms;
    t->n_arms = n_t;
    for (uint32_t k = 0; k < n_t; k++) {
        g_arm *a = &g->arms[g->n_arms + k];
        memset(a, 0, sizeof *a);
        a->next = tg[k];
        for (int b = 0; b < 256; b++)
            if (target[b] == tg[k]) a->bits[b >> 6] |= 1ull << (b & 63);
    }
    g->n_arms += n_t;
    return g->n_terms++;
}

/* Intersect sorted disjoint ranges r[0..n) (pairs) with [lo, hi], shifted by -base,
 * into out (pairs); returns the count. */
static uint32_t intersect(const uint32_t *r, uint32_t n, uint32_t lo, uint32_t hi, uint32_t base, uint32_t *out) {
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t a = r[2 * i], b = r[2 * i + 1];
        if (b < lo) continue;
        if (a > hi) break;
        out[2 * m] = (a < lo ? lo : a) - base;
        out[2 * m + 1] = (b > hi ? hi : b) - base;
        m++;
    }
    return m;
}

/* Position of the state consuming k more continuation bytes of the code points
 * r[0..n) (offsets in [0, 64^k)), then continuing at exitp. */
static int32_t cont_state(cc *c, uint32_t k, const uint32_t *r, uint32_t n, uint32_t exitp) {
    for (uint32_t i = 0; i < c->n_ds; i++) {
        const struct dstate *d = &c->ds[i];
        if (d->k == k && d->n == n && !memcmp(c->dsr + d->off, r, (size_t)n * 2 * sizeof(uint32_t))) return (int32_t)d->pos;
    }
    uint32_t target[256] = {0};
    uint32_t span = 1u << (6 * (k - 1));
    uint32_t *sub = loom_malloc(((size_t)n + 1) * 2 * sizeof(uint32_t));
    if (!sub) return c_oom(c), -1;
    for (uint32_t j = 0; j < 64; j++) {
        uint32_t lo = j * span, hi = lo + span - 1;
        uint32_t m = intersect(r, n, lo, hi, lo, sub);
        if (!m) continue;
        if (k == 1) {
            target[0x80 + j] = exitp;
        } else {
            int32_t t = cont_state(c, k - 1, sub, m, exitp);
            if (t < 0) {
                loom_free(sub);
                return -1;
            }
            target[0x80 + j] = (uint32_t)t;
        }
    }
    loom_free(sub);
    int64_t term = make_term(c, target);
    if (term < 0) return -1;
    int32_t pos = new_pos(c, EL_TERM, (uint32_t)term);
    if (pos < 0) return -1;
    if (!grow((void **)&c->ds, &c->cap_ds, c->n_ds + 1, sizeof(struct dstate)) ||
        !grow((void **)&c->dsr, &c->cap_dsr, c->n_dsr + 2 * n, sizeof(uint32_t)))
        return c_oom(c), -1;
    memcpy(c->dsr + c->n_dsr, r, (size_t)n * 2 * sizeof(uint32_t));
    c->ds[c->n_ds].k = k, c->ds[c->n_ds].n = n, c->ds[c->n_ds].off = c->n_dsr, c->ds[c->n_ds].pos = (uint32_t)pos;
    c->n_ds++;
    c->n_dsr += 2 * n;
    return pos;
}

/* The lead-byte terminal of charset `set` whose last byte continues at exitp. */
static int64_t class_term(cc *c, uint32_t set, uint32_t exitp) {
    const ir_charset *cs = &c->ir->sets[set];
    const uint32_t *r = c->ir->ranges + cs->off;
    uint32_t n = cs->n;
    uint32_t target[256] = {0};
    c->n_ds = c->n_dsr = 0;
    uint32_t *sub = loom_malloc(((size_t)n + 1) * 2 * sizeof(uint32_t));
    if (!sub) return c_oom(c), -1;
    for (uint32_t b = 0; b < 0xF5; b++) {
        uint32_t lo, hi, len;
        if (b < 0x80) {
            lo = hi = b, len = 1;
        } else if (b >= 0xC2 && b <= 0xDF) {
            lo = (b & 0x1F) << 6, hi = lo + 63, len = 2;
        } else if (b >= 0xE0 && b <= 0xEF) {
            lo = (b & 0x0F) << 12, hi = lo + 0xFFF, len = 3;
            if (lo < 0x800) lo = 0x800;
        } else if (b >= 0xF0) {
            lo = (b & 0x07) << 18, hi = lo + 0x3FFFF, len = 4;
            if (lo < 0x10000) lo = 0x10000;
            if (hi > 0x10FFFF) hi = 0x10FFFF;
        } else {
            continue;
        }
        uint32_t base = len == 1 ? lo : len == 2 ? (b & 0x1F) << 6 : len == 3 ? (b & 0x0F) << 12 : (b & 0x07) << 18;
        uint32_t m = intersect(r, n, lo, hi, base, sub);
        if (!m) continue;
        if (len == 1) {
            target[b] = exitp;
        } else {
            int32_t t = cont_state(c, len - 1, sub, m, exitp);
            if (t < 0) {
                loom_free(sub);
                return -1;
            }
            target[b] = (uint32_t)t;
        }
    }
    loom_free(sub);
    return make_term(c, target);
}

/* ---------------------------------------------------------------- closures */

typedef struct task {
    uint32_t op; /* 0 visit pos, 1 push back arg, 2 pop */
    uint32_t arg;
} task;

typedef struct clo_ctx {
    task *tasks;
    uint32_t n_tasks, cap_tasks;
    uint32_t *push;
    uint32_t n_push, cap_push;
    uint32_t *hash; /* item dedup table: item index + 1 */
    uint32_t hash_cap;
} clo_ctx;

static uint64_t item_hash(uint32_t pos, const uint32_t *p, uint32_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ pos;
    for (uint32_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001B3ull;
    h ^= h >> 29;
    return h * 0xBF58476D1CE4E5B9ull;
}

static bool add_item(cc *c, clo_ctx *x, g_closure *cl, uint32_t pos) {
    loom_grammar *g = c->g;
    /* dedup */
    if (cl->n_items * 2 + 2 > x->hash_cap) {
        uint32_t nc = x->hash_cap ? x->hash_cap * 2 : 64;
        while (nc < cl->n_items * 2 + 2) nc *= 2;
        uint32_t *h = loom_calloc(nc, sizeof(uint32_t));
        if (!h) return c_oom(c);
        loom_free(x->hash);
        x->hash = h;
        x->hash_cap = nc;
        for (uint32_t i = 0; i < cl->n_items; i++) {
            const g_item *it = &g->items[cl->item0 + i];
            uint64_t hv = item_hash(it->pos, g->pushes + it->push0, it->n_push);
            uint32_t s = (uint32_t)hv & (nc - 1);
            while (h[s]) s = (s + 1) & (nc - 1);
            h[s] = i + 1;
        }
    }
    uint64_t hv = item_hash(pos, x->push, x->n_push);
    uint32_t s = (uint32_t)hv & (x->hash_cap - 1);
    while (x->hash[s]) {
        const g_item *it = &g->items[cl->item0 + x->hash[s] - 1];
        if (it->pos == pos && it->n_push == x->n_push &&
            (!x->n_push || !memcmp(g->pushes + it->push0, x->push, (size_t)x->n_push * sizeof(uint32_t))))
            return true;
        s = (s + 1) & (x->hash_cap - 1);
    }
    if (g->n_items >= MAX_ITEMS || g->n_pushes + x->n_push > MAX_PUSHES)
        return cfail(c, LOOM_ERR_RANGE, "grammar too ambiguous: more than %s closure items%s", "4194304", "");
    if (!grow((void **)&g->items, &c->cap_items, g->n_items + 1, sizeof(g_item)) ||
        !grow((void **)&g->pushes, &c->cap_pushes, g->n_pushes + x->n_push + 1, sizeof(uint32_t)))
        return c_oom(c);
    g_item *it = &g->items[g->n_items++];
    it->pos = pos;
    it->push0 = g->n_pushes;
    it->n_push = x->n_push;
    if (x->n_push) memcpy(g->pushes + g->n_pushes, x->push, (size_t)x->n_push * sizeof(uint32_t));
    g->n_pushes += x->n_push;
    x->hash[s] = cl->n_items + 1;
    cl->n_items++;
    return true;
}

static bool push_task(cc *c, clo_ctx *x, uint32_t op, uint32_t arg) {
    if (!grow((void **)&x->tasks, &x->cap_tasks, x->n_tasks + 1, sizeof(task))) return c_oom(c);
    x->tasks[x->n_tasks].op = op;
    x->tasks[x->n_tasks].arg = arg;
    x->n_tasks++;
    return true;
}

static bool closure(cc *c, clo_ctx *x, uint32_t q, g_closure *cl) {
    loom_grammar *g = c->g;
    cl->item0 = g->n_items;
    cl->n_items = 0;
    cl->nullable = false;
    x->n_tasks = x->n_push = 0;
    if (x->hash) memset(x->hash, 0, (size_t)x->hash_cap * sizeof(uint32_t));
    if (!push_task(c, x, 0, q)) return false;
    uint32_t steps = 0;
    while (x->n_tasks) {
        task t = x->tasks[--x->n_tasks];
        if (++steps > MAX_CLOSURE_STEPS || ++c->total_steps > MAX_TOTAL_STEPS)
            return cfail(c, LOOM_ERR_RANGE, "grammar too ambiguous: the expansion of rule '%s' exceeds the limit%s",
                         rule_name(c->ir, g->arg[q]), "");
        if (t.op == 1) {
            x->push[x->n_push++] = t.arg; /* capacity: it was there before */
            continue;
        }
        if (t.op == 2) {
            x->n_push--;
            continue;
        }
        uint32_t pos = t.arg;
        switch (g->kind[pos]) {
        case EL_TERM:
        case EL_TOKEN:
        case EL_TOKEN_NOT:
            if (!add_item(c, x, cl, pos)) return false;
            break;
        case EL_END:
            if (x->n_push == 0) {
                cl->nullable = true;
            } else {
                uint32_t r = x->push[--x->n_push];
                if (!push_task(c, x, 1, r) || !push_task(c, x, 0, r)) return false;
            }
            break;
        case EL_RULE: {
            uint32_t rid = g->arg[pos];
            bool tail = g->kind[pos + 1] == EL_END;
            if (!tail) {
                if (x->n_push >= MAX_PUSH_DEPTH)
                    return cfail(c, LOOM_ERR_RANGE, "rules nested more than 1024 deep before any input (rule '%s')%s",
                                 rule_name(c->ir, rid), "");
                if (!grow((void **)&x->push, &x->cap_push, x->n_push + 1, sizeof(uint32_t))) return c_oom(c);
                x->push[x->n_push++] = pos + 1;
                if (!push_task(c, x, 2, 0)) return false;
            }
            for (uint32_t a = c->rule_nalt[rid]; a-- > 0;)
                if (!push_task(c, x, 0, c->alt_pos[c->rule_alt0[rid] + a])) return false;
            break;
        }
        }
    }
    return true;
}

/* ---------------------------------------------------------------- driver */

void loom_grammar_free(loom_grammar *g) {
    if (!g) return;
    loom_free(g->kind);
    loom_free(g->arg);
    loom_free(g->terms);
    loom_free(g->arms);
    loom_free(g->closures);
    loom_free(g->items);
    loom_free(g->pushes);
    loom_free(g);
}

void loom_grammar_get_info(const loom_grammar *g, loom_grammar_info *info) {
    if (!info) return;
    memset(info, 0, sizeof *info);
    if (!g) return;
    info->n_rules = (int32_t)g->n_rules;
    info->n_elements = (int32_t)g->n_pos;
    info->n_terminals = (int32_t)g->n_terms;
    info->n_token_refs = g->n_token_refs;
    info->bytes = g->bytes;
}

static bool emit(cc *c, const uint8_t *reach_) {
    ir_grammar *ir = c->ir;
    loom_grammar *g = c->g;
    /* alternative table */
    c->rule_alt0 = loom_calloc(ir->n_rules, sizeof(uint32_t));
    c->rule_nalt = loom_calloc(ir->n_rules, sizeof(uint32_t));
    if (!c->rule_alt0 || !c->rule_nalt) return c_oom(c);
    uint32_t n_alt = 0, n_seq = 3; /* 0 reserved, 1 = call root, 2 = END */
    for (uint32_t ri = 0; ri < ir->n_rules; ri++) {
        if (!reach_[ri]) continue;
        const ir_rule *r = &ir->rules[ri];
        c->rule_alt0[ri] = n_alt;
        for (uint32_t i = 0; i < r->n; i++) {
            if (r->syms[i].kind == SYM_ALT || r->syms[i].kind == SYM_END) c->rule_nalt[ri]++, n_alt++;
            n_seq++;
        }
    }
    if (n_seq > LOOM_GRAMMAR_MAX_ELEMENTS)
        return cfail(c, LOOM_ERR_RANGE, "grammar too large (more than %s automaton positions)%s", "4194304", "");
    c->alt_pos = loom_malloc(((size_t)n_alt + 1) * sizeof(uint32_t));
    if (!c->alt_pos) return c_oom(c);
    c->n_alt = n_alt;
    /* sequence positions first, so that P+1 is the next symbol; classes' extra
     * UTF-8 states are appended after them */
    if (new_pos(c, EL_END, 0) < 0 || new_pos(c, EL_RULE, ir->root) < 0 || new_pos(c, EL_END, 0) < 0) return false;
    uint32_t a = 0;
    for (uint32_t ri = 0; ri < ir->n_rules; ri++) {
        if (!reach_[ri]) continue;
        const ir_rule *r = &ir->rules[ri];
        bool start = true;
        for (uint32_t i = 0; i < r->n; i++) {
            const ir_sym *s = &r->syms[i];
            if (start) c->alt_pos[a++] = g->n_pos;
            start = false;
            int32_t pos;
            switch (s->kind) {
            case SYM_ALT:
            case SYM_END: pos = new_pos(c, EL_END, 0), start = true; break;
            case SYM_RULE: pos = new_pos(c, EL_RULE, s->arg); break;
            case SYM_TOKEN:
            case SYM_TOKEN_NOT:
                pos = new_pos(c, s->kind == SYM_TOKEN ? EL_TOKEN : EL_TOKEN_NOT, s->arg);
                if ((int32_t)s->arg > g->max_token_id) g->max_token_id = (int32_t)s->arg;
                g->n_token_refs++;
                break;
            default: pos = new_pos(c, EL_TERM, s->arg); break; /* charset index for now */
            }
            if (pos < 0) return false;
        }
    }
    /* terminals: each class position becomes a lead-byte dispatch to P+1 */
    uint32_t n_seq_pos = g->n_pos;
    for (uint32_t pos = 0; pos < n_seq_pos; pos++) {
        if (g->kind[pos] != EL_TERM) continue;
        int64_t t = class_term(c, g->arg[pos], pos + 1);
        if (t < 0) return false;
        g->arg[pos] = (uint32_t)t;
    }
    return true;
}

static bool build_closures(cc *c) {
    loom_grammar *g = c->g;
    clo_ctx x;
    memset(&x, 0, sizeof x);
    uint32_t n_rule_pos = 0;
    for (uint32_t p = 0; p < g->n_pos; p++) n_rule_pos += g->kind[p] == EL_RULE;
    g->closures = loom_malloc(((size_t)n_rule_pos + 1) * sizeof(g_closure));
    uint32_t *clo_of = loom_malloc(((size_t)g->n_pos + 1) * sizeof(uint32_t));
    bool ok = g->closures && clo_of;
    if (!ok) c_oom(c);
    for (uint32_t p = 0; p < g->n_pos && ok; p++) {
        if (g->kind[p] != EL_RULE) continue;
        ok = closure(c, &x, p, &g->closures[g->n_closures]);
        clo_of[p] = g->n_closures++;
    }
    /* EL_RULE positions refer to their closure from now on (the rule id is in it) */
    if (ok)
        for (uint32_t p = 0; p < g->n_pos; p++)
            if (g->kind[p] == EL_RULE) g->arg[p] = clo_of[p];
    loom_free(clo_of);
    loom_free(x.tasks);
    loom_free(x.push);
    loom_free(x.hash);
    return ok;
}

loom_status grammar_compile(ir_grammar *ir, loom_grammar **out, loom_error *err) {
    *out = NULL;
    cc c;
    memset(&c, 0, sizeof c);
    c.ir = ir;
    c.err = err;
    uint32_t n = ir->n_rules;
    uint8_t *reach_ = loom_calloc(n, 1), *prod = loom_calloc(n, 1), *null = loom_calloc(n, 1);
    loom_grammar *g = loom_calloc(1, sizeof *g);
    if (!reach_ || !prod || !null || !g) {
        c_oom(&c);
        goto done;
    }
    g->max_token_id = -1;
    c.g = g;
    if (!reach(&c, reach_)) goto done;
    fixpoints(ir, reach_, prod, null);
    if (!prod[ir->root]) {
        cfail(&c, LOOM_ERR_FORMAT, "the grammar accepts no string: rule '%s' derives no finite string%s",
              rule_name(ir, ir->root), "");
        goto done;
    }
    for (uint32_t ri = 0; ri < n; ri++) {
        if (!reach_[ri] || prod[ri]) continue;
        /* report a named rule: a generated one is named after its parent */
        char where[64] = "";
        if (ir->rules[ri].line > 0) snprintf(where, sizeof where, " (line %d)", ir->rules[ri].line);
        cfail(&c, LOOM_ERR_FORMAT, "rule '%s'%s derives no finite string (it can never complete)",
              rule_name(ir, ri), where);
        goto done;
    }
    if (!left_recursion(&c, reach_, null)) goto done;
    for (uint32_t ri = 0; ri < n; ri++) g->n_rules += reach_[ri];
    if (!emit(&c, reach_)) goto done;
    if (!build_closures(&c)) goto done;
    g->start = 1;
    g->bytes = sizeof *g + g->n_pos * (1 + sizeof(uint32_t)) + g->n_terms * sizeof(g_term) +
               g->n_arms * sizeof(g_arm) + g->n_closures * sizeof(g_closure) + g->n_items * sizeof(g_item) +
               g->n_pushes * sizeof(uint32_t);
done:
    loom_free(reach_), loom_free(prod), loom_free(null);
    loom_free(c.rule_alt0), loom_free(c.rule_nalt), loom_free(c.alt_pos);
    loom_free(c.ds), loom_free(c.dsr);
    if (c.st != LOOM_OK) {
        loom_grammar_free(g);
        return c.st;
    }
    *out = g;
    return LOOM_OK;
}

loom_status loom_grammar_new(const char *text, size_t len, const char *root, const loom_tokenizer *tok,
                             loom_grammar **out, loom_error *err) {
    if (out) *out = NULL;
    if (!out || (!text && len)) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "grammar: NULL argument");
    ir_grammar ir;
    loom_status st = gbnf_parse(text ? text : "", len, root, tok, &ir, err);
    if (st != LOOM_OK) return st;
    st = grammar_compile(&ir, out, err);
    ir_free(&ir);
    return st;
}
