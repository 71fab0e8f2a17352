/* SPDX-License-Identifier: MIT */
/*
 * tally/lru.h - keyed entries, bounded, forgotten least recently used first
 *
 * What every per-source table of the trace path needs (flatten's lanes,
 * rate_limit's buckets): find an entry by its key, keep the entries in
 * order of use, and when the table is full forget the entry used longest
 * ago. It is the hash table of tally/hash.h and the list of tally/list.h
 * put together once, so that no plugin writes that bookkeeping again.
 *
 * An entry embeds a struct tally_lru_node and is found again with
 * tally_container_of(). Nothing is allocated per entry; the entries belong
 * to the caller, which frees them after tally_lru_remove(). The table does
 * not compare keys: tally_lru_find() is given the caller's equality, which
 * the compiler inlines (everything here is static inline but the table's
 * growth, in core/hash.c).
 *
 * The most recently used entry is tally_lru_newest(): consecutive events
 * usually come from the same source, so checking it first spares the hash
 * in the common case, with no cache pointer to keep right by hand.
 *
 * Thread-safety: none; a table is used by one thread at a time.
 */
#ifndef TALLY_LRU_H
#define TALLY_LRU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/hash.h>
#include <tally/list.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct tally_lru_node - the link embedded in an entry
 * @hnode: in the hash table (its hash is the entry's)
 * @order: on the list of use, newest first
 */
struct tally_lru_node {
	struct tally_hnode hnode;
	struct tally_list order;
};

/**
 * struct tally_lru - a bounded table of entries in order of use
 * @table: the entries by hash
 * @order: the entries, most recently used first
 * @max:   the number of entries tally_lru_full() allows (>= 1)
 *
 * Set up with tally_lru_init(); release the bucket array with
 * tally_lru_fini() once every entry is removed.
 */
struct tally_lru {
	struct tally_htable table;
	struct tally_list order;
	size_t max;
};

/** tally_lru_init() - an empty table that holds up to @max (>= 1) entries */
static inline void tally_lru_init(struct tally_lru *c, size_t max)
{
	c->table = (struct tally_htable){ 0 };
	tally_list_init(&c->order);
	c->max = max ? max : 1;
}

/** tally_lru_count() - the number of entries */
static inline size_t tally_lru_count(const struct tally_lru *c)
{
	return c->table.n;
}

/**
 * tally_lru_full() - whether @c holds @max entries or more: before adding
 * one, remove tally_lru_oldest() (a lower @max set later may leave more)
 */
static inline bool tally_lru_full(const struct tally_lru *c)
{
	return c->table.n >= c->max;
}

static inline struct tally_lru_node *tally_lru_of(struct tally_list *p)
{
	return p ? tally_container_of(p, struct tally_lru_node, order) : NULL;
}

/** tally_lru_newest() - the most recently used entry, or NULL when empty */
static inline struct tally_lru_node *tally_lru_newest(const struct tally_lru *c)
{
	return tally_lru_of(tally_list_first(&c->order));
}

/** tally_lru_oldest() - the least recently used entry, or NULL when empty */
static inline struct tally_lru_node *tally_lru_oldest(const struct tally_lru *c)
{
	return tally_lru_of(tally_list_last(&c->order));
}

/**
 * tally_lru_newer() - the entry used next after @n (towards the newest),
 * or NULL when @n is the newest: walks from tally_lru_oldest() for expiry.
 * Take the next entry before removing @n.
 */
static inline struct tally_lru_node *
tally_lru_newer(const struct tally_lru *c, const struct tally_lru_node *n)
{
	return tally_lru_of(tally_list_prev(&c->order, &n->order));
}

/** tally_lru_touch() - make @n, in @c, the most recently used entry */
static inline void tally_lru_touch(struct tally_lru *c,
				   struct tally_lru_node *n)
{
	tally_list_move_first(&c->order, &n->order);
}

/**
 * tally_lru_find() - the entry of hash @hash for which @eq(entry, @key) is
 * true, made the most recently used one
 * @eq: the caller's key comparison (called for entries of that hash only)
 *
 * Return: the entry, or NULL when none. O(1) expected.
 */
static inline struct tally_lru_node *
tally_lru_find(struct tally_lru *c, uint64_t hash,
	       bool (*eq)(const struct tally_lru_node *n, const void *key),
	       const void *key)
{
	struct tally_hnode *p;

	tally_htable_for_each_hash(&c->table, hash, p)
	{
		struct tally_lru_node *n =
			tally_container_of(p, struct tally_lru_node, hnode);

		if (eq(n, key)) {
			tally_lru_touch(c, n);
			return n;
		}
	}
	return NULL;
}

/**
 * tally_lru_reserve() - make room for one more entry, before evicting one
 *
 * So that a new entry fails, if it must, before anything is forgotten for
 * it: call it, then remove the oldest entry when tally_lru_full(), then
 * tally_lru_insert() (which cannot fail after it).
 * Return: 0, or -1 with errno = ENOMEM (nothing changed).
 */
static inline int tally_lru_reserve(struct tally_lru *c)
{
	return tally_htable_reserve(&c->table);
}

/**
 * tally_lru_insert() - add @n, of key hash @hash, as the most recently used
 *
 * The table does not look for a duplicate key and does not evict: check
 * tally_lru_full() first and remove the oldest entry yourself (it may own
 * things to close first).
 * Return: 0, or -1 with errno = ENOMEM (no bucket array could be
 * allocated; nothing changed); never fails after tally_lru_reserve()
 * returned 0 with no insert since.
 */
static inline int tally_lru_insert(struct tally_lru *c,
				   struct tally_lru_node *n, uint64_t hash)
{
	if (tally_htable_reserve(&c->table) < 0)
		return -1;
	n->hnode.hash = hash;
	tally_htable_insert(&c->table, &n->hnode);
	tally_list_add_first(&c->order, &n->order);
	return 0;
}

/** tally_lru_remove() - take @n out of @c; the caller may then free it */
static inline void tally_lru_remove(struct tally_lru *c,
				    struct tally_lru_node *n)
{
	tally_htable_remove(&c->table, &n->hnode);
	tally_list_del(&n->order);
}

/**
 * tally_lru_fini() - free the bucket array of a table with no entries left
 * (remove and free them first, e.g. while tally_lru_oldest() is not NULL)
 */
static inline void tally_lru_fini(struct tally_lru *c)
{
	tally_htable_fini(&c->table);
	tally_list_init(&c->order);
}

#ifdef __cplusplus
}
#endif
#endif /* TALLY_LRU_H */
