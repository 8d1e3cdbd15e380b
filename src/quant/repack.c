/* Row-interleaved CPU weight layout (see repack.h). */
#include "quant/repack.h"

#include "quant/blocks.h"

#include <string.h>

bool loom_repack_type_ok(loom_type t) { return t == LOOM_TYPE_Q4_0 || t == LOOM_TYPE_Q8_0; }

bool loom_repack_shape_ok(loom_type t, const int64_t ne[4]) {
    return loom_repack_type_ok(t) && ne[0] > 0 && ne[0] % 32 == 0 && ne[1] > 0 && ne[1] % LOOM_REPACK_ROWS == 0 &&
           ne[2] == 1 && ne[3] == 1;
}

/* One conversion routine for both directions: to_packed selects the direction. */
static loom_status convert(loom_type t, int64_t k, int64_t nrows, const void *src, void *dst, bool to_packed) {
    if (!loom_repack_type_ok(t) || k <= 0 || k % 32 != 0 || nrows < 0 || nrows % LOOM_REPACK_ROWS != 0 || !src ||
        !dst)
        return LOOM_ERR_INVALID_ARG;
    const bool q4 = t == LOOM_TYPE_Q4_0;
    const size_t bb = q4 ? sizeof(block_q4_0) : sizeof(block_q8_0); /* bytes per block */
    const int nchunk = q4 ? 4 : 8;                                 /* 4-byte chunks of quants */
    const uint32_t flip4 = q4 ? 0u : 0x80808080u; /* XOR every byte with 0x80 (Q8_0) */
    const int64_t nb = k / 32;
    const size_t rowb = (size_t)nb * bb, gbytes = rowb * LOOM_REPACK_ROWS;
    const uint8_t *s = src;
    uint8_t *d = dst;
    for (int64_t g = 0; g < nrows / LOOM_REPACK_ROWS; g++) {
        const size_t g0 = (size_t)g * gbytes;
        for (int64_t b = 0; b < nb; b++) {
            const size_t p0 = g0 + (size_t)b * bb * LOOM_REPACK_ROWS; /* packed block group */
            for (int r = 0; r < LOOM_REPACK_ROWS; r++) {
                const size_t u0 = g0 + (size_t)r * rowb + (size_t)b * bb; /* row-major block */
                const size_t ps = p0 + 2u * (size_t)r;                   /* packed scale */
                if (to_packed) memcpy(d + ps, s + u0, 2);
                else memcpy(d + u0, s + ps, 2);
                for (int c = 0; c < nchunk; c++) {
                    const size_t pq = p0 + 32u + (size_t)c * 64u + 4u * (size_t)r;
                    const size_t uq = u0 + 2u + 4u * (size_t)c;
                    uint32_t v;
                    memcpy(&v, to_packed ? s + uq : s + pq, 4);
                    v ^= flip4;
                    memcpy(to_packed ? d + pq : d + uq, &v, 4);
                }
            }
        }
    }
    return LOOM_OK;
}

loom_status loom_repack_rows(loom_type t, int64_t k, int64_t nrows, const void *src, void *dst) {
    return convert(t, k, nrows, src, dst, true);
}

loom_status loom_unpack_rows(loom_type t, int64_t k, int64_t nrows, const void *src, void *dst) {
    return convert(t, k, nrows, src, dst, false);
}
