#version 450
/* FLASH_ATTN: q [Dk, T, H] F32, k [Dk, L, Hkv], v [Dv, L, Hkv] (rows contiguous, or v
 * transposed: any byte strides work for plain types), mask [L, >= T] F16/F32 or none
 * -> dst F32 [Dv, H, T]. Query head h reads kv head h / G. One workgroup per (h, t,
 * chunk of keys): keys in tiles of 128 (one per thread: score = scale * q.k + mask),
 * online softmax, then each thread accumulates p.V for its output dims. With several
 * chunks (split-K for decode) the partial states (max, sum, acc[Dv]) go to the scratch
 * bound as dst and fa_combine.comp merges them. K/V type: KVT (compile time); q is
 * rounded to k's activation type first (F16/BF16, or Q8_0 blocks for quantized k), as
 * the CPU kernel converts it. A row whose keys are all masked gives NaN.
 * Extras (loom_flash_attn_ext): softcap > 0 caps the scaled scores, softcap *
 * tanh(q.k * scale / softcap), before the mask; with has_s, sinks F32 [H] (binding 5,
 * byte offset off_s) join each row's normaliser when the row is finished (here, or in
 * fa_combine.comp after split-K), so a row whose keys are all masked gives 0. */
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

#define WG 128
#define DMAX 512
#define T_F32 0
#define T_F16 1
#define T_Q4_0 2
#define T_Q8_0 8
#define T_BF16 30
layout(local_size_x = WG) in;

layout(push_constant) uniform PC {
    uint Dk, Dv, T, H;
    uint L, G, nbq1, nbq2;
    uint nbk1, nbk2, nbv0, nbv1;
    uint nbv2, nbm1, off_q, off_k;
    uint off_v, off_m, off_d, has_m;
    uint tm, n_chunks, chunk_len, v_rows; /* v_rows: v's rows (dim 0) are contiguous */
    float scale, softcap;
    uint has_s, off_s;
    float m0, m1; /* ALiBi (nlog2 > 0): head h adds slope(h) * mask, loom_alibi_slope's series */
    uint nlog2;
} p;

shared float qs[DMAX];
shared float S[WG];
shared float red[WG];

float kval_row_dot(uint ro) {
    float s = 0.0;
#if KVT == T_F32
    for (uint d = 0; d < p.Dk; d++) s += qs[d] * s1_f32[(ro >> 2) + d];
#elif KVT == T_F16
    for (uint d = 0; d < p.Dk; d++) s += qs[d] * float(s1_f16[(ro >> 1) + d]);
#elif KVT == T_BF16
    for (uint d = 0; d < p.Dk; d++) s += qs[d] * bf16_to_f32(uint(s1_u16[(ro >> 1) + d]));
#elif KVT == T_Q8_0
    for (uint b = 0; b < p.Dk / 32; b++) {
        const uint bo = ro + 34 * b;
        float t = 0.0;
        for (uint i = 0; i < 32; i++) {
            int v = int(uint(s1_u8[bo + 2 + i]));
            t += qs[32 * b + i] * float(v >= 128 ? v - 256 : v);
        }
        s += t * float(s1_f16[bo >> 1]);
    }
#elif KVT == T_Q4_0
    for (uint b = 0; b < p.Dk / 32; b++) {
        const uint bo = ro + 18 * b;
        float t = 0.0;
        for (uint i = 0; i < 16; i++) {
            const uint x = uint(s1_u8[bo + 2 + i]);
            t += qs[32 * b + i] * float(int(x & 15u) - 8) + qs[32 * b + 16 + i] * float(int(x >> 4) - 8);
        }
        s += t * float(s1_f16[bo >> 1]);
    }
#endif
    return s;
}

/* v(d, l) with l's row at byte ro (plain types: ro + d * nbv0) */
float vval(uint ro, uint d) {
#if KVT == T_F32
    return s2_f32[(ro + d * p.nbv0) >> 2];
#elif KVT == T_F16
    return float(s2_f16[(ro + d * p.nbv0) >> 1]);
#elif KVT == T_BF16
    return bf16_to_f32(uint(s2_u16[(ro + d * p.nbv0) >> 1]));
#elif KVT == T_Q8_0
    const uint bo = ro + 34 * (d / 32);
    int v = int(uint(s2_u8[bo + 2 + d % 32]));
    return float(s2_f16[bo >> 1]) * float(v >= 128 ? v - 256 : v);
#elif KVT == T_Q4_0
    const uint bo = ro + 18 * (d / 32), i = d % 32;
    const uint x = uint(s2_u8[bo + 2 + (i & 15u)]);
    return float(s2_f16[bo >> 1]) * float(int(i < 16u ? (x & 15u) : (x >> 4)) - 8);
#endif
}

float reduce(float v, bool is_max) {
    const uint tid = gl_LocalInvocationID.x;
    red[tid] = v;
    barrier();
    [[unroll]] for (uint w = WG / 2; w > 0; w >>= 1) {
        if (tid < w) red[tid] = is_max ? max(red[tid], red[tid + w]) : red[tid] + red[tid + w];
        barrier();
    }
    const float r = red[0];
    barrier();
    return r;
}

void main() {
    const uint h = gl_WorkGroupID.x, t = gl_WorkGroupID.y, c = gl_WorkGroupID.z;
    const uint tid = gl_LocalInvocationID.x;
    const uint g = h / p.G;
    const float NEG_INF = -1.0 / 0.0;
    const float slope = p.nlog2 == 0u ? 1.0 : h < p.nlog2 ? pow(p.m0, float(h + 1u)) : pow(p.m1, float(2u * (h - p.nlog2) + 1u));
    /* q row, rounded as the CPU converts it */
    const uint qo = (p.off_q + t * p.nbq1 + h * p.nbq2) >> 2;
    for (uint d = tid; d < p.Dk; d += WG) {
        float x = s0_f32[qo + d];
#if KVT == T_F16
        x = round_f16(x);
#elif KVT == T_BF16
        x = bf16_to_f32(f32_to_bf16(x));
#endif
        qs[d] = x;
    }
    barrier();
#if KVT == T_Q8_0 || KVT == T_Q4_0
    /* q as Q8_0 blocks: d = amax / 127 rounded to f16, q = round(x / d) */
    for (uint b = tid; b < p.Dk / 32; b += WG) {
        float amax = 0.0;
        for (uint i = 0; i < 32; i++) amax = max(amax, abs(qs[32 * b + i]));
        const float dd = amax / 127.0, id = dd != 0.0 ? 1.0 / dd : 0.0, dh = round_f16(dd);
        for (uint i = 0; i < 32; i++) qs[32 * b + i] = clamp(roundEven(qs[32 * b + i] * id), -127.0, 127.0) * dh;
    }
    barrier();
#endif
    const uint jb = c * p.chunk_len, je = min(p.L, jb + p.chunk_len);
    const uint kb = p.off_k + g * p.nbk2, vb = p.off_v + g * p.nbv2;
    float m = NEG_INF, ssum = 0.0;
    float acc[DMAX / WG];
    [[unroll]] for (uint i = 0; i < DMAX / WG; i++) acc[i] = 0.0;
    for (uint j0 = jb; j0 < je; j0 += WG) {
        const uint j = j0 + tid;
        float s = NEG_INF;
        if (j < je) {
            float mv = 0.0;
            if (p.has_m != 0u) {
                const uint mo = p.off_m + t * p.nbm1;
                mv = p.tm == TY_F16 ? float(s3_f16[(mo >> 1) + j]) : s3_f32[(mo >> 2) + j];
            }
            if (!(isinf(mv) && mv < 0.0)) {
                float x = kval_row_dot(kb + j * p.nbk1);
                /* tanh's argument clamped: tanh(15) is 1 in float, and a large argument
                 * may overflow an exp-based tanh to inf / inf */
                x = p.softcap > 0.0 ? p.softcap * tanh(clamp(x * (p.scale / p.softcap), -15.0, 15.0)) : x * p.scale;
                s = x + slope * mv;
            }
        }
        const float mt = reduce(s, true);
        if (isinf(mt) && mt < 0.0) continue;
        const float mn = max(m, mt);
        const float corr = (isinf(m) && m < 0.0) ? 0.0 : exp(m - mn);
        const float pj = (isinf(s) && s < 0.0) ? 0.0 : exp(s - mn);
        S[tid] = p.v_rows == 0u && KVT == T_F16 ? round_f16(pj) : pj;
        ssum = ssum * corr + reduce(pj, false);
        const uint nt = min(uint(WG), je - j0);
        [[unroll]] for (uint i = 0; i < DMAX / WG; i++) {
            const uint d = tid + WG * i;
            if (d < p.Dv) {
                float a = acc[i] * corr;
                for (uint jj = 0; jj < nt; jj++) {
                    const float pp = S[jj];
                    if (pp != 0.0) a += pp * vval(vb + (j0 + jj) * p.nbv1, d);
                }
                acc[i] = a;
            }
        }
        m = mn;
        barrier();
    }
    if (p.n_chunks == 1u) {
        const uint od = (p.off_d >> 2) + (t * p.H + h) * p.Dv;
        float f = 1.0; /* the sink against the larger of m and itself, as the CPU */
        if (p.has_s != 0u) {
            const float sk = x_f32[(p.off_s >> 2) + h];
            if (sk > m) {
                f = (isinf(m) && m < 0.0) ? 0.0 : exp(m - sk);
                ssum = ssum * f + 1.0;
            } else {
                ssum += exp(sk - m);
            }
        }
        [[unroll]] for (uint i = 0; i < DMAX / WG; i++) {
            const uint d = tid + WG * i;
            if (d < p.Dv) d_f32[od + d] = ssum > 0.0 ? acc[i] * (f / ssum) : 0.0 / 0.0;
        }
    } else {
        const uint op = (p.off_d >> 2) + ((t * p.H + h) * p.n_chunks + c) * (p.Dv + 2);
        if (tid == 0u) {
            d_f32[op] = m;
            d_f32[op + 1] = ssum;
        }
        [[unroll]] for (uint i = 0; i < DMAX / WG; i++) {
            const uint d = tid + WG * i;
            if (d < p.Dv) d_f32[op + 2 + d] = acc[i];
        }
    }
}
