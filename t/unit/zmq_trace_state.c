/* SPDX-License-Identifier: MIT */
/*
 * t/unit/zmq_trace_state.c - the zmq_trace state machine: nesting, depth
 * and parents, Omnistat id synthesis, orphan ends, eviction, abandonment
 * by pid and by silence, limits
 *
 * Events are fed in as decoded messages; the span records that come out
 * are printed in the capture output's line format and compared with
 * expected text worked out by hand from the rules in state.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tally/io.h>

#include "tap.h"
#include "../../plugins/input/zmq_trace/state.h"

#define MS  1000000ll
#define SEC 1000000000ll

static char out[16384];
static size_t outlen;
static int fail_emit;

static const char *flags_str(uint32_t f)
{
	static const struct {
		uint32_t bit;
		const char *name;
	} names[] = {
		{ TALLY_SPAN_ABANDONED, "abandoned" },
		{ TALLY_SPAN_ORPHAN_END, "orphan_end" },
		{ TALLY_SPAN_EVICTED, "evicted" },
		{ TALLY_SPAN_LOST_END, "lost_end" },
	};
	static char buf[64];
	size_t n = 0;

	if (!f)
		return "0";
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (f & names[i].bit)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s",
					      n ? "|" : "", names[i].name);
	}
	return buf;
}

/* One line per record, as the capture output with timestamps=true. */
static int sink_span(void *ctx, const struct tally_span *sp, int64_t ts)
{
	int n;

	(void)ctx;
	if (fail_emit)
		return -1;
	n = snprintf(out + outlen, sizeof(out) - outlen,
		     "span %s trace=%s name=%s id=%llu parent=%llu depth=%u "
		     "host=%s pid=%u tid=%u rank=%d flags=%s ts=%lld",
		     sp->phase == TALLY_SPAN_BEGIN ? "begin" : "end", sp->trace,
		     sp->name, (unsigned long long)sp->span_id,
		     (unsigned long long)sp->parent_id, sp->depth, sp->src.host,
		     sp->src.pid, sp->src.tid, sp->src.rank,
		     flags_str(sp->flags), (long long)ts);
	outlen += (size_t)n;
	if (sp->phase == TALLY_SPAN_END)
		outlen += (size_t)snprintf(out + outlen, sizeof(out) - outlen,
					   " begin=%lld",
					   (long long)sp->begin_ns);
	else if (sp->begin_ns != ts)
		outlen += (size_t)snprintf(out + outlen, sizeof(out) - outlen,
					   " BAD-begin_ns=%lld",
					   (long long)sp->begin_ns);
	for (uint32_t i = 0; i < sp->nvalues; i++) {
		const struct tally_attr *a = &sp->values[i];

		outlen += (size_t)snprintf(out + outlen, sizeof(out) - outlen,
					   " %s=", a->key);
		if (a->type == TALLY_ATTR_T_INT)
			outlen += (size_t)snprintf(out + outlen,
						   sizeof(out) - outlen, "%lld",
						   (long long)a->i);
		else if (a->type == TALLY_ATTR_T_DOUBLE)
			outlen += (size_t)snprintf(
				out + outlen, sizeof(out) - outlen, "%g", a->d);
		else if (a->type == TALLY_ATTR_T_STRING)
			outlen += (size_t)snprintf(out + outlen,
						   sizeof(out) - outlen, "'%s'",
						   a->s);
		else
			outlen += (size_t)snprintf(out + outlen,
						   sizeof(out) - outlen, "%s",
						   a->b ? "true" : "false");
	}
	out[outlen++] = '\n';
	out[outlen] = '\0';
	return 0;
}

static const struct zmq_trace_sink sink = { .span = sink_span };

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct tally_label *)a)->key,
		      ((const struct tally_label *)b)->key);
}

/* One line per sample: NAME{labels sorted} value ts, type letter first. */
static int sink_metric(void *ctx, enum tally_metric_type type, const char *name,
		       const struct tally_label *labels, size_t n, double value,
		       int64_t ts)
{
	struct tally_label l[16];

	(void)ctx;
	memcpy(l, labels, n * sizeof(*l));
	qsort(l, n, sizeof(*l), label_cmp);
	outlen += (size_t)snprintf(out + outlen, sizeof(out) - outlen, "%c %s{",
				   type == TALLY_COUNTER ? 'c'
				   : type == TALLY_GAUGE ? 'g'
							 : 'i',
				   name);
	for (size_t i = 0; i < n; i++)
		outlen += (size_t)snprintf(out + outlen, sizeof(out) - outlen,
					   "%s%s=%s", i ? "," : "", l[i].key,
					   l[i].value);
	outlen += (size_t)snprintf(out + outlen, sizeof(out) - outlen,
				   "} %.17g %lld\n", value, (long long)ts);
	return 0;
}

static const struct zmq_trace_sink msink = { .span = sink_span,
					     .metric = sink_metric };

static const char *take(void)
{
	static char copy[sizeof(out)];

	memcpy(copy, out, outlen + 1);
	outlen = 0;
	out[0] = '\0';
	return copy;
}

static bool dead_pids[65536];

static bool fake_alive(uint32_t pid)
{
	return !(pid < 65536 && dead_pids[pid]);
}

static struct zmq_trace_state *new_state(uint32_t max_open,
					 uint32_t max_sources)
{
	struct zmq_trace_state_opts o = {
		.local_host = "here",
		.max_open_spans = max_open,
		.max_sources = max_sources,
		.abandon_ns = 60 * SEC,
		.idle_ns = 10 * SEC,
		.gone_grace_ns = 1 * SEC,
		.pid_alive = fake_alive,
	};

	return zmq_trace_state_new(&o);
}

/* A native event from process @pid (thread @tid) of trace "T" on "here". */
static struct zmq_trace_event *nat(enum tally_span_phase ph, uint32_t pid,
				   uint32_t tid, uint64_t id, uint64_t parent,
				   const char *name, int64_t ts)
{
	static struct zmq_trace_event ev;

	memset(&ev, 0, offsetof(struct zmq_trace_event, buf));
	ev.format = ZMQ_TRACE_NATIVE;
	ev.phase = ph;
	ev.ts_ns = ts;
	ev.span_id = id;
	ev.parent_id = parent;
	ev.pid = pid;
	ev.tid = tid;
	ev.rank = 2;
	ev.trace = "T";
	ev.trace_len = 1;
	ev.name = name;
	ev.name_len = (uint16_t)strlen(name);
	ev.host = "";
	return &ev;
}

static struct zmq_trace_event *omni(enum tally_span_phase ph, const char *trace,
				    const char *label, int64_t ts)
{
	static struct zmq_trace_event ev;

	memset(&ev, 0, offsetof(struct zmq_trace_event, buf));
	ev.format = ZMQ_TRACE_OMNISTAT;
	ev.phase = ph;
	ev.ts_ns = ts;
	ev.rank = -1;
	ev.trace = trace;
	ev.trace_len = (uint16_t)strlen(trace);
	ev.name = label;
	ev.name_len = (uint16_t)strlen(label);
	ev.host = "";
	return &ev;
}

#define B TALLY_SPAN_BEGIN
#define E TALLY_SPAN_END

static int apply(struct zmq_trace_state *st, struct zmq_trace_event *ev,
		 int64_t now)
{
	return zmq_trace_state_apply(st, ev, now, &sink);
}

/* Expected records stay one per line, as in a capture file. */
/* clang-format off */
static void test_nesting(void)
{
	struct zmq_trace_state *st = new_state(16, 16);

	ok(st, "state created");
	apply(st, nat(B, 100, 100, 1, 0, "main", 1000), 0);
	apply(st, nat(B, 100, 100, 2, 1, "solve", 2000), 0);
	apply(st, nat(B, 100, 100, 3, 2, "iter", 3000), 0);
	apply(st, nat(E, 100, 100, 3, 0, "", 4000), 0);
	apply(st, nat(E, 100, 100, 2, 1, "solve", 5000), 0);
	apply(st, nat(E, 100, 100, 1, 0, "main", 6000), 0);
	is(take(),
	   "span begin trace=T name=main id=1 parent=0 depth=0 host=here pid=100 tid=100 rank=2 flags=0 ts=1000\n"
	   "span begin trace=T name=solve id=2 parent=1 depth=1 host=here pid=100 tid=100 rank=2 flags=0 ts=2000\n"
	   "span begin trace=T name=iter id=3 parent=2 depth=2 host=here pid=100 tid=100 rank=2 flags=0 ts=3000\n"
	   "span end trace=T name=iter id=3 parent=2 depth=2 host=here pid=100 tid=100 rank=2 flags=0 ts=4000 begin=3000\n"
	   "span end trace=T name=solve id=2 parent=1 depth=1 host=here pid=100 tid=100 rank=2 flags=0 ts=5000 begin=2000\n"
	   "span end trace=T name=main id=1 parent=0 depth=0 host=here pid=100 tid=100 rank=2 flags=0 ts=6000 begin=1000\n",
	   "nested begin/end: depths 0 1 2, parents, name and begin on ends "
	   "taken from the begin");
	cmp_ok(zmq_trace_state_open_spans(st), "==", 0, "nothing left open");

	/* Thread 101 opens a root span while thread 100's span is open;
	 * thread 101 ends a span of thread 100 (allowed by the wire rules). */
	apply(st, nat(B, 100, 100, 10, 0, "a", 10), 0);
	apply(st, nat(B, 100, 101, 11, 0, "b", 11), 0);
	apply(st, nat(B, 100, 101, 12, 11, "c", 12), 0);
	apply(st, nat(E, 100, 101, 10, 0, "", 13), 0);
	apply(st, nat(E, 100, 101, 12, 11, "c", 14), 0);
	apply(st, nat(E, 100, 101, 11, 0, "b", 15), 0);
	is(take(),
	   "span begin trace=T name=a id=10 parent=0 depth=0 host=here pid=100 tid=100 rank=2 flags=0 ts=10\n"
	   "span begin trace=T name=b id=11 parent=0 depth=0 host=here pid=100 tid=101 rank=2 flags=0 ts=11\n"
	   "span begin trace=T name=c id=12 parent=11 depth=1 host=here pid=100 tid=101 rank=2 flags=0 ts=12\n"
	   "span end trace=T name=a id=10 parent=0 depth=0 host=here pid=100 tid=100 rank=2 flags=0 ts=13 begin=10\n"
	   "span end trace=T name=c id=12 parent=11 depth=1 host=here pid=100 tid=101 rank=2 flags=0 ts=14 begin=12\n"
	   "span end trace=T name=b id=11 parent=0 depth=0 host=here pid=100 tid=101 rank=2 flags=0 ts=15 begin=11\n",
	   "threads: roots per thread, an end from another thread closes the "
	   "span by id and keeps its begin's tid");

	/* A parent we never saw (its begin was dropped by the client). */
	apply(st, nat(B, 100, 100, 21, 20, "child", 30), 0);
	apply(st, nat(E, 100, 100, 21, 20, "child", 31), 0);
	is(take(),
	   "span begin trace=T name=child id=21 parent=20 depth=1 host=here pid=100 tid=100 rank=2 flags=0 ts=30\n"
	   "span end trace=T name=child id=21 parent=20 depth=1 host=here pid=100 tid=100 rank=2 flags=0 ts=31 begin=30\n",
	   "unknown parent: parent id kept, depth 1");
	zmq_trace_state_free(st);
}

static void test_keys(void)
{
	struct zmq_trace_state *st = new_state(16, 16);
	struct zmq_trace_event *ev;

	/* Same pid, host "" and host "here" are one source; another host
	 * or another trace id is another source with its own ids. */
	apply(st, nat(B, 7, 7, 1, 0, "x", 1), 0);
	ev = nat(B, 7, 7, 2, 1, "y", 2);
	ev->host = "here";
	ev->host_len = 4;
	apply(st, ev, 0);
	ev = nat(B, 7, 7, 3, 2, "z", 3);
	ev->host = "there";
	ev->host_len = 5;
	apply(st, ev, 0);
	ev = nat(B, 7, 7, 4, 3, "w", 4);
	ev->trace = "U";
	apply(st, ev, 0);
	is(take(),
	   "span begin trace=T name=x id=1 parent=0 depth=0 host=here pid=7 tid=7 rank=2 flags=0 ts=1\n"
	   "span begin trace=T name=y id=2 parent=1 depth=1 host=here pid=7 tid=7 rank=2 flags=0 ts=2\n"
	   "span begin trace=T name=z id=3 parent=2 depth=1 host=there pid=7 tid=7 rank=2 flags=0 ts=3\n"
	   "span begin trace=U name=w id=4 parent=3 depth=1 host=here pid=7 tid=7 rank=2 flags=0 ts=4\n",
	   "sources keyed by (trace, host, pid); empty host is this host");
	cmp_ok(zmq_trace_state_sources(st), "==", 3, "three sources");
	cmp_ok(zmq_trace_state_open_spans(st), "==", 4, "four open spans");
	zmq_trace_state_free(st);
}

static void test_omnistat(void)
{
	struct zmq_trace_state *st = new_state(16, 16);

	apply(st, omni(B, "3", "solver", 1 * MS), 0);
	apply(st, omni(B, "3", "io", 2 * MS), 0);
	apply(st, omni(B, "4", "solver", 3 * MS), 0);
	apply(st, omni(E, "3", "io", 4 * MS), 0);
	apply(st, omni(E, "3", "solver", 5 * MS), 0);
	apply(st, omni(E, "4", "solver", 6 * MS), 0);
	is(take(),
	   "span begin trace=3 name=solver id=1 parent=0 depth=0 host=here pid=0 tid=0 rank=-1 flags=0 ts=1000000\n"
	   "span begin trace=3 name=io id=2 parent=1 depth=1 host=here pid=0 tid=0 rank=-1 flags=0 ts=2000000\n"
	   "span begin trace=4 name=solver id=1 parent=0 depth=0 host=here pid=0 tid=0 rank=-1 flags=0 ts=3000000\n"
	   "span end trace=3 name=io id=2 parent=1 depth=1 host=here pid=0 tid=0 rank=-1 flags=0 ts=4000000 begin=2000000\n"
	   "span end trace=3 name=solver id=1 parent=0 depth=0 host=here pid=0 tid=0 rank=-1 flags=0 ts=5000000 begin=1000000\n"
	   "span end trace=4 name=solver id=1 parent=0 depth=0 host=here pid=0 tid=0 rank=-1 flags=0 ts=6000000 begin=3000000\n",
	   "Omnistat: ids synthesized per trace, nesting by order of starts");

	/* Ends out of order: Omnistat keys by (trace, label). */
	apply(st, omni(B, "3", "a", 10), 0);
	apply(st, omni(B, "3", "b", 11), 0);
	apply(st, omni(E, "3", "a", 12), 0);
	apply(st, omni(B, "3", "c", 13), 0);
	apply(st, omni(E, "3", "b", 14), 0);
	apply(st, omni(E, "3", "c", 15), 0);
	is(take(),
	   "span begin trace=3 name=a id=3 parent=0 depth=0 host=here pid=0 tid=0 rank=-1 flags=0 ts=10\n"
	   "span begin trace=3 name=b id=4 parent=3 depth=1 host=here pid=0 tid=0 rank=-1 flags=0 ts=11\n"
	   "span end trace=3 name=a id=3 parent=0 depth=0 host=here pid=0 tid=0 rank=-1 flags=0 ts=12 begin=10\n"
	   "span begin trace=3 name=c id=5 parent=4 depth=2 host=here pid=0 tid=0 rank=-1 flags=0 ts=13\n"
	   "span end trace=3 name=b id=4 parent=3 depth=1 host=here pid=0 tid=0 rank=-1 flags=0 ts=14 begin=11\n"
	   "span end trace=3 name=c id=5 parent=4 depth=2 host=here pid=0 tid=0 rank=-1 flags=0 ts=15 begin=13\n",
	   "Omnistat: an end closes its label wherever it sits");

	/* The same label started twice: the end closes the newest. */
	apply(st, omni(B, "3", "r", 20), 0);
	apply(st, omni(B, "3", "r", 21), 0);
	apply(st, omni(E, "3", "r", 22), 0);
	apply(st, omni(E, "3", "r", 23), 0);
	apply(st, omni(E, "3", "r", 24), 0);
	is(take(),
	   "span begin trace=3 name=r id=6 parent=0 depth=0 host=here pid=0 tid=0 rank=-1 flags=0 ts=20\n"
	   "span begin trace=3 name=r id=7 parent=6 depth=1 host=here pid=0 tid=0 rank=-1 flags=0 ts=21\n"
	   "span end trace=3 name=r id=7 parent=6 depth=1 host=here pid=0 tid=0 rank=-1 flags=0 ts=22 begin=21\n"
	   "span end trace=3 name=r id=6 parent=0 depth=0 host=here pid=0 tid=0 rank=-1 flags=0 ts=23 begin=20\n"
	   "span end trace=3 name=r id=8 parent=0 depth=0 host=here pid=0 tid=0 rank=-1 flags=orphan_end ts=24 begin=0\n",
	   "Omnistat: repeated label nests; a third end is an orphan with a "
	   "fresh id");
	cmp_ok(zmq_trace_state_counters(st)->orphan_end, "==", 1,
	       "orphan counted");

	/* A native sender with pid 0 does not mix with Omnistat messages. */
	apply(st, nat(B, 0, 0, 1, 0, "n", 30), 0);
	apply(st, omni(B, "T", "o", 31), 0);
	is(take(),
	   "span begin trace=T name=n id=1 parent=0 depth=0 host=here pid=0 tid=0 rank=2 flags=0 ts=30\n"
	   "span begin trace=T name=o id=1 parent=0 depth=0 host=here pid=0 tid=0 rank=-1 flags=0 ts=31\n",
	   "formats are separate sources");
	zmq_trace_state_free(st);
}

static void test_orphans(void)
{
	struct zmq_trace_state *st = new_state(16, 16);

	apply(st, nat(B, 5, 5, 1, 0, "outer", 100), 0);
	apply(st, nat(E, 5, 5, 9, 1, "lost", 200), 0);
	apply(st, nat(E, 5, 5, 8, 0, "", 300), 0);
	apply(st, nat(E, 5, 6, 7, 3, "x", 400), 0);
	is(take(),
	   "span begin trace=T name=outer id=1 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=0 ts=100\n"
	   "span end trace=T name=lost id=9 parent=1 depth=1 host=here pid=5 tid=5 rank=2 flags=orphan_end ts=200 begin=0\n"
	   "span end trace=T name=x id=7 parent=3 depth=1 host=here pid=5 tid=6 rank=2 flags=orphan_end ts=400 begin=0\n",
	   "orphan ends: flagged, the end's own name/parent/tid, depth from "
	   "the parent when open, begin 0; one without a name is not emitted");
	cmp_ok(zmq_trace_state_counters(st)->orphan_end, "==", 3,
	       "three orphans counted, the nameless one too");
	cmp_ok(zmq_trace_state_open_spans(st), "==", 1, "outer still open");
	zmq_trace_state_free(st);
}

static void test_eviction(void)
{
	struct zmq_trace_state *st = new_state(2, 16);

	apply(st, nat(B, 5, 5, 1, 0, "a", 1), 0);
	apply(st, nat(B, 5, 5, 2, 1, "b", 2), 0);
	apply(st, nat(B, 5, 5, 3, 2, "c", 3), 0);
	apply(st, nat(E, 5, 5, 3, 2, "c", 4), 0);
	apply(st, nat(E, 5, 5, 1, 0, "a", 5), 0);
	is(take(),
	   "span begin trace=T name=a id=1 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=0 ts=1\n"
	   "span begin trace=T name=b id=2 parent=1 depth=1 host=here pid=5 tid=5 rank=2 flags=0 ts=2\n"
	   "span end trace=T name=a id=1 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=evicted ts=3 begin=1\n"
	   "span begin trace=T name=c id=3 parent=2 depth=2 host=here pid=5 tid=5 rank=2 flags=0 ts=3\n"
	   "span end trace=T name=c id=3 parent=2 depth=2 host=here pid=5 tid=5 rank=2 flags=0 ts=4 begin=3\n"
	   "span end trace=T name=a id=1 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=orphan_end ts=5 begin=0\n",
	   "cap 2: the third begin evicts the oldest first; its late end is "
	   "an orphan");
	cmp_ok(zmq_trace_state_counters(st)->evicted, "==", 1, "evicted");
	cmp_ok(zmq_trace_state_open_spans(st), "==", 1, "b still open");
	zmq_trace_state_free(st);
}

static void test_ring(void)
{
	struct zmq_trace_state *st = new_state(1000, 16);
	char name[64];
	int good = 1;

	/* 40 nested spans (the ring grows past its first 8 slots), long
	 * names for some (stored off the ring), then end #17 in the middle,
	 * then all others innermost first. */
	for (int i = 1; i <= 40; i++) {
		snprintf(name, sizeof(name), i % 3 ? "s%d" :
			 "a-rather-long-region-name-past-the-inline-slot-%d", i);
		apply(st, nat(B, 5, 5, (uint64_t)i, (uint64_t)i - 1, name, i),
		      0);
	}
	take();
	apply(st, nat(E, 5, 5, 17, 16, "", 100), 0);
	is(take(),
	   "span end trace=T name=s17 id=17 parent=16 depth=16 host=here pid=5 tid=5 rank=2 flags=0 ts=100 begin=17\n",
	   "a span in the middle ends");
	for (int i = 40; i >= 1; i--) {
		char want[256];
		const char *got;

		if (i == 17)
			continue;
		snprintf(name, sizeof(name), i % 3 ? "s%d" :
			 "a-rather-long-region-name-past-the-inline-slot-%d", i);
		apply(st, nat(E, 5, 5, (uint64_t)i, 0, "", 200 + i), 0);
		snprintf(want, sizeof(want),
			 "span end trace=T name=%s id=%d parent=%d depth=%d "
			 "host=here pid=5 tid=5 rank=2 flags=0 ts=%d "
			 "begin=%d\n",
			 name, i, i - 1, i - 1, 200 + i, i);
		got = take();
		if (strcmp(got, want)) {
			diag("got  %swant %s", got, want);
			good = 0;
		}
	}
	ok(good, "the other 39 end with their names, parents and depths");
	cmp_ok(zmq_trace_state_open_spans(st), "==", 0, "all closed");
	cmp_ok(zmq_trace_state_counters(st)->orphan_end, "==", 0, "no orphan");
	zmq_trace_state_free(st);
}

static void test_abandon_pid(void)
{
	struct zmq_trace_state *st = new_state(16, 16);
	struct zmq_trace_event *ev;

	apply(st, nat(B, 300, 300, 1, 0, "main", 10), 0);
	apply(st, nat(B, 300, 300, 2, 1, "inner", 20), 0);
	ev = nat(B, 300, 300, 1, 0, "remote", 30);
	ev->host = "there";
	ev->host_len = 5;
	apply(st, ev, 0);
	apply(st, nat(B, 301, 301, 1, 0, "alive", 40), 0);
	take();
	dead_pids[300] = true;

	cmp_ok(zmq_trace_state_check(st, SEC / 2, 5000, false, &sink), "==",
	       0, "dead, but silent for less than the grace: kept");
	is(take(), "", "nothing emitted");

	cmp_ok(zmq_trace_state_check(st, SEC, 6000, false, &sink), "==", 2,
	       "after the grace period: two spans abandoned");
	is(take(),
	   "span end trace=T name=inner id=2 parent=1 depth=1 host=here pid=300 tid=300 rank=2 flags=abandoned ts=20 begin=20\n"
	   "span end trace=T name=main id=1 parent=0 depth=0 host=here pid=300 tid=300 rank=2 flags=abandoned ts=20 begin=10\n",
	   "innermost first, at its last event: no check found it running "
	   "since; the remote pid 300 and the live pid 301 are left alone");
	cmp_ok(zmq_trace_state_counters(st)->abandoned, "==", 2, "counted");
	cmp_ok(zmq_trace_state_sources(st), "==", 2, "the dead source is gone");

	dead_pids[301] = true;
	apply(st, nat(B, 301, 301, 2, 1, "late", 50), SEC);
	take();
	cmp_ok(zmq_trace_state_check(st, SEC + 1, 7000, false, &sink), "==",
	       0, "a message 1 ns ago defers the check");
	cmp_ok(zmq_trace_state_check(st, SEC + 2, 8000, true, &sink), "==", 2,
	       "final: no grace period");
	is(take(),
	   "span end trace=T name=late id=2 parent=1 depth=1 host=here pid=301 tid=301 rank=2 flags=abandoned ts=6000 begin=50\n"
	   "span end trace=T name=alive id=1 parent=0 depth=0 host=here pid=301 tid=301 rank=2 flags=abandoned ts=6000 begin=40\n",
	   "final check closes a dead process at once, at the last check "
	   "that found it running (6000), later than its last event");
	dead_pids[300] = dead_pids[301] = false;
	zmq_trace_state_free(st);
}

static uint32_t asked[4];
static unsigned nasked;

static bool all_dead(uint32_t pid)
{
	if (nasked < 4)
		asked[nasked++] = pid;
	return false;
}

/*
 * pid 0 and pids above INT32_MAX are no process kill() can ask about
 * (kill(0) is our process group, a negative pid more): only the silence
 * timeout closes them, even with a probe that calls everything dead.
 */
static void test_uncheckable_pids(void)
{
	struct zmq_trace_state_opts o = {
		.local_host = "here",
		.max_open_spans = 16,
		.max_sources = 16,
		.abandon_ns = 60 * SEC,
		.idle_ns = 10 * SEC,
		.gone_grace_ns = 1 * SEC,
		.pid_alive = all_dead,
	};
	struct zmq_trace_state *st = zmq_trace_state_new(&o);

	apply(st, nat(B, 0, 1, 1, 0, "zero", 10), 0);
	apply(st, nat(B, 0xffffffffu, 1, 1, 0, "max", 20), 0);
	apply(st, nat(B, 0x80000000u, 1, 1, 0, "neg", 30), 0);
	apply(st, nat(B, 0x7fffffffu, 1, 1, 0, "intmax", 40), 0);
	take();
	nasked = 0;
	cmp_ok(zmq_trace_state_check(st, 2 * SEC, 5000, true, &sink), "==", 1,
	       "final check: only pid INT32_MAX is asked and closed");
	is(take(),
	   "span end trace=T name=intmax id=1 parent=0 depth=0 host=here pid=2147483647 tid=1 rank=2 flags=abandoned ts=40 begin=40\n",
	   "pids 0, 2^31 and 2^32-1 stay open");
	ok(nasked == 1 && asked[0] == 0x7fffffffu,
	   "the probe was asked about pid 2147483647 only (%u calls)",
	   nasked);
	cmp_ok(zmq_trace_state_check(st, 60 * SEC, 6000, false, &sink), "==",
	       3, "abandon_timeout closes them");
	zmq_trace_state_free(st);
}

static void test_abandon_silence(void)
{
	struct zmq_trace_state *st = new_state(16, 16);
	struct zmq_trace_event *ev;

	ev = nat(B, 300, 300, 1, 0, "remote", 1000);
	ev->host = "there";
	ev->host_len = 5;
	apply(st, ev, 0);
	ev = nat(B, 300, 300, 2, 1, "inner", 1500);
	ev->host = "there";
	ev->host_len = 5;
	apply(st, ev, 5 * SEC);
	apply(st, omni(B, "3", "solver", 2000), 5 * SEC);
	apply(st, omni(E, "3", "solver", 2500), 5 * SEC);
	apply(st, omni(B, "3", "io", 3000), 30 * SEC);
	take();

	cmp_ok(zmq_trace_state_check(st, 64 * SEC, 9999999, false, &sink),
	       "==", 0, "59 s of silence: kept");
	cmp_ok(zmq_trace_state_sources(st), "==", 2, "both sources kept");
	cmp_ok(zmq_trace_state_check(st, 65 * SEC, 9999999, false, &sink),
	       "==", 2, "60 s of silence: abandoned");
	is(take(),
	   "span end trace=T name=inner id=2 parent=1 depth=1 host=there pid=300 tid=300 rank=2 flags=abandoned ts=1500 begin=1500\n"
	   "span end trace=T name=remote id=1 parent=0 depth=0 host=there pid=300 tid=300 rank=2 flags=abandoned ts=1500 begin=1000\n",
	   "a silent source ends at its last event's time");
	cmp_ok(zmq_trace_state_check(st, 90 * SEC, 9999999, false, &sink),
	       "==", 1, "the Omnistat trace after 60 s of silence too");
	is(take(),
	   "span end trace=3 name=io id=2 parent=0 depth=0 host=here pid=0 tid=0 rank=-1 flags=abandoned ts=3000 begin=3000\n",
	   "Omnistat span abandoned");
	cmp_ok(zmq_trace_state_sources(st), "==", 0, "no source left");
	zmq_trace_state_free(st);
}

/*
 * A full source table forgets its least recently active source, so that
 * a flood of forged (trace, pid) pairs cannot lock a real tracer out.
 */
static void test_source_limit(void)
{
	struct zmq_trace_state *st = new_state(16, 3);
	uint32_t real_gone = 0;

	apply(st, nat(B, 1, 1, 1, 0, "real", 10), 0);
	apply(st, nat(B, 2, 2, 1, 0, "x2", 20), 1);
	apply(st, nat(B, 2, 2, 2, 1, "y2", 25), 1);
	apply(st, nat(B, 3, 3, 1, 0, "x3", 30), 2);
	apply(st, nat(B, 1, 1, 2, 1, "busy", 40), 3); /* pid 1 active again */
	take();
	cmp_ok(apply(st, nat(B, 4, 4, 1, 0, "x4", 50), 4), "==", 0,
	       "a fourth source is taken in");
	is(take(),
	   "span end trace=T name=y2 id=2 parent=1 depth=1 host=here pid=2 tid=2 rank=2 flags=evicted ts=25 begin=25\n"
	   "span end trace=T name=x2 id=1 parent=0 depth=0 host=here pid=2 tid=2 rank=2 flags=evicted ts=25 begin=20\n"
	   "span begin trace=T name=x4 id=1 parent=0 depth=0 host=here pid=4 tid=4 rank=2 flags=0 ts=50\n",
	   "pid 2, the least recently active, made room: its spans ended "
	   "innermost first at its last event's time");
	cmp_ok(zmq_trace_state_counters(st)->source_limit, "==", 1,
	       "one source forgotten: source_limit");
	cmp_ok(zmq_trace_state_counters(st)->evicted, "==", 2,
	       "its two spans: evicted");
	cmp_ok(zmq_trace_state_sources(st), "==", 3, "still three sources");

	for (uint32_t pid = 100; pid < 1100; pid++) {
		apply(st, nat(B, pid, pid, 1, 0, "forged", 60), 5);
		if (strstr(take(), "name=busy id=2 parent=1 depth=1 host=here "
				   "pid=1 tid=1 rank=2 flags=evicted ts=40"))
			real_gone = pid;
	}
	cmp_ok(zmq_trace_state_counters(st)->source_limit, "==", 1001,
	       "1000 forged sources: each made room for the next");
	cmp_ok(zmq_trace_state_sources(st), "==", 3, "still three sources");
	cmp_ok(real_gone, "==", 101,
	       "a real tracer silent meanwhile is forgotten too (it is only "
	       "the least recently active): by the second forged source");

	/* pid 1 keeps sending among the forged ones: it is never evicted */
	for (uint32_t pid = 2000; pid < 3000; pid++) {
		apply(st, nat(B, pid, pid, 1, 0, "forged", 90), 8);
		apply(st, nat(B, 1, 1, pid, 0, "live", 90), 8);
		apply(st, nat(E, 1, 1, pid, 0, "live", 91), 8);
		take();
	}
	apply(st, nat(B, 1, 1, 5, 0, "still", 95), 9);
	apply(st, nat(E, 1, 1, 5, 0, "still", 96), 9);
	is(take(),
	   "span begin trace=T name=still id=5 parent=0 depth=0 host=here pid=1 tid=1 rank=2 flags=0 ts=95\n"
	   "span end trace=T name=still id=5 parent=0 depth=0 host=here pid=1 tid=1 rank=2 flags=0 ts=96 begin=95\n",
	   "an active tracer keeps its source through a flood of new ones");
	cmp_ok(zmq_trace_state_counters(st)->orphan_end, "==", 0,
	       "no orphan end");
	zmq_trace_state_free(st);
}

static void test_idle_and_limits(void)
{
	struct zmq_trace_state *st = new_state(16, 2);

	apply(st, nat(B, 1, 1, 1, 0, "a", 1), 0);
	apply(st, nat(E, 1, 1, 1, 0, "a", 2), 0);
	apply(st, nat(B, 2, 2, 1, 0, "b", 3), 0);
	take();

	zmq_trace_state_check(st, 9 * SEC, 0, false, &sink);
	cmp_ok(zmq_trace_state_sources(st), "==", 2, "idle 9 s: kept");
	zmq_trace_state_check(st, 10 * SEC, 0, false, &sink);
	cmp_ok(zmq_trace_state_sources(st), "==", 1,
	       "idle 10 s without open span: forgotten; the open one kept");
	is(take(), "", "forgetting emits nothing");
	cmp_ok(apply(st, nat(B, 3, 3, 1, 0, "c", 5), 0), "==", 0,
	       "room for a new source again");

	fail_emit = 1;
	apply(st, nat(E, 3, 3, 1, 0, "c", 6), 0);
	fail_emit = 0;
	cmp_ok(zmq_trace_state_counters(st)->emit_failed, "==", 1,
	       "a sink failure is counted");
	cmp_ok(zmq_trace_state_open_spans(st), "==", 1,
	       "and the state still closed the span (only b open)");
	zmq_trace_state_free(st);

	struct zmq_trace_state_opts bad = { .local_host = "h" };

	errno = 0;
	ok(!zmq_trace_state_new(&bad) && errno == EINVAL,
	   "zero limits: EINVAL");
}

/* The end of @ev, a native END from the same thread, reporting drops. */
static struct zmq_trace_event *gap(struct zmq_trace_event *ev,
				   uint32_t dropped)
{
	ev->dropped = dropped;
	return ev;
}

/*
 * A begin says which spans of its thread are still open: its parent and
 * the parent's ancestors. The others lost their ends (client drops, or
 * lost at a reload) and end at the begin's time, flagged lost_end.
 */
static void test_lost_ends(void)
{
	struct zmq_trace_state *st = new_state(16, 16);

	take();
	apply(st, nat(B, 5, 5, 1, 0, "e", 100), 0);
	apply(st, nat(B, 5, 5, 2, 0, "e", 300), 0); /* end of 1 lost */
	apply(st, nat(E, 5, 5, 2, 0, "e", 400), 0);
	is(take(),
	   "span begin trace=T name=e id=1 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=0 ts=100\n"
	   "span end trace=T name=e id=1 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=lost_end ts=300 begin=100\n"
	   "span begin trace=T name=e id=2 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=0 ts=300\n"
	   "span end trace=T name=e id=2 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=0 ts=400 begin=300\n",
	   "a root begin ends the thread's span whose end was lost, at its "
	   "own time: 200 ns counted, not until the process exits");

	apply(st, nat(B, 5, 5, 10, 0, "main", 1000), 0);
	apply(st, nat(B, 5, 5, 11, 10, "a", 1100), 0);
	apply(st, nat(B, 5, 5, 12, 10, "b", 1200), 0); /* end of a lost */
	apply(st, nat(B, 5, 5, 13, 0, "x", 1300), 0); /* b, main lost */
	apply(st, nat(E, 5, 5, 13, 0, "x", 1400), 0);
	is(take(),
	   "span begin trace=T name=main id=10 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=0 ts=1000\n"
	   "span begin trace=T name=a id=11 parent=10 depth=1 host=here pid=5 tid=5 rank=2 flags=0 ts=1100\n"
	   "span end trace=T name=a id=11 parent=10 depth=1 host=here pid=5 tid=5 rank=2 flags=lost_end ts=1200 begin=1100\n"
	   "span begin trace=T name=b id=12 parent=10 depth=1 host=here pid=5 tid=5 rank=2 flags=0 ts=1200\n"
	   "span end trace=T name=b id=12 parent=10 depth=1 host=here pid=5 tid=5 rank=2 flags=lost_end ts=1300 begin=1200\n"
	   "span end trace=T name=main id=10 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=lost_end ts=1300 begin=1000\n"
	   "span begin trace=T name=x id=13 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=0 ts=1300\n"
	   "span end trace=T name=x id=13 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=0 ts=1400 begin=1300\n",
	   "a sibling ends the span before it, its parent stays; a root "
	   "begin ends the whole stack, innermost first");
	cmp_ok(zmq_trace_state_counters(st)->lost_end, "==", 4,
	       "four lost ends counted");

	apply(st, nat(B, 5, 6, 20, 0, "w", 2000), 0);
	apply(st, nat(B, 5, 5, 21, 0, "p", 2100), 0);
	apply(st, nat(B, 5, 5, 23, 22, "c", 2200), 0);
	apply(st, nat(E, 5, 5, 23, 22, "c", 2300), 0);
	apply(st, nat(B, 5, 5, 24, 21, "d", 2400), 0);
	is(take(),
	   "span begin trace=T name=w id=20 parent=0 depth=0 host=here pid=5 tid=6 rank=2 flags=0 ts=2000\n"
	   "span begin trace=T name=p id=21 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=0 ts=2100\n"
	   "span begin trace=T name=c id=23 parent=22 depth=1 host=here pid=5 tid=5 rank=2 flags=0 ts=2200\n"
	   "span end trace=T name=c id=23 parent=22 depth=1 host=here pid=5 tid=5 rank=2 flags=0 ts=2300 begin=2200\n"
	   "span begin trace=T name=d id=24 parent=21 depth=1 host=here pid=5 tid=5 rank=2 flags=0 ts=2400\n",
	   "another thread's span is left alone; a parent never seen (22) "
	   "proves nothing: p stays open");
	cmp_ok(zmq_trace_state_open_spans(st), "==", 3, "w, p, d open");

	apply(st, nat(B, 7, 7, 30, 0, "a", 10), 0);
	apply(st, nat(B, 7, 7, 31, 30, "b", 20), 0);
	apply(st, nat(E, 7, 7, 30, 0, "a", 30), 0);
	apply(st, nat(B, 7, 7, 32, 31, "c", 40), 0);
	apply(st, nat(B, 8, 0, 40, 0, "u", 50), 0);
	apply(st, nat(B, 8, 0, 41, 0, "v", 60), 0);
	is(take(),
	   "span begin trace=T name=a id=30 parent=0 depth=0 host=here pid=7 tid=7 rank=2 flags=0 ts=10\n"
	   "span begin trace=T name=b id=31 parent=30 depth=1 host=here pid=7 tid=7 rank=2 flags=0 ts=20\n"
	   "span end trace=T name=a id=30 parent=0 depth=0 host=here pid=7 tid=7 rank=2 flags=0 ts=30 begin=10\n"
	   "span begin trace=T name=c id=32 parent=31 depth=2 host=here pid=7 tid=7 rank=2 flags=0 ts=40\n"
	   "span begin trace=T name=u id=40 parent=0 depth=0 host=here pid=8 tid=0 rank=2 flags=0 ts=50\n"
	   "span begin trace=T name=v id=41 parent=0 depth=0 host=here pid=8 tid=0 rank=2 flags=0 ts=60\n",
	   "a span ended out of order leaves its child open, as the client "
	   "does; an unknown thread (tid 0) proves nothing");
	cmp_ok(zmq_trace_state_counters(st)->lost_end, "==", 4,
	       "still four");
	zmq_trace_state_free(st);
}

/*
 * An end whose message reports client drops (a gap before it): the
 * thread's spans other than the ended span's ancestors are not proven
 * open any more and end there.
 */
static void test_gaps(void)
{
	struct zmq_trace_state *st = new_state(16, 16);

	apply(st, nat(B, 5, 5, 1, 0, "f", 100), 0);
	apply(st, nat(B, 5, 5, 2, 1, "g", 200), 0);
	/* lost: end of g, begin of h */
	apply(st, gap(nat(E, 5, 5, 3, 1, "h", 400), 2), 0);
	apply(st, nat(E, 5, 5, 1, 0, "f", 500), 0);
	is(take(),
	   "span begin trace=T name=f id=1 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=0 ts=100\n"
	   "span begin trace=T name=g id=2 parent=1 depth=1 host=here pid=5 tid=5 rank=2 flags=0 ts=200\n"
	   "span end trace=T name=g id=2 parent=1 depth=1 host=here pid=5 tid=5 rank=2 flags=lost_end ts=400 begin=200\n"
	   "span end trace=T name=h id=3 parent=1 depth=1 host=here pid=5 tid=5 rank=2 flags=orphan_end ts=400 begin=0\n"
	   "span end trace=T name=f id=1 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=0 ts=500 begin=100\n",
	   "an orphan end after a gap ends its thread's spans outside its "
	   "parent; the parent stays");

	apply(st, nat(B, 5, 5, 10, 0, "r", 1000), 0);
	apply(st, nat(B, 5, 5, 11, 10, "s", 1100), 0);
	apply(st, nat(B, 5, 5, 12, 11, "t", 1200), 0);
	/* lost: ends of t and s */
	apply(st, gap(nat(E, 5, 5, 10, 0, "r", 1500), 2), 0);
	is(take(),
	   "span begin trace=T name=r id=10 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=0 ts=1000\n"
	   "span begin trace=T name=s id=11 parent=10 depth=1 host=here pid=5 tid=5 rank=2 flags=0 ts=1100\n"
	   "span begin trace=T name=t id=12 parent=11 depth=2 host=here pid=5 tid=5 rank=2 flags=0 ts=1200\n"
	   "span end trace=T name=t id=12 parent=11 depth=2 host=here pid=5 tid=5 rank=2 flags=lost_end ts=1500 begin=1200\n"
	   "span end trace=T name=s id=11 parent=10 depth=1 host=here pid=5 tid=5 rank=2 flags=lost_end ts=1500 begin=1100\n"
	   "span end trace=T name=r id=10 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=0 ts=1500 begin=1000\n",
	   "an end after a gap ends the spans opened inside it first, "
	   "innermost first");

	apply(st, nat(B, 5, 5, 30, 0, "k", 3000), 0);
	apply(st, nat(B, 5, 6, 31, 0, "m", 3100), 0);
	apply(st, nat(B, 5, 6, 32, 31, "n", 3150), 0);
	apply(st, gap(nat(E, 5, 6, 30, 0, "", 3200), 3), 0);
	apply(st, gap(nat(E, 5, 6, 99, 0, "", 3300), 1), 0);
	is(take(),
	   "span begin trace=T name=k id=30 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=0 ts=3000\n"
	   "span begin trace=T name=m id=31 parent=0 depth=0 host=here pid=5 tid=6 rank=2 flags=0 ts=3100\n"
	   "span begin trace=T name=n id=32 parent=31 depth=1 host=here pid=5 tid=6 rank=2 flags=0 ts=3150\n"
	   "span end trace=T name=k id=30 parent=0 depth=0 host=here pid=5 tid=5 rank=2 flags=0 ts=3200 begin=3000\n",
	   "a gap reported with another thread's span, or with a nameless "
	   "end (ended by id from elsewhere), says nothing: m and n stay");
	cmp_ok(zmq_trace_state_counters(st)->lost_end, "==", 3,
	       "three lost ends counted");
	cmp_ok(zmq_trace_state_open_spans(st), "==", 2, "m and n open");
	zmq_trace_state_free(st);
}

/* Sums what an output would count: the time of every ended span. */
struct wall_sink {
	int64_t closed[2]; /* ns, per process */
	uint64_t begins[2], ends[2];
};

static int wall_span(void *ctx, const struct tally_span *sp, int64_t ts)
{
	struct wall_sink *w = ctx;
	int p = sp->src.pid == 11 ? 0 : 1;

	if (sp->phase == TALLY_SPAN_BEGIN) {
		w->begins[p]++;
	} else if (sp->begin_ns) {
		w->ends[p]++;
		w->closed[p] += ts - sp->begin_ns;
	}
	return 0;
}

/*
 * Two processes flood begin/end pairs, one every 1 us for 2 ms, and
 * their clients drop 60% of the events: whatever is lost, the time the
 * spans add up to stays within the processes' wall time (the issue: 1730
 * s for 12 process-seconds).
 */
static void test_flood_wall_time(void)
{
	struct zmq_trace_state *st = new_state(1024, 16);
	struct wall_sink w;
	struct zmq_trace_sink ws = { .span = wall_span, .ctx = &w };
	const int64_t step = 1000, n = 2000;
	uint32_t pending[2] = { 0, 0 };

	memset(&w, 0, sizeof(w));
	for (int64_t i = 0; i < n; i++) {
		for (uint32_t p = 0; p < 2; p++) {
			uint32_t pid = 11 + p;
			uint64_t id = (uint64_t)i / 2 + 1;
			struct zmq_trace_event *ev;

			if ((i * 7 + p) % 10 < 6) {
				pending[p]++;
				continue;
			}
			ev = nat(i % 2 ? E : B, pid, pid, id, 0, "f",
				 i * step);
			ev->dropped = pending[p];
			pending[p] = 0;
			zmq_trace_state_apply(st, ev, 0, &ws);
		}
	}
	/* both exit; the last check ends what is left at exit time */
	dead_pids[11] = dead_pids[12] = true;
	zmq_trace_state_check(st, 10 * SEC, n * step, true, &ws);
	dead_pids[11] = dead_pids[12] = false;
	for (int p = 0; p < 2; p++) {
		ok(w.closed[p] <= n * step,
		   "process %d: spans add up to %lld ns, within its %lld ns "
		   "of wall time",
		   p, (long long)w.closed[p], (long long)(n * step));
		cmp_ok(w.ends[p], "==", w.begins[p],
		       "process %d: every begin received was ended", p);
	}
	cmp_ok(zmq_trace_state_open_spans(st), "==", 0, "nothing open");
	ok(zmq_trace_state_counters(st)->lost_end > 0,
	   "lost ends counted: %llu",
	   (unsigned long long)zmq_trace_state_counters(st)->lost_end);
	zmq_trace_state_free(st);
}

/* A reload hands a state over with new limits: what no longer fits goes. */
static void test_retune(void)
{
	struct zmq_trace_state *st = new_state(4, 4);
	struct zmq_trace_state_opts o = {
		.local_host = "ignored",
		.max_open_spans = 2,
		.max_sources = 2,
		.abandon_ns = 60 * SEC,
		.idle_ns = 10 * SEC,
		.gone_grace_ns = 1 * SEC,
	};

	apply(st, nat(B, 2, 2, 1, 0, "x", 10), 0);
	apply(st, nat(B, 3, 3, 1, 0, "y", 20), 0);
	apply(st, nat(B, 1, 1, 1, 0, "a", 30), 0);
	apply(st, nat(B, 1, 1, 2, 1, "b", 40), 0);
	apply(st, nat(B, 1, 1, 3, 2, "c", 50), 0);
	take();
	cmp_ok(zmq_trace_state_retune(st, &o, &sink), "==", 0, "retuned");
	is(take(),
	   "span end trace=T name=x id=1 parent=0 depth=0 host=here pid=2 tid=2 rank=2 flags=evicted ts=10 begin=10\n"
	   "span end trace=T name=a id=1 parent=0 depth=0 host=here pid=1 tid=1 rank=2 flags=evicted ts=50 begin=30\n",
	   "2 sources: the least recently active one goes; 2 spans: the "
	   "oldest of pid 1 goes, at its last event's time");
	cmp_ok(zmq_trace_state_sources(st), "==", 2, "two sources left");
	cmp_ok(zmq_trace_state_open_spans(st), "==", 3, "y, b, c open");
	cmp_ok(zmq_trace_state_counters(st)->evicted, "==", 2, "evicted");
	cmp_ok(zmq_trace_state_counters(st)->source_limit, "==", 1,
	       "source_limit");
	apply(st, nat(B, 1, 1, 4, 3, "d", 60), 0);
	is(take(),
	   "span end trace=T name=b id=2 parent=1 depth=1 host=here pid=1 tid=1 rank=2 flags=evicted ts=60 begin=40\n"
	   "span begin trace=T name=d id=4 parent=3 depth=3 host=here pid=1 tid=1 rank=2 flags=0 ts=60\n",
	   "the new cap holds for new begins");
	o.max_sources = 0;
	errno = 0;
	ok(zmq_trace_state_retune(st, &o, &sink) < 0 && errno == EINVAL,
	   "a zero limit: EINVAL");
	cmp_ok(zmq_trace_state_open_spans(st), "==", 3, "and nothing changed");
	zmq_trace_state_free(st);
}

/* An instance removed by a reload closes what it holds, and says so. */
static void test_abandon_all(void)
{
	struct zmq_trace_state *st = new_state(16, 16);

	apply(st, nat(B, 1, 1, 1, 0, "a", 10), 0);
	apply(st, nat(B, 1, 1, 2, 1, "b", 20), 0);
	take();
	cmp_ok(zmq_trace_state_abandon_all(st, 999, &sink), "==", 2,
	       "two spans closed");
	is(take(),
	   "span end trace=T name=b id=2 parent=1 depth=1 host=here pid=1 tid=1 rank=2 flags=abandoned ts=999 begin=20\n"
	   "span end trace=T name=a id=1 parent=0 depth=0 host=here pid=1 tid=1 rank=2 flags=abandoned ts=999 begin=10\n",
	   "innermost first, at the given time, flagged abandoned");
	apply(st, nat(B, 2, 2, 1, 0, "x", 30), 0);
	apply(st, omni(B, "o", "y", 40), 0);
	apply(st, nat(E, 2, 2, 1, 0, "x", 50), 0);
	take();
	cmp_ok(zmq_trace_state_abandon_all(st, 999, &sink), "==", 1,
	       "the Omnistat span closed too");
	cmp_ok(zmq_trace_state_sources(st), "==", 0, "no source left");
	cmp_ok(zmq_trace_state_counters(st)->abandoned, "==", 3,
	       "three abandoned counted");
	zmq_trace_state_free(st);
}

/* clang-format on */

/* A CLOSE of pid @pid's tracer: @queued events queued, the first at @first. */
static struct zmq_trace_event *close_of(uint32_t pid, uint64_t queued,
					int64_t first, int64_t ts)
{
	struct zmq_trace_event *ev =
		nat(E, pid, pid, queued, (uint64_t)first, "", ts);

	ev->close = true;
	return ev;
}

static uint64_t undelivered(struct zmq_trace_state *st)
{
	return zmq_trace_state_counters(st)->undelivered;
}

/*
 * Sources whose tracers closed: events announced and not received are
 * counted once the source is done with, only when the source saw the
 * announced first event.
 */
static void test_undelivered(void)
{
	struct zmq_trace_state *st = new_state(16, 100);

	/* 10: 5 queued, 3 arrived (the CLOSE overtakes nothing) */
	apply(st, nat(B, 10, 10, 1, 0, "a", 100), 0);
	apply(st, nat(E, 10, 10, 1, 0, "a", 200), 0);
	apply(st, nat(B, 10, 10, 2, 0, "b", 300), 0);
	apply(st, close_of(10, 5, 100, 400), 0);
	/* 11: all arrived */
	apply(st, nat(B, 11, 11, 1, 0, "a", 10), 0);
	apply(st, nat(E, 11, 11, 1, 0, "a", 20), 0);
	apply(st, close_of(11, 2, 10, 30), 0);
	/* 12: the CLOSE first, its events after it */
	apply(st, close_of(12, 3, 10, 30), 0);
	apply(st, nat(B, 12, 12, 1, 0, "a", 10), 0);
	apply(st, nat(E, 12, 12, 1, 0, "a", 11), 0);
	apply(st, nat(B, 12, 12, 2, 0, "b", 12), 0);
	/* 13: the source did not see the first event (forgotten, or late) */
	apply(st, nat(B, 13, 13, 7, 0, "a", 50), 0);
	apply(st, nat(E, 13, 13, 7, 0, "a", 60), 0);
	apply(st, close_of(13, 5, 40, 70), 0);
	/* 15: two tracers of one trace in the process: 4 queued, 3 came */
	apply(st, close_of(15, 2, 5, 90), 0);
	apply(st, nat(B, 15, 15, 1, 0, "a", 3), 0);
	apply(st, nat(B, 15, 15, 2, 0, "b", 5), 0);
	apply(st, nat(E, 15, 15, 2, 0, "b", 6), 0);
	apply(st, close_of(15, 2, 3, 91), 0);
	take();
	zmq_trace_state_check(st, 0, 0, false, &sink);
	cmp_ok(undelivered(st), "==", 0, "nothing counted while sources live");

	/* 14: dead: counted when its source goes, not before */
	apply(st, nat(B, 14, 14, 1, 0, "a", 1), 0);
	apply(st, nat(E, 14, 14, 1, 0, "a", 2), 0);
	apply(st, nat(B, 14, 14, 2, 0, "b", 3), 0);
	apply(st, close_of(14, 4, 1, 4), 0);
	dead_pids[14] = true;
	zmq_trace_state_check(st, SEC / 2, 0, false, &sink);
	cmp_ok(undelivered(st), "==", 0, "dead, within its grace: not yet");
	zmq_trace_state_check(st, SEC, 0, false, &sink);
	cmp_ok(undelivered(st), "==", 1, "dead 14 forgotten: 4 queued, 3 came");
	dead_pids[14] = false;

	zmq_trace_state_check(st, SEC, 0, true, &sink);
	cmp_ok(undelivered(st), "==", 1 + 2 + 1,
	       "final: 10 lost 2, 15 lost 1; 11, 12 complete, 13 unknown");
	zmq_trace_state_check(st, SEC, 0, true, &sink);
	cmp_ok(undelivered(st), "==", 4, "counted once");
	cmp_ok(zmq_trace_state_counters(st)->orphan_end, "==", 0,
	       "a CLOSE is no span event");
	take();
	zmq_trace_state_free(st);
}

/*
 * The real check (the state's default): a child that exited and was not
 * reaped yet is a zombie, gone for its spans; kill(pid, 0) alone said it
 * ran (a container's init that never reaps kept regions open).
 */
static void test_pid_alive_zombie(void)
{
	int fd[2], status;
	pid_t pid;
	char c;

	if (pipe(fd) < 0)
		bail_out("pipe: %s", strerror(errno));
	pid = fork();
	if (pid == 0) {
		close(fd[0]);
		_exit(0); /* closes fd[1]: the parent's read returns 0 */
	}
	close(fd[1]);
	ok(pid > 0, "forked");
	while (read(fd[0], &c, 1) > 0)
		;
	close(fd[0]);
	/* exited (its pipe end closed with it) but not reaped: a zombie */
	for (int i = 0; i < 1000 && tally_pid_alive((uint32_t)pid); i++)
		usleep(10000);
	ok(!tally_pid_alive((uint32_t)pid), "a zombie is not alive");
	ok(tally_pid_alive((uint32_t)getpid()), "this process is");
	waitpid(pid, &status, 0);
	ok(!tally_pid_alive((uint32_t)pid), "reaped: gone");
}

/* v2: span attributes, counter series, source figures */
static void test_v2(void)
{
	struct zmq_trace_state_opts o = {
		.local_host = "here",
		.max_open_spans = 8,
		.max_sources = 8,
		.abandon_ns = 60 * SEC,
		.idle_ns = 10 * SEC,
		.gone_grace_ns = 1 * SEC,
		.max_counter_series = 3,
		.source_figures = true,
		.pid_alive = fake_alive,
	};
	struct zmq_trace_state *st = zmq_trace_state_new(&o);
	struct zmq_trace_event *ev;
	struct zmq_trace_counter *c;

	take();
	ev = nat(B, 10, 10, 1, 0, "io", 1000);
	ev->version = 2;
	ev->nsource = 2;
	ev->source[0] = TALLY_ATTR_INT("local_rank", 1);
	ev->source[1] = TALLY_ATTR_STRING("rocr_visible_devices", "0,1");
	zmq_trace_state_apply(st, ev, 0, &msink);
	ev = nat(E, 10, 10, 1, 0, "io", 2000);
	ev->version = 2;
	ev->dropped = 4;
	ev->nattrs = 2;
	ev->attrs[0] = TALLY_ATTR_INT("bytes", 4096);
	ev->attrs[1] = TALLY_ATTR_DOUBLE("ratio", 0.5);
	zmq_trace_state_apply(st, ev, 0, &msink);
	is(take(),
	   "i tally_trace_source_info{host=here,local_rank=1,pid=10,rank=2,"
	   "rocr_visible_devices=0,1,trace=T} 1 1000\n"
	   "span begin trace=T name=io id=1 parent=0 depth=0 host=here "
	   "pid=10 tid=10 rank=2 flags=0 ts=1000\n"
	   "span end trace=T name=io id=1 parent=0 depth=0 host=here "
	   "pid=10 tid=10 rank=2 flags=0 ts=2000 begin=1000 bytes=4096 "
	   "ratio=0.5\n",
	   "the announcement's info at once (its rank too); attributes of "
	   "an END land on its span record");

	/* a COUNTER message: a delta twice (labels in either order), a
	 * gauge, then a fourth series beyond max_counter_series = 3 */
	ev = nat(E, 10, 10, 0, 0, "", 3000);
	ev->version = 2;
	ev->counter = true;
	ev->ncounters = 2;
	c = &ev->counters[0];
	*c = (struct zmq_trace_counter){
		.name = "calls", .kind = 1, .nlabels = 2, .delta = 5
	};
	c->labels[0].key = "peer";
	c->labels[0].value = "3";
	c->labels[1].key = "op";
	c->labels[1].value = "send";
	c = &ev->counters[1];
	*c = (struct zmq_trace_counter){ .name = "depth",
					 .kind = 2,
					 .gauge = 2.5 };
	cmp_ok(zmq_trace_state_apply(st, ev, 0, &msink), "==", 0,
	       "a COUNTER message applies");
	c = &ev->counters[0];
	c->labels[0].key = "op";
	c->labels[0].value = "send";
	c->labels[1].key = "peer";
	c->labels[1].value = "3";
	c->delta = 7;
	ev->counters[1].gauge = 1.25;
	ev->ts_ns = 4000;
	zmq_trace_state_apply(st, ev, 0, &msink);
	is(take(),
	   "c tally_app_calls_total{host=here,op=send,peer=3,rank=2,trace=T}"
	   " 5 3000\n"
	   "g tally_app_depth{host=here,rank=2,trace=T} 2.5 3000\n"
	   "c tally_app_calls_total{host=here,op=send,peer=3,rank=2,trace=T}"
	   " 12 4000\n"
	   "g tally_app_depth{host=here,rank=2,trace=T} 1.25 4000\n",
	   "deltas add up per series, whatever the label order; a gauge "
	   "takes the level; no span record");
	/* a snapshot older than the level shown: another thread's socket
	 * delivered a newer one first */
	c->delta = 1;
	ev->counters[1].gauge = 9;
	ev->ts_ns = 3500;
	zmq_trace_state_apply(st, ev, 0, &msink);
	ev->counters[1].gauge = 0.5;
	ev->ts_ns = 4000;
	zmq_trace_state_apply(st, ev, 0, &msink);
	is(take(),
	   "c tally_app_calls_total{host=here,op=send,peer=3,rank=2,trace=T}"
	   " 13 3500\n"
	   "c tally_app_calls_total{host=here,op=send,peer=3,rank=2,trace=T}"
	   " 14 4000\n"
	   "g tally_app_depth{host=here,rank=2,trace=T} 0.5 4000\n",
	   "a gauge older than the level shown is stale: its delta counts, "
	   "its level does not; one as new as the level replaces it");
	c->delta = 7;
	ev->ncounters = 1;
	c->labels[1].value = "4"; /* a third series: fits */
	zmq_trace_state_apply(st, ev, 0, &msink);
	c->labels[1].value = "5"; /* a fourth: does not */
	zmq_trace_state_apply(st, ev, 0, &msink);
	is(take(),
	   "c tally_app_calls_total{host=here,op=send,peer=4,rank=2,trace=T}"
	   " 7 4000\n",
	   "a series beyond max_counter_series is dropped");
	cmp_ok(zmq_trace_state_counters(st)->counter_limit, "==", 1,
	       "and counted");
	cmp_ok(zmq_trace_state_open_spans(st), "==", 0, "no span opened");

	/* the check reports each source kept */
	zmq_trace_state_check(st, 2 * SEC, 77 * SEC, false, &msink);
	is(take(),
	   "c tally_trace_source_messages_total{host=here,pid=10,rank=2,"
	   "trace=T} 8 77000000000\n"
	   "c tally_trace_source_dropped_total{host=here,pid=10,rank=2,"
	   "trace=T} 4 77000000000\n"
	   "g tally_trace_source_last_seen_timestamp_seconds{host=here,"
	   "pid=10,rank=2,trace=T} 3.9999999999999998e-06 77000000000\n"
	   "i tally_trace_source_info{host=here,local_rank=1,pid=10,rank=2,"
	   "rocr_visible_devices=0,1,trace=T} 1 77000000000\n",
	   "per source: messages, client drops, last seen, announcement");

	/* idle: the source is forgotten with its series, room again */
	zmq_trace_state_check(st, 20 * SEC, 78 * SEC, false, &msink);
	is(take(), "", "a forgotten source is no longer reported");
	cmp_ok(zmq_trace_state_sources(st), "==", 0, "gone");
	c->labels[1].value = "6";
	ev->pid = 11;
	zmq_trace_state_apply(st, ev, 0, &msink);
	is(take(),
	   "c tally_app_calls_total{host=here,op=send,peer=6,rank=2,trace=T}"
	   " 7 4000\n",
	   "its series made room");
	zmq_trace_state_free(st);
}

int main(void)
{
	plan(NO_PLAN);
	test_pid_alive_zombie();
	test_nesting();
	test_keys();
	test_omnistat();
	test_orphans();
	test_eviction();
	test_ring();
	test_abandon_pid();
	test_uncheckable_pids();
	test_abandon_silence();
	test_source_limit();
	test_idle_and_limits();
	test_lost_ends();
	test_gaps();
	test_flood_wall_time();
	test_retune();
	test_abandon_all();
	test_undelivered();
	test_v2();
	return done_testing();
}
