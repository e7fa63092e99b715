/* script: one loader and one caller for the embedded Lua scripts. */
#include "script.h"

#include "log.h"

void
script_set_init(struct script_set *set)
{
	for (int i = 0; i < STORE_NSCRIPTS; i++)
		rconn_script_init(&set->s[i], store_scripts[i].body);
}

int
script_send(struct rconn *rc, const struct script_set *set, const struct store_args *a,
	    rconn_reply_cb *cb, void *arg)
{
	struct store_vec v;
	char err[160];

	if (store_args_vec(a, &v, err, sizeof err) < 0) {
		log_error("script.refused", "error=\"%s\"", err);
		return -1;
	}
	int sent = rconn_eval(rc, &set->s[a->script], cb, arg, store_scripts[a->script].nkeys,
	    v.argc - STORE_VEC_HEAD, v.argv + STORE_VEC_HEAD, v.len + STORE_VEC_HEAD);
	store_vec_free(&v);
	return sent;
}
