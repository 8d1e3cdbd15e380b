#version 450
/* SOFT_MAX: softmax(a * scale + slope * mask) along ne0, one workgroup per row (slope 1, or
 * ALiBi's slope of the row's head i2). a F32, mask
 * F32/F16 [ne0, >= ne1] broadcast over dims 2, 3 (modulo its extents), dst F32
 * contiguous rows. A row that is all -inf gives zeros (as the CPU reference). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define WG 256
layout(local_size_x = WG) in;

layout(push_constant) uniform PC {
    uint ne0, ne1, ne2, n_rows;
    uint nba0, nba1, nba2, nba3;
    uint nbm1, nbm2, nbm3, mne2;
    uint mne3, nbd1, nbd2, nbd3;
    uint off_a, off_m, off_d, has_m;
    uint tm;
    float scale;
    float m0, m1; /* ALiBi (nlog2 > 0): row head i2 scales the mask by slope(i2) (loom_alibi_slope) */
    uint nlog2;
} p;

float g_slope = 1.0;

shared float red[WG];

float val(uint oa, uint om, uint e) {
    float v = s0_f32[(oa + e * p.nba0) >> 2] * p.scale;
    if (p.has_m != 0u) v += g_slope * (p.tm == TY_F16 ? float(s1_f16[(om >> 1) + e]) : s1_f32[(om >> 2) + e]);
    return v;
}

void main() {
    const uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (r >= p.n_rows) return;
    const uint tid = gl_LocalInvocationID.x;
    const uint i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    if (p.nlog2 != 0u) g_slope = i2 < p.nlog2 ? pow(p.m0, float(i2 + 1u)) : pow(p.m1, float(2u * (i2 - p.nlog2) + 1u));
    const uint oa = p.off_a + i1 * p.nba1 + i2 * p.nba2 + i3 * p.nba3;
    const uint om = p.off_m + i1 * p.nbm1 + (i2 % p.mne2) * p.nbm2 + (i3 % p.mne3) * p.nbm3;
    const uint od = (p.off_d + i1 * p.nbd1 + i2 * p.nbd2 + i3 * p.nbd3) >> 2;
    float mx = -1.0 / 0.0;
    for (uint e = tid; e < p.ne0; e += WG) mx = max(mx, val(oa, om, e));
    red[tid] = mx;
    barrier();
    [[unroll]] for (uint w = WG / 2; w > 0; w >>= 1) {
        if (tid < w) red[tid] = max(red[tid], red[tid + w]);
        barrier();
    }
    mx = red[0];
    barrier();
    if (isinf(mx) && mx < 0.0) {
        for (uint e = tid; e < p.ne0; e += WG) d_f32[od + e] = 0.0;
        return;
    }
    float s = 0.0;
    for (uint e = tid; e < p.ne0; e += WG) {
        const float x = exp(val(oa, om, e) - mx);
        d_f32[od + e] = x;
        s += x;
    }
    red[tid] = s;
    barrier();
    [[unroll]] for (uint w = WG / 2; w > 0; w >>= 1) {
        if (tid < w) red[tid] += red[tid + w];
        barrier();
    }
    const float inv = 1.0 / red[0];
    for (uint e = tid; e < p.ne0; e += WG) d_f32[od + e] *= inv;
}
