/* q8_common.glsl - the int8-dot path's activation blocks (quantize_q8.comp) at
 * binding 1, and 4 x 8-bit packed dot products.
 *
 * With -DDOT4=1 the dot product is SPIR-V's OpSDot (SPV_KHR_integer_dot_product,
 * packed 4x8-bit format), emitted through GL_EXT_spirv_intrinsics because glslc
 * (shaderc 2023.2) has no GLSL extension for it; the device must enable
 * shaderIntegerDotProduct. Without, the four products are unpacked and summed. */
#if DOT4
#extension GL_EXT_spirv_intrinsics : require
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018], id = 4450)
int sdot4x8(uint x, uint y, spirv_literal int fmt);
int dot4(uint a, uint b) { return sdot4x8(a, b, 0); }
#else
int dot4(uint a, uint b) {
    const int x = int(a), y = int(b);
    return bitfieldExtract(x, 0, 8) * bitfieldExtract(y, 0, 8) + bitfieldExtract(x, 8, 8) * bitfieldExtract(y, 8, 8) +
           bitfieldExtract(x, 16, 8) * bitfieldExtract(y, 16, 8) + bitfieldExtract(x, 24, 8) * bitfieldExtract(y, 24, 8);
}
#endif

/* four signed values (each in -128..127) as one packed word */
uint pack4(int a, int b, int c, int d) {
    return (uint(a) & 255u) | ((uint(b) & 255u) << 8) | ((uint(c) & 255u) << 16) | ((uint(d) & 255u) << 24);
}

/* Group g (16 elements) of the q8 row at byte offset ro: the 16 quantized values as 4
 * packed words, the block scale da and the group's offset factor so. */
void q8_group(uint ro, uint g, out uint qa[4], out float da, out float so) {
    const uint w0 = (ro >> 2) + (g >> 1) * 11;
    da = s1_f32[w0];
    so = s1_f32[w0 + 1 + (g & 1u)];
    [[unroll]] for (uint w = 0; w < 4; w++) qa[w] = uint(s1_i32[w0 + 3 + 4 * (g & 1u) + w]);
}
