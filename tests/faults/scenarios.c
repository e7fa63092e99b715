/* scenarios: placeholder */
#include "faults.h"
int
scenarios_run(const char *name)
{
	(void)name;
	return 64;
}
