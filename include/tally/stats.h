/* SPDX-License-Identifier: MIT */
/*
 * tally/stats.h - the core's per-instance counters, for the self input
 *
 * Every instance counts records in and out, reads and their duration, its
 * output queue and every item it dropped, by reason (tally_count_drop() in
 * tally/log.h). The self input walks these and exports them as metrics;
 * nothing else should need to.
 */
#ifndef TALLY_STATS_H
#define TALLY_STATS_H

#include <stddef.h>
#include <stdint.h>

#include <tally/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TALLY_STATS_MAX_DROPS 32

/**
 * struct tally_stats_drop - items dropped for one reason
 * @reason: the static reason string given to tally_count_drop()
 * @n:      items dropped since start (monotonic)
 */
struct tally_stats_drop {
	const char *reason;
	uint64_t n;
};

/**
 * struct tally_instance_stats - a snapshot of one instance's counters
 * @name:         instance name ("tallyd" for the core itself)
 * @plugin:       plugin name ("core" for the core itself)
 * @kind:         plugin kind (0 for the core itself)
 * @pipeline:     for filters, the pipeline this instance belongs to; NULL
 *                otherwise
 * @records_in:   records received (filters, outputs)
 * @records_out:  records emitted (inputs, filters) or written (outputs)
 * @reads:        completed periodic reads (inputs)
 * @read_seconds: total wall time spent in read(), seconds
 * @queue_len:    batches waiting in the output's queue (outputs)
 * @queue_cap:    capacity of that queue (outputs; 0 otherwise)
 * @ndrops:       number of entries in @drops
 * @drops:        dropped items by reason
 * @nevents:      number of entries in @events
 * @events:       other counted events by name (tally_count_event(); the
 *                reason field holds the event name)
 *
 * Strings are valid during the callback only.
 */
struct tally_instance_stats {
	const char *name;
	const char *plugin;
	int kind;
	const char *pipeline;
	uint64_t records_in;
	uint64_t records_out;
	uint64_t reads;
	double read_seconds;
	size_t queue_len;
	size_t queue_cap;
	size_t ndrops;
	struct tally_stats_drop drops[TALLY_STATS_MAX_DROPS];
	size_t nevents;
	struct tally_stats_drop events[TALLY_STATS_MAX_DROPS];
};

/**
 * tally_stats_foreach() - call @cb with a snapshot of every instance
 * @cb:  callback; a non-zero return stops the walk and is returned
 * @arg: passed to @cb
 *
 * The core itself comes first (its drops are those counted with a NULL
 * instance), then instances in configuration order.
 * Loop thread only (from an input's read or start callbacks).
 * Return: 0, the first non-zero value @cb returned, or -1 with errno =
 * ENODEV when no collector is running.
 */
int tally_stats_foreach(int (*cb)(const struct tally_instance_stats *st,
				  void *arg),
			void *arg);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_STATS_H */
