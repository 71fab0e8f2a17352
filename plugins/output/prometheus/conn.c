/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/prometheus/conn.c - connection bounds of the HTTP server
 * (see conn.h for what and why)
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include <tally/log.h>
#include <tally/record.h>

#include "conn.h"

/* How often open connections are looked at (reaped, timed out). */
#define PROM_CONN_POLL_MS 1000

struct prom_conn {
	struct prom_conn *next;
	struct prom_conns *owner;
	struct bufferevent *bev;      /* referenced: valid until we unref */
	struct evbuffer_cb_entry *in; /* callbacks on its buffers */
	struct evbuffer_cb_entry *out;
	int64_t since; /* monotonic ns of a pending request's first byte */
	bool busy;     /* a request is arriving: no reply started yet */
};

struct prom_conns {
	struct prom_conns *next_all; /* every output's, for accept errors */
	struct evhttp *http;
	struct tally_instance *inst;
	struct evconnlistener **lev;
	size_t nlev;
	struct prom_conn *conns;
	size_t n, max;
	int64_t timeout_ns;
	struct event *poll;   /* while connections are open */
	struct event *resume; /* end of an accept pause */
	bool paused;	      /* accept() failed recently */
	bool listening;
};

/*
 * The error callback of a listener gets the listener's user data, which
 * evhttp owns (its struct evhttp): this list finds the output from it.
 * Loop thread only.
 */
static struct prom_conns *prom_conns_all;

/* Accept while below max connections and not paused after an error. */
static void conns_listen_update(struct prom_conns *c)
{
	bool on = !c->paused && c->n < c->max;

	if (on == c->listening)
		return;
	for (size_t i = 0; i < c->nlev; i++)
		if (on)
			evconnlistener_enable(c->lev[i]);
		else
			evconnlistener_disable(c->lev[i]);
	c->listening = on;
	if (!on && !c->paused)
		tally_log(c->inst, LOG_WARNING,
			  "%zu connections open (max_connections): accepting "
			  "no more until one closes",
			  c->n);
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
 * Free the connections evhttp is done with, and close those whose request
 * has been arriving for longer than the timeout: shutting the socket down
 * makes evhttp read an end of file and free the connection itself.
 */
static void conns_reap(struct prom_conns *c, int64_t now)
{
	struct prom_conn **pp = &c->conns;

	while (*pp) {
		struct prom_conn *k = *pp;

		if (conn_released(k)) {
			*pp = k->next;
			conn_free(k);
			c->n--;
			continue;
		}
		if (k->busy && now - k->since > c->timeout_ns) {
			k->busy = false;
			tally_count_drop(c->inst, "request_timeout", 1);
			tally_log(c->inst, LOG_WARNING,
				  "a request still incomplete %.0f s after its "
				  "first byte: closing its connection",
				  (double)c->timeout_ns / 1e9);
			shutdown(bufferevent_getfd(k->bev), SHUT_RDWR);
		}
		pp = &k->next;
	}
	if (!c->n)
		event_del(c->poll);
	conns_listen_update(c);
}

static void conns_poll(evutil_socket_t fd, short what, void *arg)
{
	conns_reap(arg, tally_monotonic_ns());
}

/* Bytes read: the first ones of a request start its clock. */
static void conn_input(struct evbuffer *buf, const struct evbuffer_cb_info *i,
		       void *arg)
{
	struct prom_conn *k = arg;

	if (!i->n_added)
		return;
	if (conn_released(k)) {
		/* evhttp is gone: stop reading into a buffer nobody drains */
		bufferevent_disable(k->bev, EV_READ | EV_WRITE);
		return;
	}
	if (!k->busy) {
		k->busy = true;
		k->since = tally_monotonic_ns();
	}
}

/* A reply is being written: the request arrived whole. */
static void conn_output(struct evbuffer *buf, const struct evbuffer_cb_info *i,
			void *arg)
{
	struct prom_conn *k = arg;

	if (i->n_added)
		k->busy = false;
}

/*
 * evhttp's bevcb: the bufferevent of a connection just accepted, as evhttp
 * would make it (a socket bufferevent closing its fd when freed), plus our
 * reference and buffer callbacks. NULL lets evhttp make its own, untracked.
 */
static struct bufferevent *conns_bevcb(struct event_base *base, void *arg)
{
	struct prom_conns *c = arg;
	struct prom_conn *k = calloc(1, sizeof(*k));
	struct timeval tv = { PROM_CONN_POLL_MS / 1000,
			      PROM_CONN_POLL_MS % 1000 * 1000 };

	conns_reap(c, tally_monotonic_ns());
	if (!k)
		return NULL;
	k->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!k->bev)
		goto out_free;
	k->in = evbuffer_add_cb(bufferevent_get_input(k->bev), conn_input, k);
	k->out = evbuffer_add_cb(bufferevent_get_output(k->bev), conn_output,
				 k);
	if (!k->in || !k->out)
		goto out_free;
	if (!c->n && event_add(c->poll, &tv) < 0)
		goto out_free;
	bufferevent_incref(k->bev);
	k->owner = c;
	k->next = c->conns;
	c->conns = k;
	c->n++;
	conns_listen_update(c);
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
				  size_t max_conns, double request_timeout)
{
	struct prom_conns *c = calloc(1, sizeof(*c));

	if (!c)
		goto out_nomem;
	c->http = http;
	c->inst = inst;
	c->max = max_conns ? max_conns : 1;
	c->timeout_ns = (int64_t)(request_timeout * 1e9);
	c->listening = true;
	c->poll = event_new(base, -1, EV_PERSIST, conns_poll, c);
	c->resume = evtimer_new(base, conns_resume, c);
	if (!c->poll || !c->resume)
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
	if (!c->listening)
		evconnlistener_disable(lev);
	return 0;
}

size_t prom_conns_count(const struct prom_conns *c)
{
	return c->n;
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
	if (c->resume)
		event_free(c->resume);
	free(c->lev);
	free(c);
}
