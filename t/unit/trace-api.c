/* SPDX-License-Identifier: MIT */
/*
 * t/unit/trace-api.c - libtally-trace against an in-process PULL socket:
 * span nesting and ids, end by id and by name, the fields each message
 * carries, several threads, and drop accounting through close
 *
 * Messages are decoded with the field offsets of doc/wire-format.md; the
 * expected values come from what the test itself did (its pid, the tids
 * its threads read with gettid, the environment it set).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include <tally/trace.h>
#include <tally/wire.h>

#include "tap.h"

struct msg {
	int type;
	uint32_t dropped;
	int64_t ts;
	uint64_t id, parent;
	uint32_t pid, tid;
	int32_t rank;
	char trace[TALLY_WIRE_MAX_STR + 1];
	char name[TALLY_WIRE_MAX_STR + 1];
	char host[TALLY_WIRE_MAX_STR + 1];
	size_t name_len;
};

static void *ctx, *pull;
static char endpoint[128];

static const char *sockdir;	/* tap_tmpdir(): removed at exit */

/* Decode per doc/wire-format.md; false if the message is not valid. */
static bool decode(const uint8_t *b, size_t n, struct msg *m)
{
	size_t tl, nl, hl;

	if (n < 52 || b[0] != 0x74 || b[1] != 0x59 || b[2] != 1)
		return false;
	m->type = b[3];
	m->dropped = tally_wire_get32(b + 4);
	m->ts = (int64_t)tally_wire_get64(b + 8);
	m->id = tally_wire_get64(b + 16);
	m->parent = tally_wire_get64(b + 24);
	m->pid = tally_wire_get32(b + 32);
	m->tid = tally_wire_get32(b + 36);
	m->rank = (int32_t)tally_wire_get32(b + 40);
	tl = tally_wire_get16(b + 44);
	nl = tally_wire_get16(b + 46);
	hl = tally_wire_get16(b + 48);
	if (n != 52 + tl + nl + hl || tally_wire_get16(b + 50) != 0)
		return false;
	memcpy(m->trace, b + 52, tl);
	m->trace[tl] = '\0';
	memcpy(m->name, b + 52 + tl, nl);
	m->name[nl] = '\0';
	m->name_len = nl;
	memcpy(m->host, b + 52 + tl + nl, hl);
	m->host[hl] = '\0';
	return true;
}

/* CLOSE messages recv_msg() set aside: how many, and the last one. */
static int ncloses;
static struct msg last_close;

/*
 * Receive one event (BEGIN or END) within @ms; false on timeout or an
 * invalid message. CLOSE messages (sent by tally_trace_close()) are set
 * aside in last_close, and their drop counts kept in its dropped field.
 */
static bool recv_any(struct msg *m, int ms)
{
	static uint8_t b[TALLY_WIRE_MAX_MSG + 1];
	zmq_pollitem_t pi = { .socket = pull, .events = ZMQ_POLLIN };
	int n;

	if (zmq_poll(&pi, 1, ms) != 1)
		return false;
	n = zmq_recv(pull, b, sizeof(b), 0);
	if (n < 0 || !decode(b, (size_t)n, m))
		return false;
	if (m->type == TALLY_WIRE_CLOSE) {
		ncloses++;
		last_close = *m;
	}
	return true;
}

static bool recv_msg(struct msg *m, int ms)
{
	while (recv_any(m, ms))
		if (m->type != TALLY_WIRE_CLOSE)
			return true;
	return false;
}

/* Read up to the CLOSE of the tracer just closed (within 5 s). */
static void wait_close(void)
{
	struct msg m;

	while (recv_any(&m, 5000) && m.type != TALLY_WIRE_CLOSE)
		;
}

static void expect(const char *what, int type, const char *name, uint64_t id,
		   uint64_t parent)
{
	struct msg m;

	if (!ok(recv_msg(&m, 5000), "%s: received", what)) {
		skip(4, "nothing received");
		return;
	}
	cmp_ok(m.type, "==", type, "%s: type %d", what, type);
	is(m.name, name, "%s: name", what);
	cmp_ok(m.id, "==", id, "%s: span id %llu", what,
	       (unsigned long long)id);
	cmp_ok(m.parent, "==", parent, "%s: parent %llu", what,
	       (unsigned long long)parent);
}

static void test_sequence(void)
{
	struct tally_trace *tr;
	uint64_t a, b, c, b2, x;
	char host[256] = "";
	struct msg m;
	struct timespec t0, t1;

	setenv("PMIX_RANK", "12", 1);
	setenv("SLURM_JOB_ID", "4711", 1);
	tr = tally_trace_open(endpoint, NULL);
	if (!tr)
		bail_out("open %s: %s", endpoint, strerror(errno));
	is(tally_trace_endpoint(tr), endpoint, "endpoint as given");
	is(tally_trace_id(tr), "4711", "default trace id: SLURM_JOB_ID");

	clock_gettime(CLOCK_REALTIME, &t0);
	a = tally_trace_begin(tr, "a");
	clock_gettime(CLOCK_REALTIME, &t1);
	ok(a != 0, "begin a");
	ok(recv_msg(&m, 5000), "first message received");
	cmp_ok(m.type, "==", TALLY_WIRE_BEGIN, "BEGIN");
	cmp_ok(m.dropped, "==", 0, "nothing dropped");
	cmp_ok(m.id, "==", a, "span id as returned");
	cmp_ok(m.parent, "==", 0, "root span");
	cmp_ok(m.pid, "==", getpid(), "pid");
	cmp_ok(m.tid, "==", syscall(SYS_gettid), "tid of the main thread");
	cmp_ok(m.rank, "==", 12, "rank from PMIX_RANK");
	is(m.trace, "4711", "trace id");
	is(m.name, "a", "name");
	gethostname(host, sizeof(host) - 1);
	is(m.host, host, "hostname");
	ok(m.ts >= (int64_t)t0.tv_sec * 1000000000 + t0.tv_nsec &&
		   m.ts <= (int64_t)t1.tv_sec * 1000000000 + t1.tv_nsec,
	   "timestamp taken during the call (ns, CLOCK_REALTIME)");

	b = tally_trace_begin(tr, "b");
	expect("begin b", TALLY_WIRE_BEGIN, "b", b, a);
	c = tally_trace_begin(tr, "c");
	expect("begin c", TALLY_WIRE_BEGIN, "c", c, b);
	b2 = tally_trace_begin(tr, "b");
	expect("begin b again", TALLY_WIRE_BEGIN, "b", b2, c);
	ok(a != b && b != c && c != b2 && a != c && a != b2 && b != b2,
	   "span ids distinct");

	ok(tally_trace_end_name(tr, "b") == 0, "end_name b");
	expect("end_name ends the innermost b", TALLY_WIRE_END, "b", b2, c);
	ok(tally_trace_end(tr, b) == 0, "end b by id (out of order)");
	expect("end b carries name and parent", TALLY_WIRE_END, "b", b, a);
	x = tally_trace_begin(tr, "x");
	expect("c still open: the parent of x", TALLY_WIRE_BEGIN, "x", x, c);
	ok(tally_trace_end(tr, x) == 0, "end x");
	expect("end x", TALLY_WIRE_END, "x", x, c);

	errno = 0;
	ok(tally_trace_end_name(tr, "b") == -1 && errno == ENOENT,
	   "end_name of a name not open: ENOENT");
	errno = 0;
	ok(tally_trace_end(tr, 999999) == -1 && errno == ENOENT,
	   "end of an unknown id: ENOENT");
	expect("the END is sent anyway, without name", TALLY_WIRE_END, "",
	       999999, 0);
	errno = 0;
	ok(tally_trace_begin(tr, "") == 0 && errno == EINVAL,
	   "empty name: EINVAL");
	errno = 0;
	ok(tally_trace_begin(tr, NULL) == 0 && errno == EINVAL,
	   "NULL name: EINVAL");
	errno = 0;
	ok(tally_trace_end(tr, 0) == -1 && errno == EINVAL, "id 0: EINVAL");

	ok(tally_trace_end(tr, c) == 0, "end c");
	expect("end c", TALLY_WIRE_END, "c", c, b);
	ok(tally_trace_end(tr, a) == 0, "end a");
	expect("end a", TALLY_WIRE_END, "a", a, 0);
	ok(!recv_msg(&m, 100), "nothing else sent");
	tally_trace_close(tr);
	wait_close();
	unsetenv("PMIX_RANK");
	unsetenv("SLURM_JOB_ID");
}

/* Names longer than 1024 bytes are cut at a UTF-8 character boundary. */
static void test_long_names(void)
{
	static char name[1100], trace[1100];
	struct tally_trace *tr;
	struct msg m;
	uint64_t id;

	/* 1023 'n' then "é" (2 bytes): byte 1024 is inside the é */
	memset(name, 'n', 1023);
	memcpy(name + 1023, "\xc3\xa9zz", 5);
	memset(trace, 't', 1050);
	tr = tally_trace_open(endpoint, trace);
	id = tally_trace_begin(tr, name);
	ok(recv_msg(&m, 5000), "long name: received");
	cmp_ok(m.name_len, "==", 1023, "name cut before the é: 1023 bytes");
	cmp_ok(strlen(m.trace), "==", 1024, "trace id cut to 1024 bytes");
	ok(tally_trace_end_name(tr, name) == 0,
	   "end_name with the same long name finds the span");
	ok(recv_msg(&m, 5000) && m.id == id && m.name_len == 1023,
	   "its END carries the cut name");
	tally_trace_close(tr);
	wait_close();
}

/*
 * Ill-formed UTF-8 in a name or the trace id is sent as U+FFFD (the
 * collector would drop the whole message as bad_utf8, uncounted by the
 * client), the same way for end_name, so that it still finds the span.
 */
static void test_bad_utf8(void)
{
	struct tally_trace *tr;
	struct msg m;
	uint64_t id;

	tr = tally_trace_open(endpoint, "job\xff");
	is(tally_trace_id(tr), "job\xef\xbf\xbd",
	   "trace id as sent: U+FFFD for the bad byte");
	id = tally_trace_begin(tr, "bad\xffname\xe2\x82");
	ok(recv_msg(&m, 5000), "bad name: received");
	is(m.name, "bad\xef\xbf\xbdname\xef\xbf\xbd",
	   "name: each ill-formed part replaced");
	is(m.trace, "job\xef\xbf\xbd", "trace id repaired in the message");
	ok(tally_trace_end_name(tr, "bad\xffname\xe2\x82") == 0,
	   "end_name with the same bad name finds the span");
	ok(recv_msg(&m, 5000) && m.id == id && m.type == TALLY_WIRE_END &&
		   !strcmp(m.name, "bad\xef\xbf\xbdname\xef\xbf\xbd"),
	   "its END carries the repaired name");
	tally_trace_close(tr);
	wait_close();
}

#define NTHREADS 4
#define NPAIRS	 2000

struct worker {
	struct tally_trace *tr;
	uint32_t tid;
	uint64_t outer;
};

static void *worker_run(void *arg)
{
	struct worker *w = arg;

	w->tid = (uint32_t)syscall(SYS_gettid);
	w->outer = tally_trace_begin(w->tr, "outer");
	for (int i = 0; i < NPAIRS; i++)
		tally_trace_end(w->tr, tally_trace_begin(w->tr, "inner"));
	tally_trace_end(w->tr, w->outer);
	return NULL;
}

/* Each thread nests under its own spans; ids are unique process-wide. */
static void test_threads(void)
{
	struct worker w[NTHREADS];
	pthread_t th[NTHREADS];
	struct tally_trace *tr = tally_trace_open(endpoint, "threads");
	struct tally_trace_stats st;
	const int total = NTHREADS * (2 * NPAIRS + 2);
	uint64_t *ids = calloc(total, sizeof(*ids));
	int n = 0, bad_parent = 0, bad_tid = 0, dup = 0, dropped = 0;
	struct msg m;

	for (int i = 0; i < NTHREADS; i++) {
		w[i].tr = tr;
		pthread_create(&th[i], NULL, worker_run, &w[i]);
	}
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	/* threads have exited: their sockets were handed to the tracer */
	ok(tally_trace_stats(tr, &st) == 0, "stats after the threads exited");
	cmp_ok(st.events, "==", total, "%d events counted", total);
	/* 4002 messages per thread, below the default queue of 10000 */
	cmp_ok(st.dropped, "==", 0, "none dropped");
	while (n < total && recv_msg(&m, 5000)) {
		int k;

		dropped += m.dropped;
		for (k = 0; k < NTHREADS; k++)
			if (w[k].tid == m.tid)
				break;
		if (k == NTHREADS) {
			bad_tid++;
			continue;
		}
		if (m.type == TALLY_WIRE_BEGIN) {
			for (int j = 0; j < n; j++)
				dup += ids[j] == m.id;
			ids[n] = m.id;
		}
		if (!strcmp(m.name, "inner") && m.parent != w[k].outer)
			bad_parent++;
		if (!strcmp(m.name, "outer") && m.parent != 0)
			bad_parent++;
		n++;
	}
	cmp_ok(n, "==", total, "all received");
	cmp_ok(dropped, "==", 0, "no drops reported");
	cmp_ok(bad_tid, "==", 0, "every message has one of the threads' tid");
	cmp_ok(bad_parent, "==", 0, "every span's parent is its thread's");
	cmp_ok(dup, "==", 0, "span ids unique across threads");
	tally_trace_close(tr);
	wait_close();
	free(ids);
}

/*
 * A collector that does not read: with a send queue of 10 messages most
 * events are dropped. Once it reads again, received + the dropped counts
 * carried = events produced, including the drops after the last message
 * that got through (close's CLOSE message carries them, and says how many
 * events were queued).
 */
struct drainer {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool go;
	long received, dropped;
};

static void *drain_run(void *arg)
{
	struct drainer *d = arg;
	struct msg m;

	pthread_mutex_lock(&d->lock);
	while (!d->go)
		pthread_cond_wait(&d->cond, &d->lock);
	pthread_mutex_unlock(&d->lock);
	/*
	 * Until the CLOSE came and every event it says was queued arrived
	 * (the CLOSE, on a socket of its own, may overtake them): no timing,
	 * so a loaded machine cannot cut the count short. 60 s of silence
	 * ends it too, short: the sums below then fail.
	 */
	while (!(ncloses && d->received >= (long)last_close.id) &&
	       recv_any(&m, 60000)) {
		d->dropped += m.dropped;
		if (m.type != TALLY_WIRE_CLOSE)
			__atomic_add_fetch(&d->received, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void test_drop_accounting(void)
{
	struct drainer d = { .lock = PTHREAD_MUTEX_INITIALIZER,
			     .cond = PTHREAD_COND_INITIALIZER };
	struct tally_trace *tr;
	struct tally_trace_stats st;
	struct tally_trace_close_stats cs;
	pthread_t th;
	int hwm = 10;
	void *shared = pull;
	char ep[128];

	/*
	 * A receiver of its own with a queue of 10, set before it binds:
	 * libzmq 4.3.4 may use a freed pipe when ZMQ_RCVHWM changes while a
	 * peer (the last test's CLOSE connection) goes away.
	 */
	ncloses = 0;
	snprintf(ep, sizeof(ep), "ipc://%s/drops.sock", sockdir);
	pull = zmq_socket(ctx, ZMQ_PULL);
	if (!pull || zmq_setsockopt(pull, ZMQ_RCVHWM, &hwm, sizeof(hwm)) < 0 ||
	    zmq_bind(pull, ep) < 0)
		bail_out("bind %s: %s", ep, zmq_strerror(zmq_errno()));
	/* the linger out of the sums: close returns once all is delivered */
	setenv("TALLY_TRACE_SNDHWM", "10", 1);
	setenv("TALLY_TRACE_LINGER_MS", "60000", 1);
	tr = tally_trace_open(ep, "drops");
	unsetenv("TALLY_TRACE_SNDHWM");
	unsetenv("TALLY_TRACE_LINGER_MS");
	pthread_create(&th, NULL, drain_run, &d);
	/*
	 * The connection is up, so the queue is the pipe's, once the warmup
	 * span has arrived: waited for, not slept on (a 100 ms sleep). The
	 * drainer counts on from its two messages.
	 */
	tally_trace_end(tr, tally_trace_begin(tr, "warmup"));
	{
		struct msg m;
		int got = 0;

		while (got < 2 && recv_msg(&m, 60000)) {
			d.dropped += (long)m.dropped;
			got++;
		}
		cmp_ok(got, "==", 2, "the warmup span arrived");
		d.received = got;
	}
	for (int i = 0; i < 50000; i++)
		tally_trace_end(tr, tally_trace_begin(tr, "r"));
	tally_trace_stats(tr, &st);
	cmp_ok(st.events, "==", 100002, "100002 events produced");
	ok(st.dropped > 0, "some dropped (%llu) with a stalled collector",
	   (unsigned long long)st.dropped);
	ok(st.unreported > 0, "drops after the last queued message pending");
	pthread_mutex_lock(&d.lock);
	d.go = true;
	pthread_cond_signal(&d.cond);
	pthread_mutex_unlock(&d.lock);
	/*
	 * Close once the collector has caught up: libzmq 4.3 loses what sits
	 * in the socket when the sender goes while the receiver's queue is
	 * full, and with those messages the drops they carry (the collector
	 * counts the messages as undelivered; doc/wire-format.md). On a
	 * loaded machine the drainer may not have run yet.
	 */
	for (int ms = 0; ms < 60000 &&
			 __atomic_load_n(&d.received, __ATOMIC_RELAXED) <
				 (long)(st.events - st.dropped);
	     ms++)
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	tally_trace_close_stats(tr, &cs);
	pthread_join(th, NULL);
	cmp_ok(d.dropped, "==", st.dropped,
	       "the drop counts carried add up to the client's count");
	cmp_ok(d.received + d.dropped, "==", 100002,
	       "received (%ld) + carried drops (%ld) = produced", d.received,
	       d.dropped);
	cmp_ok(ncloses, "==", 1, "one CLOSE message");
	cmp_ok(last_close.id, "==", 100002 - st.dropped,
	       "CLOSE: the events queued");
	cmp_ok(last_close.name_len, "==", 0, "CLOSE: no name");
	is(last_close.trace, "drops", "CLOSE: the trace id");
	cmp_ok(cs.events, "==", 100002, "close stats: events");
	cmp_ok(cs.dropped, "==", st.dropped, "close stats: dropped");
	cmp_ok(cs.unreported, "==", 0, "close stats: every drop reported");
	cmp_ok(cs.discarded_max, "==", 0, "close stats: everything delivered");
	zmq_setsockopt(pull, ZMQ_LINGER, &(int){ 0 }, sizeof(int));
	zmq_close(pull);
	pull = shared;
}

/*
 * A collector that accepts the connection but never reads: close must
 * still return, after at most the linger (a hang here would be killed by
 * the test harness's time limit; the duration is only a diagnostic).
 */
static void test_stalled_close(const char *dir)
{
	char ep[128];
	void *stalled = zmq_socket(ctx, ZMQ_PULL);
	int hwm = 10;
	struct tally_trace *tr;
	struct tally_trace_stats st;
	struct tally_trace_close_stats cs;
	struct timespec t0, t1;

	snprintf(ep, sizeof(ep), "ipc://%s/stalled.sock", dir);
	zmq_setsockopt(stalled, ZMQ_RCVHWM, &hwm, sizeof(hwm));
	if (zmq_bind(stalled, ep) < 0)
		bail_out("bind %s: %s", ep, zmq_strerror(zmq_errno()));
	setenv("TALLY_TRACE_LINGER_MS", "300", 1);
	tr = tally_trace_open(ep, "stalled");
	unsetenv("TALLY_TRACE_LINGER_MS");
	for (int i = 0; i < 50000; i++)
		tally_trace_end(tr, tally_trace_begin(tr, "s"));
	tally_trace_stats(tr, &st);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ok(tally_trace_close_stats(tr, &cs) == 0,
	   "close returns with a collector that never reads");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	diag("close took %.3f s (linger 0.3 s)",
	     (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	/* 10 queued per side of the pipe, the rest dropped */
	cmp_ok(cs.events, "==", 100000, "stalled: events");
	cmp_ok(cs.dropped, "==", st.dropped, "stalled: dropped");
	ok(cs.discarded_max > 0 && cs.discarded_max <= 100000 - st.dropped,
	   "stalled: close says it may have discarded %llu of the %llu queued",
	   (unsigned long long)cs.discarded_max,
	   (unsigned long long)(100000 - st.dropped));
	zmq_setsockopt(stalled, ZMQ_LINGER, &(int){ 0 }, sizeof(int));
	zmq_close(stalled);
}

int main(void)
{
	plan(NO_PLAN);
	sockdir = tap_tmpdir("tally-trace-api");
	snprintf(endpoint, sizeof(endpoint), "ipc://%s/t.sock", sockdir);
	ctx = zmq_ctx_new();
	pull = zmq_socket(ctx, ZMQ_PULL);
	if (!pull || zmq_bind(pull, endpoint) < 0)
		bail_out("bind %s: %s", endpoint, zmq_strerror(zmq_errno()));

	test_sequence();
	test_long_names();
	test_bad_utf8();
	test_threads();
	test_drop_accounting();
	test_stalled_close(sockdir);

	zmq_close(pull);
	zmq_ctx_term(ctx);
	return done_testing();
}
