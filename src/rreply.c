/*
 * rreply: hiredis reply objects in one allocation each (rreply.h).
 */
#include "rreply.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

/* A new object of `extra` more bytes after it, linked into its parent's
 * element vector as hiredis' own functions do. NULL when out of memory. */
static redisReply *
object(const redisReadTask *task, int type, size_t extra)
{
	redisReply *r;

	if (extra > SIZE_MAX - sizeof *r || (r = malloc(sizeof *r + extra)) == NULL)
		return NULL;
	memset(r, 0, sizeof *r);
	r->type = type;
	if (task->parent != NULL) {
		redisReply *parent = task->parent->obj;
		parent->element[task->idx] = r;
	}
	return r;
}

static void *
create_string(const redisReadTask *task, char *str, size_t len)
{
	if (len == SIZE_MAX)
		return NULL;
	redisReply *r = object(task, task->type, len + 1);
	if (r == NULL)
		return NULL;
	r->str = (char *)(r + 1);
	memcpy(r->str, str, len);
	r->str[len] = '\0';
	r->len = len;
	return r;
}

static void *
create_array(const redisReadTask *task, int elements)
{
	size_t n = elements > 0 ? (size_t)elements : 0;
	redisReply *r;

	if (n > RREPLY_MAX_ELEMENTS)
		return NULL;
	r = object(task, REDIS_REPLY_ARRAY, n * sizeof(redisReply *));
	if (r == NULL)
		return NULL;
	if (n > 0) {
		r->element = (redisReply **)(void *)(r + 1);
		/* a reply cut short is freed with the elements read so far */
		memset(r->element, 0, n * sizeof(redisReply *));
	}
	r->elements = n;
	return r;
}

static void *
create_integer(const redisReadTask *task, long long value)
{
	redisReply *r = object(task, REDIS_REPLY_INTEGER, 0);

	if (r != NULL)
		r->integer = value;
	return r;
}

static void *
create_nil(const redisReadTask *task)
{
	return object(task, REDIS_REPLY_NIL, 0);
}

static void
free_object(void *reply)
{
	redisReply *r = reply;

	if (r == NULL)
		return;
	if (r->type == REDIS_REPLY_ARRAY)
		for (size_t i = 0; i < r->elements; i++)
			free_object(r->element[i]);
	free(r);
}

static redisReplyObjectFunctions functions = {
	create_string, create_array, create_integer, create_nil, free_object,
};

redisReplyObjectFunctions *
rreply_functions(void)
{
	return &functions;
}
