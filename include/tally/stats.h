/* SPDX-License-Identifier: MIT */
/*
 * tally/stats.h - the core's per-instance counters, for the self input
 *
 * Every instance counts records in and out, reads and their duration, its
 * output queue and every item it dropped, by reason (tally_count_drop() in
 * tally/log.h) and, where a plugin says who caused it, by key
 * (tally_count_drop_key() below). The self input walks these and exports
 * them as metrics; nothing else should need to.
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

/* Keys tally_count_drop_key() tracks per instance; the rest is "other". */
#define TALLY_STATS_MAX_KEYS 64
/* Bytes of a key kept, NUL included; longer keys are cut (UTF-8 safe). */
#define TALLY_STATS_KEY_LEN 64
/* Seconds without a drop after which a key's slot may go to a new key. */
#define TALLY_STATS_KEY_IDLE 300

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
 * struct tally_stats_keyed_drop - items dropped for one reason and key
 * @reason: the static reason string given to tally_count_drop_key()
 * @key:    the key (cut to TALLY_STATS_KEY_LEN - 1 bytes), or "other"
 * @n:      items dropped since the key got its slot (monotonic while the
 *          key keeps it; "other" is monotonic for the process life)
 */
struct tally_stats_keyed_drop {
	const char *reason;
	char key[TALLY_STATS_KEY_LEN];
	uint64_t n;
};

/**
 * tally_count_drop_key() - count dropped items by reason and key
 * @inst:   the instance that dropped them (NULL: counted for the core)
 * @reason: as tally_count_drop(): static snake_case, e.g. "rate_limited"
 * @key:    who the items came from, e.g. "node17:4711" for a source
 *          process; copied, cut to TALLY_STATS_KEY_LEN - 1 bytes at a
 *          UTF-8 character boundary
 * @n:      number of items dropped
 *
 * Counts @n under @reason as tally_count_drop() does (so
 * tally_dropped_total{reason} stays the total) and also under (@reason,
 * @key), exported by the self input as
 * tally_dropped_by_key_total{reason, key}. Keys are bounded: an instance
 * tracks at most TALLY_STATS_MAX_KEYS. When they are all taken, a new key
 * takes the slot of the key idle longest if that one has dropped nothing
 * for TALLY_STATS_KEY_IDLE seconds (its count moves to key "other"), else
 * the new key's items are counted under key "other". So for each reason
 * the per-key counts, "other" included, always add up to the reason's
 * total of keyed drops, however many keys come and go, and the busiest
 * keys keep their slots under a flood of new ones.
 *
 * Thread-safety: any thread. Cost: one lock and a scan of the instance's
 * keys (compared by hash first).
 */
void tally_count_drop_key(struct tally_instance *inst, const char *reason,
			  const char *key, uint64_t n);

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
 * @queue_cap:    capacity of that queue in batches (outputs; 0 otherwise)
 * @queue_records: records in those batches, plus what the output accepted
 *                and still holds (tally_output_held(): a request being
 *                retried) (outputs)
 * @queue_records_cap: capacity of the queue in records (outputs)
 * @ndrops:       number of entries in @drops
 * @drops:        dropped items by reason
 * @nevents:      number of entries in @events
 * @events:       other counted events by name (tally_count_event(); the
 *                reason field holds the event name)
 * @nkeyed:       number of entries in @keyed
 * @keyed:        drops counted by tally_count_drop_key(), by reason and
 *                key, then each reason's "other" entry if it has one
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
	size_t queue_records;
	size_t queue_records_cap;
	size_t ndrops;
	struct tally_stats_drop drops[TALLY_STATS_MAX_DROPS];
	size_t nevents;
	struct tally_stats_drop events[TALLY_STATS_MAX_DROPS];
	size_t nkeyed;
	struct tally_stats_keyed_drop
		keyed[TALLY_STATS_MAX_KEYS + TALLY_STATS_MAX_DROPS];
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
