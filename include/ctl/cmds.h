/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cmds: warrantctl's commands, one file per family under src/ctl/, each
 * entry point fn(c, argc, argv) with argv[0] the command's name (argv
 * borrowed, c the run's context: ctl/cli.h). Each returns the exit code
 * (warrantctl(1)): 0, EX_REFUSED, EX_USAGE, EX_UNAVAILABLE or EX_CONFIG,
 * every error said on stderr. warrantctl.c dispatches.
 */
#ifndef WARRANTD_CMDS_H
#define WARRANTD_CMDS_H

struct cli;

/* decide.c: write a record, enqueue or schedule it */
int cmd_decide(struct cli *c, int argc, char **argv);
/* status.c: group lag, PEL, consumers, queue sizes; the same as gauges */
int cmd_status(struct cli *c, int argc, char **argv);
int cmd_metrics(struct cli *c, int argc, char **argv);
/* jobs.c: one record's state and trail; records by state */
int cmd_inspect(struct cli *c, int argc, char **argv);
int cmd_jobs(struct cli *c, int argc, char **argv);
/* dead.c: dead letters (list, requeue, drop), retry, cancel */
int cmd_dead(struct cli *c, int argc, char **argv);
int cmd_retry(struct cli *c, int argc, char **argv);
int cmd_cancel(struct cli *c, int argc, char **argv);
/* pause.c: pause and resume */
int cmd_pause(struct cli *c, int argc, char **argv);
/* doctor.c: what a deployment needs, end to end */
int cmd_doctor(struct cli *c, int argc, char **argv);
/* functions.c: the library of lua/ loaded into, or checked on, each shard */
int cmd_functions(struct cli *c, int argc, char **argv);
/* keygen.c: the decider's key pair (or HS256 secret) and its JWKS, no config */
int cmd_keygen(struct cli *c, int argc, char **argv);

#endif
