/* SPDX-License-Identifier: MIT */
/*
 * tally/utf8.h - one UTF-8 validator for the core, the plugins and the
 * trace client
 *
 * Well-formed means RFC 3629 §4: no overlong forms, no surrogates
 * (U+D800..U+DFFF), nothing above U+10FFFF. Where bytes are repaired,
 * each maximal subpart of an ill-formed sequence becomes one U+FFFD
 * (Unicode 15, §3.9, "U+FFFD Substitution of Maximal Subparts"), which is
 * also what Python's bytes.decode("utf-8", "replace") does.
 *
 * core/utf8.c is built into libtally and, hidden, into libtally-trace
 * (which must not link libtally): one source, no copy.
 *
 * All functions are pure and may be called from any thread.
 */
#ifndef TALLY_UTF8_H
#define TALLY_UTF8_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * tally_utf8_seq() - the UTF-8 sequence at the start of @s
 * @s:   bytes, @len > 0 of them readable
 * @len: bytes left from @s
 *
 * Return: the sequence's length (1 to 4) when it is well-formed and
 * complete within @len; else minus the length of its maximal subpart
 * (-1 to -3): the bytes that begin a well-formed sequence but do not
 * complete it, or -1 for a byte that cannot begin one. A NUL byte is a
 * well-formed sequence of length 1.
 */
int tally_utf8_seq(const void *s, size_t len);

/**
 * tally_utf8_valid() - whether @s[0..@len) is well-formed UTF-8 with no
 * NUL byte
 *
 * NUL is refused because every string tally keeps is a C string: a NUL
 * would cut it short. Pure ASCII is checked 8 bytes a step (names and ids
 * mostly are). Return: true or false.
 */
bool tally_utf8_valid(const void *s, size_t len);

/**
 * tally_utf8_clip() - the longest prefix of @s of at most @max bytes that
 * does not end inside a sequence
 * @s:   well-formed UTF-8, @len bytes
 * @max: limit in bytes
 *
 * Return: @len when @len <= @max, else the prefix length (<= @max).
 */
size_t tally_utf8_clip(const char *s, size_t len, size_t max);

/**
 * tally_utf8_fix() - copy @s to @out with every maximal subpart of an
 * ill-formed sequence replaced by U+FFFD (EF BF BD)
 * @s:   bytes to repair, @len of them
 * @out: destination, @max bytes; not NUL-terminated
 * @max: room in @out
 *
 * Only whole characters are copied: the copy stops before one that does
 * not fit. Return: the number of bytes written to @out.
 */
size_t tally_utf8_fix(const char *s, size_t len, char *out, size_t max);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_UTF8_H */
