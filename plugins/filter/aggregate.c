/* SPDX-License-Identifier: MIT */
/*
 * plugins/filter/aggregate.c - statsd samples and spans to one interval
 * record per series and interval
 *
 * The glue between the pipeline and plugins/filter/aggregate/state.c:
 * every record goes through the state; what it consumed (deltas,
 * observations, set members, gauges, spans) is left out of the batch
 * passed on, the rest (cumulative counters and histograms, records of
 * other filters) is borrowed unchanged. The tick, on the wall-clock marks
 * of the instance's interval, appends the interval's records; the last
 * one (shutdown, --once) flushes the partial interval. See
 * doc/plugins/aggregate.md.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tally/plugin.h>

#include "aggregate/state.h"

struct aggregate {
	struct tally_numbers percentiles;
	struct tally_numbers buckets;
	struct tally_strlist dimensions;
	struct tally_strlist group_by;
	struct tally_strlist drop_labels;
	int64_t max_series;
	int64_t max_samples;
	double expire; /* seconds */
	bool zero_seed;
	char *prefix;

	struct tally_instance *inst;
	struct agg_state *st;
	struct agg_counters shown; /* counters already published */
	struct tally_keep keep;	   /* per record of the batch being decided */
};

static const char *const aggregate_dims[] = { "trace", "rank", "host",
					      "depth", NULL };

/* The AGG_DIM_* bits of the dimensions option; -1 on an unknown name. */
static int aggregate_dim_bits(struct tally_instance *inst,
			      const struct aggregate *a, unsigned *bits)
{
	*bits = 0;
	for (size_t i = 0; i < a->dimensions.n; i++) {
		size_t k = 0;

		while (aggregate_dims[k] &&
		       strcmp(aggregate_dims[k], a->dimensions.v[i]))
			k++;
		if (!aggregate_dims[k]) {
			tally_log(inst, LOG_ERR,
				  "dimensions: unknown dimension '%s': one "
				  "of trace, rank, host, depth",
				  a->dimensions.v[i]);
			errno = EINVAL;
			return -1;
		}
		*bits |= 1u << k;
	}
	return 0;
}

static int aggregate_check(struct tally_instance *inst, void *state)
{
	struct aggregate *a = state;
	unsigned bits;

	if (aggregate_dim_bits(inst, a, &bits) < 0)
		return -1;
	return 0;
}

/*
 * The state's options of @a's: *@qs, the quantiles, is for the caller to
 * free. Return: 0, -1 with errno set (logged).
 */
static int aggregate_opts(struct tally_instance *inst, struct aggregate *a,
			  struct agg_opts *o, double **qs)
{
	*o = (struct agg_opts){
		.nquantiles = a->percentiles.n,
		.buckets = a->buckets.v,
		.nbuckets = a->buckets.n,
		.group_by = a->group_by.v,
		.ngroup_by = a->group_by.n,
		.drop_labels = a->drop_labels.v,
		.ndrop = a->drop_labels.n,
		.max_series = (uint32_t)a->max_series,
		.max_samples = (uint32_t)a->max_samples,
		.expire_ns = (int64_t)(a->expire * 1e9),
		.zero_seed = a->zero_seed,
		.prefix = a->prefix,
	};
	*qs = NULL;
	if (aggregate_dim_bits(inst, a, &o->dimensions) < 0)
		return -1;
	if (a->percentiles.n) {
		*qs = malloc(a->percentiles.n * sizeof(**qs));
		if (!*qs) {
			tally_log(inst, LOG_ERR, "cannot set up: %s",
				  strerror(errno));
			return -1;
		}
		/* percentiles in the option, quantiles in the records */
		for (size_t i = 0; i < a->percentiles.n; i++)
			(*qs)[i] = a->percentiles.v[i] / 100;
	}
	o->quantiles = *qs;
	return 0;
}

static int aggregate_init(struct tally_instance *inst, void *state)
{
	struct aggregate *a = state;
	struct agg_opts o;
	double *qs;

	a->inst = inst;
	if (aggregate_opts(inst, a, &o, &qs) < 0)
		return -1;
	a->st = agg_state_new(&o, tally_now_ns());
	free(qs);
	if (!a->st) {
		tally_log(inst, LOG_ERR, "cannot set up: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Publish what the state counted since the last call, for self-metrics. */
static void aggregate_publish(struct tally_instance *inst, struct aggregate *a)
{
	const struct agg_counters *k = agg_state_counters(a->st);
	struct agg_counters *p = &a->shown;

#define AGG_PUB(field, fn, what)                                  \
	do {                                                      \
		if (k->field != p->field)                         \
			fn(inst, what, k->field - p->field);      \
	} while (0)
	AGG_PUB(series_dropped, tally_count_drop, "max_series");
	AGG_PUB(nomem, tally_count_drop, "nomem");
	AGG_PUB(series_expired, tally_count_event, "series_expired");
	AGG_PUB(sampled, tally_count_event, "values_sampled");
	AGG_PUB(set_overflow, tally_count_event, "set_overflow");
	AGG_PUB(no_begin, tally_count_event, "ends_without_begin");
	AGG_PUB(open_evicted, tally_count_event, "open_calls_evicted");
#undef AGG_PUB
	*p = *k;
}

static struct tally_batch *aggregate_process(struct tally_instance *inst,
					     void *state,
					     struct tally_batch *in)
{
	struct aggregate *a = state;
	const struct tally_record *recs = tally_batch_records(in);
	size_t n = tally_batch_count(in), kept = 0;
	struct tally_batch *out;

	if (!tally_keep_reserve(&a->keep, n)) {
		tally_count_drop(inst, "nomem", n);
		errno = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		a->keep.flags[i] = !agg_state_record(a->st, &recs[i]);
		kept += a->keep.flags[i];
	}
	if (memcmp(agg_state_counters(a->st), &a->shown, sizeof(a->shown)))
		aggregate_publish(inst, a);
	if (kept == n)
		return tally_batch_ref(in);
	if (!kept) {
		errno = 0; /* aggregated: its records come with the tick */
		return NULL;
	}
	out = tally_batch_select(in, a->keep.flags);
	if (!out)
		tally_count_drop(inst, "nomem", kept);
	return out;
}

static int aggregate_tick(struct tally_instance *inst, void *state,
			  struct tally_batch *out)
{
	struct aggregate *a = state;
	int64_t now = tally_now_ns(), end = now;
	int64_t step = (int64_t)(tally_instance_interval(inst) * 1e9);
	bool last = tally_tick_is_last(inst);

	/* a reload: the interval goes on in the successor (handoff) */
	if (tally_tick_hands_off(inst))
		return 0;

	/*
	 * A tick on its wall-clock mark ends the interval at the mark (the
	 * timer fires a little before or after it); the last tick ends the
	 * partial interval now.
	 */
	if (!last && step > 0)
		end = (int64_t)llround((double)now / (double)step) * step;
	agg_state_tick(a->st, out, end, last);
	if (memcmp(agg_state_counters(a->st), &a->shown, sizeof(a->shown)))
		aggregate_publish(inst, a);
	return 0;
}

/*
 * A reload replaces this instance: with a successor, the open interval and
 * the series go on in it (its last tick emitted nothing); without, the
 * last tick flushed the partial interval and nothing is handed over.
 */
static void *aggregate_handoff(struct tally_instance *inst, void *state,
			       int next)
{
	struct aggregate *a = state;
	struct agg_state *st = a->st;

	if (!next)
		return NULL;
	if (memcmp(agg_state_counters(st), &a->shown, sizeof(a->shown)))
		aggregate_publish(inst, a);
	a->st = NULL;
	return st;
}

static int aggregate_adopt(struct tally_instance *inst, void *state,
			   void *handed)
{
	struct aggregate *a = state;
	/* its predecessor published the counts up to the handoff */
	struct agg_counters was = *agg_state_counters(handed);
	struct agg_opts o;
	double *qs;
	int rc;

	if (aggregate_opts(inst, a, &o, &qs) < 0)
		return -1;
	rc = agg_state_retune(handed, &o);
	free(qs);
	if (rc < 0)
		return -1;
	agg_state_free(a->st);
	a->st = handed;
	a->shown = was;
	aggregate_publish(inst, a);
	return 0;
}

/* No successor took the state: its open interval is lost, counted. */
static void aggregate_discard(void *handed)
{
	uint64_t lost = agg_state_pending(handed);

	if (lost)
		tally_count_drop(NULL, "aggregate_reload", lost);
	agg_state_free(handed);
}

static void aggregate_fini(struct tally_instance *inst, void *state)
{
	struct aggregate *a = state;

	(void)inst;
	agg_state_free(a->st);
	tally_keep_free(&a->keep);
}

static const struct tally_option aggregate_options[] = {
	TALLY_OPT_NUMBERS_INCREASING(
		"percentiles", struct aggregate, percentiles, "50,90,95,99", 0,
		100,
		"percentiles of timers and histograms per interval, by "
		"nearest rank (the smallest value with at least p% of the "
		"interval's values <= it)"),
	TALLY_OPT_NUMBERS_INCREASING(
		"buckets", struct aggregate, buckets,
		"0.002,0.004,0.006,0.008,0.01,0.05,0.1,0.2,0.4,0.8,1,1.4,2,5,"
		"10,15",
		-1e300, 1e300,
		"upper bounds of histogram buckets (span durations in "
		"seconds, statsd h values as sent); +Inf is added"),
	TALLY_OPT_LIST("dimensions", struct aggregate, dimensions, NULL,
		       "what keys a span series besides its region: any of "
		       "trace, rank, host, depth"),
	TALLY_OPT_LIST("group_by", struct aggregate, group_by, NULL,
		       "label keys a statsd series keeps (empty: all); "
		       "series that then agree are aggregated together"),
	TALLY_OPT_LIST("drop_labels", struct aggregate, drop_labels, NULL,
		       "label keys removed from every series before it is "
		       "aggregated"),
	TALLY_OPT_INT("max_series", struct aggregate, max_series, "10000", 1,
		      10000000,
		      "series kept; samples of a new series beyond are "
		      "dropped (counted, reason max_series)"),
	TALLY_OPT_INT("max_samples", struct aggregate, max_samples, "10000", 1,
		      10000000,
		      "values kept per timer/histogram series and interval "
		      "for percentiles (beyond: a uniform sample), and "
		      "members per set"),
	TALLY_OPT_DURATION("expire", struct aggregate, expire, "5m", 0.001,
			   1e9,
			   "a series without a sample this long is forgotten "
			   "(a gauge then stops being sent)"),
	TALLY_OPT_BOOL("zero_seed", struct aggregate, zero_seed, "true",
		       "send a new counter, timer or histogram series at zero "
		       "for one interval before its first figures, so that "
		       "PromQL's increase() counts them"),
	TALLY_OPT_STRING("prefix", struct aggregate, prefix,
			 "tally_trace_region_",
			 "name prefix of the metrics made of spans (calls_total, "
			 "duration_seconds, self_seconds_total, KEY_total)"),
	TALLY_OPT_END
};

static const struct tally_filter_ops aggregate_ops = {
	.check = aggregate_check,
	.init = aggregate_init,
	.process = aggregate_process,
	.tick = aggregate_tick,
	.fini = aggregate_fini,
	.handoff = aggregate_handoff,
	.adopt = aggregate_adopt,
	.discard = aggregate_discard,
	.absorbs = TALLY_FORMS_STATSD,
	.emits = TALLY_FORMS_INTERVAL,
};

TALLY_PLUGIN_FILTER(aggregate,
		    "statsd samples and spans to per-interval counts, rates, "
		    "gauges, percentiles and histograms (interval records)",
		    struct aggregate, aggregate_options, &aggregate_ops);
