/*
 * gguf_internal.h (internal) - the parsed representation of a GGUF file shared by
 * reader.c, getters.c and writer.c. Not part of the public API.
 */
#ifndef LOOM_GGUF_INTERNAL_H
#define LOOM_GGUF_INTERNAL_H

#include "loom_gguf.h"

#include <string.h>

#define GGUF_MAGIC_LE 0x46554747u /* "GGUF" read as a little-endian u32 */

/* One KV entry. All *_off fields are absolute byte offsets into the image (g->base). */
typedef struct gguf_kv {
    char *key;           /* NUL-terminated, malloc'ed */
    uint64_t entry_off;  /* where the KV entry starts in the file */
    uint32_t type;       /* loom_gguf_vtype */
    uint32_t elem_type;  /* arrays: element type; scalars: == type */
    uint64_t len;        /* arrays: element count; scalars: 1 */
    uint64_t val_off;    /* scalar: value; string: its bytes; array: first element */
    uint64_t str_len;    /* string scalar: byte length */
    uint64_t *str_offs;  /* string arrays: offset of each element's u64 length prefix */
} gguf_kv;

/* Open-addressing set of indices keyed by name (used for duplicates and lookups). */
typedef struct gguf_hset {
    int64_t *slots; /* index + 1, 0 = empty */
    uint64_t cap;   /* power of two or 0 */
    uint64_t n;
} gguf_hset;

struct loom_gguf {
    const uint8_t *base;   /* image: mapping, caller memory, or malloc'ed header copy */
    uint64_t base_len;     /* bytes valid at base */
    uint64_t file_size;
    void *map;             /* mmap'ed region (or NULL) */
    uint8_t *owned;        /* malloc'ed header copy in no_mmap mode (or NULL) */
    int fd;                /* -1 for memory images */
    bool data_mapped;      /* tensor data addressable at base + file_offset */
    char *path;
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;
    int64_t n_kv;
    gguf_kv *kv;
    int64_t n_tensors;
    loom_gguf_tensor_info *tensors;
    uint64_t *tensor_info_off; /* where each tensor info starts in the file */
    gguf_hset kv_set, tensor_set;
};

/* Little-endian loads from possibly unaligned memory. */
static inline uint16_t gguf_ld16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t gguf_ld32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t gguf_ld64(const uint8_t *p) {
    return (uint64_t)gguf_ld32(p) | ((uint64_t)gguf_ld32(p + 4) << 32);
}

/* Bytes of one element of a fixed-size value type; 0 for STRING/ARRAY/unknown. */
static inline uint64_t gguf_vtype_size(uint32_t t) {
    switch (t) {
    case LOOM_GGUF_U8: case LOOM_GGUF_I8: case LOOM_GGUF_BOOL: return 1;
    case LOOM_GGUF_U16: case LOOM_GGUF_I16: return 2;
    case LOOM_GGUF_U32: case LOOM_GGUF_I32: case LOOM_GGUF_F32: return 4;
    case LOOM_GGUF_U64: case LOOM_GGUF_I64: case LOOM_GGUF_F64: return 8;
    default: return 0;
    }
}

uint64_t gguf_hash(const char *s);
/* Find name in set; name_of(ctx, i) gives the name of entry i. Returns index or -1. */
int64_t gguf_hset_find(const gguf_hset *h, const char *name,
                       const char *(*name_of)(const void *, int64_t), const void *ctx);
/* Insert index i (name must not be present). Returns false on allocation failure. */
bool gguf_hset_insert(gguf_hset *h, int64_t i, const char *(*name_of)(const void *, int64_t),
                      const void *ctx);
void gguf_hset_free(gguf_hset *h);

const char *gguf_kv_name_of(const void *g, int64_t i);
const char *gguf_tensor_name_of(const void *g, int64_t i);

#endif
