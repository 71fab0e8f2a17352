/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/prometheus/push.c - the prometheus_push output: the page
 * the prometheus output would serve, pushed instead of scraped, to a
 * Pushgateway (PUT /metrics/job/<job>/instance/<host>) or to
 * VictoriaMetrics (POST /api/v1/import/prometheus), as Omnistat's user
 * mode pushes
 *
 * A sibling of the prometheus output, not an option of remote_write: what
 * it pushes is state, not a stream of samples. It keeps the prometheus
 * output's series store (store.c: counters and histograms accumulated from
 * statsd deltas and aggregate's interval records, span regions, expiry,
 * the exposition rendering) and every `interval` sends the whole page.
 * A Pushgateway replaces its group with each page (PUT), so series that
 * expired here leave it too; VictoriaMetrics stores the page's samples at
 * the time it receives them. While the server is down the one request
 * out is retried (the core's HTTP client: capped backoff, Retry-After) and
 * the pushes that fall due meanwhile are skipped, counted: the state they
 * would have carried is in the next page, since the page is cumulative, so
 * nothing is queued and nothing but intermediate snapshots is lost.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include <tally/http.h>
#include <tally/plugin.h>

#include "store.h"

enum push_api {
	API_PUSHGATEWAY = 0,
	API_VICTORIAMETRICS,
};

struct push {
	/* options */
	char *url;
	int api; /* enum push_api */
	char *job;
	double interval; /* seconds between pushes; 0: global.interval */
	double expire;
	double timeout;
	double backoff_max;
	int64_t max_series;

	/* run */
	struct tally_instance *inst;
	struct tally_http_client *http;
	struct prom_store *store;
	char *path;
	const char *method;
	struct event *tick;
	size_t inflight;   /* series of the page out */
	uint64_t gen_sent; /* store generation of the page out */
	uint64_t gen_done; /* store generation last pushed (or refused) */
	struct tally_http_complaints log;
};

static const char *const push_apis[] = { "pushgateway", "victoriametrics",
					 NULL };

/* As the prometheus output: a series lives this many producer intervals
 * without update unless expire is set; event-driven series 5 minutes. */
#define PUSH_EXPIRE_INTERVALS	  3.0
#define PUSH_EVENT_EXPIRE_SECONDS 300.0

static int push_check(struct tally_instance *inst, void *state)
{
	struct push *p = state;
	struct tally_http_url u;
	char err[TALLY_HTTP_ERRLEN];
	int rc = 0;

	if (tally_http_url_parse("url", p->url, &u, err, sizeof(err)) < 0) {
		tally_log(inst, LOG_ERR, "%s", err);
		rc = -1;
	}
	if (p->api == API_PUSHGATEWAY &&
	    (!p->job || !*p->job || strchr(p->job, '/'))) {
		tally_log(inst, LOG_ERR,
			  "job must be a name without '/' (the Pushgateway's "
			  "grouping key)");
		rc = -1;
	}
	return rc;
}

/* "/<key>/<value>" with the value percent-encoded. */
static int path_add(struct evbuffer *q, const char *key, const char *value)
{
	char *enc = evhttp_uriencode(value, -1, 0);
	int rc;

	if (!enc)
		return -1;
	rc = evbuffer_add_printf(q, "/%s/%s", key, enc);
	free(enc);
	return rc < 0 ? -1 : 0;
}

/*
 * Pushgateway: the group is the job and, unless the static labels turned it
 * off, instance = the host name (tally_output_labels()), the same value the
 * page's series carry.
 */
static int push_path(struct push *p)
{
	const char *instance =
		tally_labels_get(tally_output_labels(p->inst), "instance");
	struct evbuffer *q;
	size_t n;
	int rc = -1;

	if (p->api == API_VICTORIAMETRICS) {
		p->path = strdup("/api/v1/import/prometheus");
		return p->path ? 0 : -1;
	}
	q = evbuffer_new();
	if (!q)
		return -1;
	if (evbuffer_add_printf(q, "/metrics") < 0 ||
	    path_add(q, "job", p->job) < 0 ||
	    (instance && *instance && path_add(q, "instance", instance) < 0))
		goto out;
	n = evbuffer_get_length(q);
	p->path = malloc(n + 1);
	if (!p->path)
		goto out;
	evbuffer_remove(q, p->path, n);
	p->path[n] = '\0';
	rc = 0;
out:
	evbuffer_free(q);
	return rc;
}

/*
 * Shutdown waits for what an output holds: here, a state not pushed yet
 * (the store changed since the last page that got its answer). The ticks
 * go on while tallyd drains, so the last state goes out before it exits.
 * Held in series (those of the page out, or of the page to push; one for
 * an empty page), so that the core's line at the shutdown deadline says
 * what the fini op counts.
 */
static void push_held(struct push *p)
{
	bool busy = tally_http_client_busy(p->http);
	bool behind = prom_store_generation(p->store) != p->gen_done;
	size_t n = busy ? p->inflight : 0;

	if (!busy && behind)
		n = prom_store_series(p->store);
	if ((busy || behind) && !n)
		n = 1;
	tally_output_held(p->inst, n);
}

static void push_done(void *arg, const struct tally_http_result *res)
{
	struct push *p = arg;
	size_t n = p->inflight;

	p->inflight = 0;
	p->gen_done = p->gen_sent;
	if (res->outcome == TALLY_HTTP_OK)
		tally_count_event(p->inst, "pushes", 1);
	else
		tally_http_complain(&p->log, p->inst, res, n, "series");
	push_held(p);
}

/* Render the page and send it; one request at a time. */
static void push_send(struct push *p)
{
	static const struct tally_http_header h[] = {
		{ "Content-Type", "text/plain; version=0.0.4; charset=utf-8" },
	};
	struct evbuffer *body;

	if (tally_http_client_busy(p->http)) {
		/* the page out still carries state; the next one all of it */
		tally_count_event(p->inst, "pushes_skipped_busy", 1);
		return;
	}
	body = evbuffer_new();
	if (!body ||
	    prom_store_render(p->store, body, PROM_FMT_TEXT,
			      tally_monotonic_ns(), tally_now_ns()) < 0)
		goto out_nomem;
	p->inflight = prom_store_series(p->store);
	p->gen_sent = prom_store_generation(p->store);
	if (tally_http_client_request(p->http, p->method, p->path, h, 1, body,
				      push_done, p) < 0)
		goto out_nomem;
	push_held(p);
	evbuffer_free(body);
	return;

out_nomem:
	tally_log(p->inst, LOG_ERR, "no memory for a page: push skipped");
	tally_count_drop(p->inst, "nomem", prom_store_series(p->store));
	p->inflight = 0;
	if (body)
		evbuffer_free(body);
}

static void push_tick(evutil_socket_t fd, short what, void *arg)
{
	push_send(arg);
}

static int push_write(struct tally_instance *inst, void *state,
		      struct tally_batch *b)
{
	struct push *p = state;

	/* what the store cannot take it drops and counts, by reason */
	prom_store_apply(p->store, b, tally_monotonic_ns());
	push_held(p);
	return 0;
}

/* Shutdown and --once: push the last state now. */
static int push_flush(struct tally_instance *inst, void *state)
{
	struct push *p = state;

	if (tally_http_client_busy(p->http))
		tally_http_client_retry_now(p->http);
	else if (prom_store_generation(p->store) != p->gen_done)
		push_send(p);
	return 0;
}

static int push_init(struct tally_instance *inst, void *state)
{
	struct push *p = state;
	struct event_base *base = tally_instance_base(inst);
	struct prom_store_opts so = {
		.expire_ns = (int64_t)(p->expire * 1e9),
		.expire_factor = PUSH_EXPIRE_INTERVALS,
		.expire_event_ns = (int64_t)(PUSH_EVENT_EXPIRE_SECONDS * 1e9),
		.span_metrics = PROM_SPANS_TALLY,
		.jobid = tally_jobid(),
		.max_series = (size_t)p->max_series,
		.labels = tally_output_labels(inst),
	};
	struct tally_http_opts ho = {
		.timeout = p->timeout,
		.backoff_max = p->backoff_max,
	};
	double iv =
		p->interval > 0 ? p->interval : tally_instance_interval(inst);
	struct timeval tv = tally_timeval(iv);
	struct tally_http_url u;

	p->inst = inst;
	p->method = p->api == API_PUSHGATEWAY ? "PUT" : "POST";
	if (tally_http_url_parse("url", p->url, &u, NULL, 0) < 0)
		return -1;
	if (push_path(p) < 0)
		goto out_nomem;
	p->store = prom_store_new(&so, inst);
	if (p->store)
		p->gen_done = prom_store_generation(p->store);
	p->http = tally_http_client_new(inst, base, &u, &ho);
	p->tick = event_new(base, -1, EV_PERSIST, push_tick, p);
	if (!p->store || !p->http || !p->tick || event_add(p->tick, &tv) < 0)
		goto out_nomem;
	return 0;

out_nomem:
	errno = ENOMEM;
	return -1;
}

static void push_fini(struct tally_instance *inst, void *state)
{
	struct push *p = state;

	if (p->http && tally_http_client_busy(p->http)) {
		/* the core logged it if the shutdown deadline ran out */
		if (!tally_output_loss_logged(inst))
			tally_log(inst, LOG_WARNING,
				  "stopping with a page of %zu series not "
				  "pushed",
				  p->inflight);
		tally_count_drop(inst, "undelivered_at_exit", p->inflight);
	}
	if (p->tick)
		event_free(p->tick);
	tally_http_client_free(p->http);
	prom_store_free(p->store);
	free(p->path);
}

static const struct tally_option push_options[] = {
	TALLY_OPT_STRING("url", struct push, url, "http://127.0.0.1:9091",
			 "the server, http://host:port[/prefix]"),
	TALLY_OPT_ENUM("api", struct push, api, "pushgateway", push_apis,
		       "pushgateway: PUT /metrics/job/<job>/instance/<host>; "
		       "victoriametrics: POST /api/v1/import/prometheus"),
	TALLY_OPT_STRING("job", struct push, job, "tally",
			 "pushgateway: the job of the grouping key"),
	TALLY_OPT_DURATION("interval", struct push, interval, "0", 0, 86400,
			   "seconds between pushes (0: global.interval)"),
	TALLY_OPT_DURATION("expire", struct push, expire, "0", 0, 1e9,
			   "a series not updated for this long leaves the "
			   "page (0: 3 intervals of its input, 5 minutes for "
			   "event-driven inputs)"),
	TALLY_OPT_DURATION("timeout", struct push, timeout, "10s", 0.001, 3600,
			   "an attempt (connect, send, the whole answer) "
			   "longer than this fails "
			   "(and is retried)"),
	TALLY_OPT_DURATION("backoff_max", struct push, backoff_max, "5s", 0.001,
			   3600,
			   "cap of the exponential backoff between retries"),
	TALLY_OPT_INT("max_series", struct push, max_series, "200000", 1,
		      100000000,
		      "series on the page at most; further ones are dropped, "
		      "counted (series_limit)"),
	TALLY_OPT_END
};

static const struct tally_output_ops push_ops = {
	.check = push_check,
	.init = push_init,
	.write = push_write,
	.flush = push_flush,
	.fini = push_fini,
	.accepts = TALLY_FORMS_DELTA | TALLY_FORMS_INTERVAL,
	.host_label = "instance",
};

TALLY_PLUGIN_OUTPUT(prometheus_push,
		    "the exposition page pushed to a Pushgateway or "
		    "VictoriaMetrics",
		    struct push, push_options, &push_ops);
