/* The executor's window of unfinished records (see window.h).
 *
 * Why the bound is a bound. Let S be the set of offsets the window counts:
 * the unfinished and the not-yet-re-read listed ones at the last exact
 * computation, plus every offset read as unfinished since. Records are read
 * in offset order, so each new one extends S at its top, and the bound
 * grows by exactly the length of its delta. The real list is a subset of S
 * (some have finished), with a start that only moved up; removing an
 * element merges two deltas into one no longer than both (or drops the
 * first), so the real list is never longer than S's. */
#include "window.h"

#include <stdlib.h>

typedef struct slot {
    int64_t offset;
    bool unfinished;
} slot;

static slot *slot_at(const mc_window *w, size_t i)
{
    return mc_ring_at(&w->slots, i);
}

void mc_window_free(mc_window *w)
{
    mc_ring_free(&w->slots);
    free(w->redo);
    w->redo = NULL;
    w->n_redo = w->next_redo = 0;
}

bool mc_window_start(mc_window *w, int64_t committed, const char *md, size_t md_len)
{
    mc_window_free(w);
    *w = (mc_window){.start = committed, .end = -1, .bound_last = -1};
    mc_ring_init(&w->slots, sizeof(slot));
    if (committed < 0 || !md || md_len == 0)
        return true;
    int64_t e;
    if (!mc_exec_checkpoint_parse(md, md_len, committed, &e, &w->redo, &w->n_redo))
        return false;
    w->redo_end = e;
    w->bound = mc_window_list_length(w);
    w->bound_last = w->n_redo ? w->redo[w->n_redo - 1] : -1;
    return true;
}

mc_window_past mc_window_classify(mc_window *w, int64_t offset)
{
    if (offset >= w->redo_end)
        return MC_WINDOW_NEW;
    while (w->next_redo < w->n_redo && w->redo[w->next_redo] < offset)
        w->next_redo++;
    if (w->next_redo < w->n_redo && w->redo[w->next_redo] == offset) {
        w->next_redo++;
        return MC_WINDOW_UNFINISHED;
    }
    return MC_WINDOW_FINISHED;
}

/* What reading offset as unfinished adds to the bound. */
static size_t growth(const mc_window *w, int64_t offset)
{
    return w->bound_last < 0 ? 1 : mc_checkpoint_delta_len((uint64_t)(offset - w->bound_last));
}

/* The largest offset the list holds, or -1. */
static int64_t list_last(const mc_window *w)
{
    if (w->next_redo < w->n_redo)
        return w->redo[w->n_redo - 1];
    for (size_t i = mc_ring_len(&w->slots); i-- > 0;)
        if (slot_at(w, i)->unfinished)
            return slot_at(w, i)->offset;
    return -1;
}

bool mc_window_fits(mc_window *w, int64_t offset, mc_window_past past)
{
    if (past == MC_WINDOW_UNFINISHED)
        return true; /* counted already */
    if (w->bound + growth(w, offset) <= MC_EXEC_CHECKPOINT_LIST_MAX)
        return true;
    w->bound = mc_window_list_length(w);
    w->bound_last = list_last(w);
    return w->bound + growth(w, offset) <= MC_EXEC_CHECKPOINT_LIST_MAX;
}

/* Drops finished records from the front: the window starts at the oldest
 * unfinished one. */
static void trim(mc_window *w)
{
    while (mc_ring_len(&w->slots) > 0 && !slot_at(w, 0)->unfinished) {
        mc_ring_pop(&w->slots);
        w->base_seq++;
    }
}

uint64_t mc_window_add(mc_window *w, int64_t offset, mc_window_past past, bool unfinished)
{
    if (unfinished && past == MC_WINDOW_NEW) {
        w->bound += growth(w, offset);
        w->bound_last = offset;
    }
    if (mc_ring_push(&w->slots, &(slot){offset, unfinished}) != 0)
        return UINT64_MAX;
    w->end = offset + 1;
    uint64_t seq = w->base_seq + mc_ring_len(&w->slots) - 1;
    if (unfinished)
        w->unfinished++;
    else
        trim(w);
    return seq;
}

void mc_window_finish(mc_window *w, uint64_t seq)
{
    slot *s = slot_at(w, (size_t)(seq - w->base_seq));
    if (!s->unfinished)
        return;
    s->unfinished = false;
    w->unfinished--;
    trim(w);
}

uint64_t mc_window_oldest(const mc_window *w)
{
    return mc_ring_len(&w->slots) > 0 ? w->base_seq : UINT64_MAX;
}

int64_t mc_window_commit_offset(const mc_window *w)
{
    if (mc_ring_len(&w->slots) > 0)
        return slot_at(w, 0)->offset;
    return w->end >= 0 ? w->end : w->start;
}

size_t mc_window_list_length(const mc_window *w)
{
    int64_t prev = mc_window_commit_offset(w);
    size_t n = 0;
    for (size_t i = 0; i < mc_ring_len(&w->slots); i++) {
        const slot *s = slot_at(w, i);
        if (!s->unfinished)
            continue;
        n += mc_checkpoint_delta_len((uint64_t)(s->offset - prev));
        prev = s->offset;
    }
    for (size_t i = w->next_redo; i < w->n_redo; i++) {
        n += mc_checkpoint_delta_len((uint64_t)(w->redo[i] - prev));
        prev = w->redo[i];
    }
    return n;
}

int mc_window_checkpoint(const mc_window *w, char *buf, size_t len)
{
    int64_t c = mc_window_commit_offset(w), e = c;
    if (w->end > e)
        e = w->end;
    if (w->redo_end > e)
        e = w->redo_end;
    mc_exec_checkpoint_writer wr;
    mc_exec_checkpoint_begin(&wr, buf, len < MC_CHECKPOINT_MAX + 1 ? len : MC_CHECKPOINT_MAX + 1, c,
                             e);
    for (size_t i = 0; i < mc_ring_len(&w->slots); i++)
        if (slot_at(w, i)->unfinished)
            mc_exec_checkpoint_add(&wr, slot_at(w, i)->offset);
    for (size_t i = w->next_redo; i < w->n_redo; i++)
        mc_exec_checkpoint_add(&wr, w->redo[i]);
    return mc_exec_checkpoint_end(&wr);
}
