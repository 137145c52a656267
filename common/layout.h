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
 *   "partitions=M previous=N split=h0,...,h(N-1)"
 *                                   grown: a command found on its home under
 *                                   N below offset h of that partition was
 *                                   written before the growth; one at or
 *                                   after h, by a client that has not
 *                                   noticed it yet
 * The split (the ends of tasks' old partitions right after tasks grew) is
 * also on the growing record once tasks has grown, so that a second run of
 * the command keeps it. Versions of the layout before a growth are shifted
 * down by MC_LAYOUT_SHIFT, so every command written under the new layout is
 * newer than all of them. */
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
    int32_t n_split;    /* 0, or the old partition count: previous, or partitions while growing */
    int64_t *split;     /* n_split offsets, owned (mc_layout_free) */
} mc_layout;

/* Writes the record's value into buf, snprintf-style: returns the length
 * the whole value takes (when it is len or more, buf holds a truncated,
 * NUL-terminated prefix). */
size_t mc_layout_format(const mc_layout *l, char *buf, size_t len);
/* Parses a value of len bytes into *l (which then owns a split array; the
 * caller frees it with mc_layout_free); false, *l untouched, when it is
 * not a layout. Any thread. */
bool mc_layout_parse(const void *value, size_t len, mc_layout *l);
/* Frees what *l owns and zeroes it. */
void mc_layout_free(mc_layout *l);
/* Moves *from into *to (freeing what *to owned); *from is left empty. */
void mc_layout_move(mc_layout *to, mc_layout *from);
/* Whether the record at offset of the tasks partition was written before
 * the growth to this layout, by the split (without one: every record). */
bool mc_layout_before_split(const mc_layout *l, int32_t partition, int64_t offset);
/* A version written under the layout before the current one. */
static inline int64_t mc_layout_shift(int64_t version)
{
    return version - MC_LAYOUT_SHIFT;
}

#endif
