/* A growable binary min-heap of fixed-size elements, ordered by a caller's
 * less-than: the wheel's pending hand-offs and next attempts by the position
 * each can be judged stale against (their positions do not arrive in order).
 * The timing wheel keeps its own heap of overdue timers, which must also
 * remove from the middle and so tracks each timer's index. Not thread-safe. */
#ifndef MOONCAKE_HEAP_H
#define MOONCAKE_HEAP_H

#include <stdbool.h>
#include <stddef.h>

typedef bool (*mc_heap_less)(const void *a, const void *b);

typedef struct mc_heap {
    char *buf;
    size_t elem; /* bytes per element */
    size_t len, cap;
    mc_heap_less less;
} mc_heap;

/* An empty heap of elements of elem bytes (no allocation until the first push). */
void mc_heap_init(mc_heap *h, size_t elem, mc_heap_less less);
/* Copies e in. Returns 0, or -1 on ENOMEM (the heap is unchanged). */
int mc_heap_push(mc_heap *h, const void *e);
/* The least element, or NULL when empty. Valid until the next push or pop. */
void *mc_heap_top(const mc_heap *h);
/* Drops the least element; the heap must not be empty. */
void mc_heap_pop(mc_heap *h);
static inline size_t mc_heap_len(const mc_heap *h)
{
    return h->len;
}
/* Frees the elements' storage; the heap is empty and usable again. */
void mc_heap_free(mc_heap *h);

#endif
