/* IANA time zones read straight from TZif files (RFC 8536), for recurring
 * schedules that are written in a zone's wall-clock time. The C library's
 * localtime/mktime/tzset read the process-global TZ and keep hidden state, so
 * a scheduler that serves many zones from many threads cannot use them: a
 * zone here is a plain immutable value. */
#ifndef MOONCAKE_TZ_H
#define MOONCAKE_TZ_H

#include <stddef.h>
#include <stdint.h>

typedef struct mc_tz mc_tz;

#define MC_TZ_DEFAULT_DIR "/usr/share/zoneinfo"
#define MC_TZ_NAME_MAX 255 /* longest zone name accepted */

/* Loads zone `name` ("UTC", "Asia/Shanghai", "America/New_York") from the
 * TZif file dir/name; dir NULL means MC_TZ_DEFAULT_DIR. "UTC" and "Etc/UTC"
 * are built in and need no file. Names with "..", a leading '/', an empty or
 * dot-led component, or characters other than letters, digits and "/_+-." are
 * refused before any file is opened. Returns NULL with a sentence in err
 * ("unknown time zone 'Mars/Base'") on failure. The caller frees the zone with
 * mc_tz_free. A zone is immutable once loaded: share it between threads
 * freely. Reads the file; otherwise thread-safe. */
mc_tz *mc_tz_load(const char *dir, const char *name, char *err, size_t errlen);

/* Parses TZif bytes - version 1, or 2 and later (64-bit data, and the POSIX TZ
 * footer such as "CET-1CEST,M3.5.0,M10.5.0/3" that governs instants after the
 * last transition, including the version 3 extensions: hours up to 167 and
 * negative rule times). Files with leap-second records ("right/" zones) are
 * refused: schedules run on POSIX time. name (NULL: "") is kept for
 * mc_tz_name. Returns NULL with the reason in err; the caller frees the zone
 * with mc_tz_free. Accepts any bytes (it is fuzzed). Thread-safe. */
mc_tz *mc_tz_parse(const char *name, const uint8_t *data, size_t len, char *err, size_t errlen);

/* Frees a zone; NULL is fine. */
void mc_tz_free(mc_tz *tz);

/* The name the zone was loaded or parsed under; owned by the zone. */
const char *mc_tz_name(const mc_tz *tz);

/* The UTC offset (local minus UTC, in seconds) in effect at instant t (epoch
 * seconds). Thread-safe, like every read of a zone. */
int32_t mc_tz_offset_at(const mc_tz *tz, int64_t t);

/* The stretch of time around instant t in which the offset does not change:
 * [*start, *end), with INT64_MIN / INT64_MAX for an unbounded side; returns
 * the offset. Neighbouring stretches may have the same offset (a change of
 * abbreviation or of DST flag only), so a boundary is not always a jump.
 * What the cron engine walks to map wall-clock times onto instants. */
int32_t mc_tz_period(const mc_tz *tz, int64_t t, int64_t *start, int64_t *end);

/* Proleptic Gregorian calendar arithmetic (H. Hinnant's algorithms), exact
 * for any year an int64 day count can hold; pure functions, thread-safe. Days since 1970-01-01 of
 * y-m-d (m 1-12, d 1-31; out-of-range days count on, e.g. Jan 32 = Feb 1). */
int64_t mc_days_from_civil(int64_t y, int m, int d);
/* The date of day number z (days since 1970-01-01). */
void mc_civil_from_days(int64_t z, int64_t *y, int *m, int *d);
/* Day of the week of day number z: 0 = Sunday ... 6 = Saturday. */
int mc_weekday(int64_t z);
/* Days in month m (1-12) of year y. */
int mc_month_days(int64_t y, int m);

#endif
