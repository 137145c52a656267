/* Memory given back after a burst (see memory.h). */
#include "memory.h"

#include <malloc.h>

/* Under AddressSanitizer (and the other sanitizers that replace malloc),
 * glibc's allocator is never used and may never have been initialised:
 * malloc_trim then walks arenas whose bins are not set up yet, and two
 * threads trimming at once (several roles restoring at the start of
 * `mooncake all`) crash in it. The sanitizer's allocator gives memory back
 * on its own (allocator_release_to_os_interval_ms). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MC_SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define MC_SANITIZER_ALLOCATOR 1
#endif
#endif

void mc_memory_give_back(void)
{
#ifndef MC_SANITIZER_ALLOCATOR
    /* Memory freed by other threads (librdkafka's, which fetched) sits in
     * their arenas; trimming every arena is what returns it. */
    malloc_trim(0);
#endif
}
