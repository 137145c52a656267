/* Giving freed memory back to the operating system after a burst of
 * allocation (a restore's read-ahead), so the resident size follows what
 * the process holds rather than what it once held. */
#ifndef MOONCAKE_RELEASE_MEMORY_H
#define MOONCAKE_RELEASE_MEMORY_H

/* MC_SANITIZER_ALLOCATOR: this build's malloc is a sanitizer's (ASan,
 * HWASan, TSan, MSan), not glibc's. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_HWADDRESS__) || defined(__SANITIZE_THREAD__)
#define MC_SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(hwaddress_sanitizer) ||                      \
    __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define MC_SANITIZER_ALLOCATOR 1
#endif
#endif

/* Returns the free memory the allocator keeps to the operating system, where
 * that is safe: with glibc's allocator, its free pages; with a sanitizer's
 * (MC_SANITIZER_ALLOCATOR), nothing. Any thread, several at once. */
void mc_release_free_memory(void);

#endif
