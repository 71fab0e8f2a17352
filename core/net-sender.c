/* SPDX-License-Identifier: MIT */
/*
 * core/net-sender.c - a stream to a server that survives the server
 * (tally/net.h, struct tally_net_sender; "what sent means" is there)
 *
 * Bytes live in two places. `pending` holds every accepted byte not yet
 * sent, message after message; the connection's bufferevent gets copies of
 * its head, at most SENDER_CHUNK ahead of what the kernel took. Offsets are
 * absolute (bytes accepted since the sender was made):
 *
 *   base_off            written            queued               in
 *   |-- pending: written to the kernel --|-- copied, unsent --|-- waiting --|
 *
 * The output buffer's callback sees every byte the kernel takes (its
 * drain) and moves `written`; a message whose end `written` passes is sent
 * and leaves `pending`. When a connection ends, its output buffer (copies
 * only) goes with it, and the next connection starts from base_off: the
 * head message again from its start (or its last delimiter written), the
 * rest as if nothing had happened.
 *
 * A connection whose peer takes nothing of what waits for it for
 * stall_timeout seconds (the bufferevent's write timeout: armed while its
 * output holds bytes, restarted by every write that progresses) ends as
 * if the peer had closed it.
 *
 * States: WAIT (backoff timer) -> RESOLVING (a name: evdns) -> CONNECTING
 * (each address of the name in turn) -> UP -> (ends) -> WAIT. An attempt,
 * resolution included, is bounded by connect_timeout.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include <tally/log.h>
#include <tally/record.h>

#include "net-internal.h"

/* How far the connection's buffer runs ahead of the kernel. */
#define SENDER_CHUNK (64 * 1024)

enum sender_state {
	SENDER_WAIT,
	SENDER_RESOLVING,
	SENDER_CONNECTING,
	SENDER_UP,
};

/*
 * The argument of an evdns request. A cancelled request still calls back
 * (later, from the loop), so the sender may be gone by then: the ticket
 * outlives it, holds a reference on the evdns base until the callback,
 * and frees itself there.
 */
struct sender_ticket {
	struct tally_net_sender *s;
	struct event_base *base;
	struct evdns_getaddrinfo_request *req;
};

/* An accepted message: where it ends in the stream, what it carries. */
struct sender_msg {
	uint64_t end;
	uint64_t records;
};

struct tally_net_sender {
	struct tally_instance *inst;
	struct event_base *base;
	char *what;
	struct tally_net_addr addr;
	struct tally_net_sender_opts o;
	enum sender_state state;

	struct evdns_base *dns;
	struct sender_ticket *ticket;
	struct evutil_addrinfo *ai, *ai_next;
	int last_err;
	bool direct_left; /* a numeric or unix address not tried yet */

	struct bufferevent *bev;
	struct evbuffer_cb_entry *out_cb;
	struct event *retry_ev;
	struct event *timeout_ev;
	struct event *ready_ev;

	struct evbuffer *pending;
	uint64_t base_off, queued, written;
	struct sender_msg *ends; /* ring of the accepted, unsent messages */
	size_t ends_head, ends_len, ends_cap;
	uint64_t records_pending; /* sum of their records */

	char peer[300]; /* the connected peer's address, for messages */
	unsigned fails; /* consecutive attempts or connections that failed */
	int64_t up_ns;
	bool ever_up;
	bool want_ready;
	uint64_t rng;
	struct tally_net_sender_stats st;
};

static uint64_t sender_in(const struct tally_net_sender *s)
{
	return s->base_off + evbuffer_get_length(s->pending);
}

uint64_t tally_net_backoff_seed(const void *owner)
{
	uint64_t r = (uint64_t)tally_monotonic_ns() ^ (uint64_t)(uintptr_t)owner;

	return r ? r : 1;
}

double tally_net_backoff(double min, double max, unsigned fails,
			 uint64_t *rng)
{
	uint64_t x = *rng;
	double d = min;

	for (unsigned i = 1; i < fails && d < max; i++)
		d *= 2;
	if (d > max)
		d = max;
	/* xorshift64* */
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*rng = x;
	return d / 2 + (double)((x * 0x2545F4914F6CDD1Dull) >> 11) /
			       (double)(1ull << 53) * d / 2;
}

/* The n-th consecutive failure waits in [d/2, d], d = min * 2^(n-1). */
static double sender_backoff(struct tally_net_sender *s)
{
	return tally_net_backoff(s->o.backoff_min, s->o.backoff_max, s->fails,
				 &s->rng);
}

static int ends_push(struct tally_net_sender *s, uint64_t end,
		     uint64_t records)
{
	if (s->ends_len == s->ends_cap) {
		size_t cap = s->ends_cap ? s->ends_cap * 2 : 64;
		struct sender_msg *v = malloc(cap * sizeof(*v));

		if (!v)
			return -1;
		for (size_t i = 0; i < s->ends_len; i++)
			v[i] = s->ends[(s->ends_head + i) % s->ends_cap];
		free(s->ends);
		s->ends = v;
		s->ends_cap = cap;
		s->ends_head = 0;
	}
	s->ends[(s->ends_head + s->ends_len) % s->ends_cap] =
		(struct sender_msg){ .end = end, .records = records };
	s->ends_len++;
	s->records_pending += records;
	return 0;
}

/* Take back the message ends_push() just added (its bytes were not). */
static void ends_pop_last(struct tally_net_sender *s)
{
	s->ends_len--;
	s->records_pending -=
		s->ends[(s->ends_head + s->ends_len) % s->ends_cap].records;
}

static void sender_ready(evutil_socket_t fd, short what, void *arg)
{
	struct tally_net_sender *s = arg;

	if (s->o.ready)
		s->o.ready(s->o.arg);
}

/* ready() once a refused caller may send again: room, and a connection
 * if the sender holds while down. */
static void sender_maybe_ready(struct tally_net_sender *s)
{
	if (!s->want_ready ||
	    evbuffer_get_length(s->pending) > s->o.max_buffer / 2 ||
	    (s->o.hold_when_down && s->state != SENDER_UP))
		return;
	s->want_ready = false;
	/* from the loop: ready() may send, we are in a callback */
	event_active(s->ready_ev, EV_TIMEOUT, 0);
}

/* Messages the kernel took whole leave pending; ready() if room came. */
static void sender_retire(struct tally_net_sender *s)
{
	uint64_t sent = s->st.messages_sent;

	while (s->ends_len && s->ends[s->ends_head].end <= s->written) {
		const struct sender_msg *m = &s->ends[s->ends_head];

		evbuffer_drain(s->pending, m->end - s->base_off);
		s->base_off = m->end;
		s->records_pending -= m->records;
		s->st.records_sent += m->records;
		s->ends_head = (s->ends_head + 1) % s->ends_cap;
		s->ends_len--;
		s->st.messages_sent++;
	}
	if (s->st.messages_sent != sent && s->o.sent)
		s->o.sent(s->o.arg);
	sender_maybe_ready(s);
}

/* The kernel took n_deleted bytes of the connection's output. */
static void sender_out_cb(struct evbuffer *buf,
			  const struct evbuffer_cb_info *info, void *arg)
{
	struct tally_net_sender *s = arg;

	if (!info->n_deleted)
		return;
	s->written += info->n_deleted;
	s->st.bytes_sent += info->n_deleted;
	tally_count_event(s->inst, "bytes_sent", info->n_deleted);
	sender_retire(s);
}

/* Copy what waits into the connection's output, up to SENDER_CHUNK. */
static void sender_fill(struct tally_net_sender *s)
{
	struct evbuffer *out;
	size_t olen;
	uint64_t in;

	if (s->state != SENDER_UP)
		return;
	out = bufferevent_get_output(s->bev);
	olen = evbuffer_get_length(out);
	in = sender_in(s);
	while (s->queued < in && olen < SENDER_CHUNK) {
		size_t want = SENDER_CHUNK - olen, added = 0;
		struct evbuffer_iovec v[8];
		struct evbuffer_ptr pos;
		int nv;

		if (want > in - s->queued)
			want = (size_t)(in - s->queued);
		if (evbuffer_ptr_set(s->pending, &pos,
				     (size_t)(s->queued - s->base_off),
				     EVBUFFER_PTR_SET) < 0)
			break;
		nv = evbuffer_peek(s->pending, (ev_ssize_t)want, &pos, v, 8);
		for (int i = 0; i < nv && i < 8 && added < want; i++) {
			size_t len = v[i].iov_len;

			if (len > want - added)
				len = want - added;
			if (evbuffer_add(out, v[i].iov_base, len) < 0)
				break;
			added += len;
		}
		if (!added)
			break; /* ENOMEM: the next write callback retries */
		s->queued += added;
		olen += added;
	}
}

/* Drop the bufferevent (its output holds copies only). */
static void sender_drop_bev(struct tally_net_sender *s)
{
	if (!s->bev)
		return;
	if (s->out_cb)
		evbuffer_remove_cb_entry(bufferevent_get_output(s->bev),
					 s->out_cb);
	s->out_cb = NULL;
	bufferevent_free(s->bev);
	s->bev = NULL;
}

/*
 * A connection ended: the next one starts from the first byte not sent,
 * that is the start of the head message (written in part, if at all), or
 * just after the last delimiter of it that the kernel took.
 */
static void sender_rewind(struct tally_net_sender *s)
{
	uint64_t cut = s->base_off;

	if (s->written > s->base_off && s->o.delimiter) {
		size_t span = (size_t)(s->written - s->base_off), at = 0;
		struct evbuffer_iovec v[16];
		struct evbuffer_ptr pos;
		int nv;

		evbuffer_ptr_set(s->pending, &pos, 0, EVBUFFER_PTR_SET);
		while (at < span) {
			nv = evbuffer_peek(s->pending, (ev_ssize_t)(span - at),
					   &pos, v, 16);
			if (nv <= 0)
				break;
			for (int i = 0; i < nv && i < 16 && at < span; i++) {
				size_t len = v[i].iov_len;
				const char *d;

				if (len > span - at)
					len = span - at;
				d = memrchr(v[i].iov_base, s->o.delimiter, len);
				if (d)
					cut = s->base_off + at +
					      (size_t)(d -
						       (char *)v[i].iov_base) +
					      1;
				at += len;
			}
			if (evbuffer_ptr_set(s->pending, &pos, at,
					     EVBUFFER_PTR_SET) < 0)
				break;
		}
	}
	if (s->written > cut)
		s->st.bytes_resent += s->written - cut;
	if (cut > s->base_off) {
		evbuffer_drain(s->pending, (size_t)(cut - s->base_off));
		s->base_off = cut;
	}
	s->written = s->queued = s->base_off;
}

/* Try again after the backoff of one more failure; say so. */
static void sender_retry(struct tally_net_sender *s, const char *event,
			 const char *why)
{
	struct timeval tv;
	double delay;

	s->fails++;
	delay = sender_backoff(s);
	tally_log(s->inst, LOG_WARNING,
		  "%s: %s: %s; retrying in %.3g s (%zu bytes waiting)",
		  s->what, event, why, delay, evbuffer_get_length(s->pending));
	tv = tally_timeval(delay);
	s->state = SENDER_WAIT;
	s->st.backoff = delay;
	evtimer_add(s->retry_ev, &tv);
}

static void sender_cancel_resolve(struct tally_net_sender *s)
{
	struct sender_ticket *t = s->ticket;

	if (!t)
		return;
	s->ticket = NULL;
	t->s = NULL;
	if (t->req)
		evdns_getaddrinfo_cancel(t->req); /* calls back later */
}

/* An attempt reached no address of the server: wait, then again. */
static void sender_fail(struct tally_net_sender *s, const char *why)
{
	event_del(s->timeout_ev);
	sender_cancel_resolve(s);
	sender_drop_bev(s);
	if (s->ai)
		evutil_freeaddrinfo(s->ai);
	s->ai = s->ai_next = NULL;
	s->st.connect_failures++;
	tally_count_event(s->inst, "connect_failures", 1);
	sender_retry(s, "cannot connect", why);
}

static void sender_event_cb(struct bufferevent *bev, short what, void *arg);

static void sender_read_cb(struct bufferevent *bev, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);

	/* the protocols we speak have the server say nothing: ignore it */
	evbuffer_drain(in, evbuffer_get_length(in));
}

static void sender_write_cb(struct bufferevent *bev, void *arg)
{
	sender_fill(arg);
}

/* Start connecting to @sa. Return: 0, or -1 with s->last_err. */
static int sender_connect_to(struct tally_net_sender *s,
			     const struct sockaddr *sa, socklen_t len)
{
	int fd = tally_net_socket(sa->sa_family, SOCK_STREAM);

	if (fd < 0) {
		s->last_err = errno;
		return -1;
	}
	s->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (!s->bev) {
		evutil_closesocket(fd);
		s->last_err = ENOMEM;
		return -1;
	}
	bufferevent_setcb(s->bev, sender_read_cb, sender_write_cb,
			  sender_event_cb, s);
	s->state = SENDER_CONNECTING;
	if (bufferevent_socket_connect(s->bev, sa, (int)len) < 0) {
		s->last_err = errno ? errno : ECONNREFUSED;
		sender_drop_bev(s);
		return -1;
	}
	return 0;
}

/* The next address of the name, or a failed attempt when none is left. */
static void sender_connect_next(struct tally_net_sender *s)
{
	char why[160];

	if (s->addr.kind != TALLY_NET_NAME) {
		if (s->direct_left) {
			s->direct_left = false;
			if (sender_connect_to(
				    s, (const struct sockaddr *)&s->addr.sa,
				    s->addr.salen) == 0)
				return;
		}
	} else {
		while (s->ai_next) {
			struct evutil_addrinfo *ai = s->ai_next;

			s->ai_next = ai->ai_next;
			if ((ai->ai_family == AF_INET ||
			     ai->ai_family == AF_INET6) &&
			    sender_connect_to(s, ai->ai_addr,
					      (socklen_t)ai->ai_addrlen) == 0)
				return;
		}
	}
	snprintf(why, sizeof(why), "%s", strerror(s->last_err));
	sender_fail(s, why);
}

static void sender_keepalive(struct tally_net_sender *s, int fd)
{
	int on = 1, idle, intvl, cnt = 3;
	unsigned user;

	if (s->o.keepalive < 0 ||
	    (s->addr.kind != TALLY_NET_NAME && s->addr.kind != TALLY_NET_IPV4 &&
	     s->addr.kind != TALLY_NET_IPV6))
		return;
	idle = s->o.keepalive < 1 ? 1 : (int)s->o.keepalive;
	intvl = idle / 3 ? idle / 3 : 1;
	user = (unsigned)(idle + cnt * intvl) * 1000;
	/* best effort: a connection without them still works */
	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user, sizeof(user));
}

static void sender_up(struct tally_net_sender *s)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = (int)bufferevent_getfd(s->bev);

	event_del(s->timeout_ev);
	if (s->ai)
		evutil_freeaddrinfo(s->ai);
	s->ai = s->ai_next = NULL;
	s->state = SENDER_UP;
	s->up_ns = tally_monotonic_ns();
	s->st.connects++;
	tally_count_event(s->inst, "connects", 1);
	if (s->ever_up) {
		s->st.reconnects++;
		tally_count_event(s->inst, "reconnects", 1);
	}
	s->ever_up = true;
	sender_keepalive(s, fd);
	snprintf(s->peer, sizeof(s->peer), "?");
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
		tally_net_format_sockaddr((struct sockaddr *)&ss, sl, s->peer,
					  sizeof(s->peer));
	tally_log(s->inst, LOG_INFO, "%s: connected to %s", s->what, s->peer);
	s->out_cb = evbuffer_add_cb(bufferevent_get_output(s->bev),
				    sender_out_cb, s);
	bufferevent_setwatermark(s->bev, EV_WRITE, SENDER_CHUNK / 2, 0);
	if (s->o.stall_timeout > 0) {
		struct timeval tv = tally_timeval(s->o.stall_timeout);

		bufferevent_set_timeouts(s->bev, NULL, &tv);
	}
	bufferevent_enable(s->bev, EV_READ | EV_WRITE);
	sender_fill(s);
	sender_maybe_ready(s);
}

/* An established connection ended. */
static void sender_down(struct tally_net_sender *s, const char *why)
{
	int64_t lived = tally_monotonic_ns() - s->up_ns;

	s->st.disconnects++;
	sender_drop_bev(s);
	sender_rewind(s);
	/* a connection that lasted starts the backoff over */
	if ((double)lived >= s->o.healthy * 1e9)
		s->fails = 0;
	sender_retry(s, "connection lost", why);
}

static void sender_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct tally_net_sender *s = arg;
	int err = EVUTIL_SOCKET_ERROR();
	char why[512];

	if (what & BEV_EVENT_CONNECTED) {
		sender_up(s);
		return;
	}
	if (what & BEV_EVENT_EOF) {
		snprintf(why, sizeof(why), "closed by the server");
	} else if ((what & BEV_EVENT_TIMEOUT) && s->state == SENDER_UP) {
		/* the write timeout: the peer took nothing for that long */
		s->st.stalls++;
		tally_count_event(s->inst, "stalls", 1);
		snprintf(why, sizeof(why),
			 "stalled: %s took no byte for %.3g s (it reads "
			 "nothing)",
			 s->peer, s->o.stall_timeout);
	} else if (what & BEV_EVENT_TIMEOUT) {
		snprintf(why, sizeof(why), "timed out");
	} else {
		snprintf(why, sizeof(why), "%s",
			 strerror(err ? err : ECONNRESET));
	}
	if (s->state == SENDER_CONNECTING) {
		s->last_err = err ? err : ECONNREFUSED;
		sender_drop_bev(s);
		sender_connect_next(s);
	} else if (s->state == SENDER_UP) {
		sender_down(s, why);
	}
}

static void sender_resolved(int result, struct evutil_addrinfo *res, void *arg)
{
	struct sender_ticket *t = arg;
	struct tally_net_sender *s = t->s;
	char why[300];

	if (!s) { /* cancelled: the sender may be gone */
		if (res)
			evutil_freeaddrinfo(res);
		tally_net_dns_release(t->base);
		free(t);
		return;
	}
	s->ticket = NULL;
	tally_net_dns_release(t->base);
	free(t);
	if (result) {
		snprintf(why, sizeof(why), "cannot resolve %s: %s",
			 s->addr.host, evutil_gai_strerror(result));
		if (res)
			evutil_freeaddrinfo(res);
		sender_fail(s, why);
		return;
	}
	s->ai = s->ai_next = res;
	s->last_err = EADDRNOTAVAIL;
	sender_connect_next(s);
}

static void sender_attempt(evutil_socket_t fd, short what, void *arg)
{
	struct tally_net_sender *s = arg;
	struct evutil_addrinfo hints = { .ai_family = AF_UNSPEC,
					 .ai_socktype = SOCK_STREAM,
					 .ai_protocol = IPPROTO_TCP,
					 .ai_flags = EVUTIL_AI_ADDRCONFIG };
	struct timeval tv = tally_timeval(s->o.connect_timeout);
	struct evdns_getaddrinfo_request *req;
	struct sender_ticket *t;
	char port[8];

	s->st.backoff = 0;
	evtimer_add(s->timeout_ev, &tv);
	if (s->addr.kind != TALLY_NET_NAME) {
		s->direct_left = true;
		sender_connect_next(s);
		return;
	}
	t = calloc(1, sizeof(*t));
	if (!t || !tally_net_dns_acquire(s->base)) {
		free(t);
		sender_fail(s, "out of memory");
		return;
	}
	t->s = s;
	t->base = s->base;
	s->ticket = t;
	s->state = SENDER_RESOLVING;
	snprintf(port, sizeof(port), "%u", s->addr.port);
	/* a name in the hosts file calls back before this returns */
	req = evdns_getaddrinfo(s->dns, s->addr.host, port, &hints,
				sender_resolved, t);
	if (req)
		t->req = req;
}

static void sender_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct tally_net_sender *s = arg;
	char why[64];

	if (s->state != SENDER_RESOLVING && s->state != SENDER_CONNECTING)
		return;
	snprintf(why, sizeof(why), "timed out after %.3g s",
		 s->o.connect_timeout);
	sender_fail(s, why);
}

static void sender_defaults(struct tally_net_sender_opts *o)
{
	if (!o->max_buffer)
		o->max_buffer = 4u << 20;
	if (o->backoff_min <= 0)
		o->backoff_min = 0.1;
	if (o->backoff_max <= 0)
		o->backoff_max = 30;
	if (o->backoff_max < o->backoff_min)
		o->backoff_max = o->backoff_min;
	if (o->healthy <= 0)
		o->healthy = 1;
	if (o->connect_timeout <= 0)
		o->connect_timeout = 10;
	if (o->keepalive == 0)
		o->keepalive = 30;
	if (o->stall_timeout == 0)
		o->stall_timeout = 60;
}

struct tally_net_sender *
tally_net_sender_new(struct tally_instance *inst, struct event_base *base,
		     const char *what, const struct tally_net_addr *server,
		     const struct tally_net_sender_opts *o)
{
	struct tally_net_sender *s;
	static const struct timeval now = { 0, 0 };

	if ((server->flags & TALLY_NET_LISTEN) ||
	    server->socktype != SOCK_STREAM || server->kind == TALLY_NET_ANY) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		goto out_nomem;
	s->inst = inst;
	s->base = base;
	s->addr = *server;
	if (o)
		s->o = *o;
	sender_defaults(&s->o);
	s->rng = tally_net_backoff_seed(s);
	s->what = strdup(what ? what : "server");
	s->pending = evbuffer_new();
	s->retry_ev = evtimer_new(base, sender_attempt, s);
	s->timeout_ev = evtimer_new(base, sender_timeout, s);
	s->ready_ev = event_new(base, -1, 0, sender_ready, s);
	if (!s->what || !s->pending || !s->retry_ev || !s->timeout_ev ||
	    !s->ready_ev)
		goto out_free;
	if (server->kind == TALLY_NET_NAME) {
		s->dns = tally_net_dns_acquire(base);
		if (!s->dns)
			goto out_free;
	}
	s->state = SENDER_WAIT;
	evtimer_add(s->retry_ev, &now);
	return s;

out_free:
	tally_net_sender_free(s);
out_nomem:
	errno = ENOMEM;
	return NULL;
}

/* Accept @len more bytes? Else EAGAIN, and ready() once room is back. */
static int sender_room(struct tally_net_sender *s, size_t len,
		       uint64_t records)
{
	size_t buffered = evbuffer_get_length(s->pending);

	if ((buffered && buffered + len > s->o.max_buffer) ||
	    (s->o.hold_when_down && s->state != SENDER_UP)) {
		s->want_ready = true;
		errno = EAGAIN;
		return -1;
	}
	if (ends_push(s, sender_in(s) + len, records) < 0) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

int tally_net_sender_send(struct tally_net_sender *s, const void *data,
			  size_t len)
{
	if (!len)
		return 0;
	if (sender_room(s, len, 0) < 0)
		return -1;
	if (evbuffer_add(s->pending, data, len) < 0) {
		ends_pop_last(s);
		errno = ENOMEM;
		return -1;
	}
	sender_fill(s);
	return 0;
}

int tally_net_sender_send_buffer(struct tally_net_sender *s,
				 struct evbuffer *buf)
{
	return tally_net_sender_send_records(s, buf, 0);
}

int tally_net_sender_send_records(struct tally_net_sender *s,
				  struct evbuffer *buf, uint64_t records)
{
	size_t len = evbuffer_get_length(buf);

	if (!len)
		return 0;
	if (sender_room(s, len, records) < 0)
		return -1;
	if (evbuffer_add_buffer(s->pending, buf) < 0) {
		ends_pop_last(s);
		errno = ENOMEM;
		return -1;
	}
	sender_fill(s);
	return 0;
}

void tally_net_sender_get_stats(const struct tally_net_sender *s,
				struct tally_net_sender_stats *out)
{
	*out = s->st;
	out->buffered = evbuffer_get_length(s->pending);
	out->records_buffered = s->records_pending;
	out->connected = s->state == SENDER_UP;
}

void tally_net_sender_free(struct tally_net_sender *s)
{
	if (!s)
		return;
	sender_cancel_resolve(s);
	sender_drop_bev(s);
	if (s->ai)
		evutil_freeaddrinfo(s->ai);
	if (s->retry_ev)
		event_free(s->retry_ev);
	if (s->timeout_ev)
		event_free(s->timeout_ev);
	if (s->ready_ev)
		event_free(s->ready_ev);
	if (s->pending)
		evbuffer_free(s->pending);
	if (s->dns)
		tally_net_dns_release(s->base);
	free(s->ends);
	free(s->what);
	free(s);
}
