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

/* ---- the wheel: "v1 o=O f=F g=G l=L x=X d=1" ---------------------------------------
 * Every record below offset O (the position processed) whose (due, offset)
 * is at or before (F, G), the fired frontier, is done; without f and g,
 * nothing has fired. After a growth of the partition count (layout.h), L is
 * the layout the partition moved keys out for at its marker, offset X, and
 * d=1 says every call fired before the marker has finished (no more next
 * attempts of moved keys will pass through). */
typedef struct mc_wheel_checkpoint {
    int64_t position; /* O */
    bool has_frontier;
    int64_t frontier_due, frontier_offset; /* F, G */
    int32_t layout;                        /* L; 0: none */
    int64_t layout_at;                     /* X */
    bool layout_done;
} mc_wheel_checkpoint;

/* Writes c into buf (at least 128 bytes). */
void mc_wheel_checkpoint_format(const mc_wheel_checkpoint *c, char *buf, size_t len);
/* Parses len bytes (not NUL-terminated); false when they are not a wheel
 * checkpoint. */
bool mc_wheel_checkpoint_parse(const char *md, size_t len, mc_wheel_checkpoint *c);

/* ---- the store: "s1 l=L x=X" -----------------------------------------------------
 * The layout the partition moved keys out for at its marker X (the store
 * commits the position it processed, so only a growth needs saying). */
typedef struct mc_store_checkpoint {
    int32_t layout;
    int64_t layout_at;
} mc_store_checkpoint;
void mc_store_checkpoint_format(const mc_store_checkpoint *c, char *buf, size_t len);
bool mc_store_checkpoint_parse(const char *md, size_t len, mc_store_checkpoint *c);

/* ---- the executor: "x2 e=E u=<deltas>" ---------------------------------------------
 * Of the records from the committed offset C up to E, those at the listed
 * offsets are unfinished (their calls may not have been made or answered);
 * every other one is finished, its outputs committed. The list is deltas:
 * the first from C, each next from the one before, every delta written in
 * a self-delimiting base-32 form (continuation digits in one alphabet, the
 * last digit in another, no separators), so a run of consecutive unfinished
 * records - a burst held until due - costs one character each. The earlier
 * "x1 e=E u=D,D,..." (decimal deltas, commas) is still read. */

/* Characters one delta takes. Merging two neighbours (the record between
 * them finished) never takes more than the two did, which is what lets the
 * executor bound the checkpoint's size as it reads. */
size_t mc_checkpoint_delta_len(uint64_t delta);
/* The longest "x2 e=E u=" prefix; the list may take the rest of
 * MC_CHECKPOINT_MAX. */
#define MC_EXEC_CHECKPOINT_PREFIX_MAX 28
#define MC_EXEC_CHECKPOINT_LIST_MAX (MC_CHECKPOINT_MAX - MC_EXEC_CHECKPOINT_PREFIX_MAX)

/* An executor checkpoint being written: append the unfinished offsets in
 * ascending order, then finish it. */
typedef struct mc_exec_checkpoint_writer {
    char *buf;
    size_t cap, len;
    int64_t committed, last;
    bool any, overflow;
} mc_exec_checkpoint_writer;
/* Starts "x2 e=end" into buf (cap bytes) for committed offset committed. */
void mc_exec_checkpoint_begin(mc_exec_checkpoint_writer *wr, char *buf, size_t cap,
                              int64_t committed, int64_t end);
/* Appends one unfinished offset (> the last, >= committed, < end). */
void mc_exec_checkpoint_add(mc_exec_checkpoint_writer *wr, int64_t offset);
/* NUL-terminates; returns the length, or -1 when it did not fit in cap. */
int mc_exec_checkpoint_end(mc_exec_checkpoint_writer *wr);

/* Parses an executor checkpoint (x1 or x2) committed with offset committed:
 * *end gets E and *unfinished a malloc'd ascending array (the caller frees
 * it) of *n offsets, each in [committed, E). False when md is not one
 * (nothing then is known to be finished). */
bool mc_exec_checkpoint_parse(const char *md, size_t len, int64_t committed, int64_t *end,
                              int64_t **unfinished, size_t *n);

#endif
