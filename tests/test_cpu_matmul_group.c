/* Sibling matmuls (same activation) as one executor job:
 *  - the graph pass (loom_graph_group_siblings, run by compute/reserve) makes Q/K/V and
 *    gate/up matmuls adjacent, keeps everything else in order, and leaves alone
 *    siblings that are too far, on another layer, with a computed weight, or that would
 *    pass a node writing into their input (CPY into a view);
 *  - q/k/v and gate/silu/up graphs (F32, F16, Q4_0, Q8_0, Q4_K/Q6_K weights, repacked
 *    and GGUF layouts mixed in one group, different row counts, N = 1 and 7, 1 and 2
 *    threads) against a float64 reference, and bit for bit against the same graph with
 *    an eval callback (per-node execution), against one-matmul graphs, and across
 *    thread counts;
 *  - a failing member (repacked weight with a row count that is not a multiple of 16)
 *    is named in the error, through the context and straight through the executor,
 *    where the grouped run computes no member (observable) and the per-node run does;
 *  - work size of a group = that of one member. */
#include "cpu/exec.h"
#include "cpu/kernels.h"
#include "cpu/ops.h"
#include "nn_test_common.h"
#include "quant/repack.h"

/* ------------------------------------------------------------------ weights */

typedef struct wdesc {
    loom_type type;
    int64_t rows;
    bool repack;
} wdesc;

/* Host copy of one weight: its bytes (as stored, maybe repacked) and the dequantized
 * values in float64 (row-major [rows][K]). */
typedef struct hweight {
    wdesc d;
    int64_t K;
    uint8_t *bytes;
    size_t nbytes;
    double *deq;
} hweight;

static size_t rowb(loom_type t, int64_t k) {
    size_t b = 0;
    CHECK_EQ_INT(loom_type_row_bytes(t, k, &b), LOOM_OK);
    return b;
}

static void hweight_make(hweight *w, wdesc d, int64_t K) {
    w->d = d;
    w->K = K;
    const size_t rb = rowb(d.type, K);
    w->nbytes = rb * (size_t)d.rows;
    w->bytes = malloc(w->nbytes);
    w->deq = dmalloc((size_t)(d.rows * K));
    float *x = fmalloc((size_t)K), *y = fmalloc((size_t)K);
    for (int64_t r = 0; r < d.rows; r++) {
        fill_rnd(x, (size_t)K, (float)(0.2 + 0.01 * (double)(r % 17)));
        uint8_t *dst = w->bytes + (size_t)r * rb;
        if (d.type == LOOM_TYPE_F32) {
            memcpy(dst, x, (size_t)K * 4);
            memcpy(y, x, (size_t)K * 4);
        } else if (d.type == LOOM_TYPE_F16) {
            for (int64_t i = 0; i < K; i++) {
                uint16_t h = loom_fp32_to_fp16(x[i]);
                memcpy(dst + 2 * i, &h, 2);
                y[i] = loom_fp16_to_fp32(h);
            }
        } else {
            CHECK_EQ_INT(loom_quantize_row(d.type, x, dst, K), LOOM_OK);
            CHECK_EQ_INT(loom_dequantize_row(d.type, dst, y, K), LOOM_OK);
        }
        for (int64_t i = 0; i < K; i++) w->deq[r * K + i] = y[i];
    }
    if (d.repack && d.rows % LOOM_REPACK_ROWS == 0) {
        uint8_t *tmp = malloc(w->nbytes);
        CHECK_EQ_INT(loom_repack_rows(d.type, K, d.rows, w->bytes, tmp), LOOM_OK);
        free(w->bytes);
        w->bytes = tmp;
    }
    free(x);
    free(y);
}

static void hweight_free(hweight *w) {
    free(w->bytes);
    free(w->deq);
}

static loom_tensor *weight_tensor(loom_ctx *ctx, const hweight *w, const char *name) {
    int64_t ne[2] = {w->K, w->d.rows};
    loom_tensor *t = loom_from_bytes(loom_ctx_input(ctx), w->d.type, w->bytes, w->nbytes, 2, ne);
    if (t && !(t->flags & LOOM_TF_POISON)) {
        if (w->d.repack) t->flags |= LOOM_TF_REPACKED; /* also for a bad row count: the failure case */
        loom_tensor_set_name(t, name);
    }
    return t;
}

/* out[j * rows + i] = sum_k W[i][k] * x[j][k] */
static void ref_mm(const hweight *w, const float *x, int64_t N, double *out) {
    for (int64_t j = 0; j < N; j++)
        for (int64_t i = 0; i < w->d.rows; i++) {
            double s = 0;
            for (int64_t k = 0; k < w->K; k++) s += w->deq[i * w->K + k] * (double)x[j * w->K + k];
            out[j * w->d.rows + i] = s;
        }
}

static double tol_for(loom_type t) {
    const loom_type vdt = loom_kernels_get()->dot[t].vec_dot_type;
    if (vdt == LOOM_TYPE_F32) return 1e-10;
    if (vdt == LOOM_TYPE_F16 || vdt == LOOM_TYPE_BF16) return 1e-5;
    return 2e-4; /* 8-bit activations */
}

/* ------------------------------------------------------------------ graphs */

enum { PAT_QKV, PAT_FFN };

/* Outputs: the matmuls (n_w of them), then the derived nodes (QKV: q*0.5, k*0.25;
 * FFN: silu(g) * u). */
#define MAX_OUT 6

typedef struct gcase {
    const char *name;
    int pattern;
    int n_w; /* 3 (QKV) or 2 (FFN) */
    wdesc w[3];
    int64_t K;
} gcase;

typedef struct run_res {
    loom_status st;
    char err[256];
    float *out[MAX_OUT];
    int64_t size[MAX_OUT];
    int n_out;
    bool adjacent; /* the matmuls were consecutive nodes when computed */
    int64_t evals;
} run_res;

static bool count_eval(loom_tensor *t, void *user) {
    (void)t;
    (*(int64_t *)user)++;
    return true;
}

static const char *const g_names[3] = {"w_a", "w_b", "w_c"};

/* Build the case's graph on x [K, N] and compute it with nth threads; eval = set an
 * eval callback (the executor then runs node by node). */
static run_res run_case(const gcase *c, const hweight *hw, const float *x, int64_t N, int nth, bool eval) {
    run_res r;
    memset(&r, 0, sizeof r);
    loom_ctx *ctx = nn_ctx(nth, false);
    loom_cpu_ctx_set_fill(ctx, 0xFF); /* NaN in every element nobody writes */
    loom_tensor *xin = nn_f32(ctx, x, c->K, N, 1, 1);
    loom_tensor *xa = loom_scale(ctx, xin, 1.0f); /* the activation is a computed node */
    loom_tensor *w[3], *mm[3], *outs[MAX_OUT];
    for (int i = 0; i < c->n_w; i++) {
        w[i] = weight_tensor(ctx, &hw[i], g_names[i]);
        mm[i] = loom_mul_mat(ctx, w[i], xa);
        char nm[32];
        snprintf(nm, sizeof nm, "mm_%c", 'a' + i);
        loom_tensor_set_name(mm[i], nm);
        outs[i] = mm[i];
    }
    int n = c->n_w;
    if (c->pattern == PAT_QKV) { /* q, q*0.5, k, k*0.25, v in DFS order */
        outs[n++] = loom_scale(ctx, mm[0], 0.5f);
        outs[n++] = loom_scale(ctx, mm[1], 0.25f);
        loom_ctx_forward(ctx, outs[3]);
        loom_ctx_forward(ctx, outs[4]);
        loom_ctx_forward(ctx, mm[2]);
    } else { /* g, silu, u, mul */
        outs[n++] = loom_mul(ctx, loom_silu(ctx, mm[0]), mm[1]);
        loom_ctx_forward(ctx, outs[2]);
    }
    r.n_out = n;
    if (eval) loom_ctx_set_eval_callback(ctx, count_eval, &r.evals);
    r.st = loom_ctx_compute(ctx, n, outs);
    snprintf(r.err, sizeof r.err, "%s", loom_ctx_error(ctx));
    r.adjacent = true;
    for (int i = 1; i < c->n_w; i++) r.adjacent = r.adjacent && mm[i]->graph_idx == mm[0]->graph_idx + i;
    for (int i = 0; i < n; i++) {
        r.size[i] = loom_tensor_nelements(outs[i]);
        r.out[i] = fmalloc((size_t)r.size[i]);
        if (r.st == LOOM_OK) CHECK_EQ_INT(loom_tensor_read_f32(outs[i], r.out[i], (size_t)r.size[i]), LOOM_OK);
    }
    loom_ctx_free(ctx);
    return r;
}

static void run_free(run_res *r) {
    for (int i = 0; i < r->n_out; i++) free(r->out[i]);
}

/* One matmul alone in its graph. */
static float *run_single(const hweight *w, const float *x, int64_t N, int nth) {
    loom_ctx *ctx = nn_ctx(nth, false);
    float *o = fmalloc((size_t)(w->d.rows * N));
    loom_tensor *xa = loom_scale(ctx, nn_f32(ctx, x, w->K, N, 1, 1), 1.0f);
    loom_tensor *y = loom_mul_mat(ctx, weight_tensor(ctx, w, "w"), xa);
    CHECK_EQ_INT(nn_run(ctx, y, o, (size_t)(w->d.rows * N)), LOOM_OK);
    loom_ctx_free(ctx);
    return o;
}

static bool same_bits(const float *a, const float *b, int64_t n) {
    return memcmp(a, b, (size_t)n * sizeof(float)) == 0;
}

static void check_case(const gcase *c) {
    hweight hw[3];
    for (int i = 0; i < c->n_w; i++) hweight_make(&hw[i], c->w[i], c->K);
    static const int64_t Ns[2] = {1, 7};
    for (int ni = 0; ni < 2; ni++) {
        const int64_t N = Ns[ni];
        float *x = fmalloc((size_t)(c->K * N));
        fill_rnd(x, (size_t)(c->K * N), 1.0f);
        run_res base = run_case(c, hw, x, N, 2, true); /* per node */
        CHECK_MSG(base.st == LOOM_OK, "%s N=%lld (eval callback): %s", c->name, (long long)N, base.err);
        CHECK(base.evals > 0);
        CHECK_MSG(base.adjacent, "%s: siblings not adjacent", c->name);
        /* float64 reference of the matmuls, and of the derived outputs */
        for (int i = 0; i < c->n_w && base.st == LOOM_OK; i++) {
            double *ref = dmalloc((size_t)(c->w[i].rows * N));
            ref_mm(&hw[i], x, N, ref);
            double e = nmse(base.out[i], ref, (size_t)(c->w[i].rows * N));
            CHECK_MSG(e <= tol_for(c->w[i].type), "%s N=%lld matmul %d (%s): nmse %g", c->name, (long long)N, i,
                      loom_type_name(c->w[i].type), e);
            free(ref);
        }
        if (base.st == LOOM_OK) {
            if (c->pattern == PAT_QKV) {
                for (int64_t k = 0; k < base.size[3]; k++) CHECK_NEAR(base.out[3][k], 0.5f * base.out[0][k], 0);
                for (int64_t k = 0; k < base.size[4]; k++) CHECK_NEAR(base.out[4][k], 0.25f * base.out[1][k], 0);
            } else {
                double e = 0;
                for (int64_t k = 0; k < base.size[2]; k++) {
                    double g = base.out[0][k], s = g / (1.0 + exp(-g)) * base.out[1][k];
                    e = fmax(e, fabs(s - base.out[2][k]) / (1.0 + fabs(s)));
                }
                CHECK_MSG(e < 1e-5, "%s N=%lld: silu(g)*u error %g", c->name, (long long)N, e);
            }
        }
        /* grouped (no callback), 1 and 2 threads: bit for bit the per-node result */
        for (int nth = 1; nth <= 2; nth++) {
            run_res g = run_case(c, hw, x, N, nth, false);
            CHECK_MSG(g.st == LOOM_OK, "%s N=%lld nth=%d: %s", c->name, (long long)N, nth, g.err);
            CHECK(g.adjacent);
            for (int i = 0; i < g.n_out && g.st == LOOM_OK && base.st == LOOM_OK; i++)
                CHECK_MSG(same_bits(g.out[i], base.out[i], g.size[i]), "%s N=%lld nth=%d output %d differs", c->name,
                          (long long)N, nth, i);
            run_free(&g);
        }
        /* each matmul alone */
        for (int i = 0; i < c->n_w && base.st == LOOM_OK; i++) {
            float *o = run_single(&hw[i], x, N, 2);
            CHECK_MSG(same_bits(o, base.out[i], base.size[i]), "%s N=%lld matmul %d differs from its own graph",
                      c->name, (long long)N, i);
            free(o);
        }
        run_free(&base);
        free(x);
    }
    for (int i = 0; i < c->n_w; i++) hweight_free(&hw[i]);
}

static void test_results(void) {
    const loom_type F32 = LOOM_TYPE_F32, F16 = LOOM_TYPE_F16, Q40 = LOOM_TYPE_Q4_0, Q80 = LOOM_TYPE_Q8_0;
    const loom_type Q4K = LOOM_TYPE_Q4_K, Q6K = LOOM_TYPE_Q6_K;
    /* K = 1024: a 128-row matmul is multi-threaded at N = 1 (node_tasks), a 64-row one
     * only at N = 7 (then it joins the group; at N = 1 it runs alone) */
    const gcase cases[] = {
        {"qkv q4_0 repacked", PAT_QKV, 3, {{Q40, 256, true}, {Q40, 128, true}, {Q40, 128, true}}, 1024},
        {"qkv q4_0 plain", PAT_QKV, 3, {{Q40, 256, false}, {Q40, 128, false}, {Q40, 64, false}}, 1024},
        {"qkv q4_0/q8_0 mixed layouts", PAT_QKV, 3, {{Q40, 256, true}, {Q80, 128, false}, {Q80, 144, true}}, 1024},
        {"qkv q4_k/q6_k", PAT_QKV, 3, {{Q4K, 256, false}, {Q6K, 128, false}, {Q4K, 128, false}}, 1024},
        {"qkv f32", PAT_QKV, 3, {{F32, 192, false}, {F32, 128, false}, {F32, 64, false}}, 1024},
        {"qkv f16", PAT_QKV, 3, {{F16, 160, false}, {F16, 128, false}, {F16, 128, false}}, 1024},
        {"qkv f16/q4_0 (not groupable)", PAT_QKV, 3, {{F16, 128, false}, {Q40, 128, false}, {F16, 128, false}}, 1024},
        /* plain rows, counts that are not multiples of 16: at N = 1 the own-range split's
         * last 16-row group is short (200 = 12 groups + 8 rows) */
        {"qkv f16/q4_k odd rows", PAT_QKV, 3, {{F16, 200, false}, {Q4K, 150, false}, {F16, 130, false}}, 1024},
        {"ffn q4_0 repacked", PAT_FFN, 2, {{Q40, 384, true}, {Q40, 384, true}}, 1024},
        {"ffn q8_0/q4_0", PAT_FFN, 2, {{Q80, 320, false}, {Q40, 320, true}}, 1024},
        {"ffn f32", PAT_FFN, 2, {{F32, 160, false}, {F32, 160, false}}, 512},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(&cases[i]);
}

/* ------------------------------------------------------------------ failures */

/* A repacked Q4_0 weight with 136 rows is refused by the kernel (UNSUPPORTED); as
 * member `bad` of a q/k/v group it must be the node the error names. */
static void test_failure_ctx(void) {
    const int64_t K = 1024;
    for (int bad = 0; bad < 3; bad++) {
        const loom_type Q40 = LOOM_TYPE_Q4_0;
        gcase c = {"failure", PAT_QKV, 3, {{Q40, 256, true}, {Q40, 128, true}, {Q40, 128, false}}, K};
        c.w[bad].rows = 136;
        c.w[bad].repack = true;
        hweight hw[3];
        for (int i = 0; i < 3; i++) hweight_make(&hw[i], c.w[i], K);
        float *x = fmalloc((size_t)K * 7);
        fill_rnd(x, (size_t)K * 7, 1.0f);
        char want[8];
        snprintf(want, sizeof want, "mm_%c", 'a' + bad);
        for (int mode = 0; mode < 3; mode++) { /* 2 threads grouped, 2 threads per node, 1 thread */
            run_res r = run_case(&c, hw, x, 7, mode == 2 ? 1 : 2, mode == 1);
            CHECK_EQ_INT(r.st, LOOM_ERR_UNSUPPORTED);
            CHECK_MSG(strstr(r.err, want) != NULL && strstr(r.err, "MUL_MAT") != NULL,
                      "bad member %d mode %d: error \"%s\" does not name %s", bad, mode, r.err, want);
            run_free(&r);
        }
        free(x);
        for (int i = 0; i < 3; i++) hweight_free(&hw[i]);
    }
}

/* Straight through the executor: nodes [a, b(bad), c] already adjacent. Grouped, the
 * failure is found before any product (a stays NaN); per node (eval callback), a is
 * computed first. Either way the error names b. Also: a group's work size is one
 * member's. */
static void test_failure_exec(void) {
    const int64_t K = 1024, N = 7;
    const int nth = 2;
    hweight hw[3];
    const wdesc d[3] = {{LOOM_TYPE_Q4_0, 256, true}, {LOOM_TYPE_Q4_0, 136, true}, {LOOM_TYPE_Q8_0, 128, false}};
    for (int i = 0; i < 3; i++) hweight_make(&hw[i], d[i], K);
    float *x = fmalloc((size_t)(K * N));
    fill_rnd(x, (size_t)(K * N), 1.0f);
    loom_pool *pool = NULL;
    CHECK_EQ_INT(loom_pool_new(nth, &pool, NULL), LOOM_OK);
    for (int eval = 0; eval < 2 && pool; eval++) {
        loom_ctx *ctx = nn_ctx(1, false);
        loom_tensor *xt = nn_f32(ctx, x, K, N, 1, 1);
        loom_tensor *nodes[3];
        float *buf[3];
        for (int i = 0; i < 3; i++) {
            nodes[i] = loom_mul_mat(ctx, weight_tensor(ctx, &hw[i], g_names[i]), xt);
            char nm[32];
            snprintf(nm, sizeof nm, "mm_%c", 'a' + i);
            loom_tensor_set_name(nodes[i], nm);
            buf[i] = fmalloc((size_t)(d[i].rows * N));
            for (int64_t k = 0; k < d[i].rows * N; k++) buf[i][k] = NAN;
            nodes[i]->data = buf[i];
        }
        size_t ws = loom_cpu_graph_work_size(nodes, 3, nth);
        CHECK_EQ_INT(ws, loom_cpu_graph_work_size(nodes, 1, nth));
        void *wd = malloc(ws);
        loom_error err = {0};
        int64_t evals = 0;
        loom_status st = loom_cpu_compute_nodes(pool, nth, nodes, 3, wd, ws, NULL, NULL, eval ? count_eval : NULL,
                                                eval ? &evals : NULL, &err);
        CHECK_EQ_INT(st, LOOM_ERR_UNSUPPORTED);
        CHECK_MSG(strstr(err.msg, "mm_b") != NULL, "eval %d: error \"%s\"", eval, err.msg);
        CHECK_MSG(eval ? !isnan(buf[0][0]) : isnan(buf[0][0]), "eval %d: first member %s", eval,
                  isnan(buf[0][0]) ? "not computed" : "computed");
        CHECK(isnan(buf[2][0]));
        CHECK_EQ_INT(evals, eval ? 1 : 0);
        free(wd);
        for (int i = 0; i < 3; i++) free(buf[i]);
        loom_ctx_free(ctx);
    }
    loom_pool_free(pool);
    free(x);
    for (int i = 0; i < 3; i++) hweight_free(&hw[i]);
}

/* ------------------------------------------------------------------ the graph pass */

static loom_tensor *wleaf(loom_ctx *ctx, int64_t K, int64_t M) {
    int64_t ne[2] = {K, M};
    return loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 2, ne);
}

static int64_t pos_of(const loom_graph *g, const loom_tensor *t) {
    for (int64_t i = 0; i < g->n_nodes; i++)
        if (g->nodes[i] == t) return i;
    return -1;
}

/* graph_idx matches positions and nodes are a permutation of `before` in which the
 * nodes not in `moved` keep their relative order. */
static void check_perm(const loom_graph *g, loom_tensor *const *before, int64_t n, loom_tensor *const *moved,
                       int n_moved) {
    CHECK_EQ_INT(g->n_nodes, n);
    for (int64_t i = 0; i < g->n_nodes; i++) CHECK_EQ_INT(g->nodes[i]->graph_idx, i);
    int64_t last = -1;
    for (int64_t i = 0; i < n; i++) {
        bool mv = false;
        for (int k = 0; k < n_moved; k++) mv = mv || before[i] == moved[k];
        int64_t p = pos_of(g, before[i]);
        CHECK(p >= 0);
        if (mv) continue;
        CHECK(p > last);
        last = p;
    }
}

static void test_pass(void) {
    const int64_t K = 64;
    /* q/k/v with nodes in between; a k with a computed weight; an o projection */
    {
        loom_ctx *ctx = nn_ctx(1, false);
        loom_tensor *x = loom_scale(ctx, wleaf(ctx, K, 2), 1.0f);
        loom_tensor *q = loom_mul_mat(ctx, wleaf(ctx, K, 32), x);
        loom_tensor *q2 = loom_scale(ctx, q, 2.0f);
        loom_tensor *k = loom_mul_mat(ctx, wleaf(ctx, K, 16), x);
        loom_tensor *k2 = loom_silu(ctx, k);
        loom_tensor *kc = loom_mul_mat(ctx, loom_scale(ctx, wleaf(ctx, K, 16), 1.0f), x); /* computed weight */
        loom_tensor *v = loom_mul_mat(ctx, wleaf(ctx, K, 16), x);
        loom_tensor *y = loom_add(ctx, loom_add(ctx, loom_scale(ctx, q2, 1.0f), k2), loom_scale(ctx, kc, 1.0f));
        loom_ctx_forward(ctx, y);
        loom_ctx_forward(ctx, v);
        loom_graph *g = loom_ctx_graph(ctx);
        const int64_t n = g->n_nodes;
        loom_tensor **before = malloc((size_t)n * sizeof *before);
        memcpy(before, g->nodes, (size_t)n * sizeof *before);
        CHECK(pos_of(g, k) > pos_of(g, q) + 1);
        loom_graph_group_siblings(g);
        CHECK_EQ_INT(pos_of(g, k), pos_of(g, q) + 1);
        CHECK_EQ_INT(pos_of(g, v), pos_of(g, q) + 2);
        CHECK(pos_of(g, kc) > pos_of(g, v) + 1); /* computed weight: stays */
        loom_tensor *moved[2] = {k, v};
        check_perm(g, before, n, moved, 2);
        /* idempotent */
        loom_tensor **once = malloc((size_t)n * sizeof *once);
        memcpy(once, g->nodes, (size_t)n * sizeof *once);
        loom_graph_group_siblings(g);
        CHECK(memcmp(once, g->nodes, (size_t)n * sizeof *once) == 0);
        /* compute and reserve run it: the order survives them */
        CHECK_EQ_INT(loom_ctx_reserve(ctx), LOOM_OK);
        CHECK(memcmp(once, g->nodes, (size_t)n * sizeof *once) == 0);
        free(before);
        free(once);
        loom_ctx_free(ctx);
    }
    /* through loom_ctx_compute alone (gate/silu/up) */
    {
        loom_ctx *ctx = nn_ctx(2, false);
        loom_tensor *x = loom_scale(ctx, wleaf(ctx, K, 2), 1.0f);
        loom_tensor *gt = loom_mul_mat(ctx, wleaf(ctx, K, 32), x);
        loom_tensor *u = loom_mul_mat(ctx, wleaf(ctx, K, 32), x);
        loom_tensor *y = loom_mul(ctx, loom_silu(ctx, gt), u);
        loom_ctx_forward(ctx, y);
        loom_graph *g = loom_ctx_graph(ctx);
        CHECK(pos_of(g, u) > pos_of(g, gt) + 1);
        CHECK_EQ_INT(loom_ctx_compute(ctx, 1, &y), LOOM_OK);
        CHECK_EQ_INT(pos_of(g, u), pos_of(g, gt) + 1);
        loom_ctx_free(ctx);
    }
    /* not moved: another layer; past a CPY into the activation; beyond the window */
    {
        loom_ctx *ctx = nn_ctx(1, false);
        loom_tensor *xl = wleaf(ctx, K, 2);
        loom_tensor *q = loom_mul_mat(ctx, wleaf(ctx, K, 32), xl);
        loom_ctx_forward(ctx, loom_scale(ctx, q, 1.0f));
        loom_tensor *other = loom_mul_mat(loom_ctx_layer(ctx, 1), wleaf(ctx, K, 32), xl);
        loom_ctx_forward(ctx, loom_scale(ctx, other, 1.0f));
        int64_t ne1[1] = {K};
        loom_tensor *c = loom_cpy(ctx, wleaf(ctx, K, 1), loom_view(ctx, xl, 0, 1, ne1)); /* writes into xl */
        loom_ctx_forward(ctx, c);
        loom_tensor *k = loom_mul_mat(ctx, wleaf(ctx, K, 16), xl);
        loom_ctx_forward(ctx, loom_scale(ctx, k, 1.0f));
        loom_tensor *z = loom_scale(ctx, wleaf(ctx, K, 1), 1.0f); /* a chain longer than the window */
        for (int i = 0; i < 70; i++) z = loom_scale(ctx, z, 1.0f);
        loom_ctx_forward(ctx, z);
        loom_tensor *far = loom_mul_mat(ctx, wleaf(ctx, K, 16), loom_scale(ctx, z, 1.0f));
        loom_tensor *far2 = loom_mul_mat(ctx, wleaf(ctx, K, 16), far->src[1]);
        loom_ctx_forward(ctx, far);
        for (int i = 0; i < 70; i++) z = loom_scale(ctx, z, 1.0f);
        loom_ctx_forward(ctx, z);
        loom_ctx_forward(ctx, far2);
        loom_graph *g = loom_ctx_graph(ctx);
        CHECK_EQ_INT(ctx->root->err.status, LOOM_OK);
        const int64_t n = g->n_nodes;
        loom_tensor **before = malloc((size_t)n * sizeof *before);
        memcpy(before, g->nodes, (size_t)n * sizeof *before);
        loom_graph_group_siblings(g);
        CHECK(memcmp(before, g->nodes, (size_t)n * sizeof *before) == 0);
        CHECK(other->layer == 1 && q->layer != 1);
        CHECK(pos_of(g, k) > pos_of(g, c));
        CHECK(pos_of(g, far2) > pos_of(g, far) + 64);
        free(before);
        loom_ctx_free(ctx);
    }
}

int main(void) {
    printf("  kernel level %s\n", loom_kernels_get()->name);
    test_pass();
    test_results();
    test_failure_ctx();
    test_failure_exec();
    return test_finish("test_cpu_matmul_group");
}
