/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/graphite/render.c - records to Graphite plaintext lines
 * (render.h says what; doc/plugins/graphite.md has the tables)
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <event2/buffer.h>

#include <tally/exposition.h>
#include <tally/hash.h>

#include "render.h"

/* ---- escaping ------------------------------------------------------------ */

#define X_ALL	 0x1 /* replaced everywhere */
#define X_DOT	 0x2 /* '.' */
#define X_TAGKEY 0x4 /* replaced in tag names only */

/* The class of byte @c (the table of render.h's enum gr_ctx). */
static unsigned gr_class(unsigned char c)
{
	if (c < 0x20 || c == 0x7f)
		return X_ALL;
	switch (c) {
	case ' ': case ';': case '/': case '\\': case '"': case '\'':
	case '*': case '?': case '[': case ']': case '{': case '}':
	case '(': case ')': case ',':
		return X_ALL;
	case '.':
		return X_DOT;
	case '!': case '^': case '=':
		return X_TAGKEY;
	}
	return 0;
}

size_t gr_escape(char *dst, const char *src, enum gr_ctx ctx)
{
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)src; *p; p++) {
		unsigned k = gr_class(*p);
		char ch = (char)*p;

		if (k & X_ALL)
			ch = '_';
		else if (k & X_DOT) {
			if (ctx == GR_CTX_NODE)
				ch = '_';
			else if (ctx == GR_CTX_NAME &&
				 (n == 0 || dst[n - 1] == '.'))
				continue; /* no empty node */
		} else if ((k & X_TAGKEY) && ctx == GR_CTX_TAGKEY)
			ch = '_';
		else if (ch == '~' && n == 0 &&
			 (ctx == GR_CTX_NAME || ctx == GR_CTX_TAGVAL))
			ch = '_';
		dst[n++] = ch;
	}
	if (ctx == GR_CTX_NAME)
		while (n && dst[n - 1] == '.')
			n--;
	dst[n] = '\0';
	return n;
}

/* ---- layout -------------------------------------------------------------- */

static bool gr_label_key_ok(const char *k)
{
	if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
	      *k == '_'))
		return false;
	for (k++; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= 'A' && *k <= 'Z') ||
		      (*k >= '0' && *k <= '9') || *k == '_'))
			return false;
	return true;
}

int gr_layout_parse(const char *const *items, size_t n, struct gr_part *parts,
		    size_t *nparts, char *err, size_t errlen)
{
	struct gr_part p[GR_MAX_PARTS];
	size_t names = 0, rest = 0;

	if (n > GR_MAX_PARTS) {
		snprintf(err, errlen, "layout: %zu parts, at most %d", n,
			 GR_MAX_PARTS);
		goto out_inval;
	}
	for (size_t i = 0; i < n; i++) {
		const char *s = items[i];

		if (!strcmp(s, "prefix"))
			p[i] = (struct gr_part){ GR_PART_PREFIX, NULL };
		else if (!strcmp(s, "name"))
			p[i] = (struct gr_part){ GR_PART_NAME, NULL };
		else if (!strcmp(s, "labels"))
			p[i] = (struct gr_part){ GR_PART_LABELS, NULL };
		else if (gr_label_key_ok(s))
			p[i] = (struct gr_part){ GR_PART_LABEL, s };
		else {
			snprintf(err, errlen,
				 "layout: \"%s\" is neither prefix, name, "
				 "labels nor a label name",
				 s);
			goto out_inval;
		}
		names += p[i].kind == GR_PART_NAME;
		rest += p[i].kind == GR_PART_LABELS;
		for (size_t j = 0; j < i; j++) {
			if (p[j].kind == p[i].kind &&
			    (p[i].kind != GR_PART_LABEL ||
			     !strcmp(p[j].key, s))) {
				snprintf(err, errlen,
					 "layout: \"%s\" appears twice", s);
				goto out_inval;
			}
		}
	}
	if (names != 1) {
		snprintf(err, errlen, "layout: \"name\" must appear once");
		goto out_inval;
	}
	/* without it, series that differ in another label share a path */
	if (!rest) {
		snprintf(err, errlen,
			 "layout: \"labels\" must appear (the labels not "
			 "named would be left out, and series that differ in "
			 "them would write one path)");
		goto out_inval;
	}
	memcpy(parts, p, n * sizeof(*p));
	*nparts = n;
	return 0;

out_inval:
	errno = EINVAL;
	return -1;
}

/* ---- regions (span time) ------------------------------------------------- */

/*
 * One region's time counters. @seconds and @calls are what the lines
 * already sent said; a render works on @new_* and gr_render_commit()
 * keeps them, so that a batch the sender refused counts once when it
 * comes again.
 */
struct gr_region {
	struct tally_hnode node;
	struct gr_region *next_dirty;
	bool dirty;
	double seconds, calls;
	double new_seconds, new_calls;
	int64_t last_ts;
	int32_t rank;
	struct tally_labels *attrs;
	char *trace;
	char *region;
};

static uint64_t region_hash(const char *trace, const char *name, int32_t rank,
			    const struct tally_labels *attrs)
{
	uint64_t h = tally_hash_str(TALLY_HASH_SEED, trace);

	h = tally_hash_str(h, name);
	h = tally_hash_bytes(h, &rank, sizeof(rank));
	return tally_hash_mix(h ^ tally_labels_hash(attrs));
}

static struct gr_region *region_get(struct gr_render *r,
				    const struct tally_span *sp, bool *full)
{
	struct tally_labels *attrs = sp->attrs ? sp->attrs
					       : tally_labels_empty();
	uint64_t h = region_hash(sp->trace, sp->name, sp->src.rank, attrs);
	struct tally_hnode *n;
	struct gr_region *g;

	*full = false;
	tally_htable_for_each_hash(&r->regions, h, n)
	{
		g = tally_container_of(n, struct gr_region, node);
		if (g->rank == sp->src.rank && g->attrs == attrs &&
		    !strcmp(g->trace, sp->trace) &&
		    !strcmp(g->region, sp->name))
			return g;
	}
	if (r->regions.n >= r->max_regions) {
		*full = true;
		return NULL;
	}
	if (tally_htable_reserve(&r->regions) < 0)
		return NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return NULL;
	g->trace = strdup(sp->trace);
	g->region = strdup(sp->name);
	if (!g->trace || !g->region) {
		free(g->trace);
		free(g->region);
		free(g);
		errno = ENOMEM;
		return NULL;
	}
	g->rank = sp->src.rank;
	g->attrs = tally_labels_ref(attrs);
	g->node.hash = h;
	tally_htable_insert(&r->regions, &g->node);
	return g;
}

static void region_free(struct gr_region *g)
{
	tally_labels_unref(g->attrs);
	free(g->trace);
	free(g->region);
	free(g);
}

/* ---- lines --------------------------------------------------------------- */

static int line_room(struct gr_render *r, size_t len, size_t more)
{
	size_t need = len + more + 1;

	if (need > r->line_cap) {
		size_t cap = r->line_cap ? r->line_cap : 256;
		char *p;

		while (cap < need)
			cap *= 2;
		p = realloc(r->line, cap);
		if (!p) {
			errno = ENOMEM;
			return -1;
		}
		r->line = p;
		r->line_cap = cap;
	}
	return 0;
}

size_t gr_node_cut(char *node, size_t len)
{
	uint64_t h;
	size_t keep = GR_NODE_KEEP;

	if (len <= GR_NODE_MAX)
		return len;
	h = tally_hash_bytes(TALLY_HASH_SEED, node, len);
	/* whole UTF-8 characters: back off a continuation byte */
	while (keep && ((unsigned char)node[keep] & 0xc0) == 0x80)
		keep--;
	/* 9 bytes and a NUL, within the node's len > GR_NODE_MAX bytes */
	snprintf(node + keep, 10, "_%08x", (unsigned)(h & 0xffffffffu));
	return keep + 9;
}

/* Cut every node of r->line[@from, *len) longer than GR_NODE_MAX. */
static void line_cut_nodes(struct gr_render *r, size_t from, size_t *len)
{
	size_t at = from;

	while (at < *len) {
		char *p = r->line + at;
		char *dot = memchr(p, '.', *len - at);
		size_t n = dot ? (size_t)(dot - p) : *len - at;
		size_t m = gr_node_cut(p, n);

		if (m < n) {
			memmove(p + m, p + n, *len - at - n);
			*len -= n - m;
		}
		at += m + 1;
	}
}

/* Append @s escaped for @ctx, after a '.' unless it starts the line. */
static int line_node(struct gr_render *r, size_t *len, const char *s,
		     enum gr_ctx ctx, bool dot)
{
	size_t n, from;

	if (line_room(r, *len, strlen(s) + 1) < 0)
		return -1;
	if (dot && *len)
		r->line[(*len)++] = '.';
	from = *len;
	n = gr_escape(r->line + *len, s, ctx);
	/* carbon strips a ~ that starts the path (its name tag): a label
	 * value first in the layout loses it like a name does */
	if (!from && n && r->line[0] == '~')
		r->line[0] = '_';
	if (!n && dot && *len)
		(*len)--; /* nothing left of it: no empty node */
	*len += n;
	/* a whisper file or directory per node: the file name limit */
	if (n > GR_NODE_MAX && r->format == GR_FMT_PATH)
		line_cut_nodes(r, from, len);
	return 0;
}

static int line_raw(struct gr_render *r, size_t *len, const char *s)
{
	size_t n = strlen(s);

	if (line_room(r, *len, n) < 0)
		return -1;
	memcpy(r->line + *len, s, n);
	*len += n;
	return 0;
}

/* The name node(s), "_" if the name escapes to nothing; a suffix goes
 * after them (r->mark). */
static int line_name(struct gr_render *r, size_t *len, const char *name)
{
	size_t at = *len;

	if (line_node(r, len, name, GR_CTX_NAME, true) < 0)
		return -1;
	if (*len == at && line_raw(r, len, at ? "._" : "_") < 0)
		return -1;
	r->mark = *len;
	return 0;
}

static bool part_named(const struct gr_render *r, const char *key)
{
	for (size_t i = 0; i < r->nparts; i++)
		if (r->parts[i].kind == GR_PART_LABEL &&
		    !strcmp(r->parts[i].key, key))
			return true;
	return false;
}

static const char *pairs_get(const struct tally_label *v, size_t n,
			     const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(v[i].key, key))
			return v[i].value;
	return NULL;
}

/*
 * The path of series NAME with labels @v (sorted, @n) into r->line
 * (r->len bytes), without a suffix: that goes at r->mark, after the name.
 */
static int path_build(struct gr_render *r, const char *name,
		      const struct tally_label *v, size_t n)
{
	size_t len = 0;

	if (r->format == GR_FMT_TAGS) {
		if (r->prefix[0] && line_raw(r, &len, r->prefix) < 0)
			return -1;
		if (line_name(r, &len, name) < 0)
			return -1;
		for (size_t i = 0; i < n; i++) {
			if (!v[i].value[0])
				continue;
			if (line_raw(r, &len, ";") < 0 ||
			    /* carbon's own "name" tag is the path */
			    (!strcmp(v[i].key, "name") &&
			     line_raw(r, &len, "_") < 0) ||
			    line_node(r, &len, v[i].key, GR_CTX_TAGKEY,
				      false) < 0 ||
			    line_raw(r, &len, "=") < 0 ||
			    line_node(r, &len, v[i].value, GR_CTX_TAGVAL,
				      false) < 0)
				return -1;
		}
	} else {
		for (size_t k = 0; k < r->nparts; k++) {
			const struct gr_part *p = &r->parts[k];
			const char *val;
			int rc = 0;

			switch (p->kind) {
			case GR_PART_PREFIX:
				if (r->prefix[0])
					rc = line_node(r, &len, r->prefix,
						       GR_CTX_NAME, true);
				break;
			case GR_PART_NAME:
				rc = line_name(r, &len, name);
				break;
			case GR_PART_LABEL:
				val = pairs_get(v, n, p->key);
				if (val && *val)
					rc = line_node(r, &len, val,
						       GR_CTX_NODE, true);
				break;
			case GR_PART_LABELS:
				for (size_t i = 0; i < n && !rc; i++)
					if (v[i].value[0] &&
					    !part_named(r, v[i].key))
						rc = line_node(r, &len,
							       v[i].value,
							       GR_CTX_NODE,
							       true);
				break;
			}
			if (rc < 0)
				return -1;
		}
	}
	r->len = len;
	return 0;
}

/* Decimal digits of @v (no sign) ending at @end; return: the first. */
static char *u64_digits(char *end, uint64_t v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

/*
 * One line of the path in r->line with @suffix (NULL: none) after the
 * name, straight into @out's space. Non-finite values are counted and
 * left out.
 */
static int path_emit(struct gr_render *r, struct evbuffer *out,
		     const char *suffix, double value, int64_t ts_s,
		     struct gr_counts *c)
{
	char num[TALLY_EXPO_DOUBLE_MAX], tsb[24], *t = tsb + sizeof(tsb);
	size_t slen = suffix ? strlen(suffix) : 0, nlen, tlen, len;
	struct evbuffer_iovec iov;
	char *p;

	if (!isfinite(value)) {
		c->non_finite++;
		return 0;
	}
	nlen = tally_expo_format_double(num, value);
	t = u64_digits(t, ts_s < 0 ? (uint64_t)0 - (uint64_t)ts_s
				   : (uint64_t)ts_s);
	if (ts_s < 0)
		*--t = '-';
	tlen = (size_t)(tsb + sizeof(tsb) - t);
	len = r->len + slen + nlen + tlen + 3;
	if (evbuffer_reserve_space(out, (ev_ssize_t)len, &iov, 1) < 1)
		goto out_nomem;
	p = iov.iov_base;
	memcpy(p, r->line, r->mark);
	p += r->mark;
	if (slen)
		memcpy(p, suffix, slen);
	p += slen;
	memcpy(p, r->line + r->mark, r->len - r->mark);
	p += r->len - r->mark;
	*p++ = ' ';
	memcpy(p, num, nlen);
	p += nlen;
	*p++ = ' ';
	memcpy(p, t, tlen);
	p += tlen;
	*p++ = '\n';
	iov.iov_len = len;
	if (evbuffer_commit_space(out, &iov, 1) < 0)
		goto out_nomem;
	c->points++;
	return 0;

out_nomem:
	errno = ENOMEM;
	return -1;
}

/* One line: NAME+SUFFIX with labels @v (sorted, @n) at @ts_s. */
static int emit(struct gr_render *r, struct evbuffer *out, const char *name,
		const char *suffix, const struct tally_label *v, size_t n,
		double value, int64_t ts_s, struct gr_counts *c)
{
	if (!isfinite(value)) {
		c->non_finite++;
		return 0;
	}
	if (path_build(r, name, v, n) < 0)
		return -1;
	return path_emit(r, out, suffix, value, ts_s, c);
}

/* Room for @n pairs in each half of the scratch array. */
static int pairs_room(struct gr_render *r, size_t n)
{
	if (2 * n > r->pairs_cap) {
		size_t cap = 2 * n + 16;
		struct tally_label *p = realloc(r->pairs, cap * sizeof(*p));

		if (!p) {
			errno = ENOMEM;
			return -1;
		}
		r->pairs = p;
		r->pairs_cap = cap;
	}
	return 0;
}

/*
 * @own (sorted, @nown) under the static labels into the first half of the
 * scratch array. Return: the count, or -1 (ENOMEM).
 */
static ssize_t merge_static(struct gr_render *r, const struct tally_label *own,
			    size_t nown)
{
	size_t ns = tally_labels_count(r->labels);

	if (pairs_room(r, nown + ns + 1) < 0)
		return -1;
	return (ssize_t)tally_label_merge(own, nown, tally_labels_pairs(r->labels),
					  ns, r->pairs);
}

/* The @n pairs plus {key=val} (which wins), in the second half. */
static const struct tally_label *with_pair(struct gr_render *r, size_t n,
					   const char *key, const char *val,
					   size_t *m)
{
	struct tally_label one = { key, val };
	struct tally_label *dst = r->pairs + r->pairs_cap / 2;

	*m = tally_label_merge(&one, 1, r->pairs, n, dst);
	return dst;
}

static int64_t ts_seconds(int64_t ns)
{
	/* whole seconds, rounded down (also before 1970) */
	return ns >= 0 ? ns / 1000000000 : -((-ns + 999999999) / 1000000000);
}

static void fmt_le(char *buf, size_t len, double le)
{
	if (isinf(le))
		snprintf(buf, len, "+Inf");
	else
		tally_expo_format_double(buf, le);
}

static int render_histogram(struct gr_render *r, struct evbuffer *out,
			    const struct tally_metric *m, size_t n,
			    int64_t ts, struct gr_counts *c)
{
	char le[32];
	size_t k;
	const struct tally_label *v;

	for (size_t i = 0; i < m->n; i++) {
		fmt_le(le, sizeof(le), m->buckets[i].le);
		v = with_pair(r, n, "le", le, &k);
		if (emit(r, out, m->name, "_bucket", v, k,
			 (double)m->buckets[i].count, ts, c) < 0)
			return -1;
	}
	if (emit(r, out, m->name, "_count", r->pairs, n, (double)m->count, ts,
		 c) < 0)
		return -1;
	return emit(r, out, m->name, "_sum", r->pairs, n, m->sum, ts, c);
}

static int render_summary(struct gr_render *r, struct evbuffer *out,
			  const struct tally_metric *m, size_t n, int64_t ts,
			  struct gr_counts *c)
{
	char q[32];
	size_t k;
	const struct tally_label *v;

	for (size_t i = 0; i < m->n; i++) {
		tally_expo_format_double(q, m->quantiles[i].q);
		v = with_pair(r, n, "quantile", q, &k);
		if (emit(r, out, m->name, NULL, v, k, m->quantiles[i].value, ts,
			 c) < 0)
			return -1;
	}
	if (emit(r, out, m->name, "_count", r->pairs, n, (double)m->count, ts,
		 c) < 0)
		return -1;
	return emit(r, out, m->name, "_sum", r->pairs, n, m->sum, ts, c);
}

/*
 * etsy statsd's per-flush names (REFERENCE.md): counters .count and
 * .rate; gauges the bare name; sets .count; timers and histograms .count,
 * .count_ps, .sum, .mean, .lower, .upper, .median, .upper_P per
 * percentile P (90, 99_9) and .histogram.bin_LE per bucket, the
 * observations in that bin only (etsy's bins are not cumulative).
 * Statistics an empty interval does not have (NaN) are left out
 * silently: that is no value, not a bad one.
 */
static int emit_stat(struct gr_render *r, struct evbuffer *out,
		     const char *suffix, double v, int64_t ts,
		     struct gr_counts *c)
{
	if (isnan(v))
		return 0;
	return path_emit(r, out, suffix, v, ts, c);
}

static int render_interval(struct gr_render *r, struct evbuffer *out,
			   const struct tally_metric *m, size_t n, int64_t ts,
			   struct gr_counts *c)
{
	const struct tally_interval *iv = m->interval;
	char sfx[64], num[TALLY_EXPO_DOUBLE_MAX];

	if (!iv) {
		c->other++;
		return 0;
	}
	switch (m->type) {
	case TALLY_COUNTER:
	case TALLY_GAUGE:
	case TALLY_HISTOGRAM:
	case TALLY_SUMMARY:
		break;
	default:
		c->other++;
		return 0;
	}
	/* the series' path once, its statistics' lines after it */
	if (path_build(r, m->name, r->pairs, n) < 0)
		return -1;
	switch (m->type) {
	case TALLY_COUNTER:
		if (path_emit(r, out, ".count", m->value, ts, c) < 0)
			return -1;
		return path_emit(r, out, ".rate", tally_interval_rate(m), ts,
				 c);
	case TALLY_GAUGE:
		return path_emit(r, out,
				 (iv->flags & TALLY_INTERVAL_SET) ? ".count"
								  : NULL,
				 m->value, ts, c);
	default:
		break;
	}
	if (path_emit(r, out, ".count", iv->count, ts, c) < 0 ||
	    path_emit(r, out, ".count_ps", tally_interval_rate(m), ts, c) <
		    0 ||
	    path_emit(r, out, ".sum", iv->sum, ts, c) < 0 ||
	    emit_stat(r, out, ".mean", tally_interval_mean(m), ts, c) < 0 ||
	    emit_stat(r, out, ".lower", iv->min, ts, c) < 0 ||
	    emit_stat(r, out, ".upper", iv->max, ts, c) < 0 ||
	    emit_stat(r, out, ".median", iv->median, ts, c) < 0)
		return -1;
	for (uint32_t i = 0; i < iv->nquantiles; i++) {
		size_t k;

		snprintf(num, sizeof(num), "%.10g",
			 iv->quantiles[i].q * 100.0);
		for (k = 0; num[k]; k++)
			if (num[k] == '.')
				num[k] = '_';
		snprintf(sfx, sizeof(sfx), ".upper_%s", num);
		if (emit_stat(r, out, sfx, iv->quantiles[i].value, ts, c) < 0)
			return -1;
	}
	for (uint32_t i = 0; i < iv->nbuckets; i++) {
		uint64_t below = i ? iv->buckets[i - 1].count : 0;
		size_t k;

		if (isinf(iv->buckets[i].le))
			snprintf(num, sizeof(num), "inf");
		else
			tally_expo_format_double(num, iv->buckets[i].le);
		for (k = 0; num[k]; k++)
			if (num[k] == '.' || num[k] == '-')
				num[k] = num[k] == '.' ? '_' : 'm';
		snprintf(sfx, sizeof(sfx), ".histogram.bin_%s", num);
		if (path_emit(r, out, sfx,
			      (double)(iv->buckets[i].count - below), ts,
			      c) < 0)
			return -1;
	}
	return 0;
}

static int render_metric(struct gr_render *r, struct evbuffer *out,
			 const struct tally_record *rec, struct gr_counts *c)
{
	const struct tally_metric *m = &rec->metric;
	int64_t ts = ts_seconds(rec->ts_ns);
	ssize_t n = merge_static(r, tally_labels_pairs(m->labels),
				 tally_labels_count(m->labels));

	if (n < 0)
		return -1;
	if (m->form == TALLY_FORM_INTERVAL)
		return render_interval(r, out, m, (size_t)n, ts, c);
	if (m->form != TALLY_FORM_CUMULATIVE) {
		c->other++;
		return 0;
	}
	switch (m->type) {
	case TALLY_HISTOGRAM:
		return render_histogram(r, out, m, (size_t)n, ts, c);
	case TALLY_SUMMARY:
		return render_summary(r, out, m, (size_t)n, ts, c);
	default:
		return emit(r, out, m->name, NULL, r->pairs, (size_t)n,
			    m->value, ts, c);
	}
}

/* A span end adds its time to its region, on the render's side. */
static int render_span(struct gr_render *r, const struct tally_record *rec,
		       struct gr_counts *c)
{
	const struct tally_span *sp = &rec->span;
	struct gr_region *g;
	bool full;
	bool call;

	if (sp->phase != TALLY_SPAN_END) {
		c->other++;
		return 0;
	}
	if (sp->begin_ns <= 0 || sp->begin_ns > rec->ts_ns) {
		c->no_begin++;
		return 0;
	}
	g = region_get(r, sp, &full);
	if (!g) {
		if (!full)
			return -1;
		c->regions_full++;
		return 0;
	}
	if (!g->dirty) {
		g->dirty = true;
		g->new_seconds = g->seconds;
		g->new_calls = g->calls;
		g->next_dirty = r->dirty;
		r->dirty = g;
	}
	/* a flat stream's call is counted once, at its last fragment */
	call = !(sp->flags & TALLY_SPAN_FRAGMENT) ||
	       (sp->flags & TALLY_SPAN_LAST);
	g->new_seconds += (double)(rec->ts_ns - sp->begin_ns) / 1e9;
	g->new_calls += call;
	if (rec->ts_ns > g->last_ts)
		g->last_ts = rec->ts_ns;
	return 0;
}

static int render_regions(struct gr_render *r, struct evbuffer *out,
			  struct gr_counts *c)
{
	for (struct gr_region *g = r->dirty; g; g = g->next_dirty) {
		char rank[16];
		struct tally_label own[3];
		size_t k = 0, na = tally_labels_count(g->attrs);
		struct tally_label *tmp;
		ssize_t n;
		int64_t ts = ts_seconds(g->last_ts);

		/* own pairs in key order: rank, region, trace */
		if (g->rank >= 0) {
			snprintf(rank, sizeof(rank), "%d", (int)g->rank);
			own[k++] = (struct tally_label){ "rank", rank };
		}
		own[k++] = (struct tally_label){ "region", g->region };
		own[k++] = (struct tally_label){ "trace", g->trace };
		tmp = malloc((k + na) * sizeof(*tmp));
		if (!tmp) {
			errno = ENOMEM;
			return -1;
		}
		k = tally_label_merge(own, k, tally_labels_pairs(g->attrs), na,
				      tmp);
		n = merge_static(r, tmp, k);
		free(tmp);
		if (n < 0 ||
		    emit(r, out, "tally_trace_region_seconds_total", NULL,
			 r->pairs, (size_t)n, g->new_seconds, ts, c) < 0 ||
		    emit(r, out, "tally_trace_region_calls_total", NULL,
			 r->pairs, (size_t)n, g->new_calls, ts, c) < 0)
			return -1;
	}
	return 0;
}

int gr_render_batch(struct gr_render *r, const struct tally_batch *b,
		    struct evbuffer *out, struct gr_counts *c)
{
	const struct tally_record *v = tally_batch_records(b);
	size_t n = tally_batch_count(b);

	gr_render_abort(r);
	for (size_t i = 0; i < n; i++) {
		int rc = v[i].kind == TALLY_REC_METRIC
				 ? render_metric(r, out, &v[i], c)
				 : render_span(r, &v[i], c);

		if (rc < 0)
			return -1;
	}
	return render_regions(r, out, c);
}

void gr_render_commit(struct gr_render *r)
{
	for (struct gr_region *g = r->dirty; g; g = g->next_dirty) {
		g->seconds = g->new_seconds;
		g->calls = g->new_calls;
		g->dirty = false;
	}
	r->dirty = NULL;
}

void gr_render_abort(struct gr_render *r)
{
	for (struct gr_region *g = r->dirty; g; g = g->next_dirty)
		g->dirty = false;
	r->dirty = NULL;
}

size_t gr_render_regions(const struct gr_render *r)
{
	return r->regions.n;
}

int gr_render_init(struct gr_render *r, enum gr_format format,
		   const char *prefix, const struct gr_part *parts,
		   size_t nparts, struct tally_labels *labels,
		   size_t max_regions)
{
	const char *p = prefix ? prefix : "";

	r->format = format;
	r->prefix = malloc(strlen(p) + 1);
	if (!r->prefix) {
		errno = ENOMEM;
		return -1;
	}
	gr_escape(r->prefix, p, GR_CTX_NAME);
	memcpy(r->parts, parts, nparts * sizeof(*parts));
	r->nparts = nparts;
	r->labels = tally_labels_ref(labels ? labels : tally_labels_empty());
	r->max_regions = max_regions;
	return 0;
}

void gr_render_fini(struct gr_render *r)
{
	struct tally_hnode *p, *nx;
	size_t i;

	tally_htable_for_each_safe(&r->regions, i, p, nx)
	{
		tally_htable_remove(&r->regions, p);
		region_free(tally_container_of(p, struct gr_region, node));
	}
	tally_htable_fini(&r->regions);
	tally_labels_unref(r->labels);
	free(r->prefix);
	free(r->line);
	free(r->pairs);
	memset(r, 0, sizeof(*r));
}
