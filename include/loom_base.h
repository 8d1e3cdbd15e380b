/*
 * loom_base.h - status codes, error values and the tensor type table.
 *
 * Every fallible Loom function returns a loom_status. Functions that can say more
 * take an optional `loom_error *err` (may be NULL) as their last argument and fill
 * it with the status and a one-line message naming the culprit (key, tensor, byte
 * offset, device). Nothing reachable from a file, an argument or an allocation
 * aborts or exits.
 *
 * API rules that hold for every public header:
 *   - Constructors (functions with a `T **out` parameter: loom_ctx_new,
 *     loom_backend_open, loom_backend_ctx_new, loom_gguf_open*, loom_gguf_writer_new,
 *     loom_model_open, loom_model_tokenizer, loom_tokenizer_new_from_gguf,
 *     loom_sampler_new) set *out to NULL on entry (when out is non-NULL) and store the
 *     new object only on success: on every failure *out is NULL and nothing needs
 *     freeing. (A backend's memory report after LOOM_ERR_NOMEM comes through
 *     loom_backend_params.nomem_report instead.)
 *   - Token ids, token counts, positions, vocabulary sizes and context/batch lengths
 *     are int32_t everywhere (as in llama.cpp); counts that could exceed INT32_MAX
 *     are refused with LOOM_ERR_RANGE.
 *
 * Thread safety: everything in this header is pure or reads constant tables and
 * may be called from any thread.
 */
#ifndef LOOM_BASE_H
#define LOOM_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum loom_status {
    LOOM_OK = 0,
    LOOM_ERR_INVALID_ARG = 1, /* a caller's argument is out of range or NULL */
    LOOM_ERR_FORMAT = 2,      /* malformed or unsupported file content */
    LOOM_ERR_IO = 3,          /* open/read/write/mmap failed or short */
    LOOM_ERR_NOMEM = 4,       /* an allocation (host or device) failed */
    LOOM_ERR_SHAPE = 5,       /* tensor shapes/strides incompatible with an op */
    LOOM_ERR_TYPE = 6,        /* tensor type not supported by an op or API */
    LOOM_ERR_UNSUPPORTED = 7, /* valid request that Loom does not implement */
    LOOM_ERR_CANCELLED = 8,   /* the caller's callback asked to stop */
    LOOM_ERR_RANGE = 9,       /* index out of range (token id, layer, key) */
    LOOM_ERR_CONTEXT_FULL = 10, /* KV cache / context length exhausted */
    LOOM_ERR_NOT_FOUND = 11,  /* a named key or tensor does not exist */
    LOOM_ERR_INTERNAL = 12,   /* a bug in Loom; please report */
    LOOM_ERR_RESOURCE = 13    /* a system resource other than memory ran out (threads:
                                 the process/user thread limit or stack memory); the
                                 message names it and what to reduce */
} loom_status;

/* Static, never NULL ("LOOM_OK", "LOOM_ERR_NOMEM", ...). */
const char *loom_status_name(loom_status s);

#define LOOM_ERROR_MSG_MAX 512

/* A status plus a human-readable message. Plain data; zero-initialise before use. */
typedef struct loom_error {
    loom_status status;
    char msg[LOOM_ERROR_MSG_MAX];
} loom_error;

/* Fill err (if non-NULL) with status and a printf-style message; returns status.
 * Does not overwrite an error that is already set (first error wins). */
loom_status loom_error_set(loom_error *err, loom_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Reset err to LOOM_OK with an empty message. NULL is ignored. */
void loom_error_clear(loom_error *err);

/* ---------------------------------------------------------------- tensor types */

/* GGUF / ggml tensor type ids. Values are the on-disk ids and part of the ABI. */
typedef enum loom_type {
    LOOM_TYPE_F32 = 0,
    LOOM_TYPE_F16 = 1,
    LOOM_TYPE_Q4_0 = 2,
    LOOM_TYPE_Q4_1 = 3,
    LOOM_TYPE_Q5_0 = 6,
    LOOM_TYPE_Q5_1 = 7,
    LOOM_TYPE_Q8_0 = 8,
    LOOM_TYPE_Q8_1 = 9,
    LOOM_TYPE_Q2_K = 10,
    LOOM_TYPE_Q3_K = 11,
    LOOM_TYPE_Q4_K = 12,
    LOOM_TYPE_Q5_K = 13,
    LOOM_TYPE_Q6_K = 14,
    LOOM_TYPE_Q8_K = 15,
    LOOM_TYPE_IQ2_XXS = 16,
    LOOM_TYPE_IQ2_XS = 17,
    LOOM_TYPE_IQ3_XXS = 18,
    LOOM_TYPE_IQ1_S = 19,
    LOOM_TYPE_IQ4_NL = 20,
    LOOM_TYPE_IQ3_S = 21,
    LOOM_TYPE_IQ2_S = 22,
    LOOM_TYPE_IQ4_XS = 23,
    LOOM_TYPE_I8 = 24,
    LOOM_TYPE_I16 = 25,
    LOOM_TYPE_I32 = 26,
    LOOM_TYPE_I64 = 27,
    LOOM_TYPE_F64 = 28,
    LOOM_TYPE_IQ1_M = 29,
    LOOM_TYPE_BF16 = 30,
    LOOM_TYPE_TQ1_0 = 34,
    LOOM_TYPE_TQ2_0 = 35,
    LOOM_TYPE_MXFP4 = 39,
    LOOM_TYPE_NVFP4 = 40, /* 64-element blocks: four UE4M3 scales, E2M1 codes */
    LOOM_TYPE_Q1_0 = 41,  /* 128-element blocks: an F16 scale, one sign bit each (+d / -d) */
    LOOM_TYPE_Q2_0 = 42,  /* 64-element blocks: an F16 scale, 2-bit codes -1, 0, +1, +2 */
    LOOM_TYPE_COUNT = 43 /* one past the largest id; not every id below is valid */
} loom_type;

/* Plain-data description of one type (one entry of the constant type table). */
typedef struct loom_type_info {
    const char *name;      /* "F32", "Q4_K", ... */
    int64_t block_size;    /* elements per block (1 for plain types) */
    size_t block_bytes;    /* bytes per block */
    bool is_quantized;     /* block_size > 1 */
    bool can_dequantize;   /* loom_dequantize_row supports it */
    bool can_quantize;     /* loom_quantize_row supports it */
} loom_type_info;

/* Table entry for id, or NULL when id is not a known type (e.g. 4, 5, 31..33, 36..38, >= 43). */
const loom_type_info *loom_type_get(uint32_t id);
/* Name for a known type, "?" otherwise. Static string. */
const char *loom_type_name(loom_type t);
/* Parse a type name ("q4_k", "Q4_K", "f16"...); returns false if unknown. */
bool loom_type_from_name(const char *name, loom_type *out);
/* Bytes of a row of ne0 elements. Fails (LOOM_ERR_FORMAT) if the type is unknown or
 * ne0 is negative or not a multiple of the block size; LOOM_ERR_RANGE on overflow. */
loom_status loom_type_row_bytes(loom_type t, int64_t ne0, size_t *out);

/* Reference scalar conversions (bit-exact with the GGUF block layouts).
 * n must be a multiple of the type's block size. src/dst must not overlap.
 * Return LOOM_ERR_TYPE if the type has no such conversion, LOOM_ERR_SHAPE if n is
 * not a multiple of the block size. */
loom_status loom_dequantize_row(loom_type t, const void *src, float *dst, int64_t n);
loom_status loom_quantize_row(loom_type t, const float *src, void *dst, int64_t n);

/* IEEE half and bfloat16 conversions (round to nearest even, NaN preserved as NaN). */
float loom_fp16_to_fp32(uint16_t h);
uint16_t loom_fp32_to_fp16(float f);
float loom_bf16_to_fp32(uint16_t h);
uint16_t loom_fp32_to_bf16(float f);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_BASE_H */
