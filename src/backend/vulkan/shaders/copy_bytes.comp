#version 450
/* Contiguous byte copy (DUP/CPY of identical layouts, any type incl. quantized):
 * 4 bytes per thread when both offsets and the size allow, else 1. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "elem_common.glsl"

layout(push_constant) uniform PC {
    uint off_a, off_d, n, words;
} p;

void main() {
    const uint k = elem_index();
    if (p.words != 0u) {
        if (k < p.n / 4) d_i32[(p.off_d >> 2) + k] = s0_i32[(p.off_a >> 2) + k];
    } else if (k < p.n) {
        d_u8[p.off_d + k] = s0_u8[p.off_a + k];
    }
}
