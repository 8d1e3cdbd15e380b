#version 450
/* ADD/SUB/MUL/DIV: dst = a op b, b broadcast (b.ne[i] divides a.ne[i]). One thread per
 * element. Types F32/F16/BF16 per operand. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "elem_common.glsl"

layout(push_constant) uniform PC {
    uvec4 ne, nba, nbb, neb, nbd;
    uint off_a, off_b, off_d, op;
    uint ta, tb, td, n;
} p;

void main() {
    const uint k = elem_index();
    if (k >= p.n) return;
    const uvec4 i = unflat(k, p.ne);
    const uvec4 j = i % p.neb;
    const float x = LOAD_PLAIN(s0, p.off_a + dotu(i, p.nba), p.ta);
    const float y = LOAD_PLAIN(s1, p.off_b + dotu(j, p.nbb), p.tb);
    float r;
    if (p.op == 0u) r = x + y;
    else if (p.op == 1u) r = x - y;
    else if (p.op == 2u) r = x * y;
    else r = x / y;
    store_plain(p.off_d + dotu(i, p.nbd), p.td, r);
}
