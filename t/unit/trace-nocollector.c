/* SPDX-License-Identifier: MIT */
/*
 * t/unit/trace-nocollector.c - no collector listening: a million begin/end
 * calls return, every event is accounted for, close returns and the
 * program exits normally
 *
 * Completion is the assertion (a hang fails the test through the harness's
 * timeout); the elapsed times are printed as diagnostics only.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tally/trace.h>

#include "tap.h"

#define SNDHWM 1000

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void run(const char *endpoint, long pairs)
{
	struct tally_trace *tr = tally_trace_open(endpoint, "nocoll");
	struct tally_trace_stats st;
	long zero_ids = 0, end_errors = 0;
	double t0, t1, t2;

	if (!ok(tr != NULL, "open %s with nobody listening", endpoint)) {
		diag("open: %s", strerror(errno));
		return;
	}
	t0 = now_s();
	for (long i = 0; i < pairs; i++) {
		uint64_t id = tally_trace_begin(tr, "region");

		zero_ids += id == 0;
		end_errors += tally_trace_end(tr, id) != 0;
	}
	t1 = now_s();
	cmp_ok(zero_ids, "==", 0, "every begin returned a span id");
	cmp_ok(end_errors, "==", 0, "every end found its span");
	ok(tally_trace_stats(tr, &st) == 0, "stats");
	cmp_ok(st.events, "==", 2 * pairs, "%ld events produced", 2 * pairs);
	/* at most the send queue (SNDHWM, plus what libzmq's pipe batching
	 * lets through) was queued; everything else was dropped, counted */
	cmp_ok(st.dropped, "<=", 2 * pairs, "dropped <= produced");
	cmp_ok(st.dropped, ">=", 2 * pairs - 2 * SNDHWM,
	       "all but the queue dropped: %llu",
	       (unsigned long long)st.dropped);
	cmp_ok(st.unreported, "==", st.dropped,
	       "no message got through to carry the drops");
	ok(tally_trace_close(tr) == 0, "close returns");
	t2 = now_s();
	diag("%s: %.1f ns per event, close %.3f s", endpoint,
	     (t1 - t0) * 1e9 / (2.0 * pairs), t2 - t1);
}

int main(void)
{
	char dir[] = "/tmp/tally-trace-nc-XXXXXX", ep[128];

	plan(NO_PLAN);
	if (!mkdtemp(dir))
		bail_out("mkdtemp: %s", strerror(errno));
	setenv("TALLY_TRACE_SNDHWM", "1000", 1);
	/* the socket file never exists */
	snprintf(ep, sizeof(ep), "ipc://%s/trace.sock", dir);
	run(ep, 500000);
	/* TCP port 1 on loopback: connection refused */
	run("tcp://127.0.0.1:1", 100000);
	rmdir(dir);

	/* a NULL tracer (failed open) is a no-op everywhere */
	errno = 0;
	ok(tally_trace_begin(NULL, "x") == 0 && errno == EINVAL,
	   "begin(NULL) = 0, EINVAL");
	ok(tally_trace_end(NULL, 1) == -1 && errno == EINVAL,
	   "end(NULL) = -1, EINVAL");
	ok(tally_trace_end_name(NULL, "x") == -1 && errno == EINVAL,
	   "end_name(NULL) = -1, EINVAL");
	ok(tally_trace_close(NULL) == 0, "close(NULL) = 0");

	/* a bad endpoint fails at open, not silently at every event */
	errno = 0;
	ok(!tally_trace_open("foo", "x") && errno == EINVAL,
	   "open(\"foo\"): EINVAL");
	errno = 0;
	ok(!tally_trace_open("bogus://x", "x") && errno == EPROTONOSUPPORT,
	   "open(\"bogus://x\"): EPROTONOSUPPORT");
	/* where no collector can be: refused, with the man page's errno */
	errno = 0;
	ok(!tally_trace_open("", "x") && errno == EINVAL,
	   "open(\"\"): EINVAL (NULL, not \"\", asks for discovery)");
	errno = 0;
	ok(!tally_trace_open("udp://127.0.0.1:5", "x") &&
		   errno == EPROTONOSUPPORT,
	   "open(\"udp://...\"): EPROTONOSUPPORT, not libzmq's own errno");
	errno = 0;
	ok(!tally_trace_open("inproc://x", "x") && errno == EPROTONOSUPPORT,
	   "open(\"inproc://x\"): EPROTONOSUPPORT");
	{
		static const char *const bad[] = {
			"tcp://127.0.0.1:99999",
			"tcp://127.0.0.1:65536",
			"tcp://127.0.0.1:-1",
			"tcp://127.0.0.1:0",
			"tcp://127.0.0.1:",
			"tcp://127.0.0.1",
			"tcp://:5",
			"ipc://",
			NULL,
		};

		for (int i = 0; bad[i]; i++) {
			errno = 0;
			ok(!tally_trace_open(bad[i], "x") && errno == EINVAL,
			   "open(\"%s\"): EINVAL", bad[i]);
		}
	}
	{
		struct tally_trace *tr =
			tally_trace_open("tcp://[::1]:65535", "x");

		ok(tr != NULL, "open(\"tcp://[::1]:65535\") works");
		tally_trace_close(tr);
	}
	memset(ep, 'a', sizeof(ep) - 1);
	ep[sizeof(ep) - 1] = '\0';
	memcpy(ep, "ipc:///tmp/", 11);
	errno = 0;
	ok(!tally_trace_open(ep, "x") && errno == ENAMETOOLONG,
	   "ipc path longer than sun_path: ENAMETOOLONG");
	return done_testing();
}
