/* Sampler: greedy, top-k/top-p/min-p candidate sets computed by hand,
 * penalties by their formulas, the temperature distribution (chi-square
 * against a float64 softmax), determinism per seed. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "llm/model_internal.h"
#include "loom_sampler.h"
#include "test_util.h"

static loom_sampler_params plain(float temp) {
    loom_sampler_params p = loom_sampler_default_params();
    p.temperature = temp;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    return p;
}

static void check_greedy(void) {
    float l[6] = {0.5f, 3.0f, -1.0f, 3.0f, 2.9f, 3.0f};
    loom_sampler *s;
    loom_sampler_params p = plain(0.0f);
    CHECK(loom_sampler_new(&p, 6, &s, NULL) == LOOM_OK);
    int32_t t = -1;
    CHECK(loom_sampler_sample(s, l, &t) == LOOM_OK);
    CHECK_EQ_INT(t, 1); /* tie between 1, 3, 5 -> lowest id */
    l[1] = NAN;
    CHECK(loom_sampler_sample(s, l, &t) == LOOM_OK);
    CHECK_EQ_INT(t, 3);
    loom_sampler_free(s);
    /* top_k = 1 equals greedy for any temperature */
    p = loom_sampler_default_params();
    p.top_k = 1;
    p.temperature = 1.5f;
    CHECK(loom_sampler_new(&p, 64, &s, NULL) == LOOM_OK);
    uint64_t x = 12345;
    for (int it = 0; it < 200; it++) {
        float lg[64];
        int32_t best = 0;
        for (int i = 0; i < 64; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            lg[i] = (float)((x >> 40) % 1000) / 100.0f;
            if (lg[i] > lg[best]) best = i;
        }
        CHECK(loom_sampler_sample(s, lg, &t) == LOOM_OK);
        CHECK_EQ_INT(t, best);
    }
    loom_sampler_free(s);
}

/* The candidate set after filtering, as a bitmask over ids. */
static unsigned cand_mask(loom_sampler *s) {
    const int32_t *ids;
    const float *pr;
    int32_t n = loom_sampler_last_candidates(s, &ids, &pr);
    unsigned m = 0;
    for (int32_t i = 0; i < n; i++) m |= 1u << ids[i];
    return m;
}

static void check_filters(void) {
    /* probabilities 0.5, 0.2, 0.15, 0.1, 0.05 placed on ids 3, 0, 4, 1, 2 */
    const double pr[5] = {0.5, 0.2, 0.15, 0.1, 0.05};
    const int id_of[5] = {3, 0, 4, 1, 2};
    float l[5];
    for (int i = 0; i < 5; i++) l[id_of[i]] = (float)log(pr[i]);
    struct { float top_p, min_p; int top_k; unsigned want; } cases[] = {
        {0.40f, 0.0f, 0, 1u << 3},                                   /* 0.5 >= 0.4 */
        {0.60f, 0.0f, 0, (1u << 3) | (1u << 0)},                     /* 0.7 */
        {0.75f, 0.0f, 0, (1u << 3) | (1u << 0) | (1u << 4)},         /* 0.85 */
        {0.92f, 0.0f, 0, 0x1Fu & ~(1u << 2)},                        /* 0.95 */
        {0.99f, 0.0f, 0, 0x1Fu},
        {1.00f, 0.25f, 0, (1u << 3) | (1u << 0) | (1u << 4)},        /* p >= 0.125 */
        {1.00f, 0.35f, 0, (1u << 3) | (1u << 0)},                    /* p >= 0.175 */
        {1.00f, 0.90f, 0, 1u << 3},
        {1.00f, 0.0f, 2, (1u << 3) | (1u << 0)},                     /* top-k 2 */
        {1.00f, 0.0f, 4, 0x1Fu & ~(1u << 2)},
        {0.75f, 0.25f, 2, (1u << 3) | (1u << 0)},                    /* all three */
        {0.60f, 0.05f, 0, (1u << 3) | (1u << 0)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        loom_sampler_params p = plain(1.0f);
        p.top_p = cases[i].top_p;
        p.min_p = cases[i].min_p;
        p.top_k = cases[i].top_k;
        loom_sampler *s;
        CHECK(loom_sampler_new(&p, 5, &s, NULL) == LOOM_OK);
        for (int rep = 0; rep < 50; rep++) {
            int32_t t;
            CHECK(loom_sampler_sample(s, l, &t) == LOOM_OK);
            CHECK_MSG(cand_mask(s) == cases[i].want, "case %zu: set %#x want %#x", i, cand_mask(s), cases[i].want);
            CHECK_MSG((cases[i].want >> t) & 1u, "case %zu: sampled %d outside the set", i, t);
        }
        /* renormalised probabilities over the kept set */
        const int32_t *ids;
        const float *q;
        int32_t n = loom_sampler_last_candidates(s, &ids, &q);
        double z = 0;
        for (int32_t j = 0; j < n; j++)
            for (int k = 0; k < 5; k++)
                if (id_of[k] == ids[j]) z += pr[k];
        for (int32_t j = 0; j < n; j++)
            for (int k = 0; k < 5; k++)
                if (id_of[k] == ids[j]) CHECK_NEAR(q[j], pr[k] / z, 1e-6);
        loom_sampler_free(s);
    }
}

static void softmax64(const double *l, int n, double t, double *out) {
    double m = l[0], z = 0;
    for (int i = 1; i < n; i++) if (l[i] > m) m = l[i];
    for (int i = 0; i < n; i++) z += out[i] = exp((l[i] - m) / t);
    for (int i = 0; i < n; i++) out[i] /= z;
}

static void check_penalties(void) {
    const float l[6] = {2.0f, -1.0f, 0.5f, 3.0f, -2.0f, 1.0f};
    loom_sampler_params p = plain(1.0f);
    p.repeat_penalty = 1.5f;
    p.freq_penalty = 0.25f;
    p.presence_penalty = 0.5f;
    p.penalty_last_n = 4;
    loom_sampler *s;
    CHECK(loom_sampler_new(&p, 6, &s, NULL) == LOOM_OK);
    const int32_t hist[5] = {5, 0, 1, 1, 3}; /* window of 4 drops the first 5 */
    for (int i = 0; i < 5; i++) CHECK(loom_sampler_accept(s, hist[i]) == LOOM_OK);
    double e[6];
    for (int i = 0; i < 6; i++) e[i] = l[i];
    e[0] = 2.0 / 1.5 - (1 * 0.25 + 0.5);
    e[1] = -1.0 * 1.5 - (2 * 0.25 + 0.5);
    e[3] = 3.0 / 1.5 - (1 * 0.25 + 0.5);
    double want[6];
    softmax64(e, 6, 1.0, want);
    int32_t t;
    CHECK(loom_sampler_sample(s, l, &t) == LOOM_OK);
    const int32_t *ids;
    const float *q;
    int32_t n = loom_sampler_last_candidates(s, &ids, &q);
    CHECK_EQ_INT(n, 6);
    for (int32_t j = 0; j < n; j++) CHECK_NEAR(q[j], want[ids[j]], 1e-6);
    /* greedy sees the penalised logits too: 3 -> 1.25, 0 -> 0.583, 5 -> 1.0 */
    loom_sampler_free(s);
    p.temperature = 0;
    CHECK(loom_sampler_new(&p, 6, &s, NULL) == LOOM_OK);
    for (int i = 0; i < 5; i++) loom_sampler_accept(s, hist[i]);
    CHECK(loom_sampler_sample(s, l, &t) == LOOM_OK);
    CHECK_EQ_INT(t, 3);
    loom_sampler_accept(s, 3);
    loom_sampler_accept(s, 3); /* window 1 3 3 3: id 3 -> 2 - 1.25 = 0.75, id 5 -> 1.0 */
    /* id 0 left the window: logit 2.0 is now the best */
    CHECK(loom_sampler_sample(s, l, &t) == LOOM_OK);
    CHECK_EQ_INT(t, 0);
    CHECK(loom_sampler_accept(s, 6) == LOOM_ERR_RANGE);
    CHECK(loom_sampler_accept(s, -1) == LOOM_ERR_RANGE);
    loom_sampler_reset(s);
    CHECK(loom_sampler_sample(s, l, &t) == LOOM_OK);
    CHECK_EQ_INT(t, 3);
    loom_sampler_free(s);
}

static void check_distribution(void) {
    const float l[8] = {1.0f, 0.2f, -0.5f, 2.0f, 1.5f, 0.0f, -1.0f, 0.7f};
    const double T = 0.7;
    double le[8], want[8];
    for (int i = 0; i < 8; i++) le[i] = l[i];
    softmax64(le, 8, T, want);
    loom_sampler_params p = plain((float)T);
    p.seed = 42;
    loom_sampler *s;
    CHECK(loom_sampler_new(&p, 8, &s, NULL) == LOOM_OK);
    const int N = 200000;
    long cnt[8] = {0};
    for (int i = 0; i < N; i++) {
        int32_t t;
        loom_sampler_sample(s, l, &t);
        if (t >= 0 && t < 8) cnt[t]++;
    }
    double chi2 = 0;
    for (int i = 0; i < 8; i++) {
        double ex = want[i] * N;
        chi2 += (cnt[i] - ex) * (cnt[i] - ex) / ex;
    }
    /* 7 degrees of freedom: P(chi2 > 29.9) ~ 1e-4 */
    CHECK_MSG(chi2 < 29.9, "chi2 = %g", chi2);
    const int32_t *ids;
    const float *q;
    int32_t n = loom_sampler_last_candidates(s, &ids, &q);
    CHECK_EQ_INT(n, 8);
    for (int32_t j = 0; j < n; j++) CHECK_NEAR(q[j], want[ids[j]], 1e-6);
    loom_sampler_free(s);
}

static void check_determinism(void) {
    float l[100];
    for (int i = 0; i < 100; i++) l[i] = (float)sin(i * 0.37) * 3.0f;
    loom_sampler_params p = loom_sampler_default_params();
    p.temperature = 1.2f;
    p.top_k = 0;
    p.top_p = 0.98f;
    p.min_p = 0.01f;
    p.seed = 7;
    loom_sampler *a, *b, *c;
    CHECK(loom_sampler_new(&p, 100, &a, NULL) == LOOM_OK);
    CHECK(loom_sampler_new(&p, 100, &b, NULL) == LOOM_OK);
    p.seed = 8;
    CHECK(loom_sampler_new(&p, 100, &c, NULL) == LOOM_OK);
    int32_t sa[64], same = 1, diff = 0;
    for (int i = 0; i < 64; i++) {
        int32_t x, y, z;
        loom_sampler_sample(a, l, &x);
        loom_sampler_sample(b, l, &y);
        loom_sampler_sample(c, l, &z);
        sa[i] = x;
        same &= x == y;
        diff += x != z;
    }
    CHECK(same);
    CHECK(diff > 0);
    loom_sampler_reset(a);
    int ok = 1;
    for (int i = 0; i < 64; i++) {
        int32_t x;
        loom_sampler_sample(a, l, &x);
        ok &= x == sa[i];
    }
    CHECK(ok);
    loom_sampler_free(a);
    loom_sampler_free(b);
    loom_sampler_free(c);
}

static void check_args(void) {
    loom_sampler *s = (loom_sampler *)1;
    CHECK(loom_sampler_new(NULL, 0, &s, NULL) == LOOM_ERR_INVALID_ARG && s == NULL);
    loom_sampler_params p = loom_sampler_default_params();
    /* each refusal names the parameter, its value and the accepted range */
    loom_error e = {0};
    p.repeat_penalty = 0;
    s = (loom_sampler *)1;
    CHECK(loom_sampler_new(&p, 10, &s, &e) == LOOM_ERR_INVALID_ARG && s == NULL);
    CHECK_MSG(strstr(e.msg, "repeat_penalty = 0") && strstr(e.msg, "> 0"), "%s", e.msg);
    p = loom_sampler_default_params();
    p.top_p = NAN;
    loom_error_clear(&e);
    CHECK(loom_sampler_new(&p, 10, &s, &e) == LOOM_ERR_INVALID_ARG);
    CHECK_MSG(strstr(e.msg, "top_p") && strstr(e.msg, ">= 0"), "%s", e.msg);
    p = loom_sampler_default_params();
    p.min_p = 1.5f;
    loom_error_clear(&e);
    CHECK(loom_sampler_new(&p, 10, &s, &e) == LOOM_ERR_INVALID_ARG);
    CHECK_MSG(strstr(e.msg, "min_p = 1.5") && strstr(e.msg, "<= 1"), "%s", e.msg);
    p = loom_sampler_default_params();
    p.penalty_last_n = -1;
    loom_error_clear(&e);
    CHECK(loom_sampler_new(&p, 10, &s, &e) == LOOM_ERR_INVALID_ARG);
    CHECK_MSG(strstr(e.msg, "penalty_last_n = -1"), "%s", e.msg);
    loom_error_clear(&e);
    CHECK(loom_sampler_new(NULL, -3, &s, &e) == LOOM_ERR_INVALID_ARG);
    CHECK_MSG(strstr(e.msg, "n_vocab = -3"), "%s", e.msg);
    CHECK(loom_sampler_new(NULL, 10, &s, NULL) == LOOM_OK);
    int32_t t;
    CHECK(loom_sampler_sample(s, NULL, &t) == LOOM_ERR_INVALID_ARG);
    float all_inf[10];
    for (int i = 0; i < 10; i++) all_inf[i] = -INFINITY;
    CHECK(loom_sampler_sample(s, all_inf, &t) == LOOM_OK && t >= 0 && t < 10);
    /* NaN never wins, in the greedy and the sampling paths alike; all NaN fails */
    for (int greedy = 0; greedy < 2; greedy++) {
        loom_sampler_params q = loom_sampler_default_params();
        if (greedy) q.temperature = 0;
        loom_sampler *g = NULL;
        CHECK(loom_sampler_new(&q, 10, &g, NULL) == LOOM_OK);
        float mix[10];
        for (int i = 0; i < 10; i++) mix[i] = NAN;
        mix[7] = -INFINITY;
        for (int rep = 0; rep < 20; rep++) {
            t = -1;
            CHECK(loom_sampler_sample(g, mix, &t) == LOOM_OK);
            CHECK_EQ_INT(t, 7);
        }
        mix[0] = NAN;
        mix[3] = 0.5f;
        mix[7] = 0.25f;
        for (int rep = 0; rep < 50; rep++) {
            CHECK(loom_sampler_sample(g, mix, &t) == LOOM_OK);
            CHECK_MSG(t == 3 || t == 7, "picked %d (a NaN logit)", (int)t);
        }
        float nan_all[10];
        for (int i = 0; i < 10; i++) nan_all[i] = NAN;
        t = -5;
        CHECK(loom_sampler_sample(g, nan_all, &t) == LOOM_ERR_INVALID_ARG);
        CHECK_EQ_INT(t, -5);
        loom_sampler_free(g);
    }
    loom_sampler_free(s);
    loom_sampler_free(NULL);
}

/* llm_argmax_f32 (loom_model_argmax) against the definition "the first index of the
 * largest non-NaN value, -1 when all are NaN" (NaN never wins, issue #14 item 9):
 * random lengths 1..100 (lanes and tail), ties, NaN (also at index 0), -inf. */
static void check_argmax(void) {
    uint64_t x = 99;
    float v[100];
    int bad = 0;
    for (int it = 0; it < 5000; it++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        int n = 1 + (int)((x >> 33) % 100);
        for (int i = 0; i < n; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            int r = (int)((x >> 33) % 12);
            v[i] = r == 0 ? NAN : r == 1 ? -INFINITY : (float)(r % 5) - 2.0f;
        }
        int32_t want = -1;
        for (int i = 0; i < n; i++)
            if (!isnan(v[i]) && (want < 0 || v[i] > v[want])) want = i;
        bad += llm_argmax_f32(v, n) != want;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(llm_argmax_f32(v, 0), -1);
    /* the reviewed case: NaN first */
    float a[4] = {NAN, 1.0f, 3.0f, 2.0f};
    CHECK_EQ_INT(llm_argmax_f32(a, 4), 2);
    float b[3] = {NAN, -INFINITY, NAN};
    CHECK_EQ_INT(llm_argmax_f32(b, 3), 1);
    float c[20];
    for (int i = 0; i < 20; i++) c[i] = NAN;
    CHECK_EQ_INT(llm_argmax_f32(c, 20), -1);
}

/* loom_sampler_suppress: suppressed tokens are never picked, greedy or sampled (a
 * suppressed arg-max gives the best of the rest); out-of-range ids are ignored; n = 0
 * clears; all suppressed leaves nothing (INVALID_ARG, as all NaN) */
static void check_suppress(void) {
    float l[6] = {0.5f, 3.0f, -1.0f, 2.0f, 2.9f, 1.0f};
    loom_sampler *s;
    loom_sampler_params p = plain(0.0f);
    CHECK(loom_sampler_new(&p, 6, &s, NULL) == LOOM_OK);
    const int32_t ban[3] = {1, 4, 77};
    CHECK(loom_sampler_suppress(s, ban, 3) == LOOM_OK);
    int32_t t = -1;
    CHECK(loom_sampler_sample(s, l, &t) == LOOM_OK);
    CHECK_EQ_INT(t, 3);
    CHECK(loom_sampler_suppress(s, NULL, 0) == LOOM_OK);
    CHECK(loom_sampler_sample(s, l, &t) == LOOM_OK);
    CHECK_EQ_INT(t, 1);
    const int32_t all[6] = {0, 1, 2, 3, 4, 5};
    CHECK(loom_sampler_suppress(s, all, 6) == LOOM_OK);
    CHECK(loom_sampler_sample(s, l, &t) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_sampler_suppress(s, NULL, 2) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_sampler_suppress(NULL, ban, 1) == LOOM_ERR_INVALID_ARG);
    loom_sampler_free(s);
    /* sampled at temperature 1 over 400 draws: a suppressed token of the largest logit never */
    p = plain(1.0f);
    CHECK(loom_sampler_new(&p, 6, &s, NULL) == LOOM_OK);
    CHECK(loom_sampler_suppress(s, ban, 2) == LOOM_OK);
    int hits = 0;
    for (int i = 0; i < 400; i++) {
        CHECK(loom_sampler_sample(s, l, &t) == LOOM_OK);
        hits += t == 1 || t == 4;
    }
    CHECK_EQ_INT(hits, 0);
    loom_sampler_free(s);
}

int main(void) {
    check_argmax();
    check_greedy();
    check_filters();
    check_penalties();
    check_distribution();
    check_determinism();
    check_args();
    check_suppress();
    return test_finish("test_llm_sampler");
}
