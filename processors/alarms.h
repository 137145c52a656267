/* The alarms processor (see alarms.c). */
#ifndef MOONCAKE_ALARMS_H
#define MOONCAKE_ALARMS_H

#include "processor.h"

extern const mc_processor mc_alarms_processor;

#endif
