/*
 * repack.h (internal) - the CPU "row-interleaved" weight layout for fast matmul.
 *
 * A 2-D Q4_0 or Q8_0 weight matrix [K, M] with M a multiple of 16 can be stored
 * with groups of LOOM_REPACK_ROWS (16) consecutive rows interleaved, so that one
 * 512-bit vector holds 4 bytes of each of 16 rows and an integer dot product
 * (vpdpbusd with one broadcast activation dword) yields 16 row partial sums in
 * its lanes: no horizontal reductions, and the 16 block scales of a group are
 * one vector. Total size is unchanged (16 * row bytes per group), so accounting
 * by type and shape stays exact.
 *
 * Layout: group g (rows 16g..16g+15) occupies bytes [g*16*R, (g+1)*16*R) where
 * R is the GGUF row size; inside it, block b (0 <= b < K/32) occupies 16*B bytes
 * (B = 18 for Q4_0, 34 for Q8_0) at offset b*16*B:
 *   - 16 x uint16: the half scale d of block b of rows 0..15;
 *   - then for each 4-byte chunk c of the block's quants (4 chunks for Q4_0's
 *     16 nibble bytes, 8 for Q8_0's 32 bytes), 16 x 4 bytes: chunk c of rows
 *     0..15. Q4_0 nibble bytes are stored as they are (low nibble = element l,
 *     high = element l+16); Q8_0 quants are stored XOR 0x80 (q + 128 as an
 *     unsigned byte), the operand form of unsigned x signed dot instructions.
 *
 * Tensors in this layout carry LOOM_TF_REPACKED (core/tensor.h); only MUL_MAT
 * (as its weight operand) accepts them. The backend repacks only when its
 * params ask for it (the GGUF layout is the default, contract §4).
 * Thread-safety: pure functions on caller memory.
 */
#ifndef LOOM_QUANT_REPACK_H
#define LOOM_QUANT_REPACK_H

#include "loom_base.h"

#include <stdbool.h>
#include <stdint.h>

#define LOOM_REPACK_ROWS 16

/* True for the types that have an interleaved layout (Q4_0, Q8_0). */
bool loom_repack_type_ok(loom_type t);

/* True when a [k, m, n2, n3] tensor of type t can be repacked: type ok, k > 0 a
 * multiple of 32, m > 0 a multiple of LOOM_REPACK_ROWS, n2 == n3 == 1. */
bool loom_repack_shape_ok(loom_type t, const int64_t ne[4]);

/* Convert nrows GGUF-layout rows of k elements (src) into the interleaved layout
 * (dst). nrows must be a multiple of LOOM_REPACK_ROWS; src and dst must not
 * overlap. Returns LOOM_ERR_INVALID_ARG for an unsupported type or shape. */
loom_status loom_repack_rows(loom_type t, int64_t k, int64_t nrows, const void *src, void *dst);

/* The inverse of loom_repack_rows (same requirements). */
loom_status loom_unpack_rows(loom_type t, int64_t k, int64_t nrows, const void *src, void *dst);

#endif
