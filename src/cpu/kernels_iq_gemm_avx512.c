/* The avx512 level's IQ / TQ prompt gemm (loom_gemm_iq_avx512): kernels_iq_gemm_avx512vnni.c
 * compiled without VNNI (LOOM_IQG_NO_VNNI: vpmaddwd + vpaddd in place of vpdpwssd; for
 * TQ1_0 / TQ2_0 vpmaddubsw pair sums added in int16 and widened once, in place of
 * vpdpbusd). The same exact int32 lane sums, so the float results are identical. */
#define LOOM_IQG_NO_VNNI 1
#include "cpu/kernels_iq_gemm_avx512vnni.c"
