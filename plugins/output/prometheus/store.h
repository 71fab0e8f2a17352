/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/prometheus/store.h - the prometheus output's series store
 *
 * Private to the prometheus output (and its unit tests and render
 * benchmark). The store turns batches into series and renders them:
 *
 *   - a family per exposed metric name, holding one HELP and one TYPE
 *     (cached as text) and its series; families are kept in an array sorted
 *     by name, re-sorted only when one is added or removed;
 *   - a series per (raw name, interned label set pointer), found through a
 *     hash table, with its sample lines rendered to text when it is updated,
 *     so that a scrape only copies bytes. Within a family series are sorted
 *     by their label text; new series are appended unsorted and merged in
 *     at the next scrape, so steady-state scrapes sort nothing;
 *   - span state: the open spans and, per region, how many are open and
 *     the time of those that ended, rendered at scrape time.
 *
 * Everything runs on the event loop thread: a batch is applied within one
 * prom_store_apply() call and a scrape renders within one
 * prom_store_render() call, so a scrape never sees part of a batch.
 * Not thread-safe.
 */
#ifndef PROM_STORE_H
#define PROM_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/plugin.h>

struct evbuffer;
struct prom_store;

/** enum prom_format - what a scrape asked for */
enum prom_format {
	PROM_FMT_TEXT,	      /* text/plain; version=0.0.4 */
	PROM_FMT_OPENMETRICS, /* application/openmetrics-text; 1.0.0 */
};

/* Which series spans become (option span_metrics). */
enum prom_span_metrics {
	PROM_SPANS_TALLY,    /* tally_trace_region_{active,seconds_total} */
	PROM_SPANS_OMNISTAT, /* rmsjob_annotations{marker,jobid,traceid} */
	PROM_SPANS_BOTH,
	PROM_SPANS_NONE, /* spans are ignored */
};

/**
 * struct prom_store_opts - behaviour of a store
 * @expire_ns:    series lifetime without update; 0 = expire_factor times
 *                the producing input's interval (tally_batch_interval())
 * @expire_factor: see @expire_ns
 * @expire_event_ns: when @expire_ns is 0, the lifetime of series whose
 *                input has no interval (event-driven), and of span regions
 *                after their last end whatever the input's interval: spans
 *                come and go at the application's pace, not the input's
 * @grace_ns:     how long a region's active gauge shows 0 after its last
 *                span ended; a span region lives at least this long
 * @span_metrics: enum prom_span_metrics
 * @depth_label:  add depth="N" to the tally_trace_region_* label sets
 * @jobid:        jobid label of rmsjob_annotations when a span carries no
 *                "jobid" attribute; NULL or "" for none (copied)
 * @max_open_spans: open spans tracked at once; further begins are dropped
 *                (0: 100000; at most PROM_MAX_OPEN_SPANS)
 * @max_series:   series kept at once (a histogram, a summary and a span
 *                region count one each), tallyd's own series aside (see
 *                PROM_SELF_SERIES); a record that would add one more is
 *                dropped (0: no limit)
 * @labels:       static labels added to every series where its own labels
 *                lack the key (tally_output_labels()); NULL for none. The
 *                store takes a reference.
 * @local_host:   this host's name: open spans of processes of this host
 *                (pids 1..INT32_MAX) are watched, so that no region stays
 *                open after its process (see prom_store_render()); NULL:
 *                gethostname() (copied)
 * @pid_alive:    whether a process of this host runs; NULL: tally_pid_alive()
 *                does not fail with ESRCH (tests give their own)
 * @attributes:   keys of numeric span attributes (typed values) whose sum
 *                per region is exported as tally_trace_region_KEY_total,
 *                a counter with the region's labels, at each span end; NULL
 *                or empty for none (copied)
 */
struct prom_store_opts {
	int64_t expire_ns;
	double expire_factor;
	int64_t expire_event_ns;
	int64_t grace_ns;
	enum prom_span_metrics span_metrics;
	bool depth_label;
	const char *jobid;
	size_t max_open_spans;
	size_t max_series;
	struct tally_labels *labels;
	const char *local_host;
	bool (*pid_alive)(uint32_t pid);
	const struct tally_strlist *attributes;
};

/*
 * Bound on max_open_spans: it keeps the per-region sums of open spans'
 * begin times within int64_t (see struct prom_region in store.c).
 */
#define PROM_MAX_OPEN_SPANS 100000000

/*
 * Series of tallyd's own metrics (prom_series_is_self()) do not count
 * against max_series: they have room of their own, this many, so that the
 * self input's series (drops by reason, among them series_limit, queues,
 * process metrics) are shown even when user series fill max_series. The
 * self input exports about 10 series per instance plus one per drop reason
 * and event name, so this is room for hundreds of instances, and still a
 * bound when an input names its metrics tally_* by the thousand.
 */
#define PROM_SELF_SERIES 10000

/**
 * prom_series_is_self() - whether a metric is one of tallyd's own: its raw
 * name starts with "tally_" (tally_dropped_total, tally_build_info...) or
 * "process_" (the self input's process_cpu_seconds_total...). Span series
 * (tally_trace_region_*) are the application's, not tallyd's: they are
 * not metrics and count against max_series.
 */
bool prom_series_is_self(const char *raw_name);

/**
 * struct prom_store_stats - what the store dropped and why, for tests and
 * logs (each is also reported with tally_count_drop() under the same name)
 */
struct prom_store_stats {
	uint64_t type_conflict;	   /* name already used with another type */
	uint64_t name_collision;   /* sample names clash with another family */
	uint64_t label_collision;  /* two label keys sanitize to one name */
	uint64_t series_collision; /* another raw series exposes the same */
	uint64_t source_collision; /* a record read from a file (a textfile's,
				    * tally_batch_set_origin()) for a series
				    * another input exports */
	uint64_t bad_histogram;	   /* unsorted buckets, +Inf != count */
	uint64_t span_open_limit;  /* begin beyond max_open_spans */
	uint64_t span_duplicate;   /* begin of a span already open */
	uint64_t series_limit;	   /* a new series beyond max_series */
	uint64_t bad_delta;	   /* a negative counter delta, not a delta */
	uint64_t not_finite;	   /* a delta or total infinite or NaN */
	uint64_t nomem;
	uint64_t span_process_gone; /* open spans of a process found gone (not
				     * a drop: they stop counting) */
};

/**
 * prom_store_new() - an empty store
 * @o:    options (copied)
 * @inst: instance for logs and drop counters; may be NULL (tests)
 * Return: the store, or NULL with errno = ENOMEM.
 */
struct prom_store *prom_store_new(const struct prom_store_opts *o,
				  struct tally_instance *inst);

/** prom_store_free() - free a store and everything in it; NULL is a no-op */
void prom_store_free(struct prom_store *s);

/**
 * prom_store_apply() - apply every record of a batch
 * @s:       the store
 * @b:       the batch (not kept: values are copied)
 * @now_ns:  CLOCK_MONOTONIC ns, the time of arrival that expiry counts from
 *
 * Records that cannot be exposed are dropped and counted (struct
 * prom_store_stats); the others are applied. Delta samples
 * (TALLY_FORM_DELTA) are added to their series' last value: a counter
 * increment times its weight (1 / sample rate) into the cumulative
 * counter, a gauge adjustment into the gauge, a new or expired series
 * starting from 0. Interval records (TALLY_FORM_INTERVAL, the aggregate
 * filter's) accumulate likewise: a counter adds the interval's total, a
 * gauge takes its level, a histogram adds the interval's bucket counts,
 * sum and count, a summary adds sum and count and shows the interval's
 * quantiles (the last interval's: quantiles do not add up). A negative
 * counter delta or interval total, and any other non-cumulative form, is
 * dropped as bad_delta; interval buckets whose bounds changed, as
 * bad_histogram.
 * A series belongs to the input it was last updated by
 * (tally_batch_source()). Records an input read from files on behalf of
 * other programs (tally_batch_origin(): the textfile input's) yield: such a
 * record for a series another input exports is dropped as
 * source_collision (logged once per series, naming the file), and another
 * input's record takes over a series only files wrote (with its family,
 * if of another type). Between inputs' own records the last is shown.
 * Return: 0, or -1 with errno = ENOMEM when at least one record was dropped
 * for lack of memory (the rest were applied).
 */
int prom_store_apply(struct prom_store *s, const struct tally_batch *b,
		     int64_t now_ns);

/**
 * prom_store_sweep() - remove series whose lifetime has passed
 * @now_ns: CLOCK_MONOTONIC ns
 * Return: number of series removed.
 */
size_t prom_store_sweep(struct prom_store *s, int64_t now_ns);

/**
 * prom_store_render() - append the exposition to @out
 * @fmt:     enum prom_format
 * @now_ns:  CLOCK_MONOTONIC ns (expiry and grace periods)
 * @real_ns: CLOCK_REALTIME ns (elapsed time of spans still open)
 *
 * Sweeps first, so nothing expired is shown. Then asks each process of
 * this host that has open spans whether it still runs: the open spans of
 * one that is gone stop counting at the last time it was found running
 * (at a scrape, or its span's begin if later), and their regions are no
 * longer active, whether or not the input that sent them ever ends them
 * (a reload may have rewired it elsewhere). An end arriving later counts
 * its span to its own time instead. So a region never counts, and never
 * shows open, past its process (local processes; a scrape costs one
 * tally_pid_alive() per process with open spans).
 * Return: 0, or -1 with errno = ENOMEM (@out then holds a partial
 * exposition the caller must discard).
 */
int prom_store_render(struct prom_store *s, struct evbuffer *out,
		      enum prom_format fmt, int64_t now_ns, int64_t real_ns);

/**
 * prom_store_generation() - a number that changes whenever a batch is
 * applied or a sweep removes series, so that two renders of one generation
 * differ only in what depends on the scrape time (spans still open, the
 * grace period of regions, expiry)
 */
uint64_t prom_store_generation(const struct prom_store *s);

/**
 * prom_store_spans_open() - how many open spans the regions count (a span
 * counts once per series it shows in: region, annotation): while any is,
 * a render shows its region's seconds up to the scrape's time, so
 * no two scrapes may share a page
 */
uint64_t prom_store_spans_open(const struct prom_store *s);

/** prom_store_series() - number of series (span regions included) */
size_t prom_store_series(const struct prom_store *s);

/** prom_store_stats() - drop counters since the store was made */
const struct prom_store_stats *prom_store_stats(const struct prom_store *s);

#endif /* PROM_STORE_H */
