/* SPDX-License-Identifier: MIT */
/*
 * core/utf8.c - UTF-8 validation and repair (tally/utf8.h)
 *
 * Built into libtally and into libtally-trace; keep it free of anything
 * but libc.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include <tally/utf8.h>

int tally_utf8_seq(const void *s, size_t len)
{
	const unsigned char *p = s;
	unsigned char c = p[0], lo = 0x80, hi = 0xbf;
	int n, i;

	if (c < 0x80)
		return 1;
	/* the lead byte, and the range of the second byte (RFC 3629 §4) */
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	} else {
		return -1; /* a continuation byte, 0xc0, 0xc1, 0xf5..0xff */
	}
	for (i = 1; i < n; i++) {
		if ((size_t)i >= len || p[i] < lo || p[i] > hi)
			return -i;
		lo = 0x80;
		hi = 0xbf;
	}
	return n;
}

bool tally_utf8_valid(const void *s, size_t len)
{
	const uint64_t high = 0x8080808080808080ull;
	const uint64_t ones = 0x0101010101010101ull;
	const unsigned char *p = s;
	size_t i = 0;

	while (i < len) {
		/* 8 bytes a step while no byte has its high bit set and
		 * none is 0 */
		while (len - i >= 8) {
			uint64_t v;

			memcpy(&v, p + i, 8);
			if ((v & high) || ((v - ones) & ~v & high))
				break;
			i += 8;
		}
		/* ASCII a byte at a time (short strings: keys, names, the
		 * tail) without the call below */
		while (i < len && p[i] - 1u < 0x7fu)
			i++;
		if (i >= len)
			break;
		if (p[i] == 0)
			return false;
		int n = tally_utf8_seq(p + i, len - i);

		if (n < 0)
			return false;
		i += (size_t)n;
	}
	return true;
}

size_t tally_utf8_clip(const char *s, size_t len, size_t max)
{
	if (len <= max)
		return len;
	/* back off over continuation bytes (10xxxxxx) to a sequence start */
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

size_t tally_utf8_fix(const char *s, size_t len, char *out, size_t max)
{
	static const char fffd[3] = { '\xef', '\xbf', '\xbd' };
	size_t i = 0, o = 0;

	while (i < len) {
		int n = tally_utf8_seq(s + i, len - i);
		const char *src = n > 0 ? s + i : fffd;
		size_t k = n > 0 ? (size_t)n : sizeof(fffd);

		if (o + k > max)
			break; /* only whole characters */
		memcpy(out + o, src, k);
		o += k;
		i += (size_t)(n > 0 ? n : -n);
	}
	return o;
}
