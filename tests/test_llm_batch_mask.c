/* KV cache masks (contract §7.5) against masks computed here from first principles:
 * the test keeps its own list of what each cell holds (it places every batch where
 * llm_kv_cells_find says and records position and sequences itself), and for each
 * batch row derives visibility from the rules - same sequence, causal, sliding window
 * (q >= p - W), chunked attention (q >= p - p % C) - then compares every entry of
 * llm_kv_cells_mask, the padding rows (-inf), and the visible range (min..max cells of
 * the batch's sequences, rounded to the padding). Random batches interleave sequences,
 * give rows several sequences, remove ranges and copy sequences, so holes appear. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/model_internal.h"
#include "test_util.h"

enum { NC = 96, NS = 5 };

typedef struct {
    int pos;          /* -1 empty */
    unsigned seqs;    /* bit s */
} cell;
static cell g_c[NC];

static uint32_t g_rng = 99;
static uint32_t rnd(uint32_t n) {
    g_rng = g_rng * 1664525u + 1013904223u;
    return (g_rng >> 8) % n;
}

static int check_batch(llm_kv_cells *c, const loom_batch *b, int64_t tpad) {
    int64_t loc = llm_kv_cells_find(c, b->n_tokens);
    /* the test's own free-run search */
    int64_t want_loc = -1;
    for (int64_t i = 0; i + b->n_tokens <= NC && want_loc < 0; i++) {
        bool ok = true;
        for (int64_t j = 0; j < b->n_tokens; j++) ok = ok && g_c[i + j].pos < 0;
        if (ok) want_loc = i;
    }
    CHECK_EQ_INT(loc, want_loc);
    if (loc < 0) return 0;
    int64_t start, L;
    llm_kv_cells_range(c, b, loc, &start, &L);
    llm_kv_cells_apply(c, b, loc);
    unsigned bs = 0;
    for (int r = 0; r < b->n_tokens; r++) {
        unsigned m = 0;
        for (int k = 0; k < b->n_seq[r]; k++) m |= 1u << b->seq_id[r * b->seq_capacity + k];
        g_c[loc + r].pos = b->pos[r];
        g_c[loc + r].seqs = m;
        bs |= m;
    }
    /* range: every cell of the batch's sequences inside, bounds on the padding, tight */
    int64_t lo = NC, hi = -1;
    for (int64_t i = 0; i < NC; i++)
        if (g_c[i].pos >= 0 && (g_c[i].seqs & bs)) {
            if (i < lo) lo = i;
            if (i > hi) hi = i;
        }
    int64_t pad = c->pad, wstart = lo / pad * pad, wend = (hi + 1 + pad - 1) / pad * pad;
    if (wend > NC) wend = NC;
    CHECK_EQ_INT(start, wstart);
    CHECK_EQ_INT(L, wend - wstart);
    float *mask = malloc((size_t)(L * tpad) * sizeof *mask);
    llm_kv_cells_mask(c, b, start, L, tpad, mask);
    int bad = 0;
    for (int64_t r = 0; r < tpad; r++)
        for (int64_t j = 0; j < L; j++) {
            bool vis = false;
            if (r < b->n_tokens) {
                const cell *x = &g_c[start + j];
                unsigned rs = 0;
                for (int k = 0; k < b->n_seq[r]; k++) rs |= 1u << b->seq_id[r * b->seq_capacity + k];
                int p = b->pos[r], q = x->pos;
                vis = q >= 0 && (x->seqs & rs) && q <= p;
                if (c->window > 0 && q < p - c->window) vis = false;
                if (c->chunk > 0 && q < p - p % c->chunk) vis = false;
            }
            float v = mask[r * L + j];
            bad += vis ? v != 0.0f : !(isinf(v) && v < 0);
        }
    CHECK_MSG(bad == 0, "%d wrong mask entries (window %d, chunk %d)", bad, c->window, c->chunk);
    free(mask);
    return 1;
}

static void run(int64_t pad, int32_t window, int32_t chunk, int64_t tpad_mult) {
    llm_kv_cells c;
    loom_error err = {0};
    CHECK(llm_kv_cells_init(&c, NC, NS, pad, window, chunk, &err) == LOOM_OK);
    for (int i = 0; i < NC; i++) g_c[i] = (cell){-1, 0};
    int next[NS] = {0};
    loom_batch b;
    CHECK(loom_batch_init(&b, 8, 2, &err) == LOOM_OK);
    int batches = 0;
    for (int it = 0; it < 60; it++) {
        int op = (int)rnd(10);
        if (op == 0) { /* remove a range of a sequence (rollback or a hole) */
            int s = (int)rnd(NS), p0 = (int)rnd(8), p1 = rnd(2) ? -1 : p0 + 1 + (int)rnd(4);
            llm_kv_cells_seq_remove(&c, s, p0, p1);
            for (int i = 0; i < NC; i++)
                if (g_c[i].pos >= p0 && (p1 < 0 || g_c[i].pos < p1) && (g_c[i].seqs >> s & 1)) {
                    g_c[i].seqs &= ~(1u << s);
                    if (!g_c[i].seqs) g_c[i].pos = -1;
                }
            continue;
        }
        if (op == 1) { /* copy a whole sequence */
            int a = (int)rnd(NS), d = (int)rnd(NS);
            if (a == d) continue;
            llm_kv_cells_seq_copy(&c, a, d, -1, -1);
            for (int i = 0; i < NC; i++) {
                if (g_c[i].pos < 0) continue;
                g_c[i].seqs &= ~(1u << d);
                if (g_c[i].seqs >> a & 1) g_c[i].seqs |= 1u << d;
                if (!g_c[i].seqs) g_c[i].pos = -1;
            }
            next[d] = next[a];
            continue;
        }
        /* a batch: rows of several sequences interleaved, some rows in two sequences */
        loom_batch_clear(&b);
        int T = 1 + (int)rnd(8);
        for (int r = 0; r < T; r++) {
            int32_t ids[2];
            ids[0] = (int32_t)rnd(NS);
            int ns = 1;
            if (rnd(4) == 0) {
                ids[1] = (int32_t)((ids[0] + 1 + (int32_t)rnd(NS - 1)) % NS);
                ns = 2;
            }
            int p = next[ids[0]];
            if (ns == 2 && next[ids[1]] > p) p = next[ids[1]];
            p += (int)rnd(2); /* positions need not be contiguous */
            for (int k = 0; k < ns; k++) next[ids[k]] = p + 1;
            loom_batch_add(&b, 7, p, ids, ns, true, &err);
        }
        int64_t tpad = (T + tpad_mult - 1) / tpad_mult * tpad_mult;
        batches += check_batch(&c, &b, tpad);
    }
    printf("  pad %2lld window %2d chunk %d: %d batches checked, %lld cells used\n", (long long)pad, window, chunk,
           batches, (long long)c.used);
    CHECK(batches > 10);
    loom_batch_free(&b);
    llm_kv_cells_free(&c);
}

/* Sliding-window eviction keeps exactly the cells a later token of the sequence can
 * see, and a fixed memory of window + batch cells per sequence suffices. */
static void run_swa_memory(void) {
    enum { W = 6, NB = 4 };
    llm_kv_cells c;
    loom_error err = {0};
    CHECK(llm_kv_cells_init(&c, 2 * (W + NB), 2, 1, W, 0, &err) == LOOM_OK);
    loom_batch b;
    CHECK(loom_batch_init(&b, NB, 1, &err) == LOOM_OK);
    int ok = 0;
    for (int step = 0; step < 40; step++) {
        loom_batch_clear(&b);
        for (int32_t s = 0; s < 2; s++)
            for (int k = 0; k < 2; k++) loom_batch_add(&b, 1, step * 2 + k, &s, 1, true, &err);
        int64_t loc = llm_kv_cells_find(&c, b.n_tokens);
        CHECK(loc >= 0);
        if (loc < 0) break;
        llm_kv_cells_apply(&c, &b, loc);
        for (int32_t s = 0; s < 2; s++) llm_kv_cells_seq_evict(&c, s);
        /* each sequence holds positions pos_max - W + 1 .. pos_max (the window) */
        for (int s = 0; s < 2; s++) {
            int32_t pm = llm_kv_cells_pos_max(&c, s), pl = llm_kv_cells_pos_min(&c, s);
            int64_t n = llm_kv_cells_count(&c, s);
            int32_t lo = pm + 1 - W < 0 ? 0 : pm + 1 - W;
            ok += pm == step * 2 + 1 && pl == lo && n == pm - lo + 1;
        }
    }
    CHECK_EQ_INT(ok, 80);
    loom_batch_free(&b);
    llm_kv_cells_free(&c);
}

int main(void) {
    run(1, 0, 0, 1);
    run(8, 0, 0, 1);
    run(32, 0, 0, 64);
    run(8, 3, 0, 1);
    run(1, 5, 0, 4);
    run(8, 0, 4, 1);
    run(16, 2, 0, 64);
    run_swa_memory();
    return test_finish("test_llm_batch_mask");
}
