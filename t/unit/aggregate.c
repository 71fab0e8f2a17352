/* SPDX-License-Identifier: MIT */
/*
 * t/unit/aggregate.c - the aggregate filter's state: statsd semantics and
 * spans to metrics, with exact figures per interval
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include <tally/record.h>

#include "../../plugins/filter/aggregate/state.h"
#include "tap.h"

#define S 1000000000LL

static const double qs[] = { 0.5, 0.9, 0.95, 0.99 };
static const double bks[] = { 0.01, 0.1, 1 };

static struct agg_opts opts(void)
{
	return (struct agg_opts){
		.quantiles = qs,
		.nquantiles = 4,
		.buckets = bks,
		.nbuckets = 3,
		.max_series = 100,
		.max_samples = 1000,
		.expire_ns = 300 * S,
		.zero_seed = false,
		.prefix = "tally_trace_region_",
	};
}

/* Feed every record of @b to @st. */
static void feed(struct agg_state *st, struct tally_batch *b)
{
	for (size_t i = 0; i < tally_batch_count(b); i++)
		agg_state_record(st, tally_batch_at(b, i));
}

/* The interval record named @name (and of @type) in @b, or NULL. */
static const struct tally_metric *find(struct tally_batch *b, const char *name,
				       enum tally_metric_type type)
{
	for (size_t i = 0; i < tally_batch_count(b); i++) {
		const struct tally_metric *m = &tally_batch_at(b, i)->metric;

		if (!strcmp(m->name, name) && m->type == type)
			return m;
	}
	return NULL;
}

static void test_counters_and_rates(void)
{
	struct agg_opts o = opts();
	struct agg_state *st = agg_state_new(&o, 100 * S);
	struct tally_batch *in = tally_batch_new(), *out = tally_batch_new();
	const struct tally_metric *m;

	/* 3 + 2/0.5 + 1/0.1 = 17 over 10 s */
	tally_batch_add_delta(in, TALLY_COUNTER, "req.count", NULL, NULL, 3, 1,
			      101 * S);
	tally_batch_add_delta(in, TALLY_COUNTER, "req.count", NULL, NULL, 2,
			      0.5, 102 * S);
	tally_batch_add_delta(in, TALLY_COUNTER, "req.count", NULL, NULL, 1,
			      0.1, 103 * S);
	feed(st, in);
	cmp_ok(agg_state_tick(st, out, 110 * S, false), "==", 1, "one record");
	m = find(out, "req.count", TALLY_COUNTER);
	ok(m && m->form == TALLY_FORM_INTERVAL, "counter interval record");
	cmp_ok(m->value, "==", 17, "sample rates applied to the sum");
	cmp_ok(m->interval->count, "==", 13, "events: 1 + 2 + 10");
	cmp_ok(m->interval->seconds, "==", 10, "10 s interval");
	cmp_ok(tally_interval_rate(m), "==", 1.7, "rate 1.7/s");
	cmp_ok(agg_state_counters(st)->samples, "==", 3, "samples counted");
	tally_batch_unref(out);
	out = tally_batch_new();
	cmp_ok(agg_state_tick(st, out, 120 * S, false), "==", 1,
	       "an idle counter is sent");
	m = find(out, "req.count", TALLY_COUNTER);
	ok(m && m->value == 0 && m->interval->count == 0, "at zero");
	tally_batch_unref(out);
	tally_batch_unref(in);
	agg_state_free(st);
}

static void test_gauges(void)
{
	struct agg_opts o = opts();
	struct agg_state *st = agg_state_new(&o, 0);
	struct tally_batch *in = tally_batch_new(), *out = tally_batch_new();
	const struct tally_metric *m;

	/* statsd: "q:10|g", "q:+5|g", "q:-3|g" -> 12 */
	tally_batch_add_metric(in, TALLY_GAUGE, "q", NULL, NULL, 10, 1);
	tally_batch_add_delta(in, TALLY_GAUGE, "q", NULL, NULL, 5, 1, 2);
	tally_batch_add_delta(in, TALLY_GAUGE, "q", NULL, NULL, -3, 1, 3);
	/* a negative absolute gauge: "t:0|g" then "t:-4|g" */
	tally_batch_add_metric(in, TALLY_GAUGE, "t", NULL, NULL, 0, 4);
	tally_batch_add_delta(in, TALLY_GAUGE, "t", NULL, NULL, -4, 1, 5);
	/* a delta on a gauge never set starts from 0 */
	tally_batch_add_delta(in, TALLY_GAUGE, "u", NULL, NULL, 7, 1, 6);
	feed(st, in);
	agg_state_tick(st, out, 10 * S, false);
	m = find(out, "q", TALLY_GAUGE);
	cmp_ok(m->value, "==", 12, "10 then +5 then -3: 12");
	m = find(out, "t", TALLY_GAUGE);
	cmp_ok(m->value, "==", -4, "0 then -4: a negative gauge of -4");
	m = find(out, "u", TALLY_GAUGE);
	cmp_ok(m->value, "==", 7, "a delta alone: 0 + 7");
	tally_batch_unref(out);
	tally_batch_unref(in);

	in = tally_batch_new();
	out = tally_batch_new();
	tally_batch_add_delta(in, TALLY_GAUGE, "q", NULL, NULL, 1, 1, 11);
	feed(st, in);
	agg_state_tick(st, out, 20 * S, false);
	m = find(out, "q", TALLY_GAUGE);
	cmp_ok(m->value, "==", 13, "the level holds across intervals: 13");
	m = find(out, "t", TALLY_GAUGE);
	ok(m && m->value == -4 && m->interval->count == 0,
	   "an idle gauge is sent again at its level, with no update");
	tally_batch_unref(out);
	tally_batch_unref(in);
	agg_state_free(st);
}

static void test_timers(void)
{
	struct agg_opts o = opts();
	struct agg_state *st = agg_state_new(&o, 0);
	struct tally_batch *in = tally_batch_new(), *out = tally_batch_new();
	const struct tally_metric *m;

	/* 10 values 0.001 .. 0.010 s, the last sampled at 0.5 */
	for (int i = 1; i <= 10; i++)
		tally_batch_add_observation(in, TALLY_SUMMARY, "db.query", NULL,
					    NULL, i / 1000.0, i == 10 ? 0.5 : 1,
					    i);
	feed(st, in);
	agg_state_tick(st, out, 10 * S, false);
	m = find(out, "db.query", TALLY_SUMMARY);
	ok(m != NULL, "timer summary record");
	cmp_ok(m->interval->count, "==", 11, "count: 9 + 1/0.5");
	cmp_ok(m->interval->sum, "==", 0.065, "sum weighted: 0.045 + 2*0.010");
	cmp_ok(m->interval->min, "==", 0.001, "min");
	cmp_ok(m->interval->max, "==", 0.010, "max, a value never scaled");
	cmp_ok(m->interval->median, "==", 0.005, "median (nearest rank)");
	cmp_ok(m->interval->nquantiles, "==", 4, "four percentiles");
	cmp_ok(tally_interval_quantile(m, 0.5), "==", 0.005, "p50");
	cmp_ok(tally_interval_quantile(m, 0.9), "==", 0.009, "p90");
	cmp_ok(tally_interval_quantile(m, 0.95), "==", 0.010, "p95");
	cmp_ok(tally_interval_quantile(m, 0.99), "==", 0.010, "p99");
	cmp_ok(fabs(tally_interval_mean(m) - 0.065 / 11), "<", 1e-15,
	       "mean = sum / count");
	tally_batch_unref(out);
	tally_batch_unref(in);

	/* a histogram: per-interval bucket counts */
	in = tally_batch_new();
	out = tally_batch_new();
	tally_batch_add_observation(in, TALLY_HISTOGRAM, "size", NULL, NULL,
				    0.005, 1, 11);
	tally_batch_add_observation(in, TALLY_HISTOGRAM, "size", NULL, NULL,
				    0.05, 1, 12);
	tally_batch_add_observation(in, TALLY_HISTOGRAM, "size", NULL, NULL,
				    0.1, 0.25, 13);
	tally_batch_add_observation(in, TALLY_HISTOGRAM, "size", NULL, NULL, 7,
				    1, 14);
	feed(st, in);
	agg_state_tick(st, out, 20 * S, false);
	m = find(out, "size", TALLY_HISTOGRAM);
	ok(m && m->interval->nbuckets == 4, "3 buckets and +Inf");
	cmp_ok(m->interval->buckets[0].count, "==", 1, "<= 0.01: 1");
	cmp_ok(m->interval->buckets[1].count, "==", 6, "<= 0.1: 1 + 1 + 4");
	cmp_ok(m->interval->buckets[2].count, "==", 6, "<= 1: 6");
	cmp_ok(m->interval->buckets[3].count, "==", 7, "+Inf: 7");
	cmp_ok(m->interval->count, "==", 7, "count 7");
	m = find(out, "db.query", TALLY_SUMMARY);
	ok(m && m->interval->count == 0 && isnan(m->interval->median),
	   "an idle timer: count 0, no median");
	ok(m && m->interval->nquantiles == 0 && !m->interval->quantiles,
	   "an idle timer: no percentiles (rather than NaN ones)");
	tally_batch_unref(out);
	tally_batch_unref(in);
	agg_state_free(st);
}

static void test_sets_and_labels(void)
{
	struct agg_opts o = opts();
	char *drop[] = { "pod" };
	struct agg_state *st;
	struct tally_batch *in = tally_batch_new(), *out = tally_batch_new();
	struct tally_labels *a = tally_labels_newv("pod", "a", "dc", "x", NULL);
	struct tally_labels *b = tally_labels_newv("pod", "b", "dc", "x", NULL);
	struct tally_labels *x = tally_labels_newv("dc", "x", NULL);
	const struct tally_metric *m;

	o.drop_labels = drop;
	o.ndrop = 1;
	st = agg_state_new(&o, 0);
	tally_batch_add_set_member(in, "users", NULL, NULL, "alice", 1);
	tally_batch_add_set_member(in, "users", NULL, NULL, "bob", 1);
	tally_batch_add_set_member(in, "users", NULL, NULL, "alice", 1);
	tally_batch_add_delta(in, TALLY_COUNTER, "hits", NULL, a, 1, 1, 1);
	tally_batch_add_delta(in, TALLY_COUNTER, "hits", NULL, b, 2, 1, 1);
	feed(st, in);
	agg_state_tick(st, out, 10 * S, false);
	m = find(out, "users", TALLY_GAUGE);
	ok(m && (m->interval->flags & TALLY_INTERVAL_SET), "a set's record");
	cmp_ok(m->value, "==", 2, "two distinct members");
	cmp_ok(m->interval->count, "==", 3, "three members sent");
	m = find(out, "hits", TALLY_COUNTER);
	ok(m && m->labels == x, "drop_labels: pod dropped, dc kept");
	cmp_ok(m->value, "==", 3, "the two series merged: 1 + 2");
	tally_batch_unref(out);
	tally_batch_unref(in);
	agg_state_free(st);
	tally_labels_unref(a);
	tally_labels_unref(b);
	tally_labels_unref(x);
}

static void test_group_by(void)
{
	struct agg_opts o = opts();
	char *group[] = { "dc" };
	struct agg_state *st;
	struct tally_batch *in = tally_batch_new(), *out = tally_batch_new();
	struct tally_labels *a = tally_labels_newv("pod", "a", "dc", "x", "env",
						   "p", NULL);
	struct tally_labels *b = tally_labels_newv("pod", "b", "dc", "y", NULL);
	struct tally_labels *x = tally_labels_newv("dc", "x", NULL);
	struct tally_labels *y = tally_labels_newv("dc", "y", NULL);
	const struct tally_metric *m;

	o.group_by = group;
	o.ngroup_by = 1;
	st = agg_state_new(&o, 0);
	tally_batch_add_delta(in, TALLY_COUNTER, "hits", NULL, a, 1, 1, 1);
	tally_batch_add_delta(in, TALLY_COUNTER, "hits", NULL, b, 2, 1, 1);
	tally_batch_add_delta(in, TALLY_COUNTER, "hits", NULL, a, 4, 1, 1);
	feed(st, in);
	cmp_ok(agg_state_tick(st, out, 10 * S, false), "==", 2,
	       "group_by dc: two series");
	m = &tally_batch_at(out, 0)->metric;
	ok(m->labels == x && m->value == 5, "dc=x: 1 + 4");
	m = &tally_batch_at(out, 1)->metric;
	ok(m->labels == y && m->value == 2, "dc=y: 2");
	tally_batch_unref(out);
	tally_batch_unref(in);
	agg_state_free(st);
	tally_labels_unref(a);
	tally_labels_unref(b);
	tally_labels_unref(x);
	tally_labels_unref(y);
}

static void test_zero_seed_and_limits(void)
{
	struct agg_opts o = opts();
	struct agg_state *st;
	struct tally_batch *in = tally_batch_new(), *out = tally_batch_new();
	const struct tally_metric *m;

	o.zero_seed = true;
	o.max_series = 2;
	o.expire_ns = 20 * S;
	st = agg_state_new(&o, 0);
	tally_batch_add_delta(in, TALLY_COUNTER, "c", NULL, NULL, 5, 1, 1);
	tally_batch_add_delta(in, TALLY_COUNTER, "d", NULL, NULL, 1, 1, 1);
	tally_batch_add_delta(in, TALLY_COUNTER, "e", NULL, NULL, 1, 1, 1);
	feed(st, in);
	cmp_ok(agg_state_counters(st)->series_dropped, "==", 1,
	       "a third series over max_series 2: dropped, counted");
	agg_state_tick(st, out, 10 * S, false);
	m = find(out, "c", TALLY_COUNTER);
	ok(m && m->value == 0 && (m->interval->flags & TALLY_INTERVAL_SEEDED),
	   "a new counter is sent at zero first");
	cmp_ok(m->interval->seconds, "==", 10, "for its first interval");
	tally_batch_unref(out);
	out = tally_batch_new();
	agg_state_tick(st, out, 20 * S, false);
	m = find(out, "c", TALLY_COUNTER);
	ok(m && m->value == 5 && !m->interval->flags,
	   "its figures come with the next interval");
	cmp_ok(m->interval->seconds, "==", 20, "covering both intervals");
	tally_batch_unref(out);
	out = tally_batch_new();
	agg_state_tick(st, out, 30 * S, false);
	agg_state_tick(st, out, 40 * S, false);
	cmp_ok(agg_state_counters(st)->series_expired, "==", 2,
	       "idle 20 s: both series expired");
	cmp_ok(agg_state_counters(st)->series, "==", 0, "none held");
	tally_batch_unref(out);

	/* the last tick sends the zero and the figures together */
	out = tally_batch_new();
	feed(st, in);
	cmp_ok(agg_state_tick(st, out, 45 * S, true), "==", 4,
	       "last tick: zero and figures of both series");
	m = &tally_batch_at(out, 1)->metric;
	ok(!strcmp(m->name, "c") && m->value == 5, "c's figures after its zero");
	cmp_ok(m->interval->seconds, "==", 5, "a partial interval of 5 s");
	tally_batch_unref(out);
	tally_batch_unref(in);
	agg_state_free(st);
}

/* A known trace: main(0..10 s) { solve(1..4 s), solve(5..5.5 s) } */
static void test_spans(void)
{
	struct agg_opts o = opts();
	struct agg_state *st;
	struct tally_batch *in = tally_batch_new(), *out = tally_batch_new();
	struct tally_attr bytes = TALLY_ATTR_INT("bytes", 4096);
	struct tally_attr self = TALLY_ATTR_DOUBLE("self_seconds", 0.25);
	struct tally_span sp = { .trace = "t1", .src = { "n1", 7, 7, 3 } };
	struct tally_labels *ls;
	const struct tally_metric *m;
	static const struct {
		const char *name;
		uint64_t id;
		int64_t b, e;
	} calls[] = {
		{ "solve", 2, 1000, 4000 },
		{ "solve", 3, 5000, 5500 },
		{ "main", 1, 0, 10000 },
	};

	o.dimensions = AGG_DIM_RANK;
	st = agg_state_new(&o, 0);
	for (size_t i = 0; i < 3; i++) {
		sp.name = calls[i].name;
		sp.span_id = calls[i].id;
		sp.phase = TALLY_SPAN_BEGIN;
		sp.begin_ns = calls[i].b * 1000000 + 1;
		sp.nvalues = 0;
		sp.values = NULL;
		tally_batch_add_span(in, &sp, calls[i].b * 1000000 + 1);
		sp.phase = TALLY_SPAN_END;
		if (i == 1) {
			sp.nvalues = 1;
			sp.values = &bytes;
		}
		tally_batch_add_span(in, &sp, calls[i].e * 1000000 + 1);
	}
	/* a flat stream: one call of "io" in two fragments, self time */
	sp.name = "io";
	sp.span_id = 9;
	sp.nvalues = 0;
	sp.flags = TALLY_SPAN_FRAGMENT;
	sp.phase = TALLY_SPAN_BEGIN;
	tally_batch_add_span(in, &sp, 2 * S);
	sp.phase = TALLY_SPAN_END;
	sp.begin_ns = 2 * S;
	tally_batch_add_span(in, &sp, 3 * S);
	sp.flags = TALLY_SPAN_FRAGMENT | TALLY_SPAN_RESUMED;
	sp.phase = TALLY_SPAN_BEGIN;
	tally_batch_add_span(in, &sp, 4 * S);
	sp.flags = TALLY_SPAN_FRAGMENT | TALLY_SPAN_RESUMED | TALLY_SPAN_LAST;
	sp.phase = TALLY_SPAN_END;
	sp.begin_ns = 4 * S;
	sp.nvalues = 1;
	sp.values = &self;
	tally_batch_add_span(in, &sp, 4 * S + S / 2);
	feed(st, in);
	agg_state_tick(st, out, 20 * S, false);

	ls = tally_labels_newv("rank", "3", "region", "solve", NULL);
	m = find(out, "tally_trace_region_calls_total", TALLY_COUNTER);
	ok(m && m->labels == ls && m->value == 2, "solve: 2 calls, rank 3");
	m = find(out, "tally_trace_region_duration_seconds", TALLY_HISTOGRAM);
	ok(m && m->labels == ls, "solve's duration histogram first");
	cmp_ok(m->interval->count, "==", 2, "two durations");
	cmp_ok(m->interval->sum, "==", 3.5, "3 s + 0.5 s");
	cmp_ok(m->interval->buckets[2].count, "==", 1, "<= 1 s: one");
	cmp_ok(m->interval->buckets[3].count, "==", 2, "+Inf: two");
	m = find(out, "tally_trace_region_bytes_total", TALLY_COUNTER);
	ok(m && m->labels == ls && m->value == 4096,
	   "a numeric attribute summed per region");
	tally_labels_unref(ls);
	ls = tally_labels_newv("rank", "3", "region", "io", NULL);
	for (size_t i = 0; i < tally_batch_count(out); i++) {
		m = &tally_batch_at(out, i)->metric;
		if (m->labels != ls)
			continue;
		if (!strcmp(m->name, "tally_trace_region_calls_total"))
			cmp_ok(m->value, "==", 1, "io: one call in 2 fragments");
		if (!strcmp(m->name, "tally_trace_region_duration_seconds"))
			cmp_ok(m->interval->sum, "==", 2.5,
			       "io: first begin to last end, 2.5 s");
		if (!strcmp(m->name, "tally_trace_region_self_seconds_total"))
			cmp_ok(m->value, "==", 0.25, "io: self time summed");
	}
	tally_labels_unref(ls);
	cmp_ok(agg_state_counters(st)->span_ends, "==", 4, "4 calls ended");
	tally_batch_unref(out);
	tally_batch_unref(in);
	agg_state_free(st);
}

static void test_passes(void)
{
	struct agg_opts o = opts();
	struct agg_state *st = agg_state_new(&o, 0);
	struct tally_batch *in = tally_batch_new();

	tally_batch_add_metric(in, TALLY_COUNTER, "node_forks_total", NULL,
			       NULL, 5, 1);
	ok(!agg_state_record(st, tally_batch_at(in, 0)),
	   "a cumulative counter passes on");
	o.max_series = 0;
	ok(agg_state_new(&o, 0) == NULL, "max_series 0 refused");
	tally_batch_unref(in);
	agg_state_free(st);
}

/*
 * A reload's handoff: the state goes on under new options. Every figure
 * fed before and after the retune comes out in one interval, exactly.
 */
static void test_retune(void)
{
	static const double qs2[] = { 0.5, 0.75 };
	static const double bks2[] = { 0.05, 0.5 };
	struct agg_opts o = opts();
	struct agg_state *st = agg_state_new(&o, 0);
	struct tally_batch *in = tally_batch_new(), *out = tally_batch_new();
	struct tally_labels *a = tally_labels_newv("dc", "x", "pod", "a", NULL);
	struct tally_labels *b = tally_labels_newv("dc", "x", "pod", "b", NULL);
	struct tally_labels *x = tally_labels_newv("dc", "x", NULL);
	char *group[] = { "dc" };
	const struct tally_metric *m;

	tally_batch_add_delta(in, TALLY_COUNTER, "req", NULL, NULL, 3, 0.5, 1);
	tally_batch_add_delta(in, TALLY_COUNTER, "hits", NULL, a, 1, 1, 1);
	tally_batch_add_delta(in, TALLY_COUNTER, "hits", NULL, b, 2, 1, 1);
	tally_batch_add_metric(in, TALLY_GAUGE, "lvl", NULL, a, 10, 1);
	tally_batch_add_metric(in, TALLY_GAUGE, "lvl", NULL, b, 20, 1);
	tally_batch_add_delta(in, TALLY_GAUGE, "lvl", NULL, a, 1, 1, 1);
	tally_batch_add_set_member(in, "users", NULL, a, "alice", 1);
	tally_batch_add_set_member(in, "users", NULL, b, "bob", 1);
	tally_batch_add_set_member(in, "users", NULL, b, "alice", 1);
	/* h: 0.005, 0.02, 0.2, 2 under buckets 0.01, 0.1, 1 */
	tally_batch_add_observation(in, TALLY_HISTOGRAM, "h", NULL, NULL, 0.005,
				    1, 1);
	tally_batch_add_observation(in, TALLY_HISTOGRAM, "h", NULL, NULL, 0.02,
				    1, 1);
	tally_batch_add_observation(in, TALLY_HISTOGRAM, "h", NULL, NULL, 0.2,
				    1, 1);
	/* hs: the same, one value at @0.5: counted by its old buckets */
	tally_batch_add_observation(in, TALLY_HISTOGRAM, "hs", NULL, NULL,
				    0.005, 1, 1);
	tally_batch_add_observation(in, TALLY_HISTOGRAM, "hs", NULL, NULL, 0.02,
				    0.5, 1);
	for (int i = 1; i <= 8; i++)
		tally_batch_add_observation(in, TALLY_SUMMARY, "t", NULL, NULL,
					    i, 1, 1);
	feed(st, in);
	tally_batch_unref(in);

	/* the same options: nothing changes */
	ok(agg_state_retune(st, &o) == 0, "retune, same options");
	cmp_ok(agg_state_pending(st), "==", 22, "22 samples pending");
	/* new options: group by dc, other percentiles and buckets, fewer
	 * values kept */
	o.group_by = group;
	o.ngroup_by = 1;
	o.quantiles = qs2;
	o.nquantiles = 2;
	o.buckets = bks2;
	o.nbuckets = 2;
	o.max_samples = 4;
	o.prefix = "";
	ok(agg_state_retune(st, &o) == 0, "retune, new options");
	o.max_series = 0;
	ok(agg_state_retune(st, &o) < 0 && errno == EINVAL,
	   "bad options refused");
	o.max_series = 100;

	in = tally_batch_new();
	tally_batch_add_delta(in, TALLY_COUNTER, "req", NULL, NULL, 1, 1, 2);
	tally_batch_add_delta(in, TALLY_COUNTER, "hits", NULL, a, 4, 1, 2);
	tally_batch_add_observation(in, TALLY_HISTOGRAM, "h", NULL, NULL, 2, 1,
				    2);
	feed(st, in);
	tally_batch_unref(in);
	cmp_ok(agg_state_tick(st, out, 10 * S, false), "==", 7,
	       "7 series: req, hits, lvl, users (each 2 merged), h, hs, t");
	m = find(out, "req", TALLY_COUNTER);
	ok(m && m->labels == tally_labels_empty() && m->value == 7 &&
		   m->interval->start_ns == 0 && m->interval->seconds == 10,
	   "req: 3/0.5 + 1 over the whole interval");
	m = find(out, "hits", TALLY_COUNTER);
	ok(m && m->labels == x && m->value == 7,
	   "hits: pod a and b merged under group_by dc: 1 + 2 + 4");
	m = find(out, "lvl", TALLY_GAUGE);
	ok(m && m->labels == x && m->value == 11,
	   "lvl: the level of the latest sample (a: 10 + 1)");
	m = find(out, "users", TALLY_GAUGE);
	ok(m && m->labels == x && m->value == 2 && m->interval->count == 3,
	   "users: alice and bob, 3 members sent");
	m = find(out, "h", TALLY_HISTOGRAM);
	ok(m && m->interval->nbuckets == 3, "h: 2 new buckets and +Inf");
	cmp_ok(m->interval->buckets[0].count, "==", 2,
	       "h: <= 0.05: 0.005, 0.02 (counted again from the values)");
	cmp_ok(m->interval->buckets[1].count, "==", 3, "h: <= 0.5: + 0.2");
	cmp_ok(m->interval->buckets[2].count, "==", 4, "h: +Inf: + 2");
	cmp_ok(m->interval->nquantiles, "==", 2, "the new percentiles");
	cmp_ok(tally_interval_quantile(m, 0.75), "==", 0.2, "h: p75 0.2");
	m = find(out, "hs", TALLY_HISTOGRAM);
	ok(m && m->interval->nbuckets == 3 && m->interval->count == 3,
	   "hs: count 1 + 1/0.5");
	cmp_ok(m->interval->buckets[0].count, "==", 1,
	       "hs: <= 0.05: the old <= 0.01 bucket");
	cmp_ok(m->interval->buckets[1].count, "==", 3,
	       "hs: <= 0.5: the old <= 0.1 bucket's 2 (weighted)");
	m = find(out, "t", TALLY_SUMMARY);
	ok(m && m->interval->count == 8 && m->interval->sum == 36 &&
		   m->interval->min == 1 && m->interval->max == 8,
	   "t: count, sum, min, max exact over 4 values kept");
	cmp_ok(agg_state_counters(st)->sampled, "==", 4,
	       "t: 4 values left out, counted");
	tally_batch_unref(out);
	tally_labels_unref(a);
	tally_labels_unref(b);
	tally_labels_unref(x);
	agg_state_free(st);
}

/* Zero seeding and span series across a retune. */
static void test_retune_seed_spans(void)
{
	struct agg_opts o = opts();
	struct agg_state *st;
	struct tally_batch *in = tally_batch_new(), *out = tally_batch_new();
	struct tally_span sp = { .trace = "t1", .src = { "n1", 7, 7, 3 } };
	struct tally_labels *ls = tally_labels_newv("region", "solve", NULL);
	struct tally_labels *pa = tally_labels_newv("pod", "a", NULL);
	char *drop[] = { "pod" };
	const struct tally_metric *m;

	o.zero_seed = true;
	o.dimensions = AGG_DIM_RANK;
	st = agg_state_new(&o, 0);
	tally_batch_add_delta(in, TALLY_COUNTER, "old", NULL, NULL, 1, 1, 1);
	tally_batch_add_delta(in, TALLY_COUNTER, "pc", NULL, pa, 1, 1, 1);
	tally_batch_add_observation(in, TALLY_SUMMARY, "tm", NULL, NULL, 1, 1,
				    1);
	feed(st, in);
	tally_batch_unref(in);
	agg_state_tick(st, out, 10 * S, false);
	m = find(out, "old", TALLY_COUNTER);
	ok(m && (m->interval->flags & TALLY_INTERVAL_SEEDED),
	   "old: its zero first");
	m = find(out, "tm", TALLY_SUMMARY);
	ok(m && (m->interval->flags & TALLY_INTERVAL_SEEDED) &&
		   m->interval->nquantiles == 0,
	   "a timer's zero record has no percentiles (never NaN ones)");
	tally_batch_unref(out);
	out = tally_batch_new();
	in = tally_batch_new();
	sp.name = "solve";
	sp.span_id = 2;
	sp.phase = TALLY_SPAN_END;
	sp.begin_ns = 11 * S;
	tally_batch_add_span(in, &sp, 13 * S);
	tally_batch_add_delta(in, TALLY_COUNTER, "new", NULL, NULL, 5, 1, 12);
	feed(st, in);
	tally_batch_unref(in);
	/* drop the rank dimension, another prefix; pod dropped */
	o.dimensions = 0;
	o.prefix = "r_";
	o.drop_labels = drop;
	o.ndrop = 1;
	ok(agg_state_retune(st, &o) == 0, "retune");
	agg_state_tick(st, out, 20 * S, false);
	m = find(out, "old", TALLY_COUNTER);
	ok(m && m->value == 1 &&
		   !(m->interval->flags & TALLY_INTERVAL_SEEDED) &&
		   m->interval->start_ns == 0,
	   "old: its figures of both intervals, not seeded again");
	m = find(out, "pc", TALLY_COUNTER);
	ok(m && m->labels == tally_labels_empty() &&
		   (m->interval->flags & TALLY_INTERVAL_SEEDED),
	   "pc: keyed again without pod: a new series, seeded again");
	m = find(out, "new", TALLY_COUNTER);
	ok(m && (m->interval->flags & TALLY_INTERVAL_SEEDED),
	   "new: seeded, as before the reload");
	m = find(out, "r_calls_total", TALLY_COUNTER);
	ok(m && m->labels == ls && (m->interval->flags & TALLY_INTERVAL_SEEDED),
	   "span calls renamed, rank stripped, seeded");
	tally_batch_unref(out);
	out = tally_batch_new();
	agg_state_tick(st, out, 30 * S, false);
	m = find(out, "r_calls_total", TALLY_COUNTER);
	ok(m && m->value == 1 && m->interval->start_ns == 10 * S,
	   "then its call");
	m = find(out, "r_duration_seconds", TALLY_HISTOGRAM);
	ok(m && m->labels == ls && m->interval->sum == 2,
	   "and its duration, 2 s");
	m = find(out, "pc", TALLY_COUNTER);
	ok(m && m->value == 1 && m->interval->start_ns == 0,
	   "pc: its figure since the start");
	m = find(out, "new", TALLY_COUNTER);
	ok(m && m->value == 5, "new: 5");
	tally_batch_unref(out);
	tally_labels_unref(ls);
	tally_labels_unref(pa);
	agg_state_free(st);
}

int main(void)
{
	plan(NO_PLAN);
	test_counters_and_rates();
	test_gauges();
	test_timers();
	test_sets_and_labels();
	test_group_by();
	test_zero_seed_and_limits();
	test_spans();
	test_passes();
	test_retune();
	test_retune_seed_spans();
	done_testing();
}
