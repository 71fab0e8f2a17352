/* SPDX-License-Identifier: MIT */
/*
 * t/unit/trace-counters.c - libtally-trace's wire v2 against a PULL socket
 * decoded by the collector's own decoder (plugins/input/zmq_trace/decode.c):
 * span attributes sent with the END, plain spans still version 1, the
 * source announcement, counters and gauges with snapshots, and 8 threads
 * adding to one counter concurrently: the sums that arrive are exact.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include <tally/trace.h>
#include <tally/wire.h>

#include "tap.h"
#include "../../plugins/input/zmq_trace/decode.h"

static void *ctx, *pull;
static char endpoint[128];
static struct zmq_trace_event ev;
static uint8_t version; /* of the last message received */

/* Receive and decode one message within @ms; false on timeout or if the
 * collector's decoder rejects it (a failed test then). */
static bool recv_ev(int ms)
{
	static uint8_t b[TALLY_WIRE_MAX_MSG2 + 1];
	zmq_pollitem_t pi = { .socket = pull, .events = ZMQ_POLLIN };
	enum zmq_trace_err err;
	int n;

	if (zmq_poll(&pi, 1, ms) != 1)
		return false;
	n = zmq_recv(pull, b, sizeof(b), 0);
	if (n < 0 || n > (int)sizeof(b))
		return false;
	err = zmq_trace_decode(b, (size_t)n, &ev);
	if (err) {
		diag("the collector's decoder rejects a message: %s",
		     zmq_trace_err_reason(err));
		return false;
	}
	version = b[2];
	return true;
}

/* The next span event (BEGIN or END), skipping COUNTER messages. */
static bool recv_span(int ms)
{
	while (recv_ev(ms))
		if (!ev.counter && !ev.close)
			return true;
	return false;
}

static const struct tally_attr *attr(const char *key)
{
	for (uint32_t i = 0; i < ev.nattrs; i++)
		if (!strcmp(ev.attrs[i].key, key))
			return &ev.attrs[i];
	return NULL;
}

static void test_attrs(void)
{
	struct tally_trace *tr = tally_trace_open(endpoint, "attrs");
	const struct tally_attr *a;
	uint64_t outer, inner;
	char big[400];

	outer = tally_trace_begin(tr, "outer");
	cmp_ok(tally_trace_attr_i64(tr, "bytes", 100), "==", 0, "attr on outer");
	inner = tally_trace_begin(tr, "inner");
	cmp_ok(tally_trace_attr_i64(tr, "bytes", 7), "==", 0, "int64");
	cmp_ok(tally_trace_attr_i64(tr, "bytes", 4096), "==", 0,
	       "set again: replaced");
	cmp_ok(tally_trace_attr_f64(tr, "ratio", 0.5), "==", 0, "double");
	memset(big, 'x', sizeof(big));
	big[sizeof(big) - 1] = '\0';
	cmp_ok(tally_trace_attr_str(tr, "file", big), "==", 0, "long string");
	cmp_ok(tally_trace_attr_bool(tr, "ok", 1), "==", 0, "bool");
	cmp_ok(tally_trace_span_attr_i64(tr, outer, "items", 3), "==", 0,
	       "on the outer span by id");
	ok(tally_trace_attr_i64(tr, "9bad", 1) < 0 && errno == EINVAL,
	   "a key starting with a digit: EINVAL");
	ok(tally_trace_attr_f64(tr, "nan", 0.0 / 0.0) < 0 && errno == EINVAL,
	   "NaN: EINVAL");
	ok(tally_trace_span_attr_i64(tr, 999999, "x", 1) < 0 &&
		   errno == ENOENT,
	   "a span not open: ENOENT");
	tally_trace_end(tr, inner);
	tally_trace_end(tr, outer);
	ok(tally_trace_attr_i64(tr, "x", 1) < 0 && errno == ENOENT,
	   "no open span: ENOENT");
	tally_trace_close(tr);

	ok(recv_span(5000) && ev.phase == TALLY_SPAN_BEGIN && version == 1,
	   "BEGIN outer: version 1");
	ok(recv_span(5000) && ev.phase == TALLY_SPAN_BEGIN && version == 1 &&
		   ev.nattrs == 0,
	   "BEGIN inner: version 1, no attribute");
	if (!ok(recv_span(5000) && ev.phase == TALLY_SPAN_END &&
			version == 2 && !strcmp(ev.name, "inner"),
		"END inner: version 2"))
		return;
	cmp_ok(ev.nattrs, "==", 4, "four attributes");
	a = attr("bytes");
	ok(a && a->type == TALLY_ATTR_T_INT && a->i == 4096, "bytes = 4096");
	a = attr("ratio");
	ok(a && a->type == TALLY_ATTR_T_DOUBLE && a->d == 0.5, "ratio = 0.5");
	a = attr("file");
	ok(a && a->type == TALLY_ATTR_T_STRING && strlen(a->s) == 256,
	   "file cut to 256 bytes");
	a = attr("ok");
	ok(a && a->type == TALLY_ATTR_T_BOOL && a->b, "ok = true");
	if (!ok(recv_span(5000) && ev.phase == TALLY_SPAN_END &&
			!strcmp(ev.name, "outer"),
		"END outer"))
		return;
	cmp_ok(ev.nattrs, "==", 2, "its two attributes, not inner's");
	a = attr("bytes");
	ok(a && a->i == 100, "bytes = 100");
	a = attr("items");
	ok(a && a->i == 3, "items = 3");
}

static void test_bounds(void)
{
	struct tally_trace *tr = tally_trace_open(endpoint, "bounds");
	char key[16];
	int i;

	tally_trace_begin(tr, "s");
	for (i = 0; i < 32; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		if (tally_trace_attr_i64(tr, key, i))
			break;
	}
	cmp_ok(i, "==", 32, "32 attributes kept");
	ok(tally_trace_attr_i64(tr, "k32", 1) < 0 && errno == E2BIG,
	   "a 33rd: E2BIG");
	cmp_ok(tally_trace_attr_i64(tr, "k5", 50), "==", 0,
	   "replacing one still works");
	tally_trace_end_name(tr, "s");
	tally_trace_close(tr);
	recv_span(5000);
	ok(recv_span(5000) && ev.nattrs == 32 && attr("k5")->i == 50,
	   "the END carries the 32, k5 replaced");
}

#define NTHREADS 8
#define NADDS	 100000

static struct tally_trace *shared;

static void *adder(void *arg)
{
	long me = (long)arg;

	for (int i = 0; i < NADDS; i++) {
		tally_trace_counter_add(shared, "calls", "op=send", 1);
		if (i % 10000 == 0) {
			/* events carry snapshots now and then */
			uint64_t s = tally_trace_begin(shared, "work");

			tally_trace_end(shared, s);
		}
	}
	tally_trace_counter_add(shared, "bytes", me % 2 ? "peer=1" : "peer=0",
				(int64_t)me);
	return NULL;
}

static void test_counters(void)
{
	pthread_t th[NTHREADS];
	double sum_calls = 0, sum_p0 = 0, sum_p1 = 0, gauge = -1;
	int64_t gauge_ns = INT64_MIN;
	int counter_msgs = 0, bad = 0;

	setenv("TALLY_TRACE_COUNTER_INTERVAL", "0.001", 1);
	shared = tally_trace_open(endpoint, "ctr");
	unsetenv("TALLY_TRACE_COUNTER_INTERVAL");
	ok(shared, "open");
	ok(tally_trace_counter_add(shared, "calls", "op=send", -1) < 0 &&
		   errno == EINVAL,
	   "a negative delta: EINVAL");
	ok(tally_trace_counter_add(shared, "calls", "host=x", 1) < 0 &&
		   errno == EINVAL,
	   "a reserved label: EINVAL");
	ok(tally_trace_counter_add(shared, "calls", "a=1,b=2,c=3,d=4,e=5",
				   1) < 0 &&
		   errno == EINVAL,
	   "five labels: EINVAL");
	ok(tally_trace_gauge_set(shared, "depth", NULL, 1.0 / 0.0) < 0 &&
		   errno == EINVAL,
	   "an infinite gauge: EINVAL");
	cmp_ok(tally_trace_gauge_set(shared, "depth", NULL, 1.5), "==", 0,
	       "gauge set");
	cmp_ok(tally_trace_flush(shared), "==", 0, "flush");
	cmp_ok(tally_trace_gauge_set(shared, "depth", NULL, 2.5), "==", 0,
	       "gauge set again");
	for (long i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, adder, (void *)i);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	tally_trace_close(shared);

	/* until quiet: a CLOSE may arrive ahead of the last messages */
	while (recv_ev(1000)) {
		if (ev.counter)
			counter_msgs++;
		for (uint32_t i = 0; i < ev.ncounters; i++) {
			const struct zmq_trace_counter *c = &ev.counters[i];

			if (!strcmp(c->name, "calls") && c->nlabels == 1 &&
			    !strcmp(c->labels[0].value, "send"))
				sum_calls += (double)c->delta;
			else if (!strcmp(c->name, "bytes") &&
				 !strcmp(c->labels[0].value, "0"))
				sum_p0 += (double)c->delta;
			else if (!strcmp(c->name, "bytes"))
				sum_p1 += (double)c->delta;
			else if (strcmp(c->name, "depth") ||
				 c->kind != TALLY_WIRE_GAUGE)
				bad++;
			else if (ev.ts_ns >= gauge_ns) { /* else overtaken */
				gauge = c->gauge;
				gauge_ns = ev.ts_ns;
			}
		}
	}
	ok(counter_msgs >= 2, "COUNTER messages at flush and close (%d)",
	   counter_msgs);
	ok(sum_calls == NTHREADS * NADDS,
	   "8 threads x 100000 adds: the deltas sum to exactly %d (%.0f)",
	   NTHREADS * NADDS, sum_calls);
	ok(sum_p0 == 0 + 2 + 4 + 6 && sum_p1 == 1 + 3 + 5 + 7,
	   "two label sets, two series (%.0f, %.0f)", sum_p0, sum_p1);
	/* threads send on sockets of their own: the newest level is the
	 * one with the latest timestamp, not the last to arrive */
	ok(gauge == 2.5, "the gauge's newest level (%g)", gauge);
	cmp_ok(bad, "==", 0, "nothing else");
}

static void test_announce(void)
{
	struct tally_trace *tr;

	setenv("SLURM_LOCALID", "3", 1);
	setenv("CUDA_VISIBLE_DEVICES", "2,3", 1);
	tr = tally_trace_open(endpoint, "ann");
	unsetenv("SLURM_LOCALID");
	unsetenv("CUDA_VISIBLE_DEVICES");
	tally_trace_end(tr, tally_trace_begin(tr, "s"));
	tally_trace_close(tr);
	/* the earlier tracers' last messages may still come first, and
	 * this one's CLOSE, on a socket of its own, too */
	while (recv_ev(5000) && (strcmp(ev.trace, "ann") || ev.close))
		;
	if (!ok(!strcmp(ev.trace, "ann") && ev.counter && version == 2,
		"first: a COUNTER message"))
		return;
	cmp_ok(ev.ncounters, "==", 0, "with no counter");
	cmp_ok(ev.nsource, "==", 2, "two source attributes");
	ok(!strcmp(ev.source[0].key, "local_rank") && ev.source[0].i == 3,
	   "local_rank 3");
	ok(!strcmp(ev.source[1].key, "cuda_visible_devices") &&
		   !strcmp(ev.source[1].s, "2,3"),
	   "cuda_visible_devices 2,3");
	ok(recv_span(5000) && ev.phase == TALLY_SPAN_BEGIN && version == 1,
	   "then the BEGIN, version 1");
}

int main(void)
{
	const char *dir = tap_tmpdir("trace-counters");
	int hwm = 0;

	plan(NO_PLAN);
	unsetenv("SLURM_LOCALID");
	unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
	unsetenv("ROCR_VISIBLE_DEVICES");
	unsetenv("HIP_VISIBLE_DEVICES");
	unsetenv("CUDA_VISIBLE_DEVICES");
	snprintf(endpoint, sizeof(endpoint), "ipc://%s/t.sock", dir);
	ctx = zmq_ctx_new();
	pull = zmq_socket(ctx, ZMQ_PULL);
	zmq_setsockopt(pull, ZMQ_RCVHWM, &hwm, sizeof(hwm));
	if (zmq_bind(pull, endpoint) < 0)
		bail_out("bind %s: %s", endpoint, zmq_strerror(errno));
	test_attrs();
	test_bounds();
	test_counters();
	test_announce();
	zmq_close(pull);
	zmq_ctx_term(ctx);
	return done_testing();
}
