/* SPDX-License-Identifier: MIT */
/*
 * core/json.c - writing JSON strings (tally/json.h)
 */
#include "config.h"

#include <string.h>

#include <tally/json.h>
#include <tally/utf8.h>

/* snprintf-style sink: counts everything, stores what fits. */
struct json_out {
	char *dst;
	size_t size;
	size_t len;
};

static void out_put(struct json_out *o, const char *s, size_t n)
{
	if (o->len + 1 < o->size) {
		size_t room = o->size - 1 - o->len;

		memcpy(o->dst + o->len, s, n < room ? n : room);
	}
	o->len += n;
}

/* Bytes copied as they are: printable ASCII but the quote and backslash. */
static inline int json_plain(unsigned char c)
{
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

size_t tally_json_escape(char *dst, size_t size, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)src;
	struct json_out o = { dst, size, 0 };

	while (*p) {
		const unsigned char *run = p;
		char esc[6] = { '\\', 0, '0', '0', 0, 0 };
		int n;

		/* the common case: names and ids are plain ASCII */
		while (json_plain(*p))
			p++;
		if (p > run)
			out_put(&o, (const char *)run, (size_t)(p - run));
		if (!*p)
			break;
		switch (*p) {
		case '"':
		case '\\':
			esc[1] = (char)*p;
			out_put(&o, esc, 2);
			p++;
			continue;
		case '\b':
			out_put(&o, "\\b", 2);
			p++;
			continue;
		case '\f':
			out_put(&o, "\\f", 2);
			p++;
			continue;
		case '\n':
			out_put(&o, "\\n", 2);
			p++;
			continue;
		case '\r':
			out_put(&o, "\\r", 2);
			p++;
			continue;
		case '\t':
			out_put(&o, "\\t", 2);
			p++;
			continue;
		}
		if (*p < 0x20) {
			esc[1] = 'u';
			esc[4] = hex[*p >> 4];
			esc[5] = hex[*p & 0xf];
			out_put(&o, esc, 6);
			p++;
			continue;
		}
		/* a NUL ends the string: never look past it */
		n = tally_utf8_seq(p, strnlen((const char *)p, 4));
		if (n > 0) {
			out_put(&o, (const char *)p, (size_t)n);
			p += n;
		} else {
			out_put(&o, "\xef\xbf\xbd", 3);
			p += -n;
		}
	}
	if (o.size)
		o.dst[o.len < o.size ? o.len : o.size - 1] = '\0';
	return o.len;
}
