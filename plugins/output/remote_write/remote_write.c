/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/remote_write/remote_write.c - samples to Prometheus,
 * Mimir, Thanos, VictoriaMetrics... over Prometheus remote write 1.0
 *
 * Records become one request in the making (encode.c: series and samples,
 * packed as a protobuf WriteRequest and snappy-compressed when it goes);
 * the request goes out when it holds batch_size samples or has waited
 * flush_interval seconds, through the core's batcher and HTTP client
 * (tally/http.h: keep-alive, one request at a time so that per-series
 * order holds, retries with a capped backoff on connection errors, 5xx and
 * 429, a 429's or 503's Retry-After honoured, a request too large sent
 * again in halves, the batches held for a reload's successor). While a
 * request is out (the server is down, say) the next one fills up to
 * batch_size samples, and then write() says EAGAIN: further batches wait
 * in the core's output queue, bounded in records (queue_records), whose
 * overflow drops the oldest, counted. A request the server refuses (4xx
 * other than 429) is logged with the server's message and its samples
 * dropped and counted; never retried.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include <tally/http.h>
#include <tally/plugin.h>

#include "encode.h"

struct remote_write {
	/* options */
	char *url;
	int64_t batch_size;    /* samples per request */
	double flush_interval; /* seconds a sample may wait for its batch */
	double timeout;
	double backoff_max;
	int64_t max_attempts;

	/* run */
	struct tally_instance *inst;
	struct tally_http_batch *batch; /* the core's batching and client */
	char path[sizeof(((struct tally_http_url *)0)->prefix)];
	struct rw_req *req;	 /* the request being built (pending) */
	struct rw_req *out;	 /* the request being delivered */
	size_t out_done;	 /* its samples done with, first first */
	struct rw_drops counted; /* both requests' drops already reported */
};

/*
 * The url option is the whole write URL, as in Prometheus' own
 * remote_write configuration: its path is the request's, the client gets
 * the server alone. No path: Prometheus' /api/v1/write.
 */
static int rw_url(struct remote_write *d, struct tally_http_url *u, char *err,
		  size_t errlen)
{
	if (tally_http_url_parse("url", d->url, u, err, errlen) < 0)
		return -1;
	snprintf(d->path, sizeof(d->path), "%s",
		 *u->prefix ? u->prefix : "/api/v1/write");
	u->prefix[0] = '\0';
	return 0;
}

static int rw_check(struct tally_instance *inst, void *state)
{
	struct remote_write *d = state;
	struct tally_http_url u;
	char err[TALLY_HTTP_ERRLEN];

	if (rw_url(d, &u, err, sizeof(err)) < 0) {
		tally_log(inst, LOG_ERR, "%s", err);
		return -1;
	}
	return 0;
}

/* Report what the encoder dropped since the last call. */
static void rw_count(struct remote_write *d)
{
	const struct rw_drops *a = rw_req_drops(d->req);
	const struct rw_drops *o = rw_req_drops(d->out);
	struct rw_drops sum = {
		.span = a->span + o->span,
		.label_collision = a->label_collision + o->label_collision,
		.not_cumulative = a->not_cumulative + o->not_cumulative,
	};
	const struct rw_drops *r = &sum;
	struct rw_drops *c = &d->counted;

	if (r->span != c->span) {
		if (!c->span)
			tally_log(d->inst, LOG_WARNING,
				  "spans have no remote write form: dropped, "
				  "counted (reason span); put an aggregate "
				  "filter in front to send span metrics");
		tally_count_drop(d->inst, "span", r->span - c->span);
	}
	if (r->label_collision != c->label_collision) {
		if (!c->label_collision)
			tally_log(
				d->inst, LOG_WARNING,
				"a series whose label names clash once "
				"sanitized (or with le, quantile) is dropped, "
				"counted (reason label_collision)");
		tally_count_drop(d->inst, "label_collision",
				 r->label_collision - c->label_collision);
	}
	if (r->not_cumulative != c->not_cumulative)
		tally_count_drop(d->inst, "not_cumulative",
				 r->not_cumulative - c->not_cumulative);
	*c = *r;
}

/* The batcher's seal op: the request built so far is delivered now. */
static void rw_seal(void *arg)
{
	struct remote_write *d = arg;
	struct rw_req *t = d->out;

	rw_req_clear(t);
	d->out = d->req;
	d->req = t;
	d->out_done = 0;
}

/* The batcher's body op: the next @k samples of the request delivered. */
static int rw_body(void *arg, size_t k, struct evbuffer *body)
{
	struct remote_write *d = arg;

	return rw_req_pack(d->out, d->out_done, k, body, NULL);
}

/* The batcher's advance op: @k more samples are done with. */
static void rw_advance(void *arg, size_t k)
{
	struct remote_write *d = arg;

	d->out_done += k;
}

static const struct tally_http_batch_ops rw_batch_ops = {
	.seal = rw_seal,
	.body = rw_body,
	.advance = rw_advance,
};

static int rw_write(struct tally_instance *inst, void *state,
		    struct tally_batch *b)
{
	struct remote_write *d = state;
	const struct tally_record *recs = tally_batch_records(b);
	size_t n = tally_batch_count(b);
	struct rw_mark m;

	if (tally_http_batch_room(d->batch) < 0)
		return -1;
	rw_req_mark(d->req, &m);
	for (size_t i = 0; i < n; i++)
		if (rw_req_add(d->req, &recs[i]) < 0)
			tally_count_drop(inst, "nomem", 1);
	if (tally_http_batch_added(d->batch, b,
				   rw_req_samples(d->req) - m.nsamples) < 0) {
		rw_req_rollback(d->req, &m);
		return -1;
	}
	rw_count(d);
	return 0;
}

static int rw_flush(struct tally_instance *inst, void *state)
{
	struct remote_write *d = state;

	tally_http_batch_flush(d->batch);
	return 0;
}

static int rw_init(struct tally_instance *inst, void *state)
{
	struct remote_write *d = state;
	static const struct tally_http_header h[] = {
		{ "Content-Encoding", "snappy" },
		{ "Content-Type", "application/x-protobuf" },
		{ "X-Prometheus-Remote-Write-Version", "0.1.0" },
	};
	struct tally_http_opts ho = {
		.timeout = d->timeout,
		.backoff_max = d->backoff_max,
		.max_attempts = (unsigned)d->max_attempts,
	};
	struct tally_http_batch_opts bo = {
		.method = "POST",
		.path = d->path,
		.h = h,
		.nh = sizeof(h) / sizeof(h[0]),
		.batch_size = (size_t)d->batch_size,
		.flush_interval = d->flush_interval,
		.unit = "samples",
		.item = "sample",
	};
	struct tally_http_url u;

	d->inst = inst;
	if (rw_url(d, &u, NULL, 0) < 0)
		return -1;
	d->req = rw_req_new(tally_output_labels(inst));
	d->out = rw_req_new(tally_output_labels(inst));
	if (!d->req || !d->out)
		return -1;
	d->batch = tally_http_batch_new(inst, tally_instance_base(inst), &u,
					&ho, &bo, &rw_batch_ops, d);
	return d->batch ? 0 : -1;
}

static void rw_fini(struct tally_instance *inst, void *state)
{
	struct remote_write *d = state;

	tally_http_batch_free(d->batch);
	rw_req_free(d->req);
	rw_req_free(d->out);
}

static const struct tally_option rw_options[] = {
	TALLY_OPT_STRING("url", struct remote_write, url,
			 "http://127.0.0.1:9090/api/v1/write",
			 "the receiver's write URL, http://host:port/path "
			 "(no path: /api/v1/write)"),
	TALLY_OPT_INT("batch_size", struct remote_write, batch_size, "2000", 1,
		      1000000, "samples per request at most"),
	TALLY_OPT_DURATION("flush_interval", struct remote_write,
			   flush_interval, "1s", 0.001, 3600,
			   "longest a sample waits for its batch to fill"),
	TALLY_OPT_DURATION("timeout", struct remote_write, timeout, "10s",
			   0.001, 3600,
			   "an attempt (connect, send, the whole answer) "
			   "longer than this fails "
			   "(and is retried)"),
	TALLY_OPT_DURATION("backoff_max", struct remote_write, backoff_max,
			   "5s", 0.001, 3600,
			   "cap of the exponential backoff between retries "
			   "(Prometheus' own default: 5s)"),
	TALLY_OPT_INT("max_attempts", struct remote_write, max_attempts, "0", 0,
		      1000000,
		      "attempts per request on connection errors, 5xx and 429 "
		      "before it is dropped, counted (0: until it is "
		      "delivered; the queue in front bounds what waits)"),
	TALLY_OPT_END
};

static const struct tally_output_ops rw_ops = {
	.check = rw_check,
	.init = rw_init,
	.write = rw_write,
	.flush = rw_flush,
	.fini = rw_fini,
	.host_label = "instance",
};

TALLY_PLUGIN_OUTPUT(remote_write,
		    "samples to a Prometheus remote write 1.0 receiver "
		    "(protobuf, snappy)",
		    struct remote_write, rw_options, &rw_ops);
