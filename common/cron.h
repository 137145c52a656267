/* Cron expressions for recurring jobs: the parser, and the calculator of the
 * next instant a schedule fires, in the job's IANA time zone (tz.h).
 *
 * Forms (fields separated by spaces or tabs; everything case-insensitive):
 *   5 fields, classic/croniter:  minute hour day-of-month month day-of-week
 *                                (seconds are 0)
 *   6 fields, Quartz/XXL-JOB:    second minute hour day-of-month month day-of-week
 *   7 fields, Quartz:            the 6 fields, then year (1970-2099)
 *   macros: @yearly = @annually = "0 0 1 1 *", @monthly = "0 0 1 * *",
 *           @weekly = "0 0 * * 0", @daily = @midnight = "0 0 * * *",
 *           @hourly = "0 * * * *" (each the 5-field form)
 *
 * Ranges: second, minute 0-59; hour 0-23; day of month 1-31; month 1-12 or
 * JAN-DEC; year 1970-2099. Day of week:
 *   5 fields: 0-7, 0 and 7 both Sunday (1 = Monday), or SUN-SAT
 *   6/7 fields: 1-7 with 1 = Sunday (Quartz numbering: 2 = Monday, 7 =
 *               Saturday), or SUN-SAT; 0 is refused
 * so "MON" is always Monday, and a number never means two different days
 * within one form. Names are the three-letter English abbreviations only.
 *
 * Items, comma-separated lists of them in every field:
 *   *          every value          ?      "no restriction", day fields only,
 *                                          and alone in its field
 *   a          one value            a-b    a to b; a > b wraps round (FRI-MON,
 *                                          22-2 in hours, 25-5 in days)
 *   * / n, a/n, a-b/n  every n-th value from a (from the field's lowest
 *              for *), to b or the field's highest; steps count on through
 *              a wrap (hours 23-3/2 = 23, 1, 3); a-a is just a
 * Day of month also: L (last day), L-n (n days before the last, n 0-30),
 *   LW (the last weekday, Mon-Fri, of the month), nW (the weekday nearest
 *   day n, staying in the month: 1W on a Saturday is Monday the 3rd; no fire
 *   in a month without day n).
 * Day of week also: dL (the last weekday d of the month: "FRIL" anywhere,
 *   "5L" in 5-field form, "6L" in 6/7-field form - each form's numbering)
 *   and d#k (the k-th weekday d, k 1-5, "FRI#2"; no fire in a month without
 *   a k-th). A bare L is refused in day of week (Quartz reads it as
 *   Saturday, croniter not at all).
 *
 * Day of month and day of week together:
 *   5 fields (croniter's rule): if both are restricted, a day matches when
 *     EITHER matches ("0 0 13 * 5" = every 13th and every Friday). A field is
 *     unrestricted when it is "*" or "?" - or when it covers its whole range
 *     (1-31, 0-6, * /1...) while the other day field contains a '*'.
 *   6/7 fields (Quartz's rule): exactly one of the two must be "?"; the other
 *     alone decides.
 *
 * Time zones and daylight saving, for a schedule evaluated in zone tz:
 *   - A scheduled wall-clock time that does not exist (the spring-forward
 *     gap, e.g. 02:30 on the night clocks go 02:00 -> 03:00) fires once, at
 *     the first instant after the gap (03:00 new time). Several scheduled
 *     times in one gap (every 15 minutes, say) collapse into that one fire.
 *   - A wall-clock time that happens twice (the fall-back overlap) fires
 *     once, at its first occurrence. This holds for every schedule, sub-hour
 *     ones included: a job every 15 minutes fires at 02:00, 02:15, 02:30 and
 *     02:45 of the first pass through the repeated hour and next at 03:00
 *     after it - every wall-clock time once, none twice.
 *   Put as one rule: the next fire after instant A is at the first instant
 *   the zone's clock reads W or later, where W is the first scheduled
 *   reading above every reading the clock has shown up to A. So a job
 *   created inside the repeated hour's second pass next fires after it.
 */
#ifndef MOONCAKE_CRON_H
#define MOONCAKE_CRON_H

#include <stddef.h>
#include <stdint.h>

#include "tz.h"

typedef struct mc_cron mc_cron; /* opaque, immutable once parsed */

/* How far mc_cron_next looks: a schedule with no fire within this many years
 * after the start counts as never firing. Eight, not five, so that a yearly
 * Feb 29 job still fires across 2100 (not a leap year: 2096 -> 2104). */
#define MC_CRON_HORIZON_YEARS 8

/* Parses a cron expression (forms and semantics above). Returns NULL with a
 * sentence in err naming the field and what is wrong ("field 3 (hour): 25 is
 * out of range 0-23") on error. The caller frees the result with
 * mc_cron_free; it is immutable, so threads may share it. Thread-safe. */
mc_cron *mc_cron_parse(const char *expr, char *err, size_t errlen);

/* Frees an expression; NULL is fine. */
void mc_cron_free(mc_cron *c);

/* The first instant the schedule fires strictly after after_ms (epoch
 * milliseconds), reading its fields as wall-clock time in tz (DST rules
 * above), in epoch milliseconds - always a whole second. -1 when it does not
 * fire within MC_CRON_HORIZON_YEARS after after_ms (e.g. "0 0 0 30 2 ?": Feb
 * 30 never comes), or after the year 9999. Skips whole years, months, days,
 * hours and minutes that cannot match: a few microseconds per call.
 * Thread-safe. */
int64_t mc_cron_next(const mc_cron *c, const mc_tz *tz, int64_t after_ms);

#endif
