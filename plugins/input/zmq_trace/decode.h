/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/zmq_trace/decode.h - decoders for one trace message
 *
 * Two formats arrive on the same socket and are told apart per message:
 *   - native v1 (include/tally/wire.h, doc/wire-format.md): starts with the
 *     magic "tY";
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
	ZMQ_TRACE_ERR_UNKNOWN_VERSION, /* native, version != 1 */
	ZMQ_TRACE_ERR_BAD_TYPE,	       /* unknown message type / event kind */
	ZMQ_TRACE_ERR_BAD_SPAN_ID,     /* native, span_id 0 */
	ZMQ_TRACE_ERR_BAD_UTF8,	       /* a string is not UTF-8 or holds NUL */
	ZMQ_TRACE_ERR_BAD_JSON,	       /* not a 4-element JSON array as above */
	ZMQ_TRACE_ERR_BAD_VALUE,       /* JSON: negative or huge time, empty
					* trace id or label */
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
 * struct zmq_trace_event - one decoded message
 * @format:    encoding of the message
 * @phase:     begin or end (END for a CLOSE)
 * @close:     native CLOSE: the sender's tracer closed; @span_id holds the
 *             events it queued, @parent_id the ts_ns of the first one,
 *             @name is empty; not a span event
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
 * @buf:       storage the three strings point into
 */
struct zmq_trace_event {
	enum zmq_trace_format format;
	enum tally_span_phase phase;
	bool close;
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
	char buf[3 * (TALLY_WIRE_MAX_STR + 1)];
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

/** zmq_trace_decode_native() - as zmq_trace_decode(), native v1 only */
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
