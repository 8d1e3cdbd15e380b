/* loom eval MODEL.gguf (--tokens 1,2,3 | --prompt TEXT) [--out FILE] [--greedy N]
 *
 * Evaluates the tokens as one batch and writes the logits of every position:
 * int32 n_tokens, int32 n_vocab, float32 logits[n_tokens][n_vocab] (little-endian).
 * --greedy N then continues N tokens greedily and prints "greedy: id id ...". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "gguf/file_out.h"
#include "model_opts.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: loom eval MODEL.gguf (--tokens 1,2,3 | --prompt TEXT) [--out FILE] [--greedy N]\n"
            "  --tokens LIST          comma-separated token ids\n"
            "  --prompt TEXT          tokenize TEXT (with BOS when the vocabulary adds it)\n"
            "  --out FILE             write int32 n_tokens, int32 n_vocab, float32 logits[n][vocab]\n"
            "  --greedy N             print N greedy continuation ids as 'greedy: id id ...'\n"
            "%s",
            model_opts_help());
}

static int put_u32le(FILE *f, uint32_t v) {
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    return fwrite(b, 1, 4, f) == 4 ? 0 : -1;
}

/* Atomically (a temporary file renamed into place): a failure never leaves a
 * truncated file or destroys an existing one. */
static int write_logits(const char *path, loom_model *m, int n) {
    loom_file_out fo;
    loom_error err = {0};
    if (loom_file_out_open(&fo, path, "loom eval", &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return err.status == LOOM_ERR_INVALID_ARG ? -2 : -1; /* -2: a bad --out */
    }
    FILE *f = fo.f;
    int nv = loom_model_n_vocab(m);
    int rc = put_u32le(f, (uint32_t)n) | put_u32le(f, (uint32_t)nv);
    for (int i = 0; i < n && !rc; i++) {
        const float *l = loom_model_logits(m, i);
        for (int j = 0; j < nv && !rc; j++) {
            uint32_t u;
            memcpy(&u, &l[j], 4);
            rc = put_u32le(f, u);
        }
    }
    if (rc) {
        loom_file_out_abort(&fo);
        fprintf(stderr, "loom eval: writing %s failed\n", path);
        return -1;
    }
    if (loom_file_out_commit(&fo, "loom eval", &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    return 0;
}

int loom_cmd_eval(int argc, char **argv) {
    model_opts o;
    model_opts_init(&o);
    const char *model = NULL, *tokens_arg = NULL, *prompt = NULL, *out = NULL;
    int greedy = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int r = model_opts_parse(&o, argc, argv, &i, "loom eval");
        if (r < 0) return 2;
        if (r > 0) continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--tokens") && i + 1 < argc) {
            tokens_arg = argv[++i];
        } else if ((!strcmp(a, "--prompt") || !strcmp(a, "-p")) && i + 1 < argc) {
            prompt = argv[++i];
        } else if ((!strcmp(a, "--out") || !strcmp(a, "-o")) && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(a, "--greedy") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 0 || v > 1000000) {
                fprintf(stderr, "loom eval: --greedy needs an integer in [0, 1000000], got '%s'\n", argv[i]);
                return 2;
            }
            greedy = (int)v;
        } else if (a[0] != '-' && !model) {
            model = a;
        } else {
            fprintf(stderr, "loom eval: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!model) model = loom_default_model_path();
    if (model_opts_finish(&o, "loom eval")) return 2;
    if (!tokens_arg == !prompt) {
        fprintf(stderr, "loom eval: give exactly one of --tokens or --prompt\n");
        usage(stderr);
        return 2;
    }
    int32_t *toks = NULL;
    int n = 0;
    if (tokens_arg) {
        n = parse_int_list(tokens_arg, &toks);
        if (n <= 0) {
            fprintf(stderr, "loom eval: bad --tokens list '%s'\n", tokens_arg);
            free(toks);
            return 2;
        }
    }
    /* One batch for the whole input; room for the greedy continuation. */
    loom_model_params *p = &o.p;
    p->path = model;
    int rc = 1;
    loom_error err = {0};
    loom_model *m = NULL;
    if (prompt) {
        /* tokenize from the file's vocabulary before sizing the context */
        loom_gguf *g = NULL;
        loom_tokenizer *tk = NULL;
        if (loom_gguf_open(model, NULL, &g, &err) || loom_tokenizer_new_from_gguf(g, &tk, &err)) {
            loom_gguf_close(g);
            goto fail;
        }
        loom_gguf_close(g);
        int32_t cnt = 0;
        loom_tokenize(tk, prompt, strlen(prompt), true, false, NULL, 0, &cnt, NULL);
        if (cnt > 0 && cnt < (1 << 24)) toks = malloc((size_t)cnt * sizeof *toks);
        if (!toks || loom_tokenize(tk, prompt, strlen(prompt), true, false, toks, cnt, &cnt, NULL)) {
            fprintf(stderr, "loom eval: tokenizing the prompt failed (or it gives no tokens)\n");
            loom_tokenizer_free(tk);
            goto done;
        }
        loom_tokenizer_free(tk);
        n = (int)cnt;
    }
    if (!o.ctx_set) p->n_ctx = n + greedy;
    if (!o.batch_set) p->n_batch = n;
    if (loom_model_open(p, &m, &err)) goto fail;
    if (loom_model_eval(m, toks, n, true, &err)) goto fail;
    if (out) {
        int wr = write_logits(out, m, n);
        if (wr == -2) rc = 2;
        if (wr) goto done;
    }
    if (greedy > 0) {
        printf("greedy:");
        int32_t t = loom_model_argmax(m, -1);
        for (int i = 0; i < greedy; i++) {
            if (t < 0) {
                printf("\n");
                loom_error_set(&err, LOOM_ERR_FORMAT, "position %d: every logit is NaN", loom_model_n_past(m));
                goto fail;
            }
            printf(" %d", (int)t);
            if (i + 1 < greedy) {
                if (loom_model_eval(m, &t, 1, false, &err)) {
                    printf("\n");
                    goto fail;
                }
                t = loom_model_argmax(m, -1);
            }
        }
        printf("\n");
    }
    if (!out && !greedy) {
        /* nothing asked: print the top token of each position */
        for (int i = 0; i < n; i++) printf("%d -> %d\n", (int)toks[i], (int)loom_model_argmax(m, i));
    }
    rc = 0;
    goto done;
fail:
    fprintf(stderr, "loom eval: %s: %s\n", loom_status_name(err.status), err.msg);
done:
    loom_model_close(m);
    free(toks);
    return rc;
}
