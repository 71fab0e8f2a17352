/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/file/render.c - JSON lines, Chrome trace event JSON and
 * CSV from records (render.h); no I/O here
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <tally/exposition.h>
#include <tally/hash.h>
#include <tally/json.h>
#include <tally/list.h>

#include "render.h"

/* ------------------------------------------------------------ the buffer */

int fbuf_reserve(struct fbuf *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->cap - b->len >= n)
		return 0;
	cap = b->cap ? b->cap : 4096;
	while (cap - b->len < n) {
		if (cap > SIZE_MAX / 2) {
			errno = ENOMEM;
			return -1;
		}
		cap *= 2;
	}
	p = realloc(b->data, cap);
	if (!p) {
		errno = ENOMEM;
		return -1;
	}
	b->data = p;
	b->cap = cap;
	return 0;
}

int fbuf_add(struct fbuf *b, const void *p, size_t n)
{
	if (fbuf_reserve(b, n) < 0)
		return -1;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

void fbuf_free(struct fbuf *b)
{
	free(b->data);
	*b = (struct fbuf){ 0 };
}

/*
 * Renderers write through these, which never fail on their own: a failed
 * allocation sets out->oom, and the caller checks it once at the end of a
 * record (the partial record is then cut back by file.c).
 */
struct out {
	struct fbuf *b;
	bool oom;
};

/* The hot path: most puts fit, and their memcpy of a constant size is
 * inlined; only growing the buffer is a call. */
static inline void put(struct out *o, const char *s, size_t n)
{
	struct fbuf *b = o->b;

	if (b->cap - b->len < n && fbuf_reserve(b, n) < 0) {
		o->oom = true;
		return;
	}
	memcpy(b->data + b->len, s, n);
	b->len += n;
}

#define PUTS(o, lit) put((o), "" lit, sizeof(lit) - 1)

static void put_str(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

static void put_u64(struct out *o, uint64_t v)
{
	static const char pairs[] = "00010203040506070809"
				    "10111213141516171819"
				    "20212223242526272829"
				    "30313233343536373839"
				    "40414243444546474849"
				    "50515253545556575859"
				    "60616263646566676869"
				    "70717273747576777879"
				    "80818283848586878889"
				    "90919293949596979899";
	char tmp[24];
	size_t i = sizeof(tmp);

	if (v < 10) {
		char c = (char)('0' + v);

		put(o, &c, 1);
		return;
	}
	/* two digits a division: ids and pids are short */
	while (v >= 100) {
		unsigned d = (unsigned)(v % 100) * 2;

		v /= 100;
		tmp[--i] = pairs[d + 1];
		tmp[--i] = pairs[d];
	}
	if (v >= 10) {
		tmp[--i] = pairs[v * 2 + 1];
		tmp[--i] = pairs[v * 2];
	} else {
		tmp[--i] = (char)('0' + v);
	}
	put(o, tmp + i, sizeof(tmp) - i);
}

static void put_i64(struct out *o, int64_t v)
{
	if (v < 0) {
		PUTS(o, "-");
		put_u64(o, (uint64_t)0 - (uint64_t)v);
	} else {
		put_u64(o, (uint64_t)v);
	}
}

/* @ns nanoseconds as "[-]S.FFF" where S = @ns / @unit, with @digits
 * decimals: microseconds (1000, 3) or seconds (1e9, 9), exactly. */
static void put_fixed(struct out *o, int64_t ns, uint64_t unit, int digits)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	uint64_t frac = a % unit;
	char tmp[12];

	if (ns < 0)
		PUTS(o, "-");
	put_u64(o, a / unit);
	tmp[0] = '.';
	for (int i = digits; i > 0; i--) {
		tmp[i] = (char)('0' + frac % 10);
		frac /= 10;
	}
	put(o, tmp, (size_t)digits + 1);
}

/* a JSON string's inside */
static void put_esc(struct out *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	/* names and ids are mostly plain ASCII: copied as they are */
	while (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
		p++;
	n = (size_t)(p - (const unsigned char *)s);
	if (!*p) {
		put(o, s, n);
		return;
	}
	n += strlen((const char *)p);
	if (fbuf_reserve(o->b, TALLY_JSON_ESCAPED_MAX(n)) < 0) {
		o->oom = true;
		return;
	}
	o->b->len += tally_json_escape(o->b->data + o->b->len,
				       o->b->cap - o->b->len, s);
}

/* "s" */
static void put_qstr(struct out *o, const char *s)
{
	PUTS(o, "\"");
	put_esc(o, s);
	PUTS(o, "\"");
}

/* a number as Prometheus writes it: NaN, +Inf and -Inf spelled out */
static void put_num(struct out *o, double v)
{
	char tmp[TALLY_EXPO_DOUBLE_MAX];

	put(o, tmp, tally_expo_format_double(tmp, v));
}

/* a JSON number; NaN and infinities, which JSON lacks, as strings */
static void put_jnum(struct out *o, double v)
{
	if (isfinite(v)) {
		put_num(o, v);
		return;
	}
	PUTS(o, "\"");
	put_num(o, v);
	PUTS(o, "\"");
}

/* ------------------------------------------------------- the renderer */

/* A process as a Chrome file names it. */
struct fproc {
	struct tally_hnode by_key;  /* (host, pid) */
	struct tally_hnode by_cpid; /* its Chrome pid */
	struct tally_list link;
	uint32_t pid;
	uint32_t cpid;	/* the pid, unless another host's process has it */
	int32_t rank;
	unsigned gen;	/* the file it was last named in */
	char host[];
};

struct fthread {
	struct tally_hnode node; /* (cpid, tid) */
	struct tally_list link;
	uint32_t cpid;
	uint32_t tid;
	unsigned gen;
};

/* A span begun and not ended yet, for a Chrome file's close. */
struct fspan {
	struct tally_hnode node; /* (host, pid, trace, span_id) */
	struct tally_list link;
	int64_t begin_ns;
	uint64_t span_id;
	uint64_t parent_id;
	uint32_t pid;
	uint32_t tid;
	uint32_t depth;
	uint32_t flags;
	int32_t rank;
	struct tally_labels *attrs;
	const char *trace;
	const char *host;
	char name[];
};

struct file_render {
	struct file_render_opts o;
	char *hostname;
	struct tally_labels *labels;
	unsigned gen;		/* files opened so far */
	uint32_t next_cpid;	/* the next Chrome pid made up */
	struct tally_htable procs, cpids, threads, spans;
	struct tally_list proc_list, thread_list, span_list;
	struct fproc *lastp;	/* the process and thread looked up last: */
	struct fthread *lastt;	/* most ends come from where the last did */
	size_t nprocs, nthreads, nspans;
	struct fbuf tmp;
	struct file_render_stats st;
};

/* Made-up Chrome pids start above Linux's largest pid (2^22). */
#define FILE_CPID_FIRST 0x400001u

struct file_render *file_render_new(const struct file_render_opts *o)
{
	struct file_render *r = calloc(1, sizeof(*r));

	if (!r)
		goto out_nomem;
	r->o = *o;
	r->hostname = strdup(o->hostname ? o->hostname : "");
	if (!r->hostname)
		goto out_nomem;
	if (o->labels && tally_labels_count(o->labels))
		r->labels = tally_labels_ref((struct tally_labels *)o->labels);
	r->o.hostname = r->hostname;
	r->o.labels = NULL;
	r->next_cpid = FILE_CPID_FIRST;
	tally_list_init(&r->proc_list);
	tally_list_init(&r->thread_list);
	tally_list_init(&r->span_list);
	return r;

out_nomem:
	free(r);
	errno = ENOMEM;
	return NULL;
}

static void span_free(struct file_render *r, struct fspan *s)
{
	tally_htable_remove(&r->spans, &s->node);
	tally_list_del(&s->link);
	tally_labels_unref(s->attrs);
	free(s);
	r->nspans--;
}

static void proc_free(struct file_render *r, struct fproc *p)
{
	if (r->lastp == p)
		r->lastp = NULL;
	tally_htable_remove(&r->procs, &p->by_key);
	tally_htable_remove(&r->cpids, &p->by_cpid);
	tally_list_del(&p->link);
	free(p);
	r->nprocs--;
}

static void thread_free(struct file_render *r, struct fthread *t)
{
	if (r->lastt == t)
		r->lastt = NULL;
	tally_htable_remove(&r->threads, &t->node);
	tally_list_del(&t->link);
	free(t);
	r->nthreads--;
}

void file_render_free(struct file_render *r)
{
	struct tally_list *l;

	if (!r)
		return;
	while ((l = tally_list_first(&r->span_list)))
		span_free(r, tally_container_of(l, struct fspan, link));
	while ((l = tally_list_first(&r->thread_list)))
		thread_free(r, tally_container_of(l, struct fthread, link));
	while ((l = tally_list_first(&r->proc_list)))
		proc_free(r, tally_container_of(l, struct fproc, link));
	tally_htable_fini(&r->spans);
	tally_htable_fini(&r->threads);
	tally_htable_fini(&r->cpids);
	tally_htable_fini(&r->procs);
	tally_labels_unref(r->labels);
	fbuf_free(&r->tmp);
	free(r->hostname);
	free(r);
}

const struct file_render_stats *file_render_stats(const struct file_render *r)
{
	return &r->st;
}

/*
 * The labels a record is written with: its own, plus the static ones for
 * keys it lacks. Return: a reference to drop with tally_labels_unref(), or
 * NULL when out of memory.
 */
static struct tally_labels *render_labels(struct file_render *r,
					  struct tally_labels *own)
{
	if (!r->labels)
		return tally_labels_ref(own ? own : tally_labels_empty());
	return tally_labels_merge(own, r->labels);
}

/* {"k":"v",...} */
static void put_label_object(struct out *o, const struct tally_labels *ls)
{
	size_t n = tally_labels_count(ls);
	const struct tally_label *kv = tally_labels_pairs(ls);

	PUTS(o, "{");
	for (size_t i = 0; i < n; i++) {
		if (i)
			PUTS(o, ",");
		put_qstr(o, kv[i].key);
		PUTS(o, ":");
		put_qstr(o, kv[i].value);
	}
	PUTS(o, "}");
}

/* "k":V for each typed value, comma-separated, a comma first when @lead
 * (JSON has no NaN: those as strings) */
static void put_values(struct out *o, const struct tally_span *sp, bool lead)
{
	for (uint32_t i = 0; i < sp->nvalues; i++) {
		const struct tally_attr *v = &sp->values[i];

		if (i || lead)
			PUTS(o, ",");
		put_qstr(o, v->key);
		PUTS(o, ":");
		switch (v->type) {
		case TALLY_ATTR_T_INT:
			put_i64(o, v->i);
			break;
		case TALLY_ATTR_T_DOUBLE:
			put_jnum(o, v->d);
			break;
		case TALLY_ATTR_T_STRING:
			put_qstr(o, v->s);
			break;
		case TALLY_ATTR_T_BOOL:
			if (v->b)
				PUTS(o, "true");
			else
				PUTS(o, "false");
			break;
		}
	}
}


static const char *const kind_names[] = {
	[TALLY_COUNTER] = "counter", [TALLY_GAUGE] = "gauge",
	[TALLY_HISTOGRAM] = "histogram", [TALLY_SUMMARY] = "summary",
	[TALLY_INFO] = "info",
};

static const char *kind_name(enum tally_metric_type t)
{
	if ((unsigned)t < sizeof(kind_names) / sizeof(kind_names[0]) &&
	    kind_names[t])
		return kind_names[t];
	return "untyped";
}

/* --------------------------------------------------------- JSON lines */

static void jsonl_metric(struct out *o, const struct tally_record *rec,
			 const struct tally_labels *ls)
{
	const struct tally_metric *m = &rec->metric;

	PUTS(o, "{\"type\":\"metric\",\"ts\":");
	put_i64(o, rec->ts_ns);
	PUTS(o, ",\"name\":");
	put_qstr(o, m->name);
	PUTS(o, ",\"kind\":\"");
	put_str(o, kind_name(m->type));
	PUTS(o, "\",\"labels\":");
	put_label_object(o, ls);
	if (m->type == TALLY_HISTOGRAM || m->type == TALLY_SUMMARY) {
		bool h = m->type == TALLY_HISTOGRAM;

		PUTS(o, ",\"count\":");
		put_u64(o, m->count);
		PUTS(o, ",\"sum\":");
		put_jnum(o, m->sum);
		if (h)
			PUTS(o, ",\"buckets\":[");
		else
			PUTS(o, ",\"quantiles\":[");
		for (size_t i = 0; i < m->n; i++) {
			put_str(o, i ? ",[" : "[");
			if (h) {
				put_jnum(o, m->buckets[i].le);
				PUTS(o, ",");
				put_u64(o, m->buckets[i].count);
			} else {
				put_jnum(o, m->quantiles[i].q);
				PUTS(o, ",");
				put_jnum(o, m->quantiles[i].value);
			}
			PUTS(o, "]");
		}
		PUTS(o, "]}\n");
		return;
	}
	PUTS(o, ",\"value\":");
	put_jnum(o, m->value);
	PUTS(o, "}\n");
}

static void jsonl_span(struct out *o, const struct tally_record *rec,
		       const struct tally_labels *ls)
{
	const struct tally_span *sp = &rec->span;
	bool first = true;

	PUTS(o, "{\"type\":\"span\",\"ts\":");
	put_i64(o, rec->ts_ns);
	if (sp->phase == TALLY_SPAN_END)
		PUTS(o, ",\"phase\":\"end\",\"trace\":");
	else
		PUTS(o, ",\"phase\":\"begin\",\"trace\":");
	put_qstr(o, sp->trace);
	PUTS(o, ",\"name\":");
	put_qstr(o, sp->name);
	PUTS(o, ",\"span_id\":");
	put_u64(o, sp->span_id);
	PUTS(o, ",\"parent_id\":");
	put_u64(o, sp->parent_id);
	PUTS(o, ",\"depth\":");
	put_u64(o, sp->depth);
	PUTS(o, ",\"host\":");
	put_qstr(o, sp->src.host);
	PUTS(o, ",\"pid\":");
	put_u64(o, sp->src.pid);
	PUTS(o, ",\"tid\":");
	put_u64(o, sp->src.tid);
	PUTS(o, ",\"rank\":");
	put_i64(o, sp->src.rank);
	if (sp->phase == TALLY_SPAN_END && sp->begin_ns) {
		PUTS(o, ",\"begin_ns\":");
		put_i64(o, sp->begin_ns);
	}
	for (uint32_t f = sp->flags; f; f &= f - 1) {
		const char *name = tally_span_flag_name(f & -f);

		if (!name)
			continue;
		put_str(o, first ? ",\"flags\":[\"" : ",\"");
		put_str(o, name);
		PUTS(o, "\"");
		first = false;
	}
	if (!first)
		PUTS(o, "]");
	if (tally_labels_count(ls)) {
		PUTS(o, ",\"attrs\":");
		put_label_object(o, ls);
	}
	if (sp->nvalues) {
		PUTS(o, ",\"values\":{");
		put_values(o, sp, false);
		PUTS(o, "}");
	}
	PUTS(o, "}\n");
}

/* ---------------------------------------------------------------- CSV */

/* One CSV field (RFC 4180): quoted when it holds a comma, a quote or a
 * line break, its quotes doubled. */
static void csv_field(struct out *o, const char *s, size_t n)
{
	const char *q;

	if (!memchr(s, ',', n) && !memchr(s, '"', n) && !memchr(s, '\n', n) &&
	    !memchr(s, '\r', n)) {
		put(o, s, n);
		return;
	}
	PUTS(o, "\"");
	while ((q = memchr(s, '"', n))) {
		put(o, s, (size_t)(q - s) + 1);
		PUTS(o, "\"");
		n -= (size_t)(q - s) + 1;
		s = q + 1;
	}
	put(o, s, n);
	PUTS(o, "\"");
}

/* a key or value inside the labels field: \ ; = escaped by a backslash */
static void csv_label_text(struct out *o, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == ';' || *s == '=')
			PUTS(o, "\\");
		put(o, s, 1);
	}
}

/*
 * One CSV line: @name@suffix, the labels (plus @xkey=@xval when @xkey),
 * @value. The labels field is built in r->tmp, then quoted as a field.
 */
static void csv_line(struct file_render *r, struct out *o, int64_t ts,
		     const char *name, const char *suffix,
		     const struct tally_labels *ls, const char *xkey,
		     double xval, double value)
{
	struct out t = { &r->tmp, false };
	size_t n = tally_labels_count(ls);
	const struct tally_label *kv = tally_labels_pairs(ls);
	char num[TALLY_EXPO_DOUBLE_MAX];

	put_fixed(o, ts, 1000000000u, 9);
	PUTS(o, ",");
	r->tmp.len = 0;
	put_str(&t, name);
	put_str(&t, suffix);
	csv_field(o, r->tmp.data, r->tmp.len);
	PUTS(o, ",");
	r->tmp.len = 0;
	for (size_t i = 0; i < n; i++) {
		if (i)
			PUTS(&t, ";");
		csv_label_text(&t, kv[i].key);
		PUTS(&t, "=");
		csv_label_text(&t, kv[i].value);
	}
	if (xkey) {
		if (n)
			PUTS(&t, ";");
		put_str(&t, xkey);
		PUTS(&t, "=");
		put(&t, num, tally_expo_format_double(num, xval));
	}
	if (t.oom)
		o->oom = true;
	else if (r->tmp.len)
		csv_field(o, r->tmp.data, r->tmp.len);
	PUTS(o, ",");
	put_num(o, value);
	PUTS(o, "\n");
}

static void csv_metric(struct file_render *r, struct out *o,
		       const struct tally_record *rec,
		       const struct tally_labels *ls)
{
	const struct tally_metric *m = &rec->metric;
	int64_t ts = rec->ts_ns;

	switch (m->type) {
	case TALLY_HISTOGRAM:
		for (size_t i = 0; i < m->n; i++)
			csv_line(r, o, ts, m->name, "_bucket", ls, "le",
				 m->buckets[i].le,
				 (double)m->buckets[i].count);
		break;
	case TALLY_SUMMARY:
		for (size_t i = 0; i < m->n; i++)
			csv_line(r, o, ts, m->name, "", ls, "quantile",
				 m->quantiles[i].q, m->quantiles[i].value);
		break;
	default:
		csv_line(r, o, ts, m->name, "", ls, NULL, 0, m->value);
		return;
	}
	csv_line(r, o, ts, m->name, "_sum", ls, NULL, 0, m->sum);
	csv_line(r, o, ts, m->name, "_count", ls, NULL, 0, (double)m->count);
}

/* ------------------------------------------------------------- Chrome */

/* Hashed on the pid alone (a pid seldom repeats across hosts); the
 * host is compared on lookup. */
static uint64_t proc_hash(const char *host, uint32_t pid)
{
	(void)host;
	return tally_hash_mix(pid);
}

static struct fproc *cpid_owner(struct file_render *r, uint32_t cpid)
{
	struct tally_hnode *n;
	uint64_t h = tally_hash_mix(cpid);

	tally_htable_for_each_hash(&r->cpids, h, n)
	{
		struct fproc *p = tally_container_of(n, struct fproc, by_cpid);

		if (p->cpid == cpid)
			return p;
	}
	return NULL;
}

/* "tally counters (HOST)": the process of the counter track */
static void chrome_self_name(struct file_render *r, struct out *o)
{
	PUTS(o, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
	put_u64(o, r->o.self_pid);
	PUTS(o, ",\"tid\":0,\"args\":{\"name\":\"tally counters (");
	put_esc(o, r->hostname);
	PUTS(o, ")\"}}");
}

static void chrome_name_proc(struct out *o, const struct fproc *p)
{
	PUTS(o, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
	put_u64(o, p->cpid);
	PUTS(o, ",\"tid\":0,\"args\":{\"name\":\"");
	if (p->rank >= 0) {
		PUTS(o, "rank ");
		put_i64(o, p->rank);
		PUTS(o, " (");
	}
	put_esc(o, p->host);
	PUTS(o, ":");
	put_u64(o, p->pid);
	if (p->rank >= 0) {
		PUTS(o, ")\"}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\","
			"\"pid\":");
		put_u64(o, p->cpid);
		PUTS(o, ",\"tid\":0,\"args\":{\"sort_index\":");
		put_i64(o, p->rank);
		PUTS(o, "}},\n");
	} else {
		PUTS(o, "\"}},\n");
	}
}

static void chrome_name_thread(struct out *o, const struct fthread *t)
{
	PUTS(o, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
	put_u64(o, t->cpid);
	PUTS(o, ",\"tid\":");
	put_u64(o, t->tid);
	PUTS(o, ",\"args\":{\"name\":\"tid ");
	put_u64(o, t->tid);
	PUTS(o, "\"}},\n");
}

/*
 * The Chrome pid of (@host, @pid), naming it (and its thread @tid) in
 * this file first if it is not yet. Processes of different hosts that
 * share a pid get distinct Chrome pids.
 */
static uint32_t chrome_pid(struct file_render *r, struct out *o,
			   const char *host, uint32_t pid, int32_t rank,
			   uint32_t tid)
{
	uint64_t h = proc_hash(host, pid), th;
	struct tally_hnode *n;
	struct fproc *p = NULL;
	struct fthread *t = NULL;
	size_t hl;

	if (r->lastp && r->lastp->pid == pid && !strcmp(r->lastp->host, host))
		p = r->lastp;
	else
		tally_htable_for_each_hash(&r->procs, h, n)
		{
			struct fproc *q =
				tally_container_of(n, struct fproc, by_key);

			if (q->pid == pid && !strcmp(q->host, host)) {
				p = q;
				break;
			}
		}
	if (!p) {
		if (r->nprocs >= r->o.max_processes) {
			r->st.unnamed++;
			return pid;
		}
		hl = strlen(host) + 1;
		p = malloc(sizeof(*p) + hl);
		if (!p || tally_htable_reserve(&r->procs) < 0 ||
		    tally_htable_reserve(&r->cpids) < 0) {
			free(p);
			o->oom = true;
			return pid;
		}
		memcpy(p->host, host, hl);
		p->pid = pid;
		p->rank = rank;
		p->gen = 0;
		p->cpid = pid;
		if (pid == r->o.self_pid || cpid_owner(r, pid)) {
			while (cpid_owner(r, r->next_cpid) ||
			       r->next_cpid == r->o.self_pid)
				r->next_cpid++;
			p->cpid = r->next_cpid++;
		}
		p->by_key.hash = h;
		p->by_cpid.hash = tally_hash_mix(p->cpid);
		tally_htable_insert(&r->procs, &p->by_key);
		tally_htable_insert(&r->cpids, &p->by_cpid);
		tally_list_add_first(&r->proc_list, &p->link);
		r->nprocs++;
	}
	r->lastp = p;
	if (p->rank < 0 && rank >= 0) {
		p->rank = rank;
		p->gen = 0; /* name it again, with its rank */
	}
	if (p->gen != r->gen) {
		p->gen = r->gen;
		chrome_name_proc(o, p);
	}
	th = tally_hash_mix(((uint64_t)p->cpid << 32) | tid);
	if (r->lastt && r->lastt->cpid == p->cpid && r->lastt->tid == tid)
		t = r->lastt;
	else
		tally_htable_for_each_hash(&r->threads, th, n)
		{
			struct fthread *q =
				tally_container_of(n, struct fthread, node);

			if (q->cpid == p->cpid && q->tid == tid) {
				t = q;
				break;
			}
		}
	if (!t) {
		if (r->nthreads >= r->o.max_processes) {
			r->st.unnamed++;
			return p->cpid;
		}
		t = malloc(sizeof(*t));
		if (!t || tally_htable_reserve(&r->threads) < 0) {
			free(t);
			o->oom = true;
			return p->cpid;
		}
		t->cpid = p->cpid;
		t->tid = tid;
		t->gen = 0;
		t->node.hash = th;
		tally_htable_insert(&r->threads, &t->node);
		tally_list_add_first(&r->thread_list, &t->link);
		r->nthreads++;
	}
	r->lastt = t;
	if (t->gen != r->gen) {
		t->gen = r->gen;
		chrome_name_thread(o, t);
	}
	return p->cpid;
}

/* One complete event ("ph":"X"), then ",\n". */
static void chrome_x(struct file_render *r, struct out *o, const char *name,
		     const char *trace, int64_t begin_ns, int64_t end_ns,
		     uint32_t cpid, uint32_t tid, uint64_t span_id,
		     uint64_t parent_id, uint32_t depth, int32_t rank,
		     uint32_t flags, const struct tally_labels *ls,
		     const struct tally_span *values, bool open)
{
	size_t n = tally_labels_count(ls);
	const struct tally_label *kv = tally_labels_pairs(ls);

	PUTS(o, "{\"ph\":\"X\",\"name\":");
	put_qstr(o, name);
	PUTS(o, ",\"cat\":");
	put_qstr(o, trace);
	PUTS(o, ",\"ts\":");
	put_fixed(o, begin_ns - r->o.origin_ns, 1000, 3);
	PUTS(o, ",\"dur\":");
	put_fixed(o, end_ns > begin_ns ? end_ns - begin_ns : 0, 1000, 3);
	PUTS(o, ",\"pid\":");
	put_u64(o, cpid);
	PUTS(o, ",\"tid\":");
	put_u64(o, tid);
	PUTS(o, ",\"args\":{\"span_id\":");
	put_u64(o, span_id);
	PUTS(o, ",\"parent_id\":");
	put_u64(o, parent_id);
	PUTS(o, ",\"depth\":");
	put_u64(o, depth);
	PUTS(o, ",\"rank\":");
	put_i64(o, rank);
	for (uint32_t f = flags; f; f &= f - 1) {
		const char *fl = tally_span_flag_name(f & -f);

		if (!fl)
			continue;
		PUTS(o, ",\"");
		put_str(o, fl);
		PUTS(o, "\":true");
	}
	if (open)
		PUTS(o, ",\"open\":true");
	for (size_t i = 0; i < n; i++) {
		PUTS(o, ",");
		put_qstr(o, kv[i].key);
		PUTS(o, ":");
		put_qstr(o, kv[i].value);
	}
	if (values)
		put_values(o, values, true);
	PUTS(o, "}},\n");
}

/* Hashed on the numbers (pid, span id); host and trace are compared on
 * lookup. */
static uint64_t span_hash(const struct tally_span *sp)
{
	return tally_hash_mix(sp->span_id * 0x9e3779b97f4a7c15ULL ^
			      sp->src.pid);
}

static struct fspan *span_find(struct file_render *r,
			       const struct tally_span *sp, uint64_t h)
{
	struct tally_hnode *n;

	tally_htable_for_each_hash(&r->spans, h, n)
	{
		struct fspan *s = tally_container_of(n, struct fspan, node);

		if (s->span_id == sp->span_id && s->pid == sp->src.pid &&
		    !strcmp(s->host, sp->src.host) &&
		    !strcmp(s->trace, sp->trace))
			return s;
	}
	return NULL;
}

/* Track a begin until its end; one allocation holds it and its strings. */
static void span_track(struct file_render *r, const struct tally_record *rec,
		       uint64_t h)
{
	const struct tally_span *sp = &rec->span;
	size_t nl = strlen(sp->name) + 1, tl = strlen(sp->trace) + 1;
	size_t hl = strlen(sp->src.host) + 1;
	struct fspan *s;
	char *p;

	/* a resumed fragment of a span still tracked: the old one goes */
	s = span_find(r, sp, h);
	if (s)
		span_free(r, s);
	if (r->nspans >= r->o.max_open_spans) {
		r->st.untracked++;
		return;
	}
	s = malloc(sizeof(*s) + nl + tl + hl);
	if (!s || tally_htable_reserve(&r->spans) < 0) {
		free(s);
		r->st.untracked++;
		return;
	}
	p = s->name;
	memcpy(p, sp->name, nl);
	s->trace = memcpy(p + nl, sp->trace, tl);
	s->host = memcpy(p + nl + tl, sp->src.host, hl);
	s->begin_ns = rec->ts_ns;
	s->span_id = sp->span_id;
	s->parent_id = sp->parent_id;
	s->pid = sp->src.pid;
	s->tid = sp->src.tid ? sp->src.tid : sp->src.pid;
	s->depth = sp->depth;
	s->flags = sp->flags;
	s->rank = sp->src.rank;
	s->attrs = tally_labels_ref(sp->attrs ? sp->attrs
					      : tally_labels_empty());
	s->node.hash = h;
	tally_htable_insert(&r->spans, &s->node);
	tally_list_add_first(&r->span_list, &s->link);
	r->nspans++;
}

static void chrome_span(struct file_render *r, struct out *o,
			const struct tally_record *rec,
			const struct tally_labels *ls)
{
	const struct tally_span *sp = &rec->span;
	uint64_t h = span_hash(sp);
	uint32_t tid = sp->src.tid ? sp->src.tid : sp->src.pid;
	uint32_t flags = sp->flags;
	struct fspan *s;
	int64_t begin;
	uint32_t cpid;

	if (sp->phase != TALLY_SPAN_END) {
		span_track(r, rec, h);
		return;
	}
	s = span_find(r, sp, h);
	begin = sp->begin_ns ? sp->begin_ns : s ? s->begin_ns : rec->ts_ns;
	if (s)
		span_free(r, s);
	else if (!sp->begin_ns)
		flags |= TALLY_SPAN_ORPHAN_END;
	cpid = chrome_pid(r, o, sp->src.host, sp->src.pid, sp->src.rank, tid);
	chrome_x(r, o, sp->name, sp->trace, begin, rec->ts_ns, cpid, tid,
		 sp->span_id, sp->parent_id, sp->depth, sp->src.rank, flags, ls,
		 sp, false);
}

/* A counter event ("ph":"C") on tallyd's counter track. */
static int chrome_metric(struct file_render *r, struct out *o,
			 const struct tally_record *rec,
			 const struct tally_labels *ls)
{
	const struct tally_metric *m = &rec->metric;
	bool hist = m->type == TALLY_HISTOGRAM || m->type == TALLY_SUMMARY;
	struct out t = { &r->tmp, false };
	size_t n;

	if (hist ? !isfinite(m->sum) : !isfinite(m->value))
		return 0;
	/* name{labels} as Prometheus writes it: one track per series */
	r->tmp.len = 0;
	put_str(&t, m->name);
	n = tally_expo_format_labels(NULL, 0, ls, NULL);
	if (n && fbuf_reserve(&r->tmp, n + 1) == 0)
		r->tmp.len += tally_expo_format_labels(
			r->tmp.data + r->tmp.len, n + 1, ls, NULL);
	if (t.oom || fbuf_add(&r->tmp, "", 1) < 0) {
		o->oom = true;
		return 1;
	}
	PUTS(o, "{\"ph\":\"C\",\"name\":");
	put_qstr(o, r->tmp.data);
	PUTS(o, ",\"ts\":");
	put_fixed(o, rec->ts_ns - r->o.origin_ns, 1000, 3);
	PUTS(o, ",\"pid\":");
	put_u64(o, r->o.self_pid);
	PUTS(o, ",\"tid\":");
	put_u64(o, r->o.self_pid);
	if (hist) {
		PUTS(o, ",\"args\":{\"count\":");
		put_u64(o, m->count);
		PUTS(o, ",\"sum\":");
		put_num(o, m->sum);
	} else {
		PUTS(o, ",\"args\":{\"value\":");
		put_num(o, m->value);
	}
	PUTS(o, "}},\n");
	return 1;
}

/* ------------------------------------------------------------ the API */

int file_render_open(struct file_render *r, struct fbuf *b, int64_t real_ns,
		     int64_t mono_ns, bool restate)
{
	struct out o = { b, false };
	struct tally_list *l, *next;

	switch (r->o.format) {
	case FILE_FMT_JSONL:
		PUTS(&o, "{\"type\":\"clock_anchor\",\"hostname\":");
		put_qstr(&o, r->hostname);
		PUTS(&o, ",\"realtime_ns\":");
		put_i64(&o, real_ns);
		PUTS(&o, ",\"monotonic_ns\":");
		put_i64(&o, mono_ns);
		PUTS(&o, "}\n");
		break;
	case FILE_FMT_CHROME:
		if (!restate) {
			/* forget who was not in the file just closed */
			r->gen++;
			for (l = r->thread_list.next; l != &r->thread_list;
			     l = next) {
				struct fthread *t = tally_container_of(
					l, struct fthread, link);

				next = l->next;
				if (t->gen + 1 < r->gen)
					thread_free(r, t);
			}
			for (l = r->proc_list.next; l != &r->proc_list;
			     l = next) {
				struct fproc *p = tally_container_of(
					l, struct fproc, link);

				next = l->next;
				if (p->gen + 1 < r->gen)
					proc_free(r, p);
			}
		}
		PUTS(&o, "{\"displayTimeUnit\":\"ms\",\"otherData\":{"
			 "\"tally_clock_anchor\":{\"hostname\":");
		put_qstr(&o, r->hostname);
		PUTS(&o, ",\"realtime_ns\":");
		put_i64(&o, real_ns);
		PUTS(&o, ",\"monotonic_ns\":");
		put_i64(&o, mono_ns);
		PUTS(&o, ",\"ts_origin_realtime_ns\":");
		put_i64(&o, r->o.origin_ns);
		PUTS(&o, "}},\"traceEvents\":[\n");
		chrome_self_name(r, &o);
		PUTS(&o, ",\n");
		if (!restate)
			break;
		for (l = r->proc_list.prev; l != &r->proc_list; l = l->prev) {
			struct fproc *p = tally_container_of(l, struct fproc,
							     link);

			if (p->gen == r->gen)
				chrome_name_proc(&o, p);
		}
		for (l = r->thread_list.prev; l != &r->thread_list;
		     l = l->prev) {
			struct fthread *t = tally_container_of(
				l, struct fthread, link);

			if (t->gen == r->gen)
				chrome_name_thread(&o, t);
		}
		break;
	case FILE_FMT_CSV:
		break;
	}
	if (o.oom) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

int file_render_record(struct file_render *r, struct fbuf *b,
		       const struct tally_record *rec, const char **why)
{
	struct out o = { b, false };
	struct tally_labels *ls;
	int ret = 1;

	*why = NULL;
	if (rec->kind == TALLY_REC_SPAN && r->o.format == FILE_FMT_CSV) {
		*why = "span_in_csv";
		return 0;
	}
	if (rec->kind != TALLY_REC_SPAN && rec->kind != TALLY_REC_METRIC) {
		*why = "unknown_kind";
		return 0;
	}
	/* a begin in a Chrome file is only remembered: no labels needed */
	if (r->o.format == FILE_FMT_CHROME && rec->kind == TALLY_REC_SPAN &&
	    rec->span.phase != TALLY_SPAN_END) {
		chrome_span(r, &o, rec, NULL);
		return 1;
	}
	ls = render_labels(r, rec->kind == TALLY_REC_SPAN ? rec->span.attrs
							   : rec->metric.labels);
	if (!ls) {
		errno = ENOMEM;
		return -1;
	}
	switch (r->o.format) {
	case FILE_FMT_JSONL:
		if (rec->kind == TALLY_REC_SPAN)
			jsonl_span(&o, rec, ls);
		else
			jsonl_metric(&o, rec, ls);
		break;
	case FILE_FMT_CHROME:
		if (rec->kind == TALLY_REC_SPAN)
			chrome_span(r, &o, rec, ls);
		else if (!chrome_metric(r, &o, rec, ls)) {
			*why = "not_finite";
			ret = 0;
		}
		break;
	case FILE_FMT_CSV:
		csv_metric(r, &o, rec, ls);
		break;
	}
	tally_labels_unref(ls);
	if (o.oom) {
		errno = ENOMEM;
		return -1;
	}
	return ret;
}

void file_render_forget(struct file_render *r, const struct tally_record *rec)
{
	struct fspan *s;

	if (r->o.format != FILE_FMT_CHROME || rec->kind != TALLY_REC_SPAN)
		return;
	if (rec->span.phase == TALLY_SPAN_END) {
		s = span_find(r, &rec->span, span_hash(&rec->span));
		if (s)
			span_free(r, s);
	}
}

int file_render_close(struct file_render *r, struct fbuf *b, int64_t now_ns)
{
	struct out o = { b, false };
	struct tally_list *l;

	if (r->o.format != FILE_FMT_CHROME)
		return 0;
	/* still open: written up to now, oldest first, marked open */
	for (l = r->span_list.prev; l != &r->span_list; l = l->prev) {
		struct fspan *s = tally_container_of(l, struct fspan, link);
		struct tally_labels *ls = render_labels(r, s->attrs);
		uint32_t cpid;

		if (!ls) {
			o.oom = true;
			break;
		}
		cpid = chrome_pid(r, &o, s->host, s->pid, s->rank, s->tid);
		chrome_x(r, &o, s->name, s->trace, s->begin_ns, now_ns, cpid,
			 s->tid, s->span_id, s->parent_id, s->depth, s->rank,
			 s->flags, ls, NULL, true);
		tally_labels_unref(ls);
	}
	/* the last element has no comma after it */
	chrome_self_name(r, &o);
	PUTS(&o, "\n]}\n");
	if (o.oom) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}
