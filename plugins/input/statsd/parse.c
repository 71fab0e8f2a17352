/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/statsd/parse.c - the statsd line format (parse.h)
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tally/utf8.h>

#include "parse.h"

static const char *const statsd_reasons[STATSD_ERR_COUNT] = {
	[STATSD_OK] = "ok",
	[STATSD_ERR_NO_COLON] = "no_colon",
	[STATSD_ERR_BAD_NAME] = "bad_name",
	[STATSD_ERR_BAD_VALUE] = "bad_value",
	[STATSD_ERR_BAD_TYPE] = "bad_type",
	[STATSD_ERR_BAD_RATE] = "bad_rate",
	[STATSD_ERR_BAD_TAG] = "bad_tag",
	[STATSD_ERR_BAD_FIELD] = "bad_field",
};

const char *statsd_err_reason(enum statsd_err err)
{
	if ((unsigned)err >= STATSD_ERR_COUNT)
		return "other";
	return statsd_reasons[err];
}

/*
 * Bytes each kind of text refuses, one bit per kind: control characters
 * everywhere, and the separators of the line format where they would end
 * the text. A table, not strchr() per byte: this runs on every byte of
 * every line.
 */
enum text_kind {
	TEXT_NAME = 1u << 0,	/* no '|' or '#' */
	TEXT_MEMBER = 1u << 1,	/* no '|' */
	TEXT_TAG_KEY = 1u << 2, /* no ':', ',' or '|' */
	TEXT_TAG_VAL = 1u << 3, /* no ',' or '|' */
	TEXT_ALL = 0xf,
};

static const unsigned char text_refuses[256] = {
	[0x00] = TEXT_ALL, [0x01] = TEXT_ALL, [0x02] = TEXT_ALL,
	[0x03] = TEXT_ALL, [0x04] = TEXT_ALL, [0x05] = TEXT_ALL,
	[0x06] = TEXT_ALL, [0x07] = TEXT_ALL, [0x08] = TEXT_ALL,
	[0x09] = TEXT_ALL, [0x0a] = TEXT_ALL, [0x0b] = TEXT_ALL,
	[0x0c] = TEXT_ALL, [0x0d] = TEXT_ALL, [0x0e] = TEXT_ALL,
	[0x0f] = TEXT_ALL, [0x10] = TEXT_ALL, [0x11] = TEXT_ALL,
	[0x12] = TEXT_ALL, [0x13] = TEXT_ALL, [0x14] = TEXT_ALL,
	[0x15] = TEXT_ALL, [0x16] = TEXT_ALL, [0x17] = TEXT_ALL,
	[0x18] = TEXT_ALL, [0x19] = TEXT_ALL, [0x1a] = TEXT_ALL,
	[0x1b] = TEXT_ALL, [0x1c] = TEXT_ALL, [0x1d] = TEXT_ALL,
	[0x1e] = TEXT_ALL, [0x1f] = TEXT_ALL, [0x7f] = TEXT_ALL,
	['|'] = TEXT_ALL,
	['#'] = TEXT_NAME,
	[':'] = TEXT_TAG_KEY,
	[','] = TEXT_TAG_KEY | TEXT_TAG_VAL,
};

#define SWAR_ONES  0x0101010101010101ULL
#define SWAR_HIGHS 0x8080808080808080ULL

/* The high bit of each byte of @w that equals @c (exact as to whether any). */
static inline uint64_t swar_eq(uint64_t w, unsigned char c)
{
	uint64_t x = w ^ (SWAR_ONES * c);

	return (x - SWAR_ONES) & ~x & SWAR_HIGHS;
}

/*
 * Whether @s[0..@n) is 1 to STATSD_MAX_NAME bytes of UTF-8 with none of
 * the bytes text of @kind refuses. Eight bytes at a time (the bytes text
 * refuses are few: control characters, DEL and the separators), the rest
 * through the table; ASCII, the usual case, needs no UTF-8 decoding.
 */
static inline bool text_ok(const char *s, size_t n, enum text_kind kind)
{
	uint64_t high = 0, bad = 0;
	size_t i = 0;

	if (n == 0 || n > STATSD_MAX_NAME)
		return false;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, s + i, 8);
		high |= w;
		/* bytes < 0x20, DEL, and '|', which every kind refuses */
		bad |= ((w - SWAR_ONES * 0x20) & ~w) | swar_eq(w, 0x7f) |
		       swar_eq(w, '|');
		if (kind & TEXT_NAME)
			bad |= swar_eq(w, '#');
		if (kind & TEXT_TAG_KEY)
			bad |= swar_eq(w, ':');
		if (kind & (TEXT_TAG_KEY | TEXT_TAG_VAL))
			bad |= swar_eq(w, ',');
	}
	if (bad & SWAR_HIGHS)
		return false;
	for (; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (text_refuses[c] & kind)
			return false;
		high |= c;
	}
	return !(high & SWAR_HIGHS) || tally_utf8_valid(s, n);
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Digits at @s[*i..@n): how many, advancing *i past them. */
static size_t scan_digits(const char *s, size_t n, size_t *i)
{
	size_t start = *i;

	while (*i < n && is_digit(s[*i]))
		(*i)++;
	return *i - start;
}

/* Powers of ten a double holds exactly. */
static const double exact_pow10[] = {
	1e0,  1e1,  1e2,  1e3,	1e4,  1e5,  1e6,  1e7,	1e8,  1e9,  1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/*
 * Parse @s[0..@n) as [+-]digits[.digits][(e|E)[+-]digits] into *@out.
 * strtod() alone would also take spaces, hex, "inf" and "nan", and needs a
 * NUL: the grammar is checked here. The usual values ("1", "250", "21.5")
 * are converted here (Clinger's fast path: at most 15 significant digits
 * and a power of ten up to 22 are exact doubles, so one multiplication or
 * division rounds correctly, as strtod() would); others go to strtod().
 */
static bool parse_number(const char *s, size_t n, double *out)
{
	char buf[STATSD_MAX_NUMBER + 1];
	size_t i = 0, mant, frac = 0, digits = 0;
	uint64_t m = 0;
	bool neg = false;
	char *end;

	if (n == 0 || n > STATSD_MAX_NUMBER)
		return false;
	if (s[i] == '+' || s[i] == '-')
		neg = s[i++] == '-';
	for (; i < n && is_digit(s[i]); i++, digits++)
		m = m * 10 + (uint64_t)(s[i] - '0');
	mant = digits;
	if (i < n && s[i] == '.') {
		i++;
		for (; i < n && is_digit(s[i]); i++, digits++, frac++)
			m = m * 10 + (uint64_t)(s[i] - '0');
		mant = digits;
	}
	if (mant == 0)
		return false;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (scan_digits(s, n, &i) == 0)
			return false;
		frac = SIZE_MAX; /* an exponent: leave it to strtod() */
	}
	if (i != n)
		return false;
	if (digits <= 15 && frac < sizeof(exact_pow10) / sizeof(double)) {
		double v = (double)m / exact_pow10[frac];

		*out = neg ? -v : v;
		return true;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	*out = strtod(buf, &end);
	return end == buf + n && isfinite(*out);
}

static bool parse_type(const char *s, size_t n, enum statsd_type *t)
{
	static const struct {
		const char *name;
		enum statsd_type type;
	} types[] = {
		{ "c", STATSD_COUNTER },   { "g", STATSD_GAUGE },
		{ "ms", STATSD_TIMER },	   { "h", STATSD_HISTOGRAM },
		{ "d", STATSD_HISTOGRAM }, { "s", STATSD_SET },
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (strlen(types[i].name) == n &&
		    !memcmp(types[i].name, s, n)) {
			*t = types[i].type;
			return true;
		}
	}
	return false;
}

/* "#k:v,k2" (without the '#') into @out's tags. */
static enum statsd_err parse_tags(const char *s, size_t n,
				  struct statsd_line *out)
{
	size_t i = 0;

	for (;;) {
		const char *comma = memchr(s + i, ',', n - i);
		size_t end = comma ? (size_t)(comma - s) : n;
		const char *tag = s + i, *colon;
		size_t tl = end - i;
		struct statsd_tag *t;

		if (out->ntags == STATSD_MAX_TAGS)
			return STATSD_ERR_BAD_TAG;
		t = &out->tags[out->ntags++];
		colon = memchr(tag, ':', tl);
		t->key = tag;
		t->key_len = colon ? (size_t)(colon - tag) : tl;
		t->value = colon ? colon + 1 : tag + tl;
		t->value_len = colon ? tl - t->key_len - 1 : 0;
		if (!text_ok(t->key, t->key_len, TEXT_TAG_KEY) ||
		    (t->value_len && !text_ok(t->value, t->value_len, TEXT_TAG_VAL)))
			return STATSD_ERR_BAD_TAG;
		if (!comma)
			return STATSD_OK;
		i = end + 1;
	}
}

enum statsd_err statsd_parse_line(const char *line, size_t len,
				  struct statsd_line *out)
{
	const char *colon = memchr(line, ':', len);
	const char *p, *bar, *end = line + len;
	bool have_rate = false, have_tags = false;
	enum statsd_err err;
	size_t vl;

	if (!colon)
		return STATSD_ERR_NO_COLON;
	out->name = line;
	out->name_len = (size_t)(colon - line);
	if (!text_ok(out->name, out->name_len, TEXT_NAME))
		return STATSD_ERR_BAD_NAME;

	/* the value, up to the type's '|' */
	p = colon + 1;
	bar = memchr(p, '|', (size_t)(end - p));
	if (!bar)
		return STATSD_ERR_BAD_TYPE;
	vl = (size_t)(bar - p);

	/* the type, up to the next '|' or the end */
	p = bar + 1;
	bar = memchr(p, '|', (size_t)(end - p));
	if (!parse_type(p, (size_t)((bar ? bar : end) - p), &out->type))
		return STATSD_ERR_BAD_TYPE;

	out->value = 0;
	out->member = NULL;
	out->member_len = 0;
	out->delta = false;
	out->rate = 1.0;
	out->ntags = 0;
	if (out->type == STATSD_SET) {
		if (!text_ok(colon + 1, vl, TEXT_MEMBER))
			return STATSD_ERR_BAD_VALUE;
		out->member = colon + 1;
		out->member_len = vl;
	} else {
		if (!parse_number(colon + 1, vl, &out->value))
			return STATSD_ERR_BAD_VALUE;
		out->delta = out->type == STATSD_GAUGE &&
			     (colon[1] == '+' || colon[1] == '-');
	}

	/* optional sections: "@rate" and "#tags", once each, any order */
	while (bar) {
		size_t sl;

		p = bar + 1;
		bar = memchr(p, '|', (size_t)(end - p));
		sl = (size_t)((bar ? bar : end) - p);
		if (sl > 0 && p[0] == '@') {
			double r;

			if (have_rate || !parse_number(p + 1, sl - 1, &r) ||
			    !(r > 0 && r <= 1))
				return STATSD_ERR_BAD_RATE;
			have_rate = true;
			if (out->type != STATSD_GAUGE &&
			    out->type != STATSD_SET)
				out->rate = r;
		} else if (sl > 0 && p[0] == '#') {
			if (have_tags)
				return STATSD_ERR_BAD_TAG;
			have_tags = true;
			err = parse_tags(p + 1, sl - 1, out);
			if (err)
				return err;
		} else {
			return STATSD_ERR_BAD_FIELD;
		}
	}
	return STATSD_OK;
}

size_t statsd_next_line(const char *buf, size_t len, size_t *pos,
			const char **line)
{
	while (*pos < len) {
		const char *s = buf + *pos;
		const char *nl = memchr(s, '\n', len - *pos);
		size_t n = nl ? (size_t)(nl - s) : len - *pos;

		*pos += n + (nl ? 1 : 0);
		if (n > 0 && s[n - 1] == '\r')
			n--;
		if (n > 0) {
			*line = s;
			return n;
		}
	}
	return 0;
}
