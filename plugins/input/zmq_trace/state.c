/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/zmq_trace/state.c - open spans of every (trace, source)
 *
 * Layout, chosen for the hot path (millions of events per second):
 *   - sources live in the core's bounded table in order of activity
 *     (tally/lru.h), keyed by (format, pid, trace, host). The most
 *     recently active source is checked first, since consecutive messages
 *     usually come from the same process; a full table makes room in O(1)
 *     by forgetting the least recently active source, so a flood of forged
 *     sources cannot lock real tracers out;
 *   - a source's open spans sit in a ring in begin order. Well-nested ends
 *     close the newest span, found by scanning from the top in O(1); the
 *     oldest is evicted in O(1) when the source is full. Names up to
 *     ZMQ_TRACE_INLINE_NAME - 1 bytes are stored inline, so a begin/end pair
 *     allocates nothing in steady state;
 *   - a native begin finds its parent from the top too, and the spans of
 *     its thread above the parent are the ones whose ends were lost: in
 *     steady state there are none, and the check costs the scan to the
 *     parent that the depth needs anyway.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/hash.h>
#include <tally/io.h>
#include <tally/lru.h>

#include "state.h"

#define ZMQ_TRACE_INLINE_NAME 40
#define ZMQ_TRACE_RING_MIN    8

struct zmq_trace_open {
	uint64_t id;
	uint64_t parent;
	int64_t begin_ns;
	uint32_t depth;
	uint32_t tid;
	char *heap; /* the name when it does not fit inline, else NULL */
	char inl[ZMQ_TRACE_INLINE_NAME];
};

/*
 * What a source announced about itself (v2 SOURCE items): its keys and
 * values as label pairs, values formatted as text, sized to fit.
 */
struct zmq_trace_announce {
	uint32_t n;
	struct tally_label pairs[TALLY_WIRE_MAX_SOURCE];
	char strs[];
};

struct zmq_trace_source;

/*
 * One application counter series (v2 COUNTER items) of one source, in the
 * state's bounded table; forgotten with its source.
 */
struct zmq_trace_series {
	struct tally_lru_node node; /* in zmq_trace_state.series */
	struct zmq_trace_source *src;
	struct zmq_trace_series *next; /* the source's series */
	double value;		       /* delta: the sum; gauge: the level */
	int64_t ts_ns;		       /* gauge: its snapshot's time */
	uint8_t kind;
	uint8_t nlabels;
	const char *name;   /* as sent */
	const char *metric; /* tally_app_NAME[_total] */
	struct tally_label labels[TALLY_WIRE_MAX_LABELS]; /* sorted by key */
	char strs[];
};

struct zmq_trace_source {
	struct tally_lru_node node; /* in zmq_trace_state.sources */
	enum zmq_trace_format format;
	uint32_t pid;
	int32_t rank;
	bool local;
	uint16_t trace_len;
	uint16_t host_len;
	int64_t last_seen; /* CLOCK_MONOTONIC ns of the last event */
	int64_t last_ts;   /* latest event timestamp (CLOCK_REALTIME ns) */
	int64_t alive_ns;  /* CLOCK_REALTIME ns of the last check that found
			    * the process running, 0 = none */
	uint64_t next_id;  /* synthesized span ids (Omnistat) */
	/* native: events that arrived, against what CLOSE messages said */
	uint64_t received;	 /* BEGIN and END messages */
	int64_t first_ts;	 /* the earliest of their timestamps */
	uint64_t announced;	 /* events queued, summed over CLOSEs */
	int64_t announced_first; /* the earliest first event they name */
	bool closed;		 /* a CLOSE arrived */
	uint64_t messages;	 /* every message, v2 COUNTER included */
	uint64_t client_dropped; /* drops its messages reported */
	int64_t newest_ts;	 /* newest timestamp of any of them */
	struct zmq_trace_announce *announce; /* NULL: none */
	struct zmq_trace_series *series;
	struct zmq_trace_open *ring;
	uint32_t cap; /* power of two, 0 before the first begin */
	uint32_t head;
	uint32_t count;
	const char *trace;
	const char *host;
	char strs[]; /* trace and host, NUL-terminated */
};

struct zmq_trace_state {
	struct zmq_trace_state_opts opts;
	char *local_host;
	struct tally_lru sources; /* struct zmq_trace_source, max_sources */
	struct tally_lru series;  /* struct zmq_trace_series */
	uint64_t nopen;
	int64_t job_end_ns; /* zmq_trace_state_job_ended(), 0: none */
	struct zmq_trace_counters counters;
};

/*
 * Whether the pid of @src names one process of this host that can be
 * asked about. kill(0, sig) addresses our own process group, and a pid
 * above INT32_MAX becomes negative (kill(-1, sig): every process we may
 * signal), so such senders (forged, or not a real pid) are closed by
 * abandon_timeout only, whatever pid_alive would say.
 */
static bool zmq_trace_pid_checkable(const struct zmq_trace_source *src)
{
	return src->format == ZMQ_TRACE_NATIVE && src->local && src->pid &&
	       src->pid <= INT32_MAX;
}

struct zmq_trace_state *
zmq_trace_state_new(const struct zmq_trace_state_opts *opts)
{
	struct zmq_trace_state *st;

	if (!opts->local_host || !opts->max_open_spans || !opts->max_sources) {
		errno = EINVAL;
		return NULL;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->opts = *opts;
	if (!st->opts.pid_alive)
		st->opts.pid_alive = tally_pid_alive;
	st->local_host = strdup(opts->local_host);
	if (!st->local_host)
		goto out_free;
	st->opts.local_host = st->local_host;
	tally_lru_init(&st->sources, opts->max_sources);
	tally_lru_init(&st->series, opts->max_counter_series);
	return st;

out_free:
	free(st);
	errno = ENOMEM;
	return NULL;
}

static const char *zmq_trace_open_name(const struct zmq_trace_open *o)
{
	return o->heap ? o->heap : o->inl;
}

static struct zmq_trace_open *zmq_trace_at(struct zmq_trace_source *src,
					   uint32_t i)
{
	return &src->ring[(src->head + i) & (src->cap - 1)];
}

static void zmq_trace_source_free(struct zmq_trace_state *st,
				  struct zmq_trace_source *src)
{
	struct zmq_trace_series *se, *next;

	for (se = src->series; se; se = next) {
		next = se->next;
		tally_lru_remove(&st->series, &se->node);
		free(se);
	}
	for (uint32_t i = 0; i < src->count; i++)
		free(zmq_trace_at(src, i)->heap);
	free(src->announce);
	free(src->ring);
	free(src);
}

static struct zmq_trace_source *zmq_trace_source_of(struct tally_lru_node *n)
{
	return n ? tally_container_of(n, struct zmq_trace_source, node) : NULL;
}

void zmq_trace_state_free(struct zmq_trace_state *st)
{
	struct tally_lru_node *n;

	if (!st)
		return;
	while ((n = tally_lru_oldest(&st->sources))) {
		tally_lru_remove(&st->sources, n);
		zmq_trace_source_free(st, zmq_trace_source_of(n));
	}
	tally_lru_fini(&st->sources);
	tally_lru_fini(&st->series);
	free(st->local_host);
	free(st);
}

const struct zmq_trace_counters *
zmq_trace_state_counters(const struct zmq_trace_state *st)
{
	return &st->counters;
}

uint32_t zmq_trace_state_sources(const struct zmq_trace_state *st)
{
	return (uint32_t)tally_lru_count(&st->sources);
}

uint64_t zmq_trace_state_open_spans(const struct zmq_trace_state *st)
{
	return st->nopen;
}

static uint64_t zmq_trace_key_hash(enum zmq_trace_format format, uint32_t pid,
				   const char *trace, size_t tl,
				   const char *host, size_t hl)
{
	uint8_t sep = 0xff; /* never in UTF-8: "ab"+"c" != "a"+"bc" */
	uint32_t f = (uint32_t)format;
	uint64_t h = TALLY_HASH_SEED;

	h = tally_hash_bytes(h, &f, sizeof(f));
	h = tally_hash_bytes(h, &pid, sizeof(pid));
	h = tally_hash_bytes(h, trace, tl);
	h = tally_hash_bytes(h, &sep, 1);
	return tally_hash_bytes(h, host, hl);
}

/* A source's key as an event names it. */
struct zmq_trace_key {
	const struct zmq_trace_event *ev;
	const char *host;
	size_t hl;
};

static inline bool zmq_trace_key_eq(const struct tally_lru_node *n,
				    const void *key)
{
	const struct zmq_trace_source *src =
		tally_container_of(n, struct zmq_trace_source, node);
	const struct zmq_trace_key *k = key;

	return src->pid == k->ev->pid && src->format == k->ev->format &&
	       src->trace_len == k->ev->trace_len && src->host_len == k->hl &&
	       !memcmp(src->trace, k->ev->trace, k->ev->trace_len) &&
	       !memcmp(src->host, k->host, k->hl);
}

/*
 * The source of @ev, made the most recently active one; created if new.
 * Return: the source, or NULL with errno = EMLINK (the table is full) or
 * ENOMEM.
 */
static struct zmq_trace_source *
zmq_trace_source_get(struct zmq_trace_state *st,
		     const struct zmq_trace_event *ev, const char *host,
		     size_t hl)
{
	const struct zmq_trace_key key = { ev, host, hl };
	struct tally_lru_node *n = tally_lru_newest(&st->sources);
	struct zmq_trace_source *src;
	uint64_t h;

	if (n && zmq_trace_key_eq(n, &key))
		return zmq_trace_source_of(n);

	h = zmq_trace_key_hash(ev->format, ev->pid, ev->trace, ev->trace_len,
			       host, hl);
	n = tally_lru_find(&st->sources, h, zmq_trace_key_eq, &key);
	if (n)
		return zmq_trace_source_of(n);

	if (tally_lru_full(&st->sources)) {
		errno = EMLINK;
		return NULL;
	}
	if (tally_lru_reserve(&st->sources) < 0)
		return NULL;
	src = calloc(1, sizeof(*src) + ev->trace_len + 1 + hl + 1);
	if (!src)
		return NULL;
	memcpy(src->strs, ev->trace, ev->trace_len + 1);
	memcpy(src->strs + ev->trace_len + 1, host, hl + 1);
	src->trace = src->strs;
	src->host = src->strs + ev->trace_len + 1;
	src->trace_len = ev->trace_len;
	src->host_len = (uint16_t)hl;
	src->format = ev->format;
	src->pid = ev->pid;
	src->local = !strcmp(host, st->local_host);
	(void)tally_lru_insert(&st->sources, &src->node, h); /* reserved */
	return src;
}

/*
 * Count what @src's tracers queued and never delivered (CLOSE messages say
 * how many they queued), once the source is done with. Only when this
 * source saw the tracers' first event: a source forgotten and made anew
 * (idle, max_sources) received only part of the stream. Two tracers of
 * one trace in one process add up; one of them not closed yet may hide a
 * loss (no count), never invent one.
 */
static void zmq_trace_settle(struct zmq_trace_state *st,
			     struct zmq_trace_source *src)
{
	if (src->closed && src->received &&
	    src->announced_first == src->first_ts &&
	    src->announced > src->received)
		st->counters.undelivered += src->announced - src->received;
	src->closed = false;
	src->announced = 0;
}

static void zmq_trace_source_unlink(struct zmq_trace_state *st,
				    struct zmq_trace_source *src)
{
	zmq_trace_settle(st, src);
	tally_lru_remove(&st->sources, &src->node);
	st->nopen -= src->count;
	zmq_trace_source_free(st, src);
}

static void zmq_trace_emit(struct zmq_trace_state *st,
			   const struct zmq_trace_sink *sink,
			   const struct tally_span *sp, int64_t ts_ns)
{
	if (sink->span(sink->ctx, sp, ts_ns))
		st->counters.emit_failed++;
}

/* Fill the parts of a span record every event of @src shares. */
static void zmq_trace_span_init(struct tally_span *sp,
				const struct zmq_trace_source *src)
{
	memset(sp, 0, sizeof(*sp));
	sp->trace = src->trace;
	sp->src.host = src->host;
	sp->src.pid = src->pid;
	sp->src.rank = src->rank;
}

/*
 * Emit the end of open span @o (not yet removed) with @flags. It carries
 * the begin's thread even when another thread ended it, so that begin/end
 * pairs nest per (pid, tid) as Chrome's trace format requires.
 */
static void zmq_trace_emit_end_v(struct zmq_trace_state *st,
				 const struct zmq_trace_sink *sink,
				 const struct zmq_trace_source *src,
				 const struct zmq_trace_open *o, uint32_t flags,
				 int64_t ts_ns, const struct tally_attr *values,
				 uint32_t nvalues)
{
	struct tally_span sp;

	zmq_trace_span_init(&sp, src);
	sp.name = zmq_trace_open_name(o);
	sp.span_id = o->id;
	sp.parent_id = o->parent;
	sp.phase = TALLY_SPAN_END;
	sp.depth = o->depth;
	sp.flags = flags;
	sp.src.tid = o->tid;
	sp.begin_ns = o->begin_ns;
	sp.values = nvalues ? values : NULL;
	sp.nvalues = nvalues;
	zmq_trace_emit(st, sink, &sp, ts_ns);
}

static void zmq_trace_emit_end(struct zmq_trace_state *st,
			       const struct zmq_trace_sink *sink,
			       const struct zmq_trace_source *src,
			       const struct zmq_trace_open *o, uint32_t flags,
			       int64_t ts_ns)
{
	zmq_trace_emit_end_v(st, sink, src, o, flags, ts_ns, NULL, 0);
}

/* Remove open span number @i (0 = oldest) of @src. */
static void zmq_trace_remove(struct zmq_trace_state *st,
			     struct zmq_trace_source *src, uint32_t i)
{
	free(zmq_trace_at(src, i)->heap);
	if (i == 0) {
		src->head = (src->head + 1) & (src->cap - 1);
	} else {
		for (; i + 1 < src->count; i++)
			*zmq_trace_at(src, i) = *zmq_trace_at(src, i + 1);
	}
	src->count--;
	st->nopen--;
}

static int zmq_trace_ring_grow(struct zmq_trace_source *src)
{
	uint32_t n = src->cap ? src->cap * 2 : ZMQ_TRACE_RING_MIN;
	struct zmq_trace_open *r = malloc(n * sizeof(*r));

	if (!r)
		return -1;
	for (uint32_t i = 0; i < src->count; i++)
		r[i] = *zmq_trace_at(src, i);
	free(src->ring);
	src->ring = r;
	src->cap = n;
	src->head = 0;
	return 0;
}

/* Index of the newest open span with id @id, or -1. */
static long zmq_trace_find_id(struct zmq_trace_source *src, uint64_t id)
{
	for (uint32_t i = src->count; i-- > 0;)
		if (zmq_trace_at(src, i)->id == id)
			return i;
	return -1;
}

/* Index of the newest open span named @name, or -1. */
static long zmq_trace_find_name(struct zmq_trace_source *src, const char *name)
{
	for (uint32_t i = src->count; i-- > 0;)
		if (!strcmp(zmq_trace_open_name(zmq_trace_at(src, i)), name))
			return i;
	return -1;
}

/* Depth of a native span whose parent is @parent. */
static uint32_t zmq_trace_depth_of(struct zmq_trace_source *src,
				   uint64_t parent)
{
	long i;

	if (!parent)
		return 0;
	i = zmq_trace_find_id(src, parent);
	/* A parent we never saw (dropped, evicted) is at least a level up. */
	return i < 0 ? 1 : zmq_trace_at(src, (uint32_t)i)->depth + 1;
}

/*
 * Thread @tid of @src says its innermost open span is the one at index
 * @parent_at (-1: none, it opens a root span or ends its last one): every
 * later span it began and that is still open here lost its end (dropped
 * by the client, or lost in transit). End them at @ts_ns, innermost first.
 *
 * A thread's spans nest: libtally-trace and the Python client give a new
 * span the innermost open span of its thread as parent, and ending a span
 * out of order leaves the spans opened inside it on that stack. So the
 * thread's open spans are its innermost one and that one's ancestors, all
 * begun earlier; anything the thread began later is over. Each begin
 * resolves this, so the spans below the parent were checked already.
 */
static void zmq_trace_lost_ends(struct zmq_trace_state *st,
				struct zmq_trace_source *src, uint32_t tid,
				long parent_at, int64_t ts_ns,
				const struct zmq_trace_sink *sink)
{
	for (uint32_t i = src->count; i-- > 0 && (long)i > parent_at;) {
		struct zmq_trace_open *o = zmq_trace_at(src, i);

		if (o->tid != tid)
			continue;
		zmq_trace_emit_end(st, sink, src, o, TALLY_SPAN_LOST_END,
				   ts_ns);
		zmq_trace_remove(st, src, i);
		st->counters.lost_end++;
	}
}

/*
 * Where the parent @parent of a native event of thread @tid is among the
 * open spans of @src: -1 for a root span (@parent 0), -2 when it is not
 * open here (its begin was lost, or it ended) or the thread is unknown
 * (@tid 0): then nothing can be said about the thread's other spans.
 */
static long zmq_trace_parent_at(struct zmq_trace_source *src, uint32_t tid,
				uint64_t parent)
{
	long i;

	if (!tid)
		return -2;
	if (!parent)
		return -1;
	i = zmq_trace_find_id(src, parent);
	return i < 0 ? -2 : i;
}

static int zmq_trace_begin(struct zmq_trace_state *st,
			   struct zmq_trace_source *src,
			   const struct zmq_trace_event *ev,
			   const struct zmq_trace_sink *sink)
{
	struct zmq_trace_open o = { .begin_ns = ev->ts_ns, .tid = ev->tid };
	struct tally_span sp;

	if (ev->format == ZMQ_TRACE_NATIVE) {
		long at = zmq_trace_parent_at(src, ev->tid, ev->parent_id);

		o.id = ev->span_id;
		o.parent = ev->parent_id;
		if (at >= -1)
			zmq_trace_lost_ends(st, src, ev->tid, at, ev->ts_ns,
					    sink);
		/* that removed spans above @at only: it still holds */
		if (at >= 0)
			o.depth = zmq_trace_at(src, (uint32_t)at)->depth + 1;
		else if (at == -1)
			o.depth = 0;
		else
			o.depth = zmq_trace_depth_of(src, o.parent);
	} else {
		/* Omnistat: nesting is the order of starts; ids are ours. */
		o.id = ++src->next_id;
		if (src->count) {
			const struct zmq_trace_open *top =
				zmq_trace_at(src, src->count - 1);

			o.parent = top->id;
			o.depth = top->depth + 1;
		}
	}
	if (ev->name_len >= sizeof(o.inl)) {
		o.heap = strdup(ev->name);
		if (!o.heap)
			return -1;
	} else {
		memcpy(o.inl, ev->name, ev->name_len + 1);
	}

	if (src->count >= st->opts.max_open_spans) {
		/*
		 * Full: close the oldest span rather than refuse the new one.
		 * A source hitting the cap usually leaks begins, and its
		 * oldest spans are the leaked ones.
		 */
		zmq_trace_emit_end(st, sink, src, zmq_trace_at(src, 0),
				   TALLY_SPAN_EVICTED, ev->ts_ns);
		zmq_trace_remove(st, src, 0);
		st->counters.evicted++;
	} else if (src->count == src->cap && zmq_trace_ring_grow(src)) {
		free(o.heap);
		return -1;
	}
	*zmq_trace_at(src, src->count) = o;
	src->count++;
	st->nopen++;

	zmq_trace_span_init(&sp, src);
	sp.name = ev->name;
	sp.span_id = o.id;
	sp.parent_id = o.parent;
	sp.phase = TALLY_SPAN_BEGIN;
	sp.depth = o.depth;
	sp.src.tid = ev->tid;
	sp.begin_ns = ev->ts_ns;
	sp.values = ev->nattrs ? ev->attrs : NULL;
	sp.nvalues = ev->nattrs;
	zmq_trace_emit(st, sink, &sp, ev->ts_ns);
	return 0;
}

/*
 * End @ev, from a thread whose stack had @parent as the ended span's
 * parent, came after events its client dropped: the thread's open spans
 * other than @parent and its ancestors are not proven open any more.
 */
static void zmq_trace_gap(struct zmq_trace_state *st,
			  struct zmq_trace_source *src,
			  const struct zmq_trace_event *ev, uint64_t parent,
			  const struct zmq_trace_sink *sink)
{
	long at = zmq_trace_parent_at(src, ev->tid, parent);

	if (at >= -1)
		zmq_trace_lost_ends(st, src, ev->tid, at, ev->ts_ns, sink);
}

static void zmq_trace_end(struct zmq_trace_state *st,
			  struct zmq_trace_source *src,
			  const struct zmq_trace_event *ev,
			  const struct zmq_trace_sink *sink)
{
	struct tally_span sp;
	long i;

	if (ev->format == ZMQ_TRACE_NATIVE)
		i = zmq_trace_find_id(src, ev->span_id);
	else
		i = zmq_trace_find_name(src, ev->name);
	if (i >= 0) {
		struct zmq_trace_open *o = zmq_trace_at(src, (uint32_t)i);
		uint64_t parent = o->parent;
		/*
		 * The client reports a gap before this end: the spans its
		 * thread began inside this one (innermost first, before it),
		 * or after its parent outside it, may have ended in the gap,
		 * and nothing after it says they did not. An end from another
		 * thread says nothing about the sending thread's stack.
		 */
		bool gap = ev->dropped && ev->tid && o->tid == ev->tid;

		if (gap) {
			zmq_trace_lost_ends(st, src, ev->tid, i, ev->ts_ns,
					    sink);
			o = zmq_trace_at(src, (uint32_t)i);
		}
		zmq_trace_emit_end_v(st, sink, src, o, 0, ev->ts_ns, ev->attrs,
				     ev->nattrs);
		zmq_trace_remove(st, src, (uint32_t)i);
		if (gap)
			zmq_trace_gap(st, src, ev, parent, sink);
		return;
	}

	/*
	 * An end without a begin (the begin was dropped, evicted, closed as
	 * abandoned, or sent before we started): pass it on, flagged, with
	 * what the message itself says. Without a name it says nothing a
	 * consumer could use (a region "" would become a series of its own):
	 * count it only.
	 */
	st->counters.orphan_end++;
	if (!ev->name_len)
		return;
	/* A named end comes from the span's own thread, with its parent. */
	if (ev->dropped && ev->format == ZMQ_TRACE_NATIVE)
		zmq_trace_gap(st, src, ev, ev->parent_id, sink);
	zmq_trace_span_init(&sp, src);
	sp.name = ev->name;
	sp.phase = TALLY_SPAN_END;
	sp.flags = TALLY_SPAN_ORPHAN_END;
	sp.src.tid = ev->tid;
	sp.values = ev->nattrs ? ev->attrs : NULL;
	sp.nvalues = ev->nattrs;
	if (ev->format == ZMQ_TRACE_NATIVE) {
		sp.span_id = ev->span_id;
		sp.parent_id = ev->parent_id;
		sp.depth = zmq_trace_depth_of(src, ev->parent_id);
	} else {
		sp.span_id = ++src->next_id;
	}
	zmq_trace_emit(st, sink, &sp, ev->ts_ns);
}

/* Close every open span of @src, innermost first, with @flags. */
static uint64_t zmq_trace_close_all(struct zmq_trace_state *st,
				    struct zmq_trace_source *src, int64_t ts_ns,
				    uint32_t flags,
				    const struct zmq_trace_sink *sink)
{
	uint64_t n = src->count;

	while (src->count) {
		uint32_t top = src->count - 1;

		zmq_trace_emit_end(st, sink, src, zmq_trace_at(src, top), flags,
				   ts_ns);
		zmq_trace_remove(st, src, top);
	}
	return n;
}

static uint64_t zmq_trace_abandon(struct zmq_trace_state *st,
				  struct zmq_trace_source *src, int64_t ts_ns,
				  const struct zmq_trace_sink *sink)
{
	uint64_t n =
		zmq_trace_close_all(st, src, ts_ns, TALLY_SPAN_ABANDONED, sink);

	st->counters.abandoned += n;
	return n;
}

/*
 * The table is full: forget the least recently active source. Its open
 * spans end, flagged evicted, at its last event's time. A source silent
 * the longest is the likeliest to be gone already, and a real tracer that
 * keeps sending stays ahead of a flood of forged one-message sources.
 */
static void zmq_trace_evict_source(struct zmq_trace_state *st,
				   const struct zmq_trace_sink *sink)
{
	struct zmq_trace_source *src =
		zmq_trace_source_of(tally_lru_oldest(&st->sources));

	st->counters.evicted += zmq_trace_close_all(st, src, src->last_ts,
						    TALLY_SPAN_EVICTED, sink);
	st->counters.source_limit++;
	zmq_trace_source_unlink(st, src);
}

/* A value as label text: integers exactly, doubles as %.17g. */
static void zmq_trace_attr_text(const struct tally_attr *a, char *out,
				size_t size)
{
	switch (a->type) {
	case TALLY_ATTR_T_INT:
		snprintf(out, size, "%" PRId64, a->i);
		break;
	case TALLY_ATTR_T_DOUBLE:
		snprintf(out, size, "%.17g", a->d);
		break;
	case TALLY_ATTR_T_STRING:
		snprintf(out, size, "%s", a->s);
		break;
	default:
		snprintf(out, size, "%s", a->b ? "true" : "false");
		break;
	}
}

/* @ev's SOURCE items replace what @src announced before. */
static void zmq_trace_announce(struct zmq_trace_source *src,
			       const struct zmq_trace_event *ev)
{
	char vals[TALLY_WIRE_MAX_SOURCE][TALLY_WIRE_MAX_ATTR_STR + 1];
	struct zmq_trace_announce *an;
	size_t size = 0;
	char *p;

	for (uint32_t i = 0; i < ev->nsource; i++) {
		zmq_trace_attr_text(&ev->source[i], vals[i], sizeof(vals[0]));
		size += strlen(ev->source[i].key) + strlen(vals[i]) + 2;
	}
	an = malloc(sizeof(*an) + size);
	if (!an)
		return; /* keep the last one; the next may fit */
	an->n = 0;
	p = an->strs;
	for (uint32_t i = 0; i < ev->nsource; i++) {
		const char *key = ev->source[i].key;

		/* the labels the collector adds win */
		if (!strcmp(key, "trace") || !strcmp(key, "host") ||
		    !strcmp(key, "pid") || !strcmp(key, "rank"))
			continue;
		an->pairs[an->n].key = p;
		p += sprintf(p, "%s", key) + 1;
		an->pairs[an->n].value = p;
		p += sprintf(p, "%s", vals[i]) + 1;
		an->n++;
	}
	free(src->announce);
	src->announce = an;
}

/* A counter's series key: its source, kind, name and sorted labels. */
struct zmq_trace_series_key {
	const struct zmq_trace_source *src;
	const struct zmq_trace_counter *c;
	uint8_t order[TALLY_WIRE_MAX_LABELS]; /* @c's labels by key */
};

static uint64_t zmq_trace_series_hash(const struct zmq_trace_series_key *k)
{
	uint8_t sep = 0xff;
	uint64_t h = TALLY_HASH_SEED;

	h = tally_hash_bytes(h, &k->src, sizeof(k->src));
	h = tally_hash_bytes(h, &k->c->kind, 1);
	h = tally_hash_bytes(h, k->c->name, strlen(k->c->name));
	for (uint8_t i = 0; i < k->c->nlabels; i++) {
		const char *key = k->c->labels[k->order[i]].key;
		const char *val = k->c->labels[k->order[i]].value;

		h = tally_hash_bytes(h, &sep, 1);
		h = tally_hash_bytes(h, key, strlen(key));
		h = tally_hash_bytes(h, &sep, 1);
		h = tally_hash_bytes(h, val, strlen(val));
	}
	return h;
}

static bool zmq_trace_series_eq(const struct tally_lru_node *n, const void *key)
{
	const struct zmq_trace_series *se =
		tally_container_of(n, struct zmq_trace_series, node);
	const struct zmq_trace_series_key *k = key;

	if (se->src != k->src || se->kind != k->c->kind ||
	    se->nlabels != k->c->nlabels || strcmp(se->name, k->c->name))
		return false;
	for (uint8_t i = 0; i < se->nlabels; i++)
		if (strcmp(se->labels[i].key, k->c->labels[k->order[i]].key) ||
		    strcmp(se->labels[i].value,
			   k->c->labels[k->order[i]].value))
			return false;
	return true;
}

/* A new series for @k in @src. Return: it, or NULL (ENOMEM). */
static struct zmq_trace_series *
zmq_trace_series_new(struct zmq_trace_state *st, struct zmq_trace_source *src,
		     const struct zmq_trace_series_key *k, uint64_t h)
{
	const struct zmq_trace_counter *c = k->c;
	size_t nl = strlen(c->name), size = 2 * nl + 32;
	struct zmq_trace_series *se;
	char *p;

	for (uint8_t i = 0; i < c->nlabels; i++)
		size += strlen(c->labels[i].key) + strlen(c->labels[i].value) +
			2;
	if (tally_lru_reserve(&st->series) < 0)
		return NULL;
	se = calloc(1, sizeof(*se) + size);
	if (!se)
		return NULL;
	p = se->strs;
	se->name = p;
	p += sprintf(p, "%s", c->name) + 1;
	se->metric = p;
	p += sprintf(p, "tally_app_%s%s", c->name,
		     c->kind == TALLY_WIRE_DELTA ? "_total" : "") +
	     1;
	for (uint8_t i = 0; i < c->nlabels; i++) {
		se->labels[i].key = p;
		p += sprintf(p, "%s", c->labels[k->order[i]].key) + 1;
		se->labels[i].value = p;
		p += sprintf(p, "%s", c->labels[k->order[i]].value) + 1;
	}
	se->src = src;
	se->ts_ns = INT64_MIN;
	se->kind = c->kind;
	se->nlabels = c->nlabels;
	se->next = src->series;
	src->series = se;
	(void)tally_lru_insert(&st->series, &se->node, h); /* reserved */
	return se;
}

/* Apply @ev's counter snapshots to their series and emit their values. */
static void zmq_trace_counters(struct zmq_trace_state *st,
			       struct zmq_trace_source *src,
			       const struct zmq_trace_event *ev,
			       const struct zmq_trace_sink *sink)
{
	for (uint32_t i = 0; i < ev->ncounters; i++) {
		const struct zmq_trace_counter *c = &ev->counters[i];
		struct zmq_trace_series_key k = { .src = src, .c = c };
		struct tally_label l[3 + TALLY_WIRE_MAX_LABELS];
		struct zmq_trace_series *se;
		struct tally_lru_node *n;
		char rank[16];
		uint64_t h;

		/* insertion sort of at most 4 labels by key */
		for (uint8_t j = 0; j < c->nlabels; j++) {
			uint8_t x = j;

			while (x > 0 && strcmp(c->labels[k.order[x - 1]].key,
					       c->labels[j].key) > 0) {
				k.order[x] = k.order[x - 1];
				x--;
			}
			k.order[x] = j;
		}
		h = zmq_trace_series_hash(&k);
		n = tally_lru_find(&st->series, h, zmq_trace_series_eq, &k);
		if (n) {
			se = tally_container_of(n, struct zmq_trace_series,
						node);
		} else if (tally_lru_count(&st->series) >=
			   st->opts.max_counter_series) {
			st->counters.counter_limit++;
			continue;
		} else {
			se = zmq_trace_series_new(st, src, &k, h);
			if (!se) {
				st->counters.emit_failed++;
				continue;
			}
		}
		if (se->kind == TALLY_WIRE_DELTA) {
			se->value += (double)c->delta;
		} else if (ev->ts_ns >= se->ts_ns ||
			   se->ts_ns - ev->ts_ns >
				   TALLY_WIRE_GAUGE_REORDER_NS) {
			se->value = c->gauge;
			se->ts_ns = ev->ts_ns;
		} else {
			/* a thread's older snapshot, overtaken on the way by
			 * another thread's: stale */
			continue;
		}
		if (!sink->metric)
			continue;
		snprintf(rank, sizeof(rank), "%" PRId32, src->rank);
		l[0] = (struct tally_label){ "trace", src->trace };
		l[1] = (struct tally_label){ "host", src->host };
		l[2] = (struct tally_label){ "rank", rank };
		memcpy(l + 3, se->labels, se->nlabels * sizeof(*l));
		if (sink->metric(sink->ctx,
				 se->kind == TALLY_WIRE_DELTA ? TALLY_COUNTER
							      : TALLY_GAUGE,
				 se->metric, l, 3u + se->nlabels, se->value,
				 ev->ts_ns))
			st->counters.emit_failed++;
	}
}

/*
 * Emit @src's figures (see zmq_trace_state_check()) at @real_ns, or with
 * @info_only its tally_trace_source_info alone.
 */
static void zmq_trace_source_figures(struct zmq_trace_state *st,
				     const struct zmq_trace_source *src,
				     int64_t real_ns, bool info_only,
				     const struct zmq_trace_sink *sink)
{
	struct tally_label l[4 + TALLY_WIRE_MAX_SOURCE];
	char pid[16], rank[16];
	const struct {
		enum tally_metric_type type;
		const char *name;
		double value;
	} fig[] = {
		{ TALLY_COUNTER, "tally_trace_source_messages_total",
		  (double)src->messages },
		{ TALLY_COUNTER, "tally_trace_source_dropped_total",
		  (double)src->client_dropped },
		{ TALLY_GAUGE, "tally_trace_source_last_seen_timestamp_seconds",
		  (double)src->newest_ts / 1e9 },
	};
	size_t n = 4;

	if (!sink->metric || !st->opts.source_figures)
		return;
	snprintf(pid, sizeof(pid), "%" PRIu32, src->pid);
	snprintf(rank, sizeof(rank), "%" PRId32, src->rank);
	l[0] = (struct tally_label){ "trace", src->trace };
	l[1] = (struct tally_label){ "host", src->host };
	l[2] = (struct tally_label){ "pid", pid };
	l[3] = (struct tally_label){ "rank", rank };
	for (size_t i = 0; i < sizeof(fig) / sizeof(fig[0]) && !info_only; i++)
		if (sink->metric(sink->ctx, fig[i].type, fig[i].name, l, 4,
				 fig[i].value, real_ns))
			st->counters.emit_failed++;
	if (src->announce) {
		memcpy(l + 4, src->announce->pairs,
		       src->announce->n * sizeof(*l));
		n += src->announce->n;
	}
	if (sink->metric(sink->ctx, TALLY_INFO, "tally_trace_source_info", l, n,
			 1, real_ns))
		st->counters.emit_failed++;
}

int zmq_trace_state_apply(struct zmq_trace_state *st,
			  const struct zmq_trace_event *ev, int64_t now_ns,
			  const struct zmq_trace_sink *sink)
{
	struct zmq_trace_source *src;
	const char *host = ev->host;
	size_t hl = ev->host_len;

	if (!hl) {
		host = st->local_host;
		hl = strlen(host);
	}
	src = zmq_trace_source_get(st, ev, host, hl);
	if (!src && errno == EMLINK) {
		zmq_trace_evict_source(st, sink);
		src = zmq_trace_source_get(st, ev, host, hl);
	}
	if (!src)
		return -1;
	src->last_seen = now_ns;
	src->messages++;
	src->client_dropped += ev->dropped;
	if (ev->ts_ns > src->newest_ts || src->messages == 1)
		src->newest_ts = ev->ts_ns;
	if (ev->nsource) {
		src->rank = ev->rank;
		zmq_trace_announce(src, ev);
		/*
		 * Its info at once, not at the next check: a process that
		 * ends before it (a short job, the last check after it
		 * exited) would never say which GPUs it saw (the report maps
		 * ranks by it).
		 */
		zmq_trace_source_figures(st, src, ev->ts_ns, true, sink);
	}
	if (ev->ncounters) {
		src->rank = ev->rank;
		zmq_trace_counters(st, src, ev, sink);
	}
	if (ev->counter)
		return 0;
	if (ev->close) {
		if (!src->closed ||
		    (int64_t)ev->parent_id < src->announced_first)
			src->announced_first = (int64_t)ev->parent_id;
		src->announced += ev->span_id;
		src->closed = true;
		return 0;
	}
	if (ev->format == ZMQ_TRACE_NATIVE &&
	    (!src->received++ || ev->ts_ns < src->first_ts))
		src->first_ts = ev->ts_ns;
	if (ev->ts_ns > src->last_ts)
		src->last_ts = ev->ts_ns;
	src->rank = ev->rank;

	if (ev->phase == TALLY_SPAN_BEGIN)
		return zmq_trace_begin(st, src, ev, sink);
	zmq_trace_end(st, src, ev, sink);
	return 0;
}

uint64_t zmq_trace_state_check(struct zmq_trace_state *st, int64_t now_ns,
			       int64_t real_ns, bool final,
			       const struct zmq_trace_sink *sink)
{
	struct tally_lru_node *n = tally_lru_oldest(&st->sources), *newer;
	uint64_t closed = 0;

	for (; n; n = newer) {
		struct zmq_trace_source *src = zmq_trace_source_of(n);
		int64_t silent = now_ns - src->last_seen;
		bool gone = false;

		newer = tally_lru_newer(&st->sources, n);
		/* the socket is drained: what did not come, will not */
		if (final)
			zmq_trace_settle(st, src);
		/* A remote pid, or Omnistat's none, means nothing here. */
		if (zmq_trace_pid_checkable(src) &&
		    (final || silent >= st->opts.gone_grace_ns)) {
			gone = !st->opts.pid_alive(src->pid);
			if (!gone)
				src->alive_ns = real_ns;
		}

		if (gone) {
			/*
			 * It ended between the last time it was known running
			 * and now: end its spans at the former, so that they
			 * never outlast the process; at the end of its job,
			 * when the job ended (it was killed with it).
			 */
			int64_t end = src->alive_ns > src->last_ts
					      ? src->alive_ns
					      : src->last_ts;

			if (final && st->job_end_ns > end)
				end = st->job_end_ns;
			closed += zmq_trace_abandon(st, src, end, sink);
		} else if (src->count && st->opts.abandon_ns &&
			   silent >= st->opts.abandon_ns) {
			closed += zmq_trace_abandon(st, src, src->last_ts, sink);
		} else if (src->count || silent < st->opts.idle_ns) {
			zmq_trace_source_figures(st, src, real_ns, false, sink);
			continue;
		}
		zmq_trace_source_unlink(st, src);
	}
	return closed;
}

void zmq_trace_state_job_ended(struct zmq_trace_state *st, int64_t end_ns)
{
	st->job_end_ns = end_ns;
}

int zmq_trace_state_retune(struct zmq_trace_state *st,
			   const struct zmq_trace_state_opts *opts,
			   const struct zmq_trace_sink *sink)
{
	if (!opts->max_open_spans || !opts->max_sources) {
		errno = EINVAL;
		return -1;
	}
	st->opts.max_open_spans = opts->max_open_spans;
	st->opts.max_sources = opts->max_sources;
	st->opts.abandon_ns = opts->abandon_ns;
	st->opts.idle_ns = opts->idle_ns;
	st->opts.gone_grace_ns = opts->gone_grace_ns;
	st->opts.max_counter_series = opts->max_counter_series;
	st->opts.source_figures = opts->source_figures;
	st->sources.max = opts->max_sources;
	st->series.max =
		opts->max_counter_series ? opts->max_counter_series : 1;
	while (tally_lru_count(&st->sources) > st->opts.max_sources)
		zmq_trace_evict_source(st, sink);
	for (struct tally_lru_node *n = tally_lru_oldest(&st->sources); n;
	     n = tally_lru_newer(&st->sources, n)) {
		struct zmq_trace_source *src = zmq_trace_source_of(n);

		while (src->count > st->opts.max_open_spans) {
			zmq_trace_emit_end(st, sink, src, zmq_trace_at(src, 0),
					   TALLY_SPAN_EVICTED, src->last_ts);
			zmq_trace_remove(st, src, 0);
			st->counters.evicted++;
		}
	}
	return 0;
}

uint64_t zmq_trace_state_abandon_all(struct zmq_trace_state *st,
				     int64_t real_ns,
				     const struct zmq_trace_sink *sink)
{
	struct tally_lru_node *n;
	uint64_t closed = 0;

	while ((n = tally_lru_oldest(&st->sources))) {
		struct zmq_trace_source *src = zmq_trace_source_of(n);

		closed += zmq_trace_abandon(st, src, real_ns, sink);
		zmq_trace_source_unlink(st, src);
	}
	return closed;
}
