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
 *
 * form = "delta" makes each sample a counter increment or gauge
 * adjustment of `step` at `sample_rate` instead, form = "observation" one
 * observed value `step` of a summary, form = "set" the set member
 * "read<k>" (a statsd input's three kinds of lines). The plugin declares
 * it may emit all three; its check narrows that to the configured form
 * (tally_instance_set_emits()). max_reads > 0 stops emitting after that many
 * reads, so a test knows the final value of an accumulated delta.
 * label_key/label_value add one more label, any strings, to every series
 * (escaping tests).
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
	int form;		/* index into counter_forms */
	double step;		/* delta or observed value */
	double sample_rate;	/* of deltas and observations */
	int64_t max_reads;	/* 0: no limit */
	int64_t reads;		/* reads so far */
	char *label_key;	/* an extra label on every series, or NULL */
	char *label_value;
	struct tally_labels **labels;	/* {i="0"} .. {i="count-1"} */
};

static const char *const counter_types[] = { "gauge", "counter", NULL };
static const char *const counter_forms[] = { "cumulative", "delta",
					     "observation", "set", NULL };

/* One sample of read @c->reads for series @i in the configured form. */
static int counter_add(struct counter *c, struct tally_batch *out,
		       enum tally_metric_type type, int64_t i, int64_t ts)
{
	char member[32];

	switch (c->form) {
	case TALLY_FORM_DELTA:
		return tally_batch_add_delta(out, type, c->name, NULL,
					     c->labels[i], c->step,
					     c->sample_rate, ts);
	case TALLY_FORM_OBSERVATION:
		return tally_batch_add_observation(out, TALLY_SUMMARY, c->name,
						   NULL, c->labels[i], c->step,
						   c->sample_rate, ts);
	case TALLY_FORM_SET_MEMBER:
		snprintf(member, sizeof(member), "read%lld",
			 (long long)c->reads);
		return tally_batch_add_set_member(out, c->name, NULL,
						  c->labels[i], member, ts);
	}
	return tally_batch_add_metric(out, type, c->name, NULL, c->labels[i],
				      (double)c->reads, ts);
}

/* Exercises the core's check hook: an empty name is a config error. The
 * form counter_forms[i] is TALLY_FORM_* i. */
static int counter_check(struct tally_instance *inst, void *state)
{
	struct counter *c = state;

	if (!*c->name) {
		tally_log(inst, LOG_ERR, "name must not be empty");
		return -1;
	}
	/* only the form it is configured for */
	return tally_instance_set_emits(inst,
					c->form ? TALLY_FORM_BIT(c->form) : 0);
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
		c->labels[i] = c->label_key
				       ? tally_labels_newv("i", idx, c->label_key,
							   c->label_value ? c->label_value
									  : "",
							   NULL)
				       : tally_labels_newv("i", idx, NULL);
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

	if (c->max_reads && c->reads == c->max_reads)
		return 0;
	c->reads++;
	for (int64_t i = 0; i < c->count; i++) {
		if (counter_add(c, out, type, i, ts) < 0)
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
	TALLY_OPT_ENUM("form", struct counter, form, "cumulative",
		       counter_forms,
		       "sample form: the read count, or a delta, an "
		       "observation of step, or a set member"),
	TALLY_OPT_DOUBLE("step", struct counter, step, "1", -1e9, 1e9,
			 "value of each delta or observation"),
	TALLY_OPT_DOUBLE("sample_rate", struct counter, sample_rate, "1",
			 0.000001, 1, "sample rate of deltas and observations"),
	TALLY_OPT_INT("max_reads", struct counter, max_reads, "0", 0, 1e9,
		      "reads that emit samples; 0 = all"),
	TALLY_OPT_STRING("label_key", struct counter, label_key, NULL,
			 "an extra label on every series (any string: "
			 "escaping tests)"),
	TALLY_OPT_STRING("label_value", struct counter, label_value, NULL,
			 "its value"),
	TALLY_OPT_END
};

static const struct tally_input_ops counter_ops = {
	.check = counter_check,
	.init = counter_init,
	.read = counter_read,
	.fini = counter_fini,
	.emits = TALLY_FORMS_STATSD,
};

TALLY_PLUGIN_INPUT(counter, "test only: count samples per read, valued by "
			    "the read number",
		   struct counter, counter_options, &counter_ops);
