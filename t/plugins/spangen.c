/* SPDX-License-Identifier: MIT */
/*
 * t/plugins/spangen.c - test-only input: spans, histograms, summaries and
 * odd names whose values a test can compute from the read number
 *
 * Read k (1-based; reads after `limit` emit nothing, so series can expire)
 * appends, by mode:
 *
 * shapes:
 *	spangen_events (counter, no _total given)	k
 *	spangen_latency_seconds{path="/a",le="y"} histogram
 *		(its own le label clashes)		le 0.1: k, le 1: 2k,
 *		le 10: 3k, count 4k, sum 1.5k
 *	spangen_rpc_seconds summary			q 0.5: 0.01k,
 *		q 0.99: 0.1k, count 10k, sum k
 *	spangen.odd-name{label.with.dots="a\"b\\c\nd",__reserved="x"}
 *		gauge k
 *	spangen_nan NaN, spangen_inf +Inf, spangen_ninf -Inf (gauges)
 *	spangen_build_info{version="1.0"} info 1
 * generations:
 *	spangen_gen{i="0".."count-1"} gauge k, and histogram
 *	spangen_gen_hist{} with buckets le 1: k, le 2: 2k, count 3k, sum k:
 *	a scrape that sees one batch whole shows one k everywhere and
 *	_count == the +Inf bucket
 * spans (trace `trace`, host "spangen-host", pid 4242 + r, for every rank r <
 *	`ranks`):
 *	read 1: begin of region "main" (depth 0), never ended
 *	every read k: a span of region "step" (depth 1, parent main) that
 *	began (k % 4 + 1) * 0.25 s before the read and ends at the read, so
 *	after n reads its time is the sum of those durations, exactly
 *	representable in binary; jobid attribute `jobid` if set; a typed
 *	string attribute `note_key` = `note` on its end if set
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <tally/plugin.h>

struct spangen {
	int mode;      /* index into spangen_modes */
	int64_t count; /* series of generations mode */
	int64_t limit; /* reads that emit; 0 = all */
	int64_t ranks; /* span sources */
	char *trace;   /* span trace id */
	char *jobid;   /* span "jobid" attribute, or NULL */
	char *note;    /* string value of the step ends, or NULL */
	char *note_key; /* its key */
	int64_t reads;
	struct tally_labels **labels; /* generations: {i="0"} ... */
	struct tally_labels *attrs;   /* spans */
};

enum { SPANGEN_SHAPES, SPANGEN_GENERATIONS, SPANGEN_SPANS };
static const char *const spangen_modes[] = { "shapes", "generations", "spans",
					     NULL };

static void spangen_fini(struct tally_instance *inst, void *state);

static int spangen_init(struct tally_instance *inst, void *state)
{
	struct spangen *g = state;
	char idx[24];

	if (g->mode == SPANGEN_GENERATIONS) {
		g->labels = calloc((size_t)g->count + 1, sizeof(*g->labels));
		if (!g->labels)
			return -1;
		for (int64_t i = 0; i < g->count; i++) {
			snprintf(idx, sizeof(idx), "%lld", (long long)i);
			g->labels[i] = tally_labels_newv("i", idx, NULL);
			if (!g->labels[i])
				goto out_free;
		}
	}
	if (g->jobid && *g->jobid) {
		g->attrs = tally_labels_newv("jobid", g->jobid, NULL);
		if (!g->attrs)
			goto out_free;
	}
	return 0;

out_free:
	spangen_fini(inst, g);
	errno = ENOMEM;
	return -1;
}

static int spangen_shapes(struct spangen *g, struct tally_batch *out,
			  int64_t ts)
{
	double k = (double)g->reads;
	uint64_t ku = (uint64_t)g->reads;
	struct tally_bucket bk[] = { { 0.1, ku },
				     { 1, 2 * ku },
				     { 10, 3 * ku } };
	struct tally_quantile qs[] = { { 0.5, 0.01 * k }, { 0.99, 0.1 * k } };
	struct tally_labels *path =
		tally_labels_newv("path", "/a", "le", "y", NULL);
	struct tally_labels *odd = tally_labels_newv(
		"label.with.dots", "a\"b\\c\nd", "__reserved", "x", NULL);
	struct tally_labels *ver = tally_labels_newv("version", "1.0", NULL);
	int rc = -1;

	if (!path || !odd || !ver)
		goto out;
	if (tally_batch_add_metric(out, TALLY_COUNTER, "spangen_events",
				   "Reads of the spangen input", NULL, k,
				   ts) < 0 ||
	    tally_batch_add_histogram(out, "spangen_latency_seconds",
				      "A histogram of the read number", path,
				      bk, 3, 4 * ku, 1.5 * k, ts) < 0 ||
	    tally_batch_add_summary(out, "spangen_rpc_seconds",
				    "A summary of the read number", NULL, qs, 2,
				    10 * ku, k, ts) < 0 ||
	    tally_batch_add_metric(out, TALLY_GAUGE, "spangen.odd-name",
				   "A name and labels to sanitize", odd, k,
				   ts) < 0 ||
	    tally_batch_add_metric(out, TALLY_GAUGE, "spangen_nan",
				   "Not a number", NULL, NAN, ts) < 0 ||
	    tally_batch_add_metric(out, TALLY_GAUGE, "spangen_inf",
				   "Positive infinity", NULL, INFINITY,
				   ts) < 0 ||
	    tally_batch_add_metric(out, TALLY_GAUGE, "spangen_ninf",
				   "Negative infinity", NULL, -INFINITY,
				   ts) < 0 ||
	    tally_batch_add_metric(out, TALLY_INFO, "spangen_build_info",
				   "Build information", ver, 1, ts) < 0)
		goto out;
	rc = 0;
out:
	tally_labels_unref(path);
	tally_labels_unref(odd);
	tally_labels_unref(ver);
	return rc;
}

static int spangen_generations(struct spangen *g, struct tally_batch *out,
			       int64_t ts)
{
	uint64_t k = (uint64_t)g->reads;
	struct tally_bucket bk[] = { { 1, k }, { 2, 2 * k } };

	for (int64_t i = 0; i < g->count; i++)
		if (tally_batch_add_metric(out, TALLY_GAUGE, "spangen_gen",
					   "Read number, same in every series",
					   g->labels[i], (double)k, ts) < 0)
			return -1;
	return tally_batch_add_histogram(out, "spangen_gen_hist",
					 "Buckets k and 2k, count 3k", NULL, bk,
					 2, 3 * k, (double)k, ts);
}

static int spangen_spans(struct spangen *g, struct tally_batch *out, int64_t ts)
{
	int64_t dur = (g->reads % 4 + 1) * 250000000LL;
	struct tally_attr note;

	for (int64_t r = 0; r < g->ranks; r++) {
		struct tally_span sp = {
			.trace = g->trace,
			.src = { .host = "spangen-host",
				 .pid = 4242 + (uint32_t)r,
				 .tid = 4242 + (uint32_t)r,
				 .rank = (int32_t)r },
			.attrs = g->attrs,
		};

		if (g->reads == 1) {
			sp.name = "main";
			sp.span_id = 1;
			sp.phase = TALLY_SPAN_BEGIN;
			sp.begin_ns = ts;
			if (tally_batch_add_span(out, &sp, ts) < 0)
				return -1;
		}
		sp.name = "step";
		sp.span_id = (uint64_t)g->reads + 1;
		sp.parent_id = 1;
		sp.depth = 1;
		sp.phase = TALLY_SPAN_BEGIN;
		sp.begin_ns = ts - dur;
		if (tally_batch_add_span(out, &sp, ts - dur) < 0)
			return -1;
		sp.phase = TALLY_SPAN_END;
		if (g->note) {
			note = TALLY_ATTR_STRING(g->note_key, g->note);
			sp.values = &note;
			sp.nvalues = 1;
		}
		if (tally_batch_add_span(out, &sp, ts) < 0)
			return -1;
	}
	return 0;
}

static int spangen_read(struct tally_instance *inst, void *state,
			struct tally_batch *out)
{
	struct spangen *g = state;
	int64_t ts = tally_now_ns();

	if (g->limit && g->reads >= g->limit)
		return 0;
	g->reads++;
	switch (g->mode) {
	case SPANGEN_SHAPES:
		return spangen_shapes(g, out, ts);
	case SPANGEN_GENERATIONS:
		return spangen_generations(g, out, ts);
	default:
		return spangen_spans(g, out, ts);
	}
}

static void spangen_fini(struct tally_instance *inst, void *state)
{
	struct spangen *g = state;

	if (g->labels)
		for (int64_t i = 0; i < g->count; i++)
			tally_labels_unref(g->labels[i]);
	free(g->labels);
	g->labels = NULL;
	tally_labels_unref(g->attrs);
	g->attrs = NULL;
}

static const struct tally_option spangen_options[] = {
	TALLY_OPT_ENUM("mode", struct spangen, mode, "shapes", spangen_modes,
		       "what each read emits: shapes, generations or spans"),
	TALLY_OPT_INT("count", struct spangen, count, "10", 0, 1000000,
		      "series per read in generations mode"),
	TALLY_OPT_INT("limit", struct spangen, limit, "0", 0, 1e15,
		      "reads that emit anything; 0 = every read"),
	TALLY_OPT_INT("ranks", struct spangen, ranks, "2", 1, 100000,
		      "span sources (ranks 0 .. ranks-1) in spans mode"),
	TALLY_OPT_STRING("trace", struct spangen, trace, "T",
			 "trace id of the spans"),
	TALLY_OPT_STRING("jobid", struct spangen, jobid, NULL,
			 "jobid attribute of the spans"),
	TALLY_OPT_STRING("note", struct spangen, note, NULL,
			 "a typed string attribute of every step end (any "
			 "string: escaping tests)"),
	TALLY_OPT_STRING("note_key", struct spangen, note_key, "note",
			 "its key"),
	TALLY_OPT_END
};

static const struct tally_input_ops spangen_ops = {
	.init = spangen_init,
	.read = spangen_read,
	.fini = spangen_fini,
};

TALLY_PLUGIN_INPUT(spangen,
		   "test only: spans, histograms, summaries and odd "
		   "names valued by the read number",
		   struct spangen, spangen_options, &spangen_ops);
