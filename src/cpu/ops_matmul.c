/*
 * ops_matmul.c - CPU kernels for MUL_MAT and MUL_MAT_ID.
 *
 * MUL_MAT (dst F32 [M, N, B2, B3] = a[K, M, A2, A3]^T x b[K, N, B2, B3]):
 *   phase 1: every activation row of b is converted ONCE into the weight type's
 *            vec_dot_type (kernel table) in the work buffer, rows split over the
 *            threads (skipped when that type is F32: b is read in place); barrier.
 *   phase 1b: (F16 / BF16 weight matrices, prompt shapes, levels with gemm_float_pack)
 *            those rows are packed into k-major float panels of 32 columns, once per
 *            product, panels split over the threads; barrier. The tiles then run
 *            gemm_float_packed on them (mm_packed). BF16 weights on a level with
 *            gemm_bf16_pack (avx512bf16) get k-pair BF16 panels and gemm_bf16_packed.
 *   phase 2: the output is cut into tiles (row chunk of a x column block of b) per
 *            (i2, i3) slice; thread ith takes tiles ith, ith+nth, ... The tile grid
 *            depends only on the shapes, and every dst element is one vec_dot (or the
 *            gemm tile function), so results do not depend on the thread count.
 *   mask hint (src[2], core/tensor.h loom_mm_mask_role; attention for prompts): phase 1
 *            also finds, per column, the keys its mask row leaves visible; a tile
 *            then computes only the score rows some column of it sees (the others
 *            are written 0), or only the KC-aligned k range holding every nonzero
 *            probability of its columns (mm_mask_apply).
 * MUL_MAT_ID: the (slot, token) pairs grouped by expert; prompt shapes gather each
 *   expert's activation rows contiguously and run the gemm tile function over them;
 *   decode shapes split the active experts' rows over the threads (see below).
 */
#include "cpu/kernels.h"
#include "cpu/ops.h"
#include "quant/repack.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define MM_ALIGN 64
#define MM_COL_BLOCK 16 /* columns of b per tile */

static size_t align_up(size_t x) {
    if (x > SIZE_MAX - (MM_ALIGN - 1)) return SIZE_MAX;
    return (x + (MM_ALIGN - 1)) & ~(size_t)(MM_ALIGN - 1);
}

/* Bytes of a K-element row in type t, or SIZE_MAX when K is not a whole number of blocks. */
static size_t row_bytes(loom_type t, int64_t K) {
    size_t rb;
    if (loom_type_row_bytes(t, K, &rb) != LOOM_OK) return SIZE_MAX;
    return rb;
}

/* Checked a*b (SIZE_MAX on overflow). */
static size_t mul_sz(size_t a, size_t b) {
    if (a != 0 && b > SIZE_MAX / a) return SIZE_MAX;
    return a * b;
}
static size_t add_sz(size_t a, size_t b) { return (a > SIZE_MAX - b) ? SIZE_MAX : a + b; }

/* Bytes needed to hold the converted activation rows of b (0 if b is used in place). */
static size_t act_bytes(const loom_tensor *a, const loom_tensor *b, const loom_kernels *kt) {
    const loom_kernel_entry *e = &kt->dot[a->type];
    if (!e->vec_dot || e->vec_dot_type == LOOM_TYPE_F32) return 0;
    size_t rb = row_bytes(e->vec_dot_type, a->ne[0]);
    if (rb == SIZE_MAX) return 0; /* the kernel reports the error */
    return align_up(mul_sz(rb, (size_t)loom_nrows(b)));
}

/* BF16 weights on a level with pair panels (kernels.h gemm_bf16_pack): those instead of
 * the float panels, in the same (float-sized) buffer. */
static bool mm_bf16dp(const loom_tensor *a, const loom_kernels *kt) {
    return a->type == LOOM_TYPE_BF16 && kt->gemm_bf16_pack && kt->gemm_bf16_packed;
}

/* The product goes through the level's packed-activation F16 / BF16 path (kernels.h
 * gemm_float_pack): prompt shapes (LOOM_GEMM_PACKED_MIN_COLS columns or more) of
 * row-major F16 / BF16 weights whose vec_dot_type is their own type, with one slice
 * (weight matrices). Batched products (attention over an F16 cache: a slice per head)
 * keep the row tiles: their activations are [context x tokens x heads] and packed
 * floats would double the work buffer the plan accounts for them (generate.c). */
static bool mm_packed(const loom_tensor *a, const loom_tensor *b, const loom_kernels *kt) {
    return ((kt->gemm_float_pack && kt->gemm_float_packed) || mm_bf16dp(a, kt)) && (a->flags & LOOM_TF_REPACKED) == 0 &&
           (a->type == LOOM_TYPE_F16 || a->type == LOOM_TYPE_BF16) && kt->dot[a->type].vec_dot_type == a->type &&
           b->ne[1] >= LOOM_GEMM_PACKED_MIN_COLS && b->ne[2] == 1 && b->ne[3] == 1;
}

/* Floats of one slice's packed panels, and the bytes of all slices' (0 when the
 * product does not use the packed path), placed after the activation rows. */
static size_t packed_slice_floats(const loom_tensor *a, const loom_tensor *b) {
    const size_t panels = (size_t)((b->ne[1] + LOOM_GEMM_PANEL - 1) / LOOM_GEMM_PANEL);
    return mul_sz(mul_sz(panels, LOOM_GEMM_PANEL), (size_t)a->ne[0]);
}
static size_t packed_bytes(const loom_tensor *a, const loom_tensor *b, const loom_kernels *kt) {
    if (!mm_packed(a, b, kt)) return 0;
    return align_up(mul_sz(mul_sz(packed_slice_floats(a, b), sizeof(float)), (size_t)(b->ne[2] * b->ne[3])));
}

/* ------------------------------------------------------------ the mask hint */

/* dst's hint role (core/tensor.h; NONE without a mask). */
static int mm_mask_role(const loom_tensor *dst) {
    const int r = dst->src[2] ? loom_get_op_param_i32(dst, 1) : LOOM_MM_MASK_NONE;
    return r == LOOM_MM_MASK_ROWS || r == LOOM_MM_MASK_K ? r : LOOM_MM_MASK_NONE;
}

/* Bytes of the per-column ranges (two int64 per column of b), after the packed panels. */
static size_t mask_bytes(const loom_tensor *dst) {
    if (!mm_mask_role(dst)) return 0;
    return align_up(mul_sz((size_t)dst->src[1]->ne[1], 2 * sizeof(int64_t)));
}

/* rg[2j], rg[2j + 1] := the first index and one past the last of mask row j that is
 * not -inf, for columns [j0, j1). A row with every entry -inf gets the whole [0, L)
 * (nothing skipped: the hint never decides what such a row gives; the softmax makes
 * it zeros, or all-sink). */
static void mask_ranges(const loom_tensor *m, int64_t *rg, int64_t j0, int64_t j1) {
    const int64_t L = m->ne[0];
    for (int64_t j = j0; j < j1; j++) {
        const char *row = (const char *)m->data + (size_t)j * m->nb[1];
        int64_t lo = 0, hi = L;
        if (m->type == LOOM_TYPE_F16) {
            const uint16_t *r = (const uint16_t *)row, ninf = 0xFC00; /* F16 -inf */
            while (lo < L && r[lo] == ninf) lo++;
            while (hi > lo && r[hi - 1] == ninf) hi--;
        } else {
            const float *r = (const float *)row;
            while (lo < L && r[lo] == -INFINITY) lo++;
            while (hi > lo && r[hi - 1] == -INFINITY) hi--;
        }
        if (lo >= hi) lo = 0, hi = L;
        rg[2 * j] = lo;
        rg[2 * j + 1] = hi;
    }
}

/* Activations of at most this many rows are converted by every thread into its own
 * copy (no barrier between conversion and product: decode shapes). */
#define MM_PRIVATE_ACT_ROWS 4

size_t loom_cpu_work_size_mul_mat(const loom_tensor *dst, int nth) {
    const loom_tensor *a = dst->src[0], *b = dst->src[1];
    if (!a || !b) return 0;
    const loom_kernels *kt = loom_kernels_get();
    size_t ab = act_bytes(a, b, kt);
    if (loom_nrows(b) <= MM_PRIVATE_ACT_ROWS && nth > 1) return mul_sz(ab, (size_t)nth);
    return add_sz(add_sz(ab, packed_bytes(a, b, kt)), mask_bytes(dst));
}

/* Columns of b per tile: all of them for matrix x vector shapes; for prompt shapes a
 * block of MM_PANEL_COLS so a tile's weight rows (rc x K) and activation rows stay in
 * L2 while every weight row is reused across the whole column block. */
#define MM_PANEL_COLS 64
#define MM_MIN_TILE_MACS 65536

/* Row chunk of a per tile: a multiple of 4 (the gemm micro-tile height), of 16 for
 * repacked weights (one interleaved row group). A row's result never depends on the
 * chunking (tiles split rows, not dot products), so results do not depend on nth. */
static int64_t mm_row_chunk(int64_t M, int64_t n_slices, int64_t N, int64_t K, bool repacked, int nth) {
    const int64_t ns = n_slices > 0 ? n_slices : 1;
    if (N <= 4) {
        /* matrix x vector (decode): few large contiguous row ranges, so each thread
         * streams long runs of weight rows (hardware prefetch) and claims tiles
         * rarely; a multiple of 16 rows so tiles never share an output cache line.
         * (A single 2-D slice with a counter, the usual decode product, is split by
         * mm_own_rows instead, whatever the layout; these chunks serve the rest.)
         * Repacked weights: one range per thread (Q4_0 1.1B tg64, 2 threads, tiles per
         * matrix 2 / 4 / 8 / 16, three interleaved rounds on the noisy VM: 74-77 /
         * 74-77 / 72 / 68 tok/s); with a counter and several threads the group function
         * refines this into own rows plus a shared pool (mm_own_rows). */
        int64_t tw = (repacked ? (nth > 0 ? nth : 1) : 32) / ns;
        if (tw < 1) tw = 1;
        int64_t rcd = (M + tw - 1) / tw;
        rcd = (rcd + 15) & ~(int64_t)15;
        if (rcd < 16) rcd = 16;
        if (!repacked && rcd > 512) rcd = 512;
        return rcd;
    }
    int64_t tiles_wanted = 256 / ns;
    if (tiles_wanted < 1) tiles_wanted = 1;
    int64_t rc = (M + tiles_wanted - 1) / tiles_wanted;
    rc = (rc + 3) & ~(int64_t)3;
    if (rc < 4) rc = 4;
    if (rc > 64) rc = 64;
    /* small products (attention over a short context: K = head size or context length,
     * a few columns per slice): at least MM_MIN_TILE_MACS per tile, or the per-call
     * cost of the tile function dominates (decode attention went from 32-64 tiles of
     * 4 rows per node to one per slice) */
    const int64_t cols = N < MM_PANEL_COLS ? N : MM_PANEL_COLS;
    if (K > 0 && K * cols * rc < MM_MIN_TILE_MACS) {
        rc = (MM_MIN_TILE_MACS / (K * cols) + 3) & ~(int64_t)3;
        if (rc > M) rc = (M + 3) & ~(int64_t)3;
    }
    if (repacked) {
        rc = (rc + LOOM_REPACK_ROWS - 1) / LOOM_REPACK_ROWS * LOOM_REPACK_ROWS;
        /* tall tiles (activation preparation is per call, see LOOM_MM_REPACKED_ROWS):
         * the tallest of 256, 128, 64, 32 rows that still leaves >= 8 tiles and >= 2
         * per thread (a K / V projection of 256 rows on 16 threads: 32-row tiles, not
         * 8 tiles for 16 threads) */
        const int64_t panels = (N + MM_PANEL_COLS - 1) / MM_PANEL_COLS;
        const int64_t want = nth > 4 ? 2 * (int64_t)nth : 8;
        for (int64_t tall = LOOM_MM_REPACKED_ROWS; tall > rc; tall /= 2)
            if (ns * panels * ((M + tall - 1) / tall) >= want) {
                rc = tall;
                break;
            }
    }
    return rc;
}

/* Phase 1 shared by MUL_MAT and MUL_MAT_ID: convert b's rows [r0, r1) (flattened
 * (i1, i2, i3) order) into vdt rows of rb bytes in wdata. */
static void convert_rows(const loom_tensor *b, loom_from_float_fn ff, char *wdata, size_t rb, int64_t K,
                         int ith, int nth) {
    const int64_t n1 = b->ne[1], n2 = b->ne[2];
    int64_t r0, r1;
    loom_cpu_split(loom_nrows(b), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1 = r % n1, i2 = (r / n1) % n2, i3 = r / (n1 * n2);
        const float *src = (const float *)loom_row_ptr(b, i1, i2, i3);
        ff(src, wdata + (size_t)r * rb, K);
    }
}

/* One MUL_MAT of a job: shapes, kernels and its tile grid (functions of the shapes
 * only, so every thread computes the same plan). */
typedef struct mm_plan {
    loom_tensor *dst;
    const loom_tensor *a, *b;
    const loom_kernel_entry *e;
    loom_type vdt;
    int64_t K, M, N, B2, B3, r2, r3;
    size_t rb;
    bool in_place, repacked, packed; /* packed: the gemm_float_packed path */
    int64_t rc, n_rchunks, pc, n_panels;
    int64_t n_tiles; /* 0: nothing left to do (empty output, or K == 0 and zero-filled) */
} mm_plan;

/* Check dst and plan its tiles. Empty dot products (K == 0) are written here (this
 * thread's share) and leave no tiles. false: failed (reported through p). */
static bool mm_prepare(const loom_compute_params *p, const loom_kernels *kt, loom_tensor *dst, mm_plan *pl) {
    const loom_tensor *a = dst->src[0], *b = dst->src[1];
    const loom_kernel_entry *e = &kt->dot[a->type];
    const int64_t K = a->ne[0], M = a->ne[1], N = b->ne[1];
    const int64_t B2 = b->ne[2], B3 = b->ne[3];
    float *out = (float *)dst->data;
    memset(pl, 0, sizeof *pl);
    pl->dst = dst;
    pl->a = a;
    pl->b = b;
    pl->e = e;
    pl->vdt = e->vec_dot_type;
    pl->K = K;
    pl->M = M;
    pl->N = N;
    pl->B2 = B2;
    pl->B3 = B3;
    pl->r2 = B2 / a->ne[2];
    pl->r3 = B3 / a->ne[3];

    if (loom_nelements(dst) == 0) return true;
    if (K == 0) { /* empty dot products */
        int64_t n = loom_nelements(dst), i0, i1;
        loom_cpu_split(n, p->ith, p->nth, &i0, &i1);
        for (int64_t i = i0; i < i1; i++) out[i] = 0.0f;
        return true;
    }
    const loom_type vdt = e->vec_dot_type;
    const size_t rb = e->vec_dot ? row_bytes(vdt, K) : SIZE_MAX;
    const bool in_place = vdt == LOOM_TYPE_F32;
    if (!e->vec_dot || rb == SIZE_MAX || (!in_place && !kt->from_float[vdt]) ||
        (!in_place && p->wsize < act_bytes(a, b, kt))) {
        loom_cpu_fail(p, e->vec_dot ? LOOM_ERR_INTERNAL : LOOM_ERR_UNSUPPORTED);
        return false;
    }
    /* weights in the row-interleaved layout: whole 16-row groups per tile */
    const bool repacked = (a->flags & LOOM_TF_REPACKED) != 0;
    if (repacked && (M % LOOM_REPACK_ROWS != 0 || !loom_repack_type_ok(a->type) ||
                     vdt != loom_repack_act_type(a->type) || a->ne[2] != 1 || a->ne[3] != 1)) {
        loom_cpu_fail(p, LOOM_ERR_UNSUPPORTED);
        return false;
    }
    pl->rb = rb;
    pl->in_place = in_place;
    pl->repacked = repacked;
    pl->packed = !in_place && mm_packed(a, b, kt) && p->wsize >= add_sz(act_bytes(a, b, kt), packed_bytes(a, b, kt));
    const int64_t n_slices = B2 * B3;
    pl->rc = mm_row_chunk(M, n_slices, N, K, repacked, p->nth);
    if (N > 4 && !repacked && (a->type == LOOM_TYPE_F16 || a->type == LOOM_TYPE_BF16)) {
        /* F16/BF16 gemm tiles convert the activation panel to float per call: taller
         * tiles (32 rows) amortise it while that leaves >= 16 tiles */
        const int64_t panels = (N + MM_PANEL_COLS - 1) / MM_PANEL_COLS;
        if (pl->rc < 32 && n_slices * panels * ((M + 31) / 32) >= 16) pl->rc = 32;
    }
    pl->pc = N <= MM_PANEL_COLS ? N : MM_PANEL_COLS;
    if (N >= 16 && !repacked && (a->type == LOOM_TYPE_F16 || a->type == LOOM_TYPE_BF16) && kt->gemm_float_rows > 0 &&
        kt->gemm_float_cols > 0) {
        /* a level that packs both operands per call (amx) wants larger tiles: the
         * largest of (rows, cols), (rows / 2, cols / 2), ... (not below 32 x 64) that
         * leaves >= 16 tiles */
        for (int64_t rcw = kt->gemm_float_rows, pcw = kt->gemm_float_cols; rcw >= 32 && pcw >= 64; rcw /= 2, pcw /= 2) {
            const int64_t pc = N <= pcw ? N : pcw;
            if (n_slices * ((N + pc - 1) / pc) * ((M + rcw - 1) / rcw) >= 16) {
                if (pl->rc < rcw) pl->rc = (rcw + 3) & ~(int64_t)3;
                pl->pc = pc;
                break;
            }
        }
    }
    if (N >= 16 && !repacked && kt->gemm_tile_rows[a->type] > 0 && kt->gemm_tile_cols[a->type] > 0) {
        /* the same for types whose gemm decodes the weights once per call (the grid IQ
         * tiles): the decoding of a super-block is shared by the columns of a call */
        for (int64_t rcw = kt->gemm_tile_rows[a->type], pcw = kt->gemm_tile_cols[a->type]; rcw >= 16 && pcw >= 64;
             rcw /= 2, pcw /= 2) {
            const int64_t pc = N <= pcw ? N : pcw;
            if (n_slices * ((N + pc - 1) / pc) * ((M + rcw - 1) / rcw) >= 16) {
                if (pl->rc < rcw) pl->rc = rcw;
                pl->pc = pc;
                break;
            }
        }
    }
    if (N > MM_PANEL_COLS && repacked && kt->gemm_tile_cols[a->type] > MM_PANEL_COLS) {
        /* repacked types whose prompt tile still prepares the weights per call (Q4_1,
         * Q5_0, Q5_1: kernels_int8_amx.c amx_legacy, the avx512vnni lg16 tile): their
         * wider panel while that leaves >= 16 tiles (1.1B Q4_1 pp512, amx, 2 threads,
         * three interleaved rounds: 289-300 -> 299-313 t/s) */
        const int64_t pcw = kt->gemm_tile_cols[a->type], pc = N <= pcw ? N : pcw;
        if (n_slices * ((N + pc - 1) / pc) * ((M + pl->rc - 1) / pl->rc) >= 16) pl->pc = pc;
    }
    pl->n_rchunks = (M + pl->rc - 1) / pl->rc;
    pl->n_panels = (N + pl->pc - 1) / pl->pc;
    pl->n_tiles = n_slices * pl->n_rchunks * pl->n_panels;
    return true;
}

/* What the tiles of one job share: kernels, the activation (converted or in place). */
typedef struct mm_ctx {
    const loom_kernels *kt;
    const loom_tensor *b;
    const char *act;
    const float *packed; /* the packed panels of every slice (NULL: none) */
    int64_t K;
    size_t rb;
    bool in_place;
    int mask_role;         /* the hint honoured (a group of one), else NONE */
    const int64_t *ranges; /* its per-column ranges (mask_ranges) */
} mm_ctx;

/* The hint on tile rows [*i0, *i1) x columns [pj0, pj1): ROWS narrows the rows to
 * those some column sees (multiples of 4 kept) and writes 0 to the rest; K narrows the
 * dot products to [*k0, *k0 + *kl), whole LOOM_GEMM_PACKED_KC chunks of k (only zero
 * probabilities are left out, and every kernel's treatment of an index repeats within
 * such a chunk, so the sums are the full ones: test_cpu_attn_mask_hint). false: nothing
 * left to compute. */
static bool mm_mask_apply(const mm_ctx *mc, const mm_plan *pl, float *c, size_t ldc, int64_t *i0, int64_t *i1,
                          int64_t pj0, int64_t pj1, int64_t *k0, int64_t *kl) {
    int64_t lo = INT64_MAX, hi = 0;
    for (int64_t j = pj0; j < pj1; j++) {
        if (mc->ranges[2 * j] < lo) lo = mc->ranges[2 * j];
        if (mc->ranges[2 * j + 1] > hi) hi = mc->ranges[2 * j + 1];
    }
    if (mc->mask_role == LOOM_MM_MASK_ROWS) {
        if (pl->repacked) return true; /* whole 16-row groups: never the case for a cache */
        lo &= ~(int64_t)3;
        hi = (hi + 3) & ~(int64_t)3;
        /* clamped to the tile: [*i0, lo) and [hi, *i1) are zeroed, never rows of another */
        lo = lo < *i0 ? *i0 : lo > *i1 ? *i1 : lo;
        hi = hi > *i1 ? *i1 : hi < lo ? lo : hi;
        if (lo == *i0 && hi == *i1) return true;
        for (int64_t j = pj0; j < pj1; j++) {
            float *cj = c + (size_t)j * ldc;
            for (int64_t i = *i0; i < lo; i++) cj[i] = 0.0f;
            for (int64_t i = hi; i < *i1; i++) cj[i] = 0.0f;
        }
        *i0 = lo;
        *i1 = hi;
        return lo < hi;
    }
    /* K: element-addressed rows (F32 / F16 / BF16 caches and activations), not the
     * packed panels (their chunks are laid out for the whole k) */
    if (pl->packed || pl->repacked || loom_blck_size(pl->a->type) != 1 || loom_blck_size(pl->vdt) != 1) return true;
    const int64_t KC = LOOM_GEMM_PACKED_KC;
    lo = lo / KC * KC;
    hi = hi > mc->K - KC ? mc->K : (hi + KC - 1) / KC * KC;
    if (hi <= lo) return true; /* not reached: ranges are never empty */
    *k0 = lo;
    *kl = hi - lo;
    return true;
}

/* Rows [i0, i1) x columns [pj0, pj1) of slice `slice` of one member. The whole panel
 * goes to the tile function (it tiles columns itself and amortises per-call work such
 * as weight transposes over all of them); without one (or when it declines), vec_dot
 * over column blocks of MM_COL_BLOCK. */
static void mm_tile(const mm_ctx *mc, const mm_plan *pl, int64_t slice, int64_t i0, int64_t i1, int64_t pj0,
                    int64_t pj1) {
    const loom_kernels *kt = mc->kt;
    const loom_tensor *a = pl->a, *b = mc->b;
    const int64_t N = pl->N, B2 = pl->B2;
    int64_t K = mc->K;
    const int64_t i2 = slice % B2, i3 = slice / B2;
    const char *w = (const char *)a->data + (size_t)(i2 / pl->r2) * a->nb[2] + (size_t)(i3 / pl->r3) * a->nb[3];
    const size_t w_stride = a->nb[1];
    const char *ab;
    size_t a_stride;
    if (mc->in_place) {
        ab = (const char *)b->data + (size_t)i2 * b->nb[2] + (size_t)i3 * b->nb[3];
        a_stride = b->nb[1];
    } else {
        ab = mc->act + (size_t)(i2 + B2 * i3) * (size_t)N * mc->rb;
        a_stride = mc->rb;
    }
    const size_t ldc = (size_t)pl->M;
    float *c = (float *)pl->dst->data + (size_t)(i2 + B2 * i3) * (size_t)N * ldc;
    if (mc->mask_role) {
        int64_t k0 = 0, kl = K;
        if (!mm_mask_apply(mc, pl, c, ldc, &i0, &i1, pj0, pj1, &k0, &kl)) return;
        if (kl != K) {
            w += (size_t)k0 * loom_type_size(a->type);
            ab += (size_t)k0 * loom_type_size(pl->vdt);
            K = kl;
        }
    }
    if (pl->packed && mc->packed) {
        const float *pk = mc->packed + (size_t)slice * packed_slice_floats(a, b);
        if (mm_bf16dp(a, kt) ? kt->gemm_bf16_packed(a->type, K, w, w_stride, (const uint32_t *)pk, c, ldc, i0, i1, pj0, pj1)
                             : kt->gemm_float_packed(a->type, K, w, w_stride, pk, c, ldc, i0, i1, pj0, pj1))
            return;
    }
    if (pl->repacked) {
        /* a level without this type's layout declines: the reference has every one */
        if (!kt->gemm_repacked(a->type, K, w, w_stride, ab, a_stride, c, ldc, i0, i1, pj0, pj1))
            (void)loom_kernels_scalar()->gemm_repacked(a->type, K, w, w_stride, ab, a_stride, c, ldc, i0, i1, pj0,
                                                       pj1);
        return;
    }
    if (kt->gemm && kt->gemm(a->type, K, w, w_stride, ab, a_stride, c, ldc, i0, i1, pj0, pj1)) return;
    for (int64_t j0 = pj0; j0 < pj1; j0 += MM_COL_BLOCK) {
        int64_t j1 = j0 + MM_COL_BLOCK < pj1 ? j0 + MM_COL_BLOCK : pj1;
        for (int64_t i = i0; i < i1; i++) {
            const void *wr = w + (size_t)i * w_stride;
            for (int64_t j = j0; j < j1; j++)
                pl->e->vec_dot(K, &c[(size_t)j * ldc + (size_t)i], wr, ab + (size_t)j * a_stride);
        }
    }
}

/* Matrix x vector: thread k's range of rows is [*r0, *re), 16-row groups split
 * evenly (the last group may be short: rows end at M); it streams [*r0, *r1) itself and
 * leaves the last MM_POOL_SHARE/16 of it (rounded up to groups) to the shared pool. Pool of
 * 1 / 2 / 3 / 5 sixteenths and none, 2 threads, 4 interleaved rounds of Q4_0 tg64:
 * 74-78 / 69-77 / 67-75 / 66-68 / 74-78 tok/s; Q4_K_M: 1 = 78-81, 3 = 76-77. */
#define MM_POOL_SHARE 1
#define MM_POOL_UNITS 4 /* 16-row groups per pool chunk */
static void mm_own_rows(int64_t M, int k, int nth, int64_t *r0, int64_t *r1, int64_t *re) {
    const int64_t units = (M + LOOM_REPACK_ROWS - 1) / LOOM_REPACK_ROWS;
    const int64_t u0 = units * k / nth, u1 = units * (k + 1) / nth;
    const int64_t tail = ((u1 - u0) * MM_POOL_SHARE + 15) / 16;
    *r0 = u0 * LOOM_REPACK_ROWS < M ? u0 * LOOM_REPACK_ROWS : M;
    *r1 = (u1 - tail) * LOOM_REPACK_ROWS < M ? (u1 - tail) * LOOM_REPACK_ROWS : M;
    *re = u1 * LOOM_REPACK_ROWS < M ? u1 * LOOM_REPACK_ROWS : M;
}

bool loom_cpu_mul_mat_groupable(const loom_tensor *head, const loom_tensor *t) {
    if (head->op != LOOM_OP_MUL_MAT || t->op != LOOM_OP_MUL_MAT) return false;
    if (mm_mask_role(head) || mm_mask_role(t)) return false; /* phase 1 reads one mask */
    const loom_tensor *a0 = head->src[0], *a1 = t->src[0];
    if (!a0 || !a1 || !head->src[1] || t->src[1] != head->src[1] || a1->ne[0] != a0->ne[0]) return false;
    const loom_kernels *kt = loom_kernels_get();
    return kt->dot[a1->type].vec_dot_type == kt->dot[a0->type].vec_dot_type;
}

void loom_cpu_op_mul_mat(const loom_compute_params *p, loom_tensor *dst) {
    (void)loom_cpu_op_mul_mat_group(p, &dst, 1);
}

int loom_cpu_op_mul_mat_group(const loom_compute_params *p, loom_tensor *const *dsts, int n) {
    const loom_kernels *kt = loom_kernels_get();
    mm_plan plans[LOOM_CPU_MM_GROUP_MAX];
    int64_t first_tile[LOOM_CPU_MM_GROUP_MAX + 1];
    if (n < 1 || n > LOOM_CPU_MM_GROUP_MAX) {
        loom_cpu_fail(p, LOOM_ERR_INTERNAL);
        return 0;
    }
    /* every member checked before any work: a failure names its member and nothing
     * of the group is computed (all threads agree: the checks depend on shapes only) */
    const mm_plan *lead = NULL; /* the first member with tiles: its activation is everyone's */
    first_tile[0] = 0;
    for (int m = 0; m < n; m++) {
        mm_plan *pl = &plans[m];
        if (!mm_prepare(p, kt, dsts[m], pl)) return m;
        if (pl->n_tiles > 0) {
            if (!lead) {
                lead = pl;
            } else if (pl->b != lead->b || pl->vdt != lead->vdt || pl->K != lead->K) {
                loom_cpu_fail(p, LOOM_ERR_INTERNAL); /* the caller groups only these */
                return m;
            }
        }
        first_tile[m + 1] = first_tile[m] + pl->n_tiles;
    }
    const int64_t n_tiles = first_tile[n];
    if (n_tiles == 0) return -1;

    /* ---- phase 1: activations -> vec_dot_type, once for the whole group */
    const loom_tensor *b = lead->b;
    const int64_t K = lead->K;
    const size_t rb = lead->rb;
    const bool in_place = lead->in_place;
    char *act = (char *)p->wdata;
    const float *packed = NULL;
    /* the mask hint (a hinted product is never grouped): per-column ranges after the
     * activations and panels, computed with the shared activations (not the private
     * tiny ones); the same decision on every thread (shapes and sizes only) */
    const size_t ab_all = in_place ? 0 : act_bytes(lead->a, b, kt);
    const bool priv = !in_place && p->nth > 1 && loom_nrows(b) <= MM_PRIVATE_ACT_ROWS &&
                      ab_all <= p->wsize / (size_t)p->nth;
    int mask_role = n == 1 && !priv ? mm_mask_role(dsts[0]) : LOOM_MM_MASK_NONE;
    int64_t *ranges = NULL;
    if (mask_role) {
        const size_t off = add_sz(ab_all, in_place ? 0 : packed_bytes(lead->a, b, kt)), mb = mask_bytes(dsts[0]);
        if (off <= p->wsize && mb <= p->wsize - off && dsts[0]->src[2]->data) {
            int64_t j0, j1;
            ranges = (int64_t *)(act + off);
            loom_cpu_split(lead->N, p->ith, p->nth, &j0, &j1);
            mask_ranges(dsts[0]->src[2], ranges, j0, j1);
            if (in_place) loom_cpu_barrier(p); /* else the conversion's barrier below */
        } else {
            mask_role = LOOM_MM_MASK_NONE;
        }
    }
    if (!in_place) {
        const loom_type vdt = lead->vdt;
        const size_t ab = ab_all;
        if (priv) {
            /* tiny activation: each thread converts all of it privately, no barrier */
            act += (size_t)p->ith * ab;
            convert_rows(b, kt->from_float[vdt], act, rb, K, 0, 1);
        } else {
            convert_rows(b, kt->from_float[vdt], act, rb, K, p->ith, p->nth);
            loom_cpu_barrier(p);
            bool any_packed = false;
            for (int m = 0; m < n; m++) any_packed = any_packed || (plans[m].n_tiles > 0 && plans[m].packed);
            if (any_packed) {
                /* phase 1b: the converted rows -> k-major float panels, once per product
                 * (units of one panel of one slice split over the threads) */
                float *pk = (float *)(act + ab);
                const size_t sf = packed_slice_floats(lead->a, b);
                const int64_t N = b->ne[1], panels = (N + LOOM_GEMM_PANEL - 1) / LOOM_GEMM_PANEL;
                int64_t u0, u1;
                loom_cpu_split(panels * b->ne[2] * b->ne[3], p->ith, p->nth, &u0, &u1);
                const bool pairs = mm_bf16dp(lead->a, kt); /* BF16 pair panels (kernels.h) */
                for (int64_t u = u0; u < u1; u++) {
                    const int64_t slice = u / panels, q = u % panels;
                    const char *as = act + (size_t)slice * (size_t)N * rb;
                    if (!(pairs ? kt->gemm_bf16_pack(vdt, K, as, rb, N, (uint32_t *)(pk + (size_t)slice * sf), q, q + 1)
                                : kt->gemm_float_pack(vdt, K, as, rb, N, pk + (size_t)slice * sf, q, q + 1)))
                        loom_cpu_fail(p, LOOM_ERR_INTERNAL); /* mm_packed admits F16 / BF16 only */
                }
                loom_cpu_barrier(p);
                packed = pk;
            }
        }
    }

    /* ---- phase 2 */
    const mm_ctx mc = {kt, b, act, packed, K, rb, in_place, mask_role, ranges};
    _Atomic int64_t *ctr = p->nth > 1 ? p->counter : NULL;
    bool split = ctr != NULL;
    for (int m = 0; m < n && split; m++)
        split = plans[m].n_tiles == 0 || (plans[m].N <= 4 && plans[m].B2 * plans[m].B3 == 1);
    if (split) {
        /* matrix x vector (repacked or plain rows): thread ith streams its own contiguous
         * rows of every member (mm_own_rows), then everyone shares the rest (the ends of
         * all ranges) in chunks of MM_POOL_UNITS groups through p->counter, so a slower
         * thread (a noisy neighbour, a preempted vCPU) is helped without cutting the
         * long streams into short tiles. Plain rows (F16, BF16, and types a level does
         * not repack) used 32 claimed tiles per matrix until the twentieth session: each
         * claim broke the thread's stream, and the kernels' L2 prefetch, LOOM_PF_L2 ahead,
         * fetched the next tile, which the other thread took (1.1B F16 tg64, 2 threads,
         * interleaved: 12.4-12.7 -> 13.0-13.4 t/s; BF16 13.0-13.3 -> 13.5-13.8). */
        for (int m = 0; m < n; m++) {
            if (!plans[m].n_tiles) continue;
            int64_t r0, r1, re;
            mm_own_rows(plans[m].M, p->ith, p->nth, &r0, &r1, &re);
            if (r1 > r0) mm_tile(&mc, &plans[m], 0, r0, r1, 0, plans[m].N);
        }
        for (int64_t c = atomic_fetch_add_explicit(ctr, 1, memory_order_relaxed);;
             c = atomic_fetch_add_explicit(ctr, 1, memory_order_relaxed)) {
            int m = 0;
            int64_t r0 = 0, r1 = 0;
            for (; m < n; m++) {
                if (!plans[m].n_tiles) continue;
                for (int k = 0; k < p->nth && r1 == 0; k++) {
                    int64_t o0, o1, oe;
                    mm_own_rows(plans[m].M, k, p->nth, &o0, &o1, &oe);
                    const int64_t chunk = MM_POOL_UNITS * LOOM_REPACK_ROWS, nck = (oe - o1 + chunk - 1) / chunk;
                    if (c < nck) {
                        r0 = o1 + c * chunk;
                        r1 = r0 + chunk < oe ? r0 + chunk : oe;
                    } else {
                        c -= nck;
                    }
                }
                if (r1) break;
            }
            if (m == n) break;
            mm_tile(&mc, &plans[m], 0, r0, r1, 0, plans[m].N);
        }
        return -1;
    }
    /* Tiles of (member, slice, row chunk, column panel), the members' grids one after
     * the other, claimed dynamically through p->counter when there is one (a preempted
     * thread does not hold the others back), else round-robin. A member's grid is the
     * one it has alone, so grouping does not change any result. */
    int64_t tile = ctr ? atomic_fetch_add_explicit(ctr, 1, memory_order_relaxed) : p->ith;
    int m = 0;
    for (; tile < n_tiles; tile = ctr ? atomic_fetch_add_explicit(ctr, 1, memory_order_relaxed) : tile + p->nth) {
        while (tile >= first_tile[m + 1]) m++; /* tiles are claimed in increasing order */
        const mm_plan *pl = &plans[m];
        const int64_t lt = tile - first_tile[m];
        const int64_t panel = lt % pl->n_panels;
        const int64_t rchunk = (lt / pl->n_panels) % pl->n_rchunks;
        const int64_t slice = lt / (pl->n_panels * pl->n_rchunks);
        const int64_t i0 = rchunk * pl->rc, i1 = i0 + pl->rc < pl->M ? i0 + pl->rc : pl->M;
        const int64_t pj0 = panel * pl->pc, pj1 = pj0 + pl->pc < pl->N ? pj0 + pl->pc : pl->N;
        mm_tile(&mc, pl, slice, i0, i1, pj0, pj1);
    }
    return -1;
}

/* -------------------------------------------------------------------- MUL_MAT_ID */

/* MUL_MAT_ID: dst[:, s, t] = a[:, :, ids[s, t]]^T x b[:, s % B1, t] (S slots per token).
 *
 * Prompt shapes (more than MMID_VEC_PAIRS (slot, token) pairs): thread 0 groups the
 * pairs by expert (counting sort: stable, so the order is a function of ids only);
 * barrier; the threads convert the pairs' activation rows into vec_dot_type, gathered
 * contiguously per expert in the work buffer; barrier; then tiles of (active expert,
 * row chunk, column panel of its pairs) go to the gemm tile function exactly as
 * MUL_MAT's, into a per-thread scratch tile that is scattered to dst. The tile grid
 * depends on the shapes and ids only, so results do not depend on the thread count.
 * Decode shapes (few pairs): every thread groups the pairs and converts the b rows
 * into its own part of the work buffer (no barrier); tiles of (active expert, row
 * chunk) -- the active experts only, so threads share the weights actually read --
 * run the tile function one pair (column) at a time straight into dst. */
#define MMID_VEC_PAIRS 16
#define MMID_RC 64 /* rows per prompt tile (a multiple of 4: the gemm micro-tile height) */

/* Work buffer: grouping [bad][counts E][offs E+1][active E][tile_start E+1][pairs 2*S*T],
 * then activations (prompt: S*T gathered rows; decode: B1*T converted rows), then
 * (prompt) nth scratch tiles of MMID_RC x MM_PANEL_COLS floats. Decode: one
 * grouping+activation region per thread. */
typedef struct mmid_layout {
    bool vec;                            /* decode shape */
    size_t rb;                           /* activation row bytes (0: unsupported type) */
    size_t counts, offs, active, tstart, pairs, act, region; /* offsets inside a region */
    size_t scratch;                      /* prompt: offset of the scratch tiles */
    size_t total;
} mmid_layout;

static mmid_layout mmid_plan(const loom_tensor *dst, const loom_kernels *kt, int nth) {
    const loom_tensor *a = dst->src[0], *b = dst->src[1], *ids = dst->src[2];
    mmid_layout L;
    memset(&L, 0, sizeof L);
    const size_t E = (size_t)a->ne[2], ST = (size_t)(ids->ne[0] * ids->ne[1]);
    const loom_kernel_entry *e = &kt->dot[a->type];
    L.rb = 0;
    if (e->vec_dot) {
        size_t rb = row_bytes(e->vec_dot_type, a->ne[0]);
        if (rb != SIZE_MAX) L.rb = rb;
    }
    L.vec = ST <= MMID_VEC_PAIRS;
    const size_t eb = align_up(mul_sz(E + 1, sizeof(int64_t)));
    L.counts = MM_ALIGN;
    L.offs = add_sz(L.counts, eb);
    L.active = add_sz(L.offs, eb);
    L.tstart = add_sz(L.active, eb);
    L.pairs = add_sz(L.tstart, eb);
    L.act = add_sz(L.pairs, align_up(mul_sz(ST, 2 * sizeof(int32_t))));
    const size_t act_rows = L.vec ? (size_t)loom_nrows(b) : ST;
    L.region = add_sz(L.act, align_up(mul_sz(L.rb, act_rows)));
    const size_t nt = nth > 1 ? (size_t)nth : 1;
    if (L.vec) {
        L.scratch = 0;
        L.total = mul_sz(L.region, nt);
    } else {
        L.scratch = L.region;
        L.total = add_sz(L.region, mul_sz(nt, (size_t)MMID_RC * MM_PANEL_COLS * sizeof(float)));
    }
    return L;
}

size_t loom_cpu_work_size_mul_mat_id(const loom_tensor *dst, int nth) {
    if (!dst->src[0] || !dst->src[1] || !dst->src[2]) return 0;
    return mmid_plan(dst, loom_kernels_get(), nth).total;
}

/* Group the (slot, token) pairs by expert into the region at wd; returns false on an
 * out-of-range id. Also lists the active experts and the prefix sums of their tiles
 * (n_rchunks row chunks x panels of pc pairs; pc = 0: one tile per row chunk). */
static bool mmid_group(const loom_tensor *ids, int64_t E, const mmid_layout *L, char *wd, int64_t n_rchunks,
                       int64_t pc, int64_t *n_active, int64_t *n_tiles) {
    int64_t *counts = (int64_t *)(wd + L->counts), *offs = (int64_t *)(wd + L->offs);
    int64_t *active = (int64_t *)(wd + L->active), *tstart = (int64_t *)(wd + L->tstart);
    int32_t *pairs = (int32_t *)(wd + L->pairs);
    const int64_t S = ids->ne[0], T = ids->ne[1];
    bool ok = true;
    for (int64_t x = 0; x < E; x++) counts[x] = 0;
    for (int64_t t = 0; t < T; t++) {
        const int32_t *row = (const int32_t *)loom_row_ptr(ids, t, 0, 0);
        for (int64_t s = 0; s < S; s++) {
            int32_t x = row[s];
            if (x < 0 || x >= E) ok = false;
            else counts[x]++;
        }
    }
    offs[0] = 0;
    int64_t na = 0;
    tstart[0] = 0;
    for (int64_t x = 0; x < E; x++) {
        offs[x + 1] = offs[x] + counts[x];
        if (counts[x] > 0) {
            int64_t np = pc > 0 ? (counts[x] + pc - 1) / pc : 1;
            active[na] = x;
            tstart[na + 1] = tstart[na] + n_rchunks * np;
            na++;
        }
    }
    for (int64_t x = 0; x < E; x++) counts[x] = offs[x]; /* reuse as fill cursor */
    for (int64_t t = 0; t < T; t++) {
        const int32_t *row = (const int32_t *)loom_row_ptr(ids, t, 0, 0);
        for (int64_t s = 0; s < S; s++) {
            int32_t x = row[s];
            if (x < 0 || x >= E) continue;
            int64_t at = counts[x]++;
            pairs[2 * at] = (int32_t)s;
            pairs[2 * at + 1] = (int32_t)t;
        }
    }
    *n_active = na;
    *n_tiles = tstart[na];
    return ok;
}

/* One activation row: b row (bj, t) -> vec_dot_type (or copied when that is F32). */
static void mmid_convert(const loom_tensor *b, loom_from_float_fn ff, bool in_place, int64_t bj, int64_t t,
                         void *out, int64_t K) {
    const float *src = (const float *)loom_row_ptr(b, bj, t, 0);
    if (in_place) memcpy(out, src, (size_t)K * sizeof(float));
    else ff(src, out, K);
}

void loom_cpu_op_mul_mat_id(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *a = dst->src[0], *b = dst->src[1], *ids = dst->src[2];
    const loom_kernels *kt = loom_kernels_get();
    const loom_kernel_entry *e = &kt->dot[a->type];
    const int64_t K = a->ne[0], M = a->ne[1], E = a->ne[2];
    const int64_t B1 = b->ne[1], T = ids->ne[1];
    if (loom_nelements(dst) == 0) return;
    const loom_type vdt = e->vec_dot_type;
    const bool in_place = vdt == LOOM_TYPE_F32;
    const mmid_layout L = mmid_plan(dst, kt, p->nth);
    /* experts in the row-interleaved layout (quant/repack.h; each expert's [K, M] slice
     * is a repacked matrix of its own since M is a multiple of 16): tiles of whole 16-row
     * groups through gemm_repacked, the activations in its type (the same as vec_dot's) */
    const bool repacked = (a->flags & LOOM_TF_REPACKED) != 0;
    _Static_assert(MMID_RC % LOOM_REPACK_ROWS == 0, "prompt tiles start on a row group");
    if (repacked &&
        (M % LOOM_REPACK_ROWS != 0 || !loom_repack_type_ok(a->type) || vdt != loom_repack_act_type(a->type))) {
        loom_cpu_fail(p, LOOM_ERR_UNSUPPORTED);
        return;
    }
    if (!e->vec_dot || (K > 0 && L.rb == 0) || (!in_place && !kt->from_float[vdt]) || p->wsize < L.total) {
        loom_cpu_fail(p, e->vec_dot ? LOOM_ERR_INTERNAL : LOOM_ERR_UNSUPPORTED);
        return;
    }
    const size_t rb = L.rb;
    const loom_from_float_fn ff = in_place ? NULL : kt->from_float[vdt];
    const size_t w_stride = a->nb[1];
    _Atomic int64_t *ctr = p->nth > 1 ? p->counter : NULL;
#define MMID_NEXT(tile) (ctr ? atomic_fetch_add_explicit(ctr, 1, memory_order_relaxed) : (tile) + p->nth)
    int64_t na = 0, n_tiles = 0;

    if (L.vec) {
        /* ---- decode: private grouping and activations, no barrier */
        char *wd = (char *)p->wdata + (p->nth > 1 ? (size_t)p->ith * L.region : 0);
        int64_t rc = 16;
        /* row chunks: about 8 tiles per thread over the active experts, whole 16-row
         * units so tiles never share an output cache line (qwen3moe 64x top 8 Q4_K_M
         * tg128, 2 threads, 3 interleaved rounds on the loaded VM: 2 / 8 / 32 tiles per
         * thread = 25.7-28.2 / 28.5-34.7 / 25.6-32.5 t/s) */
        {
            int64_t na_max = ids->ne[0] * T < E ? ids->ne[0] * T : E;
            int64_t want = 8 * (int64_t)p->nth;
            int64_t per = (M * na_max + want - 1) / want;
            rc = (per + 15) & ~(int64_t)15;
            if (rc < 16) rc = 16;
        }
        const int64_t n_rchunks = (M + rc - 1) / rc;
        if (!mmid_group(ids, E, &L, wd, n_rchunks, 0, &na, &n_tiles)) {
            loom_cpu_fail(p, LOOM_ERR_RANGE);
            return;
        }
        const int64_t *offs = (const int64_t *)(wd + L.offs), *active = (const int64_t *)(wd + L.active);
        const int32_t *pairs = (const int32_t *)(wd + L.pairs);
        char *act = wd + L.act;
        if (K > 0)
            for (int64_t r = 0; r < B1 * T; r++) mmid_convert(b, ff, in_place, r % B1, r / B1, act + (size_t)r * rb, K);
        for (int64_t tile = ctr ? atomic_fetch_add_explicit(ctr, 1, memory_order_relaxed) : p->ith; tile < n_tiles;
             tile = MMID_NEXT(tile)) {
            const int64_t x = active[tile / n_rchunks], rchunk = tile % n_rchunks;
            const int64_t i0 = rchunk * rc, i1 = i0 + rc < M ? i0 + rc : M;
            const char *w = (const char *)a->data + (size_t)x * a->nb[2];
            for (int64_t q = offs[x]; q < offs[x + 1]; q++) {
                const int64_t s = pairs[2 * q], t = pairs[2 * q + 1];
                const char *ar = act + (size_t)(s % B1 + B1 * t) * rb;
                float *o = (float *)((char *)dst->data + (size_t)s * dst->nb[1] + (size_t)t * dst->nb[2]);
                if (K == 0) {
                    for (int64_t i = i0; i < i1; i++) o[i] = 0.0f;
                } else if (repacked) {
                    if (!kt->gemm_repacked(a->type, K, w, w_stride, ar, rb, o, (size_t)M, i0, i1, 0, 1))
                        (void)loom_kernels_scalar()->gemm_repacked(a->type, K, w, w_stride, ar, rb, o, (size_t)M, i0,
                                                                   i1, 0, 1);
                } else if (!kt->gemm || !kt->gemm(a->type, K, w, w_stride, ar, rb, o, (size_t)M, i0, i1, 0, 1)) {
                    for (int64_t i = i0; i < i1; i++) e->vec_dot(K, &o[i], w + (size_t)i * w_stride, ar);
                }
            }
        }
        return;
    }

    /* ---- prompt: shared grouping, gathered activations, gemm tiles */
    char *wd = (char *)p->wdata;
    int64_t *bad = (int64_t *)wd;
    const int64_t rc = MMID_RC, n_rchunks = (M + rc - 1) / rc, pc = MM_PANEL_COLS;
    const int64_t *offs = (const int64_t *)(wd + L.offs), *active = (const int64_t *)(wd + L.active);
    const int64_t *tstart = (const int64_t *)(wd + L.tstart);
    const int32_t *pairs = (const int32_t *)(wd + L.pairs);
    char *act = wd + L.act;
    if (p->ith == 0) {
        *bad = !mmid_group(ids, E, &L, wd, n_rchunks, pc, &na, &n_tiles);
        if (*bad) loom_cpu_fail(p, LOOM_ERR_RANGE);
    }
    loom_cpu_barrier(p);
    if (*bad) return;
    const int64_t n_pairs = offs[E];
    if (K > 0) {
        int64_t q0, q1;
        loom_cpu_split(n_pairs, p->ith, p->nth, &q0, &q1);
        for (int64_t q = q0; q < q1; q++)
            mmid_convert(b, ff, in_place, pairs[2 * q] % B1, pairs[2 * q + 1], act + (size_t)q * rb, K);
    }
    loom_cpu_barrier(p);
    /* counts of active experts / tiles, read back from the shared grouping */
    na = 0;
    for (int64_t x = 0; x < E; x++) na += offs[x + 1] > offs[x];
    n_tiles = tstart[na];
    float *scr = (float *)(wd + L.scratch) + (size_t)p->ith * MMID_RC * MM_PANEL_COLS;
    int64_t ai = 0;
    for (int64_t tile = ctr ? atomic_fetch_add_explicit(ctr, 1, memory_order_relaxed) : p->ith; tile < n_tiles;
         tile = MMID_NEXT(tile)) {
        while (tile >= tstart[ai + 1]) ai++; /* tiles are claimed in increasing order */
        const int64_t x = active[ai], cnt = offs[x + 1] - offs[x];
        const int64_t np = (cnt + pc - 1) / pc, lt = tile - tstart[ai];
        const int64_t rchunk = lt / np, panel = lt % np;
        const int64_t i0 = rchunk * rc, i1 = i0 + rc < M ? i0 + rc : M, nr = i1 - i0;
        const int64_t q0 = offs[x] + panel * pc, q1 = q0 + pc < offs[x + 1] ? q0 + pc : offs[x + 1];
        const char *w = (const char *)a->data + (size_t)x * a->nb[2] + (size_t)i0 * w_stride;
        const char *ab = act + (size_t)q0 * rb;
        const int64_t nq = q1 - q0;
        if (K == 0) {
            for (int64_t j = 0; j < nq * nr; j++) scr[j] = 0.0f;
        } else if (repacked) { /* i0 is a multiple of 16: w is the first of the tile's row groups */
            if (!kt->gemm_repacked(a->type, K, w, w_stride, ab, rb, scr, (size_t)nr, 0, nr, 0, nq))
                (void)loom_kernels_scalar()->gemm_repacked(a->type, K, w, w_stride, ab, rb, scr, (size_t)nr, 0, nr, 0,
                                                           nq);
        } else if (!kt->gemm || !kt->gemm(a->type, K, w, w_stride, ab, rb, scr, (size_t)nr, 0, nr, 0, nq)) {
            for (int64_t j0 = 0; j0 < nq; j0 += MM_COL_BLOCK) {
                const int64_t j1 = j0 + MM_COL_BLOCK < nq ? j0 + MM_COL_BLOCK : nq;
                for (int64_t i = 0; i < nr; i++)
                    for (int64_t j = j0; j < j1; j++)
                        e->vec_dot(K, &scr[j * nr + i], w + (size_t)i * w_stride, ab + (size_t)j * rb);
            }
        }
        for (int64_t j = 0; j < nq; j++) {
            const int64_t s = pairs[2 * (q0 + j)], t = pairs[2 * (q0 + j) + 1];
            float *o = (float *)((char *)dst->data + (size_t)s * dst->nb[1] + (size_t)t * dst->nb[2]);
            memcpy(o + i0, scr + j * nr, (size_t)nr * sizeof(float));
        }
    }
#undef MMID_NEXT
}
