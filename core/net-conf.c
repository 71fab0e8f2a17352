/* SPDX-License-Identifier: MIT */
/*
 * core/net-conf.c - two instances binding one address is a configuration
 * error, found by --check-config rather than by the second bind at start
 *
 * Options flagged TALLY_OPT_BINDS (listen syntax) or TALLY_OPT_BINDS_ZMQ
 * (ZeroMQ endpoints) hold addresses their instance binds. Each value is
 * parsed with the one parser (tally/net.h) and compared with those of the
 * instances declared before it, after normalisation: "*:9464" and
 * "127.0.0.1:9464" clash, "unix:/run/x" and "ipc:///run//x" too.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <tally/net.h>
#include <tally/plugin.h>

#include "core-internal.h"

struct tally_conf_bind {
	struct tally_net_addr addr;
	char *who;  /* "outputs.prom" */
	char *opt;  /* "listen" */
	char *spec; /* as written */
	const char *file;
	int line;
};

#define FIELD(state, opt, type) \
	((const type *)((const char *)(state) + (opt)->offset))

/* Whether the table's "protocol" enum chooses "udp" in @state. */
static bool conf_udp(const struct tally_option *opts, const void *state)
{
	const struct tally_option *p = tally_options_find(opts, "protocol");

	return p && p->type == TALLY_OPT_T_ENUM && p->choices &&
	       !strcmp(p->choices[*FIELD(state, p, int)], "udp");
}

static void conf_bind_one(struct tally_conf *c, const struct tally_conf_decl *d,
			  const char *who, const struct tally_option *o,
			  unsigned flags, const char *spec, int line)
{
	struct tally_conf_bind b = { .file = d->file, .line = line }, *v;
	int rc;

	/* the plugin's check reports what does not parse */
	if (o->flags & TALLY_OPT_BINDS_ZMQ)
		rc = tally_net_zmq_parse(o->name, spec, flags, &b.addr, NULL,
					 0);
	else
		rc = tally_net_addr_parse(o->name, spec, flags, &b.addr, NULL,
					  0);
	if (rc < 0)
		return;
	/*
	 * The port rule (tally/mode.h): a user collector's TCP and UDP
	 * listeners bind ports the kernel chooses, which never clash.
	 */
	if (!(o->flags & TALLY_OPT_BINDS_ZMQ) && tally_user_mode() &&
	    !c->user_ports_configured && b.addr.kind != TALLY_NET_PATH &&
	    b.addr.kind != TALLY_NET_ABSTRACT)
		return;
	for (size_t i = 0; i < c->nbinds; i++) {
		const struct tally_conf_bind *p = &c->binds[i];

		if (!strcmp(p->who, who) ||
		    !tally_net_addr_clash(&p->addr, &b.addr))
			continue;
		c->errors++;
		tally_log_conf(LOG_ERR, d->file, line,
			       "%s: %s \"%s\" is already bound by %s (%s "
			       "\"%s\" at %s:%d): two instances cannot bind "
			       "the same address",
			       who, o->name, spec, p->who, p->opt, p->spec,
			       p->file, p->line);
		return;
	}
	v = realloc(c->binds, (c->nbinds + 1) * sizeof(*v));
	if (!v)
		return;
	c->binds = v;
	b.who = strdup(who);
	b.opt = strdup(o->name);
	b.spec = strdup(spec);
	if (!b.who || !b.opt || !b.spec) {
		free(b.who);
		free(b.opt);
		free(b.spec);
		return;
	}
	c->binds[c->nbinds++] = b;
}

void tally_conf_binds_add(struct tally_conf *c, const struct tally_conf_decl *d,
			  const char *who, const void *state)
{
	const struct tally_option *opts = d->plugin->options;
	/* the policy of the mode is the plugin's check to apply */
	unsigned flags =
		TALLY_NET_LISTEN | TALLY_NET_UNIX | TALLY_NET_AS_SYSTEM;

	if (conf_udp(opts, state))
		flags |= TALLY_NET_UDP;
	for (const struct tally_option *o = opts; o && o->name; o++) {
		const config_setting_t *s;
		int line = d->line;

		if (!(o->flags & (TALLY_OPT_BINDS | TALLY_OPT_BINDS_ZMQ)))
			continue;
		s = config_setting_get_member(d->setting, o->name);
		if (s)
			line = (int)config_setting_source_line(s);
		if (o->type == TALLY_OPT_T_STRING) {
			const char *v = *FIELD(state, o, char *);

			if (v)
				conf_bind_one(c, d, who, o, flags, v, line);
		} else if (o->type == TALLY_OPT_T_LIST) {
			const struct tally_strlist *l =
				FIELD(state, o, struct tally_strlist);

			for (size_t i = 0; i < l->n; i++)
				conf_bind_one(c, d, who, o, flags, l->v[i],
					      line);
		}
	}
}

void tally_conf_binds_free(struct tally_conf *c)
{
	for (size_t i = 0; i < c->nbinds; i++) {
		free(c->binds[i].who);
		free(c->binds[i].opt);
		free(c->binds[i].spec);
	}
	free(c->binds);
	c->binds = NULL;
	c->nbinds = 0;
}
