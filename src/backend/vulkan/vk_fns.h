/*
 * vk_fns.h (internal) - the Vulkan entry points the backend uses, as X-macro lists.
 *
 * The loader (libvulkan.so.1) is opened with dlopen at run time, not linked (see
 * vk_loader.c for why); every function below is fetched with vkGetInstanceProcAddr /
 * vkGetDeviceProcAddr into a vk_fns table.
 */
#ifndef LOOM_VK_FNS_H
#define LOOM_VK_FNS_H

#include <vulkan/vulkan.h>

/* Global (no instance) */
#define LOOM_VK_GLOBAL_FNS(X)                  \
    X(vkCreateInstance)                        \
    X(vkEnumerateInstanceExtensionProperties)  \
    X(vkEnumerateInstanceLayerProperties)      \
    X(vkEnumerateInstanceVersion)

/* Instance level */
#define LOOM_VK_INSTANCE_FNS(X)                \
    X(vkDestroyInstance)                       \
    X(vkEnumeratePhysicalDevices)              \
    X(vkGetPhysicalDeviceProperties)           \
    X(vkGetPhysicalDeviceProperties2)          \
    X(vkGetPhysicalDeviceFeatures2)            \
    X(vkGetPhysicalDeviceMemoryProperties)     \
    X(vkGetPhysicalDeviceMemoryProperties2)    \
    X(vkGetPhysicalDeviceQueueFamilyProperties) \
    X(vkEnumerateDeviceExtensionProperties)    \
    X(vkCreateDevice)                          \
    X(vkGetDeviceProcAddr)

/* Optional instance level (VK_EXT_debug_utils) */
#define LOOM_VK_DEBUG_FNS(X)                   \
    X(vkCreateDebugUtilsMessengerEXT)          \
    X(vkDestroyDebugUtilsMessengerEXT)

/* Device level */
#define LOOM_VK_DEVICE_FNS(X)                  \
    X(vkDestroyDevice)                         \
    X(vkGetDeviceQueue)                        \
    X(vkDeviceWaitIdle)                        \
    X(vkAllocateMemory)                        \
    X(vkFreeMemory)                            \
    X(vkMapMemory)                             \
    X(vkUnmapMemory)                           \
    X(vkCreateBuffer)                          \
    X(vkDestroyBuffer)                         \
    X(vkGetBufferMemoryRequirements)           \
    X(vkBindBufferMemory)                      \
    X(vkCreateShaderModule)                    \
    X(vkDestroyShaderModule)                   \
    X(vkCreatePipelineCache)                   \
    X(vkDestroyPipelineCache)                  \
    X(vkCreateComputePipelines)                \
    X(vkDestroyPipeline)                       \
    X(vkCreatePipelineLayout)                  \
    X(vkDestroyPipelineLayout)                 \
    X(vkCreateDescriptorSetLayout)             \
    X(vkDestroyDescriptorSetLayout)            \
    X(vkCreateDescriptorPool)                  \
    X(vkDestroyDescriptorPool)                 \
    X(vkResetDescriptorPool)                   \
    X(vkAllocateDescriptorSets)                \
    X(vkUpdateDescriptorSets)                  \
    X(vkCreateCommandPool)                     \
    X(vkDestroyCommandPool)                    \
    X(vkResetCommandPool)                      \
    X(vkAllocateCommandBuffers)                \
    X(vkBeginCommandBuffer)                    \
    X(vkEndCommandBuffer)                      \
    X(vkCmdBindPipeline)                       \
    X(vkCmdBindDescriptorSets)                 \
    X(vkCmdPushConstants)                      \
    X(vkCmdDispatch)                           \
    X(vkCmdPipelineBarrier)                    \
    X(vkCmdCopyBuffer)                         \
    X(vkCmdFillBuffer)                         \
    X(vkCreateQueryPool)                       \
    X(vkDestroyQueryPool)                      \
    X(vkCmdResetQueryPool)                     \
    X(vkCmdWriteTimestamp)                     \
    X(vkGetQueryPoolResults)                   \
    X(vkCreateFence)                           \
    X(vkDestroyFence)                          \
    X(vkResetFences)                           \
    X(vkWaitForFences)                         \
    X(vkQueueSubmit)

#define LOOM_VK_DECL(name) PFN_##name name;
typedef struct vk_fns {
    PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
    LOOM_VK_GLOBAL_FNS(LOOM_VK_DECL)
    LOOM_VK_INSTANCE_FNS(LOOM_VK_DECL)
    LOOM_VK_DEBUG_FNS(LOOM_VK_DECL)
} vk_fns;

typedef struct vk_dfns {
    LOOM_VK_DEVICE_FNS(LOOM_VK_DECL)
} vk_dfns;
#undef LOOM_VK_DECL

#endif
