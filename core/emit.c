/* SPDX-License-Identifier: MIT */
/*
 * core/emit.c - pipelines: a batch from an input or a filter runs through
 * the pipeline's filters in order and is queued, shared by reference, for
 * each of its outputs; filters' ticks on wall-clock marks
 *
 * Loop thread only (a blocking input's batch is handed to the loop first,
 * core/input.c).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

#include <event2/event.h>

#include "core-internal.h"

/*
 * Queue @b (not consumed) for output @o without the samples of forms @o
 * does not take. --check-config refuses pipelines that would bring them
 * (graph of emits/absorbs/accepts), so this only catches an input that
 * emits a form it did not declare: its records are dropped and counted
 * rather than rendered as if they were cumulative.
 */
static void outq_push_accepted(struct tally_instance *o, struct tally_batch *b)
{
	unsigned ok = TALLY_FORM_BIT(TALLY_FORM_CUMULATIVE) |
		      o->plugin->output->accepts;
	size_t n = tally_batch_count(b), dropped = 0;
	struct tally_batch *sel;
	bool *keep;

	if (!(tally_batch_forms(b) & ~ok)) {
		tally_outq_push(o, tally_batch_ref(b));
		return;
	}
	keep = malloc(n * sizeof(*keep));
	if (!keep) {
		tally_count_drop(o, "nomem", n);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		const struct tally_record *r = tally_batch_at(b, i);

		keep[i] = r->kind != TALLY_REC_METRIC ||
			  (TALLY_FORM_BIT(r->metric.form) & ok);
		dropped += !keep[i];
	}
	tally_count_drop(o, "needs_aggregate", dropped);
	tally_log(o, LOG_WARNING,
		  "%zu samples of %s were deltas, observations or set members, "
		  "which this output does not take: have the input leave them "
		  "out or put a filter that turns them into totals in front "
		  "of it",
		  dropped, tally_batch_source(b));
	sel = tally_batch_select(b, keep);
	free(keep);
	if (!sel) {
		tally_count_drop(o, "nomem", n - dropped);
		return;
	}
	tally_batch_set_source(sel, tally_batch_source(b),
			       tally_batch_interval(b));
	if (tally_batch_count(sel))
		tally_outq_push(o, sel);
	else
		tally_batch_unref(sel);
}

/*
 * A job's collector labels what it collects with the job id, so series of
 * many jobs on one node (or one Prometheus) stay apart: metrics get a
 * jobid label, spans a jobid attribute (outputs make it a label of the
 * series they derive from spans). One the input set already wins. The
 * batch is still the input's alone here, so its records can be changed in
 * place.
 */
static void emit_add_jobid(struct tally_batch *b, const char *jobid)
{
	for (size_t i = 0; i < tally_batch_count(b); i++) {
		struct tally_record *r =
			(struct tally_record *)tally_batch_at(b, i);
		struct tally_labels **ls = r->kind == TALLY_REC_METRIC
						   ? &r->metric.labels
					   : r->kind == TALLY_REC_SPAN
						   ? &r->span.attrs
						   : NULL;
		struct tally_labels *with;

		if (!ls || tally_labels_get(*ls, "jobid"))
			continue;
		with = tally_labels_with(*ls, "jobid", jobid);
		if (!with)
			continue;
		tally_labels_unref(*ls);
		*ls = with;
	}
}

/*
 * Every batch a user collector's instances make: an input's, and what a
 * filter makes (its process's new batch, its tick's), whatever labels the
 * filter kept (aggregate's group_by) - before the core seals it.
 */
static void emit_jobid(struct tally_batch *b)
{
	if (tally_user_mode() && tally_jobid())
		emit_add_jobid(b, tally_jobid());
}

/* Run @b (a reference the callee consumes) from filter @from onwards. */
static void pipe_run(struct tally_pipeline *p, size_t from,
		     struct tally_batch *b)
{
	for (size_t i = from; i < p->nfilters && b; i++) {
		struct tally_instance *f = p->filters[i];
		struct tally_batch *out;
		size_t n = tally_batch_count(b);

		f->records_in += n;
		errno = 0;
		f->in_op = true;
		out = f->plugin->filter->process(f, f->state, b);
		f->in_op = false;
		if (!out && errno)
			tally_log(f, LOG_WARNING, "process failed: %s",
				  strerror(errno));
		/* a filter's new batch still comes from the same input */
		if (out && out != b) {
			tally_batch_set_source(out, tally_batch_source(b),
					       tally_batch_interval(b));
			emit_jobid(out);
			tally_batch_seal(out);
		}
		tally_batch_unref(b);
		b = out;
		if (b)
			f->records_out += tally_batch_count(b);
	}
	if (!b)
		return;
	if (tally_batch_count(b) == 0) {
		tally_batch_unref(b);
		return;
	}
	for (size_t i = 0; i < p->noutputs; i++) {
		p->outputs[i]->records_in += tally_batch_count(b);
		outq_push_accepted(p->outputs[i], b);
	}
	tally_batch_unref(b);
}

/* tally_emit() of a filter: downstream of it in its pipeline */
static int filter_emit(struct tally_instance *f, struct tally_batch *b)
{
	if (f->in_op) {
		tally_batch_unref(b);
		errno = EBUSY;
		return -1;
	}
	if (!b)
		return 0;
	tally_batch_set_source(b, f->name, f->interval);
	emit_jobid(b);
	tally_batch_seal(b);
	f->records_out += tally_batch_count(b);
	if (tally_batch_count(b))
		pipe_run(f->pipe, f->pos + 1, b);
	else
		tally_batch_unref(b);
	return 0;
}

int tally_emit(struct tally_instance *inst, struct tally_batch *b)
{
	if (inst && inst->plugin && inst->plugin->kind == TALLY_KIND_FILTER &&
	    inst->pipe)
		return filter_emit(inst, b);
	if (!inst || !inst->plugin || inst->plugin->kind != TALLY_KIND_INPUT) {
		tally_batch_unref(b);
		errno = EINVAL;
		return -1;
	}
	if (!b)
		return 0;
	/* an event-driven input has no interval to derive expiry from */
	tally_batch_set_source(b, inst->name,
			       inst->plugin->input->read ? inst->interval : 0);
	emit_jobid(b);
	tally_batch_seal(b);
	inst->records_out += tally_batch_count(b);
	if (tally_batch_count(b))
		for (size_t i = 0; i < inst->npipes; i++)
			pipe_run(inst->pipes[i], 0, tally_batch_ref(b));
	tally_batch_unref(b);
	return 0;
}

/* Filter ticks */

void tally_filter_tick_once(struct tally_instance *f)
{
	struct tally_batch *b = tally_batch_new();

	if (!b) {
		tally_count_drop(f, "nomem", 1);
		return;
	}
	tally_batch_set_source(b, f->name, f->interval);
	f->in_op = true;
	if (f->plugin->filter->tick(f, f->state, b) < 0)
		tally_log(f, LOG_WARNING, "tick failed: %s", strerror(errno));
	f->in_op = false;
	emit_jobid(b);
	tally_batch_seal(b);
	f->records_out += tally_batch_count(b);
	pipe_run(f->pipe, f->pos + 1, b);
}

/*
 * Going from the mark, not from now, matters: a timer may fire a little
 * before its mark, and "the next multiple after now" would then be that
 * same mark again, a second tick a millisecond later.
 */
double tally_next_mark(double interval, double mark, double now)
{
	double next = mark + interval;

	/* first tick, a clock step, or a tick missed (loop stalled, suspend) */
	if (mark == 0 || next <= now || next > now + 2 * interval)
		next = (floor(now / interval) + 1) * interval;
	return next;
}

/* Delay until the next mark after *@mark, which is updated. */
struct timeval tally_next_aligned(double interval, double *mark)
{
	double now = (double)tally_now_ns() / 1e9;

	*mark = tally_next_mark(interval, *mark, now);
	return tally_timeval(*mark - now);
}

static void filter_tick(evutil_socket_t fd, short what, void *arg)
{
	struct tally_instance *f = arg;
	struct timeval tv = tally_next_aligned(f->interval, &f->mark);

	tally_filter_tick_once(f);
	evtimer_add(f->timer, &tv);
}

int tally_filter_start(struct tally_instance *f)
{
	struct timeval tv;

	if (!f->plugin->filter->tick || f->core->once)
		return 0;
	f->timer = evtimer_new(f->core->base, filter_tick, f);
	if (!f->timer)
		return -1;
	tv = tally_next_aligned(f->interval, &f->mark);
	evtimer_add(f->timer, &tv);
	return 0;
}
