/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * callfail: why an HTTP call got no answer, as one class (warrantd(8) LOGS,
 * METRICS). The http module classifies curl's result once into this enum;
 * the job core names it in a step's detail, the worker logs it
 * (`http.failed class=...`) and counts it (warrantd_call_failures_total).
 * One enum, one name table (callfail.c). Pure.
 */
#ifndef WARRANTD_CALLFAIL_H
#define WARRANTD_CALLFAIL_H

#include "base/counters.h"

enum callfail {
	CALLFAIL_NONE = 0,		/* "": an answer came (any status) */
	CALLFAIL_CONNECT_REFUSED,	/* "connect-refused": nobody listens there */
	CALLFAIL_CONNECT,		/* "connect": no route, unreachable, reset at connect */
	CALLFAIL_DNS,			/* "dns": the host (or proxy) name did not resolve */
	CALLFAIL_TLS_VERIFY,		/* "tls-verify": the peer's certificate or name was refused */
	CALLFAIL_TLS,			/* "tls": any other TLS failure (handshake, protocol) */
	CALLFAIL_CONNECT_TIMEOUT,	/* "connect-timeout": timed out before the request went out */
	CALLFAIL_READ_TIMEOUT,		/* "read-timeout": timed out waiting for the answer */
	CALLFAIL_SEND,			/* "send": the request could not be sent */
	CALLFAIL_RECV,			/* "recv": the answer broke off, or none came (closed) */
	CALLFAIL_TOO_LARGE,		/* "too-large": an answer over HTTP_BODY_MAX */
	CALLFAIL_NO_DESCRIPTOR,		/* "no-descriptor": EMFILE/ENFILE, nothing left the host */
	CALLFAIL_OTHER,			/* "other": anything else curl reports */
	CALLFAIL_COUNT
};

_Static_assert(CALLFAIL_COUNT <= COUNTERS_CALL_CLASSES,
	       "counters.h keeps a counter for each class");

/* The class's name ("connect-refused"); "" for CALLFAIL_NONE or a value out
 * of range. Static storage. */
const char *callfail_name(enum callfail c) __attribute__((warn_unused_result));

#endif
