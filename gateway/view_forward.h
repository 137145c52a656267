/* Finding the view instance that holds a key's partition and asking it:
 * Kafka Streams' interactive queries across instances. Each view consumer
 * carries its process's URL in its client.id (mc_advertised_client_id); the
 * view group's description says which member holds which partition. A
 * question for a partition held elsewhere is sent there, once: the answer
 * comes back as the owner's gateway gave it. Any thread (the HTTP threads);
 * the owner table is shared under a lock. */
#ifndef MOONCAKE_VIEW_FORWARD_H
#define MOONCAKE_VIEW_FORWARD_H

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stdbool.h>

#include "config.h"
#include "log.h"
#include "view_list.h"

/* The header a forwarded question carries, so it is never sent on again. */
#define MC_FORWARDED_HEADER "Mooncake-Forwarded"

/* The view of this process, as the gateway asks it (processors/view.h):
 * the program wires it in, so the gateway does not include the processor. */
typedef struct mc_view_asker {
    int (*task)(void *cls, const char *app_id, const char *task_id, int timeout_ms, char **body);
    int (*tasks)(void *cls, const mc_view_filter *f, bool stats, const int32_t *partitions,
                 size_t n, int timeout_ms, char **body);
    int (*stored_task)(void *cls, const char *app_id, const char *task_id, int timeout_ms,
                       char **body);
    void *cls;
} mc_view_asker;

typedef struct mc_view_forward mc_view_forward;

/* rk is any handle of the cluster (the gateway's producer), borrowed. Caller
 * owns the result (mc_view_forward_free); NULL on ENOMEM. */
mc_view_forward *mc_view_forward_new(const mc_config *cfg, rd_kafka_t *rk, const mc_logger *lg);
void mc_view_forward_free(mc_view_forward *f);

/* How many partitions the view's inputs have (cached), or -1 with a reason
 * in why. */
int32_t mc_view_forward_count(mc_view_forward *f, char *why, size_t whylen);
/* Makes the next mc_view_forward_count ask the broker again. */
void mc_view_forward_forget_count(mc_view_forward *f);

/* The partition of app_id/task_id among the view's partitions, or -1 with a
 * reason in why (the broker did not say how many there are). */
int32_t mc_view_forward_partition(mc_view_forward *f, const char *app_id, const char *task_id,
                                  char *why, size_t whylen);

/* Asks the instance holding partition p the question GET /api/task for
 * app_id/task_id, with the client's Authorization header (NULL: none).
 * Returns the HTTP status and sets *body (the caller frees it) to the
 * answer as that instance's gateway gave it (*relayed true); or 503 with a
 * sentence in *body (*relayed false) when no instance holds p, the holder
 * is this process (its own advertised client.id: the partition is moving),
 * or it did not answer. */
int mc_view_forward_ask(mc_view_forward *f, int32_t p, const char *app_id, const char *task_id,
                        const char *authorization, char **body, bool *relayed);

/* Sends the request POST <path> with post_body (JSON) and the client's
 * Authorization to the instance holding partition p, which does it there:
 * what its view alone can do (a reschedule needs the task's own bytes).
 * Statuses and *body as mc_view_forward_ask's. */
int mc_view_forward_post(mc_view_forward *f, int32_t p, const char *path, const char *post_body,
                         const char *authorization, char **body, bool *relayed);

/* Asks every instance holding one of the n partitions, at once, GET
 * <path>?<query>&partitions=<the ones it holds> with the client's
 * Authorization, and appends each answer's data (a new reference; the
 * caller releases them) to answers (room for n), counting in *n_answers.
 * 200; or with a sentence in *body (the caller frees it): 503 when a
 * partition has no holder or one did not answer, a holder's 4xx as it
 * came. Any thread. */
int mc_view_forward_gather(mc_view_forward *f, const char *path, const char *query,
                           const int32_t *parts, size_t n, const char *authorization,
                           json_t **answers, size_t *n_answers, char **body);

#endif
