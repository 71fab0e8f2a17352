/* SPDX-License-Identifier: MIT */
/*
 * core/net-internal.h - what the core's net-*.c files share; not for
 * plugins (tally/net.h is their interface)
 */
#ifndef TALLY_NET_INTERNAL_H
#define TALLY_NET_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/time.h>

#include <tally/net.h>
#include <tally/plugin.h>

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

/*
 * The capped, jittered backoff of every reconnecting or retrying client:
 * the @fails-th consecutive failure (1 for the first) waits a uniformly
 * random time in [d/2, d], d = min(@max, @min * 2^(@fails-1)) seconds.
 * @rng is the caller's xorshift state (non-zero; seed it with
 * tally_net_backoff_seed()). Jitter needs spread, not secrecy.
 */
double tally_net_backoff(double min, double max, unsigned fails,
			 uint64_t *rng);
uint64_t tally_net_backoff_seed(const void *owner);

/* Non-blocking, close-on-exec socket of @family/@socktype, or -1. */
int tally_net_socket(int family, int socktype);

#endif /* TALLY_NET_INTERNAL_H */
