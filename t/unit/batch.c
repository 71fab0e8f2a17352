/* SPDX-License-Identifier: MIT */
/*
 * t/unit/batch.c - batches, records and their arena; sample forms, typed
 * span attributes, and borrowing records without copying them
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include <tally/record.h>

#include "../../core/core-internal.h"
#include "tap.h"

#define CUMULATIVE TALLY_FORM_BIT(TALLY_FORM_CUMULATIVE)

/* Deltas, observations and set members: what statsd hands aggregate. */
static void test_forms(void)
{
	struct tally_labels *ls = tally_labels_newv("path", "/a", NULL);
	struct tally_batch *b = tally_batch_new(), *c;
	const struct tally_metric *m;

	ok(tally_batch_forms(b) == 0, "an empty batch has no forms");
	ok(!tally_batch_records(b) && !tally_batch_records(NULL),
	   "an empty batch has no record array");
	ok(tally_batch_add_delta(b, TALLY_COUNTER, "requests_total", NULL, ls,
				 3, 0.1, 10) == 0,
	   "add a counter increment sampled at 0.1");
	m = &tally_batch_at(b, 0)->metric;
	ok(m->form == TALLY_FORM_DELTA, "form is delta");
	cmp_ok(m->value, "==", 3, "the increment as sent");
	cmp_ok(tally_metric_weight(m), "==", 10, "stands for 10 events");
	ok(tally_batch_forms(b) == TALLY_FORMS_DELTA, "batch forms: delta");

	ok(tally_batch_add_delta(b, TALLY_GAUGE, "queue_depth", NULL, NULL, -2,
				 1, 10) == 0,
	   "a gauge adjustment may be negative");
	ok(tally_batch_add_observation(b, TALLY_SUMMARY, "req_seconds", NULL,
				       ls, 0.25, 0.5, 10) == 0,
	   "add a timer observation");
	m = &tally_batch_at(b, 2)->metric;
	ok(m->form == TALLY_FORM_OBSERVATION && m->type == TALLY_SUMMARY,
	   "observation of a summary");
	cmp_ok(m->value, "==", 0.25, "observed value");
	cmp_ok(tally_metric_weight(m), "==", 2, "sampled at 0.5: weight 2");
	ok(tally_batch_add_set_member(b, "users", NULL, NULL, "alice", 10) == 0,
	   "add a set member");
	m = &tally_batch_at(b, 3)->metric;
	ok(m->form == TALLY_FORM_SET_MEMBER && m->type == TALLY_GAUGE,
	   "set member is a gauge");
	is(m->member, "alice", "member copied");
	ok(tally_batch_forms(b) == TALLY_FORMS_STATSD,
	   "forms: delta, observation, set member");
	ok(tally_batch_records(b) == tally_batch_at(b, 0) &&
		   &tally_batch_records(b)[3] == tally_batch_at(b, 3),
	   "tally_batch_records: the records in order, as tally_batch_at");

	errno = 0;
	ok(tally_batch_add_delta(b, TALLY_HISTOGRAM, "x", NULL, NULL, 1, 1, 0) <
			   0 &&
		   errno == EINVAL,
	   "no histogram deltas");
	errno = 0;
	ok(tally_batch_add_delta(b, TALLY_COUNTER, "x", NULL, NULL, NAN, 1, 0) <
			   0 &&
		   errno == EINVAL,
	   "NaN delta refused");
	errno = 0;
	ok(tally_batch_add_delta(b, TALLY_COUNTER, "x", NULL, NULL, 1, 0, 0) <
			   0 &&
		   errno == EINVAL,
	   "sample rate 0 refused");
	errno = 0;
	ok(tally_batch_add_observation(b, TALLY_SUMMARY, "x", NULL, NULL, 1,
				       1.5, 0) < 0 &&
		   errno == EINVAL,
	   "sample rate above 1 refused");
	errno = 0;
	ok(tally_batch_add_observation(b, TALLY_GAUGE, "x", NULL, NULL, 1, 1,
				       0) < 0 &&
		   errno == EINVAL,
	   "observations are histograms or summaries");
	errno = 0;
	ok(tally_batch_add_set_member(b, "x", NULL, NULL, NULL, 0) < 0 &&
		   errno == EINVAL,
	   "NULL member refused");
	cmp_ok(tally_batch_count(b), "==", 4, "refused records not added");

	/* a deep copy keeps the form, rate and member */
	c = tally_batch_new();
	for (size_t i = 0; i < tally_batch_count(b); i++)
		tally_batch_copy_record(c, tally_batch_at(b, i));
	tally_batch_unref(b);
	ok(tally_batch_forms(c) == TALLY_FORMS_STATSD, "copies keep forms");
	cmp_ok(tally_batch_at(c, 0)->metric.sample_rate, "==", 0.1,
	       "copy keeps the rate");
	is(tally_batch_at(c, 3)->metric.member, "alice",
	   "copy keeps the member");

	/* a record filled in place: scanned until sealed */
	b = tally_batch_new();
	tally_batch_add_metric(b, TALLY_GAUGE, "g", NULL, NULL, 1, 1);
	ok(tally_batch_forms(b) == CUMULATIVE, "cumulative gauge");
	{
		struct tally_record *r = tally_batch_append(b);

		r->kind = TALLY_REC_METRIC;
		r->metric.name = "d";
		r->metric.type = TALLY_COUNTER;
		r->metric.form = TALLY_FORM_DELTA;
		r->metric.labels = tally_labels_ref(tally_labels_empty());
	}
	ok(tally_batch_forms(b) == (CUMULATIVE | TALLY_FORMS_DELTA),
	   "a record filled in place is found by the scan");
	tally_batch_seal(b);
	ok(tally_batch_forms(b) == (CUMULATIVE | TALLY_FORMS_DELTA),
	   "and kept once sealed");
	tally_batch_unref(b);
	tally_batch_unref(c);
	tally_labels_unref(ls);
}

/* Typed span attributes: copied, found by key, validated, replaced. */
static void test_span_values(void)
{
	struct tally_attr v[] = {
		TALLY_ATTR_INT("bytes", 4096),
		TALLY_ATTR_DOUBLE("ratio", 0.5),
		TALLY_ATTR_STRING("file", "in.dat"),
		TALLY_ATTR_BOOL("cached", true),
	};
	struct tally_span sp = { .trace = "t",
				 .name = "read",
				 .span_id = 1,
				 .phase = TALLY_SPAN_END,
				 .src.host = "n1",
				 .values = v,
				 .nvalues = 4 };
	struct tally_batch *b = tally_batch_new(), *c;
	const struct tally_span *got;
	const struct tally_attr *a;
	char key[16] = "bytes";

	v[0].key = key;
	ok(tally_batch_add_span(b, &sp, 1) == 0, "span with 4 typed values");
	key[0] = 'X'; /* the batch copied the key */
	got = &tally_batch_at(b, 0)->span;
	cmp_ok(got->nvalues, "==", 4, "4 values");
	a = tally_span_value(got, "bytes");
	ok(a && a->type == TALLY_ATTR_T_INT && a->i == 4096, "int64 value");
	a = tally_span_value(got, "ratio");
	ok(a && a->type == TALLY_ATTR_T_DOUBLE && a->d == 0.5, "double value");
	a = tally_span_value(got, "file");
	ok(a && a->type == TALLY_ATTR_T_STRING && !strcmp(a->s, "in.dat") &&
		   a->s != v[2].s,
	   "string value, copied");
	a = tally_span_value(got, "cached");
	ok(a && a->type == TALLY_ATTR_T_BOOL && a->b, "bool value");
	ok(tally_span_value(got, "nope") == NULL, "missing key: NULL");

	v[0].key = "ratio";
	errno = 0;
	ok(tally_batch_add_span(b, &sp, 1) < 0 && errno == EINVAL,
	   "duplicate key refused");
	v[0].key = "";
	ok(tally_batch_add_span(b, &sp, 1) < 0, "empty key refused");
	v[0].key = "bytes";
	v[2].s = NULL;
	ok(tally_batch_add_span(b, &sp, 1) < 0, "NULL string refused");
	v[2].s = "in.dat";
	v[3].type = 99;
	ok(tally_batch_add_span(b, &sp, 1) < 0, "unknown type refused");
	v[3].type = TALLY_ATTR_T_BOOL;
	sp.nvalues = TALLY_SPAN_MAX_VALUES + 1;
	ok(tally_batch_add_span(b, &sp, 1) < 0, "too many values refused");
	sp.nvalues = 4;
	cmp_ok(tally_batch_count(b), "==", 1, "nothing added by refusals");

	/* a filter annotates a span it passes on, the source stays intact */
	c = tally_batch_new();
	{
		struct tally_record *r = tally_batch_append_from(c, b, 0);
		struct tally_attr self = TALLY_ATTR_DOUBLE("self_seconds", 1.5);
		struct tally_attr bytes = TALLY_ATTR_INT("bytes", 1);

		ok(tally_batch_span_set_value(c, r, &self) == 0,
		   "add self_seconds to a borrowed span");
		ok(tally_batch_span_set_value(c, r, &bytes) == 0,
		   "replace bytes");
		cmp_ok(r->span.nvalues, "==", 5, "5 values now");
		ok(tally_span_value(&r->span, "self_seconds")->d == 1.5,
		   "self_seconds there");
		ok(tally_span_value(&r->span, "bytes")->i == 1,
		   "bytes replaced");
		cmp_ok(got->nvalues, "==", 4, "the source span still has 4");
		ok(tally_span_value(got, "bytes")->i == 4096,
		   "and its own bytes");
	}
	tally_batch_unref(b);
	a = tally_span_value(&tally_batch_at(c, 0)->span, "file");
	is(a ? a->s : NULL, "in.dat",
	   "borrowed string valid after the source's last unref by its owner");
	tally_batch_unref(c);
}

/*
 * Borrowing: a filter passes 9999 of 10000 records on. Nothing may be
 * deep-copied: the new batch's arena stays empty and its records point at
 * the very strings of the source.
 */
static void test_borrow(void)
{
	enum { N = 10000 };
	static bool keep[N];
	struct tally_labels *ls = tally_labels_newv("k", "v", NULL);
	struct tally_batch *src = tally_batch_new(), *sel, *sel2;
	struct tally_span sp = { .trace = "job",
				 .name = "solve",
				 .span_id = 1,
				 .phase = TALLY_SPAN_BEGIN,
				 .src.host = "n1" };
	size_t src_used;
	bool same = true;

	for (int i = 0; i < N - 1; i++)
		tally_batch_add_metric(src, TALLY_GAUGE, "node_value", "help",
				       ls, i, 1);
	tally_batch_add_span(src, &sp, 2);
	src_used = tally_batch_arena_used(src);
	ok(src_used > 0, "the source's arena holds its strings");

	for (int i = 0; i < N; i++)
		keep[i] = i != 17;
	sel = tally_batch_select(src, keep);
	ok(sel != NULL, "select 9999 of 10000");
	cmp_ok(tally_batch_count(sel), "==", N - 1, "9999 records");
	cmp_ok(tally_batch_arena_used(sel), "==", 0,
	       "nothing copied into the new batch's arena");
	cmp_ok(tally_batch_arena_used(src), "==", src_used,
	       "nor into the source's");
	for (size_t i = 0, j = 0; i < N; i++) {
		const struct tally_record *a = tally_batch_at(src, i);
		const struct tally_record *r;

		if (!keep[i])
			continue;
		r = tally_batch_at(sel, j++);
		if (r->kind != a->kind ||
		    (r->kind == TALLY_REC_METRIC &&
		     (r->metric.name != a->metric.name ||
		      r->metric.help != a->metric.help ||
		      r->metric.labels != a->metric.labels ||
		      r->metric.value != a->metric.value)) ||
		    (r->kind == TALLY_REC_SPAN &&
		     r->span.trace != a->span.trace))
			same = false;
	}
	ok(same, "each kept record points at the source's own strings");
	cmp_ok(tally_batch_at(sel, 17)->metric.value, "==", 18,
	       "record 17 left out");

	/* new records appended after the borrowed ones */
	ok(tally_batch_add_metric(sel, TALLY_COUNTER, "added_total", NULL, NULL,
				  1, 1) == 0,
	   "append a record of the filter's own");
	cmp_ok(tally_batch_count(sel), "==", N, "10000 records again");
	ok(tally_batch_forms(sel) == CUMULATIVE, "forms carried over");

	/* the source goes; borrowed records live on with the new batch */
	tally_batch_unref(src);
	is(tally_batch_at(sel, 0)->metric.name, "node_value",
	   "borrowed name valid after the source's owner let go");
	is(tally_batch_at(sel, N - 2)->span.trace, "job",
	   "borrowed span valid too");

	/* a batch borrowing from a borrowing batch */
	sel2 = tally_batch_select(sel, NULL);
	cmp_ok(tally_batch_count(sel2), "==", N, "select all of a selection");
	tally_batch_unref(sel);
	is(tally_batch_at(sel2, 5)->metric.name, "node_value",
	   "a chain of borrows keeps the first arena");
	cmp_ok(tally_batch_arena_used(sel2), "==", 0, "still nothing copied");

	errno = 0;
	ok(tally_batch_append_from(sel2, sel2, 0) == NULL && errno == EINVAL,
	   "a batch cannot borrow from itself");
	{
		struct tally_batch *x = tally_batch_new();

		errno = 0;
		ok(tally_batch_append_from(x, sel2, N) == NULL &&
			   errno == EINVAL,
		   "index out of range refused");
		tally_batch_unref(x);
	}
	tally_batch_unref(sel2);
	tally_labels_unref(ls);
}

/* Every output names the span flags the same way. */
static void test_flag_names(void)
{
	static const char *const want[] = { "abandoned", "orphan_end",
					    "evicted", "fragment", "resumed",
					    "last", "lost_end" };

	for (unsigned i = 0; i < 7; i++)
		is(tally_span_flag_name(1u << i), want[i], "flag 0x%x: %s",
		   1u << i, want[i]);
	ok(tally_span_flag_name(0x80) == NULL, "an unknown bit: NULL");
	ok(tally_span_flag_name(0x3) == NULL, "two bits: NULL");
}

/* A filter's keep flags: grown by doubling, kept across batches. */
static void test_keep(void)
{
	struct tally_keep k = { 0 };
	bool *f;

	f = tally_keep_reserve(&k, 0);
	ok(f != NULL && k.cap == 256, "an empty reserve allocates 256 flags");
	ok(tally_keep_reserve(&k, 256) == f, "256 fit: the same flags");
	f = tally_keep_reserve(&k, 257);
	ok(f != NULL && k.cap == 512, "257: doubled to 512");
	f[511] = true;
	ok(tally_keep_reserve(&k, 3) == f && k.cap == 512,
	   "a smaller batch keeps the room");
	ok(tally_keep_reserve(&k, 5000) != NULL && k.cap == 8192,
	   "5000: doubled to 8192");
	errno = 0;
	f = k.flags;
	ok(tally_keep_reserve(&k, SIZE_MAX) == NULL && errno == ENOMEM &&
		   k.flags == f && k.cap == 8192,
	   "SIZE_MAX: ENOMEM, the flags unchanged");
	tally_keep_free(&k);
	ok(k.flags == NULL && k.cap == 0, "freed: empty again");
}

/* Origins (tally_batch_set_origin()) follow borrowed records. */
static void test_origin(void)
{
	struct tally_batch *src = tally_batch_new(), *b, *sel;
	bool keep[3] = { false, true, true };
	const char *path;

	for (int i = 0; i < 3; i++)
		tally_batch_add_metric(src, TALLY_GAUGE, "g", NULL, NULL, i, 0);
	path = tally_batch_strdup(src, "/d/a.prom");
	ok(tally_batch_origin(src, 1) == NULL, "no origin by default");
	ok(tally_batch_set_origin(src, 1, path) == 0, "set one");
	errno = 0;
	ok(tally_batch_set_origin(src, 3, path) < 0 && errno == EINVAL,
	   "out of range: EINVAL");
	ok(tally_batch_origin(src, 0) == NULL &&
		   tally_batch_origin(src, 2) == NULL &&
		   tally_batch_origin(src, 7) == NULL,
	   "the others have none");
	b = tally_batch_new();
	tally_batch_add_metric(b, TALLY_GAUGE, "own", NULL, NULL, 0, 0);
	tally_batch_append_from(b, src, 1);
	tally_batch_append_from(b, src, 2);
	ok(tally_batch_origin(b, 0) == NULL &&
		   tally_batch_origin(b, 1) == path &&
		   tally_batch_origin(b, 2) == NULL,
	   "tally_batch_append_from() keeps it");
	sel = tally_batch_select(src, keep);
	ok(tally_batch_origin(sel, 0) == path &&
		   tally_batch_origin(sel, 1) == NULL,
	   "tally_batch_select() keeps it");
	tally_batch_unref(sel);
	tally_batch_unref(b);
	tally_batch_unref(src);
	/* a recycled batch starts without */
	b = tally_batch_new();
	tally_batch_add_metric(b, TALLY_GAUGE, "g", NULL, NULL, 0, 0);
	ok(tally_batch_origin(b, 0) == NULL, "a recycled batch has none");
	tally_batch_unref(b);
}

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
	test_flag_names();
	test_keep();

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

	test_forms();
	test_span_values();
	test_borrow();
	test_origin();
	return done_testing();
}
