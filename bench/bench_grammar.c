/* loom bench grammar: the per-token cost of grammar-constrained sampling.
 *
 *   loom bench grammar [--vocab V.gguf] [--model M.gguf] [-n STEPS] [-r REPS] [-t THREADS] [--json]
 *
 * For each workload (grammar x logits), the sampler (default parameters:
 * top-k 40, top-p 0.95, min-p 0.05, temperature 0.8) picks STEPS tokens from
 * synthetic logits over the vocabulary (default qwen2's, 151,646 tokens), with
 * the grammar attached and, on the same logits, without it. Reported per
 * token: the constrained step (sample + accept, grammar included), the plain
 * step (sample + accept), and their difference = the grammar's overhead;
 * "cold" is the first pass of a fresh matcher (empty mask cache: every new
 * parse state walks the token trie), "warm" the next passes after a reset
 * (the cache is kept, as a server reusing a matcher for one schema does).
 * Logits:
 *   guided  noise N(0,1) plus 12 on the next token of a reference document
 *           that the grammar accepts (a model that wants to write valid JSON:
 *           the best candidates are allowed, the grammar rarely acts);
 *   random  noise N(0,2) (a model that knows nothing: the best candidates are
 *           mostly refused, every step needs the full mask).
 * With --model (a GGUF whose vocabulary is the same), a decode step of that
 * model is timed too (median of STEPS single-token evals) for comparison. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "cli_util.h"
#include "commands.h"
#include "loom_gguf.h"
#include "loom_grammar.h"
#include "loom_model.h"

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double mean(const double *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    return n ? s / n : 0;
}

static uint64_t xs(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

static double gauss(uint64_t *x) {
    double u1 = ((xs(x) >> 11) + 1) * 0x1.0p-53, u2 = (xs(x) >> 11) * 0x1.0p-53;
    return sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
}

static const char *SCHEMA =
    "{\"type\":\"object\",\"properties\":{"
    "\"summary\":{\"type\":\"string\"},"
    "\"objects\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"name\":{\"type\":\"string\"},\"confidence\":{\"type\":\"number\",\"minimum\":0,\"maximum\":1},"
    "\"attributes\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":5}},"
    "\"required\":[\"name\",\"confidence\"]}},"
    "\"time_of_day\":{\"enum\":[\"Morning\",\"Afternoon\",\"Evening\",\"Night\"]},"
    "\"count\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1000},"
    "\"text_content\":{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}},"
    "\"required\":[\"summary\",\"objects\",\"time_of_day\",\"count\"]}";

static const char *REFERENCE =
    "{\n  \"summary\": \"A quiet street at dusk with two parked cars and a cyclist passing a bakery.\",\n"
    "  \"objects\": [\n    {\"name\": \"car\", \"confidence\": 0.94, \"attributes\": [\"red\", \"parked\"]},\n"
    "    {\"name\": \"bicycle\", \"confidence\": 0.81, \"attributes\": [\"moving\"]},\n"
    "    {\"name\": \"shop sign\", \"confidence\": 0.66}\n  ],\n  \"time_of_day\": \"Evening\",\n"
    "  \"count\": 3,\n  \"text_content\": \"BOULANGERIE\"\n}";

typedef struct work {
    const char *name;
    loom_grammar *g;
    bool guided;
} work;

typedef struct result {
    double cold_over_med, cold_over_mean, warm_over_med, warm_over_mean; /* con - plain per token, us */
    double cold_cb_mean, warm_cb_mean, warm_cb_med;                     /* time inside the grammar, us */
    double plain_med;
    int steps;
    int64_t walks_cold, walks_warm;
} result;

/* The matcher behind a constraint that times every call into the grammar. */
typedef struct timed {
    loom_grammar_matcher *m;
    double us;
} timed;
static int t_allowed(void *u, int32_t tok) {
    timed *t = u;
    double a = now_us();
    int r = loom_grammar_matcher_allows(t->m, tok) ? 1 : 0;
    t->us += now_us() - a;
    return r;
}
static loom_status t_mask(void *u, uint64_t *mask, int32_t n) {
    timed *t = u;
    double a = now_us();
    loom_status r = loom_grammar_matcher_fill_mask(t->m, mask, n);
    t->us += now_us() - a;
    return r;
}
static loom_status t_accept(void *u, int32_t tok) {
    timed *t = u;
    double a = now_us();
    loom_status r = loom_grammar_matcher_accept_token(t->m, tok, NULL);
    t->us += now_us() - a;
    return r;
}
static void t_reset(void *u) { loom_grammar_matcher_reset(((timed *)u)->m); }

/* One pass: steps tokens; per step the constrained step minus the plain one into
 * over[], the time inside the grammar into cb[], the plain step into plain[].
 * Returns the steps done. */
static int pass(loom_grammar_matcher *gm, int32_t n_vocab, const work *w, const int32_t *ref, int32_t n_ref,
                int steps, uint64_t seed, double *over, double *cb, double *plain) {
    loom_sampler_params sp = loom_sampler_default_params();
    sp.seed = seed;
    loom_sampler *sc = NULL, *sn = NULL;
    float *logits = malloc((size_t)n_vocab * sizeof(float));
    int done = 0;
    timed tm = {gm, 0};
    loom_sampler_constraint con = {&tm, t_allowed, t_mask, t_accept, t_reset};
    if (!logits || loom_sampler_new(&sp, n_vocab, &sc, NULL) || loom_sampler_new(&sp, n_vocab, &sn, NULL) ||
        loom_sampler_set_constraint(sc, &con))
        goto out;
    loom_grammar_matcher_reset(gm);
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int i = 0; i < steps; i++) {
        for (int32_t t = 0; t < n_vocab; t++) logits[t] = (float)(gauss(&x) * (w->guided ? 1.0 : 2.0));
        if (w->guided) {
            if (i >= n_ref) break;
            logits[ref[i]] += 12.0f;
        }
        int32_t a, b;
        /* alternate the order so that neither side always runs on a warmer cache */
        double tc = 0, tp = 0;
        tm.us = 0;
        bool eog = false;
        for (int side = 0; side < 2; side++) {
            bool constrained = (side == 0) == (i % 2 == 0);
            double t0 = now_us();
            if (constrained) {
                if (loom_sampler_sample(sc, logits, &a)) goto out;
                eog = loom_grammar_matcher_is_accepting(gm) && !loom_grammar_matcher_can_continue(gm);
                if (!eog && loom_sampler_accept(sc, a)) goto out;
                tc = now_us() - t0;
            } else {
                if (loom_sampler_sample(sn, logits, &b)) goto out;
                loom_sampler_accept(sn, b);
                tp = now_us() - t0;
            }
        }
        over[done] = tc - tp;
        cb[done] = tm.us;
        plain[done] = tp;
        done++;
        if (eog) break;
        if (w->guided && a != ref[i]) break; /* left the reference: stop */
    }
out:
    loom_sampler_free(sc);
    loom_sampler_free(sn);
    free(logits);
    return done;
}

static void usage(FILE *f) {
    fprintf(f, "usage: loom bench grammar [--vocab V.gguf] [--model M.gguf] [-n STEPS] [-r REPS] [-t THREADS] [--json]\n");
}

int loom_bench_grammar(int argc, char **argv) {
    const char *vocab_path = NULL, *model_path = NULL;
    long long steps = 256, reps = 3, threads = 0;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--vocab") && val) vocab_path = val, i++;
        else if (!strcmp(a, "--model") && val) model_path = val, i++;
        else if (!strcmp(a, "-n") && val && cli_parse_ll(val, 1, 100000, &steps)) i++;
        else if (!strcmp(a, "-r") && val && cli_parse_ll(val, 2, 1000, &reps)) i++;
        else if (!strcmp(a, "-t") && val && cli_parse_ll(val, 0, 1024, &threads)) i++;
        else if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "loom bench grammar: bad option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    char def_vocab[4096];
    if (!vocab_path) {
        /* the repository's copy, next to the default model */
        snprintf(def_vocab, sizeof def_vocab, "%s", loom_default_model_path());
        char *slash = strrchr(def_vocab, '/');
        if (slash) *slash = 0;
        slash = strrchr(def_vocab, '/');
        if (slash) *slash = 0;
        strncat(def_vocab, "/tests/data/vocab/ggml-vocab-qwen2.gguf", sizeof def_vocab - strlen(def_vocab) - 1);
        vocab_path = def_vocab;
    }
    loom_error err = {0};
    loom_gguf *gg = NULL;
    loom_tokenizer *tok = NULL;
    if (loom_gguf_open(vocab_path, NULL, &gg, &err) || loom_tokenizer_new_from_gguf(gg, &tok, &err)) {
        fprintf(stderr, "loom bench grammar: %s: %s\n", vocab_path, err.msg);
        loom_gguf_close(gg);
        return 1;
    }
    loom_gguf_close(gg);
    int32_t n_vocab = loom_tokenizer_n_vocab(tok);
    double t0 = now_us();
    loom_grammar_vocab *v = NULL;
    if (loom_grammar_vocab_new(tok, &v, &err)) {
        fprintf(stderr, "loom bench grammar: %s\n", err.msg);
        return 1;
    }
    double vocab_ms = (now_us() - t0) / 1e3;
    /* grammars */
    work w[4];
    int nw = 0;
    loom_grammar *g_obj = NULL, *g_schema = NULL;
    t0 = now_us();
    if (loom_grammar_new_json_object(&g_obj, &err) || loom_grammar_new_json_schema(SCHEMA, strlen(SCHEMA), &g_schema, &err)) {
        fprintf(stderr, "loom bench grammar: %s\n", err.msg);
        return 1;
    }
    double compile_ms = (now_us() - t0) / 1e3 / 2;
    w[nw++] = (work){"schema/guided", g_schema, true};
    w[nw++] = (work){"json-object/guided", g_obj, true};
    w[nw++] = (work){"schema/random", g_schema, false};
    w[nw++] = (work){"json-object/random", g_obj, false};
    /* the reference document, checked against both grammars */
    int32_t n_ref = 0;
    loom_tokenize(tok, REFERENCE, strlen(REFERENCE), false, false, NULL, 0, &n_ref, NULL);
    int32_t *ref = malloc((size_t)(n_ref + 1) * sizeof(int32_t));
    if (!ref || loom_tokenize(tok, REFERENCE, strlen(REFERENCE), false, false, ref, n_ref, &n_ref, NULL)) return 1;
    size_t cap = (size_t)steps * (size_t)reps;
    double *over = malloc(cap * sizeof(double)), *cb = malloc(cap * sizeof(double)), *plain = malloc(cap * sizeof(double));
    if (!over || !cb || !plain) return 1;
    result res[4];
    for (int k = 0; k < nw; k++) {
        loom_grammar_matcher *gm = NULL;
        if (loom_grammar_matcher_new(w[k].g, v, NULL, &gm, &err)) {
            fprintf(stderr, "loom bench grammar: %s\n", err.msg);
            return 1;
        }
        result *r = &res[k];
        memset(r, 0, sizeof *r);
        /* cold: one pass on a fresh matcher */
        int n1 = pass(gm, n_vocab, &w[k], ref, n_ref, (int)steps, 1, over, cb, plain);
        loom_grammar_matcher_stats st;
        loom_grammar_matcher_get_stats(gm, &st);
        r->walks_cold = st.mask_walks;
        r->steps = n1;
        r->cold_over_mean = mean(over, n1);
        r->cold_cb_mean = mean(cb, n1);
        r->cold_over_med = median(over, n1);
        /* warm: reps - 1 passes on the same matcher (the same logits again) */
        int nn = 0;
        for (int rep = 1; rep < reps; rep++)
            nn += pass(gm, n_vocab, &w[k], ref, n_ref, (int)steps, 1, over + nn, cb + nn, plain + nn);
        loom_grammar_matcher_get_stats(gm, &st);
        r->walks_warm = st.mask_walks - r->walks_cold;
        r->warm_over_mean = mean(over, nn);
        r->warm_cb_mean = mean(cb, nn);
        r->warm_over_med = median(over, nn);
        r->warm_cb_med = median(cb, nn);
        r->plain_med = median(plain, nn);
        loom_grammar_matcher_free(gm);
    }
    /* decode step */
    double decode_ms = 0;
    if (model_path) {
        loom_model_params mp = loom_model_default_params();
        mp.path = model_path;
        mp.n_ctx = 1024;
        mp.n_threads = (int)threads;
        loom_model *m = NULL;
        if (loom_model_open(&mp, &m, &err)) {
            fprintf(stderr, "loom bench grammar: %s: %s\n", model_path, err.msg);
        } else {
            int32_t t = ref[0];
            double *d = malloc((size_t)steps * sizeof(double));
            int nd = 0;
            loom_model_eval(m, &t, 1, false, &err);
            for (int i = 0; d && i < steps && i < 1000; i++) {
                double a = now_us();
                if (loom_model_eval(m, &t, 1, false, &err)) break;
                d[nd++] = now_us() - a;
                t = loom_model_argmax(m, -1);
            }
            decode_ms = median(d, nd) / 1e3;
            free(d);
            if (loom_model_n_vocab(m) != n_vocab)
                fprintf(stderr, "note: the model has %d vocabulary rows, the vocab file %d tokens\n",
                        loom_model_n_vocab(m), (int)n_vocab);
            loom_model_close(m);
        }
    }
    if (json) {
        printf("{\"vocab\":\"%s\",\"n_vocab\":%d,\"vocab_index_ms\":%.2f,\"compile_ms\":%.3f,\"decode_ms\":%.3f,"
               "\"workloads\":[",
               vocab_path, (int)n_vocab, vocab_ms, compile_ms, decode_ms);
        for (int k = 0; k < nw; k++) {
            const result *r = &res[k];
            printf("%s{\"name\":\"%s\",\"steps\":%d,\"plain_us\":%.1f,\"cold_grammar_us\":%.1f,"
                   "\"cold_overhead_mean_us\":%.1f,\"cold_overhead_median_us\":%.1f,\"warm_grammar_us\":%.1f,"
                   "\"warm_grammar_median_us\":%.1f,\"warm_overhead_mean_us\":%.1f,\"warm_overhead_median_us\":%.1f,"
                   "\"trie_walks_cold\":%lld,\"trie_walks_warm\":%lld}",
                   k ? "," : "", w[k].name, r->steps, r->plain_med, r->cold_cb_mean, r->cold_over_mean, r->cold_over_med,
                   r->warm_cb_mean, r->warm_cb_med, r->warm_over_mean, r->warm_over_med, (long long)r->walks_cold,
                   (long long)r->walks_warm);
        }
        printf("]}\n");
    } else {
        printf("vocabulary: %s (%d tokens); token trie built in %.1f ms; grammar compiled in %.2f ms\n", vocab_path,
               (int)n_vocab, vocab_ms, compile_ms);
        if (model_path) printf("decode step (%s): %.2f ms median\n", model_path, decode_ms);
        printf("per token, us: plain = unconstrained sample+accept (median); grammar = time inside the grammar "
               "(mean); overhead = constrained - plain step (mean / median)\n");
        printf("%-20s %5s %7s | %8s %8s %8s | %8s %8s %8s %8s | %5s %5s\n", "workload", "steps", "plain", "cold gr",
               "ovh mean", "ovh med", "warm gr", "gr med", "ovh mean", "ovh med", "walks", "warm");
        for (int k = 0; k < nw; k++) {
            const result *r = &res[k];
            printf("%-20s %5d %7.1f | %8.1f %8.1f %8.1f | %8.1f %8.1f %8.1f %8.1f | %5lld %5lld\n", w[k].name,
                   r->steps, r->plain_med, r->cold_cb_mean, r->cold_over_mean, r->cold_over_med, r->warm_cb_mean,
                   r->warm_cb_med, r->warm_over_mean, r->warm_over_med, (long long)r->walks_cold,
                   (long long)r->walks_warm);
        }
        if (decode_ms > 0)
            for (int k = 0; k < nw; k++)
                printf("%-20s grammar time = %.2f%% (warm) / %.2f%% (cold) of a decode step\n", w[k].name,
                       100.0 * res[k].warm_cb_mean / (decode_ms * 1e3), 100.0 * res[k].cold_cb_mean / (decode_ms * 1e3));
    }
    free(over), free(cb), free(plain), free(ref);
    loom_grammar_free(g_obj);
    loom_grammar_free(g_schema);
    loom_grammar_vocab_free(v);
    loom_tokenizer_free(tok);
    return 0;
}
