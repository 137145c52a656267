/* The executor processor (see executor.c). */
#ifndef MOONCAKE_EXECUTOR_H
#define MOONCAKE_EXECUTOR_H

#include "processor.h"

extern const mc_processor mc_executor_processor;

#endif
