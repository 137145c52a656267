/* Hierarchical timing wheel: the wheel stage's source of "what is due now",
 * exact to the millisecond and in due order.
 *
 * Layout. Times are kept as unsigned "ticks" (the int64 ms with its sign bit
 * flipped, so ordering is preserved and negative times need no special case).
 * Level L (0 <= L < MC_WHEEL_LEVELS) has 64 slots, slot s covering the ticks
 * whose bits [6L, 6L+6) equal s. A timer due at tick d is filed, relative to
 * the drain position `cur`, at the level of the highest bit in which d and cur
 * differ (level 0 when d == cur) - the scheme tokio uses. Two consequences
 * make the whole structure simple:
 *  - a level only holds slots strictly ahead of cur's own index at that level
 *    (level 0: at or ahead), so there is no ring wrap-around to reason about,
 *    and every timer in level L is earlier than every timer in level L+1;
 *  - hence the next thing to do is always "lowest non-empty level, lowest set
 *    bit of its 64-bit occupancy word": O(levels), however far away it is.
 * A level-0 slot holds a single tick, so popping it is exact. When cur reaches
 * the first tick of a coarse slot, that slot's timers are cascaded: re-filed
 * relative to the new cur, which puts each at a finer level (possibly level 0
 * straight away). Until cur reaches a coarse slot, the slot's timers need no
 * attention at all, which is what makes a wheel O(1) per timer.
 *
 * Order. Slot lists are FIFO and a cascade walks its source in order into
 * lower slots that were empty (everything earlier has already been popped),
 * so every list stays in insertion order and ties pop in insertion order
 * without a sequence number in the node.
 *
 * Bursts. Each slot remembers the smallest and largest tick ever filed in it
 * since it was last empty (a conservative range: cancel does not shrink it).
 * If both ends map to the same finer slot, so does everything between, and
 * the cascade splices the whole list over in O(1): a million timers due in
 * the same ms cost nothing to cascade, and popping them in chunks is O(max).
 * The same range gives mc_wheel_next_deadline a lower bound tighter than the
 * slot's start, so a poll loop does not wake up just to cascade.
 *
 * No slot number in the node. Each slot's list is circular through a
 * sentinel link stored in the wheel. Unlinking a node leaves its neighbours
 * equal exactly when the list became empty, and then that neighbour is the
 * sentinel, whose position in the slot array names the slot whose occupancy
 * bit must be cleared. That keeps mc_timer at 24 bytes and makes splicing a
 * whole list O(1) (no per-node slot field to rewrite).
 *
 * Overdue timers. A timer due before cur (a task that arrives late, after
 * the drain passed its instant; or one re-opened by a clock that went back)
 * has no slot: every slot lies at or ahead of cur. Filing it at cur would
 * pop it after what is queued there already, out of due order, and the
 * wheel stage's checkpoint ("everything up to the fired frontier is done")
 * depends on due order. So it goes to a binary heap ordered by (due,
 * insertion sequence), whose entries hold the timer and whose timers hold
 * their index in it. Everything in the heap is due before cur and
 * everything in the slots at or after it, so the heap simply comes first.
 *
 * Time only moves forward inside the wheel (cur), but the caller's clock may
 * not: advance pops only what is due by the caller's now, so a wall clock
 * stepped back fires nothing early; it delays what the step re-opened.
 *
 * Overflow. A tick that differs from cur above bit 6 * MC_WHEEL_LEVELS is
 * parked in one more list, treated like a slot of a level above the top. It
 * is re-filed (cascaded) when cur reaches the next 2^42-tick boundary, which
 * can only happen once the wheel proper is empty.
 *
 * Compared with ae.c's timer list (an unsorted list scanned on every loop),
 * this trades ~14 KB of fixed memory for O(1) add/cancel and no scanning. */
#include "timing_wheel.h"

#include <stdlib.h>

#define SLOT_BITS 6
#define SLOTS (1u << SLOT_BITS)
#define SPAN_BITS (SLOT_BITS * MC_WHEEL_LEVELS)
#define OVERFLOW_SLOT (MC_WHEEL_LEVELS * SLOTS)
#define NSLOTS (OVERFLOW_SLOT + 1)

_Static_assert(SPAN_BITS < 64, "the wheel must span less than the tick space");
_Static_assert(sizeof(mc_timer) <= 32, "mc_timer must stay small");

/* An overdue timer's place in the heap. */
typedef struct heap_entry {
    uint64_t tick;
    uint64_t seq; /* insertion order, for ties */
    mc_timer *t;
} heap_entry;

struct mc_timing_wheel {
    mc_timer_link slot[NSLOTS]; /* sentinels; index level * 64 + s, then overflow */
    uint64_t lo[NSLOTS];        /* tick range filed since the slot was last empty */
    uint64_t hi[NSLOTS];
    uint64_t occupied[MC_WHEEL_LEVELS]; /* bit s of word L: slot L*64+s is non-empty */
    uint64_t cur;                       /* drain position: no slot lies before it */
    size_t count;                       /* in slots and in the heap */
    heap_entry *heap;                   /* overdue timers, a min-heap on (tick, seq) */
    size_t heap_n, heap_cap;
    uint64_t seq;
    char heap_tag; /* its address marks a timer that is in the heap */
};

#define SIGN_BIT (UINT64_C(1) << 63)

static uint64_t to_tick(int64_t ms)
{
    return (uint64_t)ms ^ SIGN_BIT;
}

/* Written without out-of-range conversions, which C leaves to the implementation. */
static int64_t to_ms(uint64_t tick)
{
    if (tick >= SIGN_BIT)
        return (int64_t)(tick - SIGN_BIT);
    return -(int64_t)(SIGN_BIT - 1 - tick) - 1;
}

/* Ticks below bit `bits`. */
static uint64_t low_mask(unsigned bits)
{
    return (UINT64_C(1) << bits) - 1;
}

static bool list_empty(const mc_timer_link *head)
{
    return head->next == head;
}

static void reset_slot_range(mc_timing_wheel *w, size_t idx)
{
    w->lo[idx] = UINT64_MAX;
    w->hi[idx] = 0;
}

/* Which slot a timer due at `tick` belongs in, given the current drain
 * position. Requires tick >= w->cur. */
static size_t slot_for(const mc_timing_wheel *w, uint64_t tick)
{
    uint64_t diff = tick ^ w->cur;
    if (diff >> SPAN_BITS)
        return OVERFLOW_SLOT;
    unsigned level = diff ? (unsigned)(63 - __builtin_clzll(diff)) / SLOT_BITS : 0;
    return level * SLOTS + (size_t)((tick >> (level * SLOT_BITS)) & (SLOTS - 1));
}

/* Records that ticks [lo, hi] were filed into slot idx. */
static void note_filed(mc_timing_wheel *w, size_t idx, uint64_t lo, uint64_t hi)
{
    if (lo < w->lo[idx])
        w->lo[idx] = lo;
    if (hi > w->hi[idx])
        w->hi[idx] = hi;
    if (idx < OVERFLOW_SLOT)
        w->occupied[idx / SLOTS] |= UINT64_C(1) << (idx % SLOTS);
}

/* Appends the chain first..last (linked through next) to slot idx's list. */
static void append_chain(mc_timing_wheel *w, size_t idx, mc_timer_link *first, mc_timer_link *last)
{
    mc_timer_link *head = &w->slot[idx];
    first->prev = head->prev;
    head->prev->next = first;
    last->next = head;
    head->prev = last;
}

/* Files t as due at tick (>= cur). */
static void file_timer(mc_timing_wheel *w, mc_timer *t, uint64_t tick)
{
    size_t idx = slot_for(w, tick);
    append_chain(w, idx, &t->u.link, &t->u.link);
    note_filed(w, idx, tick, tick);
}

static void unlink_timer(mc_timing_wheel *w, mc_timer *t)
{
    mc_timer_link *prev = t->u.link.prev, *next = t->u.link.next;
    prev->next = next;
    next->prev = prev;
    t->u.link.next = t->u.link.prev = NULL;
    w->count--;
    if (prev == next) { /* only the sentinel is left: prev points into w->slot */
        size_t idx = (size_t)(prev - w->slot);
        if (idx < OVERFLOW_SLOT)
            w->occupied[idx / SLOTS] &= ~(UINT64_C(1) << (idx % SLOTS));
        reset_slot_range(w, idx);
    }
}

/* Empties slot idx and re-files its timers relative to cur, which has just
 * reached the slot's first tick (or, for the overflow list, the boundary of
 * a new 2^42-tick block). Order within the slot is kept. */
static void cascade(mc_timing_wheel *w, size_t idx)
{
    mc_timer_link *head = &w->slot[idx];
    mc_timer_link *first = head->next, *last = head->prev;
    uint64_t lo = w->lo[idx], hi = w->hi[idx];
    head->next = head->prev = head;
    if (idx < OVERFLOW_SLOT)
        w->occupied[idx / SLOTS] &= ~(UINT64_C(1) << (idx % SLOTS));
    reset_slot_range(w, idx);
    if (first == head)
        return;

    /* Destination slots are contiguous tick ranges, so if both ends of the
     * filed range land in one slot, every timer does: move the list whole. */
    size_t dest = slot_for(w, lo);
    if (dest == slot_for(w, hi)) {
        append_chain(w, dest, first, last);
        note_filed(w, dest, lo, hi);
        return;
    }
    for (mc_timer_link *p = first;;) {
        mc_timer_link *next = p->next; /* filing overwrites p->next */
        mc_timer *t = (mc_timer *)p;
        uint64_t tick = to_tick(t->due_ms);
        file_timer(w, t, tick < w->cur ? w->cur : tick);
        if (p == last)
            break;
        p = next;
    }
}

/* ---- the overdue heap ---------------------------------------------------------- */

static bool in_heap(const mc_timing_wheel *w, const mc_timer *t)
{
    return t->u.heap.tag == &w->heap_tag;
}

static bool heap_less(const heap_entry *a, const heap_entry *b)
{
    return a->tick < b->tick || (a->tick == b->tick && a->seq < b->seq);
}

static void heap_place(mc_timing_wheel *w, size_t i, heap_entry e)
{
    w->heap[i] = e;
    e.t->u.heap.index = i;
}

static void heap_up(mc_timing_wheel *w, size_t i)
{
    heap_entry e = w->heap[i];
    while (i > 0 && heap_less(&e, &w->heap[(i - 1) / 2])) {
        heap_place(w, i, w->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_place(w, i, e);
}

static void heap_down(mc_timing_wheel *w, size_t i)
{
    heap_entry e = w->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= w->heap_n)
            break;
        if (c + 1 < w->heap_n && heap_less(&w->heap[c + 1], &w->heap[c]))
            c++;
        if (!heap_less(&w->heap[c], &e))
            break;
        heap_place(w, i, w->heap[c]);
        i = c;
    }
    heap_place(w, i, e);
}

static int heap_push(mc_timing_wheel *w, mc_timer *t, uint64_t tick)
{
    if (w->heap_n == w->heap_cap) {
        size_t cap = w->heap_cap ? w->heap_cap * 2 : 64;
        heap_entry *h = realloc(w->heap, cap * sizeof *h);
        if (!h)
            return -1;
        w->heap = h;
        w->heap_cap = cap;
    }
    t->u.heap.tag = &w->heap_tag;
    w->heap[w->heap_n] = (heap_entry){tick, w->seq++, t};
    heap_up(w, w->heap_n++);
    return 0;
}

static void heap_remove(mc_timing_wheel *w, mc_timer *t)
{
    size_t i = t->u.heap.index;
    t->u.heap.tag = NULL;
    t->u.heap.index = 0;
    w->count--;
    heap_entry last = w->heap[--w->heap_n];
    if (i == w->heap_n)
        return;
    heap_place(w, i, last);
    heap_down(w, i);
    heap_up(w, last.t->u.heap.index);
}

/* Removes t from wherever it is scheduled. */
static void unschedule(mc_timing_wheel *w, mc_timer *t)
{
    if (in_heap(w, t))
        heap_remove(w, t);
    else if (t->u.link.next)
        unlink_timer(w, t);
}

/* ---- the wheel ------------------------------------------------------------------ */

mc_timing_wheel *mc_wheel_new(int64_t now_ms)
{
    mc_timing_wheel *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    for (size_t i = 0; i < NSLOTS; i++) {
        w->slot[i].next = w->slot[i].prev = &w->slot[i];
        reset_slot_range(w, i);
    }
    w->cur = to_tick(now_ms);
    return w;
}

void mc_wheel_free(mc_timing_wheel *w)
{
    if (!w)
        return;
    free(w->heap);
    free(w);
}

int mc_wheel_add(mc_timing_wheel *w, mc_timer *t, int64_t due_ms)
{
    unschedule(w, t);
    t->due_ms = due_ms;
    uint64_t tick = to_tick(due_ms);
    if (tick < w->cur) {
        if (heap_push(w, t, tick) != 0)
            return -1;
    } else {
        file_timer(w, t, tick);
    }
    w->count++;
    return 0;
}

void mc_wheel_cancel(mc_timing_wheel *w, mc_timer *t)
{
    unschedule(w, t);
}

bool mc_wheel_scheduled(const mc_timer *t)
{
    return t->u.link.next != NULL;
}

/* Pops overdue timers due by now, up to max - n of them. */
static size_t pop_overdue(mc_timing_wheel *w, uint64_t now, mc_timer **out, size_t n, size_t max)
{
    while (n < max && w->heap_n > 0 && w->heap[0].tick <= now) {
        mc_timer *t = w->heap[0].t;
        heap_remove(w, t);
        out[n++] = t;
    }
    return n;
}

size_t mc_wheel_advance(mc_timing_wheel *w, int64_t now_ms, mc_timer **out, size_t max)
{
    uint64_t now = to_tick(now_ms);
    size_t n = pop_overdue(w, now, out, 0, max);
    /* Whatever is left in the heap, and everything in the slots, is due
     * after it: nothing more unless the heap is empty. */
    if (n == max || w->heap_n > 0 || now < w->cur)
        return n;
    while (n < max) {
        /* Level-0 slot of cur: by construction it holds exactly the timers
         * due at cur, in insertion order. */
        mc_timer_link *here = &w->slot[w->cur & (SLOTS - 1)];
        if (!list_empty(here)) {
            do {
                mc_timer *t = (mc_timer *)here->next;
                unlink_timer(w, t);
                out[n++] = t;
            } while (n < max && !list_empty(here));
            continue;
        }

        unsigned level = 0;
        while (level < MC_WHEEL_LEVELS && !w->occupied[level])
            level++;
        if (level == MC_WHEEL_LEVELS) {
            /* Only the overflow list may be left; it becomes reachable at the
             * next 2^42-tick boundary (which exists: something lies beyond). */
            if (!list_empty(&w->slot[OVERFLOW_SLOT])) {
                uint64_t boundary = (w->cur | low_mask(SPAN_BITS)) + 1;
                if (boundary <= now) {
                    w->cur = boundary;
                    cascade(w, OVERFLOW_SLOT);
                    continue;
                }
            }
            w->cur = now;
            break;
        }

        unsigned s = (unsigned)__builtin_ctzll(w->occupied[level]);
        uint64_t start =
            (w->cur & ~low_mask((level + 1) * SLOT_BITS)) | ((uint64_t)s << (level * SLOT_BITS));
        if (start > now) {
            /* Nothing is due. Jumping cur to now keeps every timer correctly
             * filed, since all of them lie at or beyond `start`. */
            w->cur = now;
            break;
        }
        w->cur = start;
        if (level > 0)
            cascade(w, level * SLOTS + s);
    }
    return n;
}

int64_t mc_wheel_next_deadline(const mc_timing_wheel *w)
{
    if (w->heap_n > 0)
        return to_ms(w->heap[0].tick);
    for (unsigned level = 0; level < MC_WHEEL_LEVELS; level++) {
        if (w->occupied[level]) {
            size_t idx = level * SLOTS + (size_t)__builtin_ctzll(w->occupied[level]);
            return to_ms(w->lo[idx]);
        }
    }
    if (!list_empty(&w->slot[OVERFLOW_SLOT]))
        return to_ms(w->lo[OVERFLOW_SLOT]);
    return INT64_MAX;
}

size_t mc_wheel_count(const mc_timing_wheel *w)
{
    return w->count;
}
