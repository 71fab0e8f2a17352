/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/report/render.c - report.txt and report.json from a
 * join's result
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>

#include <tally/exposition.h>
#include <tally/json.h>

#include "render.h"

/* Characters of a region name shown in report.txt's tables. */
#define NAME_COLS 24

static const char *const count_names[RJ_NCOUNTS] = {
	[RJ_CLOCK_STEP] = "clock_step", [RJ_NOT_FINITE] = "not_finite",
	[RJ_BAD_DEVICE] = "bad_device", [RJ_DOWNSAMPLED] = "downsampled",
	[RJ_REGION_CAP] = "region_cap", [RJ_WINDOW_CAP] = "not_joined",
	[RJ_BAD_WINDOW] = "bad_window", [RJ_CLAMPED] = "clamped_to_job",
};

struct out {
	struct evbuffer *b;
	int err;
};

static void put(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (!o->err && evbuffer_add_vprintf(o->b, fmt, ap) < 0)
		o->err = ENOMEM;
	va_end(ap);
}

static int done(struct out *o)
{
	if (o->err) {
		errno = o->err;
		return -1;
	}
	return 0;
}

static void put_time(struct out *o, int64_t ns)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;
	char s[32];

	gmtime_r(&t, &tm);
	strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%SZ", &tm);
	put(o, "%s", s);
}

/* the share of weight from samples straddling edges: 2 n T / D */
static double edge_bound(const struct rj_row *w, double period_s)
{
	double b;

	if (!(period_s > 0) || !(w->total_s > 0) || w->folded)
		return NAN;
	b = 2.0 * (double)w->calls * period_s / w->total_s;
	return b > 1 ? 1 : b;
}

static const char *const missing_gpu =
	"no GPU metrics (no rocm_smi input feeds the report, or no GPU on "
	"the node): GPU columns are empty";

/* Lines saying what a reader must know so that no figure is silently
 * wrong; calls @line for each. */
static void missing(const struct rj_result *r, const struct report_meta *m,
		    void (*line)(struct out *, const char *, bool),
		    struct out *o)
{
	char s[512];
	bool any = false;

	if (!r->devices) {
		line(o, missing_gpu, !any);
		any = true;
	}
	if (!r->host) {
		line(o,
		     "no host metrics (no procfs input feeds the report): CPU "
		     "and memory columns are empty",
		     !any);
		any = true;
	}
	if (!r->nranks) {
		line(o,
		     "no application regions (no traced process sent spans to "
		     "this collector): only the job's line is given",
		     !any);
		any = true;
	}
	if (r->devices && r->unmapped) {
		snprintf(s, sizeof(s),
			 "%zu of %zu ranks did not say which GPUs they see "
			 "(trace v2 source attributes): their GPU figures use "
			 "all the node's GPUs",
			 r->unmapped, r->nranks);
		line(o, s, !any);
		any = true;
	}
	if (r->devices && isfinite(r->job.coverage) && r->job.coverage < 0.99) {
		snprintf(s, sizeof(s),
			 "GPU samples cover %.1f%% of the job's GPU time (a "
			 "device vanished, or reads were skipped): figures "
			 "are over the covered time",
			 100 * r->job.coverage);
		line(o, s, !any);
		any = true;
	}
	if (m->orphan_ends || m->flattened || m->ended_by_collector ||
	    m->client_dropped || m->open_cap || r->unjoined ||
	    r->counts[RJ_REGION_CAP]) {
		snprintf(s, sizeof(s),
			 "dropped or incomplete events: %llu reported dropped "
			 "by the traced processes, %llu ends without a begin, "
			 "%llu spans ended by the collector, %llu flat "
			 "fragments ignored, %llu begins over the open-span "
			 "cap, %llu occurrences over the region cap, %llu "
			 "occurrences not joined (window cap)",
			 (unsigned long long)m->client_dropped,
			 (unsigned long long)m->orphan_ends,
			 (unsigned long long)m->ended_by_collector,
			 (unsigned long long)m->flattened,
			 (unsigned long long)m->open_cap,
			 (unsigned long long)r->counts[RJ_REGION_CAP],
			 (unsigned long long)r->unjoined);
		line(o, s, !any);
		any = true;
	}
	if (r->counts[RJ_CLOCK_STEP] || r->counts[RJ_CLAMPED] ||
	    r->counts[RJ_BAD_WINDOW]) {
		snprintf(s, sizeof(s),
			 "clock: %llu samples not after their series' last "
			 "(dropped), %llu occurrences cut to the job's window, "
			 "%llu ending before they began (dropped)",
			 (unsigned long long)r->counts[RJ_CLOCK_STEP],
			 (unsigned long long)r->counts[RJ_CLAMPED],
			 (unsigned long long)r->counts[RJ_BAD_WINDOW]);
		line(o, s, !any);
		any = true;
	}
	if (m->picture) {
		snprintf(s, sizeof(s), "no picture: %s", m->picture);
		line(o, s, !any);
		any = true;
	}
	if (!any)
		line(o, NULL, true);
}

/* text */

static void text_missing(struct out *o, const char *s, bool first)
{
	if (!s)
		put(o, "missing: nothing\n");
	else
		put(o, "%s%s\n", first ? "missing: " : "         ", s);
}

/* @v with @prec decimals and @unit into @s, or "-" */
static void fmt(char *s, size_t n, int prec, const char *unit, double v)
{
	if (!isfinite(v))
		snprintf(s, n, "-");
	else
		snprintf(s, n, "%.*f%s", prec, v, unit);
}

/* a number or "-", right-aligned in @w columns */
static void num(struct out *o, int w, int prec, const char *unit, double v)
{
	char s[64];

	fmt(s, sizeof(s), prec, unit, v);
	put(o, " %*s", w, s);
}

static void bytes(struct out *o, int w, double v)
{
	num(o, w, 2, "GiB", v / (1024.0 * 1024 * 1024));
}

/* a region name, control characters shown as '?', cut to NAME_COLS */
static void name(struct out *o, const char *n)
{
	char s[NAME_COLS + 1];
	size_t k = 0;

	for (; *n && k < NAME_COLS; n++)
		s[k++] = (unsigned char)*n < 0x20 || *n == 0x7f ? '?' : *n;
	/* never half a UTF-8 character */
	if (*n)
		while (k && ((unsigned char)s[k - 1] & 0xc0) == 0x80)
			k--;
	if (*n && k && (unsigned char)s[k - 1] >= 0xc0)
		k--;
	s[k] = 0;
	put(o, "%-*s", NAME_COLS, s);
}

static void figs_text(struct out *o, const struct rj_figs *f)
{
	num(o, 6, 1, "", f->util.mean);
	num(o, 7, 1, "", f->util.max);
	num(o, 9, 1, "", f->power.mean);
	num(o, 11, 1, "", f->energy_j);
	bytes(o, 10, f->vram.max);
	num(o, 6, 1, "", f->cpu.mean);
	bytes(o, 10, f->mem.max);
}

int report_render_text(struct evbuffer *out, const struct rj_result *r,
		       const struct report_meta *m)
{
	struct out o = { out, 0 };
	size_t ndev = (size_t)__builtin_popcountll(r->devices);

	put(&o, "tally job report: %s%s on %s\n", m->jobid ? "job " : "",
	    m->jobid ? m->jobid : "collector", m->host);
	put(&o, "window ");
	put_time(&o, m->begin_ns);
	put(&o, " to ");
	put_time(&o, m->end_ns);
	put(&o, " (%.3f s), written at %s; %zu ranks, %zu GPUs\n", r->job_s,
	    m->why, r->nranks, ndev);
	if (r->period_s > 0)
		put(&o,
		    "join: metric samples (every %g s) are attributed to a "
		    "region by time-weighted overlap with the time it was "
		    "open; a region open D s in n occurrences takes up to "
		    "2nT/D of its weight (column edge%%) from samples "
		    "straddling its edges (T = %g s)\n",
		    r->period_s, r->period_s);
	else
		put(&o, "join: no metric samples\n");
	missing(r, m, text_missing, &o);

	put(&o,
	    "\n%-*s %5s %8s %11s %10s %7s %6s %7s %9s %11s %10s %6s "
	    "%10s %6s\n",
	    NAME_COLS, "region", "ranks", "calls", "total_s", "mean_s", "share",
	    "gpu%", "gpu%max", "power_W", "energy_J", "vram_peak", "cpu%",
	    "mem_peak", "edge%");
	name(&o, "(job)");
	put(&o, " %5zu %8s", r->nranks, "-");
	num(&o, 11, 3, "", r->job_s);
	put(&o, " %10s %7s", "-", "-");
	figs_text(&o, &r->job);
	put(&o, " %6s\n", "-");
	for (size_t i = 0; i < r->nrows; i++) {
		const struct rj_row *w = &r->rows[i];
		char folded[64];

		if (w->folded) {
			snprintf(folded, sizeof(folded), "(%zu more)",
				 w->folded);
			name(&o, folded);
		} else {
			name(&o, w->name);
		}
		put(&o, " %5zu %8llu", w->ranks, (unsigned long long)w->calls);
		num(&o, 11, 3, "", w->total_s);
		num(&o, 10, 3, "", w->mean_s);
		num(&o, 6, 1, "%", 100 * w->share);
		figs_text(&o, &w->node);
		num(&o, 6, 1, "", 100 * edge_bound(w, r->period_s));
		put(&o, "\n");
	}

	put(&o,
	    "\nspread across ranks (min/median/max)\n%-*s %23s %17s "
	    "%23s %29s %17s\n",
	    NAME_COLS, "region", "time_s", "gpu%", "power_W", "energy_J",
	    "cpu%");
	for (size_t i = 0; i < r->nrows; i++) {
		const struct rj_row *w = &r->rows[i];
		static const struct {
			enum rj_fig_id f;
			int w;
		} cols[] = { { RJ_F_TIME, 23 },
			     { RJ_F_UTIL, 17 },
			     { RJ_F_POWER, 23 },
			     { RJ_F_ENERGY, 29 },
			     { RJ_F_CPU, 17 } };

		if (w->folded)
			continue;
		name(&o, w->name);
		for (size_t c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
			const struct rj_spread *s = &w->spread[cols[c].f];
			char a[32], b[32], d[32], t[100];

			fmt(a, sizeof(a), 1, "", s->min);
			fmt(b, sizeof(b), 1, "", s->median);
			fmt(d, sizeof(d), 1, "", s->max);
			snprintf(t, sizeof(t), "%s/%s/%s", a, b, d);
			put(&o, " %*s", cols[c].w, t);
		}
		put(&o, "\n");
	}

	put(&o, "\n%6s %8s %11s %-8s %6s %7s %9s %11s %10s %6s %10s\n", "rank",
	    "calls", "traced_s", "gpus", "gpu%", "gpu%max", "power_W",
	    "energy_J", "vram_peak", "cpu%", "mem_peak");
	for (size_t i = 0; i < r->nranks; i++) {
		const struct rj_rank_row *k = &r->ranks[i];
		char gpus[200] = "all";
		size_t n = 0;

		if (k->devices) {
			for (int d = 0; d < RJ_MAX_DEVICES && n < 190; d++)
				if (k->devices >> d & 1)
					n += (size_t)snprintf(
						gpus + n, sizeof(gpus) - n,
						"%s%d", n ? "," : "", d);
		}
		if (k->rank >= 0)
			put(&o, "%6d", (int)k->rank);
		else
			put(&o, "%6s", "-");
		put(&o, " %8llu", (unsigned long long)k->calls);
		num(&o, 11, 3, "", k->traced_s);
		put(&o, " %-8s", gpus);
		figs_text(&o, &k->figs);
		put(&o, "\n");
	}
	return done(&o);
}

/* JSON */

static void jnum(struct out *o, double v)
{
	char s[TALLY_EXPO_DOUBLE_MAX];

	if (!isfinite(v)) {
		put(o, "null");
		return;
	}
	tally_expo_format_double(s, v);
	put(o, "%s", s);
}

static void jstr(struct out *o, const char *s)
{
	char buf[512];
	size_t n = tally_json_escape(buf, sizeof(buf), s);

	if (n < sizeof(buf)) {
		put(o, "\"%s\"", buf);
		return;
	}
	{
		char *big = malloc(n + 1);

		if (!big) {
			o->err = ENOMEM;
			return;
		}
		tally_json_escape(big, n + 1, s);
		put(o, "\"%s\"", big);
		free(big);
	}
}

static void jfig(struct out *o, const char *key, const struct rj_fig *f)
{
	put(o, "\"%s\":{\"mean\":", key);
	jnum(o, f->mean);
	put(o, ",\"max\":");
	jnum(o, f->max);
	put(o, "}");
}

static void jfigs(struct out *o, const struct rj_figs *f)
{
	jfig(o, "gpu_util_percent", &f->util);
	put(o, ",");
	jfig(o, "gpu_power_watts", &f->power);
	put(o, ",\"gpu_energy_joules\":");
	jnum(o, f->energy_j);
	put(o, ",\"gpu_vram_peak_bytes\":");
	jnum(o, f->vram.max);
	put(o, ",");
	jfig(o, "cpu_util_percent", &f->cpu);
	put(o, ",");
	jfig(o, "memory_used_bytes", &f->mem);
	put(o, ",\"gpu_coverage\":");
	jnum(o, f->coverage);
	put(o, ",\"host_coverage\":");
	jnum(o, f->host_coverage);
}

static void json_missing(struct out *o, const char *s, bool first)
{
	if (!s)
		return;
	if (!first)
		put(o, ",");
	jstr(o, s);
}

static void jdevices(struct out *o, uint64_t mask)
{
	bool first = true;

	put(o, "[");
	for (int d = 0; d < RJ_MAX_DEVICES; d++)
		if (mask >> d & 1) {
			put(o, "%s%d", first ? "" : ",", d);
			first = false;
		}
	put(o, "]");
}

int report_render_json(struct evbuffer *out, const struct rj_result *r,
		       const struct report_meta *m)
{
	static const char *const spread_keys[RJ_NFIGS] = {
		[RJ_F_TIME] = "seconds",
		[RJ_F_UTIL] = "gpu_util_percent",
		[RJ_F_POWER] = "gpu_power_watts",
		[RJ_F_ENERGY] = "gpu_energy_joules",
		[RJ_F_VRAM] = "gpu_vram_peak_bytes",
		[RJ_F_CPU] = "cpu_util_percent",
		[RJ_F_MEM] = "memory_peak_bytes",
	};
	struct out o = { out, 0 };
	bool folded = false;

	put(&o, "{\"version\":1,\"host\":");
	jstr(&o, m->host);
	put(&o, ",\"jobid\":");
	if (m->jobid)
		jstr(&o, m->jobid);
	else
		put(&o, "null");
	put(&o, ",\"written_at\":");
	jstr(&o, m->why);
	put(&o, ",\"begin_seconds\":");
	jnum(&o, (double)m->begin_ns / 1e9);
	put(&o, ",\"end_seconds\":");
	jnum(&o, (double)m->end_ns / 1e9);
	put(&o, ",\"wall_seconds\":");
	jnum(&o, r->job_s);
	put(&o, ",\"sample_period_seconds\":");
	jnum(&o, r->period_s > 0 ? r->period_s : NAN);
	put(&o, ",\"gpus\":");
	jdevices(&o, r->devices);
	put(&o, ",\"ranks\":%zu,\"missing\":[", r->nranks);
	missing(r, m, json_missing, &o);
	put(&o, "],\"counts\":{");
	for (int i = 0; i < RJ_NCOUNTS; i++)
		put(&o, "%s\"%s\":%llu", i ? "," : "", count_names[i],
		    (unsigned long long)r->counts[i]);
	put(&o,
	    ",\"client_dropped\":%llu,\"orphan_ends\":%llu,"
	    "\"ended_by_collector\":%llu,\"flat_fragments\":%llu,"
	    "\"open_span_cap\":%llu,\"open_at_end\":%llu},\"job\":{",
	    (unsigned long long)m->client_dropped,
	    (unsigned long long)m->orphan_ends,
	    (unsigned long long)m->ended_by_collector,
	    (unsigned long long)m->flattened, (unsigned long long)m->open_cap,
	    (unsigned long long)r->open_at_end);
	jfigs(&o, &r->job);
	put(&o, "},\"regions\":[");
	for (size_t i = 0; i < r->nrows; i++) {
		const struct rj_row *w = &r->rows[i];

		if (w->folded) {
			folded = true;
			continue;
		}
		put(&o, "%s{\"name\":", i ? "," : "");
		jstr(&o, w->name);
		put(&o, ",\"ranks\":%zu,\"calls\":%llu,\"total_seconds\":",
		    w->ranks, (unsigned long long)w->calls);
		jnum(&o, w->total_s);
		put(&o, ",\"mean_seconds\":");
		jnum(&o, w->mean_s);
		put(&o, ",\"share\":");
		jnum(&o, w->share);
		put(&o, ",\"edge_bound\":");
		jnum(&o, edge_bound(w, r->period_s));
		put(&o, ",");
		jfigs(&o, &w->node);
		put(&o, ",\"spread\":{");
		for (int f = 0; f < RJ_NFIGS; f++) {
			put(&o, "%s\"%s\":{\"min\":", f ? "," : "",
			    spread_keys[f]);
			jnum(&o, w->spread[f].min);
			put(&o, ",\"median\":");
			jnum(&o, w->spread[f].median);
			put(&o, ",\"max\":");
			jnum(&o, w->spread[f].max);
			put(&o, "}");
		}
		put(&o, "}}");
	}
	put(&o, "],\"folded\":");
	if (folded) {
		const struct rj_row *w = &r->rows[r->nrows - 1];

		put(&o, "{\"regions\":%zu,\"calls\":%llu,\"total_seconds\":",
		    w->folded, (unsigned long long)w->calls);
		jnum(&o, w->total_s);
		put(&o, ",\"share\":");
		jnum(&o, w->share);
		put(&o, "}");
	} else {
		put(&o, "null");
	}
	put(&o, ",\"rank_summary\":[");
	for (size_t i = 0; i < r->nranks; i++) {
		const struct rj_rank_row *k = &r->ranks[i];

		put(&o, "%s{\"rank\":", i ? "," : "");
		if (k->rank >= 0)
			put(&o, "%d", (int)k->rank);
		else
			put(&o, "null");
		put(&o, ",\"calls\":%llu,\"traced_seconds\":",
		    (unsigned long long)k->calls);
		jnum(&o, k->traced_s);
		put(&o, ",\"gpus\":");
		if (k->devices)
			jdevices(&o, k->devices);
		else
			put(&o, "null");
		put(&o, ",");
		jfigs(&o, &k->figs);
		put(&o, "}");
	}
	put(&o, "]}\n");
	return done(&o);
}
