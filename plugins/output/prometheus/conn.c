/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/prometheus/conn.c - connection bounds of the HTTP server
 * (see conn.h for what and why)
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include <tally/log.h>
#include <tally/plugin.h>
#include <tally/record.h>

#include "conn.h"

/* Longest time between two looks at the open connections (reaped, timed
 * out); shorter when a timeout is shorter, so it is kept to within 1/4. */
#define PROM_CONN_POLL_MS     1000
#define PROM_CONN_POLL_MIN_MS 50

/* How long a connection that has sent nothing is safe from being closed
 * to make room (at most idle_timeout), and how often the closing is
 * retried while such connections keep the count above max. */
#define PROM_CONN_GRACE_MS 1000
#define PROM_CONN_RETRY_MS 100

#define NO_NUL UINT64_MAX

enum conn_state {
	CONN_IDLE,     /* no request byte pending */
	CONN_ARRIVING, /* a request is arriving */
	CONN_REPLYING, /* a reply is being written */
	CONN_CLOSING,  /* shut down by us; evhttp has yet to free it */
};

struct prom_conn {
	struct prom_conn *next;
	struct bufferevent *bev;      /* referenced: valid until we unref */
	struct evbuffer_cb_entry *in; /* callbacks on its buffers */
	struct evbuffer_cb_entry *out;
	enum conn_state state;
	int64_t since;	   /* monotonic ns the state's clock starts at */
	int64_t waiting;   /* since when it waits for a complete request */
	uint64_t received; /* request bytes read from the socket, in all */
	uint64_t consumed; /* of which evhttp has parsed (drained) */
	uint64_t nul_at;   /* offset in that stream of a NUL byte, or NO_NUL */
};

struct prom_conns {
	struct prom_conns *next_all; /* every output's, for accept errors */
	struct evhttp *http;
	struct tally_instance *inst;
	struct evconnlistener **lev;
	size_t nlev;
	struct prom_conn *conns;
	size_t n;     /* in the list, closing ones too (their fds are open) */
	size_t nopen; /* not closing */
	size_t max;
	int64_t idle_ns, request_ns;
	int64_t grace_ns; /* an idle connection is not closed for room before */
	struct bufferevent *(*new_bev)(struct event_base *, void *);
	void *bev_arg;
	struct timeval poll_tv;
	struct event *poll;    /* while connections are open */
	struct event *balance; /* closes connections beyond max */
	struct event *resume;  /* end of an accept pause */
	bool paused;	       /* accept() failed recently */
};

/*
 * The error callback of a listener gets the listener's user data, which
 * evhttp owns (its struct evhttp): this list finds the output from it.
 * Loop thread only.
 */
static struct prom_conns *prom_conns_all;

/* Accept unless paused after an error. */
static void conns_listen_update(struct prom_conns *c)
{
	for (size_t i = 0; i < c->nlev; i++)
		if (c->paused)
			evconnlistener_disable(c->lev[i]);
		else
			evconnlistener_enable(c->lev[i]);
}

/* Drop our reference: the last one, so the socket closes. */
static void conn_free(struct prom_conn *k)
{
	evbuffer_remove_cb_entry(bufferevent_get_input(k->bev), k->in);
	evbuffer_remove_cb_entry(bufferevent_get_output(k->bev), k->out);
	bufferevent_decref(k->bev);
	free(k);
}

/* evhttp let go of the bufferevent: bufferevent_free() cleared its
 * callbacks, and evhttp always has an event callback while it uses it. */
static bool conn_released(struct prom_conn *k)
{
	bufferevent_data_cb r, w;
	bufferevent_event_cb e;
	void *arg;

	bufferevent_getcb(k->bev, &r, &w, &e, &arg);
	return !r && !w && !e;
}

/*
 * Close @k: shutting the socket down makes evhttp read an end of file and
 * free the connection itself. What a reply had left to send is dropped
 * now, so the memory it refers to (a shared page) is released at once:
 * the bufferevent keeps its output buffer's start frozen against other
 * drainers; nothing else writes to it on this thread meanwhile.
 */
static void conn_close(struct prom_conns *c, struct prom_conn *k)
{
	static const struct timeval soon = { 0, 0 };
	struct evbuffer *out = bufferevent_get_output(k->bev);

	shutdown(bufferevent_getfd(k->bev), SHUT_RDWR);
	if (k->state == CONN_REPLYING) {
		evbuffer_unfreeze(out, 1);
		evbuffer_drain(out, evbuffer_get_length(out));
		evbuffer_freeze(out, 1);
	}
	k->state = CONN_CLOSING;
	c->nopen--;
	/* evhttp frees it in the next turn of the loop: reap it then, so its
	 * descriptor is not kept until the next poll */
	if (!evtimer_pending(c->balance, NULL))
		evtimer_add(c->balance, &soon);
}

/*
 * Free the connections evhttp is done with, and close those idle or with a
 * request arriving for longer than their timeout.
 */
static void conns_reap(struct prom_conns *c, int64_t now)
{
	struct prom_conn **pp = &c->conns;

	while (*pp) {
		struct prom_conn *k = *pp;

		if (conn_released(k)) {
			*pp = k->next;
			if (k->state != CONN_CLOSING)
				c->nopen--;
			conn_free(k);
			c->n--;
			continue;
		}
		if (k->state == CONN_IDLE && now - k->since > c->idle_ns) {
			tally_count_event(c->inst, "idle_timeout", 1);
			conn_close(c, k);
		} else if (k->state == CONN_ARRIVING &&
			   now - k->since > c->request_ns) {
			tally_count_drop(c->inst, "request_timeout", 1);
			tally_log(c->inst, LOG_WARNING,
				  "a request still incomplete %.1f s after its "
				  "first byte (request_timeout): closing its "
				  "connection",
				  (double)c->request_ns / 1e9);
			conn_close(c, k);
		}
		pp = &k->next;
	}
	if (!c->n)
		event_del(c->poll);
}

static void conns_poll(evutil_socket_t fd, short what, void *arg)
{
	conns_reap(arg, tally_monotonic_ns());
}

/*
 * Order of closing beyond max_connections: first those waiting for a
 * complete request (idle or arriving) longest, then the replies in
 * progress longest.
 */
static int conn_victim_cmp(const void *a, const void *b)
{
	const struct prom_conn *x = *(struct prom_conn *const *)a;
	const struct prom_conn *y = *(struct prom_conn *const *)b;
	bool rx = x->state == CONN_REPLYING, ry = y->state == CONN_REPLYING;
	int64_t tx = rx ? x->since : x->waiting,
		ty = ry ? y->since : y->waiting;

	if (rx != ry)
		return rx ? 1 : -1;
	return tx < ty ? -1 : tx > ty;
}

/*
 * Close the connections beyond max. A connection that has sent nothing
 * yet is left alone for its first PROM_CONN_GRACE_MS: a scrape accepted
 * amid a burst of slow-loris reconnections, on a loaded machine, may send
 * its request a moment after its connection is accepted, and closing the
 * idle ones by age alone closed it before (curl: "Empty reply from
 * server"). Until they are judged, they keep the count above max, and no
 * reply in progress is closed for room.
 */
static void conns_balance(evutil_socket_t fd, short what, void *arg)
{
	static const struct timeval later = { 0, PROM_CONN_RETRY_MS * 1000 };
	struct prom_conns *c = arg;
	int64_t now = tally_monotonic_ns();
	struct prom_conn **v, *k;
	size_t nv = 0, over, closed = 0, young = 0;

	conns_reap(c, now);
	if (c->nopen <= c->max)
		return;
	over = c->nopen - c->max;
	v = malloc(c->nopen * sizeof(*v));
	if (!v) {
		tally_count_drop(c->inst, "nomem", 1);
		goto out; /* try again */
	}
	for (k = c->conns; k; k = k->next) {
		if (k->state == CONN_CLOSING)
			continue;
		if (k->state == CONN_IDLE && now - k->waiting < c->grace_ns)
			young++;
		else
			v[nv++] = k;
	}
	qsort(v, nv, sizeof(*v), conn_victim_cmp);
	for (; closed < over && closed < nv; closed++) {
		k = v[closed];
		/* a reply goes only for room that the young ones, judged
		 * later, will not make: the scrape answered now is one */
		if (k->state == CONN_REPLYING && young)
			break;
		if (k->state == CONN_IDLE)
			tally_count_event(c->inst, "idle_evicted", 1);
		else if (k->state == CONN_ARRIVING)
			tally_count_drop(c->inst, "request_evicted", 1);
		else
			tally_count_drop(c->inst, "reply_evicted", 1);
		conn_close(c, k);
	}
	free(v);
	if (closed)
		tally_log(c->inst, LOG_WARNING,
			  "%zu connections open (max_connections %zu): closed "
			  "the %zu waiting longest for a request or a reply",
			  c->nopen + closed, c->max, closed);
out:
	/* the ones too new to judge, in a moment */
	if (c->nopen > c->max && !evtimer_pending(c->balance, NULL))
		evtimer_add(c->balance, &later);
}

/* Bytes read: the first ones of a request start its clock; NUL bytes are
 * noted. Bytes evhttp parsed: drained. */
static void conn_input(struct evbuffer *buf, const struct evbuffer_cb_info *i,
		       void *arg)
{
	static const char nul;
	struct prom_conn *k = arg;

	k->consumed += i->n_deleted;
	if (!i->n_added)
		return;
	if (conn_released(k)) {
		/* evhttp is gone: stop reading into a buffer nobody drains */
		bufferevent_disable(k->bev, EV_READ | EV_WRITE);
		return;
	}
	if (k->nul_at == NO_NUL) {
		struct evbuffer_ptr from, hit;

		if (evbuffer_ptr_set(buf, &from,
				     (size_t)(k->received - k->consumed),
				     EVBUFFER_PTR_SET) == 0) {
			hit = evbuffer_search(buf, &nul, 1, &from);
			if (hit.pos >= 0)
				k->nul_at = k->consumed + (uint64_t)hit.pos;
		}
	}
	k->received += i->n_added;
	if (k->state == CONN_IDLE) {
		k->state = CONN_ARRIVING;
		k->since = tally_monotonic_ns();
	}
}

/* A reply is being written: the request arrived whole. Written out: the
 * connection waits for its next request. */
static void conn_output(struct evbuffer *buf, const struct evbuffer_cb_info *i,
			void *arg)
{
	struct prom_conn *k = arg;
	int64_t now;

	if (k->state == CONN_CLOSING)
		return;
	if (i->n_added && k->state != CONN_REPLYING) {
		k->state = CONN_REPLYING;
		k->since = tally_monotonic_ns();
	} else if (i->n_deleted && k->state == CONN_REPLYING &&
		   !evbuffer_get_length(buf)) {
		now = tally_monotonic_ns();
		/* a pipelined request may be waiting already */
		k->state = evbuffer_get_length(bufferevent_get_input(k->bev))
				   ? CONN_ARRIVING
				   : CONN_IDLE;
		k->since = now;
		k->waiting = now;
	}
}

/*
 * evhttp's bevcb: the bufferevent of a connection just accepted, as evhttp
 * would make it (a socket bufferevent closing its fd when freed), plus our
 * reference and buffer callbacks. NULL lets evhttp make its own, untracked.
 */
static struct bufferevent *conns_bevcb(struct event_base *base, void *arg)
{
	static const struct timeval now = { 0, 0 };
	struct prom_conns *c = arg;
	struct prom_conn *k = calloc(1, sizeof(*k));

	conns_reap(c, tally_monotonic_ns());
	if (!k)
		return NULL;
	k->bev = c->new_bev ? c->new_bev(base, c->bev_arg)
			    : bufferevent_socket_new(base, -1,
						     BEV_OPT_CLOSE_ON_FREE);
	if (!k->bev)
		goto out_free;
	k->in = evbuffer_add_cb(bufferevent_get_input(k->bev), conn_input, k);
	k->out =
		evbuffer_add_cb(bufferevent_get_output(k->bev), conn_output, k);
	if (!k->in || !k->out)
		goto out_free;
	if (!c->n && event_add(c->poll, &c->poll_tv) < 0)
		goto out_free;
	bufferevent_incref(k->bev);
	k->state = CONN_IDLE;
	k->since = k->waiting = tally_monotonic_ns();
	k->nul_at = NO_NUL;
	k->next = c->conns;
	c->conns = k;
	c->n++;
	c->nopen++;
	/* Close the extra ones in the next turn of the loop, after it read
	 * what this one (and the others accepted with it) sent. */
	if (c->nopen > c->max && !evtimer_pending(c->balance, NULL))
		evtimer_add(c->balance, &now);
	return k->bev;

out_free:
	if (k->bev)
		bufferevent_free(k->bev); /* its buffers' callbacks go too */
	free(k);
	return NULL;
}

static void conns_resume(evutil_socket_t fd, short what, void *arg)
{
	struct prom_conns *c = arg;

	c->paused = false;
	conns_listen_update(c);
}

/*
 * accept() failed for a reason that retrying at once does not cure
 * (EMFILE, ENFILE, ENOBUFS, ENOMEM): the connection stays in the backlog
 * and the listening socket readable, so without a pause the loop spins.
 */
static void conns_accept_error(struct evconnlistener *lev, void *arg)
{
	int err = EVUTIL_SOCKET_ERROR();
	struct timeval tv = { 0, PROM_ACCEPT_PAUSE_MS * 1000 };
	struct prom_conns *c = prom_conns_all;

	while (c && c->http != arg)
		c = c->next_all;
	if (!c) { /* not ours: never happens; do not spin either */
		evconnlistener_disable(lev);
		return;
	}
	tally_count_drop(c->inst, "accept_error", 1);
	tally_log(c->inst, LOG_WARNING,
		  "accept: %s: accepting no connections for %d ms "
		  "(%zu open here)",
		  strerror(err), PROM_ACCEPT_PAUSE_MS, c->n);
	c->paused = true;
	conns_listen_update(c);
	evtimer_add(c->resume, &tv);
}

struct prom_conns *prom_conns_new(struct event_base *base, struct evhttp *http,
				  struct tally_instance *inst,
				  const struct prom_conns_opts *o)
{
	struct prom_conns *c = calloc(1, sizeof(*c));
	double poll = PROM_CONN_POLL_MS / 1e3;

	if (!c)
		goto out_nomem;
	c->http = http;
	c->inst = inst;
	c->max = o->max_conns ? o->max_conns : 1;
	c->idle_ns = (int64_t)(o->idle_timeout * 1e9);
	c->request_ns = (int64_t)(o->request_timeout * 1e9);
	c->new_bev = o->new_bev;
	c->bev_arg = o->bev_arg;
	c->grace_ns = PROM_CONN_GRACE_MS * 1000000LL;
	if (c->grace_ns > c->idle_ns)
		c->grace_ns = c->idle_ns;
	if (o->idle_timeout / 4 < poll)
		poll = o->idle_timeout / 4;
	if (o->request_timeout / 4 < poll)
		poll = o->request_timeout / 4;
	if (poll < PROM_CONN_POLL_MIN_MS / 1e3)
		poll = PROM_CONN_POLL_MIN_MS / 1e3;
	c->poll_tv = tally_timeval(poll);
	c->poll = event_new(base, -1, EV_PERSIST, conns_poll, c);
	c->balance = evtimer_new(base, conns_balance, c);
	c->resume = evtimer_new(base, conns_resume, c);
	if (!c->poll || !c->balance || !c->resume)
		goto out_nomem;
	evhttp_set_bevcb(http, conns_bevcb, c);
	c->next_all = prom_conns_all;
	prom_conns_all = c;
	return c;

out_nomem:
	prom_conns_free(c);
	errno = ENOMEM;
	return NULL;
}

int prom_conns_listen(struct prom_conns *c, struct evhttp_bound_socket *bs)
{
	struct evconnlistener *lev = evhttp_bound_socket_get_listener(bs);
	void *nv = realloc(c->lev, (c->nlev + 1) * sizeof(*c->lev));

	if (!nv) {
		errno = ENOMEM;
		return -1;
	}
	c->lev = nv;
	c->lev[c->nlev++] = lev;
	evconnlistener_set_error_cb(lev, conns_accept_error);
	if (c->paused)
		evconnlistener_disable(lev);
	return 0;
}

size_t prom_conns_count(const struct prom_conns *c)
{
	return c->nopen;
}

static struct prom_conn *conns_find(const struct prom_conns *c,
				    struct evhttp_request *req)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct bufferevent *bev =
		evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
	struct prom_conn *k;

	for (k = c->conns; bev && k; k = k->next)
		if (k->bev == bev)
			return k;
	return NULL;
}

/*
 * At the handler, evhttp has drained the request's bytes (request line and
 * headers) from the input buffer: a NUL seen before that point was in it.
 */
bool prom_conns_request_has_nul(const struct prom_conns *c,
				struct evhttp_request *req)
{
	const struct prom_conn *k = conns_find(c, req);

	return k && k->nul_at != NO_NUL && k->nul_at < k->consumed;
}

int prom_conns_cut_oldest_reply(struct prom_conns *c, const char *reason)
{
	struct prom_conn *k, *oldest = NULL;

	for (k = c->conns; k; k = k->next)
		if (k->state == CONN_REPLYING &&
		    (!oldest || k->since < oldest->since))
			oldest = k;
	if (!oldest) {
		errno = ENOENT;
		return -1;
	}
	tally_count_drop(c->inst, reason, 1);
	conn_close(c, oldest);
	return 0;
}

void prom_conns_free(struct prom_conns *c)
{
	struct prom_conns **pp = &prom_conns_all;

	if (!c)
		return;
	while (*pp && *pp != c)
		pp = &(*pp)->next_all;
	if (*pp)
		*pp = c->next_all;
	if (c->http)
		evhttp_set_bevcb(c->http, NULL, NULL);
	/*
	 * Connections evhttp still has keep their bufferevents (evhttp_free()
	 * frees them, and our reference goes here); their buffer callbacks
	 * must not outlive us.
	 */
	while (c->conns) {
		struct prom_conn *k = c->conns;

		c->conns = k->next;
		conn_free(k);
	}
	for (size_t i = 0; i < c->nlev; i++)
		evconnlistener_set_error_cb(c->lev[i], NULL);
	if (c->poll)
		event_free(c->poll);
	if (c->balance)
		event_free(c->balance);
	if (c->resume)
		event_free(c->resume);
	free(c->lev);
	free(c);
}
