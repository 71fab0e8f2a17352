/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/prometheus/http.h - pure helpers of the HTTP side
 *
 * Parsing of listen addresses, allow lists and the Accept and
 * Accept-Encoding request headers. Private to the prometheus output and
 * its unit tests; no function here touches the event loop.
 */
#ifndef PROM_HTTP_H
#define PROM_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/net.h>

struct sockaddr;

/**
 * struct prom_listen - a listen address, as evhttp binds it
 * @addr: the address tally_net_addr_parse() read (tally/net.h): the
 *        loopback policy and the port rule judge this
 * @host: numeric address or host name for evhttp_bind_socket()
 * @port: TCP port; 0 lets the kernel choose
 */
struct prom_listen {
	struct tally_net_addr addr;
	char host[256];
	uint16_t port;
};

/**
 * prom_parse_listen() - parse "host:port", "[ipv6]:port", ":port", "*:port"
 *
 * The core's listen syntax (tally_net_addr_parse(), TCP, no unix sockets),
 * the loopback policy left to the caller (tally_net_listen_permitted()).
 * An empty host or "*" means every IPv4 address (0.0.0.0), as this output
 * has always bound it; "[::]:port" binds IPv6 (and IPv4 too where the
 * kernel maps it). Pure.
 * Return: 0, or -1 with errno = EINVAL.
 */
int prom_parse_listen(const char *spec, struct prom_listen *out);

/**
 * struct prom_cidr - one allow-list entry
 * @family: AF_INET or AF_INET6
 * @addr:   network address, host bits cleared (4 or 16 bytes used)
 * @bits:   prefix length
 */
struct prom_cidr {
	int family;
	unsigned char addr[16];
	int bits;
};

/**
 * prom_parse_cidr() - parse "a.b.c.d[/n]" or "ipv6[/n]" (brackets allowed)
 * Return: 0, or -1 with errno = EINVAL.
 */
int prom_parse_cidr(const char *s, struct prom_cidr *out);

/**
 * prom_cidr_match() - whether a peer address is in any of @n entries
 * @sa: AF_INET or AF_INET6 socket address; an IPv4-mapped IPv6 address
 *      (::ffff:a.b.c.d, from a dual-stack listener) also matches IPv4
 *      entries. NULL or another family never matches.
 */
bool prom_cidr_match(const struct prom_cidr *c, size_t n,
		     const struct sockaddr *sa);

/**
 * prom_http_wants_openmetrics() - whether an Accept header prefers
 * application/openmetrics-text to text/plain (by q value; a tie goes to
 * text/plain). NULL (no header) gives false.
 */
bool prom_http_wants_openmetrics(const char *accept);

/**
 * prom_http_gzip_coding() - the gzip content coding an Accept-Encoding
 * header accepts: "gzip" if it lists gzip with a non-zero q value, else
 * "x-gzip" if it lists that one (RFC 9110 8.4.1.3: the same coding, and the
 * reply names it as the client did), else NULL. NULL (no header) gives
 * NULL: "*" is not taken to mean gzip.
 */
const char *prom_http_gzip_coding(const char *accept_encoding);

struct evbuffer;

#endif /* PROM_HTTP_H */
