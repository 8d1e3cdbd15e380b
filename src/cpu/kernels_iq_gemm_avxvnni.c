/* The avxvnni level's IQ / TQ prompt gemm (loom_gemm_iq_avxvnni): the tile of
 * kernels_iq_gemm_avx2.c compiled with AVX-VNNI (LOOM_IQG_AVXVNNI; CMake adds -mavxvnni
 * for the _avxvnni suffix): VEX vpdpwssd in place of vpmaddwd + vpaddd, and for TQ1_0 /
 * TQ2_0 vpdpbusd in place of vpmaddubsw + int16 adds. The same exact int32 lane sums, so
 * the float results are identical to the avx2 level's. The super-block preparation is
 * the AVX2 object's (loom_iqg_type). loom_kernels_fill_iq_avxvnni puts it in front of the
 * avxvnni table's gemm (kernels_dispatch.c), after the 8-row tile of kernels_iq8_avxvnni.c
 * (the grid IQ types; this one keeps TQ1_0 / TQ2_0 and what that one declines). */
#define LOOM_IQG_AVXVNNI 1
#include "cpu/kernels_iq_gemm_avx2.c"
