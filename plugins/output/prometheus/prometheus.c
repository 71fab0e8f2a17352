/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/prometheus/prometheus.c - exposition over HTTP for scrapers
 *
 * Serves GET /metrics (text format 0.0.4, or OpenMetrics 1.0 when the
 * scraper prefers it), /-/healthy and /-/ready with libevent's evhttp on
 * one or more listen addresses, on the loop thread. Batches go into the
 * series store (store.c) in write(); a scrape renders the store into a
 * page (page.c) that the replies of concurrent scrapes share. Both run on
 * the loop thread, so a scrape sees every batch whole or not at all.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <tally/http.h>
#include <tally/io.h>
#include <tally/plugin.h>

#include "auth.h"
#include "conn.h"
#include "http.h"
#include "page.h"
#include "store.h"
#include "tls.h"

struct prometheus {
	/* options */
	struct tally_strlist listen;
	struct tally_strlist allow;
	struct tally_strlist attributes;
	double expire;
	double grace;
	int span_metrics;
	bool depth_label;
	char *jobid;
	bool gzip;
	bool openmetrics;
	int64_t max_open_spans;
	int64_t max_series;
	int64_t max_connections;
	int64_t max_reply_bytes;
	double idle_timeout;
	double request_timeout;
	char *final_page;
	char *tls_cert_file;
	char *tls_key_file;
	struct tally_labels *basic_auth_users;
	/* state */
	struct tally_instance *inst;
	struct evhttp *http;
	struct prom_store *store;
	struct prom_pages *pages;
	struct prom_cidr *cidrs;
	size_t ncidrs;
	struct event *sweep;
	struct prom_conns *conns;
	struct prom_tls *tls;
	struct prom_auth *auth;
};

/* Series that vanished are freed by this timer even when nobody scrapes. */
#define PROM_SWEEP_SECONDS 30

/* Series of inputs without an interval (zmq_trace, statsd) last this long
 * without update unless expire is set: Prometheus' own staleness delta. */
#define PROM_EVENT_EXPIRE_SECONDS 300.0

/* Default expire: this many intervals of the producing input. */
#define PROM_EXPIRE_INTERVALS 3.0

static const char *const prometheus_text_type = "text/plain; version=0.0.4; "
						"charset=utf-8";
static const char *const prometheus_om_type = "application/openmetrics-text; "
					      "version=1.0.0; charset=utf-8";

/*
 * Send the reply with a Content-Length set here. libevent (2.1.12) adds
 * none to a HEAD reply and sends its body all the same, so a client that
 * keeps the connection reads the body as the next reply's status line. A
 * HEAD reply gets exactly the GET reply's headers, Content-Length
 * included, and no body (RFC 9110 9.3.2).
 */
static void prometheus_send(struct evhttp_request *req, int code,
			    const char *reason)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	struct evbuffer *body = evhttp_request_get_output_buffer(req);
	char len[24];

	snprintf(len, sizeof(len), "%zu", evbuffer_get_length(body));
	evhttp_remove_header(h, "Content-Length");
	evhttp_add_header(h, "Content-Length", len);
	if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD)
		evbuffer_drain(body, evbuffer_get_length(body));
	evhttp_send_reply(req, code, reason, NULL);
}

static void prometheus_reply_text(struct evhttp_request *req, int code,
				  const char *reason, const char *body)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	evhttp_add_header(h, "Content-Type", "text/plain; charset=utf-8");
	evbuffer_add_printf(evhttp_request_get_output_buffer(req), "%s\n",
			    body);
	prometheus_send(req, code, reason);
}

/*
 * Pages being sent to slow readers take memory until they are read: when
 * they and the page about to be rendered (taken to be as big as the last
 * one) would pass max_reply_bytes, the replies in progress longest are cut
 * until they fit or none is left. A page all those replies shared goes
 * with the last of them.
 */
static void prometheus_make_room(struct prometheus *p, size_t need)
{
	size_t before = prom_pages_bytes(p->pages), cut = 0;

	while (prom_pages_bytes(p->pages) + need > (size_t)p->max_reply_bytes &&
	       prom_conns_cut_oldest_reply(p->conns, "reply_memory") == 0)
		cut++;
	if (cut)
		tally_log(p->inst, LOG_WARNING,
			  "pages being sent took %zu bytes, %zu more needed "
			  "(max_reply_bytes %lld): cut the %zu slowest "
			  "replies, %zu bytes left",
			  before, need, (long long)p->max_reply_bytes, cut,
			  prom_pages_bytes(p->pages));
}

/* Render a page of @variant; NULL with errno = ENOMEM. */
static struct prom_page *prometheus_render(struct prometheus *p,
					   enum prom_format fmt, bool gz,
					   unsigned variant, int64_t now)
{
	struct evbuffer *text = evbuffer_new();
	struct evbuffer *z = NULL;

	if (!text ||
	    prom_store_render(p->store, text, fmt, now, tally_now_ns()) < 0)
		goto out_nomem;
	if (gz) {
		z = evbuffer_new();
		if (!z || tally_http_gzip(text, z, 1) < 0)
			goto out_nomem;
		evbuffer_free(text);
		text = z;
		z = NULL;
	}
	/* the generation after the render: its sweep may have moved it */
	return prom_pages_add(p->pages, variant,
			      prom_store_generation(p->store), now, text);

out_nomem:
	if (z)
		evbuffer_free(z);
	if (text)
		evbuffer_free(text);
	errno = ENOMEM;
	return NULL;
}

static void prometheus_metrics(struct prometheus *p, struct evhttp_request *req)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	struct evbuffer *body = evhttp_request_get_output_buffer(req);
	const char *accept = evhttp_find_header(in, "Accept");
	const char *enc = evhttp_find_header(in, "Accept-Encoding");
	enum prom_format fmt = PROM_FMT_TEXT;
	const char *coding = p->gzip ? prom_http_gzip_coding(enc) : NULL;
	bool gz = coding != NULL;
	int64_t now = tally_monotonic_ns();
	struct prom_page *pg;
	unsigned variant;

	if (p->openmetrics && prom_http_wants_openmetrics(accept))
		fmt = PROM_FMT_OPENMETRICS;
	variant = (unsigned)fmt * 2 + gz;
	prom_pages_trim(p->pages, now);
	/*
	 * Scrapes of an unchanged store within a second share one page,
	 * unless an open span makes its region's seconds grow meanwhile.
	 */
	pg = NULL;
	if (!prom_store_spans_open(p->store))
		pg = prom_pages_get(p->pages, variant,
				    prom_store_generation(p->store), now);
	if (!pg) {
		prometheus_make_room(p,
				     prom_pages_last_size(p->pages, variant));
		pg = prometheus_render(p, fmt, gz, variant, now);
	}
	if (!pg || prom_page_attach(pg, body) < 0) {
		tally_log(p->inst, LOG_ERR, "scrape: out of memory");
		evbuffer_drain(body, evbuffer_get_length(body));
		prometheus_reply_text(req, 500, "Internal Server Error",
				      "out of memory");
		return;
	}
	if (gz)
		evhttp_add_header(out, "Content-Encoding", coding);
	evhttp_add_header(out, "Content-Type",
			  fmt == PROM_FMT_OPENMETRICS ? prometheus_om_type
						      : prometheus_text_type);
	evhttp_add_header(out, "Vary", "Accept, Accept-Encoding");
	prometheus_send(req, 200, "OK");
}

/*
 * The path of the request target, *@path with length returned. An
 * origin-form target ("/metrics?x") is taken as sent: libevent's URI
 * parser reads "//metrics" as an authority with an empty path, which made
 * it the index page. An absolute-form target ("http://host/metrics"),
 * which servers must accept (RFC 9112 3.2.2), gives its parsed path.
 */
static size_t prometheus_path(struct evhttp_request *req, const char **path)
{
	const char *uri = evhttp_request_get_uri(req);
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);

	if (uri && *uri == '/') {
		*path = uri;
		return strcspn(uri, "?#");
	}
	*path = u ? evhttp_uri_get_path(u) : NULL;
	if (!*path || !**path)
		*path = "/";
	return strlen(*path);
}

static bool path_is(const char *path, size_t n, const char *want)
{
	return n == strlen(want) && memcmp(path, want, n) == 0;
}

/* Method and path: what to answer, once the request may be answered. */
static void prometheus_dispatch(struct prometheus *p, struct evhttp_request *req)
{
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	const char *path;
	size_t n;

	if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
		evhttp_add_header(evhttp_request_get_output_headers(req),
				  "Allow", "GET, HEAD");
		prometheus_reply_text(req, 405, "Method Not Allowed",
				      "method not allowed");
		return;
	}
	n = prometheus_path(req, &path);
	if (path_is(path, n, "/metrics")) {
		prometheus_metrics(p, req);
	} else if (path_is(path, n, "/-/healthy") ||
		   path_is(path, n, "/-/ready")) {
		prometheus_reply_text(req, 200, "OK", "OK");
	} else if (path_is(path, n, "/")) {
		struct evkeyvalq *h = evhttp_request_get_output_headers(req);

		evhttp_add_header(h, "Content-Type",
				  "text/html; charset=utf-8");
		evbuffer_add_printf(
			evhttp_request_get_output_buffer(req),
			"<html><head><title>tally</title></head><body>\n"
			"<h1>tally</h1>\n<p><a href=\"/metrics\">Metrics</a>"
			"</p>\n</body></html>\n");
		prometheus_send(req, 200, "OK");
	} else {
		prometheus_reply_text(req, 404, "Not Found", "not found");
	}
}

/*
 * Basic auth refused the request: 401 asking for credentials (wrong or
 * none), or 429 while its address is in backoff after a failure. Counted
 * ("unauthorized", "auth_rate_limited"); nothing of the credentials is
 * logged.
 */
static void prometheus_refuse(struct prometheus *p, struct evhttp_request *req,
			      enum prom_auth_verdict v)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);

	if (v == PROM_AUTH_LIMITED) {
		evhttp_add_header(h, "Retry-After", "1");
		prometheus_reply_text(req, 429, "Too Many Requests",
				      "too many failed authentications: "
				      "retry later");
		return;
	}
	tally_count_event(p->inst, "unauthorized", 1);
	evhttp_add_header(h, "WWW-Authenticate",
			  "Basic realm=\"tally\", charset=\"UTF-8\"");
	prometheus_reply_text(req, 401, "Unauthorized", "unauthorized");
}

/* The verdict of a verification that ran off the loop. */
static void prometheus_authed(struct evhttp_request *req,
			      enum prom_auth_verdict v, void *arg)
{
	struct prometheus *p = arg;

	if (v == PROM_AUTH_OK)
		prometheus_dispatch(p, req);
	else
		prometheus_refuse(p, req, v);
}

static void prometheus_request(struct evhttp_request *req, void *arg)
{
	struct prometheus *p = arg;
	struct evhttp_connection *conn = evhttp_request_get_connection(req);
	const struct sockaddr *sa =
		conn ? evhttp_connection_get_addr(conn) : NULL;
	enum prom_auth_verdict v;

	/*
	 * libevent ends the headers at a line that starts with a NUL byte
	 * and would read the rest as a second request: one 400 for the one
	 * request, and the connection closes (RFC 9110 5.5: NUL in a field
	 * value is invalid).
	 */
	if (prom_conns_request_has_nul(p->conns, req)) {
		tally_count_drop(p->inst, "bad_request", 1);
		tally_log(p->inst, LOG_WARNING,
			  "a NUL byte in a request: answered 400 and closed "
			  "the connection");
		evhttp_add_header(evhttp_request_get_output_headers(req),
				  "Connection", "close");
		prometheus_reply_text(req, 400, "Bad Request",
				      "bad request: NUL byte");
		return;
	}
	if (p->ncidrs && !prom_cidr_match(p->cidrs, p->ncidrs, sa)) {
		prometheus_reply_text(
			req, 403, "Forbidden",
			"forbidden: address not in the allow list");
		return;
	}
	if (!p->auth) {
		prometheus_dispatch(p, req);
		return;
	}
	v = prom_auth_request(p->auth, req, prometheus_authed, p);
	if (v == PROM_AUTH_OK)
		prometheus_dispatch(p, req);
	else if (v != PROM_AUTH_PENDING)
		prometheus_refuse(p, req, v);
}

static void prometheus_sweep(evutil_socket_t fd, short what, void *arg)
{
	struct prometheus *p = arg;
	int64_t now = tally_monotonic_ns();

	prom_store_sweep(p->store, now);
	prom_pages_trim(p->pages, now);
}

/*
 * Parse and judge one listen address without binding it: syntax and the
 * loopback policy of a user collector (tally/net.h), and that a host name
 * resolves.
 * Logs why not. Return: 0, or -1 with errno = EINVAL or EPERM.
 */
static int prometheus_check_listen(struct tally_instance *inst,
				   const char *spec, struct prom_listen *l)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICSERV,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	int rc;

	if (prom_parse_listen(spec, l) < 0) {
		tally_log(inst, LOG_ERR,
			  "listen \"%s\": expected \"host:port\" (port 0 to "
			  "65535), \"[ipv6]:port\" or \":port\"",
			  spec);
		errno = EINVAL;
		return -1;
	}
	if (!tally_net_listen_permitted(&l->addr, tally_user_mode())) {
		tally_log(inst, LOG_ERR,
			  "listen \"%s\": a user collector listens on "
			  "loopback addresses only (127.0.0.1, [::1])",
			  spec);
		errno = EPERM;
		return -1;
	}
	/* What evhttp_bind_socket() will resolve: a name must resolve. */
	rc = getaddrinfo(l->host, "0", &hints, &ai);
	if (rc) {
		tally_log(inst, LOG_ERR, "listen \"%s\": cannot resolve %s: %s",
			  spec, l->host, gai_strerror(rc));
		errno = EINVAL;
		return -1;
	}
	freeaddrinfo(ai);
	return 0;
}

static int prometheus_check_allow(struct tally_instance *inst,
				  const char *spec, struct prom_cidr *c)
{
	if (prom_parse_cidr(spec, c) == 0)
		return 0;
	tally_log(inst, LOG_ERR,
		  "allow \"%s\": expected an IPv4 or IPv6 address or network "
		  "(10.0.0.0/8, fd00::/8)",
		  spec);
	errno = EINVAL;
	return -1;
}

/*
 * A TLS file option: an absolute path (a daemon leaves its start directory,
 * and SIGHUP reads the files again) to a file tallyd can read now.
 */
static int prometheus_check_tls_file(struct tally_instance *inst,
				     const char *option, const char *path)
{
	if (path[0] != '/') {
		tally_log(inst, LOG_ERR,
			  "%s \"%s\": an absolute path is needed (tallyd "
			  "reads it again on SIGHUP, from any directory)",
			  option, path);
		return -1;
	}
	if (access(path, R_OK) < 0) {
		tally_log(inst, LOG_ERR, "%s %s: %s", option, path,
			  strerror(errno));
		return -1;
	}
	return 0;
}

/* TLS options: both files or neither, absolute, readable, and a build
 * that has TLS. */
static int prometheus_check_tls(struct tally_instance *inst,
				const struct prometheus *p)
{
	const char *missing = prom_tls_missing();
	bool cert = p->tls_cert_file && *p->tls_cert_file;
	bool key = p->tls_key_file && *p->tls_key_file;

	if (!cert && !key)
		return 0;
	if (missing) {
		tally_log(inst, LOG_ERR, "%s: %s",
			  cert ? "tls_cert_file" : "tls_key_file", missing);
		return -1;
	}
	if (cert != key) {
		tally_log(inst, LOG_ERR,
			  "%s set without %s: HTTPS needs both the "
			  "certificate and its private key",
			  cert ? "tls_cert_file" : "tls_key_file",
			  cert ? "tls_key_file" : "tls_cert_file");
		return -1;
	}
	return prometheus_check_tls_file(inst, "tls_cert_file",
					 p->tls_cert_file) |
	       prometheus_check_tls_file(inst, "tls_key_file",
					 p->tls_key_file);
}

/*
 * check op: everything init would refuse in the options, without binding
 * or allocating anything that outlives the call. Every problem is logged,
 * not only the first.
 */
static int prometheus_check(struct tally_instance *inst, void *state)
{
	struct prometheus *p = state;
	struct prom_listen l, *seen;
	struct prom_cidr c;
	int rc = 0;

	if (!p->listen.n) {
		tally_log(inst, LOG_ERR, "listen: at least one address needed");
		rc = -1;
	}
	seen = calloc(p->listen.n ? p->listen.n : 1, sizeof(*seen));
	for (size_t i = 0; i < p->listen.n; i++) {
		if (prometheus_check_listen(inst, p->listen.v[i], &l) < 0) {
			rc = -1;
			continue;
		}
		for (size_t j = 0; seen && j < i; j++) {
			if (seen[j].port && seen[j].port == l.port &&
			    strcmp(seen[j].host, l.host) == 0) {
				tally_log(inst, LOG_ERR,
					  "listen \"%s\": listed twice",
					  p->listen.v[i]);
				rc = -1;
				break;
			}
		}
		if (seen)
			seen[i] = l;
	}
	free(seen);
	for (size_t i = 0; i < p->allow.n; i++)
		if (prometheus_check_allow(inst, p->allow.v[i], &c) < 0)
			rc = -1;
	if (prometheus_check_tls(inst, p) < 0)
		rc = -1;
	if (p->basic_auth_users &&
	    prom_auth_check_users(inst, p->basic_auth_users) < 0)
		rc = -1;
	/* not silently plain: the option says authentication is wanted */
	if (p->basic_auth_users && !tally_labels_count(p->basic_auth_users)) {
		tally_log(inst, LOG_ERR,
			  "basic_auth_users is empty: every scraper would get "
			  "the page without a password; name users, or leave "
			  "the option out for no authentication");
		rc = -1;
	}
	if (rc < 0)
		errno = EINVAL;
	return rc;
}

static int prometheus_bind(struct prometheus *p, const char *spec)
{
	struct prom_listen l;
	struct evhttp_bound_socket *bs;
	char addr[128];

	if (prometheus_check_listen(p->inst, spec, &l) < 0)
		return -1;
	/* a user collector's port is the kernel's choice (tally/mode.h) */
	l.port = (uint16_t)tally_listen_port(p->inst, l.port);
	bs = evhttp_bind_socket_with_handle(p->http, l.host, l.port);
	if (!bs) {
		int e = errno;

		tally_log(p->inst, LOG_ERR, "listen \"%s\": cannot bind: %s",
			  spec, strerror(e ? e : EADDRINUSE));
		errno = e ? e : EADDRINUSE;
		return -1;
	}
	if (prom_conns_listen(p->conns, bs) < 0) {
		tally_log(p->inst, LOG_ERR, "out of memory");
		return -1;
	}
	if (tally_net_sockname(evhttp_bound_socket_get_fd(bs), addr,
			       sizeof(addr)) == 0) {
		tally_log(p->inst, LOG_INFO, "serving /metrics on %s%s", addr,
			  p->tls ? " (HTTPS)" : "");
		tally_listen_publish(p->inst, addr);
	}
	return 0;
}

/*
 * Instances running with final_page unset: with two or more, each writes
 * metrics-INSTANCE.prom instead of metrics.prom, so that no page
 * overwrites another's (a flat and a full view of one trace). Loop thread
 * only, like init, fini and end.
 */
static unsigned prom_default_pages;

static int prometheus_init(struct tally_instance *inst, void *state)
{
	struct prometheus *p = state;
	struct event_base *base = tally_instance_base(inst);
	struct prom_store_opts so = {
		.expire_ns = (int64_t)(p->expire * 1e9),
		.expire_factor = PROM_EXPIRE_INTERVALS,
		.expire_event_ns = (int64_t)(PROM_EVENT_EXPIRE_SECONDS * 1e9),
		.grace_ns = (int64_t)(p->grace * 1e9),
		.span_metrics = (enum prom_span_metrics)p->span_metrics,
		.depth_label = p->depth_label,
		.jobid = p->jobid && *p->jobid ? p->jobid : tally_jobid(),
		.max_open_spans = (size_t)p->max_open_spans,
		.max_series = (size_t)p->max_series,
		.labels = tally_output_labels(inst),
		.attributes = &p->attributes,
	};
	struct prom_conns_opts co = {
		.max_conns = (size_t)p->max_connections,
		.idle_timeout = p->idle_timeout,
		.request_timeout = p->request_timeout,
	};
	struct timeval tv = { PROM_SWEEP_SECONDS, 0 };

	p->inst = inst;
	/* The core ran prometheus_check() already: this cannot fail on the
	 * option values any more, only on memory or the bind itself. */
	if (!p->listen.n) {
		errno = EINVAL;
		return -1;
	}
	if (p->allow.n) {
		p->cidrs = calloc(p->allow.n, sizeof(*p->cidrs));
		if (!p->cidrs)
			goto out_nomem;
		for (size_t i = 0; i < p->allow.n; i++)
			if (prometheus_check_allow(inst, p->allow.v[i],
						   &p->cidrs[i]) < 0)
				goto out_free;
		p->ncidrs = p->allow.n;
	}
	if (p->tls_cert_file && *p->tls_cert_file) {
		p->tls = prom_tls_new(inst, p->tls_cert_file, p->tls_key_file);
		if (!p->tls)
			goto out_free;
		co.new_bev = prom_tls_bev;
		co.bev_arg = p->tls;
	}
	if (p->basic_auth_users && tally_labels_count(p->basic_auth_users)) {
		p->auth = prom_auth_new(base, inst, p->basic_auth_users);
		if (!p->auth) {
			tally_log(inst, LOG_ERR, "basic auth: %s",
				  strerror(errno));
			goto out_free;
		}
	}
	p->store = prom_store_new(&so, inst);
	p->pages = prom_pages_new();
	if (!p->store || !p->pages)
		goto out_nomem;
	p->http = evhttp_new(base);
	if (!p->http)
		goto out_nomem;
	/* no progress writing a reply (conns closes idle connections and
	 * requests arriving too slowly long before) */
	evhttp_set_timeout(p->http, 30);
	p->conns = prom_conns_new(base, p->http, inst, &co);
	if (!p->conns)
		goto out_nomem;
	evhttp_set_max_headers_size(p->http, 16384);
	evhttp_set_max_body_size(p->http, 4096);
	/*
	 * Let every method libevent knows reach prometheus_request(), which
	 * answers 405 with Allow as RFC 9110 asks; by default libevent
	 * answers 501 to OPTIONS, TRACE, CONNECT and PATCH itself.
	 */
	evhttp_set_allowed_methods(
		p->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST |
				 EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
				 EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE |
				 EVHTTP_REQ_CONNECT | EVHTTP_REQ_PATCH);
	evhttp_set_gencb(p->http, prometheus_request, p);
	for (size_t i = 0; i < p->listen.n; i++)
		if (prometheus_bind(p, p->listen.v[i]) < 0)
			goto out_free;
	p->sweep = event_new(base, -1, EV_PERSIST, prometheus_sweep, p);
	if (!p->sweep || event_add(p->sweep, &tv) < 0)
		goto out_nomem;
	if (!p->final_page)
		prom_default_pages++;
	return 0;

out_nomem:
	tally_log(inst, LOG_ERR, "out of memory");
	errno = ENOMEM;
out_free:
	if (p->sweep)
		event_free(p->sweep);
	p->sweep = NULL;
	prom_auth_free(p->auth);
	p->auth = NULL;
	prom_conns_free(p->conns);
	p->conns = NULL;
	if (p->http)
		evhttp_free(p->http);
	p->http = NULL;
	prom_pages_free(p->pages);
	p->pages = NULL;
	prom_store_free(p->store);
	p->store = NULL;
	prom_tls_free(p->tls);
	p->tls = NULL;
	free(p->cidrs);
	p->cidrs = NULL;
	return -1;
}

static int prometheus_write(struct tally_instance *inst, void *state,
			    struct tally_batch *b)
{
	struct prometheus *p = state;

	/* Drops are counted by the store; the rest of the batch is applied. */
	prom_store_apply(p->store, b, tally_monotonic_ns());
	return 0;
}

/*
 * end op: the page a scrape would get now, in the text format, into
 * final_page (relative: in the output directory). A user collector stops
 * with its command, and this is how the job's last values stay.
 */
static int prometheus_end(struct tally_instance *inst, void *state,
			  enum tally_end why)
{
	struct prometheus *p = state;
	struct evbuffer *text = NULL;
	char name[300];
	const char *file = p->final_page;
	char *path;
	int ret = -1;

	if (!file) {
		file = "metrics.prom";
		if (prom_default_pages > 1) {
			snprintf(name, sizeof(name), "metrics-%s.prom",
				 tally_instance_name(inst));
			file = name;
		}
	}
	if (!*file)
		return 0;
	path = tally_output_path(inst, file);
	if (!path)
		return -1;
	text = evbuffer_new();
	if (!text ||
	    prom_store_render(p->store, text, PROM_FMT_TEXT,
			      tally_monotonic_ns(), tally_now_ns()) < 0) {
		errno = ENOMEM;
		goto out_free;
	}
	if (tally_write_file(path, evbuffer_pullup(text, -1),
			     evbuffer_get_length(text)) < 0) {
		tally_log(inst, LOG_WARNING, "cannot write %s: %s", path,
			  strerror(errno));
		goto out_free;
	}
	tally_log(inst, LOG_NOTICE, "%s metrics page written to %s",
		  why == TALLY_END_COMMAND ? "final" : "current", path);
	ret = 0;
out_free:
	if (text)
		evbuffer_free(text);
	free(path);
	return ret;
}

/*
 * reopen op (SIGHUP): read the certificate and key again, so that a
 * renewed certificate is served without a restart; a failure keeps the
 * one in use (logged by tls.c and the core).
 */
static int prometheus_reopen(struct tally_instance *inst, void *state)
{
	struct prometheus *p = state;

	return p->tls ? prom_tls_reload(p->tls) : 0;
}

static void prometheus_fini(struct tally_instance *inst, void *state)
{
	struct prometheus *p = state;

	if (p->sweep)
		event_free(p->sweep);
	/* before evhttp_free(): requests waiting for a verdict go with it */
	prom_auth_free(p->auth);
	prom_conns_free(p->conns);
	if (p->http)
		evhttp_free(p->http);
	/* pages replies still hold go with the last of them (libevent frees
	 * the connections' buffers in a later turn of the loop) */
	prom_pages_free(p->pages);
	prom_store_free(p->store);
	/* after evhttp_free(): connections hold references of their own */
	prom_tls_free(p->tls);
	free(p->cidrs);
	if (!p->final_page)
		prom_default_pages--;
}

static const char *const prometheus_span_choices[] = { "tally", "omnistat",
						       "both", "none", NULL };

static const struct tally_option prometheus_options[] = {
	TALLY_OPT_LISTEN("listen", struct prometheus, listen, "127.0.0.1:9464",
			 "addresses to serve on: \"host:port\", \"[ipv6]:port\" "
			 "or \":port\" (all IPv4 addresses)"),
	TALLY_OPT_LIST("attributes", struct prometheus, attributes, NULL,
		       "numeric span attributes (typed values: bytes, "
		       "items...) whose sum per region is exported as "
		       "tally_trace_region_KEY_total; none by default "
		       "(cardinality)"),
	TALLY_OPT_LIST("allow", struct prometheus, allow, NULL,
		       "if set, only these addresses or networks may scrape "
		       "(\"10.0.0.0/8\", \"::1\"); others get 403"),
	TALLY_OPT_DURATION("expire", struct prometheus, expire, "0", 0, 1e9,
			 "seconds after which a series not updated "
			 "disappears; 0: 3 intervals of its input (300 s for "
			 "inputs without interval)"),
	TALLY_OPT_DURATION("grace", struct prometheus, grace, "15", 0, 1e9,
			 "seconds a region's active gauge shows 0 after its "
			 "last span ended (Omnistat: 15)"),
	TALLY_OPT_ENUM("span_metrics", struct prometheus, span_metrics, "tally",
		       prometheus_span_choices,
		       "series from spans: tally_trace_region_{active,"
		       "seconds_total} (tally), Omnistat's "
		       "rmsjob_annotations (omnistat), both, or none"),
	TALLY_OPT_BOOL("depth_label", struct prometheus, depth_label, "false",
		       "add a depth label to the tally_trace_region_* series "
		       "(multi-level traces)"),
	TALLY_OPT_STRING("jobid", struct prometheus, jobid, NULL,
			 "jobid label of rmsjob_annotations for spans without "
			 "a jobid attribute (default: the batch job's id)"),
	TALLY_OPT_BOOL("gzip", struct prometheus, gzip, "true",
		       "compress replies for scrapers that send "
		       "Accept-Encoding: gzip"),
	TALLY_OPT_BOOL("openmetrics", struct prometheus, openmetrics, "true",
		       "answer in OpenMetrics 1.0 to scrapers that prefer it "
		       "(Accept header)"),
	TALLY_OPT_INT("max_open_spans", struct prometheus, max_open_spans,
		      "100000", 1, 100000000,
		      "open spans tracked at once; further begins are dropped "
		      "and counted"),
	/*
	 * 200000: twice the series count the renderer's budget is set for
	 * (100k in 30 ms), some 60-80 MiB at the 300-400 bytes a series
	 * costs, and far above a node's real needs (a host's few thousand
	 * series plus 128 ranks x 200 traced regions), so it only stops
	 * runaway cardinality: a region or label value per iteration.
	 */
	TALLY_OPT_INT("max_series", struct prometheus, max_series, "200000", 1,
		      100000000,
		      "series kept at once (a histogram or a span region "
		      "counts one); new series beyond it are dropped and "
		      "counted (series_limit)"),
	TALLY_OPT_INT("max_connections", struct prometheus, max_connections,
		      "64", 1, 65536,
		      "connections kept open at once; beyond it those waiting "
		      "longest for a request (then the oldest replies) are "
		      "closed"),
	/*
	 * 64 MiB: four copies of a page of 200000 series (max_series), or a
	 * hundred of a node's usual few thousand; a page bigger than this is
	 * still sent, to one reader at a time.
	 */
	TALLY_OPT_INT("max_reply_bytes", struct prometheus, max_reply_bytes,
		      "67108864", 65536, 1e15,
		      "bytes of rendered pages held for replies being sent; "
		      "beyond it the replies in progress longest are cut"),
	TALLY_OPT_DURATION("idle_timeout", struct prometheus, idle_timeout, "5",
			 0.1, 3600,
			 "seconds a connection may stay open without sending a "
			 "request byte (after it was opened, or between the "
			 "requests of a keep-alive connection)"),
	TALLY_OPT_DURATION("request_timeout", struct prometheus, request_timeout,
			 "10", 0.1, 3600,
			 "seconds a request may take to arrive, from its first "
			 "byte; a slower one has its connection closed"),
	TALLY_OPT_STRING("final_page", struct prometheus, final_page, NULL,
			 "file the page is written to when a wrapped command "
			 "ends (tallyd --user -- CMD) and on SIGUSR1; "
			 "relative: in the output directory; \"\": never; "
			 "default: metrics.prom, or metrics-INSTANCE.prom "
			 "when several prometheus outputs leave it unset"),
	TALLY_OPT_STRING("tls_cert_file", struct prometheus, tls_cert_file,
			 NULL,
			 "serve HTTPS with this certificate (PEM, the chain "
			 "after it), read again on SIGHUP (node_exporter's "
			 "tls_server_config.cert_file)"),
	TALLY_OPT_STRING("tls_key_file", struct prometheus, tls_key_file, NULL,
			 "the certificate's private key (PEM), read again on "
			 "SIGHUP (tls_server_config.key_file)"),
	TALLY_OPT_LABELS("basic_auth_users", struct prometheus,
			 basic_auth_users,
			 "if set, scrapers must send one of these users and "
			 "its password: user = \"bcrypt hash\" (\"$2y$...\", "
			 "node_exporter's basic_auth_users); others get 401"),
	TALLY_OPT_END
};

static const struct tally_output_ops prometheus_ops = {
	.check = prometheus_check,
	.init = prometheus_init,
	.write = prometheus_write,
	.fini = prometheus_fini,
	.end = prometheus_end,
	.reopen = prometheus_reopen,
	/* counter increments and gauge adjustments add up in the store */
	.accepts = TALLY_FORMS_DELTA | TALLY_FORMS_INTERVAL,
};

TALLY_PLUGIN_OUTPUT(prometheus,
		    "Prometheus exposition over HTTP (/metrics, text 0.0.4 "
		    "and OpenMetrics)",
		    struct prometheus, prometheus_options, &prometheus_ops);
