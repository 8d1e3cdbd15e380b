/*
 * seq.c - per-sequence cache operations (public loom_model_seq_* API): remove, copy,
 * keep, shift (RoPE re-rotation of cached keys, contract §7.6), context shift and
 * prefix reuse. Metadata edits apply to every cell group (kvcells.c); shifts run a
 * graph per group over the cached K.
 */
#include <math.h>
#include <string.h>

#include "llm_graph.h"
#include "quant/alloc.h"

static loom_status check_seq(const loom_model *m, int32_t seq, bool allow_all, const char *who, loom_error *err) {
    if (!m) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "%s: model is NULL", who);
    if (m->dry_run) return loom_error_set(err, LOOM_ERR_INVALID_ARG, "%s: model was opened as a dry run", who);
    if ((allow_all && seq == -1) || (seq >= 0 && seq < m->n_seq_max)) return LOOM_OK;
    return loom_error_set(err, LOOM_ERR_RANGE, "%s: sequence id %d is outside [0, n_seq_max = %d)", who, (int)seq,
                          m->n_seq_max);
}

static const llm_kv_cells *main_cells(const llm_kv_cache *kv) {
    for (int g = 0; g < kv->n_groups; g++)
        if (kv->grp[g].cells.window == 0) return &kv->grp[g].cells;
    return &kv->grp[0].cells;
}

/* ------------------------------------------------------------------ recurrent states */

/* Slot dst (-1: every slot) of every recurrent layer's states := slot src's (src < 0:
 * zeros). One graph of copies. */
loom_status llm_rs_copy(loom_model *m, int32_t src, int32_t dst, loom_error *err) {
    llm_kv_cache *kv = &m->kv;
    if (kv->n_recurrent == 0 || !kv->ctx) return LOOM_OK;
    loom_ctx *ctx;
    loom_status s = loom_backend_ctx_new(m->be, 0, &ctx, err);
    if (s) return s;
    for (int il = 0; il < kv->n_layer; il++) {
        loom_tensor *X[2] = {kv->rs_conv[il], kv->rs_ssm[il]};
        for (int i = 0; i < 2; i++) {
            if (!X[i]) continue;
            const int64_t per = loom_tensor_ne(X[i], 0), n = dst < 0 ? per * loom_tensor_ne(X[i], 1) : per;
            const size_t row = loom_tensor_nb(X[i], 1);
            loom_tensor *to = loom_view(ctx, X[i], dst < 0 ? 0 : row * (size_t)dst, 1, &n);
            loom_tensor *from = src >= 0 ? loom_view(ctx, X[i], row * (size_t)src, 1, &n)
                                         : loom_zeros(loom_ctx_input(ctx), LOOM_TYPE_F32, 1, &n);
            loom_ctx_forward(ctx, loom_cpy(ctx, from, to));
        }
    }
    s = loom_ctx_status(ctx);
    if (!s) s = loom_ctx_compute(ctx, 0, NULL);
    if (s) loom_error_set(err, s, "recurrent state %s: %s", src >= 0 ? "copy" : "reset",
                          *loom_ctx_error(ctx) ? loom_ctx_error(ctx) : loom_status_name(s));
    loom_ctx_free(ctx);
    kv->epoch++;
    return s;
}

/* Whether removing [p0, p1) (p < 0: open) leaves sequence s whole (nothing of it in the
 * range) or empty; a recurrent state can become neither shorter nor holey. */
static bool rs_removable(const loom_model *m, int32_t s, int32_t p0, int32_t p1, bool *empties) {
    const llm_kv_cells *mc = main_cells(&m->kv);
    const int32_t lo = llm_kv_cells_pos_min(mc, s), hi = llm_kv_cells_pos_max(mc, s);
    *empties = false;
    if (hi < 0) return true; /* no tokens */
    const int64_t a = p0 < 0 ? 0 : p0, b = p1 < 0 ? (int64_t)1 << 40 : p1;
    if (b <= lo || a > hi) return true; /* nothing of s in the range */
    if (a <= lo && b > hi) {
        *empties = true;
        return true;
    }
    return false;
}

loom_status loom_model_seq_remove(loom_model *m, int32_t seq, int32_t p0, int32_t p1, loom_error *err) {
    loom_status s = check_seq(m, seq, true, "loom_model_seq_remove", err);
    if (s) return s;
    bool empties[LOOM_SEQ_MAX] = {false};
    if (m->kv.n_recurrent > 0)
        for (int32_t q = seq < 0 ? 0 : seq; q < (seq < 0 ? m->n_seq_max : seq + 1); q++)
            if (!rs_removable(m, q, p0, p1, &empties[q]))
                return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                                      "loom_model_seq_remove: sequence %d would keep part of its tokens; a recurrent "
                                      "layer's state cannot drop some (remove all of them, or none)", (int)q);
    for (int g = 0; g < m->kv.n_groups; g++) llm_kv_cells_seq_remove(&m->kv.grp[g].cells, seq, p0, p1);
    for (int32_t q = 0; q < m->n_seq_max && m->kv.n_recurrent > 0 && !s; q++)
        if (empties[q]) s = llm_rs_copy(m, -1, q, err);
    return s;
}

loom_status loom_model_seq_copy(loom_model *m, int32_t src, int32_t dst, int32_t p0, int32_t p1, loom_error *err) {
    loom_status s = check_seq(m, src, false, "loom_model_seq_copy", err);
    if (!s) s = check_seq(m, dst, false, "loom_model_seq_copy", err);
    if (s || src == dst) return s;
    const llm_kv_cells *mc = main_cells(&m->kv);
    if (m->kv.n_recurrent > 0) {
        bool all;
        if (llm_kv_cells_count(mc, dst) > 0 || !rs_removable(m, src, p0, p1, &all) || !all)
            return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                                  "loom_model_seq_copy: with recurrent layers only all of sequence %d can be copied, "
                                  "into an empty sequence (%d)", (int)src, (int)dst);
    }
    int64_t after = llm_kv_cells_count(mc, dst) - llm_kv_cells_count_range(mc, dst, p0, p1) +
                    llm_kv_cells_count_range(mc, src, p0, p1);
    if (after > m->n_ctx)
        return loom_error_set(err, LOOM_ERR_CONTEXT_FULL, "loom_model_seq_copy: sequence %d would hold %lld > n_ctx = %d tokens",
                              (int)dst, (long long)after, m->n_ctx);
    for (int g = 0; g < m->kv.n_groups; g++) llm_kv_cells_seq_copy(&m->kv.grp[g].cells, src, dst, p0, p1);
    return m->kv.n_recurrent > 0 ? llm_rs_copy(m, src, dst, err) : LOOM_OK;
}

loom_status loom_model_seq_keep(loom_model *m, int32_t seq, loom_error *err) {
    loom_status s = check_seq(m, seq, false, "loom_model_seq_keep", err);
    if (s) return s;
    for (int g = 0; g < m->kv.n_groups; g++) llm_kv_cells_seq_keep(&m->kv.grp[g].cells, seq);
    for (int32_t q = 0; q < m->n_seq_max && m->kv.n_recurrent > 0 && !s; q++)
        if (q != seq) s = llm_rs_copy(m, -1, q, err);
    return s;
}

int32_t loom_model_seq_pos_max(const loom_model *m, int32_t seq) {
    if (!m || m->dry_run || seq < 0 || seq >= m->n_seq_max) return -1;
    return llm_kv_cells_pos_max(main_cells(&m->kv), seq);
}

int32_t loom_model_seq_pos_min(const loom_model *m, int32_t seq) {
    if (!m || m->dry_run || seq < 0 || seq >= m->n_seq_max) return -1;
    return llm_kv_cells_pos_min(main_cells(&m->kv), seq);
}

int32_t loom_model_seq_n_tokens(const loom_model *m, int32_t seq) {
    if (!m || m->dry_run || seq < 0 || seq >= m->n_seq_max) return 0;
    return (int32_t)llm_kv_cells_count(main_cells(&m->kv), seq);
}

/* ------------------------------------------------------------------ shift */

/* Rotate the cached K of cells [c0, c0 + n) of group g by delta positions (RoPE of
 * the layer's rule): one graph per group. */
static loom_status rope_cells(loom_model *m, int g, const int64_t *cells, int64_t n_cells, int32_t delta,
                              loom_error *err) {
    llm_kv_cache *kv = &m->kv;
    const loom_model_hparams *hp = &m->hp;
    if (n_cells == 0 || kv->grp[g].n_layers == 0) return LOOM_OK;
    /* runs of consecutive cells */
    int64_t n_runs = 0;
    for (int64_t i = 0; i < n_cells; i++)
        if (i == 0 || cells[i] != cells[i - 1] + 1) n_runs++;
    int64_t per_run = 20 * (int64_t)kv->grp[g].n_layers; /* nodes per layer and run (a DSA key: 13; turned keys: 16) */
    int64_t max_runs = (loom_backend_max_nodes(m->be) - 64) / per_run;
    if (max_runs < 1) max_runs = 1;
    int32_t *pos = loom_malloc((size_t)n_cells * sizeof *pos);
    const int64_t hkv_max = kv->grp[g].hkv; /* each layer's own shape below */
    int32_t *rows = loom_malloc((size_t)n_cells * (size_t)hkv_max * sizeof *rows);
    if (!pos || !rows) {
        loom_free(pos);
        loom_free(rows);
        return loom_error_set(err, LOOM_ERR_NOMEM, "shift: out of host memory");
    }
    for (int64_t i = 0; i < n_cells; i++) pos[i] = delta;
    /* keys normed after rope (hunyuan: w * rms_norm(rope(k))): rotating them needs the
     * weights divided out first and multiplied back after (the rms factor is the same
     * at any position), else the shifted keys differ from keys made at the new
     * positions (llama.cpp rotates them as they are) */
    bool post = false, offs = false;
    for (int il = 0; il < hp->n_layer; il++) {
        post = post || m->layers[il].k_norm_post;
        offs = offs || llm_rope_key_offset(m, il) != 0 || (m->kv_types && m->kv_types[il].kdsa > 0);
    }
    /* quantized keys, rope dims not at the start, post-rope norms or turned keys (read
     * back through F32 rows): read the rows as F32 */
    const bool q = (kv->type != LOOM_TYPE_F16 && kv->type != LOOM_TYPE_F32) || offs || post || kv->rot_k[g] > 0;
    loom_status s = LOOM_OK;
    kv->epoch++;
    int64_t i = 0;
    while (i < n_cells && !s) {
        loom_ctx *ctx;
        s = loom_backend_ctx_new(m->be, 0, &ctx, err);
        if (s) break;
        loom_ctx *in = loom_ctx_input(ctx);
        int64_t runs = 0;
        while (i < n_cells && runs < max_runs) {
            int64_t j = i + 1;
            while (j < n_cells && cells[j] == cells[j - 1] + 1) j++;
            int64_t len = j - i, c0 = cells[i];
            int64_t ne1 = len;
            loom_tensor *pt = loom_from_i32(in, pos + i, (size_t)len, 1, &ne1);
            for (int il = 0; il < hp->n_layer; il++) {
                if (kv->layer_group[il] != g || kv->share[il] != il || !llm_layer_has_rope(m, il)) continue;
                int64_t dk, dv, hkv;
                llm_kv_layer_dims(kv, il, &dk, &dv, &hkv);
                const int64_t off = llm_rope_key_offset(m, il), kdsa = m->kv_types ? m->kv_types[il].kdsa : 0;
                loom_tensor *rt = NULL;
                if (q) { /* the run's key rows: cell * hkv + h of [dk, hkv * cells] */
                    for (int64_t c = 0; c < len; c++)
                        for (int64_t h = 0; h < hkv; h++) rows[c * hkv + h] = (int32_t)((c0 + c) * hkv + h);
                    int64_t nr = len * hkv;
                    rt = loom_from_i32(in, rows, (size_t)nr, 1, &nr);
                }
                /* the layer's rope (base, scale, YaRN angles, factors) as a pure
                 * rotation: the magnitude factor was applied when the key was made
                 * (the kernel multiplies by 1 + 0.1 ln(1/scale) when YaRN is on) */
                loom_rope_opts ro;
                float base, scale;
                const int64_t nr = llm_layer_n_rot(m, il);
                llm_rope_layer(m, il, llm_layer_rope_factors(m, ctx, il), &ro, &base, &scale);
                ro.attn_factor = ro.ext_factor != 0.0f ? 1.0f / (1.0f + 0.1f * logf(1.0f / scale)) : 1.0f;
                loom_tensor *K = kv->k[il];
                size_t cb = loom_tensor_nb(K, 2);
                int64_t args[5] = {dk, (int64_t)loom_tensor_nb(K, 1), hkv, (int64_t)cb, len};
                loom_tensor *view = loom_view(ctx, K, cb * (size_t)c0, 5, args);
                loom_tensor *src = view;
                if (q) {
                    int64_t ne2[2] = {dk, hkv * loom_tensor_ne(K, 2)};
                    loom_tensor *rowsv = loom_get_rows(ctx, loom_reshape(ctx, K, 2, ne2), rt);
                    int64_t ne3[3] = {dk, hkv, len};
                    src = loom_reshape(ctx, rowsv, 3, ne3);
                }
                /* a quantized cache's keys are stored turned (model_internal.h): turned
                 * back (H^-1 = H) for the rope, turned again after */
                const int rk = llm_kv_rot_k_size(kv, il);
                src = llm_kv_rotate(ctx, rk, src);
                loom_tensor *r;
                loom_tensor *w = m->layers[il].k_norm_post;
                if (w) {
                    r = loom_mul(ctx, loom_rope(ctx, loom_div(ctx, src, w), pt, (int)nr, base, scale, &ro), w);
                } else if (off == 0) {
                    r = loom_rope(ctx, src, pt, (int)nr, base, scale, &ro);
                } else {
                    /* rotate dims [off, off + n_rot) of each head: a contiguous copy of
                     * them, rotated, written back over a copy of the keys */
                    loom_tensor *s3 = src; /* F32 rows (q) */
                    int64_t pa[5] = {nr, (int64_t)loom_tensor_nb(s3, 1), hkv, (int64_t)loom_tensor_nb(s3, 2), len};
                    loom_tensor *part = loom_cont(ctx, loom_view(ctx, s3, (size_t)off * loom_tensor_nb(s3, 0), 5, pa));
                    loom_tensor *rp = loom_rope(ctx, part, pt, (int)nr, base, scale, &ro);
                    r = loom_set_2d(ctx, s3, rp, (size_t)off * loom_tensor_nb(s3, 0), loom_tensor_nb(s3, 1));
                }
                if (kdsa > 0) {
                    /* DSA: the indexer key after the latent key turns its first n_rot dims
                     * with the indexer's rope (arch_dsa.c) */
                    const int64_t o2 = dk - kdsa;
                    loom_rope_opts ro2 = ro;
                    ro2.mode = (loom_rope_mode)m->hx.dsa_rope_mode;
                    int64_t pa[5] = {nr, (int64_t)loom_tensor_nb(r, 1), hkv, (int64_t)loom_tensor_nb(r, 2), len};
                    loom_tensor *part = loom_cont(ctx, loom_view(ctx, r, (size_t)o2 * loom_tensor_nb(r, 0), 5, pa));
                    loom_tensor *rp = loom_rope(ctx, part, pt, (int)nr, base, scale, &ro2);
                    r = loom_set_2d(ctx, r, rp, (size_t)o2 * loom_tensor_nb(r, 0), loom_tensor_nb(r, 1));
                }
                loom_ctx_forward(ctx, loom_cpy(ctx, llm_kv_rotate(ctx, rk, r), view));
            }
            runs++;
            i = j;
        }
        s = loom_ctx_status(ctx);
        if (!s) s = loom_ctx_compute(ctx, 0, NULL);
        if (s) loom_error_set(err, s, "shift: re-rotating cached keys: %s",
                              *loom_ctx_error(ctx) ? loom_ctx_error(ctx) : loom_status_name(s));
        loom_ctx_free(ctx);
    }
    loom_free(pos);
    loom_free(rows);
    return s;
}

loom_status loom_model_seq_shift(loom_model *m, int32_t seq, int32_t p0, int32_t p1, int32_t delta, loom_error *err) {
    loom_status s = check_seq(m, seq, false, "loom_model_seq_shift", err);
    if (s || delta == 0) return s;
    if (p0 < 0) p0 = 0;
    if (p1 < 0) p1 = INT32_MAX;
    if (p0 >= p1) return LOOM_OK;
    llm_kv_cache *kv = &m->kv;
    /* order: the shifted tokens stay between the tokens of seq outside the range */
    const llm_kv_cells *mc = main_cells(kv);
    int32_t in_lo = -1, in_hi = -1, below = -1, above = -1;
    bool dropped = false;
    for (int64_t i = 0; i < mc->n; i++) {
        int32_t q = mc->pos[i];
        if (q < 0 || !llm_kv_cell_has(mc, i, seq)) continue;
        if (q >= p0 && q < p1) {
            if (q + (int64_t)delta < 0) { /* removed */
                dropped = true;
                continue;
            }
            if (in_lo < 0 || q < in_lo) in_lo = q;
            if (q > in_hi) in_hi = q;
        } else if (q < p0) {
            if (q > below) below = q;
        } else if (above < 0 || q < above) {
            above = q;
        }
    }
    /* a recurrent state describes all of the sequence: it may lose all its tokens or none */
    const bool rs_whole = below < 0 && above < 0 && in_lo < 0;
    if (kv->n_recurrent > 0 && dropped && !rs_whole)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                              "loom_model_seq_shift: sequence %d would keep part of its tokens; a recurrent layer's "
                              "state cannot drop some of them",
                              (int)seq);
    if (in_lo < 0) { /* nothing left after the shift: only removals */
        for (int g = 0; g < kv->n_groups; g++) llm_kv_cells_seq_remove(&kv->grp[g].cells, seq, p0, p1);
        return kv->n_recurrent > 0 && rs_whole ? llm_rs_copy(m, -1, seq, err) : LOOM_OK;
    }
    if ((below >= 0 && (int64_t)in_lo + delta <= below) || (above >= 0 && (int64_t)in_hi + delta >= above) ||
        (int64_t)in_hi + delta > LOOM_POS_MAX)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                              "loom_model_seq_shift: shifting positions [%d, %d] of sequence %d by %d would pass "
                              "its other tokens",
                              (int)in_lo, (int)in_hi, (int)seq, (int)delta);
    /* per group: cells to rotate; shared cells are first copied to free cells */
    for (int g = 0; g < kv->n_groups; g++) {
        llm_kv_cells *c = &kv->grp[g].cells;
        int64_t n_shared = 0, n_free = c->n - c->used;
        for (int64_t i = 0; i < c->n; i++) {
            int32_t q = c->pos[i];
            if (q < p0 || q >= p1 || !llm_kv_cell_has(c, i, seq) || q + (int64_t)delta < 0) continue;
            for (int w = 0; w < c->nw; w++) {
                uint64_t other = c->seq[i * c->nw + w];
                if (w == (seq >> 6)) other &= ~((uint64_t)1 << (seq & 63));
                if (other) {
                    n_shared++;
                    break;
                }
            }
        }
        if (n_shared > n_free)
            return loom_error_set(err, LOOM_ERR_CONTEXT_FULL,
                                  "loom_model_seq_shift: no room to unshare %lld cells of sequence %d",
                                  (long long)n_shared, (int)seq);
    }
    llm_decode_drop(m);
    for (int g = 0; g < kv->n_groups; g++) {
        llm_kv_cells *c = &kv->grp[g].cells;
        int64_t *buf = loom_malloc((size_t)c->n * 3 * sizeof *buf);
        if (!buf) return loom_error_set(err, LOOM_ERR_NOMEM, "loom_model_seq_shift: out of host memory");
        int64_t *src = buf, *dst = buf + c->n, *rot = buf + 2 * c->n;
        int64_t n_cp = 0, n_rot = 0, hole = 0;
        for (int64_t i = 0; i < c->n; i++) {
            int32_t q = c->pos[i];
            if (q < p0 || q >= p1 || !llm_kv_cell_has(c, i, seq) || q + (int64_t)delta < 0) continue;
            bool shared = false;
            for (int w = 0; w < c->nw && !shared; w++) {
                uint64_t other = c->seq[i * c->nw + w];
                if (w == (seq >> 6)) other &= ~((uint64_t)1 << (seq & 63));
                shared = other != 0;
            }
            if (!shared) {
                rot[n_rot++] = i;
                continue;
            }
            while (c->pos[hole] >= 0) hole++; /* counted above: enough free cells */
            src[n_cp] = i;
            dst[n_cp++] = hole++;
        }
        s = llm_kv_copy_cells(kv, m->be, g, src, dst, n_cp, err);
        if (!s) {
            for (int64_t k = 0; k < n_cp; k++) {
                c->pos[dst[k]] = c->pos[src[k]];
                c->tok[dst[k]] = c->tok[src[k]];
                memset(c->seq + dst[k] * c->nw, 0, (size_t)c->nw * sizeof *c->seq);
                llm_kv_cell_set(c, dst[k], seq);
                c->used++;
                llm_kv_cell_unset(c, src[k], seq);
                rot[n_rot++] = dst[k];
            }
            /* rotation wants increasing cells (runs) */
            for (int64_t a = 1; a < n_rot; a++)
                for (int64_t b = a; b > 0 && rot[b - 1] > rot[b]; b--) {
                    int64_t t = rot[b];
                    rot[b] = rot[b - 1];
                    rot[b - 1] = t;
                }
            s = rope_cells(m, g, rot, n_rot, delta, err);
        }
        if (!s) {
            for (int64_t k = 0; k < n_rot; k++) c->pos[rot[k]] += delta;
            /* tokens shifted below 0 go */
            for (int64_t i = 0; i < c->n; i++) {
                int32_t q = c->pos[i];
                if (q >= p0 && q < p1 && q + (int64_t)delta < 0 && llm_kv_cell_has(c, i, seq))
                    llm_kv_cell_unset(c, i, seq);
            }
        }
        loom_free(buf);
        if (s) return s;
    }
    return LOOM_OK;
}

loom_status loom_model_seq_context_shift(loom_model *m, int32_t seq, int32_t n_keep, int32_t *n_discarded,
                                         loom_error *err) {
    if (n_discarded) *n_discarded = 0;
    loom_status s = check_seq(m, seq, false, "loom_model_seq_context_shift", err);
    if (s) return s;
    if (m->kv.n_recurrent > 0)
        return loom_error_set(err, LOOM_ERR_UNSUPPORTED,
                              "loom_model_seq_context_shift: a recurrent layer's state cannot drop tokens (start the "
                              "sequence again instead)");
    int32_t n_ctx = m->n_ctx;
    if (n_keep < 0) n_keep = 0;
    if (n_keep > n_ctx - 1) n_keep = n_ctx - 1;
    int32_t n_tok = loom_model_seq_n_tokens(m, seq);
    int32_t discard = (n_ctx - n_keep) / 2 - (n_ctx - n_tok);
    if (discard < 0) discard = 0;
    if (discard == 0 && n_tok >= n_ctx) discard = 1;
    if (discard == 0) return LOOM_OK;
    /* positions of the sequence as they are (0.. after earlier shifts) */
    const llm_kv_cells *mc = main_cells(&m->kv);
    int32_t pmin = llm_kv_cells_pos_min(mc, seq);
    int32_t k0 = pmin + n_keep, k1 = k0 + discard;
    /* remove [k0, k1) then shift [k1, end) down: done as a shift by -discard of [k1, end)
     * after the removal, which cannot fail the order check */
    llm_kv_cache *kv = &m->kv;
    /* check the shift first so that a failure leaves the cache unchanged: the only
     * failures are room for unsharing and compute errors */
    llm_kv_cells *saved[LLM_KV_MAX_GROUPS] = {0};
    int32_t *savep[LLM_KV_MAX_GROUPS] = {0};
    uint64_t *saves[LLM_KV_MAX_GROUPS] = {0};
    for (int g = 0; g < kv->n_groups; g++) {
        llm_kv_cells *c = &kv->grp[g].cells;
        savep[g] = loom_malloc((size_t)c->n * sizeof *savep[g]);
        saves[g] = loom_malloc((size_t)c->n * (size_t)c->nw * sizeof *saves[g]);
        saved[g] = c;
        if (!savep[g] || !saves[g]) {
            s = loom_error_set(err, LOOM_ERR_NOMEM, "context shift: out of host memory");
            break;
        }
        memcpy(savep[g], c->pos, (size_t)c->n * sizeof *c->pos);
        memcpy(saves[g], c->seq, (size_t)c->n * (size_t)c->nw * sizeof *c->seq);
    }
    int64_t used[LLM_KV_MAX_GROUPS] = {0};
    for (int g = 0; g < kv->n_groups; g++) used[g] = kv->grp[g].cells.used;
    if (!s) {
        for (int g = 0; g < kv->n_groups; g++) llm_kv_cells_seq_remove(&kv->grp[g].cells, seq, k0, k1);
        s = loom_model_seq_shift(m, seq, k1, -1, -discard, err);
        if (s) /* metadata back (K rows were not changed when the shift failed early) */
            for (int g = 0; g < kv->n_groups; g++) {
                llm_kv_cells *c = saved[g];
                memcpy(c->pos, savep[g], (size_t)c->n * sizeof *c->pos);
                memcpy(c->seq, saves[g], (size_t)c->n * (size_t)c->nw * sizeof *c->seq);
                c->used = used[g];
            }
    }
    for (int g = 0; g < LLM_KV_MAX_GROUPS; g++) {
        loom_free(savep[g]);
        loom_free(saves[g]);
    }
    if (!s && n_discarded) *n_discarded = discard;
    return s;
}

/* ------------------------------------------------------------------ prefix reuse */

/* Length of the prefix of tokens[0..n) that sequence s holds at positions 0, 1, ...
 * (tok: scratch [n], -1 filled). */
static int32_t cached_prefix(const llm_kv_cells *c, int s, const int32_t *tokens, int32_t n, int32_t *tok) {
    for (int32_t i = 0; i < n; i++) tok[i] = -1;
    for (int64_t i = 0; i < c->n; i++)
        if (c->pos[i] >= 0 && c->pos[i] < n && llm_kv_cell_has(c, i, s)) tok[c->pos[i]] = c->tok[i];
    int32_t k = 0;
    while (k < n && tok[k] >= 0 && tok[k] == tokens[k]) k++;
    return k;
}

/* Sliding-window groups hold the window before position k for s? */
static bool window_cached(const llm_kv_cache *kv, int s, int32_t k, int32_t *tok) {
    for (int g = 0; g < kv->n_groups; g++) {
        const llm_kv_cells *c = &kv->grp[g].cells;
        if (c->window <= 0 || k == 0) continue;
        int32_t lo = k - c->window > 0 ? k - c->window : 0;
        for (int32_t p = lo; p < k; p++) tok[p - lo] = 0;
        for (int64_t i = 0; i < c->n; i++)
            if (c->pos[i] >= lo && c->pos[i] < k && llm_kv_cell_has(c, i, s)) tok[c->pos[i] - lo] = 1;
        for (int32_t p = lo; p < k; p++)
            if (!tok[p - lo]) return false;
    }
    return true;
}

loom_status loom_model_seq_reuse_prefix(loom_model *m, int32_t seq, const int32_t *tokens, int32_t n,
                                        int32_t *n_cached, loom_error *err) {
    if (n_cached) *n_cached = 0;
    if (!tokens || !n_cached || n <= 0)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "loom_model_seq_reuse_prefix: NULL argument or n = %d",
                              (int)n);
    loom_status s = check_seq(m, seq, false, "loom_model_seq_reuse_prefix", err);
    if (s) return s;
    const llm_kv_cells *mc = main_cells(&m->kv);
    int32_t *tok = loom_malloc((size_t)n * sizeof *tok);
    if (!tok) return loom_error_set(err, LOOM_ERR_NOMEM, "loom_model_seq_reuse_prefix: out of host memory");
    /* recurrent layers: a sequence's state is only good whole, so a prefix counts only
     * when it is all the sequence holds (and leaves at least one token to evaluate) */
    const bool rec = m->kv.n_recurrent > 0;
    int32_t best = cached_prefix(mc, seq, tokens, n, tok), from = seq;
    if (best > n - 1) best = n - 1;
    if (!window_cached(&m->kv, seq, best, tok)) best = 0;
    if (rec && best != llm_kv_cells_count(mc, seq)) best = 0;
    for (int o = 0; o < m->n_seq_max; o++) {
        if (o == seq) continue;
        int32_t k = cached_prefix(mc, o, tokens, n, tok);
        if (k > n - 1) k = n - 1;
        if (rec && k != llm_kv_cells_count(mc, o)) continue;
        if (k > best && window_cached(&m->kv, o, k, tok)) {
            best = k;
            from = o;
        }
    }
    loom_free(tok);
    if (from == seq) {
        for (int g = 0; g < m->kv.n_groups; g++) llm_kv_cells_seq_remove(&m->kv.grp[g].cells, seq, best, -1);
        if (rec && best == 0) s = llm_rs_copy(m, -1, seq, err);
    } else {
        for (int g = 0; g < m->kv.n_groups; g++) {
            llm_kv_cells_seq_remove(&m->kv.grp[g].cells, seq, -1, -1);
            llm_kv_cells_seq_copy(&m->kv.grp[g].cells, from, seq, 0, best);
        }
        if (rec) s = llm_rs_copy(m, from, seq, err);
    }
    if (s) return s;
    *n_cached = best;
    return LOOM_OK;
}
