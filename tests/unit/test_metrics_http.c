/* Unit test of the metrics registry (registration rules, exposition text,
 * histogram buckets, escaping, concurrent updates) and of the HTTP endpoint
 * (/metrics, /healthz, /readyz, 404, 405, port clash) over real sockets with
 * libcurl. Exits non-zero after printing every failed expectation. */
#include "check.h"
#include "http_server.h"
#include "metrics.h"

#include <curl/curl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* True when text contains needle; on failure the whole text is printed. */
static bool contains(const char *text, const char *needle)
{
    bool ok = text && strstr(text, needle);
    if (!ok)
        fprintf(stderr, "--- expected to find:\n%s\n--- in:\n%s\n---\n", needle, text);
    return ok;
}

static int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* ---------------------------------------------------------------------------
 * Registry
 * ------------------------------------------------------------------------ */

static void test_registration(void)
{
    mc_metrics *m = mc_metrics_new();
    mc_counter *a = mc_metrics_counter(m, "jobs_total", "Jobs.", "role=\"router\",topic=\"t\"");
    CHECK(a != NULL, "valid counter registration");
    CHECK(mc_metrics_counter(m, "jobs_total", "Jobs.", "role=\"router\",topic=\"t\"") == a,
          "same name and labels give the same handle");
    CHECK(mc_metrics_counter(m, "jobs_total", "other help", "topic=\"t\",role=\"router\"") == a,
          "label order does not make a new series");
    mc_counter *b = mc_metrics_counter(m, "jobs_total", "Jobs.", "role=\"store\",topic=\"t\"");
    CHECK(b != NULL && b != a, "different labels give a different series");
    mc_counter *bare = mc_metrics_counter(m, "jobs_total", "Jobs.", NULL);
    CHECK(bare && mc_metrics_counter(m, "jobs_total", "Jobs.", "") == bare,
          "NULL and empty labels are the same series");

    CHECK(mc_metrics_gauge(m, "jobs_total", "Jobs.", NULL) == NULL, "type mismatch is refused");
    double bounds[] = {1, 2};
    CHECK(mc_metrics_histogram(m, "jobs_total", "Jobs.", NULL, bounds, 2) == NULL,
          "type mismatch (histogram) is refused");

    const char *bad_names[] = {"", "1abc", "a-b", "a b", "é", "a.b"};
    for (size_t i = 0; i < sizeof bad_names / sizeof bad_names[0]; i++)
        CHECK(mc_metrics_counter(m, bad_names[i], "", NULL) == NULL, "name \"%s\" is refused",
              bad_names[i]);
    CHECK(mc_metrics_counter(m, NULL, "", NULL) == NULL, "NULL name is refused");
    CHECK(mc_metrics_gauge(m, "_ok:name_9", "", NULL) != NULL, "name with _ : digits is fine");
    CHECK(mc_metrics_gauge(m, ":colon", "", NULL) != NULL, "name starting with : is fine");

    const char *bad_labels[] = {"a=1",       "a=\"1",     "1a=\"x\"",        "a=\"1\",a=\"2\"",
                                "__x=\"1\"", "a=\"\\t\"", "a=\"1\" b=\"2\"", "a=\"1\",,b=\"2\"",
                                "a-b=\"1\"", ",a=\"1\"",  "a =\"1\""};
    for (size_t i = 0; i < sizeof bad_labels / sizeof bad_labels[0]; i++)
        CHECK(mc_metrics_counter(m, "labelled_total", "", bad_labels[i]) == NULL,
              "labels '%s' are refused", bad_labels[i]);
    CHECK(mc_metrics_counter(m, "labelled_total", "", "a=\"1\",") != NULL,
          "trailing comma is accepted");
    CHECK(mc_metrics_counter(m, "labelled_total", "", "le=\"1\"") != NULL,
          "le is an ordinary label outside histograms");
    CHECK(mc_metrics_histogram(m, "lat_seconds", "", "le=\"1\"", bounds, 2) == NULL,
          "le is reserved in histograms");

    double not_ascending[] = {1, 1};
    double with_nan[] = {1, NAN};
    double with_inf[] = {1, INFINITY};
    CHECK(mc_metrics_histogram(m, "h1", "", NULL, not_ascending, 2) == NULL,
          "equal bounds refused");
    CHECK(mc_metrics_histogram(m, "h1", "", NULL, with_nan, 2) == NULL, "NaN bound refused");
    CHECK(mc_metrics_histogram(m, "h1", "", NULL, with_inf, 2) == NULL, "+Inf bound refused");
    CHECK(mc_metrics_histogram(m, "h1", "", NULL, NULL, 1) == NULL, "NULL bounds refused");
    mc_histogram *h = mc_metrics_histogram(m, "h1", "", NULL, bounds, 2);
    CHECK(h != NULL, "valid histogram");
    CHECK(mc_metrics_histogram(m, "h1", "", NULL, bounds, 2) == h, "histogram is idempotent");
    CHECK(mc_metrics_histogram(m, "h1", "", NULL, bounds, 1) == NULL,
          "same series with other bounds refused");
    CHECK(mc_metrics_histogram(m, "h0", "", NULL, NULL, 0) != NULL,
          "histogram with only +Inf is fine");

    mc_counter_add(NULL, 1);
    mc_gauge_set(NULL, 1);
    mc_gauge_add(NULL, 1);
    mc_histogram_observe(NULL, 1);
    CHECK(mc_counter_value(NULL) == 0, "NULL handles read as zero");
    mc_metrics_free(m);
    mc_metrics_free(NULL);
}

static void test_render(void)
{
    mc_metrics *m = mc_metrics_new();
    char *empty = mc_metrics_render(m);
    CHECK(empty && empty[0] == '\0', "empty registry renders as empty text");
    free(empty);

    mc_counter *c1 = mc_metrics_counter(m, "routed_total", "Records routed.", "topic=\"b\"");
    mc_gauge *g = mc_metrics_gauge(m, "lag", "", NULL);
    mc_counter *c2 = mc_metrics_counter(m, "routed_total", "ignored", "topic=\"a\"");
    mc_counter_add(c1, 3);
    mc_counter_add(c1, 4);
    mc_counter_add(c2, 1);
    mc_gauge_set(g, 0.1);
    mc_gauge_add(g, -1.5);
    CHECK(mc_counter_value(c1) == 7, "counter value %llu",
          (unsigned long long)mc_counter_value(c1));
    CHECK(fabs(mc_gauge_value(g) - (-1.4)) < 1e-12, "gauge value %g", mc_gauge_value(g));

    char *text = mc_metrics_render(m);
    const char *want = "# HELP routed_total Records routed.\n"
                       "# TYPE routed_total counter\n"
                       "routed_total{topic=\"b\"} 7\n"
                       "routed_total{topic=\"a\"} 1\n"
                       "# HELP lag\n"
                       "# TYPE lag gauge\n"
                       "lag -1.4\n";
    CHECK(text && strcmp(text, want) == 0, "render:\n%s\nwanted:\n%s", text, want);
    free(text);

    /* Numbers: shortest exact form, and Prometheus spellings of the specials. */
    mc_gauge_set(g, 1e100);
    text = mc_metrics_render(m);
    CHECK(contains(text, "lag 1e+100\n"), "large gauge");
    free(text);
    mc_gauge_set(g, 0.1 + 0.2); /* 0.30000000000000004 needs 17 digits */
    text = mc_metrics_render(m);
    CHECK(contains(text, "lag 0.30000000000000004\n"), "precise gauge");
    free(text);
    mc_gauge_set(g, NAN);
    text = mc_metrics_render(m);
    CHECK(contains(text, "lag NaN\n"), "NaN gauge");
    free(text);
    mc_gauge_set(g, -INFINITY);
    text = mc_metrics_render(m);
    CHECK(contains(text, "lag -Inf\n"), "-Inf gauge");
    free(text);
    mc_metrics_free(m);
}

static void test_histogram(void)
{
    mc_metrics *m = mc_metrics_new();
    const double bounds[] = {0.005, 0.1, 1};
    mc_histogram *h =
        mc_metrics_histogram(m, "latency_seconds", "Call latency.", "role=\"executor\"", bounds, 3);
    mc_histogram *plain = mc_metrics_histogram(m, "latency_seconds", "", NULL, bounds, 3);
    CHECK(h && plain && h != plain, "two histogram series");
    const double obs[] = {0.001, 0.005, 0.05, 0.5, 5, -1};
    for (size_t i = 0; i < sizeof obs / sizeof obs[0]; i++)
        mc_histogram_observe(h, obs[i]);
    CHECK(mc_histogram_count(h) == 6, "count %llu", (unsigned long long)mc_histogram_count(h));

    char *text = mc_metrics_render(m);
    /* le is inclusive: 0.005 lands in the first bucket, -1 too. */
    const char *want = "# HELP latency_seconds Call latency.\n"
                       "# TYPE latency_seconds histogram\n"
                       "latency_seconds_bucket{role=\"executor\",le=\"0.005\"} 3\n"
                       "latency_seconds_bucket{role=\"executor\",le=\"0.1\"} 4\n"
                       "latency_seconds_bucket{role=\"executor\",le=\"1\"} 5\n"
                       "latency_seconds_bucket{role=\"executor\",le=\"+Inf\"} 6\n"
                       "latency_seconds_sum{role=\"executor\"} 4.556\n"
                       "latency_seconds_count{role=\"executor\"} 6\n"
                       "latency_seconds_bucket{le=\"0.005\"} 0\n"
                       "latency_seconds_bucket{le=\"0.1\"} 0\n"
                       "latency_seconds_bucket{le=\"1\"} 0\n"
                       "latency_seconds_bucket{le=\"+Inf\"} 0\n"
                       "latency_seconds_sum 0\n"
                       "latency_seconds_count 0\n";
    CHECK(text && strcmp(text, want) == 0, "render:\n%s\nwanted:\n%s", text, want);
    free(text);
    mc_metrics_free(m);
}

static void test_escaping(void)
{
    mc_metrics *m = mc_metrics_new();
    /* Help: backslash and newline escaped, quotes kept. */
    mc_counter *c = mc_metrics_counter(m, "esc_total", "a \"quoted\" back\\slash\nnext line",
                                       "path=\"C:\\\\dir\",q=\"say \\\"hi\\\"\",nl=\"x\ny\"");
    CHECK(c != NULL, "labels with escapes and a raw newline are accepted");
    char *text = mc_metrics_render(m);
    CHECK(contains(text, "# HELP esc_total a \"quoted\" back\\\\slash\\nnext line\n"), "help");
    CHECK(contains(text, "esc_total{nl=\"x\\ny\",path=\"C:\\\\dir\",q=\"say \\\"hi\\\"\"} 0\n"),
          "labels sorted, raw newline escaped, escapes kept");
    free(text);
    CHECK(mc_metrics_counter(m, "esc_total", "",
                             "nl=\"x\\ny\",path=\"C:\\\\dir\","
                             "q=\"say \\\"hi\\\"\"") == c,
          "escaped and raw newline are the same series");

    char buf[64];
    size_t n = mc_metrics_escape_label_value(buf, sizeof buf, "a\"b\\c\nd");
    CHECK(n == 10 && strcmp(buf, "a\\\"b\\\\c\\nd") == 0, "escape helper: %zu '%s'", n, buf);
    char tiny[4];
    n = mc_metrics_escape_label_value(tiny, sizeof tiny, "ab\"c");
    CHECK(n == 5 && strcmp(tiny, "ab") == 0, "truncation never splits an escape: %zu '%s'", n,
          tiny);
    char label[128];
    snprintf(label, sizeof label, "app=\"");
    mc_metrics_escape_label_value(label + 5, sizeof label - 6, "we\"ird\\app");
    strcat(label, "\"");
    CHECK(mc_metrics_counter(m, "apps_total", "", label) != NULL,
          "helper output is accepted as labels: %s", label);
    mc_metrics_free(m);
}

/* Hammered by several threads at once: totals must come out exact. */
typedef struct hammer {
    mc_metrics *m;
    int id;
} hammer;

#define HAMMER_THREADS 4
#define HAMMER_ROUNDS 100000

static void *hammer_run(void *arg)
{
    hammer *hm = arg;
    const double bounds[] = {0.5, 1.5};
    /* Registration from every thread races too and must converge. */
    mc_counter *c = mc_metrics_counter(hm->m, "hammer_total", "", "k=\"v\"");
    mc_gauge *g = mc_metrics_gauge(hm->m, "hammer_gauge", "", NULL);
    mc_histogram *h = mc_metrics_histogram(hm->m, "hammer_seconds", "", NULL, bounds, 2);
    for (int i = 0; i < HAMMER_ROUNDS; i++) {
        mc_counter_add(c, 1);
        mc_gauge_add(g, 0.5);
        mc_histogram_observe(h, (double)(i % 3)); /* 0, 1, 2: one per bucket */
        if (i % 10000 == 0) {
            char name[64];
            snprintf(name, sizeof name, "late_%d_%d", hm->id, i);
            mc_metrics_gauge(hm->m, name, "registered while others render", NULL);
            free(mc_metrics_render(hm->m));
        }
    }
    return NULL;
}

static void test_concurrency(void)
{
    mc_metrics *m = mc_metrics_new();
    pthread_t th[HAMMER_THREADS];
    hammer args[HAMMER_THREADS];
    for (int i = 0; i < HAMMER_THREADS; i++) {
        args[i] = (hammer){m, i};
        pthread_create(&th[i], NULL, hammer_run, &args[i]);
    }
    for (int i = 0; i < HAMMER_THREADS; i++)
        pthread_join(th[i], NULL);

    const uint64_t total = (uint64_t)HAMMER_THREADS * HAMMER_ROUNDS;
    mc_counter *c = mc_metrics_counter(m, "hammer_total", "", "k=\"v\"");
    CHECK(mc_counter_value(c) == total, "counter %llu, want %llu",
          (unsigned long long)mc_counter_value(c), (unsigned long long)total);
    double g = mc_gauge_value(mc_metrics_gauge(m, "hammer_gauge", "", NULL));
    CHECK(g == 0.5 * (double)total, "gauge %f, want %f", g, 0.5 * (double)total);
    const double bounds[] = {0.5, 1.5};
    mc_histogram *h = mc_metrics_histogram(m, "hammer_seconds", "", NULL, bounds, 2);
    CHECK(mc_histogram_count(h) == total, "histogram count %llu",
          (unsigned long long)mc_histogram_count(h));
    char *text = mc_metrics_render(m);
    char line[128];
    /* Rounds per thread split 33334 / 33333 / 33333 over values 0, 1, 2. */
    uint64_t zeros = (uint64_t)HAMMER_THREADS * ((HAMMER_ROUNDS + 2) / 3);
    uint64_t ones = (uint64_t)HAMMER_THREADS * ((HAMMER_ROUNDS + 1) / 3);
    snprintf(line, sizeof line, "hammer_seconds_bucket{le=\"0.5\"} %llu\n",
             (unsigned long long)zeros);
    CHECK(contains(text, line), "first bucket");
    snprintf(line, sizeof line, "hammer_seconds_bucket{le=\"1.5\"} %llu\n",
             (unsigned long long)(zeros + ones));
    CHECK(contains(text, line), "second bucket");
    snprintf(line, sizeof line, "hammer_seconds_sum %llu\n",
             (unsigned long long)(ones + 2 * (total - zeros - ones)));
    CHECK(contains(text, line), "sum");
    CHECK(count_of(text, "# TYPE hammer_total ") == 1, "one TYPE line per family");
    CHECK(count_of(text, "hammer_total{k=\"v\"}") == 1, "one series despite 4 registrations");
    free(text);
    mc_metrics_free(m);
}

/* ---------------------------------------------------------------------------
 * HTTP server
 * ------------------------------------------------------------------------ */

typedef struct response {
    long status;
    char body[8192];
    size_t len;
    char content_type[128];
    char allow[128];
} response;

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    response *r = arg;
    size_t n = size * nmemb;
    size_t room = sizeof r->body - 1 - r->len;
    memcpy(r->body + r->len, data, n < room ? n : room);
    r->len += n < room ? n : room;
    r->body[r->len] = '\0';
    return n;
}

/* Keeps the value of the headers the test looks at, trimmed of CRLF. */
static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
    response *r = arg;
    size_t n = size * nmemb;
    struct {
        const char *name;
        char *dst;
        size_t cap;
    } want[] = {{"content-type:", r->content_type, sizeof r->content_type},
                {"allow:", r->allow, sizeof r->allow}};
    for (size_t i = 0; i < 2; i++) {
        size_t k = strlen(want[i].name);
        if (n > k && strncasecmp(data, want[i].name, k) == 0) {
            const char *v = data + k;
            size_t vlen = n - k;
            while (vlen && (*v == ' ')) {
                v++;
                vlen--;
            }
            while (vlen && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n'))
                vlen--;
            if (vlen >= want[i].cap)
                vlen = want[i].cap - 1;
            memcpy(want[i].dst, v, vlen);
            want[i].dst[vlen] = '\0';
        }
    }
    return n;
}

/* Sends one request; method "HEAD" or "POST" or NULL for GET. */
static response fetch(uint16_t port, const char *method, const char *path)
{
    response r = {0};
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%u%s", (unsigned)port, path);
    CURL *c = curl_easy_init();
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_NOPROXY,
                     "*"); /* an http_proxy in the environment must not matter */
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    if (method && strcmp(method, "HEAD") == 0) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (method && strcmp(method, "POST") == 0) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "x=1");
    }
    CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK) {
        fprintf(stderr, "curl %s %s: %s\n", method ? method : "GET", url, curl_easy_strerror(rc));
        r.status = -1;
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    }
    curl_easy_cleanup(c);
    return r;
}

typedef struct flag_check {
    atomic_bool ok;
    const char *reason;
} flag_check;

static bool check_flag(void *arg, char *why, size_t whylen)
{
    flag_check *f = arg;
    if (atomic_load(&f->ok))
        return true;
    snprintf(why, whylen, "%s", f->reason);
    return false;
}

static void test_http(void)
{
    mc_metrics *m = mc_metrics_new();
    mc_counter *c = mc_metrics_counter(m, "http_test_total", "Test counter.", "x=\"1\"");
    mc_counter_add(c, 42);

    char err[256] = "";
    mc_http_options opts = {.bind_address = "127.0.0.1", .port = 0, .metrics = m};
    mc_http_server *s = mc_http_start(&opts, err, sizeof err);
    CHECK(s != NULL, "server starts on an ephemeral port: %s", err);
    if (!s) {
        mc_metrics_free(m);
        return;
    }
    uint16_t port = mc_http_port(s);
    CHECK(port != 0, "real port reported");

    response r = fetch(port, NULL, "/metrics");
    CHECK(r.status == 200, "GET /metrics status %ld", r.status);
    CHECK(strcmp(r.content_type, "text/plain; version=0.0.4; charset=utf-8") == 0,
          "metrics content type '%s'", r.content_type);
    CHECK(contains(r.body, "# TYPE http_test_total counter\nhttp_test_total{x=\"1\"} 42\n"),
          "metrics body");

    r = fetch(port, "HEAD", "/metrics");
    CHECK(r.status == 200 && r.len == 0, "HEAD /metrics: %ld, %zu body bytes", r.status, r.len);

    r = fetch(port, NULL, "/healthz");
    CHECK(r.status == 200 && strcmp(r.body, "ok\n") == 0, "healthz without checks: %ld '%s'",
          r.status, r.body);
    r = fetch(port, NULL, "/readyz");
    CHECK(r.status == 200 && strcmp(r.body, "ok\n") == 0, "readyz without checks: %ld '%s'",
          r.status, r.body);

    flag_check loop = {.reason = "loop stalled"};
    atomic_init(&loop.ok, true);
    flag_check restore = {.reason = "restoring state\n(3 of 12 partitions)"};
    atomic_init(&restore.ok, false);
    char name[32];
    snprintf(name, sizeof name, "store-restore"); /* the server must keep its own copy */
    mc_http_add_check(s, "health", "loop", check_flag, &loop);
    mc_http_add_check(s, "ready", name, check_flag, &restore);
    memset(name, 'X', sizeof name - 1);

    r = fetch(port, NULL, "/healthz");
    CHECK(r.status == 200 && strcmp(r.body, "ok\nloop: ok\n") == 0, "healthz: %ld '%s'", r.status,
          r.body);
    r = fetch(port, NULL, "/readyz");
    CHECK(r.status == 503, "failing readiness check gives 503, got %ld", r.status);
    CHECK(strcmp(r.body, "failed\nstore-restore: restoring state (3 of 12 partitions)\n") == 0,
          "readyz body names the failing check on one line: '%s'", r.body);
    r = fetch(port, "HEAD", "/readyz");
    CHECK(r.status == 503 && r.len == 0, "HEAD /readyz: %ld", r.status);

    atomic_store(&restore.ok, true);
    r = fetch(port, NULL, "/readyz");
    CHECK(r.status == 200 && strcmp(r.body, "ok\nstore-restore: ok\n") == 0,
          "readyz after the flip: %ld '%s'", r.status, r.body);

    atomic_store(&loop.ok, false);
    r = fetch(port, NULL, "/healthz");
    CHECK(r.status == 503 && contains(r.body, "loop: loop stalled\n"), "healthz failing: %ld",
          r.status);

    r = fetch(port, "POST", "/metrics");
    CHECK(r.status == 405, "POST gives 405, got %ld", r.status);
    CHECK(strcmp(r.allow, "GET, HEAD") == 0, "Allow header '%s'", r.allow);

    /* A scraper reuses its connection: the second GET must not reconnect. */
    CURL *keep = curl_easy_init();
    response kr = {0};
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/metrics", (unsigned)port);
    curl_easy_setopt(keep, CURLOPT_URL, url);
    curl_easy_setopt(keep, CURLOPT_NOPROXY, "*");
    curl_easy_setopt(keep, CURLOPT_TIMEOUT, 10L);
    curl_easy_setopt(keep, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(keep, CURLOPT_WRITEDATA, &kr);
    long connects = -1;
    CURLcode rc1 = curl_easy_perform(keep);
    CURLcode rc2 = curl_easy_perform(keep);
    curl_easy_getinfo(keep, CURLINFO_NUM_CONNECTS, &connects);
    curl_easy_cleanup(keep);
    CHECK(rc1 == CURLE_OK && rc2 == CURLE_OK && connects == 0,
          "keep-alive: second GET opened %ld new connection(s)", connects);

    r = fetch(port, NULL, "/nope");
    CHECK(r.status == 404, "unknown path gives 404, got %ld", r.status);
    r = fetch(port, NULL, "/metrics/extra");
    CHECK(r.status == 404, "path prefix is not a match, got %ld", r.status);

    /* The same port again must fail with a message naming address and port. */
    char want[64];
    snprintf(want, sizeof want, "127.0.0.1:%u", (unsigned)port);
    mc_http_options clash = {.bind_address = "127.0.0.1", .port = port, .metrics = m};
    mc_http_server *s2 = mc_http_start(&clash, err, sizeof err);
    CHECK(s2 == NULL, "second server on the same port must fail");
    CHECK(strstr(err, want) && strstr(err, "in use"), "clash error names the endpoint: '%s'", err);
    mc_http_stop(s2);

    /* A process's server is not ready before anything can say it is: the
     * runner registers its check only after the server is up. */
    mc_http_options strict = {
        .bind_address = "127.0.0.1", .port = 0, .metrics = m, .ready_needs_check = true};
    mc_http_server *s3 = mc_http_start(&strict, err, sizeof err);
    CHECK(s3 != NULL, "strict server: %s", err);
    if (s3) {
        unsigned short p3 = mc_http_port(s3);
        r = fetch(p3, NULL, "/readyz");
        CHECK(r.status == 503 && strcmp(r.body, "starting\n") == 0,
              "readyz before any check: %ld '%s'", r.status, r.body);
        r = fetch(p3, NULL, "/healthz");
        CHECK(r.status == 200, "healthz needs no check: %ld", r.status);
        flag_check up = {.reason = "never"};
        atomic_init(&up.ok, true);
        mc_http_add_check(s3, "ready", "runner", check_flag, &up);
        r = fetch(p3, NULL, "/readyz");
        CHECK(r.status == 200, "readyz once a passing check exists: %ld '%s'", r.status, r.body);
        mc_http_stop(s3);
    }

    /* A numeric address this host does not have: no DNS involved. */
    err[0] = '\0';
    mc_http_options bad = {.bind_address = "192.0.2.1", .port = 0, .metrics = m};
    CHECK(mc_http_start(&bad, err, sizeof err) == NULL && strstr(err, "192.0.2.1:0"),
          "foreign bind address: '%s'", err);

    mc_http_stop(s);
    mc_metrics_free(m);
}

int main(void)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        fprintf(stderr, "curl_global_init failed\n");
        return 1;
    }
    test_registration();
    test_render();
    test_histogram();
    test_escaping();
    test_concurrency();
    test_http();
    curl_global_cleanup();
    return check_exit("test_metrics_http");
}
