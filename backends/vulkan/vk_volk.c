/* The Vulkan loader through volk (Debian's libvulkan-volk-dev ships volk.c next to
 * volk.h): the implementation is compiled here, so nothing links libvulkan; the
 * loader is opened at run time by volkInitialize().  Its symbols are hidden so
 * that they neither leave the shared library nor get interposed by a program
 * that has its own volk.  The system headers volk.c uses come first, so that
 * dlopen & co. keep their default visibility. */
#define VOLK_IMPLEMENTATION
#if defined(__GNUC__) && !defined(_WIN32)
#include <dlfcn.h>
#include <string.h>
#pragma GCC visibility push(hidden)
#endif
#include <volk.h>
#if defined(__GNUC__) && !defined(_WIN32)
#pragma GCC visibility pop
#endif
#undef VOLK_IMPLEMENTATION /* volk.h undefines it too; said here for the amalgamation check */
