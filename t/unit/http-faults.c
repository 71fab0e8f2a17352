/* SPDX-License-Identifier: MIT */
/*
 * t/unit/http-faults.c - the core's HTTP client (tally/http.h) against
 * servers that misbehave: t/http-faults.py, a fake server in Python, since
 * no real server sends an endless answer, trickles its headers or closes
 * on a 413 when asked to. Each case checks what the client makes of it:
 * bounded memory, a deadline, a message fit for a log line, too_large.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include <tally/http.h>
#include <tally/log.h>
#include <tally/record.h>

#include "tap.h"

static char logfile[512], portfile[512];
static pid_t server = -1;
static uint16_t port;

static struct done_rec {
	int called;
	struct tally_http_result r;
	char error[400];
	char message[512];
} got;

static void on_done(void *arg, const struct tally_http_result *r)
{
	struct done_rec *d = arg;

	d->called++;
	d->r = *r;
	snprintf(d->error, sizeof(d->error), "%s", r->error);
	snprintf(d->message, sizeof(d->message), "%s", r->message);
}

/* Run the loop until the request is done, at most 60 s. */
static int run_until_done(struct event_base *base)
{
	int64_t until = tally_monotonic_ns() + 60 * 1000000000ll;

	while (!got.called && tally_monotonic_ns() < until)
		event_base_loop(base, EVLOOP_ONCE);
	return got.called;
}

static void start_server(const char *mode)
{
	const char *py = getenv("PYTHON3"), *src = getenv("top_srcdir");
	const char *dir = tap_tmpdir("tally-http-faults");
	char prog[512];

	if (!py)
		py = "/usr/bin/python3";
	if (!src)
		src = "..";
	snprintf(prog, sizeof(prog), "%s/t/http-faults.py", src);
	snprintf(logfile, sizeof(logfile), "%s/log-%s", dir, mode);
	snprintf(portfile, sizeof(portfile), "%s/port-%s", dir, mode);
	server = fork();
	if (server == 0) {
		execl(py, py, prog, portfile, logfile, mode, (char *)NULL);
		_exit(127);
	}
	port = (uint16_t)tap_wait_port(portfile, "the fake server");
}

static void stop_server(void)
{
	if (server > 0) {
		kill(server, SIGTERM);
		waitpid(server, NULL, 0);
		server = -1;
	}
}

/* Peak resident set of this process, in KiB. */
static long max_rss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* One request of @body_len bytes to a fresh server in @mode. */
static struct tally_http_client *run(struct event_base *base,
				     const char *mode,
				     const struct tally_http_opts *o,
				     size_t body_len)
{
	struct tally_http_url u = { .host = "127.0.0.1" };
	struct tally_http_client *c;
	struct evbuffer *body = evbuffer_new();

	start_server(mode);
	u.port = port;
	c = tally_http_client_new(NULL, base, &u, o);
	for (size_t i = 0; i < body_len; i += 16)
		evbuffer_add(body, "m,h=a v=1i 1234\n",
			     body_len - i < 16 ? body_len - i : 16);
	memset(&got, 0, sizeof(got));
	if (tally_http_client_request(c, "POST", "/write", NULL, 0, body,
				      on_done, &got) < 0)
		bail_out("request: %s", strerror(errno));
	evbuffer_free(body);
	ok(run_until_done(base), "%s: done", mode);
	return c;
}

static void test_endless(struct event_base *base, const char *mode)
{
	struct tally_http_opts o = { .backoff_min = 0.01, .backoff_max = 0.02,
				     .max_attempts = 3 };
	struct tally_http_client *c;
	struct tally_http_stats st;
	long before = max_rss_kib();

	c = run(base, mode, &o, 16);
	cmp_ok(got.r.outcome, "==", TALLY_HTTP_GAVE_UP,
	       "%s: an answer past max_answer fails the attempt", mode);
	ok(strstr(got.error, "protocol error: answer longer than 65536"),
	   "%s: says so: %s", mode, got.error);
	tally_http_client_get_stats(c, &st);
	cmp_ok(st.failures_protocol, "==", 3, "%s: 3 protocol failures",
	       mode);
	cmp_ok(st.failures_connect, "==", 0, "%s: not connection errors",
	       mode);
	cmp_ok(max_rss_kib() - before, "<", 32 * 1024,
	       "%s: memory stays bounded (%ld KiB more)", mode,
	       max_rss_kib() - before);
	tally_http_client_free(c);
	stop_server();
}

static void test_trickle(struct event_base *base)
{
	struct tally_http_opts o = { .timeout = 1.5, .backoff_min = 0.01,
				     .backoff_max = 0.02, .max_attempts = 1 };
	struct tally_http_client *c;
	struct tally_http_stats st;
	int64_t t0 = tally_monotonic_ns();
	double took;

	c = run(base, "trickle", &o, 16);
	took = (tally_monotonic_ns() - t0) / 1e9;
	cmp_ok(got.r.outcome, "==", TALLY_HTTP_GAVE_UP,
	       "trickle: headers a line a second run out of time");
	ok(strstr(got.error, "timed out"), "trickle: says so: %s", got.error);
	/* a bound only against a hang: the deadline is 1.5 s */
	cmp_ok(took, "<", 30, "trickle: not held for ever (%.1f s)", took);
	tally_http_client_get_stats(c, &st);
	cmp_ok(st.failures_timeout, "==", 1, "trickle: counted as a timeout");
	cmp_ok(st.failures_connect, "==", 0,
	       "trickle: not as a connection failure");
	tally_http_client_free(c);
	stop_server();
}

static void test_413(struct event_base *base)
{
	struct tally_http_opts o = { .backoff_min = 0.01, .backoff_max = 0.02,
				     .max_attempts = 5 };
	struct tally_http_client *c;
	struct tally_http_stats st;

	c = run(base, "413close", &o, 2 * TALLY_HTTP_LARGE_BODY);
	cmp_ok(got.r.outcome, "==", TALLY_HTTP_REJECTED,
	       "413close: rejected, not retried for ever");
	ok(got.r.too_large, "413close: too_large (%s)", got.error);
	tally_http_client_get_stats(c, &st);
	cmp_ok(st.too_large, "==", 1, "413close: counted");
	cmp_ok(st.requests, "<=", 2, "413close: %llu attempts",
	       (unsigned long long)st.requests);
	tally_http_client_free(c);
	stop_server();
}

static void test_messages(struct event_base *base)
{
	struct tally_http_opts o = { .backoff_min = 0.01, .backoff_max = 0.02,
				     .max_attempts = 1 };
	struct tally_http_client *c;
	struct tally_http_stats st;

	c = run(base, "500esc", &o, 16);
	cmp_ok(got.r.status, "==", 500, "500esc: status");
	is(got.message, "engine \\x1b[31mfailed\\nforged: line\\x00hidden",
	   "500esc: the message, control characters escaped");
	tally_http_client_free(c);
	stop_server();

	c = run(base, "600", &o, 16);
	cmp_ok(got.r.outcome, "==", TALLY_HTTP_GAVE_UP,
	       "600: a status outside 100-599 fails the attempt");
	is(got.error, "protocol error: status 600 outside 100-599",
	   "600: says so");
	tally_http_client_get_stats(c, &st);
	cmp_ok(st.failures_protocol, "==", 1, "600: a protocol failure");
	cmp_ok(st.failures_5xx, "==", 0, "600: not a 5xx");
	tally_http_client_free(c);
	stop_server();

	c = run(base, "301", &o, 16);
	cmp_ok(got.r.outcome, "==", TALLY_HTTP_REJECTED, "301: rejected");
	is(got.message,
	   "redirect to http://elsewhere.invalid/write is not followed: set "
	   "url to where the server is",
	   "301: says where it points");
	tally_http_client_free(c);
	stop_server();
}

static void test_unresolvable(struct event_base *base)
{
	struct tally_http_opts o = { .backoff_min = 0.01, .backoff_max = 0.02,
				     .max_attempts = 1 };
	struct tally_http_url u = { .host = "no-such-host.invalid",
				    .port = 8086 };
	struct tally_http_client *c = tally_http_client_new(NULL, base, &u,
							    &o);

	memset(&got, 0, sizeof(got));
	tally_http_client_request(c, "POST", "/write", NULL, 0, NULL, on_done,
				  &got);
	ok(run_until_done(base), "unresolvable: done");
	ok(strstr(got.error, "cannot resolve no-such-host.invalid"),
	   "unresolvable: says so: %s", got.error);
	tally_http_client_free(c);
}

static void test_peer_text(void)
{
	char out[16];

	tally_log_peer_text(out, sizeof(out), "a\x1b\n\0b", 5);
	is(out, "a\\x1b\\n\\x00b", "peer text: escaped");
	tally_log_peer_text(out, sizeof(out), "0123456789abcdefghij", 20);
	is(out, "0123456789ab...", "peer text: cut, marked");
	tally_log_peer_text(out, sizeof(out), "  x \r\n", 6);
	is(out, "x", "peer text: white space at the ends left out");
	tally_log_peer_text(out, sizeof(out), "a\xff\xc3(\xc3\xa9", 6);
	is(out, "a\\xff\\xc3(\xc3\xa9",
	   "peer text: bytes of no UTF-8 character escaped, others kept");
	tally_log_peer_text(out, sizeof(out), "\xed\xa0\x80", 3);
	is(out, "\\xed\\xa0\\x80", "peer text: a surrogate escaped");
	tally_log_peer_text(out, sizeof(out), "0123456789\xe2\x82\xacxyz", 16);
	is(out, "0123456789...", "peer text: a cut never splits a character");
}

int main(void)
{
	struct event_base *base;

	plan(NO_PLAN);
	signal(SIGPIPE, SIG_IGN);
	test_peer_text();
	base = event_base_new();
	test_endless(base, "chunked");
	test_endless(base, "huge");
	test_trickle(base);
	test_413(base);
	test_messages(base);
	test_unresolvable(base);
	event_base_free(base);
	return done_testing();
}
