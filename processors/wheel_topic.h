/* The protocol of the `wheel` topic, shared by its writers (router, store)
 * and its readers (store, wheel). Every record is keyed by the task key and
 * lives in the task's partition number:
 *   WheelEntry Submit v                  a task due within the horizon (router),
 *                                        or handed over by the store
 *   WheelEntry Submit v + route: store   a task due later: the store keeps it
 *   WheelEntry Cancel v                  cancel every version below v
 *   null key, null value + position: P   the store has applied every record
 *                                        below offset P of this partition
 *   a hand-off also carries position: P  written when the store had applied
 *                                        every record below P
 * Versions are tasks-topic offsets, so "newer" is a number comparison. */
#ifndef MOONCAKE_WHEEL_TOPIC_H
#define MOONCAKE_WHEEL_TOPIC_H

#include <stdbool.h>
#include <stdint.h>

#include "record.h"

#define MC_ROUTE_HEADER "mooncake-route"
#define MC_ROUTE_STORE "store"
#define MC_STORE_POSITION_HEADER "mooncake-store-position"

/* Whether the router addressed this record to the store (a far task). */
bool mc_wheel_record_is_far(const mc_record *r);
/* Whether this is the store's position marker; *position gets P. */
bool mc_wheel_record_store_position(const mc_record *r, int64_t *position);
/* Whether this is a hand-off from the store carrying its position; *position
 * gets P. */
bool mc_wheel_record_handoff_position(const mc_record *r, int64_t *position);

#endif
