/* Giving freed memory back to the operating system after a burst of
 * allocation (a restore's read-ahead), so the resident size follows what
 * the process holds rather than what it once held. */
#ifndef MOONCAKE_MEMORY_H
#define MOONCAKE_MEMORY_H

/* Returns the free memory the allocator keeps to the operating system, where
 * that is safe: with glibc's allocator, its free pages; under a sanitizer,
 * which brings its own allocator, nothing. Any thread, several at once. */
void mc_memory_give_back(void);

#endif
