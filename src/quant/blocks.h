/*
 * blocks.h (internal) - C structs for the GGUF block layouts (backend contract §9.2).
 *
 * All fields are little-endian on disk; Loom only targets little-endian hosts.
 * `uint16_t` fields named d/m/s/dmin hold IEEE half bits (see loom_fp16_to_fp32).
 * Alignment: a row pointer must be aligned to 2 bytes (4 bytes for Q8_K, which is
 * an activation-only type that Loom allocates itself). GGUF tensor data is aligned
 * to general.alignment (>= 8 in practice); the loader checks that.
 */
#ifndef LOOM_QUANT_BLOCKS_H
#define LOOM_QUANT_BLOCKS_H

#include <stdint.h>
#include <string.h>

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK8_1 32
#define QK_MXFP4 32
#define QK_NVFP4 64 /* four sub-blocks of 16 */
#define QK1_0 128
#define QK2_0 64
#define QK_K 256

typedef struct { uint16_t d; uint8_t qs[16]; } block_q4_0;
typedef struct { uint16_t d, m; uint8_t qs[16]; } block_q4_1;
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[16]; } block_q5_0;
typedef struct { uint16_t d, m; uint8_t qh[4]; uint8_t qs[16]; } block_q5_1;
typedef struct { uint16_t d; int8_t qs[32]; } block_q8_0;
typedef struct { uint16_t d, s; int8_t qs[32]; } block_q8_1; /* s = d * sum(qs) */
typedef struct { uint8_t scales[16]; uint8_t qs[64]; uint16_t d, dmin; } block_q2_K;
typedef struct { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint16_t d; } block_q3_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; } block_q4_K;
typedef struct { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; } block_q5_K;
typedef struct { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; } block_q6_K;
typedef struct { float d; int8_t qs[256]; int16_t bsums[16]; } block_q8_K; /* bsums[g] = sum qs[16g..16g+15] */
typedef struct { uint8_t e; uint8_t qs[16]; } block_mxfp4;
typedef struct { uint8_t d[4]; uint8_t qs[32]; } block_nvfp4; /* sub-block s: qs[8s..8s+7], low nibbles first */
typedef struct { uint16_t d; uint8_t qs[16]; } block_q1_0;    /* element j: bit j%8 of qs[j/8] */
typedef struct { uint16_t d; uint8_t qs[16]; } block_q2_0;    /* element j: bits 2(j%4) of qs[j/4] */

_Static_assert(sizeof(block_q4_0) == 18, "q4_0");
_Static_assert(sizeof(block_q4_1) == 20, "q4_1");
_Static_assert(sizeof(block_q5_0) == 22, "q5_0");
_Static_assert(sizeof(block_q5_1) == 24, "q5_1");
_Static_assert(sizeof(block_q8_0) == 34, "q8_0");
_Static_assert(sizeof(block_q8_1) == 36, "q8_1");
_Static_assert(sizeof(block_q2_K) == 84, "q2_K");
_Static_assert(sizeof(block_q3_K) == 110, "q3_K");
_Static_assert(sizeof(block_q4_K) == 144, "q4_K");
_Static_assert(sizeof(block_q5_K) == 176, "q5_K");
_Static_assert(sizeof(block_q6_K) == 210, "q6_K");
_Static_assert(sizeof(block_q8_K) == 292, "q8_K");
_Static_assert(sizeof(block_mxfp4) == 17, "mxfp4");
_Static_assert(sizeof(block_nvfp4) == 36, "nvfp4");
_Static_assert(sizeof(block_q1_0) == 18, "q1_0");
_Static_assert(sizeof(block_q2_0) == 18, "q2_0");

/* MXFP4 (GGUF type 39) code values: 2 * E2M1, indexed by the 4-bit code. */
static const int8_t loom_mxfp4_kv[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* MXFP4 scale: 2^(e-128) for every e in 0..255 (e < 2 gives an f32 subnormal). */
static inline float loom_e8m0_half(uint8_t e) {
    uint32_t bits = e < 2 ? (0x00200000u << e) : ((uint32_t)(e - 1) << 23);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* NVFP4 scale: an unsigned E4M3 (bit 7 ignored; 0 and 0x7F are zero) times 1/2, so
 * that it multiplies the doubled E2M1 values of loom_mxfp4_kv. Exact in f32. */
static inline float loom_ue4m3_half(uint8_t x) {
    if (x == 0 || x == 0x7F) return 0.0f;
    const int e = (x >> 3) & 0xF, m = x & 7;
    /* e == 0: m * 2^-9; else (1 + m/8) * 2^(e-7); then * 0.5 */
    const float p2[16] = {1.0f / 128, 1.0f / 64, 1.0f / 32, 1.0f / 16, 1.0f / 8, 1.0f / 4, 1.0f / 2, 1.0f,
                          2.0f, 4.0f, 8.0f, 16.0f, 32.0f, 64.0f, 128.0f, 256.0f};
    const float raw = e == 0 ? (float)m * (1.0f / 512) : (1.0f + (float)m / 8.0f) * p2[e];
    return raw * 0.5f;
}

/* Q4_K / Q5_K 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes. */
static inline void loom_k4_scale_min(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* Q3_K signed 6-bit scale k (0..15) from the 12 packed bytes. */
static inline int loom_k3_scale(int k, const uint8_t *s) {
    int lo4 = k < 8 ? (s[k] & 0xF) : (s[k - 8] >> 4);
    int hi2 = (s[8 + (k & 3)] >> (2 * (k >> 2))) & 3;
    return (lo4 | (hi2 << 4)) - 32;
}


/* IQ / TQ layouts (GGUF types 16..23, 29, 34, 35); codebooks in quant/iq_tables.h. */
typedef struct { uint16_t d; uint16_t qs[32]; } block_iq2_xxs;
typedef struct { uint16_t d; uint16_t qs[32]; uint8_t scales[8]; } block_iq2_xs;
typedef struct { uint16_t d; uint8_t qs[64]; uint8_t qh[8]; uint8_t scales[8]; } block_iq2_s;
typedef struct { uint16_t d; uint8_t qs[96]; } block_iq3_xxs;
typedef struct { uint16_t d; uint8_t qs[64]; uint8_t qh[8]; uint8_t signs[32]; uint8_t scales[4]; } block_iq3_s;
typedef struct { uint16_t d; uint8_t qs[32]; uint16_t qh[8]; } block_iq1_s;
typedef struct { uint8_t qs[32]; uint8_t qh[16]; uint8_t scales[8]; } block_iq1_m;
typedef struct { uint16_t d; uint8_t qs[16]; } block_iq4_nl;
typedef struct { uint16_t d; uint16_t scales_h; uint8_t scales_l[4]; uint8_t qs[128]; } block_iq4_xs;
typedef struct { uint8_t qs[48]; uint8_t qh[4]; uint16_t d; } block_tq1_0;
typedef struct { uint8_t qs[64]; uint16_t d; } block_tq2_0;

_Static_assert(sizeof(block_iq2_xxs) == 66, "iq2_xxs");
_Static_assert(sizeof(block_iq2_xs) == 74, "iq2_xs");
_Static_assert(sizeof(block_iq2_s) == 82, "iq2_s");
_Static_assert(sizeof(block_iq3_xxs) == 98, "iq3_xxs");
_Static_assert(sizeof(block_iq3_s) == 110, "iq3_s");
_Static_assert(sizeof(block_iq1_s) == 50, "iq1_s");
_Static_assert(sizeof(block_iq1_m) == 56, "iq1_m");
_Static_assert(sizeof(block_iq4_nl) == 18, "iq4_nl");
_Static_assert(sizeof(block_iq4_xs) == 136, "iq4_xs");
_Static_assert(sizeof(block_tq1_0) == 54, "tq1_0");
_Static_assert(sizeof(block_tq2_0) == 66, "tq2_0");


/* IQ4_XS 6-bit scale of sub-block ib (0..7), 0..63 (the value used is ls - 32). */
static inline int loom_iq4xs_scale(const block_iq4_xs *b, int ib) {
    return ((b->scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) | (((b->scales_h >> (2 * ib)) & 3) << 4);
}

#endif
