/*
 * kvcells.c - host metadata of a KV cache cell group (backend contract §7.5): each
 * cell holds a position (-1 = empty) and a set of sequence ids. Slot search, the
 * visible range and the mask of a batch, sequence edits, sliding-window eviction and
 * the compaction plan. Pure data: no backend (tests drive it directly).
 */
#include <math.h>
#include <string.h>

#include "model_internal.h"
#include "quant/alloc.h"

static int64_t rdown(int64_t x, int64_t m) { return m <= 1 ? x : x / m * m; }
static int64_t rup(int64_t x, int64_t m) { return m <= 1 ? x : (x + m - 1) / m * m; }

loom_status llm_kv_cells_init(llm_kv_cells *c, int64_t n, int n_seq, int64_t pad, int32_t window,
                              int32_t chunk, loom_error *err) {
    memset(c, 0, sizeof *c);
    if (n < 1 || n_seq < 1 || n_seq > LOOM_SEQ_MAX)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "KV cells: bad size (%lld cells, %d sequences)",
                              (long long)n, n_seq);
    c->n = n;
    c->pad = pad < 1 ? 1 : pad;
    c->n_seq = n_seq;
    c->nw = (n_seq + 63) / 64;
    c->window = window;
    c->chunk = chunk;
    c->pos = loom_malloc((size_t)n * sizeof *c->pos);
    c->tok = loom_malloc((size_t)n * sizeof *c->tok);
    c->seq = loom_malloc((size_t)n * (size_t)c->nw * sizeof *c->seq);
    if (!c->pos || !c->tok || !c->seq) {
        llm_kv_cells_free(c);
        return loom_error_set(err, LOOM_ERR_NOMEM, "KV cells: out of host memory (%lld cells)", (long long)n);
    }
    llm_kv_cells_clear(c);
    return LOOM_OK;
}

void llm_kv_cells_free(llm_kv_cells *c) {
    if (!c) return;
    loom_free(c->pos);
    loom_free(c->tok);
    loom_free(c->seq);
    memset(c, 0, sizeof *c);
}

void llm_kv_cells_clear(llm_kv_cells *c) {
    for (int64_t i = 0; i < c->n; i++) c->pos[i] = -1;
    memset(c->seq, 0, (size_t)c->n * (size_t)c->nw * sizeof *c->seq);
    c->used = 0;
}

bool llm_kv_cell_empty(const llm_kv_cells *c, int64_t i) { return c->pos[i] < 0; }

void llm_kv_cell_set(llm_kv_cells *c, int64_t i, int s) { c->seq[i * c->nw + (s >> 6)] |= (uint64_t)1 << (s & 63); }

/* Clear s in cell i; the cell empties when no sequence is left. */
void llm_kv_cell_unset(llm_kv_cells *c, int64_t i, int s) {
    c->seq[i * c->nw + (s >> 6)] &= ~((uint64_t)1 << (s & 63));
    for (int w = 0; w < c->nw; w++)
        if (c->seq[i * c->nw + w]) return;
    c->pos[i] = -1;
    c->used--;
}

int32_t llm_kv_cells_pos_max(const llm_kv_cells *c, int s) {
    int32_t r = -1;
    for (int64_t i = 0; i < c->n; i++)
        if (c->pos[i] > r && llm_kv_cell_has(c, i, s)) r = c->pos[i];
    return r;
}

int32_t llm_kv_cells_pos_min(const llm_kv_cells *c, int s) {
    int32_t r = -1;
    for (int64_t i = 0; i < c->n; i++)
        if (c->pos[i] >= 0 && (r < 0 || c->pos[i] < r) && llm_kv_cell_has(c, i, s)) r = c->pos[i];
    return r;
}

int64_t llm_kv_cells_count(const llm_kv_cells *c, int s) {
    int64_t r = 0;
    for (int64_t i = 0; i < c->n; i++)
        if (c->pos[i] >= 0 && llm_kv_cell_has(c, i, s)) r++;
    return r;
}

void llm_kv_cells_seq_stats(const llm_kv_cells *c, const uint64_t *want, int32_t *pos_max, int32_t *count) {
    for (int w = 0; w < c->nw; w++)
        for (uint64_t b = want[w]; b; b &= b - 1) {
            int s = w * 64 + __builtin_ctzll(b);
            pos_max[s] = -1;
            count[s] = 0;
        }
    for (int64_t i = 0; i < c->n; i++) {
        if (c->pos[i] < 0) continue;
        for (int w = 0; w < c->nw; w++)
            for (uint64_t b = c->seq[i * c->nw + w] & want[w]; b; b &= b - 1) {
                int s = w * 64 + __builtin_ctzll(b);
                count[s]++;
                if (c->pos[i] > pos_max[s]) pos_max[s] = c->pos[i];
            }
    }
}

int64_t llm_kv_cells_find(const llm_kv_cells *c, int64_t T) {
    int64_t run = 0;
    for (int64_t i = 0; i < c->n; i++) {
        run = c->pos[i] < 0 ? run + 1 : 0;
        if (run == T) return i + 1 - T;
    }
    return -1;
}

void llm_kv_cells_apply(llm_kv_cells *c, const loom_batch *b, int64_t loc) {
    for (int32_t r = 0; r < b->n_tokens; r++) {
        int64_t i = loc + r;
        c->pos[i] = b->pos[r];
        c->tok[i] = b->token[r];
        memset(c->seq + i * c->nw, 0, (size_t)c->nw * sizeof *c->seq);
        const int32_t *ids = b->seq_id + (size_t)r * (size_t)b->seq_capacity;
        for (int32_t k = 0; k < b->n_seq[r]; k++) llm_kv_cell_set(c, i, ids[k]);
        c->used++;
    }
}

void llm_kv_cells_unapply(llm_kv_cells *c, int64_t loc, int64_t T) {
    for (int64_t i = loc; i < loc + T; i++) {
        if (c->pos[i] >= 0) c->used--;
        c->pos[i] = -1;
        memset(c->seq + i * c->nw, 0, (size_t)c->nw * sizeof *c->seq);
    }
}

/* Union of the batch's sequence sets into want[nw]. */
static void batch_seqs(const llm_kv_cells *c, const loom_batch *b, uint64_t *want) {
    memset(want, 0, (size_t)c->nw * sizeof *want);
    for (int32_t r = 0; r < b->n_tokens; r++) {
        const int32_t *ids = b->seq_id + (size_t)r * (size_t)b->seq_capacity;
        for (int32_t k = 0; k < b->n_seq[r]; k++) want[ids[k] >> 6] |= (uint64_t)1 << (ids[k] & 63);
    }
}

void llm_kv_cells_range(const llm_kv_cells *c, const loom_batch *b, int64_t loc, int64_t *start, int64_t *L) {
    uint64_t want[LOOM_SEQ_MAX / 64];
    batch_seqs(c, b, want);
    int64_t lo = loc, hi = loc + b->n_tokens - 1;
    for (int64_t i = 0; i < lo; i++) {
        if (c->pos[i] < 0) continue;
        bool hit = false;
        for (int w = 0; w < c->nw && !hit; w++) hit = (c->seq[i * c->nw + w] & want[w]) != 0;
        if (hit) {
            lo = i;
            break;
        }
    }
    for (int64_t i = c->n - 1; i > hi; i--) {
        if (c->pos[i] < 0) continue;
        bool hit = false;
        for (int w = 0; w < c->nw && !hit; w++) hit = (c->seq[i * c->nw + w] & want[w]) != 0;
        if (hit) {
            hi = i;
            break;
        }
    }
    int64_t s0 = rdown(lo, c->pad), s1 = rup(hi + 1, c->pad);
    if (s1 > c->n) s1 = c->n;
    *start = s0;
    *L = s1 - s0;
}

void llm_kv_cells_mask(const llm_kv_cells *c, const loom_batch *b, int64_t start, int64_t L, int64_t tpad,
                       float *out) {
    for (int64_t r = 0; r < tpad; r++) {
        float *row = out + r * L;
        if (r >= b->n_tokens) {
            for (int64_t j = 0; j < L; j++) row[j] = -INFINITY;
            continue;
        }
        const int32_t p = b->pos[r];
        const int32_t *ids = b->seq_id + (size_t)r * (size_t)b->seq_capacity;
        const int32_t ns = b->n_seq[r];
        int32_t lo = 0; /* smallest visible position */
        if (c->window > 0 && p - c->window > lo) lo = p - c->window;
        if (c->chunk > 0 && p - p % c->chunk > lo) lo = p - p % c->chunk;
        for (int64_t j = 0; j < L; j++) {
            int64_t i = start + j;
            int32_t q = c->pos[i];
            bool vis = false;
            if (q >= 0 && q <= p && q >= lo) {
                if (ns == 1) vis = llm_kv_cell_has(c, i, ids[0]);
                else
                    for (int32_t k = 0; k < ns && !vis; k++) vis = llm_kv_cell_has(c, i, ids[k]);
            }
            row[j] = !vis ? -INFINITY : c->alibi ? -(float)(p - q) : 0.0f; /* q <= p */
        }
    }
}

static void norm_range(int32_t *p0, int32_t *p1) {
    if (*p0 < 0) *p0 = 0;
    if (*p1 < 0) *p1 = INT32_MAX;
}

void llm_kv_cells_seq_remove(llm_kv_cells *c, int s, int32_t p0, int32_t p1) {
    norm_range(&p0, &p1);
    for (int64_t i = 0; i < c->n; i++) {
        int32_t q = c->pos[i];
        if (q < p0 || q >= p1) continue;
        if (s < 0) {
            llm_kv_cells_unapply(c, i, 1);
        } else if (llm_kv_cell_has(c, i, s)) {
            llm_kv_cell_unset(c, i, s);
        }
    }
}

void llm_kv_cells_seq_copy(llm_kv_cells *c, int src, int dst, int32_t p0, int32_t p1) {
    if (src == dst) return;
    llm_kv_cells_seq_remove(c, dst, p0, p1);
    norm_range(&p0, &p1);
    for (int64_t i = 0; i < c->n; i++) {
        int32_t q = c->pos[i];
        if (q >= p0 && q < p1 && llm_kv_cell_has(c, i, src)) llm_kv_cell_set(c, i, dst);
    }
}

void llm_kv_cells_seq_keep(llm_kv_cells *c, int s) {
    for (int64_t i = 0; i < c->n; i++) {
        if (c->pos[i] < 0) continue;
        if (llm_kv_cell_has(c, i, s)) {
            memset(c->seq + i * c->nw, 0, (size_t)c->nw * sizeof *c->seq);
            llm_kv_cell_set(c, i, s);
        } else {
            llm_kv_cells_unapply(c, i, 1);
        }
    }
}

void llm_kv_cells_seq_evict(llm_kv_cells *c, int s) {
    if (c->window <= 0) return;
    int32_t pm = llm_kv_cells_pos_max(c, s);
    if (pm < 0) return;
    int64_t keep_from = (int64_t)pm + 1 - c->window;
    for (int64_t i = 0; i < c->n; i++)
        if (c->pos[i] >= 0 && c->pos[i] < keep_from && llm_kv_cell_has(c, i, s)) llm_kv_cell_unset(c, i, s);
}

void llm_kv_cells_compact_plan(const llm_kv_cells *c, int64_t *src, int64_t *dst, int64_t *n_moves) {
    /* the last used cell goes to the first hole, until the used cells are 0..used-1:
     * every destination is empty and no source is ever a destination, so the copies
     * of one plan are independent */
    int64_t n = 0, hole = 0, last = c->n - 1;
    for (;;) {
        while (hole < c->n && c->pos[hole] >= 0) hole++;
        while (last >= 0 && c->pos[last] < 0) last--;
        if (hole >= last) break;
        src[n] = last;
        dst[n] = hole;
        n++;
        hole++;
        last--;
    }
    *n_moves = n;
}

void llm_kv_cells_move(llm_kv_cells *c, const int64_t *src, const int64_t *dst, int64_t n_moves) {
    for (int64_t m = 0; m < n_moves; m++) {
        int64_t a = src[m], d = dst[m];
        c->pos[d] = c->pos[a];
        c->tok[d] = c->tok[a];
        memcpy(c->seq + d * c->nw, c->seq + a * c->nw, (size_t)c->nw * sizeof *c->seq);
        c->pos[a] = -1;
        memset(c->seq + a * c->nw, 0, (size_t)c->nw * sizeof *c->seq);
    }
}

int64_t llm_kv_cells_count_range(const llm_kv_cells *c, int s, int32_t p0, int32_t p1) {
    norm_range(&p0, &p1);
    int64_t r = 0;
    for (int64_t i = 0; i < c->n; i++)
        if (c->pos[i] >= p0 && c->pos[i] < p1 && llm_kv_cell_has(c, i, s)) r++;
    return r;
}
