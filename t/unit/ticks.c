/* SPDX-License-Identifier: MIT */
/*
 * t/unit/ticks.c - when periodic reads and ticks happen
 *
 * Inputs and filters tick on wall-clock multiples of their interval, so
 * that nodes sample together. The rule (tally_next_mark()) is tested here
 * on given times, without clocks: an integration test timing real ticks
 * failed on a machine with a load of 30, where a late tick is normal.
 */
#include "config.h"

#include <math.h>

#include "../../core/core-internal.h"
#include "tap.h"

int main(void)
{
	static const struct {
		double interval, mark, now, next;
		const char *what;
	} cases[] = {
		{ 0.1, 0, 1000.05, 1000.1, "first tick: the next mark" },
		{ 0.1, 0, 1000.1, 1000.2, "first tick on a mark: the next one" },
		{ 10, 0, 1003, 1010, "first tick, 10 s: the next 10 s mark" },
		{ 0.1, 1000.1, 1000.1003, 1000.2, "on time: the next mark" },
		{ 0.1, 1000.1, 1000.0999, 1000.2,
		  "a timer firing early does not tick twice on one mark" },
		{ 0.1, 1000.1, 1000.15, 1000.2, "late: still the next mark" },
		{ 0.1, 1000.1, 1000.25, 1000.3,
		  "a mark missed (loop stalled): skipped, never doubled" },
		{ 0.1, 1000.1, 1003.77, 1003.8, "long stall (suspend)" },
		{ 0.1, 1000.1, 998.04, 998.1, "clock stepped back" },
		{ 5, 1000, 1001, 1005, "5 s interval" },
		{ 0.013, 0, 1.0, 1.001, "an interval that does not divide 1 s" },
		{ 0, 0, 0, 0, NULL },
	};

	plan(NO_PLAN);
	for (int i = 0; cases[i].what; i++) {
		double next = tally_next_mark(cases[i].interval, cases[i].mark,
					      cases[i].now);

		ok(fabs(next - cases[i].next) < 1e-9, "%s (%.4f -> %.4f)",
		   cases[i].what, cases[i].now, cases[i].next);
	}
	/* a long run of on-time ticks stays on the marks */
	double mark = 0, now = 5000.0004;
	int off = 0;

	for (int i = 0; i < 100000; i++) {
		mark = tally_next_mark(0.1, mark, now);
		if (fabs(mark * 10 - round(mark * 10)) > 1e-6)
			off++;
		now = mark + 0.0003;	/* the timer fires 0.3 ms late */
	}
	cmp_ok(off, "==", 0, "100000 ticks later, still on 100 ms marks");
	return done_testing();
}
