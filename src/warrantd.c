/* warrantd: the daemon's entry point: options, the configuration, then run(). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <sysexits.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "version.h"

static void
usage(FILE *f)
{
	fprintf(f, "usage: warrantd [-t] [-c FILE]\n"
	    "       warrantd -h | -V\n"
	    "  -c FILE  configuration (default " CFG_DEFAULT_PATH ")\n"
	    "  -t       check the configuration and the files it names, then exit\n"
	    "  -h       this help\n"
	    "  -V       version\n");
}

/* The config with every file it names readable, or NULL after printing each
 * error on its own line: an operator reads these, so no logfmt. */
static struct cfg *
load_config(const char *path)
{
	struct cfg_errors errs = {0};
	struct cfg *cfg = cfg_load(path, &errs);

	if (cfg && cfg_check_files(cfg, &errs) < 0) {
		cfg_free(cfg);
		cfg = NULL;
	}
	for (size_t i = 0; i < errs.n; i++)
		fprintf(stderr, "%s\n", errs.msgs[i]);
	cfg_errors_clear(&errs);
	return cfg;
}

/* The daemon. Owns cfg (a reload swaps it) and frees it. Returns the exit
 * status. */
static int
run(struct cfg *cfg)
{
	char consumer[160], path[160];

	log_set_level(cfg->daemon.log_level);
	log_info("start", "version=%s consumer=%s config=%s", WARRANTD_VERSION,
	    log_quote(consumer, sizeof consumer, cfg->daemon.consumer),
	    log_quote(path, sizeof path, cfg->path));
	if (!cfg->records.signature_required)
		log_warn("config.signature_off",
		    "detail=\"records are not signed: only Redis ACLs protect them\"");
	if (!cfg->authz.url)
		log_warn("config.no_authz",
		    "detail=\"[authz] url is unset: authority is not re-checked\"");
	cfg_free(cfg);
	return 0;
}

int
main(int argc, char **argv)
{
	const char *path = CFG_DEFAULT_PATH;
	int check = 0, opt;

	log_init("warrantd");
	while ((opt = getopt(argc, argv, "c:thV")) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 't':
			check = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("warrantd %s\n", WARRANTD_VERSION);
			return 0;
		default:
			usage(stderr);
			return EX_USAGE;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return EX_USAGE;
	}
	struct cfg *cfg = load_config(path);
	if (!cfg)
		return EX_CONFIG;
	if (!check)
		return run(cfg);
	puts("configuration OK");
	cfg_free(cfg);
	return 0;
}
