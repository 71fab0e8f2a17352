/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/report/join.h - the report's join of metric samples with
 * the time regions were open: pure code, no loop, no I/O
 *
 * Definition (doc/plugins/report.md, "How figures are attributed"):
 *   - A sample of a series taken at t covers (t - d, t], d being the time
 *     since the series' previous sample, or the series' interval T for its
 *     first sample and after a gap longer than 2 T (a device that vanished,
 *     reads that were skipped): a gap is then not covered by any sample.
 *   - A region's open windows on a rank are the union of all its
 *     occurrences on that rank, clamped to the job's window.
 *   - A figure of a region is the time-weighted overlap of the samples with
 *     those windows: mean = sum(v * overlap) / sum(overlap), max = the
 *     largest value of a sample that overlaps at all, energy = sum over
 *     devices of sum(power * overlap) (joules from watts and seconds).
 *     Time a window is not covered by any sample adds nothing: the
 *     coverage is reported beside.
 *   - A rank's GPU figures use the devices it sees (rj_rank_devices()),
 *     else every GPU of the node (the result says which ranks had no
 *     list). A region's row uses the union of its ranks' windows and
 *     devices (the node's view: nothing counted twice); its spread is the
 *     per-rank figures' min, median (nearest rank, tally/quantile.h) and
 *     max.
 *   - Error bound: each edge of an occurrence falls inside one sample, so
 *     up to one sample period T of the time attributed at each edge may
 *     belong to the neighbouring region: a region open D seconds in n
 *     occurrences has at most min(1, 2 n T / D) of its figure's weight
 *     from samples that straddle its edges.
 *
 * Memory is bounded: each series keeps at most max_samples samples, and
 * when full merges neighbours pairwise (time-weighted mean, max kept),
 * halving its resolution (the error bound uses the coarsest period);
 * (rank, region) keys stop at max_regions and windows at max_windows
 * (beyond: counted, and a region's calls and time still add up but its
 * further windows are not joined; that time is summed as it comes, not
 * merged with overlapping occurrences nor cut to the job, so a rank's
 * region is then taken as open at most the whole job).
 *
 * Thread-safety: none; one struct rj is used by one thread.
 */
#ifndef TALLY_REPORT_JOIN_H
#define TALLY_REPORT_JOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* GPUs a node may have (device indexes 0 to RJ_MAX_DEVICES - 1). */
#define RJ_MAX_DEVICES 64
/* The host's series use this device index. */
#define RJ_HOST (-1)

/** enum rj_metric - what a series measures */
enum rj_metric {
	RJ_GPU_UTIL = 0, /* GPU busy, percent */
	RJ_GPU_POWER,	 /* GPU power, watts */
	RJ_GPU_VRAM,	 /* GPU memory used, bytes */
	RJ_HOST_CPU,	 /* host CPU busy, percent of all CPUs */
	RJ_HOST_MEM,	 /* host memory used, bytes */
	RJ_NMETRICS,
};

/** enum rj_count - what the join dropped or changed, by reason */
enum rj_count {
	RJ_CLOCK_STEP = 0, /* sample not after its series' previous one */
	RJ_NOT_FINITE,	   /* sample NaN or infinite */
	RJ_BAD_DEVICE,	   /* device index out of range */
	RJ_DOWNSAMPLED,	   /* pairs of samples merged at max_samples */
	RJ_REGION_CAP,	   /* occurrence of a (rank, region) over the cap */
	RJ_WINDOW_CAP,	   /* occurrence counted but not joined */
	RJ_BAD_WINDOW,	   /* occurrence ending before it began */
	RJ_CLAMPED,	   /* occurrence cut to the job's window */
	RJ_NCOUNTS,
};

/**
 * struct rj_opts - limits
 * @max_samples: samples kept per series (>= 2)
 * @max_regions: (rank, region name) pairs tracked
 * @max_windows: occurrences kept for the join, all regions together
 * @top:         region rows in the result; the rest are folded into one
 */
struct rj_opts {
	size_t max_samples;
	size_t max_regions;
	size_t max_windows;
	size_t top;
};

/**
 * struct rj_fig - one figure over some windows
 * @mean: time-weighted mean (NaN: no sample overlaps)
 * @max:  largest sample overlapping (NaN as @mean)
 */
struct rj_fig {
	double mean;
	double max;
};

/**
 * struct rj_figs - every figure over some windows
 * @util:     GPU busy percent: mean and max over the devices used
 * @power:    GPU watts: mean is the sum of the devices' mean powers
 * @energy_j: joules the devices drew while covered (NaN: no power series)
 * @vram:     bytes: max is the peak of any device used (mean unused)
 * @cpu:      host CPU busy percent
 * @mem:      host memory used, bytes (max is the peak)
 * @coverage: fraction of the windows' time covered by GPU utilization
 *            samples (NaN: no GPU), the host's by CPU samples in
 *            @host_coverage
 */
struct rj_figs {
	struct rj_fig util, power, vram, cpu, mem;
	double energy_j;
	double coverage;
	double host_coverage;
};

/* The spread of one figure across ranks: min, median, max. */
struct rj_spread {
	double min, median, max;
};

/* Indexes of struct rj_row.spread. */
enum rj_fig_id {
	RJ_F_TIME = 0, /* seconds open */
	RJ_F_UTIL,     /* mean GPU busy */
	RJ_F_POWER,    /* mean GPU watts */
	RJ_F_ENERGY,   /* joules */
	RJ_F_VRAM,     /* peak VRAM bytes */
	RJ_F_CPU,      /* mean host CPU busy */
	RJ_F_MEM,      /* peak host memory */
	RJ_NFIGS,
};

/**
 * struct rj_row - one region (or the folded rest) in the result
 * @name:     region name (owned by the struct rj); NULL for the folded row
 * @folded:   folded row: how many region names it stands for
 * @ranks:    ranks in which the region ran
 * @calls:    occurrences, all ranks
 * @total_s:  seconds open, summed over ranks (union of a rank's
 *            occurrences: a recursive region counts once)
 * @mean_s:   @total_s / @calls
 * @share:    @total_s / (job seconds * ranks in the job)
 * @node:     figures over the union of all ranks' windows (node view)
 * @spread:   per-rank figures (RJ_F_*) across @ranks
 * @max_occurrences: the largest occurrence count of one rank, for the
 *            error bound
 */
struct rj_row {
	const char *name;
	size_t folded;
	size_t ranks;
	uint64_t calls;
	double total_s;
	double mean_s;
	double share;
	struct rj_figs node;
	struct rj_spread spread[RJ_NFIGS];
	uint64_t max_occurrences;
};

/**
 * struct rj_rank_row - one rank's summary
 * @rank:     the rank (-1: spans without a rank)
 * @calls:    occurrences of all its regions
 * @traced_s: seconds inside any region (union)
 * @devices:  bit mask of the GPUs it sees, 0 when it did not say
 * @figs:     figures over its traced time and its devices
 */
struct rj_rank_row {
	int32_t rank;
	uint64_t calls;
	double traced_s;
	uint64_t devices;
	struct rj_figs figs;
};

/**
 * struct rj_result - what rj_compute() found; owned by the struct rj
 * @job_s:        the job's window, seconds
 * @job:          figures over the whole window, every device
 * @rows, @nrows: top regions by total time, descending (name ascending
 *                on ties), then the folded row if any
 * @ranks, @nranks: per rank, ascending
 * @devices:      bit mask of the GPUs seen
 * @host:         whether any host series was seen
 * @unmapped:     ranks without a device list (their GPU figures use
 *                every GPU)
 * @period_s:     the coarsest sample period over series (0: none), the T
 *                of the error bound
 * @counts:       rj_count totals
 * @unjoined:     occurrences counted but not joined (window cap)
 * @open_at_end:  occurrences still open, ended at the job's end
 */
struct rj_result {
	double job_s;
	struct rj_figs job;
	struct rj_row *rows;
	size_t nrows;
	struct rj_rank_row *ranks;
	size_t nranks;
	uint64_t devices;
	bool host;
	size_t unmapped;
	double period_s;
	uint64_t counts[RJ_NCOUNTS];
	uint64_t unjoined;
	uint64_t open_at_end;
};

struct rj;

/**
 * rj_new() - an empty join
 * Return: the join, or NULL with errno = ENOMEM, or EINVAL (a limit of 0,
 * max_samples < 2).
 */
struct rj *rj_new(const struct rj_opts *o);

/** rj_free() - free @j and its result; NULL is a no-op */
void rj_free(struct rj *j);

/**
 * rj_sample() - add a sample to the series (@m, @device)
 * @m:          what it measures
 * @device:     GPU index for RJ_GPU_*, RJ_HOST for the host's
 * @t_ns:       when it was taken, CLOCK_REALTIME ns
 * @v:          its value in the metric's unit
 * @interval_s: the series' nominal sampling interval (> 0)
 *
 * Return: 0, or -1 with errno = EINVAL (not finite, bad metric or device,
 * interval <= 0), ERANGE (not after the series' previous sample: a clock
 * step) or ENOMEM; each counted in rj_counts() except ENOMEM.
 */
int rj_sample(struct rj *j, enum rj_metric m, int device, int64_t t_ns,
	      double v, double interval_s);

/**
 * rj_occurrence() - add one occurrence of region @name on @rank
 * @begin_ns, @end_ns: its window (CLOCK_REALTIME ns)
 * @open:  it has not ended (the caller gives the job's end as @end_ns):
 *         counted for the next rj_compute() only, which forgets it (it
 *         may end later). Add open occurrences after every ended one,
 *         right before rj_compute().
 *
 * Return: 0, or -1 with errno = EINVAL (@end_ns < @begin_ns), ENOSPC
 * (max_regions reached: a new (rank, region) pair), ENOMEM. A window past
 * max_windows still counts as a call with its time (errno not set, 0
 * returned) but is not joined (RJ_WINDOW_CAP).
 */
int rj_occurrence(struct rj *j, int32_t rank, const char *name,
		  int64_t begin_ns, int64_t end_ns, bool open);

/**
 * rj_rank_devices() - the GPUs @rank sees (replaces an earlier list)
 * @mask: bit i for device i; 0 forgets the list
 * Return: 0, or -1 with errno = ENOMEM.
 */
int rj_rank_devices(struct rj *j, int32_t rank, uint64_t mask);

/**
 * rj_parse_devices() - a *_VISIBLE_DEVICES value as a device mask
 * @s: "0,1,3" (decimal indexes, commas, optional spaces)
 *
 * Return: the mask, or 0 with errno = EINVAL when @s is empty or holds
 * anything else (GPU UUIDs, ranges) or an index >= RJ_MAX_DEVICES.
 */
uint64_t rj_parse_devices(const char *s);

/**
 * rj_compute() - the result over the job window [@job_begin_ns,
 * @job_end_ns]
 *
 * Can be called again after more samples and occurrences (SIGUSR1, then
 * the end): the previous result is freed.
 * Return: the result (owned by @j, valid until the next call or
 * rj_free()), or NULL with errno = ENOMEM, or EINVAL (@job_end_ns <=
 * @job_begin_ns).
 */
const struct rj_result *rj_compute(struct rj *j, int64_t job_begin_ns,
				   int64_t job_end_ns);

/** rj_counts() - rj_count totals so far, RJ_NCOUNTS entries */
const uint64_t *rj_counts(const struct rj *j);

/** rj_bounds() - earliest and latest timestamps seen, 0 when none */
void rj_bounds(const struct rj *j, int64_t *first_ns, int64_t *last_ns);

/**
 * struct rj_point - one kept sample: its value over (@t0, @t1] (ns); after
 * downsampling the time-weighted mean and the max of the merged ones
 */
struct rj_point {
	int64_t t0, t1;
	int64_t w;
	double mean, max;
};

/**
 * rj_points() - the samples kept of series (@m, @device), oldest first
 * Return: their number; *@out valid until the next rj_sample() on it.
 */
size_t rj_points(const struct rj *j, enum rj_metric m, int device,
		 const struct rj_point **out);

/**
 * rj_each_window() - call @fn for every occurrence kept for the join
 * (ended ones; open ones only between their rj_occurrence() and the
 * rj_compute() that forgets them), region by region
 */
void rj_each_window(const struct rj *j,
		    void (*fn)(void *ctx, int32_t rank, const char *name,
			       int64_t begin_ns, int64_t end_ns),
		    void *ctx);

/** rj_memory() - bytes held by samples and windows (for the bench) */
size_t rj_memory(const struct rj *j);

#endif /* TALLY_REPORT_JOIN_H */
