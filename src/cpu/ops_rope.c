/*
 * ops_rope.c - CPU kernel for ROPE (backend contract §6.7), NORMAL and NEOX modes,
 * partial rotation (dims >= n_dims copied), frequency factors and YaRN.
 *
 * dst has a's shape and type (F32 or F16), contiguous; a's rows may be strided.
 * Rows (head, token) are split over the threads; each thread keeps a cos/sin cache
 * for the token it is on (n_dims/2 pairs, computed in double from a per-pair
 * inverse-frequency table), so trigonometric functions run once per (token, pair)
 * per thread rather than per element.
 */
#include "cpu/ops.h"

#include <math.h>

#define ROPE_ALIGN 64

static size_t rope_thread_bytes(int64_t n_dims) {
    /* inv_freq[n/2] double, ramp_mix[n/2] double, cos[n/2] float, sin[n/2] float */
    size_t half = (size_t)(n_dims / 2);
    size_t b = half * (2 * sizeof(double) + 2 * sizeof(float));
    return (b + ROPE_ALIGN - 1) & ~(size_t)(ROPE_ALIGN - 1);
}

size_t loom_cpu_work_size_rope(const loom_tensor *dst, int nth) {
    int64_t n_dims = loom_get_op_param_i32(dst, 0);
    if (n_dims <= 0 || nth <= 0) return 0;
    size_t per = rope_thread_bytes(n_dims);
    if (per > SIZE_MAX / (size_t)nth) return SIZE_MAX;
    return per * (size_t)nth;
}

static inline float load_elem(const char *row, loom_type t, int64_t i) {
    if (t == LOOM_TYPE_F16) {
        uint16_t h;
        memcpy(&h, row + 2 * i, 2);
        return loom_fp16_to_fp32(h);
    }
    float f;
    memcpy(&f, row + 4 * i, 4);
    return f;
}

static inline void store_elem(char *row, loom_type t, int64_t i, float v) {
    if (t == LOOM_TYPE_F16) {
        uint16_t h = loom_fp32_to_fp16(v);
        memcpy(row + 2 * i, &h, 2);
    } else {
        memcpy(row + 4 * i, &v, 4);
    }
}

void loom_cpu_op_rope(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *a = dst->src[0], *pos = dst->src[1], *ff = dst->src[2];
    const int64_t n_dims = loom_get_op_param_i32(dst, 0);
    const int mode = loom_get_op_param_i32(dst, 1);
    const int orig_ctx = loom_get_op_param_i32(dst, 2);
    const double base = loom_get_op_param_f32(dst, 3);
    const double freq_scale = loom_get_op_param_f32(dst, 4);
    const double ext_factor = loom_get_op_param_f32(dst, 5);
    const double attn_factor = loom_get_op_param_f32(dst, 6);
    const double beta_fast = loom_get_op_param_f32(dst, 7);
    const double beta_slow = loom_get_op_param_f32(dst, 8);
    const int64_t ne0 = a->ne[0], ne1 = a->ne[1], ne2 = a->ne[2], ne3 = a->ne[3];
    const int64_t half = n_dims / 2;
    const loom_type t = a->type;

    if (loom_nelements(dst) == 0) return;
    size_t per = rope_thread_bytes(n_dims);
    if (n_dims <= 0 || n_dims > ne0 || (size_t)(p->ith + 1) * per > p->wsize) {
        loom_cpu_fail(p, LOOM_ERR_INTERNAL);
        return;
    }
    char *ws = (char *)p->wdata + (size_t)p->ith * per;
    double *inv_freq = (double *)ws;
    double *mix = inv_freq + half;
    float *cosv = (float *)(mix + half);
    float *sinv = cosv + half;

    /* per-pair tables (cheap: n_dims/2 pows per thread per node) */
    double mscale = attn_factor;
    double lo = 0.0, hi = 0.0;
    if (ext_factor != 0.0) {
        const double two_ln_base = 2.0 * log(base);
        double cd_fast = (double)n_dims * log((double)orig_ctx / (beta_fast * 2.0 * M_PI)) / two_ln_base;
        double cd_slow = (double)n_dims * log((double)orig_ctx / (beta_slow * 2.0 * M_PI)) / two_ln_base;
        lo = floor(cd_fast);
        if (lo < 0.0) lo = 0.0;
        hi = ceil(cd_slow);
        if (hi > (double)(n_dims - 1)) hi = (double)(n_dims - 1);
        mscale *= 1.0 + 0.1 * log(1.0 / freq_scale);
    }
    const float *ffd = ff ? (const float *)ff->data : NULL;
    for (int64_t q = 0; q < half; q++) {
        double f = pow(base, -2.0 * (double)q / (double)n_dims);
        if (ffd) f /= (double)ffd[q];
        inv_freq[q] = f;
        if (ext_factor != 0.0) {
            double den = hi - lo;
            if (den < 0.001) den = 0.001;
            double y = ((double)q - lo) / den;
            if (y < 0.0) y = 0.0;
            if (y > 1.0) y = 1.0;
            mix[q] = (1.0 - y) * ext_factor;
        } else {
            mix[q] = 0.0;
        }
    }

    const int64_t nrows = ne1 * ne2 * ne3;
    int64_t r0, r1;
    loom_cpu_split(nrows, p->ith, p->nth, &r0, &r1);
    int64_t cached_tok = -1;
    const int32_t *posd = (const int32_t *)pos->data;
    const size_t es = loom_type_size(t);
    for (int64_t r = r0; r < r1; r++) {
        const int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        if (i2 != cached_tok) {
            const double ps = (double)posd[i2];
            for (int64_t q = 0; q < half; q++) {
                double th_ex = ps * inv_freq[q];
                double th_in = freq_scale * th_ex;
                double th = th_in * (1.0 - mix[q]) + th_ex * mix[q];
                cosv[q] = (float)(cos(th) * mscale);
                sinv[q] = (float)(sin(th) * mscale);
            }
            cached_tok = i2;
        }
        const char *src = (const char *)loom_row_ptr(a, i1, i2, i3);
        char *out = (char *)dst->data + (size_t)r * (size_t)ne0 * es;
        if (mode == LOOM_ROPE_NEOX) {
            for (int64_t q = 0; q < half; q++) {
                float x0 = load_elem(src, t, q), x1 = load_elem(src, t, q + half);
                store_elem(out, t, q, x0 * cosv[q] - x1 * sinv[q]);
                store_elem(out, t, q + half, x0 * sinv[q] + x1 * cosv[q]);
            }
        } else {
            for (int64_t q = 0; q < half; q++) {
                float x0 = load_elem(src, t, 2 * q), x1 = load_elem(src, t, 2 * q + 1);
                store_elem(out, t, 2 * q, x0 * cosv[q] - x1 * sinv[q]);
                store_elem(out, t, 2 * q + 1, x0 * sinv[q] + x1 * cosv[q]);
            }
        }
        if (n_dims < ne0) memcpy(out + (size_t)n_dims * es, src + (size_t)n_dims * es, (size_t)(ne0 - n_dims) * es);
    }
}
