/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/report/render.h - the report as text and JSON: pure code
 * on a join's result (join.h), into a libevent buffer
 */
#ifndef TALLY_REPORT_RENDER_H
#define TALLY_REPORT_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "join.h"

struct evbuffer;

/**
 * struct report_meta - what the report says beside the join's result
 * @host:        node name
 * @jobid:       batch job id, or NULL
 * @begin_ns:    the job's window, CLOCK_REALTIME ns
 * @end_ns:
 * @why:         "end of the command", "SIGUSR1", "shutdown"
 * @orphan_ends: span ends without a begin time: not placed in time
 * @flattened:   flat fragments received (not used: a multi-level stream is
 *               needed)
 * @ended_by_collector: spans the collector ended (process gone, evicted,
 *               lost end): their time runs to when it did
 * @client_dropped: events the traced processes reported dropped
 * @open_cap:    begins not tracked (max_open_spans)
 * @region_cap:  occurrences of (rank, region) pairs over max_regions
 * @picture:     why there is no picture, NULL when there is one
 */
struct report_meta {
	const char *host;
	const char *jobid;
	int64_t begin_ns;
	int64_t end_ns;
	const char *why;
	uint64_t orphan_ends;
	uint64_t flattened;
	uint64_t ended_by_collector;
	uint64_t client_dropped;
	uint64_t open_cap;
	const char *picture;
};

/**
 * report_render_text() - report.txt
 * Return: 0, or -1 with errno = ENOMEM (@out may hold part of it).
 */
int report_render_text(struct evbuffer *out, const struct rj_result *r,
		       const struct report_meta *m);

/**
 * report_render_json() - report.json (one object, RFC 8259; NaN as null)
 * Return: 0, or -1 with errno = ENOMEM.
 */
int report_render_json(struct evbuffer *out, const struct rj_result *r,
		       const struct report_meta *m);

#endif /* TALLY_REPORT_RENDER_H */
