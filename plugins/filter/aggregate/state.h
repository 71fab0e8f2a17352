/* SPDX-License-Identifier: MIT */
/*
 * plugins/filter/aggregate/state.h - statsd samples and spans to interval
 * records
 *
 * One series per (name, kind, label set). Samples add into their series
 * during an interval; agg_state_tick() appends one interval record
 * (TALLY_FORM_INTERVAL, tally/record.h) per series to a batch and starts
 * the next interval:
 *   counter   (statsd "c", delta form) increments summed, each divided by
 *             its sample rate; the record's value is the sum, its rate the
 *             sum per second of the interval
 *   gauge     (statsd "g") an absolute value sets the level, a delta
 *             ("+3", "-2") adds to it (a gauge never set starts at 0); the
 *             record is the level at the end, which holds between updates
 *   set       (statsd "s") distinct members of the interval (a gauge)
 *   summary   (statsd "ms", an observation of type summary) and
 *   histogram (statsd "h", and span durations): count (weighted by
 *             1/sample rate), sum (weighted), min, max, median and the
 *             configured quantiles of the values seen (values are never
 *             weighted: tally/quantile.h), and, for histograms, per-bucket
 *             counts
 * Every series held is emitted every interval, at zero when idle (a
 * gauge at its level), as etsy's statsd does, until it expires.
 * Span ends become, per region and dimensions, a calls counter, a duration
 * histogram (end - begin), the sum of flatten's self_seconds and of every
 * other numeric typed attribute. Flat streams (flatten's fragments) count
 * a call at its LAST end and take its duration from its first fragment's
 * begin, so a call is counted once however many fragments it had.
 *
 * Zero seeding: a counter, summary or histogram series first seen in an
 * interval is emitted at that interval's end as a zero record (flag
 * TALLY_INTERVAL_SEEDED) and its figures travel in the next interval's
 * record, which then covers both intervals (its start is the first's): a
 * cumulative output shows the series at 0 for one interval before its
 * first value, so PromQL's increase() counts it. The last tick (@final)
 * emits the zero and the figures together.
 *
 * Memory is bounded: at most @max_series series (a sample of a new series
 * beyond is dropped, counted in series_dropped), @max_samples values kept
 * per series and interval for quantiles (beyond, a uniform reservoir
 * sample: count, sum, min and max stay exact) and members per set, and
 * @max_series open flat calls. A series without a sample for @expire_ns
 * is forgotten (series_expired).
 *
 * Time is passed in (CLOCK_REALTIME ns): the state is pure and testable.
 * Thread-safety: none; one state belongs to one filter instance.
 */
#ifndef AGGREGATE_STATE_H
#define AGGREGATE_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/config.h>
#include <tally/record.h>

/* struct agg_opts.dimensions: what, besides the region, keys a span series */
#define AGG_DIM_TRACE	0x1u
#define AGG_DIM_RANK	0x2u
#define AGG_DIM_HOST	0x4u
#define AGG_DIM_DEPTH	0x8u

/**
 * struct agg_opts - behaviour and limits of a state
 * @quantiles:   @nquantiles quantiles in [0, 1], ascending, computed for
 *               summaries and histograms (copied)
 * @buckets:     @nbuckets finite upper bounds, ascending, of histogram
 *               buckets (a +Inf bucket follows), in the values' unit
 *               (seconds for span durations) (copied)
 * @dimensions:  AGG_DIM_* bits
 * @group_by:    @ngroup_by label keys a metric series keeps (0: all); the
 *               others are dropped, and series that then agree merge
 * @drop_labels: @ndrop label keys removed from every series
 * @max_series:  series kept, >= 1
 * @max_samples: values kept per series and interval, >= 1
 * @expire_ns:   a series idle this long is forgotten, > 0
 * @zero_seed:   emit new counter/summary/histogram series at zero first
 * @prefix:      name prefix of span metrics ("tally_trace_region_")
 *               (copied)
 *
 * @group_by and @drop_labels are not copied: they must outlive the state
 * (or its next agg_state_retune()).
 */
struct agg_opts {
	const double *quantiles;
	size_t nquantiles;
	const double *buckets;
	size_t nbuckets;
	unsigned dimensions;
	char *const *group_by;
	size_t ngroup_by;
	char *const *drop_labels;
	size_t ndrop;
	uint32_t max_series;
	uint32_t max_samples;
	int64_t expire_ns;
	bool zero_seed;
	const char *prefix;
};

/**
 * struct agg_counters - running totals, never reset
 * @samples:        metric samples aggregated
 * @span_ends:      span ends aggregated (calls counted)
 * @series:         series held now (not a total)
 * @series_dropped: samples dropped as their new series found the table full
 * @series_expired: series forgotten after @expire_ns idle
 * @sampled:        values left out of a full quantile reservoir (counted
 *                  and summed all the same)
 * @set_overflow:   set members beyond @max_samples distinct ones (not
 *                  counted as distinct)
 * @no_begin:       span ends without a begin time (calls counted, no
 *                  duration)
 * @open_evicted:   open flat calls forgotten to make room (their duration
 *                  is lost, their call still counted)
 * @nomem:          samples lost for lack of memory
 */
struct agg_counters {
	uint64_t samples;
	uint64_t span_ends;
	uint64_t series;
	uint64_t series_dropped;
	uint64_t series_expired;
	uint64_t sampled;
	uint64_t set_overflow;
	uint64_t no_begin;
	uint64_t open_evicted;
	uint64_t nomem;
};

struct agg_state;

/**
 * agg_state_new() - an empty state whose first interval starts at @now_ns
 * Return: the state, or NULL with errno = ENOMEM, or EINVAL (a limit of
 * 0, quantiles outside [0, 1] or not ascending, buckets not ascending).
 */
struct agg_state *agg_state_new(const struct agg_opts *opts, int64_t now_ns);

/** agg_state_free() - free a state and its series; NULL is a no-op */
void agg_state_free(struct agg_state *st);

/**
 * agg_state_record() - aggregate one record
 * @rec: a record of any batch; nothing of it is kept
 *
 * Return: true when the record was consumed (a delta, an observation, a
 * set member, a span), false when it passes on unchanged (cumulative
 * samples, interval records). Never fails: what cannot be aggregated is
 * counted.
 */
bool agg_state_record(struct agg_state *st, const struct tally_record *rec);

/**
 * agg_state_tick() - end the interval at @end_ns: append its records
 * @out:    batch the interval records are appended to
 * @end_ns: CLOCK_REALTIME ns, the interval's end (after its start)
 * @final:  the last tick (shutdown, --once): series held back for zero
 *          seeding are emitted now, after their zero
 *
 * Series are emitted in the order they were first seen. An @end_ns not
 * after the interval's start emits nothing (the clock stepped back; the
 * interval goes on).
 * Return: the number of records appended; records that could not be
 * appended (no memory) are counted in nomem.
 */
size_t agg_state_tick(struct agg_state *st, struct tally_batch *out,
		      int64_t end_ns, bool final);

/**
 * agg_state_retune() - go on under new options, keeping the interval and
 * the series
 * @opts: the new options (copied as agg_state_new()'s; @group_by and
 *        @drop_labels are not copied and must outlive their use)
 *
 * What a reload that changes the filter's options keeps: the open
 * interval (its start and every series' partial figures), the series set
 * (gauge levels, zero seeding done), the open flat calls. Each series is
 * keyed again under @opts: group_by and drop_labels applied to its labels
 * (a label dropped before cannot come back), span series renamed to the
 * new prefix and stripped of the labels of dimensions no longer
 * configured. Series that then share a key merge (counts and sums add,
 * a gauge takes the level of the latest sample, sets unite, values join
 * up to @max_samples); a series whose key changed is new to the outputs,
 * so it is zero seeded again. Histograms are counted again under new
 * buckets: exactly from their values when the interval's values were all
 * kept and none had a sample rate, else each old bucket's weight goes to
 * the first new bucket whose bound is at least the old one's. Reservoirs
 * over a smaller @max_samples keep a uniform sample (counted as sampled);
 * series over a smaller @max_series are kept (no new series until the
 * count is under it), open flat calls over it are evicted.
 * Return: 0, or -1 with errno = EINVAL (as agg_state_new()) or ENOMEM;
 * @st is then unchanged.
 */
int agg_state_retune(struct agg_state *st, const struct agg_opts *opts);

/**
 * agg_state_pending() - samples and span ends taken since the last tick
 * (what a state freed now, without its tick, would lose)
 */
uint64_t agg_state_pending(const struct agg_state *st);

/** agg_state_counters() - the running totals */
const struct agg_counters *agg_state_counters(const struct agg_state *st);

#endif /* AGGREGATE_STATE_H */
