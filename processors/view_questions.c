/* The view's questions: the door other threads (the gateway's) ask through -
 * a queue behind an eventfd, each asker waiting for its answer - and the
 * answering on the view's own thread, which owns the table: a question waits
 * until the view's consumer has passed where its partitions ended when it
 * was asked, then is answered from the table (see view.c). */
#include "crypto.h"
#include "view_impl.h"

mc_view_door *mc_view_door_new(void)
{
    mc_view_door *d = calloc(1, sizeof *d);
    if (!d)
        return NULL;
    d->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (d->efd < 0) {
        free(d);
        return NULL;
    }
    pthread_mutex_init(&d->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&d->answered, &ca);
    pthread_condattr_destroy(&ca);
    return d;
}

static void question_free(question *q)
{
    free(q->key);
    free(q->app_id);
    free(q->after_uuid);
    free(q->asked);
    free(q->parts);
    free(q->ends);
    free(q->body);
    free(q);
}

void mc_view_door_free(mc_view_door *d)
{
    if (!d)
        return;
    while (d->queue) {
        question *q = d->queue;
        d->queue = q->next;
        question_free(q);
    }
    close(d->efd);
    pthread_cond_destroy(&d->answered);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

char *view_sentence(const char *fmt, const char *a)
{
    char buf[512];
    snprintf(buf, sizeof buf, fmt, a);
    return strdup(buf);
}

/* Queues q (owned from here on) for the view and waits for its answer. */
static int ask(mc_view_door *d, question *q, int timeout_ms, char **body)
{
    q->deadline_ms = mc_now_ms() + timeout_ms;
    pthread_mutex_lock(&d->lock);
    if (!d->open) {
        pthread_mutex_unlock(&d->lock);
        question_free(q);
        *body = strdup("the view role does not run in this process");
        return 503;
    }
    q->next = d->queue;
    d->queue = q;
    uint64_t one = 1;
    if (write(d->efd, &one, sizeof one) < 0) {
        /* The counter is full: the view has that many to read already. */
    }
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    /* The view answers at its deadline; a little longer here covers its turn. */
    int64_t wait_ms = timeout_ms + 1000;
    until.tv_sec += wait_ms / 1000;
    until.tv_nsec += (wait_ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (!q->done)
        if (pthread_cond_timedwait(&d->answered, &d->lock, &until) != 0)
            break;
    int status;
    if (q->done) {
        status = q->status;
        *body = q->body;
        q->body = NULL;
        /* Unlinked by the view before it answered. */
        question_free(q);
    } else {
        status = 503;
        *body = strdup("the view did not answer in time");
        /* Still queued: take it back; else the view frees it when done. */
        question **pp = &d->queue;
        while (*pp && *pp != q)
            pp = &(*pp)->next;
        if (*pp) {
            *pp = q->next;
            question_free(q);
        } else {
            q->abandoned = true;
        }
    }
    pthread_mutex_unlock(&d->lock);
    return status;
}

/* A Q_TASK question, for its stored bytes or not. */
static int ask_task(mc_view_door *d, const char *app_id, const char *task_id, bool stored,
                    int timeout_ms, char **body)
{
    *body = NULL;
    question *q = calloc(1, sizeof *q);
    size_t need = mc_task_key(app_id, task_id, NULL, 0) + 1;
    if (!q || !(q->key = malloc(need))) {
        free(q);
        return 500;
    }
    q->kind = Q_TASK;
    q->stored = stored;
    q->key_len = mc_task_key(app_id, task_id, q->key, need);
    return ask(d, q, timeout_ms, body);
}

int mc_view_ask_task(mc_view_door *d, const char *app_id, const char *task_id, int timeout_ms,
                     char **body)
{
    return ask_task(d, app_id, task_id, false, timeout_ms, body);
}

int mc_view_ask_stored_task(mc_view_door *d, const char *app_id, const char *task_id,
                            int timeout_ms, char **body)
{
    return ask_task(d, app_id, task_id, true, timeout_ms, body);
}

int mc_view_ask_tasks(mc_view_door *d, const mc_view_filter *f, bool stats,
                      const int32_t *partitions, size_t n, int timeout_ms, char **body)
{
    *body = NULL;
    question *q = calloc(1, sizeof *q);
    if (!q)
        return 500;
    q->kind = stats ? Q_STATS : Q_LIST;
    q->filter = *f;
    q->app_id = strdup(f->app_id);
    q->after_uuid = f->has_after ? strdup(f->after_uuid) : NULL;
    q->asked = n ? malloc(n * sizeof *q->asked) : NULL;
    if (!q->app_id || (f->has_after && !q->after_uuid) || (n && !q->asked)) {
        question_free(q);
        return 500;
    }
    q->filter.app_id = q->app_id;
    q->filter.after_uuid = q->after_uuid;
    if (n)
        memcpy(q->asked, partitions, n * sizeof *partitions);
    q->n_asked = n;
    return ask(d, q, timeout_ms, body);
}

/* ---- questions -------------------------------------------------------------------- */

void view_finish_question(view *v, question *q, int status, char *body)
{
    q->status = status;
    q->body = body;
    pthread_mutex_lock(&v->door->lock);
    if (q->abandoned) {
        question_free(q);
    } else {
        q->done = true;
        pthread_cond_broadcast(&v->door->answered);
    }
    pthread_mutex_unlock(&v->door->lock);
}

/* The partitions a question is answered for: its key's, or those it asked
 * about that the view holds (all it holds when it named none). false when
 * a task's partition is not held here, or on ENOMEM. */
static bool choose_parts(view *v, question *q)
{
    if (q->kind == Q_TASK) {
        int32_t p = v->partitions > 0 ? mc_key_partition(q->key, q->key_len, v->partitions) : -1;
        if (p < 0 || !view_part_of(v, p) || !(q->parts = malloc(sizeof *q->parts)))
            return false;
        q->parts[0] = p;
        q->n_parts = 1;
    } else {
        size_t held = mc_part_table_count(&v->parts);
        size_t cap = q->n_asked ? q->n_asked : held;
        q->parts = malloc((cap ? cap : 1) * sizeof *q->parts);
        if (!q->parts)
            return false;
        view_part *p;
        if (!q->n_asked) {
            for (int32_t id = 0; q->n_parts < cap && (p = mc_part_table_next(&v->parts, &id)); id++)
                q->parts[q->n_parts++] = id;
        }
        for (size_t i = 0; i < q->n_asked; i++)
            if (view_part_of(v, q->asked[i]))
                q->parts[q->n_parts++] = q->asked[i];
    }
    q->ends = calloc(q->n_parts * N_INPUTS + 1, sizeof *q->ends);
    return q->ends != NULL;
}

/* Where each input partition of the question ends now, in one request per
 * broker and handle: the view answers once past them. */
static bool read_ends(view *v, question *q, mc_ctx *ctx)
{
    if (!q->n_parts)
        return true;
    char err[256];
    /* `tasks` by its high watermark: the gateway's writes are not
     * transactional, and one acknowledged after a transaction opened on the
     * partition (the jobs role's) lies past the last stable offset. The
     * view passes it once that transaction ends. The others are written
     * only in transactions: their last stable offsets. */
    int64_t *high = malloc(q->n_parts * sizeof *high);
    bool ok = high &&
              mc_ctx_stable_ends(ctx, view_inputs, N_INPUTS, q->parts, q->n_parts, q->ends,
                                 END_OFFSET_TIMEOUT_MS, err, sizeof err) == 0 &&
              mc_ctx_high_watermarks(ctx, view_inputs[IN_TASKS], q->parts, q->n_parts, high,
                                     END_OFFSET_TIMEOUT_MS, err, sizeof err) == 0;
    if (ok) {
        for (size_t i = 0; i < q->n_parts; i++)
            if (high[i] > q->ends[i * N_INPUTS + IN_TASKS])
                q->ends[i * N_INPUTS + IN_TASKS] = high[i];
    } else {
        mc_log(v->logger, MC_LOG_WARN, "cannot read where a partition ends", "error",
               high ? err : "out of memory", (const char *)NULL);
    }
    free(high);
    return ok;
}

static bool caught_up(view *v, const question *q, mc_ctx *ctx)
{
    for (size_t p = 0; p < q->n_parts; p++)
        for (int i = 0; i < N_INPUTS; i++) {
            int64_t end = q->ends[p * N_INPUTS + i];
            if (end > 0 && mc_ctx_position(ctx, v->topics[i], q->parts[p]) < end)
                return false;
        }
    return true;
}

/* Whether the view still holds every partition the question waits for. */
bool view_still_held(view *v, const question *q)
{
    for (size_t i = 0; i < q->n_parts; i++)
        if (!view_part_of(v, q->parts[i]))
            return false;
    return true;
}

/* The newest version's StoredTask bytes in base64: what a reschedule
 * submits again. Never leaves the process but to this process's gateway (or
 * to the one that forwarded the reschedule, as its outcome only). */
static void answer_stored(view *v, question *q, const mc_view_task *t)
{
    if (!t->task) {
        view_finish_question(
            v, q, 409,
            view_sentence("the view does not keep task '%.400s' itself (larger than 64 KiB, "
                          "or only cancelled or refused): submit it again yourself",
                          q->key));
        return;
    }
    size_t n = MC_BASE64_LEN(t->task_len);
    char *body = malloc(n + 1);
    if (body)
        mc_base64_encode(t->task, t->task_len, body, n + 1);
    view_finish_question(v, q, body ? 200 : 500, body ? body : strdup("out of memory"));
}

static void answer_task(view *v, question *q, mc_ctx *ctx)
{
    view_part *p = view_part_of(v, q->parts[0]);
    mc_view_task *t = p ? view_find_task(p, q->key, q->key_len) : NULL;
    if (!t) {
        view_finish_question(
            v, q, 404,
            view_sentence("no task '%.400s' (never submitted, or ended longer ago than the "
                          "view's history)",
                          q->key));
        return;
    }
    if (q->stored) {
        answer_stored(v, q, t);
        return;
    }
    json_t *j = mc_view_task_json(t, p->wheel_position, mc_ctx_now_ms(ctx));
    char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    view_finish_question(v, q, body ? 200 : 500, body);
}

/* The app's calls, failures and dead letters of the last hour in the
 * question's partitions into j's "lastHour", and its minutes into
 * "minutes". */
static void last_hour(view *v, const question *q, int64_t now, json_t *j)
{
    char key[MC_VIEW_STATS_KEY_MAX];
    size_t key_len = mc_view_stats_key(q->app_id, strlen(q->app_id), key);
    uint64_t sum[3] = {0, 0, 0};
    mc_view_minute minutes[MC_VIEW_STATS_MINUTES];
    memset(minutes, 0, sizeof minutes);
    if (key_len) {
        uint32_t hash = mc_keymap_hash(key, key_len);
        for (size_t i = 0; i < q->n_parts; i++) {
            view_part *p = view_part_of(v, q->parts[i]);
            const mc_view_app_stats *a =
                p ? (const mc_view_app_stats *)mc_keymap_find(p->apps, key, key_len, hash) : NULL;
            uint64_t one[3];
            if (a && mc_view_app_stats_sum(a, now, one)) {
                for (int k = 0; k < 3; k++)
                    sum[k] += one[k];
                mc_view_app_stats_add_to(a, now, minutes);
            }
        }
    }
    (void)v;
    json_object_set_new(j, "lastHour",
                        json_pack("{s:I,s:I,s:I}", "calls", (json_int_t)sum[0], "failures",
                                  (json_int_t)sum[1], "deadLetters", (json_int_t)sum[2]));
    json_object_set_new(j, "minutes", mc_view_minutes_json(minutes, now));
}

/* GET /api/tasks and /api/stats, for the question's partitions: each task
 * of them is offered to one selection. */
static void answer_tasks(view *v, question *q, mc_ctx *ctx)
{
    int64_t now = mc_ctx_now_ms(ctx);
    mc_view_selection sel;
    mc_view_selection_init(&sel, &q->filter, now, q->kind == Q_STATS);
    size_t app_len = strlen(q->app_id);
    for (size_t i = 0; i < q->n_parts && !sel.failed; i++) {
        view_part *p = view_part_of(v, q->parts[i]);
        app_index *a = view_index_of(p, q->app_id, app_len, false);
        if (a && mc_view_selection_offer_index(&sel, &a->ix, p->wheel_position) != 0)
            sel.failed = true;
    }
    json_t *j = NULL;
    if (!sel.failed) {
        j = q->kind == Q_LIST ? mc_view_selection_list_json(&sel) : json_object();
        if (j && q->kind == Q_STATS) {
            json_object_set_new(j, "tasks", mc_view_selection_counts_json(&sel));
            last_hour(v, q, now, j);
        }
    }
    mc_view_selection_free(&sel);
    json_t *parts = json_array();
    for (size_t i = 0; i < q->n_parts; i++)
        json_array_append_new(parts, json_integer(q->parts[i]));
    if (j) {
        json_object_set_new(j, "partitions", parts);
        /* The asker compares: a count it has not caught up with means a
         * growth, whose new partitions it did not ask about. */
        json_object_set_new(j, "partitionCount", json_integer(v->partitions));
    } else {
        json_decref(parts);
    }
    char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    view_finish_question(v, q, body ? 200 : 500, body ? body : strdup("out of memory"));
}

static void answer(view *v, question *q, mc_ctx *ctx)
{
    mc_counter_add(v->answered, 1);
    if (q->kind == Q_TASK)
        answer_task(v, q, ctx);
    else
        answer_tasks(v, q, ctx);
}

/* Answers what can be answered; the rest keep waiting. */
void view_look_at_waiting(view *v, mc_ctx *ctx)
{
    int64_t now = mc_ctx_now_ms(ctx);
    question **pp = &v->waiting;
    while (*pp) {
        question *q = *pp;
        bool ready = caught_up(v, q, ctx);
        if (!ready && now < q->deadline_ms) {
            pp = &q->next;
            continue;
        }
        *pp = q->next;
        if (ready) {
            answer(v, q, ctx);
        } else {
            mc_counter_add(v->behind, 1);
            view_finish_question(v, q, 503,
                                 view_sentence("the view is behind its input%s; ask again", ""));
        }
    }
    if (v->waiting)
        mc_ctx_wakeup_at(ctx, now + QUESTION_POLL_MS);
}

int view_on_questions(void *arg, int fd, int revents, mc_ctx *ctx)
{
    (void)revents;
    view *v = arg;
    uint64_t n;
    if (read(fd, &n, sizeof n) < 0) {
        /* Nothing new: another turn took them. */
    }
    pthread_mutex_lock(&v->door->lock);
    question *fresh = v->door->queue;
    v->door->queue = NULL;
    pthread_mutex_unlock(&v->door->lock);
    while (fresh) {
        question *q = fresh;
        fresh = q->next;
        if (!choose_parts(v, q)) {
            view_finish_question(
                v, q, q->kind == Q_TASK ? 421 : 500,
                q->kind == Q_TASK
                    ? view_sentence("this view instance does not hold the partition of '%.400s'",
                                    q->key)
                    : strdup("out of memory"));
            continue;
        }
        if (mc_ctx_now_ms(ctx) >= q->deadline_ms) {
            /* Waited while the view was busy (a restore): its asker has
             * given up, or is about to. */
            mc_counter_add(v->behind, 1);
            view_finish_question(v, q, 503, view_sentence("the view was busy%s; ask again", ""));
            continue;
        }
        if (!read_ends(v, q, ctx)) {
            view_finish_question(
                v, q, 503,
                view_sentence("the broker did not say where the view's input ends%s", ""));
            continue;
        }
        q->next = v->waiting;
        v->waiting = q;
    }
    view_look_at_waiting(v, ctx);
    return 0;
}
