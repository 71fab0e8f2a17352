/* SPDX-License-Identifier: MIT */
/*
 * t/unit/tap.h - a small TAP (Test Anything Protocol) library for C tests
 *
 * Every C unit test in t/unit/ is a program that prints TAP version 12 on
 * stdout; `make check` runs it through automake's tap-driver.sh, which
 * counts each "ok"/"not ok" line, honours "# SKIP", checks the plan and
 * treats "Bail out!" as an error. A test reads as a specification:
 *
 *	int main(void)
 *	{
 *		plan(NO_PLAN);
 *		ok(parse("a=1", &kv) == 0, "parses a=1");
 *		is(kv.key, "a", "key");
 *		cmp_ok(kv.value, "==", 1, "value");
 *		return done_testing();
 *	}
 *
 * Output goes to stdout, line-buffered, so the TAP lines and diagnostics
 * stay in order with the code under test's own output in the test log.
 * Descriptions are printf formats; a '#' in a description is escaped so it
 * cannot be mistaken for a SKIP/TODO directive.
 *
 * Thread-safety: ok(), is(), cmp_ok(), diag() and skip() may be called
 * from several threads (numbering is serialized by a mutex); plan() and
 * done_testing() belong to the main thread.
 */
#ifndef TALLY_TAP_H
#define TALLY_TAP_H

#ifdef __cplusplus
extern "C" {
#endif

/* plan(NO_PLAN): the number of tests is printed by done_testing(). */
#define NO_PLAN (-1)

/**
 * plan() - announce how many tests will run
 * @n: number of tests, or NO_PLAN to print the plan at the end
 *
 * Call once, before the first test. With a number, done_testing() fails
 * when a different number of tests ran. plan(0) is not allowed: use
 * skip_all() to skip a whole program.
 */
void plan(int n);

/**
 * skip_all() - skip the whole program with a reason, and exit 0
 * @fmt: printf format of the reason, e.g. "no /proc/pressure on this kernel"
 *
 * Call instead of plan(). Prints "1..0 # SKIP reason".
 */
void skip_all(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/**
 * ok() - one test: passes when @cond is true
 * @cond: the assertion (any scalar expression)
 * @...:  printf format describing what is tested, then its arguments
 *
 * On failure the file and line are printed as a diagnostic.
 * Return: 1 if the test passed, 0 if it failed (to chain diagnostics:
 * `if (!ok(...)) diag(...)`).
 */
#define ok(cond, ...) tap_ok_(__FILE__, __LINE__, !!(cond), __VA_ARGS__)

/**
 * is() - one test: two strings are equal (strcmp)
 * @got:  the string produced by the code under test, or NULL
 * @want: the expected string, or NULL
 * @...:  printf format describing what is tested, then its arguments
 *
 * NULL-safe: two NULLs are equal, NULL and a string are not. On failure
 * both strings are printed.
 * Return: 1 if passed, 0 if failed.
 */
#define is(got, want, ...)                                                    \
	tap_is_(__FILE__, __LINE__, (got), (want), __VA_ARGS__)

/**
 * cmp_ok() - one test: compare two numbers
 * @a:   left operand, any integer or floating type
 * @op:  "==", "!=", "<", "<=", ">" or ">="
 * @b:   right operand, any integer or floating type
 * @...: printf format describing what is tested, then its arguments
 *
 * Both operands are converted to long double, which holds every int64_t,
 * uint64_t and double exactly on x86-64 (64-bit mantissa), so integers and
 * doubles compare as C would compare them. NaN compares unequal to
 * everything. An unknown @op fails the test. On failure both values are
 * printed.
 * Return: 1 if passed, 0 if failed.
 */
#define cmp_ok(a, op, b, ...)                                                 \
	tap_cmp_ok_(__FILE__, __LINE__, (long double)(a), (op),               \
		    (long double)(b), __VA_ARGS__)

/**
 * diag() - print a diagnostic line ("# ...") into the TAP stream
 * @fmt: printf format; a trailing newline is added, embedded newlines each
 *       start a new "# " line
 */
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/**
 * skip() - record @n tests as skipped
 * @n:   number of tests skipped (they count towards the plan)
 * @fmt: printf format of the reason
 *
 * Use in the branch that cannot run the tests:
 *	if (!have_ipv6) {
 *		skip(2, "no IPv6 on this host");
 *	} else {
 *		ok(...);
 *		ok(...);
 *	}
 */
void skip(int n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/**
 * done_testing() - finish: print the plan if NO_PLAN, check it otherwise
 *
 * Return: the exit status for main(): 0 when every test passed and the
 * plan was met, 1 otherwise (a summary diagnostic says why). Write
 * `return done_testing();`.
 */
int done_testing(void);

/**
 * bail_out() - abort the whole test run ("Bail out! reason"), exit 255
 * @fmt: printf format of the reason
 *
 * For a broken test environment (fixture missing, cannot fork), not for
 * a failing assertion.
 */
void bail_out(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/**
 * tap_tmpdir() - a scratch directory /tmp/PREFIX-XXXXXX for this test
 * @prefix: e.g. "tally-trace-api"
 *
 * Removed at exit, with the files in it (one level: libzmq leaves its ipc
 * socket files behind), bail_out() included; only by the process that
 * made it, so a forked child calling exit() leaves it alone. One per
 * process: a second call returns the first directory.
 * Return: the path (static storage); bails out if it cannot be made.
 */
const char *tap_tmpdir(const char *prefix);

/**
 * tap_wait_port() - the port a helper server wrote into @portfile
 * @what: the server, for the bail-out message
 *
 * Polls every 100 ms for up to 30 s (the server writes the file once it
 * listens). Return: the port; bails out if none came.
 */
unsigned tap_wait_port(const char *portfile, const char *what);

/**
 * tap_capture_stderr() - run @fn with stderr sent to a temporary file
 * Return: what it wrote, NUL-terminated (static storage, 64 KiB at most,
 * valid until the next call).
 */
char *tap_capture_stderr(void (*fn)(void));

/** tap_count() - how many times @needle occurs in @s (overlaps too) */
unsigned tap_count(const char *s, const char *needle);

/* Implementation of the macros above; call those instead. */
int tap_ok_(const char *file, int line, int cond, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
int tap_is_(const char *file, int line, const char *got, const char *want,
	    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
int tap_cmp_ok_(const char *file, int line, long double a, const char *op,
		long double b, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

#ifdef __cplusplus
}
#endif
#endif /* TALLY_TAP_H */
