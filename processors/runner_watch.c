/* The runner's watchdog: a blocking Kafka call that is still running long
 * after its own timeout ends the process, as a fatal error does, so that the
 * supervisor starts a fresh one. librdkafka's send_offsets_to_transaction can
 * wait for a group coordinator forever (it never checks its timeout there, and
 * a coordinator that left the cluster is never looked up again); the loop
 * thread cannot get out of such a call, and while it is inside, its
 * partitions are held and its transaction open, so nothing they hold fires.
 * Exiting loses nothing: the open transaction is aborted by the coordinator
 * (or fenced by the restarted instance), and its input comes again from the
 * committed offsets, as after a kill -9. */
#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "runner_impl.h"

/* How long past its own timeout a call may run before it counts as stuck: a
 * call returns at its timeout give or take a request in flight. */
#define WATCH_GRACE_MS 30000
/* How often the watchdog looks. */
#define WATCH_INTERVAL_MS 500

void runner_watch(mc_runner *r, const char *call, int timeout_ms)
{
    atomic_store(&r->watched_deadline_ms,
                 r->kc->ops->mono_ms(r->kc) + (long long)timeout_ms + WATCH_GRACE_MS);
    atomic_store(&r->watched_call, call);
}

void runner_unwatch(mc_runner *r)
{
    atomic_store(&r->watched_call, (const char *)NULL);
}

bool mc_runner_stuck(mc_runner *r, char *why, size_t whylen)
{
    const char *call = atomic_load(&r->watched_call);
    if (!call)
        return false;
    long long over = r->kc->ops->mono_ms(r->kc) - atomic_load(&r->watched_deadline_ms);
    if (over <= 0)
        return false;
    snprintf(why, whylen, "%s still running %lld ms after its timeout", call,
             over + WATCH_GRACE_MS);
    return true;
}

static void *watchdog_main(void *arg)
{
    mc_runner *r = arg;
    pthread_setname_np(pthread_self(), "mc-watchdog");
    pthread_mutex_lock(&r->watchdog_lock);
    while (!r->watchdog_quit) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_nsec += WATCH_INTERVAL_MS * 1000000L;
        until.tv_sec += until.tv_nsec / 1000000000L;
        until.tv_nsec %= 1000000000L;
        int rc = pthread_cond_timedwait(&r->watchdog_wake, &r->watchdog_lock, &until);
        if (rc != ETIMEDOUT || r->watchdog_quit)
            continue;
        char why[256];
        if (mc_runner_stuck(r, why, sizeof why)) {
            /* The loop thread is inside the client, holding its locks: no
             * orderly stop can get past it. */
            mc_log(&r->logger, MC_LOG_ERROR, "fatal: a Kafka call is stuck, exiting", "detail", why,
                   (const char *)NULL);
            _exit(1);
        }
    }
    pthread_mutex_unlock(&r->watchdog_lock);
    return NULL;
}

int runner_watchdog_start(mc_runner *r)
{
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return -1;
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&r->watchdog_wake, &attr);
    pthread_condattr_destroy(&attr);
    if (rc != 0)
        return -1;
    pthread_mutex_init(&r->watchdog_lock, NULL);
    r->watchdog_quit = false;
    if (pthread_create(&r->watchdog, NULL, watchdog_main, r) != 0) {
        pthread_cond_destroy(&r->watchdog_wake);
        pthread_mutex_destroy(&r->watchdog_lock);
        return -1;
    }
    r->watchdog_running = true;
    return 0;
}

void runner_watchdog_stop(mc_runner *r)
{
    if (!r->watchdog_running)
        return;
    pthread_mutex_lock(&r->watchdog_lock);
    r->watchdog_quit = true;
    pthread_cond_signal(&r->watchdog_wake);
    pthread_mutex_unlock(&r->watchdog_lock);
    pthread_join(r->watchdog, NULL);
    pthread_cond_destroy(&r->watchdog_wake);
    pthread_mutex_destroy(&r->watchdog_lock);
    r->watchdog_running = false;
}
