/* SPDX-License-Identifier: MIT */
/*
 * core/hash.c - FNV-1a and the intrusive chained hash table (tally/hash.h)
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tally/hash.h>

#define HTABLE_MIN_BUCKETS 64

uint64_t tally_hash_bytes(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

/* One step of tally_hash_mem(): @w into @h. */
static inline uint64_t hash_mem_step(uint64_t h, uint64_t w)
{
	h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
	return h ^ (h >> 31);
}

uint64_t tally_hash_mem(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t w;
	uint32_t a, b;

	h ^= len * 0x9e3779b97f4a7c15ULL;
	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = hash_mem_step(h, w);
	}
	if (len >= 4) {
		/* two 4-byte loads, overlapping when len < 8 */
		memcpy(&a, p, 4);
		memcpy(&b, p + len - 4, 4);
		w = (uint64_t)a << 32 | b;
	} else if (len) {
		w = (uint64_t)p[0] << 16 | (uint64_t)p[len / 2] << 8 |
		    p[len - 1];
	} else {
		return h;
	}
	return hash_mem_step(h, w);
}

uint64_t tally_hash_mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}

int tally_htable_reserve(struct tally_htable *t)
{
	struct tally_hnode **nb;
	size_t nsize;

	if (t->b && t->n < t->mask + 1)
		return 0;
	nsize = t->b ? (t->mask + 1) * 2 : HTABLE_MIN_BUCKETS;
	nb = calloc(nsize, sizeof(*nb));
	if (!nb) {
		if (t->b)
			return 0; /* chains get longer; still correct */
		errno = ENOMEM;
		return -1;
	}
	if (t->b) {
		for (size_t i = 0; i <= t->mask; i++) {
			struct tally_hnode *p = t->b[i], *next;

			for (; p; p = next) {
				next = p->next;
				p->next = nb[p->hash & (nsize - 1)];
				nb[p->hash & (nsize - 1)] = p;
			}
		}
		free(t->b);
	}
	t->b = nb;
	t->mask = nsize - 1;
	return 0;
}

void tally_htable_insert(struct tally_htable *t, struct tally_hnode *node)
{
	struct tally_hnode **slot = &t->b[node->hash & t->mask];

	node->next = *slot;
	*slot = node;
	t->n++;
}

void tally_htable_remove(struct tally_htable *t, struct tally_hnode *node)
{
	struct tally_hnode **pp = &t->b[node->hash & t->mask];

	for (; *pp; pp = &(*pp)->next) {
		if (*pp == node) {
			*pp = node->next;
			node->next = NULL;
			t->n--;
			return;
		}
	}
}

struct tally_hnode *tally_htable_first(const struct tally_htable *t,
				       uint64_t hash)
{
	struct tally_hnode *p = t->b ? t->b[hash & t->mask] : NULL;

	while (p && p->hash != hash)
		p = p->next;
	return p;
}

struct tally_hnode *tally_htable_next(const struct tally_hnode *node)
{
	struct tally_hnode *p;

	for (p = node->next; p && p->hash != node->hash; p = p->next)
		;
	return p;
}

void tally_htable_fini(struct tally_htable *t)
{
	free(t->b);
	t->b = NULL;
	t->mask = 0;
	t->n = 0;
}
