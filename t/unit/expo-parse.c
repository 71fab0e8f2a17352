/* SPDX-License-Identifier: MIT */
/*
 * t/unit/expo-parse.c - the text exposition parser (tally_expo_parse())
 *
 * Each page is parsed and its records written back in a compact form
 * ("type name{k=v,...} help=... value", one per record) compared with what
 * the text format rules give, worked out by hand. Malformed pages must be
 * refused with the line of the problem and append nothing.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/exposition.h>
#include <tally/labels.h>
#include <tally/record.h>

#include "tap.h"

static const char *const tname[] = {
	[TALLY_COUNTER] = "counter",	 [TALLY_GAUGE] = "gauge",
	[TALLY_HISTOGRAM] = "histogram", [TALLY_SUMMARY] = "summary",
	[TALLY_INFO] = "info",		 [TALLY_UNTYPED] = "untyped",
};

/* The records of @b, one line each. */
static char *dump(struct tally_batch *b)
{
	static char out[8192];
	size_t o = 0;

	out[0] = '\0';
	for (size_t i = 0; i < tally_batch_count(b); i++) {
		const struct tally_record *r = tally_batch_at(b, i);
		const struct tally_metric *m = &r->metric;

		o += (size_t)snprintf(out + o, sizeof(out) - o, "%s %s{",
				      tname[m->type], m->name);
		for (size_t j = 0; j < tally_labels_count(m->labels); j++) {
			const struct tally_label *l =
				tally_labels_at(m->labels, j);

			o += (size_t)snprintf(out + o, sizeof(out) - o,
					      "%s%s=%s", j ? "," : "", l->key,
					      l->value);
		}
		o += (size_t)snprintf(out + o, sizeof(out) - o, "}");
		if (m->help)
			o += (size_t)snprintf(out + o, sizeof(out) - o,
					      " help=%s", m->help);
		if (m->type == TALLY_HISTOGRAM || m->type == TALLY_SUMMARY) {
			for (size_t j = 0; j < m->n; j++)
				o += (size_t)snprintf(
					out + o, sizeof(out) - o, " %g:%g",
					m->type == TALLY_HISTOGRAM
						? m->buckets[j].le
						: m->quantiles[j].q,
					m->type == TALLY_HISTOGRAM
						? (double)m->buckets[j].count
						: m->quantiles[j].value);
			o += (size_t)snprintf(out + o, sizeof(out) - o,
					      " sum=%g count=%llu", m->sum,
					      (unsigned long long)m->count);
		} else {
			o += (size_t)snprintf(out + o, sizeof(out) - o, " %g",
					      m->value);
		}
		/* a time the page gave, not "now" (ts 0) */
		if (llabs(r->ts_ns - tally_now_ns()) > 3600 * 1000000000LL)
			o += (size_t)snprintf(out + o, sizeof(out) - o,
					      " ts=%lld",
					      (long long)r->ts_ns);
		o += (size_t)snprintf(out + o, sizeof(out) - o, "\n");
	}
	return out;
}

static void test_good(void)
{
	static const struct {
		const char *page, *want;
	} cases[] = {
		{ "", "" },
		{ "\n\n  \t\n# just a comment\n", "" },
		{ "a 1", "untyped a{} 1\n" },
		{ "a 1\n", "untyped a{} 1\n" },
		{ "  a\t1  \n", "untyped a{} 1\n" },
		{ "# HELP g Some \\\\ help\\nsecond\n# TYPE g GAUGE\n"
		  "g{b=\"2\",a=\"1\"} -3.5\n",
		  "gauge g{a=1,b=2} help=Some \\ help\nsecond -3.5\n" },
		{ "# TYPE c counter\nc_total 1\nc 2\n",
		  "counter c{} 2\nuntyped c_total{} 1\n" },
		{ "x{a=\"q\\\"uote\\\\back\\nnl\"} 1\n",
		  "untyped x{a=q\"uote\\back\nnl} 1\n" },
		{ "x{ a = \"1\" , b=\"\", } 1\n", "untyped x{a=1,b=} 1\n" },
		{ "x{} 1\n", "untyped x{} 1\n" },
		{ "x +Inf\ny -Inf\nz NaN\nw 1e3\nv .5\nu -0\n",
		  "untyped x{} inf\nuntyped y{} -inf\nuntyped z{} nan\n"
		  "untyped w{} 1000\nuntyped v{} 0.5\nuntyped u{} -0\n" },
		{ "t 1 1700000000123\n",
		  "untyped t{} 1 ts=1700000000123000000\n" },
		{ "t 1 -5 \n", "untyped t{} 1 ts=-5000000\n" },
		{ "a:b 1\n", "untyped a:b{} 1\n" },
		{ "x{l=\"caf\xc3\xa9\"} 1\n", "untyped x{l=caf\xc3\xa9} 1\n" },
		/* histogram: out of order, +Inf and _count agree */
		{ "# TYPE h histogram\n"
		  "h_bucket{le=\"+Inf\",k=\"v\"} 3\nh_bucket{k=\"v\",le=\"0.5\"} 1\n"
		  "h_sum{k=\"v\"} 2.5\nh_count{k=\"v\"} 3\n"
		  "h_bucket{le=\"1\",k=\"v\"} 2\n",
		  "histogram h{k=v} 0.5:1 1:2 inf:3 sum=2.5 count=3\n" },
		/* no +Inf bucket: the count stands for it; no _sum: 0 */
		{ "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_count 4\n",
		  "histogram h{} 1:2 inf:4 sum=0 count=4\n" },
		/* +Inf bucket alone gives the count */
		{ "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 7\nh_sum 1\n",
		  "histogram h{} inf:7 sum=1 count=7\n" },
		{ "# HELP s q\n# TYPE s summary\ns{quantile=\"0.9\"} 5\n"
		  "s{quantile=\"0.5\"} 2\ns_sum 10\ns_count 4\n",
		  "summary s{} help=q 0.5:2 0.9:5 sum=10 count=4\n" },
		{ "# TYPE s summary\ns_sum 1\ns_count 2\n",
		  "summary s{} sum=1 count=2\n" },
		/* a gauge named like a summary's part stays a gauge */
		{ "# TYPE s_count gauge\ns_count 3\n",
		  "gauge s_count{} 3\n" },
		{ "# TYPE x untyped\n# HELP x h\nx 1\n",
		  "untyped x{} help=h 1\n" },
		/* expfmt too reads "#TYPE" as a TYPE line */
		{ "#TYPE x counter\n# other TYPE words\nx 1\n",
		  "counter x{} 1\n" },
		{ NULL },
	};

	for (int i = 0; cases[i].page; i++) {
		struct tally_batch *b = tally_batch_new();
		struct tally_expo_error err;
		int n = tally_expo_parse(b, cases[i].page,
					 strlen(cases[i].page), 0, &err);

		ok(n >= 0, "parses: %s", cases[i].page);
		if (n < 0)
			diag("line %u: %s", err.line, err.msg);
		is(dump(b), cases[i].want, "records of: %s", cases[i].page);
		tally_batch_unref(b);
	}
}

static void test_bad(void)
{
	static const struct {
		const char *page;
		unsigned line;
		const char *msg; /* a part of the message */
	} cases[] = {
		{ "good 1\nbad{ 2\n", 2, "invalid label name" },
		{ "a\n", 1, "value missing" },
		{ "a x\n", 1, "not a number" },
		{ "a 0x10\n", 1, "not a number" },
		{ "a 1 2 3\n", 1, "after the timestamp" },
		{ "a 1 1.5\n", 1, "not an integer" },
		{ "1a 1\n", 1, "invalid metric name" },
		{ "a{b=\"1\" 1\n", 1, "expected ','" },
		{ "a{b=1} 1\n", 1, "expected '\"'" },
		{ "a{b\"1\"} 1\n", 1, "expected '='" },
		{ "a{b=\"1\",b=\"2\"} 1\n", 1, "duplicate label name" },
		{ "a{__name__=\"x\"} 1\n", 1, "reserved" },
		{ "a{b=\"\\t\"} 1\n", 1, "invalid escape" },
		{ "a{b=\"x\n", 1, "not closed" },
		{ "a{b=\"\xff\"} 1\n", 1, "UTF-8" },
		{ "# HELP a x\\q\n", 1, "invalid escape" },
		{ "# HELP a 1\n# HELP a 2\n", 2, "second HELP" },
		{ "# TYPE a gauge\n# TYPE a gauge\n", 2, "second TYPE" },
		{ "a 1\n# TYPE a gauge\n", 2, "TYPE after" },
		{ "# TYPE a blob\n", 1, "unknown metric type" },
		{ "# TYPE 1a gauge\n", 1, "invalid metric name" },
		{ "# TYPE a gauge extra\n", 1, "unexpected" },
		{ "a 1\nb 2\na 3\n", 3, "same series twice" },
		{ "a{x=\"1\",y=\"2\"} 1\na{y=\"2\",x=\"1\"} 3\n", 2,
		  "same series twice" },
		{ "# TYPE h histogram\nh 1\n", 2, "expected h_bucket" },
		{ "# TYPE h histogram\nh_bucket 1\n", 2, "without a le label" },
		{ "# TYPE h histogram\nh_bucket{le=\"x\"} 1\n", 2,
		  "not a number" },
		{ "# TYPE h histogram\nh_bucket{le=\"1\"} 1\n"
		  "h_bucket{le=\"1\"} 2\n",
		  3, "twice" },
		{ "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\n", 2,
		  "neither a +Inf bucket nor a _count" },
		{ "# TYPE h histogram\nh_bucket{le=\"1\"} 5\n"
		  "h_bucket{le=\"+Inf\"} 3\n",
		  2, "go down" },
		{ "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 3\nh_count 4\n", 2,
		  "is not its +Inf bucket" },
		{ "# TYPE h histogram\nh_bucket{le=\"+Inf\"} -1\n", 2,
		  "non-negative" },
		{ "# TYPE h histogram\nh_sum 1\nh_sum 2\n", 3, "_sum twice" },
		{ "# TYPE s summary\ns{quantile=\"1.5\"} 1\n", 2,
		  "out of range" },
		{ "# TYPE s summary\ns 1\n", 2, "without a quantile label" },
		{ "# TYPE s summary\ns_count NaN\n", 2, "non-negative" },
		{ "a 1\r\n", 1,
		  "carriage return (\\r): Windows line ends (CRLF)" },
		{ NULL },
	};

	for (int i = 0; cases[i].page; i++) {
		struct tally_batch *b = tally_batch_new();
		struct tally_expo_error err;
		int n = tally_expo_parse(b, cases[i].page,
					 strlen(cases[i].page), 0, &err);

		ok(n == -1 && errno == EINVAL, "refused: %s", cases[i].page);
		cmp_ok(err.line, "==", cases[i].line, "line of: %s (%s)",
		       cases[i].page, err.msg);
		ok(strstr(err.msg, cases[i].msg) != NULL,
		   "message \"%s\" says %s", err.msg, cases[i].msg);
		cmp_ok(tally_batch_count(b), "==", 0, "nothing appended");
		tally_batch_unref(b);
	}
}

static void test_nul(void)
{
	static const char page[] = "a 1\nb\0 2\n";
	struct tally_batch *b = tally_batch_new();
	struct tally_expo_error err;

	ok(tally_expo_parse(b, page, sizeof(page) - 1, 0, &err) == -1,
	   "a NUL byte is refused");
	cmp_ok(err.line, "==", 2, "on its line");
	is(err.msg, "NUL byte", "message");
	tally_batch_unref(b);
}

static void test_timestamps_refused(void)
{
	struct tally_batch *b = tally_batch_new();
	struct tally_expo_error err;
	static const char page[] = "a 1\nb 2 1700000000000\n";

	ok(tally_expo_parse(b, page, strlen(page),
			    TALLY_EXPO_PARSE_NO_TIMESTAMPS, &err) == -1,
	   "a timestamp is refused with TALLY_EXPO_PARSE_NO_TIMESTAMPS");
	cmp_ok(err.line, "==", 2, "on its line");
	ok(strstr(err.msg, "timestamp") != NULL, "message: %s", err.msg);
	cmp_ok(tally_batch_count(b), "==", 0, "nothing appended");
	tally_batch_unref(b);
}

/* node_exporter refuses a file whose last line lacks its newline (a file
 * being written); CRLF line ends are named as such. */
static void test_line_ends(void)
{
	struct tally_batch *b = tally_batch_new();
	struct tally_expo_error err;
	static const char nonl[] = "a 1\nb 2";
	static const char crlf[] = "# TYPE a gauge\r\na 1\r\n";

	ok(tally_expo_parse(b, nonl, strlen(nonl), 0, &err) == 2,
	   "no final newline: taken by default (Prometheus' scrapes)");
	tally_batch_unref(b);
	b = tally_batch_new();
	ok(tally_expo_parse(b, nonl, strlen(nonl),
			    TALLY_EXPO_PARSE_FINAL_NEWLINE, &err) == -1 &&
		   errno == EINVAL,
	   "refused with TALLY_EXPO_PARSE_FINAL_NEWLINE");
	cmp_ok(err.line, "==", 2, "on the last line");
	ok(strstr(err.msg, "does not end with a newline") != NULL,
	   "message: %s", err.msg);
	cmp_ok(tally_batch_count(b), "==", 0, "nothing appended");
	ok(tally_expo_parse(b, "a 1\n", 4, TALLY_EXPO_PARSE_FINAL_NEWLINE,
			    &err) == 1 &&
		   tally_expo_parse(b, "", 0, TALLY_EXPO_PARSE_FINAL_NEWLINE,
				    &err) == 0,
	   "a page ending in a newline, or empty, is taken");
	tally_batch_unref(b);
	b = tally_batch_new();
	ok(tally_expo_parse(b, crlf, strlen(crlf), 0, &err) == -1,
	   "CRLF line ends refused");
	cmp_ok(err.line, "==", 1, "on the first line");
	ok(strstr(err.msg, "carriage return") && strstr(err.msg, "CRLF"),
	   "message names them: %s", err.msg);
	tally_batch_unref(b);
}

/* A big page: many series and one histogram per 100 of them. */
static void test_many(void)
{
	size_t cap = 1 << 22, o = 0;
	char *page = malloc(cap);
	struct tally_batch *b = tally_batch_new();
	struct tally_expo_error err;
	int n;

	o += (size_t)snprintf(page + o, cap - o, "# TYPE h histogram\n");
	for (int i = 0; i < 20000; i++) {
		o += (size_t)snprintf(page + o, cap - o, "m{i=\"%d\"} %d\n", i,
				      i);
		if (i % 100 == 0)
			o += (size_t)snprintf(page + o, cap - o,
					      "h_bucket{i=\"%d\",le=\"+Inf\"} "
					      "%d\n",
					      i, i);
	}
	n = tally_expo_parse(b, page, o, 0, &err);
	cmp_ok(n, "==", 20200, "20000 series and 200 histograms");
	tally_batch_unref(b);
	free(page);
}

int main(void)
{
	plan(NO_PLAN);
	test_good();
	test_bad();
	test_nul();
	test_timestamps_refused();
	test_line_ends();
	test_many();
	return done_testing();
}
