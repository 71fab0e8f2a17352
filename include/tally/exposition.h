/* SPDX-License-Identifier: MIT */
/*
 * tally/exposition.h - Prometheus text exposition helpers
 *
 * The pieces of the Prometheus text format (version 0.0.4, and the same
 * rules in OpenMetrics 1.0) that several outputs need: metric and label name
 * validation and sanitizing, label value and HELP escaping, canonical number
 * formatting. Used by the prometheus output, and by the graphite, influxdb
 * and file outputs and the capture test plugin wherever they print a name,
 * a label or a value the way Prometheus would.
 *
 * Sources for the rules:
 *   - metric names match [a-zA-Z_:][a-zA-Z0-9_:]*, label names
 *     [a-zA-Z_][a-zA-Z0-9_]*, and label names starting with "__" are
 *     reserved for Prometheus' internal use (Prometheus data model docs);
 *   - in label values, backslash, double quote and line feed are written
 *     \\, \" and \n; in HELP text backslash and line feed are written \\ and
 *     \n (text exposition format docs); label values must be valid UTF-8
 *     (Prometheus' text parser rejects the whole scrape otherwise);
 *   - floats are written as Go's strconv.ParseFloat reads them, with NaN,
 *     +Inf and -Inf spelled exactly so.
 *
 * Every writing function follows snprintf(): it writes at most @size bytes
 * including the terminating NUL (nothing when @size is 0, @dst may then be
 * NULL), and returns the length the complete result needs, without the NUL.
 * A return value >= @size means the output was truncated; call again with a
 * buffer of return value + 1 bytes.
 *
 * Thread-safety: every function here is pure and may be called from any
 * thread. The parser, tally_expo_parse(), is at the end.
 */
#ifndef TALLY_EXPOSITION_H
#define TALLY_EXPOSITION_H

#include <stdbool.h>
#include <stddef.h>

#include <tally/labels.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Buffer size that always holds tally_expo_format_double()'s output and its
 * NUL: "-1.2345678901234567e-308" is 24 bytes.
 */
#define TALLY_EXPO_DOUBLE_MAX 32

/**
 * tally_expo_valid_metric_name() - whether @s is a valid metric name
 * @s: NUL-terminated name, or NULL
 *
 * Return: true when @s is non-empty and matches [a-zA-Z_:][a-zA-Z0-9_:]*.
 */
bool tally_expo_valid_metric_name(const char *s);

/**
 * tally_expo_valid_label_name() - whether @s is a valid label name
 * @s: NUL-terminated name, or NULL
 *
 * Return: true when @s is non-empty, matches [a-zA-Z_][a-zA-Z0-9_]* and
 * does not start with "__" (reserved for Prometheus).
 */
bool tally_expo_valid_label_name(const char *s);

/**
 * tally_expo_sanitize_metric_name() - make @src a valid metric name
 * @dst:  output buffer (snprintf semantics, see above)
 * @size: size of @dst in bytes
 * @src:  any NUL-terminated string (UTF-8 expected, not required)
 *
 * Each character outside [a-zA-Z0-9_:] becomes one '_' (a multi-byte UTF-8
 * character counts as one character, a stray byte of invalid UTF-8 as one
 * too); a leading digit gets a '_' prepended; an empty name becomes "_".
 * Valid names are copied unchanged. Different inputs can give the same
 * output ("a.b" and "a-b"): callers that key anything by the result must
 * handle such collisions.
 *
 * Return: length of the sanitized name, without the NUL.
 */
size_t tally_expo_sanitize_metric_name(char *dst, size_t size, const char *src);

/**
 * tally_expo_sanitize_label_name() - make @src a valid label name
 * @dst, @size, @src: as tally_expo_sanitize_metric_name()
 *
 * As tally_expo_sanitize_metric_name() with ':' also replaced, and a
 * leading "__" (reserved) shortened to a single '_': "__meta" gives
 * "_meta", "a:b" gives "a_b", "0x" gives "_0x".
 *
 * Return: length of the sanitized name, without the NUL.
 */
size_t tally_expo_sanitize_label_name(char *dst, size_t size, const char *src);

/**
 * tally_expo_escape_label_value() - escape a label value for "k=\"...\""
 * @dst, @size: output buffer (snprintf semantics)
 * @src:  label value, NUL-terminated
 *
 * Backslash, double quote and line feed become \\, \" and \n. Invalid UTF-8
 * (stray, overlong, surrogate or out-of-range sequences) is replaced by
 * U+FFFD, so one bad value cannot make Prometheus reject a whole scrape.
 * The quotes themselves are not written.
 *
 * Return: length of the escaped value, without the NUL.
 */
size_t tally_expo_escape_label_value(char *dst, size_t size, const char *src);

/**
 * tally_expo_escape_help() - escape HELP text for "# HELP name text"
 * @dst, @size: output buffer (snprintf semantics)
 * @src:  help text, NUL-terminated
 * @openmetrics: also escape double quotes, as OpenMetrics 1.0 requires
 *
 * Backslash and line feed become \\ and \n; invalid UTF-8 becomes U+FFFD.
 *
 * Return: length of the escaped text, without the NUL.
 */
size_t tally_expo_escape_help(char *dst, size_t size, const char *src,
			      bool openmetrics);

/**
 * tally_expo_format_double() - format a sample value or a le/quantile bound
 * @buf: at least TALLY_EXPO_DOUBLE_MAX bytes
 * @v:   any double
 *
 * Writes the shortest decimal form that reads back (strtod) as exactly @v:
 * integers up to 2^53 in plain digits ("42", "-0"), others as printf's %g
 * with 15 to 17 significant digits ("0.1", "1e+100",
 * "1.7976931348623157e+308"). NaN (any payload, any sign) is "NaN", infinities
 * are "+Inf" and "-Inf".
 *
 * Return: length of the text in @buf, without the NUL (at most 24).
 */
size_t tally_expo_format_double(char *buf, double v);

/**
 * tally_expo_format_labels() - render a label set as {k="v",...}
 * @dst, @size: output buffer (snprintf semantics)
 * @ls:  label set (NULL or empty gives "")
 * @dup: if non-NULL, set to true when two keys of @ls sanitize to the same
 *       label name (the rendering then repeats that name, which Prometheus
 *       rejects), else false
 *
 * Keys are sanitized with tally_expo_sanitize_label_name() and written in
 * the set's order (sorted by raw key); values are escaped with
 * tally_expo_escape_label_value(). An empty set renders as "" (no braces),
 * as exposition lines omit "{}".
 *
 * Return: length of the rendering, without the NUL.
 */
size_t tally_expo_format_labels(char *dst, size_t size,
				const struct tally_labels *ls, bool *dup);

/*
 * Reading the text format: one parser for every part of tally that takes
 * pages written by others (the textfile input's *.prom files).
 *
 * The grammar is the text exposition format 0.0.4 as Prometheus' own parser
 * (expfmt) reads it: lines end at '\n' (the last one may lack it, unless
 * TALLY_EXPO_PARSE_FINAL_NEWLINE); blanks
 * are spaces and tabs, allowed before a line, between tokens, inside the
 * braces and at the end; "# HELP name text" (text escapes \\ and \n),
 * "# TYPE name counter|gauge|histogram|summary|untyped" (any case), other
 * '#' lines are comments; a sample is
 *	name[{label="value",...[,]}] value [timestamp_ms]
 * with label value escapes \\, \" and \n, values as Go's ParseFloat reads
 * them (NaN, +Inf, -Inf, Inf, exponents; no hexadecimal) and an optional
 * integer timestamp in milliseconds. A histogram family "x" takes samples
 * x_bucket{le=...}, x_sum and x_count; a summary x{quantile=...}, x_sum
 * and x_count; samples whose family has no TYPE are untyped.
 *
 * Errors, each naming its line: a bad token, escape or number (on a line
 * ending in "\r\n" the message says Windows line ends instead), invalid
 * UTF-8 in a label value or HELP text, a NUL byte, a second HELP or TYPE
 * line for one family, a TYPE after the family's samples, a duplicate
 * label name, the same series twice (or a bucket or quantile twice), a
 * histogram without a +Inf bucket or _count, a +Inf bucket other than its
 * _count, bucket counts going down, a negative, NaN or infinite count, a
 * quantile outside [0, 1].
 */

/** Parse flag: a sample with a timestamp is an error (node_exporter's
 * textfile collector refuses client-side timestamps). */
#define TALLY_EXPO_PARSE_NO_TIMESTAMPS 0x1u
/** Parse flag: a page whose last line lacks its '\n' is an error
 * (node_exporter's textfile collector refuses such a file, "unexpected end
 * of input stream": it is being written in place, or was cut short). */
#define TALLY_EXPO_PARSE_FINAL_NEWLINE 0x2u

/**
 * struct tally_expo_error - why tally_expo_parse() refused a page
 * @line: 1-based line number of the problem
 * @msg:  what is wrong there, NUL-terminated, no trailing period
 */
struct tally_expo_error {
	unsigned line;
	char msg[160];
};

struct tally_batch;

/**
 * tally_expo_parse() - read a text exposition page into metric records
 * @b:     batch being built (not emitted); the records are appended
 * @text:  the page, @len bytes, not necessarily NUL-terminated
 * @len:   its length in bytes
 * @flags: TALLY_EXPO_PARSE_* bits
 * @err:   filled when the page is refused (EINVAL); may be NULL
 *
 * The whole page is read and checked before anything is appended: a
 * malformed page appends nothing (never a half-read page). One record per
 * series: counters, gauges and untyped samples as tally_batch_add_metric()
 * (TALLY_UNTYPED for untyped ones), histograms and summaries as
 * tally_batch_add_histogram() and _summary() with their buckets or
 * quantiles sorted; the family's HELP text (unescaped) as help, NULL when
 * it has none; the sample's timestamp, else 0 ("now"). Label sets are
 * interned (tally/labels.h); families and series come in the order of
 * their first line.
 *
 * Memory: proportional to the page; nothing is kept after the call.
 * Thread-safety: any thread (label interning takes its own lock).
 * Return: the number of records appended, or -1 with errno = EINVAL
 * (malformed: @err says where and why; nothing appended) or ENOMEM (some
 * records may have been appended: drop the batch).
 */
int tally_expo_parse(struct tally_batch *b, const char *text, size_t len,
		     unsigned flags, struct tally_expo_error *err);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_EXPOSITION_H */
