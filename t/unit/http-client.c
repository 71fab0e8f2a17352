/* SPDX-License-Identifier: MIT */
/*
 * t/unit/http-client.c - the core's HTTP client (tally/http.h) against a
 * real local HTTP server: t/http-recorder.py, a recording server written
 * in Python (http.server) that logs every request it gets and answers as
 * a script file says, so that retries, Retry-After, rejections and
 * connection errors can be made to happen on demand
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include <tally/http.h>
#include <tally/record.h>

#include "tap.h"

static char logfile[512], scriptfile[512], portfile[512];
static pid_t server = -1;
static uint16_t port;

static struct done_rec {
	int called;
	struct tally_http_result r;
	char body[4096];
	char error[128];
	struct tally_http_client *free_me;
} got;

static void on_done(void *arg, const struct tally_http_result *r)
{
	struct done_rec *d = arg;

	d->called++;
	d->r = *r;
	snprintf(d->body, sizeof(d->body), "%s", r->body);
	snprintf(d->error, sizeof(d->error), "%s", r->error);
	if (d->free_me) {
		tally_http_client_free(d->free_me);
		d->free_me = NULL;
	}
}

/* Run the loop until the request is done, at most 30 s. */
static int run_until_done(struct event_base *base)
{
	int64_t until = tally_monotonic_ns() + 30 * 1000000000ll;

	while (!got.called && tally_monotonic_ns() < until)
		event_base_loop(base, EVLOOP_ONCE);
	return got.called;
}

static void script(const char *text)
{
	FILE *f = fopen(scriptfile, "w");

	fputs(text, f);
	fclose(f);
}

/* Lines of the recorder's log, or 0. */
static int log_lines(void)
{
	FILE *f = fopen(logfile, "r");
	int n = 0, ch;

	if (!f)
		return 0;
	while ((ch = fgetc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

/* Line @n (1-based) of the log into @buf. */
static const char *log_line(int n, char *buf, size_t len)
{
	FILE *f = fopen(logfile, "r");

	buf[0] = '\0';
	if (!f)
		return buf;
	while (n-- > 0 && fgets(buf, (int)len, f))
		;
	fclose(f);
	return buf;
}

static void start_server(void)
{
	const char *py = getenv("PYTHON3"), *src = getenv("top_srcdir");
	const char *dir = tap_tmpdir("tally-http-client");
	char rec[512];

	if (!py)
		py = "/usr/bin/python3";
	if (!src)
		src = "..";
	snprintf(rec, sizeof(rec), "%s/t/http-recorder.py", src);
	snprintf(logfile, sizeof(logfile), "%s/log", dir);
	snprintf(scriptfile, sizeof(scriptfile), "%s/script", dir);
	snprintf(portfile, sizeof(portfile), "%s/port", dir);
	server = fork();
	if (server == 0) {
		execl(py, py, rec, portfile, logfile, "--script", scriptfile,
		      (char *)NULL);
		_exit(127);
	}
	port = (uint16_t)tap_wait_port(portfile, "the recording server");
}

static void stop_server(void)
{
	if (server > 0) {
		kill(server, SIGTERM);
		waitpid(server, NULL, 0);
	}
}

static void test_url(void)
{
	static const struct {
		const char *url;
		int ok;
		const char *host;
		unsigned port;
		const char *prefix;
		const char *msg;
	} cases[] = {
		{ "http://127.0.0.1:8086", 1, "127.0.0.1", 8086, "", NULL },
		{ "http://Influx.Example:8086/", 1, "influx.example", 8086, "",
		  NULL },
		{ "http://db/influx/", 1, "db", 80, "/influx", NULL },
		{ "http://[::1]:9999/a/b", 1, "::1", 9999, "/a/b", NULL },
		{ "https://db:8086", 0, NULL, 0, NULL, "no TLS yet" },
		{ "ftp://db", 0, NULL, 0, NULL, "scheme must be http" },
		{ "http://u:p@db:8086", 0, NULL, 0, NULL, "credentials" },
		{ "http://db:8086/write?db=x", 0, NULL, 0, NULL, "no query" },
		{ "http://db:0", 0, NULL, 0, NULL, "port out of range" },
		{ "127.0.0.1:8086", 0, NULL, 0, NULL, "write http://host:port" },
		{ "", 0, NULL, 0, NULL, "empty" },
		{ NULL },
	};

	for (int i = 0; cases[i].url; i++) {
		struct tally_http_url u;
		char err[TALLY_HTTP_ERRLEN] = "";
		int rc = tally_http_url_parse("url", cases[i].url, &u, err,
					      sizeof(err));

		if (cases[i].ok) {
			ok(rc == 0, "url %s parses", cases[i].url);
			is(u.host, cases[i].host, "host");
			cmp_ok(u.port, "==", cases[i].port, "port");
			is(u.prefix, cases[i].prefix, "prefix");
		} else {
			ok(rc < 0 && errno == EINVAL, "url \"%s\" refused",
			   cases[i].url);
			ok(strstr(err, cases[i].msg) != NULL, "says why: %s",
			   err);
		}
	}
}

static struct tally_http_client *client(struct event_base *base,
					const char *prefix,
					const struct tally_http_opts *o)
{
	struct tally_http_url u = { .host = "127.0.0.1", .port = port };

	snprintf(u.prefix, sizeof(u.prefix), "%s", prefix);
	return tally_http_client_new(NULL, base, &u, o);
}

static void test_requests(struct event_base *base)
{
	struct tally_http_opts o = { .gzip = true, .backoff_min = 0.01,
				     .backoff_max = 0.05 };
	struct tally_http_header h[] = {
		{ "Authorization", "Token s3cret" },
		{ "Content-Type", "text/plain; charset=utf-8" },
	};
	struct tally_http_client *c = client(base, "/pre", &o);
	struct evbuffer *body = evbuffer_new();
	struct tally_http_stats st;
	char line[8192];
	int64_t t0;
	int peer1, peer2;

	/* 1. a gzip POST with headers, answered 204 */
	script("");
	evbuffer_add_printf(body, "m,host=a v=1i 1\nm,host=b v=2 2\n");
	ok(tally_http_client_request(c, "POST", "/write?db=x&precision=ns", h,
				     2, body, on_done, &got) == 0,
	   "request accepted");
	cmp_ok(evbuffer_get_length(body), "==", 0, "body moved in");
	ok(tally_http_client_busy(c), "busy");
	ok(tally_http_client_request(c, "POST", "/x", NULL, 0, NULL, on_done,
				     &got) < 0 &&
		   errno == EBUSY,
	   "a second request meanwhile: EBUSY");
	ok(!got.called, "done is never called from inside request()");
	ok(run_until_done(base), "done");
	cmp_ok(got.r.outcome, "==", TALLY_HTTP_OK, "outcome OK");
	cmp_ok(got.r.status, "==", 204, "status 204");
	cmp_ok(got.r.attempts, "==", 1, "one attempt");
	ok(!tally_http_client_busy(c), "idle after done");
	log_line(1, line, sizeof(line));
	ok(strstr(line, "\"method\": \"POST\""), "method POST");
	ok(strstr(line, "\"path\": \"/pre/write?db=x&precision=ns\""),
	   "prefix + path and query");
	ok(strstr(line, "\"authorization\": \"Token s3cret\""),
	   "the caller's header");
	ok(strstr(line, "\"content-encoding\": \"gzip\"") &&
		   strstr(line, "\"gzip\": true"),
	   "gzip body, Content-Encoding: gzip");
	ok(strstr(line, "\"body\": \"m,host=a v=1i 1\\nm,host=b v=2 2\\n\""),
	   "the body, gunzipped, byte for byte");
	ok(strstr(line, "\"host\": \"127.0.0.1:"), "Host header");
	sscanf(strstr(line, "\"peer\": ") + 8, "%d", &peer1);

	/* 2. 503, then 429 with Retry-After: 1, then 204 */
	memset(&got, 0, sizeof(got));
	script("503 overloaded\n429 retry-after=1\n204\n");
	evbuffer_add_printf(body, "m v=3 3\n");
	t0 = tally_monotonic_ns();
	ok(tally_http_client_request(c, "POST", "/write", NULL, 0, body,
				     on_done, &got) == 0,
	   "request accepted");
	ok(run_until_done(base), "done");
	cmp_ok(got.r.outcome, "==", TALLY_HTTP_OK, "OK after retries");
	cmp_ok(got.r.attempts, "==", 3, "3 attempts: 503, 429, 204");
	cmp_ok((tally_monotonic_ns() - t0) / 1e9, ">=", 1.0,
	       "Retry-After: 1 was honoured (backoff_max is 0.05 s)");
	cmp_ok(log_lines(), "==", 4, "the server saw 4 requests in all");
	log_line(4, line, sizeof(line));
	ok(strstr(line, "\"body\": \"m v=3 3\\n\""),
	   "the retry carries the same body");
	sscanf(strstr(line, "\"peer\": ") + 8, "%d", &peer2);
	cmp_ok(peer1, "==", peer2, "keep-alive: one connection throughout");

	/* 3. 400 with a message: rejected at once, the message returned */
	memset(&got, 0, sizeof(got));
	script("400 {\"error\":\"database not found: \\\"nope\\\"\"}\n");
	evbuffer_add_printf(body, "m v=4 4\n");
	tally_http_client_request(c, "POST", "/write", NULL, 0, body, on_done,
				  &got);
	ok(run_until_done(base), "done");
	cmp_ok(got.r.outcome, "==", TALLY_HTTP_REJECTED, "4xx: rejected");
	cmp_ok(got.r.status, "==", 400, "status 400");
	cmp_ok(got.r.attempts, "==", 1, "never retried");
	is(got.body, "{\"error\":\"database not found: \\\"nope\\\"\"}",
	   "the server's message");
	cmp_ok(log_lines(), "==", 5, "one request");

	/* 4. the connection closed without an answer: retried */
	memset(&got, 0, sizeof(got));
	script("close\n204\n");
	evbuffer_add_printf(body, "m v=5 5\n");
	tally_http_client_request(c, "POST", "/write", NULL, 0, body, on_done,
				  &got);
	ok(run_until_done(base), "done");
	cmp_ok(got.r.outcome, "==", TALLY_HTTP_OK, "OK after a reconnect");
	cmp_ok(got.r.attempts, "==", 2, "2 attempts");

	tally_http_client_get_stats(c, &st);
	cmp_ok(st.requests, "==", 7, "stats: 7 attempts");
	cmp_ok(st.ok, "==", 3, "stats: 3 succeeded");
	cmp_ok(st.retries, "==", 3, "stats: 3 retries");
	cmp_ok(st.failures_5xx, "==", 1, "stats: one 5xx");
	cmp_ok(st.failures_429, "==", 1, "stats: one 429");
	cmp_ok(st.failures_connect, "==", 1, "stats: one connection error");
	cmp_ok(st.rejected, "==", 1, "stats: one rejected");
	ok(st.bytes_body > st.bytes_sent / 4 && st.bytes_sent > 0,
	   "stats: bytes before and after gzip (%llu, %llu)",
	   (unsigned long long)st.bytes_body,
	   (unsigned long long)st.bytes_sent);

	/* 5. max_attempts: given up after 2 x 500 */
	tally_http_client_free(c);
	o.max_attempts = 2;
	o.gzip = false;
	c = client(base, "", &o);
	memset(&got, 0, sizeof(got));
	script("500 a\n500 b\n204\n");
	evbuffer_add_printf(body, "m v=6 6\n");
	tally_http_client_request(c, "PUT", "/x", NULL, 0, body, on_done,
				  &got);
	ok(run_until_done(base), "done");
	cmp_ok(got.r.outcome, "==", TALLY_HTTP_GAVE_UP, "given up");
	cmp_ok(got.r.attempts, "==", 2, "after max_attempts = 2");
	is(got.body, "b", "the last answer's body");
	is(got.error, "HTTP 500", "the last failure");
	log_line(log_lines(), line, sizeof(line));
	ok(strstr(line, "\"method\": \"PUT\"") &&
		   strstr(line, "\"gzip\": false") &&
		   strstr(line, "\"body\": \"m v=6 6\\n\""),
	   "without gzip: the body as it is");

	/* 6. the client may be freed from its own done callback */
	memset(&got, 0, sizeof(got));
	script("");
	got.free_me = c;
	tally_http_client_request(c, "GET", "/ping", NULL, 0, NULL, on_done,
				  &got);
	ok(run_until_done(base) && !got.free_me, "freed from done");
	evbuffer_free(body);
}

static void test_refused(struct event_base *base)
{
	struct tally_http_opts o = { .backoff_min = 0.01, .backoff_max = 0.02,
				     .max_attempts = 3 };
	struct tally_http_url u = { .host = "127.0.0.1" };
	struct tally_http_client *c;
	struct tally_http_stats st;
	struct evbuffer *body;

	/* a port that was free a moment ago: nothing listens there */
	{
		FILE *p = popen("python3 -c 'import socket; s=socket.socket(); "
				"s.bind((\"127.0.0.1\",0)); "
				"print(s.getsockname()[1])'",
				"r");
		unsigned q = 0;

		if (p && fscanf(p, "%u", &q) == 1)
			u.port = (uint16_t)q;
		if (p)
			pclose(p);
	}
	c = tally_http_client_new(NULL, base, &u, &o);
	memset(&got, 0, sizeof(got));
	body = evbuffer_new();
	evbuffer_add(body, "m v=1i 1234\n", 12);
	tally_http_client_request(c, "POST", "/write", NULL, 0, body, on_done,
				  &got);
	evbuffer_free(body);
	ok(run_until_done(base), "done");
	cmp_ok(got.r.outcome, "==", TALLY_HTTP_GAVE_UP,
	       "connection refused 3 times: given up");
	cmp_ok(got.r.status, "==", 0, "no status");
	ok(*got.error, "says why: %s", got.error);
	tally_http_client_get_stats(c, &st);
	cmp_ok(st.failures_connect, "==", 3, "3 connection failures");
	cmp_ok(st.gave_up, "==", 1, "gave_up 1");
	cmp_ok(st.bytes_sent, "==", 0, "no byte counted as sent");
	tally_http_client_free(c);
}

int main(void)
{
	struct event_base *base;

	plan(NO_PLAN);
	test_url();
	start_server();
	base = event_base_new();
	test_requests(base);
	test_refused(base);
	event_base_free(base);
	stop_server();
	return done_testing();
}
