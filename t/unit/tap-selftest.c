// SPDX-License-Identifier: MIT
/*
 * t/unit/tap-selftest.c - the TAP library checks what it claims to check
 *
 * Passing assertions run here directly. Failing ones run in a child (this
 * program again, with an argument) whose exact TAP output and exit status
 * are compared with what TAP and tap-driver.sh expect, so make check stays
 * green while the failure paths are still tested.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

/* Every failure path once; the expected text is below in main(). */
static int child_failures(void)
{
	plan(NO_PLAN);
	ok(1, "passes");
	ok(0, "fails # not a directive");
	is("got", "want", "strings differ");
	is(NULL, NULL, "two NULLs are equal");
	is(NULL, "x", "NULL is not a string");
	cmp_ok(3, "<", 2, "int compare");
	cmp_ok(0.5, "==", 0.25, "double compare");
	cmp_ok(1, "=~", 1, "unknown operator");
	skip(2, "no %s here", "widget");
	diag("two\nlines");
	return done_testing();
}

static int child_short_plan(void)
{
	plan(3);
	ok(1, "one");
	ok(1, "two");
	return done_testing();
}

/* Run this program with @arg; return its stdout, *status = exit status. */
static char *run_child(const char *arg, int *status)
{
	static char out[8192];
	char self[4096], cmd[4200];
	ssize_t n;
	size_t len = 0;
	FILE *p;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		bail_out("readlink /proc/self/exe failed");
	self[n] = '\0';
	snprintf(cmd, sizeof(cmd), "'%s' %s", self, arg);
	p = popen(cmd, "r");
	if (!p)
		bail_out("popen %s failed", cmd);
	while (len < sizeof(out) - 1) {
		size_t r = fread(out + len, 1, sizeof(out) - 1 - len, p);

		if (r == 0)
			break;
		len += r;
	}
	out[len] = '\0';
	*status = pclose(p);
	*status = WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
	return out;
}

int main(int argc, char **argv)
{
	static const char want_failures[] =
		"ok 1 - passes\n"
		"not ok 2 - fails \\# not a directive\n"
		"#   Failed test 'fails \\# not a directive'\n"
		"#   at " __FILE__ " line 24.\n"
		"not ok 3 - strings differ\n"
		"#   Failed test 'strings differ'\n"
		"#   at " __FILE__ " line 25.\n"
		"#          got: 'got'\n"
		"#     expected: 'want'\n"
		"ok 4 - two NULLs are equal\n"
		"not ok 5 - NULL is not a string\n"
		"#   Failed test 'NULL is not a string'\n"
		"#   at " __FILE__ " line 27.\n"
		"#          got: NULL\n"
		"#     expected: 'x'\n"
		"not ok 6 - int compare\n"
		"#   Failed test 'int compare'\n"
		"#   at " __FILE__ " line 28.\n"
		"#     3\n#         <\n#     2\n"
		"not ok 7 - double compare\n"
		"#   Failed test 'double compare'\n"
		"#   at " __FILE__ " line 29.\n"
		"#     0.5\n#         ==\n#     0.25\n"
		"not ok 8 - unknown operator\n"
		"#   Failed test 'unknown operator'\n"
		"#   at " __FILE__ " line 30.\n"
		"#     unknown operator: =~\n"
		"#     1\n#         =~\n#     1\n"
		"ok 9 # skip no widget here\n"
		"ok 10 # skip no widget here\n"
		"# two\n# lines\n"
		"1..10\n"
		"# failed 6 of 10 tests\n";
	static const char want_short[] = "1..3\n"
					 "ok 1 - one\n"
					 "ok 2 - two\n"
					 "# planned 3 tests but ran 2\n";
	const char *out;
	int status;

	if (argc == 2 && !strcmp(argv[1], "failures"))
		return child_failures();
	if (argc == 2 && !strcmp(argv[1], "short-plan"))
		return child_short_plan();

	plan(NO_PLAN);

	ok(1, "ok() passes on a true condition");
	ok(ok(1, "ok() returns 1 on a pass") == 1, "return value seen");
	is("abc", "abc", "is() on equal strings");
	is(NULL, NULL, "is() on two NULLs");
	cmp_ok(-1, "<", 0, "negative int below zero");
	cmp_ok(2.5, ">=", 2, "double against int");
	cmp_ok(UINT64_MAX, "==", UINT64_MAX, "uint64 max equals itself");
	/* A double comparison would call these equal: 2^63 + 1 rounds. */
	cmp_ok((UINT64_C(1) << 63) + 1, "!=", UINT64_C(1) << 63,
	       "uint64 compared exactly");
	cmp_ok(INT64_MIN, "<", INT64_MIN + 1, "int64 compared exactly");
	cmp_ok(0.1 + 0.2, "!=", 0.3, "doubles compared exactly");
	cmp_ok(1, "<=", 1, "<= on equal values");
	cmp_ok(2, ">", 1, ">");

	out = run_child("failures", &status);
	is(out, want_failures, "failure output is TAP with diagnostics");
	cmp_ok(status, "==", 1, "done_testing() returns 1 after failures");

	out = run_child("short-plan", &status);
	is(out, want_short, "short plan is reported");
	cmp_ok(status, "==", 1, "done_testing() returns 1 on a short plan");

	return done_testing();
}
