/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/statsd/parse.c - the statsd line format (parse.h)
 */
#include "config.h"

#include <math.h>
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
 * Whether @s[0..@n) is 1 to STATSD_MAX_NAME bytes of UTF-8 with no control
 * character and none of the bytes in @forbid.
 */
static bool text_ok(const char *s, size_t n, const char *forbid)
{
	if (n == 0 || n > STATSD_MAX_NAME)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f || (c < 0x80 && strchr(forbid, c)))
			return false;
	}
	return tally_utf8_valid(s, n);
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

/*
 * Parse @s[0..@n) as [+-]digits[.digits][(e|E)[+-]digits] into *@out.
 * strtod() alone would also take spaces, hex, "inf" and "nan", and needs a
 * NUL: the grammar is checked here, then a bounded copy converted.
 */
static bool parse_number(const char *s, size_t n, double *out)
{
	char buf[STATSD_MAX_NUMBER + 1];
	size_t i = 0, mant;
	char *end;

	if (n == 0 || n > STATSD_MAX_NUMBER)
		return false;
	if (s[i] == '+' || s[i] == '-')
		i++;
	mant = scan_digits(s, n, &i);
	if (i < n && s[i] == '.') {
		i++;
		mant += scan_digits(s, n, &i);
	}
	if (mant == 0)
		return false;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (scan_digits(s, n, &i) == 0)
			return false;
	}
	if (i != n)
		return false;
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
		if (!text_ok(t->key, t->key_len, ":,|") ||
		    (t->value_len && !text_ok(t->value, t->value_len, ",|")))
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
	if (!text_ok(out->name, out->name_len, "|#"))
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
		if (!text_ok(colon + 1, vl, "|"))
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
