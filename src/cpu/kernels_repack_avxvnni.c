/* The avxvnni level's repacked Q4_0 / Q8_0 / IQ4_NL matmul: kernels_repack_avx2.c
 * compiled with AVX-VNNI (VEX vpdpbusd on 256-bit vectors: Intel Alder Lake and later
 * client cores, which have no AVX-512; CMake adds -mavxvnni for the _avxvnni suffix).
 * Selected only when CPUID reports AVX-VNNI (kernels_dispatch.c). */
#define LOOM_RP_VNNI 1
#include "cpu/kernels_repack_avx2.c"
