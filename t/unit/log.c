/* SPDX-License-Identifier: MIT */
/* t/unit/log.c - log levels, burst suppression, tally_log_limited() */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/core-internal.h"
#include "tap.h"

static void burst(void)
{
	for (int i = 0; i < 100; i++)
		tally_log(NULL, LOG_WARNING, "peer sent garbage %d", i);
}

static void core_notices(void)
{
	static struct tally_instance in = { .label = "counter[c]" };

	for (int i = 0; i < 8; i++)
		tally_log(NULL, LOG_INFO, "SIGHUP: reloading %d", i);
	for (int i = 0; i < 8; i++)
		tally_log(&in, LOG_INFO, "tick %d", i);
}

static void after_window(void)
{
	tally_log(NULL, LOG_WARNING, "peer sent garbage %d", 100);
}

static struct tally_log_limit refused;

/* a server refusing five writes in a row, within one minute */
static void refusals(void)
{
	for (int i = 0; i < 5; i++)
		tally_log_limited(&refused, 60, NULL, LOG_WARNING,
				  "write refused (HTTP 400) #%d", i);
}

static void refusal_later(void)
{
	tally_log_limited(&refused, 60, NULL, LOG_WARNING,
			  "write refused (HTTP 400) #%d", 5);
}

static void levels(void)
{
	tally_log(NULL, LOG_DEBUG, "debug line");
	tally_log(NULL, LOG_INFO, "info line");
	tally_log(NULL, LOG_ERR, "error line");
	tally_log_conf(LOG_ERR, "f.conf", 7, "bad %s", "thing");
	tally_log_conf(LOG_WARNING, "f.conf", 0, "whole file");
}

int main(void)
{
	char *out;

	plan(NO_PLAN);

	tally_log_setup(TALLY_LOG_STDERR, LOG_INFO);
	out = tap_capture_stderr(levels);
	ok(!strstr(out, "debug line"), "debug is below the info level");
	ok(strstr(out, "tallyd: info: info line\n") != NULL, "info line format");
	ok(strstr(out, "tallyd: error: error line\n") != NULL,
	   "error line format");
	ok(strstr(out, "f.conf:7: error: bad thing\n") != NULL,
	   "config diagnostics carry file:line");
	ok(strstr(out, "f.conf: warning: whole file\n") != NULL,
	   "line 0 means the whole file");

	tally_log_set_window(1);
	out = tap_capture_stderr(burst);
	cmp_ok(tap_count(out, "peer sent garbage"), "==", 5,
	       "a burst of 100 lines logs 5");
	ok(strstr(out, "garbage 4\n") && !strstr(out, "garbage 5\n"),
	   "the first five pass");
	sleep(2);
	out = tap_capture_stderr(after_window);
	ok(strstr(out, "tallyd: warning: suppressed 95 similar messages\n") !=
		   NULL,
	   "the next window starts with the suppressed count");
	ok(strstr(out, "garbage 100\n") != NULL, "and then the message");

	out = tap_capture_stderr(core_notices);
	cmp_ok(tap_count(out, "SIGHUP: reloading"), "==", 8,
	       "the core's info lines are never suppressed (8 reloads, 8 lines)");
	cmp_ok(tap_count(out, ": tick "), "==", 5,
	       "an instance's info lines are");

	/*
	 * tally_log_limited(): the first occurrence is logged, the others
	 * of the minute are counted, and the next line says how many.
	 */
	out = tap_capture_stderr(refusals);
	cmp_ok(tap_count(out, "write refused"), "==", 1,
	       "limited: 5 refusals within the minute log 1 line");
	ok(strstr(out, "tallyd: warning: write refused (HTTP 400) #0\n") !=
		   NULL,
	   "limited: the first one, without a count");
	cmp_ok(refused.quiet, "==", 4, "limited: the 4 others are counted");
	/* the minute is over (next_ns is the documented CLOCK_MONOTONIC
	 * end of the quiet time: put it in the past, no sleeping) */
	refused.next_ns = 1;
	out = tap_capture_stderr(refusal_later);
	ok(strstr(out, "tallyd: warning: write refused (HTTP 400) #5 (4 more "
		       "times in the last 60 s)\n") != NULL,
	   "limited: the next line says how many were suppressed");
	cmp_ok(refused.quiet, "==", 0, "limited: the count starts over");
	ok(refused.next_ns > 1, "limited: a new minute of quiet started");
	out = tap_capture_stderr(refusal_later);
	cmp_ok(tap_count(out, "write refused"), "==", 0,
	       "limited: and the next one is quiet again");
	cmp_ok(refused.quiet, "==", 1, "limited: counted");

	cmp_ok(tally_log_level_parse("debug"), "==", LOG_DEBUG, "parse debug");
	cmp_ok(tally_log_level_parse("WARNING"), "==", LOG_WARNING,
	       "parse is case-insensitive");
	cmp_ok(tally_log_level_parse("loud"), "==", -1, "unknown level");
	return done_testing();
}
