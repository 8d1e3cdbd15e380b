/* dequant.glsl - GGUF block decoding for the weight binding (binding 0).
 *
 * Compile with -DTYPE=<loom_type id>. Every quantized type is decoded in groups of 16
 * consecutive elements that share one scale and one offset:
 *     value[j] = sc * float(q[j]) + of        (j = 0..15)
 * which serves both the float path (dequantize, multiply with F32 activations) and
 * the int8-dot path (integer products with 8-bit activations, scaled once per group).
 * Formulas: backend contract §9.2/§9.3 (the same as src/quant/dequant.c).
 *   QK   elements per block      QB   bytes per block
 * Plain types (F32/F16/BF16) use load16f with a bound on the row length instead.
 */
#define T_F32 0
#define T_F16 1
#define T_Q4_0 2
#define T_Q4_1 3
#define T_Q5_0 6
#define T_Q5_1 7
#define T_Q8_0 8
#define T_Q2_K 10
#define T_Q3_K 11
#define T_Q4_K 12
#define T_Q5_K 13
#define T_Q6_K 14
#define T_BF16 30
#define T_MXFP4 39

uint qb(uint o) { return uint(s0_u8[o]); }
uint qw16(uint o) { return uint(s0_u16[o >> 1]); } /* o even */
float qh16(uint o) { return float(s0_f16[o >> 1]); }
int qi8(uint o) { int v = int(qb(o)); return v >= 128 ? v - 256 : v; }

#if TYPE == T_F32 || TYPE == T_F16 || TYPE == T_BF16
#define QK 1
#define PLAIN 1
#if TYPE == T_F32
#define QB 4
float ldw(uint o) { return s0_f32[o >> 2]; }
#elif TYPE == T_F16
#define QB 2
float ldw(uint o) { return float(s0_f16[o >> 1]); }
#else
#define QB 2
float ldw(uint o) { return bf16_to_f32(qw16(o)); }
#endif
/* Activations as the CPU converts them for this weight type (its vec_dot_type): F16
 * weights multiply F16-rounded activations, BF16 weights BF16-rounded ones. */
#if TYPE == T_F16
float act(float x) { return round_f16(x); }
#elif TYPE == T_BF16
float act(float x) { return bf16_to_f32(f32_to_bf16(x)); }
#else
float act(float x) { return x; }
#endif
/* Elements e0..e0+15 of a row starting at byte rb, zero past n. */
void load16f(uint rb, uint e0, uint n, out float v[16]) {
    [[unroll]] for (uint j = 0; j < 16; j++) v[j] = e0 + j < n ? ldw(rb + (e0 + j) * QB) : 0.0;
}
#else
#define PLAIN 0
float act(float x) { return x; }

#if TYPE == T_Q4_0
#define QK 32
#define QB 18
void deq16(uint b, uint g, out int q[16], out float sc, out float of) {
    sc = qh16(b);
    of = 0.0;
    uint sh = 4 * g;
    [[unroll]] for (uint j = 0; j < 16; j += 2) {
        uint w = qw16(b + 2 + j);
        q[j] = int(((w) >> sh) & 15u) - 8;
        q[j + 1] = int(((w >> 8) >> sh) & 15u) - 8;
    }
}
#elif TYPE == T_Q4_1
#define QK 32
#define QB 20
void deq16(uint b, uint g, out int q[16], out float sc, out float of) {
    sc = qh16(b);
    of = qh16(b + 2);
    uint sh = 4 * g;
    [[unroll]] for (uint j = 0; j < 16; j += 2) {
        uint w = qw16(b + 4 + j);
        q[j] = int((w >> sh) & 15u);
        q[j + 1] = int(((w >> 8) >> sh) & 15u);
    }
}
#elif TYPE == T_Q5_0
#define QK 32
#define QB 22
void deq16(uint b, uint g, out int q[16], out float sc, out float of) {
    sc = qh16(b);
    of = 0.0;
    uint h = qw16(b + 2) | (qw16(b + 4) << 16);
    h >>= 16 * g;
    uint sh = 4 * g;
    [[unroll]] for (uint j = 0; j < 16; j += 2) {
        uint w = qw16(b + 6 + j);
        q[j] = int(((w >> sh) & 15u) | (((h >> j) & 1u) << 4)) - 16;
        q[j + 1] = int((((w >> 8) >> sh) & 15u) | (((h >> (j + 1)) & 1u) << 4)) - 16;
    }
}
#elif TYPE == T_Q5_1
#define QK 32
#define QB 24
void deq16(uint b, uint g, out int q[16], out float sc, out float of) {
    sc = qh16(b);
    of = qh16(b + 2);
    uint h = qw16(b + 4) | (qw16(b + 6) << 16);
    h >>= 16 * g;
    uint sh = 4 * g;
    [[unroll]] for (uint j = 0; j < 16; j += 2) {
        uint w = qw16(b + 8 + j);
        q[j] = int(((w >> sh) & 15u) | (((h >> j) & 1u) << 4));
        q[j + 1] = int((((w >> 8) >> sh) & 15u) | (((h >> (j + 1)) & 1u) << 4));
    }
}
#elif TYPE == T_Q8_0
#define QK 32
#define QB 34
void deq16(uint b, uint g, out int q[16], out float sc, out float of) {
    sc = qh16(b);
    of = 0.0;
    uint o = b + 2 + 16 * g;
    [[unroll]] for (uint j = 0; j < 16; j += 2) {
        uint w = qw16(o + j);
        int lo = int(w & 255u), hi = int(w >> 8);
        q[j] = lo >= 128 ? lo - 256 : lo;
        q[j + 1] = hi >= 128 ? hi - 256 : hi;
    }
}
#elif TYPE == T_MXFP4
#define QK 32
#define QB 17
const int mxkv[16] = int[16](0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
void deq16(uint b, uint g, out int q[16], out float sc, out float of) {
    uint e = qb(b);
    sc = uintBitsToFloat(e < 2u ? (0x00200000u << e) : ((e - 1u) << 23));
    of = 0.0;
    uint sh = 4 * g;
    [[unroll]] for (uint j = 0; j < 16; j++) q[j] = mxkv[(qb(b + 1 + j) >> sh) & 15u];
}
#elif TYPE == T_Q2_K
#define QK 256
#define QB 84
void deq16(uint b, uint g, out int q[16], out float sc, out float of) {
    uint h = g >> 3, jj = (g & 7u) >> 1, s = g & 1u;
    uint scb = qb(b + g);
    sc = qh16(b + 80) * float(scb & 15u);
    of = -qh16(b + 82) * float(scb >> 4);
    uint o = b + 16 + 32 * h + 16 * s;
    [[unroll]] for (uint j = 0; j < 16; j += 2) {
        uint w = qw16(o + j);
        q[j] = int((w >> (2 * jj)) & 3u);
        q[j + 1] = int(((w >> 8) >> (2 * jj)) & 3u);
    }
}
#elif TYPE == T_Q3_K
#define QK 256
#define QB 110
void deq16(uint b, uint g, out int q[16], out float sc, out float of) {
    uint h = g >> 3, jj = (g & 7u) >> 1, s = g & 1u;
    uint lo4 = g < 8u ? (qb(b + 96 + g) & 15u) : (qb(b + 96 + g - 8) >> 4);
    uint hi2 = (qb(b + 104 + (g & 3u)) >> (2 * (g >> 2))) & 3u;
    sc = qh16(b + 108) * float(int(lo4 | (hi2 << 4)) - 32);
    of = 0.0;
    uint o = b + 32 + 32 * h + 16 * s, om = b + 16 * s;
    uint hs = 4 * h + jj;
    [[unroll]] for (uint j = 0; j < 16; j += 2) {
        uint w = qw16(o + j), m = qw16(om + j);
        q[j] = int((w >> (2 * jj)) & 3u) - (((m >> hs) & 1u) != 0u ? 0 : 4);
        q[j + 1] = int(((w >> 8) >> (2 * jj)) & 3u) - ((((m >> 8) >> hs) & 1u) != 0u ? 0 : 4);
    }
}
#elif TYPE == T_Q4_K || TYPE == T_Q5_K
#define QK 256
#if TYPE == T_Q4_K
#define QB 144
#define QS_OFF 16
#else
#define QB 176
#define QS_OFF 48
#endif
void k4_scale_min(uint b, uint j, out uint scv, out uint mv) {
    uint s = b + 4;
    if (j < 4u) {
        scv = qb(s + j) & 63u;
        mv = qb(s + j + 4) & 63u;
    } else {
        scv = (qb(s + j + 4) & 15u) | ((qb(s + j - 4) >> 6) << 4);
        mv = (qb(s + j + 4) >> 4) | ((qb(s + j) >> 6) << 4);
    }
}
void deq16(uint b, uint g, out int q[16], out float sc, out float of) {
    uint c = g >> 2, half_ = (g & 3u) >> 1, l0 = 16 * (g & 1u);
    uint scv, mv;
    k4_scale_min(b, 2 * c + half_, scv, mv);
    sc = qh16(b) * float(scv);
    of = -qh16(b + 2) * float(mv);
    uint o = b + QS_OFF + 32 * c + l0, sh = 4 * half_;
#if TYPE == T_Q5_K
    uint hb = 2 * c + half_;
#endif
    [[unroll]] for (uint j = 0; j < 16; j += 2) {
        uint w = qw16(o + j);
        q[j] = int((w >> sh) & 15u);
        q[j + 1] = int(((w >> 8) >> sh) & 15u);
#if TYPE == T_Q5_K
        uint hw = qw16(b + 16 + l0 + j);
        q[j] += int(((hw >> hb) & 1u) << 4);
        q[j + 1] += int((((hw >> 8) >> hb) & 1u) << 4);
#endif
    }
}
#elif TYPE == T_Q6_K
#define QK 256
#define QB 210
void deq16(uint b, uint g, out int q[16], out float sc, out float of) {
    uint h = g >> 3, r = g & 7u, k = r >> 1, is_ = r & 1u;
    uint l0 = 16 * is_;
    sc = qh16(b + 208) * float(qi8(b + 192 + 8 * h + is_ + 2 * k));
    of = 0.0;
    uint ol = b + 64 * h + l0 + ((k & 1u) != 0u ? 32 : 0);
    uint oh = b + 128 + 32 * h + l0;
    uint shl = (k >> 1) * 4, shh = 2 * k;
    [[unroll]] for (uint j = 0; j < 16; j += 2) {
        uint wl = qw16(ol + j), wh = qw16(oh + j);
        q[j] = int(((wl >> shl) & 15u) | (((wh >> shh) & 3u) << 4)) - 32;
        q[j + 1] = int((((wl >> 8) >> shl) & 15u) | ((((wh >> 8) >> shh) & 3u) << 4)) - 32;
    }
}
#else
#error unknown TYPE
#endif

/* Float values of group g of block b. */
void deq16f(uint b, uint g, out float v[16]) {
    int q[16];
    float sc, of;
    deq16(b, g, q, sc, of);
    [[unroll]] for (uint j = 0; j < 16; j++) v[j] = sc * float(q[j]) + of;
}
#endif
