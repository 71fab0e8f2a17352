/* SPDX-License-Identifier: MIT */
/*
 * t/unit/prometheus-store.c - the prometheus output's series store
 *
 * Expected expositions are written out by hand from the text format rules
 * (one HELP and TYPE per family, families sorted by name, series by label
 * text, counters with _total, histogram buckets then _sum and _count).
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include <tally/labels.h>
#include <tally/record.h>

#include "../../plugins/output/prometheus/store.h"
#include "tap.h"

/* core-private (core/core-internal.h): what the core does on emit */
void tally_batch_set_source(struct tally_batch *b, const char *source,
			    double interval);
/* core-private: logging to stderr, its burst window (seconds) */
enum tally_log_target { TALLY_LOG_STDERR, TALLY_LOG_SYSLOG };
void tally_log_setup(enum tally_log_target target, int level);
void tally_log_set_window(unsigned seconds);

#define S 1000000000LL		/* ns per second */
#define R0 (1700000000LL * S)	/* a CLOCK_REALTIME origin for spans */

static char *render(struct prom_store *s, enum prom_format fmt, int64_t now,
		    int64_t real)
{
	struct evbuffer *b = evbuffer_new();
	size_t n;
	char *text;

	if (prom_store_render(s, b, fmt, now, real) < 0)
		bail_out("render failed");
	n = evbuffer_get_length(b);
	text = malloc(n + 1);
	evbuffer_remove(b, text, n);
	text[n] = '\0';
	evbuffer_free(b);
	return text;
}

/* Value of the sample line starting with @series + ' ', or NULL. */
static const char *sample(const char *text, const char *series)
{
	static char val[64];
	size_t n = strlen(series);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p) {
		if (strncmp(p, series, n) == 0 && p[n] == ' ') {
			const char *e = strchr(p + n + 1, '\n');
			size_t len = e ? (size_t)(e - p - n - 1) : strlen(p + n + 1);

			if (len >= sizeof(val))
				len = sizeof(val) - 1;
			memcpy(val, p + n + 1, len);
			val[len] = '\0';
			return val;
		}
	}
	return NULL;
}

static void add_gauge(struct tally_batch *b, const char *name,
		      const char *help, double v, const char *k,
		      const char *lv)
{
	struct tally_labels *ls = k ? tally_labels_newv(k, lv, NULL) : NULL;

	if (tally_batch_add_metric(b, TALLY_GAUGE, name, help, ls, v, 0) < 0)
		bail_out("add_metric %s", name);
	tally_labels_unref(ls);
}

/* @n gauges @name{i="0"} 0 ... {i="n-1"} n-1 */
static void add_gauges(struct tally_batch *b, const char *name, int n)
{
	char lv[16];

	for (int i = 0; i < n; i++) {
		snprintf(lv, sizeof(lv), "%d", i);
		add_gauge(b, name, NULL, i, "i", lv);
	}
}

static void apply(struct prom_store *s, struct tally_batch *b, int64_t now)
{
	if (prom_store_apply(s, b, now) < 0)
		bail_out("apply failed");
	tally_batch_unref(b);
}

static struct prom_store_opts default_opts(void)
{
	struct prom_store_opts o = {
		.expire_ns = 0,
		.expire_factor = 3,
		.expire_event_ns = 300 * S,
		.grace_ns = 15 * S,
		.span_metrics = PROM_SPANS_TALLY,
	};
	return o;
}

static void test_basic(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s = prom_store_new(&o, NULL);
	struct tally_batch *b = tally_batch_new();
	char *text;

	add_gauge(b, "node_load1", "1m load average", 0.5, NULL, NULL);
	tally_batch_add_metric(b, TALLY_COUNTER, "node_forks", "Forks", NULL,
			       12, 0);
	add_gauge(b, "b_metric", NULL, 1, "dev", "eth1");
	add_gauge(b, "b_metric", NULL, 2, "dev", "eth0");
	apply(s, b, 1 * S);

	text = render(s, PROM_FMT_TEXT, 2 * S, R0);
	is(text,
	   "# HELP b_metric b_metric\n"
	   "# TYPE b_metric gauge\n"
	   "b_metric{dev=\"eth0\"} 2\n"
	   "b_metric{dev=\"eth1\"} 1\n"
	   "# HELP node_forks_total Forks\n"
	   "# TYPE node_forks_total counter\n"
	   "node_forks_total 12\n"
	   "# HELP node_load1 1m load average\n"
	   "# TYPE node_load1 gauge\n"
	   "node_load1 0.5\n",
	   "0.0.4: families by name, series by labels, counter gets _total");
	free(text);

	text = render(s, PROM_FMT_OPENMETRICS, 2 * S, R0);
	is(text,
	   "# HELP b_metric b_metric\n"
	   "# TYPE b_metric gauge\n"
	   "b_metric{dev=\"eth0\"} 2\n"
	   "b_metric{dev=\"eth1\"} 1\n"
	   "# HELP node_forks Forks\n"
	   "# TYPE node_forks counter\n"
	   "node_forks_total 12\n"
	   "# HELP node_load1 1m load average\n"
	   "# TYPE node_load1 gauge\n"
	   "node_load1 0.5\n"
	   "# EOF\n",
	   "OpenMetrics: counter family without _total, # EOF at the end");
	free(text);

	/* Updates replace values in place; NaN and Inf are canonical. */
	b = tally_batch_new();
	add_gauge(b, "node_load1", "1m load average", NAN, NULL, NULL);
	add_gauge(b, "b_metric", NULL, INFINITY, "dev", "eth0");
	add_gauge(b, "b_metric", NULL, -INFINITY, "dev", "eth1");
	tally_batch_add_metric(b, TALLY_COUNTER, "node_forks", "Forks", NULL,
			       1e21, 0);
	apply(s, b, 3 * S);
	text = render(s, PROM_FMT_TEXT, 4 * S, R0);
	is(sample(text, "node_load1"), "NaN", "NaN");
	is(sample(text, "b_metric{dev=\"eth0\"}"), "+Inf", "+Inf");
	is(sample(text, "b_metric{dev=\"eth1\"}"), "-Inf", "-Inf");
	is(sample(text, "node_forks_total"), "1e+21", "large counter");
	cmp_ok(prom_store_series(s), "==", 4, "4 series");
	free(text);
	prom_store_free(s);
}

static void test_histogram_summary(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s = prom_store_new(&o, NULL);
	struct tally_batch *b = tally_batch_new();
	struct tally_bucket bk[] = { { 0.1, 1 }, { 1, 3 }, { INFINITY, 4 } };
	struct tally_bucket bk2[] = { { 0.5, 2 } };
	struct tally_quantile qs[] = { { 0.5, 0.01 }, { 0.99, 0.2 } };
	struct tally_labels *path = tally_labels_newv("path", "/a", NULL);
	struct tally_labels *le = tally_labels_newv("le", "x", NULL);
	struct tally_labels *q = tally_labels_newv("quantile", "y", NULL);
	struct tally_record *rec;
	char *text;

	tally_batch_add_histogram(b, "req_seconds", "Request time", path, bk,
				  3, 4, 2.5, 0);
	/* no +Inf bucket given: the batch API adds one equal to count */
	tally_batch_add_histogram(b, "req_seconds", "Request time", le, bk2,
				  1, 3, 1.25, 0);
	tally_batch_add_summary(b, "rpc_seconds", NULL, NULL, qs, 2, 10, 0.5,
				0);
	tally_batch_add_summary(b, "rpc_seconds", NULL, q, qs, 1, 1, 0.01, 0);
	apply(s, b, 1 * S);
	text = render(s, PROM_FMT_TEXT, 2 * S, R0);
	is(text,
	   "# HELP req_seconds Request time\n"
	   "# TYPE req_seconds histogram\n"
	   "req_seconds_bucket{exported_le=\"x\",le=\"0.5\"} 2\n"
	   "req_seconds_bucket{exported_le=\"x\",le=\"+Inf\"} 3\n"
	   "req_seconds_sum{exported_le=\"x\"} 1.25\n"
	   "req_seconds_count{exported_le=\"x\"} 3\n"
	   "req_seconds_bucket{path=\"/a\",le=\"0.1\"} 1\n"
	   "req_seconds_bucket{path=\"/a\",le=\"1\"} 3\n"
	   "req_seconds_bucket{path=\"/a\",le=\"+Inf\"} 4\n"
	   "req_seconds_sum{path=\"/a\"} 2.5\n"
	   "req_seconds_count{path=\"/a\"} 4\n"
	   "# HELP rpc_seconds rpc_seconds\n"
	   "# TYPE rpc_seconds summary\n"
	   "rpc_seconds{quantile=\"0.5\"} 0.01\n"
	   "rpc_seconds{quantile=\"0.99\"} 0.2\n"
	   "rpc_seconds_sum 0.5\n"
	   "rpc_seconds_count 10\n"
	   "rpc_seconds{exported_quantile=\"y\",quantile=\"0.5\"} 0.01\n"
	   "rpc_seconds_sum{exported_quantile=\"y\"} 0.01\n"
	   "rpc_seconds_count{exported_quantile=\"y\"} 1\n",
	   "histogram and summary lines; le/quantile labels renamed");
	free(text);

	/* A histogram whose +Inf bucket disagrees with its count is dropped,
	 * and the series keeps its last consistent value. */
	b = tally_batch_new();
	tally_batch_add_histogram(b, "req_seconds", "Request time", path, bk,
				  3, 4, 2.5, 0);
	struct tally_record first = *tally_batch_at(b, 0);
	rec = tally_batch_append(b);
	*rec = first;
	rec->metric.labels = tally_labels_ref(path);
	rec->metric.count = 5;	/* +Inf bucket says 4 */
	rec->metric.sum = 9;
	apply(s, b, 2 * S);
	cmp_ok(prom_store_stats(s)->bad_histogram, "==", 1,
	       "inconsistent histogram counted as bad_histogram");
	text = render(s, PROM_FMT_TEXT, 3 * S, R0);
	is(sample(text, "req_seconds_count{path=\"/a\"}"), "4",
	   "previous consistent sample kept");
	is(sample(text, "req_seconds_sum{path=\"/a\"}"), "2.5", "its sum too");
	free(text);

	tally_labels_unref(path);
	tally_labels_unref(le);
	tally_labels_unref(q);
	prom_store_free(s);
}

static void test_names(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s = prom_store_new(&o, NULL);
	struct tally_batch *b = tally_batch_new();
	struct tally_quantile qs[] = { { 0.5, 1 } };
	struct tally_labels *dup = tally_labels_newv("k.1", "a", "k_1", "b",
						     NULL);
	char *text;

	add_gauge(b, "a.b", "first", 1, "k", "1");
	add_gauge(b, "a-b", "second", 2, "k", "2");
	add_gauge(b, "a b", NULL, 3, "k", "1");	/* same as a.b{k="1"} */
	add_gauge(b, "x", NULL, 1, NULL, NULL);
	tally_batch_add_metric(b, TALLY_GAUGE, "y", NULL, dup, 1, 0);
	add_gauge(b, "9lives", NULL, 9, "k8s.pod", "p\\1\"\n");
	add_gauge(b, "dup", NULL, 1, "x", "1");
	tally_batch_add_summary(b, "dup", NULL, NULL, qs, 1, 1, 1, 0);
	tally_batch_add_summary(b, "lat", NULL, NULL, qs, 1, 1, 1, 0);
	add_gauge(b, "lat_count", NULL, 5, NULL, NULL);
	add_gauge(b, "tally_trace_region_active", NULL, 5, NULL, NULL);
	add_gauge(b, "caf\xc3\xa9", NULL, 1, "v", "\xff");
	apply(s, b, 1 * S);

	/* the same raw series with another type */
	struct tally_labels *x1 = tally_labels_newv("x", "1", NULL);
	b = tally_batch_new();
	tally_batch_add_summary(b, "dup", NULL, x1, qs, 1, 1, 1, 0);
	apply(s, b, 1 * S);
	tally_labels_unref(x1);

	text = render(s, PROM_FMT_TEXT, 2 * S, R0);
	is(text,
	   "# HELP _9lives 9lives\n"
	   "# TYPE _9lives gauge\n"
	   "_9lives{k8s_pod=\"p\\\\1\\\"\\n\"} 9\n"
	   "# HELP a_b first\n"
	   "# TYPE a_b gauge\n"
	   "a_b{k=\"1\"} 1\n"
	   "a_b{k=\"2\"} 2\n"
	   "# HELP caf_ caf\xc3\xa9\n"
	   "# TYPE caf_ gauge\n"
	   "caf_{v=\"\xef\xbf\xbd\"} 1\n"
	   "# HELP dup dup\n"
	   "# TYPE dup gauge\n"
	   "dup{x=\"1\"} 1\n"
	   "# HELP lat lat\n"
	   "# TYPE lat summary\n"
	   "lat{quantile=\"0.5\"} 1\n"
	   "lat_sum 1\n"
	   "lat_count 1\n"
	   "# HELP x x\n"
	   "# TYPE x gauge\n"
	   "x 1\n",
	   "sanitized names, escaped values, collisions left out");
	free(text);

	const struct prom_store_stats *st = prom_store_stats(s);
	cmp_ok(st->series_collision, "==", 1,
	       "\"a b\"{k=1} collides with \"a.b\"{k=1}");
	cmp_ok(st->label_collision, "==", 1, "k.1 and k_1 collide");
	cmp_ok(st->type_conflict, "==", 3,
	       "summary dup vs gauge dup (other labels, then the same raw "
	       "series), gauge named like a span family");
	cmp_ok(st->name_collision, "==", 1, "lat_count owned by summary lat");
	tally_labels_unref(dup);
	prom_store_free(s);
}

static void test_expiry(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s = prom_store_new(&o, NULL);
	struct tally_batch *b;
	char *text;

	/* Input with a 10 s interval: expire after 3 intervals = 30 s. */
	b = tally_batch_new();
	add_gauge(b, "g", NULL, 1, "src", "a");
	add_gauge(b, "g", NULL, 2, "src", "b");
	add_gauge(b, "h", NULL, 3, NULL, NULL);
	tally_batch_set_source(b, "in", 10.0);
	apply(s, b, 100 * S);
	/* Event-driven input (no interval): 300 s. */
	b = tally_batch_new();
	add_gauge(b, "ev", NULL, 4, NULL, NULL);
	apply(s, b, 100 * S);

	b = tally_batch_new();
	add_gauge(b, "g", NULL, 5, "src", "a");
	tally_batch_set_source(b, "in", 10.0);
	apply(s, b, 125 * S);

	text = render(s, PROM_FMT_TEXT, 130 * S, R0);
	ok(sample(text, "g{src=\"b\"}") && sample(text, "h"),
	   "30 s after the last update: still there");
	free(text);
	text = render(s, PROM_FMT_TEXT, 130 * S + 1, R0);
	ok(!sample(text, "g{src=\"b\"}"), "just past 30 s: gone");
	ok(!strstr(text, "# TYPE h "), "a family without series goes too");
	is(sample(text, "g{src=\"a\"}"), "5", "refreshed series stays");
	is(sample(text, "ev"), "4", "event-driven series stays");
	free(text);
	cmp_ok(prom_store_sweep(s, 155 * S + 1), "==", 1,
	       "refreshed one expires 30 s after its refresh");
	cmp_ok(prom_store_sweep(s, 400 * S + 1), "==", 1,
	       "event-driven one after 300 s");
	cmp_ok(prom_store_series(s), "==", 0, "nothing left");
	text = render(s, PROM_FMT_TEXT, 401 * S, R0);
	is(text, "", "empty exposition");
	free(text);
	prom_store_free(s);

	/* An explicit expire overrides both. */
	o.expire_ns = 5 * S;
	s = prom_store_new(&o, NULL);
	b = tally_batch_new();
	add_gauge(b, "g", NULL, 1, NULL, NULL);
	tally_batch_set_source(b, "in", 10.0);
	apply(s, b, 0);
	cmp_ok(prom_store_sweep(s, 5 * S), "==", 0, "expire = 5: there at 5 s");
	cmp_ok(prom_store_sweep(s, 5 * S + 1), "==", 1, "gone after 5 s");
	prom_store_free(s);
}

/*
 * Deltas (a statsd input straight into prometheus): counter increments add
 * up into the cumulative counter, weighted by 1 / sample rate; gauge
 * adjustments move the gauge; a negative counter delta is dropped.
 */
static void test_deltas(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s = prom_store_new(&o, NULL);
	struct tally_labels *ls = tally_labels_newv("path", "/a", NULL);
	struct tally_batch *b;
	char *text;

	b = tally_batch_new();
	tally_batch_add_delta(b, TALLY_COUNTER, "hits_total", "Hits", ls, 3, 1,
			      0);
	tally_batch_add_delta(b, TALLY_COUNTER, "hits_total", "Hits", ls, 2,
			      0.5, 0);
	tally_batch_add_delta(b, TALLY_GAUGE, "depth", NULL, NULL, 5, 1, 0);
	tally_batch_add_delta(b, TALLY_GAUGE, "depth", NULL, NULL, -7, 0.1, 0);
	apply(s, b, 1 * S);
	text = render(s, PROM_FMT_TEXT, 1 * S, R0);
	is(sample(text, "hits_total{path=\"/a\"}"), "7",
	   "3 + 2 / 0.5 = 7 events");
	ok(strstr(text, "# TYPE hits_total counter\n") != NULL,
	   "exposed as a counter");
	is(sample(text, "depth"), "-2", "gauge: 5 - 7 (rate ignored)");
	free(text);

	b = tally_batch_new();
	tally_batch_add_delta(b, TALLY_COUNTER, "hits_total", NULL, ls, 0.5, 1,
			      0);
	tally_batch_add_delta(b, TALLY_COUNTER, "hits_total", NULL, ls, -1, 1,
			      0);
	/* a cumulative gauge sets it, the next adjustment moves from there */
	tally_batch_add_metric(b, TALLY_GAUGE, "depth", NULL, NULL, 10, 0);
	tally_batch_add_delta(b, TALLY_GAUGE, "depth", NULL, NULL, 1, 1, 0);
	tally_batch_add_observation(b, TALLY_SUMMARY, "rt_seconds", NULL, NULL,
				    0.1, 1, 0);
	tally_batch_add_set_member(b, "users", NULL, NULL, "bob", 0);
	apply(s, b, 2 * S);
	text = render(s, PROM_FMT_TEXT, 2 * S, R0);
	is(sample(text, "hits_total{path=\"/a\"}"), "7.5",
	   "accumulated across batches; the negative one dropped");
	is(sample(text, "depth"), "11", "adjusted from the last set value");
	ok(!strstr(text, "rt_seconds") && !strstr(text, "users"),
	   "no series from an observation or a set member");
	free(text);
	cmp_ok(prom_store_stats(s)->bad_delta, "==", 3,
	       "negative counter delta, observation, set member: bad_delta");

	/* an expired series starts again from 0 (a counter reset) */
	cmp_ok(prom_store_sweep(s, 2 * S + 300 * S + 1), "==", 2,
	       "both expire like other event-driven series");
	b = tally_batch_new();
	tally_batch_add_delta(b, TALLY_COUNTER, "hits_total", NULL, ls, 1, 1,
			      0);
	apply(s, b, 400 * S);
	text = render(s, PROM_FMT_TEXT, 400 * S, R0);
	is(sample(text, "hits_total{path=\"/a\"}"), "1", "restarts from 0");
	free(text);
	tally_labels_unref(ls);
	prom_store_free(s);
}

static void add_span(struct tally_batch *b, enum tally_span_phase ph,
		     uint64_t id, const char *region, int rank, uint32_t depth,
		     int64_t ts, int64_t begin_ns);

/*
 * Static labels (global.labels, the output's labels): on every series,
 * metric and span region alike, where its own labels lack the key.
 */
static void test_static_labels(void)
{
	struct prom_store_opts o = default_opts();
	struct tally_labels *st = tally_labels_newv(
		"cluster", "frontier", "path", "none", "region", "east", NULL);
	struct tally_labels *ls = tally_labels_newv("path", "/a", NULL);
	struct tally_batch *b;
	struct prom_store *s;
	char *text;

	o.labels = st;
	o.span_metrics = PROM_SPANS_BOTH;
	s = prom_store_new(&o, NULL);
	tally_labels_unref(st); /* the store holds its own reference */
	b = tally_batch_new();
	tally_batch_add_metric(b, TALLY_GAUGE, "g", NULL, ls, 1, 0);
	tally_batch_add_metric(b, TALLY_COUNTER, "c_total", NULL, NULL, 2, 0);
	add_span(b, TALLY_SPAN_BEGIN, 1, "solve", 3, 0, R0, R0);
	apply(s, b, 1 * S);
	text = render(s, PROM_FMT_TEXT, 1 * S, R0 + S);
	is(sample(text, "g{cluster=\"frontier\",path=\"/a\",region=\"east\"}"),
	   "1", "a metric's own label wins over a static one");
	is(sample(text, "c_total{cluster=\"frontier\",path=\"none\","
			"region=\"east\"}"),
	   "2", "a metric without labels gets them all");
	is(sample(text, "tally_trace_region_active{cluster=\"frontier\","
			"path=\"none\",rank=\"3\",region=\"solve\","
			"trace=\"T\"}"),
	   "1", "span region series get them, sorted in; region is its own");
	is(sample(text, "rmsjob_annotations{cluster=\"frontier\","
			"marker=\"solve\",path=\"none\",region=\"east\","
			"traceid=\"T\"}"),
	   "1", "so do Omnistat's annotations");
	free(text);

	/* the same record again updates the same series */
	b = tally_batch_new();
	tally_batch_add_metric(b, TALLY_GAUGE, "g", NULL, ls, 5, 0);
	apply(s, b, 2 * S);
	text = render(s, PROM_FMT_TEXT, 2 * S, R0 + S);
	is(sample(text, "g{cluster=\"frontier\",path=\"/a\",region=\"east\"}"),
	   "5", "updated in place");
	free(text);
	cmp_ok(prom_store_series(s), "==", 4,
	       "four series: g, c_total, a region, an annotation");
	tally_labels_unref(ls);
	prom_store_free(s);
}

static void add_span(struct tally_batch *b, enum tally_span_phase ph,
		     uint64_t id, const char *region, int rank, uint32_t depth,
		     int64_t ts, int64_t begin_ns)
{
	struct tally_span sp = {
		.trace = "T",
		.name = region,
		.span_id = id,
		.phase = ph,
		.depth = depth,
		.src = { .host = "node1", .pid = 100, .rank = rank },
		.begin_ns = begin_ns,
	};

	if (tally_batch_add_span(b, &sp, ts) < 0)
		bail_out("add_span");
}

static void test_spans(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s;
	struct tally_batch *b;
	const char *act = "tally_trace_region_active{rank=\"3\",region=\"solver\",trace=\"T\"}";
	const char *sec = "tally_trace_region_seconds_total{rank=\"3\",region=\"solver\",trace=\"T\"}";
	const char *ann = "rmsjob_annotations{jobid=\"job7\",marker=\"solver\",traceid=\"T\"}";
	char *text;

	o.span_metrics = PROM_SPANS_BOTH;
	o.jobid = "job7";
	s = prom_store_new(&o, NULL);

	b = tally_batch_new();
	add_span(b, TALLY_SPAN_BEGIN, 1, "solver", 3, 0, R0, R0);
	apply(s, b, 1000 * S);

	text = render(s, PROM_FMT_TEXT, 1001 * S, R0 + 2 * S);
	is(text,
	   "# HELP rmsjob_annotations Omnistat trace annotation: 1 while the "
	   "marker's region is open, 0 for a grace period after it ends\n"
	   "# TYPE rmsjob_annotations gauge\n"
	   "rmsjob_annotations{jobid=\"job7\",marker=\"solver\",traceid=\"T\"} 1\n"
	   "# HELP tally_trace_region_active Whether a traced region is open "
	   "(1), or ended within the grace period (0)\n"
	   "# TYPE tally_trace_region_active gauge\n"
	   "tally_trace_region_active{rank=\"3\",region=\"solver\",trace=\"T\"} 1\n"
	   "# HELP tally_trace_region_seconds_total Time spent in a traced "
	   "region, including spans still open\n"
	   "# TYPE tally_trace_region_seconds_total counter\n"
	   "tally_trace_region_seconds_total{rank=\"3\",region=\"solver\",trace=\"T\"} 2\n",
	   "open span: active 1, seconds so far, annotation 1");
	free(text);

	/* A scrape at +5 s shows 5 s; the end (at +3 s) arrives later. */
	text = render(s, PROM_FMT_TEXT, 1002 * S, R0 + 5 * S);
	is(sample(text, sec), "5", "open for 5 s at scrape time");
	free(text);
	cmp_ok(prom_store_spans_open(s), "==", 2,
	       "one span open, in its region and its annotation: scrapes "
	       "may not share a page");
	b = tally_batch_new();
	add_span(b, TALLY_SPAN_END, 1, "solver", 3, 0, R0 + 3 * S, R0);
	apply(s, b, 1003 * S);
	cmp_ok(prom_store_spans_open(s), "==", 0, "ended: none open");
	text = render(s, PROM_FMT_TEXT, 1004 * S, R0 + 10 * S);
	is(sample(text, act), "0", "ended: active 0 within the grace period");
	is(sample(text, ann), "0", "annotation 0 within the grace period");
	is(sample(text, sec), "5",
	   "seconds never go back (3 s ran, 5 s were shown)");
	free(text);

	/* Another span of 2 s: 3 + 2 = 5 is still not above 5; then 6. */
	b = tally_batch_new();
	add_span(b, TALLY_SPAN_BEGIN, 2, "solver", 3, 0, R0 + 10 * S,
		 R0 + 10 * S);
	apply(s, b, 1010 * S);
	text = render(s, PROM_FMT_TEXT, 1011 * S, R0 + 12 * S);
	is(sample(text, sec), "5", "3 s ended + 2 s open: 5");
	is(sample(text, act), "1", "open again: active 1");
	free(text);
	text = render(s, PROM_FMT_TEXT, 1011 * S, R0 + 13500 * S / 1000);
	is(sample(text, sec), "6.5", "3 s ended + 3.5 s open: 6.5");
	free(text);
	b = tally_batch_new();
	add_span(b, TALLY_SPAN_END, 2, "solver", 3, 0, R0 + 14 * S,
		 R0 + 10 * S);
	/* an end whose begin this output never saw, with its begin time */
	add_span(b, TALLY_SPAN_END, 9, "io", -1, 0, R0 + 21 * S, R0 + 20 * S);
	/* a begin seen twice */
	add_span(b, TALLY_SPAN_BEGIN, 10, "io", -1, 0, R0 + 30 * S,
		 R0 + 30 * S);
	add_span(b, TALLY_SPAN_BEGIN, 10, "io", -1, 0, R0 + 31 * S,
		 R0 + 31 * S);
	apply(s, b, 1014 * S);
	text = render(s, PROM_FMT_TEXT, 1015 * S, R0 + 32 * S);
	is(sample(text, sec), "7", "3 s + 4 s ended: 7, counted once");
	is(sample(text, "tally_trace_region_seconds_total{region=\"io\","
			"trace=\"T\"}"),
	   "3", "orphan end 1 s + open 2 s; no rank label for rank -1");
	cmp_ok(prom_store_stats(s)->span_duplicate, "==", 1,
	       "duplicate begin counted");
	free(text);

	/* Grace over: active and annotation go, seconds stay. */
	text = render(s, PROM_FMT_TEXT, 1014 * S + 15 * S + 1, R0 + 50 * S);
	ok(!sample(text, act), "after the grace period: no active series");
	ok(!sample(text, ann), "after the grace period: no annotation");
	is(sample(text, sec), "7", "seconds_total stays");
	is(sample(text, "tally_trace_region_active{region=\"io\",trace=\"T\"}"),
	   "1", "the open io region is still active");
	free(text);

	/* OpenMetrics names the counter family without _total. */
	text = render(s, PROM_FMT_OPENMETRICS, 1030 * S, R0 + 50 * S);
	ok(strstr(text, "# TYPE tally_trace_region_seconds counter\n") != NULL,
	   "OpenMetrics: # TYPE tally_trace_region_seconds counter");
	free(text);

	/* After expire (300 s for an event-driven input) seconds go too. */
	text = render(s, PROM_FMT_TEXT, 1014 * S + 301 * S, R0 + 400 * S);
	ok(!sample(text, sec), "ended region gone after expire");
	ok(sample(text, "tally_trace_region_seconds_total{region=\"io\","
			"trace=\"T\"}") != NULL,
	   "a region with an open span never expires");
	free(text);
	prom_store_free(s);

	/* depth label, omnistat only */
	o.span_metrics = PROM_SPANS_TALLY;
	o.depth_label = true;
	s = prom_store_new(&o, NULL);
	b = tally_batch_new();
	add_span(b, TALLY_SPAN_BEGIN, 1, "inner", 0, 2, R0, R0);
	apply(s, b, 0);
	text = render(s, PROM_FMT_TEXT, 0, R0);
	is(sample(text, "tally_trace_region_active{depth=\"2\",rank=\"0\","
			"region=\"inner\",trace=\"T\"}"),
	   "1", "depth label");
	ok(!strstr(text, "rmsjob"), "no annotations in tally mode");
	free(text);
	prom_store_free(s);

	o.span_metrics = PROM_SPANS_OMNISTAT;
	o.jobid = NULL;
	s = prom_store_new(&o, NULL);
	b = tally_batch_new();
	add_span(b, TALLY_SPAN_BEGIN, 1, "a\"b", 0, 0, R0, R0);
	apply(s, b, 0);
	text = render(s, PROM_FMT_TEXT, 0, R0);
	is(sample(text, "rmsjob_annotations{marker=\"a\\\"b\",traceid=\"T\"}"),
	   "1", "omnistat: no jobid label without a job, marker escaped");
	ok(!strstr(text, "tally_trace"), "no tally series in omnistat mode");
	free(text);
	prom_store_free(s);
}

/* The series of region "r" of trace "T", rank 0. */
static const char r_act[] = "tally_trace_region_active{rank=\"0\",region=\"r\",trace=\"T\"}";
static const char r_sec[] = "tally_trace_region_seconds_total{rank=\"0\",region=\"r\",trace=\"T\"}";

/*
 * A span region's lifetime does not depend on the interval of the input
 * that carried its spans: the active gauge shows 0 for the whole grace
 * period and seconds_total stays for the event-driven expiry (300 s).
 */
static void test_span_lifetime(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s;
	struct tally_batch *b;
	char *text;

	for (int round = 0; round < 2; round++) {
		/* round 1: an expire shorter than the grace period */
		o.expire_ns = round ? 5 * S : 0;
		s = prom_store_new(&o, NULL);
		b = tally_batch_new();
		add_span(b, TALLY_SPAN_BEGIN, 1, "r", 0, 0, R0, R0);
		add_span(b, TALLY_SPAN_END, 1, "r", 0, 0, R0 + 2 * S, R0);
		tally_batch_set_source(b, "periodic", 1.0); /* 3 x 1 s */
		apply(s, b, 100 * S);
		text = render(s, PROM_FMT_TEXT, 110 * S, R0 + 20 * S);
		is(sample(text, r_act), "0",
		   "%s: 10 s after the end (> 3 intervals): active 0",
		   round ? "expire 5" : "interval 1 s");
		is(sample(text, r_sec), "2", "and seconds_total 2");
		free(text);
		text = render(s, PROM_FMT_TEXT, 115 * S, R0 + 20 * S);
		is(sample(text, r_act), "0", "15 s after the end (grace): active 0");
		free(text);
		text = render(s, PROM_FMT_TEXT, 115 * S + 1, R0 + 20 * S);
		ok(!sample(text, r_act), "past the grace period: no active series");
		if (round) {
			ok(!sample(text, r_sec),
			   "expire 5 < grace: seconds_total goes with it");
			free(text);
			prom_store_free(s);
			continue;
		}
		is(sample(text, r_sec), "2", "seconds_total stays");
		free(text);
		text = render(s, PROM_FMT_TEXT, 400 * S, R0 + 20 * S);
		is(sample(text, r_sec), "2", "300 s after the end: still there");
		free(text);
		text = render(s, PROM_FMT_TEXT, 400 * S + 1, R0 + 20 * S);
		ok(!sample(text, r_sec), "past 300 s: gone");
		free(text);
		prom_store_free(s);
	}
}

/* The value of @series in @text as a double, NaN when absent */
static double sample_d(const char *text, const char *series)
{
	const char *v = sample(text, series);

	return v ? strtod(v, NULL) : NAN;
}

/*
 * Timestamps from applications can be anything. Expected values: times
 * are clamped to [0, 2^62] ns and a region's time saturates at 2^63 - 1 ns
 * (what the documentation promises), so with 2^62 ns = 4611686018.427387904
 * s and (2^63 - 1) ns = 9223372036.854775807 s. Run under UBSan, an
 * overflow aborts the test.
 */
static void test_span_extremes(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s = prom_store_new(&o, NULL);
	struct tally_batch *b = tally_batch_new();
	const double max62 = 4611686018.427387904, max63 = 9223372036.854775807;
	char name[128];
	char *text;
	double v;

	/* a begin at INT64_MIN, its end at INT64_MAX: 2^62 ns */
	add_span(b, TALLY_SPAN_BEGIN, 1, "wide", 0, 0, INT64_MIN, INT64_MIN);
	add_span(b, TALLY_SPAN_END, 1, "wide", 0, 0, INT64_MAX, INT64_MIN);
	/* an end before its begin: 0 */
	add_span(b, TALLY_SPAN_BEGIN, 2, "back", 0, 0, R0 + 10 * S, 0);
	add_span(b, TALLY_SPAN_END, 2, "back", 0, 0, R0 + 5 * S, 0);
	/* three spans of 2^62 ns each: the sum saturates */
	for (uint64_t id = 3; id < 6; id++) {
		add_span(b, TALLY_SPAN_BEGIN, id, "sum", 0, 0, -5, -5);
		add_span(b, TALLY_SPAN_END, id, "sum", 0, 0, INT64_MAX, -5);
	}
	/* orphan ends: a begin at INT64_MIN (clamped to 0: unknown, nothing
	 * counted) and one at 1 ns after 1970 */
	add_span(b, TALLY_SPAN_END, 6, "orphan", 0, 0, INT64_MAX, INT64_MIN);
	add_span(b, TALLY_SPAN_END, 7, "orphan1", 0, 0, INT64_MAX, 1);
	/* 1000 spans open since INT64_MIN */
	for (uint64_t id = 100; id < 1100; id++)
		add_span(b, TALLY_SPAN_BEGIN, id, "open", 0, 0, INT64_MIN,
			 INT64_MIN);
	apply(s, b, 1 * S);

	text = render(s, PROM_FMT_TEXT, 2 * S, INT64_MAX);
	snprintf(name, sizeof(name), "tally_trace_region_seconds_total{rank=\"0\",region=\"%s\",trace=\"T\"}", "wide");
	v = sample_d(text, name);
	ok(v == max62, "INT64_MIN .. INT64_MAX counts 2^62 ns (%.17g)", v);
	snprintf(name, sizeof(name), "tally_trace_region_seconds_total{rank=\"0\",region=\"%s\",trace=\"T\"}", "back");
	is(sample(text, name), "0", "an end before its begin counts 0");
	snprintf(name, sizeof(name), "tally_trace_region_seconds_total{rank=\"0\",region=\"%s\",trace=\"T\"}", "sum");
	v = sample_d(text, name);
	ok(v == max63, "3 x 2^62 ns saturate at 2^63 - 1 ns (%.17g)", v);
	snprintf(name, sizeof(name), "tally_trace_region_seconds_total{rank=\"0\",region=\"%s\",trace=\"T\"}", "orphan");
	is(sample(text, name), "0", "orphan end with a negative begin: 0");
	snprintf(name, sizeof(name), "tally_trace_region_seconds_total{rank=\"0\",region=\"%s\",trace=\"T\"}", "orphan1");
	v = sample_d(text, name);
	ok(fabs(v - max62) < 1e-6, "orphan end begun at 1 ns: 2^62 - 1 ns (%.17g)", v);
	snprintf(name, sizeof(name), "tally_trace_region_seconds_total{rank=\"0\",region=\"%s\",trace=\"T\"}", "open");
	v = sample_d(text, name);
	ok(fabs(v - 1000 * max62) <= 1e-12 * 1000 * max62,
	   "1000 open spans at INT64_MAX: 1000 x 2^62 ns (%.17g)", v);
	free(text);

	/* a scrape clock before 1970: open spans count 0, not negative */
	prom_store_free(s);
	s = prom_store_new(&o, NULL);
	b = tally_batch_new();
	add_span(b, TALLY_SPAN_BEGIN, 1, "early", 0, 0, R0, R0);
	apply(s, b, 1 * S);
	text = render(s, PROM_FMT_TEXT, 2 * S, INT64_MIN);
	snprintf(name, sizeof(name), "tally_trace_region_seconds_total{rank=\"0\",region=\"%s\",trace=\"T\"}", "early");
	is(sample(text, name), "0", "scrape time INT64_MIN: 0 s open");
	free(text);
	text = render(s, PROM_FMT_TEXT, 3 * S, R0 + 3 * S);
	is(sample(text, name), "3", "then 3 s at begin + 3 s");
	free(text);
	prom_store_free(s);
}

/* max_series: new series beyond it are dropped and counted; known ones
 * are still updated */
static void test_max_series(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s;
	struct tally_batch *b;
	char *text;

	o.max_series = 3;
	s = prom_store_new(&o, NULL);
	b = tally_batch_new();
	add_gauges(b, "g", 5);
	add_span(b, TALLY_SPAN_BEGIN, 1, "r", 0, 0, R0, R0);
	add_span(b, TALLY_SPAN_END, 1, "r", 0, 0, R0 + S, R0);
	apply(s, b, 1 * S);
	cmp_ok(prom_store_series(s), "==", 3, "3 series kept");
	cmp_ok(prom_store_stats(s)->series_limit, "==", 4,
	       "2 gauges, a span begin and its end dropped: series_limit");
	cmp_ok(prom_store_stats(s)->nomem, "==", 0, "not counted as nomem");
	b = tally_batch_new();
	add_gauge(b, "g", NULL, 7, "i", "2");
	add_gauge(b, "h", NULL, 7, NULL, NULL);
	apply(s, b, 2 * S);
	text = render(s, PROM_FMT_TEXT, 3 * S, R0);
	is(text,
	   "# HELP g g\n"
	   "# TYPE g gauge\n"
	   "g{i=\"0\"} 0\n"
	   "g{i=\"1\"} 1\n"
	   "g{i=\"2\"} 7\n",
	   "the first 3 series, updated; no family h, no span series");
	free(text);
	cmp_ok(prom_store_stats(s)->series_limit, "==", 5, "h counted");
	/* room again once series expire */
	cmp_ok(prom_store_sweep(s, 400 * S), "==", 3, "all expire");
	b = tally_batch_new();
	add_gauge(b, "h", NULL, 8, NULL, NULL);
	apply(s, b, 401 * S);
	cmp_ok(prom_store_series(s), "==", 1, "a new series fits again");
	prom_store_free(s);
}

/* A span's jobid attribute (a job's collector gives every span one) is a
 * label of its region series, between depth and rank. */
static void test_span_jobid(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s;
	struct tally_batch *b = tally_batch_new();
	struct tally_span sp = {
		.trace = "T",
		.name = "r",
		.span_id = 1,
		.phase = TALLY_SPAN_BEGIN,
		.depth = 2,
		.src = { .host = "node1", .pid = 100, .rank = 3 },
		.attrs = tally_labels_newv("jobid", "4242", NULL),
		.begin_ns = R0,
	};
	char *text;

	o.depth_label = true;
	s = prom_store_new(&o, NULL);
	if (tally_batch_add_span(b, &sp, R0) < 0)
		bail_out("add_span");
	tally_labels_unref(sp.attrs);
	apply(s, b, 1 * S);
	text = render(s, PROM_FMT_TEXT, 1 * S, R0 + 2 * S);
	is(sample(text, "tally_trace_region_active{depth=\"2\",jobid=\"4242\","
			"rank=\"3\",region=\"r\",trace=\"T\"}"),
	   "1", "active, with the jobid label");
	is(sample(text, "tally_trace_region_seconds_total{depth=\"2\","
			"jobid=\"4242\",rank=\"3\",region=\"r\","
			"trace=\"T\"}"),
	   "2", "seconds, with the jobid label");
	free(text);
	prom_store_free(s);
}

/*
 * tallyd's own series (tally_*, process_*) have room of their own: at the
 * cap, the drop counter that reports the overflow is itself a new series
 * and must be shown (issue 9, item 14). Their room is bounded too.
 */
static void test_self_series_room(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s;
	struct tally_batch *b;
	struct tally_labels *ls;
	char *text;

	o.max_series = 3;
	s = prom_store_new(&o, NULL);
	b = tally_batch_new();
	add_gauges(b, "g", 5);
	apply(s, b, 1 * S);
	cmp_ok(prom_store_stats(s)->series_limit, "==", 2, "2 user series over");
	b = tally_batch_new();
	add_gauge(b, "tally_queue_batches", "Queue", 0, "instance", "prom");
	add_gauge(b, "process_resident_memory_bytes", "RSS", 4096, NULL, NULL);
	ls = tally_labels_newv("reason", "series_limit", NULL);
	if (tally_batch_add_metric(b, TALLY_COUNTER, "tally_dropped_total",
				   "Drops", ls, 2, 0) < 0)
		bail_out("add_metric");
	tally_labels_unref(ls);
	apply(s, b, 2 * S);
	cmp_ok(prom_store_series(s), "==", 6, "3 user + 3 own series");
	cmp_ok(prom_store_stats(s)->series_limit, "==", 2,
	       "own series not refused at max_series");
	text = render(s, PROM_FMT_TEXT, 3 * S, R0);
	is(sample(text, "tally_dropped_total{reason=\"series_limit\"}"), "2",
	   "the overflow is on the page");
	is(sample(text, "process_resident_memory_bytes"), "4096",
	   "process metrics too");
	free(text);
	/* own series take no user room: a user series still cannot come */
	b = tally_batch_new();
	add_gauge(b, "h", NULL, 1, NULL, NULL);
	apply(s, b, 4 * S);
	cmp_ok(prom_store_stats(s)->series_limit, "==", 3, "h refused");
	/* their own room is bounded */
	b = tally_batch_new();
	add_gauges(b, "tally_flood", PROM_SELF_SERIES);
	apply(s, b, 5 * S);
	cmp_ok(prom_store_series(s), "==", 3 + PROM_SELF_SERIES,
	       "at most PROM_SELF_SERIES own series");
	cmp_ok(prom_store_stats(s)->series_limit, "==", 3 + 3,
	       "the 3 beyond it dropped");
	cmp_ok(prom_series_is_self("tally_trace_region_active"), "==", 1,
	       "a tally_ name is tallyd's");
	cmp_ok(prom_series_is_self("node_tally_x"), "==", 0, "prefix only");
	prom_store_free(s);
}

/*
 * Info metrics: typed info in OpenMetrics, family named without _info
 * (OpenMetrics 1.0, "Info"); gauges in 0.0.4. Families that OpenMetrics
 * would name alike (gauge foo, counter foo_total: both family foo) are
 * not both exposed: the later one is dropped.
 */
static void test_info_and_om_families(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s = prom_store_new(&o, NULL);
	struct tally_batch *b = tally_batch_new();
	struct tally_labels *ver = tally_labels_newv("version", "1.2", NULL);
	struct tally_bucket bk[] = { { 1, 1 } };
	char *text;

	tally_batch_add_metric(b, TALLY_INFO, "tally_build_info", "Build",
			       ver, 1, 0);
	tally_batch_add_metric(b, TALLY_INFO, "os", "OS", ver, 1, 0);
	add_gauge(b, "foo", "a gauge", 1, NULL, NULL);
	tally_batch_add_metric(b, TALLY_COUNTER, "foo_total", "a counter",
			       NULL, 2, 0);
	tally_batch_add_metric(b, TALLY_COUNTER, "bar", "a counter", NULL, 3,
			       0);
	add_gauge(b, "bar", "a gauge", 4, NULL, NULL);
	tally_batch_add_histogram(b, "lat", "a histogram", NULL, bk, 1, 1, 1,
				  0);
	tally_batch_add_metric(b, TALLY_COUNTER, "lat_total", "a counter",
			       NULL, 5, 0);
	add_gauge(b, "tally_build", "a gauge", 6, NULL, NULL);
	apply(s, b, 1 * S);
	tally_labels_unref(ver);

	text = render(s, PROM_FMT_OPENMETRICS, 2 * S, R0);
	is(text,
	   "# HELP bar a counter\n"
	   "# TYPE bar counter\n"
	   "bar_total 3\n"
	   "# HELP foo a gauge\n"
	   "# TYPE foo gauge\n"
	   "foo 1\n"
	   "# HELP lat a histogram\n"
	   "# TYPE lat histogram\n"
	   "lat_bucket{le=\"1\"} 1\n"
	   "lat_bucket{le=\"+Inf\"} 1\n"
	   "lat_sum 1\n"
	   "lat_count 1\n"
	   "# HELP os OS\n"
	   "# TYPE os info\n"
	   "os_info{version=\"1.2\"} 1\n"
	   "# HELP tally_build Build\n"
	   "# TYPE tally_build info\n"
	   "tally_build_info{version=\"1.2\"} 1\n"
	   "# EOF\n",
	   "OpenMetrics: info families, one family per OpenMetrics name");
	free(text);
	text = render(s, PROM_FMT_TEXT, 2 * S, R0);
	ok(strstr(text, "# TYPE tally_build_info gauge\n"
			"tally_build_info{version=\"1.2\"} 1\n") != NULL,
	   "0.0.4: info is a gauge under its _info name");
	ok(strstr(text, "# TYPE os_info gauge\n") != NULL,
	   "0.0.4: an info without _info gets it");
	free(text);
	cmp_ok(prom_store_stats(s)->name_collision, "==", 3,
	       "foo_total, lat_total, gauge tally_build dropped");
	cmp_ok(prom_store_stats(s)->type_conflict, "==", 1,
	       "gauge bar: raw series bar is a counter already");
	prom_store_free(s);
}

/* Series arriving in any order render in the same sorted order. */
static void test_order(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s1 = prom_store_new(&o, NULL);
	struct prom_store *s2 = prom_store_new(&o, NULL);
	char lv[16], *t1, *t2;
	int n = 500, bad = 0;

	srand(7);
	for (int round = 0; round < 5; round++) {
		struct tally_batch *b1 = tally_batch_new();
		struct tally_batch *b2 = tally_batch_new();

		for (int i = 0; i < n; i++) {
			int k = round * n + i;
			int r = rand() % (5 * n);

			snprintf(lv, sizeof(lv), "%05d", k);
			add_gauge(b1, k % 2 ? "odd" : "even", NULL, k, "i", lv);
			snprintf(lv, sizeof(lv), "%05d", r);
			add_gauge(b2, r % 2 ? "odd" : "even", NULL, r, "i", lv);
		}
		apply(s1, b1, 0);
		apply(s2, b2, 0);
		/* render between rounds: sorted head + new tail merge */
		free(render(s2, PROM_FMT_TEXT, 0, R0));
	}
	/* s2 saw random keys, possibly not all: add the missing ones. */
	struct tally_batch *b = tally_batch_new();
	for (int k = 0; k < 5 * n; k++) {
		snprintf(lv, sizeof(lv), "%05d", k);
		add_gauge(b, k % 2 ? "odd" : "even", NULL, k, "i", lv);
	}
	apply(s2, b, 0);
	t1 = render(s1, PROM_FMT_TEXT, 0, R0);
	t2 = render(s2, PROM_FMT_TEXT, 0, R0);
	is(t2, t1, "same exposition whatever the arrival order");
	/* and it is sorted */
	const char *prev = NULL;
	for (char *p = t1; *p; p = strchr(p, '\n') + 1) {
		if (*p == '#')
			continue;
		if (prev && strncmp(prev, p, 5) == 0 &&
		    strncmp(prev, p, strchr(p, ' ') - p) > 0)
			bad++;
		prev = p;
	}
	ok(bad == 0, "series sorted within families");
	free(t1);
	free(t2);
	prom_store_free(s1);
	prom_store_free(s2);
}


static bool gone_pids[256];
static unsigned asked_pids;

static bool fake_alive(uint32_t pid)
{
	asked_pids++;
	return !(pid < 256 && gone_pids[pid]);
}

/* A span event of process @pid on @host (trace "T", rank 0). */
static void add_proc_span(struct tally_batch *b, enum tally_span_phase ph,
			  uint64_t id, const char *host, uint32_t pid,
			  int64_t ts, int64_t begin_ns)
{
	struct tally_span sp = {
		.trace = "T",
		.name = "r",
		.span_id = id,
		.phase = ph,
		.src = { .host = host, .pid = pid, .rank = 0 },
		.begin_ns = begin_ns,
	};

	if (tally_batch_add_span(b, &sp, ts) < 0)
		bail_out("add_proc_span");
}

/*
 * A region cannot stay open, or count time, after its process: before a
 * scrape the store asks each process of this host with open spans whether
 * it runs, and stops the spans of one that is gone where it was last seen
 * running, whether or not their input ever ends them.
 */
static void test_process_gone(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s;
	struct tally_batch *b;
	char *text;

	o.local_host = "node1";
	o.pid_alive = fake_alive;
	s = prom_store_new(&o, NULL);

	b = tally_batch_new();
	add_proc_span(b, TALLY_SPAN_BEGIN, 1, "node1", 100, R0, R0);
	apply(s, b, 1000 * S);
	text = render(s, PROM_FMT_TEXT, 1002 * S, R0 + 2 * S);
	is(sample(text, r_act), "1", "process 100 runs: active");
	is(sample(text, r_sec), "2", "2 s so far");
	free(text);

	gone_pids[100] = true;
	text = render(s, PROM_FMT_TEXT, 1005 * S, R0 + 5 * S);
	is(sample(text, r_act), "0", "process 100 gone: no longer active");
	is(sample(text, r_sec), "2",
	   "the span stopped at the last scrape that saw it run: 2 s, not 5");
	free(text);
	cmp_ok(prom_store_stats(s)->span_process_gone, "==", 1, "counted");

	/* its end, sent while it ran, arrives late: counted to its time */
	b = tally_batch_new();
	add_proc_span(b, TALLY_SPAN_END, 1, "node1", 100, R0 + 3 * S, R0);
	apply(s, b, 1006 * S);
	text = render(s, PROM_FMT_TEXT, 1006 * S, R0 + 6 * S);
	is(sample(text, r_sec), "3", "the late end counts it to 3 s");
	free(text);

	/* A process gone before any scrape saw it: stopped at its last
	 * event. Another host's, and pid 0, are not this host's to ask. */
	gone_pids[101] = true;
	b = tally_batch_new();
	add_proc_span(b, TALLY_SPAN_BEGIN, 2, "node1", 101, R0 + 10 * S,
		      R0 + 10 * S);
	add_proc_span(b, TALLY_SPAN_BEGIN, 3, "node2", 101, R0 + 10 * S,
		      R0 + 10 * S);
	add_proc_span(b, TALLY_SPAN_BEGIN, 4, "node1", 0, R0 + 10 * S,
		      R0 + 10 * S);
	apply(s, b, 1010 * S);
	asked_pids = 0;
	text = render(s, PROM_FMT_TEXT, 1012 * S, R0 + 12 * S);
	is(sample(text, r_sec), "7",
	   "3 s ended, pid 101 of node1 counted nothing, the two others 2 s "
	   "each as open spans");
	is(sample(text, r_act), "1", "the two others are open");
	cmp_ok(asked_pids, "==", 1, "only pid 101 of node1 was asked");
	free(text);

	/* A frozen span whose end never comes is forgotten with its region's
	 * lifetime (300 s): then the same span may begin again. */
	text = render(s, PROM_FMT_TEXT, 1012 * S + 301 * S, R0 + 400 * S);
	free(text);
	gone_pids[101] = false;
	b = tally_batch_new();
	add_proc_span(b, TALLY_SPAN_BEGIN, 2, "node1", 101, R0 + 401 * S,
		      R0 + 401 * S);
	apply(s, b, 1012 * S + 302 * S);
	cmp_ok(prom_store_stats(s)->span_duplicate, "==", 0,
	       "the forgotten frozen span is no duplicate");
	gone_pids[100] = gone_pids[101] = false;
	prom_store_free(s);
}

/* Three intervals of a series whose label keys collide once sanitized. */
static struct prom_store *collide_store;

static void collide_3(void)
{
	struct prom_store *s = collide_store;
	struct tally_labels *ls =
		tally_labels_newv("k.1", "a", "k_1", "b", NULL);
	struct tally_interval iv = { .count = 1 };

	for (int i = 0; i < 3; i++) {
		struct tally_batch *b = tally_batch_new();

		iv.start_ns = i * 10 * S;
		tally_batch_add_interval(b, TALLY_COUNTER, "clash", NULL, ls, 1,
					 &iv, (i + 1) * 10 * S);
		apply(s, b, (i + 1) * 10 * S);
	}
	tally_labels_unref(ls);
}

/*
 * An overflowing counter is not finite, not negative: counted as
 * not_finite; a refused series is refused (and counted) every interval,
 * but warned about once.
 */
static void test_not_finite_and_warn_once(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s = prom_store_new(&o, NULL);
	struct tally_interval iv = { .count = 1 };
	struct tally_batch *b = tally_batch_new();
	char *text, *err;

	/* 1e308 at @0.1 is an increment of +Inf */
	tally_batch_add_delta(b, TALLY_COUNTER, "big", NULL, NULL, 1e308, 0.1,
			      0);
	/* two 1e308 increments: the total overflows */
	tally_batch_add_delta(b, TALLY_COUNTER, "sum", NULL, NULL, 1e308, 1, 0);
	tally_batch_add_delta(b, TALLY_COUNTER, "sum", NULL, NULL, 1e308, 1, 0);
	/* an interval sum that overflowed (aggregate's) */
	tally_batch_add_interval(b, TALLY_COUNTER, "agg", NULL, NULL, INFINITY,
				 &iv, 10 * S);
	tally_batch_add_interval(b, TALLY_COUNTER, "ok", NULL, NULL, 1e308, &iv,
				 10 * S);
	tally_batch_add_interval(b, TALLY_COUNTER, "ok", NULL, NULL, 1e308, &iv,
				 10 * S);
	apply(s, b, 10 * S);
	cmp_ok(prom_store_stats(s)->not_finite, "==", 4,
	       "+Inf increment, overflowing total, +Inf and overflowing "
	       "interval sums: not_finite");
	cmp_ok(prom_store_stats(s)->bad_delta, "==", 0, "none is bad_delta");
	text = render(s, PROM_FMT_TEXT, 10 * S, R0);
	is(sample(text, "sum_total"), "1e+308", "sum keeps its finite total");
	ok(!strstr(text, "big_total") && !strstr(text, "agg_total") &&
		   !strstr(text, "Inf"),
	   "no infinite counter on the page");
	free(text);

	tally_log_setup(TALLY_LOG_STDERR, LOG_INFO);
	tally_log_set_window(0); /* no burst suppression: every line shows */
	collide_store = s;
	err = tap_capture_stderr(collide_3);
	cmp_ok(prom_store_stats(s)->label_collision, "==", 3,
	       "a label collision counted every interval");
	cmp_ok(tap_count(err, "two label names become the same"), "==", 1,
	       "and logged once");
	tally_log_set_window(10);
	prom_store_free(s);
}

/* A textfile's batch: node_load1 gauge, node_load5 untyped, job_ok gauge,
 * every record read from /d/a.prom. */
static struct tally_batch *file_batch(void)
{
	struct tally_batch *b = tally_batch_new();

	add_gauge(b, "node_load1", "from a file", 99, NULL, NULL);
	tally_batch_add_metric(b, TALLY_UNTYPED, "node_load5", NULL, NULL, 98,
			       0);
	add_gauge(b, "job_ok", NULL, 1, NULL, NULL);
	tally_batch_add_delta(b, TALLY_COUNTER, "jobs", NULL, NULL, 100, 1, 0);
	for (size_t i = 0; i < tally_batch_count(b); i++)
		tally_batch_set_origin(b, i, "/d/a.prom");
	tally_batch_set_source(b, "tf", 10.0);
	return b;
}

/* procfs' batch: node_load1 and node_load5 gauges, a jobs increment */
static struct tally_batch *proc_batch(const char *source)
{
	struct tally_batch *b = tally_batch_new();

	add_gauge(b, "node_load1", "1m load average.", 0.53, NULL, NULL);
	add_gauge(b, "node_load5", "5m load average.", 0.63, NULL, NULL);
	tally_batch_add_delta(b, TALLY_COUNTER, "jobs", NULL, NULL, 1, 1, 0);
	tally_batch_set_source(b, source, 10.0);
	return b;
}

static struct prom_store *source_store;

static void file_twice(void)
{
	apply(source_store, file_batch(), 30 * S);
	apply(source_store, file_batch(), 40 * S);
}

/*
 * A series read from a file (tally_batch_set_origin(): the textfile
 * input's) never replaces another input's: whichever comes first, the
 * input's own series is shown, the file's is dropped, counted and logged
 * once naming the file; the file's other series stay.
 */
static void test_source_collision(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s = prom_store_new(&o, NULL);
	char *text, *err;

	/* the file first: its series are shown until an input has them */
	apply(s, file_batch(), 10 * S);
	text = render(s, PROM_FMT_TEXT, 10 * S, R0);
	is(sample(text, "node_load1"), "99", "a file's series alone: shown");
	ok(strstr(text, "# TYPE node_load5 untyped\n") != NULL,
	   "its untyped family too");
	free(text);
	apply(s, proc_batch("proc"), 20 * S);
	text = render(s, PROM_FMT_TEXT, 20 * S, R0);
	is(sample(text, "node_load1"), "0.53", "the input's takes over");
	ok(strstr(text, "# TYPE node_load5 gauge\n") != NULL,
	   "with its family when the type differs");
	is(sample(text, "node_load5"), "0.63", "and its value");
	is(sample(text, "jobs_total"), "1",
	   "an increment taking over counts from 0, not the file's total");
	is(sample(text, "job_ok"), "1", "the file's other series stay");
	free(text);

	tally_log_setup(TALLY_LOG_STDERR, LOG_INFO);
	tally_log_set_window(0);
	source_store = s;
	err = tap_capture_stderr(file_twice);
	text = render(s, PROM_FMT_TEXT, 40 * S, R0);
	is(sample(text, "node_load1"), "0.53", "the file does not replace it");
	is(sample(text, "node_load5"), "0.63", "nor the other type's");
	is(sample(text, "jobs_total"), "1", "nor add to the input's counter");
	is(sample(text, "job_ok"), "1", "the file's own series still updated");
	cmp_ok(prom_store_stats(s)->source_collision, "==", 6,
	       "each dropped record counted as source_collision");
	cmp_ok(prom_store_stats(s)->type_conflict, "==", 0,
	       "not as a type conflict");
	cmp_ok(tap_count(err, "/d/a.prom: node_load1{}: input proc exports "
			      "this series"),
	       "==", 1, "logged once, naming the file and the series");
	free(text);

	/* two inputs' own records: the last shown, increments add up */
	apply(s, proc_batch("proc2"), 50 * S);
	text = render(s, PROM_FMT_TEXT, 50 * S, R0);
	is(sample(text, "jobs_total"), "2",
	   "two inputs' increments of one counter add up, as before");
	free(text);
	tally_log_set_window(10);
	prom_store_free(s);

	/* the input first: the file never shows */
	s = prom_store_new(&o, NULL);
	apply(s, proc_batch("proc"), 10 * S);
	apply(s, file_batch(), 20 * S);
	text = render(s, PROM_FMT_TEXT, 20 * S, R0);
	is(sample(text, "node_load1"), "0.53", "input first: kept");
	ok(strstr(text, "# TYPE node_load5 gauge\n") != NULL &&
		   !strstr(text, "98"),
	   "input first: the file's untyped node_load5 dropped");
	cmp_ok(prom_store_stats(s)->source_collision, "==", 3,
	       "and counted");
	free(text);
	prom_store_free(s);
}

/* A family's HELP follows its records' (a textfile's HELP line edited). */
static void test_help_changes(void)
{
	struct prom_store_opts o = default_opts();
	struct prom_store *s = prom_store_new(&o, NULL);
	struct tally_batch *b = tally_batch_new();
	char *text;

	add_gauge(b, "h", "First text.", 1, "k", "a");
	add_gauge(b, "h", "First text.", 2, "k", "b");
	apply(s, b, 10 * S);
	b = tally_batch_new();
	add_gauge(b, "h", "Second text.", 3, "k", "a");
	apply(s, b, 20 * S);
	text = render(s, PROM_FMT_TEXT, 20 * S, R0);
	ok(strstr(text, "# HELP h Second text.\n") && !strstr(text, "First"),
	   "a changed HELP replaces the family's");
	free(text);
	/* a file's HELP does not replace an input's own */
	b = tally_batch_new();
	add_gauge(b, "h", "From a file.", 4, "k", "c");
	tally_batch_set_origin(b, 0, "/d/h.prom");
	tally_batch_set_source(b, "tf", 10.0);
	apply(s, b, 30 * S);
	text = render(s, PROM_FMT_TEXT, 30 * S, R0);
	ok(strstr(text, "# HELP h Second text.\n") != NULL,
	   "a file's HELP does not replace an input's");
	is(sample(text, "h{k=\"c\"}"), "4", "its series is shown");
	free(text);
	prom_store_free(s);
}

int main(void)
{
	plan(NO_PLAN);
	test_basic();
	test_histogram_summary();
	test_names();
	test_expiry();
	test_deltas();
	test_static_labels();
	test_spans();
	test_span_lifetime();
	test_span_extremes();
	test_max_series();
	test_self_series_room();
	test_span_jobid();
	test_info_and_om_families();
	test_order();
	test_process_gone();
	test_not_finite_and_warn_once();
	test_source_collision();
	test_help_changes();
	return done_testing();
}
