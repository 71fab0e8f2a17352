/* SPDX-License-Identifier: MIT */
/*
 * tally/wire.h - the trace wire format, version 1 (see doc/wire-format.md)
 *
 * One ZeroMQ message (one frame) per event, sent PUSH -> PULL. All integers
 * are little-endian, strings are UTF-8 without NUL terminator, lengths in
 * bytes. The fixed header is TALLY_WIRE_HDR_SIZE bytes:
 *
 *   off size field
 *     0    2 magic      "tY" (0x74 0x59): tells the native format from
 *                       Omnistat's JSON, which always starts with '['
 *     2    1 version    TALLY_WIRE_VERSION
 *     3    1 type       enum tally_wire_type
 *     4    4 dropped    events this sender dropped (could not queue) since
 *                       its previous message that got through
 *     8    8 ts_ns      CLOCK_REALTIME nanoseconds (int64)
 *    16    8 span_id    non-zero, unique per sending process
 *                       (CLOSE: events the tracer queued, may be 0)
 *    24    8 parent_id  enclosing span, 0 for a root span
 *                       (CLOSE: ts_ns of the first event it queued)
 *    32    4 pid
 *    36    4 tid        kernel thread id (gettid), 0 if unknown
 *    40    4 rank       launcher rank, int32, -1 when unknown
 *    44    2 trace_len  bytes of trace id   (1..TALLY_WIRE_MAX_STR)
 *    46    2 name_len   bytes of span name  (BEGIN: 1..MAX; END: 0..MAX;
 *                       CLOSE: 0)
 *    48    2 host_len   bytes of hostname   (0..MAX; 0 = collector's host)
 *    50    2 reserved   0
 *    52    . trace, name, host bytes, in that order, back to back
 *
 * A message is valid only if its length is exactly header + the three
 * lengths. Receivers drop (and count) anything else. Unknown versions are
 * dropped; future versions keep the first 4 bytes' meaning.
 *
 * Thread-safety: these are constants and inline pure functions.
 */
#ifndef TALLY_WIRE_H
#define TALLY_WIRE_H

#include <stdint.h>
#include <string.h>

#define TALLY_WIRE_MAGIC0	0x74 /* 't' */
#define TALLY_WIRE_MAGIC1	0x59 /* 'Y' */
#define TALLY_WIRE_VERSION	1
#define TALLY_WIRE_HDR_SIZE	52
#define TALLY_WIRE_MAX_STR	1024 /* longest trace id, name or hostname */
#define TALLY_WIRE_MAX_MSG	(TALLY_WIRE_HDR_SIZE + 3 * TALLY_WIRE_MAX_STR)

/** enum tally_wire_type - message types of version 1 */
enum tally_wire_type {
	TALLY_WIRE_BEGIN = 1, /* a span opens */
	TALLY_WIRE_END = 2,   /* a span closes (by span_id) */
	TALLY_WIRE_CLOSE = 3, /* a tracer closes: what it queued, so that the
			       * collector can count what never arrived */
};

/* Little-endian helpers shared by the encoder and the decoder. */
static inline void tally_wire_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void tally_wire_put32(uint8_t *p, uint32_t v)
{
	tally_wire_put16(p, (uint16_t)v);
	tally_wire_put16(p + 2, (uint16_t)(v >> 16));
}

static inline void tally_wire_put64(uint8_t *p, uint64_t v)
{
	tally_wire_put32(p, (uint32_t)v);
	tally_wire_put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t tally_wire_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t tally_wire_get32(const uint8_t *p)
{
	return tally_wire_get16(p) | ((uint32_t)tally_wire_get16(p + 2) << 16);
}

static inline uint64_t tally_wire_get64(const uint8_t *p)
{
	return tally_wire_get32(p) | ((uint64_t)tally_wire_get32(p + 4) << 32);
}

#endif /* TALLY_WIRE_H */
