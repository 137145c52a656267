/* The binary min-heap (see heap.h): sift up on push, sift down on pop, the
 * moving element held aside so each level costs one copy, not a swap. */
#include "heap.h"

#include <stdlib.h>
#include <string.h>

void mc_heap_init(mc_heap *h, size_t elem, mc_heap_less less)
{
    *h = (mc_heap){.elem = elem, .less = less};
}

static void *at(const mc_heap *h, size_t i)
{
    return h->buf + i * h->elem;
}

/* One spare slot past the elements holds the element being placed. */
static int reserve(mc_heap *h)
{
    if (h->len + 1 < h->cap)
        return 0;
    size_t cap = h->cap ? h->cap * 2 : 64;
    char *b = realloc(h->buf, cap * h->elem);
    if (!b)
        return -1;
    h->buf = b;
    h->cap = cap;
    return 0;
}

int mc_heap_push(mc_heap *h, const void *e)
{
    if (reserve(h) != 0)
        return -1;
    void *moving = at(h, h->len + 1);
    memcpy(moving, e, h->elem);
    size_t i = h->len++;
    while (i > 0 && h->less(moving, at(h, (i - 1) / 2))) {
        memcpy(at(h, i), at(h, (i - 1) / 2), h->elem);
        i = (i - 1) / 2;
    }
    memcpy(at(h, i), moving, h->elem);
    return 0;
}

void *mc_heap_top(const mc_heap *h)
{
    return h->len ? at(h, 0) : NULL;
}

void mc_heap_pop(mc_heap *h)
{
    size_t n = --h->len;
    if (n == 0)
        return;
    void *moving = at(h, n); /* the last element, placed from the top down */
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && h->less(at(h, c + 1), at(h, c)))
            c++;
        if (!h->less(at(h, c), moving))
            break;
        memcpy(at(h, i), at(h, c), h->elem);
        i = c;
    }
    memcpy(at(h, i), moving, h->elem);
}

void mc_heap_free(mc_heap *h)
{
    free(h->buf);
    h->buf = NULL;
    h->len = h->cap = 0;
}
