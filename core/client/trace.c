/* SPDX-License-Identifier: MIT */
/*
 * core/client/trace.c - libtally-trace: span begin/end from applications
 *
 * Design (see tally-trace(3) for the contract):
 *
 * - One PUSH socket per (thread, tracer), created on the thread's first
 *   event. ZeroMQ sockets are not thread-safe; a socket per thread needs no
 *   lock on the event path, so threads never wait for each other, and each
 *   thread keeps its own send queue (SNDHWM messages).
 * - Per thread, a stack of open spans gives the parent of a new span and
 *   lets end-by-name find the innermost span of that name.
 * - The constant part of every message (magic, pid, tid, rank, trace id)
 *   is written once per thread into a message buffer; an event fills the
 *   rest and calls zmq_send(ZMQ_DONTWAIT).
 * - close first sends one CLOSE message (doc/wire-format.md) on a socket
 *   of its own, which no queue holds up: the drops nobody reported yet,
 *   and how many events the process queued, so that the collector counts
 *   those that never arrive. Then it lets the threads' sockets deliver
 *   for at most the linger, and tells the caller whether they did
 *   (tally_trace_close_stats()).
 * - Slow paths (first event of a thread, thread exit, stats, close, fork)
 *   take one process-wide mutex; the event path takes none.
 * - fork: the child cannot use the parent's ZeroMQ context (its I/O thread
 *   did not survive). A pthread_atfork child handler detaches every thread
 *   state and forgets the context (leaked: terminating it would wait for
 *   a thread that does not exist); the child's first event builds new ones.
 * - Wire v2 only when there is something v1 cannot say: the attributes of
 *   a span ride on its END, counter snapshots on the next begin or end
 *   after the interval (or COUNTER messages at flush and close), and a
 *   connection's announcement (local rank, GPUs) is a COUNTER message of
 *   its own before its first event, so a v1 collector loses no span.
 * - Counters live in a per-tracer open-addressing table that is read
 *   without a lock (entries are published with a release store and never
 *   move); an add is a hash of its name and labels and one atomic add. One
 *   thread at a time takes a snapshot (a flag, never waited for on the
 *   event path); a delta counter remembers what snapshots that got out
 *   carried, so a snapshot lost to a full queue is sent again later.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "tally/hash.h"
#include "tally/trace.h"
#include "trace-internal.h"

#define TT_LINGER_MS	 2000 /* default close drain bound */
#define TT_LINGER_MAX_MS 60000
#define TT_SNDHWM	 10000 /* per-thread queue: absorbs bursts */
#define TT_PROBE_MS	 200   /* close: how long to look for a collector */
#define TT_MAX_DEPTH	 1024  /* deeper spans are sent but not tracked */
#define TT_MAX_RETIRED	 64    /* exited threads' sockets kept for close */
#define TT_ID_BLOCK	 (1u << 20) /* span ids a thread takes at a time */
/* after a failed send, retry after 1 us, doubling up to 128 us */
#define TT_BACKOFF_MIN_NS 1000u
#define TT_BACKOFF_MAX_NS 128000u
/*
 * Beyond its send queue, a socket's messages sit in libzmq's write batch
 * (out_batch_size, 8 KiB) when close gives up: at most this many more
 * are lost with the queue. Messages already written to the kernel still
 * arrive.
 */
#define TT_ZMQ_BATCH_MSGS (8192 / (TALLY_WIRE_HDR_SIZE + 1) + 1)
#define TT_MAX_COUNTERS	  1024 /* counters per tracer */
#define TT_CTAB		  2048 /* their hash table: a power of two */
#define TT_INTERVAL_NS	  1000000000ll /* default counter interval */

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/*
 * struct tt_conn - a thread's socket and message buffers
 *
 * Written by its thread only; the counters are atomics (relaxed, single
 * writer) because tally_trace_stats() reads them from other threads. When
 * the thread exits or the tracer closes, the tracer takes the conn over.
 */
struct tt_conn {
	void *sock;	      /* PUSH socket, NULL if it could not be made */
	struct tt_conn *next; /* in tracer->retired or close's list */
	_Atomic uint64_t events;
	_Atomic uint64_t dropped;
	_Atomic uint64_t pending; /* drops no sent message carried yet */
	uint64_t first_ns;	  /* ts of the first event queued, 0: none */
	uint64_t retry_ns;	  /* no send attempt before (after a drop) */
	uint64_t backoff;	  /* current back-off, ns; 0 = none */
	uint8_t buf[TALLY_WIRE_MAX_MSG2];
};

struct tt_frame {
	uint64_t id;
	uint64_t parent;
	size_t name_off; /* in tt_thread.names */
	size_t attr_off; /* its ATTR items, in tt_thread.attrs */
	uint16_t name_len;
	uint16_t attr_len;
	uint8_t nattrs;
};

/*
 * struct tt_thread - one thread's state for one tracer
 *
 * Owned by the thread (freed by it, in its TLS list); linked into its
 * tracer's list while attached. @tr becomes NULL when the tracer closes or
 * the process forks: the state is then dead and freed on the thread's next
 * slow path or at its exit.
 */
struct tt_thread {
	_Atomic(struct tally_trace *) tr;
	struct tt_thread *tls_next; /* this thread's states */
	struct tt_thread *tr_next;  /* tracer's list, under tt_lock */
	pthread_t self;
	struct tt_conn *conn;
	struct tt_source src;
	uint64_t next_id, end_id; /* current block of span ids */
	struct tt_frame *frames;  /* open spans, innermost last */
	unsigned depth, cap;
	char *names; /* names of open spans, back to back */
	size_t names_len, names_cap;
	uint8_t *attrs; /* ATTR items of open spans, back to back */
	size_t attrs_len, attrs_cap;
	bool announce; /* send the announcement before the next event */
	char fixed[TALLY_WIRE_MAX_STR]; /* a name made valid UTF-8 */
};

/*
 * struct tt_counter - one counter series of a tracer
 * @value: delta: the sum of the adds (int64 as uint64); gauge: the
 *         level's bits
 * @sent:  delta: the part of @value that snapshots which got out carried
 *         (written by the snapshot taker only)
 * @dirty: gauge: set since the last snapshot that got out
 * @item:  its COUNTER item with value 0, @item_len bytes: a snapshot
 *         copies it and writes the value at offset 14
 */
struct tt_counter {
	_Atomic uint64_t value;
	uint64_t sent;
	_Atomic int dirty;
	uint8_t kind;
	uint64_t hash;
	struct tt_counter *next; /* the tracer's, newest first */
	char *key;		 /* name, NUL, labels as given, NUL */
	size_t name_len, labels_len;
	uint16_t item_len;
	uint8_t item[];
};

struct tally_trace {
	char *endpoint;
	char *trace;
	char host[TALLY_WIRE_MAX_STR + 1];
	uint16_t trace_len, host_len;
	int32_t rank;
	int linger_ms;
	int sndhwm;
	_Atomic uint64_t next_block; /* span id blocks handed to threads */
	uint8_t announce[TT_ANNOUNCE_MAX]; /* SOURCE items, announce_len */
	size_t announce_len;
	int64_t interval_ns; /* between counter snapshots */
	_Atomic int64_t next_snap; /* CLOCK_REALTIME ns of the next one */
	_Atomic int snapping;	   /* a thread is taking a snapshot */
	_Atomic unsigned ncounters;
	_Atomic(struct tt_counter *) counters; /* list, newest first */
	_Atomic(struct tt_counter *) ctab[TT_CTAB];
	/* the snapshot taker's: what the message being sent carries */
	struct tt_counter **snap_c;
	uint64_t *snap_v;
	int64_t snap_last_ns; /* CLOCK_REALTIME ns of the last snapshot */
	/* the opt-in flusher thread */
	pthread_t flusher;
	bool flusher_on;
	pthread_mutex_t flusher_lock;
	pthread_cond_t flusher_cond;
	bool flusher_stop;
	/* below: under tt_lock */
	void *ctx; /* NULL until first use (again after fork) */
	uint32_t pid;
	struct tally_trace *next;  /* tt_tracers */
	struct tt_thread *threads; /* states of live threads */
	struct tt_conn *retired;   /* conns of exited threads */
	unsigned nretired;
	uint64_t gone_events, gone_dropped, gone_pending; /* closed conns */
	uint64_t gone_first_ns; /* earliest first_ns of closed conns */
	uint64_t gone_lost_max; /* what their close may have discarded */
};

static pthread_mutex_t tt_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tally_trace *tt_tracers; /* open tracers, under tt_lock */
static pthread_once_t tt_once = PTHREAD_ONCE_INIT;
static pthread_key_t tt_key; /* runs tt_thread_exit() */
static bool tt_key_ok;

/* initial-exec: a plain %fs-relative load, no __tls_get_addr per event */
static __thread struct tt_thread *tt_tls
	__attribute__((tls_model("initial-exec")));

static inline uint64_t tt_get(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

static inline void tt_set(_Atomic uint64_t *v, uint64_t x)
{
	atomic_store_explicit(v, x, memory_order_relaxed);
}

static void tt_conn_free(struct tt_conn *c, int linger_ms)
{
	if (c->sock) {
		zmq_setsockopt(c->sock, ZMQ_LINGER, &linger_ms,
			       sizeof(linger_ms));
		zmq_close(c->sock);
	}
	free(c);
}

static void tt_thread_free(struct tt_thread *t)
{
	free(t->frames);
	free(t->names);
	free(t->attrs);
	free(t);
}

/* Events of @c that ZeroMQ may still hold: its queue and write batch. */
static uint64_t tt_conn_lost_max(const struct tally_trace *tr,
				 struct tt_conn *c)
{
	uint64_t queued = tt_get(&c->events) - tt_get(&c->dropped);
	uint64_t cap = (uint64_t)tr->sndhwm + TT_ZMQ_BATCH_MSGS;

	return queued < cap ? queued : cap;
}

static uint64_t tt_min_ts(uint64_t a, uint64_t b)
{
	return !a || (b && b < a) ? b : a;
}

/*
 * Fold a conn's counters into its tracer's before the conn goes away with
 * a linger of @linger_ms (0: its queue is discarded at once).
 */
static void tt_account_gone(struct tally_trace *tr, struct tt_conn *c,
			    int linger_ms)
{
	tr->gone_events += tt_get(&c->events);
	tr->gone_dropped += tt_get(&c->dropped);
	tr->gone_pending += tt_get(&c->pending);
	tr->gone_first_ns = tt_min_ts(tr->gone_first_ns, c->first_ns);
	/* its fate is not known: it lingers while the thread goes on */
	tr->gone_lost_max += linger_ms ? 0 : tt_conn_lost_max(tr, c);
}

static void tt_unlink_thread(struct tally_trace *tr, struct tt_thread *t)
{
	for (struct tt_thread **p = &tr->threads; *p; p = &(*p)->tr_next) {
		if (*p == t) {
			*p = t->tr_next;
			return;
		}
	}
}

/*
 * Thread exit (pthread key destructor): hand the thread's sockets to their
 * tracers, so close can still deliver and report what they queued. Beyond
 * TT_MAX_RETIRED (thread-per-task programs), close the socket now with the
 * tracer's linger, or none if it was dropping (no collector keeping up).
 */
static void tt_thread_exit(void *arg)
{
	struct tt_thread *t, *next;

	(void)arg;
	pthread_mutex_lock(&tt_lock);
	for (t = tt_tls; t; t = next) {
		struct tally_trace *tr = atomic_load(&t->tr);
		struct tt_conn *c = t->conn;

		next = t->tls_next;
		if (tr) {
			tt_unlink_thread(tr, t);
			if (tr->nretired < TT_MAX_RETIRED) {
				c->next = tr->retired;
				tr->retired = c;
				tr->nretired++;
			} else {
				int linger =
					tt_get(&c->pending) ? 0 : tr->linger_ms;

				tt_account_gone(tr, c, linger);
				tt_conn_free(c, linger);
			}
		}
		tt_thread_free(t);
	}
	tt_tls = NULL;
	pthread_mutex_unlock(&tt_lock);
}

static void tt_atfork_prepare(void)
{
	pthread_mutex_lock(&tt_lock);
}

static void tt_atfork_parent(void)
{
	pthread_mutex_unlock(&tt_lock);
}

/*
 * In the child: only the forking thread exists. Its states are detached
 * (it frees them on its next call); other threads' states and all conns
 * are freed without touching their sockets, whose context is dead here.
 */
static void tt_atfork_child(void)
{
	pthread_t me = pthread_self();

	for (struct tally_trace *tr = tt_tracers; tr; tr = tr->next) {
		struct tt_thread *t, *tn;
		struct tt_conn *c, *cn;

		for (t = tr->threads; t; t = tn) {
			tn = t->tr_next;
			free(t->conn);
			t->conn = NULL;
			atomic_store(&t->tr, NULL);
			if (!pthread_equal(t->self, me))
				tt_thread_free(t);
		}
		for (c = tr->retired; c; c = cn) {
			cn = c->next;
			free(c);
		}
		tr->threads = NULL;
		tr->retired = NULL;
		tr->nretired = 0;
		tr->gone_events = tr->gone_dropped = tr->gone_pending = 0;
		tr->gone_first_ns = tr->gone_lost_max = 0;
		tr->ctx = NULL;
		tr->pid = (uint32_t)getpid();
		/* a new source: its counters start from zero, no thread
		 * flushes them (it did not survive the fork) */
		for (struct tt_counter *k = atomic_load(&tr->counters); k;
		     k = k->next) {
			atomic_store(&k->value, 0);
			atomic_store(&k->dirty, 0);
			k->sent = 0;
		}
		atomic_store(&tr->snapping, 0);
		atomic_store(&tr->next_snap, 0);
		tr->flusher_on = false;
		pthread_mutex_init(&tr->flusher_lock, NULL);
		pthread_cond_init(&tr->flusher_cond, NULL);
	}
	pthread_mutex_unlock(&tt_lock);
}

static void tt_init_once(void)
{
	tt_key_ok = pthread_key_create(&tt_key, tt_thread_exit) == 0;
	pthread_atfork(tt_atfork_prepare, tt_atfork_parent, tt_atfork_child);
}

/* Free this thread's dead states (tracer closed, or inherited by fork). */
static void tt_prune_tls(void)
{
	struct tt_thread **p = &tt_tls;

	while (*p) {
		struct tt_thread *t = *p;

		if (atomic_load(&t->tr)) {
			p = &t->tls_next;
			continue;
		}
		*p = t->tls_next;
		tt_thread_free(t);
	}
}

static void *tt_socket(struct tally_trace *tr)
{
	void *s = zmq_socket(tr->ctx, ZMQ_PUSH);

	if (!s)
		return NULL;
	/* Explicit, so a stalled collector costs a bounded queue per thread;
	 * linger bounds how long zmq_ctx_term() can wait for this socket. */
	zmq_setsockopt(s, ZMQ_SNDHWM, &tr->sndhwm, sizeof(tr->sndhwm));
	zmq_setsockopt(s, ZMQ_LINGER, &tr->linger_ms, sizeof(tr->linger_ms));
	if (zmq_connect(s, tr->endpoint) < 0) {
		zmq_close(s);
		return NULL;
	}
	return s;
}

/* What every message of the calling thread through @tr repeats. */
static struct tt_source tt_source_of(const struct tally_trace *tr)
{
	return (struct tt_source){
		.pid = tr->pid,
		.tid = (uint32_t)syscall(SYS_gettid),
		.rank = tr->rank,
		.trace_len = tr->trace_len,
		.host_len = tr->host_len,
		.trace = tr->trace,
		.host = tr->host,
	};
}

/* Slow path: this thread's first event for @tr, under tt_lock. */
static struct tt_thread *tt_thread_new(struct tally_trace *tr)
{
	struct tt_thread *t;
	struct tt_conn *c;

	if (!tr->ctx) {
		tr->ctx = zmq_ctx_new();
		if (!tr->ctx)
			return NULL;
	}
	t = calloc(1, sizeof(*t));
	c = calloc(1, sizeof(*c));
	if (!t || !c) {
		free(t);
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	/* No socket (too many open files...): events count as dropped. */
	c->sock = tt_socket(tr);
	t->conn = c;
	t->self = pthread_self();
	t->src = tt_source_of(tr);
	t->announce = tr->announce_len > 0;
	tt_msg_init(c->buf, &t->src);
	atomic_store(&t->tr, tr);
	t->tr_next = tr->threads;
	tr->threads = t;
	t->tls_next = tt_tls;
	tt_tls = t;
	if (tt_key_ok)
		pthread_setspecific(tt_key, t);
	return t;
}

static struct tt_thread *tt_self_slow(struct tally_trace *tr)
{
	struct tt_thread *t, **p;

	pthread_mutex_lock(&tt_lock);
	tt_prune_tls();
	for (p = &tt_tls; (t = *p); p = &t->tls_next) {
		if (atomic_load(&t->tr) == tr) {
			/* most recently used first: the fast path checks it */
			*p = t->tls_next;
			t->tls_next = tt_tls;
			tt_tls = t;
			break;
		}
	}
	if (!t)
		t = tt_thread_new(tr);
	pthread_mutex_unlock(&tt_lock);
	return t;
}

static inline struct tt_thread *tt_self(struct tally_trace *tr)
{
	struct tt_thread *t = tt_tls;

	if (likely(t &&
		   atomic_load_explicit(&t->tr, memory_order_relaxed) == tr))
		return t;
	return tt_self_slow(tr);
}

/* Whether a thread may take the tracer's counter snapshot now. */
static bool tt_snap_take(struct tally_trace *tr)
{
	int idle = 0;

	return atomic_compare_exchange_strong(&tr->snapping, &idle, 1);
}

/*
 * Whether an event at @now may carry the tracer's counter snapshot. Not
 * when @now is before the last snapshot's time (another thread read the
 * clock later but took the snapshot first): snapshots go out in the order
 * of their timestamps, so that a receiver can tell which gauge level is
 * the newest (TALLY_WIRE_GAUGE_REORDER_NS); this event's is skipped, the
 * next one takes it.
 */
static bool tt_snap_begin(struct tally_trace *tr, uint64_t now)
{
	if (!tt_snap_take(tr))
		return false;
	if ((int64_t)now >= tr->snap_last_ns ||
	    tr->snap_last_ns - (int64_t)now > TALLY_WIRE_GAUGE_REORDER_NS)
		return true;
	atomic_store_explicit(&tr->snapping, 0, memory_order_release);
	return false;
}

static void tt_snap_end(struct tally_trace *tr, uint64_t now)
{
	tr->snap_last_ns = (int64_t)now;
	atomic_store_explicit(&tr->next_snap, (int64_t)now + tr->interval_ns,
			      memory_order_relaxed);
	atomic_store_explicit(&tr->snapping, 0, memory_order_release);
}

/*
 * Snapshots of the counters from *@cur on that changed, as COUNTER items
 * at @p, at most @room bytes and TALLY_WIRE_MAX_COUNTERS items; each is
 * recorded at tr->snap_*[*@k], *@k advanced. *@cur becomes the first
 * counter left out (NULL: none). Return: the bytes written.
 */
static size_t tt_snap_fill(struct tally_trace *tr, struct tt_counter **cur,
			   uint8_t *p, size_t room, unsigned *k)
{
	unsigned items = 0;
	size_t n = 0;

	for (struct tt_counter *c = *cur; c; c = c->next) {
		uint64_t v = 0, wire;

		if (c->kind == TALLY_WIRE_DELTA) {
			v = atomic_load_explicit(&c->value,
						 memory_order_relaxed);
			if (v == c->sent)
				continue;
		} else if (!atomic_load_explicit(&c->dirty,
						 memory_order_relaxed)) {
			continue;
		}
		if (c->item_len > room - n ||
		    items == TALLY_WIRE_MAX_COUNTERS) {
			*cur = c;
			return n;
		}
		if (c->kind == TALLY_WIRE_DELTA) {
			wire = v - c->sent;
		} else {
			atomic_store(&c->dirty, 0);
			v = wire = atomic_load(&c->value);
		}
		memcpy(p + n, c->item, c->item_len);
		tally_wire_put64(p + n + 14, wire);
		tr->snap_c[*k] = c;
		tr->snap_v[*k] = v;
		(*k)++;
		items++;
		n += c->item_len;
	}
	*cur = NULL;
	return n;
}

/* The snapshots recorded at [@from, @to) got out (@ok) or not. */
static void tt_snap_commit(struct tally_trace *tr, unsigned from, unsigned to,
			   bool ok)
{
	for (unsigned i = from; i < to; i++) {
		struct tt_counter *c = tr->snap_c[i];

		if (c->kind == TALLY_WIRE_DELTA) {
			if (ok)
				c->sent = tr->snap_v[i];
		} else if (!ok) {
			atomic_store(&c->dirty, 1);
		}
	}
}

/*
 * Send COUNTER messages on @t's socket: the announcement (@announce) and
 * the snapshots of the counters from @cur on (the caller holds the
 * snapshot flag when @cur is not NULL). Never waits: a message that cannot
 * be queued is not sent, its snapshots go with a later one.
 */
static void tt_send_counters(struct tt_thread *t, struct tt_counter *cur,
			     unsigned k, bool announce, uint64_t now)
{
	struct tally_trace *tr = atomic_load(&t->tr);
	struct tt_conn *c = t->conn;
	uint8_t *m = c->buf;

	while (cur || announce) {
		size_t n = tt_msg_fill(m, &t->src, TALLY_WIRE_COUNTER, 0,
				       (int64_t)now, 0, 0, "", 0);
		size_t xl = 0;
		unsigned k0 = k;
		bool ok;

		if (announce) {
			memcpy(m + n, tr->announce, tr->announce_len);
			xl = tr->announce_len;
		}
		if (cur)
			xl += tt_snap_fill(tr, &cur, m + n + xl,
					   TALLY_WIRE_MAX_EXT - xl, &k);
		if (!xl)
			break;
		n = tt_msg_v2(m, n, xl);
		ok = c->sock && !c->backoff &&
		     zmq_send(c->sock, m, n, ZMQ_DONTWAIT) == (int)n;
		tt_snap_commit(tr, k0, k, ok);
		if (!ok)
			break;
		if (announce)
			t->announce = announce = false;
	}
}

/*
 * The event path: fill the prepared buffer and try once to queue it. The
 * drop count rides on this message and is cleared only if it got through.
 * An END carries its span's attributes (@attrs, ATTR items), and a
 * snapshot of the tracer's counters rides on the event when one is due:
 * then the message is version 2, else version 1.
 *
 * After a send fails (queue full: no collector, or one not keeping up),
 * the next attempts wait for a short, doubling back-off instead of calling
 * into libzmq for every event: a full pipe accepts nothing until its
 * reader has drained half of it anyway, and a failed zmq_send costs more
 * than the rest of the event. A connection whose sends failed announces
 * itself again once they pass (the collector may be a new one).
 */
static void tt_send(struct tt_thread *t, uint8_t type, uint64_t id,
		    uint64_t parent, const char *name, size_t name_len,
		    const uint8_t *attrs, size_t attrs_len)
{
	struct tt_conn *c = t->conn;
	struct tally_trace *tr = atomic_load_explicit(&t->tr,
						      memory_order_relaxed);
	uint64_t pending = tt_get(&c->pending);
	uint32_t carried =
		pending > UINT32_MAX ? UINT32_MAX : (uint32_t)pending;
	uint8_t *m = c->buf;
	struct tt_counter *cur = NULL;
	struct timespec ts;
	unsigned k = 0;
	bool snap = false, ok = false;
	uint64_t now;
	size_t n, xl = attrs_len;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (unlikely(t->announce) && !c->backoff)
		tt_send_counters(t, NULL, 0, true, now);
	n = tt_msg_fill(m, &t->src, type, carried, (int64_t)now, id, parent,
			name, name_len);
	if (unlikely(attrs_len))
		memcpy(m + n, attrs, attrs_len);
	if (unlikely(atomic_load_explicit(&tr->ncounters,
					  memory_order_relaxed)) &&
	    (int64_t)now >= atomic_load_explicit(&tr->next_snap,
						 memory_order_relaxed) &&
	    tt_snap_begin(tr, now)) {
		snap = true;
		cur = atomic_load_explicit(&tr->counters, memory_order_acquire);
		xl += tt_snap_fill(tr, &cur, m + n + xl,
				   TALLY_WIRE_MAX_EXT - xl, &k);
	}
	if (unlikely(xl))
		n = tt_msg_v2(m, n, xl);
	tt_set(&c->events, tt_get(&c->events) + 1);
	/* the second test guards against the clock stepping backwards */
	if (unlikely(c->backoff) && now < c->retry_ns &&
	    c->retry_ns - now <= c->backoff)
		goto drop;
	if (likely(c->sock) &&
	    likely(zmq_send(c->sock, m, n, ZMQ_DONTWAIT) == (int)n)) {
		if (unlikely(carried))
			tt_set(&c->pending, pending - carried);
		if (unlikely(!c->first_ns))
			c->first_ns = now;
		if (unlikely(c->backoff))
			t->announce = tr->announce_len > 0;
		c->backoff = 0;
		ok = true;
		goto out;
	}
	c->backoff = c->backoff ? 2 * c->backoff : TT_BACKOFF_MIN_NS;
	if (c->backoff > TT_BACKOFF_MAX_NS)
		c->backoff = TT_BACKOFF_MAX_NS;
	c->retry_ns = now + c->backoff;
drop:
	tt_set(&c->pending, pending + 1);
	tt_set(&c->dropped, tt_get(&c->dropped) + 1);
out:
	if (unlikely(snap)) {
		tt_snap_commit(tr, 0, k, ok);
		if (ok && cur)
			tt_send_counters(t, cur, k, false, now);
		tt_snap_end(tr, now);
	}
}

static uint64_t tt_new_id(struct tt_thread *t)
{
	if (unlikely(t->next_id == t->end_id)) {
		struct tally_trace *tr = atomic_load(&t->tr);

		t->next_id = atomic_fetch_add(&tr->next_block, TT_ID_BLOCK);
		t->end_id = t->next_id + TT_ID_BLOCK;
	}
	return t->next_id++;
}

/* Remember an open span. On failure (ENOMEM, too deep) it is not tracked:
 * its END can still be sent by id, without a name. */
static void tt_push(struct tt_thread *t, uint64_t id, uint64_t parent,
		    const char *name, size_t len)
{
	struct tt_frame *f;

	if (unlikely(t->depth == t->cap)) {
		unsigned cap = t->cap ? 2 * t->cap : 16;

		if (cap > TT_MAX_DEPTH)
			return;
		f = realloc(t->frames, cap * sizeof(*f));
		if (!f)
			return;
		t->frames = f;
		t->cap = cap;
	}
	if (unlikely(t->names_len + len > t->names_cap)) {
		size_t cap = t->names_cap ? t->names_cap : 1024;
		char *p;

		while (cap < t->names_len + len)
			cap *= 2;
		p = realloc(t->names, cap);
		if (!p)
			return;
		t->names = p;
		t->names_cap = cap;
	}
	memcpy(t->names + t->names_len, name, len);
	f = &t->frames[t->depth++];
	f->id = id;
	f->parent = parent;
	f->name_off = t->names_len;
	f->name_len = (uint16_t)len;
	f->attr_off = t->attrs_len;
	f->attr_len = 0;
	f->nattrs = 0;
	t->names_len += len;
}

/* Send the END of open span @i and forget it; spans opened inside it (if
 * ended out of order) stay open with their ids. */
static void tt_end_frame(struct tt_thread *t, unsigned i)
{
	struct tt_frame *f = &t->frames[i];
	size_t off = f->name_off, len = f->name_len;
	size_t aoff = f->attr_off, alen = f->attr_len;

	tt_send(t, TALLY_WIRE_END, f->id, f->parent, t->names + off, len,
		t->attrs + aoff, alen);
	if (i + 1 < t->depth) {
		memmove(t->names + off, t->names + off + len,
			t->names_len - off - len);
		if (alen)
			memmove(t->attrs + aoff, t->attrs + aoff + alen,
				t->attrs_len - aoff - alen);
		memmove(f, f + 1, (t->depth - i - 1) * sizeof(*f));
		for (unsigned j = i; j < t->depth - 1; j++) {
			t->frames[j].name_off -= len;
			t->frames[j].attr_off -= alen;
		}
	}
	t->names_len -= len;
	t->attrs_len -= alen;
	t->depth--;
}

/* Whether @s[0..@len) is all ASCII: 8 bytes per step. */
static inline bool tt_ascii(const char *s, size_t len)
{
	uint64_t acc = 0, v;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		memcpy(&v, s + i, 8);
		acc |= v;
	}
	for (; i < len; i++)
		acc |= (unsigned char)s[i];
	return !(acc & 0x8080808080808080ull);
}

/* Not ASCII, or too long: cut, or repaired into @t->fixed. */
static const char *tt_name_slow(struct tt_thread *t, const char *name,
				size_t len, size_t *out_len)
{
	if (tally_utf8_valid(name, len)) {
		*out_len = tally_utf8_clip(name, len, TALLY_WIRE_MAX_STR);
		return name;
	}
	*out_len = tally_utf8_fix(name, len, t->fixed, sizeof(t->fixed));
	return t->fixed;
}

/*
 * The name to send for @name: itself, cut to TALLY_WIRE_MAX_STR bytes at
 * a character boundary, or a copy with ill-formed UTF-8 replaced by
 * U+FFFD (the collector would drop the message as bad_utf8). Valid until
 * the thread's next call. Every name passes here, so that end_name
 * compares names as begin stored them.
 */
static inline const char *tt_name(struct tt_thread *t, const char *name,
				  size_t *out_len)
{
	size_t len = strlen(name);

	if (likely(len <= TALLY_WIRE_MAX_STR && tt_ascii(name, len))) {
		*out_len = len;
		return name;
	}
	return tt_name_slow(t, name, len, out_len);
}

uint64_t tally_trace_begin(struct tally_trace *tr, const char *name)
{
	struct tt_thread *t;
	uint64_t id, parent;
	size_t len;

	if (unlikely(!tr || !name || !*name)) {
		errno = EINVAL;
		return 0;
	}
	t = tt_self(tr);
	if (unlikely(!t))
		return 0;
	name = tt_name(t, name, &len);
	id = tt_new_id(t);
	parent = t->depth ? t->frames[t->depth - 1].id : 0;
	tt_push(t, id, parent, name, len);
	tt_send(t, TALLY_WIRE_BEGIN, id, parent, name, len, NULL, 0);
	return id;
}

int tally_trace_end(struct tally_trace *tr, uint64_t span_id)
{
	struct tt_thread *t;

	if (unlikely(!tr || !span_id)) {
		errno = EINVAL;
		return -1;
	}
	t = tt_self(tr);
	if (unlikely(!t))
		return -1;
	for (unsigned i = t->depth; i-- > 0;) {
		if (t->frames[i].id == span_id) {
			tt_end_frame(t, i);
			return 0;
		}
	}
	/* not ours (other thread, untracked): the collector knows it by id */
	tt_send(t, TALLY_WIRE_END, span_id, 0, "", 0, NULL, 0);
	errno = ENOENT;
	return -1;
}

int tally_trace_end_name(struct tally_trace *tr, const char *name)
{
	struct tt_thread *t;
	size_t len;

	if (unlikely(!tr || !name || !*name)) {
		errno = EINVAL;
		return -1;
	}
	t = tt_self(tr);
	if (unlikely(!t))
		return -1;
	name = tt_name(t, name, &len);
	for (unsigned i = t->depth; i-- > 0;) {
		struct tt_frame *f = &t->frames[i];

		if (f->name_len == len &&
		    memcmp(t->names + f->name_off, name, len) == 0) {
			tt_end_frame(t, i);
			return 0;
		}
	}
	errno = ENOENT;
	return -1;
}

/* Attributes: encoded once as ATTR items, kept with their open span. */
#define TT_MAX_ATTR_BYTES 4096 /* per span: leaves room for counters */

/* Offset, within span @f's items, of the item whose key is @key; -1. */
static long tt_attr_find(const struct tt_thread *t, const struct tt_frame *f,
			 const char *key, size_t kl)
{
	const uint8_t *p = t->attrs + f->attr_off;
	size_t off = 0;

	while (off < f->attr_len) {
		size_t il = TALLY_WIRE_ITEM_HDR + tally_wire_get16(p + off + 1);

		if (p[off + 3] == kl && !memcmp(p + off + 5, key, kl))
			return (long)off;
		off += il;
	}
	return -1;
}

/* Make @delta bytes of room (or take them back, < 0) at @at in t->attrs:
 * the spans above @i move. Return: 0, or -1 with errno = ENOMEM. */
static int tt_attr_room(struct tt_thread *t, unsigned i, size_t at,
			long delta)
{
	if (delta > 0 && t->attrs_len + (size_t)delta > t->attrs_cap) {
		size_t cap = t->attrs_cap ? t->attrs_cap : 1024;
		uint8_t *p;

		while (cap < t->attrs_len + (size_t)delta)
			cap *= 2;
		p = realloc(t->attrs, cap);
		if (!p) {
			errno = ENOMEM;
			return -1;
		}
		t->attrs = p;
		t->attrs_cap = cap;
	}
	if (delta > 0)
		memmove(t->attrs + at + delta, t->attrs + at,
			t->attrs_len - at);
	else
		memmove(t->attrs + at, t->attrs + at - delta,
			t->attrs_len - at + delta);
	t->attrs_len += delta;
	for (unsigned j = i + 1; j < t->depth; j++)
		t->frames[j].attr_off += delta;
	return 0;
}

/*
 * Set attribute @key of span @span_id (0: the innermost open one) of the
 * calling thread; see tally_trace_attr_i64().
 */
static int tt_attr(struct tally_trace *tr, uint64_t span_id, const char *key,
		   uint8_t type, const void *val, size_t vl)
{
	uint8_t item[TALLY_WIRE_ITEM_HDR + 2 + TALLY_WIRE_MAX_KEY +
		     TALLY_WIRE_MAX_ATTR_STR];
	struct tt_thread *t;
	struct tt_frame *f;
	size_t kl, il;
	unsigned i;
	long old;

	if (!tr || !key || !tally_wire_name_ok(key, kl = strlen(key))) {
		errno = EINVAL;
		return -1;
	}
	t = tt_self(tr);
	if (!t)
		return -1;
	for (i = t->depth; i-- > 0;)
		if (!span_id || t->frames[i].id == span_id)
			break;
	if (i == (unsigned)-1) {
		errno = ENOENT;
		return -1;
	}
	f = &t->frames[i];
	il = tt_item_attr(item, TALLY_WIRE_ITEM_ATTR, key, kl, type, val, vl);
	old = tt_attr_find(t, f, key, kl);
	if (old >= 0) {
		/* replaced: the old item goes first */
		size_t at = f->attr_off + (size_t)old;
		size_t ol = TALLY_WIRE_ITEM_HDR +
			    tally_wire_get16(t->attrs + at + 1);

		if (f->attr_len - ol + il > TT_MAX_ATTR_BYTES) {
			errno = E2BIG;
			return -1;
		}
		tt_attr_room(t, i, at, -(long)ol);
		f->attr_len -= (uint16_t)ol;
		f->nattrs--;
	} else if (f->nattrs == TALLY_WIRE_MAX_ATTRS ||
		   f->attr_len + il > TT_MAX_ATTR_BYTES) {
		errno = E2BIG;
		return -1;
	}
	if (tt_attr_room(t, i, f->attr_off + f->attr_len, (long)il) < 0)
		return -1;
	memcpy(t->attrs + f->attr_off + f->attr_len, item, il);
	f->attr_len += (uint16_t)il;
	f->nattrs++;
	return 0;
}

int tally_trace_attr_i64(struct tally_trace *tr, const char *key,
			 int64_t value)
{
	return tt_attr(tr, 0, key, TALLY_WIRE_T_INT64, &value, 8);
}

int tally_trace_attr_f64(struct tally_trace *tr, const char *key, double value)
{
	if (!isfinite(value)) {
		errno = EINVAL;
		return -1;
	}
	return tt_attr(tr, 0, key, TALLY_WIRE_T_DOUBLE, &value, 8);
}

/* A string value as sent: cut to 256 bytes, ill-formed UTF-8 replaced. */
static size_t tt_attr_str(const char *s, char *out)
{
	return tt_clip(s, strlen(s), out, TALLY_WIRE_MAX_ATTR_STR);
}

int tally_trace_attr_str(struct tally_trace *tr, const char *key,
			 const char *value)
{
	char v[TALLY_WIRE_MAX_ATTR_STR];

	if (!value) {
		errno = EINVAL;
		return -1;
	}
	return tt_attr(tr, 0, key, TALLY_WIRE_T_STRING, v,
		       tt_attr_str(value, v));
}

int tally_trace_attr_bool(struct tally_trace *tr, const char *key, int value)
{
	uint8_t b = value != 0;

	return tt_attr(tr, 0, key, TALLY_WIRE_T_BOOL, &b, 1);
}

int tally_trace_span_attr_i64(struct tally_trace *tr, uint64_t span_id,
			      const char *key, int64_t value)
{
	if (!span_id) {
		errno = EINVAL;
		return -1;
	}
	return tt_attr(tr, span_id, key, TALLY_WIRE_T_INT64, &value, 8);
}

int tally_trace_span_attr_f64(struct tally_trace *tr, uint64_t span_id,
			      const char *key, double value)
{
	if (!span_id || !isfinite(value)) {
		errno = EINVAL;
		return -1;
	}
	return tt_attr(tr, span_id, key, TALLY_WIRE_T_DOUBLE, &value, 8);
}

int tally_trace_span_attr_str(struct tally_trace *tr, uint64_t span_id,
			      const char *key, const char *value)
{
	char v[TALLY_WIRE_MAX_ATTR_STR];

	if (!span_id || !value) {
		errno = EINVAL;
		return -1;
	}
	return tt_attr(tr, span_id, key, TALLY_WIRE_T_STRING, v,
		       tt_attr_str(value, v));
}

int tally_trace_span_attr_bool(struct tally_trace *tr, uint64_t span_id,
			       const char *key, int value)
{
	uint8_t b = value != 0;

	if (!span_id) {
		errno = EINVAL;
		return -1;
	}
	return tt_attr(tr, span_id, key, TALLY_WIRE_T_BOOL, &b, 1);
}

/* Counters */

/* The core's word-at-a-time hash: FNV-1a a byte at a time was most of an
 * add's cost (the counter-add bench rows). In-process only, never sent. */
static uint64_t tt_counter_hash(uint8_t kind, const char *name, size_t nl,
				const char *labels, size_t ll)
{
	uint64_t h = tally_hash_mem(TALLY_HASH_SEED ^ kind, name, nl);

	h = tally_hash_mem(h, labels, ll);
	return h ^ (h >> 29);
}

/*
 * @labels ("k=v,k2=v2", @ll bytes) as the COUNTER item's label bytes at
 * @out. Return: the bytes, or -1 with errno = EINVAL.
 */
static long tt_labels_encode(const char *labels, size_t ll, uint8_t *out,
			     uint8_t *nlabels)
{
	const char *p = labels, *e = labels + ll;
	const char *keys[TALLY_WIRE_MAX_LABELS];
	size_t kls[TALLY_WIRE_MAX_LABELS];
	long n = 0;

	*nlabels = 0;
	while (p < e) {
		const char *comma = memchr(p, ',', (size_t)(e - p));
		const char *end = comma ? comma : e;
		const char *eq = memchr(p, '=', (size_t)(end - p));
		size_t kl, vl;

		if (!eq || *nlabels == TALLY_WIRE_MAX_LABELS)
			goto out_inval;
		kl = (size_t)(eq - p);
		vl = (size_t)(end - eq - 1);
		if (!tally_wire_name_ok(p, kl) ||
		    vl > TALLY_WIRE_MAX_LABEL_VAL ||
		    !tally_utf8_valid(eq + 1, vl))
			goto out_inval;
		if ((kl == 5 && !memcmp(p, "trace", 5)) ||
		    (kl == 4 && !memcmp(p, "rank", 4)) ||
		    (kl == 4 && !memcmp(p, "host", 4)) ||
		    (kl == 3 && !memcmp(p, "pid", 3)))
			goto out_inval;
		for (uint8_t i = 0; i < *nlabels; i++)
			if (kls[i] == kl && !memcmp(keys[i], p, kl))
				goto out_inval;
		keys[*nlabels] = p;
		kls[*nlabels] = kl;
		(*nlabels)++;
		out[n] = (uint8_t)kl;
		out[n + 1] = (uint8_t)vl;
		memcpy(out + n + 2, p, kl);
		memcpy(out + n + 2 + kl, eq + 1, vl);
		n += (long)(2 + kl + vl);
		p = comma ? comma + 1 : e;
	}
	return n;
out_inval:
	errno = EINVAL;
	return -1;
}

static struct tt_counter *tt_counter_find(struct tally_trace *tr,
					  uint8_t kind, const char *name,
					  size_t nl, const char *labels,
					  size_t ll, uint64_t h, unsigned *slot)
{
	for (unsigned i = (unsigned)h & (TT_CTAB - 1);;
	     i = (i + 1) & (TT_CTAB - 1)) {
		struct tt_counter *c = atomic_load_explicit(
			&tr->ctab[i], memory_order_acquire);

		if (!c) {
			*slot = i;
			return NULL;
		}
		if (c->hash == h && c->kind == kind && c->name_len == nl &&
		    c->labels_len == ll && !memcmp(c->key, name, nl) &&
		    !memcmp(c->key + nl + 1, labels, ll))
			return c;
	}
}

/* Slow path: a new counter, under tt_lock. Return: it, or NULL/errno. */
static struct tt_counter *tt_counter_new(struct tally_trace *tr,
					 uint8_t kind, const char *name,
					 size_t nl, const char *labels,
					 size_t ll, uint64_t h)
{
	uint8_t enc[TALLY_WIRE_MAX_LABELS * (2 + TALLY_WIRE_MAX_KEY +
					      TALLY_WIRE_MAX_LABEL_VAL)];
	struct tt_counter *c;
	uint8_t nlabels;
	long el;
	unsigned slot;

	if (!tally_wire_name_ok(name, nl)) {
		errno = EINVAL;
		return NULL;
	}
	el = tt_labels_encode(labels, ll, enc, &nlabels);
	if (el < 0)
		return NULL;
	pthread_mutex_lock(&tt_lock);
	c = tt_counter_find(tr, kind, name, nl, labels, ll, h, &slot);
	if (c)
		goto out_unlock;
	if (atomic_load(&tr->ncounters) == TT_MAX_COUNTERS) {
		errno = ENOSPC;
		goto out_unlock;
	}
	if (!tr->snap_c) {
		tr->snap_c = calloc(TT_MAX_COUNTERS, sizeof(*tr->snap_c));
		tr->snap_v = calloc(TT_MAX_COUNTERS, sizeof(*tr->snap_v));
		if (!tr->snap_c || !tr->snap_v)
			goto out_nomem;
	}
	c = calloc(1, sizeof(*c) + 3 + TALLY_WIRE_COUNTER_FIXED + nl +
			      (size_t)el);
	if (!c)
		goto out_nomem;
	c->key = malloc(nl + ll + 2);
	if (!c->key) {
		free(c);
		c = NULL;
		goto out_nomem;
	}
	memcpy(c->key, name, nl);
	c->key[nl] = '\0';
	memcpy(c->key + nl + 1, labels, ll);
	c->key[nl + 1 + ll] = '\0';
	c->kind = kind;
	c->hash = h;
	c->name_len = nl;
	c->labels_len = ll;
	c->item_len = (uint16_t)tt_item_counter(c->item, kind, name, nl,
						nlabels, enc, (size_t)el, 0, 0);
	c->next = atomic_load(&tr->counters);
	atomic_store_explicit(&tr->counters, c, memory_order_release);
	atomic_store_explicit(&tr->ctab[slot], c, memory_order_release);
	atomic_fetch_add(&tr->ncounters, 1);
out_unlock:
	pthread_mutex_unlock(&tt_lock);
	return c;
out_nomem:
	pthread_mutex_unlock(&tt_lock);
	errno = ENOMEM;
	return NULL;
}

static inline struct tt_counter *tt_counter(struct tally_trace *tr,
					    uint8_t kind, const char *name,
					    const char *labels)
{
	size_t nl = strlen(name), ll = labels ? strlen(labels) : 0;
	uint64_t h;
	struct tt_counter *c;
	unsigned slot;

	if (!labels)
		labels = "";
	h = tt_counter_hash(kind, name, nl, labels, ll);
	c = tt_counter_find(tr, kind, name, nl, labels, ll, h, &slot);
	if (likely(c))
		return c;
	return tt_counter_new(tr, kind, name, nl, labels, ll, h);
}

int tally_trace_counter_add(struct tally_trace *tr, const char *name,
			    const char *labels, int64_t delta)
{
	struct tt_counter *c;

	if (unlikely(!tr || !name || delta < 0)) {
		errno = EINVAL;
		return -1;
	}
	c = tt_counter(tr, TALLY_WIRE_DELTA, name, labels);
	if (unlikely(!c))
		return -1;
	atomic_fetch_add_explicit(&c->value, (uint64_t)delta,
				  memory_order_relaxed);
	return 0;
}

int tally_trace_gauge_set(struct tally_trace *tr, const char *name,
			  const char *labels, double value)
{
	struct tt_counter *c;
	uint64_t bits;

	if (unlikely(!tr || !name || !isfinite(value))) {
		errno = EINVAL;
		return -1;
	}
	c = tt_counter(tr, TALLY_WIRE_GAUGE, name, labels);
	if (unlikely(!c))
		return -1;
	memcpy(&bits, &value, sizeof(bits));
	atomic_store_explicit(&c->value, bits, memory_order_relaxed);
	atomic_store_explicit(&c->dirty, 1, memory_order_release);
	return 0;
}

int tally_trace_flush(struct tally_trace *tr)
{
	struct tt_thread *t;
	struct timespec ts;
	uint64_t now;
	int tries = 0;

	if (!tr) {
		errno = EINVAL;
		return -1;
	}
	t = tt_self(tr);
	if (!t)
		return -1;
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (!atomic_load(&tr->ncounters)) {
		if (t->announce)
			tt_send_counters(t, NULL, 0, true, now);
		return 0;
	}
	/* another thread's snapshot takes microseconds: wait it out */
	while (!tt_snap_take(tr)) {
		if (++tries == 10000) {
			errno = EAGAIN;
			return -1;
		}
		sched_yield();
	}
	/* in timestamp order (tt_snap_begin()): no event carries this one */
	if ((int64_t)now < tr->snap_last_ns &&
	    tr->snap_last_ns - (int64_t)now <= TALLY_WIRE_GAUGE_REORDER_NS)
		now = (uint64_t)tr->snap_last_ns;
	tt_send_counters(t,
			 atomic_load_explicit(&tr->counters,
					      memory_order_acquire),
			 0, t->announce, now);
	tt_snap_end(tr, now);
	return 0;
}

/* The opt-in flusher: a snapshot every interval, until close. */
static void *tt_flusher_main(void *arg)
{
	struct tally_trace *tr = arg;
	struct timespec dl;

	pthread_mutex_lock(&tr->flusher_lock);
	while (!tr->flusher_stop) {
		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += tr->interval_ns / 1000000000;
		dl.tv_nsec += tr->interval_ns % 1000000000;
		if (dl.tv_nsec >= 1000000000) {
			dl.tv_sec++;
			dl.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&tr->flusher_cond, &tr->flusher_lock,
				       &dl);
		if (tr->flusher_stop)
			break;
		pthread_mutex_unlock(&tr->flusher_lock);
		tally_trace_flush(tr);
		pthread_mutex_lock(&tr->flusher_lock);
	}
	pthread_mutex_unlock(&tr->flusher_lock);
	return NULL;
}

int tally_trace_flusher(struct tally_trace *tr, int on)
{
	int err;

	if (!tr) {
		errno = EINVAL;
		return -1;
	}
	if (!on == !tr->flusher_on)
		return 0;
	if (on) {
		tr->flusher_stop = false;
		err = pthread_create(&tr->flusher, NULL, tt_flusher_main, tr);
		if (err) {
			errno = err;
			return -1;
		}
		tr->flusher_on = true;
		return 0;
	}
	pthread_mutex_lock(&tr->flusher_lock);
	tr->flusher_stop = true;
	pthread_cond_signal(&tr->flusher_cond);
	pthread_mutex_unlock(&tr->flusher_lock);
	pthread_join(tr->flusher, NULL);
	tr->flusher_on = false;
	return 0;
}

static int tt_env_int(const char *var, int def, int min, int max)
{
	const char *v = getenv(var);
	char *end;
	long x;

	if (!v || !*v)
		return def;
	errno = 0;
	x = strtol(v, &end, 10);
	if (errno || *end || x < min)
		return def;
	return x > max ? max : (int)x;
}

/* TALLY_TRACE_COUNTER_INTERVAL: seconds, 0.001 to 3600; default 1. */
static int64_t tt_env_interval(void)
{
	const char *v = getenv("TALLY_TRACE_COUNTER_INTERVAL");
	char *end;
	double x;

	if (!v || !*v)
		return TT_INTERVAL_NS;
	x = strtod(v, &end);
	if (*end || !(x >= 0.001) || x > 3600)
		return TT_INTERVAL_NS;
	return (int64_t)(x * 1e9);
}

/* TALLY_TRACE_FLUSHER=1: start the flusher thread at open. */
static void tt_env_flusher(struct tally_trace *tr)
{
	const char *v = getenv("TALLY_TRACE_FLUSHER");

	if (v && !strcmp(v, "1"))
		(void)tally_trace_flusher(tr, 1);
}

/*
 * Whether a collector can be at @ep, before libzmq sees it: libzmq takes
 * endpoints no collector can be at (inproc:// is this process's own, a
 * tcp port above 65535 wraps around, "-1" passes) and fails others with
 * errno values of its own (udp://: ENOCOMPATPROTO).
 * Return: 0, or the errno value for tally_trace_open().
 */
static int tt_check_endpoint(const char *ep)
{
	const char *colon;
	size_t n;

	if (!strncmp(ep, "ipc://", 6))
		return ep[6] ? 0 : EINVAL;
	if (strncmp(ep, "tcp://", 6))
		return strstr(ep, "://") ? EPROTONOSUPPORT : EINVAL;
	colon = strrchr(ep + 6, ':');
	if (!colon || colon == ep + 6)
		return EINVAL;
	n = strspn(colon + 1, "0123456789");
	if (!n || n > 5 || colon[1 + n] || atol(colon + 1) < 1 ||
	    atol(colon + 1) > 65535)
		return EINVAL;
	return 0;
}

/* libzmq's own errno values (ZMQ_HAUSNUMERO + n) as the man page's. */
static int tt_errno(int err)
{
	if (err == ENOCOMPATPROTO)
		return EPROTONOSUPPORT;
	return err >= ZMQ_HAUSNUMERO ? EINVAL : err;
}

/* @s as sent: valid UTF-8 (repaired), at most TALLY_WIRE_MAX_STR bytes,
 * NUL-terminated, in @out (TALLY_WIRE_MAX_STR + 1 bytes). Its length. */
static size_t tt_wire_str(const char *s, char *out)
{
	size_t len = tt_clip(s, strlen(s), out, TALLY_WIRE_MAX_STR);

	out[len] = '\0';
	return len;
}

struct tally_trace *tally_trace_open(const char *endpoint, const char *trace_id)
{
	struct tally_trace *tr;
	char host[TALLY_WIRE_MAX_STR + 1] = "";
	char *id;
	int err;

	pthread_once(&tt_once, tt_init_once);
	if (endpoint && !*endpoint) {
		errno = EINVAL; /* "" is a mistake, NULL asks for discovery */
		return NULL;
	}
	tr = calloc(1, sizeof(*tr));
	if (!tr)
		goto out_nomem;
	tr->endpoint = endpoint ? strdup(endpoint) : tt_discover_endpoint();
	id = trace_id && *trace_id ? strdup(trace_id) : tt_default_trace_id();
	tr->trace = malloc(TALLY_WIRE_MAX_STR + 1);
	if (!tr->endpoint || !id || !tr->trace) {
		free(id);
		goto out_free_nomem;
	}
	err = tt_check_endpoint(tr->endpoint);
	if (err) {
		free(id);
		goto out_free;
	}
	tr->trace_len = (uint16_t)tt_wire_str(id, tr->trace);
	free(id);
	if (gethostname(host, sizeof(host) - 1) < 0)
		host[0] = '\0';
	tr->host_len = (uint16_t)tt_wire_str(host, tr->host);
	tr->rank = tt_env_rank();
	tr->linger_ms = tt_env_int("TALLY_TRACE_LINGER_MS", TT_LINGER_MS, 0,
				   TT_LINGER_MAX_MS);
	tr->sndhwm = tt_env_int("TALLY_TRACE_SNDHWM", TT_SNDHWM, 1, 1 << 24);
	tr->interval_ns = tt_env_interval();
	tr->announce_len = tt_env_announce(tr->announce);
	pthread_mutex_init(&tr->flusher_lock, NULL);
	pthread_cond_init(&tr->flusher_cond, NULL);
	atomic_init(&tr->next_block, 1);

	/* Create the context now and check the endpoint's syntax with a
	 * first socket, so a typo fails here rather than drop every event. */
	pthread_mutex_lock(&tt_lock);
	tr->pid = (uint32_t)getpid();
	tr->ctx = zmq_ctx_new();
	if (tr->ctx) {
		void *s = tt_socket(tr);

		if (!s) {
			err = tt_errno(zmq_errno());
			zmq_ctx_term(tr->ctx);
			pthread_mutex_unlock(&tt_lock);
			goto out_free;
		}
		zmq_setsockopt(s, ZMQ_LINGER, &(int){ 0 }, sizeof(int));
		zmq_close(s);
	}
	tr->next = tt_tracers;
	tt_tracers = tr;
	pthread_mutex_unlock(&tt_lock);
	tt_env_flusher(tr);
	return tr;

out_free_nomem:
	err = ENOMEM;
out_free:
	free(tr->endpoint);
	free(tr->trace);
	free(tr);
	errno = err;
	return NULL;
out_nomem:
	errno = ENOMEM;
	return NULL;
}

int tally_trace_stats(struct tally_trace *tr, struct tally_trace_stats *st)
{
	if (!tr || !st) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&tt_lock);
	st->events = tr->gone_events;
	st->dropped = tr->gone_dropped;
	st->unreported = tr->gone_pending;
	for (struct tt_thread *t = tr->threads; t; t = t->tr_next) {
		st->events += tt_get(&t->conn->events);
		st->dropped += tt_get(&t->conn->dropped);
		st->unreported += tt_get(&t->conn->pending);
	}
	for (struct tt_conn *c = tr->retired; c; c = c->next) {
		st->events += tt_get(&c->events);
		st->dropped += tt_get(&c->dropped);
		st->unreported += tt_get(&c->pending);
	}
	pthread_mutex_unlock(&tt_lock);
	return 0;
}

const char *tally_trace_endpoint(const struct tally_trace *tr)
{
	return tr ? tr->endpoint : NULL;
}

const char *tally_trace_id(const struct tally_trace *tr)
{
	return tr ? tr->trace : NULL;
}

static int64_t tt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int tt_left_ms(int64_t deadline)
{
	int64_t left = deadline - tt_now_ms();

	return left > 0 ? (int)left : 0;
}

/*
 * Is a collector listening at @endpoint? Asked once, at close, with a
 * fresh socket and a monitor: the first connect either succeeds
 * (CONNECTED) or fails and schedules a retry (CONNECT_RETRIED), within
 * microseconds for ipc and a round trip for tcp. Monitoring the event
 * sockets for the whole run instead would need someone to read the
 * monitor: unread events eventually block libzmq's I/O thread.
 *
 * Return: false only when the connect was refused. No answer within
 * @wait_ms (an overloaded machine) counts as a collector: judging a live
 * one absent would throw queued events away uncounted, while the other
 * mistake costs at most the linger.
 */
static bool tt_probe(void *ctx, const char *endpoint, int wait_ms)
{
	void *s = zmq_socket(ctx, ZMQ_PUSH), *mon = zmq_socket(ctx, ZMQ_PAIR);
	char addr[64];
	bool up = true;
	int64_t deadline = tt_now_ms() + wait_ms;

	if (!s || !mon) {
		up = false;
		goto out_close;
	}
	snprintf(addr, sizeof(addr), "inproc://tally-trace-probe-%p", s);
	if (zmq_socket_monitor(s, addr,
			       ZMQ_EVENT_CONNECTED |
				       ZMQ_EVENT_CONNECT_RETRIED) < 0 ||
	    zmq_connect(mon, addr) < 0 || zmq_connect(s, endpoint) < 0) {
		up = false;
		goto out_close;
	}
	for (;;) {
		zmq_pollitem_t pi = { .socket = mon, .events = ZMQ_POLLIN };
		int64_t left = deadline - tt_now_ms();
		uint8_t ev[6];
		char uri[256];

		if (left <= 0 || zmq_poll(&pi, 1, (long)left) <= 0)
			break;
		/* frame 1: uint16 event (host order), uint32 value; 2: uri */
		if (zmq_recv(mon, ev, sizeof(ev), 0) < 2)
			break;
		zmq_recv(mon, uri, sizeof(uri), ZMQ_DONTWAIT);
		uint16_t e;

		memcpy(&e, ev, sizeof(e));
		if (e == ZMQ_EVENT_CONNECTED ||
		    e == ZMQ_EVENT_CONNECT_RETRIED) {
			up = e == ZMQ_EVENT_CONNECTED;
			break;
		}
	}
	zmq_socket_monitor(s, NULL, 0);
out_close:
	if (mon) {
		zmq_setsockopt(mon, ZMQ_LINGER, &(int){ 0 }, sizeof(int));
		zmq_close(mon);
	}
	if (s) {
		zmq_setsockopt(s, ZMQ_LINGER, &(int){ 0 }, sizeof(int));
		zmq_close(s);
	}
	return up;
}

/*
 * The CLOSE message (doc/wire-format.md), on a socket of its own that no
 * queue holds up, and sent before the threads' sockets are let go, so
 * that it arrives while the collector still knows this process: the drops
 * nobody reported yet (@dropped), how many events the process queued
 * (@queued) and when the first one was (@first_ns). The collector counts
 * the events that never arrive.
 * Return: whether it was queued.
 */
static bool tt_send_close(struct tally_trace *tr, uint64_t queued,
			  uint64_t first_ns, uint32_t dropped, int linger_ms)
{
	struct tt_source src = tt_source_of(tr);
	uint8_t m[TALLY_WIRE_MAX_MSG];
	struct timespec ts;
	void *s;
	size_t n;
	bool ok;

	s = tt_socket(tr);
	if (!s)
		return false;
	zmq_setsockopt(s, ZMQ_LINGER, &linger_ms, sizeof(linger_ms));
	clock_gettime(CLOCK_REALTIME, &ts);
	tt_msg_init(m, &src);
	n = tt_msg_fill(m, &src, TALLY_WIRE_CLOSE, dropped,
			(int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, queued,
			first_ns, "", 0);
	ok = zmq_send(s, m, n, ZMQ_DONTWAIT) == (int)n;
	zmq_close(s);
	return ok;
}

int tally_trace_close_stats(struct tally_trace *tr,
			    struct tally_trace_close_stats *st)
{
	struct tally_trace_close_stats fin = { 0 };
	struct tt_conn *conns, *c;
	uint64_t first_ns, lost_max, pending, carried = 0;
	void *ctx;

	if (!tr) {
		if (st)
			*st = fin;
		return 0;
	}
	/* the last snapshots go out with the threads' queues */
	(void)tally_trace_flusher(tr, 0);
	if (atomic_load(&tr->ncounters) && tr->ctx)
		(void)tally_trace_flush(tr);
	pthread_mutex_lock(&tt_lock);
	for (struct tally_trace **p = &tt_tracers; *p; p = &(*p)->next) {
		if (*p == tr) {
			*p = tr->next;
			break;
		}
	}
	/* Take every conn; the threads free their (now dead) states. */
	conns = tr->retired;
	for (struct tt_thread *t = tr->threads, *tn; t; t = tn) {
		tn = t->tr_next;
		t->conn->next = conns;
		conns = t->conn;
		t->conn = NULL;
		atomic_store(&t->tr, NULL);
	}
	tr->threads = NULL;
	tr->retired = NULL;
	ctx = tr->ctx;
	pthread_mutex_unlock(&tt_lock);

	/* the threads are done with the conns: plain reads from here on */
	fin.events = tr->gone_events;
	fin.dropped = tr->gone_dropped;
	pending = tr->gone_pending;
	first_ns = tr->gone_first_ns;
	lost_max = 0;
	for (c = conns; c; c = c->next) {
		fin.events += tt_get(&c->events);
		fin.dropped += tt_get(&c->dropped);
		pending += tt_get(&c->pending);
		first_ns = tt_min_ts(first_ns, c->first_ns);
		lost_max += tt_conn_lost_max(tr, c);
	}
	fin.discarded_max = tr->gone_lost_max;

	if (ctx) {
		bool up = tr->linger_ms > 0 &&
			  tt_probe(ctx, tr->endpoint,
				   tr->linger_ms < TT_PROBE_MS ? tr->linger_ms
							       : TT_PROBE_MS);
		int64_t deadline = tt_now_ms() + tr->linger_ms;
		uint64_t queued = fin.events - fin.dropped;

		if (up && (queued || pending)) {
			uint32_t n = pending > UINT32_MAX ? UINT32_MAX
							  : (uint32_t)pending;

			if (tt_send_close(tr, queued, first_ns, n,
					  tt_left_ms(deadline)))
				carried = n;
		}
		/* one deadline for everything: each step gets what is left */
		for (; conns; conns = c) {
			c = conns->next;
			tt_conn_free(conns, up ? tt_left_ms(deadline) : 0);
		}
		/*
		 * Waits at most the lingers set above: returning before the
		 * deadline means every socket delivered its queue (to the
		 * kernel, which hands it on). ZeroMQ does not say how much of
		 * a queue went out before its linger expired, hence a bound.
		 */
		while (zmq_ctx_term(ctx) < 0 && errno == EINTR)
			;
		if (!up || tt_now_ms() >= deadline)
			fin.discarded_max += lost_max;
	}
	fin.unreported = pending - carried;
	for (struct tt_counter *k = atomic_load(&tr->counters), *kn; k;
	     k = kn) {
		kn = k->next;
		free(k->key);
		free(k);
	}
	free(tr->snap_c);
	free(tr->snap_v);
	pthread_mutex_destroy(&tr->flusher_lock);
	pthread_cond_destroy(&tr->flusher_cond);
	free(tr->endpoint);
	free(tr->trace);
	free(tr);
	if (st)
		*st = fin;
	return 0;
}

int tally_trace_close(struct tally_trace *tr)
{
	return tally_trace_close_stats(tr, NULL);
}
