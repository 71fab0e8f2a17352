/* SPDX-License-Identifier: MIT */
/* t/unit/labels.c - interned label sets */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <tally/labels.h>

#include "tap.h"

static void *labels_churn(void *arg)
{
	char v[16];

	/* intern and drop overlapping sets from several threads at once */
	for (int i = 0; i < 20000; i++) {
		struct tally_labels *a, *b;

		snprintf(v, sizeof(v), "%d", i % 50);
		a = tally_labels_newv("cpu", v, "mode", "user", NULL);
		b = tally_labels_newv("mode", "user", "cpu", v, NULL);
		if (a != b || !a)
			*(int *)arg = 1;
		tally_labels_unref(a);
		tally_labels_unref(b);
	}
	return NULL;
}

int main(void)
{
	struct tally_label pairs[] = { { "mode", "user" }, { "cpu", "3" } };
	struct tally_label dup[] = { { "a", "1" }, { "a", "2" } };
	struct tally_labels *a, *b, *c, *d;
	pthread_t th[4];
	int bad = 0;

	plan(NO_PLAN);

	a = tally_labels_new(pairs, 2);
	b = tally_labels_newv("cpu", "3", "mode", "user", NULL);
	ok(a && a == b, "equal sets in any order are one pointer");
	cmp_ok(tally_labels_count(a), "==", 2, "two pairs");
	is(tally_labels_at(a, 0)->key, "cpu", "pairs sorted by key: first");
	is(tally_labels_at(a, 1)->key, "mode", "pairs sorted by key: second");
	ok(tally_labels_at(a, 2) == NULL, "out of range pair is NULL");
	is(tally_labels_get(a, "mode"), "user", "get finds a value");
	ok(tally_labels_get(a, "nope") == NULL, "get of a missing key");

	c = tally_labels_with(a, "mode", "system");
	is(tally_labels_get(c, "mode"), "system", "with() replaces a value");
	is(tally_labels_get(a, "mode"), "user", "with() leaves the base alone");
	d = tally_labels_with(c, "mode", "user");
	ok(d == a, "with() back to the original gives the same set");

	errno = 0;
	ok(tally_labels_new(dup, 2) == NULL && errno == EINVAL,
	   "duplicate key refused with EINVAL");
	errno = 0;
	ok(tally_labels_newv("", "x", NULL) == NULL && errno == EINVAL,
	   "empty key refused with EINVAL");
	ok(tally_labels_new(NULL, 0) == tally_labels_empty(),
	   "no pairs is the empty set");
	cmp_ok(tally_labels_count(tally_labels_empty()), "==", 0,
	       "empty set has no pairs");
	ok(tally_labels_hash(a) != tally_labels_hash(c),
	   "different sets hash differently");

	/* a set survives while referenced, and is re-created after */
	tally_labels_unref(b);
	tally_labels_unref(d);
	is(tally_labels_get(a, "cpu"), "3", "still valid while referenced");
	tally_labels_unref(a);
	a = tally_labels_newv("x", "1", NULL);
	is(tally_labels_get(a, "x"), "1", "a fresh set after all refs went");
	tally_labels_unref(a);
	tally_labels_unref(c);

	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, labels_churn, &bad);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	ok(!bad, "4 threads interning the same sets always agree");

	return done_testing();
}
