/*
 * amx_tile.h (internal) - what the AMX tile files (kernels_amx.c, kernels_int8_amx.c)
 * share: the tile configuration block LDTILECFG reads and a tile load that the compiler
 * cannot move above earlier stores. Include only from files compiled with -mamx-tile.
 */
#ifndef LOOM_CPU_AMX_TILE_H
#define LOOM_CPU_AMX_TILE_H

#include <immintrin.h>
#include <stdint.h>

/* LDTILECFG's 64-byte block: palette 1, then per tile its row width in bytes and rows */
typedef struct {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} amx_cfg;

/* GCC's _tile_loadd asm names no memory operand: a compiler barrier first, so scratch
 * and C stores made before a tile load are not moved after it. */
#define TLOAD(T, p, s)                     \
    do {                                   \
        __asm__ volatile("" ::: "memory"); \
        _tile_loadd(T, (p), (s));          \
    } while (0)

#endif
