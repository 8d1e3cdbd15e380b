/*
 * ops_sort.c - CPU kernel for ARGSORT (backend contract §6.6).
 *
 * Each row of a (F32 or I32) gets the I32 indices that sort it ascending or
 * descending (op param 0). The sort is a stable merge sort, so equal values keep
 * their index order (ties: lower index first in both directions). F32 NaNs sort
 * last in both directions. Rows are split over the threads; scratch: one row of
 * indices per thread.
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
