/* SPDX-License-Identifier: MIT */
/*
 * plugins/filter/rate_limit/state.h - token buckets over span streams
 *
 * One token bucket per key: per source process (host, pid: the default),
 * per trace id, per input instance, or one for everything. A bucket holds
 * up to @burst tokens and gains @rate tokens a second; a new key starts
 * full. A span **begin** takes one token and is dropped when none is left
 * (reason RL_LIMITED). Everything else follows from keeping the stream
 * well formed downstream:
 *   - an end never takes a token: the end of a begin that was passed is
 *     passed, over the limit too, so an open span always gets its end;
 *   - the end of a begin that was dropped is dropped (RL_END), so no end
 *     goes on without its begin;
 *   - a begin whose parent span was dropped and is still open is dropped
 *     too (RL_PARENT), without taking a token, so a passed span never has
 *     a dropped parent open around it: what is dropped is whole subtrees.
 * Dropped begins whose end is due are remembered per span, by (trace, host,
 * pid, tid, span id) whatever the key, up to @max_pending over all keys.
 * When that table is full a begin over the limit is passed (counted,
 * pending_full) rather than dropped untracked: the stream stays well formed
 * and the limit gives way. zmq_trace ends every begin (abandoned spans
 * included), so the table drains.
 *
 * Ends whose begin the filter never saw (lost upstream) pass: this filter
 * never makes such an end, it does not hide one either. Records of other
 * phases pass.
 *
 * Keys are kept in a bounded table (tally/lru.h): at @max_keys, a new key
 * forgets the key used longest ago (counted, keys_evicted), which then
 * starts again with a full bucket if it comes back. A key left idle long
 * enough for its bucket to be full again is forgotten by
 * rl_state_expire() at no cost to the limit's accuracy.
 *
 * Drops are counted per key and reason, and handed to the report callback
 * by rl_state_flush() (and before a key is forgotten), so a filter passes
 * them to tally_count_drop_key() once per batch rather than once per
 * record.
 *
 * Time is passed in (CLOCK_MONOTONIC ns): the state is pure and testable.
 * Thread-safety: none; one state belongs to one filter instance.
 */
#ifndef RATE_LIMIT_STATE_H
#define RATE_LIMIT_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/record.h>

/** enum rl_key - what a bucket is per */
enum rl_key {
	RL_KEY_PROCESS = 0, /* host and pid: key "host:pid" */
	RL_KEY_TRACE,	    /* trace id: the key is the trace id */
	RL_KEY_INPUT,	    /* input instance: the key is its name */
	RL_KEY_GLOBAL,	    /* one bucket: key "global" */
};

/** enum rl_verdict - what becomes of a record */
enum rl_verdict {
	RL_PASS = 0,
	RL_LIMITED, /* a begin over the limit: "rate_limited" */
	RL_PARENT,  /* a begin inside a dropped span: "parent_limited" */
	RL_END,	    /* the end of a dropped begin: "limited_end" */
	RL_NVERDICTS
};

/**
 * struct rl_opts - behaviour and limits of a state
 * @key:         enum rl_key
 * @rate:        tokens (span begins) per second per key, > 0
 * @burst:       tokens a bucket holds, >= 1
 * @max_keys:    keys kept, >= 1
 * @max_pending: dropped begins whose end is due, over all keys, >= 1
 * @report:      called with counts of drops of one key and reason (> 0)
 *               by rl_state_flush() and before a key is forgotten; NULL: not
 *               reported. @key is valid for the call only.
 * @ctx:         passed back to @report
 */
struct rl_opts {
	enum rl_key key;
	double rate;
	double burst;
	uint32_t max_keys;
	uint32_t max_pending;
	void (*report)(void *ctx, const char *key, enum rl_verdict why,
		       uint64_t n);
	void *ctx;
};

/**
 * struct rl_counters - running totals, never reset
 * @passed:       span begins passed (ends and other records not counted)
 * @dropped:      records dropped, by enum rl_verdict (RL_PASS unused)
 * @pending_full: begins over the limit passed as the pending table was full
 * @nomem:        begins over the limit passed as no memory was left to
 *                remember them (the stream stays well formed)
 * @keys_evicted: keys forgotten to make room (max_keys)
 * @keys_expired: idle keys forgotten, their buckets full again
 */
struct rl_counters {
	uint64_t passed;
	uint64_t dropped[RL_NVERDICTS];
	uint64_t pending_full;
	uint64_t nomem;
	uint64_t keys_evicted;
	uint64_t keys_expired;
};

struct rl_state;

/**
 * rl_state_new() - an empty state
 * Return: the state, or NULL with errno = ENOMEM, or EINVAL (rate <= 0,
 * burst < 1, burst / rate above 4e9 s, a limit of 0, an unknown key).
 */
struct rl_state *rl_state_new(const struct rl_opts *opts);

/** rl_state_free() - free a state (unreported drops are reported); NULL ok */
void rl_state_free(struct rl_state *st);

/**
 * rl_state_span() - decide one span record
 * @st:     state
 * @sp:     the span; its strings are copied where kept
 * @input:  name of the input the record came from (RL_KEY_INPUT); may be
 *          NULL (key "")
 * @now_ns: CLOCK_MONOTONIC ns, never decreasing; the same for a whole batch
 *          is fine
 *
 * Return: RL_PASS, or why the record is to be dropped (counted). Never
 * fails: lacking memory, a record is passed (counted in nomem).
 */
enum rl_verdict rl_state_span(struct rl_state *st, const struct tally_span *sp,
			      const char *input, int64_t now_ns);

/**
 * rl_state_records() - decide the records of a batch
 * @recs:   @n records (tally_batch_records()); metric records pass
 * @keep:   room for @n flags; when something is dropped, set to true for
 *          each record passed, false for each dropped (else untouched)
 * Other parameters as rl_state_span().
 *
 * Return: the number of records dropped. Never fails.
 */
size_t rl_state_records(struct rl_state *st, const struct tally_record *recs,
			size_t n, const char *input, int64_t now_ns,
			bool *keep);

/**
 * rl_state_flush() - hand every drop counted since the last flush to the
 * report callback, one call per key and reason
 */
void rl_state_flush(struct rl_state *st);

/**
 * rl_state_expire() - forget the keys whose bucket is full again at @now_ns
 *
 * Keys are looked at in order of use, oldest first, up to the first one
 * whose bucket is not full yet (a later call looks again). Forgetting a
 * full bucket changes nothing: the key would come back full.
 * Return: the number of keys forgotten.
 */
uint32_t rl_state_expire(struct rl_state *st, int64_t now_ns);

/**
 * rl_state_retune() - take new options, keeping what the state knows
 * @st:   state
 * @opts: as for rl_state_new(), including @report and @ctx (what a reload
 *        gives the instance that takes the state over)
 *
 * What is reported so far goes to the old @report first. Each bucket keeps
 * its tokens, up to the new @burst; a changed @key forgets every bucket
 * (they were counted per another key); keys beyond @max_keys are forgotten
 * oldest first (keys_evicted). The dropped begins whose end is due stay, so
 * their ends are still dropped; @max_pending applies to later drops.
 * Return: 0, or -1 with errno = EINVAL (as rl_state_new(); nothing changed).
 */
int rl_state_retune(struct rl_state *st, const struct rl_opts *opts);

/** rl_state_counters() - the running totals (borrowed pointer) */
const struct rl_counters *rl_state_counters(const struct rl_state *st);

/** rl_state_keys() - number of keys kept */
uint32_t rl_state_keys(const struct rl_state *st);

/** rl_state_pending() - dropped begins whose end is still due */
uint32_t rl_state_pending(const struct rl_state *st);

/** rl_verdict_reason() - the drop reason of @v ("rate_limited", ...) */
const char *rl_verdict_reason(enum rl_verdict v);

#endif /* RATE_LIMIT_STATE_H */
