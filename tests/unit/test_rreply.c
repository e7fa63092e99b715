/* SPDX-License-Identifier: BSD-2-Clause */
/* Unit tests for src/redis/rreply.c: hiredis' reader with rreply's functions
 * builds the same trees as with its own, from whole and from byte-at-a-time
 * input, and frees what a bad or cut-off reply left (ASan checks that). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>

#include "redis/rreply.h"

static const struct {
	const char *name, *resp;
	size_t len;	/* 0: strlen */
} inputs[] = {
	{"status", "+OK\r\n", 0},
	{"error", "-ERR wrong\r\n", 0},
	{"integer", ":-42\r\n", 0},
	{"bulk", "$5\r\nhello\r\n", 0},
	{"empty bulk", "$0\r\n\r\n", 0},
	{"nil bulk", "$-1\r\n", 0},
	{"nil array", "*-1\r\n", 0},
	{"empty array", "*0\r\n", 0},
	{"binary", "$5\r\na\0b\r\n\r\n", 11},
	/* an XREADGROUP reply: [[stream, [[id, [field, value]]]]] */
	{"nested", "*1\r\n*2\r\n$4\r\nw:js\r\n*2\r\n*2\r\n$3\r\n1-0\r\n*2\r\n$2\r\nid\r\n$2\r\nr1\r\n"
	    "*2\r\n$3\r\n2-0\r\n*-1\r\n", 0},
	/* a batch's reply: an item's array, an item's error, a nil */
	{"batch", "*3\r\n*4\r\n:1\r\n$2\r\nok\r\n$6\r\nqueued\r\n$1\r\n1\r\n-ERR item\r\n$-1\r\n", 0},
};

#define NINPUTS (sizeof inputs / sizeof inputs[0])

static size_t
len_of(size_t i)
{
	return inputs[i].len ? inputs[i].len : strlen(inputs[i].resp);
}

static void
same_tree(const redisReply *a, const redisReply *b)
{
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->type, b->type);
	assert_int_equal(a->integer, b->integer);
	assert_int_equal(a->len, b->len);
	assert_int_equal(a->elements, b->elements);
	if (a->str != NULL || b->str != NULL) {
		assert_non_null(a->str);
		assert_non_null(b->str);
		assert_memory_equal(a->str, b->str, a->len + 1);	/* and the NUL */
	}
	for (size_t i = 0; i < a->elements; i++)
		same_tree(a->element[i], b->element[i]);
}

/* The reply of `resp` (len bytes) fed `step` bytes at a time (0: whole). */
static void *
read_one(redisReader *r, const char *resp, size_t len, size_t step)
{
	void *reply = NULL;

	for (size_t at = 0; at < len; ) {
		size_t n = step == 0 || len - at < step ? len - at : step;
		assert_int_equal(redisReaderFeed(r, resp + at, n), REDIS_OK);
		at += n;
		assert_int_equal(redisReaderGetReply(r, &reply), REDIS_OK);
		if (at < len)
			assert_null(reply);
	}
	return reply;
}

/* Every input, whole and a byte at a time, reads as hiredis' own reader
 * reads it; the objects are freed by rreply's freeObject. */
static void
test_same_trees(void **state)
{
	(void)state;
	for (size_t i = 0; i < NINPUTS; i++) {
		for (size_t step = 0; step <= 1; step++) {
			redisReader *mine = redisReaderCreateWithFunctions(rreply_functions());
			redisReader *theirs = redisReaderCreate();
			assert_non_null(mine);
			assert_non_null(theirs);
			redisReply *a = read_one(mine, inputs[i].resp, len_of(i), step);
			redisReply *b = read_one(theirs, inputs[i].resp, len_of(i), step);
			same_tree(a, b);
			/* one block each: a string's bytes and an array's vector
			 * right after the object */
			if (a->str != NULL)
				assert_ptr_equal(a->str, (char *)(a + 1));
			if (a->elements > 0)
				assert_ptr_equal(a->element, (redisReply **)(void *)(a + 1));
			rreply_functions()->freeObject(a);
			freeReplyObject(b);
			redisReaderFree(mine);
			redisReaderFree(theirs);
		}
	}
}

/* A reply cut off in the middle of an array and then broken: the reader
 * frees what it built with rreply's freeObject (no leak under ASan), and a
 * reader freed with a reply half read does the same. */
static void
test_partial_freed(void **state)
{
	static const char broken[] = "*3\r\n$2\r\nok\r\n*2\r\n:1\r\n!oops\r\n";
	static const char half[] = "*2\r\n$3\r\nabc\r\n*1\r\n";
	redisReader *r = redisReaderCreateWithFunctions(rreply_functions());
	void *reply = NULL;

	(void)state;
	assert_non_null(r);
	assert_int_equal(redisReaderFeed(r, broken, sizeof broken - 1), REDIS_OK);
	assert_int_equal(redisReaderGetReply(r, &reply), REDIS_ERR);
	assert_null(reply);
	redisReaderFree(r);

	r = redisReaderCreateWithFunctions(rreply_functions());
	assert_non_null(r);
	assert_int_equal(redisReaderFeed(r, half, sizeof half - 1), REDIS_OK);
	assert_int_equal(redisReaderGetReply(r, &reply), REDIS_OK);
	assert_null(reply);
	redisReaderFree(r);
}

/* An array announcing more than RREPLY_MAX_ELEMENTS elements is refused
 * (hiredis calls it out of memory) before anything is allocated for it;
 * one at the limit is read. */
static void
test_too_many_elements(void **state)
{
	char head[32];
	redisReader *r = redisReaderCreateWithFunctions(rreply_functions());
	void *reply = NULL;

	(void)state;
	assert_non_null(r);
	snprintf(head, sizeof head, "*%d\r\n", RREPLY_MAX_ELEMENTS + 1);
	assert_int_equal(redisReaderFeed(r, head, strlen(head)), REDIS_OK);
	assert_int_equal(redisReaderGetReply(r, &reply), REDIS_ERR);
	assert_null(reply);
	redisReaderFree(r);

	r = redisReaderCreateWithFunctions(rreply_functions());
	assert_non_null(r);
	snprintf(head, sizeof head, "*%d\r\n", RREPLY_MAX_ELEMENTS);
	assert_int_equal(redisReaderFeed(r, head, strlen(head)), REDIS_OK);
	assert_int_equal(redisReaderGetReply(r, &reply), REDIS_OK);
	assert_null(reply);	/* waiting for the elements */
	redisReaderFree(r);
}

/* A reply of many elements, long strings and nested arrays, as a batch's
 * or a full read's is: it outgrows the root's room and takes several
 * chunks, one of them larger than a chunk for one long string. */
static size_t
big_reply(char *buf, size_t cap, size_t *cut)
{
	static char bulk[9000];
	size_t len = 0;

	memset(bulk, 'x', sizeof bulk);
	len += (size_t)snprintf(buf + len, cap - len, "*300\r\n");
	for (int i = 0; i < 300; i++) {
		if (i == 200)
			*cut = len;	/* an element's start */
		int slen = i == 151 ? (int)sizeof bulk : (i * 7) % 200;
		if (i % 3 == 0) {
			len += (size_t)snprintf(buf + len, cap - len, "*3\r\n:%d\r\n$%d\r\n", i, slen);
			memcpy(buf + len, bulk, (size_t)slen);
			len += (size_t)slen;
			len += (size_t)snprintf(buf + len, cap - len, "\r\n$-1\r\n");
		} else {
			len += (size_t)snprintf(buf + len, cap - len, "$%d\r\n", slen);
			memcpy(buf + len, bulk, (size_t)slen);
			len += (size_t)slen;
			len += (size_t)snprintf(buf + len, cap - len, "\r\n");
		}
		assert_true(len < cap - 16384);
	}
	return len;
}

/* A reply spanning chunks reads as hiredis' own reader reads it, fed whole
 * and a few bytes at a time; cut off after some chunks and then broken,
 * the reader frees every chunk (ASan would report a leak). */
static void
test_many_chunks(void **state)
{
	static char buf[96 * 1024];
	size_t cut = 0, len = big_reply(buf, sizeof buf, &cut);
	redisReader *r;
	void *reply = NULL;

	(void)state;
	for (size_t step = 0; step <= 7; step += 7) {
		redisReader *mine = redisReaderCreateWithFunctions(rreply_functions());
		redisReader *theirs = redisReaderCreate();
		assert_non_null(mine);
		assert_non_null(theirs);
		redisReply *a = read_one(mine, buf, len, step);
		redisReply *b = read_one(theirs, buf, len, 0);
		assert_int_equal(a->elements, 300);
		assert_int_equal(a->element[151]->len, 9000);
		same_tree(a, b);
		rreply_functions()->freeObject(a);
		freeReplyObject(b);
		redisReaderFree(mine);
		redisReaderFree(theirs);
	}

	r = redisReaderCreateWithFunctions(rreply_functions());
	assert_non_null(r);
	assert_int_equal(redisReaderFeed(r, buf, cut), REDIS_OK);
	assert_int_equal(redisReaderGetReply(r, &reply), REDIS_OK);
	assert_null(reply);
	assert_int_equal(redisReaderFeed(r, "!oops\r\n", 7), REDIS_OK);
	assert_int_equal(redisReaderGetReply(r, &reply), REDIS_ERR);
	assert_null(reply);
	redisReaderFree(r);
}

/* Many replies in one feed come out one by one, each its own tree. */
static void
test_pipeline(void **state)
{
	redisReader *r = redisReaderCreateWithFunctions(rreply_functions());
	char buf[4096];
	size_t len = 0;

	(void)state;
	assert_non_null(r);
	for (size_t i = 0; i < NINPUTS; i++) {
		memcpy(buf + len, inputs[i].resp, len_of(i));
		len += len_of(i);
	}
	assert_int_equal(redisReaderFeed(r, buf, len), REDIS_OK);
	for (size_t i = 0; i < NINPUTS; i++) {
		redisReader *theirs = redisReaderCreate();
		redisReply *a = NULL, *b;
		assert_int_equal(redisReaderGetReply(r, (void **)&a), REDIS_OK);
		b = read_one(theirs, inputs[i].resp, len_of(i), 0);
		same_tree(a, b);
		rreply_functions()->freeObject(a);
		freeReplyObject(b);
		redisReaderFree(theirs);
	}
	redisReaderFree(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_trees),
		cmocka_unit_test(test_partial_freed),
		cmocka_unit_test(test_pipeline),
		cmocka_unit_test(test_too_many_elements),
		cmocka_unit_test(test_many_chunks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
