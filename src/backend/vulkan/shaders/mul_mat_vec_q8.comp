#version 450
/* Matrix x few vectors, int8-dot path: a's 16-element groups (q, scale, offset) times
 * the activations' 8-bit groups (quantize_q8.comp) in integer arithmetic:
 *   sum_j (sc q_j + of) (da qa_j) = sc da sum_j q_j qa_j + of (da sum_j qa_j).
 * Same decomposition as mul_mat_vec.comp (8 rows per workgroup, 8 lanes per row). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "dequant.glsl"
#include "mm_common.glsl"
#include "q8_common.glsl"

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
    const uint qrow0 = (i3 * p.B2 + i2) * p.N;
    float acc[NC];
    [[unroll]] for (uint c = 0; c < NC; c++) acc[c] = 0.0;
    const uint ng = live ? p.K / 16 : 0;
    for (uint g = lane; g < ng; g += LANES) {
        int q[16];
        float sc, of;
        deq16(ia + (g / (QK / 16)) * QB, g % (QK / 16), q, sc, of);
        uint qw[4];
        [[unroll]] for (uint w = 0; w < 4; w++) qw[w] = pack4(q[4 * w], q[4 * w + 1], q[4 * w + 2], q[4 * w + 3]);
        for (uint c = 0; c < p.N && c < NC; c++) {
            uint qa[4];
            float da, so;
            q8_group(p.off_b + (qrow0 + c) * p.q8_row, g, qa, da, so);
            int is_ = dot4(qw[0], qa[0]) + dot4(qw[1], qa[1]) + dot4(qw[2], qa[2]) + dot4(qw[3], qa[3]);
            acc[c] += sc * da * float(is_) + of * so;
        }
    }
    for (uint c = 0; c < p.N && c < NC; c++) red[c][tid] = acc[c];
    barrier();
    if (live && lane < p.N && lane < NC) {
        float s = 0.0;
        for (uint l = 0; l < LANES; l++) s += red[lane][tid - lane + l];
        d_f32[(p.off_d + (p.row0 + row) * 4 + lane * p.nbd1 + i2 * p.nbd2 + i3 * p.nbd3) / 4] = s;
    }
}
