/*
 * ops_attn.c - CPU kernel for FLASH_ATTN (fused attention, backend contract §6.8).
 *
 * q [Dk,T,H] F32 (rows contiguous), k [Dk,L,Hkv], v [Dv,L,Hkv] (F32, F16, BF16,
 * Q8_0 or Q4_0 rows), mask [L, >=T] F16/F32 or NULL -> dst F32 [Dv,H,T].
 * Query head h reads kv head h / (H/Hkv) (G = H/Hkv heads share one). Keys are
 * visited in tiles of FA_TILE with an online softmax (running max M, sum S and F32
 * accumulator per query row); the L x T score matrix is never formed.
 *
 * Work items are (block of TB tokens, kv head or group of kv heads (fa_heads), L
 * chunk): the block's TB x G query rows (at most 64) go through each key tile
 * together, so a tile's keys and values are read and converted to floats once per
 * block instead of once per token, and the tile is three level kernels (kernels.h):
 * scores as a register-blocked product with the rows in vector lanes (fa_qk), the
 * online-softmax update with the tile's mask (fa_softmax) and p.V (fa_pv). q is
 * first rounded through k's vec_dot_type (F16, BF16, Q8_0), as a q.k vec_dot would
 * see it, so scores match llama.cpp's and the Vulkan kernel's up to summation order.
 * Each row's arithmetic is fixed by those contracts: it does not depend on the other
 * rows of the block, on TB, on the head grouping or on where the tile starts, so a
 * token gets bit-identical attention whatever else its batch holds
 * (test_llm_batch_equiv) and for any thread count. When the items are few (decode)
 * L is cut into chunks whose partial (M, S, acc) states are combined after a barrier
 * (split-K "flash decoding"); the decomposition depends only on the shapes.
 * A row whose keys are all masked gives NaN (0/0), like softmax.
 * Two extras (op param 1, src[4]): a soft cap applied to the scaled scores before the
 * mask (fa_softcap; gemma2), and per-head sink logits that join each row's normaliser
 * at the end (fa_out_row and the chunk combine; gpt-oss), so a row then gives 0 when
 * every key is masked.
 *
 * v may also be TRANSPOSED (F32 / F16 / BF16 with nb[1] = element size: the
 * non-flash cache's [L, Dv, Hkv] seen as [Dv, L, Hkv], used by loom_sdpa for
 * single-token decode). That path keeps items of one token: a tile's scores are a
 * gemm tile (key rows x the group's heads) when the level has a gemm for k's type,
 * else vec_dots; the tile's probabilities are converted to v's vec_dot_type and p.V
 * is a gemm tile too (Dv rows of the tile's keys x the G heads), as the non-flash V
 * product does.
 */
#include "cpu/kernels.h"
#include "cpu/ops.h"

#include <math.h>
#include <string.h>

#define FA_TILE 64
#define FA_ALIGN 64
#define FA_MIN_CHUNK 256 /* keys per L chunk when L is split */
#define FA_WANT_ITEMS 64 /* split L until about this many work items exist */
#define FA_BLOCK_ROWS 64 /* query rows (tokens x G) per block */
#define FA_GROUP_BYTES (96 * 1024) /* scratch for the head states of one work item (fa_heads) */

static size_t fa_align(size_t x) { return (x + FA_ALIGN - 1) & ~(size_t)(FA_ALIGN - 1); }
static int64_t round16(int64_t x) { return (x + 15) & ~(int64_t)15; }

/* Work decomposition; a function of the shapes only (never of nth), so results
 * are bit-identical for any thread count. */
typedef struct fa_layout {
    int64_t G;            /* query heads per kv head */
    bool v_trans;         /* v is transposed (see the file comment): items of one token */
    int64_t TB;           /* tokens per block (1 when v_trans) */
    int64_t R, Rp;        /* rows of a full block (TB * G), rounded up to 16 */
    size_t ms;            /* mask tile row stride (floats): Rp / G + 16 */
    int64_t n_blocks;     /* ceil(T / TB) */
    size_t p_bytes;       /* transposed v: one probability row (FA_TILE values) in v's vec_dot_type */
    int64_t n_chunks;     /* L is cut into this many chunks (partials combined after a barrier) */
    int64_t chunk_len;
    int64_t HG;           /* block path: kv heads per work item (loop order only, see fa_heads) */
    size_t head_bytes;    /* block path: one head's state in the thread's scratch (qT, M, S, f, acc) */
    size_t q_bytes;       /* one q row in k's vec_dot_type (+ its floats, block path) */
    size_t per_thread;    /* the thread's scratch (see the kernels for the pieces) */
    size_t part_stride;   /* floats of one partial state block: R * (Dv + 2) */
    size_t part_bytes;    /* shared partials (0 when n_chunks == 1) */
    size_t total;
    float max_bias;       /* ALiBi (0: none; the mask holds -|distance|) */
    size_t mz_off;        /* block path with ALiBi: the tile's 0 / -inf mask in the thread's scratch */
} fa_layout;

/* Bytes of n floats, false past SIZE_MAX. */
static bool fa_floats(size_t n, size_t *out) {
    if (n > SIZE_MAX / sizeof(float) - FA_ALIGN) return false;
    *out = fa_align(n * sizeof(float));
    return true;
}

/* Kv heads per block-path work item. A key's heads sit side by side in the cache; when
 * their rows are not whole cache lines (Q8_0 / Q4_0: 34 / 18 bytes a block) one head's
 * rows share lines with its neighbours', and items of one head each would fetch every
 * line twice, at different times. An item that takes several heads of a chunk reads
 * those lines once, tile by tile. The largest divisor of Hkv whose states fit
 * FA_GROUP_BYTES of scratch and that still leaves two items per thread; 1 when rows
 * are whole lines. It changes only the loop order, not any row's arithmetic, so it
 * may depend on nth. */
static int64_t fa_heads(const loom_tensor *k, const loom_tensor *v, int64_t per_head_items, size_t head_bytes,
                        int nth) {
    const int64_t Hkv = k->ne[2];
    const bool shared = loom_row_size(k) % 64 || loom_row_size(v) % 64 || k->nb[2] % 64 || v->nb[2] % 64;
    if (!shared) return 1;
    for (int64_t hg = Hkv; hg > 1; hg--) {
        if (Hkv % hg) continue;
        if ((size_t)hg * head_bytes > FA_GROUP_BYTES) continue;
        if (per_head_items * (Hkv / hg) < 2 * (int64_t)nth) continue;
        return hg;
    }
    return 1;
}

static bool fa_plan(const loom_tensor *dst, int nth, fa_layout *out) {
    const loom_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2];
    if (!q || !k || !v || nth <= 0) return false;
    const loom_kernels *kt = loom_kernels_get();
    const int64_t Dk = q->ne[0], T = q->ne[1], H = q->ne[2], L = k->ne[1], Hkv = k->ne[2], Dv = v->ne[0];
    if (Hkv <= 0 || H % Hkv != 0 || H > 65536 || Dk > 65536 || Dv > 65536 || T <= 0) return false;
    const int64_t G = H / Hkv;
    out->G = G;
    out->max_bias = dst->src[3] && loom_get_op_param_f32(dst, 2) > 0.0f ? loom_get_op_param_f32(dst, 2) : 0.0f;
    out->mz_off = 0;
    out->v_trans = loom_tensor_is_transposed(v);
    out->p_bytes = 0;
    out->q_bytes = 0;
    out->HG = 1;
    out->head_bytes = 0;
    if (out->v_trans) {
        const loom_kernel_entry *e = &kt->dot[k->type], *ev = &kt->dot[v->type];
        size_t qb, pb;
        if (!e->vec_dot || loom_type_row_bytes(e->vec_dot_type, Dk, &qb) != LOOM_OK) return false;
        if (!ev->vec_dot || loom_type_row_bytes(ev->vec_dot_type, FA_TILE, &pb) != LOOM_OK) return false;
        out->q_bytes = fa_align(qb);
        out->p_bytes = fa_align(pb);
        out->TB = 1;
    } else {
        out->TB = G >= FA_BLOCK_ROWS ? 1 : FA_BLOCK_ROWS / G;
        if (out->TB > T) out->TB = T;
    }
    out->R = out->TB * G;
    out->Rp = round16(out->R);
    out->ms = (size_t)(out->Rp / G) + 16;
    out->n_blocks = (T + out->TB - 1) / out->TB;
    const int64_t base_items = out->n_blocks * Hkv;
    int64_t want = base_items >= FA_WANT_ITEMS ? 1 : (FA_WANT_ITEMS + base_items - 1) / base_items;
    int64_t maxc = (L + FA_MIN_CHUNK - 1) / FA_MIN_CHUNK;
    int64_t nc = want < maxc ? want : maxc;
    if (nc < 1) nc = 1;
    out->chunk_len = (L + nc - 1) / nc;
    if (out->chunk_len < 1) out->chunk_len = 1;
    out->n_chunks = (L + out->chunk_len - 1) / out->chunk_len;
    if (out->n_chunks < 1) out->n_chunks = 1;
    const size_t R = (size_t)out->R, Rp = (size_t)out->Rp;
    out->part_stride = R * ((size_t)Dv + 2);
    size_t b[9];
    if (out->v_trans) { /* G q rows, G score tiles, G partial states, G probability rows, p.V [G x Dv] */
        if (!fa_floats(R * FA_TILE, &b[0]) || !fa_floats(out->part_stride, &b[1]) ||
            !fa_floats(R * (size_t)Dv, &b[2]))
            return false;
        out->per_thread = R * out->q_bytes + b[0] + b[1] + R * out->p_bytes + b[2];
    } else { /* q rounding scratch; qT, kf, vf, sT, mT, M, S, f, acc */
        const loom_type qt = kt->dot[k->type].vec_dot_type;
        size_t qb, qf;
        if (!kt->from_float[qt] || loom_type_row_bytes(qt, Dk, &qb) != LOOM_OK || !fa_floats((size_t)Dk, &qf))
            return false;
        out->q_bytes = fa_align(qb) + qf;
        if (!fa_floats((size_t)Dk * Rp, &b[0]) || !fa_floats((size_t)FA_TILE * (size_t)Dk, &b[1]) ||
            !fa_floats((size_t)FA_TILE * (size_t)Dv, &b[2]) || !fa_floats(FA_TILE * Rp, &b[3]) ||
            !fa_floats(FA_TILE * out->ms, &b[4]) || !fa_floats(Rp, &b[5]) || !fa_floats(R * (size_t)Dv, &b[8]))
            return false;
        out->head_bytes = b[0] + 3 * b[5] + b[8];
        out->HG = fa_heads(k, v, out->n_blocks * out->n_chunks, out->head_bytes, nth);
        /* scratch for the group one thread would take (the largest: fa_heads never grows
         * with nth), so the work size planned for nth threads also covers the node run
         * on one thread (small nodes, exec.c) */
        const int64_t hg_max = fa_heads(k, v, out->n_blocks * out->n_chunks, out->head_bytes, 1);
        out->per_thread = out->q_bytes + b[1] + b[2] + b[3] + b[4] + (size_t)hg_max * out->head_bytes;
        if (out->max_bias > 0.0f) { /* ALiBi: a second mask tile (see fa_alibi) */
            out->mz_off = out->per_thread;
            out->per_thread += b[4];
        }
    }
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
 * (times the item's heads, each asked for alike) does not flush L2. */
#define FA_PREFETCH_MAX (256 * 1024)
#define FA_PREFETCH_TOKENS 4 /* longer batches read the same K/V for every token: cached */
static void fa_prefetch_item(const loom_tensor *k, const loom_tensor *v, const char *kbase, const char *vbase,
                             int64_t jb, int64_t je, bool v_trans, int64_t heads) {
    const size_t krow = loom_row_size(k), n = (size_t)(je - jb);
    size_t vbytes = v_trans ? n * loom_type_size(v->type) * (size_t)v->ne[0] : n * loom_row_size(v);
    if ((n * krow + vbytes) * (size_t)heads > FA_PREFETCH_MAX) return; /* heads: of the item, each asked alike */
    for (int64_t j = jb; j < je; j++) {
        const char *r = kbase + (size_t)j * k->nb[1];
        for (size_t o = 0; o < krow; o += 64) __builtin_prefetch(r + o, 0, 2);
        __builtin_prefetch(r + krow - 1, 0, 2); /* a row not a multiple of 64 bytes may end a line later */
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
            __builtin_prefetch(r + vrow - 1, 0, 2);
        }
    }
}

/* The tile's mask values for the block's tokens, mT[j * ms + tt] (0 without a mask);
 * returns whether any is not -inf (else the tile is skipped: no row sees a key). */
static bool fa_mask_tile(const loom_tensor *mask, int64_t j0, int64_t nj, int64_t tb0, int64_t nt, float *mT, size_t ms,
                         float *tmp) {
    if (!mask) {
        for (int64_t j = 0; j < nj; j++)
            for (int64_t tt = 0; tt < nt; tt++) mT[(size_t)j * ms + (size_t)tt] = 0.0f;
        return true;
    }
    bool any = false;
    for (int64_t tt = 0; tt < nt; tt++) {
        const float *row = tmp;
        if (mask->type == LOOM_TYPE_F16 && mask->nb[0] == 2) {
            loom_kernels_get()->f16_to_f32(nj, (const uint16_t *)((const char *)mask->data + (size_t)(tb0 + tt) * mask->nb[1]) + j0,
                                           tmp);
        } else if (mask->type == LOOM_TYPE_F32 && mask->nb[0] == 4) {
            row = (const float *)((const char *)mask->data + (size_t)(tb0 + tt) * mask->nb[1]) + j0;
        } else {
            for (int64_t j = 0; j < nj; j++) tmp[j] = mask_at(mask, j0 + j, tb0 + tt);
        }
        for (int64_t j = 0; j < nj; j++) {
            mT[(size_t)j * ms + (size_t)tt] = row[j];
            any = any || row[j] != -INFINITY;
        }
    }
    return any;
}

/* Rows [j0, j0 + n) of x (a K or V view; base: its kv head) as floats, D apart. */
static void fa_tile_rows(const loom_kernels *kt, const loom_tensor *x, const char *base, int64_t j0, int64_t n, int64_t D,
                         float *dst) {
    if (kt->fa_rows(x->type, n, D, base + (size_t)j0 * x->nb[1], x->nb[1], dst, (size_t)D)) return;
    for (int64_t j = 0; j < n; j++) row_to_f32(x->type, base + (size_t)(j0 + j) * x->nb[1], dst + (size_t)j * (size_t)D, D);
}

/* Scores of a tile soft-capped in place: x = softcap * tanh(x * scale / softcap) (the
 * scale folded in, so the softmax then runs with scale 1), as the explicit path's
 * scale, tanh, scale nodes compute them (the same tanh: the kernel table's). */
static void fa_softcap(float *sT, int64_t nj, int64_t R, int64_t Rp, float scale, float softcap) {
    const float pre = scale / softcap;
    if (R == Rp) { /* the tile is one contiguous run */
        loom_kernels_get()->tanh_f32(nj * Rp, sT, sT, pre, softcap);
        return;
    }
    for (int64_t j = 0; j < nj; j++) /* rows past R are padding: never read */
        loom_kernels_get()->tanh_f32(R, sT + (size_t)j * (size_t)Rp, sT + (size_t)j * (size_t)Rp, pre, softcap);
}

/* ALiBi for a tile of kv head g (block path): sT[j*Rp + r] = sT * sc + slope(h) * m, m =
 * mT[j*ms + r/G] (-inf where m is -inf), h = g*G + r%G, the slopes of loom_alibi_slope
 * (llama.cpp's order: scale, cap, then the bias). The softmax then runs with scale 1 and
 * mZ, mT's 0 / -inf pattern. */
static void fa_alibi(float *sT, int64_t nj, int64_t R, int64_t Rp, int64_t G, int64_t g, int64_t H, float sc,
                     float max_bias, const float *mT, size_t ms) {
    for (int64_t r = 0; r < R; r++) {
        const float slope = loom_alibi_slope(max_bias, g * G + r % G, H);
        const float *mr = mT + r / G;
        for (int64_t j = 0; j < nj; j++) {
            float *x = sT + (size_t)j * (size_t)Rp + (size_t)r;
            const float m = mr[(size_t)j * ms];
            *x = m == -INFINITY ? -INFINITY : *x * sc + slope * m;
        }
    }
}

/* out = acc / S for a row's final state (M, S, acc), the head's sink logit (when sink)
 * joining the normaliser: out = acc e^M / (S e^M + e^sink), computed against the larger
 * of M and sink. Without a sink, a row with no visible key (S = 0) gives NaN. */
static void fa_out_row(const loom_kernels *kt, const float *acc, float M, float S, const float *sink, int64_t Dv,
                       float *out) {
    float f = 1.0f;
    if (sink) {
        if (*sink > M) { /* M may be -inf: f = 0, the row is all sink */
            f = expf(M - *sink);
            S = S * f + 1.0f;
        } else {
            S += expf(*sink - M);
        }
    }
    if (S > 0.0f) { /* out = acc / sum as 0 + (f/sum) * acc: exactly the product */
        memset(out, 0, (size_t)Dv * sizeof(float));
        kt->axpy_f32(Dv, f / S, acc, out);
    } else {
        for (int64_t d = 0; d < Dv; d++) out[d] = NAN;
    }
}

/* Items of TB-token blocks and HG kv heads, v not transposed (see the file comment). */
static void fa_items_block(const loom_compute_params *p, loom_tensor *dst, const fa_layout *lay, float scale,
                           float softcap) {
    const loom_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *mask = dst->src[3];
    const float *sinks = dst->src[4] ? (const float *)dst->src[4]->data : NULL;
    const int64_t Dk = q->ne[0], T = q->ne[1], H = q->ne[2], L = k->ne[1], Hkv = k->ne[2], Dv = v->ne[0];
    const loom_kernels *kt = loom_kernels_get();
    const int64_t G = lay->G, NC = lay->n_chunks, TB = lay->TB, HG = lay->HG, NG = Hkv / HG;
    const size_t ms = lay->ms;
    char *ws = (char *)p->wdata + lay->part_bytes + (size_t)p->ith * lay->per_thread;
    const loom_type qt = kt->dot[k->type].vec_dot_type;
    size_t qrb = 0;
    loom_type_row_bytes(qt, Dk, &qrb); /* checked by fa_plan */
    char *qc = ws;                                              /* a q row in qt */
    float *qr = (float *)(ws + fa_align(qrb));                  /* ... and back to floats */
    float *kf = (float *)(ws + lay->q_bytes);
    float *vf = kf + fa_align((size_t)FA_TILE * (size_t)Dk * sizeof(float)) / sizeof(float);
    float *sT = vf + fa_align((size_t)FA_TILE * (size_t)Dv * sizeof(float)) / sizeof(float);
    float *mT = sT + fa_align((size_t)FA_TILE * (size_t)lay->Rp * sizeof(float)) / sizeof(float);
    char *heads = (char *)(mT + fa_align((size_t)FA_TILE * ms * sizeof(float)) / sizeof(float));
    float *mZ = lay->max_bias > 0.0f ? (float *)(ws + lay->mz_off) : NULL; /* ALiBi: mT as 0 / -inf */
    const size_t qta = fa_align((size_t)Dk * (size_t)lay->Rp * sizeof(float)) / sizeof(float);
    const size_t rpa = fa_align((size_t)lay->Rp * sizeof(float)) / sizeof(float);
    float *parts = (float *)p->wdata;
    float tmp[FA_TILE];
    /* mask columns >= pad are -inf in every tile row (tokens past a block: inert rows);
     * fa_mask_tile writes only the block's own columns, so they stay so until a shorter
     * block (the last one) needs more of them reset */
    size_t pad = 0;
    for (size_t i = 0; i < (size_t)FA_TILE * ms; i++) mT[i] = -INFINITY;

    const int64_t n_items = lay->n_blocks * NG * NC;
    for (int64_t item = p->ith; item < n_items; item += p->nth) {
        const int64_t c = item % NC, g0 = (item / NC) % NG * HG, b = item / (NC * NG);
        const int64_t jb = c * lay->chunk_len, je = jb + lay->chunk_len < L ? jb + lay->chunk_len : L;
        const int64_t tb0 = b * TB, nt = T - tb0 < TB ? T - tb0 : TB, R = nt * G, Rp = round16(R);
        /* each head's queries transposed (rows past R zero), fresh states */
        for (int64_t gi = 0; gi < HG; gi++) {
            const int64_t g = g0 + gi;
            float *qT = (float *)(heads + (size_t)gi * lay->head_bytes), *M = qT + qta, *S = M + rpa;
            float *acc = S + 2 * rpa;
            for (int64_t r = 0; r < Rp; r++) {
                const float *qrow = NULL;
                if (r < R) { /* q rounded through k's vec_dot_type, as a vec_dot of q and k rows (and llama.cpp,
                              * and the Vulkan kernel) sees it: F16 / BF16 / Q8_0 values of an F32 row */
                    qrow = (const float *)((const char *)q->data + (size_t)(tb0 + r / G) * q->nb[1] +
                                           (size_t)(g * G + r % G) * q->nb[2]);
                    if (qt != LOOM_TYPE_F32) {
                        kt->from_float[qt](qrow, qc, Dk);
                        row_to_f32(qt, qc, qr, Dk);
                        qrow = qr;
                    }
                }
                for (int64_t d = 0; d < Dk; d++) qT[(size_t)d * (size_t)Rp + (size_t)r] = qrow ? qrow[d] : 0.0f;
                M[r] = -INFINITY;
                S[r] = 0.0f;
            }
            memset(acc, 0, (size_t)R * (size_t)Dv * sizeof(float));
            if (T <= FA_PREFETCH_TOKENS)
                fa_prefetch_item(k, v, (const char *)k->data + (size_t)g * k->nb[2],
                                 (const char *)v->data + (size_t)g * v->nb[2], jb, je, false, HG);
        }
        if (pad > (size_t)nt) /* the mask columns of tokens past the block go back to -inf */
            for (int64_t j = 0; j < FA_TILE; j++)
                for (size_t tt = (size_t)nt; tt < pad; tt++) mT[(size_t)j * ms + tt] = -INFINITY;
        pad = (size_t)nt;

        for (int64_t j0 = jb; j0 < je; j0 += FA_TILE) {
            const int64_t nj = je - j0 < FA_TILE ? je - j0 : FA_TILE;
            /* a tile no key of which is visible to the block is skipped whole (causal
             * prompts: about half of them) */
            if (!fa_mask_tile(mask, j0, nj, tb0, nt, mT, ms, tmp)) continue;
            if (mZ)
                for (size_t i = 0; i < (size_t)FA_TILE * ms; i++) mZ[i] = mT[i] == -INFINITY ? -INFINITY : 0.0f;
            for (int64_t gi = 0; gi < HG; gi++) {
                const int64_t g = g0 + gi;
                float *qT = (float *)(heads + (size_t)gi * lay->head_bytes), *M = qT + qta, *S = M + rpa;
                float *f = S + rpa, *acc = f + rpa;
                fa_tile_rows(kt, k, (const char *)k->data + (size_t)g * k->nb[2], j0, nj, Dk, kf);
                kt->fa_qk(Dk, R, Rp, nj, qT, kf, (size_t)Dk, sT);
                if (softcap > 0.0f) fa_softcap(sT, nj, R, Rp, scale, softcap);
                if (mZ) {
                    fa_alibi(sT, nj, R, Rp, G, g, H, softcap > 0.0f ? 1.0f : scale, lay->max_bias, mT, ms);
                    kt->fa_softmax(nj, Rp, G, 1.0f, mZ, ms, sT, M, S, f);
                } else {
                    kt->fa_softmax(nj, Rp, G, softcap > 0.0f ? 1.0f : scale, mT, ms, sT, M, S, f);
                }
                fa_tile_rows(kt, v, (const char *)v->data + (size_t)g * v->nb[2], j0, nj, Dv, vf);
                kt->fa_pv(nj, R, Rp, Dv, sT, f, vf, (size_t)Dv, acc, (size_t)Dv);
            }
        }
        for (int64_t gi = 0; gi < HG; gi++) {
            const int64_t g = g0 + gi;
            const float *M = (const float *)(heads + (size_t)gi * lay->head_bytes) + qta, *S = M + rpa;
            const float *acc = S + 2 * rpa;
            if (NC == 1) {
                for (int64_t r = 0; r < R; r++) {
                    const int64_t h = g * G + r % G;
                    float *out = (float *)dst->data + ((size_t)(tb0 + r / G) * (size_t)H + (size_t)h) * (size_t)Dv;
                    fa_out_row(kt, acc + (size_t)r * (size_t)Dv, M[r], S[r], sinks ? sinks + h : NULL, Dv, out);
                }
            } else { /* the partial of (block, head, chunk), where the combine reads it */
                float *pt = parts + (size_t)((b * Hkv + g) * NC + c) * lay->part_stride;
                for (int64_t r = 0; r < R; r++) {
                    float *s = pt + (size_t)r * ((size_t)Dv + 2);
                    s[0] = M[r];
                    s[1] = S[r];
                    memcpy(s + 2, acc + (size_t)r * (size_t)Dv, (size_t)Dv * sizeof(float));
                }
            }
        }
    }
}

/* Items of one token, v transposed (see the file comment). */
static void fa_items_trans(const loom_compute_params *p, loom_tensor *dst, const fa_layout *lay, float scale,
                           float softcap) {
    const loom_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *mask = dst->src[3];
    const float *sinks = dst->src[4] ? (const float *)dst->src[4]->data : NULL;
    const float pre = softcap > 0.0f ? scale / softcap : 0.0f;
    const int64_t Dk = q->ne[0], T = q->ne[1], H = q->ne[2], L = k->ne[1], Hkv = k->ne[2], Dv = v->ne[0];
    const loom_kernels *kt = loom_kernels_get();
    const loom_kernel_entry *e = &kt->dot[k->type], *ev = &kt->dot[v->type];
    const int64_t G = lay->G, NC = lay->n_chunks;
    char *ws = (char *)p->wdata + lay->part_bytes + (size_t)p->ith * lay->per_thread;
    char *qc = ws;
    float *sc = (float *)(ws + (size_t)G * lay->q_bytes);
    float *st = (float *)((char *)sc + fa_align((size_t)G * FA_TILE * sizeof(float))); /* G x (M, S, acc[Dv]) */
    char *pc = (char *)st + fa_align(lay->part_stride * sizeof(float));
    float *pv = (float *)(pc + (size_t)G * lay->p_bytes);
    float *parts = (float *)p->wdata;
    const size_t sstride = (size_t)Dv + 2;
    const loom_type pvdt = ev->vec_dot_type;
    const bool p_in_place = pvdt == LOOM_TYPE_F32; /* f32 v: the scores are the activation */

    const int64_t n_items = T * Hkv * NC;
    for (int64_t item = p->ith; item < n_items; item += p->nth) {
        const int64_t c = item % NC, g = (item / NC) % Hkv, t = item / (NC * Hkv);
        const int64_t jb = c * lay->chunk_len, je = jb + lay->chunk_len < L ? jb + lay->chunk_len : L;
        for (int64_t hi = 0; hi < G; hi++) {
            const int64_t h = g * G + hi;
            const float *qrow = (const float *)((const char *)q->data + (size_t)t * q->nb[1] + (size_t)h * q->nb[2]);
            kt->from_float[e->vec_dot_type](qrow, qc + (size_t)hi * lay->q_bytes, Dk);
            float *s = st + (size_t)hi * sstride;
            s[0] = -INFINITY;
            s[1] = 0.0f;
            memset(s + 2, 0, (size_t)Dv * sizeof(float));
        }
        const char *kbase = (const char *)k->data + (size_t)g * k->nb[2];
        const char *vbase = (const char *)v->data + (size_t)g * v->nb[2];
        if (T <= FA_PREFETCH_TOKENS) fa_prefetch_item(k, v, kbase, vbase, jb, je, true, 1);

        for (int64_t j0 = jb; j0 < je; j0 += FA_TILE) {
            const int64_t j1 = j0 + FA_TILE < je ? j0 + FA_TILE : je, nj = j1 - j0;
            /* the tile's mask row for token t (0 without a mask), read once; a tile no
             * key of which is visible is skipped */
            float mrow[FA_TILE];
            bool any = !mask;
            for (int64_t j = j0; j < j1; j++) {
                mrow[j - j0] = mask ? mask_at(mask, j, t) : 0.0f;
                any = any || mrow[j - j0] != -INFINITY;
            }
            if (!any) continue;
            /* scores of the tile's keys x the group's heads: sc[hi * FA_TILE + j - j0] */
            if (!kt->gemm || !kt->gemm(k->type, Dk, kbase + (size_t)j0 * k->nb[1], k->nb[1], qc, lay->q_bytes, sc,
                                       FA_TILE, 0, nj, 0, G)) {
                for (int64_t j = j0; j < j1; j++)
                    for (int64_t hi = 0; hi < G; hi++)
                        e->vec_dot(Dk, &sc[hi * FA_TILE + (j - j0)], kbase + (size_t)j * k->nb[1],
                                   qc + (size_t)hi * lay->q_bytes);
            }
            /* online softmax: scale and mask each head's scores, then rescale its state
             * to the tile's max (8 partial maxima: no serial compare chain) */
            for (int64_t hi = 0; hi < G; hi++) {
                float *s = st + (size_t)hi * sstride, *sv = sc + hi * FA_TILE;
                float mx[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
                const float slope = lay->max_bias > 0.0f ? loom_alibi_slope(lay->max_bias, g * G + hi, H) : 1.0f;
                if (softcap > 0.0f) kt->tanh_f32(nj, sv, sv, pre, softcap);
                for (int64_t j = 0; j < nj; j++) {
                    const float sj = softcap > 0.0f ? sv[j] : sv[j] * scale;
                    const float x = mrow[j] == -INFINITY ? -INFINITY : sj + slope * mrow[j];
                    sv[j] = x;
                    if (x > mx[j & 7]) mx[j & 7] = x;
                }
                float mt = mx[0];
                for (int i = 1; i < 8; i++)
                    if (mx[i] > mt) mt = mx[i];
                if (mt > s[0]) {
                    if (s[0] != -INFINITY) { /* else the state is still all zeros */
                        const float fr = expf(s[0] - mt);
                        s[1] *= fr;
                        for (int64_t d = 0; d < Dv; d++) s[2 + d] *= fr;
                    }
                    s[0] = mt;
                }
                s[1] += kt->exp_sum_f32(nj, sc + hi * FA_TILE, s[0]);
            }
            /* p.V for the tile: rows d of the transposed v (the tile's keys are
             * contiguous in each) x the G probability rows */
            const char *act = (const char *)sc;
            size_t as = FA_TILE * sizeof(float);
            if (!p_in_place) {
                for (int64_t hi = 0; hi < G; hi++)
                    kt->from_float[pvdt](sc + hi * FA_TILE, pc + (size_t)hi * lay->p_bytes, nj);
                act = pc;
                as = lay->p_bytes;
            }
            const char *vt0 = vbase + (size_t)j0 * v->nb[1];
            if (!kt->gemm || !kt->gemm(v->type, nj, vt0, v->nb[0], act, as, pv, (size_t)Dv, 0, Dv, 0, G)) {
                for (int64_t d = 0; d < Dv; d++)
                    for (int64_t hi = 0; hi < G; hi++)
                        ev->vec_dot(nj, &pv[hi * Dv + d], vt0 + (size_t)d * v->nb[0], act + (size_t)hi * as);
            }
            for (int64_t hi = 0; hi < G; hi++) /* acc += p.V (a * 1 is exact: a plain add) */
                kt->axpy_f32(Dv, 1.0f, pv + hi * Dv, st + (size_t)hi * sstride + 2);
        }
        if (NC == 1) {
            for (int64_t hi = 0; hi < G; hi++) {
                const float *s = st + (size_t)hi * sstride;
                const int64_t h = g * G + hi;
                float *out = (float *)dst->data + ((size_t)t * (size_t)H + (size_t)h) * (size_t)Dv;
                fa_out_row(kt, s + 2, s[0], s[1], sinks ? sinks + h : NULL, Dv, out);
            }
        } else {
            memcpy(parts + (size_t)item * lay->part_stride, st, lay->part_stride * sizeof(float));
        }
    }
}

void loom_cpu_op_flash_attn(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2];
    const float scale = loom_get_op_param_f32(dst, 0), softcap = loom_get_op_param_f32(dst, 1);
    const float *sinks = dst->src[4] ? (const float *)dst->src[4]->data : NULL;
    const int64_t T = q->ne[1], H = q->ne[2], Hkv = k->ne[2], Dv = v->ne[0];
    if (loom_nelements(dst) == 0) return;
    const loom_kernels *kt = loom_kernels_get();
    fa_layout lay;
    if (!fa_plan(dst, p->nth, &lay) || p->wsize < lay.total) {
        loom_cpu_fail(p, LOOM_ERR_INTERNAL);
        return;
    }
    if (lay.v_trans) {
        const loom_kernel_entry *e = &kt->dot[k->type], *ev = &kt->dot[v->type];
        if (!kt->from_float[e->vec_dot_type] ||
            (ev->vec_dot_type != LOOM_TYPE_F32 && !kt->from_float[ev->vec_dot_type])) {
            loom_cpu_fail(p, LOOM_ERR_INTERNAL);
            return;
        }
        fa_items_trans(p, dst, &lay, scale, softcap);
    } else {
        fa_items_block(p, dst, &lay, scale, softcap);
    }
    const int64_t G = lay.G, NC = lay.n_chunks, TB = lay.TB;
    if (NC == 1) return;

    /* phase 2: combine the chunks of each (t, h) in chunk order */
    loom_cpu_barrier(p);
    const float *parts = (const float *)p->wdata;
    const size_t sstride = (size_t)Dv + 2;
    const int64_t n_out = T * H;
    for (int64_t o = p->ith; o < n_out; o += p->nth) {
        const int64_t t = o / H, h = o % H, g = h / G, r = (t % TB) * G + h % G;
        const float *base = parts + (size_t)(((t / TB) * Hkv + g) * NC) * lay.part_stride + (size_t)r * sstride;
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
        float fs = 1.0f; /* the sink as in fa_out_row */
        if (sinks) {
            if (sinks[h] > M) {
                fs = expf(M - sinks[h]);
                S = S * fs + 1.0f;
            } else {
                S += expf(sinks[h] - M);
            }
        }
        const float inv = S > 0.0f ? fs / S : NAN;
        for (int64_t d = 0; d < Dv; d++) out[d] = S > 0.0f ? out[d] * inv : NAN;
    }
}
