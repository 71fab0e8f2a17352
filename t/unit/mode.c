/* SPDX-License-Identifier: MIT */
/*
 * t/unit/mode.c - what tally/mode.h promises: where output files go, the
 * port rule of a user collector's listeners, what a wrapped command's
 * environment holds
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../core/core-internal.h"
#include "tap.h"

/* The value of @name in @env, or NULL; counts the entries in *@n. */
static const char *env_get(char **env, const char *name, int *n)
{
	size_t len = strlen(name);
	const char *v = NULL;

	*n = 0;
	for (size_t i = 0; env[i]; i++) {
		if (!strncmp(env[i], name, len) && env[i][len] == '=') {
			v = env[i] + len + 1;
			(*n)++;
		}
	}
	return v;
}

static void output_dirs(const char *tmp)
{
	struct tally_conf conf = { 0 };
	char want[PATH_MAX], *p;
	struct stat st;

	unsetenv("SLURM_JOB_ID");
	unsetenv("FLUX_JOB_ID");
	unsetenv("PBS_JOBID");
	unsetenv("LSB_JOBID");
	unsetenv("TALLY_RUNTIME_DIR");
	setenv("XDG_RUNTIME_DIR", tmp, 1);

	tally_mode_setup(false);
	tally_mode_configure(&conf);
	is(tally_output_dir(), TALLY_STATEDIR, "system mode: the state dir");

	setenv("SLURM_JOB_ID", "4242", 1);
	tally_mode_setup(true);
	snprintf(want, sizeof(want), "%s/tally/job-4242", tmp);
	is(tally_runtime_dir(), want, "user mode, job: runtime dir job-ID");
	snprintf(want, sizeof(want), "%s/tally-4242", tmp);
	is(tally_output_dir(), want, "user mode, job: ./tally-JOBID");

	unsetenv("SLURM_JOB_ID");
	tally_mode_setup(true);
	snprintf(want, sizeof(want), "%s/tally-%ld", tmp, (long)getpid());
	is(tally_output_dir(), want, "user mode, no job: ./tally-PID");

	conf.output_dir = "res";
	tally_mode_configure(&conf);
	snprintf(want, sizeof(want), "%s/res", tmp);
	is(tally_output_dir(), want, "relative output_dir: from the start dir");
	ok(stat(want, &st) < 0 && errno == ENOENT, "not created by asking");

	p = tally_output_path(NULL, "page.prom");
	snprintf(want, sizeof(want), "%s/res/page.prom", tmp);
	is(p, want, "a relative path lands in the output directory");
	free(p);
	snprintf(want, sizeof(want), "%s/res", tmp);
	ok(stat(want, &st) == 0 && S_ISDIR(st.st_mode),
	   "which it creates, as the caller is about to write there");
	ok(tally_output_dir_used(), "and notes it for the exit message");
	rmdir(want);

	p = tally_output_path(NULL, "/abs/file");
	is(p, "/abs/file", "an absolute path is kept");
	free(p);
	errno = 0;
	ok(!tally_output_path(NULL, "") && errno == EINVAL, "empty: EINVAL");

	conf.output_dir = "/elsewhere";
	tally_mode_configure(&conf);
	is(tally_output_dir(), "/elsewhere", "absolute output_dir as is");
	tally_mode_cleanup();
}

static void jobid_paths(const char *tmp)
{
	char buf[TALLY_JOBID_MAX + 1], want[PATH_MAX], id[151];
	size_t n;

	tally_jobid_path("4242", buf, sizeof(buf));
	is(buf, "4242", "a plain job id is kept");
	tally_jobid_path("../../x", buf, sizeof(buf));
	is(buf, "_._.._x", "'/' and a leading '.' become '_'");
	tally_jobid_path("12/34", buf, sizeof(buf));
	is(buf, "12_34", "no nested directories");
	tally_jobid_path("a\tb\nc\x7f", buf, sizeof(buf));
	is(buf, "a_b_c_", "control characters become '_'");
	tally_jobid_path("1.2-x_y", buf, sizeof(buf));
	is(buf, "1.2-x_y", "an inner '.' stays");

	memset(id, '7', 150);
	id[150] = '\0';
	n = tally_jobid_path(id, buf, sizeof(buf));
	cmp_ok(n, "==", TALLY_JOBID_MAX, "a long id is cut to 64");
	cmp_ok(strlen(buf), "==", TALLY_JOBID_MAX, "in the buffer too");
	ok(!strncmp(buf, id, 55) && buf[55] == '-', "its start, then '-'");
	ok(strspn(buf + 56, "0123456789abcdef") == 8, "and a hex hash");
	strcpy(want, buf);
	id[149] = '8';
	tally_jobid_path(id, buf, sizeof(buf));
	ok(strcmp(buf, want) != 0, "ids differing after the cut differ");
	n = tally_jobid_path("123456", buf, 4);
	is(buf, "123", "a short buffer gets a cut string");
	cmp_ok(n, "==", 6, "and the full length");

	setenv("XDG_RUNTIME_DIR", tmp, 1);
	unsetenv("TALLY_RUNTIME_DIR");
	setenv("SLURM_JOB_ID", "../../x", 1);
	tally_mode_setup(true);
	snprintf(want, sizeof(want), "%s/tally/job-_._.._x", tmp);
	is(tally_runtime_dir(), want, "the runtime dir stays inside");
	is(tally_jobid(), "../../x", "the jobid label keeps the raw id");
	snprintf(want, sizeof(want), "%s/tally-_._.._x", tmp);
	is(tally_output_dir(), want, "and so does the output dir");
	tally_mode_cleanup();

	/* one rule: a long id is bounded where it is read, for everything */
	memset(id, '7', 150);
	id[150] = '\0';
	setenv("SLURM_JOB_ID", id, 1);
	tally_mode_setup(true);
	tally_jobid_bound(id, strlen(id), buf);
	is(tally_jobid(), buf, "a long id: the jobid label is bounded");
	cmp_ok(strlen(tally_jobid()), "==", TALLY_JOBID_MAX, "to 64 bytes");
	snprintf(want, sizeof(want), "%s/tally/job-%s", tmp, buf);
	is(tally_runtime_dir(), want, "the runtime dir names the same id");
	snprintf(want, sizeof(want), "%s/tally-%s", tmp, buf);
	is(tally_output_dir(), want, "and so does the output dir");
	unsetenv("SLURM_JOB_ID");
	tally_mode_cleanup();

	/* UTF-8: whole characters before the hash */
	memset(id, 0, sizeof(id));
	memset(id, 'a', 54);
	strcat(id, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
	n = tally_jobid_bound(id, strlen(id), buf);
	ok(n == 63 && !strncmp(buf, id, 54) && buf[54] == '-',
	   "a cut never splits a UTF-8 character");
	n = tally_jobid_bound("4242", 4, buf);
	ok(n == 4 && !strcmp(buf, "4242"), "a short id is kept as it is");
}

static void port_rule(void)
{
	struct tally_conf conf = { 0 };

	tally_mode_setup(false);
	tally_mode_configure(&conf);
	cmp_ok(tally_listen_port(NULL, 9464), "==", 9464,
	       "system collector: the configured port");
	tally_mode_setup(true);
	cmp_ok(tally_listen_port(NULL, 9464), "==", 0,
	       "user collector: a port the kernel chooses");
	cmp_ok(tally_listen_port(NULL, 0), "==", 0, "0 stays 0");
	conf.user_ports_configured = true;
	tally_mode_configure(&conf);
	cmp_ok(tally_listen_port(NULL, 9464), "==", 9464,
	       "user_ports = configured: the configured port");
	tally_mode_cleanup();
}

static void command_env(void)
{
	struct tally_instance a = { .name = "a", .label = "zmq_trace[a]" };
	struct tally_instance b = { .name = "b", .label = "zmq_trace[b]" };
	char id[32], want[32], **env;
	int n;

	tally_mode_setup(true);
	setenv("TALLY_TRACE_ENDPOINT", "ipc:///inherited", 1);
	setenv("KEEP_ME", "1", 1);
	unsetenv("TALLY_TRACE_ID");

	errno = 0;
	ok(tally_instance_export_env(&a, "1BAD", "x") < 0 && errno == EINVAL,
	   "a name starting with a digit: EINVAL");
	ok(tally_instance_export_env(&a, "A=B", "x") < 0 && errno == EINVAL,
	   "a name with '=': EINVAL");
	ok(tally_instance_export_env(&a, "TALLY_TRACE_ENDPOINT",
				     "tcp://127.0.0.1:1") == 0,
	   "published");
	ok(tally_instance_export_env(&a, "TALLY_TRACE_ENDPOINT",
				     "tcp://127.0.0.1:2") == 0,
	   "published again by the same instance: replaced");
	errno = 0;
	ok(tally_instance_export_env(&b, "TALLY_TRACE_ENDPOINT", "ipc:///b") <
			   0 &&
		   errno == EEXIST,
	   "another instance: EEXIST, the first one stays");

	env = tally_mode_env();
	ok(env != NULL, "environment built");
	is(env_get(env, "TALLY_TRACE_ENDPOINT", &n), "tcp://127.0.0.1:2",
	   "the published endpoint replaces the inherited one");
	cmp_ok(n, "==", 1, "once");
	is(env_get(env, "KEEP_ME", &n), "1", "the rest is inherited");
	snprintf(want, sizeof(want), "tallyd-%ld", (long)getpid());
	is(env_get(env, "TALLY_TRACE_ID", &n), want,
	   "one trace id for the command: tallyd-PID outside a job");
	is(tally_mode_trace_id(id, sizeof(id)), want, "tally_mode_trace_id");
	tally_mode_env_free(env);

	setenv("TALLY_TRACE_ID", "", 1);
	env = tally_mode_env();
	is(env_get(env, "TALLY_TRACE_ID", &n), want, "an empty one is set");
	cmp_ok(n, "==", 1, "and replaced, not doubled");
	tally_mode_env_free(env);

	setenv("TALLY_TRACE_ID", "mine", 1);
	env = tally_mode_env();
	is(env_get(env, "TALLY_TRACE_ID", &n), "mine", "the user's one stays");
	tally_mode_env_free(env);

	tally_mode_forget(&a);
	env = tally_mode_env();
	is(env_get(env, "TALLY_TRACE_ENDPOINT", &n), "ipc:///inherited",
	   "a forgotten instance exports nothing");
	tally_mode_env_free(env);
	ok(tally_instance_export_env(&b, "TALLY_TRACE_ENDPOINT", "ipc:///b") ==
		   0,
	   "its successor may publish");
	tally_mode_forget(&b);
	tally_mode_cleanup();
}

/* cmd-PID outside a job; a job's directory is locked against a second */
static void rundirs(const char *tmp)
{
	char want[PATH_MAX], lock[PATH_MAX + 16], pid[32];
	struct stat st;
	int fd;

	unsetenv("SLURM_JOB_ID");
	unsetenv("TALLY_RUNTIME_DIR");
	setenv("XDG_RUNTIME_DIR", tmp, 1);

	tally_mode_setup(true);
	tally_mode_wrap();
	snprintf(want, sizeof(want), "%s/tally/cmd-%ld", tmp, (long)getpid());
	is(tally_runtime_dir(), want, "a command outside a job: cmd-PID");
	snprintf(want, sizeof(want), "%s/tally", tmp);
	is(tally_mode_conf_dir(), want, "the built-in conf.d: its parent");
	ok(tally_runtime_dir_create() == 0 && tally_runtime_dir_lock() == 0,
	   "created and locked");
	tally_mode_cleanup();
	ok(stat(tally_runtime_dir(), &st) < 0 && errno == ENOENT,
	   "cmd-PID is removed at exit, with its lock file");

	setenv("SLURM_JOB_ID", "j1", 1);
	tally_mode_setup(true);
	tally_mode_wrap();
	snprintf(want, sizeof(want), "%s/tally/job-j1", tmp);
	is(tally_runtime_dir(), want, "in a job: job-ID, wrapped or not");
	ok(tally_runtime_dir_create() == 0 && tally_runtime_dir_lock() == 0,
	   "the first collector of the job locks it");
	snprintf(lock, sizeof(lock), "%s/tallyd.lock", want);
	fd = open(lock, O_RDONLY);
	ok(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0 &&
		   errno == EWOULDBLOCK,
	   "tallyd.lock is held");
	snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	{
		char got[32] = "";

		ok(fd >= 0 && read(fd, got, sizeof(got) - 1) > 0 &&
			   !strcmp(got, pid),
		   "and names the holder's pid");
	}
	if (fd >= 0)
		close(fd);
	/* a lock is per open file: this test holding it is another collector */
	tally_mode_cleanup();
	tally_mode_setup(true);
	fd = open(lock, O_RDONLY);
	ok(fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0,
	   "released at exit; the file stays (shared directory)");
	ok(tally_runtime_dir_lock() < 0 && errno == EBUSY,
	   "a second collector of the job: EBUSY");
	if (fd >= 0)
		close(fd);
	ok(tally_runtime_dir_lock() == 0, "free again: locked");
	tally_mode_cleanup();

	setenv("TALLY_RUNTIME_DIR", tmp, 1);
	unsetenv("SLURM_JOB_ID");
	tally_mode_setup(true);
	tally_mode_wrap();
	is(tally_runtime_dir(), tmp, "TALLY_RUNTIME_DIR is taken as is");
	unsetenv("TALLY_RUNTIME_DIR");
	tally_mode_cleanup();
}

int main(void)
{
	const char *tmp = tap_tmpdir("tally-mode");

	plan(NO_PLAN);
	if (chdir(tmp) < 0)
		bail_out("chdir %s", tmp);
	output_dirs(tmp);
	jobid_paths(tmp);
	port_rule();
	command_env();
	rundirs(tmp);
	done_testing();
}
