#version 450
/* Matrix x few vectors (decode), float path: a workgroup of 64 threads computes 8 rows
 * of a, 8 lanes per row walking it in groups of 16 elements (dequantized once, applied
 * to all N <= NC columns); the 8 lanes' partial sums meet in shared memory (one
 * barrier). x/y = row block (2-D grid), z = batch slice (i2 + i3 * B2). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "dequant.glsl"
#include "mm_common.glsl"

#define WG 64
#define LANES 8
#define NC 8
layout(local_size_x = WG) in;

shared float red[NC][WG];

void main() {
    const uint tid = gl_LocalInvocationID.x, lane = tid % LANES;
    const uint row = wg_linear() * (WG / LANES) + tid / LANES;
    const bool live = row < p.rows;
    const uint i2 = gl_WorkGroupID.z % p.B2, i3 = gl_WorkGroupID.z / p.B2;
    const uint ia = p.off_a + row * p.nb01 + (i2 / p.r2) * p.nb02 + (i3 / p.r3) * p.nb03;
    const uint ib = p.off_b + i2 * p.nb12 + i3 * p.nb13;
    float acc[NC];
    [[unroll]] for (uint c = 0; c < NC; c++) acc[c] = 0.0;
    const uint ng = live ? (p.K + 15) / 16 : 0;
    for (uint g = lane; g < ng; g += LANES) {
        float v[16];
#if PLAIN
        load16f(ia, 16 * g, p.K, v);
#else
        deq16f(ia + (g / (QK / 16)) * QB, g % (QK / 16), v);
#endif
        const uint e0 = 16 * g;
        const uint ne = min(16u, p.K - e0);
        for (uint c = 0; c < p.N && c < NC; c++) {
            const uint bb = (ib + c * p.nb11) / 4 + e0;
            float s = 0.0;
            for (uint j = 0; j < ne; j++) s += v[j] * act(s1_f32[bb + j]);
            acc[c] += s;
        }
    }
    for (uint c = 0; c < p.N && c < NC; c++) red[c][tid] = acc[c];
    barrier();
    if (live && lane < p.N && lane < NC) { /* lane c of the row sums column c */
        float s = 0.0;
        for (uint l = 0; l < LANES; l++) s += red[lane][tid - lane + l];
        d_f32[(p.off_d + (p.row0 + row) * 4 + lane * p.nbd1 + i2 * p.nbd2 + i3 * p.nbd3) / 4] = s;
    }
}
