/* SPDX-License-Identifier: BSD-2-Clause */
/* faults: the fault matrix (faults.c) and the named scenarios (scenarios.c). */
#ifndef WARRANTD_FAULTS_H
#define WARRANTD_FAULTS_H

#include "world.h"

/* Runs scenario `name` ("all": every one, "list": prints the names).
 * 0 when each passed (or was skipped), 1 when one failed, 64 when unknown. */
int scenarios_run(const char *name);

#endif
