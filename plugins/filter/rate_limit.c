/* SPDX-License-Identifier: MIT */
/*
 * plugins/filter/rate_limit.c - a token bucket per source on span streams
 *
 * The glue between the pipeline and plugins/filter/rate_limit/state.c:
 * every span record is decided by the state; a batch in which nothing is
 * dropped is passed on as it is (one reference, no copy), otherwise the
 * records kept are borrowed into a new batch (tally_batch_select()).
 * Metric records always pass: their volume is fixed per interval by the
 * inputs that make them. See doc/plugins/rate_limit.md.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tally/plugin.h>
#include <tally/stats.h>

#include "rate_limit/state.h"

struct rate_limit {
	int key; /* enum rl_key, from the option table */
	double rate;
	double burst;
	int64_t max_keys;
	int64_t max_pending;

	struct tally_instance *inst;
	struct rl_state *st;
	struct rl_counters shown; /* counters already published */
	struct tally_keep keep;	  /* per record of the batch being decided */
};

static const char *const rate_limit_keys[] = { "process", "trace", "input",
					       "global", NULL };

static void rate_limit_report(void *ctx, const char *key, enum rl_verdict why,
			      uint64_t n)
{
	struct rate_limit *r = ctx;

	tally_count_drop_key(r->inst, rl_verdict_reason(why), key, n);
}

static int rate_limit_check(struct tally_instance *inst, void *state)
{
	struct rate_limit *r = state;

	if (r->burst < 1) {
		tally_log(inst, LOG_ERR,
			  "burst = %g: a bucket must hold at least one token",
			  r->burst);
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* The state's options, from the option table. */
static struct rl_opts rate_limit_opts(struct rate_limit *r)
{
	return (struct rl_opts){
		.key = (enum rl_key)r->key,
		.rate = r->rate,
		.burst = r->burst,
		.max_keys = (uint32_t)r->max_keys,
		.max_pending = (uint32_t)r->max_pending,
		.report = rate_limit_report,
		.ctx = r,
	};
}

static int rate_limit_init(struct tally_instance *inst, void *state)
{
	struct rate_limit *r = state;
	struct rl_opts o = rate_limit_opts(r);

	r->inst = inst;
	r->st = rl_state_new(&o);
	if (!r->st) {
		tally_log(inst, LOG_ERR, "cannot set up: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Publish what the state counted since the last call, for self-metrics. */
static void rate_limit_publish(struct tally_instance *inst,
			       struct rate_limit *r)
{
	const struct rl_counters *k = rl_state_counters(r->st);
	struct rl_counters *p = &r->shown;

	rl_state_flush(r->st); /* the drops, per key and reason */
#define RL_PUB(field, event)                                                 \
	do {                                                                 \
		if (k->field != p->field)                                    \
			tally_count_event(inst, event, k->field - p->field); \
	} while (0)
	RL_PUB(pending_full, "pending_full");
	RL_PUB(nomem, "nomem_passed");
	RL_PUB(keys_evicted, "keys_evicted");
	RL_PUB(keys_expired, "keys_expired");
#undef RL_PUB
	*p = *k;
}

static struct tally_batch *rate_limit_process(struct tally_instance *inst,
					      void *state,
					      struct tally_batch *in)
{
	struct rate_limit *r = state;
	size_t n = tally_batch_count(in), dropped;
	const char *input = tally_batch_source(in);
	int64_t now = tally_monotonic_ns();
	struct tally_batch *out;

	/*
	 * Room for the keep flags before anything is decided: a record the
	 * state dropped must not be passed after all (its end would be
	 * dropped without it).
	 */
	if (!tally_keep_reserve(&r->keep, n)) {
		tally_count_event(inst, "nomem_passed", n);
		return tally_batch_ref(in);
	}
	dropped = rl_state_records(r->st, tally_batch_records(in), n, input,
				   now, r->keep.flags);
	if (memcmp(rl_state_counters(r->st), &r->shown, sizeof(r->shown)))
		rate_limit_publish(inst, r);
	if (!dropped)
		return tally_batch_ref(in);
	if (dropped == n) {
		errno = 0; /* dropped on purpose, counted */
		return NULL;
	}
	out = tally_batch_select(in, r->keep.flags);
	if (!out) {
		/* the drops are counted; pass the batch rather than lose it */
		tally_count_event(inst, "nomem_passed", dropped);
		return tally_batch_ref(in);
	}
	return out;
}

/* Forget the keys whose bucket is full again: they cost memory only. */
static int rate_limit_tick(struct tally_instance *inst, void *state,
			   struct tally_batch *out)
{
	struct rate_limit *r = state;

	(void)out;
	if (rl_state_expire(r->st, tally_monotonic_ns()))
		rate_limit_publish(inst, r);
	return 0;
}

/*
 * A reload replaces this instance: with a successor, the buckets and the
 * dropped begins whose end is due go on in it, so a reload neither refills
 * every bucket nor lets the ends of dropped begins through.
 */
static void *rate_limit_handoff(struct tally_instance *inst, void *state,
				int next)
{
	struct rate_limit *r = state;
	struct rl_state *st = r->st;
	struct rl_opts o = rate_limit_opts(r);

	if (!next)
		return NULL;
	rate_limit_publish(inst, r);
	/* nothing may report to this instance once it is gone */
	o.report = NULL;
	o.ctx = NULL;
	(void)rl_state_retune(st, &o); /* the options it runs with: valid */
	r->st = NULL;
	return st;
}

static int rate_limit_adopt(struct tally_instance *inst, void *state,
			    void *handed)
{
	struct rate_limit *r = state;
	struct rl_opts o = rate_limit_opts(r);
	/* its predecessor published the counts up to the handoff */
	struct rl_counters was = *rl_state_counters(handed);

	if (rl_state_retune(handed, &o) < 0)
		return -1;
	rl_state_free(r->st);
	r->st = handed;
	r->shown = was;
	rate_limit_publish(inst, r);
	return 0;
}

static void rate_limit_discard(void *handed)
{
	rl_state_free(handed);
}

static void rate_limit_fini(struct tally_instance *inst, void *state)
{
	struct rate_limit *r = state;

	(void)inst;
	rl_state_free(r->st); /* reports what is still unreported */
	tally_keep_free(&r->keep);
}

static const struct tally_option rate_limit_options[] = {
	TALLY_OPT_ENUM("key", struct rate_limit, key, "process",
		       rate_limit_keys,
		       "what a bucket is per: source process (host and pid), "
		       "trace id, input instance, or one global bucket"),
	TALLY_OPT_DOUBLE("rate", struct rate_limit, rate, "1000", 1e-6, 1e9,
			 "span begins per second a key may pass, on average"),
	TALLY_OPT_DOUBLE("burst", struct rate_limit, burst, "5000", 1, 1e12,
			 "span begins a key may pass at once after a quiet "
			 "time (the bucket's size)"),
	TALLY_OPT_INT("max_keys", struct rate_limit, max_keys, "4096", 1,
		      100000000,
		      "keys kept; beyond, the least recently used one is "
		      "forgotten (it comes back with a full bucket)"),
	TALLY_OPT_INT("max_pending", struct rate_limit, max_pending, "65536", 1,
		      100000000,
		      "dropped begins whose end is still due, over all keys; "
		      "when full, begins over the limit are passed (counted)"),
	TALLY_OPT_END
};

static const struct tally_filter_ops rate_limit_ops = {
	.check = rate_limit_check,
	.init = rate_limit_init,
	.process = rate_limit_process,
	.tick = rate_limit_tick,
	.fini = rate_limit_fini,
	.handoff = rate_limit_handoff,
	.adopt = rate_limit_adopt,
	.discard = rate_limit_discard,
};

TALLY_PLUGIN_FILTER(rate_limit,
		    "a token bucket per source process (or trace, input, "
		    "global) on span begins; ends follow their begins",
		    struct rate_limit, rate_limit_options, &rate_limit_ops);
