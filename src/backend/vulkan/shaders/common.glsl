/* common.glsl - shared by every Loom compute shader.
 *
 * Bindings (one descriptor-set layout for all kernels, see vk_pipe.c): 0..3 sources,
 * 4 destination, 5 auxiliary (error flags / scratch). Each binding is declared with
 * several element types (aliases of the same buffer). Every offset and stride a kernel
 * receives in push constants is in BYTES from the start of its binding's window;
 * kernels divide by the element size they read with.
 */
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_control_flow_attributes : enable

layout(binding = 0) readonly buffer S0f { float s0_f32[]; };
layout(binding = 0) readonly buffer S0h { float16_t s0_f16[]; };
layout(binding = 0) readonly buffer S0u16 { uint16_t s0_u16[]; };
layout(binding = 0) readonly buffer S0u8 { uint8_t s0_u8[]; };
layout(binding = 0) readonly buffer S0i { int s0_i32[]; };
layout(binding = 1) readonly buffer S1f { float s1_f32[]; };
layout(binding = 1) readonly buffer S1h { float16_t s1_f16[]; };
layout(binding = 1) readonly buffer S1u16 { uint16_t s1_u16[]; };
layout(binding = 1) readonly buffer S1u8 { uint8_t s1_u8[]; };
layout(binding = 1) readonly buffer S1i { int s1_i32[]; };
layout(binding = 2) readonly buffer S2f { float s2_f32[]; };
layout(binding = 2) readonly buffer S2h { float16_t s2_f16[]; };
layout(binding = 2) readonly buffer S2u16 { uint16_t s2_u16[]; };
layout(binding = 2) readonly buffer S2u8 { uint8_t s2_u8[]; };
layout(binding = 2) readonly buffer S2i { int s2_i32[]; };
layout(binding = 3) readonly buffer S3f { float s3_f32[]; };
layout(binding = 3) readonly buffer S3h { float16_t s3_f16[]; };
layout(binding = 4) buffer Df { float d_f32[]; };
layout(binding = 4) buffer Dh { float16_t d_f16[]; };
layout(binding = 4) buffer Du16 { uint16_t d_u16[]; };
layout(binding = 4) buffer Du8 { uint8_t d_u8[]; };
layout(binding = 4) buffer Di { int d_i32[]; };
layout(binding = 5) buffer Xf { float x_f32[]; };
layout(binding = 5) buffer Xi { int x_i32[]; };
layout(binding = 5) buffer Xu { uint x_u32[]; };

/* Element type codes (push constants): match loom_type numbering for the plain types. */
#define TY_F32 0
#define TY_F16 1
#define TY_BF16 30
#define TY_I32 26

float bf16_to_f32(uint h) { return uintBitsToFloat(h << 16); }
uint f32_to_bf16(float f) {
    uint u = floatBitsToUint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (u >> 16) | 64u; /* quiet NaN */
    return (u + (0x7fffu + ((u >> 16) & 1u))) >> 16;              /* round to nearest even */
}
/* Round a float to the nearest half and back (matches loom_fp32_to_fp16 rounding). */
float round_f16(float x) { return unpackHalf2x16(packHalf2x16(vec2(x, 0.0))).x; }

/* Load one element of a plain-typed source binding at byte offset off. */
#define LOAD_PLAIN(SRC, off, ty)                                                            \
    ((ty) == TY_F32 ? SRC##_f32[(off) >> 2]                                                 \
     : (ty) == TY_F16 ? float(SRC##_f16[(off) >> 1])                                        \
     : (ty) == TY_BF16 ? bf16_to_f32(uint(SRC##_u16[(off) >> 1]))                           \
                       : float(SRC##_i32[(off) >> 2]))

void store_plain(uint off, uint ty, float v) {
    if (ty == TY_F32) d_f32[off >> 2] = v;
    else if (ty == TY_F16) d_f16[off >> 1] = float16_t(v);
    else if (ty == TY_BF16) d_u16[off >> 1] = uint16_t(f32_to_bf16(v));
    else {
        int x = isnan(v) ? 0 : (v >= 2147483647.0 ? 2147483647 : (v <= -2147483648.0 ? -2147483647 - 1 : int(v)));
        d_i32[off >> 2] = x;
    }
}

/* Raise error flag k (0 = index out of range). */
void raise_flag(uint k) { atomicOr(x_u32[k], 1u); }
