/* SPDX-License-Identifier: MIT */
/*
 * core/http-batch.c - batching for push outputs over the HTTP client
 * (tally/http.h): when a request goes, what becomes of its items
 *
 * The output keeps its items in its own forms (pending, being delivered)
 * and says how many it added; this keeps the counts, the flush timer, the
 * request in flight, the split of a request the server finds too large,
 * the batches held for a reload's successor (tally_output_hold) and the
 * core's output queue informed (EAGAIN when full, ready when not, held
 * for shutdown). Loop thread only.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include <tally/http.h>
#include <tally/log.h>
#include <tally/plugin.h>

#include "net-internal.h"

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
	char *item;
	char *written;	  /* "<unit>_written" */
	size_t pending;	  /* items in the output's pending form */
	size_t out;	  /* items being delivered (the output's out form) */
	size_t inflight;  /* the first of them, in the request out */
	size_t chunk_max; /* items per request, halved on each too large */
	struct tally_http_complaints log;
	struct tally_log_limit nomem_log;
	struct event *flush_ev;
	bool flush_due; /* the interval passed while a request ran */
	bool blocked;	/* room() said EAGAIN: call ready() later */
};

/* Tell the core what waits here, so that shutdown waits for it. */
static void batch_held(struct tally_http_batch *b)
{
	tally_output_held(b->inst, b->pending + b->out);
}

/* The first @n items being delivered are done (written, or dropped and
 * counted). */
static void batch_advance(struct tally_http_batch *b, size_t n)
{
	b->ops->advance(b->arg, n);
	tally_output_release(b->inst, n);
	b->out -= n;
	b->inflight = 0;
}

static void batch_done(void *arg, const struct tally_http_result *res);

/*
 * Send the next request, if no request is out: the rest of what is being
 * delivered, or else the pending items (sealed into the out form). The
 * out form keeps the items until their request has ended, so that a
 * request the server finds too large goes again in halves.
 */
static void batch_send(struct tally_http_batch *b)
{
	struct evbuffer *body;
	size_t k;

	if (tally_http_client_busy(b->http))
		return;
	if (!b->out) {
		if (!b->pending)
			return;
		event_del(b->flush_ev);
		b->flush_due = false;
		b->ops->seal(b->arg);
		b->out = b->pending;
		b->pending = 0;
		b->chunk_max = SIZE_MAX;
	}
	k = b->out < b->chunk_max ? b->out : b->chunk_max;
	b->inflight = k;
	body = evbuffer_new();
	if (!body || b->ops->body(b->arg, k, body) < 0 ||
	    tally_http_client_request(b->http, b->method, b->path, b->h, b->nh,
				      body, batch_done, b) < 0) {
		if (body)
			evbuffer_free(body);
		k = b->out;
		tally_log_limited(&b->nomem_log, 60, b->inst, LOG_ERR,
				  "no memory for a request: %zu %s dropped", k,
				  b->unit);
		tally_count_drop(b->inst, "nomem", k);
		batch_advance(b, k);
		batch_held(b);
		return;
	}
	evbuffer_free(body);
	batch_held(b);
}

static void batch_done(void *arg, const struct tally_http_result *res)
{
	struct tally_http_batch *b = arg;
	size_t n = b->inflight;

	if (res->outcome == TALLY_HTTP_REJECTED && res->too_large && n > 1) {
		/* the same items again in halves (Telegraf does) */
		b->chunk_max = n / 2;
		b->inflight = 0;
		tally_log_limited(&b->log.refused, 60, b->inst, LOG_WARNING,
				  "request of %zu %s too large for the server "
				  "(%s): sending them in requests of %zu",
				  n, b->unit, res->error, b->chunk_max);
		batch_send(b);
		return;
	}
	batch_advance(b, n);
	if (res->outcome == TALLY_HTTP_OK) {
		tally_count_event(b->inst, b->written, n);
	} else if (res->outcome == TALLY_HTTP_REJECTED && res->too_large) {
		tally_log_limited(&b->log.refused, 60, b->inst, LOG_ERR,
				  "a single %s too large for the server (%s): "
				  "dropped",
				  b->item, res->error);
		tally_count_drop(b->inst, "too_large", n);
	} else if (res->outcome == TALLY_HTTP_GAVE_UP || !b->ops->rejected ||
		   b->ops->rejected(b->arg, res, n) < 0) {
		tally_http_complain(&b->log, b->inst, res, n, b->unit);
	}
	if (b->out || b->pending >= b->batch_size || b->flush_due)
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

void tally_http_complain(struct tally_http_complaints *c,
			 struct tally_instance *inst,
			 const struct tally_http_result *res, size_t n,
			 const char *unit)
{
	if (res->outcome == TALLY_HTTP_REJECTED) {
		tally_log_limited(&c->refused, 60, inst, LOG_ERR,
				  "write refused (HTTP %d): %s; %zu %s "
				  "dropped, not retried",
				  res->status, res->message, n, unit);
		tally_count_drop(inst, "rejected", n);
	} else if (res->outcome == TALLY_HTTP_GAVE_UP) {
		tally_log_limited(&c->gave_up, 60, inst, LOG_ERR,
				  "write failed %u times (%s): %zu %s dropped",
				  res->attempts, res->error, n, unit);
		tally_count_drop(inst, "gave_up", n);
	}
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

int tally_http_batch_added(struct tally_http_batch *b, struct tally_batch *tb,
			   size_t n)
{
	if (!n)
		return 0;
	/* the batch stays with the core until its items are delivered, so
	 * that a reload hands it to the successor */
	if (tally_output_hold(b->inst, tb, n) < 0)
		return -1;
	b->pending += n;
	batch_held(b);
	if (b->pending >= b->batch_size)
		batch_send(b);
	else if (!evtimer_pending(b->flush_ev, NULL))
		evtimer_add(b->flush_ev, &b->flush_tv);
	return 0;
}

void tally_http_batch_flush(struct tally_http_batch *b)
{
	batch_send(b);
	tally_http_client_retry_now(b->http);
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
	b->flush_tv = tally_timeval(o->flush_interval);
	b->method = strdup(o->method);
	b->path = strdup(o->path);
	b->unit = strdup(o->unit);
	b->item = strdup(o->item);
	ulen = strlen(o->unit) + sizeof("_written");
	b->written = malloc(ulen);
	b->h = o->nh ? calloc(o->nh, sizeof(*b->h)) : NULL;
	if (!b->method || !b->path || !b->unit || !b->item || !b->written ||
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
	lost = b->pending + b->out;
	if (lost && tally_output_handed_over(b->inst)) {
		/* a reload: the core has their batches, for the successor */
		tally_log(b->inst, LOG_INFO,
			  "replaced: %zu %s not delivered yet go to the "
			  "successor with their batches",
			  lost, b->unit);
	} else if (lost) {
		/* the core logged them with the queue's, in one line, if the
		 * shutdown deadline ran out */
		if (!tally_output_loss_logged(b->inst))
			tally_log(b->inst, LOG_WARNING,
				  "stopping with %zu %s not delivered", lost,
				  b->unit);
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
	free(b->item);
	free(b->written);
	free(b);
}
