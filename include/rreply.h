/*
 * rreply: the reply objects hiredis' reader builds for rconn, each in one
 * allocation. hiredis' own functions make a string reply in two (the
 * object, then its bytes) and an array in two (the object, then its element
 * vector); a job's replies are about 15 objects, and the allocator's slow
 * path (bursts of a batch's replies overflow glibc's per-thread cache) was
 * a visible part of the daemon's cost (bench/README.md, lever 24).
 *
 * The objects are hiredis' struct redisReply, laid out as hiredis reads
 * them (str and element point into the same block), so every reader of a
 * reply is unchanged. They must be freed only through rreply's freeObject,
 * which hiredis calls once a callback returned; never with
 * freeReplyObject. Pure: no state, safe in any thread.
 */
#ifndef WARRANTD_RREPLY_H
#define WARRANTD_RREPLY_H

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

#endif
