/* Reading the headers of `wheel` records (see wheel_topic.h). */
#include "wheel_topic.h"

#include <string.h>

bool mc_wheel_record_is_far(const mc_record *r)
{
    const void *v;
    size_t n;
    return mc_record_header(r, MC_ROUTE_HEADER, &v, &n) && n == sizeof MC_ROUTE_STORE - 1 &&
           memcmp(v, MC_ROUTE_STORE, n) == 0;
}

bool mc_wheel_record_store_position(const mc_record *r, int64_t *position)
{
    return !r->value && mc_record_header_int(r, MC_STORE_POSITION_HEADER, position);
}

bool mc_wheel_record_handoff_position(const mc_record *r, int64_t *position)
{
    return r->value && r->key && mc_record_header_int(r, MC_STORE_POSITION_HEADER, position);
}
