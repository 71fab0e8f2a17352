/* SPDX-License-Identifier: MIT */
/*
 * tally/wire.h - the trace wire format, versions 1 and 2 (see
 * doc/wire-format.md)
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
 * Version 2 (TALLY_WIRE_VERSION2): the same header with the reserved field
 * (offset 50) holding ext_len, the bytes of an item section after the
 * strings (at most TALLY_WIRE_MAX_EXT), and a fourth message type,
 * COUNTER. Each item is a tag (enum tally_wire_item), a uint16 payload
 * length and the payload: a typed attribute of the span (ATTR) or of the
 * sending process (SOURCE), or a counter snapshot (COUNTER). Senders use
 * version 1 for messages without items.
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
#define TALLY_WIRE_VERSION2	2
#define TALLY_WIRE_HDR_SIZE	52
#define TALLY_WIRE_MAX_STR	1024 /* longest trace id, name or hostname */
#define TALLY_WIRE_MAX_MSG	(TALLY_WIRE_HDR_SIZE + 3 * TALLY_WIRE_MAX_STR)

/* Version 2 bounds (doc/wire-format.md, "Bounds") */
#define TALLY_WIRE_MAX_EXT	 8192 /* item section, bytes */
#define TALLY_WIRE_MAX_MSG2	 (TALLY_WIRE_MAX_MSG + TALLY_WIRE_MAX_EXT)
#define TALLY_WIRE_ITEM_HDR	 3  /* tag, uint16 payload length */
#define TALLY_WIRE_MAX_KEY	 64 /* attribute key, counter name, label key */
#define TALLY_WIRE_MAX_ATTR_STR	 256 /* string attribute value, bytes */
#define TALLY_WIRE_MAX_LABEL_VAL 128 /* counter label value, bytes */
#define TALLY_WIRE_MAX_ATTRS	 32  /* ATTR items per message */
#define TALLY_WIRE_MAX_SOURCE	 8   /* SOURCE items per message */
#define TALLY_WIRE_MAX_COUNTERS	 64  /* COUNTER items per message */
#define TALLY_WIRE_MAX_LABELS	 4   /* labels per counter */
/* fixed part of a COUNTER payload: kind, name_len, nlabels, span, value */
#define TALLY_WIRE_COUNTER_FIXED 19

/** enum tally_wire_type - message types of version 1 */
enum tally_wire_type {
	TALLY_WIRE_BEGIN = 1,	/* a span opens */
	TALLY_WIRE_END = 2,	/* a span closes (by span_id) */
	TALLY_WIRE_CLOSE = 3,	/* a tracer closes: what it queued, so that the
				 * collector can count what never arrived */
	TALLY_WIRE_COUNTER = 4, /* version 2: counter and source items only */
};

/** enum tally_wire_item - item tags of version 2 */
enum tally_wire_item {
	TALLY_WIRE_ITEM_ATTR = 1,    /* a typed attribute of the span */
	TALLY_WIRE_ITEM_SOURCE = 2,  /* a typed attribute of the sender */
	TALLY_WIRE_ITEM_COUNTER = 3, /* a counter snapshot */
};

/*
 * Attribute value types (the values of enum tally_attr_type in
 * tally/record.h) and counter kinds.
 */
#define TALLY_WIRE_T_INT64  1
#define TALLY_WIRE_T_DOUBLE 2
#define TALLY_WIRE_T_STRING 3
#define TALLY_WIRE_T_BOOL   4
#define TALLY_WIRE_DELTA    1 /* int64 >= 0: growth since the last one */
#define TALLY_WIRE_GAUGE    2 /* double: the level */
/*
 * A process's threads send on sockets of their own, so a gauge snapshot
 * can arrive after a newer one (doc/wire-format.md, COUNTER). A receiver
 * keeps the level with the latest timestamp, and takes an older one as
 * stale when it is at most this much older (ns); beyond that the sender's
 * clock stepped back, and the older timestamp is the new level's. A sender
 * takes snapshots in the order of their timestamps within this window.
 */
#define TALLY_WIRE_GAUGE_REORDER_NS 60000000000ll

/**
 * tally_wire_name_ok() - whether @s[0..@len) is a valid key or name:
 * 1..TALLY_WIRE_MAX_KEY bytes of [A-Za-z_][A-Za-z0-9_]*
 */
static inline int tally_wire_name_ok(const char *s, size_t len)
{
	/* one load per byte: a key is checked for every attribute */
#define TW_R10(c) [c] = 1, [c + 1] = 1, [c + 2] = 1, [c + 3] = 1, \
		  [c + 4] = 1, [c + 5] = 1, [c + 6] = 1, [c + 7] = 1, \
		  [c + 8] = 1, [c + 9] = 1
#define TW_R26(c) TW_R10(c), TW_R10(c + 10), [c + 20] = 1, [c + 21] = 1, \
		  [c + 22] = 1, [c + 23] = 1, [c + 24] = 1, [c + 25] = 1
	static const unsigned char ok[256] = { TW_R10('0'), TW_R26('A'),
					       TW_R26('a'), ['_'] = 1 };
#undef TW_R26
#undef TW_R10
	const unsigned char *p = (const unsigned char *)s;
	unsigned char all = 1;

	if (len == 0 || len > TALLY_WIRE_MAX_KEY || (p[0] >= '0' && p[0] <= '9'))
		return 0;
	for (size_t i = 0; i < len; i++)
		all &= ok[p[i]];
	return all;
}

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
