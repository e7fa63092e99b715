/* SPDX-License-Identifier: BSD-2-Clause */
/* rconn_auth.c: the handshake of rconn (rconn_int.h): AUTH, SELECT and ROLE
 * on each new link, and re-AUTH with a new password. */
#define _DEFAULT_SOURCE		/* strdup, strncasecmp */
#include "rconn_int.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#include <hiredis/hiredis.h>
#include <openssl/evp.h>

#include "base/backoff.h"
#include "core/resp.h"
#include "base/log.h"
#include "base/rnd.h"
#include "redis/rreply.h"
#include "base/wtime.h"
#include "redis/cluster.h"
#include "redis/sentinel.h"
#include "core/allowlist.h"
#include "redis/rtls.h"

static void start_handshake(struct rconn *rc);

static char step_auth[] = "auth", step_select[] = "select", step_role[] = "role";


/* Handshake. */

/* ROLE's answer is the one rc expects. */
static int
role_ok(const struct rconn *rc, const redisReply *reply)
{
	switch (rc->role) {
	case RCONN_ROLE_SENTINEL:
		return reply->type == REDIS_REPLY_ARRAY && reply->elements >= 1 &&
		    reply->element[0]->type == REDIS_REPLY_STRING &&
		    strcmp(reply->element[0]->str, "sentinel") == 0;
	case RCONN_ROLE_ANY:
		return 1;
	default:
		return sentinel_is_master(reply);
	}
}

static void
on_handshake(struct rconn *rc, const redisReply *reply, void *arg)
{
	const char *step = arg;
	char qerr[160];

	if (reply == NULL || rc->handshake_failed)
		return;		/* going down anyway: rc_conn_gone() follows */
	if (reply->type == REDIS_REPLY_ERROR) {
		if (step == step_auth && rc->auth_seen != NULL) {
			char kind[RCONN_ERR_KIND_LEN];
			rc_error_kind(reply->str != NULL ? reply->str : "", kind, sizeof kind);
			rc->auth_seen(rc->auth_arg, 0, kind[0] ? kind : "AUTH");
		}
		rc->handshake_failed = 1;
		/* Only the error code for AUTH: the rest is the server's text
		 * about credentials, and credentials are never logged. */
		const char *msg = reply->str != NULL ? reply->str : "";
		size_t n = step == step_auth ? strcspn(msg, " ") : strlen(msg);
		char code[128];
		snprintf(code, sizeof(code), "%.*s", (int)(n < 127 ? n : 127), msg);
		log_warn("redis.handshake_failed", "name=%s step=%s err=%s", rc->qname, step,
			 log_quote(qerr, sizeof(qerr), code));
		rc_schedule_drop(rc, step == step_auth ? "AUTH failed" : step == step_role ?
		    "ROLE failed" : "SELECT failed");
		return;
	}
	if (step == step_role && !role_ok(rc, reply)) {
		rc->handshake_failed = 1;
		log_warn("redis.not_primary", "name=%s host=%s port=%d", rc->qname,
		    rc->host ? LOG_Q(rc->host) : "-", rc->port);
		rc_schedule_drop(rc, "not the primary");
		return;
	}
	if (step == step_auth)
		rc->auth_expires = rc->password_expires;
	if (--rc->handshake_left == 0)
		rc_became_up(rc);
}

/* A re-AUTH's answer: the connection now lives on the new token's time, or
 * it was refused (said once here, the code only: the server's text is about
 * credentials; commands will meet the refusal and R20 takes over). */
static void
on_reauth(struct rconn *rc, const redisReply *reply, void *arg)
{
	struct auth_sent *a = arg;
	int64_t expires = a->expires;

	free(a);
	if (reply == NULL)
		return;		/* the connection went: the next one AUTHs afresh */
	if (reply->type != REDIS_REPLY_ERROR) {
		rc->auth_expires = expires;
		log_debug("redis.reauth", "name=%s ok=1", rc->qname);
		if (rc->auth_seen != NULL)
			rc->auth_seen(rc->auth_arg, 1, "AUTH");
		return;
	}
	char kind[RCONN_ERR_KIND_LEN];
	rc_error_kind(reply->str != NULL ? reply->str : "", kind, sizeof kind);
	log_warn("redis.reauth_failed", "name=%s err=%s", rc->qname, kind[0] ? LOG_Q(kind) : "-");
	if (rc->auth_seen != NULL)
		rc->auth_seen(rc->auth_arg, 0, kind[0] ? kind : "AUTH");
}

int
rconn_auth_error(const char *text)
{
	static const char *const kinds[] = {"NOAUTH", "WRONGPASS", "NOPERM"};

	if (text == NULL)
		return 0;
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		size_t n = strlen(kinds[i]);
		if (strncmp(text, kinds[i], n) == 0 && (text[n] == '\0' || text[n] == ' '))
			return 1;
	}
	return 0;
}

static int
send_auth_cmd(struct rconn *rc, handshake_cb *hs, void *arg)
{
	const char *argv[3] = {"AUTH", rc->password, NULL};
	int argc = 2;
	char *cmd;

	if (rc->username != NULL) {
		argv[1] = rc->username;
		argv[2] = rc->password;
		argc = 3;
	}
	int len = redisFormatCommandArgv(&cmd, argc, argv, NULL);

	if (len < 0)
		return -1;
	int r = rc_submit(rc, NULL, hs, arg, cmd, (size_t)len, NULL, 0);
	if (r == 0)
		rc->auth_epoch++;	/* commands from now on follow this AUTH */
	explicit_bzero(cmd, (size_t)len);
	redisFreeCommand(cmd);
	return r;
}

static int
send_auth(struct rconn *rc)
{
	return send_auth_cmd(rc, on_handshake, step_auth);
}

static int
send_select(struct rconn *rc)
{
	char *cmd;
	int len = redisFormatCommand(&cmd, "SELECT %d", rc->db);

	if (len < 0)
		return -1;
	int r = rc_submit(rc, NULL, on_handshake, step_select, cmd, (size_t)len, NULL, 0);
	redisFreeCommand(cmd);
	return r;
}

/* A node that says it is a replica is no place to write. */
static int
send_role(struct rconn *rc)
{
	char *cmd;
	int len = redisFormatCommand(&cmd, "ROLE");

	if (len < 0)
		return -1;
	int r = rc_submit(rc, NULL, on_handshake, step_role, cmd, (size_t)len, NULL, 0);
	redisFreeCommand(cmd);
	return r;
}

static void
start_handshake(struct rconn *rc)
{
	rc->handshake_left = 0;
	rc->handshake_failed = 0;
	if (rc->password != NULL) {
		if (send_auth(rc) < 0)
			goto fail;
		rc->handshake_left++;
	}
	if (rc->db != 0) {
		if (send_select(rc) < 0)
			goto fail;
		rc->handshake_left++;
	}
	/* Every connection, not only Sentinel's and Cluster's: behind a VIP
	 * or a DNS name a failover leaves the old primary answering as a
	 * replica (R17: READONLY finds the primary again). */
	if (send_role(rc) < 0)
		goto fail;
	rc->handshake_left++;
	if (rc->handshake_left == 0)
		rc_became_up(rc);
	return;
fail:
	rc->handshake_failed = 1;
	rc_schedule_drop(rc, "handshake not sent");
}


/* The link is ready (connected; TLS verified): the reader, then AUTH,
 * SELECT, ROLE. */
void
rc_link_up(struct rconn *rc)
{
	rc->linked = 1;
	rc->reader = redisReaderCreateWithFunctions(rreply_functions());
	if (rc->reader == NULL) {
		rc_conn_gone(rc, "out of memory");
		return;
	}
	start_handshake(rc);
	rc_io_update(rc);
}


int
rconn_reauth(struct rconn *rc, const char *password, int64_t expires_at_ms)
{
	char *copy;

	if (rc == NULL || password == NULL || (copy = strdup(password)) == NULL)
		return -1;
	if (rc->password != NULL)
		explicit_bzero(rc->password, strlen(rc->password));
	free(rc->password);
	rc->password = copy;
	rc->password_expires = expires_at_ms;
	/* out of memory there: the side connection goes idle and is reopened */
	if (rc->side != NULL && !rc->side_close && rconn_reauth(rc->side, password,
	    expires_at_ms) < 0)
		rc_close_side(rc);
	if (!rc->linked || rc->freeing || rc->handshake_failed)
		return 0;	/* the next connect sends it */
	/* issue 37 item 1: a link made without a credential (none yet) was not
	 * checked for one; this AUTH would be the first to cross it */
	if (rc->socket == NULL &&
	    !allowlist_check_credential(rc->allow, rc->host, rc->port, rc->tls_ctx != NULL)) {
		rconn_reconnect(rc, "the credential would go in clear text");
		return 0;	/* and the next connect is refused the same way */
	}
	struct auth_sent *a = malloc(sizeof *a);
	if (a == NULL)
		return 0;	/* kept for the next connect; this one may lapse */
	*a = (struct auth_sent){.expires = expires_at_ms};
	if (send_auth_cmd(rc, on_reauth, a) < 0) {
		free(a);
		return 0;
	}
	return 0;
}
