/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/report/report.c - the per-job report: what each region of
 * a job cost on the GPUs and the host, as a table (report.txt), data
 * (report.json) and a picture (report.svg, report.png)
 *
 * The loop glue around join.c (the join, pure), render.c (text and JSON)
 * and draw.c (cairo): write() takes the multi-level spans and the GPU and
 * host metrics of its pipelines into the join; the files are written by
 * the end op (the end of the command of tallyd --user -- CMD, printed to
 * stderr there; SIGUSR1 of a collector that wraps no command) and at
 * shutdown (flush) when the end of a command did not write them already.
 *
 * Metrics taken (everything else is ignored): rocm_smi's
 * rocm_utilization_percentage, rocm_average_socket_power_watts,
 * rocm_vram_used_percentage with rocm_vram_total_bytes (label card);
 * procfs's node_cpu_seconds_total (busy = not idle nor iowait, over all
 * CPUs, between two reads) and node_memory_MemTotal_bytes minus
 * node_memory_MemAvailable_bytes; zmq_trace's tally_trace_source_info
 * (the GPUs a rank sees) and tally_trace_source_dropped_total.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/buffer.h>

#include <tally/hash.h>
#include <tally/io.h>
#include <tally/mode.h>
#include <tally/plugin.h>

#include "draw.h"
#include "join.h"
#include "render.h"

/* Client drop counters followed (one per traced process). */
#define REPORT_MAX_SOURCES 4096

struct ospan {
	struct tally_hnode node;
	uint64_t span_id;
	uint32_t pid;
	int32_t rank;
	int64_t begin_ns;
	const char *trace, *host; /* in @name's allocation */
	char name[];
};

struct dsrc {
	struct tally_labels *labels; /* a reference */
	double dropped;
};

/* records of one read of the host, summed: CPU total and idle seconds,
 * or memory total (@na) and available (@nb) */
struct host_group {
	int64_t ts;
	double a, b;
	int na, nb;
};

struct report {
	/* options */
	char *directory;
	int64_t top;
	int64_t max_samples;
	int64_t max_regions;
	int64_t max_windows;
	int64_t max_open_spans;
	int64_t width;
	int64_t stderr_lines;
	/* state */
	struct tally_instance *inst;
	struct rj *j;
	struct tally_htable open;
	size_t nopen;
	int64_t init_ns, first_ns, last_ns;
	struct host_group cpu, mem;
	bool cpu_prev;
	double cpu_total, cpu_idle;
	double vram_total[RJ_MAX_DEVICES];
	uint64_t orphan_ends, flattened, ended_by_collector, open_cap;
	uint64_t counted[RJ_NCOUNTS]; /* of rj_counts(), told already */
	struct dsrc *src;
	size_t nsrc;
	bool final;
	bool warned_flat;
	char host[256];
};

static uint64_t ospan_hash(const char *trace, const char *host, uint32_t pid,
			   uint64_t id)
{
	uint64_t h = tally_hash_str(TALLY_HASH_SEED, trace);

	h = tally_hash_str(h, host);
	h = tally_hash_bytes(h, &pid, sizeof(pid));
	return tally_hash_bytes(h, &id, sizeof(id));
}

static struct ospan *ospan_find(struct report *r, const struct tally_span *sp)
{
	uint64_t h =
		ospan_hash(sp->trace, sp->src.host, sp->src.pid, sp->span_id);
	struct tally_hnode *p;

	tally_htable_for_each_hash(&r->open, h, p)
	{
		struct ospan *o = tally_container_of(p, struct ospan, node);

		if (o->span_id == sp->span_id && o->pid == sp->src.pid &&
		    !strcmp(o->trace, sp->trace) &&
		    !strcmp(o->host, sp->src.host))
			return o;
	}
	return NULL;
}

static void ospan_add(struct report *r, const struct tally_span *sp, int64_t ts)
{
	size_t ln = strlen(sp->name) + 1, lt = strlen(sp->trace) + 1,
	       lh = strlen(sp->src.host) + 1;
	struct ospan *o;

	if (ospan_find(r, sp))
		return; /* a begin sent twice */
	if (r->nopen >= (size_t)r->max_open_spans) {
		r->open_cap++;
		tally_count_drop(r->inst, "open_span_cap", 1);
		return;
	}
	o = malloc(sizeof(*o) + ln + lt + lh);
	if (!o || tally_htable_reserve(&r->open) < 0) {
		free(o);
		tally_count_drop(r->inst, "no_memory", 1);
		return;
	}
	memcpy(o->name, sp->name, ln);
	o->trace = memcpy(o->name + ln, sp->trace, lt);
	o->host = memcpy(o->name + ln + lt, sp->src.host, lh);
	o->span_id = sp->span_id;
	o->pid = sp->src.pid;
	o->rank = sp->src.rank;
	o->begin_ns = ts;
	o->node.hash =
		ospan_hash(sp->trace, sp->src.host, sp->src.pid, sp->span_id);
	tally_htable_insert(&r->open, &o->node);
	r->nopen++;
}

static void report_span(struct report *r, const struct tally_span *sp,
			int64_t ts)
{
	struct ospan *o;
	int64_t begin;

	if (sp->flags & TALLY_SPAN_FRAGMENT) {
		r->flattened++;
		tally_count_drop(r->inst, "flat_fragment", 1);
		if (!r->warned_flat)
			tally_log(r->inst, LOG_WARNING,
				  "flat fragments received: the report needs "
				  "the multi-level spans, in a pipeline "
				  "without flatten (they are ignored and "
				  "counted)");
		r->warned_flat = true;
		return;
	}
	if (sp->phase == TALLY_SPAN_BEGIN) {
		ospan_add(r, sp, ts);
		return;
	}
	o = ospan_find(r, sp);
	begin = o ? o->begin_ns : sp->begin_ns;
	if (o) {
		tally_htable_remove(&r->open, &o->node);
		r->nopen--;
		free(o);
	}
	if (sp->flags &
	    (TALLY_SPAN_ABANDONED | TALLY_SPAN_EVICTED | TALLY_SPAN_LOST_END))
		r->ended_by_collector++;
	if (!begin) {
		r->orphan_ends++;
		tally_count_drop(r->inst, "orphan_end", 1);
		return;
	}
	if (rj_occurrence(r->j, sp->src.rank, sp->name, begin, ts, false) < 0 &&
	    errno == ENOMEM)
		tally_count_drop(r->inst, "no_memory", 1);
}

/* a card label: 0 to RJ_MAX_DEVICES - 1, else -1 */
static int card_of(const struct tally_metric *m)
{
	const char *c = tally_labels_get(m->labels, "card");
	char *end;
	long v;

	if (!c || !*c)
		return -1;
	errno = 0;
	v = strtol(c, &end, 10);
	if (*end || errno || v < 0 || v >= RJ_MAX_DEVICES)
		return -1;
	return (int)v;
}

static void report_sample(struct report *r, enum rj_metric m, int dev,
			  int64_t ts, double v, double iv)
{
	if (rj_sample(r->j, m, dev, ts, v, iv) < 0 && errno == ENOMEM)
		tally_count_drop(r->inst, "no_memory", 1);
}

static void report_source(struct report *r, const struct tally_metric *m)
{
	static const char *const keys[] = { "hip_visible_devices",
					    "rocr_visible_devices",
					    "cuda_visible_devices" };
	const char *rank = tally_labels_get(m->labels, "rank");
	uint64_t mask = 0;
	char *end;
	long k;

	if (!rank)
		return;
	errno = 0;
	k = strtol(rank, &end, 10);
	if (*end || errno || k < INT32_MIN || k > INT32_MAX)
		return;
	for (size_t i = 0; i < 3 && !mask; i++) {
		const char *v = tally_labels_get(m->labels, keys[i]);

		if (v)
			mask = rj_parse_devices(v);
	}
	if (mask && rj_rank_devices(r->j, (int32_t)k, mask) < 0)
		tally_count_drop(r->inst, "no_memory", 1);
}

static void report_dropped(struct report *r, const struct tally_metric *m)
{
	for (size_t i = 0; i < r->nsrc; i++)
		if (r->src[i].labels == m->labels) {
			r->src[i].dropped = m->value;
			return;
		}
	if (r->nsrc >= REPORT_MAX_SOURCES) {
		tally_count_drop(r->inst, "source_cap", 1);
		return;
	}
	if (!r->src) {
		r->src = calloc(REPORT_MAX_SOURCES, sizeof(*r->src));
		if (!r->src) {
			tally_count_drop(r->inst, "no_memory", 1);
			return;
		}
	}
	r->src[r->nsrc++] =
		(struct dsrc){ tally_labels_ref(m->labels), m->value };
}

/* the join's own counts, as self-metrics */
static void report_counts(struct report *r)
{
	static const char *const drops[RJ_NCOUNTS] = {
		[RJ_CLOCK_STEP] = "clock_step", [RJ_NOT_FINITE] = "not_finite",
		[RJ_BAD_DEVICE] = "bad_device", [RJ_REGION_CAP] = "region_cap",
		[RJ_WINDOW_CAP] = "not_joined", [RJ_BAD_WINDOW] = "bad_window",
	};
	const uint64_t *c = rj_counts(r->j);

	for (int i = 0; i < RJ_NCOUNTS; i++) {
		if (c[i] == r->counted[i])
			continue;
		if (drops[i])
			tally_count_drop(r->inst, drops[i],
					 c[i] - r->counted[i]);
		else if (i == RJ_DOWNSAMPLED)
			tally_count_event(r->inst, "downsampled",
					  c[i] - r->counted[i]);
		r->counted[i] = c[i];
	}
}

/*
 * The host's figures are made of several records of one read (a CPU's
 * modes, memory's total and available): they are grouped by timestamp, in
 * @r->cpu and @r->mem, and a group is taken when the next one begins or
 * the batch ends.
 */
static void cpu_flush(struct report *r, double iv)
{
	struct host_group *g = &r->cpu;

	if (!g->ts)
		return;
	/* busy between two reads; a reset (fewer CPUs) starts over */
	if (r->cpu_prev && g->a > r->cpu_total && g->b >= r->cpu_idle)
		report_sample(r, RJ_HOST_CPU, RJ_HOST, g->ts,
			      100 * (1 - (g->b - r->cpu_idle) /
						 (g->a - r->cpu_total)),
			      iv);
	r->cpu_prev = true;
	r->cpu_total = g->a;
	r->cpu_idle = g->b;
	*g = (struct host_group){ 0 };
}

static void mem_flush(struct report *r, double iv)
{
	struct host_group *g = &r->mem;

	if (g->ts && g->na && g->nb)
		report_sample(r, RJ_HOST_MEM, RJ_HOST, g->ts, g->a - g->b, iv);
	*g = (struct host_group){ 0 };
}

static void report_host(struct report *r, const struct tally_metric *m,
			int64_t ts, double iv)
{
	if (!strcmp(m->name, "node_cpu_seconds_total")) {
		const char *mode = tally_labels_get(m->labels, "mode");

		if (r->cpu.ts != ts)
			cpu_flush(r, iv);
		r->cpu.ts = ts;
		r->cpu.a += m->value;
		if (mode && (!strcmp(mode, "idle") || !strcmp(mode, "iowait")))
			r->cpu.b += m->value;
		return;
	}
	if (r->mem.ts != ts)
		mem_flush(r, iv);
	r->mem.ts = ts;
	if (!strcmp(m->name, "node_memory_MemTotal_bytes")) {
		r->mem.a = m->value;
		r->mem.na = 1;
	} else {
		r->mem.b = m->value;
		r->mem.nb = 1;
	}
}

static void report_gpu(struct report *r, const struct tally_metric *m,
		       int64_t ts, double iv)
{
	int card = card_of(m);

	if (card < 0)
		return;
	if (!strcmp(m->name, "rocm_utilization_percentage"))
		report_sample(r, RJ_GPU_UTIL, card, ts, m->value, iv);
	else if (!strcmp(m->name, "rocm_average_socket_power_watts"))
		report_sample(r, RJ_GPU_POWER, card, ts, m->value, iv);
	else if (!strcmp(m->name, "rocm_vram_total_bytes"))
		r->vram_total[card] = m->value;
	else if (!strcmp(m->name, "rocm_vram_used_percentage") &&
		 r->vram_total[card] > 0)
		report_sample(r, RJ_GPU_VRAM, card, ts,
			      m->value / 100 * r->vram_total[card], iv);
}

static int report_write(struct tally_instance *inst, void *state,
			struct tally_batch *b)
{
	struct report *r = state;
	size_t n = tally_batch_count(b);
	const struct tally_record *recs = tally_batch_records(b);
	double iv = tally_batch_interval(b);

	if (!(iv > 0))
		iv = tally_instance_interval(inst);
	for (size_t i = 0; i < n; i++) {
		const struct tally_record *rec = &recs[i];
		const struct tally_metric *m = &rec->metric;

		if (!r->first_ns || rec->ts_ns < r->first_ns)
			r->first_ns = rec->ts_ns;
		if (rec->ts_ns > r->last_ns)
			r->last_ns = rec->ts_ns;
		if (rec->kind == TALLY_REC_SPAN) {
			report_span(r, &rec->span, rec->ts_ns);
			continue;
		}
		if (rec->kind != TALLY_REC_METRIC ||
		    m->form != TALLY_FORM_CUMULATIVE)
			continue;
		if (!strncmp(m->name, "rocm_", 5))
			report_gpu(r, m, rec->ts_ns, iv);
		else if (!strcmp(m->name, "node_cpu_seconds_total") ||
			 !strcmp(m->name, "node_memory_MemTotal_bytes") ||
			 !strcmp(m->name, "node_memory_MemAvailable_bytes"))
			report_host(r, m, rec->ts_ns, iv);
		else if (!strcmp(m->name, "tally_trace_source_info"))
			report_source(r, m);
		else if (!strcmp(m->name, "tally_trace_source_dropped_total"))
			report_dropped(r, m);
	}
	cpu_flush(r, iv);
	mem_flush(r, iv);
	report_counts(r);
	return 0;
}

/* DIRECTORY/NAME into @buf. Return: 0, or -1 with errno = ENAMETOOLONG. */
static int report_path(char *buf, const char *dir, const char *name)
{
	if ((size_t)snprintf(buf, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

static int report_put(struct report *r, const char *dir, const char *name,
		      struct evbuffer *b)
{
	char path[PATH_MAX];

	if (report_path(path, dir, name) < 0 ||
	    tally_write_file(path, evbuffer_pullup(b, -1),
			     evbuffer_get_length(b)) < 0) {
		tally_log(r->inst, LOG_ERR, "cannot write %s/%s: %s", dir, name,
			  strerror(errno));
		return -1;
	}
	return 0;
}

/* The first lines of the table to stderr, where the job's user looks. */
static void report_print(struct report *r, const char *dir,
			 struct evbuffer *text)
{
	const char *p = (const char *)evbuffer_pullup(text, -1);
	size_t len = evbuffer_get_length(text), k = 0;
	int64_t lines = 0;

	while (k < len && lines < r->stderr_lines)
		if (p[k++] == '\n')
			lines++;
	fprintf(stderr, "tally: job report in %s/report.txt (and .json%s)\n",
		dir, report_draw_missing() ? "" : ", .svg, .png");
	fwrite(p, 1, k, stderr);
	fflush(stderr);
}

static int report_files(struct report *r, const char *why, bool print)
{
	struct report_meta meta = { .host = r->host,
				    .jobid = tally_jobid(),
				    .why = why };
	struct evbuffer *text = evbuffer_new(), *json = evbuffer_new();
	int64_t end = tally_command_end_ns();
	const struct rj_result *res;
	char *dir = NULL, svg[PATH_MAX], png[PATH_MAX];
	struct tally_hnode *p, *nx;
	int ret = -1;
	size_t i;

	if (!text || !json) {
		errno = ENOMEM;
		goto out_free;
	}
	if (!end)
		end = tally_now_ns();
	meta.begin_ns = r->init_ns;
	if (r->first_ns && r->first_ns < meta.begin_ns)
		meta.begin_ns = r->first_ns;
	meta.end_ns = end > r->last_ns ? end : r->last_ns;
	if (meta.end_ns <= meta.begin_ns)
		meta.end_ns = meta.begin_ns + 1;
	/* what is still open runs to the end, for this report only */
	tally_htable_for_each_safe(&r->open, i, p, nx)
	{
		struct ospan *o = tally_container_of(p, struct ospan, node);

		rj_occurrence(r->j, o->rank, o->name, o->begin_ns,
			      o->begin_ns > meta.end_ns ? o->begin_ns
							: meta.end_ns,
			      true);
	}
	res = rj_compute(r->j, meta.begin_ns, meta.end_ns);
	if (!res)
		goto out_free;
	report_counts(r);
	if (res->counts[RJ_CLAMPED])
		tally_count_event(r->inst, "clamped_to_job",
				  res->counts[RJ_CLAMPED]);
	meta.orphan_ends = r->orphan_ends;
	meta.flattened = r->flattened;
	meta.ended_by_collector = r->ended_by_collector;
	meta.open_cap = r->open_cap;
	for (i = 0; i < r->nsrc; i++)
		meta.client_dropped += (uint64_t)r->src[i].dropped;
	meta.picture = report_draw_missing();
	dir = tally_output_path(r->inst, r->directory);
	if (!dir)
		goto out_free;
	if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
		tally_log(r->inst, LOG_ERR, "cannot create %s: %s", dir,
			  strerror(errno));
		goto out_free;
	}
	if (!meta.picture &&
	    (report_path(svg, dir, "report.svg") < 0 ||
	     report_path(png, dir, "report.png") < 0 ||
	     report_draw(r->j, res, &meta, svg, png, (int)r->width) < 0)) {
		tally_log(r->inst, LOG_ERR, "cannot draw %s/report.svg: %s",
			  dir, strerror(errno));
		meta.picture = "drawing failed (logged)";
	}
	if (report_render_text(text, res, &meta) < 0 ||
	    report_render_json(json, res, &meta) < 0)
		goto out_free;
	if (report_put(r, dir, "report.txt", text) < 0 ||
	    report_put(r, dir, "report.json", json) < 0)
		goto out_free;
	tally_count_event(r->inst, "reports_written", 1);
	tally_log(r->inst, LOG_NOTICE, "report written to %s (%s)", dir, why);
	if (print)
		report_print(r, dir, text);
	ret = 0;
out_free:
	if (text)
		evbuffer_free(text);
	if (json)
		evbuffer_free(json);
	free(dir);
	return ret;
}

static int report_end(struct tally_instance *inst, void *state,
		      enum tally_end why)
{
	struct report *r = state;

	if (why == TALLY_END_COMMAND) {
		r->final = true;
		return report_files(r, "the end of the command", true);
	}
	return report_files(r, "SIGUSR1", false);
}

/* shutdown (and --once): the report, unless the command's end wrote it */
static int report_flush(struct tally_instance *inst, void *state)
{
	struct report *r = state;

	if (r->final)
		return 0;
	r->final = true;
	return report_files(r, "shutdown", false);
}

static int report_check(struct tally_instance *inst, void *state)
{
	struct report *r = state;
	size_t n = r->directory ? strlen(r->directory) : 0;

	if (!n) {
		tally_log(inst, LOG_ERR,
			  "directory \"\": a directory is needed (relative: "
			  "in the output directory)");
		errno = EINVAL;
		return -1;
	}
	return 0;
}

static int report_init(struct tally_instance *inst, void *state)
{
	struct report *r = state;
	struct rj_opts o = { .max_samples = (size_t)r->max_samples,
			     .max_regions = (size_t)r->max_regions,
			     .max_windows = (size_t)r->max_windows,
			     .top = (size_t)r->top };

	r->inst = inst;
	r->init_ns = tally_now_ns();
	if (gethostname(r->host, sizeof(r->host) - 1) < 0 || !r->host[0])
		snprintf(r->host, sizeof(r->host), "localhost");
	r->j = rj_new(&o);
	if (!r->j) {
		tally_log(inst, LOG_ERR, "out of memory");
		return -1;
	}
	if (report_draw_missing())
		tally_log(inst, LOG_INFO, "no report.svg and report.png: %s",
			  report_draw_missing());
	return 0;
}

static void report_fini(struct tally_instance *inst, void *state)
{
	struct report *r = state;
	struct tally_hnode *p, *nx;
	size_t i;

	tally_htable_for_each_safe(&r->open, i, p, nx)
		free(tally_container_of(p, struct ospan, node));
	tally_htable_fini(&r->open);
	for (i = 0; i < r->nsrc; i++)
		tally_labels_unref(r->src[i].labels);
	free(r->src);
	rj_free(r->j);
}

static const struct tally_option report_options[] = {
	TALLY_OPT_STRING("directory", struct report, directory, "report",
			 "directory of report.txt, report.json, report.svg "
			 "and report.png; relative: in the output directory "
			 "(tallyd --user: the job's)"),
	TALLY_OPT_INT("top", struct report, top, "20", 1, 10000,
		      "region rows, by total time; the others are folded "
		      "into one row that says how many"),
	TALLY_OPT_INT("max_samples", struct report, max_samples, "4096", 16,
		      100000000,
		      "samples kept per series (one GPU's utilization, the "
		      "host's CPU...); a full series merges neighbours "
		      "pairwise, halving its resolution"),
	TALLY_OPT_INT("max_regions", struct report, max_regions, "100000", 1,
		      100000000,
		      "(rank, region) pairs tracked; occurrences of further "
		      "ones are dropped and counted"),
	TALLY_OPT_INT("max_windows", struct report, max_windows, "1000000", 1,
		      1000000000,
		      "occurrences kept for the join; beyond, calls and time "
		      "still count but GPU and host figures are not joined "
		      "(counted)"),
	TALLY_OPT_INT("max_open_spans", struct report, max_open_spans, "100000",
		      1, 100000000,
		      "spans begun and not ended yet that are tracked; the "
		      "ends of others still count when they carry their "
		      "begin time"),
	TALLY_OPT_INT("width", struct report, width, "1200", 400, 10000,
		      "width of report.svg and report.png in pixels"),
	TALLY_OPT_INT("stderr_lines", struct report, stderr_lines, "12", 0,
		      1000,
		      "lines of report.txt printed to stderr when the command "
		      "of tallyd --user -- CMD ends"),
	TALLY_OPT_END
};

static const struct tally_output_ops report_ops = {
	.check = report_check,
	.init = report_init,
	.write = report_write,
	.flush = report_flush,
	.fini = report_fini,
	.end = report_end,
};

TALLY_PLUGIN_OUTPUT(report,
		    "per-job report: each region's time, GPU and host use "
		    "(report.txt, .json, .svg, .png) at the job's end",
		    struct report, report_options, &report_ops);
