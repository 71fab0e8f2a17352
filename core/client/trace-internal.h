/* SPDX-License-Identifier: MIT */
/*
 * core/client/trace-internal.h - libtally-trace internals shared with the
 * unit tests: the message encoder and the environment probes
 *
 * Nothing here is exported from libtally-trace.so (only tally_trace_*).
 */
#ifndef TALLY_TRACE_INTERNAL_H
#define TALLY_TRACE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tally/wire.h"
#include "tally/utf8.h"

/*
 * struct tt_source - what every message of one sending thread repeats
 * @trace, @host: not NUL-terminated, valid UTF-8, each at most
 *                TALLY_WIRE_MAX_STR bytes (tally_utf8_clip() first)
 */
struct tt_source {
	uint32_t pid;
	uint32_t tid;
	int32_t rank;
	uint16_t trace_len;
	uint16_t host_len;
	const char *trace;
	const char *host;
};

/*
 * tt_msg_init() - write the constant parts of a message once
 * @m: buffer of TALLY_WIRE_MAX_MSG bytes
 *
 * The header is prebuilt per thread so that an event only writes the fields
 * that change (type, dropped, timestamp, ids, name) and the two strings
 * after the name (the layout puts the hostname after the variable name).
 */
static inline void tt_msg_init(uint8_t *m, const struct tt_source *s)
{
	memset(m, 0, TALLY_WIRE_HDR_SIZE);
	m[0] = TALLY_WIRE_MAGIC0;
	m[1] = TALLY_WIRE_MAGIC1;
	m[2] = TALLY_WIRE_VERSION;
	tally_wire_put32(m + 32, s->pid);
	tally_wire_put32(m + 36, s->tid);
	tally_wire_put32(m + 40, (uint32_t)s->rank);
	tally_wire_put16(m + 44, s->trace_len);
	tally_wire_put16(m + 48, s->host_len);
	memcpy(m + TALLY_WIRE_HDR_SIZE, s->trace, s->trace_len);
}

/*
 * tt_msg_fill() - complete a message prepared by tt_msg_init()
 * @type:     TALLY_WIRE_BEGIN, TALLY_WIRE_END, TALLY_WIRE_CLOSE or (before
 *            tt_msg_v2()) TALLY_WIRE_COUNTER
 * @name_len: at most TALLY_WIRE_MAX_STR (BEGIN: at least 1)
 *
 * Return: the message length in bytes.
 */
static inline size_t tt_msg_fill(uint8_t *m, const struct tt_source *s,
				 uint8_t type, uint32_t dropped, int64_t ts_ns,
				 uint64_t span_id, uint64_t parent_id,
				 const char *name, size_t name_len)
{
	uint8_t *p = m + TALLY_WIRE_HDR_SIZE + s->trace_len;

	m[2] = TALLY_WIRE_VERSION;
	m[3] = type;
	m[50] = m[51] = 0;
	tally_wire_put32(m + 4, dropped);
	tally_wire_put64(m + 8, (uint64_t)ts_ns);
	tally_wire_put64(m + 16, span_id);
	tally_wire_put64(m + 24, parent_id);
	tally_wire_put16(m + 46, (uint16_t)name_len);
	memcpy(p, name, name_len);
	memcpy(p + name_len, s->host, s->host_len);
	return TALLY_WIRE_HDR_SIZE + s->trace_len + name_len + s->host_len;
}

/*
 * Version 2 (doc/wire-format.md): a message prepared by tt_msg_fill() with
 * an item section appended at m + n. tt_msg_fill() writes version 1 and no
 * section, so plain events stay version 1.
 */
static inline size_t tt_msg_v2(uint8_t *m, size_t n, size_t ext_len)
{
	m[2] = TALLY_WIRE_VERSION2;
	tally_wire_put16(m + 50, (uint16_t)ext_len);
	return n + ext_len;
}

/*
 * tt_item_attr() - write an ATTR or SOURCE item at @p
 * @tag:  TALLY_WIRE_ITEM_ATTR or TALLY_WIRE_ITEM_SOURCE
 * @key:  a valid name (tally_wire_name_ok()), @kl bytes
 * @type: TALLY_WIRE_T_*; @val points to an int64_t, a double, the string
 *        (@vl bytes, valid UTF-8, at most TALLY_WIRE_MAX_ATTR_STR) or a
 *        bool as one byte 0 or 1
 * Return: the bytes written, 3 + 2 + @kl + the value's size.
 */
static inline size_t tt_item_attr(uint8_t *p, uint8_t tag, const char *key,
				  size_t kl, uint8_t type, const void *val,
				  size_t vl)
{
	uint64_t bits;

	if (type == TALLY_WIRE_T_INT64 || type == TALLY_WIRE_T_DOUBLE)
		vl = 8;
	else if (type == TALLY_WIRE_T_BOOL)
		vl = 1;
	p[0] = tag;
	tally_wire_put16(p + 1, (uint16_t)(2 + kl + vl));
	p[3] = (uint8_t)kl;
	p[4] = type;
	memcpy(p + 5, key, kl);
	if (vl == 8 && type != TALLY_WIRE_T_STRING) {
		memcpy(&bits, val, 8);
		tally_wire_put64(p + 5 + kl, bits);
	} else {
		memcpy(p + 5 + kl, val, vl);
	}
	return 5 + kl + vl;
}

/*
 * tt_item_counter() - write a COUNTER item at @p
 * @kind:    TALLY_WIRE_DELTA or TALLY_WIRE_GAUGE
 * @name:    a valid name, @nl bytes
 * @labels:  @nlabels labels already encoded as the format says (key_len,
 *           val_len, key, value), @ll bytes
 * @span_id: 0 for none
 * @value:   the int64 delta or the double's bits
 * Return: the bytes written, 3 + TALLY_WIRE_COUNTER_FIXED + @nl + @ll.
 */
static inline size_t tt_item_counter(uint8_t *p, uint8_t kind,
				     const char *name, size_t nl,
				     uint8_t nlabels, const uint8_t *labels,
				     size_t ll, uint64_t span_id,
				     uint64_t value)
{
	size_t len = TALLY_WIRE_COUNTER_FIXED + nl + ll;

	p[0] = TALLY_WIRE_ITEM_COUNTER;
	tally_wire_put16(p + 1, (uint16_t)len);
	p[3] = kind;
	p[4] = (uint8_t)nl;
	p[5] = nlabels;
	tally_wire_put64(p + 6, span_id);
	tally_wire_put64(p + 14, value);
	memcpy(p + 22, name, nl);
	memcpy(p + 22 + nl, labels, ll);
	return 3 + len;
}

/*
 * tt_clip() - @s (@len bytes) as sent: cut to @max bytes at a character
 * boundary, or with ill-formed UTF-8 replaced by U+FFFD, into @out (@max
 * bytes, not NUL-terminated)
 * Return: the bytes written.
 */
static inline size_t tt_clip(const char *s, size_t len, char *out, size_t max)
{
	if (tally_utf8_valid(s, len)) {
		len = tally_utf8_clip(s, len, max);
		memcpy(out, s, len);
		return len;
	}
	return tally_utf8_fix(s, len, out, max);
}

/*
 * UTF-8 clipping and repair: tally/utf8.h (core/utf8.c is built into this
 * library too, hidden: libtally-trace exports only tally_trace_*).
 */

/*
 * tt_env_rank() - the launcher rank: the first of PMIX_RANK,
 * OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID, FLUX_TASK_RANK that holds a
 * non-negative decimal int32
 * Return: the rank, or -1.
 */
int32_t tt_env_rank(void);

/*
 * tt_env_announce() - the SOURCE items a tracer announces (doc/wire-
 * format.md): local_rank from the first of OMPI_COMM_WORLD_LOCAL_RANK,
 * MPI_LOCALRANKID, PMI_LOCAL_RANK, SLURM_LOCALID, FLUX_TASK_LOCAL_ID,
 * PALS_LOCAL_RANKID holding a non-negative decimal, and each of
 * ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES that is
 * set (its value cut to 256 bytes, ill-formed UTF-8 replaced)
 * @out: at least TT_ANNOUNCE_MAX bytes
 * Return: the bytes written, 0 when none of them is set.
 */
#define TT_ANNOUNCE_MAX 1024
size_t tt_env_announce(uint8_t *out);

/*
 * tt_env_jobid() - the batch job id: the first non-empty of SLURM_JOB_ID,
 * FLUX_JOB_ID, PBS_JOBID, LSB_JOBID (the same order as tallyd --user),
 * bounded as tallyd bounds it (tally_jobid_bound())
 * @buf: TALLY_JOBID_MAX + 1 bytes, for the result
 * Return: @buf, or NULL outside a job.
 */
const char *tt_env_jobid(char *buf);

/*
 * tt_default_trace_id() - TALLY_TRACE_ID, else the job id, else "pid-PID"
 * Return: a malloc'd string, or NULL with errno = ENOMEM.
 */
char *tt_default_trace_id(void);

/*
 * tt_tmp_dir - where user collectors without XDG_RUNTIME_DIR keep their
 * sockets: "/tmp"; the unit test points it at a directory of its own, so
 * that a user collector running on the machine does not change its result
 */
extern const char *tt_tmp_dir;

/*
 * tt_discover_endpoint() - where to send: TALLY_TRACE_ENDPOINT, else the
 * first existing socket file among $TALLY_RUNTIME_DIR/trace.sock,
 * $XDG_RUNTIME_DIR/tally[/job-ID]/trace.sock and
 * /tmp/tally-UID[/job-ID]/trace.sock (with /job-ID inside a job, without
 * outside one: the directories tallyd --user uses), else the system
 * collector's TT_SYSTEM_ENDPOINT
 * Return: a malloc'd endpoint, or NULL with errno = ENOMEM.
 */
char *tt_discover_endpoint(void);

#define TT_SYSTEM_ENDPOINT "ipc:///run/tally/trace.sock"

#endif /* TALLY_TRACE_INTERNAL_H */
