/* SPDX-License-Identifier: MIT */
/*
 * core/core-internal.h - what the core's files share; not for plugins
 *
 * Names here start with tally_ because libtally exports ^tally_ symbols and
 * the unit tests link against it; they are still private: no plugin may
 * call them and they change without an ABI bump.
 */
#ifndef TALLY_CORE_INTERNAL_H
#define TALLY_CORE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>

#include <libconfig.h>

#include <tally/plugin.h>
#include <tally/stats.h>

/* TALLY_PLUGINDIR, TALLY_SYSCONFDIR, TALLY_STATEDIR (Makefile.am) */
#include "tally-dirs.h"

struct event;
struct event_base;

/*
 * labels.c: an output's static labels: @output's pairs, then @global's
 * for keys @output lacks, then @host_key = @hostname if neither has that
 * key (push outputs; NULL @host_key: none); pairs whose value is "" are
 * left out. A new reference, or NULL/ENOMEM.
 */
struct tally_labels *tally_static_labels(const struct tally_labels *global,
					 const struct tally_labels *output,
					 const char *host_key,
					 const char *hostname);

/* per-key drop counters of an instance (log.c) */
struct tally_keyed_entry {
	const char *reason;
	char key[TALLY_STATS_KEY_LEN];
	uint64_t hash;
	uint64_t n;
	int64_t last_ns; /* CLOCK_MONOTONIC of its last drop */
};

struct tally_keyed_drops {
	struct tally_keyed_entry e[TALLY_STATS_MAX_KEYS];
	size_t n;
	/* per reason: evicted keys' counts and drops with no slot */
	struct tally_stats_drop other[TALLY_STATS_MAX_DROPS];
	size_t nother;
};

/* tally_count_drop_key() at @now_ns (CLOCK_MONOTONIC), for tests */
void tally_count_drop_key_at(struct tally_instance *inst, const char *reason,
			     const char *key, uint64_t n, int64_t now_ns);

/* logging (log.c) */
enum tally_log_target { TALLY_LOG_STDERR, TALLY_LOG_SYSLOG };
void tally_log_setup(enum tally_log_target target, int level);
/*
 * Whether syslog() reaches a daemon: a connect to _PATH_LOG (/dev/log) as
 * glibc's openlog() does it. Without one, syslog() drops every line
 * silently.
 */
bool tally_log_syslog_available(void);
int tally_log_level_parse(const char *s);
/* SIGHUP: a new global.log_level (the target stays what it was) */
void tally_log_set_level(int level);
/* burst suppression window, seconds (default 10); for tests */
void tally_log_set_window(unsigned seconds);
/* "file:line: " prefixed configuration diagnostics, always to stderr */
void tally_log_conf(int prio, const char *file, int line, const char *fmt,
		    ...) __attribute__((format(printf, 4, 5)));
/*
 * The instance that counts what is counted for NULL (tally_count_drop()):
 * the running core's, handed in by it; NULL: such counts are not kept.
 */
void tally_log_set_core(struct tally_instance *core_inst);

/* fdlimit.c (tally/fdlimit.h) */
/*
 * tallyd's start: raise the soft RLIMIT_NOFILE to the hard limit and keep
 * a spare descriptor for tally_accept_guarded(); @before and @after get
 * the soft limit. Return: 0, or -1 with errno when either failed (the
 * rest was done).
 */
int tally_fd_setup(unsigned *before, unsigned *after);
/* in a child tallyd runs: the limit tallyd started with (after fork) */
void tally_fd_restore(void);
/* accept4(2) that never fails for want of descriptors (tally/fdlimit.h) */
int tally_accept_guarded(int fd, struct sockaddr *sa, socklen_t *len,
			 int flags);

/*
 * priv.c: global.user and global.group (tallyd(8), "Privileges").
 * tally_priv_setup(): resolve them, before anything is created; -1 (logged)
 * with errno EPERM when tallyd is not root, ENOENT when one is gone.
 * tally_priv_uid(), tally_priv_gid(): the identity tallyd runs as once set
 * up (its own without global.user/group).
 * tally_priv_owner(): whether a file owned by @uid is this collector's (its
 * uid now, or the one it drops to: a restart finds the files it made).
 * tally_priv_chown(): give what tallyd made before the drop (@fd, or @path
 * when @fd < 0) to that identity; 0 when there is nothing to do; -1
 * (logged) with errno.
 * tally_priv_drop(): once every instance has started: supplementary
 * groups, gid, uid, verified. 0, or -1 (logged) with errno EPERM.
 */
struct tally_conf;
int tally_priv_setup(const struct tally_conf *conf);
uid_t tally_priv_uid(void);
gid_t tally_priv_gid(void);
bool tally_priv_owner(uid_t uid);
int tally_priv_chown(const char *path, int fd);
/*
 * A file made before the drop was given group @gid (a socket a group may
 * use): keep @gid among the supplementary groups, so that the collector
 * can give a file that group again after a reload.
 */
void tally_priv_keep_group(gid_t gid);
int tally_priv_drop(void);

/* loader.c */
struct tally_loader;
struct tally_loader *tally_loader_new(void);
void tally_loader_free(struct tally_loader *ld);
/* append a directory (or a colon-separated list) to the search path */
int tally_loader_add_path(struct tally_loader *ld, const char *dirs);
/* load plugin @name (cached); NULL with errno ENOENT, EINVAL (refused) */
const struct tally_plugin *tally_loader_get(struct tally_loader *ld,
					    const char *name);
/* print every plugin of the search path; refused ones are logged */
int tally_loader_list(struct tally_loader *ld, FILE *out);
/* print one plugin's documentation */
int tally_loader_describe(struct tally_loader *ld, const char *name,
			  FILE *out);
/* check a descriptor; 0, or -1 with a static reason in *why */
int tally_plugin_check(const struct tally_plugin *p, const char *want_name,
		       const char **why);

/*
 * conftext.c: a configuration file's text as libconfig parses it, with its
 * @include directives expanded (libconfig 1.5 cannot open an absolute
 * include path) and a map from its lines back to the files they come from.
 * The text also gives back what libconfig loses: a value as written and
 * the name defined twice behind "duplicate setting name".
 */
struct tally_conf_span {
	int line;		/* first line of the text it covers */
	const char *file;	/* the file those lines come from */
	int file_line;		/* and the line there of the first one */
};

struct tally_conf_text {
	char *text;		/* NUL-terminated, includes expanded */
	size_t len;
	struct tally_conf_span *spans;	/* by line, ascending */
	size_t nspans;
	char **files;		/* names of the files read; [0] the main */
	size_t nfiles;
};

/*
 * Read @path and the files it includes (relative paths from the including
 * file's directory, at most 10 levels) into @t. Problems are logged with
 * file:line. 0, or -1 with errno (@t then holds nothing to free).
 */
int tally_conf_text_load(struct tally_conf_text *t, const char *path);
/* the same for text @s of @len bytes, named @name in messages */
int tally_conf_text_parse(struct tally_conf_text *t, const char *name,
			  const char *s, size_t len);
void tally_conf_text_free(struct tally_conf_text *t);
/* the file and line that line @line of @t comes from */
void tally_conf_text_where(const struct tally_conf_text *t, int line,
			   const char **file, int *file_line);
/*
 * The text of scalar setting @s as written in @t (a number's digits and
 * suffix, a string with its quotes), NUL-terminated in @buf. 0, or -1 with
 * ENOENT (not found: @s is not from @t) or ENOSPC.
 */
int tally_conf_text_literal(const struct tally_conf_text *t,
			    const config_setting_t *s, char *buf,
			    size_t size);
/*
 * The first name defined twice in a group of @t: its path in @name
 * ("inputs.a.count"), the line of the second definition and of the first
 * (lines of @t). 0, or -1 with ENOENT (none) or ENOSPC.
 */
int tally_conf_text_duplicate(const struct tally_conf_text *t, char *name,
			      size_t size, int *line, int *first_line);

/* options.c: applying option tables */

/* where a setting comes from, for messages and its value as written */
struct tally_opt_src {
	const char *file;
	int line;
	const char *what;	/* whose option: "inputs.host", "global" */
	/* the text it was parsed from, or NULL */
	const struct tally_conf_text *text;
};

int tally_options_defaults(const struct tally_option *opts, void *state,
			   const char *what);
/*
 * Check setting @s against option @opt and store it in @state. Problems are
 * logged at @src. 0, or -1 with errno EINVAL (type), ERANGE or ENOMEM; the
 * field keeps its old value on failure.
 */
int tally_options_apply(const struct tally_option *opt, void *state,
			const config_setting_t *s,
			const struct tally_opt_src *src);
/* tally_options_apply() without the source text (integers: 32 bits) */
int tally_options_set(const struct tally_option *opt, void *state,
		      const config_setting_t *s, const char *file, int line,
		      const char *what);
void tally_options_free(const struct tally_option *opts, void *state);
const struct tally_option *tally_options_find(const struct tally_option *opts,
					      const char *name);
const char *tally_options_type_name(enum tally_opt_type t);
unsigned tally_edit_distance(const char *a, const char *b);
/* the name of @names or tables @a, @b (each may be NULL) nearest to @word,
 * at most two edits away; or NULL */
const char *tally_options_nearest(const char *word, const char *const *names,
				  const struct tally_option *a,
				  const struct tally_option *b);
/* report unknown @key with the nearest of @names and two tables */
void tally_options_unknown(const char *file, int line, const char *what,
			   const char *key, const char *const *names,
			   const struct tally_option *a,
			   const struct tally_option *b);
/* report each TALLY_OPT_REQUIRED option of @opts that group @g lacks, at
 * @file:@line; returns how many */
unsigned tally_options_required(const struct tally_option *opts,
				const config_setting_t *g, const char *file,
				int line, const char *what);
/* print a table as tallyd --describe does, one option a line */
void tally_options_describe(const struct tally_option *opts, FILE *out);
/* a size ("64MiB") in bytes, a duration ("1h30m") in seconds, see
 * tally/config.h; 0, or -1 with EINVAL (syntax) or ERANGE */
int tally_parse_size(const char *s, uint64_t *bytes);
int tally_parse_duration(const char *s, double *seconds);
/*
 * The options every instance of @kind has (plugin, interval, queue_size,
 * ...): declared once, stored in struct tally_conf_decl by the core.
 */
const struct tally_option *tally_instance_options(enum tally_plugin_kind kind);
/* "inputs", "filters", "outputs" */
const char *tally_kind_section(enum tally_plugin_kind kind);

/* config.c: the parsed, validated configuration */
/* default queue_records of an output: about 200 MB at ~200 B a record */
#define TALLY_QUEUE_RECORDS 1000000
struct tally_conf_decl {
	char *name;
	enum tally_plugin_kind kind;
	const struct tally_plugin *plugin;
	const config_setting_t *setting;
	const struct tally_conf_text *text;	/* the setting's source */
	const char *file;
	int line;
	bool used;
	/* tally_instance_options(), all kinds */
	char *plugin_name;
	/* inputs and filters */
	double interval;	/* 0 = global */
	/* outputs */
	int64_t queue_size;	/* batches */
	int64_t queue_records;	/* records */
	struct tally_labels *labels; /* their own static labels */
	/* inputs: TALLY_FORMS_* it may emit */
	unsigned emits;
};

struct tally_conf_pipe {
	char *name;
	const char *file;
	int line;
	struct tally_conf_decl **from, **through, **to;
	size_t nfrom, nthrough, nto;
};

struct tally_conf {
	config_t *cfgs;		/* one libconfig tree per file */
	struct tally_conf_text *texts;	/* what each was parsed from */
	char **paths;
	size_t nfiles;
	double interval;
	double shutdown_timeout;
	char *log;
	char *log_level;
	char *output_dir;		/* global.output_dir, as written */
	bool user_ports_configured;	/* global.user_ports = "configured" */
	char *user, *group;		/* global.user, global.group, or NULL */
	struct tally_labels *labels;	/* global.labels, or NULL */
	struct tally_conf_decl *decls;
	size_t ndecls;
	struct tally_conf_pipe *pipes;
	size_t npipes;
	struct tally_conf_bind *binds;	/* net-conf.c */
	size_t nbinds;
	unsigned errors, warnings;
};

/*
 * net-conf.c: remember the addresses declaration @d (named @who, e.g.
 * "outputs.prom") binds, from its filled @state, and report a clash with
 * an earlier declaration's as an error with both file:line places.
 */
void tally_conf_binds_add(struct tally_conf *c,
			  const struct tally_conf_decl *d, const char *who,
			  const void *state);
void tally_conf_binds_free(struct tally_conf *c);

/*
 * Read @path (a file, then its include_dir; or a directory of *.conf) and
 * validate everything. Problems are logged with file:line. Returns the
 * configuration (check ->errors) or NULL with errno on a fatal error.
 */
/* "deltas (...), set members" for a set of TALLY_FORMS_* bits, in @buf */
const char *tally_forms_text(unsigned forms, char *buf, size_t size);

struct tally_conf *tally_conf_load(const char *path,
				   struct tally_loader *ld);
void tally_conf_free(struct tally_conf *conf);
/*
 * options.c: fill @state from the plugin's options in declaration @d
 * (defaults first). Problems are logged; returns how many there were.
 */
unsigned tally_options_fill(const struct tally_conf_decl *d, void *state);
/*
 * Whether declaration @a of @ca and @b of @cb make the same instance: same
 * kind, plugin, name, effective interval, queue size and settings. A
 * reload keeps the running instance of a declaration that is the same.
 */
bool tally_conf_decl_same(const struct tally_conf *ca,
			  const struct tally_conf_decl *a,
			  const struct tally_conf *cb,
			  const struct tally_conf_decl *b);

/* instance.c / pipeline.c: the running graph */
struct tally_outq {
	struct tally_batch **ring;
	size_t cap, head, len;
	size_t records, max_records; /* in the queued batches, and bound */
	bool busy;		/* write() said EAGAIN */
	size_t held;		/* records the output accepted, undelivered
				 * (tally_output_held()) */
	struct tally_outq_hold {
		struct tally_batch *b;
		size_t left;	/* units not released yet */
	} *hold;		/* tally_output_hold(), oldest at hold_head */
	size_t hold_head, nhold, hold_cap;
	bool handed_over;	/* a reload took the held batches */
	bool loss_logged;	/* the shutdown deadline logged what was left */
	double backoff;		/* seconds until the next retry */
	struct event *deliver;	/* activated to run write() */
	struct event *retry;	/* backoff timer */
};

struct tally_pipeline;

struct tally_instance {
	const struct tally_plugin *plugin;
	char *name;
	char *label;		/* "plugin[name]" for logs */
	void *state;
	double interval;
	struct tally_core *core;
	bool initialized;
	const char *cfile;	/* where the configuration defines it */
	int cline;
	bool setup;		/* in check/init: logs carry cfile:cline */
	struct tally_conf_decl *decl;	/* in the conf it was made from */
	/* reload: its declaration in the new conf, if the new graph has it */
	struct tally_conf_decl *kept_as;
	bool retired;		/* reload: freed once its worker is done */
	unsigned generation;	/* core->generation when it was made */
	bool left_out;		/* --user -- CMD: failed to start */

	pthread_mutex_t stat_lock;
	struct tally_keyed_drops *keyed; /* tally_count_drop_key(), lazily */
	struct tally_stats_drop drops[TALLY_STATS_MAX_DROPS];
	size_t ndrops;
	struct tally_stats_drop events[TALLY_STATS_MAX_DROPS];
	size_t nevents;
	uint64_t records_in, records_out;
	uint64_t reads, read_ns;

	/* inputs */
	struct tally_pipeline **pipes;
	size_t npipes;
	struct event *timer;
	double mark;		/* wall-clock second the timer is set for */
	bool started;
	/* blocking inputs: one worker thread */
	pthread_t worker;
	bool worker_running;
	pthread_mutex_t wlock;
	pthread_cond_t wcond;
	bool wbusy, wgo, wstop;
	struct tally_batch *wresult;
	struct event *wdone;

	/* filters: the pipeline this instance belongs to, and its place */
	struct tally_pipeline *pipe;
	size_t pos;
	bool in_op; /* in process or tick: tally_emit() is EBUSY */
	bool last_tick; /* the tick running is the filter's last */
	bool hands_off; /* retired by a reload, with a successor to adopt */

	/* outputs */
	struct tally_outq q;
	bool drain_flushed;	/* shutdown: flushed once its queue drained */
	struct tally_labels *static_labels; /* tally_output_labels() */
};

struct tally_pipeline {
	char *name;
	struct tally_instance **filters;
	size_t nfilters;
	struct tally_instance **outputs;
	size_t noutputs;
};

struct tally_core {
	struct event_base *base;
	struct tally_conf *conf;
	const char *conf_path;		/* what SIGHUP reloads, or NULL */
	struct tally_loader *ld;
	/* retired blocking inputs whose read is still running */
	struct tally_instance **zombies;
	size_t nzombies;
	struct tally_instance **insts;
	size_t ninsts;
	struct tally_pipeline *pipes;
	size_t npipes;
	struct tally_instance core_inst;	/* for drops counted with NULL */
	bool stopping;
	bool finished;
	bool once;
	bool failed;		/* stopping because of an error: exit 1 */
	/* --user -- CMD: an instance that fails to start is left out */
	bool wrapping;
	size_t nleft_out;	/* instances left out that way */
	unsigned generation;	/* SIGHUPs seen: what a reload kept is older */
	struct event *sigs[7];
	struct event *request;	/* SIGUSR1: outputs' end op, on demand */
	pid_t child;		/* --user -- CMD: the command, or 0 */
	bool child_exited;	/* ... and it has exited */
	int child_status;	/* its exit status, as a shell reports it */
	int child_sig;		/* the signal that ended it, or 0 */
	int child_tty;		/* the terminal handed to its group, or -1 */
	size_t end_failures;	/* outputs whose final files failed */
	struct event *deadline;
};

struct tally_core *tally_core_new(struct tally_conf *conf, bool once);
int tally_core_start(struct tally_core *core);
/*
 * SIGHUP: load core->conf_path again; if it is valid, apply it keeping
 * what did not change (graph.c). 0, or -1 when the running configuration
 * stays (the reasons are logged).
 */
int tally_core_reload(struct tally_core *core);
/* stop inputs, drain, flush outputs within the deadline, end the loop */
void tally_core_stop(struct tally_core *core);
int tally_core_run(struct tally_core *core);
/*
 * --user -- CMD: run @argv once the collector is up, with the variables
 * instances exported (tally_instance_export_env()); stop when it exits.
 */
int tally_core_spawn(struct tally_core *core, char *const *argv);
void tally_core_free(struct tally_core *core);
struct tally_core *tally_core_current(void);

/* pipeline.c: instances, for graph.c */
struct tally_instance *tally_inst_new(struct tally_core *core,
				      struct tally_conf *conf,
				      struct tally_conf_decl *d,
				      const char *pipe_name);
/*
 * --check-config and loading: validate declaration @d of @conf as its
 * plugin's check op sees it, on an instance made as running ones are (its
 * name, label, interval, file:line) but never initialized nor started,
 * and freed before returning. 0, or -1 with errno EINVAL (*problems
 * counts what was logged) or ENOMEM.
 */
int tally_inst_check(struct tally_conf *conf, struct tally_conf_decl *d,
		     unsigned *problems);
/* run the plugin's init; 0 or -1 (logged) */
int tally_inst_init(struct tally_instance *inst);
/* arm timers, run an input's start op, first read right away; 0 or -1 */
int tally_inst_start(struct tally_instance *inst);
/* inputs: timer off, stop op; filters: timer off and a last tick */
void tally_inst_halt(struct tally_instance *inst);
/* fini (if initialized) and free; a busy blocking input is retired */
void tally_inst_free(struct tally_instance *inst);
/* a snapshot of @inst's counters, as tally_stats_foreach() hands out */
void tally_inst_stats(const struct tally_instance *inst,
		      struct tally_instance_stats *st);
/* read a periodic input now, outside its timer (its marks stay) */
void tally_input_read_now(struct tally_instance *in);
/* input.c: tally_inst_start() of an input: start op, worker, first read */
int tally_input_start(struct tally_instance *in);
/* emit.c: tally_inst_start() of a filter: its tick timer, if it ticks */
int tally_filter_start(struct tally_instance *f);
/* emit.c: run filter @f's tick op now and its batch down the pipeline */
void tally_filter_tick_once(struct tally_instance *f);

/* outq.c: output @o's queue, @cap batches, @max_records records; 0 or -1 */
int tally_outq_init(struct tally_instance *o, size_t cap, size_t max_records);
/* unref what is queued, free the ring and events; @o's queue is empty */
void tally_outq_free(struct tally_instance *o);
void tally_outq_push(struct tally_instance *o, struct tally_batch *b);
/* records in the batches queued for output @o */
size_t tally_outq_records(const struct tally_instance *o);
/* The batches @o holds (tally_output_hold()), oldest first, into @out
 * (room for tally_outq_held_batches()); they are @out's now, and their
 * number is returned. @out NULL: they are let go, and the number of
 * records they held returned. */
size_t tally_outq_take_held(struct tally_instance *o,
			    struct tally_batch **out);
size_t tally_outq_held_batches(const struct tally_instance *o);

/* libevent priorities: output deliveries first, the rest after */
#define TALLY_PRIO_OUTPUT	0
#define TALLY_PRIO_DEFAULT	1	/* libevent: n / 2 of 2 */

/* Plugin @p's operation @op (check, init, fini), whatever its kind. */
#define PLUGIN_OP(p, op)                                            \
	((p)->kind == TALLY_KIND_INPUT	  ? (p)->input->op  \
	 : (p)->kind == TALLY_KIND_FILTER ? (p)->filter->op \
					  : (p)->output->op)

/*
 * input.c: giving freed heap back to the kernel from input ticks.
 * @free_bytes reports malloc's free bytes (mallinfo2().fordblks) and @trim
 * gives them back (malloc_trim(0)); both walk the whole heap. The ops are
 * there so that a unit test can count how often the walks happen.
 */
struct tally_heap_ops {
	size_t (*free_bytes)(void);
	void (*trim)(void);
};

struct tally_heap_trim {
	size_t base;		/* free bytes after the last trim */
	int64_t last_ns;	/* CLOCK_MONOTONIC ns of the last look, 0: none */
};

/*
 * A tick's chance to trim, at @now_ns (CLOCK_MONOTONIC): looks at the heap
 * at most once a second, trims when more than 512 KiB were freed since the
 * last trim. Loop thread only.
 */
void tally_heap_trim_tick(struct tally_heap_trim *t,
			  const struct tally_heap_ops *ops, int64_t now_ns);

/*
 * emit.c: the wall-clock second at which a timer of @interval seconds
 * last set for @mark (0: none yet) fires next, at @now (CLOCK_REALTIME
 * seconds): the mark after @mark, or, on the first tick, after a missed
 * one (a stalled loop) or a clock step, the next multiple of @interval
 * after @now. Never the same mark twice.
 */
double tally_next_mark(double interval, double mark, double now);
/* emit.c: the delay until the next mark after *@mark, which is updated */
struct timeval tally_next_aligned(double interval, double *mark);

/* graph.c: building the running graph from a configuration */
int tally_graph_build(struct tally_core *core);

/* record.c */
void tally_batch_set_source(struct tally_batch *b, const char *source,
			    double interval);
/* on emission, before the batch is shared: settle tally_batch_forms() */
void tally_batch_seal(struct tally_batch *b);
/* arena bytes handed out by the batch itself (tests: borrowing copies 0) */
size_t tally_batch_arena_used(const struct tally_batch *b);

/* modes (mode.c) */
/*
 * Decide the mode's directories, at start, before any fork or chdir:
 * records the working directory, against which tally_output_dir()
 * resolves.
 */
int tally_mode_setup(bool user);
/*
 * Take global.output_dir and global.user_ports from the configuration
 * tallyd starts with (a reload does not change them). 0, or -1 (ENOMEM).
 */
int tally_mode_configure(const struct tally_conf *conf);
/* create the runtime directory (mode 0700 in user mode); 0 or -1, logged */
int tally_runtime_dir_create(void);
/*
 * tallyd --user -- CMD outside a batch job: the runtime directory becomes
 * RUNDIR/cmd-PID (tallyd's pid), this collector's alone and removed at
 * exit, so that two commands of one user never share sockets. A job's,
 * or TALLY_RUNTIME_DIR, stays as it is. Call after tally_mode_setup().
 */
void tally_mode_wrap(void);
/* the wrapped command exited at @real_ns: tally_command_end_ns() */
void tally_mode_command_ended(int64_t real_ns);
/* where the built-in configuration is written: RUNDIR, or cmd-PID's parent */
const char *tally_mode_conf_dir(void);
/*
 * User mode: hold RUNDIR/tallyd.lock (flock, with the pid in it) while
 * running, so that a second collector of the same directory (the same
 * job) says so and stops instead of taking the first one's sockets. 0,
 * or -1 with errno = EBUSY (held by the pid logged) or why the lock file
 * could not be opened (logged). System mode: always 0; when another
 * collector holds the lock (or it cannot be opened), logged, and this one
 * neither writes nor removes RUNDIR/listen: a process removes only files
 * it created, in a directory it holds.
 */
int tally_runtime_dir_lock(void);
/*
 * Create pid file @path and hold a lock on it (flock) while running, with
 * tallyd's pid in it: a second collector given the same pid file refuses
 * to start, naming the first one's pid; a file nobody holds (its collector
 * died) is taken over. Removed by tally_mode_cleanup(). 0, or -1 (logged)
 * with errno = EBUSY (held) or why it could not be created.
 */
int tally_pid_file_create(const char *path);
/* the wrapped command's trace id: the job id, else "tallyd-PID" */
const char *tally_mode_trace_id(char *buf, size_t size);
/*
 * The environment of a wrapped command: environ with every exported
 * variable set (replacing inherited ones) and TALLY_TRACE_ID set unless
 * inherited. An array of "NAME=VALUE" to free with tally_mode_env_free(),
 * or NULL with errno = ENOMEM.
 */
char **tally_mode_env(void);
void tally_mode_env_free(char **env);
/*
 * The wrapped command's process group and terminal: the command runs in a
 * process group of its own (signals tallyd passes on reach the processes
 * it started), made the terminal's foreground group when tallyd's was, as
 * a shell does for a job (the terminal's Ctrl-C reaches it once, and it
 * can read the terminal). tally_mode_tty(): the descriptor of the
 * terminal whose foreground group is tallyd's (0, 1 or 2), or -1.
 * tally_mode_tty_give(): make @pgrp that terminal's foreground group
 * (from the background too: SIGTTOU is blocked meanwhile).
 */
int tally_mode_tty(void);
void tally_mode_tty_give(int fd, pid_t pgrp);
/* an instance is freed: forget what it published (listen file, env) */
void tally_mode_forget(struct tally_instance *inst);
/* at exit: remove RUNDIR/listen, drop the lock; cmd-PID goes whole */
void tally_mode_cleanup(void);
/* whether tally_output_path() created or used the output directory */
bool tally_output_dir_used(void);
/*
 * --check-config: whether global.output_dir could be created (or is a
 * directory tallyd can write to), without creating anything. 0, or -1
 * with errno and what is wrong in @why.
 */
int tally_output_dir_check(char *why, size_t size);

#endif /* TALLY_CORE_INTERNAL_H */
