/* volk's implementation for the doctor's own Vulkan probe (probe_vulkan.c).
 * The library's copy (backends/vulkan/vk_volk.c) is hidden inside
 * libdifkern.so; this one is the program's, with its own loader globals. */
#define VOLK_IMPLEMENTATION
#include <volk.h>
