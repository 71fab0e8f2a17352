// SPDX-License-Identifier: MIT
/*
 * t/unit/capture.c - the capture test output writes the documented format
 *
 * Every integration test compares capture files with text written by hand,
 * so each line kind is pinned down here, with the expected text derived
 * from the format in t/plugins/capture.c's header (numbers: C's %.17g,
 * e.g. 0.1 -> 0.10000000000000001; label values escaped as Prometheus
 * does: \\, \" and \n).
 */
#include "../plugins/capture.c"

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../core/core-internal.h"
#include "tap.h"

static char *slurp(const char *path)
{
	static char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* A capture instance writing to a fresh temporary file. */
static void capture_open(struct capture *c, char *path)
{
	int fd = mkstemp(path);

	if (fd < 0)
		bail_out("mkstemp %s failed", path);
	close(fd);
	memset(c, 0, sizeof(*c));
	c->path = path;
	if (capture_init(NULL, c) < 0)
		bail_out("capture_init %s failed", path);
}

static void add(int ret, const char *what)
{
	if (ret < 0)
		bail_out("building the batch: %s failed", what);
}

static void test_metrics(void)
{
	static const struct tally_bucket buckets[] = { { 0.5, 1 }, { 1, 3 } };
	static const struct tally_quantile qs[] = { { 0.5, 1.5 },
						    { 0.99, 3 } };
	char path[] = "/tmp/capture-unit-XXXXXX";
	struct tally_batch *b = tally_batch_new();
	struct tally_labels *ls;
	struct capture c;

	capture_open(&c, path);
	/* Given in reverse key order: the line lists them sorted. */
	ls = tally_labels_newv("b", "x\"y", "a", "1\\2\n3", NULL);
	add(tally_batch_add_metric(b, TALLY_GAUGE, "g", NULL, ls, 0.1, 1),
	    "gauge");
	tally_labels_unref(ls);
	add(tally_batch_add_metric(b, TALLY_COUNTER, "c_total", "help", NULL,
				   42, 1),
	    "counter");
	ls = tally_labels_newv("version", "1.0", NULL);
	add(tally_batch_add_metric(b, TALLY_INFO, "i_info", NULL, ls, 1, 1),
	    "info");
	tally_labels_unref(ls);
	add(tally_batch_add_metric(b, TALLY_GAUGE, "nan", NULL, NULL, NAN, 1),
	    "NaN");
	add(tally_batch_add_metric(b, TALLY_GAUGE, "pinf", NULL, NULL,
				   INFINITY, 1),
	    "+Inf");
	add(tally_batch_add_metric(b, TALLY_GAUGE, "ninf", NULL, NULL,
				   -INFINITY, 1),
	    "-Inf");
	add(tally_batch_add_metric(b, TALLY_GAUGE, "big", NULL, NULL, 1e21, 1),
	    "1e21");
	add(tally_batch_add_histogram(b, "h", NULL, NULL, buckets, 2, 4, 2.25,
				      1),
	    "histogram");
	add(tally_batch_add_summary(b, "s", NULL, NULL, qs, 2, 10, 20, 1),
	    "summary");

	ok(capture_write(NULL, &c, b) == 0, "write a batch of metrics");
	is(slurp(path),
	   "gauge g{a=\"1\\\\2\\n3\",b=\"x\\\"y\"} 0.10000000000000001\n"
	   "counter c_total 42\n"
	   "info i_info{version=\"1.0\"} 1\n"
	   "gauge nan NaN\n"
	   "gauge pinf +Inf\n"
	   "gauge ninf -Inf\n"
	   "gauge big 1e+21\n"
	   "histogram h count=4 sum=2.25 buckets=0.5:1,1:3,+Inf:4\n"
	   "summary s count=10 sum=20 "
	   "quantiles=0.5:1.5,0.98999999999999999:3\n",
	   "metric lines, flushed after the batch");
	capture_fini(NULL, &c);
	tally_batch_unref(b);
	unlink(path);
}

static const struct tally_span span_begin = {
	.trace = "job1",
	.name = "solve",
	.span_id = 7,
	.phase = TALLY_SPAN_BEGIN,
	.src = { .host = "n1", .pid = 100, .tid = 101, .rank = 3 },
};

static void test_spans(void)
{
	char path[] = "/tmp/capture-unit-XXXXXX";
	struct tally_batch *b = tally_batch_new();
	struct tally_span end = {
		.trace = "job1",
		.name = "inner",
		.span_id = 8,
		.parent_id = 7,
		.phase = TALLY_SPAN_END,
		.depth = 1,
		.flags = TALLY_SPAN_ABANDONED | TALLY_SPAN_EVICTED,
		.src = { .host = "n1", .pid = 100, .tid = 0, .rank = -1 },
	};
	struct capture c;

	capture_open(&c, path);
	add(tally_batch_add_span(b, &span_begin, 1), "span begin");
	add(tally_batch_add_span(b, &end, 2), "span end");
	end.flags = TALLY_SPAN_ORPHAN_END;
	add(tally_batch_add_span(b, &end, 3), "orphan end");
	ok(capture_write(NULL, &c, b) == 0, "write a batch of spans");
	is(slurp(path),
	   "span begin trace=job1 name=solve id=7 parent=0 depth=0 host=n1 "
	   "pid=100 tid=101 rank=3 flags=0\n"
	   "span end trace=job1 name=inner id=8 parent=7 depth=1 host=n1 "
	   "pid=100 tid=0 rank=-1 flags=abandoned|evicted\n"
	   "span end trace=job1 name=inner id=8 parent=7 depth=1 host=n1 "
	   "pid=100 tid=0 rank=-1 flags=orphan_end\n",
	   "span lines, flags joined with |");
	capture_fini(NULL, &c);
	tally_batch_unref(b);
	unlink(path);
}

static void test_options(void)
{
	char path[] = "/tmp/capture-unit-XXXXXX";
	struct tally_batch *b = tally_batch_new();
	struct tally_span end = span_begin;
	struct tally_labels *attrs = tally_labels_newv("k", "v", NULL);
	struct capture c;

	capture_open(&c, path);
	c.timestamps = c.source = c.attrs = true;
	tally_batch_set_source(b, "src", 1.0);
	add(tally_batch_add_metric(b, TALLY_GAUGE, "g", NULL, NULL, 1, 123),
	    "gauge");
	add(tally_batch_add_span(b, &span_begin, 3), "span begin");
	end.phase = TALLY_SPAN_END;
	end.begin_ns = 3;
	end.attrs = attrs;
	add(tally_batch_add_span(b, &end, 5), "span end");
	tally_labels_unref(attrs);
	ok(capture_write(NULL, &c, b) == 0, "write with every option on");
	is(slurp(path),
	   "src: gauge g 1 ts=123\n"
	   "src: span begin trace=job1 name=solve id=7 parent=0 depth=0 "
	   "host=n1 pid=100 tid=101 rank=3 flags=0 attrs={} ts=3\n"
	   "src: span end trace=job1 name=solve id=7 parent=0 depth=0 "
	   "host=n1 pid=100 tid=101 rank=3 flags=0 attrs={k=\"v\"} ts=5 "
	   "begin=3\n",
	   "source prefix, attrs, ts and begin");
	capture_fini(NULL, &c);
	tally_batch_unref(b);
	unlink(path);
}

/* The three non-cumulative forms and typed span values, one line each. */
static void test_forms(void)
{
	char path[] = "/tmp/capture-unit-XXXXXX";
	struct tally_batch *b = tally_batch_new();
	struct tally_attr v[] = { TALLY_ATTR_INT("bytes", -4096),
				  TALLY_ATTR_DOUBLE("self_seconds", 0.5),
				  TALLY_ATTR_STRING("file", "in.dat"),
				  TALLY_ATTR_BOOL("cached", false) };
	struct tally_span end = span_begin;
	struct capture c;

	capture_open(&c, path);
	c.attrs = true;
	add(tally_batch_add_delta(b, TALLY_COUNTER, "hits_total", NULL, NULL, 3,
				  0.25, 1),
	    "counter delta");
	add(tally_batch_add_delta(b, TALLY_GAUGE, "depth", NULL, NULL, -2, 1,
				  1),
	    "gauge delta");
	add(tally_batch_add_observation(b, TALLY_HISTOGRAM, "rt_seconds", NULL,
					NULL, 0.125, 0.5, 1),
	    "observation");
	add(tally_batch_add_set_member(b, "users", NULL, NULL, "bob", 1),
	    "set member");
	end.phase = TALLY_SPAN_END;
	end.values = v;
	end.nvalues = 4;
	add(tally_batch_add_span(b, &end, 2), "span end with typed values");
	ok(capture_write(NULL, &c, b) == 0, "write the batch");
	is(slurp(path),
	   "delta counter hits_total 3 rate=0.25\n"
	   "delta gauge depth -2 rate=1\n"
	   "observation histogram rt_seconds 0.125 rate=0.5\n"
	   "set gauge users member=bob\n"
	   "span end trace=job1 name=solve id=7 parent=0 depth=0 host=n1 "
	   "pid=100 tid=101 rank=3 flags=0 attrs={} values=bytes=-4096,"
	   "self_seconds=0.5,file=\"in.dat\",cached=false\n",
	   "form lines and typed values");
	capture_fini(NULL, &c);
	tally_batch_unref(b);
	unlink(path);
}

static void test_stall(void)
{
	char path[] = "/tmp/capture-unit-XXXXXX";
	struct tally_batch *b = tally_batch_new();
	struct capture c;

	capture_open(&c, path);
	c.stall = true;
	add(tally_batch_add_metric(b, TALLY_GAUGE, "g", NULL, NULL, 1, 1),
	    "gauge");
	errno = 0;
	ok(capture_write(NULL, &c, b) == -1 && errno == EAGAIN,
	   "stall: write refuses with EAGAIN");
	ok(capture_flush(NULL, &c) == 0, "stall: flush still succeeds");
	is(slurp(path), "", "stall: nothing written");
	capture_fini(NULL, &c);
	tally_batch_unref(b);
	unlink(path);
}

int main(void)
{
	plan(NO_PLAN);
	test_metrics();
	test_spans();
	test_options();
	test_forms();
	test_stall();
	return done_testing();
}
