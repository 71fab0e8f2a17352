/* SPDX-License-Identifier: MIT */
/*
 * core/exposition.c - Prometheus text exposition helpers (tally/exposition.h)
 */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/exposition.h>
#include <tally/utf8.h>

/* snprintf-style sink: counts everything, stores what fits. */
struct expo_out {
	char *dst;
	size_t size;
	size_t len;
};

static void out_putc(struct expo_out *o, char c)
{
	if (o->len + 1 < o->size)
		o->dst[o->len] = c;
	o->len++;
}

static void out_put(struct expo_out *o, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out_putc(o, s[i]);
}

static size_t out_end(struct expo_out *o)
{
	if (o->size)
		o->dst[o->len < o->size ? o->len : o->size - 1] = '\0';
	return o->len;
}

/*
 * Length of the well-formed UTF-8 sequence at @p (1 to 4), or 0 when the
 * bytes there are not one. A NUL ends the string: never read past it.
 */
static size_t utf8_seq_len(const unsigned char *p)
{
	int n = tally_utf8_seq(p, strnlen((const char *)p, 4));

	return n > 0 ? (size_t)n : 0;
}

static bool is_alpha_(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

bool tally_expo_valid_metric_name(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!p || !*p || !(is_alpha_(*p) || *p == ':'))
		return false;
	for (p++; *p; p++)
		if (!(is_alpha_(*p) || is_digit(*p) || *p == ':'))
			return false;
	return true;
}

bool tally_expo_valid_label_name(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (!p || !*p || !is_alpha_(*p) || (p[0] == '_' && p[1] == '_'))
		return false;
	for (p++; *p; p++)
		if (!(is_alpha_(*p) || is_digit(*p)))
			return false;
	return true;
}

/*
 * A sanitizing iterator, so that names can be both written out and compared
 * sanitized without a temporary copy.
 */
struct san {
	const unsigned char *p;
	bool colon; /* ':' allowed (metric names) */
	bool pre;   /* emit a '_' before the next source character */
};

/* Next sanitized character from @p, advancing it; 0 at the end. */
static unsigned char san_step(const unsigned char **pp, bool colon)
{
	const unsigned char *p = *pp;
	size_t n;

	if (!*p)
		return 0;
	if (is_alpha_(*p) || is_digit(*p) || (colon && *p == ':')) {
		*pp = p + 1;
		return *p;
	}
	n = utf8_seq_len(p);
	*pp = p + (n ? n : 1);
	return '_';
}

static void san_init(struct san *s, const char *src, bool label)
{
	s->p = (const unsigned char *)src;
	s->colon = !label;
	s->pre = !*s->p || is_digit(*s->p);
	if (!label || s->pre)
		return;
	/* Shorten a reserved leading "__" (or "..", "_-", ...) to one '_'. */
	for (;;) {
		const unsigned char *q = s->p;

		if (san_step(&q, false) != '_' || san_step(&q, false) != '_')
			break;
		q = s->p;
		san_step(&q, false);
		s->p = q;
	}
}

/* Next character of the sanitized name, or -1 at its end. */
static int san_next(struct san *s)
{
	unsigned char c;

	if (s->pre) {
		s->pre = false;
		return '_';
	}
	c = san_step(&s->p, s->colon);
	return c ? c : -1;
}

static void out_sanitized(struct expo_out *o, const char *src, bool label)
{
	struct san s;
	int c;

	san_init(&s, src, label);
	while ((c = san_next(&s)) >= 0)
		out_putc(o, (char)c);
}

size_t tally_expo_sanitize_metric_name(char *dst, size_t size, const char *src)
{
	struct expo_out o = { dst, size, 0 };

	out_sanitized(&o, src, false);
	return out_end(&o);
}

size_t tally_expo_sanitize_label_name(char *dst, size_t size, const char *src)
{
	struct expo_out o = { dst, size, 0 };

	out_sanitized(&o, src, true);
	return out_end(&o);
}

static bool label_names_equal(const char *a, const char *b)
{
	struct san sa, sb;
	int ca, cb;

	san_init(&sa, a, true);
	san_init(&sb, b, true);
	do {
		ca = san_next(&sa);
		cb = san_next(&sb);
		if (ca != cb)
			return false;
	} while (ca >= 0);
	return true;
}

static void out_escaped(struct expo_out *o, const char *src, bool quote)
{
	const unsigned char *p = (const unsigned char *)src;

	while (*p) {
		size_t n;

		switch (*p) {
		case '\\':
			out_put(o, "\\\\", 2);
			p++;
			continue;
		case '\n':
			out_put(o, "\\n", 2);
			p++;
			continue;
		case '"':
			if (quote)
				out_put(o, "\\\"", 2);
			else
				out_putc(o, '"');
			p++;
			continue;
		}
		n = utf8_seq_len(p);
		if (n) {
			out_put(o, (const char *)p, n);
			p += n;
		} else {
			out_put(o, "\xef\xbf\xbd", 3); /* U+FFFD */
			p++;
		}
	}
}

size_t tally_expo_escape_label_value(char *dst, size_t size, const char *src)
{
	struct expo_out o = { dst, size, 0 };

	out_escaped(&o, src, true);
	return out_end(&o);
}

size_t tally_expo_escape_help(char *dst, size_t size, const char *src,
			      bool openmetrics)
{
	struct expo_out o = { dst, size, 0 };

	out_escaped(&o, src, openmetrics);
	return out_end(&o);
}

/*
 * A non-integer with at most 15 significant digits in printf's fixed range
 * (1e-4 <= |v| < 1e15), by hand: what "%.15g" prints, and reads back.
 * m = |v| * 10^k rounded is below 10^15, exact in a double, and so is
 * 10^k (k <= 19), so m / 10^k is the correctly rounded value of the
 * decimal m e-k, which is what strtod reads: when it is |v|, that decimal
 * reads back exactly. The first such k gives the shortest one; being on
 * the 15-digit grid within half an ulp of v (the grid is coarser than
 * ulps), it is also the one "%.15g" rounds v to. Return: its length, or 0
 * (not such a value: the caller uses printf).
 */
static size_t format_short_fixed(char *buf, double v)
{
	static const double p10[] = { 1e0,  1e1,  1e2,	1e3,  1e4,
				      1e5,  1e6,  1e7,	1e8,  1e9,
				      1e10, 1e11, 1e12, 1e13, 1e14,
				      1e15, 1e16, 1e17, 1e18, 1e19 };
	double a = fabs(v);
	char digits[24];
	char *p = buf;
	uint64_t u;
	size_t nd = 0, k;

	if (!(a >= 1e-4 && a < 1e15))
		return 0;
	for (k = 1; k < sizeof(p10) / sizeof(p10[0]); k++) {
		double m = nearbyint(a * p10[k]);

		if (m >= 1e15)
			return 0; /* more than 15 digits */
		if (m / p10[k] == a)
			break;
	}
	if (k == sizeof(p10) / sizeof(p10[0]))
		return 0;
	u = (uint64_t)nearbyint(a * p10[k]);
	do {
		digits[nd++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (signbit(v))
		*p++ = '-';
	if (nd <= k) {
		*p++ = '0';
		*p++ = '.';
		for (size_t z = nd; z < k; z++)
			*p++ = '0';
	}
	while (nd) {
		if (nd == k && p > buf && p[-1] != '.')
			*p++ = '.';
		*p++ = digits[--nd];
	}
	*p = '\0';
	return (size_t)(p - buf);
}

size_t tally_expo_format_double(char *buf, double v)
{
	char *p;
	uint64_t u;
	size_t n;

	if (isnan(v))
		return (size_t)sprintf(buf, "NaN");
	if (isinf(v))
		return (size_t)sprintf(buf, v > 0 ? "+Inf" : "-Inf");
	/*
	 * Counters and most gauges hold integers: format those by hand, which
	 * is several times faster than snprintf and keeps a 100k-series
	 * scrape cheap. 2^53 is where doubles stop holding every integer.
	 */
	if (v == floor(v) && fabs(v) <= 9007199254740992.0) {
		char tmp[24];
		size_t i = sizeof(tmp);

		u = (uint64_t)fabs(v);
		do {
			tmp[--i] = (char)('0' + u % 10);
			u /= 10;
		} while (u);
		p = buf;
		if (signbit(v))
			*p++ = '-';
		n = sizeof(tmp) - i;
		memcpy(p, tmp + i, n);
		p[n] = '\0';
		return (size_t)(p - buf) + n;
	}
	n = format_short_fixed(buf, v);
	if (n)
		return n;
	/* Shortest of 15, 16, 17 significant digits that reads back exactly. */
	for (int prec = 15;; prec++) {
		int len = snprintf(buf, TALLY_EXPO_DOUBLE_MAX, "%.*g", prec, v);

		if (prec == 17 || strtod(buf, NULL) == v)
			return (size_t)len;
	}
}

size_t tally_expo_format_labels(char *dst, size_t size,
				const struct tally_labels *ls, bool *dup)
{
	struct expo_out o = { dst, size, 0 };
	size_t n = tally_labels_count(ls);
	bool all_valid = true;

	if (dup)
		*dup = false;
	for (size_t i = 0; i < n; i++) {
		const struct tally_label *l = tally_labels_at(ls, i);

		out_putc(&o, i ? ',' : '{');
		out_sanitized(&o, l->key, true);
		out_put(&o, "=\"", 2);
		out_escaped(&o, l->value, true);
		out_putc(&o, '"');
		if (!tally_expo_valid_label_name(l->key))
			all_valid = false;
	}
	if (n)
		out_putc(&o, '}');
	/*
	 * Raw keys are unique, and valid keys are copied unchanged, so only a
	 * set with a sanitized key can repeat a name.
	 */
	if (dup && !all_valid)
		for (size_t i = 0; i < n && !*dup; i++)
			for (size_t j = i + 1; j < n && !*dup; j++)
				*dup = label_names_equal(
					tally_labels_at(ls, i)->key,
					tally_labels_at(ls, j)->key);
	return out_end(&o);
}
