/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_urltpl: the action URL template (warrantd(7) R7). The input is a template
 * and a resource separated by the first newline; the resource is also used
 * for the other placeholders. An expanded URL never gains a host the
 * template did not have. */
#include "fuzz.h"
#include "core/urltpl.h"

/* The authority of a URL: after "://" up to the first '/', '?' or '#'. */
static size_t
authority(const char *u, const char **start)
{
	const char *sep = strstr(u, "://");

	*start = sep != NULL ? sep + 3 : u;
	return strcspn(*start, "/?#");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = fuzz_cstr(data, size), err[160], *nl = strchr(in, '\n');
	const char *res = "canal/gate-14";

	if (nl != NULL) {
		*nl = '\0';
		res = nl + 1;
	}
	struct urltpl_vars v = {.resource = res, .action = res, .record_id = res,
	    .on_behalf_of = res};
	int ok = urltpl_check(in, err, sizeof err) == 0;
	char *url = urltpl_expand(in, &v, err, sizeof err);

	if (ok != (url != NULL))
		abort();	/* check and expand agree */
	if (url != NULL) {
		const char *a, *b;
		size_t na = authority(in, &a), nb = authority(url, &b);
		if (na != nb || memcmp(a, b, na) != 0)
			abort();	/* a value moved into the authority */
		free(url);
	}
	free(in);
	return 0;
}
