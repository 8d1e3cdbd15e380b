#version 450
/* ROPE (NORMAL / NEOX, frequency factors, YaRN): one thread per element pair of a row
 * [head_dim, heads, T, 1]; dims >= n_dims copied. theta in F32 (the CPU reference uses
 * double); YaRN corr_lo/hi and mscale are computed on the host as the CPU does. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "elem_common.glsl"

layout(push_constant) uniform PC {
    uint ne0, ne1, ne2, n;
    uint nba1, nba2, nbd1, nbd2;
    uint off_a, off_pos, off_ff, off_d;
    uint n_dims, neox, has_ff, ty;
    float base, freq_scale, ext_factor, mscale;
    float corr_lo, corr_hi;
} p;

float ld(uint o) { return p.ty == TY_F16 ? float(s0_f16[o >> 1]) : s0_f32[o >> 2]; }
void st(uint o, float v) {
    if (p.ty == TY_F16) d_f16[o >> 1] = float16_t(v);
    else d_f32[o >> 2] = v;
}

void main() {
    const uint k = elem_index();
    if (k >= p.n) return;
    const uint npair = (p.ne0 + 1) / 2;
    const uint q = k % npair, row = k / npair;
    const uint i1 = row % p.ne1, i2 = row / p.ne1;
    const uint es = p.ty == TY_F16 ? 2u : 4u;
    const uint oa = p.off_a + i1 * p.nba1 + i2 * p.nba2, od = p.off_d + i1 * p.nbd1 + i2 * p.nbd2;
    const uint half_ = p.n_dims / 2;
    if (q >= half_) { /* tail: copy elements n_dims + 2 (q - half), +1 */
        const uint e = p.n_dims + 2 * (q - half_);
        if (e < p.ne0) st(od + e * es, ld(oa + e * es));
        if (e + 1 < p.ne0) st(od + (e + 1) * es, ld(oa + (e + 1) * es));
        return;
    }
    float f = pow(p.base, -2.0 * float(q) / float(p.n_dims));
    if (p.has_ff != 0u) f /= s2_f32[(p.off_ff >> 2) + q];
    const float pos = float(s1_i32[(p.off_pos >> 2) + i2]);
    const float th_ex = pos * f;
    float th = p.freq_scale * th_ex;
    if (p.ext_factor != 0.0) {
        const float y = clamp((float(q) - p.corr_lo) / max(p.corr_hi - p.corr_lo, 0.001), 0.0, 1.0);
        const float mix_ = (1.0 - y) * p.ext_factor;
        th = th * (1.0 - mix_) + th_ex * mix_;
    }
    const float c = cos(th) * p.mscale, s = sin(th) * p.mscale;
    const uint e0 = p.neox != 0u ? q : 2 * q, e1 = p.neox != 0u ? q + half_ : 2 * q + 1;
    const float x0 = ld(oa + e0 * es), x1 = ld(oa + e1 * es);
    st(od + e0 * es, x0 * c - x1 * s);
    st(od + e1 * es, x0 * s + x1 * c);
}
