/* IEEE binary16 and bfloat16 <-> binary32 conversions, bit-level, round to nearest even. */
#include "loom_base.h"

#include <string.h>

static inline uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float loom_fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu;
    uint32_t m = h & 0x3FFu;
    if (e == 0x1F) return u2f(sign | 0x7F800000u | (m << 13)); /* inf / NaN (payload kept) */
    if (e != 0) return u2f(sign | ((e + 112u) << 23) | (m << 13));
    if (m == 0) return u2f(sign);
    /* subnormal: m * 2^-24; normalise */
    uint32_t e32 = 113; /* exponent field of 2^-14 */
    while (!(m & 0x400u)) {
        m <<= 1;
        e32--;
    }
    return u2f(sign | (e32 << 23) | ((m & 0x3FFu) << 13));
}

uint16_t loom_fp32_to_fp16(float f) {
    uint32_t x = f2u(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7FFFFFFFu;
    if (ax > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((ax >> 13) & 0x3FFu)); /* NaN */
    if (ax == 0x7F800000u) return (uint16_t)(sign | 0x7C00u);
    int e = (int)(ax >> 23) - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7C00u);
    if (e <= 0) {
        int shift = 14 - e;
        if (shift > 24) return sign;
        uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1u);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return (uint16_t)(sign | q);
    }
    uint32_t q = ((uint32_t)e << 10) | ((ax >> 13) & 0x3FFu);
    uint32_t rem = ax & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++; /* may carry into inf: correct */
    return (uint16_t)(sign | q);
}

float loom_bf16_to_fp32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t loom_fp32_to_bf16(float f) {
    uint32_t x = f2u(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}
