/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/zmq_trace/state.h - open spans of every (trace, source)
 *
 * The collector's memory of who is inside which region. A source is one
 * sending process: (host, pid) for the native format; Omnistat JSON carries
 * no process identity, so all its messages of one trace id form one source,
 * keyed within it by label, as Omnistat does. Per (trace, source) the state
 * keeps the open spans in begin order, which gives every event its depth
 * and, for Omnistat messages, synthesized span and parent ids.
 *
 * Decoded events go in (zmq_trace_state_apply()), span records come out
 * through a sink callback, so the state machine is testable without the
 * daemon. Memory is bounded: at most max_open_spans spans per source and
 * max_sources sources; beyond that, the oldest open span, or the least
 * recently active source, makes room, and that is counted.
 *
 * Thread-safety: none; one state belongs to one instance's loop thread.
 */
#ifndef ZMQ_TRACE_STATE_H
#define ZMQ_TRACE_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include <tally/record.h>

#include "decode.h"

/**
 * struct zmq_trace_sink - where span events and metric samples go
 * @span:   append @span (strings borrowed for the call only) with event
 *          time @ts_ns; return 0, or -1 when it could not be stored
 *          (counted in emit_failed, the state stays consistent)
 * @metric: append a cumulative sample of @type (TALLY_COUNTER, TALLY_GAUGE
 *          or TALLY_INFO) named @name with the @n labels @labels (any
 *          order, keys unique; borrowed for the call only) and @value at
 *          @ts_ns; return as @span. NULL: no sample is made (counters and
 *          per-source figures are still kept)
 * @ctx:    passed back to both
 */
struct zmq_trace_sink {
	int (*span)(void *ctx, const struct tally_span *span, int64_t ts_ns);
	int (*metric)(void *ctx, enum tally_metric_type type, const char *name,
		      const struct tally_label *labels, size_t n, double value,
		      int64_t ts_ns);
	void *ctx;
};

/**
 * struct zmq_trace_state_opts - limits and environment of a state
 * @local_host:     this host's name; events with an empty host get it, and
 *                  only sources on this host get the pid liveness check
 *                  (copied)
 * @max_open_spans: open spans kept per source (>= 1); a begin beyond it
 *                  closes the oldest open span as evicted
 * @max_sources:    sources kept (>= 1); a new source beyond it makes
 *                  room by forgetting the least recently active one (its
 *                  open spans end flagged EVICTED), counted as
 *                  "source_limit"
 * @abandon_ns:     a source silent this long has its open spans closed as
 *                  abandoned; 0 = never (the pid check still applies)
 * @idle_ns:        a source with no open span silent this long is forgotten
 * @gone_grace_ns:  a local process found dead is closed only once it has
 *                  been silent this long too, so that its last messages,
 *                  still in flight, land first
 * @max_counter_series: application counter series kept (v2 COUNTER items,
 *                  one series per source, kind, name and labels); a new
 *                  series beyond it is dropped, counted as counter_limit;
 *                  0 keeps none
 * @source_figures: emit each source's figures at every check (see
 *                  zmq_trace_state_check())
 * @pid_alive:      liveness probe, returns false when @pid no longer
 *                  exists; NULL means tally_pid_alive(). Asked only
 *                  about pids 1..INT32_MAX of native sources on this
 *                  host: other sources end by @abandon_ns only
 */
struct zmq_trace_state_opts {
	const char *local_host;
	uint32_t max_open_spans;
	uint32_t max_sources;
	int64_t abandon_ns;
	int64_t idle_ns;
	int64_t gone_grace_ns;
	uint32_t max_counter_series;
	bool source_figures;
	bool (*pid_alive)(uint32_t pid);
};

/**
 * struct zmq_trace_counters - running totals, never reset
 * @orphan_end:   ends without an open begin (emitted with ORPHAN_END,
 *                unless the end carries no name: then only counted)
 * @abandoned:    spans closed because their process is gone or silent
 * @evicted:      spans closed because their source hit max_open_spans,
 *                or their source was forgotten for max_sources
 * @lost_end:     spans closed because the stream shows their end was
 *                lost (flag LOST_END): a later begin of their thread
 *                outside them, or an end reporting client drops
 * @source_limit: sources forgotten to make room (max_sources reached)
 * @emit_failed:  span records the sink could not store
 * @undelivered:  events senders queued that never arrived: what their
 *                tracers' CLOSE messages announced beyond what arrived,
 *                counted when the source is forgotten or at the final
 *                check
 * @counter_limit: counter snapshots of new series dropped because
 *                max_counter_series series were kept
 */
struct zmq_trace_counters {
	uint64_t orphan_end;
	uint64_t abandoned;
	uint64_t evicted;
	uint64_t lost_end;
	uint64_t source_limit;
	uint64_t emit_failed;
	uint64_t undelivered;
	uint64_t counter_limit;
};

struct zmq_trace_state;

/**
 * zmq_trace_state_new() - an empty state
 * Return: the state, or NULL with errno = ENOMEM or EINVAL (a limit is 0,
 * no local host).
 */
struct zmq_trace_state *
zmq_trace_state_new(const struct zmq_trace_state_opts *opts);

/** zmq_trace_state_free() - free a state and every open span; NULL ok */
void zmq_trace_state_free(struct zmq_trace_state *st);

/**
 * zmq_trace_state_apply() - account one decoded event
 * @st:      state
 * @ev:      a successfully decoded event
 * @now_ns:  CLOCK_MONOTONIC ns (for silence and idle timeouts)
 * A v2 event's typed attributes go on its span record; its counter
 * snapshots update their series (deltas add up, gauges take the level),
 * each then emitted through @sink->metric as tally_app_NAME_total
 * (delta) or tally_app_NAME (gauge) with the labels trace, host, rank and
 * its own; its source attributes replace the source's announcement. A
 * COUNTER event is no span event.
 *
 * @sink:    receives the span records: the event itself, preceded by the
 *           end of an evicted span when the source was full, by the ends
 *           of the open spans of the source forgotten to make room, or by
 *           the ends (flag LOST_END, at the event's time) of the spans
 *           the event proves over
 *
 * A native event of a known thread (tid != 0) tells which of the
 * thread's spans are still open: a begin says its parent is the thread's
 * innermost open span, so the spans the thread began after the parent
 * (all of them, for a root span) lost their ends; an end that reports
 * client drops (dropped > 0) says the same of the ended span's parent.
 * Nothing is concluded when that parent is not open here.
 *
 * Return: 0, or -1 with errno = ENOMEM when the event was dropped.
 */
int zmq_trace_state_apply(struct zmq_trace_state *st,
			  const struct zmq_trace_event *ev, int64_t now_ns,
			  const struct zmq_trace_sink *sink);

/**
 * zmq_trace_state_check() - close abandoned spans, forget idle sources
 * @st:      state
 * @now_ns:  CLOCK_MONOTONIC ns
 * @real_ns: CLOCK_REALTIME ns: a process found running is known to run
 *           at this time
 * @final:   shutdown after the socket was drained: skip the grace period
 * @sink:    receives one end record (flag ABANDONED) per closed span,
 *           innermost first; and, with opts.source_figures, per source
 *           still kept, its figures
 *           (@sink->metric, at @real_ns, labels trace, host, pid, rank):
 *           tally_trace_source_messages_total (messages received),
 *           tally_trace_source_dropped_total (drops its clients reported),
 *           tally_trace_source_last_seen_timestamp_seconds (the newest
 *           timestamp it sent), and tally_trace_source_info (1) with its
 *           announced attributes as further labels. A forgotten source's
 *           figures are no longer emitted: outputs expire them.
 *
 * Spans of a silent source end at its last event's time; spans of a dead
 * process at the last time it was known to run: its last event, or the
 * last check that found it running, whichever is later. So a region
 * never outlasts its process (it may end up to check_interval early).
 * With @final and a job end set (zmq_trace_state_job_ended()), a process
 * found dead ends its spans at the job's end instead, if later.
 * Return: the number of spans closed.
 */
uint64_t zmq_trace_state_check(struct zmq_trace_state *st, int64_t now_ns,
			       int64_t real_ns, bool final,
			       const struct zmq_trace_sink *sink);

/**
 * zmq_trace_state_job_ended() - the job whose processes send here ended
 * @st:     state
 * @end_ns: CLOCK_REALTIME ns of its end (tally_command_end_ns()), 0: none
 *
 * A batch system ends a job by killing its processes together, and the
 * job's collector learns of it within milliseconds: the final check then
 * ends what they left open at that time, not at the last sign of life it
 * happened to see (for a rank computing silently inside a region, the
 * region's begin).
 */
void zmq_trace_state_job_ended(struct zmq_trace_state *st, int64_t end_ns);

/**
 * zmq_trace_state_retune() - apply new limits and timeouts to a state
 * @st:   state, possibly with open spans (handed over by a reload)
 * @opts: the new options; local_host and pid_alive are kept as they were
 * @sink: receives the ends (flag EVICTED, at each source's last event
 *        time) of what no longer fits: the least recently active sources
 *        beyond max_sources, the oldest spans beyond max_open_spans
 *
 * Return: 0, or -1 with errno = EINVAL (a limit is 0), @st unchanged.
 */
int zmq_trace_state_retune(struct zmq_trace_state *st,
			   const struct zmq_trace_state_opts *opts,
			   const struct zmq_trace_sink *sink);

/**
 * zmq_trace_state_abandon_all() - close every open span, forget sources
 * @st:      state
 * @real_ns: CLOCK_REALTIME ns, the end time of every span
 * @sink:    receives one end record (flag ABANDONED) per span, innermost
 *           first per source; counted in abandoned
 *
 * For an instance going away with nobody to take its state over.
 * Return: the number of spans closed.
 */
uint64_t zmq_trace_state_abandon_all(struct zmq_trace_state *st,
				     int64_t real_ns,
				     const struct zmq_trace_sink *sink);

/** zmq_trace_state_counters() - the running totals (borrowed pointer) */
const struct zmq_trace_counters *
zmq_trace_state_counters(const struct zmq_trace_state *st);

/** zmq_trace_state_sources() - number of sources currently kept */
uint32_t zmq_trace_state_sources(const struct zmq_trace_state *st);

/** zmq_trace_state_open_spans() - number of open spans over all sources */
uint64_t zmq_trace_state_open_spans(const struct zmq_trace_state *st);

#endif /* ZMQ_TRACE_STATE_H */
