/* SPDX-License-Identifier: MIT */
/*
 * t/unit/rate_limit.c - the rate_limit filter's state: exact counts passed
 * and dropped per key and reason, and a stream that stays well formed
 *
 * Each case feeds span events at given times (ms on the monotonic clock)
 * and checks every verdict, the counts the report callback received per
 * key and reason, and the running totals. Every event of every case also
 * goes through a checker of what the filter promises downstream, on the
 * records it passes: per lane (trace, host, pid, tid), no end without a
 * passed begin of its id open, and every passed begin gets its end passed
 * (the sources here end every begin). Seeded random streams of nested
 * spans from several sources go through the same checker, and their
 * passed begins per key are checked against the bucket's bound.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "../../plugins/filter/rate_limit/state.h"

#define MS INT64_C(1000000)

/* ---- what the report callback received */

struct reported {
	char key[64];
	enum rl_verdict why;
	uint64_t n;
};

static struct reported reports[256];
static size_t nreports;

static void report(void *ctx, const char *key, enum rl_verdict why, uint64_t n)
{
	(void)ctx;
	for (size_t i = 0; i < nreports; i++) {
		if (!strcmp(reports[i].key, key) && reports[i].why == why) {
			reports[i].n += n;
			return;
		}
	}
	if (nreports == sizeof(reports) / sizeof(reports[0]))
		bail_out("too many report rows");
	snprintf(reports[nreports].key, sizeof(reports[0].key), "%s", key);
	reports[nreports].why = why;
	reports[nreports++].n = n;
}

/* What was reported for (@key, @why), 0 if nothing. */
static uint64_t got(const char *key, enum rl_verdict why)
{
	for (size_t i = 0; i < nreports; i++)
		if (!strcmp(reports[i].key, key) && reports[i].why == why)
			return reports[i].n;
	return 0;
}

/* ---- the downstream checker: open passed spans per lane and id */

struct open_span {
	char trace[16];
	char host[16];
	uint32_t pid, tid;
	uint64_t id;
	int n; /* passed begins of this id open */
	int d; /* dropped begins of this id open */
};

static struct open_span opens[4096];
static size_t nopens;
static unsigned bad_end, bad_begin_lost;

static struct open_span *open_of(const struct tally_span *sp, bool make)
{
	for (size_t i = 0; i < nopens; i++) {
		struct open_span *o = &opens[i];

		if (o->id == sp->span_id && o->pid == sp->src.pid &&
		    o->tid == sp->src.tid && !strcmp(o->trace, sp->trace) &&
		    !strcmp(o->host, sp->src.host))
			return o;
	}
	if (!make)
		return NULL;
	if (nopens == sizeof(opens) / sizeof(opens[0]))
		bail_out("too many open spans");
	snprintf(opens[nopens].trace, 16, "%s", sp->trace);
	snprintf(opens[nopens].host, 16, "%s", sp->src.host);
	opens[nopens].pid = sp->src.pid;
	opens[nopens].tid = sp->src.tid;
	opens[nopens].id = sp->span_id;
	opens[nopens].n = 0;
	opens[nopens].d = 0;
	return &opens[nopens++];
}

/*
 * Check one decided event against the contract: a passed end closes a
 * passed begin of its lane and id, a dropped end a dropped one (when one
 * id is open several times, the filter drops ends while dropped begins of
 * it are open: either way each side gets as many ends as begins).
 */
static void check(const struct tally_span *sp, enum rl_verdict v)
{
	struct open_span *o = open_of(sp, sp->phase == TALLY_SPAN_BEGIN);

	if (sp->phase == TALLY_SPAN_BEGIN) {
		if (v == RL_PASS)
			o->n++;
		else
			o->d++;
		return;
	}
	if (v == RL_PASS) {
		if (!o || !o->n)
			bad_end++; /* an end passed without its begin */
		else
			o->n--;
	} else if (!o || !o->d) {
		bad_begin_lost++; /* an end dropped, its begin was passed */
	} else {
		o->d--;
	}
}

static void check_reset(void)
{
	nopens = 0;
	bad_end = bad_begin_lost = 0;
	nreports = 0;
}

/* Passed begins whose end never passed. */
static int check_unended(void)
{
	int n = 0;

	for (size_t i = 0; i < nopens; i++)
		n += opens[i].n;
	return n;
}

/* ---- events */

static enum rl_verdict ev(struct rl_state *st, const char *trace,
			  const char *host, uint32_t pid, uint32_t tid,
			  enum tally_span_phase ph, uint64_t id,
			  uint64_t parent, int64_t t_ms, const char *input)
{
	struct tally_span sp = {
		.trace = trace,
		.name = "r",
		.span_id = id,
		.parent_id = parent,
		.phase = ph,
		.src = { .host = host, .pid = pid, .tid = tid, .rank = -1 },
	};
	enum rl_verdict v = rl_state_span(st, &sp, input, t_ms * MS);

	check(&sp, v);
	return v;
}

/* Begin and end of span @id of pid @pid on host "h", trace "T". */
static enum rl_verdict b(struct rl_state *st, uint32_t pid, uint64_t id,
			 uint64_t parent, int64_t t)
{
	return ev(st, "T", "h", pid, 0, TALLY_SPAN_BEGIN, id, parent, t, "in");
}

static enum rl_verdict e(struct rl_state *st, uint32_t pid, uint64_t id,
			 int64_t t)
{
	return ev(st, "T", "h", pid, 0, TALLY_SPAN_END, id, 0, t, "in");
}

static struct rl_state *new_state(enum rl_key key, double rate, double burst,
				  uint32_t max_keys, uint32_t max_pending)
{
	struct rl_opts o = {
		.key = key,
		.rate = rate,
		.burst = burst,
		.max_keys = max_keys,
		.max_pending = max_pending,
		.report = report,
	};
	struct rl_state *st = rl_state_new(&o);

	if (!st)
		bail_out("rl_state_new: %s", strerror(errno));
	check_reset();
	return st;
}

#define PASS RL_PASS
#define LIM  RL_LIMITED
#define PAR  RL_PARENT
#define END  RL_END

/* A verdict sequence as letters: p(ass) l(imited) c(hild) e(nd). */
static char verdicts[512];
static size_t nverdicts;

static void v_reset(void)
{
	nverdicts = 0;
	verdicts[0] = '\0';
}

static void v_add(enum rl_verdict v)
{
	static const char letter[] = { 'p', 'l', 'c', 'e' };

	if (nverdicts + 1 < sizeof(verdicts)) {
		verdicts[nverdicts++] = letter[v];
		verdicts[nverdicts] = '\0';
	}
}

/* ---- cases */

static void test_options(void)
{
	struct rl_opts o = {
		.rate = 1, .burst = 1, .max_keys = 1, .max_pending = 1
	};

	o.rate = 0;
	errno = 0;
	ok(!rl_state_new(&o) && errno == EINVAL, "rate 0 refused");
	o.rate = 1;
	o.burst = 0.5;
	ok(!rl_state_new(&o) && errno == EINVAL, "burst below 1 refused");
	o.burst = 1;
	o.max_keys = 0;
	ok(!rl_state_new(&o) && errno == EINVAL, "max_keys 0 refused");
	o.max_keys = 1;
	o.key = (enum rl_key)9;
	ok(!rl_state_new(&o) && errno == EINVAL, "an unknown key refused");
}

static void test_bucket(void)
{
	struct rl_state *st = new_state(RL_KEY_PROCESS, 10, 3, 16, 64);
	const struct rl_counters *k = rl_state_counters(st);

	/* five calls at t=0: three tokens */
	v_reset();
	for (uint64_t id = 1; id <= 5; id++) {
		v_add(b(st, 100, id, 0, 0));
		v_add(e(st, 100, id, 0));
	}
	is(verdicts, "pppppplele",
	   "burst 3: three calls pass, the next two are dropped whole");
	rl_state_flush(st);
	cmp_ok(got("h:100", RL_LIMITED), "==", 2, "h:100 rate_limited 2");
	cmp_ok(got("h:100", RL_END), "==", 2, "h:100 limited_end 2");
	cmp_ok(got("h:100", RL_PARENT), "==", 0, "h:100 parent_limited 0");
	cmp_ok(k->passed, "==", 3, "three begins passed");
	cmp_ok(rl_state_pending(st), "==", 0, "no dropped begin open");

	/* 10/s: one token per 100 ms, none before */
	v_reset();
	v_add(b(st, 100, 6, 0, 99));
	v_add(b(st, 100, 7, 0, 100));
	v_add(b(st, 100, 8, 0, 100));
	v_add(b(st, 100, 9, 0, 350));
	v_add(b(st, 100, 10, 0, 350));
	v_add(b(st, 100, 11, 0, 350));
	is(verdicts, "lplppl",
	   "refill: 0.99 token at 99 ms, 1 at 100, 2.5 at 350");
	/* ends, at once, all of them: dropped begins' ends dropped */
	v_reset();
	for (uint64_t id = 6; id <= 11; id++)
		v_add(e(st, 100, id, 350));
	is(verdicts, "epeppe", "each end follows its begin's fate");
	/* a long quiet time: the bucket holds burst tokens, not more */
	v_reset();
	for (uint64_t id = 20; id < 25; id++)
		v_add(b(st, 100, id, 0, 100000));
	is(verdicts, "pppll", "after a quiet time: burst, not more");
	for (uint64_t id = 20; id < 25; id++)
		e(st, 100, id, 100000);
	rl_state_flush(st);
	cmp_ok(got("h:100", RL_LIMITED), "==", 2 + 3 + 2,
	       "h:100 rate_limited counted per drop");
	cmp_ok(k->dropped[RL_LIMITED], "==", 7, "total rate_limited 7");
	cmp_ok(k->dropped[RL_END], "==", 7, "total limited_end 7");
	cmp_ok(k->passed, "==", 3 + 3 + 3, "nine begins passed");
	ok(!bad_end && !bad_begin_lost && !check_unended(),
	   "well formed downstream");
	rl_state_free(st);
}

static void test_over_limit_end(void)
{
	struct rl_state *st = new_state(RL_KEY_PROCESS, 1, 2, 16, 64);

	v_reset();
	v_add(b(st, 1, 1, 0, 0));    /* main: passed */
	v_add(b(st, 1, 2, 1, 0));    /* child: passed, last token */
	v_add(b(st, 1, 3, 1, 0));    /* child: over the limit */
	v_add(b(st, 1, 4, 3, 0));    /* grandchild of a dropped span */
	v_add(b(st, 1, 5, 4, 5000)); /* tokens again, but inside it */
	v_add(e(st, 1, 5, 5000));
	v_add(e(st, 1, 4, 5000));
	v_add(e(st, 1, 3, 5000));
	v_add(b(st, 1, 6, 1, 5000)); /* its parent passed: a token */
	v_add(e(st, 1, 6, 5000));
	v_add(e(st, 1, 2, 5000));
	v_add(e(st, 1, 1, 5000));
	is(verdicts, "pplcceeepppp",
	   "a dropped span's subtree is dropped whole, ends included; the "
	   "passed spans' ends pass");
	rl_state_flush(st);
	cmp_ok(got("h:1", RL_LIMITED), "==", 1, "rate_limited 1");
	cmp_ok(got("h:1", RL_PARENT), "==", 2, "parent_limited 2");
	cmp_ok(got("h:1", RL_END), "==", 3, "limited_end 3");
	cmp_ok(rl_state_counters(st)->passed, "==", 3, "three begins passed");

	/* an open span's end passes even with the bucket empty */
	v_reset();
	v_add(b(st, 1, 10, 0, 5000));
	v_add(b(st, 1, 11, 0, 5000));
	v_add(b(st, 1, 12, 0, 5000));
	v_add(e(st, 1, 12, 5000));
	v_add(e(st, 1, 11, 5000));
	v_add(e(st, 1, 10, 5000));
	is(verdicts, "plleep",
	   "the bucket empty, passed begins' ends still pass");
	ok(!bad_end && !bad_begin_lost && !check_unended(),
	   "well formed downstream");
	rl_state_free(st);
}

static void test_keys(void)
{
	struct rl_state *st;

	/* per process: sources do not share a bucket; hosts neither */
	st = new_state(RL_KEY_PROCESS, 1, 1, 16, 64);
	v_reset();
	v_add(b(st, 1, 1, 0, 0));
	v_add(b(st, 1, 2, 0, 0));
	v_add(b(st, 2, 1, 0, 0));
	v_add(b(st, 2, 2, 0, 0));
	v_add(ev(st, "T", "g", 1, 0, TALLY_SPAN_BEGIN, 3, 0, 0, "in"));
	v_add(ev(st, "U", "h", 1, 7, TALLY_SPAN_BEGIN, 4, 0, 0, "in"));
	is(verdicts, "plplpl",
	   "per process: (h,1), (h,2), (g,1) each their bucket; another "
	   "trace and thread of (h,1) shares it");
	rl_state_flush(st);
	cmp_ok(got("h:1", RL_LIMITED), "==", 2, "h:1 rate_limited 2");
	cmp_ok(got("h:2", RL_LIMITED), "==", 1, "h:2 rate_limited 1");
	cmp_ok(got("g:1", RL_LIMITED), "==", 0, "g:1 nothing dropped");
	cmp_ok(rl_state_keys(st), "==", 3, "three keys");
	/* the ends of (h,1)'s spans: one lane each; ids do not mix */
	v_reset();
	v_add(e(st, 1, 1, 0));
	v_add(e(st, 1, 2, 0));
	v_add(ev(st, "U", "h", 1, 7, TALLY_SPAN_END, 4, 0, 0, "in"));
	v_add(e(st, 2, 1, 0));
	v_add(e(st, 2, 2, 0));
	v_add(ev(st, "T", "g", 1, 0, TALLY_SPAN_END, 3, 0, 0, "in"));
	is(verdicts, "peepep", "ends matched by lane and id");
	ok(!bad_end && !bad_begin_lost && !check_unended(), "well formed");
	rl_state_free(st);

	/* per trace */
	st = new_state(RL_KEY_TRACE, 1, 2, 16, 64);
	v_reset();
	v_add(ev(st, "A", "h", 1, 0, TALLY_SPAN_BEGIN, 1, 0, 0, "in"));
	v_add(ev(st, "A", "h", 2, 0, TALLY_SPAN_BEGIN, 1, 0, 0, "in"));
	v_add(ev(st, "A", "g", 3, 0, TALLY_SPAN_BEGIN, 1, 0, 0, "in"));
	v_add(ev(st, "B", "h", 1, 0, TALLY_SPAN_BEGIN, 1, 0, 0, "in"));
	is(verdicts, "pplp",
	   "per trace: processes of one trace share its bucket");
	rl_state_flush(st);
	cmp_ok(got("A", RL_LIMITED), "==", 1, "key A rate_limited 1");
	v_reset();
	v_add(ev(st, "A", "g", 3, 0, TALLY_SPAN_END, 1, 0, 0, "in"));
	v_add(ev(st, "A", "h", 2, 0, TALLY_SPAN_END, 1, 0, 0, "in"));
	is(verdicts, "ep",
	   "per trace: the dropped begin is told apart by its process");
	rl_state_free(st);

	/* per input */
	st = new_state(RL_KEY_INPUT, 1, 1, 16, 64);
	v_reset();
	v_add(ev(st, "A", "h", 1, 0, TALLY_SPAN_BEGIN, 1, 0, 0, "zt1"));
	v_add(ev(st, "B", "g", 2, 0, TALLY_SPAN_BEGIN, 1, 0, 0, "zt1"));
	v_add(ev(st, "A", "h", 1, 0, TALLY_SPAN_BEGIN, 2, 0, 0, "zt2"));
	is(verdicts, "plp", "per input: each input its bucket");
	rl_state_flush(st);
	cmp_ok(got("zt1", RL_LIMITED), "==", 1, "key zt1 rate_limited 1");
	rl_state_free(st);

	/* global */
	st = new_state(RL_KEY_GLOBAL, 1, 2, 16, 64);
	v_reset();
	v_add(ev(st, "A", "h", 1, 0, TALLY_SPAN_BEGIN, 1, 0, 0, "zt1"));
	v_add(ev(st, "B", "g", 2, 0, TALLY_SPAN_BEGIN, 1, 0, 0, "zt2"));
	v_add(ev(st, "C", "f", 3, 0, TALLY_SPAN_BEGIN, 1, 0, 0, "zt3"));
	is(verdicts, "ppl", "global: one bucket for everything");
	rl_state_flush(st);
	cmp_ok(got("global", RL_LIMITED), "==", 1, "key global rate_limited 1");
	cmp_ok(rl_state_keys(st), "==", 1, "one key");
	rl_state_free(st);
}

static void test_limits(void)
{
	struct rl_state *st;
	const struct rl_counters *k;

	/* max_keys 2: a third key forgets the oldest, reported first */
	st = new_state(RL_KEY_PROCESS, 1, 1, 2, 64);
	k = rl_state_counters(st);
	b(st, 1, 1, 0, 0);
	b(st, 1, 2, 0, 0); /* dropped, unreported */
	b(st, 2, 1, 0, 0);
	b(st, 3, 1, 0, 0); /* forgets key h:1 */
	cmp_ok(k->keys_evicted, "==", 1, "keys_evicted 1");
	cmp_ok(rl_state_keys(st), "==", 2, "two keys kept");
	cmp_ok(got("h:1", RL_LIMITED), "==", 1,
	       "a forgotten key's drops are reported before it goes");
	ok(e(st, 1, 2, 0) == RL_END,
	   "a forgotten key's dropped begin still has its end dropped");
	ok(b(st, 1, 3, 0, 0) == RL_PASS,
	   "a forgotten key comes back with a full bucket");
	e(st, 1, 1, 0);
	e(st, 1, 3, 0);
	e(st, 2, 1, 0);
	e(st, 3, 1, 0);
	ok(!bad_end && !bad_begin_lost && !check_unended(), "well formed");
	rl_state_free(st);

	/* max_pending 1: the second drop cannot be remembered: passed */
	st = new_state(RL_KEY_PROCESS, 1, 1, 16, 1);
	k = rl_state_counters(st);
	v_reset();
	v_add(b(st, 1, 1, 0, 0));
	v_add(b(st, 1, 2, 0, 0));
	v_add(b(st, 1, 3, 0, 0));
	v_add(e(st, 1, 3, 0));
	v_add(e(st, 1, 2, 0));
	v_add(b(st, 1, 4, 0, 0));
	v_add(e(st, 1, 4, 0));
	v_add(e(st, 1, 1, 0));
	is(verdicts, "plppelep",
	   "pending table full: a begin over the limit passes with its end");
	cmp_ok(k->pending_full, "==", 1, "pending_full 1");
	cmp_ok(rl_state_pending(st), "==", 0, "the table drained");
	ok(!bad_end && !bad_begin_lost && !check_unended(), "well formed");
	rl_state_free(st);

	/* expiry: only keys whose bucket is full again go */
	st = new_state(RL_KEY_PROCESS, 10, 5, 16, 64);
	k = rl_state_counters(st);
	for (uint64_t id = 1; id <= 5; id++) {
		b(st, 1, id, 0, 0); /* h:1 empty at 0 */
		e(st, 1, id, 0);
	}
	for (uint64_t id = 1; id <= 3; id++) {
		b(st, 2, id, 0, 400); /* h:2 2 tokens at 400 ms */
		e(st, 2, id, 400);
	}
	cmp_ok(rl_state_expire(st, 400 * MS), "==", 0,
	       "at 400 ms h:1 holds 4 tokens of 5: nothing forgotten");
	cmp_ok(rl_state_expire(st, 500 * MS), "==", 1,
	       "at 500 ms h:1 is full again: forgotten");
	cmp_ok(rl_state_keys(st), "==", 1, "h:2 stays, 3 tokens of 5");
	cmp_ok(rl_state_expire(st, 700 * MS), "==", 1,
	       "at 700 ms h:2 is full again: forgotten");
	ok(b(st, 1, 9, 0, 700) == RL_PASS, "an expired key starts full");
	e(st, 1, 9, 700);
	cmp_ok(k->keys_expired, "==", 2, "keys_expired 2");
	rl_state_free(st);
}

static void test_odd(void)
{
	struct rl_state *st = new_state(RL_KEY_PROCESS, 1, 1, 16, 64);
	struct tally_span sp = { .name = "x", .phase = TALLY_SPAN_BEGIN };

	v_reset();
	v_add(e(st, 1, 99, 0)); /* an end whose begin came before us */
	is(verdicts, "p", "an end the filter never saw the begin of passes");
	ok(rl_state_span(st, &sp, "in", 0) == RL_PASS,
	   "a span without a trace id passes (nothing to key or match)");
	/* two open spans of one id (Omnistat reuses markers) */
	v_reset();
	v_add(b(st, 1, 5, 0, 0));
	v_add(b(st, 1, 5, 0, 0));
	v_add(b(st, 1, 5, 0, 0));
	v_add(e(st, 1, 5, 0));
	v_add(e(st, 1, 5, 0));
	v_add(e(st, 1, 5, 0));
	is(verdicts, "plleep",
	   "one id open three times: as many ends dropped as begins were");
	cmp_ok(rl_state_pending(st), "==", 0, "nothing pending after");
	bad_end = 0; /* the orphan end above was the source's */
	ok(!bad_begin_lost && !check_unended(), "well formed");
	rl_state_free(st);
}

/* A batch's records decided at once: metrics pass, keep flags set. */
static void test_records(void)
{
	struct rl_state *st = new_state(RL_KEY_PROCESS, 1, 1, 16, 64);
	struct tally_batch *bt = tally_batch_new();
	static const struct {
		enum tally_span_phase ph;
		uint64_t id;
	} evs[] = { { TALLY_SPAN_BEGIN, 1 },
		    { TALLY_SPAN_BEGIN, 2 },
		    { 0, 0 },
		    { TALLY_SPAN_END, 2 },
		    { TALLY_SPAN_END, 1 } };
	bool keep[5];
	char got_keep[6];
	size_t n = sizeof(evs) / sizeof(evs[0]);

	for (size_t i = 0; i < n; i++) {
		struct tally_span sp = {
			.trace = "T",
			.name = "r",
			.span_id = evs[i].id,
			.phase = evs[i].ph,
			.src = { .host = "h", .pid = 1, .rank = -1 },
		};

		if (!evs[i].ph)
			tally_batch_add_metric(bt, TALLY_GAUGE, "g", NULL, NULL,
					       1, 1);
		else
			tally_batch_add_span(bt, &sp, 1);
	}
	memset(keep, 0, sizeof(keep));
	cmp_ok(rl_state_records(st, tally_batch_records(bt), n, "in", 0, keep),
	       "==", 2, "a batch: two records dropped");
	for (size_t i = 0; i < n; i++)
		got_keep[i] = keep[i] ? 'k' : 'd';
	got_keep[n] = '\0';
	is(got_keep, "kdkdk",
	   "keep flags: the second begin and its end dropped, the metric and "
	   "the first span kept");
	tally_batch_unref(bt);
	rl_state_free(st);
}

/* ---- random nestings: the contract and the bound */

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static void test_random(void)
{
	enum { SOURCES = 5, EVENTS = 4000, ROUNDS = 50 };
	unsigned bad = 0, over = 0;
	uint64_t total_passed = 0, total_dropped = 0;

	for (int round = 0; round < ROUNDS; round++) {
		double rate = 1 + rnd(50), burst = 1 + rnd(20);
		struct rl_state *st = new_state(RL_KEY_PROCESS, rate, burst,
						1 + rnd(SOURCES), 1 + rnd(64));
		uint64_t stack[SOURCES][64], next_id[SOURCES] = { 0 };
		uint32_t depth[SOURCES] = { 0 };
		uint64_t passed[SOURCES] = { 0 };
		int64_t t = 0;

		for (int i = 0; i < EVENTS; i++) {
			uint32_t s = rnd(SOURCES);
			bool begin =
				depth[s] < 64 && (!depth[s] || rnd(100) < 55);

			t += rnd(40);
			if (begin) {
				uint64_t id = ++next_id[s];
				uint64_t parent =
					depth[s] ? stack[s][depth[s] - 1] : 0;

				if (b(st, s, id, parent, t) == RL_PASS)
					passed[s]++;
				stack[s][depth[s]++] = id;
			} else {
				/* mostly the innermost; sometimes another */
				uint32_t j =
					rnd(10) ? depth[s] - 1 : rnd(depth[s]);

				e(st, s, stack[s][j], t);
				memmove(&stack[s][j], &stack[s][j + 1],
					(depth[s] - j - 1) * sizeof(uint64_t));
				depth[s]--;
			}
		}
		for (uint32_t s = 0; s < SOURCES; s++)
			while (depth[s])
				e(st, s, stack[s][--depth[s]], t);
		bad += bad_end + bad_begin_lost + (unsigned)check_unended();
		bad += rl_state_pending(st) != 0;
		/*
		 * Without evictions or a full pending table, no key passed
		 * more than burst + rate * elapsed begins.
		 */
		if (!rl_state_counters(st)->keys_evicted &&
		    !rl_state_counters(st)->pending_full) {
			for (uint32_t s = 0; s < SOURCES; s++)
				if ((double)passed[s] >
				    burst + rate * (double)t / 1e3 + 1e-9)
					over++;
		}
		total_passed += rl_state_counters(st)->passed;
		for (int v = RL_LIMITED; v < RL_NVERDICTS; v++)
			total_dropped += rl_state_counters(st)->dropped[v];
		rl_state_free(st);
	}
	cmp_ok(bad, "==", 0,
	       "random nestings: no end without its begin, every passed "
	       "begin's end passed, nothing left pending");
	cmp_ok(over, "==", 0, "random nestings: no key over its bound");
	ok(total_passed && total_dropped,
	   "random nestings both pass and drop (%" PRIu64 " passed, %" PRIu64
	   " dropped)",
	   total_passed, total_dropped);
}

/* A reload: the successor retunes the state it took over. */
static void test_retune(void)
{
	struct rl_state *st = new_state(RL_KEY_PROCESS, 10, 3, 16, 64);
	struct rl_opts o = { .key = RL_KEY_PROCESS, .rate = 20, .burst = 2,
			     .max_keys = 16, .max_pending = 64,
			     .report = report };
	const struct rl_counters *k = rl_state_counters(st);

	v_reset();
	v_add(b(st, 100, 1, 0, 0)); /* 3 -> 2 tokens */
	v_add(b(st, 200, 2, 0, 0));
	v_add(b(st, 200, 3, 0, 0));
	v_add(b(st, 200, 4, 0, 0));
	v_add(b(st, 200, 5, 0, 0)); /* pid 200 empty: dropped */
	is(verdicts, "ppppl", "before: pid 200 spent its burst of 3");
	o.rate = 0;
	cmp_ok(rl_state_retune(st, &o), "==", -1, "a bad rate is refused...");
	ok(errno == EINVAL, "...with EINVAL");
	o.rate = 20;
	cmp_ok(rl_state_retune(st, &o), "==", 0, "retune: 20/s, burst 2");
	v_reset();
	v_add(e(st, 200, 5, 0));
	v_add(b(st, 200, 6, 0, 0));
	v_add(b(st, 200, 7, 0, 50));
	v_add(b(st, 100, 8, 0, 50));
	v_add(b(st, 100, 9, 0, 50));
	v_add(b(st, 100, 10, 0, 50));
	/*
	 * 200: still empty (a new key would start full), one token after
	 * 50 ms at 20/s; 100: its 2 tokens, capped to the new burst of 2,
	 * plus nothing more (a full bucket gains nothing).
	 */
	is(verdicts, "elpppl", "after: the dropped begin's end is still "
	   "dropped, and the buckets kept their tokens");
	o.key = RL_KEY_TRACE;
	cmp_ok(rl_state_retune(st, &o), "==", 0, "retune to another key...");
	cmp_ok(rl_state_keys(st), "==", 0, "...forgets every bucket");
	cmp_ok(rl_state_pending(st), "==", 2,
	       "...and keeps the two dropped begins whose end is due");
	o.max_keys = 1;
	v_reset();
	v_add(ev(st, "T1", "h", 1, 0, TALLY_SPAN_BEGIN, 20, 0, 100, "in"));
	v_add(ev(st, "T2", "h", 1, 0, TALLY_SPAN_BEGIN, 21, 0, 100, "in"));
	cmp_ok(rl_state_retune(st, &o), "==", 0, "retune to max_keys 1");
	cmp_ok(rl_state_keys(st), "==", 1, "  the oldest key is forgotten");
	cmp_ok(k->keys_evicted, "==", 1, "  and counted");
	rl_state_free(st);
}

int main(void)
{
	plan(NO_PLAN);
	test_options();
	test_bucket();
	test_over_limit_end();
	test_keys();
	test_limits();
	test_odd();
	test_records();
	test_random();
	test_retune();
	return done_testing();
}
