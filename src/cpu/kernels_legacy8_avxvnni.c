/* The avxvnni level's Q5_0 / Q4_1 / Q5_1 prompt gemm (loom_gemm_lg8_avxvnni): the 8-row
 * tile of kernels_legacy8_avx2.c compiled with AVX-VNNI (CMake adds -mavxvnni for the
 * _avxvnni suffix): VEX vpdpbusd in place of vpmaddubsw + int16 adds + vpmaddwd, the same
 * exact int32 block sums, so the float results are identical to the avx2 level's. */
#define LOOM_LG8_VNNI 1
#include "cpu/kernels_legacy8_avx2.c"
