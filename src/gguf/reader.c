/* GGUF reader: open (mmap / pread / memory), validate everything, build the index. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* pread, O_CLOEXEC */
#endif
#include "gguf_internal.h"
#include "quant/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Smallest possible KV entry: key length (8) + 1 key byte + type (4) + 1 value byte. */
#define GGUF_MIN_KV_BYTES 14u
/* Smallest possible tensor info: name length (8) + 1 byte + n_dims (4) + 1 extent (8)
 * + type (4) + offset (8). */
#define GGUF_MIN_TI_BYTES 33u
#define GGUF_MAX_KEY 65535u
#define GGUF_MAX_ALIGNMENT (1u << 30)
#define GGUF_NO_MMAP_FIRST_READ (1u << 20)

enum { P_OK = 0, P_ERR = 1, P_MORE = 2 };

/* ------------------------------------------------------------------ hash set */

uint64_t gguf_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

int64_t gguf_hset_find(const gguf_hset *h, const char *name,
                       const char *(*name_of)(const void *, int64_t), const void *ctx) {
    if (!h->cap || !name) return -1;
    uint64_t m = h->cap - 1, i = gguf_hash(name) & m;
    for (;;) {
        int64_t s = h->slots[i];
        if (s == 0) return -1;
        if (strcmp(name_of(ctx, s - 1), name) == 0) return s - 1;
        i = (i + 1) & m;
    }
}

static bool hset_put(int64_t *slots, uint64_t cap, int64_t i, const char *name) {
    uint64_t m = cap - 1, j = gguf_hash(name) & m;
    while (slots[j] != 0) j = (j + 1) & m;
    slots[j] = i + 1;
    return true;
}

bool gguf_hset_insert(gguf_hset *h, int64_t i, const char *(*name_of)(const void *, int64_t),
                      const void *ctx) {
    if ((h->n + 1) * 2 > h->cap) {
        uint64_t ncap = h->cap ? h->cap * 2 : 16;
        if (ncap > SIZE_MAX / sizeof(int64_t)) return false;
        int64_t *ns = loom_calloc((size_t)ncap, sizeof(int64_t));
        if (!ns) return false;
        for (uint64_t k = 0; k < h->cap; k++)
            if (h->slots[k]) hset_put(ns, ncap, h->slots[k] - 1, name_of(ctx, h->slots[k] - 1));
        loom_free(h->slots);
        h->slots = ns;
        h->cap = ncap;
    }
    hset_put(h->slots, h->cap, i, name_of(ctx, i));
    h->n++;
    return true;
}

void gguf_hset_free(gguf_hset *h) {
    loom_free(h->slots);
    h->slots = NULL;
    h->cap = h->n = 0;
}

const char *gguf_kv_name_of(const void *g, int64_t i) {
    return ((const loom_gguf *)g)->kv[i].key;
}

const char *gguf_tensor_name_of(const void *g, int64_t i) {
    return ((const loom_gguf *)g)->tensors[i].name;
}

/* ------------------------------------------------------------------ cursor */

typedef struct cur {
    const uint8_t *buf;
    uint64_t avail; /* bytes valid at buf */
    uint64_t fsize; /* logical file size */
    uint64_t pos;
    uint64_t need;  /* P_MORE: bytes required at buf */
    loom_error *err;
    char ctx[400];  /* "key 'x' (entry at byte N)" etc., prefixed to messages */
} cur;

static int perr_status(cur *c, loom_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static int perr_status(cur *c, loom_status st, const char *fmt, ...) {
    char msg[LOOM_ERROR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->ctx[0])
        loom_error_set(c->err, st, "%s: %s", c->ctx, msg);
    else
        loom_error_set(c->err, st, "%s", msg);
    return P_ERR;
}
#define perr(c, ...) perr_status((c), LOOM_ERR_FORMAT, __VA_ARGS__)

static uint64_t left(const cur *c) { return c->fsize - c->pos; }

/* Make n bytes at the cursor available; what names the field for the message. */
static int need(cur *c, uint64_t n, const char *what) {
    if (n > left(c))
        return perr(c, "truncated: %s needs %" PRIu64 " bytes at byte %" PRIu64
                       " but the file ends at byte %" PRIu64,
                    what, n, c->pos, c->fsize);
    if (c->pos + n > c->avail) {
        c->need = c->pos + n;
        return P_MORE;
    }
    return P_OK;
}

static int rd32(cur *c, uint32_t *v, const char *what) {
    int r = need(c, 4, what);
    if (r) return r;
    *v = gguf_ld32(c->buf + c->pos);
    c->pos += 4;
    return P_OK;
}

static int rd64(cur *c, uint64_t *v, const char *what) {
    int r = need(c, 8, what);
    if (r) return r;
    *v = gguf_ld64(c->buf + c->pos);
    c->pos += 8;
    return P_OK;
}

static void set_ctx(cur *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void set_ctx(cur *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->ctx, sizeof c->ctx, fmt, ap);
    va_end(ap);
}

/* Printable prefix of a name for messages (names are validated to have no NUL). */
#define NAME_FMT "'%.200s'"

/* ------------------------------------------------------------------ parse */

static void free_parsed(loom_gguf *g) {
    for (int64_t i = 0; i < g->n_kv; i++) {
        loom_free(g->kv[i].key);
        loom_free(g->kv[i].str_offs);
    }
    loom_free(g->kv);
    loom_free(g->tensors);
    loom_free(g->tensor_info_off);
    gguf_hset_free(&g->kv_set);
    gguf_hset_free(&g->tensor_set);
    g->kv = NULL;
    g->tensors = NULL;
    g->tensor_info_off = NULL;
    g->n_kv = g->n_tensors = 0;
}

static int nomem(cur *c, const char *what) {
    return perr_status(c, LOOM_ERR_NOMEM, "out of memory (%s)", what);
}

static int parse_header(cur *c, loom_gguf *g, uint64_t *n_tensors, uint64_t *n_kv) {
    if (c->fsize < 4)
        return perr(c, "file too small for a GGUF header (%" PRIu64 " bytes)", c->fsize);
    int r = need(c, 4, "magic");
    if (r) return r;
    const uint8_t *m = c->buf;
    if (memcmp(m, "GGUF", 4) != 0) {
        if (memcmp(m, "FUGG", 4) == 0)
            return perr(c, "big-endian GGUF (magic bytes 'FUGG') is not supported");
        return perr(c, "bad magic %02x %02x %02x %02x at byte 0: not a GGUF file", m[0], m[1],
                    m[2], m[3]);
    }
    c->pos = 4;
    uint32_t v;
    if ((r = rd32(c, &v, "version"))) return r;
    if (v == 1) return perr(c, "GGUF version 1 is not supported (only versions 2 and 3)");
    if (v != 2 && v != 3) {
        uint32_t sw = (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
        if (sw >= 1 && sw <= 3)
            return perr(c, "version field 0x%08" PRIx32 " is byte-swapped (version %" PRIu32
                           "): big-endian GGUF is not supported",
                        v, sw);
        return perr(c, "unknown GGUF version %" PRIu32 " (0x%08" PRIx32 "); supported: 2, 3", v, v);
    }
    g->version = v;
    if ((r = rd64(c, n_tensors, "tensor count"))) return r;
    if ((r = rd64(c, n_kv, "metadata KV count"))) return r;
    uint64_t bl = left(c);
    if (*n_kv > bl / GGUF_MIN_KV_BYTES)
        return perr(c, "metadata KV count %" PRIu64 " (at byte 16) cannot fit in the %" PRIu64
                       " bytes left in the file",
                    *n_kv, bl);
    if (*n_tensors > bl / GGUF_MIN_TI_BYTES)
        return perr(c, "tensor count %" PRIu64 " (at byte 8) cannot fit in the %" PRIu64
                       " bytes left in the file",
                    *n_tensors, bl);
    if (*n_kv * GGUF_MIN_KV_BYTES + *n_tensors * GGUF_MIN_TI_BYTES > bl)
        return perr(c, "tensor count %" PRIu64 " and KV count %" PRIu64
                       " cannot fit in the %" PRIu64 " bytes left in the file",
                    *n_tensors, *n_kv, bl);
    return P_OK;
}

static int parse_kv(cur *c, loom_gguf *g, int64_t idx) {
    gguf_kv *kv = &g->kv[idx];
    memset(kv, 0, sizeof *kv);
    kv->entry_off = c->pos;
    set_ctx(c, "metadata KV #%" PRId64 " (entry at byte %" PRIu64 ")", idx, kv->entry_off);
    uint64_t klen;
    int r;
    if ((r = rd64(c, &klen, "key length"))) return r;
    if (klen == 0 || klen > GGUF_MAX_KEY)
        return perr(c, "key length %" PRIu64 " out of range 1..%u", klen, GGUF_MAX_KEY);
    if ((r = need(c, klen, "key"))) return r;
    const uint8_t *kp = c->buf + c->pos;
    if (memchr(kp, 0, (size_t)klen)) return perr(c, "key contains a NUL byte");
    kv->key = loom_malloc((size_t)klen + 1);
    if (!kv->key) return nomem(c, "key");
    memcpy(kv->key, kp, (size_t)klen);
    kv->key[klen] = '\0';
    c->pos += klen;
    g->n_kv = idx + 1; /* the key is owned now: free_parsed releases it */
    set_ctx(c, "key " NAME_FMT " (entry at byte %" PRIu64 ")", kv->key, kv->entry_off);

    int64_t dup = gguf_hset_find(&g->kv_set, kv->key, gguf_kv_name_of, g);
    if (dup >= 0)
        return perr(c, "duplicate key (first defined at byte %" PRIu64 ")", g->kv[dup].entry_off);

    uint32_t t;
    if ((r = rd32(c, &t, "value type"))) return r;
    if (t >= LOOM_GGUF_VTYPE_COUNT)
        return perr(c, "unknown value type %" PRIu32 " at byte %" PRIu64, t, c->pos - 4);
    kv->type = kv->elem_type = t;
    kv->len = 1;
    if (t == LOOM_GGUF_STRING) {
        uint64_t sl;
        if ((r = rd64(c, &sl, "string length"))) return r;
        if (sl > left(c))
            return perr(c, "string length %" PRIu64 " at byte %" PRIu64 " exceeds the %" PRIu64
                           " bytes left in the file",
                        sl, c->pos - 8, left(c));
        if ((r = need(c, sl, "string"))) return r;
        kv->val_off = c->pos;
        kv->str_len = sl;
        c->pos += sl;
    } else if (t == LOOM_GGUF_ARRAY) {
        uint32_t et;
        uint64_t n;
        if ((r = rd32(c, &et, "array element type"))) return r;
        if (et == LOOM_GGUF_ARRAY)
            return perr(c, "arrays of arrays are not supported (at byte %" PRIu64 ")", c->pos - 4);
        if (et >= LOOM_GGUF_VTYPE_COUNT)
            return perr(c, "unknown array element type %" PRIu32 " at byte %" PRIu64, et,
                        c->pos - 4);
        if ((r = rd64(c, &n, "array length"))) return r;
        kv->elem_type = et;
        kv->len = n;
        kv->val_off = c->pos;
        if (et == LOOM_GGUF_STRING) {
            if (n > left(c) / 8)
                return perr(c, "string array length %" PRIu64 " at byte %" PRIu64
                               " cannot fit in the %" PRIu64 " bytes left in the file",
                            n, c->pos - 8, left(c));
            if (n > 0) {
                if (n > SIZE_MAX / sizeof(uint64_t)) return nomem(c, "string array index");
                kv->str_offs = loom_malloc((size_t)n * sizeof(uint64_t));
                if (!kv->str_offs) return nomem(c, "string array index");
            }
            for (uint64_t j = 0; j < n; j++) {
                uint64_t sl;
                kv->str_offs[j] = c->pos;
                if ((r = rd64(c, &sl, "string array element length"))) return r;
                if (sl > left(c))
                    return perr(c, "string array element %" PRIu64 ": length %" PRIu64
                                   " at byte %" PRIu64 " exceeds the %" PRIu64 " bytes left",
                                j, sl, c->pos - 8, left(c));
                if ((r = need(c, sl, "string array element"))) return r;
                c->pos += sl;
            }
        } else {
            uint64_t es = gguf_vtype_size(et);
            if (n > left(c) / es)
                return perr(c, "array of %" PRIu64 " %s at byte %" PRIu64
                               " exceeds the %" PRIu64 " bytes left in the file",
                            n, loom_gguf_vtype_name((loom_gguf_vtype)et), c->pos - 8, left(c));
            if ((r = need(c, n * es, "array data"))) return r;
            c->pos += n * es;
        }
    } else {
        uint64_t es = gguf_vtype_size(t);
        if ((r = need(c, es, "value"))) return r;
        kv->val_off = c->pos;
        c->pos += es;
    }
    if (!gguf_hset_insert(&g->kv_set, idx, gguf_kv_name_of, g)) return nomem(c, "key set");

    if (strcmp(kv->key, "general.alignment") == 0) {
        if (t != LOOM_GGUF_U32)
            return perr(c, "general.alignment has type %s; it must be u32",
                        loom_gguf_vtype_name((loom_gguf_vtype)t));
        uint32_t a = gguf_ld32(c->buf + kv->val_off);
        if (a == 0 || (a & (a - 1)) != 0 || a > GGUF_MAX_ALIGNMENT)
            return perr(c, "general.alignment %" PRIu32 " must be a power of two from 1 to 2^30", a);
        g->alignment = a;
    }
    return P_OK;
}

static int parse_tensor_info(cur *c, loom_gguf *g, int64_t idx) {
    loom_gguf_tensor_info *ti = &g->tensors[idx];
    memset(ti, 0, sizeof *ti);
    g->tensor_info_off[idx] = c->pos;
    uint64_t at = c->pos;
    set_ctx(c, "tensor #%" PRId64 " (info at byte %" PRIu64 ")", idx, at);
    uint64_t nl;
    int r;
    if ((r = rd64(c, &nl, "tensor name length"))) return r;
    if (nl == 0 || nl >= LOOM_GGUF_MAX_NAME)
        return perr(c, "name length %" PRIu64 " out of range 1..%d", nl, LOOM_GGUF_MAX_NAME - 1);
    if ((r = need(c, nl, "tensor name"))) return r;
    if (memchr(c->buf + c->pos, 0, (size_t)nl)) return perr(c, "tensor name contains a NUL byte");
    memcpy(ti->name, c->buf + c->pos, (size_t)nl);
    ti->name[nl] = '\0';
    c->pos += nl;
    g->n_tensors = idx + 1;
    set_ctx(c, "tensor " NAME_FMT " (info at byte %" PRIu64 ")", ti->name, at);

    int64_t dup = gguf_hset_find(&g->tensor_set, ti->name, gguf_tensor_name_of, g);
    if (dup >= 0)
        return perr(c, "duplicate tensor name (first defined at byte %" PRIu64 ")",
                    g->tensor_info_off[dup]);

    uint32_t nd;
    if ((r = rd32(c, &nd, "n_dims"))) return r;
    if (nd > LOOM_GGUF_MAX_DIMS) /* 0: a scalar (one element), as ggml reads it */
        return perr(c, "n_dims %" PRIu32 " out of range 0..%d", nd, LOOM_GGUF_MAX_DIMS);
    ti->n_dims = nd;
    uint64_t nelem = 1;
    for (int d = 0; d < LOOM_GGUF_MAX_DIMS; d++) ti->ne[d] = 1;
    for (uint32_t d = 0; d < nd; d++) {
        uint64_t e;
        if ((r = rd64(c, &e, "tensor extent"))) return r;
        if (e == 0) return perr(c, "extent ne[%" PRIu32 "] is 0", d);
        if (e > (uint64_t)INT64_MAX || nelem > (uint64_t)INT64_MAX / e)
            return perr(c, "element count overflows at ne[%" PRIu32 "] = %" PRIu64, d, e);
        nelem *= e;
        ti->ne[d] = (int64_t)e;
    }
    uint32_t ty;
    if ((r = rd32(c, &ty, "tensor type"))) return r;
    const loom_type_info *tinfo = loom_type_get(ty);
    if (!tinfo) return perr(c, "unknown tensor type id %" PRIu32, ty);
    ti->type = (loom_type)ty;
    if (ti->ne[0] % tinfo->block_size != 0)
        return perr(c, "ne[0] = %" PRId64 " is not a multiple of the %s block size %" PRId64,
                    ti->ne[0], tinfo->name, tinfo->block_size);
    uint64_t size = (uint64_t)(ti->ne[0] / tinfo->block_size);
    if (size > UINT64_MAX / tinfo->block_bytes) return perr(c, "byte size overflows");
    size *= tinfo->block_bytes;
    for (int d = 1; d < LOOM_GGUF_MAX_DIMS; d++) {
        uint64_t e = (uint64_t)ti->ne[d];
        if (size > UINT64_MAX / e) return perr(c, "byte size overflows");
        size *= e;
    }
    ti->size = size;
    if ((r = rd64(c, &ti->offset, "tensor data offset"))) return r;
    if (!gguf_hset_insert(&g->tensor_set, idx, gguf_tensor_name_of, g))
        return nomem(c, "tensor name set");
    return P_OK;
}

typedef struct trange {
    uint64_t start, end;
    int64_t idx;
} trange;

static int cmp_range(const void *a, const void *b) {
    const trange *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

static int check_tensor_data(cur *c, loom_gguf *g) {
    uint64_t fs = c->fsize, d0 = g->data_offset;
    for (int64_t i = 0; i < g->n_tensors; i++) {
        loom_gguf_tensor_info *ti = &g->tensors[i];
        set_ctx(c, "tensor " NAME_FMT " (info at byte %" PRIu64 ")", ti->name,
                g->tensor_info_off[i]);
        if (ti->offset % g->alignment != 0)
            return perr(c, "data offset %" PRIu64 " is not a multiple of the alignment %" PRIu32,
                        ti->offset, g->alignment);
        if (d0 > fs || ti->offset > fs - d0)
            return perr(c, "data offset %" PRIu64 " (absolute byte %" PRIu64
                           "%s) is past end of file (size %" PRIu64 ")",
                        ti->offset, d0 + ti->offset,
                        (d0 + ti->offset < d0) ? ", overflowing" : "", fs);
        uint64_t start = d0 + ti->offset;
        if (ti->size > fs - start) {
            if (ti->size > UINT64_MAX - start)
                return perr(c, "data range starting at byte %" PRIu64 " with size %" PRIu64
                               " overflows",
                            start, ti->size);
            return perr(c, "data range [%" PRIu64 ", %" PRIu64 ") past end of file (size %" PRIu64
                           ")",
                        start, start + ti->size, fs);
        }
        ti->file_offset = start;
    }
    c->ctx[0] = '\0';
    if (g->n_tensors < 2) return P_OK;
    trange *rs = loom_malloc((size_t)g->n_tensors * sizeof *rs);
    if (!rs) return nomem(c, "tensor ranges");
    for (int64_t i = 0; i < g->n_tensors; i++) {
        rs[i].start = g->tensors[i].offset;
        rs[i].end = g->tensors[i].offset + g->tensors[i].size;
        rs[i].idx = i;
    }
    qsort(rs, (size_t)g->n_tensors, sizeof *rs, cmp_range);
    for (int64_t i = 1; i < g->n_tensors; i++) {
        if (rs[i].start < rs[i - 1].end) {
            const loom_gguf_tensor_info *a = &g->tensors[rs[i - 1].idx], *b = &g->tensors[rs[i].idx];
            set_ctx(c, "tensor " NAME_FMT " (info at byte %" PRIu64 ")", b->name,
                    g->tensor_info_off[rs[i].idx]);
            int r = perr(c, "data range [%" PRIu64 ", %" PRIu64 ") overlaps tensor " NAME_FMT
                            " [%" PRIu64 ", %" PRIu64 ")",
                         d0 + rs[i].start, d0 + rs[i].end, a->name, d0 + rs[i - 1].start,
                         d0 + rs[i - 1].end);
            loom_free(rs);
            return r;
        }
    }
    loom_free(rs);
    return P_OK;
}

/* Parse the image at buf (avail bytes valid; logical file size g->file_size).
 * Returns P_OK, P_ERR (err set) or P_MORE (*need_bytes set; nothing reported). */
static int parse(loom_gguf *g, const uint8_t *buf, uint64_t avail, uint64_t *need_bytes,
                 loom_error *err) {
    cur c;
    memset(&c, 0, sizeof c);
    c.buf = buf;
    c.avail = avail;
    c.fsize = g->file_size;
    c.err = err;
    g->alignment = LOOM_GGUF_DEFAULT_ALIGNMENT;
    uint64_t n_tensors = 0, n_kv = 0;
    int r = parse_header(&c, g, &n_tensors, &n_kv);
    if (r) goto out;

    /* Arrays grow as entries are parsed, so a lying count cannot force a huge
     * allocation before the bytes backing it have been seen. */
    uint64_t cap = 0;
    for (uint64_t i = 0; i < n_kv; i++) {
        if (i == cap) {
            uint64_t nc = cap ? cap * 2 : 16;
            if (nc > n_kv) nc = n_kv;
            gguf_kv *nk = loom_realloc(g->kv, (size_t)nc * sizeof *nk);
            if (!nk) { r = nomem(&c, "KV table"); goto out; }
            g->kv = nk;
            cap = nc;
        }
        if ((r = parse_kv(&c, g, (int64_t)i))) {
            /* parse_kv set n_kv only once the key was owned */
            goto out;
        }
    }
    c.ctx[0] = '\0';
    cap = 0;
    for (uint64_t i = 0; i < n_tensors; i++) {
        if (i == cap) {
            uint64_t nc = cap ? cap * 2 : 16;
            if (nc > n_tensors) nc = n_tensors;
            loom_gguf_tensor_info *nt = loom_realloc(g->tensors, (size_t)nc * sizeof *nt);
            if (!nt) { r = nomem(&c, "tensor table"); goto out; }
            g->tensors = nt;
            uint64_t *no = loom_realloc(g->tensor_info_off, (size_t)nc * sizeof *no);
            if (!no) { r = nomem(&c, "tensor table"); goto out; }
            g->tensor_info_off = no;
            cap = nc;
        }
        if ((r = parse_tensor_info(&c, g, (int64_t)i))) goto out;
    }
    c.ctx[0] = '\0';
    uint64_t a = g->alignment;
    if (c.pos > UINT64_MAX - (a - 1)) { r = perr(&c, "data offset overflows"); goto out; }
    g->data_offset = (c.pos + a - 1) / a * a;
    r = check_tensor_data(&c, g);
out:
    if (r == P_MORE) *need_bytes = c.need;
    return r;
}

/* ------------------------------------------------------------------ open */

static loom_status pread_full(int fd, void *dst, uint64_t size, uint64_t off) {
    uint8_t *p = dst;
    while (size > 0) {
        size_t chunk = size > (1u << 30) ? (1u << 30) : (size_t)size;
        ssize_t n = pread(fd, p, chunk, (off_t)off);
        if (n < 0) {
            if (errno == EINTR) continue;
            return LOOM_ERR_IO;
        }
        if (n == 0) return LOOM_ERR_IO;
        p += n;
        off += (uint64_t)n;
        size -= (uint64_t)n;
    }
    return LOOM_OK;
}

static loom_gguf *gguf_alloc(void) {
    loom_gguf *g = loom_calloc(1, sizeof *g);
    if (!g) return NULL;
    g->fd = -1;
    g->alignment = LOOM_GGUF_DEFAULT_ALIGNMENT;
    return g;
}

void loom_gguf_close(loom_gguf *g) {
    if (!g) return;
    free_parsed(g);
    if (g->map) munmap(g->map, (size_t)g->file_size);
    loom_free(g->owned);
    if (g->fd >= 0) close(g->fd);
    loom_free(g->path);
    loom_free(g);
}

loom_status loom_gguf_open_memory(const void *data, size_t size, loom_gguf **out, loom_error *err) {
    if (out) *out = NULL;
    if (!out || (!data && size > 0))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_gguf_open_memory: NULL argument");
    loom_gguf *g = gguf_alloc();
    if (!g) return loom_error_set(err, LOOM_ERR_NOMEM, "out of memory");
    g->path = loom_calloc(1, 1);
    if (!g->path) {
        loom_gguf_close(g);
        return loom_error_set(err, LOOM_ERR_NOMEM, "out of memory");
    }
    g->base = data;
    g->base_len = size;
    g->file_size = size;
    g->data_mapped = true;
    uint64_t needb = 0;
    loom_error local = {0};
    int r = parse(g, data, size, &needb, &local);
    if (r != P_OK) {
        /* P_MORE cannot happen when avail == file size; treat it as an internal bug. */
        if (r == P_MORE) loom_error_set(&local, LOOM_ERR_INTERNAL, "gguf parser asked for more bytes");
        loom_error_set(err, local.status, "%s", local.msg);
        loom_status st = local.status;
        loom_gguf_close(g);
        return st;
    }
    *out = g;
    return LOOM_OK;
}

loom_status loom_gguf_open(const char *path, const loom_gguf_params *params, loom_gguf **out,
                           loom_error *err) {
    if (out) *out = NULL;
    if (!path || !out)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_gguf_open: NULL argument");
    bool no_mmap = params && params->no_mmap;
    loom_gguf *g = gguf_alloc();
    if (!g) return loom_error_set(err, LOOM_ERR_NOMEM, "out of memory");
    loom_error local = {0};
    size_t pl = strlen(path);
    g->path = loom_malloc(pl + 1);
    if (!g->path) {
        loom_error_set(&local, LOOM_ERR_NOMEM, "out of memory");
        goto fail;
    }
    memcpy(g->path, path, pl + 1);
    g->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (g->fd < 0) {
        loom_error_set(&local, LOOM_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
        goto fail;
    }
    struct stat st;
    if (fstat(g->fd, &st) != 0) {
        loom_error_set(&local, LOOM_ERR_IO, "cannot stat '%s': %s", path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        loom_error_set(&local, LOOM_ERR_IO, "'%s' is not a regular file", path);
        goto fail;
    }
    g->file_size = (uint64_t)st.st_size;
    if (g->file_size == 0) {
        /* procfs/sysfs files report size 0 but have content: say what they are */
        char probe;
        if (pread(g->fd, &probe, 1, 0) == 1)
            loom_error_set(&local, LOOM_ERR_IO,
                           "'%s' has no size (a special file, e.g. in /proc or /sys); a GGUF file must be "
                           "a regular file",
                           path);
        else
            loom_error_set(&local, LOOM_ERR_FORMAT, "'%s': file is empty (0 bytes)", path);
        goto fail;
    }
    if (!no_mmap && g->file_size <= SIZE_MAX) {
        void *m = mmap(NULL, (size_t)g->file_size, PROT_READ, MAP_PRIVATE, g->fd, 0);
        if (m != MAP_FAILED) {
            g->map = m;
            g->base = m;
            g->base_len = g->file_size;
            g->data_mapped = true;
        }
        /* On mmap failure fall back to reading the header region. */
    }
    int r;
    uint64_t needb = 0;
    if (g->map) {
        r = parse(g, g->base, g->base_len, &needb, &local);
    } else {
        uint64_t want = g->file_size < GGUF_NO_MMAP_FIRST_READ ? g->file_size : GGUF_NO_MMAP_FIRST_READ;
        for (;;) {
            if (want > SIZE_MAX) {
                loom_error_set(&local, LOOM_ERR_NOMEM, "'%s': header region too large", path);
                goto fail;
            }
            uint8_t *nb = loom_realloc(g->owned, (size_t)want);
            if (!nb) {
                loom_error_set(&local, LOOM_ERR_NOMEM, "'%s': out of memory reading %" PRIu64
                               " header bytes", path, want);
                goto fail;
            }
            g->owned = nb;
            if (pread_full(g->fd, g->owned + g->base_len, want - g->base_len, g->base_len) != LOOM_OK) {
                loom_error_set(&local, LOOM_ERR_IO, "'%s': read failed at byte %" PRIu64 ": %s",
                               path, g->base_len, strerror(errno));
                goto fail;
            }
            g->base = g->owned;
            g->base_len = want;
            r = parse(g, g->base, g->base_len, &needb, &local);
            if (r != P_MORE) break;
            free_parsed(g);
            uint64_t nw = want > g->file_size / 2 ? g->file_size : want * 2;
            if (nw < needb) nw = needb;
            if (nw > g->file_size) nw = g->file_size;
            if (nw <= want) {
                loom_error_set(&local, LOOM_ERR_INTERNAL, "gguf parser made no progress");
                goto fail;
            }
            want = nw;
        }
    }
    if (r != P_OK) {
        if (r == P_MORE)
            loom_error_set(&local, LOOM_ERR_INTERNAL, "gguf parser asked for more bytes");
        /* Prefix the path so the message names the file. */
        loom_error tmp = local;
        local.status = LOOM_OK;
        loom_error_set(&local, tmp.status, "'%s': %s", path, tmp.msg);
        goto fail;
    }
    *out = g;
    return LOOM_OK;
fail:
    loom_error_set(err, local.status, "%s", local.msg);
    {
        loom_status s = local.status;
        loom_gguf_close(g);
        return s;
    }
}

/* ------------------------------------------------------------------ tensor data */

const void *loom_gguf_tensor_data(const loom_gguf *g, int64_t i) {
    if (!g || i < 0 || i >= g->n_tensors || !g->data_mapped) return NULL;
    return g->base + g->tensors[i].file_offset;
}

loom_status loom_gguf_read_tensor(const loom_gguf *g, int64_t i, uint64_t offset, void *dst,
                                  uint64_t size, loom_error *err) {
    if (!g || (!dst && size > 0))
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_gguf_read_tensor: NULL argument");
    if (i < 0 || i >= g->n_tensors)
        return loom_error_set(err, LOOM_ERR_RANGE, "tensor index %" PRId64 " out of range 0..%" PRId64,
                              i, g->n_tensors);
    const loom_gguf_tensor_info *ti = &g->tensors[i];
    if (offset > ti->size || size > ti->size - offset)
        return loom_error_set(err, LOOM_ERR_RANGE,
                              "tensor '%s': read of %" PRIu64 " bytes at offset %" PRIu64
                              " exceeds its size %" PRIu64,
                              ti->name, size, offset, ti->size);
    if (size == 0) return LOOM_OK;
    if (g->fd < 0) {
        memcpy(dst, g->base + ti->file_offset + offset, (size_t)size);
        return LOOM_OK;
    }
    if (pread_full(g->fd, dst, size, ti->file_offset + offset) != LOOM_OK)
        return loom_error_set(err, LOOM_ERR_IO,
                              "tensor '%s': read of %" PRIu64 " bytes at byte %" PRIu64
                              " of '%s' failed or was short",
                              ti->name, size, ti->file_offset + offset, g->path);
    return LOOM_OK;
}
