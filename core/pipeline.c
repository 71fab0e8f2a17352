/* SPDX-License-Identifier: MIT */
/*
 * core/pipeline.c - the running graph: instances, pipelines, output queues
 *
 * Everything here runs on the event loop thread except the bodies of
 * blocking inputs' reads, which run on one worker thread per such input
 * and hand their batch back through an event (libevent is set up for
 * pthreads, so event_active() from the worker is safe).
 *
 * Data flow: an input's batch enters each pipeline that names the input.
 * The pipeline's own filter instances run in order; what comes out is
 * pushed, shared by reference, onto the queue of each output. Outputs are
 * written from their queue by a deferred event, so a slow output only
 * fills its own queue (bounded; the oldest batch is dropped and counted)
 * and never delays an input or another output.
 */
#include "config.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include <tally/stats.h>

#include "core-internal.h"

#define RETRY_MIN	0.1	/* seconds, first retry of a busy output */
#define RETRY_MAX	5.0	/* seconds, retry backoff cap */
#define CORE_PRIO_OUTPUT	0	/* output deliveries */
#define CORE_PRIO_DEFAULT	1	/* everything else (libevent: n / 2) */
#define CORE_DISPATCH_BURST	16	/* callbacks between looks for them */

static struct tally_core *current_core;

struct tally_core *tally_core_current(void)
{
	return current_core;
}

/* Accessors of the public instance handle (tally/plugin.h). */

const char *tally_instance_name(const struct tally_instance *inst)
{
	return inst->name;
}

const char *tally_instance_plugin(const struct tally_instance *inst)
{
	return inst->plugin ? inst->plugin->name : "core";
}

double tally_instance_interval(const struct tally_instance *inst)
{
	return inst->interval;
}

struct event_base *tally_instance_base(const struct tally_instance *inst)
{
	return inst->core ? inst->core->base : NULL;
}

struct tally_labels *tally_output_labels(const struct tally_instance *inst)
{
	return inst->static_labels ? inst->static_labels : tally_labels_empty();
}

/* global.labels, the output's labels and its host label, composed once */
static int output_labels_init(struct tally_instance *o,
			      const struct tally_conf *conf,
			      const struct tally_conf_decl *d)
{
	const char *key = o->plugin->output->host_label;
	char host[256] = "";

	if (key && gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "localhost");
	o->static_labels =
		tally_static_labels(conf->labels, d->labels, key, host);
	return o->static_labels ? 0 : -1;
}

static struct timeval tv_of(double s)
{
	struct timeval tv;

	if (s < 0)
		s = 0;
	tv.tv_sec = (time_t)s;
	tv.tv_usec = (suseconds_t)((s - (double)tv.tv_sec) * 1e6);
	return tv;
}

/* Output queues */

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
			struct timeval tv = tv_of(q->backoff);

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

/* Pipelines */

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
		  "which this output does not take: put an aggregate filter in "
		  "front of it",
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
	if (tally_user_mode() && tally_jobid())
		emit_add_jobid(b, tally_jobid());
	tally_batch_seal(b);
	inst->records_out += tally_batch_count(b);
	if (tally_batch_count(b))
		for (size_t i = 0; i < inst->npipes; i++)
			pipe_run(inst->pipes[i], 0, tally_batch_ref(b));
	tally_batch_unref(b);
	return 0;
}

/* Filter ticks */

static void filter_tick_once(struct tally_instance *f)
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
static struct timeval next_aligned(double interval, double *mark)
{
	double now = (double)tally_now_ns() / 1e9;

	*mark = tally_next_mark(interval, *mark, now);
	return tv_of(*mark - now);
}

static void filter_tick(evutil_socket_t fd, short what, void *arg)
{
	struct tally_instance *f = arg;
	struct timeval tv = next_aligned(f->interval, &f->mark);

	filter_tick_once(f);
	evtimer_add(f->timer, &tv);
}

/* Inputs */

static void input_read_once(struct tally_instance *in)
{
	struct tally_batch *b = tally_batch_new();
	int64_t t0 = tally_monotonic_ns();

	if (!b) {
		tally_count_drop(in, "nomem", 1);
		return;
	}
	if (in->plugin->input->read(in, in->state, b) < 0)
		tally_log(in, LOG_WARNING, "read failed: %s", strerror(errno));
	in->reads++;
	in->read_ns += (uint64_t)(tally_monotonic_ns() - t0);
	tally_emit(in, b);
}

static void *input_worker(void *arg)
{
	struct tally_instance *in = arg;

	pthread_mutex_lock(&in->wlock);
	for (;;) {
		struct tally_batch *b;
		int64_t t0;

		while (!in->wgo && !in->wstop)
			pthread_cond_wait(&in->wcond, &in->wlock);
		if (in->wstop)
			break;
		in->wgo = false;
		pthread_mutex_unlock(&in->wlock);

		t0 = tally_monotonic_ns();
		b = tally_batch_new();
		if (b && in->plugin->input->read(in, in->state, b) < 0)
			tally_log(in, LOG_WARNING, "read failed: %s",
				  strerror(errno));

		pthread_mutex_lock(&in->wlock);
		in->reads++;
		in->read_ns += (uint64_t)(tally_monotonic_ns() - t0);
		in->wresult = b;
		event_active(in->wdone, 0, 0);
	}
	pthread_mutex_unlock(&in->wlock);
	return NULL;
}

static void input_worker_done(evutil_socket_t fd, short what, void *arg)
{
	struct tally_instance *in = arg;
	struct tally_batch *b;

	pthread_mutex_lock(&in->wlock);
	b = in->wresult;
	in->wresult = NULL;
	in->wbusy = false;
	pthread_mutex_unlock(&in->wlock);
	if (in->retired) {
		/* replaced by a reload while this read ran: free it now */
		struct tally_core *core = in->core;

		tally_batch_unref(b);
		for (size_t i = 0; i < core->nzombies; i++) {
			if (core->zombies[i] == in)
				core->zombies[i] =
					core->zombies[--core->nzombies];
		}
		in->retired = false;
		tally_inst_free(in);
		return;
	}
	if (b && !in->core->stopping)
		tally_emit(in, b);
	else
		tally_batch_unref(b);
}

/*
 * A burst (a flood of trace events, a 100k-series scrape) leaves freed
 * memory in malloc's arenas, libzmq's I/O thread's included, and a node
 * collector's resident size is part of its budget. Give it back to the
 * kernel on a tick that is running anyway, when there is enough of it.
 */
#define TRIM_THRESHOLD	(512u << 10)
#define TRIM_PERIOD_NS	1000000000	/* at most one look a second */

/*
 * malloc_trim() gives the pages inside free chunks back with madvise(),
 * but the chunks stay free: fordblks does not go down. Comparing it with
 * the threshold alone retrimmed the same pages on every tick once the heap
 * was fragmented, and both mallinfo2() and malloc_trim() walk the whole
 * heap: with 3000 inputs ticking at one mark that was 3000 walks and a
 * storm of madvise() each interval, the loop's whole time. So only what was
 * freed since the last trim counts, and the heap is looked at once per
 * burst of ticks, not once per input.
 */
void tally_heap_trim_tick(struct tally_heap_trim *t,
			  const struct tally_heap_ops *ops, int64_t now_ns)
{
	size_t free_bytes;

	if (t->last_ns && now_ns - t->last_ns < TRIM_PERIOD_NS)
		return;
	t->last_ns = now_ns;
	free_bytes = ops->free_bytes();
	/* reused free memory is dirty again once freed: count it anew */
	if (free_bytes < t->base)
		t->base = free_bytes;
	if (free_bytes - t->base <= TRIM_THRESHOLD)
		return;
	ops->trim();
	t->base = ops->free_bytes();
}

static size_t heap_free_bytes(void)
{
	return mallinfo2().fordblks;
}

static void heap_trim(void)
{
	malloc_trim(0);
}

static const struct tally_heap_ops heap_ops = {
	.free_bytes = heap_free_bytes,
	.trim = heap_trim,
};

/* the heap is the process's: one state, whatever the number of cores */
static struct tally_heap_trim heap_trim_state;

static void core_trim_heap(void)
{
	tally_heap_trim_tick(&heap_trim_state, &heap_ops,
			     tally_monotonic_ns());
}

void tally_input_read_now(struct tally_instance *in)
{
	if (!(in->plugin->input->flags & TALLY_INPUT_BLOCKING)) {
		input_read_once(in);
		return;
	}
	pthread_mutex_lock(&in->wlock);
	if (in->wbusy) {
		/* never queue reads behind a stuck one: skip this tick */
		pthread_mutex_unlock(&in->wlock);
		tally_count_drop(in, "read_overrun", 1);
		tally_log(in, LOG_WARNING,
			  "read still running after %.3g s: tick skipped",
			  in->interval);
		return;
	}
	in->wbusy = true;
	in->wgo = true;
	pthread_cond_signal(&in->wcond);
	pthread_mutex_unlock(&in->wlock);
}

static void input_tick(evutil_socket_t fd, short what, void *arg)
{
	struct tally_instance *in = arg;
	struct timeval tv = next_aligned(in->interval, &in->mark);

	evtimer_add(in->timer, &tv);
	core_trim_heap();
	tally_input_read_now(in);
}

/* Plugin @p's operation @op (check, init, fini), whatever its kind. */
#define PLUGIN_OP(p, op)                                            \
	((p)->kind == TALLY_KIND_INPUT	  ? (p)->input->op  \
	 : (p)->kind == TALLY_KIND_FILTER ? (p)->filter->op \
					  : (p)->output->op)

int tally_instance_set_emits(struct tally_instance *inst, unsigned forms)
{
	if (!inst || !inst->plugin || inst->plugin->kind != TALLY_KIND_INPUT ||
	    (forms & ~inst->plugin->input->emits)) {
		errno = EINVAL;
		return -1;
	}
	if (inst->decl)
		inst->decl->emits = forms;
	return 0;
}

static int inst_check(struct tally_instance *inst)
{
	int (*check)(struct tally_instance *, void *) =
		PLUGIN_OP(inst->plugin, check);

	return check ? check(inst, inst->state) : 0;
}

/* Instances */

/*
 * What every instance has, running or only checked: name, @label for its
 * log lines, interval, where it is declared, and its plugin state with
 * the options filled in. NULL with errno EINVAL (options refused: logged,
 * *@problems counts them) or ENOMEM.
 */
static struct tally_instance *inst_alloc(struct tally_core *core,
					 struct tally_conf *conf,
					 struct tally_conf_decl *d,
					 const char *label,
					 unsigned *problems)
{
	struct tally_instance *inst = calloc(1, sizeof(*inst));

	if (!inst)
		return NULL;
	inst->plugin = d->plugin;
	inst->core = core;
	inst->decl = d;
	inst->name = strdup(d->name);
	inst->label = strdup(label);
	inst->state = calloc(1, d->plugin->state_size ? d->plugin->state_size
						      : 1);
	pthread_mutex_init(&inst->stat_lock, NULL);
	if (!inst->name || !inst->label || !inst->state)
		goto out_free;
	inst->interval = d->interval > 0 ? d->interval : conf->interval;
	inst->cfile = d->file;
	inst->cline = d->line;
	*problems = tally_options_fill(d, inst->state);
	if (*problems) {
		tally_inst_free(inst);
		errno = EINVAL;
		return NULL;
	}
	return inst;
out_free:
	tally_inst_free(inst);
	errno = ENOMEM;
	return NULL;
}

int tally_inst_check(struct tally_conf *conf, struct tally_conf_decl *d,
		     unsigned *problems)
{
	struct tally_instance *inst;
	char label[256];
	int ret;

	/* named as the configuration names it: "inputs.host" */
	snprintf(label, sizeof(label), "%s.%s", tally_kind_section(d->kind),
		 d->name);
	*problems = 0;
	inst = inst_alloc(NULL, conf, d, label, problems);
	if (!inst)
		return -1;
	/* what check logs carries the file:line */
	inst->setup = true;
	ret = inst_check(inst);
	/* what it binds, for the clash check across instances */
	tally_conf_binds_add(conf, d, label, inst->state);
	tally_inst_free(inst);
	if (ret < 0) {
		*problems = 1;
		errno = EINVAL;
	}
	return ret < 0 ? -1 : 0;
}

struct tally_instance *tally_inst_new(struct tally_core *core,
				      struct tally_conf *conf,
				      struct tally_conf_decl *d,
				      const char *pipe_name)
{
	struct tally_instance *inst;
	unsigned problems;
	char label[256];

	if (pipe_name)
		snprintf(label, sizeof(label), "%s[%s@%s]", d->plugin->name,
			 d->name, pipe_name);
	else
		snprintf(label, sizeof(label), "%s[%s]", d->plugin->name,
			 d->name);
	inst = inst_alloc(core, conf, d, label, &problems);
	if (!inst)
		return NULL;
	inst->generation = core->generation;
	if (d->kind == TALLY_KIND_OUTPUT) {
		inst->q.cap = (size_t)d->queue_size;
		inst->q.max_records = (size_t)d->queue_records;
		inst->q.ring = calloc(inst->q.cap, sizeof(*inst->q.ring));
		inst->q.backoff = RETRY_MIN;
		inst->q.deliver = event_new(core->base, -1, 0, outq_deliver,
					    inst);
		if (inst->q.deliver)
			event_priority_set(inst->q.deliver, CORE_PRIO_OUTPUT);
		inst->q.retry = evtimer_new(core->base, outq_retry, inst);
		if (!inst->q.ring || !inst->q.deliver || !inst->q.retry ||
		    output_labels_init(inst, conf, d) < 0)
			goto out_free;
	}
	return inst;
out_free:
	tally_inst_free(inst);
	errno = ENOMEM;
	return NULL;
}

/*
 * libevent logs some errors itself ("Error from accept() call: Too many
 * open files"), as fast as they happen. Route them through tally_log, so
 * they reach syslog and are rate-limited like ours.
 */
static void core_event_log(int severity, const char *msg)
{
	int prio = severity >= EVENT_LOG_ERR	? LOG_ERR
		   : severity >= EVENT_LOG_WARN ? LOG_WARNING
		   : severity >= EVENT_LOG_MSG	? LOG_INFO
						: LOG_DEBUG;

	/* one throttle slot for all of libevent's lines: a constant format */
	tally_log(NULL, prio, "libevent: %s", msg);
}

struct tally_core *tally_core_new(struct tally_conf *conf, bool once)
{
	struct tally_core *core = calloc(1, sizeof(*core));
	struct event_config *cfg;

	if (!core) {
		errno = ENOMEM;
		return NULL;
	}
	core->conf = conf;
	core->once = once;
	core->core_inst.name = "tallyd";
	pthread_mutex_init(&core->core_inst.stat_lock, NULL);
	current_core = core;
	tally_log_set_core(&core->core_inst);
	if (evthread_use_pthreads() < 0)
		goto out_free;
	event_set_log_callback(core_event_log);
	/*
	 * Precise timers: libevent's default monotonic clock is the coarse
	 * one (4 ms here), which turns a 5 ms coalescing delay into two or
	 * three wake-ups, the very noise coalescing is there to avoid.
	 */
	cfg = event_config_new();
	if (!cfg)
		goto out_free;
	event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
	/*
	 * Output deliveries run at a higher priority than everything else,
	 * and the loop looks for them after every few other callbacks: when
	 * a thousand inputs tick on the same mark, their batches must reach
	 * the outputs between the ticks, not overflow the queues while all
	 * the ticks run first.
	 */
	event_config_set_max_dispatch_interval(cfg, NULL, CORE_DISPATCH_BURST,
					       CORE_PRIO_DEFAULT);
	core->base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	if (!core->base || event_base_priority_init(core->base, 2) < 0)
		goto out_free;
	if (tally_graph_build(core) < 0) {
		tally_log(NULL, LOG_ERR, "cannot build pipelines: %s",
			  strerror(errno));
		goto out_free;
	}
	return core;
out_free:
	tally_core_free(core);
	errno = ENOMEM;
	return NULL;
}

/* Shutdown: stop inputs, drain filters, flush outputs within a deadline. */

static bool queues_empty(struct tally_core *core)
{
	for (size_t i = 0; i < core->ninsts; i++) {
		struct tally_instance *o = core->insts[i];

		if (o->plugin->kind == TALLY_KIND_OUTPUT && o->q.len)
			return false;
	}
	return true;
}

/* Every output's end op (tally/plugin.h), failures logged. */
static void core_outputs_end(struct tally_core *core, enum tally_end why)
{
	for (size_t i = 0; i < core->ninsts; i++) {
		struct tally_instance *o = core->insts[i];

		if (o->plugin->kind == TALLY_KIND_OUTPUT && o->initialized &&
		    o->plugin->output->end &&
		    o->plugin->output->end(o, o->state, why) < 0)
			tally_log(o, LOG_WARNING, "%s failed: %s",
				  why == TALLY_END_COMMAND
					  ? "writing the final files"
					  : "SIGUSR1: writing the files",
				  strerror(errno));
	}
}

/* SIGUSR1, once the batches queued before it are delivered. */
static void core_request(evutil_socket_t fd, short what, void *arg)
{
	core_outputs_end(arg, TALLY_END_REQUEST);
}

/* SIGHUP: outputs the reload kept (made before @gen) reopen their files. */
static void core_outputs_reopen(struct tally_core *core, unsigned gen)
{
	for (size_t i = 0; i < core->ninsts; i++) {
		struct tally_instance *o = core->insts[i];

		if (o->plugin->kind == TALLY_KIND_OUTPUT && o->initialized &&
		    o->generation < gen && o->plugin->output->reopen &&
		    o->plugin->output->reopen(o, o->state) < 0)
			tally_log(o, LOG_WARNING, "SIGHUP: reopen failed: %s",
				  strerror(errno));
	}
}

static void core_finish(struct tally_core *core)
{
	if (core->finished)
		return;
	core->finished = true;
	/* the wrapped command's end: final files, with everything it sent */
	if (core->child_exited)
		core_outputs_end(core, TALLY_END_COMMAND);
	for (size_t i = 0; i < core->ninsts; i++) {
		struct tally_instance *o = core->insts[i];

		if (o->plugin->kind == TALLY_KIND_OUTPUT && o->initialized &&
		    o->plugin->output->flush &&
		    o->plugin->output->flush(o, o->state) < 0)
			tally_log(o, LOG_WARNING, "flush failed: %s",
				  strerror(errno));
	}
	event_base_loopexit(core->base, NULL);
}

static void core_drain_check(evutil_socket_t fd, short what, void *arg)
{
	struct tally_core *core = arg;
	struct timeval tv = tv_of(0.01);

	if (core->finished)
		return;
	if (queues_empty(core)) {
		core_finish(core);
		return;
	}
	event_base_once(core->base, -1, EV_TIMEOUT, core_drain_check, core,
			&tv);
}

static void core_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct tally_core *core = arg;

	if (core->finished)
		return;

	for (size_t i = 0; i < core->ninsts; i++) {
		struct tally_instance *o = core->insts[i];

		if (o->plugin->kind == TALLY_KIND_OUTPUT && o->q.len) {
			tally_count_drop(o, "shutdown", o->q.records);
			tally_log(o, LOG_WARNING,
				  "shutdown deadline: %zu queued batches not "
				  "delivered",
				  o->q.len);
		}
	}
	core_finish(core);
}

void tally_inst_halt(struct tally_instance *inst)
{
	const struct tally_plugin *p = inst->plugin;

	if (inst->timer)
		evtimer_del(inst->timer);
	if (p->kind == TALLY_KIND_INPUT && inst->started) {
		inst->started = false;
		if (p->input->stop)
			p->input->stop(inst, inst->state);
	}
	/* a filter's last tick, so that aggregated data is not lost */
	if (p->kind == TALLY_KIND_FILTER && inst->initialized &&
	    p->filter->tick)
		filter_tick_once(inst);
}

void tally_core_stop(struct tally_core *core)
{
	struct timeval dl = tv_of(core->conf->shutdown_timeout);

	if (core->stopping)
		return;
	core->stopping = true;
	/* inputs first: what they still emit goes through the filters */
	for (int kind = TALLY_KIND_INPUT; kind <= TALLY_KIND_FILTER; kind++) {
		for (size_t i = 0; i < core->ninsts; i++) {
			if ((int)core->insts[i]->plugin->kind == kind)
				tally_inst_halt(core->insts[i]);
		}
	}
	core->deadline = evtimer_new(core->base, core_deadline, core);
	if (core->deadline)
		evtimer_add(core->deadline, &dl);
	core_drain_check(-1, 0, core);
}

/* The name of a signal core_signal() handles, for its log lines. */
static const char *core_sig_name(int sig)
{
	switch (sig) {
	case SIGTERM:
		return "SIGTERM";
	case SIGINT:
		return "SIGINT";
	case SIGQUIT:
		return "SIGQUIT";
	case SIGUSR1:
		return "SIGUSR1";
	case SIGUSR2:
		return "SIGUSR2";
	default:
		return "signal";
	}
}

static void core_signal(evutil_socket_t sig, short what, void *arg)
{
	struct tally_core *core = arg;
	int status;

	if (sig == SIGCHLD) {
		if (!core->child || waitpid(core->child, &status, WNOHANG) <= 0)
			return;
		core->child = 0;
		core->child_exited = true;
		core->child_status = WIFEXITED(status)
					     ? WEXITSTATUS(status)
					     : 128 + WTERMSIG(status);
		tally_log(NULL, LOG_INFO, "command exited with status %d: "
			  "stopping", core->child_status);
		tally_core_stop(core);
		return;
	}
	if (sig == SIGHUP) {
		/* instances made from now on need not reopen anything */
		unsigned gen = ++core->generation;

		if (core->stopping) {
			tally_log(NULL, LOG_INFO, "SIGHUP: ignored, stopping");
			return;
		}
		if (!core->conf_path) {
			tally_log(NULL, LOG_WARNING,
				  "SIGHUP: cannot reload: the configuration's "
				  "path could not be resolved at start");
			tally_count_event(NULL, "reload_failures", 1);
		} else {
			tally_log(NULL, LOG_INFO, "SIGHUP: reloading %s",
				  core->conf_path);
			tally_core_reload(core);
		}
		/* what goes on running reopens its files (logrotate) */
		core_outputs_reopen(core, gen);
		return;
	}
	if (core->child) {
		/*
		 * The job's command decides when the job ends: pass the signal
		 * on and stop when it exits (SIGCHLD), with its status.
		 */
		tally_log(NULL, LOG_INFO, "%s: passed on to the command",
			  core_sig_name((int)sig));
		kill(core->child, (int)sig);
		return;
	}
	if (sig == SIGUSR1) {
		tally_log(NULL, LOG_INFO,
			  "SIGUSR1: outputs write their files into %s",
			  tally_output_dir());
		event_active(core->request, 0, 0);
		return;
	}
	tally_log(NULL, LOG_INFO, "%s: stopping", core_sig_name((int)sig));
	tally_core_stop(core);
}

int tally_inst_init(struct tally_instance *inst)
{
	int (*init)(struct tally_instance *, void *) =
		PLUGIN_OP(inst->plugin, init);
	int ret = 0;

	/* set-up: what check and init log carries the file:line */
	inst->setup = true;
	if (inst_check(inst) < 0) {
		errno = EINVAL;
		ret = -1;
	} else if (init && init(inst, inst->state) < 0) {
		tally_log(inst, LOG_ERR, "init failed: %s", strerror(errno));
		ret = -1;
	}
	inst->setup = false;
	inst->initialized = ret == 0;
	return ret;
}

int tally_inst_start(struct tally_instance *inst)
{
	struct tally_core *core = inst->core;
	const struct tally_plugin *p = inst->plugin;
	struct timeval tv;

	if (p->kind == TALLY_KIND_FILTER && p->filter->tick && !core->once) {
		inst->timer = evtimer_new(core->base, filter_tick, inst);
		if (!inst->timer)
			return -1;
		tv = next_aligned(inst->interval, &inst->mark);
		evtimer_add(inst->timer, &tv);
	}
	if (p->kind != TALLY_KIND_INPUT)
		return 0;
	if (p->input->start && !core->once) {
		if (p->input->start(inst, inst->state, core->base) < 0) {
			tally_log(inst, LOG_ERR, "start failed: %s",
				  strerror(errno));
			return -1;
		}
		inst->started = true;
	}
	if (!p->input->read)
		return 0;
	if (core->once) {
		/* scripts and tests: one synchronous read each */
		input_read_once(inst);
		return 0;
	}
	if (p->input->flags & TALLY_INPUT_BLOCKING) {
		pthread_mutex_init(&inst->wlock, NULL);
		pthread_cond_init(&inst->wcond, NULL);
		inst->wdone = event_new(core->base, -1, 0, input_worker_done,
					inst);
		if (!inst->wdone ||
		    pthread_create(&inst->worker, NULL, input_worker, inst)) {
			errno = EAGAIN;
			return -1;
		}
		inst->worker_running = true;
	}
	inst->timer = evtimer_new(core->base, input_tick, inst);
	if (!inst->timer)
		return -1;
	/*
	 * The first read right away, then on wall-clock marks: a scrape just
	 * after start must not find an empty page for a whole interval.
	 */
	tv = tv_of(0);
	evtimer_add(inst->timer, &tv);
	return 0;
}

/*
 * --user -- CMD: the job's command runs even when part of its collector
 * does not (a port taken, a socket in use). What failed to start is left
 * out, said so on stderr whatever global.log says: outputs leave their
 * pipelines, and a pipeline that lost a filter is left out whole (records
 * must not skip a filter). The rest runs.
 */
static void core_leave_out(struct tally_core *core)
{
	size_t k = 0;

	for (size_t i = 0; i < core->npipes; i++) {
		struct tally_pipeline *p = &core->pipes[i];
		const char *lost = NULL;
		size_t no = 0;

		for (size_t j = 0; j < p->nfilters; j++) {
			if (p->filters[j]->left_out)
				lost = p->filters[j]->label;
		}
		if (lost) {
			tally_log_conf(LOG_WARNING, NULL, 0,
				       "pipeline %s left out: its filter %s "
				       "did not start",
				       p->name, lost);
			for (size_t j = 0; j < p->nfilters; j++)
				p->filters[j]->left_out = true;
			p->nfilters = 0;
			p->noutputs = 0;
			continue;
		}
		for (size_t j = 0; j < p->noutputs; j++) {
			if (!p->outputs[j]->left_out)
				p->outputs[no++] = p->outputs[j];
		}
		p->noutputs = no;
	}
	for (size_t i = 0; i < core->ninsts; i++) {
		struct tally_instance *inst = core->insts[i];

		if (!inst->left_out) {
			core->insts[k++] = inst;
			continue;
		}
		tally_log_conf(LOG_WARNING, inst->cfile, inst->cline,
			       "%s left out: the command runs without it",
			       inst->label);
		core->nleft_out++;
		tally_inst_free(inst);
	}
	core->ninsts = k;
	if (core->nleft_out)
		tally_count_event(NULL, "instances_left_out", core->nleft_out);
}

int tally_core_start(struct tally_core *core)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGCHLD,
				    SIGUSR1, SIGQUIT, SIGUSR2 };
	/* QUIT and USR2 only to pass on: a daemon keeps their defaults */
	size_t nsigs = core->wrapping ? 7 : 5;

	/* init everything first: a failure must not leave half a daemon */
	for (size_t i = 0; i < core->ninsts; i++) {
		if (tally_inst_init(core->insts[i]) < 0) {
			if (!core->wrapping)
				return -1;
			core->insts[i]->left_out = true;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < nsigs; i++) {
		core->sigs[i] = evsignal_new(core->base, sigs[i], core_signal,
					     core);
		if (!core->sigs[i] || evsignal_add(core->sigs[i], NULL) < 0)
			return -1;
	}
	core->request = event_new(core->base, -1, 0, core_request, core);
	if (!core->request)
		return -1;
	for (size_t i = 0; i < core->ninsts; i++) {
		struct tally_instance *inst = core->insts[i];

		if (inst->left_out || tally_inst_start(inst) == 0)
			continue;
		if (!core->wrapping)
			return -1;
		tally_inst_halt(inst);
		inst->left_out = true;
	}
	if (core->wrapping)
		core_leave_out(core);
	/* zeros from the start, so that rate() over them has a series */
	if (core->conf_path) {
		tally_count_event(NULL, "reloads", 0);
		tally_count_event(NULL, "reload_failures", 0);
	}
	if (core->once)
		tally_core_stop(core);
	return 0;
}

int tally_core_spawn(struct tally_core *core, char *const *argv)
{
	char **env = tally_mode_env();
	pid_t pid;

	if (!env)
		return -1;
	pid = fork();
	if (pid < 0) {
		tally_mode_env_free(env);
		return -1;
	}
	if (pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		environ = env;
		tally_fd_restore();
		execvp(argv[0], argv);
		fprintf(stderr, "tallyd: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	tally_mode_env_free(env);
	core->child = pid;
	return 0;
}

int tally_core_run(struct tally_core *core)
{
	return event_base_dispatch(core->base) < 0 ? -1 : 0;
}

void tally_inst_free(struct tally_instance *inst)
{
	const struct tally_plugin *p = inst->plugin;
	void (*fini)(struct tally_instance *, void *) = PLUGIN_OP(p, fini);

	if (inst->worker_running) {
		bool busy;

		pthread_mutex_lock(&inst->wlock);
		inst->wstop = true;
		busy = inst->wbusy;
		pthread_cond_signal(&inst->wcond);
		pthread_mutex_unlock(&inst->wlock);
		if (busy && !inst->core->stopping) {
			/*
			 * A reload replaced an input whose read is stuck (a
			 * hung NFS server): do not stall the loop on it; the
			 * read's completion frees it (input_worker_done).
			 */
			struct tally_core *core = inst->core;
			struct tally_instance **v;

			v = realloc(core->zombies,
				    (core->nzombies + 1) * sizeof(*v));
			if (v) {
				core->zombies = v;
				core->zombies[core->nzombies++] = inst;
				inst->retired = true;
				return;
			}
		}
		pthread_join(inst->worker, NULL);
		inst->worker_running = false;
		tally_batch_unref(inst->wresult);
	}
	if (inst->initialized && fini)
		fini(inst, inst->state);
	tally_mode_forget(inst);
	if (inst->timer)
		event_free(inst->timer);
	if (inst->wdone)
		event_free(inst->wdone);
	if (p->kind == TALLY_KIND_OUTPUT) {
		for (size_t k = 0; k < inst->q.len; k++)
			tally_batch_unref(
				inst->q.ring[(inst->q.head + k) % inst->q.cap]);
		free(inst->q.ring);
		if (inst->q.deliver)
			event_free(inst->q.deliver);
		if (inst->q.retry)
			event_free(inst->q.retry);
		tally_labels_unref(inst->static_labels);
	}
	if (inst->state)
		tally_options_free(p->options, inst->state);
	free(inst->state);
	free(inst->pipes);
	free(inst->label);
	free(inst->name);
	free(inst->keyed);
	pthread_mutex_destroy(&inst->stat_lock);
	free(inst);
}

void tally_core_free(struct tally_core *core)
{
	if (!core)
		return;
	/* at exit, joins wait for running reads (no zombies) */
	core->stopping = true;
	/* outputs last: inputs and filters may still hold their batches */
	for (int kind = TALLY_KIND_INPUT; kind <= TALLY_KIND_OUTPUT; kind++) {
		for (size_t i = 0; i < core->ninsts; i++) {
			if (core->insts[i] &&
			    (int)core->insts[i]->plugin->kind == kind) {
				tally_inst_free(core->insts[i]);
				core->insts[i] = NULL;
			}
		}
	}
	free(core->insts);
	while (core->nzombies) {
		struct tally_instance *z = core->zombies[--core->nzombies];

		z->retired = false;
		tally_inst_free(z);
	}
	free(core->zombies);
	for (size_t i = 0; i < core->npipes; i++) {
		free(core->pipes[i].filters);
		free(core->pipes[i].outputs);
	}
	free(core->pipes);
	for (size_t i = 0; i < 7; i++) {
		if (core->sigs[i])
			event_free(core->sigs[i]);
	}
	if (core->request)
		event_free(core->request);
	if (core->deadline)
		event_free(core->deadline);
	if (core->base)
		event_base_free(core->base);
	if (current_core == core) {
		current_core = NULL;
		tally_log_set_core(NULL);
	}
	free(core->core_inst.keyed);
	pthread_mutex_destroy(&core->core_inst.stat_lock);
	free(core);
}

/* Self-metrics (tally/stats.h) */

void tally_inst_stats(const struct tally_instance *inst,
		      struct tally_instance_stats *st)
{
	struct tally_instance *mut = (struct tally_instance *)inst;

	memset(st, 0, sizeof(*st));
	st->name = inst->name;
	st->plugin = inst->plugin ? inst->plugin->name : "core";
	st->kind = inst->plugin ? (int)inst->plugin->kind : 0;
	st->pipeline = inst->pipe ? inst->pipe->name : NULL;
	st->queue_len = inst->q.len;
	st->queue_cap = inst->q.cap;
	st->queue_records = inst->q.records;
	st->queue_records_cap = inst->q.max_records;
	pthread_mutex_lock(&mut->stat_lock);
	st->records_in = inst->records_in;
	st->records_out = inst->records_out;
	st->reads = inst->reads;
	st->read_seconds = (double)inst->read_ns / 1e9;
	st->ndrops = inst->ndrops;
	memcpy(st->drops, inst->drops, inst->ndrops * sizeof(st->drops[0]));
	st->nevents = inst->nevents;
	memcpy(st->events, inst->events,
	       inst->nevents * sizeof(st->events[0]));
	if (inst->keyed) {
		const struct tally_keyed_drops *kd = inst->keyed;

		for (size_t i = 0; i < kd->n; i++) {
			struct tally_stats_keyed_drop *k =
				&st->keyed[st->nkeyed++];

			k->reason = kd->e[i].reason;
			memcpy(k->key, kd->e[i].key, sizeof(k->key));
			k->n = kd->e[i].n;
		}
		for (size_t i = 0; i < kd->nother; i++) {
			struct tally_stats_keyed_drop *k =
				&st->keyed[st->nkeyed++];

			k->reason = kd->other[i].reason;
			strcpy(k->key, "other");
			k->n = kd->other[i].n;
		}
	}
	pthread_mutex_unlock(&mut->stat_lock);
}

int tally_stats_foreach(int (*cb)(const struct tally_instance_stats *st,
				  void *arg),
			void *arg)
{
	struct tally_core *core = current_core;
	struct tally_instance_stats st;
	int r;

	if (!core) {
		errno = ENODEV;
		return -1;
	}
	tally_inst_stats(&core->core_inst, &st);
	r = cb(&st, arg);
	for (size_t i = 0; i < core->ninsts && !r; i++) {
		tally_inst_stats(core->insts[i], &st);
		r = cb(&st, arg);
	}
	return r;
}
