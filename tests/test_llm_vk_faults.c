/* Failure paths of the Vulkan backend:
 *   - a missing Vulkan loader and "no device" (the default filter admits only real
 *     GPUs: lavapipe is not one; vk_devices "none") give a clean CPU-only run with
 *     the CPU's text; a malformed device list is LOOM_ERR_INVALID_ARG;
 *   - fault injection at EVERY device memory allocation of opening, loading and
 *     running stories260K with all layers on the device (weights, KV cache, compute
 *     buffer, staging and readback buffers, descriptor dummies, upload staging):
 *     each returns an error with a message (or is absorbed: the text is then still
 *     the CPU's), a weight buffer failure leaves the contract's memory report (the
 *     entry Failed with its attempted size), and after close no
 *     Vulkan memory object is alive and the validation layers (which report leaked
 *     objects at device destruction) have said nothing;
 *   - load progress and cancellation with Vulkan targets.
 * Skips (77) the device parts without a Vulkan device (the CPU-only parts run). */
#include "backend/backend_internal.h"
#include "backend/vulkan/vk.h"
#include "loom_model.h"
#include "quant/alloc.h"
#include "test_util.h"

#define NAME "test_llm_vk_faults"

static const char *model(void) { return test_path("models/stories260K.gguf"); }

static unsigned g_flags; /* extra LOOM_VK_* of the fault walk */

static loom_status open_m(int ngl, const char *devices, const char *loader, loom_model **m, loom_error *e) {
    loom_model_params p = loom_model_default_params();
    p.path = model();
    p.n_ctx = 64;
    p.n_batch = 16;
    p.n_threads = 1; /* one allocation order (the fault walk replays it) */
    p.n_gpu_layers = ngl;
    p.vk_devices = devices;
    p.vk_flags = LOOM_VK_VALIDATE | g_flags;
    (void)loader;
    return loom_model_open(&p, m, e);
}

/* greedy continuation of BOS + "Once"; LOOM_OK or the failing status */
static loom_status gen(loom_model *m, int32_t *out, int n, loom_error *e) {
    int32_t t = 1;
    for (int i = 0; i < n; i++) {
        loom_status s = loom_model_eval(m, &t, 1, false, e);
        if (s) return s;
        t = loom_model_argmax(m, -1);
        out[i] = t;
    }
    return LOOM_OK;
}

static void cpu_reference(int32_t *ref, int n) {
    loom_model *m = NULL;
    loom_error e = {0};
    CHECK(open_m(0, "none", NULL, &m, &e) == LOOM_OK);
    if (m) CHECK(gen(m, ref, n, &e) == LOOM_OK);
    loom_model_close(m);
}

/* ------------------------------------------------------------------ no Vulkan */

static void test_no_vulkan(const int32_t *ref, int n) {
    /* a loader that does not exist */
    loom_backend_params bp = loom_backend_default_params();
    bp.vk_devices = "all";
    bp.vk_loader = "libloom-test-no-such-vulkan.so.1";
    bp.n_gpu_layers = 99;
    loom_backend *be = NULL;
    loom_error e = {0};
    CHECK_MSG(loom_backend_open(model(), &bp, &be, &e) == LOOM_OK, "%s", e.msg);
    if (be) {
        CHECK_EQ_INT(loom_backend_device_count(be), 1);
        CHECK_MSG(strstr(be->vk_note, loom_vk_built() ? "loader" : "without"), "note: %s", be->vk_note);
        printf("  missing loader: CPU only (%s)\n", be->vk_note);
        loom_backend_close(be);
    }
    loom_device_info d[8];
    int nd = 0;
    CHECK(loom_devices_list(&bp, d, 8, &nd, &e) == LOOM_OK);
    CHECK_EQ_INT(nd, 1);
    /* default filter on a machine whose only device is a software one, and "none" */
    const char *filters[2] = {NULL, "none"};
    for (int f = 0; f < 2; f++) {
        loom_model *m = NULL;
        loom_model_params p = loom_model_default_params();
        p.path = model();
        p.n_ctx = 64;
        p.n_threads = 1;
        p.n_gpu_layers = 99;
        p.vk_devices = filters[f];
        CHECK_MSG(loom_model_open(&p, &m, &e) == LOOM_OK, "%s", e.msg);
        if (!m) continue;
        loom_backend *b2 = loom_model_backend(m);
        bool any_vk = false;
        for (int i = 1; i < loom_backend_device_count(b2); i++) any_vk = any_vk || b2->devices[i].vk;
        loom_device_info di[8];
        int ndi = 0;
        loom_backend_params lp = loom_backend_default_params();
        lp.vk_devices = filters[f];
        loom_devices_list(&lp, di, 8, &ndi, NULL);
        bool gpu_present = false;
        for (int i = 0; i < ndi; i++) gpu_present = gpu_present || (di[i].vk_index >= 0 && di[i].used);
        CHECK(any_vk == gpu_present);
        int32_t got[16];
        CHECK(gen(m, got, n, &e) == LOOM_OK);
        CHECK(!memcmp(got, ref, (size_t)n * sizeof *got));
        printf("  vk_devices %-6s: %s, text equals the CPU's\n", filters[f] ? filters[f] : "(gpus)",
               any_vk ? "on a Vulkan GPU" : "CPU only");
        loom_model_close(m);
    }
    /* malformed device lists */
    const char *bad[] = {"gpu", "0,,1", "1,1", "-1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        loom_backend_params q = loom_backend_default_params();
        q.vk_devices = bad[i];
        be = NULL;
        loom_status s = loom_backend_open(model(), &q, &be, &e);
        CHECK_MSG(s == LOOM_ERR_INVALID_ARG, "vk_devices '%s': %s", bad[i], loom_status_name(s));
        loom_backend_close(be);
    }
}

/* ------------------------------------------------------------------ fault walk */

static bool has_device(void) {
    loom_backend_params p = loom_backend_default_params();
    p.vk_devices = "all";
    loom_device_info d[16];
    int n = 0;
    if (loom_devices_list(&p, d, 16, &n, NULL)) return false;
    for (int i = 0; i < n; i++)
        if (d[i].vk_index >= 0 && d[i].used) return true;
    return false;
}

/* One complete run; returns the first failing status (the message must name it). */
static loom_status one_run(const int32_t *ref, int n, bool *msg_ok, bool *text_ok) {
    loom_model *m = NULL;
    loom_error e = {0};
    *msg_ok = true;
    *text_ok = true;
    loom_status s = open_m(99, "all", NULL, &m, &e);
    if (s) {
        *msg_ok = e.msg[0] != '\0';
        return s;
    }
    int32_t got[16];
    s = gen(m, got, n, &e);
    if (!s) *text_ok = !memcmp(got, ref, (size_t)n * sizeof *got);
    else *msg_ok = e.msg[0] != '\0';
    loom_model_close(m);
    return s;
}

static void test_fault_walk(const int32_t *ref, int n) {
    /* the device allocations of one run, as numbers of the library-wide sequence */
    long seq[512];
    const int64_t live0 = loom_vk_live_memory(), rep0 = loom_vk_process_reports();
    const long base = loom_alloc_count();
    loom_vk_alloc_trace(seq, 0, true);
    bool rok, tok;
    CHECK(one_run(ref, n, &rok, &tok) == LOOM_OK && tok);
    int nd = loom_vk_alloc_trace(seq, 512, false);
    if (nd > 512) nd = 512;
    CHECK(nd > 10);
    printf("  %s: %d device allocations in a run (of %ld library allocations)\n",
           g_flags ? "staging buffers" : "mapped memory", nd, loom_alloc_count() - base);
    int failed = 0, nomem = 0;
    for (int k = 0; k < nd; k++) {
        const long rel = seq[k] - base; /* 1-based position of that allocation in a run */
        const long at = loom_alloc_count();
        loom_alloc_fail_at(rel);
        loom_status s = one_run(ref, n, &rok, &tok);
        loom_alloc_fail_at(0);
        (void)at;
        if (s) failed++;
        if (s == LOOM_ERR_NOMEM) nomem++;
        CHECK_MSG(s != LOOM_OK || tok, "fault at device allocation %d: a wrong text", k);
        CHECK_MSG(rok, "fault at device allocation %d: an error without a message", k);
        CHECK_MSG(loom_vk_live_memory() == live0, "fault at device allocation %d: %lld memory objects leaked", k,
                  (long long)(loom_vk_live_memory() - live0));
    }
    printf("  fault at each: %d failed cleanly (%d with LOOM_ERR_NOMEM), %d absorbed\n", failed, nomem, nd - failed);
    CHECK(failed >= nd / 2);
    CHECK_EQ_INT(loom_vk_process_reports() - rep0, 0);
}

/* The memory report of a device weight allocation failure (contract §1.3). */
static void test_oom_report(void) {
    loom_backend_params bp = loom_backend_default_params();
    bp.vk_devices = "all";
    bp.n_gpu_layers = 99;
    bp.n_threads = 1;
    /* the first device allocation of an open is the weight buffer of the device */
    long seq[64];
    loom_vk_alloc_trace(seq, 0, true);
    const long base = loom_alloc_count();
    loom_backend *be = NULL;
    loom_error e = {0};
    CHECK(loom_backend_open(model(), &bp, &be, &e) == LOOM_OK);
    loom_backend_close(be);
    int nd = loom_vk_alloc_trace(seq, 64, false);
    long first_weight = -1;
    for (int i = 0; i < nd; i++) first_weight = first_weight < 0 ? seq[i] - base : first_weight;
    /* skip the device's own small buffers (created with it): the weight buffer is the
     * last device allocation of an open */
    if (nd > 0) first_weight = seq[nd - 1] - base;
    be = NULL;
    loom_backend_memory m;
    bp.nomem_report = &m;
    loom_alloc_fail_at(first_weight);
    loom_status s = loom_backend_open(model(), &bp, &be, &e);
    loom_alloc_fail_at(0);
    CHECK_MSG(s == LOOM_ERR_NOMEM, "weights on the device: %s (%s)", loom_status_name(s), e.msg);
    CHECK(be == NULL);
    if (s == LOOM_ERR_NOMEM) {
        bool failed = false;
        for (int d = 1; d < m.n_devices; d++)
            for (int l = 0; l < m.devices[d].n_layers; l++)
                if (m.devices[d].weights[l].status == LOOM_ALLOC_FAILED && m.devices[d].weights[l].size > 0)
                    failed = true;
        CHECK_MSG(failed, "the report has no Failed device weight entry with its size");
        printf("  device OOM on the weights: %s; report %s\n", loom_status_name(s), failed ? "Failed + size" : "?");
    }
    loom_backend_memory_free(&m);
}

/* ------------------------------------------------------------------ load */

typedef struct prog {
    uint64_t last, total;
    int calls;
    int cancel_at;
} prog;

static bool on_progress(uint64_t done, uint64_t total, void *u) {
    prog *p = u;
    p->calls++;
    if (done > p->last) p->last = done;
    p->total = total;
    return !(p->cancel_at && p->calls >= p->cancel_at);
}

static void test_load_progress(void) {
    for (int staging = 0; staging < 2; staging++) {
        loom_backend_params bp = loom_backend_default_params();
        bp.vk_devices = "all";
        bp.n_gpu_layers = 99;
        bp.no_mmap = true;
        bp.vk_flags = staging ? LOOM_VK_FORCE_STAGING : 0;
        loom_backend *be = NULL;
        loom_error e = {0};
        CHECK(loom_backend_open(model(), &bp, &be, &e) == LOOM_OK);
        if (!be) continue;
        prog p = {0};
        CHECK(loom_backend_load(be, on_progress, &p, &e) == LOOM_OK);
        CHECK(p.calls > 0 && p.last > 0 && p.last <= p.total);
        prog c = {0};
        c.cancel_at = 2;
        loom_status s = loom_backend_load(be, on_progress, &c, &e);
        CHECK_MSG(s == LOOM_ERR_CANCELLED, "cancel: %s", loom_status_name(s));
        CHECK(loom_backend_load(be, NULL, NULL, &e) == LOOM_OK); /* a later load retries */
        printf("  load %s: %d progress calls, cancel -> %s, reload ok\n", staging ? "staged" : "mapped", p.calls,
               loom_status_name(s));
        loom_backend_close(be);
    }
}

int main(void) {
    enum { N = 12 };
    int32_t ref[N];
    cpu_reference(ref, N);
    test_no_vulkan(ref, N);
    if (!has_device())
        return test_finish_part(NAME, "the device parts need a Vulkan device (install mesa-vulkan-drivers for lavapipe)");
    test_fault_walk(ref, N);
    g_flags = LOOM_VK_FORCE_STAGING; /* + staging / readback / upload buffers */
    test_fault_walk(ref, N);
    g_flags = 0;
    test_oom_report();
    test_load_progress();
    return test_finish(NAME);
}
