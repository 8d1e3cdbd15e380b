/*
 * ops_hadamard.c - CPU kernel for HADAMARD: the orthonormal Walsh-Hadamard transform of
 * every block of n consecutive elements along ne0 (n = op param 0, a power of two).
 *
 * The fast transform: log2(n) passes of butterflies (a, b) -> (a + b, a - b) over pairs
 * h apart, h = 1, 2, ..., n/2, which yields H_n x with H_n[r][c] = (-1)^popcount(r & c)
 * (Sylvester's order), then the scale 1/sqrt(n). The butterflies of a pass are
 * independent and contiguous for h >= 8, so the compiler vectorizes them; this plain C
 * kernel is also the reference (tests compare it with the float64 product H x).
 * Rows are split over the threads; no scratch (the row is transformed in dst).
 */
#include "cpu/ops.h"

#include <math.h>
#include <string.h>

static void fwht(float *x, int64_t n) {
    for (int64_t h = 1; h < n; h *= 2)
        for (int64_t i = 0; i < n; i += 2 * h)
            for (int64_t j = i; j < i + h; j++) {
                const float a = x[j], b = x[j + h];
                x[j] = a + b;
                x[j + h] = a - b;
            }
}

void loom_cpu_op_hadamard(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *a = dst->src[0];
    const int64_t n = loom_get_op_param_i32(dst, 0);
    const int64_t n0 = a->ne[0], rows = loom_nelements(a) / (n0 ? n0 : 1);
    const float scale = (float)(1.0 / sqrt((double)n));
    int64_t r0, r1;
    loom_cpu_split(rows, p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % a->ne[1], i2 = (r / a->ne[1]) % a->ne[2], i3 = r / (a->ne[1] * a->ne[2]);
        const float *src = (const float *)((const char *)a->data + i1 * a->nb[1] + i2 * a->nb[2] + i3 * a->nb[3]);
        float *out = (float *)loom_row_ptr(dst, i1, i2, i3);
        if (out != src) memmove(out, src, (size_t)n0 * sizeof *out);
        for (int64_t b = 0; b < n0; b += n) {
            fwht(out + b, n);
            for (int64_t j = b; j < b + n; j++) out[j] *= scale;
        }
    }
}
