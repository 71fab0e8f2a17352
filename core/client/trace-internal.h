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
 * @type:     TALLY_WIRE_BEGIN or TALLY_WIRE_END
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

	m[3] = type;
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
 * tt_env_jobid() - the batch job id: the first non-empty of SLURM_JOB_ID,
 * FLUX_JOB_ID, PBS_JOBID, LSB_JOBID (the same order as tallyd --user)
 * Return: a getenv() string, or NULL.
 */
const char *tt_env_jobid(void);

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
