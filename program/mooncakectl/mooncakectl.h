/* What the files of mooncakectl share (mooncakectl.c: options,
 * configuration, submit, cancel and main; mooncakectl_read.c: reading a
 * topic, results and dead; mooncakectl_requeue.c; mooncakectl_topics.c;
 * mooncakectl_partitions.c; mooncakectl_jobs.c):
 * the run's state, the Kafka clients, reading partitions to their end, and
 * the commands. Nothing here is global: everything hangs off one ctl. */
#ifndef MOONCAKECTL_H
#define MOONCAKECTL_H

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "codec.h"
#include "config.h"
#include "log.h"
#include "task_json.h"
#include "topic_scan.h"

#define EXIT_KAFKA 1
#define EXIT_USAGE 2
#define EXIT_INTERRUPTED 130 /* SIGINT/SIGTERM before the end (not when following) */
#define TIMEOUT_MS 30000     /* for every blocking Kafka call */

/* A repeatable option's values, pointing into argv. The array is owned. */
typedef struct str_list {
    const char **v;
    size_t n;
} str_list;

/* What the command line said. Strings point into argv (not owned). */
typedef struct ctl_opts {
    const char *command, *action; /* topics: create | describe; partitions: grow; jobs: put ... */
    unsigned sc;                  /* SC_* of command */
    bool help, version, quiet, json;
    const char *brokers, *prefix, *config_file;
    str_list xprops;
    /* submit / cancel */
    const char *file, *app, *id, *at, *in, *url, *method, *body, *body_file, *timeout_ms;
    const char *ordering_key; /* a serial chain's: the command goes to it (job-commands) */
    const char *max_attempts, *initial_backoff_ms, *multiplier, *max_backoff_ms;
    str_list headers, metadata;
    const char *kafka_topic, *kafka_key, *kafka_value, *kafka_value_file, *late_ms, *late_action;
    str_list kafka_headers;
    str_list then_urls, then_topics; /* submit: follow-ups */
    const char *then_delay_ms;
    const char *group, *path, *strategy; /* submit: a call to an endpoint group */
    /* groups / limits */
    const char *name, *member_concurrency, *unhealthy_ms, *scope, *max_concurrent, *max_per_second;
    str_list members, dns;
    /* results / dead / requeue (and --app --job: one job's occurrences) */
    const char *key, *since, *reason;
    /* task list */
    const char *state, *due_from, *due_to, *after;
    /* jobs */
    const char *job, *cron, *tz, *count;
    bool follow, all, dry_run;
    const char *batch; /* requeue: letters per transaction */
    /* topics create */
    const char *partitions, *replication_factor;
    /* partitions grow */
    const char *to, *timeout;
    bool no_wait_calls;
} ctl_opts;

/* Everything one run owns. */
typedef struct ctl {
    mc_logger lg;  /* first: librdkafka's log callback reads its opaque as a logger */
    mc_config cfg; /* owned: mc_config_free() */
    ctl_opts o;
    sigset_t stop_signals;
    bool stopping; /* SIGINT or SIGTERM seen */
} ctl;

/* Prints progress at most once a second (ctl_progress_tick). */
typedef struct progress {
    int64_t started_ms, last_ms;
    void (*print)(void *arg, bool final);
    void *arg;
} progress;

/* Where reading one partition is, and what is called for each record
 * (topic_scan.h). */
typedef mc_part_scan part_scan;
typedef mc_record_fn record_fn;

/* Where one produced record ended up; filled by the producer's delivery
 * report. */
typedef struct delivery {
    bool done;
    rd_kafka_resp_err_t err;
    int32_t partition;
    int64_t offset;
} delivery;

/* ---- mooncakectl.c ---- */

/* ms as RFC 3339 UTC with milliseconds ("-" for 0 or less). */
void ctl_fmt_time(int64_t ms, char out[32]);
/* --since: a duration ago (10m), epoch ms or RFC 3339. False if none. */
bool ctl_parse_since(const char *s, int64_t *out);
/* --due-from / --due-to: 1h (from now), epoch ms or RFC 3339. */
bool ctl_parse_due(const char *s, int64_t *out);
/* True once SIGINT or SIGTERM arrived (they are blocked, so they wait as
 * pending signals until this asks). */
bool ctl_stop_requested(ctl *c);
/* Calls pg's printer at most once a second, after the first; pg may be NULL. */
void ctl_progress_tick(progress *pg);
/* A note on stderr, unless -q. */
void ctl_report(ctl *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One line on stderr saying what went wrong; returns code. */
int ctl_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prints obj as one line on stdout and releases it. */
void ctl_print_json(json_t *obj);
/* Bytes for a table cell: control characters shown as '?'; "-" for NULL. */
void ctl_printable(const void *p, size_t n, char *out, size_t outlen);

/* A read_committed consumer that is only ever assign()ed: it joins no group
 * and commits nothing itself. group: whose committed offsets it may read
 * and a transaction may commit to (NULL: a group nothing commits to).
 * Caller destroys it; NULL with a line in err. */
rd_kafka_t *ctl_new_consumer(ctl *c, const char *group, char *err, size_t errlen);
/* A read_uncommitted consumer, only for asking where partitions end: their
 * high watermarks (a read_committed asker is told the last stable offset,
 * which stops before every record after a transaction still open). Caller
 * destroys it; NULL with a line in err. */
rd_kafka_t *ctl_new_end_asker(ctl *c, char *err, size_t errlen);
/* An idempotent producer (acks=all), transactional when txn_id is given,
 * reporting deliveries to the struct delivery passed as message opaque.
 * Caller destroys it; NULL with a line in err. */
rd_kafka_t *ctl_new_producer(ctl *c, const char *txn_id, char *err, size_t errlen);
/* Metadata of every topic; caller destroys it. NULL with a line in err. */
const rd_kafka_metadata_t *ctl_fetch_metadata(ctl *c, rd_kafka_t *rk, char *err, size_t errlen);
/* Partition count of topic in md; -1 when it does not exist. */
int ctl_md_partitions(const rd_kafka_metadata_t *md, const char *topic);
/* Partition count of an existing topic; 0 with a line in err when it is
 * missing or there is no metadata. */
int ctl_topic_partitions(ctl *c, rd_kafka_t *rk, const char *topic, char *err, size_t errlen);

/* The --kafka-* flags (submit, jobs put) into t: the record to deliver
 * instead of a call (t->callback made "", has_kafka_target set). Strings
 * live in a or argv. False with a line in why. Main thread. */
bool ctl_kafka_target_from_flags(const ctl_opts *o, mc_arena *a, mc_task *t, char *why,
                                 size_t whylen);
/* --late-ms with --late-action (both or neither) into t's late policy.
 * False with a line in why. Main thread. */
bool ctl_late_policy_from_flags(const ctl_opts *o, mc_task *t, char *why, size_t whylen);

/* Produces one record keyed key to <prefix><suffix> ("tasks",
 * "job-commands") with a new producer, partitioned by murmur2 as the
 * gateway does, and waits for the broker's acknowledgement; *d says where
 * it went. Returns 0 or an exit status (after saying why on stderr). */
int ctl_send(ctl *c, const char *suffix, const char *key, const mc_buf *value, delivery *d);
/* What the router (and the gateway) would say about an id given with flag:
 * the gateway's JSON limits (length, no control characters). False with a
 * line in why. */
bool ctl_id_ok(const char *flag, const char *v, char *why, size_t whylen);
/* Produces one record to topic's partition with rk (from ctl_new_producer)
 * and waits for the broker's acknowledgement. Returns 0, or -1 with a line
 * in err. */
int ctl_produce_wait(ctl *c, rd_kafka_t *rk, const char *topic, int32_t partition, const void *key,
                     size_t keylen, const void *value, size_t valuelen, char *err, size_t errlen);

/* ---- mooncakectl_read.c ---- */

/* Fills parts[0..n) for every partition of topic: from the low watermark
 * (or the first record at or after since_ms, when since_ms >= 0) to the
 * high watermark now. Returns 0, or -1 with a line in err. */
int ctl_plan_scan(rd_kafka_t *rk, const char *topic, int n, int64_t since_ms, part_scan *parts,
                  char *err, size_t errlen);
/* Reads the partitions of topic in parts[0..n) from their next offsets with
 * rk (assigned, then unassigned), calling fn for each record, until each is
 * done - at the end seen at start, or at the last stable offset - or
 * forever when follow. SIGINT/SIGTERM stop it between records. Returns 0,
 * fn's non-zero answer, or EXIT_KAFKA. */
int ctl_scan(ctl *c, rd_kafka_t *rk, const char *topic, part_scan *parts, size_t n, bool follow,
             record_fn fn, void *arg, progress *pg);
/* What a scan's hooks ask about: the run (SIGINT/SIGTERM) and its progress
 * (NULL: none). */
typedef struct ctl_hook_arg {
    ctl *c;
    progress *pg;
} ctl_hook_arg;
/* Hooks (topic_scan.h) that stop on SIGINT/SIGTERM and tick a->pg; a must
 * outlive them. */
mc_scan_hooks ctl_scan_hooks(ctl_hook_arg *a);
/* results (dead = false) and dead. Returns the exit status. */
int ctl_cmd_read(ctl *c, bool dead);

/* ---- mooncakectl_jobs.c ---- */

/* jobs put | pause | resume | delete | trigger | list | preview. Returns
 * the exit status. */
int ctl_cmd_jobs(ctl *c);
/* ---- mooncakectl_groups.c ---- */
/* groups (limits false) or limits: put | list | delete. Returns the exit status. */
int ctl_cmd_endpoints(ctl *c, bool limits);
/* ---- mooncakectl_task.c ---- */
/* task get: a task's state from the view's changelog. The exit status. */
int ctl_cmd_task(ctl *c);
/* task list (stats false) / task stats: an app's tasks by due time, or
 * counted, from the view's changelog. The exit status. */
int ctl_cmd_task_list(ctl *c, bool stats);

/* ---- mooncakectl_requeue.c ---- */

/* requeue. Returns the exit status. */
int ctl_cmd_requeue(ctl *c);

/* ---- mooncakectl_topics.c ---- */

/* topics create / topics describe. Return the exit status. */
int ctl_cmd_topics_create(ctl *c);
int ctl_cmd_topics_describe(ctl *c);

/* ---- mooncakectl_partitions.c ---- */

/* partitions grow --to M. Returns the exit status. */
int ctl_cmd_partitions_grow(ctl *c);

#endif
