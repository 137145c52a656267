/* The exactly-once consume-transform-produce loop (see runner.h), its set-up
 * and its readiness. The rest of the family: runner_txn.c (transactions and
 * error classes), runner_ctx.c (what the processor sees), runner_group.c
 * (partitions, rebalances, leaving); Kafka itself is behind kclient.h.
 *
 * The loop, in the manner of Redis's aeMain:
 *
 *     while (running(r)) {
 *         begin_txn(r);              a transaction is always open
 *         wait_for_events(r);        input, the processor's descriptors, a wake-up
 *         take_input_batch(r);       up to POLL_BATCH records into process()
 *         punctuate_if_due(r);       timers (the wheel fires, the store hands off)
 *         commit_if_due(r);          on request, by size or by age
 *     }
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kafka.h"
#include "runner_impl.h"

/* Records (and milliseconds) taken per loop turn once the first record has
 * arrived, before punctuate and commit get their turn. */
#define POLL_BATCH 2000
#define POLL_BATCH_MS 5

void runner_set_fatal(mc_runner *r, const char *what, const char *detail)
{
    if (!atomic_exchange(&r->fatal, true))
        mc_log(&r->logger, MC_LOG_ERROR, "fatal", "what", what, "detail", detail ? detail : "",
               (const char *)NULL);
}

int runner_callback_failed(mc_runner *r, const char *what)
{
    if (r->txn_failed) {
        r->txn_failed = false;
        return runner_abort_txn(r, "the transaction failed while producing");
    }
    runner_set_fatal(r, what, r->proc->name);
    return -1;
}

void runner_read_clocks(mc_runner *r)
{
    r->now_mono_ms = r->kc->ops->mono_ms(r->kc);
    r->now_wall_ms = r->kc->ops->wall_ms(r->kc);
    atomic_store(&r->loop_heartbeat_ms, r->now_mono_ms);
}

/* ---- readiness and health (the HTTP thread) ---- */

static bool ready_check(void *arg, char *why, size_t whylen)
{
    mc_runner *r = arg;
    /* First: a replica told to stop is not ready from that moment, through
     * its drain and hand-over, so whoever watches readiness sees it going
     * before its partitions move. */
    if (atomic_load(&r->stop)) {
        snprintf(why, whylen, "stopping: handing its partitions over");
        return false;
    }
    if (!atomic_load(&r->started)) {
        snprintf(why, whylen, "starting (transactions not initialised yet)");
        return false;
    }
    if (!atomic_load(&r->processor_ready)) {
        snprintf(why, whylen, "restoring state");
        return false;
    }
    if (!atomic_load(&r->assigned_once)) {
        snprintf(why, whylen, "waiting for a partition assignment");
        return false;
    }
    return true;
}

static bool health_check(void *arg, char *why, size_t whylen)
{
    mc_runner *r = arg;
    if (atomic_load(&r->fatal)) {
        snprintf(why, whylen, "fatal Kafka error, exiting");
        return false;
    }
    if (mc_runner_stuck(r, why, whylen))
        return false;
    long long hb = atomic_load(&r->loop_heartbeat_ms);
    long long now = r->kc->ops->mono_ms(r->kc);
    if (hb && now - hb > 60000) {
        snprintf(why, whylen, "processing loop stuck for %lld ms", now - hb);
        return false;
    }
    return true;
}

/* Lag = high watermark - position, from the client's cached watermarks (no
 * broker round trip), summed per input topic once a second. */
static void update_lag(mc_runner *r)
{
    mc_kclient *kc = r->kc;
    int64_t now = r->now_mono_ms;
    if (now - r->last_lag_ms < 1000)
        return;
    r->last_lag_ms = now;
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (kc->ops->assignment(kc, &parts) || !parts)
        return;
    kc->ops->position(kc, parts);
    for (size_t t = 0; t < r->n_inputs; t++) {
        int64_t lag = 0;
        for (int i = 0; i < parts->cnt; i++) {
            rd_kafka_topic_partition_t *p = &parts->elems[i];
            if (strcmp(p->topic, r->inputs[t].name) != 0)
                continue;
            int64_t lo, hi;
            if (kc->ops->watermarks(kc, p->topic, p->partition, &lo, &hi))
                continue;
            int64_t pos = p->offset >= 0 ? p->offset : lo;
            if (hi > pos)
                lag += hi - pos;
        }
        mc_gauge_set(r->inputs[t].lag, (double)lag);
    }
    rd_kafka_topic_partition_list_destroy(parts);
}

/* The event loop's hooks: the clocks are read as the wait ends, and each
 * ready descriptor's callback runs inside the open transaction (one before
 * it may have aborted it). 1 stops the dispatch. */
static void loop_after_wait(void *data)
{
    runner_read_clocks(RUNNER_OF(data));
}

static int loop_call(void *data, mc_ev_any fn, void *arg, int fd, short revents)
{
    mc_runner *r = RUNNER_OF(data);
    if (runner_begin_txn(r) != 0)
        return 1;
    if (((mc_fd_callback)fn)(arg, fd, revents, &r->ctx) != 0 &&
        runner_callback_failed(r, "descriptor callback") != 0)
        return 1;
    return 0;
}

/* ---- set-up ---- */

static void register_metrics(mc_runner *r)
{
    char labels[400];
    snprintf(labels, sizeof labels, "processor=\"%s\"", r->proc->name);
    r->txn_committed = mc_metrics_counter(r->metrics, "mooncake_transactions_committed_total",
                                          "Kafka transactions committed", labels);
    r->txn_aborted = mc_metrics_counter(r->metrics, "mooncake_transactions_aborted_total",
                                        "Kafka transactions aborted", labels);
    static const double bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                    0.1,   0.25,   0.5,   1,    2.5,   5};
    r->commit_latency =
        mc_metrics_histogram(r->metrics, "mooncake_commit_latency_seconds",
                             "Time to send offsets and commit one transaction", labels, bounds, 12);
    r->poison_dead = mc_metrics_counter(
        r->metrics, "mooncake_refused_outputs_dead_lettered_total",
        "Inputs handled as refused because Kafka refused their output for good", labels);
    r->assigned_partitions = mc_metrics_gauge(r->metrics, "mooncake_assigned_partitions",
                                              "Input partitions assigned to this instance", labels);
    for (const char *const *t = r->proc->input_topics; *t && r->n_inputs < MAX_INPUTS; t++) {
        input_topic *in = &r->inputs[r->n_inputs++];
        mc_topic_name(r->cfg, *t, in->name, sizeof in->name);
        snprintf(labels, sizeof labels, "processor=\"%s\",topic=\"%s\"", r->proc->name, in->name);
        in->records_in = mc_metrics_counter(r->metrics, "mooncake_records_in_total",
                                            "Records consumed, counted when committed", labels);
        in->lag =
            mc_metrics_gauge(r->metrics, "mooncake_consumer_lag",
                             "Records behind the high watermark on assigned partitions", labels);
    }
}

static mc_kclient *rdkafka_factory(const mc_kclient_spec *spec, void *arg, char *err, size_t errlen)
{
    (void)arg;
    return mc_kclient_rdkafka_new(spec, err, errlen);
}

mc_runner *mc_runner_new(const mc_processor *p, const mc_config *cfg, mc_metrics *metrics,
                         mc_http_server *http, char *err, size_t errlen)
{
    return mc_runner_new_with_client(p, cfg, metrics, http, rdkafka_factory, NULL, err, errlen);
}

mc_runner *mc_runner_new_with_client(const mc_processor *p, const mc_config *cfg,
                                     mc_metrics *metrics, mc_http_server *http,
                                     mc_kclient_factory factory, void *factory_arg, char *err,
                                     size_t errlen)
{
    mc_runner *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    r->logger = (mc_logger){.level = cfg->log_level, .json = cfg->log_json, .role = p->name};
    r->proc = p;
    r->cfg = cfg;
    r->metrics = metrics;
    r->ctx = (mc_ctx){.ops = &runner_ctx_ops,
                      .cfg = cfg,
                      .logger = &r->logger,
                      .metrics = metrics,
                      .processor_name = p->name};
    r->wakeup_ms = INT64_MAX;
    r->input_fd = -1;
    mc_evloop_init(
        &r->loop, (mc_ev_hooks){.data = &r->ctx, .after_wait = loop_after_wait, .call = loop_call});
    atomic_init(&r->stop, false);
    atomic_init(&r->fatal, false);
    atomic_init(&r->processor_ready, true);
    atomic_init(&r->started, false);
    atomic_init(&r->assigned_once, false);
    atomic_init(&r->loop_heartbeat_ms, 0);
    atomic_init(&r->watched_call, (const char *)NULL);
    atomic_init(&r->watched_deadline_ms, 0);
    snprintf(r->group_id, sizeof r->group_id, "%s%s", cfg->topic_prefix, p->name);
    snprintf(r->transactional_id, sizeof r->transactional_id, "%s%s-%s", cfg->topic_prefix, p->name,
             cfg->instance_id);
    mc_kclient_spec spec = {.cfg = cfg,
                            .logger = &r->logger,
                            .group_id = r->group_id,
                            .transactional_id = r->transactional_id,
                            .n_producers = TXN_PRODUCERS,
                            .consumer_defaults = p->consumer_defaults,
                            .advertise = p->advertises};
    if (!(r->kc = factory(&spec, factory_arg, err, errlen)))
        goto fail;
    r->kc->events = (mc_kclient_events){
        .arg = r, .rebalance = runner_rebalance, .delivery_failed = runner_delivery_failed};
    runner_read_clocks(r);
    register_metrics(r);
    r->self = p->create(&r->ctx, p->create_arg, err, errlen);
    if (!r->self)
        goto fail;
    if (http) {
        mc_http_add_check(http, "ready", p->name, ready_check, r);
        mc_http_add_check(http, "health", p->name, health_check, r);
    }
    return r;
fail:
    mc_runner_free(r);
    return NULL;
}

/* ---- the loop ---- */

/* --commit-interval-ms, or the processor's floor when that is longer. */
static int64_t commit_interval(const mc_runner *r)
{
    int64_t floor = r->proc->min_commit_interval_ms;
    return floor > r->cfg->commit_interval_ms ? floor : r->cfg->commit_interval_ms;
}

/* How old the open transaction may grow. One that has written nothing holds
 * only input offsets: committing it sooner saves a replay of those records
 * after a crash and nothing else, yet costs the broker a full round of
 * transaction requests and markers, so it waits for
 * --offsets-commit-interval-ms. The roles that read everything and write
 * for few of it (the store, jobs, the view) commit mostly such ones. */
static int64_t commit_age(const mc_runner *r)
{
    int64_t interval = commit_interval(r);
    if (!r->txn_produced && r->cfg->offsets_commit_interval_ms > interval)
        return r->cfg->offsets_commit_interval_ms;
    return interval;
}

static int poll_timeout(const mc_runner *r)
{
    int64_t timeout = 100;
    if (r->txn_open && r->txn_dirty) {
        int64_t left = r->txn_started_ms + commit_age(r) - r->now_mono_ms;
        if (left < timeout)
            timeout = left;
    }
    if (r->wakeup_ms != INT64_MAX) {
        int64_t left = r->wakeup_ms - r->now_wall_ms;
        if (left < timeout)
            timeout = left;
    }
    return timeout < 0 ? 0 : (int)timeout;
}

static bool commit_due_by_size_or_age(const mc_runner *r)
{
    if (!r->txn_open)
        return false;
    if (r->txn_records >= (uint64_t)r->cfg->commit_max_records)
        return true;
    return r->txn_dirty && r->now_mono_ms - r->txn_started_ms >= commit_age(r);
}

bool runner_commit_due(const mc_runner *r)
{
    return (r->txn_open && r->commit_requested && r->txn_dirty) || commit_due_by_size_or_age(r);
}

/* Waits in the event loop for input, the processor's descriptors or the
 * timeout, running the callbacks of the descriptors that are ready. Without
 * descriptors the wait happens in the consumer's poll instead; with a client
 * that has no input descriptor, the loop never blocks. Returns the timeout
 * left for the consumer's poll, or -1 on a fatal error. */
static int wait_for_events(mc_runner *r)
{
    runner_read_clocks(r);
    int timeout = poll_timeout(r);
    if (mc_evloop_watched(&r->loop) == 0)
        return timeout;
    int rc = mc_evloop_run_once(&r->loop, r->input_backlog || r->input_fd < 0 ? 0 : timeout, NULL);
    if (rc < 0) {
        runner_read_clocks(r);
        if (errno == EINTR)
            return 0;
        runner_set_fatal(r, "poll", strerror(errno));
        return -1;
    }
    if (rc > 0)
        return -1;
    return r->input_fd < 0 ? timeout : 0; /* the wait covered it: take input without blocking */
}

/* Takes what has arrived, up to a batch: the first poll waits up to timeout,
 * the rest take only what is already there, so that a processor which asks
 * for a commit after every punctuate (the wheel) still consumes at full
 * speed. Returns -1 to leave the loop. */
static int take_input_batch(mc_runner *r, int timeout)
{
    mc_kclient *kc = r->kc;
    int64_t batch_start = -1;
    r->input_backlog = true; /* unless the queue is seen empty below */
    for (int n = 0; n < POLL_BATCH; n++) {
        mc_kmsg m;
        int got = kc->ops->poll(kc, n == 0 ? timeout : 0, &m);
        if (n == 0 || (n & 63) == 0)
            runner_read_clocks(r);
        if (!got) {
            r->input_backlog = false;
            return 0;
        }
        if (batch_start < 0)
            batch_start = r->now_mono_ms;
        int rc = 0;
        if (m.err) {
            if (m.err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                mc_log(&r->logger, MC_LOG_WARN, "consumer error", "error", m.errstr,
                       (const char *)NULL);
            char why[512];
            if (kc->ops->consumer_fatal(kc, why, sizeof why))
                runner_set_fatal(r, "consumer", why);
        } else if (runner_begin_txn(r) != 0 || runner_handle_record(r, &m.rec) != 0) {
            /* begin again above: a rebalance callback inside this poll may
             * have committed the transaction we had open. */
            rc = -1;
        }
        kc->ops->kmsg_done(kc, &m);
        if (rc != 0)
            return -1;
        /* Not on a commit request or a due wake-up: those are served right
         * after the batch, which is short, and breaking for them would make
         * a processor that fires continuously (the wheel) consume one record
         * per commit. */
        if (atomic_load(&r->fatal) || commit_due_by_size_or_age(r) ||
            r->now_mono_ms - batch_start >= POLL_BATCH_MS)
            return 0;
    }
    return 0;
}

static int punctuate_if_due(mc_runner *r)
{
    if (!r->proc->punctuate || r->wakeup_ms == INT64_MAX || r->now_wall_ms < r->wakeup_ms ||
        atomic_load(&r->fatal))
        return 0;
    r->wakeup_ms = INT64_MAX;
    if (runner_begin_txn(r) != 0)
        return -1;
    if (r->proc->punctuate(r->self, r->now_wall_ms, &r->ctx) != 0)
        return runner_callback_failed(r, "punctuate");
    return 0;
}

static int commit_if_due(mc_runner *r)
{
    return runner_commit_due(r) && runner_commit_txn(r) < 0 ? -1 : 0;
}

void runner_begin_stop_drain(mc_runner *r, int64_t deadline)
{
    r->draining = true;
    r->drain_deadline = deadline;
    rd_kafka_topic_partition_list_t *parts = NULL;
    if (r->kc->ops->assignment(r->kc, &parts) == 0 && parts) {
        r->kc->ops->pause(r->kc, parts, true);
        rd_kafka_topic_partition_list_destroy(parts);
    }
    mc_log(&r->logger, MC_LOG_INFO, "draining before the stop", (const char *)NULL);
}

/* After a stop was asked for: whether the loop is done. A processor with
 * calls in flight (the executor) first drains: input paused, nothing new
 * started, what is running finishes, so a rolling restart repeats nothing. */
static bool stop_now(mc_runner *r)
{
    if (!atomic_load(&r->stop))
        return false;
    if (!r->proc->drained)
        return true;
    if (!r->draining)
        runner_begin_stop_drain(r, r->now_mono_ms + r->cfg->drain_timeout_ms);
    return r->proc->drained(r->self, &r->ctx) || r->now_mono_ms >= r->drain_deadline;
}

static bool running(mc_runner *r)
{
    return !atomic_load(&r->fatal) && !stop_now(r);
}

static int subscribe(mc_runner *r)
{
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new((int)r->n_inputs);
    for (size_t i = 0; i < r->n_inputs; i++)
        rd_kafka_topic_partition_list_add(topics, r->inputs[i].name, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t err = r->kc->ops->subscribe(r->kc, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (err) {
        runner_set_fatal(r, "subscribe", rd_kafka_err2str(err));
        return -1;
    }
    return 0;
}

int mc_runner_start(mc_runner *r)
{
    if (runner_init_transactions(r) != 0)
        return atomic_load(&r->fatal) ? 1 : -1;
    if (subscribe(r) != 0)
        return 1;
    atomic_store(&r->started, true);
    mc_log(&r->logger, MC_LOG_INFO, "running", "group", r->group_id, "transactional_id",
           r->transactional_id, (const char *)NULL);
    runner_read_clocks(r);
    return 0;
}

bool mc_runner_turn(mc_runner *r)
{
    if (!running(r))
        return false;
    int timeout;
    if (runner_begin_txn(r) != 0 || (timeout = wait_for_events(r)) < 0 ||
        take_input_batch(r, timeout) != 0 || punctuate_if_due(r) != 0 || commit_if_due(r) != 0)
        return false;
    for (int i = 0; i < r->kc->n_producers; i++)
        r->kc->ops->serve(r->kc, i, 0); /* error and log events */
    update_lag(r);
    return true;
}

/* Graceful stop: finish the open transaction, then leave the group (the
 * revoke callback commits nothing new). Even after a fatal error we leave the
 * group, so our partitions move to another instance now rather than after
 * the session timeout. */
int mc_runner_finish(mc_runner *r)
{
    if (r->finished)
        return atomic_load(&r->fatal) ? 1 : 0;
    r->finished = true;
    if (!atomic_load(&r->fatal) && r->txn_open)
        runner_commit_txn(r);
    if (atomic_load(&r->fatal) && r->txn_open) {
        /* Best effort: a fenced producer cannot abort, and the coordinator
         * aborts it after transaction.timeout.ms anyway. The processor lets
         * go first, so no call starts that the next owner makes again. */
        runner_drop_processor_work(r);
        runner_abort_quietly(r, NULL, 5000);
    }
    runner_leave_group(r);
    r->kc->ops->close(r->kc);
    bool fatal = atomic_load(&r->fatal);
    mc_log(&r->logger, fatal ? MC_LOG_ERROR : MC_LOG_INFO,
           fatal ? "stopped on a fatal error" : "stopped", (const char *)NULL);
    return fatal ? 1 : 0;
}

int mc_runner_run(mc_runner *r)
{
    if (runner_watchdog_start(r) != 0) {
        runner_set_fatal(r, "watchdog", "cannot start the watchdog thread");
        return 1;
    }
    int rc = mc_runner_start(r);
    if (rc == 0) {
        while (mc_runner_turn(r))
            ;
        rc = mc_runner_finish(r);
    } else if (rc < 0) {
        rc = 0; /* stopped before it started */
    }
    runner_watchdog_stop(r);
    return rc;
}

void mc_runner_stop(mc_runner *r)
{
    atomic_store(&r->stop, true);
}

bool mc_runner_failed(const mc_runner *r)
{
    return atomic_load(&((mc_runner *)r)->fatal);
}

void mc_runner_free(mc_runner *r)
{
    if (!r)
        return;
    if (r->self && r->proc->destroy)
        r->proc->destroy(r->self);
    for (size_t t = 0; t < r->n_inputs; t++) {
        for (int32_t i = 0; i < r->inputs[t].n_parts; i++) {
            free(r->inputs[t].parts[i].committed_md);
            free(r->inputs[t].parts[i].md);
        }
        free(r->inputs[t].parts);
    }
    free(r->refs);
    free(r->poison);
    for (size_t i = 0; i < r->n_outputs; i++)
        free(r->outputs[i]);
    free(r->outputs);
    mc_evloop_free(&r->loop);
    mc_ctx_release(&r->ctx);
    if (r->kc)
        r->kc->ops->free(r->kc);
    free(r);
}
