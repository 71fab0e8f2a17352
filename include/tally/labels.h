/* SPDX-License-Identifier: MIT */
/*
 * tally/labels.h - interned, immutable, reference-counted label sets
 *
 * A label set is a sorted list of (key, value) string pairs, as in the
 * Prometheus data model. Sets are interned: two sets with the same pairs are
 * the same pointer, so outputs can key series by (name, labels pointer) and
 * compare label sets with ==. Keys are sorted by strcmp() and unique.
 *
 * Thread-safety: every function here may be called from any thread (the
 * intern table is protected by a mutex, reference counts are atomic).
 */
#ifndef TALLY_LABELS_H
#define TALLY_LABELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct tally_label - one label pair, as passed in and read back
 * @key:   label name; valid Prometheus label names are [a-zA-Z_][a-zA-Z0-9_]*
 *         but any non-empty UTF-8 string is accepted here (outputs sanitize)
 * @value: label value, any UTF-8 string (may be empty)
 */
struct tally_label {
	const char *key;
	const char *value;
};

/** struct tally_labels - opaque interned label set */
struct tally_labels;

/**
 * tally_labels_new() - intern a label set
 * @pairs: @n pairs in any order; the strings are copied
 * @n:     number of pairs (0 gives the empty set)
 *
 * Return: a new reference to the interned set (release with
 * tally_labels_unref()), or NULL with errno = ENOMEM, or EINVAL when @pairs
 * is NULL with @n > 0, a key is NULL or empty, a value is NULL, or a key
 * occurs twice.
 */
struct tally_labels *tally_labels_new(const struct tally_label *pairs,
				      size_t n);

/**
 * tally_labels_newv() - intern a label set from NULL-terminated varargs
 * @key: first key, followed by its value, then further key/value pairs,
 *       terminated by a NULL key
 *
 * Convenience for fixed label sets: tally_labels_newv("cpu", "0", "mode",
 * "user", NULL). At most 32 pairs.
 *
 * Return: as tally_labels_new(); EINVAL also when more than 32 pairs.
 */
struct tally_labels *tally_labels_newv(const char *key, ...);

/**
 * tally_labels_with() - intern @base plus one more pair
 * @base:  existing set (not consumed); NULL means the empty set
 * @key:   key to add; if @base has it already, its value is replaced
 * @value: value of @key
 *
 * Return: a new reference, or NULL with errno as tally_labels_new().
 */
struct tally_labels *tally_labels_with(const struct tally_labels *base,
				       const char *key, const char *value);

/**
 * tally_labels_ref() - take another reference
 * @ls: set, or NULL (then NULL is returned)
 * Return: @ls.
 */
struct tally_labels *tally_labels_ref(struct tally_labels *ls);

/**
 * tally_labels_unref() - drop a reference; the last one frees the set
 * @ls: set, or NULL (no-op)
 */
void tally_labels_unref(struct tally_labels *ls);

/**
 * tally_labels_empty() - the interned empty set
 *
 * Return: a borrowed pointer valid for the life of the process; never NULL.
 * Take a reference with tally_labels_ref() to store it.
 */
struct tally_labels *tally_labels_empty(void);

/** tally_labels_count() - number of pairs; 0 for NULL */
size_t tally_labels_count(const struct tally_labels *ls);

/**
 * tally_labels_at() - pair @i in key order
 * Return: a pointer valid while the caller holds a reference to @ls, or
 * NULL if @i is out of range.
 */
const struct tally_label *tally_labels_at(const struct tally_labels *ls,
					  size_t i);

/**
 * tally_labels_get() - value of @key
 * Return: the value (valid while @ls is referenced) or NULL if absent.
 */
const char *tally_labels_get(const struct tally_labels *ls, const char *key);

/**
 * tally_labels_pairs() - the pairs of @ls as one array, in key order
 * Return: tally_labels_count(@ls) pairs (valid while @ls is referenced),
 * or NULL for the empty set.
 */
const struct tally_label *tally_labels_pairs(const struct tally_labels *ls);

/**
 * tally_labels_merge() - @base plus the pairs of @extra whose keys it lacks
 * @base:  set whose pairs win (not consumed); NULL = the empty set
 * @extra: pairs added where @base has no such key (not consumed); NULL =
 *         the empty set
 *
 * How an output adds its static labels (tally_output_labels()) to a
 * record's: tally_labels_merge(record_labels, static_labels), so that a
 * record's own label is never overwritten.
 * Return: a new reference, or NULL with errno = ENOMEM.
 */
struct tally_labels *tally_labels_merge(const struct tally_labels *base,
					const struct tally_labels *extra);

/**
 * tally_label_merge() - merge two key-sorted pair arrays, the first winning
 * @a:   @na pairs sorted by key (strcmp), keys unique
 * @b:   @nb pairs, the same
 * @out: room for @na + @nb pairs; receives the union sorted by key, @a's
 *       pair where both have a key (the strings are not copied)
 *
 * For renderers that build label text from pairs of their own (series
 * derived from spans) and add static labels without interning a set.
 * Return: the number of pairs written. Pure; any thread.
 */
size_t tally_label_merge(const struct tally_label *a, size_t na,
			 const struct tally_label *b, size_t nb,
			 struct tally_label *out);

/**
 * tally_labels_hash() - 64-bit hash of the set, stable for the process life
 *
 * Equal sets are the same pointer, so this is for outputs that mix the
 * label hash with a metric name hash.
 */
uint64_t tally_labels_hash(const struct tally_labels *ls);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_LABELS_H */
