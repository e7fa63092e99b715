/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rreply: hiredis reply objects, a whole reply in a few allocations
 * (rreply.h).
 *
 * A reply's first object (its root) is allocated with a header before it:
 * an arena the rest of the reply's objects are carved from. The root of an
 * array has room for about 64 bytes an element after its own vector; what
 * does not fit goes into chunks of CHUNK bytes (or one object's size, when
 * larger), linked from the header and freed with the root.
 */
#include "redis/rreply.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <hiredis/hiredis.h>

#define ALIGN		16	/* as malloc's: a redisReply holds pointers and a long long */
#define CHUNK		4096	/* a new chunk's size, unless one object needs more */
#define ROOT_PER_ELEMENT 64	/* a root array's room for each element's object... */
#define ROOT_ROOM_MAX	4096	/* ...up to this much */

struct chunk {
	SLIST_ENTRY(chunk) link;
};

SLIST_HEAD(chunk_list, chunk);

/* Before every root; a multiple of ALIGN, so the root is aligned too. */
union arena {
	struct {
		struct chunk_list chunks;	/* newest first; each freed with the root */
		char *next, *end;	/* room left in the newest block */
		size_t size;		/* bytes allocated for the reply so far */
	} a;
	max_align_t align;
	char pad[32];
};

static size_t
round_up(size_t n)
{
	return (n + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}

/* The header the root was allocated behind (root_new). */
static union arena *
arena_of(redisReply *root)
{
	return (union arena *)(void *)root - 1;
}

/* The reply the task's object belongs to: hiredis builds it top down, so
 * the root's object exists before any of its elements'. */
static redisReply *
root_of(const redisReadTask *task)
{
	while (task->parent != NULL)
		task = task->parent;
	return task->obj;
}

/* `size` bytes (a multiple of ALIGN) from the root's arena; NULL when out
 * of memory. */
static void *
carve(union arena *ar, size_t size)
{
	char *p;

	if ((size_t)(ar->a.end - ar->a.next) < size) {
		size_t cap = size > CHUNK ? size : CHUNK;
		struct chunk *c;

		if (cap > SIZE_MAX - round_up(sizeof *c) || (c = malloc(round_up(sizeof *c) + cap)) == NULL)
			return NULL;
		SLIST_INSERT_HEAD(&ar->a.chunks, c, link);
		ar->a.size += round_up(sizeof *c) + cap;
		ar->a.next = (char *)c + round_up(sizeof *c);
		ar->a.end = ar->a.next + cap;
	}
	p = ar->a.next;
	ar->a.next += size;
	return p;
}

/* A root: the arena's header, the object, `extra` bytes after it, and
 * `room` bytes of arena. */
static redisReply *
root_new(size_t extra, size_t room)
{
	union arena *ar;
	size_t body;

	if (extra > SIZE_MAX / 2 - sizeof(redisReply) - sizeof *ar - room)
		return NULL;
	body = round_up(sizeof(redisReply) + extra);
	if ((ar = malloc(sizeof *ar + body + room)) == NULL)
		return NULL;
	SLIST_INIT(&ar->a.chunks);
	ar->a.size = sizeof *ar + body + room;
	ar->a.next = (char *)(ar + 1) + body;
	ar->a.end = ar->a.next + room;
	return (redisReply *)(void *)(ar + 1);
}

/* A new object of `extra` more bytes after it, linked into its parent's
 * element vector as hiredis' own functions do. NULL when out of memory. */
static redisReply *
object(const redisReadTask *task, int type, size_t extra, size_t room)
{
	redisReply *r;

	if (task->parent == NULL)
		r = root_new(extra, room);
	else if (extra > SIZE_MAX / 2 - sizeof *r)
		r = NULL;
	else
		r = carve(arena_of(root_of(task)), round_up(sizeof *r + extra));
	if (r == NULL)
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
	redisReply *r = object(task, task->type, len + 1, 0);
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
	size_t room = n < ROOT_ROOM_MAX / ROOT_PER_ELEMENT ? n * ROOT_PER_ELEMENT : ROOT_ROOM_MAX;
	redisReply *r;

	if (n > RREPLY_MAX_ELEMENTS)
		return NULL;
	r = object(task, REDIS_REPLY_ARRAY, n * sizeof(redisReply *), room);
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
	redisReply *r = object(task, REDIS_REPLY_INTEGER, 0, 0);

	if (r != NULL)
		r->integer = value;
	return r;
}

static void *
create_nil(const redisReadTask *task)
{
	return object(task, REDIS_REPLY_NIL, 0, 0);
}

/* hiredis frees only roots: a finished reply after its callback, or the
 * one it was building when the input broke or the reader was freed. */
static void
free_object(void *reply)
{
	union arena *ar;
	struct chunk *c;

	if (reply == NULL)
		return;
	ar = arena_of(reply);
	while ((c = SLIST_FIRST(&ar->a.chunks)) != NULL) {
		SLIST_REMOVE_HEAD(&ar->a.chunks, link);
		free(c);
	}
	free(ar);
}

static redisReplyObjectFunctions functions = {
	create_string, create_array, create_integer, create_nil, free_object,
};

redisReplyObjectFunctions *
rreply_functions(void)
{
	return &functions;
}

size_t
rreply_size(const void *root)
{
	return root != NULL ? ((const union arena *)root - 1)->a.size : 0;
}
