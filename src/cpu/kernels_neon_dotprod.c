/* AArch64 Advanced SIMD kernels with the dot-product extension (table "neon_dotprod";
 * compiled with -march=armv8.2-a+dotprod+fp16 and selected only when the CPU reports
 * HWCAP_ASIMDDP and HWCAP_FPHP/ASIMDHP). Same kernels as kernels_neon.c, with the
 * signed int8 dot product done by SDOT. */
#include "cpu/kernels_internal.h"

#include <arm_neon.h>

static inline int32x4_t ndot(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }

#define NEON_FILL loom_kernels_fill_neon_dotprod
#include "cpu/kernels_neon_body.h"
