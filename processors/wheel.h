/* The wheel processor (see wheel.c). */
#ifndef MOONCAKE_WHEEL_H
#define MOONCAKE_WHEEL_H

#include "processor.h"

extern const mc_processor mc_wheel_processor;

#endif
