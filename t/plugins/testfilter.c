/* SPDX-License-Identifier: MIT */
/*
 * t/plugins/testfilter.c - test-only filter: pass, drop or rewrite batches
 *
 * mode = "pass":    every batch goes on unchanged (the same batch, shared);
 * mode = "drop":    nothing goes on (counted as dropped, reason "filtered",
 *                   keyed by the batch's source: tally_count_drop_key());
 * mode = "rewrite": every record goes on renamed "rw_" + name, with a label
 *                   (span: attribute) seq="N", where N counts the batches this
 *                   instance has processed (1 for the first).
 * mode = "defer":   process passes nothing on; a timer of the filter's own
 *                   (0 s) then sends the batch on with tally_emit(), so it
 *                   enters the pipeline after this filter. process first
 *                   tries tally_emit() itself, which the core must refuse
 *                   (EBUSY): counted as event "emit_refused_in_process",
 *                   anything else as drop "emit_in_process_accepted".
 *
 * The filter declares that it absorbs every non-cumulative sample form, as
 * aggregate does, so a test may put it in front of an output that takes
 * none; in pass mode it passes them on all the same, which is how a test
 * reaches the core's last-line drop of forms an output does not take.
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

#include <event2/event.h>

#include <tally/plugin.h>
#include <tally/stats.h>

enum testfilter_mode {
	TESTFILTER_PASS,
	TESTFILTER_DROP,
	TESTFILTER_REWRITE,
	TESTFILTER_DEFER,
};

#define TESTFILTER_MAX_PENDING 64

struct testfilter {
	int mode;		/* enum testfilter_mode */
	bool fail_init;		/* init fails */
	uint64_t batches;	/* batches seen by this instance */
	struct tally_instance *inst;
	struct event *timer; /* defer: sends the pending batches on */
	struct tally_batch *pending[TESTFILTER_MAX_PENDING];
	size_t npending;
};

static const char *const testfilter_modes[] = { "pass", "drop", "rewrite",
						"defer", NULL };

/* defer: the filter's own callback, outside process: emit is allowed */
static void testfilter_send(evutil_socket_t fd, short what, void *arg)
{
	struct testfilter *f = arg;

	for (size_t i = 0; i < f->npending; i++) {
		if (tally_emit(f->inst, f->pending[i]) < 0)
			tally_log(f->inst, LOG_ERR, "emit: %s",
				  strerror(errno));
	}
	f->npending = 0;
}

static int testfilter_init(struct tally_instance *inst, void *state)
{
	struct testfilter *f = state;

	f->inst = inst;
	if (f->fail_init) {
		errno = EIO;
		return -1;
	}
	if (f->mode != TESTFILTER_DEFER)
		return 0;
	f->timer = evtimer_new(tally_instance_base(inst), testfilter_send, f);
	return f->timer ? 0 : -1;
}

static void testfilter_fini(struct tally_instance *inst, void *state)
{
	struct testfilter *f = state;

	if (f->timer)
		event_free(f->timer);
	for (size_t i = 0; i < f->npending; i++)
		tally_batch_unref(f->pending[i]);
}

static struct tally_batch *testfilter_defer(struct testfilter *f,
					    struct tally_batch *in)
{
	struct timeval now = { 0, 0 };

	/* the core refuses an emit from inside process */
	if (tally_emit(f->inst, tally_batch_ref(in)) < 0 && errno == EBUSY)
		tally_count_event(f->inst, "emit_refused_in_process", 1);
	else
		tally_count_drop(f->inst, "emit_in_process_accepted", 1);
	if (f->npending == TESTFILTER_MAX_PENDING) {
		tally_count_drop(f->inst, "filtered", tally_batch_count(in));
	} else {
		f->pending[f->npending++] = tally_batch_ref(in);
		evtimer_add(f->timer, &now);
	}
	errno = 0;
	return NULL;
}

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
		tally_count_drop_key(inst, "filtered", tally_batch_source(in),
				     n);
		errno = 0;
		return NULL;
	case TESTFILTER_DEFER:
		return testfilter_defer(f, in);
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
		       "pass batches on, drop them, rewrite each record "
		       "(rw_ prefix, seq label), or defer them to a timer"),
	TALLY_OPT_BOOL("fail_init", struct testfilter, fail_init, "false",
		       "init fails with EIO (a filter that cannot start)"),
	TALLY_OPT_END
};

static const struct tally_filter_ops testfilter_ops = {
	.init = testfilter_init,
	.process = testfilter_process,
	.fini = testfilter_fini,
	.absorbs = TALLY_FORMS_STATSD,
};

TALLY_PLUGIN_FILTER(testfilter,
		    "test only: pass, drop, rewrite or defer batches",
		    struct testfilter, testfilter_options, &testfilter_ops);
