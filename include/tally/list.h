/* SPDX-License-Identifier: MIT */
/*
 * tally/list.h - an intrusive circular doubly-linked list
 *
 * A struct that lives on a list embeds a struct tally_list and is found
 * again with tally_container_of() (tally/hash.h). The list's head is a
 * struct tally_list of its own, not an entry: empty when it points to
 * itself. Nothing is allocated; every operation is O(1).
 *
 * The use it is made for: least-recently-used order next to a hash table
 * (tally/hash.h), so that a full table forgets its oldest entry at once.
 * Keep the most recent entry first with tally_list_move_first() on every
 * use; tally_list_last() is then the least recently used.
 *
 * Thread-safety: none; a list is used by one thread at a time.
 */
#ifndef TALLY_LIST_H
#define TALLY_LIST_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct tally_list - a list head, or the link embedded in an entry
 * @next: the next entry (the head's: the first entry, or the head itself)
 * @prev: the previous entry (the head's: the last entry, or the head)
 */
struct tally_list {
	struct tally_list *next;
	struct tally_list *prev;
};

/** tally_list_init() - make @head an empty list */
static inline void tally_list_init(struct tally_list *head)
{
	head->next = head->prev = head;
}

/** tally_list_empty() - whether the list @head has no entry */
static inline bool tally_list_empty(const struct tally_list *head)
{
	return head->next == head;
}

/** tally_list_add_first() - put @n, on no list, first on @head's */
static inline void tally_list_add_first(struct tally_list *head,
					struct tally_list *n)
{
	n->next = head->next;
	n->prev = head;
	head->next->prev = n;
	head->next = n;
}

/** tally_list_del() - take @n off its list; @n is on no list after it */
static inline void tally_list_del(struct tally_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

/** tally_list_move_first() - move @n, on @head's list, to its front */
static inline void tally_list_move_first(struct tally_list *head,
					 struct tally_list *n)
{
	if (head->next == n)
		return;
	n->prev->next = n->next;
	n->next->prev = n->prev;
	tally_list_add_first(head, n);
}

/** tally_list_first() - the first entry of @head's list, or NULL */
static inline struct tally_list *tally_list_first(const struct tally_list *head)
{
	return head->next == head ? NULL : head->next;
}

/** tally_list_last() - the last entry of @head's list, or NULL */
static inline struct tally_list *tally_list_last(const struct tally_list *head)
{
	return head->prev == head ? NULL : head->prev;
}

/**
 * tally_list_prev() - the entry before @n on @head's list, or NULL when @n
 * is the first
 */
static inline struct tally_list *tally_list_prev(const struct tally_list *head,
						 const struct tally_list *n)
{
	return n->prev == head ? NULL : n->prev;
}

#ifdef __cplusplus
}
#endif
#endif /* TALLY_LIST_H */
