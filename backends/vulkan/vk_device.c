/* Vulkan backend: loader (volk), instance, device selection, queue, the debug
 * messenger, and the backend table. */
#include "vk_internal.h"

#include <threads.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

dk_status dk__vk_result(dk_context *ctx, VkResult r, const char *what) {
    dk_vk_state *s = dk__vk(ctx);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
        return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "vulkan backend: %s: out of %s memory (VkResult %d)", what,
                        r == VK_ERROR_OUT_OF_DEVICE_MEMORY ? "device" : "host", (int)r);
    if (r == VK_ERROR_DEVICE_LOST) {
        if (s) s->lost = 1;
        return dk__fail(ctx, DK_ERR_DEVICE_LOST, "vulkan backend: %s: the device was lost (VK_ERROR_DEVICE_LOST)", what);
    }
    return dk__fail(ctx, DK_ERR_INTERNAL, "vulkan backend: %s failed (VkResult %d)", what, (int)r);
}

/* Records validation-layer messages; dk_sync reports them (DIFKERN_VULKAN_VALIDATION=1). */
static VKAPI_ATTR VkBool32 VKAPI_CALL vkdev_messenger_cb(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                         VkDebugUtilsMessageTypeFlagsEXT types,
                                                         const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                         void *user) {
    dk_vk_state *s = (dk_vk_state *)user;
    (void)types;
    if (!(severity & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)))
        return VK_FALSE;
    if (s->msg_lock_ok) (void)mtx_lock(&s->msg_lock);
    if (s->validation_errors++ == 0)
        dk__strlcpy(s->validation_msg, data && data->pMessage ? data->pMessage : "(no text)", sizeof s->validation_msg);
    if (s->msg_lock_ok) (void)mtx_unlock(&s->msg_lock);
    return VK_FALSE;
}

static int vkdev_has_layer(const char *name) {
    uint32_t n = 0, i;
    VkLayerProperties *p;
    int found = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return 0;
    p = (VkLayerProperties *)calloc(n, sizeof *p);
    if (!p) return 0;
    if (vkEnumerateInstanceLayerProperties(&n, p) == VK_SUCCESS)
        for (i = 0; i < n; i++) found |= strcmp(p[i].layerName, name) == 0;
    free(p);
    return found;
}

static int vkdev_has_instance_ext(const char *name) {
    uint32_t n = 0, i;
    VkExtensionProperties *p;
    int found = 0;
    if (vkEnumerateInstanceExtensionProperties(NULL, &n, NULL) != VK_SUCCESS || n == 0) return 0;
    p = (VkExtensionProperties *)calloc(n, sizeof *p);
    if (!p) return 0;
    if (vkEnumerateInstanceExtensionProperties(NULL, &n, p) == VK_SUCCESS)
        for (i = 0; i < n; i++) found |= strcmp(p[i].extensionName, name) == 0;
    free(p);
    return found;
}

static int vkdev_has_device_ext(VkPhysicalDevice pd, const char *name) {
    uint32_t n = 0, i;
    VkExtensionProperties *p;
    int found = 0;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL) != VK_SUCCESS || n == 0) return 0;
    p = (VkExtensionProperties *)calloc(n, sizeof *p);
    if (!p) return 0;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &n, p) == VK_SUCCESS)
        for (i = 0; i < n; i++) found |= strcmp(p[i].extensionName, name) == 0;
    free(p);
    return found;
}

/* The first queue family with compute; compute-only families are preferred. */
static int vkdev_compute_family(VkPhysicalDevice pd, uint32_t *family) {
    uint32_t n = 0, i;
    VkQueueFamilyProperties p[32];
    int best = -1;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
    if (n > 32) n = 32;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &n, p);
    for (i = 0; i < n; i++) {
        if (!(p[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
        if (best < 0 || !(p[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) best = (int)i;
        if (!(p[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) break;
    }
    if (best < 0) return 0;
    *family = (uint32_t)best;
    return 1;
}

/* Why a device cannot be used (NULL: usable). */
static const char *vkdev_unusable(VkPhysicalDevice pd) {
    VkPhysicalDeviceProperties props;
    VkPhysicalDevice16BitStorageFeatures f16 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES, NULL, 0, 0, 0, 0};
    VkPhysicalDeviceFeatures2 f2;
    uint32_t fam;
    vkGetPhysicalDeviceProperties(pd, &props);
    if (props.apiVersion < VK_API_VERSION_1_2) return "Vulkan < 1.2";
    if (!vkdev_has_device_ext(pd, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME)) return "no VK_KHR_push_descriptor";
    memset(&f2, 0, sizeof f2);
    f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    f2.pNext = &f16;
    vkGetPhysicalDeviceFeatures2(pd, &f2);
    if (!f16.storageBuffer16BitAccess) return "no storageBuffer16BitAccess";
    if (!vkdev_compute_family(pd, &fam)) return "no compute queue";
    return NULL;
}

/* Zeroes Vulkan structure f (size bytes) and sets its type. */
static void vkdev_struct(void *f, size_t size, VkStructureType type) {
    memset(f, 0, size);
    ((VkBaseOutStructure *)f)->sType = type;
}

/* Fills the feature structures chained from first. */
static void vkdev_features(VkPhysicalDevice pd, void *first) {
    VkPhysicalDeviceFeatures2 f2;
    vkdev_struct(&f2, sizeof f2, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
    f2.pNext = first;
    vkGetPhysicalDeviceFeatures2(pd, &f2);
}

#define DK_VK_CM_SUBGROUP_OPS \
    (VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_VOTE_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT)

/* The tensor-core shaders map 8 subgroups of 32 onto a workgroup of 256: the
 * device's subgroups are 32 wide, or (wave64 devices such as RDNA) it can be
 * asked for 32-wide ones in compute (VK_EXT_subgroup_size_control, core in
 * 1.3).  Returns 0 (no), 1 (native) or 2 (needs a required subgroup size).
 * DIFKERN_VULKAN_CM_WAVE32=1 requests the size even where it is native (a
 * test of that path on NVIDIA). */
static int vkdev_cm_subgroups(VkPhysicalDevice pd, int wave32) {
    VkPhysicalDeviceSubgroupProperties sg;
    VkPhysicalDeviceSubgroupSizeControlProperties sc;
    VkPhysicalDeviceSubgroupSizeControlFeatures scf;
    VkPhysicalDeviceProperties2 p2;
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(pd, &props);
    memset(&sc, 0, sizeof sc);
    sc.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES;
    memset(&sg, 0, sizeof sg);
    sg.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    sg.pNext = props.apiVersion >= VK_API_VERSION_1_3 ? &sc : NULL;
    memset(&p2, 0, sizeof p2);
    p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    p2.pNext = &sg;
    vkGetPhysicalDeviceProperties2(pd, &p2);
    /* the tensor-core attention shaders vote and shuffle within subgroups */
    if (!(sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ||
        (sg.supportedOperations & DK_VK_CM_SUBGROUP_OPS) != DK_VK_CM_SUBGROUP_OPS)
        return 0;
    if (sg.subgroupSize == 32 && !wave32) return 1;
    if (props.apiVersion < VK_API_VERSION_1_3 || sc.minSubgroupSize > 32 || sc.maxSubgroupSize < 32 ||
        !(sc.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT))
        return 0;
    vkdev_struct(&scf, sizeof scf, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES);
    vkdev_features(pd, &scf);
    return scf.subgroupSizeControl && scf.computeFullSubgroups ? 2 : 0;
}

/* shaderFloat16 and the Vulkan memory model (the coopmat modules declare it). */
static int vkdev_f16_arithmetic(VkPhysicalDevice pd) {
    VkPhysicalDeviceVulkan12Features f12;
    vkdev_struct(&f12, sizeof f12, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
    vkdev_features(pd, &f12);
    return f12.shaderFloat16 && f12.vulkanMemoryModel;
}

/* VK_NV_cooperative_matrix with a 16x16x16 f16 x f16 -> f32 subgroup shape. */
static int vkdev_coopmat_nv(VkPhysicalDevice pd) {
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cm;
    VkCooperativeMatrixPropertiesNV props[32];
    uint32_t n = 32, i;
    int shape = 0;
    if (!vkdev_has_device_ext(pd, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) ||
        !vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)
        return 0;
    vkdev_struct(&cm, sizeof cm, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
    vkdev_features(pd, &cm);
    if (!cm.cooperativeMatrix) return 0;
    for (i = 0; i < 32; i++) vkdev_struct(&props[i], sizeof props[i], VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV);
    if (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n, props) < 0) return 0;
    for (i = 0; i < n && i < 32; i++)
        shape |= props[i].MSize == 16 && props[i].NSize == 16 && props[i].KSize == 16 &&
                 props[i].AType == VK_COMPONENT_TYPE_FLOAT16_NV && props[i].BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                 props[i].CType == VK_COMPONENT_TYPE_FLOAT32_NV && props[i].DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
                 props[i].scope == VK_SCOPE_SUBGROUP_NV;
    return shape;
}

/* VK_KHR_cooperative_matrix: bit 0 a 16x16x16 f16 x f16 -> f32 subgroup shape,
 * bit 1 the bf16 one with VK_KHR_shader_bfloat16's cooperative-matrix feature. */
static int vkdev_coopmat_khr(VkPhysicalDevice pd) {
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR get;
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR cm;
    VkPhysicalDeviceShaderBfloat16FeaturesKHR bf;
    VkCooperativeMatrixPropertiesKHR props[64];
    uint32_t n = 64, i;
    int has_bf = vkdev_has_device_ext(pd, VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME), found = 0;
    if (!vkdev_has_device_ext(pd, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME) || !volkGetLoadedInstance()) return 0;
    get = (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)vkGetInstanceProcAddr(
        volkGetLoadedInstance(), "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    if (!get) return 0;
    vkdev_struct(&bf, sizeof bf, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR);
    vkdev_struct(&cm, sizeof cm, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR);
    cm.pNext = has_bf ? &bf : NULL;
    vkdev_features(pd, &cm);
    if (!cm.cooperativeMatrix) return 0;
    for (i = 0; i < 64; i++) vkdev_struct(&props[i], sizeof props[i], VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR);
    if (get(pd, &n, props) < 0) return 0;
    for (i = 0; i < n && i < 64; i++) {
        const VkCooperativeMatrixPropertiesKHR *q = &props[i];
        if (q->MSize != 16 || q->NSize != 16 || q->KSize != 16 || q->scope != DK_VK_SCOPE_SUBGROUP ||
            q->CType != DK_VK_COMPONENT_FLOAT32 || q->ResultType != DK_VK_COMPONENT_FLOAT32 || q->AType != q->BType)
            continue;
        if (q->AType == DK_VK_COMPONENT_FLOAT16) found |= 1;
        if (q->AType == DK_VK_COMPONENT_BFLOAT16 && bf.shaderBFloat16Type && bf.shaderBFloat16CooperativeMatrix)
            found |= 2;
    }
    return found;
}

/* Which tensor-core family the device gets: s->coopmat (f16), coopmat_khr
 * (the KHR spelling, preferred: the standard one, the one AMD drivers offer,
 * and faster than the NV one where both exist; docs/vulkan-backend.md),
 * coopmat_bf16 and cm_wave32.  DIFKERN_VULKAN_COOPMAT=nv or
 * =khr restricts the choice to one spelling (=nv also drops bf16, which needs
 * KHR). */
static void vkdev_pick_coopmat(dk_context *ctx, dk_vk_state *s) {
    const int64_t only = ctx->knobs.vulkan_coopmat; /* -1 either, 0 nv, 1 khr: "nv|khr" */
    int want_nv = only != 1, want_khr = only != 0;
    int sub = s->force_portable ? 0 : vkdev_cm_subgroups(s->physical, (int)ctx->knobs.vulkan_cm_wave32), khr, nv;
    s->coopmat = s->coopmat_khr = s->coopmat_bf16 = s->cm_wave32 = 0;
    if (!sub || !vkdev_f16_arithmetic(s->physical)) return;
    khr = want_khr ? vkdev_coopmat_khr(s->physical) : 0;
    nv = want_nv && !(khr & 1) ? vkdev_coopmat_nv(s->physical) : 0;
    s->coopmat = (khr & 1) || nv;
    s->coopmat_khr = (khr & 1) != 0;
    s->coopmat_bf16 = (khr & 2) != 0;
    s->cm_wave32 = (s->coopmat || s->coopmat_bf16) && sub == 2;
}

static int vkdev_type_rank(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
    default: return 0;
    }
}

/* Whether hay contains needle, ignoring ASCII case. */
static int vkdev_contains(const char *hay, const char *needle) {
    size_t n = strlen(needle), i, j;
    for (i = 0; hay[i]; i++) {
        for (j = 0; j < n && hay[i + j]; j++)
            if (tolower((unsigned char)hay[i + j]) != tolower((unsigned char)needle[j])) break;
        if (j == n) return 1;
    }
    return 0;
}

/* Whether DIFKERN_VULKAN_DEVICE's text names device pd: a substring (any case) of
 * its device name or driver name, or "lavapipe" for Mesa's CPU driver, whose
 * device and driver call themselves llvmpipe (users know it as lavapipe). */
static int vkdev_name_matches(VkPhysicalDevice pd, const VkPhysicalDeviceProperties *p, const char *want) {
    VkPhysicalDeviceDriverProperties drv;
    VkPhysicalDeviceProperties2 p2;
    if (vkdev_contains(p->deviceName, want)) return 1;
    if (p->apiVersion < VK_API_VERSION_1_2) return 0;
    vkdev_struct(&drv, sizeof drv, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
    vkdev_struct(&p2, sizeof p2, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    p2.pNext = &drv;
    vkGetPhysicalDeviceProperties2(pd, &p2);
    if (vkdev_contains(drv.driverName, want)) return 1;
    return drv.driverID == VK_DRIVER_ID_MESA_LLVMPIPE && vkdev_contains("lavapipe", want);
}

/* options->device_index, else DIFKERN_VULKAN_DEVICE (a decimal index, or text
 * that vkdev_name_matches), else the best usable device (discrete first). */
static dk_status vkdev_select(dk_context *ctx, VkInstance inst, int32_t want_index, int automatic,
                              VkPhysicalDevice *out) {
    VkPhysicalDevice devs[16];
    uint32_t n = 16, i;
    const char *env = ctx->knobs.vulkan_device;
    char seen[512] = "";
    int best = -1, best_rank = -1, options_index = want_index >= 0;
    VkResult r = vkEnumeratePhysicalDevices(inst, &n, devs);
    if ((r != VK_SUCCESS && r != VK_INCOMPLETE) || n == 0)
        return dk__fail(ctx, DK_ERR_BACKEND_UNAVAILABLE, "vulkan backend: no Vulkan device (driver) found");
    if (want_index < 0 && env && env[0]) {
        char *end;
        long v = strtol(env, &end, 10);
        if (!*end) want_index = (int32_t)(v < 0 || v > 1000 ? 1000 : v);
    }
    for (i = 0; i < n; i++) {
        VkPhysicalDeviceProperties p;
        const char *why = vkdev_unusable(devs[i]);
        int rank;
        vkGetPhysicalDeviceProperties(devs[i], &p);
        if (strlen(seen) + strlen(p.deviceName) + 64 < sizeof seen)
            snprintf(seen + strlen(seen), sizeof seen - strlen(seen), "%s#%u %s (%s)", seen[0] ? ", " : "", i,
                     p.deviceName, why ? why : "usable");
        if (want_index >= 0) {
            if ((uint32_t)want_index != i) continue;
            if (why)
                return dk__fail(ctx, DK_ERR_BACKEND_UNAVAILABLE, "vulkan backend: device #%u '%s' is not usable: %s", i,
                                p.deviceName, why);
            *out = devs[i];
            return DK_OK;
        }
        if (why) continue;
        if (env && env[0] && !vkdev_name_matches(devs[i], &p, env)) continue;
        rank = vkdev_type_rank(p.deviceType);
        if (rank > best_rank) best = (int)i, best_rank = rank;
    }
    if (want_index >= 0)
        return dk__fail(ctx, DK_ERR_BACKEND_UNAVAILABLE, "vulkan backend: device index %d%s out of range (devices: %s)",
                        (int)want_index, options_index ? "" : " (DIFKERN_VULKAN_DEVICE)", seen);
    if (best < 0)
        return dk__fail(ctx, DK_ERR_BACKEND_UNAVAILABLE, "vulkan backend: no usable Vulkan device%s%s%s (devices: %s)",
                        env && env[0] ? " matching DIFKERN_VULKAN_DEVICE='" : "", env && env[0] ? env : "",
                        env && env[0] ? "'" : "", seen);
    /* AUTO and only a CPU implementation (lavapipe): the CPU backend is faster. */
    if (automatic && want_index < 0 && !(env && env[0]) && best_rank == vkdev_type_rank(VK_PHYSICAL_DEVICE_TYPE_CPU))
        return dk__fail(ctx, DK_ERR_BACKEND_UNAVAILABLE,
                        "vulkan backend: only a CPU Vulkan device (%s); AUTO prefers the cpu backend "
                        "(ask for DK_BACKEND_VULKAN to use it)", seen);
    *out = devs[best];
    return DK_OK;
}

static dk_status vkdev_create_instance(dk_context *ctx, dk_vk_state *s) {
    VkApplicationInfo app;
    VkInstanceCreateInfo ci;
    const char *layers[1], *exts[1];
    uint32_t nlayers = 0, nexts = 0;
    int validation = (int)ctx->knobs.vulkan_validation;
    VkResult r;
    if (volkGetInstanceVersion() < VK_API_VERSION_1_2)
        return dk__fail(ctx, DK_ERR_BACKEND_UNAVAILABLE, "vulkan backend: the Vulkan loader is older than 1.2");
    if (validation && vkdev_has_layer("VK_LAYER_KHRONOS_validation")) layers[nlayers++] = "VK_LAYER_KHRONOS_validation";
    if (validation && vkdev_has_instance_ext(VK_EXT_DEBUG_UTILS_EXTENSION_NAME)) exts[nexts++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    memset(&app, 0, sizeof app);
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "difkern";
    app.pEngineName = "difkern";
    app.engineVersion = dk_version();
    app.apiVersion = VK_API_VERSION_1_2;
    memset(&ci, 0, sizeof ci);
    ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    ci.pApplicationInfo = &app;
    ci.enabledLayerCount = nlayers;
    ci.ppEnabledLayerNames = layers;
    ci.enabledExtensionCount = nexts;
    ci.ppEnabledExtensionNames = exts;
    r = vkCreateInstance(&ci, NULL, &s->instance);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
        return dk__fail(ctx, DK_ERR_BACKEND_UNAVAILABLE,
                        "vulkan backend: no Vulkan driver (ICD) is installed (vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER)");
    if (r != VK_SUCCESS)
        return dk__fail(ctx, DK_ERR_BACKEND_UNAVAILABLE, "vulkan backend: vkCreateInstance failed (VkResult %d)", (int)r);
    s->own_instance = 1;
    volkLoadInstanceOnly(s->instance);
    if (nexts) {
        VkDebugUtilsMessengerCreateInfoEXT mi;
        memset(&mi, 0, sizeof mi);
        mi.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
        mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
        mi.pfnUserCallback = vkdev_messenger_cb;
        mi.pUserData = s;
        if (vkCreateDebugUtilsMessengerEXT && vkCreateDebugUtilsMessengerEXT(s->instance, &mi, NULL, &s->messenger) != VK_SUCCESS)
            s->messenger = VK_NULL_HANDLE;
    }
    return DK_OK;
}

/* Zeroes feature structure f (size bytes), sets its type and appends it to
 * the pNext chain whose last link is **tail; the caller sets the features. */
static void vkdev_append(VkBaseOutStructure ***tail, void *f, size_t size, VkStructureType type) {
    VkBaseOutStructure *b = (VkBaseOutStructure *)f;
    vkdev_struct(f, size, type);
    **tail = b;
    *tail = &b->pNext;
}

static dk_status vkdev_create_device(dk_context *ctx, dk_vk_state *s) {
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi;
    VkPhysicalDeviceVulkan11Features f11;
    VkPhysicalDeviceVulkan12Features f12;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV cm_nv;
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR cm_khr;
    VkPhysicalDeviceShaderBfloat16FeaturesKHR bf;
    VkPhysicalDeviceSubgroupSizeControlFeatures scf;
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pe;
    VkPhysicalDevicePipelineRobustnessFeaturesEXT pr;
    VkPhysicalDeviceFeatures2 f2;
    VkDeviceCreateInfo ci;
    const char *exts[12];
    uint32_t nexts = 0;
    VkBaseOutStructure **chain;
    VkResult r;
    if (!vkdev_compute_family(s->physical, &s->queue_family))
        return dk__fail(ctx, DK_ERR_BACKEND_UNAVAILABLE, "vulkan backend: the device has no compute queue");
    memset(&qi, 0, sizeof qi);
    qi.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
    qi.queueFamilyIndex = s->queue_family;
    qi.queueCount = 1;
    qi.pQueuePriorities = &prio;
    exts[nexts++] = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
    memset(&f11, 0, sizeof f11);
    f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    f11.storageBuffer16BitAccess = VK_TRUE;
    memset(&f2, 0, sizeof f2);
    f2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    f2.pNext = &f11;
    chain = (VkBaseOutStructure **)&f11.pNext;
    vkdev_pick_coopmat(ctx, s);
    if (s->coopmat || s->coopmat_bf16) {
        vkdev_append(&chain, &f12, sizeof f12, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
        f12.shaderFloat16 = VK_TRUE;
        f12.vulkanMemoryModel = VK_TRUE;
    }
    if (s->coopmat_khr || s->coopmat_bf16) {
        vkdev_append(&chain, &cm_khr, sizeof cm_khr, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR);
        cm_khr.cooperativeMatrix = VK_TRUE;
        exts[nexts++] = VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME;
    }
    if (s->coopmat && !s->coopmat_khr) {
        vkdev_append(&chain, &cm_nv, sizeof cm_nv, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
        cm_nv.cooperativeMatrix = VK_TRUE;
        exts[nexts++] = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
    }
    if (s->coopmat_bf16) {
        vkdev_append(&chain, &bf, sizeof bf, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR);
        bf.shaderBFloat16Type = VK_TRUE;
        bf.shaderBFloat16CooperativeMatrix = VK_TRUE;
        exts[nexts++] = VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME;
    }
    if (s->cm_wave32) {
        vkdev_append(&chain, &scf, sizeof scf, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES);
        scf.subgroupSizeControl = VK_TRUE;
        scf.computeFullSubgroups = VK_TRUE;
    }
    s->eager = (int)ctx->knobs.vulkan_eager;
    s->eager_at = DK_VK_EAGER_DISPATCHES;
    s->pipeline_stats = ctx->knobs.vulkan_pipeline_stats &&
                        vkdev_has_device_ext(s->physical, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
    if (s->pipeline_stats) {
        vkdev_append(&chain, &pe, sizeof pe, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR);
        pe.pipelineExecutableInfo = VK_TRUE;
        exts[nexts++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
    }
    /* Storage-buffer loads without the driver's bounds checks (VK_EXT_pipeline_robustness,
     * vk_pipeline.c): NVIDIA's driver checks every access by default, though the feature
     * robustBufferAccess is off; the core validates every view against its buffer and the
     * shaders index inside their views.  DIFKERN_VULKAN_CHECKED_BUFFERS=1: keep the checks. */
    s->unchecked_buffers = 0;
    if (vkdev_has_device_ext(s->physical, VK_EXT_PIPELINE_ROBUSTNESS_EXTENSION_NAME) &&
        !ctx->knobs.vulkan_checked_buffers) {
        VkPhysicalDevicePipelineRobustnessFeaturesEXT q;
        vkdev_struct(&q, sizeof q, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT);
        vkdev_features(s->physical, &q);
        if (q.pipelineRobustness) {
            vkdev_append(&chain, &pr, sizeof pr, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_ROBUSTNESS_FEATURES_EXT);
            pr.pipelineRobustness = VK_TRUE;
            exts[nexts++] = VK_EXT_PIPELINE_ROBUSTNESS_EXTENSION_NAME;
            s->unchecked_buffers = 1;
        }
    }
    /* dk_host_alloc imports difkern's own host blocks (pinning them is several
     * times faster than allocating host-visible memory); DIFKERN_VULKAN_HOST_IMPORT=0: off */
    s->host_import_align = 0;
    if (vkdev_has_device_ext(s->physical, VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME) &&
        ctx->knobs.vulkan_host_import) {
        VkPhysicalDeviceExternalMemoryHostPropertiesEXT hp;
        VkPhysicalDeviceProperties2 p2;
        vkdev_struct(&hp, sizeof hp, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_EXTERNAL_MEMORY_HOST_PROPERTIES_EXT);
        vkdev_struct(&p2, sizeof p2, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
        p2.pNext = &hp;
        vkGetPhysicalDeviceProperties2(s->physical, &p2);
        s->host_import_align = hp.minImportedHostPointerAlignment;
        if (s->host_import_align) exts[nexts++] = VK_EXT_EXTERNAL_MEMORY_HOST_EXTENSION_NAME;
    }
    memset(&ci, 0, sizeof ci);
    ci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
    ci.pNext = &f2;
    ci.queueCreateInfoCount = 1;
    ci.pQueueCreateInfos = &qi;
    ci.enabledExtensionCount = nexts;
    ci.ppEnabledExtensionNames = exts;
    r = vkCreateDevice(s->physical, &ci, NULL, &s->device);
    if (r != VK_SUCCESS)
        return dk__fail(ctx, DK_ERR_BACKEND_UNAVAILABLE, "vulkan backend: vkCreateDevice failed (VkResult %d)", (int)r);
    s->own_device = 1;
    volkLoadDeviceTable(&s->vk, s->device);
    s->vk.vkGetDeviceQueue(s->device, s->queue_family, 0, &s->queue);
    return DK_OK;
}

/* Memory types: device-local for buffers, host-visible+coherent for staging. */
static dk_status vkdev_memory_types(dk_context *ctx, dk_vk_state *s) {
    VkBufferCreateInfo bi;
    VkBuffer probe;
    VkMemoryRequirements req;
    uint32_t i;
    int dev = -1, host = -1, cached = -1;
    memset(&bi, 0, sizeof bi);
    bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
    bi.size = 4096;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    if (s->vk.vkCreateBuffer(s->device, &bi, NULL, &probe) != VK_SUCCESS)
        return dk__fail(ctx, DK_ERR_BACKEND_UNAVAILABLE, "vulkan backend: cannot create a probe buffer");
    s->vk.vkGetBufferMemoryRequirements(s->device, probe, &req);
    s->vk.vkDestroyBuffer(s->device, probe, NULL);
    vkGetPhysicalDeviceMemoryProperties(s->physical, &s->memprops);
    for (i = 0; i < s->memprops.memoryTypeCount; i++) {
        VkMemoryPropertyFlags f = s->memprops.memoryTypes[i].propertyFlags;
        if (!(req.memoryTypeBits & (1u << i))) continue;
        if (dev < 0 && (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)) dev = (int)i;
        if (host < 0 && (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT))
            host = (int)i;
        /* Staging is read back by the CPU (downloads): prefer cached system
         * memory, since CPU reads of write-combined or BAR memory crawl. */
        if (cached < 0 && (f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) &&
            (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) && !(f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
            cached = (int)i;
    }
    if (cached >= 0) host = cached;
    if (dev < 0) dev = host;
    if (dev < 0 || host < 0)
        return dk__fail(ctx, DK_ERR_BACKEND_UNAVAILABLE, "vulkan backend: no suitable memory types");
    s->device_type_index = (uint32_t)dev;
    s->host_type_index = (uint32_t)host;
    return DK_OK;
}

/* volk keeps the loader and the instance-level entry points in process-wide
 * globals (volkInitialize, volkLoadInstanceOnly): contexts are created and
 * destroyed one at a time, so that threads making their own contexts never
 * write those globals while another reads them.  Device-level calls go through
 * each context's own table (s->vk) and need no lock. */
static once_flag vkdev_global_once = ONCE_FLAG_INIT;
static mtx_t vkdev_global_lock;
static int vkdev_global_lock_ok;

static void vkdev_global_init(void) { vkdev_global_lock_ok = mtx_init(&vkdev_global_lock, mtx_plain) == thrd_success; }

static int vkdev_global_enter(void) {
    call_once(&vkdev_global_once, vkdev_global_init);
    return vkdev_global_lock_ok && mtx_lock(&vkdev_global_lock) == thrd_success;
}

static void vkdev_global_leave(void) { (void)mtx_unlock(&vkdev_global_lock); }

static void vkdev_destroy_locked(dk_context *ctx) {
    dk_vk_state *s = dk__vk(ctx);
    int i;
    if (!s) return;
    if (s->device) {
        if (!s->lost) s->vk.vkQueueWaitIdle(s->queue);
        dk__vk_trace_print(s);
        dk__vk_pipelines_destroy(s);
        dk__vk_frames_destroy(s);
        if (s->scratch.block) dk__vk_free_range(s, s->scratch.block, s->scratch.alloc_offset, s->scratch.alloc_size);
        for (i = 0; i < 3; i++)
            if (s->stage[i].block) dk__vk_free_range(s, s->stage[i].block, s->stage[i].alloc_offset, s->stage[i].alloc_size);
        dk__vk_memory_destroy(s);
        if (s->query_pool) s->vk.vkDestroyQueryPool(s->device, s->query_pool, NULL);
        if (s->own_device) s->vk.vkDestroyDevice(s->device, NULL);
    }
    if (s->messenger) vkDestroyDebugUtilsMessengerEXT(s->instance, s->messenger, NULL);
    if (s->own_instance && s->instance) vkDestroyInstance(s->instance, NULL);
    free(s->dirty);
    if (s->msg_lock_ok) mtx_destroy(&s->msg_lock);
    free(s);
    ctx->backend = NULL;
}

static void vkdev_destroy(dk_context *ctx) {
    int locked = vkdev_global_enter();
    vkdev_destroy_locked(ctx);
    if (locked) vkdev_global_leave();
}

static dk_status vkdev_create_locked(dk_context *ctx, const dk_context_options *o) {
    dk_vk_state *s;
    dk_status st;
    VkPhysicalDeviceSubgroupProperties sg;
    VkPhysicalDeviceProperties2 p2;
    if (o->external_stream)
        return dk__fail(ctx, DK_ERR_UNSUPPORTED, "vulkan backend: options->external_stream is for the HIP backend");
    if (volkInitialize() != VK_SUCCESS)
        return dk__fail(ctx, DK_ERR_BACKEND_UNAVAILABLE, "vulkan backend: no Vulkan loader (libvulkan.so.1) found");
    s = (dk_vk_state *)calloc(1, sizeof *s);
    if (!s) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "vulkan backend: out of host memory");
    ctx->backend = s;
    s->msg_lock_ok = mtx_init(&s->msg_lock, mtx_plain) == thrd_success;
    s->compile.want = (uint32_t)(o->num_threads     ? o->num_threads
                                 : ctx->knobs.threads ? (int32_t)ctx->knobs.threads
                                                      : dk__core_count());
    if (s->compile.want > DK_VK_COMPILE_THREADS) s->compile.want = DK_VK_COMPILE_THREADS;
    s->epoch = 1;
    s->force_portable = (int)ctx->knobs.vulkan_portable;
    if (o->vk_device) {
        /* The caller's device: it must have VK_KHR_push_descriptor and
         * storageBuffer16BitAccess enabled. */
        if (!o->vk_instance || !o->vk_physical_device || !o->vk_queue) {
            vkdev_destroy_locked(ctx);
            return dk__fail(ctx, DK_ERR_INVALID_ARGUMENT,
                            "vulkan backend: options->vk_device needs vk_instance, vk_physical_device and vk_queue too");
        }
        s->instance = (VkInstance)o->vk_instance;
        s->physical = (VkPhysicalDevice)o->vk_physical_device;
        s->device = (VkDevice)o->vk_device;
        s->queue = (VkQueue)o->vk_queue;
        s->queue_family = o->vk_queue_family;
        volkLoadInstanceOnly(s->instance);
        volkLoadDeviceTable(&s->vk, s->device);
        if (!s->vk.vkCmdPushDescriptorSetKHR) {
            vkdev_destroy_locked(ctx);
            return dk__fail(ctx, DK_ERR_UNSUPPORTED,
                            "vulkan backend: options->vk_device must have VK_KHR_push_descriptor enabled");
        }
    } else {
        st = vkdev_create_instance(ctx, s);
        if (st == DK_OK) st = vkdev_select(ctx, s->instance, o->device_index, o->backend == DK_BACKEND_AUTO, &s->physical);
        if (st == DK_OK) st = vkdev_create_device(ctx, s);
        if (st != DK_OK) {
            char msg[1024];
            dk__strlcpy(msg, ctx->error, sizeof msg);
            vkdev_destroy_locked(ctx);
            return dk__fail(ctx, st, "%s", msg);
        }
    }
    vkGetPhysicalDeviceProperties(s->physical, &s->props);
    memset(&sg, 0, sizeof sg);
    sg.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    memset(&p2, 0, sizeof p2);
    p2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
    p2.pNext = &sg;
    vkGetPhysicalDeviceProperties2(s->physical, &p2);
    s->subgroup_size = sg.subgroupSize;
    st = vkdev_memory_types(ctx, s);
    if (st == DK_OK) st = dk__vk_frames_create(ctx);
    if (st == DK_OK) st = dk__vk_pipelines_create(ctx, o->pipeline_cache_path);
    if (st != DK_OK) {
        char msg[1024];
        dk__strlcpy(msg, ctx->error, sizeof msg);
        vkdev_destroy_locked(ctx);
        return dk__fail(ctx, st, "%s", msg);
    }
    dk__strlcpy(ctx->device_name, s->props.deviceName, sizeof ctx->device_name);
    snprintf(ctx->description, sizeof ctx->description,
             "vulkan backend: %s (Vulkan %u.%u, subgroup %u), portable fp32-accumulate kernels%s%s",
             s->props.deviceName, VK_API_VERSION_MAJOR(s->props.apiVersion), VK_API_VERSION_MINOR(s->props.apiVersion),
             s->subgroup_size,
             !s->coopmat       ? ""
             : s->coopmat_bf16 ? " + KHR cooperative-matrix f16/bf16 conv and attention"
             : s->coopmat_khr  ? " + KHR cooperative-matrix f16 conv and attention"
                               : " + NV cooperative-matrix f16 conv and attention",
             s->messenger ? ", validation messenger on" : "");
    return DK_OK;
}

static dk_status vkdev_create(dk_context *ctx, const dk_context_options *o) {
    dk_status st;
    if (!vkdev_global_enter())
        return dk__fail(ctx, DK_ERR_INTERNAL, "vulkan backend: cannot take the process-wide Vulkan lock");
    st = vkdev_create_locked(ctx, o);
    vkdev_global_leave();
    return st;
}

const dk_backend_ops dk__vulkan_backend = {
    .kind = DK_BACKEND_VULKAN,
    .name = "vulkan",
    .create = vkdev_create,
    .destroy = vkdev_destroy,
    .sync = dk__vk_sync,
    .buffer_create = dk__vk_buffer_create,
    .buffer_wrap = dk__vk_buffer_wrap,
    .buffer_destroy = dk__vk_buffer_destroy,
    .buffer_upload = dk__vk_upload,
    .buffer_download = dk__vk_download,
    .buffer_fill = dk__vk_fill,
    .timer_begin = dk__vk_timer_begin,
    .timer_end = dk__vk_timer_end,
    .prepare_weight = dk__vk_prepare_weight,
    .conv2d = dk__vk_conv2d,
    .conv_transpose2d = dk__vk_conv_transpose2d,
    .matmul = dk__vk_matmul,
    .group_norm = dk__vk_group_norm,
    .layer_norm = dk__vk_layer_norm,
    .rms_norm = dk__vk_rms_norm,
    .attention = dk__vk_attention,
    .add = dk__vk_add,
    .upsample_nearest = dk__vk_upsample_nearest,
    .convert = dk__vk_convert,
    .host_alloc = dk__vk_host_alloc,
    .host_free = dk__vk_host_free,
    .release_scratch = dk__vk_release_scratch,
    /* .conv_channel_multiple = NULL: the cooperative-matrix convs need 32 channels, as the fast path */
    .conv3d_in_place = dk__vk_conv3d_in_place, /* the time convs with a cache; the rest stage (src/conv3d.c) */
};

#undef DK_VK_CM_SUBGROUP_OPS
