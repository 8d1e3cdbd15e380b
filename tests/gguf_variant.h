/* gguf_variant.h - a copy of a GGUF file with one change, for the failure-path tests
 * of model loaders: a key or tensor left out, one or two keys set to a u32, a key set to a
 * string, or a key set to a list of booleans or of u32 (every other key and tensor copied as it is, through Loom's GGUF
 * reader and writer). */
#ifndef LOOM_TEST_GGUF_VARIANT_H
#define LOOM_TEST_GGUF_VARIANT_H

#include <stdlib.h>
#include <string.h>

#include "loom_gguf.h"

typedef struct gguf_change {
    const char *drop;       /* key or tensor to leave out (NULL: none) */
    const char *u32_key;    /* key to set (replaced or added) to u32_val (NULL: none) */
    uint32_t u32_val;
    const char *u32_key2;   /* a second such key (NULL: none) */
    uint32_t u32_val2;
    const char *str_key;    /* key to set to the string str_val (NULL: none) */
    const char *str_val;
    const char *flags_key;  /* key to set to the booleans flags[0..n_flags) (NULL: none) */
    const uint8_t *flags;
    int n_flags;
    const char *u32s_key;   /* key to set to the u32 array u32s[0..n_u32s) (NULL: none) */
    const uint32_t *u32s;
    int n_u32s;
} gguf_change;

/* Writes src with change c to dst; false on any error. */
static inline bool gguf_variant(const char *src, const char *dst, const gguf_change *c) {
    loom_gguf *g = NULL;
    loom_gguf_writer *w = NULL;
    loom_error err = {0};
    bool ok = loom_gguf_open(src, NULL, &g, &err) == LOOM_OK && loom_gguf_writer_new(&w) == LOOM_OK;
    for (int64_t i = 0; ok && i < loom_gguf_kv_count(g); i++) {
        const char *k = loom_gguf_kv_key(g, i);
        if ((c->drop && !strcmp(k, c->drop)) || (c->u32_key && !strcmp(k, c->u32_key)) ||
            (c->u32_key2 && !strcmp(k, c->u32_key2)) || (c->flags_key && !strcmp(k, c->flags_key)) ||
            (c->str_key && !strcmp(k, c->str_key)) || (c->u32s_key && !strcmp(k, c->u32s_key)))
            continue;
        ok = loom_gguf_writer_copy_kv(w, g, i) == LOOM_OK;
    }
    if (ok && c->u32_key) ok = loom_gguf_writer_add_u32(w, c->u32_key, c->u32_val) == LOOM_OK;
    if (ok && c->u32_key2) ok = loom_gguf_writer_add_u32(w, c->u32_key2, c->u32_val2) == LOOM_OK;
    if (ok && c->u32s_key)
        ok = loom_gguf_writer_add_arr(w, c->u32s_key, LOOM_GGUF_U32, c->u32s, (uint64_t)c->n_u32s) == LOOM_OK;
    if (ok && c->str_key) ok = loom_gguf_writer_add_str(w, c->str_key, c->str_val, strlen(c->str_val)) == LOOM_OK;
    if (ok && c->flags_key)
        ok = loom_gguf_writer_add_arr(w, c->flags_key, LOOM_GGUF_BOOL, c->flags, (uint64_t)c->n_flags) == LOOM_OK;
    for (int64_t i = 0; ok && i < loom_gguf_tensor_count(g); i++) {
        const loom_gguf_tensor_info *t = loom_gguf_tensor(g, i);
        if (c->drop && !strcmp(t->name, c->drop)) continue;
        void *data = malloc(t->size ? t->size : 1);
        ok = data && loom_gguf_read_tensor(g, i, 0, data, t->size, &err) == LOOM_OK &&
             loom_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, data) == LOOM_OK;
        free(data);
    }
    if (ok) ok = loom_gguf_writer_write_file(w, dst, &err) == LOOM_OK;
    loom_gguf_writer_free(w);
    loom_gguf_close(g);
    return ok;
}

#endif
