/* loom_model_cancel is never lost (issue #14 item 3; semantics in loom_model.h):
 *  1. a cancel issued before an eval (or between two) makes the next eval return
 *     LOOM_ERR_CANCELLED without evaluating, and only that one;
 *  2. two threads: one decodes continuously, the other issues 300 cancels at random
 *     moments (before, between and during evals) and waits for each to be observed
 *     (a CANCELLED return) before the next; a lost cancel shows as a wait that never
 *     ends (5 s timeout). Under TSan (CI) this is also the data-race check of the
 *     cancel flag. Before the fix the eval cleared the flag on entry, so cancels that
 *     landed between evals were dropped and part 2 timed out.
 *  3. loom_model_reset discards a pending cancel.
 *  4. part 2 again with batched decoding: two sequences per loom_model_decode. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "loom_model.h"
#include "test_util.h"

#define MODEL "models/stories260K.gguf"
#define N_CANCELS 300

static loom_model *open_model(void) {
    loom_model_params p = loom_model_default_params();
    p.n_seq_max = 2;
    p.path = test_path(MODEL);
    p.n_ctx = 4096; /* far more than the evals between two cancels */
    p.n_threads = 1;
    loom_model *m = NULL;
    loom_error e = {0};
    CHECK_MSG(loom_model_open(&p, &m, &e) == LOOM_OK, "%s", e.msg);
    return m;
}

static void test_pending(loom_model *m) {
    int32_t tok = 1;
    loom_error e = {0};
    loom_model_reset(m);
    CHECK(loom_model_eval(m, &tok, 1, false, &e) == LOOM_OK);
    int past = loom_model_n_past(m);
    loom_model_cancel(m); /* between two evals */
    loom_error_clear(&e);
    CHECK_EQ_INT(loom_model_eval(m, &tok, 1, false, &e), LOOM_ERR_CANCELLED);
    CHECK_MSG(strstr(e.msg, "cancel") != NULL, "%s", e.msg);
    CHECK_EQ_INT(loom_model_n_past(m), past); /* nothing evaluated */
    CHECK(loom_model_eval(m, &tok, 1, false, NULL) == LOOM_OK); /* consumed: runs */
    /* two cancels before an eval coalesce into one */
    loom_model_cancel(m);
    loom_model_cancel(m);
    CHECK_EQ_INT(loom_model_eval(m, &tok, 1, false, NULL), LOOM_ERR_CANCELLED);
    CHECK(loom_model_eval(m, &tok, 1, false, NULL) == LOOM_OK);
    /* reset discards a pending cancel */
    loom_model_cancel(m);
    loom_model_reset(m);
    CHECK(loom_model_eval(m, &tok, 1, false, NULL) == LOOM_OK);
}

typedef struct race {
    loom_model *m;
    atomic_int observed;   /* CANCELLED returns seen by the decoder */
    atomic_int done;       /* canceller finished */
    atomic_int lost;       /* a cancel was not observed in time */
    int evals;
    bool batched;          /* loom_model_decode of two sequences instead of loom_model_eval */
} race;

/* One step of two sequences; the logits of row 0 pick the next token. */
static loom_status batched_step(loom_model *m, loom_batch *b, int32_t *tok) {
    loom_batch_clear(b);
    for (int32_t s = 0; s < 2; s++) loom_batch_add(b, *tok, loom_model_seq_pos_max(m, s) + 1, &s, 1, true, NULL);
    loom_status st = loom_model_decode(m, b, NULL);
    if (!st) *tok = 1 + (loom_model_batch_argmax(m, 0) % 100);
    return st;
}

static void *decoder(void *arg) {
    race *r = arg;
    int32_t tok = 1;
    loom_batch b = {0};
    if (r->batched && loom_batch_init(&b, 2, 1, NULL)) {
        atomic_store(&r->lost, -1000);
        return NULL;
    }
    while (!atomic_load(&r->done)) {
        loom_status s = r->batched ? batched_step(r->m, &b, &tok) : loom_model_eval(r->m, &tok, 1, false, NULL);
        r->evals++;
        if (s == LOOM_ERR_CANCELLED) {
            /* Reset (which discards a pending cancel) only here, before the observation is
             * published: the canceller waits for it, so no cancel can be pending now. A
             * reset anywhere else could swallow a cancel issued just before it. */
            if (loom_model_n_past(r->m) > loom_model_n_ctx(r->m) / 2) loom_model_reset(r->m);
            atomic_fetch_add(&r->observed, 1);
        } else if (s != LOOM_OK) {
            atomic_store(&r->lost, -1000); /* unexpected failure */
            break;
        }
        if (!r->batched) tok = 1 + (loom_model_argmax(r->m, -1) % 100);
    }
    loom_batch_free(&b);
    return NULL;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void test_race(loom_model *m, bool batched) {
    loom_model_reset(m);
    race r = {.m = m, .batched = batched};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, decoder, &r) == 0);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int k = 0; k < N_CANCELS && !atomic_load(&r.lost); k++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        struct timespec d = {0, (long)(x % 300000)}; /* 0-300 us: lands in every phase */
        nanosleep(&d, NULL);
        int before = atomic_load(&r.observed);
        loom_model_cancel(m);
        double t0 = now_s();
        while (atomic_load(&r.observed) == before) {
            if (now_s() - t0 > 5.0) {
                atomic_store(&r.lost, k + 1);
                break;
            }
            struct timespec y = {0, 20000};
            nanosleep(&y, NULL);
        }
    }
    atomic_store(&r.done, 1);
    pthread_join(th, NULL);
    int lost = atomic_load(&r.lost);
    CHECK_MSG(lost == 0, lost < 0 ? "an eval failed with an unexpected status"
                                  : "cancel %d was never observed (lost)", lost);
    CHECK_EQ_INT(atomic_load(&r.observed), N_CANCELS);
    printf("  %d cancels, each observed; %d %s in all\n", N_CANCELS, r.evals, batched ? "batched decodes" : "evals");
}

int main(void) {
    loom_model *m = open_model();
    if (!m) return test_finish("test_llm_cancel_race");
    test_pending(m);
    test_race(m, false);
    test_race(m, true);
    loom_model_close(m);
    return test_finish("test_llm_cancel_race");
}
