/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * sdnotify: the systemd notify protocol (sd_notify(3)) without libsystemd:
 * one datagram to $NOTIFY_SOCKET. A no-op when the variable is unset.
 */
#ifndef WARRANTD_SDNOTIFY_H
#define WARRANTD_SDNOTIFY_H

/* Sends `msg` ("READY=1", "STATUS=...", "WATCHDOG=1", newline-separated).
 * 0 when sent or not under systemd, -1 on a send error (nothing to do
 * about it but log). */
int sdnotify_send(const char *msg);

/* The watchdog interval in ms from $WATCHDOG_USEC (for this pid), or 0. */
long sdnotify_watchdog_ms(void);

#endif
