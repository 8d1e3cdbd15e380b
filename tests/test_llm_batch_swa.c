/* Sliding-window layers (contract SWAMem / WrapperCache), engine level: a cache whose
 * layer 1 is a sliding-window layer with bounded memory (window + n_batch cells per
 * sequence, old cells dropped after every batch and reused) gives the same attention
 * outputs as a cache that keeps every cell and applies the window by the mask only.
 * A tiny graph per batch (random q/k/v, put, get, mask, sdpa per layer) for two
 * sequences decoded together for more positions than the bounded group has cells;
 * with and without flash attention. Also: the bounded group's bytes are accounted as
 * Cache[1], smaller than the full layer's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/model_internal.h"
#include "test_util.h"

enum { D = 8, H = 4, HKV = 2, W = 5, NB = 4, NCTX = 200, NSEQ = 2, STEPS = 80 };

static uint32_t g_rng = 5;
static float frand(void) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return (float)((g_rng >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

/* One batch through cache kv: outputs [2 layers][D*H*T] into out. */
static loom_status step(loom_backend *be, llm_kv_cache *kv, const loom_batch *b, const float *q, const float *k,
                        const float *v, bool commit, float *out, loom_error *err) {
    loom_status s = llm_kv_prepare(kv, be, b, err);
    if (s) return s;
    int T = b->n_tokens;
    loom_ctx *ctx;
    if ((s = loom_backend_ctx_new(be, 0, &ctx, err))) return s;
    loom_ctx *in = loom_ctx_input(ctx);
    int64_t nq[3] = {D, H, T}, nk[3] = {D, HKV, T};
    loom_tensor *tq = loom_from_f32(in, q, (size_t)(D * H * T), 3, nq);
    loom_tensor *tk = loom_from_f32(in, k, (size_t)(D * HKV * T), 3, nk);
    loom_tensor *tv = loom_from_f32(in, v, (size_t)(D * HKV * T), 3, nk);
    loom_tensor *masks[LLM_KV_MAX_GROUPS], *o[2];
    llm_kv_build_masks(ctx, kv, T, false, masks, NULL);
    for (int il = 0; il < 2; il++) {
        llm_kv_put(ctx, kv, il, tk, tv, NULL);
        loom_tensor *K, *V;
        llm_kv_get(ctx, kv, il, &K, &V);
        o[il] = loom_sdpa(ctx, tq, K, V, llm_kv_layer_mask(kv, masks, il), 0.35f);
        loom_ctx_forward(ctx, o[il]);
    }
    s = loom_ctx_status(ctx);
    if (!s) s = loom_ctx_compute(ctx, 2, o);
    for (int il = 0; il < 2 && !s; il++) s = loom_tensor_read_f32(o[il], out + (size_t)il * D * H * T, (size_t)(D * H * T));
    if (s) loom_error_set(err, s, "compute: %s", loom_ctx_error(ctx));
    loom_ctx_free(ctx);
    if (s) llm_kv_unprepare(kv, b);
    else if (commit) llm_kv_commit(kv, b);
    return s;
}

static void run(bool fa) {
    loom_backend_params bp = loom_backend_default_params();
    bp.flash_attn = fa;
    bp.n_threads = 1;
    loom_backend *be = NULL;
    loom_error err = {0};
    CHECK(loom_backend_open(test_path("models/stories260K.gguf"), &bp, &be, &err) == LOOM_OK);
    if (!be) return;
    loom_model_hparams hp = {0};
    hp.n_layer = 2;
    hp.head_dim_k = hp.head_dim_v = D;
    hp.n_head_kv = HKV;
    llm_kv_layer_type types[2] = {{.window = 0}, {.window = W}};
    llm_kv_cache a, b;
    CHECK(llm_kv_init(&a, be, &hp, types, NCTX, NSEQ, NB, LOOM_TYPE_F32, &err) == LOOM_OK);
    /* n_batch >= n_ctx: the window group keeps everything (no memory bound) */
    CHECK(llm_kv_init(&b, be, &hp, types, NCTX, NSEQ, NCTX, LOOM_TYPE_F32, &err) == LOOM_OK);
    CHECK_EQ_INT(a.n_groups, 2);
    int64_t pad = a.cfg.cache_padding;
    int64_t want_swa = (NSEQ * (W + NB) + pad - 1) / pad * pad, want_full = (NSEQ * NCTX + pad - 1) / pad * pad;
    CHECK_EQ_INT(a.grp[1].cells.n, want_swa);
    CHECK_EQ_INT(a.grp[0].cells.n, want_full);
    CHECK_EQ_INT(b.grp[1].cells.n, want_full);
    loom_backend_memory mem;
    if (loom_backend_memory_get(be, &mem) == LOOM_OK) {
        /* a and b both accounted: layer 0 = 2 full, layer 1 = bounded + full */
        uint64_t cell = 2 * (uint64_t)D * HKV * 4;
        CHECK_EQ_INT(mem.devices[0].cache[0].size, 2 * want_full * cell);
        CHECK_EQ_INT(mem.devices[0].cache[1].size, (want_swa + want_full) * cell);
        loom_backend_memory_free(&mem);
    }
    loom_batch bt;
    CHECK(loom_batch_init(&bt, NB, 1, &err) == LOOM_OK);
    float q[D * H * NB], k[D * HKV * NB], v[D * HKV * NB], oa[2 * D * H * NB], ob[2 * D * H * NB];
    double worst = 0;
    int steps = 0;
    for (int st = 0; st < STEPS; st++) {
        /* two tokens of each sequence per batch, interleaved */
        loom_batch_clear(&bt);
        for (int r = 0; r < NB; r++) {
            int32_t s = r % 2;
            loom_batch_add(&bt, 1, st * 2 + r / 2, &s, 1, true, &err);
        }
        for (int i = 0; i < D * H * NB; i++) q[i] = frand();
        for (int i = 0; i < D * HKV * NB; i++) k[i] = frand(), v[i] = frand();
        loom_status s1 = step(be, &a, &bt, q, k, v, true, oa, &err);
        CHECK_MSG(s1 == LOOM_OK, "bounded cache, step %d: %s", st, err.msg);
        loom_status s2 = step(be, &b, &bt, q, k, v, false, ob, &err);
        CHECK_MSG(s2 == LOOM_OK, "full cache, step %d: %s", st, err.msg);
        if (s1 || s2) break;
        for (int i = 0; i < 2 * D * H * NB; i++) {
            double d = fabs((double)oa[i] - (double)ob[i]);
            if (d > worst) worst = d;
        }
        steps++;
        /* bounded: each sequence holds at most the window */
        for (int sq = 0; sq < NSEQ; sq++) CHECK(llm_kv_cells_count(&a.grp[1].cells, sq) <= W);
    }
    /* the full cache kept all 160 positions per sequence: more than the bounded group's cells */
    CHECK_EQ_INT(llm_kv_cells_count(&b.grp[1].cells, 0), STEPS * 2);
    CHECK(STEPS * 2 * NSEQ > want_swa);
    printf("  %s: %d batches, bounded (%lld cells) vs full (%lld cells) window layer: max abs diff %.3g\n",
           fa ? "flash" : "plain", steps, (long long)want_swa, (long long)want_full, worst);
    /* the same cells, other order in the range: float summation order only */
    CHECK_MSG(worst <= 1e-6, "max abs diff %g", worst);
    loom_batch_free(&bt);
    llm_kv_free(&a);
    llm_kv_free(&b);
    loom_backend_close(be);
}

/* Model level: stories260K with its odd layers turned into sliding-window layers (the
 * cache re-made through the internal API, as model code would declare them): decoding
 * two sequences in mixed batches through the bounded cache gives the logits of the
 * same model whose window group has room for every cell (n_batch >= n_ctx). Covers the kept
 * decode graph with two cell groups, eviction, and prefix reuse refusing a prefix whose
 * window was dropped. */
static loom_model *open_swa(bool fa, int n_batch_kv, loom_error *err) {
    loom_model_params p = loom_model_default_params();
    p.path = test_path("models/stories260K.gguf");
    p.n_ctx = 64;
    p.n_batch = 8;
    p.n_seq_max = 2;
    p.n_threads = 1;
    p.flash_attn = fa;
    p.cache_type = LOOM_TYPE_F32;
    loom_model *m = NULL;
    if (loom_model_open(&p, &m, err)) return NULL;
    for (int il = 0; il < m->hp.n_layer; il++) m->kv_types[il] = (llm_kv_layer_type){.window = il % 2 ? 6 : 0};
    llm_decode_drop(m);
    llm_kv_free(&m->kv);
    if (llm_kv_init(&m->kv, m->be, &m->hp, m->kv_types, m->n_ctx, m->n_seq_max, n_batch_kv, LOOM_TYPE_F32, err)) {
        loom_model_close(m);
        return NULL;
    }
    return m;
}

static void run_model(bool fa) {
    loom_error err = {0};
    loom_model *a = open_swa(fa, 8, &err), *b = open_swa(fa, 64, &err);
    CHECK_MSG(a && b, "%s", err.msg);
    if (!a || !b) {
        loom_model_close(a);
        loom_model_close(b);
        return;
    }
    CHECK_EQ_INT(a->kv.n_groups, 2);
    CHECK(a->kv.grp[1].cells.n < b->kv.grp[1].cells.n || fa);
    loom_batch bt;
    CHECK(loom_batch_init(&bt, 8, 1, &err) == LOOM_OK);
    int nv = loom_model_n_vocab(a), next[2] = {0, 0}, steps = 0;
    int32_t seq0[128];
    double worst = 0;
    uint32_t rng = 3;
    for (int st = 0; st < 24; st++) {
        loom_batch_clear(&bt);
        for (int32_t s = 0; s < 2; s++) {
            int take = (st + s) % 3 == 0 ? 3 : 1; /* prompt-like chunks and single steps mixed */
            for (int k = 0; k < take; k++) {
                rng = rng * 1664525u + 1013904223u;
                int32_t t = 1 + (int32_t)((rng >> 8) % (uint32_t)(nv - 1));
                if (s == 0) seq0[next[0]] = t;
                loom_batch_add(&bt, t, next[s]++, &s, 1, true, &err);
            }
        }
        loom_status sa = loom_model_decode(a, &bt, &err);
        CHECK_MSG(sa == LOOM_OK, "bounded: %s", err.msg);
        loom_status sb = loom_model_decode(b, &bt, &err);
        CHECK_MSG(sb == LOOM_OK, "full: %s", err.msg);
        if (sa || sb) break;
        for (int r = 0; r < bt.n_tokens; r++) {
            const float *la = loom_model_batch_logits(a, r), *lb = loom_model_batch_logits(b, r);
            double num = 0, den = 0;
            for (int i = 0; i < nv; i++) {
                double d = fabs((double)la[i] - (double)lb[i]);
                if (d > num) num = d;
                if (fabs((double)lb[i]) > den) den = fabs((double)lb[i]);
            }
            if (num / den > worst) worst = num / den;
        }
        steps++;
    }
    /* the bounded window group holds at most the window per sequence */
    for (int s = 0; s < 2; s++) CHECK(llm_kv_cells_count(&a->kv.grp[1].cells, s) <= 6);
    CHECK_EQ_INT(loom_model_seq_n_tokens(a, 0), next[0]);
    /* prefix reuse with window layers: the whole history plus one token reuses all of
     * it (the window before the next position is cached); the first 11 tokens alone
     * cannot be reused (the window before position 10 was dropped) */
    int n0 = next[0];
    seq0[n0] = 5;
    int32_t na = -1;
    CHECK(loom_model_seq_reuse_prefix(a, 0, seq0, n0 + 1, &na, &err) == LOOM_OK);
    CHECK_EQ_INT(na, n0);
    CHECK(loom_model_seq_reuse_prefix(a, 0, seq0, 11, &na, &err) == LOOM_OK);
    CHECK_EQ_INT(na, 0);
    CHECK_EQ_INT(loom_model_seq_n_tokens(a, 0), 0);
    printf("  model, %s: %d mixed batches, bounded vs full window layers: max rel err %.3g\n", fa ? "flash" : "plain",
           steps, worst);
    CHECK_MSG(worst <= 5e-6, "rel err %g", worst);
    loom_batch_free(&bt);
    loom_model_close(a);
    loom_model_close(b);
}

int main(void) {
    run(false);
    run(true);
    run_model(false);
    run_model(true);
    return test_finish("test_llm_batch_swa");
}
