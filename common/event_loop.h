/* One event loop for the two places that wait on descriptors - the runner's
 * loop and the executor's HTTP thread - in the manner of Redis's ae.c: a set
 * of watched descriptors, each with its callback; one wake-up descriptor
 * another thread (or librdkafka) writes to; and a wait bounded by the next
 * deadline its owner computes. Callbacks may add, change and drop watches
 * (libcurl does, from inside socket_action), so each is looked up again
 * before it runs. Not thread-safe: one loop per thread. */
#ifndef MOONCAKE_EVENT_LOOP_H
#define MOONCAKE_EVENT_LOOP_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A ready descriptor's callback, when the owner has no call hook. */
typedef void (*mc_ev_fn)(void *arg, int fd, short revents, void *data);
/* A callback as the loop stores it: the owner's type, cast back by whoever
 * calls it (MC_EV_FN makes one). */
typedef void (*mc_ev_any)(void);
#define MC_EV_FN(f) ((mc_ev_any)(f))

typedef struct mc_ev_watch {
    int fd;
    short events;
    mc_ev_any fn;
    void *arg;
} mc_ev_watch;

/* What the owner does around the wait, as ae.c's beforesleep/aftersleep:
 * after_wait runs once poll(2) returns, failed or not (the owner reads its
 * clocks); call,
 * when set, runs each ready callback itself (its own callback type, what
 * must happen before it, what its failure means) and returns non-zero to
 * stop the dispatch; without it the loop calls fn as an mc_ev_fn. */
typedef struct mc_ev_hooks {
    void *data; /* passed to every callback and hook */
    void (*after_wait)(void *data);
    int (*call)(void *data, mc_ev_any fn, void *arg, int fd, short revents);
} mc_ev_hooks;

typedef struct mc_evloop {
    mc_ev_watch *watches;
    size_t n, cap;
    struct pollfd *pfds; /* [0] is the wake-up descriptor */
    size_t cap_pfds;
    int wake_fd; /* -1: none */
    mc_ev_hooks hooks;
} mc_evloop;

/* An empty loop with no wake-up descriptor. */
void mc_evloop_init(mc_evloop *l, mc_ev_hooks hooks);
/* Frees what the loop holds (not the descriptors). */
void mc_evloop_free(mc_evloop *l);
/* Watches fd for events with fn(arg, ...), replacing an earlier watch of fd;
 * events == 0 drops it. 0, or -1 on ENOMEM. */
int mc_evloop_watch(mc_evloop *l, int fd, short events, mc_ev_any fn, void *arg);
/* The descriptor whose readability wakes the wait (drained by the loop, so
 * it must be non-blocking); -1 for none. */
void mc_evloop_set_wake(mc_evloop *l, int fd);
static inline size_t mc_evloop_watched(const mc_evloop *l)
{
    return l->n;
}

/* Waits up to timeout_ms (0: not at all, -1: no bound) for a watched
 * descriptor or the wake-up one, drains the wake-up descriptor (*woken says
 * whether it was written; may be NULL), then runs the callback of each
 * ready descriptor in turn. Returns 0; the non-zero result of a call hook
 * that stopped the dispatch; or -1 with errno when poll(2) failed (EINTR: a
 * signal, nothing ran; ENOMEM). */
int mc_evloop_run_once(mc_evloop *l, int timeout_ms, bool *woken);

/* Milliseconds from now_ms until deadline_ms (INT64_MAX: none), clamped to
 * [0, cap_ms]: the timeout a wait for a deadline takes. */
int mc_evloop_timeout(int64_t now_ms, int64_t deadline_ms, int cap_ms);

#endif
