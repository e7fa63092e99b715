/* SPDX-License-Identifier: BSD-2-Clause */
/* jwa: the JWS algorithms warrantd knows (jwa.h). */
#include "jose/jwa.h"

static const char *const names[JWA_COUNT] = {
	[JWA_ES256] = "ES256",
	[JWA_RS256] = "RS256",
	[JWA_HS256] = "HS256",
};

const char *
jwa_name(enum jwa_alg alg)
{
	if ((int)alg <= (int)JWA_NONE || (int)alg >= JWA_COUNT)
		return "";
	return names[alg];
}
