/* SPDX-License-Identifier: MIT */
/*
 * t/unit/net-sender.c - the reconnecting sender against a loopback server
 * that refuses, accepts, stalls and closes mid-stream (tally/net.h)
 *
 * The server is this process, on the sender's event loop, so what each
 * side did at a given moment is known exactly: "nothing sent twice,
 * nothing lost within the buffer" is checked byte for byte, with the loss
 * window (what the kernel held when the connection was reset) computed
 * from the counters. Waits are bounded loops on conditions; the only
 * times asserted are lower bounds and the backoff the sender chose.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include <tally/net.h>
#include <tally/record.h>

#include "tap.h"

#define TIMEOUT_S 30.0

static struct event_base *base;

/* A test server: one listening socket, one connection at a time. */
struct srv {
	int lfd;
	int cfd;
	uint16_t port;
	bool reading;	    /* read what arrives */
	bool close_at_once; /* accept and close every connection */
	char *buf;	    /* bytes of the current connection */
	size_t len, cap;
	char *done[16]; /* bytes of each ended connection */
	size_t done_len[16];
	size_t ndone;
	int accepts;
};

static void srv_append(struct srv *s, const char *p, size_t n)
{
	if (s->len + n + 1 > s->cap) {
		s->cap = (s->len + n + 1) * 2;
		s->buf = realloc(s->buf, s->cap);
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	s->buf[s->len] = '\0';
}

/* The current connection is over: keep what it brought. */
static void srv_end(struct srv *s, bool reset)
{
	if (reset) {
		struct linger lg = { 1, 0 };

		setsockopt(s->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	close(s->cfd);
	s->cfd = -1;
	if (s->ndone < 16) {
		s->done[s->ndone] = s->buf ? s->buf : strdup("");
		s->done_len[s->ndone++] = s->len;
	} else {
		free(s->buf);
	}
	s->buf = NULL;
	s->len = s->cap = 0;
}

/* Bound to 127.0.0.1:0; listening only if @listening (else refusing). */
static void srv_init(struct srv *s, bool listening, int rcvbuf)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	socklen_t sl = sizeof(in);
	int on = 1;

	memset(s, 0, sizeof(*s));
	s->cfd = -1;
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			0);
	setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	/* small buffers: the kernel holds little, the sender the rest */
	if (rcvbuf)
		setsockopt(s->lfd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
			   sizeof(rcvbuf));
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s->lfd, (struct sockaddr *)&in, sizeof(in)) < 0)
		bail_out("bind: %s", strerror(errno));
	getsockname(s->lfd, (struct sockaddr *)&in, &sl);
	s->port = ntohs(in.sin_port);
	if (listening && listen(s->lfd, 16) < 0)
		bail_out("listen: %s", strerror(errno));
}

/* Accept, read, notice ends: what the server does between loop turns. */
static void srv_pump(struct srv *s)
{
	char buf[65536];

	if (s->cfd < 0) {
		s->cfd = accept4(s->lfd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (s->cfd < 0)
			return;
		s->accepts++;
		if (s->close_at_once) {
			srv_end(s, false);
			return;
		}
	}
	while (s->reading) {
		ssize_t r = read(s->cfd, buf, sizeof(buf));

		if (r > 0) {
			srv_append(s, buf, (size_t)r);
			continue;
		}
		if (r == 0 || (errno != EAGAIN && errno != EINTR))
			srv_end(s, false);
		break;
	}
}

static void srv_free(struct srv *s)
{
	if (s->cfd >= 0)
		close(s->cfd);
	close(s->lfd);
	free(s->buf);
	for (size_t i = 0; i < s->ndone; i++)
		free(s->done[i]);
}

static struct srv *pumped;

/* One loop turn (at most 50 ms of sleep), then the server's turn. */
static void turn(void)
{
	static const struct timeval guard = { 0, 50000 };

	event_base_loopexit(base, &guard);
	event_base_loop(base, EVLOOP_ONCE);
	if (pumped)
		srv_pump(pumped);
}

#define WAIT(cond)                                                            \
	({                                                                    \
		int64_t end_ = tally_monotonic_ns() +                         \
			       (int64_t)(TIMEOUT_S * 1e9);                    \
		while (!(cond) && tally_monotonic_ns() < end_)                \
			turn();                                               \
		(cond);                                                       \
	})

static struct tally_net_sender_stats stats(struct tally_net_sender *t)
{
	struct tally_net_sender_stats st;

	tally_net_sender_get_stats(t, &st);
	return st;
}

static struct tally_net_addr server(const char *spec)
{
	struct tally_net_addr a;
	char err[TALLY_NET_ERRLEN];

	if (tally_net_addr_parse("server", spec, TALLY_NET_UNIX, &a, err,
				 sizeof(err)) < 0)
		bail_out("%s", err);
	return a;
}

/* A server (see srv_init), pumped by turn(), and a sender to it. */
static struct tally_net_sender *
srv_sender(struct srv *s, bool listening, int rcvbuf,
	   const struct tally_net_sender_opts *o)
{
	struct tally_net_addr a;
	char spec[64];

	srv_init(s, listening, rcvbuf);
	pumped = s;
	snprintf(spec, sizeof(spec), "127.0.0.1:%u", s->port);
	a = server(spec);
	return tally_net_sender_new(NULL, base, "server \"test\"", &a, o);
}

static double backoff_cap(unsigned k, double min, double max)
{
	double d = min;

	while (--k && d < max)
		d *= 2;
	return d < max ? d : max;
}

/*
 * Wait for @n consecutive failures (attempts, or with @drops connections
 * that ended at once): the k-th waits in [d/2, d], d = 0.01 * 2^(k-1)
 * capped at 0.08 s. Return: whether all @n came, each within bounds.
 */
static bool backoffs_ok(struct tally_net_sender *t, bool drops, unsigned n)
{
	bool good = true;

	for (unsigned k = 1; k <= n; k++) {
		double cap = backoff_cap(k, 0.01, 0.08);
		struct tally_net_sender_stats st;

		if (!WAIT((drops ? stats(t).disconnects
				 : stats(t).connect_failures) >= k))
			return false;
		st = stats(t);
		if (st.backoff < cap / 2 || st.backoff > cap) {
			good = false;
			diag("%s %u: backoff %.4f s not in [%.4f, %.4f]",
			     drops ? "drop" : "failure", k, st.backoff, cap / 2,
			     cap);
		}
	}
	return good;
}

/*
 * A server that refuses: every attempt fails, the wait grows as
 * min * 2^(n-1) capped at max, jittered into [d/2, d]; messages sent
 * meanwhile are kept and delivered, once, when it listens.
 */
static void test_refused(void)
{
	struct tally_net_sender_opts o = { .backoff_min = 0.01,
					   .backoff_max = 0.08 };
	struct tally_net_sender_stats st;
	struct tally_net_sender *t;
	struct srv s;
	bool bounds;

	t = srv_sender(&s, false, 0, &o);
	ok(t != NULL, "sender to a port that refuses");
	ok(tally_net_sender_send(t, "m1\n", 3) == 0 &&
		   tally_net_sender_send(t, "m2\n", 3) == 0 &&
		   tally_net_sender_send(t, "m3\n", 3) == 0,
	   "messages are accepted while the server is down");
	bounds = backoffs_ok(t, false, 7);
	st = stats(t);
	cmp_ok(st.connect_failures, ">=", 7, "7 failed attempts");
	ok(bounds, "each wait in [d/2, d], d = 0.01 s * 2^(n-1) capped at "
		   "0.08 s");
	cmp_ok(st.connects, "==", 0, "no connection");
	cmp_ok(st.buffered, "==", 9, "9 bytes kept");
	ok(!st.connected, "not connected");

	s.reading = true;
	if (listen(s.lfd, 16) < 0)
		bail_out("listen: %s", strerror(errno));
	ok(WAIT(s.len == 9), "once the server listens, it gets them");
	is(s.buf, "m1\nm2\nm3\n", "in order, once");
	st = stats(t);
	cmp_ok(st.connects, "==", 1, "connects 1");
	cmp_ok(st.reconnects, "==", 0, "reconnects 0");
	cmp_ok(st.bytes_sent, "==", 9, "bytes_sent 9");
	cmp_ok(st.messages_sent, "==", 3, "messages_sent 3");
	cmp_ok(st.buffered, "==", 0, "nothing left");
	ok(st.connected, "connected");
	cmp_ok(st.backoff, "==", 0, "not waiting");
	tally_net_sender_free(t);
	ok(WAIT(s.ndone == 1), "free closes the connection");
	pumped = NULL;
	srv_free(&s);
}

static void on_ready(void *arg)
{
	(*(int *)arg)++;
}

/* sent(): how often, and the bytes the sender still held at the last one */
static struct tally_net_sender *sent_sender;
static int sents;
static uint64_t sent_left;

static void on_sent(void *arg)
{
	sents++;
	sent_left = stats(sent_sender).buffered;
}

/*
 * A server that accepts and stops reading: the kernel's buffers fill,
 * then the sender's up to max_buffer, then send() says EAGAIN without
 * taking anything; when the server reads again, ready() comes once and
 * everything accepted arrives, in order, once.
 */
static void test_stall(void)
{
	int readies = 0;
	struct tally_net_sender_opts o = { .max_buffer = 65536,
					   .ready = on_ready,
					   .sent = on_sent,
					   .arg = &readies };
	struct tally_net_sender_stats st;
	struct tally_net_sender *t;
	struct evbuffer *expect = evbuffer_new();
	struct srv s;
	char msg[1000];
	int i, rc = 0, err = 0, sents_full;
	size_t before;

	t = srv_sender(&s, true, 4096, &o);
	sent_sender = t;
	ok(WAIT(stats(t).connected), "connected to a server that stalls");
	memset(msg, '.', sizeof(msg));
	msg[sizeof(msg) - 1] = '\n';
	for (i = 0; i < 100000; i++) {
		int n = snprintf(msg, 16, "%09d", i);

		msg[n] = '.';
		rc = tally_net_sender_send(t, msg, sizeof(msg));
		if (rc < 0) {
			err = errno;
			break;
		}
		evbuffer_add(expect, msg, sizeof(msg));
		if (i % 8 == 0)
			turn();
	}
	ok(rc == -1 && err == EAGAIN, "send says EAGAIN when full (after %d "
	   "messages)", i);
	st = stats(t);
	cmp_ok(st.buffered, ">", 65536 - sizeof(msg),
	       "the sender holds max_buffer bytes");
	cmp_ok(st.buffered, "<=", 65536, "and no more");
	before = st.buffered;
	errno = 0;
	ok(tally_net_sender_send(t, msg, sizeof(msg)) == -1 &&
		   errno == EAGAIN && stats(t).buffered == before,
	   "a refused message takes nothing");
	cmp_ok(readies, "==", 0, "no ready() while full");
	sents_full = sents;
	s.reading = true;
	ok(WAIT(readies == 1), "ready() once there is room");
	ok(WAIT(s.len == evbuffer_get_length(expect)),
	   "everything accepted arrives (%zu bytes)",
	   evbuffer_get_length(expect));
	ok(s.len == evbuffer_get_length(expect) &&
		   !memcmp(s.buf, evbuffer_pullup(expect, -1), s.len),
	   "in order, byte for byte, once");
	cmp_ok(readies, "==", 1, "ready() came once");
	ok(WAIT(sent_left == 0) && sents > sents_full,
	   "sent() as the rest went out, the last with nothing left (%d "
	   "calls)",
	   sents - sents_full);
	st = stats(t);
	cmp_ok(st.messages_sent, "==", (uint64_t)i, "messages_sent");
	cmp_ok(st.bytes_sent, "==", s.len, "bytes_sent");
	ok(tally_net_sender_send(t, "ok\n", 3) == 0, "send works again");
	tally_net_sender_free(t);
	evbuffer_free(expect);
	pumped = NULL;
	srv_free(&s);
}

/*
 * The server reads K bytes, then resets the connection while the kernel
 * and the sender still hold more. Expected, with S = bytes the kernel had
 * taken when the connection ended and cut = the start of the line S falls
 * in: connection 1 brought bytes [0, K); connection 2 brings exactly
 * [cut, total); lines wholly in [K, cut) are the loss window. No line
 * reaches the server twice; nothing the sender still held is lost.
 */
static void test_reset(bool one_message)
{
	struct tally_net_sender_opts o = { .backoff_min = 0.2,
					   .backoff_max = 0.4 };
	const size_t line = 7, nlines = 300000, k = 1003;
	size_t total = line * nlines, cut, avail = 0;
	struct tally_net_sender_stats st;
	struct tally_net_sender *t;
	struct srv s;
	char *text;
	uint64_t sent;

	o.delimiter = one_message ? '\n' : 0;
	text = malloc(total + 1);
	for (size_t i = 0; i < nlines; i++)
		snprintf(text + i * line, line + 1, "L%05zu\n", i % 100000);
	t = srv_sender(&s, true, 4096, &o);
	if (one_message) {
		ok(tally_net_sender_send(t, text, total) == 0,
		   "one message of %zu lines", nlines);
	} else {
		bool all = true;

		for (size_t i = 0; i < nlines; i++)
			if (tally_net_sender_send(t, text + i * line, line))
				all = false;
		ok(all, "%zu messages of one line", nlines);
	}
	/* the server has more than K bytes waiting, the sender far more */
	ok(WAIT(s.cfd >= 0 && ioctl(s.cfd, FIONREAD, &avail) == 0 &&
		avail > k),
	   "the kernel holds more than %zu bytes for the server", k);
	for (size_t got = 0; got < k;) {
		char buf[1024];
		ssize_t r = read(s.cfd, buf,
				 k - got < sizeof(buf) ? k - got : sizeof(buf));

		if (r <= 0)
			bail_out("read: %s", strerror(errno));
		srv_append(&s, buf, (size_t)r);
		got += (size_t)r;
	}
	srv_end(&s, true); /* RST: what the kernel held is gone */
	ok(WAIT(stats(t).disconnects == 1), "the sender sees the reset");
	st = stats(t);
	sent = st.bytes_sent;
	cut = (size_t)(sent - sent % line);
	diag("read %zu, sent %llu, cut at %zu, %zu bytes in the loss window",
	     k, (unsigned long long)sent, cut, cut - (k - k % line));
	cmp_ok(sent, ">=", k, "S >= K");
	cmp_ok(sent, "<", total, "the sender still held data (S < total)");
	cmp_ok(st.bytes_resent, "==", sent - cut,
	       "bytes_resent: the unfinished line's start");
	s.reading = true;
	ok(WAIT(s.ndone == 1 && s.len >= total - cut),
	   "connection 2 brings the rest");
	cmp_ok(s.done_len[0], "==", k, "connection 1: the K bytes read");
	ok(!memcmp(s.done[0], text, k), "connection 1: bytes [0, K)");
	cmp_ok(s.len, "==", total - cut, "connection 2: %zu bytes",
	       total - cut);
	ok(s.len == total - cut && !memcmp(s.buf, text + cut, s.len),
	   "connection 2: exactly [cut, total), starting at a line");
	cmp_ok(cut, ">=", k - k % line,
	       "no complete line of connection 1 again on connection 2");
	st = stats(t);
	cmp_ok(st.connects, "==", 2, "connects 2");
	cmp_ok(st.reconnects, "==", 1, "reconnects 1");
	cmp_ok(st.bytes_sent, "==", total + (sent - cut),
	       "bytes_sent: total plus the resent start");
	cmp_ok(st.messages_sent, "==", one_message ? 1 : nlines,
	       "messages_sent");
	cmp_ok(st.buffered, "==", 0, "nothing left");
	tally_net_sender_free(t);
	pumped = NULL;
	srv_free(&s);
	free(text);
}

/*
 * A server that accepts and closes at once: reconnecting waits longer
 * each time (a short-lived connection does not reset the backoff); one
 * that lasted `healthy` does.
 */
static void test_flapping(void)
{
	struct tally_net_sender_opts o = { .backoff_min = 0.01,
					   .backoff_max = 0.08,
					   .healthy = 0.3 };
	struct tally_net_sender_stats st;
	struct tally_net_sender *t;
	struct srv s;
	bool bounds;
	int64_t up;

	t = srv_sender(&s, true, 0, &o);
	s.close_at_once = true;
	bounds = backoffs_ok(t, true, 5);
	st = stats(t);
	cmp_ok(st.disconnects, ">=", 5, "5 connections ended at once");
	ok(bounds, "the waits grew as after failures");
	cmp_ok(st.connect_failures, "==", 0, "no failed attempt");
	cmp_ok(st.reconnects + 1, "==", st.connects, "reconnects");

	/* a connection that lasts resets the backoff */
	s.close_at_once = false;
	ok(WAIT(stats(t).connected), "connected again");
	up = tally_monotonic_ns();
	WAIT((double)(tally_monotonic_ns() - up) / 1e9 > 0.35);
	srv_end(&s, false);
	ok(WAIT(!stats(t).connected), "closed after %.2f s",
	   (double)(tally_monotonic_ns() - up) / 1e9);
	st = stats(t);
	ok(st.backoff >= 0.005 && st.backoff <= 0.01,
	   "after a healthy connection the wait is back in [0.005, 0.01]: "
	   "%.4f",
	   st.backoff);
	tally_net_sender_free(t);
	pumped = NULL;
	srv_free(&s);
}

static bool hosts_has_localhost(void)
{
	FILE *f = fopen("/etc/hosts", "r");
	char line[512];
	bool found = false;

	while (f && fgets(line, sizeof(line), f))
		if (line[0] != '#' && strstr(line, "localhost"))
			found = true;
	if (f)
		fclose(f);
	return found;
}

/* A name (evdns, from the hosts file), a unix socket, send_buffer. */
static void test_names_and_unix(void)
{
	struct tally_net_sender_stats st;
	struct tally_net_sender *t;
	struct tally_net_addr a;
	struct evbuffer *b;
	struct srv s;
	char spec[300];
	int lfd, cfd = -1;
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	char buf[64] = "";
	ssize_t r = 0;

	if (!hosts_has_localhost()) {
		skip(3, "no localhost in /etc/hosts");
	} else {
		srv_init(&s, true, 0);
		s.reading = true;
		pumped = &s;
		snprintf(spec, sizeof(spec), "localhost:%u", s.port);
		a = server(spec);
		t = tally_net_sender_new(NULL, base, "x", &a, NULL);
		tally_net_sender_send(t, "by-name\n", 8);
		ok(WAIT(s.len == 8), "a name resolves and connects");
		is(s.buf, "by-name\n", "its message");
		st = stats(t);
		cmp_ok(st.connect_failures, "==", 0,
		       "one attempt (each address of the name in turn)");
		tally_net_sender_free(t);
		pumped = NULL;
		srv_free(&s);
	}

	snprintf(un.sun_path, sizeof(un.sun_path), "%s/s.sock",
		 tap_tmpdir("tally-net-sender"));
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (bind(lfd, (struct sockaddr *)&un, sizeof(un)) < 0 ||
	    listen(lfd, 4) < 0)
		bail_out("unix server: %s", strerror(errno));
	snprintf(spec, sizeof(spec), "unix:%s", un.sun_path);
	a = server(spec);
	t = tally_net_sender_new(NULL, base, "x", &a, NULL);
	b = evbuffer_new();
	evbuffer_add(b, "u1\nu2\n", 6);
	ok(tally_net_sender_send_records(t, b, 2) == 0 &&
		   evbuffer_get_length(b) == 0,
	   "send_records takes the whole buffer");
	WAIT((cfd >= 0 || (cfd = accept(lfd, NULL, NULL)) >= 0) &&
	     (r = recv(cfd, buf, sizeof(buf) - 1, MSG_DONTWAIT)) == 6);
	is(buf, "u1\nu2\n", "over a unix socket");
	ok(WAIT(stats(t).messages_sent == 1), "the message is sent");
	cmp_ok(stats(t).records_sent, "==", 2, "with its 2 records");
	cmp_ok(stats(t).records_buffered, "==", 0, "none left buffered");
	tally_net_sender_free(t);
	evbuffer_free(b);
	if (cfd >= 0)
		close(cfd);
	close(lfd);
}

/*
 * hold_when_down: nothing is taken while no connection is up, so an
 * output's records wait in the core's queue (bounded in records) during
 * an outage; ready() comes once a connection is, and again after the
 * next outage.
 */
static void test_hold_when_down(void)
{
	int readies = 0;
	struct tally_net_sender_opts o = { .backoff_min = 0.01,
					   .backoff_max = 0.02,
					   .hold_when_down = true,
					   .ready = on_ready,
					   .arg = &readies };
	struct tally_net_sender *t;
	struct srv s;

	t = srv_sender(&s, false, 0, &o);
	ok(tally_net_sender_send(t, "h1\n", 3) == -1 && errno == EAGAIN,
	   "hold_when_down: EAGAIN before the first connection");
	ok(WAIT(stats(t).connect_failures >= 2), "server still refuses");
	ok(tally_net_sender_send(t, "h1\n", 3) == -1 && errno == EAGAIN,
	   "EAGAIN while it refuses");
	cmp_ok(stats(t).buffered, "==", 0, "nothing taken");
	cmp_ok(readies, "==", 0, "no ready() while down");
	s.reading = true;
	if (listen(s.lfd, 16) < 0)
		bail_out("listen: %s", strerror(errno));
	ok(WAIT(readies == 1), "ready() once connected");
	ok(tally_net_sender_send(t, "h1\n", 3) == 0, "then send takes it");
	ok(WAIT(s.len == 3), "and it arrives");
	srv_end(&s, false);
	ok(WAIT(!stats(t).connected), "server closes: sender is down");
	ok(tally_net_sender_send(t, "h2\n", 3) == -1 && errno == EAGAIN,
	   "EAGAIN again while down");
	ok(WAIT(readies == 2), "ready() again on reconnect");
	ok(tally_net_sender_send(t, "h2\n", 3) == 0 && WAIT(s.len == 3),
	   "and the next message goes on the new connection");
	is(s.buf, "h2\n", "once");
	tally_net_sender_free(t);
	pumped = NULL;
	srv_free(&s);
}

/* Free with data still held: counted for the caller, nothing leaks. */
static void test_free_pending(void)
{
	struct evbuffer *b;
	struct tally_net_sender *t;
	struct tally_net_addr a;
	struct srv s;

	t = srv_sender(&s, false, 0, NULL);
	tally_net_sender_send(t, "0123456789", 10);
	b = evbuffer_new();
	evbuffer_add(b, "a\nb\nc\n", 6);
	ok(tally_net_sender_send_records(t, b, 3) == 0, "records taken");
	evbuffer_add(b, "d\ne\n", 4);
	ok(tally_net_sender_send_records(t, b, 2) == 0, "and more");
	evbuffer_free(b);
	turn();
	cmp_ok(stats(t).buffered, "==", 20, "buffered says what free drops");
	cmp_ok(stats(t).records_buffered, "==", 5,
	       "records_buffered too, in the caller's unit");
	cmp_ok(stats(t).records_sent, "==", 0, "none sent");
	tally_net_sender_free(t);
	tally_net_sender_free(NULL);
	pumped = NULL;
	srv_free(&s);
	a = server("127.0.0.1:1");
	a.flags |= TALLY_NET_LISTEN;
	ok(!tally_net_sender_new(NULL, base, "x", &a, NULL) && errno == EINVAL,
	   "a listen address is refused: EINVAL");
}

int main(void)
{
	plan(NO_PLAN);
	base = event_base_new();
	test_refused();
	test_stall();
	test_reset(false);
	test_reset(true);
	test_flapping();
	test_names_and_unix();
	test_hold_when_down();
	test_free_pending();
	event_base_free(base);
	return done_testing();
}
