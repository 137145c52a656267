/* Structured log lines: logfmt by default, JSON when asked, one write(2) each. */
#include "log.h"

#include "clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const level_names[] = {"debug", "info", "warn", "error"};

bool mc_log_level_parse(const char *s, mc_log_level *out)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (mc_log_level)i;
            return true;
        }
    }
    if (strcmp(s, "warning") == 0) {
        *out = MC_LOG_WARN;
        return true;
    }
    return false;
}

/* Line being assembled; overlong lines are cut rather than split, because a
 * half line from another thread in the middle would be worse. */
typedef struct line {
    char buf[4096];
    size_t len;
} line;

static void put_raw(line *l, const char *s, size_t n)
{
    size_t room = sizeof l->buf - 1 - l->len;
    if (n > room)
        n = room;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static void put_str(line *l, const char *s)
{
    put_raw(l, s, strlen(s));
}

/* Quotes a value for logfmt (when it has spaces, quotes or '=') or JSON. */
static void put_value(line *l, const char *v, bool json)
{
    bool quote = json || v[0] == '\0' || strpbrk(v, " \"=\t\n\\") != NULL;
    if (quote)
        put_raw(l, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            put_raw(l, esc, 2);
        } else if (*p == '\n') {
            put_raw(l, "\\n", 2);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            put_str(l, esc);
        } else {
            put_raw(l, (const char *)p, 1);
        }
    }
    if (quote)
        put_raw(l, "\"", 1);
}

static void put_field(line *l, const char *k, const char *v, bool json, bool first)
{
    if (json) {
        put_str(l, first ? "{\"" : ",\"");
        put_str(l, k);
        put_str(l, "\":");
    } else {
        if (!first)
            put_raw(l, " ", 1);
        put_str(l, k);
        put_raw(l, "=", 1);
    }
    put_value(l, v, json);
}

static void log_va(const mc_logger *lg, mc_log_level level, const char *msg, va_list ap)
{
    if (lg && level < lg->level)
        return;
    bool json = lg && lg->json;
    line l = {.len = 0};
    int64_t now = mc_now_ms();
    time_t sec = (time_t)(now / 1000);
    struct tm tm;
    gmtime_r(&sec, &tm);
    char tbuf[40];
    size_t n = strftime(tbuf, sizeof tbuf, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(tbuf + n, sizeof tbuf - n, ".%03dZ", (int)(now % 1000));
    put_field(&l, "ts", tbuf, json, true);
    put_field(&l, "level", level_names[level], json, false);
    if (lg && lg->role)
        put_field(&l, "role", lg->role, json, false);
    put_field(&l, "msg", msg, json, false);
    const char *k;
    while ((k = va_arg(ap, const char *)) != NULL) {
        const char *v = va_arg(ap, const char *);
        put_field(&l, k, v ? v : "", json, false);
    }
    if (json)
        put_raw(&l, "}", 1);
    l.buf[l.len++] = '\n';
    ssize_t w = write(STDERR_FILENO, l.buf, l.len);
    (void)w; /* nowhere better to report a failing stderr */
}

void mc_log(const mc_logger *lg, mc_log_level level, const char *msg, ...)
{
    va_list ap;
    va_start(ap, msg);
    log_va(lg, level, msg, ap);
    va_end(ap);
}

/* Wraps log_va, whose varargs list needs a terminating NULL. */
static void log_plain(const mc_logger *lg, mc_log_level level, const char *msg, ...)
{
    va_list ap;
    va_start(ap, msg);
    log_va(lg, level, msg, ap);
    va_end(ap);
}

void mc_logf(const mc_logger *lg, mc_log_level level, const char *fmt, ...)
{
    if (lg && level < lg->level)
        return;
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    log_plain(lg, level, msg, (const char *)NULL);
}
