/* Prometheus metrics for every role: a registry of counters, gauges and
 * histograms that threads update lock-free and that /metrics renders as text
 * exposition format 0.0.4. One registry per process, shared by the roles of
 * `mooncake all`, so one scrape shows everything. */
#ifndef MOONCAKE_METRICS_H
#define MOONCAKE_METRICS_H

#include <stddef.h>
#include <stdint.h>

typedef struct mc_metrics mc_metrics;
typedef struct mc_counter mc_counter;
typedef struct mc_gauge mc_gauge;
typedef struct mc_histogram mc_histogram;

/* Creates an empty registry. Caller owns it; free with mc_metrics_free()
 * after every thread that updates its metrics has stopped. */
mc_metrics *mc_metrics_new(void);
void mc_metrics_free(mc_metrics *m);

/* Registers (or finds, when name and labels match an existing one) a metric.
 * labels is the inside of the braces, e.g. "processor=\"router\",topic=\"x\"",
 * or NULL for none; values use the exposition escapes (\\, \", \n; see
 * mc_metrics_escape_label_value) and label order does not matter. The registry
 * owns the returned handle; it stays valid until mc_metrics_free(). Thread-safe.
 * NULL on ENOMEM, and on programming errors: a name not matching
 * [a-zA-Z_:][a-zA-Z0-9_:]*, malformed labels, a name already registered with
 * another type, or histogram bounds that are not finite and strictly ascending
 * (or differ from an earlier registration of the same series). */
mc_counter *mc_metrics_counter(mc_metrics *m, const char *name, const char *help,
                               const char *labels);
mc_gauge *mc_metrics_gauge(mc_metrics *m, const char *name, const char *help, const char *labels);
/* bounds: ascending upper bounds of the buckets (+Inf is implicit). */
mc_histogram *mc_metrics_histogram(mc_metrics *m, const char *name, const char *help,
                                   const char *labels, const double *bounds, size_t n_bounds);

/* Updates; lock-free, safe from any thread, NULL handles are ignored. */
void mc_counter_add(mc_counter *c, uint64_t n);
void mc_gauge_set(mc_gauge *g, double v);
void mc_gauge_add(mc_gauge *g, double delta);
void mc_histogram_observe(mc_histogram *h, double v);

/* Reads back (for tests and readiness logic). */
uint64_t mc_counter_value(const mc_counter *c);
double mc_gauge_value(const mc_gauge *g);
uint64_t mc_histogram_count(const mc_histogram *h);

/* Escapes value for use between the double quotes of a label (backslash,
 * double quote and newline), so callers can put arbitrary text such as an
 * appId in a labels string. Works like snprintf: writes at most outlen bytes
 * including the NUL and returns the length the whole result needs. */
size_t mc_metrics_escape_label_value(char *out, size_t outlen, const char *value);

/* Renders every metric, grouped by name with one HELP/TYPE line each.
 * Returns a malloc'd NUL-terminated string the caller frees; NULL on ENOMEM. */
char *mc_metrics_render(mc_metrics *m);

#endif
