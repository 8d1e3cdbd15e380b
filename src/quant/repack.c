/* Row-interleaved CPU weight layout (see repack.h). */
#include "quant/repack.h"

#include "quant/blocks.h"

#include <stddef.h>
#include <string.h>

bool loom_repack_type_ok(loom_type t) {
    return t == LOOM_TYPE_Q4_0 || t == LOOM_TYPE_Q8_0 || t == LOOM_TYPE_Q4_K || t == LOOM_TYPE_Q6_K ||
           t == LOOM_TYPE_IQ4_NL || t == LOOM_TYPE_IQ4_XS || t == LOOM_TYPE_Q5_K || t == LOOM_TYPE_Q2_K ||
           t == LOOM_TYPE_Q4_1 || t == LOOM_TYPE_Q5_0 || t == LOOM_TYPE_Q5_1;
}

loom_type loom_repack_act_type(loom_type t) {
    switch (t) {
    case LOOM_TYPE_Q4_0:
    case LOOM_TYPE_IQ4_NL:
    case LOOM_TYPE_Q5_0:
    case LOOM_TYPE_Q8_0: return LOOM_TYPE_Q8_0;
    case LOOM_TYPE_Q4_1:
    case LOOM_TYPE_Q5_1: return LOOM_TYPE_Q8_1;
    case LOOM_TYPE_Q2_K:
    case LOOM_TYPE_Q4_K:
    case LOOM_TYPE_Q5_K:
    case LOOM_TYPE_IQ4_XS:
    case LOOM_TYPE_Q6_K: return LOOM_TYPE_Q8_K;
    default: return LOOM_TYPE_COUNT;
    }
}

static int64_t block_elems(loom_type t) {
    return t == LOOM_TYPE_Q4_K || t == LOOM_TYPE_Q6_K || t == LOOM_TYPE_IQ4_XS || t == LOOM_TYPE_Q5_K ||
                   t == LOOM_TYPE_Q2_K
               ? 256
               : 32;
}

/* One field of a block, either direction: n bytes at packed offset poff of the group and
 * row-major offset uoff (MOVE uses the callers' s, d, to_packed, p0 and u0). */
static void move_field(const uint8_t *s, uint8_t *d, bool to_packed, size_t poff, size_t uoff, size_t n) {
    if (to_packed) memcpy(d + poff, s + uoff, n);
    else memcpy(d + uoff, s + poff, n);
}
#define MOVE(poff, uoff, n) move_field(s, d, to_packed, p0 + (poff), u0 + (uoff), (n))

/* Q4_1 / Q5_0 / Q5_1 block b of a 16-row group, either direction (see repack.h): d,
 * then m (Q4_1, Q5_1), then qh (Q5_0, Q5_1), then the four 4-byte chunks of qs, every
 * field as it is. */
static void lg_block(loom_type t, const uint8_t *s, uint8_t *d, size_t rowb, size_t b, bool to_packed) {
    const bool mn = t != LOOM_TYPE_Q5_0, hb = t != LOOM_TYPE_Q4_1;
    const size_t bb = t == LOOM_TYPE_Q4_1 ? sizeof(block_q4_1) : t == LOOM_TYPE_Q5_0 ? sizeof(block_q5_0)
                                                                                  : sizeof(block_q5_1);
    const size_t p0 = b * bb * LOOM_REPACK_ROWS, pm = 32, ph = loom_repack_lg_qh(t), pq = loom_repack_lg_qs(t);
    const size_t um = 2, uh = mn ? 4 : 2, uq = uh + (hb ? 4 : 0); /* offsets in the GGUF block */
    for (size_t r = 0; r < LOOM_REPACK_ROWS; r++) {
        const size_t u0 = r * rowb + b * bb;
        MOVE(2 * r, 0, 2);
        if (mn) MOVE(pm + 2 * r, um, 2);
        if (hb) MOVE(ph + 4 * r, uh, 4);
        for (size_t c = 0; c < 4; c++) MOVE(pq + 64 * c + 4 * r, uq + 4 * c, 4);
    }
}

/* Q2_K super-block b of a 16-row group, either direction (see repack.h): fields moved
 * as they are. */
static void q2k_block(const uint8_t *s, uint8_t *d, size_t rowb, size_t b, bool to_packed) {
    const size_t bb = sizeof(block_q2_K), p0 = b * bb * LOOM_REPACK_ROWS;
    for (size_t r = 0; r < LOOM_REPACK_ROWS; r++) {
        const size_t u0 = r * rowb + b * bb;
        MOVE(2 * r, offsetof(block_q2_K, d), 2);
        MOVE(32 + 2 * r, offsetof(block_q2_K, dmin), 2);
        for (size_t k = 0; k < 16; k++) MOVE(64 + 16 * k + r, offsetof(block_q2_K, scales) + k, 1);
        for (size_t u = 0; u < 16; u++) MOVE(320 + 64 * u + 4 * r, offsetof(block_q2_K, qs) + 4 * u, 4);
    }
}

/* IQ4_XS super-block b of a 16-row group, either direction (see repack.h): fields moved
 * as they are. */
static void iq4xs_block(const uint8_t *s, uint8_t *d, size_t rowb, size_t b, bool to_packed) {
    const size_t bb = sizeof(block_iq4_xs), p0 = b * bb * LOOM_REPACK_ROWS;
    for (size_t r = 0; r < LOOM_REPACK_ROWS; r++) {
        const size_t u0 = r * rowb + b * bb;
        MOVE(2 * r, offsetof(block_iq4_xs, d), 2);
        MOVE(32 + 2 * r, offsetof(block_iq4_xs, scales_h), 2);
        MOVE(64 + 4 * r, offsetof(block_iq4_xs, scales_l), 4);
        for (size_t u = 0; u < 32; u++) MOVE(128 + 64 * u + 4 * r, offsetof(block_iq4_xs, qs) + 4 * u, 4);
    }
}

/* Q6_K super-block b of a 16-row group, either direction (see repack.h): every field
 * is moved as it is, so one table of (packed offset, row offset, bytes) pieces does both. */
static void q6k_block(const uint8_t *s, uint8_t *d, size_t rowb, size_t b, bool to_packed) {
    const size_t bb = sizeof(block_q6_K), p0 = b * bb * LOOM_REPACK_ROWS;
    for (size_t r = 0; r < LOOM_REPACK_ROWS; r++) {
        const size_t u0 = r * rowb + b * bb; /* row-major block: ql[128] qh[64] scales[16] d */
        MOVE(2 * r, offsetof(block_q6_K, d), 2);
        for (size_t k = 0; k < 16; k++) MOVE(32 + 16 * k + r, offsetof(block_q6_K, scales) + k, 1);
        for (size_t u = 0; u < 32; u++) MOVE(loom_repack_q6k_ql(u) + 4 * r, offsetof(block_q6_K, ql) + 4 * u, 4);
        for (size_t u = 0; u < 16; u++) MOVE(loom_repack_q6k_qh(u) + 4 * r, offsetof(block_q6_K, qh) + 4 * u, 4);
    }
}
#undef MOVE

bool loom_repack_shape_ok(loom_type t, const int64_t ne[4]) {
    return loom_repack_type_ok(t) && ne[0] > 0 && ne[0] % block_elems(t) == 0 && ne[1] > 0 &&
           ne[1] % LOOM_REPACK_ROWS == 0 && ne[2] >= 1 && ne[3] == 1;
}

/* Q4_K: the 6-bit scale sc[s] and min m[s] of sub-block s from the 12 GGUF bytes. */
static void q4k_get(const uint8_t *q, int s, int *sc, int *m) {
    if (s < 4) {
        *sc = q[s] & 63;
        *m = q[s + 4] & 63;
    } else {
        *sc = (q[s + 4] & 0xF) | ((q[s - 4] >> 6) << 4);
        *m = (q[s + 4] >> 4) | ((q[s] >> 6) << 4);
    }
}

/* Q4_K (q5 false) or Q5_K super-block b of a 16-row group, either direction (see
 * repack.h): Q5_K is Q4_K's fields (its qs after qh in the GGUF block) plus qh. */
static void q4k_block(const uint8_t *s, uint8_t *d, size_t rowb, size_t b, bool to_packed, bool q5) {
    const size_t bb = q5 ? sizeof(block_q5_K) : sizeof(block_q4_K), p0 = b * bb * LOOM_REPACK_ROWS;
    const size_t qs0 = q5 ? offsetof(block_q5_K, qs) : 16; /* GGUF offset of the nibble bytes */
    for (int r = 0; r < LOOM_REPACK_ROWS; r++) {
        const size_t u0 = (size_t)r * rowb + b * bb; /* row-major block */
        if (to_packed) {
            const uint8_t *u = s + u0;
            memcpy(d + p0 + 2u * (size_t)r, u, 2);
            memcpy(d + p0 + 32u + 2u * (size_t)r, u + 2, 2);
            int sc[8], m[8];
            for (int k = 0; k < 8; k++) q4k_get(u + 4, k, &sc[k], &m[k]);
            for (int k = 0; k < 8; k++) d[p0 + 64u + 16u * (size_t)k + (size_t)r] = (uint8_t)((sc[k] & 15) | (m[k] & 15) << 4);
            for (int t = 0; t < 4; t++)
                d[p0 + 192u + 16u * (size_t)t + (size_t)r] =
                    (uint8_t)(sc[t] >> 4 | (sc[t + 4] >> 4) << 2 | (m[t] >> 4) << 4 | (m[t + 4] >> 4) << 6);
            for (size_t u4 = 0; u4 < 32; u4++)
                memcpy(d + p0 + loom_repack_kq_qs(q5, u4) + 4u * (size_t)r, u + qs0 + 4 * u4, 4);
            if (q5)
                for (size_t u4 = 0; u4 < 8; u4++)
                    memcpy(d + p0 + loom_repack_q5k_qh(u4) + 4u * (size_t)r, u + offsetof(block_q5_K, qh) + 4 * u4, 4);
        } else {
            uint8_t *u = d + u0;
            const uint8_t *p = s + p0;
            memcpy(u, p + 2 * r, 2);
            memcpy(u + 2, p + 32 + 2 * r, 2);
            int sc[8], m[8];
            for (int k = 0; k < 8; k++) {
                const uint8_t lo = p[64 + 16 * k + r], hi = p[192 + 16 * (k % 4) + r];
                const int sh = k < 4 ? 0 : 2;
                sc[k] = (lo & 15) | ((hi >> sh) & 3) << 4;
                m[k] = (lo >> 4) | ((hi >> (4 + sh)) & 3) << 4;
            }
            uint8_t *q = u + 4;
            for (int j = 0; j < 4; j++) {
                q[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
                q[j + 4] = (uint8_t)(m[j] | (m[j + 4] >> 4) << 6);
                q[j + 8] = (uint8_t)((sc[j + 4] & 15) | (m[j + 4] & 15) << 4);
            }
            for (size_t u4 = 0; u4 < 32; u4++) memcpy(u + qs0 + 4 * u4, p + loom_repack_kq_qs(q5, u4) + 4 * r, 4);
            if (q5)
                for (size_t u4 = 0; u4 < 8; u4++)
                    memcpy(u + offsetof(block_q5_K, qh) + 4 * u4, p + loom_repack_q5k_qh(u4) + 4 * r, 4);
        }
    }
}

/* One conversion routine for both directions: to_packed selects the direction. */
static loom_status convert(loom_type t, int64_t k, int64_t nrows, const void *src, void *dst, bool to_packed) {
    if (!loom_repack_type_ok(t) || k <= 0 || k % block_elems(t) != 0 || nrows < 0 ||
        nrows % LOOM_REPACK_ROWS != 0 || !src || !dst)
        return LOOM_ERR_INVALID_ARG;
    if (block_elems(t) == 256) {
        const bool k5 = t == LOOM_TYPE_Q5_K, k4 = t == LOOM_TYPE_Q4_K || k5, xs = t == LOOM_TYPE_IQ4_XS,
                   k2 = t == LOOM_TYPE_Q2_K;
        const size_t nbk = (size_t)(k / 256),
                     rowb = nbk * (k5   ? sizeof(block_q5_K)
                                   : k4 ? sizeof(block_q4_K)
                                   : xs ? sizeof(block_iq4_xs)
                                   : k2 ? sizeof(block_q2_K)
                                        : sizeof(block_q6_K));
        const size_t gbytes = rowb * LOOM_REPACK_ROWS;
        for (int64_t g = 0; g < nrows / LOOM_REPACK_ROWS; g++)
            for (size_t b = 0; b < nbk; b++) {
                const uint8_t *gs = (const uint8_t *)src + (size_t)g * gbytes;
                uint8_t *gd = (uint8_t *)dst + (size_t)g * gbytes;
                if (k4) q4k_block(gs, gd, rowb, b, to_packed, k5);
                else if (xs) iq4xs_block(gs, gd, rowb, b, to_packed);
                else if (k2) q2k_block(gs, gd, rowb, b, to_packed);
                else q6k_block(gs, gd, rowb, b, to_packed);
            }
        return LOOM_OK;
    }
    if (t == LOOM_TYPE_Q4_1 || t == LOOM_TYPE_Q5_0 || t == LOOM_TYPE_Q5_1) {
        size_t rowb = 0;
        if (loom_type_row_bytes(t, k, &rowb) != LOOM_OK) return LOOM_ERR_INVALID_ARG;
        for (int64_t g = 0; g < nrows / LOOM_REPACK_ROWS; g++)
            for (size_t b = 0; b < (size_t)(k / 32); b++)
                lg_block(t, (const uint8_t *)src + (size_t)g * rowb * LOOM_REPACK_ROWS,
                         (uint8_t *)dst + (size_t)g * rowb * LOOM_REPACK_ROWS, rowb, b, to_packed);
        return LOOM_OK;
    }
    const bool q4 = t == LOOM_TYPE_Q4_0 || t == LOOM_TYPE_IQ4_NL; /* same block: d, 16 nibble bytes */
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
