/* SPDX-License-Identifier: MIT */
/*
 * t/unit/lru.c - tally/lru.h: keyed entries in order of use, bounded
 *
 * Entries are found by key through the caller's equality, a lookup makes
 * an entry the newest, the oldest is the one to forget when full, and the
 * walk from the oldest (expiry) sees every entry once. Keys that share a
 * hash (forced here) are told apart by the equality alone.
 */
#include <stdlib.h>
#include <string.h>

#include <tally/lru.h>

#include "tap.h"

struct item {
	struct tally_lru_node node;
	int key;
};

static bool item_eq(const struct tally_lru_node *n, const void *key)
{
	return tally_container_of(n, struct item, node)->key ==
	       *(const int *)key;
}

/* Every key, a hash shared by pairs: 0 and 1 collide, 2 and 3... */
static uint64_t item_hash(int key)
{
	return tally_hash_mix((uint64_t)(key / 2));
}

static struct item *find(struct tally_lru *c, int key)
{
	struct tally_lru_node *n =
		tally_lru_find(c, item_hash(key), item_eq, &key);

	return n ? tally_container_of(n, struct item, node) : NULL;
}

/* The keys, oldest first, as digits ("" when empty). */
static const char *order(const struct tally_lru *c)
{
	static char buf[64];
	size_t n = 0;

	for (struct tally_lru_node *p = tally_lru_oldest(c); p;
	     p = tally_lru_newer(c, p))
		buf[n++] =
			(char)('0' +
			       tally_container_of(p, struct item, node)->key);
	buf[n] = '\0';
	return buf;
}

/* Add @key, forgetting the oldest entry when full; return the forgotten
 * key or -1. */
static int add(struct tally_lru *c, int key)
{
	struct item *it = calloc(1, sizeof(*it));
	int gone = -1;

	if (!it)
		bail_out("out of memory");
	it->key = key;
	if (tally_lru_reserve(c) < 0)
		bail_out("reserve");
	if (tally_lru_full(c)) {
		struct item *old = tally_container_of(tally_lru_oldest(c),
						      struct item, node);

		gone = old->key;
		tally_lru_remove(c, &old->node);
		free(old);
	}
	if (tally_lru_insert(c, &it->node, item_hash(key)) < 0)
		bail_out("insert after reserve");
	return gone;
}

int main(void)
{
	struct tally_lru c;
	struct tally_lru_node *n;
	int k;

	plan(NO_PLAN);
	tally_lru_init(&c, 4);
	ok(!tally_lru_newest(&c) && !tally_lru_oldest(&c),
	   "a new table has no entry");
	k = 3;
	ok(!tally_lru_find(&c, item_hash(k), item_eq, &k),
	   "a lookup in an empty table finds nothing");

	for (k = 0; k < 4; k++)
		cmp_ok(add(&c, k), "==", -1, "key %d added, nothing forgotten",
		       k);
	cmp_ok(tally_lru_count(&c), "==", 4, "four entries");
	ok(tally_lru_full(&c), "four entries fill a table of four");
	is(order(&c), "0123", "oldest first, in order of insertion");
	ok(tally_container_of(tally_lru_newest(&c), struct item, node)->key ==
		   3,
	   "the newest is the last added");

	ok(find(&c, 1) && find(&c, 1)->key == 1,
	   "a key sharing its hash with another is found by the equality");
	ok(find(&c, 0) && find(&c, 0)->key == 0, "and so is the other");
	is(order(&c), "2310", "lookups make entries the newest");
	k = 9;
	ok(!tally_lru_find(&c, item_hash(k), item_eq, &k),
	   "an absent key is not found");
	is(order(&c), "2310", "a failed lookup changes no order");

	cmp_ok(add(&c, 4), "==", 2, "full: adding forgets the oldest");
	is(order(&c), "3104", "the new key is the newest");
	ok(!find(&c, 2), "the forgotten key is gone");
	ok(find(&c, 3) && find(&c, 4), "the others stay");
	is(order(&c), "1034", "after two lookups");

	/* expiry: walk from the oldest, removing some, taking next first */
	for (n = tally_lru_oldest(&c); n;) {
		struct tally_lru_node *newer = tally_lru_newer(&c, n);
		struct item *it = tally_container_of(n, struct item, node);

		if (it->key % 2 == 0) {
			tally_lru_remove(&c, n);
			free(it);
		}
		n = newer;
	}
	is(order(&c), "13", "removal during a walk from the oldest");
	cmp_ok(tally_lru_count(&c), "==", 2, "two entries left");
	ok(!tally_lru_full(&c), "not full any more");
	ok(!find(&c, 0) && !find(&c, 4) && find(&c, 1),
	   "removed keys are not found, kept ones are");

	while ((n = tally_lru_oldest(&c))) {
		tally_lru_remove(&c, n);
		free(tally_container_of(n, struct item, node));
	}
	tally_lru_fini(&c);

	/* many keys: the hash table grows, every key is still found */
	tally_lru_init(&c, 1000);
	for (k = 0; k < 1000; k++)
		add(&c, k);
	for (k = 0; k < 1000 && find(&c, k); k++)
		;
	cmp_ok(k, "==", 1000, "1000 keys in a grown table all found");
	while ((n = tally_lru_oldest(&c))) {
		tally_lru_remove(&c, n);
		free(tally_container_of(n, struct item, node));
	}
	cmp_ok(tally_lru_count(&c), "==", 0, "emptied");
	tally_lru_fini(&c);
	return done_testing();
}
