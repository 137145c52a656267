/* The event loop the runner and the executor's HTTP thread wait in: a ready
 * descriptor's callback runs, a watch dropped by an earlier callback in the
 * same round does not, the wake-up descriptor is drained and reported, a
 * call hook sees every callback and can stop the round, and a deadline
 * becomes the right timeout. */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "event_loop.h"

typedef struct seen {
    int calls[4];
    mc_evloop *loop;
    int drop_fd; /* dropped by the first callback; -1: none */
} seen;

static void on_ready(void *arg, int fd, short revents, void *data)
{
    (void)revents;
    seen *s = data;
    s->calls[(intptr_t)arg]++;
    char c;
    while (read(fd, &c, 1) == 1)
        ;
    if (s->drop_fd >= 0) {
        mc_evloop_watch(s->loop, s->drop_fd, 0, NULL, NULL);
        s->drop_fd = -1;
    }
}

static int stop_calls;
static int stopping_call(void *data, mc_ev_any fn, void *arg, int fd, short revents)
{
    ((mc_ev_fn)fn)(arg, fd, revents, data);
    stop_calls++;
    return 7; /* stop after the first */
}

int main(void)
{
    int a[2], b[2], w[2];
    CHECK(pipe2(a, O_NONBLOCK) == 0 && pipe2(b, O_NONBLOCK) == 0 && pipe2(w, O_NONBLOCK) == 0);
    seen s = {.drop_fd = -1};
    mc_evloop l;
    mc_evloop_init(&l, (mc_ev_hooks){.data = &s});
    s.loop = &l;
    CHECK(mc_evloop_watch(&l, a[0], POLLIN, MC_EV_FN(on_ready), (void *)(intptr_t)0) == 0);
    CHECK(mc_evloop_watch(&l, b[0], POLLIN, MC_EV_FN(on_ready), (void *)(intptr_t)1) == 0);
    mc_evloop_set_wake(&l, w[0]);

    /* Nothing ready: the wait times out, nothing runs. */
    bool woken = true;
    CHECK(mc_evloop_run_once(&l, 0, &woken) == 0);
    CHECK(!woken && s.calls[0] == 0 && s.calls[1] == 0);

    /* One ready descriptor, one call. */
    CHECK(write(a[1], "x", 1) == 1);
    CHECK(mc_evloop_run_once(&l, 1000, &woken) == 0);
    CHECK(s.calls[0] == 1 && s.calls[1] == 0 && !woken);

    /* The wake-up descriptor is drained and reported. */
    CHECK(write(w[1], "1111", 4) == 4);
    CHECK(mc_evloop_run_once(&l, 1000, &woken) == 0);
    CHECK(woken);
    CHECK(mc_evloop_run_once(&l, 0, &woken) == 0 && !woken, "drained");

    /* Both ready, the first callback drops the second's watch: it must not
     * run on a stale entry. */
    CHECK(write(a[1], "x", 1) == 1 && write(b[1], "x", 1) == 1);
    s.drop_fd = b[0];
    CHECK(mc_evloop_run_once(&l, 1000, NULL) == 0);
    CHECK(s.calls[0] == 2 && s.calls[1] == 0, "calls %d %d", s.calls[0], s.calls[1]);
    CHECK(mc_evloop_watched(&l) == 1);

    /* A call hook runs each callback and can stop the round. */
    CHECK(mc_evloop_watch(&l, b[0], POLLIN, MC_EV_FN(on_ready), (void *)(intptr_t)1) == 0);
    CHECK(write(a[1], "x", 1) == 1);
    l.hooks.call = stopping_call;
    CHECK(mc_evloop_run_once(&l, 1000, NULL) == 7);
    CHECK(stop_calls == 1 && s.calls[0] + s.calls[1] == 3 + 0);

    /* Deadlines into timeouts. */
    CHECK(mc_evloop_timeout(1000, INT64_MAX, 250) == 250);
    CHECK(mc_evloop_timeout(1000, 900, 250) == 0);
    CHECK(mc_evloop_timeout(1000, 1100, 250) == 100);
    CHECK(mc_evloop_timeout(1000, 5000, 250) == 250);

    mc_evloop_free(&l);
    for (int i = 0; i < 2; i++) {
        close(a[i]);
        close(b[i]);
        close(w[i]);
    }
    return check_exit("test_event_loop");
}
