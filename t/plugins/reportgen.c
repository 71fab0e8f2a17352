/* SPDX-License-Identifier: MIT */
/*
 * t/plugins/reportgen.c - test-only input: a known job for the report
 * output, emitted at once when it starts
 *
 * The job spans [T0, T0 + 1000 s], T0 being the whole second 500 s before
 * the input starts (so tallyd's start and a quick command's end fall
 * inside it). Samples every 10 s, at T0 + 10 k for k = 1 .. 100 (the host's
 * CPU counters also at T0):
 *   GPU c (c < gpus): rocm_utilization_percentage{card="c"} 20 + 10 c up
 *	to T0 + 500, 80 after; rocm_average_socket_power_watts 100 + 50 c,
 *	then 300; rocm_vram_total_bytes 64 GiB and rocm_vram_used_percentage
 *	25 then 50
 *   host (host = true): node_cpu_seconds_total{cpu="0",mode="user"|"idle"}
 *	4 and 6 s more every 10 s up to T0 + 500 (40 % busy), 9 and 1 after
 *	(90 %); node_memory_MemTotal_bytes 100 GiB, MemAvailable_bytes 90 GiB
 *	then 70 GiB
 * Spans of every rank r < ranks (trace "job", host "reportgen-host", pid
 *	1000 + r), with tally_trace_source_info{rank="r",
 *	hip_visible_devices="r"} when gpus > r:
 *	main   [0, 1000]                 depth 0
 *	init   [0, 100]                  depth 1
 *	io     [100 + 100 i, 200 + 100 i] for i < 4, depth 1
 *	solve  [500, 600 + 100 r]        depth 1
 *	kernel [500, 550]                depth 2, in solve
 *   (seconds after T0; begins and ends as zmq_trace sends them)
 * regions = N: instead, N distinct regions "rNNNNNN", region i on rank
 *	i % 4 over [T0 + 1, T0 + 1 + (i + 1) µs]
 * bad = true: besides, an end of region "long" whose begin is T0 - 100 s
 *	(longer than the job), a second memory sample at a time already seen
 *	(a clock step), and GPU gpus - 1 sends nothing after T0 + 500
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include <tally/plugin.h>

#define S(x) ((int64_t)(x)*1000000000LL)
#define GIB  (1024.0 * 1024 * 1024)

struct reportgen {
	int64_t ranks;
	int64_t gpus;
	bool host;
	int64_t regions;
	bool bad;
};

static int gauge(struct tally_batch *b, const char *name, const char *k1,
		 const char *v1, const char *k2, const char *v2, double v,
		 int64_t ts, enum tally_metric_type type)
{
	struct tally_labels *l = tally_labels_newv(k1, v1, k2, v2, NULL);
	int rc;

	if (!l)
		return -1;
	rc = tally_batch_add_metric(b, type, name, NULL, l, v, ts);
	tally_labels_unref(l);
	return rc;
}

static int series(struct reportgen *g, struct tally_batch *b, int64_t t0)
{
	char card[16];

	for (int k = 0; k <= 100; k++) {
		int64_t ts = t0 + S(10 * k);
		bool late = k > 50;

		for (int c = 0; k && c < g->gpus; c++) {
			if (g->bad && c == g->gpus - 1 && late)
				continue;
			snprintf(card, sizeof(card), "%d", c);
			if (gauge(b, "rocm_utilization_percentage", "card",
				  card, NULL, NULL, late ? 80 : 20 + 10 * c, ts,
				  TALLY_GAUGE) < 0 ||
			    gauge(b, "rocm_average_socket_power_watts", "card",
				  card, NULL, NULL, late ? 300 : 100 + 50 * c,
				  ts, TALLY_GAUGE) < 0 ||
			    gauge(b, "rocm_vram_total_bytes", "card", card,
				  NULL, NULL, 64 * GIB, ts, TALLY_GAUGE) < 0 ||
			    gauge(b, "rocm_vram_used_percentage", "card", card,
				  NULL, NULL, late ? 50 : 25, ts,
				  TALLY_GAUGE) < 0)
				return -1;
		}
		if (!g->host)
			continue;
		if (gauge(b, "node_cpu_seconds_total", "cpu", "0", "mode",
			  "user", late ? 200 + 9 * (k - 50) : 4 * k, ts,
			  TALLY_COUNTER) < 0 ||
		    gauge(b, "node_cpu_seconds_total", "cpu", "0", "mode",
			  "idle", late ? 300 + (k - 50) : 6 * k, ts,
			  TALLY_COUNTER) < 0)
			return -1;
		if (!k)
			continue;
		if (gauge(b, "node_memory_MemTotal_bytes", NULL, NULL, NULL,
			  NULL, 100 * GIB, ts, TALLY_GAUGE) < 0 ||
		    gauge(b, "node_memory_MemAvailable_bytes", NULL, NULL, NULL,
			  NULL, late ? 70 * GIB : 90 * GIB, ts,
			  TALLY_GAUGE) < 0)
			return -1;
	}
	return 0;
}

static int span(struct tally_batch *b, int32_t rank, const char *name,
		uint64_t id, uint64_t parent, uint32_t depth, int64_t begin,
		int64_t end)
{
	struct tally_span sp = {
		.trace = "job",
		.name = name,
		.span_id = id,
		.parent_id = parent,
		.depth = depth,
		.src = { .host = "reportgen-host",
			 .pid = 1000 + (uint32_t)rank,
			 .rank = rank },
	};

	sp.phase = TALLY_SPAN_BEGIN;
	sp.begin_ns = begin;
	if (begin && tally_batch_add_span(b, &sp, begin) < 0)
		return -1;
	sp.phase = TALLY_SPAN_END;
	return tally_batch_add_span(b, &sp, end);
}

static int trace(struct reportgen *g, struct tally_batch *b, int64_t t0)
{
	char dev[16], rank[16];

	for (int32_t r = 0; r < g->ranks; r++) {
		snprintf(dev, sizeof(dev), "%d", r);
		snprintf(rank, sizeof(rank), "%d", r);
		if (g->gpus > r &&
		    gauge(b, "tally_trace_source_info", "rank", rank,
			  "hip_visible_devices", dev, 1, t0, TALLY_INFO) < 0)
			return -1;
		if (g->regions)
			continue;
		if (span(b, r, "init", 2, 1, 1, t0, t0 + S(100)) < 0)
			return -1;
		for (int i = 0; i < 4; i++)
			if (span(b, r, "io", 3 + (uint64_t)i, 1, 1,
				 t0 + S(100 + 100 * i),
				 t0 + S(200 + 100 * i)) < 0)
				return -1;
		if (span(b, r, "kernel", 8, 7, 2, t0 + S(500), t0 + S(550)) <
			    0 ||
		    span(b, r, "solve", 7, 1, 1, t0 + S(500),
			 t0 + S(600 + 100 * r)) < 0 ||
		    span(b, r, "main", 1, 0, 0, t0, t0 + S(1000)) < 0)
			return -1;
	}
	for (int64_t i = 0; i < g->regions; i++) {
		char name[32];

		snprintf(name, sizeof(name), "r%06lld", (long long)i);
		if (span(b, (int32_t)(i % 4), name, 100 + (uint64_t)i, 0, 0,
			 t0 + S(1), t0 + S(1) + (i + 1) * 1000) < 0)
			return -1;
	}
	return 0;
}

static int reportgen_start(struct tally_instance *inst, void *state,
			   struct event_base *base)
{
	struct reportgen *g = state;
	struct tally_batch *b = tally_batch_new();
	int64_t t0 = (tally_now_ns() / S(1) - 500) * S(1);

	if (!b)
		return -1;
	if (series(g, b, t0) < 0 || trace(g, b, t0) < 0)
		goto out_free;
	if (g->bad) {
		struct tally_span sp = {
			.trace = "job",
			.name = "long",
			.span_id = 99,
			.phase = TALLY_SPAN_END,
			.begin_ns = t0 - S(100),
			.src = { .host = "reportgen-host",
				 .pid = 1000,
				 .rank = 0 },
		};

		if (tally_batch_add_span(b, &sp, t0 + S(1000)) < 0 ||
		    (g->host &&
		     gauge(b, "node_memory_MemTotal_bytes", NULL, NULL, NULL,
			   NULL, 100 * GIB, t0 + S(500), TALLY_GAUGE) < 0) ||
		    (g->host &&
		     gauge(b, "node_memory_MemAvailable_bytes", NULL, NULL,
			   NULL, NULL, 0, t0 + S(500), TALLY_GAUGE) < 0))
			goto out_free;
	}
	tally_log(inst, LOG_INFO, "job from %lld to %lld", (long long)t0,
		  (long long)(t0 + S(1000)));
	return tally_emit(inst, b);

out_free:
	tally_batch_unref(b);
	return -1;
}

static const struct tally_option reportgen_options[] = {
	TALLY_OPT_INT("ranks", struct reportgen, ranks, "4", 0, 64,
		      "traced ranks (0: no trace)"),
	TALLY_OPT_INT("gpus", struct reportgen, gpus, "4", 0, 64,
		      "GPUs (0: no GPU series)"),
	TALLY_OPT_BOOL("host", struct reportgen, host, "true",
		       "host CPU and memory series"),
	TALLY_OPT_INT("regions", struct reportgen, regions, "0", 0, 10000000,
		      "instead of the nested trace, this many distinct "
		      "regions"),
	TALLY_OPT_BOOL("bad", struct reportgen, bad, "false",
		       "a region longer than the job, a clock step, a GPU "
		       "that vanishes"),
	TALLY_OPT_END
};

static const struct tally_input_ops reportgen_ops = {
	.start = reportgen_start,
};

TALLY_PLUGIN_INPUT(reportgen, "test-only: a known job for the report output",
		   struct reportgen, reportgen_options, &reportgen_ops);
