/* SPDX-License-Identifier: MIT */
/*
 * t/plugins/opttypes.c - test-only input: one option of each typed kind
 * the core parses (lists of numbers, sizes, durations, wide integers),
 * read back as samples
 *
 * Each read appends
 *	test_opt_bucket{i="<i>"} <buckets[i]>
 *	test_opt_percentile{i="<i>"} <percentiles[i]>
 *	test_opt_size_bytes <max_size>
 *	test_opt_timeout_seconds <timeout>
 *	test_opt_big <big>
 * so a test can check what the core made of what the configuration says.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>

#include <tally/plugin.h>

struct opttypes {
	struct tally_numbers buckets;
	struct tally_numbers percentiles;
	uint64_t max_size;
	double timeout;
	int64_t big;
};

static int opttypes_add(struct tally_batch *out, const char *name,
			const char *i, double v)
{
	struct tally_labels *l = i ? tally_labels_newv("i", i, NULL) : NULL;
	int r;

	if (i && !l)
		return -1;
	r = tally_batch_add_metric(out, TALLY_GAUGE, name, NULL, l, v, 0);
	tally_labels_unref(l);
	return r;
}

static int opttypes_list(struct tally_batch *out, const char *name,
			 const struct tally_numbers *l)
{
	char i[24];

	for (size_t k = 0; k < l->n; k++) {
		snprintf(i, sizeof(i), "%zu", k);
		if (opttypes_add(out, name, i, l->v[k]) < 0)
			return -1;
	}
	return 0;
}

static int opttypes_read(struct tally_instance *inst, void *state,
			 struct tally_batch *out)
{
	struct opttypes *o = state;

	if (opttypes_list(out, "test_opt_bucket", &o->buckets) < 0 ||
	    opttypes_list(out, "test_opt_percentile", &o->percentiles) < 0 ||
	    opttypes_add(out, "test_opt_size_bytes", NULL,
			 (double)o->max_size) < 0 ||
	    opttypes_add(out, "test_opt_timeout_seconds", NULL, o->timeout) <
		    0 ||
	    opttypes_add(out, "test_opt_big", NULL, (double)o->big) < 0)
		return -1;
	return 0;
}

static const struct tally_option opttypes_options[] = {
	TALLY_OPT_NUMBERS_INCREASING("buckets", struct opttypes, buckets,
				     "0.1,1,10", 0, 1e9,
				     "histogram bucket bounds, increasing"),
	TALLY_OPT_NUMBERS("percentiles", struct opttypes, percentiles,
			  "50,90,99", 0, 100, "percentiles to report"),
	TALLY_OPT_SIZE("max_size", struct opttypes, max_size, "64MiB", 1,
		       1099511627776.0, "largest batch in bytes"),
	TALLY_OPT_DURATION("timeout", struct opttypes, timeout, "30s", 0.001,
			   86400, "how long to wait"),
	TALLY_OPT_INT("big", struct opttypes, big, "0", 1, 0,
		      "any 64-bit integer"),
	TALLY_OPT_END
};

static const struct tally_input_ops opttypes_ops = {
	.read = opttypes_read,
};

TALLY_PLUGIN_INPUT(opttypes, "test only: typed options read back as samples",
		   struct opttypes, opttypes_options, &opttypes_ops);
