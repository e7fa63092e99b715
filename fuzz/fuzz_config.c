/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_config: the INI parser (cfg_parse: its line reader, every key's
 * parser and the rules between keys). */
#include "fuzz.h"
#include "conf/config.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	struct cfg_errors errs = {0};
	const struct cfg_env env = {.host = "fuzz-host", .dir = "/etc/warrantd"};
	struct cfg *cfg = cfg_parse("f.ini", text, strlen(text), &env, &errs);

	if ((cfg == NULL) == (errs.n == 0))
		abort();	/* failure always says why, success never does */
	for (size_t i = 0; i < errs.n; i++)
		if (strncmp(errs.msgs[i], "f.ini:", 6) != 0)
			abort();	/* every error is file:line: message */
	if (cfg != NULL)
		for (size_t i = 0; i < cfg->nactions; i++)
			if (cfg_action_find(cfg, cfg->actions[i].name) == NULL)
				abort();
	cfg_free(cfg);
	cfg_errors_clear(&errs);
	free(text);
	return 0;
}
