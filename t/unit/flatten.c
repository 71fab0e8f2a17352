/* SPDX-License-Identifier: MIT */
/*
 * t/unit/flatten.c - the flatten filter's state: flat fragment sequences,
 * time attributed once, self time, limits
 *
 * A case is a span event script and the exact flat sequence it must give,
 * both in a compact notation:
 *
 *   event    [TRACE|][PID.TID:]{+|-}NAME ID[^PARENT]@TS[!a|!e]
 *            a begin (+) or end (-) of span ID named NAME, child of PARENT,
 *            at TS; !a / !e flag an end ABANDONED / EVICTED (as zmq_trace
 *            synthesizes them). The lane defaults to trace T, pid 1, tid 0.
 *   record   [TRACE|][PID.TID:]{+|-}NAME ID@TS[R][L][A][E][*][sSELF]
 *            a fragment begin (+) or end (-) of span ID at TS, flagged
 *            RESUMED, LAST, ABANDONED, EVICTED; * marks the record standing
 *            for the applied event itself (struct flatten_frag.own);
 *            sSELF is the self time handed with a LAST end.
 *
 * Every case also goes through a checker of the flat stream's contract
 * (state.h), against an independent model of each lane (its clamped time
 * line, its tracked open spans with the depth cap, the time during which
 * it had one open): every record a fragment; per lane at most one fragment
 * open, begins and ends alternating, an end matching its begin (id, name,
 * begin_ns, RESUMED) and never before it, a begin never before the lane's
 * previous end; depth, parent and name those of the span; after every
 * event the shown span is the model's innermost (outermost) open span, and
 * the closed fragments plus the open one up to the lane's time add up
 * exactly to the lane's busy time; each shown span gets one first
 * fragment and, once ended, one LAST end at its end time, whose self time
 * equals a brute-force union of its children's clamped intervals. Random
 * nestings (seeded, thousands of cases) go through the same checker.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "../../plugins/filter/flatten/state.h"

#define INNER FLATTEN_INNERMOST
#define OUTER FLATTEN_OUTERMOST

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p)
		bail_out("out of memory");
	return p;
}

/* ---- the model: what the contract says, without the state's algorithm */

struct span_info {
	uint64_t id;
	uint64_t parent_id;
	long parent; /* spans[] index of the open span it was a child of */
	uint32_t depth;
	int lane;
	int64_t begin, end; /* end < 0: still open */
	char name[48];
	int first_frags; /* fragments without RESUMED seen */
	int lasts;	 /* LAST ends seen */
};

struct model_lane {
	char trace[16];
	uint32_t pid, tid;
	bool seen;
	int64_t last_ts; /* the clamped time line's now */
	long *open;	 /* spans[] indices, begin order */
	uint32_t n, cap;
	uint32_t overflow;
	int64_t busy; /* time with n > 0 */
	/* what the records say */
	bool frag_open;
	bool frag_resumed;
	long frag_span;
	int64_t frag_begin;
	int64_t last_end;
	int64_t frag_sum; /* closed fragments */
};

#define MAX_LANES 96

static struct {
	struct model_lane lanes[MAX_LANES];
	int nlanes;
	struct span_info *spans;
	long nspans, capspans;
	long closed_now[64]; /* spans closed by the current event */
	int nclosed_now;
	uint32_t max_depth;
	enum flatten_keep keep;
	bool self_time;
	bool brute_self; /* check self times (O(n^2): small cases only) */
	int failures;
} m;

static void model_reset(uint32_t max_depth, enum flatten_keep keep,
			bool self_time)
{
	for (int i = 0; i < MAX_LANES; i++)
		free(m.lanes[i].open);
	free(m.spans);
	memset(&m, 0, sizeof(m));
	m.max_depth = max_depth;
	m.keep = keep;
	m.self_time = self_time;
	m.brute_self = true;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	char buf[256];
	va_list ap;

	if (m.failures++ >= 8)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	diag("contract broken: %s", buf);
}

static struct model_lane *model_lane(const char *trace, uint32_t pid,
				     uint32_t tid, bool create)
{
	struct model_lane *l;

	for (int i = 0; i < m.nlanes; i++) {
		l = &m.lanes[i];
		if (l->pid == pid && l->tid == tid && !strcmp(l->trace, trace))
			return l;
	}
	if (!create)
		return NULL;
	if (m.nlanes == MAX_LANES)
		bail_out("too many lanes");
	l = &m.lanes[m.nlanes++];
	snprintf(l->trace, sizeof(l->trace), "%s", trace);
	l->pid = pid;
	l->tid = tid;
	l->frag_span = -1;
	l->last_end = INT64_MIN;
	return l;
}

/* Newest open span of @l with id @id, as an index into l->open; or -1. */
static long model_find(const struct model_lane *l, uint64_t id)
{
	for (uint32_t i = l->n; i-- > 0;)
		if (m.spans[l->open[i]].id == id)
			return i;
	return -1;
}

static void model_event(const struct tally_span *sp, int64_t ts)
{
	struct model_lane *l = model_lane(sp->trace, sp->src.pid, sp->src.tid,
					  sp->phase == TALLY_SPAN_BEGIN);
	struct span_info *s;
	long i;

	m.nclosed_now = 0;
	if (!l)
		return; /* an end in a lane never seen: an orphan */
	if (l->seen && ts < l->last_ts)
		ts = l->last_ts;
	if (l->seen && l->n)
		l->busy += ts - l->last_ts;
	l->seen = true;
	l->last_ts = ts;

	if (sp->phase == TALLY_SPAN_END) {
		i = model_find(l, sp->span_id);
		if (i < 0) {
			if (l->overflow)
				l->overflow--;
			return;
		}
		m.spans[l->open[i]].end = ts;
		m.closed_now[m.nclosed_now++] = l->open[i];
		memmove(&l->open[i], &l->open[i + 1],
			(l->n - (uint32_t)i - 1) * sizeof(l->open[0]));
		l->n--;
		return;
	}
	if (l->n >= m.max_depth) {
		l->overflow++;
		return;
	}
	if (m.nspans == m.capspans) {
		m.capspans = m.capspans ? m.capspans * 2 : 1024;
		m.spans = xrealloc(m.spans, m.capspans * sizeof(*m.spans));
	}
	s = &m.spans[m.nspans];
	memset(s, 0, sizeof(*s));
	s->id = sp->span_id;
	s->parent_id = sp->parent_id;
	s->parent = -1;
	if (sp->parent_id && (i = model_find(l, sp->parent_id)) >= 0)
		s->parent = l->open[i];
	s->depth = sp->depth;
	s->lane = (int)(l - m.lanes);
	s->begin = ts;
	s->end = -1;
	snprintf(s->name, sizeof(s->name), "%s", sp->name);
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->open = xrealloc(l->open, l->cap * sizeof(l->open[0]));
	}
	l->open[l->n++] = m.nspans++;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Self time of ended span @p: its duration minus the union of its
 * children's intervals, each clamped to it. */
static int64_t brute_self(long p)
{
	const struct span_info *ps = &m.spans[p];
	int64_t(*iv)[2] = NULL, u = 0, cur_s = 0, cur_e = 0;
	size_t n = 0;

	for (long c = p + 1; c < m.nspans; c++) {
		const struct span_info *cs = &m.spans[c];
		int64_t e;

		if (cs->parent != p)
			continue;
		e = cs->end < 0 || cs->end > ps->end ? ps->end : cs->end;
		iv = xrealloc(iv, (n + 1) * sizeof(*iv));
		iv[n][0] = cs->begin < ps->begin ? ps->begin : cs->begin;
		iv[n][1] = e;
		n++;
	}
	if (n)
		qsort(iv, n, sizeof(*iv), cmp_i64); /* by start */
	for (size_t k = 0; k < n; k++) {
		if (k == 0 || iv[k][0] > cur_e) {
			u += cur_e - cur_s;
			cur_s = iv[k][0];
			cur_e = iv[k][1];
		} else if (iv[k][1] > cur_e) {
			cur_e = iv[k][1];
		}
	}
	if (n)
		u += cur_e - cur_s;
	free(iv);
	return ps->end - ps->begin - u;
}

/* The span a fragment record is of. */
static long record_span(const struct model_lane *l,
			const struct flatten_frag *f)
{
	long i;

	/* an end of the open fragment (ids may repeat: it decides) */
	if (f->span.phase == TALLY_SPAN_END && l->frag_open &&
	    m.spans[l->frag_span].id == f->span.span_id &&
	    (!(f->span.flags & TALLY_SPAN_LAST) ||
	     m.spans[l->frag_span].end >= 0))
		return l->frag_span;
	if (!(f->span.flags & TALLY_SPAN_LAST)) {
		i = model_find(l, f->span.span_id);
		if (i >= 0)
			return l->open[i];
	}
	for (int k = m.nclosed_now; k-- > 0;)
		if (m.spans[m.closed_now[k]].id == f->span.span_id)
			return m.closed_now[k];
	return -1;
}

static void check_record(const struct flatten_frag *f, const char *name)
{
	const struct tally_span *r = &f->span;
	struct model_lane *l =
		model_lane(r->trace, r->src.pid, r->src.tid, false);
	struct span_info *s;
	long si;

	if (!(r->flags & TALLY_SPAN_FRAGMENT))
		fail("record not flagged as a fragment");
	if (!l) {
		fail("record in a lane without events");
		return;
	}
	si = record_span(l, f);
	if (si < 0) {
		fail("record of span %" PRIu64 " that is not open", r->span_id);
		return;
	}
	s = &m.spans[si];
	if (strcmp(name, s->name) || r->depth != s->depth ||
	    r->parent_id != s->parent_id)
		fail("span %" PRIu64 ": name, depth or parent changed",
		     r->span_id);
	if (f->ts_ns > l->last_ts)
		fail("record after the lane's time");

	if (r->phase == TALLY_SPAN_BEGIN) {
		bool resumed = r->flags & TALLY_SPAN_RESUMED;

		if (l->frag_open)
			fail("lane %u.%u: two fragments open", l->pid, l->tid);
		if (f->ts_ns < l->last_end)
			fail("fragment of %" PRIu64 " begins before the "
			     "previous one ended",
			     r->span_id);
		if (r->begin_ns != f->ts_ns)
			fail("begin's begin_ns is not its time");
		if (resumed != (s->first_frags > 0))
			fail("span %" PRIu64 ": RESUMED wrong", r->span_id);
		if (r->flags & (TALLY_SPAN_LAST | TALLY_SPAN_ABANDONED |
				TALLY_SPAN_EVICTED))
			fail("end flags on a begin");
		s->first_frags += !resumed;
		l->frag_open = true;
		l->frag_resumed = resumed;
		l->frag_span = si;
		l->frag_begin = f->ts_ns;
		if (f->self_ns != -1)
			fail("self time on a begin");
		return;
	}
	if (!l->frag_open || l->frag_span != si) {
		fail("end of span %" PRIu64 " whose fragment is not open",
		     r->span_id);
		return;
	}
	if (f->ts_ns < l->frag_begin || r->begin_ns != l->frag_begin)
		fail("end of %" PRIu64 " before its begin, or begin_ns wrong",
		     r->span_id);
	if (!!(r->flags & TALLY_SPAN_RESUMED) != l->frag_resumed)
		fail("RESUMED differs between a fragment's begin and end");
	l->frag_sum += f->ts_ns - l->frag_begin;
	l->last_end = f->ts_ns;
	l->frag_open = false;
	if (!(r->flags & TALLY_SPAN_LAST)) {
		if (f->self_ns != -1)
			fail("self time on an end that is not LAST");
		return;
	}
	if (s->end != f->ts_ns)
		fail("LAST end of %" PRIu64 " at %lld, the span ended at %lld",
		     r->span_id, (long long)f->ts_ns, (long long)s->end);
	if (++s->lasts > 1)
		fail("span %" PRIu64 ": two LAST ends", r->span_id);
	if (!m.self_time) {
		if (f->self_ns != -1)
			fail("self time without self_time");
	} else if (m.brute_self && f->self_ns != brute_self(si)) {
		fail("span %" PRIu64 ": self %lld, brute force %lld",
		     r->span_id, (long long)f->self_ns,
		     (long long)brute_self(si));
	}
}

/* After an event: the shown span and the time sum of every lane. */
static void check_lanes(void)
{
	for (int i = 0; i < m.nlanes; i++) {
		struct model_lane *l = &m.lanes[i];
		long want = -1;
		int64_t sum = l->frag_sum;

		if (l->n)
			want = l->open[m.keep == INNER ? l->n - 1 : 0];
		if ((l->frag_open ? l->frag_span : -1) != want)
			fail("lane %u.%u shows span #%ld, the model #%ld",
			     l->pid, l->tid, l->frag_open ? l->frag_span : -1,
			     want);
		if (l->frag_open)
			sum += l->last_ts - l->frag_begin;
		if (sum != l->busy)
			fail("lane %u.%u: fragments add up to %lld, busy %lld",
			     l->pid, l->tid, (long long)sum,
			     (long long)l->busy);
	}
}

/* At the end of a case: every shown span had one first fragment, and one
 * LAST end if it ended. */
static void check_spans(void)
{
	for (long i = 0; i < m.nspans; i++) {
		const struct span_info *s = &m.spans[i];

		if (s->first_frags > 1)
			fail("span %" PRIu64 " began %d first fragments", s->id,
			     s->first_frags);
		if (s->first_frags && s->end >= 0 && s->lasts != 1)
			fail("span %" PRIu64 " shown, ended, %d LAST ends",
			     s->id, s->lasts);
		if (!s->first_frags && s->lasts)
			fail("span %" PRIu64 " never shown has a LAST end",
			     s->id);
		if (m.keep == INNER && !s->first_frags)
			fail("innermost: span %" PRIu64 " never shown", s->id);
	}
}

/* ---- the sink */

static char out[1 << 22];
static size_t outlen;
static bool out_truncated;
static bool checking = true;
static int fail_emit;
static uint64_t nemitted;

static void out_put(const struct flatten_frag *f)
{
	const struct tally_span *s = &f->span;
	char buf[160];
	int n = 0;

	if (strcmp(s->trace, "T"))
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "%s|",
			      s->trace);
	if (s->src.pid != 1 || s->src.tid != 0)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n,
			      "%u.%u:", s->src.pid, s->src.tid);
	n += snprintf(
		buf + n, sizeof(buf) - (size_t)n,
		"%s%s%" PRIu64 "@%lld%s%s%s%s%s",
		s->phase == TALLY_SPAN_BEGIN ? "+" : "-", s->name, s->span_id,
		(long long)f->ts_ns, s->flags & TALLY_SPAN_RESUMED ? "R" : "",
		s->flags & TALLY_SPAN_LAST ? "L" : "",
		s->flags & TALLY_SPAN_ABANDONED ? "A" : "",
		s->flags & TALLY_SPAN_EVICTED ? "E" : "", f->own ? "*" : "");
	if (f->self_ns >= 0)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "s%lld",
			      (long long)f->self_ns);
	if (outlen + (size_t)n + 2 >= sizeof(out)) {
		out_truncated = true;
		return;
	}
	outlen += (size_t)snprintf(out + outlen, sizeof(out) - outlen, "%s%s",
				   outlen ? " " : "", buf);
}

static int sink_emit(void *ctx, const struct flatten_frag *f)
{
	(void)ctx;
	if (fail_emit)
		return -1;
	nemitted++;
	if (checking)
		check_record(f, f->span.name);
	out_put(f);
	return 0;
}

static const struct flatten_sink sink = { .emit = sink_emit };

static const char *take(void)
{
	static char copy[sizeof(out)];

	memcpy(copy, out, outlen + 1);
	outlen = 0;
	out[0] = '\0';
	out_truncated = false;
	return copy;
}

/* ---- driving the state */

static int64_t now_mono;

static int feed(struct flatten_state *st, const struct tally_span *sp,
		int64_t ts)
{
	int rc;

	if (checking)
		model_event(sp, ts);
	rc = flatten_state_apply(st, sp, ts, now_mono, &sink);
	if (checking)
		check_lanes();
	return rc;
}

/* Parse one event of the notation above into @sp (static strings). */
static int64_t parse_event(const char *tok, struct tally_span *sp)
{
	static char trace[16], name[48];
	static uint32_t depths[1 << 16];
	const char *p = tok, *bar = strchr(tok, '|'), *colon = strchr(tok, ':');
	size_t n = 0;
	int64_t ts;

	memset(sp, 0, sizeof(*sp));
	snprintf(trace, sizeof(trace), "T");
	if (bar) {
		snprintf(trace, sizeof(trace), "%.*s", (int)(bar - p), p);
		p = bar + 1;
	}
	sp->src.pid = 1;
	if (colon) {
		sp->src.pid = (uint32_t)strtoul(p, (char **)&p, 10);
		sp->src.tid = (uint32_t)strtoul(p + 1, (char **)&p, 10);
		p = colon + 1;
	}
	sp->phase = *p++ == '+' ? TALLY_SPAN_BEGIN : TALLY_SPAN_END;
	while (*p >= 'A' && *p <= 'z' && n < sizeof(name) - 1)
		name[n++] = *p++;
	name[n] = '\0';
	sp->span_id = strtoull(p, (char **)&p, 10);
	if (*p == '^')
		sp->parent_id = strtoull(p + 1, (char **)&p, 10);
	if (*p++ != '@')
		bail_out("bad event %s", tok);
	ts = strtoll(p, (char **)&p, 10);
	if (*p == '!')
		sp->flags =
			p[1] == 'a' ? TALLY_SPAN_ABANDONED : TALLY_SPAN_EVICTED;
	/* depth: one below the parent's, as zmq_trace gives it */
	if (sp->phase == TALLY_SPAN_BEGIN && sp->span_id < 1 << 16) {
		sp->depth = sp->parent_id && sp->parent_id < 1 << 16
				    ? depths[sp->parent_id] + 1
				    : 0;
		depths[sp->span_id] = sp->depth;
	} else if (sp->span_id < 1 << 16) {
		sp->depth = depths[sp->span_id];
	}
	sp->trace = trace;
	sp->name = name;
	sp->src.host = "h";
	sp->src.rank = (int32_t)sp->src.pid - 1;
	return ts;
}

static void run_script(struct flatten_state *st, const char *script)
{
	char *copy = strdup(script), *save = NULL;

	for (char *tok = strtok_r(copy, " ", &save); tok;
	     tok = strtok_r(NULL, " ", &save)) {
		struct tally_span sp;
		int64_t ts = parse_event(tok, &sp);

		feed(st, &sp, ts);
	}
	free(copy);
}

static struct flatten_state *new_state(enum flatten_keep keep, bool self_time,
				       uint32_t max_depth, uint32_t max_lanes)
{
	struct flatten_opts o = {
		.keep = keep,
		.self_time = self_time,
		.max_depth = max_depth,
		.max_lanes = max_lanes,
	};
	struct flatten_state *st = flatten_state_new(&o);

	if (!st)
		bail_out("flatten_state_new: %s", strerror(errno));
	model_reset(max_depth, keep, self_time);
	return st;
}

/* ---- the table */

/* clang-format off */
static const struct flat_case {
	const char *what;
	enum flatten_keep keep;
	bool self_time;
	uint32_t max_depth;
	const char *events;
	const char *flat;
	int64_t sum; /* fragments' total: the lane's traced wall time */
} cases[] = {
	{ "well nested, innermost: the parent resumes after each child",
	  INNER, false, 64,
	  "+A1@0 +B2^1@10 +C3^2@20 -C3@30 -B2@40 -A1@100",
	  "+A1@0* -A1@10 +B2@10* -B2@20 +C3@20* -C3@30L* +B2@30R -B2@40RL* "
	  "+A1@40R -A1@100RL*", 100 },
	{ "well nested, outermost: one fragment of the top marker",
	  OUTER, false, 64,
	  "+A1@0 +B2^1@10 +C3^2@20 -C3@30 -B2@40 -A1@100",
	  "+A1@0* -A1@100L*", 100 },
	{ "self time, innermost: each span's own time on its LAST end",
	  INNER, true, 64,
	  "+A1@0 +B2^1@10 +C3^2@20 -C3@30 -B2@40 -A1@100",
	  "+A1@0* -A1@10 +B2@10* -B2@20 +C3@20* -C3@30L*s10 +B2@30R "
	  "-B2@40RL*s20 +A1@40R -A1@100RL*s70", 100 },
	{ "self time, outermost: computed for the shown span",
	  OUTER, true, 64,
	  "+A1@0 +B2^1@10 +C3^2@20 -C3@30 -B2@40 -A1@100",
	  "+A1@0* -A1@100L*s70", 100 },
	{ "siblings with gaps: idle time is no one's",
	  INNER, false, 64,
	  "+A1@0 -A1@10 +B2@20 +C3^2@21 -C3@24 -B2@25",
	  "+A1@0* -A1@10L* +B2@20* -B2@21 +C3@21* -C3@24L* +B2@24R "
	  "-B2@25RL*", 15 },
	{ "end out of nesting order, innermost: a zero-length LAST "
	  "fragment fitted into the child's",
	  INNER, true, 64,
	  "+A1@0 +B2^1@10 -A1@50 -B2@80",
	  "+A1@0* -A1@10 +B2@10* -B2@50 +A1@50R -A1@50RL*s10 +B2@50R "
	  "-B2@80RL*s70", 80 },
	{ "end out of nesting order, outermost: the child is shown from "
	  "the parent's end",
	  OUTER, true, 64,
	  "+A1@0 +B2^1@10 -A1@50 -B2@80",
	  "+A1@0* -A1@50L*s10 +B2@50 -B2@80L*s70", 80 },
	{ "end out of order of a span never shown (outermost): no record",
	  OUTER, false, 64,
	  "+A1@0 +B2^1@10 +C3^2@20 -B2@30 -C3@40 -A1@50",
	  "+A1@0* -A1@50L*", 50 },
	{ "Omnistat reuses a marker: two open spans named A",
	  INNER, false, 64,
	  "+A1@0 +A2^1@10 -A2@20 -A1@30",
	  "+A1@0* -A1@10 +A2@10* -A2@20L* +A1@20R -A1@30RL*", 30 },
	{ "two open spans with one id: an end closes the newest",
	  INNER, false, 64,
	  "+A1@0 +A1@10 -A1@20 -A1@30",
	  "+A1@0* -A1@10 +A1@10* -A1@20L* +A1@20R -A1@30RL*", 30 },
	{ "overlapping same-name spans ending first-begun first",
	  INNER, false, 64,
	  "+A1@0 +A2@10 -A1@20 -A2@30",
	  "+A1@0* -A1@10 +A2@10* -A2@20 +A1@20R -A1@20RL* +A2@20R "
	  "-A2@30RL*", 30 },
	{ "an end without a begin is dropped",
	  INNER, false, 64,
	  "-X9@5 +A1@10 -X8@15 -A1@20 -X7@25",
	  "+A1@10* -A1@20L*", 10 },
	{ "a begin never ended: zmq_trace's abandoned ends, innermost "
	  "first at one time",
	  INNER, true, 64,
	  "+A1@0 +B2^1@10 +C3^2@20 -C3@500!a -B2@500!a -A1@500!a",
	  "+A1@0* -A1@10 +B2@10* -B2@20 +C3@20* -C3@500LA*s480 +B2@500R "
	  "-B2@500RLA*s10 +A1@500R -A1@500RLA*s10", 500 },
	{ "evicted by zmq_trace's open-span cap: the oldest ends first",
	  INNER, false, 64,
	  "+A1@0 +B2^1@10 -A1@20!e -B2@30",
	  "+A1@0* -A1@10 +B2@10* -B2@20 +A1@20R -A1@20RLE* +B2@20R "
	  "-B2@30RL*", 30 },
	{ "timestamps slightly out of order: taken as the lane's latest",
	  INNER, true, 64,
	  "+A1@100 +B2^1@90 -B2@150 -A1@140",
	  "+A1@100* -A1@100 +B2@100* -B2@150L*s50 +A1@150R -A1@150RL*s0",
	  50 },
	{ "a begin stamped before the previous span ended",
	  INNER, false, 64,
	  "+A1@0 -A1@100 +B2@95 -B2@120",
	  "+A1@0* -A1@100L* +B2@100* -B2@120L*", 120 },
	{ "an end stamped before its begin: zero length, not negative",
	  INNER, true, 64,
	  "+A1@100 -A1@90",
	  "+A1@100* -A1@100L*s0", 0 },
	{ "depth cap: deeper begins untracked, their time stays above",
	  INNER, true, 2,
	  "+A1@0 +B2^1@10 +C3^2@20 +D4^3@25 -D4@28 -C3@30 -B2@40 -A1@50",
	  "+A1@0* -A1@10 +B2@10* -B2@40L*s30 +A1@40R -A1@50RL*s20", 50 },
	{ "depth cap: an unknown end is taken as an untracked begin's",
	  INNER, false, 1,
	  "+A1@0 +B2^1@10 -Z9@20 -A1@30 -Y8@40",
	  "+A1@0* -A1@30L*", 30 },
	{ "self time: overlapping children count once",
	  INNER, true, 64,
	  "+P1@0 +C2^1@10 +D3^1@20 -C2@30 -D3@40 -P1@100",
	  "+P1@0* -P1@10 +C2@10* -C2@20 +D3@20* -D3@30 +C2@30R "
	  "-C2@30RL*s20 +D3@30R -D3@40RL*s20 +P1@40R -P1@100RL*s70", 100 },
	{ "self time: a child outliving its parent is clamped to it",
	  INNER, true, 64,
	  "+P1@0 +C2^1@10 -P1@50 -C2@80",
	  "+P1@0* -P1@10 +C2@10* -C2@50 +P1@50R -P1@50RL*s10 +C2@50R "
	  "-C2@80RL*s70", 80 },
	{ "self time: grandchildren are the children's, gaps are the "
	  "parent's",
	  INNER, true, 64,
	  "+P1@0 +C2^1@10 +G3^2@12 -G3@18 -C2@20 +C4^1@30 -C4@50 -P1@60",
	  "+P1@0* -P1@10 +C2@10* -C2@12 +G3@12* -G3@18L*s6 +C2@18R "
	  "-C2@20RL*s4 +P1@20R -P1@30R +C4@30* -C4@50L*s20 +P1@50R "
	  "-P1@60RL*s30", 60 },
	{ "self time: a child of an unknown parent is nobody's",
	  INNER, true, 64,
	  "+P1@0 +C2^7@10 -C2@20 -P1@30",
	  "+P1@0* -P1@10 +C2@10* -C2@20L*s10 +P1@20R -P1@30RL*s30", 30 },
	{ "threads: one flat region per (pid, tid)",
	  INNER, false, 64,
	  "1.1:+A1@0 1.2:+B2@5 1.1:+C3^1@10 1.2:-B2@15 1.1:-C3@20 "
	  "1.1:-A1@30",
	  "1.1:+A1@0* 1.2:+B2@5* 1.1:-A1@10 1.1:+C3@10* 1.2:-B2@15L* "
	  "1.1:-C3@20L* 1.1:+A1@20R 1.1:-A1@30RL*", 40 },
	{ "traces: one lane per trace id (Omnistat: the trace is the rank)",
	  INNER, false, 64,
	  "3|0.0:+solve1@0 4|0.0:+solve1@1 3|0.0:+io2^1@2 4|0.0:-solve1@3 "
	  "3|0.0:-io2@4 3|0.0:-solve1@5",
	  "3|0.0:+solve1@0* 4|0.0:+solve1@1* 3|0.0:-solve1@2 3|0.0:+io2@2* "
	  "4|0.0:-solve1@3L* 3|0.0:-io2@4L* 3|0.0:+solve1@4R "
	  "3|0.0:-solve1@5RL*", 7 },
	{ NULL },
};
/* clang-format on */

static void test_table(void)
{
	for (const struct flat_case *c = cases; c->what; c++) {
		struct flatten_state *st =
			new_state(c->keep, c->self_time, c->max_depth, 64);
		int64_t sum = 0;

		run_script(st, c->events);
		for (int i = 0; i < m.nlanes; i++)
			sum += m.lanes[i].frag_sum +
			       (m.lanes[i].frag_open
					? m.lanes[i].last_ts -
						  m.lanes[i].frag_begin
					: 0);
		check_spans();
		is(take(), c->flat, "%s", c->what);
		cmp_ok(sum, "==", c->sum, "  fragments add up to %lld",
		       (long long)c->sum);
		cmp_ok(m.failures, "==", 0, "  the stream keeps the contract");
		flatten_state_free(st);
	}
}

static void test_counters(void)
{
	struct flatten_state *st = new_state(INNER, false, 2, 64);
	const struct flatten_counters *k = flatten_state_counters(st);
	struct tally_span sp = { 0 };

	run_script(st, "-X9@5 +A1@10 +B2^1@11 +C3^2@12 -C3@13 -Q4@14 -B2@9 "
		       "-A1@20 +D5@18 -D5@30");
	take();
	cmp_ok(k->orphan_end, "==", 2,
	       "orphan ends counted (lane unknown, "
	       "id unknown)");
	cmp_ok(k->depth_limit, "==", 2,
	       "untracked begin and its end "
	       "counted");
	cmp_ok(k->reordered, "==", 2, "events stamped backwards counted");
	cmp_ok(k->fragments, "==", 4, "fragments counted");
	cmp_ok(flatten_state_open_spans(st), "==", 0, "nothing open");
	cmp_ok(flatten_state_lanes(st), "==", 1, "one lane kept");

	sp.phase = TALLY_SPAN_BEGIN;
	sp.trace = "T";
	cmp_ok(flatten_state_apply(st, &sp, 1, 0, &sink), "==", 0,
	       "a span without a name is dropped...");
	cmp_ok(k->malformed, "==", 1, "...and counted");
	ok(!outlen, "...and emits nothing");
	flatten_state_free(st);
}

static void test_lanes(void)
{
	struct flatten_state *st = new_state(INNER, false, 64, 2);
	const struct flatten_counters *k = flatten_state_counters(st);

	checking = false;
	run_script(st, "1.0:+A1@0 1.0:+B2^1@5 2.0:+X1@1 3.0:+Y1@10");
	is(take(),
	   "+A1@0* -A1@5 +B2@5* 2.0:+X1@1* -B2@5LE +A1@5R -A1@5RLE "
	   "3.0:+Y1@10*",
	   "a new lane beyond max_lanes evicts the least recently active "
	   "one, its spans ending at its last time");
	cmp_ok(k->lane_evicted, "==", 1, "eviction counted");
	cmp_ok(flatten_state_lanes(st), "==", 2, "two lanes kept");
	run_script(st, "1.0:-B2@20");
	is(take(), "", "the evicted lane's later end is an orphan");

	/* Expiry: empty lanes only, and only when silent long enough. */
	now_mono = 100;
	run_script(st, "2.0:-X1@30");
	now_mono = 200;
	run_script(st, "4.0:+Z1@40 4.0:-Z1@41");
	take();
	cmp_ok(flatten_state_expire(st, 150), "==", 1,
	       "the lane silent since 100, empty, is expired at 150");
	cmp_ok(flatten_state_lanes(st), "==", 1, "the other is kept");
	run_script(st, "4.0:+W2@39 4.0:-W2@45");
	is(take(), "4.0:+W2@41* 4.0:-W2@45L*",
	   "a kept lane still clamps a late timestamp to its time line");
	cmp_ok(flatten_state_expire(st, 201), "==", 1, "expired at 201");
	run_script(st, "5.0:+V1@0");
	cmp_ok(flatten_state_expire(st, 1000), "==", 0,
	       "a lane with an open span is never expired");
	take();
	flatten_state_free(st);
	checking = true;
}

static void test_emit_failure(void)
{
	struct flatten_state *st = new_state(INNER, false, 64, 64);
	const struct flatten_counters *k = flatten_state_counters(st);

	checking = false;
	fail_emit = 1;
	run_script(st, "+A1@0 +B2^1@10");
	fail_emit = 0;
	cmp_ok(k->emit_failed, "==", 3, "records the sink refused counted");
	run_script(st, "-B2@20 -A1@30");
	is(take(), "-B2@20L* +A1@20R -A1@30RL*",
	   "the state stays consistent after the sink failed");
	flatten_state_free(st);
	checking = true;
}

static void test_bad_opts(void)
{
	struct flatten_opts o = { .keep = INNER,
				  .max_depth = 0,
				  .max_lanes = 1 };

	errno = 0;
	ok(!flatten_state_new(&o) && errno == EINVAL, "max_depth 0: EINVAL");
	o.max_depth = 1;
	o.max_lanes = 0;
	ok(!flatten_state_new(&o) && errno == EINVAL, "max_lanes 0: EINVAL");
	o.max_lanes = 1;
	o.keep = 7;
	ok(!flatten_state_new(&o) && errno == EINVAL, "unknown keep: EINVAL");
	flatten_state_free(NULL);
	ok(1, "flatten_state_free(NULL) is a no-op");
}

/*
 * 20000-deep nesting: the span at depth d begins at d and ends at 40000 - d,
 * so each first fragment lasts 1 (the deepest 2) and each resume 1.
 */
#define DEEP 20000

static void deep_script(struct flatten_state *st)
{
	char name[16];
	struct tally_span sp = { .trace = "T",
				 .src = { .host = "h", .pid = 1 },
				 .name = name };

	for (uint32_t d = 0; d < DEEP; d++) {
		snprintf(name, sizeof(name), "f%u", d);
		sp.phase = TALLY_SPAN_BEGIN;
		sp.span_id = d + 1;
		sp.parent_id = d;
		sp.depth = d;
		feed(st, &sp, d);
	}
	for (uint32_t d = DEEP; d-- > 0;) {
		snprintf(name, sizeof(name), "f%u", d);
		sp.phase = TALLY_SPAN_END;
		sp.span_id = d + 1;
		sp.parent_id = d;
		sp.depth = d;
		feed(st, &sp, 2 * DEEP - d);
	}
}

static void test_deep(void)
{
	struct flatten_state *st = new_state(INNER, true, DEEP, 64);
	const struct flatten_counters *k = flatten_state_counters(st);
	const char *s;

	nemitted = 0;
	m.brute_self = false;
	deep_script(st);
	check_spans();
	s = take();
	cmp_ok(m.failures, "==", 0,
	       "20000 deep: the stream keeps the "
	       "contract");
	cmp_ok(nemitted, "==", 2 * (DEEP + DEEP - 1),
	       "20000 deep: 20000 first fragments and 19999 resumes");
	cmp_ok(k->fragments, "==", DEEP + DEEP - 1, "fragments counted");
	cmp_ok(m.lanes[0].frag_sum, "==", 2 * DEEP,
	       "20000 deep: fragments add up to the wall time");
	ok(!strncmp(s, "+f01@0* -f01@1 +f12@1* -f12@2 +f23@2*", 36),
	   "20000 deep: starts one fragment per level");
	ok(strstr(s, "+f1999920000@19999* -f1999920000@20001L*s2 "
		     "+f1999819999@20001R -f1999819999@20002RL*s2 "),
	   "20000 deep: the deepest span lasts 2, its parent resumes for 1");
	cmp_ok(flatten_state_open_spans(st), "==", 0, "nothing left open");
	flatten_state_free(st);

	/* The default cap (1024): the rest is counted, time still adds up. */
	nemitted = 0;
	st = new_state(INNER, true, 1024, 64);
	k = flatten_state_counters(st);
	m.brute_self = false;
	deep_script(st);
	check_spans();
	s = take();
	cmp_ok(m.failures, "==", 0,
	       "capped at 1024: the stream keeps the "
	       "contract");
	cmp_ok(k->depth_limit, "==", 2 * (DEEP - 1024),
	       "capped at 1024: untracked begins and ends counted");
	cmp_ok(nemitted, "==", 2 * (1024 + 1023), "capped: 1024 levels shown");
	cmp_ok(m.lanes[0].frag_sum, "==", 2 * DEEP,
	       "capped: fragments still add up to the wall time");
	ok(strstr(s, "+f10231024@1023* -f10231024@38977L*s37954 "),
	   "capped: the deepest tracked span keeps the untracked time as "
	   "its own");
	flatten_state_free(st);
	nemitted = 0;
}

/* Many ranks interleaved: each lane's flat sequence is the one it would
 * have alone. */
static void test_interleaved(void)
{
	enum { NR = 64 };
	static const char *one[] = { "+A1@0",  "+B2^1@10", "+C3^2@20",
				     "-C3@30", "-B2@40",   "-A1@100" };
	struct flatten_state *st = new_state(INNER, true, 64, NR);
	char *per[NR];
	bool same = true;

	for (int r = 0; r < NR; r++) {
		per[r] = calloc(1, 4096);
		if (!per[r])
			bail_out("out of memory");
	}
	/* rank r's events shifted by r, round robin over the ranks */
	for (int e = 0; e < 6; e++) {
		for (int r = 0; r < NR; r++) {
			char tok[64], id[8];
			struct tally_span sp;
			int64_t ts;

			snprintf(tok, sizeof(tok), "%d.0:%s", 100 + r, one[e]);
			ts = parse_event(tok, &sp);
			feed(st, &sp, ts + r);
			(void)id;
		}
	}
	/* split the output by lane and compare with the single-lane case,
	 * shifted */
	{
		char *copy = strdup(take()), *save = NULL;

		for (char *t = strtok_r(copy, " ", &save); t;
		     t = strtok_r(NULL, " ", &save)) {
			int r = atoi(t) - 100;

			if (r < 0 || r >= NR) {
				same = false;
				continue;
			}
			snprintf(per[r] + strlen(per[r]), 4096 - strlen(per[r]),
				 "%s%s", *per[r] ? " " : "",
				 strchr(t, ':') + 1);
		}
		free(copy);
	}
	for (int r = 0; r < NR; r++) {
		char want[512];

		snprintf(want, sizeof(want),
			 "+A1@%d* -A1@%d +B2@%d* -B2@%d +C3@%d* -C3@%dL*s10 "
			 "+B2@%dR -B2@%dRL*s20 +A1@%dR -A1@%dRL*s70",
			 r, 10 + r, 10 + r, 20 + r, 20 + r, 30 + r, 30 + r,
			 40 + r, 40 + r, 100 + r);
		if (strcmp(per[r], want)) {
			diag("rank %d: %s", r, per[r]);
			same = false;
		}
		free(per[r]);
	}
	ok(same, "64 ranks interleaved: each lane's sequence is its own");
	cmp_ok(m.failures, "==", 0, "64 ranks interleaved: contract kept");
	flatten_state_free(st);
}

/* ---- random nestings */

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	/* xorshift64*: deterministic, good enough to shuffle test cases */
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return (uint32_t)((rng * 0x2545f4914f6cdd1dull) >> 33) % n;
}

struct gen_lane {
	uint64_t open[64];
	uint32_t depth[64];
	int n;
	int64_t clock;
};

static void random_case(uint64_t seed)
{
	static const char *names[] = { "a", "b", "c", "solve" };
	static const uint32_t caps[] = { 2, 3, 5, 1024 };
	struct gen_lane g[4] = { 0 };
	int nl = 1 + (int)rnd(4), nev = 1 + (int)rnd(200);
	enum flatten_keep keep = rnd(2) ? INNER : OUTER;
	struct flatten_state *st =
		new_state(keep, rnd(4) != 0, caps[rnd(4)], 64);
	uint64_t next_id = 1;

	(void)seed;
	for (int e = 0; e < nev; e++) {
		int li = (int)rnd((uint32_t)nl);
		struct gen_lane *l = &g[li];
		struct tally_span sp = { .trace = "T",
					 .src = { .host = "h",
						  .pid = (uint32_t)li / 2 + 1,
						  .tid = (uint32_t)li % 2 } };
		uint32_t act = rnd(100);
		int64_t ts;

		l->clock += rnd(4);
		ts = l->clock;
		if (rnd(10) == 0)
			ts -= rnd(3) + 1; /* slightly out of order */
		if (act < 5 && l->n) {
			/* abandoned: every open span ends at once */
			while (l->n) {
				l->n--;
				sp.phase = TALLY_SPAN_END;
				sp.span_id = l->open[l->n];
				sp.depth = l->depth[l->n];
				sp.name = "x";
				sp.flags = TALLY_SPAN_ABANDONED;
				feed(st, &sp, ts);
			}
			continue;
		}
		sp.flags = 0;
		if (act < 8) {
			sp.phase = TALLY_SPAN_END; /* orphan */
			sp.span_id = 1000000 + rnd(5);
			sp.name = "o";
			feed(st, &sp, ts);
			continue;
		}
		if (!l->n || (act < 55 && l->n < 64)) {
			uint32_t pick = rnd(20);
			int p = l->n - 1;

			if (l->n && pick < 3)
				p = (int)rnd((uint32_t)l->n);
			sp.phase = TALLY_SPAN_BEGIN;
			sp.span_id = next_id++;
			sp.parent_id = p >= 0 && pick != 19 ? l->open[p] : 0;
			if (pick == 18)
				sp.parent_id = 999999; /* unknown parent */
			sp.depth = p >= 0 && pick < 18 ? l->depth[p] + 1 : 0;
			sp.name = names[rnd(4)];
			l->open[l->n] = sp.span_id;
			l->depth[l->n++] = sp.depth;
			feed(st, &sp, ts);
			continue;
		}
		{
			/* end: mostly the innermost, sometimes another */
			int i = rnd(5) ? l->n - 1 : (int)rnd((uint32_t)l->n);

			sp.phase = TALLY_SPAN_END;
			sp.span_id = l->open[i];
			sp.depth = l->depth[i];
			sp.name = "x";
			memmove(&l->open[i], &l->open[i + 1],
				(size_t)(l->n - i - 1) * sizeof(l->open[0]));
			memmove(&l->depth[i], &l->depth[i + 1],
				(size_t)(l->n - i - 1) * sizeof(l->depth[0]));
			l->n--;
			feed(st, &sp, ts);
		}
	}
	check_spans();
	take();
	flatten_state_free(st);
}

static void test_random(void)
{
	int bad = 0, n = 5000;

	for (int i = 0; i < n; i++) {
		uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);

		rng = seed;
		random_case(seed);
		if (m.failures && bad++ < 3)
			diag("random case %d (seed %#llx) broke the contract",
			     i, (unsigned long long)seed);
	}
	cmp_ok(bad, "==", 0,
	       "%d random nestings (threads, out-of-order ends, orphans, "
	       "abandons, depth caps, late timestamps): sequences keep the "
	       "contract, time adds up, self times match brute force",
	       n);
}

/*
 * A reload: the old instance suspends (every open fragment ends), the new
 * one resumes with its own options (the shown span begins again at the
 * same instant). The contract checker follows one state's options, so it
 * is off here; the exact sequences say it all.
 */
static void test_suspend_resume(void)
{
	struct flatten_opts outer = { .keep = OUTER, .max_depth = 64,
				      .max_lanes = 64 };
	struct flatten_opts bad = outer;
	struct flatten_state *st = new_state(INNER, false, 64, 64);

	checking = false;
	run_script(st, "+A1@0 +B2^1@10 2.0:+C3@5");
	take();
	flatten_state_suspend(st, 20, &sink);
	is(take(), "-B2@20 2.0:-C3@20",
	   "suspend: every lane's open fragment ends at the reload");
	bad.max_lanes = 0;
	cmp_ok(flatten_state_resume(st, &bad, &sink), "==", -1,
	       "resume: bad options refused...");
	ok(errno == EINVAL && !outlen, "...with EINVAL, nothing emitted");
	cmp_ok(flatten_state_resume(st, &outer, &sink), "==", 0,
	       "resume with keep = outermost");
	is(take(), "+A1@20R 2.0:+C3@20R",
	   "resume: the new shown span begins where the old fragment ended");
	run_script(st, "-B2@30 -A1@40 2.0:-C3@50");
	is(take(), "-A1@30R +B2@30R -B2@30RL* +A1@30R -A1@40RL* 2.0:-C3@50RL*",
	   "ends after the reload close the spans open across it, once each");
	cmp_ok(flatten_state_counters(st)->orphan_end, "==", 0,
	       "no end is an orphan");
	flatten_state_free(st);

	/* a lane whose latest event is later than the reload's clock */
	st = new_state(INNER, false, 64, 64);
	run_script(st, "+A1@100");
	take();
	flatten_state_suspend(st, 50, &sink);
	flatten_state_resume(st, &outer, &sink);
	is(take(), "-A1@100 +A1@100R",
	   "a reload never runs a lane's time line backwards");
	outer.max_lanes = 1;
	run_script(st, "2.0:+X7@110");
	take();
	flatten_state_suspend(st, 120, &sink);
	outer.max_lanes = 1;
	cmp_ok(flatten_state_resume(st, &outer, &sink), "==", 0,
	       "resume with fewer lanes allowed");
	cmp_ok(flatten_state_lanes(st), "==", 1, "  lanes beyond are forgotten");
	flatten_state_free(st);
	take();
	checking = true;
}

int main(void)
{
	plan(NO_PLAN);
	test_table();
	test_counters();
	test_lanes();
	test_emit_failure();
	test_bad_opts();
	test_deep();
	test_interleaved();
	test_random();
	test_suspend_resume();
	model_reset(1, INNER, false);
	free(m.spans);
	return done_testing();
}
