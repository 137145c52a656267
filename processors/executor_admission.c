/* Admission buckets and the partition-ownership share of a limit
 * (executor_admission.h). A rate is a token bucket holding at most `burst` tokens and
 * refilling at per_second - burst tokens a second (per_second when the burst is one): a
 * window of one second then holds at most burst + (per_second - burst) starts, the
 * share and no more, while a bucket of 2,000 a second still starts 20 at once after a
 * pause instead of one per wake-up of the loop. */
#include "executor_admission.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct mc_admission {
    mc_bucket *buckets;
};

/* Shares of at least this many starts a second may burst a hundredth of a second. */
#define BURST_FROM 200

/* How many of the owned partitions are below r: they carry one more of the remainder. */
static int32_t owned_below(const mc_ownership *o, int64_t r)
{
    int32_t lo = 0, hi = o->n_owned;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (o->owned[mid] < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int64_t mc_ownership_share(const mc_ownership *o, int64_t n)
{
    if (n <= 0)
        return 0;
    if (!o || o->total <= 0 || o->n_owned <= 0)
        return 1; /* not known yet: the least that still moves */
    int64_t share = (int64_t)o->n_owned * (n / o->total) + owned_below(o, n % o->total);
    return share > 0 ? share : 1;
}

mc_admission *mc_admission_new(void)
{
    return calloc(1, sizeof(mc_admission));
}

void mc_admission_free(mc_admission *a)
{
    if (!a)
        return;
    for (mc_bucket *b = a->buckets, *next; b; b = next) {
        next = b->next;
        free(b->name);
        free(b);
    }
    free(a);
}

mc_bucket *mc_admission_bucket(mc_admission *a, mc_bucket_kind kind, const char *name)
{
    for (mc_bucket *b = a->buckets; b; b = b->next)
        if (b->kind == kind && strcmp(b->name, name) == 0)
            return b;
    mc_bucket *b = calloc(1, sizeof *b);
    if (!b || !(b->name = strdup(name))) {
        free(b);
        return NULL;
    }
    b->kind = kind;
    b->tokens = -1; /* filled on the first limit */
    b->next = a->buckets;
    a->buckets = b;
    return b;
}

mc_bucket *mc_admission_buckets(mc_admission *a)
{
    return a->buckets;
}

static double burst_of(int64_t per_second)
{
    return per_second >= BURST_FROM ? floor((double)per_second / 100) : 1;
}

static double refill_rate(int64_t per_second)
{
    double burst = burst_of(per_second);
    return burst > 1 ? (double)per_second - burst : (double)per_second;
}

void mc_bucket_set_limit(mc_bucket *b, const mc_admission_limit *limit, const mc_ownership *o)
{
    b->max_open = (int32_t)mc_ownership_share(o, limit ? limit->max_concurrent : 0);
    int64_t rate = limit ? (int64_t)floor(limit->max_per_second) : 0;
    b->per_second = mc_ownership_share(o, rate);
    double burst = b->per_second ? burst_of(b->per_second) : 0;
    if (b->tokens < 0 || b->tokens > burst)
        b->tokens = burst; /* a new bucket starts full; a smaller one is cut down */
}

static void refill(mc_bucket *b, int64_t now_us)
{
    if (now_us > b->refilled_us && b->per_second) {
        double burst = burst_of(b->per_second);
        b->tokens += refill_rate(b->per_second) * (double)(now_us - b->refilled_us) / 1e6;
        if (b->tokens > burst)
            b->tokens = burst;
    }
    b->refilled_us = now_us;
}

bool mc_bucket_allows(mc_bucket *b, int64_t now_us, int64_t *retry_us)
{
    *retry_us = INT64_MAX;
    if (b->max_open && b->open >= b->max_open)
        return false;
    if (!b->per_second)
        return true;
    refill(b, now_us);
    if (b->tokens >= 1)
        return true;
    double wait = (1 - b->tokens) / refill_rate(b->per_second) * 1e6;
    *retry_us = now_us + (int64_t)ceil(wait);
    return false;
}

void mc_bucket_take(mc_bucket *b, int64_t now_us)
{
    b->open++;
    if (b->per_second) {
        refill(b, now_us);
        b->tokens -= 1;
    }
}

void mc_bucket_release(mc_bucket *b)
{
    if (b->open > 0)
        b->open--;
}
