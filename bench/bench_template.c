/* loom bench template [TEMPLATE.jinja] [--messages N] [--bytes B] [-r RUNS] [--vocab VOCAB.gguf] [--json]
 *
 * Renders a synthetic conversation (a system message, then N-1 alternating
 * user/assistant messages of about B bytes each) with a chat template (default:
 * the Llama 3.1 template of tests/data/templates/shared) and reports the compile
 * time and the render time (conversation JSON in, text + spans out): median, p10,
 * p90, min over RUNS renders, the ratio of the median to the 5 ms target, and the
 * rendered size. With --vocab it also times render + safe tokenization. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "bench.h"
#include "cli_util.h"
#include "loom_gguf.h"
#include "loom_template.h"
#include "loom_tokenizer.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = sz >= 0 ? malloc((size_t)sz + 1) : NULL;
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) { free(b); b = NULL; }
    fclose(f);
    if (b) { b[sz] = 0; *n = (size_t)sz; }
    return b;
}

/* deterministic filler text of about `bytes` bytes */
static size_t filler(char *out, size_t bytes, unsigned seed) {
    static const char *const words[] = {"the", "model", "answers", "quickly", "with", "a", "short", "and", "clear",
                                        "reply", "about", "weather", "in", "Paris", "today,", "then", "asks", "again."};
    size_t k = 0;
    while (k + 10 < bytes) {
        seed = seed * 1103515245u + 12345u;
        k += (size_t)sprintf(out + k, "%s ", words[(seed >> 16) % (sizeof words / sizeof words[0])]);
    }
    if (k) k--;
    return k;
}

static void summary(const char *what, const char *key, double *t, int n, double target, bool json) {
    qsort(t, (size_t)n, sizeof(double), cmp_d);
    double med = t[n / 2], p10 = t[n / 10], p90 = t[(n * 9) / 10], mn = t[0];
    if (json)
        printf("  \"%s\": {\"median_ms\": %.4f, \"p10_ms\": %.4f, \"p90_ms\": %.4f, \"min_ms\": %.4f, \"target_ms\": %.1f},\n", key,
               med, p10, p90, mn, target);
    else
        printf("%-22s median %.3f ms  p10 %.3f  p90 %.3f  min %.3f   (%.1f%% of the %.0f ms target)\n", what, med, p10, p90, mn,
               100.0 * med / target, target);
}

int loom_bench_template(int argc, char **argv) {
    const char *path = "tests/data/templates/shared/meta-llama-Llama-3.1-8B-Instruct.jinja", *vocab = NULL;
    long long nmsg = 100, bytes = 200, runs = 200;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "--messages") && has) { if (!cli_parse_ll(argv[++i], 1, 100000, &nmsg)) goto usage; }
        else if (!strcmp(a, "--bytes") && has) { if (!cli_parse_ll(argv[++i], 1, 1 << 20, &bytes)) goto usage; }
        else if ((!strcmp(a, "-r") || !strcmp(a, "--runs")) && has) { if (!cli_parse_ll(argv[++i], 1, 1000000, &runs)) goto usage; }
        else if (!strcmp(a, "--vocab") && has) vocab = argv[++i];
        else if (!strcmp(a, "--json")) json = true;
        else if (a[0] != '-') path = a;
        else goto usage;
    }
    size_t sl = 0;
    char *src = slurp(path, &sl);
    if (!src) {
        fprintf(stderr, "loom bench template: cannot read %s (run from the repository root or pass a template)\n", path);
        return 2;
    }
    /* the conversation */
    size_t cap = (size_t)nmsg * ((size_t)bytes * 2 + 128) + 256, k = 0;
    char *conv = malloc(cap), *text = malloc((size_t)bytes + 32);
    if (!conv || !text) return 1;
    k += (size_t)sprintf(conv + k, "{\"messages\": [");
    for (long long i = 0; i < nmsg; i++) {
        const char *role = i == 0 ? "system" : (i % 2 ? "user" : "assistant");
        size_t tl = filler(text, (size_t)bytes, (unsigned)i + 1);
        k += (size_t)sprintf(conv + k, "%s{\"role\": \"%s\", \"content\": \"%.*s\"}", i ? ", " : "", role, (int)tl, text);
    }
    k += (size_t)sprintf(conv + k, "], \"add_generation_prompt\": true}");
    loom_error err = {0};
    loom_template *t = NULL;
    double *tm = malloc(sizeof(double) * (size_t)runs);
    double c0 = now_ms();
    if (loom_template_compile(src, sl, NULL, &t, &err) != LOOM_OK) {
        fprintf(stderr, "loom bench template: %s\n", err.msg);
        return 1;
    }
    double compile_ms = now_ms() - c0;
    loom_template_time now = {2024, 7, 26, 12, 0, 0};
    loom_template_params p = {"<|begin_of_text|>", "<|eot_id|>", &now};
    loom_template_result r = {0};
    size_t out_len = 0, nspans = 0;
    for (long long i = 0; i < runs + 5; i++) { /* 5 warm-up renders */
        double t0 = now_ms();
        loom_status st = loom_template_render_json(t, conv, k, &p, &r, &err);
        double dt = now_ms() - t0;
        if (st != LOOM_OK) {
            fprintf(stderr, "loom bench template: %s\n", err.msg);
            return 1;
        }
        out_len = r.len;
        nspans = r.n_spans;
        loom_template_result_free(&r);
        if (i >= 5) tm[i - 5] = dt;
    }
    if (json) printf("{\n  \"template\": \"%s\", \"messages\": %lld, \"conversation_bytes\": %zu, \"rendered_bytes\": %zu, \"spans\": %zu, \"compile_ms\": %.4f,\n",
                     path, nmsg, k, out_len, nspans, compile_ms);
    else printf("template %s: %lld messages, %zu bytes of JSON -> %zu bytes, %zu content spans; compile %.3f ms; %lld runs\n", path,
                nmsg, k, out_len, nspans, compile_ms, runs);
    summary("render", "render", tm, (int)runs, 5.0, json);
    /* how much of it is parsing the conversation JSON (jansson) */
    for (long long i = 0; i < runs; i++) {
        json_error_t je;
        double t0 = now_ms();
        json_t *j = json_loadb(conv, k, JSON_ALLOW_NUL, &je);
        json_decref(j);
        tm[i] = now_ms() - t0;
    }
    summary("  of which JSON parse", "json_parse", tm, (int)runs, 5.0, json);
    if (vocab) {
        loom_gguf *g = NULL;
        loom_tokenizer *tok = NULL;
        if (loom_gguf_open(vocab, NULL, &g, &err) != LOOM_OK || loom_tokenizer_new_from_gguf(g, &tok, &err) != LOOM_OK) {
            fprintf(stderr, "loom bench template: %s\n", err.msg);
            return 1;
        }
        loom_gguf_close(g);
        int32_t nids = 0;
        for (long long i = 0; i < runs + 5; i++) {
            int32_t *ids = NULL;
            double t0 = now_ms();
            loom_status st = loom_template_render_tokens(t, tok, conv, k, &p, &ids, &nids, NULL, &err);
            double dt = now_ms() - t0;
            free(ids);
            if (st != LOOM_OK) {
                fprintf(stderr, "loom bench template: %s\n", err.msg);
                return 1;
            }
            if (i >= 5) tm[i - 5] = dt;
        }
        if (!json) printf("render + tokenize (%s, %d ids):\n", vocab, (int)nids);
        summary("render_tokens", "render_tokens", tm, (int)runs, 5.0, json);
        loom_tokenizer_free(tok);
    }
    if (json) printf("  \"ok\": true\n}\n");
    loom_template_free(t);
    free(tm);
    free(conv);
    free(text);
    free(src);
    return 0;
usage:
    fprintf(stderr, "usage: loom bench template [TEMPLATE.jinja] [--messages N] [--bytes B] [-r RUNS] [--vocab VOCAB.gguf] [--json]\n");
    return 2;
}
