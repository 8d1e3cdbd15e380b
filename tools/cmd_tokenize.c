/* loom tokenize [MODEL.gguf] TEXT [--no-bos] [--no-special] [--pieces]
 * loom tokenize [MODEL.gguf] --file FILE [...]
 * loom tokenize [MODEL.gguf] --vectors FILE.inp [--bos] [--no-special]
 * loom tokenize [MODEL.gguf] --detokenize "ID ID ..." [--special]
 *
 * Prints the token ids of TEXT, space separated on one line. BOS/EOS (or
 * [CLS]/[SEP]) are added as the vocabulary says unless --no-bos. Special-token
 * texts in the input (<|im_start|>, <s>, ...) are recognised as their tokens
 * unless --no-special (then only USER_DEFINED tokens are, as llama.cpp does).
 * --pieces prints one "id<TAB>piece" line per token instead (control tokens
 * show their vocabulary text).
 * --vectors reads test strings in llama.cpp's .inp format (each string is
 * followed by "\n__ggml_vocab_test__\n"; text after the last separator is a
 * string too) and prints one line of ids per string, without BOS unless
 * --bos, in the format of the llama.cpp .out files (" id id ..."), so that the
 * output compares equal to a .out file line by line (ignoring leading spaces).
 * The published vectors are made without special-token parsing: pass
 * --no-special to reproduce them.
 * --detokenize prints the text of the given ids (control tokens only with
 * --special).
 * The model defaults to the bundled one when the first argument does not end
 * in ".gguf". Errors: exit status 1 with one line on stderr; usage errors: 2. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "loom_gguf.h"
#include "loom_tokenizer.h"

static void usage(FILE *f) {
    fprintf(f, "usage: loom tokenize [MODEL.gguf] (TEXT | --file FILE | --vectors FILE.inp | --detokenize IDS)\n"
               "                     [--no-bos | --bos] [--no-special | --special] [--pieces]\n");
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
                                int32_t **ids, int32_t *cap, int32_t *count, loom_error *err) {
    loom_status st = loom_tokenize(t, s, n, bos, special, *ids, *cap, count, err);
    if (st != LOOM_ERR_RANGE || *count <= *cap) return st;
    loom_error_clear(err);
    int32_t *ni = realloc(*ids, (size_t)*count * sizeof(int32_t));
    if (!ni) return loom_error_set(err, LOOM_ERR_NOMEM, "out of memory");
    *ids = ni;
    *cap = *count;
    return loom_tokenize(t, s, n, bos, special, *ids, *cap, count, err);
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

static int detokenize(const loom_tokenizer *t, const char *list, bool special) {
    size_t cap = 64, n = 0;
    int32_t *ids = malloc(cap * sizeof(int32_t));
    if (!ids) return 1;
    for (const char *p = list; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) {
            if (*p == ' ' || *p == ',' || *p == '[' || *p == ']' || *p == '\n' || *p == '\t') { p++; continue; }
            fprintf(stderr, "loom tokenize: --detokenize: not a token id at \"%.20s\"\n", p);
            free(ids);
            return 2;
        }
        if (v < 0 || v >= loom_tokenizer_n_vocab(t)) {
            fprintf(stderr, "loom tokenize: --detokenize: id %ld outside the vocabulary (0..%d)\n", v,
                    (int)loom_tokenizer_n_vocab(t) - 1);
            free(ids);
            return 1;
        }
        if (n == cap) {
            if (cap > (size_t)INT32_MAX / 2) { free(ids); return 1; }
            int32_t *ni = realloc(ids, cap * 2 * sizeof(int32_t));
            if (!ni) { free(ids); return 1; }
            ids = ni;
            cap *= 2;
        }
        ids[n++] = (int32_t)v;
        p = end;
    }
    size_t len = 0;
    unsigned flags = special ? LOOM_DETOK_SPECIAL : 0;
    loom_detokenize(t, ids, (int32_t)n, flags, NULL, 0, &len);
    char *buf = malloc(len + 1);
    int rc = 0;
    if (!buf || loom_detokenize(t, ids, (int32_t)n, flags, buf, len + 1, &len) != LOOM_OK) rc = 1;
    else {
        fwrite(buf, 1, len, stdout);
        putchar('\n');
    }
    free(buf);
    free(ids);
    return rc;
}

int loom_cmd_tokenize(int argc, char **argv) {
    const char *model = NULL, *text = NULL, *file = NULL, *vectors = NULL, *detok = NULL;
    int bos = -1, special_opt = -1;
    bool pieces = false;
    int npos = 0;
    const char *pos[2] = {NULL, NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--no-bos")) bos = 0;
        else if (!strcmp(a, "--bos")) bos = 1;
        else if (!strcmp(a, "--no-special")) special_opt = 0;
        else if (!strcmp(a, "--special")) special_opt = 1;
        else if (!strcmp(a, "--pieces")) pieces = true;
        else if ((!strcmp(a, "--file") || !strcmp(a, "-f")) && i + 1 < argc) file = argv[++i];
        else if (!strcmp(a, "--vectors") && i + 1 < argc) vectors = argv[++i];
        else if (!strcmp(a, "--detokenize") && i + 1 < argc) detok = argv[++i];
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
    if ((text != NULL) + (file != NULL) + (vectors != NULL) + (detok != NULL) != 1) { usage(stderr); return 2; }

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
        fprintf(stderr, "loom tokenize: %s\n", err.msg);
        return 1;
    }
    bool special = special_opt != 0; /* tokenizing parses special tokens unless --no-special */
    if (detok) {
        int rc = detokenize(t, detok, special_opt == 1); /* rendered only with --special */
        if (fflush(stdout) != 0) rc = 1;
        loom_tokenizer_free(t);
        return rc;
    }
    int rc = 0;
    int32_t cap = 256, n = 0;
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
            /* find the next separator; text after the last one is a string too (as llama.cpp reads .inp files) */
            size_t e = at;
            while (e + sl <= dlen && memcmp(data + e, sep, sl) != 0) e++;
            if (e + sl > dlen) e = dlen;
            st = tokenize_all(t, data + at, e - at, bos == 1, special, &ids, &cap, &n, &err);
            if (st != LOOM_OK) { fprintf(stderr, "loom tokenize: %s\n", err.msg); rc = 1; goto done; }
            for (int32_t i = 0; i < n; i++) printf(" %d", ids[i]);
            putchar('\n');
            at = e + sl;
        }
        goto done;
    }
    const char *s = text ? text : data;
    size_t sn = text ? strlen(text) : dlen;
    st = tokenize_all(t, s, sn, bos != 0, special, &ids, &cap, &n, &err);
    if (st != LOOM_OK) { fprintf(stderr, "loom tokenize: %s\n", err.msg); rc = 1; goto done; }
    if (pieces) {
        for (int32_t i = 0; i < n; i++) print_piece(t, ids[i]);
    } else {
        for (int32_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
        putchar('\n');
    }
done: /* stdout is checked by the dispatcher (cli_close_stdout) */
    free(data);
    free(ids);
    loom_tokenizer_free(t);
    return rc;
}
