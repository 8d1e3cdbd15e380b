/*
 * ops_attn.c - CPU kernel for FLASH_ATTN (fused attention, backend contract §6.8).
 *
 * q [Dk,T,H] F32 (rows contiguous), k [Dk,L,Hkv], v [Dv,L,Hkv] (F32, F16, BF16,
 * Q8_0 or Q4_0 rows), mask [L, >=T] F16/F32 or NULL -> dst F32 [Dv,H,T].
 * Query head h reads kv head h / (H/Hkv). For each (token, head) the keys are
 * visited in tiles of FA_TILE: scores = scale * q.k (q converted once into k's
 * vec_dot_type, as mul_mat does) + mask, then an online softmax update of the
 * running max, sum and F32 accumulator; the L x T score matrix is never formed.
 * Work items are (token, kv head, L chunk): the query heads sharing a kv head are
 * processed together, so each key/value row is read (and converted) once per
 * group. When T * Hkv is small (decode), L is cut into chunks whose partial
 * (max, sum, acc) states are combined after a barrier (split-K "flash decoding").
 * The decomposition depends only on the shapes and every item runs on one thread
 * in a fixed order, so results do not depend on the thread count.
 * A row whose keys are all masked gives NaN (0/0), like softmax.
 * A tile's scores are one gemm tile (key rows x the group's query heads) when the
 * level has a gemm for k's type, else vec_dots. v may also be TRANSPOSED (F32 / F16
 * / BF16 with nb[1] = element size: the non-flash cache's [L, Dv, Hkv] seen as
 * [Dv, L, Hkv], used by loom_sdpa for single-token decode): then the tile's
 * probabilities are converted to v's vec_dot_type and p.V is a gemm tile too (Dv
 * rows of the tile's keys x the G heads), as the non-flash V product does.
 */
#include "cpu/kernels.h"
#include "cpu/ops.h"

#include <math.h>
#include <string.h>

#define FA_TILE 64
#define FA_ALIGN 64
#define FA_MIN_CHUNK 256 /* keys per L chunk when L is split */
#define FA_WANT_ITEMS 64 /* split L until about this many work items exist */

static size_t fa_align(size_t x) { return (x + FA_ALIGN - 1) & ~(size_t)(FA_ALIGN - 1); }

/* Work decomposition; a function of the shapes only (never of nth), so results
 * are bit-identical for any thread count. */
typedef struct fa_layout {
    int64_t G;            /* query heads per kv head */
    bool v_trans;         /* v is transposed (see the file comment) */
    size_t p_bytes;       /* transposed v: one probability row (FA_TILE values) in v's vec_dot_type */
    int64_t n_chunks;     /* L is cut into this many chunks (partials combined after a barrier) */
    int64_t chunk_len;
    size_t q_bytes;       /* one converted q row */
    size_t per_thread;    /* G q rows, G score tiles, one V row, G partial states */
    size_t part_stride;   /* floats of one partial state block: G * (Dv + 2) */
    size_t part_bytes;    /* shared partials (0 when n_chunks == 1) */
    size_t total;
} fa_layout;

static bool fa_plan(const loom_tensor *dst, int nth, fa_layout *out) {
    const loom_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2];
    if (!q || !k || !v || nth <= 0) return false;
    const loom_kernels *kt = loom_kernels_get();
    const loom_kernel_entry *e = &kt->dot[k->type];
    if (!e->vec_dot) return false;
    size_t qb;
    if (loom_type_row_bytes(e->vec_dot_type, q->ne[0], &qb) != LOOM_OK) return false;
    const int64_t T = q->ne[1], H = q->ne[2], L = k->ne[1], Hkv = k->ne[2], Dv = v->ne[0];
    if (Hkv <= 0 || H % Hkv != 0 || Dv > (int64_t)(SIZE_MAX / 64) || H > 65536 || qb > SIZE_MAX / 65536)
        return false;
    out->G = H / Hkv;
    out->v_trans = loom_tensor_is_transposed(v);
    out->p_bytes = 0;
    if (out->v_trans) {
        const loom_kernel_entry *ev = &kt->dot[v->type];
        size_t pb;
        if (!ev->vec_dot || loom_type_row_bytes(ev->vec_dot_type, FA_TILE, &pb) != LOOM_OK) return false;
        out->p_bytes = fa_align(pb);
    }
    const int64_t base_items = T * Hkv;
    int64_t want = base_items >= FA_WANT_ITEMS ? 1 : (FA_WANT_ITEMS + base_items - 1) / base_items;
    int64_t maxc = (L + FA_MIN_CHUNK - 1) / FA_MIN_CHUNK;
    int64_t nc = want < maxc ? want : maxc;
    if (nc < 1) nc = 1;
    out->chunk_len = (L + nc - 1) / nc;
    if (out->chunk_len < 1) out->chunk_len = 1;
    out->n_chunks = (L + out->chunk_len - 1) / out->chunk_len;
    if (out->n_chunks < 1) out->n_chunks = 1;
    const size_t G = (size_t)out->G;
    out->q_bytes = fa_align(qb);
    out->part_stride = G * ((size_t)Dv + 2);
    out->per_thread = G * out->q_bytes + fa_align(G * FA_TILE * sizeof(float)) + fa_align((size_t)Dv * sizeof(float)) +
                      fa_align(out->part_stride * sizeof(float));
    if (out->v_trans && (size_t)Dv > SIZE_MAX / sizeof(float) / 65536 / 4) return false;
    if (out->v_trans) /* probabilities in v's vec_dot_type + the tile's p.V [G x Dv] */
        out->per_thread += G * out->p_bytes + fa_align(G * (size_t)Dv * sizeof(float));
    out->part_bytes = 0;
    if (out->n_chunks > 1) {
        size_t blocks = (size_t)base_items * (size_t)out->n_chunks;
        if (out->part_stride > SIZE_MAX / sizeof(float) / blocks) return false;
        out->part_bytes = fa_align(blocks * out->part_stride * sizeof(float));
    }
    if (out->per_thread > (SIZE_MAX - out->part_bytes) / (size_t)nth) return false;
    out->total = out->part_bytes + out->per_thread * (size_t)nth;
    return true;
}

size_t loom_cpu_work_size_flash_attn(const loom_tensor *dst, int nth) {
    fa_layout L;
    if (nth <= 0) return 0;
    if (!fa_plan(dst, nth, &L)) return 0; /* the kernel reports the error */
    return L.total;
}

/* IEEE half -> float without branches (vectorisable): the exponent is rebased by
 * a float multiply, subnormals go through a magic-number subtraction. */
static inline float h2f(uint16_t h) {
    const uint32_t w = (uint32_t)h << 16;
    const uint32_t sign = w & 0x80000000u;
    const uint32_t two_w = w + w;
    uint32_t nb = (two_w >> 4) + (0xE0u << 23), db = (two_w >> 17) | (126u << 23);
    float nf, df, half = 0.5f, scale = 0x1.0p-112f;
    memcpy(&nf, &nb, 4);
    memcpy(&df, &db, 4);
    nf *= scale;
    df -= half;
    uint32_t rn, rd;
    memcpy(&rn, &nf, 4);
    memcpy(&rd, &df, 4);
    uint32_t r = sign | (two_w < (1u << 27) ? rd : rn);
    float f;
    memcpy(&f, &r, 4);
    return f;
}

static void row_to_f32(loom_type t, const void *src, float *dst, int64_t n) {
    if (t == LOOM_TYPE_F16) {
        loom_kernels_get()->f16_to_f32(n, (const uint16_t *)src, dst);
    } else if (t == LOOM_TYPE_BF16) {
        const uint16_t *h = (const uint16_t *)src;
        for (int64_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)h[i] << 16;
            memcpy(&dst[i], &u, 4);
        }
    } else {
        loom_dequantize_row(t, src, dst, n);
    }
}

static inline float mask_at(const loom_tensor *m, int64_t j, int64_t t) {
    const char *p = (const char *)m->data + (size_t)t * m->nb[1] + (size_t)j * m->nb[0];
    if (m->type == LOOM_TYPE_F16) {
        uint16_t h;
        memcpy(&h, p, 2);
        return h2f(h);
    }
    float f;
    memcpy(&f, p, 4);
    return f;
}

/* Decode reads each layer's K/V once, cold (the weights streamed since evicted them),
 * in short strided runs the hardware prefetcher does not follow (a key row every
 * Hkv rows; a transposed v is Dv runs of L elements a cache row apart). Asking for all
 * of an item's lines up front (into L2) overlaps those misses. Bounded so a long chunk
 * does not flush L2. */
#define FA_PREFETCH_MAX (256 * 1024)
#define FA_PREFETCH_TOKENS 4 /* longer batches read the same K/V for every token: cached */
static void fa_prefetch_item(const loom_tensor *k, const loom_tensor *v, const char *kbase, const char *vbase,
                             int64_t jb, int64_t je, bool v_trans) {
    const size_t krow = loom_row_size(k), n = (size_t)(je - jb);
    size_t vbytes = v_trans ? n * loom_type_size(v->type) * (size_t)v->ne[0] : n * loom_row_size(v);
    if (n * krow + vbytes > FA_PREFETCH_MAX) return;
    for (int64_t j = jb; j < je; j++) {
        const char *r = kbase + (size_t)j * k->nb[1];
        for (size_t o = 0; o < krow; o += 64) __builtin_prefetch(r + o, 0, 2);
    }
    if (v_trans) {
        const size_t run = n * loom_type_size(v->type);
        for (int64_t d = 0; d < v->ne[0]; d++) {
            const char *r = vbase + (size_t)d * v->nb[0] + (size_t)jb * v->nb[1];
            for (size_t o = 0; o < run; o += 64) __builtin_prefetch(r + o, 0, 2);
            __builtin_prefetch(r + run - 1, 0, 2);
        }
    } else {
        const size_t vrow = loom_row_size(v);
        for (int64_t j = jb; j < je; j++) {
            const char *r = vbase + (size_t)j * v->nb[1];
            for (size_t o = 0; o < vrow; o += 64) __builtin_prefetch(r + o, 0, 2);
        }
    }
}

void loom_cpu_op_flash_attn(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *mask = dst->src[3];
    const float scale = loom_get_op_param_f32(dst, 0);
    const int64_t Dk = q->ne[0], T = q->ne[1], H = q->ne[2], L = k->ne[1], Hkv = k->ne[2], Dv = v->ne[0];
    if (loom_nelements(dst) == 0) return;
    const loom_kernels *kt = loom_kernels_get();
    const loom_kernel_entry *e = &kt->dot[k->type];
    fa_layout lay;
    if (!fa_plan(dst, p->nth, &lay) || !kt->from_float[e->vec_dot_type] || p->wsize < lay.total) {
        loom_cpu_fail(p, LOOM_ERR_INTERNAL);
        return;
    }
    const int64_t G = lay.G, NC = lay.n_chunks;
    char *ws = (char *)p->wdata + lay.part_bytes + (size_t)p->ith * lay.per_thread;
    char *qc = ws;
    float *sc = (float *)(ws + (size_t)G * lay.q_bytes);
    float *vt = (float *)((char *)sc + fa_align((size_t)G * FA_TILE * sizeof(float)));
    float *st = (float *)((char *)vt + fa_align((size_t)Dv * sizeof(float))); /* G x (M, S, acc[Dv]) */
    char *pc = (char *)st + fa_align(lay.part_stride * sizeof(float));      /* transposed v only */
    float *pv = (float *)(pc + (size_t)G * lay.p_bytes);                      /* transposed v only */
    float *parts = (float *)p->wdata;
    const bool v_f32 = v->type == LOOM_TYPE_F32;
    const size_t sstride = (size_t)Dv + 2;
    const loom_kernel_entry *ev = &kt->dot[v->type];
    const loom_type pvdt = ev->vec_dot_type;
    const bool p_in_place = pvdt == LOOM_TYPE_F32; /* f32 v: the scores are the activation */
    if (lay.v_trans && (!ev->vec_dot || (!p_in_place && !kt->from_float[pvdt]))) {
        loom_cpu_fail(p, LOOM_ERR_INTERNAL);
        return;
    }

    /* phase 1: items (t, kv head g, chunk c) */
    const int64_t n_items = T * Hkv * NC;
    for (int64_t item = p->ith; item < n_items; item += p->nth) {
        const int64_t c = item % NC, g = (item / NC) % Hkv, t = item / (NC * Hkv);
        const int64_t jb = c * lay.chunk_len, je = jb + lay.chunk_len < L ? jb + lay.chunk_len : L;
        for (int64_t hi = 0; hi < G; hi++) {
            const int64_t h = g * G + hi;
            const float *qrow = (const float *)((const char *)q->data + (size_t)t * q->nb[1] + (size_t)h * q->nb[2]);
            kt->from_float[e->vec_dot_type](qrow, qc + (size_t)hi * lay.q_bytes, Dk);
            float *s = st + (size_t)hi * sstride;
            s[0] = -INFINITY;
            s[1] = 0.0f;
            memset(s + 2, 0, (size_t)Dv * sizeof(float));
        }
        const char *kbase = (const char *)k->data + (size_t)g * k->nb[2];
        const char *vbase = (const char *)v->data + (size_t)g * v->nb[2];
        if (T <= FA_PREFETCH_TOKENS) fa_prefetch_item(k, v, kbase, vbase, jb, je, lay.v_trans);

        for (int64_t j0 = jb; j0 < je; j0 += FA_TILE) {
            const int64_t j1 = j0 + FA_TILE < je ? j0 + FA_TILE : je, nj = j1 - j0;
            /* a tile no key of which is visible to token t is skipped whole (causal
             * prompts: about half of them) */
            /* the tile's mask row for token t (0 without a mask), read once */
            float mrow[FA_TILE];
            bool any = !mask;
            for (int64_t j = j0; j < j1; j++) {
                mrow[j - j0] = mask ? mask_at(mask, j, t) : 0.0f;
                any = any || mrow[j - j0] != -INFINITY;
            }
            if (!any) continue;
            /* scores of the tile's keys x the group's heads: sc[hi * FA_TILE + j - j0] */
            if (!kt->gemm || !kt->gemm(k->type, Dk, kbase + (size_t)j0 * k->nb[1], k->nb[1], qc, lay.q_bytes, sc,
                                       FA_TILE, 0, nj, 0, G)) {
                for (int64_t j = j0; j < j1; j++)
                    for (int64_t hi = 0; hi < G; hi++)
                        e->vec_dot(Dk, &sc[hi * FA_TILE + (j - j0)], kbase + (size_t)j * k->nb[1],
                                   qc + (size_t)hi * lay.q_bytes);
            }
            /* online softmax: scale and mask each head's scores, then rescale its state
             * to the tile's max (8 partial maxima: no serial compare chain) */
            for (int64_t hi = 0; hi < G; hi++) {
                float *s = st + (size_t)hi * sstride, *sv = sc + hi * FA_TILE;
                float mx[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
                for (int64_t j = 0; j < nj; j++) {
                    const float x = mrow[j] == -INFINITY ? -INFINITY : sv[j] * scale + mrow[j];
                    sv[j] = x;
                    if (x > mx[j & 7]) mx[j & 7] = x;
                }
                float mt = mx[0];
                for (int i = 1; i < 8; i++)
                    if (mx[i] > mt) mt = mx[i];
                if (mt > s[0]) {
                    if (s[0] != -INFINITY) { /* else the state is still all zeros */
                        const float f = expf(s[0] - mt);
                        s[1] *= f;
                        for (int64_t d = 0; d < Dv; d++) s[2 + d] *= f;
                    }
                    s[0] = mt;
                }
                const float sum = kt->exp_sum_f32(nj, sc + hi * FA_TILE, s[0]);
                if (lay.v_trans) s[1] += sum; /* else summed below in key order */
            }
            if (lay.v_trans) {
                /* p.V for the tile: rows d of the transposed v (the tile's keys are
                 * contiguous in each) x the G probability rows */
                const char *act = (const char *)sc;
                size_t as = FA_TILE * sizeof(float);
                if (!p_in_place) {
                    for (int64_t hi = 0; hi < G; hi++)
                        kt->from_float[pvdt](sc + hi * FA_TILE, pc + (size_t)hi * lay.p_bytes, nj);
                    act = pc;
                    as = lay.p_bytes;
                }
                const char *vt0 = vbase + (size_t)j0 * v->nb[1];
                if (!kt->gemm || !kt->gemm(v->type, nj, vt0, v->nb[0], act, as, pv, (size_t)Dv, 0, Dv, 0, G)) {
                    for (int64_t d = 0; d < Dv; d++)
                        for (int64_t hi = 0; hi < G; hi++)
                            ev->vec_dot(nj, &pv[hi * Dv + d], vt0 + (size_t)d * v->nb[0], act + (size_t)hi * as);
                }
                for (int64_t hi = 0; hi < G; hi++) /* acc += p.V (a * 1 is exact: a plain add) */
                    kt->axpy_f32(Dv, 1.0f, pv + hi * Dv, st + (size_t)hi * sstride + 2);
                continue;
            }
            /* accumulate V: the level's fused p.V (each V slice converted once, the
             * heads' accumulators in registers), else each row converted once for the
             * whole group and added with axpy */
            if (kt->fa_pv && kt->fa_pv(v->type, nj, G, Dv, sc, FA_TILE, vbase + (size_t)j0 * v->nb[1], v->nb[1], st + 2,
                                       sstride)) {
                /* row sums key by key, as the fallback below: the result then does not
                 * depend on where the sequence's cells sit in the tile (exp_sum's
                 * vector-lane order would; test_llm_batch_equiv) */
                for (int64_t j = 0; j < nj; j++)
                    for (int64_t hi = 0; hi < G; hi++) st[(size_t)hi * sstride + 1] += sc[hi * FA_TILE + j];
                continue;
            }
            for (int64_t j = j0; j < j1; j++) {
                const char *vrow = vbase + (size_t)j * v->nb[1];
                const float *vf = (const float *)vrow;
                bool converted = v_f32;
                for (int64_t hi = 0; hi < G; hi++) {
                    const float pj = sc[hi * FA_TILE + (j - j0)];
                    if (pj == 0.0f) continue;
                    if (!converted) {
                        row_to_f32(v->type, vrow, vt, Dv);
                        vf = vt;
                        converted = true;
                    }
                    float *s = st + (size_t)hi * sstride;
                    s[1] += pj;
                    kt->axpy_f32(Dv, pj, vf, s + 2);
                }
            }
        }
        if (NC == 1) {
            for (int64_t hi = 0; hi < G; hi++) {
                const float *s = st + (size_t)hi * sstride;
                float *out = (float *)dst->data + ((size_t)t * (size_t)H + (size_t)(g * G + hi)) * (size_t)Dv;
                if (s[1] > 0.0f) { /* out = acc / sum as 0 + (1/sum) * acc: exactly the product */
                    memset(out, 0, (size_t)Dv * sizeof(float));
                    kt->axpy_f32(Dv, 1.0f / s[1], s + 2, out);
                } else { /* all keys masked -> NaN, like softmax */
                    for (int64_t d = 0; d < Dv; d++) out[d] = NAN;
                }
            }
        } else {
            memcpy(parts + (size_t)item * lay.part_stride, st, lay.part_stride * sizeof(float));
        }
    }
    if (NC == 1) return;

    /* phase 2: combine the chunks of each (t, h) in chunk order */
    loom_cpu_barrier(p);
    const int64_t n_out = T * H;
    for (int64_t o = p->ith; o < n_out; o += p->nth) {
        const int64_t t = o / H, h = o % H, g = h / G, hi = h % G;
        const float *base = parts + (size_t)((t * Hkv + g) * NC) * lay.part_stride + (size_t)hi * sstride;
        float M = -INFINITY;
        for (int64_t c = 0; c < NC; c++) {
            const float m = base[(size_t)c * lay.part_stride];
            if (m > M) M = m;
        }
        float *out = (float *)dst->data + ((size_t)t * (size_t)H + (size_t)h) * (size_t)Dv;
        for (int64_t d = 0; d < Dv; d++) out[d] = 0.0f;
        float S = 0.0f;
        for (int64_t c = 0; c < NC; c++) {
            const float *s = base + (size_t)c * lay.part_stride;
            if (s[0] == -INFINITY) continue;
            const float f = expf(s[0] - M);
            S += s[1] * f;
            kt->axpy_f32(Dv, f, s + 2, out);
        }
        const float inv = S > 0.0f ? 1.0f / S : NAN;
        for (int64_t d = 0; d < Dv; d++) out[d] = S > 0.0f ? out[d] * inv : NAN;
    }
}
