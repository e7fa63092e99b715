/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * cfgfile: the configuration file from disk. Shell: reads the file, asks
 * the host for its name and the real path of the file's directory, and
 * hands all three to the pure parser (cfg_parse), so that config.c reads
 * nothing itself and its tests need no real host.
 */
#ifndef WARRANTD_CFGFILE_H
#define WARRANTD_CFGFILE_H

#include "conf/config.h"

/* A config file larger than this is a mistake: 1 MiB. */
#define CFGFILE_MAX (1024 * 1024)

/*
 * Reads and parses `path`: cfg_parse with the default consumer name
 * ($WARRANTD_CONSUMER when set and not empty, else gethostname) and the
 * directory of path (absolute when it exists, so relative file names still
 * resolve if the daemon changes directory). Same results and ownership as
 * cfg_parse; a file that cannot be read is one error "path:0: cannot read:
 * <reason>". Reads no key or secret file: see secrets_check_cfg.
 */
struct cfg *cfgfile_load(const char *path, struct cfg_errors *errs)
	__attribute__((warn_unused_result));

#endif
