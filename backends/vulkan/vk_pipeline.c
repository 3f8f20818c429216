/* Vulkan backend pipelines: one push-descriptor layout for every shader,
 * pipelines built lazily per (shader, specialization constants), by compile
 * threads (vk_compile.c), and kept, and a
 * VkPipelineCache persisted on disk (a file from another driver or a corrupt
 * one is ignored: its header must match this device). */
#include "vk_internal.h"
#include "backends/vulkan/dk_vk_spirv.h" /* dk__vk_spirv[DK_VK_SH_COUNT]: each shader's code */

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/stat.h>
#if defined(_WIN32)
#include <direct.h>
#define VKPIPE_MKDIR(p) _mkdir(p)
#else
#define VKPIPE_MKDIR(p) mkdir(p, 0755)
#endif

/* options->pipeline_cache_path, else $XDG_CACHE_HOME/difkern or ~/.cache/difkern. */
static void vkpipe_cache_path(dk_vk_state *s, const char *path) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[900];
    s->cache_path[0] = '\0';
    if (path) {
        dk__strlcpy(s->cache_path, path, sizeof s->cache_path);
        return;
    }
    if (xdg && xdg[0]) snprintf(dir, sizeof dir, "%s/difkern", xdg);
    else if (home && home[0]) snprintf(dir, sizeof dir, "%s/.cache/difkern", home);
    else return;
    if (xdg && xdg[0]) (void)VKPIPE_MKDIR(xdg);
    else {
        char parent[900];
        snprintf(parent, sizeof parent, "%s/.cache", home);
        (void)VKPIPE_MKDIR(parent);
    }
    (void)VKPIPE_MKDIR(dir);
    snprintf(s->cache_path, sizeof s->cache_path, "%s/vulkan_pipelines_%08x_%08x.bin", dir, s->props.vendorID,
             s->props.deviceID);
}

static uint32_t vkpipe_le32(const unsigned char *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* The cache file's contents if its header is this device's, else NULL. */
static void *vkpipe_load(dk_vk_state *s, size_t *size) {
    FILE *fp;
    long len;
    unsigned char *data;
    if (!s->cache_path[0]) return NULL;
    fp = fopen(s->cache_path, "rb");
    if (!fp) return NULL;
    if (fseek(fp, 0, SEEK_END) != 0 || (len = ftell(fp)) < 32 || len > (1L << 30) || fseek(fp, 0, SEEK_SET) != 0) {
        fclose(fp);
        return NULL;
    }
    data = (unsigned char *)malloc((size_t)len);
    if (!data || fread(data, 1, (size_t)len, fp) != (size_t)len) {
        free(data);
        fclose(fp);
        return NULL;
    }
    fclose(fp);
    if (vkpipe_le32(data) < 32 || vkpipe_le32(data) > (uint32_t)len ||
        vkpipe_le32(data + 4) != VK_PIPELINE_CACHE_HEADER_VERSION_ONE || vkpipe_le32(data + 8) != s->props.vendorID ||
        vkpipe_le32(data + 12) != s->props.deviceID ||
        memcmp(data + 16, s->props.pipelineCacheUUID, VK_UUID_SIZE) != 0) {
        free(data);
        return NULL;
    }
    *size = (size_t)len;
    return data;
}

/* Write the cache atomically (temporary file, then rename); failures are silent:
 * the cache only saves compile time. */
static void vkpipe_save(dk_vk_state *s) {
    size_t size = 0;
    void *data;
    char tmp[1100];
    FILE *fp;
    int ok;
    if (!s->cache_path[0] || !s->pipeline_cache || s->npipelines == 0) return;
    if (s->vk.vkGetPipelineCacheData(s->device, s->pipeline_cache, &size, NULL) != VK_SUCCESS || size == 0) return;
    data = malloc(size);
    if (!data) return;
    if (s->vk.vkGetPipelineCacheData(s->device, s->pipeline_cache, &size, data) != VK_SUCCESS) {
        free(data);
        return;
    }
    /* A name of this context's own ("x": never an existing file), so that
     * contexts saving at once, in this process or others, never write one file. */
    snprintf(tmp, sizeof tmp, "%s.%llx-%llx.tmp", s->cache_path, (unsigned long long)(uintptr_t)s,
             (unsigned long long)time(NULL));
    fp = fopen(tmp, "wbx");
    if (fp) {
        ok = fwrite(data, 1, size, fp) == size;
        ok &= fclose(fp) == 0;
        if (!ok || rename(tmp, s->cache_path) != 0) remove(tmp);
    }
    free(data);
}

dk_status dk__vk_pipelines_create(dk_context *ctx, const char *cache_path) {
    dk_vk_state *s = dk__vk(ctx);
    VkDescriptorSetLayoutBinding b[DK_VK_BINDINGS];
    VkDescriptorSetLayoutCreateInfo li;
    VkPushConstantRange pc;
    VkPipelineLayoutCreateInfo pli;
    VkPipelineCacheCreateInfo ci;
    size_t size = 0;
    void *data;
    VkResult r;
    uint32_t i;
    for (i = 0; i < DK_VK_BINDINGS; i++) {
        memset(&b[i], 0, sizeof b[i]);
        b[i].binding = i;
        b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        b[i].descriptorCount = 1;
        b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    memset(&li, 0, sizeof li);
    li.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
    li.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    li.bindingCount = DK_VK_BINDINGS;
    li.pBindings = b;
    r = s->vk.vkCreateDescriptorSetLayout(s->device, &li, NULL, &s->set_layout);
    if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkCreateDescriptorSetLayout");
    pc.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    pc.offset = 0;
    pc.size = 4;
    memset(&pli, 0, sizeof pli);
    pli.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    pli.setLayoutCount = 1;
    pli.pSetLayouts = &s->set_layout;
    pli.pushConstantRangeCount = 1;
    pli.pPushConstantRanges = &pc;
    r = s->vk.vkCreatePipelineLayout(s->device, &pli, NULL, &s->pipeline_layout);
    if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkCreatePipelineLayout");

    vkpipe_cache_path(s, cache_path);
    data = vkpipe_load(s, &size);
    memset(&ci, 0, sizeof ci);
    ci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
    ci.initialDataSize = data ? size : 0;
    ci.pInitialData = data;
    r = s->vk.vkCreatePipelineCache(s->device, &ci, NULL, &s->pipeline_cache);
    if (r != VK_SUCCESS && data) { /* the driver refused the data: start empty */
        ci.initialDataSize = 0;
        ci.pInitialData = NULL;
        r = s->vk.vkCreatePipelineCache(s->device, &ci, NULL, &s->pipeline_cache);
    }
    free(data);
    if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkCreatePipelineCache");
    return DK_OK;
}

void dk__vk_pipelines_destroy(dk_vk_state *s) {
    uint32_t i;
    dk__vk_compile_stop(s);
    vkpipe_save(s);
    for (i = 0; i < s->npipelines; i++) {
        if (s->pipelines[i]->pipeline) s->vk.vkDestroyPipeline(s->device, s->pipelines[i]->pipeline, NULL);
        free(s->pipelines[i]);
    }
    free(s->pipelines);
    s->pipelines = NULL;
    s->npipelines = 0;
    for (i = 0; i < DK_VK_SH_COUNT; i++)
        if (s->modules[i]) s->vk.vkDestroyShaderModule(s->device, s->modules[i], NULL);
    if (s->pipeline_cache) s->vk.vkDestroyPipelineCache(s->device, s->pipeline_cache, NULL);
    if (s->pipeline_layout) s->vk.vkDestroyPipelineLayout(s->device, s->pipeline_layout, NULL);
    if (s->set_layout) s->vk.vkDestroyDescriptorSetLayout(s->device, s->set_layout, NULL);
}

/* DIFKERN_VULKAN_PIPELINE_STATS=1 (vk_device.c): each new pipeline's build
 * time and the driver's statistics of it (registers, shared memory, spills:
 * whatever it reports), one line on stderr. */
static void vkpipe_print_stats(dk_vk_state *s, uint32_t shader, const uint32_t *spec, VkPipeline pipeline,
                               double build_ms) {
    VkPipelineExecutableInfoKHR ei;
    VkPipelineExecutableStatisticKHR st[32];
    VkPipelineInfoKHR pi;
    VkPipelineExecutablePropertiesKHR ep;
    uint32_t n = 1, i;
    char line[2048];
    size_t len;
    snprintf(line, sizeof line, "difkern vulkan pipeline: shader %u spec (%u, %u, %u, %u): built in %.1f ms", shader,
             spec[0], spec[1], spec[2], spec[3], build_ms);
    len = strlen(line);
    if (!s->vk.vkGetPipelineExecutablePropertiesKHR || !s->vk.vkGetPipelineExecutableStatisticsKHR) n = 0;
    memset(&pi, 0, sizeof pi);
    pi.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR;
    pi.pipeline = pipeline;
    memset(&ep, 0, sizeof ep);
    ep.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR;
    if (n && (s->vk.vkGetPipelineExecutablePropertiesKHR(s->device, &pi, &n, &ep) < 0)) n = 0;
    memset(&ei, 0, sizeof ei);
    ei.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR;
    ei.pipeline = pipeline;
    ei.executableIndex = 0;
    memset(st, 0, sizeof st);
    for (i = 0; i < 32; i++) st[i].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR;
    if (n) {
        n = 32;
        if (s->vk.vkGetPipelineExecutableStatisticsKHR(s->device, &ei, &n, st) < 0) n = 0;
    }
    /* one fprintf: lines of compile threads building at once stay whole */
    for (i = 0; i < n && i < 32 && len + 96 < sizeof line; i++) {
        switch (st[i].format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
            snprintf(line + len, sizeof line - len, " %.40s=%u", st[i].name, st[i].value.b32);
            break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
            snprintf(line + len, sizeof line - len, " %.40s=%lld", st[i].name, (long long)st[i].value.i64);
            break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
            snprintf(line + len, sizeof line - len, " %.40s=%llu", st[i].name, (unsigned long long)st[i].value.u64);
            break;
        default: snprintf(line + len, sizeof line - len, " %.40s=%g", st[i].name, st[i].value.f64); break;
        }
        len += strlen(line + len);
    }
    fprintf(stderr, "%s\n", line);
}

/* Build p (vkCreateComputePipelines) on the calling thread: a compile thread
 * or, where there is none, the caller.  Reads only what is fixed once the
 * context exists. */
VkResult dk__vk_pipeline_build(dk_vk_state *s, dk_vk_pipeline *p) {
    VkSpecializationMapEntry me[DK_VK_SPEC];
    VkSpecializationInfo si;
    VkComputePipelineCreateInfo ci;
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo rs;
    VkPipelineRobustnessCreateInfoEXT rob;
    VkResult r;
    double t0;
    uint32_t i;
    for (i = 0; i < DK_VK_SPEC; i++) {
        me[i].constantID = i;
        me[i].offset = i * 4;
        me[i].size = 4;
    }
    si.mapEntryCount = DK_VK_SPEC;
    si.pMapEntries = me;
    si.dataSize = DK_VK_SPEC * 4;
    si.pData = p->spec;
    memset(&ci, 0, sizeof ci);
    ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
    ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = p->module;
    if (s->cm_wave32 && p->shader >= DK_VK_SH_FIRST_COOPMAT) {
        /* tensor-core shaders: 8 subgroups of 32 per workgroup (vk_device.c) */
        memset(&rs, 0, sizeof rs);
        rs.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO;
        rs.requiredSubgroupSize = 32;
        ci.stage.pNext = &rs;
        ci.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    }
    ci.stage.pName = "main";
    ci.stage.pSpecializationInfo = &si;
    ci.layout = s->pipeline_layout;
    if (s->unchecked_buffers) {
        memset(&rob, 0, sizeof rob);
        rob.sType = VK_STRUCTURE_TYPE_PIPELINE_ROBUSTNESS_CREATE_INFO_EXT;
        rob.storageBuffers = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DISABLED_EXT;
        rob.uniformBuffers = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DISABLED_EXT;
        rob.vertexInputs = VK_PIPELINE_ROBUSTNESS_BUFFER_BEHAVIOR_DEVICE_DEFAULT_EXT;
        rob.images = VK_PIPELINE_ROBUSTNESS_IMAGE_BEHAVIOR_DEVICE_DEFAULT_EXT;
        ci.pNext = &rob;
    }
    if (s->pipeline_stats) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
    t0 = dk__now_ms();
    r = s->vk.vkCreateComputePipelines(s->device, s->pipeline_cache, 1, &ci, NULL, &p->pipeline);
    if (r != VK_SUCCESS) p->pipeline = VK_NULL_HANDLE;
    else if (s->pipeline_stats) vkpipe_print_stats(s, p->shader, p->spec, p->pipeline, dk__now_ms() - t0);
    return r;
}

dk_status dk__vk_pipeline(dk_context *ctx, uint32_t shader, const uint32_t *spec, dk_vk_pipeline **out) {
    dk_vk_state *s = dk__vk(ctx);
    dk_vk_pipeline *p;
    VkResult r;
    uint32_t i;
    for (i = 0; i < s->npipelines; i++) {
        p = s->pipelines[i];
        if (p->shader == shader && memcmp(p->spec, spec, sizeof p->spec) == 0) {
            /* a build that failed (out of memory, say) is tried again */
            if (dk__vk_compile_ready(s, p) && p->state == DK_VK_PIPE_FAILED) dk__vk_compile_queue(s, p);
            *out = p;
            return DK_OK;
        }
    }
    if (!s->modules[shader]) {
        VkShaderModuleCreateInfo mi;
        memset(&mi, 0, sizeof mi);
        mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
        mi.codeSize = dk__vk_spirv[shader].bytes;
        mi.pCode = dk__vk_spirv[shader].words;
        r = s->vk.vkCreateShaderModule(s->device, &mi, NULL, &s->modules[shader]);
        if (r != VK_SUCCESS) return dk__vk_result(ctx, r, "vkCreateShaderModule");
    }
    if (s->npipelines == s->cappipelines) {
        uint32_t cap = s->cappipelines ? s->cappipelines * 2 : 32;
        dk_vk_pipeline **np = (dk_vk_pipeline **)realloc(s->pipelines, cap * sizeof *np);
        if (!np) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "vulkan backend: out of host memory");
        s->pipelines = np;
        s->cappipelines = cap;
    }
    p = (dk_vk_pipeline *)calloc(1, sizeof *p);
    if (!p) return dk__fail(ctx, DK_ERR_OUT_OF_MEMORY, "vulkan backend: out of host memory");
    p->shader = shader;
    memcpy(p->spec, spec, sizeof p->spec);
    p->module = s->modules[shader];
    dk__vk_compile_queue(s, p);
    s->pipelines[s->npipelines++] = p;
    *out = p;
    return DK_OK;
}

#undef VKPIPE_MKDIR
