/* SPDX-License-Identifier: MIT */
/*
 * core/pipeline.c - the core's life: made from a configuration, started,
 * run, reloaded (graph.c), stopped on a signal or when a wrapped command
 * ends, and freed
 *
 * The running graph's parts live next door: instances (instance.c),
 * inputs' reads (input.c), pipelines and filter ticks (emit.c), output
 * queues (outq.c), self-metrics (stats.c).
 *
 * Data flow: an input's batch enters each pipeline that names the input.
 * The pipeline's own filter instances run in order; what comes out is
 * pushed, shared by reference, onto the queue of each output. Outputs are
 * written from their queue by a deferred event, so a slow output only
 * fills its own queue (bounded; the oldest batch is dropped and counted)
 * and never delays an input or another output.
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include <tally/stats.h>

#include "core-internal.h"

#define CORE_DISPATCH_BURST	16	/* callbacks between looks for them */

static struct tally_core *current_core;

struct tally_core *tally_core_current(void)
{
	return current_core;
}

/*
 * libevent logs some errors itself ("Error from accept() call: Too many
 * open files"), as fast as they happen. Route them through tally_log, so
 * they reach syslog and are rate-limited like ours.
 */
static void core_event_log(int severity, const char *msg)
{
	int prio = severity >= EVENT_LOG_ERR	? LOG_ERR
		   : severity >= EVENT_LOG_WARN ? LOG_WARNING
		   : severity >= EVENT_LOG_MSG	? LOG_INFO
						: LOG_DEBUG;

	/* one throttle slot for all of libevent's lines: a constant format */
	tally_log(NULL, prio, "libevent: %s", msg);
}

struct tally_core *tally_core_new(struct tally_conf *conf, bool once)
{
	struct tally_core *core = calloc(1, sizeof(*core));
	struct event_config *cfg;

	if (!core) {
		errno = ENOMEM;
		return NULL;
	}
	core->child_tty = -1;
	core->conf = conf;
	core->once = once;
	core->core_inst.name = "tallyd";
	pthread_mutex_init(&core->core_inst.stat_lock, NULL);
	current_core = core;
	tally_log_set_core(&core->core_inst);
	if (evthread_use_pthreads() < 0)
		goto out_free;
	event_set_log_callback(core_event_log);
	/*
	 * Precise timers: libevent's default monotonic clock is the coarse
	 * one (4 ms here), which turns a 5 ms coalescing delay into two or
	 * three wake-ups, the very noise coalescing is there to avoid.
	 */
	cfg = event_config_new();
	if (!cfg)
		goto out_free;
	event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
	/*
	 * Output deliveries run at a higher priority than everything else,
	 * and the loop looks for them after every few other callbacks: when
	 * a thousand inputs tick on the same mark, their batches must reach
	 * the outputs between the ticks, not overflow the queues while all
	 * the ticks run first.
	 */
	event_config_set_max_dispatch_interval(cfg, NULL, CORE_DISPATCH_BURST,
					       TALLY_PRIO_DEFAULT);
	core->base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	if (!core->base || event_base_priority_init(core->base, 2) < 0)
		goto out_free;
	if (tally_graph_build(core) < 0) {
		tally_log(NULL, LOG_ERR, "cannot build pipelines: %s",
			  strerror(errno));
		goto out_free;
	}
	return core;
out_free:
	tally_core_free(core);
	errno = ENOMEM;
	return NULL;
}

/* Shutdown: stop inputs, drain filters, flush outputs within a deadline. */

static bool queues_empty(struct tally_core *core)
{
	for (size_t i = 0; i < core->ninsts; i++) {
		struct tally_instance *o = core->insts[i];

		if (o->plugin->kind == TALLY_KIND_OUTPUT &&
		    (o->q.len || o->q.held))
			return false;
	}
	return true;
}

/* Every output's end op (tally/plugin.h), failures logged. */
static void core_outputs_end(struct tally_core *core, enum tally_end why)
{
	for (size_t i = 0; i < core->ninsts; i++) {
		struct tally_instance *o = core->insts[i];

		if (o->plugin->kind == TALLY_KIND_OUTPUT && o->initialized &&
		    o->plugin->output->end &&
		    o->plugin->output->end(o, o->state, why) < 0) {
			tally_log(o, LOG_WARNING, "%s failed: %s",
				  why == TALLY_END_COMMAND
					  ? "writing the final files"
					  : "SIGUSR1: writing the files",
				  strerror(errno));
			/* the exit message must not say they are there */
			core->end_failures += why == TALLY_END_COMMAND;
		}
	}
}

/* SIGUSR1, once the batches queued before it are delivered. */
static void core_request(evutil_socket_t fd, short what, void *arg)
{
	core_outputs_end(arg, TALLY_END_REQUEST);
}

/* SIGHUP: outputs the reload kept (made before @gen) reopen their files. */
static void core_outputs_reopen(struct tally_core *core, unsigned gen)
{
	for (size_t i = 0; i < core->ninsts; i++) {
		struct tally_instance *o = core->insts[i];

		if (o->plugin->kind == TALLY_KIND_OUTPUT && o->initialized &&
		    o->generation < gen && o->plugin->output->reopen &&
		    o->plugin->output->reopen(o, o->state) < 0)
			tally_log(o, LOG_WARNING, "SIGHUP: reopen failed: %s",
				  strerror(errno));
	}
}

static void core_finish(struct tally_core *core)
{
	if (core->finished)
		return;
	core->finished = true;
	/* the wrapped command's end: final files, with everything it sent */
	if (core->child_exited)
		core_outputs_end(core, TALLY_END_COMMAND);
	for (size_t i = 0; i < core->ninsts; i++) {
		struct tally_instance *o = core->insts[i];

		if (o->plugin->kind == TALLY_KIND_OUTPUT && o->initialized &&
		    o->plugin->output->flush &&
		    o->plugin->output->flush(o, o->state) < 0)
			tally_log(o, LOG_WARNING, "flush failed: %s",
				  strerror(errno));
	}
	event_base_loopexit(core->base, NULL);
}

static void core_drain_check(evutil_socket_t fd, short what, void *arg)
{
	struct tally_core *core = arg;
	struct timeval tv = tally_timeval(0.01);

	if (core->finished)
		return;
	if (queues_empty(core)) {
		core_finish(core);
		return;
	}
	/*
	 * An output whose queue is drained but that still holds records (a
	 * request filling up, a state not pushed yet) is flushed now, once,
	 * so that they go out while the loop runs rather than waiting for its
	 * own timer, or for the deadline
	 */
	for (size_t i = 0; i < core->ninsts; i++) {
		struct tally_instance *o = core->insts[i];

		if (o->plugin->kind == TALLY_KIND_OUTPUT && o->initialized &&
		    o->plugin->output->flush && !o->q.len && o->q.held &&
		    !o->drain_flushed) {
			o->drain_flushed = true;
			if (o->plugin->output->flush(o, o->state) < 0)
				tally_log(o, LOG_WARNING, "flush failed: %s",
					  strerror(errno));
		}
	}
	event_base_once(core->base, -1, EV_TIMEOUT, core_drain_check, core,
			&tv);
}

static void core_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct tally_core *core = arg;

	if (core->finished)
		return;

	/* one line per output: what is queued and what it holds */
	for (size_t i = 0; i < core->ninsts; i++) {
		struct tally_instance *o = core->insts[i];

		if (o->plugin->kind != TALLY_KIND_OUTPUT ||
		    (!o->q.len && !o->q.held))
			continue;
		if (o->q.len)
			tally_count_drop(o, "shutdown", o->q.records);
		tally_log(o, LOG_WARNING,
			  "shutdown deadline reached (shutdown_timeout %g s): "
			  "%zu records not delivered (%zu queued in %zu "
			  "batches, %zu held by the output)",
			  core->conf->shutdown_timeout,
			  o->q.records + o->q.held, o->q.records, o->q.len,
			  o->q.held);
		/* the output counts what it holds when it is freed */
		o->q.loss_logged = o->q.held > 0;
	}
	core_finish(core);
}

void tally_inst_halt(struct tally_instance *inst)
{
	const struct tally_plugin *p = inst->plugin;

	if (inst->timer)
		evtimer_del(inst->timer);
	if (p->kind == TALLY_KIND_INPUT && inst->started) {
		inst->started = false;
		if (p->input->stop)
			p->input->stop(inst, inst->state);
	}
	/* a filter's last tick, so that aggregated data is not lost */
	if (p->kind == TALLY_KIND_FILTER && inst->initialized &&
	    p->filter->tick) {
		inst->last_tick = true;
		tally_filter_tick_once(inst);
	}
}

void tally_core_stop(struct tally_core *core)
{
	struct timeval dl = tally_timeval(core->conf->shutdown_timeout);

	if (core->stopping)
		return;
	/*
	 * The wrapped command ended: its final files must hold the figures
	 * of its end, not those of the last tick (up to an interval old),
	 * self-metrics included. One more read of every periodic input, in
	 * configuration order (the shipped self input comes last), except
	 * blocking ones: a stuck read must not hold up the job's end.
	 */
	for (size_t i = 0; core->child_exited && i < core->ninsts; i++) {
		struct tally_instance *in = core->insts[i];

		if (in->plugin->kind == TALLY_KIND_INPUT && in->timer &&
		    in->plugin->input->read &&
		    !(in->plugin->input->flags & TALLY_INPUT_BLOCKING))
			tally_input_read_now(in); /* on this thread: not blocking */
	}
	core->stopping = true;
	/* inputs first: what they still emit goes through the filters */
	for (int kind = TALLY_KIND_INPUT; kind <= TALLY_KIND_FILTER; kind++) {
		for (size_t i = 0; i < core->ninsts; i++) {
			if ((int)core->insts[i]->plugin->kind == kind)
				tally_inst_halt(core->insts[i]);
		}
	}
	core->deadline = evtimer_new(core->base, core_deadline, core);
	if (core->deadline)
		evtimer_add(core->deadline, &dl);
	core_drain_check(-1, 0, core);
}

/* The name of a signal core_signal() handles, for its log lines. */
static const char *core_sig_name(int sig)
{
	switch (sig) {
	case SIGTERM:
		return "SIGTERM";
	case SIGINT:
		return "SIGINT";
	case SIGQUIT:
		return "SIGQUIT";
	case SIGUSR1:
		return "SIGUSR1";
	case SIGUSR2:
		return "SIGUSR2";
	default:
		return "signal";
	}
}

/*
 * The command stopped. On a terminal it was handed (Ctrl-Z), tallyd stops
 * with it, as the shell's job it is: the terminal goes back to tallyd's
 * group, tallyd stops, and when continued (fg or bg) it continues the
 * command, in the foreground again if tallyd is. Else (a SIGSTOP from
 * someone) whoever stopped it continues it.
 */
static void core_child_stopped(struct tally_core *core)
{
	int tty = core->child_tty;

	if (tty < 0)
		return;
	tally_log(NULL, LOG_INFO, "the command stopped: stopping with it");
	tally_mode_tty_give(tty, getpgrp());
	raise(SIGSTOP);
	if (tcgetpgrp(tty) == getpgrp())
		tally_mode_tty_give(tty, core->child);
	else
		core->child_tty = -1; /* continued in the background */
	kill(-core->child, SIGCONT);
}

static void core_signal(evutil_socket_t sig, short what, void *arg)
{
	struct tally_core *core = arg;
	int status;

	if (sig == SIGCHLD) {
		if (!core->child ||
		    waitpid(core->child, &status, WNOHANG | WUNTRACED) <= 0)
			return;
		if (WIFSTOPPED(status)) {
			core_child_stopped(core);
			return;
		}
		core->child = 0;
		core->child_exited = true;
		tally_mode_command_ended(tally_now_ns());
		core->child_sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
		core->child_status = WIFEXITED(status)
					     ? WEXITSTATUS(status)
					     : 128 + WTERMSIG(status);
		/* the terminal is tallyd's group's again */
		tally_mode_tty_give(core->child_tty, getpgrp());
		core->child_tty = -1;
		tally_log(NULL, LOG_INFO, "command exited with status %d: "
			  "stopping", core->child_status);
		tally_core_stop(core);
		return;
	}
	if (sig == SIGHUP) {
		/* instances made from now on need not reopen anything */
		unsigned gen = ++core->generation;

		if (core->stopping) {
			tally_log(NULL, LOG_INFO, "SIGHUP: ignored, stopping");
			return;
		}
		if (!core->conf_path) {
			tally_log(NULL, LOG_WARNING,
				  "SIGHUP: cannot reload: the configuration's "
				  "path could not be resolved at start");
			tally_count_event(NULL, "reload_failures", 1);
		} else {
			tally_log(NULL, LOG_INFO, "SIGHUP: reloading %s",
				  core->conf_path);
			tally_core_reload(core);
		}
		/* what goes on running reopens its files (logrotate) */
		core_outputs_reopen(core, gen);
		return;
	}
	if (core->child) {
		/*
		 * The job's command decides when the job ends: pass the signal
		 * on and stop when it exits (SIGCHLD), with its status.
		 */
		tally_log(NULL, LOG_INFO, "%s: passed on to the command",
			  core_sig_name((int)sig));
		/* its process group: what it started gets it too */
		if (kill(-core->child, (int)sig) < 0)
			kill(core->child, (int)sig);
		return;
	}
	if (sig == SIGUSR1) {
		tally_log(NULL, LOG_INFO,
			  "SIGUSR1: outputs write their files into %s",
			  tally_output_dir());
		event_active(core->request, 0, 0);
		return;
	}
	tally_log(NULL, LOG_INFO, "%s: stopping", core_sig_name((int)sig));
	tally_core_stop(core);
}


int tally_inst_start(struct tally_instance *inst)
{
	switch (inst->plugin->kind) {
	case TALLY_KIND_INPUT:
		return tally_input_start(inst);
	case TALLY_KIND_FILTER:
		return tally_filter_start(inst);
	default:
		return 0;
	}
}

/*
 * --user -- CMD: the job's command runs even when part of its collector
 * does not (a port taken, a socket in use). What failed to start is left
 * out, said so on stderr whatever global.log says: outputs leave their
 * pipelines, and a pipeline that lost a filter is left out whole (records
 * must not skip a filter). The rest runs.
 */
static void core_leave_out(struct tally_core *core)
{
	size_t k = 0;

	for (size_t i = 0; i < core->npipes; i++) {
		struct tally_pipeline *p = &core->pipes[i];
		const char *lost = NULL;
		size_t no = 0;

		for (size_t j = 0; j < p->nfilters; j++) {
			if (p->filters[j]->left_out)
				lost = p->filters[j]->label;
		}
		if (lost) {
			tally_log_conf(LOG_WARNING, NULL, 0,
				       "pipeline %s left out: its filter %s "
				       "did not start",
				       p->name, lost);
			for (size_t j = 0; j < p->nfilters; j++)
				p->filters[j]->left_out = true;
			p->nfilters = 0;
			p->noutputs = 0;
			continue;
		}
		for (size_t j = 0; j < p->noutputs; j++) {
			if (!p->outputs[j]->left_out)
				p->outputs[no++] = p->outputs[j];
		}
		p->noutputs = no;
	}
	for (size_t i = 0; i < core->ninsts; i++) {
		struct tally_instance *inst = core->insts[i];

		if (!inst->left_out) {
			core->insts[k++] = inst;
			continue;
		}
		tally_log_conf(LOG_WARNING, inst->cfile, inst->cline,
			       "%s left out: the command runs without it",
			       inst->label);
		core->nleft_out++;
		tally_inst_free(inst);
	}
	core->ninsts = k;
	if (core->nleft_out)
		tally_count_event(NULL, "instances_left_out", core->nleft_out);
}

int tally_core_start(struct tally_core *core)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGCHLD,
				    SIGUSR1, SIGQUIT, SIGUSR2 };
	/* QUIT and USR2 only to pass on: a daemon keeps their defaults */
	size_t nsigs = core->wrapping ? 7 : 5;

	/* init everything first: a failure must not leave half a daemon */
	for (size_t i = 0; i < core->ninsts; i++) {
		if (tally_inst_init(core->insts[i]) < 0) {
			if (!core->wrapping)
				return -1;
			core->insts[i]->left_out = true;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	for (size_t i = 0; i < nsigs; i++) {
		core->sigs[i] = evsignal_new(core->base, sigs[i], core_signal,
					     core);
		if (!core->sigs[i] || evsignal_add(core->sigs[i], NULL) < 0)
			return -1;
	}
	core->request = event_new(core->base, -1, 0, core_request, core);
	if (!core->request)
		return -1;
	for (size_t i = 0; i < core->ninsts; i++) {
		struct tally_instance *inst = core->insts[i];

		if (inst->left_out || tally_inst_start(inst) == 0)
			continue;
		if (!core->wrapping)
			return -1;
		tally_inst_halt(inst);
		inst->left_out = true;
	}
	if (core->wrapping)
		core_leave_out(core);
	/* zeros from the start, so that rate() over them has a series */
	if (core->conf_path) {
		tally_count_event(NULL, "reloads", 0);
		tally_count_event(NULL, "reload_failures", 0);
	}
	if (core->once)
		tally_core_stop(core);
	return 0;
}

int tally_core_spawn(struct tally_core *core, char *const *argv)
{
	char **env = tally_mode_env();
	int tty = tally_mode_tty();
	pid_t pid;

	if (!env)
		return -1;
	pid = fork();
	if (pid < 0) {
		tally_mode_env_free(env);
		return -1;
	}
	/*
	 * A process group of its own, the terminal's foreground when tallyd's
	 * was (tally_mode_tty()): a terminal's Ctrl-C reaches the command
	 * once, not once from the terminal and again from tallyd, and what
	 * tallyd passes on reaches the processes the command started. Both
	 * sides set it, so that it is set whichever runs first.
	 */
	if (pid == 0) {
		setpgid(0, 0);
		tally_mode_tty_give(tty, getpid());
		signal(SIGPIPE, SIG_DFL);
		environ = env;
		tally_fd_restore();
		execvp(argv[0], argv);
		fprintf(stderr, "tallyd: cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	tally_mode_env_free(env);
	setpgid(pid, pid);
	tally_mode_tty_give(tty, pid);
	core->child = pid;
	core->child_tty = tty;
	return 0;
}

int tally_core_run(struct tally_core *core)
{
	return event_base_dispatch(core->base) < 0 ? -1 : 0;
}

void tally_inst_free(struct tally_instance *inst)
{
	const struct tally_plugin *p = inst->plugin;
	void (*fini)(struct tally_instance *, void *) = PLUGIN_OP(p, fini);

	if (inst->worker_running) {
		bool busy;

		pthread_mutex_lock(&inst->wlock);
		inst->wstop = true;
		busy = inst->wbusy;
		pthread_cond_signal(&inst->wcond);
		pthread_mutex_unlock(&inst->wlock);
		if (busy && !inst->core->stopping) {
			/*
			 * A reload replaced an input whose read is stuck (a
			 * hung NFS server): do not stall the loop on it; the
			 * read's completion frees it (input_worker_done).
			 */
			struct tally_core *core = inst->core;
			struct tally_instance **v;

			v = realloc(core->zombies,
				    (core->nzombies + 1) * sizeof(*v));
			if (v) {
				core->zombies = v;
				core->zombies[core->nzombies++] = inst;
				inst->retired = true;
				return;
			}
		}
		pthread_join(inst->worker, NULL);
		inst->worker_running = false;
		tally_batch_unref(inst->wresult);
	}
	if (inst->initialized && fini)
		fini(inst, inst->state);
	tally_mode_forget(inst);
	if (inst->timer)
		event_free(inst->timer);
	if (inst->wdone)
		event_free(inst->wdone);
	if (p->kind == TALLY_KIND_OUTPUT) {
		tally_outq_free(inst);
		tally_labels_unref(inst->static_labels);
	}
	if (inst->state)
		tally_options_free(p->options, inst->state);
	free(inst->state);
	free(inst->pipes);
	free(inst->label);
	free(inst->name);
	free(inst->keyed);
	pthread_mutex_destroy(&inst->stat_lock);
	free(inst);
}

void tally_core_free(struct tally_core *core)
{
	if (!core)
		return;
	/* at exit, joins wait for running reads (no zombies) */
	core->stopping = true;
	/* outputs last: inputs and filters may still hold their batches */
	for (int kind = TALLY_KIND_INPUT; kind <= TALLY_KIND_OUTPUT; kind++) {
		for (size_t i = 0; i < core->ninsts; i++) {
			if (core->insts[i] &&
			    (int)core->insts[i]->plugin->kind == kind) {
				tally_inst_free(core->insts[i]);
				core->insts[i] = NULL;
			}
		}
	}
	free(core->insts);
	while (core->nzombies) {
		struct tally_instance *z = core->zombies[--core->nzombies];

		z->retired = false;
		tally_inst_free(z);
	}
	free(core->zombies);
	for (size_t i = 0; i < core->npipes; i++) {
		free(core->pipes[i].filters);
		free(core->pipes[i].outputs);
	}
	free(core->pipes);
	for (size_t i = 0; i < 7; i++) {
		if (core->sigs[i])
			event_free(core->sigs[i]);
	}
	if (core->request)
		event_free(core->request);
	if (core->deadline)
		event_free(core->deadline);
	if (core->base)
		event_base_free(core->base);
	if (current_core == core) {
		current_core = NULL;
		tally_log_set_core(NULL);
	}
	free(core->core_inst.keyed);
	pthread_mutex_destroy(&core->core_inst.stat_lock);
	free(core);
}
