/* mooncakectl requeue: the command line around requeue's engine
 * (common/requeue.h, which says how each letter is requeued exactly once):
 * the filter from -k, --reason and --all, the clients, and one line per
 * letter as the engine reports it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mooncakectl.h"
#include "requeue.h"

/* A requeue run's state as the command line sees it. */
typedef struct cli_run {
    ctl *c;
    const char *dead;
    bool dry_run;
    mc_requeue_counts counts;
} cli_run;

static const char *action_name(mc_requeue_action a)
{
    switch (a) {
    case MC_REQUEUE_REQUEUED:
        return "requeued";
    case MC_REQUEUE_WOULD:
        return "would requeue";
    default:
        return "skipped";
    }
}

/* A line about one letter: text, or a JSON object with -J. */
static void describe(const cli_run *r, const mc_requeue_letter *l, char *line, size_t linelen)
{
    const char *action = action_name(l->action);
    if (r->c->o.json) {
        json_t *j =
            json_pack("{s:s, s:s, s:i, s:I}", "action", action, "dead_topic", r->dead,
                      "dead_partition", (int)l->partition, "dead_offset", (json_int_t)l->offset);
        if (j) {
            json_object_set_new(j, "key", l->key ? json_string(l->key) : json_null());
            if (l->why)
                json_object_set_new(j, "why", json_string(l->why));
        }
        char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
        snprintf(line, linelen, "%s", s ? s : "{}");
        free(s);
        json_decref(j);
        return;
    }
    snprintf(line, linelen, "%s %s (dead %d@%" PRId64 ")%s%s", action, l->key ? l->key : "-",
             (int)l->partition, l->offset, l->why ? ": " : "", l->why ? l->why : "");
}

/* Requeued letters once their transaction committed, on stdout; skipped
 * ones on stderr (stdout with -J); the ledger's letters say nothing. */
static void on_letter(void *arg, const mc_requeue_letter *l)
{
    cli_run *r = arg;
    char line[2048];
    if (l->action == MC_REQUEUE_ALREADY || l->action == MC_REQUEUE_FOREIGN)
        return;
    describe(r, l, line, sizeof line);
    if (l->action != MC_REQUEUE_SKIPPED) {
        puts(line);
        if (l->action == MC_REQUEUE_REQUEUED)
            fflush(stdout);
    } else if (r->c->o.json) {
        puts(line);
    } else if (!r->c->o.quiet) {
        fprintf(stderr, "mooncakectl: %s\n", line);
    }
}

static void on_note(void *arg, const char *line)
{
    ctl_report(((cli_run *)arg)->c, "%s", line);
}

static void print_progress(void *arg, bool final)
{
    cli_run *r = arg;
    const mc_requeue_counts *n = &r->counts;
    if (r->c->o.quiet)
        return;
    const char *verb = r->dry_run ? "would be requeued" : "requeued";
    if (!final) {
        fprintf(stderr,
                "mooncakectl: %" PRIu64 " of %" PRId64 " dead letters scanned, %" PRIu64
                " matched, %" PRIu64 " %s\n",
                n->scanned, n->total, n->matched, n->requeued + n->pending, verb);
        return;
    }
    fprintf(stderr,
            "mooncakectl: %" PRIu64 " dead letters scanned, %" PRIu64 " matched: %" PRIu64
            " %s, %" PRIu64 " requeued before, %" PRIu64
            " skipped (no task, or the router would refuse it)%s\n",
            n->scanned, n->matched, n->requeued + n->pending, verb, n->already, n->skipped,
            r->c->stopping ? "; interrupted: run it again to go on" : "");
}

int ctl_cmd_requeue(ctl *c)
{
    const ctl_opts *o = &c->o;
    if (!o->all && !o->key && !o->reason)
        return ctl_fail(EXIT_USAGE, "requeue needs --all, -k APP/ID or --reason TEXT");
    if (o->all && (o->key || o->reason))
        return ctl_fail(EXIT_USAGE, "requeue --all takes no -k or --reason");
    size_t batch = MC_REQUEUE_DEFAULT_BATCH;
    if (o->batch) {
        int64_t b;
        if (!mc_parse_int64(o->batch, 1, 1000000, &b))
            return ctl_fail(EXIT_USAGE, "--batch '%s' is not an integer in [1, 1000000]", o->batch);
        batch = (size_t)b;
    }
    mc_requeue_names names;
    mc_requeue_names_init(&c->cfg, &names);
    mc_dead_filter filter = {.all = o->all, .key = o->key, .reason = o->reason};
    cli_run run = {.c = c, .dead = names.dead, .dry_run = o->dry_run};
    mc_requeue_opts ro = {.names = &names,
                          .max_due_ms = c->cfg.max_due_ms,
                          .batch = batch,
                          .timeout_ms = TIMEOUT_MS,
                          .filter = &filter,
                          .lg = &c->lg};
    char err[1024];
    int rc = 0;
    ro.consumer = ctl_new_consumer(c, names.group, err, sizeof err);
    if (!ro.consumer) {
        rc = ctl_fail(EXIT_KAFKA, "%s", err);
        goto out;
    }
    if ((ro.dead_parts = ctl_topic_partitions(c, ro.consumer, names.dead, err, sizeof err)) == 0 ||
        (ro.tasks_parts = ctl_topic_partitions(c, ro.consumer, names.tasks, err, sizeof err)) ==
            0) {
        rc = ctl_fail(EXIT_KAFKA, "%s", err);
        goto out;
    }
    if (o->dry_run) {
        const rd_kafka_metadata_t *md = ctl_fetch_metadata(c, ro.consumer, err, sizeof err);
        if (!md) {
            rc = ctl_fail(EXIT_KAFKA, "%s", err);
            goto out;
        }
        ro.have_ledger = ctl_md_partitions(md, names.ledger) > 0;
        rd_kafka_metadata_destroy(md);
    } else {
        bool created;
        if (mc_requeue_ensure_ledger(&c->cfg, ro.consumer, TIMEOUT_MS, &created, err, sizeof err) !=
            0) {
            rc = ctl_fail(EXIT_KAFKA, "%s", err);
            goto out;
        }
        if (created)
            ctl_report(c, "created %s, the ledger of requeued letters", names.ledger);
        ro.have_ledger = true;
        if (!(ro.producer = ctl_new_producer(c, names.group, err, sizeof err))) {
            rc = ctl_fail(EXIT_KAFKA, "%s", err);
            goto out;
        }
    }
    progress pg = {.started_ms = mc_now_ms(), .print = print_progress, .arg = &run};
    ctl_hook_arg ha = {c, &pg};
    mc_requeue_hooks hooks = {
        .letter = on_letter, .note = on_note, .scan = ctl_scan_hooks(&ha), .arg = &run};
    if (mc_requeue_run(&ro, &hooks, &run.counts, err, sizeof err) != 0) {
        rc = ctl_fail(EXIT_KAFKA, "%s", err);
        goto out;
    }
    print_progress(&run, true);
    if (c->stopping)
        rc = EXIT_INTERRUPTED;
out:
    if (ro.producer)
        rd_kafka_destroy(ro.producer);
    if (ro.consumer)
        rd_kafka_destroy(ro.consumer);
    return rc;
}
