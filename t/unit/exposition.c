/* SPDX-License-Identifier: MIT */
/*
 * t/unit/exposition.c - Prometheus text helpers (tally/exposition.h)
 *
 * Expected strings come from the rules in the Prometheus data model and
 * text format documentation, worked out by hand for each case.
 */
#include "config.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/exposition.h>
#include <tally/labels.h>

#include "tap.h"

static void test_valid_names(void)
{
	static const struct {
		const char *s;
		bool metric, label;
	} cases[] = {
		{ "a", true, true },
		{ "node_load1", true, true },
		{ "a:b", true, false },
		{ ":x", true, false },
		{ "_", true, true },
		{ "_a", true, true },
		{ "__a", true, false },	/* reserved label prefix */
		{ "1a", false, false },
		{ "", false, false },
		{ "a-b", false, false },
		{ "a b", false, false },
		{ "caf\xc3\xa9", false, false },
		{ NULL },
	};

	for (int i = 0; cases[i].s; i++) {
		ok(tally_expo_valid_metric_name(cases[i].s) == cases[i].metric,
		   "metric name \"%s\" valid=%d", cases[i].s, cases[i].metric);
		ok(tally_expo_valid_label_name(cases[i].s) == cases[i].label,
		   "label name \"%s\" valid=%d", cases[i].s, cases[i].label);
	}
	ok(!tally_expo_valid_metric_name(NULL), "NULL is no metric name");
	ok(!tally_expo_valid_label_name(NULL), "NULL is no label name");
}

static void test_sanitize(void)
{
	static const struct {
		const char *in, *metric, *label;
	} cases[] = {
		{ "node_load1", "node_load1", "node_load1" },
		{ "a.b-c", "a_b_c", "a_b_c" },
		{ "a:b", "a:b", "a_b" },
		{ "1abc", "_1abc", "_1abc" },
		{ "0x", "_0x", "_0x" },
		{ "", "_", "_" },
		{ "_", "_", "_" },
		{ "__meta", "__meta", "_meta" },
		{ "___x", "___x", "_x" },
		{ "..", "__", "_" },
		{ "k8s.pod", "k8s_pod", "k8s_pod" },
		/* one '_' per character, not per byte */
		{ "temp_\xc2\xb0" "C", "temp__C", "temp__C" },
		{ "na\xc3\xafve", "na_ve", "na_ve" },
		{ "\xe6\x97\xa5\xe6\x9c\xac", "__", "_" },
		/* invalid UTF-8: one '_' per stray byte */
		{ "x\xff\xfey", "x__y", "x__y" },
		{ "\xe2\x82" "a", "__a", "_a" },
		{ NULL },
	};
	char buf[64];

	for (int i = 0; cases[i].in; i++) {
		size_t n = tally_expo_sanitize_metric_name(buf, sizeof(buf),
							   cases[i].in);
		is(buf, cases[i].metric, "metric name sanitized: %s",
		   cases[i].metric);
		cmp_ok(n, "==", strlen(cases[i].metric), "returned length");
		ok(tally_expo_valid_metric_name(buf), "result is valid");
		n = tally_expo_sanitize_label_name(buf, sizeof(buf),
						   cases[i].in);
		is(buf, cases[i].label, "label name sanitized: %s",
		   cases[i].label);
		cmp_ok(n, "==", strlen(cases[i].label), "returned length");
		ok(tally_expo_valid_label_name(buf), "result is valid");
	}

	/* snprintf semantics */
	cmp_ok(tally_expo_sanitize_metric_name(NULL, 0, "a.b"), "==", 3,
	       "size 0 only measures");
	cmp_ok(tally_expo_sanitize_metric_name(buf, 3, "1a.b"), "==", 5,
	       "truncated call returns full length");
	is(buf, "_1", "truncated output is NUL-terminated");
}

static void test_escape(void)
{
	static const struct {
		const char *in, *out;
	} values[] = {
		{ "", "" },
		{ "plain", "plain" },
		{ "a\\b", "a\\\\b" },
		{ "say \"hi\"", "say \\\"hi\\\"" },
		{ "l1\nl2", "l1\\nl2" },
		{ "tab\there\r", "tab\there\r" }, /* only \\, \" and \n */
		{ "caf\xc3\xa9 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xf0\x9f\x98\x80" },
		{ "\xff", "\xef\xbf\xbd" },
		{ "a\xc3", "a\xef\xbf\xbd" },	/* truncated sequence */
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" }, /* overlong '/' */
		/* UTF-16 surrogate D800 encoded: invalid in UTF-8 */
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		/* above U+10FFFF */
		{ "\xf4\x90\x80\x80",
		  "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ NULL },
	};
	char buf[128];

	for (int i = 0; values[i].in; i++) {
		size_t n = tally_expo_escape_label_value(buf, sizeof(buf),
							 values[i].in);
		is(buf, values[i].out, "label value %d escaped", i);
		cmp_ok(n, "==", strlen(values[i].out), "length %d", i);
	}

	tally_expo_escape_help(buf, sizeof(buf), "a\\b \"q\"\nz", false);
	is(buf, "a\\\\b \"q\"\\nz", "HELP (0.0.4): quotes kept as they are");
	tally_expo_escape_help(buf, sizeof(buf), "a\\b \"q\"\nz", true);
	is(buf, "a\\\\b \\\"q\\\"\\nz", "HELP (OpenMetrics): quotes escaped");

	cmp_ok(tally_expo_escape_label_value(buf, 4, "a\"b"), "==", 4,
	       "escape: truncated call returns full length");
	is(buf, "a\\\"", "escape: truncated output");
}

static void test_format_double(void)
{
	static const struct {
		double v;
		const char *s;
	} cases[] = {
		{ 0.0, "0" },
		{ -0.0, "-0" },
		{ 1.0, "1" },
		{ -42.0, "-42" },
		{ 1234567.0, "1234567" },
		{ 0.1, "0.1" },
		{ 1.5, "1.5" },
		{ -1.5e-5, "-1.5e-05" },
		{ 1e-7, "1e-07" },
		{ 0.1 + 0.2, "0.30000000000000004" },
		{ 123456789.125, "123456789.125" },
		{ 9007199254740992.0, "9007199254740992" }, /* 2^53 */
		{ 9007199254740994.0, "9007199254740994" }, /* %.16g */
		{ 9223372036854775808.0, "9.223372036854776e+18" }, /* 2^63 */
		{ 1e21, "1e+21" },
		{ 1e100, "1e+100" },
		{ DBL_MAX, "1.7976931348623157e+308" },
		{ -DBL_MAX, "-1.7976931348623157e+308" },
		{ 4.9406564584124654e-324, "4.94065645841247e-324" },
		{ INFINITY, "+Inf" },
		{ -INFINITY, "-Inf" },
	};
	char buf[TALLY_EXPO_DOUBLE_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = tally_expo_format_double(buf, cases[i].v);

		is(buf, cases[i].s, "format %s", cases[i].s);
		cmp_ok(n, "==", strlen(cases[i].s), "length of %s",
		       cases[i].s);
	}
	tally_expo_format_double(buf, NAN);
	is(buf, "NaN", "NaN");
	tally_expo_format_double(buf, -NAN);
	is(buf, "NaN", "negative NaN is NaN too");

	/* Any finite double reads back exactly and fits the buffer. */
	srand(4242);
	int bad = 0;
	size_t longest = 0;
	for (int i = 0; i < 200000; i++) {
		uint64_t bits = 0;
		double v;

		for (int k = 0; k < 4; k++)
			bits = bits << 16 | (uint64_t)(rand() & 0xffff);
		memcpy(&v, &bits, sizeof(v));
		if (!isfinite(v))
			continue;
		size_t n = tally_expo_format_double(buf, v);
		if (n > longest)
			longest = n;
		if (strtod(buf, NULL) != v && bad++ < 5)
			diag("%a printed as %s", v, buf);
	}
	ok(bad == 0, "200000 random doubles round-trip through strtod");
	cmp_ok(longest, "<=", 24, "longest output fits with room to spare");

	/*
	 * Short decimals (and their neighbours) in printf's fixed range are
	 * formatted by hand: the same text as the shortest of "%.15g",
	 * "%.16g", "%.17g" that reads back.
	 */
	bad = 0;
	for (int i = 0; i < 200000; i++) {
		static const double p10[] = { 1, 1e1, 1e2, 1e3, 1e4, 1e5,
					      1e6, 1e7, 1e8, 1e9, 1e10 };
		uint64_t m = (uint64_t)rand() << 20 ^ (uint64_t)rand();
		char want[TALLY_EXPO_DOUBLE_MAX];
		double v;

		m %= (uint64_t)p10[1 + rand() % 10];
		v = (double)m / p10[rand() % 11];
		if (i & 1)
			v = -v;
		if (i % 3 == 0)
			v = nextafter(v, INFINITY);
		if (v == floor(v))
			continue;
		for (int prec = 15; prec <= 17; prec++) {
			snprintf(want, sizeof(want), "%.*g", prec, v);
			if (strtod(want, NULL) == v)
				break;
		}
		tally_expo_format_double(buf, v);
		if (strcmp(buf, want) && bad++ < 5)
			diag("%a printed as %s, printf: %s", v, buf, want);
	}
	ok(bad == 0, "200000 short decimals: the same text as printf's");
	tally_expo_format_double(buf, 0.0001);
	is(buf, "0.0001", "the smallest fixed-range value");
	tally_expo_format_double(buf, 0.00009);
	is(buf, "9e-05", "below it, printf's exponent form");
	tally_expo_format_double(buf, -0.0059090909090909);
	is(buf, "-0.0059090909090909", "15 digits, negative");
	tally_expo_format_double(buf, 99999999999999.9);
	is(buf, "99999999999999.9", "15 digits, the largest fixed");
}

static void test_format_labels(void)
{
	static const struct {
		struct tally_label pairs[3];
		size_t n;
		const char *out;
		bool dup;
	} cases[] = {
		{ { { 0 } }, 0, "", false },
		{ { { "mode", "user" }, { "cpu", "0" } }, 2,
		  "{cpu=\"0\",mode=\"user\"}", false },
		{ { { "path", "C:\\dir \"x\"\n" } }, 1,
		  "{path=\"C:\\\\dir \\\"x\\\"\\n\"}", false },
		{ { { "a.b", "x" }, { "a_b", "y" } }, 2,
		  "{a_b=\"x\",a_b=\"y\"}", true },
		{ { { "__x", "1" }, { "x", "2" } }, 2,
		  "{_x=\"1\",x=\"2\"}", false },
		{ { { "_x", "1" }, { "__x", "2" } }, 2,
		  "{_x=\"2\",_x=\"1\"}", true },
		{ { { "k.1", "" }, { "k.2", "v" } }, 2,
		  "{k_1=\"\",k_2=\"v\"}", false },
	};
	char buf[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tally_labels *ls =
			tally_labels_new(cases[i].pairs, cases[i].n);
		bool dup = !cases[i].dup;
		size_t n;

		if (!ok(ls != NULL, "label set %zu interned", i))
			continue;
		n = tally_expo_format_labels(buf, sizeof(buf), ls, &dup);
		is(buf, cases[i].out, "labels rendered: %s", cases[i].out);
		cmp_ok(n, "==", strlen(cases[i].out), "length");
		ok(dup == cases[i].dup, "duplicate name detected: %d",
		   cases[i].dup);
		tally_labels_unref(ls);
	}
	tally_expo_format_labels(buf, sizeof(buf), NULL, NULL);
	is(buf, "", "NULL set renders as nothing");

	struct tally_labels *ls = tally_labels_newv("cpu", "0", NULL);
	cmp_ok(tally_expo_format_labels(buf, 5, ls, NULL), "==", 9,
	       "truncated call returns the full length");
	is(buf, "{cpu", "truncated output");
	tally_labels_unref(ls);
}

int main(void)
{
	plan(NO_PLAN);
	test_valid_names();
	test_sanitize();
	test_escape();
	test_format_double();
	test_format_labels();
	return done_testing();
}
