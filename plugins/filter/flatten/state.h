/* SPDX-License-Identifier: MIT */
/*
 * plugins/filter/flatten/state.h - the flat view of nested spans, per lane
 *
 * A lane is one thread of one traced process: (trace, host, pid, tid).
 * Per lane the state keeps the stack of open spans, in begin order, and
 * turns the lane's begin/end events into a flat sequence of fragments: at
 * any moment at most one fragment of a lane is open, the one of the shown
 * span, which is
 *   - FLATTEN_INNERMOST: the most recently begun open span (the innermost
 *     marker, Omnistat's flat trace), or
 *   - FLATTEN_OUTERMOST: the oldest open span (the top marker).
 * Every change of the shown span ends the open fragment and begins the next
 * one at the same instant, so for every lane the fragments' durations add
 * up exactly to the time during which the lane had a span open: no gap, no
 * overlap, no negative piece.
 *
 * A fragment is a begin record and, later, its end record, both flagged
 * TALLY_SPAN_FRAGMENT, carrying the original span's id, name, parent and
 * depth (tally/record.h). A fragment that is not its span's first is flagged
 * TALLY_SPAN_RESUMED (begin and end); the end of a span's last fragment,
 * at the span's own end, is flagged TALLY_SPAN_LAST, plus the flags of the
 * original end (ABANDONED, EVICTED). A span ends with a LAST fragment end
 * exactly once if it was ever shown, so counting LAST ends (or begins
 * without RESUMED) counts each call once.
 *
 * Defined behaviour for what real streams hold (doc/plugins/flatten.md):
 *   - an end of an open span that is not the shown one (ends out of
 *     nesting order; innermost: a span whose child is still open) removes
 *     it from the stack; if it was ever shown, its LAST end is a
 *     zero-length fragment at the end time, fitted between an end and a
 *     begin of the shown span's fragment so that fragments stay sequential;
 *     a span never shown (outermost: everything nested inside the top
 *     marker) leaves no record;
 *   - two open spans may share a name (Omnistat reuses a marker) or even an
 *     id: an end closes the most recently begun open span with its id;
 *   - an end whose span is not open in its lane (its begin was lost, or
 *     came before tallyd started) is dropped and counted (orphan_end): its
 *     time cannot be placed without overlapping time already attributed;
 *   - a begin while the lane already holds max_depth open spans is not
 *     tracked and counted (depth_limit): its time stays with the deepest
 *     tracked span; the next end that matches no open span of the lane is
 *     taken as the end of such a begin (counted too) rather than as an
 *     orphan;
 *   - an event stamped earlier than the lane's latest event is taken as
 *     happening at that latest time (counted, reordered), so that the
 *     lane's time line never runs backwards and no piece is negative;
 *   - a new lane beyond max_lanes makes room by forgetting the least
 *     recently active lane: its open spans end flagged EVICTED at its
 *     latest event time (counted, lane_evicted).
 *
 * Self time (opts.self_time): the duration of a span minus the union of
 * the intervals of its children (the spans of the same lane whose parent
 * id is its id and that began while it was open), each child clamped to
 * the parent's interval, so overlapping children count once and the result
 * is never negative. It is handed to the sink with the span's LAST end.
 *
 * The fragments go to a sink callback, so the state is testable without the
 * daemon, and an event costs no allocation in steady state (names up to
 * FLATTEN_INLINE_NAME - 1 bytes are kept inline).
 *
 * Thread-safety: none; one state belongs to one filter instance.
 */
#ifndef FLATTEN_STATE_H
#define FLATTEN_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include <tally/record.h>

/** enum flatten_keep - which open span of a lane is shown */
enum flatten_keep {
	FLATTEN_INNERMOST = 0, /* the most recently begun one */
	FLATTEN_OUTERMOST,     /* the oldest one */
};

/**
 * struct flatten_opts - behaviour and limits of a state
 * @keep:      enum flatten_keep
 * @self_time: compute each span's self time (costs a parent lookup per
 *             begin; nothing is computed without it)
 * @max_depth: open spans tracked per lane (>= 1)
 * @max_lanes: lanes kept (>= 1)
 */
struct flatten_opts {
	enum flatten_keep keep;
	bool self_time;
	uint32_t max_depth;
	uint32_t max_lanes;
};

/**
 * struct flatten_frag - one record of the flat stream
 * @span:    the record: phase, ids, name, depth, flags (TALLY_SPAN_FRAGMENT
 *           and the others above), source, attrs (the original begin's,
 *           not referenced for the sink; NULL for the empty set) and begin_ns
 * (a begin: its own time; an end: its fragment's begin). Strings are borrowed
 * for the call: the trace, host and name pointers are those of the event being
 * applied when they are its own, else the state's
 * @ts_ns:   the record's time (CLOCK_REALTIME ns)
 * @own:     the record stands for the applied event itself (its begin, or
 *           its end): a filter may copy that event and overwrite the
 *           fields above, keeping what else it carries; false for the
 *           boundaries of other spans' fragments
 * @self_ns: on a LAST end with opts.self_time: the span's self time in ns
 *           (>= 0); else -1
 */
struct flatten_frag {
	struct tally_span span;
	int64_t ts_ns;
	bool own;
	int64_t self_ns;
};

/**
 * struct flatten_sink - where fragments go
 * @emit: store @f; return 0, or -1 when it could not be stored (counted
 *        in emit_failed; the state stays consistent)
 * @ctx:  passed back to @emit
 */
struct flatten_sink {
	int (*emit)(void *ctx, const struct flatten_frag *f);
	void *ctx;
};

/**
 * struct flatten_counters - running totals, never reset
 * @fragments:    fragments begun
 * @orphan_end:   ends dropped: no open span of theirs in the lane
 * @depth_limit:  begins not tracked (max_depth reached), and their ends
 * @reordered:    events stamped before their lane's latest event
 * @lane_evicted: lanes forgotten to make room (max_lanes reached)
 * @malformed:    events dropped: no trace id or no name
 * @nomem:        events dropped for lack of memory
 * @emit_failed:  records the sink could not store
 */
struct flatten_counters {
	uint64_t fragments;
	uint64_t orphan_end;
	uint64_t depth_limit;
	uint64_t reordered;
	uint64_t lane_evicted;
	uint64_t malformed;
	uint64_t nomem;
	uint64_t emit_failed;
};

struct flatten_state;

/**
 * flatten_state_new() - an empty state
 * Return: the state, or NULL with errno = ENOMEM, or EINVAL (a limit is 0,
 * an unknown @keep).
 */
struct flatten_state *flatten_state_new(const struct flatten_opts *opts);

/** flatten_state_free() - free a state, its lanes and open spans; NULL ok */
void flatten_state_free(struct flatten_state *st);

/**
 * flatten_state_apply() - account one span event
 * @st:     state
 * @sp:     the event (TALLY_SPAN_BEGIN or TALLY_SPAN_END; other phases are
 *          ignored); its strings are copied where kept
 * @ts_ns:  its time, CLOCK_REALTIME ns
 * @now_ns: CLOCK_MONOTONIC ns, the lane's activity time for
 *          flatten_state_expire()
 * @sink:   receives the fragment records this event causes, in order
 *
 * Return: 0, or -1 with errno = ENOMEM when the event was dropped (counted
 * in nomem; nothing was emitted for it).
 */
int flatten_state_apply(struct flatten_state *st, const struct tally_span *sp,
			int64_t ts_ns, int64_t now_ns,
			const struct flatten_sink *sink);

/**
 * flatten_state_expire() - forget lanes idle since @before_ns
 * @st:        state
 * @before_ns: CLOCK_MONOTONIC ns; lanes without open spans (and without
 *             untracked begins) last active before it are freed
 *
 * A lane is kept a while after its last span ended so that a late event
 * stamped slightly earlier still finds the lane's time line.
 * Return: the number of lanes freed.
 */
uint32_t flatten_state_expire(struct flatten_state *st, int64_t before_ns);

/**
 * flatten_state_suspend() - end the open fragment of every lane
 * @st:    state
 * @ts_ns: CLOCK_REALTIME ns; a lane whose latest event is later ends its
 *         fragment at that event's time instead (the time line never runs
 *         backwards)
 * @sink:  receives one fragment end per lane with open spans (never LAST:
 *         the spans stay open)
 *
 * What a reload that replaces the filter does first: downstream then holds
 * no open fragment of this state. Apply no event until
 * flatten_state_resume(); free the state, or resume it (in the successor).
 */
void flatten_state_suspend(struct flatten_state *st, int64_t ts_ns,
			   const struct flatten_sink *sink);

/**
 * flatten_state_resume() - take @opts and show the open spans again
 * @st:   a state flatten_state_suspend() ended the fragments of
 * @opts: the (possibly changed) behaviour and limits: @keep decides which
 *        open span of each lane is shown now; @max_depth applies to later
 *        begins (spans tracked already stay); lanes beyond @max_lanes are
 *        forgotten as when full (open spans end EVICTED); with @self_time
 *        newly on, a span open across the call counts only the children
 *        begun after it
 * @sink: receives one fragment begin per lane with open spans, at the time
 *        its fragment was suspended (RESUMED if the span was shown before),
 *        so that the lane's fragments still add up to its wall time
 *
 * Return: 0, or -1 with errno = EINVAL (a limit is 0, an unknown @keep:
 * nothing changed).
 */
int flatten_state_resume(struct flatten_state *st,
			 const struct flatten_opts *opts,
			 const struct flatten_sink *sink);

/** flatten_state_counters() - the running totals (borrowed pointer) */
const struct flatten_counters *
flatten_state_counters(const struct flatten_state *st);

/** flatten_state_lanes() - number of lanes kept */
uint32_t flatten_state_lanes(const struct flatten_state *st);

/** flatten_state_open_spans() - number of open spans over all lanes */
uint64_t flatten_state_open_spans(const struct flatten_state *st);

#endif /* FLATTEN_STATE_H */
