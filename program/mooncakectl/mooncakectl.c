/* mooncakectl: the operator CLI of mooncake, in the style of kcat, on
 * librdkafka.
 *
 *   submit   a task (flags, or the gateway's JSON body with -f) as an Avro
 *            Command straight to <prefix>tasks, idempotent producer, waits for
 *            the broker's acknowledgement; with --ordering-key, as a serial
 *            chain's AddLink to <prefix>job-commands;
 *   cancel   a task (a chain's link: a CancelLink);
 *   results  the Result of every attempt, and
 *   dead     the dead letters: a table or JSON lines, read_committed, without
 *            a consumer group (assigned partitions), to the end seen at start
 *            or following (-f), filtered by key, time and reason;
 *   requeue  dead letters back to <prefix>tasks, exactly once per letter
 *            (README, "requeue: how it is exactly-once");
 *   topics   create | describe the topic set, with the lag of every processor
 *            group and what pending work can be counted cheaply;
 *   jobs     recurring jobs: put, pause, resume, delete, trigger (to
 *            <prefix>job-commands), list (the compacted <prefix>jobs), preview.
 *
 * This file: options, configuration, the shared helpers, submit, cancel and
 * main; mooncakectl_read.c, mooncakectl_requeue.c and mooncakectl_topics.c
 * the rest (mooncakectl.h says who has what).
 *
 * Exit codes: 0 done, 1 Kafka failed us, 2 bad usage (one line says what to
 * fix) or a task the router would refuse, 130 interrupted. Nothing here is
 * global or mutable: SIGINT/SIGTERM are blocked and polled with
 * sigtimedwait(), so the long commands stop cleanly between records
 * (requeue commits what it did). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "chains.h"
#include "codec.h"
#include "endpoints.h"
#include "config.h"
#include "kafka.h"
#include "kafka_targets.h"
#include "log.h"
#include "task_json.h"
#include "task_rules.h"
#include "mooncakectl.h"
#include "uuid7.h"

/* ---- options ----------------------------------------------------------------- */

enum {
    SC_SUBMIT = 1,
    SC_CANCEL = 2,
    SC_RESULTS = 4,
    SC_DEAD = 8,
    SC_REQUEUE = 16,
    SC_TOPICS = 32,
    SC_PARTITIONS = 64,
    SC_JOBS = 128,
    SC_TASK = 256,
    SC_GROUPS = 512,
    SC_LIMITS = 1024,
};

typedef enum opt_kind { K_STR, K_FLAG, K_LIST } opt_kind;

typedef struct opt_def {
    const char *lng;
    char shrt;
    unsigned where; /* 0: a global option, valid anywhere */
    opt_kind kind;
    size_t off;
} opt_def;

#define O(f) offsetof(ctl_opts, f)
static const opt_def opt_defs[] = {
    {"bootstrap-servers", 'b', 0, K_STR, O(brokers)},
    {"brokers", 0, 0, K_STR, O(brokers)},
    {"prefix", 'p', 0, K_STR, O(prefix)},
    {"topic-prefix", 0, 0, K_STR, O(prefix)},
    {"config", 'F', 0, K_STR, O(config_file)},
    {NULL, 'X', 0, K_LIST, O(xprops)},
    {"json", 'J', 0, K_FLAG, O(json)},
    {"quiet", 'q', 0, K_FLAG, O(quiet)},
    {"help", 'h', 0, K_FLAG, O(help)},
    {"version", 'V', 0, K_FLAG, O(version)},
    {"file", 'f', SC_SUBMIT | SC_JOBS | SC_GROUPS | SC_LIMITS, K_STR, O(file)},
    {"app", 0, SC_SUBMIT | SC_CANCEL | SC_RESULTS | SC_DEAD | SC_JOBS | SC_TASK | SC_GROUPS, K_STR,
     O(app)},
    {"group", 0, SC_SUBMIT, K_STR, O(group)},
    {"path", 0, SC_SUBMIT, K_STR, O(path)},
    {"strategy", 0, SC_SUBMIT | SC_GROUPS, K_STR, O(strategy)},
    {"name", 0, SC_GROUPS | SC_LIMITS, K_STR, O(name)},
    {"member", 0, SC_GROUPS, K_LIST, O(members)},
    {"dns", 0, SC_GROUPS, K_LIST, O(dns)},
    {"member-concurrency", 0, SC_GROUPS, K_STR, O(member_concurrency)},
    {"unhealthy-ms", 0, SC_GROUPS, K_STR, O(unhealthy_ms)},
    {"scope", 0, SC_LIMITS, K_STR, O(scope)},
    {"max-concurrent", 0, SC_LIMITS, K_STR, O(max_concurrent)},
    {"max-per-second", 0, SC_LIMITS, K_STR, O(max_per_second)},
    {"job", 0, SC_RESULTS | SC_DEAD | SC_JOBS, K_STR, O(job)},
    {"cron", 0, SC_JOBS, K_STR, O(cron)},
    {"tz", 0, SC_JOBS, K_STR, O(tz)},
    {"count", 'n', SC_JOBS | SC_TASK, K_STR, O(count)},
    {"state", 0, SC_TASK, K_STR, O(state)},
    {"due-from", 0, SC_TASK, K_STR, O(due_from)},
    {"due-to", 0, SC_TASK, K_STR, O(due_to)},
    {"after", 0, SC_TASK, K_STR, O(after)},
    {"id", 0, SC_SUBMIT | SC_CANCEL | SC_TASK, K_STR, O(id)},
    {"ordering-key", 0, SC_SUBMIT | SC_CANCEL, K_STR, O(ordering_key)},
    {"at", 0, SC_SUBMIT, K_STR, O(at)},
    {"in", 0, SC_SUBMIT, K_STR, O(in)},
    {"url", 0, SC_SUBMIT, K_STR, O(url)},
    {"method", 0, SC_SUBMIT, K_STR, O(method)},
    {"header", 'H', SC_SUBMIT, K_LIST, O(headers)},
    {"body", 0, SC_SUBMIT, K_STR, O(body)},
    {"body-file", 0, SC_SUBMIT, K_STR, O(body_file)},
    {"timeout-ms", 0, SC_SUBMIT, K_STR, O(timeout_ms)},
    {"max-attempts", 0, SC_SUBMIT, K_STR, O(max_attempts)},
    {"initial-backoff-ms", 0, SC_SUBMIT, K_STR, O(initial_backoff_ms)},
    {"multiplier", 0, SC_SUBMIT, K_STR, O(multiplier)},
    {"max-backoff-ms", 0, SC_SUBMIT, K_STR, O(max_backoff_ms)},
    {"metadata", 0, SC_SUBMIT, K_LIST, O(metadata)},
    {"kafka-topic", 0, SC_SUBMIT | SC_JOBS, K_STR, O(kafka_topic)},
    {"kafka-key", 0, SC_SUBMIT | SC_JOBS, K_STR, O(kafka_key)},
    {"kafka-value", 0, SC_SUBMIT | SC_JOBS, K_STR, O(kafka_value)},
    {"kafka-value-file", 0, SC_SUBMIT | SC_JOBS, K_STR, O(kafka_value_file)},
    {"kafka-header", 0, SC_SUBMIT | SC_JOBS, K_LIST, O(kafka_headers)},
    {"late-ms", 0, SC_SUBMIT | SC_JOBS, K_STR, O(late_ms)},
    {"late-action", 0, SC_SUBMIT | SC_JOBS, K_STR, O(late_action)},
    {"then", 0, SC_SUBMIT, K_LIST, O(then_urls)},
    {"then-kafka-topic", 0, SC_SUBMIT, K_LIST, O(then_topics)},
    {"then-delay-ms", 0, SC_SUBMIT, K_STR, O(then_delay_ms)},
    {"key", 'k', SC_RESULTS | SC_DEAD | SC_REQUEUE | SC_TASK, K_STR, O(key)},
    {"since", 0, SC_RESULTS | SC_DEAD, K_STR, O(since)},
    {"follow", 'f', SC_RESULTS | SC_DEAD, K_FLAG, O(follow)},
    {"reason", 0, SC_DEAD | SC_REQUEUE, K_STR, O(reason)},
    {"all", 0, SC_REQUEUE, K_FLAG, O(all)},
    {"dry-run", 'n', SC_REQUEUE, K_FLAG, O(dry_run)},
    {"batch", 0, SC_REQUEUE, K_STR, O(batch)},
    {"partitions", 0, SC_TOPICS, K_STR, O(partitions)},
    {"replication-factor", 0, SC_TOPICS, K_STR, O(replication_factor)},
    {"to", 0, SC_PARTITIONS, K_STR, O(to)},
    {"timeout", 0, SC_PARTITIONS, K_STR, O(timeout)},
    {"no-wait-for-calls", 0, SC_PARTITIONS, K_FLAG, O(no_wait_calls)},
};
#define N_OPT_DEFS (sizeof opt_defs / sizeof opt_defs[0])

static const struct {
    const char *name;
    unsigned sc;
} commands[] = {
    {"submit", SC_SUBMIT},
    {"cancel", SC_CANCEL},
    {"results", SC_RESULTS},
    {"dead", SC_DEAD},
    {"requeue", SC_REQUEUE},
    {"topics", SC_TOPICS},
    {"partitions", SC_PARTITIONS},
    {"jobs", SC_JOBS},
    {"task", SC_TASK},
    {"groups", SC_GROUPS},
    {"limits", SC_LIMITS},
};

/* ---- usage ------------------------------------------------------------------ */

static const char usage_global[] =
    "usage: mooncakectl [GLOBAL OPTIONS] COMMAND [OPTIONS]\n"
    "\n"
    "The operator CLI of mooncake (a delayed-task scheduler on Kafka).\n"
    "\n"
    "Commands:\n"
    "  submit    send a task to <prefix>tasks (flags, or the gateway's JSON with -f),\n"
    "            or with --ordering-key to a serial chain (<prefix>job-commands)\n"
    "  cancel    cancel a task\n"
    "  results   the result of every attempt (<prefix>results): table or -J\n"
    "  dead      the dead letters (<prefix>dead): table or -J\n"
    "  requeue   move dead letters back to <prefix>tasks, exactly once\n"
    "  topics    create | describe: the topic set, partitions, configs, lag per group\n"
    "  partitions grow --to N: more partitions for every topic, keys moved safely\n"
    "  jobs      recurring jobs: put | pause | resume | delete | trigger | list | preview\n"
    "  task      get APP/ID, list, stats: a task's state and story, an app's tasks by\n"
    "            due time, counts per state (from the view's table)\n"
    "  groups    endpoint groups: put | list | delete (<prefix>endpoints)\n"
    "  limits    admission limits per host or app: put | list | delete\n"
    "\n"
    "Global options (before or after the command):\n"
    "  -b, --bootstrap-servers HOSTS  Kafka brokers (env MOONCAKE_BOOTSTRAP_SERVERS,\n"
    "                                 default localhost:9092)\n"
    "  -p, --prefix PREFIX   topic prefix (env MOONCAKE_TOPIC_PREFIX, default mooncake.)\n"
    "  -X key=value          a librdkafka property, repeatable (env\n"
    "                        MOONCAKE_KAFKA_<PROPERTY>, dots as underscores)\n"
    "  -F FILE               config file: key=value lines, '#' comments; keys\n"
    "                        bootstrap.servers, mooncake.topic.prefix, anything else\n"
    "                        is a librdkafka property\n"
    "  -J, --json            JSON output, one object per line\n"
    "  -q, --quiet           no progress, notes or counts on stderr; errors only\n"
    "  -h, --help            this text; COMMAND -h for the command's\n"
    "  -V, --version         mooncakectl's version and librdkafka's\n"
    "\n"
    "Precedence: flags, then -F file, then environment, then defaults.\n"
    "Exit status: 0 done, 1 Kafka failure, 2 bad usage or an invalid task, 130\n"
    "interrupted (SIGINT/SIGTERM) before the end; stopping -f with them exits 0.\n";

static const char usage_submit[] =
    "usage: mooncakectl submit -f FILE|- [--ordering-key KEY]\n"
    "       mooncakectl submit --app APP [--id ID] (--at TIME | --in DURATION) --url URL\n"
    "                          [--method M] [-H 'Name: value']... [--body TEXT | --body-file F]\n"
    "                          [--timeout-ms N] [--max-attempts N --initial-backoff-ms N\n"
    "                          --multiplier X --max-backoff-ms N] [--metadata k=v]...\n"
    "                          [--late-ms N --late-action RUN|DROP|DEAD]\n"
    "       mooncakectl submit --app APP [--id ID] (--at TIME | --in DURATION)\n"
    "                          --kafka-topic T [--kafka-key K]\n"
    "                          [--kafka-value V | --kafka-value-file F]\n"
    "                          [--kafka-header name=value]... [retry, metadata, late flags]\n"
    "       the flag forms add follow-ups with [--then URL]... [--then-kafka-topic T]...\n"
    "                          [--then-delay-ms N]\n"
    "       every form takes [--ordering-key KEY]\n"
    "\n"
    "Sends a Submit command to <prefix>tasks (key app/id, murmur2 partitioner\n"
    "like the gateway and the Java client, idempotent producer) and waits for the broker's "
    "acknowledgement;\n"
    "prints the key (-J: a JSON object with partition and offset).\n"
    "With --ordering-key, the task is added to that serial chain of the app instead: an\n"
    "AddLink to <prefix>job-commands, key app/KEY. The chain's tasks are called one at a\n"
    "time, in due order, each after the previous one's final outcome.\n"
    "\n"
    "  -f, --file FILE       the task as the gateway's POST /submit JSON body\n"
    "                        (gateway/openapi.yaml, Task); - reads stdin\n"
    "  --ordering-key KEY    add the task to the serial chain KEY (1 to 256 bytes, no\n"
    "                        control characters); with -f it replaces the body's\n"
    "                        orderingKey\n"
    "  --app APP             the application (no '/')\n"
    "  --id ID               the task id (default: a new UUIDv7); an existing id\n"
    "                        is rescheduled\n"
    "  --at TIME             due time: epoch ms or RFC 3339 (2030-01-02T03:04:05Z)\n"
    "  --in DURATION         due after 1500ms, 30s, 5m, 2h or 1d\n"
    "  --url URL             http:// or https:// callback\n"
    "  --group NAME          call the app's endpoint group NAME instead of --url (a\n"
    "                        member's URL followed by --path)\n"
    "  --path P              with --group: the path (and query) after the member's URL\n"
    "  --strategy S          with --group: the route strategy for this task (FIRST, LAST,\n"
    "                        ROUND_ROBIN, RANDOM, CONSISTENT_HASH, LEAST_FREQUENTLY_USED,\n"
    "                        LEAST_RECENTLY_USED, FAILOVER, BUSYOVER)\n"
    "  --method M            GET, POST (default), PUT, PATCH, DELETE or HEAD\n"
    "  -H, --header 'N: v'   a request header, repeatable\n"
    "  --body TEXT, --body-file FILE   the request body (FILE - is stdin)\n"
    "  --timeout-ms N        whole-call timeout (0: the executor's default)\n"
    "  --max-attempts N, --initial-backoff-ms N, --multiplier X, --max-backoff-ms N\n"
    "                        the task's retry policy (missing fields: the\n"
    "                        MOONCAKE_RETRY_* defaults)\n"
    "  --metadata k=v        free-form attribute, repeatable\n"
    "  --kafka-topic T       deliver a record to topic T at the due time instead of\n"
    "                        calling a URL (the app must be allowed T: --target-topics)\n"
    "  --kafka-key K         the record's key (default: none)\n"
    "  --kafka-value V, --kafka-value-file F   the record's value (FILE - is stdin);\n"
    "                        neither: a tombstone (null value)\n"
    "  --kafka-header n=v    a record header, repeatable (UTF-8 value)\n"
    "  --late-ms N           with --late-action: what to do when the call (or delivery)\n"
    "  --late-action A       can only start more than N ms after the due time: RUN\n"
    "                        anyway, DROP it (a Result DROPPED) or DEAD (a dead letter)\n"
    "  --then URL            a follow-up: when the task succeeds, a task POSTing to URL\n"
    "                        (no body), repeatable; its id is ID.then1, ID.then2, ...\n"
    "  --then-kafka-topic T  a follow-up delivering an empty record keyed ID to topic T,\n"
    "                        repeatable (numbered after every --then)\n"
    "  --then-delay-ms N     every follow-up is due N ms after the success (default 0)\n"
    "                        (other follow-up fields: -f with onSuccess)\n"
    "\n"
    "The task is checked with the router's own rules first: an invalid task is\n"
    "refused here (exit 2, naming the field) and nothing is sent.\n";

static const char usage_cancel[] =
    "usage: mooncakectl cancel --app APP --id ID [--ordering-key KEY]\n"
    "\n"
    "Sends a Cancel command for app/id to <prefix>tasks and waits for the broker's\n"
    "acknowledgement. A cancel that reaches the wheel before the task is due wins.\n"
    "\n"
    "  --ordering-key KEY    the task is a link of the serial chain KEY: a CancelLink to\n"
    "                        <prefix>job-commands (key app/KEY) instead, which removes it\n"
    "                        from the chain at once while it waits, or cancels it as a\n"
    "                        Cancel does once released. A plain cancel reaches a chained\n"
    "                        task only after its release.\n";

static const char usage_results[] =
    "usage: mooncakectl results [-k APP/ID | --app APP --job JOB] [--since WHEN] [-f]\n"
    "\n"
    "Reads <prefix>results (read_committed, no consumer group) from the beginning\n"
    "to the end seen at start, then prints the count on stderr. Table columns:\n"
    "time (finished), key, attempt, outcome, HTTP status, milliseconds the call\n"
    "took, error, then what the endpoint answered (its kept headers and the first\n"
    "bytes of its body, --executor-snippet-bytes). -J: one JSON object per line,\n"
    "with the headers, the body (body_base64 when not UTF-8) and response_size.\n"
    "\n"
    "  -k, --key APP/ID      only this task; reads the key's home partition (murmur2,\n"
    "                        as the router places it) and, when nothing is there, the others\n"
    "  --app APP --job JOB   every occurrence of a recurring job (tasks JOB@<epoch ms>)\n"
    "  --since WHEN          from this time on: 10m (ago), epoch ms, or RFC 3339\n"
    "  -f, --follow          keep reading new records until interrupted\n";

static const char usage_dead[] =
    "usage: mooncakectl dead [-k APP/ID | --app APP --job JOB] [--reason TEXT] [--since WHEN]\n"
    "                        [-f]\n"
    "\n"
    "Reads <prefix>dead (read_committed, no consumer group) from the beginning to\n"
    "the end seen at start, then prints the count on stderr. Table columns: time\n"
    "(failed), key, attempt, source (topic partition@offset), reason. -J: one JSON\n"
    "object per line with the task (or the raw bytes, base64).\n"
    "\n"
    "  -k, --key APP/ID      only this task; reads the key's home partition (murmur2,\n"
    "                        as the router places it) and, when nothing is there, the others\n"
    "  --app APP --job JOB   every occurrence of a recurring job (tasks JOB@<epoch ms>)\n"
    "  --reason TEXT         only letters whose reason contains TEXT (any case)\n"
    "  --since WHEN          from this time on: 10m (ago), epoch ms, or RFC 3339\n"
    "  -f, --follow          keep reading new records until interrupted\n";

static const char usage_requeue[] =
    "usage: mooncakectl requeue (--all | -k APP/ID | --reason TEXT) [--dry-run] [--batch N]\n"
    "\n"
    "Moves dead letters back to <prefix>tasks: each matching letter that carries a\n"
    "task becomes a Submit of that task with attempt 1, due now (key app/id, the\n"
    "letter's partition). Exactly once per letter, whatever the filter and however\n"
    "often it runs: each requeued letter is recorded in <prefix>mooncakectl-requeued\n"
    "in the same Kafka transaction as its Submit, and the consumer group\n"
    "<prefix>mooncakectl-requeue commits, in that transaction, how far every letter\n"
    "has been dealt with. Letters without a task are reported and skipped. Reads to\n"
    "the end seen at start; progress on stderr every second.\n"
    "\n"
    "  --all                 every letter not requeued before\n"
    "  -k, --key APP/ID      only letters of this task (record key or task key)\n"
    "  --reason TEXT         only letters whose reason contains TEXT (any case);\n"
    "                        with -k, both must match\n"
    "  -n, --dry-run         say what would be requeued; write nothing\n"
    "  --batch N             letters per transaction (default 1000; one commits at least\n"
    "                        every second)\n";

static const char usage_topics[] =
    "usage: mooncakectl topics create [--partitions N] [--replication-factor N]\n"
    "       mooncakectl topics describe\n"
    "\n"
    "create    creates the missing topics of the set with their cleanup policy and\n"
    "          retention (and requeue's ledger), checks every topic has the same\n"
    "          partition count\n"
    "  --partitions N          default MOONCAKE_PARTITIONS or 12\n"
    "  --replication-factor N  default MOONCAKE_REPLICATION_FACTOR or -1 (the broker's)\n"
    "describe  per topic: partitions, cleanup.policy, retention.ms and offsets in use\n"
    "          (high - low watermark, transaction markers included); per processor\n"
    "          group: state, members, partitions committed and lag on its input;\n"
    "          then cheap upper bounds of the pending work\n";

static const char usage_partitions[] =
    "usage: mooncakectl partitions grow --to N [--timeout S] [--no-wait-for-calls]\n"
    "\n"
    "Gives every mooncake topic N partitions - the only safe way: each key's home is\n"
    "its murmur2 partition, so more partitions move keys, and their tasks must move\n"
    "with them. It grows every topic but tasks, has the routers stop (commands wait in\n"
    "tasks, nothing is lost) and mark their partitions of wheel, grows tasks, waits\n"
    "until the store and the wheel have moved the tasks of every key whose home\n"
    "changes (and the calls made before have finished, so their next attempts follow),\n"
    "then lets routing resume. Every role keeps running. Run it again to go on after an\n"
    "interruption.\n"
    "  --to N                the new partition count (more than now)\n"
    "  --timeout S           how long to wait for the roles (default 600)\n"
    "  --no-wait-for-calls   resume routing once the tasks have moved, without waiting\n"
    "                        for calls made before the growth (their next attempts may\n"
    "                        then lose to nothing: a cancel sent meanwhile can miss them)\n";

static const char usage_jobs[] =
    "usage: mooncakectl jobs put -f FILE|- [--kafka-topic T [--kafka-key K]\n"
    "                            [--kafka-value V | --kafka-value-file F]\n"
    "                            [--kafka-header name=value]...]\n"
    "                            [--late-ms N --late-action RUN|DROP|DEAD]\n"
    "       mooncakectl jobs (pause | resume | delete | trigger) --app APP --job JOB\n"
    "       mooncakectl jobs list [--app APP]\n"
    "       mooncakectl jobs preview --cron EXPR [--tz ZONE] [-n N]\n"
    "\n"
    "Recurring jobs (README, \"Recurring jobs\").\n"
    "put       creates or replaces the job in FILE, the gateway's POST /jobs JSON body\n"
    "          (gateway/openapi.yaml, Job; - reads stdin), checked with the jobs role's own\n"
    "          rules first (exit 2 naming the field, nothing sent); sends a PutJob to\n"
    "          <prefix>job-commands (key app/job, murmur2 partition, idempotent producer),\n"
    "          waits for the broker's acknowledgement and prints the key and the next 5\n"
    "          fire times (-J: one JSON object)\n"
    "  --kafka-topic T ...   each occurrence delivers this record instead of calling (the\n"
    "                        file's callback or kafkaTarget replaced; flags as submit's)\n"
    "  --late-ms N --late-action A   each occurrence's late policy (replaces the file's)\n"
    "pause     no occurrence until resume (those written ahead are cancelled)\n"
    "resume    occurrences again; the job's misfire policy decides about missed ones\n"
    "delete    removes the job\n"
    "trigger   runs one occurrence now (task JOB@<now>), whatever the schedule\n"
    "          Each sends a JobAction and waits for the acknowledgement; an action on a job\n"
    "          that does not exist is dead-lettered by the jobs role.\n"
    "  --app APP             the job's application\n"
    "  --job JOB             the job's id\n"
    "list      reads <prefix>jobs (the jobs role's compacted table; read_committed, every\n"
    "          partition to the end seen at start, the latest value per key) and prints\n"
    "          app, job, status, schedule, next fire time (UTC), runs, skipped, running\n"
    "          occurrences, overlap and misfire policy (-J: one JSON object per job, with\n"
    "          the whole job as jobs put -f takes it)\n"
    "  --app APP             only this application's jobs\n"
    "preview   the next fire times of a cron expression, from now; no Kafka\n"
    "  --cron EXPR           6 fields with seconds (Quartz), 7 with a year, the classic 5,\n"
    "                        or @daily ...\n"
    "  --tz ZONE             IANA time zone the expression is read in (default UTC)\n"
    "  -n, --count N         how many (default 5, at most 100)\n"
    "\n"
    "The next occurrence of a job runs as the task APP/JOB@<epoch ms>; see them all with\n"
    "`mooncakectl results --app APP --job JOB`.\n";

static const char usage_task[] =
    "usage: mooncakectl task get APP/ID   (or --app APP --id ID, or -k APP/ID)\n"
    "       mooncakectl task list --app APP [--state S,S] [--due-from WHEN] [--due-to WHEN]\n"
    "                             [-n N] [--after DUE:ID]\n"
    "       mooncakectl task stats --app APP\n"
    "\n"
    "A task's state (accepted, pendingStore, pendingWheel, held, calling, retrying,\n"
    "cancelRequested, succeeded, failed, dead, cancelled, dropped, rejected), due time,\n"
    "version, attempts with their Results and older versions, as the view role folded\n"
    "them. Read from <prefix>views (read_committed, the key's partition to the end seen\n"
    "at start): what the view had committed, up to a second behind GET /api/task, which\n"
    "also waits for what the topics held when it was asked. Callback secrets are\n"
    "redacted; of a Kafka target, secret headers too, and the value only by its size.\n"
    "-J prints the JSON object GET /api/task answers with. Exit 1 when the view has no\n"
    "such task.\n"
    "\n"
    "list: the app's tasks ordered by due time (then id), N a page (default 100, at most\n"
    "1000); the last line names the --after of the next page. stats: how many of the\n"
    "app's tasks are in each state, and the last hour's calls, failures and dead letters.\n"
    "Both read every partition of <prefix>views; -J prints what GET /api/tasks and GET\n"
    "/api/stats answer with.\n"
    "  --state S,S           only tasks in these states\n"
    "  --due-from WHEN       due at or after WHEN: 1h (from now), epoch ms or RFC 3339\n"
    "  --due-to WHEN         due before WHEN\n"
    "  -n, --count N         tasks per page\n"
    "  --after DUE:ID        the page after the one that ended with this task\n";

static const char usage_groups[] =
    "usage: mooncakectl groups put (-f FILE|- | --app APP --name NAME [--member URL]...\n"
    "                              [--dns URL]... [--strategy S] [--member-concurrency N]\n"
    "                              [--unhealthy-ms N])\n"
    "       mooncakectl groups list [--app APP]\n"
    "       mooncakectl groups delete --app APP --name NAME\n"
    "\n"
    "Endpoint groups: named sets of endpoints an app's tasks call with a callback URL\n"
    "group://NAME/PATH (the gateway's POST /groups).\n"
    "put       creates or replaces the group (FILE: the gateway's POST /groups JSON body),\n"
    "          checked as the gateway checks it (exit 2 naming the field, nothing sent);\n"
    "          writes it to <prefix>endpoints (key group/APP/NAME) and waits for the\n"
    "          broker's acknowledgement\n"
    "  --member URL          a member: an http(s) base URL, repeatable\n"
    "  --dns URL             a base URL whose host is a DNS name: every address it\n"
    "                        resolves to is a member, repeatable (1 to 64 URLs in all)\n"
    "  --strategy S          route strategy (default ROUND_ROBIN)\n"
    "  --member-concurrency N   BUSYOVER: calls open at once that make a member busy\n"
    "  --unhealthy-ms N      how long a failed member is skipped (default 10000)\n"
    "list      reads <prefix>endpoints to its end and prints app, name, strategy, members\n"
    "          and DNS URLs (-J: one JSON object per group, as GET /groups shows it, without\n"
    "          the resolved addresses)\n"
    "delete    removes the group (a tombstone)\n";

static const char usage_limits[] =
    "usage: mooncakectl limits put (-f FILE|- | --scope host|app --name NAME\n"
    "                              [--max-concurrent N] [--max-per-second X])\n"
    "       mooncakectl limits list\n"
    "       mooncakectl limits delete --scope host|app --name NAME\n"
    "\n"
    "Admission limits: at most N calls open at once and X started per second to one host\n"
    "(any port) or of one app, across every executor (the gateway's POST /limits).\n"
    "put       creates or replaces the limit (at least one bound above 0) in\n"
    "          <prefix>endpoints (key limit/host/HOST or limit/app/APP)\n"
    "list      every limit (-J: one JSON object per limit)\n"
    "delete    removes the limit\n";

static const char *usage_text(unsigned sc)
{
    switch (sc) {
    case SC_GROUPS:
        return usage_groups;
    case SC_LIMITS:
        return usage_limits;
    case SC_SUBMIT:
        return usage_submit;
    case SC_CANCEL:
        return usage_cancel;
    case SC_RESULTS:
        return usage_results;
    case SC_DEAD:
        return usage_dead;
    case SC_REQUEUE:
        return usage_requeue;
    case SC_TOPICS:
        return usage_topics;
    case SC_PARTITIONS:
        return usage_partitions;
    case SC_JOBS:
        return usage_jobs;
    case SC_TASK:
        return usage_task;
    }
    return usage_global;
}

/* ---- argument parsing -------------------------------------------------------- */

static int list_add(str_list *l, const char *v)
{
    const char **n = realloc(l->v, (l->n + 1) * sizeof *n);
    if (!n)
        return -1;
    l->v = n;
    l->v[l->n++] = v;
    return 0;
}

static void opts_free(ctl_opts *o)
{
    free(o->xprops.v);
    free(o->headers.v);
    free(o->metadata.v);
    free(o->kafka_headers.v);
    free(o->members.v);
    free(o->dns.v);
    free(o->then_urls.v);
    free(o->then_topics.v);
}

/* The option named by a (without its value); NULL when there is none for
 * this command. *global_only says it exists for another command. */
static const opt_def *find_opt(const char *name, size_t len, char shrt, unsigned sc,
                               bool *elsewhere)
{
    for (size_t i = 0; i < N_OPT_DEFS; i++) {
        const opt_def *d = &opt_defs[i];
        bool named = shrt ? d->shrt == shrt
                          : d->lng && strlen(d->lng) == len && strncmp(d->lng, name, len) == 0;
        if (!named)
            continue;
        if (d->where == 0 || (d->where & sc))
            return d;
        *elsewhere = true;
    }
    return NULL;
}

/* Parses argv into o. Returns 0, or -1 with one line in err. Keeps going
 * after an error only to learn of -h and the command, so that "results
 * --bogus -h" still shows help. */
static int parse_args(int argc, char **argv, ctl_opts *o, char *err, size_t errlen)
{
    bool failed = false, rest_positional = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!rest_positional && strcmp(a, "--") == 0) {
            rest_positional = true;
            continue;
        }
        if (rest_positional || a[0] != '-' || a[1] == '\0') {
            if (!o->command) {
                for (size_t k = 0; k < sizeof commands / sizeof commands[0]; k++)
                    if (strcmp(a, commands[k].name) == 0) {
                        o->command = commands[k].name;
                        o->sc = commands[k].sc;
                    }
                if (!o->command && !failed) {
                    snprintf(err, errlen,
                             "unknown command '%s' (submit, cancel, results, dead, requeue, "
                             "topics, partitions, jobs, task, groups, limits; see -h)",
                             a);
                    failed = true;
                }
            } else if ((o->sc == SC_TOPICS || o->sc == SC_PARTITIONS || o->sc == SC_JOBS ||
                        o->sc == SC_TASK || o->sc == SC_GROUPS || o->sc == SC_LIMITS) &&
                       !o->action) {
                o->action = a;
            } else if (o->sc == SC_TASK && !o->key) {
                o->key = a;
            } else if (!failed) {
                snprintf(err, errlen, "unexpected argument '%s' (see %s -h)", a, o->command);
                failed = true;
            }
            continue;
        }
        /* -x, -xVALUE, --name, --name=VALUE */
        const char *name, *inline_value = NULL;
        size_t len;
        char shrt = 0;
        if (a[1] == '-') {
            name = a + 2;
            const char *eq = strchr(name, '=');
            len = eq ? (size_t)(eq - name) : strlen(name);
            if (eq)
                inline_value = eq + 1;
        } else {
            name = a + 1;
            len = 1;
            shrt = a[1];
            if (a[2])
                inline_value = a + 2;
        }
        bool elsewhere = false;
        const opt_def *d = find_opt(name, len, shrt, o->sc, &elsewhere);
        if (d && d->kind == K_FLAG && inline_value && shrt) {
            d = NULL; /* "-qJ" style bundles are not supported */
        }
        if (!d) {
            if (!failed) {
                if (elsewhere && !o->command)
                    snprintf(err, errlen, "'%s' belongs after the command (see -h)", a);
                else if (elsewhere)
                    snprintf(err, errlen, "'%s' is not an option of %s (see %s -h)", a, o->command,
                             o->command);
                else
                    snprintf(err, errlen, "unknown option '%s' (see -h)", a);
                failed = true;
            }
            continue;
        }
        char *field = (char *)o + d->off;
        if (d->kind == K_FLAG) {
            if (inline_value) {
                if (!failed)
                    snprintf(err, errlen, "'%s' takes no value", a);
                failed = true;
                continue;
            }
            *(bool *)field = true;
            continue;
        }
        const char *value = inline_value;
        if (!value) {
            if (i + 1 >= argc) {
                if (!failed)
                    snprintf(err, errlen, "'%s' needs a value (see -h)", a);
                failed = true;
                continue;
            }
            value = argv[++i];
        }
        if (d->kind == K_STR) {
            *(const char **)field = value;
        } else if (list_add((str_list *)field, value) != 0) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    if (failed)
        return -1;
    if (!o->help && !o->version && !o->command) {
        snprintf(err, errlen,
                 "no command given (submit, cancel, results, dead, requeue, topics, "
                 "partitions, jobs; see -h)");
        return -1;
    }
    if (!o->help && o->sc == SC_TOPICS &&
        (!o->action || (strcmp(o->action, "create") && strcmp(o->action, "describe")))) {
        snprintf(err, errlen, "topics needs create or describe%s%s%s", o->action ? ", not '" : "",
                 o->action ? o->action : "", o->action ? "'" : "");
        return -1;
    }
    if (!o->help && o->sc == SC_JOBS) {
        static const char *const actions[] = {"put",     "pause", "resume", "delete",
                                              "trigger", "list",  "preview"};
        bool known = false;
        for (size_t k = 0; o->action && k < sizeof actions / sizeof actions[0]; k++)
            known |= strcmp(o->action, actions[k]) == 0;
        if (!known) {
            snprintf(err, errlen,
                     "jobs needs put, pause, resume, delete, trigger, list or preview%s%s%s",
                     o->action ? ", not '" : "", o->action ? o->action : "", o->action ? "'" : "");
            return -1;
        }
    }
    if (!o->help && o->sc == SC_TASK &&
        (!o->action ||
         (strcmp(o->action, "get") && strcmp(o->action, "list") && strcmp(o->action, "stats")))) {
        snprintf(err, errlen, "task needs get, list or stats%s%s%s", o->action ? ", not '" : "",
                 o->action ? o->action : "", o->action ? "'" : "");
        return -1;
    }
    if (!o->help && (o->sc == SC_GROUPS || o->sc == SC_LIMITS) &&
        (!o->action ||
         (strcmp(o->action, "put") && strcmp(o->action, "list") && strcmp(o->action, "delete")))) {
        snprintf(err, errlen, "%s needs put, list or delete%s%s%s", o->command,
                 o->action ? ", not '" : "", o->action ? o->action : "", o->action ? "'" : "");
        return -1;
    }
    if (!o->help && o->sc == SC_PARTITIONS && (!o->action || strcmp(o->action, "grow"))) {
        snprintf(err, errlen, "partitions needs grow%s%s%s", o->action ? ", not '" : "",
                 o->action ? o->action : "", o->action ? "'" : "");
        return -1;
    }
    return 0;
}

/* ---- configuration ----------------------------------------------------------- */

static int cfg_set_str(char **dst, const char *v, size_t len)
{
    char *s = strndup(v, len);
    if (!s)
        return -1;
    free(*dst);
    *dst = s;
    return 0;
}

/* Applies one key=value of the config file or of -X. where names it in
 * messages. */
static int apply_setting(mc_config *cfg, const char *kv, size_t len, bool from_file,
                         const char *where, char *err, size_t errlen)
{
    const char *eq = memchr(kv, '=', len);
    if (!eq || eq == kv) {
        snprintf(err, errlen, "%.300s: '%.*s' is not key=value", where,
                 (int)(len > 100 ? 100 : len), kv);
        return -1;
    }
    const char *key = kv, *value = eq + 1;
    size_t klen = (size_t)(eq - kv), vlen = len - klen - 1;
    if (from_file) {
        mc_trim(&key, &klen);
        mc_trim(&value, &vlen);
    }
    int rc;
    if (from_file && klen == 17 && strncmp(key, "bootstrap.servers", klen) == 0)
        rc = cfg_set_str(&cfg->bootstrap_servers, value, vlen);
    else if (from_file && klen == 21 && strncmp(key, "mooncake.topic.prefix", klen) == 0)
        rc = cfg_set_str(&cfg->topic_prefix, value, vlen);
    else
        rc = mc_config_add_kafka_prop(cfg, key, klen, value, vlen);
    if (rc != 0)
        snprintf(err, errlen, "out of memory");
    return rc;
}

static int load_config_file(mc_config *cfg, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "-F %s: %s", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lineno = 0, rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        const char *p = line;
        size_t len = (size_t)n;
        mc_trim(&p, &len);
        if (len == 0 || p[0] == '#')
            continue;
        char where[4200];
        snprintf(where, sizeof where, "-F %s line %d", path, lineno);
        rc = apply_setting(cfg, p, len, true, where, err, errlen);
    }
    free(line);
    fclose(f);
    return rc;
}

/* mooncake's configuration (environment and defaults, as every role reads
 * it), then the -F file, then -b, -p and -X. */
static int load_config(ctl *c, char **envp, char *err, size_t errlen)
{
    char *args[] = {"mooncakectl", NULL};
    int rc = mc_config_load(&c->cfg, 1, args, envp, err, errlen);
    if (rc != 0) {
        if (rc > 0)
            snprintf(err, errlen, "cannot read the configuration");
        return -1;
    }
    if (c->o.config_file && load_config_file(&c->cfg, c->o.config_file, err, errlen) != 0)
        return -1;
    if (c->o.brokers && cfg_set_str(&c->cfg.bootstrap_servers, c->o.brokers, strlen(c->o.brokers)))
        return -1;
    if (c->o.prefix && cfg_set_str(&c->cfg.topic_prefix, c->o.prefix, strlen(c->o.prefix)))
        return -1;
    for (size_t i = 0; i < c->o.xprops.n; i++)
        if (apply_setting(&c->cfg, c->o.xprops.v[i], strlen(c->o.xprops.v[i]), false, "-X", err,
                          errlen) != 0)
            return -1;
    if (!c->cfg.bootstrap_servers[0]) {
        snprintf(err, errlen, "bootstrap servers are empty (-b)");
        return -1;
    }
    /* A property librdkafka refuses is a usage error: find out now. */
    rd_kafka_conf_t *conf = mc_kafka_conf_new(&c->cfg, c, err, errlen);
    if (!conf)
        return -1;
    rd_kafka_conf_destroy(conf);
    return 0;
}

/* ---- small parsers ------------------------------------------------------------ */

/* 1500ms, 30s, 5m, 2h, 1d -> milliseconds. */
static bool parse_duration(const char *s, int64_t *out)
{
    const char *p = s;
    int64_t v = 0;
    if (!isdigit((unsigned char)*p))
        return false;
    while (isdigit((unsigned char)*p)) {
        if (v > INT64_MAX / 10 - 9)
            return false;
        v = v * 10 + (*p++ - '0');
    }
    int64_t mult;
    if (strcmp(p, "ms") == 0)
        mult = 1;
    else if (strcmp(p, "s") == 0)
        mult = 1000;
    else if (strcmp(p, "m") == 0)
        mult = 60000;
    else if (strcmp(p, "h") == 0)
        mult = 3600000;
    else if (strcmp(p, "d") == 0)
        mult = 86400000;
    else
        return false;
    if (v > INT64_MAX / mult)
        return false;
    *out = v * mult;
    return true;
}

/* Reads exactly n digits. */
static bool digits(const char **s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!isdigit((unsigned char)(*s)[i]))
            return false;
        v = v * 10 + ((*s)[i] - '0');
    }
    *s += n;
    *out = v;
    return true;
}

/* RFC 3339: 2030-01-02T03:04:05[.123][Z|+01:00] -> epoch ms. */
static bool parse_rfc3339(const char *s, int64_t *out)
{
    int Y, M, D, h, m, sec;
    if (!digits(&s, 4, &Y) || *s++ != '-' || !digits(&s, 2, &M) || *s++ != '-' ||
        !digits(&s, 2, &D))
        return false;
    if (*s != 'T' && *s != 't' && *s != ' ')
        return false;
    s++;
    if (!digits(&s, 2, &h) || *s++ != ':' || !digits(&s, 2, &m) || *s++ != ':' ||
        !digits(&s, 2, &sec))
        return false;
    int64_t frac = 0;
    if (*s == '.') {
        s++;
        int n = 0;
        for (; isdigit((unsigned char)*s); s++, n++)
            if (n < 3)
                frac = frac * 10 + (*s - '0');
        if (n == 0)
            return false;
        for (; n < 3; n++)
            frac *= 10;
    }
    int offset_min = 0;
    if (*s == 'Z' || *s == 'z') {
        s++;
    } else if (*s == '+' || *s == '-') {
        int sign = *s++ == '-' ? -1 : 1, oh, om;
        if (!digits(&s, 2, &oh) || *s++ != ':' || !digits(&s, 2, &om) || oh > 23 || om > 59)
            return false;
        offset_min = sign * (oh * 60 + om);
    } else {
        return false;
    }
    if (*s || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
        return false;
    struct tm tm = {.tm_year = Y - 1900,
                    .tm_mon = M - 1,
                    .tm_mday = D,
                    .tm_hour = h,
                    .tm_min = m,
                    .tm_sec = sec};
    time_t t = timegm(&tm);
    *out = (int64_t)t * 1000 + frac - (int64_t)offset_min * 60000;
    return true;
}

/* A point in time: epoch ms or RFC 3339. */
static bool parse_time(const char *s, int64_t *out)
{
    return mc_parse_int64(s, 0, INT64_MAX, out) || parse_rfc3339(s, out);
}

/* A point in time, or a duration from now in the direction of sign. */
static bool parse_when(const char *s, int sign, int64_t *out)
{
    int64_t d;
    if (parse_time(s, out))
        return true;
    if (!parse_duration(s, &d))
        return false;
    *out = mc_now_ms() + sign * d;
    return true;
}

/* --since: 10m (ago), epoch ms or RFC 3339. */
bool ctl_parse_since(const char *s, int64_t *out)
{
    return parse_when(s, -1, out);
}

bool ctl_parse_due(const char *s, int64_t *out)
{
    return parse_when(s, 1, out);
}

void ctl_fmt_time(int64_t ms, char out[32])
{
    if (ms <= 0) {
        snprintf(out, 32, "-");
        return;
    }
    time_t t = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    char base[24];
    strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, 32, "%s.%03dZ", base, (int)(ms % 1000));
}

/* ---- signals and progress --------------------------------------------------- */

/* True once SIGINT or SIGTERM arrived (they are blocked, so they wait as
 * pending signals until this asks). */
bool ctl_stop_requested(ctl *c)
{
    if (c->stopping)
        return true;
    struct timespec zero = {0, 0};
    if (sigtimedwait(&c->stop_signals, NULL, &zero) > 0)
        c->stopping = true;
    return c->stopping;
}

/* Calls the progress printer at most once a second, after the first. */
void ctl_progress_tick(progress *pg)
{
    if (!pg || !pg->print)
        return;
    int64_t now = mc_now_ms();
    if (now - pg->started_ms < 1000 || now - pg->last_ms < 1000)
        return;
    pg->last_ms = now;
    pg->print(pg->arg, false);
}

/* ---- JSON output ----------------------------------------------------------------- */

/* Prints obj as one line and releases it. */
void ctl_print_json(json_t *obj)
{
    char *s = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    if (s) {
        fputs(s, stdout);
        fputc('\n', stdout);
    }
    free(s);
    json_decref(obj);
}

/* A record key for a table cell: control characters shown as '?'. */
void ctl_printable(const void *p, size_t n, char *out, size_t outlen)
{
    const unsigned char *s = p;
    size_t o = 0;
    if (!p) {
        snprintf(out, outlen, "-");
        return;
    }
    for (size_t i = 0; i < n && o + 1 < outlen; i++)
        out[o++] = s[i] >= 0x20 && s[i] != 0x7f ? (char)s[i] : '?';
    out[o] = '\0';
}

/* ---- Kafka clients --------------------------------------------------------------- */

/* mooncake's configuration (bootstrap servers, passthrough properties, log
 * routing) with our client.id unless the user gave one. Caller owns it. */
static rd_kafka_conf_t *base_conf(ctl *c, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = mc_kafka_conf_new(&c->cfg, c, err, errlen);
    if (conf && mc_kafka_conf_default(&c->cfg, conf, "client.id", "mooncakectl", err, errlen)) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    return conf;
}

/* A read_committed consumer that is only ever assign()ed, never subscribed:
 * it joins no group and commits nothing by itself. group is the group whose
 * committed offsets it may read and whose metadata a transaction may commit
 * to; readers pass NULL and get a group id nothing commits to. Caller
 * destroys it. */
rd_kafka_t *ctl_new_consumer(ctl *c, const char *group, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = base_conf(c, err, errlen);
    if (!conf)
        return NULL;
    char reader[300];
    snprintf(reader, sizeof reader, "%smooncakectl-reader", c->cfg.topic_prefix);
    return mc_scan_consumer_new(conf, group ? group : reader, err, errlen);
}

/* Asks for high watermarks only: no group, nothing fetched. Caller destroys
 * it. */
rd_kafka_t *ctl_new_end_asker(ctl *c, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = base_conf(c, err, errlen);
    if (!conf)
        return NULL;
    if (mc_kafka_conf_set(conf, "isolation.level", "read_uncommitted", err, errlen)) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    return mc_kafka_new(RD_KAFKA_CONSUMER, conf, "Kafka consumer", err, errlen);
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    (void)opaque;
    delivery *d = m->_private;
    if (!d)
        return;
    d->err = m->err;
    d->partition = m->partition;
    d->offset = m->offset;
    d->done = true;
}

/* An idempotent producer (acks=all), transactional when txn_id is given,
 * placing keys with murmur2 like every mooncake producer (mc_key_partition).
 * Caller destroys it. */
rd_kafka_t *ctl_new_producer(ctl *c, const char *txn_id, char *err, size_t errlen)
{
    rd_kafka_conf_t *conf = base_conf(c, err, errlen);
    if (!conf)
        return NULL;
    if (mc_kafka_conf_producer(&c->cfg, conf, txn_id, err, errlen)) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    return mc_kafka_new(RD_KAFKA_PRODUCER, conf, "Kafka producer", err, errlen);
}

/* Metadata of every topic; caller destroys it. NULL with err on failure. */
const rd_kafka_metadata_t *ctl_fetch_metadata(ctl *c, rd_kafka_t *rk, char *err, size_t errlen)
{
    const rd_kafka_metadata_t *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, NULL, &md, TIMEOUT_MS);
    if (e) {
        snprintf(err, errlen,
                 "no metadata from %s within %d s: %s (check -b and that the brokers are up)",
                 c->cfg.bootstrap_servers, TIMEOUT_MS / 1000, rd_kafka_err2str(e));
        return NULL;
    }
    return md;
}

/* Partition count of topic in md; -1 when it does not exist. */
int ctl_md_partitions(const rd_kafka_metadata_t *md, const char *topic)
{
    for (int i = 0; i < md->topic_cnt; i++)
        if (strcmp(md->topics[i].topic, topic) == 0)
            return md->topics[i].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
                           md->topics[i].partition_cnt == 0
                       ? -1
                       : md->topics[i].partition_cnt;
    return -1;
}

/* Partition count of an existing topic; 0 with a line in err when the topic
 * is missing or metadata cannot be had. */
int ctl_topic_partitions(ctl *c, rd_kafka_t *rk, const char *topic, char *err, size_t errlen)
{
    const rd_kafka_metadata_t *md = ctl_fetch_metadata(c, rk, err, errlen);
    if (!md)
        return 0;
    int n = ctl_md_partitions(md, topic);
    rd_kafka_metadata_destroy(md);
    if (n < 0) {
        snprintf(err, errlen,
                 "topic %s does not exist (wrong -p prefix? `mooncakectl topics create` makes "
                 "the topic set)",
                 topic);
        return 0;
    }
    return n;
}

/* A note on stderr, unless -q. */
void ctl_report(ctl *c, const char *fmt, ...)
{
    if (c->o.quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fputs("mooncakectl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* One line on stderr saying what went wrong; returns code. */
int ctl_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("mooncakectl: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return code;
}

/* ---- submit and cancel -------------------------------------------------------- */

int ctl_send(ctl *c, const char *suffix, const char *key, const mc_buf *value, delivery *d)
{
    char err[1024], topic[300];
    mc_topic_name(&c->cfg, suffix, topic, sizeof topic);
    rd_kafka_t *rk = ctl_new_producer(c, NULL, err, sizeof err);
    if (!rk)
        return ctl_fail(EXIT_KAFKA, "%s", err);
    int rc = 0;
    if (ctl_topic_partitions(c, rk, topic, err, sizeof err) == 0) {
        rc = ctl_fail(EXIT_KAFKA, "%s", err);
        goto out;
    }
    rd_kafka_resp_err_t e;
    for (;;) {
        e = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(RD_KAFKA_PARTITION_UA),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, strlen(key)),
            RD_KAFKA_V_VALUE(value->data, value->len), RD_KAFKA_V_OPAQUE(d), RD_KAFKA_V_END);
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
            break;
        rd_kafka_poll(rk, 100);
    }
    if (e) {
        rc = ctl_fail(EXIT_KAFKA, "producing to %s: %s", topic, rd_kafka_err2str(e));
        goto out;
    }
    while (!d->done) {
        rd_kafka_poll(rk, 100);
        if (!d->done && ctl_stop_requested(c)) {
            rc = ctl_fail(
                EXIT_INTERRUPTED,
                "interrupted before the broker acknowledged %s: it may or may not be in %s "
                "(sending it again is harmless)",
                key, topic);
            goto out;
        }
    }
    if (d->err)
        rc = ctl_fail(EXIT_KAFKA, "%s was not written to %s: %s", key, topic,
                      rd_kafka_err2str(d->err));
out:
    rd_kafka_destroy(rk);
    return rc;
}

int ctl_produce_wait(ctl *c, rd_kafka_t *rk, const char *topic, int32_t partition, const void *key,
                     size_t keylen, const void *value, size_t valuelen, char *err, size_t errlen)
{
    delivery d = {0};
    rd_kafka_resp_err_t e = rd_kafka_producev(
        rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, keylen),
        RD_KAFKA_V_VALUE((void *)value, valuelen), RD_KAFKA_V_OPAQUE(&d), RD_KAFKA_V_END);
    if (e) {
        snprintf(err, errlen, "producing to %s: %s", topic, rd_kafka_err2str(e));
        return -1;
    }
    while (!d.done) {
        rd_kafka_poll(rk, 100);
        if (!d.done && ctl_stop_requested(c)) {
            snprintf(err, errlen, "interrupted before the broker acknowledged the write to %s",
                     topic);
            return -1;
        }
    }
    if (d.err) {
        snprintf(err, errlen, "writing to %s: %s", topic, rd_kafka_err2str(d.err));
        return -1;
    }
    return 0;
}

bool ctl_id_ok(const char *flag, const char *v, char *why, size_t whylen)
{
    size_t n = strlen(v);
    if (n > MC_JSON_MAX_ID_LEN) {
        snprintf(why, whylen, "%s is %zu bytes, more than %d", flag, n, MC_JSON_MAX_ID_LEN);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) {
            snprintf(why, whylen, "%s contains a control character", flag);
            return false;
        }
    return true;
}

static const mc_task_field_names flag_names = {
    .app_id = "--app",
    .task_id = "--id",
    .due_at = "due time (--at/--in)",
    .url = "--url",
    .method = "--method",
    .timeout_ms = "--timeout-ms",
    .attempt = "attempt",
    .max_attempts = "--max-attempts",
    .initial_backoff_ms = "--initial-backoff-ms",
    .multiplier = "--multiplier",
    .max_backoff_ms = "--max-backoff-ms",
    .kafka_target = "--kafka-topic",
    .max_late_ms = "--late-ms",
    .on_success = "follow-up",
    .follow_up_id = "id",
    .delay_ms = "--then-delay-ms",
    .route = "--strategy",
};

static bool parse_int_flag(const char *flag, const char *v, int64_t min, int64_t max, int64_t *out,
                           char *why, size_t whylen)
{
    if (mc_parse_int64(v, min, max, out))
        return true;
    snprintf(why, whylen, "%s '%s' is not an integer in [%" PRId64 ", %" PRId64 "]", flag, v, min,
             max);
    return false;
}

/* "Name: value" -> a checked header in the arena. */
static bool parse_header(const char *h, mc_arena *a, mc_kv *out, char *why, size_t whylen)
{
    const char *colon = strchr(h, ':');
    if (!colon) {
        snprintf(why, whylen, "-H '%.100s' is not 'Name: value'", h);
        return false;
    }
    const char *name = h, *value = colon + 1;
    size_t nlen = (size_t)(colon - h), vlen = strlen(value);
    mc_trim(&name, &nlen);
    mc_trim(&value, &vlen);
    char *n = mc_arena_alloc(a, nlen + 1), *v = mc_arena_alloc(a, vlen + 1);
    if (!n || !v) {
        snprintf(why, whylen, "out of memory");
        return false;
    }
    memcpy(n, name, nlen);
    n[nlen] = '\0';
    memcpy(v, value, vlen);
    v[vlen] = '\0';
    if (!mc_header_name_ok(n)) {
        snprintf(why, whylen, "-H: '%.100s' is not a valid header name", n);
        return false;
    }
    if (mc_header_reserved(n)) {
        snprintf(why, whylen, "-H: '%.100s' is set by mooncake and cannot be given", n);
        return false;
    }
    if (!mc_header_value_ok(v)) {
        snprintf(why, whylen, "-H %.100s: the value contains a control character", n);
        return false;
    }
    *out = (mc_kv){n, v};
    return true;
}

/* The whole of file (- is stdin) copied into the arena. */
static bool file_into_arena(const char *file, const char *flag, mc_arena *a, const uint8_t **out,
                            size_t *n, char *why, size_t whylen)
{
    size_t len;
    char err[600];
    char *data = mc_config_read_file(file, flag, &len, err, sizeof err);
    if (!data) {
        snprintf(why, whylen, "%s", err);
        return false;
    }
    uint8_t *copy = mc_arena_alloc(a, len ? len : 1);
    if (copy)
        memcpy(copy, data, len);
    free(data);
    if (!copy) {
        snprintf(why, whylen, "out of memory");
        return false;
    }
    *out = copy;
    *n = len;
    return true;
}

/* The callback flags; --url is checked by mc_task_ok. */
static bool callback_from_flags(const ctl_opts *o, mc_arena *a, mc_callback *cb, char *why,
                                size_t whylen)
{
    int64_t v;
    cb->url = o->url;
    char *method = mc_arena_strdup(a, o->method ? o->method : "POST");
    if (!method) {
        snprintf(why, whylen, "out of memory");
        return false;
    }
    for (char *p = method; *p; p++)
        *p = (char)toupper((unsigned char)*p);
    cb->method = method;
    if (o->headers.n > MC_JSON_MAX_HEADERS) {
        snprintf(why, whylen, "%zu headers, more than %d", o->headers.n, MC_JSON_MAX_HEADERS);
        return false;
    }
    mc_kv *hs = o->headers.n ? mc_arena_alloc(a, o->headers.n * sizeof *hs) : NULL;
    size_t bytes = 0;
    for (size_t i = 0; i < o->headers.n; i++) {
        if (!hs || !parse_header(o->headers.v[i], a, &hs[i], why, whylen))
            return false;
        bytes += strlen(hs[i].key) + strlen(hs[i].value);
    }
    if (bytes > MC_JSON_MAX_MAP_BYTES) {
        snprintf(why, whylen, "the headers are more than %d bytes in all", MC_JSON_MAX_MAP_BYTES);
        return false;
    }
    cb->headers = hs;
    cb->n_headers = o->headers.n;
    if (o->body && o->body_file) {
        snprintf(why, whylen, "give --body or --body-file, not both");
        return false;
    }
    if (o->body) {
        cb->body = (const uint8_t *)o->body;
        cb->body_len = strlen(o->body);
    } else if (o->body_file && !file_into_arena(o->body_file, "--body-file", a, &cb->body,
                                                &cb->body_len, why, whylen)) {
        return false;
    }
    if (o->timeout_ms) {
        if (!parse_int_flag("--timeout-ms", o->timeout_ms, 0, MC_MAX_TIMEOUT_MS, &v, why, whylen))
            return false;
        cb->timeout_ms = (int32_t)v;
    }
    return true;
}

/* The --kafka-* flags: the record to deliver instead of a call. The topic's
 * form is checked here; whether the app may write it is the router's
 * --target-topics, which this tool does not know. */
bool ctl_kafka_target_from_flags(const ctl_opts *o, mc_arena *a, mc_task *t, char *why,
                                 size_t whylen)
{
    mc_kafka_target *k = &t->kafka_target;
    if (!mc_topic_name_ok(o->kafka_topic)) {
        snprintf(why, whylen,
                 "--kafka-topic '%.100s' is not a Kafka topic name (1 to %d of letters, digits, "
                 ". _ -)",
                 o->kafka_topic, MC_TOPIC_NAME_MAX);
        return false;
    }
    k->topic = o->kafka_topic;
    if (o->kafka_key) {
        k->key = (const uint8_t *)o->kafka_key;
        k->key_len = strlen(o->kafka_key);
        k->has_key = true;
    }
    if (o->kafka_value && o->kafka_value_file) {
        snprintf(why, whylen, "give --kafka-value or --kafka-value-file, not both");
        return false;
    }
    if (o->kafka_value) {
        k->value = (const uint8_t *)o->kafka_value;
        k->value_len = strlen(o->kafka_value);
        k->has_value = true;
    } else if (o->kafka_value_file) {
        if (!file_into_arena(o->kafka_value_file, "--kafka-value-file", a, &k->value, &k->value_len,
                             why, whylen))
            return false;
        k->has_value = true;
    }
    size_t n = o->kafka_headers.n, bytes = 0;
    if (n > MC_JSON_MAX_HEADERS) {
        snprintf(why, whylen, "%zu --kafka-header, more than %d", n, MC_JSON_MAX_HEADERS);
        return false;
    }
    mc_kv *hs = n ? mc_arena_alloc(a, n * sizeof *hs) : NULL;
    for (size_t i = 0; i < n; i++) {
        const char *h = o->kafka_headers.v[i], *eq = strchr(h, '=');
        if (!hs || !eq || eq == h) {
            snprintf(why, whylen, "--kafka-header '%.100s' is not name=value", h);
            return false;
        }
        char *name = mc_arena_alloc(a, (size_t)(eq - h) + 1);
        if (!name) {
            snprintf(why, whylen, "out of memory");
            return false;
        }
        memcpy(name, h, (size_t)(eq - h));
        name[eq - h] = '\0';
        if (strcmp(name, MC_TARGET_TASK_HEADER) == 0 || strcmp(name, MC_TARGET_DUE_HEADER) == 0) {
            snprintf(why, whylen, "--kafka-header: '%s' is set by mooncake and cannot be given",
                     name);
            return false;
        }
        /* The schema's header values are strings: not UTF-8 would be a
         * record the router cannot read. */
        json_t *utf8 = json_string(eq + 1);
        json_decref(utf8);
        if (!utf8) {
            snprintf(why, whylen, "--kafka-header %.100s: the value is not UTF-8", name);
            return false;
        }
        hs[i] = (mc_kv){name, eq + 1};
        bytes += strlen(h);
    }
    if (bytes > MC_JSON_MAX_MAP_BYTES) {
        snprintf(why, whylen, "--kafka-header is more than %d bytes in all", MC_JSON_MAX_MAP_BYTES);
        return false;
    }
    k->headers = hs;
    k->n_headers = n;
    t->has_kafka_target = true;
    t->callback = (mc_callback){.url = "", .method = "POST"};
    return true;
}

/* --late-ms with --late-action: both or neither, so a policy is never half
 * made of defaults. */
bool ctl_late_policy_from_flags(const ctl_opts *o, mc_task *t, char *why, size_t whylen)
{
    if (!o->late_ms && !o->late_action)
        return true;
    if (!o->late_ms || !o->late_action) {
        snprintf(why, whylen, "give --late-ms and --late-action together");
        return false;
    }
    if (!parse_int_flag("--late-ms", o->late_ms, 0, MC_MAX_LATE_MS, &t->late_policy.max_late_ms,
                        why, whylen))
        return false;
    if (strcasecmp(o->late_action, "RUN") == 0) {
        t->late_policy.action = MC_LATE_RUN;
    } else if (strcasecmp(o->late_action, "DROP") == 0) {
        t->late_policy.action = MC_LATE_DROP;
    } else if (strcasecmp(o->late_action, "DEAD") == 0) {
        t->late_policy.action = MC_LATE_DEAD;
    } else {
        snprintf(why, whylen, "--late-action '%.40s' is not RUN, DROP or DEAD", o->late_action);
        return false;
    }
    t->has_late_policy = true;
    return true;
}

/* --then URL (a POST) and --then-kafka-topic T (an empty record keyed with
 * the task's id), in that order, each due --then-delay-ms after the task
 * succeeds: t's follow-ups, with the derived ids <id>.then<N>. Each URL and
 * topic is checked here so the messages name the flag. t->task_id is set. */
static bool follow_ups_from_flags(const ctl_opts *o, int64_t max_due_ms, mc_arena *a, mc_task *t,
                                  char *why, size_t whylen)
{
    size_t n = o->then_urls.n + o->then_topics.n;
    if (!n) {
        if (o->then_delay_ms)
            snprintf(why, whylen, "--then-delay-ms needs --then or --then-kafka-topic");
        return !o->then_delay_ms;
    }
    if (n > MC_MAX_FOLLOW_UPS) {
        snprintf(why, whylen, "%zu follow-ups (--then, --then-kafka-topic), more than %d", n,
                 MC_MAX_FOLLOW_UPS);
        return false;
    }
    int64_t delay = 0;
    if (o->then_delay_ms &&
        !parse_int_flag("--then-delay-ms", o->then_delay_ms, 0, max_due_ms, &delay, why, whylen))
        return false;
    mc_follow_up *f = mc_arena_alloc(a, n * sizeof *f);
    if (!f) {
        snprintf(why, whylen, "out of memory");
        return false;
    }
    memset(f, 0, n * sizeof *f);
    const mc_task_field_names then_names = {.app_id = "--app",
                                            .task_id = "--id",
                                            .due_at = "due time",
                                            .url = "--then",
                                            .method = "--then (method)",
                                            .timeout_ms = "--then (timeout)",
                                            .attempt = "attempt"};
    for (size_t i = 0; i < n; i++) {
        f[i].task_id = "";
        f[i].delay_ms = delay;
        if (i < o->then_urls.n) {
            f[i].callback = (mc_callback){.url = o->then_urls.v[i], .method = "POST"};
            /* The URL by the rules of a task's, named as the flag. */
            mc_task probe = {.app_id = t->app_id,
                             .task_id = t->task_id,
                             .due_at = MC_MIN_DUE_AT_MS,
                             .callback = f[i].callback,
                             .attempt = 1};
            if (!mc_task_ok(&probe, MC_MIN_DUE_AT_MS, 0, &then_names, why, whylen))
                return false;
            continue;
        }
        const char *topic = o->then_topics.v[i - o->then_urls.n];
        if (!mc_topic_name_ok(topic)) {
            snprintf(why, whylen,
                     "--then-kafka-topic '%.100s' is not a Kafka topic name (1 to %d of letters, "
                     "digits, . _ -)",
                     topic, MC_TOPIC_NAME_MAX);
            return false;
        }
        f[i].callback = (mc_callback){.url = "", .method = "POST"};
        f[i].has_kafka_target = true;
        f[i].kafka_target = (mc_kafka_target){.topic = topic,
                                              .key = (const uint8_t *)t->task_id,
                                              .key_len = strlen(t->task_id),
                                              .has_key = true,
                                              .value = (const uint8_t *)"",
                                              .has_value = true};
    }
    t->on_success = f;
    t->n_on_success = n;
    return true;
}

/* --group, --path and --strategy: the url group://GROUP/PATH and the metadata
 * mooncake.route (mc_task_ok checks both after). */
static bool group_from_flags(const ctl_opts *o, mc_arena *a, mc_task *t, char *why, size_t whylen)
{
    const char *path = o->path ? o->path : "";
    if (path[0] && path[0] != '/' && path[0] != '?') {
        snprintf(why, whylen, "--path '%.100s' must start with '/'", path);
        return false;
    }
    size_t len = strlen("group://") + strlen(o->group) + strlen(path) + 1;
    char *url = mc_arena_alloc(a, len);
    mc_kv *md = mc_arena_alloc(a, (t->n_metadata + 1) * sizeof *md);
    if (!url || !md) {
        snprintf(why, whylen, "out of memory");
        return false;
    }
    snprintf(url, len, "group://%s%s", o->group, path);
    t->callback.url = url;
    if (!o->strategy)
        return true;
    if (t->n_metadata)
        memcpy(md, t->metadata, t->n_metadata * sizeof *md);
    md[t->n_metadata] = (mc_kv){MC_ROUTE_METADATA, o->strategy};
    t->metadata = md;
    t->n_metadata++;
    return true;
}

/* The task the submit flags describe, checked with the router's rules.
 * Strings live in a (or argv). Returns false with a line in why. */
static bool task_from_flags(ctl *c, mc_arena *a, mc_uuid7 *ids, mc_task *t, char *why,
                            size_t whylen)
{
    const ctl_opts *o = &c->o;
    int64_t now = mc_now_ms(), v;
    memset(t, 0, sizeof *t);
    if (!o->app) {
        snprintf(why, whylen, "--app is required (or -f FILE)");
        return false;
    }
    if (o->url && o->group) {
        snprintf(why, whylen, "give --url or --group, not both");
        return false;
    }
    if ((o->url || o->group) && o->kafka_topic) {
        snprintf(why, whylen, "give %s or --kafka-topic, not both: a task either calls or delivers",
                 o->url ? "--url" : "--group");
        return false;
    }
    if (!o->url && !o->group && !o->kafka_topic) {
        snprintf(why, whylen, "--url (or --group, or --kafka-topic) is required");
        return false;
    }
    if ((o->path || o->strategy) && !o->group) {
        snprintf(why, whylen, "%s is for a group: give --group", o->path ? "--path" : "--strategy");
        return false;
    }
    /* A flag of the other kind would be silently ignored: say so instead. */
    const char *stray = NULL;
    if (o->kafka_topic)
        stray = o->method       ? "--method"
                : o->headers.n  ? "-H"
                : o->body       ? "--body"
                : o->body_file  ? "--body-file"
                : o->timeout_ms ? "--timeout-ms"
                                : NULL;
    else
        stray = o->kafka_key          ? "--kafka-key"
                : o->kafka_value      ? "--kafka-value"
                : o->kafka_value_file ? "--kafka-value-file"
                : o->kafka_headers.n  ? "--kafka-header"
                                      : NULL;
    if (stray) {
        snprintf(why, whylen,
                 o->kafka_topic ? "%s is for a call (--url), not --kafka-topic"
                                : "%s needs --kafka-topic",
                 stray);
        return false;
    }
    if (!o->at == !o->in) {
        snprintf(why, whylen, "give the due time with --at TIME or --in DURATION (one of them)");
        return false;
    }
    if (!ctl_id_ok("--app", o->app, why, whylen) ||
        (o->id && !ctl_id_ok("--id", o->id, why, whylen)))
        return false;
    t->app_id = o->app;
    if (o->id) {
        t->task_id = o->id;
    } else {
        char *id = mc_arena_alloc(a, MC_UUID_STR_LEN + 1);
        if (!id) {
            snprintf(why, whylen, "out of memory");
            return false;
        }
        mc_uuid7_next(ids, now, id);
        t->task_id = id;
    }
    if (o->at && !parse_time(o->at, &t->due_at)) {
        snprintf(why, whylen, "--at '%s' is not epoch ms or RFC 3339 (2030-01-02T03:04:05Z)",
                 o->at);
        return false;
    }
    if (o->in) {
        if (!parse_duration(o->in, &v)) {
            snprintf(why, whylen, "--in '%s' is not a duration such as 1500ms, 30s, 5m, 2h, 1d",
                     o->in);
            return false;
        }
        t->due_at = v > INT64_MAX - now ? INT64_MAX : now + v; /* too far: mc_task_ok says so */
    }
    if (!(o->kafka_topic ? ctl_kafka_target_from_flags(o, a, t, why, whylen)
                         : callback_from_flags(o, a, &t->callback, why, whylen)) ||
        !ctl_late_policy_from_flags(o, t, why, whylen) ||
        !follow_ups_from_flags(o, c->cfg.max_due_ms, a, t, why, whylen))
        return false;
    if (o->max_attempts || o->initial_backoff_ms || o->multiplier || o->max_backoff_ms) {
        t->has_retry = true;
        t->retry = (mc_retry_policy){c->cfg.retry_max_attempts, c->cfg.retry_initial_backoff_ms,
                                     c->cfg.retry_multiplier, c->cfg.retry_max_backoff_ms};
        if (o->max_attempts) {
            if (!parse_int_flag("--max-attempts", o->max_attempts, 1, MC_MAX_ATTEMPTS, &v, why,
                                whylen))
                return false;
            t->retry.max_attempts = (int32_t)v;
        }
        if (o->initial_backoff_ms &&
            !parse_int_flag("--initial-backoff-ms", o->initial_backoff_ms, 0, INT64_MAX,
                            &t->retry.initial_backoff_ms, why, whylen))
            return false;
        if (o->max_backoff_ms && !parse_int_flag("--max-backoff-ms", o->max_backoff_ms, 0,
                                                 INT64_MAX, &t->retry.max_backoff_ms, why, whylen))
            return false;
        if (o->multiplier) {
            char *end;
            errno = 0;
            t->retry.multiplier = strtod(o->multiplier, &end);
            if (errno || end == o->multiplier || *end) {
                snprintf(why, whylen, "--multiplier '%s' is not a number", o->multiplier);
                return false;
            }
        }
    }
    mc_kv *md = o->metadata.n ? mc_arena_alloc(a, o->metadata.n * sizeof *md) : NULL;
    size_t bytes = 0;
    for (size_t i = 0; i < o->metadata.n; i++) {
        const char *kv = o->metadata.v[i], *eq = strchr(kv, '=');
        if (!md || !eq || eq == kv) {
            snprintf(why, whylen, "--metadata '%.100s' is not key=value", kv);
            return false;
        }
        char *k = mc_arena_alloc(a, (size_t)(eq - kv) + 1);
        if (!k) {
            snprintf(why, whylen, "out of memory");
            return false;
        }
        memcpy(k, kv, (size_t)(eq - kv));
        k[eq - kv] = '\0';
        md[i] = (mc_kv){k, eq + 1};
        bytes += strlen(kv);
    }
    if (bytes > MC_JSON_MAX_MAP_BYTES) {
        snprintf(why, whylen, "--metadata is more than %d bytes in all", MC_JSON_MAX_MAP_BYTES);
        return false;
    }
    t->metadata = md;
    t->n_metadata = o->metadata.n;
    if (o->group && !group_from_flags(o, a, t, why, whylen))
        return false;
    t->attempt = 1;
    t->created_at = now;
    return mc_task_ok(t, now, c->cfg.max_due_ms, &flag_names, why, whylen);
}

static void make_uuid(void *arg, char out[MC_JSON_MAX_ID_LEN + 1])
{
    mc_uuid7_next(arg, mc_now_ms(), out);
}

/* Sends what submit or cancel made (cmd: a Submit or a Cancel): to tasks
 * keyed app/id, or with an ordering key to job-commands keyed
 * app/ordering_key, as that chain's AddLink or CancelLink
 * (mc_encode_task_command). Waits for the acknowledgement, then prints the
 * task's key (-J: an object saying where the record went). The exit
 * status. */
static int send_task_command(ctl *c, const mc_command *cmd, const char *ordering_key)
{
    bool submit = cmd->kind == MC_CMD_SUBMIT;
    const char *kind = submit ? "submit" : "cancel";
    const char *app = submit ? cmd->submit.app_id : cmd->cancel.app_id;
    const char *id = submit ? cmd->submit.task_id : cmd->cancel.task_id;
    int64_t due_at = submit ? cmd->submit.due_at : 0;
    const char *suffix = ordering_key ? "job-commands" : "tasks";
    char key[1024], record_key[1024], topic[300];
    if (mc_task_key(app, id, key, sizeof key) >= sizeof key ||
        mc_task_key(app, ordering_key ? ordering_key : id, record_key, sizeof record_key) >=
            sizeof record_key)
        return ctl_fail(EXIT_USAGE, "the key is longer than %zu bytes (nothing sent)",
                        sizeof key - 1);
    mc_buf buf = {0};
    delivery d = {0};
    int rc = mc_encode_task_command(cmd, ordering_key, &buf) != 0
                 ? ctl_fail(EXIT_KAFKA, "out of memory")
                 : ctl_send(c, suffix, record_key, &buf, &d);
    mc_buf_free(&buf);
    if (rc != 0)
        return rc;
    mc_topic_name(&c->cfg, suffix, topic, sizeof topic);
    if (c->o.json) {
        json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:I}", "command", kind, "key", key,
                              "app_id", app, "task_id", id, "topic", topic, "partition",
                              (int)d.partition, "offset", (json_int_t)d.offset);
        if (j && due_at)
            json_object_set_new(j, "due_at", json_integer(due_at));
        if (j && ordering_key)
            json_object_set_new(j, "ordering_key", json_string(ordering_key));
        ctl_print_json(j);
    } else {
        puts(key);
    }
    char when[32] = "";
    if (due_at)
        ctl_fmt_time(due_at, when);
    ctl_report(c, "%s %s%s%s%s%s: %s partition %d offset %" PRId64, kind, key,
               ordering_key ? " in chain " : "", ordering_key ? ordering_key : "",
               due_at ? " due " : "", when, topic, (int)d.partition, d.offset);
    return 0;
}

/* Whether --ordering-key, when given, is a key the jobs role takes for a
 * chain; false with a line in why. */
static bool ordering_key_flag(const ctl_opts *o, char *why, size_t whylen)
{
    return !o->ordering_key || mc_ordering_key_ok(o->ordering_key, "--ordering-key", why, whylen);
}

static int cmd_submit(ctl *c)
{
    const ctl_opts *o = &c->o;
    bool task_flags = o->app || o->id || o->at || o->in || o->url || o->group || o->path ||
                      o->strategy || o->method || o->headers.n || o->body || o->body_file ||
                      o->timeout_ms || o->max_attempts || o->initial_backoff_ms || o->multiplier ||
                      o->max_backoff_ms || o->metadata.n || o->kafka_topic || o->kafka_key ||
                      o->kafka_value || o->kafka_value_file || o->kafka_headers.n || o->late_ms ||
                      o->late_action || o->then_urls.n || o->then_topics.n || o->then_delay_ms;
    if (o->file && task_flags)
        return ctl_fail(EXIT_USAGE, "give -f FILE or the task flags, not both");
    mc_arena *arena = mc_arena_new();
    mc_uuid7 ids;
    if (!arena || mc_uuid7_init(&ids) != 0) {
        mc_arena_free(arena);
        return ctl_fail(EXIT_KAFKA, "out of memory");
    }
    mc_task t;
    char why[1024];
    int rc = 0;
    const char *ordering_key = NULL;
    if (!ordering_key_flag(o, why, sizeof why)) {
        rc = ctl_fail(EXIT_USAGE, "%s (nothing sent)", why);
        goto out;
    }
    if (o->file) {
        size_t len;
        char *body = mc_config_read_file(o->file, "-f", &len, why, sizeof why);
        if (!body) {
            rc = ctl_fail(EXIT_USAGE, "%s", why);
            goto out;
        }
        mc_task_json_options jo = {
            .now_ms = mc_now_ms(),
            .max_due_ms = c->cfg.max_due_ms,
            .retry_defaults = {c->cfg.retry_max_attempts, c->cfg.retry_initial_backoff_ms,
                               c->cfg.retry_multiplier, c->cfg.retry_max_backoff_ms},
            .make_id = make_uuid,
            .make_id_arg = &ids,
        };
        int bad = mc_task_from_json(body, len, &jo, arena, &t, &ordering_key, why, sizeof why);
        free(body);
        if (bad) {
            rc = ctl_fail(EXIT_USAGE, "%s: %s (nothing sent)",
                          strcmp(o->file, "-") ? o->file : "stdin", why);
            goto out;
        }
    } else if (!task_from_flags(c, arena, &ids, &t, why, sizeof why)) {
        rc = ctl_fail(EXIT_USAGE, "%s (nothing sent)", why);
        goto out;
    }
    if (o->ordering_key)
        ordering_key = o->ordering_key;
    rc = send_task_command(c, &(mc_command){.kind = MC_CMD_SUBMIT, .submit = t}, ordering_key);
out:
    mc_uuid7_destroy(&ids);
    mc_arena_free(arena);
    return rc;
}

static int cmd_cancel(ctl *c)
{
    const ctl_opts *o = &c->o;
    char why[512];
    if (!o->app || !o->id)
        return ctl_fail(EXIT_USAGE, "cancel needs --app APP and --id ID");
    if (!ctl_id_ok("--app", o->app, why, sizeof why) ||
        !ctl_id_ok("--id", o->id, why, sizeof why) ||
        !mc_task_ids_ok(o->app, o->id, &flag_names, why, sizeof why) ||
        !ordering_key_flag(o, why, sizeof why))
        return ctl_fail(EXIT_USAGE, "%s (nothing sent)", why);
    mc_command cmd = {.kind = MC_CMD_CANCEL,
                      .cancel = {.app_id = o->app, .task_id = o->id, .requested_at = mc_now_ms()}};
    return send_task_command(c, &cmd, o->ordering_key);
}

/* ---- main ------------------------------------------------------------------------------ */

/* Parses the command line, reads the configuration (environment, -F file,
 * flags) and runs the command. Returns 0, 1 (Kafka) or 2 (usage). */
int main(int argc, char **argv, char **envp)
{
    ctl c;
    memset(&c, 0, sizeof c);
    char err[1024];
    int rc = parse_args(argc, argv, &c.o, err, sizeof err);
    if (c.o.help) {
        fputs(usage_text(c.o.sc), stdout);
        opts_free(&c.o);
        return 0;
    }
    if (c.o.version) { /* whatever else the command line or the environment says */
        printf("mooncakectl %s (librdkafka %s)\n", MOONCAKE_VERSION, rd_kafka_version_str());
        opts_free(&c.o);
        return 0;
    }
    char libwhy[256];
    if (!mc_kafka_library_ok(libwhy, sizeof libwhy)) {
        ctl_fail(EXIT_USAGE, "%s", libwhy);
        opts_free(&c.o);
        return EXIT_USAGE;
    }
    if (rc != 0) {
        ctl_fail(EXIT_USAGE, "%s", err);
        opts_free(&c.o);
        return EXIT_USAGE;
    }
    /* Blocked here, before librdkafka starts its threads (which inherit the
     * mask), and collected by ctl_stop_requested(). */
    sigemptyset(&c.stop_signals);
    sigaddset(&c.stop_signals, SIGINT);
    sigaddset(&c.stop_signals, SIGTERM);
    sigprocmask(SIG_BLOCK, &c.stop_signals, NULL);
    if (load_config(&c, envp, err, sizeof err) != 0) {
        rc = ctl_fail(EXIT_USAGE, "%s", err);
        goto out;
    }
    c.lg = (mc_logger){.level = c.o.quiet                       ? MC_LOG_ERROR
                                : c.cfg.log_level > MC_LOG_WARN ? c.cfg.log_level
                                                                : MC_LOG_WARN,
                       .json = c.cfg.log_json,
                       .role = "mooncakectl"};
    switch (c.o.sc) {
    case SC_SUBMIT:
        rc = cmd_submit(&c);
        break;
    case SC_CANCEL:
        rc = cmd_cancel(&c);
        break;
    case SC_RESULTS:
        rc = ctl_cmd_read(&c, false);
        break;
    case SC_DEAD:
        rc = ctl_cmd_read(&c, true);
        break;
    case SC_REQUEUE:
        rc = ctl_cmd_requeue(&c);
        break;
    case SC_TOPICS:
        rc = strcmp(c.o.action, "create") == 0 ? ctl_cmd_topics_create(&c)
                                               : ctl_cmd_topics_describe(&c);
        break;
    case SC_PARTITIONS:
        rc = ctl_cmd_partitions_grow(&c);
        break;
    case SC_JOBS:
        rc = ctl_cmd_jobs(&c);
        break;
    case SC_GROUPS:
    case SC_LIMITS:
        rc = ctl_cmd_endpoints(&c, c.o.sc == SC_LIMITS);
        break;
    case SC_TASK:
        rc = strcmp(c.o.action, "get") == 0
                 ? ctl_cmd_task(&c)
                 : ctl_cmd_task_list(&c, strcmp(c.o.action, "stats") == 0);
        break;
    default:
        rc = EXIT_USAGE;
    }
out:
    mc_config_free(&c.cfg);
    opts_free(&c.o);
    return rc;
}
