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

/**
 * report_draw() - the timeline: one lane per rank with its regions (the
 * innermost one shown where they nest), then GPU utilization and power
 * per device and host CPU over the same time axis
 * @j, @r:   the join and its result (rj_compute() of the same window)
 * @m:       the job's window and names
 * @svg:     path of the SVG file to write (replaced whole)
 * @png:     path of the PNG file to write (replaced whole)
 * @width:   pixels; the height is 60, plus a lane per rank drawn (at most
 *           REPORT_DRAW_MAX_LANES; 18 pixels each up to 16 ranks, 10 up
 *           to 32, 6 beyond), plus 90 per panel (three with GPUs, one
 *           without), plus 40
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
