// SPDX-License-Identifier: MIT
/*
 * t/unit/tap.c - the TAP library of the C unit tests (see tap.h)
 *
 * Output follows TAP version 12 as automake's tap-driver.sh reads it:
 * "1..N" once, "ok N - desc" / "not ok N - desc", "ok N # skip reason",
 * "# ..." diagnostics and "Bail out! reason".
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

/* No plan() yet: NO_PLAN is assumed, but a second plan() is still caught. */
#define PLAN_UNSET (-2)

static pthread_mutex_t tap_lock = PTHREAD_MUTEX_INITIALIZER;
static int tap_planned = PLAN_UNSET;
static int tap_run;	/* tests numbered so far, skips included */
static int tap_failed;	/* "not ok" lines printed */
static int tap_done;	/* done_testing() already called */

static void tap_setup(void)
{
	static int done;

	if (done)
		return;
	done = 1;
	/*
	 * Line-buffered stdout: the log then shows each TAP line next to
	 * whatever the code under test printed to stderr at that moment.
	 */
	setvbuf(stdout, NULL, _IOLBF, 0);
}

/*
 * Format a description into @buf as one TAP-safe line: a newline would
 * end the line early and a bare '#' would start a directive, so newlines
 * become spaces and '#' becomes "\#" (TAP's escape).
 */
static __attribute__((format(printf, 3, 0))) void
tap_vdesc(char *buf, size_t len, const char *fmt, va_list ap)
{
	char raw[512];
	size_t i, o = 0;

	if (!fmt) {
		buf[0] = '\0';
		return;
	}
	vsnprintf(raw, sizeof(raw), fmt, ap);
	for (i = 0; raw[i] && o + 2 < len; i++) {
		if (raw[i] == '#')
			buf[o++] = '\\';
		buf[o++] = raw[i] == '\n' || raw[i] == '\r' ? ' ' : raw[i];
	}
	buf[o] = '\0';
}

/* Format a variadic function's description into the array @buf. */
#define TAP_VDESC(buf, fmt)                                                   \
	do {                                                                  \
		va_list ap_;                                                  \
		va_start(ap_, fmt);                                           \
		tap_vdesc(buf, sizeof(buf), fmt, ap_);                        \
		va_end(ap_);                                                  \
	} while (0)

/* Print @text as "# " lines; callers hold tap_lock. */
static void tap_diag_locked(const char *text)
{
	const char *p = text;

	do {
		const char *nl = strchr(p, '\n');
		int n = nl ? (int)(nl - p) : (int)strlen(p);

		printf("# %.*s\n", n, p);
		p = nl ? nl + 1 : NULL;
	} while (p && *p);
}

/*
 * Print one result line and, for a failure, where it was; returns @cond.
 * Callers hold tap_lock so a result and its diagnostics stay together.
 */
static int tap_result_locked(const char *file, int line, int cond,
			     const char *desc)
{
	tap_setup();
	tap_run++;
	printf("%sok %d%s%s\n", cond ? "" : "not ", tap_run,
	       desc[0] ? " - " : "", desc);
	if (!cond) {
		tap_failed++;
		if (desc[0])
			printf("#   Failed test '%s'\n#   at %s line %d.\n",
			       desc, file, line);
		else
			printf("#   Failed test at %s line %d.\n", file, line);
	}
	return cond;
}

void plan(int n)
{
	pthread_mutex_lock(&tap_lock);
	if (tap_planned != PLAN_UNSET && tap_planned != NO_PLAN) {
		pthread_mutex_unlock(&tap_lock);
		bail_out("plan() called twice");
	}
	if (n <= 0 && n != NO_PLAN) {
		pthread_mutex_unlock(&tap_lock);
		bail_out("plan(%d): use a positive count, NO_PLAN or skip_all()",
			 n);
	}
	tap_setup();
	tap_planned = n;
	if (n != NO_PLAN)
		printf("1..%d\n", n);
	pthread_mutex_unlock(&tap_lock);
}

void skip_all(const char *fmt, ...)
{
	char reason[512];

	TAP_VDESC(reason, fmt);
	printf("1..0 # SKIP %s\n", reason);
	fflush(stdout);
	exit(0);
}

int tap_ok_(const char *file, int line, int cond, const char *fmt, ...)
{
	char desc[1024];

	TAP_VDESC(desc, fmt);

	pthread_mutex_lock(&tap_lock);
	tap_result_locked(file, line, cond, desc);
	pthread_mutex_unlock(&tap_lock);
	return cond;
}

int tap_is_(const char *file, int line, const char *got, const char *want,
	    const char *fmt, ...)
{
	char desc[1024];
	int pass;

	if (!got || !want)
		pass = got == want;
	else
		pass = strcmp(got, want) == 0;

	TAP_VDESC(desc, fmt);

	pthread_mutex_lock(&tap_lock);
	if (!tap_result_locked(file, line, pass, desc)) {
		/* Quotes show leading/trailing blanks; NULL stands bare. */
		printf("#          got: %s%s%s\n", got ? "'" : "",
		       got ? got : "NULL", got ? "'" : "");
		printf("#     expected: %s%s%s\n", want ? "'" : "",
		       want ? want : "NULL", want ? "'" : "");
	}
	pthread_mutex_unlock(&tap_lock);
	return pass;
}

/*
 * Integers print without an exponent (counters are easier to compare that
 * way); anything else with 17 significant digits, enough to tell any two
 * doubles apart.
 */
static void tap_fmt_num(char *buf, size_t len, long double v)
{
	if (isfinite(v) && v == truncl(v) && fabsl(v) < 1e21L)
		snprintf(buf, len, "%.0Lf", v);
	else
		snprintf(buf, len, "%.17Lg", v);
}

int tap_cmp_ok_(const char *file, int line, long double a, const char *op,
		long double b, const char *fmt, ...)
{
	char desc[1024], sa[64], sb[64];
	int known = 1, pass;

	if (!op)
		known = 0, pass = 0;
	else if (!strcmp(op, "=="))
		pass = a == b;
	else if (!strcmp(op, "!="))
		pass = a != b;
	else if (!strcmp(op, "<"))
		pass = a < b;
	else if (!strcmp(op, "<="))
		pass = a <= b;
	else if (!strcmp(op, ">"))
		pass = a > b;
	else if (!strcmp(op, ">="))
		pass = a >= b;
	else
		known = 0, pass = 0;

	TAP_VDESC(desc, fmt);

	pthread_mutex_lock(&tap_lock);
	if (!tap_result_locked(file, line, pass, desc)) {
		tap_fmt_num(sa, sizeof(sa), a);
		tap_fmt_num(sb, sizeof(sb), b);
		if (!known)
			printf("#     unknown operator: %s\n", op ? op : "NULL");
		printf("#     %s\n#         %s\n#     %s\n", sa,
		       op ? op : "NULL", sb);
	}
	pthread_mutex_unlock(&tap_lock);
	return pass;
}

void diag(const char *fmt, ...)
{
	char text[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);

	pthread_mutex_lock(&tap_lock);
	tap_diag_locked(text);
	pthread_mutex_unlock(&tap_lock);
}

void skip(int n, const char *fmt, ...)
{
	char reason[512];

	TAP_VDESC(reason, fmt);

	pthread_mutex_lock(&tap_lock);
	while (n-- > 0)
		printf("ok %d # skip %s\n", ++tap_run, reason);
	pthread_mutex_unlock(&tap_lock);
}

int done_testing(void)
{
	int status = 0;

	pthread_mutex_lock(&tap_lock);
	if (tap_done) {
		pthread_mutex_unlock(&tap_lock);
		bail_out("done_testing() called twice");
	}
	tap_done = 1;
	if (tap_run == 0) {
		/*
		 * No plan line on purpose: the driver reports a missing plan
		 * as an error, where "1..0" would count as a skip.
		 */
		printf("# no tests run\n");
		status = 1;
	} else if (tap_planned >= 0 && tap_planned != tap_run) {
		printf("# planned %d tests but ran %d\n", tap_planned, tap_run);
		status = 1;
	} else if (tap_planned < 0) {
		printf("1..%d\n", tap_run);
	}
	if (tap_failed) {
		printf("# failed %d of %d tests\n", tap_failed, tap_run);
		status = 1;
	}
	fflush(stdout);
	pthread_mutex_unlock(&tap_lock);
	return status;
}

void bail_out(const char *fmt, ...)
{
	char reason[512];

	TAP_VDESC(reason, fmt);
	printf("Bail out! %s\n", reason);
	fflush(stdout);
	exit(255);
}

static char tap_dir[256];
static pid_t tap_dir_owner;

static void tap_tmpdir_remove(void)
{
	char path[sizeof(tap_dir) + 256];
	struct dirent *e;
	DIR *d;

	if (getpid() != tap_dir_owner)
		return;
	d = opendir(tap_dir);
	while (d && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", tap_dir,
				 e->d_name);
			unlink(path);
		}
	}
	if (d)
		closedir(d);
	rmdir(tap_dir);
}

const char *tap_tmpdir(const char *prefix)
{
	if (tap_dir[0])
		return tap_dir;
	snprintf(tap_dir, sizeof(tap_dir), "/tmp/%s-XXXXXX", prefix);
	if (!mkdtemp(tap_dir))
		bail_out("mkdtemp %s: %s", tap_dir, strerror(errno));
	tap_dir_owner = getpid();
	atexit(tap_tmpdir_remove);
	return tap_dir;
}

char *tap_capture_stderr(void (*fn)(void))
{
	static char buf[65536];
	FILE *tmp = tmpfile();
	int saved = dup(2);
	size_t n;

	if (!tmp || saved < 0)
		bail_out("tap_capture_stderr: %s", strerror(errno));
	fflush(stderr);
	dup2(fileno(tmp), 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(buf, 1, sizeof(buf) - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
	return buf;
}

unsigned tap_count(const char *s, const char *needle)
{
	unsigned n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

unsigned tap_wait_port(const char *portfile, const char *what)
{
	for (int i = 0; i < 300; i++) {
		FILE *f = fopen(portfile, "r");
		unsigned p;

		if (f && fscanf(f, "%u", &p) == 1) {
			fclose(f);
			return p;
		}
		if (f)
			fclose(f);
		usleep(100000);
	}
	bail_out("%s did not start", what);
	return 0;
}
