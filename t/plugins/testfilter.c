/* SPDX-License-Identifier: MIT */
/*
 * t/plugins/testfilter.c - test-only filter: pass, drop or rewrite batches
 *
 * mode = "pass":    every batch goes on unchanged (the same batch, shared);
 * mode = "drop":    nothing goes on (counted as dropped, reason "filtered");
 * mode = "rewrite": every record goes on renamed "rw_" + name, with a label
 *                   (span: attribute) seq="N", where N counts the batches this
 *                   instance has processed (1 for the first).
 *
 * fail_init = true makes init fail (EIO): a filter that cannot start.
 *
 * seq is per-instance state on purpose: the core gives each pipeline its
 * own instance of a filter, so two pipelines fed by one input each count
 * 1, 2, 3... in their output; a shared instance would interleave them.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <tally/plugin.h>

enum testfilter_mode { TESTFILTER_PASS, TESTFILTER_DROP, TESTFILTER_REWRITE };

struct testfilter {
	int mode;		/* enum testfilter_mode */
	bool fail_init;		/* init fails */
	uint64_t batches;	/* batches seen by this instance */
};

static int testfilter_init(struct tally_instance *inst, void *state)
{
	struct testfilter *f = state;

	if (!f->fail_init)
		return 0;
	errno = EIO;
	return -1;
}

static const char *const testfilter_modes[] = { "pass", "drop", "rewrite",
						NULL };

/* Rename @r to "rw_" + name and add seq=@seq; -1/errno on failure. */
static int testfilter_rewrite_record(struct tally_batch *out,
				     struct tally_record *r, const char *seq)
{
	struct tally_labels **ls = r->kind == TALLY_REC_METRIC
					   ? &r->metric.labels
					   : &r->span.attrs;
	const char **name = r->kind == TALLY_REC_METRIC ? &r->metric.name
							: &r->span.name;
	struct tally_labels *with;
	char buf[512];
	const char *renamed;

	snprintf(buf, sizeof(buf), "rw_%s", *name);
	renamed = tally_batch_strdup(out, buf);
	with = tally_labels_with(*ls, "seq", seq);
	if (!renamed || !with) {
		tally_labels_unref(with);
		errno = ENOMEM;
		return -1;
	}
	/* The batch owns one reference per record: swap ours in. */
	tally_labels_unref(*ls);
	*ls = with;
	*name = renamed;
	return 0;
}

static struct tally_batch *testfilter_process(struct tally_instance *inst,
					      void *state,
					      struct tally_batch *in)
{
	struct testfilter *f = state;
	struct tally_batch *out;
	char seq[24];
	size_t n = tally_batch_count(in);

	f->batches++;
	switch (f->mode) {
	case TESTFILTER_PASS:
		return tally_batch_ref(in);
	case TESTFILTER_DROP:
		tally_count_drop(inst, "filtered", n);
		errno = 0;
		return NULL;
	}

	out = tally_batch_new();
	if (!out)
		return NULL;
	snprintf(seq, sizeof(seq), "%llu", (unsigned long long)f->batches);
	for (size_t i = 0; i < n; i++) {
		struct tally_record *r;

		r = tally_batch_copy_record(out, tally_batch_at(in, i));
		if (!r || testfilter_rewrite_record(out, r, seq) < 0)
			goto out_unref;
	}
	return out;
out_unref:
	tally_batch_unref(out);
	errno = ENOMEM;
	return NULL;
}

static const struct tally_option testfilter_options[] = {
	TALLY_OPT_ENUM("mode", struct testfilter, mode, "pass",
		       testfilter_modes,
		       "pass batches on, drop them, or rewrite each record "
		       "(rw_ prefix, seq label)"),
	TALLY_OPT_BOOL("fail_init", struct testfilter, fail_init, "false",
		       "init fails with EIO (a filter that cannot start)"),
	TALLY_OPT_END
};

static const struct tally_filter_ops testfilter_ops = {
	.init = testfilter_init,
	.process = testfilter_process,
};

TALLY_PLUGIN_FILTER(testfilter, "test only: pass, drop or rewrite batches",
		    struct testfilter, testfilter_options, &testfilter_ops);
