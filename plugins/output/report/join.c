/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/report/join.c - the report's join of metric samples with
 * region windows (definition in join.h)
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <tally/hash.h>
#include <tally/quantile.h>

#include "join.h"

#define NS 1e9

struct rj_series {
	struct rj_point *s;
	size_t n, cap;
	int64_t last_t;
	int64_t period; /* the longest sample kept, ns */
};

/* one window, [b, e) */
struct rj_win {
	int64_t b, e;
};

struct rj_region {
	struct tally_hnode node;
	int32_t rank;
	char *name;
	uint64_t calls;
	struct rj_win *w;
	size_t nw, capw;
	int64_t unjoined_ns; /* time of occurrences past max_windows */
	/* occurrences still open: added for one rj_compute() only */
	size_t tw; /* windows among the last of @w */
	uint64_t tcalls;
	int64_t tunjoined_ns;
	/* rj_compute() scratch */
	struct rj_win *u; /* the union, clamped */
	size_t nu;
	double open_s;
};

struct rj_rank {
	int32_t rank;
	uint64_t mask;
};

struct rj {
	struct rj_opts o;
	struct rj_series series[RJ_NMETRICS][RJ_MAX_DEVICES + 1];
	struct tally_htable regions;
	struct rj_region **all; /* every region, in arrival order */
	size_t nregions, capregions;
	size_t nwindows;
	struct rj_rank *ranks; /* device lists */
	size_t nranks;
	uint64_t counts[RJ_NCOUNTS];
	int64_t first, last;
	uint64_t open; /* occurrences added open since rj_compute() */
	struct rj_result res;
	bool have_res;
};

struct rj *rj_new(const struct rj_opts *o)
{
	struct rj *j;

	if (!o->max_samples || o->max_samples < 2 || !o->max_regions ||
	    !o->max_windows || !o->top) {
		errno = EINVAL;
		return NULL;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		errno = ENOMEM;
		return NULL;
	}
	j->o = *o;
	return j;
}

static void rj_result_free(struct rj *j)
{
	free(j->res.rows);
	free(j->res.ranks);
	memset(&j->res, 0, sizeof(j->res));
	j->have_res = false;
}

void rj_free(struct rj *j)
{
	if (!j)
		return;
	rj_result_free(j);
	for (int m = 0; m < RJ_NMETRICS; m++)
		for (int d = 0; d <= RJ_MAX_DEVICES; d++)
			free(j->series[m][d].s);
	for (size_t i = 0; i < j->nregions; i++) {
		free(j->all[i]->name);
		free(j->all[i]->w);
		free(j->all[i]->u);
		free(j->all[i]);
	}
	free(j->all);
	free(j->ranks);
	tally_htable_fini(&j->regions);
	free(j);
}

static void rj_seen(struct rj *j, int64_t t)
{
	if (!j->first || t < j->first)
		j->first = t;
	if (!j->last || t > j->last)
		j->last = t;
}

/* Halve a full series: neighbours merged, time-weighted. */
static void series_halve(struct rj *j, struct rj_series *s)
{
	size_t k = 0;

	for (size_t i = 0; i < s->n; i += 2, k++) {
		struct rj_point a = s->s[i];

		if (i + 1 < s->n) {
			const struct rj_point *b = &s->s[i + 1];
			int64_t w = a.w + b->w;

			a.mean = w > 0 ? (a.mean * (double)a.w +
					  b->mean * (double)b->w) /
						 (double)w
				       : a.mean;
			a.max = fmax(a.max, b->max);
			a.t1 = b->t1;
			a.w = w;
			j->counts[RJ_DOWNSAMPLED]++;
		}
		if (a.t1 - a.t0 > s->period)
			s->period = a.t1 - a.t0;
		s->s[k] = a;
	}
	s->n = k;
}

int rj_sample(struct rj *j, enum rj_metric m, int device, int64_t t_ns,
	      double v, double interval_s)
{
	bool gpu = m == RJ_GPU_UTIL || m == RJ_GPU_POWER || m == RJ_GPU_VRAM;
	struct rj_series *s;
	int64_t iv, d;

	if ((unsigned)m >= RJ_NMETRICS || !(interval_s > 0) ||
	    interval_s > 1e6) {
		errno = EINVAL;
		return -1;
	}
	if (gpu ? (device < 0 || device >= RJ_MAX_DEVICES)
		: device != RJ_HOST) {
		j->counts[RJ_BAD_DEVICE]++;
		errno = EINVAL;
		return -1;
	}
	if (!isfinite(v)) {
		j->counts[RJ_NOT_FINITE]++;
		errno = EINVAL;
		return -1;
	}
	s = &j->series[m][device + 1];
	if (s->n && t_ns <= s->last_t) {
		j->counts[RJ_CLOCK_STEP]++;
		errno = ERANGE;
		return -1;
	}
	iv = (int64_t)llround(interval_s * NS);
	if (iv < 1)
		iv = 1;
	d = s->n && t_ns - s->last_t <= 2 * iv ? t_ns - s->last_t : iv;
	if (s->n == s->cap) {
		if (s->cap < j->o.max_samples) {
			size_t cap = s->cap ? s->cap * 2 : 64;
			struct rj_point *n;

			if (cap > j->o.max_samples)
				cap = j->o.max_samples;
			n = realloc(s->s, cap * sizeof(*n));
			if (!n) {
				errno = ENOMEM;
				return -1;
			}
			s->s = n;
			s->cap = cap;
		} else {
			series_halve(j, s);
		}
	}
	s->s[s->n++] = (struct rj_point){
		.t0 = t_ns - d, .t1 = t_ns, .w = d, .mean = v, .max = v
	};
	if (d > s->period)
		s->period = d;
	s->last_t = t_ns;
	rj_seen(j, t_ns - d);
	rj_seen(j, t_ns);
	return 0;
}

static uint64_t region_hash(int32_t rank, const char *name)
{
	uint64_t h = tally_hash_bytes(TALLY_HASH_SEED, &rank, sizeof(rank));

	return tally_hash_str(h, name);
}

static struct rj_region *region_get(struct rj *j, int32_t rank,
				    const char *name)
{
	uint64_t h = region_hash(rank, name);
	struct tally_hnode *p;
	struct rj_region *r;

	tally_htable_for_each_hash(&j->regions, h, p)
	{
		r = tally_container_of(p, struct rj_region, node);
		if (r->rank == rank && !strcmp(r->name, name))
			return r;
	}
	if (j->nregions >= j->o.max_regions) {
		j->counts[RJ_REGION_CAP]++;
		errno = ENOSPC;
		return NULL;
	}
	if (j->nregions == j->capregions) {
		size_t cap = j->capregions ? j->capregions * 2 : 64;
		struct rj_region **all = realloc(j->all, cap * sizeof(*all));

		if (!all)
			goto out_nomem;
		j->all = all;
		j->capregions = cap;
	}
	if (tally_htable_reserve(&j->regions) < 0)
		goto out_nomem;
	r = calloc(1, sizeof(*r));
	if (!r)
		goto out_nomem;
	r->name = strdup(name);
	if (!r->name) {
		free(r);
		goto out_nomem;
	}
	r->rank = rank;
	r->node.hash = h;
	tally_htable_insert(&j->regions, &r->node);
	j->all[j->nregions++] = r;
	return r;

out_nomem:
	errno = ENOMEM;
	return NULL;
}

static int region_add(struct rj *j, struct rj_region *r, int64_t b, int64_t e,
		      bool open)
{
	if (j->nwindows >= j->o.max_windows) {
		r->unjoined_ns += e - b;
		if (open)
			r->tunjoined_ns += e - b;
		else
			j->counts[RJ_WINDOW_CAP]++;
		return 0;
	}
	if (r->nw == r->capw) {
		size_t cap = r->capw ? r->capw * 2 : 4;
		struct rj_win *w = realloc(r->w, cap * sizeof(*w));

		if (!w) {
			errno = ENOMEM;
			return -1;
		}
		r->w = w;
		r->capw = cap;
	}
	r->w[r->nw++] = (struct rj_win){ b, e };
	r->tw += open;
	j->nwindows++;
	return 0;
}

int rj_occurrence(struct rj *j, int32_t rank, const char *name,
		  int64_t begin_ns, int64_t end_ns, bool open)
{
	struct rj_region *r;

	if (end_ns < begin_ns) {
		j->counts[RJ_BAD_WINDOW]++;
		errno = EINVAL;
		return -1;
	}
	r = region_get(j, rank, name);
	if (!r)
		return -1;
	if (region_add(j, r, begin_ns, end_ns, open) < 0)
		return -1;
	r->calls++;
	r->tcalls += open;
	j->open += open;
	rj_seen(j, begin_ns);
	rj_seen(j, end_ns);
	return 0;
}

int rj_rank_devices(struct rj *j, int32_t rank, uint64_t mask)
{
	struct rj_rank *n;

	for (size_t i = 0; i < j->nranks; i++)
		if (j->ranks[i].rank == rank) {
			j->ranks[i].mask = mask;
			return 0;
		}
	n = realloc(j->ranks, (j->nranks + 1) * sizeof(*n));
	if (!n) {
		errno = ENOMEM;
		return -1;
	}
	j->ranks = n;
	j->ranks[j->nranks++] = (struct rj_rank){ rank, mask };
	return 0;
}

uint64_t rj_parse_devices(const char *s)
{
	uint64_t mask = 0;
	bool any = false;

	while (*s) {
		unsigned v = 0;
		int digits = 0;

		while (*s == ' ')
			s++;
		while (*s >= '0' && *s <= '9' && digits < 4) {
			v = v * 10 + (unsigned)(*s++ - '0');
			digits++;
		}
		while (*s == ' ')
			s++;
		if (!digits || v >= RJ_MAX_DEVICES || (*s && *s != ','))
			goto out_inval;
		mask |= 1ULL << v;
		any = true;
		if (*s == ',' && !*++s)
			goto out_inval;
	}
	if (!any)
		goto out_inval;
	return mask;

out_inval:
	errno = EINVAL;
	return 0;
}

static uint64_t rank_mask(const struct rj *j, int32_t rank)
{
	for (size_t i = 0; i < j->nranks; i++)
		if (j->ranks[i].rank == rank)
			return j->ranks[i].mask;
	return 0;
}

static int win_cmp(const void *a, const void *b)
{
	const struct rj_win *x = a, *y = b;

	return (x->b > y->b) - (x->b < y->b);
}

/* Sort and merge @n windows in place. Return: how many remain. */
static size_t win_union(struct rj_win *w, size_t n)
{
	size_t k = 0;

	if (!n)
		return 0;
	qsort(w, n, sizeof(*w), win_cmp);
	for (size_t i = 1; i < n; i++) {
		if (w[i].b <= w[k].e) {
			if (w[i].e > w[k].e)
				w[k].e = w[i].e;
		} else {
			w[++k] = w[i];
		}
	}
	return k + 1;
}

static double win_seconds(const struct rj_win *w, size_t n)
{
	int64_t t = 0;

	for (size_t i = 0; i < n; i++)
		t += w[i].e - w[i].b;
	return (double)t / NS;
}

/* the overlap of one series with sorted, disjoint windows */
struct acc {
	double vo; /* value * covered ns */
	double o;  /* covered ns */
	double max;
};

static void series_overlap(const struct rj_series *s, const struct rj_win *w,
			   size_t nw, struct acc *a)
{
	for (size_t i = 0; i < nw; i++) {
		size_t lo = 0, hi = s->n;

		/* the first sample ending after the window's begin */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (s->s[mid].t1 <= w[i].b)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo; k < s->n && s->s[k].t0 < w[i].e; k++) {
			const struct rj_point *p = &s->s[k];
			int64_t b = p->t0 > w[i].b ? p->t0 : w[i].b;
			int64_t e = p->t1 < w[i].e ? p->t1 : w[i].e;
			double o;

			if (e <= b)
				continue;
			o = (double)(e - b) * (double)p->w /
			    (double)(p->t1 - p->t0);
			a->vo += p->mean * o;
			a->o += o;
			a->max = isnan(a->max) ? p->max : fmax(a->max, p->max);
		}
	}
}

static struct acc acc_new(void)
{
	return (struct acc){ 0, 0, NAN };
}

static struct rj_fig fig_of(const struct acc *a)
{
	return (struct rj_fig){ a->o > 0 ? a->vo / a->o : NAN,
				a->o > 0 ? a->max : NAN };
}

/* Every figure over @w for the GPUs in @mask (present ones). */
static void figs_of(const struct rj *j, const struct rj_win *w, size_t nw,
		    uint64_t mask, struct rj_figs *f)
{
	struct acc util = acc_new(), vram = acc_new(), cpu = acc_new(),
		   mem = acc_new(), pmax = acc_new();
	double span = win_seconds(w, nw) * NS;
	double psum = 0, energy = 0;
	size_t ndev = 0, npow = 0;

	for (int d = 0; d < RJ_MAX_DEVICES; d++) {
		const struct rj_series *pw = &j->series[RJ_GPU_POWER][d + 1];
		const struct rj_series *u = &j->series[RJ_GPU_UTIL][d + 1];
		struct acc p = acc_new();

		if (!(mask >> d & 1))
			continue;
		if (u->n) {
			ndev++;
			series_overlap(u, w, nw, &util);
		}
		series_overlap(&j->series[RJ_GPU_VRAM][d + 1], w, nw, &vram);
		if (!pw->n)
			continue;
		npow++;
		series_overlap(pw, w, nw, &p);
		if (p.o > 0) {
			psum += p.vo / p.o;
			energy += p.vo / NS;
			pmax.max =
				isnan(pmax.max) ? p.max : fmax(pmax.max, p.max);
			pmax.o += p.o;
		}
	}
	series_overlap(&j->series[RJ_HOST_CPU][0], w, nw, &cpu);
	series_overlap(&j->series[RJ_HOST_MEM][0], w, nw, &mem);
	f->util = fig_of(&util);
	f->vram = fig_of(&vram);
	f->cpu = fig_of(&cpu);
	f->mem = fig_of(&mem);
	f->power.mean = pmax.o > 0 ? psum : NAN;
	f->power.max = pmax.o > 0 ? pmax.max : NAN;
	f->energy_j = npow ? energy : NAN;
	f->coverage = ndev && span > 0 ? util.o / (span * (double)ndev) : NAN;
	f->host_coverage =
		j->series[RJ_HOST_CPU][0].n && span > 0 ? cpu.o / span : NAN;
}

/* The value of figure @id in @f for a spread across ranks. */
static double fig_value(const struct rj_figs *f, double time_s,
			enum rj_fig_id id)
{
	switch (id) {
	case RJ_F_TIME:
		return time_s;
	case RJ_F_UTIL:
		return f->util.mean;
	case RJ_F_POWER:
		return f->power.mean;
	case RJ_F_ENERGY:
		return f->energy_j;
	case RJ_F_VRAM:
		return f->vram.max;
	case RJ_F_CPU:
		return f->cpu.mean;
	case RJ_F_MEM:
		return f->mem.max;
	default:
		return NAN;
	}
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* min, median (nearest rank) and max of the finite values of @v */
static struct rj_spread spread_of(double *v, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (isfinite(v[i]))
			v[k++] = v[i];
	if (!k)
		return (struct rj_spread){ NAN, NAN, NAN };
	qsort(v, k, sizeof(*v), dbl_cmp);
	return (struct rj_spread){ v[0], tally_quantile_sorted(v, k, 0.5),
				   v[k - 1] };
}

static int region_by_name(const void *a, const void *b)
{
	const struct rj_region *x = *(struct rj_region *const *)a;
	const struct rj_region *y = *(struct rj_region *const *)b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

static int region_by_rank(const void *a, const void *b)
{
	const struct rj_region *x = *(struct rj_region *const *)a;
	const struct rj_region *y = *(struct rj_region *const *)b;

	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* a region name and its ranks: sorted[first .. first + n) */
struct group {
	size_t first, n;
	double total_s;
	uint64_t calls;
	const char *name;
};

static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->total_s != y->total_s)
		return x->total_s < y->total_s ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* all of @n regions' union windows, merged into one list (malloc'd) */
static struct rj_win *merge_windows(struct rj_region **r, size_t n,
				    size_t *nout)
{
	size_t total = 0, k = 0;
	struct rj_win *w;

	for (size_t i = 0; i < n; i++)
		total += r[i]->nu;
	w = malloc((total ? total : 1) * sizeof(*w));
	if (!w)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (r[i]->nu) /* u is NULL while there is none */
			memcpy(w + k, r[i]->u, r[i]->nu * sizeof(*w));
		k += r[i]->nu;
	}
	*nout = win_union(w, k);
	return w;
}

static uint64_t all_devices(const struct rj *j)
{
	uint64_t m = 0;

	for (int d = 0; d < RJ_MAX_DEVICES; d++)
		for (int k = RJ_GPU_UTIL; k <= RJ_GPU_VRAM; k++)
			if (j->series[k][d + 1].n)
				m |= 1ULL << d;
	return m;
}

static int rank_cmp(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

/* distinct ranks of the regions of @n groups (0 when out of memory) */
static size_t folded_ranks(struct rj_region **sorted, const struct group *g,
			   size_t n)
{
	size_t total = 0, k = 0, distinct = 0;
	int32_t *v;

	for (size_t i = 0; i < n; i++)
		total += g[i].n;
	v = malloc(total * sizeof(*v));
	if (!v)
		return 0;
	for (size_t i = 0; i < n; i++)
		for (size_t r = 0; r < g[i].n; r++)
			v[k++] = sorted[g[i].first + r]->rank;
	qsort(v, k, sizeof(*v), rank_cmp);
	for (size_t i = 0; i < k; i++)
		distinct += !i || v[i] != v[i - 1];
	free(v);
	return distinct;
}

/* Clamp and merge each region's windows into its scratch union. */
static int regions_union(struct rj *j, int64_t jb, int64_t je,
			 uint64_t *clamped)
{
	for (size_t i = 0; i < j->nregions; i++) {
		struct rj_region *r = j->all[i];
		size_t k = 0;

		free(r->u);
		r->u = malloc((r->nw ? r->nw : 1) * sizeof(*r->u));
		if (!r->u)
			return -1;
		for (size_t n = 0; n < r->nw; n++) {
			struct rj_win w = r->w[n];

			if (w.b < jb || w.e > je) {
				(*clamped)++;
				w.b = w.b < jb ? jb : w.b;
				w.e = w.e > je ? je : w.e;
			}
			if (w.e > w.b)
				r->u[k++] = w;
		}
		r->nu = win_union(r->u, k);
		/*
		 * Time past max_windows was summed without its windows: not
		 * clamped to the job nor merged with overlapping occurrences,
		 * so it can exceed the job. One rank's region is open at most
		 * the whole job (what report_join_fuzz found: a share of
		 * 1.004 from two overlapping unjoined occurrences).
		 */
		r->open_s = fmin(win_seconds(r->u, r->nu) +
					 (double)r->unjoined_ns / NS,
				 (double)(je - jb) / NS);
	}
	return 0;
}

/* one region name's row: node view and per-rank spread */
static int row_fill(struct rj *j, struct rj_region **r, const struct group *g,
		    double job_s, size_t nranks, uint64_t every,
		    struct rj_row *row)
{
	struct rj_figs *per = calloc(g->n, sizeof(*per));
	double *v = malloc(g->n * sizeof(*v));
	uint64_t mask = 0;
	struct rj_win *w = NULL;
	size_t nw;
	int ret = -1;

	if (!per || !v)
		goto out_free;
	row->name = g->name;
	row->ranks = g->n;
	row->calls = g->calls;
	row->total_s = g->total_s;
	row->mean_s = g->calls ? g->total_s / (double)g->calls : NAN;
	row->share = g->total_s / (job_s * (double)nranks);
	for (size_t i = 0; i < g->n; i++) {
		uint64_t m = rank_mask(j, r[i]->rank);

		mask |= m ? m : every;
		if (r[i]->calls > row->max_occurrences)
			row->max_occurrences = r[i]->calls;
		figs_of(j, r[i]->u, r[i]->nu, m ? m : every, &per[i]);
	}
	w = merge_windows(r, g->n, &nw);
	if (!w)
		goto out_free;
	figs_of(j, w, nw, mask, &row->node);
	for (int f = 0; f < RJ_NFIGS; f++) {
		for (size_t i = 0; i < g->n; i++)
			v[i] = fig_value(&per[i], r[i]->open_s,
					 (enum rj_fig_id)f);
		row->spread[f] = spread_of(v, g->n);
	}
	ret = 0;
out_free:
	free(w);
	free(v);
	free(per);
	return ret;
}

static int ranks_fill(struct rj *j, struct rj_region **byrank, uint64_t every)
{
	struct rj_result *res = &j->res;

	for (size_t i = 0; i < j->nregions;) {
		size_t n = 1;
		struct rj_rank_row *rr = &res->ranks[res->nranks++];
		struct rj_win *w;
		size_t nw;

		while (i + n < j->nregions &&
		       byrank[i + n]->rank == byrank[i]->rank)
			n++;
		rr->rank = byrank[i]->rank;
		rr->devices = rank_mask(j, rr->rank);
		res->unmapped += !rr->devices;
		for (size_t k = 0; k < n; k++)
			rr->calls += byrank[i + k]->calls;
		w = merge_windows(byrank + i, n, &nw);
		if (!w)
			return -1;
		rr->traced_s = win_seconds(w, nw);
		figs_of(j, w, nw, rr->devices ? rr->devices : every, &rr->figs);
		free(w);
		i += n;
	}
	return 0;
}

/* The occurrences added open were for this computation only. */
static void rj_forget_open(struct rj *j)
{
	for (size_t i = 0; i < j->nregions; i++) {
		struct rj_region *r = j->all[i];

		r->nw -= r->tw;
		j->nwindows -= r->tw;
		r->calls -= r->tcalls;
		r->unjoined_ns -= r->tunjoined_ns;
		r->tw = r->tcalls = 0;
		r->tunjoined_ns = 0;
	}
	j->open = 0;
}

const struct rj_result *rj_compute(struct rj *j, int64_t job_begin_ns,
				   int64_t job_end_ns)
{
	struct rj_result *res = &j->res;
	struct rj_region **sorted = NULL;
	struct group *groups = NULL;
	size_t ngroups = 0, nranks = 0, top;
	uint64_t every, clamped = 0;
	struct rj_win job;
	double job_s;

	if (job_end_ns <= job_begin_ns) {
		rj_forget_open(j);
		errno = EINVAL;
		return NULL;
	}
	rj_result_free(j);
	res->open_at_end = j->open;
	job = (struct rj_win){ job_begin_ns, job_end_ns };
	job_s = (double)(job_end_ns - job_begin_ns) / NS;
	every = all_devices(j);
	res->job_s = job_s;
	res->devices = every;
	for (int m = 0; m < RJ_NMETRICS; m++)
		for (int d = 0; d <= RJ_MAX_DEVICES; d++) {
			const struct rj_series *s = &j->series[m][d];

			if (s->n && (double)s->period / NS > res->period_s)
				res->period_s = (double)s->period / NS;
			if (s->n && d == 0)
				res->host = true;
		}
	figs_of(j, &job, 1, every, &res->job);
	if (regions_union(j, job_begin_ns, job_end_ns, &clamped) < 0)
		goto out_nomem;
	memcpy(res->counts, j->counts, sizeof(res->counts));
	res->counts[RJ_CLAMPED] = clamped;
	res->unjoined = j->counts[RJ_WINDOW_CAP];
	sorted = malloc((j->nregions ? j->nregions : 1) * sizeof(*sorted));
	groups = malloc((j->nregions ? j->nregions : 1) * sizeof(*groups));
	res->ranks = calloc(j->nregions ? j->nregions : 1, sizeof(*res->ranks));
	if (!sorted || !groups || !res->ranks)
		goto out_nomem;

	/* per rank */
	if (j->nregions) /* j->all is NULL while there is none */
		memcpy(sorted, j->all, j->nregions * sizeof(*sorted));
	qsort(sorted, j->nregions, sizeof(*sorted), region_by_rank);
	if (ranks_fill(j, sorted, every) < 0)
		goto out_nomem;
	nranks = res->nranks ? res->nranks : 1;

	/* per region name, the longest first */
	qsort(sorted, j->nregions, sizeof(*sorted), region_by_name);
	for (size_t i = 0; i < j->nregions;) {
		struct group *g = &groups[ngroups++];

		*g = (struct group){ .first = i, .name = sorted[i]->name };
		while (i < j->nregions && !strcmp(sorted[i]->name, g->name)) {
			g->total_s += sorted[i]->open_s;
			g->calls += sorted[i]->calls;
			g->n++;
			i++;
		}
	}
	qsort(groups, ngroups, sizeof(*groups), group_cmp);
	top = ngroups < j->o.top ? ngroups : j->o.top;
	res->rows = calloc(top + 1, sizeof(*res->rows));
	if (!res->rows)
		goto out_nomem;
	for (size_t i = 0; i < top; i++)
		if (row_fill(j, sorted + groups[i].first, &groups[i], job_s,
			     nranks, every, &res->rows[res->nrows++]) < 0)
			goto out_nomem;
	if (ngroups > top) {
		struct rj_row *row = &res->rows[res->nrows++];

		row->folded = ngroups - top;
		row->node.util = row->node.power = (struct rj_fig){ NAN, NAN };
		row->node.vram = row->node.cpu = row->node.mem = row->node.util;
		row->node.energy_j = row->node.coverage = NAN;
		row->node.host_coverage = NAN;
		for (int f = 0; f < RJ_NFIGS; f++)
			row->spread[f] = (struct rj_spread){ NAN, NAN, NAN };
		for (size_t i = top; i < ngroups; i++) {
			row->calls += groups[i].calls;
			row->total_s += groups[i].total_s;
		}
		row->ranks = folded_ranks(sorted, groups + top, ngroups - top);
		row->mean_s =
			row->calls ? row->total_s / (double)row->calls : NAN;
		row->share = row->total_s / (job_s * (double)nranks);
	}
	free(groups);
	free(sorted);
	j->have_res = true;
	rj_forget_open(j);
	return res;

out_nomem:
	free(groups);
	free(sorted);
	rj_result_free(j);
	rj_forget_open(j);
	errno = ENOMEM;
	return NULL;
}

const uint64_t *rj_counts(const struct rj *j)
{
	return j->counts;
}

void rj_bounds(const struct rj *j, int64_t *first_ns, int64_t *last_ns)
{
	*first_ns = j->first;
	*last_ns = j->last;
}

size_t rj_points(const struct rj *j, enum rj_metric m, int device,
		 const struct rj_point **out)
{
	const struct rj_series *s;

	if ((unsigned)m >= RJ_NMETRICS || device < RJ_HOST ||
	    device >= RJ_MAX_DEVICES) {
		*out = NULL;
		return 0;
	}
	s = &j->series[m][device + 1];
	*out = s->s;
	return s->n;
}

void rj_each_window(const struct rj *j,
		    void (*fn)(void *ctx, int32_t rank, const char *name,
			       int64_t begin_ns, int64_t end_ns),
		    void *ctx)
{
	for (size_t i = 0; i < j->nregions; i++) {
		const struct rj_region *r = j->all[i];

		for (size_t k = 0; k < r->nw; k++)
			fn(ctx, r->rank, r->name, r->w[k].b, r->w[k].e);
	}
}

size_t rj_memory(const struct rj *j)
{
	size_t n = sizeof(*j) + j->capregions * sizeof(*j->all);

	for (int m = 0; m < RJ_NMETRICS; m++)
		for (int d = 0; d <= RJ_MAX_DEVICES; d++)
			n += j->series[m][d].cap * sizeof(struct rj_point);
	for (size_t i = 0; i < j->nregions; i++)
		n += sizeof(struct rj_region) + strlen(j->all[i]->name) + 1 +
		     j->all[i]->capw * sizeof(struct rj_win) * 2;
	return n;
}
