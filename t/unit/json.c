/* SPDX-License-Identifier: MIT */
/* t/unit/json.c - the JSON string escaper (tally/json.h) */
#include <string.h>

#include <tally/json.h>

#include "tap.h"

static void test_cases(void)
{
	static const struct {
		const char *in;
		const char *want;
		const char *what;
	} cases[] = {
		{ "", "", "empty" },
		{ "solve", "solve", "plain ASCII as is" },
		{ "a\"b", "a\\\"b", "double quote" },
		{ "a\\b", "a\\\\b", "backslash" },
		{ "/", "/", "slash left alone" },
		{ "\b\f\n\r\t", "\\b\\f\\n\\r\\t", "short escapes" },
		{ "\x01x\x1f", "\\u0001x\\u001f", "other controls as \\u00XX" },
		{ "\x7f", "\x7f", "DEL as is" },
		{ "r\xc3\xa9gion \xe2\x82\xac \xf0\x9f\x98\x80",
		  "r\xc3\xa9gion \xe2\x82\xac \xf0\x9f\x98\x80",
		  "well-formed UTF-8 as is" },
		{ "a\xff" "b", "a\xef\xbf\xbd" "b", "stray byte: U+FFFD" },
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
		  "surrogate: one U+FFFD per byte" },
		{ "\xe2\x82", "\xef\xbf\xbd", "cut sequence: one U+FFFD" },
		{ "\xe2\x82x", "\xef\xbf\xbdx", "cut by ASCII: one U+FFFD" },
	};
	char buf[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = tally_json_escape(buf, sizeof(buf), cases[i].in);

		is(buf, cases[i].want, "%s", cases[i].what);
		cmp_ok(n, "==", strlen(cases[i].want), "%s: length",
		       cases[i].what);
	}
}

static void test_snprintf(void)
{
	char buf[8];
	size_t n;

	cmp_ok(tally_json_escape(NULL, 0, "a\"b"), "==", 4,
	       "size 0: the length, nothing written");
	memset(buf, 'X', sizeof(buf));
	n = tally_json_escape(buf, 4, "ab\"cd");
	cmp_ok(n, "==", 6, "cut short: the whole length");
	is(buf, "ab\\", "cut short: what fits, NUL-terminated");
	cmp_ok(buf[4], "==", 'X', "nothing written past size");
}

static void test_worst_case(void)
{
	char in[64], out[TALLY_JSON_ESCAPED_MAX(sizeof(in) - 1)];
	size_t n;

	memset(in, 0x01, sizeof(in) - 1);
	in[sizeof(in) - 1] = '\0';
	n = tally_json_escape(out, sizeof(out), in);
	cmp_ok(n, "==", 6 * (sizeof(in) - 1), "63 controls: 6 bytes each");
	cmp_ok(n, "<", sizeof(out), "TALLY_JSON_ESCAPED_MAX holds it");
	memset(in, 0xff, sizeof(in) - 1);
	n = tally_json_escape(out, sizeof(out), in);
	cmp_ok(n, "==", 3 * (sizeof(in) - 1), "63 stray bytes: 3 each");
}

int main(void)
{
	plan(NO_PLAN);
	test_cases();
	test_snprintf();
	test_worst_case();
	done_testing();
}
