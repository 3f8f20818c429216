/* Probe: GEMM with workgroup-scope cooperative matrices (VK_NV_cooperative_matrix2)
 * on the H100's Vulkan driver.  C[M,N] (f32) = A[M,K] (f16, row-major) x B[N,K]^T.
 * usage: probe SPV M N K BM BN WG [iters] */
#define VOLK_IMPLEMENTATION
#include <volk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#define CK(x) do { VkResult r_ = (x); if (r_ != VK_SUCCESS) { fprintf(stderr, "%s:%d %s -> %d\n", __FILE__, __LINE__, #x, r_); exit(1); } } while (0)

typedef struct {
    VkStructureType sType; void *pNext;
    VkBool32 wgScope, flexDims, reductions, conversions, perElem, tensorAddr, blockLoads;
} cm2_features;
typedef struct {
    VkStructureType sType; void *pNext;
    uint32_t wgMaxSize, flexMaxDim, wgReservedSmem;
} cm2_props;
typedef struct {
    VkStructureType sType; void *pNext;
    uint32_t MG, NG, KG; uint32_t AT, BT, CT, RT; VkBool32 sat; uint32_t scope; uint32_t wgInv;
} cm2_flex;
typedef struct { VkStructureType sType; void *pNext; VkBool32 cm, robust; } khr_cm_features;
typedef VkResult (*PFN_flex)(VkPhysicalDevice, uint32_t *, cm2_flex *);

static VkDevice dev;
static VkPhysicalDevice pd;
static uint32_t find_mem(uint32_t bits, VkMemoryPropertyFlags f) {
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & f) == f) return i;
    fprintf(stderr, "no memory type\n");
    exit(1);
}
static void mkbuf(VkDeviceSize sz, VkMemoryPropertyFlags f, VkBuffer *b, VkDeviceMemory *m) {
    VkBufferCreateInfo bi = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = sz;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    CK(vkCreateBuffer(dev, &bi, NULL, b));
    VkMemoryRequirements mr;
    vkGetBufferMemoryRequirements(dev, *b, &mr);
    VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = mr.size;
    ai.memoryTypeIndex = find_mem(mr.memoryTypeBits, f);
    CK(vkAllocateMemory(dev, &ai, NULL, m));
    CK(vkBindBufferMemory(dev, *b, *m, 0));
}
static uint16_t f2h(float f) {
    uint32_t x; memcpy(&x, &f, 4);
    uint32_t s = (x >> 16) & 0x8000, e = (x >> 23) & 0xff, m = x & 0x7fffff;
    if (e < 113) return (uint16_t)s;
    return (uint16_t)(s | ((e - 112) << 10) | (m >> 13));
}
static float h2f(uint16_t h) {
    uint32_t s = (h & 0x8000u) << 16, e = (h >> 10) & 31, m = h & 1023, x;
    if (e == 0) x = s; else x = s | ((e + 112) << 23) | (m << 13);
    float f; memcpy(&f, &x, 4); return f;
}

int main(int argc, char **argv) {
    if (argc < 8) { fprintf(stderr, "usage: probe SPV M N K BM BN WG [iters]\n"); return 2; }
    uint32_t M = atoi(argv[2]), N = atoi(argv[3]), K = atoi(argv[4]), BM = atoi(argv[5]), BN = atoi(argv[6]), WG = atoi(argv[7]);
    int iters = argc > 8 ? atoi(argv[8]) : 20;
    int brow = argc > 10 ? atoi(argv[10]) : 0; /* B stored K x N row-major */
    CK(volkInitialize());
    VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.apiVersion = VK_API_VERSION_1_3;
    VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ici.pApplicationInfo = &app;
    VkInstance inst;
    CK(vkCreateInstance(&ici, NULL, &inst));
    volkLoadInstance(inst);
    uint32_t n = 8; VkPhysicalDevice pds[8];
    CK(vkEnumeratePhysicalDevices(inst, &n, pds));
    pd = pds[0];
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceProperties p; vkGetPhysicalDeviceProperties(pds[i], &p);
        if (p.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) { pd = pds[i]; break; }
    }
    VkPhysicalDeviceProperties pp; vkGetPhysicalDeviceProperties(pd, &pp);
    printf("device %s, smem %u\n", pp.deviceName, pp.limits.maxComputeSharedMemorySize);
    cm2_features f2 = {(VkStructureType)1000593000};
    khr_cm_features fk = {(VkStructureType)1000506000, &f2};
    VkPhysicalDeviceVulkan12Features v12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &fk};
    VkPhysicalDeviceVulkan11Features v11 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &v12};
    VkPhysicalDeviceFeatures2 feat = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &v11};
    vkGetPhysicalDeviceFeatures2(pd, &feat);
    printf("cm2 features: wgScope %u flexDims %u reductions %u conversions %u perElem %u tensorAddr %u blockLoads %u; khr cm %u\n",
           f2.wgScope, f2.flexDims, f2.reductions, f2.conversions, f2.perElem, f2.tensorAddr, f2.blockLoads, fk.cm);
    cm2_props p2 = {(VkStructureType)1000593002};
    VkPhysicalDeviceProperties2 pr2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &p2};
    vkGetPhysicalDeviceProperties2(pd, &pr2);
    printf("cm2 props: wgMaxSize %u flexMaxDim %u wgReservedSmem %u\n", p2.wgMaxSize, p2.flexMaxDim, p2.wgReservedSmem);
    PFN_flex flex = (PFN_flex)vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
    if (flex) {
        uint32_t cnt = 0; flex(pd, &cnt, NULL);
        cm2_flex *fl = calloc(cnt, sizeof *fl);
        for (uint32_t i = 0; i < cnt; i++) fl[i].sType = (VkStructureType)1000593001;
        flex(pd, &cnt, fl);
        for (uint32_t i = 0; i < cnt; i++)
            printf("flex %u: gran %ux%ux%u A%u B%u C%u R%u sat %u scope %u wgInv %u\n", i, fl[i].MG, fl[i].NG, fl[i].KG,
                   fl[i].AT, fl[i].BT, fl[i].CT, fl[i].RT, fl[i].sat, fl[i].scope, fl[i].wgInv);
    }
    if (!f2.wgScope) { printf("no workgroup scope\n"); return 0; }
    /* device with the features the shader needs */
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qci.queueCount = 1; qci.pQueuePriorities = &prio; qci.queueFamilyIndex = 0;
    const char *exts[] = {"VK_KHR_cooperative_matrix", "VK_NV_cooperative_matrix2"};
    cm2_features e2 = {(VkStructureType)1000593000};
    e2.wgScope = 1; e2.flexDims = f2.flexDims; e2.tensorAddr = f2.tensorAddr;
    khr_cm_features ek = {(VkStructureType)1000506000, &e2, 1, 0};
    VkPhysicalDeviceVulkan12Features e12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, &ek};
    e12.vulkanMemoryModel = 1; e12.shaderFloat16 = 1; e12.vulkanMemoryModelDeviceScope = v12.vulkanMemoryModelDeviceScope;
    VkPhysicalDeviceVulkan11Features e11 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &e12};
    e11.storageBuffer16BitAccess = 1;
    VkPhysicalDeviceFeatures2 ef = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &e11};
    VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &ef};
    dci.queueCreateInfoCount = 1; dci.pQueueCreateInfos = &qci;
    dci.enabledExtensionCount = 2; dci.ppEnabledExtensionNames = exts;
    CK(vkCreateDevice(pd, &dci, NULL, &dev));
    volkLoadDevice(dev);
    VkQueue q; vkGetDeviceQueue(dev, 0, 0, &q);
    /* data */
    VkDeviceSize sa = (VkDeviceSize)M * K * 2, sb = (VkDeviceSize)N * K * 2, sc = (VkDeviceSize)M * N * 4;
    VkBuffer ba, bb, bc, st; VkDeviceMemory ma, mb, mc, ms;
    mkbuf(sa, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &ba, &ma);
    mkbuf(sb, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &bb, &mb);
    mkbuf(sc, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, &bc, &mc);
    VkDeviceSize smax = sa > sc ? sa : sc; if (sb > smax) smax = sb;
    mkbuf(smax, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT, &st, &ms);
    void *hp; CK(vkMapMemory(dev, ms, 0, VK_WHOLE_SIZE, 0, &hp));
    uint16_t *ha = malloc(sa), *hb = malloc(sb);
    srand(1);
    for (size_t i = 0; i < (size_t)M * K; i++) ha[i] = f2h((rand() % 2001 - 1000) / 1000.0f);
    for (size_t i = 0; i < (size_t)N * K; i++) hb[i] = f2h((rand() % 2001 - 1000) / 1000.0f);
    VkCommandPoolCreateInfo cpi = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cpi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    VkCommandPool cp; CK(vkCreateCommandPool(dev, &cpi, NULL, &cp));
    VkCommandBufferAllocateInfo cai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = cp; cai.commandBufferCount = 1;
    VkCommandBuffer cb; CK(vkAllocateCommandBuffers(dev, &cai, &cb));
    VkCommandBufferBeginInfo cbi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO}; si.commandBufferCount = 1; si.pCommandBuffers = &cb;
#define COPY(src, dst, sz) do { CK(vkBeginCommandBuffer(cb, &cbi)); VkBufferCopy r = {0, 0, sz}; vkCmdCopyBuffer(cb, src, dst, 1, &r); \
    CK(vkEndCommandBuffer(cb)); CK(vkQueueSubmit(q, 1, &si, VK_NULL_HANDLE)); CK(vkQueueWaitIdle(q)); } while (0)
    memcpy(hp, ha, sa); COPY(st, ba, sa);
    memcpy(hp, hb, sb); COPY(st, bb, sb);
    memset(hp, 0x7f, sc); COPY(st, bc, sc); /* poison */
    /* pipeline */
    FILE *fp = fopen(argv[1], "rb"); if (!fp) { perror(argv[1]); return 1; }
    fseek(fp, 0, SEEK_END); long ln = ftell(fp); fseek(fp, 0, SEEK_SET);
    uint32_t *code = malloc(ln); if (fread(code, 1, ln, fp) != (size_t)ln) return 1; fclose(fp);
    VkShaderModuleCreateInfo smi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO}; smi.codeSize = ln; smi.pCode = code;
    VkShaderModule sm; CK(vkCreateShaderModule(dev, &smi, NULL, &sm));
    VkDescriptorSetLayoutBinding bnd[3];
    for (int i = 0; i < 3; i++) { bnd[i] = (VkDescriptorSetLayoutBinding){i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL}; }
    VkDescriptorSetLayoutCreateInfo dli = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO}; dli.bindingCount = 3; dli.pBindings = bnd;
    VkDescriptorSetLayout dsl; CK(vkCreateDescriptorSetLayout(dev, &dli, NULL, &dsl));
    VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 12};
    VkPipelineLayoutCreateInfo pli = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pli.setLayoutCount = 1; pli.pSetLayouts = &dsl; pli.pushConstantRangeCount = 1; pli.pPushConstantRanges = &pcr;
    VkPipelineLayout pl; CK(vkCreatePipelineLayout(dev, &pli, NULL, &pl));
    uint32_t BK = argc > 9 ? atoi(argv[9]) : 32;
    uint32_t spec[5] = {BM, BN, BK, BK, WG};
    VkSpecializationMapEntry me[5];
    for (int i = 0; i < 5; i++) me[i] = (VkSpecializationMapEntry){i, 4 * i, 4};
    VkSpecializationInfo spi = {5, me, 20, spec};
    VkComputePipelineCreateInfo cpci = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    cpci.stage = (VkPipelineShaderStageCreateInfo){VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0, VK_SHADER_STAGE_COMPUTE_BIT, sm, "main", &spi};
    cpci.layout = pl;
    VkPipeline pipe; CK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpci, NULL, &pipe));
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3};
    VkDescriptorPoolCreateInfo dpi = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO}; dpi.maxSets = 1; dpi.poolSizeCount = 1; dpi.pPoolSizes = &ps;
    VkDescriptorPool dp; CK(vkCreateDescriptorPool(dev, &dpi, NULL, &dp));
    VkDescriptorSetAllocateInfo dai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO}; dai.descriptorPool = dp; dai.descriptorSetCount = 1; dai.pSetLayouts = &dsl;
    VkDescriptorSet ds; CK(vkAllocateDescriptorSets(dev, &dai, &ds));
    VkDescriptorBufferInfo dbi[3] = {{ba, 0, VK_WHOLE_SIZE}, {bb, 0, VK_WHOLE_SIZE}, {bc, 0, VK_WHOLE_SIZE}};
    VkWriteDescriptorSet w[3];
    for (int i = 0; i < 3; i++) { w[i] = (VkWriteDescriptorSet){VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, NULL, ds, i, 0, 1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, NULL, &dbi[i], NULL}; }
    vkUpdateDescriptorSets(dev, 3, w, 0, NULL);
    VkQueryPoolCreateInfo qpi = {VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO}; qpi.queryType = VK_QUERY_TYPE_TIMESTAMP; qpi.queryCount = 2;
    VkQueryPool qp; CK(vkCreateQueryPool(dev, &qpi, NULL, &qp));
    uint32_t pc[3] = {M, N, K};
    for (int pass = 0; pass < 2; pass++) {
        int reps = pass ? iters : 1;
        CK(vkBeginCommandBuffer(cb, &cbi));
        vkCmdResetQueryPool(cb, qp, 0, 2);
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl, 0, 1, &ds, 0, NULL);
        vkCmdPushConstants(cb, pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 12, pc);
        vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, 0);
        for (int r = 0; r < reps; r++) vkCmdDispatch(cb, M / BM, N / BN, 1);
        vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, 1);
        CK(vkEndCommandBuffer(cb)); CK(vkQueueSubmit(q, 1, &si, VK_NULL_HANDLE)); CK(vkQueueWaitIdle(q));
        uint64_t ts[2]; CK(vkGetQueryPoolResults(dev, qp, 0, 2, 16, ts, 8, VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
        double ms = (ts[1] - ts[0]) * pp.limits.timestampPeriod * 1e-6 / reps;
        if (pass) printf("M %u N %u K %u tile %ux%u wg %u: %.4f ms, %.1f TFLOP/s\n", M, N, K, BM, BN, WG, ms, 2.0 * M * N * K / ms * 1e-9);
    }
    COPY(bc, st, sc);
    float *hc = hp; double maxerr = 0; int bad = 0;
    for (int t = 0; t < 64; t++) {
        uint32_t i = (uint32_t)(rand() % M), j = (uint32_t)(rand() % N);
        double ref = 0;
        for (uint32_t k = 0; k < K; k++) ref += (double)h2f(ha[(size_t)i * K + k]) * h2f(hb[brow ? (size_t)k * N + j : (size_t)j * K + k]);
        double e = fabs(hc[(size_t)i * N + j] - ref);
        if (!(e <= 1e-2 * (1 + fabs(ref)))) bad++;
        if (e > maxerr || e != e) maxerr = e;
    }
    printf("check: %d of 64 bad, max err %.3g\n", bad, maxerr);
    return bad != 0;
}
