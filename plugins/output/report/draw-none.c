/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/report/draw-none.c - the report without its picture:
 * tally was built without cairo (configure says so)
 */
#include "config.h"

#include <errno.h>

#include "draw.h"

int report_draw(const struct rj *j, const struct rj_result *r,
		const struct report_meta *m, const char *svg, const char *png,
		int width)
{
	errno = ENOTSUP;
	return -1;
}

const char *report_draw_missing(void)
{
	return "tally was built without cairo: " CAIRO_MISSING;
}
