/* Block formats: hand-computed blocks for every type, an independent float64
 * decoder written from the spec text, exhaustive F16/BF16 conversion checks,
 * quantization error budgets and exact round trips. */
#include "loom_base.h"
#include "test_util.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

/* ---------------------------------------------------------------- helpers */

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 16);
}
static double urand(void) { return (rnd() + 0.5) / 4294967296.0; }
static double gauss(void) { return sqrt(-2.0 * log(urand())) * cos(6.283185307179586 * urand()); }

/* Independent half decoder: value = sign * (e ? (1024+m)*2^(e-25) : m*2^-24). */
static double half_ref(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v;
    if (e == 31) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, -24);
    else v = ldexp(1024.0 + m, e - 25);
    return s ? -v : v;
}
static double bf16_ref(uint16_t h) {
    int s = h >> 15, e = (h >> 7) & 255, m = h & 127;
    double v;
    if (e == 255) v = m ? NAN : INFINITY;
    else if (e == 0) v = ldexp((double)m, -133);
    else v = ldexp(128.0 + m, e - 134);
    return s ? -v : v;
}
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

/* ------------------------------------------------------------ F16 / BF16 */

static void test_fp16_all(void) {
    int bad_dec = 0, bad_rt = 0, bad_mid = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        double r = half_ref((uint16_t)h);
        float f = loom_fp16_to_fp32((uint16_t)h);
        if (isnan(r)) {
            if (!isnan(f)) bad_dec++;
            uint16_t back = loom_fp32_to_fp16(f);
            if ((back & 0x7C00) != 0x7C00 || (back & 0x3FF) == 0 || (back & 0x8000) != (h & 0x8000)) bad_rt++;
            continue;
        }
        if ((double)f != r || (signbit(f) != 0) != (int)(h >> 15)) bad_dec++;
        if (loom_fp32_to_fp16(f) != h) bad_rt++;
        /* midpoint between h and its successor (same sign, finite, below inf) */
        uint16_t mag = h & 0x7FFF;
        if (mag < 0x7BFF) {
            double a = half_ref((uint16_t)h), b = half_ref((uint16_t)(h + 1));
            float mid = (float)((a + b) / 2); /* exact in f32: 12 significant bits */
            uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
            if ((double)mid != (a + b) / 2) bad_mid++;
            if (loom_fp32_to_fp16(mid) != even) bad_mid++;
            if (loom_fp32_to_fp16(nextafterf(mid, (float)b * 2)) != (uint16_t)(h + 1)) bad_mid++;
            if (loom_fp32_to_fp16(nextafterf(mid, 0.f)) != (uint16_t)h) bad_mid++;
        }
    }
    CHECK_EQ_INT(bad_dec, 0);
    CHECK_EQ_INT(bad_rt, 0);
    CHECK_EQ_INT(bad_mid, 0);
    /* overflow, tiny values, NaN payloads */
    CHECK_EQ_INT(loom_fp32_to_fp16(65504.f), 0x7BFF);
    CHECK_EQ_INT(loom_fp32_to_fp16(65519.99f), 0x7BFF);
    CHECK_EQ_INT(loom_fp32_to_fp16(65520.f), 0x7C00);
    CHECK_EQ_INT(loom_fp32_to_fp16(-1e10f), 0xFC00);
    CHECK_EQ_INT(loom_fp32_to_fp16(INFINITY), 0x7C00);
    CHECK_EQ_INT(loom_fp32_to_fp16(ldexpf(1.f, -25)), 0x0000);             /* tie -> even (0) */
    CHECK_EQ_INT(loom_fp32_to_fp16(nextafterf(ldexpf(1.f, -25), 1.f)), 1); /* above tie */
    CHECK_EQ_INT(loom_fp32_to_fp16(ldexpf(3.f, -25)), 2);                  /* 1.5 ulp -> 2 */
    CHECK_EQ_INT(loom_fp32_to_fp16(-0.f), 0x8000);
    CHECK_EQ_INT(loom_fp32_to_fp16(FLT_MIN), 0);
    CHECK_EQ_INT(loom_fp32_to_fp16(u2f(0xFFFFFFFFu)) & 0x7FFF, 0x7FFF);
    uint16_t sn = loom_fp32_to_fp16(u2f(0x7F800001u)); /* signalling NaN, low payload */
    CHECK((sn & 0x7C00) == 0x7C00 && (sn & 0x3FF) != 0);
    CHECK(isnan(loom_fp16_to_fp32(0x7C01)));
    CHECK(loom_fp16_to_fp32(0x0001) == ldexpf(1.f, -24));
    CHECK(loom_fp16_to_fp32(0x3C00) == 1.f);
    CHECK(loom_fp16_to_fp32(0xC000) == -2.f);
}

static void test_bf16_all(void) {
    int bad_dec = 0, bad_rt = 0, bad_mid = 0;
    for (uint32_t h = 0; h < 65536; h++) {
        double r = bf16_ref((uint16_t)h);
        float f = loom_bf16_to_fp32((uint16_t)h);
        if (isnan(r)) {
            if (!isnan(f)) bad_dec++;
            uint16_t back = loom_fp32_to_bf16(f);
            if ((back & 0x7F80) != 0x7F80 || (back & 0x7F) == 0) bad_rt++;
            continue;
        }
        if ((double)f != r || (signbit(f) != 0) != (int)(h >> 15)) bad_dec++;
        if (loom_fp32_to_bf16(f) != h) bad_rt++;
        uint16_t mag = h & 0x7FFF;
        if (mag < 0x7F7F) {
            double a = bf16_ref((uint16_t)h), b = bf16_ref((uint16_t)(h + 1));
            float mid = (float)((a + b) / 2);
            uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
            if (loom_fp32_to_bf16(mid) != even) bad_mid++;
            if (loom_fp32_to_bf16(nextafterf(mid, (float)b * 2)) != (uint16_t)(h + 1)) bad_mid++;
            if (mag != 0 && loom_fp32_to_bf16(nextafterf(mid, 0.f)) != (uint16_t)h) bad_mid++;
        }
    }
    CHECK_EQ_INT(bad_dec, 0);
    CHECK_EQ_INT(bad_rt, 0);
    CHECK_EQ_INT(bad_mid, 0);
    CHECK_EQ_INT(loom_fp32_to_bf16(FLT_MAX), 0x7F80); /* rounds up to inf */
    uint16_t sn = loom_fp32_to_bf16(u2f(0x7F800001u));
    CHECK((sn & 0x7F80) == 0x7F80 && (sn & 0x7F) != 0);
    CHECK_EQ_INT(loom_fp32_to_bf16(1.f), 0x3F80);
    CHECK_EQ_INT(f2u(loom_bf16_to_fp32(0x3F80)), 0x3F800000u);
}

/* ------------------------------------------------------- hand-built blocks */

static void dq(loom_type t, const uint8_t *blk, float *out) {
    const loom_type_info *ti = loom_type_get(t);
    CHECK_EQ_INT(loom_dequantize_row(t, blk, out, ti->block_size), LOOM_OK);
}

static void test_hand_blocks(void) {
    uint8_t b[300];
    float y[256];

    /* Q4_0: d = 2; qs[0]=0x1F -> e0 = (15-8)*2 = 14, e16 = (1-8)*2 = -14; qs[5]=0x80 -> e5=-16, e21=0 */
    memset(b, 0x88, sizeof b);
    put16(b, 0x4000);
    b[2 + 0] = 0x1F;
    b[2 + 5] = 0x80;
    dq(LOOM_TYPE_Q4_0, b, y);
    CHECK(y[0] == 14.f && y[16] == -14.f && y[5] == -16.f && y[21] == 0.f && y[1] == 0.f && y[31] == 0.f);

    /* Q4_1: d = 2, m = -1; qs[0]=0x1F: e0 = 15*2-1 = 29, e16 = 1*2-1 = 1; zeros -> -1 */
    memset(b, 0, sizeof b);
    put16(b, 0x4000);
    put16(b + 2, 0xBC00);
    b[4] = 0x1F;
    dq(LOOM_TYPE_Q4_1, b, y);
    CHECK(y[0] == 29.f && y[16] == 1.f && y[1] == -1.f && y[31] == -1.f);

    /* Q5_0: d = 2, qh = bits 0 and 16; qs[0]=0x1F: e0 q=31 -> 30, e16 q=17 -> 2, e1 q=0 -> -32 */
    memset(b, 0, sizeof b);
    put16(b, 0x4000);
    b[2] = 0x01; b[3] = 0x00; b[4] = 0x01; b[5] = 0x00;
    b[6] = 0x1F;
    dq(LOOM_TYPE_Q5_0, b, y);
    CHECK(y[0] == 30.f && y[16] == 2.f && y[1] == -32.f && y[17] == -32.f);

    /* Q5_1: d = 2, m = -1, same bits: e0 = 31*2-1 = 61, e16 = 17*2-1 = 33, e1 = -1 */
    memset(b, 0, sizeof b);
    put16(b, 0x4000);
    put16(b + 2, 0xBC00);
    b[4] = 0x01; b[6] = 0x01;
    b[8] = 0x1F;
    dq(LOOM_TYPE_Q5_1, b, y);
    CHECK(y[0] == 61.f && y[16] == 33.f && y[1] == -1.f);

    /* Q8_0: d = 0.5; qs[3] = -100 -> -50; qs[31] = 127 -> 63.5 */
    memset(b, 0, sizeof b);
    put16(b, 0x3800);
    b[2 + 3] = (uint8_t)(int8_t)-100;
    b[2 + 31] = 127;
    dq(LOOM_TYPE_Q8_0, b, y);
    CHECK(y[3] == -50.f && y[31] == 63.5f && y[0] == 0.f);

    /* Q8_1: d = 0.5, s ignored by dequant; qs[0] = -128 -> -64 */
    memset(b, 0, sizeof b);
    put16(b, 0x3800);
    put16(b + 2, 0x7C00);
    b[4] = 0x80;
    dq(LOOM_TYPE_Q8_1, b, y);
    CHECK(y[0] == -64.f && y[1] == 0.f);

    /* Q2_K: scales[0..15], qs[16..79], d @80 = 2, dmin @82 = 0.5.
     * scales[5] = 0x37 (sc 7, m 3): group 5 = h0 j2 s1 -> elems 80..95, q = (qs[16+l]>>4)&3.
     * qs[16+3] = 0x20 -> e83: 2*7*2 - 0.5*3 = 26.5; e80: -1.5; e0 (scale 0): 0 */
    memset(b, 0, sizeof b);
    b[5] = 0x37;
    b[16 + 16 + 3] = 0x20;
    put16(b + 80, 0x4000);
    put16(b + 82, 0x3800);
    dq(LOOM_TYPE_Q2_K, b, y);
    CHECK(y[83] == 26.5f && y[80] == -1.5f && y[0] == 0.f && y[19] == 0.f);

    /* Q3_K: hmask[0..31], qs[32..95], scales[96..107], d @108 = 2.
     * scale k=9: lo4 = scales[1]>>4 = 0xB, hi2 = (scales[9]>>4)&3 = 2 -> 43-32 = 11.
     * k=9 = h1 j0 s1: elems 144..159, low = qs[48+l]&3, hi = (hmask[16+l]>>4)&1.
     * l=2: low 3, hi 1 -> q 3 -> 66 (e146). l=3: low 1, hi 0 -> q -3 -> -66 (e147).
     * e130 (k=8, sc = 0-32 = -32, low 0, hi 0 -> q -4): 2*-32*-4 = 256 */
    memset(b, 0, sizeof b);
    b[96 + 1] = 0xB0;
    b[96 + 9] = 0x20;
    b[32 + 48 + 2] = 0x03;
    b[18] = 0x10;
    b[32 + 48 + 3] = 0x01;
    put16(b + 108, 0x4000);
    dq(LOOM_TYPE_Q3_K, b, y);
    CHECK(y[146] == 66.f && y[147] == -66.f && y[130] == 256.f);

    /* Q4_K: d=2 @0, dmin=0.5 @2, scales[4..15], qs[16..143].
     * sub-block 5: sc = (scales[9]&15) | (scales[1]>>6)<<4 = 3|16 = 19, m = (scales[9]>>4) | (scales[5]>>6)<<4 = 7|32 = 39.
     * sub-block 5 = chunk 2 high nibbles: elems 160+l, q = qs[64+l]>>4. qs[64]=0xA0 -> e160 = 2*19*10 - 0.5*39 = 360.5,
     * e161 = -19.5; sub-block 1 has sc = scales[1]&63 = 0, m = scales[5]&63 = 0 -> e32 = 0 */
    memset(b, 0, sizeof b);
    put16(b, 0x4000);
    put16(b + 2, 0x3800);
    b[4 + 9] = 0x73;
    b[4 + 1] = 0x40;
    b[4 + 5] = 0x80;
    b[16 + 64] = 0xA0;
    dq(LOOM_TYPE_Q4_K, b, y);
    CHECK(y[160] == 360.5f && y[161] == -19.5f && y[32] == 0.f && y[128] == 0.f);

    /* Q5_K: same scales, qh[16..47], qs[48..175]; qh[0] bit 5 -> e160 q = 26: 2*19*26 - 19.5 = 968.5 */
    memset(b, 0, sizeof b);
    put16(b, 0x4000);
    put16(b + 2, 0x3800);
    b[4 + 9] = 0x73;
    b[4 + 1] = 0x40;
    b[4 + 5] = 0x80;
    b[16] = 0x20;
    b[48 + 64] = 0xA0;
    dq(LOOM_TYPE_Q5_K, b, y);
    CHECK(y[160] == 968.5f && y[161] == -19.5f && y[0] == 0.f);

    /* Q6_K: ql[0..127], qh[128..191], scales[192..207], d @208 = 2.
     * e212 = h1, quarter 3 (QL[l]>>4, QH bits 4-5), l=20, is=1 -> sc = scales[8+5] = -3.
     * ql[64+20] = 0x50, qh[32+20] = 0x30 -> q = (5|48)-32 = 21 -> 2*-3*21 = -126.
     * e148 = h1 quarter 0, l=20: q = 0-32, sc = scales[9] = 1 -> -64 */
    memset(b, 0, sizeof b);
    b[64 + 20] = 0x50;
    b[128 + 32 + 20] = 0x30;
    b[192 + 13] = (uint8_t)(int8_t)-3;
    b[192 + 9] = 1;
    put16(b + 208, 0x4000);
    dq(LOOM_TYPE_Q6_K, b, y);
    CHECK(y[212] == -126.f && y[148] == -64.f && y[0] == 0.f);

    /* Q8_K: f32 d = 0.25, qs[7] = -8 -> -2 */
    memset(b, 0, sizeof b);
    float qd = 0.25f;
    memcpy(b, &qd, 4);
    b[4 + 7] = (uint8_t)(int8_t)-8;
    dq(LOOM_TYPE_Q8_K, b, y);
    CHECK(y[7] == -2.f && y[8] == 0.f);

    /* MXFP4 (type 39): e = 130 -> 2^(130-128) = 4; qs[0] = 0xF7: e0 = 12*4 = 48, e16 = -12*4 = -48;
     * qs[1] = 0x09: e1 = -1*4 = -4, e17 = 0. e = 0 -> 2^-128; code 1 -> 2^-128 */
    memset(b, 0, sizeof b);
    b[0] = 130;
    b[1] = 0xF7;
    b[2] = 0x09;
    dq(LOOM_TYPE_MXFP4, b, y);
    CHECK(y[0] == 48.f && y[16] == -48.f && y[1] == -4.f && y[17] == 0.f);
    b[0] = 0;
    b[1] = 0x01;
    dq(LOOM_TYPE_MXFP4, b, y);
    CHECK(y[0] == ldexpf(1.f, -128) && y[0] > 0.f);
    b[0] = 255;
    dq(LOOM_TYPE_MXFP4, b, y);
    CHECK(y[0] == ldexpf(1.f, 127));

    /* F16 / BF16 / F32 */
    put16(b, 0x3C00); put16(b + 2, 0xC500);
    CHECK_EQ_INT(loom_dequantize_row(LOOM_TYPE_F16, b, y, 2), LOOM_OK);
    CHECK(y[0] == 1.f && y[1] == -5.f);
    put16(b, 0x3F80); put16(b + 2, 0xC0A0);
    CHECK_EQ_INT(loom_dequantize_row(LOOM_TYPE_BF16, b, y, 2), LOOM_OK);
    CHECK(y[0] == 1.f && y[1] == -5.f);
}

/* ------------------------------ independent float64 decoder (from spec text) */

static double k3sc(const uint8_t *s, int k) {
    int lo4 = k < 8 ? (s[k] & 15) : (s[k - 8] >> 4);
    int hi2 = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
    return (double)((lo4 | (hi2 << 4)) - 32);
}
static void k4sm(const uint8_t *s, int j, double *sc, double *m) {
    if (j < 4) { *sc = s[j] & 63; *m = s[j + 4] & 63; }
    else { *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4); *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4); }
}

/* element e of one block */
static double ref_elem(loom_type t, const uint8_t *b, int e) {
    switch (t) {
    case LOOM_TYPE_Q4_0: {
        int q = e < 16 ? (b[2 + e] & 15) : (b[2 + e - 16] >> 4);
        return (q - 8) * half_ref(get16(b));
    }
    case LOOM_TYPE_Q4_1: {
        int q = e < 16 ? (b[4 + e] & 15) : (b[4 + e - 16] >> 4);
        return q * half_ref(get16(b)) + half_ref(get16(b + 2));
    }
    case LOOM_TYPE_Q5_0: {
        uint32_t h = b[2] | b[3] << 8 | b[4] << 16 | (uint32_t)b[5] << 24;
        int q = (e < 16 ? (b[6 + e] & 15) : (b[6 + e - 16] >> 4)) | (int)((h >> e) & 1) << 4;
        return (q - 16) * half_ref(get16(b));
    }
    case LOOM_TYPE_Q5_1: {
        uint32_t h = b[4] | b[5] << 8 | b[6] << 16 | (uint32_t)b[7] << 24;
        int q = (e < 16 ? (b[8 + e] & 15) : (b[8 + e - 16] >> 4)) | (int)((h >> e) & 1) << 4;
        return q * half_ref(get16(b)) + half_ref(get16(b + 2));
    }
    case LOOM_TYPE_Q8_0: return (int8_t)b[2 + e] * half_ref(get16(b));
    case LOOM_TYPE_Q8_1: return (int8_t)b[4 + e] * half_ref(get16(b));
    case LOOM_TYPE_Q2_K: {
        int h = e / 128, r = e % 128, j = r / 32, s = (r % 32) / 16, l = r % 16;
        int q = (b[16 + 32 * h + 16 * s + l] >> (2 * j)) & 3;
        int sc = b[8 * h + 2 * j + s];
        return half_ref(get16(b + 80)) * (sc & 15) * q - half_ref(get16(b + 82)) * (sc >> 4);
    }
    case LOOM_TYPE_Q3_K: {
        int h = e / 128, r = e % 128, j = r / 32, s = (r % 32) / 16, l = r % 16;
        int low = (b[32 + 32 * h + 16 * s + l] >> (2 * j)) & 3;
        int hi = (b[16 * s + l] >> (4 * h + j)) & 1;
        return half_ref(get16(b + 108)) * k3sc(b + 96, 8 * h + 2 * j + s) * (low - (hi ? 0 : 4));
    }
    case LOOM_TYPE_Q4_K:
    case LOOM_TYPE_Q5_K: {
        int five = t == LOOM_TYPE_Q5_K;
        const uint8_t *qs = b + (five ? 48 : 16);
        int c = e / 64, r = e % 64, hi = r >= 32, l = r % 32;
        double sc, m;
        k4sm(b + 4, 2 * c + hi, &sc, &m);
        int q = hi ? (qs[32 * c + l] >> 4) : (qs[32 * c + l] & 15);
        if (five && ((b[16 + l] >> (2 * c + hi)) & 1)) q += 16;
        return half_ref(get16(b)) * sc * q - half_ref(get16(b + 2)) * m;
    }
    case LOOM_TYPE_Q6_K: {
        int h = e / 128, r = e % 128, quarter = r / 32, l = r % 32;
        const uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
        const int8_t *sc = (const int8_t *)(b + 192 + 8 * h);
        int lo = (quarter & 1) ? ql[l + 32] : ql[l];
        lo = quarter >= 2 ? lo >> 4 : lo & 15;
        int q = (lo | ((qh[l] >> (2 * quarter)) & 3) << 4) - 32;
        return half_ref(get16(b + 208)) * sc[l / 16 + 2 * quarter] * q;
    }
    case LOOM_TYPE_Q8_K: {
        float d;
        memcpy(&d, b, 4);
        return (double)d * (int8_t)b[4 + e];
    }
    case LOOM_TYPE_MXFP4: {
        static const double kv[16] = {0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6};
        int code = e < 16 ? (b[1 + e] & 15) : (b[1 + e - 16] >> 4);
        return kv[code] * ldexp(1.0, b[0] - 127); /* E2M1 * 2^(e-127) */
    }
    default: return NAN;
    }
}

static const loom_type k_qtypes[] = {LOOM_TYPE_Q4_0, LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0, LOOM_TYPE_Q5_1, LOOM_TYPE_Q8_0,
                                     LOOM_TYPE_Q8_1, LOOM_TYPE_Q2_K, LOOM_TYPE_Q3_K, LOOM_TYPE_Q4_K, LOOM_TYPE_Q5_K,
                                     LOOM_TYPE_Q6_K, LOOM_TYPE_Q8_K, LOOM_TYPE_MXFP4};
#define NQT (int)(sizeof k_qtypes / sizeof k_qtypes[0])

/* f16 fields get random finite values in a sane range; other bytes fully random */
static void random_block(loom_type t, uint8_t *b) {
    const loom_type_info *ti = loom_type_get(t);
    for (size_t i = 0; i < ti->block_bytes; i++) b[i] = (uint8_t)rnd();
    uint16_t h1 = (uint16_t)(0x2000 + rnd() % 0x3000) | (uint16_t)((rnd() & 1) << 15);
    uint16_t h2 = (uint16_t)(0x2000 + rnd() % 0x3000);
    switch (t) {
    case LOOM_TYPE_Q4_0: case LOOM_TYPE_Q5_0: case LOOM_TYPE_Q8_0: put16(b, h1); break;
    case LOOM_TYPE_Q4_1: case LOOM_TYPE_Q5_1: case LOOM_TYPE_Q8_1: put16(b, h1); put16(b + 2, h2); break;
    case LOOM_TYPE_Q2_K: put16(b + 80, h1); put16(b + 82, h2); break;
    case LOOM_TYPE_Q3_K: put16(b + 108, h1); break;
    case LOOM_TYPE_Q4_K: case LOOM_TYPE_Q5_K: put16(b, h1); put16(b + 2, h2); break;
    case LOOM_TYPE_Q6_K: put16(b + 208, h1); break;
    case LOOM_TYPE_Q8_K: { float d = (float)(gauss() * 0.01); memcpy(b, &d, 4); break; }
    case LOOM_TYPE_MXFP4: b[0] = (uint8_t)(100 + rnd() % 50); break;
    default: break;
    }
}

static void test_random_blocks_vs_spec(void) {
    uint8_t blk[4 * 300];
    float y[4 * 256];
    for (int ti = 0; ti < NQT; ti++) {
        loom_type t = k_qtypes[ti];
        const loom_type_info *inf = loom_type_get(t);
        int bad = 0;
        for (int rep = 0; rep < 50; rep++) {
            for (int k = 0; k < 4; k++) random_block(t, blk + k * inf->block_bytes);
            if (loom_dequantize_row(t, blk, y, 4 * inf->block_size) != LOOM_OK) { bad++; continue; }
            for (int k = 0; k < 4; k++)
                for (int e = 0; e < inf->block_size; e++) {
                    double r = ref_elem(t, blk + k * inf->block_bytes, e);
                    double got = y[k * inf->block_size + e];
                    /* r is exact in double (products of an f16 scale and small integers, one
                     * add/sub); the float formula rounds once, so it must equal (float)r. */
                    if (got != (float)r) bad++;
                }
        }
        CHECK_MSG(bad == 0, "%s: %d elements differ from the spec decoder", inf->name, bad);
    }
}

/* ----------------------------------------------------- quantization quality */

static double rel_rmse(loom_type t, const float *x, int64_t n) {
    size_t bytes;
    if (loom_type_row_bytes(t, n, &bytes) != LOOM_OK) return 1e9;
    uint8_t *q = malloc(bytes);
    float *y = malloc((size_t)n * sizeof *y);
    double se = 0, ss = 0;
    if (q && y && loom_quantize_row(t, x, q, n) == LOOM_OK && loom_dequantize_row(t, q, y, n) == LOOM_OK) {
        for (int64_t i = 0; i < n; i++) {
            se += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
            ss += (double)x[i] * x[i];
        }
    } else {
        se = 1e9, ss = 1;
    }
    free(q);
    free(y);
    return sqrt(se / ss);
}

static void test_error_budgets(void) {
    enum { N = 65536 };
    float *x = malloc(N * sizeof *x);
    if (!x) { CHECK(0); return; }
    for (int i = 0; i < N; i++) x[i] = (float)(gauss() * 0.05); /* weight-like Gaussian */
    /* Budgets: uniform quantization with step q gives an RMS error of q/sqrt(12). For a
     * Gaussian block the expected absmax is ~2.4 sigma (32 values), ~3.0 sigma (256 values),
     * so absmax int8 (Q8_0/Q8_1: q = 2.4/127 sigma) -> ~0.55%, Q8_K (3.0/127) -> ~0.68%;
     * 4-bit symmetric (q = 2.4/8 sigma) -> ~8.7% before the scale search, 5-bit ~4.3%;
     * asymmetric and K-quant types use [min,max] of 32/16-value groups and end up a little
     * better; 2/3-bit K-quants are coarse (~27%/~15%). MXFP4 (E2M1) is ~11%. Budgets add
     * ~20-35% headroom and are far below what a wrong layout or scale would give. */
    struct { loom_type t; double budget; } b[] = {
        {LOOM_TYPE_F16, 0.0005},  {LOOM_TYPE_BF16, 0.004}, {LOOM_TYPE_Q8_0, 0.0065},
        {LOOM_TYPE_Q8_1, 0.0065}, {LOOM_TYPE_Q8_K, 0.0085}, {LOOM_TYPE_Q4_0, 0.095},
        {LOOM_TYPE_Q4_1, 0.09},   {LOOM_TYPE_Q5_0, 0.05},  {LOOM_TYPE_Q5_1, 0.045},
        {LOOM_TYPE_Q2_K, 0.36},   {LOOM_TYPE_Q3_K, 0.18},  {LOOM_TYPE_Q4_K, 0.09},
        {LOOM_TYPE_Q5_K, 0.045},  {LOOM_TYPE_Q6_K, 0.025}, {LOOM_TYPE_MXFP4, 0.15},
    };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        double e = rel_rmse(b[i].t, x, N);
        printf("  quantize %-6s rel RMSE %.4f%% (budget %.2f%%)\n", loom_type_name(b[i].t), 100 * e, 100 * b[i].budget);
        CHECK_MSG(e < b[i].budget, "%s: rel RMSE %.5f >= %.5f", loom_type_name(b[i].t), e, b[i].budget);
    }
    /* all-zero rows quantize to exact zeros; non-finite input must not crash */
    memset(x, 0, 256 * sizeof *x);
    for (int ti = 0; ti < NQT; ti++) {
        uint8_t q[300];
        float y[256];
        CHECK_EQ_INT(loom_quantize_row(k_qtypes[ti], x, q, 256), LOOM_OK);
        CHECK_EQ_INT(loom_dequantize_row(k_qtypes[ti], q, y, 256), LOOM_OK);
        int nz = 0;
        for (int i = 0; i < 256; i++) nz += y[i] != 0.f;
        CHECK_MSG(nz == 0, "%s zero row", loom_type_name(k_qtypes[ti]));
        x[3] = NAN; x[100] = INFINITY;
        CHECK_EQ_INT(loom_quantize_row(k_qtypes[ti], x, q, 256), LOOM_OK);
        x[3] = 0; x[100] = 0;
    }
    free(x);
}

/* Exactly representable data survives quantize -> dequantize unchanged. */
static void test_exact_roundtrip(void) {
    enum { NB = 8 };
    static const loom_type ts[] = {LOOM_TYPE_Q4_0, LOOM_TYPE_Q4_1, LOOM_TYPE_Q5_0, LOOM_TYPE_Q5_1, LOOM_TYPE_Q8_0,
                                   LOOM_TYPE_Q8_1, LOOM_TYPE_Q8_K, LOOM_TYPE_MXFP4, LOOM_TYPE_Q2_K, LOOM_TYPE_Q3_K,
                                   LOOM_TYPE_Q4_K, LOOM_TYPE_Q5_K, LOOM_TYPE_Q6_K};
    float x[NB * 256], y[NB * 256];
    uint8_t q[NB * 300];
    for (size_t ti = 0; ti < sizeof ts / sizeof ts[0]; ti++) {
        loom_type t = ts[ti];
        int bs = (int)loom_type_get(t)->block_size;
        int n = NB * 256;
        for (int blk = 0; blk < n / bs; blk++) {
            float *v = x + blk * bs;
            double d = ldexp(1.0, -(int)(rnd() % 8)); /* power-of-two scale */
            switch (t) {
            case LOOM_TYPE_Q4_0: for (int i = 0; i < bs; i++) v[i] = (float)(d * ((int)(rnd() % 16) - 8)); v[rnd() % 32] = (float)(-8 * d); break;
            case LOOM_TYPE_Q5_0: for (int i = 0; i < bs; i++) v[i] = (float)(d * ((int)(rnd() % 32) - 16)); v[rnd() % 32] = (float)(-16 * d); break;
            case LOOM_TYPE_Q4_1: case LOOM_TYPE_Q5_1: {
                int nmax = t == LOOM_TYPE_Q4_1 ? 15 : 31;
                double m = -d * (int)(rnd() % 64);
                for (int i = 0; i < bs; i++) v[i] = (float)(d * (int)(rnd() % (unsigned)(nmax + 1)) + m);
                v[0] = (float)m; v[1] = (float)(d * nmax + m);
                break;
            }
            case LOOM_TYPE_Q8_0: case LOOM_TYPE_Q8_1: case LOOM_TYPE_Q8_K:
                for (int i = 0; i < bs; i++) v[i] = (float)(d * ((int)(rnd() % 255) - 127));
                v[rnd() % (unsigned)bs] = (float)(127 * d);
                break;
            case LOOM_TYPE_MXFP4: {
                static const int kv[15] = {0, 1, 2, 3, 4, 6, 8, 12, -1, -2, -3, -4, -6, -8, -12};
                for (int i = 0; i < bs; i++) v[i] = (float)(d * kv[rnd() % 15]);
                v[rnd() % 32] = (float)(12 * d);
                break;
            }
            default: { /* K-quants: decode random-ish valid blocks with full q ranges */
                uint8_t b[300];
                random_block(t, b);
                if (loom_dequantize_row(t, b, v, bs) != LOOM_OK) CHECK(0);
                break;
            }
            }
        }
        if (bs == 256 && t != LOOM_TYPE_Q8_K) continue; /* K-quants handled below */
        CHECK_EQ_INT(loom_quantize_row(t, x, q, n), LOOM_OK);
        CHECK_EQ_INT(loom_dequantize_row(t, q, y, n), LOOM_OK);
        int bad = 0;
        for (int i = 0; i < n; i++) bad += x[i] != y[i];
        CHECK_MSG(bad == 0, "%s: %d values changed in an exact round trip", loom_type_name(t), bad);
    }
    /* K-quants: dequantize(quantize(dequantize(B))) must be a fixed point: the second quantization
     * reproduces the same values (requantizing already-quantized data is lossless). */
    for (size_t ti = 0; ti < sizeof ts / sizeof ts[0]; ti++) {
        loom_type t = ts[ti];
        if (loom_type_get(t)->block_size != 256 || t == LOOM_TYPE_Q8_K) continue;
        float x2[NB * 256];
        int n = NB * 256;
        for (int i = 0; i < n; i++) x[i] = (float)(gauss() * 0.05);
        CHECK_EQ_INT(loom_quantize_row(t, x, q, n), LOOM_OK);
        CHECK_EQ_INT(loom_dequantize_row(t, q, y, n), LOOM_OK);
        CHECK_EQ_INT(loom_quantize_row(t, y, q, n), LOOM_OK);
        CHECK_EQ_INT(loom_dequantize_row(t, q, x2, n), LOOM_OK);
        double se = 0, ss = 0;
        for (int i = 0; i < n; i++) {
            se += ((double)x2[i] - y[i]) * ((double)x2[i] - y[i]);
            ss += (double)y[i] * y[i];
        }
        printf("  requantize %-5s rel RMSE %.5f%%\n", loom_type_name(t), 100 * sqrt(se / ss));
        CHECK_MSG(sqrt(se / ss) < 0.02, "%s: requantization drifts %.5f", loom_type_name(t), sqrt(se / ss));
    }
    /* F32/F16/BF16: representable values are preserved */
    uint16_t h[64];
    float f[64], g[64];
    for (int i = 0; i < 64; i++) f[i] = loom_fp16_to_fp32((uint16_t)(rnd() & 0x7BFF));
    CHECK_EQ_INT(loom_quantize_row(LOOM_TYPE_F16, f, h, 64), LOOM_OK);
    CHECK_EQ_INT(loom_dequantize_row(LOOM_TYPE_F16, h, g, 64), LOOM_OK);
    CHECK(memcmp(f, g, sizeof f) == 0);
    for (int i = 0; i < 64; i++) f[i] = loom_bf16_to_fp32((uint16_t)(rnd() & 0x7F7F));
    CHECK_EQ_INT(loom_quantize_row(LOOM_TYPE_BF16, f, h, 64), LOOM_OK);
    CHECK_EQ_INT(loom_dequantize_row(LOOM_TYPE_BF16, h, g, 64), LOOM_OK);
    CHECK(memcmp(f, g, sizeof f) == 0);
}

static void test_errors(void) {
    float x[64] = {0};
    uint8_t q[256] = {0};
    CHECK_EQ_INT(loom_dequantize_row(LOOM_TYPE_Q4_0, q, x, 33), LOOM_ERR_SHAPE);
    CHECK_EQ_INT(loom_quantize_row(LOOM_TYPE_Q4_K, x, q, 64), LOOM_ERR_SHAPE);
    CHECK_EQ_INT(loom_dequantize_row(LOOM_TYPE_IQ2_XXS, q, x, 128), LOOM_ERR_SHAPE);
    CHECK_EQ_INT(loom_dequantize_row(LOOM_TYPE_I8, q, x, 64), LOOM_ERR_TYPE);
    CHECK_EQ_INT(loom_quantize_row(LOOM_TYPE_I32, x, q, 4), LOOM_ERR_TYPE);
    CHECK_EQ_INT(loom_dequantize_row((loom_type)4, q, x, 32), LOOM_ERR_TYPE);
    CHECK_EQ_INT(loom_dequantize_row((loom_type)1000, q, x, 32), LOOM_ERR_TYPE);
    CHECK_EQ_INT(loom_dequantize_row(LOOM_TYPE_Q8_0, q, x, -32), LOOM_ERR_SHAPE);
    CHECK_EQ_INT(loom_dequantize_row(LOOM_TYPE_Q8_0, NULL, x, 32), LOOM_ERR_INVALID_ARG);
    CHECK_EQ_INT(loom_dequantize_row(LOOM_TYPE_Q8_0, NULL, NULL, 0), LOOM_OK);
    /* unaligned source is allowed */
    uint8_t buf[40] = {0};
    put16(buf + 1, 0x3C00);
    buf[3] = 5;
    CHECK_EQ_INT(loom_dequantize_row(LOOM_TYPE_Q8_0, buf + 1, x, 32), LOOM_OK);
    CHECK(x[0] == 5.f);
}

int main(void) {
    test_fp16_all();
    test_bf16_all();
    test_hand_blocks();
    test_random_blocks_vs_spec();
    test_error_budgets();
    test_exact_roundtrip();
    test_errors();
    return test_finish("test_quant_formats");
}
