/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * warrantctl decide: a decision record written, its id queued or scheduled
 * (warrantd(7) §3, §11). Every write that changes more than one key is one
 * Lua script (lua/decide.lua).
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include "base/rnd.h"
#include "base/wtime.h"
#include "conf/config.h"
#include "conf/secrets.h"
#include "core/trace.h"
#include "ctl/clir.h"
#include "ctl/cmds.h"
#include "ctl/ctl.h"

/* ---- decide ---- */

struct decide_opts {
	struct ctl_decision d;
	char id_buf[CTL_ID_LEN + 1];	/* d.id when --id is not given */
	const char **params;	/* --param values, d.params points here */
	const char *expires, *not_before, *key_path, *kid, *issuer, *audience;
	char traceparent[TRACE_LEN + 1];	/* --traceparent, checked; "" none */
	const char *traceparent_arg;
};

static int
decide_option(struct cli *c, struct decide_opts *o, int ch)
{
	switch (ch) {
	case 'c': c->cfg_path = optarg; break;
	case OPT_ON_BEHALF_OF: o->d.on_behalf_of = optarg; break;
	case OPT_ACTION: o->d.action = optarg; break;
	case OPT_RESOURCE: o->d.resource = optarg; break;
	case OPT_PARAM: o->params[o->d.nparams++] = optarg; break;
	case OPT_PARAMS: o->d.params_json = optarg; break;
	case OPT_BASIS: o->d.basis = optarg; break;
	case OPT_EXPIRES: o->expires = optarg; break;
	case OPT_NOT_BEFORE: o->not_before = optarg; break;
	case OPT_NOTIFY: o->d.notify = optarg; break;
	case OPT_ID: o->d.id = optarg; break;
	case OPT_KID: o->kid = optarg; break;
	case OPT_KEY: o->key_path = optarg; break;
	case OPT_ISSUER: o->issuer = optarg; break;
	case OPT_AUDIENCE: o->audience = optarg; break;
	case OPT_TRACEPARENT: o->traceparent_arg = optarg; break;
	default: return -1;
	}
	return 0;
}

/* 0, 1 for -h, or an exit code. */
static int
parse_decide(struct cli *c, int argc, char **argv, struct decide_opts *o)
{
	static const struct option longopts[] = {
		{"on-behalf-of", required_argument, NULL, OPT_ON_BEHALF_OF},
		{"action", required_argument, NULL, OPT_ACTION},
		{"resource", required_argument, NULL, OPT_RESOURCE},
		{"param", required_argument, NULL, OPT_PARAM},
		{"params", required_argument, NULL, OPT_PARAMS},
		{"basis", required_argument, NULL, OPT_BASIS},
		{"expires", required_argument, NULL, OPT_EXPIRES},
		{"not-before", required_argument, NULL, OPT_NOT_BEFORE},
		{"notify", required_argument, NULL, OPT_NOTIFY},
		{"id", required_argument, NULL, OPT_ID},
		{"kid", required_argument, NULL, OPT_KID},
		{"key", required_argument, NULL, OPT_KEY},
		{"issuer", required_argument, NULL, OPT_ISSUER},
		{"audience", required_argument, NULL, OPT_AUDIENCE},
		{"traceparent", required_argument, NULL, OPT_TRACEPARENT},
		{"config", required_argument, NULL, 'c'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1) {
		if (ch == 'h')
			return 1;
		if (decide_option(c, o, ch) != 0)
			return cli_unknown_option("decide", argv);
	}
	if (optind < argc)
		return cli_usage_error("decide: unexpected argument '%s'", argv[optind]);
	if (!o->d.on_behalf_of || !o->d.action || !o->d.resource || !o->d.basis || !o->expires)
		return cli_usage_error("decide: --on-behalf-of, --action, --resource, --basis and "
		    "--expires are required");
	return 0;
}

static int
random_id(char *out)
{
	unsigned char raw[CTL_ID_LEN];

	if (rnd_bytes(raw, sizeof raw) != 0) {
		cli_say("cannot read the kernel's random bytes: %s", strerror(errno));
		return EX_REFUSED;
	}
	ctl_make_id(raw, out);
	return 0;
}

/* Times, id and issuer: what the options leave to be worked out. */
static int
complete_decision(struct cli *c, struct decide_opts *o, int64_t now, char *id_buf)
{
	const char *cfg_iss = c->cfg->records.issuer;
	int rc;

	o->d.decided_at_ms = now;
	if (ctl_parse_time(o->expires, now, &o->d.expires_at_ms) != 0)
		return cli_usage_error("decide: --expires: not RFC 3339 UTC or +N[smhd]: '%s'",
		    o->expires);
	if (o->not_before != NULL &&
	    ctl_parse_time(o->not_before, now, &o->d.not_before_ms) != 0)
		return cli_usage_error("decide: --not-before: not RFC 3339 UTC or +N[smhd]: '%s'",
		    o->not_before);
	/* §13: checked as the worker will; P:scheduled holds ids only */
	if (o->traceparent_arg != NULL && trace_parse(o->traceparent_arg,
	    strlen(o->traceparent_arg), o->traceparent) != 0)
		return cli_usage_error("decide: --traceparent: not a W3C traceparent: '%s'",
		    o->traceparent_arg);
	if (o->traceparent[0] && o->d.not_before_ms > now)
		return cli_usage_error("decide: --traceparent goes into the stream entry: not with "
		    "a --not-before in the future (P:scheduled holds ids only)");
	if (cfg_iss != NULL && o->issuer != NULL && strcmp(cfg_iss, o->issuer) != 0)
		return cli_usage_error("decide: --issuer differs from [records] issuer");
	o->d.iss = cfg_iss != NULL ? cfg_iss : o->issuer != NULL ? o->issuer : PROG;
	if (o->d.id == NULL) {
		if ((rc = random_id(id_buf)) != 0)
			return rc;
		o->d.id = id_buf;
	}
	return 0;
}

/* §3.1 aud: [records] audience, or --audience (which must then agree). */
static int
add_audience(struct cli *c, const struct decide_opts *o, json_t *content)
{
	const char *cfg_aud = c->cfg->records.audience;
	const char *aud = cfg_aud != NULL ? cfg_aud : o->audience;

	if (cfg_aud != NULL && o->audience != NULL && strcmp(cfg_aud, o->audience) != 0)
		return cli_usage_error("decide: --audience differs from [records] audience");
	if (aud != NULL && json_object_set_new(content, "aud", json_string(aud)) != 0)
		return EX_REFUSED;
	return 0;
}

/* By the rules the worker applies (§3.1), the signature aside. */
static int
validate_content(struct cli *c, const char *id, const char *json, int64_t now)
{
	struct record_policy pol;
	struct record *rec;
	char detail[DETAIL_MAX];
	enum record_status st;

	ctl_policy_content(&pol, c->cfg);
	st = record_load(&pol, id, json, now, &rec, NULL, detail, sizeof detail);
	record_free(rec);
	if (st == RECORD_UNKNOWN_ACTION) {
		cli_say("decide: refused: %s", detail);
		return EX_REFUSED;
	}
	if (st != RECORD_OK) {
		cli_say("decide: the record would be invalid: %s", detail);
		return EX_USAGE;
	}
	return 0;
}

/*
 * A decider signing with a key whose public half the workers do not have
 * would fill the dead letters: when the configured verification key can be
 * read here, the signed record must verify with it.
 */
static int
check_against_verify_key(struct cli *c, const char *id, const char *jws, int64_t now)
{
	struct record_policy pol;
	struct record *rec;
	char detail[DETAIL_MAX], err[512], *key;
	size_t len;
	enum record_status st;

	if (secrets_read_verify_key(c->cfg, &key, &len, err, sizeof err) != 0)
		return 0;	/* a decider's host need not hold it */
	ctl_policy_init(&pol, c->cfg, (unsigned char *)key, len);
	st = record_load(&pol, id, jws, now, &rec, NULL, detail, sizeof detail);
	record_free(rec);
	secrets_free(key, len);
	if (st == RECORD_OK)
		return 0;
	cli_say("decide: the signed record does not verify with [records] verify_key_file: %s",
	    detail);
	return EX_CONFIG;
}

/* The `record` field: a JWS, or the plain JSON with signature = off.
 * *out is the caller's to free. */
static int
encode_record(struct cli *c, struct decide_opts *o, const json_t *content, const char *json,
	      int64_t now, char **out)
{
	const struct cfg *cfg = c->cfg;
	char err[512], *key;
	size_t len;

	if (!cfg->records.signature_required)
		return (*out = strdup(json)) != NULL ? 0 : EX_REFUSED;
	/* The decider's signing key: a private PEM or the HMAC secret. */
	if (secrets_read(o->key_path, secrets_key_kind(cfg->records.algorithm, 1), &key, &len, err,
	    sizeof err) != 0) {
		cli_say("decide: --key: %s", err);
		return EX_CONFIG;
	}
	*out = record_sign(cfg->records.algorithm, (unsigned char *)key, len, o->kid, content);
	secrets_free(key, len);
	if (*out == NULL) {
		cli_say("decide: --key %s: not a usable %s %s", o->key_path,
		    jwa_name(cfg->records.algorithm),
		    cfg->records.algorithm == JWA_HS256 ? "secret (at least 32 bytes)"
		    : "private key (PEM)");
		return EX_CONFIG;
	}
	return check_against_verify_key(c, o->d.id, *out, now);
}

/* Mid-migration (decide.lua refused with -TRYAGAIN): the record by a call
 * naming its hash alone, then its id queued or scheduled by a command of
 * its own. Two steps: a decider that dies between them leaves a record
 * that never runs (`warrantctl inspect` shows it queued, in no stream). */
static int
store_decision_split(struct cli *c, const struct ctl_decision *d, const char *hash,
		     const char *record, const char *at, const char *score, const char *traceparent,
		     redisReply **out)
{
	struct store_args a;
	struct store_vec v;
	char err[160];
	long long stored = 0;
	redisReply *r;
	int rc;

	store_args_init(&a, STORE_NEWRECORD);
	store_arg(&a, STORE_NEWRECORD_HASH, hash);
	store_arg(&a, STORE_NEWRECORD_RECORD, record);
	store_arg(&a, STORE_NEWRECORD_CREATED_AT, at);
	if (store_args_vec(&a, &v, err, sizeof err) < 0) {
		cli_say("%s", err);
		return EX_REFUSED;
	}
	rc = clir_checked_asking(c, clir_asking(c, v.argc, v.argv, v.len), "EVAL", &r);
	store_vec_free(&v);
	if (rc != 0)
		return rc;
	if (sreply_integer(sreply_of(r), &stored) < 0 || stored != 1) {
		*out = r;	/* "exists" */
		return 0;
	}
	freeReplyObject(r);
	const char *xadd[] = {"XADD", c->keys.jobs, "*", "id", d->id, "traceparent", traceparent};
	const char *zadd[] = {"ZADD", c->keys.scheduled, score, d->id};
	if (score[0])
		rc = clir_checked_asking(c, clir_asking(c, 4, zadd, NULL), "ZADD", &r);
	else
		rc = clir_checked_asking(c, clir_asking(c, traceparent && traceparent[0] ? 7 : 5, xadd,
		    NULL), "XADD", &r);
	if (rc != 0) {
		cli_say("decide: decision %s written but not queued: run `warrantctl inspect %s`",
		    d->id, d->id);
		return rc;
	}
	freeReplyObject(r);
	*out = NULL;	/* stored */
	return 0;
}

static int
store_decision(struct cli *c, const struct ctl_decision *d, const char *record, int64_t now,
	       const char *traceparent)
{
	char hash[STORE_KEY_MAX + RECORD_ID_MAX], at[WTIME_RFC3339_LEN], score[32] = "";
	struct store_args a;
	redisReply *r;
	int rc;

	if (store_decision_key(&c->keys, d->id, hash, sizeof hash) != 0) {
		cli_say("decide: the key name is too long");
		return EX_CONFIG;
	}
	if (d->not_before_ms > now)
		snprintf(score, sizeof score, "%lld", (long long)d->not_before_ms);
	wtime_format_rfc3339(now, at, sizeof at);
	/* issue 27 item 5: the key the call does not touch is not named --
	 * the other one stands in (an empty schedule does not exist) */
	store_args_init(&a, STORE_DECIDE);
	store_arg(&a, STORE_DECIDE_HASH, hash);
	store_arg(&a, STORE_DECIDE_JOBS, score[0] ? c->keys.scheduled : c->keys.jobs);
	store_arg(&a, STORE_DECIDE_SCHEDULED, score[0] ? c->keys.scheduled : c->keys.jobs);
	store_arg(&a, STORE_DECIDE_RECORD, record);
	store_arg(&a, STORE_DECIDE_CREATED_AT, at);
	store_arg(&a, STORE_DECIDE_RECORD_ID, d->id);
	store_arg(&a, STORE_DECIDE_SCORE, score);
	store_arg(&a, STORE_DECIDE_TRACEPARENT, traceparent);
	struct store_vec v;
	char err[160];
	if (store_args_vec(&a, &v, err, sizeof err) < 0) {
		cli_say("%s", err);
		return EX_REFUSED;
	}
	r = clir_asking(c, v.argc, v.argv, v.len);
	store_vec_free(&v);
	if (r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "TRYAGAIN", 8) == 0) {
		/* the shard's slot migrates: in two steps */
		freeReplyObject(r);
		if ((rc = store_decision_split(c, d, hash, record, at, score, traceparent,
		    &r)) != 0)
			return rc;
	} else if ((rc = clir_checked_asking(c, r, "EVAL", &r)) != 0) {
		return rc;
	}
	long long stored = 0;
	rc = r == NULL || (sreply_integer(sreply_of(r), &stored) == 0 && stored == 1) ? 0 :
	    EX_REFUSED;
	freeReplyObject(r);
	if (rc != 0) {
		cli_say("decide: refused: decision %s exists already", d->id);
		return rc;
	}
	printf("%s\n", d->id);
	return 0;
}

static int
decide_with(struct cli *c, struct decide_opts *o)
{
	char err[DETAIL_MAX], *json = NULL, *record = NULL;
	json_t *content = NULL;
	int64_t now = wtime_now_ms();
	int rc;

	if ((rc = cli_load_config(c)) != 0)
		return rc;
	if (c->cfg->records.signature_required && o->key_path == NULL)
		return cli_usage_error("decide: --key is required with [records] signature = required");
	if ((rc = complete_decision(c, o, now, o->id_buf)) != 0)
		return rc;
	if ((content = ctl_build_record(&o->d, err, sizeof err)) == NULL)
		return cli_usage_error("decide: %s", err);
	if ((rc = add_audience(c, o, content)) != 0) {
		json_decref(content);
		return rc;
	}
	if ((json = json_dumps(content, JSON_COMPACT)) == NULL)
		rc = EX_REFUSED;
	if (rc == 0)
		rc = validate_content(c, o->d.id, json, now);
	if (rc == 0)
		rc = encode_record(c, o, content, json, now, &record);
	if (rc == 0)
		rc = cli_use_shard_of(c, o->d.id);
	if (rc == 0)
		rc = clir_connect(c);
	if (rc == 0)
		rc = store_decision(c, &o->d, record, now, o->traceparent);
	free(record);
	free(json);
	json_decref(content);
	return rc;
}

int
cmd_decide(struct cli *c, int argc, char **argv)
{
	struct decide_opts o;
	int rc;

	memset(&o, 0, sizeof o);
	if ((o.params = calloc((size_t)argc, sizeof *o.params)) == NULL) {
		cli_say("out of memory");
		return EX_REFUSED;
	}
	o.d.params = o.params;
	rc = parse_decide(c, argc, argv, &o);
	if (rc == 1) {
		fputs(cli_usage_text, stdout);
		rc = 0;
	} else if (rc == 0) {
		rc = decide_with(c, &o);
	}
	free(o.params);
	return rc;
}

