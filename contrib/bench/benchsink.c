/* SPDX-License-Identifier: MIT */
/*
 * contrib/bench/benchsink.c - bench-only output: count records, time them
 *
 * The cheapest possible output, so that an end-to-end benchmark of an input
 * (zmq_trace ingest) measures the input and the core's pipeline, not the
 * cost of formatting: the reference receivers it is compared with
 * (zmq-pull.c, pyzmq-drain.py) do nothing per message either.
 *
 * It counts the records of the configured kind and, when @count of them
 * have arrived, writes one line to @path in the same form as the reference
 * receivers:
 *   records=N secs=S cpu_s=C rate=R cpu_ns_per=P batches=B
 * where the window runs from the first record to the count-th: wall time
 * on CLOCK_MONOTONIC, CPU from getrusage(RUSAGE_SELF) (all of tallyd's
 * threads). If fewer arrive, the line is written at flush (shutdown) with
 * what was seen, so the harness can tell a loss from a slow run.
 *
 * Built only by `make bench` (contrib/local.mk), never installed.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <tally/plugin.h>

#include "bench.h"

struct benchsink {
	char *path;	  /* report file, from the option table */
	int64_t count;	  /* records to wait for (0: report at flush) */
	int kind;	  /* index into benchsink_kinds */
	uint64_t records; /* matching records seen so far */
	uint64_t batches; /* batches seen so far */
	int64_t t_first;  /* monotonic ns at the first record */
	int64_t c_first;  /* process CPU ns at the first record */
	int64_t t_last;
	int64_t c_last;
	bool reported;
};

static const char *const benchsink_kinds[] = { "any", "span", "metric", NULL };

static void benchsink_report(struct tally_instance *inst, struct benchsink *s)
{
	double secs = (double)(s->t_last - s->t_first) / 1e9;
	double cpu = (double)(s->c_last - s->c_first) / 1e9;
	FILE *f;

	s->reported = true;
	f = fopen(s->path, "w");
	if (!f) {
		tally_log(inst, LOG_ERR, "open %s: %m", s->path);
		return;
	}
	/* The window opens at record 1: it spans records - 1 records. */
	fprintf(f,
		"records=%" PRIu64 " secs=%.6f cpu_s=%.6f rate=%.0f "
		"cpu_ns_per=%.0f batches=%" PRIu64 "\n",
		s->records, secs, cpu,
		s->records > 1 && secs > 0 ? (double)(s->records - 1) / secs
					   : 0,
		s->records > 1 ? cpu * 1e9 / (double)(s->records - 1) : 0,
		s->batches);
	fclose(f);
}

static int benchsink_write(struct tally_instance *inst, void *state,
			   struct tally_batch *b)
{
	struct benchsink *s = state;
	size_t n = tally_batch_count(b), matching = n;

	if (s->kind != 0) {
		enum tally_record_kind want =
			s->kind == 1 ? TALLY_REC_SPAN : TALLY_REC_METRIC;

		matching = 0;
		for (size_t i = 0; i < n; i++)
			matching += tally_batch_at(b, i)->kind == want;
	}
	if (!matching || s->reported)
		return 0;
	s->batches++;
	if (s->records == 0) {
		s->t_first = tally_monotonic_ns();
		s->c_first = bench_cpu_ns();
	}
	s->records += matching;
	if (s->count > 0 && s->records >= (uint64_t)s->count) {
		s->t_last = tally_monotonic_ns();
		s->c_last = bench_cpu_ns();
		benchsink_report(inst, s);
	}
	return 0;
}

static int benchsink_flush(struct tally_instance *inst, void *state)
{
	struct benchsink *s = state;

	if (!s->reported) {
		s->t_last = tally_monotonic_ns();
		s->c_last = bench_cpu_ns();
		benchsink_report(inst, s);
	}
	return 0;
}

static const struct tally_option benchsink_options[] = {
	TALLY_OPT_STRING_REQ("path", struct benchsink, path,
			     "file the report line is written to"),
	TALLY_OPT_INT("count", struct benchsink, count, "0", 0, 1e12,
		      "report once this many records arrived (0: at shutdown)"),
	TALLY_OPT_ENUM("kind", struct benchsink, kind, "any", benchsink_kinds,
		       "which records to count: any, span or metric"),
	TALLY_OPT_END
};

static const struct tally_output_ops benchsink_ops = {
	.write = benchsink_write,
	.flush = benchsink_flush,
	/* it only counts: statsd's deltas, observations and set members too */
	.accepts = TALLY_FORMS_STATSD,
};

TALLY_PLUGIN_OUTPUT(benchsink, "bench only: count and time records, no output",
		    struct benchsink, benchsink_options, &benchsink_ops);
