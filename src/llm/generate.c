/*
 * generate.c - prompt evaluation (chunks of n_batch), one-token decode steps and
 * the worst-case reserve. Each batch is one backend context: build, compute, read
 * the logits of the requested rows, free.
 */
#include <stdlib.h>
#include <string.h>

#include "model_internal.h"
#include "quant/alloc.h"

static bool abort_cb(void *user) {
    loom_model *m = user;
    return atomic_load(&m->cancel);
}

static loom_status build(loom_model *m, const llm_batch *b, loom_ctx **ctx_out, loom_tensor **logits,
                         loom_error *err) {
    loom_ctx *ctx;
    loom_status s = loom_backend_ctx_new(m->be, 0, &ctx, err);
    if (s) return s;
    loom_tensor *out = m->arch->build(m, ctx, b);
    loom_ctx_forward(ctx, out);
    s = loom_ctx_status(ctx);
    if (s) {
        loom_error_set(err, s, "model graph: %s", loom_ctx_error(ctx));
        loom_ctx_free(ctx);
        return s;
    }
    *ctx_out = ctx;
    *logits = out;
    return LOOM_OK;
}

/* Dry run (no contexts on a dry-run backend): an estimate of the worst-case graph's
 * peak intermediates per device, recorded through loom_backend_account_graph. Per
 * layer: residual + normed activations, plus the largest phase: q/k/v + projections,
 * scores and probabilities [L, T, H] without flash attention, or the FFN (gate, up,
 * product); the output phase (final norm, logits) counts if it is larger; the CPU adds
 * the embeddings and the inputs (mask included, see below). */
static void account_graph_estimate(loom_model *m) {
    const loom_model_hparams *hp = &m->hp;
    const llm_kv_cache *kv = &m->kv;
    const uint64_t T = (uint64_t)m->n_batch, L = (uint64_t)kv->cells, n_out = T;
    const uint64_t E = (uint64_t)hp->n_embd, F = (uint64_t)hp->n_ff, V = (uint64_t)hp->n_vocab;
    const uint64_t H = (uint64_t)hp->n_head, HKV = (uint64_t)hp->n_head_kv;
    const uint64_t DK = (uint64_t)hp->head_dim_k, DV = (uint64_t)hp->head_dim_v;
    bool fa = loom_backend_flash_attn(m->be);
    uint64_t act = E * T * 4;
    uint64_t qkv = (H * DK + 2 * HKV * DK) * T * 4 * 2;
    uint64_t proj = qkv + H * DV * T * 4 * 2;
    /* without flash attention: scores + probabilities F32 [L, T, H], and the probabilities
     * converted to the V type for the V product (work area). The planner frees q/k/v and
     * the projections before that peak, so a layer peaks at the larger phase (measured
     * against the reserved graph: within ~1 activation, docs/reliability.md). */
    uint64_t conv = kv->type == LOOM_TYPE_F32 ? 0 : L * T * H * 2;
    uint64_t scores = fa ? 0 : 2 * L * T * H * 4 + conv;
    uint64_t attn = proj > scores ? proj : scores;
    uint64_t ffn = 3 * F * T * 4;
    if (m->hx.n_expert > 0) {
        /* MoE: router logits/probabilities, then per (token, slot) gate, up, product and
         * the down projection before the weighted sum */
        const uint64_t K = (uint64_t)m->hx.n_expert_used, FE = (uint64_t)m->hx.n_ff_exp;
        ffn = (2 * (uint64_t)m->hx.n_expert + 3 * FE * K + E * K) * T * 4;
    }
    uint64_t layer = 4 * act + (attn > ffn ? attn : ffn);
    uint64_t out = 5 * act + V * n_out * 4; /* after the last layer: not concurrent with it */
    /* CPU inputs: tokens/positions/ids, the embeddings, and the KQ mask twice (the
     * model's F32 host staging buffer and the graph's input tensor, F16 with flash
     * attention). Inputs are not graph memory in the real report, but they are memory:
     * counting them here keeps the plan within ~1% of the measured peak RSS growth
     * (tests/test_llm_memplan.c). */
    uint64_t mask = (uint64_t)llm_kv_mask_floats(kv, (int64_t)L, (int)T);
    uint64_t input = 3 * T * 4 + act + mask * 4 + mask * (fa ? 2 : 4);
    int n_dev = loom_backend_device_count(m->be);
    for (int d = 0; d < n_dev; d++) {
        uint64_t peak = 0;
        for (int il = 0; il < hp->n_layer; il++)
            if (loom_backend_layer_device(m->be, il) == d && layer > peak) peak = layer;
        if (loom_backend_layer_device(m->be, hp->n_layer) == d && out > peak) peak = out;
        if (d == 0) peak += input;
        if (peak) loom_backend_account_graph(m->be, d, peak);
    }
}

loom_status llm_reserve(loom_model *m, loom_error *err) {
    if (loom_backend_is_dry_run(m->be)) {
        account_graph_estimate(m);
        return LOOM_OK;
    }
    llm_batch b = {0};
    b.n_tokens = m->n_batch;
    b.n_past = (int)(m->kv.cells - m->n_batch);
    b.n_outputs = m->n_batch;
    b.reserve = true;
    loom_ctx *ctx;
    loom_tensor *logits;
    loom_status s = build(m, &b, &ctx, &logits, err);
    if (s) return s;
    s = loom_ctx_reserve(ctx);
    if (s) loom_error_set(err, s, "reserving the worst-case graph (%d tokens, %lld cells): %s",
                          m->n_batch, (long long)m->kv.cells, loom_ctx_error(ctx));
    loom_ctx_free(ctx);
    return s;
}

void llm_decode_drop(loom_model *m) {
    if (m->dec.ctx) loom_ctx_free(m->dec.ctx);
    m->dec.ctx = NULL;
    m->dec.logits = NULL;
    m->dec.L = 0;
}

/* Point the kept decode graph at a new step: token, position, mask and the cache cell
 * its K/V copies write (n_past). Same L, T = 1, one output, so nothing else differs
 * from a graph built for this step. */
static loom_status dec_retarget(loom_model *m, const int32_t *tokens, loom_error *err) {
    const llm_graph_io *io = &m->dec.io;
    const int32_t pos = m->n_past, out = 0;
    const int64_t L = m->dec.L;
    llm_kv_mask_fill(&m->kv, L, m->n_past, 1, m->mask);
    loom_status s = loom_tensor_write(io->tok, tokens, sizeof *tokens);
    if (!s) s = loom_tensor_write(io->pos, &pos, sizeof pos);
    if (!s) s = loom_tensor_write(io->outs, &out, sizeof out);
    if (!s) s = loom_tensor_write(io->mask, m->mask, llm_kv_mask_floats(&m->kv, L, 1) * sizeof(float));
    if (!s && io->mask_swa) {
        llm_swa_mask_fill(m, L, m->n_past, 1, m->mask_swa);
        s = loom_tensor_write(io->mask_swa, m->mask_swa, llm_kv_mask_floats(&m->kv, L, 1) * sizeof(float));
    }
    if (!s && io->attn_temp) {
        llm_attn_temp_fill(m, m->n_past, 1, m->attn_temp);
        s = loom_tensor_write(io->attn_temp, m->attn_temp, sizeof(float));
    }
    for (int il = 0; il < m->hp.n_layer && !s; il++) {
        size_t k_off, v_off;
        llm_kv_store_offsets(&m->kv, il, m->n_past, &k_off, &v_off);
        loom_tensor *const *st = io->store + 4 * il;
        s = loom_view_set_offset(st[0], k_off);
        if (!s) s = loom_view_set_offset(st[1], k_off);
        if (!s) s = loom_view_set_offset(st[2], v_off);
        if (!s) s = loom_view_set_offset(st[3], v_off);
    }
    if (s) loom_error_set(err, s, "eval: updating the kept decode graph failed (%s)", loom_status_name(s));
    return s;
}

loom_status llm_decode_batch(loom_model *m, const int32_t *tokens, int T, bool all_logits,
                             int logit_row, loom_error *err) {
    llm_batch b = {0};
    b.n_tokens = T;
    b.n_past = m->n_past;
    b.tokens = tokens;
    b.n_outputs = all_logits ? T : 1;
    for (int i = 0; i < b.n_outputs; i++) m->out_ids[i] = all_logits ? i : T - 1;
    b.out_ids = m->out_ids;

    const int64_t L = llm_kv_n_visible(&m->kv, (int64_t)m->n_past + T);
    size_t need = llm_kv_mask_floats(&m->kv, L, T);
    if (need > m->mask_cap) {
        float *nm = loom_realloc(m->mask, need * sizeof *nm);
        if (!nm) return loom_error_set(err, LOOM_ERR_NOMEM, "eval: out of host memory for the mask");
        m->mask = nm;
        float *ns = loom_realloc(m->mask_swa, need * sizeof *ns);
        if (!ns) return loom_error_set(err, LOOM_ERR_NOMEM, "eval: out of host memory for the mask");
        m->mask_swa = ns;
        m->mask_cap = need;
    }

    /* Single-token steps keep their graph (and the backend its plan) while L stays the
     * same: the next step only rewrites the inputs and retargets the K/V copies. */
    const bool keep = T == 1 && b.n_outputs == 1 && !m->eval_cb && m->dec.io.store;
    loom_ctx *ctx;
    loom_tensor *logits;
    loom_status s;
    if (keep && m->dec.ctx && m->dec.L == L) {
        loom_backend_warm(m->be); /* the context is not new: wake the workers here */
        ctx = m->dec.ctx;
        logits = m->dec.logits;
        s = dec_retarget(m, tokens, err);
        if (s) {
            llm_decode_drop(m);
            return s;
        }
    } else {
        llm_decode_drop(m);
        if (keep) b.io = &m->dec.io;
        s = build(m, &b, &ctx, &logits, err);
        if (s) return s;
    }
    if (m->eval_cb) loom_ctx_set_eval_callback(ctx, m->eval_cb, m->eval_user);
    loom_ctx_set_abort_callback(ctx, abort_cb, m);
    s = loom_ctx_compute(ctx, 1, &logits);
    if (s) {
        loom_error_set(err, s, "eval at position %d (%d tokens): %s", m->n_past, T,
                       *loom_ctx_error(ctx) ? loom_ctx_error(ctx) : loom_status_name(s));
    } else {
        size_t n = (size_t)b.n_outputs * (size_t)m->hp.n_vocab;
        s = loom_tensor_read_f32(logits, m->logits + (size_t)logit_row * (size_t)m->hp.n_vocab, n);
        if (s) loom_error_set(err, s, "eval: reading the logits failed");
    }
    if (keep && !s && (b.io || m->dec.ctx == ctx)) {
        m->dec.ctx = ctx;
        m->dec.logits = logits;
        m->dec.L = L;
    } else if (ctx == m->dec.ctx) {
        llm_decode_drop(m); /* a failed (or cancelled) step: build afresh next time */
    } else {
        loom_ctx_free(ctx);
    }
    if (!s) m->n_past += T;
    return s;
}

loom_status loom_model_eval(loom_model *m, const int32_t *tokens, int32_t n, bool all_logits,
                            loom_error *err) {
    if (!m) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_model_eval: model is NULL");
    if (m->dry_run)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_model_eval: model was opened as a dry run");
    if (!tokens || n <= 0)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_model_eval: no tokens (n = %d)", n);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= m->hp.n_vocab)
            return loom_error_set(err, LOOM_ERR_RANGE,
                                  "loom_model_eval: token %d has id %d, outside the vocabulary [0, %d)",
                                  i, (int)tokens[i], m->hp.n_vocab);
    if ((int64_t)m->n_past + n > m->n_ctx)
        return loom_error_set(err, LOOM_ERR_CONTEXT_FULL,
                              "context full: %d tokens in the cache + %d new > n_ctx %d", m->n_past, n,
                              m->n_ctx);
    size_t rows = all_logits ? (size_t)n : 1;
    size_t need = rows * (size_t)m->hp.n_vocab;
    if (need > m->logits_cap) {
        float *nl = loom_realloc(m->logits, need * sizeof *nl);
        if (!nl) return loom_error_set(err, LOOM_ERR_NOMEM, "loom_model_eval: out of host memory for logits");
        m->logits = nl;
        m->logits_cap = need;
    }
    m->n_logits = 0;
    /* A cancel stays pending until an eval observes it (loom_model.h): one issued
     * before this call (or between two calls) stops this eval; it is consumed here. */
    if (atomic_exchange(&m->cancel, false))
        return loom_error_set(err, LOOM_ERR_CANCELLED, "eval cancelled before it started (loom_model_cancel)");
    for (int off = 0; off < n; off += m->n_batch) {
        int T = n - off < m->n_batch ? n - off : m->n_batch;
        loom_status s = llm_decode_batch(m, tokens + off, T, all_logits, all_logits ? off : 0, err);
        if (s == LOOM_ERR_CANCELLED) atomic_store(&m->cancel, false); /* observed: consumed */
        if (s) return s;
    }
    m->n_logits = (int)rows;
    return LOOM_OK;
}
