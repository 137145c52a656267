/* Serial chains, kept by the jobs role: the tasks of one app that share an
 * ordering key are called one at a time, in due order (ties in the order
 * added), each only after the previous one's final outcome.
 *
 * A chain is keyed app_id/ordering_key in `job-commands`, where clients add
 * links (AddLink) and cancel them (CancelLink). The chain holds each link's
 * task, in memory and in the compacted `chains` changelog (one record per
 * link, keyed app_id/ordering_key#link, only this role writes it), and
 * releases one at a time: the link first in due order, ahead_ms before it is
 * due, as a Submit to `tasks` in the transaction that logs the release, so a
 * kill -9 neither loses nor doubles a release. From there it is a task like
 * any other, marked with its chain and link in its metadata.
 *
 * The chain learns that the link ended from its final Result: the executor
 * and the retry role put the chain and link on every Result of such a task as
 * headers, and this role, which reads `results` for the jobs already,
 * relays a final one to the chain as a LinkDone (a repartition from the
 * task's key to the chain's, as for occurrences), in the transaction that
 * consumes the Result. Only then is the next link released: two links of a
 * chain never call at the same time, whatever is killed, because the next
 * Submit is written after the previous one's final Result was committed.
 *
 * A CancelLink of a waiting link removes it. One of a released link writes
 * a Cancel for its task, the client's way, and the chain goes on waiting
 * for its final Result: the call the cancel did not stop ends with one; the
 * wheel writes a CANCELLED one when the cancel voids the pending task
 * before it is fired (wheel.c), the executor when it recalls one fired
 * early. A released link that still never gets a final Result (a next
 * attempt the cancel voided, a task the router dead-lettered) would stop
 * its chain forever, so the chain waits for it at most its stale bound
 * (every attempt's timeout and backoff, plus a minute, as a job waits for
 * an occurrence), then goes on.
 *
 * Links are released only by punctuate, never while a command is
 * processed: a release Kafka refuses (a task near the record limit, with
 * the chain's metadata added) is then the link's own failure, dead-lettered
 * with it, not a refusal of the command that made it due. */
#include "jobs_impl.h"

#include <errno.h>

#include "chains.h"
#include "task_rules.h"

/* Links one chain may hold: each holds its task in memory and the chain is
 * scanned on every change. An AddLink beyond it is dead-lettered. */
#define MAX_LINKS 10000

/* ---- links and chains -------------------------------------------------------------- */

static void link_clear(chain_link *l)
{
    free(l->value);
    free(l->task_id);
    l->value = NULL;
    l->task_id = NULL;
}

static void chain_free(chain_entry *e)
{
    for (uint32_t i = 0; i < e->n; i++)
        link_clear(&e->links[i]);
    free(e->links);
    free(e);
}

static void free_chain_node(mc_keynode *n, void *arg)
{
    (void)arg;
    chain_free((chain_entry *)n);
}

void jobs_chains_free(job_part *p)
{
    if (p->chains) {
        mc_keymap_drain(p->chains, free_chain_node, NULL);
        mc_keymap_free(p->chains);
    }
    mc_wheel_free(p->chain_timers);
}

static void count_links(mc_keynode *n, void *arg)
{
    *(size_t *)arg += ((chain_entry *)n)->n;
}

size_t jobs_chains_links(const job_part *p)
{
    size_t n = 0;
    mc_keymap_each(p->chains, count_links, &n);
    return n;
}

static chain_entry *find_chain(job_part *p, const void *key, size_t len)
{
    return (chain_entry *)mc_keymap_find(p->chains, key, len, mc_keymap_hash(key, len));
}

static chain_entry *chain_new(job_part *p, const void *key, size_t len)
{
    chain_entry *e = calloc(1, sizeof *e + len);
    if (!e)
        return NULL;
    e->node.key_len = (uint32_t)len;
    e->node.hash = mc_keymap_hash(key, len);
    memcpy(e->key, key, len);
    mc_keymap_insert(p->chains, &e->node);
    return e;
}

static void chain_remove(job_part *p, chain_entry *e)
{
    mc_wheel_cancel(p->chain_timers, &e->timer);
    mc_keymap_remove(p->chains, &e->node);
    chain_free(e);
}

static chain_link *find_link(chain_entry *e, int64_t link)
{
    for (uint32_t i = 0; i < e->n; i++)
        if (e->links[i].link == link)
            return &e->links[i];
    return NULL;
}

/* Takes the link out of the chain (the array keeps its order). */
static void drop_link(chain_entry *e, chain_link *l)
{
    link_clear(l);
    size_t i = (size_t)(l - e->links);
    memmove(e->links + i, e->links + i + 1, (e->n - i - 1) * sizeof *l);
    e->n--;
}

/* A new link at the end, owning value. NULL on ENOMEM (value not taken). */
static chain_link *append_link(chain_entry *e, int64_t link, int64_t due_at, const char *task_id,
                               uint8_t *value, size_t value_len)
{
    char *id = strdup(task_id);
    if (!id)
        return NULL;
    if (e->n == e->cap) {
        uint32_t cap = e->cap ? e->cap * 2 : 4;
        chain_link *grown = realloc(e->links, cap * sizeof *grown);
        if (!grown) {
            free(id);
            return NULL;
        }
        e->links = grown;
        e->cap = cap;
    }
    chain_link *l = &e->links[e->n++];
    *l = (chain_link){.link = link,
                      .due_at = due_at,
                      .released_at = -1,
                      .cancelled_at = -1,
                      .stale_at = -1,
                      .value = value,
                      .value_len = value_len,
                      .task_id = id};
    return l;
}

static chain_link *released_link(chain_entry *e)
{
    for (uint32_t i = 0; i < e->n; i++)
        if (e->links[i].released_at >= 0)
            return &e->links[i];
    return NULL;
}

/* The waiting link to release next: earliest due, then first added. */
static chain_link *next_link(chain_entry *e)
{
    chain_link *best = NULL;
    for (uint32_t i = 0; i < e->n; i++) {
        chain_link *l = &e->links[i];
        if (l->released_at < 0 && (!best || l->due_at < best->due_at ||
                                   (l->due_at == best->due_at && l->link < best->link)))
            best = l;
    }
    return best;
}

/* ---- the changelog ------------------------------------------------------------------ */

/* The changelog key of a link: the chain's key, '#', the link. */
static size_t link_key(const chain_entry *e, int64_t link, char *buf, size_t buflen)
{
    int n = snprintf(buf, buflen, "%.*s#%" PRId64, (int)e->node.key_len, e->key, link);
    return n < 0 ? buflen : (size_t)n;
}

static int write_link(jobs *s, job_part *p, const chain_entry *e, const chain_link *l, mc_ctx *ctx)
{
    char key[MC_JOB_MAX_KEY_LEN + MC_MAX_ORDERING_KEY_LEN + 32];
    size_t klen = link_key(e, l->link, key, sizeof key);
    if (klen >= sizeof key)
        return -1;
    return mc_ctx_forward(ctx, s->chain_log, p->partition, key, klen, l->value, l->value_len);
}

static int write_link_tombstone(jobs *s, job_part *p, const chain_entry *e, int64_t link,
                                mc_ctx *ctx)
{
    char key[MC_JOB_MAX_KEY_LEN + MC_MAX_ORDERING_KEY_LEN + 32];
    size_t klen = link_key(e, link, key, sizeof key);
    if (klen >= sizeof key)
        return -1;
    return mc_ctx_forward(ctx, s->chain_log, p->partition, key, klen, NULL, 0);
}

/* Encodes cl as l's value (replacing it). 0, or -1. */
static int set_value(jobs *s, chain_link *l, const mc_chain_link *cl)
{
    mc_buf_reset(&s->buf);
    if (mc_encode_chain_link(cl, &s->buf) != 0)
        return -1;
    uint8_t *v = malloc(s->buf.len);
    if (!v)
        return -1;
    memcpy(v, s->buf.data, s->buf.len);
    free(l->value);
    l->value = v;
    l->value_len = s->buf.len;
    return 0;
}

static int decode_link(jobs *s, const chain_link *l, mc_chain_link *cl)
{
    char detail[256];
    if (mc_decode_chain_link(l->value, l->value_len, s->link_arena, cl, detail, sizeof detail) !=
        MC_CODEC_OK) {
        mc_log(s->logger, MC_LOG_ERROR, "held chain link unreadable", "error", detail,
               (const char *)NULL);
        return -1;
    }
    return 0;
}

/* Logs l's new state (released, cancelled) to the changelog. */
static int update_link(jobs *s, job_part *p, const chain_entry *e, chain_link *l, mc_ctx *ctx)
{
    mc_arena_reset(s->link_arena);
    mc_chain_link cl;
    if (decode_link(s, l, &cl) != 0)
        return -1;
    cl.released_at = l->released_at;
    cl.cancelled_at = l->cancelled_at;
    return set_value(s, l, &cl) == 0 ? write_link(s, p, e, l, ctx) : -1;
}

/* The link ended (its final Result, a cancel, the stale bound): it goes. */
static int end_link(jobs *s, job_part *p, chain_entry *e, chain_link *l, mc_ctx *ctx)
{
    int64_t link = l->link;
    drop_link(e, l);
    mc_gauge_add(s->links_gauge, -1);
    return write_link_tombstone(s, p, e, link, ctx);
}

/* ---- releasing ----------------------------------------------------------------------- */

/* The record a dead letter about link l names: its AddLink. */
static mc_record add_record(const jobs *s, const job_part *p, const chain_entry *e,
                            const chain_link *l)
{
    return (mc_record){.topic = s->commands_topic,
                       .partition = p->partition,
                       .offset = l->link,
                       .key = e->key,
                       .key_len = e->node.key_len};
}

/* Writes l's task to `tasks`, due at its due time or now if later, marked
 * with its chain and link. 0; 1 when Kafka refuses it for good (then it is
 * dead-lettered and ended); -1 on failure. */
static int release(jobs *s, job_part *p, chain_entry *e, chain_link *l, int64_t now, mc_ctx *ctx)
{
    mc_arena_reset(s->link_arena);
    mc_chain_link cl;
    if (decode_link(s, l, &cl) != 0)
        return -1;
    mc_task t = cl.task;
    char why[512];
    if (!mc_task_target_ok(s->targets, &t, &mc_task_avro_names, why, sizeof why)) {
        /* The allow-list changed since the link was added: the router would
         * dead-letter the task without a Result, and the chain would wait. */
        char reason[600];
        snprintf(reason, sizeof reason, "jobs: chain link not released: %s", why);
        mc_record add = add_record(s, p, e, l);
        if (mc_ctx_dead_letter(ctx, &add, reason, &cl.task) != 0 &&
            mc_ctx_dead_letter(ctx, &add, reason, NULL) != 0)
            return -1;
        return end_link(s, p, e, l, ctx) == 0 ? 1 : -1;
    }
    char link_text[24];
    snprintf(link_text, sizeof link_text, "%" PRId64, l->link);
    mc_kv *meta = mc_arena_alloc(s->link_arena, (t.n_metadata + 2) * sizeof *meta);
    if (!meta)
        return -1;
    size_t nm = 0;
    for (size_t i = 0; i < t.n_metadata; i++)
        if (strcmp(t.metadata[i].key, MC_CHAIN_METADATA) != 0 &&
            strcmp(t.metadata[i].key, MC_LINK_METADATA) != 0)
            meta[nm++] = t.metadata[i];
    meta[nm++] = (mc_kv){MC_CHAIN_METADATA, cl.ordering_key};
    meta[nm++] = (mc_kv){MC_LINK_METADATA, link_text};
    t.metadata = meta;
    t.n_metadata = nm;
    t.attempt = 1;
    if (t.due_at < now)
        t.due_at = now; /* its turn came after its due time: it is due now */
    mc_command c = {.kind = MC_CMD_SUBMIT, .submit = t};
    int rc = jobs_write_command(s, &c, ctx);
    if (rc == MC_FORWARD_REFUSED) {
        mc_record add = add_record(s, p, e, l);
        if (mc_ctx_dead_letter(ctx, &add,
                               "jobs: Kafka refuses the chain link's task (larger than a record "
                               "may be); the chain goes on without it",
                               &cl.task) != 0 &&
            mc_ctx_dead_letter(ctx, &add, "jobs: Kafka refuses the chain link's task", NULL) != 0)
            return -1;
        return end_link(s, p, e, l, ctx) == 0 ? 1 : -1;
    }
    if (rc != 0)
        return -1;
    /* Due already (its turn came late), its call waits on this commit, not
     * on the commit interval; one released ahead of its time does not. */
    if (t.due_at <= now)
        mc_ctx_request_commit_now(ctx);
    l->released_at = now;
    l->stale_at = t.due_at + jobs_stale_bound(t.has_retry, &t.retry, t.callback.timeout_ms, s->cfg);
    mc_counter_add(s->links_released, 1);
    return update_link(s, p, e, l, ctx);
}

/* When the chain next needs attention; -1: never (it holds nothing). */
static int64_t chain_action_at(const jobs *s, chain_entry *e)
{
    chain_link *r = released_link(e);
    if (r)
        return r->stale_at;
    chain_link *n = next_link(e);
    return n ? n->due_at - s->ahead_ms : -1;
}

static int chain_arm(jobs *s, job_part *p, chain_entry *e, int64_t now, mc_ctx *ctx)
{
    mc_wheel_cancel(p->chain_timers, &e->timer);
    int64_t t = chain_action_at(s, e);
    if (t < 0)
        return 0;
    if (t < now)
        t = now;
    if (mc_wheel_add(p->chain_timers, &e->timer, t) != 0)
        return -1;
    mc_ctx_wakeup_at(ctx, t);
    return 0;
}

/* Does what the chain needs at now: gives up on a released link past its
 * stale bound, releases the next link (may_release: only from punctuate)
 * when none is released and it is within ahead_ms of its due time, sets the
 * timer; a chain left empty goes. 0, or -1. */
static int chain_attend(jobs *s, job_part *p, chain_entry *e, int64_t now, bool may_release,
                        mc_ctx *ctx)
{
    for (;;) {
        chain_link *r = released_link(e);
        if (r && r->stale_at <= now) {
            char chain[MC_JOB_MAX_KEY_LEN + MC_MAX_ORDERING_KEY_LEN], link[24];
            snprintf(chain, sizeof chain, "%.*s", (int)e->node.key_len, e->key);
            snprintf(link, sizeof link, "%" PRId64, r->link);
            mc_log(s->logger, MC_LOG_WARN,
                   "chain link given up on after its stale bound without a final Result; the "
                   "chain goes on",
                   "chain", chain, "link", link, (const char *)NULL);
            mc_counter_add(s->links_stale, 1);
            if (end_link(s, p, e, r, ctx) != 0)
                return -1;
            continue;
        }
        if (r)
            break;
        chain_link *n = next_link(e);
        if (!may_release || !n || n->due_at - s->ahead_ms > now)
            break;
        int rc = release(s, p, e, n, now, ctx);
        if (rc < 0)
            return -1;
        if (rc == 0)
            break; /* released; refused (1): try the one after it */
    }
    if (e->n == 0) {
        chain_remove(p, e);
        return 0;
    }
    return chain_arm(s, p, e, now, ctx);
}

int jobs_chains_punctuate(jobs *s, job_part *p, int64_t now, size_t *budget, mc_ctx *ctx)
{
    mc_timer *due[256];
    while (*budget > 0) {
        size_t want = *budget < 256 ? *budget : 256;
        size_t got = mc_wheel_advance(p->chain_timers, now, due, want);
        for (size_t k = 0; k < got; k++)
            if (chain_attend(s, p, MC_TIMER_OWNER(due[k], chain_entry, timer), now, true, ctx) != 0)
                return -1;
        *budget -= got;
        if (got < want)
            break;
    }
    return 0;
}

/* ---- commands ------------------------------------------------------------------------ */

static int add_link(jobs *s, job_part *p, const mc_record *r, const mc_add_link *a, mc_ctx *ctx)
{
    int64_t now = mc_ctx_now_ms(ctx);
    char why[512];
    if (!mc_ordering_key_ok(a->ordering_key, "ordering_key", why, sizeof why) ||
        !mc_task_ok(&a->task, now, s->cfg->max_due_ms, &mc_task_avro_names, why, sizeof why) ||
        !mc_task_target_ok(s->targets, &a->task, &mc_task_avro_names, why, sizeof why)) {
        char reason[600];
        snprintf(reason, sizeof reason, "jobs: invalid chain link: %s", why);
        return mc_ctx_dead_letter(ctx, r, reason, NULL);
    }
    chain_entry *e = find_chain(p, r->key, r->key_len);
    if (!e && !(e = chain_new(p, r->key, r->key_len)))
        return -1;
    /* Added again while it waits: the newer one replaces it. A released
     * one runs as it was; the newer one waits its turn behind it. */
    for (uint32_t i = 0; i < e->n; i++) {
        chain_link *l = &e->links[i];
        if (l->released_at < 0 && strcmp(l->task_id, a->task.task_id) == 0) {
            if (end_link(s, p, e, l, ctx) != 0)
                return -1;
            break;
        }
    }
    if (e->n >= MAX_LINKS) {
        char reason[200];
        snprintf(reason, sizeof reason,
                 "jobs: the chain holds %d links, the most it may; add this one when some have "
                 "run",
                 MAX_LINKS);
        return mc_ctx_dead_letter(ctx, r, reason, NULL);
    }
    mc_chain_link cl = {.ordering_key = a->ordering_key,
                        .link = r->offset,
                        .released_at = -1,
                        .cancelled_at = -1,
                        .task = a->task};
    cl.task.attempt = 1;
    chain_link tmp = {0};
    if (set_value(s, &tmp, &cl) != 0)
        return -1;
    chain_link *l =
        append_link(e, r->offset, a->task.due_at, a->task.task_id, tmp.value, tmp.value_len);
    if (!l) {
        free(tmp.value);
        return -1;
    }
    mc_gauge_add(s->links_gauge, 1);
    mc_counter_add(s->links_added, 1);
    if (write_link(s, p, e, l, ctx) != 0)
        return -1;
    return chain_attend(s, p, e, now, false, ctx);
}

static int cancel_link(jobs *s, job_part *p, const mc_record *r, const mc_cancel_link *c,
                       mc_ctx *ctx)
{
    int64_t now = mc_ctx_now_ms(ctx);
    chain_entry *e = find_chain(p, r->key, r->key_len);
    if (!e)
        return 0; /* ended already, or never added: like a Cancel of an unknown task */
    /* Every link of that task: a waiting one goes; the released one is
     * cancelled the client's way, and its final Result still awaited (the
     * wheel writes a CANCELLED one when the cancel voids it unfired). */
    for (uint32_t i = 0; i < e->n;) {
        chain_link *l = &e->links[i];
        if (strcmp(l->task_id, c->task_id) != 0) {
            i++;
            continue;
        }
        if (l->released_at < 0) {
            mc_counter_add(s->links_cancelled, 1);
            if (end_link(s, p, e, l, ctx) != 0)
                return -1;
            continue;
        }
        i++;
        if (l->cancelled_at >= 0)
            continue;
        mc_command cancel = {.kind = MC_CMD_CANCEL, .cancel = {c->app_id, c->task_id, now}};
        if (jobs_write_command(s, &cancel, ctx) != 0)
            return -1;
        l->cancelled_at = now;
        mc_counter_add(s->links_cancelled, 1);
        if (update_link(s, p, e, l, ctx) != 0)
            return -1;
    }
    return chain_attend(s, p, e, now, false, ctx);
}

static int link_done(jobs *s, job_part *p, const mc_record *r, const mc_link_done *d, mc_ctx *ctx)
{
    chain_entry *e = find_chain(p, r->key, r->key_len);
    chain_link *l = e ? find_link(e, d->link) : NULL;
    if (!l || l->released_at < 0 || strcmp(l->task_id, d->task_id) != 0)
        return 0; /* given up on already (stale), a Result relayed twice, or not this link's */
    mc_counter_add(s->links_done, 1);
    if (end_link(s, p, e, l, ctx) != 0)
        return -1;
    return chain_attend(s, p, e, mc_ctx_now_ms(ctx), false, ctx);
}

int jobs_chain_command(jobs *s, job_part *p, const mc_record *r, const mc_job_command *c,
                       mc_ctx *ctx)
{
    switch (c->kind) {
    case MC_JOBCMD_ADD_LINK:
        return add_link(s, p, r, &c->add_link, ctx);
    case MC_JOBCMD_CANCEL_LINK:
        return cancel_link(s, p, r, &c->cancel_link, ctx);
    case MC_JOBCMD_LINK_DONE:
        return link_done(s, p, r, &c->link_done, ctx);
    default:
        return 0;
    }
}

/* ---- the relay ------------------------------------------------------------------------ */

int jobs_chain_relay(jobs *s, const mc_record *r, mc_ctx *ctx)
{
    const char *chain;
    size_t chain_len;
    int64_t link;
    mc_result res;
    if (!r->value || !mc_chain_result_link(r, &chain, &chain_len, &link) ||
        !jobs_final_result(s, r, &res))
        return 0;
    char ordering_key[MC_MAX_ORDERING_KEY_LEN + 1];
    memcpy(ordering_key, chain, chain_len);
    ordering_key[chain_len] = '\0';
    mc_job_command c = {.kind = MC_JOBCMD_LINK_DONE};
    c.link_done = (mc_link_done){.app_id = res.app_id,
                                 .ordering_key = ordering_key,
                                 .task_id = res.task_id,
                                 .link = link,
                                 .outcome = jobs_relayed_outcome(res.outcome),
                                 .finished_at = res.finished_at};
    int rc = jobs_relay_command(s, res.app_id, ordering_key, &c, ctx);
    if (rc <= 0)
        return rc;
    mc_counter_add(s->links_relayed, 1);
    mc_ctx_request_commit_now(ctx); /* the chain's next link waits on it */
    return 0;
}

/* ---- restore --------------------------------------------------------------------------- */

/* The chain key and link of a changelog key "<app>/<ordering key>#<link>". */
static bool split_link_key(const mc_record *m, size_t *chain_len, int64_t *link)
{
    const char *k = m->key;
    size_t i = m->key_len;
    size_t digits = 0;
    while (i > 0 && k[i - 1] >= '0' && k[i - 1] <= '9')
        i--, digits++;
    if (digits == 0 || digits > 19 || i < 2 || k[i - 1] != '#')
        return false;
    char text[20];
    memcpy(text, k + i, digits);
    text[digits] = '\0';
    *link = strtoll(text, NULL, 10);
    *chain_len = i - 1;
    return true;
}

void jobs_chain_restore_record(jobs *s, job_part *p, const mc_record *m)
{
    size_t chain_len;
    int64_t link;
    if (!m->key || !split_link_key(m, &chain_len, &link))
        return;
    chain_entry *e = find_chain(p, m->key, chain_len);
    chain_link *old = e ? find_link(e, link) : NULL;
    if (old) {
        drop_link(e, old);
        mc_gauge_add(s->links_gauge, -1);
    }
    if (!m->value) {
        if (e && e->n == 0)
            chain_remove(p, e);
        return;
    }
    mc_arena_reset(s->link_arena);
    mc_chain_link cl;
    char detail[256];
    uint8_t *v = NULL;
    if (mc_decode_chain_link(m->value, m->value_len, s->link_arena, &cl, detail, sizeof detail) !=
            MC_CODEC_OK ||
        !(v = malloc(m->value_len)) || (!e && !(e = chain_new(p, m->key, chain_len)))) {
        /* Only we write it: a bug or tampering. Say so loudly; the rest of
         * the partition holds. */
        char off[24];
        snprintf(off, sizeof off, "%" PRId64, m->offset);
        mc_log(s->logger, MC_LOG_ERROR, "chains changelog record skipped", "topic", s->chains_topic,
               "offset", off, "error", v ? "out of memory" : detail, (const char *)NULL);
        free(v);
        return;
    }
    memcpy(v, m->value, m->value_len);
    chain_link *l = append_link(e, link, cl.task.due_at, cl.task.task_id, v, m->value_len);
    if (!l) {
        free(v);
        if (e->n == 0)
            chain_remove(p, e);
        return;
    }
    l->released_at = cl.released_at;
    l->cancelled_at = cl.cancelled_at;
    if (l->released_at >= 0) {
        int64_t due = cl.task.due_at > l->released_at ? cl.task.due_at : l->released_at;
        l->stale_at = due + jobs_stale_bound(cl.task.has_retry, &cl.task.retry,
                                             cl.task.callback.timeout_ms, s->cfg);
    }
    mc_gauge_add(s->links_gauge, 1);
    mc_counter_add(s->restored, 1);
}

typedef struct arming {
    jobs *s;
    job_part *p;
    mc_ctx *ctx;
    int64_t now;
    bool failed;
} arming;

static void arm_chain(mc_keynode *n, void *arg)
{
    arming *a = arg;
    if (chain_arm(a->s, a->p, (chain_entry *)n, a->now, a->ctx) != 0)
        a->failed = true;
}

int jobs_chains_arm(jobs *s, job_part *p, int64_t now, mc_ctx *ctx)
{
    arming a = {s, p, ctx, now, false};
    mc_keymap_each(p->chains, arm_chain, &a);
    return a.failed ? -1 : 0;
}

void jobs_chains_metrics(jobs *s, mc_metrics *m)
{
    s->links_gauge = mc_metrics_gauge(m, "mooncake_chain_links", "Chain links held", NULL);
    s->links_added = mc_metrics_counter(m, "mooncake_chain_links_added_total",
                                        "Links added to serial chains", NULL);
    s->links_released = mc_metrics_counter(m, "mooncake_chain_links_released_total",
                                           "Chain links released to tasks, one at a time", NULL);
    s->links_cancelled = mc_metrics_counter(m, "mooncake_chain_links_cancelled_total",
                                            "Chain links cancelled (CancelLink)", NULL);
    s->links_done = mc_metrics_counter(m, "mooncake_chain_links_done_total",
                                       "Released chain links whose final Result arrived", NULL);
    s->links_stale = mc_metrics_counter(
        m, "mooncake_chain_links_stale_total",
        "Released chain links given up on after their stale bound without a final Result", NULL);
    s->links_relayed =
        mc_metrics_counter(m, "mooncake_chain_results_relayed_total",
                           "Final Results of chain links relayed to their chain", NULL);
}
