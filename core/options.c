/* SPDX-License-Identifier: MIT */
/*
 * core/options.c - option tables: defaults, type checks, storage, freeing
 *
 * The option table is the only place a plugin declares its configuration,
 * so everything about turning a libconfig setting into a field of the
 * plugin's state struct lives here, once.
 */
#include "config.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/config.h>
#include <tally/exposition.h>
#include <tally/labels.h>
#include <tally/utf8.h>

#include "core-internal.h"

#define FIELD(state, opt, type) ((type *)((char *)(state) + (opt)->offset))

const char *tally_options_type_name(enum tally_opt_type t)
{
	switch (t) {
	case TALLY_OPT_T_STRING:
		return "string";
	case TALLY_OPT_T_INT:
		return "integer";
	case TALLY_OPT_T_DOUBLE:
		return "number";
	case TALLY_OPT_T_BOOL:
		return "boolean";
	case TALLY_OPT_T_LIST:
		return "list of strings";
	case TALLY_OPT_T_ENUM:
		return "choice";
	case TALLY_OPT_T_REGEXLIST:
		return "list of regular expressions";
	case TALLY_OPT_T_LABELS:
		return "group of labels";
	case TALLY_OPT_T_NUMBERS:
		return "list of numbers";
	case TALLY_OPT_T_SIZE:
		return "size";
	case TALLY_OPT_T_DURATION:
		return "duration";
	default:
		return "?";
	}
}

const struct tally_option *tally_options_find(const struct tally_option *opts,
					      const char *name)
{
	for (; opts && opts->name; opts++) {
		if (!strcmp(opts->name, name))
			return opts;
	}
	return NULL;
}

unsigned tally_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned row[64], prev, tmp;

	/* option names are short; anything longer is simply "far" */
	if (la >= 64 || lb >= 64)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned best = prev + (a[i - 1] != b[j - 1]);

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			tmp = row[j];
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

static void list_free(struct tally_strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Split a default like "eth0,ib0" into a list. */
static int list_from_csv(struct tally_strlist *l, const char *csv)
{
	struct tally_strlist tmp = { 0 };
	const char *p = csv;

	while (*p) {
		size_t len = strcspn(p, ",");
		char **v = realloc(tmp.v, (tmp.n + 1) * sizeof(*v));

		if (!v)
			goto out_nomem;
		tmp.v = v;
		tmp.v[tmp.n] = strndup(p, len);
		if (!tmp.v[tmp.n])
			goto out_nomem;
		tmp.n++;
		p += len;
		if (*p == ',')
			p++;
	}
	list_free(l);
	*l = tmp;
	return 0;
out_nomem:
	list_free(&tmp);
	errno = ENOMEM;
	return -1;
}

/* ---- regular expressions: RE2 (node_exporter, Prometheus) to POSIX ERE -- */

struct rx_out {
	char *p;
	size_t len, cap;
};

static int rx_put(struct rx_out *o, const char *s, size_t n)
{
	if (o->len + n + 1 > o->cap) {
		size_t ncap = o->cap ? o->cap : 64;
		char *np;

		while (ncap < o->len + n + 1)
			ncap *= 2;
		np = realloc(o->p, ncap);
		if (!np) {
			errno = ENOMEM;
			return -1;
		}
		o->p = np;
		o->cap = ncap;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
	return 0;
}

static int rx_puts(struct rx_out *o, const char *s)
{
	return rx_put(o, s, strlen(s));
}

/* The bracket body of Perl class @c (d s w), or NULL. */
static const char *rx_class(char c)
{
	switch (c) {
	case 'd':
		return "0-9";
	case 's':
		return "[:space:]";
	case 'w':
		return "[:alnum:]_";
	}
	return NULL;
}

/* The character escape @c stands for (\t...), or 0. */
static char rx_control(char c)
{
	switch (c) {
	case 't':
		return '\t';
	case 'n':
		return '\n';
	case 'r':
		return '\r';
	case 'f':
		return '\f';
	case 'v':
		return '\v';
	}
	return 0;
}

/*
 * Translate the bracket expression at @*pp (on its '[') into @o; @*pp is
 * left after its ']'. Return: 0, -1 with errno (EINVAL: *@why set).
 */
static int rx_bracket(struct rx_out *o, const char **pp, const char **why)
{
	const char *p = *pp + 1;
	bool first = true;

	if (rx_put(o, "[", 1) < 0)
		return -1;
	if (*p == '^') {
		if (rx_put(o, "^", 1) < 0)
			return -1;
		p++;
	}
	for (; *p; p++, first = false) {
		char one[2] = { 0 };
		const char *put = one;

		if (*p == ']' && !first)
			break;
		if (*p == '[' && p[1] == ':') {
			const char *end = strstr(p + 2, ":]");

			if (!end) {
				*why = "unterminated [:class:]";
				errno = EINVAL;
				return -1;
			}
			if (rx_put(o, p, (size_t)(end + 2 - p)) < 0)
				return -1;
			p = end + 1;
			continue;
		}
		if (*p == '[') {
			put = "[.[.]"; /* POSIX would start [. [= here */
		} else if (*p == '\\' && p[1]) {
			p++;
			if (rx_class(*p)) {
				put = rx_class(*p);
			} else if (rx_class((char)(*p | 0x20))) {
				*why = "\\D, \\S or \\W inside brackets has no "
				       "POSIX equivalent";
				errno = EINVAL;
				return -1;
			} else if (rx_control(*p)) {
				one[0] = rx_control(*p);
			} else if (*p == ']' || *p == '-' || *p == '^' ||
				   *p == '[') {
				/* a collating symbol: literal anywhere */
				if (rx_puts(o, "[.") < 0 || rx_put(o, p, 1) < 0)
					return -1;
				put = ".]";
			} else if ((*p >= 'a' && *p <= 'z') ||
				   (*p >= 'A' && *p <= 'Z') ||
				   (*p >= '0' && *p <= '9')) {
				*why = "an escape inside brackets that POSIX "
				       "has not";
				errno = EINVAL;
				return -1;
			} else {
				one[0] = *p; /* \. \\ \/ ...: the character */
			}
		} else {
			one[0] = *p;
		}
		if (rx_puts(o, put) < 0)
			return -1;
	}
	if (*p != ']') {
		*why = "unterminated [";
		errno = EINVAL;
		return -1;
	}
	*pp = p + 1;
	return rx_put(o, "]", 1);
}

/* Whether @p (after a '{') is a repetition n}, n,} or n,m}; its end. */
static const char *rx_repeat_end(const char *p)
{
	const char *q = p;

	while (*q >= '0' && *q <= '9')
		q++;
	if (q == p)
		return NULL;
	if (*q == ',')
		for (q++; *q >= '0' && *q <= '9'; q++)
			;
	return *q == '}' ? q : NULL;
}

/*
 * @src in POSIX ERE, into @o. Return: 0, or -1 with errno (EINVAL: *@why
 * says what cannot be translated).
 */
static int rx_translate(struct rx_out *o, const char *src, const char **why)
{
	const char *p = src;

	if (rx_put(o, "", 0) < 0)
		return -1;
	while (*p) {
		char c = *p;

		if (c == '[') {
			if (rx_bracket(o, &p, why) < 0)
				return -1;
			continue;
		}
		if (c == '(' && p[1] == '?') {
			*why = "(? groups and flags, such as (?i) or (?:...), "
			       "are not POSIX";
			errno = EINVAL;
			return -1;
		}
		if ((c == '*' || c == '+' || c == '?') && p[1] == '?') {
			*why = "lazy quantifiers (*?, +?, ?\?) are not POSIX";
			errno = EINVAL;
			return -1;
		}
		if (c == '{') {
			const char *end = rx_repeat_end(p + 1);

			if (end && end[1] == '?') {
				*why = "lazy quantifiers ({n,m}?): not POSIX";
				errno = EINVAL;
				return -1;
			}
			if (end) {
				if (rx_put(o, p, (size_t)(end + 1 - p)) < 0)
					return -1;
				p = end + 1;
				continue;
			}
		}
		if (c == '\\' && p[1]) {
			char e = p[1];
			const char *cls = rx_class((char)(e | 0x20));
			char ctl = rx_control(e);

			p += 2;
			if (cls && (e == 'd' || e == 's' || e == 'w')) {
				if (rx_puts(o, "[") < 0 ||
				    rx_puts(o, cls) < 0 || rx_puts(o, "]") < 0)
					return -1;
			} else if (cls && (e == 'D' || e == 'S' || e == 'W')) {
				if (rx_puts(o, "[^") < 0 ||
				    rx_puts(o, cls) < 0 || rx_puts(o, "]") < 0)
					return -1;
			} else if (ctl) {
				if (rx_put(o, &ctl, 1) < 0)
					return -1;
			} else if (strchr("AzCpPQEx", e)) {
				*why = "\\A \\z \\C \\p \\P \\Q \\E \\x: "
				       "not POSIX";
				errno = EINVAL;
				return -1;
			} else if (rx_put(o, p - 2, 2) < 0) {
				return -1;
			}
			continue;
		}
		if (rx_put(o, p, 1) < 0)
			return -1;
		p++;
	}
	return 0;
}

int tally_regcomp(regex_t *re, const char *src, int cflags, char *err,
		  size_t errsize)
{
	struct rx_out o = { 0 };
	const char *why = NULL;
	int rc;

	if (err && errsize)
		err[0] = '\0';
	if (rx_translate(&o, src, &why) < 0) {
		int e = errno;

		if (err && errsize && why)
			snprintf(err, errsize, "%s", why);
		free(o.p);
		errno = e;
		return -1;
	}
	rc = regcomp(re, o.p, REG_EXTENDED | cflags);
	free(o.p);
	if (rc) {
		if (err && errsize)
			regerror(rc, re, err, errsize);
		errno = rc == REG_ESPACE ? ENOMEM : EINVAL;
		return -1;
	}
	return 0;
}

static void regexlist_free(struct tally_regexlist *rl)
{
	for (size_t i = 0; i < rl->n; i++) {
		regfree(&rl->re[i]);
		free(rl->src[i]);
	}
	free(rl->re);
	free(rl->src);
	memset(rl, 0, sizeof(*rl));
}

/*
 * Compile every string of @l (consumed: its strings move into the result)
 * into @out. On a bad expression, report it and return -1 with EINVAL.
 */
static int regexlist_compile(struct tally_regexlist *out,
			     struct tally_strlist *l, const char *file,
			     int line, const char *what, const char *key)
{
	struct tally_regexlist tmp = { 0 };

	tmp.re = calloc(l->n ? l->n : 1, sizeof(*tmp.re));
	if (!tmp.re) {
		list_free(l);
		errno = ENOMEM;
		return -1;
	}
	for (size_t i = 0; i < l->n; i++) {
		char msg[256];

		if (tally_regcomp(&tmp.re[i], l->v[i], REG_NOSUB, msg,
				  sizeof(msg)) < 0) {
			int e = errno;

			tally_log_conf(LOG_ERR, file, line,
				       "%s: option '%s': bad regular "
				       "expression \"%s\": %s",
				       what, key, l->v[i],
				       msg[0] ? msg : strerror(e));
			tmp.src = l->v;
			tmp.n = i;
			l->v = NULL;
			for (size_t j = i; j < l->n; j++)
				free(tmp.src[j]);
			l->n = 0;
			regexlist_free(&tmp);
			errno = e;
			return -1;
		}
	}
	tmp.src = l->v;
	tmp.n = l->n;
	l->v = NULL;
	l->n = 0;
	regexlist_free(out);
	*out = tmp;
	return 0;
}

bool tally_regexlist_match(const struct tally_regexlist *list, const char *s)
{
	for (size_t i = 0; list && i < list->n; i++) {
		if (regexec(&list->re[i], s, 0, NULL, 0) == 0)
			return true;
	}
	return false;
}

static int enum_index(const struct tally_option *o, const char *s)
{
	for (int i = 0; o->choices && o->choices[i]; i++) {
		if (!strcmp(o->choices[i], s))
			return i;
	}
	return -1;
}

static bool in_range(const struct tally_option *o, double v)
{
	return o->min > o->max || (v >= o->min && v <= o->max);
}

/* Sizes and durations */

static bool blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

/*
 * A decimal number at *@p: digits, optionally a point and more digits, at
 * least one digit in all; no sign, no exponent. Its integer part goes to
 * @ip (*@over set if it does not fit), its first 18 decimals to
 * @frac / @den. Advances *@p. Returns 0, or -1 when there is no number.
 */
static int parse_decimal(const char **p, uint64_t *ip, uint64_t *frac,
			 uint64_t *den, bool *over)
{
	const char *q = *p;
	bool digits = false;

	*ip = 0;
	*frac = 0;
	*den = 1;
	*over = false;
	for (; *q >= '0' && *q <= '9'; q++, digits = true) {
		uint64_t d = (uint64_t)(*q - '0');

		if (*ip > (UINT64_MAX - d) / 10)
			*over = true;
		else
			*ip = *ip * 10 + d;
	}
	if (*q == '.') {
		for (q++; *q >= '0' && *q <= '9'; q++, digits = true) {
			if (*den < 1000000000000000000ull) {
				*frac = *frac * 10 + (uint64_t)(*q - '0');
				*den *= 10;
			}
		}
	}
	*p = q;
	return digits ? 0 : -1;
}

static const struct {
	const char *name;
	uint64_t mult;
} size_units[] = {
	{ "B", 1 },
	{ "K", 1ull << 10 },
	{ "k", 1ull << 10 },
	{ "KiB", 1ull << 10 },
	{ "M", 1ull << 20 },
	{ "MiB", 1ull << 20 },
	{ "G", 1ull << 30 },
	{ "GiB", 1ull << 30 },
	{ "T", 1ull << 40 },
	{ "TiB", 1ull << 40 },
	{ "P", 1ull << 50 },
	{ "PiB", 1ull << 50 },
	{ "kB", 1000ull },
	{ "KB", 1000ull },
	{ "MB", 1000000ull },
	{ "GB", 1000000000ull },
	{ "TB", 1000000000000ull },
	{ "PB", 1000000000000000ull },
	{ NULL, 0 },
};

int tally_parse_size(const char *s, uint64_t *bytes)
{
	const char *p = s, *end;
	uint64_t ip, frac, den, mult = 0;
	unsigned __int128 v;
	bool over;

	while (blank(*p))
		p++;
	if (parse_decimal(&p, &ip, &frac, &den, &over) < 0)
		goto out_inval;
	while (blank(*p))
		p++;
	end = p + strlen(p);
	while (end > p && blank(end[-1]))
		end--;
	if (end == p)
		mult = 1;
	for (size_t i = 0; !mult && size_units[i].name; i++) {
		if (strlen(size_units[i].name) == (size_t)(end - p) &&
		    !memcmp(size_units[i].name, p, (size_t)(end - p)))
			mult = size_units[i].mult;
	}
	if (!mult)
		goto out_inval;
	/* exact: 1.5K is 1536 bytes; a fraction of a byte is dropped */
	v = (unsigned __int128)ip * mult + (unsigned __int128)frac * mult / den;
	if (over || v > UINT64_MAX) {
		errno = ERANGE;
		return -1;
	}
	*bytes = (uint64_t)v;
	return 0;
out_inval:
	errno = EINVAL;
	return -1;
}

static const struct {
	const char *name;
	double seconds;
} duration_units[] = {
	/* largest first: duration_text() takes the first that fits */
	{ "d", 86400 }, { "h", 3600 }, { "m", 60 },    { "s", 1 },
	{ "ms", 1e-3 }, { "us", 1e-6 }, { "ns", 1e-9 }, { NULL, 0 },
};

int tally_parse_duration(const char *s, double *seconds)
{
	const char *p = s;
	double total = 0;
	int parts = 0;

	while (blank(*p))
		p++;
	do {
		uint64_t ip, frac, den;
		double unit = 0;
		bool over;
		size_t len = 0;

		if (parse_decimal(&p, &ip, &frac, &den, &over) < 0)
			goto out_inval;
		while (blank(*p))
			p++;
		for (size_t i = 0; duration_units[i].name; i++) {
			size_t n = strlen(duration_units[i].name);

			/* "m" is not the start of "ms" */
			if (!strncmp(p, duration_units[i].name, n) &&
			    !((p[n] >= 'a' && p[n] <= 'z') ||
			      (p[n] >= 'A' && p[n] <= 'Z')) &&
			    n > len) {
				len = n;
				unit = duration_units[i].seconds;
			}
		}
		if (!len) {
			/* a number alone is seconds */
			if (parts || *p)
				goto out_inval;
			unit = 1;
		}
		if (over) {
			errno = ERANGE;
			return -1;
		}
		total += ((double)ip + (double)frac / (double)den) * unit;
		parts++;
		p += len;
		while (blank(*p))
			p++;
	} while (*p);
	if (!isfinite(total)) {
		errno = ERANGE;
		return -1;
	}
	*seconds = total;
	return 0;
out_inval:
	errno = EINVAL;
	return -1;
}

/* @v bytes as the largest binary unit that divides it: 65536 -> "64KiB" */
static void size_text(double v, char *buf, size_t size)
{
	static const char *const units[] = { "PiB", "TiB", "GiB", "MiB",
					     "KiB" };
	uint64_t b;

	if (v < 0 || v != floor(v) || v >= 18446744073709551616.0) {
		snprintf(buf, size, "%.15g", v);
		return;
	}
	b = (uint64_t)v;
	for (int i = 0; i < 5 && b; i++) {
		uint64_t m = 1ull << (10 * (5 - i));

		if (b % m == 0) {
			snprintf(buf, size, "%llu%s",
				 (unsigned long long)(b / m), units[i]);
			return;
		}
	}
	snprintf(buf, size, "%llu", (unsigned long long)b);
}

/* @v seconds in the largest unit that makes a whole number: "90s", "1h" */
static void duration_text(double v, char *buf, size_t size)
{
	for (size_t i = 0; v > 0 && duration_units[i].name; i++) {
		double q = v / duration_units[i].seconds;

		if (q >= 1 && fabs(q - round(q)) <= 1e-9 * q) {
			snprintf(buf, size, "%.15g%s", round(q),
				 duration_units[i].name);
			return;
		}
	}
	snprintf(buf, size, "%.15gs", v);
}

/* A bound of @o's values, for messages and --describe. */
static void bound_text(const struct tally_option *o, double v, char *buf,
		       size_t size)
{
	if (o->type == TALLY_OPT_T_SIZE)
		size_text(v, buf, size);
	else if (o->type == TALLY_OPT_T_DURATION)
		duration_text(v, buf, size);
	else
		snprintf(buf, size, "%.15g", v);
}

/* "[lo, hi]": what @o accepts, for an out-of-range message. */
static void range_text(const struct tally_option *o, char *buf, size_t size)
{
	char lo[64], hi[64];

	if (o->min <= o->max) {
		bound_text(o, o->min, lo, sizeof(lo));
		bound_text(o, o->max, hi, sizeof(hi));
	} else if (o->type == TALLY_OPT_T_INT) {
		snprintf(lo, sizeof(lo), "%lld", (long long)INT64_MIN);
		snprintf(hi, sizeof(hi), "%lld", (long long)INT64_MAX);
	} else if (o->type == TALLY_OPT_T_SIZE) {
		snprintf(lo, sizeof(lo), "0");
		snprintf(hi, sizeof(hi), "%llu",
			 (unsigned long long)UINT64_MAX);
	} else {
		/* numbers and durations: any finite one */
		snprintf(lo, sizeof(lo), "%.15g",
			 o->type == TALLY_OPT_T_DURATION ? 0.0 : -DBL_MAX);
		snprintf(hi, sizeof(hi), "%.15g", DBL_MAX);
	}
	snprintf(buf, size, "[%s, %s]", lo, hi);
}

/* Values as written */

/* The text of scalar @s as written, in @buf; NULL when it is not known. */
static const char *literal(const struct tally_opt_src *src,
			   const config_setting_t *s, char *buf, size_t size)
{
	if (!src->text || tally_conf_text_literal(src->text, s, buf, size) < 0)
		return NULL;
	return buf;
}

/*
 * The value of integer setting @s as written, and that text in @lit.
 * libconfig 1.5 keeps the low 32 bits of an integer written without the L
 * suffix (4294967296 reads as 0), so the source text decides where it is
 * known. Hexadecimal is read as unsigned: 0xffffffff is 4294967295.
 * Returns 0, or -1 with ERANGE for a value beyond 64 bits.
 */
static int int_value(const struct tally_opt_src *src,
		     const config_setting_t *s, long long *v, char *lit,
		     size_t size)
{
	const char *l = literal(src, s, lit, size);
	long long x = 0;
	char *end = NULL;

	if (l) {
		errno = 0;
		if (l[0] == '0' && (l[1] == 'x' || l[1] == 'X')) {
			unsigned long long u = strtoull(l + 2, &end, 16);

			if (!errno && u > (unsigned long long)LLONG_MAX)
				errno = ERANGE;
			x = (long long)u;
		} else {
			x = strtoll(l, &end, 10);
		}
		if (end != l && (!*end || !strcmp(end, "L") ||
				 !strcmp(end, "LL"))) {
			if (errno == ERANGE)
				return -1;
			*v = x;
			return 0;
		}
	}
	*v = config_setting_get_int64(s);
	snprintf(lit, size, "%lld", *v);
	return 0;
}

/*
 * The value of number setting @s (integer or float), and its text in
 * @lit. Returns 0, or -1 with EINVAL when @s is not a number.
 */
static int number_value(const struct tally_opt_src *src,
			const config_setting_t *s, double *v, char *lit,
			size_t size)
{
	long long iv;

	switch (config_setting_type(s)) {
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64:
		if (int_value(src, s, &iv, lit, size) == 0)
			*v = (double)iv;
		else
			*v = strtod(lit, NULL);	/* beyond 64 bits */
		return 0;
	case CONFIG_TYPE_FLOAT:
		*v = config_setting_get_float(s);
		if (!literal(src, s, lit, size))
			snprintf(lit, size, "%.15g", *v);
		return 0;
	default:
		errno = EINVAL;
		return -1;
	}
}

/* Log "WHAT: option 'NAME' " and the rest at @src; -1 with EINVAL. */
static int __attribute__((format(printf, 3, 4)))
refuse(const struct tally_option *o, const struct tally_opt_src *src,
       const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	tally_log_conf(LOG_ERR, src->file, src->line, "%s: option '%s' %s",
		       src->what, o->name, msg);
	errno = EINVAL;
	return -1;
}

static int out_of_range(const struct tally_option *o,
			const struct tally_opt_src *src, const char *value)
{
	char range[160];

	range_text(o, range, sizeof(range));
	tally_log_conf(LOG_ERR, src->file, src->line,
		       "%s: option '%s' = %s is out of range %s", src->what,
		       o->name, value, range);
	errno = ERANGE;
	return -1;
}

/* Lists of numbers */

static void numbers_free(struct tally_numbers *l)
{
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* A default like "0.5,0.9,0.99". */
static int numbers_from_csv(struct tally_numbers *l, const char *csv)
{
	struct tally_numbers tmp = { 0 };
	struct tally_strlist words = { 0 };

	if (list_from_csv(&words, csv) < 0)
		return -1;
	tmp.v = calloc(words.n ? words.n : 1, sizeof(*tmp.v));
	if (!tmp.v)
		goto out_fail;
	for (; tmp.n < words.n; tmp.n++) {
		char *end;

		errno = 0;
		tmp.v[tmp.n] = strtod(words.v[tmp.n], &end);
		if (end == words.v[tmp.n] || errno || *end) {
			errno = EINVAL;
			goto out_fail;
		}
	}
	list_free(&words);
	numbers_free(l);
	*l = tmp;
	return 0;
out_fail:
	list_free(&words);
	numbers_free(&tmp);
	return -1;
}

/* A number, or an array or list of numbers. */
static int set_numbers(const struct tally_option *o, struct tally_numbers *dst,
		       const config_setting_t *s,
		       const struct tally_opt_src *src)
{
	struct tally_numbers tmp = { 0 };
	char lit[128], prev[128] = "";
	int type = config_setting_type(s), n;

	if (type == CONFIG_TYPE_ARRAY || type == CONFIG_TYPE_LIST)
		n = config_setting_length(s);
	else if (type == CONFIG_TYPE_INT || type == CONFIG_TYPE_INT64 ||
		 type == CONFIG_TYPE_FLOAT)
		n = 1;
	else
		goto out_type;
	tmp.v = calloc(n ? (size_t)n : 1, sizeof(*tmp.v));
	if (!tmp.v)
		return -1;
	for (int i = 0; i < n; i++) {
		const config_setting_t *e =
			n == 1 && type != CONFIG_TYPE_ARRAY &&
					type != CONFIG_TYPE_LIST
				? s
				: config_setting_get_elem(s, i);
		double v;

		if (number_value(src, e, &v, lit, sizeof(lit)) < 0)
			goto out_type;
		if (!isfinite(v) || !in_range(o, v)) {
			char range[160];

			range_text(o, range, sizeof(range));
			tally_log_conf(LOG_ERR, src->file, src->line,
				       "%s: option '%s' element %d = %s is out "
				       "of range %s",
				       src->what, o->name, i + 1, lit, range);
			errno = ERANGE;
			goto out_fail;
		}
		if ((o->flags & TALLY_OPT_INCREASING) && i &&
		    !(v > tmp.v[i - 1])) {
			tally_log_conf(LOG_ERR, src->file, src->line,
				       "%s: option '%s' element %d = %s is not "
				       "above element %d = %s (the values must "
				       "increase)",
				       src->what, o->name, i + 1, lit, i, prev);
			errno = EINVAL;
			goto out_fail;
		}
		tmp.v[i] = v;
		tmp.n++;
		snprintf(prev, sizeof(prev), "%s", lit);
	}
	numbers_free(dst);
	*dst = tmp;
	return 0;
out_type:
	tally_log_conf(LOG_ERR, src->file, src->line,
		       "%s: option '%s' must be a number or a list of numbers",
		       src->what, o->name);
	errno = EINVAL;
out_fail:
	numbers_free(&tmp);
	return -1;
}

/* A size: a number of bytes, or a string with a unit. */
static int set_size(const struct tally_option *o, uint64_t *dst,
		    const config_setting_t *s, const struct tally_opt_src *src)
{
	char lit[160];
	uint64_t bytes;
	double v;

	if (config_setting_type(s) == CONFIG_TYPE_STRING) {
		const char *str = config_setting_get_string(s);

		snprintf(lit, sizeof(lit), "\"%s\"", str);
		if (tally_parse_size(str, &bytes) == 0)
			goto out_check;
		if (errno == ERANGE)
			return out_of_range(o, src, lit);
		return refuse(o, src,
			      "= %s is not a size: give bytes, or a number "
			      "and a unit: K, M, G, T, P or KiB, MiB, GiB, "
			      "TiB, PiB (powers of 1024); kB, MB, GB, TB, PB "
			      "(powers of 1000)",
			      lit);
	}
	if (number_value(src, s, &v, lit, sizeof(lit)) < 0)
		return refuse(o, src,
			      "must be a size: bytes, or a string such as "
			      "\"64MiB\"");
	if (!(v >= 0 && v < 18446744073709551616.0))
		return out_of_range(o, src, lit);
	bytes = (uint64_t)v;
out_check:
	if (!in_range(o, (double)bytes))
		return out_of_range(o, src, lit);
	*dst = bytes;
	return 0;
}

/* A duration: a number of seconds, or a string with units. */
static int set_duration(const struct tally_option *o, double *dst,
			const config_setting_t *s,
			const struct tally_opt_src *src)
{
	char lit[160];
	double v;

	if (config_setting_type(s) == CONFIG_TYPE_STRING) {
		const char *str = config_setting_get_string(s);

		snprintf(lit, sizeof(lit), "\"%s\"", str);
		if (tally_parse_duration(str, &v) < 0) {
			if (errno == ERANGE)
				return out_of_range(o, src, lit);
			return refuse(o, src,
				      "= %s is not a duration: give seconds, "
				      "or numbers with units d, h, m, s, ms, "
				      "us, ns (\"250ms\", \"1h30m\")",
				      lit);
		}
	} else if (number_value(src, s, &v, lit, sizeof(lit)) < 0) {
		return refuse(o, src,
			      "must be a duration: seconds, or a string such "
			      "as \"30s\"");
	}
	if (!isfinite(v) || v < 0 || !in_range(o, v))
		return out_of_range(o, src, lit);
	*dst = v;
	return 0;
}

/* Store a value given as text (defaults). */
static int option_from_text(const struct tally_option *o, void *state,
			    const char *text)
{
	char *end, *s;
	int idx;

	switch (o->type) {
	case TALLY_OPT_T_STRING:
		s = strdup(text);
		if (!s)
			return -1;
		free(*FIELD(state, o, char *));
		*FIELD(state, o, char *) = s;
		return 0;
	case TALLY_OPT_T_INT:
		errno = 0;
		*FIELD(state, o, int64_t) = strtoll(text, &end, 0);
		break;
	case TALLY_OPT_T_DOUBLE:
		errno = 0;
		*FIELD(state, o, double) = strtod(text, &end);
		break;
	case TALLY_OPT_T_BOOL:
		*FIELD(state, o, bool) = !strcmp(text, "true");
		return 0;
	case TALLY_OPT_T_LIST:
		return list_from_csv(FIELD(state, o, struct tally_strlist),
				     text);
	case TALLY_OPT_T_REGEXLIST: {
		struct tally_strlist l = { 0 };

		if (list_from_csv(&l, text) < 0)
			return -1;
		return regexlist_compile(FIELD(state, o,
					       struct tally_regexlist),
					 &l, NULL, 0, "default", o->name);
	}
	case TALLY_OPT_T_ENUM:
		idx = enum_index(o, text);
		if (idx < 0)
			goto out_inval;
		*FIELD(state, o, int) = idx;
		return 0;
	case TALLY_OPT_T_NUMBERS:
		return numbers_from_csv(FIELD(state, o, struct tally_numbers),
					text);
	case TALLY_OPT_T_SIZE:
		return tally_parse_size(text, FIELD(state, o, uint64_t));
	case TALLY_OPT_T_DURATION:
		return tally_parse_duration(text, FIELD(state, o, double));
	default:
		goto out_inval;
	}
	if (errno || *end)
		goto out_inval;
	return 0;
out_inval:
	errno = EINVAL;
	return -1;
}

int tally_options_defaults(const struct tally_option *opts, void *state,
			   const char *what)
{
	for (const struct tally_option *o = opts; o && o->name; o++) {
		if (!o->def)
			continue;
		if (option_from_text(o, state, o->def) < 0) {
			/* a plugin bug, caught the first time it is used */
			tally_log_conf(LOG_ERR, NULL, 0,
				       "%s: bad default '%s' for option '%s'",
				       what, o->def, o->name);
			return -1;
		}
	}
	return 0;
}

static int set_list(const struct tally_option *o, struct tally_strlist *dst,
		    const config_setting_t *s, const struct tally_opt_src *src)
{
	struct tally_strlist tmp = { 0 };
	int n;

	if (config_setting_type(s) == CONFIG_TYPE_STRING) {
		tmp.v = calloc(1, sizeof(char *));
		if (!tmp.v ||
		    !(tmp.v[0] = strdup(config_setting_get_string(s))))
			goto out_nomem;
		tmp.n = 1;
		goto out_store;
	}
	if (!config_setting_is_aggregate(s) ||
	    config_setting_type(s) == CONFIG_TYPE_GROUP)
		goto out_type;
	n = config_setting_length(s);
	tmp.v = calloc(n ? (size_t)n : 1, sizeof(char *));
	if (!tmp.v)
		goto out_nomem;
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, i);

		if (config_setting_type(e) != CONFIG_TYPE_STRING) {
			list_free(&tmp);
			goto out_type;
		}
		tmp.v[i] = strdup(config_setting_get_string(e));
		if (!tmp.v[i])
			goto out_nomem;
		tmp.n++;
	}
out_store:
	list_free(dst);
	*dst = tmp;
	return 0;
out_type:
	tally_log_conf(LOG_ERR, src->file, src->line,
		       "%s: option '%s' must be a string or a list of strings",
		       src->what, o->name);
	errno = EINVAL;
	return -1;
out_nomem:
	list_free(&tmp);
	errno = ENOMEM;
	return -1;
}

/*
 * labels = { key = "value"; ... }: every key a label name Prometheus
 * accepts as it is (outputs would otherwise sanitize two keys into one),
 * every value a string of valid UTF-8. Interned into *@dst.
 */
static int set_labels(const struct tally_option *o, struct tally_labels **dst,
		      const config_setting_t *s,
		      const struct tally_opt_src *src)
{
	const char *what = src->what;
	struct tally_label *pairs;
	struct tally_labels *ls;
	int n = config_setting_length(s);

	pairs = calloc(n ? (size_t)n : 1, sizeof(*pairs));
	if (!pairs) {
		errno = ENOMEM;
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, i);
		const char *file = src->file;
		int eline = (int)config_setting_source_line(e);
		const char *v;

		/* the pair's own line, in the file it comes from */
		if (src->text)
			tally_conf_text_where(src->text, eline, &file, &eline);

		pairs[i].key = config_setting_name(e);
		if (!tally_expo_valid_label_name(pairs[i].key)) {
			tally_log_conf(LOG_ERR, file, eline,
				       "%s: %s: '%s' is not a label name "
				       "([a-zA-Z_][a-zA-Z0-9_]*, no leading "
				       "__)",
				       what, o->name, pairs[i].key);
			goto out_inval;
		}
		if (config_setting_type(e) != CONFIG_TYPE_STRING) {
			tally_log_conf(LOG_ERR, file, eline,
				       "%s: %s: the value of '%s' must be a "
				       "string",
				       what, o->name, pairs[i].key);
			goto out_inval;
		}
		v = config_setting_get_string(e);
		if (!tally_utf8_valid(v, strlen(v))) {
			tally_log_conf(LOG_ERR, file, eline,
				       "%s: %s: the value of '%s' is not valid "
				       "UTF-8",
				       what, o->name, pairs[i].key);
			goto out_inval;
		}
		pairs[i].value = v;
	}
	ls = tally_labels_new(pairs, (size_t)n);
	free(pairs);
	if (!ls)
		return -1;
	tally_labels_unref(*dst);
	*dst = ls;
	return 0;
out_inval:
	free(pairs);
	errno = EINVAL;
	return -1;
}

int tally_options_apply(const struct tally_option *o, void *state,
			const config_setting_t *s,
			const struct tally_opt_src *src)
{
	int type = config_setting_type(s);
	char lit[160];
	long long iv;
	double dv;
	int idx;

	switch (o->type) {
	case TALLY_OPT_T_STRING:
		if (type != CONFIG_TYPE_STRING)
			break;
		return option_from_text(o, state, config_setting_get_string(s));
	case TALLY_OPT_T_INT:
		if (type != CONFIG_TYPE_INT && type != CONFIG_TYPE_INT64)
			break;
		if (int_value(src, s, &iv, lit, sizeof(lit)) < 0 ||
		    !in_range(o, (double)iv))
			return out_of_range(o, src, lit);
		*FIELD(state, o, int64_t) = iv;
		return 0;
	case TALLY_OPT_T_DOUBLE:
		if (number_value(src, s, &dv, lit, sizeof(lit)) < 0)
			break;
		if (!isfinite(dv) || !in_range(o, dv))
			return out_of_range(o, src, lit);
		*FIELD(state, o, double) = dv;
		return 0;
	case TALLY_OPT_T_BOOL:
		if (type != CONFIG_TYPE_BOOL)
			break;
		*FIELD(state, o, bool) = config_setting_get_bool(s);
		return 0;
	case TALLY_OPT_T_LIST:
		return set_list(o, FIELD(state, o, struct tally_strlist), s,
				src);
	case TALLY_OPT_T_REGEXLIST: {
		struct tally_strlist l = { 0 };

		if (set_list(o, &l, s, src) < 0)
			return -1;
		return regexlist_compile(FIELD(state, o,
					       struct tally_regexlist),
					 &l, src->file, src->line, src->what,
					 o->name);
	}
	case TALLY_OPT_T_ENUM:
		if (type != CONFIG_TYPE_STRING)
			break;
		idx = enum_index(o, config_setting_get_string(s));
		if (idx < 0) {
			char choices[256] = "";

			for (int i = 0; o->choices && o->choices[i]; i++) {
				if (i)
					strncat(choices, ", ",
						sizeof(choices) -
							strlen(choices) - 1);
				strncat(choices, o->choices[i],
					sizeof(choices) - strlen(choices) - 1);
			}
			tally_log_conf(
				LOG_ERR, src->file, src->line,
				"%s: option '%s' = \"%s\" is not one of: "
				"%s",
				src->what, o->name,
				config_setting_get_string(s), choices);
			errno = EINVAL;
			return -1;
		}
		*FIELD(state, o, int) = idx;
		return 0;
	case TALLY_OPT_T_LABELS:
		if (type != CONFIG_TYPE_GROUP)
			break;
		return set_labels(o, FIELD(state, o, struct tally_labels *), s,
				  src);
	case TALLY_OPT_T_NUMBERS:
		return set_numbers(o, FIELD(state, o, struct tally_numbers), s,
				   src);
	case TALLY_OPT_T_SIZE:
		return set_size(o, FIELD(state, o, uint64_t), s, src);
	case TALLY_OPT_T_DURATION:
		return set_duration(o, FIELD(state, o, double), s, src);
	default:
		break;
	}
	tally_log_conf(LOG_ERR, src->file, src->line,
		       "%s: option '%s' must be of type %s", src->what, o->name,
		       tally_options_type_name(o->type));
	errno = EINVAL;
	return -1;
}

int tally_options_set(const struct tally_option *o, void *state,
		      const config_setting_t *s, const char *file, int line,
		      const char *what)
{
	struct tally_opt_src src = { .file = file, .line = line,
				     .what = what };

	return tally_options_apply(o, state, s, &src);
}

void tally_options_free(const struct tally_option *opts, void *state)
{
	if (!state)
		return;
	for (const struct tally_option *o = opts; o && o->name; o++) {
		if (o->type == TALLY_OPT_T_STRING) {
			free(*FIELD(state, o, char *));
			*FIELD(state, o, char *) = NULL;
		} else if (o->type == TALLY_OPT_T_LIST) {
			list_free(FIELD(state, o, struct tally_strlist));
		} else if (o->type == TALLY_OPT_T_REGEXLIST) {
			regexlist_free(FIELD(state, o, struct tally_regexlist));
		} else if (o->type == TALLY_OPT_T_LABELS) {
			tally_labels_unref(
				*FIELD(state, o, struct tally_labels *));
			*FIELD(state, o, struct tally_labels *) = NULL;
		} else if (o->type == TALLY_OPT_T_NUMBERS) {
			numbers_free(FIELD(state, o, struct tally_numbers));
		}
	}
}

bool tally_strlist_contains(const struct tally_strlist *list, const char *s)
{
	for (size_t i = 0; list && i < list->n; i++) {
		if (!strcmp(list->v[i], s))
			return true;
	}
	return false;
}

/* Unknown keys */

const char *tally_options_nearest(const char *word, const char *const *names,
				  const struct tally_option *a,
				  const struct tally_option *b)
{
	const struct tally_option *tables[] = { a, b };
	const char *best = NULL;
	unsigned bestd = 3;	/* at most two edits away */

	for (size_t i = 0; names && names[i]; i++) {
		unsigned d = tally_edit_distance(word, names[i]);

		if (d < bestd) {
			bestd = d;
			best = names[i];
		}
	}
	for (size_t t = 0; t < 2; t++) {
		for (const struct tally_option *o = tables[t]; o && o->name;
		     o++) {
			unsigned d = tally_edit_distance(word, o->name);

			if (d < bestd) {
				bestd = d;
				best = o->name;
			}
		}
	}
	return best;
}

void tally_options_unknown(const char *file, int line, const char *what,
			   const char *key, const char *const *names,
			   const struct tally_option *a,
			   const struct tally_option *b)
{
	const char *near = tally_options_nearest(key, names, a, b);

	if (near)
		tally_log_conf(LOG_ERR, file, line,
			       "%s: unknown option '%s' (did you mean '%s'?)",
			       what, key, near);
	else
		tally_log_conf(LOG_ERR, file, line, "%s: unknown option '%s'",
			       what, key);
}

/* The options every instance has: the core's, in struct tally_conf_decl */

#define OPT_PLUGIN                                                            \
	TALLY_OPT_STRING_REQ("plugin", struct tally_conf_decl, plugin_name,  \
			     "which plugin the instance runs")
#define OPT_INTERVAL                                                          \
	TALLY_OPT_DURATION("interval", struct tally_conf_decl, interval, NULL, \
			 0.001, 86400,                                        \
			 "seconds between reads or ticks (default: "          \
			 "global.interval)")
#define OPT_QUEUE_SIZE                                                        \
	TALLY_OPT_INT("queue_size", struct tally_conf_decl, queue_size,      \
		      "1024", 1, 1 << 20,                                     \
		      "batches queued while the output is busy; the oldest "  \
		      "is dropped beyond")
#define OPT_STR_(x) #x
#define OPT_STR(x) OPT_STR_(x)
#define OPT_QUEUE_RECORDS                                                     \
	TALLY_OPT_INT("queue_records", struct tally_conf_decl, queue_records,\
		      OPT_STR(TALLY_QUEUE_RECORDS), 1, 1 << 30,               \
		      "records queued while the output is busy; the oldest "  \
		      "batches are dropped beyond")
#define OPT_LABELS                                                            \
	TALLY_OPT_LABELS("labels", struct tally_conf_decl, labels,           \
			 "static labels added to what the output writes, "    \
			 "over global.labels")

static const struct tally_option input_options[] = {
	OPT_PLUGIN,
	OPT_INTERVAL,
	TALLY_OPT_END,
};

static const struct tally_option filter_options[] = {
	OPT_PLUGIN,
	OPT_INTERVAL,
	TALLY_OPT_END,
};

static const struct tally_option output_options[] = {
	OPT_PLUGIN,
	OPT_QUEUE_SIZE,
	OPT_QUEUE_RECORDS,
	OPT_LABELS,
	TALLY_OPT_END,
};

const struct tally_option *tally_instance_options(enum tally_plugin_kind kind)
{
	return kind == TALLY_KIND_INPUT	   ? input_options
	       : kind == TALLY_KIND_FILTER ? filter_options
					   : output_options;
}

const char *tally_kind_section(enum tally_plugin_kind kind)
{
	return kind == TALLY_KIND_INPUT	   ? "inputs"
	       : kind == TALLY_KIND_FILTER ? "filters"
					   : "outputs";
}

unsigned tally_options_required(const struct tally_option *opts,
				const config_setting_t *g, const char *file,
				int line, const char *what)
{
	unsigned missing = 0;

	for (const struct tally_option *o = opts; o && o->name; o++) {
		if ((o->flags & TALLY_OPT_REQUIRED) &&
		    !config_setting_get_member(g, o->name)) {
			tally_log_conf(LOG_ERR, file, line,
				       "%s: missing required option '%s' (%s)",
				       what, o->name, o->doc ? o->doc : "");
			missing++;
		}
	}
	return missing;
}

/* Where setting @s of @d is, for messages. */
static void decl_src(const struct tally_conf_decl *d,
		     const config_setting_t *s, const char *what,
		     struct tally_opt_src *src)
{
	src->what = what;
	src->text = d->text;
	src->file = d->file;
	src->line = (int)config_setting_source_line(s);
	if (d->text)
		tally_conf_text_where(d->text, src->line, &src->file,
				      &src->line);
}

unsigned tally_options_fill(const struct tally_conf_decl *d, void *state)
{
	const struct tally_option *opts = d->plugin->options;
	const struct tally_option *common = tally_instance_options(d->kind);
	const config_setting_t *g = d->setting;
	int n = config_setting_length(g);
	unsigned errors = 0;
	char what[256];

	snprintf(what, sizeof(what), "%s.%s", tally_kind_section(d->kind),
		 d->name);
	if (tally_options_defaults(opts, state, what) < 0)
		errors++;
	for (int i = 0; i < n; i++) {
		const config_setting_t *s = config_setting_get_elem(g, i);
		const char *key = config_setting_name(s);
		const struct tally_option *o;
		struct tally_opt_src src;

		if (tally_options_find(common, key))
			continue; /* the core's: in the declaration */
		decl_src(d, s, what, &src);
		o = tally_options_find(opts, key);
		if (!o) {
			tally_options_unknown(src.file, src.line, what, key,
					      NULL, common, opts);
			errors++;
		} else if (tally_options_apply(o, state, s, &src) < 0) {
			errors++;
		}
	}
	return errors + tally_options_required(opts, g, d->file, d->line, what);
}

void tally_options_describe(const struct tally_option *opts, FILE *out)
{
	for (const struct tally_option *o = opts; o && o->name; o++) {
		char type[64], extra[512] = "", lo[64], hi[64];
		size_t len;

		snprintf(type, sizeof(type), "%s%s",
			 tally_options_type_name(o->type),
			 o->flags & TALLY_OPT_REQUIRED ? " (required)" : "");
		if (o->def)
			snprintf(extra, sizeof(extra), " (default: %s)",
				 o->def);
		len = strlen(extra);
		if ((o->type == TALLY_OPT_T_INT ||
		     o->type == TALLY_OPT_T_DOUBLE ||
		     o->type == TALLY_OPT_T_NUMBERS ||
		     o->type == TALLY_OPT_T_SIZE ||
		     o->type == TALLY_OPT_T_DURATION) &&
		    o->min <= o->max) {
			bound_text(o, o->min, lo, sizeof(lo));
			bound_text(o, o->max, hi, sizeof(hi));
			snprintf(extra + len, sizeof(extra) - len,
				 " (range %s..%s)", lo, hi);
		}
		if (o->flags & TALLY_OPT_INCREASING)
			strncat(extra, " (increasing)",
				sizeof(extra) - strlen(extra) - 1);
		if (o->type == TALLY_OPT_T_ENUM && o->choices) {
			strncat(extra, " (one of:",
				sizeof(extra) - strlen(extra) - 1);
			for (int i = 0; o->choices[i]; i++) {
				strncat(extra, " ",
					sizeof(extra) - strlen(extra) - 1);
				strncat(extra, o->choices[i],
					sizeof(extra) - strlen(extra) - 1);
			}
			strncat(extra, ")", sizeof(extra) - strlen(extra) - 1);
		}
		fprintf(out, "  %-24s %-28s %s%s\n", o->name, type,
			o->doc ? o->doc : "", extra);
	}
}
