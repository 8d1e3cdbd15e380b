#version 450
/* Matrix x matrix (prompt), float path: 64 x 64 output tiles, K in steps of 32;
 * a's tile dequantized into shared memory (one 16-element group per thread), b's tile
 * loaded as F32; each of the 256 threads accumulates a 4 x 4 block (rows tm + 16 i,
 * columns tn + 16 j). x = row tile, y = column tile, z = batch slice. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "dequant.glsl"
#include "mm_common.glsl"

#define BM 64
#define BN 64
#define BK 32
layout(local_size_x = 256) in;

shared float As[BK][BM + 1];
shared float Bs[BK][BN + 1];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint tm = tid % 16, tn = tid / 16;
    const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
    const uint i2 = gl_WorkGroupID.z % p.B2, i3 = gl_WorkGroupID.z / p.B2;
    const uint ia = p.off_a + (i2 / p.r2) * p.nb02 + (i3 / p.r3) * p.nb03;
    const uint ib = p.off_b + i2 * p.nb12 + i3 * p.nb13;
    float acc[4][4];
    [[unroll]] for (uint i = 0; i < 4; i++) [[unroll]] for (uint j = 0; j < 4; j++) acc[i][j] = 0.0;
    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        if (tid < 2 * BM) {
            const uint r = tid >> 1, grp = tid & 1u, m = m0 + r;
            float v[16];
            const uint e0 = k0 + 16 * grp;
            if (m < p.rows && e0 < p.K) {
#if PLAIN
                load16f(ia + m * p.nb01, e0, p.K, v);
#else
                deq16f(ia + m * p.nb01 + (e0 / QK) * QB, (e0 % QK) / 16, v);
#endif
            } else {
                [[unroll]] for (uint j = 0; j < 16; j++) v[j] = 0.0;
            }
            [[unroll]] for (uint j = 0; j < 16; j++) As[16 * grp + j][r] = v[j];
        }
        {
            const uint c = tid >> 2, kk0 = (tid & 3u) * 8, n = n0 + c;
            const uint bb = (ib + n * p.nb11) / 4 + k0;
            [[unroll]] for (uint j = 0; j < 8; j++) {
                const uint kk = kk0 + j;
                Bs[kk][c] = (n < p.N && k0 + kk < p.K) ? act(s1_f32[bb + kk]) : 0.0;
            }
        }
        barrier();
        for (uint kk = 0; kk < BK; kk++) {
            float a[4], b[4];
            [[unroll]] for (uint i = 0; i < 4; i++) a[i] = As[kk][tm + 16 * i];
            [[unroll]] for (uint j = 0; j < 4; j++) b[j] = Bs[kk][tn + 16 * j];
            [[unroll]] for (uint i = 0; i < 4; i++) [[unroll]] for (uint j = 0; j < 4; j++) acc[i][j] += a[i] * b[j];
        }
        barrier();
    }
    [[unroll]] for (uint j = 0; j < 4; j++) {
        const uint n = n0 + tn + 16 * j;
        if (n >= p.N) continue;
        [[unroll]] for (uint i = 0; i < 4; i++) {
            const uint m = m0 + tm + 16 * i;
            if (m < p.rows)
                d_f32[(p.off_d + (p.row0 + m) * 4 + n * p.nbd1 + i2 * p.nbd2 + i3 * p.nbd3) / 4] = acc[i][j];
        }
    }
}
