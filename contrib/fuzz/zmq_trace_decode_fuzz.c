/* SPDX-License-Identifier: MIT */
/*
 * contrib/fuzz/zmq_trace_decode_fuzz.c - libFuzzer target for the zmq_trace
 * decoders (native v1 and v2, Omnistat JSON) and the state machine behind
 * them
 *
 * Each input is one message as the socket would deliver it. A decoded event
 * is applied to a long-lived state with small limits, so eviction, orphan
 * ends and abandonment run too; every span record and metric sample that
 * comes out is checked for the invariants outputs rely on, and so is every
 * v2 item decoded (attributes, source attributes, counters).
 * Build: make fuzz. Run:
 *	contrib/fuzz/zmq_trace_decode_fuzz -max_total_time=20 CORPUS_DIR
 */
#include <math.h>
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

static bool fuzz_str_ok(const char *s)
{
	return s && tally_utf8_valid(s, strlen(s));
}

static void fuzz_attrs(const struct tally_attr *a, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (!tally_wire_name_ok(a[i].key, strlen(a[i].key)) ||
		    a[i].type < TALLY_ATTR_T_INT ||
		    a[i].type > TALLY_ATTR_T_BOOL)
			abort();
		if (a[i].type == TALLY_ATTR_T_STRING &&
		    (!fuzz_str_ok(a[i].s) ||
		     strlen(a[i].s) > TALLY_WIRE_MAX_ATTR_STR))
			abort();
		if (a[i].type == TALLY_ATTR_T_DOUBLE && !isfinite(a[i].d))
			abort();
		for (uint32_t j = 0; j < i; j++)
			if (!strcmp(a[i].key, a[j].key))
				abort();
	}
}

static int fuzz_span(void *ctx, const struct tally_span *sp, int64_t ts)
{
	(void)ctx;
	(void)ts;
	if (!sp->trace || !sp->name || !sp->src.host || !sp->span_id ||
	    (sp->phase != TALLY_SPAN_BEGIN && sp->phase != TALLY_SPAN_END) ||
	    !tally_utf8_valid(sp->name, strlen(sp->name)) ||
	    (sp->phase == TALLY_SPAN_BEGIN && sp->flags) ||
	    sp->nvalues > TALLY_WIRE_MAX_ATTRS || (sp->nvalues && !sp->values))
		abort();
	fuzz_attrs(sp->values, sp->nvalues);
	return 0;
}

static int fuzz_metric(void *ctx, enum tally_metric_type type, const char *name,
		       const struct tally_label *l, size_t n, double value,
		       int64_t ts)
{
	(void)ctx;
	(void)ts;
	if (!name || !*name || !fuzz_str_ok(name) ||
	    (type != TALLY_COUNTER && type != TALLY_GAUGE &&
	     type != TALLY_INFO) ||
	    isnan(value) || (type == TALLY_COUNTER && value < 0))
		abort();
	for (size_t i = 0; i < n; i++) {
		if (!l[i].key || !*l[i].key || !fuzz_str_ok(l[i].value))
			abort();
		for (size_t j = 0; j < i; j++)
			if (!strcmp(l[i].key, l[j].key))
				abort();
	}
	return 0;
}

static const struct zmq_trace_sink sink = { .span = fuzz_span,
					    .metric = fuzz_metric };

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
			.max_counter_series = 16,
			.source_figures = true,
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
		    ev.host_len > TALLY_WIRE_MAX_STR ||
		    ev.nattrs > TALLY_WIRE_MAX_ATTRS ||
		    ev.nsource > TALLY_WIRE_MAX_SOURCE ||
		    ev.ncounters > TALLY_WIRE_MAX_COUNTERS ||
		    (ev.version != 2 &&
		     (ev.nattrs || ev.nsource || ev.ncounters)) ||
		    (ev.counter && (ev.nattrs || ev.name_len)))
			abort();
		fuzz_attrs(ev.attrs, ev.nattrs);
		fuzz_attrs(ev.source, ev.nsource);
		for (uint32_t i = 0; i < ev.ncounters; i++) {
			const struct zmq_trace_counter *c = &ev.counters[i];

			if (!tally_wire_name_ok(c->name, strlen(c->name)) ||
			    c->nlabels > TALLY_WIRE_MAX_LABELS ||
			    (c->kind == TALLY_WIRE_DELTA && c->delta < 0) ||
			    (c->kind == TALLY_WIRE_GAUGE &&
			     !isfinite(c->gauge)))
				abort();
			for (uint8_t j = 0; j < c->nlabels; j++)
				if (!fuzz_str_ok(c->labels[j].value))
					abort();
		}
		zmq_trace_state_apply(state, &ev, now, &sink);
	}
	/* Time moves on: every few inputs, run the periodic check. */
	now++;
	if (now % 16 == 0)
		zmq_trace_state_check(state, now, now, now % 256 == 0, &sink);
	return 0;
}
