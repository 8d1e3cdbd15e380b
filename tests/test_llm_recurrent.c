/* Recurrent layers (qwen35's gated delta net; granitehybrid's, nemotron_h's,
 * falcon_h1's and mamba2's Mamba-2 mixers; mamba's and jamba's Mamba-1 mixers; lfm2's
 * short convolutions; rwkv6's and rwkv7's token shifts and wkv states; tests/data/arch/indep-*.gguf)
 * under the sequence API: each sequence's state is its own (two sequences interleaved in
 * one batch give each one's solo logits), a whole-sequence remove resets the state, a
 * partial one is refused and changes nothing, a whole copy into an empty sequence
 * continues like the original, prefix reuse keeps a state only when the prompt extends
 * all it holds, a context shift is refused, so is a shift that would drop some tokens
 * (one dropping all resets the state), and loom_model_reset starts afresh. References:
 * the same model decoding the same tokens alone from an empty cache (same kernels: float
 * noise only). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_model.h"
#include "test_util.h"

#define TOL 2e-6 /* same computation in other batch shapes: measured <= 5e-7 */

static loom_model_params g_p;
static int32_t g_nv;

static loom_model *open_m(int n_seq) {
    loom_model_params p = g_p;
    p.n_seq_max = n_seq;
    p.n_ctx = 64;
    loom_model *m = NULL;
    loom_error err = {0};
    if (loom_model_open(&p, &m, &err)) printf("open: %s\n", err.msg);
    return m;
}

/* decode tokens tok[0..n) of seq at positions p0.. (logits of the last row) */
static loom_status run(loom_model *m, int32_t seq, const int32_t *tok, int n, int32_t p0, loom_error *err) {
    loom_batch b;
    loom_status s = loom_batch_init(&b, n, 1, err);
    if (s) return s;
    for (int i = 0; i < n && !s; i++) s = loom_batch_add(&b, tok[i], p0 + i, &seq, 1, i == n - 1, err);
    if (!s) s = loom_model_decode(m, &b, err);
    loom_batch_free(&b);
    return s;
}

static float *copy_logits(loom_model *m, int row) {
    const float *l = loom_model_batch_logits(m, row);
    float *c = l ? malloc((size_t)g_nv * sizeof *c) : NULL;
    if (c) memcpy(c, l, (size_t)g_nv * sizeof *c);
    return c;
}

static double rel(const float *a, const float *b) {
    if (!a || !b) return INFINITY;
    double num = 0, den = 0;
    for (int i = 0; i < g_nv; i++) {
        num = fmax(num, fabs((double)a[i] - b[i]));
        den = fmax(den, fabs((double)b[i]));
    }
    return num / den;
}

/* logits after tok[0..n) alone */
static float *solo(const int32_t *tok, int n) {
    loom_model *m = open_m(1);
    loom_error err = {0};
    float *r = NULL;
    if (m && run(m, 0, tok, n, 0, &err) == LOOM_OK) r = copy_logits(m, n - 1);
    loom_model_close(m);
    return r;
}

static int32_t A[20], B[20];

static void test_interleaved(void) {
    loom_model *m = open_m(2);
    if (!m) return;
    loom_error err = {0};
    /* A[0..8) and B[0..6) token by token interleaved in one batch, then one more each */
    loom_batch b;
    CHECK(loom_batch_init(&b, 16, 1, &err) == LOOM_OK);
    int ia = 0, ib = 0;
    int32_t s0 = 0, s1 = 1;
    while (ia < 8 || ib < 6) {
        if (ia < 8) {
            CHECK(loom_batch_add(&b, A[ia], ia, &s0, 1, ia == 7, &err) == LOOM_OK);
            ia++;
        }
        if (ib < 6) {
            CHECK(loom_batch_add(&b, B[ib], ib, &s1, 1, ib == 5, &err) == LOOM_OK);
            ib++;
        }
    }
    CHECK(loom_model_decode(m, &b, &err) == LOOM_OK);
    loom_batch_free(&b);
    float *ra = solo(A, 8), *rb = solo(B, 6);
    /* rows: A0 B0 A1 B1 ... A5 B5 A6 A7: A's last is row 13, B's last row 11 */
    double ea = rel(loom_model_batch_logits(m, 13), ra), eb = rel(loom_model_batch_logits(m, 11), rb);
    CHECK_MSG(ea <= TOL && eb <= TOL, "interleaved sequences: %g / %g", ea, eb);
    free(ra);
    free(rb);
    /* continue each alone */
    CHECK(run(m, 1, B + 6, 3, 6, &err) == LOOM_OK);
    float *rb9 = solo(B, 9);
    double e = rel(loom_model_batch_logits(m, 2), rb9);
    CHECK_MSG(e <= TOL, "continued sequence: %g", e);
    free(rb9);
    loom_model_close(m);
}

static void test_remove_copy_reuse(void) {
    loom_model *m = open_m(3);
    if (!m) return;
    loom_error err = {0};
    CHECK(run(m, 0, A, 10, 0, &err) == LOOM_OK);
    float *r10 = copy_logits(m, 9);
    /* partial remove: refused, nothing changes */
    CHECK(loom_model_seq_remove(m, 0, 5, -1, &err) == LOOM_ERR_UNSUPPORTED);
    CHECK(strstr(err.msg, "recurrent") != NULL);
    CHECK_EQ_INT(loom_model_seq_n_tokens(m, 0), 10);
    /* removing nothing of it is fine */
    CHECK(loom_model_seq_remove(m, 0, 30, -1, &err) == LOOM_OK);
    /* copy all of 0 into empty 1, continue both alike */
    CHECK(loom_model_seq_copy(m, 0, 1, -1, -1, &err) == LOOM_OK);
    CHECK(loom_model_seq_copy(m, 0, 1, 0, 5, &err) == LOOM_ERR_UNSUPPORTED); /* 1 is not empty now */
    CHECK(run(m, 1, A + 10, 4, 10, &err) == LOOM_OK);
    float *r14 = solo(A, 14);
    double e = rel(loom_model_batch_logits(m, 3), r14);
    CHECK_MSG(e <= TOL, "copied sequence continued: %g", e);
    CHECK(run(m, 0, A + 10, 4, 10, &err) == LOOM_OK);
    e = rel(loom_model_batch_logits(m, 3), r14);
    CHECK_MSG(e <= TOL, "original continued after the copy: %g", e);
    /* whole remove resets: B from scratch in sequence 0 */
    CHECK(loom_model_seq_remove(m, 0, -1, -1, &err) == LOOM_OK);
    CHECK(run(m, 0, B, 7, 0, &err) == LOOM_OK);
    float *rb7 = solo(B, 7);
    e = rel(loom_model_batch_logits(m, 6), rb7);
    CHECK_MSG(e <= TOL, "after a whole remove: %g", e);
    /* prefix reuse: a prompt extending all of sequence 0 keeps it; one that diverges
     * keeps nothing (and the state restarts) */
    int32_t prompt[12];
    memcpy(prompt, B, 7 * sizeof *prompt);
    memcpy(prompt + 7, A, 5 * sizeof *prompt);
    int32_t cached = -1;
    CHECK(loom_model_seq_reuse_prefix(m, 0, prompt, 12, &cached, &err) == LOOM_OK);
    CHECK_EQ_INT(cached, 7);
    prompt[3] = A[19];
    CHECK(loom_model_seq_reuse_prefix(m, 0, prompt, 12, &cached, &err) == LOOM_OK);
    CHECK_EQ_INT(cached, 0);
    CHECK_EQ_INT(loom_model_seq_n_tokens(m, 0), 0);
    CHECK(run(m, 0, A, 10, 0, &err) == LOOM_OK);
    e = rel(loom_model_batch_logits(m, 9), r10);
    CHECK_MSG(e <= TOL, "after a refused prefix: %g", e);
    /* a prompt equal to all it holds: the last token must be evaluated again, which a
     * state cannot: nothing is kept */
    CHECK(loom_model_seq_reuse_prefix(m, 0, A, 10, &cached, &err) == LOOM_OK);
    CHECK_EQ_INT(cached, 0);
    /* sequence 2 from 1 by prefix reuse (1 holds A[0..14)) */
    memcpy(prompt, A, 12 * sizeof *prompt);
    int32_t ext[16];
    memcpy(ext, A, 16 * sizeof *ext);
    CHECK(loom_model_seq_reuse_prefix(m, 2, ext, 16, &cached, &err) == LOOM_OK);
    CHECK_EQ_INT(cached, 14);
    CHECK(run(m, 2, A + 14, 2, 14, &err) == LOOM_OK);
    float *r16 = solo(A, 16);
    e = rel(loom_model_batch_logits(m, 1), r16);
    CHECK_MSG(e <= TOL, "state copied by prefix reuse: %g", e);
    /* no context shift */
    int32_t disc = 0;
    CHECK(loom_model_seq_context_shift(m, 2, 2, &disc, &err) == LOOM_ERR_UNSUPPORTED);
    /* a shift keeping every token moves positions only; one dropping some is refused and
     * changes nothing; one dropping all empties the sequence and resets its state */
    CHECK(loom_model_seq_shift(m, 2, 0, -1, 3, &err) == LOOM_OK);
    CHECK_EQ_INT(loom_model_seq_pos_max(m, 2), 18);
    CHECK_EQ_INT(loom_model_seq_pos_min(m, 2), 3);
    loom_error_clear(&err);
    CHECK(loom_model_seq_shift(m, 2, 0, -1, -5, &err) == LOOM_ERR_UNSUPPORTED);
    CHECK_MSG(strstr(err.msg, "sequence 2") != NULL, "%s", err.msg);
    CHECK_EQ_INT(loom_model_seq_n_tokens(m, 2), 16);
    CHECK_EQ_INT(loom_model_seq_pos_min(m, 2), 3);
    CHECK(loom_model_seq_shift(m, 2, 0, -1, -100, &err) == LOOM_OK);
    CHECK_EQ_INT(loom_model_seq_n_tokens(m, 2), 0);
    CHECK(run(m, 2, A, 10, 0, &err) == LOOM_OK);
    e = rel(loom_model_batch_logits(m, 9), r10);
    CHECK_MSG(e <= TOL, "after a shift that dropped every token: %g", e);
    /* reset: a fresh start */
    loom_model_reset(m);
    CHECK(run(m, 0, A, 10, 0, &err) == LOOM_OK);
    e = rel(loom_model_batch_logits(m, 9), r10);
    CHECK_MSG(e <= TOL, "after reset: %g", e);
    /* a token in two sequences at once is refused */
    loom_batch b;
    CHECK(loom_batch_init(&b, 1, 2, &err) == LOOM_OK);
    int32_t both[2] = {1, 2};
    CHECK(loom_batch_add(&b, A[0], 0, both, 2, true, &err) == LOOM_OK);
    CHECK(loom_model_decode(m, &b, &err) == LOOM_ERR_UNSUPPORTED);
    loom_batch_free(&b);
    free(r10);
    free(r14);
    free(rb7);
    free(r16);
    loom_model_close(m);
}

static void run_file(const char *rel) {
    g_p = loom_model_default_params();
    g_p.path = test_path(rel);
    g_p.n_threads = 1;
    g_p.n_batch = 32;
    g_p.cache_type = LOOM_TYPE_F32;
    loom_model *m = open_m(1);
    CHECK_MSG(m != NULL, "%s", rel);
    if (!m) return;
    g_nv = loom_model_n_vocab(m);
    loom_model_close(m);
    uint32_t rng = 4242;
    for (int i = 0; i < 20; i++) {
        rng = rng * 1103515245u + 12345u;
        A[i] = 2 + (int32_t)((rng >> 8) % (uint32_t)(g_nv - 2));
        rng = rng * 1103515245u + 12345u;
        B[i] = 2 + (int32_t)((rng >> 8) % (uint32_t)(g_nv - 2));
    }
    test_interleaved();
    test_remove_copy_reuse();
}

int main(void) {
    run_file("tests/data/arch/indep-qwen35.gguf");        /* gated delta net */
    run_file("tests/data/arch/indep-granitehybrid.gguf"); /* Mamba-2 */
    run_file("tests/data/arch/indep-nemotron_h.gguf");    /* Mamba-2, attention and MLP-only layers */
    run_file("tests/data/arch/indep-lfm2.gguf");          /* short convolutions, window attention */
    run_file("tests/data/arch/indep-falcon_h1.gguf");     /* attention and Mamba-2 in every layer */
    run_file("tests/data/arch/indep-mamba.gguf");         /* Mamba-1 only: no attention at all */
    run_file("tests/data/arch/indep-mamba2.gguf");        /* Mamba-2 only */
    run_file("tests/data/arch/indep-jamba.gguf");         /* Mamba-1 with dt/B/C norms, attention, experts */
    run_file("tests/data/arch/indep-rwkv7.gguf");         /* token shifts and the wkv7 state */
    run_file("tests/data/arch/indep-rwkv6.gguf");         /* token shifts and the wkv6 state */
    return test_finish("test_llm_recurrent");
}
