/* Avro codec for every mooncake record: C structs <-> Avro binary, with the
 * single-object (C3 01 + CRC-64-AVRO fingerprint) and Confluent (00 + schema id)
 * framings. Decoding treats its input as hostile: every length is checked
 * against the bytes that remain, so no input can make it crash or allocate
 * more than a small multiple of the input size. */
#ifndef MOONCAKE_CODEC_H
#define MOONCAKE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- memory ---------------------------------------------------------------
 * Decoded records live in an arena: every string and array a decode makes is
 * carved out of it, and mc_arena_reset() frees them all at once. One arena per
 * processor, reset per record, so the hot path does not call malloc. */
typedef struct mc_arena mc_arena;

/* Creates an arena. Caller owns it; free with mc_arena_free(). NULL on ENOMEM. */
mc_arena *mc_arena_new(void);
/* Forgets everything allocated from the arena, keeping its first block. */
void mc_arena_reset(mc_arena *a);
void mc_arena_free(mc_arena *a);
/* Allocates n bytes (8-aligned) owned by the arena. NULL on ENOMEM. */
void *mc_arena_alloc(mc_arena *a, size_t n);
/* Copies a NUL-terminated string into the arena. */
char *mc_arena_strdup(mc_arena *a, const char *s);

/* A growable output buffer for encoders. Owned by whoever declared it;
 * release with mc_buf_free(). */
typedef struct mc_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
} mc_buf;
void mc_buf_reset(mc_buf *b);
void mc_buf_free(mc_buf *b);

/* ---- records (mirroring the schemas/ .avsc files) -------------------------- */
typedef struct mc_kv {
    const char *key;
    const char *value;
} mc_kv;

typedef struct mc_callback {
    const char *url;
    const char *method; /* "POST", "GET", ... (validated by the router, not here) */
    const mc_kv *headers;
    size_t n_headers;
    const uint8_t *body; /* may be NULL when body_len == 0 */
    size_t body_len;
    int32_t timeout_ms;
} mc_callback;

typedef struct mc_retry_policy {
    int32_t max_attempts;
    int64_t initial_backoff_ms;
    double multiplier;
    int64_t max_backoff_ms;
} mc_retry_policy;

/* A record to deliver to Kafka at the due time, instead of an HTTP call. */
typedef struct mc_kafka_target {
    const char *topic;
    const uint8_t *key; /* NULL when has_key is false */
    size_t key_len;
    bool has_key;
    const uint8_t *value; /* NULL when has_value is false: a tombstone */
    size_t value_len;
    bool has_value;
    const mc_kv *headers; /* UTF-8 values */
    size_t n_headers;
} mc_kafka_target;

typedef enum mc_late_action {
    MC_LATE_RUN = 0,  /* call however late (the default) */
    MC_LATE_DROP = 1, /* do not call: a Result DROPPED */
    MC_LATE_DEAD = 2, /* do not call: a dead letter */
} mc_late_action;

/* What to do with a call that can only start more than max_late_ms late. */
typedef struct mc_late_policy {
    int64_t max_late_ms;
    mc_late_action action;
} mc_late_policy;

/* A task to submit when the task that names it succeeds. */
typedef struct mc_follow_up {
    const char *task_id; /* "" for <task_id>.then<N> */
    int64_t delay_ms;    /* due this long after the success */
    mc_callback callback;
    bool has_kafka_target;
    mc_kafka_target kafka_target;
    bool has_retry;
    mc_retry_policy retry;
    bool has_late_policy;
    mc_late_policy late_policy;
} mc_follow_up;

typedef struct mc_task {
    const char *app_id;
    const char *task_id;
    int64_t due_at; /* epoch ms */
    mc_callback callback;
    bool has_retry; /* false: the retry processor's defaults apply */
    mc_retry_policy retry;
    int32_t attempt;    /* 1 for the first call */
    int64_t created_at; /* epoch ms */
    const mc_kv *metadata;
    size_t n_metadata;
    /* Since Task version 2 (Command and WheelEntry v2, StoredTask v2,
     * Attempt v3, DeadLetter v2); earlier records read as none of them. */
    bool has_kafka_target; /* deliver kafka_target instead of calling callback */
    mc_kafka_target kafka_target;
    bool has_late_policy; /* false: RUN however late */
    mc_late_policy late_policy;
    const mc_follow_up *on_success; /* submitted when the task succeeds */
    size_t n_on_success;
} mc_task;

typedef struct mc_cancel {
    const char *app_id;
    const char *task_id;
    int64_t requested_at; /* epoch ms */
} mc_cancel;

typedef enum mc_command_kind { MC_CMD_SUBMIT = 0, MC_CMD_CANCEL = 1 } mc_command_kind;

/* tasks topic value: what clients send. */
typedef struct mc_command {
    mc_command_kind kind;
    mc_task submit;   /* valid when kind == MC_CMD_SUBMIT */
    mc_cancel cancel; /* valid when kind == MC_CMD_CANCEL */
} mc_command;

/* wheel topic value: a command stamped by the router with its tasks offset. */
typedef struct mc_wheel_entry {
    int64_t version;
    mc_command command;
} mc_wheel_entry;

/* store topic value (a cancel is a tombstone, i.e. a NULL value). */
typedef struct mc_stored_task {
    int64_t version;
    mc_task task;
} mc_stored_task;

/* retry topic value: one failed attempt. */
typedef struct mc_attempt {
    mc_task task;
    int32_t http_status;             /* 0 when no response (timeout, refused, connect error) */
    const char *error;               /* human-readable, never NULL ("" when none) */
    const uint8_t *response_snippet; /* bounded copy of the response body */
    size_t response_snippet_len;
    int64_t retry_after_ms; /* -1 when the server sent no Retry-After */
    int64_t started_at;
    int64_t finished_at;
    bool permanent; /* the executor already knows retrying is pointless */
    /* Since Attempt version 2 (1 leaves these out, reads them as none). */
    const mc_kv *response_headers; /* the kept response headers, lower-case names */
    size_t n_response_headers;
    int64_t response_size; /* body bytes the endpoint sent; -1: no response */
    int32_t write_version; /* encoding: 0 writes the current schema, N Attempt_vN */
    /* Since Attempt version 4 (earlier ones read as NULL). */
    const char *member; /* the group member called (its base URL); NULL: none */
} mc_attempt;

typedef enum mc_outcome {
    MC_OUTCOME_SUCCEEDED = 0,
    MC_OUTCOME_FAILED_WILL_RETRY = 1,
    MC_OUTCOME_FAILED_PERMANENTLY = 2,
    MC_OUTCOME_EXHAUSTED = 3,
    MC_OUTCOME_CANCELLED = 4,
    MC_OUTCOME_DROPPED = 5, /* not called: later than its late policy allows (Result v3) */
} mc_outcome;

/* The Result schema's name of an outcome ("SUCCEEDED", ...; "UNKNOWN" for
 * a value it has none for). Static text; any thread. */
const char *mc_outcome_name(int32_t outcome);

/* results topic value: the execution log. */
typedef struct mc_result {
    const char *app_id;
    const char *task_id;
    int32_t attempt;
    int64_t due_at;
    int64_t started_at;
    int64_t finished_at;
    int32_t http_status;
    mc_outcome outcome;
    const char *error; /* "" when none */
    /* Since Result version 2 (1 leaves these out, reads them as the defaults). */
    int64_t version;               /* the task's version (tasks offset); -1: not known */
    const mc_kv *response_headers; /* the kept response headers, lower-case names */
    size_t n_response_headers;
    const uint8_t *response_body; /* its first bytes; NULL when response_body_len == 0 */
    size_t response_body_len;
    int64_t response_size; /* body bytes the endpoint sent; -1: no response */
    int32_t write_version; /* encoding: 0 writes the current schema, N Result_vN (a
                            * DROPPED outcome is written CANCELLED before v3) */
    /* Since Result version 4 (earlier ones read as NULL, and leave it out). */
    const char *member; /* the group member that answered (its base URL); NULL: none */
} mc_result;

/* dead topic value. */
typedef struct mc_dead_letter {
    const char *reason; /* a sentence an operator can act on */
    const char *source_topic;
    int32_t source_partition;
    int64_t source_offset;
    const uint8_t *raw; /* the original value bytes, NULL when not kept */
    size_t raw_len;
    bool has_raw;
    bool has_task; /* the decoded task, when there was one */
    mc_task task;
    int64_t failed_at;
} mc_dead_letter;

/* ---- recurring jobs (JobCommand.avsc, JobState.avsc) ------------------------ */
typedef enum mc_schedule_kind {
    MC_SCHEDULE_CRON = 0,
    MC_SCHEDULE_FIXED_RATE = 1,
    MC_SCHEDULE_FIXED_DELAY = 2,
} mc_schedule_kind;

typedef enum mc_misfire_policy {
    MC_MISFIRE_FIRE_ONCE_NOW = 0,
    MC_MISFIRE_DO_NOTHING = 1,
    MC_MISFIRE_CATCH_UP = 2,
} mc_misfire_policy;

typedef enum mc_overlap_policy {
    MC_OVERLAP_PARALLEL = 0,
    MC_OVERLAP_DISCARD_LATER = 1,
    MC_OVERLAP_COVER_EARLY = 2,
    MC_OVERLAP_SERIAL = 3,
} mc_overlap_policy;

typedef struct mc_job {
    const char *app_id;
    const char *job_id;
    mc_schedule_kind kind;
    const char *cron;      /* "" unless kind == MC_SCHEDULE_CRON */
    const char *time_zone; /* IANA name, "UTC" by default */
    int64_t interval_ms;   /* FIXED_RATE / FIXED_DELAY */
    int64_t start_at;      /* epoch ms; 0: from created_at */
    int64_t end_at;        /* epoch ms; 0: never */
    int64_t max_runs;      /* 0: no limit */
    mc_misfire_policy misfire;
    int32_t catch_up_limit;
    int64_t misfire_threshold_ms;
    mc_overlap_policy overlap;
    bool paused;
    mc_callback callback;
    bool has_retry;
    mc_retry_policy retry;
    const mc_kv *metadata;
    size_t n_metadata;
    int64_t created_at;
    /* Since JobCommand and JobState version 2 (earlier ones read as none):
     * what each occurrence's task carries. */
    bool has_kafka_target;
    mc_kafka_target kafka_target;
    bool has_late_policy;
    mc_late_policy late_policy;
    const mc_follow_up *on_success;
    size_t n_on_success;
} mc_job;

typedef enum mc_job_action_kind {
    MC_JOB_PAUSE = 0,
    MC_JOB_RESUME = 1,
    MC_JOB_DELETE = 2,
    MC_JOB_TRIGGER = 3,
} mc_job_action_kind;

typedef struct mc_job_action {
    const char *app_id;
    const char *job_id;
    mc_job_action_kind action;
    int64_t requested_at;
} mc_job_action;

typedef struct mc_occurrence_done {
    const char *app_id;
    const char *job_id;
    int64_t scheduled_at;
    mc_outcome outcome;
    int64_t finished_at;
} mc_occurrence_done;

/* Since JobCommand version 3: a task added to the serial chain of its app
 * and ordering_key. */
typedef struct mc_add_link {
    const char *ordering_key;
    mc_task task;
} mc_add_link;

typedef struct mc_cancel_link {
    const char *app_id;
    const char *ordering_key;
    const char *task_id;
    int64_t requested_at;
} mc_cancel_link;

/* A released link's final Result, relayed to its chain. */
typedef struct mc_link_done {
    const char *app_id;
    const char *ordering_key;
    const char *task_id;
    int64_t link;       /* which release ended: the AddLink's job-commands offset */
    mc_outcome outcome; /* SUCCEEDED .. CANCELLED (a dropped one reads CANCELLED) */
    int64_t finished_at;
} mc_link_done;

/* Since JobCommand version 4: a shard of a broadcast ended for good. */
typedef struct mc_shard_end {
    int32_t shard;
    mc_outcome outcome; /* SUCCEEDED .. CANCELLED */
    int64_t finished_at;
} mc_shard_end;

/* Since JobCommand version 4: a SHARDING_BROADCAST task whose shards the
 * executor submitted (shard i calls members[i]); also the jobs role's state
 * of it, with the shards that ended. */
typedef struct mc_start_broadcast {
    mc_task task;
    int64_t version;
    const char *const *members;
    size_t n_members;
    int64_t fired_at;
    const mc_shard_end *ended;
    size_t n_ended;
} mc_start_broadcast;

/* A shard's final Result, relayed to its broadcast (keyed by the task's key). */
typedef struct mc_shard_done {
    const char *app_id;
    const char *task_id; /* the broadcast task's */
    int64_t version;
    mc_shard_end end;
} mc_shard_done;

typedef enum mc_job_command_kind {
    MC_JOBCMD_PUT = 0,
    MC_JOBCMD_ACTION = 1,
    MC_JOBCMD_DONE = 2,
    MC_JOBCMD_ADD_LINK = 3,
    MC_JOBCMD_CANCEL_LINK = 4,
    MC_JOBCMD_LINK_DONE = 5,
    MC_JOBCMD_START_BROADCAST = 6,
    MC_JOBCMD_SHARD_DONE = 7,
} mc_job_command_kind;

/* job-commands topic value. */
typedef struct mc_job_command {
    mc_job_command_kind kind;
    mc_job put;                         /* kind == MC_JOBCMD_PUT */
    mc_job_action action;               /* kind == MC_JOBCMD_ACTION */
    mc_occurrence_done done;            /* kind == MC_JOBCMD_DONE */
    mc_add_link add_link;               /* kind == MC_JOBCMD_ADD_LINK */
    mc_cancel_link cancel_link;         /* kind == MC_JOBCMD_CANCEL_LINK */
    mc_link_done link_done;             /* kind == MC_JOBCMD_LINK_DONE */
    mc_start_broadcast start_broadcast; /* kind == MC_JOBCMD_START_BROADCAST */
    mc_shard_done shard_done;           /* kind == MC_JOBCMD_SHARD_DONE */
    /* Decoding a PUT sets these to the job's own bytes (Avro binary, no
     * framing, always the current Job: inside the input, or in the arena for
     * an earlier version, made current), so they can be kept and spliced into
     * a JobState without re-encoding; encoders ignore them. */
    const uint8_t *put_raw;
    size_t put_raw_len;
} mc_job_command;

typedef enum mc_job_status {
    MC_JOB_ACTIVE = 0,
    MC_JOB_PAUSED = 1,
    MC_JOB_ENDED = 2,
} mc_job_status;

/* A submitted occurrence whose final Result has not been seen. */
typedef struct mc_running_occurrence {
    int64_t scheduled_at;
    int64_t due_at; /* when its task was due: the job waits for it from here */
} mc_running_occurrence;

/* jobs topic value (the jobs processor's changelog). */
typedef struct mc_job_state {
    int64_t version; /* job-commands offset of the PutJob */
    mc_job_status status;
    int64_t next_at; /* -1: none */
    int64_t runs;
    int64_t last_scheduled_at; /* -1: none yet */
    const mc_running_occurrence *running;
    size_t n_running;
    int64_t queued_at; /* -1: none */
    int64_t skipped;
    int64_t updated_at;
    mc_job job;
    /* The job's Avro binary: decoding sets it (pointing into the input);
     * encoding writes these bytes instead of encoding `job` when not NULL. */
    const uint8_t *job_raw;
    size_t job_raw_len;
} mc_job_state;

/* chains topic value: one link a serial chain holds (its app is the task's). */
typedef struct mc_chain_link {
    const char *ordering_key;
    int64_t link;         /* the AddLink's job-commands offset */
    int64_t released_at;  /* -1 while waiting */
    int64_t cancelled_at; /* -1 unless a CancelLink reached it after its release */
    mc_task task;
} mc_chain_link;

/* ---- endpoint groups and admission limits (Endpoint.avsc) ------------------- */
typedef enum mc_endpoint_kind {
    MC_ENDPOINT_GROUP = 0, /* payload EndpointGroup */
    MC_ENDPOINT_LIMIT = 1, /* payload AdmissionLimit */
} mc_endpoint_kind;

/* The RouteStrategy symbols, in the order of mc_route_strategy (endpoints.h). */
#define MC_ENDPOINT_STRATEGIES 10

typedef struct mc_endpoint_group {
    const char *app_id;
    const char *name;
    const char *const *members; /* static base URLs */
    size_t n_members;
    const char *const *dns; /* base URLs whose host is resolved */
    size_t n_dns;
    int32_t strategy; /* 0 .. MC_ENDPOINT_STRATEGIES-1: mc_route_strategy */
    int32_t member_concurrency;
    int64_t unhealthy_ms;
    int64_t updated_at;
} mc_endpoint_group;

typedef struct mc_endpoint_limit {
    int32_t scope; /* 0 HOST, 1 APP: mc_limit_scope */
    const char *name;
    int32_t max_concurrent;
    double max_per_second;
    int64_t updated_at;
} mc_endpoint_limit;

/* endpoints topic value (keys group/APP/NAME, limit/host/HOST, limit/app/APP). */
typedef struct mc_endpoint {
    mc_endpoint_kind kind;
    mc_endpoint_group group; /* kind == MC_ENDPOINT_GROUP */
    mc_endpoint_limit limit; /* kind == MC_ENDPOINT_LIMIT */
} mc_endpoint;

/* ---- schema identity ---------------------------------------------------------- */
typedef enum mc_schema_id {
    MC_SCHEMA_COMMAND = 0,
    MC_SCHEMA_WHEEL_ENTRY,
    MC_SCHEMA_STORED_TASK,
    MC_SCHEMA_ATTEMPT,
    MC_SCHEMA_RESULT,
    MC_SCHEMA_DEAD_LETTER,
    MC_SCHEMA_JOB_COMMAND,
    MC_SCHEMA_JOB_STATE,
    MC_SCHEMA_CHAIN_LINK,
    MC_SCHEMA_ENDPOINT,
    MC_SCHEMA_COUNT
} mc_schema_id;

/* The JSON text of a compiled-in schema (static storage, do not free). */
const char *mc_schema_json(mc_schema_id id);
/* The full name, e.g. "mooncake.Command" (static storage). */
const char *mc_schema_name(mc_schema_id id);
/* CRC-64-AVRO fingerprint of the schema's Parsing Canonical Form. */
uint64_t mc_schema_fingerprint(mc_schema_id id);

/* Earlier versions of a schema, kept in schemas/previous/<Record>_v<N>.avsc.
 * Each is the current schema minus fields appended since, all with defaults
 * (tests/unit/fingerprint_test.py holds them to that), so a record written
 * with one decodes as a prefix of ours. Decoders read them without being
 * told; encoders write one on request (mc_result.write_version) for readers
 * that are older still, during a rolling upgrade.
 * The number of the current version of id (1 when it never changed). */
int mc_schema_current_version(mc_schema_id id);
/* The fingerprint of version `version` of id; 0 when there is none. */
uint64_t mc_schema_version_fingerprint(mc_schema_id id, int version);
/* The embedded text of version `version` of id (static storage); NULL when none. */
const char *mc_schema_version_json(mc_schema_id id, int version);

/* Parsing Canonical Form of any Avro schema JSON text (spec §"Parsing Canonical
 * Form for Schemas"). Returns a malloc'd string the caller frees, or NULL with
 * a message in err on invalid JSON or schema. */
char *mc_schema_canonical_form(const char *schema_json, char *err, size_t errlen);
/* CRC-64-AVRO (the Rabin fingerprint from the Avro spec) of len bytes. */
uint64_t mc_crc64_avro(const void *data, size_t len);

/* ---- other versions of a schema (codec_resolve.c) ---------------------------
 * A writer schema is another version of one of our schemas (an older
 * Command without a field added since, or a newer one with a field this
 * build lacks). Records written with it are read through Avro schema
 * resolution: transcoded into our version's binary, reader-only fields
 * filled from their defaults, writer-only fields skipped. */
typedef struct mc_writer_schema mc_writer_schema;

/* ---- framing -------------------------------------------------------------- */
typedef struct mc_codec_writer {
    const mc_writer_schema *schema; /* another version of the schema decoded */
    int32_t confluent_id;           /* its schema-registry id (Command only), or -1 */
} mc_codec_writer;

typedef struct mc_codec_options {
    /* Confluent schema-registry ids that denote our Command schema; a record
     * framed 00 + id is accepted only when id is one of these. */
    const int32_t *confluent_command_ids;
    size_t n_confluent_command_ids;
    /* Other versions of the schema decoded (Command, JobCommand) that clients
     * write with: a single-object record whose fingerprint is one of theirs,
     * or (Command) a Confluent record with their id, is read through schema
     * resolution. */
    const mc_codec_writer *writers;
    size_t n_writers;
} mc_codec_options;

/* Error codes returned by decoders; mc_codec_strerror() names them. */
typedef enum mc_codec_err {
    MC_CODEC_OK = 0,
    MC_CODEC_EMPTY,          /* zero bytes */
    MC_CODEC_BAD_MAGIC,      /* neither C3 01 nor 00 */
    MC_CODEC_TRUNCATED,      /* ran out of bytes */
    MC_CODEC_UNKNOWN_SCHEMA, /* fingerprint or schema id not ours */
    MC_CODEC_BAD_LENGTH,     /* negative or larger than what remains */
    MC_CODEC_BAD_UNION,      /* union branch out of range */
    MC_CODEC_BAD_ENUM,       /* enum symbol out of range */
    MC_CODEC_BAD_VARINT,     /* varint longer than 10 bytes / overflows */
    MC_CODEC_TRAILING,       /* bytes left after the record */
    MC_CODEC_BAD_UTF8,       /* string not valid UTF-8 or contains NUL */
    MC_CODEC_NOMEM,
} mc_codec_err;
const char *mc_codec_strerror(mc_codec_err e);

/* Parses the writer schema JSON and checks, once, that every record written
 * with it can be read as schema `reader`. Caller owns the result (free with
 * mc_writer_schema_free). NULL with a sentence in err naming the field that
 * cannot be resolved (e.g. a reader field without a default). */
mc_writer_schema *mc_writer_schema_new(const char *json_text, mc_schema_id reader, char *err,
                                       size_t errlen);
/* CRC-64-AVRO fingerprint of the writer schema's Parsing Canonical Form:
 * what its single-object records carry. */
uint64_t mc_writer_schema_fingerprint(const mc_writer_schema *ws);
void mc_writer_schema_free(mc_writer_schema *ws);
/* Appends to out the reader's Avro binary for the writer-schema body of len
 * bytes (no framing). Hostile input is bounded like every decode: on error
 * out is unchanged and detail says why. */
mc_codec_err mc_writer_schema_transcode(const mc_writer_schema *ws, const void *body, size_t len,
                                        mc_buf *out, char *detail, size_t detail_len);

/* Decodes a tasks-topic value (single-object or accepted Confluent framing).
 * Strings and arrays in *out point into arena (valid until mc_arena_reset).
 * On error returns non-zero and, if detail != NULL, writes a sentence saying
 * where decoding stopped (e.g. "callback.url: length 900 exceeds the 12 bytes left"). */
mc_codec_err mc_decode_command(const mc_codec_options *opts, const void *data, size_t len,
                               mc_arena *arena, mc_command *out, char *detail, size_t detail_len);

/* Decoders for the other topics (single-object framing only: we write them). */
mc_codec_err mc_decode_wheel_entry(const void *data, size_t len, mc_arena *arena,
                                   mc_wheel_entry *out, char *detail, size_t detail_len);
mc_codec_err mc_decode_stored_task(const void *data, size_t len, mc_arena *arena,
                                   mc_stored_task *out, char *detail, size_t detail_len);
mc_codec_err mc_decode_attempt(const void *data, size_t len, mc_arena *arena, mc_attempt *out,
                               char *detail, size_t detail_len);
mc_codec_err mc_decode_result(const void *data, size_t len, mc_arena *arena, mc_result *out,
                              char *detail, size_t detail_len);
mc_codec_err mc_decode_dead_letter(const void *data, size_t len, mc_arena *arena,
                                   mc_dead_letter *out, char *detail, size_t detail_len);

/* Recurring jobs (single-object framing). A job-commands value may come
 * from outside: decoding treats it as hostile like a Command, and reads the
 * other versions of JobCommand in opts (NULL: none) by schema resolution. */
mc_codec_err mc_decode_job_command(const mc_codec_options *opts, const void *data, size_t len,
                                   mc_arena *arena, mc_job_command *out, char *detail,
                                   size_t detail_len);
mc_codec_err mc_decode_job_state(const void *data, size_t len, mc_arena *arena, mc_job_state *out,
                                 char *detail, size_t detail_len);
/* Decodes a jobs-topic value up to its job, which is left in job_raw
 * (unchecked) for mc_decode_job: a restore skips decoding a job whose bytes
 * it already holds. */
mc_codec_err mc_decode_job_state_head(const void *data, size_t len, mc_arena *arena,
                                      mc_job_state *out, char *detail, size_t detail_len);
/* A chains-topic value: single-object framing only. */
mc_codec_err mc_decode_chain_link(const void *data, size_t len, mc_arena *arena, mc_chain_link *out,
                                  char *detail, size_t detail_len);
/* An endpoints-topic value: single-object framing only. Any thread. */
mc_codec_err mc_decode_endpoint(const void *data, size_t len, mc_arena *arena, mc_endpoint *out,
                                char *detail, size_t detail_len);
/* Decodes a job's bare Avro binary (job_raw / put_raw above). */
mc_codec_err mc_decode_job(const void *data, size_t len, mc_arena *arena, mc_job *out, char *detail,
                           size_t detail_len);

/* Encoders append the single-object framed record to out (which they grow).
 * Return 0, or -1 on ENOMEM. */
int mc_encode_command(const mc_command *c, mc_buf *out);
int mc_encode_wheel_entry(const mc_wheel_entry *w, mc_buf *out);
int mc_encode_stored_task(const mc_stored_task *s, mc_buf *out);
int mc_encode_attempt(const mc_attempt *a, mc_buf *out);
int mc_encode_result(const mc_result *r, mc_buf *out);
int mc_encode_dead_letter(const mc_dead_letter *d, mc_buf *out);
int mc_encode_job_command(const mc_job_command *c, mc_buf *out);
int mc_encode_job_state(const mc_job_state *s, mc_buf *out);
/* A ChainLink; -1 (out unchanged) on ENOMEM or a bad enum in its task. */
int mc_encode_chain_link(const mc_chain_link *l, mc_buf *out);
/* An Endpoint; -1 (out unchanged) on ENOMEM or a kind, strategy or scope out of range. */
int mc_encode_endpoint(const mc_endpoint *e, mc_buf *out);
/* Appends a job's bare Avro binary (no framing): what job_raw holds. */
int mc_encode_job(const mc_job *j, mc_buf *out);

/* ---- splicing, for the store and the wheel ------------------------------------
 * WheelEntry{version, Submit{task}} and StoredTask{version, task} share the
 * encoded task, so the store keeps only the task's bytes and frames them
 * either way without decoding and re-encoding. */

/* Checks the single-object header of a WheelEntry or StoredTask and reads
 * its version and (when kind is not NULL) whether it is a Submit or a Cancel
 * (a StoredTask is a Submit); *body_off is where the payload starts: a
 * StoredTask's task, or what follows a WheelEntry's union branch (a
 * Submit's task, a Cancel). *task_suffix_len (when not NULL) is how many
 * bytes of mc_task_v1_suffix turn the task into a current one: 0, or the
 * length of the suffix for a record written before Task version 2. Does
 * not validate the rest. */
mc_codec_err mc_peek_versioned(mc_schema_id id, const void *data, size_t len, int64_t *version,
                               mc_command_kind *kind, size_t *body_off, size_t *task_suffix_len);
/* The defaults (null, null, an empty array) of the fields Task gained in
 * version 2: appended to a version 1 task's bytes, they make it a current one. */
extern const uint8_t mc_task_v1_suffix[3];
/* Reads due_at and attempt from the bytes of an encoded Task, skipping the
 * rest without allocating: what the store orders and schedules by, in its
 * restore and on every record. */
mc_codec_err mc_peek_task(const void *task, size_t len, int64_t *due_at, int32_t *attempt);
/* Appends a single-object record of schema id: header, version, then the
 * bytes a and b as they are (a WheelEntry Submit is a = "\0", the union
 * branch, and b = the task; a StoredTask is a = the task). 0, or -1 on ENOMEM. */
int mc_encode_versioned_raw(mc_schema_id id, int64_t version, const void *a, size_t alen,
                            const void *b, size_t blen, mc_buf *out);

/* The task key "app_id/task_id" written into buf; returns the length it needs
 * (like snprintf). */
size_t mc_task_key(const char *app_id, const char *task_id, char *buf, size_t buflen);

#endif
