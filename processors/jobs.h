/* The jobs processor: job-commands (+ results) -> tasks, jobs (see jobs.c). */
#ifndef MOONCAKE_JOBS_H
#define MOONCAKE_JOBS_H

#include "processor.h"

extern const mc_processor mc_jobs_processor;

#endif
