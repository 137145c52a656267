/* The layout record's text form (see layout.h). */
#include "layout.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int mc_layout_format(const mc_layout *l, char *buf, size_t len)
{
    int n = snprintf(buf, len, "partitions=%" PRId32, l->partitions);
    if (l->growing_to)
        n += snprintf(buf + n, len > (size_t)n ? len - (size_t)n : 0, " growing-to=%" PRId32,
                      l->growing_to);
    if (l->previous)
        n += snprintf(buf + n, len > (size_t)n ? len - (size_t)n : 0, " previous=%" PRId32,
                      l->previous);
    return n;
}

/* Reads "name=<positive int32>" at *p. */
static bool field(const char **p, const char *end, const char *name, int32_t *out)
{
    size_t n = strlen(name);
    if ((size_t)(end - *p) < n + 2 || memcmp(*p, name, n) != 0 || (*p)[n] != '=')
        return false;
    const char *q = *p + n + 1;
    int64_t v = 0;
    if (q == end || *q < '1' || *q > '9')
        return false;
    for (; q < end && *q >= '0' && *q <= '9'; q++)
        if ((v = v * 10 + (*q - '0')) > INT32_MAX)
            return false;
    *out = (int32_t)v;
    *p = q;
    return true;
}

bool mc_layout_parse(const void *value, size_t len, mc_layout *l)
{
    const char *p = value, *end = p + len;
    mc_layout r = {0};
    if (!value || !field(&p, end, "partitions", &r.partitions))
        return false;
    while (p < end) {
        if (*p++ != ' ')
            return false;
        if (!field(&p, end, "growing-to", &r.growing_to) &&
            !field(&p, end, "previous", &r.previous))
            return false;
    }
    if ((r.growing_to && r.growing_to <= r.partitions) ||
        (r.previous && r.previous >= r.partitions))
        return false;
    *l = r;
    return true;
}
