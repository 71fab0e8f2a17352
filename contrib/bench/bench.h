/* SPDX-License-Identifier: MIT */
/*
 * contrib/bench/bench.h - clocks shared by the benchmark programs
 *
 * Every receiver in a comparison (zmq-pull.c, benchsink.c, and the
 * pyzmq loop with Python's equivalents) measures its window with the same
 * two clocks, so their figures compare like with like.
 */
#ifndef TALLY_BENCH_H
#define TALLY_BENCH_H

#include <stdint.h>
#include <sys/resource.h>
#include <time.h>

/* bench_clock_ns() - @clock (CLOCK_MONOTONIC, CLOCK_REALTIME) in ns */
static inline int64_t bench_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * bench_cpu_ns() - CPU time of the whole process (user + system, every
 * thread, libzmq's I/O threads included) in ns, from getrusage()
 */
static inline int64_t bench_cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
	       ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

#endif /* TALLY_BENCH_H */
