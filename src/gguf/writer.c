/* GGUF writer: collects KVs and tensors, then serialises a v3 little-endian file. */
#include "gguf/file_out.h"
#include "gguf_internal.h"
#include "quant/alloc.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

/* Growable byte buffer; `oom` sticks once an allocation failed. */
typedef struct wbuf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} wbuf;

static void wb_bytes(wbuf *b, const void *src, size_t n) {
    if (b->oom || n == 0) return;
    if (n > SIZE_MAX - b->n) { b->oom = true; return; }
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->n + n) {
            if (nc > SIZE_MAX / 2) { nc = b->n + n; break; }
            nc *= 2;
        }
        uint8_t *np = loom_realloc(b->p, nc);
        if (!np) { b->oom = true; return; }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void wb_u32(wbuf *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    wb_bytes(b, x, 4);
}

static void wb_u64(wbuf *b, uint64_t v) {
    wb_u32(b, (uint32_t)v);
    wb_u32(b, (uint32_t)(v >> 32));
}

static void wb_str(wbuf *b, const char *s, uint64_t len) {
    wb_u64(b, len);
    if (len > SIZE_MAX) { b->oom = true; return; }
    wb_bytes(b, s, (size_t)len);
}

typedef struct wkv {
    char *key;
    uint32_t type;
    wbuf val; /* serialised value (everything after the type field) */
} wkv;

typedef struct wtensor {
    char name[LOOM_GGUF_MAX_NAME];
    loom_type type;
    uint32_t n_dims;
    int64_t ne[LOOM_GGUF_MAX_DIMS];
    uint8_t *data;
    uint64_t size;
} wtensor;

struct loom_gguf_writer {
    wkv *kv;
    size_t n_kv, cap_kv;
    wtensor *t;
    size_t n_t, cap_t;
    uint32_t alignment;
};

loom_status loom_gguf_writer_new(loom_gguf_writer **out) {
    if (!out) return LOOM_ERR_INVALID_ARG;
    *out = loom_calloc(1, sizeof **out);
    if (!*out) return LOOM_ERR_NOMEM;
    (*out)->alignment = LOOM_GGUF_DEFAULT_ALIGNMENT;
    return LOOM_OK;
}

void loom_gguf_writer_free(loom_gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) {
        loom_free(w->kv[i].key);
        loom_free(w->kv[i].val.p);
    }
    for (size_t i = 0; i < w->n_t; i++) loom_free(w->t[i].data);
    loom_free(w->kv);
    loom_free(w->t);
    loom_free(w);
}

static bool valid_alignment(uint32_t a) {
    return a != 0 && (a & (a - 1)) == 0 && a <= (1u << 30);
}

loom_status loom_gguf_writer_set_alignment(loom_gguf_writer *w, uint32_t alignment) {
    if (!w || !valid_alignment(alignment)) return LOOM_ERR_INVALID_ARG;
    w->alignment = alignment;
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kv[i].key, "general.alignment") == 0) {
            uint8_t *p = w->kv[i].val.p;
            p[0] = (uint8_t)alignment;
            p[1] = (uint8_t)(alignment >> 8);
            p[2] = (uint8_t)(alignment >> 16);
            p[3] = (uint8_t)(alignment >> 24);
        }
    return LOOM_OK;
}

/* Start a KV: validates the key, returns the new entry (value still empty). */
static loom_status kv_begin(loom_gguf_writer *w, const char *key, uint32_t type, wkv **out) {
    if (!w || !key) return LOOM_ERR_INVALID_ARG;
    size_t kl = strlen(key);
    if (kl == 0 || kl > 65535) return LOOM_ERR_INVALID_ARG;
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kv[i].key, key) == 0) return LOOM_ERR_INVALID_ARG;
    if (w->n_kv == w->cap_kv) {
        size_t nc = w->cap_kv ? w->cap_kv * 2 : 16;
        wkv *nk = loom_realloc(w->kv, nc * sizeof *nk);
        if (!nk) return LOOM_ERR_NOMEM;
        w->kv = nk;
        w->cap_kv = nc;
    }
    wkv *kv = &w->kv[w->n_kv];
    memset(kv, 0, sizeof *kv);
    kv->key = loom_malloc(kl + 1);
    if (!kv->key) return LOOM_ERR_NOMEM;
    memcpy(kv->key, key, kl + 1);
    kv->type = type;
    *out = kv;
    return LOOM_OK;
}

/* Commit the entry started by kv_begin (or drop it on allocation failure). */
static loom_status kv_end(loom_gguf_writer *w, wkv *kv) {
    if (kv->val.oom) {
        loom_free(kv->key);
        loom_free(kv->val.p);
        return LOOM_ERR_NOMEM;
    }
    w->n_kv++;
    return LOOM_OK;
}

static loom_status add_scalar(loom_gguf_writer *w, const char *key, uint32_t type, uint64_t bits) {
    if (key && strcmp(key, "general.alignment") == 0) {
        if (type != LOOM_GGUF_U32 || !valid_alignment((uint32_t)bits)) return LOOM_ERR_INVALID_ARG;
    }
    wkv *kv;
    loom_status s = kv_begin(w, key, type, &kv);
    if (s != LOOM_OK) return s;
    uint64_t n = gguf_vtype_size(type);
    uint8_t x[8];
    for (uint64_t i = 0; i < n; i++) x[i] = (uint8_t)(bits >> (8 * i));
    wb_bytes(&kv->val, x, (size_t)n);
    s = kv_end(w, kv);
    if (s == LOOM_OK && type == LOOM_GGUF_U32 && strcmp(key, "general.alignment") == 0)
        w->alignment = (uint32_t)bits;
    return s;
}

loom_status loom_gguf_writer_add_u8(loom_gguf_writer *w, const char *key, uint8_t v) {
    return add_scalar(w, key, LOOM_GGUF_U8, v);
}
loom_status loom_gguf_writer_add_i8(loom_gguf_writer *w, const char *key, int8_t v) {
    return add_scalar(w, key, LOOM_GGUF_I8, (uint8_t)v);
}
loom_status loom_gguf_writer_add_u16(loom_gguf_writer *w, const char *key, uint16_t v) {
    return add_scalar(w, key, LOOM_GGUF_U16, v);
}
loom_status loom_gguf_writer_add_i16(loom_gguf_writer *w, const char *key, int16_t v) {
    return add_scalar(w, key, LOOM_GGUF_I16, (uint16_t)v);
}
loom_status loom_gguf_writer_add_u32(loom_gguf_writer *w, const char *key, uint32_t v) {
    return add_scalar(w, key, LOOM_GGUF_U32, v);
}
loom_status loom_gguf_writer_add_i32(loom_gguf_writer *w, const char *key, int32_t v) {
    return add_scalar(w, key, LOOM_GGUF_I32, (uint32_t)v);
}
loom_status loom_gguf_writer_add_u64(loom_gguf_writer *w, const char *key, uint64_t v) {
    return add_scalar(w, key, LOOM_GGUF_U64, v);
}
loom_status loom_gguf_writer_add_i64(loom_gguf_writer *w, const char *key, int64_t v) {
    return add_scalar(w, key, LOOM_GGUF_I64, (uint64_t)v);
}
loom_status loom_gguf_writer_add_f32(loom_gguf_writer *w, const char *key, float v) {
    uint32_t u;
    memcpy(&u, &v, 4);
    return add_scalar(w, key, LOOM_GGUF_F32, u);
}
loom_status loom_gguf_writer_add_f64(loom_gguf_writer *w, const char *key, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    return add_scalar(w, key, LOOM_GGUF_F64, u);
}
loom_status loom_gguf_writer_add_bool(loom_gguf_writer *w, const char *key, bool v) {
    return add_scalar(w, key, LOOM_GGUF_BOOL, v ? 1 : 0);
}

loom_status loom_gguf_writer_add_str(loom_gguf_writer *w, const char *key, const char *v, uint64_t len) {
    if (!v && len > 0) return LOOM_ERR_INVALID_ARG;
    if (key && strcmp(key, "general.alignment") == 0) return LOOM_ERR_INVALID_ARG;
    wkv *kv;
    loom_status s = kv_begin(w, key, LOOM_GGUF_STRING, &kv);
    if (s != LOOM_OK) return s;
    wb_str(&kv->val, v, len);
    return kv_end(w, kv);
}

/* Serialise n fixed-size elements from little-endian-agnostic host memory. */
static void put_elems(wbuf *b, uint32_t et, const void *data, uint64_t n) {
    uint64_t es = gguf_vtype_size(et);
    const uint8_t *p = data;
    for (uint64_t i = 0; i < n && !b->oom; i++) {
        uint64_t bits = 0;
        switch (es) {
        case 1: bits = p[i]; break;
        case 2: { uint16_t v; memcpy(&v, p + i * 2, 2); bits = v; break; }
        case 4: { uint32_t v; memcpy(&v, p + i * 4, 4); bits = v; break; }
        default: memcpy(&bits, p + i * 8, 8); break;
        }
        uint8_t x[8];
        for (uint64_t k = 0; k < es; k++) x[k] = (uint8_t)(bits >> (8 * k));
        wb_bytes(b, x, (size_t)es);
    }
}

loom_status loom_gguf_writer_add_arr(loom_gguf_writer *w, const char *key, loom_gguf_vtype elem_type,
                                     const void *data, uint64_t n) {
    uint64_t es = gguf_vtype_size((uint32_t)elem_type);
    if (es == 0 || (!data && n > 0)) return LOOM_ERR_INVALID_ARG;
    if (key && strcmp(key, "general.alignment") == 0) return LOOM_ERR_INVALID_ARG;
    if (n > SIZE_MAX / es) return LOOM_ERR_NOMEM;
    wkv *kv;
    loom_status s = kv_begin(w, key, LOOM_GGUF_ARRAY, &kv);
    if (s != LOOM_OK) return s;
    wb_u32(&kv->val, (uint32_t)elem_type);
    wb_u64(&kv->val, n);
    put_elems(&kv->val, (uint32_t)elem_type, data, n);
    return kv_end(w, kv);
}

loom_status loom_gguf_writer_add_arr_str(loom_gguf_writer *w, const char *key, const char *const *strs,
                                         const uint64_t *lens, uint64_t n) {
    if (!strs && n > 0) return LOOM_ERR_INVALID_ARG;
    for (uint64_t i = 0; i < n; i++)
        if (!strs[i] && (!lens || lens[i] > 0)) return LOOM_ERR_INVALID_ARG;
    if (key && strcmp(key, "general.alignment") == 0) return LOOM_ERR_INVALID_ARG;
    wkv *kv;
    loom_status s = kv_begin(w, key, LOOM_GGUF_ARRAY, &kv);
    if (s != LOOM_OK) return s;
    wb_u32(&kv->val, LOOM_GGUF_STRING);
    wb_u64(&kv->val, n);
    for (uint64_t i = 0; i < n && !kv->val.oom; i++)
        wb_str(&kv->val, strs[i], lens ? lens[i] : (strs[i] ? strlen(strs[i]) : 0));
    return kv_end(w, kv);
}

loom_status loom_gguf_writer_copy_kv(loom_gguf_writer *w, const loom_gguf *src, int64_t i) {
    if (!w || !src) return LOOM_ERR_INVALID_ARG;
    if (i < 0 || i >= src->n_kv) return LOOM_ERR_RANGE;
    const gguf_kv *k = &src->kv[i];
    const uint8_t *p = src->base + k->val_off;
    if (k->type == LOOM_GGUF_STRING) return loom_gguf_writer_add_str(w, k->key, (const char *)p, k->str_len);
    if (k->type != LOOM_GGUF_ARRAY) {
        uint64_t bits = 0, n = gguf_vtype_size(k->type);
        for (uint64_t b = 0; b < n; b++) bits |= (uint64_t)p[b] << (8 * b);
        return add_scalar(w, k->key, k->type, bits);
    }
    if (strcmp(k->key, "general.alignment") == 0) return LOOM_ERR_INVALID_ARG;
    wkv *kv;
    loom_status s = kv_begin(w, k->key, LOOM_GGUF_ARRAY, &kv);
    if (s != LOOM_OK) return s;
    wb_u32(&kv->val, k->elem_type);
    wb_u64(&kv->val, k->len);
    if (k->elem_type == LOOM_GGUF_STRING) {
        for (uint64_t j = 0; j < k->len && !kv->val.oom; j++) {
            const uint8_t *e = src->base + k->str_offs[j];
            wb_str(&kv->val, (const char *)e + 8, gguf_ld64(e));
        }
    } else {
        /* Already little-endian in the source image: copy raw. */
        wb_bytes(&kv->val, p, (size_t)(k->len * gguf_vtype_size(k->elem_type)));
    }
    return kv_end(w, kv);
}

loom_status loom_gguf_writer_add_tensor(loom_gguf_writer *w, const char *name, loom_type type,
                                        uint32_t n_dims, const int64_t *ne, const void *data) {
    if (!w || !name || !ne || n_dims < 1 || n_dims > LOOM_GGUF_MAX_DIMS) return LOOM_ERR_INVALID_ARG;
    size_t nl = strlen(name);
    if (nl == 0 || nl >= LOOM_GGUF_MAX_NAME) return LOOM_ERR_INVALID_ARG;
    const loom_type_info *ti = loom_type_get((uint32_t)type);
    if (!ti) return LOOM_ERR_TYPE;
    uint64_t nelem = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] < 1) return LOOM_ERR_SHAPE;
        if (nelem > (uint64_t)INT64_MAX / (uint64_t)ne[d]) return LOOM_ERR_RANGE;
        nelem *= (uint64_t)ne[d];
    }
    size_t row;
    loom_status s = loom_type_row_bytes(type, ne[0], &row);
    if (s == LOOM_ERR_FORMAT) return LOOM_ERR_SHAPE;
    if (s != LOOM_OK) return s;
    uint64_t size = row;
    for (uint32_t d = 1; d < n_dims; d++) {
        if (size > UINT64_MAX / (uint64_t)ne[d]) return LOOM_ERR_RANGE;
        size *= (uint64_t)ne[d];
    }
    if (size > SIZE_MAX) return LOOM_ERR_NOMEM;
    if (!data) return LOOM_ERR_INVALID_ARG;
    for (size_t i = 0; i < w->n_t; i++)
        if (strcmp(w->t[i].name, name) == 0) return LOOM_ERR_INVALID_ARG;
    if (w->n_t == w->cap_t) {
        size_t nc = w->cap_t ? w->cap_t * 2 : 16;
        wtensor *nt = loom_realloc(w->t, nc * sizeof *nt);
        if (!nt) return LOOM_ERR_NOMEM;
        w->t = nt;
        w->cap_t = nc;
    }
    wtensor *t = &w->t[w->n_t];
    memset(t, 0, sizeof *t);
    t->data = loom_malloc(size ? (size_t)size : 1);
    if (!t->data) return LOOM_ERR_NOMEM;
    memcpy(t->data, data, (size_t)size);
    memcpy(t->name, name, nl + 1);
    t->type = type;
    t->n_dims = n_dims;
    for (int d = 0; d < LOOM_GGUF_MAX_DIMS; d++) t->ne[d] = (uint32_t)d < n_dims ? ne[d] : 1;
    t->size = size;
    w->n_t++;
    return LOOM_OK;
}

/* ---- serialisation */

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* Header, KVs and tensor infos; offsets[i] get each tensor's data offset. */
static loom_status build_header(loom_gguf_writer *w, wbuf *h, uint64_t *data_size, loom_error *err) {
    bool have_align_kv = false;
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kv[i].key, "general.alignment") == 0) have_align_kv = true;
    bool extra = !have_align_kv && w->alignment != LOOM_GGUF_DEFAULT_ALIGNMENT;
    wb_bytes(h, "GGUF", 4);
    wb_u32(h, 3);
    wb_u64(h, w->n_t);
    wb_u64(h, w->n_kv + (extra ? 1 : 0));
    for (size_t i = 0; i < w->n_kv; i++) {
        wb_str(h, w->kv[i].key, strlen(w->kv[i].key));
        wb_u32(h, w->kv[i].type);
        wb_bytes(h, w->kv[i].val.p, w->kv[i].val.n);
    }
    if (extra) {
        wb_str(h, "general.alignment", strlen("general.alignment"));
        wb_u32(h, LOOM_GGUF_U32);
        wb_u32(h, w->alignment);
    }
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        wb_str(h, t->name, strlen(t->name));
        wb_u32(h, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) wb_u64(h, (uint64_t)t->ne[d]);
        wb_u32(h, (uint32_t)t->type);
        wb_u64(h, off);
        if (t->size > UINT64_MAX - off - w->alignment)
            return loom_error_set(err, LOOM_ERR_RANGE, "gguf writer: tensor data too large");
        off = align_up(off + t->size, w->alignment);
    }
    if (h->oom) return loom_error_set(err, LOOM_ERR_NOMEM, "gguf writer: out of memory");
    /* pad the header region to the alignment */
    uint64_t pad = align_up(h->n, w->alignment) - h->n;
    static const uint8_t zeros[64] = {0};
    while (pad > 0) {
        size_t k = pad > sizeof zeros ? sizeof zeros : (size_t)pad;
        wb_bytes(h, zeros, k);
        pad -= k;
    }
    if (h->oom) return loom_error_set(err, LOOM_ERR_NOMEM, "gguf writer: out of memory");
    *data_size = off;
    return LOOM_OK;
}

loom_status loom_gguf_writer_write_memory(loom_gguf_writer *w, void **out_data, size_t *out_size,
                                          loom_error *err) {
    if (!w || !out_data || !out_size)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "gguf writer: NULL argument");
    wbuf h = {0};
    uint64_t dsize;
    loom_status s = build_header(w, &h, &dsize, err);
    if (s != LOOM_OK) {
        loom_free(h.p);
        return s;
    }
    if (dsize > SIZE_MAX - h.n) {
        loom_free(h.p);
        return loom_error_set(err, LOOM_ERR_NOMEM, "gguf writer: image too large for memory");
    }
    size_t total = h.n + (size_t)dsize;
    uint8_t *buf = loom_calloc(1, total ? total : 1);
    if (!buf) {
        loom_free(h.p);
        return loom_error_set(err, LOOM_ERR_NOMEM, "gguf writer: out of memory (%zu bytes)", total);
    }
    memcpy(buf, h.p, h.n);
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        memcpy(buf + h.n + off, w->t[i].data, (size_t)w->t[i].size);
        off = align_up(off + w->t[i].size, w->alignment);
    }
    loom_free(h.p);
    *out_data = buf;
    *out_size = total;
    return LOOM_OK;
}

loom_status loom_gguf_writer_write_file(loom_gguf_writer *w, const char *path, loom_error *err) {
    if (!w || !path) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "gguf writer: NULL argument");
    wbuf h = {0};
    uint64_t dsize;
    loom_status s = build_header(w, &h, &dsize, err);
    if (s != LOOM_OK) {
        loom_free(h.p);
        return s;
    }
    loom_file_out fo;
    s = loom_file_out_open(&fo, path, "gguf writer", err);
    if (s != LOOM_OK) {
        loom_free(h.p);
        return s;
    }
    FILE *f = fo.f;
    bool ok = fwrite(h.p, 1, h.n, f) == h.n;
    static const uint8_t zeros[256] = {0};
    for (size_t i = 0; i < w->n_t && ok; i++) {
        const wtensor *t = &w->t[i];
        ok = fwrite(t->data, 1, (size_t)t->size, f) == t->size;
        uint64_t pad = align_up(t->size, w->alignment) - t->size;
        while (ok && pad > 0) {
            size_t k = pad > sizeof zeros ? sizeof zeros : (size_t)pad;
            ok = fwrite(zeros, 1, k, f) == k;
            pad -= k;
        }
    }
    loom_free(h.p);
    if (!ok) {
        int e = errno;
        loom_file_out_abort(&fo);
        return loom_error_set(err, LOOM_ERR_IO, "writing '%s' failed: %s", path, strerror(e));
    }
    return loom_file_out_commit(&fo, "gguf writer", err);
    return LOOM_OK;
}
