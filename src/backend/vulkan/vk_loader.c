/*
 * vk_loader.c - open the Vulkan loader at run time.
 *
 * Why dlopen instead of linking libvulkan: a Loom binary built where the Vulkan
 * headers and glslc exist must still start, and run on the CPU, on a machine without
 * the loader (a container, a server without GPU packages); a link-time dependency
 * would make the dynamic linker refuse to start it. dlopen also lets a test simulate
 * a missing loader (loom_backend_params.vk_loader naming a library that does not
 * exist) in the same process as tests that use the real one.
 *
 * A loader is opened once per process and name and never closed: drivers (Mesa's
 * llvmpipe in particular) register process-exit handlers that must stay mapped.
 * For the same reason the libraries the loader brings in (drivers, layers, LLVM) are
 * pinned once an instance exists (loom_vk_pin_modules): the loader would otherwise
 * unload and reload them with every instance (tens of milliseconds each), and leak
 * checkers could not attribute the drivers' own allocations to them.
 */
#include "backend/vulkan/vk_internal.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#define LOADER_SLOTS 4

typedef struct loader_slot {
    char name[256];
    void *handle;
    PFN_vkGetInstanceProcAddr gipa;
    char why[200];
} loader_slot;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static loader_slot g_slots[LOADER_SLOTS];
static int g_n;

PFN_vkGetInstanceProcAddr loom_vk_loader_open(const char *name, char *why, size_t why_size) {
    if (!name || !*name) name = "libvulkan.so.1";
    if (strlen(name) >= sizeof g_slots[0].name) {
        snprintf(why, why_size, "Vulkan loader name too long");
        return NULL;
    }
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_n; i++) {
        if (strcmp(g_slots[i].name, name)) continue;
        PFN_vkGetInstanceProcAddr g = g_slots[i].gipa;
        if (!g) snprintf(why, why_size, "%s", g_slots[i].why);
        pthread_mutex_unlock(&g_mu);
        return g;
    }
    loader_slot s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "%s", name);
    s.handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!s.handle) {
        const char *e = dlerror();
        snprintf(s.why, sizeof s.why, "no Vulkan loader (%.160s)", e ? e : name);
    } else {
        /* dlsym returns void *; the conversion to a function pointer goes through
         * memcpy (ISO C has no direct conversion) */
        void *sym = dlsym(s.handle, "vkGetInstanceProcAddr");
        if (sym) memcpy(&s.gipa, &sym, sizeof sym);
        else snprintf(s.why, sizeof s.why, "%.100s has no vkGetInstanceProcAddr", name);
    }
    if (g_n < LOADER_SLOTS) g_slots[g_n++] = s;
    PFN_vkGetInstanceProcAddr g = s.gipa;
    if (!g) snprintf(why, why_size, "%s", s.why);
    pthread_mutex_unlock(&g_mu);
    return g;
}

static int pin_one(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    if (info->dlpi_name && info->dlpi_name[0]) {
        /* already loaded: NOLOAD just sets NODELETE (no new reference) */
        void *h = dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        if (h) dlclose(h);
    }
    return 0;
}

void loom_vk_pin_modules(void) {
    pthread_mutex_lock(&g_mu);
    dl_iterate_phdr(pin_one, NULL);
    pthread_mutex_unlock(&g_mu);
}
