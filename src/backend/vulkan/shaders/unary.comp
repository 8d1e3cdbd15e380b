#version 450
/* Unary ops (one thread per element), F32/F16/BF16 in and out; op codes in vk_ops.c.
 * SILU with a multiplier at binding 1 is loom_swiglu (silu(x) * g, same shape). */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "elem_common.glsl"

layout(push_constant) uniform PC {
    uvec4 ne, nba, nbd, nbg;
    uint off_a, off_d, off_g, op;
    uint ta, td, has_g, n;
    float p0, p1;
} p;

void main() {
    const uint k = elem_index();
    if (k >= p.n) return;
    const uvec4 i = unflat(k, p.ne);
    const float x = LOAD_PLAIN(s0, p.off_a + dotu(i, p.nba), p.ta);
    float r;
    switch (p.op) {
    case 0: r = -x; break;
    case 1: r = x * p.p0; break;
    case 2: r = x * x; break;
    case 3: r = sqrt(x); break;
    case 4: r = sin(x); break;
    case 5: r = cos(x); break;
    case 6: r = tanh(x); break;
    case 7: r = 1.0 / (1.0 + exp(-x)); break;
    case 8: r = x / (1.0 + exp(-x)); break;
    case 9: r = x > 0.0 ? x : 0.0; break;
    case 10: r = 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); break;
    case 11: r = x / (1.0 + exp(-1.702 * x)); break;
    default: r = x < p.p0 ? p.p0 : (x > p.p1 ? p.p1 : x); break;
    }
    if (p.has_g != 0u) r = r * s1_f32[(p.off_g + dotu(i, p.nbg)) >> 2];
    store_plain(p.off_d + dotu(i, p.nbd), p.td, r);
}
