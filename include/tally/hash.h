/* SPDX-License-Identifier: MIT */
/*
 * tally/hash.h - one hash function and one hash table for the core and
 * every plugin
 *
 * The table is intrusive and chained: a struct that lives in a table
 * embeds a struct tally_hnode and is found again with tally_container_of().
 * Nothing is allocated per entry, an entry's address never changes, and
 * removing an entry needs only the entry. That is what label interning,
 * zmq_trace's sources and the prometheus store all need: their entries
 * are allocated anyway and are pointed to from elsewhere (LRU lists,
 * series lists), which an open-addressing table that moves entries could
 * not give without a second indirection.
 *
 * The table never compares keys: lookups walk the entries of one hash
 * value (tally_htable_for_each_hash()) and the caller compares its own
 * key. Buckets are a power of two; the table doubles when it holds as many
 * entries as buckets.
 *
 * Thread-safety: none; a table is used by one thread at a time (callers
 * that share one, such as label interning, hold their own lock).
 */
#ifndef TALLY_HASH_H
#define TALLY_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/** tally_container_of() - the struct of @type whose @member @p points to */
#define tally_container_of(p, type, member)                                   \
	((type *)(void *)((char *)(p)-offsetof(type, member)))

/** The FNV-1a 64-bit offset basis: the value to start a hash from. */
#define TALLY_HASH_SEED 0xcbf29ce484222325ULL

/**
 * tally_hash_bytes() - continue a 64-bit FNV-1a hash over @len bytes
 * @h:    the hash so far (TALLY_HASH_SEED to start)
 * @data: the bytes; may be NULL when @len is 0
 * @len:  their number
 *
 * FNV-1a (Fowler/Noll/Vo, IETF draft-eastlake-fnv): keys here are short
 * strings, where it spreads well enough for chained buckets and costs one
 * multiply a byte. Not for keys an attacker chooses to collide on purpose
 * beyond what a bounded table can absorb (every table here is capped).
 * Return: the new hash. Pure; any thread.
 */
uint64_t tally_hash_bytes(uint64_t h, const void *data, size_t len);

/**
 * tally_hash_str() - continue a hash over a C string and its NUL
 *
 * The NUL is hashed so that "ab","c" and "a","bc" differ when several
 * strings are chained. Return: the new hash.
 */
static inline uint64_t tally_hash_str(uint64_t h, const char *s)
{
	return tally_hash_bytes(h, s, strlen(s) + 1);
}

/**
 * tally_hash_mem() - a 64-bit hash of @len bytes, 8 at a time
 * @h:    a seed (TALLY_HASH_SEED, or the hash of other parts of a key)
 * @data: the bytes; may be NULL when @len is 0
 * @len:  their number
 *
 * For keys hashed once per sample on a hot path (aggregate's series
 * names): a multiply and a shift per 8 bytes, about a fifth of
 * tally_hash_bytes()'s cost on a 40-byte name, with well spread low bits.
 * Unlike FNV-1a it does not chain (hashing "ab" then "c" is not hashing
 * "abc") and its values are not fixed across versions: use it for
 * in-memory tables only, never for anything kept or compared across runs.
 * Return: the hash. Pure; any thread.
 */
uint64_t tally_hash_mem(uint64_t h, const void *data, size_t len);

/**
 * tally_hash_mix() - finalise a hash whose low bits must spread well
 *
 * The murmur3 64-bit finaliser; use it when the hash was built from
 * numbers rather than bytes (FNV's low bits are weak for those). Pure.
 */
uint64_t tally_hash_mix(uint64_t h);

/**
 * struct tally_hnode - the link embedded in an entry
 * @next: next entry of the same bucket (the table's)
 * @hash: the entry's hash; set it before tally_htable_insert() and do not
 *        change it while the entry is in a table
 */
struct tally_hnode {
	struct tally_hnode *next;
	uint64_t hash;
};

/**
 * struct tally_htable - an intrusive chained hash table
 * @b:    buckets; NULL while the table has never held an entry
 * @mask: number of buckets - 1
 * @n:    number of entries
 *
 * Zero-initialise it (`struct tally_htable t = { 0 };`) to get an empty
 * table; release the bucket array with tally_htable_fini(). The entries
 * belong to the caller.
 */
struct tally_htable {
	struct tally_hnode **b;
	size_t mask;
	size_t n;
};

/**
 * tally_htable_reserve() - make room for one more entry
 *
 * Doubles the bucket array when the table holds as many entries as it has
 * buckets (the first call allocates 64). Call it before every
 * tally_htable_insert().
 * Return: 0, or -1 with errno = ENOMEM when the table has no bucket array
 * and none could be allocated. Failing to grow an existing array is not an
 * error (chains only get longer) and returns 0.
 */
int tally_htable_reserve(struct tally_htable *t);

/**
 * tally_htable_insert() - add @node (its hash set) to @t
 *
 * Call tally_htable_reserve() first and only after it returned 0. Several
 * entries may share a hash; the table does not look for duplicates.
 */
void tally_htable_insert(struct tally_htable *t, struct tally_hnode *node);

/**
 * tally_htable_remove() - take @node, which must be in @t, out of it
 *
 * Costs the length of its bucket's chain. @node may be reused at once.
 */
void tally_htable_remove(struct tally_htable *t, struct tally_hnode *node);

/**
 * tally_htable_first() - the first entry of @t whose hash is @hash
 * Return: the entry, or NULL when none (also for an empty table).
 */
struct tally_hnode *tally_htable_first(const struct tally_htable *t,
				       uint64_t hash);

/**
 * tally_htable_next() - the next entry after @node with the same hash
 * Return: the entry, or NULL when none.
 */
struct tally_hnode *tally_htable_next(const struct tally_hnode *node);

/**
 * tally_htable_for_each_hash() - every entry of @t with hash @h, as @p
 *
 * @p is a struct tally_hnode *. The loop must not remove @p and then
 * continue; break out first.
 */
#define tally_htable_for_each_hash(t, h, p)                                   \
	for ((p) = tally_htable_first((t), (h)); (p);                         \
	     (p) = tally_htable_next(p))

/**
 * tally_htable_for_each_safe() - every entry of @t, as @p, in no order
 * @t: the table
 * @i: a size_t, the bucket walked (a cursor: leave it alone in the body)
 * @p: a struct tally_hnode *, the entry
 * @n: a struct tally_hnode *, @p's successor, taken before the body runs
 *
 * The body may remove @p (tally_htable_remove()) and free its entry, but
 * no other entry, and must not insert (a reserve may move the buckets).
 * Every entry present at the start is walked once, unless removed first.
 */
#define tally_htable_for_each_safe(t, i, p, n)                                \
	for ((i) = 0; (t)->b && (i) <= (t)->mask; (i)++)                      \
		for ((p) = (t)->b[(i)]; (p) && ((n) = (p)->next, 1);          \
		     (p) = (n))

/**
 * tally_htable_fini() - free the bucket array; the table is empty again
 *
 * The entries are not touched: free them first (or keep them elsewhere).
 */
void tally_htable_fini(struct tally_htable *t);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_HASH_H */
