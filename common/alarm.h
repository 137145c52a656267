/* Alarms, the parts without Kafka: which webhook each app's alarms go to
 * (--alarm-webhooks), the event the alarms processor relays for each dead
 * letter (the `alarm-events` value), the batch an app's events gather in
 * until its next alarm (the `alarms` changelog value), and the JSON body of
 * the alarm call. Everything here is plain data and runs on whichever thread
 * owns it; the parsers take bytes read from Kafka and are fuzzed. */
#ifndef MOONCAKE_ALARM_H
#define MOONCAKE_ALARM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"

/* Dead letters listed by key in one alarm, and jobs listed by id. */
#define MC_ALARM_FIRST 10
/* A reason longer than this is cut (on a UTF-8 boundary) in events and alarms. */
#define MC_ALARM_REASON_MAX 300
/* Times and counts beyond this (year 37648 in ms) are refused or cut, so no
 * sum of two of them can overflow. */
#define MC_ALARM_MAX_VALUE (INT64_C(1) << 50)
/* The task id of an alarm's own call starts with this, and the call carries
 * the metadata MC_ALARM_METADATA: its dead letter raises no alarm, or a dead
 * webhook would alarm about itself forever. */
#define MC_ALARM_TASK_PREFIX "mooncake-alarm-"
#define MC_ALARM_METADATA "alarm"
/* An app id longer than this gets no alarm: its alarm's task key must fit
 * every buffer on the way. */
#define MC_ALARM_APP_MAX 256

/* ---- webhooks ------------------------------------------------------------- */

typedef struct mc_alarm_webhooks mc_alarm_webhooks;

/* Parses --alarm-webhooks: "" (no alarms), "app=url,app=url,..." or "@file"
 * (one app=url a line). The app "*" stands for every app not named. A URL
 * must be http:// or https:// with a host; an app named twice is an error.
 * Returns the set (caller frees with mc_alarm_webhooks_free), or NULL with a
 * line in err naming the entry to fix. */
mc_alarm_webhooks *mc_alarm_webhooks_parse(const char *spec, char *err, size_t errlen);
void mc_alarm_webhooks_free(mc_alarm_webhooks *w);
/* The URL app's alarms go to (its own, else "*"'s), or NULL: no alarms for
 * it. Owned by the set. */
const char *mc_alarm_webhook_for(const mc_alarm_webhooks *w, const char *app_id);
/* How many entries the set has (0: alarms are off). */
size_t mc_alarm_webhooks_count(const mc_alarm_webhooks *w);
/* Whether len bytes at app can be an alarmed app's id: not empty, at most
 * MC_ALARM_APP_MAX bytes of UTF-8 without '/' or control bytes. */
bool mc_alarm_app_ok(const char *app, size_t len);

/* ---- one dead letter, and an app's batch ------------------------------------ */

/* A dead letter as an alarm tells it. Strings are owned by whoever filled it:
 * mc_alarm_line_clear frees the ones decoding and batching allocate. */
typedef struct mc_alarm_line {
    char *key;    /* app/task */
    char *reason; /* at most MC_ALARM_REASON_MAX bytes */
    char *job_id; /* the recurring job whose occurrence it was, or NULL */
    int64_t failed_at;
} mc_alarm_line;
void mc_alarm_line_clear(mc_alarm_line *l);

typedef struct mc_alarm_job {
    char *job_id;
    int64_t failed; /* its occurrences dead-lettered in this batch */
} mc_alarm_job;

/* The dead letters of one app since its last alarm, and when that was. */
typedef struct mc_alarm_batch {
    int64_t count;        /* dead letters in the batch */
    int64_t first_at;     /* failed_at of the batch's first and last */
    int64_t last_at;      /* (0 when empty) */
    int64_t last_sent_at; /* when the app's last alarm was written; 0 never */
    int64_t opened_at;    /* when its first dead letter arrived (set by the caller) */
    int64_t sent;         /* alarms written for the app */
    int64_t alarmed;      /* dead letters those alarms counted */
    size_t n_first, n_jobs;
    mc_alarm_line first[MC_ALARM_FIRST];
    mc_alarm_job jobs[MC_ALARM_FIRST];
} mc_alarm_batch;

/* Adds one dead letter (copied). Returns 0, or -1 on ENOMEM (nothing added). */
int mc_alarm_batch_add(mc_alarm_batch *b, const mc_alarm_line *l);
/* The batch went out as an alarm written at now: empties it, keeping the
 * totals and last_sent_at. */
void mc_alarm_batch_sent(mc_alarm_batch *b, int64_t now_ms);
/* Frees what the batch holds and zeroes it. */
void mc_alarm_batch_clear(mc_alarm_batch *b);

/* ---- bytes ----------------------------------------------------------------------- */

/* The `alarm-events` value of a dead letter (JSON). 0, or -1 on ENOMEM. */
int mc_alarm_event_encode(const mc_alarm_line *l, mc_buf *out);
/* Reads an `alarm-events` value into l (strings allocated; clear with
 * mc_alarm_line_clear). 0, or -1 with a line in err: not ours to trust, so
 * a bad one is skipped, never fatal. */
int mc_alarm_event_decode(const void *data, size_t len, mc_alarm_line *l, char *err, size_t errlen);
/* The `alarms` changelog value of a batch (JSON). 0, or -1 on ENOMEM. */
int mc_alarm_batch_encode(const mc_alarm_batch *b, mc_buf *out);
/* Reads a changelog value into b (cleared first), leniently: unknown members
 * are ignored and lists beyond the bounds cut, so a record of another
 * version still reads. 0, or -1 with err when the counts cannot be read. */
int mc_alarm_batch_decode(const void *data, size_t len, mc_alarm_batch *b, char *err,
                          size_t errlen);
/* The body of app's alarm call for batch b, written at now (JSON; see the
 * README's alarm contract). 0, or -1 on ENOMEM. */
int mc_alarm_body(const char *app_id, const mc_alarm_batch *b, int64_t now_ms, mc_buf *out);

#endif
