/* Memory given back after a burst (see release_memory.h). */
#include "release_memory.h"

#include <malloc.h>

void mc_release_free_memory(void)
{
#ifndef MC_SANITIZER_ALLOCATOR
    /* Memory freed by other threads (librdkafka's, which fetched) sits in
     * their arenas; trimming every arena is what returns it. */
    malloc_trim(0);
#else
    /* glibc's allocator is never used under a sanitizer and may never have
     * been initialised: malloc_trim then walks arenas whose bins are not
     * set up yet, and two threads trimming at once (several roles restoring
     * at the start of `mooncake all`) crash in it. The sanitizer's
     * allocator gives memory back on its own
     * (allocator_release_to_os_interval_ms). */
#endif
}
