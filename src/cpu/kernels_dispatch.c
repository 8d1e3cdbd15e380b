/* Kernel table selection: one table per compiled-in ISA level, built once. The
 * process-wide choice is the best level the CPU and OS support, or LOOM_CPU_ISA.
 * x86 levels, in order: scalar, avx2, avxvnni (avx2 + VEX VNNI), avx512, avx512vnni,
 * avx512bf16, amx.
 * avx512bf16: the avx512vnni table with BF16 prompt products on VDPBF16PS
 * (kernels_gemm_bf16dp_avx512vnni.c); it runs wherever avx512vnni does (that level
 * needs AVX512_BF16 too) but is the default on AMD CPUs only: VDPBF16PS retires at about
 * the FMA rate there (two products per lane: 1.8x the float path's GFLOP/s on Zen 5) and
 * measured 4x slower than the FMA per instruction on an Intel Xeon. Elsewhere it is
 * taken only when LOOM_CPU_ISA names it.
 * AMX: the "amx" level (the avx512vnni table with F16 / BF16 prompt-shape gemm tiles on
 * AMX-BF16, kernels_amx.c) needs CPUID amx_tile + amx_bf16, the avx512vnni level, and
 * the OS's permission for the tile data state: on Linux the process asks for it once
 * (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) inside the table initialisation;
 * when refused (old kernel, a VM without it) the level is simply unavailable. */
#include "cpu/kernels_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

enum {
    LV_SCALAR,
    LV_AVX2,
    LV_AVXVNNI,
    LV_AVX512,
    LV_AVX512VNNI,
    LV_AVX512BF16,
    LV_AMX,
    LV_NEON,
    LV_NEON_DOTPROD,
    LV_COUNT
};
static const char *const k_level_names[LV_COUNT] = {"scalar",     "avx2", "avxvnni", "avx512",      "avx512vnni",
                                                    "avx512bf16", "amx",  "neon",    "neon_dotprod"};

#if defined(__x86_64__)
static const char *const k_levels[] = {"scalar", "avx2", "avxvnni", "avx512", "avx512vnni", "avx512bf16", "amx", NULL};
#elif defined(__aarch64__)
static const char *const k_levels[] = {"scalar", "neon", "neon_dotprod", NULL};
#else
static const char *const k_levels[] = {"scalar", NULL};
#endif

static loom_kernels g_tables[LV_COUNT];
static bool g_avail[LV_COUNT];
static int g_chosen = LV_SCALAR;
static int g_requested = -1;
bool loom_cpu_prefetch = true; /* kernels_internal.h; set once by init_tables */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
static int g_amx_perm; /* 0: not asked (no AMX-BF16 or no avx512vnni), 1: granted, -1: refused */

/* Linux: ask for the AMX tile data state (process-wide, once). Other systems: no. */
static bool amx_permission(void) {
#if defined(__linux__) && defined(SYS_arch_prctl)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return false;
#endif
}
#endif

static int level_index(const char *name) {
    for (int i = 0; i < LV_COUNT; i++)
        if (strcmp(name, k_level_names[i]) == 0) return i;
    return -1;
}

static void init_tables(void) {
    const loom_cpu_features *f = loom_cpu_features_get();
    loom_kernels_fill_scalar(&g_tables[LV_SCALAR]);
    g_avail[LV_SCALAR] = true;
    (void)f;
#if defined(__x86_64__)
    bool avx2 = f->avx && f->os_avx && f->avx2 && f->fma && f->f16c;
    bool avx512 = avx2 && f->os_avx512 && f->avx512f && f->avx512bw && f->avx512vl && f->avx512dq;
    bool vnni = avx512 && f->avx512vnni && f->avx512bf16;
    if (avx2) {
        loom_kernels_fill_scalar(&g_tables[LV_AVX2]);
        loom_kernels_fill_avx2(&g_tables[LV_AVX2]);
        g_tables[LV_AVX2].name = "avx2";
        g_avail[LV_AVX2] = true;
    }
    /* avxvnni: the avx2 table with the repacked matmuls on VEX vpdpbusd (CPUID.7.1:EAX[4];
     * Alder Lake and later client cores, which have no AVX-512). AVX-512 CPUs keep their
     * own levels, which are built from the avx2 table, not from this one. */
    if (avx2 && f->avx_vnni) {
        g_tables[LV_AVXVNNI] = g_tables[LV_AVX2];
        loom_kernels_fill_repack_avxvnni(&g_tables[LV_AVXVNNI]);
        loom_kernels_fill_iq_avxvnni(&g_tables[LV_AVXVNNI]); /* IQ / TQ prompt gemm */
        g_tables[LV_AVXVNNI].name = "avxvnni";
        g_avail[LV_AVXVNNI] = true;
    }
    if (avx512) {
        g_tables[LV_AVX512] = g_tables[LV_AVX2];
        loom_kernels_fill_avx512(&g_tables[LV_AVX512]);
        g_tables[LV_AVX512].name = "avx512";
        g_avail[LV_AVX512] = true;
    }
    if (vnni) {
        g_tables[LV_AVX512VNNI] = g_tables[LV_AVX512];
        loom_kernels_fill_avx512vnni(&g_tables[LV_AVX512VNNI]);
        g_tables[LV_AVX512VNNI].name = "avx512vnni";
        g_avail[LV_AVX512VNNI] = true;
        g_tables[LV_AVX512BF16] = g_tables[LV_AVX512VNNI];
        loom_kernels_fill_bf16dp_avx512vnni(&g_tables[LV_AVX512BF16]);
        g_tables[LV_AVX512BF16].name = "avx512bf16";
        g_avail[LV_AVX512BF16] = true;
    }
    if (vnni && f->amx_tile && f->amx_bf16) {
        g_amx_perm = amx_permission() ? 1 : -1;
        if (g_amx_perm > 0) {
            g_tables[LV_AMX] = g_tables[LV_AVX512VNNI];
            loom_kernels_fill_amx(&g_tables[LV_AMX]);
            if (f->amx_int8) loom_kernels_fill_amx_int8(&g_tables[LV_AMX]);
            g_tables[LV_AMX].name = "amx";
            g_avail[LV_AMX] = true;
        }
    }
#elif defined(__aarch64__)
    if (f->neon) {
        loom_kernels_fill_scalar(&g_tables[LV_NEON]);
        loom_kernels_fill_neon(&g_tables[LV_NEON]);
        g_tables[LV_NEON].name = "neon";
        g_avail[LV_NEON] = true;
        /* kernels_neon_dotprod.c is compiled with +dotprod+fp16: needs both at run time */
        if (f->dotprod && f->fp16) {
            loom_kernels_fill_scalar(&g_tables[LV_NEON_DOTPROD]);
            loom_kernels_fill_neon_dotprod(&g_tables[LV_NEON_DOTPROD]);
            g_tables[LV_NEON_DOTPROD].name = "neon_dotprod";
            g_avail[LV_NEON_DOTPROD] = true;
        }
    }
#endif
    /* software prefetches in the kernels (kernels_internal.h LOOM_PF0): off on AMD CPUs,
     * whose hardware prefetchers measured faster alone; LOOM_CPU_PREFETCH=0 / 1 forces
     * (a benchmark switch: a prefetch never changes a result) */
    loom_cpu_prefetch = !f->amd;
    const char *pf = getenv("LOOM_CPU_PREFETCH");
    if (pf && (strcmp(pf, "0") == 0 || strcmp(pf, "1") == 0)) loom_cpu_prefetch = pf[0] == '1';
    else if (pf && *pf) fprintf(stderr, "loom: LOOM_CPU_PREFETCH=%s is neither 0 nor 1; ignored\n", pf);
    /* the best level: the highest available one, avx512bf16 only on AMD (above) */
    const bool bf16dp_default = f->amd;
    int best = LV_SCALAR;
    for (int i = 0; i < LV_COUNT; i++)
        if (g_avail[i] && (i != LV_AVX512BF16 || bf16dp_default)) best = i;
    g_chosen = best;
    /* One of the two environment variables the library reads (docs/engineering.md; the
     * other is LOOM_CPU_PREFETCH above): every SIMD level must be forceable, and the level
     * is a process-wide choice made before any Loom object exists, so no parameter could
     * carry it. */
    const char *env = getenv("LOOM_CPU_ISA");
    if (env && *env) {
        int want = level_index(env);
        g_requested = want;
        if (want < 0) {
            fprintf(stderr, "loom: LOOM_CPU_ISA=%s is not a known level; using %s\n", env, k_level_names[best]);
        } else if (g_avail[want]) {
            g_chosen = want;
        } else {
            /* fall back within the requested level's family (x86 or arm), then scalar */
            int lv = want, floor = want >= LV_NEON ? LV_NEON : LV_AVX2;
            while (lv >= floor && (!g_avail[lv] || (lv == LV_AVX512BF16 && !bf16dp_default))) lv--;
            if (lv < floor) lv = LV_SCALAR;
            g_chosen = lv;
            fprintf(stderr, "loom: LOOM_CPU_ISA=%s is not available on this CPU/OS; using %s\n", env,
                    k_level_names[lv]);
        }
    }
}

const loom_kernels *loom_kernels_get(void) {
    pthread_once(&g_once, init_tables);
    return &g_tables[g_chosen];
}

const loom_kernels *loom_kernels_scalar(void) {
    pthread_once(&g_once, init_tables);
    return &g_tables[LV_SCALAR];
}

const loom_kernels *loom_kernels_for(const char *isa) {
    if (!isa) return NULL;
    pthread_once(&g_once, init_tables);
    int i = level_index(isa);
    return (i >= 0 && g_avail[i]) ? &g_tables[i] : NULL;
}

const char *const *loom_kernels_levels(void) { return k_levels; }

void loom_kernels_describe(char *buf, size_t size) {
    if (!buf || size == 0) return;
    pthread_once(&g_once, init_tables);
    const loom_cpu_features *f = loom_cpu_features_get();
    char feats[256] = "";
    size_t used = 0;
#define F(cond, nm)                                                                         \
    do {                                                                                    \
        if ((cond) && used < sizeof feats) {                                                \
            int w_ = snprintf(feats + used, sizeof feats - used, "%s%s", used ? " " : "", nm); \
            if (w_ > 0) used += (size_t)w_;                                                 \
        }                                                                                   \
    } while (0)
    F(f->avx, "avx");
    F(f->avx2, "avx2");
    F(f->fma, "fma");
    F(f->f16c, "f16c");
    F(f->avx512f, "avx512f");
    F(f->avx512bw, "avx512bw");
    F(f->avx512vl, "avx512vl");
    F(f->avx512dq, "avx512dq");
    F(f->avx512vnni, "avx512vnni");
    F(f->avx512bf16, "avx512bf16");
    F(f->avx_vnni, "avxvnni");
#if defined(__x86_64__)
    F(f->amx_tile && g_amx_perm > 0, "amx");
    F(f->amx_tile && g_amx_perm < 0, "amx(no OS permission)");
    F(f->amx_tile && g_amx_perm == 0, "amx(unused)");
#endif
    F(f->neon, "neon");
    F(f->dotprod, "dotprod");
    F(f->fp16, "fp16");
#undef F
    if (used >= sizeof feats) used = sizeof feats - 1;
    char avail[96] = "";
    size_t au = 0;
    for (int i = 0; i < LV_COUNT; i++)
        if (g_avail[i] && au < sizeof avail) {
            int w = snprintf(avail + au, sizeof avail - au, "%s%s", au ? "," : "", k_level_names[i]);
            if (w > 0) au += (size_t)w;
        }
    snprintf(buf, size, "cpu: %s; features: %s; os: avx=%s avx512=%s; levels: %s; chosen: %s%s",
             f->brand[0] ? f->brand : (f->arm64 ? "aarch64" : "unknown"), feats[0] ? feats : "none",
             f->os_avx ? "yes" : "no", f->os_avx512 ? "yes" : "no", avail, k_level_names[g_chosen],
             g_requested >= 0 ? " (LOOM_CPU_ISA)" : "");
}
