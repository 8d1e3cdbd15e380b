/* Writer round trips and typed getters.
 * References: a hand-assembled byte image (GGUF v3 layout from the spec), the
 * original bytes of models/stories260K.gguf (rewriting it must reproduce it), and
 * the constants the test itself stored. */
#include "loom_gguf.h"
#include "test_util.h"

#include <sys/stat.h>

#include <stdint.h>
#include <unistd.h>

static bool str_eq(loom_gguf_str s, const char *p, uint64_t len) {
    return s.len == len && (len == 0 || memcmp(s.ptr, p, len) == 0);
}

/* ---- 1. exact bytes of a tiny file, assembled by hand */
static void test_exact_bytes(void) {
    loom_gguf_writer *w = NULL;
    CHECK(loom_gguf_writer_new(&w) == LOOM_OK);
    CHECK(loom_gguf_writer_add_u32(w, "a", 7) == LOOM_OK);
    float t[2] = {1.0f, -2.0f};
    int64_t ne[1] = {2};
    CHECK(loom_gguf_writer_add_tensor(w, "t", LOOM_TYPE_F32, 1, ne, t) == LOOM_OK);
    void *img = NULL;
    size_t n = 0;
    loom_error err = {0};
    CHECK(loom_gguf_writer_write_memory(w, &img, &n, &err) == LOOM_OK);
    uint8_t want[96] = {
        'G', 'G', 'U', 'F', 3, 0, 0, 0,          /* magic, version 3 */
        1, 0, 0, 0, 0, 0, 0, 0,                  /* n_tensors */
        1, 0, 0, 0, 0, 0, 0, 0,                  /* n_kv */
        1, 0, 0, 0, 0, 0, 0, 0, 'a',             /* key "a" */
        4, 0, 0, 0, 7, 0, 0, 0,                  /* u32 7 */
        1, 0, 0, 0, 0, 0, 0, 0, 't',             /* tensor name "t" */
        1, 0, 0, 0,                              /* n_dims */
        2, 0, 0, 0, 0, 0, 0, 0,                  /* ne0 */
        0, 0, 0, 0,                              /* F32 */
        0, 0, 0, 0, 0, 0, 0, 0,                  /* offset 0 */
        /* byte 71: pad to 96 */
    };
    uint8_t tail[32] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0}; /* 1.0f, -2.0f + pad */
    CHECK_EQ_INT(n, 128);
    if (img && n == 128) {
        CHECK(memcmp(img, want, 96) == 0);
        CHECK(memcmp((uint8_t *)img + 96, tail, 32) == 0);
    }
    loom_gguf *g = NULL;
    CHECK(loom_gguf_open_memory(img, n, &g, &err) == LOOM_OK);
    CHECK_EQ_INT(loom_gguf_data_offset(g), 96);
    loom_gguf_close(g);
    free(img);
    loom_gguf_writer_free(w);
}

/* ---- 2. every value type, arrays, tensors of several types; memory and file */

static const char *const k_strs[] = {"", "hello", "w\xc3\xb6rld", "tab\there", "x"};
static const uint64_t k_str_lens[] = {0, 5, 6, 8, 1};
static const char k_nul_str[] = {'a', '\0', 'b'};

typedef struct tdesc {
    const char *name;
    loom_type type;
    uint32_t n_dims;
    int64_t ne[4];
    size_t bytes;
} tdesc;

static const tdesc k_tensors[] = {
    {"f32.2d", LOOM_TYPE_F32, 2, {3, 5, 1, 1}, 3 * 5 * 4},
    {"f16.1d", LOOM_TYPE_F16, 1, {7, 1, 1, 1}, 14},
    {"blk.0.q4_0", LOOM_TYPE_Q4_0, 3, {64, 2, 3, 1}, 2 * 18 * 2 * 3},
    {"blk.1.q4_k", LOOM_TYPE_Q4_K, 4, {256, 1, 2, 2}, 144 * 4},
    {"blk.1.q8_0", LOOM_TYPE_Q8_0, 2, {32, 3, 1, 1}, 34 * 3},
    {"i8", LOOM_TYPE_I8, 1, {1, 1, 1, 1}, 1},
};
#define N_TENSORS (sizeof k_tensors / sizeof k_tensors[0])

static uint8_t tensor_byte(size_t t, size_t i) { return (uint8_t)(t * 37 + i * 11 + 5); }

static loom_gguf_writer *build_writer(uint32_t alignment) {
    loom_gguf_writer *w = NULL;
    if (loom_gguf_writer_new(&w) != LOOM_OK) return NULL;
    if (alignment) CHECK(loom_gguf_writer_set_alignment(w, alignment) == LOOM_OK);
    CHECK(loom_gguf_writer_add_u8(w, "v.u8", 250) == LOOM_OK);
    CHECK(loom_gguf_writer_add_i8(w, "v.i8", -100) == LOOM_OK);
    CHECK(loom_gguf_writer_add_u16(w, "v.u16", 65000) == LOOM_OK);
    CHECK(loom_gguf_writer_add_i16(w, "v.i16", -32000) == LOOM_OK);
    CHECK(loom_gguf_writer_add_u32(w, "v.u32", 4000000000u) == LOOM_OK);
    CHECK(loom_gguf_writer_add_i32(w, "v.i32", -2000000000) == LOOM_OK);
    CHECK(loom_gguf_writer_add_u64(w, "v.u64", 18000000000000000000ull) == LOOM_OK);
    CHECK(loom_gguf_writer_add_i64(w, "v.i64", -9000000000000000000ll) == LOOM_OK);
    CHECK(loom_gguf_writer_add_f32(w, "v.f32", 0.15625f) == LOOM_OK);
    CHECK(loom_gguf_writer_add_f64(w, "v.f64", -1e300) == LOOM_OK);
    CHECK(loom_gguf_writer_add_bool(w, "v.bool", true) == LOOM_OK);
    CHECK(loom_gguf_writer_add_str(w, "v.str", "llama", 5) == LOOM_OK);
    CHECK(loom_gguf_writer_add_str(w, "v.str.nul", k_nul_str, 3) == LOOM_OK);
    CHECK(loom_gguf_writer_add_str(w, "v.str.empty", "", 0) == LOOM_OK);
    uint8_t au8[3] = {1, 2, 255};
    int8_t ai8[2] = {-1, 127};
    uint16_t au16[2] = {1, 65535};
    int16_t ai16[2] = {-32768, 5};
    uint32_t au32[2] = {0, 0xFFFFFFFFu};
    int32_t ai32[3] = {-1, 0, 2147483647};
    float af32[3] = {0.5f, -0.25f, 1e10f};
    bool ab[3] = {true, false, true};
    uint64_t au64[2] = {1, 0xFFFFFFFFFFFFFFFFull};
    int64_t ai64[2] = {-5, 5};
    double af64[2] = {3.25, -0.125};
    CHECK(loom_gguf_writer_add_arr(w, "a.u8", LOOM_GGUF_U8, au8, 3) == LOOM_OK);
    CHECK(loom_gguf_writer_add_arr(w, "a.i8", LOOM_GGUF_I8, ai8, 2) == LOOM_OK);
    CHECK(loom_gguf_writer_add_arr(w, "a.u16", LOOM_GGUF_U16, au16, 2) == LOOM_OK);
    CHECK(loom_gguf_writer_add_arr(w, "a.i16", LOOM_GGUF_I16, ai16, 2) == LOOM_OK);
    CHECK(loom_gguf_writer_add_arr(w, "a.u32", LOOM_GGUF_U32, au32, 2) == LOOM_OK);
    CHECK(loom_gguf_writer_add_arr(w, "a.i32", LOOM_GGUF_I32, ai32, 3) == LOOM_OK);
    CHECK(loom_gguf_writer_add_arr(w, "a.f32", LOOM_GGUF_F32, af32, 3) == LOOM_OK);
    CHECK(loom_gguf_writer_add_arr(w, "a.bool", LOOM_GGUF_BOOL, ab, 3) == LOOM_OK);
    CHECK(loom_gguf_writer_add_arr(w, "a.u64", LOOM_GGUF_U64, au64, 2) == LOOM_OK);
    CHECK(loom_gguf_writer_add_arr(w, "a.i64", LOOM_GGUF_I64, ai64, 2) == LOOM_OK);
    CHECK(loom_gguf_writer_add_arr(w, "a.f64", LOOM_GGUF_F64, af64, 2) == LOOM_OK);
    CHECK(loom_gguf_writer_add_arr(w, "a.empty", LOOM_GGUF_I32, NULL, 0) == LOOM_OK);
    CHECK(loom_gguf_writer_add_arr_str(w, "a.str", k_strs, k_str_lens, 5) == LOOM_OK);
    CHECK(loom_gguf_writer_add_arr_str(w, "a.str.nt", k_strs, NULL, 5) == LOOM_OK);
    /* refused additions */
    CHECK(loom_gguf_writer_add_u8(w, "v.u8", 1) == LOOM_ERR_INVALID_ARG);      /* duplicate */
    CHECK(loom_gguf_writer_add_u8(w, "", 1) == LOOM_ERR_INVALID_ARG);          /* empty key */
    CHECK(loom_gguf_writer_add_arr(w, "bad", LOOM_GGUF_STRING, au8, 1) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_gguf_writer_add_arr(w, "bad", LOOM_GGUF_ARRAY, au8, 1) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_gguf_writer_add_u64(w, "general.alignment", 64) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_gguf_writer_add_u32(w, "general.alignment", 3) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_gguf_writer_set_alignment(w, 0) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_gguf_writer_set_alignment(w, 48) == LOOM_ERR_INVALID_ARG);

    for (size_t t = 0; t < N_TENSORS; t++) {
        uint8_t *d = malloc(k_tensors[t].bytes);
        for (size_t i = 0; i < k_tensors[t].bytes; i++) d[i] = tensor_byte(t, i);
        CHECK(loom_gguf_writer_add_tensor(w, k_tensors[t].name, k_tensors[t].type,
                                          k_tensors[t].n_dims, k_tensors[t].ne, d) == LOOM_OK);
        free(d);
    }
    uint8_t dummy[64] = {0};
    int64_t ne_bad[2] = {33, 1};
    CHECK(loom_gguf_writer_add_tensor(w, "bad", LOOM_TYPE_Q4_0, 1, ne_bad, dummy) == LOOM_ERR_SHAPE);
    int64_t ne_ok[1] = {4};
    CHECK(loom_gguf_writer_add_tensor(w, "f32.2d", LOOM_TYPE_F32, 1, ne_ok, dummy) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_gguf_writer_add_tensor(w, "bad", LOOM_TYPE_F32, 0, ne_ok, dummy) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_gguf_writer_add_tensor(w, "bad", LOOM_TYPE_F32, 5, ne_ok, dummy) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_gguf_writer_add_tensor(w, "bad", (loom_type)4, 1, ne_ok, dummy) == LOOM_ERR_TYPE);
    int64_t ne_zero[1] = {0};
    CHECK(loom_gguf_writer_add_tensor(w, "bad", LOOM_TYPE_F32, 1, ne_zero, dummy) == LOOM_ERR_SHAPE);
    return w;
}

static void check_read_back(const loom_gguf *g, uint32_t alignment, const uint8_t *image) {
    CHECK_EQ_INT(loom_gguf_version(g), 3);
    CHECK_EQ_INT(loom_gguf_alignment(g), alignment);
    CHECK_EQ_INT(loom_gguf_data_offset(g) % alignment, 0);
    CHECK_EQ_INT(loom_gguf_kv_count(g), 28 + (alignment != 32));

    /* exact-type getters */
    uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32;
    uint64_t u64; int64_t i64; float f32; double f64; bool b; loom_gguf_str s;
    CHECK(loom_gguf_get_u8(g, "v.u8", &u8) == LOOM_OK && u8 == 250);
    CHECK(loom_gguf_get_i8(g, "v.i8", &i8) == LOOM_OK && i8 == -100);
    CHECK(loom_gguf_get_u16(g, "v.u16", &u16) == LOOM_OK && u16 == 65000);
    CHECK(loom_gguf_get_i16(g, "v.i16", &i16) == LOOM_OK && i16 == -32000);
    CHECK(loom_gguf_get_u32(g, "v.u32", &u32) == LOOM_OK && u32 == 4000000000u);
    CHECK(loom_gguf_get_i32(g, "v.i32", &i32) == LOOM_OK && i32 == -2000000000);
    CHECK(loom_gguf_get_u64(g, "v.u64", &u64) == LOOM_OK && u64 == 18000000000000000000ull);
    CHECK(loom_gguf_get_i64(g, "v.i64", &i64) == LOOM_OK && i64 == -9000000000000000000ll);
    CHECK(loom_gguf_get_f32(g, "v.f32", &f32) == LOOM_OK && f32 == 0.15625f);
    CHECK(loom_gguf_get_f64(g, "v.f64", &f64) == LOOM_OK && f64 == -1e300);
    CHECK(loom_gguf_get_bool(g, "v.bool", &b) == LOOM_OK && b);
    CHECK(loom_gguf_get_str(g, "v.str", &s) == LOOM_OK && str_eq(s, "llama", 5));
    CHECK(loom_gguf_get_str(g, "v.str.nul", &s) == LOOM_OK && str_eq(s, k_nul_str, 3));
    CHECK(loom_gguf_get_str(g, "v.str.empty", &s) == LOOM_OK && s.len == 0);

    /* wrong type / missing: error and output untouched */
    u32 = 12345;
    CHECK(loom_gguf_get_u32(g, "v.u16", &u32) == LOOM_ERR_TYPE && u32 == 12345);
    CHECK(loom_gguf_get_u32(g, "v.i32", &u32) == LOOM_ERR_TYPE && u32 == 12345);
    CHECK(loom_gguf_get_u32(g, "missing", &u32) == LOOM_ERR_NOT_FOUND && u32 == 12345);
    f32 = 9.0f;
    CHECK(loom_gguf_get_f32(g, "v.f64", &f32) == LOOM_ERR_TYPE && f32 == 9.0f);
    CHECK(loom_gguf_get_str(g, "v.u8", &s) == LOOM_ERR_TYPE);
    CHECK(loom_gguf_get_bool(g, "v.u8", &b) == LOOM_ERR_TYPE);

    /* any-int / any-float conveniences */
    int64_t iv = 0;
    double dv = 0;
    CHECK(loom_gguf_get_int(g, "v.u8", &iv) == LOOM_OK && iv == 250);
    CHECK(loom_gguf_get_int(g, "v.i8", &iv) == LOOM_OK && iv == -100);
    CHECK(loom_gguf_get_int(g, "v.u16", &iv) == LOOM_OK && iv == 65000);
    CHECK(loom_gguf_get_int(g, "v.i16", &iv) == LOOM_OK && iv == -32000);
    CHECK(loom_gguf_get_int(g, "v.u32", &iv) == LOOM_OK && iv == 4000000000ll);
    CHECK(loom_gguf_get_int(g, "v.i32", &iv) == LOOM_OK && iv == -2000000000);
    CHECK(loom_gguf_get_int(g, "v.i64", &iv) == LOOM_OK && iv == -9000000000000000000ll);
    iv = 77;
    CHECK(loom_gguf_get_int(g, "v.u64", &iv) == LOOM_ERR_RANGE && iv == 77); /* > INT64_MAX */
    CHECK(loom_gguf_get_int(g, "v.f32", &iv) == LOOM_ERR_TYPE);
    CHECK(loom_gguf_get_int(g, "v.bool", &iv) == LOOM_ERR_TYPE);
    CHECK(loom_gguf_get_int(g, "v.str", &iv) == LOOM_ERR_TYPE);
    CHECK(loom_gguf_get_int(g, "missing", &iv) == LOOM_ERR_NOT_FOUND);
    CHECK(loom_gguf_get_float(g, "v.f32", &dv) == LOOM_OK && dv == 0.15625);
    CHECK(loom_gguf_get_float(g, "v.f64", &dv) == LOOM_OK && dv == -1e300);
    CHECK(loom_gguf_get_float(g, "v.u32", &dv) == LOOM_ERR_TYPE);
    CHECK(loom_gguf_get_float(g, "a.f32", &dv) == LOOM_ERR_TYPE);

    /* arrays */
    loom_gguf_vtype et;
    const void *data;
    uint64_t len;
    static const struct { const char *key; loom_gguf_vtype et; uint64_t n; int64_t first, last; } ints[] = {
        {"a.u8", LOOM_GGUF_U8, 3, 1, 255},      {"a.i8", LOOM_GGUF_I8, 2, -1, 127},
        {"a.u16", LOOM_GGUF_U16, 2, 1, 65535},  {"a.i16", LOOM_GGUF_I16, 2, -32768, 5},
        {"a.u32", LOOM_GGUF_U32, 2, 0, 0xFFFFFFFFll}, {"a.i32", LOOM_GGUF_I32, 3, -1, 2147483647},
        {"a.i64", LOOM_GGUF_I64, 2, -5, 5},
    };
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
        int64_t i = loom_gguf_find_key(g, ints[k].key);
        CHECK_MSG(i >= 0, "%s", ints[k].key);
        CHECK(loom_gguf_kv_type(g, i) == LOOM_GGUF_ARRAY);
        CHECK(loom_gguf_kv_array_type(g, i) == ints[k].et);
        CHECK(loom_gguf_get_arr(g, ints[k].key, &et, &data, &len) == LOOM_OK);
        CHECK(et == ints[k].et && len == ints[k].n && data != NULL);
        CHECK(loom_gguf_kv_arr_int(g, i, 0, &iv) == LOOM_OK && iv == ints[k].first);
        CHECK(loom_gguf_kv_arr_int(g, i, ints[k].n - 1, &iv) == LOOM_OK && iv == ints[k].last);
        CHECK(loom_gguf_kv_arr_int(g, i, ints[k].n, &iv) == LOOM_ERR_RANGE);
        CHECK(loom_gguf_kv_arr_float(g, i, 0, &dv) == LOOM_ERR_TYPE);
    }
    int64_t i = loom_gguf_find_key(g, "a.u64");
    CHECK(loom_gguf_kv_arr_int(g, i, 0, &iv) == LOOM_OK && iv == 1);
    CHECK(loom_gguf_kv_arr_int(g, i, 1, &iv) == LOOM_ERR_RANGE);
    i = loom_gguf_find_key(g, "a.f32");
    CHECK(loom_gguf_kv_arr_float(g, i, 2, &dv) == LOOM_OK && dv == 1e10f);
    CHECK(loom_gguf_kv_arr_float(g, i, 1, &dv) == LOOM_OK && dv == -0.25);
    CHECK(loom_gguf_kv_arr(g, i, &et, &data, &len) == LOOM_OK && et == LOOM_GGUF_F32 && len == 3);
    {
        /* raw little-endian bytes of 0.5f = 0x3f000000 */
        const uint8_t *p = data;
        CHECK(p[0] == 0 && p[1] == 0 && p[2] == 0 && p[3] == 0x3f);
    }
    i = loom_gguf_find_key(g, "a.f64");
    CHECK(loom_gguf_kv_arr_float(g, i, 0, &dv) == LOOM_OK && dv == 3.25);
    CHECK(loom_gguf_kv_arr_float(g, i, 1, &dv) == LOOM_OK && dv == -0.125);
    i = loom_gguf_find_key(g, "a.bool");
    CHECK(loom_gguf_kv_arr(g, i, &et, &data, &len) == LOOM_OK && et == LOOM_GGUF_BOOL && len == 3);
    CHECK(((const uint8_t *)data)[0] == 1 && ((const uint8_t *)data)[1] == 0 && ((const uint8_t *)data)[2] == 1);
    i = loom_gguf_find_key(g, "a.empty");
    CHECK(loom_gguf_kv_arr(g, i, &et, &data, &len) == LOOM_OK && et == LOOM_GGUF_I32 && len == 0);
    CHECK(loom_gguf_kv_arr_int(g, i, 0, &iv) == LOOM_ERR_RANGE);
    const char *skeys[2] = {"a.str", "a.str.nt"};
    for (int k = 0; k < 2; k++) {
        i = loom_gguf_find_key(g, skeys[k]);
        CHECK(loom_gguf_kv_array_type(g, i) == LOOM_GGUF_STRING && loom_gguf_kv_array_len(g, i) == 5);
        for (uint64_t j = 0; j < 5; j++)
            CHECK(loom_gguf_kv_arr_str(g, i, j, &s) == LOOM_OK && str_eq(s, k_strs[j], k_str_lens[j]));
        CHECK(loom_gguf_kv_arr_str(g, i, 5, &s) == LOOM_ERR_RANGE);
        CHECK(loom_gguf_kv_arr_int(g, i, 0, &iv) == LOOM_ERR_TYPE);
    }
    /* scalar-by-index helpers on non-arrays */
    i = loom_gguf_find_key(g, "v.u8");
    CHECK(loom_gguf_kv_array_type(g, i) == LOOM_GGUF_U8 && loom_gguf_kv_array_len(g, i) == 1);
    CHECK(loom_gguf_kv_arr(g, i, &et, &data, &len) == LOOM_ERR_TYPE);
    CHECK(loom_gguf_kv_arr_str(g, i, 0, &s) == LOOM_ERR_TYPE);
    CHECK(loom_gguf_kv_int(g, -1, &iv) == LOOM_ERR_RANGE);
    CHECK(loom_gguf_kv_key(g, loom_gguf_kv_count(g)) == NULL);

    /* tensors */
    CHECK_EQ_INT(loom_gguf_tensor_count(g), N_TENSORS);
    uint64_t prev_end = 0;
    for (size_t t = 0; t < N_TENSORS; t++) {
        const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, (int64_t)t);
        CHECK(ti && strcmp(ti->name, k_tensors[t].name) == 0);
        if (!ti) continue;
        CHECK(loom_gguf_find_tensor(g, k_tensors[t].name) == (int64_t)t);
        CHECK(ti->type == k_tensors[t].type && ti->n_dims == k_tensors[t].n_dims);
        for (int d = 0; d < 4; d++) CHECK(ti->ne[d] == k_tensors[t].ne[d]);
        CHECK_EQ_INT(ti->size, k_tensors[t].bytes);
        CHECK_EQ_INT(ti->offset % alignment, 0);
        CHECK(ti->offset >= prev_end);
        /* gap bytes between tensors are zero padding */
        for (uint64_t p = prev_end; p < ti->offset; p++)
            CHECK(image[loom_gguf_data_offset(g) + p] == 0);
        prev_end = ti->offset + ti->size;
        uint8_t *buf = malloc(ti->size);
        loom_error err = {0};
        CHECK(loom_gguf_read_tensor(g, (int64_t)t, 0, buf, ti->size, &err) == LOOM_OK);
        bool same = true;
        for (size_t k = 0; k < ti->size; k++) same &= buf[k] == tensor_byte(t, k);
        CHECK_MSG(same, "tensor %s bytes", ti->name);
        free(buf);
    }
}

static uint8_t *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return b;
}

static void test_round_trip(uint32_t alignment) {
    loom_gguf_writer *w = build_writer(alignment == 32 ? 0 : alignment);
    CHECK(w != NULL);
    if (!w) return;
    void *img = NULL;
    size_t n = 0;
    loom_error err = {0};
    CHECK(loom_gguf_writer_write_memory(w, &img, &n, &err) == LOOM_OK);
    loom_gguf *g = NULL;
    CHECK_MSG(loom_gguf_open_memory(img, n, &g, &err) == LOOM_OK, "%s", err.msg);
    if (g) {
        check_read_back(g, alignment, img);
        loom_gguf_close(g);
    }

    char path[64];
    snprintf(path, sizeof path, "/tmp/loom_test_gguf_write_%d_%u.gguf", (int)getpid(), alignment);
    CHECK_MSG(loom_gguf_writer_write_file(w, path, &err) == LOOM_OK, "%s", err.msg);
    size_t fn = 0;
    uint8_t *file = slurp(path, &fn);
    CHECK(file && fn == n && memcmp(file, img, n) == 0); /* file == memory image */
    for (int mode = 0; mode < 2 && file; mode++) {
        loom_gguf_params p = {.no_mmap = mode == 1};
        g = NULL;
        CHECK_MSG(loom_gguf_open(path, &p, &g, &err) == LOOM_OK, "%s", err.msg);
        if (g) {
            check_read_back(g, alignment, file);
            loom_gguf_close(g);
        }
    }
    free(file);
    remove(path);
    free(img);
    loom_gguf_writer_free(w);
}

/* ---- 3. copying stories260K KV by KV and tensor by tensor reproduces its bytes */
static void test_copy_stories(void) {
    size_t n = 0;
    uint8_t *orig = slurp(test_path("models/stories260K.gguf"), &n);
    CHECK(orig != NULL);
    if (!orig) return;
    loom_gguf *g = NULL;
    loom_error err = {0};
    CHECK(loom_gguf_open_memory(orig, n, &g, &err) == LOOM_OK);
    loom_gguf_writer *w = NULL;
    CHECK(loom_gguf_writer_new(&w) == LOOM_OK);
    for (int64_t i = 0; i < loom_gguf_kv_count(g); i++) CHECK(loom_gguf_writer_copy_kv(w, g, i) == LOOM_OK);
    CHECK(loom_gguf_writer_copy_kv(w, g, 0) == LOOM_ERR_INVALID_ARG); /* duplicate */
    CHECK(loom_gguf_writer_copy_kv(w, g, 999) == LOOM_ERR_RANGE);
    for (int64_t i = 0; i < loom_gguf_tensor_count(g); i++) {
        const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, i);
        CHECK(loom_gguf_writer_add_tensor(w, ti->name, ti->type, ti->n_dims, ti->ne,
                                          loom_gguf_tensor_data(g, i)) == LOOM_OK);
    }
    void *img = NULL;
    size_t m = 0;
    CHECK(loom_gguf_writer_write_memory(w, &img, &m, &err) == LOOM_OK);
    CHECK_EQ_INT(m, n);
    CHECK(img && m == n && memcmp(img, orig, n) == 0);
    free(img);
    loom_gguf_writer_free(w);
    loom_gguf_close(g);
    free(orig);
}

/* write_file is atomic (issue #14 item 1): special files are refused and survive,
 * an existing file is replaced whole, no temporary is left behind; and reading a
 * /proc file says it has no size instead of "empty". */
static void test_file_output(void) {
    loom_gguf_writer *w = NULL;
    CHECK(loom_gguf_writer_new(&w) == LOOM_OK);
    if (!w) return;
    CHECK(loom_gguf_writer_add_u32(w, "a.b", 7) == LOOM_OK);
    loom_error e = {0};
    CHECK_EQ_INT(loom_gguf_writer_write_file(w, "/dev/null", &e), LOOM_ERR_INVALID_ARG);
    CHECK_MSG(strstr(e.msg, "not a regular file") != NULL, "%s", e.msg);
    char dir[128], path[192], cmd[256], out[64];
    snprintf(dir, sizeof dir, "/tmp/loom_test_gguf_write_%d", (int)getpid());
    CHECK(mkdir(dir, 0755) == 0);
    loom_error_clear(&e);
    CHECK_EQ_INT(loom_gguf_writer_write_file(w, dir, &e), LOOM_ERR_INVALID_ARG);
    snprintf(path, sizeof path, "%s/x.gguf", dir);
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs("old", f);
        fclose(f);
    }
    CHECK(loom_gguf_writer_write_file(w, path, NULL) == LOOM_OK);
    loom_gguf *g = NULL;
    CHECK(loom_gguf_open(path, NULL, &g, NULL) == LOOM_OK);
    loom_gguf_close(g);
    snprintf(cmd, sizeof cmd, "ls -A %s | wc -l", dir);
    test_run(cmd, out, sizeof out);
    CHECK_EQ_INT(atoi(out), 1);
    unlink(path);
    rmdir(dir);
    loom_gguf_writer_free(w);
    loom_error_clear(&e);
    CHECK(loom_gguf_open("/proc/self/status", NULL, &g, &e) != LOOM_OK);
    CHECK_MSG(strstr(e.msg, "no size") && !strstr(e.msg, "empty"), "%s", e.msg);
}

int main(void) {
    test_file_output();
    test_exact_bytes();
    test_round_trip(32);
    test_round_trip(64);
    test_round_trip(1);
    test_round_trip(4096);
    test_copy_stories();
    loom_gguf_writer_free(NULL);
    return test_finish("test_gguf_write");
}
