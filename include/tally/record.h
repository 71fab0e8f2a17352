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
 * arena and is freed with the batch. The add functions copy what they are
 * given, so callers may pass stack buffers. Label sets are interned
 * (tally/labels.h); the batch holds one reference per record that names one.
 *
 * Thread-safety: building a batch is single-threaded. Once emitted, reading
 * a batch and tally_batch_ref()/tally_batch_unref() are safe from any thread.
 */
#ifndef TALLY_RECORD_H
#define TALLY_RECORD_H

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
 */
enum tally_metric_type {
	TALLY_COUNTER = 1,
	TALLY_GAUGE,
	TALLY_HISTOGRAM,
	TALLY_SUMMARY,
	TALLY_INFO,
};

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

/**
 * struct tally_metric - a metric sample
 * @name:    Prometheus-style name, base units, counters end in "_total"
 * @help:    one-line description or NULL
 * @type:    enum tally_metric_type
 * @labels:  interned label set (never NULL; the empty set for none)
 * @value:   sample value for counters, gauges and info; NaN/Inf allowed
 * @count:   histogram/summary observation count
 * @sum:     histogram/summary sum of observations
 * @n:       number of @buckets (histogram) or @quantiles (summary)
 * @buckets: histogram buckets, sorted by le, last one +Inf
 * @quantiles: summary quantiles, sorted by q
 */
struct tally_metric {
	const char *name;
	const char *help;
	enum tally_metric_type type;
	struct tally_labels *labels;
	double value;
	uint64_t count;
	double sum;
	size_t n;
	union {
		const struct tally_bucket *buckets;
		const struct tally_quantile *quantiles;
	};
};

/** enum tally_span_phase - which edge of a span an event marks */
enum tally_span_phase {
	TALLY_SPAN_BEGIN = 1,
	TALLY_SPAN_END = 2,
};

/* struct tally_span.flags */
#define TALLY_SPAN_ABANDONED	0x1u /* end synthesized: process gone or timed out */
#define TALLY_SPAN_ORPHAN_END	0x2u /* end without a matching begin */
#define TALLY_SPAN_EVICTED	0x4u /* end synthesized: open-span cap reached */

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
 * @src:       emitting process
 * @attrs:     extra attributes as an interned label set (never NULL)
 * @begin_ns:  for an end event, the begin timestamp (CLOCK_REALTIME ns) if
 *             known, else 0; for a begin event equal to the record's ts_ns
 */
struct tally_span {
	const char *trace;
	const char *name;
	uint64_t span_id;
	uint64_t parent_id;
	enum tally_span_phase phase;
	uint32_t depth;
	uint32_t flags;
	struct tally_source src;
	struct tally_labels *attrs;
	int64_t begin_ns;
};

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
 * tally_batch_source() - instance name of the input that made the batch
 * Return: a string valid while @b is referenced; "" if not set yet.
 */
const char *tally_batch_source(const struct tally_batch *b);

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
 * The record is zeroed. Strings it points to must live in the arena
 * (tally_batch_strdup()) or in static storage; a label set stored in it must
 * be a reference the batch now owns (it is unreferenced with the batch).
 * The pointer is valid until the next append.
 *
 * Return: the new record, or NULL with errno = ENOMEM.
 */
struct tally_record *tally_batch_append(struct tally_batch *b);

/**
 * tally_batch_add_metric() - append a counter, gauge or info sample
 * @b:      batch being built
 * @type:   TALLY_COUNTER, TALLY_GAUGE or TALLY_INFO
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
 * tally_batch_add_span() - append a span event
 * @span:  the event; its strings are copied and its attrs (NULL = empty set)
 *         referenced by the batch
 * @ts_ns: CLOCK_REALTIME ns of the event, or 0 for "now"
 *
 * Return: 0, or -1 with errno = ENOMEM, or EINVAL (NULL trace or name,
 * bad phase).
 */
int tally_batch_add_span(struct tally_batch *b, const struct tally_span *span,
			 int64_t ts_ns);

/**
 * tally_batch_copy_record() - append a copy of a record from another batch
 * @b:   batch being built
 * @rec: record of any batch (strings and arrays are deep-copied into @b)
 *
 * For filters that pass some records through and rewrite others.
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
