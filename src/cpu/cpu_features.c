/* CPU feature detection (CPUID + XGETBV on x86, getauxval on aarch64). */
#include "cpu/kernels_internal.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static uint64_t read_xcr0(void) {
    uint32_t lo, hi;
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0)); /* xgetbv */
    return ((uint64_t)hi << 32) | lo;
}

static void detect(loom_cpu_features *f) {
    unsigned a, b, c, d;
    f->x86 = true;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return;
    unsigned maxleaf = a;
    f->amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u; /* "Auth" "enti" "cAMD" */
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    bool osxsave = (c >> 27) & 1;
    f->avx = (c >> 28) & 1;
    f->fma = (c >> 12) & 1;
    f->f16c = (c >> 29) & 1;
    uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    f->os_avx = osxsave && (xcr0 & 0x6) == 0x6;
    f->os_avx512 = osxsave && (xcr0 & 0xE6) == 0xE6;
    if (maxleaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        unsigned max7 = a;
        f->avx2 = (b >> 5) & 1;
        f->avx512f = (b >> 16) & 1;
        f->avx512dq = (b >> 17) & 1;
        f->avx512bw = (b >> 30) & 1;
        f->avx512vl = (b >> 31) & 1;
        f->avx512vnni = (c >> 11) & 1;
        f->amx_bf16 = (d >> 22) & 1;
        f->amx_tile = (d >> 24) & 1;
        f->amx_int8 = (d >> 25) & 1;
        if (max7 >= 1) {
            __cpuid_count(7, 1, a, b, c, d);
            f->avx512bf16 = (a >> 5) & 1;
            f->avx_vnni = (a >> 4) & 1;
        }
    }
    unsigned brand[12];
    if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000004u) {
        for (unsigned i = 0; i < 3; i++)
            __get_cpuid(0x80000002u + i, &brand[4 * i], &brand[4 * i + 1], &brand[4 * i + 2], &brand[4 * i + 3]);
        memcpy(f->brand, brand, 48);
        f->brand[48] = '\0';
        size_t len = strlen(f->brand);
        while (len > 0 && f->brand[len - 1] == ' ') f->brand[--len] = '\0';
    }
}
#elif defined(__aarch64__)
#include <sys/auxv.h>
static void detect(loom_cpu_features *f) {
    f->arm64 = true;
    f->neon = true; /* mandatory on aarch64 */
#ifdef AT_HWCAP
    /* Linux arm64 HWCAP bits (asm/hwcap.h; numeric fallbacks for old headers) */
#ifndef HWCAP_FPHP
#define HWCAP_FPHP (1ul << 9)
#endif
#ifndef HWCAP_ASIMDHP
#define HWCAP_ASIMDHP (1ul << 10)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1ul << 20)
#endif
    unsigned long hw = getauxval(AT_HWCAP);
    f->dotprod = (hw & HWCAP_ASIMDDP) != 0;
    f->fp16 = (hw & HWCAP_FPHP) != 0 && (hw & HWCAP_ASIMDHP) != 0; /* scalar and vector FP16 */
#endif
}
#else
static void detect(loom_cpu_features *f) { (void)f; }
#endif

static loom_cpu_features g_feat;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static void init_once(void) { detect(&g_feat); }

const loom_cpu_features *loom_cpu_features_get(void) {
    pthread_once(&g_once, init_once);
    return &g_feat;
}
