/* The executor's HTTP side: the caller (executor_call.h) that makes calls
 * with libcurl's multi interface, on a thread of its own that runs a small
 * poll loop in the manner of curl's docs/examples/multi-event.c: curl names
 * the sockets to watch and its timeout, we tell it what happened. A call that
 * arrives before its due time (the wheel's lead) is held in a timing wheel
 * and started on its due millisecond. Many calls are in flight at once;
 * connections are kept alive and reused, HTTP/2 is used where a TLS server
 * offers it.
 *
 * Why a thread of its own: a transaction commit blocks the runner's thread
 * for 10-20 ms, sometimes 200 ms, and a call due in that window would start
 * that late. The two threads share three lists under one mutex - posted
 * calls, abandon requests, finished calls - and wake each other with an
 * eventfd each. Everything below "the HTTP thread" runs on this thread
 * only; the caller ops run on the runner's. */
#include "executor_http_impl.h"

static void wake(int fd)
{
    uint64_t one = 1;
    ssize_t n = write(fd, &one, sizeof one);
    (void)n; /* EAGAIN: the counter is already non-zero, the wake-up pending */
}

static void drain_wake(int fd)
{
    uint64_t v;
    ssize_t n = read(fd, &v, sizeof v);
    (void)n;
}

/* ---- the HTTP thread -------------------------------------------------------- */

/* call_start's answers besides 0 (started). */
#define START_NO_MEMORY (-1) /* the caller treats the call as failed */
#define START_DRAINING (-2)  /* a stop began: the call stays unstarted, for the next owner */

/* Hands c to curl. The slot in `running` is taken before `draining` is looked at, and the
 * runner sets `draining` before it looks at `running` (hc_drain, then hc_idle): either
 * the runner sees this call running and waits for it, or this thread sees the stop and
 * starts nothing. */
static int call_start(http_caller *hc, call *c)
{
    mc_call *j = c->call;
    const mc_callback *cb = &j->task.callback;
    atomic_fetch_add(&hc->running, 1);
    if (atomic_load(&hc->draining)) {
        atomic_fetch_sub(&hc->running, 1);
        return START_DRAINING;
    }
    int64_t previous_start = j->started_at; /* a failover's failed try keeps its own */
    j->started_at = mc_now_ms();
    CURL *e = c->easy = hc->n_spare ? hc->spare[--hc->n_spare] : curl_easy_init();
    if (!e || http_build_headers(hc, c) != 0) {
        j->started_at = previous_start;
        atomic_fetch_sub(&hc->running, 1);
        return START_NO_MEMORY;
    }
    int64_t timeout = cb->timeout_ms > 0 ? cb->timeout_ms : hc->cfg->executor_timeout_ms;
    curl_easy_setopt(e, CURLOPT_URL, c->url ? c->url : cb->url);
    if (c->connect_to)
        curl_easy_setopt(e, CURLOPT_CONNECT_TO, c->connect_to);
    curl_easy_setopt(e, CURLOPT_PRIVATE, c);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    /* An environment proxy would connect us to the proxy's address, past
     * the guard. */
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout);
    curl_easy_setopt(e, CURLOPT_USERAGENT, hc->user_agent);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, http_on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, http_on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, http_on_open_socket);
    curl_easy_setopt(e, CURLOPT_OPENSOCKETDATA, c);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, c->curl_error);
    const char *m = cb->method;
    const char *body = cb->body_len ? (const char *)cb->body : "";
    if (strcmp(m, "GET") == 0) {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else if (strcmp(m, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else {
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)cb->body_len);
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
        if (strcmp(m, "POST") != 0)
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, m);
    }
    if (curl_multi_add_handle(hc->multi, e) != CURLM_OK) {
        j->started_at = previous_start;
        atomic_fetch_sub(&hc->running, 1);
        return START_NO_MEMORY;
    }
    c->state = CALL_RUNNING;
    if (c->group) /* on ENOMEM the pick is not counted; the call goes on */
        (void)mc_route_started(hc->routes, c->group, c->member);
    mc_gauge_set(hc->in_flight, (double)atomic_load(&hc->running));
    mc_histogram_observe(hc->lateness, (double)(j->started_at - j->task.due_at) / 1000.0);
    return 0;
}

static void all_link(http_caller *hc, call *c)
{
    c->all_prev = NULL;
    c->all_next = hc->all;
    if (hc->all)
        hc->all->all_prev = c;
    hc->all = c;
}

static void all_unlink(http_caller *hc, call *c)
{
    if (c->all_prev)
        c->all_prev->all_next = c->all_next;
    else
        hc->all = c->all_next;
    if (c->all_next)
        c->all_next->all_prev = c->all_prev;
    c->all_prev = c->all_next = NULL;
}

static void queue_remove(http_caller *hc, call *c)
{
    call **link = &hc->queue_head;
    hc->queue_tail = NULL;
    while (*link) {
        if (*link == c) {
            *link = c->next;
            hc->queued--;
        } else {
            hc->queue_tail = *link;
            link = &(*link)->next;
        }
    }
}

/* Takes c off the wait list of its bucket. */
static void unwait(http_caller *hc, call *c)
{
    mc_bucket *b = c->waiting_on;
    if (c->wait_prev)
        c->wait_prev->wait_next = c->wait_next;
    else
        b->waiting_head = c->wait_next;
    if (c->wait_next)
        c->wait_next->wait_prev = c->wait_prev;
    else
        b->waiting_tail = c->wait_prev;
    b->n_waiting--;
    hc->waiting--;
    c->waiting_on = NULL;
    c->wait_prev = c->wait_next = NULL;
}

/* Ends c's try with curl: its handle back to the spares, its places in its buckets and
 * at its member given up (failed: the member did not answer well, see mc_route_ended).
 * Returns whether it was running: the caller lowers `running` (after posting the call,
 * so the runner never sees a call neither running nor finished). */
static bool end_try(http_caller *hc, call *c, bool failed)
{
    bool was_running = c->state == CALL_RUNNING;
    if (c->easy) {
        if (was_running)
            curl_multi_remove_handle(hc->multi, c->easy);
        if (hc->n_spare < (size_t)hc->cfg->executor_concurrency) {
            /* Making a handle costs about as much as a keep-alive call. */
            curl_easy_reset(c->easy);
            hc->spare[hc->n_spare++] = c->easy;
        } else {
            curl_easy_cleanup(c->easy);
        }
        c->easy = NULL;
    }
    if (was_running && c->group)
        mc_route_ended(
            hc->routes, c->group->app_id, c->group->name, &c->group->members[c->member], failed,
            c->group->unhealthy_ms > 0 ? c->group->unhealthy_ms : MC_ROUTE_UNHEALTHY_MS_DEFAULT,
            mc_mono_ms());
    for (size_t i = 0; i < c->n_held; i++)
        mc_bucket_release(c->held[i]);
    c->n_held = 0;
    curl_slist_free_all(c->headers);
    curl_slist_free_all(c->connect_to);
    c->headers = c->connect_to = NULL;
    free(c->url);
    c->url = NULL;
    /* What curl said of this try: a next try (FAILOVER) starts clean. */
    c->rc = CURLE_OK;
    c->refused = false;
    c->refused_why[0] = c->curl_error[0] = '\0';
    c->state = CALL_STARTING;
    return was_running;
}

/* Takes c off every HTTP-side structure and frees it (not its call); keeps
 * nothing of curl's. Returns whether it was running (see end_try). */
static bool call_release(http_caller *hc, call *c)
{
    if (c->state == CALL_HELD)
        mc_wheel_cancel(hc->held, &c->timer);
    else if (c->state == CALL_QUEUED)
        queue_remove(hc, c);
    else if (c->state == CALL_WAITING)
        unwait(hc, c);
    bool was_running = end_try(hc, c, false);
    mc_endpoints_unref(c->snapshot);
    all_unlink(hc, c);
    c->call->caller_state = NULL;
    free(c);
    return was_running;
}

/* Wakes the runner for the finished calls owed one, unless it was woken
 * less than DONE_WAKE_MIN_MS ago: then the loop does when that time comes. */
static void wake_for_done(http_caller *hc)
{
    int64_t now = mc_mono_ms();
    if (now - hc->done_woken_at < DONE_WAKE_MIN_MS) {
        hc->done_wake_owed = true;
        return;
    }
    hc->done_wake_owed = false;
    hc->done_woken_at = now;
    wake(hc->done_wake);
}

/* Gives j back to the runner, which reports and finishes it. */
static void give_back(http_caller *hc, mc_call *j)
{
    pthread_mutex_lock(&hc->mu);
    bool was_empty = !hc->done_head;
    j->next = NULL;
    if (hc->done_tail)
        hc->done_tail->next = j;
    else
        hc->done_head = j;
    hc->done_tail = j;
    pthread_mutex_unlock(&hc->mu);
    if (was_empty)
        wake_for_done(hc);
}

/* Describes how a call ended, in the call. */
static void describe(mc_call *j, const call *c)
{
    /* The guard may refuse one address of a name while curl connects to another: only a
     * call that got no answer was refused. */
    if (c->refused && c->rc != CURLE_OK) {
        j->transport_failed = j->permanent = true;
        snprintf(j->error, sizeof j->error, "refused by the SSRF guard: %s", c->refused_why);
    } else if (c->rc == CURLE_OPERATION_TIMEDOUT) {
        j->transport_failed = true;
        snprintf(j->error, sizeof j->error, "timed out after %" PRId64 " ms",
                 j->finished_at - j->started_at);
    } else if (c->rc != CURLE_OK) {
        j->transport_failed = true;
        j->permanent = c->rc == CURLE_UNSUPPORTED_PROTOCOL || c->rc == CURLE_URL_MALFORMAT;
        snprintf(j->error, sizeof j->error, "%s%s%s", curl_easy_strerror(c->rc),
                 c->curl_error[0] ? ": " : "", c->curl_error);
    }
}

/* Notes a step of the HTTP thread's work; one more than STALL_MS after
 * `since` starts the hold (see STALL_MS). */
static void note_progress(http_caller *hc, int64_t since)
{
    int64_t now = mc_mono_ms();
    if (now - since > STALL_MS)
        hc->stall_hold_until = now + STALL_HOLD_MS;
    hc->progress_at = now;
}

/* Whether the partition is being handed over (see ASK_DRAIN). */
static bool partition_draining(const http_caller *hc, int32_t partition)
{
    for (size_t i = 0; i < hc->n_draining_parts; i++)
        if (hc->draining_parts[i] == partition)
            return true;
    return false;
}

/* Whether calls may start now: not while draining, nor while the gate is
 * shut (see mc_call_gate), nor just after the process was stopped. */
static bool may_start(http_caller *hc)
{
    note_progress(hc, hc->progress_at);
    return !atomic_load(&hc->draining) && hc->progress_at >= hc->stall_hold_until &&
           (hc->endpoints || !hc->gate.endpoints) && hc->gate.may_start(hc->gate.arg);
}

/* The moment c would start: past its late policy it is not started at all,
 * and a Kafka target is not this thread's to deliver; either way it goes
 * back to the Kafka side now, which writes what happened in its
 * transaction. Returns whether c was settled so (and released). */
static bool settled_without_call(http_caller *hc, call *c)
{
    mc_call *j = c->call;
    const mc_task *t = &j->task;
    int64_t now = mc_now_ms();
    if (t->has_late_policy && t->late_policy.action != MC_LATE_RUN &&
        now - t->due_at > t->late_policy.max_late_ms)
        j->late = t->late_policy.action;
    else if (t->has_kafka_target)
        j->deliver = true;
    else
        return false;
    j->started_at = j->finished_at = now;
    if (j->deliver)
        mc_histogram_observe(hc->lateness, (double)(now - t->due_at) / 1000.0);
    call_release(hc, c); /* never running */
    give_back(hc, j);
    return true;
}

/* Ends c without calling it (a group that does not exist, say): a failed attempt, which
 * the retry role retries unless permanent. */
static void fail_unstarted(http_caller *hc, call *c, bool permanent, const char *why)
{
    mc_call *j = c->call;
    j->transport_failed = true;
    j->permanent = permanent;
    j->status = 0;
    snprintf(j->error, sizeof j->error, "%s", why);
    j->started_at = j->finished_at = mc_now_ms();
    call_release(hc, c);
    give_back(hc, j);
}

static void call_ended(http_caller *hc, call *c, CURLcode rc);

/* Puts c on b's waiting list: at the front when it came from there (it keeps its turn). */
static void wait_on(http_caller *hc, call *c, mc_bucket *b, bool front)
{
    c->state = CALL_WAITING;
    c->waiting_on = b;
    if (front) {
        c->wait_prev = NULL;
        c->wait_next = b->waiting_head;
        if (b->waiting_head)
            ((call *)b->waiting_head)->wait_prev = c;
        else
            b->waiting_tail = c;
        b->waiting_head = c;
    } else {
        c->wait_next = NULL;
        c->wait_prev = b->waiting_tail;
        if (b->waiting_tail)
            ((call *)b->waiting_tail)->wait_next = c;
        else
            b->waiting_head = c;
        b->waiting_tail = c;
    }
    b->n_waiting++;
    hc->waiting++;
    if (!front)
        mc_counter_add(hc->waits, 1);
    if (!b->listed) {
        b->listed = true;
        b->next_waiting = hc->waiting_buckets;
        hc->waiting_buckets = b;
    }
}

static int64_t mono_us(void)
{
    return mc_mono_ns() / 1000;
}

/* The strategy c's task names in its metadata, else its group's. False (why in err) for
 * one this executor cannot follow. */
static bool strategy_of(const mc_task *t, const mc_group *g, mc_route_strategy *s, char *err,
                        size_t errlen)
{
    *s = g->strategy;
    for (size_t i = 0; i < t->n_metadata; i++) {
        if (strcmp(t->metadata[i].key, MC_ROUTE_METADATA) != 0)
            continue;
        if (!mc_route_strategy_parse(t->metadata[i].value, s)) {
            snprintf(err, errlen, "unknown route strategy '%.100s' in metadata %s",
                     t->metadata[i].value, MC_ROUTE_METADATA);
            return false;
        }
    }
    if (mc_task_shard_member(t))
        *s = MC_ROUTE_FIRST; /* a broadcast's shard calls its own member, never another */
    return true;
}

/* Finds c's group in the current snapshot (again, unless a try of this attempt already
 * went out: FAILOVER then keeps the membership it started with). 0, or -1 when c was
 * ended for it. */
static int find_group(http_caller *hc, call *c, const char *name)
{
    if (c->group && (c->tried.bits || c->snapshot == hc->endpoints))
        return 0;
    mc_endpoints_unref(c->snapshot);
    c->snapshot = mc_endpoints_ref(hc->endpoints);
    const mc_task *t = &c->call->task;
    c->group = mc_endpoints_group(c->snapshot, t->app_id, name);
    char why[300];
    if (!c->group) {
        snprintf(why, sizeof why, "no endpoint group '%s' for app '%.100s'", name, t->app_id);
        fail_unstarted(hc, c, false, why);
        return -1;
    }
    if (!strategy_of(t, c->group, &c->strategy, why, sizeof why)) {
        fail_unstarted(hc, c, true, why);
        return -1;
    }
    return 0;
}

/* How a Result names member m: its URL, and its address in brackets for one from DNS.
 * A broadcast's shard is pinned to its member by this name. */
static void member_name(const mc_group_member *m, char *out, size_t n)
{
    if (m->address)
        snprintf(out, n, "%s (%s)", m->url, m->address);
    else
        snprintf(out, n, "%s", m->url);
}

/* Member m's whole name as member_name spells it, however long: malloc'd, or NULL. */
static char *member_name_dup(const mc_group_member *m)
{
    size_t n = strlen(m->url) + (m->address ? strlen(m->address) + 3 : 0) + 1;
    char *name = malloc(n);
    if (name)
        member_name(m, name, n);
    return name;
}

/* Whether name is member m's whole name (see member_name). */
static bool member_named(const mc_group_member *m, const char *name)
{
    size_t ul = strlen(m->url);
    if (strncmp(name, m->url, ul) != 0)
        return false;
    name += ul;
    if (!m->address)
        return *name == '\0';
    size_t al = strlen(m->address);
    return name[0] == ' ' && name[1] == '(' && strncmp(name + 2, m->address, al) == 0 &&
           strcmp(name + 2 + al, ")") == 0;
}

/* The index in g of the member named name; false when it is not (or no longer) there. */
static bool find_member(const mc_group *g, const char *name, size_t *index)
{
    for (size_t i = 0; i < g->n_members; i++)
        if (member_named(&g->members[i], name)) {
            *index = i;
            return true;
        }
    return false;
}

/* A SHARDING_BROADCAST task's turn: it goes back to the Kafka side with the names of its
 * group's members now, healthy or not (each shard retries on its own), and the Kafka side
 * submits a shard to each in its transaction. */
static void fan_out(http_caller *hc, call *c)
{
    mc_call *j = c->call;
    const mc_group *g = c->group;
    if (!(j->shard_members = calloc(g->n_members, sizeof *j->shard_members)))
        goto nomem;
    for (size_t i = 0; i < g->n_members; i++) {
        if (!(j->shard_members[i] = member_name_dup(&g->members[i])))
            goto nomem;
        j->n_shard_members++;
    }
    j->started_at = j->finished_at = mc_now_ms();
    mc_histogram_observe(hc->lateness, (double)(j->started_at - j->task.due_at) / 1000.0);
    call_release(hc, c); /* never running */
    give_back(hc, j);
    return;
nomem:
    /* A failed attempt, retried: not a broadcast to the members named so far. */
    for (size_t i = 0; i < j->n_shard_members; i++)
        free(j->shard_members[i]);
    free(j->shard_members);
    j->shard_members = NULL;
    j->n_shard_members = 0;
    fail_unstarted(hc, c, false, "out of memory fanning out a broadcast");
}

/* The URL c calls now: its member's followed by the task's path, and for a member from
 * DNS the address to connect to. 0, or -1 on ENOMEM. */
static int member_url(call *c, const char *path)
{
    const mc_group_member *m = &c->group->members[c->member];
    size_t n = strlen(m->url) + strlen(path) + 1;
    if (!(c->url = malloc(n)))
        return -1;
    snprintf(c->url, n, "%s%s", m->url, path);
    mc_call *j = c->call;
    member_name(m, j->member, sizeof j->member);
    if (m->address) {
        char to[128];
        /* Any host and port of this URL: connect to the address, same port. */
        snprintf(to, sizeof to, strchr(m->address, ':') ? "::[%s]:" : "::%s:", m->address);
        if (!(c->connect_to = curl_slist_append(NULL, to)))
            return -1;
    }
    return 0;
}

/* The lower-case host of url into out; false if it has none. */
static bool url_host(const char *url, char *out, size_t n)
{
    CURLU *u = curl_url();
    char *host = NULL;
    bool ok = u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
              curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK;
    if (ok) {
        size_t i = 0;
        for (; host[i] && i + 1 < n; i++)
            out[i] = (char)tolower((unsigned char)host[i]);
        out[i] = '\0';
    }
    curl_free(host);
    curl_url_cleanup(u);
    return ok;
}

/* The bucket whose waiters are the calls to g that found every member busy (BUSYOVER). */
static mc_bucket *group_bucket(http_caller *hc, const mc_group *g)
{
    char key[MC_GROUP_NAME_MAX + 300];
    snprintf(key, sizeof key, "%.250s/%s", g->app_id, g->name);
    return mc_admission_bucket(hc->admission, MC_BUCKET_GROUP, key);
}

/* The bucket of a limited host or app, its share set from the current snapshot; NULL when
 * nothing limits it. */
static mc_bucket *limit_bucket(http_caller *hc, mc_bucket_kind kind, const char *name)
{
    mc_admission_limit limit;
    mc_limit_scope scope = kind == MC_BUCKET_HOST ? MC_LIMIT_HOST : MC_LIMIT_APP;
    if (!mc_endpoints_limit(hc->endpoints, scope, name, &limit))
        return NULL;
    mc_bucket *b = mc_admission_bucket(hc->admission, kind, name);
    if (b)
        mc_bucket_set_limit(b, &limit, &hc->ownership);
    return b;
}

typedef enum admit_result {
    ADMIT_STARTED,
    ADMIT_WAITING,
    ADMIT_WOULD_WAIT, /* no_wait: it would have to wait; nothing changed but its URL */
    ADMIT_ENDED
} admit_result;

/* Picks c's member when it calls a group and takes its places in the buckets that limit
 * it. Returns ADMIT_STARTED when c may start now (its places taken, its URL set),
 * ADMIT_WAITING when it now waits on a bucket (at the head of the list of `from`, the
 * bucket it was just taken from, where it keeps its turn; at the tail of any other), or
 * ADMIT_ENDED when it was ended without a call. no_wait (a failover's next try): instead
 * of waiting it returns ADMIT_WOULD_WAIT. */
static admit_result admit(http_caller *hc, call *c, mc_bucket *from, bool no_wait)
{
    mc_call *j = c->call;
    const mc_task *t = &j->task;
    char name[MC_GROUP_NAME_MAX + 1];
    const char *path, *url = t->callback.url;
    mc_bucket *b[CALL_BUCKETS_MAX];
    size_t nb = 0;
    if (mc_group_url_parse(url, name, sizeof name, &path)) {
        if (find_group(hc, c, name) != 0)
            return ADMIT_ENDED;
        const mc_group *g = c->group;
        const char *pinned = mc_task_shard_member(t);
        int32_t member_limit = (int32_t)mc_ownership_share(&hc->ownership, g->member_concurrency);
        mc_pick_result picked;
        if (pinned) {
            picked = find_member(g, pinned, &c->member) ? MC_PICK_OK : MC_PICK_EMPTY;
        } else if (c->strategy == MC_ROUTE_BROADCAST) {
            if (g->n_members) {
                fan_out(hc, c);
                return ADMIT_ENDED;
            }
            picked = MC_PICK_EMPTY;
        } else {
            picked = mc_route_pick(hc->routes, g, c->strategy, j->key, &c->tried, member_limit,
                                   mc_mono_ms(), &c->member);
        }
        switch (picked) {
        case MC_PICK_OK:
            break;
        case MC_PICK_BUSY: {
            mc_bucket *busy = no_wait ? NULL : group_bucket(hc, g);
            if (!busy) {
                if (no_wait)
                    return ADMIT_WOULD_WAIT;
                fail_unstarted(hc, c, false, "out of memory waiting for a busy group");
                return ADMIT_ENDED;
            }
            wait_on(hc, c, busy, busy == from);
            return ADMIT_WAITING;
        }
        case MC_PICK_EMPTY: {
            char why[MC_CALL_ERROR_MAX]; /* what the call keeps of it */
            if (pinned)
                snprintf(why, sizeof why, "member %s is no longer in endpoint group '%s'", pinned,
                         name);
            else
                snprintf(why, sizeof why, "endpoint group '%s' of app '%.100s' has no members",
                         name, t->app_id);
            fail_unstarted(hc, c, false, why);
            return ADMIT_ENDED;
        }
        }
        /* The group's waiters (BUSYOVER) may go when this call ends. */
        if (c->strategy == MC_ROUTE_BUSYOVER && g->member_concurrency > 0 &&
            (b[nb] = group_bucket(hc, g)))
            nb++;
        free(c->url);
        c->url = NULL;
        curl_slist_free_all(c->connect_to);
        c->connect_to = NULL;
        if (member_url(c, path) != 0) {
            fail_unstarted(hc, c, false, "out of memory choosing a member");
            return ADMIT_ENDED;
        }
        url = c->url;
    }
    if (mc_endpoints_limit_count(hc->endpoints)) {
        char host[256];
        if (url_host(url, host, sizeof host) && (b[nb] = limit_bucket(hc, MC_BUCKET_HOST, host)))
            nb++;
        if ((b[nb] = limit_bucket(hc, MC_BUCKET_APP, t->app_id)))
            nb++;
    }
    int64_t now_us = mono_us();
    for (size_t i = 0; i < nb; i++) {
        int64_t retry_us;
        /* Behind the calls already waiting there: a herd keeps its order. */
        bool mine = b[i] == from; /* its turn there; elsewhere behind who waits */
        if (!(b[i]->n_waiting && !mine) && mc_bucket_allows(b[i], now_us, &retry_us))
            continue;
        if (no_wait)
            return ADMIT_WOULD_WAIT;
        wait_on(hc, c, b[i], mine);
        return ADMIT_WAITING;
    }
    for (size_t i = 0; i < nb; i++)
        mc_bucket_take(b[i], now_us);
    memcpy(c->held, b, nb * sizeof *b);
    c->n_held = nb;
    return ADMIT_STARTED;
}

/* Queues c for a free slot (or an open gate). */
static void queue_append(http_caller *hc, call *c)
{
    c->state = CALL_QUEUED;
    c->next = NULL;
    if (hc->queue_tail)
        hc->queue_tail->next = c;
    else
        hc->queue_head = c;
    hc->queue_tail = c;
    hc->queued++;
}

/* Starts c, whose turn it is (a slot is free, calls may start). from: the bucket whose
 * list c was taken from the head of (it keeps its place there if it must wait again), or
 * NULL. Returns what became of it. */
static admit_result start_now(http_caller *hc, call *c, mc_bucket *from)
{
    if (settled_without_call(hc, c))
        return ADMIT_ENDED;
    admit_result r = admit(hc, c, from, false);
    if (r != ADMIT_STARTED)
        return r;
    int rc = call_start(hc, c);
    if (rc == START_DRAINING) {
        end_try(hc, c, false); /* its places back; it stays for the next owner */
        queue_append(hc, c);
        return ADMIT_WAITING;
    }
    if (rc != 0) {
        snprintf(c->curl_error, sizeof c->curl_error, "out of memory starting the call");
        call_ended(hc, c, CURLE_OUT_OF_MEMORY);
        return ADMIT_ENDED;
    }
    return ADMIT_STARTED;
}

static bool slot_free(http_caller *hc)
{
    return atomic_load(&hc->running) < (size_t)hc->cfg->executor_concurrency;
}

/* Starts c now if calls may start and a slot is free, else queues it. */
static void run_or_queue(http_caller *hc, call *c)
{
    /* A Kafka target takes no connection: it does not wait for one. */
    bool needs_slot = !c->call->task.has_kafka_target;
    if ((!needs_slot || slot_free(hc)) && may_start(hc)) {
        start_now(hc, c, NULL);
        return;
    }
    queue_append(hc, c);
}

/* Starts the calls waiting on buckets that a call ending or a new token freed, oldest
 * first in each bucket; a bucket whose head must wait again keeps it at the head. The list
 * of buckets with waiters is taken whole first: a call moving to another bucket lists that
 * one anew (wait_on), and every bucket still holding waiters is listed again after. */
static void start_waiting(http_caller *hc)
{
    /* The pass keeps its buckets marked listed, so a call moving into one of them does
     * not relink it (and cut the pass short); those it moves into others are listed anew
     * in hc->waiting_buckets. */
    mc_bucket *pass = hc->waiting_buckets;
    hc->waiting_buckets = NULL;
    for (mc_bucket *b = pass; b; b = b->next_waiting) {
        while (b->waiting_head && slot_free(hc)) {
            call *c = b->waiting_head;
            unwait(hc, c);
            c->state = CALL_STARTING;
            if (start_now(hc, c, b) == ADMIT_WAITING && c->waiting_on == b)
                break;
        }
    }
    for (mc_bucket *b = pass, *next; b; b = next) {
        next = b->next_waiting;
        b->listed = b->waiting_head != NULL;
        if (b->listed) {
            b->next_waiting = hc->waiting_buckets;
            hc->waiting_buckets = b;
        }
    }
    mc_gauge_set(hc->waiting_gauge, (double)hc->waiting);
}

/* When the first rate-limited bucket with calls waiting gets its next token (mono µs;
 * INT64_MAX: none), for the loop's wait. */
static int64_t next_token_at(http_caller *hc)
{
    int64_t first = INT64_MAX, now_us = mono_us();
    for (mc_bucket *b = hc->waiting_buckets; b; b = b->next_waiting) {
        int64_t retry_us;
        if (!mc_bucket_allows(b, now_us, &retry_us) && retry_us < first)
            first = retry_us;
    }
    return first;
}

static void start_queued(http_caller *hc)
{
    if ((!hc->queue_head && !hc->waiting_buckets) || !may_start(hc))
        return;
    start_waiting(hc); /* due before any queued call: they go first */
    /* A Kafka target needs no connection: one at the head does not wait. */
    while (hc->queue_head && (slot_free(hc) || hc->queue_head->call->task.has_kafka_target) &&
           !atomic_load(&hc->draining)) { /* a call a stop sent back is queued again */
        call *c = hc->queue_head;
        hc->queue_head = c->next;
        if (!hc->queue_head)
            hc->queue_tail = NULL;
        hc->queued--;
        c->state = CALL_STARTING;
        start_now(hc, c, NULL);
    }
    mc_gauge_set(hc->queued_gauge, (double)hc->queued);
}

/* Whether c's try failed in a way that says its member is unwell: no connection, no
 * answer in time, or a 5xx. */
static bool member_failed(const mc_call *j)
{
    return j->transport_failed || j->status >= 500;
}

/* Clears what the last try of c's call answered, for the next member's try. */
static void forget_answer(mc_call *j)
{
    j->transport_failed = j->permanent = false;
    j->status = 0;
    j->error[0] = j->retry_after[0] = '\0';
    free(j->snippet);
    j->snippet = NULL;
    j->snippet_len = 0;
    j->body_bytes = 0;
    mc_call_forget_response_headers(j);
}

/* FAILOVER: c's member failed; tries the next member in the same attempt when one is left
 * and the try can start at once (not while stopping, nor when it would wait for a limit:
 * then the attempt ends with this failure, which the next attempt's turn will repeat).
 * The call's slot in `running` is kept through the switch, so the runner never sees it
 * neither running nor finished. Returns whether the call went on (it is then this
 * thread's still). */
static bool fail_over(http_caller *hc, call *c)
{
    mc_call *j = c->call;
    if (c->strategy != MC_ROUTE_FAILOVER || !member_failed(j) || !may_start(hc) ||
        (hc->n_draining_parts && partition_draining(hc, j->partition)))
        return false; /* a partition handed over: its attempt ends with this try */
    mc_route_tried next = {c->tried.bits | UINT64_C(1) << c->member};
    size_t unused;
    if (mc_route_pick(hc->routes, c->group, c->strategy, j->key, &next, 0, mc_mono_ms(), &unused) !=
        MC_PICK_OK)
        return false;
    char failed_member[MC_CALL_MEMBER_MAX];
    memcpy(failed_member, j->member, sizeof failed_member);
    c->tried = next;
    end_try(hc, c, true); /* its slot stays counted until the next try has one */
    admit_result r = admit(hc, c, NULL, true);
    int rc = r == ADMIT_STARTED ? call_start(hc, c) : START_DRAINING;
    if (rc == 0) {
        mc_counter_add(hc->failovers, 1);
        forget_answer(j);
        atomic_fetch_sub(&hc->running, 1); /* the previous try's */
        return true;
    }
    if (r == ADMIT_ENDED) { /* given back already (no memory for the URL) */
        atomic_fetch_sub(&hc->running, 1);
        return true;
    }
    /* Ends the attempt with the failure it had. */
    end_try(hc, c, false);
    memcpy(j->member, failed_member, sizeof failed_member);
    call_release(hc, c);
    give_back(hc, j);
    atomic_fetch_sub(&hc->running, 1);
    return true;
}

static void call_ended(http_caller *hc, call *c, CURLcode rc)
{
    mc_call *j = c->call;
    if (c->easy)
        curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &j->status);
    c->rc = rc;
    j->finished_at = mc_now_ms();
    if (!j->started_at)
        j->started_at = j->finished_at;
    describe(j, c);
    if (c->refused && rc != CURLE_OK)
        mc_counter_add(hc->refused, 1);
    mc_histogram_observe(hc->duration, (double)(j->finished_at - j->started_at) / 1000.0);
    if (c->group && c->state == CALL_RUNNING && fail_over(hc, c))
        return;
    bool was_running = end_try(hc, c, c->group && member_failed(j));
    call_release(hc, c);
    give_back(hc, j);
    if (was_running)
        atomic_fetch_sub(&hc->running, 1);
}

static void check_completions(http_caller *hc)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(hc->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        call *c = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
        if (c)
            call_ended(hc, c, msg->data.result);
    }
    start_queued(hc);
    mc_gauge_set(hc->in_flight, (double)atomic_load(&hc->running));
}

/* The event loop: a socket curl watches is ready. */
static void on_socket_ready(void *arg, int fd, short revents, void *data)
{
    (void)data;
    http_caller *hc = arg;
    int flags = 0, running;
    if (revents & POLLIN)
        flags |= CURL_CSELECT_IN;
    if (revents & POLLOUT)
        flags |= CURL_CSELECT_OUT;
    if (revents & (POLLERR | POLLHUP | POLLNVAL))
        flags |= CURL_CSELECT_ERR;
    curl_multi_socket_action(hc->multi, fd, flags, &running);
}

/* The event loop: the wait is over; a wake-up far later than asked for means
 * the process was stopped (see note_progress). */
static void after_wait(void *data)
{
    http_caller *hc = data;
    note_progress(hc, hc->wake_by);
}

/* curl: watch this socket for these events (or no longer). */
static int on_curl_socket(CURL *e, curl_socket_t s, int what, void *arg, void *sockp)
{
    (void)e;
    (void)sockp;
    http_caller *hc = arg;
    short ev = 0;
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT)
        ev |= POLLIN;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT)
        ev |= POLLOUT;
    return mc_evloop_watch(&hc->loop, s, ev, MC_EV_FN(on_socket_ready), hc) == 0 ? 0 : -1;
}

/* curl: call socket_action(CURL_SOCKET_TIMEOUT) in timeout_ms (-1: never).
 * Called from inside curl, so it only records. */
static int on_curl_timer(CURLM *multi, long timeout_ms, void *arg)
{
    (void)multi;
    http_caller *hc = arg;
    hc->curl_due = timeout_ms < 0 ? INT64_MAX : mc_now_ms() + timeout_ms;
    return 0;
}

static void forget_draining(http_caller *hc, int32_t partition)
{
    for (size_t i = 0; i < hc->n_draining_parts; i++)
        if (hc->draining_parts[i] == partition) {
            hc->draining_parts[i] = hc->draining_parts[--hc->n_draining_parts];
            return;
        }
}

/* Drops the partition's calls - all of them, or only those not started -
 * and returns how many were running (all) or how many are left (not
 * started only). Their new owner makes the dropped ones. */
static size_t drop_calls_of(http_caller *hc, int32_t partition, bool running_too)
{
    size_t n = 0;
    for (call *c = hc->all, *next; c; c = next) {
        next = c->all_next;
        if (c->call->partition != partition)
            continue;
        if (!running_too && c->state == CALL_RUNNING) {
            n++;
            continue;
        }
        mc_call *j = c->call;
        if (call_release(hc, c)) {
            atomic_fetch_sub(&hc->running, 1);
            n += running_too;
        }
        mc_call_free(j);
    }
    return n;
}

static size_t count_calls_of(const http_caller *hc, int32_t partition)
{
    size_t n = 0;
    for (const call *c = hc->all; c; c = c->all_next)
        n += c->call->partition == partition;
    return n;
}

/* Frees the partition's calls posted since this thread last took the posted
 * ones (under mu): posted before the request, they are covered by it, and
 * taken after its answer they would be held and started for a partition
 * the runner has let go. */
static void drop_posted(http_caller *hc, int32_t partition)
{
    mc_call *kept = NULL, *last = NULL;
    for (mc_call *j = hc->new_head, *next; j; j = next) {
        next = j->next;
        if (j->partition == partition) {
            mc_call_free(j);
            continue;
        }
        j->next = NULL;
        *(last ? &last->next : &kept) = j;
        last = j;
    }
    hc->new_head = kept;
    hc->new_tail = last;
}

/* Answers one of the runner's requests (under mu, which the calls' lists
 * do not need: only this thread touches them). */
static size_t answer(http_caller *hc, const partition_req *q)
{
    if (q->ask != ASK_COUNT)
        drop_posted(hc, q->partition);
    switch (q->ask) {
    case ASK_ABANDON:
        forget_draining(hc, q->partition);
        return drop_calls_of(hc, q->partition, true);
    case ASK_DRAIN:
        if (!partition_draining(hc, q->partition)) {
            if (hc->n_draining_parts == hc->cap_draining_parts) {
                size_t cap = hc->cap_draining_parts ? hc->cap_draining_parts * 2 : 16;
                int32_t *v = realloc(hc->draining_parts, cap * sizeof *v);
                if (!v) /* its calls still start: the next owner may repeat them, as today */
                    return count_calls_of(hc, q->partition);
                hc->draining_parts = v;
                hc->cap_draining_parts = cap;
            }
            hc->draining_parts[hc->n_draining_parts++] = q->partition;
        }
        return drop_calls_of(hc, q->partition, false);
    case ASK_COUNT:
        break;
    }
    return count_calls_of(hc, q->partition);
}

/* Whether a call can still be recalled: not started (one that has started
 * runs: it was due). */
static bool not_started(const call *c)
{
    return c->state == CALL_HELD || c->state == CALL_QUEUED || c->state == CALL_WAITING;
}

/* The call is not made: it comes back recalled. */
static void void_call(http_caller *hc, call *c)
{
    mc_call *j = c->call;
    j->recalled = true;
    j->finished_at = j->started_at = mc_now_ms();
    call_release(hc, c);
    give_back(hc, j);
}

/* A recall: the calls of its key with an older version not started yet are
 * not made. Then the recall itself comes back. */
static void recall(http_caller *hc, mc_call *r)
{
    for (call *c = hc->all, *next; c; c = next) {
        next = c->all_next;
        mc_call *j = c->call;
        if (not_started(c) && j->partition == r->partition &&
            mc_version_cmp(j->version, r->version) < 0 && strcmp(j->key, r->key) == 0)
            void_call(hc, c);
    }
    give_back(hc, r);
}

/* A batch's recalls by partition and key ("<partition>/<key>"): the newest
 * version of each. */
typedef struct recall_key {
    mc_keynode node;
    mc_version version;
    char key[];
} recall_key;

static size_t partition_key(char *out, size_t cap, int32_t partition, const char *key)
{
    int n = snprintf(out, cap, "%" PRId32 "/%s", partition, key);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

static void free_recall_key(mc_keynode *n, void *arg)
{
    (void)arg;
    free((char *)n - offsetof(recall_key, node));
}

/* The newest recall of each partition and key in the list; NULL on ENOMEM. */
static mc_keymap *recall_keys(mc_call *recalls)
{
    mc_keymap *keys = mc_keymap_new(offsetof(recall_key, key) - offsetof(recall_key, node));
    char k[MC_CALL_KEY_MAX + 16];
    for (mc_call *r = recalls; keys && r; r = r->next) {
        size_t n = partition_key(k, sizeof k, r->partition, r->key);
        uint32_t hash = mc_keymap_hash(k, n);
        mc_keynode *found = mc_keymap_find(keys, k, n, hash);
        if (found) {
            recall_key *e = (recall_key *)(void *)((char *)found - offsetof(recall_key, node));
            if (mc_version_cmp(r->version, e->version) > 0)
                e->version = r->version;
            continue;
        }
        recall_key *e = malloc(sizeof *e + n);
        if (!e) {
            mc_keymap_drain(keys, free_recall_key, NULL);
            mc_keymap_free(keys);
            return NULL;
        }
        memcpy(e->key, k, n);
        e->node.hash = hash;
        e->node.key_len = (uint32_t)n;
        e->version = r->version;
        mc_keymap_insert(keys, &e->node);
    }
    return keys;
}

/* A batch's recalls (linked by next), applied in one pass over every call:
 * one pass per recall would walk them all each time, and a mass cancel
 * while a burst is held would keep the thread from starting calls. Without
 * memory for the pass, one recall at a time. */
static void recall_batch(http_caller *hc, mc_call *recalls)
{
    mc_keymap *keys = recalls->next ? recall_keys(recalls) : NULL;
    if (!keys) {
        for (mc_call *r = recalls, *next; r; r = next) {
            next = r->next;
            recall(hc, r);
        }
        return;
    }
    char k[MC_CALL_KEY_MAX + 16];
    for (call *c = hc->all, *next; c; c = next) {
        next = c->all_next;
        if (!not_started(c))
            continue;
        mc_call *j = c->call;
        size_t n = partition_key(k, sizeof k, j->partition, j->key);
        mc_keynode *found = mc_keymap_find(keys, k, n, mc_keymap_hash(k, n));
        if (found &&
            mc_version_cmp(
                j->version,
                ((recall_key *)(void *)((char *)found - offsetof(recall_key, node)))->version) < 0)
            void_call(hc, c);
    }
    mc_keymap_drain(keys, free_recall_key, NULL);
    mc_keymap_free(keys);
    for (mc_call *r = recalls, *next; r; r = next) {
        next = r->next;
        give_back(hc, r);
    }
}

/* Takes a posted CALL: held until due - even one due already, which
 * release_due() starts after the rest of its batch is taken, so a recall
 * later in the same batch still finds it held. */
static void take_call(http_caller *hc, mc_call *j, int64_t now)
{
    call *c = calloc(1, sizeof *c);
    if (!c) {
        j->transport_failed = true;
        snprintf(j->error, sizeof j->error, "out of memory taking the call");
        j->finished_at = j->started_at = now;
        give_back(hc, j);
        return;
    }
    c->call = j;
    c->hc = hc;
    j->caller_state = c;
    all_link(hc, c);
    c->state = CALL_HELD;
    if (mc_wheel_add(hc->held, &c->timer, j->task.due_at) == 0)
        return;
    run_or_queue(hc, c); /* no memory for the overdue heap: now */
}

/* Posted calls first, then the runner's requests: an abandon must find the
 * calls the runner posted before it. */
static void take_requests(http_caller *hc)
{
    pthread_mutex_lock(&hc->mu);
    mc_call *calls = hc->new_head;
    hc->new_head = hc->new_tail = NULL;
    pthread_mutex_unlock(&hc->mu);
    int64_t now = mc_now_ms();
    /* Calls first, then the batch's recalls together: a recall voids the
     * older versions taken before it, and one read after a recall of a newer
     * version was never posted (the executor voids it at read, executor.c). */
    mc_call *recalls = NULL, **recalls_tail = &recalls;
    for (mc_call *j = calls, *next; j; j = next) {
        next = j->next;
        if (hc->n_draining_parts && partition_draining(hc, j->partition)) {
            mc_call_free(j); /* not ours to start: the next owner reads it again */
        } else if (j->kind == MC_CALL_RECALL) {
            j->next = NULL;
            *recalls_tail = j;
            recalls_tail = &j->next;
        } else {
            take_call(hc, j, now);
        }
    }
    if (recalls)
        recall_batch(hc, recalls);
    pthread_mutex_lock(&hc->mu);
    for (partition_req *q = hc->requests; q; q = q->next) {
        if (q->done)
            continue;
        q->answer = answer(hc, q);
        q->done = true;
    }
    pthread_cond_broadcast(&hc->acked);
    pthread_mutex_unlock(&hc->mu);
    mc_gauge_set(hc->held_gauge, (double)mc_wheel_count(hc->held));
}

static void release_due(http_caller *hc, int64_t now)
{
    mc_timer *due[256];
    size_t n;
    do {
        n = mc_wheel_advance(hc->held, now, due, 256);
        for (size_t i = 0; i < n; i++)
            run_or_queue(hc, MC_TIMER_OWNER(due[i], call, timer));
    } while (n == 256);
}

/* Takes the gate's current endpoint snapshot and ownership (each turn of the loop: a
 * snapshot is swapped in whole, so calls pick from one at a time). */
static void refresh_endpoints(http_caller *hc)
{
    if (hc->gate.endpoints) {
        mc_endpoints *e = hc->gate.endpoints(hc->gate.arg);
        mc_endpoints_unref(hc->endpoints);
        hc->endpoints = e;
    }
    if (hc->gate.ownership)
        hc->gate.ownership(hc->gate.arg, &hc->ownership_version, &hc->ownership);
}

/* The HTTP thread's loop: wait for curl's sockets, the runner's eventfd or
 * the next due instant (a held call's, or curl's timeout), then act. */
static void *http_main(void *arg)
{
    http_caller *hc = arg;
    pthread_setname_np(pthread_self(), "mc-http-calls"); /* beside mc-executor in top -H */
    hc->progress_at = mc_mono_ms();
    refresh_endpoints(hc);
    while (!atomic_load(&hc->stop)) {
        int64_t now = mc_now_ms(), next = mc_wheel_next_deadline(hc->held);
        if (hc->curl_due < next)
            next = hc->curl_due;
        int timeout = mc_evloop_timeout(now, next, 1000);
        if ((hc->queue_head || hc->waiting_buckets) && timeout > GATE_RECHECK_MS &&
            !atomic_load(&hc->draining) && !may_start(hc))
            timeout = GATE_RECHECK_MS; /* a shut gate opens with no wake-up of ours */
        int64_t token_us = hc->waiting_buckets && slot_free(hc) && may_start(hc)
                               ? next_token_at(hc)
                               : INT64_MAX; /* a shut gate is looked at every GATE_RECHECK_MS */
        if (token_us != INT64_MAX) {
            /* A rate-limited bucket's next token (rounded up: never early). */
            int64_t wait_ms = (token_us - mono_us() + 999) / 1000;
            if (wait_ms < timeout)
                timeout = wait_ms > 0 ? (int)wait_ms : 0;
        }
        if (hc->done_wake_owed) {
            int64_t owed_ms = hc->done_woken_at + DONE_WAKE_MIN_MS - mc_mono_ms();
            if (owed_ms < timeout)
                timeout = owed_ms > 0 ? (int)owed_ms : 0;
        }
        hc->wake_by = mc_mono_ms() + timeout;
        bool woken;
        if (mc_evloop_run_once(&hc->loop, timeout, &woken) < 0) {
            if (errno != EINTR)
                poll(NULL, 0, 10); /* ENOMEM: try again shortly */
            if (hc->done_wake_owed)
                wake_for_done(hc); /* a wait that keeps failing must not hold it back */
            continue;
        }
        refresh_endpoints(hc); /* after the wait: what is taken now picks from the latest */
        if (woken)
            take_requests(hc);
        int running;
        now = mc_now_ms();
        start_queued(hc); /* before what falls due now: a gate that opened, say */
        release_due(hc, now);
        if (hc->curl_due <= now) {
            hc->curl_due = INT64_MAX;
            curl_multi_socket_action(hc->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        check_completions(hc);
        if (hc->done_wake_owed)
            wake_for_done(hc);
        mc_gauge_set(hc->held_gauge, (double)mc_wheel_count(hc->held));
    }
    if (hc->done_wake_owed)
        wake(hc->done_wake); /* at a stop: the runner may still take them */
    return NULL;
}

/* ---- the caller ops (the runner's thread) ------------------------------------------ */

#define HC(c) ((http_caller *)(void *)(c))

static void hc_post(mc_caller *base, mc_call *j)
{
    http_caller *hc = HC(base);
    mc_call *last = j;
    while (last->next)
        last = last->next;
    pthread_mutex_lock(&hc->mu);
    bool was_empty = !hc->new_head;
    *(hc->new_tail ? &hc->new_tail->next : &hc->new_head) = j;
    hc->new_tail = last;
    pthread_mutex_unlock(&hc->mu);
    if (was_empty)
        wake(hc->http_wake);
}

/* Asks the HTTP thread about a partition's calls and waits for its answer. */
static size_t ask(http_caller *hc, int32_t partition, partition_ask what)
{
    partition_req q = {.partition = partition, .ask = what};
    pthread_mutex_lock(&hc->mu);
    q.next = hc->requests;
    hc->requests = &q;
    pthread_mutex_unlock(&hc->mu);
    wake(hc->http_wake);
    pthread_mutex_lock(&hc->mu);
    while (!q.done)
        pthread_cond_wait(&hc->acked, &hc->mu);
    for (partition_req **l = &hc->requests; *l; l = &(*l)->next)
        if (*l == &q) {
            *l = q.next;
            break;
        }
    pthread_mutex_unlock(&hc->mu);
    return q.answer;
}

static size_t hc_abandon(mc_caller *base, int32_t partition)
{
    return ask(HC(base), partition, ASK_ABANDON);
}

static void hc_drain_partition(mc_caller *base, int32_t partition)
{
    (void)ask(HC(base), partition, ASK_DRAIN);
}

static size_t hc_calls_of(mc_caller *base, int32_t partition)
{
    return ask(HC(base), partition, ASK_COUNT);
}

static mc_call *hc_take_done(mc_caller *base)
{
    http_caller *hc = HC(base);
    drain_wake(hc->done_wake);
    pthread_mutex_lock(&hc->mu);
    mc_call *done = hc->done_head;
    hc->done_head = hc->done_tail = NULL;
    pthread_mutex_unlock(&hc->mu);
    return done;
}

static int hc_wake_fd(mc_caller *base)
{
    return HC(base)->done_wake;
}

static void hc_drain(mc_caller *base)
{
    atomic_store(&HC(base)->draining, true);
}

static bool hc_idle(mc_caller *base)
{
    http_caller *hc = HC(base);
    /* running first: the HTTP thread gives a call back before it lowers running, so a
     * call seen in neither place has been taken already. */
    bool none_running = atomic_load(&hc->running) == 0;
    pthread_mutex_lock(&hc->mu);
    bool nothing_done = !hc->done_head;
    pthread_mutex_unlock(&hc->mu);
    return nothing_done && none_running;
}

static void free_call_list(mc_call *j)
{
    for (mc_call *next; j; j = next) {
        next = j->next;
        mc_call_free(j);
    }
}

static void hc_destroy(mc_caller *base)
{
    http_caller *hc = HC(base);
    if (!hc)
        return;
    if (hc->started) {
        atomic_store(&hc->stop, true);
        wake(hc->http_wake);
        pthread_join(hc->thread, NULL);
    }
    /* The HTTP thread is gone: everything is ours to free. */
    while (hc->all) {
        mc_call *j = hc->all->call;
        call_release(hc, hc->all);
        mc_call_free(j);
    }
    free_call_list(hc->new_head);
    free_call_list(hc->done_head);
    mc_route_table_free(hc->routes);
    mc_admission_free(hc->admission);
    mc_endpoints_unref(hc->endpoints);
    for (size_t i = 0; i < hc->n_spare; i++)
        curl_easy_cleanup(hc->spare[i]);
    free(hc->spare);
    free(hc->draining_parts);
    if (hc->multi)
        curl_multi_cleanup(hc->multi);
    mc_wheel_free(hc->held);
    mc_evloop_free(&hc->loop);
    if (hc->http_wake >= 0)
        close(hc->http_wake);
    if (hc->done_wake >= 0)
        close(hc->done_wake);
    pthread_mutex_destroy(&hc->mu);
    pthread_cond_destroy(&hc->acked);
    mc_ssrf_free(hc->ssrf);
    mc_app_secrets_free(hc->secrets);
    free(hc);
}

static const mc_caller_ops http_caller_ops = {
    .post = hc_post,
    .abandon = hc_abandon,
    .drain_partition = hc_drain_partition,
    .calls_of = hc_calls_of,
    .take_done = hc_take_done,
    .wake_fd = hc_wake_fd,
    .drain = hc_drain,
    .idle = hc_idle,
    .destroy = hc_destroy,
};

static void register_metrics(http_caller *hc, mc_metrics *m)
{
    hc->refused = mc_metrics_counter(m, "mooncake_executor_ssrf_refused_total",
                                     "Calls refused by the SSRF guard", NULL);
    hc->failovers = mc_metrics_counter(
        m, "mooncake_executor_failovers_total",
        "FAILOVER calls that moved on to the next member of their group in the same attempt", NULL);
    hc->waits = mc_metrics_counter(
        m, "mooncake_executor_admission_waits_total",
        "Due calls that had to wait for an admission limit or a busy group (BUSYOVER)", NULL);
    hc->waiting_gauge =
        mc_metrics_gauge(m, "mooncake_executor_admission_waiting",
                         "Due calls waiting for an admission limit or a busy group", NULL);
    hc->in_flight = mc_metrics_gauge(m, "mooncake_executor_in_flight", "Calls in flight", NULL);
    hc->held_gauge = mc_metrics_gauge(m, "mooncake_executor_held",
                                      "Tasks received before their due time, held", NULL);
    hc->queued_gauge = mc_metrics_gauge(m, "mooncake_executor_queued",
                                        "Due tasks waiting for a free call slot", NULL);
    static const double lateness[] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05,
                                      0.1,   0.2,   0.5,   1,    5,    30};
    hc->lateness = mc_metrics_histogram(m, "mooncake_executor_start_lateness_seconds",
                                        "Call start minus due time", NULL, lateness, 12);
    static const double duration[] = {0.001, 0.005, 0.01, 0.025, 0.05, 0.1,
                                      0.25,  0.5,   1,    2.5,   10,   30};
    hc->duration = mc_metrics_histogram(m, "mooncake_executor_call_seconds",
                                        "Callback call duration", NULL, duration, 12);
}

mc_caller *mc_http_caller_new(const mc_config *cfg, mc_metrics *m, const mc_call_gate *gate,
                              const void *arg, char *err, size_t errlen)
{
    (void)arg;
    http_caller *hc = calloc(1, sizeof *hc);
    if (!hc) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    hc->base.ops = &http_caller_ops;
    hc->cfg = cfg;
    hc->gate = *gate;
    hc->curl_due = INT64_MAX;
    /* Without an ownership from the gate, the limits are this executor's whole. */
    hc->ownership = (mc_ownership){.total = 1, .n_owned = 1};
    hc->http_wake = hc->done_wake = -1;
    mc_evloop_init(&hc->loop, (mc_ev_hooks){.data = hc, .after_wait = after_wait});
    pthread_mutex_init(&hc->mu, NULL);
    pthread_cond_init(&hc->acked, NULL);
    atomic_init(&hc->stop, false);
    atomic_init(&hc->draining, false);
    atomic_init(&hc->running, 0);
    snprintf(hc->user_agent, sizeof hc->user_agent, "mooncake/%s", MOONCAKE_VERSION);
    if (!(hc->ssrf = mc_ssrf_new(cfg->executor_allow_cidrs, err, errlen)) ||
        !(hc->secrets = mc_app_secrets_parse(cfg->app_secrets, err, errlen))) {
        hc_destroy(&hc->base);
        return NULL;
    }
    hc->held = mc_wheel_new(mc_now_ms());
    hc->routes = mc_route_table_new((uint64_t)mc_now_us());
    hc->admission = mc_admission_new();
    hc->multi = curl_multi_init();
    hc->spare = calloc((size_t)cfg->executor_concurrency, sizeof *hc->spare);
    hc->http_wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    hc->done_wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    mc_evloop_set_wake(&hc->loop, hc->http_wake);
    if (!hc->held || !hc->routes || !hc->admission || !hc->multi || !hc->spare ||
        hc->http_wake < 0 || hc->done_wake < 0) {
        snprintf(err, errlen, "out of memory (or eventfds) for the HTTP caller");
        hc_destroy(&hc->base);
        return NULL;
    }
    curl_multi_setopt(hc->multi, CURLMOPT_SOCKETFUNCTION, on_curl_socket);
    curl_multi_setopt(hc->multi, CURLMOPT_SOCKETDATA, hc);
    curl_multi_setopt(hc->multi, CURLMOPT_TIMERFUNCTION, on_curl_timer);
    curl_multi_setopt(hc->multi, CURLMOPT_TIMERDATA, hc);
    curl_multi_setopt(hc->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                      (long)cfg->executor_host_connections);
    curl_multi_setopt(hc->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
    /* Keep-alive connections for at least as many calls as run at once. */
    curl_multi_setopt(hc->multi, CURLMOPT_MAXCONNECTS, (long)cfg->executor_concurrency);
    register_metrics(hc, m);
    if (pthread_create(&hc->thread, NULL, http_main, hc) != 0) {
        snprintf(err, errlen, "cannot start the executor's HTTP thread");
        hc_destroy(&hc->base);
        return NULL;
    }
    hc->started = true;
    return &hc->base;
}
