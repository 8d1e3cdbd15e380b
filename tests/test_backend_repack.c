/* Load-time CPU weight repacking (loom_backend_params.repack_filter):
 *  - which weights are repacked: filter true, CPU, a type/shape the active kernel
 *    level has a layout for; never without a filter or with LOOM_REPACK=0; mapped
 *    and pread loads alike;
 *  - the loaded bytes: the file bytes, or exactly loom_repack_rows of them;
 *  - a matmul on a repacked weight through a backend context matches a float64
 *    product of the dequantized weights; other uses fail at graph build;
 *  - an allocation failure at every allocation of open + load returns an error
 *    (never a crash or leak) and the next attempt succeeds. */
#include "backend/backend_internal.h"
#include "quant/alloc.h"
#include "quant/repack.h"
#include "cpu/kernels.h"
#include "loom_gguf.h"
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#define K 96 /* 3 blocks */
typedef struct tspec {
    const char *name;
    loom_type type;
    int64_t rows;
    bool want; /* the filter says yes */
} tspec;
static const tspec g_t[] = {
    {"token_embd.weight", LOOM_TYPE_Q8_0, 32, false},   /* filter says no */
    {"blk.0.attn_q.weight", LOOM_TYPE_Q4_0, 48, true},  /* repacked */
    {"blk.0.ffn_up.weight", LOOM_TYPE_Q8_0, 32, true},  /* repacked */
    {"blk.0.attn_k.weight", LOOM_TYPE_Q4_0, 24, true},  /* rows not a multiple of 16 */
    {"blk.0.ffn_down.weight", LOOM_TYPE_Q3_K, 32, true},/* no layout for the type (K 256) */
    {"blk.0.ffn_gate.weight", LOOM_TYPE_Q4_K, 32, true},/* repacked where the level has Q4_K's (K 256) */
    {"blk.0.attn_norm.weight", LOOM_TYPE_F32, 1, false},
};
#define NT (int)(sizeof g_t / sizeof g_t[0])
static uint8_t *g_bytes[NT];
static size_t g_size[NT];
static int g_calls;

static bool filt(const char *name, void *user) {
    (void)user;
    g_calls++;
    for (int i = 0; i < NT; i++)
        if (!strcmp(name, g_t[i].name)) return g_t[i].want;
    return false;
}

static int64_t kdim(int i) { return g_t[i].type == LOOM_TYPE_Q4_K || g_t[i].type == LOOM_TYPE_Q3_K ? 256 : K; }

static bool write_model(const char *path) {
    loom_gguf_writer *w;
    if (loom_gguf_writer_new(&w)) return false;
    loom_gguf_writer_add_str(w, "general.architecture", "llama", 5);
    loom_gguf_writer_add_u32(w, "llama.block_count", 1);
    uint64_t rng = 12345;
    bool ok = true;
    for (int i = 0; i < NT && ok; i++) {
        int64_t k = kdim(i), m = g_t[i].rows;
        float *x = malloc(sizeof(float) * (size_t)(k * m));
        size_t rb = 0;
        ok = x && loom_type_row_bytes(g_t[i].type, k, &rb) == LOOM_OK;
        g_size[i] = rb * (size_t)m;
        g_bytes[i] = ok ? malloc(g_size[i]) : NULL;
        ok = ok && g_bytes[i];
        for (int64_t e = 0; ok && e < k * m; e++) {
            rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
            x[e] = (float)((double)(rng >> 11) / 9007199254740992.0 - 0.5);
        }
        for (int64_t r = 0; ok && r < m; r++)
            ok = loom_quantize_row(g_t[i].type, x + r * k, g_bytes[i] + (size_t)r * rb, k) == LOOM_OK;
        int64_t ne[2] = {k, m};
        ok = ok && loom_gguf_writer_add_tensor(w, g_t[i].name, g_t[i].type, m > 1 ? 2 : 1, ne, g_bytes[i]) == LOOM_OK;
        free(x);
    }
    ok = ok && loom_gguf_writer_write_file(w, path, NULL) == LOOM_OK;
    loom_gguf_writer_free(w);
    return ok;
}

static loom_backend *open_load(const char *path, bool filter, bool no_mmap, loom_status *st) {
    loom_backend_params p = loom_backend_default_params();
    p.n_threads = 2;
    p.no_mmap = no_mmap;
    if (filter) p.repack_filter = filt;
    loom_backend *be = NULL;
    loom_error e = {0};
    *st = loom_backend_open(path, &p, &be, &e);
    if (!*st) *st = loom_backend_load(be, NULL, NULL, &e);
    if (*st && be) {
        loom_backend_close(be);
        be = NULL;
    }
    return be;
}

/* Flags and bytes of every weight; returns the number repacked. */
static int check_weights(loom_backend *be, bool filter_on, const char *what) {
    const loom_kernels *kt = loom_kernels_get();
    int n_rp = 0;
    for (int i = 0; i < NT; i++) {
        loom_tensor *t = loom_backend_get_tensor(be, g_t[i].name);
        CHECK(t != NULL);
        if (!t) continue;
        bool expect = filter_on && g_t[i].want && kt->repack[g_t[i].type] && g_t[i].rows % 16 == 0;
        bool is = (t->flags & LOOM_TF_REPACKED) != 0;
        CHECK_MSG(is == expect, "%s: %s repacked %d, expected %d", what, g_t[i].name, is, expect);
        n_rp += is;
        uint8_t *want = malloc(g_size[i]);
        if (!want) { CHECK(0); continue; }
        if (is) CHECK_EQ_INT(loom_repack_rows(g_t[i].type, kdim(i), g_t[i].rows, g_bytes[i], want), LOOM_OK);
        else memcpy(want, g_bytes[i], g_size[i]);
        CHECK_MSG(memcmp(t->data, want, g_size[i]) == 0, "%s: %s bytes", what, g_t[i].name);
        free(want);
    }
    return n_rp;
}

/* attn_q (Q4_0, 48 x 96) times 3 columns through a backend context, vs float64. */
static void check_matmul(loom_backend *be, const char *what) {
    loom_ctx *ctx = NULL;
    CHECK_EQ_INT(loom_backend_ctx_new(be, 0, &ctx, NULL), LOOM_OK);
    if (!ctx) return;
    enum { N = 3, M = 48 };
    float x[K * N], out[M * N], wf[K];
    for (int i = 0; i < K * N; i++) x[i] = (float)((i * 37 % 29) - 14) / 8.0f;
    int64_t ne[2] = {K, N};
    loom_tensor *xt = loom_from_f32(loom_ctx_input(ctx), x, K * N, 2, ne);
    loom_tensor *y = loom_mul_mat(ctx, loom_backend_get_tensor(be, "blk.0.attn_q.weight"), xt);
    loom_ctx_forward(ctx, y);
    loom_status s = loom_ctx_status(ctx);
    if (!s) s = loom_ctx_compute(ctx, 1, &y);
    if (!s) s = loom_tensor_read_f32(y, out, M * N);
    CHECK_MSG(s == LOOM_OK, "%s: %s", what, loom_ctx_error(ctx));
    double worst = 0;
    size_t rb = g_size[1] / M;
    for (int r = 0; s == LOOM_OK && r < M; r++) {
        CHECK_EQ_INT(loom_dequantize_row(LOOM_TYPE_Q4_0, g_bytes[1] + (size_t)r * rb, wf, K), LOOM_OK);
        for (int c = 0; c < N; c++) {
            double d = 0, mag = 0;
            for (int e = 0; e < K; e++) {
                d += (double)wf[e] * x[c * K + e];
                mag += fabs((double)wf[e] * x[c * K + e]);
            }
            /* activations are quantized to Q8_0: relative 1/127 per element, summed */
            double err = fabs(out[c * M + r] - d) / (mag / 127.0 + 1e-6);
            if (err > worst) worst = err;
        }
    }
    CHECK_MSG(worst <= 1.0, "%s: matmul error %.3g of the Q8_0 activation bound", what, worst);
    loom_ctx_free(ctx);
    /* any use other than the matmul weight is refused when the graph is built */
    CHECK_EQ_INT(loom_backend_ctx_new(be, 0, &ctx, NULL), LOOM_OK);
    if (!ctx) return;
    loom_tensor *w = loom_backend_get_tensor(be, "blk.0.attn_q.weight");
    if (w->flags & LOOM_TF_REPACKED) {
        int32_t id = 1;
        int64_t n1[1] = {1};
        (void)loom_get_rows(ctx, w, loom_from_i32(loom_ctx_input(ctx), &id, 1, 1, n1));
        CHECK_EQ_INT(loom_ctx_status(ctx), LOOM_ERR_UNSUPPORTED);
    }
    loom_ctx_free(ctx);
}

int main(void) {
    char path[64];
    snprintf(path, sizeof path, "/tmp/loom_test_repack_%d.gguf", (int)getpid());
    if (!write_model(path)) {
        CHECK_MSG(0, "cannot write %s", path);
        return test_finish("test_backend_repack");
    }
    const loom_kernels *kt = loom_kernels_get();
    bool level_repacks = kt->repack[LOOM_TYPE_Q4_0] && kt->repack[LOOM_TYPE_Q8_0];
    printf("  kernel level %s: %s\n", kt->name, level_repacks ? "repacks Q4_0/Q8_0" : "no repacked layout (checks none)");
    for (int mm = 0; mm < 2; mm++) {
        loom_status st;
        const char *what = mm ? "pread" : "mmap";
        g_calls = 0;
        loom_backend *be = open_load(path, true, mm == 1, &st);
        CHECK_MSG(be != NULL, "%s open/load: %d", what, (int)st);
        if (!be) continue;
        CHECK(g_calls > 0 || !level_repacks);
        int n = check_weights(be, true, what);
        CHECK_EQ_INT(n, level_repacks ? 2 + (kt->repack[LOOM_TYPE_Q4_K] ? 1 : 0) : 0);
        check_matmul(be, what);
        loom_backend_close(be);
        /* no filter: GGUF layout everywhere */
        be = open_load(path, false, mm == 1, &st);
        CHECK(be != NULL);
        if (be) {
            CHECK_EQ_INT(check_weights(be, false, what), 0);
            check_matmul(be, what);
            loom_backend_close(be);
        }
    }
    /* the library reads no environment: LOOM_REPACK=0 is the CLI's (it sets no_repack) */
    setenv("LOOM_REPACK", "0", 1);
    {
        loom_status st;
        loom_backend *be = open_load(path, true, false, &st);
        CHECK(be != NULL);
        if (be) {
            CHECK_EQ_INT(check_weights(be, true, "LOOM_REPACK=0 in the environment"),
                         level_repacks ? 2 + (kt->repack[LOOM_TYPE_Q4_K] ? 1 : 0) : 0);
            loom_backend_close(be);
        }
    }
    unsetenv("LOOM_REPACK");
    if (loom_fault_injection_enabled())
    /* every allocation of open + load fails once in turn (the repack scratch included) */
    {
        long base = loom_alloc_count();
        loom_status st;
        loom_backend *be = open_load(path, true, true, &st);
        long total = loom_alloc_count() - base;
        if (be) loom_backend_close(be);
        CHECK(total > 5);
        int failures = 0;
        for (long n = 1; n <= total; n++) {
            loom_alloc_fail_at(n);
            be = open_load(path, true, n % 2 == 0, &st);
            loom_alloc_fail_at(0);
            if (!be) {
                failures++;
                CHECK_MSG(st == LOOM_ERR_NOMEM, "allocation %ld: status %d", n, (int)st);
            } else {
                check_weights(be, true, "after injected failure");
                loom_backend_close(be);
            }
        }
        CHECK(failures > 0);
        printf("  %ld allocations in open+load, %d injected failures reported NOMEM\n", total, failures);
    }
    for (int i = 0; i < NT; i++) free(g_bytes[i]);
    unlink(path);
    return test_finish_part("test_backend_repack", loom_fault_injection_enabled() ? NULL : TEST_NO_FAULT_INJECTION);
}
