/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * whtml: a growing buffer of HTML (pure). Every text from outside goes in
 * through whtml_text or whtml_textf, which escape & < > " ' so that it can
 * stand in an element or a quoted attribute; whtml_raw is for the page's own
 * markup only. An allocation failure is remembered and the buffer yields
 * NULL at whtml_take, so that callers need not check each append.
 */
#ifndef WARRANTD_WHTML_H
#define WARRANTD_WHTML_H

#include <stddef.h>

struct whtml;

/* An empty buffer, or NULL. Caller frees with whtml_free. */
struct whtml *whtml_new(void) __attribute__((warn_unused_result));
/* NULL is a no-op. */
void whtml_free(struct whtml *b);

/* Appends s as it is (the page's own markup). s borrowed. */
void whtml_raw(struct whtml *b, const char *s);
/* printf into the buffer as it is: only for numbers and own markup. */
void whtml_rawf(struct whtml *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s escaped (NULL: nothing). */
void whtml_text(struct whtml *b, const char *s);
/* printf, then escaped. */
void whtml_textf(struct whtml *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s percent-encoded for a query string value (then safe in an
 * attribute too). */
void whtml_url(struct whtml *b, const char *s);

/* The text so far (NUL-terminated) and its length; NULL after a failed
 * allocation. The buffer keeps it: valid until the next append or free. */
const char *whtml_str(const struct whtml *b, size_t *len);

/* The text, handed over (caller frees with free); the buffer is empty
 * again. NULL after a failed allocation. */
char *whtml_take(struct whtml *b, size_t *len) __attribute__((warn_unused_result));

#endif
