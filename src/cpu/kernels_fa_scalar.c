/*
 * kernels_fa_scalar.c - references for the flash-attention tile kernels (kernels.h
 * fa_qk, fa_softmax, fa_pv). Each row's arithmetic is spelled out as the SIMD levels
 * must do it: scores one fmaf per d, probabilities summed in key order, p.V one fmaf
 * per key. The SIMD levels (kernels_fa_avx2.c, kernels_fa_avx512.c) match fa_qk and
 * fa_pv bit for bit; their fa_softmax uses their polynomial exp.
 */
#include "cpu/kernels_internal.h"

#include <math.h>

void loom_fa_qk_ref(int64_t Dk, int64_t R, int64_t Rp, int64_t nk, const float *qT, const float *kf, size_t ks,
                    float *sT) {
    for (int64_t j = 0; j < nk; j++)
        for (int64_t r = 0; r < Rp; r++) {
            float a = 0.0f;
            for (int64_t d = 0; d < Dk && r < R; d++)
                a = fmaf(kf[(size_t)j * ks + (size_t)d], qT[(size_t)d * (size_t)Rp + (size_t)r], a);
            sT[(size_t)j * (size_t)Rp + (size_t)r] = a;
        }
}

void loom_fa_softmax_ref(int64_t nk, int64_t Rp, int64_t G, float scale, const float *mT, size_t ms, float *sT,
                         float *M, float *S, float *f) {
    for (int64_t r = 0; r < Rp; r++) {
        const int64_t t = r / G;
        float mx = M[r];
        for (int64_t j = 0; j < nk; j++) {
            float *x = &sT[(size_t)j * (size_t)Rp + (size_t)r];
            const float m = mT[(size_t)j * ms + (size_t)t];
            const float y = *x * scale;
            *x = m == -INFINITY ? -INFINITY : y + m;
            if (*x > mx) mx = *x;
        }
        f[r] = mx == M[r] ? 1.0f : expf(M[r] - mx);
        float s = S[r] * f[r];
        for (int64_t j = 0; j < nk; j++) {
            float *x = &sT[(size_t)j * (size_t)Rp + (size_t)r];
            *x = *x == -INFINITY ? 0.0f : expf(*x - mx);
            s += *x;
        }
        S[r] = s;
        M[r] = mx;
    }
}

void loom_fa_pv_ref(int64_t nk, int64_t R, int64_t Rp, int64_t Dv, const float *sT, const float *f, const float *vf,
                    size_t vs, float *acc, size_t as) {
    for (int64_t r = 0; r < R; r++)
        for (int64_t d = 0; d < Dv; d++) acc[(size_t)r * as + (size_t)d] *= f[r];
    for (int64_t j = 0; j < nk; j++) {
        const float *p = sT + (size_t)j * (size_t)Rp;
        bool live = false;
        for (int64_t r = 0; r < R && !live; r++) live = p[r] != 0.0f;
        if (!live) continue;
        const float *v = vf + (size_t)j * vs;
        for (int64_t r = 0; r < R; r++) {
            float *y = acc + (size_t)r * as;
            for (int64_t d = 0; d < Dv; d++) y[d] = fmaf(p[r], v[d], y[d]);
        }
    }
}

bool loom_fa_rows_ref(loom_type t, int64_t n, int64_t D, const void *src, size_t ss, float *dst, size_t ds) {
    if (t != LOOM_TYPE_F32 && t != LOOM_TYPE_F16 && t != LOOM_TYPE_BF16 && t != LOOM_TYPE_Q8_0 && t != LOOM_TYPE_Q4_0)
        return false;
    for (int64_t i = 0; i < n; i++)
        if (loom_dequantize_row(t, (const uint8_t *)src + (size_t)i * ss, dst + (size_t)i * ds, D) != LOOM_OK)
            return false;
    return true;
}
