/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/report/draw.c - report.svg and report.png with cairo
 *
 * One picture, drawn twice (an SVG surface, then an image surface written
 * as PNG): a lane per rank with its regions, the longest drawn first so
 * that a nested region shows over its parent (the innermost one where they
 * nest, as a flat rendering); under them GPU utilization and GPU power per
 * device and the host's CPU, on the same time axis (seconds from the job's
 * start). Region colours follow the legend of the report's top regions;
 * others are grey.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cairo.h>
#include <cairo-svg.h>

#include "draw.h"

#define LEFT  90.0
#define RIGHT 20.0
#define TOP   60.0
#define PANEL 90.0

struct win {
	int32_t rank;
	const char *name;
	int64_t b, e;
};

struct pic {
	const struct rj *j;
	const struct rj_result *r;
	const struct report_meta *m;
	struct win *w;
	size_t nw, capw;
	bool oom;
	size_t lanes;
	int width, height;
	cairo_surface_t *lanes_img; /* the lanes, a pixel per column */
	double lane;		    /* a lane's height, pixels */
};

/* lanes get thinner with more ranks, so that 64 fit in a screen */
static double lane_height(size_t lanes)
{
	return lanes <= 16 ? 18 : lanes <= 32 ? 10 : 6;
}

static const double palette[][3] = {
	{ 0.12, 0.47, 0.71 }, { 1.00, 0.50, 0.05 }, { 0.17, 0.63, 0.17 },
	{ 0.84, 0.15, 0.16 }, { 0.58, 0.40, 0.74 }, { 0.55, 0.34, 0.29 },
	{ 0.89, 0.47, 0.76 }, { 0.74, 0.74, 0.13 }, { 0.09, 0.75, 0.81 },
	{ 0.50, 0.50, 0.50 },
};
#define NCOLOURS (sizeof(palette) / sizeof(palette[0]))

static void collect(void *ctx, int32_t rank, const char *name, int64_t b,
		    int64_t e)
{
	struct pic *p = ctx;

	if (p->nw == p->capw) {
		size_t cap = p->capw ? p->capw * 2 : 256;
		struct win *w = realloc(p->w, cap * sizeof(*w));

		if (!w) {
			p->oom = true;
			return;
		}
		p->w = w;
		p->capw = cap;
	}
	p->w[p->nw++] = (struct win){ rank, name, b, e };
}

static int longest_first(const void *a, const void *b)
{
	const struct win *x = a, *y = b;
	int64_t dx = x->e - x->b, dy = y->e - y->b;

	return (dx < dy) - (dx > dy);
}

/* the legend's colour of a region (its row among the top ones), or grey */
static size_t colour_of(const struct pic *p, const char *name)
{
	size_t k = 0;

	for (size_t i = 0; i < p->r->nrows && k < NCOLOURS - 1; i++) {
		if (p->r->rows[i].folded)
			break;
		if (!strcmp(p->r->rows[i].name, name))
			return k;
		k++;
	}
	return NCOLOURS - 1;
}

static double x_of(const struct pic *p, int64_t t)
{
	double span = (double)(p->m->end_ns - p->m->begin_ns);
	double x = (double)(t - p->m->begin_ns) / span;

	x = x < 0 ? 0 : x > 1 ? 1 : x;
	return LEFT + x * ((double)p->width - LEFT - RIGHT);
}

static int lane_of(const struct pic *p, int32_t rank)
{
	for (size_t i = 0; i < p->lanes; i++)
		if (p->r->ranks[i].rank == rank)
			return (int)i;
	return -1;
}

/*
 * The lanes as one image, a colour per pixel column: windows are painted
 * longest first, so that where regions nest the innermost shows. Drawing
 * each occurrence as a shape of its own made a 64-rank job's SVG tens of
 * megabytes and took seconds; a lane holds at most a column's worth of
 * information anyway.
 */
static int lanes_raster(struct pic *p)
{
	int w = (int)((double)p->width - LEFT - RIGHT);
	int h = (int)((double)p->lanes * p->lane);
	int edge = p->lane > 10 ? 2 : 1;
	unsigned char *idx = NULL;
	uint32_t *px;
	int stride;

	if (!p->lanes || w <= 0)
		return 0;
	idx = calloc((size_t)w * p->lanes, 1);
	if (!idx)
		goto out_nomem;
	for (size_t i = 0; i < p->nw; i++) {
		int lane = lane_of(p, p->w[i].rank);
		unsigned char c;
		int x0, x1;

		if (lane < 0)
			continue;
		c = (unsigned char)(1 + colour_of(p, p->w[i].name));
		x0 = (int)floor(x_of(p, p->w[i].b) - LEFT);
		x1 = (int)ceil(x_of(p, p->w[i].e) - LEFT);
		if (x1 <= x0)
			x1 = x0 + 1;
		for (int x = x0 < 0 ? 0 : x0; x < x1 && x < w; x++)
			idx[(size_t)lane * (size_t)w + (size_t)x] = c;
	}
	p->lanes_img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
	if (cairo_surface_status(p->lanes_img) != CAIRO_STATUS_SUCCESS)
		goto out_nomem;
	cairo_surface_flush(p->lanes_img);
	px = (uint32_t *)(void *)cairo_image_surface_get_data(p->lanes_img);
	stride = cairo_image_surface_get_stride(p->lanes_img) / 4;
	for (int y = 0; y < h; y++) {
		size_t lane = (size_t)y / (size_t)p->lane;
		int in = y % (int)p->lane;

		for (int x = 0; x < w; x++) {
			unsigned k = idx[lane * (size_t)w + (size_t)x];
			const double *c = palette[k ? k - 1 : 0];
			uint32_t v = 0xffffff;

			if (k && in >= edge && in < (int)p->lane - edge)
				v = (uint32_t)(c[0] * 255) << 16 |
				    (uint32_t)(c[1] * 255) << 8 |
				    (uint32_t)(c[2] * 255);
			px[y * stride + x] = v;
		}
	}
	cairo_surface_mark_dirty(p->lanes_img);
	free(idx);
	return 0;

out_nomem:
	free(idx);
	errno = ENOMEM;
	return -1;
}

static void text(cairo_t *cr, double x, double y, const char *s)
{
	cairo_move_to(cr, x, y);
	cairo_show_text(cr, s);
}

/*
 * A series as a line with at most one point per pixel column: the
 * time-weighted mean of the samples that end in it (an hour at 1 s is
 * 3600 samples for some 1100 columns). A gap in the samples breaks it.
 */
static void polyline(const struct pic *p, cairo_t *cr,
		     const struct rj_point *pt, size_t n, double y0, double h,
		     double top)
{
	double sum = 0, wsum = 0;
	int col = -1;
	bool pen = false;

	for (size_t i = 0; i <= n; i++) {
		int c = i < n ? (int)x_of(p, pt[i].t1) : -2;
		bool gap = i < n && i && pt[i].t0 != pt[i - 1].t1;

		if ((c != col || gap) && wsum > 0) {
			double v = sum / wsum / top;
			double y = y0 + h - (v < 0 ? 0 : v > 1 ? 1 : v) * h;

			if (pen)
				cairo_line_to(cr, col, y);
			else
				cairo_move_to(cr, col, y);
			pen = true;
			sum = wsum = 0;
		}
		if (gap)
			pen = false;
		if (i == n)
			break;
		col = c;
		sum += pt[i].mean * (double)pt[i].w;
		wsum += (double)pt[i].w;
	}
	cairo_stroke(cr);
}

/* one panel: a line per series, values 0..@top */
static void panel(const struct pic *p, cairo_t *cr, double y0,
		  const char *title, enum rj_metric m, double top)
{
	double w = (double)p->width - LEFT - RIGHT, h = PANEL - 20;
	char s[64];
	int k = 0;

	cairo_set_source_rgb(cr, 0.95, 0.95, 0.95);
	cairo_rectangle(cr, LEFT, y0, w, h);
	cairo_fill(cr);
	cairo_set_source_rgb(cr, 0, 0, 0);
	text(cr, 4, y0 + 12, title);
	snprintf(s, sizeof(s), "%g", top);
	text(cr, 4, y0 + 26, s);
	text(cr, 4, y0 + h, "0");
	for (int d = m == RJ_HOST_CPU ? RJ_HOST : 0;
	     d < (m == RJ_HOST_CPU ? RJ_HOST + 1 : RJ_MAX_DEVICES); d++) {
		const struct rj_point *pt;
		size_t n = rj_points(p->j, m, d, &pt);
		const double *c = palette[k++ % NCOLOURS];

		if (!n)
			continue;
		cairo_set_source_rgb(cr, c[0], c[1], c[2]);
		cairo_set_line_width(cr, 1.2);
		polyline(p, cr, pt, n, y0, h, top);
	}
}

static double power_top(const struct pic *p)
{
	double top = 0;

	for (int d = 0; d < RJ_MAX_DEVICES; d++) {
		const struct rj_point *pt;
		size_t n = rj_points(p->j, RJ_GPU_POWER, d, &pt);

		for (size_t i = 0; i < n; i++)
			if (pt[i].mean > top)
				top = pt[i].mean;
	}
	return top > 0 ? ceil(top / 100) * 100 : 100;
}

static void draw(const struct pic *p, cairo_t *cr)
{
	double y = TOP, w = (double)p->width - LEFT - RIGHT;
	double job = (double)(p->m->end_ns - p->m->begin_ns) / 1e9;
	char s[256];
	size_t k = 0;

	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
			       CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, 11);
	cairo_set_source_rgb(cr, 0, 0, 0);
	snprintf(s, sizeof(s),
		 "tally job report: %s%s on %s, %.1f s, %zu ranks",
		 p->m->jobid ? "job " : "", p->m->jobid ? p->m->jobid : "",
		 p->m->host, job, p->r->nranks);
	text(cr, 4, 16, s);
	/* legend */
	for (size_t i = 0; i < p->r->nrows && k < NCOLOURS - 1; i++, k++) {
		const struct rj_row *row = &p->r->rows[i];
		double x = LEFT + (double)k * 110;

		if (row->folded || x + 100 > p->width)
			break;
		cairo_set_source_rgb(cr, palette[k][0], palette[k][1],
				     palette[k][2]);
		cairo_rectangle(cr, x, 30, 10, 10);
		cairo_fill(cr);
		cairo_set_source_rgb(cr, 0, 0, 0);
		snprintf(s, sizeof(s), "%.14s", row->name);
		text(cr, x + 14, 39, s);
	}
	if (p->r->nranks > p->lanes) {
		snprintf(s, sizeof(s), "(%zu more ranks not drawn)",
			 p->r->nranks - p->lanes);
		text(cr, 4, 54, s);
	}
	/* lanes, labelled at least 12 pixels apart */
	for (size_t i = 0; i < p->lanes; i += (size_t)ceil(12 / p->lane)) {
		if (p->r->ranks[i].rank >= 0)
			snprintf(s, sizeof(s), "rank %d",
				 (int)p->r->ranks[i].rank);
		else
			snprintf(s, sizeof(s), "no rank");
		cairo_set_source_rgb(cr, 0, 0, 0);
		text(cr, 4, y + (double)i * p->lane + (p->lane > 12 ? 13 : 9),
		     s);
	}
	if (p->lanes_img) {
		cairo_set_source_surface(cr, p->lanes_img, LEFT, y);
		cairo_paint(cr);
	}
	y += (double)p->lanes * p->lane + 10;
	if (p->r->devices) {
		panel(p, cr, y, "GPU busy %", RJ_GPU_UTIL, 100);
		y += PANEL;
		panel(p, cr, y, "GPU power W", RJ_GPU_POWER, power_top(p));
		y += PANEL;
	}
	panel(p, cr, y, "host CPU %", RJ_HOST_CPU, 100);
	y += PANEL;
	/* time axis */
	cairo_set_source_rgb(cr, 0, 0, 0);
	for (int t = 0; t <= 5; t++) {
		double x = LEFT + w * t / 5;

		snprintf(s, sizeof(s), "%.0f s", job * t / 5);
		cairo_move_to(cr, x, y - 12);
		cairo_line_to(cr, x, y - 6);
		cairo_stroke(cr);
		text(cr, x - (t == 5 ? 30 : 0), y + 6, s);
	}
}

/* Write through a temporary file renamed into place. */
static int finish(const char *tmp, const char *path)
{
	if (rename(tmp, path) < 0) {
		int e = errno;

		unlink(tmp);
		errno = e;
		return -1;
	}
	return 0;
}

int report_draw(const struct rj *j, const struct rj_result *r,
		const struct report_meta *m, const char *svg, const char *png,
		int width)
{
	struct pic p = { .j = j, .r = r, .m = m, .width = width };
	char tmp[4096];
	cairo_surface_t *s = NULL;
	cairo_t *cr = NULL;
	int ret = -1;

	p.lanes = r->nranks < REPORT_DRAW_MAX_LANES ? r->nranks
						    : REPORT_DRAW_MAX_LANES;
	p.lane = lane_height(p.lanes);
	p.height = (int)(60 + p.lane * (double)p.lanes +
			 PANEL * (r->devices ? 3 : 1) + 40);
	rj_each_window(j, collect, &p);
	if (p.oom) {
		errno = ENOMEM;
		goto out_free;
	}
	if (p.nw) /* p.w is NULL while there is none */
		qsort(p.w, p.nw, sizeof(*p.w), longest_first);
	if (lanes_raster(&p) < 0)
		goto out_free;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", svg) >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		goto out_free;
	}
	s = cairo_svg_surface_create(tmp, p.width, p.height);
#if CAIRO_VERSION >= CAIRO_VERSION_ENCODE(1, 15, 10)
	/* pixels, as the PNG, rather than points (a third larger) */
	cairo_svg_surface_set_document_unit(s, CAIRO_SVG_UNIT_PX);
#endif
	cr = cairo_create(s);
	draw(&p, cr);
	cairo_destroy(cr);
	cairo_surface_finish(s);
	if (cairo_surface_status(s) != CAIRO_STATUS_SUCCESS) {
		errno = cairo_surface_status(s) == CAIRO_STATUS_NO_MEMORY
				? ENOMEM
				: EIO;
		cairo_surface_destroy(s);
		unlink(tmp);
		goto out_free;
	}
	cairo_surface_destroy(s);
	if (finish(tmp, svg) < 0)
		goto out_free;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", png) >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		goto out_free;
	}
	s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, p.width, p.height);
	cr = cairo_create(s);
	draw(&p, cr);
	cairo_destroy(cr);
	if (cairo_surface_write_to_png(s, tmp) != CAIRO_STATUS_SUCCESS) {
		cairo_surface_destroy(s);
		unlink(tmp);
		errno = EIO;
		goto out_free;
	}
	cairo_surface_destroy(s);
	if (finish(tmp, png) < 0)
		goto out_free;
	ret = 0;
out_free:
	if (p.lanes_img)
		cairo_surface_destroy(p.lanes_img);
	free(p.w);
	return ret;
}

const char *report_draw_missing(void)
{
	return NULL;
}
