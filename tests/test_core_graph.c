/* Core (no kernels): tensor creation rules, sticky errors per op family, graph
 * building, max_nodes limits and the liveness planner. Uses a dummy executor. */
#include "core/ctx.h"
#include "loom.h"
#include "test_util.h"

#include <stdint.h>

typedef struct dummy {
    void *allocs[1024];
    int n;
    int computes;
} dummy;

static loom_status d_alloc(void *impl, loom_ctx *c, loom_tensor *t, bool zero) {
    (void)c;
    dummy *d = impl;
    if (d->n >= 1024) return LOOM_ERR_NOMEM;
    void *p = zero ? calloc(1, loom_tensor_nbytes(t)) : malloc(loom_tensor_nbytes(t));
    if (!p) return LOOM_ERR_NOMEM;
    d->allocs[d->n++] = p;
    t->data = p;
    return LOOM_OK;
}
static loom_status d_compute(void *impl, loom_ctx *c, int n, loom_tensor *const *o) {
    (void)c, (void)n, (void)o;
    ((dummy *)impl)->computes++;
    return LOOM_OK;
}
static loom_status d_reserve(void *impl, loom_ctx *c) { (void)impl, (void)c; return LOOM_OK; }
static size_t d_bytes(void *impl, const loom_ctx *c) { (void)impl, (void)c; return 0; }
static void d_free(void *impl, loom_ctx *c) {
    (void)c;
    dummy *d = impl;
    for (int i = 0; i < d->n; i++) free(d->allocs[i]);
    d->n = 0;
}
static const loom_exec_iface g_iface = {d_alloc, d_compute, d_reserve, d_bytes, NULL, NULL, d_free, NULL, NULL};

static dummy g_dummy;

static loom_ctx *new_ctx(int64_t max_nodes) {
    loom_ctx_params p = loom_ctx_default_params();
    p.max_nodes = max_nodes;
    loom_ctx *c = NULL;
    loom_error err = {0};
    CHECK(loom_ctx_new_with(&g_iface, &g_dummy, &p, &c, &err) == LOOM_OK);
    return c;
}

static loom_tensor *vec(loom_ctx *c, int64_t n0, int64_t n1) {
    int64_t ne[2] = {n0, n1};
    return loom_zeros(loom_ctx_input(c), LOOM_TYPE_F32, 2, ne);
}

static void test_creation(void) {
    loom_ctx *c = new_ctx(64);
    float d6[6] = {1, 2, 3, 4, 5, 6};
    int64_t ne23[2] = {2, 3};
    loom_tensor *t = loom_from_f32(loom_ctx_input(c), d6, 6, 2, ne23);
    CHECK(!loom_tensor_is_poison(t));
    CHECK_EQ_INT(loom_tensor_n_dims(t), 2);
    CHECK_EQ_INT(loom_tensor_nb(t, 1), 8);
    CHECK_EQ_INT(loom_tensor_nbytes(t), 24);
    CHECK(loom_tensor_is_contiguous(t));
    float back[6];
    CHECK(loom_tensor_read_f32(t, back, 6) == LOOM_OK);
    CHECK(back[5] == 6.0f);
    CHECK(loom_tensor_read_f32(t, back, 5) == LOOM_ERR_INVALID_ARG);
    /* empty tensors */
    int64_t z[3] = {0, 5, 7};
    loom_tensor *e = loom_empty(c, LOOM_TYPE_F32, 3, z);
    CHECK(!loom_tensor_is_poison(e));
    CHECK_EQ_INT(loom_tensor_ne(e, 0), 0);
    CHECK_EQ_INT(loom_tensor_ne(e, 1), 1);
    CHECK_EQ_INT(loom_tensor_nbytes(e), 0);
    CHECK(loom_tensor_read(e, NULL, 0) == LOOM_OK);
    loom_tensor *e0 = loom_empty(c, LOOM_TYPE_F32, 0, NULL);
    CHECK(!loom_tensor_is_poison(e0) && loom_tensor_nelements(e0) == 0);
    /* trailing 1s dropped */
    int64_t n4[4] = {3, 1, 2, 1};
    CHECK_EQ_INT(loom_tensor_n_dims(loom_empty(c, LOOM_TYPE_F32, 4, n4)), 3);
    /* quantized from_bytes size check is exact */
    int64_t q[1] = {32};
    uint8_t blk[34] = {0};
    CHECK(!loom_tensor_is_poison(loom_from_bytes(c, LOOM_TYPE_Q8_0, blk, 34, 1, q)));
    CHECK(loom_ctx_status(c) == LOOM_OK);
    loom_ctx_free(c);

    struct {
        int n_dims;
        int64_t ne[5];
        size_t n;
    } bad[] = {
        {2, {2, 3}, 7},        /* product != length (tightened §12.17) */
        {2, {2, 3}, 5},        /* too short */
        {5, {1, 1, 1, 1, 1}, 1}, /* > 4 dims */
        {2, {3, -1}, 3},       /* extent < 1 */
        {2, {3, 0}, 0},        /* zero in a later dim */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        c = new_ctx(64);
        float buf[8] = {0};
        loom_tensor *b = loom_from_f32(loom_ctx_input(c), buf, bad[i].n, bad[i].n_dims, bad[i].ne);
        CHECK_MSG(loom_tensor_is_poison(b), "bad creation %zu accepted", i);
        CHECK(loom_ctx_status(c) == LOOM_ERR_SHAPE);
        CHECK(strstr(loom_ctx_error(c), "from_f32") != NULL);
        /* sticky: later ops and compute return the error */
        loom_tensor *y = loom_add(c, b, b);
        CHECK(loom_tensor_is_poison(y));
        CHECK(loom_ctx_forward(c, y) == LOOM_ERR_SHAPE);
        CHECK(loom_ctx_compute(c, 1, &y) == LOOM_ERR_SHAPE);
        loom_ctx_free(c);
    }
    /* Q8_0 with ne0 not a multiple of 32 */
    c = new_ctx(8);
    int64_t q33[1] = {33};
    CHECK(loom_tensor_is_poison(loom_empty(c, LOOM_TYPE_Q8_0, 1, q33)));
    CHECK(loom_ctx_status(c) == LOOM_ERR_SHAPE);
    loom_ctx_free(c);
}

/* Each op family: a bad call gives poison, a sticky error naming the op, and compute returns it. */
static void test_op_errors(void) {
    for (int k = 0; k < 22; k++) {
        loom_ctx *c = new_ctx(64);
        loom_tensor *a = vec(c, 4, 3), *b = vec(c, 3, 3);
        loom_tensor *t = NULL;
        const char *name = "";
        loom_status want = LOOM_ERR_SHAPE;
        int64_t ne5[1] = {5};
        int64_t args2[2] = {4, 16};
        int32_t idv[2] = {0, 1};
        int64_t ine[2] = {2, 2};
        switch (k) {
        case 0: t = loom_add(c, a, b); name = "ADD"; break;
        case 1: t = loom_mul(c, a, NULL); name = "MUL"; want = LOOM_ERR_INVALID_ARG; break;
        case 2: t = loom_softmax_ext(c, a, b, 1.0f); name = "SOFT_MAX"; break;
        case 3: t = loom_rms_norm(c, loom_from_i32(loom_ctx_input(c), idv, 2, 1, ine), NULL, 1e-5f);
                name = "RMS_NORM"; want = LOOM_ERR_TYPE; break;
        case 4: t = loom_reshape(c, a, 1, ne5); name = "VIEW"; break;
        case 5: t = loom_view(c, a, 0, 2, args2); name = "VIEW"; break;
        case 6: { int64_t va[3] = {4, 16, 4}; t = loom_view(c, a, 0, 3, va); name = "VIEW"; break; } /* out of bounds */
        case 7: t = loom_permute(c, a, 0, 1, 1, 3); name = "VIEW"; break;
        case 8: t = loom_cont_nd(c, a, 1, ne5); name = "DUP"; break;
        case 9: t = loom_cpy(c, a, b); name = "CPY"; break;
        case 10: t = loom_concat(c, a, b, 1); name = "CONCAT"; break;
        case 11: t = loom_concat(c, a, a, 4); name = "CONCAT"; break;
        case 12: t = loom_pad(c, a, 0, 0, 0, 1); name = "PAD"; break;
        case 13: t = loom_pad(c, a, -4, 0, 0, 0); name = "PAD"; break;
        case 14: t = loom_repeat(c, a, 0, 0); name = "REPEAT"; break;
        case 15: t = loom_get_rows(c, a, b); name = "GET_ROWS"; want = LOOM_ERR_TYPE; break;
        case 16: t = loom_get_rows(c, a, loom_from_i32(loom_ctx_input(c), idv, 2, 1, ine + 1)); name = "GET_ROWS";
                 t = loom_get_rows(c, loom_permute(c, vec(c, 4, 3), 1, 0, 2, 3),
                                   loom_from_i32(loom_ctx_input(c), idv, 2, 1, ine));
                 break;
        case 17: t = loom_set(c, a, vec(c, 4, 4), 0); name = "SET"; break;
        case 18: t = loom_arange(c, 5.0f, 1.0f, 1.0f, LOOM_TYPE_F32); name = "ARANGE"; want = LOOM_ERR_INVALID_ARG; break;
        case 19: t = loom_clamp(c, a, 1.0f, 0.0f); name = "CLAMP"; want = LOOM_ERR_INVALID_ARG; break;
        case 20: t = loom_mean(c, loom_empty(c, LOOM_TYPE_F32, 0, NULL)); name = "MEAN"; break;
        case 21: t = loom_layer_norm(c, a, NULL, NULL, -1.0f); name = "NORM"; want = LOOM_ERR_INVALID_ARG; break;
        }
        CHECK_MSG(loom_tensor_is_poison(t), "case %d: not poison", k);
        CHECK_MSG(loom_ctx_status(c) == want, "case %d: status %s (%s)", k, loom_status_name(loom_ctx_status(c)),
                  loom_ctx_error(c));
        CHECK_MSG(strstr(loom_ctx_error(c), name) != NULL, "case %d: message '%s' lacks %s", k, loom_ctx_error(c),
                  name);
        /* ops on poison stay poison, compute returns the sticky error */
        CHECK(loom_tensor_is_poison(loom_silu(c, t)));
        CHECK(loom_tensor_is_poison(loom_silu(c, a))); /* family is failed: everything is poison */
        CHECK(loom_ctx_compute(c, 0, NULL) == want);
        CHECK(loom_ctx_reserve(c) == want);
        loom_ctx_free(c);
    }
    CHECK(loom_add(NULL, NULL, NULL) == NULL);
}

static void test_graph_limits(void) {
    /* arena exhaustion: error, not crash */
    loom_ctx *c = new_ctx(10);
    loom_tensor *a = vec(c, 4, 1);
    for (int i = 0; i < 20; i++) a = loom_silu(c, a);
    CHECK(loom_tensor_is_poison(a));
    CHECK(loom_ctx_status(c) == LOOM_ERR_RANGE);
    CHECK(strstr(loom_ctx_error(c), "max_nodes") != NULL);
    loom_ctx_free(c);

    /* graph exceeds max_nodes: a second context's nodes pulled into a small one */
    loom_ctx *big = new_ctx(100);
    loom_tensor *x = vec(big, 4, 1);
    for (int i = 0; i < 30; i++) x = loom_silu(big, x);
    loom_ctx *small = new_ctx(10);
    CHECK(loom_ctx_forward(small, x) == LOOM_ERR_RANGE);
    CHECK(loom_ctx_status(small) == LOOM_ERR_RANGE);
    CHECK(loom_ctx_compute(small, 1, &x) == LOOM_ERR_RANGE);
    loom_ctx_free(small);
    /* dedup + topological order */
    CHECK(loom_ctx_forward(big, x) == LOOM_OK);
    CHECK(loom_ctx_forward(big, x) == LOOM_OK);
    CHECK_EQ_INT(loom_ctx_graph_size(big), 30);
    loom_graph *g = loom_ctx_graph(big);
    CHECK_EQ_INT(g->n_leafs, 1);
    bool topo = true;
    for (int64_t i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < LOOM_MAX_SRC; k++) {
            loom_tensor *s = g->nodes[i]->src[k];
            if (s && s->op != LOOM_OP_NONE) topo &= s->graph_idx < i;
        }
    CHECK(topo);
    /* compute with an output that was never forwarded */
    loom_tensor *nf = loom_sqr(big, x);
    CHECK(loom_ctx_compute(big, 1, &nf) == LOOM_ERR_INVALID_ARG);
    loom_ctx_free(big);
    /* params validation */
    loom_ctx_params p = loom_ctx_default_params();
    p.max_nodes = 0;
    loom_ctx *cc = (loom_ctx *)1;
    loom_error err = {0};
    CHECK(loom_ctx_new_with(&g_iface, &g_dummy, &p, &cc, &err) == LOOM_ERR_INVALID_ARG && cc == NULL);
    CHECK(err.msg[0] != 0);
}

typedef struct ival {
    int64_t def, last;
    size_t off, size;
} ival;

/* Plan a random DAG; check peak < sum and that no two simultaneously-live tensors overlap. */
static void check_plan(loom_ctx *c, int n_out, loom_tensor **outs, const char *what) {
    loom_graph *g = loom_ctx_graph(c);
    for (int i = 0; i < n_out; i++) outs[i]->flags |= LOOM_TF_OUTPUT;
    size_t *offs = malloc((size_t)g->n_nodes * sizeof *offs);
    size_t total = 0;
    CHECK(loom_plan_graph(g, NULL, NULL, 64, offs, &total) == LOOM_OK);
    ival *iv = calloc((size_t)g->n_nodes, sizeof *iv);
    size_t sum = 0;
    for (int64_t i = 0; i < g->n_nodes; i++) {
        loom_tensor *t = g->nodes[i];
        iv[i].def = i;
        iv[i].last = (t->flags & LOOM_TF_OUTPUT) ? g->n_nodes : i;
        iv[i].off = offs[i];
        iv[i].size = loom_tensor_nbytes(t);
        if (t->view_src) CHECK(offs[i] == SIZE_MAX);
        if (offs[i] != SIZE_MAX) {
            sum += (iv[i].size + 63) & ~(size_t)63;
            CHECK(offs[i] % 64 == 0);
            CHECK(offs[i] + iv[i].size <= total);
        }
    }
    /* last use: any node reading it (through views) */
    for (int64_t i = 0; i < g->n_nodes; i++)
        for (int k = 0; k < LOOM_MAX_SRC; k++) {
            loom_tensor *s = g->nodes[i]->src[k];
            if (!s) continue;
            loom_tensor *b = loom_tensor_base(s);
            if (b->op == LOOM_OP_NONE) continue;
            if (iv[b->graph_idx].last < i) iv[b->graph_idx].last = i;
        }
    /* views extend the life of their base to their own last use */
    for (int64_t i = g->n_nodes - 1; i >= 0; i--) {
        loom_tensor *t = g->nodes[i];
        if (t->view_src && t->view_src->op != LOOM_OP_NONE) {
            int64_t bi = t->view_src->graph_idx;
            if (iv[bi].last < iv[i].last) iv[bi].last = iv[i].last;
        }
    }
    int overlaps = 0;
    for (int64_t i = 0; i < g->n_nodes; i++)
        for (int64_t j = i + 1; j < g->n_nodes; j++) {
            if (offs[i] == SIZE_MAX || offs[j] == SIZE_MAX) continue;
            bool live = iv[i].def <= iv[j].last && iv[j].def <= iv[i].last;
            bool mem = iv[i].off < iv[j].off + iv[j].size && iv[j].off < iv[i].off + iv[i].size;
            overlaps += live && mem;
        }
    CHECK_MSG(overlaps == 0, "%s: %d live overlaps", what, overlaps);
    CHECK_MSG(total < sum, "%s: peak %zu not below the sum %zu", what, total, sum);
    for (int i = 0; i < n_out; i++) outs[i]->flags &= ~(uint32_t)LOOM_TF_OUTPUT;
    free(offs);
    free(iv);
}

static void test_planner(void) {
    /* chain */
    loom_ctx *c = new_ctx(512);
    loom_tensor *x = vec(c, 256, 4);
    for (int i = 0; i < 40; i++) x = loom_silu(c, x);
    loom_ctx_forward(c, x);
    check_plan(c, 1, &x, "chain");
    loom_ctx_free(c);

    /* random DAG with views, broadcasts and several outputs */
    uint64_t s = 99;
    c = new_ctx(2048);
    loom_tensor *pool[64];
    int np = 0;
    pool[np++] = vec(c, 64, 8);
    pool[np++] = vec(c, 64, 8);
    for (int i = 0; i < 300; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        int r = (int)(s >> 33);
        loom_tensor *a = pool[r % np], *b = pool[(r / 7) % np];
        loom_tensor *t;
        switch ((r / 131) % 5) {
        case 0: t = loom_add(c, a, b); break;
        case 1: t = loom_silu(c, a); break;
        case 2: t = loom_transpose(c, loom_transpose(c, a)); break; /* view of a view */
        case 3: t = loom_mul(c, loom_cont(c, a), b); break;
        default: {
            int64_t ne[2] = {64 * 8, 1};
            t = loom_reshape(c, loom_cont(c, a), 2, ne);
            int64_t back[2] = {64, 8};
            t = loom_sqr(c, loom_reshape(c, t, 2, back));
        }
        }
        if (np < 64) pool[np++] = t;
        else pool[r % 62 + 2] = t;
    }
    CHECK(loom_ctx_status(c) == LOOM_OK);
    loom_tensor *outs[3] = {pool[np - 1], pool[np - 2], pool[np / 2]};
    for (int i = 0; i < 3; i++) loom_ctx_forward(c, outs[i]);
    check_plan(c, 3, outs, "dag");
    loom_ctx_free(c);
}

int main(void) {
    test_creation();
    test_op_errors();
    test_graph_limits();
    test_planner();
    return test_finish("test_core_graph");
}
