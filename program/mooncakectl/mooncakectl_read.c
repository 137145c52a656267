/* mooncakectl: reading a topic to the end seen at start (or following it),
 * and the results and dead commands on top: a table or JSON lines, by key
 * (or a recurring job's occurrences), time and reason. See mooncakectl.h. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dead_record.h"
#include "job_schedule.h"
#include "kafka.h"
#include "mooncakectl.h"
#include "topic_scan.h"

/* ---- reading a topic ------------------------------------------------------------- */

int ctl_plan_scan(rd_kafka_t *rk, const char *topic, int n, int64_t since_ms, part_scan *parts,
                  char *err, size_t errlen)
{
    return mc_scan_plan(rk, topic, n, since_ms, TIMEOUT_MS, parts, err, errlen);
}

static bool hook_stop(void *arg)
{
    return ctl_stop_requested(((ctl_hook_arg *)arg)->c);
}

static void hook_tick(void *arg)
{
    ctl_progress_tick(((ctl_hook_arg *)arg)->pg);
}

mc_scan_hooks ctl_scan_hooks(ctl_hook_arg *a)
{
    return (mc_scan_hooks){hook_stop, hook_tick, a};
}

int ctl_scan(ctl *c, rd_kafka_t *rk, const char *topic, part_scan *parts, size_t n, bool follow,
             record_fn fn, void *arg, progress *pg)
{
    char err[1024];
    ctl_hook_arg a = {c, pg};
    mc_scan_hooks hooks = ctl_scan_hooks(&a);
    int rc = mc_scan(rk, topic, parts, n, follow, fn, arg, &hooks, &c->lg, err, sizeof err);
    return rc == MC_SCAN_FAILED ? ctl_fail(EXIT_KAFKA, "%s", err) : rc;
}

/* ---- results and dead ----------------------------------------------------------- */

typedef struct reader {
    ctl *c;
    bool dead; /* dead letters, else results */
    const char *key, *reason;
    const char *app, *job; /* --app --job: occurrences of this job */
    mc_arena *arena;
    uint64_t read, shown;
    int64_t total; /* records between start and end, for progress */
} reader;

/* Is the record about an occurrence of job r->app/r->job (task id
 * "<job>@<epoch ms>")? By the task it names, else by its record key. */
static bool occurrence_matches(const reader *r, const rd_kafka_message_t *m, const char *app,
                               const char *id)
{
    char key[1024];
    if ((!app || !id) && m->key && m->key_len < sizeof key) {
        memcpy(key, m->key, m->key_len);
        key[m->key_len] = '\0';
        char *slash = strchr(key, '/');
        if (slash) {
            *slash = '\0';
            app = key;
            id = slash + 1;
        }
    }
    size_t job_len;
    int64_t at;
    return app && id && strcmp(app, r->app) == 0 && mc_occurrence_parse(id, &job_len, &at) &&
           job_len == strlen(r->job) && strncmp(id, r->job, job_len) == 0;
}

/* Does the record pass -k or --app/--job (given the task it names, if
 * any)? */
static bool wanted(const reader *r, const rd_kafka_message_t *m, const char *app, const char *id)
{
    if (r->key)
        return mc_dead_key_matches(r->key, m, app, id);
    return !r->job || occurrence_matches(r, m, app, id);
}

/* The common fields of a JSON line about record m. */
static json_t *record_json(const rd_kafka_message_t *m)
{
    json_t *j = json_pack("{s:s, s:i, s:I, s:I}", "topic", rd_kafka_topic_name(m->rkt), "partition",
                          (int)m->partition, "offset", (json_int_t)m->offset, "timestamp",
                          (json_int_t)rd_kafka_message_timestamp(m, NULL));
    if (j)
        mc_json_set_bytes(j, "key", m->key, m->key_len);
    return j;
}

/* " | name: value, ... | body" of what the endpoint answered, printable and
 * cut to fit; "" when it kept nothing. */
static void answer_text(const mc_result *res, char *out, size_t outlen)
{
    size_t at = 0;
    out[0] = '\0';
    for (size_t i = 0; i < res->n_response_headers && at + 1 < outlen; i++) {
        char v[200];
        ctl_printable(res->response_headers[i].value, strlen(res->response_headers[i].value), v,
                      sizeof v);
        int n = snprintf(out + at, outlen - at, "%s%s: %s", i ? ", " : " | ",
                         res->response_headers[i].key, v);
        at += n > 0 ? (size_t)n : 0;
    }
    if (res->response_body_len && at + 1 < outlen) {
        char body[300];
        ctl_printable(res->response_body, res->response_body_len, body, sizeof body);
        snprintf(out + at, outlen - at, " | %s%s", body,
                 res->response_size > (int64_t)res->response_body_len ? " (cut)" : "");
    }
}

static int show_result(reader *r, const rd_kafka_message_t *m)
{
    mc_result res;
    char detail[256] = "";
    mc_codec_err e =
        m->payload ? mc_decode_result(m->payload, m->len, r->arena, &res, detail, sizeof detail)
                   : MC_CODEC_EMPTY;
    if (!wanted(r, m, e ? NULL : res.app_id, e ? NULL : res.task_id))
        return 0;
    r->shown++;
    char why[400];
    if (e)
        snprintf(why, sizeof why, "not a Result: %s%s%s", mc_codec_strerror(e),
                 detail[0] ? ": " : "", detail);
    if (r->c->o.json) {
        json_t *j = record_json(m);
        if (e) {
            json_object_set_new(j, "undecodable", json_string(why));
        } else {
            json_object_set_new(j, "app_id", json_string(res.app_id));
            json_object_set_new(j, "task_id", json_string(res.task_id));
            json_object_set_new(j, "attempt", json_integer(res.attempt));
            json_object_set_new(j, "outcome", json_string(mc_outcome_name(res.outcome)));
            json_object_set_new(j, "http_status", json_integer(res.http_status));
            json_object_set_new(j, "due_at", json_integer(res.due_at));
            json_object_set_new(j, "started_at", json_integer(res.started_at));
            json_object_set_new(j, "finished_at", json_integer(res.finished_at));
            json_object_set_new(j, "error", json_string(res.error));
            json_object_set_new(j, "version",
                                res.version >= 0 ? json_integer(res.version) : json_null());
            json_t *h = json_object();
            for (size_t i = 0; i < res.n_response_headers; i++)
                json_object_set_new(h, res.response_headers[i].key,
                                    json_string(res.response_headers[i].value));
            json_object_set_new(j, "response_headers", h);
            mc_json_set_bytes(j, "response_body",
                              res.response_body ? (const void *)res.response_body : "",
                              res.response_body_len);
            json_object_set_new(j, "response_size",
                                res.response_size >= 0 ? json_integer(res.response_size)
                                                       : json_null());
            json_object_set_new(j, "member", res.member ? json_string(res.member) : json_null());
        }
        ctl_print_json(j);
        return 0;
    }
    char when[32], key[200], error[600], status[8];
    ctl_fmt_time(e ? rd_kafka_message_timestamp(m, NULL) : res.finished_at, when);
    ctl_printable(m->key, m->key_len, key, sizeof key);
    if (e) {
        printf("%-24s %-40s %7s %-18s %4s %6s %s\n", when, key, "-", "?", "-", "-", why);
        return 0;
    }
    ctl_printable(res.error, strlen(res.error), error, sizeof error);
    snprintf(status, sizeof status, "%d", (int)res.http_status);
    char took[24] = "-", answer[700] = "";
    if (res.started_at > 0 && res.finished_at >= res.started_at && res.http_status)
        snprintf(took, sizeof took, "%" PRId64, res.finished_at - res.started_at);
    answer_text(&res, answer, sizeof answer);
    char member[300] = "";
    if (res.member) {
        char m[280];
        ctl_printable(res.member, strlen(res.member), m, sizeof m);
        snprintf(member, sizeof member, " | member %s", m);
    }
    printf("%-24s %-40s %7d %-18s %4s %6s %s%s%s\n", when, key, (int)res.attempt,
           mc_outcome_name(res.outcome), res.http_status ? status : "-", took, error, member,
           answer);
    return 0;
}

static int show_dead(reader *r, const rd_kafka_message_t *m)
{
    mc_dead_record rec;
    mc_dead_decode(m, r->arena, &rec);
    const mc_dead_letter d = rec.d;
    mc_codec_err e = rec.err;
    const char *detail = rec.detail;
    bool task = rec.task;
    if (!wanted(r, m, task ? d.task.app_id : NULL, task ? d.task.task_id : NULL))
        return 0;
    char why[400];
    if (e)
        snprintf(why, sizeof why, "not a DeadLetter: %s%s%s", mc_codec_strerror(e),
                 detail[0] ? ": " : "", detail);
    if (r->reason && !strcasestr(e ? why : d.reason, r->reason))
        return 0;
    r->shown++;
    if (r->c->o.json) {
        json_t *j = record_json(m);
        if (e) {
            json_object_set_new(j, "undecodable", json_string(why));
        } else {
            json_object_set_new(j, "reason", json_string(d.reason));
            json_object_set_new(j, "source_topic", json_string(d.source_topic));
            json_object_set_new(j, "source_partition", json_integer(d.source_partition));
            json_object_set_new(j, "source_offset", json_integer(d.source_offset));
            json_object_set_new(j, "failed_at", json_integer(d.failed_at));
            json_object_set_new(j, "task", task ? mc_task_to_json(&d.task) : json_null());
            if (d.has_raw)
                json_object_set_new(j, "raw_base64", mc_json_base64(d.raw, d.raw_len));
        }
        ctl_print_json(j);
        return 0;
    }
    char when[32], key[200], reason[600], source[320], attempt[16];
    ctl_fmt_time(e ? rd_kafka_message_timestamp(m, NULL) : d.failed_at, when);
    if (m->key)
        ctl_printable(m->key, m->key_len, key, sizeof key);
    else if (task)
        snprintf(key, sizeof key, "%s/%s", d.task.app_id, d.task.task_id);
    else
        snprintf(key, sizeof key, "-");
    if (e) {
        printf("%-24s %-40s %7s %-28s %s\n", when, key, "-", "-", why);
        return 0;
    }
    ctl_printable(d.reason, strlen(d.reason), reason, sizeof reason);
    snprintf(source, sizeof source, "%s %d@%" PRId64, d.source_topic, (int)d.source_partition,
             d.source_offset);
    snprintf(attempt, sizeof attempt, "%d", task ? (int)d.task.attempt : 0);
    printf("%-24s %-40s %7s %-28s %s%s\n", when, key, task ? attempt : "-", source, reason,
           task ? "" : " [no task]");
    return 0;
}

static int show_record(void *arg, const rd_kafka_message_t *m)
{
    reader *r = arg;
    r->read++;
    mc_arena_reset(r->arena);
    return r->dead ? show_dead(r, m) : show_result(r, m);
}

static void reader_progress(void *arg, bool final)
{
    (void) final;
    reader *r = arg;
    fprintf(stderr, "mooncakectl: read %" PRIu64 " of %" PRId64 " records, %" PRIu64 " shown\n",
            r->read, r->total, r->shown);
}

int ctl_cmd_read(ctl *c, bool dead)
{
    const ctl_opts *o = &c->o;
    int64_t since = -1;
    if (!o->app != !o->job)
        return ctl_fail(EXIT_USAGE, "give --app and --job together (a job's occurrences)");
    if (o->job && o->key)
        return ctl_fail(EXIT_USAGE, "give -k APP/ID or --app APP --job JOB, not both");
    if (o->since && !ctl_parse_since(o->since, &since))
        return ctl_fail(EXIT_USAGE,
                        "--since '%s' is not a duration (10m, 2h, 1d), epoch ms or RFC 3339",
                        o->since);
    char err[1024], topic[300];
    mc_topic_name(&c->cfg, dead ? "dead" : "results", topic, sizeof topic);
    rd_kafka_t *rk = ctl_new_consumer(c, NULL, err, sizeof err);
    if (!rk)
        return ctl_fail(EXIT_KAFKA, "%s", err);
    /* A job's occurrences are tasks of their own keys, so in every
     * partition: they are read everywhere. */
    reader r = {.c = c,
                .dead = dead,
                .key = o->key,
                .reason = o->reason,
                .app = o->app,
                .job = o->job,
                .arena = mc_arena_new()};
    part_scan *parts = NULL;
    int rc = 0;
    int n = ctl_topic_partitions(c, rk, topic, err, sizeof err);
    if (n <= 0 || !r.arena) {
        rc = ctl_fail(EXIT_KAFKA, "%s", r.arena ? err : "out of memory");
        goto out;
    }
    parts = calloc((size_t)n, sizeof *parts);
    if (!parts || ctl_plan_scan(rk, topic, n, since, parts, err, sizeof err) != 0) {
        rc = ctl_fail(EXIT_KAFKA, "%s", parts ? err : "out of memory");
        goto out;
    }
    for (int p = 0; p < n; p++)
        r.total += parts[p].end - parts[p].next;
    progress pg = {.started_ms = mc_now_ms(), .print = reader_progress, .arg = &r};
    progress *ppg = !o->quiet && !o->follow && isatty(STDERR_FILENO) ? &pg : NULL;
    if (o->follow)
        setvbuf(stdout, NULL, _IOLBF, 0);
    if (!o->json) {
        if (dead)
            printf("%-24s %-40s %7s %-28s %s\n", "TIME", "KEY", "ATTEMPT", "SOURCE", "REASON");
        else
            printf("%-24s %-40s %7s %-18s %4s %6s %s\n", "TIME", "KEY", "ATTEMPT", "OUTCOME",
                   "HTTP", "MS", "ERROR | ANSWER");
    }
    if (!o->key) {
        rc = ctl_scan(c, rk, topic, parts, (size_t)n, o->follow, show_record, &r, ppg);
    } else {
        /* The key's home partition first (mc_key_partition: the router
         * moves every command there before routing it, so its results are
         * there); the others only when nothing is: a record refused before
         * it went home, written with another partitioner. */
        int32_t kp = mc_key_partition(o->key, strlen(o->key), n);
        rc = ctl_scan(c, rk, topic, &parts[kp], 1, false, show_record, &r, ppg);
        bool everywhere = false;
        if (rc == 0 && r.shown == 0 && n > 1 && !c->stopping) {
            ctl_report(c,
                       "nothing for %s in %s [%d] (its home partition); reading the other "
                       "partitions",
                       o->key, topic, (int)kp);
            everywhere = true;
            rc = ctl_scan(c, rk, topic, parts, (size_t)n, false, show_record, &r, ppg);
        }
        if (rc == 0 && o->follow && !c->stopping)
            rc = everywhere ? ctl_scan(c, rk, topic, parts, (size_t)n, true, show_record, &r, NULL)
                            : ctl_scan(c, rk, topic, &parts[kp], 1, true, show_record, &r, NULL);
    }
    fflush(stdout);
    if (rc == 0) {
        char of[64] = "";
        if (o->key || o->job || o->reason)
            snprintf(of, sizeof of, " (of %" PRIu64 " read)", r.read);
        ctl_report(c, "%" PRIu64 " %s%s%s", r.shown, dead ? "dead letters" : "results", of,
                   c->stopping && !o->follow ? " (interrupted before the end)" : "");
        if (c->stopping && !o->follow)
            rc = EXIT_INTERRUPTED;
    }
out:
    free(parts);
    mc_arena_free(r.arena);
    rd_kafka_destroy(rk);
    return rc;
}
