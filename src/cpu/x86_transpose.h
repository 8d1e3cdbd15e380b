/*
 * x86_transpose.h (internal) - the dword transposes the x86 files share: 8 x 8 (AVX2: the
 * 8-row IQ and legacy-type tiles) and 16 x 16 (AVX-512: the F16 / BF16 panels, the AMX
 * weight packing, the 16-row IQ and legacy-type tiles; only where __AVX512F__ is defined).
 * Include only from files compiled with -mavx2 or more.
 */
#ifndef LOOM_CPU_X86_TRANSPOSE_H
#define LOOM_CPU_X86_TRANSPOSE_H

#include "cpu/kernels_internal.h"

#include <immintrin.h>

/* v[d] := dword d of v[0..7] (row m of the input is v[m]), in place */
static LOOM_ALWAYS_INLINE void loom_transpose8_epi32(__m256i v[8]) {
    __m256i t[8];
    LOOM_UNROLL_ALL
    for (int m = 0; m < 8; m += 2) {
        t[m] = _mm256_unpacklo_epi32(v[m], v[m + 1]);     /* per lane: d0 d0 d1 d1 of rows m, m+1 */
        t[m + 1] = _mm256_unpackhi_epi32(v[m], v[m + 1]); /* d2 d2 d3 d3 */
    }
    LOOM_UNROLL_ALL
    for (int m = 0; m < 8; m += 4) {
        v[m] = _mm256_unpacklo_epi64(t[m], t[m + 2]);     /* per lane L: dword 4L of rows m..m+3 */
        v[m + 1] = _mm256_unpackhi_epi64(t[m], t[m + 2]); /* 4L + 1 */
        v[m + 2] = _mm256_unpacklo_epi64(t[m + 1], t[m + 3]);
        v[m + 3] = _mm256_unpackhi_epi64(t[m + 1], t[m + 3]);
    }
    LOOM_UNROLL_ALL
    for (int e = 0; e < 4; e++) {
        t[e] = _mm256_permute2x128_si256(v[e], v[4 + e], 0x20);     /* dword e of rows 0..7 */
        t[4 + e] = _mm256_permute2x128_si256(v[e], v[4 + e], 0x31); /* dword 4 + e */
    }
    LOOM_UNROLL_ALL
    for (int d = 0; d < 8; d++) v[d] = t[d];
}

#ifdef __AVX512F__
/* v[d] := dword d of v[0..15] (row m of the input is v[m]), in place */
static LOOM_ALWAYS_INLINE void loom_transpose16_epi32(__m512i v[16]) {
    __m512i t[16];
    LOOM_UNROLL_ALL
    for (int m = 0; m < 16; m += 2) {
        t[m] = _mm512_unpacklo_epi32(v[m], v[m + 1]);
        t[m + 1] = _mm512_unpackhi_epi32(v[m], v[m + 1]);
    }
    LOOM_UNROLL_ALL
    for (int m = 0; m < 16; m += 4) {
        v[m] = _mm512_unpacklo_epi64(t[m], t[m + 2]);
        v[m + 1] = _mm512_unpackhi_epi64(t[m], t[m + 2]);
        v[m + 2] = _mm512_unpacklo_epi64(t[m + 1], t[m + 3]);
        v[m + 3] = _mm512_unpackhi_epi64(t[m + 1], t[m + 3]);
    }
    /* v[4q + e] now holds, per 128-bit lane L, dword 4L + e of rows 4q..4q+3 */
    LOOM_UNROLL_ALL
    for (int e = 0; e < 4; e++) {
        t[e] = _mm512_shuffle_i32x4(v[e], v[4 + e], 0x88);      /* lanes 0, 2 of rows 0-3, 4-7 */
        t[4 + e] = _mm512_shuffle_i32x4(v[e], v[4 + e], 0xDD);  /* lanes 1, 3 */
        t[8 + e] = _mm512_shuffle_i32x4(v[8 + e], v[12 + e], 0x88);
        t[12 + e] = _mm512_shuffle_i32x4(v[8 + e], v[12 + e], 0xDD);
    }
    LOOM_UNROLL_ALL
    for (int e = 0; e < 4; e++) {
        v[e] = _mm512_shuffle_i32x4(t[e], t[8 + e], 0x88);          /* lane 0: dword e */
        v[8 + e] = _mm512_shuffle_i32x4(t[e], t[8 + e], 0xDD);      /* lane 2 */
        v[4 + e] = _mm512_shuffle_i32x4(t[4 + e], t[12 + e], 0x88); /* lane 1 */
        v[12 + e] = _mm512_shuffle_i32x4(t[4 + e], t[12 + e], 0xDD); /* lane 3 */
    }
}

/* the same for 16 x 16 floats */
static LOOM_ALWAYS_INLINE void loom_transpose16_ps(__m512 r[16]) {
    __m512i v[16];
    LOOM_UNROLL_ALL
    for (int m = 0; m < 16; m++) v[m] = _mm512_castps_si512(r[m]);
    loom_transpose16_epi32(v);
    LOOM_UNROLL_ALL
    for (int m = 0; m < 16; m++) r[m] = _mm512_castsi512_ps(v[m]);
}

/* C[(j0 + col)*ldc + i0 + r] = T[r*ts + col] for r < nrow, col < ncol: a block of sums
 * kept row-major (T 64-byte aligned, ts a multiple of 16) written into column-major C by
 * 16 x 16 transposes and masked stores of the valid rows (the F16 / BF16 prompt tiles). */
static LOOM_ALWAYS_INLINE void loom_store_t16(const float *T, size_t ts, float *c, size_t ldc, int64_t i0, int64_t nrow,
                                              int64_t j0, int64_t ncol) {
    for (int64_t rb = 0; rb < nrow; rb += 16) {
        const int64_t rn = nrow - rb < 16 ? nrow - rb : 16;
        const __mmask16 rm = (__mmask16)(rn == 16 ? 0xFFFF : (1u << rn) - 1);
        for (int64_t cb = 0; cb < ncol; cb += 16) {
            __m512 v[16];
            LOOM_UNROLL_ALL for (int x = 0; x < 16; x++)
                v[x] = x < rn ? _mm512_load_ps(T + (size_t)(rb + x) * ts + cb) : _mm512_setzero_ps();
            loom_transpose16_ps(v);
            const int64_t cn = ncol - cb < 16 ? ncol - cb : 16;
            for (int64_t x = 0; x < cn; x++) _mm512_mask_storeu_ps(c + (size_t)(j0 + cb + x) * ldc + i0 + rb, rm, v[x]);
        }
    }
}
#endif

#endif
