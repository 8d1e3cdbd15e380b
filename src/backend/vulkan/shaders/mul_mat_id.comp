#version 450
/* MUL_MAT_ID (MoE), float path: a [K, M, E], b [K, B1, T], ids I32 [S, T] ->
 * dst F32 [M, S, T], dst[:, s, t] = a[:, :, ids[s, t]]^T b[:, s % B1, t].
 * Workgroups of 8 rows per (s, t) (z = s + S * t): matrix x vector rows as in
 * mul_mat_vec.comp. Experts outside [row0-window e_lo, e_hi) are left to another
 * dispatch (a bound in windows of experts); an id outside [0, E) raises flag 0. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "dequant.glsl"
#include "mm_common.glsl"

#define WG 64
#define LANES 8
layout(local_size_x = WG) in;

shared float red[WG];

void main() {
    const uint tid = gl_LocalInvocationID.x, lane = tid % LANES;
    const uint row = wg_linear() * (WG / LANES) + tid / LANES;
    const uint s = gl_WorkGroupID.z % p.S, t = gl_WorkGroupID.z / p.S;
    const int e = s2_i32[(p.off_ids + s * p.nb_ids0 + t * p.nb_ids1) >> 2];
    if (e < 0 || uint(e) >= p.n_exp) {
        if (p.row0 == 0u && gl_WorkGroupID.x == 0u && gl_WorkGroupID.y == 0u && tid == 0u) raise_flag(0);
        return;
    }
    /* row0/rows carry the expert window [e_lo, e_lo + rows) here */
    if (uint(e) < p.row0 || uint(e) >= p.row0 + p.rows) return;
    const bool live = row < p.M;
    const uint ia = p.off_a + row * p.nb01 + (uint(e) - p.row0) * p.nb02;
    const uint ib = (p.off_b + (s % p.B1) * p.nb11 + t * p.nb12) >> 2;
    float acc = 0.0;
    const uint ng = live ? (p.K + 15) / 16 : 0;
    for (uint g = lane; g < ng; g += LANES) {
        float v[16];
#if PLAIN
        load16f(ia, 16 * g, p.K, v);
#else
        deq16f(ia + (g / (QK / 16)) * QB, g % (QK / 16), v);
#endif
        const uint e0 = 16 * g, ne = min(16u, p.K - e0);
        for (uint j = 0; j < ne; j++) acc += v[j] * act(s1_f32[ib + e0 + j]);
    }
    red[tid] = acc;
    barrier();
    if (live && lane == 0u) {
        float sum = 0.0;
        for (uint l = 0; l < LANES; l++) sum += red[tid + l];
        d_f32[(p.off_d + row * 4 + s * p.nbd1 + t * p.nbd2) >> 2] = sum;
    }
}
