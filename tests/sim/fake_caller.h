/* A caller for the executor (executor_call.h) whose calls a test ends: it
 * holds every posted call until the test runs it (fake_caller_run), acts on
 * recalls at once, and remembers every call it made, so an executor driven
 * through tests/sim can be crashed, restarted and checked call by call. As
 * the real caller, it starts a call that is due when its batch is posted
 * (by the cluster's clock, when the test gives it one) or when it is run,
 * and a started call is no longer recalled. A Kafka target is given back
 * for the executor to deliver when it is run (and logged as a call), and so
 * is a SHARDING_BROADCAST (its metadata mooncake.route), with the test's
 * members, for the executor to fan out. */
#ifndef MOONCAKE_FAKE_CALLER_H
#define MOONCAKE_FAKE_CALLER_H

#include <stddef.h>
#include <stdint.h>

#include "executor.h"

typedef struct fake_caller fake_caller;

/* One call made. */
typedef struct fake_call {
    char key[MC_CALL_KEY_MAX];
    int32_t attempt;
    mc_version version;
    int32_t partition;
    int64_t offset;
    int64_t at;
    long status;
} fake_call;

/* What a test keeps across its executors: the fake the current one calls
 * with, and every call any of them made, in order (the log outlives a
 * crashed executor). */
typedef struct fake_env {
    struct sim_kafka *clock; /* optional: whose time says a posted call is due */
    fake_caller *current;
    fake_call *calls;
    size_t n_calls, cap_calls;
    const char *const *members; /* a broadcast's group, as the real caller names them */
    size_t n_members;
} fake_env;

/* The mc_executor_caller a test puts in its executor's create_arg: each
 * executor created with it gets a new fake, set as env->current (and
 * cleared when the executor destroys it). */
mc_executor_caller fake_caller_for(fake_env *env);
void fake_env_free(fake_env *env);

/* Calls posted and not ended yet. */
size_t fake_caller_pending(const fake_caller *f);
/* Ends every pending call due at or before now: it is made (recorded) and
 * answered with respond(call, arg)'s status (200 when respond is NULL);
 * a status of 0 means a connection error, and a negative one keeps the
 * call in flight (asked again at the next run); respond may also set the
 * job's answer (retry_after, say). Returns how many ended. */
size_t fake_caller_run(fake_caller *f, int64_t now, long (*respond)(mc_call *j, void *arg),
                       void *arg);

#endif
