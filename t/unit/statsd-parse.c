/* SPDX-License-Identifier: MIT */
/* t/unit/statsd-parse.c - the statsd line format (plugins/input/statsd) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../plugins/input/statsd/parse.h"
#include "tap.h"

static void test_good(void)
{
	static const struct {
		const char *line;
		const char *name;
		enum statsd_type type;
		double value;
		int delta;
		double rate;
		size_t ntags;
	} cases[] = {
		{ "hits:1|c", "hits", STATSD_COUNTER, 1, 0, 1, 0 },
		{ "app.req.count:3|c|@0.1", "app.req.count", STATSD_COUNTER, 3,
		  0, 0.1, 0 },
		{ "neg:-2|c", "neg", STATSD_COUNTER, -2, 0, 1, 0 },
		{ "load:0.75|g", "load", STATSD_GAUGE, 0.75, 0, 1, 0 },
		{ "load:+4|g", "load", STATSD_GAUGE, 4, 1, 1, 0 },
		{ "load:-4|g", "load", STATSD_GAUGE, -4, 1, 1, 0 },
		{ "load:5|g|@0.5", "load", STATSD_GAUGE, 5, 0, 1, 0 },
		{ "lat:320|ms", "lat", STATSD_TIMER, 320, 0, 1, 0 },
		{ "lat:1.5e2|ms|@0.25", "lat", STATSD_TIMER, 150, 0, 0.25, 0 },
		{ "size:.5|h", "size", STATSD_HISTOGRAM, 0.5, 0, 1, 0 },
		{ "size:7.|d", "size", STATSD_HISTOGRAM, 7, 0, 1, 0 },
		{ "r\xc3\xa9gion:1|c", "r\xc3\xa9gion", STATSD_COUNTER, 1, 0, 1,
		  0 },
		{ "tagged:1|c|#env:prod,role:db", "tagged", STATSD_COUNTER, 1,
		  0, 1, 2 },
		{ "tagged:1|c|#flag|@0.5", "tagged", STATSD_COUNTER, 1, 0, 0.5,
		  1 },
		{ "tagged:1|ms|@1|#a:b", "tagged", STATSD_TIMER, 1, 0, 1, 1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct statsd_line l;
		enum statsd_err err;

		err = statsd_parse_line(cases[i].line, strlen(cases[i].line),
					&l);
		if (!cmp_ok(err, "==", STATSD_OK, "parses: %s", cases[i].line))
			continue;
		ok(l.name_len == strlen(cases[i].name) &&
			   !memcmp(l.name, cases[i].name, l.name_len),
		   "  name %s", cases[i].name);
		cmp_ok(l.type, "==", cases[i].type, "  type");
		ok(l.value == cases[i].value, "  value %g", cases[i].value);
		cmp_ok(l.delta, "==", cases[i].delta, "  delta");
		ok(l.rate == cases[i].rate, "  rate %g", cases[i].rate);
		cmp_ok(l.ntags, "==", cases[i].ntags, "  %zu tags",
		       cases[i].ntags);
	}
}

static void test_set_and_tags(void)
{
	const char *line = "users:alice|s|#dc:eu:1,canary";
	struct statsd_line l;

	cmp_ok(statsd_parse_line(line, strlen(line), &l), "==", STATSD_OK,
	       "a set with tags parses");
	ok(l.type == STATSD_SET && l.member_len == 5 &&
		   !memcmp(l.member, "alice", 5) && l.value == 0,
	   "the member is the value text");
	ok(l.ntags == 2 && l.tags[0].key_len == 2 &&
		   !memcmp(l.tags[0].key, "dc", 2) &&
		   l.tags[0].value_len == 4 &&
		   !memcmp(l.tags[0].value, "eu:1", 4),
	   "a tag value may hold ':' (the key ends at the first)");
	ok(l.tags[1].key_len == 6 && !memcmp(l.tags[1].key, "canary", 6) &&
		   l.tags[1].value_len == 0,
	   "a tag without a value: empty value");
}

static void test_bad(void)
{
	static const struct {
		const char *line;
		enum statsd_err want;
	} cases[] = {
		{ "", STATSD_ERR_NO_COLON },
		{ "nocolon", STATSD_ERR_NO_COLON },
		{ "hits|c", STATSD_ERR_NO_COLON },
		{ ":1|c", STATSD_ERR_BAD_NAME },
		{ "a b\x01:1|c", STATSD_ERR_BAD_NAME },
		{ "a\x7f:1|c", STATSD_ERR_BAD_NAME },
		{ "a|b:1|c", STATSD_ERR_BAD_NAME },
		{ "a#b:1|c", STATSD_ERR_BAD_NAME },
		{ "\xff:1|c", STATSD_ERR_BAD_NAME },
		{ "hits:|c", STATSD_ERR_BAD_VALUE },
		{ "hits:abc|c", STATSD_ERR_BAD_VALUE },
		{ "hits:1x|c", STATSD_ERR_BAD_VALUE },
		{ "hits: 1|c", STATSD_ERR_BAD_VALUE },
		{ "hits:0x10|c", STATSD_ERR_BAD_VALUE },
		{ "hits:inf|c", STATSD_ERR_BAD_VALUE },
		{ "hits:nan|g", STATSD_ERR_BAD_VALUE },
		{ "hits:1e999|c", STATSD_ERR_BAD_VALUE },
		{ "hits:1e|c", STATSD_ERR_BAD_VALUE },
		{ "hits:.|c", STATSD_ERR_BAD_VALUE },
		{ "hits:+|c", STATSD_ERR_BAD_VALUE },
		{ "hits:1:2|c", STATSD_ERR_BAD_VALUE },
		{ "users:|s", STATSD_ERR_BAD_VALUE },
		{ "hits:1", STATSD_ERR_BAD_TYPE },
		{ "hits:1|", STATSD_ERR_BAD_TYPE },
		{ "hits:1|x", STATSD_ERR_BAD_TYPE },
		{ "hits:1|cc", STATSD_ERR_BAD_TYPE },
		{ "hits:1|C", STATSD_ERR_BAD_TYPE },
		{ "hits:1|c|@", STATSD_ERR_BAD_RATE },
		{ "hits:1|c|@0", STATSD_ERR_BAD_RATE },
		{ "hits:1|c|@1.5", STATSD_ERR_BAD_RATE },
		{ "hits:1|c|@-0.5", STATSD_ERR_BAD_RATE },
		{ "hits:1|c|@x", STATSD_ERR_BAD_RATE },
		{ "hits:1|c|@0.5|@0.5", STATSD_ERR_BAD_RATE },
		{ "hits:1|c|#", STATSD_ERR_BAD_TAG },
		{ "hits:1|c|#a,", STATSD_ERR_BAD_TAG },
		{ "hits:1|c|#:v", STATSD_ERR_BAD_TAG },
		{ "hits:1|c|#a:b|#c:d", STATSD_ERR_BAD_TAG },
		{ "hits:1|c|#a:\x01", STATSD_ERR_BAD_TAG },
		{ "hits:1|c|", STATSD_ERR_BAD_FIELD },
		{ "hits:1|c|x", STATSD_ERR_BAD_FIELD },
		{ "hits:1|c||#a", STATSD_ERR_BAD_FIELD },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct statsd_line l;
		enum statsd_err err;

		err = statsd_parse_line(cases[i].line, strlen(cases[i].line),
					&l);
		if (!cmp_ok(err, "==", cases[i].want, "refused as %s: %s",
			    statsd_err_reason(cases[i].want), cases[i].line))
			diag("got %s", statsd_err_reason(err));
	}
}

static void test_limits(void)
{
	char line[600];
	struct statsd_line l;
	size_t n;

	memset(line, 'n', 255);
	memcpy(line + 255, ":1|c", 4);
	cmp_ok(statsd_parse_line(line, 259, &l), "==", STATSD_OK,
	       "a 255-byte name is taken");
	memset(line, 'n', 256);
	memcpy(line + 256, ":1|c", 4);
	cmp_ok(statsd_parse_line(line, 260, &l), "==", STATSD_ERR_BAD_NAME,
	       "a 256-byte name is refused");

	n = (size_t)snprintf(line, sizeof(line), "t:1|c|#");
	for (int i = 0; i < 16; i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "k%d:v,", i);
	line[--n] = '\0';
	cmp_ok(statsd_parse_line(line, n, &l), "==", STATSD_OK,
	       "16 tags are taken");
	ok(l.ntags == 16 && l.tags[15].key_len == 3 &&
		   !memcmp(l.tags[15].key, "k15", 3),
	   "all 16 in order");
	n += (size_t)snprintf(line + n, sizeof(line) - n, ",k16");
	cmp_ok(statsd_parse_line(line, n, &l), "==", STATSD_ERR_BAD_TAG,
	       "a 17th tag is refused");

	/* "x:" then 63 or 64 digits then "|c" */
	memcpy(line, "x:", 2);
	memset(line + 2, '1', 64);
	memcpy(line + 65, "|c", 2);
	cmp_ok(statsd_parse_line(line, 67, &l), "==", STATSD_OK,
	       "a 63-byte number is taken");
	memset(line + 2, '1', 64);
	memcpy(line + 66, "|c", 2);
	cmp_ok(statsd_parse_line(line, 68, &l), "==", STATSD_ERR_BAD_VALUE,
	       "a 64-byte number is refused");
}

static void test_lines(void)
{
	const char dgram[] = "a:1|c\nb:2|g\r\n\n\r\nc:3|ms\nbad\nd:4|s";
	const char *want[] = { "a:1|c", "b:2|g", "c:3|ms", "bad", "d:4|s" };
	size_t pos = 0, n, i = 0, seen = 0;
	const char *line;

	while ((n = statsd_next_line(dgram, sizeof(dgram) - 1, &pos, &line))) {
		ok(i < 5 && n == strlen(want[i]) && !memcmp(line, want[i], n),
		   "line %zu: %s", i, i < 5 ? want[i] : "?");
		i++;
		seen++;
	}
	cmp_ok(seen, "==", 5,
	       "5 lines: empty ones, also \\r\\n alone, skipped");
	cmp_ok(pos, "==", sizeof(dgram) - 1, "the whole datagram consumed");
	pos = 0;
	cmp_ok(statsd_next_line("\n\n", 2, &pos, &line), "==", 0,
	       "only line ends: no line");
}

/*
 * Values are converted without strtod() when that is exact (at most 15
 * digits, no exponent): every one must be the very double strtod() gives,
 * sign of zero included. Numbers of every length and shape, from a fixed
 * pseudo-random sequence.
 */
static void test_numbers(void)
{
	static const char *const fixed[] = {
		"0", "-0", "+0", "0.0", "-0.0", "1", "250", "21.5", "-8",
		"0.1", "0.3", "123456789012345", "1234567890123456",
		"999999999999999.9", "0.000000000000001", "3.14159265358979",
		"00000000042", "1e3", "1.5E-3", "9007199254740993", NULL,
	};
	uint64_t x = 88172645463325252ull;
	unsigned bad = 0, n = 0;

	for (int i = 0; i < 200000 + 20; i++) {
		char num[40], line[64];
		struct statsd_line p;
		double want;

		if (i < 20 && fixed[i]) {
			snprintf(num, sizeof(num), "%s", fixed[i]);
		} else {
			size_t len = 0, nd;

			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			if (x & 1)
				num[len++] = '-';
			nd = 1 + (x >> 1) % 18;
			for (size_t k = 0; k < nd; k++)
				num[len++] = (char)('0' + (x >> (8 + 3 * k)) % 10);
			if ((x >> 5) & 1) {
				size_t at = 1 + (x >> 40) % nd;

				memmove(num + at + 1 + ((x & 1) ? 1 : 0),
					num + at + ((x & 1) ? 1 : 0),
					len - at - ((x & 1) ? 1 : 0));
				num[at + ((x & 1) ? 1 : 0)] = '.';
				len++;
			}
			num[len] = '\0';
		}
		snprintf(line, sizeof(line), "v:%s|g", num);
		want = strtod(num, NULL);
		n++;
		if (statsd_parse_line(line, strlen(line), &p) != STATSD_OK ||
		    memcmp(&p.value, &want, sizeof(want))) {
			if (bad++ < 5)
				diag("%s: %.17g, strtod %.17g", num, p.value,
				     want);
		}
	}
	cmp_ok(bad, "==", 0, "%u values: each the double strtod() gives", n);
}

/*
 * Every byte a name, member, tag key or tag value refuses, at every
 * position of a 24-byte text (the word-at-a-time check and its tail),
 * and every other byte taken; separators that end the text are left out
 * (they have meanings of their own).
 */
static void test_text_bytes(void)
{
	static const struct {
		const char *pre, *post;
		const char *refuse, *skip;
		enum statsd_err err;
	} kinds[] = {
		{ "", ":1|c", "|#", ":", STATSD_ERR_BAD_NAME },
		{ "n:", "|s", "", "|", STATSD_ERR_BAD_VALUE },
		{ "n:1|c|#", ":v", "", ":,|", STATSD_ERR_BAD_TAG },
		{ "n:1|c|#k:", "", "", ",|", STATSD_ERR_BAD_TAG },
	};
	unsigned wrong = 0, tried = 0;

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		for (int c = 1; c < 256; c++) {
			bool refused = c < 0x20 || c == 0x7f || c >= 0x80 ||
				       strchr(kinds[k].refuse, c);

			if (strchr(kinds[k].skip, c))
				continue;
			for (int at = 0; at < 24; at++) {
				char line[64];
				size_t pl = strlen(kinds[k].pre), n = pl + 24;
				struct statsd_line l;
				enum statsd_err e;

				memcpy(line, kinds[k].pre, pl);
				memset(line + pl, 'a', 24);
				line[pl + (size_t)at] = (char)c;
				memcpy(line + n, kinds[k].post,
				       strlen(kinds[k].post));
				n += strlen(kinds[k].post);
				e = statsd_parse_line(line, n, &l);
				wrong += refused ? e != kinds[k].err
						 : e != STATSD_OK;
				tried++;
			}
		}
	}
	cmp_ok(tried, ">", 20000, "bytes tried");
	cmp_ok(wrong, "==", 0,
	       "each refused byte refused at each of 24 positions, the others "
	       "taken");
}

int main(void)
{
	plan(NO_PLAN);
	test_text_bytes();
	test_good();
	test_set_and_tags();
	test_bad();
	test_limits();
	test_lines();
	test_numbers();
	done_testing();
}
