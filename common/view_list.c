/* Listing and counting an app's tasks (see view_list.h). */
#include "view_list.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mc_view_filter mc_view_filter_all(const char *app_id)
{
    return (mc_view_filter){
        .app_id = app_id,
        .due_from = INT64_MIN,
        .due_to = INT64_MAX,
        .limit = MC_VIEW_LIST_DEFAULT,
    };
}

int mc_view_state_parse(const char *name)
{
    for (int s = 0; s < MC_VIEW_N_STATES; s++)
        if (strcmp(name, mc_view_state_name((mc_view_state)s)) == 0)
            return s;
    return -1;
}

char *mc_view_cursor_format(int64_t due_at, const char *uuid, size_t uuid_len)
{
    char head[24];
    int n = snprintf(head, sizeof head, "%" PRId64 ":", due_at);
    char *c = malloc((size_t)n + uuid_len + 1);
    if (!c)
        return NULL;
    memcpy(c, head, (size_t)n);
    memcpy(c + n, uuid, uuid_len);
    c[(size_t)n + uuid_len] = '\0';
    return c;
}

bool mc_view_cursor_parse(const char *text, mc_view_filter *f)
{
    const char *colon = strchr(text, ':');
    if (!colon || colon == text || !colon[1] || colon - text > 20)
        return false;
    char digits[24];
    memcpy(digits, text, (size_t)(colon - text));
    digits[colon - text] = '\0';
    char *end;
    errno = 0;
    long long due = strtoll(digits, &end, 10);
    if (*end || errno || (digits[0] != '-' && (digits[0] < '0' || digits[0] > '9')))
        return false;
    f->has_after = true;
    f->after_due = due;
    f->after_uuid = colon + 1;
    return true;
}

static int cmp_uuid(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen > blen) - (alen < blen);
}

/* ---- an app's tasks in order ------------------------------------------------------ */

/* Order in an index: by the due time it was indexed under, then key (all
 * keys of one index share the "app/" before the uuid). */
static int cmp_indexed(const mc_view_task *a, const mc_view_task *b)
{
    if (a->indexed_due != b->indexed_due)
        return a->indexed_due < b->indexed_due ? -1 : 1;
    return cmp_uuid(a->key, a->node.key_len, b->key, b->node.key_len);
}

static mc_view_task *rotate_up_lower(mc_view_task *t)
{
    mc_view_task *l = t->lower;
    t->lower = l->higher;
    l->higher = t;
    return l;
}

static mc_view_task *rotate_up_higher(mc_view_task *t)
{
    mc_view_task *h = t->higher;
    t->higher = h->lower;
    h->lower = t;
    return h;
}

/* The heap order, which keeps the treap's depth logarithmic only if it is
 * random with respect to the order: not from the key, which a client
 * chooses (keys made to share a hash would make the treap a list, and its
 * recursion as deep as the app's tasks), but from where the task lives in
 * memory, mixed (splitmix64's finaliser). */
static uint64_t priority(const mc_view_task *t)
{
    uint64_t x = (uint64_t)(uintptr_t)t;
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static mc_view_task *insert_under(mc_view_task *root, mc_view_task *t)
{
    if (!root)
        return t;
    if (cmp_indexed(t, root) < 0) {
        root->lower = insert_under(root->lower, t);
        if (priority(root->lower) > priority(root))
            root = rotate_up_lower(root);
    } else {
        root->higher = insert_under(root->higher, t);
        if (priority(root->higher) > priority(root))
            root = rotate_up_higher(root);
    }
    return root;
}

/* Joins two treaps, every task of lower before every task of higher. */
static mc_view_task *join(mc_view_task *lower, mc_view_task *higher)
{
    if (!lower || !higher)
        return lower ? lower : higher;
    if (priority(lower) > priority(higher)) {
        lower->higher = join(lower->higher, higher);
        return lower;
    }
    higher->lower = join(lower, higher->lower);
    return higher;
}

static mc_view_task *remove_under(mc_view_task *root, mc_view_task *t)
{
    if (!root)
        return NULL;
    if (root == t)
        return join(t->lower, t->higher);
    if (cmp_indexed(t, root) < 0)
        root->lower = remove_under(root->lower, t);
    else
        root->higher = remove_under(root->higher, t);
    return root;
}

void mc_view_index_insert(mc_view_index *ix, mc_view_task *t)
{
    t->lower = t->higher = NULL;
    t->indexed_due = t->due_at;
    t->indexed = true;
    ix->root = insert_under(ix->root, t);
    ix->n++;
}

void mc_view_index_remove(mc_view_index *ix, mc_view_task *t)
{
    ix->root = remove_under(ix->root, t);
    t->lower = t->higher = NULL;
    t->indexed = false;
    ix->n--;
}

/* Whether t comes before where a walk starts. */
static bool before_start(const mc_view_task *t, int64_t from_due, const char *after_uuid)
{
    if (t->indexed_due != from_due)
        return t->indexed_due < from_due;
    if (!after_uuid)
        return false;
    const char *slash = memchr(t->key, '/', t->node.key_len);
    size_t off = slash ? (size_t)(slash - t->key) + 1 : 0;
    return cmp_uuid(t->key + off, t->node.key_len - off, after_uuid, strlen(after_uuid)) <= 0;
}

typedef struct walk_stack {
    mc_view_task **at;
    size_t n, cap;
} walk_stack;

static bool push(walk_stack *st, mc_view_task *t)
{
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 64;
        mc_view_task **grown = realloc(st->at, cap * sizeof *grown);
        if (!grown)
            return false;
        st->at = grown;
        st->cap = cap;
    }
    st->at[st->n++] = t;
    return true;
}

int mc_view_index_walk(const mc_view_index *ix, int64_t from_due, const char *after_uuid,
                       bool (*fn)(mc_view_task *t, void *arg), void *arg)
{
    walk_stack st = {0};
    int rc = 0;
    /* Down to the first task at or after the start: the path's tasks at or
     * after it wait on the stack, each before the ones under it. */
    for (mc_view_task *t = ix->root; t;) {
        if (before_start(t, from_due, after_uuid)) {
            t = t->higher;
        } else if (!push(&st, t)) {
            rc = -1;
            break;
        } else {
            t = t->lower;
        }
    }
    while (rc == 0 && st.n) {
        mc_view_task *t = st.at[--st.n];
        if (!fn(t, arg))
            break;
        for (mc_view_task *c = t->higher; c; c = c->lower)
            if (!push(&st, c)) {
                rc = -1;
                break;
            }
    }
    free(st.at);
    return rc;
}

/* ---- one instance's selection ---------------------------------------------------- */

void mc_view_selection_init(mc_view_selection *s, const mc_view_filter *f, int64_t now_ms,
                            bool counting)
{
    *s = (mc_view_selection){
        .filter = f, .app_len = strlen(f->app_id), .now_ms = now_ms, .counting = counting};
}

void mc_view_selection_free(mc_view_selection *s)
{
    free(s->heap);
    s->heap = NULL;
    s->n = 0;
}

static bool utf8_ok(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        unsigned c = *p++;
        size_t more = c < 0x80             ? 0
                      : (c & 0xE0) == 0xC0 ? 1
                      : (c & 0xF0) == 0xE0 ? 2
                      : (c & 0xF8) == 0xF0 ? 3
                                           : 4;
        if (more == 4 || (more && c < 0xC2) || c > 0xF4 || (size_t)(end - p) < more)
            return false;
        unsigned cp = more ? c & (0x3F >> more) : c;
        for (size_t i = 0; i < more; i++, p++) {
            if ((*p & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (*p & 0x3F);
        }
        if (!c || (more == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
            (more == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
            return false;
    }
    return true;
}

/* The uuid of a task: its key after "app/". */
static const char *uuid_of(const mc_view_task *t, size_t app_len, size_t *len)
{
    *len = t->node.key_len - app_len - 1;
    return t->key + app_len + 1;
}

/* Order of two tasks of one app: by due time, then uuid. */
static int cmp_tasks(const mc_view_task *a, const mc_view_task *b, size_t app_len)
{
    if (a->due_at != b->due_at)
        return a->due_at < b->due_at ? -1 : 1;
    size_t al, bl;
    const char *au = uuid_of(a, app_len, &al), *bu = uuid_of(b, app_len, &bl);
    return cmp_uuid(au, al, bu, bl);
}

static void sift_down(mc_view_selection *s, size_t i)
{
    for (;;) {
        size_t big = i, l = 2 * i + 1, r = l + 1;
        if (l < s->n && cmp_tasks(s->heap[l].task, s->heap[big].task, s->app_len) > 0)
            big = l;
        if (r < s->n && cmp_tasks(s->heap[r].task, s->heap[big].task, s->app_len) > 0)
            big = r;
        if (big == i)
            return;
        mc_view_pick tmp = s->heap[i];
        s->heap[i] = s->heap[big];
        s->heap[big] = tmp;
        i = big;
    }
}

static void sift_up(mc_view_selection *s, size_t i)
{
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (cmp_tasks(s->heap[i].task, s->heap[up].task, s->app_len) <= 0)
            return;
        mc_view_pick tmp = s->heap[i];
        s->heap[i] = s->heap[up];
        s->heap[up] = tmp;
        i = up;
    }
}

static bool after_cursor(const mc_view_filter *f, const mc_view_task *t, size_t app_len)
{
    if (!f->has_after || t->due_at > f->after_due)
        return true;
    if (t->due_at < f->after_due)
        return false;
    size_t len;
    const char *u = uuid_of(t, app_len, &len);
    return cmp_uuid(u, len, f->after_uuid, strlen(f->after_uuid)) > 0;
}

void mc_view_selection_offer(mc_view_selection *s, const mc_view_task *t, int64_t wheel_position)
{
    const mc_view_filter *f = s->filter;
    if (t->node.key_len <= s->app_len || t->key[s->app_len] != '/' ||
        memcmp(t->key, f->app_id, s->app_len) != 0)
        return;
    if (s->counting) {
        s->counts[mc_view_task_state(t, wheel_position, s->now_ms)]++;
        return;
    }
    /* The cheap tests first: a list of a million tasks does this for each. */
    if (t->due_at < f->due_from || t->due_at >= f->due_to || !after_cursor(f, t, s->app_len))
        return;
    size_t keep = (size_t)f->limit + 1; /* one more says whether there is more */
    if (s->n == keep && cmp_tasks(t, s->heap[0].task, s->app_len) >= 0)
        return;
    if (f->states && !(f->states & (1u << mc_view_task_state(t, wheel_position, s->now_ms))))
        return;
    /* A key JSON cannot carry (not UTF-8: only a direct Kafka client writes
     * one) would leave its line without a uuid, and the page without a
     * cursor: it is counted, not listed. */
    if (!utf8_ok(t->key, t->node.key_len))
        return;
    if (s->n == keep) {
        s->heap[0] = (mc_view_pick){t, wheel_position};
        sift_down(s, 0);
        return;
    }
    if (!s->heap && !(s->heap = malloc(keep * sizeof *s->heap))) {
        s->failed = true;
        return;
    }
    s->heap[s->n] = (mc_view_pick){t, wheel_position};
    sift_up(s, s->n++);
}

/* Insertion sort: at most MC_VIEW_LIST_MAX + 1 picks, once per answer. */
static void sort_picks(mc_view_pick *p, size_t n, size_t app_len)
{
    for (size_t i = 1; i < n; i++) {
        mc_view_pick x = p[i];
        size_t j = i;
        while (j > 0 && cmp_tasks(p[j - 1].task, x.task, app_len) > 0) {
            p[j] = p[j - 1];
            j--;
        }
        p[j] = x;
    }
}

bool mc_view_selection_full_before(const mc_view_selection *s, const mc_view_task *t)
{
    return !s->counting && s->n == (size_t)s->filter->limit + 1 &&
           cmp_tasks(t, s->heap[0].task, s->app_len) >= 0;
}

typedef struct index_offer {
    mc_view_selection *s;
    int64_t wheel_position;
} index_offer;

static bool offer_indexed(mc_view_task *t, void *arg)
{
    index_offer *o = arg;
    if (mc_view_selection_full_before(o->s, t) ||
        (!o->s->counting && t->due_at >= o->s->filter->due_to))
        return false;
    mc_view_selection_offer(o->s, t, o->wheel_position);
    return !o->s->failed;
}

int mc_view_selection_offer_index(mc_view_selection *s, const mc_view_index *ix,
                                  int64_t wheel_position)
{
    const mc_view_filter *f = s->filter;
    index_offer o = {s, wheel_position};
    if (s->counting)
        return mc_view_index_walk(ix, INT64_MIN, NULL, offer_indexed, &o);
    /* From the later of dueFrom and the cursor. */
    bool cursor = f->has_after && f->after_due >= f->due_from;
    return mc_view_index_walk(ix, cursor ? f->after_due : f->due_from,
                              cursor ? f->after_uuid : NULL, offer_indexed, &o);
}

json_t *mc_view_selection_list_json(mc_view_selection *s)
{
    sort_picks(s->heap, s->n, s->app_len);
    bool more = s->n > s->filter->limit;
    size_t n = more ? s->filter->limit : s->n;
    json_t *tasks = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(tasks, mc_view_task_summary_json(
                                         s->heap[i].task, s->heap[i].wheel_position, s->now_ms));
    json_t *j = json_object();
    json_object_set_new(j, "tasks", tasks);
    json_object_set_new(j, "more", json_boolean(more));
    return j;
}

json_t *mc_view_selection_counts_json(const mc_view_selection *s)
{
    json_t *j = json_object();
    uint64_t total = 0;
    for (int st = 0; st < MC_VIEW_N_STATES; st++) {
        total += s->counts[st];
        if (s->counts[st])
            json_object_set_new(j, mc_view_state_name((mc_view_state)st),
                                json_integer((json_int_t)s->counts[st]));
    }
    json_object_set_new(j, "total", json_integer((json_int_t)total));
    return j;
}

/* ---- merging the instances' answers ------------------------------------------------ */

static int64_t due_of(const json_t *item)
{
    return (int64_t)json_integer_value(json_object_get(item, "dueAt"));
}

static int cmp_items(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int64_t dx = due_of(x), dy = due_of(y);
    if (dx != dy)
        return dx < dy ? -1 : 1;
    const char *ux = json_string_value(json_object_get(x, "uuid"));
    const char *uy = json_string_value(json_object_get(y, "uuid"));
    return strcmp(ux ? ux : "", uy ? uy : "");
}

json_t *mc_view_list_merge(json_t *const *answers, size_t n, uint32_t limit)
{
    size_t total = 0;
    bool more = false;
    for (size_t i = 0; i < n; i++) {
        total += json_array_size(json_object_get(answers[i], "tasks"));
        more |= json_is_true(json_object_get(answers[i], "more"));
    }
    json_t **items = malloc((total ? total : 1) * sizeof *items);
    json_t *out = json_object(), *tasks = json_array();
    if (!items || !out || !tasks) {
        free(items);
        json_decref(out);
        json_decref(tasks);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        size_t at;
        json_t *item;
        json_array_foreach(json_object_get(answers[i], "tasks"), at, item) items[k++] = item;
    }
    qsort(items, k, sizeof *items, cmp_items);
    /* An instance that had more than it sent holds nothing before its last
     * item it did not send: so the page is complete up to limit. */
    if (k > limit) {
        more = true;
        k = limit;
    }
    for (size_t i = 0; i < k; i++)
        json_array_append(tasks, items[i]);
    json_object_set_new(out, "tasks", tasks);
    json_t *next = json_null();
    if (more && k > 0) {
        const char *uuid = json_string_value(json_object_get(items[k - 1], "uuid"));
        char *c = uuid ? mc_view_cursor_format(due_of(items[k - 1]), uuid, strlen(uuid)) : NULL;
        if (c) {
            json_decref(next);
            next = json_string(c);
            free(c);
        }
    }
    json_object_set_new(out, "next", next);
    free(items);
    return out;
}

/* Adds every integer of `from` to the same name in `to`, one level of
 * objects deep. */
static void add_counts(json_t *to, const json_t *from)
{
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)from, name, v)
    {
        if (json_is_object(v)) {
            json_t *sub = json_object_get(to, name);
            if (!sub) {
                sub = json_object();
                json_object_set_new(to, name, sub);
            }
            add_counts(sub, v);
        } else if (json_is_integer(v)) {
            json_t *was = json_object_get(to, name);
            json_int_t sum = json_integer_value(v) + (was ? json_integer_value(was) : 0);
            json_object_set_new(to, name, json_integer(sum));
        }
    }
}

/* The instances' "minutes" summed minute by minute, matched by their
 * "minute" (an instance that answered just after a minute turned has its
 * hour one minute later), up to the latest any of them has; with each
 * minute's lateness quantiles from its summed buckets. */
static json_t *merge_minutes(json_t *const *answers, size_t n)
{
    static const char *const counts[] = {"submitted", "calls", "failures", "dead"};
    json_int_t last = 0, sum[MC_VIEW_STATS_MINUTES][4];
    uint32_t late[MC_VIEW_STATS_MINUTES][MC_VIEW_LATE_BUCKETS];
    memset(sum, 0, sizeof sum);
    memset(late, 0, sizeof late);
    for (size_t a = 0; a < n; a++) {
        const json_t *ms = json_object_get(answers[a], "minutes");
        json_int_t m = json_integer_value(
            json_object_get(json_array_get(ms, json_array_size(ms) - 1), "minute"));
        if (m > last)
            last = m;
    }
    for (size_t a = 0; a < n; a++) {
        size_t i;
        const json_t *m;
        json_array_foreach(json_object_get(answers[a], "minutes"), i, m)
        {
            json_int_t ago = (last - json_integer_value(json_object_get(m, "minute"))) / 60000;
            if (ago < 0 || ago >= MC_VIEW_STATS_MINUTES)
                continue;
            size_t at = MC_VIEW_STATS_MINUTES - 1 - (size_t)ago;
            for (int k = 0; k < 4; k++)
                sum[at][k] += json_integer_value(json_object_get(m, counts[k]));
            const json_t *b = json_object_get(m, "late");
            for (int k = 0; k < MC_VIEW_LATE_BUCKETS; k++)
                late[at][k] += (uint32_t)json_integer_value(json_array_get(b, (size_t)k));
        }
    }
    json_t *out = json_array();
    for (int i = 0; out && i < MC_VIEW_STATS_MINUTES; i++) {
        int64_t p50 = mc_view_late_quantile(late[i], 0.50);
        int64_t p99 = mc_view_late_quantile(late[i], 0.99);
        json_int_t minute = last ? last - (json_int_t)(MC_VIEW_STATS_MINUTES - 1 - i) * 60000 : 0;
        json_t *one = json_pack("{s:I,s:I,s:I,s:I,s:I,s:o,s:o}", "minute", minute, "submitted",
                                sum[i][0], "calls", sum[i][1], "failures", sum[i][2], "dead",
                                sum[i][3], "lateP50Ms", p50 < 0 ? json_null() : json_integer(p50),
                                "lateP99Ms", p99 < 0 ? json_null() : json_integer(p99));
        if (!one || json_array_append_new(out, one) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

json_t *mc_view_stats_merge(json_t *const *answers, size_t n, const char *app_id)
{
    json_t *out = json_object();
    if (!out)
        return NULL;
    json_object_set_new(out, "appId", json_string(app_id));
    json_t *tasks = json_object(), *hour = json_object();
    json_object_set_new(tasks, "total", json_integer(0));
    json_object_set_new(out, "tasks", tasks);
    json_object_set_new(out, "lastHour", hour);
    for (size_t i = 0; i < n; i++) {
        const json_t *t = json_object_get(answers[i], "tasks");
        const json_t *h = json_object_get(answers[i], "lastHour");
        if (json_is_object(t))
            add_counts(tasks, t);
        if (json_is_object(h))
            add_counts(hour, h);
    }
    json_t *minutes = merge_minutes(answers, n);
    if (!minutes) {
        json_decref(out);
        return NULL;
    }
    json_object_set_new(out, "minutes", minutes);
    return out;
}

/* ---- an app's minutes -------------------------------------------------------------- */

size_t mc_view_stats_key(const char *app, size_t app_len, char buf[MC_VIEW_STATS_KEY_MAX])
{
    size_t prefix = sizeof MC_VIEW_STATS_PREFIX - 1;
    if (app_len == 0 || prefix + app_len > MC_VIEW_STATS_KEY_MAX)
        return 0;
    memcpy(buf, MC_VIEW_STATS_PREFIX, prefix);
    memcpy(buf + prefix, app, app_len);
    return prefix + app_len;
}

mc_view_app_stats *mc_view_app_stats_new(const void *key, size_t key_len)
{
    mc_view_app_stats *s = calloc(1, sizeof *s + key_len + 1);
    if (!s)
        return NULL;
    memcpy(s->key, key, key_len);
    s->node.key_len = (uint32_t)key_len;
    s->node.hash = mc_keymap_hash(key, key_len);
    return s;
}

static const int64_t late_bounds[MC_VIEW_LATE_BUCKETS] = {
    1,    2,    5,    10,    20,    50,    100,    200,    500,
    1000, 2000, 5000, 10000, 20000, 50000, 100000, 300000, INT64_MAX};

static int late_bucket(int64_t ms)
{
    int b = 0;
    while (b < MC_VIEW_LATE_BUCKETS - 1 && ms >= late_bounds[b])
        b++;
    return b;
}

int64_t mc_view_late_quantile(const uint32_t *buckets, double q)
{
    uint64_t total = 0;
    for (int b = 0; b < MC_VIEW_LATE_BUCKETS; b++)
        total += buckets[b];
    if (!total)
        return -1;
    double rank = q * (double)total, below = 0;
    for (int b = 0; b < MC_VIEW_LATE_BUCKETS; b++) {
        if (!buckets[b] || below + buckets[b] < rank) {
            below += buckets[b];
            continue;
        }
        int64_t lo = b ? late_bounds[b - 1] : 0;
        /* The open last bucket: its lower bound is all it can say. */
        if (b == MC_VIEW_LATE_BUCKETS - 1)
            return lo;
        double within = (rank - below) / buckets[b];
        return lo + (int64_t)(within * (double)(late_bounds[b] - lo));
    }
    return late_bounds[MC_VIEW_LATE_BUCKETS - 2];
}

void mc_view_app_stats_add(mc_view_app_stats *s, int64_t at_ms, const mc_view_count *c)
{
    if (at_ms < 60000 || at_ms / 60000 > INT32_MAX)
        return; /* no record of mooncake's is stamped so */
    int32_t minute = (int32_t)(at_ms / 60000);
    mc_view_minute *m = &s->minutes[minute % MC_VIEW_STATS_MINUTES];
    if (m->minute > minute)
        return; /* older than the window this slot now holds */
    if (m->minute < minute)
        *m = (mc_view_minute){.minute = minute};
    m->submitted += c->submitted;
    m->calls += c->calls;
    m->failures += c->failures;
    m->dead += c->dead;
    if (c->late_ms >= 0)
        m->late[late_bucket(c->late_ms)]++;
}

/* Whether minute m is one of the hour before now (the next minute too: a
 * record stamped by a clock a little ahead). */
static bool in_last_hour(const mc_view_minute *m, int64_t now)
{
    return m->minute && m->minute > now - MC_VIEW_STATS_MINUTES && m->minute <= now + 1;
}

bool mc_view_app_stats_sum(const mc_view_app_stats *s, int64_t now_ms, uint64_t out[3])
{
    int64_t now = now_ms / 60000;
    bool any = false;
    out[0] = out[1] = out[2] = 0;
    for (int i = 0; i < MC_VIEW_STATS_MINUTES; i++) {
        const mc_view_minute *m = &s->minutes[i];
        if (!in_last_hour(m, now))
            continue;
        any = true;
        out[0] += m->calls;
        out[1] += m->failures;
        out[2] += m->dead;
    }
    return any;
}

void mc_view_app_stats_add_to(const mc_view_app_stats *s, int64_t now_ms, mc_view_minute *sum)
{
    int64_t now = now_ms / 60000;
    for (int i = 0; i < MC_VIEW_STATS_MINUTES; i++) {
        const mc_view_minute *m = &s->minutes[i];
        if (!in_last_hour(m, now))
            continue;
        /* A minute ahead of the clock is shown as this one. */
        int64_t ago = m->minute > now ? 0 : now - m->minute;
        mc_view_minute *to = &sum[MC_VIEW_STATS_MINUTES - 1 - ago];
        to->submitted += m->submitted;
        to->calls += m->calls;
        to->failures += m->failures;
        to->dead += m->dead;
        for (int b = 0; b < MC_VIEW_LATE_BUCKETS; b++)
            to->late[b] += m->late[b];
    }
}

json_t *mc_view_minutes_json(const mc_view_minute *sum, int64_t now_ms)
{
    int64_t now = now_ms / 60000;
    json_t *out = json_array();
    for (int i = 0; out && i < MC_VIEW_STATS_MINUTES; i++) {
        const mc_view_minute *m = &sum[i];
        json_t *late = json_array();
        for (int b = 0; late && b < MC_VIEW_LATE_BUCKETS; b++)
            json_array_append_new(late, json_integer(m->late[b]));
        json_int_t minute = (json_int_t)(now - (MC_VIEW_STATS_MINUTES - 1 - i)) * 60000;
        json_t *one = json_pack("{s:I,s:I,s:I,s:I,s:I,s:o*}", "minute", minute, "submitted",
                                (json_int_t)m->submitted, "calls", (json_int_t)m->calls, "failures",
                                (json_int_t)m->failures, "dead", (json_int_t)m->dead, "late", late);
        if (!one || json_array_append_new(out, one) != 0) {
            json_decref(out);
            return NULL;
        }
    }
    return out;
}

#define STATS_MAGIC_V1 "MS1"
#define STATS_MAGIC "MS2"
#define MINUTE_BYTES_V1 16
/* minute, calls, failures, dead, submitted, the bitmap of buckets used */
#define MINUTE_HEAD_BYTES 24

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int mc_view_app_stats_encode(const mc_view_app_stats *s, mc_buf *out)
{
    size_t need =
        out->len + 3 + MC_VIEW_STATS_MINUTES * (MINUTE_HEAD_BYTES + 4 * MC_VIEW_LATE_BUCKETS);
    if (need > out->cap) {
        uint8_t *d = realloc(out->data, need);
        if (!d)
            return -1;
        out->data = d;
        out->cap = need;
    }
    memcpy(out->data + out->len, STATS_MAGIC, 3);
    out->len += 3;
    for (int i = 0; i < MC_VIEW_STATS_MINUTES; i++) {
        const mc_view_minute *m = &s->minutes[i];
        if (!m->minute)
            continue;
        uint8_t *p = out->data + out->len;
        uint32_t used = 0;
        for (int b = 0; b < MC_VIEW_LATE_BUCKETS; b++)
            if (m->late[b])
                used |= 1u << b;
        put_u32(p, (uint32_t)m->minute);
        put_u32(p + 4, m->calls);
        put_u32(p + 8, m->failures);
        put_u32(p + 12, m->dead);
        put_u32(p + 16, m->submitted);
        put_u32(p + 20, used);
        p += MINUTE_HEAD_BYTES;
        for (int b = 0; b < MC_VIEW_LATE_BUCKETS; b++)
            if (m->late[b]) {
                put_u32(p, m->late[b]);
                p += 4;
            }
        out->len = (size_t)(p - out->data);
    }
    return 0;
}

/* Reads one minute at p (an MS2 one, or MS1's when v1), ending by end; the
 * bytes it took, or 0 when it does not fit. */
static size_t read_minute(const uint8_t *p, const uint8_t *end, bool v1, mc_view_minute *m)
{
    size_t head = v1 ? MINUTE_BYTES_V1 : MINUTE_HEAD_BYTES;
    if ((size_t)(end - p) < head)
        return 0;
    *m = (mc_view_minute){(int32_t)get_u32(p), get_u32(p + 4),           get_u32(p + 8),
                          get_u32(p + 12),     v1 ? 0 : get_u32(p + 16), {0}};
    if (v1)
        return head;
    uint32_t used = get_u32(p + 20);
    if (used >> MC_VIEW_LATE_BUCKETS)
        return 0;
    const uint8_t *q = p + head;
    for (int b = 0; b < MC_VIEW_LATE_BUCKETS; b++)
        if (used & (1u << b)) {
            if (end - q < 4)
                return 0;
            m->late[b] = get_u32(q);
            q += 4;
        }
    return (size_t)(q - p);
}

mc_view_app_stats *mc_view_app_stats_decode(const void *key, size_t key_len, const void *value,
                                            size_t len, const char **why)
{
    const uint8_t *v = value, *end = v + len;
    bool v1 = len >= 3 && memcmp(v, STATS_MAGIC_V1, 3) == 0;
    if (len < 3 || (!v1 && memcmp(v, STATS_MAGIC, 3) != 0)) {
        *why = "not an MS1 or MS2 record";
        return NULL;
    }
    mc_view_app_stats *s = mc_view_app_stats_new(key, key_len);
    if (!s) {
        *why = "out of memory";
        return NULL;
    }
    int n = 0;
    for (const uint8_t *p = v + 3; p < end; n++) {
        mc_view_minute m;
        size_t took = n < MC_VIEW_STATS_MINUTES ? read_minute(p, end, v1, &m) : 0;
        if (!took) {
            free(s);
            *why = "it is cut short, or holds more than an hour of minutes";
            return NULL;
        }
        p += took;
        if (m.minute <= 0) {
            free(s);
            *why = "a minute before 1970";
            return NULL;
        }
        mc_view_minute *slot = &s->minutes[m.minute % MC_VIEW_STATS_MINUTES];
        if (slot->minute < m.minute) /* else a newer minute holds the slot */
            *slot = m;
    }
    return s;
}
