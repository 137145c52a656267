/* The per-partition table (see part_table.h). */
#include "part_table.h"

#include <stdlib.h>
#include <string.h>

void *mc_part_table_get(const mc_part_table *t, int32_t partition)
{
    return partition >= 0 && partition < t->cap ? t->slots[partition] : NULL;
}

/* Partition numbers are small and dense (0..N-1), so the table is an array
 * doubled as far as the largest number seen. */
static int grow(mc_part_table *t, int32_t partition)
{
    int32_t n = t->cap ? t->cap : 16;
    while (n <= partition)
        n *= 2;
    void **v = realloc(t->slots, (size_t)n * sizeof *v);
    if (!v)
        return -1;
    memset(v + t->cap, 0, (size_t)(n - t->cap) * sizeof *v);
    t->slots = v;
    t->cap = n;
    return 0;
}

int mc_part_table_put(mc_part_table *t, int32_t partition, void *state)
{
    if (!state || partition < 0 || (partition >= t->cap && grow(t, partition) != 0))
        return -1;
    if (!t->slots[partition])
        t->count++;
    t->slots[partition] = state;
    return 0;
}

void *mc_part_table_take(mc_part_table *t, int32_t partition)
{
    void *state = mc_part_table_get(t, partition);
    if (state) {
        t->slots[partition] = NULL;
        t->count--;
    }
    return state;
}

void *mc_part_table_next(const mc_part_table *t, int32_t *partition)
{
    for (int32_t i = *partition < 0 ? 0 : *partition; i < t->cap; i++) {
        if (t->slots[i]) {
            *partition = i;
            return t->slots[i];
        }
    }
    return NULL;
}

size_t mc_part_table_count(const mc_part_table *t)
{
    return t->count;
}

void mc_part_table_free(mc_part_table *t)
{
    free(t->slots);
    *t = (mc_part_table){0};
}
