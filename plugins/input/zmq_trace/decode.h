/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/zmq_trace/decode.h - decoders for one trace message
 *
 * Two formats arrive on the same socket and are told apart per message:
 *   - native v1 and v2 (include/tally/wire.h, doc/wire-format.md): starts
 *     with the magic "tY"; v2 adds span attributes, source attributes and
 *     counter snapshots in an item section;
 *   - Omnistat's prototype tracer: a one-frame UTF-8 JSON array
 *     ["start"|"end", epoch_ms, "trace_id", "label"], starts with '['
 *     (JSON whitespace before it is tolerated).
 *
 * The decoders are pure functions of the message bytes: no allocation, no
 * global state, safe from any thread. They are the fuzzed attack surface
 * (contrib/fuzz/zmq_trace_decode_fuzz.c).
 */
#ifndef ZMQ_TRACE_DECODE_H
#define ZMQ_TRACE_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/record.h>
#include <tally/wire.h>

/**
 * enum zmq_trace_err - why a message was rejected
 *
 * Each value but ZMQ_TRACE_OK maps to a drop reason (zmq_trace_err_reason())
 * counted with tally_count_drop(). The native rules are those of
 * doc/wire-format.md, "Receiver behaviour"; its informal reason names map
 * to these as truncated, version -> unknown_version, type -> bad_type,
 * length -> bad_length, span_id -> bad_span_id, utf8 -> bad_utf8.
 */
enum zmq_trace_err {
	ZMQ_TRACE_OK = 0,
	ZMQ_TRACE_ERR_TRUNCATED,       /* empty, or shorter than the header */
	ZMQ_TRACE_ERR_BAD_LENGTH,      /* size != header + lengths, a length
					* out of range, a string too long */
	ZMQ_TRACE_ERR_BAD_MAGIC,       /* neither "tY" nor '[' */
	ZMQ_TRACE_ERR_UNKNOWN_VERSION, /* native, version neither 1 nor 2 */
	ZMQ_TRACE_ERR_BAD_TYPE,	       /* unknown message type / event kind */
	ZMQ_TRACE_ERR_BAD_SPAN_ID,     /* native, span_id 0 */
	ZMQ_TRACE_ERR_BAD_UTF8,	       /* a string is not UTF-8 or holds NUL */
	ZMQ_TRACE_ERR_BAD_JSON,	       /* not a 4-element JSON array as above */
	ZMQ_TRACE_ERR_BAD_VALUE,       /* JSON: negative or huge time, empty
					* trace id or label; v2: an item
					* breaking a rule of its content */
	ZMQ_TRACE_ERR_MULTIPART,       /* more than one frame (found by the
					* receiver, never by the decoders) */
	ZMQ_TRACE_ERR_CLOCK_SKEW,      /* timestamp too far from the
					* receiver's clock (receiver only, see
					* zmq_trace_ts_skewed()) */
	ZMQ_TRACE_ERR_COUNT
};

/** enum zmq_trace_format - which encoding a message used */
enum zmq_trace_format {
	ZMQ_TRACE_NATIVE = 1,
	ZMQ_TRACE_OMNISTAT = 2,
};

/**
 * struct zmq_trace_counter - one counter snapshot of a v2 message
 * @name:    counter name, [A-Za-z_][A-Za-z0-9_]*, NUL-terminated
 * @kind:    TALLY_WIRE_DELTA or TALLY_WIRE_GAUGE
 * @nlabels: number of @labels, 0..TALLY_WIRE_MAX_LABELS
 * @span_id: the span it belongs to, 0 for none
 * @delta:   TALLY_WIRE_DELTA: the growth, >= 0
 * @gauge:   TALLY_WIRE_GAUGE: the level, finite
 * @labels:  key (a name) and value (UTF-8, maybe empty) pairs, keys
 *           unique and none of trace, rank, host, pid
 * Strings point into the event's buffer.
 */
struct zmq_trace_counter {
	const char *name;
	uint8_t kind;
	uint8_t nlabels;
	uint64_t span_id;
	int64_t delta;
	double gauge;
	struct {
		const char *key;
		const char *value;
	} labels[TALLY_WIRE_MAX_LABELS];
};

/**
 * struct zmq_trace_event - one decoded message
 * @format:    encoding of the message
 * @phase:     begin or end (END for a CLOSE)
 * @close:     native CLOSE: the sender's tracer closed; @span_id holds the
 *             events it queued, @parent_id the ts_ns of the first one,
 *             @name is empty; not a span event
 * @counter:   native v2 COUNTER: only @counters and @source are meant,
 *             @span_id, @parent_id and @name are 0 and empty; not a span
 *             event
 * @version:   native: the message's version (1 or 2); Omnistat: 0
 * @dropped:   events the sender dropped before this one (native only)
 * @ts_ns:     CLOCK_REALTIME ns (Omnistat: epoch ms converted, >= 0)
 * @span_id:   native: sender's span id (non-zero); Omnistat: 0
 * @parent_id: native: sender's parent span id; Omnistat: 0
 * @pid:       native: sender's pid; Omnistat: 0 (unknown)
 * @tid:       native: sender's thread id or 0; Omnistat: 0
 * @rank:      native: launcher rank or -1; Omnistat: -1
 * @trace:     trace id, NUL-terminated, never empty
 * @name:      span name, NUL-terminated; empty only on a native END
 * @host:      sender's hostname, NUL-terminated; "" = the collector's host
 * @trace_len: strlen(@trace), and so on for @name_len and @host_len
 * @nattrs:    v2: number of @attrs (typed attributes of the span), else 0
 * @nsource:   v2: number of @source (typed attributes of the sender),
 *             else 0
 * @ncounters: v2: number of @counters, else 0
 * @attrs:     keys unique, strings in @xbuf
 * @source:    keys unique, strings in @xbuf
 * @counters:  counter snapshots, strings in @xbuf
 * @buf:       storage the three strings point into
 * @xbuf:      storage the items' strings point into
 *
 * The arrays are filled up to their counts only: a v1 message costs no
 * more to decode than before v2.
 */
struct zmq_trace_event {
	enum zmq_trace_format format;
	enum tally_span_phase phase;
	bool close;
	bool counter;
	uint8_t version;
	uint32_t dropped;
	int64_t ts_ns;
	uint64_t span_id;
	uint64_t parent_id;
	uint32_t pid;
	uint32_t tid;
	int32_t rank;
	const char *trace;
	const char *name;
	const char *host;
	uint16_t trace_len;
	uint16_t name_len;
	uint16_t host_len;
	uint32_t nattrs;
	uint32_t nsource;
	uint32_t ncounters;
	struct tally_attr attrs[TALLY_WIRE_MAX_ATTRS];
	struct tally_attr source[TALLY_WIRE_MAX_SOURCE];
	struct zmq_trace_counter counters[TALLY_WIRE_MAX_COUNTERS];
	char buf[3 * (TALLY_WIRE_MAX_STR + 1)];
	char xbuf[2 * TALLY_WIRE_MAX_EXT];
};

/**
 * zmq_trace_decode() - decode one message in either format
 * @msg: message bytes (one ZeroMQ frame); may be NULL when @len is 0
 * @len: message length in bytes
 * @ev:  filled on success; its contents are unspecified on failure
 *
 * Return: ZMQ_TRACE_OK, or the enum zmq_trace_err saying why the message
 * must be dropped. Never reads outside [@msg, @msg + @len).
 */
enum zmq_trace_err zmq_trace_decode(const void *msg, size_t len,
				    struct zmq_trace_event *ev);

/** zmq_trace_decode_native() - as zmq_trace_decode(), native only */
enum zmq_trace_err zmq_trace_decode_native(const uint8_t *msg, size_t len,
					   struct zmq_trace_event *ev);

/** zmq_trace_decode_json() - as zmq_trace_decode(), Omnistat JSON only */
enum zmq_trace_err zmq_trace_decode_json(const uint8_t *msg, size_t len,
					 struct zmq_trace_event *ev);

/**
 * zmq_trace_err_reason() - drop reason of an error, for tally_count_drop()
 * Return: a static snake_case string ("truncated", "bad_magic", ...);
 * "ok" for ZMQ_TRACE_OK, "other" for an out-of-range value.
 */
const char *zmq_trace_err_reason(enum zmq_trace_err err);

/**
 * zmq_trace_ts_skewed() - whether a timestamp is too far from the clock
 * @ts_ns:  an event's timestamp, any value (CLOCK_REALTIME ns as sent)
 * @now_ns: the receiver's CLOCK_REALTIME ns
 * @max_ns: largest difference accepted either way, >= 0; 0 = no bound
 *
 * Return: 1 when |@ts_ns - @now_ns| > @max_ns (computed without
 * overflow for every int64_t), else 0.
 */
int zmq_trace_ts_skewed(int64_t ts_ns, int64_t now_ns, int64_t max_ns);

#endif /* ZMQ_TRACE_DECODE_H */
