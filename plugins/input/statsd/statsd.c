/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/statsd/statsd.c - statsd and DogStatsD metrics over UDP,
 * TCP and unix sockets
 *
 * Each `listen` address is a struct tally_net_listener of the core
 * (tally/net.h): datagrams read with recvmmsg(2) into a buffer of
 * max_datagram bytes, at most max_messages_per_wakeup per drain, then the
 * loop runs; a datagram longer than the buffer is dropped whole (counted
 * "oversize", never parsed in part); the kernel's drops on a full receive
 * buffer are read from SO_RXQ_OVFL and counted "kernel_overflow". Each
 * datagram is split into lines (parse.h) and every line becomes one
 * record of the drain's batch, emitted once per drain:
 *
 *	name:3|c|@0.1       delta counter, value 3, sample_rate 0.1
 *	name:7|g            gauge (cumulative: the value now)
 *	name:-2|g           delta gauge (a sign makes it an adjustment)
 *	name:12|ms          observation, summary, 0.012 (seconds)
 *	name:12|h, |d       observation, histogram, 12 (as received)
 *	name:alice|s        set member "alice"
 *	...|#k:v,flag       labels k="v", flag="true"
 *
 * A bad line is dropped and counted by the parser's reason (bad_value,
 * bad_type, ...) and the rest of its datagram still goes through. Names
 * are kept as received: outputs make them valid for their format.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/net.h>
#include <tally/plugin.h>

#include "parse.h"

/* Addresses one instance may listen on. */
#define STATSD_MAX_LISTEN 16
/* At stop: datagrams still read from each socket, in steps of this. */
#define STATSD_STOP_STEP 4096
#define STATSD_STOP_MAX	 (64 * STATSD_STOP_STEP)
/* Seconds between two log lines about bad lines. */
#define STATSD_LOG_EVERY 10.0

enum statsd_protocol { STATSD_UDP, STATSD_TCP };

/* What a drop of a line is counted as, beyond the parser's reasons. */
#define STATSD_DROP_EXCLUDED STATSD_ERR_COUNT	    /* type not in `types` */
#define STATSD_DROP_NOMEM    (STATSD_ERR_COUNT + 1) /* no memory */
#define STATSD_DROPS	     (STATSD_ERR_COUNT + 2)

struct statsd {
	/* options */
	struct tally_strlist listen;
	int protocol;
	struct tally_strlist types;
	uint64_t receive_buffer;
	uint64_t max_datagram;
	int64_t max_messages_per_wakeup;
	double min_drain_interval;

	struct tally_instance *inst;
	unsigned accept; /* bit (1 << enum statsd_type) per type taken */
	struct tally_net_listener *l[STATSD_MAX_LISTEN];
	size_t nl;
	struct tally_batch *batch; /* records of the current drain */
	int64_t ts_ns;		   /* their timestamp */
	uint64_t drops[STATSD_DROPS];
	uint64_t lines;
	int64_t logged_ns; /* CLOCK_MONOTONIC of the last bad-line log */
	char example[96];  /* a bad line of the drain, printable */
	int example_reason;
};

static const char *const statsd_protocols[] = { "udp", "tcp", NULL };

static const struct {
	const char *name;
	enum statsd_type type;
	unsigned form;
} statsd_types[] = {
	{ "c", STATSD_COUNTER, TALLY_FORMS_DELTA },
	{ "g", STATSD_GAUGE, TALLY_FORMS_DELTA },
	{ "ms", STATSD_TIMER, TALLY_FORMS_OBSERVATION },
	{ "h", STATSD_HISTOGRAM, TALLY_FORMS_OBSERVATION },
	{ "d", STATSD_HISTOGRAM, TALLY_FORMS_OBSERVATION },
	{ "s", STATSD_SET, TALLY_FORMS_SET_MEMBER },
};

#define NTYPES (sizeof(statsd_types) / sizeof(statsd_types[0]))

static const char *statsd_drop_reason(int i)
{
	if (i == STATSD_DROP_EXCLUDED)
		return "excluded_type";
	if (i == STATSD_DROP_NOMEM)
		return "nomem";
	return statsd_err_reason((enum statsd_err)i);
}

static unsigned statsd_flags(const struct statsd *s)
{
	return TALLY_NET_LISTEN | TALLY_NET_UNIX |
	       (s->protocol == STATSD_UDP ? TALLY_NET_UDP : 0);
}

/* Remember @line (made printable, cut) as the example of a bad line. */
static void statsd_example(struct statsd *s, const char *line, size_t len,
			   int reason)
{
	size_t n = len < sizeof(s->example) - 1 ? len
						 : sizeof(s->example) - 1;

	if (s->example[0])
		return;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)line[i];

		s->example[i] = c < 0x20 || c >= 0x7f || c == '"' ? '?'
								   : (char)c;
	}
	s->example[n] = '\0';
	s->example_reason = reason;
}

static void statsd_drop(struct statsd *s, int reason, const char *line,
			size_t len)
{
	s->drops[reason]++;
	statsd_example(s, line, len, reason);
}

/*
 * The label set of @p's tags: keys and values copied to NUL-terminated
 * strings; a tag without a value gets "true" (as Telegraf does), so that
 * it stays visible where an empty value would mean no label.
 * Return: a reference, or NULL with errno = EINVAL (a key twice) or ENOMEM.
 */
static struct tally_labels *statsd_labels(const struct statsd_line *p)
{
	char buf[STATSD_MAX_TAGS * 2 * (STATSD_MAX_NAME + 1)];
	struct tally_label pairs[STATSD_MAX_TAGS];
	char *w = buf;

	for (size_t i = 0; i < p->ntags; i++) {
		const struct statsd_tag *t = &p->tags[i];

		memcpy(w, t->key, t->key_len);
		w[t->key_len] = '\0';
		pairs[i].key = w;
		w += t->key_len + 1;
		if (t->value_len) {
			memcpy(w, t->value, t->value_len);
			w[t->value_len] = '\0';
			pairs[i].value = w;
			w += t->value_len + 1;
		} else {
			pairs[i].value = "true";
		}
	}
	return tally_labels_new(pairs, p->ntags);
}

/* One parsed line into the drain's batch. Return: 0, or a drop reason. */
static int statsd_record(struct statsd *s, const struct statsd_line *p)
{
	char name[STATSD_MAX_NAME + 1];
	struct tally_labels *labels = NULL;
	int rc;

	if (!s->batch) {
		s->batch = tally_batch_new();
		if (!s->batch)
			return STATSD_DROP_NOMEM;
		s->ts_ns = tally_now_ns();
	}
	if (p->ntags) {
		labels = statsd_labels(p);
		if (!labels)
			return errno == EINVAL ? (int)STATSD_ERR_BAD_TAG
					       : STATSD_DROP_NOMEM;
	}
	memcpy(name, p->name, p->name_len);
	name[p->name_len] = '\0';
	switch (p->type) {
	case STATSD_COUNTER:
		rc = tally_batch_add_delta(s->batch, TALLY_COUNTER, name, NULL,
					   labels, p->value, p->rate,
					   s->ts_ns);
		break;
	case STATSD_GAUGE:
		rc = p->delta ? tally_batch_add_delta(s->batch, TALLY_GAUGE,
						      name, NULL, labels,
						      p->value, 1.0, s->ts_ns)
			      : tally_batch_add_metric(s->batch, TALLY_GAUGE,
						       name, NULL, labels,
						       p->value, s->ts_ns);
		break;
	case STATSD_TIMER:
		/* milliseconds on the wire, seconds in the record model */
		rc = tally_batch_add_observation(s->batch, TALLY_SUMMARY, name,
						 NULL, labels, p->value / 1e3,
						 p->rate, s->ts_ns);
		break;
	case STATSD_HISTOGRAM:
		rc = tally_batch_add_observation(s->batch, TALLY_HISTOGRAM,
						 name, NULL, labels, p->value,
						 p->rate, s->ts_ns);
		break;
	case STATSD_SET: {
		char member[STATSD_MAX_NAME + 1];

		memcpy(member, p->member, p->member_len);
		member[p->member_len] = '\0';
		rc = tally_batch_add_set_member(s->batch, name, NULL, labels,
						member, s->ts_ns);
		break;
	}
	default:
		rc = -1;
		errno = EINVAL;
		break;
	}
	tally_labels_unref(labels);
	if (rc < 0)
		return errno == ENOMEM ? STATSD_DROP_NOMEM
				       : (int)STATSD_ERR_BAD_VALUE;
	return 0;
}

/* A datagram (or a line of a stream): each of its lines. */
static void statsd_item(void *arg, const char *data, size_t len)
{
	struct statsd *s = arg;
	const char *line;
	size_t pos = 0, n;

	while ((n = statsd_next_line(data, len, &pos, &line)) > 0) {
		struct statsd_line p;
		enum statsd_err err = statsd_parse_line(line, n, &p);
		int drop;

		s->lines++;
		if (err != STATSD_OK) {
			statsd_drop(s, (int)err, line, n);
			continue;
		}
		if (!(s->accept & (1u << p.type))) {
			statsd_drop(s, STATSD_DROP_EXCLUDED, line, n);
			continue;
		}
		drop = statsd_record(s, &p);
		if (drop)
			statsd_drop(s, drop, line, n);
	}
}

/* Emit the drain's batch; pass on its counts, log bad lines now and then. */
static void statsd_flush(struct statsd *s)
{
	uint64_t bad = 0;

	if (s->batch) {
		tally_emit(s->inst, s->batch);
		s->batch = NULL;
	}
	if (s->lines) {
		tally_count_event(s->inst, "lines_received", s->lines);
		s->lines = 0;
	}
	for (int i = 0; i < STATSD_DROPS; i++) {
		if (!s->drops[i])
			continue;
		tally_count_drop(s->inst, statsd_drop_reason(i), s->drops[i]);
		bad += s->drops[i];
		s->drops[i] = 0;
	}
	if (bad) {
		int64_t now = tally_monotonic_ns();

		if (!s->logged_ns ||
		    now - s->logged_ns >= (int64_t)(STATSD_LOG_EVERY * 1e9)) {
			tally_log(s->inst, LOG_WARNING,
				  "dropped %llu bad line(s), e.g. \"%s\" (%s); "
				  "counted by reason in tally_dropped_total",
				  (unsigned long long)bad, s->example,
				  statsd_drop_reason(s->example_reason));
			s->logged_ns = now;
		}
	}
	s->example[0] = '\0';
}

static void statsd_drained(void *arg, unsigned items)
{
	(void)items;
	statsd_flush(arg);
}

static const struct tally_net_listener_ops statsd_listener_ops = {
	.item = statsd_item,
	.drained = statsd_drained,
};

static int statsd_check(struct tally_instance *inst, void *state)
{
	struct statsd *s = state;
	struct tally_net_addr a[STATSD_MAX_LISTEN];
	unsigned forms = 0;
	int rc = 0;

	if (!s->listen.n) {
		tally_log(inst, LOG_ERR, "listen: at least one address needed");
		rc = -1;
	}
	if (s->listen.n > STATSD_MAX_LISTEN) {
		tally_log(inst, LOG_ERR, "listen: at most %d addresses",
			  STATSD_MAX_LISTEN);
		rc = -1;
	}
	for (size_t i = 0; i < s->listen.n && i < STATSD_MAX_LISTEN; i++) {
		char err[TALLY_NET_ERRLEN];

		if (tally_net_addr_parse("listen", s->listen.v[i],
					 statsd_flags(s), &a[i], err,
					 sizeof(err)) < 0) {
			tally_log(inst, LOG_ERR, "%s", err);
			rc = -1;
			a[i].kind = 0; /* compared with nothing below */
			continue;
		}
		for (size_t k = 0; k < i; k++) {
			if (!a[k].kind || !tally_net_addr_clash(&a[k], &a[i]))
				continue;
			tally_log(inst, LOG_ERR,
				  "listen \"%s\": the same socket as \"%s\" "
				  "listed before it: list it once",
				  s->listen.v[i], s->listen.v[k]);
			rc = -1;
			break;
		}
	}
	s->accept = 0;
	for (size_t i = 0; i < s->types.n; i++) {
		size_t k;

		for (k = 0; k < NTYPES; k++)
			if (!strcmp(s->types.v[i], statsd_types[k].name))
				break;
		if (k == NTYPES) {
			tally_log(inst, LOG_ERR,
				  "types: unknown statsd type \"%s\": use c, "
				  "g, ms, h, d or s",
				  s->types.v[i]);
			rc = -1;
			continue;
		}
		s->accept |= 1u << statsd_types[k].type;
		/* an absolute gauge is cumulative, "+1|g" a delta */
		forms |= statsd_types[k].form;
	}
	if (!s->types.n) {
		tally_log(inst, LOG_ERR, "types: at least one type needed");
		rc = -1;
	}
	if (rc == 0 && tally_instance_set_emits(inst, forms) < 0)
		rc = -1;
	return rc;
}

static int statsd_init(struct tally_instance *inst, void *state)
{
	struct statsd *s = state;

	s->inst = inst;
	return 0;
}

static void statsd_close(struct statsd *s)
{
	for (size_t i = 0; i < s->nl; i++)
		tally_net_listener_free(s->l[i]);
	s->nl = 0;
}

static int statsd_start(struct tally_instance *inst, void *state,
			struct event_base *base)
{
	struct statsd *s = state;
	struct tally_net_listener_opts o = {
		.max_items = (unsigned)s->max_messages_per_wakeup,
		.min_interval = s->min_drain_interval,
		.max_item = (size_t)s->max_datagram,
		.rcvbuf = (size_t)s->receive_buffer,
		.idle_timeout = 0,
	};

	for (size_t i = 0; i < s->listen.n; i++) {
		struct tally_net_addr a;
		char err[TALLY_NET_ERRLEN], what[320], where[128];
		struct tally_net_listener_stats st;
		unsigned port;

		if (tally_net_addr_parse("listen", s->listen.v[i],
					 statsd_flags(s), &a, err,
					 sizeof(err)) < 0) {
			tally_log(inst, LOG_ERR, "%s", err);
			goto out_close;
		}
		snprintf(what, sizeof(what), "listen \"%s\"", s->listen.v[i]);
		s->l[s->nl] = tally_net_listener_new(
			inst, base, what, &a, &o, &statsd_listener_ops, s);
		if (!s->l[s->nl])
			goto out_close;
		s->nl++;
		tally_net_listener_get_stats(s->l[s->nl - 1], &st);
		port = tally_net_listener_port(s->l[s->nl - 1]);
		where[0] = '\0';
		if (port && port != a.port) /* port 0, or the port rule */
			snprintf(where, sizeof(where),
				 " as configured, bound to port %u (the kernel "
				 "chose it: see the run directory's listen file)",
				 port);
		/* the kernel reports twice the size it was given */
		tally_log(inst, LOG_INFO,
			  "receiving statsd over %s on %s%s, receive buffer "
			  "%zu bytes",
			  (a.kind == TALLY_NET_PATH || a.kind == TALLY_NET_ABSTRACT)
				  ? (s->protocol ? "unix streams"
						 : "unix datagrams")
				  : statsd_protocols[s->protocol],
			  s->listen.v[i], where, st.rcvbuf / 2);
	}
	return 0;

out_close:
	statsd_close(s);
	return -1;
}

/* Shutdown or reload: what the senders already sent still counts. */
static void statsd_stop(struct tally_instance *inst, void *state)
{
	struct statsd *s = state;

	(void)inst;
	for (size_t i = 0; i < s->nl; i++) {
		unsigned total = 0, n;

		do {
			n = tally_net_listener_read_now(s->l[i],
							STATSD_STOP_STEP);
			total += n;
		} while (n == STATSD_STOP_STEP && total < STATSD_STOP_MAX);
	}
	statsd_flush(s);
	statsd_close(s);
}

static void statsd_fini(struct tally_instance *inst, void *state)
{
	struct statsd *s = state;

	(void)inst;
	statsd_close(s);
	tally_batch_unref(s->batch);
	s->batch = NULL;
}

static const struct tally_option statsd_options[] = {
	TALLY_OPT_LISTEN("listen", struct statsd, listen, "127.0.0.1:8125",
			 "addresses to receive on: \"host:port\", "
			 "\"[ipv6]:port\", \"*:port\" (IPv4 and IPv6) or "
			 "\"unix:/path\" (a datagram socket with udp)"),
	TALLY_OPT_ENUM("protocol", struct statsd, protocol, "udp",
		       statsd_protocols,
		       "udp: datagrams of one or more lines (unix: datagram "
		       "sockets); tcp: connections sending lines (unix: "
		       "stream sockets)"),
	TALLY_OPT_LIST("types", struct statsd, types, "c,g,ms,h,d,s",
		       "statsd types taken (h and d go together); lines of "
		       "other types are dropped and counted (excluded_type). "
		       "[\"c\", \"g\"] sends "
		       "only deltas and gauges: enough for the prometheus "
		       "output without an aggregate filter"),
	TALLY_OPT_SIZE("receive_buffer", struct statsd, receive_buffer, "8MiB",
		       0, 1073741824,
		       "kernel receive buffer per socket (SO_RCVBUF; beyond "
		       "net.core.rmem_max only when started as root); 0: the "
		       "kernel's default"),
	TALLY_OPT_SIZE("max_datagram", struct statsd, max_datagram, "65535",
		       512, 16777216,
		       "largest datagram (or line, with tcp) taken, bytes; a "
		       "longer one is dropped whole and counted (oversize)"),
	TALLY_OPT_INT("max_messages_per_wakeup", struct statsd,
		      max_messages_per_wakeup, "256", 1, 1000000,
		      "datagrams (tcp: lines) read per drain before yielding "
		      "to the loop"),
	TALLY_OPT_DURATION("min_drain_interval", struct statsd,
			 min_drain_interval, "0.005", 0, 1,
			 "seconds between drains unless one hit "
			 "max_messages_per_wakeup (coalesces wake-ups)"),
	TALLY_OPT_END
};

static const struct tally_input_ops statsd_ops = {
	.check = statsd_check,
	.init = statsd_init,
	.start = statsd_start,
	.stop = statsd_stop,
	.fini = statsd_fini,
	.emits = TALLY_FORMS_STATSD,
};

TALLY_PLUGIN_INPUT(statsd,
		   "statsd and DogStatsD metrics over UDP, TCP and unix "
		   "sockets",
		   struct statsd, statsd_options, &statsd_ops);
