/*
 * models.c - loaded models: load on first use, several at once while their dry-run
 * memory plans fit (--max-memory, --max-loaded), least recently used idle model
 * unloaded first, reload when a request's load-time options differ, keep_alive
 * expiry (a reaper thread), and /api/ps snapshots.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "quant/alloc.h"
#include "server/server_internal.h"

struct srv_models {
    loom_server *s;
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* an instance became ready / idle / was removed */
    pthread_cond_t reaper_cv;
    srv_inst *list;
    int loading;
    bool stop;
    pthread_t reaper;
    bool reaper_started;
};

static bool lo_equal(const srv_load_opts *a, const srv_load_opts *b) {
    return a->n_ctx == b->n_ctx && a->n_batch == b->n_batch && a->n_gpu == b->n_gpu &&
           a->n_thread == b->n_thread && a->mmap == b->mmap;
}

static void inst_destroy(srv_inst *in) {
    if (!in) return;
    srv_engine_free(in->eng); /* joins the loop, closes the model */
    loom_grammar_vocab_free(in->gvocab);
    pthread_mutex_destroy(&in->gv_mu);
    srv_render_free(in->render);
    srv_model_info_free(&in->info);
    loom_free(in);
}

/* Unlink from the list (under mu). */
static void unlink_inst(srv_models *m, srv_inst *in) {
    for (srv_inst **pp = &m->list; *pp; pp = &(*pp)->next)
        if (*pp == in) {
            *pp = in->next;
            in->next = NULL;
            return;
        }
}

static void timed_wait(pthread_cond_t *cv, pthread_mutex_t *mu, int ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (long)(ms % 1000) * 1000000;
    if (ts.tv_nsec >= 1000000000) ts.tv_sec++, ts.tv_nsec -= 1000000000;
    pthread_cond_timedwait(cv, mu, &ts);
}

static void *reaper_main(void *arg) {
    srv_models *m = arg;
    pthread_mutex_lock(&m->mu);
    while (!m->stop) {
        int64_t now = srv_mono_ns();
        srv_inst *victim = NULL;
        for (srv_inst *in = m->list; in; in = in->next)
            if (in->ready && !in->refs && in->expires_mono <= now) {
                victim = in;
                break;
            }
        if (victim) {
            unlink_inst(m, victim);
            pthread_cond_broadcast(&m->cv);
            pthread_mutex_unlock(&m->mu);
            inst_destroy(victim);
            pthread_mutex_lock(&m->mu);
            continue;
        }
        timed_wait(&m->reaper_cv, &m->mu, 250);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

srv_models *srv_models_new(loom_server *s) {
    srv_models *m = loom_calloc(1, sizeof *m);
    if (!m) return NULL;
    m->s = s;
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    pthread_cond_init(&m->reaper_cv, NULL);
    if (pthread_create(&m->reaper, NULL, reaper_main, m) == 0) m->reaper_started = true;
    if (!m->reaper_started) {
        srv_models_free(m);
        return NULL;
    }
    return m;
}

void srv_models_free(srv_models *m) {
    if (!m) return;
    pthread_mutex_lock(&m->mu);
    m->stop = true;
    pthread_cond_broadcast(&m->reaper_cv);
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    if (m->reaper_started) pthread_join(m->reaper, NULL);
    srv_inst *l = m->list;
    m->list = NULL;
    while (l) {
        srv_inst *n = l->next;
        inst_destroy(l);
        l = n;
    }
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    pthread_cond_destroy(&m->reaper_cv);
    loom_free(m);
}

static uint64_t phys_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), ps = sysconf(_SC_PAGESIZE);
    return pages > 0 && ps > 0 ? (uint64_t)pages * (uint64_t)ps : (uint64_t)8 << 30;
}

static srv_llm_params llm_params(const loom_server *s, const srv_model_info *info, const srv_load_opts *lo) {
    srv_llm_params p;
    memset(&p, 0, sizeof p);
    p.model = s->p.model;
    p.model.path = info->gguf;
    p.model.n_batch = lo->n_batch;
    if (lo->n_gpu >= 0) p.model.n_gpu_layers = lo->n_gpu;
    if (lo->n_thread > 0) p.model.n_threads = lo->n_thread;
    p.model.no_mmap = !lo->mmap;
    p.n_seq = s->p.parallel;
    p.n_ctx_seq = lo->n_ctx;
    return p;
}

/* Open the model and start its engine (no lock held). */
static bool inst_load(srv_models *m, srv_inst *in, srv_err *e) {
    loom_server *s = m->s;
    srv_llm_params p = llm_params(s, &in->info, &in->lo);
    loom_error err = {0};
    srv_llm *l = NULL;
    int64_t t0 = srv_mono_ns();
    loom_status st = srv_llm_open(&p, &l, &err);
    if (st) {
        srv_err_set(e, st == LOOM_ERR_NOMEM ? 503 : 500, "loading model '%s' failed: %s: %s", in->info.name,
                    loom_status_name(st), err.msg);
        in->fail_status = st;
        return false;
    }
    loom_model *model = srv_llm_model(l);
    const loom_tokenizer *tok = NULL;
    if ((st = loom_model_tokenizer(model, &tok, &err))) {
        srv_err_set(e, 500, "model '%s': its vocabulary cannot be used: %s", in->info.name, err.msg);
        srv_llm_free(l);
        return false;
    }
    in->render = srv_render_new(loom_model_gguf(model), tok);
    if (!in->render) {
        srv_err_set(e, 500, "out of memory");
        srv_llm_free(l);
        return false;
    }
    srv_engine_params ep = {.max_queue = s->p.max_queue};
    if ((st = srv_engine_new(l, tok, &ep, &in->eng, &err))) { /* frees l on failure */
        srv_err_set(e, 500, "model '%s': %s", in->info.name, err.msg);
        return false;
    }
    in->model = model;
    in->tok = tok;
    in->n_ctx_train = loom_model_get_hparams(model)->n_ctx_train;
    in->load_ns = srv_mono_ns() - t0;
    atomic_fetch_add(&s->metrics.loads, 1);
    atomic_fetch_add(&s->metrics.load_ns_total, (unsigned long long)in->load_ns);
    if (!s->p.quiet) {
        pthread_mutex_lock(&s->log_mu);
        fprintf(s->log, "loom serve: loaded %s (%s) in %.2f s: %d slot%s of %d tokens, plan %.1f MiB\n", in->info.name,
                in->info.gguf, (double)in->load_ns / 1e9, srv_engine_n_slots(in->eng),
                srv_engine_n_slots(in->eng) == 1 ? "" : "s", srv_engine_n_ctx(in->eng), (double)in->mem / 1048576.0);
        fflush(s->log);
        pthread_mutex_unlock(&s->log_mu);
    }
    return true;
}

/* Whether the loaded models' plans plus in's fit: the CPU part within budget, each
 * accelerator within its capacity (matched by name). */
static bool plans_fit(srv_models *m, const srv_inst *in, uint64_t budget, const char **culprit) {
    for (int d = 0; d < in->plan.n_dev; d++) {
        uint64_t used = in->plan.dev_bytes[d];
        for (srv_inst *x = m->list; x; x = x->next) {
            if (x == in) continue;
            for (int k = 0; k < x->plan.n_dev; k++)
                if (!strcmp(x->plan.dev_name[k], in->plan.dev_name[d])) used += x->plan.dev_bytes[k];
        }
        uint64_t cap = d == 0 ? budget : in->plan.dev_capacity[d];
        if (used > cap) {
            *culprit = in->plan.dev_name[d];
            return false;
        }
    }
    return true;
}

static int loaded_count(srv_models *m) {
    int n = 0;
    for (srv_inst *in = m->list; in; in = in->next) n++;
    return n;
}

static srv_inst *lru_idle(srv_models *m, const srv_inst *except) {
    srv_inst *best = NULL;
    int64_t best_t = INT64_MAX;
    for (srv_inst *in = m->list; in; in = in->next) {
        if (in == except || !in->ready || in->refs) continue;
        srv_engine_stats st;
        srv_engine_get_stats(in->eng, &st);
        if (st.last_used_ns < best_t) best = in, best_t = st.last_used_ns;
    }
    return best;
}

srv_inst *srv_models_acquire(srv_models *m, const srv_model_info *info, const srv_load_opts *lo, int64_t *load_ns,
                             srv_err *e) {
    loom_server *s = m->s;
    *load_ns = 0;
    const int64_t deadline = srv_mono_ns() + (int64_t)300 * 1000000000; /* waits for busy models */
    pthread_mutex_lock(&m->mu);
    for (;;) {
        if (m->stop) {
            pthread_mutex_unlock(&m->mu);
            srv_err_set(e, 503, "the server is shutting down");
            return NULL;
        }
        srv_inst *in = NULL;
        for (srv_inst *x = m->list; x; x = x->next)
            if (!strcmp(x->info.name, info->name) && !strcmp(x->info.gguf, info->gguf)) in = x;
        if (in && lo_equal(&in->lo, lo)) {
            if (in->ready) {
                in->refs++;
                in->expires_mono = INT64_MAX;
                pthread_mutex_unlock(&m->mu);
                return in;
            }
            if (in->failed) { /* the loader left it for us to report */
                srv_err_set(e, in->fail_status == LOOM_ERR_NOMEM ? 503 : 500, "%s", in->fail_msg);
                pthread_mutex_unlock(&m->mu);
                return NULL;
            }
            pthread_cond_wait(&m->cv, &m->mu); /* being loaded by another request */
            continue;
        }
        if (in) { /* loaded with other options: reload once no request uses it */
            if (in->ready && !in->refs) {
                unlink_inst(m, in);
                pthread_cond_broadcast(&m->cv);
                pthread_mutex_unlock(&m->mu);
                inst_destroy(in);
                pthread_mutex_lock(&m->mu);
                continue;
            }
            if (srv_mono_ns() > deadline) {
                pthread_mutex_unlock(&m->mu);
                srv_err_set(e, 503, "model '%s' is busy with other load options (num_ctx, num_gpu ...); try again",
                            info->name);
                return NULL;
            }
            timed_wait(&m->cv, &m->mu, 1000);
            continue;
        }
        break;
    }
    /* not loaded: a placeholder others wait on, then plan, evict, load */
    srv_inst *in = loom_calloc(1, sizeof *in);
    if (!in || !srv_model_info_copy(&in->info, info)) {
        loom_free(in);
        pthread_mutex_unlock(&m->mu);
        srv_err_set(e, 500, "out of memory");
        return NULL;
    }
    in->lo = *lo;
    pthread_mutex_init(&in->gv_mu, NULL);
    in->expires_mono = INT64_MAX;
    in->keep_alive_ns = s->p.keep_alive_ns;
    in->next = m->list;
    m->list = in;
    m->loading++;
    pthread_mutex_unlock(&m->mu);

    int64_t t0 = srv_mono_ns();
    srv_llm_params lp = llm_params(s, info, lo);
    loom_error err = {0};
    bool ok = srv_llm_plan(&lp, &in->plan, &err) == LOOM_OK;
    in->mem = in->plan.total;
    in->mem_accel = in->plan.accel;
    if (!ok) {
        srv_err_set(e, err.status == LOOM_ERR_NOMEM ? 503 : 500, "model '%s' cannot be loaded: %s: %s", info->name,
                    loom_status_name(err.status), err.msg);
    }
    uint64_t budget = s->p.max_memory ? s->p.max_memory : phys_memory() / 10 * 9;
    int max_loaded = s->p.max_loaded > 0 ? s->p.max_loaded : 3;
    pthread_mutex_lock(&m->mu);
    while (ok) { /* evict idle models (least recently used first) until the plan fits */
        const char *culprit = "CPU";
        int count = loaded_count(m);
        if (plans_fit(m, in, budget, &culprit) && count <= max_loaded) break;
        srv_inst *v = lru_idle(m, in);
        if (v) {
            unlink_inst(m, v);
            pthread_mutex_unlock(&m->mu);
            inst_destroy(v);
            pthread_mutex_lock(&m->mu);
            continue;
        }
        if (count == 1) break; /* alone and still too big: let the load itself decide */
        if (srv_mono_ns() > deadline) {
            srv_err_set(e, 503, "not enough memory on %s to load '%s' (plan %.1f MiB) while other models are busy",
                        culprit, info->name, (double)in->mem / 1048576.0);
            ok = false;
            break;
        }
        timed_wait(&m->cv, &m->mu, 1000);
    }
    pthread_mutex_unlock(&m->mu);
    if (ok) {
        ok = inst_load(m, in, e);
        if (!ok && in->fail_status == LOOM_ERR_NOMEM) { /* unload every idle model and try once more */
            pthread_mutex_lock(&m->mu);
            srv_inst *v;
            bool freed = false;
            while ((v = lru_idle(m, in))) {
                unlink_inst(m, v);
                pthread_mutex_unlock(&m->mu);
                inst_destroy(v);
                freed = true;
                pthread_mutex_lock(&m->mu);
            }
            pthread_mutex_unlock(&m->mu);
            if (freed) {
                memset(e, 0, sizeof *e);
                ok = inst_load(m, in, e);
            }
        }
    }
    pthread_mutex_lock(&m->mu);
    m->loading--;
    if (ok) {
        in->ready = true;
        in->refs = 1;
        *load_ns = srv_mono_ns() - t0;
    } else {
        in->failed = true;
        snprintf(in->fail_msg, sizeof in->fail_msg, "%s", e->msg);
        unlink_inst(m, in);
    }
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    if (!ok) {
        /* waiters saw failed before the unlink; give them a moment is not needed: they
         * re-scan the list, find nothing, and load it themselves */
        inst_destroy(in);
        return NULL;
    }
    return in;
}

const loom_grammar_vocab *srv_inst_grammar_vocab(srv_inst *in, srv_err *e) {
    pthread_mutex_lock(&in->gv_mu);
    if (!in->gvocab) {
        loom_error err = {0};
        if (loom_grammar_vocab_new(in->tok, &in->gvocab, &err))
            srv_err_set(e, err.status == LOOM_ERR_NOMEM ? 500 : 400, "structured output: %s", err.msg);
    }
    const loom_grammar_vocab *v = in->gvocab;
    pthread_mutex_unlock(&in->gv_mu);
    return v;
}

void srv_models_release(srv_models *m, srv_inst *in, bool ka_set, int64_t ka) {
    if (!in) return;
    pthread_mutex_lock(&m->mu);
    if (ka_set) in->keep_alive_ns = ka;
    in->refs--;
    if (!in->refs) {
        int64_t k = in->keep_alive_ns;
        in->expires_mono = k < 0 ? INT64_MAX : srv_mono_ns() + k;
        if (k == 0) pthread_cond_signal(&m->reaper_cv);
        pthread_cond_broadcast(&m->cv);
    }
    pthread_mutex_unlock(&m->mu);
}

void srv_models_unload(srv_models *m, const char *name) {
    pthread_mutex_lock(&m->mu);
    srv_inst *victim = NULL;
    for (srv_inst *in = m->list; in; in = in->next) {
        if (strcmp(in->info.name, name)) continue;
        in->keep_alive_ns = 0;
        if (in->ready && !in->refs) victim = in;
        else in->expires_mono = 0;
    }
    if (victim) unlink_inst(m, victim);
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    inst_destroy(victim);
}

int srv_models_loading(srv_models *m) {
    pthread_mutex_lock(&m->mu);
    int n = m->loading;
    pthread_mutex_unlock(&m->mu);
    return n;
}

bool srv_models_ps(srv_models *m, srv_ps_entry **out, int *n) {
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&m->mu);
    int cnt = 0;
    for (srv_inst *in = m->list; in; in = in->next) cnt += in->ready;
    srv_ps_entry *v = loom_calloc((size_t)(cnt ? cnt : 1), sizeof *v);
    bool ok = v != NULL;
    int k = 0;
    int64_t now_mono = srv_mono_ns(), now_wall = srv_now_ns();
    for (srv_inst *in = m->list; ok && in; in = in->next) {
        if (!in->ready) continue;
        srv_ps_entry *p = &v[k];
        if (!srv_model_info_copy(&p->info, &in->info)) {
            ok = false;
            break;
        }
        k++;
        p->mem = in->mem;
        p->mem_accel = in->mem_accel;
        int64_t exp = in->refs ? INT64_MAX : in->expires_mono;
        if (in->refs && in->keep_alive_ns >= 0) exp = now_mono + in->keep_alive_ns;
        p->expires_ns = exp == INT64_MAX ? INT64_MAX : now_wall + (exp - now_mono);
        p->n_ctx = srv_engine_n_ctx(in->eng);
        p->n_slots = srv_engine_n_slots(in->eng);
        srv_engine_get_stats(in->eng, &p->st);
    }
    pthread_mutex_unlock(&m->mu);
    if (!ok) {
        srv_ps_free(v, k);
        return false;
    }
    *out = v;
    *n = k;
    return true;
}

void srv_ps_free(srv_ps_entry *v, int n) {
    for (int i = 0; i < n; i++) srv_model_info_free(&v[i].info);
    loom_free(v);
}
