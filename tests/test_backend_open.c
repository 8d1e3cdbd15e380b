/* Open/accounting/load/cancel on the bundled stories260K model (5 blocks, F32).
 * Expected sizes are computed by hand from the tensor shapes:
 *   per block: q 64x64, k 64x32, v 64x32, o 64x64, 2 norms 64, gate/up 64x172, down 172x64
 *     = 4*(4096+2048+2048+4096) + 2*256 + 3*44032 = 181760 bytes
 *   output layer: output_norm 64 + output 64x512 = 256 + 131072 = 131328
 *   input weights: token_embd 64x512 = 131072 */
#include "test_util.h"
#include "backend/backend_internal.h"
#include "backend/fault.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#define BLK 181760ull
#define OUTL 131328ull
#define INPW 131072ull

static const char *model(void) { return test_path("models/stories260K.gguf"); }

static const float *g_split = NULL; /* explicit tensor_split for the next open_be */
static int g_nsplit = 0;
static loom_backend_memory *g_report = NULL; /* nomem_report for the next open_be */

static loom_backend *open_be(const char *spec, int ngl, bool dry, bool no_mmap, loom_status *st,
                             loom_error *e) {
    loom_sim_device d[4];
    int n = 0;
    if (spec) CHECK(loom_sim_devices_parse(spec, d, 4, &n, NULL) == LOOM_OK);
    loom_backend_params p = loom_backend_default_params();
    p.sim_devices = n ? d : NULL;
    p.n_sim_devices = n;
    p.n_gpu_layers = ngl;
    p.dry_run = dry;
    p.no_mmap = no_mmap;
    p.n_threads = 3;
    p.tensor_split = g_split;
    p.n_tensor_split = g_nsplit;
    p.nomem_report = g_report;
    loom_backend *be = (loom_backend *)&p; /* not NULL: open must clear it on failure */
    *st = loom_backend_open(model(), &p, &be, e);
    if (*st) CHECK_MSG(be == NULL, "failed open left *out set (status %d)", (int)*st);
    return be;
}

static uint64_t report_sum_dev(const loom_device_memory *dm) {
    uint64_t s = 0;
    for (int i = 0; i < dm->n_layers; i++) s += dm->weights[i].size;
    return s;
}

static void test_cpu_only(bool no_mmap) {
    loom_status st;
    loom_error e = {0};
    loom_backend *be = open_be(NULL, 99, false, no_mmap, &st, &e);
    CHECK_MSG(st == LOOM_OK, "%s", e.msg);
    if (!be) return;
    CHECK_EQ_INT(loom_backend_block_count(be), 5);
    CHECK_EQ_INT(loom_backend_device_count(be), 1);
    CHECK(!strcmp(loom_backend_arch(be), "llama"));
    for (int i = 0; i <= 5; i++) CHECK_EQ_INT(loom_backend_layer_device(be, i), 0);
    CHECK_EQ_INT(loom_backend_layer_device(be, 6), -1);
    loom_backend_memory m;
    CHECK(loom_backend_memory_get(be, &m) == LOOM_OK);
    CHECK_EQ_INT(m.n_devices, 1);
    CHECK_EQ_INT(m.input_weights.size, INPW);
    CHECK_EQ_INT(m.input_weights.status, LOOM_ALLOC_ALLOCATED);
    CHECK(!strcmp(m.devices[0].name, "CPU"));
    CHECK_EQ_INT(m.devices[0].n_layers, 6);
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(m.devices[0].weights[i].size, BLK);
        CHECK_EQ_INT(m.devices[0].weights[i].status, LOOM_ALLOC_ALLOCATED);
        CHECK_EQ_INT(m.devices[0].cache[i].size, 0);
    }
    CHECK_EQ_INT(m.devices[0].weights[5].size, OUTL);
    CHECK_EQ_INT(loom_backend_memory_total(&m), INPW + 5 * BLK + OUTL);
    /* accounting equals what was actually allocated (+ mapped bytes) */
    uint64_t mapped = 0;
    for (int64_t i = 0; i < be->n_w; i++)
        if (be->w[i].mapped) mapped += be_round_up(be->w[i].nbytes, 32);
    CHECK_EQ_INT(atomic_load(&be->devices[0].used) + mapped, loom_backend_memory_total(&m));
    if (no_mmap) CHECK_EQ_INT(mapped, 0);
    loom_backend_memory_free(&m);
    /* tensors: file shapes/types, weight flag */
    loom_tensor *t = loom_backend_get_tensor(be, "blk.2.ffn_down.weight");
    CHECK(t && t->ne[0] == 172 && t->ne[1] == 64 && t->type == LOOM_TYPE_F32 && (t->flags & LOOM_TF_WEIGHT));
    CHECK(loom_backend_get_tensor(be, "blk.5.ffn_down.weight") == NULL);
    CHECK(loom_backend_get_tensor(be, "rope_freqs.weight") == NULL);
    loom_backend_close(be);
}

static void test_sim_split(void) {
    loom_status st;
    loom_error e = {0};
    /* N=6 over two equal devices: f = i/6 -> layers 0,1,2 on gpu0; 3,4 and output on gpu1 */
    loom_backend *be = open_be("gpu0=1MiB,gpu1=1MiB", 6, false, true, &st, &e);
    CHECK_MSG(st == LOOM_OK, "%s", e.msg);
    if (!be) return;
    int expect[6] = {1, 1, 1, 2, 2, 2};
    for (int i = 0; i <= 5; i++) CHECK_EQ_INT(loom_backend_layer_device(be, i), expect[i]);
    CHECK(!strcmp(loom_backend_device_name(be, 1), "gpu0"));
    loom_backend_memory m;
    CHECK(loom_backend_memory_get(be, &m) == LOOM_OK);
    CHECK_EQ_INT(m.n_devices, 3);
    CHECK_EQ_INT(m.input_weights.size, INPW);
    CHECK_EQ_INT(report_sum_dev(&m.devices[0]), 0);
    CHECK_EQ_INT(report_sum_dev(&m.devices[1]), 3 * BLK);
    CHECK_EQ_INT(report_sum_dev(&m.devices[2]), 2 * BLK + OUTL);
    CHECK_EQ_INT(m.devices[2].weights[5].size, OUTL);
    CHECK_EQ_INT(m.devices[1].kind, LOOM_DEVICE_GPU);
    CHECK_EQ_INT(m.devices[1].total_bytes, 1u << 20);
    for (int d = 0; d < 3; d++)
        CHECK_EQ_INT(atomic_load(&be->devices[d].used),
                     report_sum_dev(&m.devices[d]) + (d == 0 ? INPW : 0));
    loom_backend_memory_free(&m);
    loom_tensor *t = loom_backend_get_tensor(be, "blk.4.attn_q.weight");
    CHECK(t && t->device == 2 && t->layer == 4);
    t = loom_backend_get_tensor(be, "token_embd.weight");
    CHECK(t && t->device == 0 && t->layer == -1);

    /* load: progress reaches total, bytes equal the file's */
    loom_error le = {0};
    CHECK_MSG(loom_backend_load(be, NULL, NULL, &le) == LOOM_OK, "%s", le.msg);
    const loom_gguf *g = loom_backend_gguf(be);
    bool same = true;
    unsigned char *buf = malloc(200000);
    for (int64_t i = 0; i < loom_gguf_tensor_count(g); i++) {
        const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, i);
        loom_tensor *w = loom_backend_get_tensor(be, ti->name);
        if (!w || loom_gguf_read_tensor(g, i, 0, buf, ti->size, NULL) || memcmp(buf, w->data, ti->size))
            same = false;
    }
    free(buf);
    CHECK(same);
    loom_backend_close(be);
}

static void test_free_split(void) {
    loom_status st;
    loom_error e = {0};
    /* free-memory split 3:1 -> [0.75, 1]; N=6: f = i/6 < 0.75 for i <= 4 -> gpu0; output -> gpu1 */
    loom_backend *be = open_be("gpu0=3MiB,gpu1=1MiB", 6, true, true, &st, &e);
    CHECK_MSG(st == LOOM_OK, "%s", e.msg);
    if (!be) return;
    int expect[6] = {1, 1, 1, 1, 1, 2};
    for (int i = 0; i <= 5; i++) CHECK_EQ_INT(loom_backend_layer_device(be, i), expect[i]);
    loom_backend_close(be);
    /* N=3 (<= blocks): start 2, f = 0, 1/3, 2/3 -> all gpu0; output on the CPU */
    be = open_be("gpu0=3MiB,gpu1=1MiB", 3, true, true, &st, &e);
    if (!be) return;
    int expect3[6] = {0, 0, 1, 1, 1, 0};
    for (int i = 0; i <= 5; i++) CHECK_EQ_INT(loom_backend_layer_device(be, i), expect3[i]);
    loom_backend_close(be);
}

static void test_nomem(void) {
    loom_status st;
    loom_error e = {0};
    /* split 1:1 -> gpu0 gets 3 blocks = 545280 bytes but holds only 500000 */
    static const float one_one[2] = {1, 1};
    g_split = one_one;
    g_nsplit = 2;
    loom_backend_memory m;
    memset(&m, 0xA5, sizeof m); /* garbage in: open zeroes it first */
    g_report = &m;
    loom_backend *be = open_be("gpu0=500000,gpu1=1MiB", 6, false, true, &st, &e);
    CHECK_EQ_INT(st, LOOM_ERR_NOMEM);
    CHECK(strstr(e.msg, "gpu0") != NULL);
    CHECK(be == NULL); /* one rule for every constructor: *out is NULL on failure */
    /* the report of the failed open (contract ErrNoMem) comes through nomem_report */
    CHECK_EQ_INT(m.n_devices, 3);
    if (m.n_devices == 3) {
        for (int i = 0; i < 3; i++) {
            CHECK_EQ_INT(m.devices[1].weights[i].size, BLK);
            CHECK_EQ_INT(m.devices[1].weights[i].status, LOOM_ALLOC_FAILED);
        }
        CHECK_EQ_INT(m.devices[2].weights[3].status, LOOM_ALLOC_ALLOCATED);
        CHECK_EQ_INT(m.devices[2].weights[5].size, OUTL);
    }
    loom_backend_memory_free(&m);

    /* dry run of the same plan: no allocation, sizes reported, nothing failed; the
     * report stays zeroed (free is safe) */
    be = open_be("gpu0=500000,gpu1=1MiB", 6, true, true, &st, &e);
    CHECK_EQ_INT(st, LOOM_OK);
    CHECK_EQ_INT(m.n_devices, 0);
    CHECK(m.devices == NULL);
    loom_backend_memory_free(&m);
    g_report = NULL;
    if (be) {
        CHECK(loom_backend_memory_get(be, &m) == LOOM_OK);
        CHECK_EQ_INT(m.devices[1].weights[0].size, BLK);
        CHECK_EQ_INT(m.devices[1].weights[0].status, LOOM_ALLOC_UNALLOCATED);
        CHECK_EQ_INT(atomic_load(&be->devices[1].used), 0);
        CHECK_EQ_INT(atomic_load(&be->devices[0].used), 0);
        loom_backend_memory_free(&m);
        CHECK(loom_backend_load(be, NULL, NULL, NULL) == LOOM_ERR_INVALID_ARG);
        loom_backend_close(be);
    }
    g_split = NULL;
    g_nsplit = 0;
    if (loom_fault_injection_enabled()) {
    /* Every allocation of a real open fails in turn: each is NOMEM with *out NULL, and
     * the one that is the CPU weight buffer leaves a report saying so (input weights
     * and CPU layers Failed, gpu0's layers Allocated). */
    long before = loom_fault_alloc_count();
    be = open_be("gpu0=1MiB", 3, false, true, &st, &e);
    long n_allocs = loom_fault_alloc_count() - before;
    CHECK_EQ_INT(st, LOOM_OK);
    loom_backend_close(be);
    int cpu_buffer_failures = 0;
    for (long k = 1; k <= n_allocs; k++) {
        loom_error fe = {0};
        g_report = &m;
        loom_fault_alloc_fail_at(k);
        be = open_be("gpu0=1MiB", 3, false, true, &st, &fe);
        loom_fault_alloc_fail_at(0);
        g_report = NULL;
        if (st == LOOM_OK) { /* an allocation whose failure open survives (none today) */
            loom_backend_close(be);
            continue;
        }
        CHECK_MSG(st == LOOM_ERR_NOMEM, "allocation %ld: %s", k, fe.msg);
        CHECK(be == NULL);
        if (m.n_devices == 2 && m.input_weights.status == LOOM_ALLOC_FAILED) {
            cpu_buffer_failures++;
            CHECK_EQ_INT(m.devices[0].weights[0].status, LOOM_ALLOC_FAILED);
            CHECK_EQ_INT(m.devices[1].weights[4].status, LOOM_ALLOC_ALLOCATED);
        }
        loom_backend_memory_free(&m);
    }
    CHECK_MSG(cpu_buffer_failures == 1, "%d of %ld injected failures hit the CPU buffer", cpu_buffer_failures,
              n_allocs);
    }
}

typedef struct prog {
    uint64_t last, total, stop_at;
    int calls;
    int sleep_us;
} prog;

static bool on_progress(uint64_t done, uint64_t total, void *user) {
    prog *p = user;
    __atomic_fetch_add(&p->calls, 1, __ATOMIC_RELAXED);
    uint64_t l = __atomic_load_n(&p->last, __ATOMIC_RELAXED);
    while (done > l && !__atomic_compare_exchange_n(&p->last, &l, done, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    __atomic_store_n(&p->total, total, __ATOMIC_RELAXED);
    if (p->sleep_us) usleep((useconds_t)p->sleep_us);
    return !(p->stop_at && done >= p->stop_at);
}

static void test_progress_cancel(void) {
    uint64_t total = 0;
    for (int pass = 0; pass < 2; pass++) {
        loom_status st;
        loom_error e = {0};
        loom_backend *be = open_be("gpu0=1MiB,gpu1=1MiB", 6, false, pass == 1, &st, &e);
        CHECK_MSG(st == LOOM_OK, "%s", e.msg);
        if (!be) return;
        prog p = {0};
        CHECK(loom_backend_load(be, on_progress, &p, NULL) == LOOM_OK);
        const loom_gguf *g = loom_backend_gguf(be);
        total = loom_gguf_file_size(g) - loom_gguf_data_offset(g);
        CHECK_EQ_INT(p.total, total);
        CHECK_EQ_INT(p.last, total); /* every tensor size is a multiple of 32: no padding */
        CHECK(p.calls >= 48);
        loom_backend_close(be);
    }
    const double pct[3] = {0.10, 0.50, 0.99};
    for (int k = 0; k < 3; k++) {
        loom_status st;
        loom_error e = {0};
        loom_backend *be = open_be("gpu0=1MiB,gpu1=1MiB", 6, false, k == 1, &st, &e);
        if (!be) continue;
        prog p = {0};
        p.stop_at = (uint64_t)(pct[k] * (double)total);
        loom_error le = {0};
        CHECK_EQ_INT(loom_backend_load(be, on_progress, &p, &le), LOOM_ERR_CANCELLED);
        CHECK(strstr(le.msg, "cancel") != NULL);
        /* a later load succeeds */
        CHECK(loom_backend_load(be, NULL, NULL, NULL) == LOOM_OK);
        loom_backend_close(be);
    }
}

static void *canceller(void *arg) {
    usleep(30000);
    struct timespec *ts = (struct timespec *)((void **)arg)[1];
    clock_gettime(CLOCK_MONOTONIC, ts);
    loom_backend_cancel(((void **)arg)[0]);
    return NULL;
}

static void test_cancel_thread(void) {
    loom_status st;
    loom_error e = {0};
    loom_backend *be = open_be(NULL, 0, false, true, &st, &e);
    if (!be) return;
    prog p = {0};
    p.sleep_us = 5000; /* ~48 chunks * 5 ms: the load takes > 80 ms with 3 workers */
    struct timespec t0, t1;
    void *args[2] = {be, &t0};
    pthread_t th;
    pthread_create(&th, NULL, canceller, args);
    loom_status s = loom_backend_load(be, on_progress, &p, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_join(th, NULL);
    CHECK_EQ_INT(s, LOOM_ERR_CANCELLED);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    CHECK_MSG(ms < 250, "cancel took %.1f ms", ms);
    loom_backend_close(be);
}

static void test_truncated(void) {
    /* copy the model, open it, then cut the file: the load must name the tensor */
    char path[] = "/tmp/loom_trunc_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    FILE *in = fopen(model(), "rb");
    char buf[65536];
    size_t n;
    while (in && (n = fread(buf, 1, sizeof buf, in)) > 0) CHECK(write(fd, buf, n) == (ssize_t)n);
    if (in) fclose(in);
    loom_backend_params pr = loom_backend_default_params();
    pr.no_mmap = true;
    pr.n_threads = 2;
    loom_backend *be = NULL;
    loom_error e = {0};
    CHECK(loom_backend_open(path, &pr, &be, &e) == LOOM_OK);
    if (be) {
        const loom_gguf *g = loom_backend_gguf(be);
        int64_t last = loom_gguf_tensor_count(g) - 1;
        const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, last); /* blk.4.ffn_norm.weight */
        CHECK(ftruncate(fd, (off_t)(ti->file_offset + 100)) == 0);
        loom_error le = {0};
        CHECK_EQ_INT(loom_backend_load(be, NULL, NULL, &le), LOOM_ERR_IO);
        CHECK_MSG(strstr(le.msg, ti->name) != NULL, "message: %s", le.msg);
        loom_backend_close(be);
    }
    close(fd);
    unlink(path);
    if (!loom_fault_injection_enabled()) return;
    /* a read error in the middle of the load */
    loom_status st;
    be = open_be("gpu0=1MiB", 2, false, true, &st, &e);
    if (be) {
        loom_fault_read_fail_at(20);
        loom_error le = {0};
        CHECK_EQ_INT(loom_backend_load(be, NULL, NULL, &le), LOOM_ERR_IO);
        CHECK(strstr(le.msg, "tensor '") != NULL);
        loom_fault_read_fail_at(0);
        CHECK(loom_backend_load(be, NULL, NULL, NULL) == LOOM_OK);
        loom_backend_close(be);
    }
}

/* The library reads no LOOM_* variable meant for the CLI (issue #14 item 4): with
 * LOOM_SIM_DEVICES set and no sim_devices passed, the backend has the CPU only. */
static void test_env_ignored(void) {
    setenv("LOOM_SIM_DEVICES", "gpu0=1GiB,gpu1=1GiB", 1);
    loom_status st;
    loom_error e = {0};
    loom_backend *be = open_be(NULL, 99, true, true, &st, &e);
    CHECK_MSG(st == LOOM_OK, "%s", e.msg);
    if (be) {
        CHECK_EQ_INT(loom_backend_device_count(be), 1);
        CHECK_EQ_INT(loom_backend_layer_device(be, 0), 0);
        loom_backend_close(be);
    }
    unsetenv("LOOM_SIM_DEVICES");
}

int main(void) {
    test_env_ignored();
    test_cpu_only(true);
    test_cpu_only(false);
    test_sim_split();
    test_free_split();
    test_nomem();
    test_progress_cancel();
    test_cancel_thread();
    test_truncated();
    return test_finish_part("test_backend_open", loom_fault_injection_enabled() ? NULL : TEST_NO_FAULT_INJECTION);
}
