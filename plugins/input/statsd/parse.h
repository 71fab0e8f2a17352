/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/statsd/parse.h - the statsd line format, one line at a time
 *
 *	<name>:<value>|<type>[|@<rate>][|#<tag>[:<value>][,<tag>...]]
 *
 * The etsy statsd line protocol with DogStatsD's tags (REFERENCE.md,
 * "statsd line protocol"): several lines per datagram, separated by "\n"
 * or "\r\n"; types c (counter), g (gauge; a leading + or - makes it a
 * delta), ms (timer), h and d (histogram, d being DogStatsD's
 * distribution) and s (set). The sample rate applies to counters, timers
 * and histograms and is ignored on gauges and sets, as etsy statsd does.
 *
 * Rules this parser enforces (each failure is one drop reason):
 *   - name: 1 to STATSD_MAX_NAME bytes of UTF-8 before the first ':',
 *     no control character (below 0x20, 0x7f), no '|', no '#';
 *     kept as received (dots stay dots: outputs make it valid for their
 *     format);
 *   - value: a finite decimal number, [+-]digits[.digits][(e|E)[+-]digits]
 *     (no hex, no inf/nan, no spaces), at most STATSD_MAX_NUMBER bytes;
 *     for sets any 1 to STATSD_MAX_NAME bytes of UTF-8 without control
 *     characters (the member);
 *   - rate: "@" and a number in (0, 1];
 *   - tags: "#" and comma-separated tags, each a key of 1 to
 *     STATSD_MAX_NAME bytes (UTF-8, no control character, no ':', ',' or
 *     '|') with an optional ":value" (UTF-8, no control, ',' or '|');
 *     at most STATSD_MAX_TAGS; one tag section;
 *   - nothing else: another section, a second rate, an empty line part.
 *
 * Pure functions of their input: no allocation, no global state, any
 * thread. The fuzzed attack surface (contrib/fuzz/statsd_parse_fuzz.c).
 */
#ifndef STATSD_PARSE_H
#define STATSD_PARSE_H

#include <stdbool.h>
#include <stddef.h>

#define STATSD_MAX_NAME	  255 /* bytes, of a name, set member, tag */
#define STATSD_MAX_NUMBER 63  /* bytes of a value or rate */
#define STATSD_MAX_TAGS	  16

/** enum statsd_type - the metric type letter(s) after the value */
enum statsd_type {
	STATSD_COUNTER = 1, /* c */
	STATSD_GAUGE,	    /* g */
	STATSD_TIMER,	    /* ms */
	STATSD_HISTOGRAM,   /* h, d */
	STATSD_SET,	    /* s */
};

/**
 * enum statsd_err - why a line was refused; each maps to a drop reason
 * (statsd_err_reason()) counted by the input
 */
enum statsd_err {
	STATSD_OK = 0,
	STATSD_ERR_NO_COLON,  /* no ':' between name and value */
	STATSD_ERR_BAD_NAME,  /* empty, too long, not UTF-8, control char */
	STATSD_ERR_BAD_VALUE, /* not a finite decimal number / bad member */
	STATSD_ERR_BAD_TYPE,  /* missing or unknown type */
	STATSD_ERR_BAD_RATE,  /* not a number in (0, 1], or twice */
	STATSD_ERR_BAD_TAG,   /* empty or invalid tag, too many, twice */
	STATSD_ERR_BAD_FIELD, /* a section other than @rate and #tags */
	STATSD_ERR_COUNT
};

/**
 * struct statsd_tag - one DogStatsD tag, pointing into the line
 * @key, @key_len:     tag name, never empty
 * @value, @value_len: its value; @value_len 0 for a tag without ":value"
 */
struct statsd_tag {
	const char *key;
	size_t key_len;
	const char *value;
	size_t value_len;
};

/**
 * struct statsd_line - one parsed line; every string points into the line
 * @name, @name_len:     metric name as received
 * @type:                metric type
 * @value:               the number (counters, gauges, timers, histograms)
 * @member, @member_len: the set member (sets only; @value is 0)
 * @delta:               gauge only: the value had a sign, add it
 * @rate:                sample rate, 1.0 when not given; always 1.0 for
 *                       gauges and sets
 * @ntags, @tags:        DogStatsD tags in the order received
 */
struct statsd_line {
	const char *name;
	size_t name_len;
	enum statsd_type type;
	double value;
	const char *member;
	size_t member_len;
	bool delta;
	double rate;
	size_t ntags;
	struct statsd_tag tags[STATSD_MAX_TAGS];
};

/**
 * statsd_parse_line() - parse one line (without its line end)
 * @line: the bytes, not NUL-terminated; may hold anything
 * @len:  their number (0 is a bad line: STATSD_ERR_NO_COLON)
 * @out:  filled on STATSD_OK; unspecified otherwise
 *
 * Return: STATSD_OK or the reason the line is refused.
 */
enum statsd_err statsd_parse_line(const char *line, size_t len,
				  struct statsd_line *out);

/**
 * statsd_next_line() - the next non-empty line of a datagram
 * @buf:  the datagram, @len bytes
 * @pos:  in: where to start (0 first); out: where the next call starts
 * @line: out: the line's first byte
 *
 * Lines end at "\n" (a "\r" before it is not part of the line) or at the
 * end of the datagram; empty lines are skipped.
 * Return: the line's length, or 0 when the datagram has no more lines.
 */
size_t statsd_next_line(const char *buf, size_t len, size_t *pos,
			const char **line);

/**
 * statsd_err_reason() - the drop reason of an error
 * Return: a static snake_case string ("no_colon", "bad_value", ...);
 * "other" for an out-of-range value.
 */
const char *statsd_err_reason(enum statsd_err err);

#endif /* STATSD_PARSE_H */
