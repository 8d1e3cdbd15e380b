/* Baseline AArch64 Advanced SIMD kernels (table "neon"; compiled with -march=armv8-a,
 * so they run on every AArch64 CPU). Signed int8 dot products use SMULL + SADALP,
 * exact for every int8 input. The SDOT variants live in kernels_neon_dotprod.c. */
#include "cpu/kernels_internal.h"

#include <arm_neon.h>

/* acc + sums of 4 adjacent signed byte products per lane (|product| <= 2^14 fits int16) */
static inline int32x4_t ndot(int32x4_t acc, int8x16_t a, int8x16_t b) {
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
}

#define NEON_FILL loom_kernels_fill_neon
#include "cpu/kernels_neon_body.h"
