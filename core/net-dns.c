/* SPDX-License-Identifier: MIT */
/*
 * core/net-dns.c - name resolution without blocking the loop: the shared
 * evdns base of an event loop, and hosts-file lookups for listen names
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include "net-internal.h"

struct net_dns {
	struct net_dns *next;
	struct event_base *base;
	struct evdns_base *dns;
	unsigned refs;
};

/* Loop thread only: every user of a base runs on its loop's thread. */
static struct net_dns *net_dns_list;

struct evdns_base *tally_net_dns_acquire(struct event_base *base)
{
	struct net_dns *d;

	for (d = net_dns_list; d; d = d->next) {
		if (d->base == base) {
			d->refs++;
			return d->dns;
		}
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		goto out_nomem;
	/* No pending event while idle: the loop may still end. */
	d->dns = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS |
					      EVDNS_BASE_DISABLE_WHEN_INACTIVE);
	if (!d->dns) {
		/* resolv.conf unreadable: the hosts file still answers */
		d->dns = evdns_base_new(base, EVDNS_BASE_DISABLE_WHEN_INACTIVE);
		if (!d->dns)
			goto out_nomem;
		evdns_base_load_hosts(d->dns, NULL);
	}
	d->base = base;
	d->refs = 1;
	d->next = net_dns_list;
	net_dns_list = d;
	return d->dns;

out_nomem:
	free(d);
	errno = ENOMEM;
	return NULL;
}

void tally_net_dns_release(struct event_base *base)
{
	struct net_dns **pp = &net_dns_list, *d;

	while (*pp && (*pp)->base != base)
		pp = &(*pp)->next;
	d = *pp;
	if (!d || --d->refs)
		return;
	*pp = d->next;
	/* requests still in flight get their callbacks (cancelled) */
	evdns_base_free(d->dns, 1);
	free(d);
}

struct hosts_answer {
	bool done;
	int err;
	struct evutil_addrinfo *res;
};

static void hosts_cb(int result, struct evutil_addrinfo *res, void *arg)
{
	struct hosts_answer *h = arg;

	h->done = true;
	h->err = result;
	h->res = res;
}

/* Append @sa unless it is there already. */
static size_t add_unique(struct sockaddr_storage *out, socklen_t *lens,
			 size_t n, size_t max, const struct sockaddr *sa,
			 socklen_t len)
{
	if (n == max || len > sizeof(*out))
		return n;
	for (size_t i = 0; i < n; i++)
		if (lens[i] == len && !memcmp(&out[i], sa, len))
			return n;
	memset(&out[n], 0, sizeof(out[n]));
	memcpy(&out[n], sa, len);
	lens[n] = len;
	return n + 1;
}

int tally_net_hosts_lookup(const char *name, uint16_t port,
			   struct sockaddr_storage *out, socklen_t *lens,
			   size_t max)
{
	struct evutil_addrinfo hints = { .ai_family = AF_UNSPEC,
					 .ai_socktype = SOCK_STREAM };
	struct hosts_answer h = { 0 };
	struct evdns_getaddrinfo_request *req;
	struct evdns_base *dns = NULL;
	struct event_base *base = NULL;
	size_t n = 0, len = strlen(name);
	char serv[8];

	if (!strcmp(name, "localhost") ||
	    (len > 10 && !strcmp(name + len - 10, ".localhost"))) {
		struct sockaddr_in in = { .sin_family = AF_INET,
					  .sin_port = htons(port) };
		struct sockaddr_in6 in6 = { .sin6_family = AF_INET6,
					    .sin6_port = htons(port) };

		in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		in6.sin6_addr = in6addr_loopback;
		n = add_unique(out, lens, n, max, (struct sockaddr *)&in,
			       sizeof(in));
		n = add_unique(out, lens, n, max, (struct sockaddr *)&in6,
			       sizeof(in6));
		return (int)n;
	}
	/*
	 * A private resolver with no name server: the hosts file answers at
	 * once, anything else would need a query and is not asked.
	 */
	base = event_base_new();
	if (!base)
		goto out_nomem;
	dns = evdns_base_new(base, 0);
	if (!dns)
		goto out_nomem;
	evdns_base_load_hosts(dns, NULL);
	snprintf(serv, sizeof(serv), "%u", port);
	req = evdns_getaddrinfo(dns, name, serv, &hints, hosts_cb, &h);
	if (req && !h.done) {
		evdns_getaddrinfo_cancel(req);
		/* the cancel's callback is deferred: let it run */
		for (int i = 0; i < 16 && !h.done; i++)
			event_base_loop(base, EVLOOP_NONBLOCK);
		if (h.res)
			evutil_freeaddrinfo(h.res);
		h.res = NULL;
		h.err = EVUTIL_EAI_NONAME;
	}
	for (struct evutil_addrinfo *ai = h.res; ai; ai = ai->ai_next)
		if (ai->ai_family == AF_INET || ai->ai_family == AF_INET6)
			n = add_unique(out, lens, n, max, ai->ai_addr,
				       (socklen_t)ai->ai_addrlen);
	if (h.res)
		evutil_freeaddrinfo(h.res);
	evdns_base_free(dns, 1);
	event_base_free(base);
	if (!n) {
		errno = ENOENT;
		return -1;
	}
	return (int)n;

out_nomem:
	if (base)
		event_base_free(base);
	errno = ENOMEM;
	return -1;
}
