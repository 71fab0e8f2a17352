/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/prometheus/conn.h - the prometheus output's connections
 *
 * What evhttp (libevent 2.1) does not bound by itself:
 *   - accept() failing with EMFILE/ENFILE: the listening socket stays
 *     readable and libevent retries (and logs) in a busy loop. Here the
 *     listeners pause for PROM_ACCEPT_PAUSE_MS and the failure is counted.
 *   - how long a connection may wait without sending a request: evhttp
 *     keeps an idle connection for its whole timeout (30 s), so 64 clients
 *     that connect and send nothing held every slot. Here a connection
 *     with no request byte pending (fresh, or between the requests of a
 *     keep-alive connection) is closed after idle_timeout.
 *   - how long a request may take to arrive: evhttp's timeout restarts at
 *     every byte, so a client sending a header line every few seconds held
 *     a connection forever. A request must arrive whole within
 *     request_timeout of its first byte, or its connection is closed.
 *   - the number of open connections. Pausing the listeners at the limit
 *     left a real scrape in the kernel's backlog behind whoever held the
 *     slots (idle or trickling clients: 30 s and more). Instead every
 *     connection is accepted and the connections beyond max_connections
 *     are closed: those that have waited longest for a complete request
 *     first (idle or still arriving), then the replies in progress
 *     longest. A connection that has sent nothing yet is spared for its
 *     first second (at most idle_timeout): a scrape, whose request comes
 *     in one packet just after the connection, is being answered by then.
 *   - a NUL byte in a request: libevent takes a header line that starts
 *     with NUL for the end of the headers and parses the rest as the next
 *     request. Requests are watched for NUL bytes as they arrive, so the
 *     handler can answer such a request with one 400 and close.
 *
 * Each connection's socket bufferevent is made here (evhttp_set_bevcb())
 * and kept referenced, so that it can be looked at safely until evhttp has
 * let go of it (its callbacks are gone: evhttp_connection_free() ran),
 * which a timer notices; the last reference then closes the socket.
 * Callbacks on its buffers see a request's bytes and the reply's.
 * A connection is closed by shutting its socket down: evhttp then reads an
 * end of file and frees the connection itself.
 * Private to the prometheus output. Loop thread only, not thread-safe.
 */
#ifndef PROM_CONN_H
#define PROM_CONN_H

#include <stdbool.h>
#include <stddef.h>

struct bufferevent;
struct event_base;
struct evhttp;
struct evhttp_bound_socket;
struct evhttp_request;
struct tally_instance;
struct prom_conns;

/* How long listeners pause after accept() failed (file descriptors out). */
#define PROM_ACCEPT_PAUSE_MS 500

/**
 * struct prom_conns_opts - bounds on the connections
 * @max_conns:       connections kept open at once (>= 1)
 * @idle_timeout:    seconds a connection may stay open with no request
 *                   byte pending, after it was accepted or after a reply
 *                   was sent (> 0)
 * @request_timeout: seconds a request may take from its first byte until
 *                   it is complete (> 0)
 * @new_bev:         makes the bufferevent of an accepted connection, with
 *                   no socket yet and closing it when freed (HTTPS:
 *                   prom_tls_bev() of tls.h, whose buffers hold the
 *                   decrypted bytes); NULL: a plain socket bufferevent
 * @bev_arg:         @new_bev's argument
 */
struct prom_conns_opts {
	size_t max_conns;
	double idle_timeout;
	double request_timeout;
	struct bufferevent *(*new_bev)(struct event_base *base, void *arg);
	void *bev_arg;
};

/**
 * prom_conns_new() - take charge of @http's connections
 * @base: @http's event base
 * @http: the server; its bevcb is set here
 * @inst: for logs, drop and event counters
 * @o:    bounds (copied)
 * Return: the state, or NULL with errno = ENOMEM.
 */
struct prom_conns *prom_conns_new(struct event_base *base, struct evhttp *http,
				  struct tally_instance *inst,
				  const struct prom_conns_opts *o);

/**
 * prom_conns_listen() - watch a bound socket's listener (pauses on accept
 * errors)
 * Return: 0, or -1 with errno = ENOMEM.
 */
int prom_conns_listen(struct prom_conns *c, struct evhttp_bound_socket *bs);

/** prom_conns_count() - connections open now (closing ones excluded) */
size_t prom_conns_count(const struct prom_conns *c);

/**
 * prom_conns_request_has_nul() - whether a NUL byte arrived within @req
 * (its request line or headers), which evhttp may have parsed as the end
 * of the headers. False for a connection not made here.
 */
bool prom_conns_request_has_nul(const struct prom_conns *c,
				struct evhttp_request *req);

/**
 * prom_conns_cut_oldest_reply() - close the connection whose reply has
 * been in progress longest, dropping what it had left to send (so memory
 * referenced by it is released now), counted as a drop with @reason
 * (static string)
 * Return: 0, or -1 with errno = ENOENT when no reply is in progress.
 */
int prom_conns_cut_oldest_reply(struct prom_conns *c, const char *reason);

/**
 * prom_conns_free() - let go of the connections. Call before evhttp_free():
 * connections that evhttp frees later no longer refer to the state. NULL
 * is a no-op.
 */
void prom_conns_free(struct prom_conns *c);

#endif /* PROM_CONN_H */
