/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * consumer: the worker's consumer core (consumer.h). Pure: the clock and
 * the random words come in; the shells (engine.c, ejob.c) act on what it
 * says.
 */
#include "core/consumer.h"

#include <string.h>

#include "base/backoff.h"

/* ------------------------------------------------------------------ */
/* 1. Error replies (R17)                                               */

static const char *const err_names[CONSUMER_ERR_COUNT] = {
	[CONSUMER_ERR_NONE] = "",
	[CONSUMER_ERR_LOST] = "lost",
	[CONSUMER_ERR_TRANSIENT] = "transient",
	[CONSUMER_ERR_READONLY] = "readonly",
	[CONSUMER_ERR_NOGROUP] = "nogroup",
	[CONSUMER_ERR_AUTH] = "auth",
	[CONSUMER_ERR_ENTRY] = "entry",
	[CONSUMER_ERR_OTHER] = "other",
	[CONSUMER_ERR_EXISTS] = "exists",
};

const char *
consumer_err_name(enum consumer_err c)
{
	if ((int)c < 0 || (int)c >= CONSUMER_ERR_COUNT || err_names[c] == NULL)
		return "";
	return err_names[c];
}

/* The error kinds (the reply's first word) whose class the word alone
 * gives. "ERR" is not among them: its text decides. */
static const struct {
	const char *kind;
	enum consumer_err c;
} kinds[] = {
	{"LOADING", CONSUMER_ERR_TRANSIENT},	/* a large dataset loading */
	{"BUSY", CONSUMER_ERR_TRANSIENT},	/* a long script or module command */
	{"MISCONF", CONSUMER_ERR_TRANSIENT},	/* the disk refuses the RDB or AOF */
	{"NOREPLICAS", CONSUMER_ERR_TRANSIENT},	/* min-replicas-to-write not met */
	{"OOM", CONSUMER_ERR_TRANSIENT},	/* maxmemory, noeviction */
	{"CLUSTERDOWN", CONSUMER_ERR_TRANSIENT},
	{"TRYAGAIN", CONSUMER_ERR_TRANSIENT},	/* a slot migrating (R17: no attempt spent) */
	{"MASTERDOWN", CONSUMER_ERR_TRANSIENT},	/* a stale replica that will not serve */
	{"MOVED", CONSUMER_ERR_TRANSIENT},	/* the cluster map changed: rconn follows */
	{"ASK", CONSUMER_ERR_TRANSIENT},
	{"UNKILLABLE", CONSUMER_ERR_TRANSIENT},	/* BUSY that SCRIPT KILL cannot end */
	{"NOSCRIPT", CONSUMER_ERR_TRANSIENT},	/* an EVALSHA's: no longer sent */
	{"READONLY", CONSUMER_ERR_READONLY},
	{"NOGROUP", CONSUMER_ERR_NOGROUP},
	{"BUSYGROUP", CONSUMER_ERR_EXISTS},
	{"NOAUTH", CONSUMER_ERR_AUTH},
	{"WRONGPASS", CONSUMER_ERR_AUTH},
	{"NOPERM", CONSUMER_ERR_AUTH},
	{"WRONGTYPE", CONSUMER_ERR_ENTRY},	/* the entry's key holds another type */
};

/* Texts of "ERR ..." replies, found anywhere in it, in the order tried:
 * a script's own refusals before the entry's data, since "ERR Script
 * killed by user" is Redis' and not the entry's. */
static const struct {
	const char *needle;
	enum consumer_err c;
} err_texts[] = {
	{"Script killed by user", CONSUMER_ERR_TRANSIENT},
	/* the library gone (FUNCTION DELETE): its entries wait, unspent */
	{"Function not found", CONSUMER_ERR_TRANSIENT},
	{"The user executing the script can't", CONSUMER_ERR_AUTH},	/* the ACL, in a script */
	{"not an integer", CONSUMER_ERR_ENTRY},		/* HINCRBY of "x" */
	{"not a valid float", CONSUMER_ERR_ENTRY},	/* ZADD, INCRBYFLOAT */
	{"not a float", CONSUMER_ERR_ENTRY},		/* HINCRBYFLOAT of "x" */
	{"would overflow", CONSUMER_ERR_ENTRY},		/* HINCRBY past LLONG_MAX */
};

/* 1 when text (after "ERR ") is a Lua runtime error of a script or of a
 * function of the library: "user_script:<digits>:", "user_function:<digits>:".
 * The tail Redis adds to every script error (", on @user_script:N.") is
 * not at the start, so it never matches. */
static int
lua_runtime_error(const char *text)
{
	static const char pre[] = "user_script:", fpre[] = "user_function:";
	const char *p = text;

	if (strncmp(p, fpre, sizeof fpre - 1) == 0)
		p += sizeof fpre - 1;
	else if (strncmp(p, pre, sizeof pre - 1) == 0)
		p += sizeof pre - 1;
	else
		return 0;
	if (*p < '0' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9')
		p++;
	return *p == ':';
}

enum consumer_err
consumer_err_classify(const char *text)
{
	size_t k = 0;

	if (text == NULL)
		return CONSUMER_ERR_LOST;
	while (text[k] >= 'A' && text[k] <= 'Z')
		k++;
	/* The kind is a whole word: "LOADINGX" is no kind we know. */
	if (text[k] != ' ' && text[k] != '\0')
		return CONSUMER_ERR_OTHER;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (strlen(kinds[i].kind) == k && strncmp(text, kinds[i].kind, k) == 0)
			return kinds[i].c;
	if (k != 3 || strncmp(text, "ERR", 3) != 0)
		return CONSUMER_ERR_OTHER;
	for (size_t i = 0; i < sizeof err_texts / sizeof err_texts[0]; i++)
		if (strstr(text, err_texts[i].needle) != NULL)
			return err_texts[i].c;
	if (text[3] == ' ' && lua_runtime_error(text + 4))
		return CONSUMER_ERR_ENTRY;
	return CONSUMER_ERR_OTHER;
}

const char *
consumer_nogroup_key(const char *text, size_t *len)
{
	static const char open_s[] = "key '", close_s[] = "' or consumer group";
	const char *open, *close;

	if (consumer_err_classify(text) != CONSUMER_ERR_NOGROUP ||
	    (open = strstr(text, open_s)) == NULL)
		return NULL;
	open += sizeof open_s - 1;
	if ((close = strstr(open, close_s)) == NULL)
		return NULL;
	*len = (size_t)(close - open);
	return open;
}

/* 1 when c continues a UTF-8 sequence (10xxxxxx). */
static int
utf8_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

char *
consumer_err_line(const char *text, char *buf, size_t n)
{
	static const char cut[] = "...";
	size_t len, keep;

	if (n == 0)
		return buf;
	if (text == NULL)
		text = "no reply";
	len = strlen(text);
	keep = len;
	if (len > n - 1) {
		/* room for the mark; back to the start of a character */
		keep = n - 1 >= sizeof cut - 1 ? n - 1 - (sizeof cut - 1) : 0;
		while (keep > 0 && utf8_cont((unsigned char)text[keep]))
			keep--;
	}
	for (size_t i = 0; i < keep; i++) {
		unsigned char c = (unsigned char)text[i];
		buf[i] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
	}
	buf[keep] = '\0';
	if (keep < len && n - 1 - keep >= sizeof cut - 1)
		memcpy(buf + keep, cut, sizeof cut);
	return buf;
}

struct consumer_err_step
consumer_err_next(struct consumer_errs *e, enum consumer_err c, int entry_data, uint64_t rnd)
{
	struct consumer_err_step st = {.verdict = CONSUMER_RETRY};

	if (e->tries < 64)	/* the backoff is capped long before */
		e->tries++;
	if (c == CONSUMER_ERR_ENTRY && entry_data && !e->gave_up) {
		e->entry++;
		if (e->entry >= CONSUMER_ERR_ENTRY_TRIES) {
			e->gave_up = 1;
			st.verdict = CONSUMER_GIVE_UP;
			return st;
		}
	}
	st.delay_ms = backoff_ms(CONSUMER_ERR_RETRY_MIN_MS, CONSUMER_ERR_RETRY_MIN_MS,
	    CONSUMER_ERR_RETRY_MAX_MS, (int)e->tries, rnd);
	return st;
}

void
consumer_err_ok(struct consumer_errs *e)
{
	e->tries = 0;
	e->entry = 0;
}

void
consumer_err_redis_up(struct consumer_errs *e)
{
	e->tries = 0;
}

/* ------------------------------------------------------------------ */
/* 2. Reading and claiming                                              */

long
consumer_room(const struct consumer_view *v)
{
	long room = v->max_in_flight - v->in_hand;

	return room < v->batch ? room : v->batch;
}

long
consumer_read_count(const struct consumer_view *v, size_t streams)
{
	long share = (v->max_in_flight - v->in_hand) / (long)(streams ? streams : 1);
	long room = consumer_room(v);

	if (share < 1)
		share = 1;
	return share < room ? share : room;
}

int
consumer_tokens_let_read(const struct consumer_view *v)
{
	return v->tokens_usable && v->waiting_token <= consumer_held_max(v->max_in_flight);
}

int
consumer_may_read(const struct consumer_view *v)
{
	return v->group_ready && v->own_done && !v->draining && !v->reading && v->blk_up &&
	    v->cmd_up && !v->backing_off && consumer_tokens_let_read(v) &&
	    consumer_room(v) > 0 && !v->queue_paused && v->held <= consumer_held_max(v->max_in_flight);
}

long
consumer_held_max(long max_in_flight)
{
	return max_in_flight / 2 > 0 ? max_in_flight / 2 : 1;
}

int
consumer_parks(long kept, long max_in_flight)
{
	return kept >= consumer_held_max(max_in_flight);
}

enum consumer_unpark
consumer_unpark_next(int held, int64_t earliest, int64_t now, int draining)
{
	if (draining)
		return CONSUMER_UNPARK_NONE;
	if (!held)
		return CONSUMER_UNPARK_ALL;
	return earliest <= now ? CONSUMER_UNPARK_DUE : CONSUMER_UNPARK_NONE;
}

int
consumer_token_parks(int token_needed, int token_ok, long kept, long max_in_flight)
{
	return token_needed && !token_ok && consumer_parks(kept, max_in_flight);
}

int
consumer_keeps_parked(int gate_keeps, int token_needed, int token_ok)
{
	return gate_keeps || (token_needed && !token_ok);
}

int
consumer_stream_ready(const struct consumer_view *v)
{
	return v->group_ready && v->own_done && v->cmd_up && !v->backing_off;
}

int
consumer_stream_coming(const struct consumer_view *v)
{
	return !consumer_stream_ready(v) && v->cmd_up && !v->backing_off;
}

int
consumer_check_stall(const struct consumer_view *v, int64_t quiet_ms, long block_ms,
		     long heartbeat_ms)
{
	return !v->draining && v->own_done && consumer_room(v) > 0 && v->tokens_usable &&
	    quiet_ms >= 3 * (int64_t)block_ms + heartbeat_ms;
}

long
consumer_forgotten_ms(long lease_renew_ms)
{
	return 2 * lease_renew_ms;
}

unsigned
consumer_reply_next(enum consumer_step s, enum consumer_err c, int parsed)
{
	if (c == CONSUMER_ERR_LOST)
		return 0;	/* the connection's return sends it again */
	switch (s) {
	case CONSUMER_STEP_READ:
	case CONSUMER_STEP_OWN:
		if (c == CONSUMER_ERR_NOGROUP)
			return CONSUMER_DO_GROUP;
		/* LOADING, READONLY, MISCONF, MOVED, ASK..., or a shape we do
		 * not know: never a tight loop */
		return parsed ? CONSUMER_DO_OK : CONSUMER_DO_BACKOFF;
	case CONSUMER_STEP_AUTO:
		/* the next claim tick tries again */
		return parsed ? CONSUMER_DO_OK : c == CONSUMER_ERR_NOGROUP ? CONSUMER_DO_GROUP : 0;
	case CONSUMER_STEP_RENEW:
		/* R14: a worker at capacity reads nothing, so this may be the
		 * only reply that says the group went; R10: a refused renewal
		 * is tried again with backoff, not left to the next tick */
		if (parsed)
			return CONSUMER_DO_OK;
		return CONSUMER_DO_BACKOFF | (c == CONSUMER_ERR_NOGROUP ? CONSUMER_DO_GROUP : 0);
	case CONSUMER_STEP_GROUP:
		return c == CONSUMER_ERR_NONE || c == CONSUMER_ERR_EXISTS ? CONSUMER_DO_OK :
		    CONSUMER_DO_BACKOFF;
	case CONSUMER_STEP_BEAT:
		return c == CONSUMER_ERR_NONE ? CONSUMER_DO_OK : CONSUMER_DO_BACKOFF;
	}
	return CONSUMER_DO_BACKOFF;
}

enum consumer_claim
consumer_next_claim(const struct consumer_view *v, int tick)
{
	if (!v->group_ready || !v->cmd_up || v->draining || v->claiming || consumer_room(v) <= 0)
		return CONSUMER_CLAIM_NONE;
	/* Our own entries are ours without a token too: in hand they meet
	 * their deadline (R1) or are handed back after auth_wait_max_ms (R9);
	 * left in the PEL of a live worker, no one would ever take them. */
	if (!v->own_done)
		return v->backing_off ? CONSUMER_CLAIM_NONE : CONSUMER_CLAIM_OWN;
	return tick && consumer_tokens_let_read(v) ? CONSUMER_CLAIM_AUTO : CONSUMER_CLAIM_NONE;
}

long
consumer_claim_calls(long room)
{
	return room > 0 && room < CONSUMER_CLAIM_SCAN ? CONSUMER_CLAIM_SCAN / room : 1;
}

int64_t
consumer_retry_ms(unsigned failures, uint64_t rnd)
{
	return backoff_ms(CONSUMER_ERR_RETRY_MIN_MS, CONSUMER_ERR_RETRY_MIN_MS,
	    CONSUMER_ERR_RETRY_MAX_MS, (int)(failures < 64 ? failures : 64), rnd);
}

/* An outage of 18.8 s said 28 redis.down warnings (issue 38 item 5): its
 * start and a reminder a minute are what an operator acts on. */
int
consumer_down_warn(int64_t said_at_ms, int64_t now_ms)
{
	return said_at_ms == 0 || now_ms - said_at_ms >= CONSUMER_DOWN_REMIND_MS;
}

/* ------------------------------------------------------------------ */
/* 3. Redis' own credential (R20)                                       */

enum consumer_auth_act
consumer_auth_write(enum consumer_err c, int auth_lost)
{
	/* A connection closed as its token died fails its commands with no
	 * reply: while the credential is lost that is R20's, not an outage. */
	if (auth_lost && (c == CONSUMER_ERR_AUTH || c == CONSUMER_ERR_LOST))
		return CONSUMER_AUTH_HOLD;
	if (c == CONSUMER_ERR_AUTH)
		return CONSUMER_AUTH_RECLAIM;
	return CONSUMER_AUTH_R17;
}

enum consumer_auth_seen
consumer_auth_seen(int ok, const char *kind, int static_cred)
{
	if (ok == 1)
		return CONSUMER_AS_NONE;
	if (static_cred)
		return kind != NULL && strcmp(kind, "NOPERM") == 0 ? CONSUMER_AS_NONE :
		    CONSUMER_AS_NOTE;
	return ok < 0 ? CONSUMER_AS_STALE : CONSUMER_AS_RENEW;
}

enum consumer_reclaim_step
consumer_reclaim_next(enum consumer_reclaim r, enum consumer_err c, int auth_lost)
{
	switch (r) {
	case CONSUMER_RECLAIM_OURS:
		return CONSUMER_RS_WRITE;
	case CONSUMER_RECLAIM_GONE:
		return CONSUMER_RS_WRITE_UNPENDING;
	case CONSUMER_RECLAIM_LOST:
		return CONSUMER_RS_ABANDON;
	case CONSUMER_RECLAIM_FAILED:
		break;
	}
	/* Until the reclaim is answered the write waits: held again while
	 * the credential is lost, else R17's backoff (a stale refusal, an
	 * outage), never a resend without the owner check. */
	return consumer_auth_write(c, auth_lost) == CONSUMER_AUTH_HOLD ? CONSUMER_RS_HOLD :
	    CONSUMER_RS_RETRY;
}

enum consumer_name_step
consumer_name_next(int held, int ok, int won, const char *value, const char *first)
{
	if (!ok)
		return CONSUMER_NAME_RETRY;
	if (won)
		return CONSUMER_NAME_OURS;
	if (held)
		return CONSUMER_NAME_LOST;
	if (value == NULL || first == NULL || first[0] == '\0' || strcmp(value, first) == 0)
		return CONSUMER_NAME_WAIT;
	return CONSUMER_NAME_TAKEN;
}
