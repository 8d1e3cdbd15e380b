/*
 * kernels_fa_avx2.c - AVX2 flash-attention p.V (kernels.h fa_pv).
 *
 * The tile's keys are the inner loop and up to 8 query heads' accumulators for one
 * 8-float slice of Dv stay in registers: per key the V slice is loaded and
 * converted once (F16 vcvtph2ps; Q8_0 / Q4_0 widened to int32, converted, times the
 * block scale) and each head adds p * v. The key-by-key axpy_f32 it replaces loads
 * and stores every accumulator per key and head. One FMA per key, head and value, in
 * key order: bit-identical to loom_fa_pv_ref.
 */
#include "cpu/kernels_internal.h"

#include <immintrin.h>

#define ALWAYS_INLINE LOOM_ALWAYS_INLINE
#define PV_TILE 64 /* keys per pass (the live-key list lives on the stack) */

/* 8 values of row r from element d0 (a multiple of 8) as floats. */
static ALWAYS_INLINE __m256 pv_load(loom_type vt, const uint8_t *r, int64_t d0) {
    if (vt == LOOM_TYPE_F32) return _mm256_loadu_ps((const float *)r + d0);
    if (vt == LOOM_TYPE_F16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)r + d0)));
    if (vt == LOOM_TYPE_Q8_0) {
        const block_q8_0 *b = (const block_q8_0 *)r + d0 / 32;
        const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(b->qs + (d0 & 24))));
        return _mm256_mul_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(_cvtsh_ss(b->d)));
    }
    /* Q4_0: elements 0..15 of a block are the low nibbles of qs[0..15], 16..31 the high */
    const block_q4_0 *b = (const block_q4_0 *)r + d0 / 32;
    __m256i u = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(b->qs + (d0 & 8))));
    u = (d0 & 16) ? _mm256_srli_epi32(u, 4) : _mm256_and_si256(u, _mm256_set1_epi32(15));
    u = _mm256_sub_epi32(u, _mm256_set1_epi32(8));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(u), _mm256_set1_ps(_cvtsh_ss(b->d)));
}

/* Heads [0, H) (H <= 8, a constant after inlining) over the live keys, one Dv slice. */
static ALWAYS_INLINE void pv_slice(const int H, loom_type vt, const int32_t *live, int nl, const float *p, size_t ps,
                                   const uint8_t *v, size_t vs, float *acc, size_t as, int64_t d0) {
    __m256 a[8];
    LOOM_UNROLL
    for (int h = 0; h < H; h++) a[h] = _mm256_loadu_ps(acc + (size_t)h * as + d0);
    for (int i = 0; i < nl; i++) {
        const int32_t j = live[i];
        const __m256 x = pv_load(vt, v + (size_t)j * vs, d0);
        LOOM_UNROLL
        for (int h = 0; h < H; h++)
            a[h] = _mm256_fmadd_ps(_mm256_set1_ps(p[(size_t)h * ps + (size_t)j]), x, a[h]);
    }
    LOOM_UNROLL
    for (int h = 0; h < H; h++) _mm256_storeu_ps(acc + (size_t)h * as + d0, a[h]);
}

static ALWAYS_INLINE void pv_heads(loom_type vt, int H, const int32_t *live, int nl, const float *p, size_t ps,
                                   const uint8_t *v, size_t vs, float *acc, size_t as, int64_t Dv) {
    for (int64_t d0 = 0; d0 < Dv; d0 += 8) {
        switch (H) {
#define PV_CASE(N) \
    case N: pv_slice(N, vt, live, nl, p, ps, v, vs, acc, as, d0); break;
            PV_CASE(1) PV_CASE(2) PV_CASE(3) PV_CASE(4) PV_CASE(5) PV_CASE(6) PV_CASE(7) PV_CASE(8)
#undef PV_CASE
        default: break;
        }
    }
}

static ALWAYS_INLINE void pv_type(loom_type vt, int64_t n, int64_t G, int64_t Dv, const float *p, size_t ps,
                                  const uint8_t *v, size_t vs, float *acc, size_t as) {
    int32_t live[PV_TILE];
    for (int64_t j0 = 0; j0 < n; j0 += PV_TILE) {
        const int64_t j1 = j0 + PV_TILE < n ? j0 + PV_TILE : n;
        int nl = 0;
        for (int64_t j = j0; j < j1; j++) {
            bool any = false;
            for (int64_t h = 0; h < G && !any; h++) any = p[(size_t)h * ps + (size_t)j] != 0.0f;
            if (any) live[nl++] = (int32_t)j;
        }
        if (!nl) continue;
        for (int64_t h0 = 0; h0 < G; h0 += 8) {
            const int H = (int)(G - h0 < 8 ? G - h0 : 8);
            pv_heads(vt, H, live, nl, p + (size_t)h0 * ps, ps, v, vs, acc + (size_t)h0 * as, as, Dv);
        }
    }
}

static bool fa_pv(loom_type vt, int64_t n, int64_t G, int64_t Dv, const float *p, size_t ps, const void *v, size_t vs,
                  float *acc, size_t as) {
    if (Dv % 8 || ((vt == LOOM_TYPE_Q8_0 || vt == LOOM_TYPE_Q4_0) && Dv % 32)) return false;
    switch (vt) {
    case LOOM_TYPE_F32: pv_type(LOOM_TYPE_F32, n, G, Dv, p, ps, v, vs, acc, as); return true;
    case LOOM_TYPE_F16: pv_type(LOOM_TYPE_F16, n, G, Dv, p, ps, v, vs, acc, as); return true;
    case LOOM_TYPE_Q8_0: pv_type(LOOM_TYPE_Q8_0, n, G, Dv, p, ps, v, vs, acc, as); return true;
    case LOOM_TYPE_Q4_0: pv_type(LOOM_TYPE_Q4_0, n, G, Dv, p, ps, v, vs, acc, as); return true;
    default: return false;
    }
}

void loom_kernels_fill_fa_avx2(loom_kernels *k) { k->fa_pv = fa_pv; }
