/* Malformed GGUF input: every case must fail with LOOM_ERR_FORMAT and a message that
 * names the problem; nothing may crash (run under ASan too).
 *
 * Bad files are assembled byte by byte here (a tiny raw builder), patched from a
 * writer-made valid file, or cut/patched from models/stories260K.gguf. */
#include "loom_gguf.h"
#include "test_util.h"

#include <stdint.h>
#include <unistd.h>

/* ------------------------------------------------------------ raw builder */

typedef struct rb {
    uint8_t *p;
    size_t n, cap;
} rb;

static void rb_bytes(rb *b, const void *s, size_t n) {
    if (b->n + n > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->n + n) nc *= 2;
        b->p = realloc(b->p, nc);
        b->cap = nc;
        if (!b->p) abort(); /* test harness only */
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void rb_u32(rb *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    rb_bytes(b, x, 4);
}
static void rb_u64(rb *b, uint64_t v) {
    rb_u32(b, (uint32_t)v);
    rb_u32(b, (uint32_t)(v >> 32));
}
static void rb_str(rb *b, const char *s) {
    rb_u64(b, strlen(s));
    rb_bytes(b, s, strlen(s));
}
static void kv_u32(rb *b, const char *k, uint32_t v) { rb_str(b, k); rb_u32(b, 4); rb_u32(b, v); }
static void kv_u64(rb *b, const char *k, uint64_t v) { rb_str(b, k); rb_u32(b, 10); rb_u64(b, v); }
static void kv_str(rb *b, const char *k, const char *v) { rb_str(b, k); rb_u32(b, 8); rb_str(b, v); }

typedef struct tspec {
    const char *name;
    uint32_t n_dims;
    uint64_t ne[6];
    uint32_t type;
    uint64_t offset;
} tspec;

/* A small file; every field can be overridden to break it. */
typedef struct spec {
    const char *magic;        /* default "GGUF" */
    uint32_t version;         /* default 3 */
    uint64_t n_t_field, n_kv_field; /* 0: use the real counts */
    bool set_n_t, set_n_kv;
    void (*extra_kv)(rb *);   /* appends n_extra_kv raw KVs */
    int n_extra_kv;
    tspec t[4];
    int n_t;                  /* -1: default two tensors */
    uint32_t layout_align;    /* padding used before the data (default 32) */
    uint64_t data_bytes;      /* default 64 */
    size_t cut;               /* truncate the image to this many bytes (0: no) */
} spec;

static const tspec k_ta = {"a", 1, {8}, 0, 0};
static const tspec k_tb = {"b", 2, {4, 2}, 0, 32};

static rb make(spec s) {
    rb b = {0};
    if (s.n_t < 0) {
        s.t[0] = k_ta;
        s.t[1] = k_tb;
        s.n_t = 2;
    }
    rb_bytes(&b, s.magic ? s.magic : "GGUF", 4);
    rb_u32(&b, s.version ? s.version : 3);
    rb_u64(&b, s.set_n_t ? s.n_t_field : (uint64_t)s.n_t);
    rb_u64(&b, s.set_n_kv ? s.n_kv_field : (uint64_t)(1 + s.n_extra_kv));
    kv_str(&b, "general.architecture", "test");
    if (s.extra_kv) s.extra_kv(&b);
    for (int i = 0; i < s.n_t; i++) {
        rb_str(&b, s.t[i].name);
        rb_u32(&b, s.t[i].n_dims);
        for (uint32_t d = 0; d < s.t[i].n_dims && d < 6; d++) rb_u64(&b, s.t[i].ne[d]);
        rb_u32(&b, s.t[i].type);
        rb_u64(&b, s.t[i].offset);
    }
    uint32_t a = s.layout_align ? s.layout_align : 32;
    while (b.n % a) rb_bytes(&b, "", 1);
    uint64_t db = s.data_bytes ? s.data_bytes : 64;
    for (uint64_t i = 0; i < db; i++) rb_bytes(&b, "\x11", 1);
    if (s.cut && s.cut < b.n) b.n = s.cut;
    return b;
}

static spec base(void) {
    spec s;
    memset(&s, 0, sizeof s);
    s.n_t = -1;
    return s;
}

/* Open an exact-size heap copy (so ASan sees any over-read) and expect failure. */
static void expect_fail_mem(const uint8_t *img, size_t n, const char *what, const char *needle) {
    uint8_t *copy = malloc(n ? n : 1);
    if (n) memcpy(copy, img, n);
    loom_gguf *g = (loom_gguf *)1;
    loom_error err = {0};
    loom_status st = loom_gguf_open_memory(copy, n, &g, &err);
    CHECK_MSG(st == LOOM_ERR_FORMAT, "%s: status %s, msg '%s'", what, loom_status_name(st), err.msg);
    CHECK_MSG(g == NULL, "%s: handle not NULL", what);
    CHECK_MSG(err.status == st && err.msg[0] != '\0', "%s: no message", what);
    if (needle) CHECK_MSG(strstr(err.msg, needle) != NULL, "%s: message '%s' lacks '%s'", what, err.msg, needle);
    if (st == LOOM_OK) loom_gguf_close(g);
    free(copy);
}

static void expect_fail(spec s, const char *what, const char *needle) {
    rb b = make(s);
    expect_fail_mem(b.p, b.n, what, needle);
    free(b.p);
}

/* Write to a temp file; open with mmap and without; expect failure naming needle. */
static void expect_fail_file(const uint8_t *img, size_t n, const char *what, const char *needle) {
    char path[96];
    snprintf(path, sizeof path, "/tmp/loom_test_gguf_bad_%d.gguf", (int)getpid());
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    if (n) fwrite(img, 1, n, f);
    fclose(f);
    for (int mode = 0; mode < 2; mode++) {
        loom_gguf_params p = {.no_mmap = mode == 1};
        loom_gguf *g = (loom_gguf *)1;
        loom_error err = {0};
        loom_status st = loom_gguf_open(path, &p, &g, &err);
        CHECK_MSG(st == LOOM_ERR_FORMAT, "%s (file, mode %d): status %s msg '%s'", what, mode,
                  loom_status_name(st), err.msg);
        CHECK(g == NULL);
        CHECK_MSG(strstr(err.msg, path) != NULL, "%s: message '%s' lacks the path", what, err.msg);
        if (needle) CHECK_MSG(strstr(err.msg, needle) != NULL, "%s: '%s' lacks '%s'", what, err.msg, needle);
        if (st == LOOM_OK) loom_gguf_close(g);
    }
    remove(path);
}

/* ------------------------------------------------------------ KV builders */

static void x_huge_key(rb *b) { rb_u64(b, 1ull << 40); rb_bytes(b, "abc", 3); rb_u32(b, 4); rb_u32(b, 1); }
static void x_zero_key(rb *b) { rb_u64(b, 0); rb_u32(b, 4); rb_u32(b, 1); }
static void x_nul_key(rb *b) { rb_u64(b, 3); rb_bytes(b, "a\0b", 3); rb_u32(b, 4); rb_u32(b, 1); }
static void x_huge_str(rb *b) { rb_str(b, "s"); rb_u32(b, 8); rb_u64(b, 1ull << 50); rb_bytes(b, "abc", 3); }
static void x_bad_vtype(rb *b) { rb_str(b, "k.bad"); rb_u32(b, 13); rb_u32(b, 0); }
static void x_nested(rb *b) { rb_str(b, "k.nest"); rb_u32(b, 9); rb_u32(b, 9); rb_u64(b, 1); rb_u32(b, 4); rb_u64(b, 1); rb_u32(b, 0); }
static void x_bad_etype(rb *b) { rb_str(b, "k.arr"); rb_u32(b, 9); rb_u32(b, 20); rb_u64(b, 1); rb_u32(b, 0); }
static void x_huge_arr(rb *b) { rb_str(b, "k.arr"); rb_u32(b, 9); rb_u32(b, 4); rb_u64(b, 1ull << 61); rb_u32(b, 0); }
static void x_huge_sarr(rb *b) { rb_str(b, "k.sarr"); rb_u32(b, 9); rb_u32(b, 8); rb_u64(b, 1ull << 40); rb_str(b, "x"); }
static void x_sarr_huge_elem(rb *b) { rb_str(b, "k.sarr"); rb_u32(b, 9); rb_u32(b, 8); rb_u64(b, 2); rb_str(b, "x"); rb_u64(b, ~0ull); }
static void x_dup_key(rb *b) { kv_u32(b, "k.dup", 1); kv_u32(b, "k.dup", 2); }
static void x_dup_arch(rb *b) { kv_str(b, "general.architecture", "again"); }
static void x_align0(rb *b) { kv_u32(b, "general.alignment", 0); }
static void x_align3(rb *b) { kv_u32(b, "general.alignment", 3); }
static void x_align_big(rb *b) { kv_u32(b, "general.alignment", 1u << 31); }
static void x_align_u64(rb *b) { kv_u64(b, "general.alignment", 32); }
static void x_align64(rb *b) { kv_u32(b, "general.alignment", 64); }
static void x_trunc_value(rb *b) { rb_str(b, "k.t"); rb_u32(b, 12); } /* f64 with no bytes: file ends in data... */

/* ------------------------------------------------------------ cases */

static void test_builder_cases(void) {
    spec s = base();
    /* the unbroken base file parses */
    {
        rb b = make(s);
        loom_gguf *g = NULL;
        loom_error err = {0};
        CHECK_MSG(loom_gguf_open_memory(b.p, b.n, &g, &err) == LOOM_OK, "base: %s", err.msg);
        CHECK(loom_gguf_tensor_count(g) == 2 && loom_gguf_kv_count(g) == 1);
        loom_gguf_close(g);
        /* the same file with 64-byte alignment and the KV parses too */
        s = base();
        s.extra_kv = x_align64;
        s.n_extra_kv = 1;
        s.t[0] = k_ta;
        s.t[1] = k_tb;
        s.t[1].offset = 64;
        s.n_t = 2;
        s.layout_align = 64;
        s.data_bytes = 96;
        rb b2 = make(s);
        CHECK_MSG(loom_gguf_open_memory(b2.p, b2.n, &g, &err) == LOOM_OK, "align64: %s", err.msg);
        CHECK(loom_gguf_alignment(g) == 64 && loom_gguf_data_offset(g) % 64 == 0);
        loom_gguf_close(g);
        /* ... but with offset 32 it is misaligned */
        s.t[1].offset = 32;
        expect_fail(s, "misaligned for 64", "alignment 64");
        free(b.p);
        free(b2.p);
    }

    expect_fail_mem((const uint8_t *)"", 0, "empty", "too small");
    expect_fail_mem((const uint8_t *)"GGUF", 4, "4 bytes", "version");
    expect_fail_mem((const uint8_t *)"GG", 2, "2 bytes", "too small");

    s = base(); s.magic = "GGUX";
    expect_fail(s, "bad magic", "magic");
    s = base(); s.magic = "FUGG";
    expect_fail(s, "reversed magic", "big-endian");
    s = base(); s.version = 1;
    expect_fail(s, "v1", "version 1");
    s = base(); s.version = 4;
    expect_fail(s, "v4", "unknown GGUF version 4");
    s = base(); s.version = 0x03000000u;
    expect_fail(s, "byte-swapped v3", "byte-swapped");
    s = base(); s.version = 0x02000000u;
    expect_fail(s, "byte-swapped v2", "big-endian");
    s = base(); s.version = 0xFFFFFFFFu;
    expect_fail(s, "version -1", "unknown GGUF version");

    s = base(); s.set_n_t = true; s.n_t_field = 1ull << 40;
    expect_fail(s, "huge tensor count", "tensor count");
    s = base(); s.set_n_t = true; s.n_t_field = ~0ull;
    expect_fail(s, "max tensor count", "tensor count");
    s = base(); s.set_n_kv = true; s.n_kv_field = 1ull << 40;
    expect_fail(s, "huge kv count", "KV count");
    s = base(); s.set_n_kv = true; s.n_kv_field = ~0ull;
    expect_fail(s, "max kv count", "KV count");
    s = base(); s.set_n_t = true; s.n_t_field = 3;
    expect_fail(s, "tensor count one too many", NULL);
    s = base(); s.set_n_kv = true; s.n_kv_field = 2;
    expect_fail(s, "kv count one too many", NULL);

#define KVCASE(fn, what, needle)            \
    s = base();                             \
    s.extra_kv = fn;                        \
    s.n_extra_kv = 1;                       \
    expect_fail(s, what, needle);
    KVCASE(x_huge_key, "huge key length", "key length");
    KVCASE(x_zero_key, "zero key length", "key length 0");
    KVCASE(x_nul_key, "NUL in key", "NUL");
    KVCASE(x_huge_str, "huge string length", "string length");
    KVCASE(x_bad_vtype, "unknown value type", "unknown value type 13");
    KVCASE(x_nested, "nested arrays", "arrays of arrays");
    KVCASE(x_bad_etype, "unknown array element type", "unknown array element type 20");
    KVCASE(x_huge_arr, "huge array", "k.arr");
    KVCASE(x_huge_sarr, "huge string array", "string array length");
    KVCASE(x_sarr_huge_elem, "huge string array element", "element 1");
    KVCASE(x_dup_arch, "duplicate key", "duplicate key");
    KVCASE(x_align0, "alignment 0", "general.alignment 0");
    KVCASE(x_align3, "alignment 3", "power of two");
    KVCASE(x_align_big, "alignment 2^31", "power of two");
    KVCASE(x_align_u64, "alignment u64", "must be u32");
    s = base(); s.extra_kv = x_dup_key; s.n_extra_kv = 2;
    expect_fail(s, "duplicate key 2", "'k.dup'");
    /* a value cut short: f64 key as the last thing in a 12-byte-short file */
    {
        rb b = {0};
        rb_bytes(&b, "GGUF", 4); rb_u32(&b, 3); rb_u64(&b, 0); rb_u64(&b, 1);
        x_trunc_value(&b);
        rb_bytes(&b, "\1\2\3", 3);
        expect_fail_mem(b.p, b.n, "truncated f64 value", "k.t");
        free(b.p);
    }

    /* tensor infos */
    { /* n_dims 0: a scalar, one element (ggml / llama.cpp read it so) */
        static const tspec scalar = {"s", 0, {0}, 0, 32};
        s = base(); s.t[0] = k_ta; s.t[1] = scalar; s.n_t = 2;
        rb b = make(s);
        loom_gguf *g = NULL;
        loom_error err = {0};
        CHECK_MSG(loom_gguf_open_memory(b.p, b.n, &g, &err) == LOOM_OK, "0 dims: %s", err.msg);
        const loom_gguf_tensor_info *ti = g ? loom_gguf_tensor(g, 1) : NULL;
        CHECK(ti && ti->n_dims == 0 && ti->ne[0] == 1 && ti->ne[1] == 1 && ti->size == 4 && ti->offset == 32);
        loom_gguf_close(g);
        free(b.p);
    }
    s = base(); s.t[0] = k_ta; s.t[1] = k_tb; s.n_t = 2; s.t[1].n_dims = 5; s.t[1].ne[2] = s.t[1].ne[3] = s.t[1].ne[4] = 1;
    expect_fail(s, "5 dims", "n_dims 5");
    s = base(); s.t[0] = k_ta; s.t[1] = k_tb; s.n_t = 2; s.t[1].ne[1] = 0;
    expect_fail(s, "zero extent", "ne[1] is 0");
    s = base(); s.t[0] = k_ta; s.t[1] = k_tb; s.n_t = 2; s.t[1].ne[0] = 1ull << 32; s.t[1].ne[1] = 1ull << 32;
    expect_fail(s, "element count overflow", "overflows");
    s = base(); s.t[0] = k_ta; s.n_t = 1; s.t[0].ne[0] = 1ull << 63;
    expect_fail(s, "extent > INT64_MAX", "'a'");
    s = base(); s.t[0] = k_ta; s.n_t = 1; s.t[0].ne[0] = 1ull << 62;
    expect_fail(s, "byte size overflow (F32 2^62)", "byte size overflows");
    s = base(); s.t[0] = k_ta; s.t[1] = k_tb; s.n_t = 2; s.t[1].type = 4;
    expect_fail(s, "unknown tensor type 4", "tensor 'b'");
    s = base(); s.t[0] = k_ta; s.t[1] = k_tb; s.n_t = 2; s.t[1].type = 1000;
    expect_fail(s, "unknown tensor type 1000", "unknown tensor type id 1000");
    s = base(); s.t[0] = k_ta; s.n_t = 1; s.t[0].type = 2; s.t[0].ne[0] = 33;
    expect_fail(s, "ne0 not multiple of block", "not a multiple of the Q4_0 block size 32");
    s = base(); s.t[0] = k_ta; s.t[1] = k_tb; s.n_t = 2; s.t[1].offset = 1u << 20;
    expect_fail(s, "offset past EOF", "past end of file");
    s = base(); s.t[0] = k_ta; s.t[1] = k_tb; s.n_t = 2; s.t[1].offset = ~0ull - 31;
    expect_fail(s, "offset wraps", "tensor 'b'");
    s = base(); s.t[0] = k_ta; s.n_t = 1; s.t[0].ne[0] = 1ull << 61;
    expect_fail(s, "huge size past EOF", "past end of file");
    s = base(); s.t[0] = k_ta; s.t[1] = k_tb; s.n_t = 2; s.t[1].offset = 36;
    expect_fail(s, "misaligned offset", "not a multiple of the alignment 32");
    s = base(); s.t[0] = k_ta; s.t[1] = k_tb; s.n_t = 2; s.t[1].offset = 0;
    expect_fail(s, "overlap", "overlaps");
    s = base(); s.t[0] = k_ta; s.t[1] = k_tb; s.n_t = 2; s.t[1].name = "a";
    expect_fail(s, "duplicate tensor name", "duplicate tensor name");
    s = base(); s.t[0] = k_ta; s.n_t = 1; s.t[0].name = "";
    expect_fail(s, "empty tensor name", "name length 0");
    {
        char longname[300];
        memset(longname, 'n', 299);
        longname[299] = '\0';
        s = base(); s.t[0] = k_ta; s.n_t = 1; s.t[0].name = longname;
        expect_fail(s, "tensor name too long", "name length 299");
    }
    s = base(); s.data_bytes = 40;
    expect_fail(s, "truncated data", "data range [");
    s = base(); s.data_bytes = 63;
    expect_fail(s, "data one byte short", "'b'");
    {
        /* truncated tensor infos: cut in the middle of tensor b's info */
        spec t = base();
        t.layout_align = 1; /* no padding: the image is infos + 64 data bytes */
        rb full = make(t);
        size_t infos_end = full.n - 64;
        free(full.p);
        t.layout_align = 0;
        for (size_t cut = infos_end - 30; cut < infos_end; cut += 7) {
            t.cut = cut;
            expect_fail(t, "truncated infos", "truncated");
        }
    }
    /* the same via files (mmap and pread) */
    {
        s = base(); s.t[0] = k_ta; s.t[1] = k_tb; s.n_t = 2; s.t[1].type = 4;
        rb b = make(s);
        expect_fail_file(b.p, b.n, "file: unknown type", "unknown tensor type id 4");
        free(b.p);
        expect_fail_file((const uint8_t *)"", 0, "file: empty", "empty");
        expect_fail_file((const uint8_t *)"GGUF", 4, "file: 4 bytes", "version");
        s = base(); s.data_bytes = 40;
        b = make(s);
        expect_fail_file(b.p, b.n, "file: truncated data", "past end of file");
        free(b.p);
    }
}

/* Patch a writer-made valid file. */
static void test_writer_patches(void) {
    loom_gguf_writer *w = NULL;
    CHECK(loom_gguf_writer_new(&w) == LOOM_OK);
    CHECK(loom_gguf_writer_add_str(w, "general.architecture", "llama", 5) == LOOM_OK);
    CHECK(loom_gguf_writer_add_u32(w, "llama.block_count", 1) == LOOM_OK);
    float d[64] = {0};
    int64_t ne[2] = {32, 2};
    CHECK(loom_gguf_writer_add_tensor(w, "blk.0.attn_q.weight", LOOM_TYPE_F32, 2, ne, d) == LOOM_OK);
    void *img = NULL;
    size_t n = 0;
    loom_error err = {0};
    CHECK(loom_gguf_writer_write_memory(w, &img, &n, &err) == LOOM_OK);
    loom_gguf_writer_free(w);
    uint8_t *p = img;
    /* layout: 24 header; KV1 8+20 key, 4 type, 8+5 -> ends 69; KV2 8+17+4+4 -> ends 102;
     * tensor info at 102: 8 + 19 name, 4 n_dims, 16 ne, 4 type, 8 offset -> ends 161 */
    size_t ti = 102, ti_type = ti + 8 + 19 + 4 + 16, ti_off = ti_type + 4;
    CHECK(n > ti_off + 8 && memcmp(p + ti + 8, "blk.0.attn_q.weight", 19) == 0);
    uint8_t *q = malloc(n);
    memcpy(q, p, n); q[ti_type] = 4;
    expect_fail_mem(q, n, "writer file: type 4", "'blk.0.attn_q.weight' (info at byte 102)");
    memcpy(q, p, n); q[ti_off] = 8;
    expect_fail_mem(q, n, "writer file: misaligned", "'blk.0.attn_q.weight'");
    memcpy(q, p, n); q[ti_off + 2] = 1;
    expect_fail_mem(q, n, "writer file: past EOF", "past end of file");
    memcpy(q, p, n); q[ti + 8 + 19] = 0; /* 0 dims: the 16 extent bytes are read as type and offset */
    expect_fail_mem(q, n, "writer file: 0 dims", "'blk.0.attn_q.weight'");
    memcpy(q, p, n); q[24 + 8 + 20 + 4 + 7] = 0x7f; /* string length high byte */
    expect_fail_mem(q, n, "writer file: huge string", "general.architecture");
    memcpy(q, p, n); q[24 + 8 + 20] = 42; /* value type */
    expect_fail_mem(q, n, "writer file: value type 42", "unknown value type 42");
    memcpy(q, p, n); q[16] = 3; /* n_kv 3 */
    expect_fail_mem(q, n, "writer file: n_kv 3", NULL);
    free(q);
    free(img);
}

/* ------------------------------------------------------------ stories260K */

static uint8_t *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return b;
}

static void test_stories(void) {
    size_t n = 0;
    uint8_t *orig = slurp(test_path("models/stories260K.gguf"), &n);
    CHECK(orig != NULL);
    if (!orig) return;
    loom_gguf *g = NULL;
    loom_error err = {0};
    CHECK(loom_gguf_open_memory(orig, n, &g, &err) == LOOM_OK);
    uint64_t d0 = loom_gguf_data_offset(g);
    CHECK_EQ_INT(d0, 14176);
    loom_gguf_close(g);

    /* cut at every byte of the header + tensor info region (and its padding) */
    int fails = 0;
    for (size_t cut = 0; cut < d0; cut++) {
        uint8_t *c = malloc(cut ? cut : 1);
        memcpy(c, orig, cut);
        g = (loom_gguf *)1;
        loom_error e = {0};
        loom_status st = loom_gguf_open_memory(c, cut, &g, &e);
        if (st != LOOM_ERR_FORMAT || g != NULL || e.msg[0] == '\0') {
            if (fails++ < 5) CHECK_MSG(0, "cut at %zu: status %s msg '%s'", cut, loom_status_name(st), e.msg);
            if (st == LOOM_OK) loom_gguf_close(g);
        }
        free(c);
    }
    CHECK_EQ_INT(fails, 0);
    /* ~200 sampled cuts in the data section */
    fails = 0;
    uint64_t span = n - d0;
    for (int k = 0; k < 200; k++) {
        size_t cut = (size_t)(d0 + (span * (uint64_t)k) / 200 + (uint64_t)(k * 7919) % 97);
        if (cut >= n) cut = n - 1;
        uint8_t *c = malloc(cut);
        memcpy(c, orig, cut);
        g = (loom_gguf *)1;
        loom_error e = {0};
        loom_status st = loom_gguf_open_memory(c, cut, &g, &e);
        if (st != LOOM_ERR_FORMAT || g != NULL || !strstr(e.msg, "past end of file")) {
            if (fails++ < 5) CHECK_MSG(0, "data cut at %zu: %s '%s'", cut, loom_status_name(st), e.msg);
            if (st == LOOM_OK) loom_gguf_close(g);
        }
        free(c);
    }
    CHECK_EQ_INT(fails, 0);
    /* a few cuts through real files, with and without mmap */
    for (size_t cut = 3; cut < n; cut += n / 7) expect_fail_file(orig, cut, "stories file cut", NULL);

    /* patches of the real file */
    uint8_t *q = malloc(n);
    memcpy(q, orig, n); q[4] = 1;
    expect_fail_mem(q, n, "stories v1", "version 1");
    memcpy(q, orig, n); q[15] = 0x40; /* n_tensors huge */
    expect_fail_mem(q, n, "stories n_tensors", "tensor count");
    memcpy(q, orig, n); q[23] = 0x40; /* n_kv huge */
    expect_fail_mem(q, n, "stories n_kv", "KV count");
    memcpy(q, orig, n); q[24 + 8 + 21 + 4] = 9; /* tokens: array of arrays */
    expect_fail_mem(q, n, "stories nested", "tokenizer.ggml.tokens");
    memcpy(q, orig, n); q[24 + 8 + 21 + 4 + 4 + 7] = 0x10; /* token count huge */
    expect_fail_mem(q, n, "stories token count", "string array length");
    /* first tensor info: name at the start of the info region; find it */
    size_t pos = 0;
    for (size_t i = 0; i + 17 < d0; i++)
        if (memcmp(orig + i, "token_embd.weight", 17) == 0 && orig[i - 8] == 17) { pos = i - 8; break; }
    CHECK(pos > 0);
    if (pos) {
        size_t type_at = pos + 8 + 17 + 4 + 16;
        memcpy(q, orig, n); q[type_at] = 31;
        expect_fail_mem(q, n, "stories unknown type", "tensor 'token_embd.weight'");
        char needle[64];
        snprintf(needle, sizeof needle, "(info at byte %zu)", pos);
        expect_fail_mem(q, n, "stories unknown type offset", needle);
        memcpy(q, orig, n); q[type_at] = 2; /* Q4_0 with ne0 = 64 -> size mismatch creates overlap? */
        {
            /* Q4_0: 64 x 512 -> 2*18*512 bytes: smaller, still valid layout -> accepted */
            loom_gguf *gg = NULL;
            loom_error e = {0};
            CHECK_MSG(loom_gguf_open_memory(q, n, &gg, &e) == LOOM_OK, "Q4_0 retype: %s", e.msg);
            loom_gguf_close(gg);
        }
        memcpy(q, orig, n); q[type_at] = 28; /* F64: twice the bytes -> overlaps output_norm */
        expect_fail_mem(q, n, "stories F64 overlap", "overlaps");
        memcpy(q, orig, n); q[pos + 8 + 17 + 4 + 8 + 7] = 0xFF; /* ne[1] huge */
        expect_fail_mem(q, n, "stories ne1 huge", "token_embd.weight");
    }
    free(q);
    free(orig);
}

int main(void) {
    test_builder_cases();
    test_writer_patches();
    test_stories();
    return test_finish("test_gguf_malformed");
}
