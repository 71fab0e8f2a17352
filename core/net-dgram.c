/* SPDX-License-Identifier: MIT */
/*
 * core/net-dgram.c - records to a server in datagrams (tally/net.h,
 * struct tally_net_dgram): a connected, non-blocking UDP or unix datagram
 * socket; each datagram holds whole records, as many as fit
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>

#include <tally/log.h>

#include "net-internal.h"

struct tally_net_dgram {
	struct tally_instance *inst;
	char *what;
	int fd;
	size_t max;
	struct tally_net_dgram_stats st;
	struct tally_log_limit send_limit; /* "records not sent" */
};

struct tally_net_dgram *tally_net_dgram_new(struct tally_instance *inst,
					    const char *what,
					    const struct tally_net_addr *server,
					    size_t max_datagram)
{
	struct tally_net_dgram *d;
	const struct sockaddr *sa = (const struct sockaddr *)&server->sa;

	if ((server->flags & TALLY_NET_LISTEN) ||
	    server->socktype != SOCK_DGRAM || !server->salen ||
	    server->kind == TALLY_NET_ANY || !max_datagram) {
		errno = EINVAL;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		goto out_nomem;
	d->inst = inst;
	d->max = max_datagram;
	d->what = strdup(what ? what : "server");
	if (!d->what)
		goto out_free;
	d->fd = tally_net_socket(sa->sa_family, SOCK_DGRAM);
	if (d->fd < 0 || connect(d->fd, sa, server->salen) < 0) {
		int err = errno;

		tally_log(inst, LOG_ERR, "%s: %s", d->what, strerror(err));
		if (d->fd >= 0)
			close(d->fd);
		free(d->what);
		free(d);
		errno = err;
		return NULL;
	}
	return d;

out_free:
	free(d);
out_nomem:
	errno = ENOMEM;
	return NULL;
}

/* Send @len bytes holding @records records; count a failure. */
static void dgram_put(struct tally_net_dgram *d, const char *p, size_t len,
		      uint64_t records)
{
	int err;

	if (!len)
		return;
	if (send(d->fd, p, len, MSG_DONTWAIT) == (ssize_t)len) {
		d->st.datagrams++;
		d->st.bytes += len;
		return;
	}
	err = errno;
	/* no room in the kernel, or an ICMP error of an earlier datagram
	 * (nobody listens): datagrams carry no promise, count the loss */
	d->st.send_errors += records;
	tally_count_drop(d->inst, "send_error", records);
	/* nobody listening stays so: say it once a minute, not per send */
	tally_log_limited(&d->send_limit, 60, d->inst, LOG_WARNING,
			  "%s: %llu records not sent: %s", d->what,
			  (unsigned long long)records, strerror(err));
}

int tally_net_dgram_send(struct tally_net_dgram *d, struct evbuffer *buf,
			 char delim)
{
	size_t len = evbuffer_get_length(buf);
	const char *p, *end, *start;
	uint64_t in_dgram = 0;

	if (!len)
		return 0;
	p = (const char *)evbuffer_pullup(buf, -1);
	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	end = p + len;
	start = p;
	while (p < end) {
		const char *nl = memchr(p, delim, (size_t)(end - p));
		const char *next = nl ? nl + 1 : end;
		size_t rec = (size_t)(next - p);

		if (rec > d->max) {
			/* never split a record: the receiver would read two
			 * bad ones */
			dgram_put(d, start, (size_t)(p - start), in_dgram);
			in_dgram = 0;
			d->st.oversize++;
			tally_count_drop(d->inst, "oversize", 1);
			p = start = next;
			continue;
		}
		if ((size_t)(next - start) > d->max) {
			dgram_put(d, start, (size_t)(p - start), in_dgram);
			start = p;
			in_dgram = 0;
		}
		in_dgram++;
		p = next;
	}
	dgram_put(d, start, (size_t)(end - start), in_dgram);
	evbuffer_drain(buf, len);
	return 0;
}

void tally_net_dgram_get_stats(const struct tally_net_dgram *d,
			       struct tally_net_dgram_stats *out)
{
	*out = d->st;
}

void tally_net_dgram_free(struct tally_net_dgram *d)
{
	if (!d)
		return;
	close(d->fd);
	free(d->what);
	free(d);
}
