/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/zmq_trace/zmq_trace.c - application spans over ZeroMQ
 *
 * Binds a PULL socket that applications' PUSH sockets (libtally-trace, the
 * Python client, Omnistat's tracer) connect to, decodes each message
 * (decode.c), tracks open spans (state.c) and emits span records, one batch
 * per drain.
 *
 * Event loop integration: the core's drain scheduler (struct
 * tally_net_drain, tally/net.h) reads up to max_messages_per_wakeup
 * messages per drain, one batch each, yields to the loop when the cap is
 * hit and coalesces a trickle into one wake-up per min_drain_interval.
 * ZMQ_FD is not a data fd: it becomes readable when the socket has
 * commands to process, and any zmq call on the socket may consume that
 * signal, so the scheduler's pending() is ZMQ_EVENTS: the fd is slept on
 * only right after ZMQ_EVENTS showed no ZMQ_POLLIN.
 *
 * ipc endpoints are bound on a unix socket the core makes by its rules
 * (tally_net_unix_reserve(), tally/net.h: lock file, stale file replaced,
 * a live or another user's socket never taken, the mode set before
 * listen()) and handed to libzmq with ZMQ_USE_FD: libzmq's own ipc bind
 * unlinks whatever file sits at the path first, which would steal a live
 * collector's socket. Endpoints are parsed, and the loopback policy
 * applied, by tally_net_zmq_parse().
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <zmq.h>

#include <tally/fdlimit.h>
#include <tally/net.h>
#include <tally/plugin.h>

#include "decode.h"
#include "state.h"

/* An empty source is forgotten after this long without messages. */
#define ZMQ_TRACE_IDLE_NS (60 * 1000000000ll)
/* A dead process's spans are closed once it has been silent this long,
 * so that its last messages still in flight are applied first. */
#define ZMQ_TRACE_GONE_GRACE_NS (1000000000ll)
/* At shutdown: drain until the socket is quiet this long, at most the
 * deadline (messages of a job's last processes are still arriving), in
 * steps of at most this many frames, so that senders that keep sending
 * cannot hold the deadline off. */
#define ZMQ_TRACE_STOP_QUIET_MS 50
#define ZMQ_TRACE_STOP_MAX_MS	3000
#define ZMQ_TRACE_STOP_STEP	4096
/* drains a check may run first, to empty the socket (a bound: a flood) */
#define ZMQ_TRACE_CHECK_DRAINS	64
/*
 * Largest message libzmq takes from a sender. A larger one makes libzmq
 * drop that sender's connection as soon as it reads the frame's size,
 * before allocating it (the sender reconnects; the message is lost, and
 * not counted here: libzmq does not tell the socket's reader). Native
 * messages are at most TALLY_WIRE_MAX_MSG2 (11316) bytes, but an Omnistat
 * JSON message holds two strings of up to 1024 bytes that json.dumps may
 * escape as \uXXXX, 6 bytes per byte: 16 KiB admits every valid message
 * of both formats, and longer native ones up to it are still read and
 * counted as bad_length.
 */
#define ZMQ_TRACE_MAX_MSG (16 * 1024)

/*
 * One endpoint the socket binds: the main one (endpoint), and optionally
 * the one Omnistat's tracer sends to (omnistat_endpoint).
 */
struct zmq_trace_bound {
	char *ep;      /* as configured, or the default */
	bool optional; /* cannot be bound: one log line, not an error */
	bool bound;
	struct tally_net_addr addr; /* as tally_net_zmq_parse() read it */
	struct tally_net_unix un;   /* ipc: the socket file and its lock */
	int listen_fd;		    /* ipc: the socket libzmq accepts on */
	uint64_t refused;	    /* connections refused, counted so far */
};

#define ZMQ_TRACE_MAX_BOUND 2

struct zmq_trace {
	/* options (tally/config.h fills them) */
	char *endpoint;
	char *omnistat_endpoint;
	char *group;
	int64_t rcvhwm;
	int64_t max_messages_per_wakeup;
	double min_drain_interval;
	int64_t max_open_spans;
	int64_t max_sources;
	int64_t max_counter_series;
	bool source_metrics;
	double abandon_timeout;
	double check_interval;
	double max_clock_skew;

	struct tally_instance *inst;
	struct zmq_trace_bound bound[ZMQ_TRACE_MAX_BOUND];
	unsigned nbound;
	gid_t gid;		/* of group, or (gid_t)-1 */
	int64_t refused_logged; /* CLOCK_MONOTONIC ns of the last such log */

	void *zctx;
	void *zsock;
	struct tally_net_drain *drain; /* reads ZMQ_FD's socket */
	struct event *check_ev;

	struct zmq_trace_state *state;
	struct zmq_trace_sink sink;
	struct tally_batch *batch; /* filled by the current drain */
	char host[HOST_NAME_MAX + 1];

	/* Drops not yet passed to tally_count_drop(), flushed per drain,
	 * with the size of the first message of each reason for the log. */
	uint64_t pending[ZMQ_TRACE_ERR_COUNT];
	size_t pending_len[ZMQ_TRACE_ERR_COUNT];
	uint64_t pending_client;
	int64_t max_skew_ns;
	int64_t first_skew_ns; /* of the first skewed message pending */
	struct zmq_trace_counters reported;
	bool in_multipart; /* the next frame belongs to a dropped message */

	/* Totals for the summary line at shutdown. */
	uint64_t received;
	uint64_t malformed;
	uint64_t client_dropped;
	uint64_t stop_drains; /* the drain scheduler counts the others */

	struct zmq_trace_event ev; /* decode scratch, 3 KB: off the stack */
};

/* Append a span record to the batch of the current drain. */
static int zmq_trace_sink_span(void *ctx, const struct tally_span *sp,
			       int64_t ts_ns)
{
	struct zmq_trace *zt = ctx;

	if (!zt->batch) {
		zt->batch = tally_batch_new();
		if (!zt->batch)
			return -1;
	}
	return tally_batch_add_span(zt->batch, sp, ts_ns);
}

/* Append a sample (application counters, per-source figures) likewise. */
static int zmq_trace_sink_metric(void *ctx, enum tally_metric_type type,
				 const char *name,
				 const struct tally_label *labels, size_t n,
				 double value, int64_t ts_ns)
{
	struct zmq_trace *zt = ctx;
	struct tally_labels *ls;
	int ret;

	if (!zt->batch) {
		zt->batch = tally_batch_new();
		if (!zt->batch)
			return -1;
	}
	ls = tally_labels_new(labels, n);
	if (!ls)
		return -1;
	ret = tally_batch_add_metric(zt->batch, type, name, NULL, ls, value,
				     ts_ns);
	tally_labels_unref(ls);
	return ret;
}

/* Pass the growth of a state counter to tally_count_drop(); return it. */
static uint64_t zmq_trace_count(struct zmq_trace *zt, uint64_t *reported,
				uint64_t now, const char *reason)
{
	uint64_t n = now - *reported;

	if (n) {
		tally_count_drop(zt->inst, reason, n);
		*reported = now;
	}
	return n;
}

/*
 * Count the connections refused because descriptors ran short (core's
 * accept, tally/fdlimit.h): senders beyond them find no collector until
 * some disconnect, and retry. One log line per minute at most.
 */
static void zmq_trace_count_refused(struct zmq_trace *zt)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < zt->nbound; i++) {
		struct zmq_trace_bound *b = &zt->bound[i];
		uint64_t now;

		if (b->listen_fd < 0)
			continue;
		now = tally_accept_refused(b->listen_fd);
		n += now - b->refused;
		b->refused = now;
	}
	if (!n)
		return;
	tally_count_event(zt->inst, "connections_refused", n);
	if (tally_monotonic_ns() - zt->refused_logged < 60 * 1000000000ll &&
	    zt->refused_logged)
		return;
	zt->refused_logged = tally_monotonic_ns();
	tally_log(zt->inst, LOG_WARNING,
		  "refused %llu connections: open files are running out "
		  "(%u kept free for scrapes and outputs); raise the open "
		  "files limit (LimitNOFILE=, ulimit -n)",
		  (unsigned long long)n, tally_fd_reserve());
}

/* Emit what the last drain or check produced and flush the counters. */
static void zmq_trace_flush(struct zmq_trace *zt)
{
	const struct zmq_trace_counters *c =
		zmq_trace_state_counters(zt->state);
	uint64_t n;

	if (zt->batch) {
		tally_emit(zt->inst, zt->batch);
		zt->batch = NULL;
	}
	/*
	 * One log line per reason and drain, not per message: a flood of
	 * garbage must not cost a formatted log call per message (the core
	 * rate-limits only after formatting).
	 */
	for (int i = 1; i < ZMQ_TRACE_ERR_COUNT; i++) {
		if (!zt->pending[i])
			continue;
		tally_count_drop(zt->inst, zmq_trace_err_reason(i),
				 zt->pending[i]);
		if (i == ZMQ_TRACE_ERR_CLOCK_SKEW)
			tally_log(zt->inst, LOG_WARNING,
				  "dropped %llu messages timestamped more "
				  "than max_clock_skew = %g s from this "
				  "host's clock (first: %+.3f s): is the "
				  "sender's clock or time unit wrong?",
				  (unsigned long long)zt->pending[i],
				  zt->max_clock_skew,
				  (double)zt->first_skew_ns / 1e9);
		else
			tally_log(zt->inst, LOG_WARNING,
				  "dropped malformed messages: %llu %s "
				  "(first: %zu bytes)",
				  (unsigned long long)zt->pending[i],
				  zmq_trace_err_reason(i), zt->pending_len[i]);
		zt->pending[i] = 0;
	}
	if (zt->pending_client) {
		tally_count_drop(zt->inst, "client_dropped",
				 zt->pending_client);
		zt->pending_client = 0;
	}
	zmq_trace_count(zt, &zt->reported.orphan_end, c->orphan_end,
			"orphan_end");
	zmq_trace_count(zt, &zt->reported.abandoned, c->abandoned,
			"span_abandoned");
	zmq_trace_count(zt, &zt->reported.lost_end, c->lost_end,
			"span_lost_end");
	/* Limits reached lose data: say so, once per drain as above. */
	n = zmq_trace_count(zt, &zt->reported.source_limit, c->source_limit,
			    "source_limit");
	if (n)
		tally_log(zt->inst, LOG_WARNING,
			  "max_sources = %lld reached: forgot the %llu least "
			  "recently active sources (and ended their open "
			  "spans as evicted)",
			  (long long)zt->max_sources, (unsigned long long)n);
	n = zmq_trace_count(zt, &zt->reported.evicted, c->evicted,
			    "span_evicted");
	if (n)
		tally_log(zt->inst, LOG_WARNING,
			  "ended %llu open spans as evicted (max_open_spans "
			  "= %lld per process, or max_sources reached)",
			  (unsigned long long)n, (long long)zt->max_open_spans);
	zmq_trace_count(zt, &zt->reported.emit_failed, c->emit_failed, "nomem");
	n = zmq_trace_count(zt, &zt->reported.counter_limit, c->counter_limit,
			    "counter_limit");
	if (n)
		tally_log(zt->inst, LOG_WARNING,
			  "max_counter_series = %lld reached: dropped %llu "
			  "snapshots of new application counter series",
			  (long long)zt->max_counter_series,
			  (unsigned long long)n);
	n = zmq_trace_count(zt, &zt->reported.undelivered, c->undelivered,
			    "undelivered");
	if (n)
		tally_log(
			zt->inst, LOG_WARNING,
			"%llu events that senders queued never arrived (their "
			"tracers closed before delivering them)",
			(unsigned long long)n);
	zmq_trace_count_refused(zt);
}

/* Count a dropped message of @len bytes under @err, logged at the flush. */
static void zmq_trace_malformed(struct zmq_trace *zt, enum zmq_trace_err err,
				size_t len)
{
	zt->malformed++;
	if (!zt->pending[err]++)
		zt->pending_len[err] = len;
}

/*
 * Decode and apply one message. Return: true for a CLOSE or a COUNTER
 * message, not an event.
 */
static bool zmq_trace_message(struct zmq_trace *zt, const void *data,
			      size_t len, int64_t now, int64_t real)
{
	enum zmq_trace_err err = zmq_trace_decode(data, len, &zt->ev);

	if (err) {
		zmq_trace_malformed(zt, err, len);
		return false;
	}
	if (zt->ev.dropped) {
		zt->client_dropped += zt->ev.dropped;
		zt->pending_client += zt->ev.dropped;
	}
	/* A clock, or a unit, far off would make regions years long. */
	if (zmq_trace_ts_skewed(zt->ev.ts_ns, real, zt->max_skew_ns)) {
		if (!zt->pending[ZMQ_TRACE_ERR_CLOCK_SKEW]++)
			zt->first_skew_ns = zt->ev.ts_ns - real;
		return false;
	}
	/* An event lost to ENOMEM is counted by the state. */
	(void)zmq_trace_state_apply(zt->state, &zt->ev, now, &zt->sink);
	return zt->ev.close || zt->ev.counter;
}

/*
 * Read up to @max frames without blocking into one batch and emit it (with
 * @flush; else the batch grows over calls until the caller flushes).
 *
 * An event is one single-frame message (doc/wire-format.md). A multi-part
 * message is dropped whole, as "multipart", its frames read and discarded
 * (zt->in_multipart carries that over to the next drain).
 *
 * Return: the number of frames read.
 */
static unsigned zmq_trace_drain(struct zmq_trace *zt, unsigned max, bool flush)
{
	int64_t now = tally_monotonic_ns(), real = tally_now_ns();
	unsigned n = 0, msgs = 0, closes = 0, counters = 0;
	zmq_msg_t msg;

	zmq_msg_init(&msg);
	while (n < max) {
		if (zmq_msg_recv(&msg, zt->zsock, ZMQ_DONTWAIT) < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				tally_log(zt->inst, LOG_ERR, "zmq_msg_recv: %s",
					  zmq_strerror(errno));
			break;
		}
		n++;
		if (zt->in_multipart || zmq_msg_more(&msg)) {
			if (!zt->in_multipart) {
				msgs++;
				zmq_trace_malformed(zt, ZMQ_TRACE_ERR_MULTIPART,
						    zmq_msg_size(&msg));
			}
			zt->in_multipart = zmq_msg_more(&msg);
			continue;
		}
		if (!zmq_trace_message(zt, zmq_msg_data(&msg),
				       zmq_msg_size(&msg), now, real))
			msgs++;
		else if (zt->ev.counter)
			counters++;
		else
			closes++;
	}
	zmq_msg_close(&msg);
	zt->received += msgs;
	tally_count_event(zt->inst, "messages_received", msgs);
	if (closes)
		tally_count_event(zt->inst, "tracer_closes", closes);
	if (counters)
		tally_count_event(zt->inst, "counter_messages", counters);
	if (flush)
		zmq_trace_flush(zt);
	return n;
}

/* The scheduler's pending(): ZMQ_EVENTS, the last call before a sleep. */
static bool zmq_trace_readable(void *arg)
{
	struct zmq_trace *zt = arg;
	int events = 0;
	size_t len = sizeof(events);

	if (zmq_getsockopt(zt->zsock, ZMQ_EVENTS, &events, &len) < 0)
		return true; /* let the next drain find out */
	return events & ZMQ_POLLIN;
}

/* The scheduler's drain(): one batch of at most @max frames. */
static unsigned zmq_trace_drain_op(void *arg, unsigned max)
{
	return zmq_trace_drain(arg, max, true);
}

static const struct tally_net_drain_ops zmq_trace_drain_ops = {
	.drain = zmq_trace_drain_op,
	.pending = zmq_trace_readable,
};

static void zmq_trace_on_check(evutil_socket_t fd, short what, void *arg)
{
	struct zmq_trace *zt = arg;

	/*
	 * Read what waits first: a source whose process is gone is settled
	 * by the check (its undelivered events counted, its spans ended),
	 * and events of it still queued here would otherwise arrive after,
	 * counted twice (a loop held up by a stalled output, t3022).
	 */
	for (int i = 0; i < ZMQ_TRACE_CHECK_DRAINS && zmq_trace_readable(zt);
	     i++)
		zmq_trace_drain(zt, (unsigned)zt->max_messages_per_wakeup,
				false);
	zmq_trace_state_check(zt->state, tally_monotonic_ns(), tally_now_ns(),
			      false, &zt->sink);
	zmq_trace_flush(zt);
}

/*
 * Parse endpoint @ep into @out, logging what is wrong with it. Pure: the
 * check op and init both use it. libzmq itself accepts more than it can
 * bind as meant, hence the core's strict parser, which also applies the
 * loopback policy of the mode. Both options' messages name "endpoint".
 * Return: 0, or -1 with errno = EINVAL, ENAMETOOLONG or EPERM.
 */
static int zmq_trace_parse_ep(struct tally_instance *inst, const char *ep,
			      struct tally_net_addr *out)
{
	char err[TALLY_NET_ERRLEN];

	if (tally_net_zmq_parse("endpoint", ep, TALLY_NET_LISTEN, out, err,
				sizeof(err)) == 0)
		return 0;
	tally_log(inst, LOG_ERR, "%s", err);
	return -1;
}

static bool zmq_trace_is_ipc(const struct tally_net_addr *a)
{
	return a->kind == TALLY_NET_PATH || a->kind == TALLY_NET_ABSTRACT;
}

/* The main endpoint, in @buf: the option, or the runtime dir's. */
static const char *zmq_trace_ep_name(const struct zmq_trace *zt, char *buf,
				     size_t size)
{
	if (zt->endpoint)
		return zt->endpoint;
	snprintf(buf, size, "ipc://%s/trace.sock", tally_runtime_dir());
	return buf;
}

/*
 * Whether the default endpoint, RUNDIR/trace.sock, is too long for a unix
 * socket (a long XDG_RUNTIME_DIR): not a configuration error, so
 * --check-config passes, but init fails with this one line, and
 * tallyd --user -- CMD runs the command with the rest of the collector.
 */
static bool zmq_trace_default_too_long(struct zmq_trace *zt,
				       struct tally_instance *inst)
{
	size_t len = strlen(tally_runtime_dir()) + sizeof("/trace.sock") - 1;
	size_t max = TALLY_NET_PATH_MAX;

	if (zt->endpoint || len <= max)
		return false;
	if (inst)
		tally_log(inst, LOG_ERR,
			  "endpoint ipc://%s/trace.sock: the runtime "
			  "directory's socket path is %zu bytes, a unix "
			  "socket allows at most %zu (is XDG_RUNTIME_DIR "
			  "long?): no trace input; set endpoint, or "
			  "TALLY_RUNTIME_DIR to a shorter directory",
			  tally_runtime_dir(), len, max);
	return true;
}

/* omnistat_endpoint: an ipc endpoint like the main one (parsed too). */
static int zmq_trace_parse_omnistat(struct tally_instance *inst, const char *ep,
				    struct tally_net_addr *out)
{
	if (zmq_trace_parse_ep(inst, ep, out) < 0)
		return -1;
	if (!zmq_trace_is_ipc(out)) {
		tally_log(inst, LOG_ERR,
			  "omnistat_endpoint %s: must be ipc:///path (where "
			  "Omnistat's tracer sends)",
			  ep);
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/*
 * --check-config and start-up: refuse what init or bind would refuse, or
 * would do otherwise than asked. No socket, no file: group names are
 * looked up (getgrnam), nothing is created.
 */
static int zmq_trace_check(struct tally_instance *inst, void *state)
{
	struct zmq_trace *zt = state;
	char buf[PATH_MAX + 32];
	struct tally_net_addr ep;
	int ret = 0;

	if (!zmq_trace_default_too_long(zt, NULL) &&
	    zmq_trace_parse_ep(inst, zmq_trace_ep_name(zt, buf, sizeof(buf)),
			       &ep) < 0)
		ret = -1;
	if (zt->omnistat_endpoint &&
	    zmq_trace_parse_omnistat(inst, zt->omnistat_endpoint, &ep) < 0)
		ret = -1;
	if (zt->group && !getgrnam(zt->group)) {
		tally_log(inst, LOG_ERR, "group %s: no such group", zt->group);
		ret = -1;
	}
	return ret;
}

/* Fill bound[zt->nbound++] from endpoint @name, parsed as @ep. */
static int zmq_trace_add_bound(struct zmq_trace *zt, const char *name,
			       const struct tally_net_addr *ep, bool optional)
{
	struct zmq_trace_bound *b = &zt->bound[zt->nbound];

	memset(b, 0, sizeof(*b));
	b->ep = strdup(name);
	if (!b->ep)
		return -1;
	b->optional = optional;
	b->addr = *ep;
	b->un.fd = -1;
	b->un.lock_fd = -1;
	b->listen_fd = -1;
	zt->nbound++;
	return 0;
}

/* The state's options, from the instance's. */
static void zmq_trace_state_opts(const struct zmq_trace *zt,
				 struct zmq_trace_state_opts *so)
{
	*so = (struct zmq_trace_state_opts){
		.local_host = zt->host,
		.max_open_spans = (uint32_t)zt->max_open_spans,
		.max_sources = (uint32_t)zt->max_sources,
		.abandon_ns = (int64_t)(zt->abandon_timeout * 1e9),
		.idle_ns = ZMQ_TRACE_IDLE_NS,
		.gone_grace_ns = ZMQ_TRACE_GONE_GRACE_NS,
		.max_counter_series = (uint32_t)zt->max_counter_series,
		.source_figures = zt->source_metrics,
	};
}

static int zmq_trace_init(struct tally_instance *inst, void *state)
{
	struct zmq_trace *zt = state;
	struct zmq_trace_state_opts so;
	char buf[PATH_MAX + 32];
	const char *name = zmq_trace_ep_name(zt, buf, sizeof(buf));
	struct tally_net_addr ep;

	zt->inst = inst;
	zt->gid = (gid_t)-1;
	if (zmq_trace_default_too_long(zt, inst)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* zmq_trace_check() has run: these fail only when it did not */
	if (zmq_trace_parse_ep(inst, name, &ep) < 0)
		return -1;
	if (zmq_trace_add_bound(zt, name, &ep, false) < 0)
		goto out_free;
	if (zt->omnistat_endpoint) {
		if (zmq_trace_parse_omnistat(inst, zt->omnistat_endpoint, &ep) <
		    0)
			goto out_inval;
		if (zmq_trace_add_bound(zt, zt->omnistat_endpoint, &ep, true) <
		    0)
			goto out_free;
	}

	if (zt->group) {
		struct group *gr = getgrnam(zt->group);

		if (!gr) {
			tally_log(inst, LOG_ERR, "group %s: no such group",
				  zt->group);
			goto out_inval;
		}
		zt->gid = gr->gr_gid;
	}

	if (gethostname(zt->host, sizeof(zt->host) - 1) < 0 || !zt->host[0])
		strcpy(zt->host, "localhost");
	zmq_trace_state_opts(zt, &so);
	zt->state = zmq_trace_state_new(&so);
	if (!zt->state)
		goto out_free;
	zt->sink.span = zmq_trace_sink_span;
	zt->sink.metric = zmq_trace_sink_metric;
	zt->sink.ctx = zt;
	zt->max_skew_ns = (int64_t)(zt->max_clock_skew * 1e9);
	return 0;

out_inval:
	errno = EINVAL;
out_free:
	while (zt->nbound) {
		free(zt->bound[--zt->nbound].ep);
		zt->bound[zt->nbound].ep = NULL;
	}
	return -1;
}

static void zmq_trace_event_free(struct event **ev)
{
	if (*ev)
		event_free(*ev);
	*ev = NULL;
}

/* Undo start: events, drain scheduler, socket, context, files, locks. */
static void zmq_trace_close(struct zmq_trace *zt)
{
	tally_net_drain_free(zt->drain);
	zt->drain = NULL;
	zmq_trace_event_free(&zt->check_ev);
	/* before libzmq closes them: their numbers are then reused */
	zmq_trace_count_refused(zt);
	for (unsigned i = 0; i < zt->nbound; i++) {
		if (zt->bound[i].listen_fd >= 0)
			tally_accept_unlimit(zt->bound[i].listen_fd);
		zt->bound[i].listen_fd = -1;
		zt->bound[i].refused = 0;
		zt->bound[i].bound = false;
	}
	if (zt->zsock) {
		zmq_close(zt->zsock);
		zt->zsock = NULL;
	}
	if (zt->zctx) {
		zmq_ctx_term(zt->zctx);
		zt->zctx = NULL;
	}
	/* the socket files, if still ours, and the locks */
	for (unsigned i = 0; i < zt->nbound; i++)
		tally_net_unix_close(&zt->bound[i].un);
}

/*
 * Say where we listen; for tcp://host:* the port the kernel chose. The
 * main endpoint is the one a wrapped command's clients must use
 * (tally/mode.h).
 */
static void zmq_trace_log_listening(struct zmq_trace *zt,
				    const struct zmq_trace_bound *b)
{
	char last[256];
	size_t len = sizeof(last);
	const char *ep = b->ep;

	if (!zmq_trace_is_ipc(&b->addr) &&
	    zmq_getsockopt(zt->zsock, ZMQ_LAST_ENDPOINT, last, &len) == 0 &&
	    len && len <= sizeof(last) && !last[len - 1])
		ep = last;
	tally_log(zt->inst, LOG_INFO, "listening on %s", ep);
	if (!b->optional)
		tally_instance_export_env(zt->inst, "TALLY_TRACE_ENDPOINT", ep);
}

/*
 * Bind endpoint @b: an ipc one on the socket the core reserves for it. A
 * failure is logged: for the main endpoint as an error (start fails), for
 * an optional one as one warning, and start goes on without it.
 * Return: 0, or -1 with errno.
 */
static int zmq_trace_bind(struct zmq_trace *zt, struct zmq_trace_bound *b)
{
	char why[TALLY_NET_ERRLEN] = "";
	int fd = -1, err;

	if (zmq_trace_is_ipc(&b->addr)) {
		if (tally_net_unix_reserve(
			    zt->inst, &b->addr,
			    tally_net_unix_mode(zt->group != NULL), zt->gid,
			    &b->un, why, sizeof(why)) < 0)
			goto out_log;
		fd = b->un.fd;
		if (zmq_setsockopt(zt->zsock, ZMQ_USE_FD, &fd, sizeof(fd)) < 0)
			goto out_zmq;
	}
	if (zmq_bind(zt->zsock, b->ep) < 0)
		goto out_zmq;
	b->bound = true;
	zmq_trace_log_listening(zt, b);
	if (fd < 0)
		return 0;
	/* libzmq owns it now; keep descriptors for the rest of tallyd */
	b->un.fd = -1;
	b->listen_fd = fd;
	if (tally_accept_limit(fd, 0) < 0)
		tally_log(zt->inst, LOG_WARNING,
			  "endpoint %s: no descriptor reserve: %s", b->ep,
			  strerror(errno));
	return 0;

out_zmq:
	snprintf(why, sizeof(why), "bind: %s", zmq_strerror(errno));
out_log:
	err = errno;
	if (b->optional)
		tally_log(zt->inst, LOG_WARNING,
			  "omnistat_endpoint %s: %s; receiving on %s only",
			  b->ep, why, zt->bound[0].ep);
	else
		tally_log(zt->inst, LOG_ERR, "endpoint %s: %s", b->ep, why);
	if (fd >= 0) {
		int none = -1;

		zmq_setsockopt(zt->zsock, ZMQ_USE_FD, &none, sizeof(none));
	}
	/* closes the socket libzmq did not take, removes our file */
	tally_net_unix_close(&b->un);
	errno = err;
	return -1;
}

static int zmq_trace_start(struct tally_instance *inst, void *state,
			   struct event_base *base)
{
	struct zmq_trace *zt = state;
	struct timeval check = tally_timeval(zt->check_interval);
	int hwm = (int)zt->rcvhwm, linger = 0, err;
	int64_t maxmsg = ZMQ_TRACE_MAX_MSG;
	evutil_socket_t zfd;
	size_t len = sizeof(zfd);

	zt->zctx = zmq_ctx_new();
	if (!zt->zctx)
		goto out_zmq;
	zt->zsock = zmq_socket(zt->zctx, ZMQ_PULL);
	if (!zt->zsock)
		goto out_zmq;
	/*
	 * A large receive HWM: a sender that exits while our pipe sits at
	 * its HWM can lose its last messages uncounted (libzmq #4660), so
	 * the pipe must have room to spare while we drain. It also bounds
	 * what each sender can make us hold; t3004 lost messages with 10000
	 * in 1 run of 8, none with 100000 (doc/plugins/zmq_trace.md).
	 */
	if (zmq_setsockopt(zt->zsock, ZMQ_RCVHWM, &hwm, sizeof(hwm)) < 0 ||
	    zmq_setsockopt(zt->zsock, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg)) <
		    0 ||
	    zmq_setsockopt(zt->zsock, ZMQ_LINGER, &linger, sizeof(linger)) < 0)
		goto out_zmq;
	if (zmq_trace_bind(zt, &zt->bound[0]) < 0)
		goto out_close;
	for (unsigned i = 1; i < zt->nbound; i++)
		(void)zmq_trace_bind(zt, &zt->bound[i]);
	if (zmq_getsockopt(zt->zsock, ZMQ_FD, &zfd, &len) < 0)
		goto out_zmq;

	zt->drain = tally_net_drain_new(
		inst, base, zfd, (unsigned)zt->max_messages_per_wakeup,
		zt->min_drain_interval, &zmq_trace_drain_ops, zt);
	if (!zt->drain) {
		tally_log(inst, LOG_ERR, "drain scheduler: %s",
			  strerror(errno));
		goto out_close;
	}
	zt->check_ev = event_new(base, -1, EV_PERSIST, zmq_trace_on_check, zt);
	if (!zt->check_ev) {
		errno = ENOMEM;
		goto out_close;
	}
	/* whatever queued since bind is read by the first drain */
	if (event_add(zt->check_ev, &check) < 0 ||
	    tally_net_drain_start(zt->drain) < 0)
		goto out_close;
	return 0;

out_zmq:
	tally_log(inst, LOG_ERR, "zmq setup for %s: %s", zt->bound[0].ep,
		  zmq_strerror(errno));
out_close:
	err = errno;
	zmq_trace_close(zt);
	errno = err;
	return -1;
}

/*
 * Test hook (t3012): while the file TALLY_TEST_ZMQ_TRACE_LOSE names
 * exists, a stop removes it, waits (at most 30 s) for a message to arrive
 * after its last drain, and leaves it unread for the close to discard: a
 * sender's end landing between the last drain and the close of a reload,
 * made to happen every time.
 */
static void zmq_trace_test_lose(struct zmq_trace *zt, zmq_pollitem_t *item)
{
	const char *arm = getenv("TALLY_TEST_ZMQ_TRACE_LOSE");

	if (!arm || unlink(arm) < 0)
		return;
	tally_log(zt->inst, LOG_INFO,
		  "test hook: holding the socket until a message arrives");
	if (zmq_poll(item, 1, 30000) == 1)
		tally_log(zt->inst, LOG_INFO,
			  "test hook: closing with a message unread");
}

static void zmq_trace_stop(struct tally_instance *inst, void *state)
{
	struct zmq_trace *zt = state;
	int64_t deadline =
		tally_monotonic_ns() + ZMQ_TRACE_STOP_MAX_MS * 1000000ll;
	zmq_pollitem_t item = { .events = ZMQ_POLLIN };
	struct tally_net_drain_stats ds = { 0 };
	uint64_t closed;
	unsigned n;

	if (!zt->zsock)
		return;
	if (zt->drain) {
		tally_net_drain_stop(zt->drain);
		tally_net_drain_get_stats(zt->drain, &ds);
	}
	event_del(zt->check_ev);
	/*
	 * Read what the last senders left (a job's processes exit just
	 * before the collector stops) until quiet or the deadline, which
	 * holds however fast messages keep coming.
	 */
	item.socket = zt->zsock;
	for (;;) {
		int64_t left = (deadline - tally_monotonic_ns()) / 1000000;

		if (left <= 0) {
			tally_log(inst, LOG_WARNING,
				  "stop: messages still arriving after %d ms "
				  "of draining: the rest is discarded",
				  ZMQ_TRACE_STOP_MAX_MS);
			break;
		}
		/*
		 * One batch per step, not per drain: the loop, and so every
		 * output, waits until the stop is over, and a trickle read
		 * in many small drains would overflow their queues.
		 */
		n = zmq_trace_drain(zt, ZMQ_TRACE_STOP_STEP, false);
		zt->stop_drains++;
		tally_count_event(inst, "drains", 1);
		if (zt->batch &&
		    tally_batch_count(zt->batch) >= ZMQ_TRACE_STOP_STEP)
			zmq_trace_flush(zt);
		if (n == ZMQ_TRACE_STOP_STEP)
			continue;
		/* quiet only if it stayed so for the whole wait */
		if (zmq_poll(&item, 1,
			     left < ZMQ_TRACE_STOP_QUIET_MS
				     ? (long)left
				     : ZMQ_TRACE_STOP_QUIET_MS) <= 0 &&
		    left >= ZMQ_TRACE_STOP_QUIET_MS)
			break;
	}
	zmq_trace_test_lose(zt, &item);
	zmq_trace_state_job_ended(zt->state, tally_command_end_ns());
	closed = zmq_trace_state_check(zt->state, tally_monotonic_ns(),
				       tally_now_ns(), true, &zt->sink);
	zmq_trace_flush(zt);
	tally_log(inst, LOG_INFO,
		  "stopped: %llu messages received, %llu malformed, %llu "
		  "dropped by clients, %llu spans still open, %llu closed as "
		  "abandoned at exit, %llu wake-ups, %llu drains",
		  (unsigned long long)zt->received,
		  (unsigned long long)zt->malformed,
		  (unsigned long long)zt->client_dropped,
		  (unsigned long long)zmq_trace_state_open_spans(zt->state),
		  (unsigned long long)closed, (unsigned long long)ds.wakeups,
		  (unsigned long long)(ds.drains + zt->stop_drains));
	zmq_trace_close(zt);
}

/*
 * Count @n open spans no instance keeps (for the core: their instance is
 * gone) and say so: ended through @inst's pipelines, or with no instance
 * left (@inst NULL), lost.
 */
static void zmq_trace_spans_gone(struct tally_instance *inst, uint64_t n)
{
	if (!n)
		return;
	tally_count_drop(NULL, "span_abandoned", n);
	if (inst)
		tally_log(inst, LOG_WARNING,
			  "reload: the instance is gone: ended its %llu open "
			  "spans as abandoned",
			  (unsigned long long)n);
	else
		tally_log(NULL, LOG_WARNING,
			  "zmq_trace: reload: %llu open spans lost, no "
			  "instance took them over",
			  (unsigned long long)n);
}

/*
 * A reload replaces the instance: hand the open spans to the successor,
 * which ends them when their process exits or their thread's stream shows
 * their ends were lost at the swap. Without a successor, end them now:
 * the outputs that saw them begin must not keep them open for ever.
 */
static void *zmq_trace_handoff(struct tally_instance *inst, void *state,
			       int next)
{
	struct zmq_trace *zt = state;
	struct zmq_trace_state *st = zt->state;
	uint64_t n;

	if (!st)
		return NULL;
	if (next) {
		if (zmq_trace_state_sources(st))
			tally_log(inst, LOG_INFO,
				  "reload: handing %llu open spans of %u "
				  "sources to the new instance",
				  (unsigned long long)
					  zmq_trace_state_open_spans(st),
				  zmq_trace_state_sources(st));
		zt->state = NULL;
		return st;
	}
	n = zmq_trace_state_abandon_all(st, tally_now_ns(), &zt->sink);
	zmq_trace_flush(zt);
	zmq_trace_spans_gone(inst, n);
	return NULL;
}

static int zmq_trace_adopt(struct tally_instance *inst, void *state,
			   void *handed)
{
	struct zmq_trace *zt = state;
	struct zmq_trace_state *st = handed;
	/* its counts so far were reported by the instance before */
	struct zmq_trace_counters seen = *zmq_trace_state_counters(st);
	struct zmq_trace_state_opts so;

	zmq_trace_state_opts(zt, &so);
	if (zmq_trace_state_retune(st, &so, &zt->sink) < 0)
		return -1;
	zt->reported = seen;
	zmq_trace_state_free(zt->state);
	zt->state = st;
	if (zmq_trace_state_sources(st))
		tally_log(inst, LOG_INFO,
			  "reload: took over %llu open spans of %u sources",
			  (unsigned long long)zmq_trace_state_open_spans(st),
			  zmq_trace_state_sources(st));
	return 0;
}

static void zmq_trace_discard(void *handed)
{
	struct zmq_trace_state *st = handed;

	zmq_trace_spans_gone(NULL, zmq_trace_state_open_spans(st));
	zmq_trace_state_free(st);
}

static void zmq_trace_fini(struct tally_instance *inst, void *state)
{
	struct zmq_trace *zt = state;

	zmq_trace_close(zt);
	tally_batch_unref(zt->batch);
	zmq_trace_state_free(zt->state);
	for (unsigned i = 0; i < zt->nbound; i++)
		free(zt->bound[i].ep);
}

static const struct tally_option zmq_trace_options[] = {
	TALLY_OPT_ENDPOINT("endpoint", struct zmq_trace, endpoint, NULL,
			   "ZeroMQ endpoint to bind, ipc:///path or "
			   "tcp://host:port (default: ipc://RUNTIME_DIR/"
			   "trace.sock, /run/tally/trace.sock for the system "
			   "collector)"),
	TALLY_OPT_ENDPOINT("omnistat_endpoint", struct zmq_trace,
			   omnistat_endpoint, NULL,
			   "also bind this ipc endpoint, where Omnistat's "
			   "tracer sends (ipc:///tmp/omnistat_trace), if it "
			   "can be taken: a socket of another user or one a "
			   "collector listens on is left alone, with one log "
			   "line, and the main endpoint still runs"),
	TALLY_OPT_STRING("group", struct zmq_trace, group, NULL,
			 "ipc: group that may send (socket file mode 0660); "
			 "default: everyone (0666) for the system collector, "
			 "the user only (0600) for a user collector"),
	TALLY_OPT_INT("rcvhwm", struct zmq_trace, rcvhwm, "100000", 0, INT_MAX,
		      "receive high-water mark, messages queued per sender "
		      "(0 = unlimited); large, so exiting senders lose "
		      "nothing"),
	TALLY_OPT_INT("max_messages_per_wakeup", struct zmq_trace,
		      max_messages_per_wakeup, "256", 1, 1000000,
		      "messages read per drain before yielding to the loop"),
	TALLY_OPT_DURATION("min_drain_interval", struct zmq_trace,
			   min_drain_interval, "0.005", 0, 1,
			   "seconds between drains unless one hit "
			   "max_messages_per_wakeup (coalesces wake-ups)"),
	TALLY_OPT_INT("max_open_spans", struct zmq_trace, max_open_spans,
		      "1024", 1, 1000000,
		      "open spans kept per (trace, process); beyond, the "
		      "oldest is closed as evicted"),
	TALLY_OPT_INT("max_sources", struct zmq_trace, max_sources, "65536", 1,
		      100000000,
		      "(trace, process) pairs tracked; beyond, the least "
		      "recently active one is forgotten (its open spans "
		      "end as evicted)"),
	TALLY_OPT_INT("max_counter_series", struct zmq_trace,
		      max_counter_series, "10000", 0, 100000000,
		      "application counter series kept (one per process, "
		      "counter and labels, trace protocol v2); beyond, the "
		      "snapshots of new series are dropped and counted as "
		      "counter_limit"),
	TALLY_OPT_BOOL("source_metrics", struct zmq_trace, source_metrics,
		       "false",
		       "emit per process, at every check: messages received, "
		       "client drops, last-seen time and what it announced "
		       "(tally_trace_source_*); off by default: one set of "
		       "series per process"),
	TALLY_OPT_DURATION("abandon_timeout", struct zmq_trace, abandon_timeout,
			   "3600", 0, 1e9,
			   "seconds of silence after which a process's open "
			   "spans are closed as abandoned (0 = never; dead "
			   "local processes are detected sooner)"),
	TALLY_OPT_DURATION("max_clock_skew", struct zmq_trace, max_clock_skew,
			   "300", 0, 1e9,
			   "seconds an event's timestamp may differ from this "
			   "host's clock; beyond, the message is dropped and "
			   "counted as clock_skew (0 = no bound)"),
	TALLY_OPT_DURATION("check_interval", struct zmq_trace, check_interval,
			   "5", 0.01, 3600,
			   "seconds between checks for dead processes and "
			   "silent sources"),
	TALLY_OPT_END
};

static const struct tally_input_ops zmq_trace_ops = {
	.check = zmq_trace_check,
	.init = zmq_trace_init,
	.start = zmq_trace_start,
	.stop = zmq_trace_stop,
	.fini = zmq_trace_fini,
	.handoff = zmq_trace_handoff,
	.adopt = zmq_trace_adopt,
	.discard = zmq_trace_discard,
};

TALLY_PLUGIN_INPUT(zmq_trace,
		   "application spans from libtally-trace and Omnistat's "
		   "tracer over ZeroMQ",
		   struct zmq_trace, zmq_trace_options, &zmq_trace_ops);
