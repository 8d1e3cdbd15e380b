#version 450
/* CPY into a quantized tensor (Q8_0 / Q4_0, DTYPE at compile time): one thread per
 * destination block of 32 elements (dst rows contiguous), whose source elements are
 * the same flattened (logical order) indices of a (F32/F16/BF16, any strides).
 * Q8_0: absmax scale as the CPU reference quantizer; Q4_0: the reference's search
 * over 21 candidate scales (sums in F32 here, double there). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "elem_common.glsl"

layout(push_constant) uniform PC {
    uvec4 nea, nba, ned, nbd;
    uint off_a, off_d, ta, n_blocks;
} p;

void main() {
    const uint blk = elem_index();
    if (blk >= p.n_blocks) return;
    const uint k0 = blk * 32;
    float x[32];
    [[unroll]] for (uint l = 0; l < 32; l++) x[l] = LOAD_PLAIN(s0, p.off_a + dotu(unflat(k0 + l, p.nea), p.nba), p.ta);
    const uvec4 id0 = unflat(k0, p.ned);
    const uint od = p.off_d + (id0.x / 32) * p.nbd.x + id0.y * p.nbd.y + id0.z * p.nbd.z + id0.w * p.nbd.w;
#if DTYPE == 8
    float amax = 0.0;
    [[unroll]] for (uint l = 0; l < 32; l++) amax = max(amax, abs(x[l]));
    const float d = amax / 127.0, id = d != 0.0 ? 1.0 / d : 0.0;
    d_f16[od >> 1] = float16_t(d);
    [[unroll]] for (uint l = 0; l < 32; l++) {
        const int q = int(clamp(roundEven(x[l] * id), -127.0, 127.0));
        d_u8[od + 2 + l] = uint8_t(uint(q) & 255u);
    }
#else
    float amax = 0.0, vmax = 0.0;
    [[unroll]] for (uint l = 0; l < 32; l++)
        if (abs(x[l]) > amax) { amax = abs(x[l]); vmax = x[l]; }
    float dq = 0.0;
    if (amax > 1e-30 && !isinf(amax)) {
        float best = -1.0;
        for (int k = -10; k <= 10; k++) {
            const float is_ = (8.0 + 0.1 * float(k)) / -vmax;
            float sxq = 0.0, sqq = 0.0;
            [[unroll]] for (uint l = 0; l < 32; l++) {
                const float t = clamp(roundEven(x[l] * is_), -8.0, 7.0);
                sxq += x[l] * t;
                sqq += t * t;
            }
            if (sqq <= 0.0) continue;
            const float score = sxq * sxq / sqq;
            if (score > best) { best = score; dq = sxq / sqq; }
        }
        if (dq == 0.0) dq = vmax / -8.0;
    }
    d_f16[od >> 1] = float16_t(dq);
    const float dh = round_f16(dq), id = dh != 0.0 ? 1.0 / dh : 0.0;
    [[unroll]] for (uint l = 0; l < 16; l++) {
        const uint q0 = uint(clamp(roundEven(x[l] * id), -8.0, 7.0) + 8.0);
        const uint q1 = uint(clamp(roundEven(x[l + 16] * id), -8.0, 7.0) + 8.0);
        d_u8[od + 2 + l] = uint8_t(q0 | (q1 << 4));
    }
#endif
}
