/* SPDX-License-Identifier: MIT */
/*
 * t/unit/zmq_trace_decode.c - the zmq_trace decoders on valid and
 * malformed messages (native v1 per include/tally/wire.h, Omnistat JSON)
 *
 * Native messages are written out byte by byte from the layout in wire.h,
 * not built with the encoder helpers, so a shared mistake in wire.h's
 * helpers and the decoder would still show. The test vectors of
 * doc/wire-format.md are read from the document itself, with the reasons
 * its table of invalid messages gives.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "../../plugins/input/zmq_trace/decode.h"

static struct zmq_trace_event ev;

/* BEGIN: dropped 3, ts 0x0102030405060708, span 42, parent 0, pid 1234,
 * tid 1235, rank -1, trace "job", name "solve", host "n1". */
static const uint8_t begin_msg[] = {
	0x74, 0x59, 0x01, 0x01,				/* tY v1 BEGIN */
	0x03, 0x00, 0x00, 0x00,				/* dropped */
	0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* ts_ns */
	0x2a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* span_id */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* parent_id */
	0xd2, 0x04, 0x00, 0x00,				/* pid */
	0xd3, 0x04, 0x00, 0x00,				/* tid */
	0xff, 0xff, 0xff, 0xff,				/* rank */
	0x03, 0x00, 0x05, 0x00, 0x02, 0x00, 0x00, 0x00, /* lengths, rsvd */
	'j',  'o',  'b',  's',	'o',  'l',  'v',  'e',	'n', '1',
};

/* END of span 0x1122334455667788 (parent 7), no name, no host, rank 5. */
static const uint8_t end_msg[] = {
	0x74, 0x59, 0x01, 0x02,				/* tY v1 END */
	0x00, 0x00, 0x00, 0x00,				/* dropped */
	0x00, 0xca, 0x9a, 0x3b, 0x00, 0x00, 0x00, 0x00, /* 1e9 ns */
	0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* span_id */
	0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* parent_id */
	0x01, 0x00, 0x00, 0x00,				/* pid */
	0x00, 0x00, 0x00, 0x00,				/* tid */
	0x05, 0x00, 0x00, 0x00,				/* rank */
	0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* lengths, rsvd */
	'T',
};

/* A native message with the given strings, header fields from begin_msg. */
static size_t build(uint8_t *m, uint8_t type, const char *trace, size_t tl,
		    const char *name, size_t nl, const char *host, size_t hl)
{
	memcpy(m, begin_msg, 52);
	m[3] = type;
	m[44] = (uint8_t)tl;
	m[45] = (uint8_t)(tl >> 8);
	m[46] = (uint8_t)nl;
	m[47] = (uint8_t)(nl >> 8);
	m[48] = (uint8_t)hl;
	m[49] = (uint8_t)(hl >> 8);
	memcpy(m + 52, trace, tl);
	memcpy(m + 52 + tl, name, nl);
	memcpy(m + 52 + tl + nl, host, hl);
	return 52 + tl + nl + hl;
}

static enum zmq_trace_err dec(const void *m, size_t len)
{
	return zmq_trace_decode(m, len, &ev);
}

static void test_native_valid(void)
{
	uint8_t m[64];

	cmp_ok(dec(begin_msg, sizeof(begin_msg)), "==", ZMQ_TRACE_OK,
	       "native BEGIN decodes");
	cmp_ok(ev.format, "==", ZMQ_TRACE_NATIVE, "format native");
	cmp_ok(ev.phase, "==", TALLY_SPAN_BEGIN, "phase begin");
	cmp_ok(ev.dropped, "==", 3, "dropped");
	cmp_ok(ev.ts_ns, "==", 0x0102030405060708ll, "ts_ns little-endian");
	cmp_ok(ev.span_id, "==", 42, "span_id");
	cmp_ok(ev.parent_id, "==", 0, "parent_id");
	cmp_ok(ev.pid, "==", 1234, "pid");
	cmp_ok(ev.tid, "==", 1235, "tid");
	cmp_ok(ev.rank, "==", -1, "rank -1");
	is(ev.trace, "job", "trace");
	is(ev.name, "solve", "name");
	is(ev.host, "n1", "host");
	cmp_ok(ev.trace_len + ev.name_len + ev.host_len, "==", 10, "lengths");

	cmp_ok(dec(end_msg, sizeof(end_msg)), "==", ZMQ_TRACE_OK,
	       "native END without name decodes");
	cmp_ok(ev.phase, "==", TALLY_SPAN_END, "phase end");
	cmp_ok(ev.ts_ns, "==", 1000000000, "ts 1 s");
	cmp_ok(ev.span_id, "==", 0x1122334455667788ull, "64-bit span id");
	cmp_ok(ev.parent_id, "==", 7, "parent_id");
	cmp_ok(ev.rank, "==", 5, "rank");
	is(ev.trace, "T", "one-byte trace");
	is(ev.name, "", "empty name");
	is(ev.host, "", "empty host");

	memcpy(m, begin_msg, sizeof(begin_msg));
	m[50] = 0xab; /* reserved: ignored for forward compatibility */
	cmp_ok(dec(m, sizeof(begin_msg)), "==", ZMQ_TRACE_OK,
	       "non-zero reserved field is ignored");
}

static void test_native_max(void)
{
	static uint8_t m[TALLY_WIRE_MAX_MSG + 1];
	static char s[TALLY_WIRE_MAX_STR + 1];
	size_t len;

	memset(s, 'x', sizeof(s));
	len = build(m, TALLY_WIRE_BEGIN, s, TALLY_WIRE_MAX_STR, s,
		    TALLY_WIRE_MAX_STR, s, TALLY_WIRE_MAX_STR);
	cmp_ok(len, "==", TALLY_WIRE_MAX_MSG, "largest message is MAX_MSG");
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_OK, "1024-byte strings decode");
	cmp_ok(strlen(ev.name), "==", TALLY_WIRE_MAX_STR, "name kept whole");

	len = build(m, TALLY_WIRE_BEGIN, s, TALLY_WIRE_MAX_STR + 1, "n", 1, "",
		    0);
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_LENGTH,
	       "1025-byte trace id: bad_length");
	len = build(m, TALLY_WIRE_END, "t", 1, s, TALLY_WIRE_MAX_STR + 1, "",
		    0);
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_LENGTH,
	       "1025-byte name: bad_length");
	len = build(m, TALLY_WIRE_END, "t", 1, "", 0, s,
		    TALLY_WIRE_MAX_STR + 1);
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_LENGTH,
	       "1025-byte host: bad_length");
}

static void test_native_malformed(void)
{
	uint8_t m[128];
	size_t len;
	int all = 1;

	cmp_ok(dec(NULL, 0), "==", ZMQ_TRACE_ERR_TRUNCATED,
	       "empty message: truncated");
	for (size_t n = 1; n < sizeof(begin_msg); n++) {
		enum zmq_trace_err want = n < 52 ? ZMQ_TRACE_ERR_TRUNCATED
						 : ZMQ_TRACE_ERR_BAD_LENGTH;

		if (dec(begin_msg, n) != want) {
			diag("prefix of %zu bytes: %s", n,
			     zmq_trace_err_reason(dec(begin_msg, n)));
			all = 0;
		}
	}
	ok(all, "every strict prefix of a valid message: truncated below "
		"the 52-byte header, bad_length from there on");

	memcpy(m, begin_msg, sizeof(begin_msg));
	m[sizeof(begin_msg)] = 'x';
	cmp_ok(dec(m, sizeof(begin_msg) + 1), "==", ZMQ_TRACE_ERR_BAD_LENGTH,
	       "one trailing byte: bad_length");

	memcpy(m, begin_msg, sizeof(begin_msg));
	m[0] = 'x';
	cmp_ok(dec(m, sizeof(begin_msg)), "==", ZMQ_TRACE_ERR_BAD_MAGIC,
	       "first magic byte wrong: bad_magic");
	m[0] = 't';
	m[1] = 'y';
	cmp_ok(dec(m, sizeof(begin_msg)), "==", ZMQ_TRACE_ERR_BAD_MAGIC,
	       "second magic byte wrong: bad_magic");
	cmp_ok(dec("x", 1), "==", ZMQ_TRACE_ERR_BAD_MAGIC,
	       "one stray byte: bad_magic");

	memcpy(m, begin_msg, sizeof(begin_msg));
	m[2] = 3;
	cmp_ok(dec(m, sizeof(begin_msg)), "==", ZMQ_TRACE_ERR_UNKNOWN_VERSION,
	       "version 3: unknown_version");
	cmp_ok(dec(m, 4), "==", ZMQ_TRACE_ERR_UNKNOWN_VERSION,
	       "short version 3 message: unknown_version, not truncated");
	m[2] = 2;
	cmp_ok(dec(m, sizeof(begin_msg)), "==", ZMQ_TRACE_OK,
	       "version 2 without items (its ext_len is 0) decodes");
	m[2] = 0;
	cmp_ok(dec(m, sizeof(begin_msg)), "==", ZMQ_TRACE_ERR_UNKNOWN_VERSION,
	       "version 0: unknown_version");

	memcpy(m, begin_msg, sizeof(begin_msg));
	m[3] = 0;
	cmp_ok(dec(m, sizeof(begin_msg)), "==", ZMQ_TRACE_ERR_BAD_TYPE,
	       "type 0: bad_type");
	m[3] = 4;
	cmp_ok(dec(m, sizeof(begin_msg)), "==", ZMQ_TRACE_ERR_BAD_TYPE,
	       "type 4: bad_type");
	/* CLOSE: no name; a span_id of 0 (nothing queued) is valid */
	len = build(m, TALLY_WIRE_CLOSE, "t", 1, "n", 1, "", 0);
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_LENGTH,
	       "CLOSE with a name: bad_length");
	len = build(m, TALLY_WIRE_CLOSE, "t", 1, "", 0, "", 0);
	memset(m + 16, 0, 8);
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_OK, "CLOSE with span_id 0: ok");
	ok(ev.close, "CLOSE decoded as a close");

	len = build(m, TALLY_WIRE_BEGIN, "", 0, "n", 1, "", 0);
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_LENGTH,
	       "empty trace id: bad_length");
	len = build(m, TALLY_WIRE_BEGIN, "t", 1, "", 0, "", 0);
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_LENGTH,
	       "BEGIN without name: bad_length");
	len = build(m, TALLY_WIRE_END, "t", 1, "", 0, "h", 1);
	m[44] = 0x01; /* trace_len 0x0401 = 1025, one byte follows */
	m[45] = 0x04;
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_LENGTH,
	       "trace_len over 1024: bad_length");
	len = build(m, TALLY_WIRE_END, "t", 1, "", 0, "h", 1);
	m[48] = 5; /* host_len says 5, one byte follows */
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_LENGTH,
	       "lengths past the end: bad_length");

	memcpy(m, begin_msg, sizeof(begin_msg));
	memset(m + 16, 0, 8);
	cmp_ok(dec(m, sizeof(begin_msg)), "==", ZMQ_TRACE_ERR_BAD_SPAN_ID,
	       "span id 0: bad_span_id");
	memcpy(m, begin_msg, sizeof(begin_msg));
	m[15] = 0xff;
	cmp_ok(dec(m, sizeof(begin_msg)), "==", ZMQ_TRACE_OK,
	       "a timestamp before 1970 is well-formed");
	cmp_ok(ev.ts_ns, "==", (int64_t)0xff02030405060708ull, "negative ts");
}

static void test_native_utf8(void)
{
	static const struct {
		const char *name;
		size_t len;
		enum zmq_trace_err want;
		const char *what;
	} cases[] = {
		{ "caf\xc3\xa9", 5, ZMQ_TRACE_OK, "2-byte sequence" },
		{ "\xe2\x82\xac", 3, ZMQ_TRACE_OK, "3-byte sequence (euro)" },
		{ "\xf0\x9f\x98\x80", 4, ZMQ_TRACE_OK, "4-byte sequence" },
		{ "\xf4\x8f\xbf\xbf", 4, ZMQ_TRACE_OK, "U+10FFFF" },
		{ "\xff", 1, ZMQ_TRACE_ERR_BAD_UTF8, "byte 0xff" },
		{ "\x80", 1, ZMQ_TRACE_ERR_BAD_UTF8, "lone continuation" },
		{ "\xc0\xaf", 2, ZMQ_TRACE_ERR_BAD_UTF8, "overlong '/'" },
		{ "\xe0\x80\xaf", 3, ZMQ_TRACE_ERR_BAD_UTF8,
		  "overlong 3-byte" },
		{ "\xf0\x80\x80\xaf", 4, ZMQ_TRACE_ERR_BAD_UTF8,
		  "overlong 4-byte" },
		{ "\xed\xa0\x80", 3, ZMQ_TRACE_ERR_BAD_UTF8, "surrogate D800" },
		{ "\xf4\x90\x80\x80", 4, ZMQ_TRACE_ERR_BAD_UTF8,
		  "above U+10FFFF" },
		{ "\xe2\x82", 2, ZMQ_TRACE_ERR_BAD_UTF8, "cut sequence" },
		{ "a\0b", 3, ZMQ_TRACE_ERR_BAD_UTF8, "embedded NUL" },
	};
	uint8_t m[128];
	size_t len;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		len = build(m, TALLY_WIRE_BEGIN, "t", 1, cases[i].name,
			    cases[i].len, "", 0);
		cmp_ok(dec(m, len), "==", cases[i].want, "name: %s",
		       cases[i].what);
	}
	len = build(m, TALLY_WIRE_BEGIN, "t", 1, "n", 1, "\xc3", 1);
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_UTF8, "host checked too");
	len = build(m, TALLY_WIRE_BEGIN, "t\xe2", 2, "\x82\xac", 2, "", 0);
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_UTF8,
	       "a sequence split across trace and name: bad_utf8");
}

/* Test vectors of doc/wire-format.md, as its "Test vectors" section says
 * to read them. */
struct vector {
	char name[64];
	uint8_t b[TALLY_WIRE_MAX_MSG];
	size_t len;
	char reason[32]; /* from the invalid-messages table, "" if valid */
};

static struct vector vectors[32];
static int nvectors;

static struct vector *find_vector(const char *name)
{
	for (int i = 0; i < nvectors; i++)
		if (!strcmp(vectors[i].name, name))
			return &vectors[i];
	return NULL;
}

static int load_vectors(const char *path)
{
	char line[512];
	struct vector *v = NULL;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char name[64] = "bad-", change[128], reason[32];
		unsigned byte;
		char *p;
		int n;

		if (sscanf(line, "# vector %63s", name) == 1) {
			v = find_vector(name);
			if (!v && nvectors < (int)(sizeof(vectors) /
						   sizeof(vectors[0]))) {
				v = &vectors[nvectors++];
				strcpy(v->name, name);
			}
			continue;
		}
		if (!strncmp(line, "```", 3)) {
			v = NULL;
			continue;
		}
		if (v) {
			p = strchr(line, '#');
			if (p)
				*p = '\0';
			for (p = line; sscanf(p, " %2x%n", &byte, &n) == 1;
			     p += n)
				if (v->len < sizeof(v->b))
					v->b[v->len++] = (uint8_t)byte;
			continue;
		}
		/* | bad-type | byte 3 = `03` | `bad_type` | */
		if (sscanf(line, "| bad-%58[a-z0-9-] | %127[^|] | %31[^|]|",
			   name + 4, change, reason) == 3) {
			struct vector *t = find_vector(name);
			char *r = reason, *e;

			/* The table precedes the blocks: remember rows. */
			if (!t && nvectors < (int)(sizeof(vectors) /
						   sizeof(vectors[0]))) {
				t = &vectors[nvectors++];
				strcpy(t->name, name);
			}
			r += strspn(r, " `");
			e = r + strcspn(r, " `");
			*e = '\0';
			if (t)
				strcpy(t->reason, r);
		}
	}
	fclose(f);
	return 0;
}

/* The error the document's reason stands for: our reason names, or the
 * informal names of its first version. */
static enum zmq_trace_err doc_reason(const char *r)
{
	static const struct {
		const char *doc;
		enum zmq_trace_err err;
	} map[] = {
		{ "truncated", ZMQ_TRACE_ERR_TRUNCATED },
		{ "version", ZMQ_TRACE_ERR_UNKNOWN_VERSION },
		{ "type", ZMQ_TRACE_ERR_BAD_TYPE },
		{ "length", ZMQ_TRACE_ERR_BAD_LENGTH },
		{ "span_id", ZMQ_TRACE_ERR_BAD_SPAN_ID },
		{ "utf8", ZMQ_TRACE_ERR_BAD_UTF8 },
	};

	for (int e = 1; e < ZMQ_TRACE_ERR_COUNT; e++)
		if (!strcmp(zmq_trace_err_reason(e), r))
			return e;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i].doc, r))
			return map[i].err;
	return ZMQ_TRACE_ERR_COUNT;
}

static void test_doc_vectors(void)
{
	/* Expected values read off the document's prose by hand. */
	static const struct {
		const char *name;
		enum tally_span_phase phase;
		bool close;
		uint32_t dropped;
		int64_t ts_ns;
		uint64_t span_id, parent_id;
		int32_t rank;
		const char *span_name, *host;
	} valid[] = {
		{ "begin-root", TALLY_SPAN_BEGIN, false, 0,
		  1722000000123456789ll, 1, 0, 3, "solver", "n01" },
		{ "begin-nested", TALLY_SPAN_BEGIN, false, 0,
		  1722000000200000000ll, 2, 1, -1, "\xc3\xa9tape", "" },
		{ "end-dropped", TALLY_SPAN_END, false, 7,
		  1722000000623456789ll, 2, 1, 3, "", "n01" },
		{ "end-root", TALLY_SPAN_END, false, 0, 1722000001000000000ll,
		  1, 0, 3, "solver", "n01" },
		{ "close", TALLY_SPAN_END, true, 7, 1722000002000000000ll, 1234,
		  1722000000123456789ll, 3, "", "n01" },
	};
	const char *top = getenv("top_srcdir");
	char path[4096];
	int nbad = 0;

	snprintf(path, sizeof(path), "%s/doc/wire-format.md",
		 top ? top : TOP_SRCDIR);
	if (load_vectors(path)) {
		skip(1, "cannot read %s", path);
		return;
	}
	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		struct vector *v = find_vector(valid[i].name);

		if (!ok(v && v->len, "vector %s in the document",
			valid[i].name))
			continue;
		if (!cmp_ok(dec(v->b, v->len), "==", ZMQ_TRACE_OK, "%s decodes",
			    v->name))
			continue;
		cmp_ok(ev.phase, "==", valid[i].phase, "%s: phase", v->name);
		cmp_ok(ev.close, "==", valid[i].close, "%s: close", v->name);
		cmp_ok(ev.dropped, "==", valid[i].dropped, "%s: dropped",
		       v->name);
		cmp_ok(ev.ts_ns, "==", valid[i].ts_ns, "%s: ts_ns", v->name);
		cmp_ok(ev.span_id, "==", valid[i].span_id, "%s: span_id",
		       v->name);
		cmp_ok(ev.parent_id, "==", valid[i].parent_id, "%s: parent_id",
		       v->name);
		cmp_ok(ev.pid, "==", 4242, "%s: pid", v->name);
		cmp_ok(ev.tid, "==", 4243, "%s: tid", v->name);
		cmp_ok(ev.rank, "==", valid[i].rank, "%s: rank", v->name);
		is(ev.trace, "job42", "%s: trace", v->name);
		is(ev.name, valid[i].span_name, "%s: name", v->name);
		is(ev.host, valid[i].host, "%s: host", v->name);
	}
	for (int i = 0; i < nvectors; i++) {
		struct vector *v = &vectors[i];

		if (!v->reason[0])
			continue;
		nbad++;
		cmp_ok(dec(v->b, v->len), "==", doc_reason(v->reason),
		       "%s (%zu bytes): dropped as %s (document: %s)", v->name,
		       v->len, zmq_trace_err_reason(doc_reason(v->reason)),
		       v->reason);
	}
	cmp_ok(nbad, ">=", 16, "the document's invalid vectors were all found");
}

/* The version-2 vectors of the document, their contents by hand. */
static void test_doc_v2(void)
{
	struct vector *v;

	v = find_vector("v2-begin-source");
	if (ok(v && v->len == 117, "v2-begin-source: 117 bytes") &&
	    cmp_ok(dec(v->b, v->len), "==", ZMQ_TRACE_OK,
		   "v2-begin-source decodes")) {
		cmp_ok(ev.version, "==", 2, "version 2");
		cmp_ok(ev.phase, "==", TALLY_SPAN_BEGIN, "a BEGIN");
		ok(!ev.counter && !ev.close, "a span event");
		is(ev.name, "solver", "name");
		cmp_ok(ev.span_id, "==", 1, "span 1");
		cmp_ok(ev.nattrs, "==", 0, "no span attribute");
		cmp_ok(ev.ncounters, "==", 0, "no counter");
		cmp_ok(ev.nsource, "==", 2, "two source attributes");
		is(ev.source[0].key, "local_rank", "local_rank");
		cmp_ok(ev.source[0].type, "==", TALLY_ATTR_T_INT, "an int");
		cmp_ok(ev.source[0].i, "==", 1, "= 1");
		is(ev.source[1].key, "rocr_visible_devices", "GPUs");
		cmp_ok(ev.source[1].type, "==", TALLY_ATTR_T_STRING,
		       "a string");
		is(ev.source[1].s, "0,1", "= \"0,1\"");
	}
	v = find_vector("v2-end-attrs");
	if (ok(v && v->len == 126, "v2-end-attrs: 126 bytes") &&
	    cmp_ok(dec(v->b, v->len), "==", ZMQ_TRACE_OK,
		   "v2-end-attrs decodes")) {
		cmp_ok(ev.phase, "==", TALLY_SPAN_END, "an END");
		cmp_ok(ev.ts_ns, "==", 1722000001000000000ll, "ts");
		cmp_ok(ev.nattrs, "==", 4, "four attributes");
		is(ev.attrs[0].key, "bytes", "bytes");
		cmp_ok(ev.attrs[0].type, "==", TALLY_ATTR_T_INT, "int64");
		cmp_ok(ev.attrs[0].i, "==", 4096, "= 4096");
		is(ev.attrs[1].key, "ratio", "ratio");
		cmp_ok(ev.attrs[1].type, "==", TALLY_ATTR_T_DOUBLE, "double");
		ok(ev.attrs[1].d == 0.5, "= 0.5");
		is(ev.attrs[2].key, "file", "file");
		is(ev.attrs[2].s, "ckpt.h5", "= ckpt.h5");
		is(ev.attrs[3].key, "ok", "ok");
		cmp_ok(ev.attrs[3].type, "==", TALLY_ATTR_T_BOOL, "bool");
		ok(ev.attrs[3].b, "= true");
		cmp_ok(ev.nsource + ev.ncounters, "==", 0, "nothing else");
	}
	v = find_vector("v2-counter");
	if (ok(v && v->len == 131, "v2-counter: 131 bytes") &&
	    cmp_ok(dec(v->b, v->len), "==", ZMQ_TRACE_OK,
		   "v2-counter decodes")) {
		ok(ev.counter && !ev.close, "a COUNTER message");
		cmp_ok(ev.ts_ns, "==", 1722000001500000000ll, "ts");
		cmp_ok(ev.rank, "==", 3, "rank");
		cmp_ok(ev.ncounters, "==", 2, "two counters");
		is(ev.counters[0].name, "mpi_bytes", "mpi_bytes");
		cmp_ok(ev.counters[0].kind, "==", TALLY_WIRE_DELTA, "delta");
		cmp_ok(ev.counters[0].delta, "==", 1048576, "+1048576");
		cmp_ok(ev.counters[0].span_id, "==", 1, "in span 1");
		cmp_ok(ev.counters[0].nlabels, "==", 1, "one label");
		is(ev.counters[0].labels[0].key, "peer", "peer");
		is(ev.counters[0].labels[0].value, "2", "= 2");
		is(ev.counters[1].name, "queue_depth", "queue_depth");
		cmp_ok(ev.counters[1].kind, "==", TALLY_WIRE_GAUGE, "gauge");
		ok(ev.counters[1].gauge == 3.5, "= 3.5");
		cmp_ok(ev.counters[1].span_id, "==", 0, "no span");
		cmp_ok(ev.counters[1].nlabels, "==", 0, "no label");
	}
}

/* A v2 message: begin_msg's header as @type with items @x[0..@xl). */
static size_t build2(uint8_t *m, uint8_t type, const char *name,
		     const uint8_t *x, size_t xl)
{
	size_t len = build(m, type, "t", 1, name, strlen(name), "", 0);

	m[2] = 2;
	m[50] = (uint8_t)xl;
	m[51] = (uint8_t)(xl >> 8);
	if (xl)
		memcpy(m + len, x, xl);
	return len + xl;
}

static void test_v2_rules(void)
{
	static uint8_t m[TALLY_WIRE_MAX_MSG2 + 64];
	static uint8_t big[TALLY_WIRE_MAX_EXT + 8];
	/* counter "c", delta, no label, no span, value @v (8 bytes) */
#define CTR(kind, b0, b7)                                                   \
	3, 20, 0, kind, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, b0, 0, 0, 0, 0, 0, 0, \
		b7, 'c'
	static const uint8_t one[] = { CTR(1, 5, 0) };
	static const uint8_t neg[] = { CTR(1, 0, 0x80) };
	static const uint8_t nan[] = { CTR(2, 0,
					   0x7f) }; /* 0x7f..: see below */
	static const uint8_t kind[] = { CTR(3, 0, 0) };
	static const uint8_t attr[] = { 1, 5, 0, 2, 4, 'o', 'k', 1 };
	static const uint8_t skip[] = { 9, 2, 0, 0xaa, 0xbb, CTR(1, 5, 0) };
	static const uint8_t lab[] = {
		3, 27, 0, 1, 1, 1, 0, 0,   0, 0, 0,   0,   0,	0,   1,
		0, 0,  0, 0, 0, 0, 0, 'c', 4, 1, 'h', 'o', 's', 't', 'x'
	};
	static const uint8_t badname[] = { 3, 20, 0, 1, 1, 0, 0, 0, 0, 0, 0,  0,
					   0, 0,  1, 0, 0, 0, 0, 0, 0, 0, '9' };
	uint8_t nanv[sizeof(nan)];
	size_t len, n;

	len = build2(m, TALLY_WIRE_COUNTER, "", one, sizeof(one));
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_OK, "COUNTER with one delta");
	cmp_ok(ev.ncounters, "==", 1, "one counter");
	cmp_ok(ev.counters[0].delta, "==", 5, "of 5");
	m[2] = 1;
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_TYPE,
	       "type 4 in version 1: bad_type");

	len = build2(m, TALLY_WIRE_END, "n", skip, sizeof(skip));
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_OK, "an unknown item is skipped");
	cmp_ok(ev.ncounters, "==", 1, "the next one read");
	cmp_ok(ev.counters[0].delta, "==", 5, "right");

	len = build2(m, TALLY_WIRE_BEGIN, "n", one, sizeof(one));
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_OK, "counters ride on a BEGIN");
	cmp_ok(ev.ncounters, "==", 1, "its counter");

	len = build2(m, TALLY_WIRE_END, "n", NULL, 0);
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_OK, "v2 END without items");

	len = build2(m, TALLY_WIRE_COUNTER, "", neg, sizeof(neg));
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_VALUE, "negative delta");
	memcpy(nanv, nan, sizeof(nan));
	nanv[3 + 3 + 8 + 6] = 0xf8; /* 0x7ff8000000000000: NaN */
	nanv[3 + 3 + 8 + 7] = 0x7f;
	len = build2(m, TALLY_WIRE_COUNTER, "", nanv, sizeof(nanv));
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_VALUE, "NaN gauge");
	len = build2(m, TALLY_WIRE_COUNTER, "", kind, sizeof(kind));
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_VALUE, "unknown kind");
	len = build2(m, TALLY_WIRE_COUNTER, "", attr, sizeof(attr));
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_VALUE,
	       "an ATTR in a COUNTER message");
	len = build2(m, TALLY_WIRE_COUNTER, "", NULL, 0);
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_VALUE,
	       "a COUNTER message without items");
	len = build2(m, TALLY_WIRE_COUNTER, "x", one, sizeof(one));
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_VALUE,
	       "a COUNTER message with a name");
	len = build2(m, TALLY_WIRE_CLOSE, "", one, sizeof(one));
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_VALUE,
	       "a CLOSE with items");
	len = build2(m, TALLY_WIRE_COUNTER, "", lab, sizeof(lab));
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_VALUE,
	       "a counter label named host (the collector's)");
	len = build2(m, TALLY_WIRE_COUNTER, "", badname, sizeof(badname));
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_VALUE,
	       "a counter name starting with a digit");
	len = build2(m, TALLY_WIRE_COUNTER, "", one, sizeof(one) - 1);
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_LENGTH,
	       "an item past the section's end");

	/* bounds: 33 attributes, 65 counters, a section above 8192 */
	for (n = 0; n < 33; n++) {
		uint8_t *a = big + n * 9;

		memcpy(a, (const uint8_t[]){ 1, 6, 0, 3, 4, 'k', '0', '0', 1 },
		       9);
		a[6] = (uint8_t)('a' + n / 10);
		a[7] = (uint8_t)('0' + n % 10);
	}
	len = build2(m, TALLY_WIRE_END, "n", big, 32 * 9);
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_OK, "32 attributes");
	cmp_ok(ev.nattrs, "==", 32, "all kept");
	len = build2(m, TALLY_WIRE_END, "n", big, 33 * 9);
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_VALUE, "33 attributes");
	for (n = 0; n < 65; n++)
		memcpy(big + n * sizeof(one), one, sizeof(one));
	len = build2(m, TALLY_WIRE_COUNTER, "", big, 64 * sizeof(one));
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_OK, "64 counters");
	len = build2(m, TALLY_WIRE_COUNTER, "", big, 65 * sizeof(one));
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_VALUE, "65 counters");
	memset(big, 0, sizeof(big));
	big[0] = 9; /* one unknown item filling the section */
	big[1] = (uint8_t)(TALLY_WIRE_MAX_EXT - 3);
	big[2] = (uint8_t)((TALLY_WIRE_MAX_EXT - 3) >> 8);
	len = build2(m, TALLY_WIRE_END, "n", big, TALLY_WIRE_MAX_EXT);
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_OK, "an 8192-byte section");
	big[1]++;
	len = build2(m, TALLY_WIRE_END, "n", big, TALLY_WIRE_MAX_EXT + 1);
	cmp_ok(dec(m, len), "==", ZMQ_TRACE_ERR_BAD_LENGTH,
	       "an 8193-byte section");
#undef CTR
}

static enum zmq_trace_err jdec(const char *s)
{
	return zmq_trace_decode(s, strlen(s), &ev);
}

static void test_json_valid(void)
{
	cmp_ok(jdec("[\"start\", 1722000000123, \"3\", \"solver\"]"),
	       "==", ZMQ_TRACE_OK, "Omnistat start decodes");
	cmp_ok(ev.format, "==", ZMQ_TRACE_OMNISTAT, "format omnistat");
	cmp_ok(ev.phase, "==", TALLY_SPAN_BEGIN, "start is begin");
	cmp_ok(ev.ts_ns, "==", 1722000000123000000ll, "ms to ns");
	is(ev.trace, "3", "trace id");
	is(ev.name, "solver", "label");
	is(ev.host, "", "no host: the collector's");
	cmp_ok(ev.pid, "==", 0, "no pid");
	cmp_ok(ev.rank, "==", -1, "rank unknown");
	cmp_ok(ev.span_id, "==", 0, "no span id");
	cmp_ok(ev.dropped, "==", 0, "no drop count");

	cmp_ok(jdec("[\"end\",1722000000456,\"3\",\"solver\"]"),
	       "==", ZMQ_TRACE_OK, "compact end decodes");
	cmp_ok(ev.phase, "==", TALLY_SPAN_END, "end is end");
	cmp_ok(ev.ts_ns, "==", 1722000000456000000ll, "end time");

	cmp_ok(jdec(" \n[ \"start\" ,\t5 ,\r\"a\" , \"b\" ] \n"),
	       "==", ZMQ_TRACE_OK, "JSON whitespace everywhere");
	cmp_ok(ev.ts_ns, "==", 5000000, "5 ms");

	cmp_ok(jdec("[\"start\", 1722000000123.5, \"a\", \"b\"]"),
	       "==", ZMQ_TRACE_OK, "fractional ms");
	cmp_ok(ev.ts_ns, "==", 1722000000123500000ll, "exact ns, no rounding");
	cmp_ok(jdec("[\"start\", 0.000001, \"a\", \"b\"]"), "==", ZMQ_TRACE_OK,
	       "1 ns");
	cmp_ok(ev.ts_ns, "==", 1, "0.000001 ms = 1 ns");
	cmp_ok(jdec("[\"start\", 0.0000019, \"a\", \"b\"]"), "==", ZMQ_TRACE_OK,
	       "sub-ns digits");
	cmp_ok(ev.ts_ns, "==", 1, "truncated below 1 ns");
	cmp_ok(jdec("[\"start\", 1.5e3, \"a\", \"b\"]"), "==", ZMQ_TRACE_OK,
	       "exponent");
	cmp_ok(ev.ts_ns, "==", 1500000000, "1.5e3 ms");
	cmp_ok(jdec("[\"start\", 17220000001235E-1, \"a\", \"b\"]"),
	       "==", ZMQ_TRACE_OK, "negative exponent");
	cmp_ok(ev.ts_ns, "==", 1722000000123500000ll, "E-1");
	cmp_ok(jdec("[\"start\", 9223372036854, \"a\", \"b\"]"),
	       "==", ZMQ_TRACE_OK, "largest whole ms in int64 ns");
	cmp_ok(ev.ts_ns, "==", 9223372036854000000ll, "no overflow");
	cmp_ok(jdec("[\"start\", 0, \"a\", \"b\"]"), "==", ZMQ_TRACE_OK,
	       "zero time");
	cmp_ok(jdec("[\"start\", -0, \"a\", \"b\"]"), "==", ZMQ_TRACE_OK,
	       "minus zero");
	cmp_ok(ev.ts_ns, "==", 0, "-0 is 0");

	cmp_ok(jdec("[\"start\", 1, 7, \"b\"]"), "==", ZMQ_TRACE_OK,
	       "integer trace id");
	is(ev.trace, "7", "taken as its text");

	cmp_ok(jdec("[\"start\",1,\"a\\\"b\\\\c\\/\",\"\\u00e9\\n\\t\"]"),
	       "==", ZMQ_TRACE_OK, "escapes");
	is(ev.trace, "a\"b\\c/", "quote, backslash, slash");
	is(ev.name, "\xc3\xa9\n\t", "\\u00e9 is UTF-8 é, \\n, \\t");
	cmp_ok(jdec("[\"start\",1,\"a\",\"\\ud83d\\ude00\"]"),
	       "==", ZMQ_TRACE_OK, "surrogate pair");
	is(ev.name, "\xf0\x9f\x98\x80", "U+1F600 as 4 UTF-8 bytes");
	cmp_ok(jdec("[\"start\",1,\"a\",\"caf\xc3\xa9\"]"), "==", ZMQ_TRACE_OK,
	       "raw UTF-8");
	is(ev.name, "caf\xc3\xa9", "kept as is");
}

static void test_json_malformed(void)
{
	static const struct {
		const char *msg;
		enum zmq_trace_err want;
		const char *what;
	} cases[] = {
		{ "[\"begin\",1,\"a\",\"b\"]", ZMQ_TRACE_ERR_BAD_TYPE,
		  "unknown kind" },
		{ "[\"Start\",1,\"a\",\"b\"]", ZMQ_TRACE_ERR_BAD_TYPE,
		  "kinds are case-sensitive" },
		{ "[1,1,\"a\",\"b\"]", ZMQ_TRACE_ERR_BAD_JSON,
		  "kind not a string" },
		{ "[\"start\",1,\"a\"]", ZMQ_TRACE_ERR_BAD_JSON, "3 elements" },
		{ "[\"start\",1,\"a\",\"b\",\"c\"]", ZMQ_TRACE_ERR_BAD_JSON,
		  "5 elements" },
		{ "[\"start\",\"1\",\"a\",\"b\"]", ZMQ_TRACE_ERR_BAD_JSON,
		  "time as a string" },
		{ "[\"start\",01,\"a\",\"b\"]", ZMQ_TRACE_ERR_BAD_JSON,
		  "leading zero" },
		{ "[\"start\",1.,\"a\",\"b\"]", ZMQ_TRACE_ERR_BAD_JSON,
		  "dot without digits" },
		{ "[\"start\",1e,\"a\",\"b\"]", ZMQ_TRACE_ERR_BAD_JSON,
		  "exponent without digits" },
		{ "[\"start\",-5,\"a\",\"b\"]", ZMQ_TRACE_ERR_BAD_VALUE,
		  "negative time" },
		{ "[\"start\",1e400,\"a\",\"b\"]", ZMQ_TRACE_ERR_BAD_VALUE,
		  "time out of range" },
		{ "[\"start\",9223372036855,\"a\",\"b\"]",
		  ZMQ_TRACE_ERR_BAD_VALUE, "first ms past int64 ns" },
		{ "[\"start\",1,\"\",\"b\"]", ZMQ_TRACE_ERR_BAD_VALUE,
		  "empty trace id" },
		{ "[\"end\",1,\"a\",\"\"]", ZMQ_TRACE_ERR_BAD_VALUE,
		  "empty label" },
		{ "[\"start\",1,\"a\",\"b\"] x", ZMQ_TRACE_ERR_BAD_JSON,
		  "trailing garbage" },
		{ "[\"start\",1,\"a\",\"b\"", ZMQ_TRACE_ERR_BAD_JSON,
		  "unterminated array" },
		{ "[\"start\",1,\"a\",\"b", ZMQ_TRACE_ERR_BAD_JSON,
		  "unterminated string" },
		{ "[\"start\",1,\"a\",\"b\\", ZMQ_TRACE_ERR_BAD_JSON,
		  "cut escape" },
		{ "[\"start\",1,\"a\",\"\\u12\"]", ZMQ_TRACE_ERR_BAD_JSON,
		  "short \\u escape" },
		{ "[\"start\",1,\"a\",\"\\x41\"]", ZMQ_TRACE_ERR_BAD_JSON,
		  "unknown escape" },
		{ "[\"start\",1,[\"a\"],\"b\"]", ZMQ_TRACE_ERR_BAD_JSON,
		  "nested array" },
		{ "[\"start\" 1,\"a\",\"b\"]", ZMQ_TRACE_ERR_BAD_JSON,
		  "missing comma" },
		{ "[\"start\",1,\"a\",\"b\x01\"]", ZMQ_TRACE_ERR_BAD_JSON,
		  "raw control character" },
		{ "[", ZMQ_TRACE_ERR_BAD_JSON, "lone bracket" },
		{ "[]", ZMQ_TRACE_ERR_BAD_JSON, "empty array" },
		{ "[\"start\",1,\"a\",\"\\ud800\"]", ZMQ_TRACE_ERR_BAD_UTF8,
		  "lone high surrogate" },
		{ "[\"start\",1,\"a\",\"\\udc00x\"]", ZMQ_TRACE_ERR_BAD_UTF8,
		  "lone low surrogate" },
		{ "[\"start\",1,\"a\",\"\\u0000\"]", ZMQ_TRACE_ERR_BAD_UTF8,
		  "escaped NUL" },
		{ "[\"start\",1,\"a\",\"\xff\"]", ZMQ_TRACE_ERR_BAD_UTF8,
		  "raw invalid byte" },
		{ "{\"start\":1}", ZMQ_TRACE_ERR_BAD_MAGIC, "a JSON object" },
		{ "hello", ZMQ_TRACE_ERR_BAD_MAGIC, "plain text" },
		{ "   ", ZMQ_TRACE_ERR_BAD_MAGIC, "whitespace only" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cmp_ok(jdec(cases[i].msg), "==", cases[i].want, "%s: %s",
		       cases[i].what, zmq_trace_err_reason(cases[i].want));
}

static void test_json_lengths(void)
{
	char *m = malloc(2 * TALLY_WIRE_MAX_STR + 64);
	int n;

	n = sprintf(m, "[\"start\",1,\"a\",\"");
	memset(m + n, 'x', TALLY_WIRE_MAX_STR);
	strcpy(m + n + TALLY_WIRE_MAX_STR, "\"]");
	cmp_ok(jdec(m), "==", ZMQ_TRACE_OK, "1024-byte label");
	cmp_ok(ev.name_len, "==", TALLY_WIRE_MAX_STR, "kept whole");

	memset(m + n, 'x', TALLY_WIRE_MAX_STR + 1);
	strcpy(m + n + TALLY_WIRE_MAX_STR + 1, "\"]");
	cmp_ok(jdec(m), "==", ZMQ_TRACE_ERR_BAD_LENGTH, "1025-byte label");

	/* 342 escapes of 3 UTF-8 bytes each: 1026 bytes once decoded */
	n = sprintf(m, "[\"start\",1,\"a\",\"");
	for (int i = 0; i < 342; i++)
		n += sprintf(m + n, "\\u20ac");
	strcpy(m + n, "\"]");
	cmp_ok(jdec(m), "==", ZMQ_TRACE_ERR_BAD_LENGTH,
	       "the limit applies to the decoded length");
	free(m);
}

static void test_reasons(void)
{
	is(zmq_trace_err_reason(ZMQ_TRACE_ERR_TRUNCATED), "truncated",
	   "reason truncated");
	is(zmq_trace_err_reason(ZMQ_TRACE_ERR_BAD_LENGTH), "bad_length",
	   "reason bad_length");
	is(zmq_trace_err_reason(ZMQ_TRACE_ERR_BAD_MAGIC), "bad_magic",
	   "reason bad_magic");
	is(zmq_trace_err_reason(ZMQ_TRACE_ERR_UNKNOWN_VERSION),
	   "unknown_version", "reason unknown_version");
	is(zmq_trace_err_reason(ZMQ_TRACE_ERR_BAD_TYPE), "bad_type",
	   "reason bad_type");
	is(zmq_trace_err_reason(ZMQ_TRACE_ERR_BAD_SPAN_ID), "bad_span_id",
	   "reason bad_span_id");
	is(zmq_trace_err_reason(ZMQ_TRACE_ERR_BAD_UTF8), "bad_utf8",
	   "reason bad_utf8");
	is(zmq_trace_err_reason(ZMQ_TRACE_ERR_BAD_JSON), "bad_json",
	   "reason bad_json");
	is(zmq_trace_err_reason(ZMQ_TRACE_ERR_BAD_VALUE), "bad_value",
	   "reason bad_value");
	is(zmq_trace_err_reason(ZMQ_TRACE_ERR_MULTIPART), "multipart",
	   "reason multipart");
	is(zmq_trace_err_reason(ZMQ_TRACE_ERR_CLOCK_SKEW), "clock_skew",
	   "reason clock_skew");
	is(zmq_trace_err_reason((enum zmq_trace_err)99), "other",
	   "out of range");
}

static void test_skew(void)
{
	const int64_t now = 1722000000123456789ll, s = 1000000000ll;
	static const struct {
		int64_t ts, max;
		int want;
		const char *what;
	} cases[] = {
		{ now, 300 * s, 0, "now" },
		{ now + 300 * s, 300 * s, 0, "300 s ahead: the bound itself" },
		{ now - 300 * s, 300 * s, 0, "300 s behind" },
		{ now + 300 * s + 1, 300 * s, 1, "1 ns past it, ahead" },
		{ now - 300 * s - 1, 300 * s, 1, "1 ns past it, behind" },
		{ 1722000000123ll * 1000, 300 * s, 1,
		  "epoch seconds sent as ms: 56 years behind" },
		{ -1, 300 * s, 1, "-1" },
		{ INT64_MIN, 300 * s, 1, "INT64_MIN: no overflow" },
		{ INT64_MAX, 300 * s, 1, "INT64_MAX: no overflow" },
		{ INT64_MIN, 0, 0, "max 0: no bound" },
		{ now + 1, 0, 0, "max 0, 1 ns ahead" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cmp_ok(zmq_trace_ts_skewed(cases[i].ts, now, cases[i].max),
		       "==", cases[i].want, "skew: %s", cases[i].what);
	cmp_ok(zmq_trace_ts_skewed(INT64_MAX, INT64_MIN, INT64_MAX), "==", 1,
	       "skew: the widest distance, 2^64 - 1, exceeds INT64_MAX");
}

int main(void)
{
	plan(NO_PLAN);
	test_native_valid();
	test_native_max();
	test_native_malformed();
	test_native_utf8();
	test_doc_vectors();
	test_doc_v2();
	test_v2_rules();
	test_json_valid();
	test_json_malformed();
	test_json_lengths();
	test_reasons();
	test_skew();
	return done_testing();
}
