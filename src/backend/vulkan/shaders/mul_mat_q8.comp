#version 450
/* Matrix x matrix, int8-dot path: 64 x 64 tiles, K in steps of 32 (two 16-element
 * groups); shared memory holds a's values packed 4 per word with each group's scale and
 * offset, and b's 8-bit blocks as stored (packed words, scale, offset factors); each
 * thread accumulates a 4 x 4 block with 4 x 8-bit dot products (q8_common.glsl). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "dequant.glsl"
#include "mm_common.glsl"
#include "q8_common.glsl"

#define BM 64
#define BN 64
layout(local_size_x = 256) in;

shared uint Aq[8][BM + 1];
shared float Asc[2][BM], Aof[2][BM];
shared uint Bq[8][BN + 1];
shared float Bd[BN];
shared float Bs[2][BN];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint tm = tid % 16, tn = tid / 16;
    const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;
    const uint i2 = gl_WorkGroupID.z % p.B2, i3 = gl_WorkGroupID.z / p.B2;
    const uint ia = p.off_a + (i2 / p.r2) * p.nb02 + (i3 / p.r3) * p.nb03;
    const uint qrow0 = (i3 * p.B2 + i2) * p.N;
    float acc[4][4];
    [[unroll]] for (uint i = 0; i < 4; i++) [[unroll]] for (uint j = 0; j < 4; j++) acc[i][j] = 0.0;
    for (uint k0 = 0; k0 < p.K; k0 += 32) {
        if (tid < 2 * BM) {
            const uint r = tid >> 1, grp = tid & 1u, m = m0 + r;
            int q[16];
            float sc = 0.0, of = 0.0;
            if (m < p.rows) {
                const uint e0 = k0 + 16 * grp;
                deq16(ia + m * p.nb01 + (e0 / QK) * QB, (e0 % QK) / 16, q, sc, of);
            } else {
                [[unroll]] for (uint j = 0; j < 16; j++) q[j] = 0;
            }
            [[unroll]] for (uint w = 0; w < 4; w++)
                Aq[4 * grp + w][r] = pack4(q[4 * w], q[4 * w + 1], q[4 * w + 2], q[4 * w + 3]);
            Asc[grp][r] = sc;
            Aof[grp][r] = of;
        } else {
            const uint t2 = tid - 2 * BM, c = t2 >> 1, grp = t2 & 1u, n = n0 + c;
            uint qa[4];
            float da = 0.0, so = 0.0;
            if (n < p.N) {
                q8_group(p.off_b + (qrow0 + n) * p.q8_row, k0 / 16 + grp, qa, da, so);
            } else {
                [[unroll]] for (uint w = 0; w < 4; w++) qa[w] = 0u;
            }
            [[unroll]] for (uint w = 0; w < 4; w++) Bq[4 * grp + w][c] = qa[w];
            if (grp == 0u) Bd[c] = da;
            Bs[grp][c] = so;
        }
        barrier();
        [[unroll]] for (uint grp = 0; grp < 2; grp++) {
            int is_[4][4];
            [[unroll]] for (uint i = 0; i < 4; i++) [[unroll]] for (uint j = 0; j < 4; j++) is_[i][j] = 0;
            [[unroll]] for (uint w = 4 * grp; w < 4 * grp + 4; w++) {
                uint a[4], b[4];
                [[unroll]] for (uint i = 0; i < 4; i++) a[i] = Aq[w][tm + 16 * i];
                [[unroll]] for (uint j = 0; j < 4; j++) b[j] = Bq[w][tn + 16 * j];
                [[unroll]] for (uint i = 0; i < 4; i++) [[unroll]] for (uint j = 0; j < 4; j++) is_[i][j] += dot4(a[i], b[j]);
            }
            [[unroll]] for (uint i = 0; i < 4; i++) {
                const float sc = Asc[grp][tm + 16 * i], of = Aof[grp][tm + 16 * i];
                [[unroll]] for (uint j = 0; j < 4; j++) {
                    const uint c = tn + 16 * j;
                    acc[i][j] += sc * Bd[c] * float(is_[i][j]) + of * Bs[grp][c];
                }
            }
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
