#version 450
/* int8-dot path, step 1: activations b F32 [K, N, B2, B3] (rows contiguous, any row
 * strides) -> blocks of 32: { float d; float so0, so1; int8 q[32] } (44 bytes), rows
 * packed in the scratch: row (i3 * B2 + i2) * N + n. so_g is what a weight group's
 * offset multiplies: d * (sum of the group's q) (Q8_1: half of the CPU's F16
 * s = d * sum over the 32, each). 
 * The quantization is the CPU's activation format for the weight type (its
 * vec_dot_type), so this path reproduces the CPU's numerics:
 *   mode 0 (Q8_0 / Q8_1: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 MXFP4): per 32, d = amax / 127,
 *     q = round(x / d), the scale used rounded to F16 as the CPU stores it;
 *   mode 2 (Q8_K: K-quants): per 256, iscale = -127 / (the x of largest magnitude),
 *     q = round(iscale x), d = 1 / iscale (F32).
 * One thread per block of 32. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "elem_common.glsl"

layout(push_constant) uniform PC {
    uint K, N, B2, n_blocks;
    uint nb11, nb12, nb13, off_b;
    uint off_q, mode; /* mode 0 Q8_0, 1 Q8_1, 2 Q8_K */
} p;

void main() {
    const uint blk = elem_index();
    if (blk >= p.n_blocks) return;
    const uint nbr = p.K / 32;
    const uint row = blk / nbr, b = blk % nbr;
    const uint n = row % p.N, i2 = (row / p.N) % p.B2, i3 = row / (p.N * p.B2);
    const uint xo = ((p.off_b + n * p.nb11 + i2 * p.nb12 + i3 * p.nb13) >> 2) + 32 * b;
    float x[32];
    float amax = 0.0;
    [[unroll]] for (uint l = 0; l < 32; l++) {
        x[l] = s0_f32[xo + l];
        amax = max(amax, abs(x[l]));
    }
    float d = amax / 127.0, id = d != 0.0 ? 1.0 / d : 0.0;
    if (p.mode == 2u) { /* Q8_K: the 256-element super-block's signed maximum */
        const uint so = xo - 32 * (b % 8u);
        float am = 0.0, vmax = 0.0;
        for (uint l = 0; l < 256; l++) {
            const float v = s0_f32[so + l];
            if (abs(v) > am) { am = abs(v); vmax = v; }
        }
        id = am > 0.0 ? -127.0 / vmax : 0.0;
        d = am > 0.0 ? 1.0 / id : 0.0;
    }
    const uint qo = (p.off_q >> 2) + blk * 11;
    int s0 = 0, s1 = 0;
    [[unroll]] for (uint w = 0; w < 8; w++) {
        uint word = 0;
        [[unroll]] for (uint j = 0; j < 4; j++) {
            const int q = int(clamp(roundEven(x[4 * w + j] * id), -127.0, 127.0));
            if (w < 4) s0 += q; else s1 += q;
            word |= (uint(q) & 255u) << (8 * j);
        }
        d_i32[qo + 3 + w] = int(word);
    }
    const float du = p.mode == 2u ? d : round_f16(d);
    d_f32[qo] = du;
    if (p.mode == 1u) {
        const float sh = 0.5 * round_f16(d * float(s0 + s1));
        d_f32[qo + 1] = sh;
        d_f32[qo + 2] = sh;
    } else {
        d_f32[qo + 1] = du * float(s0);
        d_f32[qo + 2] = du * float(s1);
    }
}
