/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wserve: the console served on hsrv (one libev loop, no thread), one
 * server a [web] listen address (TCP over TLS when the pair is set, a unix
 * socket without). It owns the sessions and the login; every answer
 * carries the same security headers (CSP 'self' and no inline code, no
 * framing, no caching but of /static/); every POST is checked for its
 * origin and its CSRF token before its handler runs (one place, so that an
 * action added later cannot forget it); every page but /login and
 * /static/ needs a session. The pages themselves are wview's.
 */
#ifndef WARRANTD_WSERVE_H
#define WARRANTD_WSERVE_H

#include <ev.h>
#include <stddef.h>

#include "conf/config.h"
#include "wact.h"
#include "wconf.h"
#include "wread.h"

#define WSERVE_BODY_MAX	8192	/* a POST body: a login or an action form (413 past it) */
#define WSERVE_SESSIONS	256

struct wserve;

/*
 * Listens on each of conf's addresses on loop. cfg, conf, rd, act (NULL:
 * no actions) and the TLS pair (PEM, NULL unless conf->tls) are borrowed
 * and must outlive the server. NULL with one line in err (nothing left
 * listening).
 */
struct wserve *wserve_new(struct ev_loop *loop, const struct cfg *cfg, const struct wconf *conf,
			  struct wread *rd, struct wact *act, const char *tls_cert,
			  const char *tls_key, char *err, size_t errlen)
	__attribute__((warn_unused_result));

/* Closes every listener and connection, ends every session. NULL is a
 * no-op. */
void wserve_free(struct wserve *w);

#endif
