/* What the Vulkan loader and drivers say about each device, asked directly
 * through volk (a separate instance from difkern's, destroyed before any
 * context is made): the facts the library's family choice rests on
 * (backends/vulkan/vk_device.c), read independently so that the report shows
 * them even where the library refuses a device. */
#include "doctor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *dd_vk_type_name(int type) {
    switch (type) {
    case 1: return "integrated GPU";
    case 2: return "discrete GPU";
    case 3: return "virtual GPU";
    case 4: return "CPU";
    default: return "other";
    }
}

/* VkComponentTypeKHR values (the NV enum shares them). */
const char *dd_vk_component_name(int32_t type, char *buf, size_t cap) {
    static const char *const names[] = {"f16", "f32", "f64", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64"};
    if (type >= 0 && type <= 10) return names[type];
    if (type == 1000141000) return "bf16";
    if (type == 1000491000) return "s8packed";
    if (type == 1000491001) return "u8packed";
    if (type == 1000491002) return "e4m3";
    if (type == 1000491003) return "e5m2";
    snprintf(buf, cap, "type%d", (int)type);
    return buf;
}

void dd_vk_version(uint32_t v, char *buf, size_t cap) {
    snprintf(buf, cap, "%u.%u.%u", (v >> 22) & 0x7fu, (v >> 12) & 0x3ffu, v & 0xfffu);
}

/* driverVersion is vendor-encoded: NVIDIA 10.8.8.6 bits, Intel on Windows
 * 18.14, everyone else VK_MAKE_API_VERSION. */
void dd_vk_driver_version(const dd_vk_device *d, char *buf, size_t cap) {
    uint32_t v = d->driver_version;
    if (d->vendor_id == 0x10de)
        snprintf(buf, cap, "%u.%u.%u", (v >> 22) & 0x3ffu, (v >> 14) & 0xffu, (v >> 6) & 0xffu);
    else
        dd_vk_version(v, buf, cap);
}

#ifndef DD_HAVE_VULKAN

void dd_probe_vulkan(dd_vk_probe *p) {
    memset(p, 0, sizeof *p);
    dd_copy(p->error, sizeof p->error, "this difkern-doctor was built without the Vulkan headers");
}

#else

#include <volk.h>

/* VK_KHR_cooperative_matrix and VK_KHR_shader_bfloat16 for headers older than
 * them (Debian 12's are 1.3.239); the values are the registry's. */
#define DD_ST_CM_FEATURES_KHR ((VkStructureType)1000506000)
#define DD_ST_CM_PROPERTIES_KHR ((VkStructureType)1000506001)
#define DD_ST_BF16_FEATURES ((VkStructureType)1000141000)
typedef struct dd_cm_features_khr {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix, cooperativeMatrixRobustBufferAccess;
} dd_cm_features_khr;
typedef struct dd_cm_properties_khr {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    int32_t AType, BType, CType, ResultType;
    VkBool32 saturatingAccumulation;
    int32_t scope;
} dd_cm_properties_khr;
typedef struct dd_bf16_features {
    VkStructureType sType;
    void *pNext;
    VkBool32 shaderBFloat16Type, shaderBFloat16DotProduct, shaderBFloat16CooperativeMatrix;
} dd_bf16_features;
typedef VkResult(VKAPI_PTR *dd_pfn_cm_props_khr)(VkPhysicalDevice, uint32_t *, dd_cm_properties_khr *);

static void dd_struct(void *f, size_t size, VkStructureType type) {
    memset(f, 0, size);
    ((VkBaseOutStructure *)f)->sType = type;
}

static void dd_features(VkPhysicalDevice pd, void *first) {
    VkPhysicalDeviceFeatures2 f2;
    dd_struct(&f2, sizeof f2, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
    f2.pNext = first;
    vkGetPhysicalDeviceFeatures2(pd, &f2);
}

static int dd_has_ext(const VkExtensionProperties *e, uint32_t n, const char *name) {
    uint32_t i;
    for (i = 0; i < n; i++)
        if (!strcmp(e[i].extensionName, name)) return 1;
    return 0;
}

static void dd_probe_device(VkInstance inst, VkPhysicalDevice pd, uint32_t index, dd_vk_device *d) {
    VkPhysicalDeviceProperties2 p2;
    VkPhysicalDeviceDriverProperties drv;
    VkPhysicalDeviceSubgroupProperties sg;
    VkPhysicalDeviceSubgroupSizeControlProperties sc;
    VkPhysicalDeviceSubgroupSizeControlFeatures scf;
    VkPhysicalDeviceVulkan11Features f11;
    VkPhysicalDeviceVulkan12Features f12;
    VkPhysicalDeviceMemoryProperties mem;
    VkExtensionProperties *ext = NULL;
    uint32_t next = 0, i, qn = 0;
    int has_compute = 0;
    memset(d, 0, sizeof *d);
    d->index = index;
    if (vkEnumerateDeviceExtensionProperties(pd, NULL, &next, NULL) == VK_SUCCESS && next) {
        ext = (VkExtensionProperties *)calloc(next, sizeof *ext);
        if (!ext || vkEnumerateDeviceExtensionProperties(pd, NULL, &next, ext) != VK_SUCCESS) next = 0;
    }
    dd_struct(&p2, sizeof p2, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
    dd_struct(&drv, sizeof drv, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES);
    dd_struct(&sg, sizeof sg, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES);
    dd_struct(&sc, sizeof sc, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES);
    vkGetPhysicalDeviceProperties(pd, &p2.properties);
    {
        int v13 = p2.properties.apiVersion >= VK_API_VERSION_1_3 ||
                  dd_has_ext(ext, next, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
        p2.pNext = &drv;
        drv.pNext = &sg;
        sg.pNext = v13 ? &sc : NULL;
        vkGetPhysicalDeviceProperties2(pd, &p2);
        if (v13) {
            dd_struct(&scf, sizeof scf, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES);
            dd_features(pd, &scf);
            d->subgroup_size_control = scf.subgroupSizeControl != 0;
            d->compute_full_subgroups = scf.computeFullSubgroups != 0;
            d->subgroup_min = sc.minSubgroupSize;
            d->subgroup_max = sc.maxSubgroupSize;
            d->required_size_compute = (sc.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
        }
    }
    dd_copy(d->name, sizeof d->name, p2.properties.deviceName);
    d->vendor_id = p2.properties.vendorID;
    d->device_id = p2.properties.deviceID;
    d->api_version = p2.properties.apiVersion;
    d->driver_version = p2.properties.driverVersion;
    d->type = (int)p2.properties.deviceType;
    d->driver_id = (int)drv.driverID;
    dd_copy(d->driver_name, sizeof d->driver_name, drv.driverName);
    dd_copy(d->driver_info, sizeof d->driver_info, drv.driverInfo);
    snprintf(d->conformance, sizeof d->conformance, "%u.%u.%u.%u", drv.conformanceVersion.major,
             drv.conformanceVersion.minor, drv.conformanceVersion.subminor, drv.conformanceVersion.patch);
    d->subgroup_size = sg.subgroupSize;
    d->subgroup_ops = sg.supportedOperations;
    d->subgroup_stages = sg.supportedStages;

    dd_struct(&f11, sizeof f11, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
    dd_struct(&f12, sizeof f12, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
    if (p2.properties.apiVersion >= VK_API_VERSION_1_2) {
        f11.pNext = &f12;
        dd_features(pd, &f11);
    }
    d->storage16 = f11.storageBuffer16BitAccess != 0;
    d->f16_arith = f12.shaderFloat16 != 0;
    d->memory_model = f12.vulkanMemoryModel != 0;
    d->push_descriptor = dd_has_ext(ext, next, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);

    d->khr_ext = dd_has_ext(ext, next, "VK_KHR_cooperative_matrix");
    d->bf16_ext = dd_has_ext(ext, next, "VK_KHR_shader_bfloat16");
    if (d->bf16_ext) {
        dd_bf16_features bf;
        dd_struct(&bf, sizeof bf, DD_ST_BF16_FEATURES);
        dd_features(pd, &bf);
        d->bf16_type = bf.shaderBFloat16Type != 0;
        d->bf16_coopmat = bf.shaderBFloat16CooperativeMatrix != 0;
    }
    if (d->khr_ext) {
        dd_cm_features_khr cm;
        dd_pfn_cm_props_khr get =
            (dd_pfn_cm_props_khr)vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
        dd_struct(&cm, sizeof cm, DD_ST_CM_FEATURES_KHR);
        dd_features(pd, &cm);
        d->khr_feature = cm.cooperativeMatrix != 0;
        if (get) {
            dd_cm_properties_khr props[64];
            uint32_t n = 64;
            for (i = 0; i < 64; i++) dd_struct(&props[i], sizeof props[i], DD_ST_CM_PROPERTIES_KHR);
            if (get(pd, &n, props) >= 0)
                for (i = 0; i < n && i < 64; i++) {
                    dd_vk_cm *c = &d->khr[d->n_khr++];
                    c->m = props[i].MSize, c->n = props[i].NSize, c->k = props[i].KSize;
                    c->a = props[i].AType, c->b = props[i].BType, c->c = props[i].CType;
                    c->result = props[i].ResultType, c->scope = props[i].scope;
                    c->saturating = props[i].saturatingAccumulation != 0;
                }
        }
    }
    d->nv_ext = dd_has_ext(ext, next, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    if (d->nv_ext) {
        VkPhysicalDeviceCooperativeMatrixFeaturesNV cm;
        PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV get =
            (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)vkGetInstanceProcAddr(
                inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
        dd_struct(&cm, sizeof cm, VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
        dd_features(pd, &cm);
        d->nv_feature = cm.cooperativeMatrix != 0;
        if (get) {
            VkCooperativeMatrixPropertiesNV props[32];
            uint32_t n = 32;
            for (i = 0; i < 32; i++) dd_struct(&props[i], sizeof props[i], VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV);
            if (get(pd, &n, props) >= 0)
                for (i = 0; i < n && i < 32; i++) {
                    dd_vk_cm *c = &d->nv[d->n_nv++];
                    c->m = props[i].MSize, c->n = props[i].NSize, c->k = props[i].KSize;
                    c->a = (int32_t)props[i].AType, c->b = (int32_t)props[i].BType, c->c = (int32_t)props[i].CType;
                    c->result = (int32_t)props[i].DType, c->scope = (int32_t)props[i].scope;
                }
        }
    }
    vkGetPhysicalDeviceMemoryProperties(pd, &mem);
    for (i = 0; i < mem.memoryHeapCount && i < 16; i++) {
        d->heap_size[i] = mem.memoryHeaps[i].size;
        d->heap_flags[i] = mem.memoryHeaps[i].flags;
    }
    d->n_heaps = (int)i;
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &qn, NULL);
    if (qn) {
        VkQueueFamilyProperties *q = (VkQueueFamilyProperties *)calloc(qn, sizeof *q);
        if (q) {
            vkGetPhysicalDeviceQueueFamilyProperties(pd, &qn, q);
            for (i = 0; i < qn; i++) has_compute |= (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) != 0;
            free(q);
        }
    }
    /* the library's device rules (vk_device.c, vkdev_unusable), same order */
    if (d->api_version < VK_API_VERSION_1_2) d->unusable = "Vulkan < 1.2";
    else if (!d->push_descriptor) d->unusable = "no VK_KHR_push_descriptor";
    else if (!d->storage16) d->unusable = "no storageBuffer16BitAccess";
    else if (!has_compute) d->unusable = "no compute queue";
    free(ext);
}

void dd_probe_vulkan(dd_vk_probe *p) {
    VkApplicationInfo app;
    VkInstanceCreateInfo ci;
    VkInstance inst = VK_NULL_HANDLE;
    VkPhysicalDevice devs[DD_MAX_VK_DEVICES];
    uint32_t n = DD_MAX_VK_DEVICES, i;
    VkResult r;
    memset(p, 0, sizeof *p);
    p->compiled = 1;
    if (volkInitialize() != VK_SUCCESS) {
        dd_copy(p->error, sizeof p->error, "no Vulkan loader (libvulkan.so.1) found");
        return;
    }
    p->loader = 1;
    p->loader_version = volkGetInstanceVersion();
    memset(&app, 0, sizeof app);
    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
    app.pApplicationName = "difkern-doctor";
    app.apiVersion = p->loader_version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_1;
    memset(&ci, 0, sizeof ci);
    ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
    ci.pApplicationInfo = &app;
    if (p->loader_version < VK_API_VERSION_1_1) {
        dd_copy(p->error, sizeof p->error, "the Vulkan loader is older than 1.1");
        return;
    }
    r = vkCreateInstance(&ci, NULL, &inst);
    if (r != VK_SUCCESS) {
        snprintf(p->error, sizeof p->error, "vkCreateInstance failed (VkResult %d%s)", (int)r,
                 r == VK_ERROR_INCOMPATIBLE_DRIVER ? ": no Vulkan driver (ICD) is installed" : "");
        return;
    }
    volkLoadInstanceOnly(inst);
    r = vkEnumeratePhysicalDevices(inst, &n, devs);
    if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
        snprintf(p->error, sizeof p->error, "vkEnumeratePhysicalDevices failed (VkResult %d)", (int)r);
        n = 0;
    } else if (n == 0) {
        dd_copy(p->error, sizeof p->error, "the loader found no Vulkan device");
    }
    for (i = 0; i < n; i++) dd_probe_device(inst, devs[i], i, &p->dev[i]);
    p->ndev = (int)n;
    vkDestroyInstance(inst, NULL);
}

#endif
