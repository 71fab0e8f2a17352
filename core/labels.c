/* SPDX-License-Identifier: MIT */
/*
 * core/labels.c - interned label sets
 *
 * All label sets live in one hash table keyed by their content, so equal
 * sets are one pointer. The table holds no reference: a set is removed when
 * its last reference goes. Lookups take a reference only if the count is
 * still non-zero; a set whose count reached zero is dying and is never
 * handed out again, which is what makes the lock-free unref safe: only the
 * thread that moved the count to zero frees it.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <tally/hash.h>
#include <tally/labels.h>

#include "core-internal.h"

#define LABELS_MAX_VARARGS 32

struct tally_labels {
	atomic_uint refs;
	bool immortal;
	uint32_t n;
	struct tally_hnode node; /* in labels_table; node.hash is the hash */
	struct tally_label pairs[];
	/* followed by the key and value strings */
};

static pthread_mutex_t labels_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tally_htable labels_table;

static struct tally_labels labels_empty_set = {
	.immortal = true,
	.node.hash = TALLY_HASH_SEED,
};

static int label_cmp(const void *a, const void *b)
{
	const struct tally_label *x = a, *y = b;

	return strcmp(x->key, y->key);
}

static uint64_t labels_hash(const struct tally_label *pairs, size_t n)
{
	uint64_t h = TALLY_HASH_SEED;

	for (size_t i = 0; i < n; i++) {
		/* the NULs are hashed: ("ab","c") differs from ("a","bc") */
		h = tally_hash_str(h, pairs[i].key);
		h = tally_hash_str(h, pairs[i].value);
	}
	return h;
}

static bool labels_equal(const struct tally_labels *ls,
			 const struct tally_label *pairs, size_t n)
{
	if (ls->n != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(ls->pairs[i].key, pairs[i].key) ||
		    strcmp(ls->pairs[i].value, pairs[i].value))
			return false;
	}
	return true;
}

static struct tally_labels *labels_alloc(const struct tally_label *pairs,
					 size_t n, uint64_t hash)
{
	size_t strsize = 0;
	struct tally_labels *ls;
	char *p;

	for (size_t i = 0; i < n; i++)
		strsize += strlen(pairs[i].key) + strlen(pairs[i].value) + 2;
	ls = malloc(sizeof(*ls) + n * sizeof(ls->pairs[0]) + strsize);
	if (!ls)
		return NULL;
	atomic_init(&ls->refs, 1);
	ls->immortal = false;
	ls->n = (uint32_t)n;
	ls->node.hash = hash;
	p = (char *)&ls->pairs[n];
	for (size_t i = 0; i < n; i++) {
		size_t kl = strlen(pairs[i].key) + 1;
		size_t vl = strlen(pairs[i].value) + 1;

		ls->pairs[i].key = memcpy(p, pairs[i].key, kl);
		p += kl;
		ls->pairs[i].value = memcpy(p, pairs[i].value, vl);
		p += vl;
	}
	return ls;
}

/* Intern a sorted, validated array of pairs. */
static struct tally_labels *labels_intern(const struct tally_label *pairs,
					  size_t n)
{
	uint64_t hash;
	struct tally_labels *found = NULL;
	struct tally_hnode *p;

	if (n == 0)
		return &labels_empty_set;
	hash = labels_hash(pairs, n);
	pthread_mutex_lock(&labels_lock);
	if (tally_htable_reserve(&labels_table)) {
		pthread_mutex_unlock(&labels_lock);
		return NULL;
	}
	tally_htable_for_each_hash(&labels_table, hash, p) {
		struct tally_labels *ls =
			tally_container_of(p, struct tally_labels, node);
		unsigned r;

		if (!labels_equal(ls, pairs, n))
			continue;
		/* take a reference only if the set is not dying */
		r = atomic_load(&ls->refs);
		while (r && !atomic_compare_exchange_weak(&ls->refs, &r, r + 1))
			;
		if (r) {
			found = ls;
			break;
		}
	}
	if (!found) {
		found = labels_alloc(pairs, n, hash);
		if (found)
			tally_htable_insert(&labels_table, &found->node);
	}
	pthread_mutex_unlock(&labels_lock);
	if (!found)
		errno = ENOMEM;
	return found;
}

struct tally_labels *tally_labels_new(const struct tally_label *pairs,
				      size_t n)
{
	struct tally_label stackbuf[16], *sorted = stackbuf;
	struct tally_labels *ls = NULL;

	if (n && !pairs) {
		errno = EINVAL;
		return NULL;
	}
	if (n > sizeof(stackbuf) / sizeof(stackbuf[0])) {
		sorted = malloc(n * sizeof(*sorted));
		if (!sorted) {
			errno = ENOMEM;
			return NULL;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (!pairs[i].key || !*pairs[i].key || !pairs[i].value) {
			errno = EINVAL;
			goto out;
		}
		sorted[i] = pairs[i];
	}
	qsort(sorted, n, sizeof(*sorted), label_cmp);
	for (size_t i = 1; i < n; i++) {
		if (!strcmp(sorted[i - 1].key, sorted[i].key)) {
			errno = EINVAL;
			goto out;
		}
	}
	ls = labels_intern(sorted, n);
out:
	if (sorted != stackbuf)
		free(sorted);
	return ls;
}

struct tally_labels *tally_labels_newv(const char *key, ...)
{
	struct tally_label pairs[LABELS_MAX_VARARGS];
	size_t n = 0;
	va_list ap;

	va_start(ap, key);
	for (const char *k = key; k; k = va_arg(ap, const char *)) {
		if (n == LABELS_MAX_VARARGS) {
			va_end(ap);
			errno = EINVAL;
			return NULL;
		}
		pairs[n].key = k;
		pairs[n].value = va_arg(ap, const char *);
		n++;
	}
	va_end(ap);
	return tally_labels_new(pairs, n);
}

struct tally_labels *tally_labels_with(const struct tally_labels *base,
				       const char *key, const char *value)
{
	size_t n = tally_labels_count(base);
	struct tally_label *pairs;
	struct tally_labels *ls;
	size_t j = 0;

	if (!key || !*key || !value) {
		errno = EINVAL;
		return NULL;
	}
	pairs = malloc((n + 1) * sizeof(*pairs));
	if (!pairs) {
		errno = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (strcmp(base->pairs[i].key, key))
			pairs[j++] = base->pairs[i];
	}
	pairs[j].key = key;
	pairs[j].value = value;
	ls = tally_labels_new(pairs, j + 1);
	free(pairs);
	return ls;
}

struct tally_labels *tally_labels_ref(struct tally_labels *ls)
{
	if (ls && !ls->immortal)
		atomic_fetch_add_explicit(&ls->refs, 1, memory_order_relaxed);
	return ls;
}

void tally_labels_unref(struct tally_labels *ls)
{
	if (!ls || ls->immortal)
		return;
	if (atomic_fetch_sub_explicit(&ls->refs, 1, memory_order_acq_rel) != 1)
		return;
	pthread_mutex_lock(&labels_lock);
	tally_htable_remove(&labels_table, &ls->node);
	pthread_mutex_unlock(&labels_lock);
	free(ls);
}

struct tally_labels *tally_labels_empty(void)
{
	return &labels_empty_set;
}

size_t tally_labels_count(const struct tally_labels *ls)
{
	return ls ? ls->n : 0;
}

const struct tally_label *tally_labels_at(const struct tally_labels *ls,
					  size_t i)
{
	if (!ls || i >= ls->n)
		return NULL;
	return &ls->pairs[i];
}

const char *tally_labels_get(const struct tally_labels *ls, const char *key)
{
	if (!ls || !key)
		return NULL;
	for (size_t i = 0; i < ls->n; i++) {
		int c = strcmp(ls->pairs[i].key, key);

		if (c == 0)
			return ls->pairs[i].value;
		if (c > 0)
			break;
	}
	return NULL;
}

uint64_t tally_labels_hash(const struct tally_labels *ls)
{
	return ls ? ls->node.hash : labels_empty_set.node.hash;
}

const struct tally_label *tally_labels_pairs(const struct tally_labels *ls)
{
	return ls && ls->n ? ls->pairs : NULL;
}

size_t tally_label_merge(const struct tally_label *a, size_t na,
			 const struct tally_label *b, size_t nb,
			 struct tally_label *out)
{
	size_t i = 0, j = 0, n = 0;

	while (i < na || j < nb) {
		int c = i == na ? 1 : j == nb ? -1 : strcmp(a[i].key, b[j].key);

		if (c <= 0) {
			out[n++] = a[i++];
			j += c == 0; /* @a wins */
		} else {
			out[n++] = b[j++];
		}
	}
	return n;
}

struct tally_labels *tally_labels_merge(const struct tally_labels *base,
					const struct tally_labels *extra)
{
	size_t na = tally_labels_count(base), nb = tally_labels_count(extra);
	struct tally_label stackbuf[16], *pairs = stackbuf;
	struct tally_labels *ls;
	size_t n;

	if (!nb)
		return tally_labels_ref(
			(struct tally_labels *)(base ? base
						     : tally_labels_empty()));
	if (!na)
		return tally_labels_ref((struct tally_labels *)extra);
	if (na + nb > sizeof(stackbuf) / sizeof(stackbuf[0])) {
		pairs = malloc((na + nb) * sizeof(*pairs));
		if (!pairs) {
			errno = ENOMEM;
			return NULL;
		}
	}
	/* both sorted with unique keys: so is the merge, intern it as is */
	n = tally_label_merge(base->pairs, na, extra->pairs, nb, pairs);
	ls = labels_intern(pairs, n);
	if (pairs != stackbuf)
		free(pairs);
	return ls;
}

struct tally_labels *tally_static_labels(const struct tally_labels *global,
					 const struct tally_labels *output,
					 const char *host_key,
					 const char *hostname)
{
	struct tally_labels *both, *host = NULL, *all;
	struct tally_label *kept;
	size_t n, k = 0;

	/* an output's own labels override the global ones */
	both = tally_labels_merge(output, global);
	if (!both)
		return NULL;
	if (host_key && *host_key && hostname && *hostname) {
		host = tally_labels_newv(host_key, hostname, NULL);
		if (!host)
			goto out_unref;
	}
	all = tally_labels_merge(both, host);
	tally_labels_unref(host);
	tally_labels_unref(both);
	if (!all)
		return NULL;
	/* "" removes a label, as an empty value means no label to Prometheus */
	n = tally_labels_count(all);
	for (size_t i = 0; i < n; i++)
		k += *all->pairs[i].value != '\0';
	if (k == n)
		return all;
	kept = malloc(n * sizeof(*kept));
	if (!kept) {
		tally_labels_unref(all);
		errno = ENOMEM;
		return NULL;
	}
	k = 0;
	for (size_t i = 0; i < n; i++) {
		if (*all->pairs[i].value)
			kept[k++] = all->pairs[i];
	}
	both = labels_intern(kept, k);
	free(kept);
	tally_labels_unref(all);
	return both;
out_unref:
	tally_labels_unref(both);
	return NULL;
}
