/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/remote_write/encode.c - records into one remote write
 * request (see encode.h)
 *
 * Everything a request holds (series, their labels, samples) lives in an
 * arena of chunks that rw_req_clear() rewinds, so a steady stream of
 * requests allocates nothing once the first chunks exist. A series is
 * found again within a request by (raw name, interned label set, part,
 * bound) through a hash table; its labels are built once, when it is
 * first seen in the request.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <snappy-c.h>

#include <tally/exposition.h>
#include <tally/hash.h>
#include <tally/utf8.h>

#include "encode.h"
#include "remote.pb-c.h"

#define CHUNK_SIZE 65536

/* Which sample of a record a series carries. */
enum rw_part {
	PART_VALUE,    /* NAME */
	PART_BUCKET,   /* NAME_bucket{le} */
	PART_QUANTILE, /* NAME{quantile} */
	PART_SUM,      /* NAME_sum */
	PART_COUNT,    /* NAME_count */
};

static bool has_suffix(const char *s, size_t n, const char *sfx)
{
	size_t k = strlen(sfx);

	/* a name that is only the suffix gets another, as store.c does */
	return n > k && !strcmp(s + n - k, sfx);
}

static const char *const part_suffix[] = { "", "_bucket", "", "_sum",
					   "_count" };

struct rw_chunk {
	struct rw_chunk *next;
	size_t used;
	size_t size;
	alignas(max_align_t) unsigned char data[];
};

struct rw_sample {
	Prometheus__Sample s;
	struct rw_sample *next;
	size_t seq; /* samples in the request before this one */
};

struct rw_series {
	struct tally_hnode node;
	/* key */
	const char *raw_name;	     /* arena copy */
	struct tally_labels *labels; /* a reference */
	enum tally_metric_type type;
	enum rw_part part;
	double bound;
	/* value */
	Prometheus__TimeSeries ts;
	struct rw_sample *first, *last;
	struct rw_series *next; /* in the order first seen */
};

struct rw_req {
	const struct tally_labels *statics;
	struct rw_chunk *chunks; /* the current chunk first */
	struct rw_chunk *spare;	 /* rewound chunks, reused */
	struct tally_htable index;
	struct rw_series *first, *last;
	size_t nseries;
	size_t nsamples;
	struct tally_label *merged; /* scratch: a record's labels */
	size_t merged_cap;
	Prometheus__Label *lab; /* scratch: a series' labels */
	size_t lab_cap;
	struct rw_drops drops;
};

static void *arena_alloc(struct rw_req *r, size_t n)
{
	struct rw_chunk *c = r->chunks;

	n = (n + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
	if (!c || c->size - c->used < n) {
		if (r->spare && r->spare->size >= n) {
			c = r->spare;
			r->spare = c->next;
		} else {
			size_t size = n > CHUNK_SIZE ? n : CHUNK_SIZE;

			c = malloc(sizeof(*c) + size);
			if (!c)
				return NULL;
			c->size = size;
		}
		c->used = 0;
		c->next = r->chunks;
		r->chunks = c;
	}
	c->used += n;
	return c->data + c->used - n;
}

static char *arena_strndup(struct rw_req *r, const char *s, size_t n)
{
	char *p = arena_alloc(r, n + 1);

	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

struct rw_req *rw_req_new(const struct tally_labels *statics)
{
	struct rw_req *r = calloc(1, sizeof(*r));

	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	r->statics = statics;
	return r;
}

void rw_req_clear(struct rw_req *r)
{
	struct rw_chunk *c, *next;

	for (struct rw_series *s = r->first; s; s = s->next)
		tally_labels_unref(s->labels);
	for (c = r->chunks; c; c = next) {
		next = c->next;
		c->next = r->spare;
		r->spare = c;
	}
	r->chunks = NULL;
	tally_htable_fini(&r->index);
	r->first = r->last = NULL;
	r->nseries = 0;
	r->nsamples = 0;
}

void rw_req_free(struct rw_req *r)
{
	struct rw_chunk *c, *next;

	if (!r)
		return;
	rw_req_clear(r);
	for (c = r->spare; c; c = next) {
		next = c->next;
		free(c);
	}
	free(r->merged);
	free(r->lab);
	free(r);
}

size_t rw_req_samples(const struct rw_req *r)
{
	return r->nsamples;
}

size_t rw_req_series(const struct rw_req *r)
{
	return r->nseries;
}

const struct rw_drops *rw_req_drops(const struct rw_req *r)
{
	return &r->drops;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	void *n;

	if (need <= *cap)
		return 0;
	need = need < 16 ? 16 : need * 2;
	n = realloc(*p, need * size);
	if (!n)
		return -1;
	*p = n;
	*cap = need;
	return 0;
}

static int label_cmp(const void *a, const void *b)
{
	const Prometheus__Label *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/*
 * The labels of a new series, into the arena: the record's and the static
 * ones, sanitized, empty values out, __name__ and le/quantile in, sorted.
 * Return: 0, 1 when the names collide (drop the record), -1 on ENOMEM.
 */
static int series_labels(struct rw_req *r, struct rw_series *s)
{
	const struct tally_labels *st = r->statics;
	size_t na = tally_labels_count(s->labels);
	size_t nb = st ? tally_labels_count(st) : 0;
	size_t n, k = 0;
	Prometheus__Label **ptrs;
	Prometheus__Label *lab;
	char buf[TALLY_EXPO_DOUBLE_MAX];
	const char *sfx = part_suffix[s->part];
	size_t len;
	bool total, info;
	char *name;

	if (grow((void **)&r->merged, &r->merged_cap, na + nb,
		 sizeof(*r->merged)) < 0 ||
	    grow((void **)&r->lab, &r->lab_cap, na + nb + 2, sizeof(*r->lab)) <
		    0)
		return -1;
	n = tally_label_merge(tally_labels_pairs(s->labels), na,
			      st ? tally_labels_pairs(st) : NULL, nb,
			      r->merged);
	for (size_t i = 0; i < n; i++) {
		const char *key = r->merged[i].key;
		const char *val = r->merged[i].value;
		size_t vl = strlen(val), kl;
		char *v;

		if (!vl)
			continue;
		if (tally_expo_valid_label_name(key)) {
			r->lab[k].name = arena_strndup(r, key, strlen(key));
			if (!r->lab[k].name)
				return -1;
		} else {
			kl = tally_expo_sanitize_label_name(NULL, 0, key);
			r->lab[k].name = arena_alloc(r, kl + 1);
			if (!r->lab[k].name)
				return -1;
			tally_expo_sanitize_label_name(r->lab[k].name, kl + 1,
						       key);
		}
		if (tally_utf8_valid(val, vl)) {
			v = arena_strndup(r, val, vl);
		} else {
			/* each bad byte becomes 3 at most */
			v = arena_alloc(r, 3 * vl + 1);
			if (v)
				v[tally_utf8_fix(val, vl, v, 3 * vl)] = '\0';
		}
		if (!v)
			return -1;
		r->lab[k++].value = v;
	}
	len = tally_expo_sanitize_metric_name(NULL, 0, s->raw_name);
	name = arena_alloc(r, len + strlen(sfx) + sizeof("_total"));
	if (!name)
		return -1;
	tally_expo_sanitize_metric_name(name, len + 1, s->raw_name);
	/*
	 * The names the prometheus output shows for the same records (its
	 * store.c): counters end in _total, info samples in _info, so a
	 * series is called the same scraped or written
	 */
	total = s->type == TALLY_COUNTER && !has_suffix(name, len, "_total");
	info = s->type == TALLY_INFO && !has_suffix(name, len, "_info");
	strcpy(name + len, total ? "_total" : info ? "_info" : sfx);
	r->lab[k].name = "__name__";
	r->lab[k++].value = name;
	if (s->part == PART_BUCKET || s->part == PART_QUANTILE) {
		len = tally_expo_format_double(buf, s->bound);
		r->lab[k].name = s->part == PART_BUCKET ? "le" : "quantile";
		r->lab[k].value = arena_strndup(r, buf, len);
		if (!r->lab[k++].value)
			return -1;
	}
	qsort(r->lab, k, sizeof(*r->lab), label_cmp);
	for (size_t i = 1; i < k; i++)
		if (!strcmp(r->lab[i - 1].name, r->lab[i].name))
			return 1;
	lab = arena_alloc(r, k * sizeof(*lab));
	ptrs = arena_alloc(r, k * sizeof(*ptrs));
	if (!lab || !ptrs)
		return -1;
	for (size_t i = 0; i < k; i++) {
		prometheus__label__init(&lab[i]);
		lab[i].name = r->lab[i].name;
		lab[i].value = r->lab[i].value;
		ptrs[i] = &lab[i];
	}
	s->ts.n_labels = k;
	s->ts.labels = ptrs;
	return 0;
}

static uint64_t series_hash(const char *raw, const struct tally_labels *ls,
			    enum tally_metric_type type, enum rw_part part,
			    double bound)
{
	uint64_t h = tally_hash_str(tally_labels_hash(ls), raw);

	h = tally_hash_bytes(h, &type, sizeof(type));
	h = tally_hash_bytes(h, &part, sizeof(part));
	h = tally_hash_bytes(h, &bound, sizeof(bound));
	return tally_hash_mix(h);
}

/*
 * The series (@raw, @ls, @part, @bound) of the request, made if new.
 * Return: the series, NULL with errno = ENOMEM, or NULL with errno =
 * EEXIST when its label names collide.
 */
static struct rw_series *series_get(struct rw_req *r, const char *raw,
				    struct tally_labels *ls,
				    enum tally_metric_type type,
				    enum rw_part part, double bound)
{
	uint64_t h = series_hash(raw, ls, type, part, bound);
	struct tally_hnode *p;
	struct rw_series *s;
	int rc;

	tally_htable_for_each_hash(&r->index, h, p)
	{
		s = tally_container_of(p, struct rw_series, node);
		if (s->labels == ls && s->part == part && s->type == type &&
		    (s->bound == bound || (isnan(bound) && isnan(s->bound))) &&
		    !strcmp(s->raw_name, raw))
			return s;
	}
	if (tally_htable_reserve(&r->index) < 0)
		goto out_nomem;
	s = arena_alloc(r, sizeof(*s));
	if (!s)
		goto out_nomem;
	memset(s, 0, sizeof(*s));
	prometheus__time_series__init(&s->ts);
	s->raw_name = arena_strndup(r, raw, strlen(raw));
	s->labels = ls;
	s->type = type;
	s->part = part;
	s->bound = bound;
	if (!s->raw_name)
		goto out_nomem;
	rc = series_labels(r, s);
	if (rc < 0)
		goto out_nomem;
	if (rc > 0) {
		errno = EEXIST;
		return NULL;
	}
	/* only now: the series is kept, and unreferenced by rw_req_clear() */
	s->labels = tally_labels_ref(ls);
	s->node.hash = h;
	tally_htable_insert(&r->index, &s->node);
	if (r->last)
		r->last->next = s;
	else
		r->first = s;
	r->last = s;
	r->nseries++;
	return s;

out_nomem:
	errno = ENOMEM;
	return NULL;
}

static int sample_add(struct rw_req *r, const struct tally_metric *m,
		      enum rw_part part, double bound, double value,
		      int64_t ts_ms)
{
	struct rw_series *s =
		series_get(r, m->name, m->labels, m->type, part, bound);
	struct rw_sample *x;

	if (!s)
		return -1;
	x = arena_alloc(r, sizeof(*x));
	if (!x) {
		errno = ENOMEM;
		return -1;
	}
	prometheus__sample__init(&x->s);
	x->s.value = value;
	x->s.timestamp = ts_ms;
	x->next = NULL;
	x->seq = r->nsamples;
	if (s->last)
		s->last->next = x;
	else
		s->first = x;
	s->last = x;
	s->ts.n_samples++;
	r->nsamples++;
	return 0;
}

int rw_req_add(struct rw_req *r, const struct tally_record *rec)
{
	const struct tally_metric *m = &rec->metric;
	/* floor division: a time before 1970 stays in order */
	int64_t ms = rec->ts_ns / 1000000 - (rec->ts_ns % 1000000 < 0);
	size_t before = r->nsamples;
	int rc = 0;

	if (rec->kind != TALLY_REC_METRIC) {
		r->drops.span++;
		return 0;
	}
	if (m->form != TALLY_FORM_CUMULATIVE) {
		r->drops.not_cumulative++;
		return 0;
	}
	switch (m->type) {
	case TALLY_HISTOGRAM:
		for (size_t i = 0; i < m->n && !rc; i++)
			rc = sample_add(r, m, PART_BUCKET, m->buckets[i].le,
					(double)m->buckets[i].count, ms);
		goto sum_count;
	case TALLY_SUMMARY:
		for (size_t i = 0; i < m->n && !rc; i++)
			rc = sample_add(r, m, PART_QUANTILE, m->quantiles[i].q,
					m->quantiles[i].value, ms);
	sum_count:
		if (!rc)
			rc = sample_add(r, m, PART_SUM, 0, m->sum, ms);
		if (!rc)
			rc = sample_add(r, m, PART_COUNT, 0, (double)m->count,
					ms);
		break;
	default:
		rc = sample_add(r, m, PART_VALUE, 0, m->value, ms);
		break;
	}
	if (rc < 0 && errno == EEXIST) {
		/* what a first part added stays: its series is well formed */
		r->drops.label_collision++;
		return (int)(r->nsamples - before);
	}
	return rc < 0 ? -1 : (int)(r->nsamples - before);
}

void rw_req_mark(const struct rw_req *r, struct rw_mark *m)
{
	m->nsamples = r->nsamples;
	m->nseries = r->nseries;
	m->drops = r->drops;
}

/*
 * Series are listed in the order first seen and samples in the order
 * added, each numbered: what came after @m is at the ends of the lists.
 */
void rw_req_rollback(struct rw_req *r, const struct rw_mark *m)
{
	struct rw_series *s, *keep = NULL, *next;
	size_t i = 0;

	for (s = r->first; s; s = next) {
		next = s->next;
		if (i++ >= m->nseries) {
			tally_htable_remove(&r->index, &s->node);
			tally_labels_unref(s->labels);
			continue;
		}
		keep = s;
		if (s->last && s->last->seq >= m->nsamples) {
			struct rw_sample *x, *last = NULL;

			s->ts.n_samples = 0;
			for (x = s->first; x && x->seq < m->nsamples;
			     x = x->next) {
				last = x;
				s->ts.n_samples++;
			}
			s->last = last;
			if (last)
				last->next = NULL;
			else
				s->first = NULL;
		}
	}
	r->last = keep;
	if (keep)
		keep->next = NULL;
	else
		r->first = NULL;
	r->nseries = m->nseries;
	r->nsamples = m->nsamples;
	r->drops = m->drops;
}

/*
 * Pack samples [skip, skip + k) into one contiguous buffer, then compress
 * straight into the evbuffer's free space: the snappy block is the body as
 * it is sent. A series cut by the range is sent with the samples of its
 * own in the range, its labels shared.
 */
int rw_req_pack(const struct rw_req *r, size_t skip, size_t k,
		struct evbuffer *out, size_t *raw)
{
	Prometheus__WriteRequest wr = PROMETHEUS__WRITE_REQUEST__INIT;
	Prometheus__TimeSeries **tsp = NULL, *tsc = NULL;
	Prometheus__Sample **sp = NULL;
	struct evbuffer_iovec v;
	size_t len, clen, pos = 0, taken = 0, nts = 0;
	uint8_t *packed = NULL;
	int rc = -1;

	if (skip > r->nsamples || k > r->nsamples - skip) {
		errno = EINVAL;
		return -1;
	}
	tsp = malloc((r->nseries ? r->nseries : 1) * sizeof(*tsp));
	tsc = malloc((r->nseries ? r->nseries : 1) * sizeof(*tsc));
	sp = malloc((k ? k : 1) * sizeof(*sp));
	if (!tsp || !tsc || !sp)
		goto out_free;
	for (struct rw_series *s = r->first; s && taken < k; s = s->next) {
		Prometheus__TimeSeries *t;

		if (pos + s->ts.n_samples <= skip) {
			pos += s->ts.n_samples;
			continue;
		}
		t = &tsc[nts];
		*t = s->ts;
		t->samples = &sp[taken];
		t->n_samples = 0;
		for (struct rw_sample *x = s->first; x && taken < k;
		     x = x->next) {
			if (pos++ < skip)
				continue;
			sp[taken++] = &x->s;
			t->n_samples++;
		}
		tsp[nts++] = t;
	}
	wr.n_timeseries = nts;
	wr.timeseries = tsp;
	len = prometheus__write_request__get_packed_size(&wr);
	packed = malloc(len ? len : 1);
	if (!packed)
		goto out_free;
	prometheus__write_request__pack(&wr, packed);
	clen = snappy_max_compressed_length(len);
	if (evbuffer_reserve_space(out, (ev_ssize_t)clen, &v, 1) < 1)
		goto out_free;
	if (snappy_compress((const char *)packed, len, v.iov_base, &clen) !=
	    SNAPPY_OK)
		goto out_free;
	v.iov_len = clen;
	if (evbuffer_commit_space(out, &v, 1) < 0)
		goto out_free;
	if (raw)
		*raw = len;
	rc = 0;
out_free:
	free(packed);
	free(sp);
	free(tsc);
	free(tsp);
	if (rc < 0)
		errno = ENOMEM;
	return rc;
}

int rw_req_finish(struct rw_req *r, struct evbuffer *out, size_t *raw)
{
	if (rw_req_pack(r, 0, r->nsamples, out, raw) < 0)
		return -1;
	rw_req_clear(r);
	return 0;
}
