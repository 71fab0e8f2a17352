/* SPDX-License-Identifier: MIT */
/*
 * tally/record.h - records and batches, the unit of data in a pipeline
 *
 * Two kinds of records flow through pipelines: metric samples and span
 * events. Records travel in batches. A batch is built by one thread (an
 * input's read, a filter's process), then emitted; from then on it is
 * immutable and may be shared by several pipelines and outputs at once, each
 * holding a reference.
 *
 * Memory: every string and array a record points to lives in the batch's
 * arena, or in the arena of a batch it borrows from, and is freed with the
 * batch. The add functions copy what they are given, so callers may pass
 * stack buffers. Label sets are interned (tally/labels.h); the batch holds
 * one reference per record that names one.
 *
 * Borrowing (the filter hot path): tally_batch_append_from() and
 * tally_batch_select() put a record of another batch into a new one without
 * copying its strings or arrays: the new batch keeps a reference on the
 * batch it borrows from until it is freed itself, so the borrowed pointers
 * stay valid exactly as long as the new batch does. Only the record struct
 * is copied, and the label references taken. A batch may borrow from any
 * number of batches, which may borrow in turn.
 *
 * Thread-safety: building a batch is single-threaded. Once emitted, reading
 * a batch and tally_batch_ref()/tally_batch_unref() are safe from any thread.
 */
#ifndef TALLY_RECORD_H
#define TALLY_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/labels.h>

#ifdef __cplusplus
extern "C" {
#endif

/** enum tally_record_kind - what a record holds */
enum tally_record_kind {
	TALLY_REC_METRIC = 1,
	TALLY_REC_SPAN = 2,
};

/**
 * enum tally_metric_type - Prometheus metric types
 *
 * Follows the Prometheus data model and text exposition format 0.0.4.
 * TALLY_INFO is a gauge whose value is 1 and whose labels carry the
 * information (rendered as a gauge in the 0.0.4 text format).
 * TALLY_UNTYPED is a sample whose producer gave no type (a textfile
 * sample without a TYPE line): rendered as "untyped" (OpenMetrics:
 * "unknown"), otherwise handled as a gauge.
 */
enum tally_metric_type {
	TALLY_COUNTER = 1,
	TALLY_GAUGE,
	TALLY_HISTOGRAM,
	TALLY_SUMMARY,
	TALLY_INFO,
	TALLY_UNTYPED,
};

/**
 * enum tally_sample_form - what a metric sample's value means
 * @TALLY_FORM_CUMULATIVE: the current value: a counter's total since it
 *	started, a gauge's level, a histogram's cumulative buckets. What
 *	/proc and Prometheus hold; every output takes it. Zero, so a record
 *	filled in place is cumulative unless it says otherwise.
 * @TALLY_FORM_DELTA: a change since the previous sample of the series: a
 *	counter increment (a statsd "c" line; may be negative, statsd sums
 *	them) or a gauge adjustment (a statsd "+3|g"); types TALLY_COUNTER
 *	and TALLY_GAUGE. @value is the change, @sample_rate the fraction of
 *	events the sender kept (a counter increment stands for
 *	value / sample_rate; gauges ignore the rate).
 * @TALLY_FORM_OBSERVATION: one observed value (a statsd timer "ms" or
 *	histogram "h" line), type TALLY_HISTOGRAM or TALLY_SUMMARY for the
 *	cumulative form it should become; @value is the observation in the
 *	metric's base unit, @sample_rate as above (it stands for 1 /
 *	sample_rate observations); @count, @sum and @n are 0.
 * @TALLY_FORM_SET_MEMBER: one member of a set (a statsd "s" line), type
 *	TALLY_GAUGE: the number of distinct @member strings seen per
 *	interval is the gauge. @value is 0.
 *
 * The three non-cumulative forms keep what a statsd-style input receives
 * without losing its meaning; the aggregate filter turns them into
 * cumulative or interval records. An output declares which forms it
 * takes (struct tally_output_ops.accepts): the prometheus output adds
 * counter deltas into a cumulative counter and gauge deltas into the
 * gauge, and takes neither observations nor set members. A pipeline that
 * could bring an output a form it does not take is refused by
 * tallyd --check-config, with a message to put an aggregate filter in
 * front of it; records of such a form that reach it all the same (an input
 * emitting a form it did not declare) are dropped by the core and counted
 * as tally_dropped_total{reason="needs_aggregate"} of the output.
 *
 * @TALLY_FORM_INTERVAL: what the aggregate filter makes of the forms above
 *	(and of spans): the summary of one interval of one series, in
 *	@interval (struct tally_interval); see tally_batch_add_interval().
 *	An output renders it its own way (prometheus: cumulative counters
 *	and histograms, the last interval's percentiles as a summary;
 *	graphite: etsy-style names per flush) and declares it in @accepts
 *	like the other forms: an output that does not is refused by
 *	--check-config behind an aggregate filter.
 */
enum tally_sample_form {
	TALLY_FORM_CUMULATIVE = 0,
	TALLY_FORM_DELTA,
	TALLY_FORM_OBSERVATION,
	TALLY_FORM_SET_MEMBER,
	TALLY_FORM_INTERVAL,
};

/* Sets of forms, for the emits/absorbs/accepts fields of tally/plugin.h. */
#define TALLY_FORM_BIT(form)	(1u << (form))
#define TALLY_FORMS_DELTA	TALLY_FORM_BIT(TALLY_FORM_DELTA)
#define TALLY_FORMS_OBSERVATION TALLY_FORM_BIT(TALLY_FORM_OBSERVATION)
#define TALLY_FORMS_SET_MEMBER	TALLY_FORM_BIT(TALLY_FORM_SET_MEMBER)
#define TALLY_FORMS_INTERVAL	TALLY_FORM_BIT(TALLY_FORM_INTERVAL)
/* every non-cumulative form (cumulative samples are always taken) */
#define TALLY_FORMS_STATSD \
	(TALLY_FORMS_DELTA | TALLY_FORMS_OBSERVATION | TALLY_FORMS_SET_MEMBER)

/**
 * struct tally_bucket - one cumulative histogram bucket
 * @le:    upper bound (inclusive); the last bucket of a histogram is +Inf
 * @count: number of observations <= @le (cumulative, as in Prometheus)
 */
struct tally_bucket {
	double le;
	uint64_t count;
};

/**
 * struct tally_quantile - one summary quantile
 * @q:     quantile in [0, 1]
 * @value: the observed value at @q
 */
struct tally_quantile {
	double q;
	double value;
};

/* struct tally_interval.flags */
#define TALLY_INTERVAL_SET	0x1u /* a gauge that counts a set's members */
#define TALLY_INTERVAL_SEEDED	0x2u /* the zero a new series starts at */

/**
 * struct tally_interval - one series over one interval (TALLY_FORM_INTERVAL)
 * @start_ns:   CLOCK_REALTIME ns at which the interval began; the record's
 *              ts_ns is its end (a wall-clock mark of the aggregate's
 *              interval, or the shutdown time of a partial last one)
 * @seconds:    the interval's length, ts_ns - start_ns in seconds, > 0
 *              (set by tally_batch_add_interval())
 * @count:      events in the interval, each weighted by 1 / its sample
 *              rate (so 3 lines sampled at 0.5 count 6): counter
 *              increments, gauge updates, set members, observations
 * @sum:        observations (histograms, summaries): their sum, each value
 *              weighted as its count is; 0 for other types
 * @min:        observations: the smallest value seen (sample rates never
 *              change values); NaN when @count is 0 or the type has none
 * @max:        the largest value seen, as @min
 * @median:     the 0.5 quantile of the values seen, as in @quantiles; NaN
 *              as @min
 * @flags:      TALLY_INTERVAL_* flags
 * @nquantiles: number of @quantiles (0: none computed)
 * @nbuckets:   number of @buckets (0: none kept)
 * @quantiles:  the interval's quantiles, sorted by q, of the values seen
 *              (definition: the aggregate filter's documentation, the
 *              nearest rank of tally_quantile_sorted()); not mergeable:
 *              the value of one interval only
 * @buckets:    the interval's observations per bucket: @buckets[i].count
 *              counts the observations <= @buckets[i].le within this
 *              interval only (cumulative over le as in Prometheus, not
 *              over time), weights rounded to the nearest integer; the
 *              last le is +Inf. Mergeable: sum them over intervals and
 *              series
 *
 * What the record's value says depends on its type:
 *   TALLY_COUNTER:   @value is the sum of the interval's increments
 *                    (weighted); tally_interval_rate() the same per second
 *   TALLY_GAUGE:     @value is the level at the interval's end (with its
 *                    deltas applied); with TALLY_INTERVAL_SET, the number
 *                    of distinct members seen in the interval
 *   TALLY_HISTOGRAM, TALLY_SUMMARY: @value is unused (0); the interval's
 *                    observations are @count, @sum, @min, @max, @median,
 *                    @quantiles and (histograms) @buckets
 * The metric's own count, sum, n and buckets/quantiles are unused (0) in
 * an interval record. A series first seen in an interval is emitted once
 * at zero first (TALLY_INTERVAL_SEEDED, @count 0), so that a cumulative
 * rendering starts from 0 and PromQL's increase() counts its first
 * interval.
 */
struct tally_interval {
	int64_t start_ns;
	double seconds;
	double count;
	double sum;
	double min;
	double max;
	double median;
	uint32_t flags;
	uint32_t nquantiles;
	uint32_t nbuckets;
	const struct tally_quantile *quantiles;
	const struct tally_bucket *buckets;
};

/**
 * struct tally_metric - a metric sample
 * @name:    Prometheus-style name, base units, counters end in "_total"
 * @help:    one-line description or NULL
 * @type:    enum tally_metric_type
 * @form:    enum tally_sample_form: cumulative (0), delta, observation or
 *           set member
 * @labels:  interned label set (never NULL; the empty set for none)
 * @value:   sample value for counters, gauges and info (the change for a
 *           delta, the observed value for an observation); NaN/Inf allowed
 * @count:   histogram/summary observation count
 * @sum:     histogram/summary sum of observations
 * @n:       number of @buckets (histogram) or @quantiles (summary)
 * @buckets: histogram buckets, sorted by le, last one +Inf
 * @quantiles: summary quantiles, sorted by q
 * @sample_rate: deltas and observations: fraction of events the sender
 *           kept, in (0, 1]; 0 (a cumulative record) reads as 1. See
 *           tally_metric_weight().
 * @member:  set members: the member (arena string); NULL otherwise
 * @interval: interval records (TALLY_FORM_INTERVAL): the interval's
 *           figures, in the batch's arena (or one it borrows from); NULL
 *           otherwise
 */
struct tally_metric {
	const char *name;
	const char *help;
	enum tally_metric_type type;
	enum tally_sample_form form;
	struct tally_labels *labels;
	double value;
	uint64_t count;
	double sum;
	size_t n;
	union {
		const struct tally_bucket *buckets;
		const struct tally_quantile *quantiles;
	};
	double sample_rate;
	const char *member;
	const struct tally_interval *interval;
};

/**
 * tally_metric_weight() - how many events a delta or observation stands for
 *
 * Return: 1 / @m->sample_rate, or 1 when the rate is 0 (not sampled).
 */
static inline double tally_metric_weight(const struct tally_metric *m)
{
	return m->sample_rate > 0 ? 1.0 / m->sample_rate : 1.0;
}

/**
 * tally_interval_rate() - an interval record's events per second
 * @m: a metric of form TALLY_FORM_INTERVAL
 *
 * Counters: @m->value / seconds (statsd's ".rate"); other types: the
 * interval's count / seconds (statsd's "count_ps").
 * Return: the rate, or NaN when @m is not an interval record. Pure.
 */
double tally_interval_rate(const struct tally_metric *m);

/**
 * tally_interval_mean() - an interval record's mean observation
 * @m: a metric of form TALLY_FORM_INTERVAL
 *
 * Return: sum / count, or NaN when the interval holds no observation or
 * @m is not an interval record. Pure.
 */
double tally_interval_mean(const struct tally_metric *m);

/**
 * tally_interval_quantile() - one of an interval record's quantiles
 * @m: a metric of form TALLY_FORM_INTERVAL
 * @q: the quantile, in [0, 1], exactly as listed (0.9 for the 90th
 *     percentile); 0.5 also finds @median when not listed
 *
 * Return: its value (NaN for an empty interval), or NaN with errno =
 * ENOENT when @q was not computed. Pure.
 */
double tally_interval_quantile(const struct tally_metric *m, double q);

/** enum tally_span_phase - which edge of a span an event marks */
enum tally_span_phase {
	TALLY_SPAN_BEGIN = 1,
	TALLY_SPAN_END = 2,
};

/* struct tally_span.flags */
#define TALLY_SPAN_ABANDONED	0x1u /* end synthesized: process gone or timed out */
#define TALLY_SPAN_ORPHAN_END	0x2u /* end without a matching begin */
#define TALLY_SPAN_EVICTED	0x4u /* end synthesized: open-span cap reached */
/*
 * Flat streams (the flatten filter): a fragment is a begin and a later end,
 * both flagged FRAGMENT, of the part of a span during which it was the one
 * shown; it carries the span's id, name, parent and depth, and at most one
 * fragment per (trace, host, pid, tid) is open at a time. RESUMED marks
 * every fragment but a span's first; LAST marks the end of its last one,
 * at the span's own end (with the span's other end flags, and the
 * "self_seconds" attribute when computed). A call is counted once by
 * counting LAST ends, or begins without RESUMED.
 */
#define TALLY_SPAN_FRAGMENT	0x8u  /* a piece of a span in a flat stream */
#define TALLY_SPAN_RESUMED	0x10u /* fragment: not the span's first */
#define TALLY_SPAN_LAST		0x20u /* fragment end: the span ends here */
#define TALLY_SPAN_LOST_END	0x40u /* end synthesized: its real end was lost */

/**
 * tally_span_flag_name() - the name outputs write for one TALLY_SPAN_* flag
 * @bit: a single flag bit
 *
 * The flag's name without its prefix, lower case: "abandoned",
 * "orphan_end", "evicted", "fragment", "resumed", "last", "lost_end", so
 * that every output names flags alike. Walk a span's flags from bit 0 up
 * for a stable order.
 * Return: a static string, or NULL when @bit is not one known flag. Pure.
 */
const char *tally_span_flag_name(uint32_t bit);

/** enum tally_attr_type - the type of a typed span attribute */
enum tally_attr_type {
	TALLY_ATTR_T_INT = 1, /* int64_t @i */
	TALLY_ATTR_T_DOUBLE,  /* double @d */
	TALLY_ATTR_T_STRING,  /* const char *@s (arena string, never NULL) */
	TALLY_ATTR_T_BOOL,    /* bool @b */
};

/**
 * struct tally_attr - one typed span attribute
 * @key:  name, non-empty, unique within a span (arena string)
 * @type: enum tally_attr_type, selects the union member
 *
 * Typed attributes carry measurements about a span (bytes read, items
 * processed, flatten's self_seconds) that the aggregate filter sums per
 * region; unlike the span's @attrs label set they are not part of any
 * series' identity. Build them with the initializers below:
 *	struct tally_attr v[] = { TALLY_ATTR_INT("bytes", 4096),
 *				  TALLY_ATTR_DOUBLE("self_seconds", 0.25) };
 */
struct tally_attr {
	const char *key;
	enum tally_attr_type type;
	union {
		int64_t i;
		double d;
		const char *s;
		bool b;
	};
};

#define TALLY_ATTR_INT(k, v) \
	((struct tally_attr){ .key = (k), .type = TALLY_ATTR_T_INT, .i = (v) })
#define TALLY_ATTR_DOUBLE(k, v) \
	((struct tally_attr){   \
		.key = (k), .type = TALLY_ATTR_T_DOUBLE, .d = (v) })
#define TALLY_ATTR_STRING(k, v) \
	((struct tally_attr){   \
		.key = (k), .type = TALLY_ATTR_T_STRING, .s = (v) })
#define TALLY_ATTR_BOOL(k, v) \
	((struct tally_attr){ .key = (k), .type = TALLY_ATTR_T_BOOL, .b = (v) })

/* At most this many typed attributes on one span. */
#define TALLY_SPAN_MAX_VALUES 64

/**
 * struct tally_source - the process a span event came from
 * @host: hostname of the process (arena string, never NULL)
 * @pid:  process id
 * @tid:  thread id (0 when unknown)
 * @rank: launcher rank (MPI, Slurm, Flux...), -1 when unknown
 */
struct tally_source {
	const char *host;
	uint32_t pid;
	uint32_t tid;
	int32_t rank;
};

/**
 * struct tally_span - a span begin or end event
 * @trace:     trace id string (job id, or anything the application chose)
 * @name:      region name (the marker)
 * @span_id:   non-zero id, unique within (trace, source)
 * @parent_id: id of the enclosing span, 0 for a root span
 * @phase:     enum tally_span_phase
 * @depth:     nesting depth, 0 for a root span
 * @flags:     TALLY_SPAN_* flags
 * @nvalues:   number of @values
 * @src:       emitting process
 * @attrs:     identifying attributes as an interned label set (never NULL):
 *             strings an output may add to the labels of what it derives
 *             from the span (the jobid)
 * @begin_ns:  for an end event, the begin timestamp (CLOCK_REALTIME ns) if
 *             known, else 0; for a begin event equal to the record's ts_ns
 * @values:    @nvalues typed attributes (measurements), in the order given,
 *             keys unique; NULL when @nvalues is 0. tally_span_value()
 *             finds one by key.
 */
struct tally_span {
	const char *trace;
	const char *name;
	uint64_t span_id;
	uint64_t parent_id;
	enum tally_span_phase phase;
	uint32_t depth;
	uint32_t flags;
	uint32_t nvalues;
	struct tally_source src;
	struct tally_labels *attrs;
	int64_t begin_ns;
	const struct tally_attr *values;
};

/**
 * tally_span_value() - the typed attribute @key of @sp
 * Return: the attribute (valid while its batch is referenced), or NULL.
 */
const struct tally_attr *tally_span_value(const struct tally_span *sp,
					  const char *key);

/**
 * struct tally_record - one record of a batch
 * @kind:  enum tally_record_kind, selects the union member
 * @ts_ns: CLOCK_REALTIME timestamp in nanoseconds since the epoch
 */
struct tally_record {
	enum tally_record_kind kind;
	int64_t ts_ns;
	union {
		struct tally_metric metric;
		struct tally_span span;
	};
};

/** struct tally_batch - opaque, reference-counted batch of records */
struct tally_batch;

/**
 * tally_batch_new() - a new, empty batch
 *
 * Batches are recycled through a free list, so a steady-state input that
 * emits one batch per tick allocates nothing.
 *
 * Return: a batch with one reference, or NULL with errno = ENOMEM.
 * Thread-safety: any thread.
 */
struct tally_batch *tally_batch_new(void);

/** tally_batch_ref() - take a reference; returns @b */
struct tally_batch *tally_batch_ref(struct tally_batch *b);

/** tally_batch_unref() - drop a reference; NULL is a no-op */
void tally_batch_unref(struct tally_batch *b);

/** tally_batch_count() - number of records; 0 for NULL */
size_t tally_batch_count(const struct tally_batch *b);

/**
 * tally_batch_at() - record @i
 * Return: a pointer valid while @b is referenced, or NULL if out of range.
 */
const struct tally_record *tally_batch_at(const struct tally_batch *b,
					  size_t i);

/**
 * tally_batch_records() - every record, as an array
 * @b: a batch (NULL: none)
 *
 * For filters that look at every record of a batch (rate_limit, flatten):
 * one call per batch instead of tally_batch_at() per record.
 * Return: tally_batch_count(@b) records in order, valid while @b is
 * referenced and nothing is appended to it; NULL when there are none.
 */
const struct tally_record *tally_batch_records(const struct tally_batch *b);

/**
 * tally_batch_source() - instance name of the input that made the batch
 * Return: a string valid while @b is referenced; "" if not set yet.
 */
const char *tally_batch_source(const struct tally_batch *b);

/**
 * tally_batch_set_origin() - mark record @i as read on behalf of other
 * programs, from @origin, rather than measured by the input itself
 * @b:      batch being built (not yet emitted)
 * @i:      index of one of its records
 * @origin: where the record was read, for log lines (a file's path): a
 *          string in @b's arena, in a batch @b borrows from, or static
 *
 * Such a record yields: an output that keys series by name and labels
 * (prometheus) keeps another input's series of the same name and labels
 * over it, and names @origin when it drops it. The textfile input marks
 * what it reads from *.prom files, so a file cannot replace node_load1 of
 * the procfs input. tally_batch_append_from() and tally_batch_select()
 * keep the mark; records rebuilt otherwise (tally_batch_copy_record(),
 * aggregates) lose it.
 * Cost: nothing for batches without marks; an array of pointers for one
 * that has some.
 * Return: 0, or -1 with errno = EINVAL (@i out of range) or ENOMEM.
 */
int tally_batch_set_origin(struct tally_batch *b, size_t i,
			   const char *origin);

/**
 * tally_batch_origin() - the origin of record @i (tally_batch_set_origin())
 * Return: the string, valid while @b is referenced; NULL when the record
 * is the input's own (or @i is out of range).
 */
const char *tally_batch_origin(const struct tally_batch *b, size_t i);

/**
 * tally_batch_interval() - interval of the producing input, in seconds
 *
 * Outputs use it to derive defaults such as a series' expiry.
 * Return: seconds (> 0), or 0 for an event-driven input without interval.
 */
double tally_batch_interval(const struct tally_batch *b);

/**
 * tally_batch_strdup() - copy a string into the batch's arena
 * @b: batch being built
 * @s: NUL-terminated string
 * Return: the copy, or NULL with errno = ENOMEM.
 */
const char *tally_batch_strdup(struct tally_batch *b, const char *s);

/**
 * tally_batch_alloc() - raw arena memory, 16-byte aligned
 * Return: @size bytes valid until the batch is freed, or NULL/ENOMEM.
 */
void *tally_batch_alloc(struct tally_batch *b, size_t size);

/**
 * tally_batch_append() - append a record to fill in place
 * @b: batch being built (not yet emitted)
 *
 * The record is zeroed (a cumulative sample, if it becomes a metric).
 * Strings and arrays it points to must live in the arena
 * (tally_batch_strdup()), in a batch @b borrows from, or in static storage;
 * a label set stored in it must be a reference the batch now owns (it is
 * unreferenced with the batch). The pointer is valid until the next append.
 *
 * Return: the new record, or NULL with errno = ENOMEM.
 */
struct tally_record *tally_batch_append(struct tally_batch *b);

/**
 * tally_batch_append_from() - append record @i of @src without copying it
 * @b:   batch being built (not yet emitted); not @src
 * @src: any batch, emitted or not (a filter's input)
 * @i:   index of the record in @src
 *
 * The record struct is copied; its strings and arrays are not: they stay
 * in @src's arena (or wherever @src borrowed them from), and @b keeps a
 * reference on @src until @b is freed. The label sets (metric labels, span
 * attrs) get a reference @b owns, so the caller may replace them as with
 * tally_batch_append(). The borrowed strings and arrays are read-only: to
 * change one, point the record at a new string in @b's arena.
 *
 * Cost: no arena allocation, one label reference; @src is referenced once
 * however many of its records are appended in a row.
 * Return: the new record (valid until the next append), or NULL with
 * errno = ENOMEM, or EINVAL (@i out of range, @src == @b).
 */
struct tally_record *tally_batch_append_from(struct tally_batch *b,
					     struct tally_batch *src, size_t i);

/**
 * tally_batch_select() - a new batch of some of @src's records, borrowed
 * @src:  any batch (a filter's input)
 * @keep: tally_batch_count(@src) flags, true for the records to keep, in
 *        order; NULL keeps them all
 *
 * For filters that pass most records unchanged (rate_limit drops some,
 * flatten adds a few): nothing is deep-copied, as with
 * tally_batch_append_from(). The result is a new batch, not yet emitted:
 * the filter may append records of its own before returning it. When a
 * filter keeps every record and adds none, returning tally_batch_ref(@src)
 * is cheaper still.
 *
 * Return: a batch with one reference, or NULL with errno = ENOMEM.
 * Thread-safety: as tally_batch_new().
 */
struct tally_batch *tally_batch_select(struct tally_batch *src,
				       const bool *keep);

/**
 * struct tally_keep - a filter's reusable keep flags for tally_batch_select()
 * @flags: @cap flags, owned; NULL before the first tally_keep_reserve()
 * @cap:   how many @flags holds
 *
 * Zero-initialized it is empty; a filter keeps one in its state, reserves
 * room for each batch and frees it with the state. Not thread-safe: one
 * per filter instance (the loop thread).
 */
struct tally_keep {
	bool *flags;
	size_t cap;
};

/**
 * tally_keep_reserve() - room for @n flags in @k
 *
 * Grows by doubling (from 256), so a steady batch size allocates once.
 * The flags' values are unspecified: the caller sets the first @n.
 * Return: @k->flags, or NULL with errno = ENOMEM (@k unchanged).
 */
bool *tally_keep_reserve(struct tally_keep *k, size_t n);

/** tally_keep_free() - free @k's flags; @k is empty again. */
void tally_keep_free(struct tally_keep *k);

/**
 * tally_batch_forms() - the sample forms present in a batch
 *
 * Return: a set of TALLY_FORM_BIT() bits, TALLY_FORM_BIT(
 * TALLY_FORM_CUMULATIVE) included when a cumulative sample is there; 0 for
 * a batch of spans only. O(1) for batches built with the add functions,
 * appends from other batches and copies; a batch with records filled in
 * place (tally_batch_append()) is scanned until the core emits it.
 */
unsigned tally_batch_forms(const struct tally_batch *b);

/**
 * tally_batch_add_metric() - append a counter, gauge, info or untyped sample
 * @b:      batch being built
 * @type:   TALLY_COUNTER, TALLY_GAUGE, TALLY_INFO or TALLY_UNTYPED
 * @name:   metric name (copied); must be non-empty
 * @help:   help text, copied; NULL for none
 * @labels: label set; the batch takes its own reference; NULL = empty set
 * @value:  sample value (NaN and +/-Inf allowed)
 * @ts_ns:  CLOCK_REALTIME ns, or 0 for "now"
 *
 * Return: 0, or -1 with errno = ENOMEM, or EINVAL (empty name, bad type).
 */
int tally_batch_add_metric(struct tally_batch *b, enum tally_metric_type type,
			   const char *name, const char *help,
			   struct tally_labels *labels, double value,
			   int64_t ts_ns);

/**
 * tally_batch_add_delta() - append a counter increment or gauge adjustment
 * @type:        TALLY_COUNTER or TALLY_GAUGE
 * @delta:       the change since the previous sample of the series; finite
 * @sample_rate: fraction of events the sender kept, in (0, 1]; 1 if it
 *               kept them all (statsd's "@0.1" is 0.1)
 * Other parameters as tally_batch_add_metric().
 *
 * Appends a TALLY_FORM_DELTA sample (see enum tally_sample_form).
 * Return: 0, or -1 with errno = ENOMEM, or EINVAL (bad type, empty name,
 * non-finite delta, rate outside (0, 1]).
 */
int tally_batch_add_delta(struct tally_batch *b, enum tally_metric_type type,
			  const char *name, const char *help,
			  struct tally_labels *labels, double delta,
			  double sample_rate, int64_t ts_ns);

/**
 * tally_batch_add_observation() - append one observed value
 * @type:        TALLY_HISTOGRAM or TALLY_SUMMARY: what it should become
 * @value:       the observation in the metric's base unit (seconds for a
 *               timer); finite
 * @sample_rate: as tally_batch_add_delta()
 * Other parameters as tally_batch_add_metric().
 *
 * Appends a TALLY_FORM_OBSERVATION sample.
 * Return: 0, or -1 with errno = ENOMEM or EINVAL, as tally_batch_add_delta().
 */
int tally_batch_add_observation(struct tally_batch *b,
				enum tally_metric_type type, const char *name,
				const char *help, struct tally_labels *labels,
				double value, double sample_rate,
				int64_t ts_ns);

/**
 * tally_batch_add_set_member() - append one member of a set
 * @member: the member, any string (copied)
 * Other parameters as tally_batch_add_metric().
 *
 * Appends a TALLY_FORM_SET_MEMBER sample of type TALLY_GAUGE.
 * Return: 0, or -1 with errno = ENOMEM, or EINVAL (empty name, NULL member).
 */
int tally_batch_add_set_member(struct tally_batch *b, const char *name,
			       const char *help, struct tally_labels *labels,
			       const char *member, int64_t ts_ns);

/**
 * tally_batch_add_histogram() - append a histogram sample
 * @buckets: @n cumulative buckets sorted by le (copied); a final +Inf
 *           bucket equal to @count is added if the last le is finite
 * @count:   number of observations
 * @sum:     sum of observations
 * Other parameters as tally_batch_add_metric().
 *
 * Return: 0, or -1 with errno = ENOMEM, or EINVAL (unsorted buckets,
 * decreasing counts).
 */
int tally_batch_add_histogram(struct tally_batch *b, const char *name,
			      const char *help, struct tally_labels *labels,
			      const struct tally_bucket *buckets, size_t n,
			      uint64_t count, double sum, int64_t ts_ns);

/**
 * tally_batch_add_summary() - append a summary sample
 * @quantiles: @n quantiles sorted by q, each in [0, 1] (copied)
 * Other parameters as tally_batch_add_histogram().
 *
 * Return: 0, or -1 with errno = ENOMEM or EINVAL.
 */
int tally_batch_add_summary(struct tally_batch *b, const char *name,
			    const char *help, struct tally_labels *labels,
			    const struct tally_quantile *quantiles, size_t n,
			    uint64_t count, double sum, int64_t ts_ns);

/**
 * tally_batch_add_interval() - append an interval record
 * @b:      batch being built
 * @type:   TALLY_COUNTER, TALLY_GAUGE, TALLY_HISTOGRAM or TALLY_SUMMARY:
 *          what the series is (see struct tally_interval for @value)
 * @name:   metric name as received (statsd's dotted names stay dotted:
 *          each output makes it valid for its format), copied
 * @help:   help text, copied; NULL for none
 * @labels: label set; the batch takes its own reference; NULL = empty set
 * @value:  counters: the interval's total; gauges: the level (or distinct
 *          members); 0 for histograms and summaries
 * @iv:     the interval's figures; copied with its quantiles and buckets
 *          (the caller keeps ownership). @iv->buckets, if any, sorted by
 *          le with counts not decreasing; a final +Inf bucket holding
 *          llround(@iv->count) is added when the last le is finite.
 *          @iv->quantiles sorted by q, each in [0, 1]
 * @ts_ns:  the interval's end, CLOCK_REALTIME ns (0: now); @iv->start_ns
 *          must be before it. The copy's seconds is set from the two
 *          (@iv->seconds is not read)
 *
 * Appends a TALLY_FORM_INTERVAL sample.
 * Return: the record (valid until the next append), or NULL with errno =
 * ENOMEM, or EINVAL (bad type, empty name, NULL @iv, @iv->start_ns not
 * before @ts_ns, a negative or non-finite count, unsorted quantiles or
 * buckets, a quantile outside [0, 1]).
 */
struct tally_record *tally_batch_add_interval(struct tally_batch *b,
					      enum tally_metric_type type,
					      const char *name,
					      const char *help,
					      struct tally_labels *labels,
					      double value,
					      const struct tally_interval *iv,
					      int64_t ts_ns);

/**
 * tally_batch_add_span() - append a span event
 * @span:  the event; its strings and typed values are copied and its attrs
 *         (NULL = empty set) referenced by the batch
 * @ts_ns: CLOCK_REALTIME ns of the event, or 0 for "now"
 *
 * Return: 0, or -1 with errno = ENOMEM, or EINVAL (NULL trace or name,
 * bad phase, a bad typed value: see tally_batch_span_set_value()).
 */
int tally_batch_add_span(struct tally_batch *b, const struct tally_span *span,
			 int64_t ts_ns);

/**
 * tally_batch_span_set_value() - add or replace a typed attribute of a span
 * @b:   the batch @rec is in, not yet emitted
 * @rec: a span record of @b (from an add, copy or append)
 * @v:   the attribute (key and string copied): a non-empty key, a known
 *       type, a non-NULL string for TALLY_ATTR_T_STRING
 *
 * For filters that annotate spans they pass on (flatten's self_seconds).
 * The span's values array is rebuilt in @b's arena; a borrowed one is left
 * as it is in its own batch.
 * Return: 0, or -1 with errno = ENOMEM, or EINVAL (not a span, bad @v,
 * TALLY_SPAN_MAX_VALUES reached).
 */
int tally_batch_span_set_value(struct tally_batch *b, struct tally_record *rec,
			       const struct tally_attr *v);

/**
 * tally_batch_copy_record() - append a deep copy of a record
 * @b:   batch being built
 * @rec: record of any batch (strings and arrays are deep-copied into @b)
 *
 * For filters that rewrite most of what they pass on; to pass records on
 * unchanged, tally_batch_append_from() and tally_batch_select() copy
 * nothing.
 * Return: the copy (valid until the next append), or NULL/ENOMEM.
 */
struct tally_record *tally_batch_copy_record(struct tally_batch *b,
					     const struct tally_record *rec);

/** tally_now_ns() - CLOCK_REALTIME in nanoseconds */
int64_t tally_now_ns(void);

/** tally_monotonic_ns() - CLOCK_MONOTONIC in nanoseconds */
int64_t tally_monotonic_ns(void);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_RECORD_H */
