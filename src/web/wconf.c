/* SPDX-License-Identifier: BSD-2-Clause */
#include <stdio.h>
#include <string.h>

#include "wconf.h"

int
wconf_parse(const struct cfg *cfg, struct wconf *out, char *err, size_t errlen)
{
	const char *listen = cfg->web.listen ? cfg->web.listen : WCONF_DEFAULT_LISTEN;
	char word[512], why[256];

	memset(out, 0, sizeof *out);
	if ((cfg->web.tls_cert_file == NULL) != (cfg->web.tls_key_file == NULL)) {
		snprintf(err, errlen, "[web] tls_cert_file and tls_key_file go together");
		return -1;
	}
	if (cfg->web.users_file == NULL) {
		snprintf(err, errlen, "[web] users_file is required (warrantd-web passwd "
		    "FILE USER adds a user)");
		return -1;
	}
	out->tls = cfg->web.tls_cert_file != NULL;
	out->all_loopback = 1;
	for (const char *p = listen; *p;) {
		size_t n = strcspn(p, " \t");
		if (n == 0) {
			p++;
			continue;
		}
		if (n >= sizeof word || out->naddr == WCONF_LISTEN_MAX) {
			snprintf(err, errlen, "[web] listen: at most %d addresses",
			    WCONF_LISTEN_MAX);
			return -1;
		}
		memcpy(word, p, n);
		word[n] = '\0';
		p += n;
		/* off loopback only over TLS: the login's password is in the body */
		if (listen_parse(word, out->tls, &out->addr[out->naddr], why,
		    sizeof why) < 0) {
			snprintf(err, errlen, "[web] listen: %s%s", why, out->tls ? "" :
			    " (off loopback, set tls_cert_file and tls_key_file)");
			return -1;
		}
		out->all_loopback &= out->addr[out->naddr].is_loopback;
		out->naddr++;
	}
	if (out->naddr == 0) {
		snprintf(err, errlen, "[web] listen: no address");
		return -1;
	}
	return 0;
}
