/* The checkpoints the wheel and the executor commit as offset-commit
 * metadata, in the same transaction as what they describe. Kafka keeps at
 * most 4096 bytes of UTF-8 per partition (offset.metadata.max.bytes), so
 * each format is bounded by construction, and every parser accepts exactly
 * what its writer produces, plus the earlier formats still found on a
 * cluster being upgraded. Pure functions: no Kafka, no state. */
#ifndef MOONCAKE_CHECKPOINT_H
#define MOONCAKE_CHECKPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What we allow ourselves of Kafka's 4096 bytes. */
#define MC_CHECKPOINT_MAX 4000

/* ---- the wheel: "v1 o=O f=F g=G" --------------------------------------------------
 * Every record below offset O (the position processed) whose (due, offset)
 * is at or before (F, G), the fired frontier, is done; without f and g,
 * nothing has fired. */
typedef struct mc_wheel_checkpoint {
    int64_t position; /* O */
    bool has_frontier;
    int64_t frontier_due, frontier_offset; /* F, G */
} mc_wheel_checkpoint;

/* Writes c into buf (at least 80 bytes). */
void mc_wheel_checkpoint_format(const mc_wheel_checkpoint *c, char *buf, size_t len);
/* Parses len bytes (not NUL-terminated); false when they are not a wheel
 * checkpoint. */
bool mc_wheel_checkpoint_parse(const char *md, size_t len, mc_wheel_checkpoint *c);

#endif
