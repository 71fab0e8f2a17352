/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/report/draw.h - report.svg and report.png, drawn with
 * cairo (draw.c); without cairo at build time, draw-none.c says so
 */
#ifndef TALLY_REPORT_DRAW_H
#define TALLY_REPORT_DRAW_H

#include <stddef.h>

#include "join.h"
#include "render.h"

/* Height of the picture, in pixels, for its number of lanes. */
#define REPORT_DRAW_HEIGHT(ranks, gpus) \
	(60 + 18 * (size_t)(ranks) + 90 * (1 + ((gpus) > 0 ? 2 : 0)) + 40)

/**
 * report_draw() - the timeline: one lane per rank with its regions (the
 * innermost one shown where they nest), then GPU utilization and power
 * per device and host CPU over the same time axis
 * @j, @r:   the join and its result (rj_compute() of the same window)
 * @m:       the job's window and names
 * @svg:     path of the SVG file to write (replaced whole)
 * @png:     path of the PNG file to write (replaced whole)
 * @width:   pixels; the height is REPORT_DRAW_HEIGHT() of the ranks
 *           drawn (at most 64) and whether there are GPUs
 *
 * Return: 0, or -1 with errno = ENOTSUP (built without cairo), ENOMEM, or
 * what writing a file set.
 */
int report_draw(const struct rj *j, const struct rj_result *r,
		const struct report_meta *m, const char *svg, const char *png,
		int width);

/* Lanes drawn at most; the others are left out (the picture says so). */
#define REPORT_DRAW_MAX_LANES 64

/** report_draw_missing() - why there is no picture, NULL when there is */
const char *report_draw_missing(void);

#endif /* TALLY_REPORT_DRAW_H */
