/* SPDX-License-Identifier: MIT */
/*
 * tally/json.h - writing JSON strings
 *
 * One JSON string escaper for every output that writes JSON (the file
 * output's JSON lines and Chrome trace files, and any later one), so that
 * they all escape the same way (RFC 8259 section 7):
 *   - double quote and backslash become \" and \\;
 *   - the control characters U+0000..U+001F become \b, \f, \n, \r, \t, or
 *     \u00XX for the others; DEL (0x7f) and everything above stay as they
 *     are (JSON text is UTF-8, RFC 8259 section 8.1);
 *   - invalid UTF-8 (stray, overlong, surrogate or out-of-range sequences)
 *     becomes U+FFFD, one per maximal subpart (tally/utf8.h), so that one
 *     bad region name cannot make a whole file unreadable to a strict
 *     parser such as Python's json module or Perfetto's.
 *
 * Thread-safety: the functions here are pure; any thread.
 */
#ifndef TALLY_JSON_H
#define TALLY_JSON_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Bytes that always hold the escaped form of @len input bytes and its NUL:
 * a control character takes 6 bytes (\u001f), which is the most any input
 * byte becomes (a stray byte becomes the 3 bytes of U+FFFD).
 */
#define TALLY_JSON_ESCAPED_MAX(len) ((len) * 6 + 1)

/**
 * tally_json_escape() - escape @src for the inside of a JSON string
 * @dst:  output buffer; written as snprintf() does: at most @size bytes
 *        including the terminating NUL (nothing when @size is 0: @dst may
 *        then be NULL)
 * @size: size of @dst in bytes
 * @src:  NUL-terminated string, UTF-8 expected, not required
 *
 * The quotes around the string are not written. A buffer of
 * TALLY_JSON_ESCAPED_MAX(strlen(@src)) bytes is always large enough.
 *
 * Return: the length of the complete escaped string, without the NUL; a
 * value >= @size means the output was cut short (call again with return
 * value + 1 bytes).
 */
size_t tally_json_escape(char *dst, size_t size, const char *src);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_JSON_H */
