/* The HTTP caller's insides, shared by executor_http.c (the HTTP thread: starting, holding,
 * queueing and finishing calls on libcurl's multi interface in the event loop) and
 * executor_request.c (one call's request and what is kept of its response). */
#ifndef MOONCAKE_EXECUTOR_HTTP_IMPL_H
#define MOONCAKE_EXECUTOR_HTTP_IMPL_H

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broadcast.h"
#include "clock.h"
#include "executor_admission.h"
#include "executor_call.h"
#include "executor_route.h"
#include "keymap.h"
#include "event_loop.h"
#include "ssrf.h"
#include "task_rules.h"
#include "timing_wheel.h"
#include "webhook.h"

/* How often due calls waiting on a shut gate look again. */
#define GATE_RECHECK_MS 20
/* The HTTP thread losing this much time between two steps of its work (a
 * poll waking this much after its timeout, or two calls started this far
 * apart with no poll between) means the process was stopped (SIGSTOP, a
 * paused VM, a starved CPU): the group may have moved our partitions
 * meanwhile, and librdkafka, whose session check runs about once a second,
 * has not said so yet. Calls wait STALL_HOLD_MS for it. */
#define STALL_MS 1000
#define STALL_HOLD_MS 1500
/* The runner is woken for finished calls at most once per this many ms: it
 * reports them into a transaction that commits tens of ms later anyway, and
 * a wake-up per finished call was a context switch of each thread per task
 * under load (about 1,100 a second at 2,000 tasks/s). The first call to
 * finish after a quiet spell wakes it at once. */
#define DONE_WAKE_MIN_MS 5

/* STARTING: taken off the queue, being started now (or settled without a
 * call): on no list, so releasing it scans none. WAITING: due, waiting on a
 * bucket (an admission limit, or a BUSYOVER group whose members are all busy). */
typedef enum call_state {
    CALL_HELD,
    CALL_QUEUED,
    CALL_WAITING,
    CALL_STARTING,
    CALL_RUNNING
} call_state;

/* The buckets a running call holds a place in: its host's, its app's, its group's. */
#define CALL_BUCKETS_MAX 3

/* A CALL's state while the HTTP thread has it. */
typedef struct call {
    mc_timer timer; /* while held */
    mc_call *call;
    call_state state;
    struct call *next;                /* in the queue */
    struct call *all_prev, *all_next; /* every call the thread has */
    CURL *easy;
    struct curl_slist *headers;
    CURLcode rc;
    /* A call to a group: the snapshot its group is in (a reference), the group, the member
     * it calls now, the strategy and the members tried in this attempt (FAILOVER). */
    mc_endpoints *snapshot;
    const mc_group *group;
    size_t member;
    mc_route_strategy strategy;
    mc_route_tried tried;
    char *url;                         /* the URL called: the member's with the task's path */
    struct curl_slist *connect_to;     /* a DNS member: its address */
    mc_bucket *held[CALL_BUCKETS_MAX]; /* while running */
    size_t n_held;
    mc_bucket *waiting_on; /* while WAITING */
    struct call *wait_prev, *wait_next;
    bool refused; /* the SSRF guard refused every address */
    char refused_why[256];
    char curl_error[CURL_ERROR_SIZE];
    struct http_caller *hc;
} call;

/* What the runner asks of the HTTP thread about one partition's calls. */
typedef enum partition_ask {
    ASK_ABANDON, /* drop them all; answer: how many were running */
    ASK_DRAIN,   /* start none again, drop those not started; answer: how many are left */
    ASK_COUNT,   /* answer: how many it has */
} partition_ask;

/* A request about a partition's calls; the runner waits for done. */
typedef struct partition_req {
    int32_t partition;
    partition_ask ask;
    size_t answer;
    bool done;
    struct partition_req *next;
} partition_req;

typedef struct http_caller {
    mc_caller base;
    const mc_config *cfg;
    mc_call_gate gate; /* asked on the HTTP thread */
    mc_ssrf *ssrf;
    mc_app_secrets *secrets;
    char user_agent[64];

    /* Shared, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t acked;
    mc_call *new_head, *new_tail;
    partition_req *requests;
    mc_call *done_head, *done_tail;
    int http_wake, done_wake; /* eventfds */
    pthread_t thread;
    bool started;
    atomic_bool stop, draining;
    atomic_size_t running;

    /* The HTTP thread's own. */
    CURLM *multi;
    mc_timing_wheel *held;
    int64_t curl_due;              /* when curl wants its timeout handled; INT64_MAX: never */
    call *all;                     /* every call it holds, queues or runs */
    call *queue_head, *queue_tail; /* due, waiting for a free slot */
    size_t queued;
    int64_t stall_hold_until; /* monotonic ms: no call starts before (see STALL_MS) */
    int64_t progress_at;      /* monotonic ms: the last poll's return or may_start */
    CURL **spare;             /* easy handles of finished calls, reset for reuse */
    size_t n_spare;
    mc_evloop loop;          /* curl's sockets, woken by http_wake */
    int64_t wake_by;         /* mono: when the wait under way should end */
    int64_t done_woken_at;   /* mono: the runner's last wake-up for finished calls */
    bool done_wake_owed;     /* calls finished since, the runner not woken for them */
    mc_endpoints *endpoints; /* the gate's latest snapshot (a reference), or NULL */
    mc_ownership ownership;  /* the gate's latest */
    uint64_t ownership_version;
    mc_route_table *routes;
    mc_admission *admission;
    mc_bucket *waiting_buckets; /* those with calls waiting, by next_waiting */
    size_t waiting;             /* calls WAITING */
    int32_t *draining_parts;    /* partitions being handed over (ASK_DRAIN), until abandoned */
    size_t n_draining_parts, cap_draining_parts;

    mc_counter *refused, *failovers, *waits;
    mc_gauge *in_flight, *held_gauge, *queued_gauge, *waiting_gauge;
    mc_histogram *lateness, *duration;
} http_caller;

/* The request headers of c (content type, the task's own, Idempotency-Key,
 * the webhook signature when the app has a secret) into c's list. 0, or -1
 * on ENOMEM. */
int http_build_headers(http_caller *hc, call *c);

/* Keeps the first --executor-snippet-bytes of the response body, for the
 * call's Result or Attempt; the rest is read, counted and dropped. */
size_t http_on_body(char *data, size_t size, size_t n, void *arg);

/* libcurl's header callback: keeps the response headers the configuration
 * names (--executor-response-headers) in the call. */
size_t http_on_header(char *line, size_t size, size_t n, void *arg);

/* The SSRF guard. curl asks us for every socket it opens, with the address
 * it resolved, so a name that resolves to a private address is refused
 * however the URL spelt it (and a DNS answer that changes between check and
 * use cannot slip through). A reused connection was checked when opened. */
curl_socket_t http_on_open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a);

#endif
