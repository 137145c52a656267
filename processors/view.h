/* The view processor (see view.c) and how the gateway asks it. */
#ifndef MOONCAKE_VIEW_H
#define MOONCAKE_VIEW_H

#include "processor.h"
#include "view_list.h"

extern const mc_processor mc_view_processor;

/* Where a question to the view meets it: made before the view's runner and
 * given to it as create_arg, and to whoever asks (the gateway of the same
 * process). Caller owns it (mc_view_door_free) and frees it after both. */
typedef struct mc_view_door mc_view_door;
mc_view_door *mc_view_door_new(void);
void mc_view_door_free(mc_view_door *d);

/* The answer to "what is task app/task now?": 200 with a JSON object, or
 * with a sentence: 404 (never seen, or forgotten after the history), 421
 * (another instance holds the key's partition: ask it), 503 (the view is
 * not running here, is restoring, or could not catch up within
 * timeout_ms). *body is the caller's (free()). Blocks until answered; any
 * thread but the view's. */
int mc_view_ask_task(mc_view_door *d, const char *app_id, const char *task_id, int timeout_ms,
                     char **body);
/* The newest version of task app/task as the view keeps it: 200 with its
 * StoredTask bytes in base64 (secrets and all: for the gateway of this
 * process to submit again, never for an answer), or a sentence: 404 and 421
 * and 503 as above, 409 when the view keeps no bytes of it. *body is the
 * caller's. Blocks; any thread but the view's. */
int mc_view_ask_stored_task(mc_view_door *d, const char *app_id, const char *task_id,
                            int timeout_ms, char **body);
/* The answer to GET /api/tasks (stats false) or /api/stats for the n
 * partitions named (n 0: every one this view holds) that this view holds,
 * with every record committed before the question in it: 200 with
 * {"partitions": [those answered for], "partitionCount": n, "tasks": [...],
 * "more": bool} or {"partitions", "partitionCount", "tasks": {state:
 * count}, "lastHour": {...}}; 503 as above.
 * f and its strings are copied. *body is the caller's. Blocks; any thread
 * but the view's. */
int mc_view_ask_tasks(mc_view_door *d, const mc_view_filter *f, bool stats,
                      const int32_t *partitions, size_t n, int timeout_ms, char **body);

#endif
