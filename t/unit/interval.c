/* SPDX-License-Identifier: MIT */
/*
 * t/unit/interval.c - interval records (what aggregate emits) and the
 * core's quantile definition they are computed with
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include <tally/quantile.h>
#include <tally/record.h>

#include "tap.h"

#define S 1000000000LL /* ns per second */

/* Nearest rank: the smallest value with at least q * n values <= it. */
static void test_quantiles(void)
{
	double v[] = { 4, 1, 3, 2 };
	double ten[] = { 10, 9, 8, 7, 6, 5, 4, 3, 2, 1 };
	double qs[] = { 0.5, 0.9, 0.95, 0.99, 0, 1 };
	struct tally_quantile out[6];

	ok(isnan(tally_quantile_sorted(NULL, 0, 0.5)), "no values: NaN");
	tally_quantiles(v, 4, qs, 1, out);
	cmp_ok(v[0], "==", 1, "sorted in place");
	cmp_ok(v[3], "==", 4, "sorted in place, last");
	cmp_ok(out[0].value, "==", 2, "median of 1..4 is 2 (lower middle)");
	cmp_ok(tally_quantile_sorted(v, 4, 0.75), "==", 3, "p75 of 1..4");
	cmp_ok(tally_quantile_sorted(v, 4, 0.76), "==", 4, "p76 of 1..4");
	tally_quantiles(ten, 10, qs, 6, out);
	cmp_ok(out[0].value, "==", 5, "p50 of 1..10");
	cmp_ok(out[1].value, "==", 9, "p90 of 1..10 (0.9 * 10 is not 10)");
	cmp_ok(out[2].value, "==", 10, "p95 of 1..10");
	cmp_ok(out[3].value, "==", 10, "p99 of 1..10");
	cmp_ok(out[4].value, "==", 1, "p0 is the minimum");
	cmp_ok(out[5].value, "==", 10, "p100 is the maximum");
	cmp_ok(out[1].q, "==", 0.9, "q kept");
	cmp_ok(tally_quantile_sorted(ten, 1, 0.9), "==", 1,
	       "one value: every quantile is it");
}

static void test_counter(void)
{
	struct tally_labels *ls = tally_labels_newv("host", "n1", NULL);
	struct tally_interval iv = { .start_ns = 10 * S, .count = 4 };
	struct tally_batch *b = tally_batch_new(), *c;
	const struct tally_metric *m;
	struct tally_record *r;
	char name[32];

	strcpy(name, "requests.count");
	r = tally_batch_add_interval(b, TALLY_COUNTER, name, NULL, ls, 25, &iv,
				     20 * S);
	ok(r != NULL, "add a counter interval record");
	name[0] = 'X';
	m = &tally_batch_at(b, 0)->metric;
	is(m->name, "requests.count", "dotted name copied as received");
	ok(m->form == TALLY_FORM_INTERVAL && m->type == TALLY_COUNTER,
	   "form interval, type counter");
	ok(tally_batch_forms(b) == TALLY_FORMS_INTERVAL, "batch forms");
	ok(m->interval && m->interval != &iv, "figures copied");
	cmp_ok(m->interval->seconds, "==", 10, "seconds from start to ts");
	cmp_ok(tally_batch_at(b, 0)->ts_ns, "==", 20 * S, "ts is the end");
	cmp_ok(m->value, "==", 25, "total");
	cmp_ok(tally_interval_rate(m), "==", 2.5, "rate = total / seconds");
	ok(m->labels == ls, "labels referenced");

	/* a deep copy outlives the original */
	c = tally_batch_new();
	ok(tally_batch_copy_record(c, tally_batch_at(b, 0)) != NULL, "copy");
	tally_batch_unref(b);
	m = &tally_batch_at(c, 0)->metric;
	cmp_ok(m->interval->seconds, "==", 10, "copy keeps the figures");
	cmp_ok(tally_interval_rate(m), "==", 2.5, "and the rate");
	ok(tally_batch_forms(c) == TALLY_FORMS_INTERVAL, "copy keeps form");
	tally_batch_unref(c);
	tally_labels_unref(ls);
}

static void test_summary_histogram(void)
{
	struct tally_quantile qs[] = { { 0.5, 0.2 }, { 0.9, 0.4 } };
	struct tally_bucket bk[] = { { 0.1, 1 }, { 0.5, 3 } };
	struct tally_interval iv = {
		.start_ns = 0 * S,
		.count = 4,
		.sum = 1.0,
		.min = 0.05,
		.max = 0.6,
		.median = 0.2,
		.nquantiles = 2,
		.quantiles = qs,
	};
	struct tally_batch *b = tally_batch_new();
	const struct tally_metric *m;

	ok(tally_batch_add_interval(b, TALLY_SUMMARY, "db.query", NULL, NULL, 0,
				    &iv, 2 * S) != NULL,
	   "add a timer's interval");
	qs[0].value = 99; /* the batch copied them */
	m = &tally_batch_at(b, 0)->metric;
	cmp_ok(tally_interval_mean(m), "==", 0.25, "mean = sum / count");
	cmp_ok(tally_interval_rate(m), "==", 2, "count per second");
	cmp_ok(tally_interval_quantile(m, 0.9), "==", 0.4, "p90 found");
	cmp_ok(tally_interval_quantile(m, 0.5), "==", 0.2, "p50 copied");
	errno = 0;
	ok(isnan(tally_interval_quantile(m, 0.99)) && errno == ENOENT,
	   "p99 not computed: NaN, ENOENT");
	cmp_ok(m->interval->min, "==", 0.05, "min");
	cmp_ok(m->interval->max, "==", 0.6, "max");

	iv.nquantiles = 0;
	iv.quantiles = NULL;
	iv.nbuckets = 2;
	iv.buckets = bk;
	ok(tally_batch_add_interval(b, TALLY_HISTOGRAM, "span", NULL, NULL, 0,
				    &iv, 2 * S) != NULL,
	   "add a histogram's interval");
	m = &tally_batch_at(b, 1)->metric;
	cmp_ok(m->interval->nbuckets, "==", 3, "+Inf bucket added");
	ok(isinf(m->interval->buckets[2].le), "last le is +Inf");
	cmp_ok(m->interval->buckets[2].count, "==", 4, "+Inf holds count");
	cmp_ok(m->interval->buckets[1].count, "==", 3, "buckets copied");
	cmp_ok(tally_interval_quantile(m, 0.5), "==", 0.2,
	       "median without a quantile list");
	tally_batch_unref(b);
}

static void test_refused(void)
{
	struct tally_quantile unsorted[] = { { 0.9, 1 }, { 0.5, 1 } };
	struct tally_quantile out_of_range[] = { { 1.5, 1 } };
	struct tally_bucket bad[] = { { 1, 5 }, { 0.5, 6 } };
	struct tally_interval iv = { .start_ns = 5 * S };
	struct tally_interval v;
	struct tally_batch *b = tally_batch_new();

#define REFUSED(what, type, ivp, ts)                                           \
	do {                                                                   \
		errno = 0;                                                     \
		ok(!tally_batch_add_interval(b, type, "x", NULL, NULL, 0, ivp, \
					     ts) &&                            \
			   errno == EINVAL,                                    \
		   what);                                                      \
	} while (0)
	REFUSED("no figures", TALLY_COUNTER, NULL, 6 * S);
	REFUSED("info is no interval type", TALLY_INFO, &iv, 6 * S);
	REFUSED("end not after start", TALLY_COUNTER, &iv, 5 * S);
	v = iv;
	v.count = -1;
	REFUSED("negative count", TALLY_COUNTER, &v, 6 * S);
	v = iv;
	v.count = NAN;
	REFUSED("NaN count", TALLY_COUNTER, &v, 6 * S);
	v = iv;
	v.nquantiles = 2;
	v.quantiles = unsorted;
	REFUSED("unsorted quantiles", TALLY_SUMMARY, &v, 6 * S);
	v.nquantiles = 1;
	v.quantiles = out_of_range;
	REFUSED("quantile above 1", TALLY_SUMMARY, &v, 6 * S);
	v = iv;
	v.nbuckets = 2;
	v.buckets = bad;
	REFUSED("unsorted buckets", TALLY_HISTOGRAM, &v, 6 * S);
#undef REFUSED
	errno = 0;
	ok(!tally_batch_add_interval(b, TALLY_COUNTER, "", NULL, NULL, 0, &iv,
				     6 * S) &&
		   errno == EINVAL,
	   "empty name refused");
	cmp_ok(tally_batch_count(b), "==", 0, "nothing added");
	ok(isnan(tally_interval_rate(&(struct tally_metric){ .value = 1 })),
	   "rate of a record that is no interval: NaN");
	tally_batch_unref(b);
}

int main(void)
{
	plan(NO_PLAN);
	test_quantiles();
	test_counter();
	test_summary_histogram();
	test_refused();
	done_testing();
}
