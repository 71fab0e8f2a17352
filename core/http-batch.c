/* SPDX-License-Identifier: MIT */
/*
 * core/http-batch.c - batching for push outputs over the HTTP client
 * (tally/http.h): when a request goes, what becomes of its items
 *
 * The output keeps its pending items in its own form and says how many
 * it added; this keeps the count, the flush timer, the request in flight
 * and the core's output queue informed (EAGAIN when full, ready when not,
 * held for shutdown). Loop thread only.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include <tally/http.h>
#include <tally/log.h>
#include <tally/plugin.h>

struct tally_http_batch {
	struct tally_instance *inst;
	struct tally_http_client *http;
	const struct tally_http_batch_ops *ops;
	void *arg;
	char *method;
	char *path;
	struct tally_http_header *h;
	size_t nh;
	size_t batch_size;
	struct timeval flush_tv;
	char *unit;
	char *written;	 /* "<unit>_written" */
	size_t pending;	 /* items the output holds, not yet sent */
	size_t inflight; /* items of the request out */
	struct event *flush_ev;
	bool flush_due; /* the interval passed while a request ran */
	bool blocked;	/* room() said EAGAIN: call ready() later */
};

/* Tell the core what waits here, so that shutdown waits for it. */
static void batch_held(struct tally_http_batch *b)
{
	tally_output_held(b->inst, b->pending + b->inflight);
}

static void batch_done(void *arg, const struct tally_http_result *res);

/* Send the pending items, if any and if no request is out. */
static void batch_send(struct tally_http_batch *b)
{
	struct evbuffer *body;
	size_t n = b->pending;

	if (!n || tally_http_client_busy(b->http))
		return;
	event_del(b->flush_ev);
	b->flush_due = false;
	b->pending = 0;
	body = evbuffer_new();
	if (!body || b->ops->take(b->arg, body) < 0)
		goto out_drop;
	b->inflight = n;
	if (tally_http_client_request(b->http, b->method, b->path, b->h, b->nh,
				      body, batch_done, b) < 0) {
		b->inflight = 0;
		goto out_drop;
	}
	evbuffer_free(body);
	batch_held(b);
	return;

out_drop:
	if (body)
		evbuffer_free(body);
	tally_log(b->inst, LOG_ERR, "no memory for a request: %zu %s dropped",
		  n, b->unit);
	tally_count_drop(b->inst, "nomem", n);
	batch_held(b);
}

static void batch_done(void *arg, const struct tally_http_result *res)
{
	struct tally_http_batch *b = arg;
	size_t n = b->inflight;

	b->inflight = 0;
	switch (res->outcome) {
	case TALLY_HTTP_OK:
		tally_count_event(b->inst, b->written, n);
		break;
	case TALLY_HTTP_REJECTED:
		if (b->ops->rejected) {
			b->ops->rejected(b->arg, res, n);
			break;
		}
		tally_log(b->inst, LOG_ERR,
			  "write refused (HTTP %d): %s; %zu %s dropped, not "
			  "retried",
			  res->status, res->body, n, b->unit);
		tally_count_drop(b->inst, "rejected", n);
		break;
	case TALLY_HTTP_GAVE_UP:
		tally_log(b->inst, LOG_ERR,
			  "write failed %u times (%s): %zu %s dropped",
			  res->attempts, res->error, n, b->unit);
		tally_count_drop(b->inst, "gave_up", n);
		break;
	}
	if (b->pending >= b->batch_size || b->flush_due)
		batch_send(b);
	batch_held(b);
	if (b->blocked && b->pending < b->batch_size) {
		b->blocked = false;
		tally_output_ready(b->inst);
	}
}

static void batch_flush_timer(evutil_socket_t fd, short what, void *arg)
{
	struct tally_http_batch *b = arg;

	if (tally_http_client_busy(b->http))
		b->flush_due = true;
	else
		batch_send(b);
}

int tally_http_batch_room(struct tally_http_batch *b)
{
	if (b->pending < b->batch_size)
		return 0;
	batch_send(b);
	if (b->pending < b->batch_size)
		return 0;
	/* the server is slow or down: the core queues */
	b->blocked = true;
	errno = EAGAIN;
	return -1;
}

void tally_http_batch_added(struct tally_http_batch *b, size_t n)
{
	b->pending += n;
	batch_held(b);
	if (b->pending >= b->batch_size)
		batch_send(b);
	else if (b->pending && !evtimer_pending(b->flush_ev, NULL))
		evtimer_add(b->flush_ev, &b->flush_tv);
}

void tally_http_batch_flush(struct tally_http_batch *b)
{
	batch_send(b);
	tally_http_client_retry_now(b->http);
}

size_t tally_http_batch_pending(const struct tally_http_batch *b)
{
	return b->pending;
}

struct tally_http_batch *
tally_http_batch_new(struct tally_instance *inst, struct event_base *base,
		     const struct tally_http_url *url,
		     const struct tally_http_opts *ho,
		     const struct tally_http_batch_opts *o,
		     const struct tally_http_batch_ops *ops, void *arg)
{
	struct tally_http_batch *b;
	size_t ulen;

	if (!o->batch_size || !(o->flush_interval > 0)) {
		errno = EINVAL;
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		goto out_nomem;
	b->inst = inst;
	b->ops = ops;
	b->arg = arg;
	b->batch_size = o->batch_size;
	b->flush_tv.tv_sec = (time_t)o->flush_interval;
	b->flush_tv.tv_usec =
		(suseconds_t)((o->flush_interval - floor(o->flush_interval)) *
			      1e6);
	b->method = strdup(o->method);
	b->path = strdup(o->path);
	b->unit = strdup(o->unit);
	ulen = strlen(o->unit) + sizeof("_written");
	b->written = malloc(ulen);
	b->h = o->nh ? calloc(o->nh, sizeof(*b->h)) : NULL;
	if (!b->method || !b->path || !b->unit || !b->written ||
	    (o->nh && !b->h))
		goto out_free;
	strcpy(b->written, o->unit);
	strcat(b->written, "_written");
	for (; b->nh < o->nh; b->nh++) {
		b->h[b->nh].name = strdup(o->h[b->nh].name);
		b->h[b->nh].value = strdup(o->h[b->nh].value);
		if (!b->h[b->nh].name || !b->h[b->nh].value) {
			b->nh++;
			goto out_free;
		}
	}
	b->flush_ev = evtimer_new(base, batch_flush_timer, b);
	b->http = tally_http_client_new(inst, base, url, ho);
	if (!b->flush_ev || !b->http)
		goto out_free;
	return b;

out_free:
	tally_http_batch_free(b);
out_nomem:
	errno = ENOMEM;
	return NULL;
}

void tally_http_batch_free(struct tally_http_batch *b)
{
	size_t lost;

	if (!b)
		return;
	lost = b->pending;
	if (b->http && tally_http_client_busy(b->http))
		lost += b->inflight;
	if (lost) {
		tally_log(b->inst, LOG_WARNING,
			  "stopping with %zu %s not delivered", lost, b->unit);
		tally_count_drop(b->inst, "undelivered_at_exit", lost);
	}
	tally_http_client_free(b->http);
	if (b->flush_ev)
		event_free(b->flush_ev);
	for (size_t i = 0; i < b->nh; i++) {
		free((char *)b->h[i].name);
		free((char *)b->h[i].value);
	}
	free(b->h);
	free(b->method);
	free(b->path);
	free(b->unit);
	free(b->written);
	free(b);
}
