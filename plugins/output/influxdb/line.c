/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/influxdb/line.c - InfluxDB line protocol rendering (see
 * line.h for the rules)
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "line.h"

/* Pairs of tags kept on the stack; more take the heap. */
#define TAGS_STACK 48

void influx_buf_free(struct influx_buf *b)
{
	free(b->p);
	*b = (struct influx_buf){ 0 };
}

static int buf_reserve(struct influx_buf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->len + more <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap < b->len + more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

static int buf_add(struct influx_buf *b, const char *s, size_t n)
{
	if (!n)
		return 0;
	if (buf_reserve(b, n) < 0)
		return -1;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

static int buf_addc(struct influx_buf *b, char c)
{
	if (b->len == b->cap && buf_reserve(b, 1) < 0)
		return -1;
	b->p[b->len++] = c;
	return 0;
}

/*
 * Escape @s where @special holds the characters that take a backslash.
 * Newlines become (escaped) spaces. A run of backslashes before a special
 * character or at the end is left out: InfluxDB 1.x cannot read it back.
 */
static int escape(struct influx_buf *b, const char *s, const char *special)
{
	size_t n = strlen(s), plain = strcspn(s, special);

	/* the common case: nothing to escape */
	if (plain == n && !memchr(s, '\\', n))
		return buf_add(b, s, n);
	/* worst case every byte doubles */
	if (buf_reserve(b, 2 * n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\') {
			size_t j = i;

			while (s[j] == '\\')
				j++;
			if (s[j] && !strchr(special, s[j])) {
				memcpy(b->p + b->len, s + i, j - i);
				b->len += j - i;
			}
			i = j - 1;
			continue;
		}
		if (c == '\n' || c == '\r')
			c = ' ';
		if (strchr(special, c))
			b->p[b->len++] = '\\';
		b->p[b->len++] = c;
	}
	return 0;
}

int influx_escape_measurement(struct influx_buf *b, const char *s)
{
	return escape(b, s, ", \n\r");
}

int influx_escape_key(struct influx_buf *b, const char *s)
{
	return escape(b, s, ",= \n\r");
}

int influx_escape_string(struct influx_buf *b, const char *s)
{
	size_t n = strlen(s);

	if (buf_reserve(b, 2 * n + 2) < 0)
		return -1;
	b->p[b->len++] = '"';
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '"' || s[i] == '\\')
			b->p[b->len++] = '\\';
		b->p[b->len++] = s[i];
	}
	b->p[b->len++] = '"';
	return 0;
}

/* Whether escaping @s as a key leaves something. */
static bool key_nonempty(const char *s)
{
	for (; *s; s++)
		if (*s != '\\')
			return true;
	return false;
}

static size_t format_u64(char *out, uint64_t v)
{
	char tmp[24];
	size_t n = 0, k = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		out[k++] = tmp[--n];
	out[k] = '\0';
	return k;
}

static size_t format_i64(char *out, int64_t v)
{
	if (v < 0) {
		out[0] = '-';
		return 1 + format_u64(out + 1, (uint64_t)0 - (uint64_t)v);
	}
	return format_u64(out, (uint64_t)v);
}

size_t influx_format_float(char *out, double v)
{
	int n;

	/* integral values below 2^53 print as integers, exactly */
	if (v == floor(v) && fabs(v) < 9007199254740992.0) {
		if (v == 0)
			v = 0; /* -0 */
		return format_i64(out, (int64_t)v);
	}
	n = snprintf(out, 32, "%.15g", v);
	if (strtod(out, NULL) != v)
		n = snprintf(out, 32, "%.17g", v);
	return (size_t)n;
}

/* Fields: ",key=value" after the first. */
struct fields {
	struct influx_buf *b;
	unsigned n;
	unsigned skipped;	/* non-finite */
};

static int field_key(struct fields *f, const char *key)
{
	if (f->n++ && buf_addc(f->b, ',') < 0)
		return -1;
	if (influx_escape_key(f->b, key) < 0)
		return -1;
	return buf_addc(f->b, '=');
}

static int field_float(struct fields *f, const char *key, double v)
{
	char num[32];
	size_t n;

	if (!isfinite(v)) {
		f->skipped++;
		return 0;
	}
	if (!key_nonempty(key))
		return 0;
	n = influx_format_float(num, v);
	if (field_key(f, key) < 0)
		return -1;
	return buf_add(f->b, num, n);
}

static int field_int(struct fields *f, const char *key, int64_t v)
{
	char num[24];
	size_t n = format_i64(num, v);

	if (!key_nonempty(key))
		return 0;
	if (field_key(f, key) < 0)
		return -1;
	num[n++] = 'i';
	return buf_add(f->b, num, n);
}

static int64_t count_i64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/*
 * Tags: the pairs in key order, empty values and keys left out; a key
 * "time" is written "time_" (doc/plugins/influxdb.md).
 */
static int tags(struct influx_buf *b, const struct tally_label *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!*p[i].value || !key_nonempty(p[i].value) ||
		    !key_nonempty(p[i].key))
			continue;
		if (buf_addc(b, ',') < 0 || influx_escape_key(b, p[i].key) < 0)
			return -1;
		/* InfluxDB refuses every point with a tag key "time" */
		if (!strcmp(p[i].key, "time") && buf_addc(b, '_') < 0)
			return -1;
		if (buf_addc(b, '=') < 0 || influx_escape_key(b, p[i].value) < 0)
			return -1;
	}
	return 0;
}

/* @own (sorted) plus @r's static labels, then the tags written. */
static int tags_merged(struct influx_render *r, struct influx_buf *b,
		       const struct tally_label *own, size_t nown)
{
	struct tally_label stack[TAGS_STACK], *m = stack;
	size_t n;
	int rc;

	if (!r->nstatics)
		return tags(b, own, nown);
	if (nown + r->nstatics > TAGS_STACK) {
		m = malloc((nown + r->nstatics) * sizeof(*m));
		if (!m) {
			errno = ENOMEM;
			return -1;
		}
	}
	n = tally_label_merge(own, nown, r->statics, r->nstatics, m);
	rc = tags(b, m, n);
	if (m != stack)
		free(m);
	return rc;
}

static int timestamp(struct influx_render *r, struct influx_buf *b,
		     int64_t ts_ns)
{
	static const int64_t div[] = { 1, 1000, 1000000, 1000000000 };
	char num[24];
	size_t n;

	num[0] = ' ';
	n = 1 + format_i64(num + 1, ts_ns / div[r->precision]);
	num[n++] = '\n';
	return buf_add(b, num, n);
}

/* The bound of a bucket or quantile as a field key. */
static void bound_key(char *out, double v)
{
	if (isinf(v))
		strcpy(out, v > 0 ? "+Inf" : "-Inf");
	else
		influx_format_float(out, v);
}

/* A figure of an interval: NaN (an empty interval's min) says "none". */
static int field_figure(struct fields *f, const char *key, double v)
{
	return isfinite(v) ? field_float(f, key, v) : 0;
}

/*
 * An interval record (aggregate): one point per series and interval,
 * whose fields are the interval's figures (line.h).
 */
static int interval_fields(struct fields *f, const struct tally_metric *m)
{
	const struct tally_interval *iv = m->interval;
	char key[48];

	switch (m->type) {
	case TALLY_COUNTER:
		if (field_float(f, "value", m->value) < 0)
			return -1;
		return field_figure(f, "rate", tally_interval_rate(m));
	case TALLY_HISTOGRAM:
	case TALLY_SUMMARY:
		break;
	default:
		return field_float(f, "value", m->value);
	}
	if (field_float(f, "count", iv->count) < 0 ||
	    field_float(f, "sum", iv->sum) < 0 ||
	    field_figure(f, "rate", tally_interval_rate(m)) < 0 ||
	    field_figure(f, "mean", tally_interval_mean(m)) < 0 ||
	    field_figure(f, "min", iv->min) < 0 ||
	    field_figure(f, "max", iv->max) < 0 ||
	    field_figure(f, "median", iv->median) < 0)
		return -1;
	for (uint32_t i = 0; i < iv->nquantiles; i++) {
		key[0] = 'p';
		/* 0.9 * 100 is 90.00000000000001: ten digits say "p90" */
		snprintf(key + 1, sizeof(key) - 1, "%.10g",
			 iv->quantiles[i].q * 100);
		if (field_figure(f, key, iv->quantiles[i].value) < 0)
			return -1;
	}
	for (uint32_t i = 0; i < iv->nbuckets; i++) {
		bound_key(key, iv->buckets[i].le);
		if (field_int(f, key, count_i64(iv->buckets[i].count)) < 0)
			return -1;
	}
	return 0;
}

static int metric_fields(struct fields *f, const struct tally_metric *m)
{
	char key[40];

	if (m->form == TALLY_FORM_INTERVAL && m->interval)
		return interval_fields(f, m);
	switch (m->type) {
	case TALLY_INFO:
		return field_float(f, "value", 1);
	case TALLY_HISTOGRAM:
		if (field_int(f, "count", count_i64(m->count)) < 0 ||
		    field_float(f, "sum", m->sum) < 0)
			return -1;
		for (size_t i = 0; i < m->n; i++) {
			bound_key(key, m->buckets[i].le);
			if (field_int(f, key, count_i64(m->buckets[i].count)) <
			    0)
				return -1;
		}
		return 0;
	case TALLY_SUMMARY:
		if (field_int(f, "count", count_i64(m->count)) < 0 ||
		    field_float(f, "sum", m->sum) < 0)
			return -1;
		for (size_t i = 0; i < m->n; i++) {
			bound_key(key, m->quantiles[i].q);
			if (field_float(f, key, m->quantiles[i].value) < 0)
				return -1;
		}
		return 0;
	default:
		return field_float(f, "value", m->value);
	}
}

static int span_fields(struct fields *f, const struct tally_record *rec)
{
	const struct tally_span *sp = &rec->span;

	if (field_float(f, "duration",
			(double)(rec->ts_ns - sp->begin_ns) / 1e9) < 0 ||
	    field_int(f, "start", sp->begin_ns) < 0 ||
	    field_int(f, "pid", sp->src.pid) < 0)
		return -1;
	for (uint32_t i = 0; i < sp->nvalues; i++) {
		const struct tally_attr *a = &sp->values[i];
		int rc = 0;

		if (!strcmp(a->key, "duration") || !strcmp(a->key, "start") ||
		    !strcmp(a->key, "pid"))
			continue;
		switch (a->type) {
		case TALLY_ATTR_T_INT:
			rc = field_int(f, a->key, a->i);
			break;
		case TALLY_ATTR_T_DOUBLE:
			rc = field_float(f, a->key, a->d);
			break;
		case TALLY_ATTR_T_BOOL:
			if (!key_nonempty(a->key))
				break;
			rc = field_key(f, a->key);
			if (!rc)
				rc = buf_add(f->b, a->b ? "true" : "false",
					     a->b ? 4 : 5);
			break;
		case TALLY_ATTR_T_STRING:
			if (!key_nonempty(a->key))
				break;
			rc = field_key(f, a->key);
			if (!rc)
				rc = influx_escape_string(f->b, a->s);
			break;
		}
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* The span's own tags, sorted, plus its attribute labels. */
static int span_tags(struct influx_render *r, struct influx_buf *b,
		     const struct tally_span *sp)
{
	struct tally_label own[4], all[TAGS_STACK];
	const struct tally_label *attrs = tally_labels_pairs(sp->attrs);
	size_t nattrs = tally_labels_count(sp->attrs), n = 0;
	char depth[16], rank[16];

	snprintf(depth, sizeof(depth), "%" PRIu32, sp->depth);
	own[n++] = (struct tally_label){ "depth", depth };
	if (sp->src.rank >= 0) {
		snprintf(rank, sizeof(rank), "%" PRId32, sp->src.rank);
		own[n++] = (struct tally_label){ "rank", rank };
	}
	own[n++] = (struct tally_label){ "region", sp->name };
	own[n++] = (struct tally_label){ "trace", sp->trace };
	if (nattrs + n > TAGS_STACK)
		nattrs = TAGS_STACK - n; /* label sets that big are not spans' */
	n = tally_label_merge(own, n, attrs, nattrs, all);
	return tags_merged(r, b, all, n);
}

int influx_render_record(struct influx_render *r, struct influx_buf *b,
			 const struct tally_record *rec)
{
	size_t mark = b->len;
	struct fields f = { .b = b };
	const char *name;
	int rc;

	if (rec->kind == TALLY_REC_SPAN) {
		if (rec->span.phase != TALLY_SPAN_END)
			return 0;
		if (!rec->span.begin_ns) {
			r->no_begin++;
			return 0;
		}
		name = r->span_measurement;
	} else {
		name = rec->metric.name;
	}
	if (!key_nonempty(name)) {
		r->invalid++;
		return 0;
	}
	if (influx_escape_measurement(b, name) < 0)
		goto out_nomem;
	if (rec->kind == TALLY_REC_SPAN) {
		rc = span_tags(r, b, &rec->span);
	} else {
		rc = tags_merged(r, b, tally_labels_pairs(rec->metric.labels),
				 tally_labels_count(rec->metric.labels));
	}
	if (rc < 0 || buf_addc(b, ' ') < 0)
		goto out_nomem;
	rc = rec->kind == TALLY_REC_SPAN ? span_fields(&f, rec)
					 : metric_fields(&f, &rec->metric);
	if (rc < 0)
		goto out_nomem;
	if (!f.n) {
		/* nothing finite to write */
		b->len = mark;
		r->non_finite++;
		return 0;
	}
	r->non_finite_fields += f.skipped;
	if (timestamp(r, b, rec->ts_ns) < 0)
		goto out_nomem;
	r->points++;
	return 1;

out_nomem:
	b->len = mark;
	errno = ENOMEM;
	return -1;
}
