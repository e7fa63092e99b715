/* SPDX-License-Identifier: BSD-2-Clause */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "conf/secrets.h"
#include "core/reason.h"
#include "core/record.h"
#include "ctl/cli.h"
#include "ctl/clir.h"
#include "wact.h"

_Static_assert(WACT_REFUSED == EX_REFUSED, "wact.h's WACT_REFUSED is ctl/cli.h's EX_REFUSED");

static const char *const op_names[] = {
	[WACT_RETRY] = "retry", [WACT_CANCEL] = "cancel", [WACT_REQUEUE] = "requeue",
	[WACT_DROP] = "drop", [WACT_REQUEUE_REASON] = "requeue-reason",
	[WACT_DROP_REASON] = "drop-reason", [WACT_PAUSE] = "pause", [WACT_RESUME] = "resume",
};

const char *
wact_op_name(enum wact_op op)
{
	return (size_t)op < sizeof op_names / sizeof op_names[0] ? op_names[op] : "?";
}

static int
is_id_op(enum wact_op op)
{
	return op <= WACT_DROP;
}

/* arg's space-separated ids into out->ids. */
static int
split_ids(struct wact_req *out, char *err, size_t errlen)
{
	char *save = NULL;

	memcpy(out->ids_buf, out->arg, sizeof out->ids_buf);
	for (char *t = strtok_r(out->ids_buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		/* drop takes any id (a malformed one can be cleared too), the
		 * rest only a recordId */
		int ok = out->op == WACT_DROP ? strcspn(t, "\x7f") == strlen(t) :
		    record_id_valid(t);
		if (!ok) {
			snprintf(err, errlen, "'%.64s' is not a recordId", t);
			return -1;
		}
		if (out->nids == WACT_IDS_MAX) {
			snprintf(err, errlen, "at most %d records at once", WACT_IDS_MAX);
			return -1;
		}
		out->ids[out->nids++] = t;
	}
	if (out->nids == 0) {
		snprintf(err, errlen, "no record chosen");
		return -1;
	}
	return 0;
}

int
wact_parse(const struct cfg *cfg, const char *op, const char *arg, struct wact_req *out,
	   char *err, size_t errlen)
{
	size_t i;
	enum reason r;

	memset(out, 0, sizeof *out);
	for (i = 0; i < sizeof op_names / sizeof op_names[0]; i++)
		if (op != NULL && strcmp(op, op_names[i]) == 0)
			break;
	if (i == sizeof op_names / sizeof op_names[0]) {
		snprintf(err, errlen, "no such action");
		return -1;
	}
	out->op = (enum wact_op)i;
	if (arg == NULL || strlen(arg) >= sizeof out->arg) {
		snprintf(err, errlen, "%s: what to act on is missing or too long", op);
		return -1;
	}
	for (const char *p = arg; *p; p++)
		if ((unsigned char)*p < 0x20) {
			snprintf(err, errlen, "%s: a control character", op);
			return -1;
		}
	snprintf(out->arg, sizeof out->arg, "%s", arg);
	if (is_id_op(out->op))
		return split_ids(out, err, errlen);
	if (out->op == WACT_REQUEUE_REASON || out->op == WACT_DROP_REASON) {
		if (reason_parse(arg, &r) != 0 || r == REASON_NONE) {
			snprintf(err, errlen, "'%.64s' is not a reason", arg);
			return -1;
		}
		return 0;
	}
	if (strcmp(arg, "*") != 0 && cfg_action_find(cfg, arg) == NULL) {
		snprintf(err, errlen, "no [action %.64s] in the configuration", arg);
		return -1;
	}
	return 0;
}

/* "a", "a and b", "3 records (a, b, c)" */
static void
ids_text(const struct wact_req *req, char *buf, size_t n)
{
	size_t len = 0;

	if (req->nids == 1) {
		snprintf(buf, n, "%s", req->ids[0]);
		return;
	}
	len = (size_t)snprintf(buf, n, "%zu records (", req->nids);
	for (size_t i = 0; i < req->nids && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", req->ids[i]);
	if (len < n)
		snprintf(buf + len, n - len, ")");
}

void
wact_describe(const struct wact_req *req, long long count, char *buf, size_t n)
{
	char ids[WACT_ARG_MAX + 64];
	const char *what = strcmp(req->arg, "*") == 0 ? "the whole queue" : req->arg;

	ids_text(req, ids, sizeof ids);
	switch (req->op) {
	case WACT_RETRY:
		snprintf(buf, n, "retry %s: queued again with a fresh budget of attempts, if it "
		    "is failed or dead and before its deadline", ids);
		break;
	case WACT_CANCEL:
		snprintf(buf, n, "cancel %s: it ends cancelled and is never called again (a call "
		    "in flight finishes); its owner is told", ids);
		break;
	case WACT_REQUEUE:
		snprintf(buf, n, "requeue the dead letters of %s with a fresh budget", ids);
		break;
	case WACT_DROP:
		snprintf(buf, n, "drop the dead letters of %s for good", ids);
		break;
	case WACT_REQUEUE_REASON:
		snprintf(buf, n, "requeue %lld dead letter%s of reason %s", count,
		    count == 1 ? "" : "s", req->arg);
		break;
	case WACT_DROP_REASON:
		snprintf(buf, n, "drop %lld dead letter%s of reason %s for good", count,
		    count == 1 ? "" : "s", req->arg);
		break;
	case WACT_PAUSE:
		snprintf(buf, n, "pause %s: every worker starts no new call of it within a "
		    "heartbeat", what);
		break;
	case WACT_RESUME:
		snprintf(buf, n, "resume %s: workers start its calls again within a heartbeat",
		    what);
		break;
	}
}

void
wact_back(const struct wact_req *req, char *buf, size_t n)
{
	if (is_id_op(req->op) && req->nids == 1 && record_id_valid(req->ids[0]))
		snprintf(buf, n, "/job/%s", req->ids[0]);
	else if (is_id_op(req->op))
		snprintf(buf, n, "/jobs?state=dead");
	else if (req->op == WACT_PAUSE || req->op == WACT_RESUME)
		snprintf(buf, n, "/");
	else
		snprintf(buf, n, "/dead");
}

/* ---- shell ---- */

struct wact {
	struct cli c;		/* the operator's: the config, its Redis user */
	char *key;		/* the verification key (secrets_free) */
	size_t key_len;
};

struct wact *
wact_new(struct cfg *cfg, char *err, size_t errlen)
{
	const struct cfg_role *op = &cfg->roles[CFG_ROLE_OPERATOR];
	struct wact *w;

	if (op->username == NULL) {
		snprintf(err, errlen, "no [redis.operator]");
		return NULL;
	}
	if ((w = calloc(1, sizeof *w)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* as warrantctl --as operator would set it up (cli_load_config) */
	w->c.cfg = cfg;
	w->c.shard_opt = -1;
	w->c.as = "operator";
	w->c.username = op->username;
	w->c.password_file = op->password_file;
	snprintf(w->c.user_section, sizeof w->c.user_section, "redis.%s", w->c.as);
	if (cli_use_shard(&w->c, 0) != 0) {
		snprintf(err, errlen, "[redis] prefix is too long");
		free(w);
		return NULL;
	}
	if (cfg->records.signature_required &&
	    secrets_read_verify_key(cfg, &w->key, &w->key_len, err, errlen) != 0) {
		free(w);
		return NULL;
	}
	return w;
}

void
wact_free(struct wact *w)
{
	if (w == NULL)
		return;
	clir_close(&w->c);
	secrets_free(w->key, w->key_len);
	free(w);
}

/* One record's action. */
static int
run_one(struct wact *w, enum wact_op op, const char *id, const char *who,
	struct act_result *res)
{
	switch (op) {
	case WACT_RETRY:
		return act_retry(&w->c, id, w->key, w->key_len, who, res);
	case WACT_CANCEL:
		return act_cancel(&w->c, id, w->key, w->key_len, who, res);
	case WACT_REQUEUE:
		return act_dead_requeue(&w->c, id, w->key, w->key_len, who, res);
	default:
		return act_dead_drop(&w->c, id, res);
	}
}

int
wact_run(struct wact *w, const struct wact_req *req, const char *user, struct act_result *res)
{
	char who[ACT_WHO_MAX];
	struct act_filter f = {0};
	int rc = 0;

	act_who_console(user, w->c.username, who, sizeof who);
	if (is_id_op(req->op)) {
		/* each record on its own, as dead requeue --reason does: one
		 * refused does not stop the others; a Redis failure does */
		long long done = 0;
		for (size_t i = 0; i < req->nids; i++) {
			res->done = 0;
			int one = run_one(w, req->op, req->ids[i], who, res);
			done += res->done;
			if (one != 0 && one != EX_REFUSED) {
				rc = one;
				break;
			}
			if (one == EX_REFUSED)
				rc = EX_REFUSED;
		}
		res->done = done;
	} else if (req->op == WACT_PAUSE || req->op == WACT_RESUME) {
		rc = act_pause(&w->c, req->arg, req->op == WACT_RESUME, who, res);
	} else {
		f.reason = req->arg;
		rc = act_dead_bulk(&w->c, req->op == WACT_REQUEUE_REASON, &f, w->key, w->key_len,
		    who, res);
	}
	clir_drop(&w->c);
	return rc;
}
