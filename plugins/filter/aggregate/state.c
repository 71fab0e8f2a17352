/* SPDX-License-Identifier: MIT */
/*
 * plugins/filter/aggregate/state.c - series, their interval figures, and
 * the interval records made of them (see state.h)
 *
 * Series live in one hash table of the core (tally/hash.h), keyed by
 * name, kind and interned label set (a pointer: equal sets are one set),
 * and on a list in the order they were first seen, which is the order
 * they are emitted in. Open flat calls (the first begin of a fragmented
 * span, whose LAST end needs it) live in a bounded table (tally/lru.h).
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/hash.h>
#include <tally/list.h>
#include <tally/lru.h>
#include <tally/quantile.h>

#include "state.h"

enum agg_kind {
	K_COUNTER,
	K_GAUGE,
	K_SET,
	K_SUMMARY,
	K_HISTOGRAM,
};

static const enum tally_metric_type kind_type[] = {
	[K_COUNTER] = TALLY_COUNTER,	 [K_GAUGE] = TALLY_GAUGE,
	[K_SET] = TALLY_GAUGE,		 [K_SUMMARY] = TALLY_SUMMARY,
	[K_HISTOGRAM] = TALLY_HISTOGRAM,
};

struct agg_member {
	struct tally_hnode h;
	char s[];
};

struct agg_series {
	struct tally_hnode h;
	struct tally_list order; /* first seen first, from the list's end */
	char *name;
	struct tally_labels *labels;
	enum agg_kind kind;
	bool fresh;	   /* not emitted yet: due for its zero */
	bool touched;	   /* a sample since the figures were last emitted */
	bool span;	   /* made of spans: PREFIX + what, dimension labels */
	uint64_t seq;	   /* gauge: the state's sample count at its last */
	int64_t start_ns;  /* what the figures cover starts here */
	int64_t idle_ns;   /* time without a sample */
	double value;	   /* counter: sum; gauge: level */
	double count, sum, min, max;
	double *v;	   /* values for quantiles (reservoir) */
	uint32_t nv, capv;
	uint64_t seen;	   /* values offered to the reservoir */
	double *bk;	   /* histogram: weight per bucket, +Inf last */
	struct tally_htable members; /* set: this interval's members */
};

/* An open flat call: the first fragment's begin, for its LAST end. */
struct agg_open {
	struct tally_lru_node node;
	uint64_t span_id;
	uint32_t pid, tid;
	int64_t begin_ns;
	const char *host; /* in key[] */
	char trace[];	  /* then host */
};

struct agg_state {
	struct agg_opts o;
	double *quantiles, *buckets;
	char *prefix;
	struct tally_htable table;
	struct tally_list order;
	struct tally_lru open;
	int64_t start_ns; /* the current interval's */
	uint64_t rng;	  /* reservoir sampling */
	struct agg_counters c;
	uint64_t emitted; /* samples + span ends up to the last tick */
	/* scratch for one emission */
	struct tally_quantile *qs;
	struct tally_bucket *cb;
	double *tmp;
	size_t ntmp;
};

struct agg_state *agg_state_new(const struct agg_opts *opts, int64_t now_ns)
{
	struct agg_state *st;
	size_t nq = opts->nquantiles, nb = opts->nbuckets;

	if (!opts->max_series || !opts->max_samples || opts->expire_ns <= 0 ||
	    !opts->prefix) {
		errno = EINVAL;
		return NULL;
	}
	for (size_t i = 0; i < nq; i++) {
		if (!(opts->quantiles[i] >= 0 && opts->quantiles[i] <= 1) ||
		    (i && opts->quantiles[i] <= opts->quantiles[i - 1])) {
			errno = EINVAL;
			return NULL;
		}
	}
	for (size_t i = 0; i < nb; i++) {
		if (!isfinite(opts->buckets[i]) ||
		    (i && opts->buckets[i] <= opts->buckets[i - 1])) {
			errno = EINVAL;
			return NULL;
		}
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		goto out_nomem;
	st->o = *opts;
	st->quantiles = malloc((nq + 1) * sizeof(double));
	st->buckets = malloc((nb + 1) * sizeof(double));
	st->qs = malloc((nq + 1) * sizeof(*st->qs));
	st->cb = malloc((nb + 1) * sizeof(*st->cb));
	if (!st->quantiles || !st->buckets || !st->qs || !st->cb)
		goto out_free;
	if (nq)
		memcpy(st->quantiles, opts->quantiles, nq * sizeof(double));
	if (nb)
		memcpy(st->buckets, opts->buckets, nb * sizeof(double));
	st->prefix = strdup(opts->prefix);
	if (!st->prefix)
		goto out_free;
	st->o.quantiles = st->quantiles;
	st->o.buckets = st->buckets;
	st->o.prefix = st->prefix;
	tally_list_init(&st->order);
	tally_lru_init(&st->open, opts->max_series);
	st->start_ns = now_ns;
	st->rng = 0x9e3779b97f4a7c15ULL ^ (uint64_t)now_ns;
	return st;
out_free:
	free(st->prefix);
	free(st->quantiles);
	free(st->buckets);
	free(st->qs);
	free(st->cb);
	free(st);
out_nomem:
	errno = ENOMEM;
	return NULL;
}

static void members_clear(struct agg_series *s)
{
	struct tally_hnode *p, *n;
	size_t i;

	tally_htable_for_each_safe(&s->members, i, p, n)
	{
		tally_htable_remove(&s->members, p);
		free(tally_container_of(p, struct agg_member, h));
	}
}

static void series_free(struct agg_series *s)
{
	members_clear(s);
	tally_htable_fini(&s->members);
	tally_labels_unref(s->labels);
	free(s->name);
	free(s->v);
	free(s->bk);
	free(s);
}

void agg_state_free(struct agg_state *st)
{
	struct tally_list *p;
	struct tally_lru_node *n;

	if (!st)
		return;
	while ((p = tally_list_first(&st->order))) {
		struct agg_series *s =
			tally_container_of(p, struct agg_series, order);

		tally_list_del(p);
		series_free(s);
	}
	tally_htable_fini(&st->table);
	while ((n = tally_lru_oldest(&st->open))) {
		tally_lru_remove(&st->open, n);
		free(tally_container_of(n, struct agg_open, node));
	}
	tally_lru_fini(&st->open);
	free(st->prefix);
	free(st->quantiles);
	free(st->buckets);
	free(st->qs);
	free(st->cb);
	free(st->tmp);
	free(st);
}

const struct agg_counters *agg_state_counters(const struct agg_state *st)
{
	return &st->c;
}

/* Figures of a new interval: nothing seen yet. */
static void series_reset(const struct agg_state *st, struct agg_series *s,
			 int64_t start_ns)
{
	s->start_ns = start_ns;
	s->touched = false;
	s->count = 0;
	s->sum = 0;
	s->min = NAN;
	s->max = NAN;
	s->nv = 0;
	s->seen = 0;
	if (s->kind == K_COUNTER)
		s->value = 0;
	if (s->bk)
		memset(s->bk, 0, (st->o.nbuckets + 1) * sizeof(*s->bk));
	if (s->kind == K_SET) {
		members_clear(s);
		s->value = 0;
	}
}

static uint64_t series_hash(const char *name, enum agg_kind kind,
			    const struct tally_labels *ls)
{
	/* once per sample: the word-at-a-time hash (tally_hash_mem()) */
	uint64_t h = tally_hash_mem(TALLY_HASH_SEED, name, strlen(name));

	return tally_hash_mix(h ^ (tally_labels_hash(ls) * 31 + kind));
}

/*
 * The series of (@name, @kind, @ls), made when new (@ls referenced).
 * Return: the series, or NULL (table full or no memory: counted).
 */
static struct agg_series *series_get(struct agg_state *st, const char *name,
				     enum agg_kind kind,
				     struct tally_labels *ls, bool span)
{
	uint64_t h = series_hash(name, kind, ls);
	struct tally_hnode *p;
	struct agg_series *s;

	tally_htable_for_each_hash(&st->table, h, p)
	{
		s = tally_container_of(p, struct agg_series, h);
		if (s->kind == kind && s->labels == ls && !strcmp(s->name, name))
			return s;
	}
	if (st->table.n >= st->o.max_series) {
		st->c.series_dropped++;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s || tally_htable_reserve(&st->table) < 0)
		goto out_nomem;
	s->name = strdup(name);
	if (!s->name)
		goto out_nomem;
	if (kind == K_HISTOGRAM) {
		s->bk = calloc(st->o.nbuckets + 1, sizeof(*s->bk));
		if (!s->bk)
			goto out_nomem;
	}
	s->kind = kind;
	s->span = span;
	s->labels = tally_labels_ref(ls);
	s->fresh = true;
	series_reset(st, s, st->start_ns);
	s->h.hash = h;
	tally_htable_insert(&st->table, &s->h);
	tally_list_add_first(&st->order, &s->order);
	st->c.series++;
	return s;
out_nomem:
	if (s)
		free(s->name);
	free(s);
	st->c.nomem++;
	return NULL;
}

/* xorshift64*: reservoir positions need no more than that. */
static uint64_t agg_rand(struct agg_state *st)
{
	st->rng ^= st->rng >> 12;
	st->rng ^= st->rng << 25;
	st->rng ^= st->rng >> 27;
	return st->rng * 0x2545f4914f6cdd1dULL;
}

/* One observation @x standing for @w events. */
static void series_observe(struct agg_state *st, struct agg_series *s,
			   double x, double w)
{
	s->touched = true;
	s->count += w;
	s->sum += x * w;
	if (!(x >= s->min))
		s->min = x;
	if (!(x <= s->max))
		s->max = x;
	if (s->bk) {
		size_t i = 0;

		while (i < st->o.nbuckets && x > st->o.buckets[i])
			i++;
		s->bk[i] += w;
	}
	s->seen++;
	if (s->nv < st->o.max_samples) {
		if (s->nv == s->capv) {
			uint32_t cap = s->capv ? s->capv * 2 : 16;
			double *v;

			if (cap > st->o.max_samples)
				cap = st->o.max_samples;
			v = realloc(s->v, cap * sizeof(*v));
			if (!v) {
				st->c.sampled++;
				return;
			}
			s->v = v;
			s->capv = cap;
		}
		s->v[s->nv++] = x;
		return;
	}
	/* Algorithm R: the kept values stay a uniform sample of those seen */
	st->c.sampled++;
	{
		uint64_t j = agg_rand(st) % s->seen;

		if (j < s->nv)
			s->v[j] = x;
	}
}

static void series_add_member(struct agg_state *st, struct agg_series *s,
			      const char *member)
{
	uint64_t h = tally_hash_str(TALLY_HASH_SEED, member);
	size_t len = strlen(member) + 1;
	struct tally_hnode *p;
	struct agg_member *m;

	s->touched = true;
	s->count += 1;
	tally_htable_for_each_hash(&s->members, h, p)
	{
		m = tally_container_of(p, struct agg_member, h);
		if (!strcmp(m->s, member))
			return;
	}
	if (s->members.n >= st->o.max_samples) {
		st->c.set_overflow++;
		return;
	}
	m = malloc(sizeof(*m) + len);
	if (!m || tally_htable_reserve(&s->members) < 0) {
		free(m);
		st->c.nomem++;
		return;
	}
	memcpy(m->s, member, len);
	m->h.hash = h;
	tally_htable_insert(&s->members, &m->h);
	s->value = (double)s->members.n;
}

static bool key_listed(char *const *keys, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(keys[i], key))
			return true;
	}
	return false;
}

/* The label key of each AGG_DIM_* bit, in bit order. */
static const char *const dim_keys[] = { "trace", "rank", "host", "depth" };

/* Whether @key is the label of one of the dimensions in @dims. */
static bool dim_key(unsigned dims, const char *key)
{
	for (unsigned k = 0; k < sizeof(dim_keys) / sizeof(dim_keys[0]); k++) {
		if ((dims & (1u << k)) && !strcmp(dim_keys[k], key))
			return true;
	}
	return false;
}

/*
 * The label set a series is keyed by under options @o: @ls less the
 * dropped keys (and, for metrics with group_by, less every key not
 * grouped by), less the labels of the dimensions @strip. Return: a new
 * reference, or NULL/ENOMEM.
 */
static struct tally_labels *key_labels_of(const struct agg_opts *o,
					  struct tally_labels *ls, bool group,
					  unsigned strip)
{
	size_t n = tally_labels_count(ls), k = 0;
	const struct tally_label *all = tally_labels_pairs(ls);
	struct tally_label *keep;
	struct tally_labels *r;

	group = group && o->ngroup_by;
	if (!n || (!group && !o->ndrop && !strip))
		return tally_labels_ref(ls);
	keep = malloc(n * sizeof(*keep));
	if (!keep)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (key_listed(o->drop_labels, o->ndrop, all[i].key) ||
		    (group &&
		     !key_listed(o->group_by, o->ngroup_by, all[i].key)) ||
		    dim_key(strip, all[i].key))
			continue;
		keep[k++] = all[i];
	}
	r = k == n ? tally_labels_ref(ls) : tally_labels_new(keep, k);
	free(keep);
	return r;
}

static struct tally_labels *key_labels(const struct agg_state *st,
				       struct tally_labels *ls, bool group)
{
	return key_labels_of(&st->o, ls, group, 0);
}

static bool agg_metric(struct agg_state *st, const struct tally_metric *m)
{
	enum agg_kind kind;
	struct tally_labels *ls;
	struct agg_series *s;
	double w = tally_metric_weight(m);
	bool own;

	switch (m->form) {
	case TALLY_FORM_DELTA:
		kind = m->type == TALLY_COUNTER ? K_COUNTER : K_GAUGE;
		break;
	case TALLY_FORM_OBSERVATION:
		kind = m->type == TALLY_HISTOGRAM ? K_HISTOGRAM : K_SUMMARY;
		break;
	case TALLY_FORM_SET_MEMBER:
		kind = K_SET;
		break;
	case TALLY_FORM_CUMULATIVE:
		/* a gauge's level, which later deltas adjust (statsd "g") */
		if (m->type != TALLY_GAUGE)
			return false;
		kind = K_GAUGE;
		break;
	default:
		return false;
	}
	st->c.samples++;
	/* without group_by nor drop_labels, the record's set is the key */
	own = st->o.ngroup_by || st->o.ndrop;
	ls = own ? key_labels(st, m->labels, true) : m->labels;
	if (!ls) {
		st->c.nomem++;
		return true;
	}
	s = series_get(st, m->name, kind, ls, false);
	if (own)
		tally_labels_unref(ls);
	if (!s)
		return true;
	s->idle_ns = 0;
	switch (kind) {
	case K_COUNTER:
		s->touched = true;
		s->value += m->value * w;
		s->count += w;
		break;
	case K_GAUGE:
		s->touched = true;
		s->seq = st->c.samples;
		s->count += 1;
		if (m->form == TALLY_FORM_DELTA)
			s->value += m->value;
		else
			s->value = m->value;
		break;
	case K_SET:
		series_add_member(st, s, m->member ? m->member : "");
		break;
	default:
		series_observe(st, s, m->value, w);
	}
	return true;
}

/* A span series' labels: region, the dimensions, then its attrs. */
static struct tally_labels *span_labels(const struct agg_state *st,
					const struct tally_span *sp)
{
	struct tally_label mine[5], stack[16], *out = stack;
	const struct tally_label *attrs = tally_labels_pairs(sp->attrs);
	size_t na = tally_labels_count(sp->attrs), n = 0, k;
	unsigned d = st->o.dimensions;
	char rank[16], depth[16];
	struct tally_labels *ls, *r;

	/* key order: depth, host, rank, region, trace */
	if (d & AGG_DIM_DEPTH) {
		snprintf(depth, sizeof(depth), "%u", (unsigned)sp->depth);
		mine[n++] = (struct tally_label){ "depth", depth };
	}
	if (d & AGG_DIM_HOST)
		mine[n++] = (struct tally_label){ "host", sp->src.host };
	if (d & AGG_DIM_RANK) {
		snprintf(rank, sizeof(rank), "%d", (int)sp->src.rank);
		mine[n++] = (struct tally_label){ "rank", rank };
	}
	mine[n++] = (struct tally_label){ "region", sp->name };
	if (d & AGG_DIM_TRACE)
		mine[n++] = (struct tally_label){ "trace", sp->trace };
	if (n + na > sizeof(stack) / sizeof(stack[0])) {
		out = malloc((n + na) * sizeof(*out));
		if (!out)
			return NULL;
	}
	k = tally_label_merge(mine, n, attrs, na, out);
	ls = tally_labels_new(out, k);
	if (out != stack)
		free(out);
	if (!ls)
		return NULL;
	r = key_labels(st, ls, false);
	tally_labels_unref(ls);
	return r;
}

/* Add @v to the counter PREFIX@what of a span's series. */
static void span_count(struct agg_state *st, struct tally_labels *ls,
		       const char *what, double v)
{
	char name[256];
	struct agg_series *s;

	if ((size_t)snprintf(name, sizeof(name), "%s%s", st->o.prefix, what) >=
	    sizeof(name)) {
		st->c.nomem++;
		return;
	}
	s = series_get(st, name, K_COUNTER, ls, true);
	if (!s)
		return;
	s->idle_ns = 0;
	s->touched = true;
	s->value += v;
	s->count += 1;
}

static uint64_t open_hash(const struct tally_span *sp)
{
	uint64_t h = tally_hash_str(TALLY_HASH_SEED, sp->trace);

	h = tally_hash_str(h, sp->src.host);
	h = tally_hash_bytes(h, &sp->src.pid, sizeof(sp->src.pid));
	h = tally_hash_bytes(h, &sp->src.tid, sizeof(sp->src.tid));
	return tally_hash_bytes(h, &sp->span_id, sizeof(sp->span_id));
}

static bool open_eq(const struct tally_lru_node *n, const void *key)
{
	const struct agg_open *o = tally_container_of(n, struct agg_open, node);
	const struct tally_span *sp = key;

	return o->span_id == sp->span_id && o->pid == sp->src.pid &&
	       o->tid == sp->src.tid && !strcmp(o->trace, sp->trace) &&
	       !strcmp(o->host, sp->src.host);
}

/* A flat call's first fragment begins: remember when. */
static void open_put(struct agg_state *st, const struct tally_span *sp,
		     int64_t ts_ns)
{
	size_t lt = strlen(sp->trace) + 1, lh = strlen(sp->src.host) + 1;
	uint64_t h = open_hash(sp);
	struct tally_lru_node *n = tally_lru_find(&st->open, h, open_eq, sp);
	struct agg_open *o;

	if (n) {
		tally_container_of(n, struct agg_open, node)->begin_ns = ts_ns;
		return;
	}
	o = malloc(sizeof(*o) + lt + lh);
	if (!o || tally_lru_reserve(&st->open) < 0) {
		free(o);
		st->c.nomem++;
		return;
	}
	if (tally_lru_full(&st->open)) {
		n = tally_lru_oldest(&st->open);
		tally_lru_remove(&st->open, n);
		free(tally_container_of(n, struct agg_open, node));
		st->c.open_evicted++;
	}
	o->span_id = sp->span_id;
	o->pid = sp->src.pid;
	o->tid = sp->src.tid;
	o->begin_ns = ts_ns;
	memcpy(o->trace, sp->trace, lt);
	o->host = o->trace + lt;
	memcpy(o->trace + lt, sp->src.host, lh);
	tally_lru_insert(&st->open, &o->node, h);
}

/* The begin of a flat call ending now, forgotten; 0 when unknown. */
static int64_t open_take(struct agg_state *st, const struct tally_span *sp)
{
	struct tally_lru_node *n =
		tally_lru_find(&st->open, open_hash(sp), open_eq, sp);
	struct agg_open *o;
	int64_t begin;

	if (!n)
		return 0;
	o = tally_container_of(n, struct agg_open, node);
	begin = o->begin_ns;
	tally_lru_remove(&st->open, n);
	free(o);
	return begin;
}

static void agg_span(struct agg_state *st, const struct tally_span *sp,
		     int64_t ts_ns)
{
	bool frag = sp->flags & TALLY_SPAN_FRAGMENT;
	struct tally_labels *ls;
	struct agg_series *s;
	int64_t begin;
	char name[256];

	if (sp->phase == TALLY_SPAN_BEGIN) {
		if (frag && !(sp->flags & TALLY_SPAN_RESUMED))
			open_put(st, sp, ts_ns);
		return;
	}
	if (sp->phase != TALLY_SPAN_END ||
	    (frag && !(sp->flags & TALLY_SPAN_LAST)))
		return;
	st->c.span_ends++;
	ls = span_labels(st, sp);
	if (!ls) {
		st->c.nomem++;
		return;
	}
	span_count(st, ls, "calls_total", 1);
	begin = frag ? open_take(st, sp) : sp->begin_ns;
	snprintf(name, sizeof(name), "%sduration_seconds", st->o.prefix);
	if (begin > 0 && ts_ns >= begin) {
		s = series_get(st, name, K_HISTOGRAM, ls, true);
		if (s) {
			s->idle_ns = 0;
			series_observe(st, s, (double)(ts_ns - begin) / 1e9,
				       1);
		}
	} else {
		st->c.no_begin++;
	}
	for (uint32_t i = 0; i < sp->nvalues; i++) {
		const struct tally_attr *v = &sp->values[i];
		char what[200];

		if (v->type != TALLY_ATTR_T_INT && v->type != TALLY_ATTR_T_DOUBLE)
			continue;
		if ((size_t)snprintf(what, sizeof(what), "%s_total", v->key) >=
		    sizeof(what)) {
			st->c.nomem++;
			continue;
		}
		span_count(st, ls, what,
			   v->type == TALLY_ATTR_T_INT ? (double)v->i : v->d);
	}
	tally_labels_unref(ls);
}

bool agg_state_record(struct agg_state *st, const struct tally_record *rec)
{
	if (rec->kind == TALLY_REC_METRIC)
		return agg_metric(st, &rec->metric);
	if (rec->kind == TALLY_REC_SPAN) {
		agg_span(st, &rec->span, rec->ts_ns);
		return true;
	}
	return false;
}

/* Quantiles of @s's values into st->qs; the median. */
static double series_quantiles(struct agg_state *st, struct agg_series *s)
{
	double half = 0.5;
	struct tally_quantile med;

	if (s->nv > st->ntmp) {
		double *t = realloc(st->tmp, s->nv * sizeof(*t));

		if (!t) {
			st->c.nomem++;
			return NAN;
		}
		st->tmp = t;
		st->ntmp = s->nv;
	}
	if (s->nv)
		memcpy(st->tmp, s->v, s->nv * sizeof(*st->tmp));
	tally_quantiles(st->tmp, s->nv, st->o.quantiles, st->o.nquantiles,
			st->qs);
	tally_quantiles(st->tmp, s->nv, &half, 1, &med);
	return med.value;
}

/* Append @s's record (a zero when @zero) for [@start_ns, @end_ns). */
static int series_emit(struct agg_state *st, struct agg_series *s,
		       struct tally_batch *out, int64_t start_ns,
		       int64_t end_ns, bool zero)
{
	struct tally_interval iv = {
		.start_ns = start_ns,
		.min = NAN,
		.max = NAN,
		.median = NAN,
	};
	double value = 0;
	double acc = 0;

	if (zero) {
		iv.flags |= TALLY_INTERVAL_SEEDED;
	} else {
		iv.count = s->count;
		iv.sum = s->sum;
		iv.min = s->min;
		iv.max = s->max;
		if (s->kind != K_SUMMARY && s->kind != K_HISTOGRAM)
			value = s->value;
	}
	if (s->kind == K_SET)
		iv.flags |= TALLY_INTERVAL_SET;
	/*
	 * Percentiles of no value are none: a zero record, or an interval
	 * without values, has no quantiles (and a NaN median, "none"), so
	 * that no output shows a NaN percentile for it.
	 */
	if ((s->kind == K_SUMMARY || s->kind == K_HISTOGRAM) && !zero &&
	    s->nv) {
		iv.median = series_quantiles(st, s);
		/* NaN: no memory to sort them (counted) */
		if (!isnan(iv.median)) {
			iv.nquantiles = (uint32_t)st->o.nquantiles;
			iv.quantiles = st->qs;
		}
	}
	if (s->kind == K_HISTOGRAM) {
		for (size_t i = 0; i <= st->o.nbuckets; i++) {
			acc += zero ? 0 : s->bk[i];
			st->cb[i].le = i < st->o.nbuckets ? st->o.buckets[i]
							  : INFINITY;
			st->cb[i].count = (uint64_t)llround(acc);
		}
		iv.nbuckets = (uint32_t)st->o.nbuckets + 1;
		iv.buckets = st->cb;
	}
	if (!tally_batch_add_interval(out, kind_type[s->kind], s->name, NULL,
				      s->labels, value, &iv, end_ns)) {
		st->c.nomem++;
		return -1;
	}
	return 0;
}

size_t agg_state_tick(struct agg_state *st, struct tally_batch *out,
		      int64_t end_ns, bool final)
{
	int64_t len = end_ns - st->start_ns;
	struct tally_list *p, *prev;
	size_t n = 0;

	if (len <= 0)
		return 0;
	for (p = tally_list_last(&st->order); p; p = prev) {
		struct agg_series *s =
			tally_container_of(p, struct agg_series, order);
		bool seed = st->o.zero_seed && s->fresh && s->kind != K_GAUGE &&
			    s->kind != K_SET;

		prev = tally_list_prev(&st->order, p);
		if (!s->touched) {
			s->idle_ns += len;
			if (s->idle_ns >= st->o.expire_ns) {
				tally_htable_remove(&st->table, &s->h);
				tally_list_del(p);
				series_free(s);
				st->c.series_expired++;
				st->c.series--;
				continue;
			}
		}
		if (seed) {
			/* its zero now, its figures with the next interval's */
			n += series_emit(st, s, out, st->start_ns, end_ns,
					 true) == 0;
			s->fresh = false;
			if (!final)
				continue;
		}
		s->fresh = false;
		n += series_emit(st, s, out, s->start_ns, end_ns, false) == 0;
		series_reset(st, s, end_ns);
	}
	st->start_ns = end_ns;
	st->emitted = st->c.samples + st->c.span_ends;
	return n;
}

uint64_t agg_state_pending(const struct agg_state *st)
{
	return st->c.samples + st->c.span_ends - st->emitted;
}

/* One series' place under new options (agg_state_retune()). */
struct agg_rekey {
	struct tally_hnode h; /* in the table of new keys */
	struct agg_series *s;
	char *name;		 /* its new name, or NULL: unchanged */
	struct tally_labels *ls; /* its new key labels (a reference) */
	double *bk; /* histogram: its buckets under the new bounds */
	double *v;  /* merge target: room for the merged values */
	uint32_t capv;
	uint64_t nv;		/* merge target: values offered to it */
	struct agg_rekey *into; /* the earlier series it merges into */
	bool fresh;		/* due for a zero under its new key */
};

/*
 * @s's histogram weights under the bounds @nb (@nnb of them, +Inf after)
 * into @out (zeroed): counted again from its values when it kept them all
 * and none was sampled (exact), else each old bucket's weight goes to the
 * first new bucket whose bound holds the old one's (le stays an upper
 * bound of every value it counts).
 */
static void rebucket(const struct agg_state *st, const struct agg_series *s,
		     const double *nb, size_t nnb, double *out)
{
	if (s->nv == s->seen && s->count == (double)s->seen) {
		for (uint32_t k = 0; k < s->nv; k++) {
			size_t j = 0;

			while (j < nnb && s->v[k] > nb[j])
				j++;
			out[j] += 1;
		}
		return;
	}
	for (size_t i = 0; i <= st->o.nbuckets; i++) {
		double le = i < st->o.nbuckets ? st->o.buckets[i] : INFINITY;
		size_t j = 0;

		while (j < nnb && le > nb[j])
			j++;
		out[j] += s->bk[i];
	}
}

/* Keep a uniform sample of @max of @s's values (max_samples shrank). */
static void reservoir_shrink(struct agg_state *st, struct agg_series *s,
			     uint32_t max)
{
	for (uint32_t i = 0; i < max; i++) {
		uint32_t j = i + (uint32_t)(agg_rand(st) % (s->nv - i));
		double x = s->v[i];

		s->v[i] = s->v[j];
		s->v[j] = x;
	}
	st->c.sampled += s->nv - max;
	s->nv = max;
}

/* Move set @from's members into set @to (duplicates once). */
static void members_move(struct agg_state *st, struct agg_series *to,
			 struct agg_series *from)
{
	struct tally_hnode *p, *n, *q;
	size_t i;

	tally_htable_for_each_safe(&from->members, i, p, n)
	{
		struct agg_member *m =
			tally_container_of(p, struct agg_member, h);
		bool dup = false;

		tally_htable_remove(&from->members, p);
		tally_htable_for_each_hash(&to->members, p->hash, q)
		{
			const struct agg_member *o =
				tally_container_of(q, struct agg_member, h);

			if (!strcmp(o->s, m->s)) {
				dup = true;
				break;
			}
		}
		if (!dup && to->members.n >= st->o.max_samples) {
			st->c.set_overflow++;
			dup = true;
		}
		/* the table has its buckets (agg_state_retune()): no failure */
		if (dup || tally_htable_reserve(&to->members) < 0) {
			free(m);
			continue;
		}
		tally_htable_insert(&to->members, &m->h);
	}
	to->value = (double)to->members.n;
}

/* Add series @from's figures to @to's (one key under the new options). */
static void series_merge(struct agg_state *st, struct agg_series *to,
			 struct agg_series *from)
{
	to->touched |= from->touched;
	if (from->start_ns < to->start_ns)
		to->start_ns = from->start_ns;
	if (from->idle_ns < to->idle_ns)
		to->idle_ns = from->idle_ns;
	to->count += from->count;
	switch (to->kind) {
	case K_COUNTER:
		to->value += from->value;
		return;
	case K_GAUGE:
		/* the level of the one that had the latest sample */
		if (from->seq > to->seq) {
			to->value = from->value;
			to->seq = from->seq;
		}
		return;
	case K_SET:
		members_move(st, to, from);
		return;
	default:
		break;
	}
	to->sum += from->sum;
	if (!(from->min >= to->min))
		to->min = from->min;
	if (!(from->max <= to->max))
		to->max = from->max;
	for (size_t i = 0; to->bk && i <= st->o.nbuckets; i++)
		to->bk[i] += from->bk[i];
	to->seen += from->seen;
	for (uint32_t k = 0; k < from->nv; k++) {
		if (to->nv < to->capv && to->nv < st->o.max_samples)
			to->v[to->nv++] = from->v[k];
		else
			st->c.sampled++;
	}
}

static void rekeys_free(struct agg_rekey *rk, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(rk[i].name);
		tally_labels_unref(rk[i].ls);
		free(rk[i].bk);
		free(rk[i].v);
	}
	free(rk);
}

/*
 * Phase one of agg_state_retune(): every series' name, key labels and
 * buckets under @o, into @rk (in first-seen order), and the series they
 * then merge into, found in @keys. Nothing of @st changes (but for bucket
 * arrays reserved in sets that will take members). Return: 0, -1/ENOMEM.
 */
static int rekey_plan(struct agg_state *st, const struct agg_opts *o,
		      struct agg_rekey *rk, struct tally_htable *keys)
{
	unsigned strip = st->o.dimensions & ~o->dimensions;
	size_t plen = strlen(st->prefix), i = 0;
	bool renamed = strcmp(st->prefix, o->prefix) != 0;
	bool rebuck = o->nbuckets != st->o.nbuckets;
	struct tally_list *p;

	for (size_t k = 0; !rebuck && k < o->nbuckets; k++)
		rebuck = o->buckets[k] != st->o.buckets[k];
	for (p = tally_list_last(&st->order); p;
	     p = tally_list_prev(&st->order, p), i++) {
		struct agg_series *s =
			tally_container_of(p, struct agg_series, order);
		struct agg_rekey *r = &rk[i];
		struct tally_hnode *q;
		const char *name;

		r->s = s;
		r->ls = key_labels_of(o, s->labels, !s->span,
				      s->span ? strip : 0);
		if (!r->ls)
			return -1;
		if (s->span && renamed) {
			size_t len = strlen(o->prefix) + strlen(s->name) + 1;

			r->name = malloc(len);
			if (!r->name)
				return -1;
			snprintf(r->name, len, "%s%s", o->prefix,
				 s->name + plen);
		}
		if (s->kind == K_HISTOGRAM && rebuck) {
			r->bk = calloc(o->nbuckets + 1, sizeof(*r->bk));
			if (!r->bk)
				return -1;
			rebucket(st, s, o->buckets, o->nbuckets, r->bk);
		}
		name = r->name ? r->name : s->name;
		r->fresh = s->fresh || r->name || r->ls != s->labels;
		r->nv = s->nv;
		r->h.hash = series_hash(name, s->kind, r->ls);
		tally_htable_for_each_hash(keys, r->h.hash, q)
		{
			struct agg_rekey *t =
				tally_container_of(q, struct agg_rekey, h);

			if (t->s->kind == s->kind && t->ls == r->ls &&
			    !strcmp(t->name ? t->name : t->s->name, name)) {
				r->into = t;
				break;
			}
		}
		if (r->into) {
			/* one of them seen by the outputs: so is the series */
			r->into->fresh = r->into->fresh && r->fresh;
			r->into->nv += s->nv;
			if (s->kind == K_SET && s->members.n &&
			    tally_htable_reserve(&r->into->s->members) < 0)
				return -1;
			continue;
		}
		if (tally_htable_reserve(keys) < 0)
			return -1;
		tally_htable_insert(keys, &r->h);
	}
	/* room for the values of the series merged into one */
	for (i = 0; i < st->table.n; i++) {
		struct agg_rekey *r = &rk[i];
		uint64_t need = r->nv < o->max_samples ? r->nv : o->max_samples;

		if (r->into || need <= r->s->capv)
			continue;
		r->v = malloc(need * sizeof(*r->v));
		if (!r->v)
			return -1;
		r->capv = (uint32_t)need;
	}
	return 0;
}

int agg_state_retune(struct agg_state *st, const struct agg_opts *o)
{
	size_t n = st->table.n;
	struct agg_state *tmp = agg_state_new(o, st->start_ns);
	struct tally_htable keys = { 0 };
	struct agg_rekey *rk = NULL;

	if (!tmp)
		return -1; /* errno set */
	if (n) {
		rk = calloc(n, sizeof(*rk));
		if (!rk || rekey_plan(st, o, rk, &keys) < 0)
			goto out_nomem;
	}
	tally_htable_fini(&keys);
	/* from here on nothing fails: the series under their new keys */
	for (size_t i = 0; i < n; i++)
		tally_htable_remove(&st->table, &rk[i].s->h);
	for (size_t i = 0; i < n; i++) {
		struct agg_rekey *r = &rk[i];
		struct agg_series *s = r->s;

		if (r->name) {
			free(s->name);
			s->name = r->name;
			r->name = NULL;
		}
		tally_labels_unref(s->labels);
		s->labels = r->ls;
		r->ls = NULL;
		if (s->kind == K_HISTOGRAM && r->bk) {
			free(s->bk);
			s->bk = r->bk;
			r->bk = NULL;
		}
		if (r->v) {
			if (s->nv)
				memcpy(r->v, s->v, s->nv * sizeof(*r->v));
			free(s->v);
			s->v = r->v;
			s->capv = r->capv;
			r->v = NULL;
		}
		s->h.hash = r->h.hash;
		if (r->into) {
			series_merge(tmp, r->into->s, s);
			tally_list_del(&s->order);
			series_free(s);
			st->c.series--;
			continue;
		}
		s->fresh = r->fresh;
		/* the buckets stayed: reserve cannot fail */
		(void)tally_htable_reserve(&st->table);
		tally_htable_insert(&st->table, &s->h);
	}
	free(rk);
	/* the counts series_merge() made with tmp's options */
	st->c.sampled += tmp->c.sampled;
	st->c.set_overflow += tmp->c.set_overflow;
	for (struct tally_list *p = tally_list_last(&st->order); p;
	     p = tally_list_prev(&st->order, p)) {
		struct agg_series *s =
			tally_container_of(p, struct agg_series, order);

		if (s->nv > o->max_samples)
			reservoir_shrink(st, s, o->max_samples);
	}
	/* the new options, in arrays of the state's own (tmp's) */
	{
		double *q = st->quantiles, *b = st->buckets;
		char *pf = st->prefix;
		struct tally_quantile *qs = st->qs;
		struct tally_bucket *cb = st->cb;

		st->o = tmp->o;
		st->quantiles = tmp->quantiles;
		st->buckets = tmp->buckets;
		st->prefix = tmp->prefix;
		st->qs = tmp->qs;
		st->cb = tmp->cb;
		tmp->quantiles = q;
		tmp->buckets = b;
		tmp->prefix = pf;
		tmp->qs = qs;
		tmp->cb = cb;
	}
	agg_state_free(tmp);
	st->open.max = o->max_series;
	while (tally_lru_count(&st->open) > st->open.max) {
		struct tally_lru_node *old = tally_lru_oldest(&st->open);

		tally_lru_remove(&st->open, old);
		free(tally_container_of(old, struct agg_open, node));
		st->c.open_evicted++;
	}
	return 0;
out_nomem:
	if (rk)
		rekeys_free(rk, n);
	tally_htable_fini(&keys);
	agg_state_free(tmp);
	errno = ENOMEM;
	return -1;
}
