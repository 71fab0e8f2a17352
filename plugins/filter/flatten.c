/* SPDX-License-Identifier: MIT */
/*
 * plugins/filter/flatten.c - nested spans to one flat region per thread
 *
 * The glue between the pipeline and the state machine of
 * plugins/filter/flatten/state.c: span records go through the state, the
 * fragments it hands back become the span records of the batch passed on,
 * metric records go on unchanged. See doc/plugins/flatten.md.
 *
 * A fragment record starts as the span record that caused it, borrowed
 * from the input batch (tally_batch_append_from()), and only its fields are
 * rewritten: its strings (trace, host, and its name when it is the event's
 * own span) stay shared with the input batch, so that the hot path copies
 * names only for fragments of other spans (a parent resumed after its
 * child ended). Metric records are borrowed unchanged.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <tally/plugin.h>

#include "flatten/state.h"

struct flatten {
	int keep; /* enum flatten_keep, from the option table */
	bool self_time;
	int64_t max_depth;
	int64_t max_lanes;
	double lane_expire; /* seconds */

	struct flatten_state *st;
	struct flatten_counters shown; /* counters already published */
	/* the batch being built, and the record being applied */
	struct tally_batch *out;
	struct tally_batch *in;
	const struct tally_record *cur;
	size_t cur_i;
	uint64_t self_failed;	    /* self_seconds that could not be added */
	struct tally_labels *empty; /* tally_labels_empty() */
};

static const char *const flatten_keeps[] = { "innermost", "outermost", NULL };

/* The state's options, from the option table. */
static struct flatten_opts flatten_opts_of(const struct flatten *f)
{
	return (struct flatten_opts){
		.keep = (enum flatten_keep)f->keep,
		.self_time = f->self_time,
		.max_depth = (uint32_t)f->max_depth,
		.max_lanes = (uint32_t)f->max_lanes,
	};
}

static int flatten_init(struct tally_instance *inst, void *state)
{
	struct flatten *f = state;
	struct flatten_opts o = flatten_opts_of(f);

	f->empty = tally_labels_empty();
	f->st = flatten_state_new(&o);
	if (!f->st) {
		tally_log(inst, LOG_ERR, "cannot set up: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* A string of the state's for the new record: shared if it is @cur's. */
static const char *flatten_str(struct flatten *f, const char *s,
			       const char *cur)
{
	return s == cur ? cur : tally_batch_strdup(f->out, s);
}

/*
 * The sink: append fragment @fr to the batch being built. The record is the
 * applied event's, borrowed from the input batch (no string copied), with
 * its fields rewritten; only a name, trace or host that is not the event's
 * own (a resumed parent, a lane closed on its own) is copied.
 */
static int flatten_emit(void *ctx, const struct flatten_frag *fr)
{
	struct flatten *f = ctx;
	const struct tally_span *c, *s = &fr->span;
	struct tally_labels *attrs = s->attrs ? s->attrs : f->empty;
	const char *name, *trace, *host;
	struct tally_record *r;

	if (!f->cur) {
		/* a fragment of no event (a reload): a record of its own */
		struct tally_attr v = TALLY_ATTR_DOUBLE(
			"self_seconds", (double)fr->self_ns / 1e9);
		struct tally_span sp = *s;

		if (fr->self_ns >= 0) {
			sp.values = &v;
			sp.nvalues = 1;
		}
		return tally_batch_add_span(f->out, &sp, fr->ts_ns);
	}
	c = &f->cur->span;
	name = flatten_str(f, s->name, c->name);
	trace = flatten_str(f, s->trace, c->trace);
	host = flatten_str(f, s->src.host, c->src.host);
	/* Copies first: a failure must not leave a half-made record. */
	if (!name || !trace || !host)
		return -1;
	r = tally_batch_append_from(f->out, f->in, f->cur_i);
	if (!r)
		return -1;
	r->ts_ns = fr->ts_ns;
	r->span.flags = s->flags;
	r->span.begin_ns = s->begin_ns;
	if (fr->own) {
		/* the event itself: its ids, source and measurements stay */
		r->span.name = name;
		r->span.parent_id = s->parent_id;
		r->span.depth = s->depth;
	} else {
		struct tally_labels *had = r->span.attrs;

		r->span = *s;
		r->span.trace = trace;
		r->span.name = name;
		r->span.src.host = host;
		r->span.attrs = had; /* the reference the batch holds */
	}
	if (r->span.attrs != attrs) {
		tally_labels_unref(r->span.attrs);
		r->span.attrs = tally_labels_ref(attrs);
	}
	if (fr->self_ns >= 0) {
		struct tally_attr v = TALLY_ATTR_DOUBLE(
			"self_seconds", (double)fr->self_ns / 1e9);

		if (tally_batch_span_set_value(f->out, r, &v) < 0)
			f->self_failed++;
	}
	return 0;
}

/* Publish what the state counted since the last call, for self-metrics. */
static void flatten_publish(struct tally_instance *inst, struct flatten *f)
{
	const struct flatten_counters *k = flatten_state_counters(f->st);
	struct flatten_counters *p = &f->shown;

#define FLATTEN_PUB(field, fn, reason)                         \
	do {                                                   \
		if (k->field != p->field)                      \
			fn(inst, reason, k->field - p->field); \
	} while (0)
	FLATTEN_PUB(orphan_end, tally_count_drop, "orphan_end");
	FLATTEN_PUB(depth_limit, tally_count_drop, "depth_limit");
	FLATTEN_PUB(malformed, tally_count_drop, "malformed");
	FLATTEN_PUB(nomem, tally_count_drop, "nomem");
	FLATTEN_PUB(emit_failed, tally_count_drop, "nomem");
	FLATTEN_PUB(fragments, tally_count_event, "fragments");
	FLATTEN_PUB(reordered, tally_count_event, "reordered");
	FLATTEN_PUB(lane_evicted, tally_count_event, "lanes_evicted");
#undef FLATTEN_PUB
	*p = *k;
	if (f->self_failed) {
		tally_count_drop(inst, "self_time", f->self_failed);
		f->self_failed = 0;
	}
}

/*
 * The first span record of @in is record @first: start the batch passed
 * on, with the metric records before it.
 */
static int flatten_start(struct tally_instance *inst, struct flatten *f,
			 struct tally_batch *in, size_t first)
{
	f->out = tally_batch_new();
	if (!f->out)
		return -1;
	f->in = in;
	for (size_t i = 0; i < first; i++)
		if (!tally_batch_append_from(f->out, in, i))
			tally_count_drop(inst, "nomem", 1);
	return 0;
}

static struct tally_batch *flatten_process(struct tally_instance *inst,
					   void *state, struct tally_batch *in)
{
	struct flatten *f = state;
	const struct flatten_sink sink = { .emit = flatten_emit, .ctx = f };
	const struct tally_record *recs = tally_batch_records(in);
	size_t n = tally_batch_count(in), i;
	int64_t now = 0;

	for (i = 0; i < n; i++) {
		const struct tally_record *rec = &recs[i];

		if (rec->kind != TALLY_REC_SPAN) {
			/* before the first span, nothing is built yet */
			if (f->out && !tally_batch_append_from(f->out, in, i))
				tally_count_drop(inst, "nomem", 1);
			continue;
		}
		if (!f->out) {
			if (flatten_start(inst, f, in, i) < 0) {
				tally_count_drop(inst, "nomem", n);
				return NULL;
			}
			now = tally_monotonic_ns();
		}
		f->cur = rec;
		f->cur_i = i;
		(void)flatten_state_apply(f->st, &rec->span, rec->ts_ns, now,
					  &sink);
	}
	if (!f->out)
		return tally_batch_ref(in); /* no span: nothing to flatten */
	flatten_publish(inst, f);
	f->in = NULL;
	f->cur = NULL;
	in = f->out;
	f->out = NULL;
	return in;
}

/* Forget lanes silent for lane_expire seconds with nothing open. */
static int flatten_tick(struct tally_instance *inst, void *state,
			struct tally_batch *out)
{
	struct flatten *f = state;
	int64_t before = tally_monotonic_ns() - (int64_t)(f->lane_expire * 1e9);
	uint32_t n = flatten_state_expire(f->st, before);

	(void)out;
	if (n)
		tally_count_event(inst, "lanes_expired", n);
	return 0;
}

/*
 * Suspend @st (@resume NULL) or resume it with @resume, with a batch of its
 * own as the sink's, and send what that made downstream.
 * Return: 0, or -1 with errno = ENOMEM (no batch: nothing done) or EINVAL
 * (bad options, from flatten_state_resume(): nothing done).
 */
static int flatten_outside(struct tally_instance *inst, struct flatten *f,
			   struct flatten_state *st,
			   const struct flatten_opts *resume)
{
	const struct flatten_sink sink = { .emit = flatten_emit, .ctx = f };
	int ret = 0;

	f->out = tally_batch_new();
	if (!f->out) {
		errno = ENOMEM;
		return -1;
	}
	f->in = NULL;
	f->cur = NULL;
	if (resume)
		ret = flatten_state_resume(st, resume, &sink);
	else
		flatten_state_suspend(st, tally_now_ns(), &sink);
	if (ret == 0)
		(void)tally_emit(inst, f->out);
	else
		tally_batch_unref(f->out);
	f->out = NULL;
	return ret;
}

/*
 * A reload replaces this instance: end every open fragment downstream (the
 * old pipeline's outputs must not keep a region open that nothing will
 * end); with a successor, the open spans go on in it.
 */
static void *flatten_handoff(struct tally_instance *inst, void *state,
			     int next)
{
	struct flatten *f = state;
	struct flatten_state *st = f->st;

	/* no memory: the old outputs keep those regions until they expire */
	if (flatten_outside(inst, f, st, NULL) < 0)
		tally_count_drop(inst, "nomem", flatten_state_lanes(st));
	flatten_publish(inst, f);
	if (!next)
		return NULL;
	f->st = NULL;
	return st;
}

/* Take over the open spans of the instance replaced, shown our way. */
static int flatten_adopt(struct tally_instance *inst, void *state,
			 void *handed)
{
	struct flatten *f = state;
	struct flatten_state *st = handed;
	const struct flatten_opts o = flatten_opts_of(f);
	struct flatten_counters was = *flatten_state_counters(st);

	if (flatten_outside(inst, f, st, &o) < 0)
		return -1;
	flatten_state_free(f->st);
	f->st = st;
	/* its predecessor published the counts up to the handoff */
	f->shown = was;
	flatten_publish(inst, f);
	return 0;
}

static void flatten_discard(void *handed)
{
	flatten_state_free(handed);
}

static void flatten_fini(struct tally_instance *inst, void *state)
{
	struct flatten *f = state;

	(void)inst;
	flatten_state_free(f->st);
}

static const struct tally_option flatten_options[] = {
	TALLY_OPT_ENUM("keep", struct flatten, keep, "innermost", flatten_keeps,
		       "which open span of a thread is shown: the most "
		       "recently begun (innermost) or the oldest "
		       "(outermost)"),
	TALLY_OPT_BOOL("self_time", struct flatten, self_time, "false",
		       "add each span's self time (its duration minus its "
		       "children's) as self_seconds to its last fragment"),
	TALLY_OPT_INT("max_depth", struct flatten, max_depth, "1024", 1,
		      1000000,
		      "open spans tracked per thread; deeper begins are not "
		      "shown (their time stays with the deepest one shown) "
		      "and are counted"),
	TALLY_OPT_INT("max_lanes", struct flatten, max_lanes, "65536", 1,
		      100000000,
		      "threads (trace, host, pid, tid) tracked; beyond, the "
		      "least recently active one is forgotten (its open "
		      "spans end as evicted)"),
	TALLY_OPT_DURATION("lane_expire", struct flatten, lane_expire, "300", 0,
			 1e9,
			 "seconds after which a thread with no open span is "
			 "forgotten (checked every interval)"),
	TALLY_OPT_END
};

static const struct tally_filter_ops flatten_ops = {
	.init = flatten_init,
	.process = flatten_process,
	.tick = flatten_tick,
	.fini = flatten_fini,
	.handoff = flatten_handoff,
	.adopt = flatten_adopt,
	.discard = flatten_discard,
};

TALLY_PLUGIN_FILTER(flatten,
		    "nested spans to one flat region per thread: the "
		    "innermost or outermost open span, time counted once",
		    struct flatten, flatten_options, &flatten_ops);
