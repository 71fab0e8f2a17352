/* SPDX-License-Identifier: MIT */
/*
 * core/net-drain.c - read a source in capped drains, then yield; coalesce
 * the wake-ups of a trickle (tally/net.h, struct tally_net_drain)
 *
 *   WAITING  --fd readable-->  drain
 *   drain: ops->drain(max), then
 *     - cap reached:   YIELD, a 0 s timer: the loop runs timers, scrapes
 *                      and other fds before the next drain;
 *     - some items:    COOLDOWN, a min_interval timer with the fd not
 *                      watched: a trickle costs one wake-up per interval,
 *                      not one per item (the timer is a timerfd: libevent
 *                      2.1's timers follow CLOCK_MONOTONIC_COARSE, 4 ms
 *                      ticks on HZ=250 kernels, and a 5 ms evtimer took 2
 *                      to 3 epoll wake-ups to expire);
 *     - none:          WAITING again, unless ops->pending() says more may
 *                      be there (libzmq's ZMQ_FD must not be slept on
 *                      unless ZMQ_EVENTS, called last, said "nothing").
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <event2/event.h>

#include <tally/log.h>

#include "net-internal.h"

enum drain_phase {
	DRAIN_IDLE,	/* not started, or stopped */
	DRAIN_WAITING,	/* fd watched */
	DRAIN_YIELD,	/* 0 s timer */
	DRAIN_COOLDOWN, /* timerfd armed */
};

struct tally_net_drain {
	struct tally_instance *inst;
	const struct tally_net_drain_ops *ops;
	void *arg;
	unsigned max;
	bool coalesce;
	struct itimerspec cooldown;
	int cool_fd;
	struct event *fd_ev;
	struct event *yield_ev;
	struct event *cool_ev;
	enum drain_phase phase;
	struct tally_net_drain_stats st;
};

static const struct timeval drain_now = { 0, 0 };

static void drain_run(struct tally_net_drain *d)
{
	unsigned n = d->ops->drain(d->arg, d->max);

	d->st.drains++;
	d->st.items += n;
	tally_count_event(d->inst, "drains", 1);
	if (n >= d->max) {
		/*
		 * More may be queued: drain again, but only after the loop
		 * had its turn, so a flood cannot starve timers or scrapes.
		 */
		d->st.capped++;
		d->phase = DRAIN_YIELD;
		evtimer_add(d->yield_ev, &drain_now);
	} else if (n || (d->ops->pending && d->ops->pending(d->arg))) {
		d->phase = DRAIN_COOLDOWN;
		if (!d->coalesce ||
		    timerfd_settime(d->cool_fd, 0, &d->cooldown, NULL) < 0) {
			d->phase = DRAIN_YIELD;
			evtimer_add(d->yield_ev, &drain_now);
		}
	} else {
		d->phase = DRAIN_WAITING;
		event_add(d->fd_ev, NULL);
	}
}

static void drain_on_fd(evutil_socket_t fd, short what, void *arg)
{
	struct tally_net_drain *d = arg;

	event_del(d->fd_ev);
	d->st.wakeups++;
	tally_count_event(d->inst, "wakeups", 1);
	drain_run(d);
}

/* A yield: a loop turn, not a sleep. */
static void drain_on_yield(evutil_socket_t fd, short what, void *arg)
{
	drain_run(arg);
}

static void drain_on_cooldown(evutil_socket_t fd, short what, void *arg)
{
	struct tally_net_drain *d = arg;
	uint64_t expirations;

	if (read(d->cool_fd, &expirations, sizeof(expirations)) < 0)
		return; /* EAGAIN: disarmed meanwhile (stop) */
	d->st.wakeups++;
	tally_count_event(d->inst, "wakeups", 1);
	drain_run(d);
}

struct tally_net_drain *
tally_net_drain_new(struct tally_instance *inst, struct event_base *base,
		    int fd, unsigned max, double min_interval,
		    const struct tally_net_drain_ops *ops, void *arg)
{
	struct tally_net_drain *d;
	int err;

	if (!max || !ops || !ops->drain || min_interval < 0) {
		errno = EINVAL;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	d->cool_fd = -1;
	d->inst = inst;
	d->ops = ops;
	d->arg = arg;
	d->max = max;
	d->coalesce = min_interval > 0;
	d->cooldown.it_value.tv_sec = (time_t)min_interval;
	d->cooldown.it_value.tv_nsec =
		(long)((min_interval - (double)d->cooldown.it_value.tv_sec) *
		       1e9);
	if (d->coalesce && !d->cooldown.it_value.tv_sec &&
	    !d->cooldown.it_value.tv_nsec)
		d->cooldown.it_value.tv_nsec = 1; /* 0 would disarm it */
	d->cool_fd =
		timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (d->cool_fd < 0)
		goto out_err;
	d->fd_ev = event_new(base, fd, EV_READ | EV_PERSIST, drain_on_fd, d);
	d->yield_ev = evtimer_new(base, drain_on_yield, d);
	d->cool_ev = event_new(base, d->cool_fd, EV_READ | EV_PERSIST,
			       drain_on_cooldown, d);
	if (!d->fd_ev || !d->yield_ev || !d->cool_ev) {
		errno = ENOMEM;
		goto out_err;
	}
	return d;

out_err:
	err = errno;
	tally_net_drain_free(d);
	errno = err;
	return NULL;
}

int tally_net_drain_start(struct tally_net_drain *d)
{
	if (d->phase != DRAIN_IDLE)
		return 0;
	if (event_add(d->cool_ev, NULL) < 0)
		return -1;
	/* whatever queued before start is read by the first drain */
	d->phase = DRAIN_YIELD;
	return evtimer_add(d->yield_ev, &drain_now);
}

void tally_net_drain_stop(struct tally_net_drain *d)
{
	static const struct itimerspec off;

	if (d->fd_ev)
		event_del(d->fd_ev);
	if (d->yield_ev)
		event_del(d->yield_ev);
	if (d->cool_ev)
		event_del(d->cool_ev);
	if (d->cool_fd >= 0)
		timerfd_settime(d->cool_fd, 0, &off, NULL);
	d->phase = DRAIN_IDLE;
}

void tally_net_drain_get_stats(const struct tally_net_drain *d,
			       struct tally_net_drain_stats *out)
{
	*out = d->st;
}

void tally_net_drain_free(struct tally_net_drain *d)
{
	if (!d)
		return;
	tally_net_drain_stop(d);
	if (d->fd_ev)
		event_free(d->fd_ev);
	if (d->yield_ev)
		event_free(d->yield_ev);
	if (d->cool_ev)
		event_free(d->cool_ev);
	if (d->cool_fd >= 0)
		close(d->cool_fd);
	free(d);
}
