/*
 * vk_device.c - Vulkan instance, physical-device enumeration and admission, logical
 * devices (queue, features, limits, memory types, budget) and the device listing.
 *
 * Admission: loom_backend_params.vk_devices selects physical devices (default: the
 * real GPUs, i.e. discrete and integrated; "all"; "none"; a list of indices). An
 * admitted device must also be usable: Vulkan >= 1.2, a compute queue, 8- and 16-bit
 * storage buffer access (the kernels read quantized blocks and F16 data through
 * them). A device failing that is skipped with a note.
 */
#include "backend/vulkan/vk_internal.h"
#include "quant/alloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool loom_vk_built(void) { return true; }

/* ---------------------------------------------------------------- filter */

typedef loom_vk_filter vk_filter;

static loom_status parse_filter(const char *s, vk_filter *f, loom_error *err) {
    return loom_vk_filter_parse(s, f, err);
}

/* Position of physical device i in the admitted order, or -1 (not selected). The
 * list order is the device order (so "1,0" makes device 1 the first GPU). */
static int filter_rank(const vk_filter *f, int i, VkPhysicalDeviceType t) {
    switch (f->mode) {
    case 0: return (t == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU || t == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU) ? i : -1;
    case 1: return i;
    case 2: return -1;
    default:
        for (int k = 0; k < f->n; k++)
            if (f->idx[k] == i) return k;
        return -1;
    }
}

static const char *type_name(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu-vulkan";
    default: return "other";
    }
}

/* ---------------------------------------------------------------- instance */

static atomic_llong g_reports;
int64_t loom_vk_process_reports(void) { return atomic_load(&g_reports); }

static VKAPI_ATTR VkBool32 VKAPI_CALL debug_cb(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                               VkDebugUtilsMessageTypeFlagsEXT type,
                                               const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    loom_vk *vk = user;
    if (!(type & VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT) &&
        (sev & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT))) {
        atomic_fetch_add(&vk->reports, 1);
        atomic_fetch_add(&g_reports, 1);
        fprintf(stderr, "vulkan validation: %s\n", data && data->pMessage ? data->pMessage : "(no message)");
    }
    return VK_FALSE;
}

static bool has_layer(const vk_fns *f, const char *name) {
    uint32_t n = 0;
    if (f->vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return false;
    VkLayerProperties *lp = loom_calloc(n, sizeof *lp);
    if (!lp) return false;
    bool ok = false;
    if (f->vkEnumerateInstanceLayerProperties(&n, lp) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++)
            if (!strcmp(lp[i].layerName, name)) ok = true;
    loom_free(lp);
    return ok;
}

static bool has_inst_ext(const vk_fns *f, const char *name) {
    uint32_t n = 0;
    if (f->vkEnumerateInstanceExtensionProperties(NULL, &n, NULL) != VK_SUCCESS || n == 0) return false;
    VkExtensionProperties *ep = loom_calloc(n, sizeof *ep);
    if (!ep) return false;
    bool ok = false;
    if (f->vkEnumerateInstanceExtensionProperties(NULL, &n, ep) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++)
            if (!strcmp(ep[i].extensionName, name)) ok = true;
    loom_free(ep);
    return ok;
}

static bool has_layer_ext(const vk_fns *f, const char *layer, const char *name) {
    uint32_t n = 0;
    if (f->vkEnumerateInstanceExtensionProperties(layer, &n, NULL) != VK_SUCCESS || n == 0) return false;
    VkExtensionProperties *ep = loom_calloc(n, sizeof *ep);
    if (!ep) return false;
    bool ok = false;
    if (f->vkEnumerateInstanceExtensionProperties(layer, &n, ep) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++)
            if (!strcmp(ep[i].extensionName, name)) ok = true;
    loom_free(ep);
    return ok;
}

static bool has_dev_ext(const vk_fns *f, VkPhysicalDevice pd, const char *name) {
    uint32_t n = 0;
    if (f->vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || n == 0) return false;
    VkExtensionProperties *ep = loom_calloc(n, sizeof *ep);
    if (!ep) return false;
    bool ok = false;
    if (f->vkEnumerateDeviceExtensionProperties(pd, NULL, &n, ep) == VK_SUCCESS)
        for (uint32_t i = 0; i < n; i++)
            if (!strcmp(ep[i].extensionName, name)) ok = true;
    loom_free(ep);
    return ok;
}

/* Loader + instance into vk (f, inst, messenger). false with a note when Vulkan is
 * not usable here; *st = LOOM_ERR_NOMEM for host memory. */
static bool instance_open(loom_vk *vk, const loom_backend_params *p, char *note, size_t note_size) {
    PFN_vkGetInstanceProcAddr gipa = loom_vk_loader_open(p ? p->vk_loader : NULL, note, note_size);
    if (!gipa) return false;
    vk_fns *f = &vk->f;
    f->vkGetInstanceProcAddr = gipa;
#define LOAD_G(name) f->name = (PFN_##name)gipa(VK_NULL_HANDLE, #name);
    LOOM_VK_GLOBAL_FNS(LOAD_G)
#undef LOAD_G
    if (!f->vkCreateInstance || !f->vkEnumerateInstanceExtensionProperties ||
        !f->vkEnumerateInstanceLayerProperties) {
        snprintf(note, note_size, "the Vulkan loader lacks global entry points");
        return false;
    }
    uint32_t api = VK_API_VERSION_1_0;
    if (f->vkEnumerateInstanceVersion) f->vkEnumerateInstanceVersion(&api);
    if (api < VK_API_VERSION_1_2) {
        snprintf(note, note_size, "the Vulkan loader supports only %u.%u (1.2 needed)", VK_API_VERSION_MAJOR(api),
                 VK_API_VERSION_MINOR(api));
        return false;
    }
    const bool validate = p && (p->vk_flags & LOOM_VK_VALIDATE);
    const char *layers[1] = {"VK_LAYER_KHRONOS_validation"};
    const char *exts[2] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
    bool use_layer = validate && has_layer(f, layers[0]);
    bool use_dbg = validate && has_inst_ext(f, exts[0]);
    /* synchronization validation checks the barriers between dependent dispatches */
    bool use_feat = use_layer && use_dbg && has_layer_ext(f, layers[0], exts[1]);
    if (validate && !use_layer)
        fprintf(stderr, "loom: Vulkan validation requested but VK_LAYER_KHRONOS_validation is not installed\n");
    VkApplicationInfo ai = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                            .pApplicationName = "loom",
                            .pEngineName = "loom",
                            .apiVersion = VK_API_VERSION_1_2};
    VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pApplicationInfo = &ai,
                               .enabledLayerCount = use_layer ? 1u : 0u,
                               .ppEnabledLayerNames = layers,
                               .enabledExtensionCount = use_dbg ? (use_feat ? 2u : 1u) : 0u,
                               .ppEnabledExtensionNames = exts};
    VkDebugUtilsMessengerCreateInfoEXT mi = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = debug_cb,
        .pUserData = vk};
    const VkValidationFeatureEnableEXT feats[1] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT vf = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT,
                                  .enabledValidationFeatureCount = 1,
                                  .pEnabledValidationFeatures = feats};
    if (use_dbg) ci.pNext = &mi; /* also covers instance creation/destruction */
    if (use_feat) {
        vf.pNext = ci.pNext;
        ci.pNext = &vf;
    }
    VkResult r = f->vkCreateInstance(&ci, NULL, &vk->inst);
    if (r != VK_SUCCESS) {
        snprintf(note, note_size, "vkCreateInstance failed (%d): no usable Vulkan driver", (int)r);
        vk->inst = VK_NULL_HANDLE;
        return false;
    }
#define LOAD_I(name) f->name = (PFN_##name)gipa(vk->inst, #name);
    LOOM_VK_INSTANCE_FNS(LOAD_I)
    LOOM_VK_DEBUG_FNS(LOAD_I)
#undef LOAD_I
    if (!f->vkDestroyInstance || !f->vkEnumeratePhysicalDevices || !f->vkCreateDevice || !f->vkGetDeviceProcAddr ||
        !f->vkGetPhysicalDeviceFeatures2 || !f->vkGetPhysicalDeviceProperties2 ||
        !f->vkGetPhysicalDeviceMemoryProperties2) {
        if (f->vkDestroyInstance) f->vkDestroyInstance(vk->inst, NULL);
        vk->inst = VK_NULL_HANDLE;
        snprintf(note, note_size, "the Vulkan loader lacks instance entry points");
        return false;
    }
    if (use_dbg && f->vkCreateDebugUtilsMessengerEXT)
        f->vkCreateDebugUtilsMessengerEXT(vk->inst, &mi, NULL, &vk->messenger);
    return true;
}

/* After the physical devices were enumerated (drivers and layers are loaded): pin them
 * (a later instance may load a layer the earlier ones did not). */
static void pin_once(void) {
    loom_vk_pin_modules();
}

static void instance_close(loom_vk *vk) {
    if (!vk->inst) return;
    if (vk->messenger && vk->f.vkDestroyDebugUtilsMessengerEXT)
        vk->f.vkDestroyDebugUtilsMessengerEXT(vk->inst, vk->messenger, NULL);
    vk->f.vkDestroyInstance(vk->inst, NULL);
    vk->inst = VK_NULL_HANDLE;
}

/* ---------------------------------------------------------------- physical devices */

typedef struct pd_facts {
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceVulkan11Features f11;
    VkPhysicalDeviceVulkan12Features f12;
    VkPhysicalDeviceSubgroupProperties sub;
    VkPhysicalDeviceShaderIntegerDotProductProperties dot;
    VkPhysicalDeviceShaderIntegerDotProductFeatures dotf;
    VkPhysicalDeviceMaintenance3Properties m3;
    VkPhysicalDeviceIDProperties idp;
    VkPhysicalDeviceDriverProperties drv;
    VkPhysicalDeviceMemoryProperties mem;
    bool has_dot, has_budget;
    int qfam;
    uint64_t heap_size, budget_free;
    int mt_device, mt_host;
    char why[120]; /* not usable: why */
} pd_facts;

static void uuid_str(const uint8_t u[VK_UUID_SIZE], char *out, size_t n) {
    snprintf(out, n, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
             u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

static int pick_type(const VkPhysicalDeviceMemoryProperties *m, VkMemoryPropertyFlags need,
                     VkMemoryPropertyFlags want) {
    int best = -1;
    for (uint32_t i = 0; i < m->memoryTypeCount; i++) {
        VkMemoryPropertyFlags fl = m->memoryTypes[i].propertyFlags;
        if ((fl & need) != need) continue;
        if (best < 0 || (((fl & want) == want) && (m->memoryTypes[best].propertyFlags & want) != want)) best = (int)i;
    }
    return best;
}

static void pd_query(const vk_fns *f, VkPhysicalDevice pd, bool unified_ok, pd_facts *o) {
    memset(o, 0, sizeof *o);
    o->has_dot = has_dev_ext(f, pd, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    o->has_budget = has_dev_ext(f, pd, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    f->vkGetPhysicalDeviceProperties(pd, &o->props);
    const bool v13 = o->props.apiVersion >= VK_API_VERSION_1_3;
    o->sub.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    o->m3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES;
    o->idp.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES;
    o->drv.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
    o->dot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES;
    o->sub.pNext = &o->m3;
    o->m3.pNext = &o->idp;
    o->idp.pNext = o->props.apiVersion >= VK_API_VERSION_1_2 ? (void *)&o->drv : NULL;
    if (o->has_dot || v13) o->drv.pNext = &o->dot;
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &o->sub};
    f->vkGetPhysicalDeviceProperties2(pd, &p2);
    if (o->props.apiVersion < VK_API_VERSION_1_2) {
        snprintf(o->why, sizeof o->why, "Vulkan %u.%u (1.2 needed)", VK_API_VERSION_MAJOR(o->props.apiVersion),
                 VK_API_VERSION_MINOR(o->props.apiVersion));
        return;
    }
    o->f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    o->f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    o->dotf.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
    o->f11.pNext = &o->f12;
    if (o->has_dot) o->f12.pNext = &o->dotf;
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &o->f11};
    f->vkGetPhysicalDeviceFeatures2(pd, &f2);
    /* memory */
    VkPhysicalDeviceMemoryBudgetPropertiesEXT bud = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 m2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
                                            .pNext = o->has_budget ? &bud : NULL};
    f->vkGetPhysicalDeviceMemoryProperties2(pd, &m2);
    o->mem = m2.memoryProperties;
    const bool unified = unified_ok && (o->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
                                        o->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU);
    const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    o->mt_device = pick_type(&o->mem, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, unified ? hv : 0);
    if (o->mt_device < 0) o->mt_device = pick_type(&o->mem, 0, 0);
    o->mt_host = pick_type(&o->mem, hv, VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    if (o->mt_device >= 0) {
        uint32_t h = o->mem.memoryTypes[o->mt_device].heapIndex;
        o->heap_size = o->mem.memoryHeaps[h].size;
        o->budget_free = o->heap_size;
        if (o->has_budget)
            o->budget_free = bud.heapBudget[h] > bud.heapUsage[h] ? bud.heapBudget[h] - bud.heapUsage[h] : 0;
    }
    /* compute queue */
    uint32_t nq = 0;
    f->vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
    VkQueueFamilyProperties qp[32];
    if (nq > 32) nq = 32;
    f->vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qp);
    o->qfam = -1;
    for (uint32_t i = 0; i < nq && o->qfam < 0; i++)
        if (qp[i].queueFlags & VK_QUEUE_COMPUTE_BIT) o->qfam = (int)i;
    if (o->qfam < 0) snprintf(o->why, sizeof o->why, "no compute queue");
    else if (!o->f11.storageBuffer16BitAccess) snprintf(o->why, sizeof o->why, "no 16-bit storage buffer access");
    else if (!o->f12.storageBuffer8BitAccess) snprintf(o->why, sizeof o->why, "no 8-bit storage buffer access");
    else if (o->mt_device < 0 || o->mt_host < 0) snprintf(o->why, sizeof o->why, "no suitable memory types");
}

static bool int8_accelerated(const pd_facts *pf) {
    return (pf->has_dot || pf->props.apiVersion >= VK_API_VERSION_1_3) &&
           pf->dot.integerDotProduct4x8BitPackedSignedAccelerated;
}

/* ---------------------------------------------------------------- logical device */

static void dev_destroy(loom_vk_dev *d) {
    if (!d) return;
    if (d->dev) {
        d->f.vkDeviceWaitIdle(d->dev);
        vk_pipe_close(d);
        if (d->fence) d->f.vkDestroyFence(d->dev, d->fence, NULL);
        if (d->ts_pool) d->f.vkDestroyQueryPool(d->dev, d->ts_pool, NULL);
        if (d->cmd_pool) d->f.vkDestroyCommandPool(d->dev, d->cmd_pool, NULL);
        vk_mem_close(d);
        d->f.vkDestroyDevice(d->dev, NULL);
    }
    loom_free(d->rd);
    loom_free(d->wr);
    pthread_mutex_destroy(&d->mu);
    pthread_mutex_destroy(&d->qmu);
    loom_free(d);
}

/* NULL with a note on failure (host NOMEM: *nomem set). */
static loom_vk_dev *dev_create(loom_vk *vk, int index, VkPhysicalDevice pd, const pd_facts *pf, char *why,
                               size_t why_size, bool *nomem) {
    loom_vk_dev *d = loom_calloc(1, sizeof *d);
    if (!d) {
        *nomem = true;
        return NULL;
    }
    pthread_mutex_init(&d->mu, NULL);
    pthread_mutex_init(&d->qmu, NULL);
    atomic_init(&d->live_chunks, 0);
    d->vk = vk;
    d->index = index;
    d->pd = pd;
    d->type = pf->props.deviceType;
    snprintf(d->name, sizeof d->name, "%.127s", pf->props.deviceName);
    uuid_str(pf->idp.deviceUUID, d->uuid, sizeof d->uuid);
    d->qfam = (uint32_t)pf->qfam;
    d->max_range = pf->props.limits.maxStorageBufferRange;
    if (vk->max_binding && vk->max_binding < d->max_range) d->max_range = vk->max_binding;
    d->min_align = pf->props.limits.minStorageBufferOffsetAlignment;
    if (d->min_align < 16) d->min_align = 16;
    d->max_range &= ~(uint64_t)(d->min_align - 1);
    uint64_t cm = pf->m3.maxMemoryAllocationSize ? pf->m3.maxMemoryAllocationSize : (1ull << 30);
    if (vk->max_alloc && vk->max_alloc < cm) cm = vk->max_alloc;
    if (cm > (1ull << 40)) cm = 1ull << 40;
    d->chunk_max = cm & ~(uint64_t)65535;
    if (d->chunk_max < 65536) d->chunk_max = 65536;
    d->max_shared = pf->props.limits.maxComputeSharedMemorySize;
    for (int i = 0; i < 3; i++) d->max_wg_count[i] = pf->props.limits.maxComputeWorkGroupCount[i];
    d->subgroup = pf->sub.subgroupSize ? pf->sub.subgroupSize : 1;
    d->int8_accel = int8_accelerated(pf);
    d->fp16 = pf->f12.shaderFloat16;
    d->int8_path = (d->int8_accel || (vk->flags & LOOM_VK_FORCE_INT8)) && !(vk->flags & LOOM_VK_NO_INT8);
    d->dot4 = pf->has_dot && pf->dotf.shaderIntegerDotProduct && !(vk->flags & LOOM_VK_NO_DOT);
    d->mt_device = (uint32_t)pf->mt_device;
    d->mt_host = (uint32_t)pf->mt_host;
    d->heap = pf->mem.memoryTypes[pf->mt_device].heapIndex;
    d->heap_size = pf->heap_size;
    const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    d->unified = (d->type == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU || d->type == VK_PHYSICAL_DEVICE_TYPE_CPU) &&
                 (pf->mem.memoryTypes[pf->mt_device].propertyFlags & hv) == hv &&
                 !(vk->flags & LOOM_VK_FORCE_STAGING);
    d->budget_ext = pf->has_budget;
    atomic_init(&d->dev_bytes, 0);

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                  .queueFamilyIndex = d->qfam,
                                  .queueCount = 1,
                                  .pQueuePriorities = &prio};
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    f12.storageBuffer8BitAccess = VK_TRUE;
    f12.shaderFloat16 = pf->f12.shaderFloat16;
    f12.shaderInt8 = pf->f12.shaderInt8;
    VkPhysicalDeviceShaderIntegerDotProductFeatures dotf = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
        .shaderIntegerDotProduct = VK_TRUE};
    if (d->dot4) f12.pNext = &dotf;
    VkPhysicalDeviceVulkan11Features f11 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
                                            .pNext = &f12};
    f11.storageBuffer16BitAccess = VK_TRUE;
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &f11};
    const char *exts[2];
    uint32_t n_ext = 0;
    if (pf->has_budget) exts[n_ext++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
    if (d->dot4) exts[n_ext++] = VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .pNext = &f2,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &qi,
                             .enabledExtensionCount = n_ext,
                             .ppEnabledExtensionNames = exts};
    VkResult r = vk->f.vkCreateDevice(pd, &di, NULL, &d->dev);
    if (r != VK_SUCCESS) {
        d->dev = VK_NULL_HANDLE;
        snprintf(why, why_size, "vkCreateDevice failed (%d)", (int)r);
        dev_destroy(d);
        return NULL;
    }
    bool ok = true;
#define LOAD_D(name)                                                            \
    d->f.name = (PFN_##name)vk->f.vkGetDeviceProcAddr(d->dev, #name);           \
    if (!d->f.name) ok = false;
    LOOM_VK_DEVICE_FNS(LOAD_D)
#undef LOAD_D
    if (!ok) {
        snprintf(why, why_size, "the driver lacks device entry points");
        if (d->f.vkDestroyDevice) d->f.vkDestroyDevice(d->dev, NULL);
        d->dev = VK_NULL_HANDLE;
        dev_destroy(d);
        return NULL;
    }
    d->f.vkGetDeviceQueue(d->dev, d->qfam, 0, &d->queue);
    VkCommandPoolCreateInfo cp = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
                                  .queueFamilyIndex = d->qfam};
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (d->f.vkCreateCommandPool(d->dev, &cp, NULL, &d->cmd_pool) != VK_SUCCESS ||
        d->f.vkCreateFence(d->dev, &fi, NULL, &d->fence) != VK_SUCCESS) {
        snprintf(why, why_size, "cannot create a command pool / fence");
        dev_destroy(d);
        return NULL;
    }
    VkCommandBufferAllocateInfo ca = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = d->cmd_pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    if (d->f.vkAllocateCommandBuffers(d->dev, &ca, &d->cmd) != VK_SUCCESS) {
        snprintf(why, why_size, "cannot allocate a command buffer");
        dev_destroy(d);
        return NULL;
    }
    /* timestamps at the start and end of every run (device time for benchmarks) */
    uint32_t nq = 0;
    vk->f.vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
    VkQueueFamilyProperties qps[32];
    if (nq > 32) nq = 32;
    vk->f.vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qps);
    if (d->qfam < nq && qps[d->qfam].timestampValidBits && pf->props.limits.timestampPeriod > 0) {
        VkQueryPoolCreateInfo qi2 = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                     .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                     .queryCount = 2};
        if (d->f.vkCreateQueryPool(d->dev, &qi2, NULL, &d->ts_pool) != VK_SUCCESS) d->ts_pool = VK_NULL_HANDLE;
        d->ts_period_ns = pf->props.limits.timestampPeriod;
    }
    loom_status s = vk_pipe_init(d);
    if (s) {
        if (s == LOOM_ERR_NOMEM) *nomem = true;
        snprintf(why, why_size, "cannot create the pipeline layout / descriptor pools");
        dev_destroy(d);
        return NULL;
    }
    return d;
}

/* ---------------------------------------------------------------- open/close */

loom_status loom_vk_open(const loom_backend_params *p, loom_vk **out, char *note, size_t note_size,
                         loom_error *err) {
    *out = NULL;
    if (note_size) note[0] = '\0';
    vk_filter flt;
    loom_status s = parse_filter(p ? p->vk_devices : NULL, &flt, err);
    if (s) return s;
    if (flt.mode == 2) {
        snprintf(note, note_size, "Vulkan disabled (vk_devices = none)");
        return LOOM_OK;
    }
    loom_vk *vk = loom_calloc(1, sizeof *vk);
    if (!vk) return loom_error_set(err, LOOM_ERR_NOMEM, "Vulkan: out of host memory");
    atomic_init(&vk->reports, 0);
    vk->flags = p ? p->vk_flags : 0;
    vk->max_binding = p ? p->vk_max_binding : 0;
    vk->max_alloc = p ? p->vk_max_alloc : 0;
    if (!instance_open(vk, p, note, note_size)) {
        loom_free(vk);
        return LOOM_OK;
    }
    uint32_t n = 0;
    VkPhysicalDevice pds[VK_MAX_DEVICES];
    VkResult r = vk->f.vkEnumeratePhysicalDevices(vk->inst, &n, NULL);
    if (r != VK_SUCCESS || n == 0) {
        snprintf(note, note_size, "no Vulkan device");
        loom_vk_close(vk);
        return LOOM_OK;
    }
    if (n > VK_MAX_DEVICES) n = VK_MAX_DEVICES;
    r = vk->f.vkEnumeratePhysicalDevices(vk->inst, &n, pds);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) n = 0;
    pin_once();
    /* admitted devices in filter order */
    int order[VK_MAX_DEVICES], rank[VK_MAX_DEVICES], n_sel = 0;
    pd_facts *pf = loom_calloc(VK_MAX_DEVICES, sizeof *pf);
    if (!pf) {
        loom_vk_close(vk);
        return loom_error_set(err, LOOM_ERR_NOMEM, "Vulkan: out of host memory");
    }
    for (uint32_t i = 0; i < n; i++) {
        pd_query(&vk->f, pds[i], !(vk->flags & LOOM_VK_FORCE_STAGING), &pf[i]);
        int rk = filter_rank(&flt, (int)i, pf[i].props.deviceType);
        if (rk < 0) continue;
        if (pf[i].why[0]) {
            fprintf(stderr, "loom: Vulkan device %u (%s) not used: %s\n", i, pf[i].props.deviceName, pf[i].why);
            continue;
        }
        int k = n_sel++;
        while (k > 0 && rank[k - 1] > rk) {
            order[k] = order[k - 1];
            rank[k] = rank[k - 1];
            k--;
        }
        order[k] = (int)i;
        rank[k] = rk;
    }
    for (int k = 0; k < flt.n; k++)
        if (flt.mode == 3 && flt.idx[k] >= (int)n) {
            loom_free(pf);
            loom_vk_close(vk);
            return loom_error_set(err, LOOM_ERR_INVALID_ARG, "Vulkan devices: index %d but only %u device(s)",
                                  flt.idx[k], n);
        }
    for (int k = 0; k < n_sel; k++) {
        char why[160] = "";
        bool nomem = false;
        loom_vk_dev *d = dev_create(vk, order[k], pds[order[k]], &pf[order[k]], why, sizeof why, &nomem);
        if (nomem) {
            loom_free(pf);
            loom_vk_close(vk);
            return loom_error_set(err, LOOM_ERR_NOMEM, "Vulkan: out of host memory creating device %d", order[k]);
        }
        if (!d) {
            fprintf(stderr, "loom: Vulkan device %d (%s) not used: %s\n", order[k], pf[order[k]].props.deviceName, why);
            continue;
        }
        vk->devices[vk->n_devices++] = d;
    }
    loom_free(pf);
    if (vk->n_devices == 0) {
        snprintf(note, note_size, flt.mode == 0 ? "no Vulkan GPU (software devices need vk_devices=all)"
                                                : "no usable Vulkan device selected");
        loom_vk_close(vk);
        return LOOM_OK;
    }
    *out = vk;
    return LOOM_OK;
}

void loom_vk_close(loom_vk *vk) {
    if (!vk) return;
    for (int i = 0; i < vk->n_devices; i++) dev_destroy(vk->devices[i]);
    instance_close(vk);
    loom_free(vk);
}

int loom_vk_device_count(const loom_vk *vk) { return vk ? vk->n_devices : 0; }
loom_vk_dev *loom_vk_device(loom_vk *vk, int i) { return vk && i >= 0 && i < vk->n_devices ? vk->devices[i] : NULL; }
int64_t loom_vk_reports(const loom_vk *vk) { return vk ? atomic_load(&((loom_vk *)vk)->reports) : 0; }

const char *loom_vk_dev_name(const loom_vk_dev *d) { return d->name; }
const char *loom_vk_dev_uuid(const loom_vk_dev *d) { return d->uuid; }
uint64_t loom_vk_dev_total(const loom_vk_dev *d) { return d->heap_size; }
uint64_t loom_vk_dev_chunk(const loom_vk_dev *d) { return d->chunk_max; }

uint64_t loom_vk_dev_free(const loom_vk_dev *d) {
    if (d->budget_ext) {
        VkPhysicalDeviceMemoryBudgetPropertiesEXT bud = {
            .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
        VkPhysicalDeviceMemoryProperties2 m2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
                                                .pNext = &bud};
        d->vk->f.vkGetPhysicalDeviceMemoryProperties2(d->pd, &m2);
        return bud.heapBudget[d->heap] > bud.heapUsage[d->heap] ? bud.heapBudget[d->heap] - bud.heapUsage[d->heap] : 0;
    }
    uint64_t used = atomic_load(&((loom_vk_dev *)d)->dev_bytes);
    return used < d->heap_size ? d->heap_size - used : 0;
}

/* ---------------------------------------------------------------- listing */

loom_status loom_vk_list(const loom_backend_params *p, loom_device_info *out, int max, int *n_out, char *note,
                         size_t note_size, loom_error *err) {
    if (note_size) note[0] = '\0';
    vk_filter flt;
    loom_status s = parse_filter(p ? p->vk_devices : NULL, &flt, err);
    if (s) return s;
    loom_vk *vk = loom_calloc(1, sizeof *vk);
    if (!vk) return loom_error_set(err, LOOM_ERR_NOMEM, "Vulkan: out of host memory");
    loom_backend_params q = p ? *p : loom_backend_default_params();
    q.vk_flags &= ~(unsigned)LOOM_VK_VALIDATE;
    if (!instance_open(vk, &q, note, note_size)) {
        loom_free(vk);
        return LOOM_OK;
    }
    uint32_t n = 0;
    VkPhysicalDevice pds[VK_MAX_DEVICES];
    if (vk->f.vkEnumeratePhysicalDevices(vk->inst, &n, NULL) != VK_SUCCESS) n = 0;
    if (n > VK_MAX_DEVICES) n = VK_MAX_DEVICES;
    if (n && vk->f.vkEnumeratePhysicalDevices(vk->inst, &n, pds) < 0) n = 0;
    if (n == 0) snprintf(note, note_size, "no Vulkan device");
    pin_once();
    pd_facts *pf = loom_calloc(1, sizeof *pf);
    if (!pf) {
        instance_close(vk);
        loom_free(vk);
        return loom_error_set(err, LOOM_ERR_NOMEM, "Vulkan: out of host memory");
    }
    for (uint32_t i = 0; i < n && *n_out < max; i++) {
        pd_query(&vk->f, pds[i], !(q.vk_flags & LOOM_VK_FORCE_STAGING), pf);
        loom_device_info *o = &out[(*n_out)++];
        memset(o, 0, sizeof *o);
        snprintf(o->name, sizeof o->name, "%.127s", pf->props.deviceName);
        uuid_str(pf->idp.deviceUUID, o->id, sizeof o->id);
        snprintf(o->type, sizeof o->type, "%s", type_name(pf->props.deviceType));
        if (pf->props.apiVersion >= VK_API_VERSION_1_2)
            snprintf(o->driver, sizeof o->driver, "%.24s %.36s", pf->drv.driverName, pf->drv.driverInfo);
        o->kind = LOOM_DEVICE_GPU;
        o->vk_index = (int)i;
        o->total_bytes = pf->heap_size;
        o->free_bytes = pf->budget_free;
        int rk = filter_rank(&flt, (int)i, pf->props.deviceType);
        o->used = rk >= 0 && !pf->why[0];
        if (pf->why[0]) snprintf(o->note, sizeof o->note, "not usable: %s", pf->why);
        else if (rk < 0)
            snprintf(o->note, sizeof o->note, "%s", flt.mode == 0 ? "not a GPU: select with LOOM_VK_DEVICES=all or an index list"
                                                                  : "not selected by LOOM_VK_DEVICES");
        else
            snprintf(o->note, sizeof o->note, "Vulkan %u.%u, subgroup %u, fp16 %s, int8 dot %s, max binding %llu MiB",
                     VK_API_VERSION_MAJOR(pf->props.apiVersion), VK_API_VERSION_MINOR(pf->props.apiVersion),
                     pf->sub.subgroupSize, pf->f12.shaderFloat16 ? "yes" : "no",
                     int8_accelerated(pf) ? "accelerated" : "emulated",
                     (unsigned long long)(pf->props.limits.maxStorageBufferRange >> 20));
    }
    loom_free(pf);
    instance_close(vk);
    loom_free(vk);
    return LOOM_OK;
}
