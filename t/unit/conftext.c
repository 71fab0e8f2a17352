/* SPDX-License-Identifier: MIT */
/*
 * t/unit/conftext.c - a configuration's text: @include expanded (absolute
 * paths too), lines mapped back to their files, values as written, and the
 * name behind libconfig's "duplicate setting name"
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libconfig.h>

#include "../../core/core-internal.h"
#include "tap.h"

static char dir[PATH_MAX];

static void write_file(const char *name, const char *text)
{
	char path[PATH_MAX * 2];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		bail_out("write %s", path);
}

/* "file:line" of line @line of @t */
static const char *where(const struct tally_conf_text *t, int line)
{
	static char buf[PATH_MAX * 2];
	const char *file;
	int fl;

	tally_conf_text_where(t, line, &file, &fl);
	/* relative to the test's directory, to compare */
	if (!strncmp(file, dir, strlen(dir)))
		file += strlen(dir) + 1;
	snprintf(buf, sizeof(buf), "%s:%d", file, fl);
	return buf;
}

/* The line of @t that holds @needle (first one). */
static int line_of(const struct tally_conf_text *t, const char *needle)
{
	const char *p = strstr(t->text, needle);
	int line = 1;

	if (!p)
		return -1;
	for (const char *q = t->text; q < p; q++)
		line += *q == '\n';
	return line;
}

static void test_includes(void)
{
	struct tally_conf_text t;
	char path[PATH_MAX * 2], inc[PATH_MAX * 2];
	config_t cfg;
	int x;

	snprintf(path, sizeof(path), "%s/sub", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/abs", dir);
	mkdir(path, 0700);
	/* relative includes: from the including file's directory */
	write_file("sub/in.conf", "a = 1;\n@include \"more.conf\"\nb = 2;\n");
	write_file("sub/more.conf", "c = 3;"); /* no final newline */
	write_file("abs/out.conf", "d = 4;\ne = 5;\n");
	snprintf(inc, sizeof(inc),
		 "# main\n"
		 "g = {\n"
		 "  @include \"sub/in.conf\" // after the directive\n"
		 "  f = 6;\n"
		 "};\n"
		 "@include \"%s/abs/out.conf\"\n"
		 "/* @include \"nowhere.conf\" */ h = \"@include x\";\n"
		 "last = 7;\n",
		 dir);
	write_file("main.conf", inc);
	snprintf(path, sizeof(path), "%s/main.conf", dir);

	ok(tally_conf_text_load(&t, path) == 0, "main.conf and its includes");
	config_init(&cfg);
	ok(config_read_string(&cfg, t.text) == CONFIG_TRUE,
	   "libconfig parses the expanded text");
	ok(config_lookup_int(&cfg, "g.c", &x) && x == 3,
	   "nested relative include (sub/more.conf from sub/in.conf)");
	ok(config_lookup_int(&cfg, "d", &x) && x == 4, "absolute include");
	ok(config_lookup_int(&cfg, "last", &x) && x == 7, "text after them");
	config_destroy(&cfg);
	is(where(&t, line_of(&t, "a = 1")), "sub/in.conf:1", "line in include");
	is(where(&t, line_of(&t, "c = 3")), "sub/more.conf:1",
	   "line in nested include");
	is(where(&t, line_of(&t, "b = 2")), "sub/in.conf:3",
	   "after a nested include: the including file again");
	is(where(&t, line_of(&t, "after the directive")), "main.conf:3",
	   "the rest of a directive's line: the directive's line");
	is(where(&t, line_of(&t, "f = 6")), "main.conf:4", "main file again");
	is(where(&t, line_of(&t, "e = 5")), "abs/out.conf:2",
	   "line of an absolute include");
	is(where(&t, line_of(&t, "last = 7")), "main.conf:8",
	   "last line of main");
	ok(strstr(t.text, "/* @include \"nowhere.conf\" */") != NULL &&
		   strstr(t.text, "\"@include x\"") != NULL,
	   "no directive in a comment or a string");
	tally_conf_text_free(&t);

	write_file("miss.conf", "a = 1;\n@include \"nothere.conf\"\n");
	snprintf(path, sizeof(path), "%s/miss.conf", dir);
	errno = 0;
	ok(tally_conf_text_load(&t, path) < 0 && errno == ENOENT &&
		   t.text == NULL,
	   "a missing include fails the file");
	write_file("loop.conf", "@include \"loop.conf\"\n");
	snprintf(path, sizeof(path), "%s/loop.conf", dir);
	errno = 0;
	ok(tally_conf_text_load(&t, path) < 0 && errno == ELOOP,
	   "an include loop ends at 10 levels");
	write_file("dir.conf", "@include \"sub\"\n");
	snprintf(path, sizeof(path), "%s/dir.conf", dir);
	errno = 0;
	ok(tally_conf_text_load(&t, path) < 0 && errno == EISDIR,
	   "a directory is no include");
	/* opening a FIFO to read would wait for a writer: never done */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	if (mkfifo(path, 0600) < 0)
		bail_out("mkfifo: %s", strerror(errno));
	write_file("fifo.conf", "@include \"fifo\"\n");
	snprintf(path, sizeof(path), "%s/fifo.conf", dir);
	errno = 0;
	ok(tally_conf_text_load(&t, path) < 0 && errno == EINVAL,
	   "a FIFO is no include, and does not block");
}

/* The literal of setting @path of @text, or "(none)". */
static const char *literal(const char *text, const char *path)
{
	static char buf[128];
	struct tally_conf_text t;
	config_setting_t *s;
	config_t cfg;

	config_init(&cfg);
	snprintf(buf, sizeof(buf), "(none)");
	if (tally_conf_text_parse(&t, "t.conf", text, strlen(text)) < 0)
		bail_out("parse %s", text);
	if (config_read_string(&cfg, t.text) != CONFIG_TRUE)
		bail_out("libconfig: %s", config_error_text(&cfg));
	s = config_lookup(&cfg, path);
	if (!s)
		bail_out("no %s", path);
	if (tally_conf_text_literal(&t, s, buf, sizeof(buf)) < 0)
		snprintf(buf, sizeof(buf), "(none)");
	tally_conf_text_free(&t);
	config_destroy(&cfg);
	return buf;
}

static void test_literals(void)
{
	static const struct {
		const char *text, *path, *want;
	} cases[] = {
		{ "a = 99999999999999999999;", "a", "99999999999999999999" },
		{ "a = 1; b = 4294967296; c = 3;", "b", "4294967296" },
		{ "g = { a = 1; h = { a = 2; b = 0x10L; }; };", "g.h.b",
		  "0x10L" },
		{ "g : { a = 1 }, b = -5", "b", "-5" },
		{ "x = [1, 2, 4294967296];", "x.[2]", "4294967296" },
		{ "x = (1,\n  \"s\" \"t\",\n  3);", "x.[2]", "3" },
		{ "x = ( { a = 1; }, { a = 2; b = 7; } );", "x.[1].b", "7" },
		{ "a =\n  # a comment\n  /* another */ 12;", "a", "12" },
		{ "s = \"a;b\"; t = 5;", "t", "5" },
		{ "e = []; f = 1.5e3;", "f", "1.5e3" },
		{ "b = true;", "b", "true" },
		{ NULL, NULL, NULL },
	};

	for (int i = 0; cases[i].text; i++)
		is(literal(cases[i].text, cases[i].path), cases[i].want,
		   "%s of %s", cases[i].path, cases[i].text);
}

static void test_duplicates(void)
{
	static const struct {
		const char *text, *name;
		int line, first;
	} cases[] = {
		{ "a = 1;\nb = 2;\na = 3;\n", "a", 3, 1 },
		{ "inputs = {\n a = { plugin = \"x\";\n  count = 1;\n"
		  "  count = 2; };\n};\n",
		  "inputs.a.count", 4, 3 },
		{ "g = { x = 1; };\nh = { x = 1; y = 2; y = 3; };\n", "h.y", 2,
		  2 },
		{ "l = ( { a = 1; }, { a = 1; b = 1;\n b = 2; } );\n", "l[1].b",
		  2, 1 },
		{ NULL, NULL, 0, 0 },
	};
	struct tally_conf_text t;
	char name[64];
	int line, first;

	for (int i = 0; cases[i].text; i++) {
		if (tally_conf_text_parse(&t, "t.conf", cases[i].text,
					  strlen(cases[i].text)) < 0)
			bail_out("parse");
		ok(tally_conf_text_duplicate(&t, name, sizeof(name), &line,
					     &first) == 0,
		   "a duplicate in: %s", cases[i].text);
		is(name, cases[i].name, "its path");
		cmp_ok(line, "==", cases[i].line, "its line");
		cmp_ok(first, "==", cases[i].first, "the first one's line");
		tally_conf_text_free(&t);
	}
	tally_conf_text_parse(&t, "t.conf", "a = { x = 1; }; b = { x = 1; };",
			      31);
	errno = 0;
	ok(tally_conf_text_duplicate(&t, name, sizeof(name), &line, &first) <
			   0 &&
		   errno == ENOENT,
	   "the same name in two groups is no duplicate");
	tally_conf_text_free(&t);
}

int main(void)
{
	char tmpl[] = "/tmp/tally-conftext-XXXXXX";
	char cmd[PATH_MAX + 16];

	plan(NO_PLAN);
	/* the messages of failures go to stderr, out of the TAP stream */
	tally_log_setup(TALLY_LOG_STDERR, LOG_INFO);
	if (!mkdtemp(tmpl))
		bail_out("mkdtemp: %s", strerror(errno));
	snprintf(dir, sizeof(dir), "%s", tmpl);
	test_includes();
	test_literals();
	test_duplicates();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		diag("could not remove %s", dir);
	return done_testing();
}
