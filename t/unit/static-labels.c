/* SPDX-License-Identifier: MIT */
/*
 * t/unit/static-labels.c - the helpers behind static labels
 *
 * tally_static_labels() composes what tally_output_labels() hands an
 * output: its own labels over global.labels, the host label of push
 * outputs unless set, "" removing a label. tally_labels_merge() and
 * tally_label_merge() are how outputs add them without overriding a
 * record's own labels.
 */
#include "config.h"

#include <string.h>

#include <tally/labels.h>

#include "../../core/core-internal.h"
#include "tap.h"

/* "k=v,k=v" of a set, for comparisons */
static const char *text(const struct tally_labels *ls)
{
	static char buf[512];
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < tally_labels_count(ls); i++) {
		const struct tally_label *l = tally_labels_at(ls, i);

		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s=%s",
					i ? "," : "", l->key, l->value);
	}
	return buf;
}

static void test_merge(void)
{
	struct tally_labels *rec =
		tally_labels_newv("cpu", "0", "host", "a", NULL);
	struct tally_labels *st =
		tally_labels_newv("host", "n17", "cluster", "frontier", NULL);
	struct tally_labels *m, *m2;
	struct tally_label a[] = { { "rank", "3" },
				   { "region", "solve" },
				   { "trace", "T" } };
	struct tally_label out[8];
	size_t n;

	m = tally_labels_merge(rec, st);
	is(text(m), "cluster=frontier,cpu=0,host=a",
	   "merge: the record's own host wins, cluster added");
	m2 = tally_labels_merge(rec, st);
	ok(m == m2, "merged sets are interned");
	tally_labels_unref(m2);
	tally_labels_unref(m);
	m = tally_labels_merge(rec, NULL);
	ok(m == rec, "nothing to add: the same set");
	tally_labels_unref(m);
	m = tally_labels_merge(NULL, st);
	ok(m == st, "to the empty set: the static set itself");
	tally_labels_unref(m);
	m = tally_labels_merge(NULL, NULL);
	ok(m == tally_labels_empty(), "both empty: the empty set");
	tally_labels_unref(m);

	n = tally_label_merge(a, 3, tally_labels_pairs(st),
			      tally_labels_count(st), out);
	cmp_ok(n, "==", 5, "pairs: 3 + 2");
	ok(!strcmp(out[0].key, "cluster") && !strcmp(out[1].key, "host") &&
		   !strcmp(out[2].key, "rank") && !strcmp(out[4].key, "trace"),
	   "pairs merged in key order");
	n = tally_label_merge(a, 3, (struct tally_label[]){ { "rank", "9" } },
			      1, out);
	ok(n == 3 && !strcmp(out[0].value, "3"), "the first array wins a key");
	ok(tally_labels_pairs(tally_labels_empty()) == NULL,
	   "the empty set has no pairs array");
	tally_labels_unref(rec);
	tally_labels_unref(st);
}

static void test_compose(void)
{
	struct tally_labels *global =
		tally_labels_newv("cluster", "frontier", "site", "ornl", NULL);
	struct tally_labels *own =
		tally_labels_newv("site", "olcf", "tier", "gold", NULL);
	struct tally_labels *nohost = tally_labels_newv("host", "", NULL);
	struct tally_labels *ls;

	ls = tally_static_labels(global, NULL, NULL, "n17");
	is(text(ls), "cluster=frontier,site=ornl",
	   "a scraped output: global.labels only, no host");
	tally_labels_unref(ls);
	ls = tally_static_labels(global, own, NULL, "n17");
	is(text(ls), "cluster=frontier,site=olcf,tier=gold",
	   "the output's labels override global ones");
	tally_labels_unref(ls);
	ls = tally_static_labels(global, own, "host", "n17");
	is(text(ls), "cluster=frontier,host=n17,site=olcf,tier=gold",
	   "a push output adds host");
	tally_labels_unref(ls);
	ls = tally_static_labels(NULL, NULL, "instance", "n17");
	is(text(ls), "instance=n17", "remote write's key is instance");
	tally_labels_unref(ls);
	ls = tally_static_labels(global, nohost, "host", "n17");
	is(text(ls), "cluster=frontier,site=ornl",
	   "host = \"\" turns the host label off");
	tally_labels_unref(ls);
	ls = tally_static_labels(nohost, NULL, NULL, NULL);
	ok(ls == tally_labels_empty(), "only empty values: the empty set");
	tally_labels_unref(ls);
	ls = tally_static_labels(NULL, NULL, NULL, NULL);
	ok(ls == tally_labels_empty(), "nothing configured: the empty set");
	tally_labels_unref(ls);
	tally_labels_unref(global);
	tally_labels_unref(own);
	tally_labels_unref(nohost);
}

int main(void)
{
	plan(NO_PLAN);
	test_merge();
	test_compose();
	return done_testing();
}
