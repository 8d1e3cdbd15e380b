/* Classification on synthetic models (tied embeddings, per-layer rope copies,
 * vision/projector tensors, no-digit names, bad layer indices) and the
 * multi-device scheduler: a graph computed with weights on 1, 2 and 3 devices
 * gives identical outputs, and matches a float64 reference. */
#include "test_util.h"
#include "backend/backend_internal.h"
#include "backend/fault.h"
#include "loom_gguf.h"

#include <math.h>
#include <unistd.h>

#define NE 8   /* embedding */
#define NV 16  /* vocab */

typedef struct fake_opts {
    int blocks;
    bool tied;       /* no output.weight */
    bool rope;       /* rope_freqs.weight */
    bool extras;     /* v./mm./no-digit tensors */
    int bad_layer;   /* >= 0: add blk.<bad_layer>.x.weight */
    bool i32_blocks; /* store block_count as i32 */
} fake_opts;

static float wval(int t, int i) { return (float)((t * 131 + i * 17) % 23 - 11) / 16.0f; }

static bool write_fake(const char *path, const fake_opts *o) {
    loom_gguf_writer *w;
    if (loom_gguf_writer_new(&w)) return false;
    loom_gguf_writer_add_str(w, "general.architecture", "llama", 5);
    if (o->i32_blocks) loom_gguf_writer_add_i32(w, "llama.block_count", o->blocks);
    else loom_gguf_writer_add_u32(w, "llama.block_count", (uint32_t)o->blocks);
    float buf[NE * NV];
    int tid = 0;
#define ADD(name, nd, n0, n1)                                                              \
    do {                                                                                   \
        int64_t ne_[2] = {n0, n1};                                                         \
        for (int i_ = 0; i_ < (n0) * (n1); i_++) buf[i_] = wval(tid, i_);                  \
        tid++;                                                                             \
        if (loom_gguf_writer_add_tensor(w, name, LOOM_TYPE_F32, nd, ne_, buf)) goto fail;  \
    } while (0)
    ADD("token_embd.weight", 2, NE, NV);
    if (o->rope) ADD("rope_freqs.weight", 1, 4, 1);
    if (o->extras) {
        ADD("v.blk.0.attn_q.weight", 1, NE, 1);
        ADD("mm.0.weight", 1, NE, 1);
        ADD("v.position_embd.weight", 1, NE, 1);
        ADD("foo.weight", 1, NE, 1);
    }
    char nm[64];
    for (int b = 0; b < o->blocks; b++) {
        snprintf(nm, sizeof nm, "blk.%d.attn_norm.weight", b);
        ADD(nm, 1, NE, 1);
        snprintf(nm, sizeof nm, "blk.%d.attn_q.weight", b);
        ADD(nm, 2, NE, NE);
    }
    if (o->bad_layer >= 0) {
        snprintf(nm, sizeof nm, "blk.%d.x.weight", o->bad_layer);
        ADD(nm, 1, NE, 1);
    }
    ADD("output_norm.weight", 1, NE, 1);
    if (!o->tied) ADD("output.weight", 2, NE, NV);
#undef ADD
    loom_error e = {0};
    bool ok = loom_gguf_writer_write_file(w, path, &e) == LOOM_OK;
    if (!ok) fprintf(stderr, "write: %s\n", e.msg);
    loom_gguf_writer_free(w);
    return ok;
fail:
    loom_gguf_writer_free(w);
    return false;
}

static char g_path[64];

static loom_backend *open_fake(const fake_opts *o, const char *sims, int ngl, bool dry, loom_status *st,
                               loom_error *e) {
    snprintf(g_path, sizeof g_path, "/tmp/loom_fake_%d.gguf", (int)getpid());
    if (!write_fake(g_path, o)) {
        *st = LOOM_ERR_IO;
        return NULL;
    }
    loom_sim_device d[4];
    int n = 0;
    if (sims) loom_sim_devices_parse(sims, d, 4, &n, NULL);
    loom_backend_params p = loom_backend_default_params();
    p.sim_devices = n ? d : NULL;
    p.n_sim_devices = n;
    p.n_gpu_layers = ngl;
    p.dry_run = dry;
    p.n_threads = 2;
    p.no_mmap = true; /* device byte counts below then include every CPU weight */
    loom_backend *be = NULL;
    *st = loom_backend_open(g_path, &p, &be, e);
    return be;
}

static void test_classification(void) {
    loom_status st;
    loom_error e = {0};
    /* 4 blocks, two devices split by free memory 1:1; N = 5: layers 0,1,2 gpu0; 3 + output gpu1 */
    fake_opts o = {.blocks = 4, .tied = true, .rope = true, .extras = true, .bad_layer = -1};
    loom_backend *be = open_fake(&o, "gpu0=1MiB,gpu1=1MiB", 5, false, &st, &e);
    CHECK_MSG(st == LOOM_OK, "%s", e.msg);
    if (!be) return;
    int expect[5] = {1, 1, 1, 2, 2};
    for (int i = 0; i <= 4; i++) CHECK_EQ_INT(loom_backend_layer_device(be, i), expect[i]);
    loom_tensor *t;
    /* rule 1: token_embd on CPU; 1a: tied output copy on the output device */
    t = loom_backend_get_tensor(be, "token_embd.weight");
    CHECK(t && t->device == 0 && t->layer == -1);
    t = loom_backend_get_tensor(be, "output.weight");
    CHECK(t && t->device == 2 && t->layer == 4 && t->ne[0] == NE && t->ne[1] == NV);
    /* rule 1 before rule 3 */
    t = loom_backend_get_tensor(be, "v.position_embd.weight");
    CHECK(t && t->device == 0 && t->layer == -1);
    /* rule 3: vision/projector with the output layer */
    t = loom_backend_get_tensor(be, "v.blk.0.attn_q.weight");
    CHECK(t && t->device == 2 && t->layer == 4);
    t = loom_backend_get_tensor(be, "mm.0.weight");
    CHECK(t && t->device == 2 && t->layer == 4);
    /* rule 2 */
    t = loom_backend_get_tensor(be, "output_norm.weight");
    CHECK(t && t->device == 2 && t->layer == 4);
    /* rule 4: per-layer rope copies, no un-prefixed tensor */
    CHECK(loom_backend_get_tensor(be, "rope_freqs.weight") == NULL);
    for (int i = 0; i < 4; i++) {
        char nm[64];
        snprintf(nm, sizeof nm, "blk.%d.rope_freqs.weight", i);
        t = loom_backend_get_tensor(be, nm);
        CHECK_MSG(t && t->device == expect[i] && t->layer == i, "%s", nm);
    }
    /* rule 5 and 6 */
    t = loom_backend_get_tensor(be, "blk.3.attn_q.weight");
    CHECK(t && t->device == 2 && t->layer == 3);
    t = loom_backend_get_tensor(be, "foo.weight");
    CHECK(t && t->device == 0 && t->layer == -1);

    /* accounting by hand: input = token_embd 512 + v.position_embd 32 + foo 32 */
    loom_backend_memory m;
    CHECK(loom_backend_memory_get(be, &m) == LOOM_OK);
    CHECK_EQ_INT(m.input_weights.size, 512 + 32 + 32);
    /* layer: attn_norm 32 + attn_q 256 + rope copy (16 -> 32) */
    for (int i = 0; i < 4; i++) CHECK_EQ_INT(m.devices[expect[i]].weights[i].size, 32 + 256 + 32);
    /* output layer: v.blk.0 32 + mm.0 32 + output_norm 32 + tied output 512 */
    CHECK_EQ_INT(m.devices[2].weights[4].size, 32 + 32 + 32 + 512);
    for (int d = 0; d < 3; d++) {
        uint64_t s = d == 0 ? m.input_weights.size : 0;
        for (int i = 0; i <= 4; i++) s += m.devices[d].weights[i].size;
        CHECK_EQ_INT(atomic_load(&be->devices[d].used), s);
    }
    loom_backend_memory_free(&m);

    /* load writes every target: the tied copy equals token_embd, rope copies equal the file */
    CHECK(loom_backend_load(be, NULL, NULL, NULL) == LOOM_OK);
    loom_tensor *a = loom_backend_get_tensor(be, "token_embd.weight");
    loom_tensor *b = loom_backend_get_tensor(be, "output.weight");
    CHECK(a && b && a->data != b->data && !memcmp(a->data, b->data, NE * NV * 4));
    float expect_rope[4];
    for (int i = 0; i < 4; i++) expect_rope[i] = wval(1, i);
    t = loom_backend_get_tensor(be, "blk.2.rope_freqs.weight");
    CHECK(t && !memcmp(t->data, expect_rope, sizeof expect_rope));
    loom_backend_close(be);

    /* an index >= block_count is a format error naming the tensor */
    fake_opts bad = {.blocks = 3, .bad_layer = 3};
    loom_error be2 = {0};
    be = open_fake(&bad, NULL, 0, false, &st, &be2);
    CHECK_EQ_INT(st, LOOM_ERR_FORMAT);
    CHECK(be == NULL);
    CHECK(strstr(be2.msg, "blk.3.x.weight") != NULL);
    /* block_count stored as i32 is accepted */
    fake_opts i32 = {.blocks = 2, .bad_layer = -1, .i32_blocks = true};
    be = open_fake(&i32, NULL, 0, false, &st, &e);
    CHECK_EQ_INT(st, LOOM_OK);
    CHECK_EQ_INT(loom_backend_block_count(be), 2);
    loom_backend_close(be);
    unlink(g_path);
}

/* ---------------------------------------------------------------- scheduler */

/* x = rows of token_embd; per layer: x = x + silu(attn_q x rms_norm(x) * norm_w), with a
 * layer cache tensor the residual is also copied into; logits = output x rms_norm(x) */
typedef struct eval_stats {
    int nodes, weight_ops, on_weight_dev, devs_seen;
} eval_stats;

/* Every op with a weight operand must run on that weight's device. */
static loom_backend *g_cancel_be; /* cancel this backend after g_cancel_after nodes */
static int g_cancel_after;

static bool on_eval(loom_tensor *t, void *user) {
    eval_stats *es = user;
    es->nodes++;
    if (g_cancel_be && es->nodes == g_cancel_after) loom_backend_cancel(g_cancel_be);
    es->devs_seen |= 1 << t->sched_dev;
    for (int k = 0; k < LOOM_MAX_SRC; k++) {
        const loom_tensor *b = t->src[k] ? loom_tensor_base(t->src[k]) : NULL;
        if (b && (b->flags & LOOM_TF_WEIGHT)) {
            es->weight_ops++;
            if (t->sched_dev == b->device) es->on_weight_dev++;
            break;
        }
    }
    return true;
}

static eval_stats g_stats;

static loom_status run_graph(loom_backend *be, int blocks, const int32_t *ids, int n_tok, float *out,
                             int64_t *cache_bytes) {
    loom_ctx *ctx;
    loom_error e = {0};
    loom_status s = loom_backend_ctx_new(be, 0, &ctx, &e);
    if (s) {
        fprintf(stderr, "ctx: %s\n", e.msg);
        return s;
    }
    int64_t ne1[1] = {n_tok};
    loom_tensor *tid = loom_from_i32(loom_ctx_input(ctx), ids, (size_t)n_tok, 1, ne1);
    loom_tensor *x = loom_get_rows(ctx, loom_backend_get_tensor(be, "token_embd.weight"), tid);
    char nm[64];
    for (int l = 0; l < blocks; l++) {
        snprintf(nm, sizeof nm, "blk.%d.attn_norm.weight", l);
        loom_tensor *h = loom_rms_norm(ctx, x, loom_backend_get_tensor(be, nm), 1e-5f);
        snprintf(nm, sizeof nm, "blk.%d.attn_q.weight", l);
        loom_tensor *y = loom_mul_mat(ctx, loom_backend_get_tensor(be, nm), h);
        x = loom_add(ctx, x, loom_silu(ctx, y));
        int64_t cne[2] = {NE, n_tok};
        loom_tensor *cache = loom_zeros(loom_ctx_layer(ctx, l), LOOM_TYPE_F32, 2, cne);
        loom_ctx_forward(ctx, loom_cpy(ctx, x, cache));
        x = loom_add(ctx, x, loom_scale(ctx, cache, 0.5f)); /* reads the cache after the copy */
    }
    loom_tensor *h = loom_rms_norm(ctx, x, loom_backend_get_tensor(be, "output_norm.weight"), 1e-5f);
    loom_tensor *logits = loom_mul_mat(ctx, loom_backend_get_tensor(be, "output.weight"), h);
    loom_ctx_forward(ctx, logits);
    memset(&g_stats, 0, sizeof g_stats);
    loom_ctx_set_eval_callback(ctx, on_eval, &g_stats);
    s = loom_ctx_status(ctx);
    if (!s) s = loom_ctx_reserve(ctx);
    if (!s) s = loom_ctx_compute(ctx, 1, &logits);
    if (!s) s = loom_tensor_read_f32(logits, out, (size_t)(NV * n_tok));
    if (s && s != LOOM_ERR_CANCELLED) fprintf(stderr, "graph: %s\n", loom_ctx_error(ctx));
    loom_backend_memory m;
    if (cache_bytes && !loom_backend_memory_get(be, &m)) {
        *cache_bytes = 0;
        for (int d = 0; d < m.n_devices; d++)
            for (int i = 0; i < m.devices[d].n_layers; i++) *cache_bytes += (int64_t)m.devices[d].cache[i].size;
        loom_backend_memory_free(&m);
    }
    loom_ctx_free(ctx);
    return s;
}

static void reference(int blocks, const int32_t *ids, int n_tok, double *out) {
    for (int t = 0; t < n_tok; t++) {
        double x[NE];
        /* token_embd is tensor 0 in write_fake (no rope/extras here) */
        for (int i = 0; i < NE; i++) x[i] = wval(0, ids[t] * NE + i);
        int tid = 1;
        for (int l = 0; l < blocks; l++) {
            double ss = 0, h[NE], y[NE];
            for (int i = 0; i < NE; i++) ss += x[i] * x[i];
            double sc = 1.0 / sqrt(ss / NE + 1e-5);
            for (int i = 0; i < NE; i++) h[i] = x[i] * sc * wval(tid, i);
            for (int r = 0; r < NE; r++) {
                y[r] = 0;
                for (int i = 0; i < NE; i++) y[r] += wval(tid + 1, r * NE + i) * h[i];
            }
            for (int i = 0; i < NE; i++) x[i] += y[i] / (1 + exp(-y[i]));
            for (int i = 0; i < NE; i++) x[i] += 0.5 * x[i];
            tid += 2;
        }
        double ss = 0, h[NE];
        for (int i = 0; i < NE; i++) ss += x[i] * x[i];
        double sc = 1.0 / sqrt(ss / NE + 1e-5);
        for (int i = 0; i < NE; i++) h[i] = x[i] * sc * wval(tid, i);
        for (int r = 0; r < NV; r++) {
            out[t * NV + r] = 0;
            for (int i = 0; i < NE; i++) out[t * NV + r] += wval(tid + 1, r * NE + i) * h[i];
        }
    }
}

/* The scheduler split into runs and copied across device boundaries. */
static void be_sched_stats_check(loom_backend *be, int k) {
    struct { int64_t n_runs, n_copies; } c;
    be_sched_counts(be, &c.n_runs, &c.n_copies);
    if (k == 0) {
        CHECK_EQ_INT(c.n_runs, 1);
        CHECK_EQ_INT(c.n_copies, 0);
    } else {
        CHECK(c.n_runs > 1);
        CHECK(c.n_copies > 0);
    }
}

static void test_split_compute(void) {
    const int blocks = 4, n_tok = 3;
    const int32_t ids[3] = {1, 7, 15};
    fake_opts o = {.blocks = blocks, .bad_layer = -1};
    const char *specs[3] = {NULL, "gpu0=1MiB", "gpu0=1MiB,gpu1=1MiB"};
    int ngls[3] = {0, 3, 5};
    float out[3][NV * 3];
    double ref[NV * 3];
    reference(blocks, ids, n_tok, ref);
    for (int k = 0; k < 3; k++) {
        loom_status st;
        loom_error e = {0};
        loom_backend *be = open_fake(&o, specs[k], ngls[k], false, &st, &e);
        CHECK_MSG(st == LOOM_OK, "%s", e.msg);
        if (!be) return;
        CHECK(loom_backend_load(be, NULL, NULL, NULL) == LOOM_OK);
        int64_t cache = -1;
        CHECK_EQ_INT(run_graph(be, blocks, ids, n_tok, out[k], &cache), LOOM_OK);
        CHECK_EQ_INT(cache, blocks * NE * n_tok * 4); /* layer tensors counted as cache */
        CHECK(g_stats.weight_ops >= 2 * blocks + 3);
        CHECK_EQ_INT(g_stats.on_weight_dev, g_stats.weight_ops);
        CHECK_EQ_INT(g_stats.devs_seen, (1 << (k + 1)) - 1); /* every device computed something */
        be_sched_stats_check(be, k);
        loom_backend_memory m;
        if (!loom_backend_memory_get(be, &m)) {
            /* devices holding layers planned compute memory */
            for (int d = 0; d < m.n_devices; d++) {
                CHECK_MSG(m.devices[d].graph.size > 0, "device %d graph 0", d);
                CHECK_EQ_INT(m.devices[d].graph.status, LOOM_ALLOC_ALLOCATED);
            }
            loom_backend_memory_free(&m);
        }
        /* a second compute on the same backend gives the same result */
        float again[NV * 3];
        CHECK_EQ_INT(run_graph(be, blocks, ids, n_tok, again, NULL), LOOM_OK);
        CHECK(!memcmp(again, out[k], sizeof again));
        /* loom_backend_cancel during compute stops it; the next compute works */
        g_cancel_be = be;
        g_cancel_after = 3;
        CHECK_EQ_INT(run_graph(be, blocks, ids, n_tok, again, NULL), LOOM_ERR_CANCELLED);
        CHECK(g_stats.nodes < 8);
        g_cancel_be = NULL;
        CHECK_EQ_INT(run_graph(be, blocks, ids, n_tok, again, NULL), LOOM_OK);
        CHECK(!memcmp(again, out[k], sizeof again));
        loom_backend_close(be);
    }
    CHECK(!memcmp(out[0], out[1], sizeof out[0]));
    CHECK(!memcmp(out[0], out[2], sizeof out[0]));
    double maxd = 0;
    for (int i = 0; i < NV * n_tok; i++) maxd = fmax(maxd, fabs(out[0][i] - ref[i]));
    CHECK_MSG(maxd < 1e-4, "max diff vs float64 reference %g", maxd);
    unlink(g_path);
}

static void test_ctx_limits(void) {
    loom_status st;
    loom_error e = {0};
    fake_opts o = {.blocks = 2, .bad_layer = -1};
    /* N=1: only layer 1 (attn_norm 32 + attn_q 256 = 288 bytes) on gpu0, which holds 300 */
    loom_backend *be = open_fake(&o, "gpu0=300B", 1, false, &st, &e);
    CHECK_MSG(st == LOOM_OK, "%s", e.msg);
    if (!be) return;
    loom_ctx *ctx = NULL;
    CHECK(loom_backend_ctx_new(be, loom_backend_max_nodes(be) + 1, &ctx, NULL) == LOOM_ERR_INVALID_ARG);
    CHECK(loom_backend_ctx_new(be, 0, &ctx, NULL) == LOOM_OK);
    if (ctx) {
        CHECK_EQ_INT(loom_ctx_max_nodes(ctx), 8192);
        int64_t ne[2] = {NE, 4};
        /* layer 1 is on gpu0 which is full: the layer allocation fails and is reported */
        loom_tensor *c = loom_zeros(loom_ctx_layer(ctx, 1), LOOM_TYPE_F32, 2, ne);
        CHECK(loom_tensor_is_poison(c));
        CHECK_EQ_INT(loom_ctx_status(ctx), LOOM_ERR_NOMEM);
        loom_backend_memory m;
        CHECK(loom_backend_memory_get(be, &m) == LOOM_OK);
        CHECK_EQ_INT(m.devices[1].cache[1].size, NE * 4 * 4);
        CHECK_EQ_INT(m.devices[1].cache[1].status, LOOM_ALLOC_FAILED);
        loom_backend_memory_free(&m);
        loom_ctx_free(ctx);
    }
    /* a graph whose compute buffer does not fit on gpu0: reserve -> NOMEM, graph Failed
     * with the attempted size */
    CHECK(loom_backend_ctx_new(be, 0, &ctx, NULL) == LOOM_OK);
    if (ctx) {
        int32_t ids[4] = {0, 1, 2, 3};
        int64_t n4[1] = {4};
        loom_tensor *tid = loom_from_i32(loom_ctx_input(ctx), ids, 4, 1, n4);
        loom_tensor *x = loom_get_rows(ctx, loom_backend_get_tensor(be, "token_embd.weight"), tid);
        loom_tensor *h = loom_rms_norm(ctx, x, loom_backend_get_tensor(be, "blk.1.attn_norm.weight"), 1e-5f);
        loom_tensor *y = loom_mul_mat(ctx, loom_backend_get_tensor(be, "blk.1.attn_q.weight"), h);
        loom_ctx_forward(ctx, y);
        CHECK_EQ_INT(loom_ctx_reserve(ctx), LOOM_ERR_NOMEM);
        CHECK(strstr(loom_ctx_error(ctx), "gpu0") != NULL);
        loom_backend_memory m;
        CHECK(loom_backend_memory_get(be, &m) == LOOM_OK);
        CHECK_EQ_INT(m.devices[1].graph.status, LOOM_ALLOC_FAILED);
        CHECK(m.devices[1].graph.size >= 2 * NE * 4 * 4); /* rms_norm + mul_mat results, 4 tokens */
        CHECK_EQ_INT(m.devices[0].graph.status, LOOM_ALLOC_ALLOCATED);
        loom_backend_memory_free(&m);
        loom_ctx_free(ctx);
    }
    loom_cache_config cc = loom_backend_cache_config(be);
    CHECK(cc.cache_padding == 32 && cc.permuted_v && cc.mask_type == LOOM_TYPE_F32 && cc.mask_batch_padding == 1);
    be->params.flash_attn = true;
    cc = loom_backend_cache_config(be);
    CHECK(cc.cache_padding == 256 && !cc.permuted_v && cc.mask_type == LOOM_TYPE_F16 && cc.mask_batch_padding == 64);
    loom_backend_close(be);
    unlink(g_path);
}

int main(void) {
    unsetenv("LOOM_SIM_DEVICES");
    test_classification();
    test_split_compute();
    test_ctx_limits();
    return test_finish("test_backend_sched");
}
