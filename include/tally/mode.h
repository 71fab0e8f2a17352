/* SPDX-License-Identifier: MIT */
/*
 * tally/mode.h - what a plugin asks the core about where it runs: the
 * output directory, the port rule of listeners, what a wrapped command is
 * told
 *
 * A user collector (tallyd --user) runs inside a job, next to the node's
 * system collector and to other jobs' collectors. Whatever a plugin binds,
 * writes or tells the job's command goes through these calls, so that the
 * rules are the same for every plugin (DESIGN.md section 7):
 *   - files a user keeps go into the output directory
 *     (tally_output_path());
 *   - every TCP or UDP listener takes its port from tally_listen_port() and
 *     reports the address it bound with tally_listen_publish(), which logs
 *     it and writes it to RUNDIR/listen for scripts;
 *   - what the command of tallyd --user -- CMD needs to reach the
 *     collector (the trace endpoint actually bound) is published with
 *     tally_instance_export_env().
 * All of these run on the event loop thread (init, start, ops, callbacks).
 */
#ifndef TALLY_MODE_H
#define TALLY_MODE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct tally_instance;

/* The longest batch job id tally shows, in bytes (a label, a log line,
 * a file name); longer ones are cut by tally_jobid_bound() */
#define TALLY_JOBID_MAX 64

/**
 * tally_jobid_bound() - a batch job id as tally shows it, everywhere
 * @id:  the id as the batch system spells it (an environment variable, a
 *       cgroup name), @len bytes
 * @buf: the result, TALLY_JOBID_MAX + 1 bytes, NUL-terminated
 *
 * The one rule for every place a job id goes: the jobid label of a user
 * collector's records, tally_job_info and rmsjob_info, the runtime and
 * output directories (tally_jobid_path()), log lines, and the trace
 * client's search for its job's collector. An id of at most
 * TALLY_JOBID_MAX bytes is kept as it is (Slurm's are decimal 32-bit
 * numbers, Flux's F58 64-bit ones, PBS's "N.server"); a longer one keeps
 * its first 55 bytes (whole UTF-8 characters when it is UTF-8) and ends
 * in "-" and 8 hex digits of a hash (FNV-1a) of the whole id, so that two
 * ids that differ after the cut stay apart. Pure; any thread.
 * Return: the length of @buf, at most TALLY_JOBID_MAX.
 */
size_t tally_jobid_bound(const char *id, size_t len, char *buf);

/**
 * tally_jobid_path() - a batch job id as a path component
 * @id:   the id, NUL-terminated
 * @buf:  the result, NUL-terminated, cut to @size
 * @size: its size
 *
 * tally_jobid_bound(), then '/', control characters and a leading '.'
 * become '_' (SLURM_JOB_ID=../../x stays in the runtime directory). Pure;
 * any thread.
 * Return: the length of the full mapping (at most TALLY_JOBID_MAX).
 */
size_t tally_jobid_path(const char *id, char *buf, size_t size);

/**
 * tally_output_dir() - the directory for files the user keeps
 *
 * global.output_dir; a relative one is taken from the directory tallyd was
 * started from (not from "/", where a detached tallyd works). Default: in
 * user mode "tally-ID" in that directory, ID being the batch job id
 * (tally_jobid()) or else tallyd's pid; in system mode TALLY_STATEDIR
 * (LOCALSTATEDIR/lib/tally). Not created by this call.
 * Loop thread only.
 * Return: an absolute path, valid until the next call or reload.
 */
const char *tally_output_dir(void);

/**
 * tally_output_path() - resolve a path option of an output
 * @inst: the output (for the log line of a failure)
 * @path: the option's value: absolute, or relative to the output directory
 *
 * A relative @path is joined to tally_output_dir(), and that directory is
 * created (with its parents, mode 0777 & ~umask) when it does not exist:
 * the caller is about to write there. An absolute @path is returned as is
 * and nothing is created. Loop thread only.
 * Return: a newly allocated absolute path (free() it), or NULL with errno
 * = ENOMEM, ENAMETOOLONG, or what mkdir(2) set (the failure is logged
 * against @inst).
 */
char *tally_output_path(struct tally_instance *inst, const char *path);

/**
 * tally_listen_port() - the port rule: the port a listener must bind
 * @inst: the instance opening a TCP or UDP listener (logs name it)
 * @port: the port its configuration names (0: any)
 *
 * A system collector binds what it is configured to. A user collector
 * must never clash with the system collector or another job's collector,
 * whatever the configuration it was given says (the shipped one names
 * 9464 for both): unless global.user_ports = "configured", each of its
 * listeners binds a port the kernel chooses, and this call returns 0 (and
 * logs it, naming RUNDIR/listen). The listener then reports the address
 * it bound with tally_listen_publish(). Loop thread only.
 * Return: the port to bind, 0 to 65535.
 */
unsigned tally_listen_port(struct tally_instance *inst, unsigned port);

/**
 * tally_listen_publish() - record a listener's bound address for scripts
 * @inst: the instance that bound it
 * @addr: what it bound, "127.0.0.1:41234", "[::1]:41234" or "unix:/path";
 *        copied
 *
 * The caller logs the address it serves on, in its own words. This call
 * rewrites RUNDIR/listen (tally_runtime_dir()): one "INSTANCE ADDRESS"
 * line per listener of every running instance, in the order they were
 * published, replaced whole (never seen half-written). The entry goes
 * when the instance is freed; the file is removed when tallyd exits.
 * Nothing is written under --once (no runtime directory). Loop thread
 * only.
 * Return: 0, or -1 with errno = ENOMEM, or what writing the file set
 * (logged; the entry is kept and the next rewrite may succeed).
 */
int tally_listen_publish(struct tally_instance *inst, const char *addr);

/**
 * tally_instance_export_env() - set a variable for a wrapped command
 * @inst:  the instance publishing it (e.g. a trace input)
 * @name:  variable name, [A-Za-z_][A-Za-z0-9_]*; copied
 * @value: its value; copied
 *
 * tallyd --user -- CMD starts CMD once every instance has started, with
 * each published variable set in its environment, replacing a value CMD
 * would inherit (an inherited TALLY_TRACE_ENDPOINT names another
 * collector). Call it from init or start with what was actually bound,
 * not what the configuration says (a tcp://host:* endpoint's port). When
 * two instances publish the same name, the first one stays and the second
 * is logged. Publishing the same name again from the same instance
 * replaces its value. Without a wrapped command this only records it.
 * Loop thread only.
 * Return: 0, or -1 with errno = EINVAL (bad name, NULL value), EEXIST
 * (another instance published @name; logged) or ENOMEM.
 */
int tally_instance_export_env(struct tally_instance *inst, const char *name,
			      const char *value);

/**
 * tally_command_end_ns() - when the command of tallyd --user -- CMD exited
 *
 * The job is over at that time: an input closing what the job's processes
 * left open (zmq_trace's spans of ranks killed with it) can end it then,
 * rather than at the last sign of life it happened to see.
 * Return: CLOCK_REALTIME ns at which tallyd learnt of CMD's exit; 0 while
 * CMD runs, and in a collector that wraps no command. Any thread.
 */
int64_t tally_command_end_ns(void);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_MODE_H */
