/*
 * seqapi.c - srv_llm on loom_model (see seqapi.h): the multi-sequence batch API, or
 * the single-sequence fallback (loom_model_eval) when the model library answers
 * LOOM_ERR_UNSUPPORTED to the sequence calls.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loom_embed.h"
#include "quant/alloc.h"
#include "server/seqapi.h"

struct srv_llm {
    loom_model *m;
    bool multi;
    int n_seq, n_ctx;
    loom_batch b;
    int last_n; /* fallback: rows of the last decode */
};

/* A decoder file with a pooling type is an embedding model (Qwen3-Embedding ...): as
 * Ollama, it does not generate (the caller answers 400, see srv_gguf_is_embedding). */
static loom_status not_embedding(loom_model **m, loom_error *err) {
    if (!loom_embed_gguf_supported(loom_model_gguf(*m))) return LOOM_OK;
    loom_model_close(*m);
    *m = NULL;
    return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "an embedding model (it has a pooling type) does not generate");
}

static loom_status open_model(const srv_llm_params *p, int n_seq, loom_model **m, loom_error *err) {
    loom_model_params mp = p->model;
    mp.n_ctx = p->n_ctx_seq;
    mp.n_seq_max = n_seq;
    loom_status s = loom_model_open(&mp, m, err);
    return s ? s : not_embedding(m, err);
}

loom_status srv_llm_open(const srv_llm_params *p, srv_llm **out, loom_error *err) {
    *out = NULL;
    srv_llm *l = loom_calloc(1, sizeof *l);
    if (!l) return loom_error_set(err, LOOM_ERR_NOMEM, "out of memory");
    int n_seq = p->n_seq > 0 ? p->n_seq : 1;
    loom_status s = open_model(p, n_seq, &l->m, err);
    if (s) {
        loom_free(l);
        return s;
    }
    /* probe the sequence calls: the fallback when they are not implemented */
    loom_error pe = {0};
    l->multi = loom_model_seq_remove(l->m, 0, 0, -1, &pe) != LOOM_ERR_UNSUPPORTED;
    if (!l->multi && n_seq > 1) {
        loom_model_close(l->m);
        l->m = NULL;
        if ((s = open_model(p, 1, &l->m, err))) {
            loom_free(l);
            return s;
        }
    }
    l->n_seq = l->multi ? n_seq : 1;
    l->n_ctx = loom_model_n_ctx(l->m);
    if (l->multi && (s = loom_batch_init(&l->b, loom_model_n_batch(l->m), 1, err))) {
        loom_model_close(l->m);
        loom_free(l);
        return s;
    }
    *out = l;
    return LOOM_OK;
}

loom_status srv_llm_plan(const srv_llm_params *p, srv_plan *plan, loom_error *err) {
    memset(plan, 0, sizeof *plan);
    loom_model_params mp = p->model;
    mp.n_ctx = p->n_ctx_seq;
    mp.n_seq_max = p->n_seq > 0 ? p->n_seq : 1;
    mp.dry_run = true;
    mp.progress = NULL;
    loom_model *m = NULL;
    loom_status s = loom_model_open(&mp, &m, err);
    if (s || (s = not_embedding(&m, err))) return s;
    loom_backend_memory mem;
    s = loom_backend_memory_get(loom_model_backend(m), &mem);
    if (!s) {
        plan->total = loom_backend_memory_total(&mem);
        plan->n_dev = mem.n_devices < SRV_PLAN_MAX_DEV ? mem.n_devices : SRV_PLAN_MAX_DEV;
        for (int d = 0; d < plan->n_dev; d++) {
            const loom_device_memory *dm = &mem.devices[d];
            uint64_t b = dm->graph.size + (d == 0 ? mem.input_weights.size : 0);
            for (int i = 0; i < dm->n_layers; i++) b += dm->weights[i].size + dm->cache[i].size;
            plan->dev_bytes[d] = b;
            plan->dev_capacity[d] = dm->total_bytes;
            snprintf(plan->dev_name[d], sizeof plan->dev_name[d], "%s", dm->name);
            if (d > 0) plan->accel += b;
        }
        loom_backend_memory_free(&mem);
    } else {
        loom_error_set(err, s, "reading the memory plan failed");
    }
    loom_model_close(m);
    return s;
}

void srv_llm_free(srv_llm *l) {
    if (!l) return;
    if (l->multi) loom_batch_free(&l->b);
    loom_model_close(l->m);
    loom_free(l);
}

loom_model *srv_llm_model(srv_llm *l) { return l->m; }
int srv_llm_n_seq(const srv_llm *l) { return l->n_seq; }
int srv_llm_n_ctx_seq(const srv_llm *l) { return l->n_ctx; }
int srv_llm_n_batch(const srv_llm *l) { return loom_model_n_batch(l->m); }
bool srv_llm_can_shift(const srv_llm *l) { return l->multi; }
bool srv_llm_batched(const srv_llm *l) { return l->multi; }

loom_status srv_llm_decode(srv_llm *l, const int32_t *tok, const int32_t *pos, const int32_t *seq,
                           const bool *want, int n, loom_error *err) {
    l->last_n = 0;
    if (n <= 0) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "empty batch");
    if (l->multi) {
        loom_batch_clear(&l->b);
        for (int i = 0; i < n; i++) {
            loom_status s = loom_batch_add(&l->b, tok[i], pos[i], &seq[i], 1, want[i], err);
            if (s) return s;
        }
        return loom_model_decode(l->m, &l->b, err);
    }
    int n_past = loom_model_n_past(l->m);
    for (int i = 0; i < n; i++) {
        if (seq[i] != 0) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "sequence %d: only one sequence", seq[i]);
        if (pos[i] != n_past + i)
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "position %d does not continue the cache (%d)", pos[i],
                                  n_past + i);
        if (want[i] && i != n - 1)
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "logits of a row before the last");
    }
    loom_status s = loom_model_eval(l->m, tok, n, false, err);
    if (!s) l->last_n = n;
    return s;
}

const float *srv_llm_logits(srv_llm *l, int i) {
    if (l->multi) return loom_model_batch_logits(l->m, i);
    if (i != l->last_n - 1) return NULL;
    return loom_model_logits(l->m, -1);
}

loom_status srv_llm_reuse(srv_llm *l, int seq, const int32_t *mirror, int n_mirror, const int32_t *tokens, int n,
                          int *n_cached, loom_error *err) {
    *n_cached = 0;
    if (l->multi) {
        int32_t kept = 0;
        loom_status s = loom_model_seq_reuse_prefix(l->m, seq, tokens, n, &kept, err);
        if (s) { /* forget the sequence and evaluate everything */
            loom_model_seq_remove(l->m, seq, 0, -1, NULL);
            return s;
        }
        *n_cached = kept;
        return LOOM_OK;
    }
    int c = 0, lim = n_mirror < n ? n_mirror : n;
    while (c < lim && mirror[c] == tokens[c]) c++;
    if (c >= n) c = n - 1;
    if (c < loom_model_n_past(l->m)) { /* the fallback cannot cut: start over */
        loom_model_reset(l->m);
        c = 0;
    }
    *n_cached = c;
    return LOOM_OK;
}

void srv_llm_seq_clear(srv_llm *l, int seq) {
    if (l->multi) loom_model_seq_remove(l->m, seq, 0, -1, NULL);
    else loom_model_reset(l->m);
}

loom_status srv_llm_context_shift(srv_llm *l, int seq, int n_keep, int *n_discarded, loom_error *err) {
    *n_discarded = 0;
    if (!l->multi) return loom_error_set(err, LOOM_ERR_UNSUPPORTED, "context shift needs the batch API");
    int32_t nd = 0;
    loom_status s = loom_model_seq_context_shift(l->m, seq, n_keep, &nd, err);
    if (!s) *n_discarded = nd;
    return s;
}

void srv_llm_cancel(srv_llm *l) { loom_model_cancel(l->m); }
