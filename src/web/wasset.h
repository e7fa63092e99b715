/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wasset: the console's CSS and JavaScript, compiled into the binary from
 * src/web/assets/ (scripts/webassets.sh writes the table), so that the
 * console needs no file beside it and no CDN: the CSP allows 'self' only.
 */
#ifndef WARRANTD_WASSET_H
#define WARRANTD_WASSET_H

#include <stddef.h>

/* Plain data: one asset. */
struct wasset {
	const char *name, *type;	/* "console.css", "text/css; charset=utf-8" */
	const char *body;
	size_t len;
};

/* The generated table, ended by a NULL name. */
extern const struct wasset wasset_table[];

/* The asset called name, or NULL. Static. */
const struct wasset *wasset_find(const char *name);

#endif
