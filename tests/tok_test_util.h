/* Helpers shared by the tokenizer tests: locating the vocabularies (raw in
 * tests/data/vocab, or unpacked by CMake into <build>/vocab), deriving a
 * vocabulary with another tokenizer.ggml.pre, reading .inp/.out vectors. */
#ifndef LOOM_TOK_TEST_UTIL_H
#define LOOM_TOK_TEST_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom_gguf.h"
#include "loom_tokenizer.h"
#include "test_util.h"

static inline char *tt_read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) != 0) { fclose(f); return NULL; }
    long sz = ftell(f);
    if (sz < 0 || fseek(f, 0, SEEK_SET) != 0) { fclose(f); return NULL; }
    char *b = malloc((size_t)sz + 1);
    if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) { free(b); b = NULL; }
    fclose(f);
    if (b) { b[sz] = 0; *n = (size_t)sz; }
    return b;
}

/* Path of tests/data/vocab/<file>, or of the copy CMake unpacked; NULL if neither exists. */
static inline const char *tt_vocab_path(const char *file) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/tests/data/vocab/%s", LOOM_SOURCE_DIR, file);
    if (access(buf, R_OK) == 0) return buf;
#ifdef LOOM_VOCAB_DIR
    snprintf(buf, sizeof buf, "%s/%s", LOOM_VOCAB_DIR, file);
    if (access(buf, R_OK) == 0) return buf;
#endif
    return NULL;
}

/* GGUF image of `base` with tokenizer.ggml.pre (and optionally .model,
 * general.name/architecture) replaced. Caller frees *data with free(). */
static inline loom_status tt_derive(const char *base_path, const char *model, const char *pre, void **data,
                                    size_t *size) {
    loom_error err = {0};
    loom_gguf *g = NULL;
    loom_status st = loom_gguf_open(base_path, NULL, &g, &err);
    if (st != LOOM_OK) return st;
    loom_gguf_writer *w = NULL;
    if ((st = loom_gguf_writer_new(&w)) != LOOM_OK) { loom_gguf_close(g); return st; }
    for (int64_t i = 0; i < loom_gguf_kv_count(g) && st == LOOM_OK; i++) {
        const char *k = loom_gguf_kv_key(g, i);
        if (!strcmp(k, "tokenizer.ggml.pre") || (model && !strcmp(k, "tokenizer.ggml.model"))) continue;
        if (strncmp(k, "tokenizer.", 10) != 0 && strncmp(k, "general.", 8) != 0) continue;
        if (!strcmp(k, "general.alignment")) continue;
        st = loom_gguf_writer_copy_kv(w, g, i);
    }
    if (st == LOOM_OK && model) st = loom_gguf_writer_add_str(w, "tokenizer.ggml.model", model, strlen(model));
    if (st == LOOM_OK && pre) st = loom_gguf_writer_add_str(w, "tokenizer.ggml.pre", pre, strlen(pre));
    if (st == LOOM_OK) st = loom_gguf_writer_write_memory(w, data, size, &err);
    loom_gguf_writer_free(w);
    loom_gguf_close(g);
    return st;
}

/* A vocabulary the tests know: file, or base file + pre override. */
typedef struct tt_vocab {
    const char *name;
    const char *file;
    const char *pre; /* non-NULL: derived from file with this pre-tokenizer */
} tt_vocab;

static const tt_vocab TT_VOCABS[] = {
    {"llama-spm", "ggml-vocab-llama-spm.gguf", NULL},
    {"phi-3", "ggml-vocab-phi-3.gguf", NULL},
    {"baichuan", "ggml-vocab-baichuan.gguf", NULL},
    {"gpt-2", "ggml-vocab-gpt-2.gguf", NULL},
    {"llama-bpe", "ggml-vocab-llama-bpe.gguf", NULL},
    {"qwen2", "ggml-vocab-qwen2.gguf", NULL},
    {"qwen35", "ggml-vocab-qwen2.gguf", "qwen35"},
    {"bert-bge", "ggml-vocab-bert-bge.gguf", NULL},
    {"command-r", "ggml-vocab-command-r.gguf", NULL},
    {"deepseek-llm", "ggml-vocab-deepseek-llm.gguf", NULL},
    {"deepseek-coder", "ggml-vocab-deepseek-coder.gguf", NULL},
    {"falcon", "ggml-vocab-falcon.gguf", NULL},
    {"gemma-4", "ggml-vocab-gemma-4.gguf", NULL},
    {"gpt-neox", "ggml-vocab-gpt-neox.gguf", NULL},
    {"mpt", "ggml-vocab-gpt-neox.gguf", "mpt"},
    {"starcoder", "ggml-vocab-starcoder.gguf", NULL},
    {"refact", "ggml-vocab-refact.gguf", NULL},
    {"nomic-bert-moe", "ggml-vocab-nomic-bert-moe.gguf", NULL},
    {"synth-rwkv", "ggml-vocab-synth-rwkv.gguf", NULL},
    {"synth-plamo2", "ggml-vocab-synth-plamo2.gguf", NULL},
    {"synth-hybriddna", "ggml-vocab-synth-hybriddna.gguf", NULL},
};
#define TT_N_VOCABS (sizeof TT_VOCABS / sizeof TT_VOCABS[0])

/* Open a known vocabulary; NULL (and a CHECK failure) if it cannot be. */
static inline loom_tokenizer *tt_open(const tt_vocab *v) {
    const char *path = tt_vocab_path(v->file);
    CHECK_MSG(path != NULL, "vocabulary %s not found (tests/data/vocab or the build's vocab/)", v->file);
    if (!path) return NULL;
    loom_error err = {0};
    loom_gguf *g = NULL;
    void *img = NULL;
    size_t sz = 0;
    loom_status st;
    if (v->pre) {
        st = tt_derive(path, NULL, v->pre, &img, &sz);
        if (st == LOOM_OK) st = loom_gguf_open_memory(img, sz, &g, &err);
    } else {
        st = loom_gguf_open(path, NULL, &g, &err);
    }
    loom_tokenizer *t = NULL;
    if (st == LOOM_OK) st = loom_tokenizer_new_from_gguf(g, &t, &err);
    CHECK_MSG(st == LOOM_OK, "open %s: %s %s", v->name, loom_status_name(st), err.msg);
    loom_gguf_close(g);
    free(img);
    return t;
}

/* Strings of an .inp file: (start, len) pairs into data. */
typedef struct tt_strings {
    char *data;
    size_t n;
    size_t *off, *len;
} tt_strings;

static inline bool tt_read_inp(const char *path, tt_strings *s) {
    memset(s, 0, sizeof *s);
    size_t dn = 0;
    s->data = tt_read_file(path, &dn);
    if (!s->data) return false;
    static const char SEP[] = "\n__ggml_vocab_test__\n";
    size_t sl = sizeof SEP - 1, cap = 64;
    s->off = malloc(cap * sizeof(size_t));
    s->len = malloc(cap * sizeof(size_t));
    for (size_t at = 0; at < dn;) {
        size_t e = at;
        while (e + sl <= dn && memcmp(s->data + e, SEP, sl) != 0) e++;
        if (e + sl > dn) e = dn;
        if (s->n == cap) {
            cap *= 2;
            s->off = realloc(s->off, cap * sizeof(size_t));
            s->len = realloc(s->len, cap * sizeof(size_t));
        }
        s->off[s->n] = at;
        s->len[s->n] = e - at;
        s->n++;
        at = e + sl;
    }
    return true;
}

static inline void tt_free_strings(tt_strings *s) {
    free(s->data);
    free(s->off);
    free(s->len);
    memset(s, 0, sizeof *s);
}

/* Lines of an .out file parsed as id lists. */
typedef struct tt_ids {
    size_t n;       /* lines */
    int32_t **ids;  /* ids[i][0..cnt[i]) */
    size_t *cnt;
} tt_ids;

static inline bool tt_read_out_text(const char *text, size_t tn, tt_ids *o) {
    memset(o, 0, sizeof *o);
    size_t cap = 64;
    o->ids = malloc(cap * sizeof(int32_t *));
    o->cnt = malloc(cap * sizeof(size_t));
    for (size_t at = 0; at < tn;) {
        size_t e = at;
        while (e < tn && text[e] != '\n') e++;
        if (o->n == cap) {
            cap *= 2;
            o->ids = realloc(o->ids, cap * sizeof(int32_t *));
            o->cnt = realloc(o->cnt, cap * sizeof(size_t));
        }
        int32_t *v = malloc((e - at) / 2 * sizeof(int32_t) + sizeof(int32_t));
        size_t k = 0;
        for (size_t p = at; p < e;) {
            while (p < e && text[p] == ' ') p++;
            if (p >= e) break;
            v[k++] = (int32_t)strtol(text + p, NULL, 10);
            while (p < e && text[p] != ' ') p++;
        }
        o->ids[o->n] = v;
        o->cnt[o->n] = k;
        o->n++;
        at = e + 1;
    }
    return true;
}

static inline bool tt_read_out(const char *path, tt_ids *o) {
    size_t n = 0;
    char *d = tt_read_file(path, &n);
    if (!d) return false;
    tt_read_out_text(d, n, o);
    free(d);
    return true;
}

static inline void tt_free_ids(tt_ids *o) {
    for (size_t i = 0; i < o->n; i++) free(o->ids[i]);
    free(o->ids);
    free(o->cnt);
    memset(o, 0, sizeof *o);
}

/* Tokenize into a malloc'ed array (*n ids). */
static inline int32_t *tt_tokenize(const loom_tokenizer *t, const char *s, size_t len, bool add, bool special,
                                   int32_t *n) {
    *n = 0;
    loom_status st = loom_tokenize(t, s, len, add, special, NULL, 0, n, NULL);
    if (st != LOOM_OK && st != LOOM_ERR_RANGE) return NULL;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)(*n ? *n : 1));
    if (ids && *n && loom_tokenize(t, s, len, add, special, ids, *n, n, NULL) != LOOM_OK) { free(ids); return NULL; }
    return ids;
}

static inline bool tt_same(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
    return na == nb && (na == 0 || memcmp(a, b, na * sizeof(int32_t)) == 0);
}

static inline bool tt_valid_utf8(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        size_t need;
        uint32_t v, min;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) { need = 2; v = c & 0x1F; min = 0x80; }
        else if (c >= 0xE0 && c <= 0xEF) { need = 3; v = c & 0x0F; min = 0x800; }
        else if (c >= 0xF0 && c <= 0xF4) { need = 4; v = c & 0x07; min = 0x10000; }
        else return false;
        if (i + need > n) return false;
        for (size_t k = 1; k < need; k++) {
            if ((u[i + k] & 0xC0) != 0x80) return false;
            v = (v << 6) | (u[i + k] & 0x3F);
        }
        if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return false;
        i += need;
    }
    return true;
}

#endif
