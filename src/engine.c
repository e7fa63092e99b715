/*
 * engine: the consumer, the imperative shell around the entries in hand.
 *
 * Two Redis connections: `blk` carries only the blocking XREADGROUP, `cmd`
 * everything else, pipelined. This file reads entry ids (XREADGROUP, our
 * own PEL, XAUTOCLAIM), promotes scheduled ones, renews leases, writes the
 * heartbeat, follows the worker's token and runs the life cycle; each entry
 * in hand is a struct ejob, carried from admission to release by ejob.c.
 */
#define _DEFAULT_SOURCE
#include "engine_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sdnotify.h"
#include "version.h"

static void read_more(struct engine *eng);
static void own_pending_more(struct engine *eng);
static void maybe_finish_stop(struct engine *eng);

/* ------------------------------------------------------------------ */
/* small helpers                                                        */

/* SPEC §8: with no [oauth] at all, static or no credentials are "valid". */
static const char *
token_state(const struct engine *eng)
{
	return eng->oauth ? oauth_state_name(eng->oauth) : "valid";
}

static long long
token_expires_in_s(const struct engine *eng)
{
	int64_t at = eng->oauth ? oauth_expires_at_ms(eng->oauth) : 0;
	int64_t left = at ? at - wtime_now_ms() : 0;
	return left > 0 ? left / 1000 : 0;
}

void
engine_job_released(struct engine *eng)
{
	if (eng->draining)
		maybe_finish_stop(eng);
	else
		read_more(eng);
}

/* ------------------------------------------------------------------ */
/* reading: XREADGROUP, own PEL, XAUTOCLAIM, promotion                  */

static long
capacity(const struct engine *eng)
{
	long room = eng->cfg->daemon.max_in_flight - (long)eng->in_hand;
	return room < eng->cfg->redis.batch ? room : eng->cfg->redis.batch;
}

static void
admit_entries(struct engine *eng, const redisReply *entries, int deliveries)
{
	for (size_t i = 0; entries && i < entries->elements; i++) {
		const redisReply *e = entries->element[i];
		if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
		    e->element[0]->type != REDIS_REPLY_STRING)
			continue;
		int d = deliveries;
		if (e->elements >= 3 && e->element[2]->type == REDIS_REPLY_INTEGER)
			d = (int)e->element[2]->integer;
		ejob_admit(eng, e->element[0]->str, e->element[1], d);
	}
}

static void ensure_group(struct engine *eng);

static int
is_nogroup(const redisReply *r)
{
	return r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOGROUP", 7) == 0;
}

static void
after_read(struct rconn *rc, redisReply *r, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	eng->reading = 0;
	if (is_nogroup(r)) {
		eng->group_ready = 0;
		ensure_group(eng);
		return;
	}
	if (r && r->type == REDIS_REPLY_ERROR)
		log_warn("redis.error", "op=xreadgroup error=%.120s", r->str);
	if (r && r->type == REDIS_REPLY_ARRAY) {
		eng->last_read_at = wtime_now_ms();
		for (size_t i = 0; i < r->elements; i++) {
			const redisReply *s = r->element[i];
			if (s->type == REDIS_REPLY_ARRAY && s->elements == 2)
				admit_entries(eng, s->element[1], 1);
		}
	} else if (r && r->type == REDIS_REPLY_NIL) {
		eng->last_read_at = wtime_now_ms();
	}
	if (r != NULL)
		read_more(eng);
}

/* R6: with an action that needs an OAuth token and none held, read nothing. */
static int
may_read(const struct engine *eng)
{
	return eng->group_ready && eng->own_done && !eng->draining && !eng->reading &&
	    eng->blk && rconn_is_up(eng->blk) && capacity(eng) > 0;
}

/* R6: with no usable token, read nothing new: entries stay undelivered for
 * healthy consumers. Logged once per pause. */
static int
token_blocks_reading(struct engine *eng)
{
	int blocked = eng->needs_token && !worker_token(eng, eng->token_timeout_ms);

	if (blocked != eng->paused_for_token) {
		eng->paused_for_token = blocked;
		if (blocked)
			log_warn("consumer.paused", "reason=no-token token_state=%s", token_state(eng));
		else
			log_info("consumer.resumed", "token_state=%s", token_state(eng));
	}
	return blocked;
}

static void
read_more(struct engine *eng)
{
	if (token_blocks_reading(eng))
		return;
	if (!eng->own_done) {
		own_pending_more(eng);
		return;
	}
	if (!may_read(eng))
		return;
	char count[24], block[24];
	snprintf(count, sizeof count, "%ld", capacity(eng));
	snprintf(block, sizeof block, "%ld", eng->cfg->redis.block_ms);
	const char *argv[] = {"XREADGROUP", "GROUP", eng->cfg->redis.group,
	    eng->cfg->daemon.consumer, "COUNT", count, "BLOCK", block, "STREAMS",
	    eng->keys.jobs, ">"};
	size_t len[11];
	for (int i = 0; i < 11; i++)
		len[i] = strlen(argv[i]);
	if (rconn_commandv(eng->blk, after_read, eng, 11, argv, len) == 0)
		eng->reading = 1;
}

static void
dead_deleted(struct engine *eng, const redisReply *ids)
{
	for (size_t i = 0; ids && ids->type == REDIS_REPLY_ARRAY && i < ids->elements; i++) {
		if (ids->element[i]->type != REDIS_REPLY_STRING)
			continue;
		if (ejob_dead_deleted(eng, ids->element[i]->str) < 0)
			return;
	}
}

static void
after_own(struct rconn *rc, redisReply *r, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	eng->claiming = 0;
	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
		if (is_nogroup(r)) {
			eng->group_ready = 0;
			ensure_group(eng);
		}
		return;	/* retried when the connection is back */
	}
	const redisReply *next = r->element[0];
	admit_entries(eng, r->element[1], 1);
	dead_deleted(eng, r->element[2]);
	if (next->type == REDIS_REPLY_STRING && strcmp(next->str, "0-0") != 0) {
		snprintf(eng->own_cursor, sizeof eng->own_cursor, "%s", next->str);
	} else {
		eng->own_done = 1;
		log_info("consumer.ready", "consumer=%s group=%s stream=%s in_hand=%zu",
		    eng->cfg->daemon.consumer, eng->cfg->redis.group, eng->keys.jobs, eng->in_hand);
		sdnotify_send("READY=1\nSTATUS=consuming");
	}
	read_more(eng);
}

/* The claim script (store.c) in one of its modes, for as many entries as
 * there is room for; one claim at a time. */
static void
send_claim(struct engine *eng, const char *mode, const char *min_idle, const char *start,
	   rconn_reply_cb *cb)
{
	char count[24];
	snprintf(count, sizeof count, "%ld", capacity(eng));
	const char *argv[] = {eng->keys.jobs, eng->cfg->redis.group, eng->cfg->daemon.consumer,
	    mode, min_idle, start, count};
	size_t len[7];
	for (int i = 0; i < 7; i++)
		len[i] = strlen(argv[i]);
	if (rconn_eval(eng->cmd, &eng->s_claim, cb, eng, 1, 7, argv, len) == 0)
		eng->claiming = 1;
}

/* R14: our own pending entries first, as far as there is room. */
static void
own_pending_more(struct engine *eng)
{
	if (!eng->group_ready || eng->claiming || eng->draining || capacity(eng) <= 0 ||
	    !rconn_is_up(eng->cmd))
		return;
	send_claim(eng, "own", "0", eng->own_cursor, after_own);
}

static void
after_autoclaim(struct rconn *rc, redisReply *r, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	eng->claiming = 0;
	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 3) {
		if (is_nogroup(r)) {
			eng->group_ready = 0;
			ensure_group(eng);
		}
		return;
	}
	const redisReply *entries = r->element[1];
	size_t before = eng->in_hand;
	admit_entries(eng, entries, 1);
	if (eng->in_hand > before) {
		eng->n.claimed += (long long)(eng->in_hand - before);
		log_info("consumer.claimed", "count=%zu", eng->in_hand - before);
	}
	dead_deleted(eng, r->element[2]);
}

/* §5: promote due scheduled ids; every worker may, the script makes each
 * promotion happen once. */
static void
promote_due(struct engine *eng)
{
	char now[24], limit[24];
	snprintf(now, sizeof now, "%" PRId64, wtime_now_ms());
	snprintf(limit, sizeof limit, "%ld", eng->cfg->redis.batch);
	const char *pargv[] = {eng->keys.scheduled, eng->keys.jobs, now, limit};
	size_t plen[4];
	for (int i = 0; i < 4; i++)
		plen[i] = strlen(pargv[i]);
	best_effort(rconn_eval(eng->cmd, &eng->s_promote, ignore_reply, NULL, 2, 4, pargv, plen));
}

static void
claim_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;
	(void)loop, (void)revents;

	if (!eng->group_ready || !rconn_is_up(eng->cmd) || eng->draining)
		return;
	promote_due(eng);
	/* R6: never claim what cannot be completed for want of a token. */
	if (!eng->own_done || eng->claiming || capacity(eng) <= 0 ||
	    (eng->needs_token && !worker_token(eng, eng->token_timeout_ms)))
		return;
	char idle[24];
	snprintf(idle, sizeof idle, "%ld", eng->cfg->redis.claim_idle_ms);
	send_claim(eng, "auto", idle, "0-0", after_autoclaim);
}

/* ------------------------------------------------------------------ */
/* R10 leases                                                           */

static void
after_renew(struct rconn *rc, redisReply *r, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	if (r == NULL || r->type != REDIS_REPLY_ARRAY)
		return;
	for (size_t i = 0; i < r->elements; i++)
		if (r->element[i]->type == REDIS_REPLY_STRING)
			ejob_lease_lost(eng, r->element[i]->str);
}

static void
lease_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;
	(void)loop, (void)revents;

	if (!rconn_is_up(eng->cmd) || eng->in_hand == 0)
		return;
	size_t n = 3, cap = eng->in_hand + 3;
	const char **argv = calloc(cap, sizeof *argv);
	size_t *len = calloc(cap, sizeof *len);
	if (argv == NULL || len == NULL)
		goto out;
	argv[0] = eng->keys.jobs;
	argv[1] = eng->cfg->redis.group;
	argv[2] = eng->cfg->daemon.consumer;
	for (struct ejob *j = eng->jobs; j && n < cap; j = j->next)
		if (!j->finished && !j->lost)
			argv[n++] = j->stream_id;
	for (size_t i = 0; i < n; i++)
		len[i] = strlen(argv[i]);
	if (n > 3)
		best_effort(rconn_eval(eng->cmd, &eng->s_renew, after_renew, eng, 1, (int)n, argv, len));
out:
	free(argv);
	free(len);
}

/* ------------------------------------------------------------------ */
/* the group, the connections, the heartbeat                            */

static void
after_group(struct rconn *rc, redisReply *r, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	if (r == NULL)
		return;	/* retried on reconnect */
	if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSYGROUP", 9) != 0) {
		log_error("redis.error", "op=xgroup_create error=%.120s", r->str);
		return;
	}
	if (!eng->group_ready)
		log_info("consumer.group", "stream=%s group=%s", eng->keys.jobs, eng->cfg->redis.group);
	eng->group_ready = 1;
	read_more(eng);
}

/* R14: created at id 0 with MKSTREAM, so entries written before the first
 * worker started are processed. */
static void
ensure_group(struct engine *eng)
{
	if (rconn_is_up(eng->cmd))
		best_effort(rconn_command(eng->cmd, after_group, eng, "XGROUP CREATE %s %s 0 MKSTREAM",
		    eng->keys.jobs, eng->cfg->redis.group));
}


/* §8: a worker with a token and room that has read nothing for a long time
 * while the group has undelivered entries is stuck, and says so. */
static void
after_lag(struct rconn *rc, redisReply *r, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	if (r == NULL || r->type != REDIS_REPLY_ARRAY)
		return;
	for (size_t i = 0; i < r->elements; i++) {
		const redisReply *g = r->element[i];
		const char *name = field(g, "name");
		if (name == NULL || strcmp(name, eng->cfg->redis.group) != 0)
			continue;
		for (size_t k = 0; g->type == REDIS_REPLY_ARRAY && k + 1 < g->elements; k += 2)
			if (g->element[k]->type == REDIS_REPLY_STRING &&
			    strcmp(g->element[k]->str, "lag") == 0 &&
			    g->element[k + 1]->type == REDIS_REPLY_INTEGER &&
			    g->element[k + 1]->integer > 0)
				log_warn("consumer.stalled", "lag=%lld last_read_ms_ago=%" PRId64
				    " token_state=%s in_hand=%zu", g->element[k + 1]->integer,
				    wtime_now_ms() - eng->last_read_at, token_state(eng), eng->in_hand);
	}
}

static void
check_stalled(struct engine *eng)
{
	int64_t quiet = wtime_now_ms() - (eng->last_read_at ? eng->last_read_at : eng->started_at);

	if (eng->draining || !eng->own_done || capacity(eng) <= 0 ||
	    quiet < 3 * eng->cfg->redis.block_ms + eng->cfg->daemon.heartbeat_ms ||
	    (eng->needs_token && !worker_token(eng, eng->token_timeout_ms)))
		return;
	best_effort(rconn_command(eng->cmd, after_lag, eng, "XINFO GROUPS %s", eng->keys.jobs));
}

static void
heartbeat_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;
	const struct engine_counters *n = &eng->n;
	char host[256] = "", started[WTIME_RFC3339_LEN], now[WTIME_RFC3339_LEN];
	char last_read[WTIME_RFC3339_LEN] = "";
	(void)loop, (void)revents;

	if (!rconn_is_up(eng->cmd))
		return;
	gethostname(host, sizeof host - 1);
	if (eng->last_read_at)
		wtime_format_rfc3339(eng->last_read_at, last_read, sizeof last_read);
	best_effort(rconn_command(eng->cmd, ignore_reply, NULL,
	    "HSET %s host %s pid %d version %s startedAt %s heartbeatAt %s lastReadAt %s "
	    "inFlight %lld tokenState %s tokenExpiresIn %lld received %lld done %lld expired %lld "
	    "denied %lld failed %lld dead %lld retried %lld redispatched %lld authFailures %lld "
	    "tokenRefreshes %lld claimed %lld redisOutages %lld",
	    eng->keys.consumer, host, (int)getpid(), WARRANTD_VERSION,
	    wtime_format_rfc3339(eng->started_at, started, sizeof started),
	    wtime_format_rfc3339(wtime_now_ms(), now, sizeof now), last_read,
	    (long long)eng->in_hand, token_state(eng), token_expires_in_s(eng),
	    n->received, n->done, n->expired, n->denied, n->failed, n->dead, n->retried,
	    n->redispatched, n->auth_failures,
	    eng->oauth ? oauth_refreshes(eng->oauth) : 0LL, n->claimed, eng->outages));
	best_effort(rconn_command(eng->cmd, ignore_reply, NULL, "PEXPIRE %s %ld", eng->keys.consumer,
	    3 * eng->cfg->daemon.heartbeat_ms));
	check_stalled(eng);
}

/* §12: systemd's WatchdogSec sets the pace, not heartbeat_ms, and the
 * pings go on while Redis is down (R17: the worker rides it out). */
static void
watchdog_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop, (void)w, (void)revents;
	sdnotify_send("WATCHDOG=1");
}

static void
on_cmd_state(struct rconn *rc, int up, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	if (!up) {
		if (!eng->redis_down_since) {
			eng->redis_down_since = wtime_now_ms();
			eng->outages++;
			sdnotify_send("STATUS=redis unreachable, reconnecting");
		}
		eng->claiming = 0;
		return;
	}
	if (eng->redis_down_since) {
		log_info("redis.recovered", "down_ms=%" PRId64,
		    wtime_now_ms() - eng->redis_down_since);
		eng->redis_down_since = 0;
		sdnotify_send("STATUS=consuming");
	}
	/* Entries whose XREADGROUP reply was lost with the connection are in
	 * our PEL but not in hand: scan it again (admit skips known ones). */
	eng->own_done = 0;
	snprintf(eng->own_cursor, sizeof eng->own_cursor, "0");
	/* Writes that failed while down are retried by their own timers. */
	ensure_group(eng);
	heartbeat_cb(eng->loop, &eng->heartbeat, 0);
}

static void
on_blk_state(struct rconn *rc, int up, void *arg)
{
	struct engine *eng = arg;
	(void)rc;

	if (!up) {
		eng->reading = 0;
		return;
	}
	/* A read whose reply died with the connection left entries in our
	 * PEL that we never saw: read the PEL again before new entries. */
	eng->own_done = 0;
	snprintf(eng->own_cursor, sizeof eng->own_cursor, "0");
	read_more(eng);
}

/* ------------------------------------------------------------------ */
/* the worker's token                                                   */

/* A token arrived: every job waiting on one goes on (R6, R9), and reading
 * resumes if it had stopped for want of one. */
static void
on_token(void *arg, int have_token)
{
	struct engine *eng = arg;

	log_info("token.state", "state=%s have_token=%d", token_state(eng), have_token);
	if (!have_token)
		return;
	int64_t life = oauth_expires_at_ms(eng->oauth) - wtime_now_ms();
	if (eng->needs_token && life <= eng->token_timeout_ms + 1000)
		log_warn("token.too_short", "expires_in_ms=%" PRId64 " action_timeout_ms=%ld "
		    "detail=\"R6 needs more than the action timeout plus 1 s: no call can start\"",
		    life, eng->token_timeout_ms);
	for (struct ejob *j = eng->jobs, *next; j; j = next) {
		next = j->next;
		ejob_token_ready(j);
	}
	read_more(eng);
}

/* With [notify] auth = oauth, notifications go out with the worker's token
 * or wait for one; never unauthenticated. */
static int
webhook_token(void *arg, const char **token)
{
	struct engine *eng = arg;

	*token = worker_token(eng, eng->cfg->notify.timeout_ms);
	return eng->oauth && *token == NULL ? -1 : 0;
}

static void
scan_token_needs(struct engine *eng)
{
	eng->needs_token = 0;
	eng->token_timeout_ms = 0;
	for (size_t i = 0; i < eng->cfg->nactions; i++) {
		const struct cfg_action *a = &eng->cfg->actions[i];
		if (a->auth != CFG_AUTH_OAUTH)
			continue;
		eng->needs_token = 1;
		if (a->timeout_ms > eng->token_timeout_ms)
			eng->token_timeout_ms = a->timeout_ms;
	}
}

/* ------------------------------------------------------------------ */
/* keys and secrets                                                     */

static void
free_bearers(char **bearers, size_t n)
{
	for (size_t i = 0; bearers && i < n; i++)
		if (bearers[i])
			cfg_secret_free(bearers[i], strlen(bearers[i]));
	free(bearers);
}

struct secrets {
	unsigned char *key;
	size_t key_len;
	struct record_key *parsed;	/* key, parsed */
	char **bearers;
};

static void
free_secrets(const struct cfg *cfg, struct secrets *s)
{
	if (s->key)
		cfg_secret_free((char *)s->key, s->key_len);
	record_key_free(s->parsed);
	free_bearers(s->bearers, cfg->nactions);
	memset(s, 0, sizeof *s);
}

static int
load_secrets(const struct cfg *cfg, struct secrets *s, char *err, size_t errlen)
{
	char why[160];
	size_t len;

	memset(s, 0, sizeof *s);
	if (cfg->records.signature_required &&
	    /* a PEM keeps its layout; an HMAC secret is trimmed like any secret */
	    cfg_read_file(cfg, cfg->records.verify_key_file,
	    cfg->records.algorithm != JWT_ALG_HS256, (char **)&s->key, &s->key_len,
	    err, errlen) < 0)
		return -1;
	/* Parsed here, not per record: a bad key fails the start or the reload. */
	if (cfg->records.signature_required &&
	    (s->parsed = record_key_new(cfg->records.algorithm, s->key, s->key_len, why,
	    sizeof why)) == NULL) {
		snprintf(err, errlen, "[records] verify_key_file %s: %s",
		    cfg->records.verify_key_file, why);
		goto fail;
	}
	s->bearers = calloc(cfg->nactions + 1, sizeof *s->bearers);
	if (s->bearers == NULL)
		goto fail;
	for (size_t i = 0; i < cfg->nactions; i++) {
		const struct cfg_action *a = &cfg->actions[i];
		if (a->auth == CFG_AUTH_STATIC &&
		    cfg_read_file(cfg, a->bearer_file, 0, &s->bearers[i], &len, err, errlen) < 0)
			goto fail;
	}
	return 0;
fail:
	free_secrets(cfg, s);
	return -1;
}

static void
install_secrets(struct engine *eng, const struct cfg *old, struct secrets *s)
{
	if (eng->verify_key)
		cfg_secret_free((char *)eng->verify_key, eng->verify_key_len);
	free_bearers(eng->bearers, old ? old->nactions : 0);
	record_key_free(eng->parsed_key);
	eng->verify_key = s->key;
	eng->verify_key_len = s->key_len;
	eng->parsed_key = s->parsed;
	eng->bearers = s->bearers;
}

/* ------------------------------------------------------------------ */
/* life cycle                                                           */

static struct rconn_opts
redis_opts(const struct cfg *cfg, const char *password, long timeout_ms)
{
	struct rconn_opts o = {
		.host = cfg->redis.host, .port = cfg->redis.port, .socket = cfg->redis.socket,
		.username = cfg->redis.username, .password = password, .db = cfg->redis.db,
		.connect_timeout_ms = 5000, .command_timeout_ms = timeout_ms,
		.backoff_min_ms = 100, .backoff_max_ms = 5000,
	};
	return o;
}

static int
connect_redis(struct engine *eng, char *err, size_t errlen)
{
	char *password = NULL;
	size_t plen = 0;
	const struct cfg *cfg = eng->cfg;

	if (cfg->redis.password_file &&
	    cfg_read_file(cfg, cfg->redis.password_file, 0, &password, &plen, err, errlen) < 0)
		return -1;
	struct rconn_opts o = redis_opts(cfg, password, 10000);
	eng->cmd = rconn_new(eng->loop, &o, "cmd", on_cmd_state, eng);
	o = redis_opts(cfg, password, cfg->redis.block_ms + 5000);
	eng->blk = rconn_new(eng->loop, &o, "read", on_blk_state, eng);
	if (password)
		cfg_secret_free(password, plen);
	if (eng->cmd == NULL || eng->blk == NULL) {
		snprintf(err, errlen, "cannot create the Redis connections");
		return -1;
	}
	return 0;
}

static void
init_timer(struct engine *eng, ev_timer *t, void (*cb)(struct ev_loop *, ev_timer *, int),
	   long every_ms)
{
	ev_timer_init(t, cb, (double)every_ms / 1000.0, (double)every_ms / 1000.0);
	t->data = eng;
}

static void
init_timers(struct engine *eng)
{
	const struct cfg *cfg = eng->cfg;
	long wd_ms = sdnotify_watchdog_ms();

	init_timer(eng, &eng->heartbeat, heartbeat_cb, cfg->daemon.heartbeat_ms);
	init_timer(eng, &eng->claim, claim_cb, cfg->redis.claim_interval_ms);
	init_timer(eng, &eng->lease, lease_cb, cfg->redis.lease_renew_ms);
	init_timer(eng, &eng->watchdog, watchdog_cb,
	    wd_ms > 1 ? wd_ms / 2 : cfg->daemon.heartbeat_ms);
}

static void
init_scripts(struct engine *eng)
{
	rconn_script_init(&eng->s_transition, store_script_transition);
	rconn_script_init(&eng->s_claim, store_script_claim);
	rconn_script_init(&eng->s_renew, store_script_renew);
	rconn_script_init(&eng->s_redispatch, store_script_redispatch);
	rconn_script_init(&eng->s_promote, store_script_promote);
}

struct engine *
engine_new(struct ev_loop *loop, struct cfg *cfg, char *err, size_t errlen)
{
	struct engine *eng = calloc(1, sizeof *eng);
	struct secrets s;

	if (eng == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	eng->loop = loop;
	eng->cfg = cfg;
	eng->rng = (uint64_t)wtime_now_ms() ^ ((uint64_t)getpid() << 32) ^ 0x9E3779B97F4A7C15ULL;
	snprintf(eng->own_cursor, sizeof eng->own_cursor, "0");
	if (store_keys_init(&eng->keys, cfg->redis.prefix, cfg->daemon.consumer) < 0) {
		snprintf(err, errlen, "redis prefix or consumer name too long");
		goto fail;
	}
	if (load_secrets(cfg, &s, err, errlen) < 0)
		goto fail;
	install_secrets(eng, NULL, &s);
	init_scripts(eng);
	eng->http = http_client_new(loop);
	if (eng->http == NULL) {
		snprintf(err, errlen, "cannot create the HTTP client");
		goto fail;
	}
	scan_token_needs(eng);
	if (cfg->oauth.present) {
		eng->oauth = oauth_new(loop, eng->http, cfg, err, errlen);
		if (eng->oauth == NULL)
			goto fail;
		oauth_set_listener(eng->oauth, on_token, eng);
	}
	/* [notify] auth picks what the webhook carries (SPEC §6). */
	eng->webhook = webhook_from_cfg(loop, eng->http, cfg, webhook_token, eng, err, errlen);
	if (eng->webhook == NULL && err[0] != '\0')
		goto fail;
	init_timers(eng);
	return eng;
fail:
	eng->cfg = NULL;	/* still the caller's */
	engine_free(eng);
	return NULL;
}

void
engine_start(struct engine *eng)
{
	char err[256];

	eng->started_at = wtime_now_ms();
	if (connect_redis(eng, err, sizeof err) < 0) {
		log_error("engine.start", "error=\"%s\"", err);
		ev_break(eng->loop, EVBREAK_ALL);
		return;
	}
	if (eng->oauth)
		oauth_start(eng->oauth);
	ev_timer_start(eng->loop, &eng->heartbeat);
	ev_timer_start(eng->loop, &eng->claim);
	ev_timer_start(eng->loop, &eng->lease);
	ev_timer_start(eng->loop, &eng->watchdog);
	log_info("engine.start", "consumer=%s group=%s stream=%s max_in_flight=%ld",
	    eng->cfg->daemon.consumer, eng->cfg->redis.group, eng->keys.jobs,
	    eng->cfg->daemon.max_in_flight);
}

static void
maybe_finish_stop(struct engine *eng)
{
	for (struct ejob *j = eng->jobs; j; j = j->next)
		if (!j->finished)
			return;
	if (eng->jobs != NULL)
		return;	/* a last callback is on its way */
	ev_timer_stop(eng->loop, &eng->grace);
	log_info("engine.stopped", "consumer=%s", eng->cfg->daemon.consumer);
	ev_break(eng->loop, EVBREAK_ALL);
}

static void
grace_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct engine *eng = w->data;
	(void)revents;

	log_warn("engine.grace_expired", "in_hand=%zu", eng->in_hand);
	ev_break(loop, EVBREAK_ALL);
}

void
engine_stop(struct engine *eng)
{
	if (eng->draining)
		return;
	eng->draining = 1;
	sdnotify_send("STOPPING=1");
	log_info("engine.stopping", "in_hand=%zu grace_ms=%ld", eng->in_hand,
	    eng->cfg->daemon.shutdown_grace_ms);
	ev_timer_stop(eng->loop, &eng->claim);
	/* Entries read but not started, and those waiting on a timer, stay
	 * pending for R11/R14; only calls in flight may finish. */
	for (struct ejob *j = eng->jobs, *next; j; j = next) {
		next = j->next;
		ejob_stop(j);
	}
	ev_timer_init(&eng->grace, grace_cb, (double)eng->cfg->daemon.shutdown_grace_ms / 1000.0, 0);
	eng->grace.data = eng;
	ev_timer_start(eng->loop, &eng->grace);
	/* The blocking read holds its connection until block_ms: drop it. */
	rconn_free(eng->blk);
	eng->blk = NULL;
	maybe_finish_stop(eng);
}

int
engine_reload(struct engine *eng, struct cfg *cfg, char *err, size_t errlen)
{
	struct secrets s;
	struct cfg *old = eng->cfg;

	if (strcmp(cfg->redis.prefix, old->redis.prefix) != 0 ||
	    strcmp(cfg->redis.group, old->redis.group) != 0 ||
	    strcmp(cfg->daemon.consumer, old->daemon.consumer) != 0) {
		snprintf(err, errlen, "prefix, group and consumer change only with a restart");
		return -1;
	}
	if (cfg->oauth.present != old->oauth.present) {
		snprintf(err, errlen, "adding or removing [oauth] takes a restart");
		return -1;
	}
	if (load_secrets(cfg, &s, err, errlen) < 0)
		return -1;
	if (eng->oauth && oauth_reload(eng->oauth, cfg, err, errlen) < 0) {
		free_secrets(cfg, &s);
		return -1;
	}
	install_secrets(eng, old, &s);
	eng->cfg = cfg;
	scan_token_needs(eng);
	log_set_level(cfg->daemon.log_level);
	ev_timer_set(&eng->heartbeat, (double)cfg->daemon.heartbeat_ms / 1000.0,
	    (double)cfg->daemon.heartbeat_ms / 1000.0);
	ev_timer_again(eng->loop, &eng->heartbeat);
	cfg_free(old);
	return 0;
}

const struct engine_counters *
engine_counters(const struct engine *eng)
{
	return &eng->n;
}

void
engine_free(struct engine *eng)
{
	if (eng == NULL)
		return;
	ev_timer_stop(eng->loop, &eng->heartbeat);
	ev_timer_stop(eng->loop, &eng->claim);
	ev_timer_stop(eng->loop, &eng->lease);
	ev_timer_stop(eng->loop, &eng->grace);
	ev_timer_stop(eng->loop, &eng->watchdog);
	eng->draining = 1;
	/* Outstanding callbacks fire with NULL while the connections close;
	 * every job is marked finished first so none of them acts. */
	for (struct ejob *j = eng->jobs; j; j = j->next)
		ejob_abandon(j);
	rconn_free(eng->blk);
	rconn_free(eng->cmd);
	webhook_free(eng->webhook);
	oauth_free(eng->oauth);
	http_client_free(eng->http);
	while (eng->jobs)
		ejob_release(eng->jobs);
	if (eng->verify_key)
		cfg_secret_free((char *)eng->verify_key, eng->verify_key_len);
	record_key_free(eng->parsed_key);
	free_bearers(eng->bearers, eng->cfg ? eng->cfg->nactions : 0);
	cfg_free(eng->cfg);
	free(eng);
}
