/* SPDX-License-Identifier: MIT */
/*
 * tally/plugin.h - the plugin ABI: one const descriptor per shared object
 *
 * A plugin is a shared object (libtool -module -avoid-version) that exports
 * exactly one symbol, "tally_plugin", a const struct tally_plugin built by
 * one of the TALLY_PLUGIN_INPUT/FILTER/OUTPUT macros below. The loader
 * (lt_dlopenext + lt_dlsym) refuses a plugin, with one log line naming the
 * file and the reason, on: ABI mismatch, descriptor size mismatch, name not
 * matching the file name, duplicate name, missing mandatory op.
 *
 * Life of an instance (one per configured instance; a filter gets one per
 * pipeline that names it, so filter state is never shared):
 *   1. the core allocates state_size zeroed bytes and fills the options
 *      (tally/config.h);
 *   2. init(inst, state)  - open files, bind sockets; -1 refuses to start;
 *   3. running            - read/process/write/tick as below, all on the
 *                           event loop thread unless marked blocking;
 *   4. fini(inst, state)  - release everything init and the run acquired;
 *                           the core then frees the option values and state.
 * Every op may be NULL unless marked mandatory; the core never calls a NULL
 * op. Ops return 0 on success or -1 with errno set.
 */
#ifndef TALLY_PLUGIN_H
#define TALLY_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#include <tally/config.h>
#include <tally/labels.h>
#include <tally/log.h>
#include <tally/mode.h>
#include <tally/record.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Bumped on every incompatible change to this header, tally/record.h,
 * tally/labels.h or tally/config.h. 2: struct tally_output_ops gained
 * reopen and end, struct tally_input_ops handoff, adopt and discard.
 * 3: struct tally_metric gained interval (TALLY_FORM_INTERVAL).
 * 4: struct tally_filter_ops gained handoff, adopt and discard.
 * (tally_output_hold() and its kin were added without a bump: functions
 * of the core, no struct changed.)
 */
#define TALLY_PLUGIN_ABI 4

struct event_base;
struct tally_instance;

/** enum tally_plugin_kind - the three kinds of plugin */
enum tally_plugin_kind {
	TALLY_KIND_INPUT = 1,
	TALLY_KIND_FILTER,
	TALLY_KIND_OUTPUT,
};

/** enum tally_end - why struct tally_output_ops.end runs */
enum tally_end {
	TALLY_END_COMMAND = 1, /* the wrapped command exited; tallyd stops */
	TALLY_END_REQUEST,     /* SIGUSR1: on demand; tallyd goes on */
};

/* struct tally_input_ops.flags */
#define TALLY_INPUT_BLOCKING	0x1u /* read() may block: run it on a worker thread */
/*
 * One instance per collector: the input reads something of the whole node
 * whose series two instances would write twice under the same names (the
 * GPUs, for rocm_smi). tallyd --check-config and a reload refuse a second
 * instance, naming the first one's file:line. (Added without an ABI bump:
 * a core that predates it ignores the flag.)
 */
#define TALLY_INPUT_ONCE	0x2u

/**
 * struct tally_input_ops - hooks of an input; read or start is mandatory
 * @check: validate the filled options without side effects (no sockets,
 *         no files opened or created): log each problem with tally_log()
 *         at LOG_ERR and return -1. Run by tallyd --check-config and before
 *         init; the core prefixes its messages with the instance's
 *         file:line. At --check-config the instance is never initialized
 *         nor started: tally_instance_base() returns NULL there.
 * @init:  set up after options are filled
 * @read:  periodic: append this tick's records to @out. Called every
 *         interval seconds, aligned to wall-clock multiples of the interval
 *         so that nodes sample together. Records appended before a failure
 *         are still emitted. With TALLY_INPUT_BLOCKING it runs on a worker
 *         thread (one read at a time per instance) and must not touch the
 *         event loop; a read still running at the next tick is logged and
 *         that tick skipped.
 * @start: event-driven: register fds/events on @base and call tally_emit()
 *         when records arrive. Runs on the loop thread.
 * @stop:  stop receiving (shutdown begins); pending data may still be
 *         emitted from here with tally_emit()
 * @fini:  release everything
 * @handoff: a reload retires this instance (its declaration changed, or
 *         is gone); called after stop, before fini. @next is 1 when the
 *         new configuration has an input of the same name and plugin,
 *         which will be offered what this returns (ownership passes to
 *         the core), e.g. the open spans an event-driven input tracks;
 *         0 when it has none: end now what must not outlive the
 *         instance (records emitted here still reach the old pipelines)
 *         and return NULL. NULL: nothing to hand over.
 * @adopt: take over @handed, what @handoff of the retired instance of
 *         the same name and plugin returned; called after init, before
 *         start, on the loop thread. Return 0, or -1 with errno set: the
 *         core then passes @handed to @discard.
 * @discard: free @handed when no instance took it over (a failed reload
 *         whose rollback failed too, or whose successor's adopt failed):
 *         no instance exists to count with, tally_count_drop(NULL, ...)
 *         counts for the core. Mandatory with @handoff.
 * @flags: TALLY_INPUT_* flags
 * @emits: the non-cumulative sample forms the input may emit
 *         (TALLY_FORMS_DELTA, _OBSERVATION, _SET_MEMBER of tally/record.h;
 *         0: cumulative samples and spans only). tallyd --check-config
 *         refuses a pipeline that would bring them to an output that does
 *         not take them (struct tally_output_ops.accepts) without a filter
 *         absorbing them (aggregate) in between. An input whose forms
 *         depend on its options narrows them from its check op with
 *         tally_instance_set_emits().
 */
struct tally_input_ops {
	int (*check)(struct tally_instance *inst, void *state);
	int (*init)(struct tally_instance *inst, void *state);
	int (*read)(struct tally_instance *inst, void *state,
		    struct tally_batch *out);
	int (*start)(struct tally_instance *inst, void *state,
		     struct event_base *base);
	void (*stop)(struct tally_instance *inst, void *state);
	void (*fini)(struct tally_instance *inst, void *state);
	void *(*handoff)(struct tally_instance *inst, void *state, int next);
	int (*adopt)(struct tally_instance *inst, void *state, void *handed);
	void (*discard)(void *handed);
	unsigned flags;
	unsigned emits;
};

/**
 * struct tally_filter_ops - hooks of a filter; process is mandatory
 * @check:   validate options, as struct tally_input_ops.check
 * @init:    set up
 * @process: transform @in (never modify it: it may be shared) into the
 *           batch passed downstream. Return tally_batch_ref(@in) to pass it
 *           unchanged, a new batch (tally_batch_new() + copies/rewrites) to
 *           change it, or NULL to pass nothing on (errno 0: dropped on
 *           purpose, counted by the filter itself; else an error, logged).
 *           To pass most records on unchanged, build the new batch with
 *           tally_batch_select() / tally_batch_append_from(): they copy
 *           no strings.
 * @tick:    timed emission (aggregate): called every interval seconds and
 *           once more at shutdown; records appended to @out go downstream
 * @fini:    release everything
 * @handoff, @adopt, @discard: as struct tally_input_ops's, for a filter
 *           that keeps state across batches (open spans, token buckets).
 *           A reload replaces every filter of a pipeline whose filters'
 *           declarations changed; the successor is the new instance of
 *           the same filter name, plugin and pipeline. @handoff runs after
 *           the filter's last tick, while the old pipeline is still
 *           wired: records it sends with tally_emit() go downstream of it
 *           to the old outputs (flatten ends its open fragments there).
 *           Filters of a pipeline are handed off in pipeline order.
 *           @adopt runs once every instance of the new configuration is
 *           initialized, before any starts, and may send records down the
 *           new pipeline with tally_emit() (flatten resumes there).
 * @absorbs: the non-cumulative sample forms (TALLY_FORMS_*) the filter
 *           consumes, turning them into cumulative or interval records
 *           (aggregate: TALLY_FORMS_STATSD). Forms it does not absorb are
 *           taken to pass through it.
 * @emits:   non-cumulative forms the filter makes itself (0 for most)
 *
 * Besides returning batches from process and tick, a filter may send one
 * from a callback of its own (a timer it registered on
 * tally_instance_base()) with tally_emit(): it enters its pipeline after
 * the filter, as a tick's batch does.
 */
struct tally_filter_ops {
	int (*check)(struct tally_instance *inst, void *state);
	int (*init)(struct tally_instance *inst, void *state);
	struct tally_batch *(*process)(struct tally_instance *inst, void *state,
				       struct tally_batch *in);
	int (*tick)(struct tally_instance *inst, void *state,
		    struct tally_batch *out);
	void (*fini)(struct tally_instance *inst, void *state);
	void *(*handoff)(struct tally_instance *inst, void *state, int next);
	int (*adopt)(struct tally_instance *inst, void *state, void *handed);
	void (*discard)(void *handed);
	unsigned absorbs;
	unsigned emits;
};

/**
 * struct tally_output_ops - hooks of an output; write is mandatory
 * @check: validate options, as struct tally_input_ops.check
 * @init:  set up; network outputs register listeners/connections on
 *         tally_instance_base(inst)
 * @write: consume one batch, on the loop thread, without blocking. Keep a
 *         reference (tally_batch_ref()) to hold on to it past the call.
 *         Return 0 when done with it; -1 with errno = EAGAIN when the output
 *         cannot take it now (server down, socket full): the core keeps it
 *         at the head of the output's bounded queue and retries after
 *         tally_output_ready() or a capped backoff; -1 with another errno
 *         drops the batch (counted).
 * @flush: push out anything buffered (called on shutdown and --once: once
 *         the output's queue is drained if it still holds records, see
 *         tally_output_held(), then when every output is done)
 * @fini:  release everything
 * @reopen: SIGHUP reached a running instance that the reload kept (or the
 *         reload was refused, and every instance stays): reopen files by
 *         name, so that a file logrotate moved away is written anew. Not
 *         called on an instance the reload just made. A failure is logged
 *         by the core (the instance goes on running).
 * @end:   write the files a run ends with (a final page, a report) into
 *         the output directory (tally/mode.h). @why is TALLY_END_COMMAND
 *         once the command of tallyd --user -- CMD has exited: every
 *         input has stopped and what they sent is delivered, flush and
 *         fini follow. TALLY_END_REQUEST on demand (SIGUSR1 to a collector
 *         that does not wrap a command): the same files as of now, after
 *         the batches queued at the request; the run goes on and the op
 *         may run again. A failure is logged by the core; it never changes
 *         tallyd's exit status.
 * @accepts: the non-cumulative sample forms (TALLY_FORMS_*) write() takes
 *         and renders correctly (the prometheus output: TALLY_FORMS_DELTA,
 *         added into cumulative counters and gauges); 0: cumulative
 *         samples and spans only. A pipeline that could bring the output
 *         another form is refused at --check-config ("add an aggregate
 *         filter"), and records of such a form are dropped before write()
 *         (counted as "needs_aggregate"), so write() never sees one.
 * @host_label: push outputs (graphite, influxdb, remote_write, forward):
 *         the label key ("host"; "instance" for Prometheus remote write)
 *         that tally_output_labels() gives the node's host name by
 *         default, so points from many nodes never overwrite each other;
 *         NULL for outputs that are scraped (the scraper knows the node)
 */
struct tally_output_ops {
	int (*check)(struct tally_instance *inst, void *state);
	int (*init)(struct tally_instance *inst, void *state);
	int (*write)(struct tally_instance *inst, void *state,
		     struct tally_batch *b);
	int (*flush)(struct tally_instance *inst, void *state);
	void (*fini)(struct tally_instance *inst, void *state);
	int (*reopen)(struct tally_instance *inst, void *state);
	int (*end)(struct tally_instance *inst, void *state,
		   enum tally_end why);
	unsigned accepts;
	const char *host_label;
};

/**
 * struct tally_plugin - the descriptor, the only symbol a plugin exports
 * @abi:         TALLY_PLUGIN_ABI the plugin was built against
 * @size:        sizeof(struct tally_plugin) the plugin was built with
 * @name:        plugin name; must equal the file name without extension
 * @kind:        enum tally_plugin_kind, selects the ops member
 * @description: one line, shown by tallyd --list-plugins
 * @state_size:  size of the per-instance state struct the options fill
 * @options:     option table terminated by TALLY_OPT_END (never NULL)
 */
struct tally_plugin {
	uint32_t abi;
	uint32_t size;
	const char *name;
	enum tally_plugin_kind kind;
	const char *description;
	size_t state_size;
	const struct tally_option *options;
	union {
		const struct tally_input_ops *input;
		const struct tally_filter_ops *filter;
		const struct tally_output_ops *output;
	};
};

#define TALLY_PLUGIN_SYMBOL "tally_plugin"

#define TALLY_PLUGIN__(n, k, member, desc, type, opts, ops)                   \
	__attribute__((visibility("default")))                                \
	const struct tally_plugin tally_plugin = {                            \
		.abi = TALLY_PLUGIN_ABI,                                      \
		.size = sizeof(struct tally_plugin),                          \
		.name = #n,                                                   \
		.kind = (k),                                                  \
		.description = (desc),                                        \
		.state_size = sizeof(type),                                   \
		.options = (opts),                                            \
		.member = (ops),                                              \
	}

/** Declare an input plugin: name (bare word), description, state type,
 * option table, ops. */
#define TALLY_PLUGIN_INPUT(n, desc, type, opts, ops)                          \
	TALLY_PLUGIN__(n, TALLY_KIND_INPUT, input, desc, type, opts, ops)
/** Declare a filter plugin. */
#define TALLY_PLUGIN_FILTER(n, desc, type, opts, ops)                         \
	TALLY_PLUGIN__(n, TALLY_KIND_FILTER, filter, desc, type, opts, ops)
/** Declare an output plugin. */
#define TALLY_PLUGIN_OUTPUT(n, desc, type, opts, ops)                         \
	TALLY_PLUGIN__(n, TALLY_KIND_OUTPUT, output, desc, type, opts, ops)

/*
 * The instance handle. All accessors are valid from init() until fini()
 * returns and may be called from any thread unless noted.
 */

/** tally_instance_name() - configured instance name, e.g. "host" */
const char *tally_instance_name(const struct tally_instance *inst);

/** tally_instance_plugin() - the plugin's name, e.g. "procfs" */
const char *tally_instance_plugin(const struct tally_instance *inst);

/**
 * tally_instance_interval() - the instance's interval in seconds
 *
 * For inputs and filters: the instance's "interval" option, else
 * global.interval. Outputs: global.interval.
 */
double tally_instance_interval(const struct tally_instance *inst);

/**
 * tally_tick_is_last() - whether a filter's tick running now is its last
 *
 * For a filter's tick op: true in the tick the core runs when the
 * instance stops (shutdown, --once, a reload retiring it), after which no
 * tick follows: emit everything held back (aggregate's partial interval).
 * Loop thread only.
 */
bool tally_tick_is_last(const struct tally_instance *inst);

/**
 * tally_tick_hands_off() - whether a filter's last tick precedes a handoff
 *
 * For a filter's tick op: true in the last tick (tally_tick_is_last())
 * when a reload retires the instance in favour of a successor that will
 * be offered what its handoff op returns. What the tick would flush may
 * then go to the successor instead (aggregate keeps its open interval);
 * false at shutdown, --once and when the reload leaves no successor.
 * Loop thread only.
 */
bool tally_tick_hands_off(const struct tally_instance *inst);

/**
 * tally_instance_base() - the event loop
 * Return: the libevent base; use it only from the loop thread.
 */
struct event_base *tally_instance_base(const struct tally_instance *inst);

/**
 * tally_timeval() - @seconds as a struct timeval, for libevent timers
 *
 * Negative or NaN: zero. Pure, any thread.
 */
static inline struct timeval tally_timeval(double seconds)
{
	struct timeval tv = { 0, 0 };

	if (!(seconds > 0))
		return tv;
	tv.tv_sec = (time_t)seconds;
	tv.tv_usec = (suseconds_t)((seconds - (double)tv.tv_sec) * 1e6);
	return tv;
}

/**
 * tally_output_labels() - the static labels an output adds to what it writes
 * @inst: an output instance
 *
 * The output's own "labels" option, then global.labels for keys it does
 * not set, then, for push outputs (struct tally_output_ops.host_label),
 * that key with the node's host name unless one of them sets it; labels
 * set to "" are left out (so labels = { host = ""; } turns the host label
 * off). Composed once by the core when the instance is made: every output
 * adds the same labels the same way, and none parses them itself.
 *
 * Outputs add them to each record's labels without overriding the
 * record's own: tally_labels_merge(labels, tally_output_labels(inst)) for
 * a set, tally_label_merge() for pairs an output builds itself (series it
 * derives from spans).
 * Return: a borrowed set, never NULL (the empty set for none), valid from
 * init until fini returns. Any thread.
 */
struct tally_labels *tally_output_labels(const struct tally_instance *inst);

/**
 * tally_instance_set_emits() - the sample forms this input instance may emit
 * @inst:  an input instance, in its check op
 * @forms: TALLY_FORMS_* bits, a subset of its ops' emits (0: cumulative
 *         samples and spans only)
 *
 * For inputs whose forms depend on their options (a replay input told to
 * send cumulative samples only): --check-config then judges the instance's
 * pipelines by @forms instead of everything the plugin can emit. Call it
 * from check, which runs both at --check-config and before init.
 * Return: 0, or -1 with errno = EINVAL (not an input, @forms beyond the
 * plugin's emits).
 */
int tally_instance_set_emits(struct tally_instance *inst, unsigned forms);

/**
 * tally_emit() - send a batch from an event-driven input or a filter
 * @inst: an input instance (from start/stop or a callback it registered),
 *        or a filter instance (from a callback it registered itself, such
 *        as a timer on tally_instance_base())
 * @b:    the batch; the caller's reference is consumed, also on error
 *
 * Loop thread only. An input's batch enters every pipeline fed by @inst; a
 * filter's enters its own pipeline right after the filter (the filters
 * after it, then the pipeline's outputs), as its tick's batch does; its
 * tally_batch_source() is the filter's name unless it has one already (a
 * batch received earlier and held back). Empty batches are accepted and
 * discarded.
 *
 * Not from a filter's own process or tick op: return or append the
 * records there instead (an emit from inside would overtake the batch
 * being processed).
 * Return: 0, or -1 with errno = EINVAL (an output, or NULL), or EBUSY (a
 * filter inside its process or tick op).
 */
int tally_emit(struct tally_instance *inst, struct tally_batch *b);

/**
 * tally_output_ready() - an output that returned EAGAIN can take data again
 *
 * Loop thread only. Schedules delivery of the output's queue.
 */
void tally_output_ready(struct tally_instance *inst);

/**
 * tally_output_held() - how many records an output holds that it accepted
 * (write() returned 0) and has not delivered yet
 * @inst:    the output instance
 * @records: the number now (a batch being sent, a buffer filling up); 0
 *           once they are delivered or dropped (and counted)
 *
 * For outputs that batch or send asynchronously (the HTTP batcher's,
 * prometheus_push, graphite's sender): shutdown waits for them as for the
 * output's queue, up to global.shutdown_timeout. When it runs out, the core
 * logs what is left, queued and held, in one line, and counts the queued
 * records (reason "shutdown"); the output counts what it still holds in its
 * fini op (tally_count_drop()), and logs it only when the core did not
 * (tally_output_loss_logged()). Loop thread only.
 */
void tally_output_held(struct tally_instance *inst, size_t records);

/**
 * tally_output_hold() - keep a batch write() accepted until it is delivered
 * @inst:  the output instance
 * @b:     the batch (the core takes a reference)
 * @units: how many units of it (points, lines: the output's choice) the
 *         output will release with tally_output_release(); 0 is taken as 1
 *
 * For outputs that keep what they accepted past write() (influxdb renders
 * batches into a request and retries it): a reload that replaces the
 * output hands the batches it still holds, oldest first, to its successor
 * of the same name ahead of its queue (they are written again, whole: a
 * batch partly delivered is delivered twice), or drops and counts them
 * (reason "reload", for the core) when it has none; the output's fini op
 * then counts nothing of them (tally_output_handed_over()). At shutdown
 * the core just releases them: the output counts what it did not deliver.
 * Loop thread only.
 * Return: 0, or -1 with errno = ENOMEM (not held: nothing is handed over).
 */
int tally_output_hold(struct tally_instance *inst, struct tally_batch *b,
		      size_t units);

/**
 * tally_output_release() - @units of the oldest held batches are delivered
 * or dropped (and counted): a batch whose units are all released is let go
 */
void tally_output_release(struct tally_instance *inst, size_t units);

/**
 * tally_output_handed_over() - whether a reload took the batches the
 * output held (tally_output_hold()), for its successor or counted as
 * dropped: its fini op must not count them again
 */
bool tally_output_handed_over(const struct tally_instance *inst);

/**
 * tally_output_loss_logged() - whether the shutdown deadline ran out
 * while the output held records (tally_output_held()): the core logged
 * them, with its queue's, in one line ("shutdown deadline reached ..."),
 * so the output's fini op counts them without logging them again
 */
bool tally_output_loss_logged(const struct tally_instance *inst);

/**
 * tally_user_mode() - whether tallyd runs as a user collector (--user)
 */
int tally_user_mode(void);

/**
 * tally_runtime_dir() - directory for sockets and pid files
 *
 * System mode: /run/tally. User mode: $XDG_RUNTIME_DIR/tally, else
 * /tmp/tally-UID; a job's collector adds "/job-ID" (see tally_jobid()),
 * ID made safe for a path: '/', control characters and a leading '.'
 * become '_', and an id longer than 64 bytes is cut to 55 plus "-" and 8
 * hex digits of a hash of the whole id.
 * Created 0755 (system) or 0700 (user) on start.
 * Return: an absolute path valid for the process life.
 */
const char *tally_runtime_dir(void);

/**
 * tally_jobid() - the batch job id in user mode
 *
 * From SLURM_JOB_ID, FLUX_JOB_ID, PBS_JOBID or LSB_JOBID, first set wins,
 * bounded once at start by tally_jobid_bound() (an id longer than
 * TALLY_JOBID_MAX bytes is cut, with a hash): use it as it is, for the
 * jobid label and anything else that names the job.
 * Return: the id (static storage), or NULL outside a job or in system
 * mode. Any thread.
 */
const char *tally_jobid(void);

/**
 * tally_jobid_system() - the batch system tally_jobid() comes from
 *
 * Return: "slurm" (SLURM_JOB_ID), "flux" (FLUX_JOB_ID), "pbs" (PBS_JOBID)
 * or "lsf" (LSB_JOBID), static strings; NULL when tally_jobid() is NULL.
 * Any thread.
 */
const char *tally_jobid_system(void);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_PLUGIN_H */
