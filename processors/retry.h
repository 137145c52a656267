/* The retry processor (see retry.c). */
#ifndef MOONCAKE_RETRY_H
#define MOONCAKE_RETRY_H

#include "processor.h"

extern const mc_processor mc_retry_processor;

#endif
