/* libFuzzer target for the GGUF reader: parse an in-memory image, then touch every
 * KV (all getters, every array element up to a cap) and every tensor (info, data
 * bytes through loom_gguf_read_tensor). Build: see fuzz/README.md. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loom_gguf.h"

static volatile uint64_t g_sink;

static void walk_kv(const loom_gguf *g, int64_t i) {
    const char *key = loom_gguf_kv_key(g, i);
    g_sink += strlen(key);
    if (loom_gguf_find_key(g, key) != i) abort(); /* lookup must agree with iteration */
    loom_gguf_vtype t = loom_gguf_kv_type(g, i);
    int64_t iv;
    double dv;
    loom_gguf_str s;
    if (loom_gguf_kv_int(g, i, &iv) == LOOM_OK) g_sink += (uint64_t)iv;
    if (loom_gguf_kv_float(g, i, &dv) == LOOM_OK) g_sink += (uint64_t)(dv == dv);
    if (loom_gguf_kv_str(g, i, &s) == LOOM_OK && s.len) g_sink += (uint8_t)s.ptr[s.len - 1];
    uint32_t u32;
    bool b;
    if (loom_gguf_get_u32(g, key, &u32) == LOOM_OK) g_sink += u32;
    if (loom_gguf_get_bool(g, key, &b) == LOOM_OK) g_sink += b;
    if (t != LOOM_GGUF_ARRAY) return;
    loom_gguf_vtype et;
    const void *data;
    uint64_t len;
    if (loom_gguf_kv_arr(g, i, &et, &data, &len) != LOOM_OK) abort();
    for (uint64_t j = 0; j < len && j < 4096; j++) {
        if (et == LOOM_GGUF_STRING) {
            if (loom_gguf_kv_arr_str(g, i, j, &s) != LOOM_OK) abort();
            if (s.len) g_sink += (uint8_t)s.ptr[0] + (uint8_t)s.ptr[s.len - 1];
        } else if (loom_gguf_kv_arr_int(g, i, j, &iv) == LOOM_OK) {
            g_sink += (uint64_t)iv;
        } else if (loom_gguf_kv_arr_float(g, i, j, &dv) == LOOM_OK) {
            g_sink += (uint64_t)(dv == dv);
        } else if (et == LOOM_GGUF_BOOL) {
            g_sink += ((const uint8_t *)data)[j];
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    loom_gguf *g = NULL;
    loom_error err = {0};
    if (loom_gguf_open_memory(data, size, &g, &err) != LOOM_OK) {
        if (g != NULL || err.msg[0] == '\0') abort(); /* failures must explain themselves */
        return 0;
    }
    for (int64_t i = 0; i < loom_gguf_kv_count(g); i++) walk_kv(g, i);
    uint8_t buf[256];
    for (int64_t i = 0; i < loom_gguf_tensor_count(g); i++) {
        const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, i);
        if (loom_gguf_find_tensor(g, ti->name) != i) abort();
        if (ti->file_offset + ti->size > size) abort(); /* must lie inside the image */
        const uint8_t *p = loom_gguf_tensor_data(g, i);
        if (ti->size) g_sink += p[0] + p[ti->size - 1];
        uint64_t n = ti->size < sizeof buf ? ti->size : sizeof buf;
        if (loom_gguf_read_tensor(g, i, ti->size - n, buf, n, NULL) != LOOM_OK) abort();
        if (loom_gguf_read_tensor(g, i, ti->size, buf, 1, NULL) != LOOM_ERR_RANGE) abort();
    }
    loom_gguf_close(g);
    return 0;
}
