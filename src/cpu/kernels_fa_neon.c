/*
 * kernels_fa_neon.c - AArch64 Advanced SIMD flash-attention tile kernels (kernels.h
 * fa_qk and fa_pv; fa_softmax and fa_rows stay the references). The shared body
 * (kernels_fa_body.h) with 4-lane vectors: fa_qk blocks 6 keys x 16 rows, fa_pv 6
 * rows x 16 values of Dv, in 24 of the 32 registers. Bit-identical to the
 * references (one fused multiply-add per step, the same order per output).
 */
#include "cpu/kernels_internal.h"

#include <arm_neon.h>

#define ALWAYS_INLINE LOOM_ALWAYS_INLINE

static inline int fa_nz4(float32x4_t v) {
    const uint32x4_t nz = vmvnq_u32(vceqq_f32(v, vdupq_n_f32(0.0f))); /* NaN: != 0 */
    return (int)((vgetq_lane_u32(nz, 0) & 1u) | (vgetq_lane_u32(nz, 1) & 2u) | (vgetq_lane_u32(nz, 2) & 4u) |
                 (vgetq_lane_u32(nz, 3) & 8u));
}

#define FA_VEC float32x4_t
#define FA_W 4
#define FA_LOADU vld1q_f32
#define FA_STOREU vst1q_f32
#define FA_SET1 vdupq_n_f32
#define FA_ZERO vdupq_n_f32(0.0f)
#define FA_FMADD(a, b, c) vfmaq_f32((c), (a), (b))
#define FA_MUL vmulq_f32
#define FA_NZ fa_nz4
#define QK_NK 6
#define PV_NR 6
#include "cpu/kernels_fa_body.h"

void loom_kernels_fill_fa_neon(loom_kernels *k) {
    k->fa_qk = fa_qk;
    k->fa_pv = fa_pv;
}
