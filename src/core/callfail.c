/* SPDX-License-Identifier: BSD-2-Clause */
/* callfail: the one table of the classes of a call that got no answer (callfail.h). */
#include "core/callfail.h"

static const char *const names[CALLFAIL_COUNT] = {
	[CALLFAIL_NONE] = "",
	[CALLFAIL_CONNECT_REFUSED] = "connect-refused",
	[CALLFAIL_CONNECT] = "connect",
	[CALLFAIL_DNS] = "dns",
	[CALLFAIL_TLS_VERIFY] = "tls-verify",
	[CALLFAIL_TLS] = "tls",
	[CALLFAIL_CONNECT_TIMEOUT] = "connect-timeout",
	[CALLFAIL_READ_TIMEOUT] = "read-timeout",
	[CALLFAIL_SEND] = "send",
	[CALLFAIL_RECV] = "recv",
	[CALLFAIL_TOO_LARGE] = "too-large",
	[CALLFAIL_NO_DESCRIPTOR] = "no-descriptor",
	[CALLFAIL_OTHER] = "other",
};

const char *
callfail_name(enum callfail c)
{
	if ((int)c < 0 || (int)c >= CALLFAIL_COUNT || names[c] == NULL)
		return "";
	return names[c];
}
