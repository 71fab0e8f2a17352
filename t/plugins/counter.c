/* SPDX-License-Identifier: MIT */
/*
 * t/plugins/counter.c - test-only input: @count samples per read whose
 * value is the number of reads so far
 *
 * Read k (1-based) appends, for i = 0 .. count-1,
 *	NAME{i="<i>"} k
 * so a test can tell from a capture file how many reads reached an output
 * and in which order. The label sets are interned once in init: a read
 * allocates nothing but the batch records, like a real periodic input.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <tally/plugin.h>

struct counter {
	int64_t count;		/* samples per read */
	char *name;		/* metric name */
	int type;		/* index into counter_types */
	int64_t ts;		/* fixed timestamp in ns, 0 = the read time */
	int64_t reads;		/* reads so far */
	struct tally_labels **labels;	/* {i="0"} .. {i="count-1"} */
};

static const char *const counter_types[] = { "gauge", "counter", NULL };

/* Exercises the core's check hook: an empty name is a config error. */
static int counter_check(struct tally_instance *inst, void *state)
{
	struct counter *c = state;

	if (!*c->name) {
		tally_log(inst, LOG_ERR, "name must not be empty");
		return -1;
	}
	return 0;
}

static int counter_init(struct tally_instance *inst, void *state)
{
	struct counter *c = state;
	char idx[24];

	c->labels = calloc((size_t)c->count, sizeof(*c->labels));
	if (!c->labels && c->count)
		return -1;
	for (int64_t i = 0; i < c->count; i++) {
		snprintf(idx, sizeof(idx), "%lld", (long long)i);
		c->labels[i] = tally_labels_newv("i", idx, NULL);
		if (!c->labels[i])
			goto out_unref;
	}
	return 0;
out_unref:
	for (int64_t i = 0; i < c->count; i++)
		tally_labels_unref(c->labels[i]);
	free(c->labels);
	c->labels = NULL;
	errno = ENOMEM;
	return -1;
}

static int counter_read(struct tally_instance *inst, void *state,
			struct tally_batch *out)
{
	struct counter *c = state;
	enum tally_metric_type type = c->type ? TALLY_COUNTER : TALLY_GAUGE;
	/* One timestamp per read, as a real input samples all at once. */
	int64_t ts = c->ts ? c->ts : tally_now_ns();

	c->reads++;
	for (int64_t i = 0; i < c->count; i++) {
		if (tally_batch_add_metric(out, type, c->name, NULL,
					   c->labels[i], (double)c->reads,
					   ts) < 0)
			return -1;
	}
	return 0;
}

static void counter_fini(struct tally_instance *inst, void *state)
{
	struct counter *c = state;

	if (!c->labels)
		return;
	for (int64_t i = 0; i < c->count; i++)
		tally_labels_unref(c->labels[i]);
	free(c->labels);
}

static const struct tally_option counter_options[] = {
	TALLY_OPT_INT("count", struct counter, count, "1", 0, 100000,
		      "samples per read, labelled i=\"0\" .. i=\"count-1\""),
	TALLY_OPT_STRING("name", struct counter, name, "test_counter_value",
			 "metric name of the samples"),
	TALLY_OPT_ENUM("type", struct counter, type, "gauge", counter_types,
		       "metric type of the samples"),
	TALLY_OPT_INT("ts", struct counter, ts, "0", 0, 9e18,
		      "timestamp of every sample in ns since the epoch; "
		      "0 = time of the read"),
	TALLY_OPT_END
};

static const struct tally_input_ops counter_ops = {
	.check = counter_check,
	.init = counter_init,
	.read = counter_read,
	.fini = counter_fini,
};

TALLY_PLUGIN_INPUT(counter, "test only: count samples per read, valued by "
			    "the read number",
		   struct counter, counter_options, &counter_ops);
