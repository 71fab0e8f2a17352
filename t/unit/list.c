/* SPDX-License-Identifier: MIT */
/*
 * t/unit/list.c - tally/list.h: the intrusive list as an LRU order
 */
#include <tally/hash.h>
#include <tally/list.h>

#include "tap.h"

struct item {
	int v;
	struct tally_list link;
};

/* The list's values first to last, as digits ("" when empty). */
static const char *order(const struct tally_list *head)
{
	static char buf[16];
	size_t n = 0;

	for (const struct tally_list *p = tally_list_first(head); p;
	     p = p->next == head ? NULL : p->next)
		buf[n++] = (char)('0' +
				  tally_container_of(p, struct item, link)->v);
	buf[n] = '\0';
	return buf;
}

/* The same, last to first, through tally_list_prev(). */
static const char *backwards(const struct tally_list *head)
{
	static char buf[16];
	size_t n = 0;

	for (const struct tally_list *p = tally_list_last(head); p;
	     p = tally_list_prev(head, p))
		buf[n++] = (char)('0' +
				  tally_container_of(p, struct item, link)->v);
	buf[n] = '\0';
	return buf;
}

int main(void)
{
	struct item it[4] = { { .v = 0 }, { .v = 1 }, { .v = 2 }, { .v = 3 } };
	struct tally_list head;

	plan(NO_PLAN);
	tally_list_init(&head);
	ok(tally_list_empty(&head), "a new list is empty");
	ok(!tally_list_first(&head) && !tally_list_last(&head),
	   "an empty list has no first or last entry");
	for (int i = 0; i < 4; i++)
		tally_list_add_first(&head, &it[i].link);
	is(order(&head), "3210", "add_first puts the newest first");
	is(backwards(&head), "0123", "prev walks from the last back");
	tally_list_move_first(&head, &it[1].link);
	is(order(&head), "1320", "move_first of a middle entry");
	tally_list_move_first(&head, &it[1].link);
	is(order(&head), "1320", "move_first of the first entry: no change");
	tally_list_move_first(&head, &it[0].link);
	is(order(&head), "0132", "move_first of the last entry");
	ok(tally_list_last(&head) == &it[2].link,
	   "the last entry is the least recently moved");
	tally_list_del(&it[1].link);
	is(order(&head), "032", "del of a middle entry");
	ok(it[1].link.next == &it[1].link, "a deleted entry is on no list");
	tally_list_del(&it[0].link);
	tally_list_del(&it[2].link);
	tally_list_del(&it[3].link);
	ok(tally_list_empty(&head), "empty again after every del");
	return done_testing();
}
