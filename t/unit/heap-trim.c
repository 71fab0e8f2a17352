/* SPDX-License-Identifier: MIT */
/*
 * t/unit/heap-trim.c - how often input ticks walk the heap
 *
 * Every input tick may give freed heap back (tally_heap_trim_tick()), and
 * both looking at the heap and trimming it walk all of it. With thousands
 * of inputs on one wall-clock mark that must cost one look per burst, and
 * a heap whose free chunks stay free after a trim (fragmentation: the
 * pages go back, the chunks do not) must not be trimmed again until more
 * is freed. Counted with fake heap ops, no clocks: operation counts, not
 * times.
 */
#include "config.h"

#include "../../core/core-internal.h"
#include "tap.h"

#define KiB ((size_t)1024)
#define MiB (1024 * KiB)
#define SEC INT64_C(1000000000)

static size_t heap_free;	/* what the fake mallinfo2() reports */
static unsigned looks, trims;

static size_t fake_free_bytes(void)
{
	looks++;
	return heap_free;
}

/* like malloc_trim() on a fragmented heap: the free chunks stay free */
static void fake_trim(void)
{
	trims++;
}

static const struct tally_heap_ops ops = {
	.free_bytes = fake_free_bytes,
	.trim = fake_trim,
};

/* @n inputs ticking at @now, as on one wall-clock mark */
static void burst(struct tally_heap_trim *t, unsigned n, int64_t now)
{
	for (unsigned i = 0; i < n; i++)
		tally_heap_trim_tick(t, &ops, now + i * 1000);
}

int main(void)
{
	struct tally_heap_trim t = { 0 };

	plan(NO_PLAN);

	/* 3000 inputs every 5 s, 2 MiB free that trimming does not lower */
	heap_free = 2 * MiB;
	burst(&t, 3000, 10 * SEC);
	cmp_ok(trims, "==", 1, "first burst: one trim (2 MiB free)");
	cmp_ok(looks, "==", 2, "first burst: looked before and after it");
	for (int k = 1; k <= 10; k++)
		burst(&t, 3000, (10 + 5 * k) * SEC);
	cmp_ok(trims, "==", 1, "10 more bursts, nothing freed: no trim");
	cmp_ok(looks, "==", 12, "one look per burst, not per input");

	/* 600 KiB freed since: given back; 400 KiB more: not worth it */
	heap_free += 600 * KiB;
	burst(&t, 3000, 100 * SEC);
	cmp_ok(trims, "==", 2, "600 KiB freed since the last trim: trimmed");
	heap_free += 400 * KiB;
	burst(&t, 3000, 105 * SEC);
	cmp_ok(trims, "==", 2, "400 KiB more: below the 512 KiB threshold");

	/* free memory reused, then freed again: dirty pages again */
	heap_free = 1 * MiB;
	burst(&t, 1, 110 * SEC);
	cmp_ok(trims, "==", 2, "free bytes went down: no trim");
	heap_free = 1 * MiB + 600 * KiB;
	burst(&t, 1, 115 * SEC);
	cmp_ok(trims, "==", 3, "600 KiB freed after the reuse: trimmed");

	/* a look at most once a second */
	looks = 0;
	tally_heap_trim_tick(&t, &ops, 115 * SEC + SEC / 2);
	cmp_ok(looks, "==", 0, "0.5 s after the last look: no look");
	tally_heap_trim_tick(&t, &ops, 116 * SEC);
	cmp_ok(looks, "==", 1, "1 s after: looked");

	/* a small heap is never trimmed, the first look included */
	t = (struct tally_heap_trim){ 0 };
	trims = 0;
	heap_free = 300 * KiB;
	burst(&t, 10, 1 * SEC);
	burst(&t, 10, 2 * SEC);
	cmp_ok(trims, "==", 0, "300 KiB free: never trimmed");
	heap_free = 900 * KiB;
	burst(&t, 10, 3 * SEC);
	cmp_ok(trims, "==", 1, "900 KiB free: trimmed");

	done_testing();
}
