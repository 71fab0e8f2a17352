/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/influxdb/influxdb.c - points to InfluxDB over HTTP: the
 * v1 /write API (user/password) or the v2 /api/v2/write API (token)
 *
 * Records become line protocol (line.c) in a pending buffer; the buffer
 * goes out as one request when it holds batch_size points or when it has
 * waited flush_interval seconds, through the core's batcher and HTTP
 * client (tally/http.h: keep-alive, gzip, retries with backoff on
 * connection errors, 5xx and 429, a request too large sent again in
 * halves, the batches held for a reload's successor). One request is in
 * flight at a time; while it is (the server is down, say) the pending
 * buffer fills up to batch_size points, and then write() says EAGAIN:
 * further batches wait in the core's output queue, bounded in records
 * (queue_records), whose overflow drops the oldest, counted. A request the
 * server refuses (4xx other than 429) is logged with the server's message
 * and its points dropped and counted; never retried.
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
	struct tally_http_batch *batch;	/* the core's batching and client */
	char *path;		/* "/write?db=...&precision=..." */
	char *auth;		/* Authorization header value, or NULL */
	struct influx_render r;
	struct influx_render counted; /* r's counters already reported */
	struct influx_buf pending;
	/* what is being delivered: out.p[out_off..out.len), whole lines */
	struct influx_buf out;
	size_t out_off;
	struct tally_log_limit partial_log;
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
		} else if (d->user && !*d->user) {
			tally_log(inst, LOG_ERR,
				  "user must not be empty (for no "
				  "authentication, set neither user nor "
				  "password)");
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

/* Bytes of the first @k lines of what is being delivered (k >= 1). */
static size_t out_bytes(const struct influxdb *d, size_t k)
{
	const char *p = d->out.p + d->out_off, *end = d->out.p + d->out.len;

	while (k-- && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		p = nl ? nl + 1 : end;
	}
	return (size_t)(p - (d->out.p + d->out_off));
}

/* The batcher's seal op: the pending points are being delivered now. */
static void influxdb_seal(void *arg)
{
	struct influxdb *d = arg;
	struct influx_buf t = d->out;

	/* swap: the spent buffer's memory fills up next */
	t.len = 0;
	d->out = d->pending;
	d->pending = t;
	d->out_off = 0;
}

/* The batcher's body op: the first @k lines, referenced, not copied. */
static int influxdb_body(void *arg, size_t k, struct evbuffer *body)
{
	struct influxdb *d = arg;

	return evbuffer_add_reference(body, d->out.p + d->out_off,
				      out_bytes(d, k), NULL, NULL);
}

/* The batcher's advance op: the first @k lines are done with. */
static void influxdb_advance(void *arg, size_t k)
{
	struct influxdb *d = arg;

	d->out_off += out_bytes(d, k);
}

/* "partial write: ... dropped=N": N, or 0. */
static uint64_t partial_dropped(const char *msg)
{
	const char *p = strstr(msg, "dropped=");

	return p ? strtoull(p + 8, NULL, 10) : 0;
}

/* The batcher's rejected op: InfluxDB's partial writes stored some. */
static int influxdb_rejected(void *arg, const struct tally_http_result *res,
			     size_t n)
{
	struct influxdb *d = arg;
	uint64_t lost;

	if (!strstr(res->body, "partial write"))
		return -1;
	lost = partial_dropped(res->body);
	if (!lost || lost > n)
		lost = n;
	tally_log_limited(&d->partial_log, 60, d->inst, LOG_WARNING,
			  "partial write (HTTP %d): %s; %llu of %zu points "
			  "dropped by the server",
			  res->status, res->message, (unsigned long long)lost,
			  n);
	tally_count_drop(d->inst, "partial_write", lost);
	tally_count_event(d->inst, "points_written", n - lost);
	return 0;
}

static const struct tally_http_batch_ops influxdb_batch_ops = {
	.seal = influxdb_seal,
	.body = influxdb_body,
	.advance = influxdb_advance,
	.rejected = influxdb_rejected,
};

static int influxdb_write(struct tally_instance *inst, void *state,
			  struct tally_batch *b)
{
	struct influxdb *d = state;
	const struct tally_record *recs = tally_batch_records(b);
	size_t n = tally_batch_count(b), len0, added = 0;

	if (tally_http_batch_room(d->batch) < 0)
		return -1;
	len0 = d->pending.len;
	for (size_t i = 0; i < n; i++) {
		int k = influx_render_record(&d->r, &d->pending, &recs[i]);

		if (k < 0) {
			tally_count_drop(inst, "nomem", 1);
			continue;
		}
		added += (size_t)k;
	}
	if (tally_http_batch_added(d->batch, b, added) < 0) {
		d->pending.len = len0;
		influxdb_count(d);
		return -1;
	}
	influxdb_count(d);
	return 0;
}

static int influxdb_flush(struct tally_instance *inst, void *state)
{
	struct influxdb *d = state;

	tally_http_batch_flush(d->batch);
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
	struct tally_http_header h[2] = {
		{ "Content-Type", "text/plain; charset=utf-8" },
		{ "Authorization", NULL },
	};
	struct tally_http_batch_opts bo = {
		.method = "POST",
		.h = h,
		.nh = 1,
		.batch_size = (size_t)d->batch_size,
		.flush_interval = d->flush_interval,
		.unit = "points",
		.item = "point",
	};
	struct tally_http_url u;

	d->inst = inst;
	if (tally_http_url_parse("url", d->url, &u, NULL, 0) < 0)
		return -1;
	d->r.statics = tally_labels_pairs(statics);
	d->r.nstatics = tally_labels_count(statics);
	d->r.precision = (enum influx_precision)d->precision;
	d->r.span_measurement = d->span_measurement;
	if (influxdb_path(d) < 0 || influxdb_auth(d) < 0) {
		errno = ENOMEM;
		return -1;
	}
	bo.path = d->path;
	if (d->auth) {
		h[1].value = d->auth;
		bo.nh = 2;
	}
	d->batch = tally_http_batch_new(inst, tally_instance_base(inst), &u,
					&o, &bo, &influxdb_batch_ops, d);
	return d->batch ? 0 : -1;
}

static void influxdb_fini(struct tally_instance *inst, void *state)
{
	struct influxdb *d = state;

	/* first: a request in flight references the buffers */
	tally_http_batch_free(d->batch);
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
			   "an attempt (connect, send, the whole answer) "
			   "longer than this fails "
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
