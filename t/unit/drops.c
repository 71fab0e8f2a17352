/* SPDX-License-Identifier: MIT */
/*
 * t/unit/drops.c - drops counted by reason and key (tally_count_drop_key())
 *
 * rate_limit counts what it drops per source process; a node may see
 * thousands of sources over a day. The per-key table must stay bounded
 * (64 keys), fold the rest into key "other", let idle keys go so new
 * sources get slots, and keep the per-key counts adding up to the reason's
 * total whatever happens. Time is passed in: no clocks, no sleeps.
 */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/stats.h>

#include "../../core/core-internal.h"
#include "tap.h"

#define SEC INT64_C(1000000000)

static struct tally_instance *inst_new(void)
{
	struct tally_instance *inst = calloc(1, sizeof(*inst));

	inst->name = "rl";
	pthread_mutex_init(&inst->stat_lock, NULL);
	return inst;
}

static void inst_free(struct tally_instance *inst)
{
	free(inst->keyed);
	pthread_mutex_destroy(&inst->stat_lock);
	free(inst);
}

/* Count of (@reason, @key) in a snapshot; -1 if absent. */
static long long keyed(const struct tally_instance_stats *st,
		       const char *reason, const char *key)
{
	for (size_t i = 0; i < st->nkeyed; i++) {
		if (!strcmp(st->keyed[i].reason, reason) &&
		    !strcmp(st->keyed[i].key, key))
			return (long long)st->keyed[i].n;
	}
	return -1;
}

static long long total(const struct tally_instance_stats *st,
		       const char *reason)
{
	for (size_t i = 0; i < st->ndrops; i++) {
		if (!strcmp(st->drops[i].reason, reason))
			return (long long)st->drops[i].n;
	}
	return -1;
}

/* Whether the keyed counts of @reason, "other" included, add up to its
 * total: nothing is lost or counted twice by evictions. */
static bool adds_up(const struct tally_instance_stats *st, const char *reason)
{
	long long sum = 0;

	for (size_t i = 0; i < st->nkeyed; i++) {
		if (!strcmp(st->keyed[i].reason, reason))
			sum += (long long)st->keyed[i].n;
	}
	return sum == total(st, reason);
}

static void test_basic(void)
{
	struct tally_instance *inst = inst_new();
	struct tally_instance_stats st;

	tally_count_drop_key_at(inst, "rate_limited", "n1:100", 5, 0);
	tally_count_drop_key_at(inst, "rate_limited", "n1:200", 2, 0);
	tally_count_drop_key_at(inst, "rate_limited", "n1:100", 1, 1);
	tally_count_drop_key_at(inst, "malformed", "n1:100", 7, 1);
	tally_count_drop(inst, "rate_limited", 3); /* without a key */
	tally_inst_stats(inst, &st);
	cmp_ok(keyed(&st, "rate_limited", "n1:100"), "==", 6, "n1:100: 5 + 1");
	cmp_ok(keyed(&st, "rate_limited", "n1:200"), "==", 2, "n1:200: 2");
	cmp_ok(keyed(&st, "malformed", "n1:100"), "==", 7,
	       "same key, another reason: its own count");
	cmp_ok(total(&st, "rate_limited"), "==", 11,
	       "the reason's total has keyed and unkeyed drops");
	cmp_ok(total(&st, "malformed"), "==", 7, "malformed total");
	cmp_ok(st.nkeyed, "==", 3, "three keyed entries, no other yet");
	inst_free(inst);
}

static void test_bounded(void)
{
	struct tally_instance *inst = inst_new();
	struct tally_instance_stats st;
	char key[32];

	for (int i = 0; i < TALLY_STATS_MAX_KEYS; i++) {
		snprintf(key, sizeof(key), "src%d", i);
		tally_count_drop_key_at(inst, "rate_limited", key, 10, 0);
	}
	/* keys 1.. stay busy; src0 dropped nothing since t = 0 */
	for (int i = 1; i < TALLY_STATS_MAX_KEYS; i++) {
		snprintf(key, sizeof(key), "src%d", i);
		tally_count_drop_key_at(inst, "rate_limited", key, 1,
					200 * SEC);
	}
	tally_count_drop_key_at(inst, "rate_limited", "new1", 4, 299 * SEC);
	tally_inst_stats(inst, &st);
	cmp_ok(st.nkeyed, "==", TALLY_STATS_MAX_KEYS + 1,
	       "64 keys and one other");
	cmp_ok(keyed(&st, "rate_limited", "new1"), "==", -1,
	       "a 65th key gets no slot while all are fresh (299 s)");
	cmp_ok(keyed(&st, "rate_limited", "other"), "==", 4,
	       "its drops go to other");
	ok(adds_up(&st, "rate_limited"), "keys + other == total");

	tally_count_drop_key_at(inst, "rate_limited", "new2", 3, 300 * SEC);
	tally_inst_stats(inst, &st);
	cmp_ok(keyed(&st, "rate_limited", "new2"), "==", 3,
	       "src0 idle for 300 s: new2 takes its slot");
	cmp_ok(keyed(&st, "rate_limited", "src0"), "==", -1, "src0 is gone");
	cmp_ok(keyed(&st, "rate_limited", "other"), "==", 14,
	       "src0's 10 moved to other: 4 + 10");
	cmp_ok(keyed(&st, "rate_limited", "src1"), "==", 11,
	       "busy keys keep their slots and counts");
	cmp_ok(total(&st, "rate_limited"), "==", 10 * 64 + 63 + 4 + 3,
	       "total: every drop once");
	ok(adds_up(&st, "rate_limited"), "still adds up after an eviction");

	/* a flood of new keys: bounded, totals exact */
	for (int i = 0; i < 10000; i++) {
		snprintf(key, sizeof(key), "flood%d", i);
		tally_count_drop_key_at(inst, "rate_limited", key, 1,
					301 * SEC);
	}
	tally_inst_stats(inst, &st);
	ok(st.nkeyed <= TALLY_STATS_MAX_KEYS + TALLY_STATS_MAX_DROPS,
	   "10000 new keys: the table stays bounded (%zu entries)", st.nkeyed);
	ok(adds_up(&st, "rate_limited"), "and adds up");
	inst_free(inst);
}

static void test_long_keys(void)
{
	struct tally_instance *inst = inst_new();
	struct tally_instance_stats st;
	char key[128], want[TALLY_STATS_KEY_LEN];

	/* 62 ASCII bytes then "é" (2 bytes): the cut must not split it */
	memset(key, 'a', 62);
	strcpy(key + 62, "\xc3\xa9tail");
	tally_count_drop_key_at(inst, "r", key, 1, 0);
	memset(want, 'a', 62);
	want[62] = '\0';
	tally_inst_stats(inst, &st);
	cmp_ok(keyed(&st, "r", want), "==", 1,
	       "cut before a character that does not fit whole");
	/* 63 ASCII bytes fit exactly */
	memset(key, 'b', 70);
	key[70] = '\0';
	tally_count_drop_key_at(inst, "r", key, 2, 0);
	memset(want, 'b', 63);
	want[63] = '\0';
	tally_inst_stats(inst, &st);
	cmp_ok(keyed(&st, "r", want), "==", 2, "63 bytes kept");
	tally_count_drop_key_at(inst, "r", NULL, 1, 0);
	tally_inst_stats(inst, &st);
	cmp_ok(keyed(&st, "r", ""), "==", 1, "NULL key counts as \"\"");
	inst_free(inst);
}

struct worker {
	struct tally_instance *inst;
	int id;
};

static void *count_many(void *arg)
{
	struct worker *w = arg;
	char key[16];

	for (int i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "k%d", (i + w->id) % 100);
		tally_count_drop_key_at(w->inst, "rate_limited", key, 1,
					(int64_t)i);
	}
	return NULL;
}

static void test_threads(void)
{
	struct tally_instance *inst = inst_new();
	struct tally_instance_stats st;
	struct worker w[4];
	pthread_t t[4];

	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ inst, i };
		pthread_create(&t[i], NULL, count_many, &w[i]);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	tally_inst_stats(inst, &st);
	cmp_ok(total(&st, "rate_limited"), "==", 80000,
	       "4 threads x 20000 drops: all counted");
	ok(adds_up(&st, "rate_limited"), "keys + other == 80000");
	inst_free(inst);
}

int main(void)
{
	plan(NO_PLAN);
	test_basic();
	test_bounded();
	test_long_keys();
	test_threads();
	return done_testing();
}
