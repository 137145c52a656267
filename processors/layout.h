/* The partition layout: how many partitions every mooncake topic has, which
 * decides each key's home (mc_key_partition). It lives in one record of the
 * compacted topic <prefix>layout, so that growing the partition count is a
 * step mooncake takes on purpose (mooncakectl partitions grow) rather than
 * something that happens to it:
 *   "partitions=N"                  the layout in force
 *   "partitions=N growing-to=M"     a growth is under way: routers stop,
 *                                   and each marks its partitions of wheel
 *                                   where the state of keys whose home
 *                                   moves is to be moved
 *   "partitions=M previous=N"       grown: a command still found on its home
 *                                   under N was written before the growth
 * Versions of the layout before a growth are shifted down by
 * MC_LAYOUT_SHIFT, so every command written under the new layout is newer
 * than all of them. */
#ifndef MOONCAKE_LAYOUT_H
#define MOONCAKE_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MC_LAYOUT_KEY "layout"
/* On the marker a router writes to each of its partitions of wheel when a
 * growth starts: the partition count being grown to. */
#define MC_LAYOUT_HEADER "mooncake-layout"
/* Room for 128 growths, each below the one after it, above INT64_MIN. */
#define MC_LAYOUT_SHIFT (INT64_C(1) << 56)

typedef struct mc_layout {
    int32_t partitions;
    int32_t growing_to; /* 0: no growth under way */
    int32_t previous;   /* 0: none */
} mc_layout;

/* Writes the record's value; returns its length. */
int mc_layout_format(const mc_layout *l, char *buf, size_t len);
/* Parses a value of len bytes; false when it is not a layout. */
bool mc_layout_parse(const void *value, size_t len, mc_layout *l);
/* A version written under the layout before the current one. */
static inline int64_t mc_layout_shift(int64_t version)
{
    return version - MC_LAYOUT_SHIFT;
}

#endif
