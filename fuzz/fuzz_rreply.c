/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_rreply: arbitrary bytes from Redis' side, read by hiredis' reader with
 * rreply's functions (rconn's) and with hiredis' own, fed in two pieces split
 * where the input says: both readers must agree on every reply (type,
 * integer, bytes, elements), and on an error, and everything rreply built
 * must be freed (ASan's leak check). An array longer than
 * RREPLY_MAX_ELEMENTS is read by ours alone, which refuses it. */
#include "fuzz.h"
#include "redis/rreply.h"

#include <hiredis/hiredis.h>

static void
same(const redisReply *a, const redisReply *b)
{
	if (a == NULL || b == NULL) {
		if (a != b)
			abort();
		return;
	}
	if (a->type != b->type || a->integer != b->integer || a->len != b->len ||
	    a->elements != b->elements)
		abort();
	if ((a->str == NULL) != (b->str == NULL) ||
	    (a->str != NULL && memcmp(a->str, b->str, a->len + 1) != 0))
		abort();
	for (size_t i = 0; i < a->elements; i++)
		same(a->element[i], b->element[i]);
}

/* 1 when the bytes hold "*N" with N over RREPLY_MAX_ELEMENTS: hiredis' own
 * functions would allocate N pointers at once, so only ours read those. */
static int
big_array(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned long long v = 0;
		size_t j = i + 1;
		if (p[i] != '*')
			continue;
		while (j < n && p[j] >= '0' && p[j] <= '9' && v <= RREPLY_MAX_ELEMENTS)
			v = v * 10 + (unsigned)(p[j++] - '0');
		if (v > RREPLY_MAX_ELEMENTS)
			return 1;
	}
	return 0;
}

/* Ours alone: a too-long array is refused (an error), never allocated. */
static void
ours_alone(const uint8_t *data, size_t size)
{
	redisReader *r = redisReaderCreateWithFunctions(rreply_functions());
	void *reply;

	if (r == NULL || redisReaderFeed(r, (const char *)data, size) != REDIS_OK)
		abort();
	do {
		reply = NULL;
		if (redisReaderGetReply(r, &reply) != REDIS_OK)
			break;
		rreply_functions()->freeObject(reply);
	} while (reply != NULL);
	redisReaderFree(r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	redisReader *mine, *theirs;
	size_t cut;

	if (size == 0)
		return 0;
	cut = data[0] % size;
	data++;
	size--;
	if (cut > size)
		cut = size;
	if (big_array(data, size)) {
		ours_alone(data, size);
		return 0;
	}
	mine = redisReaderCreateWithFunctions(rreply_functions());
	theirs = redisReaderCreate();
	if (mine == NULL || theirs == NULL)
		abort();
	for (int piece = 0; piece < 2; piece++) {
		const char *p = (const char *)data + (piece ? cut : 0);
		size_t n = piece ? size - cut : cut;
		if (n > 0 && (redisReaderFeed(mine, p, n) != REDIS_OK ||
		    redisReaderFeed(theirs, p, n) != REDIS_OK))
			abort();
		for (;;) {
			void *a = NULL, *b = NULL;
			int ra = redisReaderGetReply(mine, &a);
			int rb = redisReaderGetReply(theirs, &b);
			if (ra != rb)
				abort();
			same(a, b);
			if (a != NULL)
				rreply_functions()->freeObject(a);
			if (b != NULL)
				freeReplyObject(b);
			if (ra != REDIS_OK || a == NULL)
				break;
		}
		if (mine->err)
			break;
	}
	redisReaderFree(mine);
	redisReaderFree(theirs);
	return 0;
}
