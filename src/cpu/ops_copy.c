/* Copy-like kernels: DUP (cont/cont_nd/dup), CPY (type conversion into strided
 * destinations), SET, PAD, CONCAT, REPEAT, GET_ROWS. */
#include "cpu/kernels.h"
#include "cpu/ops.h"

#include <string.h>

/* Coordinates of flattened (logical order) element k of t. */
static inline void unflat(const loom_tensor *t, int64_t k, int64_t i[4]) {
    i[0] = k % t->ne[0];
    k /= t->ne[0];
    i[1] = k % t->ne[1];
    k /= t->ne[1];
    i[2] = k % t->ne[2];
    i[3] = k / t->ne[2];
}
static inline void step(const loom_tensor *t, int64_t i[4]) {
    if (++i[0] < t->ne[0]) return;
    i[0] = 0;
    if (++i[1] < t->ne[1]) return;
    i[1] = 0;
    if (++i[2] < t->ne[2]) return;
    i[2] = 0;
    ++i[3];
}
static inline const char *elem(const loom_tensor *t, const int64_t i[4]) {
    return (const char *)t->data + i[0] * t->nb[0] + i[1] * t->nb[1] + i[2] * t->nb[2] + i[3] * t->nb[3];
}
static inline void copy_elem(void *d, const void *s, size_t es) {
    switch (es) {
    case 4: memcpy(d, s, 4); break;
    case 2: memcpy(d, s, 2); break;
    case 8: memcpy(d, s, 8); break;
    case 1: memcpy(d, s, 1); break;
    default: memcpy(d, s, es); break;
    }
}

/* ------------------------------------------------------------------ DUP */

void loom_cpu_op_dup(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *a = dst->src[0];
    size_t nbytes = loom_tensor_nbytes(dst);
    if (nbytes == 0) return;
    if (loom_tensor_is_contiguous(a)) {
        int64_t b0, b1;
        loom_cpu_split((int64_t)nbytes, p->ith, p->nth, &b0, &b1);
        if (b1 > b0) memcpy((char *)dst->data + b0, (const char *)a->data + b0, (size_t)(b1 - b0));
        return;
    }
    if (a->ne[0] == dst->ne[0] && loom_tensor_is_contiguous_rows(a)) {
        /* same row length: dst row r is a's row r */
        size_t row = loom_row_size(a);
        int64_t r0, r1;
        loom_cpu_split(loom_nrows(a), p->ith, p->nth, &r0, &r1);
        for (int64_t r = r0; r < r1; r++) {
            int64_t i3 = r / (a->ne[1] * a->ne[2]), i2 = (r / a->ne[1]) % a->ne[2], i1 = r % a->ne[1];
            memcpy((char *)dst->data + (size_t)r * row, loom_row_ptr(a, i1, i2, i3), row);
        }
        return;
    }
    /* element-wise walk in logical order (plain types only; constructor guarantees) */
    size_t es = loom_type_size(dst->type);
    int64_t k0, k1;
    loom_cpu_split(loom_nelements(dst), p->ith, p->nth, &k0, &k1);
    if (k0 >= k1) return;
    int64_t i[4];
    unflat(a, k0, i);
    char *d = (char *)dst->data + (size_t)k0 * es;
    for (int64_t k = k0; k < k1; k++, d += es) {
        copy_elem(d, elem(a, i), es);
        step(a, i);
    }
}

/* ------------------------------------------------------------------ CPY */

/* Fast path: both sides contiguous and the source F32 or of dst's type (KV-cache
 * writes): whole blocks of the flattened tensor per thread, converted with the
 * kernel table's row converter (bit-identical to the scalar conversion) or the
 * reference quantizer. false = not applicable. */
static bool cpy_contiguous(const loom_compute_params *p, loom_tensor *dst, const loom_tensor *a) {
    if (!loom_tensor_is_contiguous(a) || !loom_tensor_is_contiguous(dst)) return false;
    if (a->type != dst->type && a->type != LOOM_TYPE_F32) return false;
    const int64_t n = loom_nelements(dst), bs = loom_blck_size(dst->type);
    if (bs < 1 || n % bs != 0) return false;
    int64_t b0, b1;
    loom_cpu_split(n / bs, p->ith, p->nth, &b0, &b1);
    if (b0 >= b1) return true;
    const size_t ts = loom_type_size(dst->type);
    char *d = (char *)dst->data + (size_t)b0 * ts;
    if (a->type == dst->type) {
        memcpy(d, (const char *)a->data + (size_t)b0 * ts, (size_t)(b1 - b0) * ts);
        return true;
    }
    const float *x = (const float *)a->data + b0 * bs;
    const int64_t cnt = (b1 - b0) * bs;
    loom_from_float_fn ff = loom_kernels_get()->from_float[dst->type];
    if (ff) {
        ff(x, d, cnt);
    } else {
        loom_status st = loom_quantize_row(dst->type, x, d, cnt);
        if (st) loom_cpu_fail(p, st);
    }
    return true;
}

void loom_cpu_op_cpy(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *a = dst->src[0];
    int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2];
    if (loom_nelements(dst) == 0) return;
    if (loom_type_is_quantized(a->type)) { /* dequantization: a and dst have one shape */
        int64_t r0, r1;
        loom_cpu_split(loom_nrows(dst), p->ith, p->nth, &r0, &r1);
        for (int64_t r = r0; r < r1; r++) {
            const int64_t j3 = r / (ne1 * ne2), j2 = (r / ne1) % ne2, j1 = r % ne1;
            loom_status st = loom_dequantize_row(a->type, loom_row_ptr(a, j1, j2, j3),
                                                 (float *)loom_row_ptr(dst, j1, j2, j3), ne0);
            if (st) loom_cpu_fail(p, st);
        }
        return;
    }
    if (cpy_contiguous(p, dst, a)) return;
    int64_t r0, r1;
    loom_cpu_split(loom_nrows(dst), p->ith, p->nth, &r0, &r1);
    if (r0 >= r1) return;
    bool quant = loom_type_is_quantized(dst->type);
    float *buf = NULL;
    if (quant) {
        size_t per = ((size_t)ne0 * sizeof(float) + 63) & ~(size_t)63;
        if (!p->wdata || p->wsize < per * (size_t)p->nth) {
            loom_cpu_fail(p, LOOM_ERR_INTERNAL);
            return;
        }
        buf = (float *)((char *)p->wdata + per * (size_t)p->ith);
    }
    int64_t i[4];
    unflat(a, r0 * ne0, i);
    bool same = a->type == dst->type;
    size_t es = loom_type_size(a->type);
    for (int64_t r = r0; r < r1; r++) {
        int64_t j3 = r / (ne1 * ne2), j2 = (r / ne1) % ne2, j1 = r % ne1;
        char *rd = loom_row_ptr(dst, j1, j2, j3);
        if (quant) {
            for (int64_t k = 0; k < ne0; k++) {
                buf[k] = loom_ld_f(elem(a, i), a->type);
                step(a, i);
            }
            loom_status s = loom_quantize_row(dst->type, buf, rd, ne0);
            if (s) loom_cpu_fail(p, s);
        } else if (same) {
            for (int64_t k = 0; k < ne0; k++) {
                copy_elem(rd + k * dst->nb[0], elem(a, i), es);
                step(a, i);
            }
        } else {
            for (int64_t k = 0; k < ne0; k++) {
                loom_st_f(rd + k * dst->nb[0], dst->type, loom_ld_f(elem(a, i), a->type));
                step(a, i);
            }
        }
    }
}

/* ------------------------------------------------------------------ SET */

static size_t param_size(const loom_tensor *t, int i) {
    return (size_t)((uint64_t)(uint32_t)t->op_params[i] | ((uint64_t)(uint32_t)t->op_params[i + 1] << 32));
}

void loom_cpu_op_set(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *a = dst->src[0], *b = dst->src[1];
    size_t nbytes = loom_tensor_nbytes(dst);
    int64_t b0, b1;
    loom_cpu_split((int64_t)nbytes, p->ith, p->nth, &b0, &b1);
    if (b1 > b0) memcpy((char *)dst->data + b0, (const char *)a->data + b0, (size_t)(b1 - b0));
    loom_cpu_barrier(p);
    size_t off = param_size(dst, 0), nb1 = param_size(dst, 2), nb2 = param_size(dst, 4), nb3 = param_size(dst, 6);
    size_t es = loom_type_size(dst->type);
    int64_t r0, r1;
    loom_cpu_split(loom_nrows(b), p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i3 = r / (b->ne[1] * b->ne[2]), i2 = (r / b->ne[1]) % b->ne[2], i1 = r % b->ne[1];
        const char *rb = loom_row_ptr(b, i1, i2, i3);
        char *rd = (char *)dst->data + off + (size_t)i1 * nb1 + (size_t)i2 * nb2 + (size_t)i3 * nb3;
        for (int64_t k = 0; k < b->ne[0]; k++) copy_elem(rd + (size_t)k * es, rb + k * b->nb[0], es);
    }
}

/* ------------------------------------------------------------------ PAD / CONCAT / REPEAT */

void loom_cpu_op_pad(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *a = dst->src[0];
    int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2];
    int64_t r0, r1;
    loom_cpu_split(loom_nrows(dst), p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i3 = r / (ne1 * ne2), i2 = (r / ne1) % ne2, i1 = r % ne1;
        float *d = (float *)loom_row_ptr(dst, i1, i2, i3);
        bool inside = i1 < a->ne[1] && i2 < a->ne[2] && i3 < a->ne[3];
        int64_t n = inside ? (a->ne[0] < ne0 ? a->ne[0] : ne0) : 0;
        const char *ra = inside ? loom_row_ptr(a, i1, i2, i3) : NULL;
        for (int64_t k = 0; k < n; k++) d[k] = loom_ld_f(ra + k * a->nb[0], LOOM_TYPE_F32);
        for (int64_t k = n; k < ne0; k++) d[k] = 0.0f;
    }
}

void loom_cpu_op_concat(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *a = dst->src[0], *b = dst->src[1];
    int dim = loom_get_op_param_i32(dst, 0);
    int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2];
    size_t es = loom_type_size(dst->type);
    int64_t r0, r1;
    loom_cpu_split(loom_nrows(dst), p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i[4] = {0, r % ne1, (r / ne1) % ne2, r / (ne1 * ne2)};
        char *d = loom_row_ptr(dst, i[1], i[2], i[3]);
        for (i[0] = 0; i[0] < ne0; i[0]++) {
            int64_t j[4] = {i[0], i[1], i[2], i[3]};
            const loom_tensor *s = a;
            if (j[dim] >= a->ne[dim]) {
                j[dim] -= a->ne[dim];
                s = b;
            }
            copy_elem(d + (size_t)i[0] * es, elem(s, j), es);
        }
    }
}

void loom_cpu_op_repeat(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *a = dst->src[0];
    int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2];
    size_t es = loom_type_size(dst->type);
    int64_t r0, r1;
    loom_cpu_split(loom_nrows(dst), p->ith, p->nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1 = r % ne1, i2 = (r / ne1) % ne2, i3 = r / (ne1 * ne2);
        char *d = loom_row_ptr(dst, i1, i2, i3);
        const char *ra = loom_row_ptr(a, i1 % a->ne[1], i2 % a->ne[2], i3 % a->ne[3]);
        for (int64_t k = 0; k < ne0; k++) copy_elem(d + (size_t)k * es, ra + (k % a->ne[0]) * a->nb[0], es);
    }
}

/* ------------------------------------------------------------------ GET_ROWS */

void loom_cpu_op_get_rows(const loom_compute_params *p, loom_tensor *dst) {
    const loom_tensor *a = dst->src[0], *ids = dst->src[1];
    int64_t ne0 = dst->ne[0], ne1 = dst->ne[1], ne2 = dst->ne[2];
    int64_t r0, r1;
    loom_cpu_split(loom_nrows(dst), p->ith, p->nth, &r0, &r1);
    size_t row = loom_row_size(a);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i10 = r % ne1, i11 = (r / ne1) % ne2, i12 = r / (ne1 * ne2);
        int32_t id;
        memcpy(&id, (const char *)ids->data + i10 * ids->nb[0] + i11 * ids->nb[1] + i12 * ids->nb[2], 4);
        char *d = loom_row_ptr(dst, i10, i11, i12);
        if (id < 0 || id >= a->ne[1]) {
            memset(d, 0, (size_t)ne0 * loom_type_size(dst->type));
            loom_cpu_fail(p, LOOM_ERR_RANGE);
            continue;
        }
        const char *s = loom_row_ptr(a, id, i11, i12);
        switch (a->type) {
        case LOOM_TYPE_F32:
        case LOOM_TYPE_I32: memcpy(d, s, row); break;
        case LOOM_TYPE_F16:
        case LOOM_TYPE_BF16:
            for (int64_t k = 0; k < ne0; k++) ((float *)d)[k] = loom_ld_f(s + 2 * k, a->type);
            break;
        default: {
            loom_status st = loom_dequantize_row(a->type, s, (float *)d, ne0);
            if (st) loom_cpu_fail(p, st);
        }
        }
    }
}
