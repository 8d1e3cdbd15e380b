/*
 * vk_pipe.c - one descriptor-set layout and pipeline layout for every kernel
 * (VK_BINDINGS storage buffers + VK_PUSH_BYTES of push constants), compute pipelines
 * created on first use from the SPIR-V embedded at build time (vk_shaders.c), a
 * VkPipelineCache, and a descriptor-set cache keyed by the bound buffer windows: a
 * decode step binds the same windows as the previous one (offsets travel in push
 * constants), so after the first token no descriptor set is written.
 */
#include "backend/vulkan/vk_internal.h"
#include "quant/alloc.h"

#include <string.h>

#define POOL_SETS 256

loom_status vk_pipe_init(loom_vk_dev *d) {
    VkDescriptorSetLayoutBinding b[VK_BINDINGS];
    for (uint32_t i = 0; i < VK_BINDINGS; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = i,
                                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1,
                                              .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dl = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                          .bindingCount = VK_BINDINGS,
                                          .pBindings = b};
    if (d->f.vkCreateDescriptorSetLayout(d->dev, &dl, NULL, &d->dsl) != VK_SUCCESS) {
        d->dsl = VK_NULL_HANDLE;
        return LOOM_ERR_INTERNAL;
    }
    VkPushConstantRange pc = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .offset = 0, .size = VK_PUSH_BYTES};
    VkPipelineLayoutCreateInfo pl = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                     .setLayoutCount = 1,
                                     .pSetLayouts = &d->dsl,
                                     .pushConstantRangeCount = 1,
                                     .pPushConstantRanges = &pc};
    if (d->f.vkCreatePipelineLayout(d->dev, &pl, NULL, &d->layout) != VK_SUCCESS) {
        d->layout = VK_NULL_HANDLE;
        return LOOM_ERR_INTERNAL;
    }
    VkPipelineCacheCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    if (d->f.vkCreatePipelineCache(d->dev, &pci, NULL, &d->pcache) != VK_SUCCESS) d->pcache = VK_NULL_HANDLE;
    d->dsets = loom_calloc(VK_DSET_CACHE, sizeof *d->dsets);
    if (!d->dsets) return LOOM_ERR_NOMEM;
    /* bound to the bindings a kernel does not use (descriptors must be valid) */
    d->dummy = loom_calloc(1, sizeof *d->dummy);
    if (!d->dummy) return LOOM_ERR_NOMEM;
    d->dummy->chunks = loom_calloc(1, sizeof *d->dummy->chunks);
    if (!d->dummy->chunks) return LOOM_ERR_NOMEM;
    d->dummy->n_chunks = 1;
    d->dummy->host = true;
    if (!vk_chunk_new(d, d->mt_host, 256, true, &d->dummy->chunks[0])) return LOOM_ERR_NOMEM;
    memset(d->dummy->chunks[0].map, 0, 256);
    d->dummy_buf = d->dummy->chunks[0].buf;
    /* error flags the kernels raise (out-of-range indices) */
    d->flag = loom_calloc(1, sizeof *d->flag);
    if (!d->flag) return LOOM_ERR_NOMEM;
    d->flag->chunks = loom_calloc(1, sizeof *d->flag->chunks);
    if (!d->flag->chunks) return LOOM_ERR_NOMEM;
    d->flag->n_chunks = 1;
    d->flag->host = true;
    if (!vk_chunk_new(d, d->mt_host, 256, true, &d->flag->chunks[0])) return LOOM_ERR_NOMEM;
    memset(d->flag->chunks[0].map, 0, 256);
    return LOOM_OK;
}

static void free_small(loom_vk_dev *d, vk_alloc *a) {
    if (!a) return;
    if (a->chunks) vk_chunk_free(d, &a->chunks[0]);
    loom_free(a->chunks);
    loom_free(a);
}

void vk_pipe_close(loom_vk_dev *d) {
    for (int i = 0; i < VKS_COUNT; i++)
        if (d->pipe[i]) d->f.vkDestroyPipeline(d->dev, d->pipe[i], NULL);
    for (int i = 0; i < d->n_pools; i++) d->f.vkDestroyDescriptorPool(d->dev, d->pools[i], NULL);
    loom_free(d->pools);
    loom_free(d->dsets);
    free_small(d, d->dummy);
    free_small(d, d->flag);
    if (d->pcache) d->f.vkDestroyPipelineCache(d->dev, d->pcache, NULL);
    if (d->layout) d->f.vkDestroyPipelineLayout(d->dev, d->layout, NULL);
    if (d->dsl) d->f.vkDestroyDescriptorSetLayout(d->dev, d->dsl, NULL);
}

VkPipeline vk_pipeline(loom_vk_dev *d, int shader) {
    if (shader < 0 || shader >= VKS_COUNT) return VK_NULL_HANDLE;
    if (d->pipe[shader]) return d->pipe[shader];
    const loom_vk_spirv_t *s = &loom_vk_spirv[shader];
    VkShaderModuleCreateInfo si = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = s->size,
                                   .pCode = s->code};
    VkShaderModule sm;
    if (d->f.vkCreateShaderModule(d->dev, &si, NULL, &sm) != VK_SUCCESS) return VK_NULL_HANDLE;
    VkComputePipelineCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                                      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                                                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                                                .module = sm,
                                                .pName = "main"},
                                      .layout = d->layout};
    VkPipeline p;
    VkResult r = d->f.vkCreateComputePipelines(d->dev, d->pcache, 1, &pi, NULL, &p);
    d->f.vkDestroyShaderModule(d->dev, sm, NULL);
    if (r != VK_SUCCESS) return VK_NULL_HANDLE;
    d->pipe[shader] = p;
    d->n_pipes++;
    return p;
}

/* ---------------------------------------------------------------- descriptor cache */

static uint64_t key_hash(const uint64_t *k) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < VK_BINDINGS * 3; i++) h = (h ^ k[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

void vk_dset_reset_if_full(loom_vk_dev *d) {
    if (d->n_dsets < VK_DSET_CACHE * 3 / 4) return;
    vk_dset_clear(d);
}

void vk_dset_clear(loom_vk_dev *d) {
    if (!d->dsets || d->n_dsets == 0) return;
    for (int i = 0; i < d->n_pools; i++) d->f.vkResetDescriptorPool(d->dev, d->pools[i], 0);
    memset(d->dsets, 0, VK_DSET_CACHE * sizeof *d->dsets);
    d->n_dsets = 0;
    /* the pools are kept and refilled from the first one (no allocation once grown) */
    d->cur_pool = 0;
    d->pool_left = d->n_pools ? POOL_SETS : 0;
}

/* The next pool with room: the following kept one, else a new one. */
static bool new_pool(loom_vk_dev *d) {
    if (d->n_pools && d->cur_pool + 1 < d->n_pools) {
        d->cur_pool++;
        d->pool_left = POOL_SETS;
        return true;
    }
    if (d->n_pools == d->cap_pools) {
        int nc = d->cap_pools ? 2 * d->cap_pools : 8;
        VkDescriptorPool *np = loom_realloc(d->pools, (size_t)nc * sizeof *np);
        if (!np) return false;
        d->pools = np;
        d->cap_pools = nc;
    }
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = POOL_SETS * VK_BINDINGS};
    VkDescriptorPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                     .maxSets = POOL_SETS,
                                     .poolSizeCount = 1,
                                     .pPoolSizes = &ps};
    VkDescriptorPool p;
    if (d->f.vkCreateDescriptorPool(d->dev, &pi, NULL, &p) != VK_SUCCESS) return false;
    d->cur_pool = d->n_pools;
    d->pools[d->n_pools++] = p;
    d->pool_left = POOL_SETS;
    return true;
}

VkDescriptorSet vk_dset(loom_vk_dev *d, const VkDescriptorBufferInfo *b) {
    uint64_t key[VK_BINDINGS * 3];
    for (int i = 0; i < VK_BINDINGS; i++) {
        key[3 * i] = (uint64_t)(uintptr_t)b[i].buffer;
        key[3 * i + 1] = b[i].offset;
        key[3 * i + 2] = b[i].range;
    }
    uint64_t m = VK_DSET_CACHE - 1;
    uint64_t at = key_hash(key) & m;
    for (;; at = (at + 1) & m) {
        vk_dset_entry *e = &d->dsets[at];
        if (!e->used) break;
        if (!memcmp(e->key, key, sizeof key)) return e->set;
    }
    if (d->n_dsets >= VK_DSET_CACHE - 1) return VK_NULL_HANDLE; /* reset happens between runs */
    if (d->pool_left == 0 && !new_pool(d)) return VK_NULL_HANDLE;
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = d->pools[d->cur_pool],
                                      .descriptorSetCount = 1,
                                      .pSetLayouts = &d->dsl};
    VkDescriptorSet set;
    if (d->f.vkAllocateDescriptorSets(d->dev, &ai, &set) != VK_SUCCESS) {
        if (!new_pool(d)) return VK_NULL_HANDLE;
        ai.descriptorPool = d->pools[d->cur_pool];
        if (d->f.vkAllocateDescriptorSets(d->dev, &ai, &set) != VK_SUCCESS) return VK_NULL_HANDLE;
    }
    d->pool_left--;
    VkWriteDescriptorSet w[VK_BINDINGS];
    for (uint32_t i = 0; i < VK_BINDINGS; i++)
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = set,
                                      .dstBinding = i,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &b[i]};
    d->f.vkUpdateDescriptorSets(d->dev, VK_BINDINGS, w, 0, NULL);
    d->stats.descriptor_writes++;
    vk_dset_entry *e = &d->dsets[at];
    memcpy(e->key, key, sizeof key);
    e->set = set;
    e->used = true;
    d->n_dsets++;
    return set;
}
