/* gen_iq.c - reference blocks of every IQ/TQ type (and NVFP4, Q1_0, Q2_0) for Loom's tests (iq-blocks.txt;
 * README.md says how it is built and run). Written for Loom against ggml's public
 * header (ggml.h); not part of Loom and not built by CMake.
 *
 * For each type: 16 rows of 256 values (an integer PRNG, roughly normal, a few
 * outliers), quantized by ggml_quantize_chunk (what llama-quantize calls) with an
 * importance matrix of weights 1 + (i % 7) where the type accepts one, then one line:
 *   TYPE ELEMENTS HEX(raw blocks) FNV-1a-64(float32 values of ggml's own dequantizer)
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ggml.h"
#include "ggml-cpu.h"

static uint64_t fnv_f32(const float *x, int64_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        for (int b = 0; b < 4; b++) h = (h ^ ((u >> (8 * b)) & 0xff)) * 0x100000001b3ull;
    }
    return h;
}

static uint64_t g_s = 0x9E3779B97F4A7C15ull;
static double unif(void) {
    g_s ^= g_s << 13, g_s ^= g_s >> 7, g_s ^= g_s << 17;
    return (double)(g_s >> 11) / 9007199254740992.0;
}

int main(void) {
    enum { NR = 16, NC = 256, N = NR * NC };
    static float x[N], y[N], imat[NC];
    static uint8_t q[N * 4];
    const enum ggml_type types[] = {GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS, GGML_TYPE_IQ2_S, GGML_TYPE_IQ3_XXS,
                                    GGML_TYPE_IQ3_S,   GGML_TYPE_IQ1_S,  GGML_TYPE_IQ1_M, GGML_TYPE_IQ4_NL,
                                    GGML_TYPE_IQ4_XS,  GGML_TYPE_TQ1_0,  GGML_TYPE_TQ2_0, GGML_TYPE_NVFP4, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0};
    ggml_cpu_init();
    for (int i = 0; i < NC; i++) imat[i] = 1.0f + (float)(i % 7);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const enum ggml_type ty = types[t];
        for (int i = 0; i < N; i++) { /* sum of 4 uniforms: roughly normal; 1 in 64 x4 */
            double z = (unif() + unif() + unif() + unif() - 2.0) * 1.7;
            if (i % 64 == 13) z *= 4.0;
            x[i] = (float)(z * (1.0 + (i / NC)));
        }
        ggml_quantize_init(ty);
        size_t bytes = ggml_quantize_chunk(ty, x, q, 0, NR, NC, ty == GGML_TYPE_TQ1_0 || ty == GGML_TYPE_TQ2_0 || ty == GGML_TYPE_NVFP4 || ty == GGML_TYPE_Q1_0 || ty == GGML_TYPE_Q2_0 ? NULL : imat);
        ggml_get_type_traits(ty)->to_float(q, y, N);
        printf("%s %d ", ggml_type_name(ty), N);
        for (size_t i = 0; i < bytes; i++) printf("%02x", q[i]);
        printf(" %016llx\n", (unsigned long long)fnv_f32(y, N));
    }
    ggml_quantize_free();
    return 0;
}
