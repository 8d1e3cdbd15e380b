/*
 * kernels_fa_avx512.c - AVX-512 flash-attention p.V (kernels.h fa_pv).
 *
 * The tile's keys are the inner loop and up to 8 query heads' accumulators for one
 * 16-float slice of Dv stay in registers: per key the V slice is loaded and
 * converted once (F16 vcvtph2ps; Q8_0 / Q4_0 widened to int32, converted, times the
 * block scale) and each head adds p * v. The key-by-key axpy_f32 it replaces loads
 * and stores every accumulator per key and head. One FMA per key, head and value, in
 * key order: bit-identical to loom_fa_pv_ref.
 */
#include "cpu/kernels_internal.h"

#include <immintrin.h>

#define ALWAYS_INLINE LOOM_ALWAYS_INLINE
#define PV_TILE 64 /* keys per pass (the live-key list lives on the stack) */

/* 16 values of row r from element d0 (a multiple of 16) as floats. */
static ALWAYS_INLINE __m512 pv_load(loom_type vt, const uint8_t *r, int64_t d0) {
    if (vt == LOOM_TYPE_F32) return _mm512_loadu_ps((const float *)r + d0);
    if (vt == LOOM_TYPE_F16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)r + d0)));
    if (vt == LOOM_TYPE_Q8_0) {
        const block_q8_0 *b = (const block_q8_0 *)r + d0 / 32;
        const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(b->qs + (d0 & 16))));
        return _mm512_mul_ps(_mm512_cvtepi32_ps(q), _mm512_set1_ps(_cvtsh_ss(b->d)));
    }
    /* Q4_0: elements 0..15 of a block are the low nibbles of qs[0..15], 16..31 the high */
    const block_q4_0 *b = (const block_q4_0 *)r + d0 / 32;
    __m512i u = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)b->qs));
    u = (d0 & 16) ? _mm512_srli_epi32(u, 4) : _mm512_and_si512(u, _mm512_set1_epi32(15));
    u = _mm512_sub_epi32(u, _mm512_set1_epi32(8));
    return _mm512_mul_ps(_mm512_cvtepi32_ps(u), _mm512_set1_ps(_cvtsh_ss(b->d)));
}

#define FA_VEC __m512
#define FA_W 16
#define FA_LOADU _mm512_loadu_ps
#define FA_STOREU _mm512_storeu_ps
#define FA_SET1 _mm512_set1_ps
#define FA_FMADD _mm512_fmadd_ps
#include "cpu/kernels_fa_body.h"

void loom_kernels_fill_fa_avx512(loom_kernels *k) { k->fa_pv = fa_pv; }
