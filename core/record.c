/* SPDX-License-Identifier: MIT */
/*
 * core/record.c - batches: a record array plus an arena for what it points to
 *
 * One allocation per batch, not per record: strings and bucket arrays are
 * carved out of arena chunks that are freed (or recycled) with the batch.
 * Freed batches go to a small free list with their chunks (up to
 * ARENA_KEEP bytes) and record array kept, so an input that emits a
 * similar batch every tick allocates nothing in steady state, however
 * many names it copies.
 *
 * A batch may also borrow records from other batches (a filter passing on
 * most of its input): it then holds a reference on each batch it borrows
 * from, in keeps[], released when it is freed, so the borrowed strings and
 * arrays outlive every record that points at them.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tally/record.h>

#include "core-internal.h"

#define ARENA_CHUNK	4096
/*
 * What the free list may hold: enough for every periodic input of a node
 * to recycle its batch, bounded so that one burst of huge batches (a
 * 100k-series input) does not stay resident: at most FREELIST_MAX batches
 * of ARENA_KEEP arena bytes and RECS_KEEP records each, about 2.5 MiB.
 */
#define ARENA_KEEP	(64u << 10)	/* arena bytes a recycled batch keeps */
#define RECS_KEEP	1024		/* record slots a recycled batch keeps */
#define FREELIST_MAX	16

struct chunk {
	struct chunk *next;
	size_t size, used;
	_Alignas(16) unsigned char data[];
};

struct tally_batch {
	atomic_uint refs;
	struct tally_record *recs;
	size_t n, cap;
	struct chunk *chunks;	/* in allocation order */
	struct chunk *cur;	/* the chunk allocations come from */
	const char *source;
	double interval;
	const char **origin; /* tally_batch_set_origin(), or NULL */
	size_t norigin;	     /* entries of @origin; NULL beyond */
	struct tally_batch **keeps; /* batches records borrow from */
	size_t nkeeps, capkeeps;
	unsigned forms;	    /* TALLY_FORM_BIT()s of the records */
	bool forms_unknown; /* a record was filled in place: scan */
	struct tally_batch *free_next;
};

static pthread_mutex_t freelist_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tally_batch *freelist;
static size_t freelist_len;

const char *tally_span_flag_name(uint32_t bit)
{
	switch (bit) {
	case TALLY_SPAN_ABANDONED:
		return "abandoned";
	case TALLY_SPAN_ORPHAN_END:
		return "orphan_end";
	case TALLY_SPAN_EVICTED:
		return "evicted";
	case TALLY_SPAN_FRAGMENT:
		return "fragment";
	case TALLY_SPAN_RESUMED:
		return "resumed";
	case TALLY_SPAN_LAST:
		return "last";
	case TALLY_SPAN_LOST_END:
		return "lost_end";
	}
	return NULL;
}

int64_t tally_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t tally_monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct tally_batch *tally_batch_new(void)
{
	struct tally_batch *b = NULL;

	pthread_mutex_lock(&freelist_lock);
	if (freelist) {
		b = freelist;
		freelist = b->free_next;
		freelist_len--;
	}
	pthread_mutex_unlock(&freelist_lock);
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b) {
			errno = ENOMEM;
			return NULL;
		}
	}
	atomic_init(&b->refs, 1);
	b->source = "";
	b->interval = 0;
	b->forms = 0;
	b->forms_unknown = false;
	b->free_next = NULL;
	return b;
}

struct tally_batch *tally_batch_ref(struct tally_batch *b)
{
	if (b)
		atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
	return b;
}

static void batch_destroy(struct tally_batch *b)
{
	struct chunk *c, *next;

	for (c = b->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(b->recs);
	free(b->keeps);
	free(b->origin);
	free(b);
}

void tally_batch_unref(struct tally_batch *b)
{
	struct chunk *c, *next, **pp;
	size_t kept = 0;

	if (!b)
		return;
	if (atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1)
		return;
	for (size_t i = 0; i < b->n; i++) {
		struct tally_record *r = &b->recs[i];

		if (r->kind == TALLY_REC_METRIC)
			tally_labels_unref(r->metric.labels);
		else if (r->kind == TALLY_REC_SPAN)
			tally_labels_unref(r->span.attrs);
	}
	b->n = 0;
	free(b->origin);
	b->origin = NULL;
	b->norigin = 0;
	/* after the labels: a borrowed record's strings may be in a keep */
	for (size_t i = 0; i < b->nkeeps; i++)
		tally_batch_unref(b->keeps[i]);
	b->nkeeps = 0;
	/* keep the chunks a typical batch needs, free the rest */
	pp = &b->chunks;
	while ((c = *pp)) {
		if (kept + c->size > ARENA_KEEP) {
			*pp = NULL;
			for (; c; c = next) {
				next = c->next;
				free(c);
			}
			break;
		}
		kept += c->size;
		c->used = 0;
		pp = &c->next;
	}
	b->cur = b->chunks;
	pthread_mutex_lock(&freelist_lock);
	if (freelist_len < FREELIST_MAX && b->cap <= RECS_KEEP) {
		b->free_next = freelist;
		freelist = b;
		freelist_len++;
		b = NULL;
	}
	pthread_mutex_unlock(&freelist_lock);
	if (b)
		batch_destroy(b);
}

size_t tally_batch_count(const struct tally_batch *b)
{
	return b ? b->n : 0;
}

const struct tally_record *tally_batch_at(const struct tally_batch *b,
					  size_t i)
{
	if (!b || i >= b->n)
		return NULL;
	return &b->recs[i];
}

const struct tally_record *tally_batch_records(const struct tally_batch *b)
{
	return b && b->n ? b->recs : NULL;
}

const char *tally_batch_source(const struct tally_batch *b)
{
	return b && b->source ? b->source : "";
}

double tally_batch_interval(const struct tally_batch *b)
{
	return b ? b->interval : 0;
}

int tally_batch_set_origin(struct tally_batch *b, size_t i,
			   const char *origin)
{
	if (!b || i >= b->n) {
		errno = EINVAL;
		return -1;
	}
	if (i >= b->norigin) {
		const char **v = realloc(b->origin, b->cap * sizeof(*v));

		if (!v) {
			errno = ENOMEM;
			return -1;
		}
		memset(v + b->norigin, 0, (b->cap - b->norigin) * sizeof(*v));
		b->origin = v;
		b->norigin = b->cap;
	}
	b->origin[i] = origin;
	return 0;
}

const char *tally_batch_origin(const struct tally_batch *b, size_t i)
{
	return b && i < b->norigin ? b->origin[i] : NULL;
}

static unsigned record_forms(const struct tally_record *r)
{
	return r->kind == TALLY_REC_METRIC ? TALLY_FORM_BIT(r->metric.form) : 0;
}

unsigned tally_batch_forms(const struct tally_batch *b)
{
	unsigned forms;

	if (!b)
		return 0;
	if (!b->forms_unknown)
		return b->forms;
	forms = 0;
	for (size_t i = 0; i < b->n; i++)
		forms |= record_forms(&b->recs[i]);
	return forms;
}

void tally_batch_seal(struct tally_batch *b)
{
	if (b && b->forms_unknown) {
		b->forms = tally_batch_forms(b);
		b->forms_unknown = false;
	}
}

size_t tally_batch_arena_used(const struct tally_batch *b)
{
	size_t used = 0;

	for (const struct chunk *c = b->chunks; c; c = c->next)
		used += c->used;
	return used;
}

void tally_batch_set_source(struct tally_batch *b, const char *source,
			    double interval)
{
	size_t len;
	char *copy;

	if (b->source && *b->source)
		return;
	/*
	 * A copy in the batch's arena: a reload may free the instance while
	 * its batches still wait in an output's queue.
	 */
	len = strlen(source);
	copy = tally_batch_alloc(b, len + 1);
	if (copy)
		memcpy(copy, source, len + 1);
	b->source = copy ? copy : "";
	b->interval = interval;
}

void *tally_batch_alloc(struct tally_batch *b, size_t size)
{
	struct chunk *c = b->cur, **tail;
	size_t need = (size + 15) & ~(size_t)15;

	if (need < size) {
		errno = ENOMEM;
		return NULL;
	}
	/* later chunks of a recycled batch are empty: move on to them */
	while (c && c->size - c->used < need)
		c = c->next;
	if (!c) {
		size_t csize = need > ARENA_CHUNK ? need : ARENA_CHUNK;

		c = malloc(sizeof(*c) + csize);
		if (!c) {
			errno = ENOMEM;
			return NULL;
		}
		c->size = csize;
		c->used = 0;
		c->next = NULL;
		for (tail = &b->chunks; *tail; tail = &(*tail)->next)
			;
		*tail = c;
	}
	b->cur = c;
	c->used += need;
	return c->data + c->used - need;
}

const char *tally_batch_strdup(struct tally_batch *b, const char *s)
{
	size_t len = strlen(s) + 1;
	char *p = tally_batch_alloc(b, len);

	if (p)
		memcpy(p, s, len);
	return p;
}

/* The next record slot, uninitialized: the caller writes all of it. */
static struct tally_record *batch_slot_raw(struct tally_batch *b)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		struct tally_record *recs;

		recs = realloc(b->recs, cap * sizeof(*recs));
		if (!recs) {
			errno = ENOMEM;
			return NULL;
		}
		b->recs = recs;
		b->cap = cap;
	}
	return &b->recs[b->n++];
}

/* The next record slot, zeroed; NULL/ENOMEM. */
static struct tally_record *batch_slot(struct tally_batch *b)
{
	struct tally_record *r = batch_slot_raw(b);

	if (r)
		memset(r, 0, sizeof(*r));
	return r;
}

struct tally_record *tally_batch_append(struct tally_batch *b)
{
	struct tally_record *r = batch_slot(b);

	/* the caller fills it in: its form is known once the core seals */
	if (r)
		b->forms_unknown = true;
	return r;
}

/*
 * Append a copy of @rec, whose strings and arrays stay valid as long as @b
 * (in its arena or a batch it keeps), taking the label reference the
 * record then owns. NULL/ENOMEM.
 */
static struct tally_record *batch_put(struct tally_batch *b,
				      const struct tally_record *rec)
{
	struct tally_record *r = batch_slot_raw(b);

	if (!r)
		return NULL;
	*r = *rec;
	b->forms |= record_forms(r);
	if (r->kind == TALLY_REC_METRIC)
		tally_labels_ref(r->metric.labels);
	else if (r->kind == TALLY_REC_SPAN)
		tally_labels_ref(r->span.attrs);
	return r;
}

/* Keep @src alive as long as @b: 0, or -1/ENOMEM. */
static int batch_keep(struct tally_batch *b, struct tally_batch *src)
{
	/* appends come in runs from one batch: look at the last one only */
	if (b->nkeeps && b->keeps[b->nkeeps - 1] == src)
		return 0;
	for (size_t i = 0; i + 1 < b->nkeeps; i++) {
		if (b->keeps[i] == src)
			return 0;
	}
	if (b->nkeeps == b->capkeeps) {
		size_t cap = b->capkeeps ? b->capkeeps * 2 : 4;
		struct tally_batch **v = realloc(b->keeps, cap * sizeof(*v));

		if (!v) {
			errno = ENOMEM;
			return -1;
		}
		b->keeps = v;
		b->capkeeps = cap;
	}
	b->keeps[b->nkeeps++] = tally_batch_ref(src);
	return 0;
}

struct tally_record *tally_batch_append_from(struct tally_batch *b,
					     struct tally_batch *src, size_t i)
{
	struct tally_record *r;

	if (!b || !src || b == src || i >= src->n) {
		errno = EINVAL;
		return NULL;
	}
	if (batch_keep(b, src) < 0)
		return NULL;
	r = batch_put(b, &src->recs[i]);
	/* the origin lives in @src's arena (or is static), kept above */
	if (r && i < src->norigin && src->origin[i] &&
	    tally_batch_set_origin(b, b->n - 1, src->origin[i]) < 0) {
		/* not appended after all */
		b->n--;
		tally_labels_unref(r->kind == TALLY_REC_METRIC ? r->metric.labels
				   : r->kind == TALLY_REC_SPAN ? r->span.attrs
							       : NULL);
		return NULL;
	}
	return r;
}

struct tally_batch *tally_batch_select(struct tally_batch *src,
				       const bool *keep)
{
	struct tally_batch *b = tally_batch_new();
	size_t want = 0;

	if (!b)
		return NULL;
	for (size_t i = 0; i < src->n; i++)
		want += !keep || keep[i];
	if (want > b->cap) {
		struct tally_record *recs =
			realloc(b->recs, want * sizeof(*recs));

		if (!recs)
			goto out_unref;
		b->recs = recs;
		b->cap = want;
	}
	for (size_t i = 0; i < src->n; i++) {
		if ((!keep || keep[i]) && !tally_batch_append_from(b, src, i))
			goto out_unref;
	}
	return b;
out_unref:
	tally_batch_unref(b);
	errno = ENOMEM;
	return NULL;
}

bool *tally_keep_reserve(struct tally_keep *k, size_t n)
{
	size_t cap = k->cap ? k->cap : 256;
	bool *f;

	if (k->flags && n <= k->cap)
		return k->flags;
	while (cap < n) {
		if (cap > SIZE_MAX / 2 / sizeof(*f)) {
			errno = ENOMEM;
			return NULL;
		}
		cap *= 2;
	}
	f = realloc(k->flags, cap * sizeof(*f));
	if (!f)
		return NULL;
	k->flags = f;
	k->cap = cap;
	return f;
}

void tally_keep_free(struct tally_keep *k)
{
	free(k->flags);
	k->flags = NULL;
	k->cap = 0;
}

/* Append a metric record with name, help and labels set; NULL/errno. */
static struct tally_record *batch_add_common(struct tally_batch *b,
					     enum tally_metric_type type,
					     const char *name, const char *help,
					     struct tally_labels *labels,
					     int64_t ts_ns)
{
	const char *n, *h = NULL;
	struct tally_record *r;

	if (!name || !*name) {
		errno = EINVAL;
		return NULL;
	}
	n = tally_batch_strdup(b, name);
	if (n && help)
		h = tally_batch_strdup(b, help);
	if (!n || (help && !h))
		return NULL;
	r = batch_slot(b);
	if (!r)
		return NULL;
	r->kind = TALLY_REC_METRIC;
	r->ts_ns = ts_ns ? ts_ns : tally_now_ns();
	r->metric.name = n;
	r->metric.help = h;
	r->metric.type = type;
	r->metric.labels = tally_labels_ref(labels ? labels
						   : tally_labels_empty());
	return r;
}

int tally_batch_add_metric(struct tally_batch *b, enum tally_metric_type type,
			   const char *name, const char *help,
			   struct tally_labels *labels, double value,
			   int64_t ts_ns)
{
	struct tally_record *r;

	if (type != TALLY_COUNTER && type != TALLY_GAUGE && type != TALLY_INFO &&
	    type != TALLY_UNTYPED) {
		errno = EINVAL;
		return -1;
	}
	r = batch_add_common(b, type, name, help, labels, ts_ns);
	if (!r)
		return -1;
	r->metric.value = value;
	b->forms |= TALLY_FORM_BIT(TALLY_FORM_CUMULATIVE);
	return 0;
}

/* A delta or observation: finite value, rate in (0, 1]. */
static int batch_add_event(struct tally_batch *b, enum tally_metric_type type,
			   enum tally_sample_form form, const char *name,
			   const char *help, struct tally_labels *labels,
			   double value, double rate, int64_t ts_ns)
{
	struct tally_record *r;

	if (!isfinite(value) || !(rate > 0 && rate <= 1)) {
		errno = EINVAL;
		return -1;
	}
	r = batch_add_common(b, type, name, help, labels, ts_ns);
	if (!r)
		return -1;
	r->metric.form = form;
	r->metric.value = value;
	r->metric.sample_rate = rate;
	b->forms |= TALLY_FORM_BIT(form);
	return 0;
}

int tally_batch_add_delta(struct tally_batch *b, enum tally_metric_type type,
			  const char *name, const char *help,
			  struct tally_labels *labels, double delta,
			  double sample_rate, int64_t ts_ns)
{
	if (type != TALLY_COUNTER && type != TALLY_GAUGE) {
		errno = EINVAL;
		return -1;
	}
	return batch_add_event(b, type, TALLY_FORM_DELTA, name, help, labels,
			       delta, sample_rate, ts_ns);
}

int tally_batch_add_observation(struct tally_batch *b,
				enum tally_metric_type type, const char *name,
				const char *help, struct tally_labels *labels,
				double value, double sample_rate, int64_t ts_ns)
{
	if (type != TALLY_HISTOGRAM && type != TALLY_SUMMARY) {
		errno = EINVAL;
		return -1;
	}
	return batch_add_event(b, type, TALLY_FORM_OBSERVATION, name, help,
			       labels, value, sample_rate, ts_ns);
}

int tally_batch_add_set_member(struct tally_batch *b, const char *name,
			       const char *help, struct tally_labels *labels,
			       const char *member, int64_t ts_ns)
{
	struct tally_record *r;
	const char *m;

	if (!member) {
		errno = EINVAL;
		return -1;
	}
	m = tally_batch_strdup(b, member);
	if (!m)
		return -1;
	r = batch_add_common(b, TALLY_GAUGE, name, help, labels, ts_ns);
	if (!r)
		return -1;
	r->metric.form = TALLY_FORM_SET_MEMBER;
	r->metric.member = m;
	b->forms |= TALLY_FORM_BIT(TALLY_FORM_SET_MEMBER);
	return 0;
}

int tally_batch_add_histogram(struct tally_batch *b, const char *name,
			      const char *help, struct tally_labels *labels,
			      const struct tally_bucket *buckets, size_t n,
			      uint64_t count, double sum, int64_t ts_ns)
{
	bool add_inf = n == 0 || !isinf(buckets[n - 1].le);
	struct tally_bucket *copy;
	struct tally_record *r;

	for (size_t i = 0; i < n; i++) {
		if (isnan(buckets[i].le) ||
		    (i && (buckets[i].le <= buckets[i - 1].le ||
			   buckets[i].count < buckets[i - 1].count)) ||
		    buckets[i].count > count) {
			errno = EINVAL;
			return -1;
		}
	}
	copy = tally_batch_alloc(b, (n + add_inf) * sizeof(*copy));
	if (!copy)
		return -1;
	if (n)
		memcpy(copy, buckets, n * sizeof(*copy));
	if (add_inf)
		copy[n] = (struct tally_bucket){ .le = INFINITY, .count = count };
	r = batch_add_common(b, TALLY_HISTOGRAM, name, help, labels, ts_ns);
	if (!r)
		return -1;
	r->metric.count = count;
	r->metric.sum = sum;
	r->metric.n = n + add_inf;
	r->metric.buckets = copy;
	b->forms |= TALLY_FORM_BIT(TALLY_FORM_CUMULATIVE);
	return 0;
}

int tally_batch_add_summary(struct tally_batch *b, const char *name,
			    const char *help, struct tally_labels *labels,
			    const struct tally_quantile *quantiles, size_t n,
			    uint64_t count, double sum, int64_t ts_ns)
{
	struct tally_quantile *copy = NULL;
	struct tally_record *r;

	for (size_t i = 0; i < n; i++) {
		if (!(quantiles[i].q >= 0 && quantiles[i].q <= 1) ||
		    (i && quantiles[i].q <= quantiles[i - 1].q)) {
			errno = EINVAL;
			return -1;
		}
	}
	if (n) {
		copy = tally_batch_alloc(b, n * sizeof(*copy));
		if (!copy)
			return -1;
		memcpy(copy, quantiles, n * sizeof(*copy));
	}
	r = batch_add_common(b, TALLY_SUMMARY, name, help, labels, ts_ns);
	if (!r)
		return -1;
	r->metric.count = count;
	r->metric.sum = sum;
	r->metric.n = n;
	r->metric.quantiles = copy;
	b->forms |= TALLY_FORM_BIT(TALLY_FORM_CUMULATIVE);
	return 0;
}

double tally_interval_rate(const struct tally_metric *m)
{
	const struct tally_interval *iv = m->interval;

	if (m->form != TALLY_FORM_INTERVAL || !iv || !(iv->seconds > 0))
		return NAN;
	return (m->type == TALLY_COUNTER ? m->value : iv->count) / iv->seconds;
}

double tally_interval_mean(const struct tally_metric *m)
{
	const struct tally_interval *iv = m->interval;

	if (m->form != TALLY_FORM_INTERVAL || !iv || !(iv->count > 0))
		return NAN;
	return iv->sum / iv->count;
}

double tally_interval_quantile(const struct tally_metric *m, double q)
{
	const struct tally_interval *iv = m->interval;

	if (m->form == TALLY_FORM_INTERVAL && iv) {
		for (uint32_t i = 0; i < iv->nquantiles; i++) {
			if (iv->quantiles[i].q == q)
				return iv->quantiles[i].value;
		}
		if (q == 0.5)
			return iv->median;
	}
	errno = ENOENT;
	return NAN;
}

/*
 * A copy of @iv and its arrays in @b's arena, a +Inf bucket added when the
 * last one is finite; NULL/ENOMEM.
 */
static struct tally_interval *interval_copy(struct tally_batch *b,
					    const struct tally_interval *iv)
{
	uint32_t nb = iv->nbuckets, nq = iv->nquantiles;
	bool add_inf = nb && !isinf(iv->buckets[nb - 1].le);
	struct tally_interval *copy = tally_batch_alloc(b, sizeof(*copy));
	struct tally_bucket *bk = NULL;
	struct tally_quantile *qs = NULL;

	if (!copy)
		return NULL;
	*copy = *iv;
	if (nb) {
		bk = tally_batch_alloc(b, (nb + add_inf) * sizeof(*bk));
		if (!bk)
			return NULL;
		memcpy(bk, iv->buckets, nb * sizeof(*bk));
		if (add_inf) {
			bk[nb].le = INFINITY;
			bk[nb].count = (uint64_t)llround(iv->count);
		}
	}
	if (nq) {
		qs = tally_batch_alloc(b, nq * sizeof(*qs));
		if (!qs)
			return NULL;
		memcpy(qs, iv->quantiles, nq * sizeof(*qs));
	}
	copy->buckets = bk;
	copy->nbuckets = nb + add_inf;
	copy->quantiles = qs;
	return copy;
}

static bool interval_valid(const struct tally_interval *iv)
{
	if (!(iv->count >= 0) || isinf(iv->count) ||
	    (iv->nbuckets && !iv->buckets) ||
	    (iv->nquantiles && !iv->quantiles))
		return false;
	for (uint32_t i = 0; i < iv->nbuckets; i++) {
		const struct tally_bucket *k = &iv->buckets[i];

		if (isnan(k->le) || (i && (k->le <= k[-1].le ||
					   k->count < k[-1].count)))
			return false;
	}
	for (uint32_t i = 0; i < iv->nquantiles; i++) {
		double q = iv->quantiles[i].q;

		if (!(q >= 0 && q <= 1) ||
		    (i && q <= iv->quantiles[i - 1].q))
			return false;
	}
	return true;
}

struct tally_record *tally_batch_add_interval(struct tally_batch *b,
					      enum tally_metric_type type,
					      const char *name,
					      const char *help,
					      struct tally_labels *labels,
					      double value,
					      const struct tally_interval *iv,
					      int64_t ts_ns)
{
	struct tally_interval *copy;
	struct tally_record *r;

	if (!ts_ns)
		ts_ns = tally_now_ns();
	if ((type != TALLY_COUNTER && type != TALLY_GAUGE &&
	     type != TALLY_HISTOGRAM && type != TALLY_SUMMARY) ||
	    !iv || iv->start_ns >= ts_ns || !interval_valid(iv)) {
		errno = EINVAL;
		return NULL;
	}
	copy = interval_copy(b, iv);
	if (!copy)
		return NULL;
	copy->seconds = (double)(ts_ns - iv->start_ns) / 1e9;
	r = batch_add_common(b, type, name, help, labels, ts_ns);
	if (!r)
		return NULL;
	r->metric.form = TALLY_FORM_INTERVAL;
	r->metric.value = value;
	r->metric.interval = copy;
	b->forms |= TALLY_FORMS_INTERVAL;
	return r;
}

const struct tally_attr *tally_span_value(const struct tally_span *sp,
					  const char *key)
{
	for (uint32_t i = 0; i < sp->nvalues; i++) {
		if (!strcmp(sp->values[i].key, key))
			return &sp->values[i];
	}
	return NULL;
}

static bool attr_valid(const struct tally_attr *v)
{
	if (!v->key || !*v->key)
		return false;
	switch (v->type) {
	case TALLY_ATTR_T_INT:
	case TALLY_ATTR_T_DOUBLE:
	case TALLY_ATTR_T_BOOL:
		return true;
	case TALLY_ATTR_T_STRING:
		return v->s != NULL;
	}
	return false;
}

/* Whether @n typed values are valid: known types, unique non-empty keys. */
static bool values_valid(const struct tally_attr *v, size_t n)
{
	if (n > TALLY_SPAN_MAX_VALUES || (n && !v))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!attr_valid(&v[i]))
			return false;
		for (size_t j = 0; j < i; j++) {
			/* the first byte decides most pairs without a call */
			if (v[i].key[0] == v[j].key[0] &&
			    !strcmp(v[i].key, v[j].key))
				return false;
		}
	}
	return true;
}

/* Copy one typed value's strings into @b's arena: 0, or -1/ENOMEM. */
static int attr_copy(struct tally_batch *b, struct tally_attr *dst,
		     const struct tally_attr *src)
{
	*dst = *src;
	dst->key = tally_batch_strdup(b, src->key);
	if (!dst->key)
		return -1;
	if (src->type == TALLY_ATTR_T_STRING) {
		dst->s = tally_batch_strdup(b, src->s);
		if (!dst->s)
			return -1;
	}
	return 0;
}

/*
 * @n (at most TALLY_SPAN_MAX_VALUES) typed values copied into @b's arena,
 * the array and its strings in one block (NULL for none); NULL/ENOMEM.
 * One allocation rather than one per string: this is the ingest path of
 * every span that carries attributes.
 */
static const struct tally_attr *values_copy(struct tally_batch *b,
					    const struct tally_attr *v,
					    size_t n, bool *failed)
{
	size_t len[2 * TALLY_SPAN_MAX_VALUES], size, k = 0;
	struct tally_attr *copy;
	char *p;

	*failed = n > TALLY_SPAN_MAX_VALUES;
	if (!n || *failed)
		return NULL;
	size = n * sizeof(*copy);
	for (size_t i = 0; i < n; i++) {
		size += len[k++] = strlen(v[i].key) + 1;
		if (v[i].type == TALLY_ATTR_T_STRING)
			size += len[k++] = strlen(v[i].s) + 1;
	}
	copy = tally_batch_alloc(b, size);
	if (!copy) {
		*failed = true;
		return NULL;
	}
	p = (char *)(copy + n);
	k = 0;
	for (size_t i = 0; i < n; i++) {
		copy[i] = v[i];
		copy[i].key = memcpy(p, v[i].key, len[k]);
		p += len[k++];
		if (v[i].type == TALLY_ATTR_T_STRING) {
			copy[i].s = memcpy(p, v[i].s, len[k]);
			p += len[k++];
		}
	}
	return copy;
}

/*
 * Append a copy of span @sp at @ts_ns, its strings and values in @b's
 * arena. Built in its slot rather than on the stack and copied: this is
 * the zmq_trace ingest path, once per event. NULL/ENOMEM.
 */
static struct tally_record *span_append(struct tally_batch *b,
					const struct tally_span *sp,
					int64_t ts_ns)
{
	const char *trace = tally_batch_strdup(b, sp->trace);
	const char *name = tally_batch_strdup(b, sp->name);
	const char *host =
		tally_batch_strdup(b, sp->src.host ? sp->src.host : "");
	const struct tally_attr *values = NULL;
	struct tally_record *r;
	bool failed = false;

	if (sp->nvalues)
		values = values_copy(b, sp->values, sp->nvalues, &failed);
	if (!trace || !name || !host || failed)
		return NULL;
	r = batch_slot_raw(b);
	if (!r)
		return NULL;
	r->kind = TALLY_REC_SPAN;
	r->ts_ns = ts_ns;
	r->span = *sp;
	r->span.trace = trace;
	r->span.name = name;
	r->span.src.host = host;
	r->span.values = values;
	r->span.attrs =
		tally_labels_ref(sp->attrs ? sp->attrs : tally_labels_empty());
	return r;
}

int tally_batch_add_span(struct tally_batch *b, const struct tally_span *span,
			 int64_t ts_ns)
{
	if (!span || !span->trace || !span->name ||
	    (span->phase != TALLY_SPAN_BEGIN && span->phase != TALLY_SPAN_END) ||
	    (span->nvalues && !values_valid(span->values, span->nvalues))) {
		errno = EINVAL;
		return -1;
	}
	return span_append(b, span, ts_ns ? ts_ns : tally_now_ns()) ? 0 : -1;
}

int tally_batch_span_set_value(struct tally_batch *b, struct tally_record *rec,
			       const struct tally_attr *v)
{
	struct tally_span *sp = &rec->span;
	const struct tally_attr *old = sp->values;
	uint32_t n = sp->nvalues, at = n;
	struct tally_attr *copy;

	if (rec->kind != TALLY_REC_SPAN || !v || !attr_valid(v)) {
		errno = EINVAL;
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		if (!strcmp(old[i].key, v->key))
			at = i;
	}
	if (at == n && n == TALLY_SPAN_MAX_VALUES) {
		errno = EINVAL;
		return -1;
	}
	/*
	 * A new array, never an update in place: the old one may be borrowed
	 * from another batch, whose readers must not see it change. The
	 * other values' strings stay where they are, as long-lived as it.
	 */
	copy = tally_batch_alloc(b, (n + (at == n)) * sizeof(*copy));
	if (!copy)
		return -1;
	if (n)
		memcpy(copy, old, n * sizeof(*copy));
	if (attr_copy(b, &copy[at], v) < 0)
		return -1;
	sp->values = copy;
	sp->nvalues = n + (at == n);
	return 0;
}

struct tally_record *tally_batch_copy_record(struct tally_batch *b,
					     const struct tally_record *rec)
{
	struct tally_record tmp = *rec;

	if (rec->kind == TALLY_REC_METRIC) {
		struct tally_metric *m = &tmp.metric;
		size_t esize = m->type == TALLY_HISTOGRAM ? sizeof(*m->buckets)
			       : m->type == TALLY_SUMMARY ? sizeof(*m->quantiles)
							  : 0;

		m->name = tally_batch_strdup(b, rec->metric.name);
		if (!m->name)
			return NULL;
		if (rec->metric.help) {
			m->help = tally_batch_strdup(b, rec->metric.help);
			if (!m->help)
				return NULL;
		}
		if (rec->metric.member) {
			m->member = tally_batch_strdup(b, rec->metric.member);
			if (!m->member)
				return NULL;
		}
		if (rec->metric.interval) {
			m->interval = interval_copy(b, rec->metric.interval);
			if (!m->interval)
				return NULL;
		}
		if (esize && m->n) {
			void *arr = tally_batch_alloc(b, esize * m->n);

			if (!arr)
				return NULL;
			memcpy(arr, rec->metric.buckets, esize * m->n);
			m->buckets = arr;
		}
		m->labels = rec->metric.labels ? rec->metric.labels
					       : tally_labels_empty();
	} else if (rec->kind == TALLY_REC_SPAN) {
		return span_append(b, &rec->span, rec->ts_ns);
	} else {
		errno = EINVAL;
		return NULL;
	}
	return batch_put(b, &tmp);
}
