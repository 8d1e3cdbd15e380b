/* GGUF accessors: file facts, KV iteration, typed getters, arrays, tensor lookup. */
#include "gguf_internal.h"


const char *loom_gguf_vtype_name(loom_gguf_vtype t) {
    static const char *const names[LOOM_GGUF_VTYPE_COUNT] = {
        "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
    };
    if ((unsigned)t >= LOOM_GGUF_VTYPE_COUNT) return "?";
    return names[t];
}

uint32_t loom_gguf_version(const loom_gguf *g) { return g ? g->version : 0; }
uint32_t loom_gguf_alignment(const loom_gguf *g) { return g ? g->alignment : 0; }
uint64_t loom_gguf_data_offset(const loom_gguf *g) { return g ? g->data_offset : 0; }
uint64_t loom_gguf_file_size(const loom_gguf *g) { return g ? g->file_size : 0; }
const char *loom_gguf_path(const loom_gguf *g) { return g && g->path ? g->path : ""; }

int64_t loom_gguf_kv_count(const loom_gguf *g) { return g ? g->n_kv : 0; }

static const gguf_kv *kv_at(const loom_gguf *g, int64_t i) {
    if (!g || i < 0 || i >= g->n_kv) return NULL;
    return &g->kv[i];
}

const char *loom_gguf_kv_key(const loom_gguf *g, int64_t i) {
    const gguf_kv *kv = kv_at(g, i);
    return kv ? kv->key : NULL;
}

loom_gguf_vtype loom_gguf_kv_type(const loom_gguf *g, int64_t i) {
    const gguf_kv *kv = kv_at(g, i);
    return kv ? (loom_gguf_vtype)kv->type : LOOM_GGUF_VTYPE_COUNT;
}

loom_gguf_vtype loom_gguf_kv_array_type(const loom_gguf *g, int64_t i) {
    const gguf_kv *kv = kv_at(g, i);
    return kv ? (loom_gguf_vtype)kv->elem_type : LOOM_GGUF_VTYPE_COUNT;
}

uint64_t loom_gguf_kv_array_len(const loom_gguf *g, int64_t i) {
    const gguf_kv *kv = kv_at(g, i);
    return kv ? kv->len : 0;
}

int64_t loom_gguf_find_key(const loom_gguf *g, const char *key) {
    if (!g || !key) return -1;
    return gguf_hset_find(&g->kv_set, key, gguf_kv_name_of, g);
}

/* Scalar KV by key with an exact type. */
static loom_status scalar(const loom_gguf *g, const char *key, uint32_t type, const uint8_t **p) {
    int64_t i = loom_gguf_find_key(g, key);
    if (i < 0) return LOOM_ERR_NOT_FOUND;
    if (g->kv[i].type != type) return LOOM_ERR_TYPE;
    *p = g->base + g->kv[i].val_off;
    return LOOM_OK;
}

#define GETTER(fn, T, VT, LOAD)                                                   \
    loom_status fn(const loom_gguf *g, const char *key, T *out) {                 \
        const uint8_t *p;                                                         \
        loom_status s = scalar(g, key, VT, &p);                                   \
        if (s != LOOM_OK) return s;                                               \
        if (out) *out = LOAD;                                                     \
        return LOOM_OK;                                                           \
    }

static float ld_f32(const uint8_t *p) {
    uint32_t u = gguf_ld32(p);
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static double ld_f64(const uint8_t *p) {
    uint64_t u = gguf_ld64(p);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

GETTER(loom_gguf_get_u8, uint8_t, LOOM_GGUF_U8, p[0])
GETTER(loom_gguf_get_i8, int8_t, LOOM_GGUF_I8, (int8_t)p[0])
GETTER(loom_gguf_get_u16, uint16_t, LOOM_GGUF_U16, gguf_ld16(p))
GETTER(loom_gguf_get_i16, int16_t, LOOM_GGUF_I16, (int16_t)gguf_ld16(p))
GETTER(loom_gguf_get_u32, uint32_t, LOOM_GGUF_U32, gguf_ld32(p))
GETTER(loom_gguf_get_i32, int32_t, LOOM_GGUF_I32, (int32_t)gguf_ld32(p))
GETTER(loom_gguf_get_u64, uint64_t, LOOM_GGUF_U64, gguf_ld64(p))
GETTER(loom_gguf_get_i64, int64_t, LOOM_GGUF_I64, (int64_t)gguf_ld64(p))
GETTER(loom_gguf_get_f32, float, LOOM_GGUF_F32, ld_f32(p))
GETTER(loom_gguf_get_f64, double, LOOM_GGUF_F64, ld_f64(p))
GETTER(loom_gguf_get_bool, bool, LOOM_GGUF_BOOL, p[0] != 0)

/* Element of type t at p converted to int64 (integer types only). */
static loom_status load_int(uint32_t t, const uint8_t *p, int64_t *out) {
    int64_t v;
    switch (t) {
    case LOOM_GGUF_U8: v = p[0]; break;
    case LOOM_GGUF_I8: v = (int8_t)p[0]; break;
    case LOOM_GGUF_U16: v = gguf_ld16(p); break;
    case LOOM_GGUF_I16: v = (int16_t)gguf_ld16(p); break;
    case LOOM_GGUF_U32: v = gguf_ld32(p); break;
    case LOOM_GGUF_I32: v = (int32_t)gguf_ld32(p); break;
    case LOOM_GGUF_I64: v = (int64_t)gguf_ld64(p); break;
    case LOOM_GGUF_U64: {
        uint64_t u = gguf_ld64(p);
        if (u > (uint64_t)INT64_MAX) return LOOM_ERR_RANGE;
        v = (int64_t)u;
        break;
    }
    default: return LOOM_ERR_TYPE;
    }
    if (out) *out = v;
    return LOOM_OK;
}

static loom_status load_float(uint32_t t, const uint8_t *p, double *out) {
    double v;
    if (t == LOOM_GGUF_F32) v = ld_f32(p);
    else if (t == LOOM_GGUF_F64) v = ld_f64(p);
    else return LOOM_ERR_TYPE;
    if (out) *out = v;
    return LOOM_OK;
}

loom_status loom_gguf_kv_int(const loom_gguf *g, int64_t i, int64_t *out) {
    const gguf_kv *kv = kv_at(g, i);
    if (!kv) return LOOM_ERR_RANGE;
    return load_int(kv->type, g->base + kv->val_off, out);
}

loom_status loom_gguf_kv_float(const loom_gguf *g, int64_t i, double *out) {
    const gguf_kv *kv = kv_at(g, i);
    if (!kv) return LOOM_ERR_RANGE;
    return load_float(kv->type, g->base + kv->val_off, out);
}

loom_status loom_gguf_kv_str(const loom_gguf *g, int64_t i, loom_gguf_str *out) {
    const gguf_kv *kv = kv_at(g, i);
    if (!kv) return LOOM_ERR_RANGE;
    if (kv->type != LOOM_GGUF_STRING) return LOOM_ERR_TYPE;
    if (out) {
        out->ptr = (const char *)(g->base + kv->val_off);
        out->len = kv->str_len;
    }
    return LOOM_OK;
}

loom_status loom_gguf_get_int(const loom_gguf *g, const char *key, int64_t *out) {
    int64_t i = loom_gguf_find_key(g, key);
    if (i < 0) return LOOM_ERR_NOT_FOUND;
    return loom_gguf_kv_int(g, i, out);
}

loom_status loom_gguf_get_float(const loom_gguf *g, const char *key, double *out) {
    int64_t i = loom_gguf_find_key(g, key);
    if (i < 0) return LOOM_ERR_NOT_FOUND;
    return loom_gguf_kv_float(g, i, out);
}

loom_status loom_gguf_get_str(const loom_gguf *g, const char *key, loom_gguf_str *out) {
    int64_t i = loom_gguf_find_key(g, key);
    if (i < 0) return LOOM_ERR_NOT_FOUND;
    return loom_gguf_kv_str(g, i, out);
}

/* ---- arrays */

loom_status loom_gguf_kv_arr(const loom_gguf *g, int64_t i, loom_gguf_vtype *elem_type,
                             const void **data, uint64_t *len) {
    const gguf_kv *kv = kv_at(g, i);
    if (!kv) return LOOM_ERR_RANGE;
    if (kv->type != LOOM_GGUF_ARRAY) return LOOM_ERR_TYPE;
    if (elem_type) *elem_type = (loom_gguf_vtype)kv->elem_type;
    if (len) *len = kv->len;
    if (data) *data = kv->elem_type == LOOM_GGUF_STRING ? NULL : (const void *)(g->base + kv->val_off);
    return LOOM_OK;
}

loom_status loom_gguf_get_arr(const loom_gguf *g, const char *key, loom_gguf_vtype *elem_type,
                              const void **data, uint64_t *len) {
    int64_t i = loom_gguf_find_key(g, key);
    if (i < 0) return LOOM_ERR_NOT_FOUND;
    return loom_gguf_kv_arr(g, i, elem_type, data, len);
}

/* KV i is an array; element j's address (numeric) or RANGE/TYPE. */
static loom_status arr_elem(const loom_gguf *g, int64_t i, uint64_t j, const gguf_kv **kvp) {
    const gguf_kv *kv = kv_at(g, i);
    if (!kv) return LOOM_ERR_RANGE;
    if (kv->type != LOOM_GGUF_ARRAY) return LOOM_ERR_TYPE;
    if (j >= kv->len) return LOOM_ERR_RANGE;
    *kvp = kv;
    return LOOM_OK;
}

loom_status loom_gguf_kv_arr_str(const loom_gguf *g, int64_t i, uint64_t j, loom_gguf_str *out) {
    const gguf_kv *kv;
    loom_status s = arr_elem(g, i, j, &kv);
    if (s != LOOM_OK) return s;
    if (kv->elem_type != LOOM_GGUF_STRING) return LOOM_ERR_TYPE;
    const uint8_t *p = g->base + kv->str_offs[j];
    if (out) {
        out->len = gguf_ld64(p);
        out->ptr = (const char *)(p + 8);
    }
    return LOOM_OK;
}

loom_status loom_gguf_kv_arr_int(const loom_gguf *g, int64_t i, uint64_t j, int64_t *out) {
    const gguf_kv *kv;
    loom_status s = arr_elem(g, i, j, &kv);
    if (s != LOOM_OK) return s;
    uint64_t es = gguf_vtype_size(kv->elem_type);
    if (es == 0) return LOOM_ERR_TYPE;
    return load_int(kv->elem_type, g->base + kv->val_off + j * es, out);
}

loom_status loom_gguf_kv_arr_float(const loom_gguf *g, int64_t i, uint64_t j, double *out) {
    const gguf_kv *kv;
    loom_status s = arr_elem(g, i, j, &kv);
    if (s != LOOM_OK) return s;
    uint64_t es = gguf_vtype_size(kv->elem_type);
    if (es == 0) return LOOM_ERR_TYPE;
    return load_float(kv->elem_type, g->base + kv->val_off + j * es, out);
}

/* ---- tensors */

int64_t loom_gguf_tensor_count(const loom_gguf *g) { return g ? g->n_tensors : 0; }

const loom_gguf_tensor_info *loom_gguf_tensor(const loom_gguf *g, int64_t i) {
    if (!g || i < 0 || i >= g->n_tensors) return NULL;
    return &g->tensors[i];
}

int64_t loom_gguf_find_tensor(const loom_gguf *g, const char *name) {
    if (!g || !name) return -1;
    return gguf_hset_find(&g->tensor_set, name, gguf_tensor_name_of, g);
}

/* general.file_type (llama_ftype numbering) -> name. */
const char *loom_gguf_file_type_name(int64_t ft) {
    switch (ft) {
    case 0: return "F32";
    case 1: return "F16";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 4: return "Q4_1_SOME_F16";
    case 7: return "Q8_0";
    case 8: return "Q5_0";
    case 9: return "Q5_1";
    case 10: return "Q2_K";
    case 11: return "Q3_K_S";
    case 12: return "Q3_K_M";
    case 13: return "Q3_K_L";
    case 14: return "Q4_K_S";
    case 15: return "Q4_K_M";
    case 16: return "Q5_K_S";
    case 17: return "Q5_K_M";
    case 18: return "Q6_K";
    case 19: return "IQ2_XXS";
    case 20: return "IQ2_XS";
    case 21: return "Q2_K_S";
    case 22: return "IQ3_XS";
    case 23: return "IQ3_XXS";
    case 24: return "IQ1_S";
    case 25: return "IQ4_NL";
    case 26: return "IQ3_S";
    case 27: return "IQ3_M";
    case 28: return "IQ2_S";
    case 29: return "IQ2_M";
    case 30: return "IQ4_XS";
    case 31: return "IQ1_M";
    case 32: return "BF16";
    case 36: return "TQ1_0";
    case 37: return "TQ2_0";
    case 38: return "MXFP4_MOE";
    case 39: return "NVFP4";
    case 40: return "Q1_0";
    case 41: return "Q2_0";
    default: return "unknown";
    }
}
