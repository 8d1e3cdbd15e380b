/* I/O failure injection at every tensor of a load (stories260K, no_mmap, 1 thread
 * so the load order is the tensor order):
 *   1. model API: the k-th chunk read fails (EIO through the read hook) for every k
 *      of a clean load -> LOOM_ERR_IO naming the tensor; over the walk every tensor
 *      of the file is named; nothing leaks (ASan) and *out is NULL.
 *   2. backend API: the file is cut in the middle of tensor i after open, for every
 *      i -> the load returns LOOM_ERR_IO naming exactly the first tensor (in load
 *      order) that reaches past the cut, the backend stays closable, and once the
 *      file is restored a retry of the load succeeds.
 *   3. model API on a file cut in the middle of tensor i before open -> an error
 *      naming that tensor. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/fault.h"
#include "loom_model.h"
#include "test_util.h"

#define MODEL "models/stories260K.gguf"

static unsigned char *g_bytes;
static size_t g_size;
static char g_copy[64];

static bool write_prefix(size_t n) {
    int fd = open(g_copy, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) return false;
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(fd, g_bytes + off, n - off);
        if (w <= 0) break;
        off += (size_t)w;
    }
    close(fd);
    return off == n;
}

typedef struct tinfo {
    char name[LOOM_GGUF_MAX_NAME];
    uint64_t off, size;
} tinfo;

static tinfo *g_t;
static int64_t g_nt;

static void test_truncate_after_open(void) {
    int n_ok = 0;
    for (int64_t i = 0; i < g_nt; i++) {
        if (g_t[i].size < 2) continue;
        CHECK(write_prefix(g_size));
        loom_backend_params bp = loom_backend_default_params();
        bp.no_mmap = true;
        bp.n_threads = 1;
        loom_backend *be = NULL;
        loom_error e = {0};
        CHECK(loom_backend_open(g_copy, &bp, &be, &e) == LOOM_OK);
        if (!be) continue;
        uint64_t cut = g_t[i].off + g_t[i].size / 2;
        CHECK(truncate(g_copy, (off_t)cut) == 0);
        /* the first tensor in load (= index) order that reaches past the cut */
        int64_t want = -1;
        for (int64_t j = 0; j < g_nt && want < 0; j++)
            if (g_t[j].off + g_t[j].size > cut) want = j;
        loom_error le = {0};
        loom_status s = loom_backend_load(be, NULL, NULL, &le);
        char quoted[LOOM_GGUF_MAX_NAME + 4];
        snprintf(quoted, sizeof quoted, "'%s'", want >= 0 ? g_t[want].name : "?");
        CHECK_MSG(s == LOOM_ERR_IO, "cut in %s: %s %s", g_t[i].name, loom_status_name(s), le.msg);
        CHECK_MSG(strstr(le.msg, quoted) != NULL, "cut in %s: message '%s' does not name %s", g_t[i].name,
                  le.msg, quoted);
        /* restore the file: the same backend loads it on retry */
        CHECK(write_prefix(g_size));
        loom_error re = {0};
        s = loom_backend_load(be, NULL, NULL, &re);
        CHECK_MSG(s == LOOM_OK, "retry after restoring: %s", re.msg);
        loom_backend_close(be);
        n_ok++;
    }
    printf("truncated after open: %d tensors cut, each named\n", n_ok);
}

static void test_truncate_before_open(void) {
    int n = 0;
    for (int64_t i = 0; i < g_nt; i++) {
        if (g_t[i].size < 2) continue;
        uint64_t cut = g_t[i].off + g_t[i].size / 2;
        CHECK(write_prefix(cut));
        loom_model_params p = loom_model_default_params();
        p.path = g_copy;
        p.no_mmap = true;
        p.n_threads = 1;
        p.n_ctx = 64;
        loom_model *m = (loom_model *)1;
        loom_error e = {0};
        loom_status s = loom_model_open(&p, &m, &e);
        CHECK_MSG(s == LOOM_ERR_FORMAT || s == LOOM_ERR_IO, "cut in %s: %s %s", g_t[i].name,
                  loom_status_name(s), e.msg);
        CHECK(m == NULL);
        CHECK_MSG(strstr(e.msg, g_t[i].name) != NULL, "cut in %s: message '%s'", g_t[i].name, e.msg);
        if (s == LOOM_OK) loom_model_close(m);
        n++;
    }
    printf("truncated before open: %d files, each rejected naming the tensor\n", n);
}

static void test_read_walk(void) {
    loom_model_params p = loom_model_default_params();
    p.path = test_path(MODEL);
    p.no_mmap = true;
    p.n_threads = 1;
    p.n_ctx = 64;
    loom_model *m = NULL;
    loom_error e = {0};
    long r0 = loom_fault_read_count();
    CHECK_MSG(loom_model_open(&p, &m, &e) == LOOM_OK, "%s", e.msg);
    long reads = loom_fault_read_count() - r0;
    loom_model_close(m);
    CHECK(reads >= g_nt);
    bool *named = calloc((size_t)g_nt, 1);
    for (long k = 1; k <= reads && named; k++) {
        loom_fault_read_fail_at(k);
        loom_error le = {0};
        m = (loom_model *)1;
        loom_status s = loom_model_open(&p, &m, &le);
        loom_fault_read_fail_at(0);
        CHECK_MSG(s == LOOM_ERR_IO, "read %ld: %s %s", k, loom_status_name(s), le.msg);
        CHECK(m == NULL);
        if (s == LOOM_OK) loom_model_close(m);
        bool hit = false;
        for (int64_t i = 0; i < g_nt; i++) {
            char quoted[LOOM_GGUF_MAX_NAME + 4];
            snprintf(quoted, sizeof quoted, "'%s'", g_t[i].name);
            if (strstr(le.msg, quoted)) named[i] = hit = true;
        }
        CHECK_MSG(hit, "read %ld: message names no tensor: %s", k, le.msg);
    }
    int64_t n_named = 0;
    for (int64_t i = 0; named && i < g_nt; i++) {
        n_named += named[i];
        CHECK_MSG(named[i], "no read failure named %s", g_t[i].name);
    }
    printf("read-failure walk: %ld chunk reads, %lld of %lld tensors named\n", reads, (long long)n_named,
           (long long)g_nt);
    free(named);
}

int main(void) {
    FILE *f = fopen(test_path(MODEL), "rb");
    CHECK(f != NULL);
    if (!f) return test_finish("test_llm_fault_io");
    fseek(f, 0, SEEK_END);
    g_size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    g_bytes = malloc(g_size);
    CHECK(g_bytes && fread(g_bytes, 1, g_size, f) == g_size);
    fclose(f);
    snprintf(g_copy, sizeof g_copy, "/tmp/loom_test_fault_io_%d.gguf", (int)getpid());

    loom_gguf *g = NULL;
    loom_error e = {0};
    CHECK(loom_gguf_open(test_path(MODEL), NULL, &g, &e) == LOOM_OK);
    if (!g) return test_finish("test_llm_fault_io");
    g_nt = loom_gguf_tensor_count(g);
    g_t = calloc((size_t)g_nt, sizeof *g_t);
    for (int64_t i = 0; i < g_nt; i++) {
        const loom_gguf_tensor_info *ti = loom_gguf_tensor(g, i);
        snprintf(g_t[i].name, sizeof g_t[i].name, "%s", ti->name);
        g_t[i].off = ti->file_offset;
        g_t[i].size = ti->size;
    }
    loom_gguf_close(g);

    if (loom_fault_injection_enabled()) test_read_walk();
    test_truncate_after_open();
    test_truncate_before_open();
    unlink(g_copy);
    free(g_t);
    free(g_bytes);
    return test_finish_part("test_llm_fault_io", loom_fault_injection_enabled() ? NULL : TEST_NO_FAULT_INJECTION);
}
