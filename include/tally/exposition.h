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
 * thread.
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

#ifdef __cplusplus
}
#endif
#endif /* TALLY_EXPOSITION_H */
