/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_docs: the operator's documents as tools see them -- `mandoc -T lint`
 * has nothing to say about the pages in man/, the pages render, and the bash completion
 * of completion/warrantctl completes the commands warrantctl has. Run from
 * the source tree. Skips (with the reason) what mandoc or bash-completion
 * would check when they are not installed.
 */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

static const char *const pages[] = {"man/warrantd.8", "man/warrantctl.1", "man/warrantd.ini.5",
    "man/warrantd.7"};

static void
test_mandoc_lint(void **state)
{
	char *out, *mandoc = h_which("mandoc");
	(void)state;

	int have = mandoc != NULL;

	free(mandoc);
	if (!have) {
		printf("itest_docs: SKIP mandoc lint: mandoc not installed (Debian package mandoc)\n");
		skip();
	}
	for (size_t i = 0; i < sizeof pages / sizeof pages[0]; i++) {
		/* -W warning: STYLE notes such as "referenced manual not found"
		 * depend on what this machine has installed. */
		char *argv[] = {"mandoc", "-T", "lint", "-W", "warning", (char *)pages[i], NULL};
		int rc = h_run(argv, 30000, &out);
		if (rc != 0 || *out)
			fail_msg("mandoc -T lint %s: exit %d\n%s", pages[i], rc, out);
		free(out);
		char *render[] = {"mandoc", "-T", "utf8", (char *)pages[i], NULL};
		assert_int_equal(h_run(render, 30000, &out), 0);
		assert_true(strlen(out) > 1000);
		free(out);
	}
}

/* Every command in warrantctl's usage is in the completion, and back. */
static void
test_bash_completion(void **state)
{
	static const char script[] =
	    "source /usr/share/bash-completion/bash_completion\n"
	    "source completion/warrantctl\n"
	    "t() { COMP_WORDS=(\"$@\"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1));\n"
	    "  COMP_LINE=\"$*\"; COMP_POINT=${#COMP_LINE}; COMPREPLY=();\n"
	    "  _warrantctl warrantctl \"${COMP_WORDS[-1]}\" \"${COMP_WORDS[-2]}\";\n"
	    "  echo \"${COMPREPLY[*]}\"; }\n"
	    "t warrantctl ''\n"
	    "t warrantctl dead ''\n"
	    "t warrantctl -c conf/warrantd.ini decide --action ''\n"
	    "t warrantctl metrics --o\n";
	char *out, *usage;
	(void)state;

	if (access("/usr/share/bash-completion/bash_completion", R_OK) != 0) {
		printf("itest_docs: SKIP completion: bash-completion not installed\n");
		skip();
	}
	char *path = h_write_file("completion-test.sh", script);
	char *argv[] = {"bash", path, NULL};
	assert_int_equal(h_run(argv, 30000, &out), 0);
	printf("itest_docs: completion says:\n%s", out);
	const char *want = "decide status metrics inspect dead help\n"
	    "list requeue drop\ngate.open\n--output\n";
	assert_string_equal(out, want);
	free(out);

	char *help[] = {(char *)h_bin("warrantctl"), "help", NULL};
	assert_int_equal(h_run(help, 30000, &usage), 0);
	const char *cmds[] = {"decide", "status", "metrics", "inspect", "dead list",
	    "dead requeue", "dead drop"};
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		char line[64];
		snprintf(line, sizeof line, "\n  %s ", cmds[i]);
		if (!strstr(usage, line))
			fail_msg("warrantctl help lacks '%s'", cmds[i]);
	}
	free(usage);
	free(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mandoc_lint),
		cmocka_unit_test(test_bash_completion),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
