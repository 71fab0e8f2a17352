/* SPDX-License-Identifier: MIT */
/*
 * core/net-listen.c - sockets read in capped drains: datagrams and lines
 * of stream connections (tally/net.h, struct tally_net_listener)
 *
 * Every socket of a listener (its bound sockets and the connections they
 * accepted) sits in one epoll set, and the epoll fd is the one fd a
 * struct tally_net_drain watches: the cap of a drain holds for the whole
 * listener, however many connections send, and epoll's ready list serves
 * them in turn (a level-triggered fd reported goes to the back).
 * A connection is read once per drain; lines already read beyond the cap
 * stay in its buffer for the next drain (ops->pending says so).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include <tally/log.h>
#include <tally/record.h>

#include "net-internal.h"

#define NET_LISTEN_MAX_FDS 8
/* Datagrams per recvmmsg(2) call. */
#define NET_DGRAM_BATCH 8
/* Bytes read from a connection at a time. */
#define NET_CONN_READ 65536
/* How long accepting pauses after accept() failed for lack of resources. */
#define NET_ACCEPT_PAUSE_NS (500 * 1000000ll)

enum net_src_type { NET_SRC_LISTEN, NET_SRC_DGRAM, NET_SRC_CONN };

struct net_src {
	enum net_src_type type;
	int fd;
	uint32_t ovfl; /* datagrams: SO_RXQ_OVFL's count last seen */
};

/* Room for the SO_RXQ_OVFL control message of one datagram. */
union net_ctl {
	char buf[CMSG_SPACE(sizeof(uint32_t))];
	struct cmsghdr align;
};

struct net_conn {
	struct net_src src; /* first: epoll data points here */
	struct net_conn *prev, *next;
	char *buf;
	size_t off, len, cap; /* unread bytes: buf[off, off + len) */
	bool skipping;	      /* in a line too long: drop to its end */
	bool has_lines;	      /* complete lines wait in buf */
	int64_t last_ns;      /* CLOCK_MONOTONIC of the last byte */
};

struct tally_net_listener {
	struct tally_instance *inst;
	const struct tally_net_listener_ops *ops;
	void *arg;
	struct tally_net_listener_opts o;
	struct net_src socks[NET_LISTEN_MAX_FDS];
	size_t nsocks;
	bool stream;
	struct tally_net_unix un;
	int ep;
	struct tally_net_drain *drain;
	struct net_conn *conns;
	size_t nconns;
	bool accepting; /* the listening sockets are in the epoll set */
	bool paused;	/* accept() failed: not accepting until pause_ns */
	int64_t pause_ns;
	struct event *tick; /* idle connections, end of a pause */
	struct mmsghdr mm[NET_DGRAM_BATCH];
	struct iovec iov[NET_DGRAM_BATCH];
	union net_ctl ctl[NET_DGRAM_BATCH];
	char *dbuf;
	unsigned delivered; /* items handed to ops->item by this drain */
	uint16_t port;
	struct tally_net_listener_stats st;
};

static void listener_deliver(struct tally_net_listener *l, const char *data,
			     size_t len)
{
	l->delivered++;
	l->ops->item(l->arg, data, len);
}

static void listener_oversize(struct tally_net_listener *l)
{
	l->st.oversize++;
	tally_count_drop(l->inst, "oversize", 1);
	tally_log(l->inst, LOG_WARNING,
		  "dropped an item longer than %zu bytes",
		  l->o.max_item);
}

static int listener_epoll(struct tally_net_listener *l, int op,
			  struct net_src *src)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = src };

	return epoll_ctl(l->ep, op, src->fd, &ev);
}

/* Accept connections only below max_connections and outside a pause. */
static void listener_accepting(struct tally_net_listener *l)
{
	bool on = l->stream && !l->paused && l->nconns < l->o.max_connections;

	if (on == l->accepting)
		return;
	for (size_t i = 0; i < l->nsocks; i++)
		listener_epoll(l, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL,
			       &l->socks[i]);
	l->accepting = on;
}

/* Arm the tick for the next thing it has to do, if any. */
static void listener_arm(struct tally_net_listener *l)
{
	double s = 0;
	struct timeval tv;

	if (l->paused)
		s = (double)NET_ACCEPT_PAUSE_NS / 1e9;
	else if (l->nconns && l->o.idle_timeout > 0)
		s = l->o.idle_timeout / 4;
	if (s <= 0) {
		event_del(l->tick);
		return;
	}
	if (evtimer_pending(l->tick, NULL))
		return;
	tv = tally_timeval(s);
	evtimer_add(l->tick, &tv);
}

static void conn_close(struct tally_net_listener *l, struct net_conn *c)
{
	epoll_ctl(l->ep, EPOLL_CTL_DEL, c->src.fd, NULL);
	close(c->src.fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		l->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c->buf);
	free(c);
	l->nconns--;
	l->st.open = l->nconns;
	listener_accepting(l);
}

/*
 * Hand complete lines of @c to the user, at most @budget.
 * Return: the lines taken (delivered or dropped as too long).
 */
static unsigned conn_lines(struct tally_net_listener *l, struct net_conn *c,
			   unsigned budget)
{
	unsigned n = 0;

	while (n < budget) {
		char *p = c->buf + c->off;
		char *nl = memchr(p, '\n', c->len);
		size_t ll;

		if (!nl) {
			if (c->len > l->o.max_item) {
				/* no end in sight: drop it, and its rest */
				if (!c->skipping)
					listener_oversize(l);
				c->skipping = true;
				c->off = c->len = 0;
			}
			break;
		}
		ll = (size_t)(nl - p);
		c->off += ll + 1;
		c->len -= ll + 1;
		n++;
		if (c->skipping) {
			c->skipping = false; /* the end of a dropped line */
			continue;
		}
		if (ll && p[ll - 1] == '\r')
			ll--;
		if (ll > l->o.max_item)
			listener_oversize(l);
		else if (ll)
			listener_deliver(l, p, ll);
	}
	c->has_lines = c->len && memchr(c->buf + c->off, '\n', c->len);
	if (!c->len)
		c->off = 0;
	return n;
}

/* Room for one read at the end of @c's buffer. */
static int conn_room(struct tally_net_listener *l, struct net_conn *c)
{
	size_t want = c->len + NET_CONN_READ;
	char *nb;

	if (c->off && c->off + c->len + NET_CONN_READ > c->cap) {
		memmove(c->buf, c->buf + c->off, c->len);
		c->off = 0;
	}
	if (c->cap >= want)
		return 0;
	nb = realloc(c->buf, want);
	if (!nb)
		return -1;
	c->buf = nb;
	c->cap = want;
	return 0;
}

/* Read @c once and take its lines. Return: the lines taken. */
static unsigned conn_read(struct tally_net_listener *l, struct net_conn *c,
			  unsigned budget)
{
	unsigned n;
	ssize_t r;

	if (c->has_lines)
		return conn_lines(l, c, budget);
	if (conn_room(l, c) < 0) {
		tally_count_drop(l->inst, "nomem", 1);
		conn_close(l, c);
		return 0;
	}
	r = read(c->src.fd, c->buf + c->off + c->len, c->cap - c->off - c->len);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (r > 0) {
		c->len += (size_t)r;
		c->last_ns = tally_monotonic_ns();
		return conn_lines(l, c, budget);
	}
	if (r < 0) {
		/* reset: an unfinished line is not a line */
		if (c->len && !c->skipping)
			tally_count_drop(l->inst, "truncated", 1);
		conn_close(l, c);
		return 0;
	}
	/* end of the connection: its last line may lack a newline */
	n = conn_lines(l, c, budget);
	if (c->has_lines)
		return n; /* more lines first, the end next drain */
	if (c->len && !c->skipping) {
		if (c->len > l->o.max_item)
			listener_oversize(l);
		else
			listener_deliver(l, c->buf + c->off, c->len);
		n++;
	}
	conn_close(l, c);
	return n;
}

static void listener_accept(struct tally_net_listener *l, int fd)
{
	for (int i = 0; i < 16 && l->accepting; i++) {
		struct net_conn *c;
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (cfd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if (errno == ECONNABORTED || errno == EINTR ||
			    errno == EPROTO)
				continue;
			/*
			 * Out of descriptors or memory: the connection stays
			 * in the backlog and the socket readable, so pause
			 * rather than spin.
			 */
			tally_count_drop(l->inst, "accept_error", 1);
			tally_log(l->inst, LOG_WARNING,
				  "accept: %s: accepting no connections for "
				  "%lld ms (%zu open)",
				  strerror(errno),
				  NET_ACCEPT_PAUSE_NS / 1000000, l->nconns);
			l->paused = true;
			l->pause_ns =
				tally_monotonic_ns() + NET_ACCEPT_PAUSE_NS;
			listener_accepting(l);
			event_del(l->tick); /* rearmed for the pause's end */
			listener_arm(l);
			return;
		}
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(cfd);
			tally_count_drop(l->inst, "nomem", 1);
			return;
		}
		c->src.type = NET_SRC_CONN;
		c->src.fd = cfd;
		c->last_ns = tally_monotonic_ns();
		if (listener_epoll(l, EPOLL_CTL_ADD, &c->src) < 0) {
			close(cfd);
			free(c);
			return;
		}
		c->next = l->conns;
		if (l->conns)
			l->conns->prev = c;
		l->conns = c;
		l->nconns++;
		l->st.accepted++;
		l->st.open = l->nconns;
		listener_accepting(l);
		listener_arm(l);
	}
}

/*
 * The kernel's drop count of @src as of datagram @i (SO_RXQ_OVFL: the
 * socket's drops when the datagram was queued, a wrapping 32-bit count):
 * count what it grew by since the last one seen.
 */
static void dgram_overflow(struct tally_net_listener *l, struct net_src *src,
			   unsigned i)
{
	struct msghdr *h = &l->mm[i].msg_hdr;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c)) {
		uint32_t now, grew;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SO_RXQ_OVFL ||
		    c->cmsg_len < CMSG_LEN(sizeof(now)))
			continue;
		memcpy(&now, CMSG_DATA(c), sizeof(now));
		grew = now - src->ovfl;
		src->ovfl = now;
		if (grew) {
			l->st.kernel_drops += grew;
			tally_count_drop(l->inst, "kernel_overflow", grew);
		}
	}
}

/* Read datagrams of @src, at most @budget. Return: how many. */
static unsigned dgram_read(struct tally_net_listener *l, struct net_src *src,
			   unsigned budget)
{
	unsigned n = 0;

	while (n < budget) {
		unsigned want = budget - n < NET_DGRAM_BATCH ? budget - n
							     : NET_DGRAM_BATCH;
		int r;

		for (unsigned i = 0; i < want; i++) {
			l->mm[i].msg_hdr.msg_flags = 0;
			l->mm[i].msg_hdr.msg_control = l->ctl[i].buf;
			l->mm[i].msg_hdr.msg_controllen = sizeof(l->ctl[i].buf);
			l->mm[i].msg_len = 0;
		}
		r = recvmmsg(src->fd, l->mm, want, MSG_DONTWAIT, NULL);
		if (r <= 0)
			break;
		for (int i = 0; i < r; i++) {
			size_t len = l->mm[i].msg_len;

			dgram_overflow(l, src, (unsigned)i);

			if ((l->mm[i].msg_hdr.msg_flags & MSG_TRUNC) ||
			    len > l->o.max_item)
				listener_oversize(l);
			else
				listener_deliver(l, l->iov[i].iov_base, len);
		}
		n += (unsigned)r;
		if ((unsigned)r < want)
			break;
	}
	return n;
}

static unsigned listener_drain(void *arg, unsigned max)
{
	struct tally_net_listener *l = arg;
	struct epoll_event evs[32];
	unsigned n = 0;
	int k;

	l->delivered = 0;
	/* lines a connection already holds go first */
	for (struct net_conn *c = l->conns, *next; c && n < max; c = next) {
		next = c->next;
		if (c->has_lines)
			n += conn_lines(l, c, max - n);
	}
	k = n < max ? epoll_wait(l->ep, evs, 32, 0) : 0;
	for (int i = 0; i < k && n < max; i++) {
		struct net_src *src = evs[i].data.ptr;

		switch (src->type) {
		case NET_SRC_LISTEN:
			listener_accept(l, src->fd);
			break;
		case NET_SRC_DGRAM:
			n += dgram_read(l, src, max - n);
			break;
		case NET_SRC_CONN:
			n += conn_read(l, (struct net_conn *)src, max - n);
			break;
		}
	}
	if (l->delivered && l->ops->drained)
		l->ops->drained(l->arg, l->delivered);
	return n;
}

static bool listener_pending(void *arg)
{
	struct tally_net_listener *l = arg;

	for (struct net_conn *c = l->conns; c; c = c->next)
		if (c->has_lines)
			return true;
	return false;
}

static const struct tally_net_drain_ops listener_drain_ops = {
	.drain = listener_drain,
	.pending = listener_pending,
};

static void listener_tick(evutil_socket_t fd, short what, void *arg)
{
	struct tally_net_listener *l = arg;
	int64_t now = tally_monotonic_ns();
	int64_t idle = (int64_t)(l->o.idle_timeout * 1e9);

	if (l->paused && now >= l->pause_ns) {
		l->paused = false;
		listener_accepting(l);
	}
	for (struct net_conn *c = l->conns, *next; c && idle > 0; c = next) {
		next = c->next;
		if (now - c->last_ns < idle || c->has_lines)
			continue;
		l->st.idle_closed++;
		tally_count_event(l->inst, "idle_closed", 1);
		if (c->len && !c->skipping)
			tally_count_drop(l->inst, "truncated", 1);
		conn_close(l, c);
	}
	listener_arm(l);
}

/*
 * Give @fd the receive buffer asked for: SO_RCVBUF is capped at
 * net.core.rmem_max, SO_RCVBUFFORCE is not but needs CAP_NET_ADMIN. The
 * kernel doubles what it is asked (its bookkeeping), and getsockopt() says
 * the doubled size. Return: that size.
 */
static size_t listener_rcvbuf(struct tally_net_listener *l, const char *what,
			      int fd)
{
	size_t want = l->o.rcvbuf < INT_MAX / 2 ? l->o.rcvbuf : INT_MAX / 2;
	int v = (int)want, got = 0;
	socklen_t sl = sizeof(got);

	if (want) {
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
		if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &sl) == 0 &&
		    (size_t)got < 2 * want)
			setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v,
				   sizeof(v));
	}
	sl = sizeof(got);
	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &sl) < 0)
		return 0;
	if (want && (size_t)got < 2 * want && fd == l->socks[0].fd)
		tally_log(l->inst, LOG_NOTICE,
			  "%s: receive buffer of %d bytes, not the %zu asked: "
			  "net.core.rmem_max caps it (raise it with sysctl, or "
			  "start tallyd as root)",
			  what, got / 2, want);
	return (size_t)got;
}

static void listener_defaults(struct tally_net_listener_opts *o)
{
	if (!o->max_items)
		o->max_items = 256;
	if (!o->max_item)
		o->max_item = 65535;
	if (!o->max_connections)
		o->max_connections = 64;
	if (!o->unix_mode)
		o->unix_mode = tally_net_unix_mode(o->unix_group);
}

struct tally_net_listener *
tally_net_listener_new(struct tally_instance *inst, struct event_base *base,
		       const char *what, const struct tally_net_addr *a,
		       const struct tally_net_listener_opts *o,
		       const struct tally_net_listener_ops *ops, void *arg)
{
	struct tally_net_listener *l;
	int fds[NET_LISTEN_MAX_FDS], n, err;

	if (!ops || !ops->item || !(a->flags & TALLY_NET_LISTEN)) {
		errno = EINVAL;
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		goto out_nomem;
	l->inst = inst;
	l->ops = ops;
	l->arg = arg;
	if (o)
		l->o = *o;
	listener_defaults(&l->o);
	l->stream = a->socktype == SOCK_STREAM;
	l->un.fd = l->un.lock_fd = -1;
	l->ep = -1;
	l->ep = epoll_create1(EPOLL_CLOEXEC);
	if (l->ep < 0)
		goto out_err;
	if (!l->stream) {
		l->dbuf = malloc(NET_DGRAM_BATCH * (l->o.max_item + 1));
		if (!l->dbuf)
			goto out_nomem;
		for (unsigned i = 0; i < NET_DGRAM_BATCH; i++) {
			l->iov[i].iov_base = l->dbuf + i * (l->o.max_item + 1);
			/* a byte more: one that fills it is too long */
			l->iov[i].iov_len = l->o.max_item + 1;
			l->mm[i].msg_hdr.msg_iov = &l->iov[i];
			l->mm[i].msg_hdr.msg_iovlen = 1;
		}
	}
	if (a->kind == TALLY_NET_PATH || a->kind == TALLY_NET_ABSTRACT) {
		if (tally_net_unix_bind(inst, what, a, l->o.unix_mode,
					l->o.unix_group ? l->o.unix_gid
							: (gid_t)-1,
					&l->un) < 0)
			goto out_err;
		fds[0] = l->un.fd;
		l->un.fd = -1;
		n = 1;
	} else {
		n = tally_net_bind(inst, what, a, fds, NET_LISTEN_MAX_FDS,
				   &l->un);
		if (n < 0)
			goto out_err;
	}
	for (int i = 0; i < n; i++) {
		l->socks[i].type = l->stream ? NET_SRC_LISTEN : NET_SRC_DGRAM;
		l->socks[i].fd = fds[i];
	}
	l->nsocks = (size_t)n;
	for (int i = 0; i < n; i++) {
		static const int on = 1;
		size_t rb = listener_rcvbuf(l, what, fds[i]);

		if (i == 0)
			l->st.rcvbuf = rb;
		/* the kernel's drops, counted: see dgram_overflow() */
		if (!l->stream)
			setsockopt(fds[i], SOL_SOCKET, SO_RXQ_OVFL, &on,
				   sizeof(on));
	}
	if (a->kind != TALLY_NET_PATH && a->kind != TALLY_NET_ABSTRACT) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);

		if (getsockname(fds[0], (struct sockaddr *)&ss, &sl) == 0)
			l->port = ntohs(
				ss.ss_family == AF_INET
					? ((struct sockaddr_in *)&ss)->sin_port
					: ((struct sockaddr_in6 *)&ss)
						  ->sin6_port);
	}
	if (l->stream) {
		listener_accepting(l);
	} else {
		for (size_t i = 0; i < l->nsocks; i++)
			if (listener_epoll(l, EPOLL_CTL_ADD, &l->socks[i]) < 0)
				goto out_err;
	}
	l->tick = evtimer_new(base, listener_tick, l);
	l->drain =
		tally_net_drain_new(inst, base, l->ep, l->o.max_items,
				    l->o.min_interval, &listener_drain_ops, l);
	if (!l->tick || !l->drain || tally_net_drain_start(l->drain) < 0)
		goto out_err;
	return l;

out_nomem:
	errno = ENOMEM;
out_err:
	err = errno;
	tally_net_listener_free(l);
	errno = err;
	return NULL;
}

uint16_t tally_net_listener_port(const struct tally_net_listener *l)
{
	return l->port;
}

unsigned tally_net_listener_read_now(struct tally_net_listener *l, unsigned max)
{
	listener_drain(l, max);
	return l->delivered;
}

void tally_net_listener_get_stats(const struct tally_net_listener *l,
				  struct tally_net_listener_stats *out)
{
	*out = l->st;
	if (l->drain)
		tally_net_drain_get_stats(l->drain, &out->drain);
}

void tally_net_listener_free(struct tally_net_listener *l)
{
	if (!l)
		return;
	tally_net_drain_free(l->drain);
	if (l->tick)
		event_free(l->tick);
	while (l->conns) {
		struct net_conn *c = l->conns;

		if (c->len && !c->skipping)
			tally_count_drop(l->inst, "truncated", 1);
		conn_close(l, c);
	}
	for (size_t i = 0; i < l->nsocks; i++)
		close(l->socks[i].fd);
	if (l->ep >= 0)
		close(l->ep);
	tally_net_unix_close(&l->un);
	free(l->dbuf);
	free(l);
}
