/*
 * repack.h (internal) - the CPU "row-interleaved" weight layout for fast matmul.
 *
 * A 2-D Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q8_0, Q2_K, Q4_K, Q5_K, Q6_K or IQ4_XS weight
 * matrix [K, M] with M a multiple of 16 can be
 * stored with groups of LOOM_REPACK_ROWS (16) consecutive rows interleaved, so
 * that one 512-bit vector holds 4 bytes of each of 16 rows and an integer dot
 * product (vpdpbusd with one broadcast activation dword) yields 16 row partial
 * sums in its lanes: no horizontal reductions, and the 16 block scales of a group
 * are one vector. Total size is unchanged (16 * row bytes per group), so
 * accounting by type and shape stays exact.
 *
 * Layout: group g (rows 16g..16g+15) occupies bytes [g*16*R, (g+1)*16*R) where
 * R is the GGUF row size; inside it, block b occupies 16*B bytes at offset
 * b*16*B (B = the GGUF block size in bytes).
 * Q4_0, IQ4_NL and Q8_0 (B = 18, 18, 34; blocks of 32):
 *   - 16 x uint16: the half scale d of block b of rows 0..15;
 *   - then for each 4-byte chunk c of the block's quants (4 chunks for Q4_0's
 *     16 nibble bytes, 8 for Q8_0's 32 bytes), 16 x 4 bytes: chunk c of rows
 *     0..15. Q4_0 and IQ4_NL nibble bytes are stored as they are (low nibble =
 *     element l, high = element l+16; IQ4_NL nibbles index its 16-value table); Q8_0 quants are stored XOR 0x80 (q + 128 as an
 *     unsigned byte), the operand form of unsigned x signed dot instructions.
 * Q4_1, Q5_0 and Q5_1 (B = 20, 22, 24; blocks of 32), every field as it is:
 *   - 16 x uint16: d of block b of rows 0..15;
 *   - Q4_1, Q5_1: then 16 x uint16: the min m of rows 0..15;
 *   - Q5_0, Q5_1: then 16 x 4 bytes: qh of row r at 4r (bit l: the fifth bit of element l);
 *   - then for each 4-byte chunk c = 0..3 of the 16 nibble bytes, 16 x 4 bytes: chunk c of
 *     rows 0..15 (low nibble of byte l = element l, high = element l + 16).
 *   So the chunks start at byte 64 (Q4_1), 96 (Q5_0) or 128 (Q5_1) of the block group.
 * Q4_K (B = 144; super-blocks of 256, 8 sub-blocks of 32 with 6-bit scale sc[s]
 * and min m[s]), 2304 bytes per super-block b of the group:
 *   [0, 32)      16 x uint16 d of rows 0..15;  [32, 64) 16 x uint16 dmin;
 *   [64, 192)    byte 16*s + r = (sc[s] & 15) | (m[s] & 15) << 4, s = 0..7;
 *   [192, 256)   byte 16*t + r = sc[t] >> 4 | (sc[t+4] >> 4) << 2
 *                                | (m[t] >> 4) << 4 | (m[t+4] >> 4) << 6, t = 0..3;
 *   [256, 2304)  for u = 0..31, 16 x 4 bytes at 256 + 64u: bytes 4u..4u+3 of row
 *                r's 128 quant bytes at 4r (as they are: in 32-byte piece j =
 *                u / 8, low nibbles are sub-block 2j, high nibbles 2j+1).
 * Q5_K (B = 176; Q4_K plus the fifth bits qh[32]: bit s of qh[l] is the high bit
 * of element l of sub-block s), 2816 bytes per super-block b of the group:
 *   [0, 256)     as Q4_K (d, dmin, scales and mins);
 *   [256, 1280)  for u = 0..7, at 256 + 128u: Q4_K's nibble chunk u (16 x 4 bytes),
 *                then qh bytes 4u..4u+3 of row r at 4r (as they are): chunk u of
 *                the first 32-byte piece next to the fifth bits of its elements;
 *   [1280, 2816) nibble chunks u = 8..31 at 768 + 64u, as Q4_K's.
 *   A decode reads qh with the first piece and keeps it in L1 for the other three,
 *   so the super-block is one forward stream (loom_repack_kq_qs, loom_repack_q5k_qh).
 * Q6_K (B = 210; super-blocks of 256, 16 groups of 16 with int8 scales), 3360
 * bytes per super-block b of the group, every field as it is:
 *   [0, 32)      16 x uint16 d;
 *   [32, 288)    byte 16*s + r = scales[s] of row r, s = 0..15;
 *   [288, 3360)  for v = 0..15 (half h = v / 8, piece c = v % 8), 192 bytes at
 *                288 + 192v: three 16 x 4-byte chunks (row r at 4r): ql bytes of
 *                chunk u = 16h + c, of chunk u + 8, and qh bytes of chunk 8h + c
 *                (chunk u = bytes 4u..4u+3): the pieces one decode step rebuilds
 *                6-bit codes from, adjacent, so a row group is read as one forward
 *                stream (loom_repack_q6k_ql / _qh give the offsets).
 * IQ4_XS (B = 136; super-blocks of 256, 8 sub-blocks of 32 with 6-bit scales),
 * 2176 bytes per super-block b of the group, every field as it is:
 *   [0, 32)      16 x uint16 d;  [32, 64) 16 x uint16 scales_h;
 *   [64, 128)    16 x 4 bytes: scales_l[0..3] of row r at 4r;
 *   [128, 2176)  for u = 0..31, 16 x 4 bytes at 128 + 64u: qs bytes 4u..4u+3 of
 *                row r at 4r (sub-block s = u / 4; low nibbles are its elements
 *                0..15, high nibbles 16..31; codes index the IQ4_NL table).
 * Q2_K (B = 84; super-blocks of 256, 16 groups of 16 with a 4-bit scale (low nibble
 * of scales[s]) and a 4-bit min (high nibble)), 1344 bytes per super-block b of the
 * group, every field as it is:
 *   [0, 32)      16 x uint16 d;  [32, 64) 16 x uint16 dmin;
 *   [64, 320)    byte 16*s + r = scales[s] of row r, s = 0..15;
 *   [320, 1344)  for u = 0..15, 16 x 4 bytes at 320 + 64u: qs bytes 4u..4u+3 of
 *                row r at 4r (qs byte q holds, at bits 2j, the code of element
 *                128 * (q / 32) + 32j + q % 32).
 *
 * Tensors in this layout carry LOOM_TF_REPACKED (core/tensor.h); only MUL_MAT and
 * MUL_MAT_ID (as their weight operand) accept them. The backend repacks only when its
 * params ask for it (the GGUF layout is the default, contract §4).
 * Thread-safety: pure functions on caller memory.
 */
#ifndef LOOM_QUANT_REPACK_H
#define LOOM_QUANT_REPACK_H

#include "loom_base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LOOM_REPACK_ROWS 16

/* Q4_1 / Q5_0 / Q5_1 block group (see above): byte offsets of the qh dwords (Q5_0, Q5_1)
 * and of the first nibble chunk. */
static inline size_t loom_repack_lg_qh(loom_type t) { return t == LOOM_TYPE_Q5_0 ? 32u : 64u; }
static inline size_t loom_repack_lg_qs(loom_type t) {
    return t == LOOM_TYPE_Q4_1 ? 64u : t == LOOM_TYPE_Q5_0 ? 96u : 128u;
}

/* Q4_K (q5 false) or Q5_K super-block of a row group (see above): byte offset of nibble
 * chunk u (0..31); Q5_K: of qh chunk u (0..7). */
static inline size_t loom_repack_kq_qs(bool q5, size_t u) {
    return !q5 ? 256 + 64 * u : u < 8 ? 256 + 128 * u : 768 + 64 * u;
}
static inline size_t loom_repack_q5k_qh(size_t u) { return 320 + 128 * u; }

/* Q6_K super-block of a row group (see above): byte offset of ql chunk u (0..31) and of
 * qh chunk u (0..15). */
static inline size_t loom_repack_q6k_ql(size_t u) { return 288 + 192 * (8 * (u / 16) + u % 8) + 64 * (u / 8 % 2); }
static inline size_t loom_repack_q6k_qh(size_t u) { return 288 + 192 * u + 128; }

/* True for the types that have an interleaved layout (Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL,
 * Q8_0, Q2_K, Q4_K, Q6_K, IQ4_XS, Q5_K). */
bool loom_repack_type_ok(loom_type t);

/* The activation type a repacked matrix of type t multiplies (Q8_0 for Q4_0, Q5_0,
 * IQ4_NL and Q8_0, Q8_1 for Q4_1 and Q5_1, Q8_K for Q2_K, Q4_K, Q5_K, Q6_K and IQ4_XS); LOOM_TYPE_COUNT for a type without the layout. */
loom_type loom_repack_act_type(loom_type t);

/* True when a [k, m, n2, n3] tensor of type t can be repacked: type ok, k > 0 a
 * multiple of the type's block size, m > 0 a multiple of LOOM_REPACK_ROWS, n3 == 1
 * (n2 > 1: a stack of n2 matrices such as MUL_MAT_ID's experts, each repacked on its
 * own since its rows start a group; MUL_MAT takes only n2 == 1). */
bool loom_repack_shape_ok(loom_type t, const int64_t ne[4]);

/* Convert nrows GGUF-layout rows of k elements (src) into the interleaved layout
 * (dst). nrows must be a multiple of LOOM_REPACK_ROWS; src and dst must not
 * overlap. Returns LOOM_ERR_INVALID_ARG for an unsupported type or shape. */
loom_status loom_repack_rows(loom_type t, int64_t k, int64_t nrows, const void *src, void *dst);

/* The inverse of loom_repack_rows (same requirements). */
loom_status loom_unpack_rows(loom_type t, int64_t k, int64_t nrows, const void *src, void *dst);

#endif
