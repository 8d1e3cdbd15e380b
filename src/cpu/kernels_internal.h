/*
 * kernels_internal.h (internal to src/cpu/kernels_*.c) - scalar reference kernels
 * and the per-ISA table initialisers used by the dispatcher.
 */
#ifndef LOOM_CPU_KERNELS_INTERNAL_H
#define LOOM_CPU_KERNELS_INTERNAL_H

#include "cpu/kernels.h"
#include "quant/blocks.h"

/* Force full unrolling of constant-trip tile loops in SIMD kernels (GCC otherwise may
 * keep small accumulator arrays in memory). */
#define LOOM_ALWAYS_INLINE inline __attribute__((always_inline))
#if defined(__clang__)
#define LOOM_UNROLL _Pragma("unroll")
#elif defined(__GNUC__)
#define LOOM_UNROLL _Pragma("GCC unroll 8")
#else
#define LOOM_UNROLL
#endif
/* The same for loops of up to 32 trips (transposes, 12 x 2 accumulator blocks). */
#if defined(__clang__)
#define LOOM_UNROLL_ALL _Pragma("unroll")
#elif defined(__GNUC__)
#define LOOM_UNROLL_ALL _Pragma("GCC unroll 32")
#else
#define LOOM_UNROLL_ALL
#endif

/* Scalar reference vec_dots (weight x activation-format). */
void loom_vd_f32_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_f16_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_bf16_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_q4_0_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_q4_1_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_q5_0_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_q5_1_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_q8_0_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_mxfp4_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_nvfp4_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_q1_0_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_q2_0_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_q2_K_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_q3_K_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_q4_K_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_q5_K_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_q6_K_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_iq4_nl_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_iq4_xs_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_iq3_xxs_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_iq3_s_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_iq1_s_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_iq1_m_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_tq1_0_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_tq2_0_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_iq2_xxs_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_iq2_xs_ref(int64_t n, float *s, const void *x, const void *y);
void loom_vd_iq2_s_ref(int64_t n, float *s, const void *x, const void *y);

/* Scalar reference gemm for the row-interleaved layout (kernels.h gemm_repacked). */
bool loom_gemm_repacked_ref(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                            size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);

/* AVX-512 gemm tile for F16 / BF16 weights (kernels_gemm_avx512.c; kernels.h gemm
 * contract); declines (returns false) for every other type. */
bool loom_gemm_float_avx512(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                            size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);

/* kernels.h gemm_bf16_pack's layout, scalar (kernels_scalar.c; the levels' packs are
 * bit-identical to it). */
bool loom_gemm_bf16_pack_ref(loom_type at, int64_t k, const void *a, size_t as, int64_t n, uint32_t *p, int64_t q0,
                             int64_t q1);
/* References for kernels.h gemm_float_pack / gemm_float_packed (kernels_scalar.c). */
bool loom_gemm_float_pack_ref(loom_type at, int64_t k, const void *a, size_t as, int64_t n, float *p, int64_t q0,
                              int64_t q1);
bool loom_gemm_float_packed_ref(loom_type wt, int64_t k, const void *w, size_t ws, const float *p, float *c,
                                size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
/* The packed-path levels (kernels_gemm_packed_avx512.c / _avx2.c / _neon.c, one body in
 * kernels_gemm_packed_body.h): fill (gemm_float_pack / _packed and their tile shape;
 * called by fill_avx512 / fill_avx2 / both NEON fills) and a gemm-contract entry for
 * F16 / BF16 tiles of LOOM_GEMM_PACKED_MIN_COLS columns or more: gemm_float_packed's
 * arithmetic (bit-identical to it on the same panels) with the activation rows packed
 * inside the call, per chunk; false (declined) for other types and narrower tiles. */
void loom_kernels_fill_gemm_packed_avx512(loom_kernels *k);
bool loom_gemm_float_local_avx512(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as,
                                  float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void loom_kernels_fill_gemm_packed_avx2(loom_kernels *k);
bool loom_gemm_float_local_avx2(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                                size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void loom_kernels_fill_gemm_packed_neon(loom_kernels *k);
bool loom_gemm_float_local_neon(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                                size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);

/* AVX2 gemm_repacked for Q4_K, Q5_K, Q6_K and IQ4_XS weights in the interleaved layout
 * (kernels_repack_kq_avx2.c; kernels.h gemm_repacked contract, bit for bit with
 * loom_gemm_repacked_ref); declines (returns false) for every other type. */
bool loom_gemm_repacked_kq_avx2(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                                size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
/* the same at the avxvnni level (kernels_repack_kq_avxvnni.c) */
bool loom_gemm_repacked_kq_avxvnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                                size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);

/* AVX2 gemm tile for MXFP4 weights (kernels_mxfp4_avx2.c; kernels.h gemm contract);
 * declines (returns false) for every other type. */
bool loom_gemm_mxfp4_avx2(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                          size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);

/* AVX2 gemm tile for the grid / ternary IQ and TQ types (IQ2_*, IQ3_*, IQ1_*, TQ*_0)
 * times Q8_K (kernels_iq_gemm_avx2.c; kernels.h gemm contract): each weight super-block
 * decoded once to int8 per call and column chunk; declines (returns false) for other
 * types and for fewer than 4 columns. */
bool loom_gemm_iq_avx2(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                       size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);

/* One weight super-block of those types prepared for the int8 dot (kernels_iq_gemm_avx2.c):
 * w the signed values (within [-62, 62]); scv per 32 values q: 8 x the scale of values
 * 32q..32q+15, 8 x that of 32q+16..32q+31 (the vpmaddwd operand); ncorr the int32 lane
 * start -128 * sum over q of vpmaddwd(vpmaddubsw(0x80, w_q), scv_q) that cancels the +128
 * offset of the activation bytes; dw the f16 block scale as float. */
typedef struct {
    _Alignas(64) int8_t w[256];
    _Alignas(64) int16_t scv[128];
    _Alignas(32) int32_t ncorr[8];
    float dw;
} loom_iqg_prep;
typedef void (*loom_iqg_prep_fn)(const void *blk, loom_iqg_prep *o);
/* Software prefetch distance (bytes ahead in the weight row) of the x86 vec_dots (the
 * AVX2 ones in kernels_avx2.c, kernels_x86_kquant_avx2.c, kernels_iq*_avx2.c,
 * kernels_iq1tq_avx2.c; kernels_iq4_avx512vnni.c, kernels_tq_avx512vnni.c). Measured
 * (kernel bench decode, one thread, 2026-12-04): TQ1_0 31 -> 54, TQ2_0 42 -> 79, Q2_K at
 * avx2 24 -> 64, unrepacked Q4_0 9 -> 28 GFLOP/s; flat from 1 to 4 KiB, 512 bytes too short:
 * without it the hardware prefetcher falls behind these rows. */
#define LOOM_VD_PF 2048
/* Second, farther prefetch distance of the repacked decode tiles (kernels_repack_avx512vnni.c):
 * a _MM_HINT_T1 (to L2) prefetch of each weight line this many bytes ahead, next to the
 * near T0 prefetch. One streaming thread keeps few misses in flight to L1; the L2 takes
 * more, so the farther requests raise the read rate per thread. Measured on the 2-vCPU
 * AMX VM, 2 threads: Q4_0 decode 21.1 -> 24.6 GB/s in the kernel bench, 1.1B Q4_0 tg64
 * 37.0 -> 42.0 t/s (16 KiB: 41.5, 64 KiB: 40.8; the T1 prefetch alone: 39.5). */
#define LOOM_PF_L2 32768
/* Software prefetch (x86) that stays where the code puts it: GCC 12 gathers
 * _mm_prefetch calls of an unrolled loop into one burst (the 72 of an eight-block Q4_0
 * decode step ahead of its compute), which stalls the stream; a volatile asm keeps each
 * next to its load. Measured in the kernel bench, Q4_0 decode at 2 threads: 24.0 ->
 * 28 GB/s. p may point past the data (a prefetch never faults). */
#define LOOM_PF0(p) __asm__ volatile("prefetcht0 %0" : : "m"(*(const char *)(p)))
#define LOOM_PF1(p) __asm__ volatile("prefetcht1 %0" : : "m"(*(const char *)(p)))
/* The same for the prefetches of single sequential weight streams (the F16 / BF16 decode
 * rows, the repacked Q4_0 / IQ4_NL, Q4_1 / Q5_0 / Q5_1, Q8_0, Q4_K / Q5_K, Q6_K and IQ4_XS
 * decode tiles, and the AVX2 level's repacked decode tiles), issued only while
 * loom_cpu_prefetch is true. They were tuned on Intel Xeons, where they raise a streaming
 * thread's read rate (figures above); on an AMD Zen 4 (twenty-third session) the hardware
 * prefetchers follow these streams alone and the software ones cost. 1.1B tg32 on one
 * thread, three interleaved rounds, prefetches on / off: Q4_0 37-38 / 50-54 t/s, Q4_K_M
 * 29-32 / 37-38, BF16 11.6-11.9 / 13.5-14.4, F16 12.3-12.9 / 12.6-13.9; kernel bench
 * decode, one thread, GB/s: Q4_0 20.4-21.5 / 23.7-26.8, Q4_K 20.7-22.6 / 24.2-26.5, F16
 * 23.6-27.4 / 28.2-29.7; two threads Q4_0 26.4-27.9 / 30.4-38.7, Q4_K 30.1-31.4 /
 * 28.7-33.5. The Q8_0 tile's kernel bench said the opposite (two threads: 26.1-28.8 GB/s
 * with them, 24.2-24.7 without) but the model runs faster without (1.1B tg64, one thread,
 * 19.7-20.0 / 25.8-29.0 t/s; twenty-fourth session): the in-model figure decides. The
 * repacked Q2_K tile keeps LOOM_PF0 / LOOM_PF1 (1.1B tg64 one thread with them off: 69-72
 * -> 40-45 t/s: it loads eight vectors, then computes on them at length). Q6_K's tile
 * needed its L2 prefetches while its layout had three interleaved sub-streams per row group
 * (21-23 -> 12 t/s without); since they are one stream (twenty-fourth session), none: 24-26
 * -> 31.5-32.6 t/s on tg64. Set once by the kernel tables' one-time initialisation
 * (kernels_dispatch.c: off on AMD CPUs, on elsewhere; LOOM_CPU_PREFETCH=0 / 1 forces it)
 * before any kernel can run, read-only after. A prefetch never changes a result. */
extern bool loom_cpu_prefetch;
#define LOOM_PFS0(p)                     \
    do {                                 \
        if (loom_cpu_prefetch) LOOM_PF0(p); \
    } while (0)
#define LOOM_PFS1(p)                     \
    do {                                 \
        if (loom_cpu_prefetch) LOOM_PF1(p); \
    } while (0)

/* prep for type t, its GGUF block bytes and the power-of-two factor of its scalar
 * reference; false for other types. The grid IQ and TQ types, and Q3_K, which has their
 * shape (small signed values, an integer scale per 16, one f16 d). Needs AVX2 + F16C. */
bool loom_iqg_type(loom_type t, loom_iqg_prep_fn *prep, size_t *bb, float *post);
/* Asks the planner for rows x cols prompt tiles (kernels.h gemm_tile_rows / _cols) for
 * the grid IQ types of loom_iqg_type, and TQ1_0 / TQ2_0 when tq (levels whose tiles
 * decode those super-blocks once per call). */
void loom_iqg_wide_tiles(loom_kernels *k, bool tq, int rows, int cols);

/* 16 weight rows of one super-block prepared for the 16-row tiles of the grid / ternary
 * IQ types (kernels_iq16_avx512vnni.c; kernels_int8_amx.c also keeps its Q6_K and IQ4_XS
 * super-blocks in it): q the values (signed, or + 128 as unsigned bytes) in the order of
 * an AMX B tile (bytes 64 d + 4 r .. + 3 = values 4 d .. 4 d + 3 of row r), sc[s][r] the
 * integer scale of group s (256 / NS values) of row r, dx[r] the block scale. */
typedef struct {
    _Alignas(64) int8_t q[4096];
    int32_t sc[16][16];
    float dx[16];
} loom_sb16;
/* Groups per super-block for these types: 16 where the scales are per 16 values (IQ2_XS,
 * IQ2_S, IQ1_M), 8 otherwise (kernels_iq_gemm_avx2.c: plain C in the AVX2 object). */
int loom_iq16_groups(loom_type t);
/* Whether every group dot of such a type fits int16 (groups of 16 with |w| <= 15: IQ1_M,
 * Q3_K): the 16- and 8-row tiles then scale two groups' dots with one vpdpwssd on their
 * word pairs instead of two vpmulld (kernels_iq_gemm_avx2.c). */
bool loom_iq16_narrow(loom_type t);
/* Rows [i, i + nr) (nr <= 16; the others zero) of super-blocks [s0, s1) of the row-major
 * weights w (row bytes ws; prep and bb from loom_iqg_type) into o[0 .. s1 - s0); u8: the
 * values + 128 (unsigned), else signed. Needs AVX-512. */
void loom_iq16_prep(loom_iqg_prep_fn prep, size_t bb, int NS, bool u8, const uint8_t *w, size_t ws, int64_t i,
                    int nr, int64_t s0, int64_t s1, loom_sb16 *o);
/* The avx512vnni level's gemm for the grid IQ types (kernels_iq16_avx512vnni.c; kernels.h
 * gemm contract): per 16-row group and k chunk the prepared super-blocks above (u8),
 * dpbusd with 4 columns' activation bytes, the scalar reference's integer super-block
 * sums; declines TQ1_0 / TQ2_0 (their unit-scale tile is faster), other types, fewer than
 * 4 columns and k not a multiple of 256. */
bool loom_gemm_iq16_avx512vnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                               size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);

/* Q5_0 / Q4_1 / Q5_1 (kernels_legacy_avx512vnni.c): rows [i, i + nr) (nr <= 16; the
 * others zero) of blocks [s0, s1) of the row-major weights w (row bytes ws) into bq (512
 * bytes per block in AMX B-tile order: bytes 64 d + 4 r .. + 3 = values 4 d .. 4 d + 3
 * of row r), dw / mw (16 floats per block: the scales d and, for Q4_1 / Q5_1, the mins m).
 * Values: the codes 0..15 / 0..31, Q5_0's minus 16 when sgn. Needs AVX-512. */
void loom_lg16_prep(loom_type wt, bool sgn, const uint8_t *w, size_t ws, int64_t i, int nr, int64_t s0, int64_t s1,
                    int8_t *bq, float *dw, float *mw);
/* The same from the repacked layout (quant/repack.h) of row group g: no transpose, the
 * same bq / dw / mw (mw untouched for Q5_0). Needs AVX-512 BW. */
void loom_lg16_prep_rp(loom_type wt, bool sgn, const uint8_t *w, size_t ws, int64_t g, int64_t s0, int64_t s1,
                       int8_t *bq, float *dw, float *mw);
/* kernels.h gemm_repacked for Q4_1 / Q5_0 / Q5_1 at the avx512vnni level: one column
 * streams each row group (decode), more columns take the prepared blocks above and the
 * 16-row tile; declines other types, k not a multiple of 32 and rows not in whole groups.
 * Bit-identical to loom_gemm_repacked_ref. */
bool loom_gemm_repacked_lg_avx512vnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as,
                                      float *c, size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
/* The avx512vnni level's gemm for Q5_0 / Q4_1 / Q5_1 (kernels.h gemm contract): the
 * prepared blocks above per 16-row group and k chunk, vpdpbusd with 4 columns' activation
 * bytes; declines other types, fewer than LG_MIN_COLS columns and k not a multiple of 32. */
#define LG_MIN_COLS 16
bool loom_gemm_lg16_avx512vnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                               size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
/* The same on 8-row groups and 256-bit vectors (kernels_legacy8_avx2.c): vpmaddubsw at the
 * avx2 / avx512 levels, VEX vpdpbusd at avxvnni (kernels_legacy8_avxvnni.c); the same
 * declines. Needs AVX2 + F16C (+ AVX-VNNI). */
/* Per column [j0, j0 + n) and activation block [s0, s1) of Q8_0 (q50) or Q8_1 rows a:
 * da = d, sa = s (Q8_1's stored d x sum) and, for Q5_0, nc = -16 x the block's sum, at
 * [column * stride + b - s0] (kernels_legacy8_avx2.c; the 8- and 16-row tiles and the
 * amx one, which passes nc = NULL: its Q5_0 values are signed). AVX2. */
void loom_lg_act_prep(bool q50, const uint8_t *a, size_t as, int64_t j0, int64_t n, int64_t s0, int64_t s1,
                      int64_t stride, float *da, float *sa, int32_t *nc);
bool loom_gemm_lg8_avx2(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                        size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
bool loom_gemm_lg8_avxvnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                           size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);

/* The same gemm on 512-bit vectors with AVX-512 VNNI (kernels_iq_gemm_avx512vnni.c) and
 * without (kernels_iq_gemm_avx512.c): float results identical to loom_gemm_iq_avx2's;
 * declines in the same cases. */
/* NVFP4 x Q8_0 tiles with 512-bit vpdpbusd (kernels_nvfp4_avx512vnni.c); false for other types */
bool loom_gemm_nvfp4_avx512vnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                                size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
bool loom_gemm_iq_avx512vnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                             size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
/* The AVX2 tile with AVX-VNNI (kernels_iq_gemm_avxvnni.c), and the avxvnni level's table
 * step that puts it in front of the table's gemm. */
bool loom_gemm_iq_avxvnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                          size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
void loom_kernels_fill_iq_avxvnni(loom_kernels *k);
/* The avx512vnni table's TQ2_0 vec_dot (kernels_tq_avx512vnni.c; bit-identical to the
 * scalar reference). */
void loom_kernels_fill_tq_avx512vnni(loom_kernels *k);
/* The avxvnni level's gemm for the grid IQ types (kernels_iq8_avxvnni.c; kernels.h gemm
 * contract): the 16-row tile above on 8-row groups with 256-bit VEX vpdpbusd (its own
 * 8-row prepared super-blocks, per call, row group and k chunk); the avxvnni table tries
 * it before loom_gemm_iq_avxvnni. Declines TQ1_0 / TQ2_0, other types, fewer than 4
 * columns and k not a multiple of 256. */
bool loom_gemm_iq8_avxvnni(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                           size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);
bool loom_gemm_iq_avx512(loom_type wt, int64_t k, const void *w, size_t ws, const void *a, size_t as, float *c,
                         size_t ldc, int64_t i0, int64_t i1, int64_t j0, int64_t j1);

/* References for loom_kernels.fa_qk / fa_softmax / fa_pv (kernels_fa_scalar.c; the
 * contracts are in kernels.h). */
void loom_fa_qk_ref(int64_t Dk, int64_t R, int64_t Rp, int64_t nk, const float *qT, const float *kf, size_t ks,
                    float *sT);
void loom_fa_softmax_ref(int64_t nk, int64_t Rp, int64_t G, float scale, const float *mT, size_t ms, float *sT,
                         float *M, float *S, float *f);
void loom_fa_pv_ref(int64_t nk, int64_t R, int64_t Rp, int64_t Dv, const float *sT, const float *f, const float *vf,
                    size_t vs, float *acc, size_t as);
bool loom_fa_rows_ref(loom_type t, int64_t n, int64_t D, const void *src, size_t ss, float *dst, size_t ds);
/* Fill k with the scalar reference table (name "scalar"). */
void loom_kernels_fill_scalar(loom_kernels *k);
void loom_kernels_fill_iq_scalar(loom_kernels *k); /* called by fill_scalar (kernels_iq_scalar.c) */
/* Override entries of a scalar-filled table with an ISA's kernels. Each exists only
 * when its translation unit is compiled in (see kernels_dispatch.c). */
void loom_kernels_fill_avx2(loom_kernels *k);
void loom_kernels_fill_x86_kquant_avx2(loom_kernels *k); /* called by fill_avx2 */
void loom_kernels_fill_avx512(loom_kernels *k);
void loom_kernels_fill_avx512vnni(loom_kernels *k);
/* the avx512bf16 level: gemm_bf16_pack / gemm_bf16_packed on VDPBF16PS
 * (kernels_gemm_bf16dp_avx512vnni.c) */
void loom_kernels_fill_bf16dp_avx512vnni(loom_kernels *k);
/* On a copy of the avx512vnni table: F16 / BF16 prompt-shape gemm tiles with AMX-BF16
 * (kernels_amx.c). Only when the OS granted XTILEDATA (kernels_dispatch.c). */
void loom_kernels_fill_amx(loom_kernels *k);
/* AMX-INT8 tiles for repacked Q8_0 / Q4_0 / IQ4_NL prompts (kernels_int8_amx.c); after
 * loom_kernels_fill_amx, on CPUs with AMX-INT8 */
void loom_kernels_fill_amx_int8(loom_kernels *k);
void loom_kernels_fill_repack_avx512vnni(loom_kernels *k); /* called by fill_avx512vnni */
void loom_kernels_fill_repack_avx2(loom_kernels *k);       /* called by fill_avx2 */
void loom_kernels_fill_repack_avxvnni(loom_kernels *k);    /* the avxvnni level: avx2 table + this */
void loom_kernels_fill_iq4_avx2(loom_kernels *k);          /* called by fill_avx2 */
void loom_kernels_fill_iq3_avx2(loom_kernels *k);          /* called by fill_avx2 */
void loom_kernels_fill_iq1tq_avx2(loom_kernels *k);        /* called by fill_avx2 */
void loom_kernels_fill_iq2_avx2(loom_kernels *k);          /* called by fill_avx2 */
void loom_kernels_fill_iq4_avx512vnni(loom_kernels *k);    /* called by fill_avx512vnni */
void loom_kernels_fill_fa_avx2(loom_kernels *k);   /* called by fill_avx2 (kernels_fa_avx2.c) */
void loom_kernels_fill_fa_avx512(loom_kernels *k); /* called by fill_avx512 (kernels_fa_avx512.c) */
void loom_kernels_fill_neon(loom_kernels *k);
void loom_kernels_fill_neon_dotprod(loom_kernels *k); /* needs dotprod + fp16 */
void loom_kernels_fill_fa_neon(loom_kernels *k);      /* called by both NEON fills (kernels_fa_neon.c) */

/* CPU features (cpu_features.c); detected once, thread-safe. */
typedef struct loom_cpu_features {
    bool x86, avx, avx2, fma, f16c, os_avx, os_avx512;
    bool avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16, avx_vnni;
    bool amx_tile, amx_int8, amx_bf16;
    bool amd; /* CPUID vendor "AuthenticAMD" */
    bool arm64, neon, dotprod, fp16;
    char brand[64];
} loom_cpu_features;
const loom_cpu_features *loom_cpu_features_get(void);

#endif
