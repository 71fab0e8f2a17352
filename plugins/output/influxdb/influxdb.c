/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/influxdb/influxdb.c - points to InfluxDB over HTTP: the
 * v1 /write API (user/password) or the v2 /api/v2/write API (token)
 *
 * Records become line protocol (line.c) in a pending buffer; the buffer
 * goes out as one request when it holds batch_size points or when it has
 * waited flush_interval seconds, through the core's HTTP client
 * (tally/http.h: keep-alive, gzip, retries with backoff on connection
 * errors, 5xx and 429). One request is in flight at a time; while it is
 * (the server is down, say) the pending buffer fills up to batch_size
 * points, and then write() says EAGAIN: further batches wait in the
 * core's output queue, bounded in records (queue_records), whose overflow
 * drops the oldest, counted. A request the server refuses (4xx other than
 * 429) is logged with the server's message and its points dropped and
 * counted; never retried.
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

#include "line.h"

enum influx_api {
	API_V1 = 0,
	API_V2,
};

struct influxdb {
	/* options */
	char *url;
	int api;		/* enum influx_api */
	char *database;
	char *retention_policy;
	char *user;
	char *password;
	char *org;
	char *bucket;
	char *token;
	int precision;		/* enum influx_precision */
	bool gzip;
	int64_t batch_size;	/* points per request */
	double flush_interval;	/* seconds a point may wait for its batch */
	double timeout;
	int64_t max_attempts;
	char *span_measurement;

	/* run */
	struct tally_instance *inst;
	struct tally_http_client *http;
	char *path;		/* "/write?db=...&precision=..." */
	char *auth;		/* Authorization header value, or NULL */
	struct influx_render r;
	struct influx_render counted; /* r's counters already reported */
	struct influx_buf pending;
	size_t pending_points;
	/*
	 * What is being delivered: out.p[out_off..out.len) holds out_points
	 * points; a request carries the first inflight_points of them
	 * (inflight_bytes), at most chunk_max (halved on each "too large").
	 */
	struct influx_buf out;
	size_t out_off;
	size_t out_points;
	size_t inflight_points;
	size_t inflight_bytes;
	size_t chunk_max;
	struct tally_log_limit refused_log, gave_up_log;
	struct event *flush_ev;
	bool flush_due;		/* the interval passed while a request ran */
	bool blocked;		/* write() said EAGAIN: call ready() later */
};

static const char *const influx_apis[] = { "v1", "v2", NULL };
static const char *const influx_precisions[] = { "ns", "us", "ms", "s",
						 NULL };
/* the precision parameter as each API spells it */
static const char *const v1_precision[] = { "ns", "u", "ms", "s" };
static const char *const v2_precision[] = { "ns", "us", "ms", "s" };

static int influxdb_check(struct tally_instance *inst, void *state)
{
	struct influxdb *d = state;
	struct tally_http_url u;
	char err[TALLY_HTTP_ERRLEN];
	int rc = 0;

	if (tally_http_url_parse("url", d->url, &u, err, sizeof(err)) < 0) {
		tally_log(inst, LOG_ERR, "%s", err);
		rc = -1;
	}
	if (d->api == API_V1) {
		if (!d->database || !*d->database) {
			tally_log(inst, LOG_ERR,
				  "api v1 needs a database: set database");
			rc = -1;
		}
		if (d->token || d->org || d->bucket) {
			tally_log(inst, LOG_ERR,
				  "token, org and bucket are for api = \"v2\"; "
				  "api v1 takes database, user and password");
			rc = -1;
		}
		if (d->user && strchr(d->user, ':')) {
			tally_log(inst, LOG_ERR,
				  "user \"%s\" holds a ':', which HTTP Basic "
				  "authentication cannot carry: choose another "
				  "user name",
				  d->user);
			rc = -1;
		}
		if (!d->user != !d->password) {
			tally_log(inst, LOG_ERR,
				  "user and password go together: set both or "
				  "neither");
			rc = -1;
		}
	} else {
		if (!d->org || !d->bucket || !d->token) {
			tally_log(inst, LOG_ERR,
				  "api v2 needs org, bucket and token");
			rc = -1;
		} else if (!*d->token || !*d->org || !*d->bucket) {
			tally_log(inst, LOG_ERR,
				  "api v2: org, bucket and token must not be "
				  "empty");
			rc = -1;
		}
		if (d->database || d->user || d->password ||
		    d->retention_policy) {
			tally_log(inst, LOG_ERR,
				  "database, retention_policy, user and "
				  "password are for api = \"v1\"; api v2 takes "
				  "org, bucket and token");
			rc = -1;
		}
	}
	if (!d->span_measurement || !*d->span_measurement) {
		tally_log(inst, LOG_ERR, "span_measurement must not be empty");
		rc = -1;
	}
	return rc;
}

/* RFC 4648 base64 of @n bytes, for HTTP Basic authentication. */
static char *base64(const char *s, size_t n)
{
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				 "abcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;
	const unsigned char *p = (const unsigned char *)s;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16;

		v |= i + 1 < n ? (unsigned)p[i + 1] << 8 : 0;
		v |= i + 2 < n ? p[i + 2] : 0;
		*o++ = al[v >> 18 & 63];
		*o++ = al[v >> 12 & 63];
		*o++ = i + 1 < n ? al[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? al[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* "?key=" or "&key=" and @value percent-encoded; NULL value: nothing. */
static int query_add(struct evbuffer *q, bool *first, const char *key,
		     const char *value)
{
	char *enc;
	int rc;

	if (!value)
		return 0;
	enc = evhttp_uriencode(value, -1, 0);
	if (!enc)
		return -1;
	rc = evbuffer_add_printf(q, "%s%s=%s", *first ? "?" : "&", key, enc);
	*first = false;
	free(enc);
	return rc < 0 ? -1 : 0;
}

static int influxdb_path(struct influxdb *d)
{
	struct evbuffer *q = evbuffer_new();
	bool first = true;
	size_t n;
	int rc = -1;

	if (!q)
		return -1;
	if (d->api == API_V1) {
		if (evbuffer_add_printf(q, "/write") < 0 ||
		    query_add(q, &first, "db", d->database) < 0 ||
		    query_add(q, &first, "rp", d->retention_policy) < 0 ||
		    query_add(q, &first, "precision",
			      v1_precision[d->precision]) < 0)
			goto out;
	} else if (evbuffer_add_printf(q, "/api/v2/write") < 0 ||
		   query_add(q, &first, "org", d->org) < 0 ||
		   query_add(q, &first, "bucket", d->bucket) < 0 ||
		   query_add(q, &first, "precision",
			     v2_precision[d->precision]) < 0) {
		goto out;
	}
	n = evbuffer_get_length(q);
	d->path = malloc(n + 1);
	if (!d->path)
		goto out;
	evbuffer_remove(q, d->path, n);
	d->path[n] = '\0';
	rc = 0;
out:
	evbuffer_free(q);
	return rc;
}

static int influxdb_auth(struct influxdb *d)
{
	if (d->api == API_V2) {
		size_t n = strlen(d->token) + 7;

		d->auth = malloc(n);
		if (!d->auth)
			return -1;
		snprintf(d->auth, n, "Token %s", d->token);
	} else if (d->user) {
		size_t n = strlen(d->user) + strlen(d->password) + 2;
		char *up = malloc(n), *b;

		if (!up)
			return -1;
		snprintf(up, n, "%s:%s", d->user, d->password);
		b = base64(up, n - 1);
		free(up);
		if (!b)
			return -1;
		d->auth = malloc(strlen(b) + 7);
		if (d->auth)
			sprintf(d->auth, "Basic %s", b);
		free(b);
		if (!d->auth)
			return -1;
	}
	return 0;
}

/* Report what the renderer counted since the last call. */
static void influxdb_count(struct influxdb *d)
{
	struct influx_render *r = &d->r, *c = &d->counted;

	if (r->non_finite != c->non_finite)
		tally_count_drop(d->inst, "non_finite",
				 r->non_finite - c->non_finite);
	if (r->invalid != c->invalid)
		tally_count_drop(d->inst, "invalid_name",
				 r->invalid - c->invalid);
	if (r->no_begin != c->no_begin)
		tally_count_drop(d->inst, "span_without_begin",
				 r->no_begin - c->no_begin);
	if (r->non_finite_fields != c->non_finite_fields)
		tally_count_event(d->inst, "non_finite_fields_left_out",
				  r->non_finite_fields - c->non_finite_fields);
	*c = *r;
}

/* Tell the core what waits here, so that shutdown waits for it. */
static void influxdb_held(struct influxdb *d)
{
	tally_output_held(d->inst, d->pending_points + d->out_points);
}

static void influxdb_done(void *arg, const struct tally_http_result *res);

/* Bytes of the first @k lines of what is being delivered. */
static size_t out_bytes(const struct influxdb *d, size_t k)
{
	const char *p = d->out.p + d->out_off, *end = d->out.p + d->out.len;

	if (k >= d->out_points)
		return (size_t)(end - p);
	while (k--) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		p = nl ? nl + 1 : end;
	}
	return (size_t)(p - (d->out.p + d->out_off));
}

/*
 * Send the next request, if no request is out: the rest of what is being
 * delivered, or else the pending points. The client references the bytes
 * (no copy): they stay here until the request has ended, so that a
 * request the server finds too large can be sent again in halves.
 */
static void influxdb_send(struct influxdb *d)
{
	struct tally_http_header h[2] = {
		{ "Content-Type", "text/plain; charset=utf-8" },
		{ "Authorization", d->auth },
	};
	struct evbuffer *body;
	size_t k;

	if (tally_http_client_busy(d->http))
		return;
	if (!d->out_points) {
		struct influx_buf t = d->out;

		if (!d->pending_points)
			return;
		event_del(d->flush_ev);
		d->flush_due = false;
		/* swap: the spent buffer's memory fills up next */
		t.len = 0;
		d->out = d->pending;
		d->pending = t;
		d->out_off = 0;
		d->out_points = d->pending_points;
		d->pending_points = 0;
		d->chunk_max = SIZE_MAX;
	}
	k = d->out_points < d->chunk_max ? d->out_points : d->chunk_max;
	d->inflight_points = k;
	d->inflight_bytes = out_bytes(d, k);
	body = evbuffer_new();
	if (!body ||
	    evbuffer_add_reference(body, d->out.p + d->out_off,
				   d->inflight_bytes, NULL, NULL) < 0 ||
	    tally_http_client_request(d->http, "POST", d->path, h,
				      d->auth ? 2 : 1, body, influxdb_done,
				      d) < 0) {
		if (body)
			evbuffer_free(body);
		tally_count_drop(d->inst, "nomem", d->out_points);
		tally_output_release(d->inst, d->out_points);
		d->out_points = 0;
		d->inflight_points = 0;
		influxdb_held(d);
		return;
	}
	evbuffer_free(body);
	influxdb_held(d);
}

/* "partial write: ... dropped=N": N, or 0. */
static uint64_t partial_dropped(const char *msg)
{
	const char *p = strstr(msg, "dropped=");

	return p ? strtoull(p + 8, NULL, 10) : 0;
}

/* The request's points are done with (written, or dropped, counted). */
static void influxdb_advance(struct influxdb *d)
{
	tally_output_release(d->inst, d->inflight_points);
	d->out_off += d->inflight_bytes;
	d->out_points -= d->inflight_points;
	d->inflight_points = 0;
	d->inflight_bytes = 0;
}

static void influxdb_done(void *arg, const struct tally_http_result *res)
{
	struct influxdb *d = arg;
	size_t n = d->inflight_points;

	if (res->outcome == TALLY_HTTP_REJECTED && res->too_large && n > 1) {
		/* send the same points again in halves (Telegraf does) */
		d->chunk_max = n / 2;
		d->inflight_points = 0;
		d->inflight_bytes = 0;
		tally_log_limited(&d->refused_log, 60, d->inst, LOG_WARNING,
				  "request of %zu points too large for the "
				  "server (%s): sending them in requests of "
				  "%zu",
				  n, res->error, d->chunk_max);
		influxdb_send(d);
		return;
	}
	influxdb_advance(d);
	switch (res->outcome) {
	case TALLY_HTTP_OK:
		tally_count_event(d->inst, "points_written", n);
		break;
	case TALLY_HTTP_REJECTED:
		if (res->too_large) {
			tally_log_limited(&d->refused_log, 60, d->inst,
					  LOG_ERR,
					  "a single point too large for the "
					  "server (%s): dropped",
					  res->error);
			tally_count_drop(d->inst, "too_large", n);
		} else if (strstr(res->body, "partial write")) {
			uint64_t lost = partial_dropped(res->body);

			if (!lost || lost > n)
				lost = n;
			tally_log_limited(&d->refused_log, 60, d->inst,
					  LOG_WARNING,
					  "partial write (HTTP %d): %s; %llu "
					  "of %zu points dropped by the server",
					  res->status, res->message,
					  (unsigned long long)lost, n);
			tally_count_drop(d->inst, "partial_write", lost);
			tally_count_event(d->inst, "points_written", n - lost);
		} else {
			tally_log_limited(&d->refused_log, 60, d->inst,
					  LOG_ERR,
					  "write refused (HTTP %d): %s; %zu "
					  "points dropped, not retried",
					  res->status, res->message, n);
			tally_count_drop(d->inst, "rejected", n);
		}
		break;
	case TALLY_HTTP_GAVE_UP:
		tally_log_limited(&d->gave_up_log, 60, d->inst, LOG_ERR,
				  "write failed %u times (%s): %zu points "
				  "dropped",
				  res->attempts, res->error, n);
		tally_count_drop(d->inst, "gave_up", n);
		break;
	}
	if (d->out_points || d->pending_points >= (size_t)d->batch_size ||
	    d->flush_due)
		influxdb_send(d);
	influxdb_held(d);
	if (d->blocked && d->pending_points < (size_t)d->batch_size) {
		d->blocked = false;
		tally_output_ready(d->inst);
	}
}

static void influxdb_flush_timer(evutil_socket_t fd, short what, void *arg)
{
	struct influxdb *d = arg;

	if (tally_http_client_busy(d->http))
		d->flush_due = true;
	else
		influxdb_send(d);
}

static int influxdb_write(struct tally_instance *inst, void *state,
			  struct tally_batch *b)
{
	struct influxdb *d = state;
	const struct tally_record *recs = tally_batch_records(b);
	size_t n = tally_batch_count(b), len0, points0;

	if (d->pending_points >= (size_t)d->batch_size) {
		influxdb_send(d);
		if (d->pending_points >= (size_t)d->batch_size) {
			/* the server is slow or down: the core queues */
			d->blocked = true;
			errno = EAGAIN;
			return -1;
		}
	}
	len0 = d->pending.len;
	points0 = d->pending_points;
	for (size_t i = 0; i < n; i++) {
		int k = influx_render_record(&d->r, &d->pending, &recs[i]);

		if (k < 0) {
			tally_count_drop(inst, "nomem", 1);
			continue;
		}
		d->pending_points += (size_t)k;
	}
	/* the batch stays with the core until its points are delivered, so
	 * that a reload hands it to the successor */
	if (d->pending_points > points0 &&
	    tally_output_hold(inst, b, d->pending_points - points0) < 0) {
		d->pending.len = len0;
		d->pending_points = points0;
		influxdb_count(d);
		errno = ENOMEM;
		return -1;
	}
	influxdb_count(d);
	influxdb_held(d);
	if (d->pending_points >= (size_t)d->batch_size) {
		influxdb_send(d);
	} else if (d->pending_points &&
		   !evtimer_pending(d->flush_ev, NULL)) {
		struct timeval tv = {
			.tv_sec = (time_t)d->flush_interval,
			.tv_usec = (suseconds_t)((d->flush_interval -
						  (double)(time_t)
							  d->flush_interval) *
						 1e6),
		};

		evtimer_add(d->flush_ev, &tv);
	}
	return 0;
}

static int influxdb_flush(struct tally_instance *inst, void *state)
{
	struct influxdb *d = state;

	influxdb_send(d);
	tally_http_client_retry_now(d->http);
	return 0;
}

static int influxdb_init(struct tally_instance *inst, void *state)
{
	struct influxdb *d = state;
	struct tally_labels *statics = tally_output_labels(inst);
	struct tally_http_opts o = {
		.timeout = d->timeout,
		.max_attempts = (unsigned)d->max_attempts,
		.gzip = d->gzip,
	};
	struct tally_http_url u;

	d->inst = inst;
	if (tally_http_url_parse("url", d->url, &u, NULL, 0) < 0)
		return -1;
	d->r.statics = tally_labels_pairs(statics);
	d->r.nstatics = tally_labels_count(statics);
	d->r.precision = (enum influx_precision)d->precision;
	d->r.span_measurement = d->span_measurement;
	if (influxdb_path(d) < 0 || influxdb_auth(d) < 0)
		goto out_nomem;
	d->flush_ev = evtimer_new(tally_instance_base(inst),
				  influxdb_flush_timer, d);
	d->http = tally_http_client_new(inst, tally_instance_base(inst), &u,
					&o);
	if (!d->flush_ev || !d->http)
		goto out_nomem;
	return 0;

out_nomem:
	errno = ENOMEM;
	return -1;
}

static void influxdb_fini(struct tally_instance *inst, void *state)
{
	struct influxdb *d = state;
	size_t lost = d->pending_points + d->out_points;

	if (lost && tally_output_handed_over(inst)) {
		/* a reload: the core has their batches, for the successor */
		tally_log(inst, LOG_INFO,
			  "replaced: %zu points not delivered yet go to the "
			  "successor with their batches",
			  lost);
	} else if (lost) {
		tally_log(inst, LOG_WARNING,
			  "stopping with %zu points not delivered", lost);
		tally_count_drop(inst, "undelivered_at_exit", lost);
	}
	tally_http_client_free(d->http);
	if (d->flush_ev)
		event_free(d->flush_ev);
	influx_buf_free(&d->pending);
	influx_buf_free(&d->out);
	free(d->path);
	free(d->auth);
}

static const struct tally_option influxdb_options[] = {
	TALLY_OPT_STRING("url", struct influxdb, url, "http://127.0.0.1:8086",
			 "the server, http://host:port[/prefix]"),
	TALLY_OPT_ENUM("api", struct influxdb, api, "v1", influx_apis,
		       "v1: /write with database (InfluxDB 1.x); v2: "
		       "/api/v2/write with org, bucket and token"),
	TALLY_OPT_STRING("database", struct influxdb, database, NULL,
			 "v1: the database written to"),
	TALLY_OPT_STRING("retention_policy", struct influxdb, retention_policy,
			 NULL, "v1: the retention policy (default: the "
			       "database's)"),
	TALLY_OPT_STRING("user", struct influxdb, user, NULL,
			 "v1: user name (HTTP Basic authentication)"),
	TALLY_OPT_STRING("password", struct influxdb, password, NULL,
			 "v1: password"),
	TALLY_OPT_STRING("org", struct influxdb, org, NULL,
			 "v2: organization"),
	TALLY_OPT_STRING("bucket", struct influxdb, bucket, NULL,
			 "v2: bucket"),
	TALLY_OPT_STRING("token", struct influxdb, token, NULL,
			 "v2: API token (Authorization: Token ...)"),
	TALLY_OPT_ENUM("precision", struct influxdb, precision, "ns",
		       influx_precisions,
		       "unit of the timestamps written: ns, us, ms or s"),
	TALLY_OPT_BOOL("gzip", struct influxdb, gzip, "false",
		       "compress request bodies (Content-Encoding: gzip)"),
	TALLY_OPT_INT("batch_size", struct influxdb, batch_size, "5000", 1,
		      1000000, "points per request at most"),
	TALLY_OPT_DURATION("flush_interval", struct influxdb, flush_interval,
			   "1s", 0.001, 3600,
			   "longest a point waits for its batch to fill"),
	TALLY_OPT_DURATION("timeout", struct influxdb, timeout, "10s", 0.001,
			   3600,
			   "a request without progress for this long fails "
			   "(and is retried)"),
	TALLY_OPT_INT("max_attempts", struct influxdb, max_attempts, "0", 0,
		      1000000,
		      "attempts per batch on connection errors, 5xx and 429 "
		      "before it is dropped, counted (0: until it is "
		      "delivered; the queue in front bounds what waits)"),
	TALLY_OPT_STRING("span_measurement", struct influxdb, span_measurement,
			 "tally_span", "measurement of completed spans"),
	TALLY_OPT_END
};

static const struct tally_output_ops influxdb_ops = {
	.check = influxdb_check,
	.init = influxdb_init,
	.write = influxdb_write,
	.flush = influxdb_flush,
	.fini = influxdb_fini,
	.accepts = TALLY_FORMS_INTERVAL,
	.host_label = "host",
};

TALLY_PLUGIN_OUTPUT(influxdb, "points to InfluxDB over HTTP (v1 or v2 API)",
		    struct influxdb, influxdb_options, &influxdb_ops);
