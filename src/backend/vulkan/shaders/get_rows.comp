#version 450
/* GET_ROWS: dst[:, r] = dequant(a[:, ids[r]]) for every output row r (i10, i11, i12);
 * a [E, R, A2, A3] (TYPE), ids I32, dst F32 (or I32 when TYPE is I32: TYPE 26).
 * One workgroup per output row. Only ids in [id_lo, id_hi) are handled (a may be bound
 * in windows of rows, one dispatch each); an id outside [0, R) raises flag 0 and zeroes
 * the row (done by the dispatch with id_lo == 0). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#if TYPE == 26
#define PLAIN_I32 1
#else
#define PLAIN_I32 0
#include "dequant.glsl"
#endif

#define WG 64
layout(local_size_x = WG) in;

layout(push_constant) uniform PC {
    uint E, ne1, ne2, R;
    uint nba1, nba2, nba3, nbi0;
    uint nbi1, nbi2, nbd1, nbd2;
    uint nbd3, off_a, off_i, off_d;
    uint id_lo, id_hi, n_rows, pad;
} p;

void main() {
    const uint r = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (r >= p.n_rows) return;
    const uint tid = gl_LocalInvocationID.x;
    const uint i10 = r % p.ne1, i11 = (r / p.ne1) % p.ne2, i12 = r / (p.ne1 * p.ne2);
    const int id = s1_i32[(p.off_i + i10 * p.nbi0 + i11 * p.nbi1 + i12 * p.nbi2) >> 2];
    const uint od = p.off_d + i10 * p.nbd1 + i11 * p.nbd2 + i12 * p.nbd3;
    if (id < 0 || uint(id) >= p.R) {
        if (p.id_lo == 0u) {
            if (tid == 0u) raise_flag(0);
            for (uint e = tid; e < p.E; e += WG) d_f32[(od >> 2) + e] = 0.0;
        }
        return;
    }
    if (uint(id) < p.id_lo || uint(id) >= p.id_hi) return;
    const uint oa = p.off_a + (uint(id) - p.id_lo) * p.nba1 + i11 * p.nba2 + i12 * p.nba3;
#if PLAIN_I32
    for (uint e = tid; e < p.E; e += WG) d_i32[(od >> 2) + e] = s0_i32[(oa >> 2) + e];
#elif PLAIN
    for (uint e = tid; e < p.E; e += WG) d_f32[(od >> 2) + e] = ldw(oa + e * QB);
#else
    const uint ng = p.E / 16;
    for (uint g = tid; g < ng; g += WG) {
        float v[16];
        deq16f(oa + (g / (QK / 16)) * QB, g % (QK / 16), v);
        [[unroll]] for (uint j = 0; j < 16; j++) d_f32[(od >> 2) + 16 * g + j] = v[j];
    }
#endif
}
