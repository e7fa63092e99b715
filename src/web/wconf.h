/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wconf: what [web] asks of warrantd-web (pure). config.c parses the keys
 * (so that warrantd -t accepts the section); the rules that only the
 * console has are here: where it listens, and no listen off loopback
 * without TLS (the password and the session cookie would cross the network
 * in clear).
 */
#ifndef WARRANTD_WCONF_H
#define WARRANTD_WCONF_H

#include <stddef.h>

#include "conf/config.h"
#include "core/listen.h"

#define WCONF_LISTEN_MAX	4
#define WCONF_DEFAULT_LISTEN	"127.0.0.1:8470"

/* Plain data: the listen addresses and whether they are served over TLS. */
struct wconf {
	struct listen_addr addr[WCONF_LISTEN_MAX];
	size_t naddr;
	int tls;		/* tls_cert_file and tls_key_file are set: TCP
				 * addresses are served over TLS, a unix
				 * socket without */
	int all_loopback;	/* every address is loopback or a unix socket */
};

/*
 * [web] of cfg into *out: listen's white-space separated addresses (each
 * as [metrics] listen's), the TLS pair both or neither, users_file set.
 * cfg borrowed. 0, or -1 with one line in err.
 */
int wconf_parse(const struct cfg *cfg, struct wconf *out, char *err, size_t errlen)
	__attribute__((warn_unused_result));

#endif
