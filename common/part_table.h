/* Per-partition state, indexed by partition number: what a role keeps for
 * each partition it is assigned (the wheel's timers, the store's tasks, the
 * executor's window). One table for every role, so growing it for a partition
 * number past its end and iterating the partitions held are written once.
 * Holds pointers it does not own. Not thread-safe: the role's thread. */
#ifndef MOONCAKE_PART_TABLE_H
#define MOONCAKE_PART_TABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct mc_part_table {
    void **slots; /* indexed by partition; NULL: none held */
    int32_t cap;
    size_t count;
} mc_part_table; /* zero-initialised: empty */

/* partition's state, or NULL (none held, or a negative partition). */
void *mc_part_table_get(const mc_part_table *t, int32_t partition);
/* Holds state (not NULL) for partition, which must hold none; grows the
 * table as far as the partition number needs. 0, or -1 (NULL state, a
 * negative partition, out of memory: the table is unchanged). */
int mc_part_table_put(mc_part_table *t, int32_t partition, void *state);
/* Removes partition's state and returns it (the caller frees it); NULL if
 * none was held. */
void *mc_part_table_take(mc_part_table *t, int32_t partition);
/* The first state held at a partition >= *partition, which it sets to that
 * partition; NULL when there is none. Iterating:
 *   for (int32_t i = 0; (p = mc_part_table_next(t, &i)); i++) */
void *mc_part_table_next(const mc_part_table *t, int32_t *partition);
/* How many partitions hold state. */
size_t mc_part_table_count(const mc_part_table *t);
/* Frees the table itself (not the states: take them first) and empties it. */
void mc_part_table_free(mc_part_table *t);

#endif
