/* SPDX-License-Identifier: MIT */
/*
 * t/unit/net-listen.c - the drain-then-yield listener: the cap per
 * wake-up, yielding to the loop, coalescing, lines of stream connections
 * (tally/net.h, struct tally_net_listener)
 *
 * Everything runs on one event loop in this process; waits are bounded
 * loops on conditions (TIMEOUT_S), never fixed sleeps, and the only time
 * asserted is a lower bound (a cooldown lasts at least its interval).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include <tally/net.h>
#include <tally/record.h>

#include "../../core/core-internal.h"
#include "tap.h"

#define TIMEOUT_S 20.0
#define MAX_DRAINS 4096

static struct event_base *base;

/* What a listener handed over. */
struct got {
	char **items;
	size_t n, cap;
	unsigned drains[MAX_DRAINS]; /* items per drain */
	uint64_t ticks_at[MAX_DRAINS];
	int64_t ns_at[MAX_DRAINS];
	size_t ndrains;
	void (*on_drained)(struct got *g);
	void *ctx;
};

static uint64_t ticks; /* loop turns, counted by a 0 s timer */

static void got_item(void *arg, const char *data, size_t len)
{
	struct got *g = arg;

	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 256;
		g->items = realloc(g->items, g->cap * sizeof(*g->items));
	}
	g->items[g->n++] = strndup(data, len);
}

static void got_drained(void *arg, unsigned items)
{
	struct got *g = arg;

	if (g->ndrains < MAX_DRAINS) {
		g->drains[g->ndrains] = items;
		g->ticks_at[g->ndrains] = ticks;
		g->ns_at[g->ndrains] = tally_monotonic_ns();
		g->ndrains++;
	}
	if (g->on_drained)
		g->on_drained(g);
}

static void got_free(struct got *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->items[i]);
	free(g->items);
	memset(g, 0, sizeof(*g));
}

static const struct tally_net_listener_ops got_ops = {
	.item = got_item,
	.drained = got_drained,
};

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	static const struct timeval zero = { 0, 0 };

	ticks++;
	evtimer_add(arg, &zero);
}

/* One loop turn, waiting at most 50 ms for something to happen. */
static void turn(void)
{
	static const struct timeval guard = { 0, 50000 };

	event_base_loopexit(base, &guard);
	event_base_loop(base, EVLOOP_ONCE);
}

/* Run the loop until *@n >= @want or TIMEOUT_S passed. */
static bool run_until(const size_t *n, size_t want)
{
	int64_t end = tally_monotonic_ns() + (int64_t)(TIMEOUT_S * 1e9);

	while (*n < want && tally_monotonic_ns() < end)
		turn();
	return *n >= want;
}

/* Run the loop until @l's open connections are @want. */
static bool run_until_open(struct tally_net_listener *l, uint64_t want)
{
	int64_t end = tally_monotonic_ns() + (int64_t)(TIMEOUT_S * 1e9);
	struct tally_net_listener_stats st;

	for (;;) {
		tally_net_listener_get_stats(l, &st);
		if (st.open == want || tally_monotonic_ns() >= end)
			return st.open == want;
		turn();
	}
}

static struct tally_net_addr parse(const char *spec, unsigned extra)
{
	struct tally_net_addr a;
	char err[TALLY_NET_ERRLEN];

	if (tally_net_addr_parse("listen", spec,
				 TALLY_NET_LISTEN | TALLY_NET_UNIX |
					 TALLY_NET_AS_SYSTEM | extra,
				 &a, err, sizeof(err)) < 0)
		bail_out("%s", err);
	return a;
}

static void loopback_to(uint16_t port, struct sockaddr_in *to)
{
	memset(to, 0, sizeof(*to));
	to->sin_family = AF_INET;
	to->sin_port = htons(port);
	to->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static int udp_client(uint16_t port, struct sockaddr_in *to)
{
	loopback_to(port, to);
	return socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
}

static int tcp_client(uint16_t port)
{
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0)
		bail_out("connect: %s", strerror(errno));
	return fd;
}

static void write_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EAGAIN || errno == EINTR) {
				turn();
				continue;
			}
			bail_out("write: %s", strerror(errno));
		}
		p += w;
		len -= (size_t)w;
	}
}

/*
 * A flood of datagrams is read max_items at a time, and the loop runs
 * between two drains (a 0 s timer ticks in between).
 */
static void test_dgram_cap(void)
{
	struct tally_net_listener_opts o = { .max_items = 16 };
	struct tally_net_addr a = parse("127.0.0.1:0", TALLY_NET_UDP);
	struct tally_net_listener *l;
	struct tally_net_listener_stats st;
	struct sockaddr_in to;
	struct got g = { 0 };
	bool capped_ok = true, yielded = true, order = true;
	size_t full = 0;
	int c;

	l = tally_net_listener_new(NULL, base, "listen \"udp\"", &a, &o,
				   &got_ops, &g);
	if (!ok(l != NULL, "UDP listener on 127.0.0.1:0"))
		return;
	ok(tally_net_listener_port(l) != 0, "a port was chosen: %u",
	   tally_net_listener_port(l));
	c = udp_client(tally_net_listener_port(l), &to);
	/* 100 small datagrams fit the default receive buffer */
	for (int i = 0; i < 100; i++) {
		char msg[16];
		int len = snprintf(msg, sizeof(msg), "d%03d", i);

		sendto(c, msg, (size_t)len, 0, (struct sockaddr *)&to,
		       sizeof(to));
	}
	ok(run_until(&g.n, 100), "all 100 datagrams read");
	for (size_t i = 0; i < g.ndrains; i++) {
		if (g.drains[i] > 16)
			capped_ok = false;
		if (g.drains[i] == 16)
			full++;
		if (i && g.drains[i - 1] == 16 &&
		    g.ticks_at[i] == g.ticks_at[i - 1])
			yielded = false;
	}
	for (size_t i = 0; i < g.n; i++) {
		char want[32];

		snprintf(want, sizeof(want), "d%03zu", i);
		if (strcmp(g.items[i], want))
			order = false;
	}
	ok(capped_ok, "no drain read more than max_items (16)");
	cmp_ok(full, ">=", 6, "the flood took capped drains of 16");
	ok(yielded, "the loop ran between a capped drain and the next");
	ok(order, "every datagram once, in order");
	tally_net_listener_get_stats(l, &st);
	cmp_ok(st.drain.items, "==", 100, "stats: 100 items");
	cmp_ok(st.drain.capped, "==", full, "stats: capped drains");

	/* a datagram longer than max_item is dropped and counted */
	{
		struct tally_net_listener_opts o2 = { .max_item = 8 };
		struct tally_net_addr a2 = parse("127.0.0.1:0", TALLY_NET_UDP);
		struct got g2 = { 0 };
		struct tally_net_listener *l2 = tally_net_listener_new(
			NULL, base, "x", &a2, &o2, &got_ops, &g2);

		loopback_to(tally_net_listener_port(l2), &to);
		sendto(c, "123456789", 9, 0, (struct sockaddr *)&to,
		       sizeof(to));
		sendto(c, "12345678", 8, 0, (struct sockaddr *)&to,
		       sizeof(to));
		ok(run_until(&g2.n, 1), "the datagram that fits arrives");
		tally_net_listener_get_stats(l2, &st);
		cmp_ok(st.oversize, "==", 1, "the longer one: oversize");
		is(g2.items[0], "12345678", "exactly max_item bytes pass");
		tally_net_listener_free(l2);
		got_free(&g2);
	}
	close(c);
	tally_net_listener_free(l);
	got_free(&g);
}

struct trickle {
	int fd;
	struct sockaddr_in to;
	int sent;
};

/* From the first drain: 5 more datagrams while the cooldown runs. */
static void send_five(struct got *g)
{
	struct trickle *t = g->ctx;

	if (g->ndrains != 1)
		return;
	for (int i = 0; i < 5; i++)
		sendto(t->fd, "t", 1, 0, (struct sockaddr *)&t->to,
		       sizeof(t->to));
	t->sent += 5;
}

/*
 * A listener with @min_interval, idle (its start-up drain found nothing),
 * gets one datagram, then 5 more while its first drain runs. Its drains
 * are in @g (free it); return: its wake-ups.
 */
static uint64_t trickle_run(double min_interval, struct got *g)
{
	struct tally_net_listener_opts o = { .min_interval = min_interval };
	struct tally_net_addr a = parse("127.0.0.1:0", TALLY_NET_UDP);
	struct tally_net_listener_stats st;
	struct tally_net_listener *l;
	struct trickle t = { 0 };

	*g = (struct got){ .on_drained = send_five, .ctx = &t };
	l = tally_net_listener_new(NULL, base, "x", &a, &o, &got_ops, g);
	t.fd = udp_client(tally_net_listener_port(l), &t.to);
	for (int i = 0; i < 3; i++)
		turn();
	tally_net_listener_get_stats(l, &st);
	cmp_ok(st.drain.wakeups, "==", 0, "idle: no wake-up yet");
	sendto(t.fd, "t", 1, 0, (struct sockaddr *)&t.to, sizeof(t.to));
	ok(run_until(&g->n, 6), "6 datagrams read (min_drain_interval %g)",
	   min_interval);
	tally_net_listener_get_stats(l, &st);
	tally_net_listener_free(l);
	close(t.fd);
	g->on_drained = NULL;
	return st.drain.wakeups;
}

/*
 * After a drain that read something, the next one waits
 * min_drain_interval with the socket unwatched: what arrives meanwhile is
 * read in one drain, after one wake-up, not one per datagram.
 */
static void test_coalescing(void)
{
	struct got g;
	uint64_t wakeups;

	wakeups = trickle_run(0.2, &g);
	cmp_ok(g.ndrains, "==", 2, "in 2 drains");
	cmp_ok(g.drains[0], "==", 1, "the first drain read 1");
	cmp_ok(g.drains[1], "==", 5, "the 5 sent in the cooldown: one drain");
	cmp_ok((double)(g.ns_at[1] - g.ns_at[0]) / 1e9, ">=", 0.2,
	       "the second drain came min_drain_interval (0.2 s) later");
	cmp_ok(wakeups, "==", 2, "2 wake-ups (the fd, the cooldown), not 6");
	got_free(&g);

	/* without coalescing the next drain is a loop turn away */
	wakeups = trickle_run(0, &g);
	cmp_ok(wakeups, "==", 1,
	       "the second drain was a loop turn, not a wake-up");
	got_free(&g);
}

/*
 * Lines of stream connections: split across writes, CRLF, an empty line,
 * one too long, a last line without a newline; two connections share the
 * listener's cap.
 */
static void test_stream(void)
{
	struct tally_net_listener_opts o = { .max_items = 100, .max_item = 64 };
	struct tally_net_addr a = parse("127.0.0.1:0", 0);
	struct tally_net_listener_stats st;
	struct tally_net_listener *l;
	struct got g = { 0 };
	char *text, *p, big[200];
	size_t nlines = 2000, want = 0;
	bool capped_ok = true, order = true;
	int c1, c2;

	l = tally_net_listener_new(NULL, base, "x", &a, &o, &got_ops, &g);
	if (!ok(l != NULL, "TCP listener"))
		return;
	c1 = tcp_client(tally_net_listener_port(l));
	c2 = tcp_client(tally_net_listener_port(l));
	text = malloc(nlines * 16);
	p = text;
	for (size_t i = 0; i < nlines; i++)
		p += sprintf(p, "line%05zu%s", i, i % 3 ? "\n" : "\r\n");
	/* in odd pieces, so lines straddle reads */
	for (size_t off = 0, len = (size_t)(p - text); off < len;) {
		size_t n = len - off < 777 ? len - off : 777;

		write_all(c1, text + off, n);
		off += n;
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	}
	memset(big, 'x', sizeof(big));
	write_all(c2, "\n", 1);		    /* empty: skipped */
	write_all(c2, big, 65);		    /* 65 bytes: too long */
	write_all(c2, "\nfits\n", 6);	    /* the next line is fine */
	write_all(c2, big, 64);		    /* exactly max_item */
	write_all(c2, "\nlast-no-newline", 16);
	shutdown(c2, SHUT_WR);
	want = nlines + 3;
	ok(run_until(&g.n, want), "%zu lines read", want);
	for (size_t i = 0, k = 0; i < g.n; i++) {
		char exp[32];

		if (strncmp(g.items[i], "line", 4))
			continue;
		snprintf(exp, sizeof(exp), "line%05zu", k++);
		if (strcmp(g.items[i], exp))
			order = false;
	}
	ok(order, "connection 1: every line once, in order, CRLF stripped");
	{
		int fits = -1, x64 = -1, last = -1;

		for (size_t i = 0; i < g.n; i++) {
			if (!strcmp(g.items[i], "fits"))
				fits = (int)i;
			else if (strlen(g.items[i]) == 64 &&
				 g.items[i][0] == 'x')
				x64 = (int)i;
			else if (!strcmp(g.items[i], "last-no-newline"))
				last = (int)i;
		}
		ok(fits >= 0 && x64 > fits && last > x64,
		   "connection 2: fits, 64 x, and the last line at EOF");
	}
	cmp_ok(g.n, "==", want, "nothing else (the empty line skipped)");
	for (size_t i = 0; i < g.ndrains; i++)
		if (g.drains[i] > 100)
			capped_ok = false;
	ok(capped_ok, "no drain handed over more than 100 lines");
	tally_net_listener_get_stats(l, &st);
	cmp_ok(st.oversize, "==", 1, "the 65-byte line: oversize");
	cmp_ok(st.accepted, "==", 2, "2 connections accepted");
	close(c1);
	ok(run_until_open(l, 0), "closed connections are let go");
	close(c2);
	free(text);
	tally_net_listener_free(l);
	got_free(&g);
}

/* At max_connections accepting pauses; idle connections time out. */
static void test_limits(void)
{
	struct tally_net_listener_opts o = { .max_connections = 2 };
	struct tally_net_addr a = parse("127.0.0.1:0", 0);
	struct tally_net_listener_stats st;
	struct tally_net_listener *l;
	struct got g = { 0 };
	int c[3];

	l = tally_net_listener_new(NULL, base, "x", &a, &o, &got_ops, &g);
	for (int i = 0; i < 3; i++)
		c[i] = tcp_client(tally_net_listener_port(l));
	write_all(c[0], "a\n", 2);
	write_all(c[1], "b\n", 2);
	write_all(c[2], "c\n", 2); /* in the backlog, not accepted */
	ok(run_until(&g.n, 2), "two connections served");
	for (int i = 0; i < 5; i++)
		turn();
	tally_net_listener_get_stats(l, &st);
	cmp_ok(st.accepted, "==", 2, "the third waits in the backlog");
	cmp_ok(g.n, "==", 2, "its line is not read");
	close(c[0]);
	ok(run_until(&g.n, 3), "the third is served once one closes");
	is(g.items[2], "c", "its line");
	for (int i = 1; i < 3; i++)
		close(c[i]);
	ok(run_until_open(l, 0), "all closed");
	tally_net_listener_free(l);
	got_free(&g);

	o = (struct tally_net_listener_opts){ .idle_timeout = 0.2 };
	a = parse("127.0.0.1:0", 0);
	l = tally_net_listener_new(NULL, base, "x", &a, &o, &got_ops, &g);
	c[0] = tcp_client(tally_net_listener_port(l));
	write_all(c[0], "half a line", 11);
	ok(run_until_open(l, 1), "a connection that goes quiet");
	ok(run_until_open(l, 0), "is closed after idle_timeout");
	tally_net_listener_get_stats(l, &st);
	cmp_ok(st.idle_closed, "==", 1, "counted as idle_closed");
	cmp_ok(g.n, "==", 0, "its unfinished line is not an item");
	close(c[0]);
	tally_net_listener_free(l);
	got_free(&g);
}

/*
 * A receive buffer too small for what is sent: the kernel drops the
 * rest, and SO_RXQ_OVFL's count comes with the next datagram read, so
 * every datagram sent is either read or counted as a kernel drop.
 */
static void test_kernel_drops(void)
{
	struct tally_net_listener_opts o = { .max_items = 1000,
					     .rcvbuf = 4096 };
	struct tally_net_addr a = parse("127.0.0.1:0", TALLY_NET_UDP);
	struct tally_net_listener_stats st;
	struct tally_net_listener *l;
	struct sockaddr_in to;
	struct got g = { 0 };
	char msg[512];
	int c;

	l = tally_net_listener_new(NULL, base, "x", &a, &o, &got_ops, &g);
	if (!ok(l != NULL, "UDP listener with rcvbuf 4096"))
		return;
	tally_net_listener_get_stats(l, &st);
	ok(st.rcvbuf >= 4096 && st.rcvbuf < 65536,
	   "the receive buffer asked for: %zu bytes (doubled by the kernel)",
	   st.rcvbuf);
	c = udp_client(tally_net_listener_port(l), &to);
	memset(msg, 'x', sizeof(msg));
	/* nothing is read while they are sent: most cannot fit */
	for (int i = 0; i < 200; i++)
		sendto(c, msg, sizeof(msg), 0, (struct sockaddr *)&to,
		       sizeof(to));
	for (int i = 0; i < 5; i++)
		turn();
	tally_net_listener_get_stats(l, &st);
	cmp_ok(g.n, "<", 200, "the buffer held %zu of 200", g.n);
	/* the drops are reported with the next datagram queued */
	sendto(c, "last", 4, 0, (struct sockaddr *)&to, sizeof(to));
	ok(run_until(&g.n, g.n + 1), "a datagram after the flood");
	tally_net_listener_get_stats(l, &st);
	cmp_ok(st.kernel_drops, "==", 201 - g.n,
	       "read (%zu) + kernel drops (%llu) = sent (201)", g.n,
	       (unsigned long long)st.kernel_drops);
	is(g.items[g.n - 1], "last", "the last one read is the one after");
	close(c);
	tally_net_listener_free(l);
	got_free(&g);

	/*
	 * A big buffer: what was asked (forced past rmem_max with
	 * CAP_NET_ADMIN), or rmem_max without it; doubled by the kernel.
	 */
	o.rcvbuf = 8 << 20;
	a = parse("127.0.0.1:0", TALLY_NET_UDP);
	l = tally_net_listener_new(NULL, base, "x", &a, &o, &got_ops, &g);
	tally_net_listener_get_stats(l, &st);
	{
		FILE *f = fopen("/proc/sys/net/core/rmem_max", "r");
		unsigned long max = 0;

		if (!f || fscanf(f, "%lu", &max) != 1)
			max = 0;
		if (f)
			fclose(f);
		ok(st.rcvbuf == 2 * (8 << 20) ||
			   (max < (8 << 20) && st.rcvbuf == 2 * max),
		   "8 MiB asked: %zu bytes (rmem_max %lu)", st.rcvbuf, max);
	}
	tally_net_listener_free(l);
}

/* read_now reads what is queued without the loop (at stop). */
static void test_read_now(void)
{
	struct tally_net_addr a = parse("127.0.0.1:0", TALLY_NET_UDP);
	struct tally_net_listener *l;
	struct sockaddr_in to;
	struct got g = { 0 };
	int c;

	l = tally_net_listener_new(NULL, base, "x", &a, NULL, &got_ops, &g);
	c = udp_client(tally_net_listener_port(l), &to);
	for (int i = 0; i < 10; i++)
		sendto(c, "q", 1, 0, (struct sockaddr *)&to, sizeof(to));
	cmp_ok(tally_net_listener_read_now(l, 4), "==", 4,
	       "read_now(4) delivers 4");
	cmp_ok(tally_net_listener_read_now(l, 100), "==", 6,
	       "read_now(100) the 6 left");
	close(c);
	tally_net_listener_free(l);
	got_free(&g);
}

static void test_unix_stream(void)
{
	char spec[200];
	struct tally_net_addr a;
	struct tally_net_listener *l;
	struct got g = { 0 };
	int c;

	snprintf(spec, sizeof(spec), "unix:%s/l.sock",
		 tap_tmpdir("tally-net-listen"));
	a = parse(spec, 0);
	l = tally_net_listener_new(NULL, base, "x", &a, NULL, &got_ops, &g);
	if (!ok(l != NULL, "unix stream listener"))
		return;
	c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (connect(c, (struct sockaddr *)&a.sa, a.salen) < 0)
		bail_out("connect: %s", strerror(errno));
	write_all(c, "u1\nu2\n", 6);
	ok(run_until(&g.n, 2), "lines over a unix socket");
	close(c);
	tally_net_listener_free(l);
	ok(access(a.path, F_OK) < 0, "its file removed on free");
	got_free(&g);
}

/* A listen name: each address of it bound, on one port. */
static void test_name(void)
{
	struct tally_net_addr a = parse("localhost:0", TALLY_NET_UDP);
	struct tally_net_listener *l;
	struct sockaddr_in6 to6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in to;
	struct got g = { 0 };
	int c, c6;

	l = tally_net_listener_new(NULL, base, "listen \"localhost:0\"", &a,
				   NULL, &got_ops, &g);
	if (!ok(l != NULL, "a listener on localhost:0"))
		return;
	c = udp_client(tally_net_listener_port(l), &to);
	sendto(c, "v4", 2, 0, (struct sockaddr *)&to, sizeof(to));
	ok(run_until(&g.n, 1), "127.0.0.1 is bound");
	c6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	to6.sin6_addr = in6addr_loopback;
	to6.sin6_port = htons(tally_net_listener_port(l));
	if (c6 < 0 || sendto(c6, "v6", 2, 0, (struct sockaddr *)&to6,
			     sizeof(to6)) < 0) {
		skip(2, "no IPv6 loopback here");
	} else {
		ok(run_until(&g.n, 2), "::1 is bound, on the same port");
		is(g.items[1], "v6", "its datagram");
	}
	close(c);
	if (c6 >= 0)
		close(c6);
	tally_net_listener_free(l);
	got_free(&g);

	a = parse("no-such-host.invalid:0", TALLY_NET_UDP);
	errno = 0;
	ok(!tally_net_listener_new(NULL, base, "listen \"x\"", &a, NULL,
				   &got_ops, &g) &&
		   errno == ENOENT,
	   "a name the hosts file lacks is refused (no DNS query): ENOENT");
}

/*
 * The port rule (tally/mode.h): a user collector's listener takes a port
 * the kernel chooses, so a configured port held by someone else is no
 * obstacle. Last: the mode stays user for the rest of the program.
 */
static void test_port_rule(void)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	socklen_t sl = sizeof(in);
	int held = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct tally_net_listener *l;
	struct tally_net_addr a;
	struct got g = { 0 };
	char spec[64];

	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	bind(held, (struct sockaddr *)&in, sizeof(in));
	getsockname(held, (struct sockaddr *)&in, &sl);
	snprintf(spec, sizeof(spec), "127.0.0.1:%u", ntohs(in.sin_port));
	a = parse(spec, TALLY_NET_UDP);
	errno = 0;
	ok(!tally_net_listener_new(NULL, base, "x", &a, NULL, &got_ops, &g) &&
		   errno == EADDRINUSE,
	   "system collector: the configured port, taken: EADDRINUSE");
	setenv("XDG_RUNTIME_DIR", tap_tmpdir("tally-net-listen"), 1);
	tally_mode_setup(true);
	l = tally_net_listener_new(NULL, base, "x", &a, NULL, &got_ops, &g);
	ok(l && tally_net_listener_port(l) != ntohs(in.sin_port),
	   "user collector: a port the kernel chose (%u, not %u)",
	   l ? tally_net_listener_port(l) : 0, ntohs(in.sin_port));
	tally_net_listener_free(l);
	close(held);
}

int main(void)
{
	static const struct timeval zero = { 0, 0 };
	struct event *tick;

	plan(NO_PLAN);
	base = event_base_new();
	/* a 0 s timer re-armed every loop turn counts the turns */
	tick = event_new(base, -1, 0, on_tick, event_self_cbarg());
	evtimer_add(tick, &zero);
	test_dgram_cap();
	event_free(tick);
	test_coalescing();
	test_stream();
	test_limits();
	test_read_now();
	test_kernel_drops();
	test_unix_stream();
	test_name();
	test_port_rule();
	event_base_free(base);
	return done_testing();
}
