/* The gateway's memory of Idempotency-Key requests: per scope (route, appId
 * and key) the SHA-256 of the body and, once answered successfully, the
 * answer. A repeat with the same body gets the same answer without producing
 * again; with another body it is refused. Bounded both ways: entries expire
 * after a TTL and the oldest go first past max_keys. Per process: replicas
 * behind a load balancer do not share it (a task's own uuid is the
 * cross-replica way to make a retry harmless). Thread-safe. */
#ifndef MOONCAKE_IDEMPOTENCY_H
#define MOONCAKE_IDEMPOTENCY_H

#include <stddef.h>
#include <stdint.h>

typedef struct mc_idem mc_idem;

typedef enum mc_idem_state {
    MC_IDEM_NEW,       /* reserved for the caller, who must call mc_idem_finish() */
    MC_IDEM_REPLAY,    /* answered before: *status and *body are that answer */
    MC_IDEM_IN_FLIGHT, /* same key, first request not answered yet */
    MC_IDEM_MISMATCH,  /* same key, another body */
    MC_IDEM_NOMEM,
} mc_idem_state;

/* Caller owns the result (mc_idem_free). NULL on ENOMEM. */
mc_idem *mc_idem_new(size_t max_keys, int64_t ttl_ms);
void mc_idem_free(mc_idem *c);

/* Looks up scope (len bytes) at time now_ms. On MC_IDEM_REPLAY, *body is a
 * malloc'd copy of the stored answer the caller frees. */
mc_idem_state mc_idem_begin(mc_idem *c, const char *scope, size_t len,
                            const uint8_t body_sha256[32], int64_t now_ms, int *status,
                            char **body);
/* Ends a MC_IDEM_NEW reservation: keeps the answer (body is copied) when
 * body != NULL, else forgets the key so a retry runs again. */
void mc_idem_finish(mc_idem *c, const char *scope, size_t len, int status, const char *body);
/* Keys held now (for /metrics and tests). */
size_t mc_idem_count(mc_idem *c);

#endif
