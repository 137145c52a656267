/* The test's caller for the executor (see fake_caller.h). */
#include "fake_caller.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "broadcast.h"
#include "endpoints.h"
#include "sim.h"

struct fake_caller {
    mc_caller base;
    fake_env *env;
    mc_call *held; /* posted CALLs, in order (linked by next) */
    mc_call *done_head, *done_tail;
    int wake;
    bool draining;
    int32_t draining_parts[64]; /* being handed over (drain_partition), until abandoned */
    size_t n_draining_parts;
    mc_call_gate gate;
};

static bool partition_draining(const fake_caller *f, int32_t partition)
{
    for (size_t i = 0; i < f->n_draining_parts; i++)
        if (f->draining_parts[i] == partition)
            return true;
    return false;
}

/* As the real caller: nothing starts while draining or the gate is shut. */
static bool may_start(fake_caller *f)
{
    return !f->draining && f->gate.may_start(f->gate.arg);
}

static void give_back(fake_caller *f, mc_call *j)
{
    j->next = NULL;
    if (f->done_tail)
        f->done_tail->next = j;
    else
        f->done_head = j;
    f->done_tail = j;
    uint64_t one = 1;
    ssize_t n = write(f->wake, &one, sizeof one);
    (void)n;
}

static void append_held(fake_caller *f, mc_call *j)
{
    j->next = NULL;
    mc_call **l = &f->held;
    while (*l)
        l = &(*l)->next;
    *l = j;
}

static void recall(fake_caller *f, mc_call *r)
{
    for (mc_call **l = &f->held; *l;) {
        mc_call *j = *l;
        if (!j->started_at && j->partition == r->partition &&
            mc_version_cmp(j->version, r->version) < 0 && strcmp(j->key, r->key) == 0) {
            *l = j->next;
            j->recalled = true;
            give_back(f, j);
        } else {
            l = &j->next;
        }
    }
    give_back(f, r);
}

static void fc_post(mc_caller *c, mc_call *batch)
{
    fake_caller *f = (fake_caller *)c;
    for (mc_call *j = batch, *next; j; j = next) {
        next = j->next;
        if (partition_draining(f, j->partition))
            mc_call_free(j); /* the next owner's, as the real caller drops it */
        else if (j->kind == MC_CALL_RECALL)
            recall(f, j);
        else
            append_held(f, j);
    }
    /* Then what is due starts, as release_due() does after a batch. */
    if (!f->env->clock)
        return;
    int64_t now = sim_now(f->env->clock);
    for (mc_call *j = f->held; j; j = j->next)
        if (!j->started_at && j->task.due_at <= now && may_start(f))
            j->started_at = now;
}

/* Drops the partition's calls, or only those not started; returns how
 * many of those dropped had started (all) or how many are left (not all). */
static size_t drop_calls_of(fake_caller *f, int32_t partition, bool started_too)
{
    size_t n = 0;
    for (mc_call **l = &f->held; *l;) {
        mc_call *j = *l;
        if (j->partition != partition || (!started_too && j->started_at)) {
            n += j->partition == partition;
            l = &j->next;
            continue;
        }
        n += started_too && j->started_at;
        *l = j->next;
        mc_call_free(j);
    }
    return n;
}

static size_t fc_abandon(mc_caller *c, int32_t partition)
{
    fake_caller *f = (fake_caller *)c;
    for (size_t i = 0; i < f->n_draining_parts; i++)
        if (f->draining_parts[i] == partition)
            f->draining_parts[i--] = f->draining_parts[--f->n_draining_parts];
    return drop_calls_of(f, partition, true);
}

static void fc_drain_partition(mc_caller *c, int32_t partition)
{
    fake_caller *f = (fake_caller *)c;
    if (!partition_draining(f, partition) && f->n_draining_parts < 64)
        f->draining_parts[f->n_draining_parts++] = partition;
    drop_calls_of(f, partition, false);
}

static size_t fc_calls_of(mc_caller *c, int32_t partition)
{
    size_t n = 0;
    for (const mc_call *j = ((fake_caller *)c)->held; j; j = j->next)
        n += j->partition == partition;
    return n;
}

static mc_call *fc_take_done(mc_caller *c)
{
    fake_caller *f = (fake_caller *)c;
    uint64_t v;
    ssize_t n = read(f->wake, &v, sizeof v);
    (void)n;
    mc_call *d = f->done_head;
    f->done_head = f->done_tail = NULL;
    return d;
}

static int fc_wake_fd(mc_caller *c)
{
    return ((fake_caller *)c)->wake;
}

static void fc_drain(mc_caller *c)
{
    ((fake_caller *)c)->draining = true;
}

static bool fc_idle(mc_caller *c)
{
    return !((fake_caller *)c)->done_head;
}

static void free_list(mc_call *j)
{
    for (mc_call *next; j; j = next) {
        next = j->next;
        mc_call_free(j);
    }
}

static void fc_destroy(mc_caller *c)
{
    fake_caller *f = (fake_caller *)c;
    free_list(f->held);
    free_list(f->done_head);
    close(f->wake);
    if (f->env && f->env->current == f)
        f->env->current = NULL;
    free(f);
}

static const mc_caller_ops fake_ops = {
    .post = fc_post,
    .abandon = fc_abandon,
    .drain_partition = fc_drain_partition,
    .calls_of = fc_calls_of,
    .take_done = fc_take_done,
    .wake_fd = fc_wake_fd,
    .drain = fc_drain,
    .idle = fc_idle,
    .destroy = fc_destroy,
};

static mc_caller *make(const mc_config *cfg, mc_metrics *m, const mc_call_gate *gate,
                       const void *arg, char *err, size_t errlen)
{
    (void)cfg;
    (void)m;
    fake_caller *f = calloc(1, sizeof *f);
    if (!f || (f->wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        free(f);
        snprintf(err, errlen, "fake caller: out of memory or eventfds");
        return NULL;
    }
    f->base.ops = &fake_ops;
    f->gate = *gate;
    f->env = (fake_env *)(uintptr_t)arg;
    f->env->current = f;
    return &f->base;
}

mc_executor_caller fake_caller_for(fake_env *env)
{
    return (mc_executor_caller){make, env};
}

void fake_env_free(fake_env *env)
{
    free(env->calls);
    env->calls = NULL;
    env->n_calls = env->cap_calls = 0;
}

size_t fake_caller_pending(const fake_caller *f)
{
    size_t n = 0;
    for (const mc_call *j = f->held; j; j = j->next)
        n++;
    return n;
}

static void log_call(fake_env *env, const mc_call *j)
{
    if (env->n_calls == env->cap_calls) {
        env->cap_calls = env->cap_calls ? env->cap_calls * 2 : 1024;
        env->calls = realloc(env->calls, env->cap_calls * sizeof *env->calls);
        if (!env->calls)
            abort();
    }
    fake_call *c = &env->calls[env->n_calls++];
    snprintf(c->key, sizeof c->key, "%s", j->key);
    c->attempt = j->task.attempt;
    c->version = j->version;
    c->partition = j->partition;
    c->offset = j->offset;
    c->at = j->started_at;
    c->status = j->status;
}

/* A task whose own strategy is SHARDING_BROADCAST, not one of its shards. */
static bool is_broadcast(const mc_task *t)
{
    bool broadcast = false;
    for (size_t i = 0; i < t->n_metadata; i++) {
        if (strcmp(t->metadata[i].key, MC_MEMBER_METADATA) == 0)
            return false;
        if (strcmp(t->metadata[i].key, MC_ROUTE_METADATA) == 0)
            broadcast = strcmp(t->metadata[i].value, "SHARDING_BROADCAST") == 0;
    }
    return broadcast;
}

size_t fake_caller_run(fake_caller *f, int64_t now, long (*respond)(mc_call *j, void *arg),
                       void *arg)
{
    size_t n = 0;
    for (mc_call **l = &f->held; *l;) {
        mc_call *j = *l;
        if (f->draining || j->task.due_at > now || (!j->started_at && !may_start(f))) {
            l = &j->next;
            continue;
        }
        if (!j->started_at)
            j->started_at = now;
        if (is_broadcast(&j->task)) {
            /* The executor's to fan out, with the group's members of the moment. */
            *l = j->next;
            j->finished_at = now;
            j->shard_members = calloc(f->env->n_members, sizeof *j->shard_members);
            for (size_t i = 0; j->shard_members && i < f->env->n_members; i++)
                if ((j->shard_members[i] = strdup(f->env->members[i])))
                    j->n_shard_members++;
            log_call(f->env, j);
            give_back(f, j);
            n++;
            continue;
        }
        if (j->task.has_kafka_target) {
            /* A Kafka target is the executor's to deliver, as the real
             * caller gives it back at its time (counted as a call made). */
            *l = j->next;
            j->finished_at = now;
            j->deliver = true;
            log_call(f->env, j);
            give_back(f, j);
            n++;
            continue;
        }
        long status = respond ? respond(j, arg) : 200;
        if (status < 0) {
            l = &j->next; /* still in flight */
            continue;
        }
        *l = j->next;
        j->finished_at = now;
        j->status = status;
        if (j->status == 0) {
            j->transport_failed = true;
            snprintf(j->error, sizeof j->error, "connection refused (fake)");
        }
        log_call(f->env, j);
        give_back(f, j);
        n++;
    }
    return n;
}
