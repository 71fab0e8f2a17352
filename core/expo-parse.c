/* SPDX-License-Identifier: MIT */
/*
 * core/expo-parse.c - the text exposition format parser (tally/exposition.h)
 *
 * Two passes: the page is read line by line into families and series
 * (nothing appended to the batch yet), every series is checked, and only
 * then are records appended, so a malformed page leaves the batch as it
 * was. Families and series are found through hash tables: a page of many
 * thousand series costs one lookup per line.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <tally/exposition.h>
#include <tally/hash.h>
#include <tally/labels.h>
#include <tally/record.h>
#include <tally/utf8.h>

/* Which sample of its family a line is. */
enum ep_part {
	EP_PLAIN,    /* counter, gauge, untyped */
	EP_BUCKET,   /* histogram x_bucket{le=...} */
	EP_QUANTILE, /* summary x{quantile=...} */
	EP_SUM,
	EP_COUNT,
};

struct ep_family {
	struct tally_hnode node;
	struct ep_family *next; /* in order of first mention */
	char *name;
	char *help;		/* unescaped; NULL: no HELP line */
	enum tally_metric_type type;
	bool typed;		/* a TYPE line was read */
	struct ep_series *first, *last;
};

/* One point a histogram (le, count) or a summary (q, value) has. */
struct ep_point {
	double k, v;
};

struct ep_series {
	struct tally_hnode node;
	struct ep_series *next; /* of its family, in order of first mention */
	struct ep_family *fam;
	struct tally_labels *labels; /* le/quantile taken out */
	unsigned line;
	double value; /* plain */
	double sum, count;
	bool has_sum, has_count;
	struct ep_point *pt;
	size_t npt, cap;
	int64_t ts_ns;
	uint64_t ucount; /* histograms and summaries: checked count */
};

struct ep {
	const char *p, *end; /* the line being read */
	unsigned line;
	unsigned flags;
	struct tally_expo_error *err;
	struct tally_htable fams, series;
	struct ep_family *first, **tail;
	/* the sample being read: label pairs as offsets into txt (which may
	 * move while it grows), then as pointers */
	struct ep_off {
		size_t k, v;
	} *off;
	struct tally_label *lbl;
	size_t nlbl, lblcap;
	char *txt;
	size_t txtlen, txtcap;
};

static int ep_fail(struct ep *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int ep_fail(struct ep *e, const char *fmt, ...)
{
	va_list ap;

	if (e->err) {
		e->err->line = e->line;
		va_start(ap, fmt);
		vsnprintf(e->err->msg, sizeof(e->err->msg), fmt, ap);
		va_end(ap);
	}
	errno = EINVAL;
	return -1;
}

static int ep_nomem(void)
{
	errno = ENOMEM;
	return -1;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static void skip_blanks(struct ep *e)
{
	while (e->p < e->end && is_blank(*e->p))
		e->p++;
}

static bool name_start(char c, bool metric)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
	       (metric && c == ':');
}

static bool name_char(char c, bool metric)
{
	return name_start(c, metric) || (c >= '0' && c <= '9');
}

/* A metric (or label) name at e->p: its length, 0 if there is none. */
static size_t read_name(struct ep *e, bool metric)
{
	const char *s = e->p;

	if (s == e->end || !name_start(*s, metric))
		return 0;
	while (e->p < e->end && name_char(*e->p, metric))
		e->p++;
	return (size_t)(e->p - s);
}

/* Room for @n more bytes of unescaped text. */
static int txt_grow(struct ep *e, size_t n)
{
	char *t;
	size_t cap;

	if (e->txtlen + n <= e->txtcap)
		return 0;
	cap = e->txtcap ? e->txtcap : 256;
	while (cap < e->txtlen + n)
		cap *= 2;
	t = realloc(e->txt, cap);
	if (!t)
		return ep_nomem();
	e->txt = t;
	e->txtcap = cap;
	return 0;
}

/*
 * Append @n bytes to the text buffer, NUL-terminated; the offset of the
 * copy in *@off. Offsets, not pointers: the buffer may move.
 */
static int txt_put(struct ep *e, const char *s, size_t n, size_t *off)
{
	if (txt_grow(e, n + 1) < 0)
		return -1;
	*off = e->txtlen;
	memcpy(e->txt + e->txtlen, s, n);
	e->txt[e->txtlen + n] = '\0';
	e->txtlen += n + 1;
	return 0;
}

/*
 * Unescape the text from e->p up to @stop (a quote for label values; the
 * end of the line for HELP): \\ and \n, and \" when @quote. Stores it
 * NUL-terminated at *@off of the text buffer; e->p is left on @stop.
 */
static int read_escaped(struct ep *e, bool quote, size_t *off, const char *what)
{
	size_t n0;

	if (txt_grow(e, (size_t)(e->end - e->p) + 1) < 0)
		return -1;
	*off = n0 = e->txtlen;
	while (e->p < e->end && !(quote && *e->p == '"')) {
		char c = *e->p++;

		if (c == '\\') {
			if (e->p == e->end)
				return ep_fail(e, "%s ends in a lone backslash",
					       what);
			c = *e->p++;
			if (c == 'n')
				c = '\n';
			else if (c != '\\' && !(quote && c == '"'))
				return ep_fail(e,
					       "invalid escape sequence '\\%c' "
					       "in %s",
					       c, what);
		}
		e->txt[e->txtlen++] = c;
	}
	if (!tally_utf8_valid(e->txt + n0, e->txtlen - n0))
		return ep_fail(e, "%s is not valid UTF-8", what);
	e->txt[e->txtlen++] = '\0';
	return 0;
}

/*
 * A value as Go's strconv.ParseFloat reads it, up to the next blank or the
 * end of the line: decimal, exponents, Inf, Infinity, NaN in any case with
 * a sign. Hexadecimal (which strtod would take) is refused.
 */
static int read_double(struct ep *e, double *v, const char *what)
{
	char buf[64];
	const char *s = e->p;
	char *endp;
	size_t n;

	while (e->p < e->end && !is_blank(*e->p))
		e->p++;
	n = (size_t)(e->p - s);
	if (!n)
		return ep_fail(e, "%s missing", what);
	if (n >= sizeof(buf) || memchr(s, 'x', n) || memchr(s, 'X', n) ||
	    memchr(s, '(', n))
		goto bad;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	*v = strtod(buf, &endp);
	if (endp != buf + n || endp == buf)
		goto bad;
	/* overflow gives +-Inf as Go does; underflow 0: both are fine */
	return 0;
bad:
	return ep_fail(e, "%s \"%.*s\" is not a number", what,
		       (int)(n > 40 ? 40 : n), s);
}

static int read_timestamp(struct ep *e, int64_t *ts_ns)
{
	char buf[32];
	const char *s = e->p;
	char *endp;
	long long ms;
	size_t n;

	while (e->p < e->end && !is_blank(*e->p))
		e->p++;
	n = (size_t)(e->p - s);
	if (n >= sizeof(buf))
		goto bad;
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	ms = strtoll(buf, &endp, 10);
	if (endp != buf + n || endp == buf || errno)
		goto bad;
	/* milliseconds to the ns of a record, within int64 */
	if (ms > INT64_MAX / 1000000 || ms < INT64_MIN / 1000000)
		return ep_fail(e, "timestamp %lld out of range", ms);
	*ts_ns = ms * 1000000;
	return 0;
bad:
	return ep_fail(e, "timestamp \"%.*s\" is not an integer",
		       (int)(n > 40 ? 40 : n), s);
}

static struct ep_family *fam_find(struct ep *e, const char *name, size_t n)
{
	uint64_t h = tally_hash_bytes(TALLY_HASH_SEED, name, n);
	struct tally_hnode *p;

	tally_htable_for_each_hash(&e->fams, h, p)
	{
		struct ep_family *f =
			tally_container_of(p, struct ep_family, node);

		if (strlen(f->name) == n && memcmp(f->name, name, n) == 0)
			return f;
	}
	return NULL;
}

static struct ep_family *fam_new(struct ep *e, const char *name, size_t n)
{
	struct ep_family *f = calloc(1, sizeof(*f));

	if (!f || tally_htable_reserve(&e->fams) < 0)
		goto out_free;
	f->name = strndup(name, n);
	if (!f->name)
		goto out_free;
	f->type = TALLY_UNTYPED;
	f->node.hash = tally_hash_bytes(TALLY_HASH_SEED, name, n);
	tally_htable_insert(&e->fams, &f->node);
	*e->tail = f;
	e->tail = &f->next;
	return f;

out_free:
	free(f);
	errno = ENOMEM;
	return NULL;
}

static struct ep_family *fam_get(struct ep *e, const char *name, size_t n)
{
	struct ep_family *f = fam_find(e, name, n);

	return f ? f : fam_new(e, name, n);
}

static const struct {
	const char *name;
	enum tally_metric_type type;
} ep_types[] = {
	{ "counter", TALLY_COUNTER },	  { "gauge", TALLY_GAUGE },
	{ "histogram", TALLY_HISTOGRAM }, { "summary", TALLY_SUMMARY },
	{ "untyped", TALLY_UNTYPED },
};

/* The rest of a line must be blanks. */
static int expect_eol(struct ep *e, const char *after)
{
	skip_blanks(e);
	if (e->p != e->end)
		return ep_fail(e, "unexpected \"%.*s\" after %s",
			       (int)(e->end - e->p > 20 ? 20 : e->end - e->p),
			       e->p, after);
	return 0;
}

/* "# HELP name text", "# TYPE name type", or any other comment. */
static int parse_comment(struct ep *e)
{
	const char *kw = e->p;
	struct ep_family *f;
	const char *name;
	size_t n, k, off;
	bool help;

	skip_blanks(e);
	kw = e->p;
	while (e->p < e->end && !is_blank(*e->p))
		e->p++;
	k = (size_t)(e->p - kw);
	if (k == 4 && memcmp(kw, "HELP", 4) == 0)
		help = true;
	else if (k == 4 && memcmp(kw, "TYPE", 4) == 0)
		help = false;
	else
		return 0; /* a comment */
	skip_blanks(e);
	name = e->p;
	n = read_name(e, true);
	if (!n || (e->p < e->end && !is_blank(*e->p)))
		return ep_fail(e, "invalid metric name in %s line",
			       help ? "HELP" : "TYPE");
	f = fam_get(e, name, n);
	if (!f)
		return -1;
	skip_blanks(e);
	if (help) {
		if (f->help)
			return ep_fail(e, "second HELP line for %s", f->name);
		e->txtlen = 0;
		if (read_escaped(e, false, &off, "HELP text") < 0)
			return -1;
		f->help = strdup(e->txt + off);
		return f->help ? 0 : ep_nomem();
	}
	kw = e->p;
	while (e->p < e->end && !is_blank(*e->p))
		e->p++;
	k = (size_t)(e->p - kw);
	if (f->typed || f->first)
		return ep_fail(e, "second TYPE line for %s, or TYPE after "
				  "its samples", f->name);
	for (size_t i = 0; i < sizeof(ep_types) / sizeof(ep_types[0]); i++) {
		if (strlen(ep_types[i].name) == k &&
		    strncasecmp(ep_types[i].name, kw, k) == 0) {
			f->type = ep_types[i].type;
			f->typed = true;
			return expect_eol(e, "the type");
		}
	}
	return ep_fail(e, "unknown metric type \"%.*s\"", (int)(k > 20 ? 20 : k),
		       kw);
}

/* The labels of a sample, from just after '{' to just after '}', into
 * e->off (strings in e->txt). */
static int parse_labels(struct ep *e)
{
	for (;;) {
		const char *k;
		size_t n;

		skip_blanks(e);
		if (e->p < e->end && *e->p == '}') {
			e->p++;
			return 0;
		}
		k = e->p;
		n = read_name(e, false);
		if (!n)
			return ep_fail(e, "invalid label name");
		if (n == 8 && memcmp(k, "__name__", 8) == 0)
			return ep_fail(e, "label name __name__ is reserved");
		if (e->nlbl == e->lblcap) {
			size_t cap = e->lblcap ? e->lblcap * 2 : 16;
			struct ep_off *o = realloc(e->off, cap * sizeof(*o));
			struct tally_label *l;

			if (!o)
				return ep_nomem();
			e->off = o;
			l = realloc(e->lbl, cap * sizeof(*l));
			if (!l)
				return ep_nomem();
			e->lbl = l;
			e->lblcap = cap;
		}
		if (txt_put(e, k, n, &e->off[e->nlbl].k) < 0)
			return -1;
		skip_blanks(e);
		if (e->p == e->end || *e->p != '=')
			return ep_fail(e, "expected '=' after label name %.*s",
				       (int)n, k);
		e->p++;
		skip_blanks(e);
		if (e->p == e->end || *e->p != '"')
			return ep_fail(e, "expected '\"' to start the value of "
					  "label %.*s",
				       (int)n, k);
		e->p++;
		if (read_escaped(e, true, &e->off[e->nlbl].v, "label value") <
		    0)
			return -1;
		if (e->p == e->end)
			return ep_fail(e, "label value of %.*s not closed",
				       (int)n, k);
		e->p++; /* the closing quote */
		e->nlbl++;
		skip_blanks(e);
		if (e->p < e->end && *e->p == ',') {
			e->p++;
			continue;
		}
		if (e->p < e->end && *e->p == '}') {
			e->p++;
			return 0;
		}
		return ep_fail(e, "expected ',' or '}' after the value of "
				  "label %.*s",
			       (int)n, k);
	}
}

/*
 * Take label @key out of the sample's labels: its value in *@val (NULL
 * when absent).
 */
static void take_label(struct ep *e, const char *key, const char **val)
{
	*val = NULL;
	for (size_t i = 0; i < e->nlbl; i++) {
		if (strcmp(e->txt + e->off[i].k, key) == 0) {
			*val = e->txt + e->off[i].v;
			e->off[i] = e->off[--e->nlbl];
			return;
		}
	}
}

static bool has_suffix(const char *s, size_t n, const char *sfx, size_t *base)
{
	size_t k = strlen(sfx);

	if (n <= k || memcmp(s + n - k, sfx, k) != 0)
		return false;
	*base = n - k;
	return true;
}

/* The family and part of a sample named @name: expfmt's lookup order. */
static struct ep_family *sample_family(struct ep *e, const char *name, size_t n,
				       enum ep_part *part)
{
	struct ep_family *f;
	size_t b;

	if (has_suffix(name, n, "_bucket", &b) &&
	    (f = fam_find(e, name, b)) && f->type == TALLY_HISTOGRAM) {
		*part = EP_BUCKET;
		return f;
	}
	if ((has_suffix(name, n, "_sum", &b) ||
	     has_suffix(name, n, "_count", &b)) &&
	    (f = fam_find(e, name, b)) &&
	    (f->type == TALLY_HISTOGRAM || f->type == TALLY_SUMMARY)) {
		*part = name[b + 1] == 's' ? EP_SUM : EP_COUNT;
		return f;
	}
	f = fam_get(e, name, n);
	if (f)
		*part = f->type == TALLY_SUMMARY ? EP_QUANTILE : EP_PLAIN;
	return f;
}

static struct ep_series *series_find(struct ep *e, struct ep_family *f,
				     struct tally_labels *ls, uint64_t h)
{
	struct tally_hnode *p;

	tally_htable_for_each_hash(&e->series, h, p)
	{
		struct ep_series *s =
			tally_container_of(p, struct ep_series, node);

		if (s->fam == f && s->labels == ls)
			return s;
	}
	return NULL;
}

static uint64_t series_hash(const struct ep_family *f,
			    const struct tally_labels *ls)
{
	uintptr_t k[2] = { (uintptr_t)f, (uintptr_t)ls };

	return tally_hash_mix(tally_hash_bytes(TALLY_HASH_SEED, k, sizeof(k)));
}

/* The series of @f with the sample's labels, made if new (*@made). */
static struct ep_series *series_get(struct ep *e, struct ep_family *f,
				    bool *made)
{
	struct tally_labels *ls;
	struct ep_series *s;
	uint64_t h;

	for (size_t i = 0; i < e->nlbl; i++) {
		e->lbl[i].key = e->txt + e->off[i].k;
		e->lbl[i].value = e->txt + e->off[i].v;
	}
	ls = tally_labels_new(e->lbl, e->nlbl);
	if (!ls) {
		if (errno == EINVAL)
			ep_fail(e, "duplicate label name in a sample of %s",
				f->name);
		return NULL;
	}
	h = series_hash(f, ls);
	s = series_find(e, f, ls, h);
	if (s) {
		tally_labels_unref(ls);
		*made = false;
		return s;
	}
	s = calloc(1, sizeof(*s));
	if (!s || tally_htable_reserve(&e->series) < 0) {
		free(s);
		tally_labels_unref(ls);
		errno = ENOMEM;
		return NULL;
	}
	s->fam = f;
	s->labels = ls;
	s->line = e->line;
	s->node.hash = h;
	tally_htable_insert(&e->series, &s->node);
	if (f->last)
		f->last->next = s;
	else
		f->first = s;
	f->last = s;
	*made = true;
	return s;
}

static int point_add(struct ep *e, struct ep_series *s, double k, double v,
		     const char *what)
{
	for (size_t i = 0; i < s->npt; i++)
		if (s->pt[i].k == k)
			return ep_fail(e, "%s %s: the same %s twice",
				       s->fam->name,
				       what[0] == 'l' ? "bucket" : "quantile",
				       what);
	if (s->npt == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		struct ep_point *p = realloc(s->pt, cap * sizeof(*p));

		if (!p)
			return ep_nomem();
		s->pt = p;
		s->cap = cap;
	}
	s->pt[s->npt].k = k;
	s->pt[s->npt++].v = v;
	return 0;
}

static int parse_sample(struct ep *e)
{
	const char *name = e->p, *bound = NULL;
	enum ep_part part = EP_PLAIN;
	struct ep_family *f;
	struct ep_series *s;
	double v, k = 0;
	int64_t ts = 0;
	bool made;
	size_t n;

	n = read_name(e, true);
	if (!n)
		return ep_fail(e, "invalid metric name");
	e->txtlen = 0;
	e->nlbl = 0;
	skip_blanks(e);
	if (e->p < e->end && *e->p == '{') {
		e->p++;
		if (parse_labels(e) < 0)
			return -1;
		skip_blanks(e);
	} else if (e->p < e->end && e->p == name + n) {
		return ep_fail(e, "invalid character '%c' after metric name "
				  "%.*s",
			       *e->p, (int)n, name);
	}
	if (read_double(e, &v, "sample value") < 0)
		return -1;
	skip_blanks(e);
	if (e->p < e->end) {
		if (e->flags & TALLY_EXPO_PARSE_NO_TIMESTAMPS)
			return ep_fail(e, "%.*s has a timestamp, which is not "
					  "supported here",
				       (int)n, name);
		if (read_timestamp(e, &ts) < 0 ||
		    expect_eol(e, "the timestamp") < 0)
			return -1;
	}
	f = sample_family(e, name, n, &part);
	if (!f)
		return -1;
	if (f->type == TALLY_HISTOGRAM && part == EP_PLAIN)
		return ep_fail(e, "sample %s of histogram %s: expected "
				  "%s_bucket, %s_sum or %s_count",
			       f->name, f->name, f->name, f->name, f->name);
	if (part == EP_BUCKET || part == EP_QUANTILE) {
		const char *key = part == EP_BUCKET ? "le" : "quantile";

		take_label(e, key, &bound);
		if (!bound)
			return ep_fail(e, "sample of %s %s without a %s label",
				       part == EP_BUCKET ? "histogram"
							 : "summary",
				       f->name, key);
		/* read the bound as a value: the line is done with */
		e->p = bound;
		e->end = bound + strlen(bound);
		if (read_double(e, &k, key) < 0)
			return -1;
		if (e->p != e->end)
			return ep_fail(e, "%s=\"%s\" is not a number", key,
				       bound);
		if (isnan(k) ||
		    (part == EP_QUANTILE && !(k >= 0 && k <= 1)))
			return ep_fail(e, "%s=\"%s\" out of range", key, bound);
	}
	s = series_get(e, f, &made);
	if (!s)
		return -1;
	if (made || !s->ts_ns)
		s->ts_ns = ts;
	switch (part) {
	case EP_PLAIN:
		if (!made)
			return ep_fail(e, "%s: the same series twice (first on "
					  "line %u)",
				       f->name, s->line);
		s->value = v;
		return 0;
	case EP_SUM:
		if (s->has_sum)
			return ep_fail(e, "%s_sum twice for one series",
				       f->name);
		s->has_sum = true;
		s->sum = v;
		return 0;
	case EP_COUNT:
		if (s->has_count)
			return ep_fail(e, "%s_count twice for one series",
				       f->name);
		s->has_count = true;
		s->count = v;
		return 0;
	case EP_BUCKET:
		return point_add(e, s, k, v, "le");
	case EP_QUANTILE:
		return point_add(e, s, k, v, "quantile");
	}
	return 0;
}

static int point_cmp(const void *a, const void *b)
{
	double x = ((const struct ep_point *)a)->k;
	double y = ((const struct ep_point *)b)->k;

	return x < y ? -1 : x > y;
}

/* A count read as a double: Go converts with uint64(); NaN, negative and
 * infinite ones are refused here rather than made up. */
static int count_ok(struct ep *e, const struct ep_series *s, double c,
		    uint64_t *out)
{
	if (!(c >= 0) || c >= 18446744073709551616.0) {
		e->line = s->line;
		return ep_fail(e, "%s: count %g is not a non-negative number",
			       s->fam->name, c);
	}
	*out = (uint64_t)c;
	return 0;
}

/* Check a histogram or summary series and fill its count. */
static int series_check(struct ep *e, struct ep_series *s, uint64_t *count)
{
	struct ep_family *f = s->fam;
	uint64_t c = 0, prev = 0;

	if (s->npt > 1)
		qsort(s->pt, s->npt, sizeof(*s->pt), point_cmp);
	if (f->type == TALLY_SUMMARY) {
		*count = 0;
		return s->has_count ? count_ok(e, s, s->count, count) : 0;
	}
	for (size_t i = 0; i < s->npt; i++) {
		if (count_ok(e, s, s->pt[i].v, &c) < 0)
			return -1;
		if (c < prev) {
			e->line = s->line;
			return ep_fail(e, "histogram %s: bucket counts go down "
					  "at le=%g",
				       f->name, s->pt[i].k);
		}
		prev = c;
	}
	if (s->npt && isinf(s->pt[s->npt - 1].k) && s->pt[s->npt - 1].k > 0) {
		if (!s->has_count) {
			*count = prev;
			return 0;
		}
		if (count_ok(e, s, s->count, count) < 0)
			return -1;
		if (*count != prev) {
			e->line = s->line;
			return ep_fail(e, "histogram %s: _count %llu is not "
					  "its +Inf bucket's %llu",
				       f->name, (unsigned long long)*count,
				       (unsigned long long)prev);
		}
		return 0;
	}
	e->line = s->line;
	if (!s->has_count)
		return ep_fail(e, "histogram %s has neither a +Inf bucket nor "
				  "a _count",
			       f->name);
	if (count_ok(e, s, s->count, count) < 0)
		return -1;
	if (*count < prev)
		return ep_fail(e, "histogram %s: _count below its buckets",
			       f->name);
	return 0;
}

/* Append the record of one checked series. */
static int series_emit(struct ep *e, struct tally_batch *b,
		       struct ep_series *s, uint64_t count)
{
	struct ep_family *f = s->fam;
	double sum = s->has_sum ? s->sum : 0;
	int rc;

	if (f->type == TALLY_HISTOGRAM) {
		struct tally_bucket *bk =
			malloc((s->npt ? s->npt : 1) * sizeof(*bk));

		if (!bk)
			return ep_nomem();
		for (size_t i = 0; i < s->npt; i++) {
			bk[i].le = s->pt[i].k;
			bk[i].count = (uint64_t)s->pt[i].v;
		}
		rc = tally_batch_add_histogram(b, f->name, f->help, s->labels,
					       bk, s->npt, count, sum, s->ts_ns);
		free(bk);
	} else if (f->type == TALLY_SUMMARY) {
		struct tally_quantile *q =
			malloc((s->npt ? s->npt : 1) * sizeof(*q));

		if (!q)
			return ep_nomem();
		for (size_t i = 0; i < s->npt; i++) {
			q[i].q = s->pt[i].k;
			q[i].value = s->pt[i].v;
		}
		rc = tally_batch_add_summary(b, f->name, f->help, s->labels, q,
					     s->npt, count, sum, s->ts_ns);
		free(q);
	} else {
		rc = tally_batch_add_metric(b, f->type, f->name, f->help,
					    s->labels, s->value, s->ts_ns);
	}
	if (rc < 0 && errno == EINVAL) {
		e->line = s->line;
		return ep_fail(e, "%s: series refused by the batch", f->name);
	}
	return rc;
}

static void ep_free(struct ep *e)
{
	struct ep_family *f, *fn;
	struct ep_series *s, *sn;

	for (f = e->first; f; f = fn) {
		fn = f->next;
		for (s = f->first; s; s = sn) {
			sn = s->next;
			tally_labels_unref(s->labels);
			free(s->pt);
			free(s);
		}
		free(f->name);
		free(f->help);
		free(f);
	}
	tally_htable_fini(&e->fams);
	tally_htable_fini(&e->series);
	free(e->off);
	free(e->lbl);
	free(e->txt);
}

int tally_expo_parse(struct tally_batch *b, const char *text, size_t len,
		     unsigned flags, struct tally_expo_error *err)
{
	struct ep e = { .flags = flags, .err = err };
	const char *p = text, *end = text + len;
	struct ep_family *f;
	struct ep_series *s;
	int n = 0, rc = -1;

	e.tail = &e.first;
	if (err) {
		err->line = 0;
		err->msg[0] = '\0';
	}
	if (!b || (!text && len)) {
		errno = EINVAL;
		return -1;
	}
	if (len && memchr(text, '\0', len)) {
		const char *z = memchr(text, '\0', len);

		e.line = 1;
		for (const char *q = text; q < z; q++)
			e.line += *q == '\n';
		ep_fail(&e, "NUL byte");
		goto out;
	}
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));

		e.line++;
		e.p = p;
		e.end = eol ? eol : end;
		p = eol ? eol + 1 : end;
		skip_blanks(&e);
		if (e.p == e.end)
			continue;
		if (*e.p == '#') {
			e.p++;
			if (parse_comment(&e) < 0)
				goto out_line;
		} else if (parse_sample(&e) < 0) {
			goto out_line;
		}
	}
	if (len && text[len - 1] != '\n' &&
	    (flags & TALLY_EXPO_PARSE_FINAL_NEWLINE)) {
		ep_fail(&e, "the last line does not end with a newline: the "
			    "file is being written or was cut short");
		goto out;
	}
	/* everything checked before the first record is appended */
	for (f = e.first; f; f = f->next)
		for (s = f->first; s; s = s->next)
			if ((f->type == TALLY_HISTOGRAM ||
			     f->type == TALLY_SUMMARY) &&
			    series_check(&e, s, &s->ucount) < 0)
				goto out;
	for (f = e.first; f; f = f->next) {
		for (s = f->first; s; s = s->next) {
			if (series_emit(&e, b, s, s->ucount) < 0)
				goto out;
			if (n < INT32_MAX)
				n++;
		}
	}
	rc = n;
	goto out;
out_line:
	/* a line that ends in CR: say so rather than "bad value 1\r" */
	if (err && errno == EINVAL && e.end > text && e.end[-1] == '\r')
		snprintf(err->msg, sizeof(err->msg),
			 "the line ends with a carriage return (\\r): Windows "
			 "line ends (CRLF); the text format ends lines with "
			 "\\n only");
out:
	{
		int saved = errno;

		ep_free(&e);
		errno = saved;
	}
	return rc;
}
