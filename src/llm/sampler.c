/* Token sampler: penalties, greedy, top-k, top-p, min-p, temperature, and a
 * xoshiro256** RNG. See include/loom_sampler.h for the exact pipeline. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom_sampler.h"
#include "quant/alloc.h"

typedef struct cand {
    float logit;
    int32_t id;
} cand;

struct loom_sampler {
    loom_sampler_params p;
    int32_t n_vocab;
    cand *c;          /* n_vocab scratch candidates */
    int32_t *out_ids; /* last candidates */
    float *out_probs;
    int64_t n_out;
    int32_t *counts;  /* occurrences of each token in the window */
    int32_t *ring;    /* penalty window */
    int32_t ring_n, ring_pos;
    uint64_t rng[4];
    bool has_con;                /* a constraint is attached */
    loom_sampler_constraint con;
    uint64_t *mask;              /* (n_vocab + 63) / 64 words, allocated with the constraint */
    uint64_t *banned;            /* suppressed tokens: (n_vocab + 63) / 64 words, or NULL */
};

loom_sampler_params loom_sampler_default_params(void) {
    loom_sampler_params p;
    p.temperature = 0.8f;
    p.top_k = 40;
    p.top_p = 0.95f;
    p.min_p = 0.05f;
    p.repeat_penalty = 1.0f;
    p.freq_penalty = 0.0f;
    p.presence_penalty = 0.0f;
    p.penalty_last_n = 64;
    p.seed = 0x5EED;
    return p;
}

/* ---------------------------------------------------------------- RNG */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro_next(uint64_t *s) {
    uint64_t r = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

void loom_sampler_set_seed(loom_sampler *s, uint64_t seed) {
    if (!s) return;
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&x);
}

static double uniform01(loom_sampler *s) { return (double)(xoshiro_next(s->rng) >> 11) * 0x1.0p-53; }

/* ---------------------------------------------------------------- lifecycle */

void loom_sampler_free(loom_sampler *s) {
    if (!s) return;
    loom_free(s->c);
    loom_free(s->out_ids);
    loom_free(s->out_probs);
    loom_free(s->counts);
    loom_free(s->ring);
    loom_free(s->mask);
    loom_free(s->banned);
    loom_free(s);
}

loom_status loom_sampler_new(const loom_sampler_params *params, int32_t n_vocab, loom_sampler **out,
                             loom_error *err) {
    if (out) *out = NULL;
    if (!out) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_sampler_new: out is NULL");
    if (n_vocab <= 0)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_sampler_new: n_vocab = %d (must be > 0)", (int)n_vocab);
    loom_sampler_params p = params ? *params : loom_sampler_default_params();
    /* each parameter named with its accepted range */
    if (isnan(p.temperature))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "temperature is NaN (any number; <= 0 = greedy)");
    if (!(p.top_p >= 0))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "top_p = %g is out of range (>= 0; >= 1 = off)",
                              (double)p.top_p);
    if (!(p.min_p <= 1))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "min_p = %g is out of range (<= 1; <= 0 = off)",
                              (double)p.min_p);
    if (!(p.repeat_penalty > 0) || !isfinite(p.repeat_penalty))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                              "repeat_penalty = %g is out of range (a finite number > 0; 1 = off)",
                              (double)p.repeat_penalty);
    if (!isfinite(p.freq_penalty))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "freq_penalty = %g is out of range (a finite number)",
                              (double)p.freq_penalty);
    if (!isfinite(p.presence_penalty))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                              "presence_penalty = %g is out of range (a finite number)", (double)p.presence_penalty);
    if (p.penalty_last_n < 0)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "penalty_last_n = %d is out of range (>= 0; 0 = off)",
                              (int)p.penalty_last_n);
    loom_sampler *s = loom_calloc(1, sizeof *s);
    if (!s) return loom_error_set(err, LOOM_ERR_NOMEM, "loom_sampler_new: out of memory");
    s->p = p;
    s->n_vocab = n_vocab;
    size_t n = (size_t)n_vocab;
    s->c = loom_malloc(n * sizeof(cand));
    s->out_ids = loom_malloc(n * sizeof(int32_t));
    s->out_probs = loom_malloc(n * sizeof(float));
    s->counts = loom_calloc(n, sizeof(int32_t));
    s->ring = loom_malloc(((size_t)p.penalty_last_n + 1) * sizeof(int32_t));
    if (!s->c || !s->out_ids || !s->out_probs || !s->counts || !s->ring) {
        loom_sampler_free(s);
        return loom_error_set(err, LOOM_ERR_NOMEM, "loom_sampler_new: out of memory (n_vocab %d)", (int)n_vocab);
    }
    loom_sampler_set_seed(s, p.seed);
    *out = s;
    return LOOM_OK;
}

void loom_sampler_reset(loom_sampler *s) {
    if (!s) return;
    memset(s->counts, 0, (size_t)s->n_vocab * sizeof(int32_t));
    s->ring_n = s->ring_pos = 0;
    s->n_out = 0;
    loom_sampler_set_seed(s, s->p.seed);
    if (s->has_con) s->con.reset(s->con.user);
}

loom_status loom_sampler_set_constraint(loom_sampler *s, const loom_sampler_constraint *c) {
    if (!s) return LOOM_ERR_INVALID_ARG;
    if (!c) {
        s->has_con = false;
        return LOOM_OK;
    }
    if (!c->allowed || !c->fill_mask || !c->accept || !c->reset) return LOOM_ERR_INVALID_ARG;
    if (!s->mask) {
        s->mask = loom_malloc(((size_t)s->n_vocab + 63) / 64 * sizeof(uint64_t));
        if (!s->mask) return LOOM_ERR_NOMEM;
    }
    s->con = *c;
    s->has_con = true;
    return LOOM_OK;
}

static loom_status record(loom_sampler *s, int32_t token);

loom_status loom_sampler_accept_prompt(loom_sampler *s, int32_t token) {
    if (!s) return LOOM_ERR_INVALID_ARG;
    if (token < 0 || token >= s->n_vocab) return LOOM_ERR_RANGE;
    return record(s, token);
}

loom_status loom_sampler_accept(loom_sampler *s, int32_t token) {
    if (!s) return LOOM_ERR_INVALID_ARG;
    if (token < 0 || token >= s->n_vocab) return LOOM_ERR_RANGE;
    if (s->has_con) {
        loom_status st = s->con.accept(s->con.user, token);
        if (st != LOOM_OK) return st;
    }
    return record(s, token);
}

static loom_status record(loom_sampler *s, int32_t token) {
    int32_t cap = s->p.penalty_last_n;
    if (cap == 0) return LOOM_OK;
    if (s->ring_n == cap) {
        s->counts[s->ring[s->ring_pos]]--;
    } else {
        s->ring_n++;
    }
    s->ring[s->ring_pos] = token;
    s->counts[token]++;
    s->ring_pos = (s->ring_pos + 1) % cap;
    return LOOM_OK;
}

/* ---------------------------------------------------------------- sampling */

/* Strict total order: larger logit first, then lower id. */
static bool better(const cand *a, const cand *b) {
    return a->logit > b->logit || (a->logit == b->logit && a->id < b->id);
}

static int cmp_cand(const void *x, const void *y) {
    const cand *a = x, *b = y;
    return better(a, b) ? -1 : better(b, a) ? 1 : 0;
}

static void swap_c(cand *a, cand *b) {
    cand t = *a;
    *a = *b;
    *b = t;
}

/* Move the k best candidates to c[0..k) (unordered). Iterative quickselect,
 * median-of-three pivot. */
static void select_top(cand *c, size_t n, size_t k) {
    size_t lo = 0, hi = n; /* the k-th best lies in [lo, hi) */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (better(&c[hi - 1], &c[lo])) swap_c(&c[hi - 1], &c[lo]);
        if (better(&c[mid], &c[lo])) swap_c(&c[mid], &c[lo]);
        if (better(&c[hi - 1], &c[mid])) swap_c(&c[hi - 1], &c[mid]);
        /* now c[lo] >= c[mid] >= c[hi-1] in `better` order; pivot = c[mid] */
        cand pv = c[mid];
        swap_c(&c[mid], &c[hi - 1]);
        size_t st = lo;
        for (size_t i = lo; i < hi - 1; i++)
            if (better(&c[i], &pv)) swap_c(&c[i], &c[st++]);
        swap_c(&c[st], &c[hi - 1]); /* pivot at its final position st */
        if (st == k || st + 1 == k) return;
        if (st > k) hi = st;
        else lo = st + 1;
    }
}

/* Constrained candidates (see loom_sampler_constraint): on return either
 * c[0..*sorted) are the `want` best allowed candidates in `better` order (found
 * among the best few candidates, asking `allowed` one by one), or *sorted = 0
 * and c[0..*n) holds every allowed candidate (through the constraint's mask).
 * Either way the pipeline that follows sees what it would see had the
 * disallowed tokens been removed first. */
static loom_status constrain(loom_sampler *s, size_t *n_io, size_t want, size_t *sorted) {
    cand *c = s->c;
    size_t n = *n_io, kept = 0, rest = 0;
    *sorted = 0;
    if (want < n) {
        if (want == 1) { /* greedy: the arg-max alone is allowed most of the time */
            size_t best = 0;
            for (size_t i = 1; i < n; i++)
                if (better(&c[i], &c[best])) best = i;
            int a = s->con.allowed(s->con.user, c[best].id);
            if (a < 0) return (loom_status)-a;
            if (a) {
                swap_c(&c[0], &c[best]);
                *sorted = 1;
                return LOOM_OK;
            }
        }
        size_t m = want * 4 < 64 ? 64 : want * 4;
        if (m > n) m = n;
        if (m < n) select_top(c, n, m);
        qsort(c, m, sizeof(cand), cmp_cand);
        for (size_t i = 0; i < m; i++) {
            int a = s->con.allowed(s->con.user, c[i].id);
            if (a < 0) return (loom_status)-a;
            if (a) {
                c[kept++] = c[i];
                if (kept == want) {
                    *sorted = want;
                    return LOOM_OK;
                }
            }
        }
        rest = m; /* c[0..kept) allowed, c[kept..m) checked and dropped */
    }
    loom_status st = s->con.fill_mask(s->con.user, s->mask, s->n_vocab);
    if (st != LOOM_OK) return st;
    const uint64_t *mk = s->mask;
    for (size_t i = rest; i < n; i++) {
        uint32_t id = (uint32_t)c[i].id;
        if ((mk[id >> 6] >> (id & 63)) & 1) c[kept++] = c[i];
    }
    if (kept == 0) return LOOM_ERR_NOT_FOUND;
    *n_io = kept;
    return LOOM_OK;
}

loom_status loom_sampler_suppress(loom_sampler *s, const int32_t *ids, int32_t n) {
    if (!s || n < 0 || (n > 0 && !ids)) return LOOM_ERR_INVALID_ARG;
    if (n == 0) {
        loom_free(s->banned);
        s->banned = NULL;
        return LOOM_OK;
    }
    const size_t words = ((size_t)s->n_vocab + 63) / 64;
    if (!s->banned && !(s->banned = loom_malloc(words * sizeof(uint64_t)))) return LOOM_ERR_NOMEM;
    memset(s->banned, 0, words * sizeof(uint64_t));
    for (int32_t i = 0; i < n; i++) /* ids outside the vocabulary: ignored */
        if (ids[i] >= 0 && ids[i] < s->n_vocab) s->banned[ids[i] >> 6] |= (uint64_t)1 << (ids[i] & 63);
    return LOOM_OK;
}

loom_status loom_sampler_sample(loom_sampler *s, const float *logits, int32_t *out) {
    if (!s || !logits || !out) return LOOM_ERR_INVALID_ARG;
    const loom_sampler_params *p = &s->p;
    size_t n = (size_t)s->n_vocab;
    cand *c = s->c;
    bool pen = s->ring_n > 0 &&
               (p->repeat_penalty != 1.0f || p->freq_penalty != 0.0f || p->presence_penalty != 0.0f);
    /* NaN never wins: NaN logits are not candidates at all (loom_sampler.h) */
    size_t m = 0;
    const uint64_t *ban = s->banned;
    for (size_t i = 0; i < n; i++) {
        float l = logits[i];
        if (isnan(l) || (ban && (ban[i >> 6] >> (i & 63) & 1))) continue;
        if (pen && s->counts[i] > 0) {
            int32_t cnt = s->counts[i];
            l = l > 0 ? l / p->repeat_penalty : l * p->repeat_penalty;
            l -= (float)cnt * p->freq_penalty + p->presence_penalty;
            if (isnan(l)) l = -INFINITY; /* inf - inf: a penalised token, not a winner */
        }
        c[m].logit = l;
        c[m].id = (int32_t)i;
        m++;
    }
    if (m == 0) {
        s->n_out = 0;
        return LOOM_ERR_INVALID_ARG; /* every logit is NaN (or suppressed): nothing to choose */
    }
    n = m;

    bool greedy = !(p->temperature > 0) || p->top_k == 1;
    size_t want = greedy ? 1 : (p->top_k > 0 && (size_t)p->top_k < n) ? (size_t)p->top_k : n;
    size_t sorted = 0; /* > 0: c[0..sorted) are the `want` best allowed candidates, in order */
    if (s->has_con) {
        loom_status st = constrain(s, &n, want, &sorted);
        if (st != LOOM_OK) {
            s->n_out = 0;
            return st;
        }
    }

    if (greedy) {
        size_t best = 0;
        if (s->has_con && !sorted) {
            /* candidates are no longer in id order: compare by (logit, id) */
            for (size_t i = 1; i < n; i++)
                if (better(&c[i], &c[best])) best = i;
        } else if (!sorted) {
            float bv = c[0].logit; /* in a register: no load behind each compare */
            for (size_t i = 1; i < n; i++)
                if (c[i].logit > bv) { /* strict: ties keep the lowest id */
                    bv = c[i].logit;
                    best = i;
                }
        }
        *out = c[best].id;
        s->out_ids[0] = c[best].id;
        s->out_probs[0] = 1.0f;
        s->n_out = 1;
        return LOOM_OK;
    }

    size_t k = want < n ? want : n;
    if (!sorted) {
        if (k < n) select_top(c, n, k);
        qsort(c, k, sizeof(cand), cmp_cand);
    }

    double maxl = c[0].logit;
    if (isinf(maxl) && maxl < 0) { /* every candidate is -inf: take the best-ordered one */
        *out = c[0].id;
        s->out_ids[0] = c[0].id;
        s->out_probs[0] = 1.0f;
        s->n_out = 1;
        return LOOM_OK;
    }
    if (p->top_p < 1.0f) {
        double sum = 0;
        for (size_t i = 0; i < k; i++) sum += exp((double)c[i].logit - maxl);
        double cum = 0;
        size_t keep = k;
        for (size_t i = 0; i < k; i++) {
            cum += exp((double)c[i].logit - maxl) / sum;
            if (cum >= p->top_p) {
                keep = i + 1;
                break;
            }
        }
        k = keep;
    }
    if (p->min_p > 0.0f) {
        double thr = maxl + log((double)p->min_p);
        size_t keep = 1;
        while (keep < k && (double)c[keep].logit >= thr) keep++;
        k = keep;
    }
    double sum = 0;
    for (size_t i = 0; i < k; i++) {
        float e = (float)exp(((double)c[i].logit - maxl) / p->temperature);
        s->out_probs[i] = e;
        sum += e; /* the same float values are accumulated again below */
    }
    double u = uniform01(s) * sum, cum = 0;
    size_t pick = k - 1;
    for (size_t i = 0; i < k; i++) {
        cum += s->out_probs[i];
        if (u < cum) {
            pick = i;
            break;
        }
    }
    for (size_t i = 0; i < k; i++) {
        s->out_ids[i] = c[i].id;
        s->out_probs[i] = (float)(s->out_probs[i] / sum);
    }
    s->n_out = (int64_t)k;
    *out = c[pick].id;
    return LOOM_OK;
}

int32_t loom_sampler_last_candidates(const loom_sampler *s, const int32_t **ids, const float **probs) {
    if (!s) return 0;
    if (ids) *ids = s->out_ids;
    if (probs) *probs = s->out_probs;
    return (int32_t)s->n_out;
}
