/* The broker-free test driver (see sim.h): an in-memory Kafka and processor
 * instances run against it through the Processor API. */
#include "sim.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctx_impl.h"
#include "sim_broker.h"

/* ---- instances ------------------------------------------------------------------------ */

#define SIM_MAX_INPUTS 8 /* as the runner */
#define SIM_MAX_OUTPUTS 16
#define SIM_MAX_FDS 16

typedef struct sim_output {
    char name[256];
} sim_output;

typedef struct in_part {
    bool assigned, paused;
    int64_t fetch;     /* next offset to deliver */
    int64_t next;      /* after the last processed record; -1: none since the seek */
    int64_t resume_at; /* a record given back (MC_PROCESS_LATER); -1: none */
    int64_t committed; /* baseline, -1: none */
    char *md;
    int64_t md_offset;
    bool dirty;
} in_part;

typedef struct sim_input {
    char name[256];
    in_part *parts;
    int32_t n;
} sim_input;

/* An input whose output was refused inside process(): it goes to refused()
 * (or the dead topic) when delivered again. */
typedef struct sim_poison {
    char topic[256];
    int32_t partition;
    int64_t offset;
} sim_poison;

typedef struct sim_fd {
    int fd;
    short events;
    mc_fd_callback cb;
    void *arg;
} sim_fd;

struct sim_inst {
    mc_ctx ctx;
    sim_kafka *k;
    const mc_processor *p;
    const mc_config *cfg;
    mc_metrics *metrics;
    mc_logger logger;
    void *self;
    char group[300], transactional_id[600];
    uint64_t generation;
    uint64_t txn; /* the open transaction, 0: none */
    bool dirty;   /* something to commit */
    bool in_process;
    const mc_record *current;
    bool refused_found;
    sim_poison *poison;
    size_t n_poison;
    sim_output outputs[SIM_MAX_OUTPUTS];
    size_t n_outputs;
    sim_input inputs[SIM_MAX_INPUTS];
    size_t n_inputs;
    sim_fd fds[SIM_MAX_FDS];
    size_t n_fds;
    int64_t wakeup;
    bool ready;
    bool commit_requested;
    bool commit_now;      /* mc_ctx_request_commit_now in the open transaction */
    uint64_t commits_now; /* transactions committed that had it */
    bool assignment_lost; /* sim_set_assignment_lost, until the next assign or revoke */
    size_t rr;            /* round-robin cursor over (input, partition) */
};

#define INST_OF(c) ((sim_inst *)(void *)((char *)(c)-offsetof(sim_inst, ctx)))

static in_part *in_part_named(sim_inst *in, const char *name, int32_t partition)
{
    for (size_t i = 0; i < in->n_inputs; i++)
        if (strcmp(in->inputs[i].name, name) == 0)
            return partition >= 0 && partition < in->inputs[i].n ? &in->inputs[i].parts[partition]
                                                                 : NULL;
    return NULL;
}

static void ensure_txn(sim_inst *in)
{
    if (!in->txn)
        in->txn = simb_txn_begin(in->k, in->transactional_id);
}

static mc_output *sim_ctx_output(mc_ctx *ctx, const char *name)
{
    sim_inst *in = INST_OF(ctx);
    for (size_t i = 0; i < in->n_outputs; i++)
        if (strcmp(in->outputs[i].name, name) == 0)
            return (mc_output *)(void *)&in->outputs[i];
    if (in->n_outputs == SIM_MAX_OUTPUTS)
        return NULL;
    snprintf(in->outputs[in->n_outputs].name, 256, "%s", name);
    return (mc_output *)(void *)&in->outputs[in->n_outputs++];
}

static int sim_ctx_produce(mc_ctx *ctx, const mc_produce *p)
{
    sim_inst *in = INST_OF(ctx);
    const sim_output *o = (const sim_output *)(const void *)p->out;
    topic *t = simb_topic_get(in->k, o->name);
    if (p->partition < 0 || p->partition >= t->n) {
        fprintf(stderr, "sim: produce to %s partition %d, which does not exist\n", o->name,
                p->partition);
        return -1;
    }
    if (t->max_bytes && p->key_len + p->value_len > t->max_bytes) {
        if (in->in_process && !p->cause)
            in->refused_found = true;
        return MC_FORWARD_REFUSED;
    }
    ensure_txn(in);
    entry e = simb_make_entry(p->key, p->key_len, p->value, p->value_len, p->headers, p->n_headers);
    if (simb_txn_produce(in->k, in->txn, o->name, p->partition, e) < 0)
        return -1;
    in->dirty = true;
    return 0;
}

static void sim_ctx_wakeup_at(mc_ctx *ctx, int64_t at_ms)
{
    sim_inst *in = INST_OF(ctx);
    if (at_ms < in->wakeup)
        in->wakeup = at_ms;
}

static int64_t sim_ctx_now_ms(const mc_ctx *ctx)
{
    return INST_OF(ctx)->k->now;
}

static int sim_ctx_set_commit(mc_ctx *ctx, const char *name, int32_t partition, bool set_offset,
                              int64_t offset, const char *metadata)
{
    sim_inst *in = INST_OF(ctx);
    if (strlen(metadata) > 4096) {
        fprintf(stderr, "sim: commit metadata of %zu bytes (Kafka's limit is 4096)\n",
                strlen(metadata));
        return -1;
    }
    in_part *ip = in_part_named(in, name, partition);
    if (!ip || !ip->assigned)
        return -1;
    free(ip->md);
    ip->md = simb_xstrdup(metadata);
    if (set_offset)
        ip->md_offset = offset;
    in->dirty = true;
    return 0;
}

static void sim_ctx_request_commit(mc_ctx *ctx, bool now)
{
    sim_inst *in = INST_OF(ctx);
    in->commit_requested = true;
    in->commit_now |= now;
}

static void sim_ctx_set_ready(mc_ctx *ctx, bool ready)
{
    INST_OF(ctx)->ready = ready;
}

static void sim_ctx_alive(mc_ctx *ctx)
{
    (void)ctx;
}

static bool sim_ctx_assignment_lost(const mc_ctx *ctx)
{
    return INST_OF(ctx)->assignment_lost;
}

static int sim_ctx_pause(mc_ctx *ctx, const char *name, int32_t partition, bool pause)
{
    sim_inst *in = INST_OF(ctx);
    in_part *ip = in_part_named(in, name, partition);
    if (!ip)
        return -1;
    ip->paused = pause;
    if (!pause && ip->resume_at >= 0) {
        ip->fetch = ip->resume_at;
        ip->resume_at = -1;
    }
    return 0;
}

static int sim_ctx_watch_fd(mc_ctx *ctx, int fd, short events, mc_fd_callback cb, void *arg)
{
    sim_inst *in = INST_OF(ctx);
    for (size_t i = 0; i < in->n_fds; i++) {
        if (in->fds[i].fd == fd) {
            if (!events)
                in->fds[i] = in->fds[--in->n_fds];
            else
                in->fds[i] = (sim_fd){fd, events, cb, arg};
            return 0;
        }
    }
    if (!events)
        return 0;
    if (in->n_fds == SIM_MAX_FDS)
        return -1;
    in->fds[in->n_fds++] = (sim_fd){fd, events, cb, arg};
    return 0;
}

static int sim_ctx_restore(mc_ctx *ctx, const char *suffix, const int32_t *partitions, size_t n,
                           mc_restore_fn fn, void *arg, mc_restore_stats *stats)
{
    sim_inst *in = INST_OF(ctx);
    char name[256];
    mc_topic_name(in->cfg, suffix, name, sizeof name);
    return simb_restore(in->k, name, partitions, n, fn, arg, stats);
}

static int sim_ctx_partition_count(mc_ctx *ctx, const char *name, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    sim_inst *in = INST_OF(ctx);
    return sim_partitions(in->k, name);
}

static int64_t sim_ctx_end_offset(mc_ctx *ctx, const char *suffix, int32_t partition, char *err,
                                  size_t errlen)
{
    sim_inst *in = INST_OF(ctx);
    char name[256];
    mc_topic_name(in->cfg, suffix, name, sizeof name);
    int64_t end = sim_end_offset(in->k, name, partition);
    if (end < 0)
        snprintf(err, errlen, "%s [%d]: no such partition", name, (int)partition);
    return end;
}

static int64_t sim_ctx_position(mc_ctx *ctx, const char *topic, int32_t partition)
{
    in_part *ip = in_part_named(INST_OF(ctx), topic, partition);
    return ip && ip->assigned ? ip->fetch : -1;
}

static int sim_ctx_high_watermarks(mc_ctx *ctx, const char *suffix, const int32_t *partitions,
                                   size_t n, int64_t *ends, int timeout_ms, char *err,
                                   size_t errlen)
{
    (void)timeout_ms;
    for (size_t i = 0; i < n; i++)
        if ((ends[i] = sim_ctx_end_offset(ctx, suffix, partitions[i], err, errlen)) < 0)
            return -1;
    return 0;
}

static int sim_ctx_stable_ends(mc_ctx *ctx, const char *const *suffixes, size_t n,
                               const int32_t *partitions, size_t n_partitions, int64_t *ends,
                               int timeout_ms, char *err, size_t errlen)
{
    (void)timeout_ms;
    for (size_t p = 0; p < n_partitions; p++)
        for (size_t i = 0; i < n; i++)
            if ((ends[p * n + i] =
                     sim_ctx_end_offset(ctx, suffixes[i], partitions[p], err, errlen)) < 0)
                return -1;
    return 0;
}

static int sim_ctx_end_offsets(mc_ctx *ctx, const char *suffix, const int32_t *partitions, size_t n,
                               int64_t *ends, int timeout_ms, char *err, size_t errlen)
{
    (void)timeout_ms;
    for (size_t i = 0; i < n; i++)
        ends[i] = sim_ctx_end_offset(ctx, suffix, partitions[i], err, errlen);
    return 0;
}

static const mc_ctx_ops sim_ops = {
    .output = sim_ctx_output,
    .produce = sim_ctx_produce,
    .wakeup_at = sim_ctx_wakeup_at,
    .now_ms = sim_ctx_now_ms,
    .set_commit = sim_ctx_set_commit,
    .request_commit = sim_ctx_request_commit,
    .set_ready = sim_ctx_set_ready,
    .alive = sim_ctx_alive,
    .assignment_lost = sim_ctx_assignment_lost,
    .pause = sim_ctx_pause,
    .watch_fd = sim_ctx_watch_fd,
    .restore = sim_ctx_restore,
    .partition_count = sim_ctx_partition_count,
    .end_offset = sim_ctx_end_offset,
    .position = sim_ctx_position,
    .high_watermarks = sim_ctx_high_watermarks,
    .stable_ends = sim_ctx_stable_ends,
    .end_offsets = sim_ctx_end_offsets,
};

sim_inst *sim_inst_new(sim_kafka *k, const mc_processor *p, const mc_config *cfg,
                       const char *instance_id)
{
    sim_inst *in = calloc(1, sizeof *in);
    if (!in)
        return NULL;
    in->k = k;
    in->p = p;
    in->cfg = cfg;
    in->metrics = mc_metrics_new();
    in->logger = (mc_logger){.level = MC_LOG_ERROR, .json = false, .role = p->name};
    in->ctx = (mc_ctx){.ops = &sim_ops,
                       .cfg = cfg,
                       .logger = &in->logger,
                       .metrics = in->metrics,
                       .processor_name = p->name};
    in->wakeup = INT64_MAX;
    in->ready = true;
    snprintf(in->group, sizeof in->group, "%s%s", cfg->topic_prefix, p->name);
    snprintf(in->transactional_id, sizeof in->transactional_id, "%s%s-%s", cfg->topic_prefix,
             p->name, instance_id);
    simb_fence_transactional_id(k, in->transactional_id);
    for (const char *const *t = p->input_topics; *t && in->n_inputs < SIM_MAX_INPUTS; t++)
        mc_topic_name(cfg, *t, in->inputs[in->n_inputs++].name, 256);
    char err[512] = "";
    in->self = p->create(&in->ctx, p->create_arg, err, sizeof err);
    if (!in->self) {
        fprintf(stderr, "sim: %s refused to start: %s\n", p->name, err);
        mc_metrics_free(in->metrics);
        free(in);
        return NULL;
    }
    return in;
}

static void inst_free(sim_inst *in)
{
    if (in->p->destroy)
        in->p->destroy(in->self);
    for (size_t i = 0; i < in->n_inputs; i++) {
        for (int32_t j = 0; j < in->inputs[i].n; j++)
            free(in->inputs[i].parts[j].md);
        free(in->inputs[i].parts);
    }
    mc_ctx_release(&in->ctx);
    mc_metrics_free(in->metrics);
    free(in->poison);
    free(in);
}

void sim_crash(sim_inst *in)
{
    inst_free(in);
}

void *sim_self(sim_inst *in)
{
    return in->self;
}

mc_metrics *sim_metrics(sim_inst *in)
{
    return in->metrics;
}

uint64_t sim_counter(sim_inst *in, const char *name, const char *labels)
{
    return mc_counter_value(mc_metrics_counter(in->metrics, name, "", labels));
}

double sim_gauge(sim_inst *in, const char *name, const char *labels)
{
    return mc_gauge_value(mc_metrics_gauge(in->metrics, name, "", labels));
}

bool sim_ready(const sim_inst *in)
{
    return in->ready;
}

bool sim_paused(sim_inst *in, const char *suffix, int32_t partition)
{
    char name[256];
    mc_topic_name(in->cfg, suffix, name, sizeof name);
    in_part *ip = in_part_named(in, name, partition);
    return ip && ip->paused;
}

int64_t sim_wakeup(const sim_inst *in)
{
    return in->wakeup;
}

uint64_t sim_commits_now(const sim_inst *in)
{
    return in->commits_now;
}

/* The partition list a processor's on_assign/on_revoke gets: every input
 * topic's partitions, with committed offsets and metadata when asked. */
static rd_kafka_topic_partition_list_t *part_list(sim_inst *in, const int32_t *partitions, size_t n,
                                                  bool with_committed)
{
    rd_kafka_topic_partition_list_t *l =
        rd_kafka_topic_partition_list_new((int)(n * in->n_inputs + 1));
    for (size_t t = 0; t < in->n_inputs; t++) {
        for (size_t i = 0; i < n; i++) {
            rd_kafka_topic_partition_t *tp =
                rd_kafka_topic_partition_list_add(l, in->inputs[t].name, partitions[i]);
            if (!with_committed)
                continue;
            const char *md;
            tp->offset = sim_committed(in->k, in->group, in->inputs[t].name, partitions[i], &md);
            if (tp->offset < 0)
                tp->offset = RD_KAFKA_OFFSET_INVALID;
            if (*md) {
                tp->metadata = simb_xstrdup(md);
                tp->metadata_size = strlen(md);
            }
        }
    }
    return l;
}

/* Every assigned partition from its committed offset, unpaused, nothing
 * asked of the commit: what an assignment and a rewind both start from. */
static void seek_committed(sim_inst *in, const rd_kafka_topic_partition_list_t *l)
{
    for (int i = 0; i < l->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &l->elems[i];
        for (size_t t = 0; t < in->n_inputs; t++) {
            sim_input *si = &in->inputs[t];
            if (strcmp(si->name, tp->topic) != 0)
                continue;
            if (tp->partition >= si->n) {
                int32_t n = tp->partition + 1;
                si->parts = simb_xrealloc(si->parts, (size_t)n * sizeof *si->parts);
                memset(si->parts + si->n, 0, (size_t)(n - si->n) * sizeof *si->parts);
                si->n = n;
            }
            in_part *ip = &si->parts[tp->partition];
            free(ip->md);
            *ip = (in_part){.assigned = true,
                            .fetch = tp->offset >= 0 ? tp->offset : 0,
                            .next = -1,
                            .resume_at = -1,
                            .committed = tp->offset >= 0 ? tp->offset : -1,
                            .md_offset = -1};
        }
    }
}

void sim_set_assignment_lost(sim_inst *in)
{
    in->assignment_lost = true;
}

int sim_assign(sim_inst *in, const int32_t *partitions, size_t n)
{
    in->assignment_lost = false;
    in->generation = simb_group_get(in->k, in->group)->generation;
    rd_kafka_topic_partition_list_t *l = part_list(in, partitions, n, true);
    seek_committed(in, l);
    int rc = in->p->on_assign ? in->p->on_assign(in->self, l, &in->ctx) : 0;
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}

int sim_assign_all(sim_inst *in)
{
    int32_t n = sim_partitions(in->k, in->inputs[0].name);
    int32_t *v = simb_xmalloc((size_t)n * sizeof *v);
    for (int32_t i = 0; i < n; i++)
        v[i] = i;
    int rc = sim_assign(in, v, (size_t)n);
    free(v);
    return rc;
}

/* The partitions assigned (of the first input), for revoke and rewind. */
static size_t assigned(sim_inst *in, int32_t **out)
{
    sim_input *si = &in->inputs[0];
    int32_t *v = simb_xmalloc(((size_t)si->n + 1) * sizeof *v);
    size_t n = 0;
    for (int32_t i = 0; i < si->n; i++)
        if (si->parts[i].assigned)
            v[n++] = i;
    *out = v;
    return n;
}

static void abort_txn(sim_inst *in)
{
    if (in->txn)
        simb_txn_end(in->k, in->txn, false);
    in->txn = 0;
    in->dirty = false;
    in->commit_requested = false;
    in->commit_now = false;
}

int sim_abort(sim_inst *in)
{
    /* As the runner: the processor lets go before the abort, then rewinds. */
    int32_t *v;
    size_t n = assigned(in, &v);
    rd_kafka_topic_partition_list_t *l = part_list(in, v, n, false);
    if (in->p->on_revoke)
        in->p->on_revoke(in->self, l, &in->ctx);
    rd_kafka_topic_partition_list_destroy(l);
    abort_txn(in);
    l = part_list(in, v, n, true);
    seek_committed(in, l);
    int rc = in->p->on_assign ? in->p->on_assign(in->self, l, &in->ctx) : 0;
    rd_kafka_topic_partition_list_destroy(l);
    free(v);
    return rc;
}

static int64_t offset_to_commit(const in_part *ip)
{
    if (ip->md_offset >= 0)
        return ip->md_offset;
    if (ip->next >= 0)
        return ip->next;
    return ip->committed;
}

int sim_commit(sim_inst *in)
{
    if (!in->dirty) {
        abort_txn(in); /* an empty transaction: nothing to make visible */
        return 0;
    }
    if (in->p->prepare_commit && in->p->prepare_commit(in->self, &in->ctx) != 0) {
        fprintf(stderr, "sim: %s prepare_commit failed\n", in->p->name);
        return -1;
    }
    bool fenced = in->generation != simb_group_get(in->k, in->group)->generation;
    if (fenced) {
        /* The coordinator refuses the offsets: abortable, and the runner
         * rewinds. */
        sim_abort(in);
        return 1;
    }
    for (size_t t = 0; t < in->n_inputs; t++) {
        sim_input *si = &in->inputs[t];
        for (int32_t i = 0; i < si->n; i++) {
            in_part *ip = &si->parts[i];
            int64_t off = offset_to_commit(ip);
            if (!ip->assigned || off < 0)
                continue;
            const char *old_md;
            sim_committed(in->k, in->group, si->name, i, &old_md);
            simb_offset_store(in->k, in->group, si->name, i, off, ip->md ? ip->md : old_md);
            ip->committed = off;
            ip->dirty = false;
        }
    }
    if (in->txn)
        simb_txn_end(in->k, in->txn, true);
    in->commits_now += in->commit_now;
    in->txn = 0;
    in->dirty = false;
    in->commit_requested = false;
    in->commit_now = false;
    return 0;
}

int sim_revoke_all(sim_inst *in)
{
    /* Lost, the runner lets the processor go first and aborts (its
     * offsets would not commit); otherwise it commits, then revokes. */
    bool lost = in->assignment_lost;
    int rc = 0;
    int32_t *v;
    size_t n = assigned(in, &v);
    rd_kafka_topic_partition_list_t *l = part_list(in, v, n, false);
    /* The runner waits for what is in flight (revoke_drained) up to its
     * bound; here nothing ends unless the test ends it, so the bound is
     * taken as passed at the first answer. */
    if (!lost && in->p->revoke_drained && in->p->revoke_drained(in->self, l, &in->ctx) < 0)
        rc = -1;
    if (lost)
        abort_txn(in);
    else if (rc == 0)
        rc = sim_commit(in);
    if (in->p->on_revoke)
        in->p->on_revoke(in->self, l, &in->ctx);
    in->assignment_lost = false; /* as librdkafka's flag, at the unassign that follows */
    rd_kafka_topic_partition_list_destroy(l);
    for (size_t t = 0; t < in->n_inputs; t++)
        for (size_t i = 0; i < n; i++)
            in->inputs[t].parts[v[i]].assigned = false;
    free(v);
    return rc;
}

int sim_stop(sim_inst *in)
{
    int rc = sim_revoke_all(in);
    inst_free(in);
    return rc;
}

/* The next deliverable record of a partition (read_committed), or NULL. */
static entry *next_record(sim_inst *in, sim_input *si, int32_t partition, int64_t *offset)
{
    in_part *ip = &si->parts[partition];
    if (!ip->assigned || ip->paused)
        return NULL;
    plog *l = simb_plog_of(in->k, si->name, partition);
    if (!l)
        return NULL;
    while (ip->fetch < (int64_t)l->n) {
        entry *e = &l->e[ip->fetch];
        if (e->state == OPEN)
            return NULL; /* the last stable offset */
        if (!e->control && e->state != ABORTED) {
            *offset = ip->fetch;
            return e;
        }
        ip->fetch++;
    }
    return NULL;
}

/* Gives one record to process(). Returns 1 when processed (or given back),
 * 0 when there was none, -1 when process failed. */
static int deliver(sim_inst *in, sim_input *si, int32_t partition)
{
    int64_t offset;
    entry *e = next_record(in, si, partition, &offset);
    if (!e)
        return 0;
    in_part *ip = &si->parts[partition];
    mc_record r = simb_entry_record(e, si->name, partition, offset, in->k->now);
    ensure_txn(in);
    in->dirty = true;
    for (size_t i = 0; i < in->n_poison; i++) {
        sim_poison *ps = &in->poison[i];
        if (ps->partition == partition && ps->offset == offset && !strcmp(ps->topic, si->name)) {
            *ps = in->poison[--in->n_poison];
            static const char reason[] = "Kafka refused this record's output: too large (sim)";
            int rc = in->p->refused ? in->p->refused(in->self, &r, reason, &in->ctx)
                                    : mc_ctx_dead_letter(&in->ctx, &r, reason, NULL);
            if (rc != 0)
                return -1;
            ip->fetch = ip->next = offset + 1;
            ip->dirty = true;
            return 1;
        }
    }
    in->refused_found = false;
    in->in_process = true;
    int rc = in->p->process(in->self, &r, &in->ctx);
    in->in_process = false;
    ip = &si->parts[partition];
    if (rc != 0 && in->refused_found) {
        in->poison = simb_xrealloc(in->poison, (in->n_poison + 1) * sizeof *in->poison);
        sim_poison *ps = &in->poison[in->n_poison++];
        snprintf(ps->topic, sizeof ps->topic, "%s", si->name);
        ps->partition = partition;
        ps->offset = offset;
        return sim_abort(in) == 0 ? 1 : -1;
    }
    if (rc == MC_PROCESS_LATER) {
        if (!ip->paused) {
            fprintf(stderr, "sim: %s gave back %s[%d]@%lld without pausing the partition\n",
                    in->p->name, si->name, partition, (long long)offset);
            return -1;
        }
        ip->resume_at = offset;
        return 1;
    }
    if (rc != 0) {
        fprintf(stderr, "sim: %s process failed at %s[%d]@%lld\n", in->p->name, si->name, partition,
                (long long)offset);
        return -1;
    }
    ip->fetch = offset + 1;
    ip->next = offset + 1;
    ip->dirty = true;
    return 1;
}

long sim_poll(sim_inst *in, size_t max)
{
    long done = 0;
    size_t slots = 0;
    for (size_t t = 0; t < in->n_inputs; t++)
        slots += (size_t)in->inputs[t].n;
    size_t idle = 0;
    while ((size_t)done < max && slots && idle < slots) {
        size_t s = in->rr++ % slots, t = 0;
        while (s >= (size_t)in->inputs[t].n)
            s -= (size_t)in->inputs[t++].n;
        int rc = deliver(in, &in->inputs[t], (int32_t)s);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            idle++;
        } else {
            idle = 0;
            done++;
        }
    }
    return done;
}

int sim_punctuate(sim_inst *in)
{
    if (!in->p->punctuate || in->wakeup == INT64_MAX || in->k->now < in->wakeup)
        return 0;
    in->wakeup = INT64_MAX;
    ensure_txn(in);
    if (in->p->punctuate(in->self, in->k->now, &in->ctx) != 0) {
        fprintf(stderr, "sim: %s punctuate failed\n", in->p->name);
        return -1;
    }
    return 1;
}

int sim_run_fds(sim_inst *in)
{
    for (size_t i = 0; i < in->n_fds; i++) {
        struct pollfd pfd = {in->fds[i].fd, in->fds[i].events, 0};
        if (poll(&pfd, 1, 0) <= 0 || !pfd.revents)
            continue;
        ensure_txn(in);
        if (in->fds[i].cb(in->fds[i].arg, pfd.fd, pfd.revents, &in->ctx) != 0)
            return -1;
    }
    return 0;
}

int sim_turn(sim_inst *in, size_t batch, bool commit_each_turn)
{
    if (sim_run_fds(in) != 0 || sim_poll(in, batch) < 0 || sim_punctuate(in) < 0)
        return -1;
    if (commit_each_turn || in->commit_requested)
        return sim_commit(in) < 0 ? -1 : 0;
    return 0;
}

int sim_settle(sim_inst *in, int max_turns)
{
    for (int i = 0; i < max_turns; i++) {
        if (sim_run_fds(in) != 0)
            return -1;
        long got = sim_poll(in, 2000);
        int punctuated = sim_punctuate(in);
        if (got < 0 || punctuated < 0 || sim_commit(in) < 0)
            return -1;
        if (got == 0 && punctuated == 0)
            return 0;
    }
    return 0;
}
