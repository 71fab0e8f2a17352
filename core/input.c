/* SPDX-License-Identifier: MIT */
/*
 * core/input.c - inputs: periodic reads on wall-clock marks, blocking
 * reads on a worker thread of their own, and giving freed heap back
 *
 * Everything here runs on the loop thread except the body of a blocking
 * input's read, on its worker thread, which hands its batch back through
 * an event (libevent is set up for pthreads, so event_active() from the
 * worker is safe).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <pthread.h>

#include <event2/event.h>

#include "core-internal.h"

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
	struct timeval tv = tally_next_aligned(in->interval, &in->mark);

	evtimer_add(in->timer, &tv);
	core_trim_heap();
	tally_input_read_now(in);
}

int tally_input_start(struct tally_instance *inst)
{
	struct tally_core *core = inst->core;
	const struct tally_plugin *p = inst->plugin;
	struct timeval tv;

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
	tv = tally_timeval(0);
	evtimer_add(inst->timer, &tv);
	return 0;
}
