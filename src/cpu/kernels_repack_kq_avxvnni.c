/* The avxvnni level's repacked Q4_K / Q5_K / Q6_K / IQ4_XS matmul:
 * kernels_repack_kq_avx2.c compiled with AVX-VNNI (see kernels_repack_avxvnni.c). */
#define LOOM_RP_VNNI 1
#include "cpu/kernels_repack_kq_avx2.c"
