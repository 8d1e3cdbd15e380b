/* engine.c - one loop per loaded model: slots, queue, batched steps (see engine.h). */
#include "server/engine.h"
#include "cpu/pool.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include "quant/alloc.h"
#include "server/textout.h"

/* ------------------------------------------------------------------ tasks */

srv_task *srv_task_new(void) {
    srv_task *t = loom_calloc(1, sizeof *t);
    if (!t) return NULL;
    t->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (t->efd < 0) {
        loom_free(t);
        return NULL;
    }
    pthread_mutex_init(&t->mu, NULL);
    atomic_init(&t->refs, 1);
    atomic_init(&t->cancel, false);
    t->num_predict = -1;
    t->stop_hit = -1;
    t->logprobs = -1;
    return t;
}

void srv_task_ref(srv_task *t) { atomic_fetch_add(&t->refs, 1); }

void srv_task_unref(srv_task *t) {
    if (!t || atomic_fetch_sub(&t->refs, 1) != 1) return;
    close(t->efd);
    pthread_mutex_destroy(&t->mu);
    for (int i = 0; i < t->n_stop; i++) loom_free(t->stop[i]);
    loom_free(t->stop);
    loom_free(t->prompt);
    loom_free(t->seg);
    loom_free(t->lps);
    loom_free(t->gen);
    loom_free(t->bias_ids);
    loom_free(t->bias_vals);
    loom_grammar_free(t->grammar);
    srv_buf_free(&t->text);
    loom_free(t);
}

static void task_signal(srv_task *t) {
    uint64_t one = 1;
    ssize_t r = write(t->efd, &one, sizeof one);
    (void)r; /* EAGAIN only when the counter is saturated: the reader is woken anyway */
}

void srv_task_wait(srv_task *t, int timeout_ms) {
    struct pollfd p = {.fd = t->efd, .events = POLLIN};
    if (poll(&p, 1, timeout_ms) > 0) {
        uint64_t v;
        ssize_t r = read(t->efd, &v, sizeof v);
        (void)r;
    }
}

/* Append one token's text as a segment (under t->mu); n_eval >= 0 updates the count of
 * generated tokens the reader may look at. */
static void task_emit(srv_task *t, const char *p, size_t n, int n_eval) {
    if (!n && n_eval < 0) return;
    pthread_mutex_lock(&t->mu);
    if (n_eval >= 0) t->n_eval = n_eval;
    if (!n) {
        pthread_mutex_unlock(&t->mu);
        return;
    }
    if (t->n_seg == t->cap_seg) {
        int cap = t->cap_seg ? 2 * t->cap_seg : 64;
        size_t *s = loom_realloc(t->seg, (size_t)cap * sizeof *s);
        if (s) t->seg = s, t->cap_seg = cap;
    }
    if (t->n_seg < t->cap_seg && srv_buf_append(&t->text, p, n)) t->seg[t->n_seg++] = t->text.len;
    pthread_mutex_unlock(&t->mu);
    task_signal(t);
}

static void task_finish(srv_task *t, srv_done reason, int status, const char *msg) {
    pthread_mutex_lock(&t->mu);
    if (!t->done) {
        t->done = true;
        t->reason = reason;
        t->t_end = srv_mono_ns();
        if (!t->t_admit) t->t_admit = t->t_end;
        if (!t->t_first) t->t_first = t->t_end;
        if (reason == SRV_DONE_ERROR) {
            t->err_status = status ? status : 500;
            snprintf(t->err, sizeof t->err, "%s", msg ? msg : "internal error");
        }
    }
    pthread_mutex_unlock(&t->mu);
    task_signal(t);
}

/* ------------------------------------------------------------------ engine */

typedef enum { SLOT_IDLE = 0, SLOT_PROMPT, SLOT_GEN } slot_state;

typedef struct eng_slot {
    int id;
    slot_state state;
    srv_task *task;
    int32_t *cache;         /* tokens of this sequence in the KV cache [n_ctx] */
    int n_cache;
    loom_sampler *smp;
    loom_grammar_matcher *gm; /* structured output: attached to smp */
    int32_t pending;        /* GEN: sampled, shown, not yet in the cache */
    int n_gen, max_gen;
    loom_detok_stream ds;
    srv_textout tout;
    int row;                /* batch row whose logits this slot reads (-1) */
    int n_step;             /* tokens this slot put in the current batch */
    uint64_t admit_seq;
    int64_t last_used;
} eng_slot;

#define TPS_RING 64

struct srv_engine {
    srv_llm *llm;
    const loom_tokenizer *tok;
    int n_slots, n_ctx, n_batch, n_vocab, max_queue, chunk, max_gen_cap;
    eng_slot *slots;
    int32_t *b_tok, *b_pos, *b_seq;
    bool *b_want;
    char *piece;
    size_t piece_cap;
    float *biased;          /* [n_vocab]: a row of logits plus a task's logit_bias (lazily) */
    srv_buf out;            /* text of one token after stop handling */

    pthread_t th;
    bool th_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    srv_task *q_head, *q_tail;
    int n_queued;
    int n_active;
    bool stop;
    uint64_t admit_counter;

    /* statistics (under mu) */
    int64_t last_used;
    uint64_t tok_prompt, tok_gen, steps, rows, gen_steps, gen_rows;
    int max_mixed_prompt;
    int64_t tps_t[TPS_RING];
    int tps_n[TPS_RING];
    int tps_head;
};

static uint64_t random_seed(void) {
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s) s = (uint64_t)srv_now_ns() ^ (uint64_t)(uintptr_t)&s;
    return s;
}

static void slot_release(srv_engine *e, eng_slot *s) {
    if (s->task) srv_task_unref(s->task);
    s->task = NULL;
    loom_sampler_free(s->smp); /* before the matcher it borrows */
    s->smp = NULL;
    loom_grammar_matcher_free(s->gm);
    s->gm = NULL;
    srv_textout_free(&s->tout);
    s->state = SLOT_IDLE;
    s->row = -1;
    s->last_used = srv_mono_ns();
    pthread_mutex_lock(&e->mu);
    e->n_active--;
    e->last_used = s->last_used;
    pthread_mutex_unlock(&e->mu);
}

/* End the slot's task: flush held-back text unless cancelled. */
static void slot_finish(srv_engine *e, eng_slot *s, srv_done reason, int status, const char *msg) {
    srv_task *t = s->task;
    if (reason == SRV_DONE_STOP || reason == SRV_DONE_LENGTH) {
        srv_buf_clear(&e->out);
        size_t n = 0;
        if (loom_detok_stream_flush(&s->ds, e->piece, e->piece_cap, &n) == LOOM_OK && n)
            srv_textout_push(&s->tout, e->piece, n, &e->out);
        srv_textout_flush(&s->tout, &e->out);
        task_emit(t, e->out.data, e->out.len, -1);
    }
    task_finish(t, reason, status, msg);
    slot_release(e, s);
}

static size_t common_prefix(const int32_t *a, int na, const int32_t *b, int nb) {
    int n = na < nb ? na : nb, i = 0;
    while (i < n && a[i] == b[i]) i++;
    return (size_t)i;
}

/* Put task t into slot s (engine thread, outside e->mu). */
static void slot_assign(srv_engine *e, eng_slot *s, srv_task *t) {
    s->task = t;
    s->row = -1;
    s->n_gen = 0;
    s->admit_seq = ++e->admit_counter;
    pthread_mutex_lock(&t->mu);
    t->started = true;
    t->t_admit = srv_mono_ns();
    pthread_mutex_unlock(&t->mu);
    if (t->n_prompt <= 0 || t->n_prompt > e->n_ctx) {
        char msg[160];
        snprintf(msg, sizeof msg, "the prompt has %d tokens; the context window is %d", t->n_prompt, e->n_ctx);
        s->state = SLOT_PROMPT; /* counted active by the caller */
        task_finish(t, SRV_DONE_ERROR, 400, msg);
        slot_release(e, s);
        return;
    }
    loom_sampler_params sp = t->sp;
    loom_error serr = {0};
    if (loom_sampler_new(&sp, e->n_vocab, &s->smp, &serr)) {
        s->state = SLOT_PROMPT;
        char msg[LOOM_ERROR_MSG_MAX + 40];
        snprintf(msg, sizeof msg, "invalid sampling options: %s", serr.msg);
        task_finish(t, SRV_DONE_ERROR, serr.status == LOOM_ERR_NOMEM ? 500 : 400, msg);
        slot_release(e, s);
        return;
    }
    const int32_t *sup;
    const int32_t n_sup = loom_tokenizer_suppressed(e->tok, &sup); /* tokens the model must not emit */
    if (n_sup > 0 && loom_sampler_suppress(s->smp, sup, n_sup)) {
        s->state = SLOT_PROMPT;
        task_finish(t, SRV_DONE_ERROR, 500, "out of memory for the sampler");
        slot_release(e, s);
        return;
    }
    if (t->grammar) { /* structured output: the sampler only picks what the grammar allows */
        loom_error gerr = {0};
        if (loom_grammar_matcher_new(t->grammar, t->gvocab, NULL, &s->gm, &gerr) ||
            loom_sampler_set_grammar(s->smp, s->gm)) {
            s->state = SLOT_PROMPT;
            char msg[LOOM_ERROR_MSG_MAX + 40];
            snprintf(msg, sizeof msg, "structured output: %s", gerr.msg[0] ? gerr.msg : "out of memory");
            task_finish(t, SRV_DONE_ERROR, 500, msg);
            slot_release(e, s);
            return;
        }
    }
    if (sp.repeat_penalty != 1.0f || sp.freq_penalty != 0 || sp.presence_penalty != 0) {
        int from = sp.penalty_last_n > 0 && t->n_prompt > sp.penalty_last_n ? t->n_prompt - sp.penalty_last_n : 0;
        for (int i = from; i < t->n_prompt; i++) loom_sampler_accept_prompt(s->smp, t->prompt[i]);
    }
    loom_detok_stream_init(&s->ds, e->tok, LOOM_DETOK_NO_STRIP | (t->render_special ? LOOM_DETOK_SPECIAL : 0u));
    srv_textout_init(&s->tout, t->stop, t->n_stop);
    int cap = e->max_gen_cap;
    s->max_gen = t->num_predict >= 0 ? t->num_predict : cap;
    /* prefix reuse: keep the longest cached prefix (at least one token to evaluate) */
    int common = 0;
    loom_error rerr = {0};
    srv_llm_reuse(e->llm, s->id, s->cache, s->n_cache, t->prompt, t->n_prompt, &common, &rerr);
    if (common > 0) memcpy(s->cache, t->prompt, (size_t)common * sizeof *s->cache);
    s->n_cache = common;
    t->n_cached = common;
    s->state = SLOT_PROMPT;
    if (s->max_gen == 0) { /* nothing to generate: answer at once (no prompt evaluation) */
        slot_finish(e, s, SRV_DONE_LENGTH, 0, NULL);
    }
}

static eng_slot *pick_slot(srv_engine *e, const srv_task *t) {
    eng_slot *best = NULL;
    size_t best_common = 0;
    for (int i = 0; i < e->n_slots; i++) {
        eng_slot *s = &e->slots[i];
        if (s->state != SLOT_IDLE) continue;
        size_t c = common_prefix(s->cache, s->n_cache, t->prompt, t->n_prompt);
        /* longest common prefix; ties: the least recently used slot */
        if (!best || c > best_common || (c == best_common && s->last_used < best->last_used)) {
            best = s;
            best_common = c;
        }
    }
    return best;
}

/* Admit queued tasks into free slots. Called with e->mu held; drops it around
 * slot_assign. */
static void admit(srv_engine *e) {
    while (e->q_head && e->n_active < e->n_slots) {
        srv_task *t = e->q_head;
        e->q_head = t->next;
        if (!e->q_head) e->q_tail = NULL;
        e->n_queued--;
        t->next = NULL;
        if (atomic_load(&t->cancel)) {
            pthread_mutex_unlock(&e->mu);
            task_finish(t, SRV_DONE_CANCEL, 0, NULL);
            srv_task_unref(t);
            pthread_mutex_lock(&e->mu);
            continue;
        }
        eng_slot *s = pick_slot(e, t);
        e->n_active++;
        s->state = SLOT_PROMPT; /* reserved */
        pthread_mutex_unlock(&e->mu);
        slot_assign(e, s, t);
        pthread_mutex_lock(&e->mu);
    }
}

static void record_tps(srv_engine *e, int n_gen) {
    pthread_mutex_lock(&e->mu);
    e->steps++;
    e->tok_gen += (uint64_t)n_gen;
    e->tps_head = (e->tps_head + 1) % TPS_RING;
    e->tps_t[e->tps_head] = srv_mono_ns();
    e->tps_n[e->tps_head] = n_gen;
    pthread_mutex_unlock(&e->mu);
}

/* Record token id's log probability under the model's logits lg (log-softmax in
 * double) and the n most likely tokens, for the reader. */
static void task_logprob(srv_task *t, const float *lg, int n_vocab, int32_t id) {
    srv_logprob r;
    memset(&r, 0, sizeof r);
    r.id = id;
    int n = t->logprobs < SRV_TOP_LOGPROBS_MAX ? t->logprobs : SRV_TOP_LOGPROBS_MAX;
    float mx = lg[0];
    for (int i = 1; i < n_vocab; i++)
        if (lg[i] > mx) mx = lg[i];
    double sum = 0;
    for (int i = 0; i < n_vocab; i++) sum += exp((double)lg[i] - mx);
    double lse = (double)mx + log(sum);
    r.logprob = (float)((double)lg[id] - lse);
    for (int i = 0; i < n_vocab && n > 0; i++) { /* insertion into the n best so far */
        if (r.n_top == n && lg[i] <= lg[r.top_id[n - 1]]) continue;
        int k = r.n_top < n ? r.n_top++ : n - 1;
        while (k > 0 && lg[r.top_id[k - 1]] < lg[i]) {
            r.top_id[k] = r.top_id[k - 1];
            k--;
        }
        r.top_id[k] = i;
    }
    for (int k = 0; k < r.n_top; k++) r.top_logprob[k] = (float)((double)lg[r.top_id[k]] - lse);
    pthread_mutex_lock(&t->mu);
    if (t->n_lps == t->cap_lps) {
        int cap = t->cap_lps ? 2 * t->cap_lps : 64;
        srv_logprob *p = loom_realloc(t->lps, (size_t)cap * sizeof *p);
        if (p) t->lps = p, t->cap_lps = cap;
    }
    if (t->n_lps < t->cap_lps) t->lps[t->n_lps++] = r;
    pthread_mutex_unlock(&t->mu);
}

/* Handle the token sampled for slot s. */
static void slot_token(srv_engine *e, eng_slot *s, int32_t id) {
    srv_task *t = s->task;
    if (loom_tokenizer_is_eog(e->tok, id)) {
        slot_finish(e, s, SRV_DONE_STOP, 0, NULL);
        return;
    }
    if (loom_sampler_accept(s->smp, id) != LOOM_OK && s->gm) {
        char msg[LOOM_ERROR_MSG_MAX + 40];
        snprintf(msg, sizeof msg, "structured output: %s", loom_grammar_matcher_last_error(s->gm));
        slot_finish(e, s, SRV_DONE_ERROR, 500, msg);
        return;
    }
    s->n_gen++;
    if (t->keep_tokens) {
        if (t->n_gen == t->cap_gen) {
            int cap = t->cap_gen ? 2 * t->cap_gen : 256;
            int32_t *g = loom_realloc(t->gen, (size_t)cap * sizeof *g);
            if (g) t->gen = g, t->cap_gen = cap;
        }
        if (t->n_gen < t->cap_gen) t->gen[t->n_gen++] = id;
    }
    srv_buf_clear(&e->out);
    size_t n = 0;
    bool hit = false;
    if (loom_detok_stream_push(&s->ds, id, e->piece, e->piece_cap, &n) == LOOM_OK && n)
        hit = srv_textout_push(&s->tout, e->piece, n, &e->out);
    task_emit(t, e->out.data, e->out.len, s->n_gen);
    if (hit) {
        t->stop_hit = s->tout.hit; /* published by task_finish's lock */
        task_finish(t, SRV_DONE_STOP, 0, NULL);
        slot_release(e, s);
        return;
    }
    if (s->n_gen >= s->max_gen) {
        slot_finish(e, s, SRV_DONE_LENGTH, 0, NULL);
        return;
    }
    s->pending = id;
    s->state = SLOT_GEN;
}

/* Context shift for a generating slot whose sequence filled its context. */
static bool slot_shift(srv_engine *e, eng_slot *s) {
    srv_task *t = s->task;
    if (!t->shift || !srv_llm_can_shift(e->llm)) return false;
    int keep = t->num_keep < 0 ? 0 : t->num_keep;
    int discard = 0;
    loom_error err = {0};
    if (srv_llm_context_shift(e->llm, s->id, keep, &discard, &err) != LOOM_OK || discard <= 0) return false;
    if (keep > s->n_cache) keep = s->n_cache;
    memmove(s->cache + keep, s->cache + keep + discard, (size_t)(s->n_cache - keep - discard) * sizeof *s->cache);
    s->n_cache -= discard;
    return true;
}

/* One decode step over every active slot. */
static void step(srv_engine *e) {
    /* cancellations first: a client that left frees its slot now */
    for (int i = 0; i < e->n_slots; i++) {
        eng_slot *s = &e->slots[i];
        if (s->state != SLOT_IDLE && s->task && atomic_load(&s->task->cancel))
            slot_finish(e, s, SRV_DONE_CANCEL, 0, NULL);
    }
    int n = 0, n_gen_slots = 0;
    for (int i = 0; i < e->n_slots; i++) {
        eng_slot *s = &e->slots[i];
        s->row = -1;
        s->n_step = 0;
        if (s->state != SLOT_GEN) continue;
        if (s->n_cache >= e->n_ctx && !slot_shift(e, s)) {
            slot_finish(e, s, SRV_DONE_LENGTH, 0, NULL);
            continue;
        }
        e->b_tok[n] = s->pending;
        e->b_pos[n] = s->n_cache;
        e->b_seq[n] = s->id;
        e->b_want[n] = true;
        s->row = n++;
        s->n_step = 1;
        n_gen_slots++;
    }
    int budget = e->n_batch - n;
    if (n_gen_slots && budget > e->chunk) budget = e->chunk;
    while (budget > 0) { /* prompt chunks, oldest admission first */
        eng_slot *s = NULL;
        for (int i = 0; i < e->n_slots; i++) {
            eng_slot *c = &e->slots[i];
            if (c->state == SLOT_PROMPT && c->task && !c->n_step && (!s || c->admit_seq < s->admit_seq)) s = c;
        }
        if (!s) break;
        int k = s->task->n_prompt - s->n_cache;
        if (k > budget) k = budget;
        for (int j = 0; j < k; j++) {
            e->b_tok[n + j] = s->task->prompt[s->n_cache + j];
            e->b_pos[n + j] = s->n_cache + j;
            e->b_seq[n + j] = s->id;
            e->b_want[n + j] = false;
        }
        n += k;
        s->n_step = k;
        if (s->n_cache + k == s->task->n_prompt) {
            e->b_want[n - 1] = true;
            s->row = n - 1;
        }
        budget -= k;
    }
    if (n == 0) return;
    loom_error err = {0};
    loom_status st = srv_llm_decode(e->llm, e->b_tok, e->b_pos, e->b_seq, e->b_want, n, &err);
    if (st) {
        for (int i = 0; i < e->n_slots; i++) {
            eng_slot *s = &e->slots[i];
            if (!s->n_step || s->state == SLOT_IDLE) continue;
            srv_llm_seq_clear(e->llm, s->id);
            s->n_cache = 0;
            bool cancelled = s->task && atomic_load(&s->task->cancel);
            slot_finish(e, s, cancelled ? SRV_DONE_CANCEL : SRV_DONE_ERROR, 500, err.msg);
        }
        return;
    }
    uint64_t n_prompt_tok = 0;
    for (int i = 0; i < e->n_slots; i++) { /* the batch's tokens are in the cache now */
        eng_slot *s = &e->slots[i];
        if (!s->n_step) continue;
        if (s->state == SLOT_GEN) {
            s->cache[s->n_cache++] = s->pending;
        } else {
            memcpy(s->cache + s->n_cache, s->task->prompt + s->n_cache, (size_t)s->n_step * sizeof *s->cache);
            s->n_cache += s->n_step;
            n_prompt_tok += (uint64_t)s->n_step;
        }
    }
    int n_sampled = 0;
    for (int i = 0; i < e->n_slots; i++) {
        eng_slot *s = &e->slots[i];
        if (s->row < 0 || s->state == SLOT_IDLE) continue;
        const float *lg = srv_llm_logits(e->llm, s->row);
        const float *model_lg = lg; /* logprobs are the model's, before bias */
        if (lg && s->task->n_bias) { /* logit_bias: on a copy (the model's row stays as it is) */
            if (!e->biased && !(e->biased = loom_malloc((size_t)e->n_vocab * sizeof *e->biased))) {
                slot_finish(e, s, SRV_DONE_ERROR, 500, "out of memory");
                continue;
            }
            memcpy(e->biased, lg, (size_t)e->n_vocab * sizeof *e->biased);
            for (int k = 0; k < s->task->n_bias; k++)
                if (s->task->bias_ids[k] >= 0 && s->task->bias_ids[k] < e->n_vocab)
                    e->biased[s->task->bias_ids[k]] += s->task->bias_vals[k];
            lg = e->biased;
        }
        int32_t id = 0;
        loom_status ss = lg ? loom_sampler_sample(s->smp, lg, &id) : LOOM_ERR_INTERNAL;
        if (ss == LOOM_ERR_NOT_FOUND && s->gm) { /* the grammar allows no token of this vocabulary */
            slot_finish(e, s, SRV_DONE_ERROR, 500, "structured output: no token of the vocabulary continues the format");
            continue;
        }
        if (ss) {
            slot_finish(e, s, SRV_DONE_ERROR, 500, "sampling failed");
            continue;
        }
        if (s->state == SLOT_PROMPT) {
            pthread_mutex_lock(&s->task->mu);
            s->task->t_first = srv_mono_ns();
            pthread_mutex_unlock(&s->task->mu);
        }
        n_sampled++;
        if (s->task->logprobs >= 0 && !loom_tokenizer_is_eog(e->tok, id)) task_logprob(s->task, model_lg, e->n_vocab, id);
        slot_token(e, s, id);
    }
    pthread_mutex_lock(&e->mu);
    e->tok_prompt += n_prompt_tok;
    e->rows += (uint64_t)n;
    if (n_gen_slots) e->gen_steps++, e->gen_rows += (uint64_t)n_gen_slots;
    if (n_gen_slots && (int)n_prompt_tok > e->max_mixed_prompt) e->max_mixed_prompt = (int)n_prompt_tok;
    pthread_mutex_unlock(&e->mu);
    record_tps(e, n_sampled);
}

static void *engine_main(void *arg) {
    srv_engine *e = arg;
    pthread_mutex_lock(&e->mu);
    for (;;) {
        admit(e);
        if (e->stop) break;
        if (e->n_active == 0) {
            pthread_cond_wait(&e->cv, &e->mu);
            continue;
        }
        pthread_mutex_unlock(&e->mu);
        step(e);
        pthread_mutex_lock(&e->mu);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}

loom_status srv_engine_new(srv_llm *l, const loom_tokenizer *tok, const srv_engine_params *p, srv_engine **out,
                           loom_error *err) {
    *out = NULL;
    srv_engine *e = loom_calloc(1, sizeof *e);
    if (!e) {
        srv_llm_free(l);
        return loom_error_set(err, LOOM_ERR_NOMEM, "out of memory");
    }
    e->llm = l;
    e->tok = tok;
    e->n_slots = srv_llm_n_seq(l);
    e->n_ctx = srv_llm_n_ctx_seq(l);
    e->n_batch = srv_llm_n_batch(l);
    if (e->n_slots > e->n_batch) e->n_slots = e->n_batch;
    e->n_vocab = loom_model_n_vocab(srv_llm_model(l));
    e->max_queue = p && p->max_queue > 0 ? p->max_queue : 512;
    e->chunk = p && p->prompt_chunk > 0 ? p->prompt_chunk : e->n_batch / 4;
    if (e->chunk < 1) e->chunk = 1;
    e->max_gen_cap = p && p->max_gen > 0 ? p->max_gen : 10 * e->n_ctx;
    e->piece_cap = loom_tokenizer_max_piece_len(tok) + 8;
    for (int32_t i = 0, nv = loom_tokenizer_n_vocab(tok); i < nv; i++) { /* special tokens' texts too */
        const char *tt;
        size_t tl;
        if (loom_token_text(tok, i, &tt, &tl) == LOOM_OK && tl + 8 > e->piece_cap) e->piece_cap = tl + 8;
    }
    e->piece = loom_malloc(e->piece_cap);
    e->slots = loom_calloc((size_t)e->n_slots, sizeof *e->slots);
    size_t nb = (size_t)e->n_batch;
    e->b_tok = loom_malloc(nb * sizeof *e->b_tok);
    e->b_pos = loom_malloc(nb * sizeof *e->b_pos);
    e->b_seq = loom_malloc(nb * sizeof *e->b_seq);
    e->b_want = loom_malloc(nb * sizeof *e->b_want);
    bool ok = e->piece && e->slots && e->b_tok && e->b_pos && e->b_seq && e->b_want && srv_buf_reserve(&e->out, 1024);
    for (int i = 0; ok && i < e->n_slots; i++) {
        e->slots[i].id = i;
        e->slots[i].row = -1;
        e->slots[i].cache = loom_malloc((size_t)e->n_ctx * sizeof(int32_t));
        ok = e->slots[i].cache != NULL;
    }
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    e->last_used = srv_mono_ns();
    pthread_attr_t attr; /* the engine thread is the CPU pool's thread 0: kernels' stack tiles */
    const bool have_attr = loom_thread_attr_init(&attr);
    if (ok && pthread_create(&e->th, have_attr ? &attr : NULL, engine_main, e) == 0) e->th_started = true;
    if (have_attr) pthread_attr_destroy(&attr);
    if (!e->th_started) {
        srv_engine_free(e);
        return loom_error_set(err, LOOM_ERR_NOMEM, "starting the engine failed (out of memory)");
    }
    *out = e;
    return LOOM_OK;
}

void srv_engine_free(srv_engine *e) {
    if (!e) return;
    if (e->th_started) {
        pthread_mutex_lock(&e->mu);
        e->stop = true;
        pthread_cond_signal(&e->cv);
        pthread_mutex_unlock(&e->mu);
        srv_llm_cancel(e->llm);
        pthread_join(e->th, NULL);
    }
    for (int i = 0; e->slots && i < e->n_slots; i++) {
        eng_slot *s = &e->slots[i];
        if (s->task) {
            task_finish(s->task, SRV_DONE_ERROR, 500, "the model was unloaded");
            srv_task_unref(s->task);
        }
        loom_sampler_free(s->smp);
        loom_grammar_matcher_free(s->gm);
        srv_textout_free(&s->tout);
        loom_free(s->cache);
    }
    for (srv_task *t = e->q_head, *nx; t; t = nx) {
        nx = t->next;
        task_finish(t, SRV_DONE_ERROR, 500, "the model was unloaded");
        srv_task_unref(t);
    }
    if (e->slots) {
        pthread_mutex_destroy(&e->mu);
        pthread_cond_destroy(&e->cv);
    }
    loom_free(e->slots);
    loom_free(e->piece);
    loom_free(e->biased);
    loom_free(e->b_tok);
    loom_free(e->b_pos);
    loom_free(e->b_seq);
    loom_free(e->b_want);
    srv_buf_free(&e->out);
    srv_llm_free(e->llm);
    loom_free(e);
}

int srv_engine_submit(srv_engine *e, srv_task *t) {
    pthread_mutex_lock(&e->mu);
    if (e->stop) {
        pthread_mutex_unlock(&e->mu);
        return -2;
    }
    int free_slots = e->n_slots - e->n_active;
    if (e->n_queued - free_slots >= e->max_queue) {
        pthread_mutex_unlock(&e->mu);
        return -1;
    }
    srv_task_ref(t);
    t->t_queued = srv_mono_ns();
    t->next = NULL;
    if (e->q_tail) e->q_tail->next = t;
    else e->q_head = t;
    e->q_tail = t;
    e->n_queued++;
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    return 0;
}

void srv_engine_cancel(srv_engine *e, srv_task *t) {
    atomic_store(&t->cancel, true);
    pthread_mutex_lock(&e->mu);
    srv_task *prev = NULL;
    for (srv_task *q = e->q_head; q; prev = q, q = q->next) {
        if (q != t) continue;
        if (prev) prev->next = q->next;
        else e->q_head = q->next;
        if (e->q_tail == q) e->q_tail = prev;
        e->n_queued--;
        q->next = NULL;
        pthread_mutex_unlock(&e->mu);
        task_finish(t, SRV_DONE_CANCEL, 0, NULL);
        srv_task_unref(t);
        return;
    }
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

void srv_engine_get_stats(srv_engine *e, srv_engine_stats *st) {
    pthread_mutex_lock(&e->mu);
    st->n_slots = e->n_slots;
    st->active = e->n_active;
    st->queued = e->n_queued;
    st->last_used_ns = e->last_used;
    st->tokens_prompt = e->tok_prompt;
    st->tokens_gen = e->tok_gen;
    st->steps = e->steps;
    st->batch_rows = e->rows;
    st->gen_steps = e->gen_steps;
    st->gen_rows = e->gen_rows;
    st->max_mixed_prompt = e->max_mixed_prompt;
    st->prompt_chunk = e->chunk;
    int64_t now = srv_mono_ns(), oldest = now;
    long sum = 0;
    for (int i = 0; i < TPS_RING; i++) {
        if (!e->tps_t[i] || now - e->tps_t[i] > 10 * (int64_t)1000000000) continue;
        sum += e->tps_n[i];
        if (e->tps_t[i] < oldest) oldest = e->tps_t[i];
    }
    double span = (double)(now - oldest) / 1e9;
    st->gen_tps = span > 0.05 ? (double)sum / span : 0.0;
    pthread_mutex_unlock(&e->mu);
}

int srv_engine_n_slots(const srv_engine *e) { return e->n_slots; }
int srv_engine_n_ctx(const srv_engine *e) { return e->n_ctx; }
int srv_engine_n_vocab(const srv_engine *e) { return e->n_vocab; }
srv_llm *srv_engine_llm(srv_engine *e) { return e->llm; }
uint64_t srv_engine_random_seed(void) { return random_seed(); }
