/* loom bench tokenizer VOCAB.gguf --file TEXT [-r REPS] [--special] [--bos] [--json]
 *
 * Tokenizer throughput: loads the vocabulary once, then tokenizes the whole
 * file REPS times (default 5) and prints the median time, tokens/s and MB/s
 * (plus the load time and the detokenize time of the result). The text is
 * tokenized as one prompt, without special-token parsing unless --special.
 * bench/gen_tok_text.py writes the 1 MB mixed text of bench/README.md. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "loom_gguf.h"
#include "loom_tokenizer.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int loom_bench_tokenizer(int argc, char **argv) {
    const char *vocab = NULL, *file = NULL;
    int reps = 5;
    bool special = false, bos = false, json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--file") && i + 1 < argc) file = argv[++i];
        else if (!strcmp(a, "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(a, "--special")) special = true;
        else if (!strcmp(a, "--bos")) bos = true;
        else if (!strcmp(a, "--json")) json = true;
        else if (a[0] != '-' && !vocab) vocab = a;
        else {
            fprintf(stderr, "usage: loom bench tokenizer VOCAB.gguf --file TEXT [-r REPS] [--special] [--bos] [--json]\n");
            return 2;
        }
    }
    if (!vocab || !file || reps < 1 || reps > 1000) {
        fprintf(stderr, "usage: loom bench tokenizer VOCAB.gguf --file TEXT [-r REPS] [--special] [--bos] [--json]\n");
        return 2;
    }
    FILE *f = fopen(file, "rb");
    if (!f) { fprintf(stderr, "loom bench tokenizer: cannot read %s\n", file); return 1; }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = sz >= 0 ? malloc((size_t)sz + 1) : NULL;
    if (!text || fread(text, 1, (size_t)sz, f) != (size_t)sz) {
        fclose(f);
        free(text);
        fprintf(stderr, "loom bench tokenizer: cannot read %s\n", file);
        return 1;
    }
    fclose(f);
    loom_error err = {0};
    double t0 = now_s();
    loom_gguf *g = NULL;
    loom_tokenizer *t = NULL;
    if (loom_gguf_open(vocab, NULL, &g, &err) != LOOM_OK || loom_tokenizer_new_from_gguf(g, &t, &err) != LOOM_OK) {
        fprintf(stderr, "loom bench tokenizer: %s\n", err.msg);
        loom_gguf_close(g);
        free(text);
        return 1;
    }
    loom_gguf_close(g);
    double t_load = now_s() - t0;
    int32_t n = 0;
    loom_tokenize(t, text, (size_t)sz, bos, special, NULL, 0, &n, NULL);
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    double *ts = malloc(sizeof(double) * (size_t)reps);
    int rc = 0;
    if (!ids || !ts) { rc = 1; goto done; }
    for (int r = 0; r < reps; r++) {
        double a = now_s();
        int32_t m = 0;
        if (loom_tokenize(t, text, (size_t)sz, bos, special, ids, n, &m, &err) != LOOM_OK || m != n) {
            fprintf(stderr, "loom bench tokenizer: %s\n", err.msg);
            rc = 1;
            goto done;
        }
        ts[r] = now_s() - a;
    }
    qsort(ts, (size_t)reps, sizeof(double), cmp_d);
    double med = ts[reps / 2];
    size_t dl = 0;
    double d0 = now_s();
    loom_detokenize(t, ids, n, 0, NULL, 0, &dl);
    char *det = malloc(dl + 1);
    if (det) loom_detokenize(t, ids, n, 0, det, dl + 1, &dl);
    double t_det = now_s() - d0;
    free(det);
    unsigned long long h = 1469598103934665603ull; /* FNV-1a of the ids, to compare with llama.cpp */
    for (int32_t i = 0; i < n; i++) {
        h ^= (unsigned)ids[i];
        h *= 1099511628211ull;
    }
    if (json)
        printf("{\"vocab\": \"%s\", \"bytes\": %ld, \"tokens\": %d, \"load_s\": %.6f, \"tokenize_s\": %.6f, "
               "\"tokens_per_s\": %.0f, \"mb_per_s\": %.3f, \"detokenize_s\": %.6f, \"ids_hash\": \"%016llx\", "
               "\"reps\": %d}\n",
               vocab, sz, (int)n, t_load, med, n / med, sz / med / 1e6, t_det, h, reps);
    else
        printf("%s: %ld bytes -> %d tokens; load %.1f ms; tokenize median %.1f ms (min %.1f, %d reps) = %.0f tokens/s, "
               "%.2f MB/s; detokenize %.1f ms\n",
               vocab, sz, (int)n, t_load * 1e3, med * 1e3, ts[0] * 1e3, reps, n / med, sz / med / 1e6, t_det * 1e3);
done:
    free(ts);
    free(ids);
    free(text);
    loom_tokenizer_free(t);
    return rc;
}
