/* Admission limits (endpoints.h) as one executor keeps them: a bucket per limited host,
 * app or BUSYOVER group, with its calls open and its start tokens, and the cluster's limit
 * cut to this executor's share.
 *
 * How a limit holds across the cluster without a lock: it is cut by partition of `ready`.
 * Partition p of P carries N/P of a limit N (the remainder one each to the lowest
 * partitions), so the shares of all partitions add up to N exactly, and an executor may
 * use the sum of its partitions' shares. The group's assignment gives each partition one
 * owner, so the executors' shares never add up to more than N; a rebalance moves shares
 * with the partitions. Rates are cut the same way, in calls per second; an executor's
 * bucket refills so that no window of one second holds more starts than its share.
 *
 * The HTTP thread's only. */
#ifndef MOONCAKE_EXECUTOR_ADMISSION_H
#define MOONCAKE_EXECUTOR_ADMISSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "endpoints.h"

/* Which partitions of `ready` this executor owns, of how many. */
#define MC_OWNERSHIP_MAX 4096 /* partitions of `ready` an executor can count */
typedef struct mc_ownership {
    int32_t total; /* 0: not known yet */
    int32_t n_owned;
    int32_t owned[MC_OWNERSHIP_MAX]; /* sorted ascending */
} mc_ownership;

/* This executor's share of a cluster-wide bound n (see the top); 0 for n <= 0, 1 while
 * the ownership is not known. A bound
 * below the partition count leaves some partitions no share: an executor that owns only
 * such partitions gets 1, so its calls are not held forever (the bound is then exceeded
 * by at most one call per executor). */
int64_t mc_ownership_share(const mc_ownership *o, int64_t n);

typedef enum mc_bucket_kind { MC_BUCKET_HOST, MC_BUCKET_APP, MC_BUCKET_GROUP } mc_bucket_kind;

/* One limited host, app or group. waiting is the HTTP caller's list of calls waiting on it
 * (opaque here). */
typedef struct mc_bucket {
    mc_bucket_kind kind;
    int32_t max_open;   /* this executor's share; 0: no bound */
    int64_t per_second; /* this executor's share; 0: no bound */
    int32_t open;
    double tokens;       /* start tokens; at most burst */
    int64_t refilled_us; /* monotonic, microseconds */
    void *waiting_head, *waiting_tail;
    size_t n_waiting;
    struct mc_bucket *next_waiting; /* in the list of buckets with calls waiting */
    bool listed;                    /* on that list */
    char *name;
    struct mc_bucket *next; /* every bucket */
} mc_bucket;

typedef struct mc_admission mc_admission;

/* An empty set of buckets. Caller owns it; NULL on ENOMEM. */
mc_admission *mc_admission_new(void);
/* Frees every bucket (their waiting lists must be empty or no longer used). */
void mc_admission_free(mc_admission *a);
/* The bucket of this kind and name, made on first use; NULL on ENOMEM. */
mc_bucket *mc_admission_bucket(mc_admission *a, mc_bucket_kind kind, const char *name);
/* Sets b's bounds to the share of limit (see mc_ownership_share), keeping its state. */
void mc_bucket_set_limit(mc_bucket *b, const mc_admission_limit *limit, const mc_ownership *o);
/* Whether a call may start in b at now_us; when it may not, *retry_us says when a token
 * comes (INT64_MAX: only a call ending frees b). */
bool mc_bucket_allows(mc_bucket *b, int64_t now_us, int64_t *retry_us);
/* A call started in b at now_us (after mc_bucket_allows said yes). */
void mc_bucket_take(mc_bucket *b, int64_t now_us);
/* A call started in b ended. */
void mc_bucket_release(mc_bucket *b);
/* Every bucket, for the caller to walk (b->next). */
mc_bucket *mc_admission_buckets(mc_admission *a);

#endif
