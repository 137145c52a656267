/* The store processor (see store.c). */
#ifndef MOONCAKE_STORE_H
#define MOONCAKE_STORE_H

#include "processor.h"

extern const mc_processor mc_store_processor;

#endif
