/* vk_stub.c - the Vulkan device kind in builds without it (LOOM_VULKAN=OFF, or no
 * Vulkan headers / glslc at configure time): no devices, nothing to run. */
#include "backend/vulkan/vk.h"

#include <stdio.h>

bool loom_vk_built(void) { return false; }

loom_status loom_vk_open(const loom_backend_params *p, loom_vk **out, char *note, size_t note_size,
                         loom_error *err) {
    (void)p;
    (void)err;
    *out = NULL;
    if (note_size) snprintf(note, note_size, "built without the Vulkan backend");
    return LOOM_OK;
}
void loom_vk_close(loom_vk *vk) { (void)vk; }
int loom_vk_device_count(const loom_vk *vk) { (void)vk; return 0; }
loom_vk_dev *loom_vk_device(loom_vk *vk, int i) { (void)vk; (void)i; return NULL; }
int64_t loom_vk_reports(const loom_vk *vk) { (void)vk; return 0; }

loom_status loom_vk_list(const loom_backend_params *p, loom_device_info *out, int max, int *n, char *note,
                         size_t note_size, loom_error *err) {
    (void)p; (void)out; (void)max; (void)n; (void)err;
    if (note_size) snprintf(note, note_size, "built without the Vulkan backend");
    return LOOM_OK;
}

const char *loom_vk_dev_name(const loom_vk_dev *d) { (void)d; return ""; }
const char *loom_vk_dev_uuid(const loom_vk_dev *d) { (void)d; return ""; }
uint64_t loom_vk_dev_total(const loom_vk_dev *d) { (void)d; return 0; }
uint64_t loom_vk_dev_free(const loom_vk_dev *d) { (void)d; return 0; }
uint64_t loom_vk_dev_chunk(const loom_vk_dev *d) { (void)d; return UINT64_MAX; }

void *loom_vk_alloc(loom_vk_dev *d, size_t size) { (void)d; (void)size; return NULL; }
void loom_vk_free(loom_vk_dev *d, void *p) { (void)d; (void)p; }
loom_status loom_vk_write(loom_vk_dev *d, void *dst, const void *src, size_t n) {
    (void)d; (void)dst; (void)src; (void)n;
    return LOOM_ERR_UNSUPPORTED;
}
loom_status loom_vk_read(loom_vk_dev *d, void *dst, const void *src, size_t n) {
    (void)d; (void)dst; (void)src; (void)n;
    return LOOM_ERR_UNSUPPORTED;
}
loom_status loom_vk_fill_zero(loom_vk_dev *d, void *dst, size_t n) {
    (void)d; (void)dst; (void)n;
    return LOOM_ERR_UNSUPPORTED;
}
bool loom_vk_owns(const loom_vk_dev *d, const void *p) { (void)d; (void)p; return false; }

loom_status loom_vk_uploader_new(loom_vk_dev *d, loom_vk_uploader **out) {
    (void)d;
    *out = NULL;
    return LOOM_ERR_UNSUPPORTED;
}
loom_status loom_vk_upload(loom_vk_uploader *u, void *dst, const void *src, size_t n) {
    (void)u; (void)dst; (void)src; (void)n;
    return LOOM_ERR_UNSUPPORTED;
}
loom_status loom_vk_uploader_done(loom_vk_uploader *u, bool flush) { (void)u; (void)flush; return LOOM_OK; }

bool loom_vk_supports(const loom_vk_dev *d, const loom_tensor *t) { (void)d; (void)t; return false; }
size_t loom_vk_work_size(const loom_vk_dev *d, loom_tensor *const *nodes, int64_t n) {
    (void)d; (void)nodes; (void)n;
    return 0;
}
loom_status loom_vk_run(loom_vk_dev *d, const loom_vk_run_desc *r, loom_error *err) {
    (void)d; (void)r;
    return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "built without the Vulkan backend");
}
void loom_vk_get_stats(const loom_vk_dev *d, loom_vk_stats *out) {
    (void)d;
    *out = (loom_vk_stats){0};
}

int64_t loom_vk_live_memory(void) { return 0; }
int64_t loom_vk_process_reports(void) { return 0; }
int loom_vk_alloc_trace(long *out, int max, bool reset) {
    (void)out; (void)max; (void)reset;
    return 0;
}
