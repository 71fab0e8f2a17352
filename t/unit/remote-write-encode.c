/* SPDX-License-Identifier: MIT */
/*
 * t/unit/remote-write-encode.c - the remote_write output's encoder: records
 * in, the request body out, read back with snappy and protobuf-c as a
 * receiver would: series, sorted labels, samples in order, ms timestamps
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <snappy-c.h>

#include <tally/labels.h>
#include <tally/record.h>

#include "encode.h"
#include "remote.pb-c.h"
#include "tap.h"

/* The body decoded, or NULL; free with prometheus__write_request__free_unpacked
 */
static Prometheus__WriteRequest *decode(struct evbuffer *body)
{
	size_t len = evbuffer_get_length(body), rawlen;
	const char *p = (const char *)evbuffer_pullup(body, -1);
	Prometheus__WriteRequest *wr = NULL;
	char *raw;

	if (snappy_uncompressed_length(p, len, &rawlen) != SNAPPY_OK)
		return NULL;
	raw = malloc(rawlen + 1);
	if (raw && snappy_uncompress(p, len, raw, &rawlen) == SNAPPY_OK)
		wr = prometheus__write_request__unpack(NULL, rawlen,
						       (uint8_t *)raw);
	free(raw);
	return wr;
}

/* "{k=v,k=v}" of a series, for comparisons */
static const char *labels_text(const Prometheus__TimeSeries *ts)
{
	static char buf[1024];
	size_t o = 0;

	o += (size_t)snprintf(buf + o, sizeof(buf) - o, "{");
	for (size_t i = 0; i < ts->n_labels; i++)
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s=%s",
				      i ? "," : "", ts->labels[i]->name,
				      ts->labels[i]->value);
	snprintf(buf + o, sizeof(buf) - o, "}");
	return buf;
}

/* "A=1,2 B=10" of a request: each series' name and its values */
static const char *values_text(const Prometheus__WriteRequest *wr)
{
	static char buf[1024];
	size_t o = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < wr->n_timeseries; i++) {
		const Prometheus__TimeSeries *ts = wr->timeseries[i];
		const char *name = "?";

		for (size_t j = 0; j < ts->n_labels; j++)
			if (!strcmp(ts->labels[j]->name, "__name__"))
				name = ts->labels[j]->value;
		o += (size_t)snprintf(buf + o, sizeof(buf) - o,
				      "%s%s=", i ? " " : "", name);
		for (size_t j = 0; j < ts->n_samples; j++)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%g",
					      j ? "," : "",
					      ts->samples[j]->value);
	}
	return buf;
}

/* Pack @skip, @k of @r and show what a receiver reads. */
static const char *pack_text(const struct rw_req *r, struct evbuffer *body,
			     size_t skip, size_t k)
{
	static char buf[1024];
	Prometheus__WriteRequest *wr;

	evbuffer_drain(body, evbuffer_get_length(body));
	if (rw_req_pack(r, skip, k, body, NULL) < 0)
		return "pack failed";
	wr = decode(body);
	if (!wr)
		return "decode failed";
	snprintf(buf, sizeof(buf), "%s", values_text(wr));
	prometheus__write_request__free_unpacked(wr, NULL);
	return buf;
}

/*
 * A request the server finds too large goes in parts (the core batcher
 * asks for ranges of samples); a batch the core cannot hold is taken back.
 */
static void parts_and_rollback(struct rw_req *r, struct evbuffer *body)
{
	struct tally_batch *b = tally_batch_new();
	const struct tally_record *recs;
	struct rw_mark m;
	int rc;

	tally_batch_add_metric(b, TALLY_GAUGE, "A", NULL, NULL, 1, 0);
	tally_batch_add_metric(b, TALLY_GAUGE, "B", NULL, NULL, 10, 0);
	tally_batch_add_metric(b, TALLY_GAUGE, "A", NULL, NULL, 2, 1000000);
	tally_batch_add_metric(b, TALLY_GAUGE, "B", NULL, NULL, 20, 1000000);
	tally_batch_add_metric(b, TALLY_GAUGE, "A", NULL, NULL, 3, 2000000);
	tally_batch_add_metric(b, TALLY_GAUGE, "C", NULL, NULL, 100, 2000000);
	recs = tally_batch_records(b);
	for (size_t i = 0; i < 3; i++)
		rw_req_add(r, &recs[i]);
	is(pack_text(r, body, 0, 3), "A=1,2 B=10", "whole request");
	rw_req_mark(r, &m);
	for (size_t i = 3; i < tally_batch_count(b); i++)
		rw_req_add(r, &recs[i]);
	cmp_ok(rw_req_samples(r), "==", 6, "6 samples");
	is(pack_text(r, body, 0, 6), "A=1,2,3 B=10,20 C=100",
	   "series as first seen, samples in order");
	is(pack_text(r, body, 0, 2), "A=1,2", "first part: 2 samples");
	is(pack_text(r, body, 2, 2), "A=3 B=10",
	   "second part: the rest of A, then B");
	is(pack_text(r, body, 4, 2), "B=20 C=100", "third part");
	is(pack_text(r, body, 5, 1), "C=100", "last sample alone");
	evbuffer_drain(body, evbuffer_get_length(body));
	errno = 0;
	rc = rw_req_pack(r, 5, 2, body, NULL);
	ok(rc < 0 && errno == EINVAL && !evbuffer_get_length(body),
	   "a range past the end: EINVAL, nothing appended");

	rw_req_rollback(r, &m);
	cmp_ok(rw_req_samples(r), "==", 3, "rollback: 3 samples again");
	cmp_ok(rw_req_series(r), "==", 2, "rollback: 2 series again");
	is(pack_text(r, body, 0, 3), "A=1,2 B=10", "rollback: as before");
	rw_req_add(r, &recs[5]);
	rw_req_add(r, &recs[4]);
	is(pack_text(r, body, 0, 5), "A=1,2,3 B=10 C=100",
	   "after a rollback: a known series found again, a new one added");
	rw_req_clear(r);
	tally_batch_unref(b);
}

int main(void)
{
	struct tally_labels *statics =
		tally_labels_newv("instance", "node7", "site", "x", NULL);
	struct tally_labels *a =
		tally_labels_newv("cpu", "0", "site", "own", "Zeta", "", NULL);
	struct tally_labels *clash =
		tally_labels_newv("a.b", "1", "a_b", "2", NULL);
	struct tally_labels *bad = tally_labels_newv("v", "ok\xff", NULL);
	struct tally_labels *le = tally_labels_newv("le", "5", NULL);
	struct tally_bucket bk[] = { { 0.5, 3 }, { INFINITY, 4 } };
	struct tally_batch *b = tally_batch_new();
	struct rw_req *r = rw_req_new(statics);
	struct evbuffer *body = evbuffer_new();
	Prometheus__WriteRequest *wr;
	const struct tally_record *recs;
	size_t raw = 0;

	plan(NO_PLAN);
	ok(statics && a && clash && bad && le && b && r && body, "setup");
	tally_batch_add_metric(b, TALLY_COUNTER, "cpu_seconds_total", NULL, a,
			       1.5, 1700000000123456789LL);
	tally_batch_add_metric(b, TALLY_GAUGE, "node.load", NULL, NULL, 0.25,
			       1700000000999000000LL);
	tally_batch_add_metric(b, TALLY_COUNTER, "cpu_seconds_total", NULL, a,
			       2.5, 1700000001123456789LL);
	tally_batch_add_histogram(b, "lat_seconds", NULL, NULL, bk, 2, 4, 1.75,
				  1700000002000000000LL);
	tally_batch_add_metric(b, TALLY_GAUGE, "clash", NULL, clash, 1,
			       1700000002000000000LL);
	tally_batch_add_metric(b, TALLY_GAUGE, "utf", NULL, bad, 1,
			       1700000002000000000LL);
	tally_batch_add_histogram(b, "h_le", NULL, le, bk, 2, 4, 1.75,
				  1700000002000000000LL);
	recs = tally_batch_records(b);
	cmp_ok(rw_req_add(r, &recs[0]), "==", 1, "counter: one sample");
	cmp_ok(rw_req_add(r, &recs[1]), "==", 1, "gauge: one sample");
	cmp_ok(rw_req_add(r, &recs[2]), "==", 1, "counter again");
	cmp_ok(rw_req_add(r, &recs[3]), "==", 4,
	       "histogram: 2 buckets, sum, count");
	cmp_ok(rw_req_add(r, &recs[4]), "==", 0, "clashing labels: dropped");
	cmp_ok(rw_req_add(r, &recs[5]), "==", 1, "bad UTF-8: repaired");
	cmp_ok(rw_req_add(r, &recs[6]), "==", 0,
	       "le label on a histogram: dropped");
	cmp_ok(rw_req_drops(r)->label_collision, "==", 2, "both counted");
	cmp_ok(rw_req_samples(r), "==", 8, "8 samples");
	cmp_ok(rw_req_series(r), "==", 7,
	       "7 series: the counter's two samples in one");

	ok(rw_req_finish(r, body, &raw) == 0 && raw > 0, "finish");
	cmp_ok(rw_req_samples(r), "==", 0, "request empty again");
	wr = decode(body);
	ok(wr != NULL, "snappy block + WriteRequest decode");
	if (!wr)
		return done_testing();
	cmp_ok(wr->n_timeseries, "==", 7, "7 time series");
	if (wr->n_timeseries != 7)
		return done_testing();
	is(labels_text(wr->timeseries[0]),
	   "{__name__=cpu_seconds_total,cpu=0,instance=node7,site=own}",
	   "record labels win over static ones, empty value left out, sorted");
	cmp_ok(wr->timeseries[0]->n_samples, "==", 2, "2 samples");
	cmp_ok(wr->timeseries[0]->samples[0]->timestamp, "==", 1700000000123LL,
	       "ms timestamp");
	ok(wr->timeseries[0]->samples[0]->value == 1.5 &&
		   wr->timeseries[0]->samples[1]->value == 2.5,
	   "values in order");
	is(labels_text(wr->timeseries[1]),
	   "{__name__=node_load,instance=node7,site=x}", "name sanitized");
	is(labels_text(wr->timeseries[2]),
	   "{__name__=lat_seconds_bucket,instance=node7,le=0.5,site=x}",
	   "bucket");
	is(labels_text(wr->timeseries[3]),
	   "{__name__=lat_seconds_bucket,instance=node7,le=+Inf,site=x}",
	   "+Inf bucket");
	ok(wr->timeseries[3]->samples[0]->value == 4, "+Inf bucket count");
	is(labels_text(wr->timeseries[4]),
	   "{__name__=lat_seconds_sum,instance=node7,site=x}", "sum");
	is(labels_text(wr->timeseries[5]),
	   "{__name__=lat_seconds_count,instance=node7,site=x}", "count");
	is(labels_text(wr->timeseries[6]),
	   "{__name__=utf,instance=node7,site=x,v=ok\xef\xbf\xbd}",
	   "invalid UTF-8 replaced by U+FFFD");
	prometheus__write_request__free_unpacked(wr, NULL);

	evbuffer_drain(body, evbuffer_get_length(body));
	tally_batch_unref(b);
	b = tally_batch_new();
	tally_batch_add_metric(b, TALLY_GAUGE, "Upper", NULL,
			       tally_labels_newv("A", "1", "b", "2", NULL), 1,
			       0);
	tally_batch_add_metric(b, TALLY_COUNTER, "reqs", NULL, NULL, 7, 0);
	recs = tally_batch_records(b);
	rw_req_add(r, &recs[0]);
	rw_req_add(r, &recs[1]);
	ok(rw_req_finish(r, body, NULL) == 0, "second request");
	wr = decode(body);
	ok(wr && wr->n_timeseries == 2, "2 series");
	if (wr) {
		is(labels_text(wr->timeseries[0]),
		   "{A=1,__name__=Upper,b=2,instance=node7,site=x}",
		   "an upper-case label name sorts before __name__");
		is(labels_text(wr->timeseries[1]),
		   "{__name__=reqs_total,instance=node7,site=x}",
		   "a counter ends in _total, as the prometheus output shows "
		   "it");
		prometheus__write_request__free_unpacked(wr, NULL);
	}
	parts_and_rollback(r, body);
	rw_req_free(r);
	evbuffer_free(body);
	tally_batch_unref(b);
	return done_testing();
}
