/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * itest_docs: the operator's documents as tools see them -- `mandoc -T lint`
 * has nothing to say about the pages in man/, the pages render, and the bash completion
 * of completion/warrantctl completes the commands warrantctl has. And the
 * README is an operator's guide (issue 24): at most ~580 lines (600: operators and, since issue 40, deciders), a table of
 * contents, the sections an operator looks for (a troubleshooting runbook
 * among them), the Redis version stated; every "#anchor" link in the
 * Markdown documents names a heading, every relative link a file that
 * exists; nothing points at the contract outside the repository; the ACL
 * table says what conf/redis-acl.conf grants each user. Run from
 * the source tree. Skips (with the reason) what mandoc or bash-completion
 * would check when they are not installed.
 */
#define _DEFAULT_SOURCE
#include <ctype.h>
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
    "man/warrantd.7", "man/warrantd-web.8"};

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
	const char *want = "decide status metrics inspect dead pause resume jobs retry cancel doctor keygen "
	    "functions help\nlist requeue drop\ngate.open\n--output\n";
	assert_string_equal(out, want);
	free(out);

	char *help[] = {(char *)h_bin("warrantctl"), "help", NULL};
	assert_int_equal(h_run(help, 30000, &usage), 0);
	const char *cmds[] = {"decide", "status", "metrics", "inspect", "dead list",
	    "dead requeue", "dead drop", "pause", "resume", "jobs", "retry", "cancel", "doctor",
	    "keygen", "functions load|status", "functions show"};
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		char line[64];
		snprintf(line, sizeof line, "\n  %s ", cmds[i]);
		if (!strstr(usage, line))
			fail_msg("warrantctl help lacks '%s'", cmds[i]);
	}
	free(usage);
	free(path);
}

/* The zsh completion, driven like a user at a terminal: an interactive zsh
 * on a pty (zsh/zpty) with completion/ on its fpath is sent a command line
 * and a TAB, and what it lists is read back until `want` shows (or the
 * run's timeout). */
static char *
zsh_complete(const char *line, const char *want)
{
	static const char script[] =
	    "zmodload zsh/zpty\n"
	    "zpty z zsh -f -i\n"
	    "zpty -w z \"PS1='>' fpath=($PWD/completion \\$fpath); autoload -U compinit; "
	    "compinit -u -D; bindkey '^I' list-choices\"\n"
	    "zpty -n -w z \"$1\"$'\\t'\n"
	    "zpty -r -m z out \"*$2*\"\n"
	    "print -r -- \"$out\"\n"
	    "zpty -d z\n";
	char *path = h_write_file("zsh-complete.zsh", script), *out = NULL;
	char *argv[] = {"zsh", "-f", path, (char *)line, (char *)want, NULL};

	assert_non_null(path);
	int rc = h_run(argv, 20000, &out);
	if (rc != 0 || strstr(out, want) == NULL)
		fail_msg("zsh completing '%s' did not offer '%s' (exit %d):\n%s", line, want, rc,
		    out);
	free(path);
	return out;
}

/* Every command and the -c file's actions, as in bash. */
static void
test_zsh_completion(void **state)
{
	(void)state;
	if (access("/usr/bin/zsh", X_OK) != 0) {
		printf("itest_docs: SKIP zsh completion: zsh not installed\n");
		skip();
	}
	char *out = zsh_complete("warrantctl ", "consumers, queue sizes");
	const char *cmds[] = {"decide", "status", "metrics", "inspect", "dead"};
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
		if (!strstr(out, cmds[i]))
			fail_msg("zsh offers no '%s':\n%s", cmds[i], out);
	free(out);
	free(zsh_complete("warrantctl dead ", "delete the dead letters of a record"));
	free(zsh_complete("warrantctl -c conf/warrantd.ini decide --action ", "gate.open"));
	free(zsh_complete("warrantctl metrics --o", "--output"));
}

/* ---- the Markdown documents ---- */

static const char *const markdown[] = {"README.md", "HACKING.md", "tests/README.md",
    "bench/README.md"};

/*
 * GitHub's anchor of a heading: lower case, spaces to '-', punctuation
 * dropped (ASCII, and U+2000-U+206F: dashes, quotes, arrows are kept out of
 * the way by dropping the General Punctuation block), other letters kept.
 */
static void
slug(const char *title, char *out, size_t max)
{
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)title; *p && n + 1 < max; p++) {
		if (*p == 0xe2 && (p[1] == 0x80 || p[1] == 0x81) && p[2]) {
			p += 2;
			continue;
		}
		if (isalnum(*p) || *p == '-' || *p == '_' || *p >= 0x80)
			out[n++] = (char)tolower(*p);
		else if (*p == ' ')
			out[n++] = '-';
	}
	out[n] = '\0';
}

/* Does the Markdown text have a heading whose anchor is `anchor`? */
static int
has_anchor(const char *text, const char *anchor)
{
	char line[1024], s[1024];
	int fence = 0;

	for (const char *p = text; *p;) {
		size_t len = strcspn(p, "\n");
		snprintf(line, sizeof line, "%.*s", (int)len, p);
		p += len + (p[len] == '\n');
		if (strncmp(line, "```", 3) == 0)
			fence = !fence;
		if (fence || line[0] != '#')
			continue;
		const char *t = line + strspn(line, "#");
		if (*t != ' ')
			continue;
		slug(t + 1, s, sizeof s);
		if (strcmp(s, anchor) == 0)
			return 1;
	}
	return 0;
}

/* The directory part of path, with a trailing '/' ("" for a top-level file). */
static void
dir_of(const char *path, char *out, size_t max)
{
	const char *slash = strrchr(path, '/');

	snprintf(out, max, "%.*s", slash ? (int)(slash - path + 1) : 0, path);
}

/*
 * Every link target "](...)" of a document outside code blocks: "#x" must
 * be a heading here, "path" or "path#x" a file beside it (and x a heading
 * in it); http(s) links and mailto are not followed. Returns the broken ones.
 */
static int
check_links(const char *doc)
{
	char *text = h_read_file(doc), dir[256], target[512], path[768];
	int broken = 0, links = 0, fence = 0;

	if (!text)
		fail_msg("cannot read %s (run from the source tree)", doc);
	dir_of(doc, dir, sizeof dir);
	for (const char *p = text; *p;) {
		if (strncmp(p, "```", 3) == 0 && (p == text || p[-1] == '\n'))
			fence = !fence;
		const char *at = fence ? NULL : strstr(p, "](");
		const char *eol = strchr(p, '\n');
		if (!at || (eol && at > eol)) {
			p = eol ? eol + 1 : p + strlen(p);
			continue;
		}
		at += 2;
		size_t len = strcspn(at, ") \n");
		snprintf(target, sizeof target, "%.*s", (int)len, at);
		p = at + len;
		if (strncmp(target, "http://", 7) == 0 || strncmp(target, "https://", 8) == 0 ||
		    strncmp(target, "mailto:", 7) == 0)
			continue;
		links++;
		char *hash = strchr(target, '#');
		if (hash)
			*hash++ = '\0';
		char *linked = text;
		if (*target) {
			snprintf(path, sizeof path, "%s%s", dir, target);
			if (access(path, F_OK) != 0) {
				fprintf(stderr, "%s: link to %s: no such file\n", doc, path);
				broken++;
				continue;
			}
			linked = hash && *hash ? h_read_file(path) : NULL;
		}
		if (hash && *hash && linked && !has_anchor(linked, hash)) {
			fprintf(stderr, "%s: link to %s#%s: no such heading\n", doc,
			    *target ? path : doc, hash);
			broken++;
		}
		if (linked != text)
			free(linked);
	}
	printf("itest_docs: %s: %d links, %d broken\n", doc, links, broken);
	free(text);
	return broken;
}

static void
test_markdown_links(void **state)
{
	int broken = 0;
	(void)state;

	for (size_t i = 0; i < sizeof markdown / sizeof markdown[0]; i++)
		broken += check_links(markdown[i]);
	assert_int_equal(broken, 0);

	/* The checker itself: GitHub's anchors. */
	char s[128];
	slug("The levers (issue 10)", s, sizeof s);
	assert_string_equal(s, "the-levers-issue-10");
	slug("The worker's token", s, sizeof s);
	assert_string_equal(s, "the-workers-token");
	slug("bench/ \xe2\x80\x94 fast", s, sizeof s);
	assert_string_equal(s, "bench--fast");
	assert_true(has_anchor("# A\n```\n# not a heading\n```\n## Two words\n", "two-words"));
	assert_false(has_anchor("```\n# Hidden\n```\n", "hidden"));
}

static int
count_lines(const char *text)
{
	int n = 0;

	for (const char *p = text; *p; p++)
		n += *p == '\n';
	return n;
}

static void
test_readme_is_an_operators_guide(void **state)
{
	static const char *const sections[] = {"## Contents", "## Two commands", "## Install",
	    "## Configure", "## Run under systemd", "## Watch", "## Troubleshooting",
	    "## Upgrade", "## Security model", "## Limits"};
	/* The runbook's cases, as its paragraphs start. */
	static const char *const runbook[] = {"**The PEL grows**", "**Dead letters rise**",
	    "**Token errors.**", "**Redis is down or failing over.**", "**A target is down.**"};
	char *readme = h_read_file("README.md");
	(void)state;

	assert_non_null(readme);
	int lines = count_lines(readme);
	printf("itest_docs: README.md has %d lines\n", lines);
	if (lines > 600)
		fail_msg("README.md has %d lines: the operators' and deciders' guide keeps under 600 (move notes "
		    "to tests/README.md, bench/README.md or HACKING.md)", lines);
	for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
		char want[64];
		snprintf(want, sizeof want, "\n%s\n", sections[i]);
		if (!strstr(readme, want))
			fail_msg("README.md has no section \"%s\"", sections[i]);
	}
	const char *trouble = strstr(readme, "\n## Troubleshooting\n");
	const char *next = strstr(trouble + 1, "\n## ");
	for (size_t i = 0; i < sizeof runbook / sizeof runbook[0]; i++) {
		const char *at = strstr(trouble, runbook[i]);
		if (!at || (next && at > next))
			fail_msg("README.md's Troubleshooting lacks %s", runbook[i]);
	}
	/* Every "## " section is in the table of contents. */
	const char *toc = strstr(readme, "\n## Contents\n"), *toc_end = strstr(toc + 1, "\n## ");
	for (const char *p = toc_end; p && (p = strstr(p, "\n## ")) != NULL; p++) {
		char title[128], anchor[160], s[128];
		size_t len = strcspn(p + 4, "\n");
		snprintf(title, sizeof title, "%.*s", (int)len, p + 4);
		slug(title, s, sizeof s);
		snprintf(anchor, sizeof anchor, "](#%s)", s);
		const char *in = strstr(toc, anchor);
		if (!in || in > toc_end)
			fail_msg("README.md's Contents has no link to \"%s\" (%s)", title, anchor);
	}
	if (!strstr(readme, "Redis 7.0 or later"))
		fail_msg("README.md does not state the Redis requirement (\"Redis 7.0 or later\")");
	free(readme);
}

/* The contract is in the repository: no document points outside it. */
static void
test_no_outside_contract(void **state)
{
	static const char *const docs[] = {"README.md", "HACKING.md", "tests/README.md",
	    "bench/README.md", "man/warrantd.8", "man/warrantd.7", "man/warrantctl.1",
	    "man/warrantd.ini.5", "conf/warrantd.ini", "debian/copyright", "LICENSE"};
	(void)state;

	for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
		char *text = h_read_file(docs[i]);
		if (!text)
			fail_msg("cannot read %s", docs[i]);
		/* Split, so that a grep of the repository for them stays empty. */
		if (strstr(text, "../" "shared") || strstr(text, "SPEC" ".md"))
			fail_msg("%s refers to the contract outside the repository: cite "
			    "warrantd(7)", docs[i]);
		free(text);
	}
}

/* ---- the README's ACL table against conf/redis-acl.conf (issue 37 item 5) ---- */

#define ACL_MAX	96

/* One shipped user's grants: each +command (lower case, "x|sub" kept), and
 * whether it is granted on all of the user's keys (outside a selector) or
 * only in a (selector); the exact keys (no '*') its selectors name. */
struct acl_user {
	char cmd[ACL_MAX][48];
	int top[ACL_MAX];
	int ncmd;
	char sel_key[ACL_MAX][48];	/* an exact key of a selector that grants a write */
	int nkey;
};

/* The commands that change or drop data, or end another's work: each one
 * a user is granted must be named (`HSET`, `XGROUP CREATE`, ...) in its
 * row's "it can" column, and the exact keys it is granted on too. */
static const char *const acl_reach[] = {"hset", "hdel", "del", "set", "pexpire", "persist",
    "xadd", "xack", "xclaim", "xtrim", "xdel", "xgroup|create", "zadd", "zrem",
    "script|kill", "function|kill", "fcall"};

static int
acl_is_reach(const char *cmd)
{
	for (size_t i = 0; i < sizeof acl_reach / sizeof acl_reach[0]; i++)
		if (strcmp(cmd, acl_reach[i]) == 0)
			return 1;
	return 0;
}

/* The line of conf/redis-acl.conf for `user NAME`, parsed into u. */
static void
acl_parse(const char *conf, const char *name, struct acl_user *u)
{
	char want[64];
	int depth = 0, reach = 0;
	char keys[8][48];
	int nkeys = 0;

	memset(u, 0, sizeof *u);
	snprintf(want, sizeof want, "\nuser %s ", name);
	const char *p = strstr(conf, want);
	if (p == NULL)
		fail_msg("conf/redis-acl.conf has no user %s", name);
	p += strlen(want);
	while (*p != '\0' && *p != '\n') {
		size_t len = strcspn(p, " \n");
		char tok[128];
		snprintf(tok, sizeof tok, "%.*s", (int)len, p);
		p += len;
		p += *p == ' ';
		char *t = tok;
		if (*t == '(') {
			depth = 1, reach = 0, nkeys = 0;
			t++;
		}
		int closes = len > 0 && tok[len - 1] == ')';
		if (closes)
			tok[len - 1] = '\0';
		if (*t == '~' && depth && strchr(t, '*') == NULL && nkeys < 8)
			snprintf(keys[nkeys++], sizeof keys[0], "%s", t + 1);
		if (*t == '+' && u->ncmd < ACL_MAX) {
			for (char *c = t + 1; *c; c++)
				*c = (char)tolower((unsigned char)*c);
			snprintf(u->cmd[u->ncmd], sizeof u->cmd[0], "%s", t + 1);
			u->top[u->ncmd++] = !depth;
			reach |= depth && acl_is_reach(t + 1);
		}
		if (closes) {
			for (int i = 0; reach && i < nkeys && u->nkey < ACL_MAX; i++)
				snprintf(u->sel_key[u->nkey++], sizeof u->sel_key[0], "%s", keys[i]);
			depth = 0;
		}
	}
}

/* Is cmd ("hset", "xgroup|create", "script") granted: anywhere (top 0) or
 * on all of the user's keys (top 1)? A subcommand is granted with its
 * command; a command alone only by itself. */
static int
acl_granted(const struct acl_user *u, const char *cmd, int top)
{
	char base[48];

	snprintf(base, sizeof base, "%.*s", (int)strcspn(cmd, "|"), cmd);
	for (int i = 0; i < u->ncmd; i++)
		if ((!top || u->top[i]) && (strcmp(u->cmd[i], cmd) == 0 ||
		    (strchr(cmd, '|') != NULL && strcmp(u->cmd[i], base) == 0)))
			return 1;
	return 0;
}

/* The commands a column names in backticks: `HSET`, `XGROUP CREATE … MKSTREAM`
 * ("xgroup|create"), `SET … PX` ("set"); arguments (`MAXLEN`) and key names
 * are not commands. Each is checked against u: granted when
 * `can`, not granted on all the user's keys when not; returns how many. */
static int
acl_named(const char *col, size_t n, const struct acl_user *u, int can, const char *who)
{
	int count = 0;

	for (const char *p = col; p < col + n && (p = memchr(p, '`', (size_t)(col + n - p)));) {
		const char *e = memchr(p + 1, '`', (size_t)(col + n - p - 1));
		if (e == NULL)
			break;
		char span[128], cmd[48];
		snprintf(span, sizeof span, "%.*s", (int)(e - p - 1), p + 1);
		p = e + 1;
		size_t w1 = strspn(span, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_");
		if (w1 < 2 || (span[w1] != '\0' && span[w1] != ' ') || strcmp(span, "MAXLEN") == 0)
			continue;
		size_t w2 = span[w1] == ' ' ? strspn(span + w1 + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") : 0;
		snprintf(cmd, sizeof cmd, "%.*s%s%.*s", (int)w1, span, w2 >= 2 ? "|" : "",
		    w2 >= 2 ? (int)w2 : 0, span + w1 + 1);
		for (char *c = cmd; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		count++;
		if (can && !acl_granted(u, cmd, 0))
			fail_msg("README's ACL table: %s \"can\" `%s`, but conf/redis-acl.conf "
			    "grants it no %s", who, span, cmd);
		if (!can && acl_granted(u, cmd, 1))
			fail_msg("README's ACL table: %s \"cannot\" `%s`, but conf/redis-acl.conf "
			    "grants %s on all its keys", who, span, cmd);
	}
	return count;
}

/* Issue 37 item 5: the README's table of what each Redis user's theft
 * allows says what conf/redis-acl.conf grants. What the "can" column names
 * is granted; what "cannot" names is not (on all the user's keys: ACLs are
 * per key); every command there that writes, drops or kills (acl_reach) is
 * named in "can", and every exact key it is granted on, and each function
 * a user may FCALL alone is named. */
static void
test_readme_acl_table(void **state)
{
	static const char *const users[] = {"warrantd", "decider", "operator", "monitor"};
	char *conf = h_read_file("conf/redis-acl.conf"), *readme = h_read_file("README.md");
	(void)state;

	assert_non_null(conf);
	assert_non_null(readme);
	for (size_t i = 0; i < sizeof users / sizeof users[0]; i++) {
		struct acl_user u;
		char row[64], tick[64];
		acl_parse(conf, users[i], &u);
		snprintf(row, sizeof row, "\n  | `%s`", users[i]);
		const char *r = strstr(readme, row);
		if (r == NULL)
			fail_msg("README's ACL table has no row for `%s`", users[i]);
		r += 3;
		size_t rlen = strcspn(r, "\n");
		const char *c1 = memchr(r + 1, '|', rlen - 1);
		const char *c2 = c1 ? memchr(c1 + 1, '|', (size_t)(r + rlen - c1 - 1)) : NULL;
		const char *c3 = c2 ? memchr(c2 + 1, '|', (size_t)(r + rlen - c2 - 1)) : NULL;
		if (c3 == NULL)
			fail_msg("README's ACL row for `%s` has not three columns", users[i]);
		char can[4096], whole[8192];
		snprintf(can, sizeof can, "%.*s", (int)(c2 - c1 - 1), c1 + 1);
		snprintf(whole, sizeof whole, "%.*s", (int)rlen, r);
		int named = acl_named(c1 + 1, (size_t)(c2 - c1 - 1), &u, 1, users[i]);
		named += acl_named(c2 + 1, (size_t)(c3 - c2 - 1), &u, 0, users[i]);
		for (int k = 0; k < u.ncmd; k++) {
			const char *fn = strncmp(u.cmd[k], "fcall|", 6) == 0 ? u.cmd[k] + 6 : NULL;
			char upper[48];
			snprintf(upper, sizeof upper, "%s", u.cmd[k]);
			for (char *c = upper; *c; c++)
				*c = *c == '|' ? ' ' : (char)toupper((unsigned char)*c);
			snprintf(tick, sizeof tick, "`%s", fn != NULL ? fn : upper);
			if (fn != NULL ? strstr(whole, tick) == NULL :
			    acl_is_reach(u.cmd[k]) && strstr(can, tick) == NULL)
				fail_msg("README's ACL table: conf/redis-acl.conf grants %s %s, but "
				    "its row does not name it (%s`)", users[i], u.cmd[k], tick);
		}
		for (int k = 0; k < u.nkey; k++)
			if (strstr(can, u.sel_key[k]) == NULL)
				fail_msg("README's ACL table: conf/redis-acl.conf lets %s write %s, "
				    "but its \"can\" column does not name it", users[i], u.sel_key[k]);
		printf("itest_docs: ACL row %s: %d command(s) named, %d grant(s), %d key(s)\n",
		    users[i], named, u.ncmd, u.nkey);
	}
	free(conf);
	free(readme);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mandoc_lint),
		cmocka_unit_test(test_bash_completion),
		cmocka_unit_test(test_zsh_completion),
		cmocka_unit_test(test_markdown_links),
		cmocka_unit_test(test_readme_is_an_operators_guide),
		cmocka_unit_test(test_no_outside_contract),
		cmocka_unit_test(test_readme_acl_table),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
