/* SPDX-License-Identifier: MIT */
/*
 * t/unit/report-join.c - the report's join (plugins/output/report/join.c)
 * against figures computed by hand, in the tables below
 *
 * The job: 100 s from B. GPU 0 busy 10 %, 20 %, ... 100 % in the ten 10 s
 * samples taken at B+10 ... B+100 (each covers the 10 s before it), GPU 1
 * busy 50 % throughout; GPU 0 draws 100 W up to B+50 and 200 W after, GPU
 * 1 300 W; GPU 0's VRAM 1 GB but 5 GB in the sample at B+30; the host's
 * CPU 40 % throughout, its memory 1000 bytes up to B+50 and 3000 after.
 * Rank 0 sees GPU 0 and runs "solve" over [10, 30) and [50, 60), "io"
 * over [30, 50); rank 1 sees GPU 1 and runs "solve" over [15, 25).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../../plugins/output/report/join.h"
#include "tap.h"

#define B    1700000000000000000LL
#define S(x) ((int64_t)((x)*1000000000LL))

static int near(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return fabs(a - b) <= 1e-9 * fmax(1.0, fabs(b));
}

#define is_near(a, b, ...)                                           \
	do {                                                         \
		if (!ok(near((a), (b)), __VA_ARGS__))                \
			diag("  got %.12g, want %.12g", (double)(a), \
			     (double)(b));                           \
	} while (0)

static struct rj *job(size_t top)
{
	struct rj_opts o = { .max_samples = 1000,
			     .max_regions = 1000,
			     .max_windows = 1000,
			     .top = top };
	struct rj *j = rj_new(&o);

	for (int k = 1; k <= 10; k++) {
		int64_t t = B + S(10 * k);

		rj_sample(j, RJ_GPU_UTIL, 0, t, 10.0 * k, 10);
		rj_sample(j, RJ_GPU_UTIL, 1, t, 50, 10);
		rj_sample(j, RJ_GPU_POWER, 0, t, k <= 5 ? 100 : 200, 10);
		rj_sample(j, RJ_GPU_POWER, 1, t, 300, 10);
		rj_sample(j, RJ_GPU_VRAM, 0, t, k == 3 ? 5e9 : 1e9, 10);
		rj_sample(j, RJ_HOST_CPU, RJ_HOST, t, 40, 10);
		rj_sample(j, RJ_HOST_MEM, RJ_HOST, t, k <= 5 ? 1000 : 3000, 10);
	}
	rj_occurrence(j, 0, "solve", B + S(10), B + S(30), false);
	rj_occurrence(j, 0, "io", B + S(30), B + S(50), false);
	rj_occurrence(j, 0, "solve", B + S(50), B + S(60), false);
	rj_occurrence(j, 1, "solve", B + S(15), B + S(25), false);
	rj_rank_devices(j, 0, 1);
	rj_rank_devices(j, 1, 2);
	return j;
}

static void test_job(void)
{
	/* hand-computed: see the comment at the top */
	static const struct {
		const char *name;
		uint64_t calls;
		size_t ranks;
		double total_s, mean_s, share;
		double util, util_max, power, energy, vram, cpu, mem, mem_max;
		double coverage;
		struct rj_spread time, util_s, energy_s;
	} rows[] = {
		/* node view over [10,30) + [50,60) = 30 s, GPUs 0 and 1:
		 * util (20+30+60)*10 + 50*30 = 2600 over 60 device-s;
		 * power 400/3 + 300; energy 4000 + 9000 J */
		{ "solve",
		  3,
		  2,
		  40,
		  40.0 / 3,
		  0.2,
		  2600.0 / 60,
		  60,
		  400.0 / 3 + 300,
		  13000,
		  5e9,
		  40,
		  5000.0 / 3,
		  3000,
		  1,
		  { 10, 10, 30 },
		  { 110.0 / 3, 110.0 / 3, 50 },
		  { 3000, 3000, 4000 } },
		/* [30,50) on GPU 0 alone */
		{ "io",
		  1,
		  1,
		  20,
		  20,
		  0.1,
		  45,
		  50,
		  100,
		  2000,
		  1e9,
		  40,
		  1000,
		  1000,
		  1,
		  { 20, 20, 20 },
		  { 45, 45, 45 },
		  { 2000, 2000, 2000 } },
	};
	struct rj *j = job(10);
	const struct rj_result *r = rj_compute(j, B, B + S(100));

	ok(r != NULL, "compute");
	is_near(r->job_s, 100, "job seconds");
	is_near(r->period_s, 10, "sample period");
	/* GPU 0 mean 55, GPU 1 50: 52.5; 150 W + 300 W; 15000 + 30000 J */
	is_near(r->job.util.mean, 52.5, "job: GPU busy mean");
	is_near(r->job.util.max, 100, "job: GPU busy max");
	is_near(r->job.power.mean, 450, "job: power");
	is_near(r->job.energy_j, 45000, "job: energy");
	is_near(r->job.vram.max, 5e9, "job: VRAM peak");
	is_near(r->job.cpu.mean, 40, "job: CPU");
	is_near(r->job.mem.mean, 2000, "job: memory mean");
	is_near(r->job.mem.max, 3000, "job: memory peak");
	is_near(r->job.coverage, 1, "job: covered");
	cmp_ok(r->devices, "==", 3, "devices 0 and 1");
	cmp_ok(r->unmapped, "==", 0, "every rank has a device list");
	cmp_ok(r->nrows, "==", 2, "two rows");
	for (size_t i = 0; i < 2 && i < r->nrows; i++) {
		const struct rj_row *w = &r->rows[i];

		is(w->name, rows[i].name, "row %zu is %s", i, rows[i].name);
		cmp_ok(w->calls, "==", rows[i].calls, "%s: calls", w->name);
		cmp_ok(w->ranks, "==", rows[i].ranks, "%s: ranks", w->name);
		is_near(w->total_s, rows[i].total_s, "%s: total", w->name);
		is_near(w->mean_s, rows[i].mean_s, "%s: mean", w->name);
		is_near(w->share, rows[i].share, "%s: share", w->name);
		is_near(w->node.util.mean, rows[i].util, "%s: busy", w->name);
		is_near(w->node.util.max, rows[i].util_max, "%s: busy max",
			w->name);
		is_near(w->node.power.mean, rows[i].power, "%s: power",
			w->name);
		is_near(w->node.energy_j, rows[i].energy, "%s: energy",
			w->name);
		is_near(w->node.vram.max, rows[i].vram, "%s: VRAM", w->name);
		is_near(w->node.cpu.mean, rows[i].cpu, "%s: CPU", w->name);
		is_near(w->node.mem.mean, rows[i].mem, "%s: mem", w->name);
		is_near(w->node.mem.max, rows[i].mem_max, "%s: mem peak",
			w->name);
		is_near(w->node.coverage, rows[i].coverage, "%s: coverage",
			w->name);
		is_near(w->spread[RJ_F_TIME].min, rows[i].time.min,
			"%s: time min", w->name);
		is_near(w->spread[RJ_F_TIME].median, rows[i].time.median,
			"%s: time median", w->name);
		is_near(w->spread[RJ_F_TIME].max, rows[i].time.max,
			"%s: time max", w->name);
		is_near(w->spread[RJ_F_UTIL].min, rows[i].util_s.min,
			"%s: busy min", w->name);
		is_near(w->spread[RJ_F_UTIL].median, rows[i].util_s.median,
			"%s: busy median", w->name);
		is_near(w->spread[RJ_F_UTIL].max, rows[i].util_s.max,
			"%s: busy max rank", w->name);
		is_near(w->spread[RJ_F_ENERGY].min, rows[i].energy_s.min,
			"%s: energy min", w->name);
		is_near(w->spread[RJ_F_ENERGY].median, rows[i].energy_s.median,
			"%s: energy median", w->name);
		is_near(w->spread[RJ_F_ENERGY].max, rows[i].energy_s.max,
			"%s: energy max", w->name);
	}
	cmp_ok(r->nranks, "==", 2, "two ranks");
	if (r->nranks == 2) {
		/* rank 0: [10, 60), GPU 0 samples 20..60 */
		cmp_ok(r->ranks[0].rank, "==", 0, "rank 0 first");
		cmp_ok(r->ranks[0].calls, "==", 3, "rank 0 calls");
		is_near(r->ranks[0].traced_s, 50, "rank 0 traced");
		is_near(r->ranks[0].figs.util.mean, 40, "rank 0 busy");
		is_near(r->ranks[0].figs.energy_j, 6000, "rank 0 energy");
		cmp_ok(r->ranks[1].devices, "==", 2, "rank 1 sees GPU 1");
		is_near(r->ranks[1].traced_s, 10, "rank 1 traced");
		is_near(r->ranks[1].figs.energy_j, 3000, "rank 1 energy");
		ok(isnan(r->ranks[1].figs.vram.max), "rank 1: no VRAM series");
	}
	rj_free(j);
}

static void test_fold(void)
{
	struct rj_opts o = { .max_samples = 8,
			     .max_regions = 5,
			     .max_windows = 1000,
			     .top = 2 };
	struct rj *j = rj_new(&o);
	const struct rj_result *r;
	static const struct {
		const char *name;
		double s;
	} regs[] = { { "c", 10 }, { "a", 30 }, { "d", 5 }, { "b", 20 } };

	for (int i = 0; i < 4; i++)
		rj_occurrence(j, 0, regs[i].name, B, B + S(regs[i].s), false);
	r = rj_compute(j, B, B + S(100));
	cmp_ok(r->nrows, "==", 3, "two rows and the folded one");
	is(r->rows[0].name, "a", "longest first");
	is(r->rows[1].name, "b", "then b");
	ok(r->rows[2].name == NULL, "folded row has no name");
	cmp_ok(r->rows[2].folded, "==", 2, "folds c and d");
	cmp_ok(r->rows[2].calls, "==", 2, "their calls");
	is_near(r->rows[2].total_s, 15, "their time");
	is_near(r->rows[2].share, 0.15, "their share");
	ok(isnan(r->job.util.mean), "no GPU: NaN");
	cmp_ok(r->devices, "==", 0, "no GPU seen");
	ok(!r->host, "no host series");
	cmp_ok(r->unmapped, "==", 1, "rank 0 has no device list");

	/* region cap: a fifth pair is fine, a sixth is not */
	ok(rj_occurrence(j, 1, "a", B, B + S(1), false) == 0, "5th pair");
	errno = 0;
	ok(rj_occurrence(j, 2, "a", B, B + S(1), false) < 0 && errno == ENOSPC,
	   "6th pair refused: ENOSPC");
	cmp_ok(rj_counts(j)[RJ_REGION_CAP], "==", 1, "counted");
	ok(rj_occurrence(j, 1, "a", B + S(2), B + S(1), false) < 0 &&
		   errno == EINVAL,
	   "end before begin: EINVAL");
	cmp_ok(rj_counts(j)[RJ_BAD_WINDOW], "==", 1, "counted");
	rj_free(j);
}

static void test_bad_input(void)
{
	struct rj_opts o = { .max_samples = 4,
			     .max_regions = 100,
			     .max_windows = 3,
			     .top = 10 };
	struct rj *j = rj_new(&o);
	const struct rj_result *r;

	/* a clock step back and a repeat are dropped and counted */
	ok(rj_sample(j, RJ_HOST_CPU, RJ_HOST, B + S(10), 10, 10) == 0, "t 10");
	ok(rj_sample(j, RJ_HOST_CPU, RJ_HOST, B + S(5), 99, 10) < 0 &&
		   errno == ERANGE,
	   "step back: ERANGE");
	ok(rj_sample(j, RJ_HOST_CPU, RJ_HOST, B + S(10), 99, 10) < 0,
	   "same time again refused");
	ok(rj_sample(j, RJ_HOST_CPU, RJ_HOST, B + S(20), NAN, 10) < 0 &&
		   errno == EINVAL,
	   "NaN: EINVAL");
	ok(rj_sample(j, RJ_GPU_UTIL, RJ_MAX_DEVICES, B + S(20), 1, 10) < 0,
	   "device 64 refused");
	ok(rj_sample(j, RJ_GPU_UTIL, RJ_HOST, B + S(20), 1, 10) < 0,
	   "GPU metric of the host refused");
	cmp_ok(rj_counts(j)[RJ_CLOCK_STEP], "==", 2, "clock steps counted");
	cmp_ok(rj_counts(j)[RJ_NOT_FINITE], "==", 1, "NaN counted");
	cmp_ok(rj_counts(j)[RJ_BAD_DEVICE], "==", 2, "devices counted");

	/* a device that vanishes: 10 at 10, 20 at 20, nothing until 60
	 * (a gap over 2 periods: covers (50, 60] only) */
	rj_sample(j, RJ_GPU_UTIL, 0, B + S(10), 10, 10);
	rj_sample(j, RJ_GPU_UTIL, 0, B + S(20), 20, 10);
	rj_sample(j, RJ_GPU_UTIL, 0, B + S(60), 60, 10);
	/* a region longer than the job, one inside the gap */
	rj_occurrence(j, 0, "long", B - S(10), B + S(110), false);
	rj_occurrence(j, 0, "gap", B + S(20), B + S(60), false);
	rj_occurrence(j, 0, "gap", B + S(30), B + S(35), false);
	/* past max_windows: a call and its time, not joined */
	rj_occurrence(j, 0, "late", B + S(70), B + S(72), false);
	cmp_ok(rj_counts(j)[RJ_WINDOW_CAP], "==", 1, "window cap counted");
	r = rj_compute(j, B, B + S(100));
	cmp_ok(r->counts[RJ_CLAMPED], "==", 1, "long region clamped");
	cmp_ok(r->unjoined, "==", 1, "one occurrence not joined");
	for (size_t i = 0; i < r->nrows; i++) {
		const struct rj_row *w = &r->rows[i];

		if (!strcmp(w->name, "long")) {
			is_near(w->total_s, 100, "long: cut to the job");
			/* 10 + 20 + 60 over 30 covered seconds of 100 */
			is_near(w->node.util.mean, 30, "long: busy");
			is_near(w->node.coverage, 0.3, "long: 30 %% covered");
		} else if (!strcmp(w->name, "gap")) {
			is_near(w->total_s, 40, "gap: union of [20,60)");
			is_near(w->node.util.mean, 60, "gap: the sample at 60");
			is_near(w->node.coverage, 0.25, "gap: 10 of 40 s");
		} else if (!strcmp(w->name, "late")) {
			is_near(w->total_s, 2, "late: its time counts");
			cmp_ok(w->calls, "==", 1, "late: its call counts");
			ok(isnan(w->node.util.mean), "late: not joined");
		}
	}
	rj_free(j);
}

static void test_downsample(void)
{
	struct rj_opts o = { .max_samples = 4,
			     .max_regions = 10,
			     .max_windows = 10,
			     .top = 10 };
	struct rj *j = rj_new(&o);
	const struct rj_result *r;

	/* 1..8 at 1 s: after two halvings (0,4] 2.5, (4,6] 5.5, 7, 8 */
	for (int k = 1; k <= 8; k++)
		rj_sample(j, RJ_HOST_CPU, RJ_HOST, B + S(k), k, 1);
	rj_occurrence(j, 0, "all", B, B + S(8), false);
	rj_occurrence(j, 0, "tail", B + S(6), B + S(8), false);
	rj_occurrence(j, 0, "head", B + S(1), B + S(2), false);
	r = rj_compute(j, B, B + S(8));
	cmp_ok(rj_counts(j)[RJ_DOWNSAMPLED], "==", 4, "four merges");
	is_near(r->period_s, 4, "coarsest period 4 s");
	is_near(r->job.cpu.mean, 4.5, "mean kept: 4.5");
	is_near(r->job.cpu.max, 8, "max kept");
	for (size_t i = 0; i < r->nrows; i++) {
		if (!strcmp(r->rows[i].name, "tail"))
			is_near(r->rows[i].node.cpu.mean, 7.5, "tail: 7, 8");
		if (!strcmp(r->rows[i].name, "head")) {
			is_near(r->rows[i].node.cpu.mean, 2.5,
				"head: the merged (0,4] sample");
			is_near(r->rows[i].node.cpu.max, 4,
				"head: its max is the merged one's");
		}
	}
	rj_free(j);
}

static void test_open(void)
{
	struct rj_opts o = { .max_samples = 4,
			     .max_regions = 10,
			     .max_windows = 10,
			     .top = 10 };
	struct rj *j = rj_new(&o);
	const struct rj_result *r;

	rj_occurrence(j, 3, "main", B, B + S(4), false);
	rj_occurrence(j, 3, "main", B + S(5), B + S(10), true);
	r = rj_compute(j, B, B + S(10));
	cmp_ok(r->open_at_end, "==", 1, "one open at the end");
	cmp_ok(r->rows[0].calls, "==", 2, "it is a call");
	is_near(r->rows[0].total_s, 9, "up to the end");
	/* it ends later: the open one is gone, the real one counts */
	rj_occurrence(j, 3, "main", B + S(5), B + S(6), false);
	r = rj_compute(j, B, B + S(10));
	cmp_ok(r->open_at_end, "==", 0, "none open");
	cmp_ok(r->rows[0].calls, "==", 2, "two calls, not three");
	is_near(r->rows[0].total_s, 5, "4 + 1 s");
	rj_occurrence(j, 3, "main", B + S(7), B + S(10), true);
	ok(rj_compute(j, B, B) == NULL && errno == EINVAL, "empty job: EINVAL");
	r = rj_compute(j, B, B + S(10));
	cmp_ok(r->rows[0].calls, "==", 2, "the open one went with it");
	rj_free(j);
}

static void test_parse_devices(void)
{
	static const struct {
		const char *s;
		uint64_t mask;
	} cases[] = {
		{ "0", 1 },	      { "0,1,3", 0xb }, { " 2 , 5", 0x24 },
		{ "63", 1ULL << 63 }, { "64", 0 },	{ "", 0 },
		{ "0,", 0 },	      { ",0", 0 },	{ "GPU-8f3a", 0 },
		{ "0-3", 0 },	      { "00001", 0 },	{ NULL, 0 },
	};

	for (int i = 0; cases[i].s; i++)
		cmp_ok(rj_parse_devices(cases[i].s), "==", cases[i].mask,
		       "devices \"%s\"", cases[i].s);
}

/*
 * Time past max_windows is summed unmerged: two overlapping occurrences of
 * a whole-job region, and one reaching past the job, must not make the
 * region open longer than the job (share 1, not 2.5; report_join_fuzz).
 */
static void test_unjoined_bound(void)
{
	struct rj_opts o = { .max_samples = 4,
			     .max_regions = 10,
			     .max_windows = 1,
			     .top = 10 };
	struct rj *j = rj_new(&o);
	const struct rj_result *r;

	rj_occurrence(j, 0, "warm", B, B + S(1), false);
	rj_occurrence(j, 0, "all", B, B + S(100), false);
	rj_occurrence(j, 0, "all", B + S(10), B + S(90), false);
	rj_occurrence(j, 0, "all", B + S(50), B + S(120), false);
	r = rj_compute(j, B, B + S(100));
	cmp_ok(r->unjoined, "==", 3, "three occurrences past the cap");
	ok(r->nrows == 2 && !strcmp(r->rows[0].name, "all"), "all first");
	is_near(r->rows[0].total_s, 100, "all: at most the job");
	is_near(r->rows[0].share, 1, "all: share 1");
	cmp_ok(r->rows[0].calls, "==", 3, "all: its calls count");
	rj_free(j);
}

int main(void)
{
	plan(NO_PLAN);
	test_job();
	test_fold();
	test_bad_input();
	test_unjoined_bound();
	test_downsample();
	test_open();
	test_parse_devices();
	done_testing();
}
