/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rreply: the reply objects hiredis' reader builds for rconn, a whole reply
 * in a few allocations. hiredis' own functions make each string in two (the
 * object, then its bytes) and each array in two (the object, then its
 * element vector): a job's replies were about 20 allocations, and the
 * allocator was a visible part of the daemon's cost (bench/README.md,
 * levers 24 and 28). Here an object's bytes or vector follow it in its
 * block, and a reply's objects are carved from an arena its first (root)
 * object heads: one allocation for most replies, one more for each 4 KiB
 * beyond about 64 bytes an element.
 *
 * The objects are hiredis' struct redisReply, laid out as hiredis reads
 * them (str and element point into the same block), so every reader of a
 * reply is unchanged. A reply must be freed only whole (its root), only
 * through rreply's freeObject, which hiredis calls once a callback
 * returned; never with freeReplyObject, and no element on its own. Pure: no
 * state, safe in any thread.
 */
#ifndef WARRANTD_RREPLY_H
#define WARRANTD_RREPLY_H

#include <stddef.h>

struct redisReplyObjectFunctions;	/* hiredis' (read.h) */

/* The most elements an array reply may announce: hiredis 0.14 allocates the
 * element vector the header names before a single element arrives, so a
 * broken or hostile "*388888888" would take 3 GB. More is refused as out of
 * memory (hiredis ends the connection; rconn reconnects). No reply the
 * daemon asks for comes near it: its reads and scans are capped at a few
 * hundred entries. */
#define RREPLY_MAX_ELEMENTS (1 << 20)

/* The functions to put in a redisReader's `fn` (hiredis keeps the pointer:
 * static storage, never freed). */
struct redisReplyObjectFunctions *rreply_functions(void);

/* The bytes allocated so far for the reply whose root object is root (one
 * made by these functions; whole or still being read): what rconn caps
 * (RCONN_REPLY_MAX_BYTES). NULL: 0. */
size_t rreply_size(const void *root);

#endif
