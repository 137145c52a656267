/* When to try a failed call again, and when to stop: exponential backoff with
 * full jitter, the server's Retry-After, and which HTTP statuses are not
 * worth retrying. Pure functions of their arguments (the caller supplies the
 * randomness and the clock), so the retry processor stays deterministic
 * under test. */
#ifndef MOONCAKE_RETRY_POLICY_H
#define MOONCAKE_RETRY_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct mc_backoff {
    int max_attempts;           /* attempts in all, the first included */
    int64_t initial_backoff_ms; /* the ceiling after the first failure */
    double multiplier;          /* the ceiling grows by this after each failure */
    int64_t max_backoff_ms;     /* no delay is longer */
} mc_backoff;

/* Retry-After values are clamped to this (a year): beyond it a value is
 * more likely garbage than intent, and the clamp keeps the arithmetic far
 * from overflow. */
#define MC_RETRY_AFTER_MAX_MS (365LL * 24 * 3600 * 1000)

/* The delay before the next attempt after failed_attempt (1-based: 1 after
 * the first call failed) failed. Full jitter (AWS Architecture Blog,
 * "Exponential Backoff And Jitter"): delay = random % (ceiling + 1), where
 * ceiling = min(max_backoff_ms, initial_backoff_ms * multiplier^(failed_attempt
 * - 1)), saturating rather than overflowing for any attempt. retry_after_ms is
 * the server's Retry-After, -1 if none: when given it is a floor - the delay
 * is max(jittered delay, retry_after_ms) - except that no delay exceeds
 * max_backoff_ms, Retry-After included (a server asking for a day does not
 * hold a task past the policy the client chose). random is any uniformly
 * distributed 64-bit value. Expects a policy mc_backoff_validate accepted;
 * failed_attempt < 1 counts as 1. */
int64_t mc_backoff_delay_ms(const mc_backoff *p, int failed_attempt, int64_t retry_after_ms,
                            uint64_t random);
/* Whether failed_attempt (1-based) was the last allowed: failed_attempt >=
 * max_attempts. */
bool mc_backoff_exhausted(const mc_backoff *p, int failed_attempt);
/* 0 if p is usable (max_attempts >= 1, initial_backoff_ms > 0, multiplier
 * finite and >= 1, max_backoff_ms >= initial_backoff_ms); else -1 with a line
 * in err saying which field is wrong and why. */
int mc_backoff_validate(const mc_backoff *p, char *err, size_t errlen);

/* Whether an HTTP status is a permanent failure, one that retrying cannot
 * fix: any 4xx except 408 Request Timeout and 429 Too Many Requests. False
 * for everything else (0 meaning no response, 1xx-3xx, 5xx). */
bool mc_http_status_permanent(int status);

/* The delay a Retry-After header value asks for, in ms from now_ms (Unix
 * ms): delay-seconds ("120"), or an HTTP-date in IMF-fixdate ("Sun, 06 Nov
 * 1994 08:49:37 GMT") or the obsolete RFC 850 ("Sunday, 06-Nov-94 08:49:37
 * GMT", two-digit years resolved per RFC 9110 5.6.7) and asctime ("Sun Nov  6
 * 08:49:37 1994") forms, always UTC. A date in the past gives 0. Clamped to
 * MC_RETRY_AFTER_MAX_MS. -1 when value is NULL, empty or not one of these
 * forms (surrounding spaces and tabs are allowed). Independent of locale and
 * time zone. */
int64_t mc_parse_retry_after(const char *value, size_t len, int64_t now_ms);

#endif
