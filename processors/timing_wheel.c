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

struct mc_timing_wheel {
    mc_timer_link slot[NSLOTS]; /* sentinels; index level * 64 + s, then overflow */
    uint64_t lo[NSLOTS];        /* tick range filed since the slot was last empty */
    uint64_t hi[NSLOTS];
    uint64_t occupied[MC_WHEEL_LEVELS]; /* bit s of word L: slot L*64+s is non-empty */
    uint64_t cur;                       /* drain position: nothing before it is queued */
    uint64_t now;                       /* wheel time: the largest now_ms seen */
    size_t count;
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
    append_chain(w, idx, &t->link, &t->link);
    note_filed(w, idx, tick, tick);
}

static void unlink_timer(mc_timing_wheel *w, mc_timer *t)
{
    mc_timer_link *prev = t->link.prev, *next = t->link.next;
    prev->next = next;
    next->prev = prev;
    t->link.next = t->link.prev = NULL;
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

mc_timing_wheel *mc_wheel_new(int64_t now_ms)
{
    mc_timing_wheel *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    for (size_t i = 0; i < NSLOTS; i++) {
        w->slot[i].next = w->slot[i].prev = &w->slot[i];
        reset_slot_range(w, i);
    }
    w->cur = w->now = to_tick(now_ms);
    return w;
}

void mc_wheel_free(mc_timing_wheel *w)
{
    free(w);
}

void mc_wheel_add(mc_timing_wheel *w, mc_timer *t, int64_t due_ms)
{
    if (t->link.next)
        unlink_timer(w, t);
    t->due_ms = due_ms;
    uint64_t tick = to_tick(due_ms);
    file_timer(w, t, tick < w->cur ? w->cur : tick);
    w->count++;
}

void mc_wheel_cancel(mc_timing_wheel *w, mc_timer *t)
{
    if (t->link.next)
        unlink_timer(w, t);
}

bool mc_wheel_scheduled(const mc_timer *t)
{
    return t->link.next != NULL;
}

size_t mc_wheel_advance(mc_timing_wheel *w, int64_t now_ms, mc_timer **out, size_t max)
{
    uint64_t now = to_tick(now_ms);
    if (now > w->now)
        w->now = now;
    now = w->now;

    size_t n = 0;
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
