#version 450
/* SUM_ROWS / MEAN along ne0 (F32/F16/BF16 in, dst type F32/F16/BF16), one workgroup per row. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define WG 256
layout(local_size_x = WG) in;

layout(push_constant) uniform PC {
    uint ne0, ne1, ne2, n_rows;
    uint nba0, nba1, nba2, nba3;
    uint nbd1, nbd2, nbd3, off_a;
    uint off_d, mean, ta, td;
} p;

shared float red[WG];

void main() {
    const uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (r >= p.n_rows) return;
    const uint tid = gl_LocalInvocationID.x;
    const uint i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    const uint oa = p.off_a + i1 * p.nba1 + i2 * p.nba2 + i3 * p.nba3;
    float s = 0.0;
    for (uint e = tid; e < p.ne0; e += WG) s += LOAD_PLAIN(s0, oa + e * p.nba0, p.ta);
    red[tid] = s;
    barrier();
    [[unroll]] for (uint w = WG / 2; w > 0; w >>= 1) {
        if (tid < w) red[tid] += red[tid + w];
        barrier();
    }
    if (tid == 0u) {
        float v = red[0];
        if (p.mean != 0u) v /= float(p.ne0);
        store_plain(p.off_d + i1 * p.nbd1 + i2 * p.nbd2 + i3 * p.nbd3, p.td, v);
    }
}
