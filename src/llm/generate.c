/*
 * generate.c - prompt evaluation (chunks of n_batch), one-token decode steps and
 * the worst-case reserve. Each batch is one backend context: build, compute, read
 * the logits of the requested rows, free.
 */
#include <stdlib.h>
#include <string.h>

#include "arch.h"
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
    const bool fa = loom_backend_flash_attn(m->be);
    uint64_t act = E * T * 4;
    uint64_t qkv = (H * DK + 2 * HKV * DK) * T * 4 * 2;
    uint64_t proj = qkv + H * DV * T * 4 * 2;
    /* without flash attention: scores + probabilities F32 [L, T, H] in the arena, and the
     * probabilities converted to the V type for the V product (work area). The planner
     * frees q/k/v and the projections before that peak, so a layer peaks at the larger
     * phase (measured against the reserved graph: within ~1 activation,
     * docs/reliability.md). */
    uint64_t conv = fa || kv->type == LOOM_TYPE_F32 ? 0 : L * T * H * 2; /* work area, below */
    uint64_t scores = fa ? 0 : 2 * L * T * H * 4;
    uint64_t attn = proj > scores ? proj : scores;
    bool any_attn = false; /* mamba, mamba2: no attention layer, no mask */
    for (int g = 0; g < kv->n_groups; g++) any_attn = any_attn || kv->grp[g].n_layers > 0;
    if (!any_attn) attn = conv = 0;
    uint64_t ffn = 3 * F * T * 4;
    if (m->hx.n_expert > 0) {
        /* MoE: router logits/probabilities, then per (token, slot) gate, up, product and
         * the down projection (the product still live), then the down projection and its
         * routing-weighted copy before the sum over slots. A down-projection bias: the
         * bias rows gathered per (slot, token) and the biased copy live with the down
         * projection (3 [E, K, T] at once). The clamped SwiGLU (swiglu_limit, gpt-oss):
         * clamped gate/up, sigmoid and products double the [FE, K, T] tensors. */
        bool down_bias = false;
        for (int il = 0; m->layers && il < hp->n_layer; il++)
            if (m->layers[il].ffn_down_exps_b) down_bias = true;
        const uint64_t K = (uint64_t)m->hx.n_expert_used, FE = (uint64_t)m->hx.n_ff_exp;
        const uint64_t fe_live = m->hx.swiglu_limit > 0.0f ? 6 : 3;
        const uint64_t up_down = fe_live * FE * K + E * K, weighted = (down_bias ? 3 : 2) * E * K;
        ffn = (2 * (uint64_t)m->hx.n_expert + (up_down > weighted ? up_down : weighted)) * T * 4;
    }
    /* a Mamba mixer: its input projection (at most 2 I + 2 G N + H wide), the
     * convolution's result with every slot's state, its activation, the scan's outputs
     * with the states and the gated output: ~ 6 I + 4 C per token plus the states */
    uint64_t ssm = 0;
    if (m->hx.ssm_inner > 0 && m->hx.ssm_n > 0) {
        const uint64_t I = (uint64_t)m->hx.ssm_inner, N = (uint64_t)m->hx.ssm_n, S = (uint64_t)kv->n_seq;
        const uint64_t C = I + 2 * (uint64_t)(m->hx.ssm_g > 0 ? m->hx.ssm_g : 1) * N;
        ssm = (6 * I + 4 * C) * T * 4 + (N * I + (uint64_t)m->hx.ssm_conv_k * C) * S * 4;
    }
    if (m->hx.rwkv_head > 0) {
        /* an RWKV-7 time mix: the shifted input, six lerps, r/w/k/v/a/g and their LoRA
         * steps, kk, the wkv7 result with every slot's state, the group norm's steps.
         * The planner keeps ~12 n_embd floats per token live at the peak (the reserved
         * graph of indep-rwkv7, 128 wide at 512 tokens: 3 MiB): 10 here + the 4 above */
        const uint64_t S = (uint64_t)kv->n_seq;
        const uint64_t rw = 10 * E * T * 4 + (E * (uint64_t)m->hx.rwkv_head + 2 * E) * S * 4;
        if (rw > ssm) ssm = rw;
    }
    if (ssm > ffn) ffn = ssm;
    if (m->hx.dsa_heads > 0) {
        /* DSA's indexer (arch_dsa.c): per chunk of tc queries the per-head products
         * [L, heads, tc], two live at a time (product and relu, relu and weighted, ...), and
         * the scores [L, T] with the selected mask beside them */
        const uint64_t HI = (uint64_t)m->hx.dsa_heads;
        const uint64_t tc = (uint64_t)llm_dsa_chunk((int64_t)L, (int64_t)HI, (int64_t)T);
        /* (+ the indexer keys as F32 rows [DI, L] when the cache is not F32) */
        const uint64_t kf = kv->type != LOOM_TYPE_F32 ? L * (uint64_t)m->hx.dsa_dim : 0;
        const uint64_t dsa = (2 * L * HI * tc + 3 * L * T + kf) * 4;
        if (dsa > attn) attn = dsa;
    }
    uint64_t layer = 4 * act + (attn > ffn ? attn : ffn);
    uint64_t out = 5 * act + V * n_out * 4; /* after the last layer: not concurrent with it */
    /* CPU inputs: tokens/positions/ids, the embeddings, and the KQ mask twice (the
     * model's F32 host staging buffer and the graph's input tensor, F16 with flash
     * attention). Inputs are not graph memory in the real report, but they are memory:
     * counting them here keeps the plan within ~1% of the measured peak RSS growth
     * (tests/test_llm_memplan.c). */
    uint64_t tpad = (T + (uint64_t)kv->cfg.mask_batch_padding - 1) / (uint64_t)kv->cfg.mask_batch_padding *
                    (uint64_t)kv->cfg.mask_batch_padding;
    uint64_t mask = 0;
    for (int g = 0; g < kv->n_groups; g++)
        if (kv->grp[g].n_layers > 0) mask += (uint64_t)kv->grp[g].cells.n * tpad;
    uint64_t input = 3 * T * 4 + act + mask * 4 + mask * (fa ? 2 : 4);
    int n_dev = loom_backend_device_count(m->be);
    for (int d = 0; d < n_dev; d++) {
        /* the device's work area sits after the arena, sized by its largest user: the
         * probabilities converted for p.V, or a product's activations converted to the
         * weights' dot type (and k-major float panels for F16/BF16 prompts), or an expert
         * product's (token, slot) pairs and their converted activations */
        uint64_t peak = 0, work = 0;
        for (int il = 0; il < hp->n_layer; il++) {
            if (loom_backend_layer_device(m->be, llm_dev_layer(m->be, il)) != d) continue;
            if (layer > peak) peak = layer;
            if (conv > work) work = conv;
            if (!m->layers) continue;
            const llm_layer *ly = &m->layers[il];
            const loom_tensor *ws[] = {ly->wq, ly->wk, ly->wv, ly->wo, ly->wqkv, ly->ffn_gate, ly->ffn_up, ly->ffn_down};
            for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
                const uint64_t w = loom_backend_mul_mat_work(m->be, d, ws[i], (int64_t)T);
                if (w > work) work = w;
            }
            const loom_tensor *xs[] = {ly->ffn_gate_exps, ly->ffn_up_exps, ly->ffn_down_exps, ly->ffn_gate_up_exps};
            for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
                const uint64_t w = loom_backend_mul_mat_id_work(m->be, d, xs[i], m->hx.n_expert_used, (int64_t)T);
                if (w > work) work = w;
            }
        }
        if (loom_backend_layer_device(m->be, loom_backend_block_count(m->be)) == d) { /* the output layer */
            if (out > peak) peak = out;
            const uint64_t w = loom_backend_mul_mat_work(m->be, d, m->output ? m->output : m->tok_embd, (int64_t)n_out);
            if (w > work) work = w;
        }
        if (peak) peak += work;
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
    b.n_outputs = m->n_batch;
    b.reserve = true;
    llm_kv_prepare_reserve(&m->kv, m->n_batch);
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
    m->dec.T = 0;
}

/* The cells group holding every token of a sequence (a full-history group if any). */
static const llm_kv_cells *main_cells(const llm_kv_cache *kv) {
    for (int g = 0; g < kv->n_groups; g++)
        if (kv->grp[g].cells.window == 0) return &kv->grp[g].cells;
    return &kv->grp[0].cells;
}

loom_status llm_check_batch(const loom_model *m, const loom_batch *b, const char *who, loom_error *err) {
    if (!m || !b) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "%s: NULL model or batch", who);
    if (m->dry_run) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "%s: model was opened as a dry run", who);
    if (b->n_tokens <= 0 || b->n_tokens > m->n_batch)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "%s: %d tokens (a batch holds 1..n_batch = %d)", who,
                              (int)b->n_tokens, m->n_batch);
    if (b->n_tokens > b->capacity || !b->token || !b->pos || !b->n_seq || !b->seq_id || !b->logits ||
        b->seq_capacity < 1)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "%s: batch arrays missing or n_tokens > capacity", who);
    const llm_kv_cells *c = main_cells(&m->kv);
    int32_t last[LOOM_SEQ_MAX];
    int32_t cnt[LOOM_SEQ_MAX];
    uint64_t want[LOOM_SEQ_MAX / 64] = {0};
    /* ids first (ranges), then one pass over the cells for every sequence of the batch */
    for (int32_t r = 0; r < b->n_tokens; r++) {
        int32_t ns = b->n_seq[r];
        if (ns < 1 || ns > b->seq_capacity)
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "%s: row %d is in %d sequences (1..%d)", who, (int)r,
                                  (int)ns, (int)b->seq_capacity);
        if (ns > 1 && m->kv.n_recurrent > 0)
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                                  "%s: row %d is in %d sequences; a model with recurrent layers takes each token in "
                                  "one (its state is per sequence)", who, (int)r, (int)ns);
        const int32_t *ids = b->seq_id + (size_t)r * (size_t)b->seq_capacity;
        for (int32_t k = 0; k < ns; k++) {
            if (ids[k] < 0 || ids[k] >= m->n_seq_max)
                return loom_error_set(err, LOOM_ERR_RANGE, "%s: row %d: sequence id %d is outside [0, n_seq_max = %d)",
                                      who, (int)r, (int)ids[k], m->n_seq_max);
            want[ids[k] >> 6] |= (uint64_t)1 << (ids[k] & 63);
        }
    }
    llm_kv_cells_seq_stats(c, want, last, cnt);
    for (int32_t r = 0; r < b->n_tokens; r++) {
        if (b->token[r] < 0 || b->token[r] >= m->hp.n_vocab)
            return loom_error_set(err, LOOM_ERR_RANGE, "%s: row %d has token id %d, outside the vocabulary [0, %d)",
                                  who, (int)r, (int)b->token[r], m->hp.n_vocab);
        if (b->pos[r] < 0 || b->pos[r] > LOOM_POS_MAX)
            return loom_error_set(err, LOOM_ERR_RANGE, "%s: row %d has position %d, outside [0, %d]", who, (int)r,
                                  (int)b->pos[r], LOOM_POS_MAX);
        if (m->hx.max_pos > 0 && b->pos[r] >= m->hx.max_pos)
            return loom_error_set(err, LOOM_ERR_RANGE, "%s: row %d has position %d, past the model's %d learned "
                                  "positions", who, (int)r, (int)b->pos[r], m->hx.max_pos);
        int32_t ns = b->n_seq[r];
        if (ns < 1 || ns > b->seq_capacity)
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "%s: row %d is in %d sequences (1..%d)", who, (int)r,
                                  (int)ns, (int)b->seq_capacity);
        const int32_t *ids = b->seq_id + (size_t)r * (size_t)b->seq_capacity;
        for (int32_t k = 0; k < ns; k++) {
            int32_t s = ids[k];
            if (s < 0 || s >= m->n_seq_max)
                return loom_error_set(err, LOOM_ERR_RANGE, "%s: row %d: sequence id %d is outside [0, n_seq_max = %d)",
                                      who, (int)r, (int)s, m->n_seq_max);
            for (int32_t j = 0; j < k; j++)
                if (ids[j] == s)
                    return loom_error_set(err, LOOM_ERR_INVALID_ARG, "%s: row %d lists sequence %d twice", who,
                                          (int)r, (int)s);
            if (b->pos[r] <= last[s])
                return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                                      "%s: row %d: position %d of sequence %d does not come after its previous "
                                      "position %d",
                                      who, (int)r, (int)b->pos[r], (int)s, (int)last[s]);
            last[s] = b->pos[r];
            if (++cnt[s] > m->n_ctx)
                return loom_error_set(err, LOOM_ERR_CONTEXT_FULL,
                                      "%s: row %d: sequence %d would hold more than n_ctx = %d tokens", who, (int)r,
                                      (int)s, m->n_ctx);
        }
    }
    return LOOM_OK;
}

/* Point the kept decode graph at a new batch of the same shape: tokens, positions,
 * output rows, masks and the cells its K/V copies write. */
static loom_status dec_retarget(loom_model *m, const loom_batch *rows, int n_out, loom_error *err) {
    const llm_graph_io *io = &m->dec.io;
    const int T = rows->n_tokens;
    loom_status s = loom_tensor_write(io->tok, rows->token, (size_t)T * sizeof *rows->token);
    if (!s) s = loom_tensor_write(io->pos, rows->pos, (size_t)T * sizeof *rows->pos);
    if (!s) s = loom_tensor_write(io->outs, m->out_ids, (size_t)n_out * sizeof *m->out_ids);
    for (int g = 0; g < m->kv.n_groups && !s; g++)
        if (io->mask[g]) /* none for a group of positions only */
            s = loom_tensor_write(io->mask[g], m->kv.grp[g].mask, llm_kv_mask_floats(&m->kv, g, T) * sizeof(float));
    if (!s && io->seq) {
        llm_seq_fill(m, rows, m->seq_host);
        s = loom_tensor_write(io->seq, m->seq_host, (size_t)T * sizeof(int32_t));
    }
    if (!s && io->attn_temp) {
        llm_attn_temp_fill(m, rows->pos, T, m->attn_temp);
        s = loom_tensor_write(io->attn_temp, m->attn_temp, (size_t)T * sizeof(float));
    }
    for (int il = 0; il < m->hp.n_layer && !s; il++) {
        loom_tensor *const *st = io->store + 4 * il;
        if (!st[0]) continue; /* a layer sharing another's cache, or a recurrent one, stores nothing */
        size_t k_off, v_off;
        llm_kv_store_offsets(&m->kv, il, m->kv.grp[m->kv.layer_group[il]].cells.loc, &k_off, &v_off);
        s = loom_view_set_offset(st[0], k_off);
        if (!s) s = loom_view_set_offset(st[1], k_off);
        if (!s) s = loom_view_set_offset(st[2], v_off);
        if (!s) s = loom_view_set_offset(st[3], v_off);
    }
    if (s) loom_error_set(err, s, "decode: updating the kept decode graph failed (%s)", loom_status_name(s));
    return s;
}

#define LLM_KEEP_MAX_T 64 /* batches up to this size keep their graph (decode steps) */

loom_status llm_decode_rows(loom_model *m, const loom_batch *rows, int logit_row, loom_error *err) {
    const int T = rows->n_tokens;
    int n_out = 0;
    for (int i = 0; i < T; i++)
        if (rows->logits[i]) m->out_ids[n_out++] = i;
    llm_batch b = {0};
    b.n_tokens = T;
    b.rows = rows;
    b.n_outputs = n_out;
    b.out_ids = m->out_ids;

    uint64_t epoch = m->kv.epoch;
    loom_status s = llm_kv_prepare(&m->kv, m->be, rows, err);
    if (s) return s;
    if (m->kv.epoch != epoch) llm_decode_drop(m); /* cells were moved by another graph */

    /* Small batches (decode steps) keep their graph (and the backend its plan) while
     * the shape stays the same: the next step only rewrites the inputs and retargets
     * the K/V copies. */
    const bool keep = T <= LLM_KEEP_MAX_T && n_out > 0 && !m->eval_cb && m->dec.io.store;
    bool same = keep && m->dec.ctx && m->dec.T == T && m->dec.n_out == n_out;
    for (int g = 0; g < m->kv.n_groups && same; g++)
        same = m->dec.start[g] == m->kv.grp[g].cells.start && m->dec.L[g] == m->kv.grp[g].cells.L;
    loom_ctx *ctx;
    loom_tensor *logits;
    if (same) {
        loom_backend_warm(m->be); /* the context is not new: wake the workers here */
        ctx = m->dec.ctx;
        logits = m->dec.logits;
        s = dec_retarget(m, rows, n_out, err);
        if (s) {
            llm_decode_drop(m);
            llm_kv_unprepare(&m->kv, rows);
            return s;
        }
    } else {
        llm_decode_drop(m);
        if (keep) b.io = &m->dec.io;
        s = build(m, &b, &ctx, &logits, err);
        if (s) {
            llm_kv_unprepare(&m->kv, rows);
            return s;
        }
    }
    if (m->eval_cb) loom_ctx_set_eval_callback(ctx, m->eval_cb, m->eval_user);
    loom_ctx_set_abort_callback(ctx, abort_cb, m);
    s = n_out > 0 ? loom_ctx_compute(ctx, 1, &logits) : loom_ctx_compute(ctx, 0, NULL);
    if (s) {
        loom_error_set(err, s, "decode of %d tokens (first at position %d): %s", T, (int)rows->pos[0],
                       *loom_ctx_error(ctx) ? loom_ctx_error(ctx) : loom_status_name(s));
    } else if (n_out > 0) {
        size_t n = (size_t)n_out * (size_t)m->hp.n_vocab;
        s = loom_tensor_read_f32(logits, m->logits + (size_t)logit_row * (size_t)m->hp.n_vocab, n);
        if (s) loom_error_set(err, s, "decode: reading the logits failed");
    }
    if (keep && !s && (b.io || m->dec.ctx == ctx)) {
        m->dec.ctx = ctx;
        m->dec.logits = logits;
        m->dec.T = T;
        m->dec.n_out = n_out;
        for (int g = 0; g < m->kv.n_groups; g++) {
            m->dec.start[g] = m->kv.grp[g].cells.start;
            m->dec.L[g] = m->kv.grp[g].cells.L;
        }
    } else if (ctx == m->dec.ctx) {
        llm_decode_drop(m); /* a failed (or cancelled) step: build afresh next time */
    } else {
        loom_ctx_free(ctx);
    }
    if (s) llm_kv_unprepare(&m->kv, rows);
    else llm_kv_commit(&m->kv, rows);
    return s;
}

static loom_status grow_logits(loom_model *m, size_t rows, const char *who, loom_error *err) {
    size_t need = rows * (size_t)m->hp.n_vocab;
    if (need > m->logits_cap) {
        float *nl = loom_realloc(m->logits, need * sizeof *nl);
        if (!nl) return loom_error_set(err, LOOM_ERR_NOMEM, "%s: out of host memory for logits", who);
        m->logits = nl;
        m->logits_cap = need;
    }
    return LOOM_OK;
}

loom_status loom_model_decode(loom_model *m, const loom_batch *b, loom_error *err) {
    loom_status s = llm_check_batch(m, b, "loom_model_decode", err);
    if (s) return s;
    int n_out = 0;
    for (int32_t i = 0; i < b->n_tokens; i++) n_out += b->logits[i] ? 1 : 0;
    if ((s = grow_logits(m, (size_t)(n_out ? n_out : 1), "loom_model_decode", err))) return s;
    m->n_logits = 0;
    m->n_rows = 0;
    if (atomic_exchange(&m->cancel, false))
        return loom_error_set(err, LOOM_ERR_CANCELLED, "decode cancelled before it started (loom_model_cancel)");
    s = llm_decode_rows(m, b, 0, err);
    if (s == LOOM_ERR_CANCELLED) atomic_store(&m->cancel, false); /* observed: consumed */
    if (s) return s;
    int k = 0;
    for (int32_t i = 0; i < b->n_tokens; i++) m->row_out[i] = b->logits[i] ? k++ : -1;
    m->n_rows = b->n_tokens;
    m->n_logits = n_out;
    return LOOM_OK;
}

const float *loom_model_batch_logits(const loom_model *m, int32_t i) {
    if (!m || m->n_rows <= 0) return NULL;
    if (i == -1) return m->n_logits > 0 ? loom_model_logits(m, -1) : NULL;
    if (i < 0 || i >= m->n_rows || m->row_out[i] < 0) return NULL;
    return loom_model_logits(m, m->row_out[i]);
}

int32_t loom_model_batch_argmax(const loom_model *m, int32_t i) {
    const float *l = loom_model_batch_logits(m, i);
    return l ? llm_argmax_f32(l, m->hp.n_vocab) : -1;
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
    int32_t have = (int32_t)llm_kv_cells_count(main_cells(&m->kv), 0);
    if ((int64_t)have + n > m->n_ctx && m->ctx_shift && n < m->n_ctx) {
        /* make room: context shifts until the tokens fit */
        while ((int64_t)have + n > m->n_ctx) {
            int32_t nd = 0;
            loom_status s = loom_model_seq_context_shift(m, 0, m->n_keep, &nd, err);
            if (s) return s;
            have = (int32_t)llm_kv_cells_count(main_cells(&m->kv), 0);
            if (nd <= 0) break;
        }
    }
    if ((int64_t)have + n > m->n_ctx)
        return loom_error_set(err, LOOM_ERR_CONTEXT_FULL,
                              "context full: %d tokens in the cache + %d new > n_ctx %d", have, n, m->n_ctx);
    int32_t n_past = loom_model_n_past(m);
    if ((int64_t)n_past + n - 1 > LOOM_POS_MAX)
        return loom_error_set(err, LOOM_ERR_RANGE, "loom_model_eval: positions would pass %d", LOOM_POS_MAX);
    size_t rows = all_logits ? (size_t)n : 1;
    loom_status s = grow_logits(m, rows, "loom_model_eval", err);
    if (s) return s;
    m->n_logits = 0;
    m->n_rows = 0;
    /* A cancel stays pending until an eval observes it (loom_model.h): one issued
     * before this call (or between two calls) stops this eval; it is consumed here. */
    if (atomic_exchange(&m->cancel, false))
        return loom_error_set(err, LOOM_ERR_CANCELLED, "eval cancelled before it started (loom_model_cancel)");
    loom_batch *eb = &m->eb;
    for (int off = 0; off < n; off += m->n_batch) {
        int T = n - off < m->n_batch ? n - off : m->n_batch;
        eb->n_tokens = T;
        for (int i = 0; i < T; i++) {
            eb->token[i] = tokens[off + i];
            eb->pos[i] = n_past + off + i;
            eb->n_seq[i] = 1;
            eb->seq_id[i] = 0;
            eb->logits[i] = all_logits || off + i == n - 1;
        }
        s = llm_decode_rows(m, eb, all_logits ? off : 0, err);
        if (s == LOOM_ERR_CANCELLED) atomic_store(&m->cancel, false); /* observed: consumed */
        if (s) return s;
    }
    m->n_logits = (int)rows;
    return LOOM_OK;
}

int32_t loom_model_n_past(const loom_model *m) {
    if (!m || m->dry_run || m->kv.n_groups == 0) return 0;
    return llm_kv_cells_pos_max(main_cells(&m->kv), 0) + 1;
}
