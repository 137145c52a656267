/* The executor processor (see executor.c). */
#ifndef MOONCAKE_EXECUTOR_H
#define MOONCAKE_EXECUTOR_H

#include "executor_call.h"
#include "processor.h"

extern const mc_processor mc_executor_processor;

/* The caller an executor makes its calls with, as its processor's
 * create_arg; without one (mc_executor_processor) it is libcurl's
 * (mc_http_caller_new). Tests give another one. */
typedef struct mc_executor_caller {
    mc_caller_factory make;
    const void *arg; /* passed to make */
} mc_executor_caller;

#endif
