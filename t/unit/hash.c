/* SPDX-License-Identifier: MIT */
/* t/unit/hash.c - FNV-1a and the intrusive hash table (tally/hash.h) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/hash.h>

#include "tap.h"

struct item {
	struct tally_hnode node;
	int key;
};

static struct item *find(const struct tally_htable *t, int key, uint64_t h)
{
	struct tally_hnode *p;

	tally_htable_for_each_hash(t, h, p) {
		struct item *it = tally_container_of(p, struct item, node);

		if (it->key == key)
			return it;
	}
	return NULL;
}

static uint64_t key_hash(int key)
{
	return tally_hash_mix(tally_hash_bytes(TALLY_HASH_SEED, &key,
					       sizeof(key)));
}

static void test_fnv(void)
{
	/* FNV-1a 64 reference values (draft-eastlake-fnv test vectors) */
	cmp_ok(tally_hash_bytes(TALLY_HASH_SEED, "", 0), "==",
	       0xcbf29ce484222325ULL, "empty input: the offset basis");
	cmp_ok(tally_hash_bytes(TALLY_HASH_SEED, "a", 1), "==",
	       0xaf63dc4c8601ec8cULL, "\"a\"");
	cmp_ok(tally_hash_bytes(TALLY_HASH_SEED, "foobar", 6), "==",
	       0x85944171f73967e8ULL, "\"foobar\"");
	cmp_ok(tally_hash_str(TALLY_HASH_SEED, "a"), "==",
	       tally_hash_bytes(TALLY_HASH_SEED, "a", 2),
	       "hash_str hashes the NUL too");
	ok(tally_hash_str(tally_hash_str(TALLY_HASH_SEED, "ab"), "c") !=
		   tally_hash_str(tally_hash_str(TALLY_HASH_SEED, "a"), "bc"),
	   "(\"ab\",\"c\") and (\"a\",\"bc\") differ");
	ok(tally_hash_mix(1) != tally_hash_mix(2) &&
		   (tally_hash_mix(1) & 63) != (tally_hash_mix(65) & 63),
	   "mix spreads numbers that share their low bits");
}

static void test_table(void)
{
	enum { N = 5000 };
	struct tally_htable t = { 0 };
	struct item *items = calloc(N, sizeof(*items));
	size_t found = 0, gone = 0;

	ok(tally_htable_first(&t, 42) == NULL, "empty table: nothing found");
	for (int i = 0; i < N; i++) {
		items[i].key = i;
		items[i].node.hash = key_hash(i);
		if (tally_htable_reserve(&t))
			break;
		tally_htable_insert(&t, &items[i].node);
	}
	cmp_ok(t.n, "==", N, "5000 entries");
	cmp_ok(t.mask + 1, "==", 8192, "buckets doubled from 64 to 8192");
	for (int i = 0; i < N; i++)
		found += find(&t, i, key_hash(i)) == &items[i];
	cmp_ok(found, "==", N, "every entry found by its key");
	ok(find(&t, N, key_hash(N)) == NULL, "a key never inserted: none");

	for (int i = 0; i < N; i += 2)
		tally_htable_remove(&t, &items[i].node);
	cmp_ok(t.n, "==", N / 2, "half removed");
	for (int i = 0; i < N; i++)
		gone += (find(&t, i, key_hash(i)) == NULL) == (i % 2 == 0);
	cmp_ok(gone, "==", N, "removed ones gone, the others still there");
	tally_htable_fini(&t);
	ok(t.b == NULL && t.n == 0, "fini empties the table");
	free(items);
}

static void test_collisions(void)
{
	struct tally_htable t = { 0 };
	struct item a = { .key = 1 }, b = { .key = 2 }, c = { .key = 3 };
	struct tally_hnode *p;
	int seen = 0;

	/* three entries of one hash: all reachable, each removable */
	a.node.hash = b.node.hash = c.node.hash = 7;
	tally_htable_reserve(&t);
	tally_htable_insert(&t, &a.node);
	tally_htable_insert(&t, &b.node);
	tally_htable_insert(&t, &c.node);
	tally_htable_for_each_hash(&t, 7, p)
		seen |= 1 << tally_container_of(p, struct item, node)->key;
	cmp_ok(seen, "==", 0xe, "same hash: all three walked");
	ok(find(&t, 2, 7) == &b, "the middle one found by key");
	tally_htable_remove(&t, &b.node);
	ok(find(&t, 2, 7) == NULL && find(&t, 1, 7) == &a &&
		   find(&t, 3, 7) == &c,
	   "the middle one removed, its neighbours kept");
	ok(tally_htable_first(&t, 7 + 64) == NULL,
	   "same bucket, other hash: not found");
	tally_htable_fini(&t);
}

static void test_for_each_safe(void)
{
	enum { N = 300 };
	struct tally_htable t = { 0 };
	struct item *items = calloc(N, sizeof(*items));
	int *count = calloc(N, sizeof(*count));
	struct tally_hnode *p, *n;
	size_t i, seen = 0, twice = 0, left = 0;

	tally_htable_for_each_safe(&t, i, p, n)
		seen++;
	cmp_ok(seen, "==", 0, "for_each_safe on an empty table: nothing");
	for (int k = 0; k < N; k++) {
		items[k].key = k;
		/* three entries a hash: chains longer than one */
		items[k].node.hash = key_hash(k % 100);
		if (tally_htable_reserve(&t))
			bail_out("reserve");
		tally_htable_insert(&t, &items[k].node);
	}
	/* walk all, removing the odd keys on the way */
	tally_htable_for_each_safe(&t, i, p, n) {
		struct item *it = tally_container_of(p, struct item, node);

		seen++;
		twice += count[it->key]++ != 0;
		if (it->key % 2)
			tally_htable_remove(&t, p);
	}
	cmp_ok(seen, "==", N, "every entry walked");
	cmp_ok(twice, "==", 0, "none walked twice");
	cmp_ok(t.n, "==", N / 2, "the ones removed on the way are gone");
	tally_htable_for_each_safe(&t, i, p, n)
		left += tally_container_of(p, struct item, node)->key % 2 == 0;
	cmp_ok(left, "==", N / 2, "the others are all still there");
	tally_htable_fini(&t);
	free(count);
	free(items);
}

/*
 * tally_hash_mem(): every length's tail (1-3 bytes, 4-7 overlapping,
 * whole words) tells its strings apart, and statsd-like names spread over
 * the low bits a table indexes by.
 */
static void test_mem(void)
{
	enum { N = 8192, B = 1024 };
	static unsigned load[B];
	const char *s = "hpc.frontier.jobs.service042.http.requests";
	unsigned worst = 0, same = 0;
	char name[64];

	for (size_t n = 0; n < strlen(s); n++) {
		char t[64];

		memcpy(t, s, n + 1);
		t[n] ^= 1; /* the last byte differs */
		same += tally_hash_mem(TALLY_HASH_SEED, s, n + 1) ==
			tally_hash_mem(TALLY_HASH_SEED, t, n + 1);
		same += tally_hash_mem(TALLY_HASH_SEED, s, n) ==
			tally_hash_mem(TALLY_HASH_SEED, s, n + 1);
	}
	cmp_ok(same, "==", 0,
	       "a changed last byte, or one more byte, changes the hash");
	ok(tally_hash_mem(1, "abc", 3) != tally_hash_mem(2, "abc", 3),
	   "the seed counts");
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "hpc.jobs.service%03d.m%d", i % 200,
			 i);
		load[tally_hash_mem(TALLY_HASH_SEED, name, strlen(name)) &
		     (B - 1)]++;
	}
	for (int i = 0; i < B; i++)
		worst = load[i] > worst ? load[i] : worst;
	cmp_ok(worst, "<=", 24, "8192 names in 1024 buckets: none over 24");
}

int main(void)
{
	plan(NO_PLAN);
	test_fnv();
	test_mem();
	test_table();
	test_collisions();
	test_for_each_safe();
	done_testing();
}
