/* Sequence operations on the multi-sequence KV cache, each checked against a fresh
 * decode of what the sequence should hold afterwards (a model holding one sequence,
 * given the tokens at their positions):
 *   remove then re-decode == fresh decode; a copied sequence continues exactly as its
 *   source (and shares its cells); shift (RoPE re-rotation of cached keys) == the
 *   sequence decoded at the shifted positions; context shift == the kept tokens
 *   decoded at their new positions; compaction (defrag) leaves logits unchanged;
 *   prefix reuse finds the cached prefix in the sequence itself or in another one;
 *   bad batches fail with the cache unchanged.
 * With and without flash attention (stories260K, F32 cache). The shift also on the
 * independent models of tests/data/arch whose keys rotate differently (F32 cache):
 * deepseek2 (rope dims at the end of a latent key; legacy MHA keys), cohere2 (full
 * layers without rope), olmo2 (window layers; YaRN on the full one: the rotation must
 * not scale the keys again), phi3 (LongRoPE factors). Not mistral3: its query
 * temperature depends on absolute positions, so a shifted cache is not a fresh decode
 * at the new positions (in llama.cpp either). Not gemma2/gemma3 here: their F16/BF16
 * matrices take activations rounded to F16/BF16, and a rounding flip moves their
 * logits by 1e-4..2e-3 between two fresh decodes at offset positions already (no
 * shift involved). For every architecture file, the re-rotated keys themselves are
 * compared with the keys of a fresh decode at the shifted positions
 * (test_shift_keys): that check has no activation rounding in it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm/model_internal.h"
#include "test_util.h"

/* Re-rotated keys (RoPE by delta of RoPE by p) vs keys roped once at p + delta:
 * float rounding of the rotations, measured max ~1e-6 relative on the logits. */
static double g_tol_shift = 3e-6;
/* Same graph shapes, other cells: measured 0 to ~1e-6. */
#define TOL 5e-6

static loom_model_params g_p;
static int32_t g_nv;
static float *g_ref;

static loom_model *open_m(int n_seq, int n_ctx) {
    loom_model_params p = g_p;
    p.n_seq_max = n_seq;
    p.n_ctx = n_ctx;
    loom_model *m = NULL;
    loom_error err = {0};
    if (loom_model_open(&p, &m, &err)) printf("open: %s\n", err.msg);
    return m;
}

static loom_status add_rows(loom_model *m, int32_t seq, const int32_t *tok, const int32_t *pos, int n,
                            loom_error *err) {
    loom_batch b;
    loom_status s = loom_batch_init(&b, n, 1, err);
    if (s) return s;
    for (int i = 0; i < n; i++) loom_batch_add(&b, tok[i], pos[i], &seq, 1, i == n - 1, err);
    s = loom_model_decode(m, &b, err);
    loom_batch_free(&b);
    return s;
}

/* Logits of the last of n tokens at positions pos, decoded alone into g_ref. */
static void reference(const int32_t *tok, const int32_t *pos, int n) {
    loom_model *m = open_m(1, 64);
    CHECK(m != NULL);
    if (!m) return;
    loom_error err = {0};
    CHECK(add_rows(m, 0, tok, pos, n, &err) == LOOM_OK);
    const float *l = loom_model_batch_logits(m, n - 1);
    CHECK(l != NULL);
    if (l) memcpy(g_ref, l, (size_t)g_nv * sizeof *g_ref);
    loom_model_close(m);
}

static double rel_err(const float *a, const float *b) {
    if (!a || !b) return INFINITY;
    double num = 0, den = 0;
    for (int i = 0; i < g_nv; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > num) num = d;
        if (fabs((double)b[i]) > den) den = fabs((double)b[i]);
    }
    return num / den;
}

static void iota(int32_t *p, int n, int32_t from) {
    for (int i = 0; i < n; i++) p[i] = from + i;
}

static int32_t g_P[32], g_Q[32], g_pos[64];

static void test_remove_copy(const char *tag) {
    loom_error err = {0};
    loom_model *m = open_m(4, 64);
    if (!m) return;
    /* seq 0: P[0..16); roll back to 10 and decode P[10..16) again */
    CHECK(add_rows(m, 0, g_P, g_pos, 16, &err) == LOOM_OK);
    CHECK(loom_model_seq_remove(m, 0, 10, -1, &err) == LOOM_OK);
    CHECK_EQ_INT(loom_model_seq_pos_max(m, 0), 9);
    CHECK_EQ_INT(loom_model_seq_n_tokens(m, 0), 10);
    CHECK(add_rows(m, 0, g_P + 10, g_pos + 10, 6, &err) == LOOM_OK);
    reference(g_P, g_pos, 16);
    double e1 = rel_err(loom_model_batch_logits(m, 5), g_ref);
    CHECK_MSG(e1 <= TOL, "%s: remove + redecode: %g", tag, e1);

    /* copy 0 -> 1 (shared cells), then both continue with the same token together */
    CHECK(loom_model_seq_copy(m, 0, 1, -1, -1, &err) == LOOM_OK);
    CHECK_EQ_INT(loom_model_seq_n_tokens(m, 1), 16);
    CHECK_EQ_INT(m->kv.grp[0].cells.used, 16); /* shared, not duplicated */
    loom_batch b;
    CHECK(loom_batch_init(&b, 8, 1, &err) == LOOM_OK);
    int32_t s0 = 0, s1 = 1;
    loom_batch_add(&b, g_P[16], 16, &s0, 1, true, &err);
    loom_batch_add(&b, g_P[16], 16, &s1, 1, true, &err);
    CHECK(loom_model_decode(m, &b, &err) == LOOM_OK);
    reference(g_P, g_pos, 17);
    double e2 = rel_err(loom_model_batch_logits(m, 0), g_ref), e3 = rel_err(loom_model_batch_logits(m, 1), g_ref);
    CHECK_MSG(e2 <= TOL && e3 <= TOL, "%s: copy: %g %g", tag, e2, e3);
    /* sequence edits keep the last decode's logits (a server samples every row after
     * finishing some sequences) */
    CHECK(loom_model_seq_remove(m, 3, -1, -1, &err) == LOOM_OK);
    CHECK(loom_model_batch_logits(m, 1) != NULL);
    /* greedy continuation: identical in source and copy */
    int32_t t0 = loom_model_batch_argmax(m, 0), t1 = loom_model_batch_argmax(m, 1);
    int same = 0;
    for (int i = 0; i < 8; i++) {
        loom_batch_clear(&b);
        loom_batch_add(&b, t0, 17 + i, &s0, 1, true, &err);
        loom_batch_add(&b, t1, 17 + i, &s1, 1, true, &err);
        if (loom_model_decode(m, &b, &err)) break;
        same += t0 == t1 && rel_err(loom_model_batch_logits(m, 0), loom_model_batch_logits(m, 1)) <= TOL;
        t0 = loom_model_batch_argmax(m, 0);
        t1 = loom_model_batch_argmax(m, 1);
    }
    CHECK_EQ_INT(same, 8);
    /* keep: only seq 1 is left, with its 25 tokens */
    CHECK(loom_model_seq_keep(m, 1, &err) == LOOM_OK);
    CHECK_EQ_INT(loom_model_seq_n_tokens(m, 0), 0);
    CHECK_EQ_INT(loom_model_seq_n_tokens(m, 1), 25);
    CHECK_EQ_INT(m->kv.grp[0].cells.used, 25);
    printf("  %-6s remove+redecode %.3g, copy %.3g/%.3g, greedy copy == source %d/8\n", tag, e1, e2, e3, same);
    loom_batch_free(&b);
    loom_model_close(m);
}

/* used cells of the full-history group (a window group evicts) */
static int64_t full_used(const loom_model *m) {
    for (int g = 0; g < m->kv.n_groups; g++)
        if (m->kv.grp[g].cells.window == 0) return m->kv.grp[g].cells.used;
    return m->kv.grp[0].cells.used;
}

static void test_shift(const char *tag) {
    loom_error err = {0};
    loom_model *m = open_m(2, 64);
    if (!m) return;
    float *got = malloc((size_t)g_nv * sizeof *got);
    int32_t pos[32];
    /* Attention depends on relative positions only, so a whole sequence shifted by
     * delta (its cached keys re-rotated) continues exactly like the same tokens
     * decoded at the shifted positions. seq 1 holds other tokens meanwhile. */
    CHECK(add_rows(m, 1, g_Q, g_pos, 5, &err) == LOOM_OK);
    CHECK(add_rows(m, 0, g_P, g_pos, 12, &err) == LOOM_OK);
    CHECK(loom_model_seq_shift(m, 0, -1, -1, 5, &err) == LOOM_OK);
    CHECK_EQ_INT(loom_model_seq_pos_min(m, 0), 5);
    CHECK_EQ_INT(loom_model_seq_pos_max(m, 0), 16);
    CHECK_EQ_INT(loom_model_seq_pos_max(m, 1), 4);
    iota(pos, 32, 5);
    CHECK(add_rows(m, 0, g_P + 12, pos + 12, 1, &err) == LOOM_OK);
    memcpy(got, loom_model_batch_logits(m, 0), (size_t)g_nv * sizeof *got);
    reference(g_P, pos, 13);
    double e1 = rel_err(got, g_ref);
    CHECK_MSG(e1 <= g_tol_shift, "%s: shift: %g", tag, e1);

    /* a part moved away and back (+3 then -3): the keys round-trip */
    CHECK(loom_model_seq_shift(m, 0, 9, -1, 3, &err) == LOOM_OK);
    CHECK_EQ_INT(loom_model_seq_pos_max(m, 0), 20);
    /* order kept: moving positions 12.. down by 5 would pass position 8 */
    CHECK_EQ_INT(loom_model_seq_shift(m, 0, 12, -1, -5, &err), LOOM_ERR_INVALID_ARG);
    CHECK(loom_model_seq_shift(m, 0, 12, -1, -3, &err) == LOOM_OK);
    CHECK_EQ_INT(loom_model_seq_pos_max(m, 0), 17);
    CHECK(add_rows(m, 0, g_P + 13, pos + 13, 1, &err) == LOOM_OK);
    memcpy(got, loom_model_batch_logits(m, 0), (size_t)g_nv * sizeof *got);
    reference(g_P, pos, 14);
    double e2 = rel_err(got, g_ref);
    CHECK_MSG(e2 <= g_tol_shift, "%s: shift round trip: %g", tag, e2);

    /* a shared cell is unshared: seq 1 becomes a copy of seq 0 and moves by +2;
     * seq 0 keeps its positions, and both continue like fresh decodes */
    CHECK(loom_model_seq_copy(m, 0, 1, -1, -1, &err) == LOOM_OK);
    CHECK_EQ_INT(full_used(m), 14);
    CHECK(loom_model_seq_shift(m, 1, -1, -1, 2, &err) == LOOM_OK);
    CHECK_EQ_INT(loom_model_seq_pos_max(m, 0), 18);
    CHECK_EQ_INT(loom_model_seq_pos_max(m, 1), 20);
    CHECK_EQ_INT(full_used(m), 28);
    CHECK(add_rows(m, 0, g_P + 14, pos + 14, 1, &err) == LOOM_OK);
    memcpy(got, loom_model_batch_logits(m, 0), (size_t)g_nv * sizeof *got);
    reference(g_P, pos, 15);
    double e3 = rel_err(got, g_ref);
    int32_t p21 = 21;
    CHECK(add_rows(m, 1, g_P + 14, &p21, 1, &err) == LOOM_OK);
    memcpy(got, loom_model_batch_logits(m, 0), (size_t)g_nv * sizeof *got);
    iota(pos, 32, 7);
    reference(g_P, pos, 15);
    double e4 = rel_err(got, g_ref);
    CHECK_MSG(e3 <= g_tol_shift && e4 <= g_tol_shift, "%s: shared shift: %g %g", tag, e3, e4);
    loom_model_close(m);

    /* Context shift: n_ctx 16 full; keep 2, discard (16 - 2) / 2 = 7, shift the rest
     * down by 7. The kept tokens' hidden states still reflect the discarded ones, so
     * no fresh decode is a reference: it must equal the same edit done by hand
     * (remove [2, 9), shift [9, end) by -7), bit for bit, and loom_model_eval with
     * ctx_shift must do the same by itself. */
    float *hand = malloc((size_t)g_nv * sizeof *hand);
    int32_t t17 = g_P[16], p9 = 9, p16 = 16;
    m = open_m(1, 16);
    if (m) {
        CHECK(add_rows(m, 0, g_P, g_pos, 16, &err) == LOOM_OK);
        CHECK(loom_model_seq_remove(m, 0, 2, 9, &err) == LOOM_OK);
        CHECK(loom_model_seq_shift(m, 0, 9, -1, -7, &err) == LOOM_OK);
        CHECK(add_rows(m, 0, &t17, &p9, 1, &err) == LOOM_OK);
        memcpy(hand, loom_model_batch_logits(m, 0), (size_t)g_nv * sizeof *hand);
        loom_model_close(m);
    }
    m = open_m(1, 16);
    double e5 = INFINITY, e6 = INFINITY;
    if (m) {
        CHECK(add_rows(m, 0, g_P, g_pos, 16, &err) == LOOM_OK);
        CHECK_EQ_INT(add_rows(m, 0, &t17, &p16, 1, &err), LOOM_ERR_CONTEXT_FULL);
        int32_t nd = -1;
        CHECK(loom_model_seq_context_shift(m, 0, 2, &nd, &err) == LOOM_OK);
        CHECK_EQ_INT(nd, 7);
        CHECK_EQ_INT(loom_model_seq_n_tokens(m, 0), 9);
        CHECK_EQ_INT(loom_model_seq_pos_max(m, 0), 8);
        CHECK(add_rows(m, 0, &t17, &p9, 1, &err) == LOOM_OK);
        e5 = rel_err(loom_model_batch_logits(m, 0), hand);
        CHECK_MSG(e5 == 0, "%s: context shift: %g", tag, e5);
        loom_model_close(m);
    }
    loom_model_params q = g_p;
    q.n_ctx = 16;
    q.ctx_shift = true;
    q.n_keep = 2;
    m = NULL;
    CHECK(loom_model_open(&q, &m, &err) == LOOM_OK);
    if (m) {
        CHECK(loom_model_eval(m, g_P, 16, false, &err) == LOOM_OK);
        CHECK(loom_model_eval(m, &t17, 1, false, &err) == LOOM_OK);
        e6 = rel_err(loom_model_logits(m, 0), hand);
        CHECK_MSG(e6 == 0, "%s: eval with ctx_shift: %g", tag, e6);
        CHECK_EQ_INT(loom_model_n_past(m), 10);
        loom_model_close(m);
    }
    printf("  %-6s shift %.3g, round trip %.3g, shared-cell shift %.3g/%.3g, context shift %.3g/%.3g\n", tag, e1,
           e2, e3, e4, e5, e6);
    free(hand);
    free(got);
}

static void test_defrag_reuse(const char *tag) {
    loom_error err = {0};
    loom_model *m = open_m(2, 64);
    if (!m) return;
    /* interleave two sequences token by token, then drop seq 1: holes every other cell */
    loom_batch b;
    CHECK(loom_batch_init(&b, 8, 1, &err) == LOOM_OK);
    int32_t s0 = 0, s1 = 1;
    for (int i = 0; i < 12; i++) {
        loom_batch_clear(&b);
        loom_batch_add(&b, g_P[i], i, &s0, 1, true, &err);
        loom_batch_add(&b, g_Q[i], i, &s1, 1, true, &err);
        CHECK(loom_model_decode(m, &b, &err) == LOOM_OK);
    }
    CHECK(loom_model_seq_remove(m, 1, -1, -1, &err) == LOOM_OK);
    llm_kv_cells *c = &m->kv.grp[0].cells;
    CHECK_EQ_INT(c->used, 12);
    CHECK_EQ_INT(c->pos[22], 11);
    CHECK(llm_kv_defrag(&m->kv, m->be, 0, &err) == LOOM_OK);
    int contiguous = 0;
    for (int i = 0; i < 12; i++) contiguous += c->pos[i] >= 0;
    CHECK_EQ_INT(contiguous, 12);
    CHECK(add_rows(m, 0, g_P + 12, g_pos + 12, 1, &err) == LOOM_OK);
    reference(g_P, g_pos, 13);
    double e1 = rel_err(loom_model_batch_logits(m, 0), g_ref);
    CHECK_MSG(e1 <= TOL, "%s: after defrag: %g", tag, e1);

    /* prefix reuse: seq 1 asks for P[0..8) + Q[0..4): 8 come from seq 0 (shared) */
    int32_t req[12];
    memcpy(req, g_P, 8 * sizeof *req);
    memcpy(req + 8, g_Q, 4 * sizeof *req);
    int32_t nc = -1;
    CHECK(loom_model_seq_reuse_prefix(m, 1, req, 12, &nc, &err) == LOOM_OK);
    CHECK_EQ_INT(nc, 8);
    CHECK_EQ_INT(loom_model_seq_n_tokens(m, 1), 8);
    CHECK_EQ_INT(c->used, 13);
    CHECK(add_rows(m, 1, req + 8, g_pos + 8, 4, &err) == LOOM_OK);
    reference(req, g_pos, 12);
    double e2 = rel_err(loom_model_batch_logits(m, 3), g_ref);
    CHECK_MSG(e2 <= TOL, "%s: prefix reuse: %g", tag, e2);
    /* the whole request again: all but the last token are cached */
    CHECK(loom_model_seq_reuse_prefix(m, 1, req, 12, &nc, &err) == LOOM_OK);
    CHECK_EQ_INT(nc, 11);
    CHECK_EQ_INT(loom_model_seq_n_tokens(m, 1), 11);
    /* a different start: nothing reused, the sequence emptied */
    int32_t other[3] = {g_Q[5], g_Q[6], g_Q[7]};
    CHECK(loom_model_seq_reuse_prefix(m, 1, other, 3, &nc, &err) == LOOM_OK);
    CHECK_EQ_INT(nc, 0);
    CHECK_EQ_INT(loom_model_seq_n_tokens(m, 1), 0);
    CHECK_EQ_INT(loom_model_seq_n_tokens(m, 0), 13);
    printf("  %-6s after defrag %.3g, prefix reuse %.3g\n", tag, e1, e2);
    loom_batch_free(&b);
    loom_model_close(m);
}

typedef struct snap {
    int32_t pos[256];
    uint64_t seq[256];
    int64_t used;
} snap;
static void take(const loom_model *m, snap *s) {
    const llm_kv_cells *c = &m->kv.grp[0].cells;
    memset(s, 0, sizeof *s);
    for (int64_t i = 0; i < c->n && i < 256; i++) {
        s->pos[i] = c->pos[i];
        s->seq[i] = c->seq[i * c->nw];
    }
    s->used = c->used;
}

static void test_bad_input(const char *tag) {
    loom_error err = {0};
    loom_model *m = open_m(2, 8);
    if (!m) return;
    CHECK(add_rows(m, 0, g_P, g_pos, 4, &err) == LOOM_OK);
    snap before, after;
    take(m, &before);
    const float *l0 = loom_model_batch_logits(m, 3);
    CHECK(l0 != NULL);
    loom_batch b;
    CHECK(loom_batch_init(&b, 64, 2, &err) == LOOM_OK);
    int32_t s0 = 0, bad_id = 2, both[2] = {0, 0};
    struct {
        const char *what;
        loom_status want;
    } cases[] = {
        {"token in no sequence", LOOM_ERR_INVALID_ARG}, {"sequence id >= n_seq_max", LOOM_ERR_RANGE},
        {"position going backwards", LOOM_ERR_INVALID_ARG}, {"batch > n_batch", LOOM_ERR_INVALID_ARG},
        {"sequence past n_ctx", LOOM_ERR_CONTEXT_FULL},     {"sequence listed twice", LOOM_ERR_INVALID_ARG},
        {"token id out of range", LOOM_ERR_RANGE},           {"position repeated in batch", LOOM_ERR_INVALID_ARG},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        loom_batch_clear(&b);
        loom_batch_add(&b, g_P[4], 4, &s0, 1, true, &err);
        switch (k) {
        case 0: loom_batch_add(&b, 5, 5, &s0, 1, true, &err); b.n_seq[1] = 0; break;
        case 1: loom_batch_add(&b, 5, 0, &bad_id, 1, true, &err); break;
        case 2: loom_batch_add(&b, 5, 2, &s0, 1, true, &err); break;
        case 3: for (int i = 0; i < 20; i++) loom_batch_add(&b, 5, 5 + i, &s0, 1, true, &err); break;
        case 4: for (int i = 0; i < 4; i++) loom_batch_add(&b, 5, 5 + i, &s0, 1, true, &err); break;
        case 5: loom_batch_add(&b, 5, 5, both, 2, true, &err); break;
        case 6: loom_batch_add(&b, g_nv, 5, &s0, 1, true, &err); break;
        case 7: loom_batch_add(&b, 5, 4, &s0, 1, true, &err); break;
        }
        loom_error e = {0};
        loom_status s = loom_model_decode(m, &b, &e);
        CHECK_MSG(s == cases[k].want, "%s: %s: got %s (%s)", tag, cases[k].what, loom_status_name(s), e.msg);
        CHECK_MSG(e.msg[0] != 0, "%s: no message", cases[k].what);
        take(m, &after);
        CHECK_MSG(!memcmp(&before, &after, sizeof before), "%s: %s changed the cache", tag, cases[k].what);
        CHECK_MSG(loom_model_batch_logits(m, 3) == l0, "%s: %s changed the logits", tag, cases[k].what);
    }
    /* seq ops: ids out of range */
    CHECK_EQ_INT(loom_model_seq_remove(m, 2, 0, -1, &err), LOOM_ERR_RANGE);
    CHECK_EQ_INT(loom_model_seq_copy(m, 0, 5, 0, -1, &err), LOOM_ERR_RANGE);
    CHECK_EQ_INT(loom_model_seq_keep(m, -1, &err), LOOM_ERR_RANGE);
    CHECK_EQ_INT(loom_model_seq_shift(m, 7, 0, -1, 1, &err), LOOM_ERR_RANGE);
    take(m, &after);
    CHECK(!memcmp(&before, &after, sizeof before));
    /* still decodes correctly */
    CHECK(add_rows(m, 0, g_P + 4, g_pos + 4, 1, &err) == LOOM_OK);
    reference(g_P, g_pos, 5);
    CHECK(rel_err(loom_model_batch_logits(m, 0), g_ref) <= TOL);
    loom_batch_free(&b);
    loom_model_close(m);
}

/* Keys after "decode 12 tokens at 0..11, shift by 5" == keys after "decode them at
 * 5..16", cell by cell where both caches hold the same position (F32 cache), in the
 * first n_layers layers (a layer's keys also carry the earlier layers' rounding), to
 * tol relative. learned (or a model with learned absolute positions: gpt2, starcoder,
 * mpt with position_embd) rotates nothing (as llama.cpp): its shifted keys must equal
 * those decoded at 0..11, exactly. */
/* a cache's keys as floats (a quantized cache dequantized) */
static loom_status read_keys(const loom_tensor *k, float *out, size_t n) {
    if (loom_tensor_type(k) == LOOM_TYPE_F32) return loom_tensor_read_f32(k, out, n);
    const size_t nb = loom_tensor_nbytes(k);
    unsigned char *raw = malloc(nb);
    if (!raw) return LOOM_ERR_NOMEM;
    loom_status s = loom_tensor_read(k, raw, nb);
    if (!s) loom_dequantize_row(loom_tensor_type(k), raw, out, (int64_t)n);
    free(raw);
    return s;
}

static int g_kv_rotate; /* loom_model_params.kv_rotate of test_shift_keys_t's opens */

static void test_shift_keys_t(const char *path, const char *tag, int n_layers, double tol, bool learned,
                              loom_type cache) {
    loom_model_params p = g_p;
    p.kv_rotate = g_kv_rotate;
    p.path = path;
    p.n_seq_max = 1;
    p.n_ctx = 64;
    p.cache_type = cache;
    p.flash_attn = cache == LOOM_TYPE_Q8_0; /* quantized caches need flash attention */
    loom_model *a = NULL, *b = NULL;
    loom_error err = {0};
    CHECK_MSG(loom_model_open(&p, &a, &err) == LOOM_OK && loom_model_open(&p, &b, &err) == LOOM_OK, "%s: %s", tag,
              err.msg);
    if (!a || !b) {
        loom_model_close(a);
        loom_model_close(b);
        return;
    }
    int32_t shifted[12];
    iota(shifted, 12, 5);
    bool keys = false;
    for (int il = 0; il < a->hp.n_layer; il++) keys = keys || a->kv.layer_group[il] >= 0;
    if (a->pos_embd) learned = true; /* learned absolute positions (gpt2, starcoder, mpt's optional ones) */
    if (learned) tol = 0.0;
    /* no attention (mamba), or ALiBi without learned positions (bloom, mpt, jais, refact,
     * Baichuan 13B: a score depends on the distance alone, which the masks carry):
     * positions move, nothing rotates, and the sequence continues exactly as before */
    const bool relative = !keys || (a->hx.alibi_bias > 0.0f && !a->pos_embd);
    if (relative) learned = true;
    CHECK(add_rows(a, 0, g_P, g_pos, 12, &err) == LOOM_OK);
    CHECK(loom_model_seq_shift(a, 0, -1, -1, 5, &err) == LOOM_OK);
    CHECK(add_rows(b, 0, g_P, learned ? g_pos : shifted, 12, &err) == LOOM_OK);
    if (relative) {
        /* the shifted sequence ends at 16 and continues at 17 as the unshifted one does
         * at 12: the same computation, the same logits */
        CHECK_EQ_INT(loom_model_seq_pos_max(a, 0), 16);
        const int32_t p17 = 17, p12 = 12;
        CHECK(add_rows(a, 0, g_P + 12, &p17, 1, &err) == LOOM_OK);
        CHECK(add_rows(b, 0, g_P + 12, &p12, 1, &err) == LOOM_OK);
        const float *la = loom_model_batch_logits(a, 0), *lb = loom_model_batch_logits(b, 0);
        const int nv = loom_model_n_vocab(a);
        CHECK_MSG(la && lb && !memcmp(la, lb, (size_t)nv * sizeof *la), "%s: the shifted sequence continues "
                  "differently", tag);
        printf("  %-14s %s: shift moved positions only (next logits identical)\n", tag, keys ? "ALiBi" : "no keys");
        if (!keys) {
            loom_model_close(a);
            loom_model_close(b);
            return;
        }
    }
    const int32_t dpos = learned ? 5 : 0; /* a's positions minus b's */
    /* a query temperature (llama 4's: mistral3, mistral4-fused) changes the hidden states
     * with the absolute position: only layer 0's keys are the same tokens' keys */
    if (a->hx.attn_temp_scale != 0.0f) n_layers = 1;
    double worst = 0;
    int compared = 0;
    for (int il = 0; il < a->hp.n_layer && il < n_layers; il++) {
        if (a->kv.layer_group[il] < 0) continue; /* recurrent or MLP-only: no keys */
        const loom_tensor *ka = a->kv.k[il], *kb = b->kv.k[il];
        const llm_kv_cells *ca = &a->kv.grp[a->kv.layer_group[il]].cells, *cb = &b->kv.grp[b->kv.layer_group[il]].cells;
        const size_t per = (size_t)loom_tensor_ne(ka, 0) * (size_t)loom_tensor_ne(ka, 1);
        const size_t n = per * (size_t)loom_tensor_ne(ka, 2);
        float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
        if (x && y && !read_keys(ka, x, n) && !read_keys(kb, y, n)) {
            double num = 0, den = 0;
            for (int64_t c = 0; c < ca->n && c < cb->n; c++) {
                if (ca->pos[c] < 0 || ca->pos[c] != cb->pos[c] + dpos) continue;
                compared++;
                for (size_t i = (size_t)c * per; i < (size_t)(c + 1) * per; i++) {
                    num = fmax(num, fabs((double)x[i] - y[i]));
                    den = fmax(den, fabs((double)y[i]));
                }
            }
            if (den > 0 && num / den > worst) worst = num / den;
        }
        free(x);
        free(y);
    }
    printf("  %-14s shifted keys vs %s keys: max rel %.3g over %d cells\n", tag, learned ? "unshifted" : "fresh",
           worst, compared);
    CHECK_MSG(compared >= 12 && worst <= tol, "%s: shifted keys differ by %g (%d cells)", tag, worst, compared);
    loom_model_close(a);
    loom_model_close(b);
}

static void test_shift_keys(const char *path, const char *tag, int n_layers, double tol, bool learned) {
    test_shift_keys_t(path, tag, n_layers, tol, learned, LOOM_TYPE_F32);
}

int main(void) {
    g_p = loom_model_default_params();
    g_p.path = test_path("models/stories260K.gguf");
    g_p.n_batch = 32;
    g_p.n_threads = 1;
    g_p.cache_type = LOOM_TYPE_F32;
    loom_model *m = open_m(1, 16);
    if (!m) return test_finish("test_llm_seq_ops");
    g_nv = loom_model_n_vocab(m);
    loom_model_close(m);
    g_ref = malloc((size_t)g_nv * sizeof *g_ref);
    uint32_t rng = 777;
    for (int i = 0; i < 32; i++) {
        rng = rng * 1103515245u + 12345u;
        g_P[i] = 2 + (int32_t)((rng >> 8) % (uint32_t)(g_nv - 2));
        rng = rng * 1103515245u + 12345u;
        g_Q[i] = 2 + (int32_t)((rng >> 8) % (uint32_t)(g_nv - 2));
    }
    g_P[0] = g_Q[0] = 1;
    iota(g_pos, 64, 0);
    for (int fa = 0; fa < 2; fa++) {
        g_p.flash_attn = fa;
        const char *tag = fa ? "flash" : "plain";
        test_remove_copy(tag);
        test_shift(tag);
        test_defrag_reuse(tag);
        test_bad_input(tag);
    }
    /* the shift on the architectures whose keys rotate differently */
    static const char *const arch[] = {"deepseek2", "deepseek2-lite", "cohere2", "olmo2", "phi3"};
    /* F32 matrices: float noise; phi3's F16 matrices: the batch and single-token
     * kernels round differently (measured 3.8e-4; a wrong rotation is 0.2) */
    static const double tol[] = {3e-6, 3e-6, 3e-6, 3e-6, 1e-3};
    for (size_t a = 0; a < sizeof arch / sizeof arch[0]; a++) {
        char rel[128], path[4096], tag[64];
        snprintf(rel, sizeof rel, "tests/data/arch/indep-%s.gguf", arch[a]);
        snprintf(path, sizeof path, "%s", test_path(rel));
        g_p.path = path;
        g_p.flash_attn = false;
        g_p.cache_type = LOOM_TYPE_F32;
        snprintf(tag, sizeof tag, "%s", arch[a]);
        g_tol_shift = tol[a];
        test_shift(tag);
    }
    /* the keys themselves, on every independent architecture file (rounding-free) */
    FILE *f = fopen(test_path("tests/data/arch/indep.txt"), "r");
    CHECK(f != NULL);
    char name[128], kind[32];
    double top1;
    while (f && fscanf(f, "%127s %lf %31s", name, &top1, kind) == 3) {
        char rel[192], path[4096];
        snprintf(rel, sizeof rel, "tests/data/arch/%s.gguf", name);
        snprintf(path, sizeof path, "%s", test_path(rel));
        const char *arch = name + 6; /* without "indep-" */
        /* files with a query temperature (mistral3): only layer 0's keys compared (above);
         * hunyuan and maincoder: only layer 0 too (their q/k norm weights act after rope,
         * so q.k is no function of the distance alone; layer 0 checks the weight-aware rotation: 1.6e-7, 4.5e-2 rotating as
         * llama.cpp does). A wrong rotation is O(1); what else the later layers' keys
         * carry, measured at every x86 ISA level (LOOM_CPU_ISA scalar .. avx512bf16):
         * - "float" (F16 / BF16 matrices) and "quantized" files round their matrices'
         *   activations: a rounding that flips is one F16 step (2^-11 relative) of an
         *   activation; measured 4.5e-4 (gemma2, AVX2 kernels), 1.2e-4 (phi3, AVX-512);
         * - "f32gelu" files: GELU through an F16 table whose entries flip the same way;
         *   measured 1.5e-4 (grok2, scalar and AVX2), 1.8e-5 (codeshell, AVX-512);
         * - F32 files: float noise, measured 2.8e-6 (starcoder2, scalar), 1.1e-6 AVX-512 */
        const bool rounds = !strcmp(kind, "float") || !strcmp(kind, "quantized");
        const bool gelu = !strcmp(kind, "f32gelu");
        const bool post_norm = !strncmp(arch, "hunyuan", 7) || !strcmp(arch, "maincoder"); /* q/k norms after rope */
        test_shift_keys(path, arch, post_norm ? 1 : 1 << 20,
                        rounds ? 1e-3 : gelu ? 3e-4 : 4e-6, false);
    }
    if (f) fclose(f);
    /* keys stored turned by a Hadamard matrix (quantized caches; model_internal.h): the
     * shift turns them back, ropes and turns them again. F32 caches turned on purpose
     * (kv_rotate = 1; the DSA files turn the row [latent key | indexer key]): float
     * noise, measured at most 5.3e-7 (without turning back: 2.6); the Q8_0 cache (turned
     * by default): Q8_0 rounding twice, measured 1.45e-2 */
    {
        static const char *const turned[] = {"llama-kvrot", "deepseek32", "glm-dsa", "dots3note"};
        for (size_t i = 0; i < sizeof turned / sizeof turned[0]; i++) {
            char rel[128], path[4096], tag[64];
            snprintf(rel, sizeof rel, "tests/data/arch/indep-%s.gguf", turned[i]);
            snprintf(path, sizeof path, "%s", test_path(rel));
            snprintf(tag, sizeof tag, "%s f32 turned", turned[i]);
            g_kv_rotate = 1;
            test_shift_keys_t(path, tag, 1 << 20, 2e-6, false, LOOM_TYPE_F32);
            g_kv_rotate = 0;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s", test_path("tests/data/arch/indep-llama-kvrot.gguf"));
        test_shift_keys_t(path, "kvrot q8_0", 1 << 20, 2e-2, false, LOOM_TYPE_Q8_0);
    }
    /* a quantized cache (keys read back as F32 rows, rotated, quantized again) whose
     * layers have different KV head counts (deci: 2, 4 and 1): each layer's row ids
     * (cell * its heads + head); Q8_0 rounding twice, measured 1.2e-2 (rows of the group's largest head count: 1.04) */
    {
        char path[4096];
        snprintf(path, sizeof path, "%s", test_path("tests/data/arch/indep-deci-gqa.gguf"));
        test_shift_keys_t(path, "deci-gqa q8_0", 1 << 20, 2e-2, false, LOOM_TYPE_Q8_0);
        /* compaction and prefix reuse there: each layer's rows move as that layer's
         * quantized blocks (a copy by the group's widest rows would move other cells' keys) */
        g_p.path = path;
        g_p.cache_type = LOOM_TYPE_Q8_0;
        g_p.flash_attn = true;
        loom_model *d = open_m(1, 16);
        CHECK(d != NULL);
        if (d) {
            g_nv = loom_model_n_vocab(d);
            loom_model_close(d);
            free(g_ref);
            g_ref = malloc((size_t)g_nv * sizeof *g_ref);
            for (int i = 0; i < 32; i++) {
                g_P[i] = 1 + g_P[i] % (g_nv - 1);
                g_Q[i] = 1 + g_Q[i] % (g_nv - 1);
            }
            if (g_ref) test_defrag_reuse("deci-gqa q8_0");
        }
    }
    free(g_ref);
    return test_finish("test_llm_seq_ops");
}
