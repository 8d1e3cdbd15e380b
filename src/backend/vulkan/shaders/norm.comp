#version 450
/* RMS_NORM (rms = 1) and NORM (rms = 0) along ne0, one workgroup per row; RMS_NORM
 * with a weight row (binding 1, F32 contiguous) multiplies as it writes:
 * (x * scale) * w, the rounding of the two-node form. a F32 (rows may be strided),
 * dst F32 rows contiguous. Sums in F32 (the CPU reference sums in double). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define WG 256
layout(local_size_x = WG) in;

layout(push_constant) uniform PC {
    uint ne0, ne1, ne2, n_rows;
    uint nba0, nba1, nba2, nba3;
    uint nbd1, nbd2, nbd3, off_a;
    uint off_w, off_d, rms, has_w;
    float eps;
} p;

shared float red[WG];

float reduce_sum(float v) {
    const uint tid = gl_LocalInvocationID.x;
    red[tid] = v;
    barrier();
    [[unroll]] for (uint w = WG / 2; w > 0; w >>= 1) {
        if (tid < w) red[tid] += red[tid + w];
        barrier();
    }
    float s = red[0];
    barrier();
    return s;
}

void main() {
    const uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (r >= p.n_rows) return;
    const uint tid = gl_LocalInvocationID.x;
    const uint i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    const uint oa = p.off_a + i1 * p.nba1 + i2 * p.nba2 + i3 * p.nba3;
    const uint od = (p.off_d + i1 * p.nbd1 + i2 * p.nbd2 + i3 * p.nbd3) >> 2;
    float mean = 0.0;
    if (p.rms == 0u) {
        float s = 0.0;
        for (uint e = tid; e < p.ne0; e += WG) s += s0_f32[(oa + e * p.nba0) >> 2];
        mean = reduce_sum(s) / float(p.ne0);
    }
    float ss = 0.0;
    for (uint e = tid; e < p.ne0; e += WG) {
        const float v = s0_f32[(oa + e * p.nba0) >> 2] - mean;
        ss += v * v;
    }
    const float sc = 1.0 / sqrt(reduce_sum(ss) / float(p.ne0) + p.eps);
    for (uint e = tid; e < p.ne0; e += WG) {
        const float x = s0_f32[(oa + e * p.nba0) >> 2];
        if (p.has_w != 0u) d_f32[od + e] = (x * sc) * s1_f32[(p.off_w >> 2) + e];
        else d_f32[od + e] = (x - mean) * sc;
    }
}
