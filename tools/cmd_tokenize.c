/* loom tokenize [MODEL.gguf] TEXT [--no-bos] [--no-special] [--pieces]
 * loom tokenize [MODEL.gguf] --file FILE [...]
 * loom tokenize [MODEL.gguf] --vectors FILE.inp
 *
 * Prints the token ids of TEXT, space separated on one line (BOS/EOS added as
 * the vocabulary says unless --no-bos; special-token texts are recognised
 * unless --no-special). --pieces prints one "id<TAB>piece" line per token
 * instead (control tokens show their vocabulary text). --vectors reads test
 * strings separated by lines "__ggml_vocab_test__" (each string is followed by
 * "\n__ggml_vocab_test__\n") and prints one line of ids per string without BOS,
 * in the format of the llama.cpp .out files (" id id ..."), so that
 * `diff` against the matching .out passes. The model defaults to the bundled
 * one when the first argument does not end in ".gguf". Errors: exit status 1
 * with one line on stderr; usage errors: 2. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "loom_gguf.h"
#include "loom_tokenizer.h"

static void usage(FILE *f) {
    fprintf(f, "usage: loom tokenize [MODEL.gguf] (TEXT | --file FILE | --vectors FILE.inp)\n"
               "                     [--no-bos] [--no-special] [--pieces]\n");
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0;
    char *b = malloc(cap);
    while (b) {
        size_t r = fread(b + len, 1, cap - len, f);
        len += r;
        if (len < cap) break;
        char *nb = cap < SIZE_MAX / 2 ? realloc(b, cap * 2) : NULL;
        if (!nb) { free(b); b = NULL; break; }
        b = nb;
        cap *= 2;
    }
    if (b && ferror(f)) { free(b); b = NULL; }
    fclose(f);
    if (b) *n = len;
    return b;
}

/* Tokenize into a growing buffer. */
static loom_status tokenize_all(const loom_tokenizer *t, const char *s, size_t n, bool bos, bool special,
                                int32_t **ids, int64_t *cap, int64_t *count) {
    loom_status st = loom_tokenize(t, s, n, bos, special, *ids, *cap, count);
    if (st != LOOM_ERR_RANGE) return st;
    int32_t *ni = realloc(*ids, (size_t)*count * sizeof(int32_t));
    if (!ni) return LOOM_ERR_NOMEM;
    *ids = ni;
    *cap = *count;
    return loom_tokenize(t, s, n, bos, special, *ids, *cap, count);
}

static void print_piece(const loom_tokenizer *t, int32_t id) {
    char buf[1024];
    size_t len = 0;
    const char *txt;
    if (loom_token_to_piece(t, id, buf, sizeof buf, &len) == LOOM_OK && len > 0) {
        printf("%d\t", id);
        fwrite(buf, 1, len, stdout);
        putchar('\n');
    } else if (loom_token_text(t, id, &txt, &len) == LOOM_OK) {
        printf("%d\t%.*s\n", id, (int)len, txt);
    }
}

int loom_cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL, *file = NULL, *vectors = NULL;
    bool bos = true, special = true, pieces = false;
    int npos = 0;
    const char *pos[2] = {NULL, NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--no-bos")) bos = false;
        else if (!strcmp(a, "--no-special")) special = false;
        else if (!strcmp(a, "--pieces")) pieces = true;
        else if ((!strcmp(a, "--file") || !strcmp(a, "-f")) && i + 1 < argc) file = argv[++i];
        else if (!strcmp(a, "--vectors") && i + 1 < argc) vectors = argv[++i];
        else if (a[0] == '-' && a[1] == '-') { fprintf(stderr, "loom tokenize: unknown option %s\n", a); usage(stderr); return 2; }
        else if (npos < 2) pos[npos++] = a;
        else { usage(stderr); return 2; }
    }
    int p = 0;
    if (npos > 0) {
        size_t l = strlen(pos[0]);
        if ((l > 5 && !strcmp(pos[0] + l - 5, ".gguf")) || npos == 2) model = pos[p++];
    }
    if (p < npos) text = pos[p++];
    if (!model) model = loom_default_model_path();
    if ((text != NULL) + (file != NULL) + (vectors != NULL) != 1) { usage(stderr); return 2; }

    loom_error err = {0};
    loom_gguf *g = NULL;
    if (loom_gguf_open(model, NULL, &g, &err) != LOOM_OK) {
        fprintf(stderr, "loom tokenize: %s\n", err.msg);
        return 1;
    }
    loom_tokenizer *t = NULL;
    loom_status st = loom_tokenizer_new_from_gguf(g, &t, &err);
    loom_gguf_close(g);
    if (st != LOOM_OK) {
        fprintf(stderr, "loom tokenize: %s: %s\n", model, err.msg);
        return 1;
    }
    int rc = 0;
    int64_t cap = 256, n = 0;
    int32_t *ids = malloc((size_t)cap * sizeof(int32_t));
    char *data = NULL;
    size_t dlen = 0;
    if (!ids) { rc = 1; goto done; }
    if (file || vectors) {
        data = slurp(file ? file : vectors, &dlen);
        if (!data) {
            fprintf(stderr, "loom tokenize: cannot read %s\n", file ? file : vectors);
            rc = 1;
            goto done;
        }
    }
    if (vectors) {
        static const char sep[] = "\n__ggml_vocab_test__\n";
        const size_t sl = sizeof sep - 1;
        size_t at = 0;
        while (at < dlen) {
            /* find the next separator */
            size_t e = at;
            while (e + sl <= dlen && memcmp(data + e, sep, sl) != 0) e++;
            if (e + sl > dlen) break; /* trailing text without a separator is ignored */
            st = tokenize_all(t, data + at, e - at, false, special, &ids, &cap, &n);
            if (st != LOOM_OK) { fprintf(stderr, "loom tokenize: %s\n", loom_status_name(st)); rc = 1; goto done; }
            for (int64_t i = 0; i < n; i++) printf(" %d", ids[i]);
            putchar('\n');
            at = e + sl;
        }
        goto done;
    }
    const char *s = text ? text : data;
    size_t sn = text ? strlen(text) : dlen;
    st = tokenize_all(t, s, sn, bos, special, &ids, &cap, &n);
    if (st != LOOM_OK) { fprintf(stderr, "loom tokenize: %s\n", loom_status_name(st)); rc = 1; goto done; }
    if (pieces) {
        for (int64_t i = 0; i < n; i++) print_piece(t, ids[i]);
    } else {
        for (int64_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
        putchar('\n');
    }
done:
    if (fflush(stdout) != 0) rc = 1;
    free(data);
    free(ids);
    loom_tokenizer_free(t);
    return rc;
}
