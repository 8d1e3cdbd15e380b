/* loom embed MODEL.gguf (TEXT... | --file FILE | --tokens 1,2,3 ...) [options]
 *
 * One vector per input (an embedding model: bert, nomic-bert(-moe), gemma-embedding, a
 * decoder with a pooling type, or any llama/mistral/qwen2/qwen3 decoder with
 * --pooling), computed in one call (inputs packed into graphs of --batch tokens). Inputs: each TEXT argument, each
 * line of --file (empty lines skipped), or each --tokens list (ids as given, no
 * [CLS]/[SEP] added). Output: one line of space-separated floats per vector, or with
 * --json {"embeddings": [[...], ...]}. With --pooling none every token's vector is
 * printed (plain: a blank line between inputs; JSON: one list of vectors per input).
 * Vectors are L2-normalized unless --no-normalize. An input longer than the context
 * is an error unless --truncate. Errors: exit 1 with one line on stderr; usage: 2. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_util.h"
#include "commands.h"
#include "loom_embed.h"

static void usage(FILE *f) {
    fprintf(f, "usage: loom embed MODEL.gguf (TEXT... | --file FILE | --tokens ID,ID,...) [options]\n"
               "  --file FILE       one input per line (empty lines skipped)\n"
               "  --tokens IDS      one input of token ids (repeatable; no [CLS]/[SEP] added)\n"
               "  --json            print {\"embeddings\": [[...], ...]}\n"
               "  --no-normalize    keep the raw pooled vectors (default: unit L2 norm)\n"
               "  --pooling P       none, mean, cls, last (default: the model's; given, also\n"
               "                    embeds with a llama/mistral/qwen2/qwen3 decoder)\n"
               "  --truncate        cut inputs longer than the context instead of failing\n"
               "  -c, --ctx N       longest input in tokens (default: the model's context)\n"
               "  -b, --batch N     tokens per graph (default: the context)\n"
               "  -t, --threads N   CPU threads (default: physical cores)\n"
               "  -fa, --flash-attn [on|off|auto]  fused attention (default: on)\n"
               "  --no-flash-attn   attention as matmul, softmax, matmul (-fa off)\n"
               "  --verbose         load and compute times on stderr\n");
}

typedef struct seq_list {
    int32_t **ids;
    int32_t *n;
    int count, cap;
} seq_list;

static bool seq_push(seq_list *l, int32_t *ids, int32_t n) {
    if (l->count == l->cap) {
        int cap = l->cap ? l->cap * 2 : 8;
        int32_t **ni = realloc(l->ids, (size_t)cap * sizeof *ni);
        if (!ni) return false;
        l->ids = ni;
        int32_t *nn = realloc(l->n, (size_t)cap * sizeof *nn);
        if (!nn) return false;
        l->n = nn;
        l->cap = cap;
    }
    l->ids[l->count] = ids;
    l->n[l->count++] = n;
    return true;
}

static bool parse_ids(const char *s, int32_t **out, int32_t *n_out) {
    size_t cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    int32_t *ids = malloc(cap * sizeof *ids);
    if (!ids) return false;
    int32_t n = 0;
    const char *p = s;
    while (*p) {
        char buf[24];
        size_t k = 0;
        while (p[k] && p[k] != ',' && k < sizeof buf - 1) {
            buf[k] = p[k];
            k++;
        }
        buf[k] = 0;
        long long v;
        if (!cli_parse_ll(buf, 0, INT32_MAX, &v) || (p[k] && p[k] != ',')) {
            free(ids);
            return false;
        }
        ids[n++] = (int32_t)v;
        p += k;
        if (*p == ',') p++;
    }
    if (n == 0) {
        free(ids);
        return false;
    }
    *out = ids;
    *n_out = n;
    return true;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void print_vec(const float *v, int n, bool json) {
    if (json) putchar('[');
    for (int i = 0; i < n; i++) printf("%s%.9g", i ? (json ? "," : " ") : "", (double)v[i]);
    if (json) putchar(']');
}

int loom_cmd_embed(int argc, char **argv) {
    loom_embed_params p = loom_embed_default_params();
    p.flash_attn = true; /* the CLI's default everywhere (-fa off / --no-flash-attn) */
    const char *file = NULL;
    bool json = false, normalize = true, truncate = false, verbose = false;
    const char **texts = calloc((size_t)argc + 1, sizeof *texts);
    int n_texts = 0;
    seq_list seqs = {0};
    int rc = CLI_EXIT_USAGE;
    loom_embedder *e = NULL;
    char *fbuf = NULL;
    float *out = NULL;
    if (!texts) {
        fprintf(stderr, "loom embed: out of memory\n");
        return CLI_EXIT_ERROR;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        long long x;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            rc = CLI_EXIT_OK;
            goto done;
        } else if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--no-normalize")) normalize = false;
        else if (!strcmp(a, "--truncate")) truncate = true;
        else if (!strcmp(a, "--verbose")) verbose = true;
        else if (!strcmp(a, "-fa") || !strcmp(a, "--flash-attn")) {
            p.flash_attn = true;
            if (cli_parse_flash_attn(v, &p.flash_attn)) i++;
        } else if (!strcmp(a, "--no-flash-attn")) p.flash_attn = false;
        else if (a[0] == '-' && a[1]) {
            if (!v) {
                fprintf(stderr, "loom embed: %s needs a value (or is unknown)\n", a);
                usage(stderr);
                goto done;
            }
            i++;
            if (!strcmp(a, "--file")) file = v;
            else if (!strcmp(a, "--tokens")) {
                int32_t *ids, n;
                if (!parse_ids(v, &ids, &n)) {
                    fprintf(stderr, "loom embed: --tokens needs ids like 101,2054,102, got '%s'\n", v);
                    goto done;
                }
                if (!seq_push(&seqs, ids, n)) {
                    free(ids);
                    fprintf(stderr, "loom embed: out of memory\n");
                    rc = CLI_EXIT_ERROR;
                    goto done;
                }
            } else if (!strcmp(a, "--pooling")) {
                if (!loom_pooling_from_name(v, &p.pooling)) {
                    fprintf(stderr, "loom embed: --pooling needs none, mean, cls or last, got '%s'\n", v);
                    goto done;
                }
            } else if (!strcmp(a, "-c") || !strcmp(a, "--ctx") || !strcmp(a, "-b") || !strcmp(a, "--batch") ||
                       !strcmp(a, "-t") || !strcmp(a, "--threads")) {
                if (!cli_parse_ll(v, 1, 1 << 20, &x)) {
                    fprintf(stderr, "loom embed: %s needs a positive integer, got '%s'\n", a, v);
                    goto done;
                }
                if (a[1] == 'c' || !strcmp(a, "--ctx")) p.n_ctx = (int32_t)x;
                else if (a[1] == 'b' || !strcmp(a, "--batch")) p.n_batch = (int32_t)x;
                else p.n_threads = (int)x;
            } else {
                fprintf(stderr, "loom embed: unknown option '%s'\n", a);
                usage(stderr);
                goto done;
            }
        } else if (!p.path) p.path = a;
        else texts[n_texts++] = a;
    }
    if (!p.path) {
        fprintf(stderr, "loom embed: no model given\n");
        usage(stderr);
        goto done;
    }
    if ((n_texts > 0) + (file != NULL) + (seqs.count > 0) != 1) {
        fprintf(stderr, "loom embed: give the inputs as TEXT arguments, --file or --tokens (exactly one of them)\n");
        usage(stderr);
        goto done;
    }
    rc = CLI_EXIT_ERROR;
    loom_error err = {0};
    double t_load = now_s();
    if (loom_embed_open(&p, &e, &err)) {
        fprintf(stderr, "loom embed: %s\n", err.msg);
        goto done;
    }
    t_load = now_s() - t_load;
    const int32_t n_ctx = loom_embed_n_ctx(e), E = loom_embed_n_embd(e);
    if (file) {
        char why[256] = {0};
        size_t len = 0;
        fbuf = cli_read_file(file, (size_t)1 << 30, &len, why, sizeof why);
        if (!fbuf) {
            fprintf(stderr, "loom embed: %s\n", why);
            goto done;
        }
        const char **nt = realloc(texts, (len + 2) * sizeof *nt);
        if (!nt) {
            fprintf(stderr, "loom embed: out of memory\n");
            goto done;
        }
        texts = nt;
        for (char *s = fbuf; s < fbuf + len;) {
            char *nl = memchr(s, '\n', (size_t)(fbuf + len - s));
            if (!nl) nl = fbuf + len;
            *nl = 0;
            if (nl > s && nl[-1] == '\r') nl[-1] = 0;
            if (*s) texts[n_texts++] = s;
            s = nl + 1;
        }
        if (n_texts == 0) {
            fprintf(stderr, "loom embed: %s has no input lines\n", file);
            goto done;
        }
    }
    for (int i = 0; i < n_texts; i++) {
        int32_t *ids = malloc((size_t)n_ctx * sizeof *ids), n = 0;
        if (!ids || !seq_push(&seqs, ids, 0)) {
            free(ids);
            fprintf(stderr, "loom embed: out of memory\n");
            goto done;
        }
        if (loom_embed_tokenize(e, texts[i], strlen(texts[i]), truncate, ids, n_ctx, &n, &err)) {
            fprintf(stderr, "loom embed: input %d: %s\n", i + 1, err.msg);
            goto done;
        }
        seqs.n[seqs.count - 1] = n;
    }
    const bool none = loom_embed_pooling(e) == LOOM_POOLING_NONE;
    size_t rows = 0;
    for (int i = 0; i < seqs.count; i++) rows += none ? (size_t)seqs.n[i] : 1;
    out = malloc(rows * (size_t)E * sizeof *out);
    if (!out) {
        fprintf(stderr, "loom embed: out of memory for %zu vectors\n", rows);
        goto done;
    }
    double t0 = now_s();
    if (loom_embed_compute(e, (const int32_t *const *)seqs.ids, seqs.n, seqs.count, normalize, out,
                           rows * (size_t)E, &err)) {
        fprintf(stderr, "loom embed: %s\n", err.msg);
        goto done;
    }
    if (verbose) {
        double dt = now_s() - t0;
        long long ntok = 0;
        for (int i = 0; i < seqs.count; i++) ntok += seqs.n[i];
        fprintf(stderr, "loom embed: %s, pooling %s, load %.1f ms; %d inputs, %lld tokens in %.1f ms: "
                        "%.2f embeddings/s, %.1f tokens/s\n",
                loom_embed_arch(e), loom_pooling_name(loom_embed_pooling(e)), t_load * 1e3, seqs.count, ntok,
                dt * 1e3, seqs.count / dt, (double)ntok / dt);
    }
    const float *v = out;
    if (json) printf("{\"embeddings\": [");
    for (int i = 0; i < seqs.count; i++) {
        int nv = none ? seqs.n[i] : 1;
        if (json) printf(i ? ", " : "");
        if (json && none) putchar('[');
        for (int r = 0; r < nv; r++, v += E) {
            if (json && r) putchar(',');
            print_vec(v, E, json);
            if (!json) putchar('\n');
        }
        if (json && none) putchar(']');
        if (!json && none && i + 1 < seqs.count) putchar('\n');
    }
    if (json) printf("]}\n");
    rc = CLI_EXIT_OK;
done:
    for (int i = 0; i < seqs.count; i++) free(seqs.ids[i]);
    free(seqs.ids);
    free(seqs.n);
    free(texts);
    free(fbuf);
    free(out);
    loom_embed_close(e);
    return rc;
}
