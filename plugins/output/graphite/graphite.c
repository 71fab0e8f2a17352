/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/graphite/graphite.c - Graphite plaintext protocol to
 * carbon, over the core's reconnecting sender (TCP) or datagram sender
 * (UDP)
 *
 * write() renders a batch (render.c) into one message and hands it to the
 * sender whole, or not at all: while carbon is down (or the sender's
 * buffer is full) it says EAGAIN and the batch stays in the core's output
 * queue, bounded in records (queue_records), the oldest dropped and
 * counted; the sender's ready() brings it back once a connection is up.
 * The sender never sends a line twice across reconnects (tally/net.h,
 * "what sent means"); what the kernel held when carbon died is the loss
 * window, documented and measured in doc/plugins/graphite.md. What the
 * sender holds is reported to the core (tally_output_held()), so that
 * shutdown waits for it within global.shutdown_timeout, as for the queue,
 * and reports what is left in one line.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include <tally/net.h>
#include <tally/plugin.h>

#include "render.h"

struct graphite {
	/* options */
	char *server;
	int protocol;
	char *prefix;
	int format;
	struct tally_strlist layout;
	int64_t max_regions;
	double backoff_max;
	double stall_timeout;
	uint64_t max_datagram;
	/* state */
	struct tally_instance *inst;
	struct tally_net_addr addr;
	struct tally_net_sender *sender;
	struct tally_net_dgram *dgram;
	struct gr_render render;
	struct evbuffer *buf;
};

static const char *const graphite_formats[] = { "path", "tags", NULL };
enum { GRAPHITE_TCP = 0, GRAPHITE_UDP };
static const char *const graphite_protocols[] = { "tcp", "udp", NULL };

#define GRAPHITE_LAYOUT "prefix,host,name,labels"

/* Whether @l is the default layout (what format "tags" ignores). */
static bool layout_default(const struct tally_strlist *l)
{
	static const char *const def[] = { "prefix", "host", "name",
					   "labels" };

	if (l->n != 4)
		return false;
	for (size_t i = 0; i < 4; i++) {
		if (strcmp(l->v[i], def[i]))
			return false;
	}
	return true;
}

/* Parse server (and layout) as init will; messages say which. */
static int graphite_parse(struct tally_instance *inst, struct graphite *g,
			  struct gr_part *parts, size_t *nparts)
{
	char err[TALLY_NET_ERRLEN];
	bool udp = g->protocol == GRAPHITE_UDP;

	if (tally_net_addr_parse("server", g->server,
				 TALLY_NET_UNIX | (udp ? TALLY_NET_UDP : 0),
				 &g->addr, err, sizeof(err)) < 0) {
		tally_log(inst, LOG_ERR, "%s", err);
		return -1;
	}
	if (udp && g->addr.kind == TALLY_NET_NAME) {
		tally_log(inst, LOG_ERR,
			  "server \"%s\": protocol \"udp\" takes a numeric "
			  "address or unix:/path, not a host name",
			  g->server);
		return -1;
	}
	if (g->format == GR_FMT_TAGS && !layout_default(&g->layout)) {
		tally_log(inst, LOG_ERR,
			  "layout is for format = \"path\": format \"tags\" "
			  "writes name;key=value;... in key order; remove "
			  "layout or use format \"path\"");
		return -1;
	}
	if (gr_layout_parse((const char *const *)g->layout.v, g->layout.n,
			    parts, nparts, err, sizeof(err)) < 0) {
		tally_log(inst, LOG_ERR, "%s", err);
		return -1;
	}
	return 0;
}

/* check op: what init would refuse in the options, without a socket. */
static int graphite_check(struct tally_instance *inst, void *state)
{
	struct gr_part parts[GR_MAX_PARTS];
	size_t nparts;

	return graphite_parse(inst, state, parts, &nparts);
}

static void graphite_ready(void *arg)
{
	struct graphite *g = arg;

	tally_output_ready(g->inst);
}

/* The points the sender holds, for shutdown to wait for (or report). */
static void graphite_sent(void *arg)
{
	struct graphite *g = arg;
	struct tally_net_sender_stats st;

	tally_net_sender_get_stats(g->sender, &st);
	tally_output_held(g->inst, (size_t)st.records_buffered);
}

static void graphite_count(struct graphite *g, const struct gr_counts *c)
{
	tally_count_event(g->inst, "points", c->points);
	if (c->non_finite)
		tally_count_drop(g->inst, "non_finite", c->non_finite);
	if (c->no_begin)
		tally_count_drop(g->inst, "span_no_begin", c->no_begin);
	if (c->regions_full)
		tally_count_drop(g->inst, "regions_full", c->regions_full);
}

static int graphite_write(struct tally_instance *inst, void *state,
			  struct tally_batch *b)
{
	struct graphite *g = state;
	struct gr_counts c = { 0 };
	int err;

	evbuffer_drain(g->buf, evbuffer_get_length(g->buf));
	if (gr_render_batch(&g->render, b, g->buf, &c) < 0)
		goto out_abort;
	if (!evbuffer_get_length(g->buf)) {
		gr_render_commit(&g->render);
		graphite_count(g, &c);
		return 0;
	}
	if (g->dgram) {
		/* what the kernel refuses is counted by the core's sender */
		if (tally_net_dgram_send(g->dgram, g->buf, '\n') < 0)
			goto out_abort;
	} else {
		/* the sender counts the points with the message, for fini */
		if (tally_net_sender_send_records(g->sender, g->buf,
						  c.points) < 0)
			goto out_abort;
		graphite_sent(g);
	}
	gr_render_commit(&g->render);
	graphite_count(g, &c);
	return 0;

out_abort:
	err = errno;
	gr_render_abort(&g->render);
	evbuffer_drain(g->buf, evbuffer_get_length(g->buf));
	errno = err;
	return -1;
}

static int graphite_init(struct tally_instance *inst, void *state)
{
	struct graphite *g = state;
	struct gr_part parts[GR_MAX_PARTS];
	size_t nparts;
	char what[300], addr[300];
	struct tally_net_sender_opts o = {
		.backoff_max = g->backoff_max,
		.stall_timeout = g->stall_timeout,
		.delimiter = '\n',
		.hold_when_down = true,
		.ready = graphite_ready,
		.sent = graphite_sent,
		.arg = g,
	};

	g->inst = inst;
	if (graphite_parse(inst, g, parts, &nparts) < 0)
		return -1;
	g->buf = evbuffer_new();
	if (!g->buf ||
	    gr_render_init(&g->render, g->format, g->prefix, parts, nparts,
			   tally_output_labels(inst),
			   (size_t)g->max_regions) < 0)
		goto out_nomem;
	snprintf(what, sizeof(what), "server \"%s\"",
		 tally_net_addr_format(&g->addr, addr, sizeof(addr)));
	if (g->protocol == GRAPHITE_UDP) {
		g->dgram = tally_net_dgram_new(inst, what, &g->addr,
					       (size_t)g->max_datagram);
		return g->dgram ? 0 : -1;
	}
	g->sender = tally_net_sender_new(inst, tally_instance_base(inst), what,
					 &g->addr, &o);
	if (!g->sender)
		return -1;
	return 0;

out_nomem:
	errno = ENOMEM;
	return -1;
}

static void graphite_fini(struct tally_instance *inst, void *state)
{
	struct graphite *g = state;

	if (g->sender) {
		struct tally_net_sender_stats st;
		uint64_t lost;

		tally_net_sender_get_stats(g->sender, &st);
		lost = st.records_buffered;
		/* logged by the core with the queue's when the deadline ran
		 * out (one line), else here */
		if (lost && !tally_output_loss_logged(inst))
			tally_log(inst, LOG_WARNING,
				  "%llu points not sent to carbon at exit",
				  (unsigned long long)lost);
		if (lost)
			tally_count_drop(inst, "unsent_at_exit", lost);
	}
	tally_net_sender_free(g->sender);
	tally_net_dgram_free(g->dgram);
	gr_render_fini(&g->render);
	if (g->buf)
		evbuffer_free(g->buf);
}

static const struct tally_option graphite_options[] = {
	TALLY_OPT_STRING("server", struct graphite, server, "127.0.0.1:2003",
			 "carbon's plaintext receiver, host:port, [ipv6]:port "
			 "or unix:/path"),
	TALLY_OPT_ENUM("protocol", struct graphite, protocol, "tcp",
		       graphite_protocols,
		       "tcp (reconnecting; what is produced while carbon is "
		       "down waits in the queue) or udp (datagrams: no "
		       "connection, no delivery promise; numeric server "
		       "only)"),
	TALLY_OPT_STRING("prefix", struct graphite, prefix, "",
			 "prepended to every path (\"hpc.frontier\"); dots "
			 "make nodes"),
	TALLY_OPT_ENUM("format", struct graphite, format, "path",
		       graphite_formats,
		       "path (label values as path nodes, in layout order) "
		       "or tags (Graphite 1.1: name;key=value;...)"),
	TALLY_OPT_LIST("layout", struct graphite, layout,
		       GRAPHITE_LAYOUT,
		       "format path: the order of the nodes: prefix, name, "
		       "labels (every label not named here, in key order) "
		       "and label names"),
	TALLY_OPT_INT("max_regions", struct graphite, max_regions, "100000",
		      1, 100000000,
		      "span regions whose time counters are kept; span ends "
		      "of new regions beyond are dropped and counted"),
	TALLY_OPT_DURATION("backoff_max", struct graphite, backoff_max, "30s",
			   0.1, 3600,
			   "tcp: longest wait between reconnection attempts "
			   "(exponential from 0.1 s, jittered)"),
	TALLY_OPT_DURATION("stall_timeout", struct graphite, stall_timeout,
			   "60s", 0.1, 3600,
			   "tcp: a connection whose server takes none of the "
			   "bytes waiting for it this long (it reads nothing) "
			   "is logged, counted as event stalls and made "
			   "again; nothing is lost or sent twice"),
	TALLY_OPT_SIZE("max_datagram", struct graphite, max_datagram, "1432",
		       64, 65507,
		       "udp: bytes per datagram at most (1432 on Ethernet, "
		       "8932 with jumbo frames); lines are never split"),
	TALLY_OPT_END
};

static const struct tally_output_ops graphite_ops = {
	.check = graphite_check,
	.init = graphite_init,
	.write = graphite_write,
	.fini = graphite_fini,
	.accepts = TALLY_FORMS_INTERVAL,
	.host_label = "host",
};

TALLY_PLUGIN_OUTPUT(graphite,
		    "Graphite plaintext protocol to carbon over TCP or UDP",
		    struct graphite, graphite_options, &graphite_ops);
