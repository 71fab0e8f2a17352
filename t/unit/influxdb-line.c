/* SPDX-License-Identifier: MIT */
/*
 * t/unit/influxdb-line.c - InfluxDB line protocol rendering
 * (plugins/output/influxdb/line.c), byte for byte
 *
 * The escaping table is the one t/t5001-influxdb.t writes to the real
 * influxd and reads back.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/labels.h>
#include <tally/record.h>

#include "../../plugins/output/influxdb/line.h"
#include "tap.h"

static char out[4096];

static const char *esc(int (*fn)(struct influx_buf *, const char *),
		       const char *s)
{
	struct influx_buf b = { 0 };

	fn(&b, s);
	snprintf(out, sizeof(out), "%.*s", (int)b.len, b.p ? b.p : "");
	influx_buf_free(&b);
	return out;
}

static void test_escaping(void)
{
	static const struct {
		const char *in, *meas, *key, *str;
	} cases[] = {
		{ "cpu", "cpu", "cpu", "\"cpu\"" },
		{ "a,b", "a\\,b", "a\\,b", "\"a,b\"" },
		{ "a b", "a\\ b", "a\\ b", "\"a b\"" },
		{ "a=b", "a=b", "a\\=b", "\"a=b\"" },
		{ "say \"hi\"", "say\\ \"hi\"", "say\\ \"hi\"",
		  "\"say \\\"hi\\\"\"" },
		{ "C:\\dir", "C:\\dir", "C:\\dir", "\"C:\\\\dir\"" },
		{ "end\\", "end", "end", "\"end\\\\\"" },
		{ "two\\\\", "two", "two", "\"two\\\\\\\\\"" },
		{ "x\\,y", "x\\,y", "x\\,y", "\"x\\\\,y\"" },
		{ "x\\=y", "x\\=y", "x\\=y", "\"x\\\\=y\"" },
		{ "l1\nl2", "l1\\ l2", "l1\\ l2", "\"l1\nl2\"" },
		{ "ünï ©", "ünï\\ ©", "ünï\\ ©", "\"ünï ©\"" },
		{ "", "", "", "\"\"" },
		{ NULL },
	};

	for (int i = 0; cases[i].in; i++) {
		is(esc(influx_escape_measurement, cases[i].in), cases[i].meas,
		   "measurement %s", cases[i].in);
		is(esc(influx_escape_key, cases[i].in), cases[i].key,
		   "tag/field key %s", cases[i].in);
		is(esc(influx_escape_string, cases[i].in), cases[i].str,
		   "string field %s", cases[i].in);
	}
}

static void test_floats(void)
{
	static const struct {
		double v;
		const char *s;
	} cases[] = {
		{ 0, "0" },	    { -0.0, "0" },	  { 3, "3" },
		{ -42, "-42" },	    { 0.1, "0.1" },	  { 1.5e-9, "1.5e-09" },
		{ 1e300, "1e+300" }, { 1.0 / 3, "0.33333333333333331" },
		{ 9007199254740993.0, "9007199254740992" },
		{ 0, NULL },
	};
	char buf[32];

	for (int i = 0; cases[i].s; i++) {
		influx_format_float(buf, cases[i].v);
		is(buf, cases[i].s, "float %s", cases[i].s);
		cmp_ok(strtod(buf, NULL), "==", cases[i].v, "round trip");
	}
}

static const char *render(struct influx_render *r,
			  const struct tally_record *rec, int *rc)
{
	struct influx_buf b = { 0 };

	*rc = influx_render_record(r, &b, rec);
	snprintf(out, sizeof(out), "%.*s", (int)b.len, b.p ? b.p : "");
	influx_buf_free(&b);
	return out;
}

static void test_metrics(void)
{
	struct tally_labels *statics =
		tally_labels_newv("cluster", "frontier", "host", "node17",
				  NULL);
	struct tally_labels *ls =
		tally_labels_newv("cpu", "0", "mode", "user", "empty", "",
				  NULL);
	struct tally_labels *own_host =
		tally_labels_newv("host", "other", NULL);
	struct influx_render r = {
		.statics = tally_labels_pairs(statics),
		.nstatics = tally_labels_count(statics),
		.span_measurement = "tally_span",
	};
	struct tally_record rec = { .kind = TALLY_REC_METRIC,
				    .ts_ns = 1700000000123456789 };
	struct tally_bucket bk[] = { { 0.1, 3 }, { 1, 5 }, { INFINITY, 6 } };
	struct tally_quantile qs[] = { { 0.5, 0.25 }, { 0.99, NAN } };
	int rc;

	rec.metric = (struct tally_metric){ .name = "node_cpu_seconds_total",
					    .type = TALLY_COUNTER,
					    .labels = ls, .value = 264.6 };
	is(render(&r, &rec, &rc),
	   "node_cpu_seconds_total,cluster=frontier,cpu=0,host=node17,"
	   "mode=user value=264.6 1700000000123456789\n",
	   "counter: tags sorted, statics merged, empty value left out");
	cmp_ok(rc, "==", 1, "one point");

	rec.metric.labels = own_host;
	rec.metric.type = TALLY_GAUGE;
	rec.metric.value = 7;
	is(render(&r, &rec, &rc),
	   "node_cpu_seconds_total,cluster=frontier,host=other value=7 "
	   "1700000000123456789\n",
	   "the record's own host label wins");

	r.precision = INFLUX_S;
	rec.metric.type = TALLY_INFO;
	is(render(&r, &rec, &rc),
	   "node_cpu_seconds_total,cluster=frontier,host=other value=1 "
	   "1700000000\n",
	   "info: value=1; precision s");
	r.precision = INFLUX_MS;

	rec.metric = (struct tally_metric){ .name = "lat_seconds",
					    .type = TALLY_HISTOGRAM,
					    .labels = tally_labels_empty(),
					    .count = 6, .sum = 2.5, .n = 3,
					    .buckets = bk };
	is(render(&r, &rec, &rc),
	   "lat_seconds,cluster=frontier,host=node17 count=6i,sum=2.5,"
	   "0.1=3i,1=5i,+Inf=6i 1700000000123\n",
	   "histogram: integer counts, float sum; precision ms");

	rec.metric = (struct tally_metric){ .name = "rpc",
					    .type = TALLY_SUMMARY,
					    .labels = tally_labels_empty(),
					    .count = 10, .sum = NAN, .n = 2,
					    .quantiles = qs };
	is(render(&r, &rec, &rc),
	   "rpc,cluster=frontier,host=node17 count=10i,0.5=0.25 "
	   "1700000000123\n",
	   "summary: NaN sum and quantile left out");
	cmp_ok(r.non_finite_fields, "==", 2, "2 fields counted");

	rec.metric = (struct tally_metric){ .name = "nan",
					    .type = TALLY_GAUGE,
					    .labels = tally_labels_empty(),
					    .value = -INFINITY };
	is(render(&r, &rec, &rc), "", "-Inf gauge: no point");
	cmp_ok(rc, "==", 0, "none");
	cmp_ok(r.non_finite, "==", 1, "counted");

	rec.metric.name = "\\\\";
	rec.metric.value = 1;
	is(render(&r, &rec, &rc), "", "empty measurement after escaping");
	cmp_ok(r.invalid, "==", 1, "counted");
	cmp_ok(r.points, "==", 5, "5 points in all");

	tally_labels_unref(statics);
	tally_labels_unref(ls);
	tally_labels_unref(own_host);
}

static void test_spans(void)
{
	struct tally_labels *statics = tally_labels_newv("host", "n1", NULL);
	struct tally_labels *attrs = tally_labels_newv("jobid", "42", NULL);
	struct influx_render r = {
		.statics = tally_labels_pairs(statics),
		.nstatics = tally_labels_count(statics),
		.span_measurement = "tally_span",
	};
	struct tally_attr vals[] = {
		TALLY_ATTR_INT("bytes", 4096),
		TALLY_ATTR_DOUBLE("self_seconds", 0.25),
		TALLY_ATTR_BOOL("ok", true),
		TALLY_ATTR_STRING("file", "a \"b\""),
		TALLY_ATTR_DOUBLE("bad", NAN),
	};
	struct tally_record rec = { .kind = TALLY_REC_SPAN,
				    .ts_ns = 2000000000 };
	int rc;

	rec.span = (struct tally_span){
		.trace = "job 1", .name = "solve,step", .span_id = 7,
		.phase = TALLY_SPAN_END, .depth = 1,
		.src = { .host = "n1", .pid = 4242, .rank = 3 },
		.attrs = attrs, .begin_ns = 500000000, .nvalues = 5,
		.values = vals,
	};
	is(render(&r, &rec, &rc),
	   "tally_span,depth=1,host=n1,jobid=42,rank=3,region=solve\\,step,"
	   "trace=job\\ 1 duration=1.5,start=500000000i,pid=4242i,"
	   "bytes=4096i,self_seconds=0.25,ok=true,file=\"a \\\"b\\\"\" "
	   "2000000000\n",
	   "a completed span: tags, duration, start and attributes");
	cmp_ok(rc, "==", 1, "one point");

	rec.span.src.rank = -1;
	rec.span.nvalues = 0;
	is(render(&r, &rec, &rc),
	   "tally_span,depth=1,host=n1,jobid=42,region=solve\\,step,"
	   "trace=job\\ 1 duration=1.5,start=500000000i,pid=4242i "
	   "2000000000\n",
	   "unknown rank: no rank tag");

	rec.span.phase = TALLY_SPAN_BEGIN;
	is(render(&r, &rec, &rc), "", "a begin: no point");
	cmp_ok(rc, "==", 0, "none");
	rec.span.phase = TALLY_SPAN_END;
	rec.span.begin_ns = 0;
	is(render(&r, &rec, &rc), "", "an end without its begin: no point");
	cmp_ok(r.no_begin, "==", 1, "counted");
	tally_labels_unref(statics);
	tally_labels_unref(attrs);
}

static void test_intervals(void)
{
	struct tally_labels *statics = tally_labels_newv("host", "n1", NULL);
	struct tally_labels *ls = tally_labels_newv("path", "/a", NULL);
	struct influx_render r = {
		.statics = tally_labels_pairs(statics),
		.nstatics = tally_labels_count(statics),
		.span_measurement = "tally_span",
		.precision = INFLUX_S,
	};
	struct tally_batch *b = tally_batch_new();
	struct tally_quantile qs[] = { { 0.5, 0.02 }, { 0.9, 0.04 },
				       { 0.999, 0.05 } };
	struct tally_bucket bk[] = { { 0.01, 1 }, { 0.1, 4 } };
	struct tally_interval iv = { .start_ns = 8000000000, .count = 4,
				     .sum = 0.1, .min = 0.01, .max = 0.05,
				     .median = 0.02, .nquantiles = 3,
				     .quantiles = qs, .nbuckets = 2,
				     .buckets = bk };
	struct tally_interval empty = { .start_ns = 8000000000,
					.min = NAN, .max = NAN,
					.median = NAN };
	const struct tally_record *rec;
	int rc;

	rec = tally_batch_add_interval(b, TALLY_COUNTER, "api.hits", NULL, ls,
				       30, &iv, 10000000000);
	is(render(&r, rec, &rc),
	   "api.hits,host=n1,path=/a value=30,rate=15 10\n",
	   "counter interval: the interval's total and its rate");
	rec = tally_batch_add_interval(b, TALLY_GAUGE, "temp", NULL, ls, 21.5,
				       &iv, 10000000000);
	is(render(&r, rec, &rc), "temp,host=n1,path=/a value=21.5 10\n",
	   "gauge interval: the level");
	rec = tally_batch_add_interval(b, TALLY_HISTOGRAM, "lat", NULL, ls, 0,
				       &iv, 10000000000);
	is(render(&r, rec, &rc),
	   "lat,host=n1,path=/a count=4,sum=0.1,rate=2,mean=0.025,min=0.01,"
	   "max=0.05,median=0.02,p50=0.02,p90=0.04,p99.9=0.05,0.01=1i,"
	   "0.1=4i,+Inf=4i 10\n",
	   "histogram interval: figures, percentiles, buckets");
	rec = tally_batch_add_interval(b, TALLY_SUMMARY, "lat", NULL, ls, 0,
				       &empty, 10000000000);
	is(render(&r, rec, &rc), "lat,host=n1,path=/a count=0,sum=0,rate=0 10\n",
	   "an empty interval: no min, max, mean, median");
	cmp_ok(r.non_finite_fields, "==", 0,
	       "which are not counted as NaN dropped");
	tally_batch_unref(b);
	tally_labels_unref(statics);
	tally_labels_unref(ls);
}

int main(void)
{
	plan(NO_PLAN);
	test_escaping();
	test_floats();
	test_metrics();
	test_spans();
	test_intervals();
	return done_testing();
}
