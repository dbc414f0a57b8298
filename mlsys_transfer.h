/* mlsys_transfer.h — provisional while its parts are merged (see wip/). */
#ifndef MLSYS_TRANSFER_H
#define MLSYS_TRANSFER_H
#ifdef MLSYS_IMPLEMENTATION
#ifndef MLSYS_XFER_PLAN_IMPLEMENTATION
#define MLSYS_XFER_PLAN_IMPLEMENTATION
#endif
#endif
#include "wip/xfer_plan.h"
#endif
