/* SPDX-License-Identifier: MIT */
/*
 *   report-bench [-r RANKS] [-g GPUS] [-s SECONDS] [-o OCCURRENCES] [-d DIR]
 *
 * contrib/bench/report-bench.c - time and memory of the report output's
 * end of job: the plugin's own join (join.c), text and JSON (render.c)
 * and picture (draw.c, when built with cairo)
 *
 * Feeds the join a job of SECONDS (default 3600) with samples every 1 s of
 * GPUS GPUs (default 8: utilization, power, VRAM) and the host (CPU,
 * memory), and RANKS ranks (64) of OCCURRENCES region occurrences each
 * (1000: a third-level "kernel" inside "step" inside "main", ten region
 * names), then times what the end of the job does: rj_compute(), both
 * renderings, and the SVG and PNG into DIR (default a temporary
 * directory, removed). Prints the time of the end of the job, the time to
 * feed it, and the peak RSS of the whole process (getrusage), which holds
 * everything the output holds. Target (issue 20): < 1 s and < 64 MiB.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "../../plugins/output/report/draw.h"
#include "../../plugins/output/report/join.h"
#include "../../plugins/output/report/render.h"

#define S(x) ((int64_t)(x)*1000000000LL)

/* CPU time of the process, user and system, ns */
static int64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct rj_opts o = { .max_samples = 4096,
			     .max_regions = 100000,
			     .max_windows = 1000000,
			     .top = 20 };
	int ranks = 64, gpus = 8, secs = 3600, occ = 1000, c;
	char tmpl[] = "/tmp/report-bench.XXXXXX", svg[4200], png[4200];
	const char *dir = NULL;
	struct evbuffer *txt, *json;
	const struct rj_result *res;
	struct report_meta m = { .host = "bench",
				 .jobid = "bench",
				 .why = "the end of the command" };
	int64_t t0 = S(1700000000), a, b, cj, cr, e, cb, ce;
	struct rusage ru;
	struct rj *j;

	while ((c = getopt(argc, argv, "r:g:s:o:d:")) != -1) {
		switch (c) {
		case 'r':
			ranks = atoi(optarg);
			break;
		case 'g':
			gpus = atoi(optarg);
			break;
		case 's':
			secs = atoi(optarg);
			break;
		case 'o':
			occ = atoi(optarg);
			break;
		case 'd':
			dir = optarg;
			break;
		default:
			fprintf(stderr,
				"usage: %s [-r RANKS] [-g GPUS] "
				"[-s SECONDS] [-o OCCURRENCES] [-d DIR]\n",
				argv[0]);
			return 2;
		}
	}
	if (!dir && !(dir = mkdtemp(tmpl))) {
		perror("mkdtemp");
		return 1;
	}
	j = rj_new(&o);
	if (!j)
		return 1;
	a = now_ns();
	for (int k = 1; k <= secs; k++) {
		int64_t t = t0 + S(k);

		for (int g = 0; g < gpus; g++) {
			rj_sample(j, RJ_GPU_UTIL, g, t, (k * 7 + g) % 100, 1);
			rj_sample(j, RJ_GPU_POWER, g, t, 200 + (k + g) % 300,
				  1);
			rj_sample(j, RJ_GPU_VRAM, g, t, 1e9 * (k % 64), 1);
		}
		rj_sample(j, RJ_HOST_CPU, RJ_HOST, t, k % 100, 1);
		rj_sample(j, RJ_HOST_MEM, RJ_HOST, t, 1e9 * (k % 100), 1);
	}
	for (int r = 0; r < ranks; r++) {
		/* occ occurrences: main once, then step and kernel pairs */
		int64_t per = S(secs) / (occ / 2);
		char name[16];

		rj_rank_devices(j, r, 1ULL << (r % gpus));
		rj_occurrence(j, r, "main", t0, t0 + S(secs), false);
		for (int i = 0; i < (occ - 1) / 2; i++) {
			int64_t s = t0 + per * i;

			snprintf(name, sizeof(name), "step%d", i % 9);
			rj_occurrence(j, r, name, s, s + per * 9 / 10, false);
			rj_occurrence(j, r, "kernel", s + per / 10, s + per / 2,
				      false);
		}
	}
	b = now_ns();
	cb = cpu_ns();
	m.begin_ns = t0;
	m.end_ns = t0 + S(secs);
	txt = evbuffer_new();
	json = evbuffer_new();
	res = rj_compute(j, m.begin_ns, m.end_ns);
	cj = now_ns();
	if (!res || report_render_text(txt, res, &m) < 0 ||
	    report_render_json(json, res, &m) < 0) {
		perror("report");
		return 1;
	}
	cr = now_ns();
	snprintf(svg, sizeof(svg), "%s/report.svg", dir);
	snprintf(png, sizeof(png), "%s/report.png", dir);
	if (!report_draw_missing() &&
	    report_draw(j, res, &m, svg, png, 1200) < 0) {
		perror("draw");
		return 1;
	}
	e = now_ns();
	ce = cpu_ns();
	getrusage(RUSAGE_SELF, &ru);
	printf("report: %d ranks, %d GPUs, %d s at 1 s, %d occurrences per "
	       "rank: end of job %.1f ms CPU, %.1f ms wall (join %.1f ms, txt "
	       "and json %.1f "
	       "ms, picture %.1f ms; txt %zu B, json %zu B%s), feeding "
	       "%.1f ms, join memory %.1f MiB, peak RSS %.1f MiB\n",
	       ranks, gpus, secs, occ, (double)(ce - cb) / 1e6,
	       (double)(e - b) / 1e6, (double)(cj - b) / 1e6,
	       (double)(cr - cj) / 1e6, (double)(e - cr) / 1e6,
	       evbuffer_get_length(txt), evbuffer_get_length(json),
	       report_draw_missing() ? ", no picture" : ", svg and png",
	       (double)(b - a) / 1e6, (double)rj_memory(j) / 1048576.0,
	       (double)ru.ru_maxrss / 1024.0);
	evbuffer_free(txt);
	evbuffer_free(json);
	rj_free(j);
	if (dir == tmpl) {
		unlink(svg);
		unlink(png);
		rmdir(dir);
	}
	return 0;
}
