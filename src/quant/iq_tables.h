/* iq_tables.h (internal) - codebooks of the IQ block formats (iq_tables.c). */
#ifndef LOOM_QUANT_IQ_TABLES_H
#define LOOM_QUANT_IQ_TABLES_H

#include "loom_base.h"

#include <stdbool.h>
#include <stdint.h>

/* Dequantize nb blocks of an IQ/TQ type t (dequant_iq.c); false: not such a type. */
bool loom_dequant_iq(loom_type t, const uint8_t *src, float *y, int64_t nb);
/* Quantize nb blocks of IQ4_NL / IQ4_XS (quantize_iq4.c); false: not such a type. */
bool loom_quantize_iq4(loom_type t, const float *x, uint8_t *dst, int64_t nb);

extern const uint64_t loom_iq2xxs_grid[256];
extern const uint64_t loom_iq2xs_grid[512];
extern const uint64_t loom_iq2s_grid[1024];
extern const uint32_t loom_iq3xxs_grid[256];
extern const uint32_t loom_iq3s_grid[512];
extern const uint64_t loom_iq1s_grid[2048];

/* IQ4_NL / IQ4_XS code values, indexed by the 4-bit code. */
static const int8_t loom_iq4nl_kv[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

#endif
