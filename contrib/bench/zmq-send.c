/* SPDX-License-Identifier: MIT */
/*
 * contrib/bench/zmq-send.c - trace load generator for the benchmarks
 *
 * Pushes N span events to a ZeroMQ endpoint, either as native wire format
 * v1 messages (include/tally/wire.h), as what libtally-trace sends for a
 * span with four attributes (v1 BEGIN, v2 END carrying an int64, a double,
 * a string and a bool: doc/wire-format.md, "v2-end-attrs") or as
 * Omnistat-style JSON arrays, as
 * fast as possible or at a fixed rate in bursts of B messages. Every
 * receiver in a benchmark run (tallyd, the C PULL loop, the pyzmq drain
 * loop) gets the very same byte sequence from this program, so their
 * figures compare like with like.
 *
 * Events alternate begin/end of one span at a time (span ids 1, 2, ...), so
 * a stateful receiver opens and closes spans and never accumulates state.
 *
 * usage: zmq-send -e ENDPOINT -n COUNT [-r RATE] [-b BURST]
 *                 [-f native|v2attr|json]
 *                 [-t TIMEOUT_S]
 *   -r RATE   events per second (0 = as fast as the socket takes them)
 *   -b BURST  messages sent back to back per wake-up at that rate
 *   -t SECS   give up (exit 2) if the messages are not all queued by then
 *   -w SECS   keep the socket open this long after the last send (default
 *             2): libzmq can lose the tail of a queue whose sender closes
 *             while the receiver sits at its HWM (libzmq issue #4660)
 * Prints one line: "sent=N secs=S rate=R".
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

#include <tally/wire.h>

#include "bench.h"

#define TRACE_ID  "bench"
#define SPAN_NAME "solver"

/* Encode event @i (even: begin of span i/2+1, odd: its end) into @buf. */
static size_t encode_native(uint8_t *buf, uint64_t i, uint32_t pid)
{
	const size_t tlen = strlen(TRACE_ID), nlen = strlen(SPAN_NAME);
	int begin = (i % 2) == 0;

	memset(buf, 0, TALLY_WIRE_HDR_SIZE);
	buf[0] = TALLY_WIRE_MAGIC0;
	buf[1] = TALLY_WIRE_MAGIC1;
	buf[2] = TALLY_WIRE_VERSION;
	buf[3] = begin ? TALLY_WIRE_BEGIN : TALLY_WIRE_END;
	tally_wire_put32(buf + 4, 0);
	tally_wire_put64(buf + 8, (uint64_t)bench_clock_ns(CLOCK_REALTIME));
	tally_wire_put64(buf + 16, i / 2 + 1);
	tally_wire_put64(buf + 24, 0);
	tally_wire_put32(buf + 32, pid);
	tally_wire_put32(buf + 36, pid);
	tally_wire_put32(buf + 40, 0);
	tally_wire_put16(buf + 44, (uint16_t)tlen);
	tally_wire_put16(buf + 46, (uint16_t)nlen);
	tally_wire_put16(buf + 48, 0);
	memcpy(buf + TALLY_WIRE_HDR_SIZE, TRACE_ID, tlen);
	memcpy(buf + TALLY_WIRE_HDR_SIZE + tlen, SPAN_NAME, nlen);
	return TALLY_WIRE_HDR_SIZE + tlen + nlen;
}

/* Append one ATTR item (key, type, value bytes) at @p; returns its end. */
static uint8_t *put_attr(uint8_t *p, const char *key, uint8_t type,
			 const void *val, size_t vlen)
{
	size_t klen = strlen(key);

	p[0] = TALLY_WIRE_ITEM_ATTR;
	tally_wire_put16(p + 1, (uint16_t)(2 + klen + vlen));
	p[3] = (uint8_t)klen;
	p[4] = type;
	memcpy(p + 5, key, klen);
	memcpy(p + 5 + klen, val, vlen);
	return p + 5 + klen + vlen;
}

/* As encode_native(), with the END as a version-2 message carrying the
 * four attributes of the "v2-end-attrs" vector (values vary with @i). */
static size_t encode_v2attr(uint8_t *buf, uint64_t i, uint32_t pid)
{
	size_t len = encode_native(buf, i, pid);
	uint8_t v8[8], *p = buf + len, b = 1;
	double ratio = (double)(i % 1000) / 1000.0;

	if (i % 2 == 0)
		return len;
	tally_wire_put64(v8, i * 4096);
	p = put_attr(p, "bytes", 1, v8, 8);
	memcpy(v8, &ratio, 8);	/* IEEE 754, little-endian hosts only */
	p = put_attr(p, "ratio", 2, v8, 8);
	p = put_attr(p, "file", 3, "ckpt.h5", 7);
	p = put_attr(p, "ok", 4, &b, 1);
	buf[2] = 2;
	tally_wire_put16(buf + 50, (uint16_t)(p - (buf + len)));
	return (size_t)(p - buf);
}

/* The Omnistat prototype tracer's message: ["start"|"end", ms, id, label] */
static size_t encode_json(uint8_t *buf, size_t size, uint64_t i)
{
	int n = snprintf(
		(char *)buf, size, "[\"%s\", %" PRId64 ", \"%s\", \"%s\"]",
		i % 2 == 0 ? "start" : "end",
		bench_clock_ns(CLOCK_REALTIME) / 1000000, TRACE_ID, SPAN_NAME);

	return n < 0 ? 0 : (size_t)n;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: zmq-send -e ENDPOINT -n COUNT [-r RATE] "
		"[-b BURST] [-f native|v2attr|json] [-t TIMEOUT_S] "
		"[-w SECS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *endpoint = NULL, *format = "native";
	uint64_t count = 0, burst = 1;
	double rate = 0, timeout = 60, wait = 2;
	uint8_t buf[TALLY_WIRE_MAX_MSG];
	void *ctx, *sock;
	int64_t t0, next, period = 0, deadline;
	uint64_t sent = 0;
	int opt, linger = -1, json, v2, ret = 0;

	while ((opt = getopt(argc, argv, "e:n:r:b:f:t:w:")) != -1) {
		switch (opt) {
		case 'e':
			endpoint = optarg;
			break;
		case 'n':
			count = strtoull(optarg, NULL, 10);
			break;
		case 'r':
			rate = strtod(optarg, NULL);
			break;
		case 'b':
			burst = strtoull(optarg, NULL, 10);
			break;
		case 'f':
			format = optarg;
			break;
		case 't':
			timeout = strtod(optarg, NULL);
			break;
		case 'w':
			wait = strtod(optarg, NULL);
			break;
		default:
			usage();
		}
	}
	json = strcmp(format, "json") == 0;
	v2 = strcmp(format, "v2attr") == 0;
	if (!endpoint || !count || !burst ||
	    (!json && !v2 && strcmp(format, "native")))
		usage();
	if (rate > 0)
		period = (int64_t)(1e9 * (double)burst / rate);

	ctx = zmq_ctx_new();
	sock = zmq_socket(ctx, ZMQ_PUSH);
	if (!sock || zmq_connect(sock, endpoint)) {
		fprintf(stderr, "zmq-send: %s: %s\n", endpoint,
			zmq_strerror(zmq_errno()));
		return 1;
	}
	/* A blocking send with the default HWM: the receiver sets the pace. */
	{
		int sndtimeo = 1000;

		zmq_setsockopt(sock, ZMQ_SNDTIMEO, &sndtimeo, sizeof(sndtimeo));
	}

	t0 = next = bench_clock_ns(CLOCK_MONOTONIC);
	deadline = t0 + (int64_t)(timeout * 1e9);
	while (sent < count) {
		uint64_t n = count - sent < burst ? count - sent : burst;

		for (uint64_t k = 0; k < n; k++, sent++) {
			uint32_t pid = (uint32_t)getpid();
			size_t len = json ? encode_json(buf, sizeof(buf), sent)
				     : v2 ? encode_v2attr(buf, sent, pid)
					  : encode_native(buf, sent, pid);

			while (zmq_send(sock, buf, len, 0) < 0) {
				if (zmq_errno() != EAGAIN &&
				    zmq_errno() != EINTR) {
					fprintf(stderr, "zmq-send: send: %s\n",
						zmq_strerror(zmq_errno()));
					ret = 1;
					goto out;
				}
				if (bench_clock_ns(CLOCK_MONOTONIC) >
				    deadline) {
					fprintf(stderr,
						"zmq-send: timed out "
						"after %" PRIu64 " messages\n",
						sent);
					ret = 2;
					goto out;
				}
			}
		}
		if (period) {
			struct timespec ts;

			next += period;
			ts.tv_sec = next / 1000000000;
			ts.tv_nsec = next % 1000000000;
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts,
					NULL);
		}
		if (bench_clock_ns(CLOCK_MONOTONIC) > deadline) {
			fprintf(stderr,
				"zmq-send: timed out after %" PRIu64
				" messages\n",
				sent);
			ret = 2;
			goto out;
		}
	}
out : {
	double secs = (double)(bench_clock_ns(CLOCK_MONOTONIC) - t0) / 1e9;

	printf("sent=%" PRIu64 " secs=%.6f rate=%.0f\n", sent, secs,
	       secs > 0 ? (double)sent / secs : 0);
	fflush(stdout);
}
	/* Wait (bounded) for the queued messages to reach the receiver. */
	if (wait > 0) {
		struct timespec ts = {
			.tv_sec = (time_t)wait,
			.tv_nsec = (long)((wait - (double)(time_t)wait) * 1e9)
		};

		nanosleep(&ts, NULL);
	}
	linger = 5000;
	zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger));
	zmq_close(sock);
	zmq_ctx_term(ctx);
	return ret;
}
