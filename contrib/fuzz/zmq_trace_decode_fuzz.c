/* SPDX-License-Identifier: MIT */
/*
 * contrib/fuzz/zmq_trace_decode_fuzz.c - libFuzzer target for the zmq_trace
 * decoders (native v1 and Omnistat JSON) and the state machine behind them
 *
 * Each input is one message as the socket would deliver it. A decoded event
 * is applied to a long-lived state with small limits, so eviction, orphan
 * ends and abandonment run too; every span record that comes out is
 * checked for the invariants outputs rely on. Build: make fuzz. Run:
 *	contrib/fuzz/zmq_trace_decode_fuzz -max_total_time=20 CORPUS_DIR
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tally/utf8.h>

#include "../../plugins/input/zmq_trace/decode.h"
#include "../../plugins/input/zmq_trace/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct zmq_trace_state *state;
static struct zmq_trace_event ev;
static int64_t now;

static bool fuzz_alive(uint32_t pid)
{
	return pid % 3 != 0; /* deterministic: no kill() on random pids */
}

static int fuzz_span(void *ctx, const struct tally_span *sp, int64_t ts)
{
	(void)ctx;
	(void)ts;
	if (!sp->trace || !sp->name || !sp->src.host || !sp->span_id ||
	    (sp->phase != TALLY_SPAN_BEGIN && sp->phase != TALLY_SPAN_END) ||
	    !tally_utf8_valid(sp->name, strlen(sp->name)) ||
	    (sp->phase == TALLY_SPAN_BEGIN && sp->flags))
		abort();
	return 0;
}

static const struct zmq_trace_sink sink = { .span = fuzz_span };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum zmq_trace_err err;

	if (!state) {
		struct zmq_trace_state_opts o = {
			.local_host = "fuzz",
			.max_open_spans = 4,
			.max_sources = 64,
			.abandon_ns = 50,
			.idle_ns = 20,
			.gone_grace_ns = 5,
			.pid_alive = fuzz_alive,
		};

		state = zmq_trace_state_new(&o);
		if (!state)
			abort();
	}
	err = zmq_trace_decode(data, size, &ev);
	if ((unsigned)err >= ZMQ_TRACE_ERR_COUNT)
		abort();
	if (err == ZMQ_TRACE_OK) {
		if (strlen(ev.trace) != ev.trace_len ||
		    strlen(ev.name) != ev.name_len ||
		    strlen(ev.host) != ev.host_len || !ev.trace_len ||
		    ev.trace_len > TALLY_WIRE_MAX_STR ||
		    ev.name_len > TALLY_WIRE_MAX_STR ||
		    ev.host_len > TALLY_WIRE_MAX_STR)
			abort();
		zmq_trace_state_apply(state, &ev, now, &sink);
	}
	/* Time moves on: every few inputs, run the periodic check. */
	now++;
	if (now % 16 == 0)
		zmq_trace_state_check(state, now, now, now % 256 == 0, &sink);
	return 0;
}
