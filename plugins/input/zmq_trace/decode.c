/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/zmq_trace/decode.c - native v1/v2 and Omnistat JSON decoders
 *
 * Pure functions over untrusted bytes: every read is bounds-checked against
 * the message end, nothing is allocated, and each rejection names a reason.
 */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include <tally/utf8.h>

#include "decode.h"

static const char *const zmq_trace_reasons[ZMQ_TRACE_ERR_COUNT] = {
	[ZMQ_TRACE_OK] = "ok",
	[ZMQ_TRACE_ERR_TRUNCATED] = "truncated",
	[ZMQ_TRACE_ERR_BAD_LENGTH] = "bad_length",
	[ZMQ_TRACE_ERR_BAD_MAGIC] = "bad_magic",
	[ZMQ_TRACE_ERR_UNKNOWN_VERSION] = "unknown_version",
	[ZMQ_TRACE_ERR_BAD_TYPE] = "bad_type",
	[ZMQ_TRACE_ERR_BAD_SPAN_ID] = "bad_span_id",
	[ZMQ_TRACE_ERR_BAD_UTF8] = "bad_utf8",
	[ZMQ_TRACE_ERR_BAD_JSON] = "bad_json",
	[ZMQ_TRACE_ERR_BAD_VALUE] = "bad_value",
	[ZMQ_TRACE_ERR_MULTIPART] = "multipart",
	[ZMQ_TRACE_ERR_CLOCK_SKEW] = "clock_skew",
};

const char *zmq_trace_err_reason(enum zmq_trace_err err)
{
	if ((unsigned)err >= ZMQ_TRACE_ERR_COUNT)
		return "other";
	return zmq_trace_reasons[err];
}

int zmq_trace_ts_skewed(int64_t ts_ns, int64_t now_ns, int64_t max_ns)
{
	/* the distance, as unsigned: exact for any two int64_t */
	uint64_t d = ts_ns >= now_ns ? (uint64_t)ts_ns - (uint64_t)now_ns
				     : (uint64_t)now_ns - (uint64_t)ts_ns;

	return max_ns > 0 && d > (uint64_t)max_ns;
}

/* Copy a string field into ev->buf at @off as a C string. */
static const char *zmq_trace_put_str(struct zmq_trace_event *ev, size_t off,
				     const uint8_t *src, size_t len)
{
	memcpy(ev->buf + off, src, len);
	ev->buf[off + len] = '\0';
	return ev->buf + off;
}

/* Reading the item section of a v2 message (doc/wire-format.md). */
struct zmq_trace_items {
	struct zmq_trace_event *ev;
	size_t used; /* bytes of ev->xbuf taken */
};

/* Copy @len bytes at @src into the event's item buffer as a C string. */
static const char *zmq_trace_xstr(struct zmq_trace_items *it,
				  const uint8_t *src, size_t len)
{
	char *d = it->ev->xbuf + it->used;

	/* bounded: every string is a part of the section, plus its NUL,
	 * and items have headers of more than one byte per string */
	memcpy(d, src, len);
	d[len] = '\0';
	it->used += len + 1;
	return d;
}

static bool zmq_trace_key_dup(const struct tally_attr *a, uint32_t n,
			      const char *key)
{
	for (uint32_t i = 0; i < n; i++)
		if (a[i].key[0] == key[0] && !strcmp(a[i].key, key))
			return true;
	return false;
}

/* An ATTR or SOURCE payload @p[0..@len) into @a[*n]. */
static enum zmq_trace_err zmq_trace_attr(struct zmq_trace_items *it,
					 const uint8_t *p, size_t len,
					 struct tally_attr *a, uint32_t *n,
					 uint32_t max)
{
	struct tally_attr *v;
	size_t kl, vl;
	uint64_t bits;
	const char *key;

	if (len < 2)
		return ZMQ_TRACE_ERR_BAD_LENGTH;
	kl = p[0];
	if (2 + kl > len)
		return ZMQ_TRACE_ERR_BAD_LENGTH;
	vl = len - 2 - kl;
	if (!tally_wire_name_ok((const char *)p + 2, kl))
		return kl > TALLY_WIRE_MAX_KEY ? ZMQ_TRACE_ERR_BAD_LENGTH
					       : ZMQ_TRACE_ERR_BAD_VALUE;
	if (*n == max)
		return ZMQ_TRACE_ERR_BAD_VALUE;
	switch (p[1]) {
	case TALLY_WIRE_T_INT64:
	case TALLY_WIRE_T_DOUBLE:
		if (vl != 8)
			return ZMQ_TRACE_ERR_BAD_LENGTH;
		break;
	case TALLY_WIRE_T_STRING:
		if (vl > TALLY_WIRE_MAX_ATTR_STR)
			return ZMQ_TRACE_ERR_BAD_LENGTH;
		if (!tally_utf8_valid(p + 2 + kl, vl))
			return ZMQ_TRACE_ERR_BAD_UTF8;
		break;
	case TALLY_WIRE_T_BOOL:
		if (vl != 1)
			return ZMQ_TRACE_ERR_BAD_LENGTH;
		if (p[2 + kl] > 1)
			return ZMQ_TRACE_ERR_BAD_VALUE;
		break;
	default:
		return ZMQ_TRACE_ERR_BAD_VALUE;
	}
	key = zmq_trace_xstr(it, p + 2, kl);
	if (zmq_trace_key_dup(a, *n, key))
		return ZMQ_TRACE_ERR_BAD_VALUE;
	v = &a[(*n)++];
	v->key = key;
	v->type = (enum tally_attr_type)p[1];
	p += 2 + kl;
	switch (v->type) {
	case TALLY_ATTR_T_INT:
		v->i = (int64_t)tally_wire_get64(p);
		break;
	case TALLY_ATTR_T_DOUBLE:
		bits = tally_wire_get64(p);
		memcpy(&v->d, &bits, sizeof(v->d));
		if (!isfinite(v->d))
			return ZMQ_TRACE_ERR_BAD_VALUE;
		break;
	case TALLY_ATTR_T_STRING:
		v->s = zmq_trace_xstr(it, p, vl);
		break;
	default:
		v->b = p[0] != 0;
		break;
	}
	return ZMQ_TRACE_OK;
}

static bool zmq_trace_label_reserved(const char *k)
{
	return !strcmp(k, "trace") || !strcmp(k, "rank") ||
	       !strcmp(k, "host") || !strcmp(k, "pid");
}

/* A COUNTER payload @p[0..@len) into the event's next counter. */
static enum zmq_trace_err zmq_trace_counter(struct zmq_trace_items *it,
					    const uint8_t *p, size_t len)
{
	struct zmq_trace_event *ev = it->ev;
	struct zmq_trace_counter *c;
	const uint8_t *e = p + len;
	size_t nl, nlab;
	uint64_t bits;

	if (len < TALLY_WIRE_COUNTER_FIXED)
		return ZMQ_TRACE_ERR_BAD_LENGTH;
	nl = p[1];
	nlab = p[2];
	if (p[0] != TALLY_WIRE_DELTA && p[0] != TALLY_WIRE_GAUGE)
		return ZMQ_TRACE_ERR_BAD_VALUE;
	if (nlab > TALLY_WIRE_MAX_LABELS ||
	    ev->ncounters == TALLY_WIRE_MAX_COUNTERS)
		return ZMQ_TRACE_ERR_BAD_VALUE;
	if (nl > TALLY_WIRE_MAX_KEY || nl > len - TALLY_WIRE_COUNTER_FIXED)
		return ZMQ_TRACE_ERR_BAD_LENGTH;
	if (!tally_wire_name_ok((const char *)p + TALLY_WIRE_COUNTER_FIXED, nl))
		return ZMQ_TRACE_ERR_BAD_VALUE;
	c = &ev->counters[ev->ncounters];
	c->kind = p[0];
	c->nlabels = (uint8_t)nlab;
	c->span_id = tally_wire_get64(p + 3);
	bits = tally_wire_get64(p + 11);
	c->delta = 0;
	c->gauge = 0;
	if (c->kind == TALLY_WIRE_DELTA) {
		c->delta = (int64_t)bits;
		if (c->delta < 0)
			return ZMQ_TRACE_ERR_BAD_VALUE;
	} else {
		memcpy(&c->gauge, &bits, sizeof(c->gauge));
		if (!isfinite(c->gauge))
			return ZMQ_TRACE_ERR_BAD_VALUE;
	}
	c->name = zmq_trace_xstr(it, p + TALLY_WIRE_COUNTER_FIXED, nl);
	p += TALLY_WIRE_COUNTER_FIXED + nl;
	for (size_t i = 0; i < nlab; i++) {
		size_t kl, vl;

		if (e - p < 2)
			return ZMQ_TRACE_ERR_BAD_LENGTH;
		kl = p[0];
		vl = p[1];
		if (kl > TALLY_WIRE_MAX_KEY || vl > TALLY_WIRE_MAX_LABEL_VAL ||
		    (size_t)(e - p) < 2 + kl + vl)
			return ZMQ_TRACE_ERR_BAD_LENGTH;
		if (!tally_wire_name_ok((const char *)p + 2, kl))
			return ZMQ_TRACE_ERR_BAD_VALUE;
		if (!tally_utf8_valid(p + 2 + kl, vl))
			return ZMQ_TRACE_ERR_BAD_UTF8;
		c->labels[i].key = zmq_trace_xstr(it, p + 2, kl);
		c->labels[i].value = zmq_trace_xstr(it, p + 2 + kl, vl);
		if (zmq_trace_label_reserved(c->labels[i].key))
			return ZMQ_TRACE_ERR_BAD_VALUE;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(c->labels[j].key, c->labels[i].key))
				return ZMQ_TRACE_ERR_BAD_VALUE;
		p += 2 + kl + vl;
	}
	if (p != e)
		return ZMQ_TRACE_ERR_BAD_LENGTH;
	ev->ncounters++;
	return ZMQ_TRACE_OK;
}

/* The item section @p[0..@len) of a v2 message of type @type. */
static enum zmq_trace_err zmq_trace_items(struct zmq_trace_event *ev,
					  uint8_t type, const uint8_t *p,
					  size_t len)
{
	struct zmq_trace_items it = { .ev = ev };
	const uint8_t *e = p + len;
	enum zmq_trace_err err = ZMQ_TRACE_OK;

	while (p < e) {
		size_t il;

		if (e - p < TALLY_WIRE_ITEM_HDR)
			return ZMQ_TRACE_ERR_BAD_LENGTH;
		il = tally_wire_get16(p + 1);
		if ((size_t)(e - p) - TALLY_WIRE_ITEM_HDR < il)
			return ZMQ_TRACE_ERR_BAD_LENGTH;
		switch (p[0]) {
		case TALLY_WIRE_ITEM_ATTR:
			if (type == TALLY_WIRE_COUNTER)
				return ZMQ_TRACE_ERR_BAD_VALUE;
			err = zmq_trace_attr(&it, p + TALLY_WIRE_ITEM_HDR, il,
					     ev->attrs, &ev->nattrs,
					     TALLY_WIRE_MAX_ATTRS);
			break;
		case TALLY_WIRE_ITEM_SOURCE:
			err = zmq_trace_attr(&it, p + TALLY_WIRE_ITEM_HDR, il,
					     ev->source, &ev->nsource,
					     TALLY_WIRE_MAX_SOURCE);
			break;
		case TALLY_WIRE_ITEM_COUNTER:
			err = zmq_trace_counter(&it, p + TALLY_WIRE_ITEM_HDR,
						il);
			break;
		default:
			break; /* a later extension's item: skipped */
		}
		if (err)
			return err;
		p += TALLY_WIRE_ITEM_HDR + il;
	}
	return ZMQ_TRACE_OK;
}

enum zmq_trace_err zmq_trace_decode_native(const uint8_t *msg, size_t len,
					   struct zmq_trace_event *ev)
{
	const uint8_t *str;
	size_t tl, nl, hl, xl = 0;
	uint8_t type, version;

	/*
	 * Check in the order a future version keeps stable: magic, then
	 * version (the first 4 bytes keep their meaning), then the v1 layout.
	 * Only a message shorter than the header counts as truncated; any
	 * other size mismatch is bad_length (doc/wire-format.md).
	 */
	if (len < 2 || msg[0] != TALLY_WIRE_MAGIC0 ||
	    msg[1] != TALLY_WIRE_MAGIC1)
		return len == 1 && msg[0] == TALLY_WIRE_MAGIC0
			       ? ZMQ_TRACE_ERR_TRUNCATED
			       : ZMQ_TRACE_ERR_BAD_MAGIC;
	if (len < 3)
		return ZMQ_TRACE_ERR_TRUNCATED;
	version = msg[2];
	if (version != TALLY_WIRE_VERSION && version != TALLY_WIRE_VERSION2)
		return ZMQ_TRACE_ERR_UNKNOWN_VERSION;
	if (len < TALLY_WIRE_HDR_SIZE)
		return ZMQ_TRACE_ERR_TRUNCATED;

	type = msg[3];
	if (type != TALLY_WIRE_BEGIN && type != TALLY_WIRE_END &&
	    type != TALLY_WIRE_CLOSE &&
	    (type != TALLY_WIRE_COUNTER || version == TALLY_WIRE_VERSION))
		return ZMQ_TRACE_ERR_BAD_TYPE;

	tl = tally_wire_get16(msg + 44);
	nl = tally_wire_get16(msg + 46);
	hl = tally_wire_get16(msg + 48);
	/* v1: reserved, ignored; v2: the item section's length */
	if (version == TALLY_WIRE_VERSION2)
		xl = tally_wire_get16(msg + 50);
	if (tl == 0 || tl > TALLY_WIRE_MAX_STR || nl > TALLY_WIRE_MAX_STR ||
	    hl > TALLY_WIRE_MAX_STR || xl > TALLY_WIRE_MAX_EXT ||
	    (type == TALLY_WIRE_BEGIN && nl == 0) ||
	    (type == TALLY_WIRE_CLOSE && nl != 0))
		return ZMQ_TRACE_ERR_BAD_LENGTH;
	if (len != TALLY_WIRE_HDR_SIZE + tl + nl + hl + xl)
		return ZMQ_TRACE_ERR_BAD_LENGTH;
	if ((type == TALLY_WIRE_CLOSE && xl) ||
	    (type == TALLY_WIRE_COUNTER && (nl || !xl)))
		return ZMQ_TRACE_ERR_BAD_VALUE;

	ev->format = ZMQ_TRACE_NATIVE;
	ev->version = version;
	ev->close = type == TALLY_WIRE_CLOSE;
	ev->counter = type == TALLY_WIRE_COUNTER;
	ev->nattrs = ev->nsource = ev->ncounters = 0;
	ev->phase =
		type == TALLY_WIRE_BEGIN ? TALLY_SPAN_BEGIN : TALLY_SPAN_END;
	ev->dropped = tally_wire_get32(msg + 4);
	ev->ts_ns = (int64_t)tally_wire_get64(msg + 8);
	ev->span_id = tally_wire_get64(msg + 16);
	ev->parent_id = tally_wire_get64(msg + 24);
	ev->pid = tally_wire_get32(msg + 32);
	ev->tid = tally_wire_get32(msg + 36);
	ev->rank = (int32_t)tally_wire_get32(msg + 40);
	/* The reserved field (offset 50) is ignored for forward compatibility;
	 * a timestamp before 1970 is odd but well-formed. */
	if (ev->counter)
		ev->span_id = ev->parent_id = 0; /* unused, ignored */
	else if (ev->span_id == 0 && !ev->close)
		return ZMQ_TRACE_ERR_BAD_SPAN_ID;

	str = msg + TALLY_WIRE_HDR_SIZE;
	/* Valid fields concatenate to valid UTF-8, not the other way round. */
	if (!tally_utf8_valid(str, tl) ||
	    !tally_utf8_valid(str + tl, nl) ||
	    !tally_utf8_valid(str + tl + nl, hl))
		return ZMQ_TRACE_ERR_BAD_UTF8;

	ev->trace = zmq_trace_put_str(ev, 0, str, tl);
	ev->name = zmq_trace_put_str(ev, TALLY_WIRE_MAX_STR + 1, str + tl, nl);
	ev->host = zmq_trace_put_str(ev, 2 * (TALLY_WIRE_MAX_STR + 1),
				     str + tl + nl, hl);
	ev->trace_len = (uint16_t)tl;
	ev->name_len = (uint16_t)nl;
	ev->host_len = (uint16_t)hl;
	if (!xl)
		return ZMQ_TRACE_OK;
	return zmq_trace_items(ev, type, str + tl + nl + hl, xl);
}

/*
 * Omnistat JSON: a strict parser for exactly one shape, a 4-element array
 * ["start"|"end", <number>, <string>, <string>]. A general JSON library
 * would accept far more than this and allocate per message.
 */
struct zmq_trace_json {
	const uint8_t *p;
	const uint8_t *end;
};

static void zmq_trace_json_ws(struct zmq_trace_json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
				 *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int zmq_trace_json_hex4(const uint8_t *p, uint32_t *out)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++) {
		uint8_t c = p[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

/* Encode a code point as UTF-8; surrogates are encoded too so that the
 * final validation rejects a lone one as bad_utf8. */
static size_t zmq_trace_utf8_put(uint8_t *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (uint8_t)(0xc0 | (cp >> 6));
		o[1] = (uint8_t)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (uint8_t)(0xe0 | (cp >> 12));
		o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (uint8_t)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (uint8_t)(0xf0 | (cp >> 18));
	o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (uint8_t)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * Parse a JSON string at j->p into @out (capacity TALLY_WIRE_MAX_STR + 1),
 * unescaped and NUL-terminated.
 */
static enum zmq_trace_err zmq_trace_json_string(struct zmq_trace_json *j,
						char *out, uint16_t *outlen)
{
	uint8_t *o = (uint8_t *)out;
	size_t n = 0;

	if (j->p >= j->end || *j->p != '"')
		return ZMQ_TRACE_ERR_BAD_JSON;
	j->p++;
	for (;;) {
		uint8_t tmp[4];
		size_t k;
		uint8_t c;

		if (j->p >= j->end)
			return ZMQ_TRACE_ERR_BAD_JSON;
		c = *j->p++;
		if (c == '"')
			break;
		if (c < 0x20)
			return ZMQ_TRACE_ERR_BAD_JSON; /* raw control char */
		if (c != '\\') {
			tmp[0] = c;
			k = 1;
		} else {
			uint32_t cp, lo;

			if (j->p >= j->end)
				return ZMQ_TRACE_ERR_BAD_JSON;
			c = *j->p++;
			switch (c) {
			case '"':
			case '\\':
			case '/':
				tmp[0] = c;
				break;
			case 'b':
				tmp[0] = '\b';
				break;
			case 'f':
				tmp[0] = '\f';
				break;
			case 'n':
				tmp[0] = '\n';
				break;
			case 'r':
				tmp[0] = '\r';
				break;
			case 't':
				tmp[0] = '\t';
				break;
			case 'u':
				if (j->end - j->p < 4 ||
				    zmq_trace_json_hex4(j->p, &cp))
					return ZMQ_TRACE_ERR_BAD_JSON;
				j->p += 4;
				/* A high surrogate followed by \uDC00..DFFF is
				 * one supplementary code point. */
				if (cp >= 0xd800 && cp <= 0xdbff &&
				    j->end - j->p >= 6 && j->p[0] == '\\' &&
				    j->p[1] == 'u' &&
				    !zmq_trace_json_hex4(j->p + 2, &lo) &&
				    lo >= 0xdc00 && lo <= 0xdfff) {
					cp = 0x10000 + ((cp - 0xd800) << 10) +
					     (lo - 0xdc00);
					j->p += 6;
				}
				k = zmq_trace_utf8_put(tmp, cp);
				goto put;
			default:
				return ZMQ_TRACE_ERR_BAD_JSON;
			}
			k = 1;
		}
	put:
		if (n + k > TALLY_WIRE_MAX_STR)
			return ZMQ_TRACE_ERR_BAD_LENGTH;
		memcpy(o + n, tmp, k);
		n += k;
	}
	if (!tally_utf8_valid(o, n))
		return ZMQ_TRACE_ERR_BAD_UTF8;
	o[n] = '\0';
	*outlen = (uint16_t)n;
	return ZMQ_TRACE_OK;
}

/*
 * Scan a JSON number per RFC 8259 §6; *start and *len give its text.
 */
static enum zmq_trace_err zmq_trace_json_number(struct zmq_trace_json *j,
						const uint8_t **start,
						size_t *len)
{
	const uint8_t *p = j->p, *e = j->end;

	*start = p;
	if (p < e && *p == '-')
		p++;
	if (p >= e)
		return ZMQ_TRACE_ERR_BAD_JSON;
	if (*p == '0') {
		p++;
	} else if (*p >= '1' && *p <= '9') {
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	} else {
		return ZMQ_TRACE_ERR_BAD_JSON;
	}
	if (p < e && *p == '.') {
		p++;
		if (p >= e || *p < '0' || *p > '9')
			return ZMQ_TRACE_ERR_BAD_JSON;
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			p++;
		if (p >= e || *p < '0' || *p > '9')
			return ZMQ_TRACE_ERR_BAD_JSON;
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	*len = (size_t)(p - *start);
	j->p = p;
	return ZMQ_TRACE_OK;
}

/*
 * Convert the text of a JSON number of milliseconds to nanoseconds exactly
 * (no floating point, so 1722000000123.5 is 1722000000123500000 ns and the
 * result does not depend on the locale). Digits past the 19th significant
 * one are truncated, as is anything below a nanosecond.
 */
static enum zmq_trace_err zmq_trace_ms_to_ns(const uint8_t *s, size_t len,
					     int64_t *ns)
{
	const uint8_t *p = s, *e = s + len;
	uint64_t d = 0;
	long exp10 = 6; /* ms -> ns */
	long ex = 0;
	bool exneg = false;

	if (*p == '-') {
		/* "-0" is zero; any other negative time is rejected. */
		for (p++; p < e && (*p == '0' || *p == '.'); p++)
			;
		if (p < e && *p >= '1' && *p <= '9')
			return ZMQ_TRACE_ERR_BAD_VALUE;
		*ns = 0;
		return ZMQ_TRACE_OK;
	}
	for (; p < e && *p >= '0' && *p <= '9'; p++) {
		if (d <= (UINT64_MAX - 9) / 10)
			d = d * 10 + (uint64_t)(*p - '0');
		else
			exp10++; /* dropped an integer digit */
	}
	if (p < e && *p == '.') {
		for (p++; p < e && *p >= '0' && *p <= '9'; p++) {
			if (d <= (UINT64_MAX - 9) / 10) {
				d = d * 10 + (uint64_t)(*p - '0');
				exp10--;
			}
		}
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < e && (*p == '+' || *p == '-'))
			exneg = *p++ == '-';
		for (; p < e; p++)
			if (ex < 100000)
				ex = ex * 10 + (*p - '0');
		exp10 += exneg ? -ex : ex;
	}
	if (d == 0) {
		*ns = 0;
		return ZMQ_TRACE_OK;
	}
	for (; exp10 > 0; exp10--) {
		if (d > (uint64_t)INT64_MAX / 10)
			return ZMQ_TRACE_ERR_BAD_VALUE;
		d *= 10;
	}
	for (; exp10 < 0 && d; exp10++)
		d /= 10;
	if (d > (uint64_t)INT64_MAX)
		return ZMQ_TRACE_ERR_BAD_VALUE;
	*ns = (int64_t)d;
	return ZMQ_TRACE_OK;
}

static enum zmq_trace_err zmq_trace_json_sep(struct zmq_trace_json *j,
					     uint8_t sep)
{
	zmq_trace_json_ws(j);
	if (j->p >= j->end || *j->p != sep)
		return ZMQ_TRACE_ERR_BAD_JSON;
	j->p++;
	zmq_trace_json_ws(j);
	return ZMQ_TRACE_OK;
}

enum zmq_trace_err zmq_trace_decode_json(const uint8_t *msg, size_t len,
					 struct zmq_trace_event *ev)
{
	struct zmq_trace_json j = { .p = msg, .end = msg + len };
	char *trace = ev->buf;
	char *name = ev->buf + TALLY_WIRE_MAX_STR + 1;
	char *kind = ev->buf + 2 * (TALLY_WIRE_MAX_STR + 1);
	enum zmq_trace_err err;
	const uint8_t *num;
	size_t numlen;
	uint16_t kindlen;

	zmq_trace_json_ws(&j);
	if (j.p >= j.end || *j.p != '[')
		return ZMQ_TRACE_ERR_BAD_MAGIC;
	j.p++;
	zmq_trace_json_ws(&j);

	/* The kind is parsed into the host slot, which stays "" after. */
	err = zmq_trace_json_string(&j, kind, &kindlen);
	if (err)
		return err;
	if (kindlen == 5 && !memcmp(kind, "start", 5))
		ev->phase = TALLY_SPAN_BEGIN;
	else if (kindlen == 3 && !memcmp(kind, "end", 3))
		ev->phase = TALLY_SPAN_END;
	else
		return ZMQ_TRACE_ERR_BAD_TYPE;
	kind[0] = '\0';

	err = zmq_trace_json_sep(&j, ',');
	if (err)
		return err;
	err = zmq_trace_json_number(&j, &num, &numlen);
	if (err)
		return err;
	err = zmq_trace_ms_to_ns(num, numlen, &ev->ts_ns);
	if (err)
		return err;

	err = zmq_trace_json_sep(&j, ',');
	if (err)
		return err;
	/*
	 * The trace id is a string in Omnistat's tracer; a bare integer (a
	 * rank passed unconverted) is taken as its decimal text.
	 */
	if (j.p < j.end && (*j.p == '-' || (*j.p >= '0' && *j.p <= '9'))) {
		err = zmq_trace_json_number(&j, &num, &numlen);
		if (err)
			return err;
		if (numlen > TALLY_WIRE_MAX_STR)
			return ZMQ_TRACE_ERR_BAD_LENGTH;
		memcpy(trace, num, numlen);
		trace[numlen] = '\0';
		ev->trace_len = (uint16_t)numlen;
	} else {
		err = zmq_trace_json_string(&j, trace, &ev->trace_len);
		if (err)
			return err;
	}

	err = zmq_trace_json_sep(&j, ',');
	if (err)
		return err;
	err = zmq_trace_json_string(&j, name, &ev->name_len);
	if (err)
		return err;

	zmq_trace_json_ws(&j);
	if (j.p >= j.end || *j.p != ']')
		return ZMQ_TRACE_ERR_BAD_JSON;
	j.p++;
	zmq_trace_json_ws(&j);
	if (j.p != j.end)
		return ZMQ_TRACE_ERR_BAD_JSON;

	if (ev->trace_len == 0 || ev->name_len == 0)
		return ZMQ_TRACE_ERR_BAD_VALUE;

	ev->format = ZMQ_TRACE_OMNISTAT;
	ev->version = 0;
	ev->close = false;
	ev->counter = false;
	ev->nattrs = ev->nsource = ev->ncounters = 0;
	ev->dropped = 0;
	ev->span_id = 0;
	ev->parent_id = 0;
	ev->pid = 0;
	ev->tid = 0;
	ev->rank = -1;
	ev->trace = trace;
	ev->name = name;
	ev->host = kind;
	ev->host_len = 0;
	return ZMQ_TRACE_OK;
}

enum zmq_trace_err zmq_trace_decode(const void *msg, size_t len,
				    struct zmq_trace_event *ev)
{
	const uint8_t *m = msg;
	size_t i = 0;

	if (len == 0)
		return ZMQ_TRACE_ERR_TRUNCATED;
	if (m[0] == TALLY_WIRE_MAGIC0)
		return zmq_trace_decode_native(m, len, ev);
	/* JSON may start with whitespace; the magic never does. */
	while (i < len &&
	       (m[i] == ' ' || m[i] == '\t' || m[i] == '\n' || m[i] == '\r'))
		i++;
	if (i < len && m[i] == '[')
		return zmq_trace_decode_json(m, len, ev);
	return ZMQ_TRACE_ERR_BAD_MAGIC;
}
