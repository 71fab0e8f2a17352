/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/prometheus/conn.h - the prometheus output's connections
 *
 * What evhttp (libevent 2.1) does not bound by itself:
 *   - accept() failing with EMFILE/ENFILE: the listening socket stays
 *     readable and libevent retries (and logs) in a busy loop. Here the
 *     listeners pause for PROM_ACCEPT_PAUSE_MS and the failure is counted.
 *   - the number of open connections: at max_connections the listeners
 *     pause until one closes (the kernel's backlog holds the others).
 *   - how long a request may take to arrive: evhttp's timeout restarts at
 *     every byte, so a client sending a header line every few seconds held
 *     a connection forever. A request must arrive whole within
 *     request_timeout of its first byte, or its connection is closed.
 *
 * Each connection's socket bufferevent is made here (evhttp_set_bevcb())
 * and kept referenced, so that it can be looked at safely until evhttp has
 * let go of it (its callbacks are gone: evhttp_connection_free() ran),
 * which a timer notices; the last reference then closes the socket.
 * Callbacks on its buffers see a request's first byte and the reply's.
 * Private to the prometheus output. Loop thread only, not thread-safe.
 */
#ifndef PROM_CONN_H
#define PROM_CONN_H

#include <stddef.h>

struct event_base;
struct evhttp;
struct evhttp_bound_socket;
struct tally_instance;
struct prom_conns;

/* How long listeners pause after accept() failed (file descriptors out). */
#define PROM_ACCEPT_PAUSE_MS 500

/**
 * prom_conns_new() - take charge of @http's connections
 * @base:            @http's event base
 * @http:            the server; its bevcb is set here
 * @inst:            for logs and drop counters (request_timeout,
 *                   accept_error)
 * @max_conns:       connections open at once (>= 1)
 * @request_timeout: seconds a request may take from its first byte until
 *                   it is complete (> 0)
 * Return: the state, or NULL with errno = ENOMEM.
 */
struct prom_conns *prom_conns_new(struct event_base *base, struct evhttp *http,
				  struct tally_instance *inst,
				  size_t max_conns, double request_timeout);

/**
 * prom_conns_listen() - watch a bound socket's listener (pauses on accept
 * errors and at max_conns)
 * Return: 0, or -1 with errno = ENOMEM.
 */
int prom_conns_listen(struct prom_conns *c, struct evhttp_bound_socket *bs);

/** prom_conns_count() - connections open now */
size_t prom_conns_count(const struct prom_conns *c);

/**
 * prom_conns_free() - let go of the connections. Call before evhttp_free():
 * connections that evhttp frees later no longer refer to the state. NULL
 * is a no-op.
 */
void prom_conns_free(struct prom_conns *c);

#endif /* PROM_CONN_H */
