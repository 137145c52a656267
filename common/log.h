/* Structured logging (logfmt or JSON lines on stderr). A logger is a small
 * value passed to whoever logs, not a global, so the roles of `mooncake all`
 * can carry their own role name and level. */
#ifndef MOONCAKE_LOG_H
#define MOONCAKE_LOG_H

#include <stdbool.h>

typedef enum mc_log_level {
    MC_LOG_DEBUG = 0,
    MC_LOG_INFO = 1,
    MC_LOG_WARN = 2,
    MC_LOG_ERROR = 3,
} mc_log_level;

typedef struct mc_logger {
    mc_log_level level;
    bool json;        /* JSON lines instead of logfmt */
    const char *role; /* "router", ... (static or outliving the logger) */
} mc_logger;

/* Parses "debug|info|warn|error"; returns false on anything else. */
bool mc_log_level_parse(const char *s, mc_log_level *out);

/* Writes one line: ts, level, role, msg, then the optional key=value pairs
 * given as alternating const char * arguments terminated by NULL, e.g.
 *   mc_log(lg, MC_LOG_INFO, "routed", "key", key, "topic", t, NULL);
 * One write(2) per line, so lines from several threads never interleave. */
void mc_log(const mc_logger *lg, mc_log_level level, const char *msg, ...);

/* printf-style message with no extra fields. */
void mc_logf(const mc_logger *lg, mc_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
