#version 450
/* CPY/DUP between plain types (F32/F16/BF16/I32): element k of a (logical order) goes
 * to element k of d (logical order); the shapes may differ, the counts match. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "elem_common.glsl"

layout(push_constant) uniform PC {
    uvec4 nea, nba, ned, nbd;
    uint off_a, off_d, ta, td;
    uint n;
} p;

void main() {
    const uint k = elem_index();
    if (k >= p.n) return;
    const uint oa = p.off_a + dotu(unflat(k, p.nea), p.nba);
    const uint od = p.off_d + dotu(unflat(k, p.ned), p.nbd);
    if (p.ta == p.td && p.ta == TY_I32) d_i32[od >> 2] = s0_i32[oa >> 2];
    else if (p.ta == p.td && p.ta != TY_F32) d_u16[od >> 1] = s0_u16[oa >> 1];
    else store_plain(od, p.td, LOAD_PLAIN(s0, oa, p.ta));
}
