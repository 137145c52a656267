/* libFuzzer harness for what the alarms processor reads back from Kafka:
 * an `alarm-events` value (mc_alarm_event_decode) and an `alarms` changelog
 * value (mc_alarm_batch_decode). The first byte picks which. Anything is
 * refused with a reason or accepted as a line or batch that keeps its
 * bounds (at most MC_ALARM_FIRST of each list, reasons cut to
 * MC_ALARM_REASON_MAX) and writes out again as JSON that reads back the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alarm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
    fprintf(stderr, "%s\n", what);
    abort();
}

static void check_event(const uint8_t *data, size_t size)
{
    mc_alarm_line l;
    char err[256] = "";
    if (mc_alarm_event_decode(data, size, &l, err, sizeof err) != 0) {
        if (!err[0])
            fail("event refused without a reason");
        return;
    }
    if (strlen(l.reason) > MC_ALARM_REASON_MAX)
        fail("reason longer than the bound");
    mc_buf b = {0}, again = {0};
    mc_alarm_line back;
    if (mc_alarm_event_encode(&l, &b) != 0 ||
        mc_alarm_event_decode(b.data, b.len, &back, err, sizeof err) != 0)
        fail("an accepted event does not write out and read back");
    if (mc_alarm_event_encode(&back, &again) != 0 || again.len != b.len ||
        memcmp(again.data, b.data, b.len) != 0)
        fail("an event read back differs");
    mc_alarm_line_clear(&back);
    mc_alarm_line_clear(&l);
    mc_buf_free(&b);
    mc_buf_free(&again);
}

static void check_batch(const uint8_t *data, size_t size)
{
    mc_alarm_batch batch = {0}, back = {0};
    char err[256] = "";
    if (mc_alarm_batch_decode(data, size, &batch, err, sizeof err) != 0) {
        if (!err[0])
            fail("batch refused without a reason");
        return;
    }
    if (batch.n_first > MC_ALARM_FIRST || batch.n_jobs > MC_ALARM_FIRST ||
        (int64_t)batch.n_first > batch.count)
        fail("batch beyond its bounds");
    mc_buf b = {0}, again = {0};
    if (mc_alarm_batch_encode(&batch, &b) != 0 ||
        mc_alarm_batch_decode(b.data, b.len, &back, err, sizeof err) != 0 ||
        mc_alarm_batch_encode(&back, &again) != 0 || again.len != b.len ||
        memcmp(again.data, b.data, b.len) != 0)
        fail("an accepted batch does not read back the same");
    mc_buf body = {0};
    if (mc_alarm_body("app", &batch, 1, &body) != 0)
        fail("no body for an accepted batch");
    mc_buf_free(&body);
    mc_alarm_batch_clear(&batch);
    mc_alarm_batch_clear(&back);
    mc_buf_free(&b);
    mc_buf_free(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] & 1)
        check_batch(data + 1, size - 1);
    else
        check_event(data + 1, size - 1);
    return 0;
}
