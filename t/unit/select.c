/* SPDX-License-Identifier: MIT */
/*
 * t/unit/select.c - the select filter's rules: keep, drop, rename
 */
#include "config.h"

#include <errno.h>
#include <regex.h>
#include <string.h>

#include <tally/record.h>

#include "../../plugins/filter/select/rules.h"
#include "tap.h"

static regex_t re[2];
static char *src[2];

static struct tally_regexlist relist(size_t n, regex_t *r, const char *a,
				     const char *b)
{
	const char *s[] = { a, b };

	for (size_t i = 0; i < n; i++)
		regcomp(&r[i], s[i], REG_EXTENDED | REG_NOSUB);
	return (struct tally_regexlist){ .n = n, .src = src, .re = r };
}

#define STRLIST(...) \
	(&(struct tally_strlist){ .n = sizeof((char *[]){ __VA_ARGS__ }) / \
				       sizeof(char *),                      \
				  .v = (char *[]){ __VA_ARGS__ } })

int main(void)
{
	struct tally_labels *prod = tally_labels_newv("env", "prod", "pod",
						      "a1", NULL);
	struct tally_labels *dev = tally_labels_newv("env", "dev", NULL);
	struct tally_labels *add = tally_labels_newv("cluster", "c1", "env",
						     "x", NULL);
	struct tally_labels *want, *ls;
	struct tally_regexlist keep = relist(1, re, "^req\\.", NULL);
	struct tally_regexlist drop = relist(1, re + 1, "debug", NULL);
	struct tally_batch *b = tally_batch_new();
	struct sel_opts o = {
		.keep_names = &keep,
		.drop_names = &drop,
		.keep_if = STRLIST("env=prod|dev"),
		.drop_if = STRLIST("pod=b.*"),
		.rename = STRLIST("req.count=requests_total"),
		.drop_labels = STRLIST("pod"),
		.rename_labels = STRLIST("env=environment"),
		.add_labels = add,
	};
	struct sel_rules *r;
	const char *name;
	char err[128];

	plan(NO_PLAN);
	tally_batch_add_metric(b, TALLY_COUNTER, "req.count", NULL, prod, 1, 1);
	tally_batch_add_metric(b, TALLY_COUNTER, "other", NULL, prod, 1, 1);
	tally_batch_add_metric(b, TALLY_COUNTER, "req.debug", NULL, prod, 1, 1);
	tally_batch_add_metric(b, TALLY_COUNTER, "req.x", NULL, NULL, 1, 1);
	tally_batch_add_metric(b, TALLY_COUNTER, "req.y", NULL, dev, 1, 1);
	ls = tally_labels_newv("env", "prod", "pod", "b2", NULL);
	tally_batch_add_metric(b, TALLY_COUNTER, "req.z", NULL, ls, 1, 1);
	tally_labels_unref(ls);

	r = sel_rules_new(&o, err, sizeof(err));
	ok(r != NULL, "rules compile");
	ok(sel_rules_rewrites(r), "these rules rewrite");
	ok(sel_rules_keep(r, tally_batch_at(b, 0)), "req.count kept");
	ok(!sel_rules_keep(r, tally_batch_at(b, 1)),
	   "other: no keep_names match, dropped");
	ok(!sel_rules_keep(r, tally_batch_at(b, 2)), "req.debug: drop_names");
	ok(!sel_rules_keep(r, tally_batch_at(b, 3)),
	   "req.x: no env label, keep_if fails");
	ok(sel_rules_keep(r, tally_batch_at(b, 4)), "req.y: env=dev matches");
	ok(!sel_rules_keep(r, tally_batch_at(b, 5)), "req.z: pod=b2 dropped");

	ok(sel_rules_rewrite(r, &tally_batch_at(b, 0)->metric, &name, &ls) ==
		   0,
	   "rewrite req.count");
	is(name, "requests_total", "renamed");
	want = tally_labels_newv("cluster", "c1", "env", "x", "environment",
				 "prod", NULL);
	ok(ls == want,
	   "pod dropped, env renamed to environment, cluster and env added");
	tally_labels_unref(ls);
	tally_labels_unref(want);
	ok(sel_rules_rewrite(r, &tally_batch_at(b, 4)->metric, &name, &ls) ==
		   0,
	   "rewrite req.y");
	is(name, "req.y", "not renamed");
	tally_labels_unref(ls);
	sel_rules_free(r);

	o = (struct sel_opts){ .keep_labels = STRLIST("env") };
	r = sel_rules_new(&o, err, sizeof(err));
	sel_rules_rewrite(r, &tally_batch_at(b, 0)->metric, &name, &ls);
	want = tally_labels_newv("env", "prod", NULL);
	ok(ls == want, "keep_labels: only env left");
	tally_labels_unref(ls);
	tally_labels_unref(want);
	sel_rules_free(r);

	o = (struct sel_opts){ 0 };
	r = sel_rules_new(&o, err, sizeof(err));
	ok(!sel_rules_rewrites(r) && sel_rules_keep(r, tally_batch_at(b, 1)),
	   "no rules: everything kept as it is");
	sel_rules_free(r);

	o = (struct sel_opts){ .rename = STRLIST("nothing") };
	errno = 0;
	ok(!sel_rules_new(&o, err, sizeof(err)) && errno == EINVAL,
	   "rename without '=' refused");
	is(err, "rename: \"nothing\": write KEY=NEW", "message");
	o = (struct sel_opts){ .keep_if = STRLIST("env=(") };
	ok(!sel_rules_new(&o, err, sizeof(err)) && errno == EINVAL,
	   "a bad regex refused");
	is(err,
	   "keep_if: \"env=(\": not a valid regular expression: Unmatched ( "
	   "or \\(",
	   "message");
	o = (struct sel_opts){ .keep_if = STRLIST("env=(?i)prod") };
	ok(!sel_rules_new(&o, err, sizeof(err)) && errno == EINVAL,
	   "a Go flag group refused");
	ok(strstr(err, "(? groups and flags") != NULL, "saying why");

	tally_batch_unref(b);
	tally_labels_unref(prod);
	tally_labels_unref(dev);
	tally_labels_unref(add);
	regfree(&re[0]);
	regfree(&re[1]);
	done_testing();
}
