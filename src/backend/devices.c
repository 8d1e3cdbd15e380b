/* Devices: the CPU and simulated accelerators, with accounted allocations. */
#include "backend/device.h"
#include "backend/vulkan/vk.h"
#include "quant/alloc.h"

#include <ctype.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define LOOM_DEVICE_HUGE_ALIGN ((size_t)2 << 20)
#define LOOM_DEVICE_HUGE_MIN ((size_t)4 << 20)
#define LOOM_DEVICE_MAP_MIN ((size_t)1 << 20) /* anonymous mapping from this size */

uint64_t loom_host_total_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psz <= 0) return 0;
    return (uint64_t)pages * (uint64_t)psz;
}

uint64_t loom_host_available_bytes(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            unsigned long long kb;
            if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
                fclose(f);
                return (uint64_t)kb * 1024u;
            }
        }
        fclose(f);
    }
    long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psz <= 0) return 0;
    return (uint64_t)pages * (uint64_t)psz;
}

int loom_host_cpu_count(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

void loom_device_init_cpu(loom_device *d) {
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "CPU");
    d->id[0] = '\0';
    d->kind = LOOM_DEVICE_CPU;
    d->simulated = false;
    d->capacity = UINT64_MAX;
    d->total_bytes = loom_host_total_bytes();
    d->free_at_open = loom_host_available_bytes();
    atomic_init(&d->used, 0);
    atomic_init(&d->peak, 0);
}

void loom_device_init_sim(loom_device *d, const loom_sim_device *sim) {
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%.31s", sim->name);
    snprintf(d->id, sizeof d->id, "SIM-%.31s", sim->name);
    d->kind = LOOM_DEVICE_GPU;
    d->simulated = true;
    d->capacity = sim->memory_bytes;
    d->total_bytes = sim->memory_bytes;
    d->free_at_open = sim->memory_bytes;
    atomic_init(&d->used, 0);
    atomic_init(&d->peak, 0);
}

void loom_device_init_vk(loom_device *d, struct loom_vk_dev *vk, int index) {
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "Vulkan%d", index);
    snprintf(d->id, sizeof d->id, "%s", loom_vk_dev_uuid(vk));
    d->kind = LOOM_DEVICE_GPU;
    d->simulated = false;
    d->vk = vk;
    d->capacity = loom_vk_dev_total(vk);
    d->total_bytes = loom_vk_dev_total(vk);
    d->free_at_open = loom_vk_dev_free(vk);
    d->chunk = loom_vk_dev_chunk(vk);
    atomic_init(&d->used, 0);
    atomic_init(&d->peak, 0);
}

/* Big buffers: anonymous mappings (from 4 MiB: 2 MiB aligned, huge pages asked for).
 * Their pages are zero until written and only become resident when touched, so a
 * zero-initialised buffer (the KV cache) costs nothing at allocation time. Counted in
 * the library allocation sequence like loom_aligned_alloc (failure injection). Freed
 * with huge_free(p, size) for the same size. Without mmap: loom_aligned_alloc. */
#if defined(__linux__) && defined(MAP_ANONYMOUS)
#define LOOM_DEVICE_MMAP 1
/* whole 4 KiB pages only: a tail rounded up to 2 MiB could be backed by a huge page
 * of which most is never used */
static size_t map_len(size_t size) { return (size + 4095) & ~(size_t)4095; }
static void *huge_alloc(size_t size) {
    if (size > SIZE_MAX - 2 * LOOM_DEVICE_HUGE_ALIGN) return NULL;
    if (loom_alloc_should_fail()) return NULL;
    size_t len = map_len(size);
    if (size < LOOM_DEVICE_HUGE_MIN) { /* page aligned is enough */
        void *q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return q == MAP_FAILED ? NULL : q;
    }
    size_t span = len + LOOM_DEVICE_HUGE_ALIGN;
    char *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    uintptr_t a = ((uintptr_t)m + LOOM_DEVICE_HUGE_ALIGN - 1) & ~(uintptr_t)(LOOM_DEVICE_HUGE_ALIGN - 1);
    char *p = (char *)a;
    size_t head = (size_t)(p - m), tail = span - head - len;
    if (head) (void)munmap(m, head);
    if (tail) (void)munmap(p + len, tail);
#if defined(MADV_HUGEPAGE)
    (void)madvise(p, len, MADV_HUGEPAGE); /* advisory: failure is harmless */
#endif
    return p;
}
static void huge_free(void *p, size_t size) { (void)munmap(p, map_len(size)); }
#else
#define LOOM_DEVICE_MMAP 0
static void *huge_alloc(size_t size) {
    return loom_aligned_alloc(size >= LOOM_DEVICE_HUGE_MIN ? LOOM_DEVICE_HUGE_ALIGN : LOOM_DEVICE_ALIGN, size);
}
static void huge_free(void *p, size_t size) {
    (void)size;
    loom_free(p);
}
#endif

bool loom_device_alloc_zeroed(size_t size) { return LOOM_DEVICE_MMAP && size >= LOOM_DEVICE_MAP_MIN; }

static void *vk_alloc_counted(loom_device *d, size_t size) {
    uint64_t cur = atomic_load(&d->used);
    for (;;) {
        if ((uint64_t)size > d->capacity || cur > d->capacity - (uint64_t)size) return NULL;
        if (atomic_compare_exchange_weak(&d->used, &cur, cur + (uint64_t)size)) break;
    }
    void *p = loom_vk_alloc(d->vk, size);
    if (!p) {
        atomic_fetch_sub(&d->used, (uint64_t)size);
        return NULL;
    }
    uint64_t now = cur + size, pk = atomic_load(&d->peak);
    while (now > pk && !atomic_compare_exchange_weak(&d->peak, &pk, now)) {}
    return p;
}

void *loom_device_alloc(loom_device *d, size_t size) {
    if (!d || size == 0) return NULL;
    if (size > SIZE_MAX - LOOM_DEVICE_ALIGN) return NULL;
    if (d->vk) return vk_alloc_counted(d, size);
    /* reserve the bytes first so concurrent allocations cannot overshoot */
    uint64_t cur = atomic_load(&d->used);
    for (;;) {
        if ((uint64_t)size > d->capacity || cur > d->capacity - (uint64_t)size) return NULL;
        if (atomic_compare_exchange_weak(&d->used, &cur, cur + (uint64_t)size)) break;
    }
    /* counts in the library-wide allocation sequence (failure injection). Buffers of
     * 1 MiB or more are anonymous mappings (zero pages for free: KV cache tensors need
     * no memset); from 4 MiB (weights, compute buffers) they are 2 MiB aligned and
     * asked for transparent huge pages: fewer page faults and TLB misses. */
    bool huge = size >= LOOM_DEVICE_MAP_MIN;
    void *p = huge ? huge_alloc(size) : loom_aligned_alloc(LOOM_DEVICE_ALIGN, size);
    if (!p) {
        atomic_fetch_sub(&d->used, (uint64_t)size);
        return NULL;
    }
    uint64_t now = cur + size, pk = atomic_load(&d->peak);
    while (now > pk && !atomic_compare_exchange_weak(&d->peak, &pk, now)) {}
    return p;
}

void loom_device_free(loom_device *d, void *p, size_t size) {
    if (!p) return;
    if (d && d->vk) {
        loom_vk_free(d->vk, p);
        atomic_fetch_sub(&d->used, (uint64_t)size);
        return;
    }
    if (size >= LOOM_DEVICE_MAP_MIN) huge_free(p, size);
    else loom_free(p);
    if (d) atomic_fetch_sub(&d->used, (uint64_t)size);
}

loom_status loom_device_copy_in(loom_device *d, void *dst, const void *src, size_t n) {
    if (!n) return LOOM_OK;
    if (d && d->vk) return loom_vk_write(d->vk, dst, src, n);
    memcpy(dst, src, n);
    return LOOM_OK;
}

loom_status loom_device_copy_out(loom_device *d, void *dst, const void *src, size_t n) {
    if (!n) return LOOM_OK;
    if (d && d->vk) return loom_vk_read(d->vk, dst, src, n);
    memcpy(dst, src, n);
    return LOOM_OK;
}

loom_status loom_device_copy(loom_device *dd, void *dst, loom_device *sd, const void *src, size_t n, void *bounce) {
    if (!n) return LOOM_OK;
    const bool dh = !dd || !dd->vk, sh = !sd || !sd->vk;
    if (dh && sh) {
        memcpy(dst, src, n);
        return LOOM_OK;
    }
    if (sh) return loom_vk_write(dd->vk, dst, src, n);
    if (dh) return loom_vk_read(sd->vk, dst, src, n);
    if (!bounce) return LOOM_ERR_INVALID_ARG;
    loom_status st = loom_vk_read(sd->vk, bounce, src, n);
    return st ? st : loom_vk_write(dd->vk, dst, bounce, n);
}

loom_status loom_device_fill_zero(loom_device *d, void *dst, size_t n) {
    if (!n) return LOOM_OK;
    if (d && d->vk) return loom_vk_fill_zero(d->vk, dst, n);
    memset(dst, 0, n);
    return LOOM_OK;
}

uint64_t loom_device_free_now(const loom_device *d) {
    if (d->vk) {
        uint64_t f = loom_vk_dev_free(d->vk), u = atomic_load(&((loom_device *)d)->used);
        uint64_t cap = u >= d->capacity ? 0 : d->capacity - u;
        return f < cap ? f : cap;
    }
    if (!d->simulated) return loom_host_available_bytes();
    uint64_t u = atomic_load(&((loom_device *)d)->used);
    return u >= d->capacity ? 0 : d->capacity - u;
}

/* ---------------------------------------------------------------- sim device spec */

static bool name_char_ok(char c) {
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.' || c == ':';
}

loom_status loom_sim_devices_parse(const char *spec, loom_sim_device *out, int max, int *n_out,
                                   loom_error *err) {
    if (n_out) *n_out = 0;
    if (!spec || !n_out || (max > 0 && !out) || max < 0)
        return loom_error_set(err, LOOM_ERR_INVALID_ARG, "sim devices: NULL argument");
    int n = 0;
    const char *p = spec;
    while (*p == ' ') p++;
    if (*p == '\0') return LOOM_OK; /* empty spec: no devices */
    for (;;) {
        const char *name = p;
        while (*p && *p != '=' && *p != ',') p++;
        size_t nlen = (size_t)(p - name);
        if (*p != '=')
            return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                                  "sim devices: expected NAME=SIZE at '%.40s'", name);
        if (nlen == 0 || nlen > 31)
            return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                                  "sim devices: device name must be 1..31 characters at '%.40s'", name);
        for (size_t i = 0; i < nlen; i++)
            if (!name_char_ok(name[i]))
                return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                                      "sim devices: bad character in device name '%.*s'", (int)nlen, name);
        if (nlen == 3 && !strncmp(name, "CPU", 3))
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "sim devices: the name CPU is reserved");
        p++; /* '=' */
        if (!isdigit((unsigned char)*p))
            return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                                  "sim devices: device '%.*s' needs a size in bytes (e.g. 512MiB)", (int)nlen, name);
        uint64_t v = 0;
        while (isdigit((unsigned char)*p)) {
            uint64_t dgt = (uint64_t)(*p - '0');
            if (v > (UINT64_MAX - dgt) / 10)
                return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                                      "sim devices: size of '%.*s' overflows", (int)nlen, name);
            v = v * 10 + dgt;
            p++;
        }
        const char *unit = p;
        while (*p && *p != ',') p++;
        size_t ulen = (size_t)(p - unit);
        while (ulen && unit[ulen - 1] == ' ') ulen--;
        uint64_t mul = 1;
        if (ulen == 0 || (ulen == 1 && unit[0] == 'B')) mul = 1;
        else if (ulen == 3 && !strncmp(unit, "KiB", 3)) mul = 1ull << 10;
        else if (ulen == 3 && !strncmp(unit, "MiB", 3)) mul = 1ull << 20;
        else if (ulen == 3 && !strncmp(unit, "GiB", 3)) mul = 1ull << 30;
        else if (ulen == 3 && !strncmp(unit, "TiB", 3)) mul = 1ull << 40;
        else
            return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                                  "sim devices: unknown unit '%.*s' for '%.*s' (use B, KiB, MiB, GiB)",
                                  (int)ulen, unit, (int)nlen, name);
        if (v > UINT64_MAX / mul)
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "sim devices: size of '%.*s' overflows",
                                  (int)nlen, name);
        for (int i = 0; i < n; i++)
            if (strlen(out[i].name) == nlen && !strncmp(out[i].name, name, nlen))
                return loom_error_set(err, LOOM_ERR_INVALID_ARG, "sim devices: duplicate device '%.*s'",
                                      (int)nlen, name);
        if (n >= max)
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "sim devices: more than %d devices", max);
        memset(&out[n], 0, sizeof out[n]);
        memcpy(out[n].name, name, nlen);
        out[n].memory_bytes = v * mul;
        n++;
        if (*p == '\0') break;
        p++; /* ',' */
        while (*p == ' ') p++;
        if (*p == '\0') break; /* trailing comma tolerated */
    }
    *n_out = n;
    return LOOM_OK;
}

/* ---------------------------------------------------------------- Vulkan device filter */

loom_status loom_vk_filter_parse(const char *s, loom_vk_filter *f, loom_error *err) {
    memset(f, 0, sizeof *f);
    if (!s) return LOOM_OK;
    while (*s == ' ') s++;
    if (!*s) return LOOM_OK;
    if (!strcmp(s, "all")) {
        f->mode = 1;
        return LOOM_OK;
    }
    if (!strcmp(s, "none") || !strcmp(s, "off")) {
        f->mode = 2;
        return LOOM_OK;
    }
    f->mode = 3;
    const char *p = s;
    for (;;) {
        while (*p == ' ') p++;
        if (!isdigit((unsigned char)*p))
            return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                                  "Vulkan devices '%.60s': expected all, none or a list of indices", s);
        long v = 0;
        while (isdigit((unsigned char)*p)) {
            v = v * 10 + (*p++ - '0');
            if (v > 1000)
                return loom_error_set(err, LOOM_ERR_INVALID_ARG, "Vulkan devices '%.60s': index too large", s);
        }
        if (f->n >= LOOM_VK_MAX_LISTED)
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "Vulkan devices '%.60s': at most %d", s,
                                  LOOM_VK_MAX_LISTED);
        for (int i = 0; i < f->n; i++)
            if (f->idx[i] == (int)v)
                return loom_error_set(err, LOOM_ERR_INVALID_ARG, "Vulkan devices '%.60s': index %ld twice", s, v);
        f->idx[f->n++] = (int)v;
        while (*p == ' ') p++;
        if (!*p) break;
        if (*p != ',')
            return loom_error_set(err, LOOM_ERR_INVALID_ARG,
                                  "Vulkan devices '%.60s': expected all, none or a list of indices", s);
        p++;
    }
    return LOOM_OK;
}
