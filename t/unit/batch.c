/* SPDX-License-Identifier: MIT */
/* t/unit/batch.c - batches, records and their arena */
#include <errno.h>
#include <math.h>
#include <string.h>

#include <tally/record.h>

#include "tap.h"

int main(void)
{
	struct tally_bucket bk[] = { { 0.1, 2 }, { 1, 5 } };
	struct tally_bucket bad[] = { { 1, 5 }, { 0.1, 6 } };
	struct tally_quantile qs[] = { { 0.5, 3 }, { 0.9, 7 } };
	struct tally_batch *b, *c;
	struct tally_labels *ls;
	const struct tally_record *r;
	struct tally_span sp = { 0 };
	char name[64];

	plan(NO_PLAN);

	b = tally_batch_new();
	ok(b != NULL, "new batch");
	cmp_ok(tally_batch_count(b), "==", 0, "starts empty");
	is(tally_batch_source(b), "", "no source before emission");

	ls = tally_labels_newv("device", "eth0", NULL);
	strcpy(name, "node_network_receive_bytes_total");
	ok(tally_batch_add_metric(b, TALLY_COUNTER, name, "help", ls, 42.5,
				  1000) == 0,
	   "add a counter");
	name[0] = 'X'; /* the batch copied the name */
	r = tally_batch_at(b, 0);
	is(r->metric.name, "node_network_receive_bytes_total",
	   "name copied into the arena");
	ok(r->metric.labels == ls, "labels are the interned set");
	cmp_ok(r->metric.value, "==", 42.5, "value");
	cmp_ok(r->ts_ns, "==", 1000, "timestamp kept");
	errno = 0;
	ok(tally_batch_add_metric(b, TALLY_HISTOGRAM, "h", NULL, NULL, 1, 0) <
			   0 &&
		   errno == EINVAL,
	   "add_metric refuses a histogram type");
	ok(tally_batch_add_metric(b, TALLY_GAUGE, "", NULL, NULL, 1, 0) < 0,
	   "empty name refused");

	ok(tally_batch_add_histogram(b, "lat_seconds", NULL, NULL, bk, 2, 7,
				     3.5, 0) == 0,
	   "add a histogram");
	r = tally_batch_at(b, 1);
	cmp_ok(r->metric.n, "==", 3, "+Inf bucket appended");
	ok(isinf(r->metric.buckets[2].le), "last bucket is +Inf");
	cmp_ok(r->metric.buckets[2].count, "==", 7, "+Inf bucket == count");
	ok(r->ts_ns > 0, "timestamp 0 means now");
	errno = 0;
	ok(tally_batch_add_histogram(b, "x", NULL, NULL, bad, 2, 9, 0, 0) < 0 &&
		   errno == EINVAL,
	   "unsorted buckets refused");
	ok(tally_batch_add_summary(b, "rpc_seconds", NULL, NULL, qs, 2, 10, 40,
				   0) == 0,
	   "add a summary");
	cmp_ok(tally_batch_at(b, 2)->metric.quantiles[1].value, "==", 7,
	       "quantile copied");

	sp.trace = "job1";
	sp.name = "solver";
	sp.span_id = 7;
	sp.phase = TALLY_SPAN_BEGIN;
	sp.src.host = "n01";
	sp.src.rank = 3;
	ok(tally_batch_add_span(b, &sp, 5) == 0, "add a span");
	sp.phase = 0;
	ok(tally_batch_add_span(b, &sp, 5) < 0, "span with a bad phase refused");
	cmp_ok(tally_batch_count(b), "==", 4, "four records");

	/* deep copy into another batch, then free the first */
	c = tally_batch_new();
	for (size_t i = 0; i < tally_batch_count(b); i++)
		ok(tally_batch_copy_record(c, tally_batch_at(b, i)) != NULL,
		   "copy record %zu", i);
	tally_batch_unref(b);
	is(tally_batch_at(c, 0)->metric.name,
	   "node_network_receive_bytes_total", "copied name survives");
	is(tally_labels_get(tally_batch_at(c, 0)->metric.labels, "device"),
	   "eth0", "copied labels survive");
	cmp_ok(tally_batch_at(c, 1)->metric.buckets[0].count, "==", 2,
	       "copied buckets survive");
	is(tally_batch_at(c, 3)->span.name, "solver", "copied span survives");
	cmp_ok(tally_batch_at(c, 3)->span.src.rank, "==", 3, "span rank");

	/* references */
	ok(tally_batch_ref(c) == c, "ref returns the batch");
	tally_batch_unref(c);
	cmp_ok(tally_batch_count(c), "==", 4, "still alive after one unref");
	tally_batch_unref(c);
	tally_labels_unref(ls);

	/* many records: the record array and arena grow */
	b = tally_batch_new();
	for (int i = 0; i < 10000; i++)
		tally_batch_add_metric(b, TALLY_GAUGE, "g", NULL, NULL, i, 1);
	cmp_ok(tally_batch_count(b), "==", 10000, "10000 records");
	cmp_ok(tally_batch_at(b, 9999)->metric.value, "==", 9999,
	       "last record intact");
	tally_batch_unref(b);

	/* a recycled batch comes back empty */
	b = tally_batch_new();
	cmp_ok(tally_batch_count(b), "==", 0, "recycled batch is empty");
	tally_batch_unref(b);

	return done_testing();
}
