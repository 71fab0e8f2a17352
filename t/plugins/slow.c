/* SPDX-License-Identifier: MIT */
/*
 * t/plugins/slow.c - test-only blocking input whose read sleeps
 *
 * Marked TALLY_INPUT_BLOCKING, so the core runs its read on a worker
 * thread. Each read sleeps `sleep` seconds, then emits one gauge
 * test_slow_reads whose value counts the reads so far. With a sleep longer
 * than the interval, the core must skip ticks (counted as read_overrun)
 * while the loop and the other inputs go on.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <time.h>

#include <tally/plugin.h>

struct slow {
	double sleep;		/* seconds each read blocks */
	uint64_t reads;		/* touched by the worker thread only */
};

static int slow_read(struct tally_instance *inst, void *state,
		     struct tally_batch *out)
{
	struct slow *s = state;
	struct timespec ts = {
		.tv_sec = (time_t)s->sleep,
		.tv_nsec = (long)((s->sleep - floor(s->sleep)) * 1e9),
	};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	s->reads++;
	return tally_batch_add_metric(out, TALLY_GAUGE, "test_slow_reads",
				      "Reads completed by the slow input",
				      NULL, (double)s->reads, 0);
}

static const struct tally_option slow_options[] = {
	TALLY_OPT_DOUBLE("sleep", struct slow, sleep, "0.1", 0, 60,
			 "seconds each read blocks"),
	TALLY_OPT_END,
};

static const struct tally_input_ops slow_ops = {
	.read = slow_read,
	.flags = TALLY_INPUT_BLOCKING,
};

TALLY_PLUGIN_INPUT(slow, "test-only: a blocking input whose read sleeps",
		   struct slow, slow_options, &slow_ops);
