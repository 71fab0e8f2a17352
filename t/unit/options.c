/* SPDX-License-Identifier: MIT */
/* t/unit/options.c - option tables applied from libconfig settings */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <libconfig.h>

#include "../../core/core-internal.h"
#include "tap.h"

struct opts {
	char *root;
	int64_t count;
	double ratio;
	bool flag;
	struct tally_strlist devs;
	int mode;
	struct tally_regexlist match;
};

static const char *const modes[] = { "innermost", "outermost", NULL };

static const struct tally_option table[] = {
	TALLY_OPT_STRING("root", struct opts, root, "/proc", "root dir"),
	TALLY_OPT_INT("count", struct opts, count, "3", 1, 10, "count"),
	TALLY_OPT_DOUBLE("ratio", struct opts, ratio, "0.5", 0, 1, "ratio"),
	TALLY_OPT_BOOL("flag", struct opts, flag, "true", "flag"),
	TALLY_OPT_LIST("devs", struct opts, devs, "eth0,ib0", "devices"),
	TALLY_OPT_ENUM("mode", struct opts, mode, "outermost", modes, "mode"),
	TALLY_OPT_REGEXLIST("match", struct opts, match, "^lo$", "devices"),
	TALLY_OPT_END,
};

/* Apply the setting @key of @text to @o; returns tally_options_set(). */
static int apply(struct opts *o, const char *text, const char *key)
{
	config_t cfg;
	int r;

	config_init(&cfg);
	if (config_read_string(&cfg, text) != CONFIG_TRUE) {
		config_destroy(&cfg);
		return -2;
	}
	r = tally_options_set(tally_options_find(table, key), o,
			      config_lookup(&cfg, key), "test.conf", 1,
			      "inputs.t");
	config_destroy(&cfg);
	return r;
}

int main(void)
{
	static const struct {
		const char *a, *b;
		unsigned d;
	} dist[] = {
		{ "interval", "interval", 0 }, { "intervl", "interval", 1 },
		{ "rooot", "root", 1 },	       { "exlude", "exclude", 1 },
		{ "listen", "lisetn", 2 },     { "", "abc", 3 },
		{ NULL, NULL, 0 },
	};
	struct opts o = { 0 };

	plan(NO_PLAN);

	for (int i = 0; dist[i].a; i++)
		cmp_ok(tally_edit_distance(dist[i].a, dist[i].b), "==",
		       dist[i].d, "distance %s -> %s", dist[i].a, dist[i].b);

	ok(tally_options_defaults(table, &o, "t") == 0, "defaults apply");
	is(o.root, "/proc", "string default");
	cmp_ok(o.count, "==", 3, "int default");
	cmp_ok(o.ratio, "==", 0.5, "double default");
	ok(o.flag, "bool default");
	cmp_ok(o.devs.n, "==", 2, "list default has two entries");
	is(o.devs.v[1], "ib0", "list default second entry");
	cmp_ok(o.mode, "==", 1, "enum default index");

	ok(apply(&o, "root = \"/host/proc\";", "root") == 0, "set a string");
	is(o.root, "/host/proc", "string replaced");
	ok(apply(&o, "count = 7;", "count") == 0, "set an int");
	cmp_ok(o.count, "==", 7, "int value");
	errno = 0;
	ok(apply(&o, "count = 11;", "count") < 0 && errno == ERANGE,
	   "int above max refused with ERANGE");
	cmp_ok(o.count, "==", 7, "refused value leaves the field alone");
	ok(apply(&o, "count = \"7\";", "count") < 0 && errno == EINVAL,
	   "string for an int refused with EINVAL");
	ok(apply(&o, "ratio = 1;", "ratio") == 0, "an integer for a double");
	cmp_ok(o.ratio, "==", 1.0, "double from integer");
	ok(apply(&o, "ratio = 1.5;", "ratio") < 0, "double above max refused");
	ok(apply(&o, "flag = false;", "flag") == 0 && !o.flag, "set a bool");
	ok(apply(&o, "flag = 1;", "flag") < 0, "an int for a bool refused");
	ok(apply(&o, "devs = \"lo\";", "devs") == 0, "a string as a list");
	ok(o.devs.n == 1 && !strcmp(o.devs.v[0], "lo"), "one-element list");
	ok(apply(&o, "devs = [\"a\", \"b\", \"c\"];", "devs") == 0,
	   "an array of strings");
	cmp_ok(o.devs.n, "==", 3, "three elements");
	ok(tally_strlist_contains(&o.devs, "b"), "list contains b");
	ok(!tally_strlist_contains(&o.devs, "d"), "list lacks d");
	ok(apply(&o, "devs = [1, 2];", "devs") < 0, "a list of ints refused");
	cmp_ok(o.devs.n, "==", 3, "refused list leaves the old one");
	ok(apply(&o, "mode = \"innermost\";", "mode") == 0 && o.mode == 0,
	   "enum by name");
	ok(apply(&o, "mode = \"middle\";", "mode") < 0 && errno == EINVAL,
	   "unknown enum choice refused");

	ok(tally_regexlist_match(&o.match, "lo") &&
		   !tally_regexlist_match(&o.match, "lo0"),
	   "regex list default compiled and anchored");
	ok(apply(&o, "match = [\"^eth[0-9]+$\", \"^ib\"];", "match") == 0,
	   "set a regex list");
	ok(tally_regexlist_match(&o.match, "eth12") &&
		   tally_regexlist_match(&o.match, "ib0") &&
		   !tally_regexlist_match(&o.match, "lo"),
	   "the new list replaced the default");
	errno = 0;
	ok(apply(&o, "match = [\"ok\", \"(unclosed\"];", "match") < 0 &&
		   errno == EINVAL,
	   "a bad regular expression is a configuration error");
	ok(tally_regexlist_match(&o.match, "eth12") && o.match.n == 2,
	   "a refused list leaves the old one");

	tally_options_free(table, &o);
	ok(o.root == NULL && o.devs.n == 0 && o.match.n == 0,
	   "free clears strings and lists");
	return done_testing();
}
