/* The FIFO ring (see ring.h). Growing copies the elements out in order, so
 * a full ring whose front has wrapped round stays in order. */
#include "ring.h"

#include <stdlib.h>
#include <string.h>

void mc_ring_init(mc_ring *r, size_t elem)
{
    *r = (mc_ring){.elem = elem};
}

static int grow(mc_ring *r)
{
    size_t cap = r->cap ? r->cap * 2 : 64;
    char *b = malloc(cap * r->elem);
    if (!b)
        return -1;
    size_t first = r->cap - r->head < r->len ? r->cap - r->head : r->len;
    if (r->len) {
        memcpy(b, r->buf + r->head * r->elem, first * r->elem);
        memcpy(b + first * r->elem, r->buf, (r->len - first) * r->elem);
    }
    free(r->buf);
    r->buf = b;
    r->cap = cap;
    r->head = 0;
    return 0;
}

int mc_ring_push(mc_ring *r, const void *e)
{
    if (r->len == r->cap && grow(r) != 0)
        return -1;
    memcpy(r->buf + ((r->head + r->len) % r->cap) * r->elem, e, r->elem);
    r->len++;
    return 0;
}

void *mc_ring_at(const mc_ring *r, size_t i)
{
    return r->buf + ((r->head + i) % r->cap) * r->elem;
}

void mc_ring_pop(mc_ring *r)
{
    r->head = (r->head + 1) % r->cap;
    r->len--;
}

void mc_ring_free(mc_ring *r)
{
    free(r->buf);
    r->buf = NULL;
    r->head = r->len = r->cap = 0;
}
