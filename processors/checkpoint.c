/* The wheel's and the executor's commit-metadata checkpoints (see
 * checkpoint.h). */
#include "checkpoint.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void mc_wheel_checkpoint_format(const mc_wheel_checkpoint *c, char *buf, size_t len)
{
    if (c->has_frontier)
        snprintf(buf, len, "v1 o=%" PRId64 " f=%" PRId64 " g=%" PRId64, c->position,
                 c->frontier_due, c->frontier_offset);
    else
        snprintf(buf, len, "v1 o=%" PRId64, c->position);
}

/* Reads "<name>=<int64>" at *p, moving *p past it. */
static bool read_field(const char **p, const char *end, const char *name, int64_t *out)
{
    size_t n = strlen(name);
    if ((size_t)(end - *p) < n + 2 || memcmp(*p, name, n) != 0 || (*p)[n] != '=')
        return false;
    const char *q = *p + n + 1;
    bool neg = q < end && *q == '-';
    q += neg;
    if (q == end || *q < '0' || *q > '9')
        return false;
    uint64_t v = 0;
    for (; q < end && *q >= '0' && *q <= '9'; q++) {
        if (v > (UINT64_C(1) << 63) / 10)
            return false;
        v = v * 10 + (uint64_t)(*q - '0');
    }
    if (v > (neg ? UINT64_C(1) << 63 : (uint64_t)INT64_MAX))
        return false;
    *out = neg ? (v ? -(int64_t)(v - 1) - 1 : 0) : (int64_t)v;
    *p = q;
    return true;
}

bool mc_wheel_checkpoint_parse(const char *md, size_t len, mc_wheel_checkpoint *c)
{
    const char *p = md, *end = md + len;
    if (!md || len < 3 || memcmp(p, "v1 ", 3) != 0)
        return false;
    p += 3;
    mc_wheel_checkpoint r = {0};
    if (!read_field(&p, end, "o", &r.position))
        return false;
    if (p < end) {
        if (*p++ != ' ' || !read_field(&p, end, "f", &r.frontier_due) || p == end || *p++ != ' ' ||
            !read_field(&p, end, "g", &r.frontier_offset))
            return false;
        r.has_frontier = true;
    }
    if (p != end || r.position < 0)
        return false;
    *c = r;
    return true;
}
