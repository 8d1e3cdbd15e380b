#version 450
/* HADAMARD: the orthonormal Walsh-Hadamard transform of each block of n consecutive F32
 * elements along ne0 (n a power of two, at most 1024 here), one workgroup per block: the
 * block in shared memory, log2(n) passes of butterflies (a, b) -> (a + b, a - b) pairs h
 * apart, then the scale 1/sqrt(n) (the CPU kernel's order of operations). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define WG 256
layout(local_size_x = WG) in;

layout(push_constant) uniform PC {
    uint ne1, ne2, n_rows, blocks;
    uint nba1, nba2, nba3, nbd1;
    uint nbd2, nbd3, off_a, off_d;
    uint n, scale;
} p;

shared float buf[1024];

void main() {
    const uint g = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint r = g / p.blocks, b = g % p.blocks;
    if (r >= p.n_rows) return;
    const uint tid = gl_LocalInvocationID.x;
    const uint i1 = r % p.ne1, i2 = (r / p.ne1) % p.ne2, i3 = r / (p.ne1 * p.ne2);
    const uint oa = p.off_a + i1 * p.nba1 + i2 * p.nba2 + i3 * p.nba3 + b * p.n * 4u;
    const uint od = p.off_d + i1 * p.nbd1 + i2 * p.nbd2 + i3 * p.nbd3 + b * p.n * 4u;
    for (uint e = tid; e < p.n; e += WG) buf[e] = s0_f32[(oa >> 2) + e];
    barrier();
    for (uint h = 1u; h < p.n; h <<= 1) {
        for (uint k = tid; k < p.n / 2u; k += WG) {
            const uint i = (k / h) * 2u * h + (k % h);
            const float x = buf[i], y = buf[i + h];
            buf[i] = x + y;
            buf[i + h] = x - y;
        }
        barrier();
    }
    const float s = uintBitsToFloat(p.scale);
    for (uint e = tid; e < p.n; e += WG) d_f32[(od >> 2) + e] = buf[e] * s;
}
