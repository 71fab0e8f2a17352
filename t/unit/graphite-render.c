/* SPDX-License-Identifier: MIT */
/*
 * t/unit/graphite-render.c - the graphite output's lines
 * (plugins/output/graphite/render.c), byte for byte: the escaping table,
 * layouts, tags, histograms and summaries, span region time, what is left
 * out and counted, and that a refused batch counts its spans once
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include <tally/exposition.h>
#include <tally/labels.h>
#include <tally/record.h>

#include "../../plugins/output/graphite/render.h"

#include "tap.h"

/* 2024-07-26 13:20:00.75 UTC */
#define T0 1722000000750000000LL

static struct evbuffer *out;

/* The lines @b renders to with @r, as a string (static buffer). */
static const char *lines(struct gr_render *r, struct tally_batch *b,
			 struct gr_counts *c)
{
	static char text[8192];
	size_t n;

	evbuffer_drain(out, evbuffer_get_length(out));
	if (gr_render_batch(r, b, out, c) < 0)
		bail_out("render: %s", strerror(errno));
	gr_render_commit(r);
	n = evbuffer_get_length(out);
	if (n >= sizeof(text))
		bail_out("too long");
	evbuffer_copyout(out, text, n);
	text[n] = '\0';
	return text;
}

/* The first line of @text, without its newline (static buffer). */
static const char *first_line(const char *text)
{
	static char line[1024];

	snprintf(line, sizeof(line), "%.*s", (int)strcspn(text, "\n"), text);
	return line;
}

static void layout(const char *spec, struct gr_part *parts, size_t *n)
{
	char buf[256], *save = NULL, *tok;
	static char keep[16][32];
	const char *items[GR_MAX_PARTS + 2];
	size_t k = 0;
	char err[256];

	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		snprintf(keep[k], sizeof(keep[k]), "%s", tok);
		items[k] = keep[k];
		k++;
	}
	if (gr_layout_parse(items, k, parts, n, err, sizeof(err)) < 0)
		bail_out("layout %s: %s", spec, err);
}

static void test_escape(void)
{
	static const struct {
		const char *in;
		enum gr_ctx ctx;
		const char *want;
	} cases[] = {
		{ "app.req.count", GR_CTX_NAME, "app.req.count" },
		{ ".a..b.", GR_CTX_NAME, "a.b" },
		{ "...", GR_CTX_NAME, "" },
		{ "a b\tc\nd", GR_CTX_NAME, "a_b_c_d" },
		{ "a/b\\c;d", GR_CTX_NAME, "a_b_c_d" },
		{ "f(x),g*h?[i]{j}", GR_CTX_NAME, "f_x__g_h__i__j_" },
		{ "q\"u'o", GR_CTX_NAME, "q_u_o" },
		{ "~tilde", GR_CTX_NAME, "_tilde" },
		{ "a=b!c^d", GR_CTX_NAME, "a=b!c^d" },
		{ "sda1.part", GR_CTX_NODE, "sda1_part" },
		{ "/dev/sda 1", GR_CTX_NODE, "_dev_sda_1" },
		{ "", GR_CTX_NODE, "" },
		{ "k.e=y!^", GR_CTX_TAGKEY, "k.e_y__" },
		{ "v.a=l;u", GR_CTX_TAGVAL, "v.a=l_u" },
		{ "~v", GR_CTX_TAGVAL, "_v" },
		{ "a~b", GR_CTX_TAGVAL, "a~b" },
		{ "h\xc3\xa9t\xc3\xa9", GR_CTX_NODE, "h\xc3\xa9t\xc3\xa9" },
		{ "\x7f\x01", GR_CTX_NODE, "__" },
		{ NULL },
	};
	char buf[64];

	for (int i = 0; cases[i].in; i++) {
		size_t n = gr_escape(buf, cases[i].in, cases[i].ctx);

		is(buf, cases[i].want, "escape \"%s\" (ctx %d)", cases[i].in,
		   (int)cases[i].ctx);
		cmp_ok(n, "==", strlen(cases[i].want), "its length");
	}
}

static void test_values(void)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{ 0.1, "0.1" },		{ 42, "42" },
		{ -3.5, "-3.5" },	{ 1e300, "1e+300" },
		{ 1.0 / 3, "0.3333333333333333" },
		{ 123456789012.0, "123456789012" },
		{ 0, "0" },
	};
	char buf[TALLY_EXPO_DOUBLE_MAX];

	/* the core's shortest form that reads back (carbon keeps doubles) */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tally_expo_format_double(buf, cases[i].v);
		is(buf, cases[i].want, "value %s", cases[i].want);
		ok(strtod(buf, NULL) == cases[i].v, "reads back exactly");
	}
}

static void test_layouts(void)
{
	static const struct {
		const char *items;
		const char *err;
	} bad[] = {
		{ "prefix,labels", "layout: \"name\" must appear once" },
		{ "prefix,host,name",
		  "layout: \"labels\" must appear (the labels not named "
		  "would be left out, and series that differ in them would "
		  "write one path)" },
		{ "name,name", "layout: \"name\" appears twice" },
		{ "name,host,host", "layout: \"host\" appears twice" },
		{ "name,9x",
		  "layout: \"9x\" is neither prefix, name, labels nor a "
		  "label name" },
		{ NULL },
	};
	struct gr_part parts[GR_MAX_PARTS];
	size_t n;
	char err[256];

	for (int i = 0; bad[i].items; i++) {
		char buf[64], *save = NULL;
		const char *items[8];
		size_t k = 0;

		snprintf(buf, sizeof(buf), "%s", bad[i].items);
		for (char *t = strtok_r(buf, ",", &save); t;
		     t = strtok_r(NULL, ",", &save))
			items[k++] = t;
		ok(gr_layout_parse(items, k, parts, &n, err, sizeof(err)) ==
				   -1 &&
			   errno == EINVAL,
		   "layout %s refused", bad[i].items);
		is(err, bad[i].err, "with its reason");
	}
}

static void test_metrics(void)
{
	struct tally_labels *host = tally_labels_newv("host", "node1.example",
						      NULL);
	struct tally_labels *cpu = tally_labels_newv("cpu", "0", "mode",
						     "user", NULL);
	struct tally_labels *dev = tally_labels_newv("device", "sda1.p",
						     "empty", "", NULL);
	struct tally_labels *own_host = tally_labels_newv("host", "other",
							  NULL);
	struct tally_bucket bk[] = { { 0.1, 1 }, { 1, 3 } };
	struct tally_quantile qs[] = { { 0.5, 0.25 }, { 0.99, 2 } };
	struct tally_batch *b = tally_batch_new();
	struct gr_render r = { 0 };
	struct gr_counts c = { 0 };
	struct gr_part parts[GR_MAX_PARTS];
	size_t n;

	tally_batch_add_metric(b, TALLY_COUNTER, "node_cpu_seconds_total",
			       NULL, cpu, 12.5, T0);
	tally_batch_add_metric(b, TALLY_GAUGE, "app.req.latency", NULL, dev,
			       0.1, T0);
	tally_batch_add_metric(b, TALLY_GAUGE, "node_load1", NULL, own_host, 2,
			       T0);
	tally_batch_add_metric(b, TALLY_GAUGE, "bad", NULL, NULL, NAN, T0);
	tally_batch_add_metric(b, TALLY_GAUGE, "bad", NULL, NULL, INFINITY,
			       T0);
	tally_batch_add_histogram(b, "lat_seconds", NULL, NULL, bk, 2, 4, 2.5,
				  T0);
	tally_batch_add_summary(b, "rpc_seconds", NULL, NULL, qs, 2, 10, 3,
				T0);
	tally_batch_add_delta(b, TALLY_COUNTER, "delta", NULL, NULL, 1, 1, T0);

	layout("prefix,host,name,labels", parts, &n);
	gr_render_init(&r, GR_FMT_PATH, "hpc..frontier.", parts, n, host, 10);
	is(lines(&r, b, &c),
	   "hpc.frontier.node1_example.node_cpu_seconds_total.0.user 12.5 "
	   "1722000000\n"
	   "hpc.frontier.node1_example.app.req.latency.sda1_p 0.1 "
	   "1722000000\n"
	   "hpc.frontier.other.node_load1 2 1722000000\n"
	   "hpc.frontier.node1_example.lat_seconds_bucket.0_1 1 1722000000\n"
	   "hpc.frontier.node1_example.lat_seconds_bucket.1 3 1722000000\n"
	   "hpc.frontier.node1_example.lat_seconds_bucket.+Inf 4 1722000000\n"
	   "hpc.frontier.node1_example.lat_seconds_count 4 1722000000\n"
	   "hpc.frontier.node1_example.lat_seconds_sum 2.5 1722000000\n"
	   "hpc.frontier.node1_example.rpc_seconds.0_5 0.25 1722000000\n"
	   "hpc.frontier.node1_example.rpc_seconds.0_99 2 1722000000\n"
	   "hpc.frontier.node1_example.rpc_seconds_count 10 1722000000\n"
	   "hpc.frontier.node1_example.rpc_seconds_sum 3 1722000000\n",
	   "path format: prefix, host, dotted name kept, label values in key "
	   "order, dots in values replaced, empty values no node, the "
	   "record's host over the static one, whole seconds");
	cmp_ok(c.points, "==", 12, "12 points");
	cmp_ok(c.non_finite, "==", 2, "NaN and +Inf left out, counted");
	cmp_ok(c.other, "==", 1, "a delta is not rendered (counted)");
	gr_render_fini(&r);

	layout("name,labels,host", parts, &n);
	gr_render_init(&r, GR_FMT_PATH, "", parts, n, host, 10);
	memset(&c, 0, sizeof(c));
	is(first_line(lines(&r, b, &c)),
	   "node_cpu_seconds_total.0.user.node1_example 12.5 1722000000",
	   "another layout: name, labels, then host; no prefix");
	gr_render_fini(&r);

	layout("prefix,mode,name,labels", parts, &n);
	gr_render_init(&r, GR_FMT_PATH, "p", parts, n, NULL, 10);
	memset(&c, 0, sizeof(c));
	is(first_line(lines(&r, b, &c)),
	   "p.user.node_cpu_seconds_total.0 12.5 1722000000",
	   "a label named in the layout is not repeated by labels");
	gr_render_fini(&r);

	{
		struct tally_labels *t = tally_labels_newv("v", "~tilde", NULL);
		struct tally_batch *tb = tally_batch_new();

		tally_batch_add_metric(tb, TALLY_GAUGE, "m", NULL, t, 1, T0);
		layout("v,name,labels", parts, &n);
		gr_render_init(&r, GR_FMT_PATH, "", parts, n, NULL, 10);
		memset(&c, 0, sizeof(c));
		is(first_line(lines(&r, tb, &c)), "_tilde.m 1 1722000000",
		   "a ~ that starts the path is _ (carbon strips it), a "
		   "label value's too");
		gr_render_fini(&r);
		tally_batch_unref(tb);
		tally_labels_unref(t);
	}

	gr_render_init(&r, GR_FMT_TAGS, "hpc", parts, n, host, 10);
	memset(&c, 0, sizeof(c));
	is(lines(&r, b, &c),
	   "hpc.node_cpu_seconds_total;cpu=0;host=node1.example;mode=user "
	   "12.5 1722000000\n"
	   "hpc.app.req.latency;device=sda1.p;host=node1.example 0.1 "
	   "1722000000\n"
	   "hpc.node_load1;host=other 2 1722000000\n"
	   "hpc.lat_seconds_bucket;host=node1.example;le=0.1 1 1722000000\n"
	   "hpc.lat_seconds_bucket;host=node1.example;le=1 3 1722000000\n"
	   "hpc.lat_seconds_bucket;host=node1.example;le=+Inf 4 1722000000\n"
	   "hpc.lat_seconds_count;host=node1.example 4 1722000000\n"
	   "hpc.lat_seconds_sum;host=node1.example 2.5 1722000000\n"
	   "hpc.rpc_seconds;host=node1.example;quantile=0.5 0.25 "
	   "1722000000\n"
	   "hpc.rpc_seconds;host=node1.example;quantile=0.99 2 1722000000\n"
	   "hpc.rpc_seconds_count;host=node1.example 10 1722000000\n"
	   "hpc.rpc_seconds_sum;host=node1.example 3 1722000000\n",
	   "tags format: every label a tag in key order, dots kept in "
	   "values, empty ones left out");
	gr_render_fini(&r);
	tally_batch_unref(b);

	b = tally_batch_new();
	{
		struct tally_labels *odd = tally_labels_newv(
			"name", "n", "k=1", "~v;w x", NULL);

		tally_batch_add_metric(b, TALLY_GAUGE, "~a;b c", NULL, odd, 1,
				       T0);
		tally_labels_unref(odd);
	}
	gr_render_init(&r, GR_FMT_TAGS, "", parts, n, NULL, 10);
	is(lines(&r, b, &c), "_a_b_c;k_1=_v_w_x;_name=n 1 1722000000\n",
	   "tags: a label called name becomes _name (carbon's own name "
	   "tag), tag names and values escaped");
	gr_render_fini(&r);
	tally_batch_unref(b);
	tally_labels_unref(host);
	tally_labels_unref(cpu);
	tally_labels_unref(dev);
	tally_labels_unref(own_host);
}

static void add_end(struct tally_batch *b, const char *region, int32_t rank,
		    uint32_t flags, int64_t begin, int64_t end)
{
	struct tally_span sp = {
		.trace = "job.7",
		.name = region,
		.span_id = 1,
		.phase = TALLY_SPAN_END,
		.flags = flags,
		.src = { .host = "h", .pid = 1, .rank = rank },
		.begin_ns = begin,
	};

	if (tally_batch_add_span(b, &sp, end) < 0)
		bail_out("add_span");
}

static void test_spans(void)
{
	struct tally_labels *host = tally_labels_newv("host", "n1", NULL);
	struct tally_batch *b = tally_batch_new();
	struct gr_render r = { 0 };
	struct gr_counts c = { 0 };
	struct gr_part parts[GR_MAX_PARTS];
	size_t n;
	struct tally_span begin = { .trace = "job.7",
				    .name = "solve",
				    .span_id = 9,
				    .phase = TALLY_SPAN_BEGIN,
				    .src = { .host = "h", .rank = 0 } };

	layout("prefix,host,name,labels", parts, &n);
	gr_render_init(&r, GR_FMT_PATH, "", parts, n, host, 2);
	tally_batch_add_span(b, &begin, T0);
	add_end(b, "solve", 0, 0, T0 - 1500000000, T0);
	add_end(b, "solve", 0, 0, T0 - 250000000, T0 + 1000000000);
	add_end(b, "io", -1, TALLY_SPAN_FRAGMENT, T0 - 500000000, T0);
	add_end(b, "io", -1, TALLY_SPAN_FRAGMENT | TALLY_SPAN_LAST,
		T0 - 250000000, T0);
	add_end(b, "lost", 0, TALLY_SPAN_ORPHAN_END, 0, T0);
	add_end(b, "third", 0, 0, T0 - 1, T0);
	is(lines(&r, b, &c),
	   "n1.tally_trace_region_seconds_total.io.job_7 0.75 "
	   "1722000000\n"
	   "n1.tally_trace_region_calls_total.io.job_7 1 1722000000\n"
	   "n1.tally_trace_region_seconds_total.0.solve.job_7 2.75 "
	   "1722000001\n"
	   "n1.tally_trace_region_calls_total.0.solve.job_7 2 1722000001\n",
	   "span ends: time and calls per region (labels rank, region, "
	   "trace; no rank when unknown), a flat stream's call once, at the last end's second");
	cmp_ok(c.no_begin, "==", 1, "an end without its begin: counted");
	cmp_ok(c.regions_full, "==", 1, "a third region beyond max 2: counted");
	cmp_ok(c.other, "==", 1, "a begin writes nothing");

	/* a render the sender refused does not count twice */
	tally_batch_unref(b);
	b = tally_batch_new();
	add_end(b, "io", -1, 0, T0, T0 + 2000000000);
	evbuffer_drain(out, evbuffer_get_length(out));
	gr_render_batch(&r, b, out, &c);
	gr_render_abort(&r);
	memset(&c, 0, sizeof(c));
	is(lines(&r, b, &c),
	   "n1.tally_trace_region_seconds_total.io.job_7 2.75 "
	   "1722000002\n"
	   "n1.tally_trace_region_calls_total.io.job_7 2 1722000002\n",
	   "a batch rendered, refused and rendered again counts once");
	cmp_ok(gr_render_regions(&r), "==", 2, "two regions tracked");
	gr_render_fini(&r);
	tally_batch_unref(b);
	tally_labels_unref(host);
}

/* aggregate's interval records: etsy statsd's per-flush names */
static void test_intervals(void)
{
	struct tally_quantile q[] = { { 0.9, 0.8 }, { 0.999, 0.95 } };
	struct tally_bucket bk[] = { { 0.1, 1 }, { 1, 3 } };
	struct tally_interval iv = { .start_ns = T0 - 10000000000LL,
				     .count = 4,
				     .sum = 2,
				     .min = 0.05,
				     .max = 1.5,
				     .median = 0.25,
				     .nquantiles = 2,
				     .nbuckets = 2,
				     .quantiles = q,
				     .buckets = bk };
	struct tally_interval cnt = { .start_ns = T0 - 10000000000LL,
				      .count = 30 };
	struct tally_interval empty = { .start_ns = T0 - 10000000000LL,
					.min = NAN,
					.max = NAN,
					.median = NAN };
	struct tally_interval set = { .start_ns = T0 - 10000000000LL,
				      .count = 5,
				      .flags = TALLY_INTERVAL_SET };
	struct tally_batch *b = tally_batch_new();
	struct gr_render r = { 0 };
	struct gr_counts c = { 0 };
	struct gr_part parts[GR_MAX_PARTS];
	size_t n;

	tally_batch_add_interval(b, TALLY_COUNTER, "app.hits", NULL, NULL, 30,
				 &cnt, T0);
	tally_batch_add_interval(b, TALLY_GAUGE, "app.level", NULL, NULL, 7,
				 &cnt, T0);
	tally_batch_add_interval(b, TALLY_GAUGE, "app.users", NULL, NULL, 3,
				 &set, T0);
	tally_batch_add_interval(b, TALLY_HISTOGRAM, "app.rt", NULL, NULL, 0,
				 &iv, T0);
	tally_batch_add_interval(b, TALLY_SUMMARY, "app.idle", NULL, NULL, 0,
				 &empty, T0);
	layout("prefix,name,labels", parts, &n);
	gr_render_init(&r, GR_FMT_PATH, "stats", parts, n, NULL, 10);
	is(lines(&r, b, &c),
	   "stats.app.hits.count 30 1722000000\n"
	   "stats.app.hits.rate 3 1722000000\n"
	   "stats.app.level 7 1722000000\n"
	   "stats.app.users.count 3 1722000000\n"
	   "stats.app.rt.count 4 1722000000\n"
	   "stats.app.rt.count_ps 0.4 1722000000\n"
	   "stats.app.rt.sum 2 1722000000\n"
	   "stats.app.rt.mean 0.5 1722000000\n"
	   "stats.app.rt.lower 0.05 1722000000\n"
	   "stats.app.rt.upper 1.5 1722000000\n"
	   "stats.app.rt.median 0.25 1722000000\n"
	   "stats.app.rt.upper_90 0.8 1722000000\n"
	   "stats.app.rt.upper_99_9 0.95 1722000000\n"
	   "stats.app.rt.histogram.bin_0_1 1 1722000000\n"
	   "stats.app.rt.histogram.bin_1 2 1722000000\n"
	   "stats.app.rt.histogram.bin_inf 1 1722000000\n"
	   "stats.app.idle.count 0 1722000000\n"
	   "stats.app.idle.count_ps 0 1722000000\n"
	   "stats.app.idle.sum 0 1722000000\n",
	   "interval records: counters .count and .rate, gauges bare, sets "
	   ".count, timers .count .count_ps .sum .mean .lower .upper .median "
	   ".upper_P and non-cumulative histogram bins; an empty interval "
	   "has no mean, lower or upper");
	cmp_ok(c.non_finite, "==", 0, "no value of an empty interval is a "
				    "bad one");
	gr_render_fini(&r);
	tally_batch_unref(b);
}

/*
 * Nodes longer than whisper's file names allow (GR_NODE_MAX): cut to
 * their first bytes, '_' and 8 hex digits of their FNV-1a hash (pinned
 * here: python3 computes the same), whole UTF-8 characters, the kind's
 * suffix after; not in format tags.
 */
static void test_long_nodes(void)
{
	char a[301], b[301], e[301], want[600];
	struct tally_labels *lv;
	struct tally_batch *bt = tally_batch_new();
	struct gr_render r = { 0 }, rt = { 0 };
	struct gr_counts c = { 0 };
	struct gr_part parts[GR_MAX_PARTS];
	size_t n;
	const char *text;

	memset(a, 'a', 300);
	a[300] = '\0';
	memcpy(b, a, sizeof(b));
	b[299] = 'b'; /* differs after the cut */
	cmp_ok(gr_node_cut(a, 240), "==", 240, "a node of 240 bytes is kept");
	ok(a[239] == 'a' && a[240] == 'a', "untouched");
	cmp_ok(gr_node_cut(a, 300), "==", 240, "one of 300 is cut to 240");
	snprintf(want, sizeof(want), "%.231s_a7a17e21", a);
	is(a, want, "its first 231 bytes, _ and its hash's low 32 bits");
	gr_node_cut(b, 300);
	ok(strcmp(a, b) && !strncmp(a, b, 231),
	   "a node differing after the cut gets another path (%s)", b + 231);
	memset(e, 'a', 300);
	e[230] = (char)0xc3; /* U+00E9 across the cut */
	e[231] = (char)0xa9;
	cmp_ok(gr_node_cut(e, 300), "==", 239,
	       "a UTF-8 character is not split: cut before it");
	ok(e[229] == 'a' && e[230] == '_',
	   "the hash follows the last whole one");

	/* through a render: a label value node and a name node, format path */
	memset(a, 'v', 300);
	a[300] = '\0';
	lv = tally_labels_newv("k", a, NULL);
	memset(b, 'n', 300);
	b[300] = '\0';
	tally_batch_add_metric(bt, TALLY_GAUGE, "m", NULL, lv, 1, T0);
	tally_batch_add_histogram(bt, b, NULL, NULL, NULL, 0, 2, 3, T0);
	layout("prefix,name,labels", parts, &n);
	if (gr_render_init(&r, GR_FMT_PATH, "p", parts, n, NULL, 10) < 0)
		bail_out("init");
	text = lines(&r, bt, &c);
	snprintf(want, sizeof(want), "p.m.%.231s_b9f54d15 1 1722000000\n", a);
	ok(!strncmp(text, want, strlen(want)), "a label value of 300 bytes: %s",
	   first_line(text));
	snprintf(want, sizeof(want), "\np.%.231s_", b);
	ok(strstr(text, want) != NULL, "a name of 300 bytes is cut too");
	{
		const char *p = strstr(text, want) + 1;
		size_t node = strcspn(p + 2, ". ");

		cmp_ok(node, "<=", 247,
		       "its last node with _bucket fits NAME.wsp in 255 bytes");
		ok(!strncmp(p + 2 + 240, "_bucket", 7), "the suffix follows");
	}
	gr_render_fini(&r);

	/* tags: carbon files a tagged series under a hash of it */
	layout("prefix,host,name,labels", parts, &n);
	if (gr_render_init(&rt, GR_FMT_TAGS, "p", parts, n, NULL, 10) < 0)
		bail_out("init");
	text = lines(&rt, bt, &c);
	snprintf(want, sizeof(want), "p.m;k=%s 1 1722000000\n", a);
	ok(!strncmp(text, want, strlen(want)), "format tags: not cut");
	gr_render_fini(&rt);
	tally_batch_unref(bt);
	tally_labels_unref(lv);
}

int main(void)
{
	plan(NO_PLAN);
	out = evbuffer_new();
	test_escape();
	test_values();
	test_layouts();
	test_metrics();
	test_spans();
	test_intervals();
	test_long_nodes();
	evbuffer_free(out);
	return done_testing();
}
