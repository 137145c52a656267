/* The router processor: tasks -> wheel | dead (see router.c). */
#ifndef MOONCAKE_ROUTER_H
#define MOONCAKE_ROUTER_H

#include "processor.h"

extern const mc_processor mc_router_processor;

#endif
