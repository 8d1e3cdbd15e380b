/*
 * loom_gguf.h - GGUF reader and writer.
 *
 * Example:
 *     loom_gguf *g; loom_error err = {0};
 *     if (loom_gguf_open("model.gguf", NULL, &g, &err) != LOOM_OK) { puts(err.msg); return; }
 *     uint32_t n_layers;
 *     if (loom_gguf_get_u32(g, "llama.block_count", &n_layers) == LOOM_OK) ...
 *     for (int64_t i = 0; i < loom_gguf_tensor_count(g); i++) {
 *         const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, i); ...
 *     }
 *     loom_gguf_close(g);
 *
 * Reader guarantees: versions 2 and 3, little-endian only. Every count, length,
 * dimension, product, size and offset is checked against overflow and the file
 * size before anything sized from the file is allocated. Errors name the key or
 * tensor and the byte offset. Nothing aborts.
 *
 * Limits (a file beyond them is refused with LOOM_ERR_FORMAT):
 *   - key length: 1..65535 bytes; string values: at most the bytes left in the file;
 *   - array length: at most (bytes left) / (element size); strings in arrays count
 *     at least 8 bytes each; arrays of arrays are refused;
 *   - n_kv, n_tensors: at most (bytes left) / (smallest possible entry);
 *   - tensor name length: 1..LOOM_GGUF_MAX_NAME-1 bytes; 1..4 dims, every extent >= 1;
 *   - general.alignment: a u32 power of two (1..2^30); default 32.
 *
 * Threading: an open loom_gguf is immutable; all getters may be called
 * concurrently. loom_gguf_read_tensor uses pread and is thread-safe.
 */
#ifndef LOOM_GGUF_H
#define LOOM_GGUF_H

#include "loom_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_GGUF_MAX_NAME 256
#define LOOM_GGUF_MAX_DIMS 4
#define LOOM_GGUF_DEFAULT_ALIGNMENT 32

typedef enum loom_gguf_vtype {
    LOOM_GGUF_U8 = 0, LOOM_GGUF_I8 = 1, LOOM_GGUF_U16 = 2, LOOM_GGUF_I16 = 3,
    LOOM_GGUF_U32 = 4, LOOM_GGUF_I32 = 5, LOOM_GGUF_F32 = 6, LOOM_GGUF_BOOL = 7,
    LOOM_GGUF_STRING = 8, LOOM_GGUF_ARRAY = 9, LOOM_GGUF_U64 = 10, LOOM_GGUF_I64 = 11,
    LOOM_GGUF_F64 = 12,
    LOOM_GGUF_VTYPE_COUNT = 13
} loom_gguf_vtype;

/* Static name ("u32", "string", ...), "?" if unknown. */
const char *loom_gguf_vtype_name(loom_gguf_vtype t);

typedef struct loom_gguf loom_gguf;

typedef struct loom_gguf_params {
    bool no_mmap;       /* true: do not map the file; tensor data only via read_tensor */
} loom_gguf_params;

/* A string value: bytes are NOT NUL-terminated (len bytes at ptr). Owned by the file. */
typedef struct loom_gguf_str {
    const char *ptr;
    uint64_t len;
} loom_gguf_str;

typedef struct loom_gguf_tensor_info {
    char name[LOOM_GGUF_MAX_NAME]; /* NUL-terminated */
    loom_type type;
    uint32_t n_dims;               /* 0..4 (0: a scalar; ne[] is all 1 past n_dims) */
    int64_t ne[LOOM_GGUF_MAX_DIMS];/* unused dims are 1 */
    uint64_t offset;               /* relative to the data section */
    uint64_t file_offset;          /* absolute: data_offset + offset */
    uint64_t size;                 /* bytes */
} loom_gguf_tensor_info;

/* Open and validate a file. On success *out owns the file (close it with
 * loom_gguf_close). On failure *out is NULL and err says why (message starts with
 * the quoted path): LOOM_ERR_IO (cannot open/read), LOOM_ERR_FORMAT (malformed or
 * unsupported content), LOOM_ERR_NOMEM. params may be NULL (= mmap). Without mmap
 * (params->no_mmap, or if mmap fails) only the header region is read into memory;
 * tensor_data then returns NULL and read_tensor must be used. A file with no
 * tensors may end before the (aligned) data offset. */
loom_status loom_gguf_open(const char *path, const loom_gguf_params *params,
                           loom_gguf **out, loom_error *err);
/* Parse a GGUF image held in memory (bytes must outlive the handle; not copied).
 * Same validation and errors as loom_gguf_open; tensor_data points into data. */
loom_status loom_gguf_open_memory(const void *data, size_t size, loom_gguf **out,
                                  loom_error *err);
void loom_gguf_close(loom_gguf *g); /* NULL is a no-op */

uint32_t loom_gguf_version(const loom_gguf *g);
uint32_t loom_gguf_alignment(const loom_gguf *g);
uint64_t loom_gguf_data_offset(const loom_gguf *g); /* start of the tensor data section */
uint64_t loom_gguf_file_size(const loom_gguf *g);

/* ---- key/value metadata. Index-based iteration: 0..kv_count-1 in file order.
 * Out-of-range indices: kv_key returns NULL, kv_type/kv_array_type return
 * LOOM_GGUF_VTYPE_COUNT, kv_array_len 0, the kv_* getters LOOM_ERR_RANGE.
 * Lookups by key/name are hashed (O(1)). */
int64_t loom_gguf_kv_count(const loom_gguf *g);
const char *loom_gguf_kv_key(const loom_gguf *g, int64_t i);     /* NUL-terminated */
loom_gguf_vtype loom_gguf_kv_type(const loom_gguf *g, int64_t i);
/* For arrays: element type and count; for scalars returns the scalar type and 1. */
loom_gguf_vtype loom_gguf_kv_array_type(const loom_gguf *g, int64_t i);
uint64_t loom_gguf_kv_array_len(const loom_gguf *g, int64_t i);
/* Index of key, or -1. */
int64_t loom_gguf_find_key(const loom_gguf *g, const char *key);

/* Exact-type getters: LOOM_ERR_NOT_FOUND if absent, LOOM_ERR_TYPE if stored with
 * another type. *out untouched on failure. */
loom_status loom_gguf_get_u8(const loom_gguf *g, const char *key, uint8_t *out);
loom_status loom_gguf_get_i8(const loom_gguf *g, const char *key, int8_t *out);
loom_status loom_gguf_get_u16(const loom_gguf *g, const char *key, uint16_t *out);
loom_status loom_gguf_get_i16(const loom_gguf *g, const char *key, int16_t *out);
loom_status loom_gguf_get_u32(const loom_gguf *g, const char *key, uint32_t *out);
loom_status loom_gguf_get_i32(const loom_gguf *g, const char *key, int32_t *out);
loom_status loom_gguf_get_u64(const loom_gguf *g, const char *key, uint64_t *out);
loom_status loom_gguf_get_i64(const loom_gguf *g, const char *key, int64_t *out);
loom_status loom_gguf_get_f32(const loom_gguf *g, const char *key, float *out);
loom_status loom_gguf_get_f64(const loom_gguf *g, const char *key, double *out);
loom_status loom_gguf_get_bool(const loom_gguf *g, const char *key, bool *out);
loom_status loom_gguf_get_str(const loom_gguf *g, const char *key, loom_gguf_str *out);
/* Conveniences: any integer type (LOOM_ERR_RANGE if the value does not fit int64),
 * any float type (f32/f64). */
loom_status loom_gguf_get_int(const loom_gguf *g, const char *key, int64_t *out);
loom_status loom_gguf_get_float(const loom_gguf *g, const char *key, double *out);
/* Same, by KV index (for iteration). */
loom_status loom_gguf_kv_int(const loom_gguf *g, int64_t i, int64_t *out);
loom_status loom_gguf_kv_float(const loom_gguf *g, int64_t i, double *out);
loom_status loom_gguf_kv_str(const loom_gguf *g, int64_t i, loom_gguf_str *out);

/* Arrays. *data points at the raw little-endian elements inside the file image
 * (numeric arrays; valid while g is open; NOT necessarily aligned: memcpy before
 * using it as a typed array). For string arrays the call succeeds with *elem_type
 * = LOOM_GGUF_STRING, *len set and *data = NULL: read elements with kv_arr_str.
 * LOOM_ERR_NOT_FOUND if absent, LOOM_ERR_TYPE if the KV is not an array,
 * LOOM_ERR_RANGE for a bad index. Any out pointer may be NULL. */
loom_status loom_gguf_get_arr(const loom_gguf *g, const char *key, loom_gguf_vtype *elem_type,
                              const void **data, uint64_t *len);
loom_status loom_gguf_kv_arr(const loom_gguf *g, int64_t i, loom_gguf_vtype *elem_type,
                             const void **data, uint64_t *len);
/* Element j of a string array (by KV index). */
loom_status loom_gguf_kv_arr_str(const loom_gguf *g, int64_t i, uint64_t j, loom_gguf_str *out);
/* Element j of an array of any integer type / any float type, converted.
 * LOOM_ERR_RANGE if j >= len (or a u64 element exceeds INT64_MAX), LOOM_ERR_TYPE if
 * the elements are of another kind. */
loom_status loom_gguf_kv_arr_int(const loom_gguf *g, int64_t i, uint64_t j, int64_t *out);
loom_status loom_gguf_kv_arr_float(const loom_gguf *g, int64_t i, uint64_t j, double *out);

/* ---- tensors: index-based, file order. */
int64_t loom_gguf_tensor_count(const loom_gguf *g);
const loom_gguf_tensor_info *loom_gguf_tensor(const loom_gguf *g, int64_t i); /* NULL if out of range */
int64_t loom_gguf_find_tensor(const loom_gguf *g, const char *name); /* -1 if absent */
/* Pointer to the tensor's bytes in the mapping, or NULL if the file is not mapped. */
const void *loom_gguf_tensor_data(const loom_gguf *g, int64_t i);
/* pread `size` bytes starting `offset` bytes into tensor i's data into dst.
 * LOOM_ERR_RANGE if offset+size exceeds the tensor; LOOM_ERR_IO on a failed or
 * short read (message names the tensor). Thread-safe. */
loom_status loom_gguf_read_tensor(const loom_gguf *g, int64_t i, uint64_t offset, void *dst,
                                  uint64_t size, loom_error *err);
/* Name of a `general.file_type` value (llama_ftype numbering: 0 "F32", 2 "Q4_0",
 * 15 "Q4_K_M", 32 "BF16", ...); "unknown" for other values. Static string. */
const char *loom_gguf_file_type_name(int64_t ft);
/* Path the file was opened from ("" for memory images). */
const char *loom_gguf_path(const loom_gguf *g);

/* ---- writer. Collects KVs and tensors in memory, then writes a v3 file.
 * Data passed to add_tensor is copied. Keys/tensor names must be unique.
 * Layout: KVs in insertion order, tensors in insertion order at increasing
 * offsets, each tensor's data padded with zeros to the alignment (default 32).
 * If the alignment is not 32 and no "general.alignment" KV was added, one (u32)
 * is appended at write time; "general.alignment" may only be added as a u32
 * power of two (which also sets the alignment).
 * add_* return LOOM_ERR_INVALID_ARG for NULL/empty/duplicate keys or bad
 * arguments, LOOM_ERR_NOMEM on allocation failure. add_tensor also returns
 * LOOM_ERR_TYPE (unknown type), LOOM_ERR_SHAPE (extent < 1, ne[0] not a multiple
 * of the block size), LOOM_ERR_RANGE (size overflow). A writer is not thread-safe. */
typedef struct loom_gguf_writer loom_gguf_writer;

loom_status loom_gguf_writer_new(loom_gguf_writer **out);
void loom_gguf_writer_free(loom_gguf_writer *w);
loom_status loom_gguf_writer_set_alignment(loom_gguf_writer *w, uint32_t alignment);
loom_status loom_gguf_writer_add_u8(loom_gguf_writer *w, const char *key, uint8_t v);
loom_status loom_gguf_writer_add_i8(loom_gguf_writer *w, const char *key, int8_t v);
loom_status loom_gguf_writer_add_u16(loom_gguf_writer *w, const char *key, uint16_t v);
loom_status loom_gguf_writer_add_i16(loom_gguf_writer *w, const char *key, int16_t v);
loom_status loom_gguf_writer_add_u32(loom_gguf_writer *w, const char *key, uint32_t v);
loom_status loom_gguf_writer_add_i32(loom_gguf_writer *w, const char *key, int32_t v);
loom_status loom_gguf_writer_add_u64(loom_gguf_writer *w, const char *key, uint64_t v);
loom_status loom_gguf_writer_add_i64(loom_gguf_writer *w, const char *key, int64_t v);
loom_status loom_gguf_writer_add_f32(loom_gguf_writer *w, const char *key, float v);
loom_status loom_gguf_writer_add_f64(loom_gguf_writer *w, const char *key, double v);
loom_status loom_gguf_writer_add_bool(loom_gguf_writer *w, const char *key, bool v);
loom_status loom_gguf_writer_add_str(loom_gguf_writer *w, const char *key, const char *v, uint64_t len);
/* Numeric array: n elements of elem_type (not STRING/ARRAY) copied from data. */
loom_status loom_gguf_writer_add_arr(loom_gguf_writer *w, const char *key, loom_gguf_vtype elem_type,
                                     const void *data, uint64_t n);
/* String array: n strings (lens may be NULL for NUL-terminated strings). */
loom_status loom_gguf_writer_add_arr_str(loom_gguf_writer *w, const char *key, const char *const *strs,
                                         const uint64_t *lens, uint64_t n);
/* Copy KV i of an open file (any type, arrays included). */
loom_status loom_gguf_writer_copy_kv(loom_gguf_writer *w, const loom_gguf *src, int64_t i);
/* Tensor with n_dims extents ne (ne[0] innermost); data holds the exact row bytes
 * (loom_type_row_bytes(type, ne[0]) * ne[1] * ne[2] * ne[3]). */
loom_status loom_gguf_writer_add_tensor(loom_gguf_writer *w, const char *name, loom_type type,
                                        uint32_t n_dims, const int64_t *ne, const void *data);
/* Write the file atomically: into a temporary file next to path, renamed over path
 * only when every byte was written and closed without error. On failure path is left
 * as it was (an existing file survives) and the temporary file is removed. A path that
 * exists and is not a regular file (device, FIFO, directory, symbolic link) is refused
 * with LOOM_ERR_INVALID_ARG before anything is written; write errors are LOOM_ERR_IO. */
loom_status loom_gguf_writer_write_file(loom_gguf_writer *w, const char *path, loom_error *err);
/* Serialise into a malloc'ed buffer (*out_data, caller frees with free()). */
loom_status loom_gguf_writer_write_memory(loom_gguf_writer *w, void **out_data, size_t *out_size,
                                          loom_error *err);

#ifdef __cplusplus
}
#endif
#endif /* LOOM_GGUF_H */
