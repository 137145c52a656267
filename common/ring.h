/* A growable FIFO ring of fixed-size elements: the wheel's floors, holds
 * and recalls, and the executor's window of unfinished records are all
 * queues that grow at the back and shrink at the front. One implementation,
 * tested once (tests/unit/test_ring.c), including growth while wrapped.
 * Not thread-safe. */
#ifndef MOONCAKE_RING_H
#define MOONCAKE_RING_H

#include <stddef.h>

typedef struct mc_ring {
    char *buf;
    size_t elem; /* bytes per element */
    size_t head, len, cap;
} mc_ring;

/* An empty ring of elements of elem bytes (no allocation until the first push). */
void mc_ring_init(mc_ring *r, size_t elem);
/* Copies e to the back. Returns 0, or -1 on ENOMEM (the ring is unchanged). */
int mc_ring_push(mc_ring *r, const void *e);
/* The element i places from the front (0: the front); i < mc_ring_len(r).
 * Valid until the next push. */
void *mc_ring_at(const mc_ring *r, size_t i);
/* Drops the front element; the ring must not be empty. */
void mc_ring_pop(mc_ring *r);
static inline size_t mc_ring_len(const mc_ring *r)
{
    return r->len;
}
/* Frees the elements' storage; the ring is empty and usable again. */
void mc_ring_free(mc_ring *r);

#endif
