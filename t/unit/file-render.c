/* SPDX-License-Identifier: MIT */
/*
 * t/unit/file-render.c - the file output's formats (plugins/output/file/
 * render.c), byte for byte: JSON lines, Chrome trace event JSON, CSV
 */
#include "config.h"

#include <math.h>
#include <string.h>

#include <tally/labels.h>
#include <tally/record.h>

#include "../../plugins/output/file/render.h"
#include "tap.h"

/* 2024-07-26 13:20:00 UTC: the origin of Chrome's ts in these tests */
#define T0 1722000000000000000LL

static struct tally_batch *batch;

static const struct tally_record *last(void)
{
	return tally_batch_at(batch, tally_batch_count(batch) - 1);
}

static const struct tally_record *span(enum tally_span_phase ph,
				       const char *host, uint32_t pid,
				       uint32_t tid, int32_t rank,
				       const char *name, uint64_t id,
				       uint64_t parent, uint32_t depth,
				       int64_t ts, int64_t begin)
{
	struct tally_span sp = {
		.trace = "job",
		.name = name,
		.span_id = id,
		.parent_id = parent,
		.phase = ph,
		.depth = depth,
		.src = { .host = host, .pid = pid, .tid = tid, .rank = rank },
		.begin_ns = ph == TALLY_SPAN_BEGIN ? ts : begin,
	};

	if (tally_batch_add_span(batch, &sp, ts) < 0)
		bail_out("add_span");
	return last();
}

static const struct tally_record *gauge(const char *name,
					struct tally_labels *ls, double v,
					int64_t ts)
{
	if (tally_batch_add_metric(batch, TALLY_GAUGE, name, NULL, ls, v, ts) <
	    0)
		bail_out("add_metric");
	return last();
}

/* @rec rendered, as a string (static buffer), "" when not written */
static const char *render(struct file_render *r,
			  const struct tally_record *rec, const char **why)
{
	static struct fbuf b;
	const char *w = NULL;

	b.len = 0;
	if (file_render_record(r, &b, rec, why ? why : &w) < 0)
		bail_out("render: out of memory");
	fbuf_add(&b, "", 1);
	return b.data;
}

static const char *opened(struct file_render *r, bool restate)
{
	static struct fbuf b;

	b.len = 0;
	if (file_render_open(r, &b, T0 + 5, 777, restate) < 0)
		bail_out("open");
	fbuf_add(&b, "", 1);
	return b.data;
}

static const char *closed(struct file_render *r, int64_t now)
{
	static struct fbuf b;

	b.len = 0;
	if (file_render_close(r, &b, now) < 0)
		bail_out("close");
	fbuf_add(&b, "", 1);
	return b.data;
}

static void test_jsonl(void)
{
	struct file_render_opts o = { .format = FILE_FMT_JSONL,
				      .hostname = "n1",
				      .labels = tally_labels_newv(
					      "cluster", "c1", "cpu", "9",
					      NULL) };
	struct file_render *r = file_render_new(&o);
	struct tally_labels *ls = tally_labels_newv("cpu", "0", NULL);
	struct tally_bucket bk[] = { { 0.5, 1 }, { INFINITY, 3 } };
	struct tally_span sp = {
		.trace = "job",
		.name = "i\"o\n",
		.span_id = 3,
		.parent_id = 2,
		.phase = TALLY_SPAN_END,
		.depth = 2,
		.flags = TALLY_SPAN_FRAGMENT | TALLY_SPAN_LAST,
		.src = { .host = "n1", .pid = 40, .tid = 41, .rank = 1 },
		.attrs = tally_labels_newv("jobid", "77", NULL),
		.begin_ns = T0 + 1000,
		.nvalues = 3,
		.values = (struct tally_attr[]){
			TALLY_ATTR_DOUBLE("self_seconds", 0.25),
			TALLY_ATTR_INT("bytes", -4),
			TALLY_ATTR_BOOL("hit", true) },
	};
	const char *why;

	is(opened(r, false),
	   "{\"type\":\"clock_anchor\",\"hostname\":\"n1\",\"realtime_ns\":"
	   "1722000000000000005,\"monotonic_ns\":777}\n",
	   "jsonl: a clock anchor line opens a file");
	is(render(r, gauge("node_load1", ls, 1.5, T0), &why),
	   "{\"type\":\"metric\",\"ts\":1722000000000000000,\"name\":"
	   "\"node_load1\",\"kind\":\"gauge\",\"labels\":{\"cluster\":\"c1\","
	   "\"cpu\":\"0\"},\"value\":1.5}\n",
	   "jsonl: a gauge, static labels merged, its own cpu wins");
	ok(why == NULL, "written: no reason");
	is(render(r, gauge("x", NULL, NAN, T0), NULL),
	   "{\"type\":\"metric\",\"ts\":1722000000000000000,\"name\":\"x\","
	   "\"kind\":\"gauge\",\"labels\":{\"cluster\":\"c1\",\"cpu\":\"9\"},"
	   "\"value\":\"NaN\"}\n",
	   "jsonl: NaN, which JSON lacks, as a string");
	if (tally_batch_add_histogram(batch, "lat_seconds", NULL, ls, bk, 2, 3,
				      2.5, T0) < 0)
		bail_out("histogram");
	is(render(r, last(), NULL),
	   "{\"type\":\"metric\",\"ts\":1722000000000000000,\"name\":"
	   "\"lat_seconds\",\"kind\":\"histogram\",\"labels\":{\"cluster\":"
	   "\"c1\",\"cpu\":\"0\"},\"count\":3,\"sum\":2.5,\"buckets\":"
	   "[[0.5,1],[\"+Inf\",3]]}\n",
	   "jsonl: a histogram with its buckets");
	is(render(r, span(TALLY_SPAN_BEGIN, "n1", 40, 41, 1, "solve", 2, 1, 1,
			  T0 + 1000, 0),
		  NULL),
	   "{\"type\":\"span\",\"ts\":1722000000000001000,\"phase\":\"begin\","
	   "\"trace\":\"job\",\"name\":\"solve\",\"span_id\":2,\"parent_id\":1,"
	   "\"depth\":1,\"host\":\"n1\",\"pid\":40,\"tid\":41,\"rank\":1,"
	   "\"attrs\":{\"cluster\":\"c1\",\"cpu\":\"9\"}}\n",
	   "jsonl: a span begin");
	if (tally_batch_add_span(batch, &sp, T0 + 3000) < 0)
		bail_out("span");
	is(render(r, last(), NULL),
	   "{\"type\":\"span\",\"ts\":1722000000000003000,\"phase\":\"end\","
	   "\"trace\":\"job\",\"name\":\"i\\\"o\\n\",\"span_id\":3,"
	   "\"parent_id\":2,\"depth\":2,\"host\":\"n1\",\"pid\":40,\"tid\":41,"
	   "\"rank\":1,\"begin_ns\":1722000000000001000,\"flags\":"
	   "[\"fragment\",\"last\"],\"attrs\":{\"cluster\":\"c1\",\"cpu\":"
	   "\"9\",\"jobid\":\"77\"},\"values\":{\"self_seconds\":0.25,"
	   "\"bytes\":-4,\"hit\":true}}\n",
	   "jsonl: an end: escaped name, flags, attributes and values");
	is(closed(r, T0), "", "jsonl: nothing closes a file");
	tally_labels_unref(sp.attrs);
	tally_labels_unref(ls);
	tally_labels_unref((struct tally_labels *)o.labels);
	file_render_free(r);
}

static void test_csv(void)
{
	struct file_render_opts o = { .format = FILE_FMT_CSV,
				      .hostname = "n1" };
	struct file_render *r = file_render_new(&o);
	struct tally_labels *ls = tally_labels_newv(
		"dev", "a,b", "path", "x;y=z\\", "q", "say \"hi\"", NULL);
	struct tally_quantile qs[] = { { 0.5, 0.1 }, { 0.9, NAN } };
	const char *why;

	is(opened(r, false), "", "csv: the writer puts the header line");
	is(render(r, gauge("node_load1", NULL, 0.75, T0 + 123456789), NULL),
	   "1722000000.123456789,node_load1,,0.75\n",
	   "csv: epoch seconds to the ns, no labels, a value");
	is(render(r, gauge("m", ls, -INFINITY, T0), NULL),
	   "1722000000.000000000,m,\"dev=a,b;path=x\\;y\\=z\\\\;"
	   "q=say \"\"hi\"\"\",-Inf\n",
	   "csv: labels k=v;k=v, escaped, the field quoted (RFC 4180)");
	if (tally_batch_add_summary(batch, "rpc_seconds", NULL, NULL, qs, 2, 4,
				    1.25, T0) < 0)
		bail_out("summary");
	is(render(r, last(), NULL),
	   "1722000000.000000000,rpc_seconds,quantile=0.5,0.1\n"
	   "1722000000.000000000,rpc_seconds,quantile=0.9,NaN\n"
	   "1722000000.000000000,rpc_seconds_sum,,1.25\n"
	   "1722000000.000000000,rpc_seconds_count,,4\n",
	   "csv: a summary in the long layout");
	is(render(r, span(TALLY_SPAN_BEGIN, "n1", 1, 1, 0, "a", 1, 0, 0, T0, 0),
		  &why),
	   "", "csv: a span is not written");
	is(why, "span_in_csv", "csv: and the reason says so");
	tally_labels_unref(ls);
	file_render_free(r);
}

static void test_chrome(void)
{
	struct file_render_opts o = { .format = FILE_FMT_CHROME,
				      .hostname = "n1",
				      .self_pid = 9,
				      .origin_ns = T0,
				      .max_open_spans = 100,
				      .max_processes = 100 };
	struct file_render *r = file_render_new(&o);
	struct tally_labels *ls = tally_labels_newv("cpu", "0", NULL);
	const char *why;

	is(opened(r, false),
	   "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"tally_clock_anchor\":"
	   "{\"hostname\":\"n1\",\"realtime_ns\":1722000000000000005,"
	   "\"monotonic_ns\":777,\"ts_origin_realtime_ns\":"
	   "1722000000000000000}},\"traceEvents\":[\n"
	   "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":9,\"tid\":0,"
	   "\"args\":{\"name\":\"tally counters (n1)\"}},\n",
	   "chrome: the head, the clock anchor, the counter process named");
	is(render(r, span(TALLY_SPAN_BEGIN, "n1", 40, 40, 0, "main", 1, 0, 0,
			  T0 + 1000, 0),
		  NULL),
	   "", "chrome: a begin is remembered, not written");
	span(TALLY_SPAN_BEGIN, "n1", 40, 40, 0, "solve", 2, 1, 1, T0 + 2000, 0);
	is(render(r, last(), NULL), "", "chrome: a nested begin");
	is(render(r, span(TALLY_SPAN_END, "n1", 40, 40, 0, "solve", 2, 1, 1,
			  T0 + 5500, T0 + 2000),
		  NULL),
	   "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":40,\"tid\":0,"
	   "\"args\":{\"name\":\"rank 0 (n1:40)\"}},\n"
	   "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":40,"
	   "\"tid\":0,\"args\":{\"sort_index\":0}},\n"
	   "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":40,\"tid\":40,"
	   "\"args\":{\"name\":\"tid 40\"}},\n"
	   "{\"ph\":\"X\",\"name\":\"solve\",\"cat\":\"job\",\"ts\":2.000,"
	   "\"dur\":3.500,\"pid\":40,\"tid\":40,\"args\":{\"span_id\":2,"
	   "\"parent_id\":1,\"depth\":1,\"rank\":0}},\n",
	   "chrome: the first end of a process names it, then a complete "
	   "event in microseconds from the origin");
	is(render(r, gauge("node_load1", ls, 0.5, T0 + 3000000), NULL),
	   "{\"ph\":\"C\",\"name\":\"node_load1{cpu=\\\"0\\\"}\",\"ts\":"
	   "3000.000,\"pid\":9,\"tid\":9,\"args\":{\"value\":0.5}},\n",
	   "chrome: a metric is a counter event on tallyd's track");
	is(render(r, gauge("g", NULL, NAN, T0), &why), "",
	   "chrome: NaN cannot be a counter value");
	is(why, "not_finite", "chrome: and the reason says so");
	/* the same pid on another host: a made-up Chrome pid */
	span(TALLY_SPAN_BEGIN, "n2", 40, 40, -1, "x", 1, 0, 0, T0 + 1000, 0);
	render(r, last(), NULL);
	is(render(r, span(TALLY_SPAN_END, "n2", 40, 40, -1, "x", 1, 0, 0,
			  T0 + 2000, 0),
		  NULL),
	   "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":4194305,\"tid\":0,"
	   "\"args\":{\"name\":\"n2:40\"}},\n"
	   "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":4194305,\"tid\":40,"
	   "\"args\":{\"name\":\"tid 40\"}},\n"
	   "{\"ph\":\"X\",\"name\":\"x\",\"cat\":\"job\",\"ts\":1.000,"
	   "\"dur\":1.000,\"pid\":4194305,\"tid\":40,\"args\":{\"span_id\":1,"
	   "\"parent_id\":0,\"depth\":0,\"rank\":-1}},\n",
	   "chrome: pid 40 of host n2 is not n1's 40 (begin from the table)");
	is(render(r, span(TALLY_SPAN_END, "n1", 40, 40, 0, "lost", 8, 1, 1,
			  T0 + 9000, 0),
		  NULL),
	   "{\"ph\":\"X\",\"name\":\"lost\",\"cat\":\"job\",\"ts\":9.000,"
	   "\"dur\":0.000,\"pid\":40,\"tid\":40,\"args\":{\"span_id\":8,"
	   "\"parent_id\":1,\"depth\":1,\"rank\":0,\"orphan_end\":true}},\n",
	   "chrome: an end without a begin: an instant, marked orphan_end");
	is(closed(r, T0 + 10000),
	   "{\"ph\":\"X\",\"name\":\"main\",\"cat\":\"job\",\"ts\":1.000,"
	   "\"dur\":9.000,\"pid\":40,\"tid\":40,\"args\":{\"span_id\":1,"
	   "\"parent_id\":0,\"depth\":0,\"rank\":0,\"open\":true}},\n"
	   "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":9,\"tid\":0,"
	   "\"args\":{\"name\":\"tally counters (n1)\"}}\n]}\n",
	   "chrome: close: main, still open, up to now and marked open; "
	   "the last element has no comma");
	/* the next file: the same process is named again there */
	opened(r, false);
	is(render(r, span(TALLY_SPAN_END, "n1", 40, 40, 0, "main", 1, 0, 0,
			  T0 + 20000, T0 + 1000),
		  NULL),
	   "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":40,\"tid\":0,"
	   "\"args\":{\"name\":\"rank 0 (n1:40)\"}},\n"
	   "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":40,"
	   "\"tid\":0,\"args\":{\"sort_index\":0}},\n"
	   "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":40,\"tid\":40,"
	   "\"args\":{\"name\":\"tid 40\"}},\n"
	   "{\"ph\":\"X\",\"name\":\"main\",\"cat\":\"job\",\"ts\":1.000,"
	   "\"dur\":19.000,\"pid\":40,\"tid\":40,\"args\":{\"span_id\":1,"
	   "\"parent_id\":0,\"depth\":0,\"rank\":0}},\n",
	   "chrome: a new file names its processes again");
	is(closed(r, T0 + 30000),
	   "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":9,\"tid\":0,"
	   "\"args\":{\"name\":\"tally counters (n1)\"}}\n]}\n",
	   "chrome: nothing open any more");
	/* truncated under us: the head again, and who is named in it */
	is(opened(r, true),
	   "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"tally_clock_anchor\":"
	   "{\"hostname\":\"n1\",\"realtime_ns\":1722000000000000005,"
	   "\"monotonic_ns\":777,\"ts_origin_realtime_ns\":"
	   "1722000000000000000}},\"traceEvents\":[\n"
	   "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":9,\"tid\":0,"
	   "\"args\":{\"name\":\"tally counters (n1)\"}},\n"
	   "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":40,\"tid\":0,"
	   "\"args\":{\"name\":\"rank 0 (n1:40)\"}},\n"
	   "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":40,"
	   "\"tid\":0,\"args\":{\"sort_index\":0}},\n"
	   "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":40,\"tid\":40,"
	   "\"args\":{\"name\":\"tid 40\"}},\n",
	   "chrome: restated head names the file's processes again");
	tally_labels_unref(ls);
	file_render_free(r);
}

/* A dropped end must not leave its span open at the close. */
static void test_chrome_forget(void)
{
	struct file_render_opts o = { .format = FILE_FMT_CHROME,
				      .hostname = "n1",
				      .self_pid = 9,
				      .origin_ns = T0,
				      .max_open_spans = 1,
				      .max_processes = 100 };
	struct file_render *r = file_render_new(&o);

	opened(r, false);
	render(r, span(TALLY_SPAN_BEGIN, "n1", 5, 5, 0, "a", 1, 0, 0, T0, 0),
	       NULL);
	render(r, span(TALLY_SPAN_BEGIN, "n1", 5, 5, 0, "b", 2, 1, 1, T0, 0),
	       NULL);
	cmp_ok(file_render_stats(r)->untracked, "==", 1,
	       "max_open_spans 1: the second begin is not tracked");
	file_render_forget(r, span(TALLY_SPAN_END, "n1", 5, 5, 0, "a", 1, 0,
				   0, T0 + 1000, T0));
	is(closed(r, T0 + 5000),
	   "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":9,\"tid\":0,"
	   "\"args\":{\"name\":\"tally counters (n1)\"}}\n]}\n",
	   "a forgotten end: nothing left open");
	file_render_free(r);
}

int main(void)
{
	plan(NO_PLAN);
	batch = tally_batch_new();
	test_jsonl();
	test_csv();
	test_chrome();
	test_chrome_forget();
	tally_batch_unref(batch);
	done_testing();
}
