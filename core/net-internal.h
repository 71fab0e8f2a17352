/* SPDX-License-Identifier: MIT */
/*
 * core/net-internal.h - what the core's net-*.c files share; not for
 * plugins (tally/net.h is their interface)
 */
#ifndef TALLY_NET_INTERNAL_H
#define TALLY_NET_INTERNAL_H

#include <stdbool.h>
#include <sys/time.h>

#include <tally/net.h>

struct evdns_base;
struct event_base;

/*
 * One evdns base per event loop, shared by every sender on it: created on
 * the first acquire (/etc/resolv.conf and /etc/hosts; it keeps no event
 * pending while no request is), freed on the last release. Loop thread.
 * Return: the base, or NULL with errno = ENOMEM.
 */
struct evdns_base *tally_net_dns_acquire(struct event_base *base);
void tally_net_dns_release(struct event_base *base);

/*
 * The names of a listen address without a DNS query: "localhost" and
 * "*.localhost" give 127.0.0.1 and ::1 (RFC 6761), other names what the
 * hosts file says (read with evdns). Fills up to @max addresses with
 * @port. Return: the number found (>= 1), or -1 with errno = ENOENT (not
 * in the hosts file) or ENOMEM.
 */
int tally_net_hosts_lookup(const char *name, uint16_t port,
			   struct sockaddr_storage *out, socklen_t *lens,
			   size_t max);

/* "127.0.0.1:80", "[::1]:80", "unix:/path": 0, or -1 (EAFNOSUPPORT). */
int tally_net_format_sockaddr(const struct sockaddr *sa, socklen_t sl,
			      char *buf, size_t len);

/* @seconds (negative: 0) as a struct timeval, for event timers. */
struct timeval tally_net_timeval(double seconds);

/* Non-blocking, close-on-exec socket of @family/@socktype, or -1. */
int tally_net_socket(int family, int socktype);

#endif /* TALLY_NET_INTERNAL_H */
