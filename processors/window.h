/* The executor's window over one input partition: the records read since
 * the committed offset, which of them are unfinished, and the checkpoint
 * (checkpoint.h) that says so in the commit metadata. Calls finish out of
 * offset order, so the committed offset is held back to the oldest
 * unfinished record, and the checkpoint lists every unfinished one above
 * it; a restart skips what finished and takes again what did not.
 *
 * The checkpoint must always fit Kafka's metadata limit and always be
 * exact: a record left out would count as finished (its call never made),
 * and a finished one left in would be called again. So the window refuses a
 * record that would not fit (mc_window_fits): the executor gives it back
 * until enough calls have finished. Finishing a record never makes the
 * checkpoint longer (see mc_checkpoint_delta_len), so what fitted when a
 * record was read still fits at every commit after. The check is O(1): the
 * window keeps an upper bound on the checkpoint's length, grown as records
 * are read, and computes the exact length only when the bound says no.
 *
 * Pure: no Kafka, no threads. One per partition, on the runner's thread. */
#ifndef MOONCAKE_WINDOW_H
#define MOONCAKE_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checkpoint.h"
#include "ring.h"

typedef enum mc_window_past {
    MC_WINDOW_NEW,        /* not read before the last commit */
    MC_WINDOW_FINISHED,   /* the checkpoint says it finished: skip it */
    MC_WINDOW_UNFINISHED, /* the checkpoint lists it: take it again */
} mc_window_past;

typedef struct mc_window {
    mc_ring slots; /* {offset, unfinished} from the oldest unfinished record on */
    uint64_t base_seq;
    size_t unfinished;
    int64_t start; /* the committed offset the window began at; -1: none */
    int64_t end;   /* one past the last record read; -1: none yet */
    /* From the checkpoint read at the start: records below redo_end are
     * finished unless listed in redo (ascending); next_redo is the first
     * listed offset not read again yet. */
    int64_t redo_end;
    int64_t *redo;
    size_t n_redo, next_redo;
    /* An upper bound on the list's length, and the last offset it counts
     * (-1: none). */
    size_t bound;
    int64_t bound_last;
} mc_window;

/* Starts the window at the committed offset (-1 when none) with the
 * committed metadata (md_len bytes, or NULL). Returns false when the
 * metadata is there but is not a checkpoint: then nothing is known to have
 * finished, and every record from the committed offset counts as new. */
bool mc_window_start(mc_window *w, int64_t committed, const char *md, size_t md_len);
void mc_window_free(mc_window *w);

/* What the checkpoint says of the record at offset. Records must be
 * classified in offset order, each once. */
mc_window_past mc_window_classify(mc_window *w, int64_t offset);
/* Whether the record at offset (classified as past) can be read as
 * unfinished without the checkpoint growing past its limit. */
bool mc_window_fits(mc_window *w, int64_t offset, mc_window_past past);
/* Records that offset was read: unfinished (a call to make; the sequence
 * number it returns names it to mc_window_finish) or finished at once
 * (skipped, dead-lettered). Returns UINT64_MAX on ENOMEM. */
uint64_t mc_window_add(mc_window *w, int64_t offset, mc_window_past past, bool unfinished);
/* The record read as seq has finished (its outputs are in the transaction). */
void mc_window_finish(mc_window *w, uint64_t seq);
/* The sequence number of the oldest unfinished record, or UINT64_MAX. */
uint64_t mc_window_oldest(const mc_window *w);

/* The offset to commit: the oldest unfinished record, or where reading
 * goes on; -1 when nothing was read and nothing committed. */
int64_t mc_window_commit_offset(const mc_window *w);
/* Writes the checkpoint for mc_window_commit_offset(); returns its length
 * (never more than MC_CHECKPOINT_MAX), or -1 if it would not fit, which the
 * window's own checks rule out. */
int mc_window_checkpoint(const mc_window *w, char *buf, size_t len);
/* The list's exact length now (O(unfinished)). */
size_t mc_window_list_length(const mc_window *w);
/* Whether anything was read since the start. */
static inline bool mc_window_read_any(const mc_window *w)
{
    return w->end >= 0;
}

#endif
