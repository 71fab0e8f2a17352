/* SPDX-License-Identifier: MIT */
/*
 * core/client/utf8.c - the strings libtally-trace sends are valid UTF-8
 *
 * The collector drops a message whose trace id, name or hostname is not
 * UTF-8 (reason bad_utf8), which the client could not report: its event
 * would vanish. So the client repairs strings before sending, as the
 * Python client does (bytes.decode("utf-8", "replace")): each maximal
 * subpart of an ill-formed sequence becomes U+FFFD (Unicode 15, §3.9,
 * "U+FFFD Substitution of Maximal Subparts"). Well-formed means RFC 3629:
 * no overlong forms, no surrogates, nothing above U+10FFFF.
 *
 * Names are checked on every event: trace.c tests for pure ASCII first and
 * calls in here only for other names.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "trace-internal.h"

size_t tt_utf8_clip(const char *s, size_t len, size_t max)
{
	if (len <= max)
		return len;
	/* back off over continuation bytes (10xxxxxx) to a sequence start */
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	return max;
}

/*
 * The sequence at @s (@len > 0 bytes left): its length (1..4) when
 * well-formed, else minus the length of its maximal subpart (-1..-3): the
 * bytes that start a well-formed sequence but do not complete it.
 */
static int tt_utf8_seq(const unsigned char *s, size_t len)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	int n, i;

	if (c < 0x80)
		return 1;
	/* lead byte, and the range of the second byte (RFC 3629 §4) */
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
		if ((size_t)i >= len || s[i] < lo || s[i] > hi)
			return -i;
		lo = 0x80;
		hi = 0xbf;
	}
	return n;
}

int tt_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		int n = tt_utf8_seq(p + i, len - i);

		if (n < 0)
			return 0;
		i += (size_t)n;
	}
	return 1;
}

size_t tt_utf8_fix(const char *s, size_t len, char *out, size_t max)
{
	static const char fffd[3] = { '\xef', '\xbf', '\xbd' };
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, o = 0;

	while (i < len) {
		int n = tt_utf8_seq(p + i, len - i);
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
