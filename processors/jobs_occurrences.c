/* Writing a recurring job's occurrences (jobs.c has the role): its state in the changelog, each
 * occurrence as a Submit to tasks ahead of its time, a Cancel when the job changes, misfire
 * handling after an outage, and the step that walks a job's schedule within a budget. */
#include "jobs_impl.h"
#include "task_rules.h"

/* The least lateness a DO_NOTHING job drops an occurrence for (see below). */
#define MC_JOB_DROP_FLOOR_MS 1000

/* ---- outputs ---------------------------------------------------------------------- */

int jobs_write_state(jobs *s, job_part *p, job_entry *e, int64_t now, mc_ctx *ctx)
{
    mc_job_state st = {
        .version = e->version,
        .status = e->status,
        .next_at = e->next_at,
        .runs = e->runs,
        .last_scheduled_at = e->last_scheduled_at,
        .running = e->running,
        .n_running = e->n_running,
        .queued_at = e->queued_at,
        .skipped = e->skipped,
        .updated_at = now,
        .job_raw = e->job_raw,
        .job_raw_len = e->job_len,
    };
    mc_buf_reset(&s->buf);
    if (mc_encode_job_state(&st, &s->buf) != 0)
        return -1;
    return mc_ctx_forward(ctx, s->changelog, p->partition, e->key, e->node.key_len, s->buf.data,
                          s->buf.len);
}

int jobs_write_tombstone(jobs *s, job_part *p, job_entry *e, mc_ctx *ctx)
{
    return mc_ctx_forward(ctx, s->changelog, p->partition, e->key, e->node.key_len, NULL, 0);
}

int jobs_write_command(jobs *s, const mc_command *c, mc_ctx *ctx)
{
    bool submit = c->kind == MC_CMD_SUBMIT;
    const char *app = submit ? c->submit.app_id : c->cancel.app_id;
    const char *id = submit ? c->submit.task_id : c->cancel.task_id;
    char key[MC_JOB_MAX_KEY_LEN + 1024];
    size_t klen = mc_task_key(app, id, key, sizeof key);
    mc_buf_reset(&s->buf);
    if (klen >= sizeof key || mc_encode_command(c, &s->buf) != 0)
        return -1;
    return mc_ctx_forward(ctx, s->tasks, mc_key_partition(key, klen, s->task_partitions), key, klen,
                          s->buf.data, s->buf.len);
}

/* The app_id and job_id of an entry, as its decoded job has them. */
static int decode_job(jobs *s, const job_entry *e, mc_job *j)
{
    char detail[256];
    if (mc_decode_job(e->job_raw, e->job_len, s->arena, j, detail, sizeof detail) != MC_CODEC_OK) {
        mc_log(s->logger, MC_LOG_ERROR, "held job unreadable", "error", detail, (const char *)NULL);
        return -1;
    }
    return 0;
}

/* Writes the Submit of the occurrence scheduled at `at`, due at `due`.
 * Returns 0; -1 on failure; or 1 when Kafka refuses it for good (larger
 * than a record may be): then nothing was written, and the job is paused
 * with a line saying why - a job whose every occurrence would be refused
 * must not take its partition down with it. */
int jobs_submit(jobs *s, job_entry *e, int64_t at, int64_t due, int64_t now, mc_ctx *ctx)
{
    mc_arena_reset(s->arena);
    mc_job j;
    if (decode_job(s, e, &j) != 0)
        return -1;
    char id[MC_JOB_MAX_KEY_LEN], at_text[24];
    mc_occurrence_id(j.job_id, at, id, sizeof id);
    snprintf(at_text, sizeof at_text, "%" PRId64, at);
    /* The job's headers, then who and when (replacing a job header of the
     * same name: the callback must be able to trust them). */
    size_t nh = 0;
    mc_kv *headers = mc_arena_alloc(s->arena, (j.callback.n_headers + 2) * sizeof *headers);
    mc_kv *meta = mc_arena_alloc(s->arena, (j.n_metadata + 2) * sizeof *meta);
    if (!headers || !meta)
        return -1;
    for (size_t i = 0; i < j.callback.n_headers; i++)
        if (strcasecmp(j.callback.headers[i].key, HEADER_JOB_ID) != 0 &&
            strcasecmp(j.callback.headers[i].key, HEADER_SCHEDULED_AT) != 0)
            headers[nh++] = j.callback.headers[i];
    headers[nh++] = (mc_kv){HEADER_JOB_ID, j.job_id};
    headers[nh++] = (mc_kv){HEADER_SCHEDULED_AT, at_text};
    size_t nm = 0;
    for (size_t i = 0; i < j.n_metadata; i++)
        if (strcmp(j.metadata[i].key, "job_id") != 0 &&
            strcmp(j.metadata[i].key, "scheduled_at") != 0)
            meta[nm++] = j.metadata[i];
    meta[nm++] = (mc_kv){"job_id", j.job_id};
    meta[nm++] = (mc_kv){"scheduled_at", at_text};
    mc_command c = {.kind = MC_CMD_SUBMIT};
    c.submit = (mc_task){
        .app_id = j.app_id,
        .task_id = id,
        .due_at = due,
        .callback = j.callback,
        .has_retry = j.has_retry,
        .retry = j.retry,
        .attempt = 1,
        .created_at = now,
        .metadata = meta,
        .n_metadata = nm,
    };
    c.submit.callback.headers = headers;
    c.submit.callback.n_headers = nh;
    /* The job's own late policy; without one, DO_NOTHING skips what is
     * missed by more than the threshold: an occurrence written ahead of time
     * that can only be called that late (everything stopped meanwhile) is
     * missed too, so it is dropped when its call would start, not called late. */
    if (j.has_late_policy) {
        c.submit.has_late_policy = true;
        c.submit.late_policy = j.late_policy;
    } else if (j.misfire == MC_MISFIRE_DO_NOTHING && j.misfire_threshold_ms <= MC_MAX_LATE_MS) {
        /* A call starts a few ms after its due time at best: a threshold
         * under a second would drop what merely ran on time. */
        int64_t bound = j.misfire_threshold_ms < MC_JOB_DROP_FLOOR_MS ? MC_JOB_DROP_FLOOR_MS
                                                                      : j.misfire_threshold_ms;
        c.submit.has_late_policy = true;
        c.submit.late_policy = (mc_late_policy){bound, MC_LATE_DROP};
    }
    c.submit.on_success = j.on_success;
    c.submit.n_on_success = j.n_on_success;
    if (j.has_kafka_target) {
        /* The record says which job and instant it is, as a call's headers do. */
        mc_kafka_target *k = &c.submit.kafka_target;
        *k = j.kafka_target;
        mc_kv *kh = mc_arena_alloc(s->arena, (k->n_headers + 2) * sizeof *kh);
        if (!kh)
            return -1;
        size_t n = 0;
        for (size_t i = 0; i < j.kafka_target.n_headers; i++)
            if (strcasecmp(j.kafka_target.headers[i].key, HEADER_JOB_ID) != 0 &&
                strcasecmp(j.kafka_target.headers[i].key, HEADER_SCHEDULED_AT) != 0)
                kh[n++] = j.kafka_target.headers[i];
        kh[n++] = (mc_kv){HEADER_JOB_ID, j.job_id};
        kh[n++] = (mc_kv){HEADER_SCHEDULED_AT, at_text};
        k->headers = kh;
        k->n_headers = n;
        c.submit.has_kafka_target = true;
        c.submit.callback.n_headers = 0; /* a record has no request to carry them */
    }
    int rc = jobs_write_command(s, &c, ctx);
    if (rc == MC_FORWARD_REFUSED) {
        char key[MC_JOB_MAX_KEY_LEN + 1024], size[24];
        mc_task_key(j.app_id, id, key, sizeof key);
        snprintf(size, sizeof size, "%zu", s->buf.len);
        mc_log(s->logger, MC_LOG_ERROR,
               "job paused: Kafka refuses its occurrences (too large a record); replace it with a "
               "smaller callback and resume it",
               "job", key, "bytes", size, (const char *)NULL);
        mc_counter_add(s->refused, 1);
        e->status = MC_JOB_PAUSED;
        return 1;
    }
    if (rc != 0)
        return -1;
    mc_counter_add(s->submitted, 1);
    return 0;
}

/* Writes the Cancel of the occurrence scheduled at `at`. */
static int cancel(jobs *s, job_entry *e, int64_t at, int64_t now, mc_ctx *ctx)
{
    mc_arena_reset(s->arena);
    mc_job j;
    if (decode_job(s, e, &j) != 0)
        return -1;
    char id[MC_JOB_MAX_KEY_LEN];
    mc_occurrence_id(j.job_id, at, id, sizeof id);
    mc_command c = {.kind = MC_CMD_CANCEL};
    c.cancel = (mc_cancel){.app_id = j.app_id, .task_id = id, .requested_at = now};
    if (jobs_write_command(s, &c, ctx) != 0)
        return -1;
    mc_counter_add(s->cancelled, 1);
    return 0;
}

/* FIXED_DELAY: the next occurrence is due interval_ms after `from` (the
 * previous one finished, or was given up on, or skipped), unless that is
 * past end_at: then there is none, and jobs_step() ends the job. */
void jobs_delay_from(job_entry *e, int64_t from)
{
    int64_t at = from + e->sched.interval_ms;
    e->next_at = e->sched.end_at > 0 && at > e->sched.end_at ? -1 : at;
}

/* Cancels every occurrence written for after `from` (the moment an update,
 * pause or delete was requested, at most now): those written ahead, and
 * those an outage let fall due before the command could be applied, which
 * the cancel may still stop. Only the ones not due yet (after now) are given
 * back to the schedule (runs, *first: the earliest of them, or -1): a due
 * one has most likely run, and running it again after a resume would call
 * it twice. Returns 0, or -1. */
int jobs_cancel_after(jobs *s, job_entry *e, int64_t from, int64_t now, mc_ctx *ctx, int64_t *first)
{
    long back = 0;
    *first = -1;
    if (from > now)
        from = now;
    if (from < now - CANCEL_LOOKBACK_MS)
        from = now - CANCEL_LOOKBACK_MS; /* a client clock far behind: older ones ran long ago */
    if (jobs_tracked(e)) {
        for (uint8_t i = 0; i < e->n_running;) {
            int64_t at = e->running[i].scheduled_at;
            if (at <= from) {
                i++;
                continue;
            }
            if (cancel(s, e, at, now, ctx) != 0)
                return -1;
            jobs_running_remove(e, at);
            if (at > now) {
                back++;
                if (*first < 0 || at < *first)
                    *first = at;
            }
        }
        if (e->sched.kind == MC_SCHEDULE_FIXED_DELAY && e->n_running == 0 && e->next_at < 0 &&
            *first < 0)
            jobs_delay_from(e, now); /* what ran is cancelled: the delay starts now */
    } else if (e->last_scheduled_at > from) {
        for (int64_t at = mc_job_schedule_next(&e->sched, from);
             at >= 0 && at <= e->last_scheduled_at; at = mc_job_schedule_next(&e->sched, at)) {
            if (cancel(s, e, at, now, ctx) != 0)
                return -1;
            if (at > now) {
                back++;
                if (*first < 0)
                    *first = at;
            }
        }
    }
    if (back > 0) {
        e->runs -= back;
        if (e->runs < 0)
            e->runs = 0;
        if (e->last_scheduled_at > now)
            e->last_scheduled_at = now;
    }
    return 0;
}

/* ---- the schedule -------------------------------------------------------------------- */

static int64_t schedule_after(const job_entry *e, int64_t at)
{
    if (e->sched.kind == MC_SCHEDULE_FIXED_DELAY)
        return -1; /* the next one follows the finished one */
    return mc_job_schedule_next(&e->sched, at);
}

bool jobs_ended(const job_entry *e)
{
    return e->max_runs > 0 && e->runs >= e->max_runs;
}

/* An occurrence is due (or written ahead): the overlap policy decides
 * whether it runs. due is when its task is due. Returns 0; -1 on failure;
 * 1 when Kafka refused it (the job is paused, and the occurrence is left
 * pending for the misfire policy at the resume). */
static int offer(jobs *s, job_entry *e, int64_t at, int64_t due, int64_t now, mc_ctx *ctx)
{
    int rc;
    if (!jobs_tracked(e) || e->n_running == 0) {
        if ((rc = jobs_submit(s, e, at, due, now, ctx)) != 0)
            return rc;
        if (jobs_tracked(e))
            jobs_running_add(e, at, due);
        e->runs++;
    } else if (e->overlap == MC_OVERLAP_COVER_EARLY) {
        while (e->n_running > 0) {
            if (cancel(s, e, e->running[0].scheduled_at, now, ctx) != 0)
                return -1;
            jobs_running_remove(e, e->running[0].scheduled_at);
        }
        if ((rc = jobs_submit(s, e, at, due, now, ctx)) != 0)
            return rc;
        jobs_running_add(e, at, due);
        e->runs++;
    } else if (e->overlap == MC_OVERLAP_SERIAL && e->queued_at < 0) {
        e->queued_at = at;
        e->runs++;
    } else { /* DISCARD_LATER, or SERIAL with one queued already */
        e->skipped++;
        mc_counter_add(s->skipped, 1);
    }
    if (at > e->last_scheduled_at)
        e->last_scheduled_at = at;
    return 0;
}

/* next_at is more than the threshold late: the misfire policy picks which
 * of the missed occurrences (none after `until`) run now, and the schedule
 * moves on to the first one that is not missed. */
int jobs_misfire(jobs *s, job_entry *e, int64_t now, int64_t until, mc_ctx *ctx)
{
    mc_counter_add(s->misfired, 1);
    int64_t cutoff = now - e->misfire_threshold_ms; /* before it: missed */
    if (until < INT64_MAX && cutoff > until + 1)
        cutoff = until + 1; /* a command requested at `until` is applied next */
    int keep = e->misfire == MC_MISFIRE_DO_NOTHING      ? 0
               : e->misfire == MC_MISFIRE_FIRE_ONCE_NOW ? 1
                                                        : e->catch_up_limit;
    int64_t last[MC_JOB_MAX_CATCH_UP];
    int kept = 0, head = 0;
    int64_t missed = 0, at = e->next_at, scanned = 0;
    while (at >= 0 && at < cutoff) {
        if (keep > 0) {
            last[(head + kept) % keep] = at;
            if (kept < keep)
                kept++;
            else
                head = (head + 1) % keep;
        }
        missed++;
        if (++scanned == MISS_SCAN_LIMIT && cutoff - DAY_MS > at) {
            /* Too many to count: count from a day before the cutoff. The
             * skipped count is then a lower bound. */
            at = mc_job_schedule_next(&e->sched, cutoff - DAY_MS);
            continue;
        }
        at = schedule_after(e, at);
    }
    e->next_at = at;
    if (e->sched.kind == MC_SCHEDULE_FIXED_DELAY && e->next_at < 0 && keep == 0)
        jobs_delay_from(e, now); /* skipped: the delay starts now */
    e->skipped += missed - kept;
    mc_counter_add(s->skipped, (uint64_t)(missed - kept));
    for (int i = 0; i < kept && !jobs_ended(e); i++) {
        int rc = offer(s, e, last[(head + i) % keep], now, now, ctx);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            e->next_at = last[(head + i) % keep]; /* refused: pending again */
            break;
        }
    }
    return 0;
}

/* Occurrences whose final Result never came within the stale bound. */
static void expire_running(jobs *s, job_entry *e, int64_t now)
{
    for (uint8_t i = 0; i < e->n_running;) {
        if (e->running[i].due_at + e->stale_ms > now) {
            i++;
            continue;
        }
        jobs_running_remove(e, e->running[i].scheduled_at);
        mc_counter_add(s->expired, 1);
        if (e->sched.kind == MC_SCHEDULE_FIXED_DELAY && e->n_running == 0 && e->next_at < 0)
            jobs_delay_from(e, now);
    }
}

/* Does whatever the job needs at `now`: write the occurrences that are due
 * or within ahead_ms (and not after `until`), decide overlaps, apply the
 * misfire policy, end it. *dirty tells whether its state changed (the
 * caller writes it). */
int jobs_step(jobs *s, job_entry *e, int64_t now, int64_t until, size_t *budget, bool *dirty,
              mc_ctx *ctx)
{
    uint8_t had = e->n_running;
    expire_running(s, e, now);
    if (e->n_running != had)
        *dirty = true;
    if (e->status != MC_JOB_ACTIVE)
        return 0;
    if (e->queued_at >= 0 && e->n_running == 0) {
        int rc = jobs_submit(s, e, e->queued_at, now, now, ctx);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            *dirty = true; /* paused: the queued one waits for the resume */
            return 0;
        }
        jobs_running_add(e, e->queued_at, now);
        e->queued_at = -1;
        *dirty = true;
    }
    while (*budget > 0 && e->next_at >= 0 && e->status == MC_JOB_ACTIVE) {
        if (jobs_ended(e)) {
            e->next_at = -1; /* ENDED below, once nothing runs or waits */
            *dirty = true;
            break;
        }
        if (e->next_at > until)
            break;
        if (now - e->next_at > e->misfire_threshold_ms) {
            if (jobs_misfire(s, e, now, until, ctx) != 0)
                return -1;
            *dirty = true;
            (*budget)--;
            continue;
        }
        if (e->next_at - now > s->ahead_ms)
            break;
        if (jobs_tracked(e) && e->n_running > 0 && now < e->next_at)
            break; /* decided at its due time, if the running one is still running */
        int64_t at = e->next_at;
        int rc = offer(s, e, at, at, now, ctx);
        *dirty = true;
        if (rc < 0)
            return -1;
        if (rc > 0)
            break; /* refused, the job paused: `at` stays pending */
        e->next_at = schedule_after(e, at);
        (*budget)--;
    }
    /* Nothing to write, wait for or run: past end_at or max_runs (a fixed
     * delay with nothing running always has its next one, see delay_from). */
    if (e->next_at < 0 && e->status == MC_JOB_ACTIVE && e->n_running == 0 && e->queued_at < 0) {
        e->status = MC_JOB_ENDED;
        *dirty = true;
    }
    return 0;
}

/* jobs_step(), then the state and the next timer. */
int jobs_attend(jobs *s, job_part *p, job_entry *e, int64_t now, size_t *budget, bool dirty,
                mc_ctx *ctx)
{
    if (jobs_step(s, e, now, INT64_MAX, budget, &dirty, ctx) != 0)
        return -1;
    if (dirty && jobs_write_state(s, p, e, now, ctx) != 0)
        return -1;
    return jobs_arm(s, p, e, now, ctx);
}
