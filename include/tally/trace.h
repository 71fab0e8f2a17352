/* SPDX-License-Identifier: MIT */
/*
 * tally/trace.h - libtally-trace, the application side of tally's traces
 *
 * An application marks regions of its run as spans; the node's tally
 * collector (its zmq_trace input) knows, live, which region every process
 * is in. Link with `pkg-config --libs tally-trace`. Man page: tally-trace(3);
 * wire format: doc/wire-format.md.
 *
 *	struct tally_trace *tr = tally_trace_open(NULL, NULL);
 *	uint64_t s = tally_trace_begin(tr, "solver");
 *	...
 *	tally_trace_end(tr, s);
 *	tally_trace_close(tr);
 *
 * Guarantees:
 * - Never blocks and never fails the application: every event is one
 *   ZeroMQ message sent with ZMQ_DONTWAIT; an event that cannot be queued
 *   is dropped and counted, and the count rides on the next message that
 *   gets through. A NULL tracer is accepted everywhere and does nothing, so
 *   a failed open needs no special casing.
 * - Thread-safe: any thread may call begin/end on a shared tracer. Each
 *   thread gets its own PUSH socket and its own stack of open spans (a new
 *   span's parent is the innermost span open on the calling thread).
 * - Fork-safe: a child process re-opens lazily on its first call, as a new
 *   source (its own pid) with no open spans.
 * - Only tally_trace_close() may wait, and for a bounded time.
 *
 * Environment (read by tally_trace_open()):
 *   TALLY_TRACE_ENDPOINT   collector endpoint, overrides discovery
 *   TALLY_TRACE_ID         trace id when the caller passes NULL
 *   TALLY_TRACE_LINGER_MS  close drain bound, ms (default 2000, max 60000)
 *   TALLY_TRACE_SNDHWM     per-thread send queue, messages (default 10000;
 *                          1..16777216, and 0 or garbage mean the default:
 *                          the queue stays bounded)
 *   TALLY_TRACE_COUNTER_INTERVAL  seconds between counter snapshots
 *                          (default 1; 0.001..3600)
 *   TALLY_TRACE_FLUSHER    "1": start the flusher thread at open
 *   announced (wire v2, first message of each connection): local rank from
 *   OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, PMI_LOCAL_RANK,
 *   SLURM_LOCALID, FLUX_TASK_LOCAL_ID or PALS_LOCAL_RANKID, and
 *   ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, CUDA_VISIBLE_DEVICES.
 *   rank: PMIX_RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID,
 *   FLUX_TASK_RANK (first set wins); job: SLURM_JOB_ID, FLUX_JOB_ID,
 *   PBS_JOBID, LSB_JOBID.
 */
#ifndef TALLY_TRACE_H
#define TALLY_TRACE_H

#include <stddef.h> /* NULL, for tally_trace_open(NULL, NULL) */
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** struct tally_trace - an open tracer (opaque) */
struct tally_trace;

/**
 * tally_trace_open() - open a tracer
 * @endpoint: ZeroMQ endpoint of the collector ("ipc:///path",
 *            "tcp://host:port" with a port 1..65535), or NULL (not "") to
 *            discover it: TALLY_TRACE_ENDPOINT
 *            if set; else the socket of a user collector running for this
 *            user (and batch job, if any) when the socket file exists:
 *            $TALLY_RUNTIME_DIR/trace.sock, then
 *            {$XDG_RUNTIME_DIR/tally,/tmp/tally-UID}[/job-JOBID]/trace.sock;
 *            else the system collector's ipc:///run/tally/trace.sock
 * @trace_id: trace id grouping this run's spans (UTF-8, truncated to 1024
 *            bytes), or NULL or "" for TALLY_TRACE_ID, else the batch job
 *            id, else "pid-<pid>"
 *
 * Connecting is asynchronous: opening succeeds whether or not a collector
 * listens; events sent before it appears are queued (up to the send
 * high-water mark) and delivered when it does.
 *
 * Ill-formed UTF-8 in the trace id (and the hostname) is sent with each
 * ill-formed part replaced by U+FFFD, as in names.
 *
 * Return: the tracer, to be closed with tally_trace_close(); or NULL with
 * errno set: ENOMEM; EINVAL (endpoint "", malformed, or a tcp port out of
 * 1..65535); EPROTONOSUPPORT (a transport other than ipc and tcp: the
 * collector binds nothing else; inproc:// is this process's own);
 * ENAMETOOLONG (ipc path longer than a Unix socket address allows).
 * Thread-safety: may be called from any thread.
 */
struct tally_trace *tally_trace_open(const char *endpoint,
				     const char *trace_id);

/**
 * tally_trace_begin() - open a span on the calling thread
 * @tr:   tracer, or NULL (no-op)
 * @name: region name, UTF-8, not empty; longer than 1024 bytes is
 *        truncated at a character boundary. Ill-formed UTF-8 is sent with
 *        each maximal ill-formed part replaced by U+FFFD (the collector
 *        drops ill-formed strings), as the Python client does; an ASCII
 *        name costs one pass to find that out. Copied: the caller keeps it.
 *
 * Sends a BEGIN event whose parent is the innermost span open on this
 * thread, and pushes the span on the thread's stack.
 *
 * Return: the span id (non-zero, unique in this process), also when the
 * event itself had to be dropped; 0 with errno = EINVAL (NULL tracer,
 * NULL or empty name), EBADF (tracer closed) or ENOMEM.
 * Thread-safety: safe; never blocks.
 */
uint64_t tally_trace_begin(struct tally_trace *tr, const char *name);

/**
 * tally_trace_end() - close a span by id
 * @tr:      tracer, or NULL (no-op)
 * @span_id: a value returned by tally_trace_begin()
 *
 * Sends an END event for @span_id and removes it from the calling thread's
 * stack (spans opened inside it and still open stay open). A span should
 * end on the thread that began it; ending it elsewhere still sends the END
 * (without name), but the beginning thread keeps it as the parent of its
 * next spans.
 *
 * Return: 0; or -1 with errno = ENOENT (@span_id was not open on this
 * thread: the END was sent anyway), EINVAL (@span_id 0 or NULL tracer),
 * EBADF (tracer closed).
 * Thread-safety: safe; never blocks.
 */
int tally_trace_end(struct tally_trace *tr, uint64_t span_id);

/**
 * tally_trace_end_name() - close the innermost open span with this name
 * @tr:   tracer, or NULL (no-op)
 * @name: region name as given to tally_trace_begin() (same truncation)
 *
 * For instrumentation that marks "end of solver" without keeping the id.
 *
 * Return: 0; or -1 with errno = ENOENT (no span of that name is open on
 * this thread: nothing is sent), EINVAL (NULL or empty name, NULL
 * tracer), EBADF (tracer closed).
 * Thread-safety: safe; never blocks.
 */
int tally_trace_end_name(struct tally_trace *tr, const char *name);

/**
 * tally_trace_attr_i64() - set an attribute of the innermost open span
 * @tr:    tracer, or NULL (EINVAL)
 * @key:   1 to 64 bytes of [A-Za-z_][A-Za-z0-9_]* (not starting with a
 *         digit); copied
 * @value: the value
 *
 * The attribute is kept with the calling thread's innermost open span
 * and sent with its END (wire v2; an END without attributes stays v1).
 * Setting a key again replaces its value. tally_trace_attr_f64() takes a
 * finite double, tally_trace_attr_str() a string (copied, cut to 256
 * bytes at a character boundary, ill-formed UTF-8 replaced by U+FFFD),
 * tally_trace_attr_bool() a truth value. The tally_trace_span_attr_*()
 * variants name the span by id instead (a span open on the calling
 * thread). The collector puts them on the span record as typed values:
 * the aggregate filter sums the numbers per region.
 *
 * Return: 0; or -1 with errno = EINVAL (NULL tracer, a bad key, a value
 * not finite, a NULL string, span id 0), ENOENT (no span open on this
 * thread, or not that one), E2BIG (the span has 32 attributes, or 4096
 * bytes of them, already), ENOMEM.
 * Thread-safety: safe; never blocks, sends nothing.
 */
int tally_trace_attr_i64(struct tally_trace *tr, const char *key,
			 int64_t value);
/** tally_trace_attr_f64() - as tally_trace_attr_i64(), a finite double */
int tally_trace_attr_f64(struct tally_trace *tr, const char *key,
			 double value);
/** tally_trace_attr_str() - as tally_trace_attr_i64(), a UTF-8 string */
int tally_trace_attr_str(struct tally_trace *tr, const char *key,
			 const char *value);
/** tally_trace_attr_bool() - as tally_trace_attr_i64(), 0 or not 0 */
int tally_trace_attr_bool(struct tally_trace *tr, const char *key, int value);
/** tally_trace_span_attr_i64() - tally_trace_attr_i64() on span @span_id */
int tally_trace_span_attr_i64(struct tally_trace *tr, uint64_t span_id,
			      const char *key, int64_t value);
/** tally_trace_span_attr_f64() - tally_trace_attr_f64() on span @span_id */
int tally_trace_span_attr_f64(struct tally_trace *tr, uint64_t span_id,
			      const char *key, double value);
/** tally_trace_span_attr_str() - tally_trace_attr_str() on span @span_id */
int tally_trace_span_attr_str(struct tally_trace *tr, uint64_t span_id,
			      const char *key, const char *value);
/** tally_trace_span_attr_bool() - tally_trace_attr_bool() on @span_id */
int tally_trace_span_attr_bool(struct tally_trace *tr, uint64_t span_id,
			       const char *key, int value);

/**
 * tally_trace_counter_add() - add to an application counter
 * @tr:     tracer, or NULL (EINVAL)
 * @name:   counter name, as an attribute key (the collector exports
 *          tally_app_NAME_total)
 * @labels: NULL or "" for none, else up to 4 "key=value" pairs joined by
 *          commas ("peer=3,op=send"): keys as @name, none of trace,
 *          rank, host, pid; values up to 128 bytes of UTF-8 without ','
 * @delta:  >= 0
 *
 * Counters are kept in the process: an add is one atomic addition on the
 * series of (@name, @labels) after a lookup without a lock; nothing is
 * sent per call. A snapshot of every counter that changed rides on the
 * next begin or end once TALLY_TRACE_COUNTER_INTERVAL (1 s) has passed
 * since the last one, and goes out at tally_trace_flush() and close. The
 * library starts no thread by default: a thread that computes for long
 * without a begin or end sends no snapshot meanwhile (the collector's
 * tally_trace_source_last_seen_timestamp_seconds shows how old the last
 * one is); tally_trace_flusher() or TALLY_TRACE_FLUSHER=1 sends them
 * from a thread of its own. A snapshot that cannot be queued is sent
 * again with the next one: sums stay exact. At most 1024 series per
 * tracer. A forked child starts its counters from zero.
 *
 * Return: 0; or -1 with errno = EINVAL (NULL tracer or name, a bad name
 * or label, a negative delta), ENOSPC (1024 series already), ENOMEM.
 * Thread-safety: safe; never blocks (a new series takes the library's
 * lock once).
 */
int tally_trace_counter_add(struct tally_trace *tr, const char *name,
			    const char *labels, int64_t delta);

/**
 * tally_trace_gauge_set() - set an application gauge to @value
 * @value: finite; the collector exports tally_app_NAME with the last one
 *
 * As tally_trace_counter_add(), for a level instead of a sum; a series
 * of its own (a gauge and a counter may share a name).
 * Return: as tally_trace_counter_add(); EINVAL for a value not finite.
 */
int tally_trace_gauge_set(struct tally_trace *tr, const char *name,
			  const char *labels, double value);

/**
 * tally_trace_flush() - send the counters' snapshots now
 * @tr: tracer
 *
 * Sends what changed since the last snapshot in COUNTER messages on the
 * calling thread's socket, without waiting (a message that cannot be
 * queued goes with a later snapshot).
 * Return: 0; or -1 with errno = EINVAL (NULL tracer), EAGAIN (another
 * thread kept the snapshot for long), ENOMEM.
 * Thread-safety: safe.
 */
int tally_trace_flush(struct tally_trace *tr);

/**
 * tally_trace_flusher() - start (@on) or stop the flusher thread
 *
 * The flusher calls tally_trace_flush() every TALLY_TRACE_COUNTER_INTERVAL,
 * for applications that want their counters during long compute phases
 * without begin or end. close stops it. It does not survive a fork.
 * Return: 0; or -1 with errno = EINVAL (NULL tracer) or from
 * pthread_create().
 * Thread-safety: not concurrently with itself or close.
 */
int tally_trace_flusher(struct tally_trace *tr, int on);

/**
 * struct tally_trace_stats - what a tracer sent, for tests and tools
 * @events:     events (BEGIN and END messages) this process produced
 * @dropped:    events that could not be queued (send queue full)
 * @unreported: drops not yet carried to the collector by a later message
 */
struct tally_trace_stats {
	uint64_t events;
	uint64_t dropped;
	uint64_t unreported;
};

/**
 * tally_trace_stats() - counters of this process's use of @tr
 * @tr: tracer
 * @st: filled on success
 *
 * Counts cover every thread of the calling process (a forked child starts
 * from zero). Values of threads sending concurrently may be slightly stale.
 * Return: 0, or -1 with errno = EINVAL (NULL argument).
 * Thread-safety: safe; takes a process-wide lock briefly.
 */
int tally_trace_stats(struct tally_trace *tr, struct tally_trace_stats *st);

/**
 * tally_trace_endpoint() - the endpoint @tr connects to
 * Return: a string owned by @tr (valid until close), or NULL for NULL @tr.
 */
const char *tally_trace_endpoint(const struct tally_trace *tr);

/**
 * tally_trace_id() - the trace id @tr sends, as sent (cut to 1024 bytes,
 * ill-formed UTF-8 replaced)
 * Return: a string owned by @tr (valid until close), or NULL for NULL @tr.
 */
const char *tally_trace_id(const struct tally_trace *tr);

/**
 * tally_trace_close() - drain and close a tracer
 * @tr: tracer, or NULL (no-op)
 *
 * If a collector is connected, close first sends it one CLOSE message on
 * a connection of its own (no queue holds it up): the drops not reported
 * yet, and how many events this process queued, so that the collector
 * counts those that never arrive (tally_dropped_total{reason=
 * "undelivered"}). Then queued events are delivered for at most the
 * linger time (TALLY_TRACE_LINGER_MS, default 2 s); what is still queued
 * then is discarded. When the endpoint refuses the connection (no
 * collector), close returns at once and queued events are discarded; one
 * that does not answer within 200 ms counts as a collector (close waits
 * at most the linger). Spans still open are not ended: the collector
 * closes them as abandoned. tally_trace_close_stats() says what was lost.
 *
 * No other call on @tr may run concurrently with or after close.
 * Return: 0.
 */
int tally_trace_close(struct tally_trace *tr);

/**
 * struct tally_trace_close_stats - what a tracer sent, and lost, in the end
 * @events:        events (BEGIN and END messages) this process produced
 * @dropped:       events that could not be queued (send queue full)
 * @unreported:    drops the collector was never told about: no collector
 *                 at close, or the CLOSE message could not be queued
 * @discarded_max: queued events that close may have discarded, at most:
 *                 0 when every thread's queue was delivered within the
 *                 linger; otherwise ZeroMQ does not say how much of a
 *                 queue had gone out, and each thread counts for its
 *                 queued events, at most its send queue (TALLY_TRACE_SNDHWM)
 *                 and ZeroMQ's 8 KiB write buffer. The collector counts
 *                 exactly what did not arrive, as "undelivered".
 *
 * Without a collector at close, every queued event counts in
 * @discarded_max (as bounded above) and every drop in @unreported.
 */
struct tally_trace_close_stats {
	uint64_t events;
	uint64_t dropped;
	uint64_t unreported;
	uint64_t discarded_max;
};

/**
 * tally_trace_close_stats() - tally_trace_close(), saying what was lost
 * @tr: tracer, or NULL (no-op: @st is zeroed)
 * @st: filled with the final counts, or NULL
 *
 * Closes @tr exactly as tally_trace_close() does (and waits as long), then
 * fills @st. Counts cover every thread of the calling process.
 * Return: 0.
 * Thread-safety: as tally_trace_close().
 */
int tally_trace_close_stats(struct tally_trace *tr,
			    struct tally_trace_close_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_TRACE_H */
