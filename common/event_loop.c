/* The event loop behind the runner and the executor's HTTP thread (see
 * event_loop.h). Linear lookups: a loop watches at most a few hundred
 * sockets, and a poll(2) of them costs more than the scan. */
#include "event_loop.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

void mc_evloop_init(mc_evloop *l, mc_ev_hooks hooks)
{
    *l = (mc_evloop){.wake_fd = -1, .hooks = hooks};
}

void mc_evloop_free(mc_evloop *l)
{
    free(l->watches);
    free(l->pfds);
    l->watches = NULL;
    l->pfds = NULL;
    l->n = l->cap = l->cap_pfds = 0;
}

static mc_ev_watch *find(mc_evloop *l, int fd)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->watches[i].fd == fd)
            return &l->watches[i];
    return NULL;
}

int mc_evloop_watch(mc_evloop *l, int fd, short events, mc_ev_any fn, void *arg)
{
    mc_ev_watch *w = find(l, fd);
    if (w) {
        if (events)
            *w = (mc_ev_watch){fd, events, fn, arg};
        else
            *w = l->watches[--l->n];
        return 0;
    }
    if (!events)
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        mc_ev_watch *v = realloc(l->watches, cap * sizeof *v);
        if (!v)
            return -1;
        l->watches = v;
        l->cap = cap;
    }
    l->watches[l->n++] = (mc_ev_watch){fd, events, fn, arg};
    return 0;
}

void mc_evloop_set_wake(mc_evloop *l, int fd)
{
    l->wake_fd = fd;
}

static int poll_all(mc_evloop *l, int timeout_ms)
{
    size_t n = l->n + 1;
    if (n > l->cap_pfds) {
        struct pollfd *p = realloc(l->pfds, n * 2 * sizeof *p);
        if (!p) {
            errno = ENOMEM;
            return -1;
        }
        l->pfds = p;
        l->cap_pfds = n * 2;
    }
    /* poll(2) ignores a negative descriptor: no wake-up, no entry. */
    l->pfds[0] = (struct pollfd){.fd = l->wake_fd, .events = POLLIN};
    for (size_t i = 0; i < l->n; i++)
        l->pfds[i + 1] = (struct pollfd){.fd = l->watches[i].fd, .events = l->watches[i].events};
    return poll(l->pfds, (nfds_t)n, timeout_ms);
}

int mc_evloop_run_once(mc_evloop *l, int timeout_ms, bool *woken)
{
    size_t n = l->n + 1; /* what this poll covers: callbacks may grow the set */
    int ready = poll_all(l, timeout_ms);
    int saved = errno;
    if (woken)
        *woken = false;
    if (l->hooks.after_wait) /* after a failed wait too: it may have been long */
        l->hooks.after_wait(l->hooks.data);
    if (ready < 0) {
        errno = saved;
        return -1;
    }
    if (l->wake_fd >= 0 && l->pfds[0].revents) {
        char drain[256];
        while (read(l->wake_fd, drain, sizeof drain) > 0)
            ;
        if (woken)
            *woken = true;
        ready--;
    }
    for (size_t i = 1; i < n && ready > 0; i++) {
        struct pollfd pfd = l->pfds[i];
        if (!pfd.revents)
            continue;
        ready--;
        const mc_ev_watch *w = find(l, pfd.fd);
        if (!w)
            continue; /* dropped by an earlier callback */
        mc_ev_any fn = w->fn;
        void *arg = w->arg;
        if (!l->hooks.call) {
            ((mc_ev_fn)fn)(arg, pfd.fd, pfd.revents, l->hooks.data);
            continue;
        }
        int rc = l->hooks.call(l->hooks.data, fn, arg, pfd.fd, pfd.revents);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int mc_evloop_timeout(int64_t now_ms, int64_t deadline_ms, int cap_ms)
{
    if (deadline_ms == INT64_MAX)
        return cap_ms;
    if (deadline_ms <= now_ms)
        return 0;
    int64_t left = deadline_ms - now_ms;
    return left > cap_ms ? cap_ms : (int)left;
}
