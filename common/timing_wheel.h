/* A hierarchical timing wheel with 1 ms resolution: the wheel stage's clock.
 * It holds every task the wheel processor has accepted and hands them back in
 * exact due order (ties in insertion order), so the stage can checkpoint "all
 * due <= T has fired" with two numbers per partition.
 *
 * Design (in the style of the Linux timer wheel, tokio and Kafka's TimingWheel):
 * MC_WHEEL_LEVELS levels of 64 slots each; level L slots are 64^L ms wide, so
 * 7 levels span 2^42 ms (~139 years). A timer sits in the level given by the
 * highest bit in which its due instant differs from the wheel's current
 * instant, so every slot only ever holds instants ahead of the current one and
 * a 64-bit occupancy bitmap per level finds the next non-empty slot with one
 * count-trailing-zeros: idle time costs nothing, however far time jumps. When
 * time reaches a coarse slot, its timers are "cascaded" (re-filed one or more
 * levels finer) until they reach level 0, where a slot is one exact ms. Due
 * instants beyond the wheel's span go to an overflow list (see mc_wheel_add).
 *
 * Intrusive, like the kernel's lists: the caller embeds an mc_timer in its
 * own struct and gets it back from mc_wheel_advance (MC_TIMER_OWNER recovers
 * the enclosing struct). The wheel allocates after mc_wheel_new only to
 * grow its heap of overdue timers.
 * Not thread-safe: one wheel per thread (the processor's poll loop). */
#ifndef MOONCAKE_TIMING_WHEEL_H
#define MOONCAKE_TIMING_WHEEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 7 x 6 bits = 2^42 ms of span: every instant before the year 2109 fits in
 * the wheel proper; beyond it the overflow list takes over. */
#define MC_WHEEL_LEVELS 7

typedef struct mc_timer_link {
    struct mc_timer_link *next, *prev;
} mc_timer_link;

/* The intrusive node, 24 bytes. Zero-initialise it before first use (zero
 * means "not scheduled"); the wheel owns `u` while it is scheduled. The node
 * stores no slot number: a slot's list head lives inside the wheel, so
 * cancel finds the slot from the head it is left next to (see timing_wheel.c).
 * A timer due before the wheel's drain position waits in a heap instead,
 * and then `u` holds its place there. */
typedef struct mc_timer {
    union {
        mc_timer_link link; /* in a slot: link.next == NULL when not scheduled */
        struct {
            void *tag; /* aliases link.next: the wheel's heap tag */
            size_t index;
        } heap;
    } u;
    int64_t due_ms; /* read-only for the caller: the due given to the last add */
} mc_timer;

/* The struct of type `type` whose member `member` is the timer `t`. */
#define MC_TIMER_OWNER(t, type, member) ((type *)(void *)((char *)(t)-offsetof(type, member)))

typedef struct mc_timing_wheel mc_timing_wheel;

/* Makes an empty wheel whose current time is now_ms (any int64, epoch ms in
 * practice). The caller owns it; free with mc_wheel_free(). NULL on ENOMEM. */
mc_timing_wheel *mc_wheel_new(int64_t now_ms);

/* Frees the wheel only. Timers still scheduled in it are not touched and are
 * left with dangling links: zero them before they are added anywhere again. */
void mc_wheel_free(mc_timing_wheel *w);

/* Schedules t (owned by the caller, who must keep it alive and unmoved until it
 * is popped or cancelled) to fire at due_ms. O(1), no allocation. A timer that
 * is already scheduled in this wheel is moved (rescheduled, and it counts as
 * inserted now for tie-breaking). Returns 0, or -1 on ENOMEM (t is then not
 * scheduled).
 * A due before the wheel's drain position (see mc_wheel_advance: a task
 * arriving late, or a clock that went back) goes to a heap of overdue timers
 * instead, O(log n) and the only case that may allocate; they keep the exact
 * order too, before everything in the wheel proper.
 * Overflow: a due whose instant differs from the current one above bit 42 (it
 * lies in a later 2^42 ms block, i.e. after the year 2109 for epoch times) is
 * appended to an overflow list. Adding and cancelling stay O(1); when time
 * reaches the next 2^42 ms boundary (once per ~139 years of wheel time, or in
 * one call when a test jumps there) the whole list is re-filed in one advance
 * call, O(overflow size) - O(1) if every overflow timer has the same due. */
int mc_wheel_add(mc_timing_wheel *w, mc_timer *t, int64_t due_ms);

/* Unschedules t. O(1) (O(log n) for an overdue one). A no-op when t is not scheduled (never added,
 * already popped, or already cancelled). t must not be scheduled in another wheel. */
void mc_wheel_cancel(mc_timing_wheel *w, mc_timer *t);

/* Whether t is scheduled in some wheel (added, and not yet popped or cancelled). */
bool mc_wheel_scheduled(const mc_timer *t);

/* Pops up to max timers due at or before now_ms into out[], in due order,
 * ties in insertion order; a popped timer is no longer scheduled and
 * belongs to the caller again. Returns how many it popped; call again while
 * it returns max. Nothing is ever popped before its due time: now_ms may go
 * backwards (a wall clock stepped back), and then what it re-opens waits
 * until now_ms reaches it again.
 *
 * The drain position only moves forward, as timers are popped: a call that
 * stops because it reached max leaves it at the instant of the last timer
 * popped (max == 0 leaves it where it was); any other call moves it to
 * now_ms, if that is later. Timers added with a due before it wait in the
 * overdue heap and come out first.
 *
 * Cost: O(popped) for timers already in level 0, plus O(levels) per slot
 * reached, plus O(log n) per overdue timer. Cascading a coarse slot
 * re-files each of its timers, so a call that reaches one pays for all of
 * them at once, amortised O(1) per timer and level (a timer cascades at
 * most MC_WHEEL_LEVELS - 1 times): with 1M timers spread over an hour, the
 * worst call (a 262 s slot of ~70k timers) takes ~8 ms, all cache misses.
 * With the stage's 60 s horizon a slot holds at most the timers due within
 * 60 s (that happens when time nears a 2^18 ms boundary and everything
 * just past it shares one level-3 slot), usually those of one 4 s level-2
 * slot. A slot whose timers all land in one finer slot (a burst due in the
 * same ms, say) is moved whole in O(1), so a burst of a million timers
 * never costs O(n) in one call: it drains in chunks of max at
 * O(max + levels) each. */
size_t mc_wheel_advance(mc_timing_wheel *w, int64_t now_ms, mc_timer **out, size_t max);

/* The earliest instant at which mc_wheel_advance could pop something, for
 * use as the poll timeout: exact for an overdue timer and when the earliest
 * timer is within the current 64 ms (level 0); otherwise a lower bound on the earliest due (the
 * smallest due ever filed in that coarse slot since it was last empty, so
 * exact unless that timer was cancelled) - after one advance to it the slot
 * is cascaded and the answer is exact or closer. May be <= the wheel's time
 * when due timers are waiting (a drain cut short by max). INT64_MAX when no
 * timer is scheduled. O(levels). */
int64_t mc_wheel_next_deadline(const mc_timing_wheel *w);

/* How many timers are scheduled, overflow included. O(1). */
size_t mc_wheel_count(const mc_timing_wheel *w);

#endif
