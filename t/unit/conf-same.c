/* SPDX-License-Identifier: MIT */
/*
 * t/unit/conf-same.c - when does a reload keep an instance?
 *
 * tally_conf_decl_same() decides whether the running instance of a
 * declaration goes on (with its state) or is replaced: every difference
 * that changes what the instance does must say "different", and what does
 * not (where the text is, the order of a group's keys, a global interval
 * that changed to the value an instance has of its own) must say "same".
 */
#include "config.h"

#include <string.h>

#include <libconfig.h>

#include "../../core/core-internal.h"
#include "tap.h"

static const struct tally_plugin plugin_a = { .name = "a" };
static const struct tally_plugin plugin_b = { .name = "b" };

struct side {
	config_t cfg;
	struct tally_conf conf;
	struct tally_conf_decl decl;
};

/* Parse @text, whose group "x" is the declaration of instance "x". */
static int side_init(struct side *s, const char *text, double global_iv)
{
	memset(s, 0, sizeof(*s));
	config_init(&s->cfg);
	if (config_read_string(&s->cfg, text) != CONFIG_TRUE) {
		diag("parse error: %s: %s", config_error_text(&s->cfg), text);
		return -1;
	}
	s->conf.interval = global_iv;
	s->decl = (struct tally_conf_decl){
		.name = "x",
		.kind = TALLY_KIND_INPUT,
		.plugin = &plugin_a,
		.setting = config_lookup(&s->cfg, "x"),
		.queue_size = 1024,
	};
	return s->decl.setting ? 0 : -1;
}

static void same(const char *a, const char *b, int want, const char *what)
{
	struct side x, y;

	if (side_init(&x, a, 10) < 0 || side_init(&y, b, 10) < 0) {
		ok(0, "%s: parse", what);
	} else {
		ok(tally_conf_decl_same(&x.conf, &x.decl, &y.conf, &y.decl) ==
			   want &&
			   tally_conf_decl_same(&y.conf, &y.decl, &x.conf,
						&x.decl) == want,
		   "%s: %s", what, want ? "same" : "different");
	}
	config_destroy(&x.cfg);
	config_destroy(&y.cfg);
}

int main(void)
{
	struct side x, y;

	plan(NO_PLAN);
	same("x = { plugin = \"a\"; n = 1; };",
	     "x = { plugin = \"a\"; n = 1; };", 1, "identical text");
	same("x = { plugin = \"a\"; n = 1; };",
	     "\n\n# moved\nx = {\n plugin = \"a\";\n n = 1;\n};", 1,
	     "other lines and layout");
	same("x = { plugin = \"a\"; n = 1; s = \"v\"; };",
	     "x = { s = \"v\"; n = 1; plugin = \"a\"; };", 1,
	     "group keys in another order");
	same("x = { plugin = \"a\"; n = 1; };",
	     "x = { plugin = \"a\"; n = 2; };", 0, "an int changed");
	same("x = { plugin = \"a\"; n = 1; };",
	     "x = { plugin = \"a\"; n = 1L; };", 0,
	     "int and int64 (kept apart: replacing is safe)");
	same("x = { plugin = \"a\"; d = 0.5; };",
	     "x = { plugin = \"a\"; d = 0.25; };", 0, "a float changed");
	same("x = { plugin = \"a\"; b = true; };",
	     "x = { plugin = \"a\"; b = false; };", 0, "a bool changed");
	same("x = { plugin = \"a\"; s = \"v\"; };",
	     "x = { plugin = \"a\"; s = \"V\"; };", 0, "a string changed");
	same("x = { plugin = \"a\"; };", "x = { plugin = \"a\"; n = 1; };", 0,
	     "a key added");
	same("x = { plugin = \"a\"; n = 1; };",
	     "x = { plugin = \"a\"; m = 1; };", 0, "a key renamed");
	same("x = { plugin = \"a\"; l = [\"a\", \"b\"]; };",
	     "x = { plugin = \"a\"; l = [\"a\", \"b\"]; };", 1, "same list");
	same("x = { plugin = \"a\"; l = [\"a\", \"b\"]; };",
	     "x = { plugin = \"a\"; l = [\"b\", \"a\"]; };", 0,
	     "list in another order (order can matter: include lists)");
	same("x = { plugin = \"a\"; l = [\"a\"]; };",
	     "x = { plugin = \"a\"; l = [\"a\", \"b\"]; };", 0,
	     "list grew");
	same("x = { plugin = \"a\"; g = { k = 1; j = (1, \"s\"); }; };",
	     "x = { plugin = \"a\"; g = { j = (1, \"s\"); k = 1; }; };", 1,
	     "nested group and list");
	same("x = { plugin = \"a\"; g = { k = 1; j = (1, \"s\"); }; };",
	     "x = { plugin = \"a\"; g = { k = 1; j = (1, \"t\"); }; };", 0,
	     "nested list changed");

	/* what is outside the settings */
	if (side_init(&x, "x = { plugin = \"a\"; };", 10) == 0 &&
	    side_init(&y, "x = { plugin = \"a\"; interval = 10.0; };", 10) ==
		    0) {
		y.decl.interval = 10;
		ok(!tally_conf_decl_same(&x.conf, &x.decl, &y.conf, &y.decl),
		   "interval written out: the settings differ (replaced)");
		config_destroy(&y.cfg);
	}
	config_destroy(&x.cfg);
	if (side_init(&x, "x = { plugin = \"a\"; };", 10) == 0 &&
	    side_init(&y, "x = { plugin = \"a\"; };", 5) == 0) {
		ok(!tally_conf_decl_same(&x.conf, &x.decl, &y.conf, &y.decl),
		   "global interval changed: an input without its own is "
		   "replaced");
		y.decl.interval = 10;
		ok(tally_conf_decl_same(&x.conf, &x.decl, &y.conf, &y.decl),
		   "same effective interval: same");
		y.decl.interval = 0;
		y.conf.interval = 10;
		y.decl.plugin = &plugin_b;
		ok(!tally_conf_decl_same(&x.conf, &x.decl, &y.conf, &y.decl),
		   "another plugin: different");
		y.decl.plugin = &plugin_a;
		y.decl.queue_size = 10;
		ok(!tally_conf_decl_same(&x.conf, &x.decl, &y.conf, &y.decl),
		   "another queue_size: different");
		y.decl.queue_size = 1024;
		y.decl.queue_records = 10;
		ok(!tally_conf_decl_same(&x.conf, &x.decl, &y.conf, &y.decl),
		   "another queue_records: different");
		y.decl.queue_records = 0;
		y.decl.kind = TALLY_KIND_OUTPUT;
		ok(!tally_conf_decl_same(&x.conf, &x.decl, &y.conf, &y.decl),
		   "another kind: different");
		y.decl.kind = TALLY_KIND_INPUT;
		y.decl.name = "z";
		ok(!tally_conf_decl_same(&x.conf, &x.decl, &y.conf, &y.decl),
		   "another name: different");
		config_destroy(&y.cfg);
	}
	config_destroy(&x.cfg);
	return done_testing();
}
