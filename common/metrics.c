/* The Prometheus registry: metric families (one per name) each holding the
 * series registered under it. Registration and the render walk share one
 * mutex; updates touch only C11 atomics, so a hot loop never waits on a
 * scrape. Families and series are only ever appended and live until
 * mc_metrics_free(), which is what lets render format them after unlocking. */
#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* More labels than this on one series is certainly a mistake. */
#define MAX_LABELS 32

typedef enum metric_type { TYPE_COUNTER, TYPE_GAUGE, TYPE_HISTOGRAM } metric_type;

static const char *const type_names[] = {"counter", "gauge", "histogram"};

struct mc_counter {
    _Atomic uint64_t value;
};

/* Doubles live as their bit patterns because C11 has no atomic add for
 * double; gauge_add and histogram sums use a compare-and-swap loop. */
struct mc_gauge {
    _Atomic uint64_t bits;
};

/* Buckets are stored non-cumulative (one increment per observation) and
 * summed at render time. The count is the sum of the buckets rather than a
 * counter of its own, so _count always equals the +Inf bucket in a scrape. */
struct mc_histogram {
    double *bounds; /* n_bounds ascending finite upper bounds */
    size_t n_bounds;
    _Atomic uint64_t *buckets; /* n_bounds + 1, the last one is +Inf */
    _Atomic uint64_t sum_bits;
};

typedef struct family family;

typedef struct series {
    struct series *next; /* next series of the same family */
    family *fam;
    char *labels; /* canonical form, "" when there are none */
    union {
        mc_counter counter;
        mc_gauge gauge;
        mc_histogram histogram;
    } u;
} series;

struct family {
    struct family *next;
    char *name;
    char *help; /* from the first registration */
    metric_type type;
    series *head, *tail;
};

struct mc_metrics {
    pthread_mutex_t lock; /* guards the lists, not the values */
    family *head, *tail;
    size_t n_series;
};

/* ---------------------------------------------------------------------------
 * Doubles as bits
 * ------------------------------------------------------------------------ */

static uint64_t double_to_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double bits_to_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static void atomic_add_double(_Atomic uint64_t *bits, double delta)
{
    uint64_t old = atomic_load_explicit(bits, memory_order_relaxed);
    /* On failure the CAS reloads old, so each retry adds to the fresh value. */
    while (!atomic_compare_exchange_weak_explicit(bits, &old,
                                                  double_to_bits(bits_to_double(old) + delta),
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

/* ---------------------------------------------------------------------------
 * Validation and canonical labels
 * ------------------------------------------------------------------------ */

static bool is_name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool valid_metric_name(const char *name)
{
    if (!name || !(is_name_start(name[0]) || name[0] == ':'))
        return false;
    for (const char *p = name + 1; *p; p++)
        if (!(is_name_start(*p) || is_digit(*p) || *p == ':'))
            return false;
    return true;
}

typedef struct label {
    const char *name, *value; /* both point into the caller's string */
    size_t name_len, value_len;
} label;

static int label_cmp(const void *a, const void *b)
{
    const label *x = a, *y = b;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, n);
    if (c != 0)
        return c;
    return (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* Parses name="value" pairs separated by commas (a trailing comma is allowed,
 * as in the exposition format). Values must already carry the escapes \\, \"
 * and \n; any other backslash sequence is rejected because it would make the
 * exposition unparseable. Returns the pair count, or -1 when malformed. */
static int parse_labels(const char *s, label *out)
{
    int n = 0;
    const char *p = s;
    while (*p) {
        if (n == MAX_LABELS || !is_name_start(*p))
            return -1;
        label *l = &out[n++];
        l->name = p;
        while (is_name_start(*p) || is_digit(*p))
            p++;
        l->name_len = (size_t)(p - l->name);
        if (*p++ != '=' || *p++ != '"')
            return -1;
        l->value = p;
        while (*p != '"') {
            if (*p == '\0')
                return -1;
            if (*p == '\\') {
                if (p[1] != '\\' && p[1] != '"' && p[1] != 'n')
                    return -1;
                p++;
            }
            p++;
        }
        l->value_len = (size_t)(p - l->value);
        p++; /* closing quote */
        if (*p == ',')
            p++;
        else if (*p != '\0')
            return -1;
    }
    return n;
}

/* Returns the canonical form of labels in a malloc'd string: pairs sorted by
 * name, raw newlines escaped. Sorting makes "a=..,b=.." and "b=..,a=.." one
 * series; otherwise both would be exported and Prometheus would reject the
 * scrape for a duplicate series. NULL when malformed or on ENOMEM. */
static char *canonical_labels(const char *labels, bool histogram)
{
    if (!labels)
        labels = "";
    label pairs[MAX_LABELS];
    int n = parse_labels(labels, pairs);
    if (n < 0)
        return NULL;
    qsort(pairs, (size_t)n, sizeof pairs[0], label_cmp);
    for (int i = 0; i < n; i++) {
        const label *l = &pairs[i];
        /* "__" names are reserved for Prometheus itself; "le" would collide
         * with the bucket label. */
        if (l->name_len >= 2 && l->name[0] == '_' && l->name[1] == '_')
            return NULL;
        if (histogram && l->name_len == 2 && memcmp(l->name, "le", 2) == 0)
            return NULL;
        if (i > 0 && label_cmp(&pairs[i - 1], l) == 0)
            return NULL;
    }

    /* A raw newline doubles in size; everything else is copied as is. */
    char *out = malloc(2 * strlen(labels) + 1);
    if (!out)
        return NULL;
    char *w = out;
    for (int i = 0; i < n; i++) {
        const label *l = &pairs[i];
        if (i > 0)
            *w++ = ',';
        memcpy(w, l->name, l->name_len);
        w += l->name_len;
        *w++ = '=';
        *w++ = '"';
        for (size_t j = 0; j < l->value_len; j++) {
            char c = l->value[j];
            if (c == '\n') {
                *w++ = '\\';
                *w++ = 'n';
            } else {
                *w++ = c;
            }
        }
        *w++ = '"';
    }
    *w = '\0';
    return out;
}

static bool valid_bounds(const double *bounds, size_t n)
{
    if (n > 0 && !bounds)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1])))
            return false;
    }
    return true;
}

static bool same_bounds(const mc_histogram *h, const double *bounds, size_t n)
{
    return h->n_bounds == n && (n == 0 || memcmp(h->bounds, bounds, n * sizeof *bounds) == 0);
}

size_t mc_metrics_escape_label_value(char *out, size_t outlen, const char *value)
{
    size_t need = 0, used = 0;
    bool full = false; /* once an escape does not fit, stop: never write half of one */
    for (const char *p = value; *p; p++) {
        const char *rep = *p == '\\' ? "\\\\" : *p == '"' ? "\\\"" : *p == '\n' ? "\\n" : NULL;
        size_t k = rep ? 2 : 1;
        if (!full && used + k < outlen) {
            memcpy(out + used, rep ? rep : p, k);
            used += k;
        } else {
            full = true;
        }
        need += k;
    }
    if (outlen > 0)
        out[used] = '\0';
    return need;
}

/* ---------------------------------------------------------------------------
 * Registry
 * ------------------------------------------------------------------------ */

mc_metrics *mc_metrics_new(void)
{
    mc_metrics *m = calloc(1, sizeof *m);
    if (!m)
        return NULL;
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        return NULL;
    }
    return m;
}

static void series_free(series *s)
{
    if (s->fam->type == TYPE_HISTOGRAM) {
        free(s->u.histogram.bounds);
        free(s->u.histogram.buckets);
    }
    free(s->labels);
    free(s);
}

static void family_free(family *f)
{
    free(f->name);
    free(f->help);
    free(f);
}

void mc_metrics_free(mc_metrics *m)
{
    if (!m)
        return;
    family *f = m->head;
    while (f) {
        family *next_f = f->next;
        series *s = f->head;
        while (s) {
            series *next_s = s->next;
            series_free(s);
            s = next_s;
        }
        family_free(f);
        f = next_f;
    }
    pthread_mutex_destroy(&m->lock);
    free(m);
}

static family *family_find(mc_metrics *m, const char *name)
{
    for (family *f = m->head; f; f = f->next)
        if (strcmp(f->name, name) == 0)
            return f;
    return NULL;
}

static family *family_new(const char *name, const char *help, metric_type type)
{
    family *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->name = strdup(name);
    f->help = strdup(help ? help : "");
    if (!f->name || !f->help) {
        family_free(f);
        return NULL;
    }
    f->type = type;
    return f;
}

/* Takes ownership of labels (canonical) whatever happens. The series is not
 * linked anywhere yet. */
static series *series_new(family *f, char *labels, const double *bounds, size_t n_bounds)
{
    series *s = calloc(1, sizeof *s);
    if (!s) {
        free(labels);
        return NULL;
    }
    s->fam = f;
    s->labels = labels;
    switch (f->type) {
    case TYPE_COUNTER:
        atomic_init(&s->u.counter.value, 0);
        break;
    case TYPE_GAUGE:
        atomic_init(&s->u.gauge.bits, double_to_bits(0.0));
        break;
    case TYPE_HISTOGRAM: {
        mc_histogram *h = &s->u.histogram;
        h->n_bounds = n_bounds;
        h->bounds = malloc((n_bounds ? n_bounds : 1) * sizeof *bounds);
        h->buckets = malloc((n_bounds + 1) * sizeof *h->buckets);
        if (!h->bounds || !h->buckets) {
            series_free(s);
            return NULL;
        }
        if (n_bounds)
            memcpy(h->bounds, bounds, n_bounds * sizeof *bounds);
        for (size_t i = 0; i <= n_bounds; i++)
            atomic_init(&h->buckets[i], 0);
        atomic_init(&h->sum_bits, double_to_bits(0.0));
        break;
    }
    }
    return s;
}

/* The one registration path behind the three public ones. Everything is
 * allocated before anything is linked, so a failed allocation leaves the
 * registry as it was, and a family never appears without a series under it
 * (render would print a HELP line with nothing beneath). */
static series *register_series(mc_metrics *m, const char *name, const char *help,
                               const char *labels, metric_type type, const double *bounds,
                               size_t n_bounds)
{
    if (!m || !valid_metric_name(name))
        return NULL;
    if (type == TYPE_HISTOGRAM && !valid_bounds(bounds, n_bounds))
        return NULL;
    char *canon = canonical_labels(labels, type == TYPE_HISTOGRAM);
    if (!canon)
        return NULL;

    series *s = NULL;
    pthread_mutex_lock(&m->lock);
    family *f = family_find(m, name);
    if (f && f->type != type) {
        free(canon);
        goto out;
    }
    for (series *old = f ? f->head : NULL; old; old = old->next) {
        if (strcmp(old->labels, canon) == 0) {
            free(canon);
            if (type != TYPE_HISTOGRAM || same_bounds(&old->u.histogram, bounds, n_bounds))
                s = old;
            goto out;
        }
    }

    family *new_family = NULL;
    if (!f && !(f = new_family = family_new(name, help, type))) {
        free(canon);
        goto out;
    }
    if (!(s = series_new(f, canon, bounds, n_bounds))) {
        if (new_family)
            family_free(new_family);
        goto out;
    }
    if (new_family) {
        if (m->tail)
            m->tail->next = new_family;
        else
            m->head = new_family;
        m->tail = new_family;
    }
    if (f->tail)
        f->tail->next = s;
    else
        f->head = s;
    f->tail = s;
    m->n_series++;
out:
    pthread_mutex_unlock(&m->lock);
    return s;
}

mc_counter *mc_metrics_counter(mc_metrics *m, const char *name, const char *help,
                               const char *labels)
{
    series *s = register_series(m, name, help, labels, TYPE_COUNTER, NULL, 0);
    return s ? &s->u.counter : NULL;
}

mc_gauge *mc_metrics_gauge(mc_metrics *m, const char *name, const char *help, const char *labels)
{
    series *s = register_series(m, name, help, labels, TYPE_GAUGE, NULL, 0);
    return s ? &s->u.gauge : NULL;
}

mc_histogram *mc_metrics_histogram(mc_metrics *m, const char *name, const char *help,
                                   const char *labels, const double *bounds, size_t n_bounds)
{
    series *s = register_series(m, name, help, labels, TYPE_HISTOGRAM, bounds, n_bounds);
    return s ? &s->u.histogram : NULL;
}

/* ---------------------------------------------------------------------------
 * Updates and reads. Relaxed ordering throughout: a value is a statistic and
 * orders nothing else.
 * ------------------------------------------------------------------------ */

void mc_counter_add(mc_counter *c, uint64_t n)
{
    if (c)
        atomic_fetch_add_explicit(&c->value, n, memory_order_relaxed);
}

void mc_gauge_set(mc_gauge *g, double v)
{
    if (g)
        atomic_store_explicit(&g->bits, double_to_bits(v), memory_order_relaxed);
}

void mc_gauge_add(mc_gauge *g, double delta)
{
    if (g)
        atomic_add_double(&g->bits, delta);
}

void mc_histogram_observe(mc_histogram *h, double v)
{
    if (!h)
        return;
    /* Bounds are inclusive (le = "less or equal"). NaN matches no bound and
     * lands in +Inf, as in the reference clients. Bucket lists are short, so
     * a linear scan beats a binary search's branches. */
    size_t i = 0;
    while (i < h->n_bounds && !(v <= h->bounds[i]))
        i++;
    atomic_fetch_add_explicit(&h->buckets[i], 1, memory_order_relaxed);
    atomic_add_double(&h->sum_bits, v);
}

uint64_t mc_counter_value(const mc_counter *c)
{
    return c ? atomic_load_explicit(&c->value, memory_order_relaxed) : 0;
}

double mc_gauge_value(const mc_gauge *g)
{
    return g ? bits_to_double(atomic_load_explicit(&g->bits, memory_order_relaxed)) : 0.0;
}

uint64_t mc_histogram_count(const mc_histogram *h)
{
    if (!h)
        return 0;
    uint64_t n = 0;
    for (size_t i = 0; i <= h->n_bounds; i++)
        n += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
    return n;
}

/* ---------------------------------------------------------------------------
 * Rendering (text exposition format 0.0.4)
 * ------------------------------------------------------------------------ */

/* HELP text escapes only backslash and newline; quotes stay as they are. */
static void put_help(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\\\", f);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

/* Shortest of %.15g / %.17g that reads back exactly: "0.1" rather than
 * "0.10000000000000001", without ever losing precision. */
static void put_double(FILE *f, double v)
{
    if (isnan(v)) {
        fputs("NaN", f);
    } else if (isinf(v)) {
        fputs(v > 0 ? "+Inf" : "-Inf", f);
    } else {
        char buf[32];
        snprintf(buf, sizeof buf, "%.15g", v);
        if (strtod(buf, NULL) != v)
            snprintf(buf, sizeof buf, "%.17g", v);
        fputs(buf, f);
    }
}

/* Writes "name<suffix>{labels}" (no braces when there are no labels). */
static void put_series_name(FILE *f, const series *s, const char *suffix)
{
    fputs(s->fam->name, f);
    fputs(suffix, f);
    if (s->labels[0])
        fprintf(f, "{%s}", s->labels);
}

static void put_histogram(FILE *f, const series *s)
{
    const mc_histogram *h = &s->u.histogram;
    const char *sep = s->labels[0] ? "," : "";
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= h->n_bounds; i++) {
        cumulative += atomic_load_explicit(&h->buckets[i], memory_order_relaxed);
        fprintf(f, "%s_bucket{%s%sle=\"", s->fam->name, s->labels, sep);
        if (i < h->n_bounds)
            put_double(f, h->bounds[i]);
        else
            fputs("+Inf", f);
        fprintf(f, "\"} %llu\n", (unsigned long long)cumulative);
    }
    put_series_name(f, s, "_sum");
    fputc(' ', f);
    put_double(f, bits_to_double(atomic_load_explicit(&h->sum_bits, memory_order_relaxed)));
    fputc('\n', f);
    put_series_name(f, s, "_count");
    fprintf(f, " %llu\n", (unsigned long long)cumulative);
}

static void put_series(FILE *f, const series *s)
{
    switch (s->fam->type) {
    case TYPE_COUNTER:
        put_series_name(f, s, "");
        fprintf(
            f, " %llu\n",
            (unsigned long long)atomic_load_explicit(&s->u.counter.value, memory_order_relaxed));
        break;
    case TYPE_GAUGE:
        put_series_name(f, s, "");
        fputc(' ', f);
        put_double(f, mc_gauge_value(&s->u.gauge));
        fputc('\n', f);
        break;
    case TYPE_HISTOGRAM:
        put_histogram(f, s);
        break;
    }
}

char *mc_metrics_render(mc_metrics *m)
{
    if (!m)
        return NULL;

    /* Snapshot the series under the lock, format without it: formatting is
     * the slow part, and a processor registering a metric mid-scrape should
     * not wait for it. The snapshot stays valid because nothing is freed
     * before mc_metrics_free(). */
    pthread_mutex_lock(&m->lock);
    size_t n = m->n_series;
    series **snap = malloc((n ? n : 1) * sizeof *snap);
    if (snap) {
        size_t i = 0;
        for (family *f = m->head; f; f = f->next)
            for (series *s = f->head; s; s = s->next)
                snap[i++] = s;
    }
    pthread_mutex_unlock(&m->lock);
    if (!snap)
        return NULL;

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        free(snap);
        return NULL;
    }
    const family *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        const series *s = snap[i];
        if (s->fam != prev) {
            fprintf(f, "# HELP %s", s->fam->name);
            if (s->fam->help[0]) {
                fputc(' ', f);
                put_help(f, s->fam->help);
            }
            fprintf(f, "\n# TYPE %s %s\n", s->fam->name, type_names[s->fam->type]);
            prev = s->fam;
        }
        put_series(f, s);
    }
    free(snap);
    bool failed = ferror(f) != 0;
    if (fclose(f) != 0)
        failed = true;
    if (failed) {
        free(buf);
        return NULL;
    }
    return buf;
}
