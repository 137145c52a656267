/* Reading the headers of `wheel` records (see wheel_topic.h). */
#include "wheel_topic.h"

#include <string.h>

#include "config.h"

bool mc_wheel_record_is_far(const rd_kafka_message_t *m)
{
    rd_kafka_headers_t *h = NULL;
    const void *v;
    size_t n;
    if (rd_kafka_message_headers(m, &h) || !h)
        return false;
    if (rd_kafka_header_get_last(h, MC_ROUTE_HEADER, &v, &n))
        return false;
    return n == sizeof MC_ROUTE_STORE - 1 && memcmp(v, MC_ROUTE_STORE, n) == 0;
}

static bool position_header(const rd_kafka_message_t *m, int64_t *position)
{
    rd_kafka_headers_t *h = NULL;
    const void *v;
    size_t n;
    char text[24];
    if (rd_kafka_message_headers(m, &h) || !h)
        return false;
    if (rd_kafka_header_get_last(h, MC_STORE_POSITION_HEADER, &v, &n) || n == 0 || n >= sizeof text)
        return false;
    memcpy(text, v, n);
    text[n] = '\0';
    return mc_parse_int64(text, 0, INT64_MAX, position);
}

bool mc_wheel_record_store_position(const rd_kafka_message_t *m, int64_t *position)
{
    return !m->payload && position_header(m, position);
}

bool mc_wheel_record_handoff_position(const rd_kafka_message_t *m, int64_t *position)
{
    return m->payload && m->key && position_header(m, position);
}
