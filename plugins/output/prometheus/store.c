/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/prometheus/store.c - series store and exposition renderer
 *
 * See store.h for the shape of the data. The renderer's budget is 100k
 * series in 30 ms, so every series keeps its sample lines as ready text,
 * rebuilt when a record updates it; a scrape then copies bytes in sorted
 * order and formats only the few values that depend on the scrape time
 * (spans still open).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include <tally/exposition.h>
#include <tally/hash.h>
#include <tally/io.h>
#include <tally/log.h>
#include <tally/lru.h>
#include <tally/record.h>

#include "store.h"

/* ---- growable strings ---------------------------------------------------- */

struct sbuf {
	char *p;
	size_t len;
	size_t cap;
	bool err; /* an allocation failed: contents are junk */
};

static bool sb_grow(struct sbuf *b, size_t extra)
{
	size_t ncap;
	char *np;

	if (b->len + extra + 1 <= b->cap)
		return true;
	if (b->err)
		return false;
	ncap = b->cap ? b->cap : 64;
	while (ncap < b->len + extra + 1)
		ncap *= 2;
	np = realloc(b->p, ncap);
	if (!np) {
		b->err = true;
		return false;
	}
	b->p = np;
	b->cap = ncap;
	return true;
}

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
	if (!sb_grow(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_puts(struct sbuf *b, const char *s)
{
	sb_put(b, s, strlen(s));
}

static void sb_putd(struct sbuf *b, double v)
{
	char tmp[TALLY_EXPO_DOUBLE_MAX];

	sb_put(b, tmp, tally_expo_format_double(tmp, v));
}

static void sb_putu(struct sbuf *b, uint64_t u)
{
	char tmp[24];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	sb_put(b, tmp + i, sizeof(tmp) - i);
}

/* Append @src escaped as a label value. */
static void sb_put_escaped(struct sbuf *b, const char *src)
{
	size_t n = tally_expo_escape_label_value(NULL, 0, src);

	if (!sb_grow(b, n))
		return;
	tally_expo_escape_label_value(b->p + b->len, n + 1, src);
	b->len += n;
}

/* Append ,key="escaped value" (no comma for the first pair). */
static void sb_put_label(struct sbuf *b, const char *key, const char *value)
{
	if (b->len)
		sb_put(b, ",", 1);
	sb_puts(b, key);
	sb_put(b, "=\"", 2);
	sb_put_escaped(b, value);
	sb_put(b, "\"", 1);
}

/* ---- families and series ------------------------------------------------- */

bool prom_series_is_self(const char *raw_name)
{
	return strncmp(raw_name, "tally_", 6) == 0 ||
	       strncmp(raw_name, "process_", 8) == 0;
}

enum fam_kind {
	FAM_METRIC,	  /* samples from metric records */
	FAM_SPAN_ACTIVE,  /* tally_trace_region_active */
	FAM_SPAN_SECONDS, /* tally_trace_region_seconds_total (alias) */
	FAM_SPAN_ANNOT,	  /* rmsjob_annotations */
};

/* A sample name a family owns, so that no two families expose it. */
struct reserved {
	struct tally_hnode node;
	struct prom_family *fam;
	char *name;
};

struct prom_family {
	struct tally_hnode node; /* in store.families, keyed by name */
	char *name;		 /* exposed (0.0.4) family name */
	size_t name_len;
	enum tally_metric_type type;
	enum fam_kind kind;
	struct prom_family *alias; /* FAM_SPAN_SECONDS: whose series */
	char *hdr[2];		   /* HELP and TYPE lines per format */
	size_t hdr_len[2];
	char *help;	   /* its HELP text (copied), NULL: none came yet */
	uint64_t help_gen; /* store.gen when a record's HELP was compared */
	struct prom_series **v; /* [0, nsorted) sorted by lbl */
	size_t n, cap, nsorted;
	size_t nfirm; /* series not yielding (struct prom_series.yields) */
	struct reserved res[4];
	int nres;
};

/*
 * Span accounting of one exposed region series.
 *
 * Timestamps come from applications and may be anything: they are clamped
 * to [0, TS_MAX] first (ts_clamp()), so that differences of two fit an
 * int64_t. The begin times of the open spans are summed as whole seconds
 * and remaining nanoseconds since the store's epoch: with at most
 * PROM_MAX_OPEN_SPANS (1e8) open spans, |begin_s| <= 1e8 * 4.7e9 and
 * begin_ns <= 1e8 * 1e9, both far within int64_t, and the sums stay exact
 * (a double would round the ns of spans far from the epoch).
 */
struct prom_region {
	unsigned n_open;
	int64_t begin_s;   /* sum over open spans of (begin - epoch) / 1e9 */
	int64_t begin_ns;  /* and of the remainders, each in [0, 1e9) */
	int64_t closed_ns; /* ended spans' time, saturated at INT64_MAX */
	int64_t last_end;  /* monotonic ns of the last end */
	double shown;	   /* last seconds_total rendered */
};

struct prom_series {
	struct tally_hnode raw; /* store.raw: raw name + label set */
	struct tally_hnode exp; /* store.exposed: family + lbl */
	struct prom_family *fam;
	char *raw_name; /* NULL for span series */
	struct tally_labels *raw_labels;
	char *lbl; /* k="v",... sanitized, no braces */
	size_t lbl_len;
	struct sbuf text;  /* rendered sample lines */
	size_t prefix_len; /* text up to the value (scalars) */
	int64_t deadline;  /* monotonic ns; gone after it */
	struct prom_region *region;
	double value; /* counters, gauges: what a delta adds to */
	bool self; /* tallyd's own: counted in nself, not against max_series */
	/*
	 * The input whose records the series shows (interned in store.owners)
	 * and whether they were read on behalf of others (a textfile's,
	 * tally_batch_set_origin()): another input's records take over such
	 * a series, and it never takes over another input's.
	 */
	const char *owner;
	bool yields;
	/* histograms, summaries of interval records: the totals so far */
	uint64_t count;
	double sum;
	struct tally_bucket *cum; /* histograms: cumulative over time */
	size_t ncum;
};

/*
 * An open span, keyed by (trace, host, pid, rank, span id): span ids are
 * unique per trace and process; the rank is in the key too in case a
 * source reports ranks without real pids.
 */
struct prom_open {
	struct tally_hnode node;
	/* its process's list while open and watched, then store.frozen */
	struct prom_open *next, **pprev;
	struct prom_proc *proc; /* NULL: not watched, or frozen */
	bool frozen;		/* its process is gone: counted to frozen_ns */
	int64_t frozen_ns;	/* CLOCK_REALTIME */
	int64_t frozen_at;	/* CLOCK_MONOTONIC, for expiry */
	uint64_t span_id;
	uint32_t pid;
	int32_t rank;
	int64_t begin_ns;
	struct prom_series *r[2]; /* tally and omnistat regions, or NULL */
	char key[];		  /* trace NUL host NUL */
};

/*
 * A process of this host with open spans, asked before each scrape
 * whether it still runs (prom_store_render()).
 */
struct prom_proc {
	struct tally_hnode node; /* store.procs, keyed by pid */
	uint32_t pid;
	int64_t alive_ns;	 /* CLOCK_REALTIME it was last known to run */
	struct prom_open *spans; /* its open spans */
};

struct prom_store {
	struct prom_store_opts o;
	char *jobid;
	struct tally_instance *inst;
	struct tally_htable families, reserved, raw, exposed, open, procs;
	char *local_host;
	/* frozen spans whose end has not come, oldest first */
	struct prom_open *frozen, **frozen_tail;
	struct prom_family **fams; /* sorted by name when fams_sorted */
	size_t nfams, capfams;
	bool fams_sorted;
	struct prom_family *span_active, *span_seconds, *span_annot;
	size_t nseries;	     /* all of them */
	size_t nself;	     /* of which tallyd's own (prom_series_is_self()) */
	int64_t epoch_ns;    /* CLOCK_REALTIME at creation */
	uint64_t gen;	     /* changes applied or swept so far */
	uint64_t spans_open; /* open spans counted in regions' sums */
	struct prom_store_stats st;
	struct sbuf tmp, tmp2, tmp3; /* scratch: names, label text, keys */
	struct tally_label *lbuf;    /* a region's labels with the static */
	struct tally_bucket *ivb;    /* an interval's cumulative buckets */
	size_t nivb;
	/* series refused with a warning: each is warned about once */
	struct tally_lru warned;
	bool quiet; /* the series being made was warned about already */
	struct tally_strlist attrs; /* o.attributes, copied */
	/* the record being applied: its input, and its origin if it yields */
	const char *owner;
	const char *origin;
	char **owners; /* input names seen, interned: compared by pointer */
	size_t nowners;
};

/* A refused series (name, label set) whose refusal was logged. */
struct prom_warned {
	struct tally_lru_node node;
	struct tally_labels *labels;
	char name[];
};

/* refused series remembered; beyond, the oldest may be warned about again */
#define PROM_WARNED_MAX 4096

#define NS_PER_S 1000000000LL

/* Latest timestamp a span may carry: 2^62 ns after 1970, in 2116. */
#define TS_MAX (INT64_C(1) << 62)

static int64_t ts_clamp(int64_t ts)
{
	return ts < 0 ? 0 : ts > TS_MAX ? TS_MAX : ts;
}

/* @off (ns) as whole seconds, rounded down, and nanoseconds in [0, 1e9) */
static void ns_split(int64_t off, int64_t *sec, int64_t *ns)
{
	*sec = off / NS_PER_S;
	*ns = off % NS_PER_S;
	if (*ns < 0) {
		*ns += NS_PER_S;
		(*sec)--;
	}
}

#define DROP(s, field, reason)                            \
	do {                                              \
		(s)->st.field++;                          \
		tally_count_drop((s)->inst, (reason), 1); \
	} while (0)

static const char *const type_name[] = {
	[TALLY_COUNTER] = "counter",	 [TALLY_GAUGE] = "gauge",
	[TALLY_HISTOGRAM] = "histogram", [TALLY_SUMMARY] = "summary",
	[TALLY_INFO] = "gauge",		 [TALLY_UNTYPED] = "untyped",
};

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

/* @name ends in @suffix and has something before it */
static bool has_suffix(const char *name, size_t n, const char *suffix)
{
	return n > strlen(suffix) && ends_with(name, n, suffix);
}

/*
 * Length of the OpenMetrics family name of a family (0.0.4 name @name):
 * without the _total of a counter's samples or the _info of an info's.
 */
static size_t om_name_len(const char *name, size_t n,
			  enum tally_metric_type type)
{
	if (type == TALLY_COUNTER && has_suffix(name, n, "_total"))
		return n - strlen("_total");
	if (type == TALLY_INFO && has_suffix(name, n, "_info"))
		return n - strlen("_info");
	return n;
}

/*
 * The HELP and TYPE lines, for both formats. OpenMetrics names a counter
 * family without its _total suffix and has an info type whose samples end
 * in _info; 0.0.4 uses the sample name and knows no info type (a gauge).
 */
static int family_headers(struct prom_family *f, const char *help)
{
	for (int fmt = 0; fmt < 2; fmt++) {
		struct sbuf b = { 0 };
		size_t nlen = f->name_len;
		const char *type = type_name[f->type];
		size_t hn;

		if (fmt == PROM_FMT_OPENMETRICS) {
			nlen = om_name_len(f->name, f->name_len, f->type);
			if (f->type == TALLY_INFO)
				type = "info";
			else if (f->type == TALLY_UNTYPED)
				type = "unknown";
		}
		sb_puts(&b, "# HELP ");
		sb_put(&b, f->name, nlen);
		sb_put(&b, " ", 1);
		hn = tally_expo_escape_help(NULL, 0, help, fmt);
		if (sb_grow(&b, hn)) {
			tally_expo_escape_help(b.p + b.len, hn + 1, help, fmt);
			b.len += hn;
		}
		sb_puts(&b, "\n# TYPE ");
		sb_put(&b, f->name, nlen);
		sb_put(&b, " ", 1);
		sb_puts(&b, type);
		sb_put(&b, "\n", 1);
		if (b.err) {
			free(b.p);
			errno = ENOMEM;
			return -1;
		}
		free(f->hdr[fmt]);
		f->hdr[fmt] = b.p;
		f->hdr_len[fmt] = b.len;
	}
	return 0;
}

static struct prom_family *family_find(struct prom_store *s, const char *name,
				       uint64_t h)
{
	struct tally_hnode *p;

	tally_htable_for_each_hash(&s->families, h, p)
	{
		struct prom_family *f =
			tally_container_of(p, struct prom_family, node);

		if (strcmp(f->name, name) == 0)
			return f;
	}
	return NULL;
}

static struct prom_family *reserved_owner(struct prom_store *s,
					  const char *name)
{
	struct tally_hnode *p;

	tally_htable_for_each_hash(&s->reserved,
				   tally_hash_str(TALLY_HASH_SEED, name), p)
	{
		struct reserved *r =
			tally_container_of(p, struct reserved, node);

		if (strcmp(r->name, name) == 0)
			return r->fam;
	}
	return NULL;
}

static void family_free(struct prom_family *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->nres; i++)
		free(f->res[i].name);
	free(f->hdr[0]);
	free(f->hdr[1]);
	free(f->help);
	free(f->v);
	free(f->name);
	free(f);
}

/*
 * Create family @name. The sample names it will write are reserved, so a
 * gauge "x_count" and a summary "x" cannot both expose x_count (Prometheus
 * would reject the scrape for duplicate samples), and so is its OpenMetrics
 * family name, so a gauge "x" and a counter "x_total" (family x in
 * OpenMetrics) cannot both be exposed either. Sample and family names
 * share one namespace: OpenMetrics derives sample names from family names.
 */
static struct prom_family *family_new(struct prom_store *s, const char *name,
				      enum tally_metric_type type,
				      enum fam_kind kind, const char *help,
				      const char *fallback)
{
	static const char *const hist[] = { "_bucket", "_sum", "_count" };
	static const char *const summ[] = { "", "_sum", "_count" };
	const char *const *suffix = NULL;
	struct prom_family *f;
	int nres = 1;
	size_t omlen;

	if (type == TALLY_HISTOGRAM) {
		suffix = hist;
		nres = 3;
	} else if (type == TALLY_SUMMARY) {
		suffix = summ;
		nres = 3;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		goto out_nomem;
	f->name = strdup(name);
	if (!f->name)
		goto out_nomem;
	f->name_len = strlen(name);
	f->type = type;
	f->kind = kind;
	omlen = om_name_len(name, f->name_len, type);
	for (int i = 0; i < nres; i++) {
		const char *sfx = suffix ? suffix[i] : "";
		size_t k = strlen(sfx);
		char *n = malloc(f->name_len + k + 1);

		if (!n)
			goto out_nomem;
		memcpy(n, name, f->name_len);
		memcpy(n + f->name_len, sfx, k + 1);
		f->res[f->nres++].name = n;
		if (omlen == f->name_len && !*sfx)
			omlen = 0; /* the family name is a sample name */
	}
	if (omlen) {
		f->res[f->nres].name = strndup(name, omlen);
		if (!f->res[f->nres].name)
			goto out_nomem;
		f->nres++;
	}
	for (int i = 0; i < f->nres; i++) {
		struct reserved *r = &f->res[i];

		r->fam = f;
		r->node.hash = tally_hash_str(TALLY_HASH_SEED, r->name);
		if (reserved_owner(s, r->name)) {
			DROP(s, name_collision, "name_collision");
			if (!s->quiet)
				tally_log(s->inst, LOG_WARNING,
					  "%s is a sample or OpenMetrics "
					  "family name of another family "
					  "already: dropping family %s",
					  r->name, name);
			family_free(f);
			errno = 0;
			return NULL;
		}
	}
	if (help && *help) {
		f->help = strdup(help);
		if (!f->help)
			goto out_nomem;
	}
	f->help_gen = s->gen;
	/* No help from the input: the raw name tells where the family came
	 * from once sanitized, and an empty HELP fails promtool's lint. */
	if (family_headers(f, f->help ? help : fallback) < 0)
		goto out_nomem;
	if (tally_htable_reserve(&s->families) < 0)
		goto out_nomem;
	if (tally_htable_reserve(&s->reserved) < 0)
		goto out_nomem;
	if (s->nfams == s->capfams) {
		size_t ncap = s->capfams ? 2 * s->capfams : 64;
		void *nv = realloc(s->fams, ncap * sizeof(*s->fams));

		if (!nv)
			goto out_nomem;
		s->fams = nv;
		s->capfams = ncap;
	}
	f->node.hash = tally_hash_str(TALLY_HASH_SEED, name);
	tally_htable_insert(&s->families, &f->node);
	for (int i = 0; i < f->nres; i++) /* chains: no room needed */
		tally_htable_insert(&s->reserved, &f->res[i].node);
	s->fams[s->nfams++] = f;
	s->fams_sorted = false;
	return f;

out_nomem:
	family_free(f);
	errno = ENOMEM;
	return NULL;
}

static void family_remove(struct prom_store *s, struct prom_family *f)
{
	tally_htable_remove(&s->families, &f->node);
	for (int i = 0; i < f->nres; i++)
		tally_htable_remove(&s->reserved, &f->res[i].node);
	family_free(f);
}

static int family_append(struct prom_family *f, struct prom_series *ser)
{
	if (f->n == f->cap) {
		size_t ncap = f->cap ? 2 * f->cap : 8;
		void *nv = realloc(f->v, ncap * sizeof(*f->v));

		if (!nv) {
			errno = ENOMEM;
			return -1;
		}
		f->v = nv;
		f->cap = ncap;
	}
	f->v[f->n++] = ser;
	return 0;
}

static uint64_t exposed_hash(const struct prom_family *f, const char *lbl)
{
	return tally_hash_str(tally_hash_mix((uint64_t)(uintptr_t)f), lbl);
}

static struct prom_series *exposed_find(struct prom_store *s,
					const struct prom_family *f,
					const char *lbl, uint64_t h)
{
	struct tally_hnode *p;

	tally_htable_for_each_hash(&s->exposed, h, p)
	{
		struct prom_series *ser =
			tally_container_of(p, struct prom_series, exp);

		if (ser->fam == f && strcmp(ser->lbl, lbl) == 0)
			return ser;
	}
	return NULL;
}

static uint64_t raw_hash(const char *name, const struct tally_labels *ls)
{
	return tally_hash_str(tally_hash_mix(tally_labels_hash(ls)), name);
}

static struct prom_series *raw_find(struct prom_store *s, const char *name,
				    const struct tally_labels *ls, uint64_t h)
{
	struct tally_hnode *p;

	tally_htable_for_each_hash(&s->raw, h, p)
	{
		struct prom_series *ser =
			tally_container_of(p, struct prom_series, raw);

		if (ser->raw_labels == ls && strcmp(ser->raw_name, name) == 0)
			return ser;
	}
	return NULL;
}

static void series_free(struct prom_series *ser)
{
	if (!ser)
		return;
	tally_labels_unref(ser->raw_labels);
	free(ser->raw_name);
	free(ser->lbl);
	free(ser->text.p);
	free(ser->region);
	free(ser->cum);
	free(ser);
}

/*
 * A new series in @f with label text @lbl (copied), registered under the
 * exposed key and, for metric series, the raw key. The caller checked that
 * the exposed key is free.
 */
static struct prom_series *series_new(struct prom_store *s,
				      struct prom_family *f, const char *lbl,
				      uint64_t eh, const char *raw_name,
				      struct tally_labels *raw_labels,
				      uint64_t rh)
{
	struct prom_series *ser;
	bool self = raw_name && prom_series_is_self(raw_name);
	size_t nuser = s->nseries - s->nself;

	/*
	 * A bound on memory and on the scrape's size, whatever the inputs
	 * send (a region name per iteration, a label per request id): the
	 * series already there keep being updated, new ones are refused.
	 * tallyd's own series have room of their own, so that the drop that
	 * says the limit was hit (tally_dropped_total{reason="series_limit"},
	 * itself a new series) is shown, not refused in turn.
	 */
	if (self ? s->nself >= PROM_SELF_SERIES
		 : s->o.max_series && nuser >= s->o.max_series) {
		DROP(s, series_limit, "series_limit");
		if (!s->quiet)
			tally_log(s->inst, LOG_WARNING,
				  "%s{%s}: %zu series already (%s): dropping "
				  "the new series",
				  f->name, lbl, self ? s->nself : nuser,
				  self ? "room for tallyd's own series"
				       : "max_series");
		errno = 0;
		return NULL;
	}
	ser = calloc(1, sizeof(*ser));
	if (!ser)
		goto out_nomem;
	ser->fam = f;
	ser->self = self;
	ser->owner = s->owner;
	ser->yields = s->origin != NULL;
	ser->lbl_len = strlen(lbl);
	ser->lbl = malloc(ser->lbl_len + 1);
	if (!ser->lbl)
		goto out_nomem;
	memcpy(ser->lbl, lbl, ser->lbl_len + 1);
	if (raw_name) {
		ser->raw_name = strdup(raw_name);
		if (!ser->raw_name)
			goto out_nomem;
	}
	if (f->kind != FAM_METRIC) {
		ser->region = calloc(1, sizeof(*ser->region));
		if (!ser->region)
			goto out_nomem;
	}
	if (tally_htable_reserve(&s->exposed) < 0 ||
	    (raw_name && tally_htable_reserve(&s->raw) < 0) ||
	    family_append(f, ser) < 0)
		goto out_nomem;
	ser->exp.hash = eh;
	tally_htable_insert(&s->exposed, &ser->exp);
	if (raw_name) {
		ser->raw_labels = tally_labels_ref(raw_labels);
		ser->raw.hash = rh;
		tally_htable_insert(&s->raw, &ser->raw);
	}
	s->nseries++;
	s->nself += self;
	f->nfirm += !ser->yields;
	return ser;

out_nomem:
	series_free(ser);
	errno = ENOMEM;
	return NULL;
}

static void series_unlink(struct prom_store *s, struct prom_series *ser)
{
	tally_htable_remove(&s->exposed, &ser->exp);
	if (ser->raw_name)
		tally_htable_remove(&s->raw, &ser->raw);
	s->nseries--;
	s->nself -= ser->self;
	ser->fam->nfirm -= !ser->yields;
}

/*
 * Remove family @f and its series at once: an input's records of another
 * type take it over from series that yield (a textfile's).
 */
static void family_evict(struct prom_store *s, struct prom_family *f)
{
	for (size_t i = 0; i < f->n; i++) {
		series_unlink(s, f->v[i]);
		series_free(f->v[i]);
	}
	f->n = f->nsorted = 0;
	for (size_t i = 0; i < s->nfams; i++) {
		if (s->fams[i] == f) {
			memmove(&s->fams[i], &s->fams[i + 1],
				(s->nfams - i - 1) * sizeof(*s->fams));
			s->nfams--;
			break;
		}
	}
	family_remove(s, f);
	s->gen++;
}

/*
 * Label text of a metric record in s->tmp2: sanitized keys, escaped values,
 * no braces. Histograms and summaries add le/quantile themselves, so a
 * label of that name is renamed exported_le/exported_quantile, as
 * Prometheus renames target labels that clash with scraped ones.
 * Return: 0, 1 when two keys end up the same, -1 on ENOMEM.
 */
static int metric_label_text(struct prom_store *s, const struct tally_metric *m,
			     const struct tally_labels *ls)
{
	struct sbuf *b = &s->tmp2, *k = &s->tmp3;
	const char *clash = m->type == TALLY_HISTOGRAM ? "le"
			    : m->type == TALLY_SUMMARY ? "quantile"
						       : NULL;
	size_t n = tally_labels_count(ls);
	bool changed = false;

	b->len = 0;
	k->len = 0;
	sb_put(b, "", 0);
	for (size_t i = 0; i < n; i++) {
		const struct tally_label *l = tally_labels_at(ls, i);
		size_t kl = tally_expo_sanitize_label_name(NULL, 0, l->key);
		size_t off = k->len;

		if (!sb_grow(k, kl + strlen("exported_quantile") + 1))
			return -1;
		tally_expo_sanitize_label_name(k->p + off, kl + 1, l->key);
		k->len += kl;
		if (clash && strcmp(k->p + off, clash) == 0) {
			k->len = off;
			sb_puts(k, "exported_");
			sb_puts(k, clash);
		}
		if (strcmp(k->p + off, l->key) != 0)
			changed = true;
		sb_put_label(b, k->p + off, l->value);
		sb_put(k, "", 1); /* keep the NUL: keys are NUL-separated */
	}
	if (b->err || k->err) {
		b->err = k->err = false;
		return -1;
	}
	/* Raw keys are unique: only changed keys can now be repeated. */
	if (changed) {
		for (const char *x = k->p; x < k->p + k->len;
		     x += strlen(x) + 1)
			for (const char *y = x + strlen(x) + 1;
			     y < k->p + k->len; y += strlen(y) + 1)
				if (strcmp(x, y) == 0)
					return 1;
	}
	return 0;
}

/* Exposed family name of a metric record, in s->tmp. */
static int metric_family_name(struct prom_store *s,
			      const struct tally_metric *m)
{
	struct sbuf *b = &s->tmp;
	size_t n = tally_expo_sanitize_metric_name(NULL, 0, m->name);

	b->len = 0;
	if (!sb_grow(b, n + 6))
		return -1;
	tally_expo_sanitize_metric_name(b->p, n + 1, m->name);
	b->len = n;
	/*
	 * Prometheus convention (and promtool's lint): counters end in _total;
	 * OpenMetrics requires it, and _info on info samples. A name that is
	 * only the suffix gets another, so the family name is not empty.
	 */
	if (m->type == TALLY_COUNTER && !has_suffix(b->p, n, "_total"))
		sb_puts(b, "_total");
	if (m->type == TALLY_INFO && !has_suffix(b->p, n, "_info"))
		sb_puts(b, "_info");
	return b->err ? -1 : 0;
}

static bool warned_eq(const struct tally_lru_node *n, const void *key)
{
	const struct prom_warned *w =
		tally_container_of(n, struct prom_warned, node);
	const struct tally_metric *m = key;

	return w->labels == m->labels && strcmp(w->name, m->name) == 0;
}

/* Remember that @m's series was refused with a warning (best effort). */
static void warned_add(struct prom_store *s, const struct tally_metric *m,
		       uint64_t rh)
{
	size_t len = strlen(m->name) + 1;
	struct prom_warned *w = malloc(sizeof(*w) + len);

	if (!w || tally_lru_reserve(&s->warned) < 0) {
		free(w);
		return;
	}
	if (tally_lru_full(&s->warned)) {
		struct tally_lru_node *o = tally_lru_oldest(&s->warned);
		struct prom_warned *ow =
			tally_container_of(o, struct prom_warned, node);

		tally_lru_remove(&s->warned, o);
		tally_labels_unref(ow->labels);
		free(ow);
	}
	memcpy(w->name, m->name, len);
	w->labels = tally_labels_ref(m->labels);
	tally_lru_insert(&s->warned, &w->node, rh);
}

static void warned_free(struct prom_store *s)
{
	struct tally_lru_node *n;

	while ((n = tally_lru_oldest(&s->warned))) {
		struct prom_warned *w =
			tally_container_of(n, struct prom_warned, node);

		tally_lru_remove(&s->warned, n);
		tally_labels_unref(w->labels);
		free(w);
	}
	tally_lru_fini(&s->warned);
}

static struct prom_series *metric_series_make(struct prom_store *s,
					      const struct tally_metric *m,
					      uint64_t rh);

/*
 * The series of @m, made. A series refused (a collision, a conflict, the
 * limit) is refused again with every record (each interval, for
 * aggregate's): each refusal is counted, but logged for the first only.
 * Return: as metric_series_make().
 */
static struct prom_series *metric_series_new(struct prom_store *s,
					     const struct tally_metric *m,
					     uint64_t rh)
{
	struct prom_series *ser;
	int err;

	s->quiet = tally_lru_find(&s->warned, rh, warned_eq, m) != NULL;
	ser = metric_series_make(s, m, rh);
	err = errno;
	if (!ser && !err && !s->quiet)
		warned_add(s, m, rh);
	s->quiet = false;
	errno = err;
	return ser;
}

static struct prom_series *metric_series_make(struct prom_store *s,
					      const struct tally_metric *m,
					      uint64_t rh)
{
	struct prom_family *f;
	uint64_t fh, eh;
	int rc;

	if (metric_family_name(s, m) < 0)
		goto out_nomem;
	fh = tally_hash_str(TALLY_HASH_SEED, s->tmp.p);
	f = family_find(s, s->tmp.p, fh);
	/* an input's own family wins over one only files have written */
	if (f && f->kind == FAM_METRIC && f->type != m->type && !s->origin &&
	    !f->nfirm) {
		family_evict(s, f);
		f = NULL;
	}
	if (f && (f->type != m->type || f->kind != FAM_METRIC)) {
		DROP(s, type_conflict, "type_conflict");
		if (!s->quiet)
			tally_log(s->inst, LOG_WARNING,
				  "%s%s%s: exposed as %s already, dropping its "
				  "%s samples",
				  s->origin ? s->origin : "",
				  s->origin ? ": " : "", m->name,
				  f->kind == FAM_METRIC ? type_name[f->type]
							: "span series",
				  type_name[m->type]);
		errno = 0;
		return NULL;
	}
	/* the static labels, under the record's own: once per new series */
	if (tally_labels_count(s->o.labels)) {
		struct tally_labels *ls =
			tally_labels_merge(m->labels, s->o.labels);

		if (!ls)
			goto out_nomem;
		rc = metric_label_text(s, m, ls);
		tally_labels_unref(ls);
	} else {
		rc = metric_label_text(s, m, m->labels);
	}
	if (rc < 0)
		goto out_nomem;
	if (rc > 0) {
		DROP(s, label_collision, "label_collision");
		if (!s->quiet)
			tally_log(s->inst, LOG_WARNING,
				  "%s: two label names become the same once "
				  "sanitized: dropping the series",
				  m->name);
		errno = 0;
		return NULL;
	}
	if (!f) {
		f = family_new(s, s->tmp.p, m->type, FAM_METRIC, m->help,
			       m->name);
		if (!f)
			return NULL; /* errno set: ENOMEM or 0 (counted) */
	}
	eh = exposed_hash(f, s->tmp2.p);
	if (exposed_find(s, f, s->tmp2.p, eh)) {
		DROP(s, series_collision, "series_collision");
		if (!s->quiet)
			tally_log(s->inst, LOG_WARNING,
				  "%s{%s}: exposed already by another metric "
				  "whose name or labels sanitize the same: "
				  "dropping it",
				  f->name, s->tmp2.p);
		errno = 0;
		return NULL;
	}
	/* NULL with errno = ENOMEM, or 0 when over max_series (counted) */
	return series_new(s, f, s->tmp2.p, eh, m->name, m->labels, rh);

out_nomem:
	errno = ENOMEM;
	return NULL;
}

/* name + suffix + {lbl[,extra]} + ' ' into @b */
static void put_sample_prefix(struct sbuf *b, const struct prom_series *ser,
			      const char *suffix, const char *ekey,
			      const char *evalue)
{
	const struct prom_family *f = ser->fam;

	sb_put(b, f->name, f->name_len);
	sb_puts(b, suffix);
	if (ser->lbl_len || ekey) {
		sb_put(b, "{", 1);
		sb_put(b, ser->lbl, ser->lbl_len);
		if (ekey) {
			if (ser->lbl_len)
				sb_put(b, ",", 1);
			sb_puts(b, ekey);
			sb_put(b, "=\"", 2);
			sb_puts(b, evalue);
			sb_put(b, "\"", 1);
		}
		sb_put(b, "}", 1);
	}
	sb_put(b, " ", 1);
}

static bool histogram_valid(const struct tally_metric *m)
{
	const struct tally_bucket *bk = m->buckets;

	for (size_t i = 0; i < m->n; i++) {
		if (isnan(bk[i].le))
			return false;
		if (i &&
		    (bk[i].le <= bk[i - 1].le || bk[i].count < bk[i - 1].count))
			return false;
	}
	if (m->n && isinf(bk[m->n - 1].le) && bk[m->n - 1].le > 0)
		return bk[m->n - 1].count == m->count;
	return !m->n || bk[m->n - 1].count <= m->count;
}

/* Rebuild the sample lines of @ser from @m: 0, 1 if dropped, -1 ENOMEM. */
static int series_set(struct prom_store *s, struct prom_series *ser,
		      const struct tally_metric *m)
{
	struct sbuf *b = &ser->text;
	char num[TALLY_EXPO_DOUBLE_MAX];

	switch (m->type) {
	case TALLY_COUNTER:
	case TALLY_GAUGE:
	case TALLY_INFO:
	case TALLY_UNTYPED:
		if (!ser->prefix_len) {
			b->len = 0;
			put_sample_prefix(b, ser, "", NULL, NULL);
			ser->prefix_len = b->len;
		}
		b->len = ser->prefix_len;
		sb_putd(b, m->value);
		sb_put(b, "\n", 1);
		break;
	case TALLY_HISTOGRAM:
		if (!histogram_valid(m)) {
			DROP(s, bad_histogram, "bad_histogram");
			return 1;
		}
		b->len = 0;
		for (size_t i = 0; i < m->n; i++) {
			tally_expo_format_double(num, m->buckets[i].le);
			put_sample_prefix(b, ser, "_bucket", "le", num);
			sb_putu(b, m->buckets[i].count);
			sb_put(b, "\n", 1);
		}
		if (!m->n || !isinf(m->buckets[m->n - 1].le)) {
			put_sample_prefix(b, ser, "_bucket", "le", "+Inf");
			sb_putu(b, m->count);
			sb_put(b, "\n", 1);
		}
		goto sum_count;
	case TALLY_SUMMARY:
		b->len = 0;
		for (size_t i = 0; i < m->n; i++) {
			tally_expo_format_double(num, m->quantiles[i].q);
			put_sample_prefix(b, ser, "", "quantile", num);
			sb_putd(b, m->quantiles[i].value);
			sb_put(b, "\n", 1);
		}
	sum_count:
		put_sample_prefix(b, ser, "_sum", NULL, NULL);
		sb_putd(b, m->sum);
		sb_put(b, "\n", 1);
		put_sample_prefix(b, ser, "_count", NULL, NULL);
		sb_putu(b, m->count);
		sb_put(b, "\n", 1);
		break;
	}
	if (b->err) {
		/* Keep the series, empty, until memory comes back. */
		b->err = false;
		b->len = 0;
		ser->prefix_len = 0;
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

/*
 * A delta (statsd counter increment, gauge adjustment) as the cumulative
 * sample it makes of @ser (NULL: a new series, from 0) in *@acc: a counter
 * adds value / sample_rate, a gauge its value. Return: 0, or 1 if dropped
 * (a counter cannot go down; the core drops other forms before write()).
 */
static int delta_accumulate(struct prom_store *s, const struct prom_series *ser,
			    const struct tally_metric *m,
			    struct tally_metric *acc)
{
	double v = m->type == TALLY_COUNTER ? m->value * tally_metric_weight(m)
					    : m->value;

	if (m->form != TALLY_FORM_DELTA ||
	    (m->type != TALLY_COUNTER && m->type != TALLY_GAUGE) ||
	    (m->type == TALLY_COUNTER && v < 0)) {
		DROP(s, bad_delta, "bad_delta");
		return 1;
	}
	/* an increment that overflows (1e308 at @0.1), or the total */
	if (!isfinite(v) || !isfinite((ser ? ser->value : 0) + v)) {
		DROP(s, not_finite, "not_finite");
		return 1;
	}
	*acc = *m;
	acc->form = TALLY_FORM_CUMULATIVE;
	acc->value = (ser ? ser->value : 0) + v;
	return 0;
}

/*
 * An interval record (the aggregate filter's) as the cumulative sample it
 * makes of @ser (NULL: a new series, from 0) in *@acc: a counter adds the
 * interval's total, a gauge is its level, a histogram adds the interval's
 * bucket counts, sum and count, a summary adds sum and count and shows the
 * interval's quantiles (they do not add up). The histogram's buckets are
 * built in s->ivb. Return: 0, 1 if dropped (a counter cannot go down,
 * buckets that changed bounds), -1/ENOMEM.
 */
static int interval_accumulate(struct prom_store *s,
			       const struct prom_series *ser,
			       const struct tally_metric *m,
			       struct tally_metric *acc)
{
	const struct tally_interval *iv = m->interval;
	uint64_t n = (uint64_t)llround(iv->count);

	*acc = *m;
	acc->form = TALLY_FORM_CUMULATIVE;
	acc->interval = NULL;
	switch (m->type) {
	case TALLY_COUNTER:
		/* an interval's sum that overflowed, or the total */
		if (!isfinite(m->value) ||
		    !isfinite((ser ? ser->value : 0) + m->value)) {
			DROP(s, not_finite, "not_finite");
			return 1;
		}
		if (m->value < 0) {
			DROP(s, bad_delta, "bad_delta");
			return 1;
		}
		acc->value = (ser ? ser->value : 0) + m->value;
		return 0;
	case TALLY_GAUGE:
		return 0;
	case TALLY_SUMMARY:
		acc->n = iv->nquantiles;
		acc->quantiles = iv->quantiles;
		break;
	case TALLY_HISTOGRAM:
		if (ser && ser->ncum != iv->nbuckets) {
			DROP(s, bad_histogram, "bad_histogram");
			return 1;
		}
		if (iv->nbuckets > s->nivb) {
			struct tally_bucket *v =
				realloc(s->ivb, iv->nbuckets * sizeof(*v));

			if (!v) {
				errno = ENOMEM;
				return -1;
			}
			s->ivb = v;
			s->nivb = iv->nbuckets;
		}
		for (size_t i = 0; i < iv->nbuckets; i++) {
			if (ser && ser->cum[i].le != iv->buckets[i].le) {
				DROP(s, bad_histogram, "bad_histogram");
				return 1;
			}
			s->ivb[i] = iv->buckets[i];
			s->ivb[i].count += ser ? ser->cum[i].count : 0;
		}
		/* the +Inf bucket is the count, whatever the rounding */
		if (iv->nbuckets)
			n = iv->buckets[iv->nbuckets - 1].count;
		acc->n = iv->nbuckets;
		acc->buckets = s->ivb;
		break;
	default:
		DROP(s, bad_delta, "bad_delta");
		return 1;
	}
	acc->count = (ser ? ser->count : 0) + n;
	/*
	 * Sampled observations (statsd @rate) weigh 1/rate each, so the
	 * interval's count need not be whole; Prometheus's is. The sum is
	 * scaled with the rounding, so that _sum / _count stays the
	 * interval's mean.
	 */
	acc->sum = (ser ? ser->sum : 0) +
		   (iv->count > 0 && (double)n != iv->count
			    ? iv->sum * ((double)n / iv->count)
			    : iv->sum);
	return 0;
}

/* Keep the totals of a histogram or summary made of interval records. */
static int interval_keep(struct prom_series *ser, const struct tally_metric *m)
{
	ser->count = m->count;
	ser->sum = m->sum;
	if (m->type != TALLY_HISTOGRAM)
		return 0;
	if (ser->ncum != m->n) {
		struct tally_bucket *v = realloc(ser->cum, m->n * sizeof(*v));

		if (!v && m->n) {
			errno = ENOMEM;
			return -1;
		}
		ser->cum = v;
		ser->ncum = m->n;
	}
	if (m->n)
		memcpy(ser->cum, m->buckets, m->n * sizeof(*ser->cum));
	return 0;
}

/*
 * A record of input s->owner for @ser, a series of another input or of
 * this one yielding otherwise. A record that yields (s->origin: a
 * textfile's) never takes over another input's series: it is dropped,
 * counted and logged once. An input's own record takes over a series that
 * yields, fresh (*@fresh: accumulated from 0), or with its family when
 * the type differs and no input's own series is in it (*@serp NULL).
 * Between two inputs' own records the last one is shown, as before.
 * Return: 1 if the record is dropped, else 0.
 */
static int series_claim(struct prom_store *s, struct prom_series **serp,
			const struct tally_metric *m, uint64_t rh, bool *fresh)
{
	struct prom_series *ser = *serp;

	if (s->origin && ser->owner != s->owner) {
		DROP(s, source_collision, "source_collision");
		if (!tally_lru_find(&s->warned, rh, warned_eq, m)) {
			tally_log(s->inst, LOG_WARNING,
				  "%s: %s{%s}: input %s exports this series: "
				  "the one read from the file is dropped "
				  "(logged once)",
				  s->origin, m->name, ser->lbl, ser->owner);
			warned_add(s, m, rh);
		}
		return 1;
	}
	if (!s->origin && ser->yields) {
		if (ser->fam->type != m->type) {
			if (!ser->fam->nfirm) {
				family_evict(s, ser->fam);
				*serp = NULL;
			}
			/* else the caller drops it: type_conflict */
			return 0;
		}
		ser->yields = false;
		ser->fam->nfirm++;
		*fresh = ser->owner != s->owner;
	} else if (s->origin && !ser->yields) {
		ser->yields = true; /* the same input, reading a file now */
		ser->fam->nfirm--;
	}
	ser->owner = s->owner;
	return 0;
}

/*
 * A record's HELP text @help for family @f: the first one, or a new one
 * (a textfile's HELP line edited), compared once per batch and family, so
 * a batch costs one strcmp per family, not per series. A file's text
 * (s->origin) does not replace an input's own. Best effort: without
 * memory the old text stays.
 */
static void family_help(struct prom_store *s, struct prom_family *f,
			const char *help)
{
	char *copy;

	f->help_gen = s->gen;
	if (f->help && (strcmp(f->help, help) == 0 || (s->origin && f->nfirm)))
		return;
	copy = strdup(help);
	if (!copy || family_headers(f, help) < 0) {
		free(copy);
		return;
	}
	free(f->help);
	f->help = copy;
}

static int apply_metric(struct prom_store *s, const struct tally_metric *m,
			int64_t deadline)
{
	uint64_t rh = raw_hash(m->name, m->labels);
	struct prom_series *ser = raw_find(s, m->name, m->labels, rh);
	const struct prom_series *base;
	struct tally_metric acc;
	int rc;
	bool interval = m->form == TALLY_FORM_INTERVAL && m->interval;
	bool fresh = false;

	if (m->type < TALLY_COUNTER || m->type > TALLY_UNTYPED)
		return 0;
	/* one pointer compare per record: different inputs are rare */
	if (ser && (ser->owner != s->owner || ser->yields != !!s->origin) &&
	    series_claim(s, &ser, m, rh, &fresh))
		return 0;
	base = fresh ? NULL : ser;
	if (ser && interval && ser->fam->type != m->type) {
		DROP(s, type_conflict, "type_conflict");
		return 0;
	}
	if (interval) {
		rc = interval_accumulate(s, base, m, &acc);
		if (rc)
			return rc < 0 ? -1 : 0;
		m = &acc;
	} else if (m->form != TALLY_FORM_CUMULATIVE) {
		if (delta_accumulate(s, base, m, &acc))
			return 0;
		m = &acc;
	}
	if (!ser) {
		ser = metric_series_new(s, m, rh);
		if (!ser)
			return errno == ENOMEM ? -1 : 0;
	} else if (ser->fam->type != m->type) {
		DROP(s, type_conflict, "type_conflict");
		return 0;
	}
	if (m->help && *m->help && ser->fam->help_gen != s->gen)
		family_help(s, ser->fam, m->help);
	rc = series_set(s, ser, m);
	if (rc == 0) {
		ser->deadline = deadline;
		ser->value = m->value;
		if (interval && interval_keep(ser, m) < 0)
			rc = -1;
	}
	return rc < 0 ? -1 : 0;
}

/* ---- spans --------------------------------------------------------------- */

static const char *span_jobid(struct prom_store *s, const struct tally_span *sp)
{
	const char *j = tally_labels_get(sp->attrs, "jobid");

	return j ? j : s->jobid;
}

/* The region series of @sp in span family @f, created if needed. */
/* Labels of a region series itself, at most: depth, jobid, rank, region,
 * trace (rmsjob_annotations: jobid, marker, traceid) */
#define REGION_OWN_LABELS 5

/*
 * A region series' own labels of @sp into @own (REGION_OWN_LABELS, sorted
 * by key), numbers formatted into @depth and @rank (24 bytes each): depth
 * (when asked), the span's own jobid (a job's collector gives every span
 * one, as metrics carry theirs; no option default here), rank, region,
 * trace. Return: how many.
 */
static size_t region_own_labels(const struct prom_store *s,
				const struct tally_span *sp,
				struct tally_label *own, char *depth, char *rank)
{
	const char *jobid = tally_labels_get(sp->attrs, "jobid");
	size_t n = 0;

	if (s->o.depth_label) {
		snprintf(depth, 24, "%u", sp->depth);
		own[n++] = (struct tally_label){ "depth", depth };
	}
	if (jobid && *jobid)
		own[n++] = (struct tally_label){ "jobid", jobid };
	if (sp->src.rank >= 0) {
		snprintf(rank, 24, "%d", sp->src.rank);
		own[n++] = (struct tally_label){ "rank", rank };
	}
	own[n++] = (struct tally_label){ "region", sp->name };
	own[n++] = (struct tally_label){ "trace", sp->trace };
	return n;
}

static struct prom_series *region_get(struct prom_store *s,
				      struct prom_family *f,
				      const struct tally_span *sp)
{
	struct sbuf *b = &s->tmp2;
	struct prom_series *ser;
	struct tally_label own[REGION_OWN_LABELS]; /* sorted by key */
	char depth[24], rank[24];
	size_t n = 0;
	uint64_t eh;

	b->len = 0;
	sb_put(b, "", 0);
	if (f->kind == FAM_SPAN_ANNOT) {
		const char *jobid = span_jobid(s, sp);

		if (jobid && *jobid)
			own[n++] = (struct tally_label){ "jobid", jobid };
		own[n++] = (struct tally_label){ "marker", sp->name };
		own[n++] = (struct tally_label){ "traceid", sp->trace };
	} else {
		n = region_own_labels(s, sp, own, depth, rank);
	}
	/* the static labels, where the region's own keys leave room */
	n = tally_label_merge(own, n, tally_labels_pairs(s->o.labels),
			      tally_labels_count(s->o.labels), s->lbuf);
	for (size_t i = 0; i < n; i++)
		sb_put_label(b, s->lbuf[i].key, s->lbuf[i].value);
	if (b->err) {
		b->err = false;
		errno = ENOMEM;
		return NULL;
	}
	eh = exposed_hash(f, b->p);
	ser = exposed_find(s, f, b->p, eh);
	if (!ser)
		ser = series_new(s, f, b->p, eh, NULL, NULL, 0);
	return ser;
}

static uint64_t open_hash(const struct tally_span *sp, const char *host)
{
	uint64_t h = tally_hash_str(TALLY_HASH_SEED, sp->trace);

	h = tally_hash_str(h, host);
	h ^= tally_hash_mix(sp->span_id);
	return tally_hash_mix(
		h ^ ((uint64_t)sp->src.pid << 32 | (uint32_t)sp->src.rank));
}

static struct prom_open *open_find(struct prom_store *s,
				   const struct tally_span *sp, uint64_t h)
{
	struct tally_hnode *p;

	tally_htable_for_each_hash(&s->open, h, p)
	{
		struct prom_open *op =
			tally_container_of(p, struct prom_open, node);

		if (op->span_id == sp->span_id && op->pid == sp->src.pid &&
		    op->rank == sp->src.rank &&
		    strcmp(op->key, sp->trace) == 0 &&
		    strcmp(op->key + strlen(op->key) + 1, sp->src.host) == 0)
			return op;
	}
	return NULL;
}

/* Add (@sign 1) or remove (@sign -1) an open span's begin from @g's sums. */
static void region_open(struct prom_store *s, struct prom_region *g,
			int64_t begin, int sign)
{
	int64_t sec, ns;

	ns_split(begin - s->epoch_ns, &sec, &ns);
	g->n_open += (unsigned)sign;
	s->spans_open += (uint64_t)(int64_t)sign;
	g->begin_s += sign * sec;
	g->begin_ns += sign * ns;
}

/* Count an ended span's time: end - begin, 0 if it ended before it began. */
static void region_close(struct prom_region *g, int64_t begin, int64_t end)
{
	int64_t d = end > begin ? end - begin : 0;

	g->closed_ns =
		g->closed_ns > INT64_MAX - d ? INT64_MAX : g->closed_ns + d;
}

/* Link @op at the end of the list whose tail pointer is *@tail. */
static void open_link(struct prom_open ***tail, struct prom_open *op)
{
	op->next = NULL;
	op->pprev = *tail;
	**tail = op;
	*tail = &op->next;
}

/* Unlink @op from its list, whose tail pointer is *@tail. */
static void open_unlink(struct prom_open ***tail, struct prom_open *op)
{
	*op->pprev = op->next;
	if (op->next)
		op->next->pprev = op->pprev;
	else
		*tail = op->pprev;
	op->pprev = NULL;
}

/* The watched process of span @sp, made if new; NULL when not watched. */
static struct prom_proc *proc_get(struct prom_store *s,
				  const struct tally_span *sp, const char *host,
				  int64_t ts)
{
	uint64_t h = tally_hash_mix(sp->src.pid);
	struct prom_proc *pr;
	struct tally_hnode *p;

	/* kill(0) is our process group, a pid above INT32_MAX negative */
	if (!sp->src.pid || sp->src.pid > INT32_MAX ||
	    strcmp(host, s->local_host))
		return NULL;
	tally_htable_for_each_hash(&s->procs, h, p)
	{
		pr = tally_container_of(p, struct prom_proc, node);
		if (pr->pid != sp->src.pid)
			continue;
		if (ts > pr->alive_ns)
			pr->alive_ns = ts;
		return pr;
	}
	pr = calloc(1, sizeof(*pr));
	if (!pr || tally_htable_reserve(&s->procs) < 0) {
		free(pr); /* unwatched: its input still ends its spans */
		return NULL;
	}
	pr->pid = sp->src.pid;
	pr->alive_ns = ts; /* it sent this */
	pr->node.hash = h;
	tally_htable_insert(&s->procs, &pr->node);
	return pr;
}

/*
 * How long a region series stays after its last span ended: the expiry
 * of event-driven series, not a few intervals of whatever input carried
 * the spans (a periodic input's batches, a flatten filter's tick), and at
 * least the grace period its active gauge shows 0 for.
 */
static int64_t span_linger(const struct prom_store *s)
{
	int64_t linger = s->o.expire_ns ? s->o.expire_ns : s->o.expire_event_ns;

	return linger < s->o.grace_ns ? s->o.grace_ns : linger;
}

/* A region saw an end at @now: active no more once none is open. */
static void region_ended(struct prom_store *s, struct prom_series *r,
			 int64_t now, int64_t linger)
{
	r->region->last_end = now;
	if (!r->region->n_open)
		r->deadline =
			now + (r->fam->kind == FAM_SPAN_ANNOT ? s->o.grace_ns
							      : linger);
}

/*
 * The process of @pr is gone: its open spans stop counting at the last
 * time it was known to run (their begin if later), as if they had ended
 * there. They stay known as frozen until their end comes (it corrects the
 * time) or they expire.
 */
static void proc_gone(struct prom_store *s, struct prom_proc *pr, int64_t now)
{
	int64_t linger = span_linger(s);

	while (pr->spans) {
		struct prom_open *op = pr->spans;
		int64_t t = pr->alive_ns > op->begin_ns ? pr->alive_ns
							: op->begin_ns;

		pr->spans = op->next;
		op->proc = NULL;
		op->frozen = true;
		op->frozen_ns = t;
		op->frozen_at = now;
		open_link(&s->frozen_tail, op);
		for (int i = 0; i < 2; i++) {
			if (!op->r[i])
				continue;
			region_open(s, op->r[i]->region, op->begin_ns, -1);
			region_close(op->r[i]->region, op->begin_ns, t);
			region_ended(s, op->r[i], now, linger);
		}
		s->st.span_process_gone++;
	}
	tally_htable_remove(&s->procs, &pr->node);
	free(pr);
}

static void open_free(struct prom_store *s, struct prom_open *op)
{
	tally_htable_remove(&s->open, &op->node);
	free(op);
}

/*
 * Before a scrape: ask every watched process whether it runs, freeze the
 * spans of those gone, and forget frozen spans whose end never came
 * within the lifetime of a region.
 */
static void procs_check(struct prom_store *s, int64_t now, int64_t real)
{
	int64_t linger = span_linger(s);

	struct tally_hnode *p, *next;
	size_t i;

	tally_htable_for_each_safe(&s->procs, i, p, next) {
		struct prom_proc *pr =
			tally_container_of(p, struct prom_proc, node);

		if (s->o.pid_alive(pr->pid))
			pr->alive_ns = real;
		else
			proc_gone(s, pr, now);
	}
	while (s->frozen && now - s->frozen->frozen_at > linger) {
		struct prom_open *op = s->frozen;

		open_unlink(&s->frozen_tail, op);
		open_free(s, op);
	}
}

/* A span counted up to @from ended at @to: count the difference. */
static void region_move_end(struct prom_region *g, int64_t from, int64_t to)
{
	if (to >= from) {
		region_close(g, from, to);
		return;
	}
	/* within int64_t: both are ts_clamp()ed */
	g->closed_ns =
		g->closed_ns > from - to ? g->closed_ns - (from - to) : 0;
}

/*
 * @linger: how long a region series stays after its last span ended. The
 * active gauge shows 0 for the grace period in that time.
 */
/*
 * Add span attribute @v (numeric, >= 0) of @sp, ending, to its region's
 * tally_trace_region_KEY_total: a counter delta through the metric path,
 * with the labels a region series has (static ones added there).
 * Return: 0, or -1 with errno = ENOMEM.
 */
static int region_attr(struct prom_store *s, const struct tally_span *sp,
		       const struct tally_attr *v, int64_t deadline)
{
	struct tally_label own[REGION_OWN_LABELS];
	struct tally_metric m = {
		.type = TALLY_COUNTER,
		.form = TALLY_FORM_DELTA,
		.value = v->type == TALLY_ATTR_T_INT ? (double)v->i : v->d,
		.sample_rate = 1,
	};
	char depth[24], rank[24], name[256];
	size_t n;
	int rc;

	if (!(m.value >= 0))
		return 0; /* a counter does not go down */
	n = region_own_labels(s, sp, own, depth, rank);
	if ((size_t)snprintf(name, sizeof(name), "tally_trace_region_%s_total",
			     v->key) >= sizeof(name))
		return 0; /* no such key in the attributes option */
	m.name = name;
	m.labels = tally_labels_new(own, n);
	if (!m.labels)
		return -1;
	rc = apply_metric(s, &m, deadline);
	tally_labels_unref(m.labels);
	return rc;
}

static int apply_span(struct prom_store *s, const struct tally_record *rec,
		      int64_t now, int64_t linger, int64_t deadline)
{
	const struct tally_span *sp = &rec->span;
	struct prom_family *fams[2] = { s->span_active, s->span_annot };
	const char *host = sp->src.host ? sp->src.host : "";
	uint64_t h = open_hash(sp, host);
	struct prom_open *op;
	struct tally_span key = *sp;
	struct prom_series *r[2] = { NULL, NULL };
	int64_t ts = ts_clamp(rec->ts_ns), begin;
	bool had_begin;

	if (s->o.span_metrics == PROM_SPANS_NONE)
		return 0;
	key.src.host = host;
	op = open_find(s, &key, h);
	if (sp->phase == TALLY_SPAN_BEGIN) {
		size_t tl = strlen(sp->trace), hl = strlen(host);

		if (op) {
			DROP(s, span_duplicate, "span_duplicate");
			return 0;
		}
		if (s->open.n >= s->o.max_open_spans) {
			DROP(s, span_open_limit, "span_open_limit");
			return 0;
		}
		for (int i = 0; i < 2; i++)
			if (fams[i] && !(r[i] = region_get(s, fams[i], sp)))
				return errno == ENOMEM ? -1 : 0;
		op = malloc(sizeof(*op) + tl + hl + 2);
		if (!op || tally_htable_reserve(&s->open) < 0) {
			free(op);
			errno = ENOMEM;
			return -1;
		}
		memset(op, 0, sizeof(*op));
		op->span_id = sp->span_id;
		op->pid = sp->src.pid;
		op->rank = sp->src.rank;
		op->begin_ns = ts;
		memcpy(op->key, sp->trace, tl + 1);
		memcpy(op->key + tl + 1, host, hl + 1);
		op->node.hash = h;
		tally_htable_insert(&s->open, &op->node);
		op->proc = proc_get(s, sp, host, ts);
		if (op->proc) {
			op->next = op->proc->spans;
			if (op->next)
				op->next->pprev = &op->next;
			op->pprev = &op->proc->spans;
			op->proc->spans = op;
		}
		for (int i = 0; i < 2; i++) {
			op->r[i] = r[i];
			if (!r[i])
				continue;
			region_open(s, r[i]->region, ts, 1);
			r[i]->deadline = INT64_MAX;
		}
		return 0;
	}
	if (sp->phase != TALLY_SPAN_END)
		return 0;
	if (op && op->frozen) {
		/* counted to frozen_ns already: correct to its own end */
		for (int i = 0; i < 2; i++) {
			if (op->r[i])
				region_move_end(op->r[i]->region, op->frozen_ns,
						ts);
		}
		open_unlink(&s->frozen_tail, op);
		open_free(s, op);
		return 0;
	}
	had_begin = op != NULL;
	if (op) {
		begin = op->begin_ns;
		r[0] = op->r[0];
		r[1] = op->r[1];
		if (op->proc) {
			if (ts > op->proc->alive_ns)
				op->proc->alive_ns = ts;
			*op->pprev = op->next;
			if (op->next)
				op->next->pprev = op->pprev;
			if (!op->proc->spans) {
				tally_htable_remove(&s->procs, &op->proc->node);
				free(op->proc);
			}
		}
		open_free(s, op);
	} else {
		/* An end whose begin we never saw: its own begin_ns if known
		 * (0: unknown, no time counted). */
		begin = ts_clamp(sp->begin_ns);
		for (int i = 0; i < 2; i++)
			if (fams[i] && !(r[i] = region_get(s, fams[i], sp)))
				return errno == ENOMEM ? -1 : 0;
	}
	for (int i = 0; i < 2; i++) {
		struct prom_region *g;

		if (!r[i])
			continue;
		g = r[i]->region;
		if (had_begin)
			region_open(s, g, begin, -1);
		if (had_begin || begin > 0)
			region_close(g, begin, ts);
		region_ended(s, r[i], now, linger);
	}
	for (uint32_t i = 0; s->attrs.n && i < sp->nvalues; i++) {
		const struct tally_attr *v = &sp->values[i];

		if ((v->type == TALLY_ATTR_T_INT ||
		     v->type == TALLY_ATTR_T_DOUBLE) &&
		    tally_strlist_contains(&s->attrs, v->key) &&
		    region_attr(s, sp, v, deadline) < 0)
			return -1;
	}
	return 0;
}

/* ---- store --------------------------------------------------------------- */

struct prom_store *prom_store_new(const struct prom_store_opts *o,
				  struct tally_instance *inst)
{
	struct prom_store *s = calloc(1, sizeof(*s));
	enum prom_span_metrics sm = o->span_metrics;

	if (!s)
		goto out_nomem;
	s->o = *o;
	s->o.labels = NULL; /* referenced below */
	s->inst = inst;
	s->epoch_ns = ts_clamp(tally_now_ns());
	s->frozen_tail = &s->frozen;
	tally_lru_init(&s->warned, PROM_WARNED_MAX);
	if (!s->o.pid_alive)
		s->o.pid_alive = tally_pid_alive;
	if (o->local_host) {
		s->local_host = strdup(o->local_host);
	} else {
		char host[HOST_NAME_MAX + 1] = "";

		/* as zmq_trace names this host in spans without one */
		if (gethostname(host, sizeof(host) - 1) < 0 || !host[0])
			strcpy(host, "localhost");
		s->local_host = strdup(host);
	}
	if (!s->local_host)
		goto out_nomem;
	s->o.local_host = NULL;
	if (!s->o.max_open_spans)
		s->o.max_open_spans = 100000;
	if (s->o.max_open_spans > PROM_MAX_OPEN_SPANS)
		s->o.max_open_spans = PROM_MAX_OPEN_SPANS;
	if (o->jobid && *o->jobid) {
		s->jobid = strdup(o->jobid);
		if (!s->jobid)
			goto out_nomem;
	}
	s->o.jobid = NULL;
	s->o.attributes = NULL;
	if (o->attributes && o->attributes->n) {
		s->attrs.v = calloc(o->attributes->n, sizeof(*s->attrs.v));
		if (!s->attrs.v)
			goto out_nomem;
		for (; s->attrs.n < o->attributes->n; s->attrs.n++) {
			s->attrs.v[s->attrs.n] =
				strdup(o->attributes->v[s->attrs.n]);
			if (!s->attrs.v[s->attrs.n])
				goto out_nomem;
		}
	}
	s->o.labels =
		tally_labels_ref(o->labels ? o->labels : tally_labels_empty());
	s->lbuf = malloc((REGION_OWN_LABELS + tally_labels_count(o->labels)) *
			 sizeof(*s->lbuf));
	if (!s->lbuf)
		goto out_nomem;
	if (sm == PROM_SPANS_TALLY || sm == PROM_SPANS_BOTH) {
		s->span_active = family_new(
			s, "tally_trace_region_active", TALLY_GAUGE,
			FAM_SPAN_ACTIVE,
			"Whether a traced region is open (1), or ended within "
			"the grace period (0)",
			NULL);
		s->span_seconds =
			s->span_active
				? family_new(s,
					     "tally_trace_region_seconds_total",
					     TALLY_COUNTER, FAM_SPAN_SECONDS,
					     "Time spent in a traced region, "
					     "including spans still "
					     "open",
					     NULL)
				: NULL;
		if (!s->span_seconds)
			goto out_nomem;
		s->span_seconds->alias = s->span_active;
	}
	if (sm == PROM_SPANS_OMNISTAT || sm == PROM_SPANS_BOTH) {
		s->span_annot = family_new(
			s, "rmsjob_annotations", TALLY_GAUGE, FAM_SPAN_ANNOT,
			"Omnistat trace annotation: 1 while the marker's "
			"region "
			"is open, 0 for a grace period after it ends",
			NULL);
		if (!s->span_annot)
			goto out_nomem;
	}
	return s;

out_nomem:
	prom_store_free(s);
	errno = ENOMEM;
	return NULL;
}

void prom_store_free(struct prom_store *s)
{
	struct tally_hnode *p, *next;
	size_t bkt;

	if (!s)
		return;
	for (size_t i = 0; i < s->nfams; i++) {
		struct prom_family *f = s->fams[i];

		for (size_t j = 0; j < f->n; j++)
			series_free(f->v[j]);
		family_free(f);
	}
	tally_htable_for_each_safe(&s->open, bkt, p, next)
		free(tally_container_of(p, struct prom_open, node));
	tally_htable_for_each_safe(&s->procs, bkt, p, next)
		free(tally_container_of(p, struct prom_proc, node));
	tally_htable_fini(&s->open);
	tally_htable_fini(&s->procs);
	tally_htable_fini(&s->families);
	tally_htable_fini(&s->reserved);
	tally_htable_fini(&s->raw);
	tally_htable_fini(&s->exposed);
	warned_free(s);
	for (size_t i = 0; i < s->nowners; i++)
		free(s->owners[i]);
	free(s->owners);
	free(s->local_host);
	free(s->fams);
	free(s->jobid);
	free(s->lbuf);
	free(s->ivb);
	for (size_t i = 0; i < s->attrs.n; i++)
		free(s->attrs.v[i]);
	free(s->attrs.v);
	tally_labels_unref(s->o.labels);
	free(s->tmp.p);
	free(s->tmp2.p);
	free(s->tmp3.p);
	free(s);
}

/*
 * Input name @src interned in the store, so that series compare owners by
 * pointer; NULL on ENOMEM (ownership is then not checked for the batch).
 * The names are few (one per input instance ever configured).
 */
static const char *owner_intern(struct prom_store *s, const char *src)
{
	char **v, *copy;

	for (size_t i = 0; i < s->nowners; i++)
		if (strcmp(s->owners[i], src) == 0)
			return s->owners[i];
	v = realloc(s->owners, (s->nowners + 1) * sizeof(*v));
	if (!v)
		return NULL;
	s->owners = v;
	copy = strdup(src);
	if (!copy)
		return NULL;
	s->owners[s->nowners++] = copy;
	return copy;
}

int prom_store_apply(struct prom_store *s, const struct tally_batch *b,
		     int64_t now_ns)
{
	size_t n = tally_batch_count(b);
	double iv = tally_batch_interval(b);
	int64_t expire = s->o.expire_ns;
	int64_t linger = span_linger(s);
	int nomem = 0;

	if (!expire)
		expire = iv > 0 ? (int64_t)(iv * s->o.expire_factor * 1e9)
				: s->o.expire_event_ns;
	if (n)
		s->gen++;
	s->owner = n ? owner_intern(s, tally_batch_source(b)) : NULL;
	for (size_t i = 0; i < n; i++) {
		const struct tally_record *rec = tally_batch_at(b, i);
		int rc = 0;

		s->origin = s->owner ? tally_batch_origin(b, i) : NULL;
		if (rec->kind == TALLY_REC_METRIC)
			rc = apply_metric(s, &rec->metric, now_ns + expire);
		else if (rec->kind == TALLY_REC_SPAN)
			rc = apply_span(s, rec, now_ns, linger,
					now_ns + expire);
		if (rc < 0) {
			DROP(s, nomem, "nomem");
			nomem = 1;
		}
	}
	s->origin = NULL;
	if (nomem) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

size_t prom_store_sweep(struct prom_store *s, int64_t now_ns)
{
	size_t removed = 0, k = 0;

	for (size_t i = 0; i < s->nfams; i++) {
		struct prom_family *f = s->fams[i];
		size_t j, w = 0, sorted_left = 0;

		for (j = 0; j < f->n; j++) {
			struct prom_series *ser = f->v[j];

			if (ser->deadline >= now_ns) {
				f->v[w++] = ser;
				if (j < f->nsorted)
					sorted_left++;
				continue;
			}
			series_unlink(s, ser);
			series_free(ser);
			removed++;
		}
		f->n = w;
		f->nsorted = sorted_left;
		if (!f->n && f->kind == FAM_METRIC) {
			family_remove(s, f);
			continue;
		}
		s->fams[k++] = f;
	}
	s->nfams = k; /* order kept: still sorted if it was */
	if (removed)
		s->gen++;
	return removed;
}

static int cmp_series(const void *a, const void *b)
{
	const struct prom_series *x = *(struct prom_series *const *)a;
	const struct prom_series *y = *(struct prom_series *const *)b;

	return strcmp(x->lbl, y->lbl);
}

static int cmp_family(const void *a, const void *b)
{
	const struct prom_family *x = *(struct prom_family *const *)a;
	const struct prom_family *y = *(struct prom_family *const *)b;

	return strcmp(x->name, y->name);
}

/*
 * Bring the unsorted tail of new series into order: sort the tail, then
 * merge it with the sorted part. O(n) once the new ones are sorted, and
 * nothing at all in steady state.
 */
static void family_sort(struct prom_family *f)
{
	struct prom_series **m;
	size_t i = 0, j, k = 0;

	if (f->nsorted == f->n)
		return;
	qsort(f->v + f->nsorted, f->n - f->nsorted, sizeof(*f->v), cmp_series);
	m = f->nsorted ? malloc(f->cap * sizeof(*m)) : NULL;
	if (!m) {
		if (f->nsorted) /* no memory for the merge: sort in place */
			qsort(f->v, f->n, sizeof(*f->v), cmp_series);
		f->nsorted = f->n;
		return;
	}
	for (j = f->nsorted; i < f->nsorted && j < f->n;)
		m[k++] = cmp_series(&f->v[i], &f->v[j]) < 0 ? f->v[i++]
							    : f->v[j++];
	while (i < f->nsorted)
		m[k++] = f->v[i++];
	while (j < f->n)
		m[k++] = f->v[j++];
	free(f->v);
	f->v = m;
	f->nsorted = f->n;
}

/*
 * Writes into space reserved in the evbuffer, 64 KiB at a time: one
 * evbuffer call per chunk instead of one per series.
 */
struct wr {
	struct evbuffer *out;
	struct evbuffer_iovec v;
	size_t used;
	bool err;
};

#define WR_CHUNK 65536

static void wr_flush(struct wr *w)
{
	if (w->v.iov_base) {
		w->v.iov_len = w->used;
		if (evbuffer_commit_space(w->out, &w->v, 1) < 0)
			w->err = true;
	}
	w->v.iov_base = NULL;
	w->v.iov_len = 0;
	w->used = 0;
}

static void wr_put(struct wr *w, const char *p, size_t n)
{
	if (n > w->v.iov_len - w->used) {
		wr_flush(w);
		if (n >= WR_CHUNK) {
			if (evbuffer_add(w->out, p, n) < 0)
				w->err = true;
			return;
		}
		if (evbuffer_reserve_space(w->out, WR_CHUNK, &w->v, 1) < 1) {
			w->v.iov_base = NULL;
			w->v.iov_len = 0;
			w->err = true;
			return;
		}
	}
	memcpy((char *)w->v.iov_base + w->used, p, n);
	w->used += n;
}

static void wr_line(struct wr *w, const struct prom_family *f,
		    const struct prom_series *ser, const char *value,
		    size_t vlen)
{
	char buf[512];
	size_t need = f->name_len + ser->lbl_len + vlen + 4;

	if (need > sizeof(buf)) {
		wr_put(w, f->name, f->name_len);
		if (ser->lbl_len) {
			wr_put(w, "{", 1);
			wr_put(w, ser->lbl, ser->lbl_len);
			wr_put(w, "}", 1);
		}
		wr_put(w, " ", 1);
		wr_put(w, value, vlen);
		wr_put(w, "\n", 1);
		return;
	}
	/* The common case: one copy into the chunk. */
	char *p = buf;

	memcpy(p, f->name, f->name_len);
	p += f->name_len;
	if (ser->lbl_len) {
		*p++ = '{';
		memcpy(p, ser->lbl, ser->lbl_len);
		p += ser->lbl_len;
		*p++ = '}';
	}
	*p++ = ' ';
	memcpy(p, value, vlen);
	p += vlen;
	*p++ = '\n';
	wr_put(w, buf, (size_t)(p - buf));
}

/*
 * A span family's samples, computed now. The seconds counter of a region
 * is its ended spans' time plus the elapsed time of its open ones, and is
 * never shown lower than it was: an end that arrives after a scrape counted
 * further than the span really ran must not look like a counter reset.
 */
static void render_span_family(struct wr *w, struct prom_store *s,
			       struct prom_family *f, enum prom_format fmt,
			       int64_t now, int64_t real)
{
	struct prom_family *src = f->alias ? f->alias : f;
	bool header = false;

	for (size_t i = 0; i < src->n; i++) {
		struct prom_series *ser = src->v[i];
		struct prom_region *g = ser->region;
		char num[TALLY_EXPO_DOUBLE_MAX];
		size_t len;

		if (f->kind == FAM_SPAN_SECONDS) {
			/* n * (now - epoch) - sum of (begin - epoch): exact
			 * within int64_t by the bounds of struct prom_region */
			int64_t n = g->n_open, rs, rn;
			double open;
			double v;

			ns_split(ts_clamp(real) - s->epoch_ns, &rs, &rn);
			open = (double)(n * rs - g->begin_s) +
			       (double)(n * rn - g->begin_ns) / 1e9;
			v = (double)g->closed_ns / 1e9 + (open > 0 ? open : 0);

			if (v < g->shown)
				v = g->shown;
			g->shown = v;
			len = tally_expo_format_double(num, v);
		} else if (g->n_open) {
			len = tally_expo_format_double(num, 1);
		} else if (now - g->last_end <= s->o.grace_ns) {
			len = tally_expo_format_double(num, 0);
		} else {
			continue;
		}
		if (!header) {
			wr_put(w, f->hdr[fmt], f->hdr_len[fmt]);
			header = true;
		}
		wr_line(w, f, ser, num, len); /* under f's name */
	}
}

int prom_store_render(struct prom_store *s, struct evbuffer *out,
		      enum prom_format fmt, int64_t now_ns, int64_t real_ns)
{
	struct wr w = { .out = out };

	procs_check(s, now_ns, real_ns);
	prom_store_sweep(s, now_ns);
	if (!s->fams_sorted) {
		qsort(s->fams, s->nfams, sizeof(*s->fams), cmp_family);
		s->fams_sorted = true;
	}
	for (size_t i = 0; i < s->nfams; i++) {
		struct prom_family *f = s->fams[i];

		family_sort(f);
		if (f->kind != FAM_METRIC) {
			render_span_family(&w, s, f, fmt, now_ns, real_ns);
			continue;
		}
		wr_put(&w, f->hdr[fmt], f->hdr_len[fmt]);
		for (size_t j = 0; j < f->n; j++)
			wr_put(&w, f->v[j]->text.p, f->v[j]->text.len);
	}
	if (fmt == PROM_FMT_OPENMETRICS)
		wr_put(&w, "# EOF\n", 6);
	wr_flush(&w);
	if (w.err) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

uint64_t prom_store_generation(const struct prom_store *s)
{
	return s->gen;
}

uint64_t prom_store_spans_open(const struct prom_store *s)
{
	return s->spans_open;
}

size_t prom_store_series(const struct prom_store *s)
{
	return s->nseries;
}

const struct prom_store_stats *prom_store_stats(const struct prom_store *s)
{
	return &s->st;
}
