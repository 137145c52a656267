/* The check every C unit test uses. A failed CHECK prints file:line, the
 * condition and an optional printf-style message, counts the failure and lets
 * the test go on, so one run shows every broken behaviour rather than the
 * first; check_exit() prints the summary line and is main's return value. */
#ifndef MOONCAKE_TEST_CHECK_H
#define MOONCAKE_TEST_CHECK_H

#include <stdarg.h>
#include <stdio.h>

static int check_failures; /* a test program's own tally */

__attribute__((format(printf, 4, 5))) static void check_fail(const char *file, int line,
                                                             const char *cond, const char *fmt, ...)
{
    check_failures++;
    fprintf(stderr, "%s:%d: check failed: %s:", file, line, cond);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* CHECK(cond) or CHECK(cond, "format", args...). */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond))                                                                               \
            check_fail(__FILE__, __LINE__, #cond, " " __VA_ARGS__);                                \
    } while (0)

/* Prints "<name>: all checks passed" or the failure count; returns the exit code. */
static int check_exit(const char *name)
{
    if (check_failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
        return 1;
    }
    printf("%s: all checks passed\n", name);
    return 0;
}

#endif
