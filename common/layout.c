/* The layout record's text form (see layout.h). Its bytes come from a
 * topic anyone with access can write, so the parser takes nothing on trust
 * (tests/fuzz/fuzz_layout_parse.c). */
#include "layout.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends like snprintf at buf + *n (len in all); *n counts what the whole
 * value needs. */
static void append(char *buf, size_t len, size_t *n, const char *fmt, int64_t v)
{
    size_t room = len > *n ? len - *n : 0;
    int k = snprintf(room ? buf + *n : NULL, room, fmt, v);
    if (k > 0)
        *n += (size_t)k;
}

size_t mc_layout_format(const mc_layout *l, char *buf, size_t len)
{
    size_t n = 0;
    if (len)
        buf[0] = '\0';
    append(buf, len, &n, "partitions=%" PRId64, l->partitions);
    if (l->growing_to)
        append(buf, len, &n, " growing-to=%" PRId64, l->growing_to);
    if (l->previous)
        append(buf, len, &n, " previous=%" PRId64, l->previous);
    for (int32_t i = 0; i < l->n_split; i++)
        append(buf, len, &n, i ? ",%" PRId64 : " split=%" PRId64, l->split[i]);
    return n;
}

/* Reads a decimal integer in [min, max] at *p; no sign, no leading zero. */
static bool number(const char **p, const char *end, int64_t min, int64_t max, int64_t *out)
{
    const char *q = *p;
    if (q == end || *q < '0' || *q > '9' ||
        (*q == '0' && q + 1 < end && q[1] >= '0' && q[1] <= '9'))
        return false;
    int64_t v = 0;
    for (; q < end && *q >= '0' && *q <= '9'; q++) {
        if (v > (max - (*q - '0')) / 10)
            return false;
        v = v * 10 + (*q - '0');
    }
    if (v < min)
        return false;
    *out = v;
    *p = q;
    return true;
}

/* Reads "name=" at *p. */
static bool name(const char **p, const char *end, const char *want)
{
    size_t n = strlen(want);
    if ((size_t)(end - *p) < n + 1 || memcmp(*p, want, n) != 0 || (*p)[n] != '=')
        return false;
    *p += n + 1;
    return true;
}

static bool count_field(const char **p, const char *end, const char *want, int32_t *out)
{
    int64_t v;
    if (*out || !name(p, end, want) || !number(p, end, 1, INT32_MAX, &v))
        return false;
    *out = (int32_t)v;
    return true;
}

/* "split=h,h,...": at most max offsets. The array grows with what is
 * there, so its size follows the text's, not a count the text claims. */
static bool split_field(const char **p, const char *end, int32_t max, mc_layout *l)
{
    if (l->split || !name(p, end, "split") || max <= 0)
        return false;
    int32_t cap = 0;
    for (;;) {
        if (l->n_split == max)
            return false;
        if (l->n_split == cap) {
            cap = cap ? (cap > max / 2 ? max : cap * 2) : (max < 16 ? max : 16);
            int64_t *v = realloc(l->split, (size_t)cap * sizeof *v);
            if (!v)
                return false;
            l->split = v;
        }
        if (!number(p, end, 0, INT64_MAX, &l->split[l->n_split]))
            return false;
        l->n_split++;
        if (*p == end || **p != ',')
            return true;
        (*p)++;
    }
}

bool mc_layout_parse(const void *value, size_t len, mc_layout *out)
{
    const char *p = value, *end = p + len;
    mc_layout r = {0};
    if (!value || !count_field(&p, end, "partitions", &r.partitions))
        return false;
    bool ok = true;
    while (ok && p < end) {
        if (*p++ != ' ' || p == end) {
            ok = false;
        } else if (*p == 'g') {
            ok = count_field(&p, end, "growing-to", &r.growing_to);
        } else if (*p == 'p') {
            ok = count_field(&p, end, "previous", &r.previous);
        } else {
            /* The split belongs to the old count: previous=, else partitions=
             * while growing; it comes last. */
            ok = (r.previous || r.growing_to) &&
                 split_field(&p, end, r.previous ? r.previous : r.partitions, &r) && p == end;
        }
    }
    ok = ok && !(r.growing_to && r.previous) && !(r.growing_to && r.growing_to <= r.partitions) &&
         !(r.previous && r.previous >= r.partitions) &&
         (!r.split || r.n_split == (r.previous ? r.previous : r.partitions));
    if (!ok) {
        mc_layout_free(&r);
        return false;
    }
    *out = r;
    return true;
}

void mc_layout_free(mc_layout *l)
{
    free(l->split);
    *l = (mc_layout){0};
}

void mc_layout_move(mc_layout *to, mc_layout *from)
{
    if (to == from)
        return;
    mc_layout_free(to);
    *to = *from;
    *from = (mc_layout){0};
}

bool mc_layout_before_split(const mc_layout *l, int32_t partition, int64_t offset)
{
    return !l->split || partition < 0 || partition >= l->n_split || offset < l->split[partition];
}
