/* The tensor type table: one constant entry per GGUF type id (types are data). */
#include "loom_base.h"

#include <ctype.h>
#include <string.h>

#define T(id, nm, bs, bb, dq, q) [id] = {nm, bs, bb, (bs) > 1, dq, q}

/* can_dequantize / can_quantize describe the reference conversions in
 * src/quant (dequant.c / quantize.c). */
static const loom_type_info k_types[LOOM_TYPE_COUNT] = {
    T(LOOM_TYPE_F32, "F32", 1, 4, true, true),
    T(LOOM_TYPE_F16, "F16", 1, 2, true, true),
    T(LOOM_TYPE_Q4_0, "Q4_0", 32, 18, true, true),
    T(LOOM_TYPE_Q4_1, "Q4_1", 32, 20, true, true),
    T(LOOM_TYPE_Q5_0, "Q5_0", 32, 22, true, true),
    T(LOOM_TYPE_Q5_1, "Q5_1", 32, 24, true, true),
    T(LOOM_TYPE_Q8_0, "Q8_0", 32, 34, true, true),
    T(LOOM_TYPE_Q8_1, "Q8_1", 32, 36, true, true),
    T(LOOM_TYPE_Q2_K, "Q2_K", 256, 84, true, true),
    T(LOOM_TYPE_Q3_K, "Q3_K", 256, 110, true, true),
    T(LOOM_TYPE_Q4_K, "Q4_K", 256, 144, true, true),
    T(LOOM_TYPE_Q5_K, "Q5_K", 256, 176, true, true),
    T(LOOM_TYPE_Q6_K, "Q6_K", 256, 210, true, true),
    T(LOOM_TYPE_Q8_K, "Q8_K", 256, 292, true, true),
    T(LOOM_TYPE_IQ2_XXS, "IQ2_XXS", 256, 66, true, false),
    T(LOOM_TYPE_IQ2_XS, "IQ2_XS", 256, 74, true, false),
    T(LOOM_TYPE_IQ3_XXS, "IQ3_XXS", 256, 98, true, false),
    T(LOOM_TYPE_IQ1_S, "IQ1_S", 256, 50, true, false),
    T(LOOM_TYPE_IQ4_NL, "IQ4_NL", 32, 18, true, true),
    T(LOOM_TYPE_IQ3_S, "IQ3_S", 256, 110, true, false),
    T(LOOM_TYPE_IQ2_S, "IQ2_S", 256, 82, true, false),
    T(LOOM_TYPE_IQ4_XS, "IQ4_XS", 256, 136, true, true),
    T(LOOM_TYPE_I8, "I8", 1, 1, false, false),
    T(LOOM_TYPE_I16, "I16", 1, 2, false, false),
    T(LOOM_TYPE_I32, "I32", 1, 4, false, false),
    T(LOOM_TYPE_I64, "I64", 1, 8, false, false),
    T(LOOM_TYPE_F64, "F64", 1, 8, false, false),
    T(LOOM_TYPE_IQ1_M, "IQ1_M", 256, 56, true, false),
    T(LOOM_TYPE_BF16, "BF16", 1, 2, true, true),
    T(LOOM_TYPE_TQ1_0, "TQ1_0", 256, 54, true, false),
    T(LOOM_TYPE_TQ2_0, "TQ2_0", 256, 66, true, false),
    T(LOOM_TYPE_MXFP4, "MXFP4", 32, 17, true, true),
    T(LOOM_TYPE_NVFP4, "NVFP4", 64, 36, true, false),
    T(LOOM_TYPE_Q1_0, "Q1_0", 128, 18, true, false),
    T(LOOM_TYPE_Q2_0, "Q2_0", 64, 18, true, false),
};

const loom_type_info *loom_type_get(uint32_t id) {
    if (id >= LOOM_TYPE_COUNT || k_types[id].name == NULL) return NULL;
    return &k_types[id];
}

const char *loom_type_name(loom_type t) {
    const loom_type_info *ti = loom_type_get((uint32_t)t);
    return ti ? ti->name : "?";
}

bool loom_type_from_name(const char *name, loom_type *out) {
    if (!name) return false;
    for (uint32_t i = 0; i < LOOM_TYPE_COUNT; i++) {
        const char *n = k_types[i].name;
        if (!n) continue;
        size_t j = 0;
        while (n[j] && name[j] && toupper((unsigned char)name[j]) == n[j]) j++;
        if (!n[j] && !name[j]) {
            if (out) *out = (loom_type)i;
            return true;
        }
    }
    return false;
}

loom_status loom_type_row_bytes(loom_type t, int64_t ne0, size_t *out) {
    const loom_type_info *ti = loom_type_get((uint32_t)t);
    if (!ti || ne0 < 0 || ne0 % ti->block_size != 0) return LOOM_ERR_FORMAT;
    uint64_t blocks = (uint64_t)(ne0 / ti->block_size);
    if (blocks != 0 && ti->block_bytes > SIZE_MAX / blocks) return LOOM_ERR_RANGE;
    if (out) *out = (size_t)(blocks * ti->block_bytes);
    return LOOM_OK;
}
