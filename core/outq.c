/* SPDX-License-Identifier: MIT */
/*
 * core/outq.c - output queues: what waits for an output, and its delivery
 *
 * Each output has a ring of batches (shared by reference with the other
 * outputs of the pipeline), written by a deferred event at the highest
 * priority, so a slow output only fills its own queue and never delays
 * an input or another output. A write that says EAGAIN is retried with a
 * capped backoff, or as soon as the output calls tally_output_ready().
 * Loop thread only.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <event2/event.h>

#include "core-internal.h"

#define RETRY_MIN	0.1	/* seconds, first retry of a busy output */
#define RETRY_MAX	5.0	/* seconds, retry backoff cap */

static void outq_schedule(struct tally_instance *o)
{
	if (o->q.len && !o->q.busy)
		event_active(o->q.deliver, 0, 0);
}

static void outq_deliver(evutil_socket_t fd, short what, void *arg);

size_t tally_outq_records(const struct tally_instance *o)
{
	return o->q.records;
}

/* Whether @q has no room for @n more records in one more batch. */
static bool outq_full(const struct tally_outq *q, size_t n)
{
	return q->len == q->cap || q->records + n > q->max_records;
}

/*
 * Bounded twice: in batches (queue_size) and in records (queue_records),
 * since one batch holds one record or 100k. Past either bound the oldest
 * batches go, counted, until the new one fits; a lone batch larger than
 * queue_records is still taken, or that input could never deliver.
 */
void tally_outq_push(struct tally_instance *o, struct tally_batch *b)
{
	struct tally_outq *q = &o->q;
	size_t n = tally_batch_count(b);

	/* --once reads every input before the loop runs: write as we go */
	if (q->len && outq_full(q, n) && !q->busy && o->core->once)
		outq_deliver(-1, 0, o);
	while (q->len && outq_full(q, n)) {
		/* full: the oldest data is the least useful, drop it */
		struct tally_batch *old = q->ring[q->head];
		size_t on = tally_batch_count(old);

		tally_count_drop(o, "queue_full", on);
		if (q->len == q->cap)
			tally_log(o, LOG_WARNING,
				  "queue full (%zu batches): dropping the "
				  "oldest",
				  q->cap);
		else
			tally_log(o, LOG_WARNING,
				  "queue full (%zu of %zu records): dropping "
				  "the oldest batch, %zu records",
				  q->records, q->max_records, on);
		tally_batch_unref(old);
		q->head = (q->head + 1) % q->cap;
		q->len--;
		q->records -= on;
	}
	q->ring[(q->head + q->len) % q->cap] = b;
	q->len++;
	q->records += n;
	outq_schedule(o);
}

static void outq_deliver(evutil_socket_t fd, short what, void *arg)
{
	struct tally_instance *o = arg;
	struct tally_outq *q = &o->q;
	size_t budget = 64;	/* yield to the loop between bursts */

	while (q->len && !q->busy && budget--) {
		struct tally_batch *b = q->ring[q->head];
		size_t n = tally_batch_count(b);
		int r;

		errno = 0;
		r = o->plugin->output->write(o, o->state, b);
		if (r < 0 && errno == EAGAIN) {
			struct timeval tv = tally_timeval(q->backoff);

			q->busy = true;
			evtimer_add(q->retry, &tv);
			q->backoff = fmin(q->backoff * 2, RETRY_MAX);
			return;
		}
		q->ring[q->head] = NULL;
		q->head = (q->head + 1) % q->cap;
		q->len--;
		q->records -= n;
		if (r < 0) {
			tally_count_drop(o, "write_error", n);
			tally_log(o, LOG_WARNING,
				  "write failed, %zu records dropped: %s", n,
				  strerror(errno));
		} else {
			o->records_out += n;
		}
		q->backoff = RETRY_MIN;
		tally_batch_unref(b);
	}
	outq_schedule(o);
}

static void outq_retry(evutil_socket_t fd, short what, void *arg)
{
	struct tally_instance *o = arg;

	o->q.busy = false;
	outq_schedule(o);
}

void tally_output_ready(struct tally_instance *inst)
{
	if (inst->plugin->kind != TALLY_KIND_OUTPUT)
		return;
	evtimer_del(inst->q.retry);
	inst->q.busy = false;
	inst->q.backoff = RETRY_MIN;
	outq_schedule(inst);
}

void tally_output_held(struct tally_instance *inst, size_t records)
{
	if (inst->plugin->kind == TALLY_KIND_OUTPUT)
		inst->q.held = records;
}

int tally_output_hold(struct tally_instance *inst, struct tally_batch *b,
		      size_t units)
{
	struct tally_outq *q = &inst->q;

	if (q->nhold == q->hold_cap) {
		size_t cap;
		struct tally_outq_hold *v;

		/* compact what was released before growing */
		if (q->hold_head) {
			memmove(q->hold, q->hold + q->hold_head,
				(q->nhold - q->hold_head) * sizeof(*q->hold));
			q->nhold -= q->hold_head;
			q->hold_head = 0;
		}
		if (q->nhold == q->hold_cap) {
			cap = q->hold_cap ? q->hold_cap * 2 : 16;
			v = realloc(q->hold, cap * sizeof(*v));
			if (!v) {
				errno = ENOMEM;
				return -1;
			}
			q->hold = v;
			q->hold_cap = cap;
		}
	}
	q->hold[q->nhold++] = (struct tally_outq_hold){
		.b = tally_batch_ref(b), .left = units ? units : 1 };
	return 0;
}

void tally_output_release(struct tally_instance *inst, size_t units)
{
	struct tally_outq *q = &inst->q;

	while (units && q->hold_head < q->nhold) {
		struct tally_outq_hold *h = &q->hold[q->hold_head];
		size_t n = units < h->left ? units : h->left;

		h->left -= n;
		units -= n;
		if (h->left)
			break;
		tally_batch_unref(h->b);
		h->b = NULL;
		q->hold_head++;
	}
	if (q->hold_head == q->nhold)
		q->hold_head = q->nhold = 0;
}

bool tally_output_handed_over(const struct tally_instance *inst)
{
	return inst->q.handed_over;
}

bool tally_output_loss_logged(const struct tally_instance *inst)
{
	return inst->q.loss_logged;
}

size_t tally_outq_take_held(struct tally_instance *o,
			    struct tally_batch **out)
{
	struct tally_outq *q = &o->q;
	size_t n = 0;

	for (size_t i = q->hold_head; i < q->nhold; i++) {
		if (out) {
			out[n++] = q->hold[i].b;
			continue;
		}
		n += tally_batch_count(q->hold[i].b);
		tally_batch_unref(q->hold[i].b);
	}
	q->hold_head = q->nhold = 0;
	q->handed_over = true;
	return n;
}

size_t tally_outq_held_batches(const struct tally_instance *o)
{
	return o->q.nhold - o->q.hold_head;
}

int tally_outq_init(struct tally_instance *o, size_t cap, size_t max_records)
{
	struct event_base *base = o->core->base;
	struct tally_outq *q = &o->q;

	q->cap = cap;
	q->max_records = max_records;
	q->backoff = RETRY_MIN;
	q->ring = calloc(cap, sizeof(*q->ring));
	q->deliver = event_new(base, -1, 0, outq_deliver, o);
	if (q->deliver)
		event_priority_set(q->deliver, TALLY_PRIO_OUTPUT);
	q->retry = evtimer_new(base, outq_retry, o);
	if (!q->ring || !q->deliver || !q->retry) {
		tally_outq_free(o);
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

void tally_outq_free(struct tally_instance *o)
{
	struct tally_outq *q = &o->q;

	for (size_t k = 0; k < q->len; k++)
		tally_batch_unref(q->ring[(q->head + k) % q->cap]);
	free(q->ring);
	for (size_t k = q->hold_head; k < q->nhold; k++)
		tally_batch_unref(q->hold[k].b);
	free(q->hold);
	if (q->deliver)
		event_free(q->deliver);
	if (q->retry)
		event_free(q->retry);
	*q = (struct tally_outq){ 0 };
}
