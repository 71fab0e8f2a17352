/* SPDX-License-Identifier: MIT */
/*
 * core/http-client.c - the push outputs' HTTP client (tally/http.h):
 * libevent's evhttp client, one keep-alive connection, one request at a
 * time, retried with the capped jittered backoff of net-internal.h
 *
 * A request lives in the client from tally_http_client_request() to its
 * done callback: the (compressed) body is kept and referenced, not copied,
 * by each attempt. The done callback always runs from a deferred event of
 * its own, never from inside an evhttp callback, so that it may free the
 * client (and with it the connection evhttp is still using there).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <zlib.h>

#include <tally/http.h>
#include <tally/log.h>

#include "net-internal.h"

struct tally_http_client {
	struct tally_instance *inst;
	struct event_base *base;
	struct evdns_base *dns;
	struct evhttp_connection *conn;
	struct tally_http_url url;
	struct tally_http_opts o;
	char hostport[300];	/* the Host header */
	struct event *retry_ev;	/* backoff timer, then the next attempt */
	struct event *done_ev;	/* deferred: the done callback */
	struct event *deadline_ev; /* an attempt's whole timeout */
	bool told_protocol;	/* the max_answer error was logged */
	unsigned large_closes;	/* closes without an answer, large body */
	uint64_t rng;
	unsigned fails;		/* consecutive failed attempts, any request */
	struct tally_http_stats st;

	/* the request (st.busy) */
	enum evhttp_cmd_type cmd;
	char *uri;		/* prefix + path */
	struct tally_http_header *h;
	size_t nh;
	struct evbuffer *body;	/* as sent (compressed with gzip) */
	size_t body_raw;	/* its length before gzip */
	tally_http_done_fn done;
	void *arg;
	bool in_flight;		/* an evhttp request is out */
	enum evhttp_request_error req_err;
	bool have_err;
	struct tally_http_result res;
	char error[400];
	char message[512];	/* res.message */
	char *resp;		/* the last answer's body */
};

static void count(struct tally_http_client *c, const char *event,
		  uint64_t n)
{
	if (c->inst && n)
		tally_count_event(c->inst, event, n);
}

/*
 * URL
 */

static int url_err(char *err, size_t errlen, const char *opt,
		   const char *url, const char *why)
{
	if (err && errlen)
		snprintf(err, errlen, "%s \"%s\": %s", opt, url, why);
	errno = EINVAL;
	return -1;
}

/* Whether @url's authority ends in ":DIGITS" beyond 65535 (evhttp
 * refuses those as not a URL, which says nothing). */
static bool port_too_large(const char *url)
{
	const char *a = strstr(url, "://"), *end, *c;

	if (!a)
		return false;
	a += 3;
	end = a + strcspn(a, "/?#");
	for (c = end; c > a && isdigit((unsigned char)c[-1]); c--)
		;
	if (c == end || c == a || c[-1] != ':' || end - c > 10)
		return false;
	return strtoul(c, NULL, 10) > 65535;
}

int tally_http_url_parse(const char *opt, const char *url,
			 struct tally_http_url *out, char *err, size_t errlen)
{
	struct tally_http_url u = { .port = 80 };
	struct evhttp_uri *p;
	const char *scheme, *host, *path;
	size_t n;
	int port, rc = -1;

	if (!url || !*url)
		return url_err(err, errlen, opt, "", "empty: write "
				    "http://host:port");
	p = evhttp_uri_parse_with_flags(url, 0);
	if (!p && port_too_large(url))
		return url_err(err, errlen, opt, url,
			       "port out of range: 1 to 65535");
	if (!p)
		return url_err(err, errlen, opt, url,
			       "not a URL: write http://host:port[/prefix]");
	scheme = evhttp_uri_get_scheme(p);
	host = evhttp_uri_get_host(p);
	path = evhttp_uri_get_path(p);
	port = evhttp_uri_get_port(p);
	if (!scheme || strcasecmp(scheme, "http")) {
		url_err(err, errlen, opt, url,
			scheme && !strcasecmp(scheme, "https")
				? "https is not supported (no TLS yet): use "
				  "http, or a local TLS proxy"
				: "the scheme must be http: write "
				  "http://host:port[/prefix]");
		goto out;
	}
	if (!host || !*host) {
		url_err(err, errlen, opt, url, "no host");
		goto out;
	}
	if (evhttp_uri_get_userinfo(p)) {
		url_err(err, errlen, opt, url,
			"credentials in the URL are not taken: use the "
			"plugin's user/password or token options");
		goto out;
	}
	if (evhttp_uri_get_query(p) || evhttp_uri_get_fragment(p)) {
		url_err(err, errlen, opt, url,
			"no query or fragment: the plugin builds the query");
		goto out;
	}
	if (port == 0 || port > 65535) {
		url_err(err, errlen, opt, url, "port out of range: 1 to 65535");
		goto out;
	}
	if (port > 0)
		u.port = (uint16_t)port;
	n = strlen(host);
	if (host[0] == '[' && n > 2 && host[n - 1] == ']') {
		host++;
		n -= 2;
	}
	if (n >= sizeof(u.host)) {
		url_err(err, errlen, opt, url, "host name too long");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		u.host[i] = (char)tolower((unsigned char)host[i]);
	u.host[n] = '\0';
	if (path) {
		n = strlen(path);
		while (n && path[n - 1] == '/')
			n--;
		if (n >= sizeof(u.prefix)) {
			url_err(err, errlen, opt, url, "path too long");
			goto out;
		}
		memcpy(u.prefix, path, n);
		u.prefix[n] = '\0';
	}
	*out = u;
	rc = 0;
out:
	evhttp_uri_free(p);
	return rc;
}

/*
 * gzip
 */

int tally_http_gzip(struct evbuffer *src, struct evbuffer *dst, int level)
{
	size_t total = evbuffer_get_length(src), seen = 0;
	struct evbuffer_ptr pos;
	z_stream z = { 0 };
	int rc = Z_OK;

	if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		goto out_err;
	evbuffer_ptr_set(src, &pos, 0, EVBUFFER_PTR_SET);
	do {
		struct evbuffer_iovec in = { NULL, 0 }, v;
		int flush;

		/* walk the chains without draining: @src stays intact */
		if (seen < total &&
		    evbuffer_peek(src, -1, &pos, &in, 1) < 1)
			goto out_end;
		seen += in.iov_len;
		flush = seen >= total ? Z_FINISH : Z_NO_FLUSH;
		z.next_in = in.iov_base;
		z.avail_in = (uInt)in.iov_len;
		do {
			if (evbuffer_reserve_space(dst, 65536, &v, 1) < 1)
				goto out_end;
			z.next_out = v.iov_base;
			z.avail_out = (uInt)v.iov_len;
			rc = deflate(&z, flush);
			v.iov_len -= z.avail_out;
			evbuffer_commit_space(dst, &v, 1);
			if (rc == Z_STREAM_ERROR)
				goto out_end;
		} while (z.avail_out == 0 ||
			 (flush == Z_FINISH && rc != Z_STREAM_END));
		if (in.iov_len &&
		    evbuffer_ptr_set(src, &pos, in.iov_len, EVBUFFER_PTR_ADD))
			pos.pos = -1;
	} while (rc != Z_STREAM_END);
	deflateEnd(&z);
	evbuffer_drain(src, total);
	return 0;

out_end:
	deflateEnd(&z);
out_err:
	errno = ENOMEM;
	return -1;
}

/*
 * Client
 */

static void client_attempt(evutil_socket_t fd, short what, void *arg);
static void client_done(evutil_socket_t fd, short what, void *arg);
static void client_deadline(evutil_socket_t fd, short what, void *arg);

/* (Re)make the connection: after a deadline, evhttp's is torn down. */
static int client_connect(struct tally_http_client *c)
{
	struct timeval tv = tally_timeval(c->o.timeout);

	c->conn = evhttp_connection_base_new(c->base, c->dns, c->url.host,
					     c->url.port);
	if (!c->conn)
		return -1;
	evhttp_connection_set_retries(c->conn, 0);
	evhttp_connection_set_timeout_tv(c->conn, &tv);
	evhttp_connection_set_max_body_size(c->conn,
					    (ev_ssize_t)c->o.max_answer);
	evhttp_connection_set_max_headers_size(c->conn,
					       (ev_ssize_t)c->o.max_answer);
	/* read the 413 a server sends before it closes on a long body */
	evhttp_connection_set_flags(c->conn, EVHTTP_CON_READ_ON_WRITE_ERROR);
	return 0;
}

struct tally_http_client *
tally_http_client_new(struct tally_instance *inst, struct event_base *base,
		      const struct tally_http_url *url,
		      const struct tally_http_opts *o)
{
	struct tally_http_client *c = calloc(1, sizeof(*c));

	if (!c)
		goto out_nomem;
	c->inst = inst;
	c->base = base;
	c->url = *url;
	if (o)
		c->o = *o;
	if (c->o.timeout <= 0)
		c->o.timeout = 10;
	if (c->o.backoff_min <= 0)
		c->o.backoff_min = 0.5;
	if (c->o.backoff_max <= 0)
		c->o.backoff_max = 30;
	if (c->o.backoff_max < c->o.backoff_min)
		c->o.backoff_max = c->o.backoff_min;
	if (!c->o.max_response)
		c->o.max_response = 4096;
	if (!c->o.max_answer)
		c->o.max_answer = TALLY_HTTP_MAX_ANSWER;
	if (strchr(url->host, ':'))
		snprintf(c->hostport, sizeof(c->hostport), "[%s]:%u",
			 url->host, url->port);
	else
		snprintf(c->hostport, sizeof(c->hostport), "%s:%u", url->host,
			 url->port);
	c->rng = tally_net_backoff_seed(c);
	c->retry_ev = evtimer_new(base, client_attempt, c);
	c->done_ev = event_new(base, -1, 0, client_done, c);
	c->deadline_ev = evtimer_new(base, client_deadline, c);
	c->body = evbuffer_new();
	c->resp = malloc(c->o.max_response + 1);
	if (!c->retry_ev || !c->done_ev || !c->deadline_ev || !c->body ||
	    !c->resp)
		goto out_free;
	c->dns = tally_net_dns_acquire(base);
	if (!c->dns)
		goto out_free;
	if (client_connect(c) < 0)
		goto out_free;
	return c;

out_free:
	tally_http_client_free(c);
out_nomem:
	errno = ENOMEM;
	return NULL;
}

static void request_clear(struct tally_http_client *c)
{
	for (size_t i = 0; i < c->nh; i++) {
		free((char *)c->h[i].name);
		free((char *)c->h[i].value);
	}
	free(c->h);
	c->h = NULL;
	c->nh = 0;
	free(c->uri);
	c->uri = NULL;
	evbuffer_drain(c->body, evbuffer_get_length(c->body));
	c->st.busy = false;
	c->st.backoff = 0;
}

void tally_http_client_free(struct tally_http_client *c)
{
	if (!c)
		return;
	if (c->conn)
		evhttp_connection_free(c->conn);
	if (c->dns)
		tally_net_dns_release(c->base);
	if (c->retry_ev)
		event_free(c->retry_ev);
	if (c->done_ev)
		event_free(c->done_ev);
	if (c->deadline_ev)
		event_free(c->deadline_ev);
	if (c->body)
		request_clear(c);
	evbuffer_free(c->body);
	free(c->resp);
	free(c);
}

bool tally_http_client_busy(const struct tally_http_client *c)
{
	return c->st.busy;
}

void tally_http_client_get_stats(const struct tally_http_client *c,
				 struct tally_http_stats *out)
{
	*out = c->st;
}

void tally_http_client_retry_now(struct tally_http_client *c)
{
	if (c->st.busy && !c->in_flight &&
	    evtimer_pending(c->retry_ev, NULL)) {
		evtimer_del(c->retry_ev);
		event_active(c->retry_ev, EV_TIMEOUT, 0);
	}
}

int tally_http_client_request(struct tally_http_client *c, const char *method,
			      const char *path,
			      const struct tally_http_header *h, size_t nh,
			      struct evbuffer *body, tally_http_done_fn done,
			      void *arg)
{
	enum evhttp_cmd_type cmd;
	size_t plen;

	if (c->st.busy) {
		errno = EBUSY;
		return -1;
	}
	if (!strcmp(method, "POST"))
		cmd = EVHTTP_REQ_POST;
	else if (!strcmp(method, "PUT"))
		cmd = EVHTTP_REQ_PUT;
	else if (!strcmp(method, "GET"))
		cmd = EVHTTP_REQ_GET;
	else
		goto out_inval;
	if (!path || path[0] != '/')
		goto out_inval;
	plen = strlen(c->url.prefix);
	c->uri = malloc(plen + strlen(path) + 1);
	c->h = nh ? calloc(nh, sizeof(*c->h)) : NULL;
	if (!c->uri || (nh && !c->h))
		goto out_nomem;
	memcpy(c->uri, c->url.prefix, plen);
	strcpy(c->uri + plen, path);
	for (size_t i = 0; i < nh; i++) {
		c->h[i].name = strdup(h[i].name);
		c->h[i].value = strdup(h[i].value);
		c->nh++;
		if (!c->h[i].name || !c->h[i].value)
			goto out_nomem;
	}
	c->body_raw = body ? evbuffer_get_length(body) : 0;
	if (c->body_raw) {
		if (c->o.gzip ? tally_http_gzip(body, c->body, 1) < 0
			      : evbuffer_add_buffer(c->body, body) < 0)
			goto out_nomem;
	}
	c->cmd = cmd;
	c->done = done;
	c->arg = arg;
	c->st.busy = true;
	c->res = (struct tally_http_result){ .body = "", .error = "" };
	c->message[0] = '\0';
	c->large_closes = 0;
	client_attempt(-1, 0, c);
	return 0;

out_inval:
	errno = EINVAL;
	return -1;
out_nomem:
	request_clear(c);
	errno = ENOMEM;
	return -1;
}

/* End the request with @outcome; the callback runs from the loop. */
static void client_finish(struct tally_http_client *c,
			  enum tally_http_outcome outcome)
{
	c->res.outcome = outcome;
	event_active(c->done_ev, 0, 0);
}

static void client_done(evutil_socket_t fd, short what, void *arg)
{
	struct tally_http_client *c = arg;
	struct tally_http_result r = c->res;
	tally_http_done_fn done = c->done;
	void *done_arg = c->arg;

	r.body = c->res.status ? c->resp : "";
	r.error = c->error;
	r.message = c->message;
	if (r.outcome == TALLY_HTTP_OK)
		c->error[0] = '\0';
	request_clear(c);
	if (done)
		done(done_arg, &r); /* may free c: nothing after this */
}

/* "120" or an HTTP date; seconds from now, or -1. */
static double retry_after(const char *v)
{
	struct tm tm = { 0 };
	char *end;
	double s;

	if (!v)
		return -1;
	while (*v == ' ')
		v++;
	s = strtod(v, &end);
	if (end != v && isdigit((unsigned char)*v)) {
		while (*end == ' ')
			end++;
		return *end ? -1 : s;
	}
	end = strptime(v, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (!end)
		return -1;
	s = difftime(timegm(&tm), time(NULL));
	return s > 0 ? s : 0;
}

/* An attempt failed in a retryable way: wait, or give up. */
static void client_retry(struct tally_http_client *c, double at_least)
{
	struct timeval tv;
	double delay;

	c->fails++;
	if (c->o.max_attempts && c->res.attempts >= c->o.max_attempts) {
		c->st.gave_up++;
		count(c, "http_gave_up", 1);
		if (c->inst)
			tally_log(c->inst, LOG_WARNING,
				  "http://%s%s: %s; giving up after %u "
				  "attempts",
				  c->hostport, c->uri, c->error,
				  c->res.attempts);
		client_finish(c, TALLY_HTTP_GAVE_UP);
		return;
	}
	delay = tally_net_backoff(c->o.backoff_min, c->o.backoff_max,
				  c->fails, &c->rng);
	if (at_least > TALLY_HTTP_RETRY_AFTER_MAX)
		at_least = TALLY_HTTP_RETRY_AFTER_MAX;
	if (delay < at_least)
		delay = at_least;
	if (c->inst && c->message[0])
		tally_log(c->inst, c->fails > 1 ? LOG_INFO : LOG_WARNING,
			  "http://%s%s: %s: %s; retrying in %.3g s",
			  c->hostport, c->uri, c->error, c->message, delay);
	else if (c->inst)
		tally_log(c->inst, c->fails > 1 ? LOG_INFO : LOG_WARNING,
			  "http://%s%s: %s; retrying in %.3g s", c->hostport,
			  c->uri, c->error, delay);
	c->st.backoff = delay;
	tv = tally_timeval(delay);
	evtimer_add(c->retry_ev, &tv);
}

static void req_error(enum evhttp_request_error e, void *arg)
{
	struct tally_http_client *c = arg;

	c->req_err = e;
	c->have_err = true;
}

static const char *req_error_text(struct tally_http_client *c)
{
	if (!c->have_err)
		return "connection failed";
	switch (c->req_err) {
	case EVREQ_HTTP_TIMEOUT:
		return "timed out";
	case EVREQ_HTTP_EOF:
		return "connection closed before a whole answer";
	case EVREQ_HTTP_INVALID_HEADER:
		return "invalid answer";
	case EVREQ_HTTP_BUFFER_ERROR:
		return "connection failed (refused, reset or unreachable)";
	case EVREQ_HTTP_DATA_TOO_LONG:
		return "answer too long";
	default:
		return "connection failed";
	}
}

/* An attempt ended without an answer: say why, count, retry. */
static void req_failed(struct tally_http_client *c)
{
	struct bufferevent *bev = evhttp_connection_get_bufferevent(c->conn);
	int dns = bev ? bufferevent_socket_get_dns_error(bev) : 0;

	if (dns) {
		snprintf(c->error, sizeof(c->error), "cannot resolve %s: %s",
			 c->url.host, evutil_gai_strerror(dns));
	} else {
		snprintf(c->error, sizeof(c->error), "%s", req_error_text(c));
	}
	if (c->have_err && c->req_err == EVREQ_HTTP_TIMEOUT) {
		c->st.failures_timeout++;
		count(c, "http_failures_timeout", 1);
	} else if (c->have_err && c->req_err == EVREQ_HTTP_DATA_TOO_LONG) {
		snprintf(c->error, sizeof(c->error),
			 "protocol error: answer longer than %zu bytes",
			 c->o.max_answer);
		c->st.failures_protocol++;
		count(c, "http_failures_protocol", 1);
		if (c->inst && !c->told_protocol)
			tally_log(c->inst, LOG_WARNING,
				  "http://%s%s: %s: the server misbehaves; "
				  "counted as http_failures_protocol, not "
				  "logged again",
				  c->hostport, c->uri, c->error);
		c->told_protocol = true;
	} else {
		c->st.failures_connect++;
		count(c, "http_failures_connect", 1);
	}
	/* a server that closes on what it finds too long (413) */
	if (!dns && c->have_err && c->req_err == EVREQ_HTTP_EOF &&
	    evbuffer_get_length(c->body) >= TALLY_HTTP_LARGE_BODY &&
	    ++c->large_closes >= 2) {
		snprintf(c->error, sizeof(c->error),
			 "connection closed twice after a %zu-byte request: "
			 "taken as too large",
			 evbuffer_get_length(c->body));
		c->res.too_large = true;
		c->st.too_large++;
		count(c, "http_too_large", 1);
		c->fails = 0;
		c->st.rejected++;
		count(c, "http_failures_4xx", 1);
		client_finish(c, TALLY_HTTP_REJECTED);
		return;
	}
	client_retry(c, 0);
}

/* The attempt ran out of its timeout: tear the connection down. */
static void client_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct tally_http_client *c = arg;

	if (!c->in_flight)
		return;
	c->in_flight = false;
	/* frees the request without calling req_done */
	evhttp_connection_free(c->conn);
	c->conn = NULL;
	c->res.status = 0;
	snprintf(c->error, sizeof(c->error),
		 "timed out: no whole answer within %.3g s", c->o.timeout);
	c->st.failures_timeout++;
	count(c, "http_failures_timeout", 1);
	if (client_connect(c) < 0)
		snprintf(c->error, sizeof(c->error), "out of memory");
	client_retry(c, 0);
}

static void req_done(struct evhttp_request *req, void *arg)
{
	struct tally_http_client *c = arg;
	int status = req ? evhttp_request_get_response_code(req) : 0;
	struct evkeyvalq *hd;
	struct evbuffer *in;
	size_t n;

	if (!c->in_flight)
		return;
	c->in_flight = false;
	evtimer_del(c->deadline_ev);
	c->res.status = status;
	c->message[0] = '\0';
	if (!status) {
		req_failed(c);
		return;
	}
	/* answered: the request reached the server (a refused connection
	 * or an unresolved name sent nothing) */
	n = evbuffer_get_length(c->body);
	c->st.bytes_sent += n;
	c->st.bytes_body += c->body_raw;
	count(c, "http_bytes_sent", n);
	count(c, "http_bytes_body", c->body_raw);
	c->large_closes = 0;
	hd = evhttp_request_get_input_headers(req);
	in = evhttp_request_get_input_buffer(req);
	n = evbuffer_get_length(in);
	if (n > c->o.max_response)
		n = c->o.max_response;
	evbuffer_copyout(in, c->resp, n);
	c->resp[n] = '\0';
	/* one line: a server's message may end in a newline */
	while (n && (c->resp[n - 1] == '\n' || c->resp[n - 1] == '\r'))
		c->resp[--n] = '\0';
	c->res.body_len = n;
	tally_log_peer_text(c->message, sizeof(c->message), c->resp, n);
	if (status >= 300 && status < 400) {
		const char *loc = evhttp_find_header(hd, "Location");
		char where[300];

		tally_log_peer_text(where, sizeof(where), loc ? loc : "?",
				    strlen(loc ? loc : "?"));
		snprintf(c->message, sizeof(c->message),
			 "redirect to %s is not followed: set url to where "
			 "the server is",
			 where);
	}
	snprintf(c->error, sizeof(c->error), "HTTP %d", status);
	if (status < 100 || status > 599) {
		/* RFC 9110 15: three digits, 1 to 5 first; a server that
		 * answers otherwise misbehaves, as one sending garbage */
		snprintf(c->error, sizeof(c->error),
			 "protocol error: status %d outside 100-599", status);
		c->st.failures_protocol++;
		count(c, "http_failures_protocol", 1);
		client_retry(c, 0);
	} else if (status >= 200 && status < 300) {
		c->fails = 0;
		c->st.ok++;
		count(c, "http_responses_2xx", 1);
		client_finish(c, TALLY_HTTP_OK);
	} else if (status == 429 || status >= 500) {
		if (status == 429) {
			c->st.failures_429++;
			count(c, "http_failures_429", 1);
		} else {
			c->st.failures_5xx++;
			count(c, "http_failures_5xx", 1);
		}
		client_retry(c, retry_after(evhttp_find_header(hd,
							       "Retry-After")));
	} else {
		c->fails = 0;
		c->st.rejected++;
		count(c, "http_failures_4xx", 1);
		if (status == 413) {
			c->res.too_large = true;
			c->st.too_large++;
			count(c, "http_too_large", 1);
		}
		client_finish(c, TALLY_HTTP_REJECTED);
	}
}

static void client_attempt(evutil_socket_t fd, short what, void *arg)
{
	struct tally_http_client *c = arg;
	struct evhttp_request *req;
	struct evkeyvalq *hd;
	size_t len = evbuffer_get_length(c->body);
	char clen[24];

	c->st.backoff = 0;
	c->have_err = false;
	if (!c->conn && client_connect(c) < 0)
		goto out_fail;
	req = evhttp_request_new(req_done, c);
	if (!req)
		goto out_fail;
	evhttp_request_set_error_cb(req, req_error);
	hd = evhttp_request_get_output_headers(req);
	evhttp_add_header(hd, "Host", c->hostport);
	evhttp_add_header(hd, "User-Agent", "tallyd/" PACKAGE_VERSION);
	for (size_t i = 0; i < c->nh; i++)
		evhttp_add_header(hd, c->h[i].name, c->h[i].value);
	if (len) {
		snprintf(clen, sizeof(clen), "%zu", len);
		evhttp_add_header(hd, "Content-Length", clen);
		if (c->o.gzip)
			evhttp_add_header(hd, "Content-Encoding", "gzip");
		/* the same bytes on every attempt, referenced, not copied */
		if (evbuffer_add_buffer_reference(
			    evhttp_request_get_output_buffer(req), c->body) <
		    0) {
			evhttp_request_free(req);
			goto out_fail;
		}
	}
	if (c->res.attempts) {
		c->st.retries++;
		count(c, "http_retries", 1);
	}
	c->res.attempts++;
	c->st.requests++;
	count(c, "http_requests", 1);
	c->in_flight = true;
	{
		struct timeval tv = tally_timeval(c->o.timeout);

		evtimer_add(c->deadline_ev, &tv);
	}
	if (evhttp_make_request(c->conn, req, c->cmd, c->uri) < 0) {
		/* evhttp freed the request */
		c->in_flight = false;
		evtimer_del(c->deadline_ev);
		snprintf(c->error, sizeof(c->error),
			 "connection failed: %s", strerror(errno));
		c->st.failures_connect++;
		count(c, "http_failures_connect", 1);
		client_retry(c, 0);
	}
	return;

out_fail:
	snprintf(c->error, sizeof(c->error), "out of memory");
	client_retry(c, 0);
}
