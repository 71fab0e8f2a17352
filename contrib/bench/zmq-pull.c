/* SPDX-License-Identifier: MIT */
/*
 * contrib/bench/zmq-pull.c - the reference receiver: a minimal libzmq loop
 *
 * Binds a PULL socket with libzmq's defaults and receives COUNT messages
 * with a blocking zmq_recv() each, doing no work per message beyond
 * receiving it. At a high rate this is the fastest a libzmq receiver can
 * drain; at a low rate it wakes once per message, which is what the
 * "CPU per event at 1k events/s" row compares tallyd against.
 *
 * It measures, from the first message to the last: wall time (monotonic)
 * and the process's CPU time (getrusage(RUSAGE_SELF): every thread,
 * libzmq's I/O thread included). tallyd's bench output (benchsink.c)
 * measures the same window the same way.
 *
 * usage: zmq-pull -e ENDPOINT -n COUNT [-t TIMEOUT_S] [-o FILE]
 * Prints (or writes to FILE) one line:
 *   "records=N secs=S cpu_s=C rate=R cpu_ns_per=P"
 * Exit status 2 when fewer than COUNT arrived within the timeout.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zmq.h>

#include "bench.h"

int main(int argc, char **argv)
{
	const char *endpoint = NULL, *outpath = NULL;
	uint64_t count = 0, got = 0;
	double timeout = 60;
	int64_t t_first = 0, c_first = 0, t_last = 0, c_last = 0, deadline;
	char buf[4096];
	void *ctx, *sock;
	FILE *out = stdout;
	int opt, rcvtimeo = 200;

	while ((opt = getopt(argc, argv, "e:n:t:o:")) != -1) {
		switch (opt) {
		case 'e':
			endpoint = optarg;
			break;
		case 'n':
			count = strtoull(optarg, NULL, 10);
			break;
		case 't':
			timeout = strtod(optarg, NULL);
			break;
		case 'o':
			outpath = optarg;
			break;
		default:
			goto usage;
		}
	}
	if (!endpoint || !count)
		goto usage;

	ctx = zmq_ctx_new();
	sock = zmq_socket(ctx, ZMQ_PULL);
	if (!sock || zmq_bind(sock, endpoint)) {
		fprintf(stderr, "zmq-pull: bind %s: %s\n", endpoint,
			zmq_strerror(zmq_errno()));
		return 1;
	}
	/* Only to notice the timeout: a wake-up every 200 ms when idle. */
	zmq_setsockopt(sock, ZMQ_RCVTIMEO, &rcvtimeo, sizeof(rcvtimeo));

	deadline = bench_clock_ns(CLOCK_MONOTONIC) + (int64_t)(timeout * 1e9);
	while (got < count) {
		if (zmq_recv(sock, buf, sizeof(buf), 0) < 0) {
			if (zmq_errno() != EAGAIN && zmq_errno() != EINTR)
				break;
			if (bench_clock_ns(CLOCK_MONOTONIC) > deadline)
				break;
			continue;
		}
		if (got++ == 0) {
			t_first = bench_clock_ns(CLOCK_MONOTONIC);
			c_first = bench_cpu_ns();
		}
	}
	t_last = bench_clock_ns(CLOCK_MONOTONIC);
	c_last = bench_cpu_ns();

	if (outpath && !(out = fopen(outpath, "w"))) {
		perror(outpath);
		return 1;
	}
	{
		double secs = (double)(t_last - t_first) / 1e9;
		double cpu = (double)(c_last - c_first) / 1e9;

		/* The window starts at message 1: it spans got - 1 messages. */
		fprintf(out,
			"records=%" PRIu64 " secs=%.6f cpu_s=%.6f rate=%.0f "
			"cpu_ns_per=%.0f\n",
			got, secs, cpu,
			got > 1 && secs > 0 ? (double)(got - 1) / secs : 0,
			got > 1 ? cpu * 1e9 / (double)(got - 1) : 0);
	}
	if (out != stdout)
		fclose(out);
	zmq_close(sock);
	zmq_ctx_term(ctx);
	return got < count ? 2 : 0;

usage:
	fprintf(stderr, "usage: zmq-pull -e ENDPOINT -n COUNT [-t TIMEOUT_S] "
			"[-o FILE]\n");
	return 2;
}
