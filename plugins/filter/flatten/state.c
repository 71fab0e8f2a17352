/* SPDX-License-Identifier: MIT */
/*
 * plugins/filter/flatten/state.c - the flat view of nested spans, per lane
 *
 * Layout, chosen for the hot path (millions of events per second):
 *   - lanes live in the core's bounded table (tally/lru.h) keyed by
 *     (trace, host, pid, tid), in order of activity: the most recently
 *     active lane is looked at first, since consecutive events usually
 *     come from the same thread, and a full table makes room in O(1) by
 *     forgetting the least recently active lane;
 *   - a lane's open spans sit in an array in begin order, grown by
 *     doubling. Well-nested ends close the newest span, found by scanning
 *     from the top in O(1); names up to FLATTEN_INLINE_NAME - 1 bytes are
 *     stored inline, so a begin/end pair allocates nothing in steady state;
 *   - with self time, each open span knows the index of its parent in the
 *     array and keeps the union of its children's intervals as closed runs
 *     plus one run still growing: children begin in time order, so a child
 *     that begins after every earlier child ended starts a new run. O(1)
 *     per event.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tally/hash.h>
#include <tally/labels.h>
#include <tally/lru.h>

#include "state.h"

#define FLATTEN_INLINE_NAME 40
#define FLATTEN_STACK_MIN   8

/* Flags of the input a fragment never passes on: they are the filter's. */
#define FLATTEN_OUR_FLAGS \
	(TALLY_SPAN_FRAGMENT | TALLY_SPAN_RESUMED | TALLY_SPAN_LAST)

struct flatten_open {
	uint64_t id;
	uint64_t parent;
	int64_t begin_ns;	    /* on the lane's time line */
	struct tally_labels *attrs; /* the begin's, referenced; NULL: empty */
	uint32_t depth;
	uint32_t nfrag; /* fragments begun; 0 = never shown */
	/* self time (opts.self_time only) */
	int32_t up;	 /* index of the parent in the stack, -1 if none */
	uint32_t kids;	 /* children still open */
	bool run;	 /* a run of children was started */
	int64_t covered; /* length of the closed runs */
	int64_t run_start, run_end;
	char *heap; /* the name when it does not fit inline, else NULL */
	char inl[FLATTEN_INLINE_NAME];
};

struct flatten_lane {
	struct tally_lru_node node; /* in the state's lanes, by activity */
	uint32_t pid;
	uint32_t tid;
	int32_t rank;
	uint32_t n;	    /* open spans tracked */
	uint32_t cap;	    /* of stack */
	uint32_t overflow;  /* begins beyond max_depth whose end is due */
	int64_t last_ts;    /* latest event time: the time line's now */
	int64_t frag_begin; /* begin of the open fragment (n > 0) */
	int64_t last_seen;  /* CLOCK_MONOTONIC ns of the last event */
	struct flatten_open *stack;
	const char *trace;
	const char *host;
	char strs[]; /* trace and host, NUL-terminated */
};

struct flatten_state {
	struct flatten_opts opts;
	struct tally_lru lanes; /* max_lanes, most recently active first */
	uint64_t nopen;
	struct flatten_counters counters;
	struct tally_labels *empty; /* tally_labels_empty() */
};

/* Whether @opts are valid for flatten_state_new() and _resume(). */
static bool flatten_opts_valid(const struct flatten_opts *opts)
{
	return opts->max_depth && opts->max_lanes &&
	       (opts->keep == FLATTEN_INNERMOST ||
		opts->keep == FLATTEN_OUTERMOST);
}

struct flatten_state *flatten_state_new(const struct flatten_opts *opts)
{
	struct flatten_state *st;

	if (!flatten_opts_valid(opts)) {
		errno = EINVAL;
		return NULL;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->opts = *opts;
	tally_lru_init(&st->lanes, opts->max_lanes);
	st->empty = tally_labels_empty();
	return st;
}

static const char *flatten_open_name(const struct flatten_open *o)
{
	return o->heap ? o->heap : o->inl;
}

static void flatten_open_release(struct flatten_open *o)
{
	if (o->heap)
		free(o->heap);
	if (o->attrs)
		tally_labels_unref(o->attrs);
}

static void flatten_lane_free(struct flatten_lane *l)
{
	for (uint32_t i = 0; i < l->n; i++)
		flatten_open_release(&l->stack[i]);
	free(l->stack);
	free(l);
}

static struct flatten_lane *flatten_lane_of_node(struct tally_lru_node *n)
{
	return n ? tally_container_of(n, struct flatten_lane, node) : NULL;
}

void flatten_state_free(struct flatten_state *st)
{
	struct tally_lru_node *n;

	if (!st)
		return;
	while ((n = tally_lru_oldest(&st->lanes))) {
		tally_lru_remove(&st->lanes, n);
		flatten_lane_free(flatten_lane_of_node(n));
	}
	tally_lru_fini(&st->lanes);
	free(st);
}

const struct flatten_counters *
flatten_state_counters(const struct flatten_state *st)
{
	return &st->counters;
}

uint32_t flatten_state_lanes(const struct flatten_state *st)
{
	return (uint32_t)tally_lru_count(&st->lanes);
}

uint64_t flatten_state_open_spans(const struct flatten_state *st)
{
	return st->nopen;
}

/* ---- lanes */

static uint64_t flatten_lane_hash(const char *trace, const char *host,
				  uint32_t pid, uint32_t tid)
{
	uint64_t h = tally_hash_str(TALLY_HASH_SEED, trace);

	h = tally_hash_str(h, host);
	return tally_hash_mix(h ^ ((uint64_t)pid << 32 | tid));
}

/* A lane's key, as a lookup compares it: @host never NULL. */
struct flatten_key {
	const char *trace;
	const char *host;
	uint32_t pid;
	uint32_t tid;
};

static inline bool flatten_lane_eq(const struct tally_lru_node *n,
				   const void *key)
{
	const struct flatten_lane *l =
		tally_container_of(n, struct flatten_lane, node);
	const struct flatten_key *k = key;

	return l->pid == k->pid && l->tid == k->tid &&
	       !strcmp(l->trace, k->trace) && !strcmp(l->host, k->host);
}

static void flatten_lane_unlink(struct flatten_state *st,
				struct flatten_lane *l)
{
	tally_lru_remove(&st->lanes, &l->node);
	st->nopen -= l->n;
	flatten_lane_free(l);
}

/* ---- fragments */

/*
 * What a fragment record is made of besides its span: @cur is the event
 * being applied (its strings are the ones to hand out, as a filter can
 * borrow them), or NULL when the lane is being closed on its own (then the
 * lane's copies are used).
 */
struct flatten_ctx {
	struct flatten_state *st;
	struct flatten_lane *lane;
	const struct tally_span *cur;
	const struct flatten_sink *sink;
};

/*
 * Hand one record of a fragment of @o to the sink. @own: the record is the
 * applied event itself (its begin or end).
 */
static inline __attribute__((always_inline)) void
flatten_emit(const struct flatten_ctx *c, const struct flatten_open *o,
	     bool own, enum tally_span_phase phase, uint32_t flags, int64_t ts,
	     int64_t begin, int64_t self)
{
	const struct flatten_lane *l = c->lane;
	const char *name = flatten_open_name(o);
	struct flatten_frag f;

	if (c->cur) {
		f.span.trace = c->cur->trace;
		f.span.src.host = c->cur->src.host ? c->cur->src.host : "";
		/*
		 * The event's own name can be borrowed: a begin's always (the
		 * span's was copied from it), an end's if it is the same.
		 */
		if (own && (phase == TALLY_SPAN_BEGIN ||
			    (c->cur->name && !strcmp(c->cur->name, name))))
			name = c->cur->name;
	} else {
		f.span.trace = l->trace;
		f.span.src.host = l->host;
	}
	f.span.name = name;
	f.span.span_id = o->id;
	f.span.parent_id = o->parent;
	f.span.phase = phase;
	f.span.depth = o->depth;
	f.span.flags = TALLY_SPAN_FRAGMENT | flags |
		       (o->nfrag > 1 ? TALLY_SPAN_RESUMED : 0);
	f.span.nvalues = 0;
	f.span.src.pid = l->pid;
	f.span.src.tid = l->tid;
	f.span.src.rank = l->rank;
	f.span.attrs = o->attrs;
	f.span.begin_ns = begin;
	f.span.values = NULL;
	f.ts_ns = ts;
	f.own = own;
	f.self_ns = self;
	if (c->sink->emit(c->sink->ctx, &f))
		c->st->counters.emit_failed++;
}

/* End the open fragment of @o (the shown span) at @ts. */
static void flatten_frag_end(const struct flatten_ctx *c,
			     const struct flatten_open *o, int64_t ts)
{
	flatten_emit(c, o, false, TALLY_SPAN_END, 0, ts, c->lane->frag_begin,
		     -1);
}

/* Begin a fragment of @o at @ts: it becomes the shown span. */
static void flatten_frag_begin(const struct flatten_ctx *c,
			       struct flatten_open *o, bool own, int64_t ts)
{
	o->nfrag++;
	c->lane->frag_begin = ts;
	c->st->counters.fragments++;
	flatten_emit(c, o, own, TALLY_SPAN_BEGIN, 0, ts, ts, -1);
}

/* ---- self time */

/* A child of @p begins at @t (never before @p: the time line is sorted). */
static void flatten_kid_begin(struct flatten_open *p, int64_t t)
{
	if (!p->kids && (!p->run || t > p->run_end)) {
		if (p->run)
			p->covered += p->run_end - p->run_start;
		p->run = true;
		p->run_start = p->run_end = t;
	}
	p->kids++;
}

static void flatten_kid_end(struct flatten_open *p, int64_t t)
{
	p->kids--;
	if (t > p->run_end)
		p->run_end = t;
}

/* Self time of @o ending at @t: children still open are clamped to @t. */
static int64_t flatten_self(const struct flatten_open *o, int64_t t)
{
	int64_t d = t - o->begin_ns, u = o->covered;

	if (o->run)
		u += (o->kids ? t : o->run_end) - o->run_start;
	return u >= d ? 0 : d - u;
}

/* ---- the stack */

/* Index of the newest open span of @l with id @id, or -1. */
static long flatten_find(const struct flatten_lane *l, uint64_t id)
{
	for (uint32_t i = l->n; i-- > 0;)
		if (l->stack[i].id == id)
			return i;
	return -1;
}

/* Remove open span @i of @l; parents' indices above it follow. */
static void flatten_remove(struct flatten_state *st, struct flatten_lane *l,
			   uint32_t i)
{
	flatten_open_release(&l->stack[i]);
	l->n--;
	st->nopen--;
	if (i == l->n)
		return;
	memmove(&l->stack[i], &l->stack[i + 1],
		(l->n - i) * sizeof(l->stack[0]));
	if (!st->opts.self_time)
		return;
	for (uint32_t j = i; j < l->n; j++) {
		struct flatten_open *o = &l->stack[j];

		if (o->up > (int32_t)i)
			o->up--;
		else if (o->up == (int32_t)i)
			o->up = -1; /* its parent ended first */
	}
}

/* Index of the shown span of a lane holding @n > 0 open spans. */
static uint32_t flatten_shown(const struct flatten_state *st, uint32_t n)
{
	return st->opts.keep == FLATTEN_INNERMOST ? n - 1 : 0;
}

/*
 * Close open span @i of the lane at @ts. @own: the applied event is its
 * end; @xflags are passed on with its LAST end.
 */
static void flatten_close(const struct flatten_ctx *c, uint32_t i, bool own,
			  uint32_t xflags, int64_t ts)
{
	struct flatten_state *st = c->st;
	struct flatten_lane *l = c->lane;
	struct flatten_open *o = &l->stack[i];
	uint32_t shown = flatten_shown(st, l->n);
	int64_t self = -1;

	if (st->opts.self_time) {
		self = flatten_self(o, ts);
		if (o->up >= 0)
			flatten_kid_end(&l->stack[o->up], ts);
	}
	xflags = (xflags & ~FLATTEN_OUR_FLAGS) | TALLY_SPAN_LAST;

	if (i == shown) {
		flatten_emit(c, o, own, TALLY_SPAN_END, xflags, ts,
			     l->frag_begin, self);
		flatten_remove(st, l, i);
		if (l->n)
			flatten_frag_begin(c,
					   &l->stack[flatten_shown(st, l->n)],
					   false, ts);
		return;
	}
	if (o->nfrag) {
		/*
		 * Shown before, not now (innermost: it ended before a span
		 * nested in it): its LAST end is a zero-length fragment, fitted
		 * between an end and a begin of the shown span's fragment so
		 * that no two fragments of the lane are ever open together.
		 */
		struct flatten_open *s = &l->stack[shown];

		flatten_frag_end(c, s, ts);
		flatten_frag_begin(c, o, false, ts);
		flatten_emit(c, o, own, TALLY_SPAN_END, xflags, ts, ts, self);
		flatten_frag_begin(c, s, false, ts);
	}
	flatten_remove(st, l, i);
}

static int flatten_stack_grow(struct flatten_lane *l)
{
	uint32_t n = l->cap ? l->cap * 2 : FLATTEN_STACK_MIN;
	struct flatten_open *s = realloc(l->stack, n * sizeof(*s));

	if (!s)
		return -1;
	l->stack = s;
	l->cap = n;
	return 0;
}

/*
 * The lane is full: forget the least recently active one. Its open spans
 * end, innermost first, flagged EVICTED, at its latest event time.
 */
static void flatten_evict_lane(struct flatten_state *st,
			       const struct flatten_sink *sink)
{
	struct flatten_lane *l =
		flatten_lane_of_node(tally_lru_oldest(&st->lanes));
	struct flatten_ctx c = { st, l, NULL, sink };

	while (l->n)
		flatten_close(&c, l->n - 1, false, TALLY_SPAN_EVICTED,
			      l->last_ts);
	st->counters.lane_evicted++;
	flatten_lane_unlink(st, l);
}

/*
 * The lane of @sp, not the most recently active one, made the most
 * recently active one. @create: make it if new (forgetting the least
 * recently active lane when full).
 * Return: the lane; NULL with errno = ENOENT (not found, !@create) or
 * ENOMEM.
 */
static struct flatten_lane *flatten_lane_get(struct flatten_state *st,
					     const struct flatten_key *k,
					     bool create,
					     const struct flatten_sink *sink)
{
	struct flatten_lane *l;
	size_t tl, hl;
	uint64_t h;

	h = flatten_lane_hash(k->trace, k->host, k->pid, k->tid);
	l = flatten_lane_of_node(
		tally_lru_find(&st->lanes, h, flatten_lane_eq, k));
	if (l)
		return l;
	if (!create) {
		errno = ENOENT;
		return NULL;
	}

	tl = strlen(k->trace);
	hl = strlen(k->host);
	l = calloc(1, sizeof(*l) + tl + 1 + hl + 1);
	if (!l)
		return NULL;
	if (tally_lru_reserve(&st->lanes) < 0) {
		free(l);
		return NULL;
	}
	if (tally_lru_full(&st->lanes))
		flatten_evict_lane(st, sink);
	memcpy(l->strs, k->trace, tl + 1);
	memcpy(l->strs + tl + 1, k->host, hl + 1);
	l->trace = l->strs;
	l->host = l->strs + tl + 1;
	l->pid = k->pid;
	l->tid = k->tid;
	l->last_ts = INT64_MIN;
	(void)tally_lru_insert(&st->lanes, &l->node, h); /* reserved */
	return l;
}

/* The lane of @sp: the most recently active one first (consecutive events
 * of one thread). */
static inline struct flatten_lane *
flatten_lane_of(struct flatten_state *st, const struct tally_span *sp,
		bool create, const struct flatten_sink *sink)
{
	struct tally_lru_node *n = tally_lru_newest(&st->lanes);
	const struct flatten_key k = {
		.trace = sp->trace,
		.host = sp->src.host ? sp->src.host : "",
		.pid = sp->src.pid,
		.tid = sp->src.tid,
	};

	if (n && flatten_lane_eq(n, &k))
		return flatten_lane_of_node(n);
	return flatten_lane_get(st, &k, create, sink);
}

/* @ts on @l's time line, which never runs backwards. */
static int64_t flatten_time(struct flatten_state *st, struct flatten_lane *l,
			    int64_t ts)
{
	if (ts < l->last_ts) {
		st->counters.reordered++;
		return l->last_ts;
	}
	return l->last_ts = ts;
}

/* ---- events */

static int flatten_begin(struct flatten_state *st, const struct tally_span *sp,
			 int64_t ts, int64_t now_ns,
			 const struct flatten_sink *sink)
{
	struct flatten_ctx c = { st, NULL, sp, sink };
	size_t nl = strlen(sp->name);
	struct flatten_lane *l;
	struct flatten_open *o;

	l = c.lane = flatten_lane_of(st, sp, true, sink);
	if (!l)
		goto out_nomem;
	l->last_seen = now_ns;
	l->rank = sp->src.rank;
	if (l->n >= st->opts.max_depth) {
		(void)flatten_time(st, l, ts);
		l->overflow++;
		st->counters.depth_limit++;
		return 0;
	}
	if (l->n == l->cap && flatten_stack_grow(l))
		goto out_nomem;
	o = &l->stack[l->n];
	o->heap = NULL;
	if (nl >= sizeof(o->inl)) {
		o->heap = strdup(sp->name);
		if (!o->heap)
			goto out_nomem;
	} else {
		memcpy(o->inl, sp->name, nl + 1);
	}

	ts = flatten_time(st, l, ts);
	o->id = sp->span_id;
	o->parent = sp->parent_id;
	o->begin_ns = ts;
	/* the empty set (most spans) costs no reference */
	o->attrs = sp->attrs && sp->attrs != st->empty
			   ? tally_labels_ref(sp->attrs)
			   : NULL;
	o->depth = sp->depth;
	o->nfrag = 0;
	o->up = -1;
	o->kids = 0;
	o->run = false;
	o->covered = 0;
	if (st->opts.self_time && sp->parent_id) {
		long p = flatten_find(l, sp->parent_id);

		if (p >= 0) {
			o->up = (int32_t)p;
			flatten_kid_begin(&l->stack[p], ts);
		}
	}

	if (st->opts.keep == FLATTEN_INNERMOST && l->n)
		flatten_frag_end(&c, &l->stack[l->n - 1], ts);
	l->n++;
	st->nopen++;
	if (st->opts.keep == FLATTEN_INNERMOST || l->n == 1)
		flatten_frag_begin(&c, o, true, ts);
	return 0;

out_nomem:
	st->counters.nomem++;
	errno = ENOMEM;
	return -1;
}

static void flatten_end(struct flatten_state *st, const struct tally_span *sp,
			int64_t ts, int64_t now_ns,
			const struct flatten_sink *sink)
{
	struct flatten_ctx c = { st, NULL, sp, sink };
	struct flatten_lane *l;
	long i;

	l = c.lane = flatten_lane_of(st, sp, false, sink);
	if (!l) {
		st->counters.orphan_end++;
		return;
	}
	l->last_seen = now_ns;
	l->rank = sp->src.rank;
	ts = flatten_time(st, l, ts);
	i = flatten_find(l, sp->span_id);
	if (i >= 0) {
		flatten_close(&c, (uint32_t)i, true, sp->flags, ts);
	} else if (l->overflow) {
		l->overflow--;
		st->counters.depth_limit++;
	} else {
		st->counters.orphan_end++;
	}
}

int flatten_state_apply(struct flatten_state *st, const struct tally_span *sp,
			int64_t ts_ns, int64_t now_ns,
			const struct flatten_sink *sink)
{
	if (!sp->trace || !sp->name) {
		/* Not a span any input makes; nothing to place it by. */
		st->counters.malformed++;
		return 0;
	}
	if (sp->phase == TALLY_SPAN_BEGIN)
		return flatten_begin(st, sp, ts_ns, now_ns, sink);
	if (sp->phase == TALLY_SPAN_END)
		flatten_end(st, sp, ts_ns, now_ns, sink);
	return 0;
}

uint32_t flatten_state_expire(struct flatten_state *st, int64_t before_ns)
{
	struct tally_lru_node *p = tally_lru_oldest(&st->lanes), *newer;
	uint32_t n = 0;

	/* Oldest first; a lane with open spans stays, as do newer ones. */
	for (; p; p = newer) {
		struct flatten_lane *l = flatten_lane_of_node(p);

		if (l->last_seen >= before_ns)
			break;
		newer = tally_lru_newer(&st->lanes, p);
		if (l->n || l->overflow)
			continue;
		flatten_lane_unlink(st, l);
		n++;
	}
	return n;
}

void flatten_state_suspend(struct flatten_state *st, int64_t ts_ns,
			   const struct flatten_sink *sink)
{
	struct tally_lru_node *p;

	for (p = tally_lru_oldest(&st->lanes); p;
	     p = tally_lru_newer(&st->lanes, p)) {
		struct flatten_lane *l = flatten_lane_of_node(p);
		struct flatten_ctx c = { st, l, NULL, sink };

		if (!l->n)
			continue;
		/* quietly: the reload is not the stream's reordering */
		if (ts_ns > l->last_ts)
			l->last_ts = ts_ns;
		flatten_frag_end(&c, &l->stack[flatten_shown(st, l->n)],
				 l->last_ts);
	}
}

int flatten_state_resume(struct flatten_state *st,
			 const struct flatten_opts *opts,
			 const struct flatten_sink *sink)
{
	struct tally_lru_node *p;

	if (!flatten_opts_valid(opts)) {
		errno = EINVAL;
		return -1;
	}
	st->opts = *opts;
	st->lanes.max = opts->max_lanes;
	for (p = tally_lru_oldest(&st->lanes); p;
	     p = tally_lru_newer(&st->lanes, p)) {
		struct flatten_lane *l = flatten_lane_of_node(p);
		struct flatten_ctx c = { st, l, NULL, sink };

		if (l->n)
			flatten_frag_begin(&c,
					   &l->stack[flatten_shown(st, l->n)],
					   false, l->last_ts);
	}
	while (tally_lru_count(&st->lanes) > opts->max_lanes)
		flatten_evict_lane(st, sink);
	return 0;
}
