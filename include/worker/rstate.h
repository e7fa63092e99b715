/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rstate: the result of each reload, published for the command that asked
 * for it (issue 38 item 4). systemd 252 has no Type=notify-reload, so the
 * unit's ExecReload= runs `warrantd -r $MAINPID`: it sends SIGHUP and waits
 * for the daemon's answer in a small file of the unit's RuntimeDirectory,
 * then exits 0 when the file was applied and non-zero with the daemon's
 * reason when it was not, so that `systemctl reload` fails visibly.
 *
 * The file, $RUNTIME_DIRECTORY/reload (the first directory of the list),
 * written whole (a temp file renamed over it):
 *
 *   <pid> <generation> <applied|refused>\n<reason or "-">\n
 *
 * The daemon writes generation 0 ("applied", the start) once it runs, and
 * generation n after its n-th reload. A waiter reads the generation of the
 * daemon's own pid before the SIGHUP and waits for a greater one.
 */
#ifndef WARRANTD_RSTATE_H
#define WARRANTD_RSTATE_H

#include <stddef.h>
#include <sys/types.h>

#define RSTATE_REASON_MAX	512

/* Plain data: one published result. */
struct rstate {
	long pid;
	long long generation;
	int applied;			/* 1 applied, 0 refused */
	char reason[RSTATE_REASON_MAX];	/* one line; "" when applied */
};

/* The file's text for st into out (n bytes with the NUL); a reason's
 * newlines become spaces. 0, or -1 when it does not fit. Pure. */
int rstate_format(const struct rstate *st, char *out, size_t n)
	__attribute__((warn_unused_result));

/* The file's text back into *st. 0, or -1 when it is not one. Pure. */
int rstate_parse(const char *text, struct rstate *st)
	__attribute__((warn_unused_result));

/* The file's path from $RUNTIME_DIRECTORY into out. 0, or -1 when the
 * variable is unset or empty (not under systemd: nothing is published). */
int rstate_path(char *out, size_t n)
	__attribute__((warn_unused_result));

/* Writes st to path whole (path.tmp renamed over it). 0, or -1 with errno. */
int rstate_write(const char *path, const struct rstate *st)
	__attribute__((warn_unused_result));

/* Reads path into *st. 0, or -1 when it is missing or not one. */
int rstate_read(const char *path, struct rstate *st)
	__attribute__((warn_unused_result));

#endif
