/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * tmpfiles: files in a temporary directory, for the unit tests of the config
 * file and the secret files (header only: each test is one program). Include
 * after <cmocka.h>, with _DEFAULT_SOURCE defined (mkdtemp, lstat).
 */
#ifndef WARRANTD_TMPFILES_H
#define WARRANTD_TMPFILES_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* dir/name, malloc'd (caller frees). */
static inline char *
path_join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);

	assert_non_null(p);
	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

static inline void
write_file(const char *dir, const char *name, const char *content, size_t len)
{
	char *p = path_join(dir, name);
	FILE *f = fopen(p, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(content, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(p, 0600), 0);	/* a secret is the owner's alone */
	free(p);
}

#define WRITE(dir, name, s) write_file(dir, name, s, strlen(s))

/* A new directory under /tmp (caller frees with free_tmpdir). */
static inline char *
make_tmpdir(void)
{
	char tmpl[] = "/tmp/warrantd-unit.XXXXXX";

	assert_non_null(mkdtemp(tmpl));
	char *d = strdup(tmpl);
	assert_non_null(d);
	return d;
}

static inline void
rmtree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *p = path_join(dir, e->d_name);
		assert_int_equal(lstat(p, &st), 0);
		if (S_ISDIR(st.st_mode))
			rmtree(p);
		else
			assert_int_equal(unlink(p), 0);
		free(p);
	}
	closedir(d);
	assert_int_equal(rmdir(dir), 0);
}

/* Removes dir and all in it, and frees the name. */
static inline void
free_tmpdir(char *dir)
{
	rmtree(dir);
	free(dir);
}

#endif
