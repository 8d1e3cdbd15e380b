/* Thread pool (runs, barriers, thread subsets) and the standalone engine's compute
 * path (callbacks, reserve, buffer reuse). Run under TSan with -DLOOM_TSAN=ON. */
#include "core/ctx.h"
#include "cpu/exec.h"
#include "cpu/pool.h"
#include "loom.h"
#include "test_util.h"

#include <stdatomic.h>
#include <time.h>

typedef struct job {
    loom_pool *pool;
    int rounds;
    int64_t *slots;        /* [nth] plain data handed across barriers */
    _Atomic int64_t total;
    _Atomic int bad;
} job;

static void fn(void *arg, int ith, int nth) {
    job *j = arg;
    for (int r = 0; r < j->rounds; r++) {
        j->slots[ith] = (int64_t)r * 100 + ith;
        loom_pool_barrier(j->pool);
        /* every thread reads every other thread's slot written before the barrier */
        int64_t s = 0;
        for (int k = 0; k < nth; k++) {
            if (j->slots[k] != (int64_t)r * 100 + k) atomic_fetch_add(&j->bad, 1);
            s += j->slots[k];
        }
        atomic_fetch_add(&j->total, s);
        loom_pool_barrier(j->pool);
    }
}

/* One run of fn on nth threads; checks what every thread saw. */
static void run_check(loom_pool *p, int nth, int rounds) {
    int64_t slots[8] = {0};
    job j = {p, rounds, slots, 0, 0};
    loom_pool_run(p, fn, &j, nth);
    int64_t want = 0;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < nth; k++) want += (int64_t)nth * ((int64_t)r * 100 + k);
    CHECK_EQ_INT(atomic_load(&j.bad), 0);
    CHECK_EQ_INT(atomic_load(&j.total), want);
}

static void test_pool(void) {
    CHECK(loom_cpu_default_threads() >= 1);
    for (int n = 1; n <= 4; n++) {
        loom_pool *p = NULL;
        CHECK(loom_pool_new(n, &p, NULL) == LOOM_OK);
        CHECK_EQ_INT(loom_pool_size(p), n);
        for (int nth = 1; nth <= n; nth++)
            for (int rep = 0; rep < 20; rep++) run_check(p, nth, 50);
        loom_pool_free(p);
    }
    loom_pool_free(NULL);
}

/* loom_pool_warm between runs: with workers spinning, asleep (after a pause longer
 * than any spin) or woken twice, the next runs are complete and correct, and a pool
 * freed right after a warm-up joins its workers. */
static void test_pool_warm(void) {
    for (int n = 1; n <= 3; n++) {
        loom_pool *p = NULL;
        CHECK(loom_pool_new(n, &p, NULL) == LOOM_OK);
        loom_pool_warm(p); /* before any run */
        run_check(p, n, 10);
        for (int rep = 0; rep < 3; rep++) {
            struct timespec nap = {0, 30 * 1000 * 1000}; /* workers fall asleep */
            nanosleep(&nap, NULL);
            loom_pool_warm(p);
            if (rep == 1) loom_pool_warm(p); /* twice before a run */
            run_check(p, n, 10);
            run_check(p, n > 1 ? n - 1 : 1, 10);
        }
        loom_pool_warm(p);
        loom_pool_free(p); /* stop word after a warm-up: workers still exit */
    }
    loom_pool_warm(NULL);
}

static int g_evals;
static bool eval_cb(loom_tensor *t, void *user) {
    (void)t;
    g_evals++;
    return g_evals < *(int *)user;
}
static int g_polls;
static bool abort_cb(void *user) {
    g_polls++;
    return g_polls >= *(int *)user;
}

static void test_engine(void) {
    loom_ctx_params p = loom_ctx_default_params();
    p.n_threads = 3;
    loom_ctx *c = NULL;
    loom_error err = {0};
    CHECK(loom_ctx_new(&p, &c, &err) == LOOM_OK);
    int64_t ne[2] = {300, 4};
    float *x = malloc(1200 * sizeof(float));
    for (int i = 0; i < 1200; i++) x[i] = (float)(i % 17) * 0.1f - 0.8f;
    loom_tensor *a = loom_from_f32(loom_ctx_input(c), x, 1200, 2, ne);
    loom_tensor *h = a;
    for (int i = 0; i < 10; i++) h = loom_add(c, loom_scale(c, h, 0.5f), a);
    loom_ctx_forward(c, h);
    CHECK(loom_ctx_reserve(c) == LOOM_OK);
    size_t planned = loom_ctx_compute_bytes(c);
    CHECK(planned > 0 && planned < 20 * 1200 * sizeof(float));
    /* eval callback stops after 3 nodes */
    int stop_at = 3;
    g_evals = 0;
    loom_ctx_set_eval_callback(c, eval_cb, &stop_at);
    CHECK(loom_ctx_compute(c, 1, &h) == LOOM_ERR_CANCELLED);
    CHECK_EQ_INT(g_evals, 3);
    CHECK(loom_ctx_status(c) == LOOM_OK); /* cancellation is not sticky */
    /* all nodes evaluated when the callback keeps going */
    stop_at = 1000;
    g_evals = 0;
    CHECK(loom_ctx_compute(c, 1, &h) == LOOM_OK);
    CHECK_EQ_INT(g_evals, 20);
    loom_ctx_set_eval_callback(c, NULL, NULL);
    /* abort callback */
    int abort_at = 5;
    g_polls = 0;
    loom_ctx_set_abort_callback(c, abort_cb, &abort_at);
    CHECK(loom_ctx_compute(c, 1, &h) == LOOM_ERR_CANCELLED);
    loom_ctx_set_abort_callback(c, NULL, NULL);
    /* results: h_k = h_{k-1}/2 + a -> a * (2 - 2^-10) */
    for (int rep = 0; rep < 3; rep++) {
        CHECK(loom_ctx_compute(c, 1, &h) == LOOM_OK);
        float *o = malloc(1200 * sizeof(float));
        CHECK(loom_tensor_read_f32(h, o, 1200) == LOOM_OK);
        double worst = 0;
        for (int i = 0; i < 1200; i++) worst = fmax(worst, fabs(o[i] - x[i] * (2.0 - 1.0 / 1024.0)));
        CHECK_MSG(worst < 1e-5, "engine result off by %g", worst);
        free(o);
    }
    CHECK_EQ_INT(loom_ctx_compute_bytes(c), planned);
    /* an intermediate that was not requested is not readable */
    loom_graph *g = loom_ctx_graph(c);
    float tmp[1200];
    CHECK(loom_tensor_read_f32(g->nodes[0], tmp, 1200) == LOOM_ERR_INVALID_ARG);
    loom_ctx_free(c);
    free(x);

    /* default thread count, empty graph, standalone layer contexts */
    p.n_threads = 0;
    CHECK(loom_ctx_new(&p, &c, &err) == LOOM_OK);
    CHECK(loom_ctx_compute(c, 0, NULL) == LOOM_OK);
    CHECK(loom_ctx_layer(c, 3) != c);
    CHECK(loom_ctx_layer(c, 3) == loom_ctx_layer(c, 3));
    int64_t one[1] = {4};
    loom_tensor *lt = loom_zeros(loom_ctx_layer(c, 2), LOOM_TYPE_F32, 1, one);
    CHECK(!loom_tensor_is_poison(lt));
    CHECK_EQ_INT(loom_ctx_status(c), LOOM_OK);
    /* an unknown layer returns the receiver (contract) and is a sticky error (Loom) */
    CHECK(loom_ctx_layer(c, -5) == c);
    CHECK_EQ_INT(loom_ctx_status(c), LOOM_ERR_RANGE);
    CHECK(strstr(loom_ctx_error(c), "-5") != NULL);
    CHECK(loom_ctx_compute(c, 0, NULL) == LOOM_ERR_RANGE);
    loom_ctx_free(c);
    loom_ctx_free(NULL);
    p.max_nodes = -1;
    CHECK(loom_ctx_new(&p, &c, &err) == LOOM_ERR_INVALID_ARG);
}

int main(void) {
    test_pool();
    test_pool_warm();
    test_engine();
    return test_finish("test_cpu_pool");
}
