/*
 * ops_sort.c - CPU kernels for ARGSORT (backend contract §6.6) and TOP_K_MASK.
 *
 * Each row of a (F32 or I32) gets the I32 indices that sort it ascending or
 * descending (op param 0). The sort is a stable merge sort, so equal values keep
 * their index order (ties: lower index first in both directions). F32 NaNs sort
 * last in both directions. Rows are split over the threads; scratch: one row of
 * indices per thread.
 *
 * TOP_K_MASK (sparse attention's key selection): per query row, the k keys of largest
 * score + mask among the finite ones keep their mask value, the others get -inf; the
 * k-th largest value is found by selection (quickselect, median of three) in a scratch
 * copy of the row's finite values, then the keys above it and the first (lowest index)
 * keys equal to it are kept. Scratch: one row of floats per thread.
 */
#include "cpu/ops.h"

#include <math.h>

size_t loom_cpu_work_size_argsort(const loom_tensor *dst, int nth) {
    size_t n = (size_t)dst->ne[0];
    if (nth <= 0) return 0;
    size_t per = (n * sizeof(int32_t) + 63) & ~(size_t)63;
    if (n > SIZE_MAX / 8 || per > SIZE_MAX / (size_t)nth) return SIZE_MAX;
    return per * (size_t)nth;
}

/* true when element x must come before y (x, y are indices into the row). */
static inline bool before_f32(const float *r, int32_t x, int32_t y, bool desc) {
    const float a = r[x], b = r[y];
    const bool na = isnan(a), nb = isnan(b);
    if (na || nb) return !na && nb; /* NaN last; two NaNs: keep order */
    return desc ? a > b : a < b;
}
static inline bool before_i32(const int32_t *r, int32_t x, int32_t y, bool desc) {
    return desc ? r[x] > r[y] : r[x] < r[y];
}

/* Bottom-up merge sort of idx[0..n) using tmp[0..n); result ends in idx. */
static void sort_row(const void *row, bool is_f32, bool desc, int32_t *idx, int32_t *tmp, int64_t n) {
    int32_t *src = idx, *dstb = tmp;
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) {
                /* take from the right only when strictly before (stability) */
                bool right = is_f32 ? before_f32((const float *)row, src[j], src[i], desc)
                                    : before_i32((const int32_t *)row, src[j], src[i], desc);
                dstb[o++] = right ? src[j++] : src[i++];
            }
            while (i < mid) dstb[o++] = src[i++];
            while (j < hi) dstb[o++] = src[j++];
        }
        int32_t *sw = src;
        src = dstb;
        dstb = sw;
    }
    if (src != idx) memcpy(idx, src, (size_t)n * sizeof(int32_t));
}

void loom_cpu_op_argsort(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *a = dst->src[0];
    const bool desc = loom_get_op_param_i32(dst, 0) != 0;
    const int64_t n = a->ne[0];
    if (loom_nelements(dst) == 0) return;
    size_t per = ((size_t)n * sizeof(int32_t) + 63) & ~(size_t)63;
    if ((size_t)(p->ith + 1) * per > p->wsize) {
        loom_cpu_fail(p, LOOM_ERR_INTERNAL);
        return;
    }
    int32_t *tmp = (int32_t *)((char *)p->wdata + (size_t)p->ith * per);
    const bool is_f32 = a->type == LOOM_TYPE_F32;
    int64_t r0, r1;
    loom_cpu_split(loom_nrows(a), p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % a->ne[1], i2 = (r / a->ne[1]) % a->ne[2], i3 = r / (a->ne[1] * a->ne[2]);
        int32_t *idx = (int32_t *)loom_row_ptr(dst, i1, i2, i3);
        for (int64_t i = 0; i < n; i++) idx[i] = (int32_t)i;
        sort_row(loom_row_ptr(a, i1, i2, i3), is_f32, desc, idx, tmp, n);
    }
}

/* ------------------------------------------------------------------ top-k mask */

size_t loom_cpu_work_size_top_k_mask(const loom_tensor *dst, int nth) {
    size_t n = (size_t)dst->ne[0];
    if (nth <= 0) return 0;
    size_t per = (n * sizeof(float) + 63) & ~(size_t)63;
    if (n > SIZE_MAX / 8 || per > SIZE_MAX / (size_t)nth) return SIZE_MAX;
    return per * (size_t)nth;
}

static inline void swap_f(float *a, float *b) {
    float t = *a;
    *a = *b;
    *b = t;
}

/* The value of rank r (0: the largest) of a[0..n), n > r; reorders a. */
static float select_desc(float *a, int64_t n, int64_t r) {
    int64_t lo = 0, hi = n - 1;
    while (hi > lo) {
        /* median of three to a[hi] as the pivot */
        int64_t mid = lo + (hi - lo) / 2;
        if (a[mid] > a[lo]) swap_f(&a[mid], &a[lo]);
        if (a[hi] > a[lo]) swap_f(&a[hi], &a[lo]);
        if (a[mid] > a[hi]) swap_f(&a[mid], &a[hi]);
        const float pv = a[hi];
        /* three-way partition (descending): [lo, lt) > pv, [lt, gt] == pv, (gt, hi] < pv */
        int64_t lt = lo, i = lo, gt = hi;
        while (i <= gt) {
            if (a[i] > pv) swap_f(&a[i++], &a[lt++]);
            else if (a[i] < pv) swap_f(&a[i], &a[gt--]);
            else i++;
        }
        if (r < lt) hi = lt - 1;
        else if (r > gt) lo = gt + 1;
        else return pv;
    }
    return a[lo];
}

void loom_cpu_op_top_k_mask(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *sc = dst->src[0], *mk = dst->src[1];
    const int64_t L = dst->ne[0], T = sc->ne[1], k = loom_get_op_param_i32(dst, 0);
    const loom_type mt = mk->type;
    const size_t es = loom_type_size(mt);
    size_t per = ((size_t)L * sizeof(float) + 63) & ~(size_t)63;
    if ((size_t)(p->ith + 1) * per > p->wsize) {
        loom_cpu_fail(p, LOOM_ERR_INTERNAL);
        return;
    }
    float *tmp = (float *)((char *)p->wdata + (size_t)p->ith * per);
    int64_t r0, r1;
    loom_cpu_split(dst->ne[1], p->ith, p->nth, &r0, &r1);
    for (int64_t t = r0; t < r1; t++) {
        const char *m = (const char *)mk->data + (size_t)t * mk->nb[1];
        char *o = (char *)dst->data + (size_t)t * dst->nb[1];
        int64_t nf = 0;
        if (t < T) {
            const float *s = (const float *)((const char *)sc->data + (size_t)t * sc->nb[1]);
            for (int64_t j = 0; j < L; j++) {
                const float v = s[j] + loom_ld_f(m + (size_t)j * es, mt);
                if (isfinite(v)) tmp[nf++] = v;
            }
        }
        if (nf <= k) { /* padding rows, and rows with at most k candidates: the mask as it is */
            if (o != m) memcpy(o, m, (size_t)L * es);
            continue;
        }
        const float th = select_desc(tmp, nf, k - 1);
        const float *s = (const float *)((const char *)sc->data + (size_t)t * sc->nb[1]);
        int64_t above = 0;
        for (int64_t j = 0; j < L; j++) {
            const float v = s[j] + loom_ld_f(m + (size_t)j * es, mt);
            above += isfinite(v) && v > th;
        }
        int64_t ties = k - above; /* keys equal to the threshold still kept, lowest index first */
        for (int64_t j = 0; j < L; j++) {
            const float mv = loom_ld_f(m + (size_t)j * es, mt), v = s[j] + mv;
            bool keep = isfinite(v) && v > th;
            if (isfinite(v) && v == th && ties > 0) {
                keep = true;
                ties--;
            }
            loom_st_f(o + (size_t)j * es, mt, keep ? mv : -INFINITY);
        }
    }
}
