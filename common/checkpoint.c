/* The wheel's and the executor's commit-metadata checkpoints (see
 * checkpoint.h). */
#include "checkpoint.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mc_wheel_checkpoint_format(const mc_wheel_checkpoint *c, char *buf, size_t len)
{
    int n = snprintf(buf, len, "v1 o=%" PRId64, c->position);
    if (c->has_frontier && n >= 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " f=%" PRId64 " g=%" PRId64, c->frontier_due,
                      c->frontier_offset);
    if (c->layout && n >= 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, " l=%" PRId32 " x=%" PRId64 "%s", c->layout,
                      c->layout_at, c->layout_done ? " d=1" : "");
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

/* Reads " <name>=<int64>" at *p when it is there. */
static bool read_optional(const char **p, const char *end, const char *name, int64_t *out,
                          bool *found)
{
    size_t n = strlen(name);
    *found = false;
    if ((size_t)(end - *p) < n + 2 || (*p)[0] != ' ' || memcmp(*p + 1, name, n) != 0 ||
        (*p)[n + 1] != '=')
        return true;
    (*p)++;
    *found = true;
    return read_field(p, end, name, out);
}

/* " l=L x=X" (both or neither), the growth of the partition count. */
static bool read_layout(const char **p, const char *end, int32_t *layout, int64_t *at)
{
    int64_t l, x;
    bool has_l, has_x;
    if (!read_optional(p, end, "l", &l, &has_l))
        return false;
    if (!has_l)
        return true;
    if (!read_optional(p, end, "x", &x, &has_x) || !has_x || l < 1 || l > INT32_MAX || x < 0)
        return false;
    *layout = (int32_t)l;
    *at = x;
    return true;
}

bool mc_wheel_checkpoint_parse(const char *md, size_t len, mc_wheel_checkpoint *c)
{
    const char *p = md, *end = md + len;
    if (!md || len < 3 || memcmp(p, "v1 ", 3) != 0)
        return false;
    p += 3;
    mc_wheel_checkpoint r = {0};
    int64_t v;
    bool has_f, has_g, has_d;
    if (!read_field(&p, end, "o", &r.position) ||
        !read_optional(&p, end, "f", &r.frontier_due, &has_f) ||
        !read_optional(&p, end, "g", &r.frontier_offset, &has_g) || has_f != has_g ||
        !read_layout(&p, end, &r.layout, &r.layout_at) ||
        !read_optional(&p, end, "d", &v, &has_d) || (has_d && (v != 1 || !r.layout)))
        return false;
    r.has_frontier = has_f;
    r.layout_done = has_d;
    if (p != end || r.position < 0)
        return false;
    *c = r;
    return true;
}

void mc_store_checkpoint_format(const mc_store_checkpoint *c, char *buf, size_t len)
{
    if (c->layout)
        snprintf(buf, len, "s1 l=%" PRId32 " x=%" PRId64, c->layout, c->layout_at);
    else
        snprintf(buf, len, "s1");
}

bool mc_store_checkpoint_parse(const char *md, size_t len, mc_store_checkpoint *c)
{
    const char *p = md, *end = md + len;
    if (!md || len < 2 || memcmp(p, "s1", 2) != 0)
        return false;
    p += 2;
    mc_store_checkpoint r = {0};
    if (!read_layout(&p, end, &r.layout, &r.layout_at) || p != end)
        return false;
    *c = r;
    return true;
}

/* ---- the executor ------------------------------------------------------------------ */

static const char last_digit[] = "0123456789abcdefghijklmnopqrstuv";
static const char more_digit[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZwxyz-_";

size_t mc_checkpoint_delta_len(uint64_t delta)
{
    size_t n = 1;
    while (delta >>= 5)
        n++;
    return n;
}

void mc_exec_checkpoint_begin(mc_exec_checkpoint_writer *wr, char *buf, size_t cap,
                              int64_t committed, int64_t end)
{
    *wr = (mc_exec_checkpoint_writer){.buf = buf, .cap = cap, .committed = committed};
    int n = snprintf(buf, cap, "x2 e=%" PRId64, end);
    if (n < 0 || (size_t)n >= cap)
        wr->overflow = true;
    else
        wr->len = (size_t)n;
}

void mc_exec_checkpoint_add(mc_exec_checkpoint_writer *wr, int64_t offset)
{
    if (wr->overflow)
        return;
    uint64_t delta = (uint64_t)(offset - (wr->any ? wr->last : wr->committed));
    size_t need = mc_checkpoint_delta_len(delta) + (wr->any ? 0 : 3);
    if (wr->len + need >= wr->cap) {
        wr->overflow = true;
        return;
    }
    if (!wr->any) {
        memcpy(wr->buf + wr->len, " u=", 3);
        wr->len += 3;
    }
    size_t digits = mc_checkpoint_delta_len(delta);
    for (size_t i = digits; i-- > 0;) {
        unsigned d = (unsigned)((delta >> (5 * i)) & 31);
        wr->buf[wr->len++] = i ? more_digit[d] : last_digit[d];
    }
    wr->any = true;
    wr->last = offset;
}

int mc_exec_checkpoint_end(mc_exec_checkpoint_writer *wr)
{
    if (wr->overflow || wr->len >= wr->cap)
        return -1;
    wr->buf[wr->len] = '\0';
    return (int)wr->len;
}

/* Reads one x2 delta at *p; false on a malformed or overlong one. */
static bool read_delta32(const char **p, const char *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; *p < end && i < 13; i++) {
        const char *m = memchr(more_digit, **p, 32), *l = memchr(last_digit, **p, 32);
        if (!m && !l)
            return false;
        v = (v << 5) | (uint64_t)(m ? m - more_digit : l - last_digit);
        (*p)++;
        if (l) {
            *out = v;
            return v <= (uint64_t)INT64_MAX;
        }
    }
    return false;
}

/* Reads one x1 delta (decimal) at *p, and the comma after it. */
static bool read_delta10(const char **p, const char *end, uint64_t *out)
{
    const char *q = *p;
    uint64_t acc = 0;
    if (q == end || *q < '0' || *q > '9')
        return false;
    for (; q < end && *q >= '0' && *q <= '9'; q++) {
        if (acc > (uint64_t)INT64_MAX / 10)
            return false;
        acc = acc * 10 + (uint64_t)(*q - '0');
    }
    if (acc > (uint64_t)INT64_MAX)
        return false;
    if (q < end) {
        if (*q != ',' || q + 1 == end)
            return false;
        q++;
    }
    *p = q;
    *out = acc;
    return true;
}

bool mc_exec_checkpoint_parse(const char *md, size_t len, int64_t committed, int64_t *end_out,
                              int64_t **unfinished, size_t *n_out)
{
    *unfinished = NULL;
    *n_out = 0;
    if (!md || len < 3 || committed < 0)
        return false;
    bool x2 = memcmp(md, "x2 ", 3) == 0;
    if (!x2 && memcmp(md, "x1 ", 3) != 0)
        return false;
    const char *p = md + 3, *end = md + len;
    int64_t e;
    if (!read_field(&p, end, "e", &e) || e < committed)
        return false;
    size_t cap = 0;
    int64_t *v = NULL, at = committed;
    if (p < end) {
        if (end - p < 3 || memcmp(p, " u=", 3) != 0)
            return false;
        p += 3;
        if (p == end)
            return false;
        cap = (size_t)(end - p); /* at most one entry per character */
        v = malloc(cap * sizeof *v);
        if (!v)
            return false;
    }
    size_t n = 0;
    while (p < end) {
        uint64_t d;
        if (!(x2 ? read_delta32(&p, end, &d) : read_delta10(&p, end, &d)) || (n > 0 && d == 0) ||
            d > (uint64_t)(e - at)) {
            free(v);
            return false;
        }
        at += (int64_t)d;
        if (at >= e) {
            free(v);
            return false;
        }
        v[n++] = at;
    }
    *end_out = e;
    *unfinished = v;
    *n_out = n;
    return true;
}
