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

#define FA_VEC __m256
#define FA_W 8
#define FA_LOADU _mm256_loadu_ps
#define FA_STOREU _mm256_storeu_ps
#define FA_SET1 _mm256_set1_ps
#define FA_FMADD _mm256_fmadd_ps
#include "cpu/kernels_fa_body.h"

void loom_kernels_fill_fa_avx2(loom_kernels *k) { k->fa_pv = fa_pv; }
