/* SPDX-License-Identifier: MIT */
/* t/unit/utf8.c - the UTF-8 validator (tally/utf8.h) */
#include <string.h>

#include <tally/utf8.h>

#include "tap.h"

static void test_seq(void)
{
	static const struct {
		const char *s;
		size_t len;
		int want;
		const char *what;
	} cases[] = {
		{ "a", 1, 1, "ASCII" },
		{ "", 1, 1, "NUL is one byte" },
		{ "\xc3\xa9", 2, 2, "U+00E9" },
		{ "\xe2\x82\xac", 3, 3, "U+20AC" },
		{ "\xf0\x9f\x98\x80", 4, 4, "U+1F600" },
		{ "\xf4\x8f\xbf\xbf", 4, 4, "U+10FFFF, the last" },
		{ "\x80", 1, -1, "a lone continuation byte" },
		{ "\xc0\xaf", 2, -1, "0xc0: overlong, never a lead" },
		{ "\xc1\xbf", 2, -1, "0xc1: overlong, never a lead" },
		{ "\xe0\x80\xaf", 3, -1, "overlong 3-byte form" },
		{ "\xed\xa0\x80", 3, -1, "a surrogate (U+D800)" },
		{ "\xf0\x80\x80\xaf", 4, -1, "overlong 4-byte form" },
		{ "\xf4\x90\x80\x80", 4, -1, "above U+10FFFF" },
		{ "\xf5\x80\x80\x80", 4, -1, "0xf5: never a lead" },
		{ "\xe2\x82", 2, -2, "cut short by the end: 2-byte subpart" },
		{ "\xe2\x82x", 3, -2, "cut short by ASCII: 2-byte subpart" },
		{ "\xf0\x9f\x98", 3, -3, "3 of 4 bytes: 3-byte subpart" },
		{ "\xc3", 1, -1, "a lead byte alone" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cmp_ok(tally_utf8_seq(cases[i].s, cases[i].len), "==",
		       cases[i].want, "seq: %s", cases[i].what);
}

static void test_valid(void)
{
	ok(tally_utf8_valid("", 0), "empty string valid");
	ok(tally_utf8_valid("r\xc3\xa9gion \xe2\x82\xac", 11),
	   "mixed ASCII and multibyte valid");
	ok(!tally_utf8_valid("a\0b", 3), "an inner NUL refused");
	ok(!tally_utf8_valid("\xed\xbf\xbf", 3), "a surrogate refused");
	/* Longer strings take the 8-bytes-at-a-time path: a bad byte or a
	 * NUL anywhere, and a sequence across an 8-byte boundary. */
	for (size_t pos = 0; pos < 21; pos++) {
		char s[24];
		int bad, nul, seq;

		memset(s, 'a', sizeof(s));
		s[pos] = (char)0xff;
		bad = tally_utf8_valid(s, 21);
		s[pos] = 0;
		nul = tally_utf8_valid(s, 21);
		s[pos] = (char)0xc3;
		s[pos + 1] = (char)0xa9;
		seq = tally_utf8_valid(s, 22);
		if (!ok(!bad && !nul && seq,
			"21-byte string, byte %zu: 0xff and NUL refused, "
			"\"\\xc3\\xa9\" accepted",
			pos))
			diag("bad %d nul %d seq %d", bad, nul, seq);
	}
}

int main(void)
{
	plan(NO_PLAN);
	test_seq();
	test_valid();
	done_testing();
}
