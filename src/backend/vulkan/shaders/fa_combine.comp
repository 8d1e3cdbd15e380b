#version 450
/* Merge the split-K partial states of flash_attn.comp: per (t, h), in chunk order,
 * out = sum_c acc_c exp(m_c - M) / sum_c s_c exp(m_c - M). One workgroup per (h, t).
 * With has_s, the head's sink logit (binding 1, sinks F32 [H] at byte offset off_s)
 * joins the normaliser as in flash_attn.comp. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define WG 128
layout(local_size_x = WG) in;

layout(push_constant) uniform PC {
    uint Dv, H, n_chunks, off_p;
    uint off_d, has_s, off_s;
} p;

void main() {
    const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y;
    const uint tid = gl_LocalInvocationID.x;
    const uint base = (p.off_p >> 2) + (t * p.H + h) * p.n_chunks * (p.Dv + 2);
    float M = -1.0 / 0.0;
    for (uint c = 0; c < p.n_chunks; c++) M = max(M, s0_f32[base + c * (p.Dv + 2)]);
    float S = 0.0;
    for (uint c = 0; c < p.n_chunks; c++) {
        const float m = s0_f32[base + c * (p.Dv + 2)];
        if (!(isinf(m) && m < 0.0)) S += s0_f32[base + c * (p.Dv + 2) + 1] * exp(m - M);
    }
    float f = 1.0;
    if (p.has_s != 0u) {
        const float sk = s1_f32[(p.off_s >> 2) + h];
        if (sk > M) {
            f = (isinf(M) && M < 0.0) ? 0.0 : exp(M - sk);
            S = S * f + 1.0;
        } else {
            S += exp(sk - M);
        }
    }
    const uint od = (p.off_d >> 2) + (t * p.H + h) * p.Dv;
    for (uint d = tid; d < p.Dv; d += WG) {
        float o = 0.0;
        for (uint c = 0; c < p.n_chunks; c++) {
            const uint pb = base + c * (p.Dv + 2);
            const float m = s0_f32[pb];
            if (!(isinf(m) && m < 0.0)) o += s0_f32[pb + 2 + d] * exp(m - M);
        }
        d_f32[od + d] = S > 0.0 ? o * (f / S) : 0.0 / 0.0;
    }
}
